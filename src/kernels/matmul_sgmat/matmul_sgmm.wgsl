// C = op(A) · op(B) (+ bias) (+ C) on subgroup matrices, written out per result matrix: the
// second form of matmul_sgmat.wgsl (same operands, forms, uniform block and bindings; read its
// header first), made to be swept on the H200 (bench_webgpu_sgmat). Source: our own; the WGSL
// builtins are Dawn's (chromium_experimental_subgroup_matrix; f16 operands, f32 accumulation).
//
// What differs from matmul_sgmat.wgsl, and why:
//  - no arrays of subgroup matrices and no loops over them: the host's preprocessor writes out
//    `//#for i in TM` blocks, so every accumulator is its own variable ({i} is replaced by the
//    index). Arrays indexed in loops leave it to the driver to unroll them; tiles with 16
//    accumulators per subgroup ran at ~35 TFLOP/s there (a guess: spilled), docs/PERF.md.
//  - global loads of 8 halves (vec4<u32>); operands 16-byte aligned, contiguous dimensions
//    multiples of 8 (the host checks).
//  - TV8: workgroup tiles of vec4<u32> (one 16-byte store per load; subgroupMatrixLoad reads a
//    vector array since Dawn 2026-08, offsets and strides then count vec4<u32>, 8 halves);
//    else tiles of f16, stored one half at a time as in matmul_sgmat.wgsl.
//  - TRB (B_NK only, not with TV8): B transposed into a [BK][BN] tile as matmul_sgmat.wgsl does;
//    else B_NK stays [BN][BK] and its right-hand matrices are loaded column-major.
//  - NBUF2: two workgroup buffers, the next k tile loaded into registers before the products
//    and stored into the other buffer after them: one barrier per k step. Else one buffer with
//    (PF) or without register prefetch, two barriers per k step.
//  - HAS_BIAS: the bias enters the accumulators through a [16][SG_N·16] f32 tile, one result
//    column of matrices at a time (TN rounds), instead of a [16][BN] tile.
//  - SPLIT: workgroup z of the grid sums k in [z·KS, min(K, (z+1)·KS)) and writes its partial
//    product at c[off + z·M·N] (no ACC, no bias): the weight gradient's split over K, summed
//    by the host after.
//  - SWZ: workgroups walk the output in groups of 8 tile rows (L2 reuse of the operands).
//  - PERS (with PF, one buffer, no SPLIT): a persistent grid of num_workgroups.x workgroups
//    (fewer than the tiles, x only) each walking tiles wg.x, wg.x + nwg, ... in the SWZ (or
//    row-major) tile order; at a tile's last k step the register prefetch loads the NEXT tile's
//    first k tile, so that load overlaps the last products and the result stores instead of
//    starting the next workgroup cold (why: at K = 768, 12 k steps per tile, the model's
//    shapes ran ~180 TFLOP/s against 270 at 8192³: a guess that the per-tile prologue and
//    epilogue are not hidden with one resident workgroup per SM; docs/PERF.md).
//  - A32: operand a is f32 (4-byte elements; its offset p.off.y then counts f32 elements, a
//    multiple of 4), two vec4 loads per 8 halves kept raw in registers (AReg) and rounded to f16
//    (pack2x16float) only when stored into workgroup memory, so the prefetch's latency stays
//    hidden: the gradients dY, fp32 from their producer, without a conversion pass writing an
//    f16 copy first (webgpu_ops_matmul.c, sg_matmul; 1.1 ms / step on the H200 in GPT-2 124M,
//    the attention backward's dqkv).
//  - A16W (with A32, PF and one buffer): the workgroups of tile column 0 (n0 == 0, which
//    together stage every element of a exactly once) also write the halves they stage to a16w,
//    an f16 copy of a (binding 5, declared by the host's prefix: the backend counts a standalone
//    module's bindings in its text) at element offset p.off_hi.x (4-byte units, a multiple of
//    4): the copy the
//    conversion pass used to make, for the calls after this one that read the same operand
//    (dX = dY·W writes it; dW += dYᵀ·X and the bias gradient then read f16).
//  - O16 (no SPLIT): the output c is f16 (an activation with f16 activations, c->act_f16:
//    matmul_t's Y and matmul's dX), stored without an fp32 intermediate tensor: the result
//    matrices cannot be stored into an f16 array (their component type is f32), so each subgroup
//    stores one accumulator at a time into its own 16x16 f32 block of the workgroup tile wst,
//    and its invocations then write that block to c as 16-byte chunks of 8 halves (c is
//    array<vec4<u32>> and p.off.x counts 4-byte words, a multiple of 4: the host binds c 16-byte
//    aligned; N % 8 == 0 as N % BN == 0). ACC then reads the 8 old halves, adds in f32 and stores
//    (no subgroupMatrixLoad of c). The f16 conversion gives +-inf beyond +-65504 (not saturated:
//    an overflowing activation gradient must reach the loss scaler's finiteness check), NaN
//    stays NaN (f16s). Why not a result matrix of f16: the adapter's configuration is f16 x f16
//    -> f32 (sgmat_choose), and f32 accumulation is the precision contract.
//  - RES (with O16, no A16W; the backend's matmul_t_res): the residual connection in the epilogue,
//    c = a·bᵀ + bias + res with res an f16 [M, N] tensor (binding 5, array<vec4<u32>>, element
//    offset p.off_hi.x in 4-byte units, a multiple of 4: the host binds it 16-byte aligned): its 8
//    halves added in f32 to each chunk before the one rounding to f16. Why: the separate add read
//    c and res again and wrote c (3 passes over [M, N] f16, 24 dispatches a GPT-2 124M step).
//    The tile's residual chunks are loaded before the epilogue's first barrier (EPIN: res_pre;
//    with EPRE in the last k step), one memory latency a tile: loaded per block they cost ~0.38
//    ms a GPT-2 step on the H200.
//  - GELU (O16, no A16W; matmul_t_gelu): c = h = a·bᵀ + bias as usual, and gelu(h) of the same f32
//    values (common/gelu_math.wgsl's gelu_f, before h's rounding) into the f16 tensor ga at
//    binding 5 (layout as RES's res). Why: gelu_fwd read h back and wrote gelu(h) (GPT-2's fc).
//  - DGELU (O16, no A16W; matmul_dgelu, form dY·W): c = dh = gelu'(h) ⊙ (a·b) with h the f16
//    pre-activation at binding 5 (read as RES's res, loaded ahead: EPIN, EPRE; gelu_g), the product
//    not rounded before the multiply. Why: the product da was written, and gelu_bwd read da and h
//    and wrote dh (GPT-2's fcproj input gradient).
//  - DSWIGLU (O16, no A16W; matmul_dswiglu, form dY·W): the product da [M, N] is not stored; each
//    chunk's gate and up halves are read from gu [M, 2N] at binding 5 (read as RES's res, gate
//    at columns n, up at N + n of a row of 2N) and SwiGLU's backward (common/swiglu_math.wgsl's
//    swiglu_dgu) written into c = dgu [M, 2N] at the same places; the tile's gate and up chunks
//    are loaded before the epilogue (dsw_pre, as EPIN's: loaded per block the epilogue cost as
//    much as swiglu_bwd saved, H200 2026-12-04). Why: da was written, and swiglu_bwd read da
//    and gu and wrote dgu (llama's down projection's input gradient).
//  - DB (form DYTX, f16 a, PF, one buffer, TV8; the backend's matmul_at_db): the workgroups of
//    tile column 0 (n0 == 0: together they stage every element of a once per split, as A16W's)
//    also add the 8 halves of each A load slot they stage into two f32 vec4 of per-thread sums
//    (a thread's slots all lie in one 8-column chunk of a's [BK][BM] tile: NT is a multiple of
//    its chunks per row), then join the threads of each chunk through the A tile's workgroup
//    memory (free after the k loop) and write Σ_k a[k, m] over the split's k for the tile's BM
//    columns m right after c's [M, N] (+= with ACC): db, which the host binds with dW (the flat
//    gradient buffer keeps a layer's bias right after its weight), or with SPLIT after each
//    split's partial product, whose stride is then M·N + M (the host's one sum adds both): the
//    bias gradient of dW += dYᵀ·X, Σ over dY's rows, from the f16 dY the matmul reads anyway. Why: bias_bwd read dY again (GPT-2 124M: 1.2 ms a step on
//    the H200, 48 dispatches, and 48 more to add its partials).
//  - EPRE (EPIN or DSWIGLU, with PF and one buffer; the host's default for DGELU only, sgmat.c
//    says why not RES and DSWIGLU; TEZGAH_WEBGPU_SGMAT_EPRE=0 none, =all every one): the
//    epilogue's chunks of binding 5 (res_pre / dsw_pre) are loaded in the tile's last k step,
//    after its barrier and before its products, instead of after the k loop, so that the
//    products hide their memory latency (loaded after the loop, each tile's epilogue waited one
//    latency: DGELU's matmul ran 0.84 ms a GPT-2 step slower than the same shape without it,
//    H200 2026-12-04; 0.23 ms less with EPRE). The chunks are then live during the last
//    products beside the next tile's prefetch (more registers at that point: RES and DSWIGLU
//    lost time with it). Same values, same results.
//  - EMU: the subgroup-matrix builtins replaced by per-invocation emulations (every invocation
//    holds whole 16×16 matrices in f32), so that the kernel's indexing is testable on adapters
//    without subgroup matrices (lavapipe); the host rewrites the builtin calls to emu_* ones.
// Host constants (prepended): BM, BN, BK, SG_M, SG_N, TM, TN, SGSIZE, NBUF; preprocessor
// values (the host's `//defs` line): TM, TN, A_PER, B_PER, A_MK, B_NK, ACC, HAS_BIAS, TV8,
// TRB, NBUF2, PF, SPLIT, SWZ, PERS, A32, A16W, O16, WST (HAS_BIAS or O16: wst declared), EMU, RES,
// GELU, DGELU, DSWIGLU, EPIN (RES or DGELU: binding 5 read ahead), DB, EPRE.
// Requirements (the host's): M % BM, N % BN, K % BK (and KS % BK) == 0; the tile loads divide
// evenly over the threads (A_PER, B_PER whole); workgroup memory within the device's limit.
enable f16;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
// end of directives

