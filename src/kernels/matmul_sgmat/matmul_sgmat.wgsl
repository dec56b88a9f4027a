// C = op(A) · op(B) (+ bias) (+ C) on subgroup matrices (tensor cores where the adapter maps
// WGSL's chromium_experimental_subgroup_matrix to them: Vulkan cooperative matrices on NVIDIA).
// f16 operands, f32 accumulation and result. Source: our own; the WGSL builtins are Dawn's
// (src/dawn/tests/end2end/SubgroupMatrixTests.cpp shows their use).
//
// Shapes (row-major; each tensor starts at its element offset p.off[i] in its binding: the
// layout of the WebGPU backend's standalone kernels, wg_run_ex: binding 0 the uniform block
// [element offsets of c, a, b, bias (4-byte units)][slots][M, N, K], bindings 1..4 c, a, b, bias):
//   C   [M, N] f32, leading dimension N
//   A   A_MK: [M, K] (k contiguous, lda = K)   A_KM: [K, M] (m contiguous, lda = M)
//   B   B_NK: [N, K] (k contiguous, ldb = K)   B_KN: [K, N] (n contiguous, ldb = N)
//   bias [N] f32 (HAS_BIAS), added once; ACC: C is read and added to (gradient accumulation)
// The model's forms: X·Wᵀ = A_MK, B_NK (+ bias); dX = dY·W = A_MK, B_KN;
// dW = dYᵀ·X = A_KM, B_KN (+ ACC).
// Tiling: a workgroup computes a BM × BN tile of C with SG_M × SG_N subgroups, each a
// (TM·16) × (TN·16) block of 16 × 16 result matrices; k advances BK at a time, either through
// workgroup memory (tiles stored as in global memory, padded by 8 halves against bank
// conflicts) or, with DIRECT, by loading the subgroup's matrices straight from the operands
// (the caches do the reuse). The host requires M % BM == 0, N % BN == 0, K % BK == 0 and
// 16-byte aligned operands (vec4<f16> loads); other shapes take the fp32/f16 vector kernels.
// The host prepends: const BM, BN, BK, SG_M, SG_N, TM, TN, SGSIZE, A_MK (bool), B_NK (bool),
// ACC (bool), and keeps the lines between `//#if X` and `//#else` / `//#endif` where X
// (DIRECT, HAS_BIAS) holds, the others where it does not (a subgroup-matrix load's pointer is
// checked against its array's size even in dead code, so unused tiles must not be declared).
// With DIRECT the host also declares bindings 5 a_h and 6 b_h (array<f16>, the same buffers
// as a and b; the standalone op's bench only). a's and b's offsets must be multiples of 2
// (8-byte aligned f16 data: vec4<f16> loads), c's and bias' any.
// The constants and ACC are the host's, after the directives (the line marked below): ACC may
// be set for any form (C accumulates) but never with HAS_BIAS.
enable f16;
enable chromium_experimental_subgroup_matrix;
// A subgroup's block is chosen by local_invocation_index / SGSIZE (subgroups of a 1-D
// workgroup are consecutive invocations on the adapters this kernel is chosen for: the host
// requires subgroupMinSize == subgroupMaxSize == SGSIZE). The uniformity analysis cannot see
// that this value is subgroup-uniform, hence the rule is off.
diagnostic(off, chromium.subgroup_matrix_uniformity);
// end of directives

