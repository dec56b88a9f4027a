enable subgroups;
// The row loop below is uniform per subgroup, which WGSL's analysis cannot see (its trip count
// comes from subgroupAdd(1u)): its report is turned off.
diagnostic(off, subgroup_uniformity);
// end of directives
// layernorm_bwd_sgdw: LayerNorm's backward in one pass over the rows (issue 22): dinp as
// layernorm_sg.wgsl's layernorm_bwd_sg (one subgroup per row) and, in the same pass, the
// column partial sums of dw and db that layernorm.wgsl's layernorm_dwdb_partial computes in a
// second pass re-reading dout and inp from memory (2 · N · C · 4 bytes per layernorm: 100 MB at
// GPT-2 124M B16 T1024). Same results up to fp32 summation order.
// args 0 dinp, 1 dout, 2 inp, 3 w, 4 mean, 5 rstd, 6 part; u0 N, u1 C. The host's prefix sets
// LN_K = C / subgroup size (the adapter's one size: NVIDIA 32, lavapipe 4 or 8; the host uses this
// kernel only where the subgroup size is fixed, divides C, C <= 1024 and LN_K <= 32;
// TEZGAH_WEBGPU_LN_DW=0: layernorm_bwd_sg + layernorm_dwdb_partial) and OUT16 / st16 as
// layernorm.wgsl's backward (an f16 copy of dinp at binding 9).
// Workgroup w takes rows [w·DW_ROWS, w·DW_ROWS + DW_ROWS); subgroup s (consecutive ranges of
// local_invocation_index, as reduce_sg.wgsl assumes) rows s, s + WG / size, ...; lane l columns
// l + k·size, k < LN_K, each row's dout and x̂ held in registers (LN_K of each: constant-trip
// loops the compiler unrolls) and its dw, db running sums too. At the end the subgroups add
// their sums into workgroup memory one after another and the workgroup writes its partial
// part[w, 0 .. C) = Σ dout·x̂, part[w, C .. 2C) = Σ dout over its rows (elementwise colsum_rows8
// then adds the ceil(N / DW_ROWS) partials into dw and db).

const DW_ROWS: u32 = 32u;
var<workgroup> dw_acc: array<f32, 2048>; // [dw | db] of the workgroup, C <= 1024
var<workgroup> dw_ns: u32;

@compute @workgroup_size(256)
fn layernorm_bwd_sgdw(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u); // subgroup size and lane (every thread active here)
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let w = lin_wg(wid, nwg);
  let r0 = w * DW_ROWS;
  var sw: array<f32, LN_K>;
  var sb: array<f32, LN_K>;
  for (var k = 0u; k < LN_K; k = k + 1u) {
    sw[k] = 0.0;
    sb[k] = 0.0;
  }
  for (var rr = lid / ns; rr < DW_ROWS; rr = rr + WG / ns) {
    let n = r0 + rr;
    if (n >= N) {
      break;
    }
    let row = n * C;
    let m = ld(4u, n);
    let r = ld(5u, n);
    var d: array<f32, LN_K>;
    var xh: array<f32, LN_K>;
    var gs = 0.0;
    var gx = 0.0;
    for (var k = 0u; k < LN_K; k = k + 1u) {
      let c = lane + k * ns;
      d[k] = ld(1u, row + c);
      xh[k] = (ld(2u, row + c) - m) * r;
      let g = ld(3u, c) * d[k];
      gs = gs + g;
      gx = gx + g * xh[k];
      sw[k] = sw[k] + d[k] * xh[k];
      sb[k] = sb[k] + d[k];
    }
    let gm = subgroupAdd(gs) / f32(C);
    let gxm = subgroupAdd(gx) / f32(C);
    for (var k = 0u; k < LN_K; k = k + 1u) {
      let c = lane + k * ns;
      let y = ld(0u, row + c) + r * (ld(3u, c) * d[k] - gm - xh[k] * gxm);
      st(0u, row + c, y);
      if (OUT16) { st16(row + c, y); } // an f16 copy of dinp too
    }
  }
  // the subgroups' sums into dw_acc, one subgroup after another (the round count made uniform
  // through workgroup memory: barriers need uniform control flow)
  for (var i = lid; i < 2u * C; i = i + WG) {
    dw_acc[i] = 0.0;
  }
  if (lid == 0u) {
    dw_ns = min(WG / ns, DW_ROWS); // subgroups that own rows
  }
  let rounds = workgroupUniformLoad(&dw_ns); // (its barrier also orders the zeroing above)
  for (var s = 0u; s < rounds; s = s + 1u) {
    if (lid / ns == s) {
      for (var k = 0u; k < LN_K; k = k + 1u) {
        let c = lane + k * ns;
        dw_acc[c] = dw_acc[c] + sw[k];
        dw_acc[C + c] = dw_acc[C + c] + sb[k];
      }
    }
    workgroupBarrier();
  }
  for (var i = lid; i < 2u * C; i = i + WG) {
    st(6u, w * 2u * C + i, dw_acc[i]);
  }
}