struct Params { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, M: u32, N: u32, K: u32, KS: u32 }
@group(0) @binding(0) var<uniform> p: Params;
//#if O16
@group(0) @binding(1) var<storage, read_write> c: array<vec4<u32>>;
//#else
@group(0) @binding(1) var<storage, read_write> c: array<f32>;
//#endif
@group(0) @binding(2) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

const NT = SG_M * SG_N * SGSIZE;          // threads per workgroup
const PAD = 8u;                           // halves after each tile row (bank spread)
const A_ROWS = select(BK, BM, A_MK);      // A's tile as in memory: A_MK [BM][BK], A_KM [BK][BM]
const A_COLS = select(BM, BK, A_MK);
const B_ROWS = select(BK, BN, B_NK);      // B's tile as in memory: B_NK [BN][BK], B_KN [BK][BN]
const B_COLS = select(BN, BK, B_NK);
const A_CH = A_COLS / 8u;                 // 8-half chunks per row
const B_CH = B_COLS / 8u;
const A_LD = A_COLS + PAD;
//#if TRB
const B_LD = BN + PAD;                    // [BK][BN]
const B_SZ = BK * B_LD;
//#else
const B_LD = B_COLS + PAD;
const B_SZ = B_ROWS * B_LD;
//#endif
const A_SZ = A_ROWS * A_LD;               // halves per buffer
//#if TV8
const U = 8u;                             // halves per workgroup tile element
var<workgroup> as_: array<vec4<u32>, NBUF * A_SZ / 8u>;
var<workgroup> bs_: array<vec4<u32>, NBUF * B_SZ / 8u>;
//#else
const U = 1u;
var<workgroup> as_: array<f16, NBUF * A_SZ>;
var<workgroup> bs_: array<f16, NBUF * B_SZ>;
//#endif
const BIAS_LD = SG_N * 16u;
//#if WST
// the workgroup's f32 tile: with HAS_BIAS the bias in 16 identical rows (one 16-column block per
// subgroup column), read in the prologue only; with O16 also the output staging of the
// epilogue, one 16x16 block per subgroup (the same memory: the two uses never overlap in time)
//#if O16
const WST_N = max(16u * BIAS_LD, SG_M * SG_N * 256u);
//#else
const WST_N = 16u * BIAS_LD;
//#endif
var<workgroup> wst: array<f32, WST_N>;
//#endif

