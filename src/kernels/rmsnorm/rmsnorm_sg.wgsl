enable subgroups;
// The row loop below is uniform per subgroup (every lane of a subgroup takes the same rows), which
// WGSL's analysis cannot see (the trip count comes from subgroupAdd(1u)): its report is turned off.
diagnostic(off, subgroup_uniformity);
// end of directives
// RMSNorm forward / backward for f16 activations with one subgroup per row and vector accesses
// (issue 22): rmsnorm.wgsl's rmsnorm_fwd / rmsnorm_bwd with the same arguments, uniforms and
// results (up to fp32 summation order). fwd args: 0 out (placeholder; the f16 out is binding 9,
// st16x4), 1 rstd fp32 [N], 2 inp f16 [N, C], 3 w fp32 [C]; bwd args: 0 dinp f16 [N, C] (+=),
// 1 dout f16 [N, C], 2 inp f16 [N, C], 3 w fp32 [C], 4 rstd fp32 [N]; u0 N, u1 C, u2 eps.
// The host's choice (wg_rmsnorm_fwd / _bwd, webgpu_ops_elem.c) where the adapter has subgroups
// (TEZGAH_WEBGPU_LN_SG != 0, as layernorm_sg), c->act_f16, C is a multiple of 4 and the f16
// tensors start on 8 bytes (wg_v16_ok; TEZGAH_WEBGPU_ACT16_VEC=0: rmsnorm.wgsl's per-element
// f16 variant); prefix wg_v16_prefix: ld4 one 8-byte load of four columns (w: four fp32 loads,
// cached), the forward's out one 8-byte st16x4, the backward's dinp one 8-byte st4.
// Grid: ceil(N / RN_ROWS) workgroups (lin_wg).
// Why: the workgroup-per-row kernels with 2-byte accesses ran at 460 GB/s (forward) and
// ~1.2 TB/s (backward) on the H200 (issue 22's llama profile), where layernorm_sg.wgsl's
// subgroup-per-row vector forms, whose layout this copies, reach 0.9-1.7 TB/s with more work
// per element. Subgroup s of the workgroup (a consecutive range of local_invocation_index, as
// reduce_sg.wgsl assumes) takes rows s, s + WG / size, ... < RN_ROWS; lane l the groups of four
// columns g = l + k·size < C / 4 (coalesced across the subgroup); the sums are subgroupAdd (no
// barrier, no workgroup memory). The second pass re-reads the row (1.5 KB at C 768: from L1).

const RN_ROWS: u32 = 8u;

// out = x·rstd·w, rstd = 1/sqrt(mean(x²) + eps); two groups of four per iteration in the first
// pass (two 8-byte loads in flight per lane)
@compute @workgroup_size(256)
fn rmsnorm_fwd_sg_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u); // subgroup size and lane (every thread active here)
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let G = C / 4u;
  let r0 = lin_wg(wid, nwg) * RN_ROWS;
  for (var rr = lid / ns; rr < RN_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    var s0 = vec4<f32>(0.0);
    var s1 = vec4<f32>(0.0);
    var g = lane;
    for (; g + ns < G; g = g + 2u * ns) {
      let x0 = ld4(2u, row + 4u * g);
      let x1 = ld4(2u, row + 4u * (g + ns));
      s0 = s0 + x0 * x0;
      s1 = s1 + x1 * x1;
    }
    if (g < G) {
      let x0 = ld4(2u, row + 4u * g);
      s0 = s0 + x0 * x0;
    }
    let s = s0 + s1;
    let r = 1.0 / sqrt(subgroupAdd((s.x + s.y) + (s.z + s.w)) / f32(C) + pf(2u));
    for (g = lane; g < G; g = g + ns) {
      let y = ld4(2u, row + 4u * g) * r * ld4(3u, 4u * g);
      if (OUT16) { st16x4(row + 4u * g, y); } else { st4(0u, row + 4u * g, y); }
    }
    if (lane == 0u) {
      st(1u, n, r);
    }
  }
}

// dinp += rstd·w·dout − x·rstd³·(Σ_c w·dout·x)/C; the first pass two groups per iteration (four
// 8-byte loads in flight per lane), the second re-reads dout and inp (L1) with dinp
@compute @workgroup_size(256)
fn rmsnorm_bwd_sg_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let G = C / 4u;
  let r0 = lin_wg(wid, nwg) * RN_ROWS;
  for (var rr = lid / ns; rr < RN_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    var d0 = vec4<f32>(0.0);
    var d1 = vec4<f32>(0.0);
    var g = lane;
    for (; g + ns < G; g = g + 2u * ns) {
      let a0 = ld4(1u, row + 4u * g);
      let a1 = ld4(1u, row + 4u * (g + ns));
      let x0 = ld4(2u, row + 4u * g);
      let x1 = ld4(2u, row + 4u * (g + ns));
      d0 = d0 + ld4(3u, 4u * g) * a0 * x0;
      d1 = d1 + ld4(3u, 4u * (g + ns)) * a1 * x1;
    }
    if (g < G) {
      d0 = d0 + ld4(3u, 4u * g) * ld4(1u, row + 4u * g) * ld4(2u, row + 4u * g);
    }
    let d = d0 + d1;
    let r = ld(4u, n);
    let k = r * r * r * subgroupAdd((d.x + d.y) + (d.z + d.w)) / f32(C);
    for (g = lane; g < G; g = g + ns) {
      let i = row + 4u * g;
      let y = ld4(0u, i) + r * ld4(3u, 4u * g) * ld4(1u, i) - k * ld4(2u, i);
      st4(0u, i, y);
    }
  }
}
