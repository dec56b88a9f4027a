// The f16 operands of the subgroup-matrix flash attention (fa_sg_fwd.wgsl, fa_sg_dkdv.wgsl):
// dst[b, t, c] = f16(src[(b·T + t)·stride + c]) for t < T, 0 for T ≤ t < Tp (zero rows up to the
// padded length Tp, a multiple of the kernels' 64-row blocks, so that their 16 × 16 matrix loads
// never leave the tensor), c < ncols (even). dst is compact: [B, Tp, ncols] f16, stored as
// pairs (u32, round to nearest even by pack2x16float after a clamp to ±65504, as to_f16.wgsl).
// Source: our own. Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform
// block [element offsets (4-byte units) of dst, src][slots][u0 T, u1 Tp, u2 ncols, u3 stride
// (floats), u4 B], binding 1 dst (u32 pairs), binding 2 src f32. One pair per thread, 256
// threads per workgroup, the grid folded into x and y (grid1).
// Entry points main_h and qkv8h: the same copies from an f16 source (the backend's f16
// activations, c->act_f16: the fused qkv itself is f16), binding 2 then f16 (srch, src8h) and its
// element offset (oa.y) in f16 elements (the host passes it as an f16 argument, AH).
// The same clamp (an f16 ±inf becomes ±65504, as the fp32 path's clamp does to an fp32 value
// beyond f16's range), so the copies equal the fp32 path's fed the same f16 values, bit for bit:
// a relayout.
enable f16;
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let half = p.u[0].z / 2u;
  if (i >= p.u[1].x * Tp * half) {
    return;
  }
  let c = (i % half) * 2u;
  let row = i / half;
  let t = row % Tp;
  let b = row / Tp;
  var v = vec2<f32>(0.0);
  if (t < T) {
    let s = p.oa.y + (b * T + t) * p.u[0].w + c;
    v = clamp(vec2<f32>(src[s], src[s + 1u]), vec2<f32>(-65504.0), vec2<f32>(65504.0));
  }
  dst[p.oa.x + i] = pack2x16float(v);
}

// qkv8: the three copies in one dispatch, eight columns a thread (two vec4<f32> loads, one
// vec4<u32> store), where q, k, v are the column blocks [0, C), [C, C + Ckv), [C + Ckv, C + 2·Ckv)
// of one row-major source (the model's fused qkv tensor) with one row stride, every offset and
// width a multiple of 8 elements (the host checks: sg_pack_qkv). The same values as `main` on
// each block (the same clamp and pack2x16float): the copies are bit for bit those of the three
// single-block dispatches. Parameters: u0 T, u1 Tp, u2 C, u3 stride (floats), u4 B, u5 Ckv,
// u6..u8 the q, k, v copies' offsets in dst (u32 units, multiples of 4).
@group(0) @binding(1) var<storage, read_write> dst4: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> src4: array<vec4<f32>>;

@compute @workgroup_size(256)
fn qkv8(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let C = p.u[0].z;
  let Ckv = p.u[1].y;
  let groups = (C + 2u * Ckv) / 8u;
  if (i >= p.u[1].x * Tp * groups) {
    return;
  }
  let c = (i % groups) * 8u;
  let row = i / groups;
  let t = row % Tp;
  let b = row / Tp;
  var lo = vec4<f32>(0.0);
  var hi = vec4<f32>(0.0);
  if (t < T) {
    let s = (p.oa.y + (b * T + t) * p.u[0].w + c) / 4u;
    lo = clamp(src4[s], vec4<f32>(-65504.0), vec4<f32>(65504.0));
    hi = clamp(src4[s + 1u], vec4<f32>(-65504.0), vec4<f32>(65504.0));
  }
  var base = p.u[1].z;
  var cc = c;
  var ncols = C;
  if (c >= C + Ckv) {
    base = p.u[2].x;
    cc = c - C - Ckv;
    ncols = Ckv;
  } else if (c >= C) {
    base = p.u[1].w;
    cc = c - C;
    ncols = Ckv;
  }
  let o = vec4<u32>(pack2x16float(lo.xy), pack2x16float(lo.zw), pack2x16float(hi.xy), pack2x16float(hi.zw));
  dst4[(p.oa.x + base + (b * Tp + t) * (ncols / 2u) + cc / 2u) / 4u] = o;
}

// main from an f16 source (srch: binding 2 as f16, oa.y in f16 elements)
@group(0) @binding(2) var<storage, read> srch: array<f16>;

@compute @workgroup_size(256)
fn main_h(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let half = p.u[0].z / 2u;
  if (i >= p.u[1].x * Tp * half) {
    return;
  }
  let c = (i % half) * 2u;
  let row = i / half;
  let t = row % Tp;
  let b = row / Tp;
  var v = vec2<f32>(0.0);
  if (t < T) {
    let s = p.oa.y + (b * T + t) * p.u[0].w + c;
    v = clamp(vec2<f32>(f32(srch[s]), f32(srch[s + 1u])), vec2<f32>(-65504.0), vec2<f32>(65504.0));
  }
  dst[p.oa.x + i] = pack2x16float(v);
}

// qkv8 from an f16 source: eight halves a thread (one vec4<u32> load: src8h, binding 2; oa.y in
// f16 elements; the host requires every offset and the row stride a multiple of 8 halves, so
// that the load is a whole vec4<u32>), unpacked, clamped and packed again as in qkv8
@group(0) @binding(2) var<storage, read> src8h: array<vec4<u32>>;

fn clamp2(w: u32) -> u32 {
  return pack2x16float(clamp(unpack2x16float(w), vec2<f32>(-65504.0), vec2<f32>(65504.0)));
}

@compute @workgroup_size(256)
fn qkv8h(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let C = p.u[0].z;
  let Ckv = p.u[1].y;
  let groups = (C + 2u * Ckv) / 8u;
  if (i >= p.u[1].x * Tp * groups) {
    return;
  }
  let c = (i % groups) * 8u;
  let row = i / groups;
  let t = row % Tp;
  let b = row / Tp;
  var o = vec4<u32>(0u);
  if (t < T) {
    let w = src8h[(p.oa.y + (b * T + t) * p.u[0].w + c) / 8u];
    o = vec4<u32>(clamp2(w.x), clamp2(w.y), clamp2(w.z), clamp2(w.w));
  }
  var base = p.u[1].z;
  var cc = c;
  var ncols = C;
  if (c >= C + Ckv) {
    base = p.u[2].x;
    cc = c - C - Ckv;
    ncols = Ckv;
  } else if (c >= C) {
    base = p.u[1].w;
    cc = c - C;
    ncols = Ckv;
  }
  dst4[(p.oa.x + base + (b * Tp + t) * (ncols / 2u) + cc / 2u) / 4u] = o;
}