//#if EMU
struct Mat { v: array<f32, 256> }          // [row][col], row-major
alias Left = Mat;
alias Right = Mat;
alias Res = Mat;
fn as_h(h: u32) -> f32 {
//#if TV8
  return unpack2x16float(as_[h / 8u][(h / 2u) % 4u])[h % 2u];
//#else
  return f32(as_[h]);
//#endif
}
fn bs_h(h: u32) -> f32 {
//#if TV8
  return unpack2x16float(bs_[h / 8u][(h / 2u) % 4u])[h % 2u];
//#else
  return f32(bs_[h]);
//#endif
}
// element (r, q) of a matrix at `off` with stride `ld` (both in tile elements of U halves)
fn emu_ld_as__row_major(off: u32, ld: u32) -> Mat {
  var m: Mat;
  for (var i = 0u; i < 256u; i++) { m.v[i] = as_h((off + (i / 16u) * ld) * U + i % 16u); }
  return m;
}
fn emu_ld_as__col_major(off: u32, ld: u32) -> Mat {
  var m: Mat;
  for (var i = 0u; i < 256u; i++) { m.v[i] = as_h((off + (i % 16u) * ld) * U + i / 16u); }
  return m;
}
fn emu_ld_bs__row_major(off: u32, ld: u32) -> Mat {
  var m: Mat;
  for (var i = 0u; i < 256u; i++) { m.v[i] = bs_h((off + (i / 16u) * ld) * U + i % 16u); }
  return m;
}
fn emu_ld_bs__col_major(off: u32, ld: u32) -> Mat {
  var m: Mat;
  for (var i = 0u; i < 256u; i++) { m.v[i] = bs_h((off + (i % 16u) * ld) * U + i / 16u); }
  return m;
}
//#if !O16
fn emu_ld_c_row_major(off: u32, ld: u32) -> Mat {
  var m: Mat;
  for (var i = 0u; i < 256u; i++) { m.v[i] = c[off + (i / 16u) * ld + i % 16u]; }
  return m;
}
fn emu_st_c_row_major(off: u32, m: Mat, ld: u32) {
  for (var i = 0u; i < 256u; i++) { c[off + (i / 16u) * ld + i % 16u] = m.v[i]; }
}
//#endif
//#if WST
fn emu_ld_wst_row_major(off: u32, ld: u32) -> Mat {
  var m: Mat;
  for (var i = 0u; i < 256u; i++) { m.v[i] = wst[off + (i / 16u) * ld + i % 16u]; }
  return m;
}
fn emu_st_wst_row_major(off: u32, m: Mat, ld: u32) {
  for (var i = 0u; i < 256u; i++) { wst[off + (i / 16u) * ld + i % 16u] = m.v[i]; }
}
//#endif
fn emu_mma(l: Mat, r: Mat, acc: Mat) -> Mat {
  var o = acc;
  for (var i = 0u; i < 16u; i++) {
    for (var j = 0u; j < 16u; j++) {
      var s = 0.0;
      for (var k = 0u; k < 16u; k++) { s += l.v[i * 16u + k] * r.v[k * 16u + j]; }
      o.v[i * 16u + j] += s;
    }
  }
  return o;
}
//#else
alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
//#endif

