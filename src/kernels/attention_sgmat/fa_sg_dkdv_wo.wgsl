// Flash attention backward (dK, dV and the dq parts) on subgroup matrices, staged, with every
// subgroup matrix, prefetch register and element-wise value written out as its own variable:
// the computation, uniform block, bindings, dq-part layout, barriers and tile order of
// fa_sg_dkdv_st.wgsl (read its header, and fa_sg_dkdv.wgsl's, first) in its default
// configuration, without arrays indexed in loops. Chosen by the host with
// TEZGAH_WEBGPU_ATTN_SG_WO (webgpu_ops_attn_sg.c: the default since the H200 call of 2026-12-03 07:35).
// Source: our own.
//
// Why: fa_sg_dkdv_st keeps dK, dV (array<Res, NQ> each), the tile's Sᵀ / dPᵀ / dq products,
// V's left matrices, the prefetch registers and P's register copy in arrays indexed by loop
// counters. NVIDIA's Vulkan driver does not unroll Tint's loops (docs/PERF.md, 2026-11-29: the
// fp32 flash kernels with loop-indexed register arrays ran exactly as slow as without registers:
// local memory), and the subgroup-matrix matmul with 16 accumulators in arrays ran at ~35
// TFLOP/s where the written-out kernel (matmul_sgmm.wgsl) runs 270 (docs/PERF.md, branch sgmm).
// The staged dK/dV runs at ~40–56 TFLOP/s even with its element-wise passes, dq part and
// barriers ablated (1.14 ms of 1.65 per layer, 2026-12-03 04:09): the guess tested here is that
// its matrices live in local memory. The host's preprocessor (sgmat.c, tz_sgmat_preprocess)
// writes out each `//#for V in NAME` block NAME times with {V} replaced by 0, 1, ..., NAME
// taken from the `//defs` line of the host's prefix; `//#if NAME` / `//#else` / `//#endif` keep
// or drop lines by it.
//
// Fixed here (fa_sg_dkdv_st's switches at their H200 defaults at head_dim 64): operands from the
// f16 copies in x16 (no F32IN), V's left matrices in registers (no VST), the bank-conflict-free
// element-wise order (EWF) with folded scales (EWX), no ablations. So the results equal
// fa_sg_dkdv_st's with those switches, operation for operation — except dq with DQ16 (f16 parts,
// the host's default with f16 activations where the adapter has an f16-result configuration),
// whose parts are accumulated and stored in f16 (fa_sg_dkdv_st keeps fp32 parts).
// Host prefix: const HD, SGSIZE, NSG (2 or 4), KPAD (vec4 of padding per tile row), DB (bool:
// Q and dO tiles double-buffered, as fa_sg_dkdv_st's DB); `//defs` line: NQ (HD / 16), NR (2:
// BR / 16), NQS (the dq part's column matrices per subgroup, NQ / (NSG / NR)), NVQ (16-byte
// prefetch registers per thread and tile, BR · HD / 8 / (NSG · SGSIZE)), CPL (element-wise
// entries per thread, BR · 16 / SGSIZE), NSG, KREG (1: each subgroup's K left matrices loaded
// once into registers, TEZGAH_WEBGPU_ATTN_SG_KREG=1; 0: from kb_ per tile), DK8 (1: f16 dk, dv
// written as 16-byte chunks, rows_out8; the host's sg_dk8 says where; 0: rows_out), and QRS, KRS
// (u32: the row strides of q and of k, v in halves, multiples of 8), DQ16 (below). Requirements
// as fa_sg_dkdv_st.wgsl's (x16 16-byte aligned; Tp a multiple of BC).
// DQ16 (`//defs` DQ16=1: the host's sg_dq16, TEZGAH_WEBGPU_ATTN_DQ16; f16 activations, an
// adapter listing an f16 × f16 → f16 16×16×16 configuration, or the stand-in): the dq part
// dS·K accumulates in f16 result matrices (subgroup_matrix_result<f16>: the hardware's f16
// accumulator, rounded to f16 at least once per multiply-accumulate, NSG of them per part) and
// is stored as f16 to binding 6 (scrh: the same rows and layout as the fp32 parts, in halves
// from its element offset p.ob.y; the host binds it from the scratch's part area, 256-byte
// aligned, and binding 2 then holds D only; without DQ16 binding 6 is a dummy): half the bytes written here and read by
// fa_sg_dqsum (the PT = f16 prefix there), which still adds the parts in fp32. Why: the fp32
// parts were ~5 GB a step of GPT-2 124M at B16 T1024 (written here, read by the sum). Error: see
// webgpu_ops_attn_sg.c sg_dq16. DQ16=0: the fp32 parts as before, the same bits as before.
// Operands (f16; what differs from fa_sg_dkdv_st): q at half u5, k at u6, v at u7 of x16 (from
// its element offset p.oa.z), row (b, t) at b·Tp + t times QRS (q) or KRS (k, v); dO from xin
// (binding 5, from its element offset p.ob.x, 16-byte aligned) at half u8, row (b, t) at
// (b·Tp + t)·nh·HD. Either the compact padded copies in the staging buffer (fa_sg_pack's q, k, v
// with QRS = nh·HD, KRS = nkv·HD, zero rows from T; fa_sg_prep's dout16 bound as xin), or
// (no-pack, webgpu_ops_attn_sg.c sg_nopack: f16 activations and Tp == T, no zero rows needed)
// the fused f16 qkv activation itself (x16 from q's first half, QRS = KRS = its row stride) and
// the f16 dout (xin): the same f16 values (finite dO: the copy clamps ±inf to ±65504), so the
// same results bit for bit, without the copies.
enable f16;
enable chromium_experimental_subgroup_matrix;
// subgroups are consecutive ranges of local_invocation_index (the host requires one subgroup
// size), so lid / SGSIZE is subgroup-uniform, which the uniformity analysis cannot see
diagnostic(off, chromium.subgroup_matrix_uniformity);
// end of directives
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
//#if DK8
@group(0) @binding(1) var<storage, read_write> dkv: array<vec4<u32>>; // DK8: 8 halves (DKT f16, cvk)
//#else
@group(0) @binding(1) var<storage, read_write> dkv: array<DKT>; // DKT, cvk: the host's prefix
//#endif
@group(0) @binding(2) var<storage, read_write> scr: array<f32>;
@group(0) @binding(3) var<storage, read> x16: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read> xin: array<vec4<u32>>; // dO (f16, 8 halves a vec4)
// the dq parts, f16 (DQ16; declared and touched either way: the host counts the file's bindings
// before the `//defs` expansion, webgpu_pipe.c standalone, and binds a 16-byte dummy without it)
@group(0) @binding(6) var<storage, read_write> scrh: array<f16>;
//#if DQ16
alias ResH = subgroup_matrix_result<f16, 16, 16>;
//#endif

alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
const BC = NSG * 16u;      // keys per workgroup
const BR = 32u;            // queries per tile
const NT = NSG * SGSIZE;   // threads
const LPR = SGSIZE / 16u;  // lanes per key row (the dK / dV write-out)
const CPL_ = BR / LPR;     // columns per lane there (= the defs' CPL)
const NR_ = BR / 16u;      // 16-query matrices across a tile (= the defs' NR)
const NQS_ = HD / 16u / (NSG / NR_); // the dq part's column matrices per subgroup
const SLD = BR + 4u;       // s_ row stride (f32; columns BR, BR + 1: lse, D of the tile's queries)
const PLD = BR + 8u;       // pds_ row stride (f16)
const HV = HD / 8u;        // vec4<u32> (8 halves) across a head
const KLD = HV + KPAD;     // tile row stride (vec4<u32>)
const LOG2E: f32 = 1.4426950408889634;
var<workgroup> kb_: array<vec4<u32>, BC * KLD>;
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
//#if !DK8
// one key row's CPL_ columns of s_ (dK or dV, NR_ matrices wide) to dkv at o, where the key is < T
fn rows_out(o: u32, r: u32, c0: u32, ok: bool) {
  if (ok) {
    for (var i = 0u; i < CPL_; i++) {
      dkv[o + c0 + i] = cvk(s_[r * SLD + c0 + i]);
    }
  }
}
//#else
// DK8 (f16 dk, dv; the host's `//defs` DK8=1 where dk's and dv's offsets and the row stride ks are
// multiples of 8 halves): subgroup sg's 16 key rows × BR columns of s_ (dK or dV, NR_ matrices
// wide) to dkv as 16-byte chunks, 8 halves each. o: key row k0's first column in dkv (halves),
// rows ks halves apart; only keys < T. Chunk q of the subgroup is row q / (BR / 8), columns
// (q % (BR / 8))·8 ..: consecutive lanes write consecutive 16 bytes of a row (BR / 8 lanes cover
// its 64 bytes, whole 32-byte sectors per store), 2 stores per lane at SGSIZE 32 where rows_out
// makes CPL_ (16) 2-byte stores, each lane in a different row. Every value is cvk's, as
// rows_out's, so the bytes are the same.
fn pk2(a: f32, b: f32) -> u32 {
  return bitcast<u32>(vec2<f16>(cvk(a), cvk(b)));
}
fn rows_out8(o: u32, sg: u32, lane: u32, k0: u32, T: u32, ks: u32) {
  for (var q = lane; q < 16u * (BR / 8u); q += SGSIZE) {
    let rr = sg * 16u + q / (BR / 8u);
    let cc = (q % (BR / 8u)) * 8u;
    if (k0 + rr < T) {
      let s = rr * SLD + cc;
      dkv[(o + rr * ks + cc) / 8u] = vec4<u32>(pk2(s_[s], s_[s + 1u]), pk2(s_[s + 2u], s_[s + 3u]),
                                               pk2(s_[s + 4u], s_[s + 5u]), pk2(s_[s + 6u], s_[s + 7u]));
    }
  }
}
//#endif

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &dkv; _ = &scr; _ = &x16; _ = &lse; _ = &xin; _ = &scrh;
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
  let r = sg * 16u + lane / LPR;  // this lane's key row in the block (write-out)
  let c0 = (lane % LPR) * CPL_;   // and its first column there
  let j = k0 + r;
  let QS = nh * HD;      // dO's row stride (dout16's, and dout's: [B·T, nh·HD])
  let x0 = p.oa.z / 4u; // x16's first vec4 (the host keeps it 16-byte aligned)
  let ks = KRS / 8u;    // k's / v's row stride in vec4 (the copy's nkv·HD, or the fused qkv's)
  let kh = x0 + (pu(6u) + b * Tp * KRS + g * HD) / 8u;
  let vh = x0 + (pu(7u) + b * Tp * KRS + g * HD) / 8u;
  // V's block through kb_ into each subgroup's left matrices, then K's block into kb_ for good
  // (rows k0 .. k0 + BC − 1 < Tp: the copies' rows from T are zero)
  for (var i = lid; i < BC * HV; i += NT) {
    kb_[(i / HV) * KLD + i % HV] = x16[vh + (k0 + i / HV) * ks + i % HV];
  }
  workgroupBarrier();
