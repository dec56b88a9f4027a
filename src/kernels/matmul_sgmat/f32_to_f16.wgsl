// dst[i] = f16(src[i]) for i < n, n even: the subgroup-matrix matmul's f16 operands from the
// fp32 activations and weights (webgpu_ops_matmul.c, sg_operand). Source: our own.
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block
// [element offsets (4-byte units) of dst, src][slots][n/2], binding 1 dst (pairs of f16 packed
// in u32, round to nearest even by pack2x16float: WGSL leaves rounding implementation-defined,
// and values beyond f16's range become ±inf), binding 2 src f32 [n]. One pair per thread,
// 256 threads per workgroup, the grid folded into x and y (grid1). No ShaderF16 needed.
struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, pairs: u32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<vec2<f32>>;

@compute @workgroup_size(256)
fn f32_to_f16(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 256u;
  if (i >= p.pairs) { return; }
  dst[p.off.x + i] = pack2x16float(src[p.off.y / 2u + i]);
}