// Index (in vec4<u32>) of the 8 halves that load slot i moves from A's / B's global tile at
// (m0 or n0, k0), and where they go in the workgroup tile (in halves, buffer 0).
fn a_src(i: u32, m0: u32, k0: u32) -> u32 {
  let r = i / A_CH;
  let q = (i % A_CH) * 8u;
//#if A_MK
  let e = (m0 + r) * p.K + k0 + q; // element index in a
//#else
  let e = (k0 + r) * p.M + m0 + q;
//#endif
//#if A32
  return p.off.y / 4u + e / 4u; // the first of two vec4<f32>
//#else
  return p.off.y / 4u + e / 8u;
//#endif
}
// The 8 elements of load slot i as held in registers (ld_a), and as the 8 halves stored into
// the workgroup tile (cv_a): A32 keeps the f32 values until the store.
//#if A32
struct AReg { lo: vec4<u32>, hi: vec4<u32> }
fn ld_a(s: u32) -> AReg { return AReg(a[s], a[s + 1u]); }
fn cv_a(r: AReg) -> vec4<u32> {
  let x = bitcast<vec4<f32>>(r.lo);
  let y = bitcast<vec4<f32>>(r.hi);
  return vec4<u32>(pack2x16float(x.xy), pack2x16float(x.zw), pack2x16float(y.xy), pack2x16float(y.zw));
}
//#else
alias AReg = vec4<u32>;
fn ld_a(s: u32) -> AReg { return a[s]; }
fn cv_a(r: AReg) -> vec4<u32> { return r; }
//#endif
//#if A16W
// the 8 halves v of load slot i at (m0, k0) into a's f16 copy (tile column 0 only)
fn w16_a(i: u32, m0: u32, k0: u32, n0: u32, v: vec4<u32>) {
  if (n0 == 0u) { a16w[p.off_hi.x / 4u + (a_src(i, m0, k0) - p.off.y / 4u) / 2u] = v; }
}
//#endif
//#if DB
// the 8 halves of a load slot as f32, columns 0..3 and 4..7 of its chunk
fn db8(v: vec4<u32>) -> array<vec4<f32>, 2> {
  return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)),
                             vec4<f32>(unpack2x16float(v.z), unpack2x16float(v.w)));
}
//#endif
fn a_dst(i: u32) -> u32 { return (i / A_CH) * A_LD + (i % A_CH) * 8u; }
//#if TRB
// B_NK transposed: 8 consecutive slots take 8 rows (n) at one k chunk, the next 8 the next
// chunk (a subgroup reads 8 rows x 32 bytes; its transposed stores spread over the banks)
fn b_rq(i: u32) -> vec2<u32> {
  return vec2<u32>((i / (8u * (BK / 8u))) * 8u + i % 8u, ((i / 8u) % (BK / 8u)) * 8u);
}
//#else
fn b_rq(i: u32) -> vec2<u32> { return vec2<u32>(i / B_CH, (i % B_CH) * 8u); }
//#endif
fn b_src(i: u32, n0: u32, k0: u32) -> u32 {
  let rq = b_rq(i);
//#if B_NK
  return p.off.z / 4u + ((n0 + rq.x) * p.K + k0 + rq.y) / 8u;
//#else
  return p.off.z / 4u + ((k0 + rq.x) * p.N + n0 + rq.y) / 8u;
//#endif
}
fn st_a(i: u32, buf: u32, v: vec4<u32>) {
  let o = buf * A_SZ + a_dst(i);
//#if TV8
  as_[o / 8u] = v;
//#else
  let h0 = bitcast<vec2<f16>>(v.x);
  let h1 = bitcast<vec2<f16>>(v.y);
  let h2 = bitcast<vec2<f16>>(v.z);
  let h3 = bitcast<vec2<f16>>(v.w);
  as_[o] = h0.x; as_[o + 1u] = h0.y; as_[o + 2u] = h1.x; as_[o + 3u] = h1.y;
  as_[o + 4u] = h2.x; as_[o + 5u] = h2.y; as_[o + 6u] = h3.x; as_[o + 7u] = h3.y;
//#endif
}
fn st_b(i: u32, buf: u32, v: vec4<u32>) {
  let rq = b_rq(i);
//#if TV8
  bs_[(buf * B_SZ + rq.x * B_LD + rq.y) / 8u] = v;
//#else
  let h0 = bitcast<vec2<f16>>(v.x);
  let h1 = bitcast<vec2<f16>>(v.y);
  let h2 = bitcast<vec2<f16>>(v.z);
  let h3 = bitcast<vec2<f16>>(v.w);
//#if TRB
  let o = buf * B_SZ + rq.y * B_LD + rq.x; // r is n, q..q+7 are k: transpose
  bs_[o] = h0.x; bs_[o + B_LD] = h0.y; bs_[o + 2u * B_LD] = h1.x; bs_[o + 3u * B_LD] = h1.y;
  bs_[o + 4u * B_LD] = h2.x; bs_[o + 5u * B_LD] = h2.y; bs_[o + 6u * B_LD] = h3.x; bs_[o + 7u * B_LD] = h3.y;
//#else
  let o = buf * B_SZ + rq.x * B_LD + rq.y;
  bs_[o] = h0.x; bs_[o + 1u] = h0.y; bs_[o + 2u] = h1.x; bs_[o + 3u] = h1.y;
  bs_[o + 4u] = h2.x; bs_[o + 5u] = h2.y; bs_[o + 6u] = h3.x; bs_[o + 7u] = h3.y;
//#endif
//#endif
}