//#for kk in NQ
  let vl{kk} = subgroupMatrixLoad<Left, row_major>(&kb_, sg * 16u * KLD + {kk}u * 2u, KLD);
//#endfor
  workgroupBarrier();
  for (var i = lid; i < BC * HV; i += NT) {
    kb_[(i / HV) * KLD + i % HV] = x16[kh + (k0 + i / HV) * ks + i % HV];
  }
//#if KREG
  workgroupBarrier();
//#for kk in NQ
  let kl{kk} = subgroupMatrixLoad<Left, row_major>(&kb_, sg * 16u * KLD + {kk}u * 2u, KLD);
//#endfor
//#endif
//#for n in NQ
  var dk{n} = Res();
  var dv{n} = Res();
//#endfor
  // tiles per query head: queries k0 .. T−1 (none where k0 ≥ T)
  let ntl = select(0u, (T - k0 + BR - 1u) / BR, k0 < T);
  let nit = rep * ntl;
  let qs8 = QRS / 8u;
  let os8 = QS / 8u;
  let qh = x0 + (pu(5u) + b * Tp * QRS) / 8u; // q, sequence b (then + row · qs8 + head · HD / 8)
  let oh = p.ob.x / 4u + (pu(8u) + b * Tp * QS) / 8u; // dO's, in xin (then + row · os8 + ...)
  // the prefetch registers: slot e of the thread holds entry lid + e·NT of a BR × HV tile
  // (row / HV, column % HV: consecutive threads, consecutive 16 bytes)
//#for e in NVQ
  var qp{e} = vec4<u32>();
  var op{e} = vec4<u32>();
