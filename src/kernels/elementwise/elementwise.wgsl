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

// add4: add with four elements per thread (4·WG·w + lid + k·WG, k < 4: coalesced, four loads
// of each input in flight); the host's default (TEZGAH_WEBGPU_MEMOPS=0: add). out may alias a
// or b (each element is read before it is written, by the same thread). Grid: ceil(n / 1024).
@compute @workgroup_size(256)
fn add4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let n = pu(0u);
  var v: array<f32, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    v[k] = 0.0;
    if (i0 + k * WG < n) {
      v[k] = ld(1u, i0 + k * WG) + ld(2u, i0 + k * WG);
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    if (i0 + k * WG < n) {
      st(0u, i0 + k * WG, v[k]);
    }
  }
}

// add_v16: add4 for f16 activations with vector accesses (the host's choice where c->act_f16, n
// is a multiple of 4 and every argument starts on 8 bytes: wg_v16_ok; prefix "// v16", whose f16
// variant declares the bindings array<vec4<f16>>). Thread: the groups of four g = 4·WG·w + lid +
// k·WG, k < 4 (sixteen elements, four 8-byte loads of each input in flight; the same sums and
// f16 stores per element as add / add4). out may alias a or b (each group read, then written, by
// one thread). u0 n (a multiple of 4). Grid: ceil(n / 4096) workgroups.
@compute @workgroup_size(256)
fn add_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let g0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let ng = pu(0u) / 4u;
  var v: array<vec4<f32>, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    v[k] = vec4<f32>(0.0);
    let g = g0 + k * WG;
    if (g < ng) {
      v[k] = ld4(1u, 4u * g) + ld4(2u, 4u * g);
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let g = g0 + k * WG;
    if (g < ng) {
      st4(0u, 4u * g, v[k]);
    }
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
  let stride = pu(3u);
  var s0 = 0.0; // four independent running sums: four loads in flight per thread, not one
  var s1 = 0.0;
  var s2 = 0.0;
  var s3 = 0.0;
  var r = r0;
  while (r + 3u < r1) {
    s0 = s0 + ld(1u, r * stride + c);
    s1 = s1 + ld(1u, (r + 1u) * stride + c);
    s2 = s2 + ld(1u, (r + 2u) * stride + c);
    s3 = s3 + ld(1u, (r + 3u) * stride + c);
    r = r + 4u;
  }
  while (r < r1) {
    s0 = s0 + ld(1u, r * stride + c);
    r = r + 1u;
  }
  st(0u, wid.y * cols + c, (s0 + s1) + (s2 + s3));
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

// colsum_rows8: colsum_rows' sum with 8 columns and 32 lanes per workgroup, each lane four
// independent running sums (the default; TEZGAH_WEBGPU_MEMOPS=0: colsum_rows). For C = 768 and
// 512 rows colsum_rows ran 48 workgroups whose lanes made 32 dependent loads each (latency
// bound, ~11 us a call on the H200); here 96 workgroups (192 with a second destination) make 4
// rounds of 4 loads. 8 adjacent fp32 columns are one 32-byte memory sector.
// With u4 = S > 0 the columns c >= S go to a second destination (arg 2, element c − S): the
// layernorm's [dw | db] partials in one dispatch instead of two.
// args 0 dst, 1 src, 2 dst2 (u4 > 0 only); u0 rows, u1 cols, u2 overwrite, u3 stride, u4 S
@compute @workgroup_size(256)
fn colsum_rows8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let c = wid.x * 8u + lid % 8u;
  let lane = lid / 8u;
  let rows = pu(0u);
  let stride = pu(3u);
  var s0 = 0.0;
  var s1 = 0.0;
  var s2 = 0.0;
  var s3 = 0.0;
  if (c < pu(1u)) {
    var k = lane;
    while (k + 96u < rows) {
      s0 = s0 + ld(1u, k * stride + c);
      s1 = s1 + ld(1u, (k + 32u) * stride + c);
      s2 = s2 + ld(1u, (k + 64u) * stride + c);
      s3 = s3 + ld(1u, (k + 96u) * stride + c);
      k = k + 128u;
    }
    while (k < rows) {
      s0 = s0 + ld(1u, k * stride + c);
      k = k + 32u;
    }
  }
  colsum_red[lid] = (s0 + s1) + (s2 + s3);
  workgroupBarrier();
  if (lid < 8u && c < pu(1u)) {
    var t = 0.0;
    for (var l = 0u; l < 32u; l = l + 1u) {
      t = t + colsum_red[l * 8u + lid];
    }
    let S = pu(4u);
    if (S > 0u && c >= S) {
      if (pu(2u) == 0u) {
        t = t + ld(2u, c - S);
      }
      st(2u, c - S, t);
    } else {
      if (pu(2u) == 0u) {
        t = t + ld(0u, c);
      }
      st(0u, c, t);
    }
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