//#if O16
// f16s: f32 -> f16 with ±inf beyond ±65504 and NaN kept (common/f16s.wgsl, which the backend
// appends to the module)
fn pk16(v: vec2<f32>) -> u32 { return bitcast<u32>(vec2<f16>(f16s(v.x), f16s(v.y))); }
// chunk q (row q / 2, columns (q % 2)·8 ..) of the 16x16 block at element e0 of an [M, N] f16
// tensor, as an index of 8-half chunks from the tensor's start
fn chunk_idx(e0: u32, q: u32) -> u32 { return (e0 + (q / 2u) * p.N + (q % 2u) * 8u) / 8u; }
//#if EPIN
// RES / DGELU: chunk q (row q / 2, columns (q % 2)*8 ..) of the residual's (h's) 16x16 block at
// element e0
fn res_ld(e0: u32, q: u32) -> vec4<u32> {
  return res[p.off_hi.x / 4u + chunk_idx(e0, q)];
}
// the chunk lane q = lane of a block, loaded ahead (all the tile's blocks at once before the
// epilogue, or with EPRE in the last k step: one memory latency a tile instead of one a block);
// zero for lanes >= 32 (SGSIZE 64)
fn res_pre(e0: u32, lane: u32) -> vec4<u32> {
  var v = vec4<u32>();
  if (lane < 32u) {
    v = res_ld(e0, lane);
  }
  return v;
}
//#endif
// The 16x16 block of subgroup sg staged in wst (row-major) to c at element e0 (its top left,
// counted from the tensor's start; row stride p.N), added to c's old values with ACC: 32 chunks
// of 8 halves (row q / 2, columns (q % 2)*8 ..), lanes lane, lane + SGSIZE, ... of the subgroup.
// r0 (RES, DGELU): the residual's (h's) chunk q = lane, loaded ahead (res_pre); further chunks
// (SGSIZE 16) are loaded here.
//#if DGELU
fn dg4(v: vec4<f32>, h: vec2<u32>) -> vec4<f32> { // v ⊙ gelu'(four halves of h)
  let a = unpack2x16float(h.x);
  let b = unpack2x16float(h.y);
  return v * vec4<f32>(gelu_g(a.x), gelu_g(a.y), gelu_g(b.x), gelu_g(b.y));
}
//#endif
//#if GELU
fn ge2(v: vec2<f32>) -> u32 { return pk16(vec2<f32>(gelu_f(v.x), gelu_f(v.y))); }
//#endif
//#if DSWIGLU
// chunk q of the gate (which 0) or up (1) halves of gu [M, 2N] for the da block at e0 (element
// index in [M, N]): row e0 / N + q / 2, columns e0 % N + (q % 2)·8 .. (+ N for up)
fn dsw_idx(e0: u32, q: u32, which: u32) -> u32 {
  return ((e0 / p.N + q / 2u) * 2u * p.N + e0 % p.N + (q % 2u) * 8u + which * p.N) / 8u;
}
// the chunk q = lane, loaded ahead (all the tile's blocks at once before the epilogue, or with
// EPRE in the last k step, as res_pre); zero for lanes >= 32
fn dsw_pre(e0: u32, lane: u32, which: u32) -> vec4<u32> {
  var v = vec4<u32>();
  if (lane < 32u) {
    v = res[p.off_hi.x / 4u + dsw_idx(e0, lane, which)];
  }
  return v;
}
// SwiGLU's backward of two columns (d: da; g, u: two halves of gate and up): (dgate, dup) of the
// first column, then of the second, as (dgate0, dgate1, dup0, dup1)
fn dsw2(d: vec2<f32>, g: u32, u: u32) -> vec4<f32> {
  let gg = unpack2x16float(g);
  let uu = unpack2x16float(u);
  let a = swiglu_dgu(d.x, gg.x, uu.x);
  let b = swiglu_dgu(d.y, gg.y, uu.y);
  return vec4<f32>(a.x, b.x, a.y, b.y);
}
//#endif
// r1 (DSWIGLU): with r0 the gate's and up's chunks q = lane, loaded ahead (dsw_pre).
fn st_out16(sg: u32, e0: u32, lane: u32, r0: vec4<u32>, r1: vec4<u32>) {
  for (var q = lane; q < 32u; q += SGSIZE) {
    let s = sg * 256u + (q / 2u) * 16u + (q % 2u) * 8u;
    var lo = vec4<f32>(wst[s], wst[s + 1u], wst[s + 2u], wst[s + 3u]);
    var hi = vec4<f32>(wst[s + 4u], wst[s + 5u], wst[s + 6u], wst[s + 7u]);
    let gi = p.off.x / 4u + chunk_idx(e0, q);
    if (ACC) {
      let o = c[gi];
      lo += vec4<f32>(unpack2x16float(o.x), unpack2x16float(o.y));
      hi += vec4<f32>(unpack2x16float(o.z), unpack2x16float(o.w));
    }
//#if EPIN
    var rv = r0;
    if (q != lane) {
      rv = res_ld(e0, q);
    }
//#endif
//#if RES
    lo += vec4<f32>(unpack2x16float(rv.x), unpack2x16float(rv.y));
    hi += vec4<f32>(unpack2x16float(rv.z), unpack2x16float(rv.w));
//#endif
//#if DGELU
    lo = dg4(lo, rv.xy);
    hi = dg4(hi, rv.zw);
//#endif
//#if DSWIGLU
    // row r_, columns c_ .. c_ + 7 of da; gate, up and their gradients at the same columns of
    // [M, 2N] rows (up N columns after gate)
    let ge = dsw_idx(e0, q, 0u);
    var gv = r0;
    var uv = r1;
    if (q != lane) {
      gv = res[p.off_hi.x / 4u + ge];
      uv = res[p.off_hi.x / 4u + ge + p.N / 8u];
    }
    let s0 = dsw2(lo.xy, gv.x, uv.x);
    let s1 = dsw2(lo.zw, gv.y, uv.y);
    let s2 = dsw2(hi.xy, gv.z, uv.z);
    let s3 = dsw2(hi.zw, gv.w, uv.w);
    c[p.off.x / 4u + ge] = vec4<u32>(pk16(s0.xy), pk16(s1.xy), pk16(s2.xy), pk16(s3.xy));
    c[p.off.x / 4u + ge + p.N / 8u] = vec4<u32>(pk16(s0.zw), pk16(s1.zw), pk16(s2.zw), pk16(s3.zw));
//#else
    c[gi] = vec4<u32>(pk16(lo.xy), pk16(lo.zw), pk16(hi.xy), pk16(hi.zw));
//#endif
//#if GELU
    ga[p.off_hi.x / 4u + chunk_idx(e0, q)] = vec4<u32>(ge2(lo.xy), ge2(lo.zw), ge2(hi.xy), ge2(hi.zw));
//#endif
  }
}
//#endif

