// RMSNorm forward/backward. One workgroup (256 threads) per row with a workgroup reduction;
// dw by column partial sums (rmsnorm_dw_partial) finished by elementwise colsum_add.
// u0 N, u1 C, u2 eps, u3 rows per chunk
// The forward's output is a matmul input (backend.h "mmin"): with f16 activations the host's
// prefix (wg_out16_prefix) sets OUT16 and st16 writes it as f16 to binding 9 (element 2·u5 + i;
// arg 0 is then a placeholder), else OUT16 is false and it goes to arg 0 as fp32. The backward
// pipelines get their own prefix (wg_out16_prefix_on): there OUT16 adds an f16 copy of the
// written gradient (binding 9, beyond f16's range ±inf) to its fp32 store, the f16 operand of
// the subgroup-matrix matmuls that read it next (wg_grad16, webgpu_mem.c).

// args 0 out, 1 rstd, 2 inp, 3 w. rstd = 1/sqrt(mean(x²) + eps); out = x·rstd·w
@compute @workgroup_size(256)
fn rmsnorm_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  let C = pu(1u);
  if (n >= pu(0u)) {
    return; // uniform per workgroup: safe before the barriers
  }
  let row = n * C;
  var ss = 0.0;
  for (var c = lid; c < C; c = c + WG) {
    let v = ld(2u, row + c);
    ss = ss + v * v;
  }
  let r = 1.0 / sqrt(wg_sum(ss, lid) / f32(C) + pf(2u));
  for (var c = lid; c < C; c = c + WG) {
    let y = ld(2u, row + c) * r * ld(3u, c);
    if (OUT16) { st16(row + c, y); } else { st(0u, row + c, y); }
  }
  if (lid == 0u) {
    st(1u, n, r);
  }
}

// args 0 dinp, 1 dout, 2 inp, 3 w, 4 rstd.
// dinp += rstd·w·dout − x·rstd³·(Σ_c w·dout·x)/C
@compute @workgroup_size(256)
fn rmsnorm_bwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  let C = pu(1u);
  if (n >= pu(0u)) {
    return;
  }
  let row = n * C;
  var dot = 0.0;
  for (var c = lid; c < C; c = c + WG) {
    dot = dot + ld(3u, c) * ld(1u, row + c) * ld(2u, row + c);
  }
  let r = ld(4u, n);
  let k = r * r * r * wg_sum(dot, lid) / f32(C);
  for (var c = lid; c < C; c = c + WG) {
    let y = ld(0u, row + c) + r * ld(3u, c) * ld(1u, row + c) - k * ld(2u, row + c);
    st(0u, row + c, y);
    if (OUT16) { st16(row + c, y); } // the backward pipeline's OUT16: an f16 copy of dinp too
  }
}

// args 0 part, 1 dout, 2 inp, 3 rstd. part[k, c] = Σ_{n in chunk k} dout·x·rstd;
// grid (ceil(C/256), nchunks)
@compute @workgroup_size(256)
fn rmsnorm_dw_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let C = pu(1u);
  let c = wid.x * WG + lid;
  if (c >= C) {
    return;
  }
  let n0 = wid.y * pu(3u);
  let n1 = min(n0 + pu(3u), pu(0u));
  var s = 0.0;
  for (var n = n0; n < n1; n = n + 1u) {
    s = s + ld(1u, n * C + c) * ld(2u, n * C + c) * ld(3u, n);
  }
  st(0u, wid.y * C + c, s);
}

// rmsnorm_dw_partial_v16: rmsnorm_dw_partial for f16 activations with vector accesses (the
// host's choice where c->act_f16, C is a multiple of 4 and dout and inp start on 8 bytes:
// wg_v16_ok; prefix wg_v16_prefix(0): ld4 one 8-byte load of four columns, part (fp32) four
// scalar stores). Args and uniforms as rmsnorm_dw_partial (0 part fp32 [chunks, C], 1 dout f16
// [N, C], 2 inp f16 [N, C], 3 rstd fp32 [N]; u0 N, u1 C, u3 rows per chunk). Thread lid of
// workgroup x owns the four columns 4·(x·WG + lid) .. + 3 and takes its chunk's rows two per
// iteration (four 8-byte loads in flight; layernorm_dwdb_partial_v16's layout); fp32 sums per
// column. Grid (ceil(C / 4 / WG), chunks). The same results up to fp32 summation order.
// Why: one 2-byte load per column and row left the partials a large share of rmsnorm_bwd's
// 2.6 ms per llama step on the H200 (issue 22).
@compute @workgroup_size(256)
fn rmsnorm_dw_partial_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let C = pu(1u);
  let c = 4u * (wid.x * WG + lid);
  if (c >= C) {
    return;
  }
  let n0 = wid.y * pu(3u);
  let n1 = min(n0 + pu(3u), pu(0u));
  var s0 = vec4<f32>(0.0);
  var s1 = vec4<f32>(0.0);
  var n = n0;
  for (; n + 1u < n1; n = n + 2u) {
    let d0 = ld4(1u, n * C + c);
    let d1 = ld4(1u, (n + 1u) * C + c);
    let x0 = ld4(2u, n * C + c);
    let x1 = ld4(2u, (n + 1u) * C + c);
    s0 = s0 + d0 * x0 * ld(3u, n);
    s1 = s1 + d1 * x1 * ld(3u, n + 1u);
  }
  if (n < n1) {
    s0 = s0 + ld4(1u, n * C + c) * ld4(2u, n * C + c) * ld(3u, n);
  }
  st4(0u, wid.y * C + c, s0 + s1);
}
