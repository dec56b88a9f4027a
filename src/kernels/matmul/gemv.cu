/* matmul_t for a few rows (M ≤ tzc_gemv_max_m(): 7 unless TEZGAH_CUDA_GEMV_MAX_M says, at most
 * 16; decoding, where M is the number of sequences):
 * out[m, n] (+)= Σ_k a[m, k]·b[n, k] (+ bias[n]), the backend.h semantics of matmul.cu's
 * cuBLASLt path, as a memory-bound kernel: one warp per output column n reads b's row n once
 * (16-byte loads, up to 12 in flight per lane, all issued before the first product: at K ≤
 * 3,072 in bf16 a lane requests its whole share of the row at once) and multiplies it with
 * every row of a (read through L1/L2: all warps share them).
 *
 * At batch 1 a decoding step is ~60 of these in a row, each reading 1-8 MB: latency, not
 * bandwidth, bounds it. So each kernel first lets the next one start (programmatic dependent
 * launch, sm_90, only while a decoding step is recorded: tzc_ctx.pdl), requests its weights,
 * and only then waits for the kernel that wrote a: a kernel's launch and weight loads overlap
 * the previous kernel's tail. TEZGAH_CUDA_PDL=0 launches them plainly.
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
#include "kernels/common/cuda_pdl.cuh"

namespace {
constexpr int GEMV_WARPS = 4;

/* GeLU, tanh form, exactly as gelu.cu's forward (its clamp and sigmoid identity). */
__device__ __forceinline__ float gelu_fwd1(float x) {
  const float xc = fminf(fmaxf(x, -100.0f), 100.0f);
  const float u = 0.7978845608028654f * (xc + 0.044715f * xc * xc * xc);
  return __fdividef(x, 1.0f + __expf(fminf(-2.0f * u, 80.0f)));
}

/* W elements of T as loaded (one 16-byte load when W·sizeof(T) = 16), converted to float only
 * when multiplied: a lane keeps up to 12 loads in flight in 4 registers each, not 8. */
template <class T, int W> struct alignas(W * sizeof(T)) wvec {
  T e[W];
};
template <class T, int W> __device__ __forceinline__ void ld_raw(const T *p, wvec<T, W> &v) {
  if constexpr (W == 1) v.e[0] = *p;
  else *reinterpret_cast<int4 *>(&v) = *reinterpret_cast<const int4 *>(p);
}

/* Programmatic dependent launch: cuda_pdl.cuh's tzc_pdl_*. A gemv reads only weights (never
 * written during a decoding step) before its wait. */

/* MT: rows handled (≥ M, a power of two ≤ 16); NC: columns per warp (more rows, more columns:
 * each load of a row of `a` then serves NC columns, so L1 traffic stays below the DRAM rate);
 * W: elements per 16-byte load (1: the scalar path for unaligned rows). Lane l visits k = l·W +
 * i·32·W for i = 0, 1, ... in that order whatever MT and NC are: row m's sums do not depend on M.
 * NORM (norm_matmul_t): 0 none; 1 LayerNorm, 2 RMSNorm of each row of `a` with weights nw (and
 * bias nb), statistics computed by every warp with layernorm.cu's / rmsnorm.cu's loops and
 * the normalized value rounded to T as their stored output is (so the fused product equals the
 * norm op followed by this one). GELU: the output is gelu(round_T(dot + bias)), as matmul_t
 * then gelu_fwd would give. */
template <class T, int MT, int NC, int W, int NORM, bool GELU>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
    gemv_k(T *__restrict__ out, const T *__restrict__ a, const T *__restrict__ b, const T *__restrict__ bias, int M,
           int K, int N, int acc, const T *__restrict__ nw, const T *__restrict__ nb, float eps) {
  tzc_pdl_let_next_start(); /* PDL: the next gemv may start loading its weights */
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * GEMV_WARPS + warp) * NC;
  const bool active = n0 < N;
  const T *br[NC];
#pragma unroll
  for (int c = 0; c < NC; c++) br[c] = b + (size_t)min(n0 + c, N - 1) * K; /* past N: row N-1, not written */
  /* U·NC 16-byte loads of b in flight per lane (U k-steps of 32·W each, issued together before
   * any product): at K = 768 and 3,072 (bf16, one row) one round of loads covers a whole row of
   * b, so a warp waits for DRAM once instead of once per k-step. Steps past K are neither
   * loaded nor added, so the sums' order is that of one step at a time. The first round is
   * issued before waiting for the kernel that writes a (PDL) and before the norm statistics. */
  /* NC = 4 with 5..16 rows: registers for the 16×4 sums; with 1 row (lm_head): 3 */
  constexpr int U = NC >= 4 ? (MT == 1 ? 3 : 2) : 12 / NC;
  wvec<T, W> wv[U][NC];
  const int k0 = lane * W;
  if (active) {
#pragma unroll
    for (int u = 0; u < U; u++)
      if (k0 + u * 32 * W < K)
#pragma unroll
        for (int c = 0; c < NC; c++) ld_raw<T, W>(br[c] + k0 + u * 32 * W, wv[u][c]);
  }
  tzc_pdl_wait_prior();
  float mu[MT], rs[MT];
