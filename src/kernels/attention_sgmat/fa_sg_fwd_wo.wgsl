// Flash attention forward on subgroup matrices, staged, one-pass with the lazy output rescale,
// with every subgroup matrix and prefetch register written out as its own variable: the
// computation, uniform block, bindings, barriers and results of fa_sg_fwd_st.wgsl's main1 with
// LAZY (read its header and main1's comment, and fa_sg_fwd.wgsl's header, first), without
// arrays indexed in loops. Chosen by the host (TEZGAH_WEBGPU_ATTN_SG_WO, the default) where main1
// with LAZY runs from the f16 copies, by default with 2 subgroups per workgroup (webgpu_ops_attn_sg.c
// sg_nsg_pref: 0.476 ms vs 0.885 at 4 on the H200, B16 T1024 head_dim 64).
// Source: our own.
//
// Why: as fa_sg_dkdv_wo.wgsl's header (NVIDIA's driver keeps arrays indexed by loop counters in
// local memory; fa_sg_fwd_st's main1 holds the output rows o, Q's left matrices ql, the S tile
// sacc and the prefetch registers in such arrays). The `//#for V in NAME` blocks are written
// out by the host's preprocessor (sgmat.c) NAME times, NAME from the prefix's `//defs` line.
// What differs from main1 besides that: the rare rescale of o goes through s_ one matrix at a
// time (three barriers per matrix, on the rare path only) rather than NC at a time; the element-
// wise loops over a row's CPL columns stay loops (they index no arrays).
// Host prefix: as fa_sg_fwd_st.wgsl's (HD, SGSIZE, NSG, OUT16, OT, KPAD, EWF, LTH; LAZY, F32IN
// and F32L are ignored: this file is the LAZY form on f16 operands), and QRS, KRS (u32: the row
// strides of q and of k, v in halves, multiples of 8); `//defs` line: NQ (HD / 16), NC (BC / 16 =
// NSG), NV (16-byte prefetch registers per thread and tile, BC · HD / 8 / NT), EWO and CPL
// (EWO 1, the default, TEZGAH_WEBGPU_ATTN_SG_EWO: the softmax's CPL entries a lane written out,
// each read from s_ once into a register for both passes, with constant indices; 0: the two
// loops, which NVIDIA's driver does not unroll, each reading s_ and recomputing the column;
// CPL = BC / LPR). The same operations in the same order either way, so the same results bit for
// bit; EWO ran the forward in 4.63 ms a llama step against the loops' 5.88 on an H100
// (2026-12-05). (K and V tiles double-buffered, session 28's KVDB form, took 14.6 ms there and
// is gone.)
// Operands (f16, x16 from its element offset p.oa.z, 16-byte aligned): q at half u5, k at u6, v
// at u7 (multiples of 8), row (b, t) of each at b·Tp + t times its stride: either the compact
// padded copies fa_sg_pack made ([B, Tp, nh·HD] and [B, Tp, nkv·HD], zero rows from T; QRS =
// nh·HD, KRS = nkv·HD), or (no-pack, webgpu_ops_attn_sg.c sg_nopack: f16 activations and Tp == T,
// so no zero rows are needed) the fused f16 qkv activation itself, x16 bound from q's first half,
// QRS = KRS = its row stride (3C for GPT-2): the same f16 values, so the same results bit for bit,
// without the copy pass ("attention_to_f16"). Rows read: q0 .. q0 + BR − 1 and keys below
// min(q0 + BR, T) rounded up to BC, all < Tp.
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
@group(0) @binding(4) var<storage, read> xin: array<vec4<f32>>; // bound (the staged layout), unread

alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
const BR = NSG * 16u;      // query rows per workgroup
const BC = NSG * 16u;      // keys per tile
const NT = NSG * SGSIZE;   // threads
const LPR = SGSIZE / 16u;  // lanes per row
const CPL = BC / LPR;      // columns per lane
const NC_ = BC / 16u;      // 16-column matrices across a tile (= the defs' NC)
const SLD = BC + 4u;       // s_ row stride (f32; 16-byte multiple)
const PLD = BC + 8u;       // p_ row stride (f16; 16-byte multiple)
const HV = HD / 8u;        // vec4<u32> (8 halves) across a head
const KLD = HV + KPAD;     // kv_ row stride (vec4<u32>)
const NEG: f32 = -3.0e38;
var<workgroup> s_: array<f32, BR * SLD>;
var<workgroup> p_: array<f16, BR * PLD>;
var<workgroup> kv_: array<vec4<u32>, BC * KLD>;
var<workgroup> rs_: u32; // some row's reference maximum moved this tile

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
  let lane = lid % SGSIZE; // (consecutive subgroups: the lane's subgroup_invocation_id)
  let r = sg * 16u + lane / LPR;  // this lane's row in the block
  let c0 = (lane % LPR) * CPL;    // and its first column in a tile
  // the lane's i-th column of a tile: cb + cs·((i + rot) mod CPL), as fa_sg_fwd_st's (EWF)
  let cb = select(c0, lane % LPR, EWF);
  let cs = select(1u, LPR, EWF);
  let rot = select(0u, (r / 8u) % 2u, EWF);
  let t = q0 + r;
  let QS = nh * HD; // the output's row stride
  let x0 = p.oa.z / 4u; // x16's first vec4 (16-byte aligned: host)
  // q's, k's and v's rows: the copies' (QRS = nh·HD, KRS = nkv·HD) or the fused qkv's (no-pack)
  let qh = x0 + (pu(5u) + b * Tp * QRS + h * HD) / 8u;
  let kh = x0 + (pu(6u) + b * Tp * KRS + g * HD) / 8u;
  let vh = x0 + (pu(7u) + b * Tp * KRS + g * HD) / 8u;
  let qs8 = QRS / 8u;
  let ks8 = KRS / 8u;
  // Q's block through kv_ into each subgroup's left matrices (rows q0 .. q0 + BR − 1 < Tp)
  for (var i = lid; i < BC * HV; i += NT) {
    kv_[(i / HV) * KLD + i % HV] = x16[qh + (q0 + i / HV) * qs8 + i % HV];
  }
  workgroupBarrier();
//#for kk in NQ
  let ql{kk} = subgroupMatrixLoad<Left, row_major>(&kv_, sg * 16u * KLD + {kk}u * 2u, KLD);
//#endfor
  // the prefetch registers: slot e of the thread holds entry lid + e·NT of a BC × HV tile
  // (row / HV, column % HV); first the K tile at key 0
//#for e in NV
  var pf{e} = x16[kh + ((lid + {e}u * NT) / HV) * ks8 + (lid + {e}u * NT) % HV];
//#endfor
  workgroupBarrier(); // Q's left matrices read
//#for e in NV
  kv_[((lid + {e}u * NT) / HV) * KLD + (lid + {e}u * NT) % HV] = pf{e};
//#endfor
  // the output rows, scaled by exp(mu − the true running max)
//#for n in NQ
  var o{n} = Res();
//#endfor
  var m = NEG;           // the row's reference maximum mu
  var l = 0.0;
  let kend = min(q0 + BR, T);
  for (var j0 = 0u; j0 < kend; j0 += BC) {
    workgroupBarrier(); // the K tile visible, s_ read
    if (lid == 0u) {
      rs_ = 0u; // last read by the previous tile's workgroupUniformLoad, before the barrier above
    }
    // the V tile's global loads
//#for e in NV
    pf{e} = x16[vh + (j0 + (lid + {e}u * NT) / HV) * ks8 + (lid + {e}u * NT) % HV];
//#endfor
    // S = Q·Kᵀ (this subgroup's 16 rows × the tile's BC keys)
//#for n in NC
    var sa{n} = Res();
//#endfor
//#for kk in NQ
//#for n in NC
    sa{n} = subgroupMatrixMultiplyAccumulate(ql{kk}, subgroupMatrixLoad<Right, col_major>(&kv_, {n}u * 16u * KLD + {kk}u * 2u, KLD), sa{n});
//#endfor
//#endfor
//#for n in NC
    subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + {n}u * 16u, sa{n}, SLD);
//#endfor
    workgroupBarrier(); // s_ visible, K read
//#for e in NV
    kv_[((lid + {e}u * NT) / HV) * KLD + (lid + {e}u * NT) % HV] = pf{e};
