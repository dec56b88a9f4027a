// dst [n] f32 = src [n] f16 (exact): f16 activations (be->act_mm = TZ_F16, backend.h) read by
// kernels that have only an fp32 form (the general matmul kernel for aliased operands, the
// attention backward's `out`, an f16 operand that starts 2 bytes past a 4-byte boundary). Source:
// our own. Layout as to_f16.wgsl: binding 1 dst, 2 src; u1 (h) = 1 when src starts at the second
// half of its 4-byte word (element 2·off + h); the host prefixes "enable f16;".
struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, n: u32, h: u32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f16>;

@compute @workgroup_size(256)
fn to_f32(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 256u;
  if (i >= p.n) { return; }
  dst[p.off.x + i] = f32(src[2u * p.off.y + p.h + i]);
}