struct Params { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, M: u32, N: u32, K: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> c: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> b: array<vec4<f16>>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

const NT = SG_M * SG_N * SGSIZE;          // threads per workgroup
alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Res = subgroup_matrix_result<f32, 16, 16>;
//#if HAS_BIAS
var<workgroup> bias_t: array<f32, 16u * BN>; // 16 identical rows of bias[n0 .. n0+BN)
//#endif
//#if DIRECT
//#else
const PAD = 8u;
// workgroup tiles: A as it is in memory (A_MK: [BM][BK]; A_KM: [BK][BM]); B always [BK][BN]
// (B_NK is transposed on the way in: the H200 runs right-hand matrices loaded column-major
// from workgroup memory at half the speed of row-major ones, measured 2026-12-02)
const A_ROWS = select(BK, BM, A_MK);
const A_COLS = select(BM, BK, A_MK);
const B_ROWS = select(BK, BN, B_NK);      // global tile shape: B_NK [BN][BK]; B_KN [BK][BN]
const B_COLS = select(BN, BK, B_NK);
const A_LD = A_COLS + PAD;
const B_LD = BN + PAD;
var<workgroup> as_: array<f16, A_ROWS * A_LD>;
var<workgroup> bs_: array<f16, BK * B_LD>;
// per thread, the vec4s of one k step (the host requires the tiles to divide evenly)
const A_PER = A_ROWS * A_COLS / 4u / NT;
const B_PER = B_ROWS * B_COLS / 4u / NT;

// Register prefetch: the global loads of the next k step are issued before the current step's
// matrix products and stored to workgroup memory after them (no async copies in WGSL).
fn fetch_a(ra: ptr<function, array<vec4<f16>, A_PER>>, r0: u32, c0: u32, ld: u32, lid: u32) {
  for (var t = 0u; t < A_PER; t++) {
    let i = lid + t * NT;
    let r = i / (A_COLS / 4u);
    let q = (i % (A_COLS / 4u)) * 4u;
    (*ra)[t] = a[p.off.y / 2u + ((r0 + r) * ld + c0 + q) / 4u];
  }
}
// B's element (r, q..q+3) of the global tile that thread slot i moves. B_KN: rows of k, as A.
// B_NK (transposed into workgroup memory): 8 consecutive slots take 8 rows (n) at one k, the
// next 8 the next 4 k: a subgroup reads 8 rows × 32 bytes (whole sectors) and its transposed
// f16 stores spread over the banks (slots along k alone made 8- to 16-way bank conflicts).
fn b_slot(i: u32) -> vec2<u32> {
  if (B_NK) {
    let k4 = (i / 8u) % (BK / 4u);
    return vec2<u32>((i / (8u * (BK / 4u))) * 8u + i % 8u, k4 * 4u);
  }
  return vec2<u32>(i / (B_COLS / 4u), (i % (B_COLS / 4u)) * 4u);
}
fn fetch_b(rb: ptr<function, array<vec4<f16>, B_PER>>, r0: u32, c0: u32, ld: u32, lid: u32) {
  for (var t = 0u; t < B_PER; t++) {
    let rq = b_slot(lid + t * NT);
    (*rb)[t] = b[p.off.z / 2u + ((r0 + rq.x) * ld + c0 + rq.y) / 4u];
  }
}
fn store_a(ra: ptr<function, array<vec4<f16>, A_PER>>, lid: u32) {
  for (var t = 0u; t < A_PER; t++) {
    let i = lid + t * NT;
    let o = (i / (A_COLS / 4u)) * A_LD + (i % (A_COLS / 4u)) * 4u;
    let v = (*ra)[t];
    as_[o] = v.x; as_[o + 1u] = v.y; as_[o + 2u] = v.z; as_[o + 3u] = v.w;
  }
}
fn store_b(rb: ptr<function, array<vec4<f16>, B_PER>>, lid: u32) {
  for (var t = 0u; t < B_PER; t++) {
    let rq = b_slot(lid + t * NT);
    let r = rq.x;
    let q = rq.y;
    let v = (*rb)[t];
    if (B_NK) { // r is n, q..q+3 are k: transpose
      bs_[q * B_LD + r] = v.x; bs_[(q + 1u) * B_LD + r] = v.y;
      bs_[(q + 2u) * B_LD + r] = v.z; bs_[(q + 3u) * B_LD + r] = v.w;
    } else {
      let o = r * B_LD + q;
      bs_[o] = v.x; bs_[o + 1u] = v.y; bs_[o + 2u] = v.z; bs_[o + 3u] = v.w;
    }
  }
}
//#endif

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let sg = lid / SGSIZE;
  let m0 = wg.y * BM;
  let n0 = wg.x * BN;
  let sm = (sg / SG_N) * (TM * 16u); // this subgroup's block inside the workgroup tile
  let sn = (sg % SG_N) * (TN * 16u);
  var acc: array<Res, TM * TN>;
  _ = &a; _ = &b; _ = &bias; // every binding in the layout whatever the constants keep
//#if HAS_BIAS
  for (var i = lid; i < 16u * BN; i += NT) { bias_t[i] = bias[p.off.w + n0 + i % BN]; }
  workgroupBarrier();
  for (var j = 0u; j < TN; j++) {
    let r = subgroupMatrixLoad<Res, row_major>(&bias_t, sn + j * 16u, BN);
    for (var i = 0u; i < TM; i++) { acc[i * TN + j] = r; }
  }
//#endif
  if (ACC) {
    for (var i = 0u; i < TM; i++) {
      for (var j = 0u; j < TN; j++) {
        let off = p.off.x + (m0 + sm + i * 16u) * p.N + n0 + sn + j * 16u;
        acc[i * TN + j] = subgroupMatrixLoad<Res, row_major>(&c, off, p.N); // never with a bias
      }
    }
  }
//#if DIRECT
//#else
  var ra: array<vec4<f16>, A_PER>;
  var rb: array<vec4<f16>, B_PER>;
  if (A_MK) { fetch_a(&ra, m0, 0u, p.K, lid); } else { fetch_a(&ra, 0u, m0, p.M, lid); }
  if (B_NK) { fetch_b(&rb, n0, 0u, p.K, lid); } else { fetch_b(&rb, 0u, n0, p.N, lid); }
//#endif
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
//#if DIRECT
//#else
    workgroupBarrier();
    store_a(&ra, lid);
    store_b(&rb, lid);
    workgroupBarrier();
    let k1 = k0 + BK;
    if (k1 < p.K) {
      if (A_MK) { fetch_a(&ra, m0, k1, p.K, lid); } else { fetch_a(&ra, k1, m0, p.M, lid); }
      if (B_NK) { fetch_b(&rb, n0, k1, p.K, lid); } else { fetch_b(&rb, k1, n0, p.N, lid); }
    }
//#endif
    for (var kk = 0u; kk < BK; kk += 16u) {
      var l: array<Left, TM>;
      var r: array<Right, TN>;
      for (var i = 0u; i < TM; i++) {
//#if DIRECT
        if (A_MK) {
          l[i] = subgroupMatrixLoad<Left, row_major>(&a_h, 2u * p.off.y + (m0 + sm + i * 16u) * p.K + k0 + kk, p.K);
        } else {
          l[i] = subgroupMatrixLoad<Left, col_major>(&a_h, 2u * p.off.y + (k0 + kk) * p.M + m0 + sm + i * 16u, p.M);
        }
//#else
        if (A_MK) {
          l[i] = subgroupMatrixLoad<Left, row_major>(&as_, (sm + i * 16u) * A_LD + kk, A_LD);
        } else {
          l[i] = subgroupMatrixLoad<Left, col_major>(&as_, kk * A_LD + sm + i * 16u, A_LD);
        }
//#endif
      }
      for (var j = 0u; j < TN; j++) {
//#if DIRECT
        if (B_NK) {
          r[j] = subgroupMatrixLoad<Right, col_major>(&b_h, 2u * p.off.z + (n0 + sn + j * 16u) * p.K + k0 + kk, p.K);
        } else {
          r[j] = subgroupMatrixLoad<Right, row_major>(&b_h, 2u * p.off.z + (k0 + kk) * p.N + n0 + sn + j * 16u, p.N);
        }
//#else
        r[j] = subgroupMatrixLoad<Right, row_major>(&bs_, kk * B_LD + sn + j * 16u, B_LD);
//#endif
      }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) {
          acc[i * TN + j] = subgroupMatrixMultiplyAccumulate(l[i], r[j], acc[i * TN + j]);
        }
      }
    }
  }
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      let off = p.off.x + (m0 + sm + i * 16u) * p.N + n0 + sn + j * 16u;
      subgroupMatrixStore<row_major>(&c, off, acc[i * TN + j], p.N);
    }
  }
}
