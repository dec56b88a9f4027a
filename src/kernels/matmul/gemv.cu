/* matmul_t for a few rows (M ≤ GEMV_MAX_M: decoding, where M is the number of sequences):
 * out[m, n] (+)= Σ_k a[m, k]·b[n, k] (+ bias[n]), the backend.h semantics of matmul.cu's
 * cuBLASLt path, as a memory-bound kernel: one warp per output column n reads b's row n once
 * (16-byte loads, 4 in flight per lane) and multiplies it with every row of a (read through
 * L1/L2: all warps share them).
 *
 * Why not cuBLASLt here: at M = 1..16 the product is a matrix-vector product bound by reading
 * b; one kernel per call with the bias and the accumulation in it (cuBLASLt may add split-K
 * reductions or copy an unaligned bias first), and — the property the decoding tests rely on
 * — the result of row m does not depend on M: lane l adds the products of k = l·W.. in k order,
 * the 32 lanes are combined by a fixed butterfly, then + bias, then + out (acc). So row i of a
 * batch is bit-identical to the same row decoded alone, and runs repeat bit for bit.
 * fp32 accumulation on either act dtype (bf16: a, b, bias bf16, out rounded once).
 * TEZGAH_CUDA_GEMV=0 (read once per process) turns it off: cuBLASLt for every M. */
#include <stdlib.h>
#include <string.h>

#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int GEMV_WARPS = 4;

/* MT: rows handled (≥ M, a power of two ≤ 16); NC: columns per warp (more rows, more columns:
 * each load of a row of `a` then serves NC columns, so L1 traffic stays below the DRAM rate);
 * W: elements per 16-byte load (1: the scalar path for unaligned rows). Lane l visits k = l·W +
 * i·32·W for i = 0, 1, ... in that order whatever MT and NC are: row m's sums do not depend on M. */
template <class T, int MT, int NC, int W>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
    gemv_k(T *__restrict__ out, const T *__restrict__ a, const T *__restrict__ b, const T *__restrict__ bias, int M,
           int K, int N, int acc) {
  const int lane = threadIdx.x & 31;
  const int n0 = (blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5)) * NC;
  if (n0 >= N) return;
  const T *br[NC];
#pragma unroll
  for (int c = 0; c < NC; c++) br[c] = b + (size_t)min(n0 + c, N - 1) * K; /* past N: row N-1, not written */
  float s[MT][NC];
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int c = 0; c < NC; c++) s[m][c] = 0.0f;
  constexpr int U = NC >= 4 ? 1 : 4 / NC; /* 16-byte loads of b in flight per lane: U·NC = 4 */
  int k = lane * W;
  for (; k + (U - 1) * 32 * W < K; k += U * 32 * W) {
    float wv[U][NC][W];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int c = 0; c < NC; c++) tzc_ld<W>(br[c] + k + u * 32 * W, wv[u][c]);
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int m = 0; m < MT; m++)
        if (m < M) {
          float xv[W];
          tzc_ld<W>(a + (size_t)m * K + k + u * 32 * W, xv);
#pragma unroll
          for (int c = 0; c < NC; c++)
#pragma unroll
            for (int j = 0; j < W; j++) s[m][c] += wv[u][c][j] * xv[j];
        }
  }
  for (; k < K; k += 32 * W) {
    float wv[NC][W];
#pragma unroll
    for (int c = 0; c < NC; c++) tzc_ld<W>(br[c] + k, wv[c]);
#pragma unroll
    for (int m = 0; m < MT; m++)
      if (m < M) {
        float xv[W];
        tzc_ld<W>(a + (size_t)m * K + k, xv);
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
          for (int j = 0; j < W; j++) s[m][c] += wv[c][j] * xv[j];
      }
  }
#pragma unroll
  for (int c = 0; c < NC; c++) {
    const int n = n0 + c;
    const float bv = bias && n < N ? tzc_tof(bias[n]) : 0.0f;
#pragma unroll
    for (int m = 0; m < MT; m++) {
      float v = tzc_warp_sum(s[m][c]);
      if (m < M && n < N && lane == m) {
        v += bv;
        T *o = out + (size_t)m * N + n;
        if (acc) v += tzc_tof(*o);
        *o = tzc_from<T>(v);
      }
    }
  }
}

template <class T, int MT, int NC, int W>
void go(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, int M, int K, int N, int acc) {
  unsigned grid = tzc_blocks(((size_t)N + NC - 1) / NC, GEMV_WARPS);
  gemv_k<T, MT, NC, W><<<grid, GEMV_WARPS * 32, 0, st>>>(o, a, b, bias, M, K, N, acc);
  TZC_LAUNCHED();
}

template <class T, int W>
void launch_w(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, int M, int K, int N, int acc) {
  if (M <= 1) go<T, 1, 1, W>(st, o, a, b, bias, M, K, N, acc);
  else if (M <= 2) go<T, 2, 1, W>(st, o, a, b, bias, M, K, N, acc);
  else if (M <= 4) go<T, 4, 2, W>(st, o, a, b, bias, M, K, N, acc);
  else if (M <= 8) go<T, 8, 4, W>(st, o, a, b, bias, M, K, N, acc);
  else go<T, 16, 4, W>(st, o, a, b, bias, M, K, N, acc);
}

template <class T>
void launch(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, int M, int K, int N, int acc) {
  constexpr int V = 16 / (int)sizeof(T);
  /* the vector path needs every row of a and b 16-byte aligned: K a multiple of V and aligned
   * bases (it does not depend on M) */
  if (K % V == 0 && tzc_aligned16(a) && tzc_aligned16(b)) launch_w<T, V>(st, o, a, b, bias, M, K, N, acc);
  else launch_w<T, 1>(st, o, a, b, bias, M, K, N, acc);
}
} // namespace

/* matmul.cu's tzc_matmul_t calls this first: 1 when it ran the product, 0 when the shape is
 * not for it (M > GEMV_MAX_M, K < 1) or TEZGAH_CUDA_GEMV=0. a, out: act; b, bias: as kernels
 * read weights (tzc_w). */
extern "C" int tzc_gemv_t(tz_backend *be, void *out, const void *a, const void *b, const void *bias, int M, int K,
                          int N, int acc) {
  static int off = -1;
  if (off < 0) {
    const char *e = getenv("TEZGAH_CUDA_GEMV");
    off = e && !strcmp(e, "0");
  }
  if (off || M < 1 || M > TZC_GEMV_MAX_M || K < 1 || N < 1) return 0;
  cudaStream_t st = tzc(be)->stream;
  TZC_DISPATCH_ACT(be, launch<T>(st, (T *)out, (const T *)a, (const T *)b, (const T *)bias, M, K, N, acc));
  return 1;
}
