// c[e] (+)= Σ_z part[z·MN + e] for e < MN: the sum of the subgroup-matrix matmul's split-K
// partial products (matmul_sgmm.wgsl with SPLIT) in the standalone op (sgmat.c; the training
// backend sums with elementwise.wgsl's colsum_add). Source: our own.
// Uniform block: [mn4 = MN / 4, splits S, acc (1: add to c, 0: overwrite)]; binding 1 c f32 [MN]
// as vec4 (MN % 4 == 0), binding 2 part f32 [S][MN]. One vec4 per thread, 256 threads per
// workgroup, the grid folded into x and y.
struct U { mn4: u32, splits: u32, acc: u32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> part: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 256u;
  if (i >= p.mn4) { return; }
  var s = select(vec4<f32>(0.0), c[i], p.acc != 0u);
  for (var z = 0u; z < p.splits; z++) { s += part[z * p.mn4 + i]; }
  c[i] = s;
}