#pragma unroll
  for (int m = 0; m < MT; m++) mu[m] = 0.0f, rs[m] = 1.0f;
  if constexpr (NORM != 0) { /* the block's warps share the rows' statistics: warp w does rows w, w + 4, ... */
    __shared__ float smu[MT], srs[MT];
    /* the row's first XC·32·W elements are read once into registers, as loaded (K ≤ 1,024: all
     * of it; bf16: 16 registers), and both passes use them: one wait for L2 instead of one per
     * pass and chunk; the sums are the same, in the same order, as the loops over memory */
    constexpr int XC = 32 / W;
    for (int m = warp; m < M; m += GEMV_WARPS) {
      const T *x = a + (size_t)m * K;
      wvec<T, W> xr[XC];
#pragma unroll
      for (int i = 0; i < XC; i++)
        if (lane * W + i * 32 * W < K) ld_raw<T, W>(x + lane * W + i * 32 * W, xr[i]);
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < XC; i++)
        if (lane * W + i * 32 * W < K)
#pragma unroll
          for (int j = 0; j < W; j++) {
            const float f = tzc_tof(xr[i].e[j]);
            s += NORM == 1 ? f : f * f;
          }
      for (int c = lane * W + XC * 32 * W; c < K; c += 32 * W) {
        float f[W];
        tzc_ld<W>(x + c, f);
#pragma unroll
        for (int j = 0; j < W; j++) s += NORM == 1 ? f[j] : f[j] * f[j];
      }
      if constexpr (NORM == 1) {
        const float mm = tzc_warp_sum(s) / K;
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < XC; i++)
          if (lane * W + i * 32 * W < K)
#pragma unroll
            for (int j = 0; j < W; j++) {
              const float f = tzc_tof(xr[i].e[j]);
              v += (f - mm) * (f - mm);
            }
        for (int c = lane * W + XC * 32 * W; c < K; c += 32 * W) {
          float f[W];
          tzc_ld<W>(x + c, f);
#pragma unroll
          for (int j = 0; j < W; j++) v += (f[j] - mm) * (f[j] - mm);
        }
        v = tzc_warp_sum(v);
        if (lane == 0) smu[m] = mm, srs[m] = 1.0f / sqrtf(v / K + eps);
      } else {
        s = tzc_warp_sum(s);
        if (lane == 0) smu[m] = 0.0f, srs[m] = 1.0f / sqrtf(s / K + eps);
      }
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT; m++)
      if (m < M) mu[m] = smu[m], rs[m] = srs[m];
  }
  if (!active) return; /* after the block's barrier */
  /* row m of a at column kk, normalized when NORM (g, h: the norm weights there) */
  auto ldx = [&](int m, int kk, const float *g, const float *h, float *xv) {
    tzc_ld<W>(a + (size_t)m * K + kk, xv);
    if constexpr (NORM == 1) {
#pragma unroll
      for (int j = 0; j < W; j++) xv[j] = tzc_tof(tzc_from<T>((xv[j] - mu[m]) * rs[m] * g[j] + h[j]));
    } else if constexpr (NORM == 2) {
#pragma unroll
      for (int j = 0; j < W; j++) xv[j] = tzc_tof(tzc_from<T>(xv[j] * rs[m] * g[j]));
    }
  };
  auto ldn = [&](int kk, float *g, float *h) {
    if constexpr (NORM != 0) tzc_ld<W>(nw + kk, g);
    if constexpr (NORM == 1) tzc_ld<W>(nb + kk, h);
  };
  float s[MT][NC];
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int c = 0; c < NC; c++) s[m][c] = 0.0f;
  for (int k = k0; k < K; k += U * 32 * W) {
    if (k != k0) {
#pragma unroll
      for (int u = 0; u < U; u++)
        if (k + u * 32 * W < K)
#pragma unroll
          for (int c = 0; c < NC; c++) ld_raw<T, W>(br[c] + k + u * 32 * W, wv[u][c]);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (k + u * 32 * W >= K) break;
      float g[W], h[W];
      ldn(k + u * 32 * W, g, h);
#pragma unroll
      for (int m = 0; m < MT; m++)
        if (m < M) {
          float xv[W];
          ldx(m, k + u * 32 * W, g, h, xv);
#pragma unroll
          for (int c = 0; c < NC; c++)
#pragma unroll
            for (int j = 0; j < W; j++) s[m][c] += tzc_tof(wv[u][c].e[j]) * xv[j];
        }
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
        if constexpr (GELU) v = gelu_fwd1(tzc_tof(tzc_from<T>(v)));
        if (acc) v += tzc_tof(*o);
        *o = tzc_from<T>(v);
      }
    }
  }
}

struct gemv_args {
  int M, K, N, acc;
  const void *nw, *nb;
  float eps;
  int pdl; /* launch with programmatic stream serialization (tzc_ctx.pdl: decoding steps only) */
};

