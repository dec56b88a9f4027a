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
 * TEZGAH_CUDA_GEMV=0 (read once per process) turns it off: cuBLASLt for every M.
 * Past tzc_gemv_max_m() rows (up to 16, bf16): mma_k below, the same weight stream into the
 * tensor cores (TEZGAH_CUDA_MMA=0: cuBLASLt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_mma.cuh"
#include "kernels/common/cuda_pdl.cuh"

namespace {
constexpr int GEMV_WARPS = 4;
int mma_prea(); /* TEZGAH_CUDA_MMA_PREA (below) */

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

/* The statistics of one row x[0..K) for NORM 1 (LayerNorm: mean mu, rs = 1/sqrt(var + eps)) or 2
 * (RMSNorm: mu 0, rs = 1/sqrt(mean(x²) + eps)), as layernorm.cu's / rmsnorm.cu's loops sum them
 * (lane l from l·W, 32·W apart; the warp combined by tzc_warp_sum), so that a fused product's
 * normalized values equal the norm op's output. Every lane gets mu and rs. The row's first
 * XC·32·W elements are read once into registers, as loaded (K ≤ 1,024: all of it; bf16: 16
 * registers), and both passes use them: one wait for L2 instead of one per pass and chunk; the
 * sums are the same, in the same order, as the loops over memory. */
template <class T, int W, int NORM>
__device__ __forceinline__ void norm_row_stats(const T *__restrict__ x, int K, int lane, float eps, float &mu,
                                               float &rs) {
  constexpr int XC = 32 / W;
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
    mu = mm, rs = 1.0f / sqrtf(v / K + eps);
  } else {
    s = tzc_warp_sum(s);
    mu = 0.0f, rs = 1.0f / sqrtf(s / K + eps);
  }
}

/* MT: rows handled (≥ M, a power of two ≤ 16); NC: columns per warp (more rows, more columns:
 * each load of a row of `a` then serves NC columns, so L1 traffic stays below the DRAM rate);
 * W: elements per 16-byte load (1: the scalar path for unaligned rows). Lane l visits k = l·W +
 * i·32·W for i = 0, 1, ... in that order whatever MT and NC are: row m's sums do not depend on M.
 * NORM (norm_matmul_t): 0 none; 1 LayerNorm, 2 RMSNorm of each row of `a` with weights nw (and
 * bias nb), statistics computed by every warp with layernorm.cu's / rmsnorm.cu's loops and
 * the normalized value rounded to T as their stored output is (so the fused product equals the
 * norm op followed by this one). GELU: the output is gelu(round_T(dot + bias)), as matmul_t
 * then gelu_fwd would give. */
template <class T, int MT, int NC, int W, int NORM, bool GELU, bool PRE = false>
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
    for (int m = warp; m < M; m += GEMV_WARPS) {
      float mm, rr;
      norm_row_stats<T, W, NORM>(a + (size_t)m * K, K, lane, eps, mm, rr);
      if (lane == 0) smu[m] = mm, srs[m] = rr;
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
    if constexpr (PRE) { /* one row, no norm: the round's U pieces of a loaded together (one wait for L2) */
      static_assert(MT == 1 && NORM == 0, "PRE: one row, no norm");
      wvec<T, W> xr[U];
#pragma unroll
      for (int u = 0; u < U; u++)
        if (k + u * 32 * W < K) ld_raw<T, W>(a + k + u * 32 * W, xr[u]);
#pragma unroll
      for (int u = 0; u < U; u++) {
        if (k + u * 32 * W >= K) break;
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
          for (int j = 0; j < W; j++) s[0][c] += tzc_tof(wv[u][c].e[j]) * tzc_tof(xr[u].e[j]);
      }
    } else {
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
        if constexpr (GELU) v = tzc_gelu_fwd1(tzc_tof(tzc_from<T>(v)));
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

template <class T, int MT, int NC, int W, int NORM, bool GELU, bool PRE = false>
void go(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, const gemv_args &g) {
  unsigned grid = tzc_blocks(((size_t)g.N + NC - 1) / NC, GEMV_WARPS);
  tzc_launch_pdl(gemv_k<T, MT, NC, W, NORM, GELU, PRE>, dim3(grid), dim3(GEMV_WARPS * 32), st, g.pdl, o, a, b, bias, g.M,
                 g.K, g.N, g.acc, (const T *)g.nw, (const T *)g.nb, g.eps);
}

template <class T, int W, int NORM, bool GELU>
void launch_w(cudaStream_t st, T *o, const T *a, const T *b, const T *bias, const gemv_args &g) {
  /* one row and many columns (lm_head, N ≈ 50K): 4 columns a warp, so that the grid is ~3 waves
   * of resident blocks instead of ~12 and the norm statistics are computed 4× less often (the
   * sums of a column are the same for any NC) */
  if (g.M <= 1 && g.N >= 8192) go<T, 1, 4, W, NORM, GELU>(st, o, a, b, bias, g);
  else if (g.M <= 1) {
    if constexpr (NORM == 0 && W > 1)
      if (mma_prea()) return go<T, 1, 1, W, 0, GELU, true>(st, o, a, b, bias, g);
    go<T, 1, 1, W, NORM, GELU>(st, o, a, b, bias, g);
  }
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

/* ---- the same products on the tensor cores, bf16, M ≤ 16 rows (mma_k) ----
 * At 8..16 rows the gemv kernels above are bound by their FMAs (16 products per weight loaded)
 * and cuBLASLt by its tiling for large M (at M = 16 a decoding step's matmuls took 0.93 ms on
 * the H200, ~10× the time of reading the weights once). mma_k reads the weights once with
 * 16-byte loads, as the gemv does, and multiplies them on the tensor cores:
 * mma.sync.m16n8k16 (bf16 in, fp32 accumulate; sm_80+), the 16 rows of `a` (rows ≥ M zero) as
 * the 16×16 A tile, 8 columns of b (b's rows n0..n0+7: already the "col" layout K×N) as B.
 *
 * One block: TN tiles of 8 output columns (n0 .. n0 + 8·TN) for all rows, its MMA_WK warps
 * splitting K into 32-element chunks (warp w: chunks w, w + MMA_WK, ..., in that order; up to
 * UC chunks × TN tiles of weight loads in flight per lane, the first round issued before the
 * first product and before waiting for the previous kernel: PDL as the gemv). One A fragment
 * (and one normalization of it) serves the block's TN tiles: with many columns (lm_head) a
 * larger TN means fewer blocks, each computing the norm statistics and loading `a` once.
 * Lane (g = lane/4, t = lane%4) loads 8 consecutive k (16 bytes) of b's row n0 + 8j + g at
 * chunk offset 8t, and of a's rows g and g + 8 at the same k: two m16n8k16 steps take the
 * halves of those registers, i.e. the product's k order is permuted the same way on both sides
 * (a sum over k in another order; the fragments' own layout would need 4-byte loads). The
 * warps' 16×8 fp32 partials are summed through shared memory in warp order (warp j sums tile
 * j), then bias, GeLU (of the bf16-rounded value, as gemv_k) and the accumulation, rounded
 * once: deterministic, run to run, and a column's result does not depend on TN or UC (the
 * same chunks per warp in the same order); a row's does not depend on M (the tile's rows are
 * independent); but it is not bit-identical to the same row through gemv_k (another order).
 * NORM 1/2: LayerNorm / RMSNorm of a's rows first (statistics by norm_row_stats, each block
 * for itself; the normalized values rounded to bf16 as the norm op stores them).
 * PRE (the default; TEZGAH_CUDA_MMA_PREA=0: off; TN = 2 only, the narrow products): each round's
 * UC chunks of a's two rows (3 at a time with a norm: registers) are loaded before the first
 * product of the round, so that a warp waits for L2 once a round, not once a chunk (a K = 3,072
 * product: 12 chunks a warp; nvcc did not hoist those loads itself: 96 registers without, 176
 * with, held to 128 by the launch bounds so that 2 blocks fit an SM as before: qkv's 144 and
 * fc's 192 blocks stay one wave on 132 SMs); the same values enter the same products in the same
 * order: the bits do not change. Not at TN 1 (spills) nor 4 / 8 (lm_head: more registers, half
 * the resident blocks).
 * Needs: K % 32 == 0, a, b, nw, nb 16-byte aligned (else the caller takes another path).
 * Bounds: lane reads b rows min(n, N − 1) (never past N), k < K (chunk c < K/32), a rows < M. */
constexpr int MMA_WK = 8; /* warps per block, over K */

/* 8 bf16 of a row as loaded (v), normalized when NORM with mu, rs and the norm weights gw, hw
 * loaded at the same k, each rounded to bf16 as the norm op's output is. */
template <int NORM>
__device__ __forceinline__ uint4 mma_norm_a(uint4 v, uint4 gw, uint4 hw, float mu, float rs) {
  if constexpr (NORM != 0) {
    tzc_bf16 *e = reinterpret_cast<tzc_bf16 *>(&v);
    const tzc_bf16 *g = reinterpret_cast<const tzc_bf16 *>(&gw), *h = reinterpret_cast<const tzc_bf16 *>(&hw);
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const float f = tzc_tof(e[j]);
      e[j] = NORM == 1 ? tzc_from<tzc_bf16>((f - mu) * rs * tzc_tof(g[j]) + tzc_tof(h[j]))
                       : tzc_from<tzc_bf16>(f * rs * tzc_tof(g[j]));
    }
  }
  return v;
}
/* mma_norm_a of the 8 bf16 of row x at k (16 bytes), loaded here (one load at a time: PRE = 0). */
template <int NORM>
__device__ __forceinline__ uint4 mma_ld_a(const tzc_bf16 *x, const tzc_bf16 *nw, const tzc_bf16 *nb, int k, float mu,
                                          float rs) {
  uint4 gw = make_uint4(0, 0, 0, 0), hw = make_uint4(0, 0, 0, 0);
  if constexpr (NORM != 0) gw = *reinterpret_cast<const uint4 *>(nw + k);
  if constexpr (NORM == 1) hw = *reinterpret_cast<const uint4 *>(nb + k);
  return mma_norm_a<NORM>(*reinterpret_cast<const uint4 *>(x + k), gw, hw, mu, rs);
}

/* TN: 8-column tiles per block (1, 2, 4, 8); UC: chunks per warp whose weights are in flight at
 * once (UC·TN 16-byte loads a lane: 12, or 16 at TN 8). */
template <int NORM, bool GELU, int TN, bool PRE>
__global__ void __launch_bounds__(MMA_WK * 32, PRE && TN == 2 ? 2 : 1) /* PRE: ≤ 128 registers, 2 blocks an SM */
    mma_k(tzc_bf16 *__restrict__ out, const tzc_bf16 *__restrict__ a, const tzc_bf16 *__restrict__ b,
          const tzc_bf16 *__restrict__ bias, int M, int K, int N, int acc, const tzc_bf16 *__restrict__ nw,
          const tzc_bf16 *__restrict__ nb, float eps) {
  constexpr int UC = TN == 1 ? 12 : TN == 2 ? 6 : TN == 4 ? 3 : 2;
  tzc_pdl_let_next_start();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * 8 * TN, nch = K / 32;
  const tzc_bf16 *br[TN];
#pragma unroll
  for (int j = 0; j < TN; j++) br[j] = b + (size_t)min(n0 + 8 * j + g, N - 1) * K + t * 8; /* past N: row N-1, not written */
  float d[TN][4];
#pragma unroll
  for (int j = 0; j < TN; j++) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0.0f;
  __shared__ float smu[16], srs[16];
  __shared__ float red[MMA_WK][TN][32][4];
  uint4 wv[UC][TN];
#pragma unroll
  for (int u = 0; u < UC; u++)
    if (warp + u * MMA_WK < nch)
#pragma unroll
      for (int j = 0; j < TN; j++) wv[u][j] = __ldg(reinterpret_cast<const uint4 *>(br[j] + (size_t)(warp + u * MMA_WK) * 32));
  tzc_pdl_wait_prior(); /* every warp, even one with no chunk (K < 32·MMA_WK) */
  if constexpr (NORM != 0) {
    for (int m = warp; m < M; m += MMA_WK) {
      float mm, rr;
      norm_row_stats<tzc_bf16, 8, NORM>(a + (size_t)m * K, K, lane, eps, mm, rr);
      if (lane == 0) smu[m] = mm, srs[m] = rr;
    }
    __syncthreads();
  }
  const bool r0 = g < M, r1 = g + 8 < M;
  const float mu0 = NORM && r0 ? smu[g] : 0.0f, rs0 = NORM && r0 ? srs[g] : 1.0f;
  const float mu1 = NORM && r1 ? smu[g + 8] : 0.0f, rs1 = NORM && r1 ? srs[g + 8] : 1.0f;
  const tzc_bf16 *a0 = a + (size_t)(r0 ? g : 0) * K, *a1 = a + (size_t)(r1 ? g + 8 : 0) * K;
  for (int c0 = warp; c0 < nch; c0 += MMA_WK * UC) {
    if (c0 != warp) {
#pragma unroll
      for (int u = 0; u < UC; u++)
        if (c0 + u * MMA_WK < nch)
#pragma unroll
          for (int j = 0; j < TN; j++) wv[u][j] = __ldg(reinterpret_cast<const uint4 *>(br[j] + (size_t)(c0 + u * MMA_WK) * 32));
    }
    const uint4 z = make_uint4(0, 0, 0, 0);
    if constexpr (PRE && TN == 2) { /* PB chunks' rows of a (and norm weights) loaded together */
      constexpr int PB = NORM != 0 && UC > 3 ? 3 : UC; /* registers: one block of 256 threads at 255 */
#pragma unroll
      for (int u0 = 0; u0 < UC; u0 += PB) {
        uint4 la[PB], ha[PB], ga[PB], ba[PB];
#pragma unroll
        for (int i = 0; i < PB; i++) {
          const int c = c0 + (u0 + i) * MMA_WK, k = c * 32 + t * 8;
          la[i] = ha[i] = ga[i] = ba[i] = z;
          if (u0 + i < UC && c < nch) {
            if (r0) la[i] = *reinterpret_cast<const uint4 *>(a0 + k);
            if (r1) ha[i] = *reinterpret_cast<const uint4 *>(a1 + k);
            if constexpr (NORM != 0) ga[i] = *reinterpret_cast<const uint4 *>(nw + k);
            if constexpr (NORM == 1) ba[i] = *reinterpret_cast<const uint4 *>(nb + k);
          }
        }
#pragma unroll
        for (int i = 0; i < PB; i++) {
          const int u = u0 + i;
          if (u < UC && c0 + u * MMA_WK < nch) { /* uniform over the warp */
            const uint4 lo = r0 ? mma_norm_a<NORM>(la[i], ga[i], ba[i], mu0, rs0) : z;
            const uint4 hi = r1 ? mma_norm_a<NORM>(ha[i], ga[i], ba[i], mu1, rs1) : z;
#pragma unroll
            for (int j = 0; j < TN; j++) {
              tzc_mma_chunk(d[j], lo, hi, wv[u][j]);
            }
          }
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < UC; u++) {
        const int c = c0 + u * MMA_WK;
        if (c < nch) { /* uniform over the warp */
          const int k = c * 32 + t * 8;
          const uint4 lo = r0 ? mma_ld_a<NORM>(a0, nw, nb, k, mu0, rs0) : z;
          const uint4 hi = r1 ? mma_ld_a<NORM>(a1, nw, nb, k, mu1, rs1) : z;
#pragma unroll
          for (int j = 0; j < TN; j++) {
            tzc_mma_chunk(d[j], lo, hi, wv[u][j]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < TN; j++)
#pragma unroll
    for (int i = 0; i < 4; i++) red[warp][j][lane][i] = d[j][i];
  __syncthreads();
  for (int j = warp; j < TN; j += MMA_WK) { /* warp j: tile j, its 8 warps' partials in warp order */
#pragma unroll
    for (int i = 0; i < 4; i++) {
      float v = 0.0f;
#pragma unroll
      for (int w = 0; w < MMA_WK; w++) v += red[w][j][lane][i];
      const int m = g + (i >> 1) * 8, n = n0 + 8 * j + t * 2 + (i & 1);
      if (m < M && n < N) {
        if (bias) v += tzc_tof(bias[n]);
        tzc_bf16 *o = out + (size_t)m * N + n;
        if constexpr (GELU) v = tzc_gelu_fwd1(tzc_tof(tzc_from<tzc_bf16>(v)));
        if (acc) v += tzc_tof(*o);
        *o = tzc_from<tzc_bf16>(v);
      }
    }
  }
}

template <int NORM, bool GELU, bool PRE>
void mma_go_p(tzc_ctx *c, int tn, tzc_bf16 *o, const tzc_bf16 *x, const tzc_bf16 *w, const tzc_bf16 *bi,
              const tzc_bf16 *g, const tzc_bf16 *h, float eps, int M, int K, int N, int acc) {
  const dim3 grid((unsigned)((N + 8 * tn - 1) / (8 * tn))), block(MMA_WK * 32);
  if (tn == 8) tzc_launch_pdl(mma_k<NORM, GELU, 8, PRE>, grid, block, c->stream, c->pdl, o, x, w, bi, M, K, N, acc, g, h, eps);
  else if (tn == 4) tzc_launch_pdl(mma_k<NORM, GELU, 4, PRE>, grid, block, c->stream, c->pdl, o, x, w, bi, M, K, N, acc, g, h, eps);
  else if (tn == 2) tzc_launch_pdl(mma_k<NORM, GELU, 2, PRE>, grid, block, c->stream, c->pdl, o, x, w, bi, M, K, N, acc, g, h, eps);
  else tzc_launch_pdl(mma_k<NORM, GELU, 1, PRE>, grid, block, c->stream, c->pdl, o, x, w, bi, M, K, N, acc, g, h, eps);
}

/* TEZGAH_CUDA_MMA_PREA=0 (read once): mma_k loads a's rows chunk by chunk as round 1 did, and so
 * does gemv_k with one row and no norm (an A/B; the bits are the same either way); else the
 * round's pieces of a together (PRE: mma_k above; gemv_k at M = 1, NORM 0: the proj and MLP-down
 * products at batch 1, K = 768 and 3,072: 3 and 12 pieces a lane, 66 registers without — nvcc
 * did not hoist those loads — more with). */
int mma_prea() {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("TEZGAH_CUDA_MMA_PREA");
    on = !(e && !strcmp(e, "0"));
  }
  return on;
}

template <int NORM, bool GELU>
void mma_go(tzc_ctx *c, int tn, tzc_bf16 *o, const tzc_bf16 *x, const tzc_bf16 *w, const tzc_bf16 *bi,
            const tzc_bf16 *g, const tzc_bf16 *h, float eps, int M, int K, int N, int acc) {
  if (mma_prea()) mma_go_p<NORM, GELU, true>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  else mma_go_p<NORM, GELU, false>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
}

/* Column tiles per block: TEZGAH_CUDA_MMA_TN="S,L" (read once per process; each 1, 2, 4 or 8):
 * S for N < 8,192, L for N ≥ 8,192 (lm_head); default 2,4: the H200 run of 2026-12-02 23:14
 * (device_cuda_decode4.sh, since removed: git history; GPT-2 124M bf16, batch 16, 1,000 tokens) measured 0.627 ms/step
 * at 2,4 against 0.728 at 1,4, 0.729 at 1,8 and 0.810 at 1,1 (lm_head's 6,288 one-tile blocks
 * each recomputed 16 rows' statistics and reloaded a). The bits do not depend on it. */
int mma_tn(int N) {
  static int tn[2] = {0, 0};
  if (!tn[0]) {
    int s = 2, l = 4;
    const char *e = getenv("TEZGAH_CUDA_MMA_TN");
    if (e) sscanf(e, "%d,%d", &s, &l);
    auto ok = [](int v) { return v == 1 || v == 2 || v == 4 || v == 8; };
    tn[1] = ok(l) ? l : 4;
    tn[0] = ok(s) ? s : 2;
  }
  return N >= 8192 ? tn[1] : tn[0];
}

int mma_off() {
  static int off = -1;
  if (off < 0) {
    const char *e = getenv("TEZGAH_CUDA_MMA");
    off = e && !strcmp(e, "0");
  }
  return off;
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

extern "C" int tzc_mma_max_m(void) { return mma_off() ? 0 : 16; }

/* cuda_internal.h: out (+)= [gelu](norm(a)·bᵀ + bias) by mma_k for M ≤ 16 rows in bf16, or 0. */
extern "C" int tzc_mma_t(tz_backend *be, void *out, const void *a, const void *b, const void *bias, const void *nw,
                         const void *nb, float eps, int norm, int gelu, int M, int K, int N, int acc) {
  tzc_ctx *c = tzc(be);
  if (mma_off() || c->act != TZ_BF16 || c->cc_major < 8 || M < 1 || M > 16 || K < 32 || K % 32 || N < 1 ||
      !tzc_aligned16(a) || !tzc_aligned16(b) || (norm && !tzc_aligned16(nw)) || (norm == 1 && !tzc_aligned16(nb)))
    return 0;
  typedef tzc_bf16 T;
  T *o = (T *)out;
  const T *x = (const T *)a, *w = (const T *)b, *bi = (const T *)bias, *g = (const T *)nw, *h = (const T *)nb;
  const int tn = mma_tn(N);
  if (norm == 1 && gelu) mma_go<1, true>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  else if (norm == 1) mma_go<1, false>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  else if (norm == 2 && gelu) mma_go<2, true>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  else if (norm == 2) mma_go<2, false>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  else if (gelu) mma_go<0, true>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  else mma_go<0, false>(c, tn, o, x, w, bi, g, h, eps, M, K, N, acc);
  return 1;
}

/* matmul.cu's tzc_matmul_t calls this first: 1 when it ran the product, 0 when the shape is
 * not for it (M > 16, or M > tzc_gemv_max_m() where tzc_mma_t does not take it;
 * K < 1) or TEZGAH_CUDA_GEMV=0. a, out: act; b, bias: as kernels
 * read weights (tzc_w). */
extern "C" int tzc_gemv_t(tz_backend *be, void *out, const void *a, const void *b, const void *bias, int M, int K,
                          int N, int acc) {
  if (gemv_off() || M < 1 || K < 1 || N < 1) return 0;
  if (M > tzc_gemv_max_m()) /* 8..16 rows: the tensor cores (bf16), else cuBLASLt */
    return tzc_mma_t(be, out, a, b, bias, nullptr, nullptr, 0.0f, 0, 0, M, K, N, acc);
  cudaStream_t st = tzc(be)->stream;
  gemv_args g = {M, K, N, acc, nullptr, nullptr, 0.0f, tzc(be)->pdl};
  TZC_DISPATCH_ACT(be, launch<T, 0, false>(st, (T *)out, (const T *)a, (const T *)b, (const T *)bias, g));
  return 1;
}

/* backend.h's norm_matmul_t for M ≤ tzc_gemv_max_m() (gemv_k), or up to 16 rows (tzc_mma_t), else 0:
 * not taken. */
extern "C" int tzc_norm_matmul_t(tz_backend *be, tz_slice out, tz_slice x, tz_slice nw, tz_slice nb, float eps,
                                 tz_slice w, tz_slice bias, int M, int K, int N, int gelu) {
  if (gemv_off() || M < 1 || K < 1 || N < 1 || !tz_present(nw)) return 0;
  TZC_PROF(be, gelu ? "norm_matmul_t_gelu" : "norm_matmul_t");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  if (M > tzc_gemv_max_m()) /* 8..16 rows: the tensor cores (bf16), else 0: the norm op, then matmul_t */
    return tzc_mma_t(be, tzc_ptr(out), tzc_ptr(x), tzc_w(be, w), tzc_w(be, bias), tzc_w(be, nw), tzc_w(be, nb), eps,
                     tz_present(nb) ? 1 : 2, gelu, M, K, N, 0);
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
