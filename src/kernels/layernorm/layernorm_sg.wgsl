enable subgroups;
// The row loop below is uniform per subgroup (every lane of a subgroup takes the same rows), which
// WGSL's analysis cannot see (the trip count comes from subgroupAdd(1u)): its report is turned off.
diagnostic(off, subgroup_uniformity);
// end of directives
// LayerNorm forward / backward with one subgroup per row (issue 22): the same arguments,
// uniforms and results (up to fp32 summation order) as layernorm.wgsl's layernorm_fwd /
// layernorm_bwd (args fwd: 0 out, 1 mean, 2 rstd, 3 inp, 4 w, 5 b; bwd: 0 dinp, 1 dout, 2 inp,
// 3 w, 4 mean, 5 rstd; u0 N, u1 C, u2 eps; OUT16 / st16 as there). The host's choice where the
// adapter has subgroups (TEZGAH_WEBGPU_LN_SG=0: layernorm.wgsl's kernels); grid: ceil(N / LN_ROWS)
// workgroups (lin_wg).
// Why: with one 256-thread workgroup per row of 768, three elements a thread and two
// barrier-bound workgroup reductions, the H200 ran the forward at ~4x and the backward at ~2x
// their DRAM time (docs/PERF.md, issue 22's profile). Here a workgroup of WG threads holds
// LN_ROWS rows; subgroup s (threads s·size .. s·size + size − 1: subgroups are consecutive ranges
// of local_invocation_index, as reduce_sg.wgsl assumes and test_webgpu_ops checks) takes rows
// s, s + WG / size, ... < LN_ROWS: one row each at 32 lanes (NVIDIA); at lavapipe's 4 lanes 8 of
// the 64 subgroups work. Lane l handles columns l, l + size, ...: each load is coalesced across
// the subgroup, the sums are subgroupAdd (no barrier, no workgroup memory), and every pass takes
// four columns per iteration (four or eight loads in flight per lane; round 2 of issue 22: the
// later passes took one and waited on each). Later passes re-read the row the subgroup just read
// (3 KB at C 768: from L1, not DRAM). Round 2 also tried forms holding the lane's columns in
// private arrays (array<f32, C / lanes>): lavapipe with GALLIVM_PERF=nopt computed them wrong at
// some widths (as the dropped one-pass backward), right with LLVM's optimisations: not kept.

const LN_ROWS: u32 = 8u;

// Σ inp[row + c] over the lane's columns c = lane + k·ns < C, four loads per iteration
fn ln_row_sum(a: u32, row: u32, C: u32, lane: u32, ns: u32) -> f32 {
  var s0 = 0.0;
  var s1 = 0.0;
  var s2 = 0.0;
  var s3 = 0.0;
  var c = lane;
  for (; c + 3u * ns < C; c = c + 4u * ns) {
    s0 = s0 + ld(a, row + c);
    s1 = s1 + ld(a, row + c + ns);
    s2 = s2 + ld(a, row + c + 2u * ns);
    s3 = s3 + ld(a, row + c + 3u * ns);
  }
  for (; c < C; c = c + ns) {
    s0 = s0 + ld(a, row + c);
  }
  return (s0 + s1) + (s2 + s3);
}

// the forward's output y of column c (f16 where OUT16), four at a time below: the loads first
fn ln_y(row: u32, c: u32, m: f32, r: f32) -> f32 {
  return (ld(3u, row + c) - m) * r * ld(4u, c) + ld(5u, c);
}
fn ln_st_y(i: u32, y: f32) {
  if (OUT16) { st16(i, y); } else { st(0u, i, y); }
}