template <class T, int MT, int NC, int W, int NORM, bool GELU>
void go(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, const gemv_args &g) {
  unsigned grid = tzc_blocks(((size_t)g.N + NC - 1) / NC, GEMV_WARPS);
  tzc_launch_pdl(gemv_k<T, MT, NC, W, NORM, GELU>, dim3(grid), dim3(GEMV_WARPS * 32), st, g.pdl, o, a, b, bias, g.M,
                 g.K, g.N, g.acc, (const T *)g.nw, (const T *)g.nb, g.eps);
}

template <class T, int W, int NORM, bool GELU>
void launch_w(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, const gemv_args &g) {
  /* one row and many columns (lm_head, N ≈ 50K): 4 columns a warp, so that the grid is ~3 waves
   * of resident blocks instead of ~12 and the norm statistics are computed 4× less often (the
   * sums of a column are the same for any NC) */
  if (g.M <= 1 && g.N >= 8192) go<T, 1, 4, W, NORM, GELU>(st, o, a, b, bias, g);
  else if (g.M <= 1) go<T, 1, 1, W, NORM, GELU>(st, o, a, b, bias, g);
  else if (g.M <= 2) go<T, 2, 1, W, NORM, GELU>(st, o, a, b, bias, g);
  else if (g.M <= 4) go<T, 4, 2, W, NORM, GELU>(st, o, a, b, bias, g);
  else if (g.M <= 8) go<T, 8, 4, W, NORM, GELU>(st, o, a, b, bias, g);
  else go<T, 16, 4, W, NORM, GELU>(st, o, a, b, bias, g);
}

template <class T, int NORM, bool GELU>
void launch(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, const gemv_args &g) {
  constexpr int V = 16 / (int)sizeof(T);
  /* the vector path needs every row of a and b (and the norm weights) 16-byte aligned: K a
   * multiple of V and aligned bases (it does not depend on M) */
  if (g.K % V == 0 && tzc_aligned16(a) && tzc_aligned16(b) && (!g.nw || tzc_aligned16(g.nw)) &&
      (!g.nb || tzc_aligned16(g.nb)))
    launch_w<T, V, NORM, GELU>(st, o, a, b, bias, g);
  else
    launch_w<T, 1, NORM, GELU>(st, o, a, b, bias, g);
}

int gemv_off() {
  static int off = -1;
  if (off < 0) {
    const char *e = getenv("TEZGAH_CUDA_GEMV");
    off = e && !strcmp(e, "0");
  }
  return off;
}
} // namespace

extern "C" int tzc_gemv_max_m(void) {
  static int m = 0;
  if (m == 0) {
    const char *e = getenv("TEZGAH_CUDA_GEMV_MAX_M");
    int v = e ? atoi(e) : 0;
    m = v >= 1 && v <= TZC_GEMV_MAX_M ? v : TZC_GEMV_CROSSOVER;
  }
  return m;
}

/* matmul.cu's tzc_matmul_t calls this first: 1 when it ran the product, 0 when the shape is
 * not for it (M > tzc_gemv_max_m(), K < 1) or TEZGAH_CUDA_GEMV=0. a, out: act; b, bias: as kernels
 * read weights (tzc_w). */
extern "C" int tzc_gemv_t(tz_backend *be, void *out, const void *a, const void *b, const void *bias, int M, int K,
                          int N, int acc) {
  if (gemv_off() || M < 1 || M > tzc_gemv_max_m() || K < 1 || N < 1) return 0;
  cudaStream_t st = tzc(be)->stream;
  gemv_args g = {M, K, N, acc, nullptr, nullptr, 0.0f, tzc(be)->pdl};
  TZC_DISPATCH_ACT(be, launch<T, 0, false>(st, (T *)out, (const T *)a, (const T *)b, (const T *)bias, g));
  return 1;
}

/* backend.h's norm_matmul_t for M ≤ tzc_gemv_max_m() (else 0: not taken). */
extern "C" int tzc_norm_matmul_t(tz_backend *be, tz_slice out, tz_slice x, tz_slice nw, tz_slice nb, float eps,
                                 tz_slice w, tz_slice bias, int M, int K, int N, int gelu) {
  if (gemv_off() || M < 1 || M > tzc_gemv_max_m() || K < 1 || N < 1 || !tz_present(nw)) return 0;
  TZC_PROF(be, gelu ? "norm_matmul_t_gelu" : "norm_matmul_t");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  cudaStream_t st = tzc(be)->stream;
  gemv_args g = {M, K, N, 0, tzc_w(be, nw), tzc_w(be, nb), eps, tzc(be)->pdl};
  const bool ln = tz_present(nb);
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *a = (const T *)tzc_ptr(x), *b = (const T *)tzc_w(be, w), *bi = (const T *)tzc_w(be, bias);
    if (ln && gelu) launch<T, 1, true>(st, o, a, b, bi, g);
    else if (ln) launch<T, 1, false>(st, o, a, b, bi, g);
    else if (gelu) launch<T, 2, true>(st, o, a, b, bi, g);
    else launch<T, 2, false>(st, o, a, b, bi, g);
  });
  return 1;
}
