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
// rows are needed: D only, and binding 2 is bound but not written).
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
