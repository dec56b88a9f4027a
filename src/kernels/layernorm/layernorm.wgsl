// LayerNorm forward/backward. One workgroup (256 threads) per row (two-pass mean/variance);
// dw, db by column partial sums (layernorm_dwdb_partial, [chunk][dw | db]) finished by
// elementwise colsum_add. u0 N, u1 C, u2 eps, u3 rows per chunk
// The forward's output is a matmul input (backend.h "mmin"): with f16 activations the host's
// prefix (wg_out16_prefix) sets OUT16 and st16 writes it as f16 to binding 9 (element 2·u5 + i;
// arg 0 is then a placeholder), else OUT16 is false and it goes to arg 0 as fp32. The backward
// pipelines get their own prefix (wg_out16_prefix_on): there OUT16 adds an f16 copy of the
// written gradient (binding 9, beyond f16's range ±inf) to its fp32 store, the f16 operand of
// the subgroup-matrix matmuls that read it next (wg_grad16, webgpu_mem.c).

// args 0 out, 1 mean, 2 rstd, 3 inp, 4 w, 5 b
@compute @workgroup_size(256)
fn layernorm_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  let C = pu(1u);
  if (n >= pu(0u)) {
    return;
  }
  let row = n * C;
  var s = 0.0;
  for (var c = lid; c < C; c = c + WG) {
    s = s + ld(3u, row + c);
  }
  let m = wg_sum(s, lid) / f32(C);
  var v = 0.0;
  for (var c = lid; c < C; c = c + WG) {
    let d = ld(3u, row + c) - m;
    v = v + d * d;
  }
  let r = 1.0 / sqrt(wg_sum(v, lid) / f32(C) + pf(2u));
  for (var c = lid; c < C; c = c + WG) {
    let y = (ld(3u, row + c) - m) * r * ld(4u, c) + ld(5u, c);
    if (OUT16) { st16(row + c, y); } else { st(0u, row + c, y); }
  }
  if (lid == 0u) {
    st(1u, n, m);
    st(2u, n, r);
  }
}

// args 0 dinp, 1 dout, 2 inp, 3 w, 4 mean, 5 rstd.
// g = w·dout, xh = (x − mean)·rstd: dinp += rstd·(g − mean(g) − xh·mean(g·xh))
@compute @workgroup_size(256)
fn layernorm_bwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  let C = pu(1u);
  if (n >= pu(0u)) {
    return;
  }
  let row = n * C;
  let m = ld(4u, n);
  let r = ld(5u, n);
  var gs = 0.0;
  var gx = 0.0;
  for (var c = lid; c < C; c = c + WG) {
    let g = ld(3u, c) * ld(1u, row + c);
    gs = gs + g;
    gx = gx + g * (ld(2u, row + c) - m) * r;
  }
  let gm = wg_sum(gs, lid) / f32(C);
  let gxm = wg_sum(gx, lid) / f32(C);
  for (var c = lid; c < C; c = c + WG) {
    let g = ld(3u, c) * ld(1u, row + c);
    let y = ld(0u, row + c) + r * (g - gm - (ld(2u, row + c) - m) * r * gxm);
    st(0u, row + c, y);
    if (OUT16) { st16(row + c, y); } // the backward pipeline's OUT16: an f16 copy of dinp too
  }
}