// The origin (m0, n0) of output tile `pid` (row-major over the N / BN tile columns), or with
// SWZ in groups of 8 tile rows, column by column inside a group (consecutive workgroups share
// B's column block and 8 of A's row blocks: fewer operand reads from memory at 8192³).
fn tile_origin(pid: u32) -> vec2<u32> {
  let nx = p.N / BN;
//#if SWZ
  let fm = (pid / (8u * nx)) * 8u;
  let gs = min(p.M / BM - fm, 8u);
  let pin = pid % (8u * nx);
  return vec2<u32>((fm + pin % gs) * BM, (pin / gs) * BN);
//#else
  return vec2<u32>((pid / nx) * BM, (pid % nx) * BN);
//#endif
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let sg = lid / SGSIZE;
  let sm = (sg / SG_N) * (TM * 16u); // this subgroup's block inside the workgroup tile
  let sn = (sg % SG_N) * (TN * 16u);
  _ = &a; _ = &b; _ = &bias; // every binding in the layout whatever the constants keep
//#if A16W
  _ = &a16w;
//#endif
//#if EPIN
  _ = &res;
//#endif
//#if DSWIGLU
  _ = &res;
//#endif
//#if GELU
  _ = &ga;
//#endif
//#if PERS
  var zero: Res; // never written: the accumulators' start on every tile
  let ntiles = (p.M / BM) * (p.N / BN);
  let o0 = tile_origin(wg.x);
  // the first tile's first k tile (the later tiles' come from the previous tile's last k step)
//#for t in A_PER
  var ra{t} = ld_a(a_src(lid + {t}u * NT, o0.x, 0u));
//#endfor
//#for t in B_PER
  var rb{t} = b[b_src(lid + {t}u * NT, o0.y, 0u)];
//#endfor
  for (var tile = wg.x; tile < ntiles; tile += nwg.x) {
  let o = tile_origin(tile);
  let m0 = o.x;
  let n0 = o.y;
  let has_next = tile + nwg.x < ntiles;
  let onx = tile_origin(select(tile, tile + nwg.x, has_next));
//#else
//#if SWZ
  let o = tile_origin(wg.y * (p.N / BN) + wg.x);
  let m0 = o.x;
  let n0 = o.y;
//#else
  let m0 = wg.y * BM;
  let n0 = wg.x * BN;
//#endif
//#endif
//#if SPLIT
  let kbeg = wg.z * p.KS;
  let kend = min(p.K, kbeg + p.KS);
//#if DB
  let cbase = p.off.x + wg.z * (p.M * p.N + p.M); // (DB: each split's [M, N] partial, then its M bias sums)
//#else
  let cbase = p.off.x + wg.z * p.M * p.N;
//#endif
//#else
  let kbeg = 0u;
  let kend = p.K;
  let cbase = p.off.x;
//#endif
//#for i in TM
//#for j in TN
  var acc{i}_{j}: Res;
//#if PERS
  acc{i}_{j} = zero; // a var declared in a loop is not re-zeroed on every pass everywhere (lavapipe)
//#endif
//#endfor
//#endfor
//#if HAS_BIAS
//#for j in TN
  for (var e = lid; e < 16u * BIAS_LD; e += NT) {
    let q = e % BIAS_LD;
    wst[e] = bias[p.off.w + n0 + (q / 16u) * (TN * 16u) + {j}u * 16u + q % 16u];
  }
  workgroupBarrier();
  let bias{j} = subgroupMatrixLoad<Res, row_major>(&wst, (sg % SG_N) * 16u, BIAS_LD);
//#for i in TM
  acc{i}_{j} = bias{j};
//#endfor
  workgroupBarrier();
//#endfor
//#endif
//#if ACC
//#if !O16
//#for i in TM
//#for j in TN
  acc{i}_{j} = subgroupMatrixLoad<Res, row_major>(&c, cbase + (m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, p.N);
//#endfor
//#endfor
//#endif
//#endif
//#if DB
  var dbs0 = vec4<f32>(); // this thread's chunk's column sums over the k it stages (n0 == 0)
  var dbs1 = vec4<f32>();
//#endif
//#if !PERS
//#for t in A_PER
  var ra{t}: AReg;
//#endfor
//#for t in B_PER
  var rb{t}: vec4<u32>;
//#endfor
//#endif
//#if NBUF2
  // prologue: the first k tile into buffer 0
//#for t in A_PER
  st_a(lid + {t}u * NT, 0u, cv_a(ld_a(a_src(lid + {t}u * NT, m0, kbeg))));
//#endfor
//#for t in B_PER
  st_b(lid + {t}u * NT, 0u, b[b_src(lid + {t}u * NT, n0, kbeg)]);
//#endfor
  workgroupBarrier();
  var cur = 0u;
//#else
  let cur = 0u;
//#if PF
//#if !PERS
//#for t in A_PER
  ra{t} = ld_a(a_src(lid + {t}u * NT, m0, kbeg));
//#endfor
//#for t in B_PER
  rb{t} = b[b_src(lid + {t}u * NT, n0, kbeg)];
//#endfor
//#endif
//#endif
//#endif
//#if EPRE
  // the epilogue's chunks of binding 5, loaded during the last k step (below)
//#for i in TM
//#for j in TN
  var rq{i}_{j} = vec4<u32>();
  var uq{i}_{j} = vec4<u32>();
//#endfor
//#endfor
//#endif
  for (var k0 = kbeg; k0 < kend; k0 += BK) {
    let k1 = k0 + BK;
//#if NBUF2
    if (k1 < kend) {
//#for t in A_PER
      ra{t} = ld_a(a_src(lid + {t}u * NT, m0, k1));
//#endfor
//#for t in B_PER
      rb{t} = b[b_src(lid + {t}u * NT, n0, k1)];
//#endfor
    }
//#else
    workgroupBarrier();
//#if PF
//#for t in A_PER
//#if A16W
    let h{t} = cv_a(ra{t});
    st_a(lid + {t}u * NT, 0u, h{t});
    w16_a(lid + {t}u * NT, m0, k0, n0, h{t});
//#else
    st_a(lid + {t}u * NT, 0u, cv_a(ra{t}));
//#if DB
    if (n0 == 0u) {
      let d{t} = db8(ra{t});
      dbs0 += d{t}[0];
      dbs1 += d{t}[1];
    }
//#endif
//#endif
//#endfor
//#for t in B_PER
    st_b(lid + {t}u * NT, 0u, rb{t});
//#endfor
    workgroupBarrier();
    if (k1 < kend) {
//#for t in A_PER
      ra{t} = ld_a(a_src(lid + {t}u * NT, m0, k1));
//#endfor
//#for t in B_PER
      rb{t} = b[b_src(lid + {t}u * NT, n0, k1)];
//#endfor
    }
//#if PERS
    else if (has_next) {
//#for t in A_PER
      ra{t} = ld_a(a_src(lid + {t}u * NT, onx.x, 0u));
//#endfor
//#for t in B_PER
      rb{t} = b[b_src(lid + {t}u * NT, onx.y, 0u)];
//#endfor
    }
//#endif
//#if EPRE
    if (k1 >= kend) { // EPRE: the last k step's products hide these loads' latency
//#for i in TM
//#for j in TN
//#if EPIN
      rq{i}_{j} = res_pre((m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE);
//#else
      rq{i}_{j} = dsw_pre((m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE, 0u);
      uq{i}_{j} = dsw_pre((m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE, 1u);
//#endif
//#endfor
//#endfor
    }
//#endif
//#else
//#for t in A_PER
    st_a(lid + {t}u * NT, 0u, cv_a(ld_a(a_src(lid + {t}u * NT, m0, k0))));
//#endfor
//#for t in B_PER
    st_b(lid + {t}u * NT, 0u, b[b_src(lid + {t}u * NT, n0, k0)]);
//#endfor
    workgroupBarrier();
//#endif
//#endif
    let ab = cur * A_SZ; // this k tile's buffers, in halves
    let bb = cur * B_SZ;
    for (var kk = 0u; kk < BK; kk += 16u) {
//#for j in TN
//#if B_NK
//#if TRB
      let r{j} = subgroupMatrixLoad<Right, row_major>(&bs_, (bb + kk * B_LD + sn + {j}u * 16u) / U, B_LD / U);
//#else
      let r{j} = subgroupMatrixLoad<Right, col_major>(&bs_, (bb + (sn + {j}u * 16u) * B_LD + kk) / U, B_LD / U);
//#endif
//#else
      let r{j} = subgroupMatrixLoad<Right, row_major>(&bs_, (bb + kk * B_LD + sn + {j}u * 16u) / U, B_LD / U);
//#endif
//#endfor
//#for i in TM
//#if A_MK
      let l{i} = subgroupMatrixLoad<Left, row_major>(&as_, (ab + (sm + {i}u * 16u) * A_LD + kk) / U, A_LD / U);
//#else
      let l{i} = subgroupMatrixLoad<Left, col_major>(&as_, (ab + kk * A_LD + sm + {i}u * 16u) / U, A_LD / U);
//#endif
//#for j in TN
      acc{i}_{j} = subgroupMatrixMultiplyAccumulate(l{i}, r{j}, acc{i}_{j});
//#endfor
//#endfor
    }
//#if NBUF2
    if (k1 < kend) {
//#for t in A_PER
      st_a(lid + {t}u * NT, 1u - cur, cv_a(ra{t}));
//#endfor
//#for t in B_PER
      st_b(lid + {t}u * NT, 1u - cur, rb{t});
//#endfor
    }
    workgroupBarrier();
    cur = 1u - cur;
//#endif
  }
//#if DB
  // the bias sums: thread lid's chunk is column block lid % A_CH of a's tile; the NT / A_CH
  // threads of a chunk joined through as_ (the last products have read it after the barrier)
  if (n0 == 0u) {
    workgroupBarrier();
    as_[2u * lid] = bitcast<vec4<u32>>(dbs0);
    as_[2u * lid + 1u] = bitcast<vec4<u32>>(dbs1);
    workgroupBarrier();
    for (var j = lid; j < BM; j += NT) { // column j of the tile (fewer threads than BM at 4 or 8 lanes)
      let q = j / 8u;
      let e = j % 8u;
      var s = 0.0;
      for (var r = 0u; r < NT / A_CH; r++) {
        s += bitcast<f32>(as_[2u * (r * A_CH + q) + e / 4u][e % 4u]);
      }
      let o = cbase + p.M * p.N + m0 + j; // db[m0 + j], right after dW (or the split's partial)
      if (ACC) { // (the host runs DB only where dW accumulates: db always does)
        s += c[o];
      }
      c[o] = s;
    }
  }
//#endif
//#if O16
  // (wst is free here: the bias left it before the k loop's barriers)
//#if !EPRE
//#for i in TM
//#for j in TN
//#if EPIN
  let rq{i}_{j} = res_pre((m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE);
  let uq{i}_{j} = vec4<u32>();
//#else
//#if DSWIGLU
  let rq{i}_{j} = dsw_pre((m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE, 0u);
  let uq{i}_{j} = dsw_pre((m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE, 1u);
//#else
  let rq{i}_{j} = vec4<u32>();
  let uq{i}_{j} = vec4<u32>();
//#endif
//#endif
//#endfor
//#endfor
//#endif
//#for i in TM
//#for j in TN
  subgroupMatrixStore<row_major>(&wst, sg * 256u, acc{i}_{j}, 16u);
  workgroupBarrier();
  st_out16(sg, (m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, lid % SGSIZE, rq{i}_{j}, uq{i}_{j});
  workgroupBarrier();
//#endfor
//#endfor
//#else
//#for i in TM
//#for j in TN
  subgroupMatrixStore<row_major>(&c, cbase + (m0 + sm + {i}u * 16u) * p.N + n0 + sn + {j}u * 16u, acc{i}_{j}, p.N);
//#endfor
//#endfor
//#endif
//#if PERS
  }
//#endif
}
