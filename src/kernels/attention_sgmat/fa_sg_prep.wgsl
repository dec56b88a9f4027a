// The backward's first pass for the subgroup-matrix flash attention (fa_sg_dkdv.wgsl):
//   D[b, h, t] = Σ_d dout[b, t, h, d] · out[b, t, h, d]          (t < T; fp32 sums)
//   dout16[b, t, h·HD + d] = f16(dout[b, t, h, d])                 (t < T; 0 for T ≤ t < Tp)
// dout, out: [B·T, n_head·HD] (out f32, or f16 where the backend keeps the attention output in
// f16: OUT16); dout16 compact [B, Tp, n_head·HD] f16 stored as u32 pairs (pack2x16float after a
// clamp to ±65504); D [B, n_head, T] f32. Source: our own (D as attention_fa.wgsl's fa_d).
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets (4-byte units) of D, dout16, dout, out][slots][u0 T, u1 Tp, u2 n_head, u3 B],
// bindings 1 D, 2 dout16, 3 dout, 4 out. One (b, h, t < Tp) row per thread, t fastest, 256
// threads per workgroup, the grid folded into x and y (grid1). Host prefix (after the
// directives): const HD (even), OUT16 (bool), alias OT (f16 or f32: out's element type).
enable f16;
// end of directives
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dd: array<f32>;
@group(0) @binding(2) var<storage, read_write> do16: array<u32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> outp: array<OT>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let nh = p.u[0].z;
  if (i >= p.u[0].w * nh * Tp) {
    return;
  }
  let t = i % Tp;
  let h = (i / Tp) % nh;
  let b = i / (Tp * nh);
  let C = nh * HD;
  let d16 = p.oa.y + ((b * Tp + t) * C + h * HD) / 2u;
  if (t >= T) {
    for (var j = 0u; j < HD / 2u; j++) {
      do16[d16 + j] = 0u;
    }
    return;
  }
  let src = p.oa.z + (b * T + t) * C + h * HD;
  let ob = select(1u, 2u, OUT16) * p.oa.w + (b * T + t) * C + h * HD;
  var acc = 0.0;
  for (var j = 0u; j < HD / 2u; j++) {
    let g = vec2<f32>(dout[src + 2u * j], dout[src + 2u * j + 1u]);
    acc = fma(g.x, f32(outp[ob + 2u * j]), acc);
    acc = fma(g.y, f32(outp[ob + 2u * j + 1u]), acc);
    do16[d16 + j] = pack2x16float(clamp(g, vec2<f32>(-65504.0), vec2<f32>(65504.0)));
  }
  dd[p.oa.x + (b * nh + h) * T + t] = acc;
}
