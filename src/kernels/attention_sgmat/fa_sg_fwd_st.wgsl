// Flash attention forward on subgroup matrices with the operands staged in workgroup memory: the
// same computation, uniform block, bindings and results as fa_sg_fwd.wgsl (read its header first:
// shapes, masking, the two-pass and one-pass forms), different operand traffic. Chosen by the
// host unless TEZGAH_WEBGPU_ATTN_SG_STAGE=0 (webgpu_ops_attn_sg.c). Source: our own.
//
// Why: in fa_sg_fwd.wgsl every subgroup loads its K/V matrices straight from the storage buffer
// (16 × 16 loads of 32-byte rows); the matmul's measurements on the H200 (docs/PERF.md, kernel n)
// found such loads ~3× slower than staging tiles in workgroup memory with 16-byte global loads.
// Here the workgroup loads each tile once, cooperatively and coalesced: x16 is read as
// vec4<u32> (8 halves per load), the tile kv_ is an array of vec4<u32> (one 16-byte store per
// load; subgroupMatrixLoad reads a vector array, offsets and strides then count 8-half units),
// and every subgroup reads its matrices from kv_.
//  - Q: the block's BR rows staged once through kv_, then held as left matrices (as before).
//  - K then V of a key tile share the one buffer kv_ (HD 128: two would not fit next to s_ and
//    p_ in 48 KB). Register prefetch: the V tile's global loads are issued before the S
//    products and stored after them; the next K tile's before the P·V products, stored after.
//  - Rows of kv_ padded by KPAD vec4 (host constant, 1 normally: 16 bytes, spreads the column-
//    major reads of Kᵀ over the banks; 0 where the workgroup memory is short, the emulation).
// Barriers per key tile: 2 in the two-pass form's first pass, 4 in its second (K visible; s_
// visible and kv_ free; p_ and V visible; kv_ free), 3 + 2·HD/BC in the one-pass form.
// Requirements (host): x16's binding offset and the q/k/v copies' offsets 16-byte aligned (every
// row and head start then is: heads·HD is a multiple of 8).
// Host prefix: as fa_sg_fwd.wgsl plus const KPAD (u32, 0 or 1), EWF (bool: the element-wise
// passes' bank-conflict-free column order, TEZGAH_WEBGPU_ATTN_SG_EWF, default true) and LAZY
// (bool: main1's output in subgroup matrices, rescaled only when needed; below) with LTH (f32:
// the growth of a row's maximum, nats, that forces the rescale: 8, or 0 in tests) and F32IN
// (bool, TEZGAH_WEBGPU_ATTN_SG_F32IN=1, opt-in, default false: Q, K, V read from the fp32 tensors, below).
// F32IN: the tiles come straight from the fp32 q, k, v (binding 4, xin, read as vec4<f32>; no
// fa_sg_pack copies): each 8-half slot of a tile is two vec4<f32> loads, held as fp32 in the
// prefetch registers and converted (clamp to ±65504, pack2x16float: fa_sg_pack's rounding, so
// the same f16 values) when stored to workgroup memory; rows t ≥ T read as zeros (the copies'
// zero rows). Words (F32IN): u5 q's row stride (floats), u6 / u7 k's / v's first float after
// q's (q is xin's argument start: oa.w), u15 k's and v's row stride; xin's offsets 16-byte
// aligned (host). Without F32IN xin is bound but unread, and u5..u7 are the x16 offsets.
// F32L (bool, TEZGAH_WEBGPU_ATTN_SG_F32IN=2; a tuning variant): the conversion right at the
// loads, the prefetch registers then hold halves (half the registers; the conversion waits for
// the loads where the fp32 form's waits at the store).
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
@group(0) @binding(3) var<storage, read> x16: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> xin: array<vec4<f32>>;

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
const HV = HD / 8u;        // vec4<u32> (8 halves) across a head
const KLD = HV + KPAD;     // kv_ row stride (vec4<u32>)
const NV = BC * HV / NT;   // vec4<u32> per thread per tile (16·HV / SGSIZE: whole)
const NEG: f32 = -3.0e38;
// a tile in the prefetch registers: h (x16's halves) or, F32IN, f (xin's floats, 2 per slot)
struct Pre { h: array<vec4<u32>, NV>, f: array<vec4<f32>, 2u * NV> }
// where a tensor's tiles come from: x16 (its copy's first vec4 h, row stride hs, rows Tp) or,
// F32IN, xin (first vec4<f32> f, row stride fs, rows T)
struct Src { h: u32, hs: u32, f: u32, fs: u32 }
var<workgroup> s_: array<f32, BR * SLD>;
var<workgroup> p_: array<f16, BR * PLD>;
var<workgroup> kv_: array<vec4<u32>, BC * KLD>;
var<workgroup> rs_: u32; // LAZY: some row's reference maximum moved this tile (main1)

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
// the BC × HD tile of rows t0 .. t0 + BC − 1 of tensor s's sequence: this thread's NV slots
// (slot lid + e·NT: row slot / HV, column slot % HV; consecutive threads read consecutive 16
// bytes, F32IN 32); F32IN rows t ≥ T stay zero
fn tile_ld(s: Src, t0: u32, T: u32, lid: u32) -> Pre {
  var v: Pre;
  for (var e = 0u; e < NV; e++) {
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
// 8 floats as 8 halves (fa_sg_pack's conversion)
fn pk8(a: vec4<f32>, b: vec4<f32>) -> vec4<u32> {
  let ca = clamp(a, vec4<f32>(-65504.0), vec4<f32>(65504.0));
  let cb = clamp(b, vec4<f32>(-65504.0), vec4<f32>(65504.0));
  return vec4<u32>(pack2x16float(ca.xy), pack2x16float(ca.zw), pack2x16float(cb.xy), pack2x16float(cb.zw));
}
fn tile_st(v: Pre, lid: u32) {
  for (var e = 0u; e < NV; e++) {
    let i = lid + e * NT;
    if (F32IN && !F32L) {
      kv_[(i / HV) * KLD + i % HV] = pk8(v.f[2u * e], v.f[2u * e + 1u]);
    } else {
      kv_[(i / HV) * KLD + i % HV] = v.h[e];
    }
  }
}

// Q's (head h), K's and V's (kv head g) sources in sequence b (x16's first vec4 is oa.z / 4,
// xin's first vec4<f32> oa.w / 4: the host keeps both 16-byte aligned)
fn srcs(b: u32, h: u32, g: u32, nh: u32, nkv: u32, Tp: u32, T: u32) -> array<Src, 3> {
  let QS = nh * HD;
  let KS = nkv * HD;
  let x0 = p.oa.z / 4u;
  let f0 = p.oa.w;
  if (F32IN) {
    let qs = pu(5u);
    let ks = pu(15u);
    return array<Src, 3>(Src(0u, 0u, (f0 + b * T * qs + h * HD) / 4u, qs / 4u),
                         Src(0u, 0u, (f0 + pu(6u) + b * T * ks + g * HD) / 4u, ks / 4u),
                         Src(0u, 0u, (f0 + pu(7u) + b * T * ks + g * HD) / 4u, ks / 4u));
  }
  return array<Src, 3>(Src(x0 + (pu(5u) + b * Tp * QS + h * HD) / 8u, QS / 8u, 0u, 0u),
                       Src(x0 + (pu(6u) + b * Tp * KS + g * HD) / 8u, KS / 8u, 0u, 0u),
                       Src(x0 + (pu(7u) + b * Tp * KS + g * HD) / 8u, KS / 8u, 0u, 0u));
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &outp; _ = &lse; _ = &x16; _ = &xin;
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
  // the lane's i-th column of a tile is cb + cs·((i + rot) mod CPL): with EWF the columns
  // lane % LPR + LPR·m, rotated by one for rows 8..15 of a 16-row matrix, so that the 32 lanes'
  // s_ reads (row stride SLD ≡ 4 mod 32 words) and p_ writes fall in distinct banks; else the
  // CPL consecutive columns from c0 (4-way bank conflicts at SGSIZE 32)
  let cb = select(c0, lane % LPR, EWF);
  let cs = select(1u, LPR, EWF);
  let rot = select(0u, (r / 8u) % 2u, EWF);
  let t = q0 + r;
  let QS = nh * HD;
  let src_ = srcs(b, h, g, nh, nkv, Tp, T);
  tile_st(tile_ld(src_[0], q0, T, lid), lid);
  workgroupBarrier();
  var ql: array<Left, NQ>;
  for (var kk = 0u; kk < NQ; kk++) {
    ql[kk] = subgroupMatrixLoad<Left, row_major>(&kv_, sg * 16u * KLD + kk * 2u, KLD);
  }
  var o: array<Res, NQ>;
  var m = NEG;
  var l = 0.0;
  var ls = 0.0;
  let kend = min(q0 + BR, T);
  for (var ph = 0u; ph < 2u; ph++) {
    var pre = tile_ld(src_[1], 0u, T, lid);
    workgroupBarrier(); // kv_ free (Q's left matrices, or the last pass's V, read)
    tile_st(pre, lid);
    for (var j0 = 0u; j0 < kend; j0 += BC) {
      workgroupBarrier(); // the K tile visible (and s_ read by the last tile's threads)
      if (ph == 1u) {
        pre = tile_ld(src_[2], j0, T, lid);
      } else if (j0 + BC < kend) {
        pre = tile_ld(src_[1], j0 + BC, T, lid);
      }
      // S = Q·Kᵀ of this subgroup's 16 rows and the tile's BC keys, into s_
      var sacc: array<Res, NC>;
      for (var n = 0u; n < NC; n++) {
        sacc[n] = Res(); // explicit zeros: a loop-local var is not reliably re-zeroed
      }
      for (var kk = 0u; kk < NQ; kk++) {
        for (var n = 0u; n < NC; n++) {
          let kr = subgroupMatrixLoad<Right, col_major>(&kv_, n * 16u * KLD + kk * 2u, KLD);
          sacc[n] = subgroupMatrixMultiplyAccumulate(ql[kk], kr, sacc[n]);
        }
      }
      for (var n = 0u; n < NC; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, sacc[n], SLD);
      }
      workgroupBarrier(); // s_ visible; kv_'s K read by every subgroup
      if (ph == 0u) { // the row's running max and sum; the next K tile into kv_
        if (j0 + BC < kend) {
          tile_st(pre, lid);
        }
        var mt = NEG;
        for (var i = 0u; i < CPL; i++) {
          let k = j0 + cb + cs * ((i + rot) % CPL);
          mt = max(mt, select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T));
        }
        let mn = max(m, row_max(mt, lid));
        var st = 0.0;
        for (var i = 0u; i < CPL; i++) {
          let k = j0 + cb + cs * ((i + rot) % CPL);
          st += exp(select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T) - mn);
        }
        l = l * exp(m - mn) + st;
        m = mn;
      } else { // V into kv_, P = exp(S − lse) as f16 into p_, then O += P·V
        tile_st(pre, lid);
        if (j0 + BC < kend) {
          pre = tile_ld(src_[1], j0 + BC, T, lid);
        }
        for (var i = 0u; i < CPL; i++) {
          let k = j0 + cb + cs * ((i + rot) % CPL);
          let s = select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T);
          p_[r * PLD + cb + cs * ((i + rot) % CPL)] = f16(exp(s - ls));
        }
        workgroupBarrier(); // p_ and V visible
        for (var kc = 0u; kc < NC; kc++) {
          let pl = subgroupMatrixLoad<Left, row_major>(&p_, sg * 16u * PLD + kc * 16u, PLD);
          for (var n = 0u; n < NQ; n++) {
            let vr = subgroupMatrixLoad<Right, row_major>(&kv_, kc * 16u * KLD + n * 2u, KLD);
            o[n] = subgroupMatrixMultiplyAccumulate(pl, vr, o[n]);
          }
        }
        if (j0 + BC < kend) {
          workgroupBarrier(); // V read by every subgroup
          tile_st(pre, lid);
        }
      }
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
    workgroupBarrier(); // s_ read (the last tile's P, or the last chunk)
    for (var n = 0u; n < NC; n++) {
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, o[n0 + n], SLD);
    }
    workgroupBarrier();
    if (t < T) {
      for (var i = 0u; i < CPL; i++) {
        let v = s_[r * SLD + cb + cs * ((i + rot) % CPL)];
        outp[ob + n0 * 16u + cb + cs * ((i + rot) % CPL)] = OT(select(v, clamp(v, -65504.0, 65504.0), OUT16));
      }
    }
  }
}

