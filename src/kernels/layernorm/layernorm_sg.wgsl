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
// the subgroup, the sums are subgroupAdd (no barrier, no workgroup memory), and the first pass
// keeps four loads in flight per lane. Later passes re-read the row the subgroup just read
// (3 KB at C 768: from L1, not DRAM).

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
    var v = 0.0;
    for (var c = lane; c < C; c = c + ns) {
      let d = ld(3u, row + c) - m;
      v = v + d * d;
    }
    let r = 1.0 / sqrt(subgroupAdd(v) / f32(C) + pf(2u));
    for (var c = lane; c < C; c = c + ns) {
      let y = (ld(3u, row + c) - m) * r * ld(4u, c) + ld(5u, c);
      if (OUT16) { st16(row + c, y); } else { st(0u, row + c, y); }
    }
    if (lane == 0u) {
      st(1u, n, m);
      st(2u, n, r);
    }
  }
}

// g = w·dout, xh = (x − mean)·rstd: dinp += rstd·(g − mean(g) − xh·mean(g·xh))
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
    // two columns per iteration into independent sums (more loads in flight)
    var gs0 = 0.0;
    var gx0 = 0.0;
    var gs1 = 0.0;
    var gx1 = 0.0;
    var c = lane;
    for (; c + ns < C; c = c + 2u * ns) {
      let g0 = ld(3u, c) * ld(1u, row + c);
      let g1 = ld(3u, c + ns) * ld(1u, row + c + ns);
      let x0 = ld(2u, row + c);
      let x1 = ld(2u, row + c + ns);
      gs0 = gs0 + g0;
      gs1 = gs1 + g1;
      gx0 = gx0 + g0 * (x0 - m) * r;
      gx1 = gx1 + g1 * (x1 - m) * r;
    }
    if (c < C) {
      let g0 = ld(3u, c) * ld(1u, row + c);
      gs0 = gs0 + g0;
      gx0 = gx0 + g0 * (ld(2u, row + c) - m) * r;
    }
    let gm = subgroupAdd(gs0 + gs1) / f32(C);
    let gxm = subgroupAdd(gx0 + gx1) / f32(C);
    for (var c2 = lane; c2 < C; c2 = c2 + ns) {
      let g = ld(3u, c2) * ld(1u, row + c2);
      let y = ld(0u, row + c2) + r * (g - gm - (ld(2u, row + c2) - m) * r * gxm);
      st(0u, row + c2, y);
      if (OUT16) { st16(row + c2, y); } // the backward pipeline's OUT16: an f16 copy of dinp too
    }
  }
}

// layernorm_fwd_sgr / layernorm_bwd_sgr: the two kernels above with the lane's columns of the row
// in registers (round 2 of issue 22: the loops above wait on each L1 / DRAM load in their second
// and third passes; here every load of a row is issued before the first sum). The host's prefix
// sets LN_REG = ceil(C / the adapter's smallest subgroup size), an upper bound of the lane's
// column count; it runs these where LN_REG <= 32 (GPT-2's C 768 at 32 lanes: 24), else (or with
// TEZGAH_WEBGPU_LN_REG=0) the loop forms above (whose prefix sets LN_REG 1, unused). The
// constant-trip loops unroll; lanes past C hold 0 and are masked. Same arguments, grid and
// results (up to fp32 summation order) as the loop forms.
@compute @workgroup_size(256)
fn layernorm_fwd_sgr(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
    var x: array<f32, LN_REG>;
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      let c = lane + k * ns;
      x[k] = 0.0;
      if (c < C) {
        x[k] = ld(3u, row + c);
      }
    }
    var s = 0.0;
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      s = s + x[k];
    }
    let m = subgroupAdd(s) / f32(C);
    var v = 0.0;
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      if (lane + k * ns < C) {
        let d = x[k] - m;
        v = v + d * d;
      }
    }
    let r = 1.0 / sqrt(subgroupAdd(v) / f32(C) + pf(2u));
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      let c = lane + k * ns;
      if (c < C) {
        let y = (x[k] - m) * r * ld(4u, c) + ld(5u, c);
        if (OUT16) { st16(row + c, y); } else { st(0u, row + c, y); }
      }
    }
    if (lane == 0u) {
      st(1u, n, m);
      st(2u, n, r);
    }
  }
}

// the row's w·dout, x̂ and dinp in registers: dinp's read is issued with the others
@compute @workgroup_size(256)
fn layernorm_bwd_sgr(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
    var g: array<f32, LN_REG>;
    var xh: array<f32, LN_REG>;
    var di: array<f32, LN_REG>;
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      let c = lane + k * ns;
      g[k] = 0.0;
      xh[k] = 0.0;
      di[k] = 0.0;
      if (c < C) {
        g[k] = ld(3u, c) * ld(1u, row + c);
        xh[k] = (ld(2u, row + c) - m) * r;
        di[k] = ld(0u, row + c);
      }
    }
    var gs = 0.0;
    var gx = 0.0;
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      gs = gs + g[k];
      gx = gx + g[k] * xh[k];
    }
    let gm = subgroupAdd(gs) / f32(C);
    let gxm = subgroupAdd(gx) / f32(C);
    for (var k = 0u; k < LN_REG; k = k + 1u) {
      let c = lane + k * ns;
      if (c < C) {
        let y = di[k] + r * (g[k] - gm - xh[k] * gxm);
        st(0u, row + c, y);
        if (OUT16) { st16(row + c, y); }
      }
    }
  }
}