// args 0 part, 1 dout, 2 inp, 3 mean, 4 rstd.
// part[k, c] = Σ dout·xh, part[k, C + c] = Σ dout over the rows of chunk k
@compute @workgroup_size(256)
fn layernorm_dwdb_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let C = pu(1u);
  let c = wid.x * WG + lid;
  if (c >= C) {
    return;
  }
  let n0 = wid.y * pu(3u);
  let n1 = min(n0 + pu(3u), pu(0u));
  // two rows per iteration into independent sums (twice the loads in flight per thread)
  var sw0 = 0.0;
  var sb0 = 0.0;
  var sw1 = 0.0;
  var sb1 = 0.0;
  var n = n0;
  while (n + 1u < n1) {
    let d0 = ld(1u, n * C + c);
    let d1 = ld(1u, (n + 1u) * C + c);
    sw0 = sw0 + d0 * (ld(2u, n * C + c) - ld(3u, n)) * ld(4u, n);
    sw1 = sw1 + d1 * (ld(2u, (n + 1u) * C + c) - ld(3u, n + 1u)) * ld(4u, n + 1u);
    sb0 = sb0 + d0;
    sb1 = sb1 + d1;
    n = n + 2u;
  }
  if (n < n1) {
    let d = ld(1u, n * C + c);
    sw0 = sw0 + d * (ld(2u, n * C + c) - ld(3u, n)) * ld(4u, n);
    sb0 = sb0 + d;
  }
  st(0u, wid.y * 2u * C + c, sw0 + sw1);
  st(0u, wid.y * 2u * C + C + c, sb0 + sb1);
}

// layernorm_dwdb_partial4: layernorm_dwdb_partial with four rows per iteration (eight loads in
// flight per thread where that kernel has four; issue 22, round 2: its row pass and this one
// share 3.3 ms of the H200's GPT-2 124M B16 T1024 step against ~2.0 at DRAM speed). The host's
// choice where layernorm_sg.wgsl's row passes run (TEZGAH_WEBGPU_LN_SG=0: the two-row form).
// Same arguments, uniforms and grid; the same results up to fp32 summation order.
fn ln_dw_term(n: u32, C: u32, c: u32, d: f32) -> f32 {
  return d * (ld(2u, n * C + c) - ld(3u, n)) * ld(4u, n);
}

@compute @workgroup_size(256)
fn layernorm_dwdb_partial4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let C = pu(1u);
  let c = wid.x * WG + lid;
  if (c >= C) {
    return;
  }
  let n0 = wid.y * pu(3u);
  let n1 = min(n0 + pu(3u), pu(0u));
  var sw = vec4<f32>(0.0);
  var sb = vec4<f32>(0.0);
  var n = n0;
  while (n + 3u < n1) {
    let d = vec4<f32>(ld(1u, n * C + c), ld(1u, (n + 1u) * C + c), ld(1u, (n + 2u) * C + c), ld(1u, (n + 3u) * C + c));
    sw = sw + vec4<f32>(ln_dw_term(n, C, c, d.x), ln_dw_term(n + 1u, C, c, d.y), ln_dw_term(n + 2u, C, c, d.z),
                        ln_dw_term(n + 3u, C, c, d.w));
    sb = sb + d;
    n = n + 4u;
  }
  for (; n < n1; n = n + 1u) {
    let d = ld(1u, n * C + c);
    sw.x = sw.x + ln_dw_term(n, C, c, d);
    sb.x = sb.x + d;
  }
  st(0u, wid.y * 2u * C + c, (sw.x + sw.y) + (sw.z + sw.w));
  st(0u, wid.y * 2u * C + C + c, (sb.x + sb.y) + (sb.z + sb.w));
}

// layernorm_fwd4 / layernorm_bwd4: the same results as layernorm_fwd / layernorm_bwd for
// C <= 4·WG (the host's choice; TEZGAH_WEBGPU_MEMOPS=0: the loops above), with the row's
// elements held in registers (thread lid owns columns lid + k·WG, k < 4): every input element
// is read from memory once instead of two or three times, and the passes run no loop bounds.
// Same arguments and uniforms as the loop forms.
@compute @workgroup_size(256)
fn layernorm_fwd4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  let C = pu(1u);
  if (n >= pu(0u)) {
    return;
  }
  let row = n * C;
  var x: array<f32, 4>;
  var s = 0.0;
  for (var k = 0u; k < 4u; k = k + 1u) {
    let c = lid + k * WG;
    x[k] = 0.0;
    if (c < C) {
      x[k] = ld(3u, row + c);
      s = s + x[k];
    }
  }
  let m = wg_sum(s, lid) / f32(C);
  var v = 0.0;
  for (var k = 0u; k < 4u; k = k + 1u) {
    if (lid + k * WG < C) {
      let d = x[k] - m;
      v = v + d * d;
    }
  }
  let r = 1.0 / sqrt(wg_sum(v, lid) / f32(C) + pf(2u));
  for (var k = 0u; k < 4u; k = k + 1u) {
    let c = lid + k * WG;
    if (c < C) {
      let y = (x[k] - m) * r * ld(4u, c) + ld(5u, c);
      if (OUT16) { st16(row + c, y); } else { st(0u, row + c, y); }
    }
  }
  if (lid == 0u) {
    st(1u, n, m);
    st(2u, n, r);
  }
}

