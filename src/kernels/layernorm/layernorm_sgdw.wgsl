enable subgroups;
// The row loop below is uniform per subgroup (every lane of a subgroup takes the same rows), which
// WGSL's analysis cannot see (the subgroup index comes from subgroupAdd(1u)): its report is off.
diagnostic(off, subgroup_uniformity);
// end of directives
// layernorm_bwd_sgdw: LayerNorm's backward in one pass over the rows (issue 22): dinp as
// layernorm_sg.wgsl's layernorm_bwd_sg (one subgroup per row) and, in the same pass, the column
// partial sums of dw and db that layernorm.wgsl's layernorm_dwdb_partial computes in a second
// pass re-reading dout and inp from memory (2 · N · C · 4 bytes per layernorm: 100 MB at GPT-2
// 124M B16 T1024). Same results up to fp32 summation order.
// args 0 dinp, 1 dout, 2 inp, 3 w, 4 mean, 5 rstd, 6 part; u0 N, u1 C. The host's prefix sets
// LN_K = C / subgroup size: the host runs this kernel only where the adapter has one subgroup
// size (NVIDIA 32, lavapipe 4 or 8), it divides C and LN_K <= 32 (TEZGAH_WEBGPU_LN_DW=0: never;
// layernorm_bwd_sg + layernorm_dwdb_partial), and OUT16 / st16 as layernorm.wgsl's backward
// (an f16 copy of dinp at binding 9).
// Workgroups of DW_WG threads; subgroup g (counted over the grid: consecutive ranges of
// local_invocation_index, as reduce_sg.wgsl assumes) takes rows [g·DW_ROWS, g·DW_ROWS +
// DW_ROWS) one after another; lane l columns l + k·size, k < LN_K, with the dw, db running sums
// of its columns in registers (constant-trip loops the compiler unrolls; the second pass over a
// row re-reads it from L1). Subgroup g writes part[g, 0 .. C) = Σ dout·x̂ and part[g, C .. 2C)
// = Σ dout over its rows when g < ceil(N / DW_ROWS); elementwise's colsum_rows8 then adds those
// partials into dw and db. No workgroup memory and no barrier: 1,024 subgroups of 16 rows at
// N = 16384, partials 6 MB (the second pass read 100 MB). Grid: ceil(N / (DW_ROWS · DW_WG / size)).

const DW_ROWS: u32 = 16u;
const DW_WG: u32 = 64u;

@compute @workgroup_size(64)
fn layernorm_bwd_sgdw(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
  let ns = subgroupAdd(1u); // subgroup size and lane (every thread active here)
  let lane = subgroupExclusiveAdd(1u);
  let N = pu(0u);
  let C = pu(1u);
  let g = lin_wg(wid, nwg) * (DW_WG / ns) + lid / ns;
  if (g * DW_ROWS >= N) {
    return;
  }
  var sw: array<f32, LN_K>;
  var sb: array<f32, LN_K>;
  for (var k = 0u; k < LN_K; k = k + 1u) {
    sw[k] = 0.0;
    sb[k] = 0.0;
  }
  let n1 = min(g * DW_ROWS + DW_ROWS, N);
  for (var n = g * DW_ROWS; n < n1; n = n + 1u) {
    let row = n * C;
    let m = ld(4u, n);
    let r = ld(5u, n);
    var gs = 0.0;
    var gx = 0.0;
    for (var k = 0u; k < LN_K; k = k + 1u) {
      let c = lane + k * ns;
      let d = ld(1u, row + c);
      let xh = (ld(2u, row + c) - m) * r;
      let gk = ld(3u, c) * d;
      gs = gs + gk;
      gx = gx + gk * xh;
      sw[k] = sw[k] + d * xh;
      sb[k] = sb[k] + d;
    }
    let gm = subgroupAdd(gs) / f32(C);
    let gxm = subgroupAdd(gx) / f32(C);
    for (var k = 0u; k < LN_K; k = k + 1u) {
      let c = lane + k * ns;
      let xh = (ld(2u, row + c) - m) * r;
      let y = ld(0u, row + c) + r * (ld(3u, c) * ld(1u, row + c) - gm - xh * gxm);
      st(0u, row + c, y);
      if (OUT16) { st16(row + c, y); } // an f16 copy of dinp too
    }
  }
  for (var k = 0u; k < LN_K; k = k + 1u) {
    let c = lane + k * ns;
    st(6u, g * 2u * C + c, sw[k]);
    st(6u, g * 2u * C + C + c, sb[k]);
  }
}