@compute @workgroup_size(256)
fn layernorm_fwd_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u); // subgroup size and lane (every thread active here)
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let r0 = lin_wg(wid, nwg) * LN_ROWS;
  for (var rr = lid / ns; rr < LN_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    let m = subgroupAdd(ln_row_sum(3u, row, C, lane, ns)) / f32(C);
    // the second and third passes re-read the row (L1) four columns per iteration too
    var v0 = 0.0;
    var v1 = 0.0;
    var c = lane;
    for (; c + 3u * ns < C; c = c + 4u * ns) {
      let d0 = ld(3u, row + c) - m;
      let d1 = ld(3u, row + c + ns) - m;
      let d2 = ld(3u, row + c + 2u * ns) - m;
      let d3 = ld(3u, row + c + 3u * ns) - m;
      v0 = v0 + (d0 * d0 + d1 * d1);
      v1 = v1 + (d2 * d2 + d3 * d3);
    }
    for (; c < C; c = c + ns) {
      let d = ld(3u, row + c) - m;
      v0 = v0 + d * d;
    }
    let r = 1.0 / sqrt(subgroupAdd(v0 + v1) / f32(C) + pf(2u));
    c = lane;
    for (; c + 3u * ns < C; c = c + 4u * ns) {
      let y0 = ln_y(row, c, m, r);
      let y1 = ln_y(row, c + ns, m, r);
      let y2 = ln_y(row, c + 2u * ns, m, r);
      let y3 = ln_y(row, c + 3u * ns, m, r);
      ln_st_y(row + c, y0);
      ln_st_y(row + c + ns, y1);
      ln_st_y(row + c + 2u * ns, y2);
      ln_st_y(row + c + 3u * ns, y3);
    }
    for (; c < C; c = c + ns) {
      ln_st_y(row + c, ln_y(row, c, m, r));
    }
    if (lane == 0u) {
      st(1u, n, m);
      st(2u, n, r);
    }
  }
}

// the backward's new dinp of column c: dinp + rstd·(g − mean(g) − x̂·mean(g·x̂)), and its store
// (with the f16 copy where OUT16)
fn ln_dinp(row: u32, c: u32, m: f32, r: f32, gm: f32, gxm: f32) -> f32 {
  return ld(0u, row + c) + r * (ld(3u, c) * ld(1u, row + c) - gm - (ld(2u, row + c) - m) * r * gxm);
}
fn ln_st_dinp(i: u32, y: f32) {
  st(0u, i, y);
  if (OUT16) { st16(i, y); } // the backward pipeline's OUT16: an f16 copy of dinp too
}

// g = w·dout, xh = (x − mean)·rstd: dinp += rstd·(g − mean(g) − xh·mean(g·xh)). Four columns
// per iteration in both passes: the first keeps eight DRAM loads in flight per lane (dout, inp),
// the second four of dinp (its dout and inp re-reads come from L1); round 1's two and one.
@compute @workgroup_size(256)
fn layernorm_bwd_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let r0 = lin_wg(wid, nwg) * LN_ROWS;
  for (var rr = lid / ns; rr < LN_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    let m = ld(4u, n);
    let r = ld(5u, n);
    var gs0 = 0.0;
    var gx0 = 0.0;
    var gs1 = 0.0;
    var gx1 = 0.0;
    var c = lane;
    for (; c + 3u * ns < C; c = c + 4u * ns) {
      let g0 = ld(3u, c) * ld(1u, row + c);
      let g1 = ld(3u, c + ns) * ld(1u, row + c + ns);
      let g2 = ld(3u, c + 2u * ns) * ld(1u, row + c + 2u * ns);
      let g3 = ld(3u, c + 3u * ns) * ld(1u, row + c + 3u * ns);
      let x0 = (ld(2u, row + c) - m) * r;
      let x1 = (ld(2u, row + c + ns) - m) * r;
      let x2 = (ld(2u, row + c + 2u * ns) - m) * r;
      let x3 = (ld(2u, row + c + 3u * ns) - m) * r;
      gs0 = gs0 + (g0 + g1);
      gs1 = gs1 + (g2 + g3);
      gx0 = gx0 + (g0 * x0 + g1 * x1);
      gx1 = gx1 + (g2 * x2 + g3 * x3);
    }
    for (; c < C; c = c + ns) {
      let g = ld(3u, c) * ld(1u, row + c);
      gs0 = gs0 + g;
      gx0 = gx0 + g * (ld(2u, row + c) - m) * r;
    }
    let gm = subgroupAdd(gs0 + gs1) / f32(C);
    let gxm = subgroupAdd(gx0 + gx1) / f32(C);
    c = lane;
    for (; c + 3u * ns < C; c = c + 4u * ns) {
      let y0 = ln_dinp(row, c, m, r, gm, gxm);
      let y1 = ln_dinp(row, c + ns, m, r, gm, gxm);
      let y2 = ln_dinp(row, c + 2u * ns, m, r, gm, gxm);
      let y3 = ln_dinp(row, c + 3u * ns, m, r, gm, gxm);
      ln_st_dinp(row + c, y0);
      ln_st_dinp(row + c + ns, y1);
      ln_st_dinp(row + c + 2u * ns, y2);
      ln_st_dinp(row + c + 3u * ns, y3);
    }
    for (; c < C; c = c + ns) {
      ln_st_dinp(row + c, ln_dinp(row, c, m, r, gm, gxm));
    }
  }
}

