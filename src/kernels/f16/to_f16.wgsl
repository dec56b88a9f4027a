// dst [n] f16 = src [n] f32: f16 activations (WebGPU backend with --precision f16: be->act_mm =
// TZ_F16, backend.h) written by kernels that have only an fp32 form (the attention output) and
// by the tests. Source: our own.
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets of dst and src in 4-byte units][slots][n], binding 1 dst, binding 2 src. An f16 tensor
// starts 4-byte aligned (its element 2·off). One element per thread, 256 threads per workgroup,
// the grid folded into x and y (grid1). The host prefixes "enable f16;".
// Rounds to nearest even after clamping to ±65504: values beyond f16's range saturate instead
// of becoming inf (as the f16 weight mirror does, w16.wgsl). Entry point to_f16_inf: the same
// but beyond f16's range ±inf (activation gradients with f16 activations, c->act_f16: an
// overflowing gradient must reach the loss scaler's finiteness check: f16s, common/f16s.wgsl).
struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, n: u32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dst: array<f16>;
@group(0) @binding(2) var<storage, read> src: array<f32>;

@compute @workgroup_size(256)
fn to_f16(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 256u;
  if (i >= p.n) { return; }
  dst[2u * p.off.x + i] = f16(clamp(src[p.off.y + i], -65504.0, 65504.0));
}

@compute @workgroup_size(256)
fn to_f16_inf(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 256u;
  if (i >= p.n) { return; }
  dst[2u * p.off.x + i] = f16s(src[p.off.y + i]); // common/f16s.wgsl
}
