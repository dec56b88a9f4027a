// Partial column sums of an f16 matrix: part[y, c] = Σ_{r in chunk y} g[r, c] (f32 sums), the
// bias gradient's first pass read from the backward dY's f16 copy (webgpu_ops_elem.c,
// wg_bias_bwd: half the bytes of elementwise.wgsl's colsum_partial, the same partials layout,
// summed after by colsum_add). Source: our own.
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets (4-byte units) of part, g][slots][rows, cols, chunk, stride], binding 1 part f32
// [ceil(rows / chunk), cols], binding 2 g: pairs of f16 packed in u32, [rows, stride] halves,
// cols and stride even. Thread q of the grid's x sums columns 2q and 2q + 1 over the rows of
// chunk wid.y (four running sums: four loads in flight). No ShaderF16 needed (unpack2x16float).
// Also here: colsum_partial_f16x8 (the same sums in 16-byte loads, binding 2 viewed as
// vec4<u32>) and colsum_add_v4 (the split-K reduction, bindings 1 and 2 viewed as vec4<f32>);
// each entry point uses one view of a binding (as fa_sg_dqsum.wgsl does).
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

// colsum_partial_f16x8: colsum_partial_f16's sums with 16-byte loads and fewer partial rows (the
// host's default where cols is a multiple of 8 and g starts on 16 bytes; TEZGAH_WEBGPU_COLSUM=0:
// colsum_partial_f16). The same uniform block (off.y: g's offset in u32 units, a multiple of 4;
// stride: halves, a multiple of 8). Workgroup: 32 column threads x 8 row lanes; thread (t, l)
// sums halves 8q..8q+7 (q = 32 wid.x + t) over the rows r0 + l + 8j of chunk wid.y (r0 = wid.y
// chunk), four running sums of eight (four 16-byte loads in flight); the 8 lanes are then added
// in workgroup memory in lane order by lane 0, which writes part[wid.y, 8q..8q+7]. Why: the
// scalar kernel made one 4-byte load per thread and row (128-byte warp requests, ~2.5 TB/s on
// the H200) and wrote rows / 32 partial rows (the colsum_add tail read 512 x N f32 at 332 GB/s);
// here 512-byte warp requests and rows / chunk partial rows (chunk 128 from the host: 4x fewer).
// Deterministic: a fixed summation order (not the scalar kernel's: sums differ in rounding only).
var<workgroup> red8: array<vec4<f32>, 512>;

fn h8(v: vec4<u32>) -> array<vec4<f32>, 2> {
  let a = unpack2x16float(v.x);
  let b = unpack2x16float(v.y);
  let c = unpack2x16float(v.z);
  let d = unpack2x16float(v.w);
  return array<vec4<f32>, 2>(vec4<f32>(a, b), vec4<f32>(c, d));
}

@group(0) @binding(2) var<storage, read> g4: array<vec4<u32>>;

@compute @workgroup_size(256)
fn colsum_partial_f16x8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = lid % 32u;
  let lane = lid / 32u;
  let q = wid.x * 32u + t;
  let on = 8u * q < p.cols;
  let r0 = wid.y * p.chunk;
  let r1 = min(r0 + p.chunk, p.rows);
  let sp = p.stride / 8u; // vec4<u32> per row
  let base = p.off.y / 4u + q;
  var s0 = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
  var s1 = s0;
  var s2 = s0;
  var s3 = s0;
  if (on) {
    var r = r0 + lane;
    while (r + 24u < r1) {
      let v0 = h8(g4[base + r * sp]);
      let v1 = h8(g4[base + (r + 8u) * sp]);
      let v2 = h8(g4[base + (r + 16u) * sp]);
      let v3 = h8(g4[base + (r + 24u) * sp]);
      s0[0] += v0[0]; s0[1] += v0[1];
      s1[0] += v1[0]; s1[1] += v1[1];
      s2[0] += v2[0]; s2[1] += v2[1];
      s3[0] += v3[0]; s3[1] += v3[1];
      r += 32u;
    }
    while (r < r1) {
      let v0 = h8(g4[base + r * sp]);
      s0[0] += v0[0]; s0[1] += v0[1];
      r += 8u;
    }
  }
  red8[2u * lid] = (s0[0] + s1[0]) + (s2[0] + s3[0]);
  red8[2u * lid + 1u] = (s0[1] + s1[1]) + (s2[1] + s3[1]);
  workgroupBarrier();
  if (lane == 0u && on) {
    var a = red8[2u * t];
    var b = red8[2u * t + 1u];
    for (var l = 1u; l < 8u; l++) {
      a += red8[2u * (l * 32u + t)];
      b += red8[2u * (l * 32u + t) + 1u];
    }
    let o = p.off.x + wid.y * p.cols + 8u * q;
    part[o] = a.x; part[o + 1u] = a.y; part[o + 2u] = a.z; part[o + 3u] = a.w;
    part[o + 4u] = b.x; part[o + 5u] = b.y; part[o + 6u] = b.z; part[o + 7u] = b.w;
  }
}

// colsum_add_v4: the split-K reduction dst[i] (+)= Σ_{k < rows} src[k stride + i], i < cols,
// with 16-byte accesses (the host's default for the subgroup-matrix split-K weight gradients
// where cols and stride are multiples of 4 and both tensors start on 16 bytes;
// TEZGAH_WEBGPU_COLSUM=0: elementwise.wgsl's colsum_add, one f32 per thread). Binding 1 dst f32
// (read_write), binding 2 src f32 [rows, stride]; uniform: off.x, off.y their offsets in f32
// units (multiples of 4), rows, cols, chunk = 1: overwrite dst (else add to it), stride.
// Thread i: elements 4i..4i+3, the rows loaded four at a time (four 16-byte loads in flight;
// colsum_add's loop made one dependent 4-byte load per row) and added in row order starting
// from 0, then dst: the very sums colsum_add makes, bit for bit. Grid: ceil(cols / 1024).
@group(0) @binding(1) var<storage, read_write> d4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> s4: array<vec4<f32>>;

@compute @workgroup_size(256)
fn colsum_add_v4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = wid.x * 256u + lid;
  if (4u * i >= p.cols) { return; }
  let sp = p.stride / 4u;
  let base = p.off.y / 4u + i;
  var s = vec4<f32>(0.0);
  var k = 0u;
  while (k + 3u < p.rows) {
    let v0 = s4[base + k * sp];
    let v1 = s4[base + (k + 1u) * sp];
    let v2 = s4[base + (k + 2u) * sp];
    let v3 = s4[base + (k + 3u) * sp];
    s = (((s + v0) + v1) + v2) + v3;
    k += 4u;
  }
  while (k < p.rows) {
    s = s + s4[base + k * sp];
    k += 1u;
  }
  let o = p.off.x / 4u + i;
  if (p.chunk == 0u) {
    s = s + d4[o];
  }
  d4[o] = s;
}