// The one-pass form (entry point main1, TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1), staged: as
// fa_sg_fwd.wgsl's main1 (online softmax, the output rows in registers of the threads) with K and
// V through kv_ as main above. K is read once (main reads it twice).
// With LAZY (host constant, TEZGAH_WEBGPU_ATTN_SG_LAZY, default true) the output stays in
// subgroup matrices (o, as main's) and is rescaled only when some row's running maximum grew by
// more than LTH since the row's reference maximum mu (the reference P = exp(S·scale − mu) used):
// P ≤ e^LTH then (f16 holds it; the sums are f32), and after the first tile a row's maximum
// rarely grows that much, so the per-tile pass through s_ (store P·V, barrier, rescale and add in
// registers) becomes a rare one (store o, rescale in place, load it back). The rescale decision is
// made workgroup-uniform through rs_ (workgroupUniformLoad, which is also the barrier that makes
// p_ and the V tile visible). Same result up to rounding (the order of the scalings differs).
@compute @workgroup_size(NT)
fn main1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &outp; _ = &lse; _ = &x16; _ = &xin;
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
  let cb = select(c0, lane % LPR, EWF); // the lane's columns: as main
  let cs = select(1u, LPR, EWF);
  let rot = select(0u, (r / 8u) % 2u, EWF);
  let t = q0 + r;
  let QS = nh * HD;
  let src_ = srcs(b, h, g, nh, nkv, Tp, T);
  tile_st(tile_ld(src_[0], q0, T, lid), lid);
  workgroupBarrier();
  var ql: array<Left, NQ>;
  for (var kk = 0u; kk < NQ; kk++) {
    ql[kk] = subgroupMatrixLoad<Left, row_major>(&kv_, sg * 16u * KLD + kk * 2u, KLD);
  }
  var pre = tile_ld(src_[1], 0u, T, lid);
  workgroupBarrier(); // Q's left matrices read
  tile_st(pre, lid);
  var oacc: array<f32, CPL * (NQ / NC)>;
  var o: array<Res, NQ>; // LAZY: the output rows, scaled by exp(mu − the true running max)
  var m = NEG;           // the row's reference maximum (LAZY: mu)
  var l = 0.0;
  let kend = min(q0 + BR, T);
  for (var j0 = 0u; j0 < kend; j0 += BC) {
    workgroupBarrier(); // the K tile visible, s_ read
    if (LAZY && lid == 0u) {
      rs_ = 0u; // last read by the previous tile's workgroupUniformLoad, before the barrier above
    }
    pre = tile_ld(src_[2], j0, T, lid);
    var sacc: array<Res, NC>;
    for (var n = 0u; n < NC; n++) {
      sacc[n] = Res();
    }
    for (var kk = 0u; kk < NQ; kk++) {
      for (var n = 0u; n < NC; n++) {
        let kr = subgroupMatrixLoad<Right, col_major>(&kv_, n * 16u * KLD + kk * 2u, KLD);
        sacc[n] = subgroupMatrixMultiplyAccumulate(ql[kk], kr, sacc[n]);
      }
    }
    for (var n = 0u; n < NC; n++) {
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, sacc[n], SLD);
    }
    workgroupBarrier(); // s_ visible, K read
    tile_st(pre, lid);
    if (j0 + BC < kend) {
      pre = tile_ld(src_[1], j0 + BC, T, lid);
    }
    var mt = NEG;
    for (var i = 0u; i < CPL; i++) {
      let k = j0 + cb + cs * ((i + rot) % CPL);
      mt = max(mt, select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T));
    }
    var mn = max(m, row_max(mt, lid));
    if (LAZY && mn <= m + LTH) {
      mn = m; // keep the reference: P ≤ e^LTH
    }
    let corr = exp(m - mn);
    if (LAZY && mn != m && j0 > 0u) {
      rs_ = 1u; // o holds rows to rescale (before the first tile it is zero: nothing to do)
    }
    var st = 0.0;
    for (var i = 0u; i < CPL; i++) {
      let k = j0 + cb + cs * ((i + rot) % CPL);
      let pv = exp(select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T) - mn);
      st += pv;
      p_[r * PLD + cb + cs * ((i + rot) % CPL)] = f16(pv);
    }
    l = l * corr + st;
    m = mn;
    if (LAZY) {
      // a barrier (p_ and V visible, s_ read), then rs_ read alike by every invocation
      if (workgroupUniformLoad(&rs_) != 0u) {
        // o ← diag(corr)·o through this subgroup's rows of s_, NC matrices at a time
        for (var n0 = 0u; n0 < NQ; n0 += NC) {
          for (var n = 0u; n < NC; n++) {
            subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, o[n0 + n], SLD);
          }
          workgroupBarrier();
          for (var i = 0u; i < CPL; i++) {
            let e = r * SLD + cb + cs * ((i + rot) % CPL);
            s_[e] = s_[e] * corr;
          }
          workgroupBarrier();
          for (var n = 0u; n < NC; n++) {
            o[n0 + n] = subgroupMatrixLoad<Res, row_major>(&s_, sg * 16u * SLD + n * 16u, SLD);
          }
          workgroupBarrier(); // s_ read before the next chunk (or the next tile's S)
        }
      }
      for (var kc = 0u; kc < NC; kc++) {
        let pl = subgroupMatrixLoad<Left, row_major>(&p_, sg * 16u * PLD + kc * 16u, PLD);
        for (var n = 0u; n < NQ; n++) {
          let vr = subgroupMatrixLoad<Right, row_major>(&kv_, kc * 16u * KLD + n * 2u, KLD);
          o[n] = subgroupMatrixMultiplyAccumulate(pl, vr, o[n]);
        }
      }
      if (j0 + BC < kend) {
        workgroupBarrier(); // V read by every subgroup
        tile_st(pre, lid);
      }
      continue;
    }
    workgroupBarrier(); // p_ and V visible, s_ read
    var ot: array<Res, NQ>;
    for (var n = 0u; n < NQ; n++) {
      ot[n] = Res();
    }
    for (var kc = 0u; kc < NC; kc++) {
      let pl = subgroupMatrixLoad<Left, row_major>(&p_, sg * 16u * PLD + kc * 16u, PLD);
      for (var n = 0u; n < NQ; n++) {
        let vr = subgroupMatrixLoad<Right, row_major>(&kv_, kc * 16u * KLD + n * 2u, KLD);
        ot[n] = subgroupMatrixMultiplyAccumulate(pl, vr, ot[n]);
      }
    }
    for (var n0 = 0u; n0 < NQ; n0 += NC) {
      if (n0 > 0u) {
        workgroupBarrier(); // s_ read (the last chunk)
      }
      for (var n = 0u; n < NC; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, ot[n0 + n], SLD);
      }
      workgroupBarrier(); // the chunk visible (the first time: V read by every subgroup)
      if (n0 == 0u && j0 + BC < kend) {
        tile_st(pre, lid);
      }
      let a0 = (n0 / NC) * CPL;
      for (var i = 0u; i < CPL; i++) {
        oacc[a0 + i] = fma(oacc[a0 + i], corr, s_[r * SLD + cb + cs * ((i + rot) % CPL)]);
      }
    }
  }
  let lt = row_sum(l, lid);
  if (pu(9u) != 0u && lane % LPR == 0u && t < T) {
    lse[p.oa.y + (b * nh + h) * T + t] = m + log(lt);
  }
  let ob = select(1u, 2u, OUT16) * p.oa.x + (b * T + t) * QS + h * HD;
  let il = 1.0 / lt;
  for (var n0 = 0u; n0 < NQ; n0 += NC) {
    let a0 = (n0 / NC) * CPL;
    if (LAZY) { // o through s_ (the uniform branch: every invocation gets here)
      workgroupBarrier(); // s_ read (the last tile's S, or the last chunk)
      for (var n = 0u; n < NC; n++) {
        subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + n * 16u, o[n0 + n], SLD);
      }
      workgroupBarrier();
      for (var i = 0u; i < CPL; i++) {
        oacc[a0 + i] = s_[r * SLD + cb + cs * ((i + rot) % CPL)];
      }
    }
    if (t < T) {
      for (var i = 0u; i < CPL; i++) {
        let v = oacc[a0 + i] * il;
        outp[ob + n0 * 16u + cb + cs * ((i + rot) % CPL)] = OT(select(v, clamp(v, -65504.0, 65504.0), OUT16));
      }
    }
  }
}
