// Flash attention backward on subgroup matrices (f16 × f16 → f32 16×16×16; tensor cores through
// Vulkan cooperative matrices on NVIDIA) for the training form of causal GQA attention, head_dim
// HD 64 or 128: dK and dV of a key block, and the partial dq of each query tile it meets (summed
// by fa_sg_dqsum.wgsl in a fixed order: deterministic, no atomics). The fp32 kernels
// (attention_fa.wgsl's fa_dkdv, attention.wgsl) stay for adapters without subgroup matrices.
// Source: our own; FlashAttention-2's backward (Dao 2023) as attention_fa.wgsl's fused-dq form.
//
// A workgroup owns BC = NSG·16 keys of kv head g in sequence b (subgroup sg: keys sg·16 .. +15)
// and loops over the group's query heads h and the query tiles of BR = BC queries from the block's
// first key on (earlier queries see none of its keys). Per tile, with the scores transposed
// (keys × queries: the rows a subgroup owns):
//   Sᵀ = K·Qᵀ                 → s_ (f32)         left K rows, right Qᵀ (Q column-major)
//   Pᵀ = exp(Sᵀ·scale − lse)  → pT_ (f16)        threads: lane → key row, CPL queries
//   dPᵀ = V·dOᵀ               → s_ (f32)         left V rows, right dOᵀ (dO column-major)
//   dV += Pᵀ·dO                                  left pT_, right dO (row-major)
//   dSᵀ = Pᵀ ∘ (dPᵀ − D)·scale → dsT_ (f16)      threads (P read back as the f16 value)
//   dK += dSᵀ·Q                                  left dsT_, right Q (row-major)
//   dq part = dS·K            → scratch (f32)    subgroup sg: the tile's queries sg·16 .. +15,
//                                                left dS (dsT_ column-major), right K (the block)
// lse and D of the tile's queries are staged in ls_ / dd_. Masked (query t < key j, or t ≥ T):
// P = 0. dK and dV stay in result matrices over all heads and tiles and leave through s_ at the
// end (rows j < T).
// Operands: q16, k16, v16, do16 compact f16 [B, Tp, heads·HD] (fa_sg_pack.wgsl, fa_sg_prep.wgsl),
// zero past T up to Tp (a multiple of 64), loaded straight from the storage buffer.
// dq parts (BR == BC): per (sequence of the chunk, query head) u12 rows of HD floats from element
// u11 of the scratch; key block kb's rows hold queries kb·BC .. Tp−1 from row part_row(kb).
//
// Host prefix (after the directives): const HD, SGSIZE (16, 32 or 64), NSG (BC = BR = NSG·16).
// Every form (this file, fa_sg_dkdv_st, fa_sg_dkdv_wo) also gets from the host alias DKT (dk's and
// dv's element type) and fn cvk(f32) -> DKT: f32 and the identity, or, with the backend's f16
// activations (c->act_f16: dk, dv in the fused f16 dqkv), f16 and a rounding that gives ±inf
// beyond f16's range (an overflowing gradient must reach the loss scaler's finiteness check) and
// keeps NaN; dkv's offset and u14 then count f16 elements.
// Uniform block (wg_run_ex): element offsets (4-byte units) of the arguments 0 dkv (dk's first
// element; dv at u14 floats after it), 1 scratch (D at u10, the parts at u11), 2 x16, 3 lse; slots;
// u0 T, u1 Tp, u2 n_head, u3 n_kv_head, u4 scale (f32 bits), u5 .. u8 q16 / k16 / v16 / do16's
// offsets in x16 (f16 elements), u9 the grid order (1: grid (n_kv_head, B, blocks); 0: (blocks,
// n_kv_head, B)), u10 D's offset (D [B, n_head, T] f32), u11 the parts' offset, u12 rows per
// (sequence, head), u13 the chunk's first sequence, u14 dv − dk (floats), u15 kv_stride (the row
// stride of dk and dv, floats; kv head g at column g·HD). Block 0 is the first key block.
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// subgroups are consecutive ranges of local_invocation_index (the host requires one subgroup
// size), so lid / SGSIZE is subgroup-uniform, which the uniformity analysis cannot see
diagnostic(off, chromium.subgroup_matrix_uniformity);
// end of directives
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dkv: array<DKT>; // DKT, cvk: the host's prefix
@group(0) @binding(2) var<storage, read_write> scr: array<f32>;
@group(0) @binding(3) var<storage, read> x16: array<f16>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;

alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
const BC = NSG * 16u;      // keys per workgroup
const BR = BC;             // queries per tile (== BC: the dq parts' rows)
const NT = NSG * SGSIZE;   // threads
const LPR = SGSIZE / 16u;  // lanes per key row
const CPL = BR / LPR;      // queries per lane
const NQ = HD / 16u;       // 16-column matrices across a head
const NR = BR / 16u;       // 16-query matrices across a tile
const SLD = BR + 4u;       // s_ row stride (f32; 16-byte multiple)
const PLD = BR + 8u;       // pT_ / dsT_ row stride (f16; 16-byte multiple)
var<workgroup> s_: array<f32, BC * SLD>;
var<workgroup> pT_: array<f16, BC * PLD>;
var<workgroup> dsT_: array<f16, BC * PLD>;
var<workgroup> ls_: array<f32, BR>;
var<workgroup> dd_: array<f32, BR>;

fn pu(k: u32) -> u32 {
  return p.u[k / 4u][k % 4u];
}
fn part_row(kb: u32, Tp: u32) -> u32 {
  return kb * Tp - BC * ((kb * max(kb, 1u) - kb) / 2u); // Σ_{k < kb} (Tp − k·BC)
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &dkv; _ = &scr; _ = &x16; _ = &lse;
  let T = pu(0u);
  let Tp = pu(1u);
  let nh = pu(2u);
  let nkv = pu(3u);
  let rep = nh / nkv;
  let sc = bitcast<f32>(pu(4u));
  var ids = wid;
  if (pu(9u) == 1u) {
    ids = vec3<u32>(wid.z, wid.x, wid.y);
  }
  let bl = ids.z;           // sequence in this chunk
  let b = bl + pu(13u);
  let g = ids.y;
  let kblk = ids.x;
  let k0 = kblk * BC;
  let sg = lid / SGSIZE;
  let lane = lid % SGSIZE; // (consecutive subgroups: the lane's subgroup_invocation_id)
  let r = sg * 16u + lane / LPR;  // this lane's key row in the block
  let c0 = (lane % LPR) * CPL;    // and its first query in a tile
  let j = k0 + r;
  let QS = nh * HD;
  let KS = nkv * HD;
  let x0 = 2u * p.oa.z;
  let kb = x0 + pu(6u) + (b * Tp + k0 + sg * 16u) * KS + g * HD;  // this subgroup's keys
  let vb = x0 + pu(7u) + (b * Tp + k0 + sg * 16u) * KS + g * HD;
  let kbl = x0 + pu(6u) + (b * Tp + k0) * KS + g * HD;            // the block's first key
  var dk: array<Res, NQ>;
  var dv: array<Res, NQ>;
  for (var h = g * rep; h < (g + 1u) * rep; h++) {
    let qh = x0 + pu(5u) + b * Tp * QS + h * HD;
    let doh = x0 + pu(8u) + b * Tp * QS + h * HD;
    let lrow = (b * nh + h) * T;
    let pb = p.oa.y + pu(11u) + ((bl * nh + h) * pu(12u) + part_row(kblk, Tp)) * HD; // query k0's part row
    for (var t0 = k0; t0 < T; t0 += BR) {
      for (var i = lid; i < 2u * BR; i += NT) {
        let tq = t0 + i % BR;
        var v = 0.0;
        if (tq < T) {
          if (i < BR) {
            v = lse[p.oa.w + lrow + tq];
          } else {
            v = scr[p.oa.y + pu(10u) + lrow + tq];
          }
        }
        if (i < BR) {
          ls_[i] = v;
        } else {
          dd_[i - BR] = v;
        }
      }
      // Sᵀ = K·Qᵀ
      var sacc: array<Res, NR>;
      for (var n = 0u; n < NR; n++) {
        sacc[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
      }
      for (var kk = 0u; kk < NQ; kk++) {
        let kl = subgroupMatrixLoad<Left, row_major>(&x16, kb + kk * 16u, KS);
        for (var n = 0u; n < NR; n++) {
          let qr = subgroupMatrixLoad<Right, col_major>(&x16, qh + (t0 + n * 16u) * QS + kk * 16u, QS);
          sacc[n] = subgroupMatrixMultiplyAccumulate(kl, qr, sacc[n]);
        }
      }
      for (var n = 0u; n < NR; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, sacc[n], SLD);
      }
      workgroupBarrier();
      // Pᵀ
      for (var i = 0u; i < CPL; i++) {
        let tq = t0 + c0 + i;
        let pv = select(exp(s_[r * SLD + c0 + i] * sc - ls_[c0 + i]), 0.0, tq < j || tq >= T);
        pT_[r * PLD + c0 + i] = f16(pv);
      }
      workgroupBarrier();
      // dPᵀ = V·dOᵀ into s_; dV += Pᵀ·dO
      var dp: array<Res, NR>;
      for (var n = 0u; n < NR; n++) {
        dp[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
      }
      for (var kk = 0u; kk < NQ; kk++) {
        let vl = subgroupMatrixLoad<Left, row_major>(&x16, vb + kk * 16u, KS);
        for (var n = 0u; n < NR; n++) {
          let dr = subgroupMatrixLoad<Right, col_major>(&x16, doh + (t0 + n * 16u) * QS + kk * 16u, QS);
          dp[n] = subgroupMatrixMultiplyAccumulate(vl, dr, dp[n]);
        }
      }
      for (var n = 0u; n < NR; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, dp[n], SLD);
      }
      for (var kc = 0u; kc < NR; kc++) {
        let pl = subgroupMatrixLoad<Left, row_major>(&pT_, sg * 16u * PLD + kc * 16u, PLD);
        for (var n = 0u; n < NQ; n++) {
          let dr = subgroupMatrixLoad<Right, row_major>(&x16, doh + (t0 + kc * 16u) * QS + n * 16u, QS);
          dv[n] = subgroupMatrixMultiplyAccumulate(pl, dr, dv[n]);
        }
      }
      workgroupBarrier();
      // dSᵀ
      for (var i = 0u; i < CPL; i++) {
        let pv = f32(pT_[r * PLD + c0 + i]);
        dsT_[r * PLD + c0 + i] = f16(pv * (s_[r * SLD + c0 + i] - dd_[c0 + i]) * sc);
      }
      workgroupBarrier();
      // dK += dSᵀ·Q; the tile's dq part = dS·K (this subgroup's 16 queries)
      for (var kc = 0u; kc < NR; kc++) {
        let dl = subgroupMatrixLoad<Left, row_major>(&dsT_, sg * 16u * PLD + kc * 16u, PLD);
        for (var n = 0u; n < NQ; n++) {
          let qr = subgroupMatrixLoad<Right, row_major>(&x16, qh + (t0 + kc * 16u) * QS + n * 16u, QS);
          dk[n] = subgroupMatrixMultiplyAccumulate(dl, qr, dk[n]);
        }
      }
      var dq: array<Res, NQ>;
      for (var n = 0u; n < NQ; n++) {
        dq[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
      }
      for (var kc = 0u; kc < BC / 16u; kc++) {
        let al = subgroupMatrixLoad<Left, col_major>(&dsT_, kc * 16u * PLD + sg * 16u, PLD);
        for (var n = 0u; n < NQ; n++) {
          let kr = subgroupMatrixLoad<Right, row_major>(&x16, kbl + kc * 16u * KS + n * 16u, KS);
          dq[n] = subgroupMatrixMultiplyAccumulate(al, kr, dq[n]);
        }
      }
      for (var n = 0u; n < NQ; n++) {
        subgroupMatrixStore<row_major>(&scr, pb + (t0 - k0 + sg * 16u) * HD + n * 16u, dq[n], HD);
      }
    }
  }
  // dK, dV through s_, NR matrices (BR columns) at a time, rows j < T
  let ko = p.oa.x + (b * T + j) * pu(15u) + g * HD;
  for (var w = 0u; w < 2u; w++) {
    for (var n0 = 0u; n0 < NQ; n0 += NR) {
      workgroupBarrier();
      for (var n = 0u; n < NR; n++) {
        if (w == 0u) {
          subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, dk[n0 + n], SLD);
        } else {
          subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, dv[n0 + n], SLD);
        }
      }
      workgroupBarrier();
      if (j < T) {
        for (var i = 0u; i < CPL; i++) {
          dkv[ko + w * pu(14u) + n0 * 16u + c0 + i] = cvk(s_[r * SLD + c0 + i]);
        }
      }
    }
  }
}
