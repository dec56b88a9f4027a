// Flash attention backward (dK, dV and the dq parts) on subgroup matrices with the operands
// staged in workgroup memory: the same computation, uniform block, bindings, dq-part layout and
// results as fa_sg_dkdv.wgsl (read its header first), different operand traffic and query tiles.
// Chosen by the host unless TEZGAH_WEBGPU_ATTN_SG_STAGE=0 (webgpu_ops_attn_sg.c). Source: our own.
//
// Why: fa_sg_dkdv.wgsl loads every K, V, Q and dO matrix straight from the storage buffer; the
// matmul's H200 measurements found staged tiles with 16-byte global loads ~3× faster
// (docs/PERF.md). Here x16 is read as vec4<u32> (8 halves per load, coalesced) into workgroup
// tiles of vec4<u32> (subgroupMatrixLoad reads vector arrays: offsets and strides count 8 halves):
//  - kb_: the block's BC keys, staged once and kept: the left matrices of Sᵀ = K·Qᵀ (each
//    subgroup its own 16 keys) and the right matrices of the dq part dS·K (all BC keys);
//  - V: with VST (host constant, where 48 KB allow: head_dim 64) the block's BC values staged
//    once into kb_'s second half (rows BC .. 2·BC − 1: one array, not a separate vb_, so that
//    every subgroupMatrixLoad source is a full tile even where VST is false and that branch
//    is dead: Dawn checks each load's array against the matrix access statically and rejected
//    a 1-element vb_ at head_dim 128) and the left matrices of dPᵀ = V·dOᵀ read from there per
//    tile; else each subgroup's left matrices are loaded once through kb_ at the start and
//    held in registers (vl; head_dim 128);
//  - qt_, dt_: the query tile's Q and dO, BR = 32 queries (not BC: 48 KB then holds kb_, qt_,
//    dt_, s_ and pds_ for head_dim 128), the next tile's global loads issued into registers
//    (prefetch) before this tile's products and stored after them.
// pds_ holds Pᵀ, then dSᵀ in place (each thread rewrites the entries it wrote; the P values also
// stay in its registers). lse and D of the tile's queries sit in s_'s row padding (columns BR and
// BR + 1 of row i < BR), which the matrix stores never touch.
// Per tile: s_ ← Sᵀ → Pᵀ → s_ ← dPᵀ, dV += Pᵀ·dO → dSᵀ → dK += dSᵀ·Q,
// dq part of the tile's 16-query block qi = sg mod NR, columns (sg / NR)·NQS .. (all subgroups
// busy: NSG = 4 gives each half the columns of one 16-query block). 6 barriers per tile, 5 with
// DB (host constant, TEZGAH_WEBGPU_ATTN_SG_DB, default true where 48 KB allow: head_dim 64 with
// V in registers): qt_ and dt_ hold two tiles, alternate tiles use alternate halves, so the
// barrier that kept the next tile's stores off this tile's reads goes.
// The iteration runs over (query head of the group, tile) flattened, so prefetch crosses heads.
// Requirements (host): as fa_sg_fwd_st.wgsl (x16's offsets 16-byte aligned); NSG 2 or 4.
// Host prefix: const HD, SGSIZE, NSG, KPAD (vec4 of padding per tile row: 1, or 0 where the
// workgroup memory is short, the emulation), VST (bool: V staged in kb_'s second half), KREG
// (bool: the subgroup's left matrices of K loaded once into registers (kl) rather than from kb_
// per tile; a tuning variant, TEZGAH_WEBGPU_ATTN_SG_KREG=1), EWF (bool: the element-wise passes'
// bank-conflict-free entry order, TEZGAH_WEBGPU_ATTN_SG_EWF, default true), DB (bool: Q and dO
// tiles double-buffered, above), ABL (u32, 0: an ablation for timing only, wrong results,
// TEZGAH_WEBGPU_ATTN_SG_ABLATE: bit 1 no dq part (products, stores), 2 no element-wise passes
// (P, dS), 4 no barriers (2)-(5): where the time goes), F32IN (bool,
// TEZGAH_WEBGPU_ATTN_SG_F32IN=1, opt-in, default false: K, V and Q read from the fp32 tensors (binding 5,
// xin, as fa_sg_fwd_st.wgsl's F32IN: converted when stored to workgroup memory, rows t ≥ T
// zero; no fa_sg_pack copies); dO still from its f16 copy in x16, which fa_sg_prep.wgsl makes
// with D), F32L (bool: as fa_sg_fwd_st.wgsl's, the conversion at the loads) and EWX (bool,
// TEZGAH_WEBGPU_ATTN_SG_EWX, default true: the element-wise passes' scales folded,
// P = exp2(fma(S, scale·log2 e, −lse·log2 e)) and P's register copy times the scale, so
// dS = that · (dP − D): 2 multiplies per entry fewer, the same up to rounding; false:
// exp(S·scale − lse), dS = P·(dP − D)·scale). Words (F32IN): u5 q's row stride (floats),
// u6 / u7 k's / v's first float after q's (q is xin's argument start: ob.x), u15 k's and v's
// row stride (as always).
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
@group(0) @binding(3) var<storage, read> x16: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read> xin: array<vec4<f32>>;

alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
const BC = NSG * 16u;      // keys per workgroup
const BR = 32u;            // queries per tile
const NT = NSG * SGSIZE;   // threads
const LPR = SGSIZE / 16u;  // lanes per key row
const CPL = BR / LPR;      // queries per lane
const NQ = HD / 16u;       // 16-column matrices across a head
const NR = BR / 16u;       // 16-query matrices across a tile
const QSPL = NSG / NR;     // subgroups per 16-query block in the dq part
const NQS = NQ / QSPL;     // and the column matrices each takes
const SLD = BR + 4u;       // s_ row stride (f32; 16-byte multiple; columns BR, BR + 1: lse, D)
const PLD = BR + 8u;       // pds_ row stride (f16; 16-byte multiple)
const HV = HD / 8u;        // vec4<u32> (8 halves) across a head
const KLD = HV + KPAD;     // tile row stride (vec4<u32>)
const NVK = BC * HV / NT;  // vec4 per thread of a BC-row tile (16·HV / SGSIZE)
const NVQ = BR * HV / NT;  // of a BR-row tile
const LOG2E: f32 = 1.4426950408889634;
const VOFF = BC * KLD;                  // V's first vec4 in kb_ (VST)
const NKB = select(1u, 2u, VST) * BC * KLD; // kb_'s size: K, then V where staged
const NVL = select(NQ, 1u, VST);        // vl's size (1: unused)
const NKL = select(1u, NQ, KREG);       // kl's size (1: unused)
var<workgroup> kb_: array<vec4<u32>, NKB>;
const NQB = select(1u, 2u, DB) * BR * KLD; // qt_'s and dt_'s size: two tiles with DB
var<workgroup> qt_: array<vec4<u32>, NQB>;
var<workgroup> dt_: array<vec4<u32>, NQB>;
var<workgroup> s_: array<f32, BC * SLD>;
var<workgroup> pds_: array<f16, BC * PLD>;