@compute @workgroup_size(256)
fn layernorm_bwd4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  let C = pu(1u);
  if (n >= pu(0u)) {
    return;
  }
  let row = n * C;
  let m = ld(4u, n);
  let r = ld(5u, n);
  var g: array<f32, 4>;
  var xh: array<f32, 4>;
  var gs = 0.0;
  var gx = 0.0;
  for (var k = 0u; k < 4u; k = k + 1u) {
    let c = lid + k * WG;
    g[k] = 0.0;
    xh[k] = 0.0;
    if (c < C) {
      g[k] = ld(3u, c) * ld(1u, row + c);
      xh[k] = (ld(2u, row + c) - m) * r;
      gs = gs + g[k];
      gx = gx + g[k] * xh[k];
    }
  }
  let gm = wg_sum(gs, lid) / f32(C);
  let gxm = wg_sum(gx, lid) / f32(C);
  for (var k = 0u; k < 4u; k = k + 1u) {
    let c = lid + k * WG;
    if (c < C) {
      let y = ld(0u, row + c) + r * (g[k] - gm - xh[k] * gxm);
      st(0u, row + c, y);
      if (OUT16) { st16(row + c, y); } // the backward pipeline's OUT16: an f16 copy of dinp too
    }
  }
}

// layernorm_dwdb_partial_v16: layernorm_dwdb_partial4 for f16 activations with vector accesses
// (the host's choice where c->act_f16, C is a multiple of 4 and dout and inp start on 8 bytes:
// wg_v16_ok; prefix wg_v16_prefix(0)). Thread lid of workgroup x owns the four columns
// 4·(x·WG + lid) .. + 3 and takes its chunk's rows two per iteration (four 8-byte loads in
// flight); fp32 sums per column. Same arguments and uniforms; grid (ceil(C / 4 / WG), chunks).
// The same results up to fp32 summation order.
@compute @workgroup_size(256)
fn layernorm_dwdb_partial_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let C = pu(1u);
  let c = 4u * (wid.x * WG + lid);
  if (c >= C) {
    return;
  }
  let n0 = wid.y * pu(3u);
  let n1 = min(n0 + pu(3u), pu(0u));
  var sw0 = vec4<f32>(0.0);
  var sb0 = vec4<f32>(0.0);
  var sw1 = vec4<f32>(0.0);
  var sb1 = vec4<f32>(0.0);
  var n = n0;
  for (; n + 1u < n1; n = n + 2u) {
    let d0 = ld4(1u, n * C + c);
    let d1 = ld4(1u, (n + 1u) * C + c);
    let x0 = ld4(2u, n * C + c);
    let x1 = ld4(2u, (n + 1u) * C + c);
    sw0 = sw0 + d0 * (x0 - vec4<f32>(ld(3u, n))) * ld(4u, n);
    sw1 = sw1 + d1 * (x1 - vec4<f32>(ld(3u, n + 1u))) * ld(4u, n + 1u);
    sb0 = sb0 + d0;
    sb1 = sb1 + d1;
  }
  if (n < n1) {
    let d = ld4(1u, n * C + c);
    sw0 = sw0 + d * (ld4(2u, n * C + c) - vec4<f32>(ld(3u, n))) * ld(4u, n);
    sb0 = sb0 + d;
  }
  st4(0u, wid.y * 2u * C + c, sw0 + sw1);
  st4(0u, wid.y * 2u * C + C + c, sb0 + sb1);
}
