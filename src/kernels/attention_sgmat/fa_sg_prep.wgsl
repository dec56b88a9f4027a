// The backward's first pass for the subgroup-matrix flash attention (fa_sg_dkdv.wgsl):
//   D[b, h, t] = Σ_d dout[b, t, h, d] · out[b, t, h, d]          (t < T; fp32 sums)
//   dout16[b, t, h·HD + d] = f16(dout[b, t, h, d])                 (t < T; 0 for T ≤ t < Tp)
// dout, out: [B·T, n_head·HD] (out f32, or f16 where the backend keeps the attention output in
// f16: OUT16); dout16 compact [B, Tp, n_head·HD] f16 stored as u32 pairs (pack2x16float after a
// clamp to ±65504); D [B, n_head, T] f32. Source: our own (D as attention_fa.wgsl's fa_d).
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets (4-byte units) of D, dout16, dout, out][slots][u0 T, u1 Tp, u2 n_head, u3 B],
// bindings 1 D, 2 dout16, 3 dout, 4 out. HD / 2 threads per (b, t < Tp, h) row, one f16 pair
// each (thread i: pair i % (HD / 2) of row i / (HD / 2), rows in (b, t, h) order, so consecutive
// threads read consecutive 8 bytes: coalesced; the former one-row-per-thread form read HD
// floats 3 KB apart per thread and took 0.41 ms per call at B16 T1024 head_dim 64 on the H200),
// the row's D a tree sum over its threads in workgroup memory; 256 threads per workgroup (256 /
// (HD / 2) rows), the grid folded into x and y (grid1; workgroups past the rows return whole).
// Host prefix (after the directives): const HD (even, HD / 2 a power of two dividing 256),
// OUT16 (bool), alias OT (f16 or f32: out's element type), alias DT (f16 or f32: dout's element
// type; f16 with the backend's f16 activations, c->act_f16, where dout is an f16 argument whose
// offset counts f16 elements: dout16 is then a relayout of it, the same clamp), DCOPY (bool:
// write dout16; false in the host's no-pack path, webgpu_ops_attn_sg.c sg_nopack, where the
// written-out dK/dV reads the f16 dout itself, T being a multiple of the padding so that no zero
// rows are needed: D only, and binding 2 is bound but not written); and for main8 (below; the
// module holds both entry points, so the prefix always has these): const SGW (u32: the
// adapter's fixed subgroup size, 1 where it varies or subgroups are off) and fn shx(x: f32,
// o: u32) -> f32 (subgroupShuffleXor, the prefix then starting with `enable subgroups;`; where
// SGW is 1 the identity, never called).
//
// Entry point main8 (TEZGAH_WEBGPU_ATTN_D_VEC=1, the default where the host allows it: DT and OT
// f16, dout's and out's offsets and, with DCOPY, dout16's multiples of 16 bytes, C and HD
// multiples of 8 halves, HD / 8 a power of two dividing 256; webgpu_ops_attn_sg.c sg_prep): the
// same D and dout16 with 16-byte accesses. HL = HD / 8 threads per (b, t < Tp, h) row, eight
// halves each (thread i: chunk i % HL of row i / HL, rows in the same (b, t, h) order, so
// consecutive threads read consecutive 16 bytes of dout and of out: one vec4<u32> load each,
// bindings 3, 4 as dout8, out8), the eight products accumulated in fp32 (exact products of f16
// values), the row's sum over its HL threads by subgroup shuffles (xor 1, 2, .. below
// min(HL, SGW); subgroups assumed to be consecutive ranges of local_invocation_index, as
// reduce_sg.wgsl) and, where a subgroup is narrower than a row (HL > SGW: lavapipe's 4 or 8
// lanes at head_dim 128, or no subgroups), the HL / SGW partials joined through workgroup
// memory by the row's first thread. DCOPY: the eight halves clamped to ±65504 as above (an
// unpack, clamp and pack of the same f16 values: dout16 bit for bit main's) and stored as one
// vec4<u32> (binding 2 as do16v; zeros for T ≤ t < Tp). Why: main's 4-byte loads per thread
// and log2(HD / 2) workgroup barriers kept it at ~1 TB/s of the H200's ~4 (0.609 ms per step,
// 12 calls, GPT-2 124M B16 T1024 f16, /work/notes/prof_gpt2.log). D's summation order differs
// from main's (fp32 rounding only).
enable f16;
// end of directives
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dd: array<f32>;
@group(0) @binding(2) var<storage, read_write> do16: array<u32>;
@group(0) @binding(3) var<storage, read> dout: array<DT>;
@group(0) @binding(4) var<storage, read> outp: array<OT>;