fn pu(k: u32) -> u32 {
  return p.u[k / 4u][k % 4u];
}
fn part_row(kb: u32, Tp: u32) -> u32 {
  return kb * Tp - BC * ((kb * max(kb, 1u) - kb) / 2u); // Σ_{k < kb} (Tp − k·BC)
}
// where a tensor's tiles come from: x16 (its copy's first vec4 h, row stride hs, rows Tp) or,
// F32IN, xin (first vec4<f32> f, row stride fs, rows T)
struct Src { h: u32, hs: u32, f: u32, fs: u32 }
fn src_of(w: u32, b: u32, hg: u32, stride: u32, Tp: u32, T: u32) -> Src { // w: 5 q, 6 k, 7 v
  if (F32IN) {
    let fs = select(pu(15u), pu(5u), w == 5u);
    return Src(0u, 0u, (p.ob.x + select(pu(w), 0u, w == 5u) + b * T * fs + hg * HD) / 4u, fs / 4u);
  }
  return Src(p.oa.z / 4u + (pu(w) + b * Tp * stride + hg * HD) / 8u, stride / 8u, 0u, 0u);
}
// 8 floats as 8 halves (fa_sg_pack's conversion)
fn pk8(a: vec4<f32>, b: vec4<f32>) -> vec4<u32> {
  let ca = clamp(a, vec4<f32>(-65504.0), vec4<f32>(65504.0));
  let cb = clamp(b, vec4<f32>(-65504.0), vec4<f32>(65504.0));
  return vec4<u32>(pack2x16float(ca.xy), pack2x16float(ca.zw), pack2x16float(cb.xy), pack2x16float(cb.zw));
}
// a tile in the prefetch registers: h (x16's halves) or, F32IN, f (xin's floats, 2 per slot);
// slot i of a tile of HV slots per row: row i / HV, column i % HV (consecutive threads,
// consecutive 16 bytes, F32IN 32); rows t0 .. of s's sequence, F32IN rows t ≥ T zero
struct PreK { h: array<vec4<u32>, NVK>, f: array<vec4<f32>, 2u * NVK> }
struct PreQ { h: array<vec4<u32>, NVQ>, f: array<vec4<f32>, 2u * NVQ> }
fn blk_ld(s: Src, t0: u32, T: u32, lid: u32) -> PreK {
  var v: PreK;
  for (var e = 0u; e < NVK; e++) {
    let i = lid + e * NT;
    if (F32IN) {
      if (t0 + i / HV < T) {
        let a = s.f + (t0 + i / HV) * s.fs + (i % HV) * 2u;
        if (F32L) {
          v.h[e] = pk8(xin[a], xin[a + 1u]);
        } else {
          v.f[2u * e] = xin[a];
          v.f[2u * e + 1u] = xin[a + 1u];
        }
      }
    } else {
      v.h[e] = x16[s.h + (t0 + i / HV) * s.hs + i % HV];
    }
  }
  return v;
}
fn blk_h(v: PreK, e: u32) -> vec4<u32> { // slot e as halves
  if (F32IN && !F32L) {
    return pk8(v.f[2u * e], v.f[2u * e + 1u]);
  }
  return v.h[e];
}
fn blk_st(v: PreK, lid: u32) {
  for (var e = 0u; e < NVK; e++) {
    let i = lid + e * NT;
    kb_[(i / HV) * KLD + i % HV] = blk_h(v, e);
  }
}
fn til_ld(s: Src, t0: u32, T: u32, lid: u32) -> PreQ {
  var v: PreQ;
  for (var e = 0u; e < NVQ; e++) {
    let i = lid + e * NT;
    if (F32IN) {
      if (t0 + i / HV < T) {
        let a = s.f + (t0 + i / HV) * s.fs + (i % HV) * 2u;
        if (F32L) {
          v.h[e] = pk8(xin[a], xin[a + 1u]);
        } else {
          v.f[2u * e] = xin[a];
          v.f[2u * e + 1u] = xin[a + 1u];
        }
      }
    } else {
      v.h[e] = x16[s.h + (t0 + i / HV) * s.hs + i % HV];
    }
  }
  return v;
}
fn til_h(v: PreQ, e: u32) -> vec4<u32> {
  if (F32IN && !F32L) {
    return pk8(v.f[2u * e], v.f[2u * e + 1u]);
  }
  return v.h[e];
}
// dO's tile (always x16's copy): first vec4 base, rows sv vec4 apart
fn til16(base: u32, sv: u32, lid: u32) -> array<vec4<u32>, NVQ> {
  var v: array<vec4<u32>, NVQ>;
  for (var e = 0u; e < NVQ; e++) {
    let i = lid + e * NT;
    v[e] = x16[base + (i / HV) * sv + i % HV];
  }
  return v;
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &dkv; _ = &scr; _ = &x16; _ = &lse; _ = &xin;
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
  let x0 = p.oa.z / 4u; // x16's first vec4 (the host keeps it 16-byte aligned)
  let ksrc = src_of(6u, b, g, KS, Tp, T);
  let vsrc = src_of(7u, b, g, KS, Tp, T);
  // V's left matrices through kb_, then K's block into kb_ for good
  var vl: array<Left, NVL>;
  if (VST) {
    let vpre = blk_ld(vsrc, k0, T, lid);
    for (var e = 0u; e < NVK; e++) {
      let i = lid + e * NT;
      kb_[VOFF + (i / HV) * KLD + i % HV] = blk_h(vpre, e);
    }
  } else {
    blk_st(blk_ld(vsrc, k0, T, lid), lid);
    workgroupBarrier();
    for (var kk = 0u; kk < NQ; kk++) {
      vl[kk] = subgroupMatrixLoad<Left, row_major>(&kb_, sg * 16u * KLD + kk * 2u, KLD);
    }
  }
  let kpre = blk_ld(ksrc, k0, T, lid);
  workgroupBarrier();
  blk_st(kpre, lid);
  var kl: array<Left, NKL>;
  if (KREG) {
    workgroupBarrier();
    for (var kk = 0u; kk < NQ; kk++) {
      kl[kk] = subgroupMatrixLoad<Left, row_major>(&kb_, sg * 16u * KLD + kk * 2u, KLD);
    }
  }
  var dk: array<Res, NQ>;
  var dv: array<Res, NQ>;
  // tiles per query head: queries k0 .. T−1 (none where k0 ≥ T)
  let ntl = select(0u, (T - k0 + BR - 1u) / BR, k0 < T);
  let nit = rep * ntl;
  var qpre: PreQ;
  var dpre: array<vec4<u32>, NVQ>;
  if (nit > 0u) {
    let qo = b * Tp * QS + g * rep * HD + k0 * QS;
    qpre = til_ld(src_of(5u, b, g * rep, QS, Tp, T), k0, T, lid);
    dpre = til16(x0 + (pu(8u) + qo) / 8u, QS / 8u, lid);
  }
  let qi = sg % NR;            // this subgroup's 16-query block of the dq part
  let qn0 = (sg / NR) * NQS;   // and its first column matrix
  for (var it = 0u; it < nit; it++) {
    let h = g * rep + it / ntl;
    let t0 = k0 + (it % ntl) * BR;
    let lrow = (b * nh + h) * T;
    let tb = select(0u, BR * KLD, DB && it % 2u == 1u); // this tile's half of qt_, dt_ (DB)
    let pb = p.oa.y + pu(11u) + ((bl * nh + h) * pu(12u) + part_row(kblk, Tp)) * HD; // query k0's part row
    // the tile's Q, dO (prefetched), lse and D into workgroup memory
    for (var e = 0u; e < NVQ; e++) {
      let i = lid + e * NT;
      qt_[tb + (i / HV) * KLD + i % HV] = til_h(qpre, e);
      dt_[tb + (i / HV) * KLD + i % HV] = dpre[e];
    }
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
      s_[(i % BR) * SLD + BR + i / BR] = v;
    }
    workgroupBarrier(); // (1) the tile visible
    if (it + 1u < nit) { // the next tile's global loads, stored at the top of the next iteration
      let hn = g * rep + (it + 1u) / ntl;
      let tn = k0 + ((it + 1u) % ntl) * BR;
      qpre = til_ld(src_of(5u, b, hn, QS, Tp, T), tn, T, lid);
      dpre = til16(x0 + (pu(8u) + b * Tp * QS + hn * HD + tn * QS) / 8u, QS / 8u, lid);
    }
    // Sᵀ = K·Qᵀ (this subgroup's 16 keys × the tile's BR queries)
    var sacc: array<Res, NR>;
    for (var n = 0u; n < NR; n++) {
      sacc[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
    }
    for (var kk = 0u; kk < NQ; kk++) {
      var kf: Left;
      if (KREG) {
        kf = kl[kk];
      } else {
        kf = subgroupMatrixLoad<Left, row_major>(&kb_, sg * 16u * KLD + kk * 2u, KLD);
      }
      for (var n = 0u; n < NR; n++) {
        let qr = subgroupMatrixLoad<Right, col_major>(&qt_, tb + n * 16u * KLD + kk * 2u, KLD);
        sacc[n] = subgroupMatrixMultiplyAccumulate(kf, qr, sacc[n]);
      }
    }
    for (var n = 0u; n < NR; n++) {
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, sacc[n], SLD);
    }
    if ((ABL & 4u) == 0u) {
      workgroupBarrier(); // (2) Sᵀ visible
    }
    // Pᵀ (kept in pv, and as f16 in pds_). The element-wise passes' i-th entry of this thread:
    // with EWF entry lid + i·NT of the BC × BR tile (row er0 + ers·i, column lid % BR: one query
    // per thread; the 32 lanes of an access read one row's 32 consecutive entries, no bank
    // conflicts); else row r, column c0 + i (4-way bank conflicts at SGSIZE 32, SLD 36)
    let er0 = select(r, lid / BR, EWF);
    let ers = select(0u, NT / BR, EWF);
    let ec0 = select(c0, lid % BR, EWF);
    let ecs = select(1u, 0u, EWF);
    // EWF: the thread's query's lse and D, read once (a read per entry would be a 4-way bank
    // conflict: the 32 lanes' queries are 32 rows of s_ apart)
    var lq = 0.0;
    var dq_ = 0.0;
    if (EWF) {
      lq = s_[ec0 * SLD + BR];
      dq_ = s_[ec0 * SLD + BR + 1u];
    }
    var pv: array<f32, CPL>;
    for (var i = 0u; i < select(CPL, 0u, (ABL & 2u) != 0u); i++) {
      let er = er0 + ers * i;
      let ec = ec0 + ecs * i;
      let tq = t0 + ec;
      var l_ = lq;
      if (!EWF) {
        l_ = s_[ec * SLD + BR];
      }
      var x: f32;
      if (EWX) { // exp(s·sc − l) as exp2 of one fma
        x = select(exp2(fma(s_[er * SLD + ec], sc * LOG2E, -l_ * LOG2E)), 0.0, tq < k0 + er || tq >= T);
      } else {
        x = select(exp(s_[er * SLD + ec] * sc - l_), 0.0, tq < k0 + er || tq >= T);
      }
      pv[i] = f32(f16(x)); // the value the products use
      if (EWX) {
        pv[i] = pv[i] * sc; // dS's scale, folded in
      }
      pds_[er * PLD + ec] = f16(x);
    }
    if ((ABL & 4u) == 0u) {
      workgroupBarrier(); // (3) Pᵀ visible, Sᵀ read
    }
    // dPᵀ = V·dOᵀ into s_
    var dp: array<Res, NR>;
    for (var n = 0u; n < NR; n++) {
      dp[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
    }
    for (var kk = 0u; kk < NQ; kk++) {
      for (var n = 0u; n < NR; n++) {
        let dr = subgroupMatrixLoad<Right, col_major>(&dt_, tb + n * 16u * KLD + kk * 2u, KLD);
        if (VST) {
          let vv = subgroupMatrixLoad<Left, row_major>(&kb_, VOFF + sg * 16u * KLD + kk * 2u, KLD);
          dp[n] = subgroupMatrixMultiplyAccumulate(vv, dr, dp[n]);
        } else {
          dp[n] = subgroupMatrixMultiplyAccumulate(vl[kk], dr, dp[n]);
        }
      }
    }
    for (var n = 0u; n < NR; n++) {
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, dp[n], SLD);
    }
    // dV += Pᵀ·dO
    for (var kc = 0u; kc < NR; kc++) {
      let pl = subgroupMatrixLoad<Left, row_major>(&pds_, sg * 16u * PLD + kc * 16u, PLD);
      for (var n = 0u; n < NQ; n++) {
        let dr = subgroupMatrixLoad<Right, row_major>(&dt_, tb + kc * 16u * KLD + n * 2u, KLD);
        dv[n] = subgroupMatrixMultiplyAccumulate(pl, dr, dv[n]);
      }
    }
    if ((ABL & 4u) == 0u) {
      workgroupBarrier(); // (4) dPᵀ visible, Pᵀ read
    }
    // dSᵀ = Pᵀ ∘ (dPᵀ − D)·scale over Pᵀ in pds_
    for (var i = 0u; i < select(CPL, 0u, (ABL & 2u) != 0u); i++) {
      let er = er0 + ers * i;
      let ec = ec0 + ecs * i;
      var d_ = dq_;
      if (!EWF) {
        d_ = s_[ec * SLD + BR + 1u];
      }
      if (EWX) {
        pds_[er * PLD + ec] = f16(pv[i] * (s_[er * SLD + ec] - d_)); // pv holds P·sc
      } else {
        pds_[er * PLD + ec] = f16(pv[i] * (s_[er * SLD + ec] - d_) * sc);
      }
    }
    if ((ABL & 4u) == 0u) {
      workgroupBarrier(); // (5) dSᵀ visible
    }
    // dK += dSᵀ·Q; the dq part dS·K of query block qi, columns qn0 .. qn0 + NQS
    for (var kc = 0u; kc < NR; kc++) {
      let dl = subgroupMatrixLoad<Left, row_major>(&pds_, sg * 16u * PLD + kc * 16u, PLD);
      for (var n = 0u; n < NQ; n++) {
        let qr = subgroupMatrixLoad<Right, row_major>(&qt_, tb + kc * 16u * KLD + n * 2u, KLD);
        dk[n] = subgroupMatrixMultiplyAccumulate(dl, qr, dk[n]);
      }
    }
    var dq: array<Res, NQS>;
    for (var n = 0u; n < NQS; n++) {
      dq[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
    }
    for (var kc = 0u; kc < select(BC / 16u, 0u, (ABL & 1u) != 0u); kc++) {
      let al = subgroupMatrixLoad<Left, col_major>(&pds_, kc * 16u * PLD + qi * 16u, PLD);
      for (var n = 0u; n < NQS; n++) {
        let kr = subgroupMatrixLoad<Right, row_major>(&kb_, kc * 16u * KLD + (qn0 + n) * 2u, KLD);
        dq[n] = subgroupMatrixMultiplyAccumulate(al, kr, dq[n]);
      }
    }
    for (var n = 0u; n < select(NQS, 0u, (ABL & 1u) != 0u); n++) {
      subgroupMatrixStore<row_major>(&scr, pb + (t0 - k0 + qi * 16u) * HD + (qn0 + n) * 16u, dq[n], HD);
    }
    if (!DB) {
      workgroupBarrier(); // (6) qt_, dt_, pds_, s_ read before the next tile's writes
    }
    // (with DB the next tile's Q and dO go to the other half of qt_, dt_, last read two tiles
    // ago; its lse, D and Sᵀ go to s_ after (5) and (1), its Pᵀ to pds_ after its (1) and (2),
    // each past the last reads of this tile's)
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
