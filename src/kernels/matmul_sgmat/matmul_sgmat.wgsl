// C = op(A) · op(B) (+ bias) (+ C) on subgroup matrices (tensor cores where the adapter maps
// WGSL's chromium_experimental_subgroup_matrix to them: Vulkan cooperative matrices on NVIDIA).
// f16 operands, f32 accumulation and result. Source: our own; the WGSL builtins are Dawn's
// (src/dawn/tests/end2end/SubgroupMatrixTests.cpp shows their use).
//
// Shapes (row-major, element offsets from the bindings' starts):
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
enable f16;
enable chromium_experimental_subgroup_matrix;
// A subgroup's block is chosen by local_invocation_index / SGSIZE (subgroups of a 1-D
// workgroup are consecutive invocations on the adapters this kernel is chosen for: the host
// requires subgroupMinSize == subgroupMaxSize == SGSIZE). The uniformity analysis cannot see
// that this value is subgroup-uniform, hence the rule is off.
diagnostic(off, chromium.subgroup_matrix_uniformity);

struct Params { M: u32, N: u32, K: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> a: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> a_h: array<f16>; // the same buffers as a and b,
@group(0) @binding(6) var<storage, read> b_h: array<f16>; // element-wise (DIRECT loads)

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
// workgroup tiles, laid out as the operands are in memory
const A_ROWS = select(BK, BM, A_MK);      // A_MK: [BM][BK]; A_KM: [BK][BM]
const A_COLS = select(BM, BK, A_MK);
const B_ROWS = select(BK, BN, B_NK);      // B_NK: [BN][BK]; B_KN: [BK][BN]
const B_COLS = select(BN, BK, B_NK);
const A_LD = A_COLS + PAD;
const B_LD = B_COLS + PAD;
var<workgroup> as_: array<f16, A_ROWS * A_LD>;
var<workgroup> bs_: array<f16, B_ROWS * B_LD>;

// copy the A_ROWS × A_COLS tile at global element (r0, c0) of A (leading dimension ld) into as_
fn load_a(r0: u32, c0: u32, ld: u32, lid: u32) {
  let per_row = A_COLS / 4u;
  for (var i = lid; i < A_ROWS * per_row; i += NT) {
    let r = i / per_row;
    let q = (i % per_row) * 4u;
    let v = a[((r0 + r) * ld + c0 + q) / 4u];
    let o = r * A_LD + q;
    as_[o] = v.x; as_[o + 1u] = v.y; as_[o + 2u] = v.z; as_[o + 3u] = v.w;
  }
}
fn load_b(r0: u32, c0: u32, ld: u32, lid: u32) {
  let per_row = B_COLS / 4u;
  for (var i = lid; i < B_ROWS * per_row; i += NT) {
    let r = i / per_row;
    let q = (i % per_row) * 4u;
    let v = b[((r0 + r) * ld + c0 + q) / 4u];
    let o = r * B_LD + q;
    bs_[o] = v.x; bs_[o + 1u] = v.y; bs_[o + 2u] = v.z; bs_[o + 3u] = v.w;
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
//#if HAS_BIAS
  for (var i = lid; i < 16u * BN; i += NT) { bias_t[i] = bias[n0 + i % BN]; }
  workgroupBarrier();
  for (var j = 0u; j < TN; j++) {
    let r = subgroupMatrixLoad<Res, row_major>(&bias_t, sn + j * 16u, BN);
    for (var i = 0u; i < TM; i++) { acc[i * TN + j] = r; }
  }
//#endif
  if (ACC) {
    for (var i = 0u; i < TM; i++) {
      for (var j = 0u; j < TN; j++) {
        let off = (m0 + sm + i * 16u) * p.N + n0 + sn + j * 16u;
        acc[i * TN + j] = subgroupMatrixLoad<Res, row_major>(&c, off, p.N); // never with a bias
      }
    }
  }
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
//#if DIRECT
//#else
    workgroupBarrier();
    if (A_MK) { load_a(m0, k0, p.K, lid); } else { load_a(k0, m0, p.M, lid); }
    if (B_NK) { load_b(n0, k0, p.K, lid); } else { load_b(k0, n0, p.N, lid); }
    workgroupBarrier();
//#endif
    for (var kk = 0u; kk < BK; kk += 16u) {
      var l: array<Left, TM>;
      var r: array<Right, TN>;
      for (var i = 0u; i < TM; i++) {
//#if DIRECT
        if (A_MK) {
          l[i] = subgroupMatrixLoad<Left, row_major>(&a_h, (m0 + sm + i * 16u) * p.K + k0 + kk, p.K);
        } else {
          l[i] = subgroupMatrixLoad<Left, col_major>(&a_h, (k0 + kk) * p.M + m0 + sm + i * 16u, p.M);
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
          r[j] = subgroupMatrixLoad<Right, col_major>(&b_h, (n0 + sn + j * 16u) * p.K + k0 + kk, p.K);
        } else {
          r[j] = subgroupMatrixLoad<Right, row_major>(&b_h, (k0 + kk) * p.N + n0 + sn + j * 16u, p.N);
        }
//#else
        if (B_NK) {
          r[j] = subgroupMatrixLoad<Right, col_major>(&bs_, (sn + j * 16u) * B_LD + kk, B_LD);
        } else {
          r[j] = subgroupMatrixLoad<Right, row_major>(&bs_, kk * B_LD + sn + j * 16u, B_LD);
        }
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
      let off = (m0 + sm + i * 16u) * p.N + n0 + sn + j * 16u;
      subgroupMatrixStore<row_major>(&c, off, acc[i * TN + j], p.N);
    }
  }
}