//#endfor
  if (nit > 0u) {
    let c = g * rep * HD / 8u;
//#for e in NVQ
    qp{e} = x16[qh + (k0 + (lid + {e}u * NT) / HV) * qs8 + c + (lid + {e}u * NT) % HV];
    op{e} = xin[oh + (k0 + (lid + {e}u * NT) / HV) * os8 + c + (lid + {e}u * NT) % HV];
//#endfor
  }
  let qi = sg % NR_;            // this subgroup's 16-query block of the dq part
  let qn0 = (sg / NR_) * NQS_;  // and its first column matrix
  // the element-wise passes' entries of this thread (fa_sg_dkdv_st's EWF order): entry
  // lid + i·NT of the BC × BR tile, row er0 + ers·i, column ec (one query per thread)
  let er0 = lid / BR;
  let ers = NT / BR;
  let ec = lid % BR;
  let sl = sc * LOG2E;
  for (var it = 0u; it < nit; it++) {
    let h = g * rep + it / ntl;
    let t0 = k0 + (it % ntl) * BR;
    let lrow = (b * nh + h) * T;
    let tb = select(0u, BR * KLD, DB && it % 2u == 1u); // this tile's half of qt_, dt_ (DB)
//#if DQ16
    let pb = p.ob.y + ((bl * nh + h) * pu(12u) + part_row(kblk, Tp)) * HD; // query k0's part row (scrh, halves)
//#else
    let pb = p.oa.y + pu(11u) + ((bl * nh + h) * pu(12u) + part_row(kblk, Tp)) * HD; // query k0's part row
//#endif
    // the tile's Q, dO (prefetched), lse and D into workgroup memory
//#for e in NVQ
    qt_[tb + ((lid + {e}u * NT) / HV) * KLD + (lid + {e}u * NT) % HV] = qp{e};
    dt_[tb + ((lid + {e}u * NT) / HV) * KLD + (lid + {e}u * NT) % HV] = op{e};
//#endfor
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
      let c = hn * HD / 8u;
//#for e in NVQ
      qp{e} = x16[qh + (tn + (lid + {e}u * NT) / HV) * qs8 + c + (lid + {e}u * NT) % HV];
      op{e} = xin[oh + (tn + (lid + {e}u * NT) / HV) * os8 + c + (lid + {e}u * NT) % HV];
//#endfor
    }
    // Sᵀ = K·Qᵀ (this subgroup's 16 keys × the tile's BR queries)
//#for n in NR
    var sa{n} = Res();
//#endfor
//#for kk in NQ
    {
//#if KREG
      let kf = kl{kk};
//#else
      let kf = subgroupMatrixLoad<Left, row_major>(&kb_, sg * 16u * KLD + {kk}u * 2u, KLD);
//#endif
//#for n in NR
      sa{n} = subgroupMatrixMultiplyAccumulate(kf, subgroupMatrixLoad<Right, col_major>(&qt_, tb + {n}u * 16u * KLD + {kk}u * 2u, KLD), sa{n});
//#endfor
    }
//#endfor
//#for n in NR
    subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + {n}u * 16u, sa{n}, SLD);
//#endfor
    workgroupBarrier(); // (2) Sᵀ visible
    // Pᵀ = exp(Sᵀ·scale − lse) as exp2 of one fma, masked (causal, queries ≥ T): f16 into pds_,
    // and its rounded value times the scale kept for dS
    let tq = t0 + ec;
    let lq = s_[ec * SLD + BR] * LOG2E;
    let dd = s_[ec * SLD + BR + 1u];
//#for i in CPL
    let px{i} = select(exp2(fma(s_[(er0 + ers * {i}u) * SLD + ec], sl, -lq)), 0.0, tq < k0 + er0 + ers * {i}u || tq >= T);
    pds_[(er0 + ers * {i}u) * PLD + ec] = f16(px{i});
    let pv{i} = f32(f16(px{i})) * sc;
//#endfor
    workgroupBarrier(); // (3) Pᵀ visible, Sᵀ read
    // dPᵀ = V·dOᵀ into s_
//#for n in NR
    var dp{n} = Res();
//#endfor
//#for kk in NQ
//#for n in NR
    dp{n} = subgroupMatrixMultiplyAccumulate(vl{kk}, subgroupMatrixLoad<Right, col_major>(&dt_, tb + {n}u * 16u * KLD + {kk}u * 2u, KLD), dp{n});
//#endfor
//#endfor
//#for n in NR
    subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + {n}u * 16u, dp{n}, SLD);
//#endfor
    // dV += Pᵀ·dO
