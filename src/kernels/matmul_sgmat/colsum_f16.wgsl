// Partial column sums of an f16 matrix: part[y, c] = Σ_{r in chunk y} g[r, c] (f32 sums), the
// bias gradient's first pass read from the backward dY's f16 copy (webgpu_ops_elem.c,
// wg_bias_bwd: half the bytes of elementwise.wgsl's colsum_partial, the same partials layout,
// summed after by colsum_add). Source: our own.
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets (4-byte units) of part, g][slots][rows, cols, chunk, stride], binding 1 part f32
// [ceil(rows / chunk), cols], binding 2 g: pairs of f16 packed in u32, [rows, stride] halves,
// cols and stride even. Thread q of the grid's x sums columns 2q and 2q + 1 over the rows of
// chunk wid.y (four running sums: four loads in flight). No ShaderF16 needed (unpack2x16float).
struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, rows: u32, cols: u32, chunk: u32, stride: u32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> part: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<u32>;

@compute @workgroup_size(256)
fn colsum_partial_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let q = wid.x * 256u + lid;
  if (2u * q >= p.cols) { return; }
  let r0 = wid.y * p.chunk;
  let r1 = min(r0 + p.chunk, p.rows);
  let sp = p.stride / 2u; // u32 per row
  let base = p.off.y + q;
  var s0 = vec2<f32>(0.0);
  var s1 = vec2<f32>(0.0);
  var s2 = vec2<f32>(0.0);
  var s3 = vec2<f32>(0.0);
  var r = r0;
  while (r + 3u < r1) {
    s0 += unpack2x16float(g[base + r * sp]);
    s1 += unpack2x16float(g[base + (r + 1u) * sp]);
    s2 += unpack2x16float(g[base + (r + 2u) * sp]);
    s3 += unpack2x16float(g[base + (r + 3u) * sp]);
    r += 4u;
  }
  while (r < r1) {
    s0 += unpack2x16float(g[base + r * sp]);
    r += 1u;
  }
  let s = (s0 + s1) + (s2 + s3);
  let o = p.off.x + wid.y * p.cols + 2u * q;
  part[o] = s.x;
  part[o + 1u] = s.y;
}
