// Flash attention forward on subgroup matrices (tensor cores where the adapter maps WGSL's
// chromium_experimental_subgroup_matrix to them: Vulkan cooperative matrices on NVIDIA), f16 ×
// f16 → f32 16×16×16, for the training form of causal GQA attention (Tq == Tk == T, q_pos0 0,
// head_dim HD 64 or 128). The fp32 kernels (attention_fa.wgsl, attention.wgsl) stay for adapters
// without subgroup matrices and every other shape (webgpu_ops_attn.c chooses).
// Source: our own; FlashAttention-2's structure (Dao 2023) with a two-pass softmax.
//
// A workgroup owns BR = NSG·16 query rows of one (sequence b, head h): NSG subgroups of SGSIZE
// lanes, subgroup sg the rows sg·16 .. +15, its Q as HD/16 left matrices held for the whole
// kernel. Result matrices cannot be addressed element by element in WGSL, so the scores of a key
// tile (BC = BR keys) go S = Q·Kᵀ → subgroupMatrixStore into workgroup memory s_ (f32), and the
// softmax runs on threads there: lane `lane` of subgroup sg takes row sg·16 + lane / LPR and CPL
// consecutive columns (LPR = SGSIZE / 16 lanes per row, their row max / sum by subgroup shuffles).
// Rescaling the output when the running max grows would need per-row scaling of result matrices,
// which WGSL does not offer; so the softmax takes two passes over the key tiles: the first
// computes each row's max m and sum l (online, in f32: lse = m + log l), the second
// P = exp(S − lse) (already normalised, ≤ 1), writes it as f16 to p_ and accumulates O += P·V
// from left matrices of p_ (3 matmul units instead of 2; no rescaling, no division at the end).
// Masking as attention_fa.wgsl: a key k > t or k ≥ T scores NEG = −3e38 (exp gives 0; every row
// sees key 0 in the first tile, so the running max is finite from there on).
// Operands: q16, k16, v16 compact f16 copies [B, Tp, heads·HD] made by fa_sg_pack.wgsl, zero past
// T up to Tp (a multiple of 64), so every 16-row load stays inside them; K is read as a
// column-major right matrix (Kᵀ), V row-major, both straight from the storage buffer (16 × 16
// loads, 32-byte rows: the caches serve the reuse across subgroups and workgroups).
// Output: O through s_ (16 × BC per subgroup at a time) to out [B·T, n_head·HD] (f32, or f16 with
// OUT16: the backend's f16 attention output, clamped to ±65504), rows t < T; lse [B, n_head, T]
// f32 (u9 != 0).
//
// Host prefix (after the directives): const HD, SGSIZE (16, 32 or 64: the adapter's only subgroup
// size), NSG (subgroups per workgroup), OUT16 (bool), alias OT (out's type, f16 or f32).
// Uniform block (the backend's layout, wg_run_ex): element offsets (4-byte units) of the
// arguments 0 out, 1 lse, 2 x16 (the f16 copies), slots, then u0 T, u1 Tp, u2 n_head,
// u3 n_kv_head, u4 scale (f32 bits), u5 / u6 / u7 q16 / k16 / v16's offsets in x16 (f16
// elements), u8 the grid order (1: grid (n_head, B, blocks), block index slowest; 0: (blocks,
// n_head, B)), u9 has_lse. Block 0 is the last query block (the most keys: the heaviest first).
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// subgroups are consecutive ranges of local_invocation_index (the host requires one subgroup
// size), so lid / SGSIZE is subgroup-uniform, which the uniformity analysis cannot see
diagnostic(off, chromium.subgroup_matrix_uniformity);
// end of directives
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> outp: array<OT>;
@group(0) @binding(2) var<storage, read_write> lse: array<f32>;
@group(0) @binding(3) var<storage, read> x16: array<f16>;

alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
const BR = NSG * 16u;      // query rows per workgroup
const BC = NSG * 16u;      // keys per tile
const NT = NSG * SGSIZE;   // threads
const LPR = SGSIZE / 16u;  // lanes per row
const CPL = BC / LPR;      // columns per lane
const NQ = HD / 16u;       // 16-column matrices across a head
const NC = BC / 16u;       // 16-column matrices across a tile
const SLD = BC + 4u;       // s_ row stride (f32; 16-byte multiple)
const PLD = BC + 8u;       // p_ row stride (f16; 16-byte multiple)
const NEG: f32 = -3.0e38;
var<workgroup> s_: array<f32, BR * SLD>;
var<workgroup> p_: array<f16, BR * PLD>;

fn pu(k: u32) -> u32 {
  return p.u[k / 4u][k % 4u];
}
fn row_max(x: f32, lid: u32) -> f32 {
  var y = x;
  for (var o = 1u; o < LPR; o = o * 2u) {
    y = max(y, subgroupShuffleXor(y, o));
  }
  return y;
}
fn row_sum(x: f32, lid: u32) -> f32 {
  var y = x;
  for (var o = 1u; o < LPR; o = o * 2u) {
    y = y + subgroupShuffleXor(y, o);
  }
  return y;
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &outp; _ = &lse; _ = &x16;
  let T = pu(0u);
  let Tp = pu(1u);
  let nh = pu(2u);
  let nkv = pu(3u);
  let sc = bitcast<f32>(pu(4u));
  var ids = wid;
  if (pu(8u) == 1u) {
    ids = vec3<u32>(wid.z, wid.x, wid.y);
  }
  let b = ids.z;
  let h = ids.y;
  let g = h / (nh / nkv);
  let q0 = (Tp / BR - 1u - ids.x) * BR;
  let sg = lid / SGSIZE;
  let lane = lid % SGSIZE; // (consecutive subgroups: the lane's subgroup_invocation_id)
  let r = sg * 16u + lane / LPR;  // this lane's row in the block
  let c0 = (lane % LPR) * CPL;    // and its first column in a tile
  let t = q0 + r;
  let QS = nh * HD;
  let KS = nkv * HD;
  let x0 = 2u * p.oa.z;
  let qb = x0 + pu(5u) + (b * Tp + q0 + sg * 16u) * QS + h * HD;
  let kb = x0 + pu(6u) + b * Tp * KS + g * HD;
  let vb = x0 + pu(7u) + b * Tp * KS + g * HD;
  var ql: array<Left, NQ>;
  for (var kk = 0u; kk < NQ; kk++) {
    ql[kk] = subgroupMatrixLoad<Left, row_major>(&x16, qb + kk * 16u, QS);
  }
  var o: array<Res, NQ>;
  var m = NEG;
  var l = 0.0;
  var ls = 0.0;
  let kend = min(q0 + BR, T);
  for (var ph = 0u; ph < 2u; ph++) {
    for (var j0 = 0u; j0 < kend; j0 += BC) {
      // S = Q·Kᵀ of this subgroup's 16 rows and the tile's BC keys, into s_
      var sacc: array<Res, NC>;
      for (var n = 0u; n < NC; n++) {
        sacc[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
      }
      for (var kk = 0u; kk < NQ; kk++) {
        for (var n = 0u; n < NC; n++) {
          let kr = subgroupMatrixLoad<Right, col_major>(&x16, kb + (j0 + n * 16u) * KS + kk * 16u, KS);
          sacc[n] = subgroupMatrixMultiplyAccumulate(ql[kk], kr, sacc[n]);
        }
      }
      for (var n = 0u; n < NC; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, sacc[n], SLD);
      }
      workgroupBarrier();
      if (ph == 0u) { // the row's running max and sum
        var mt = NEG;
        for (var i = 0u; i < CPL; i++) {
          let k = j0 + c0 + i;
          let s = select(s_[r * SLD + c0 + i] * sc, NEG, k > t || k >= T);
          mt = max(mt, s);
        }
        let mn = max(m, row_max(mt, lid));
        var st = 0.0;
        for (var i = 0u; i < CPL; i++) {
          let k = j0 + c0 + i;
          let s = select(s_[r * SLD + c0 + i] * sc, NEG, k > t || k >= T);
          st += exp(s - mn);
        }
        l = l * exp(m - mn) + st;
        m = mn;
      } else { // P = exp(S − lse) as f16 into p_, then O += P·V
        for (var i = 0u; i < CPL; i++) {
          let k = j0 + c0 + i;
          let s = select(s_[r * SLD + c0 + i] * sc, NEG, k > t || k >= T);
          p_[r * PLD + c0 + i] = f16(exp(s - ls));
        }
        workgroupBarrier();
        for (var kc = 0u; kc < NC; kc++) {
          let pl = subgroupMatrixLoad<Left, row_major>(&p_, sg * 16u * PLD + kc * 16u, PLD);
          for (var n = 0u; n < NQ; n++) {
            let vr = subgroupMatrixLoad<Right, row_major>(&x16, vb + (j0 + kc * 16u) * KS + n * 16u, KS);
            o[n] = subgroupMatrixMultiplyAccumulate(pl, vr, o[n]);
          }
        }
      }
      workgroupBarrier(); // s_ (and p_) are rewritten by the next tile
    }
    if (ph == 0u) {
      ls = m + log(row_sum(l, lid));
      if (pu(9u) != 0u && lane % LPR == 0u && t < T) {
        lse[p.oa.y + (b * nh + h) * T + t] = ls;
      }
    }
  }
  // O (already normalised) through s_, NC matrices (BC columns) at a time, rows t < T
  let ob = select(1u, 2u, OUT16) * p.oa.x + (b * T + t) * QS + h * HD;
  for (var n0 = 0u; n0 < NQ; n0 += NC) {
    for (var n = 0u; n < NC; n++) {
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, o[n0 + n], SLD);
    }
    workgroupBarrier();
    if (t < T) {
      for (var i = 0u; i < CPL; i++) {
        let v = s_[r * SLD + c0 + i];
        outp[ob + n0 * 16u + c0 + i] = OT(select(v, clamp(v, -65504.0, 65504.0), OUT16));
      }
    }
    workgroupBarrier();
  }
}