//#endfor
    if (j0 + BC < kend) { // the next K tile's global loads
//#for e in NV
      pf{e} = x16[kh + (j0 + BC + (lid + {e}u * NT) / HV) * ks8 + (lid + {e}u * NT) % HV];
//#endfor
    }
    var mt = NEG;
//#if EWO
    // (EWO: the lane's CPL entries written out, each read from s_ once and kept in a register)
//#for i in CPL
    let cc{i} = cb + cs * (({i}u + rot) % CPL);
    let sx{i} = select(s_[r * SLD + cc{i}] * sc, NEG, j0 + cc{i} > t || j0 + cc{i} >= T);
    mt = max(mt, sx{i});
//#endfor
//#else
    for (var i = 0u; i < CPL; i++) {
      let k = j0 + cb + cs * ((i + rot) % CPL);
      mt = max(mt, select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T));
    }
//#endif
    var mn = max(m, row_max(mt, lid));
    if (mn <= m + LTH) {
      mn = m; // keep the reference: P ≤ e^LTH
    }
    let corr = exp(m - mn);
    if (mn != m && j0 > 0u) {
      rs_ = 1u; // o holds rows to rescale (before the first tile it is zero: nothing to do)
    }
    var st = 0.0;
//#if EWO
//#for i in CPL
    let ex{i} = exp(sx{i} - mn);
    st += ex{i};
    p_[r * PLD + cc{i}] = f16(ex{i});
//#endfor
//#else
    for (var i = 0u; i < CPL; i++) {
      let k = j0 + cb + cs * ((i + rot) % CPL);
      let pv = exp(select(s_[r * SLD + cb + cs * ((i + rot) % CPL)] * sc, NEG, k > t || k >= T) - mn);
      st += pv;
      p_[r * PLD + cb + cs * ((i + rot) % CPL)] = f16(pv);
    }
//#endif
    l = l * corr + st;
    m = mn;
    // a barrier (p_ and V visible, s_ read), then rs_ read alike by every invocation
    if (workgroupUniformLoad(&rs_) != 0u) {
      // o ← diag(corr)·o through this subgroup's rows of s_ (columns 0..15), one matrix at a time
//#for n in NQ
      subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD, o{n}, SLD);
      workgroupBarrier();
      for (var c = lane % LPR; c < 16u; c += LPR) {
        s_[r * SLD + c] = s_[r * SLD + c] * corr;
      }
      workgroupBarrier();
      o{n} = subgroupMatrixLoad<Res, row_major>(&s_, sg * 16u * SLD, SLD);
      workgroupBarrier(); // s_ read before the next matrix (or the next tile's S)
//#endfor
    }
    // O += P·V
//#for kc in NC
    {
      let pl = subgroupMatrixLoad<Left, row_major>(&p_, sg * 16u * PLD + {kc}u * 16u, PLD);
//#for n in NQ
      o{n} = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&kv_, {kc}u * 16u * KLD + {n}u * 2u, KLD), o{n});
//#endfor
    }
//#endfor
    if (j0 + BC < kend) {
      workgroupBarrier(); // V read by every subgroup
//#for e in NV
      kv_[((lid + {e}u * NT) / HV) * KLD + (lid + {e}u * NT) % HV] = pf{e};
//#endfor
    }
  }
  let lt = row_sum(l, lid);
  if (pu(9u) != 0u && lane % LPR == 0u && t < T) {
    lse[p.oa.y + (b * nh + h) * T + t] = m + log(lt);
  }
  let ob = select(1u, 2u, OUT16) * p.oa.x + (b * T + t) * QS + h * HD;
  let il = 1.0 / lt;
  // o through s_, NC matrices (BC columns) at a time
//#for n in NQ
  if ({n}u % NC_ == 0u) {
    workgroupBarrier(); // s_ read (the last tile's S, or the last chunk)
  }
  subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + ({n}u % NC_) * 16u, o{n}, SLD);
  if ({n}u % NC_ == NC_ - 1u) {
    workgroupBarrier();
    if (t < T) {
      for (var i = 0u; i < CPL; i++) {
        let v = s_[r * SLD + cb + cs * ((i + rot) % CPL)] * il;
        outp[ob + ({n}u / NC_) * BC + cb + cs * ((i + rot) % CPL)] = OT(select(v, clamp(v, -65504.0, 65504.0), OUT16));
      }
    }
  }
//#endfor
}