// layernorm_fwd_sg_v16 / layernorm_bwd_sg_v16: the two kernels above for f16 activations with
// vector accesses (the host's choice where c->act_f16, C is a multiple of 4 and the f16 tensors
// start on 8 bytes: wg_v16_ok; prefix wg_v16_prefix: ld4 one 8-byte load of four columns, the
// forward's f16 out one st16x4, the backward's dinp one st4). Lane l of the row's subgroup takes
// the groups of four columns g = l + k·ns < C / 4, two per iteration in the first pass (four
// 8-byte loads in flight in the backward); w and b (fp32) as four scalar loads (cached). Same
// arguments, uniforms and grid; the same results up to fp32 summation order.
fn ln_row_sum4(a: u32, row: u32, G: u32, lane: u32, ns: u32) -> f32 {
  var s0 = vec4<f32>(0.0);
  var s1 = vec4<f32>(0.0);
  var g = lane;
  for (; g + ns < G; g = g + 2u * ns) {
    s0 = s0 + ld4(a, row + 4u * g);
    s1 = s1 + ld4(a, row + 4u * (g + ns));
  }
  if (g < G) {
    s0 = s0 + ld4(a, row + 4u * g);
  }
  let s = s0 + s1;
  return (s.x + s.y) + (s.z + s.w);
}

@compute @workgroup_size(256)
fn layernorm_fwd_sg_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let G = C / 4u;
  let r0 = lin_wg(wid, nwg) * LN_ROWS;
  for (var rr = lid / ns; rr < LN_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    let m = subgroupAdd(ln_row_sum4(3u, row, G, lane, ns)) / f32(C);
    var v = vec4<f32>(0.0);
    for (var g = lane; g < G; g = g + ns) {
      let d = ld4(3u, row + 4u * g) - vec4<f32>(m);
      v = v + d * d;
    }
    let r = 1.0 / sqrt(subgroupAdd((v.x + v.y) + (v.z + v.w)) / f32(C) + pf(2u));
    for (var g = lane; g < G; g = g + ns) {
      let y = (ld4(3u, row + 4u * g) - vec4<f32>(m)) * r * ld4(4u, 4u * g) + ld4(5u, 4u * g);
      if (OUT16) { st16x4(row + 4u * g, y); } else { st4(0u, row + 4u * g, y); }
    }
    if (lane == 0u) {
      st(1u, n, m);
      st(2u, n, r);
    }
  }
}

@compute @workgroup_size(256)
fn layernorm_bwd_sg_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let G = C / 4u;
  let r0 = lin_wg(wid, nwg) * LN_ROWS;
  for (var rr = lid / ns; rr < LN_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    let m = ld(4u, n);
    let r = ld(5u, n);
    var gs = vec4<f32>(0.0);
    var gx = vec4<f32>(0.0);
    var g = lane;
    for (; g + ns < G; g = g + 2u * ns) {
      let d0 = ld4(1u, row + 4u * g);
      let d1 = ld4(1u, row + 4u * (g + ns));
      let x0 = (ld4(2u, row + 4u * g) - vec4<f32>(m)) * r;
      let x1 = (ld4(2u, row + 4u * (g + ns)) - vec4<f32>(m)) * r;
      let g0 = ld4(3u, 4u * g) * d0;
      let g1 = ld4(3u, 4u * (g + ns)) * d1;
      gs = gs + (g0 + g1);
      gx = gx + (g0 * x0 + g1 * x1);
    }
    if (g < G) {
      let g0 = ld4(3u, 4u * g) * ld4(1u, row + 4u * g);
      gs = gs + g0;
      gx = gx + g0 * ((ld4(2u, row + 4u * g) - vec4<f32>(m)) * r);
    }
    let gm = subgroupAdd((gs.x + gs.y) + (gs.z + gs.w)) / f32(C);
    let gxm = subgroupAdd((gx.x + gx.y) + (gx.z + gx.w)) / f32(C);
    for (g = lane; g < G; g = g + ns) {
      let i = row + 4u * g;
      let y = ld4(0u, i) + r * (ld4(3u, 4u * g) * ld4(1u, i) - vec4<f32>(gm) - (ld4(2u, i) - vec4<f32>(m)) * r * gxm);
      st4(0u, i, y);
      if (OUT16) { st16x4(i, y); }
    }
  }
}