const HP = HD / 2u; // threads (pairs) per row
var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nw: vec3<u32>) {
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let nh = p.u[0].z;
  let wg = wid.x + wid.y * nw.x;
  if (wg * 256u >= p.u[0].w * nh * Tp * HP) { // uniform: whole workgroups past the rows
    return;
  }
  let i = wg * 256u + lid;
  let jp = i % HP;
  let row = i / HP; // (b, t, h), h fastest
  let h = row % nh;
  let t = (row / nh) % Tp;
  let b = row / (nh * Tp);
  let C = nh * HD;
  var acc = 0.0;
  var g = vec2<f32>(0.0);
  if (t < T) {
    let src = p.oa.z + (b * T + t) * C + h * HD + 2u * jp;
    let ob = select(1u, 2u, OUT16) * p.oa.w + (b * T + t) * C + h * HD + 2u * jp;
    g = vec2<f32>(f32(dout[src]), f32(dout[src + 1u]));
    acc = fma(g.x, f32(outp[ob]), g.y * f32(outp[ob + 1u]));
  }
  if (DCOPY) {
    do16[p.oa.y + ((b * Tp + t) * C + h * HD) / 2u + jp] = pack2x16float(clamp(g, vec2<f32>(-65504.0), vec2<f32>(65504.0)));
  }
  red[lid] = acc;
  workgroupBarrier();
  for (var s = HP / 2u; s > 0u; s /= 2u) {
    if (jp < s) {
      red[lid] += red[lid + s];
    }
    workgroupBarrier();
  }
  if (jp == 0u && t < T) {
    dd[p.oa.x + (b * nh + h) * T + t] = red[lid];
  }
}

// main8 (see the header): the bindings as 16-byte vectors (an entry point uses one view of each)
@group(0) @binding(2) var<storage, read_write> do16v: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> dout8: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> out8: array<vec4<u32>>;

const HL = HD / 8u; // threads (16-byte chunks) per row
var<workgroup> red8: array<f32, 256>;

// Σ over the eight halves of a · b, fp32 (the products of f16 values are exact in f32)
fn dot8(a: vec4<u32>, b: vec4<u32>) -> f32 {
  var s = 0.0;
  for (var k = 0u; k < 4u; k++) {
    let x = unpack2x16float(a[k]);
    let y = unpack2x16float(b[k]);
    s = fma(x.x, y.x, s);
    s = fma(x.y, y.y, s);
  }
  return s;
}

// one f16 pair clamped to ±65504 (±inf to ±65504: main's clamp on the same values)
fn clamp2(w: u32) -> u32 {
  return pack2x16float(clamp(unpack2x16float(w), vec2<f32>(-65504.0), vec2<f32>(65504.0)));
}

@compute @workgroup_size(256)
fn main8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
         @builtin(num_workgroups) nw: vec3<u32>) {
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let nh = p.u[0].z;
  let rows = p.u[0].w * nh * Tp;
  let wg = wid.x + wid.y * nw.x;
  if (wg * (256u / HL) >= rows) { // uniform: whole workgroups past the rows
    return;
  }
  let j = lid % HL;
  let row = wg * (256u / HL) + lid / HL; // (b, t, h), h fastest
  let live = row < rows;
  let h = row % nh;
  let t = (row / nh) % Tp;
  let b = row / (nh * Tp);
  let C = nh * HD;
  var acc = 0.0;
  var g = vec4<u32>(0u);
  if (live && t < T) {
    let e = (b * T + t) * C + h * HD + 8u * j; // the chunk's first half in dout's and out's rows
    g = dout8[(p.oa.z + e) / 8u];
    acc = dot8(g, out8[(2u * p.oa.w + e) / 8u]);
  }
  if (DCOPY && live) {
    do16v[(p.oa.y + ((b * Tp + t) * C + h * HD) / 2u) / 4u + j] =
        vec4<u32>(clamp2(g.x), clamp2(g.y), clamp2(g.z), clamp2(g.w));
  }
  // the row's sum: shuffles inside the subgroup (uniform control flow: every thread of a live
  // workgroup gets here), then the subgroups' partials through workgroup memory
  for (var o = 1u; o < min(HL, SGW); o *= 2u) {
    acc += shx(acc, o);
  }
  if (HL > SGW) {
    red8[lid] = acc;
    workgroupBarrier();
    if (j == 0u) {
      for (var k = SGW; k < HL; k += SGW) {
        acc += red8[lid + k];
      }
    }
  }
  if (j == 0u && live && t < T) {
    dd[p.oa.x + (b * nh + h) * T + t] = acc;
  }
}