// The one-pass form (entry point main1; the host's TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1, a candidate
// default): FlashAttention-2's online softmax with the output rows in registers instead of
// result matrices. Per key tile: the running max m and sum l as above, P = exp(S − m) (≤ 1) as
// f16 into p_, O_tile = P·V into fresh result matrices, which go through s_ (BC columns at a
// time) to the threads: each lane rescales its CPL columns of every chunk of its row by
// exp(m_old − m_new) and adds O_tile's (CPL·NQ/NC floats per lane); at the end out = O / l.
// 2 matmul units instead of the two passes' 3, K read once.
@compute @workgroup_size(NT)
fn main1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &outp; _ = &lse; _ = &x16;
  let T = pu(0u);
  let Tp = pu(1u);
  let nh = pu(2u);
  let nkv = pu(3u);
  let sc = bitcast<f32>(pu(4u));
  var ids = wid;
  if (pu(8u) == 1u) {
    ids = vec3<u32>(wid.z, wid.x, wid.y);
  }
  let b = ids.z;
  let h = ids.y;
  let g = h / (nh / nkv);
  let q0 = (Tp / BR - 1u - ids.x) * BR;
  let sg = lid / SGSIZE;
  let lane = lid % SGSIZE;
  let r = sg * 16u + lane / LPR;
  let c0 = (lane % LPR) * CPL;
  let t = q0 + r;
  let QS = nh * HD;
  let KS = nkv * HD;
  let x0 = 2u * p.oa.z;
  let qb = x0 + pu(5u) + (b * Tp + q0 + sg * 16u) * QS + h * HD;
  let kb = x0 + pu(6u) + b * Tp * KS + g * HD;
  let vb = x0 + pu(7u) + b * Tp * KS + g * HD;
  var ql: array<Left, NQ>;
  for (var kk = 0u; kk < NQ; kk++) {
    ql[kk] = subgroupMatrixLoad<Left, row_major>(&x16, qb + kk * 16u, QS);
  }
  var oacc: array<f32, CPL * (NQ / NC)>;
  var m = NEG;
  var l = 0.0;
  let kend = min(q0 + BR, T);
  for (var j0 = 0u; j0 < kend; j0 += BC) {
    var sacc: array<Res, NC>;
    for (var n = 0u; n < NC; n++) {
      sacc[n] = Res();
    }
    for (var kk = 0u; kk < NQ; kk++) {
      for (var n = 0u; n < NC; n++) {
        let kr = subgroupMatrixLoad<Right, col_major>(&x16, kb + (j0 + n * 16u) * KS + kk * 16u, KS);
        sacc[n] = subgroupMatrixMultiplyAccumulate(ql[kk], kr, sacc[n]);
      }
    }
    for (var n = 0u; n < NC; n++) {
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, sacc[n], SLD);
    }
    workgroupBarrier();
    var mt = NEG;
    for (var i = 0u; i < CPL; i++) {
      let k = j0 + c0 + i;
      mt = max(mt, select(s_[r * SLD + c0 + i] * sc, NEG, k > t || k >= T));
    }
    let mn = max(m, row_max(mt, lid));
    let corr = exp(m - mn);
    var st = 0.0;
    for (var i = 0u; i < CPL; i++) {
      let k = j0 + c0 + i;
      let pv = exp(select(s_[r * SLD + c0 + i] * sc, NEG, k > t || k >= T) - mn);
      st += pv;
      p_[r * PLD + c0 + i] = f16(pv);
    }
    l = l * corr + st;
    m = mn;
    workgroupBarrier();
    var ot: array<Res, NQ>;
    for (var n = 0u; n < NQ; n++) {
      ot[n] = Res();
    }
    for (var kc = 0u; kc < NC; kc++) {
      let pl = subgroupMatrixLoad<Left, row_major>(&p_, sg * 16u * PLD + kc * 16u, PLD);
      for (var n = 0u; n < NQ; n++) {
        let vr = subgroupMatrixLoad<Right, row_major>(&x16, vb + (j0 + kc * 16u) * KS + n * 16u, KS);
        ot[n] = subgroupMatrixMultiplyAccumulate(pl, vr, ot[n]);
      }
    }
    for (var n0 = 0u; n0 < NQ; n0 += NC) {
      for (var n = 0u; n < NC; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, ot[n0 + n], SLD);
      }
      workgroupBarrier();
      let a0 = (n0 / NC) * CPL;
      for (var i = 0u; i < CPL; i++) {
        oacc[a0 + i] = fma(oacc[a0 + i], corr, s_[r * SLD + c0 + i]);
      }
      workgroupBarrier(); // s_ is rewritten by the next chunk or tile
    }
  }
  let lt = row_sum(l, lid);
  if (pu(9u) != 0u && lane % LPR == 0u && t < T) {
    lse[p.oa.y + (b * nh + h) * T + t] = m + log(lt);
  }
  if (t < T) {
    let ob = select(1u, 2u, OUT16) * p.oa.x + (b * T + t) * QS + h * HD;
    let il = 1.0 / lt;
    for (var n0 = 0u; n0 < NQ; n0 += NC) {
      let a0 = (n0 / NC) * CPL;
      for (var i = 0u; i < CPL; i++) {
        let v = oacc[a0 + i] * il;
        outp[ob + n0 * 16u + c0 + i] = OT(select(v, clamp(v, -65504.0, 65504.0), OUT16));
      }
    }
  }
}