//#for kc in NR
    {
      let pl = subgroupMatrixLoad<Left, row_major>(&pds_, sg * 16u * PLD + {kc}u * 16u, PLD);
//#for n in NQ
      dv{n} = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&dt_, tb + {kc}u * 16u * KLD + {n}u * 2u, KLD), dv{n});
//#endfor
    }
//#endfor
    workgroupBarrier(); // (4) dPᵀ visible, Pᵀ read
    // dSᵀ = Pᵀ ∘ (dPᵀ − D)·scale over Pᵀ in pds_ (pv holds P·scale)
//#for i in CPL
    pds_[(er0 + ers * {i}u) * PLD + ec] = f16(pv{i} * (s_[(er0 + ers * {i}u) * SLD + ec] - dd));
//#endfor
    workgroupBarrier(); // (5) dSᵀ visible
    // dK += dSᵀ·Q
//#for kc in NR
    {
      let dl = subgroupMatrixLoad<Left, row_major>(&pds_, sg * 16u * PLD + {kc}u * 16u, PLD);
//#for n in NQ
      dk{n} = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&qt_, tb + {kc}u * 16u * KLD + {n}u * 2u, KLD), dk{n});
//#endfor
    }
//#endfor
    // the dq part dS·K of query block qi, columns qn0 .. qn0 + NQS (DQ16: f16 accumulators and
    // f16 parts; "// f16 acc" marks the f16-result products for the stand-in, wg_attn_sg_emulate)
//#for n in NQS
//#if DQ16
    var dq{n} = ResH();
//#else
    var dq{n} = Res();
//#endif
//#endfor
//#for kc in NSG
    {
      let al = subgroupMatrixLoad<Left, col_major>(&pds_, {kc}u * 16u * PLD + qi * 16u, PLD);
//#for n in NQS
//#if DQ16
      dq{n} = subgroupMatrixMultiplyAccumulate(al, subgroupMatrixLoad<Right, row_major>(&kb_, {kc}u * 16u * KLD + (qn0 + {n}u) * 2u, KLD), dq{n}); // f16 acc
//#else
      dq{n} = subgroupMatrixMultiplyAccumulate(al, subgroupMatrixLoad<Right, row_major>(&kb_, {kc}u * 16u * KLD + (qn0 + {n}u) * 2u, KLD), dq{n});
//#endif
//#endfor
    }
//#endfor
//#for n in NQS
//#if DQ16
    subgroupMatrixStore<row_major>(&scrh, pb + (t0 - k0 + qi * 16u) * HD + (qn0 + {n}u) * 16u, dq{n}, HD);
//#else
    subgroupMatrixStore<row_major>(&scr, pb + (t0 - k0 + qi * 16u) * HD + (qn0 + {n}u) * 16u, dq{n}, HD);
//#endif
//#endfor
    if (!DB) {
      workgroupBarrier(); // (6) qt_, dt_, pds_, s_ read before the next tile's writes
    }
    // (with DB: fa_sg_dkdv_st.wgsl's argument why (6) is not needed)
  }
  // dK, dV through s_, NR matrices (BR columns) at a time, rows j < T (DK8: 16-byte chunks)
  let ko = p.oa.x + (b * T + j) * pu(15u) + g * HD;
  let jok = j < T;
  let ko8 = p.oa.x + (b * T + k0) * pu(15u) + g * HD; // (DK8: key row k0's)
//#for n in NQ
  if ({n}u % NR_ == 0u) {
    workgroupBarrier();
  }
  subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + ({n}u % NR_) * 16u, dk{n}, SLD);
  if ({n}u % NR_ == NR_ - 1u) {
    workgroupBarrier();
//#if DK8
    rows_out8(ko8 + ({n}u / NR_) * BR, sg, lane, k0, T, pu(15u));
//#else
    rows_out(ko + ({n}u / NR_) * BR, r, c0, jok);
//#endif
  }
//#endfor
//#for n in NQ
  if ({n}u % NR_ == 0u) {
    workgroupBarrier();
  }
  subgroupMatrixStore<row_major>(&s_, sg * 16u * SLD + ({n}u % NR_) * 16u, dv{n}, SLD);
  if ({n}u % NR_ == NR_ - 1u) {
    workgroupBarrier();
//#if DK8
    rows_out8(ko8 + pu(14u) + ({n}u / NR_) * BR, sg, lane, k0, T, pu(15u));
//#else
    rows_out(ko + pu(14u) + ({n}u / NR_) * BR, r, c0, jok);
//#endif
  }
//#endfor
}
