// Memory-like and elementwise ops: fill, copy, copy_rows (KV cache), add (residual),
// sum_sq (global grad norm, two stages), column sums (bias and norm-weight gradients).

// fill: arg 0 dst; u0 n, u1 value
@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i < pu(0u)) {
    st(0u, i, pf(1u));
  }
}

// copy: arg 0 dst, 1 src (no overlap); u0 n
@compute @workgroup_size(256)
fn copy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i < pu(0u)) {
    st(0u, i, ld(1u, i));
  }
}

// add: out = a + b (args 0, 1, 2; out may alias a or b); u0 n
@compute @workgroup_size(256)
fn add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
       @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i < pu(0u)) {
    st(0u, i, ld(1u, i) + ld(2u, i));
  }
}

// copy_rows: dst[r*ds + c] = src[r*ss + c] (u4 = 1: +=, the split matmul's column pieces);
// args 0 dst, 1 src; u0 rows, u1 cols, u2 ds, u3 ss, u4 acc
@compute @workgroup_size(256)
fn copy_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  let cols = pu(1u);
  if (i < pu(0u) * cols) {
    let r = i / cols;
    let c = i % cols;
    var v = ld(1u, r * pu(3u) + c);
    if (pu(4u) != 0u) {
      v = v + ld(0u, r * pu(2u) + c);
    }
    st(0u, r * pu(2u) + c, v);
  }
}

// transpose: dst[c*rows + r] = src[r*cols + c] (matmul_t's weight [N, K] into [K, N], so the
// forward runs as the matmul form: matmul_fast.wgsl then transposes one operand instead of
// two on its way into workgroup memory). 32 x 32 tiles through workgroup memory (33-float rows:
// no bank conflicts), so both the reads and the writes are coalesced; grid (ceil(cols/32),
// ceil(rows/32)). args 0 dst, 1 src; u0 rows, u1 cols
var<workgroup> tr_tile: array<f32, 1056>;
@compute @workgroup_size(256)
fn transpose(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let rows = pu(0u);
  let cols = pu(1u);
  let tx = lid % 32u;
  let ty = lid / 32u;
  for (var i = 0u; i < 32u; i = i + 8u) {
    let r = wid.y * 32u + ty + i;
    let c = wid.x * 32u + tx;
    if (r < rows && c < cols) {
      tr_tile[(ty + i) * 33u + tx] = ld(1u, r * cols + c);
    }
  }
  workgroupBarrier();
  for (var i = 0u; i < 32u; i = i + 8u) {
    let c = wid.x * 32u + ty + i;
    let r = wid.y * 32u + tx;
    if (r < rows && c < cols) {
      st(0u, c * rows + r, tr_tile[tx * 33u + ty + i]);
    }
  }
}

// Stage 1: part[w] = Σ x[i]² over a grid-stride slice. args 0 part, 1 x; u0 n, u1 nparts
@compute @workgroup_size(256)
fn sum_sq_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  let n = pu(0u);
  let stride = pu(1u) * WG;
  for (var i = wid.x * WG + lid; i < n; i = i + stride) {
    let v = ld(1u, i);
    s = s + v * v;
  }
  let t = wg_sum(s, lid);
  if (lid == 0u) {
    st(0u, wid.x, t);
  }
}

// Stage 2 (one workgroup): out[0] = Σ part[0..n). args 0 out, 1 part; u0 n
@compute @workgroup_size(256)
fn sum_final(@builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  for (var i = lid; i < pu(0u); i = i + WG) {
    s = s + ld(1u, i);
  }
  let t = wg_sum(s, lid);
  if (lid == 0u) {
    st(0u, 0u, t);
  }
}

// part[k*cols + c] = Σ_{r in chunk k} src[r*stride + c]; grid (ceil(cols/256), nchunks)
// args 0 part, 1 src; u0 rows, u1 cols, u2 chunk, u3 stride
@compute @workgroup_size(256)
fn colsum_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let cols = pu(1u);
  let c = wid.x * WG + lid;
  if (c >= cols) {
    return;
  }
  let r0 = wid.y * pu(2u);
  let r1 = min(r0 + pu(2u), pu(0u));
  var s = 0.0;
  for (var r = r0; r < r1; r = r + 1u) {
    s = s + ld(1u, r * pu(3u) + c);
  }
  st(0u, wid.y * cols + c, s);
}

// colsum_rows: the same sum as colsum_add for few columns and many rows (bias and norm-weight
// gradients: cols = C, rows = N/CHUNK): each workgroup owns 16 columns, its 16 lanes of 16
// threads sum every 16th row, and the lanes are added in workgroup memory (the one-thread-per-
// column colsum_add ran 3 workgroups with 512 serial loads each for C = 768).
// args 0 dst, 1 src; u0 rows, u1 cols, u2 overwrite, u3 stride
var<workgroup> colsum_red: array<f32, 256>;

@compute @workgroup_size(256)
fn colsum_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let c = wid.x * 16u + lid % 16u;
  let lane = lid / 16u;
  var s = 0.0;
  if (c < pu(1u)) {
    for (var k = lane; k < pu(0u); k = k + 16u) {
      s = s + ld(1u, k * pu(3u) + c);
    }
  }
  colsum_red[lid] = s;
  workgroupBarrier();
  if (lid < 16u && c < pu(1u)) {
    var t = 0.0;
    for (var l = 0u; l < 16u; l = l + 1u) {
      t = t + colsum_red[l * 16u + lid];
    }
    if (pu(2u) == 0u) {
      t = t + ld(0u, c);
    }
    st(0u, c, t);
  }
}

// dst[c] += Σ_k src[k*stride + c], k < rows (parameter gradient: +=); u2 = 1: dst[c] = Σ (split-K)
// args 0 dst, 1 src; u0 rows, u1 cols, u2 overwrite, u3 stride
@compute @workgroup_size(256)
fn colsum_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let c = wid.x * WG + lid;
  if (c >= pu(1u)) {
    return;
  }
  var s = 0.0;
  for (var k = 0u; k < pu(0u); k = k + 1u) {
    s = s + ld(1u, k * pu(3u) + c);
  }
  if (pu(2u) == 0u) {
    s = s + ld(0u, c);
  }
  st(0u, c, s);
}
