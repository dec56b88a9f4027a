/* A whole GPT-2 decoding step in one persistent kernel (backend.h's decode_step), bf16, 1..16 rows.
 *
 * Why: at batch 1 a step of GPT-2 124M is ~62 small kernels (gemv.cu, attention_decode.cu) that
 * together read 0.25 GB of weights: ~60 µs at the H200's bandwidth, but 0.32 ms as launched
 * (2026-12-03, recorded with programmatic dependent launch): each kernel's start, first DRAM
 * round trip and tail cost more than its bytes. Here one block per SM runs every phase of the
 * step, separated by grid-wide barriers (~1-2 µs each), and each block asks L2 for the weights
 * of its next phase (cp.async.bulk.prefetch.L2 on sm_90) before it waits at the barrier of the
 * current one, so that DRAM streams the weights while the grid synchronizes and computes. The
 * idea of a decoding "megakernel" as in Hazy Research's "Look Ma, No Bubbles!" (2025) and
 * FlashInfer's persistent decode; this kernel is written from the math of model.c's
 * forward_step (docs/OPS.md), nothing copied.
 *
 * Phases (P = 5 per layer + 2; a grid barrier before each but the first):
 *   0  x[b] = wte[tok[b]] + wpe[pos[b]]                          (fp32 residual, [B, C], global)
 *   per layer l:
 *   A  qkv = LN1(x)·Wqkvᵀ + b: q → qkv buffer, k and v → the cache rows pos[b] (the append)
 *   B  attention of q over keys 0..pos[b] of the cache (split in 32-key items, merged in order)
 *   C  x += att·Wprojᵀ + b
 *   D  h = gelu(round_bf16(LN2(x)·Wfcᵀ + b))
 *   E  x += h·Wfcprojᵀ + b
 *   F  logits = LNf(x)·wteᵀ (bf16 [B, Vp])
 * Matmuls (A, C, D, E, F) run on the tensor cores: mma.sync m16n8k16 (bf16 in, fp32 accumulate),
 * the 16 rows of the tile being the B ≤ 16 rows (rows ≥ B zero, never written), 8 output
 * columns per mma. A, C, D, E: a block task is TN groups of 8 columns (TN chosen so the tasks
 * are about one per block), its 16 warps splitting K in 32-element chunks (warp w: chunks w,
 * w + 16, ..., in order), the warps' 16×8 partials summed through shared memory in warp order.
 * F (lm_head, N ≈ 50K): each warp owns groups of 8 columns and all of K, the normalized rows
 * staged once per block in shared memory. The fragment layout is gemv.cu's mma_k: lane (g, t)
 * loads 16 bytes (8 consecutive k) of weight row n0 + g at chunk offset 8t and of activation
 * rows g and g + 8 at the same k, and two m16n8k16 steps take the halves (the k order inside a
 * chunk is permuted the same way on both sides).
 *
 * Numerics: fp32 accumulation, the residual stream in fp32 (the op-by-op path rounds it to
 * bf16 after every addition), LayerNorm statistics in fp32 from the fp32 residual (two passes
 * in registers), normalized activations rounded to bf16 as the tensor cores take them, GeLU of
 * the bf16-rounded pre-activation (as gemv.cu), logits rounded to bf16. Deterministic (no
 * floating-point atomics; every sum in a fixed order) and batch-invariant: row b's result does
 * not depend on B (tensor-core rows are independent; attention items and their merge depend
 * only on row b's position). Not bit-identical to the op-by-op path (another summation order
 * and the fp32 residual): tests/test_cuda_decode.c compares both against the CPU's fp32 logits.
 *
 * Status (H200, 2026-12-03, scripts/device_cuda_step.sh): correct (test_cuda_decode's
 * test_model_step_kernel: logits error vs the CPU's fp32 0.008, the op-by-op bf16 path 0.010;
 * memcheck clean; bit-identical run to run and batch-invariant) but SLOWER than the recorded
 * op-by-op step: round 3 (this code) 0.424 ms/step at batch 1 (op by op 0.320) and 0.702 at
 * batch 16 (0.595); round 2 (per-warp attention items, row statistics by one warp a row) 0.396
 * and 0.93. Hence opt-in: TEZGAH_CUDA_STEP=1. TEZGAH_CUDA_STEP_TRACE=1 (block 0's clock at
 * each barrier), round 3, µs per layer at batch 1: qkv 4.6, attention 5.1, proj 3.0, fc 5.8,
 * fcproj 5.7, each barrier's wait 0.9; lm_head 24 µs a step; at batch 16 attention 12.6 µs a
 * layer (24 in round 2). A phase is still several dependent trips to L2 (rows, then the
 * partials' reduction in shared memory, the epilogue's stores before the next barrier's release)
 * at ~1 µs each, about what a recorded kernel with programmatic dependent launch costs; and the
 * kernel spills (255 registers, ~0.8 KB a thread). What is left to try: fewer barriers (qkv's
 * attention and the projections in one phase per head group), a smaller register footprint
 * (two kernels' worth of phases per launch), and the first weights of each phase held across
 * two barriers.
 *
 * Coherence: data written during the kernel by other blocks (x, qkv, att, h, cache rows pos[b],
 * attention partials) is read with ld.global.cg (L2, never a stale L1 line); weights with the
 * read-only path. The barrier is one counter that only grows (grid_sync); all blocks are
 * resident (cooperative launch, one block per SM); a block that waits ~4 s traps instead of
 * hanging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_mma.cuh"

namespace {
constexpr int NT = 256, NW = NT / 32; /* threads and warps of a block (one block per SM: 255 registers) */
constexpr int MR = 16;                /* rows of the tensor-core tile: B ≤ 16 */
constexpr int CH = 32;                /* keys per warp of an attention item (NW·CH a block item) */
constexpr int TN_MAX = 3;             /* 8-column groups per block task (registers: 4 spilled) */
constexpr int CPL = 8;                /* float4s of a row per lane in the norm: C ≤ 1,024 */
constexpr int UL = 12;                /* K chunks in flight per lane in F */

struct Layer {
  const tzc_bf16 *n1w, *n1b, *qw, *qb, *pw, *pb, *n2w, *n2b, *fw, *fb, *f2w, *f2b;
  tzc_bf16 *kc, *vc;
};

struct Params {
  int B, C, H, G, hd, Q, F, V, Vp, maxT, L, NSB; /* NSB: attention items a (row, head) */
  float eps, scale;
  int tn_qkv, tn_fc;                  /* groups per block task of qkv and fc (proj, fcproj: 1, N = C) */
  int pf;                             /* ask L2 for the next phase's weights (TEZGAH_CUDA_STEP_PF=0: not) */
  const int *tok, *pos;
  const tzc_bf16 *wte, *wpe, *nfw, *nfb, *lm;
  const Layer *layer; /* [L], device memory */
  float *x;           /* [MR, C] fp32 residual */
  tzc_bf16 *qkv, *att, *h, *logits; /* [MR, Q] (q part), [MR, C], [MR, F], [B, Vp] */
  float *part;        /* [B·H, NSB, hd + 2] attention partials (m, l, acc) */
  unsigned *cnt;      /* [B·H] items finished (zero between launches) */
  unsigned *bar;      /* [1]: barrier arrivals, never reset (see grid_sync) */
  unsigned epoch, nbar; /* this launch's number, barriers a launch (5·L + 1) */
  unsigned long long *trace; /* TEZGAH_CUDA_STEP_TRACE=1: block 0's ns at each barrier [2·(nbar + 1) + 1] */
};

/* ---- grid barrier, loads, prefetch ---- */
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Barrier number i (1, 2, ...) of launch `epoch` (the host counts the launches of a state; nbar
 * barriers a launch): each block adds 1 to the counter (a release reduction: no reply awaited,
 * so 132 arrivals cost ~132 L2 operations, not 132 round trips) and waits until it reaches
 * (epoch·nbar + i)·gridDim.x (wrap-safe: 32-bit differences). Writes before the barrier are
 * visible after it (bar.sync, then the release / acquire of thread 0, then bar.sync). */
__device__ __forceinline__ void grid_sync(const Params &p, unsigned &bi) {
  const unsigned target = (p.epoch * p.nbar + ++bi) * gridDim.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    if (p.trace && blockIdx.x == 0) p.trace[2 * bi] = globaltimer(); /* block 0 arrives */
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p.bar) : "memory");
    const long long t0 = clock64();
    while ((int)(ld_acquire(p.bar) - target) < 0)
      if (clock64() - t0 > (1ll << 33)) __trap(); /* ~4 s: not all blocks resident */
    if (p.trace && blockIdx.x == 0) p.trace[2 * bi + 1] = globaltimer(); /* ... and leaves */
  }
  __syncthreads();
}

__device__ __forceinline__ uint4 ld_cg16(const void *p) { return __ldcg(reinterpret_cast<const uint4 *>(p)); }
__device__ __forceinline__ uint4 ld_ro16(const void *p) { return __ldg(reinterpret_cast<const uint4 *>(p)); }

/* Ask L2 for bytes [p, p + n) (16-byte aligned, n a multiple of 16); the block's threads share
 * the pieces. Nothing waits for it. */
__device__ __forceinline__ void l2_prefetch(const void *p, size_t n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr size_t PIECE = 16384;
  for (size_t o = (size_t)threadIdx.x * PIECE; o < n; o += (size_t)NT * PIECE) {
    const unsigned len = (unsigned)(n - o < PIECE ? n - o : PIECE);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"((const char *)p + o), "r"(len) : "memory");
  }
#else
  for (size_t o = (size_t)threadIdx.x * 128; o < n; o += (size_t)NT * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"((const char *)p + o));
#endif
}

/* One thread asks L2 for bytes [p, p + n) (n < 4 GiB, as l2_prefetch). */
__device__ __forceinline__ void l2_prefetch1(const void *p, unsigned n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(n) : "memory");
#else
  for (unsigned o = 0; o < n; o += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"((const char *)p + o));
#endif
}

/* The weight rows this block's tasks of a matmul read (N rows of K bf16, tasks of TN groups of 8). */
__device__ __forceinline__ void prefetch_mm(const Params &p, const tzc_bf16 *W, int N, int K, int TN) {
  if (!p.pf) return;
  const int ntask = (N / 8 + TN - 1) / TN;
  for (int task = blockIdx.x; task < ntask; task += gridDim.x) {
    const int r0 = task * TN * 8, r1 = min(N, r0 + TN * 8);
    l2_prefetch(W + (size_t)r0 * K, (size_t)(r1 - r0) * K * sizeof(tzc_bf16));
  }
}

__device__ __forceinline__ unsigned pack2(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const unsigned *>(&v);
}
__device__ __forceinline__ void unpack8(uint4 v, float *f) {
  const tzc_bf16 *e = reinterpret_cast<const tzc_bf16 *>(&v);
#pragma unroll
  for (int i = 0; i < 8; i++) f[i] = tzc_tof(e[i]);
}

/* ---- LayerNorm statistics of the rows of x (warp w: rows w, w + NW, ... < B), into smem mu[r], rs[r] ---- */
__device__ __forceinline__ void row_stats(const Params &p, float *mu, float *rs) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < p.B; r += NW) {
    const float *xr = p.x + (size_t)r * p.C;
    float4 v[CPL];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < CPL; i++) {
      const int c = (i * 32 + lane) * 4;
      v[i] = c < p.C ? __ldcg(reinterpret_cast<const float4 *>(xr + c)) : make_float4(0.f, 0.f, 0.f, 0.f);
      s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
    const float m = tzc_warp_sum(s) / p.C;
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < CPL; i++)
      if ((i * 32 + lane) * 4 < p.C) {
        const float a = v[i].x - m, b = v[i].y - m, c = v[i].z - m, d = v[i].w - m;
        q += (a * a + b * b) + (c * c + d * d);
      }
    const float var = tzc_warp_sum(q) / p.C;
    if (lane == 0) mu[r] = m, rs[r] = 1.0f / sqrtf(var + p.eps);
  }
  __syncthreads();
}

/* 8 normalized values of row r at k (bf16, packed): LN(x)[r, k..k+8) with weights w, b. */
__device__ __forceinline__ uint4 norm8(const Params &p, int r, int k, const tzc_bf16 *w, const tzc_bf16 *b,
                                       const float *mu, const float *rs) {
  if (r >= p.B) return make_uint4(0, 0, 0, 0);
  const float *xr = p.x + (size_t)r * p.C + k;
  const float4 x0 = __ldcg(reinterpret_cast<const float4 *>(xr)), x1 = __ldcg(reinterpret_cast<const float4 *>(xr + 4));
  float g[8], h[8];
  unpack8(ld_ro16(w + k), g);
  unpack8(ld_ro16(b + k), h);
  const float m = mu[r], s = rs[r];
  const float xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  float o[8];
#pragma unroll
  for (int i = 0; i < 8; i++) o[i] = (xv[i] - m) * s * g[i] + h[i];
  return make_uint4(pack2(o[0], o[1]), pack2(o[2], o[3]), pack2(o[4], o[5]), pack2(o[6], o[7]));
}

/* ---- a matmul phase (A, C, D, E): v[r, n] = (x[r, n] +) Σ_k a[r, k]·W[n, k] + bias[n], r < B ----
 * a = LN(x) (NORM: fp32 rows of x, LayerNorm weights nw, nb) or bf16 rows `ab` [B, K] (read
 * through L2: another block wrote them). W [N, K] bf16 (N % 8 == 0, K % 32 == 0); RES: the
 * residual x[r, n] added (v = x + (s + bias)); epi(r, n, v) stores it. Blocks take tasks of TN
 * ≤ TNM groups of 8 columns (task t: block t % grid), their NW warps the K chunks (warp w: chunks
 * w, w + NW, ..., UK a round). Before the barrier (pre: the grid barrier) a block requests what
 * does not depend on the previous phase: its first round of weights and, for its first task, the
 * bias and residual of the outputs each thread will store (the residual's last writer is at least
 * one barrier back: C reads what E of the previous layer wrote, E what C wrote). After it, when
 * the warps' UK rounds cover K (nch ≤ UK·NW: "resident"), the rows' fragments are loaded once for
 * the phase, and with NORM the statistics come from those same loads: per row, the lanes' sums
 * over their chunks, the 4 lanes of a row's fragment (butterfly), then the warps in order
 * through shared memory (stat: [2][NW][MR] floats), mean first, then Σ(x − mean)². Otherwise
 * (K past UK·NW chunks) rows are loaded round by round and NORM takes row_stats' statistics.
 * Each task's 16×8 partials of the warps are summed in warp order through `red`. */
template <int TNM, int UK, bool NORM, bool RES, class Pre, class Epi>
__device__ __forceinline__ void mm_phase(const Params &p, const tzc_bf16 *__restrict__ W, int N, int K, int TN,
                                         const tzc_bf16 *ab, const tzc_bf16 *nw, const tzc_bf16 *nb,
                                         const tzc_bf16 *__restrict__ bias, Pre pre, Epi epi, float *red, float *stat,
                                         float *mu, float *rs) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int Gn = N / 8, ntask = (Gn + TN - 1) / TN, nch = K / 32, B = p.B;
  const bool resident = nch <= UK * NW;
  uint4 wv[UK][TNM];
  auto load_w = [&](int task, int c0) { /* one round of a task's weights into wv */
    const int j0 = task * TN, nj = min(TN, Gn - j0);
#pragma unroll
    for (int u = 0; u < UK; u++) {
      const int c = c0 + u * NW;
      if (c < nch)
#pragma unroll
        for (int j = 0; j < TNM; j++)
          if (j < nj) wv[u][j] = ld_ro16(W + (size_t)((j0 + j) * 8 + g) * K + c * 32 + 8 * t);
    }
  };
  /* output q of a task (q < nj·128): row, column */
  auto out_rc = [&](int j0, int q, int &r, int &n) {
    const int j = q >> 7, ln = (q >> 2) & 31, e = q & 3;
    r = (ln >> 2) + 8 * (e >> 1), n = (j0 + j) * 8 + 2 * (ln & 3) + (e & 1);
  };
  float pb[2] = {0.0f, 0.0f}, px[2] = {0.0f, 0.0f}; /* the first task's bias and residual */
  if ((int)blockIdx.x < ntask) {
    load_w(blockIdx.x, warp);
    const int j0 = blockIdx.x * TN, nj = min(TN, Gn - j0);
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const int q = threadIdx.x + i * NT;
      if (q < nj * 128) {
        int r, n;
        out_rc(j0, q, r, n);
        pb[i] = tzc_tof(bias[n]);
        if (RES && r < B) px[i] = __ldcg(p.x + (size_t)r * p.C + n);
      }
    }
  }
  pre();
  /* resident: the warp's rows, loaded (and normalized) once for every task */
  uint4 alo[UK], ahi[UK];
  if (resident) {
    if constexpr (NORM) {
      float xr[UK][2][8];
      uint4 gw[UK], hw[UK];
#pragma unroll
      for (int u = 0; u < UK; u++) {
        const int c = warp + u * NW, k = c * 32 + 8 * t;
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int r = g + 8 * h;
          if (c < nch && r < B) {
            const float4 a0 = __ldcg(reinterpret_cast<const float4 *>(p.x + (size_t)r * p.C + k));
            const float4 a1 = __ldcg(reinterpret_cast<const float4 *>(p.x + (size_t)r * p.C + k + 4));
            xr[u][h][0] = a0.x, xr[u][h][1] = a0.y, xr[u][h][2] = a0.z, xr[u][h][3] = a0.w;
            xr[u][h][4] = a1.x, xr[u][h][5] = a1.y, xr[u][h][6] = a1.z, xr[u][h][7] = a1.w;
          } else
#pragma unroll
            for (int e = 0; e < 8; e++) xr[u][h][e] = 0.0f;
        }
        if (c < nch) gw[u] = ld_ro16(nw + k), hw[u] = ld_ro16(nb + k);
      }
      float sm[2] = {0.0f, 0.0f};
#pragma unroll
      for (int u = 0; u < UK; u++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
          for (int e = 0; e < 8; e++) sm[h] += xr[u][h][e];
      float mean[2], rstd[2];
#pragma unroll
      for (int h = 0; h < 2; h++) {
        sm[h] += __shfl_xor_sync(0xffffffffu, sm[h], 1);
        sm[h] += __shfl_xor_sync(0xffffffffu, sm[h], 2);
      }
      if (t == 0) stat[warp * MR + g] = sm[0], stat[warp * MR + g + 8] = sm[1];
      __syncthreads();
#pragma unroll
      for (int h = 0; h < 2; h++) {
        float a = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++) a += stat[w * MR + g + 8 * h];
        mean[h] = a / K;
      }
      float sq[2] = {0.0f, 0.0f};
#pragma unroll
      for (int u = 0; u < UK; u++)
        if (warp + u * NW < nch)
#pragma unroll
          for (int h = 0; h < 2; h++)
#pragma unroll
            for (int e = 0; e < 8; e++) {
              const float d = xr[u][h][e] - mean[h];
              sq[h] += d * d;
            }
#pragma unroll
      for (int h = 0; h < 2; h++) {
        sq[h] += __shfl_xor_sync(0xffffffffu, sq[h], 1);
        sq[h] += __shfl_xor_sync(0xffffffffu, sq[h], 2);
      }
      if (t == 0) stat[(NW + warp) * MR + g] = sq[0], stat[(NW + warp) * MR + g + 8] = sq[1];
      __syncthreads();
#pragma unroll
      for (int h = 0; h < 2; h++) {
        float a = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++) a += stat[(NW + w) * MR + g + 8 * h];
        rstd[h] = 1.0f / sqrtf(a / K + p.eps);
      }
#pragma unroll
      for (int u = 0; u < UK; u++) {
        uint4 v[2];
        if (warp + u * NW < nch) {
          float gf[8], hf[8];
          unpack8(gw[u], gf);
          unpack8(hw[u], hf);
#pragma unroll
          for (int h = 0; h < 2; h++) {
            float o[8];
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = (xr[u][h][e] - mean[h]) * rstd[h] * gf[e] + hf[e];
            v[h] = g + 8 * h < B ? make_uint4(pack2(o[0], o[1]), pack2(o[2], o[3]), pack2(o[4], o[5]), pack2(o[6], o[7]))
                                 : make_uint4(0, 0, 0, 0);
          }
        } else
          v[0] = v[1] = make_uint4(0, 0, 0, 0);
        alo[u] = v[0], ahi[u] = v[1];
      }
    } else {
#pragma unroll
      for (int u = 0; u < UK; u++) {
        const int c = warp + u * NW, k = c * 32 + 8 * t;
        alo[u] = c < nch && g < B ? ld_cg16(ab + (size_t)g * K + k) : make_uint4(0, 0, 0, 0);
        ahi[u] = c < nch && g + 8 < B ? ld_cg16(ab + (size_t)(g + 8) * K + k) : make_uint4(0, 0, 0, 0);
      }
    }
  } else if (NORM) {
    row_stats(p, mu, rs);
  }
  for (int task = blockIdx.x; task < ntask; task += gridDim.x) {
    const int j0 = task * TN, nj = min(TN, Gn - j0);
    float acc[TNM][4];
#pragma unroll
    for (int j = 0; j < TNM; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int c0 = warp; c0 < nch; c0 += UK * NW) {
      if (task != (int)blockIdx.x || c0 != warp) load_w(task, c0);
      if (!resident) {
#pragma unroll
        for (int u = 0; u < UK; u++) {
          const int c = c0 + u * NW, k = c * 32 + 8 * t;
          if (c < nch) {
            if constexpr (NORM) {
              alo[u] = norm8(p, g, k, nw, nb, mu, rs);
              ahi[u] = norm8(p, g + 8, k, nw, nb, mu, rs);
            } else {
              alo[u] = g < B ? ld_cg16(ab + (size_t)g * K + k) : make_uint4(0, 0, 0, 0);
              ahi[u] = g + 8 < B ? ld_cg16(ab + (size_t)(g + 8) * K + k) : make_uint4(0, 0, 0, 0);
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < UK; u++)
        if (c0 + u * NW < nch)
#pragma unroll
          for (int j = 0; j < TNM; j++)
            if (j < nj) tzc_mma_chunk(acc[j], alo[u], ahi[u], wv[u][j]);
    }
    float4 *r4 = reinterpret_cast<float4 *>(red);
#pragma unroll
    for (int j = 0; j < TNM; j++)
      if (j < nj) r4[(warp * TN_MAX + j) * 32 + lane] = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; i++) { /* one output of the task per thread and i: warps summed in order */
      const int q = threadIdx.x + i * NT;
      if (q >= nj * 128) continue;
      const int j = q >> 7, ln = (q >> 2) & 31, e = q & 3;
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < NW; w++) s += red[((w * TN_MAX + j) * 32 + ln) * 4 + e];
      int r, n;
      out_rc(j0, q, r, n);
      if (r >= B) continue;
      float b = pb[i], x = px[i];
      if (task != (int)blockIdx.x) {
        b = tzc_tof(bias[n]);
        if (RES) x = __ldcg(p.x + (size_t)r * p.C + n);
      }
      epi(r, n, RES ? x + (s + b) : s + b);
    }
    __syncthreads(); /* red is reused by the next task */
  }
}

/* ---- attention (phase B): block items (b, h, sb) of NW·CH = 256 keys, a warp 32 of them ----
 * Warp w of item (b, h, sb) takes keys [sb·256 + w·32, +32) ∩ [0, L), L = pos[b] + 1: LPK lanes hold
 * a key row (8 bf16 each; lanes with d0 ≥ hd hold zeros), KPW = 32 / LPK keys per load round, U
 * rounds' loads issued before the scores; the online softmax runs per round (one max, one
 * correction) and the warp's KPW key groups are merged by a butterfly. The block merges its warps
 * in warp order through shared memory (sm: [NW] m, [NW] l, [NW][hd] acc). One item for the row
 * (L ≤ 256): the block writes out. Else it writes its partial (m, l, acc) and the block that
 * finishes the last item of (b, h) (a counter per (b, h), reset by it) merges the ≤ 4 partials
 * in item order. Items are dealt with sb slowest, so that the first B·H blocks take the first
 * 256 keys of every (b, h). */
template <int LPK>
__device__ __forceinline__ void attention_phase(const Params &p, const Layer &ly, const int *spos, float *sm) {
  constexpr int KPW = 32 / LPK, R = CH / KPW, U = R < 8 ? R : 8, BK = NW * CH;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int kq = lane / LPK, d0 = (lane % LPK) * 8;
  const int hd = p.hd, kvrow = p.G * hd, rep = p.H / p.G, BH = p.B * p.H;
  const bool dv = d0 < hd;
  float *wm = sm, *wl = sm + NW, *wacc = sm + 2 * NW; /* wacc [NW][hd] */
  __shared__ int is_last;
  for (int it = blockIdx.x; it < BH * p.NSB; it += gridDim.x) {
    const int sb = it / BH, bh = it % BH, h = bh % p.H, b = bh / p.H;
    const int L = spos[b] + 1, nsp = (L + BK - 1) / BK;
    if (sb >= nsp) continue; /* uniform over the block */
    const int g = h / rep, j0 = sb * BK + warp * CH, j1 = min(L, j0 + CH);
    float q[8], acc[8], m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; e++) q[e] = 0.0f, acc[e] = 0.0f;
    if (j0 < j1) {
      if (dv) unpack8(ld_cg16(p.qkv + (size_t)b * p.Q + (size_t)h * hd + d0), q);
      const tzc_bf16 *kb = ly.kc + (size_t)b * p.maxT * kvrow + (size_t)g * hd + d0;
      const tzc_bf16 *vb = ly.vc + (size_t)b * p.maxT * kvrow + (size_t)g * hd + d0;
      for (int r0 = 0; r0 < R; r0 += U) {
        uint4 kr[U], vr[U];
#pragma unroll
        for (int u = 0; u < U; u++) { /* keys past j1 load key j1 - 1 again (a valid row), score −inf */
          const int jj = min(j0 + (r0 + u) * KPW + kq, j1 - 1);
          kr[u] = dv ? ld_cg16(kb + (size_t)jj * kvrow) : make_uint4(0, 0, 0, 0);
          vr[u] = dv ? ld_cg16(vb + (size_t)jj * kvrow) : make_uint4(0, 0, 0, 0);
        }
        float sc[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
          float kf[8], dot = 0.0f;
          unpack8(kr[u], kf);
#pragma unroll
          for (int e = 0; e < 8; e++) dot += q[e] * kf[e];
#pragma unroll
          for (int o = LPK / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
          sc[u] = j0 + (r0 + u) * KPW + kq < j1 ? dot * p.scale : -INFINITY;
        }
        float mx = m;
#pragma unroll
        for (int u = 0; u < U; u++) mx = fmaxf(mx, sc[u]);
        if (mx != -INFINITY) {
          const float corr = expf(m - mx); /* 0 while m = −inf */
          l *= corr;
#pragma unroll
          for (int e = 0; e < 8; e++) acc[e] *= corr;
#pragma unroll
          for (int u = 0; u < U; u++) {
            const float pr = expf(sc[u] - mx);
            float vf[8];
            unpack8(vr[u], vf);
            l += pr;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[e] += pr * vf[e];
          }
          m = mx;
        }
      }
#pragma unroll
      for (int o = LPK; o < 32; o <<= 1) { /* the warp's key groups, merged (group 0's lanes keep it) */
        const float om = __shfl_xor_sync(0xffffffffu, m, o), ol = __shfl_xor_sync(0xffffffffu, l, o);
        const float mm = fmaxf(m, om);
        const float wa = l > 0.0f ? expf(m - mm) : 0.0f, wb = ol > 0.0f ? expf(om - mm) : 0.0f;
        l = l * wa + ol * wb;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[e] = acc[e] * wa + __shfl_xor_sync(0xffffffffu, acc[e], o) * wb;
        m = mm;
      }
    }
    if (lane == 0) wm[warp] = m, wl[warp] = l;
    if (kq == 0 && dv)
#pragma unroll
      for (int e = 0; e < 8; e++) wacc[warp * hd + d0 + e] = acc[e];
    __syncthreads();
    /* the block's warps in order: M, lb, and thread d's acc (every thread: the same M, lb) */
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < NW; w++) M = fmaxf(M, wm[w]);
    float lb = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; w++) lb += wl[w] > 0.0f ? wl[w] * expf(wm[w] - M) : 0.0f;
    tzc_bf16 *orow = p.att + (size_t)b * p.C + (size_t)h * hd;
    const size_t ps = (size_t)hd + 2;
    float *pp = p.part + ((size_t)bh * p.NSB + sb) * ps;
    for (int d = threadIdx.x; d < hd; d += NT) {
      float a = 0.0f;
#pragma unroll
      for (int w = 0; w < NW; w++) a += wl[w] > 0.0f ? wacc[w * hd + d] * expf(wm[w] - M) : 0.0f;
      if (nsp == 1) orow[d] = tzc_from<tzc_bf16>(a / lb);
      else pp[2 + d] = a;
    }
    if (nsp > 1) {
      if (threadIdx.x == 0) pp[0] = M, pp[1] = lb;
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) is_last = atomicAdd(&p.cnt[bh], 1u) == (unsigned)(nsp - 1);
      __syncthreads();
      if (is_last) {
        __threadfence();
        const float *p0 = p.part + (size_t)bh * p.NSB * ps;
        float MM = -INFINITY;
        for (int t = 0; t < nsp; t++) MM = fmaxf(MM, __ldcg(p0 + t * ps));
        float LL = 0.0f;
        for (int t = 0; t < nsp; t++) LL += __ldcg(p0 + t * ps + 1) * expf(__ldcg(p0 + t * ps) - MM);
        for (int d = threadIdx.x; d < hd; d += NT) {
          float a = 0.0f;
          for (int t = 0; t < nsp; t++) a += __ldcg(p0 + t * ps + 2 + d) * expf(__ldcg(p0 + t * ps) - MM);
          orow[d] = tzc_from<tzc_bf16>(a / LL);
        }
        if (threadIdx.x == 0) p.cnt[bh] = 0u; /* ready for the next layer / launch */
      }
    }
    __syncthreads(); /* sm and is_last are reused by the next item */
  }
}

/* ---- the kernel ---- */
template <int LPK>
__global__ void __launch_bounds__(NT, 1) decode_step_k(const __grid_constant__ Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  float *red = reinterpret_cast<float *>(smem);       /* [NW][TN_MAX][32][4]; attention's merge too */
  float *mu = red + NW * TN_MAX * 128, *rs = mu + MR; /* [MR] each */
  float *stat = rs + MR;                              /* [2][NW][MR] */
  int *spos = reinterpret_cast<int *>(stat + 2 * NW * MR); /* [MR] */
  tzc_bf16 *act = reinterpret_cast<tzc_bf16 *>(spos + MR); /* F: [MR][C + pad] */
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, tq = lane & 3;
  const int C = p.C, B = p.B;
  unsigned bi = 0; /* barriers passed in this launch */
  if (p.trace && blockIdx.x == 0 && threadIdx.x == 0) p.trace[1] = globaltimer();
  const int astr = C + ((16 - (C / 2) % 32 + 32) % 32) * 2; /* row stride: 16 banks apart (conflict-free) */
  for (int i = threadIdx.x; i < MR * astr / 8; i += NT) reinterpret_cast<uint4 *>(act)[i] = make_uint4(0, 0, 0, 0);
  if (threadIdx.x < MR) spos[threadIdx.x] = threadIdx.x < B ? p.pos[threadIdx.x] : 0;
  __syncthreads();

  /* phase 0: the embeddings (a token outside the vocabulary gives a zero row, as embed_pos_fwd) */
  prefetch_mm(p, p.layer[0].qw, p.Q, C, p.tn_qkv);
  for (int i = blockIdx.x * NT + threadIdx.x; i < B * C; i += gridDim.x * NT) {
    const int b = i / C, c = i % C, tk = p.tok[b];
    p.x[i] = tk >= 0 && tk < p.V ? tzc_tof(p.wte[(size_t)tk * C + c]) + tzc_tof(p.wpe[(size_t)spos[b] * C + c]) : 0.0f;
  }
  const int hq = p.H * p.hd, kv = p.G * p.hd;
  for (int l = 0; l < p.L; l++) {
    const Layer ly = p.layer[l];
    /* A: qkv = LN1(x)·Wqkvᵀ + b; k and v go straight to the cache row pos[b] */
    mm_phase<TN_MAX, 3, true, false>(
        p, ly.qw, p.Q, C, p.tn_qkv, nullptr, ly.n1w, ly.n1b, ly.qb, [&] { grid_sync(p, bi); },
        [&](int r, int n, float v) {
          const tzc_bf16 o = tzc_from<tzc_bf16>(v);
          if (n < hq) p.qkv[(size_t)r * p.Q + n] = o;
          else if (n < hq + kv) ly.kc[((size_t)r * p.maxT + spos[r]) * kv + (n - hq)] = o;
          else ly.vc[((size_t)r * p.maxT + spos[r]) * kv + (n - hq - kv)] = o;
        },
        red, stat, mu, rs);
    /* B: attention */
    prefetch_mm(p, ly.pw, C, C, 1);
    grid_sync(p, bi);
    attention_phase<LPK>(p, ly, spos, red);
    /* C: x += att·Wprojᵀ + b */
    prefetch_mm(p, ly.fw, p.F, C, p.tn_fc);
    mm_phase<1, 6, false, true>(
        p, ly.pw, C, C, 1, p.att, nullptr, nullptr, ly.pb, [&] { grid_sync(p, bi); },
        [&](int r, int n, float v) { p.x[(size_t)r * C + n] = v; }, red, stat, mu, rs);
    /* D: h = gelu(round(LN2(x)·Wfcᵀ + b)) */
    prefetch_mm(p, ly.f2w, C, p.F, 1);
    mm_phase<TN_MAX, 3, true, false>(
        p, ly.fw, p.F, C, p.tn_fc, nullptr, ly.n2w, ly.n2b, ly.fb, [&] { grid_sync(p, bi); },
        [&](int r, int n, float v) { p.h[(size_t)r * p.F + n] = tzc_from<tzc_bf16>(tzc_gelu_fwd1(tzc_tof(tzc_from<tzc_bf16>(v)))); },
        red, stat, mu, rs);
    /* E: x += h·Wfcprojᵀ + b */
    if (l + 1 < p.L) prefetch_mm(p, p.layer[l + 1].qw, p.Q, C, p.tn_qkv);
    else if (p.pf && lane == 0 && warp * gridDim.x + blockIdx.x < p.Vp / 8) /* this warp's first 8 lm_head rows */
      l2_prefetch1(p.lm + (size_t)(warp * gridDim.x + blockIdx.x) * 8 * C, (unsigned)(8 * C * sizeof(tzc_bf16)));
    mm_phase<1, 6, false, true>(
        p, ly.f2w, C, p.F, 1, p.h, nullptr, nullptr, ly.f2b, [&] { grid_sync(p, bi); },
        [&](int r, int n, float v) { p.x[(size_t)r * C + n] = v; }, red, stat, mu, rs);
  }
  /* F: logits = LNf(x)·wteᵀ; the normalized rows staged once per block, the first weights
   * requested before the barrier */
  const int nch = C / 32, Gn = p.Vp / 8, jg0 = warp * gridDim.x + blockIdx.x;
  uint4 wv[UL];
  auto load_lm = [&](int jg, int c0) {
    const tzc_bf16 *wr = p.lm + (size_t)(jg * 8 + gq) * C + 8 * tq;
#pragma unroll
    for (int u = 0; u < UL; u++)
      if (c0 + u < nch) wv[u] = ld_ro16(wr + (c0 + u) * 32);
  };
  if (jg0 < Gn) load_lm(jg0, 0);
  grid_sync(p, bi);
  row_stats(p, mu, rs);
  for (int i = threadIdx.x; i < B * (C / 8); i += NT) {
    const int r = i / (C / 8), k = (i % (C / 8)) * 8;
    *reinterpret_cast<uint4 *>(act + (size_t)r * astr + k) = norm8(p, r, k, p.nfw, p.nfb, mu, rs);
  }
  __syncthreads();
  for (int jg = jg0; jg < Gn; jg += gridDim.x * NW) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int c0 = 0; c0 < nch; c0 += UL) {
      if (jg != jg0 || c0 != 0) load_lm(jg, c0);
#pragma unroll
      for (int u = 0; u < UL; u++)
        if (c0 + u < nch) {
          const int k = (c0 + u) * 32 + 8 * tq;
          const uint4 alo = *reinterpret_cast<const uint4 *>(act + (size_t)gq * astr + k);
          const uint4 ahi = *reinterpret_cast<const uint4 *>(act + (size_t)(gq + 8) * astr + k);
          tzc_mma_chunk(acc, alo, ahi, wv[u]);
        }
    }
    const int n = jg * 8 + 2 * tq;
    if (gq < B) *reinterpret_cast<unsigned *>(p.logits + (size_t)gq * p.Vp + n) = pack2(acc[0], acc[1]);
    if (gq + 8 < B) *reinterpret_cast<unsigned *>(p.logits + (size_t)(gq + 8) * p.Vp + n) = pack2(acc[2], acc[3]);
  }
  if (p.trace && blockIdx.x == 0) {
    __syncthreads();
    if (threadIdx.x == 0) p.trace[2 * (bi + 1)] = globaltimer(); /* block 0 done */
  }
}

/* ---- host side ---- */
/* The backend's decode_step state (tzc_ctx.step): device buffers sized for the model it was made
 * for, the layer table (uploaded when the model's pointers change), the launch geometry. */
struct State {
  int C, Q, F, H, hd, Vp, NSB, L;
  float *x, *part;
  tzc_bf16 *qkv, *att, *h;
  unsigned *cnt, *bar;
  Layer *dlayer;
  Layer *hlayer; /* host copy of what dlayer holds */
  int grid;
  size_t smem;
  void *fn;
  unsigned launches; /* kernels queued with this state: the next launch's epoch (grid_sync) */
  int pf;            /* TEZGAH_CUDA_STEP_PF=0 at the state's making: no L2 prefetch (an A/B) */
  unsigned long long *dtrace; /* TEZGAH_CUDA_STEP_TRACE=1: the kernel's barrier times, summed per */
  double tsum[8], tn;         /* phase kind (0, A, B, C, D, E, F; arrive → leave as 7) over tn launches */
  long long bytes;            /* device bytes held (x .. dlayer), counted in mem_used / mem_peak */
};

/* TEZGAH_CUDA_STEP_TRACE=1: block 0's time in each kind of phase, µs per step (stderr). */
void trace_report(const State *s) {
  if (!s->dtrace || s->tn < 1) return;
  static const char *nm[8] = {"embed", "A qkv", "B attention", "C proj", "D fc", "E fcproj", "F lm_head", "barrier waits"};
  fprintf(stderr, "cuda: decode_step trace (block 0, %.0f steps, µs per step):", s->tn);
  for (int k = 0; k < 8; k++) fprintf(stderr, " %s %.1f;", nm[k], s->tsum[k] / s->tn);
  fprintf(stderr, "\n");
}
void trace_add(State *s, cudaStream_t st) {
  const int n = 2 * (5 * s->L + 2) + 1;
  unsigned long long h[2 * (5 * 64 + 2) + 1];
  if (n > (int)(sizeof h / sizeof *h)) return;
  TZC_CHECK(cudaMemcpyAsync(h, s->dtrace, (size_t)n * 8, cudaMemcpyDeviceToHost, st));
  TZC_CHECK(cudaStreamSynchronize(st));
  /* h[1]: start; barrier i (1..nbar): arrive h[2i], leave h[2i+1]; h[2(nbar+1)]: end. Phase after
   * barrier i: kind 1 + (i − 1) % 5 for i ≤ 5L, F for the last; embed: start → barrier 1. */
  const int nbar = 5 * s->L + 1;
  s->tsum[0] += (double)(h[2] - h[1]) * 1e-3;
  for (int i = 1; i <= nbar; i++) {
    const unsigned long long end = i < nbar ? h[2 * (i + 1)] : h[2 * (nbar + 1)];
    s->tsum[i < nbar ? 1 + (i - 1) % 5 : 6] += (double)(end - h[2 * i + 1]) * 1e-3;
    s->tsum[7] += (double)(h[2 * i + 1] - h[2 * i]) * 1e-3;
  }
  s->tn += 1;
  if ((long)s->tn % 200 == 0) trace_report(s); /* a quick exit never frees the state */
}

void state_free(State *s) {
  if (!s) return;
  trace_report(s);
  cudaFree(s->dtrace);
  cudaFree(s->x), cudaFree(s->part), cudaFree(s->qkv), cudaFree(s->att), cudaFree(s->h), cudaFree(s->cnt),
      cudaFree(s->bar), cudaFree(s->dlayer);
  free(s->hlayer);
  free(s);
}

int pick_tn(int N, int grid) {
  const int Gn = N / 8;
  int tn = (Gn + grid - 1) / grid;
  return tn < 1 ? 1 : tn > TN_MAX ? TN_MAX : tn;
}
} // namespace

extern "C" void tzc_decode_step_free(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  if (c->step) tzc_mem_account(be, -((State *)c->step)->bytes);
  state_free((State *)c->step);
  c->step = NULL;
}

extern "C" int tzc_decode_step(tz_backend *be, const tz_step_desc *d, int B) {
  tzc_ctx *c = tzc(be);
  if (c->act != TZ_BF16 || c->cc_major < 8 || B < 1 || B > MR) return 0;
  const int C = d->d_model, H = d->n_head, G = d->n_kv_head, hd = d->head_dim, F = d->d_ff, Vp = d->padded_vocab;
  const int Q = (H + 2 * G) * hd, NSB = (d->max_T + NW * CH - 1) / (NW * CH);
  /* what the kernel takes: 32-element K chunks, 8-column groups, 16-byte rows, C ≤ 1,024 in the
   * norm's registers, head_dim 32 / 64 / 128 */
  if (C % 32 || F % 32 || C > 32 * 4 * CPL || H * hd != C || H % G || Q % 8 || Vp % 8 ||
      !(hd == 32 || hd == 64 || hd == 128) || d->n_layer < 1)
    return 0;
  const void *ptrs[] = {tzc_w(be, d->wte), tzc_w(be, d->wpe), tzc_w(be, d->normf_w), tzc_w(be, d->normf_b),
                        tzc_w(be, d->lm_head), tzc_ptr(d->logits), tzc_ptr(d->tokens), tzc_ptr(d->pos)};
  for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++)
    if (!ptrs[i] || !tzc_aligned16(ptrs[i])) return 0;
  State *s = (State *)c->step;
  if (s && (s->C != C || s->Q != Q || s->F != F || s->H != H || s->hd != hd || s->Vp != Vp || s->NSB != NSB ||
            s->L != d->n_layer)) {
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    tzc_mem_account(be, -s->bytes);
    state_free(s);
    c->step = s = NULL;
  }
  Layer *hl = (Layer *)calloc((size_t)d->n_layer, sizeof(Layer));
  for (int l = 0; l < d->n_layer; l++) {
    const tz_step_layer *y = &d->layer[l];
    Layer v = {(const tzc_bf16 *)tzc_w(be, y->norm1_w),  (const tzc_bf16 *)tzc_w(be, y->norm1_b),
               (const tzc_bf16 *)tzc_w(be, y->qkv_w),    (const tzc_bf16 *)tzc_w(be, y->qkv_b),
               (const tzc_bf16 *)tzc_w(be, y->proj_w),   (const tzc_bf16 *)tzc_w(be, y->proj_b),
               (const tzc_bf16 *)tzc_w(be, y->norm2_w),  (const tzc_bf16 *)tzc_w(be, y->norm2_b),
               (const tzc_bf16 *)tzc_w(be, y->fc_w),     (const tzc_bf16 *)tzc_w(be, y->fc_b),
               (const tzc_bf16 *)tzc_w(be, y->fcproj_w), (const tzc_bf16 *)tzc_w(be, y->fcproj_b),
               (tzc_bf16 *)tzc_ptr(y->kcache),           (tzc_bf16 *)tzc_ptr(y->vcache)};
    const void *lp[] = {v.n1w, v.n1b, v.qw, v.qb, v.pw, v.pb, v.n2w, v.n2b, v.fw, v.fb, v.f2w, v.f2b, v.kc, v.vc};
    for (size_t i = 0; i < sizeof lp / sizeof *lp; i++)
      if (!lp[i] || !tzc_aligned16(lp[i])) return free(hl), 0;
    hl[l] = v;
  }
  if (!s) {
    const void *fn = hd == 32 ? (const void *)decode_step_k<4> : hd == 64 ? (const void *)decode_step_k<8>
                                                                           : (const void *)decode_step_k<16>;
    const int astr = C + ((16 - (C / 2) % 32 + 32) % 32) * 2;
    const size_t smem = (size_t)NW * TN_MAX * 128 * 4 + 2 * MR * 4 + 2 * NW * MR * 4 + MR * 4 + (size_t)MR * astr * 2;
    int per_sm = 0;
    if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, NT, smem) != cudaSuccess || per_sm < 1) {
      cudaGetLastError();
      free(hl);
      return 0;
    }
    s = (State *)calloc(1, sizeof *s);
    s->C = C, s->Q = Q, s->F = F, s->H = H, s->hd = hd, s->Vp = Vp, s->NSB = NSB, s->L = d->n_layer;
    s->grid = c->sm_count, s->smem = smem, s->fn = (void *)fn;
    TZC_CHECK(cudaMalloc(&s->x, (size_t)MR * C * 4));
    TZC_CHECK(cudaMalloc(&s->part, (size_t)MR * H * NSB * (hd + 2) * 4));
    TZC_CHECK(cudaMalloc(&s->qkv, (size_t)MR * Q * 2));
    TZC_CHECK(cudaMalloc(&s->att, (size_t)MR * C * 2));
    TZC_CHECK(cudaMalloc(&s->h, (size_t)MR * F * 2));
    TZC_CHECK(cudaMalloc(&s->cnt, (size_t)MR * H * 4));
    TZC_CHECK(cudaMalloc(&s->bar, 2 * 4));
    TZC_CHECK(cudaMalloc(&s->dlayer, (size_t)d->n_layer * sizeof(Layer)));
    s->bytes = (long long)((size_t)MR * C * 4 + (size_t)MR * H * NSB * (hd + 2) * 4 + (size_t)MR * Q * 2 +
                           (size_t)MR * C * 2 + (size_t)MR * F * 2 + (size_t)MR * H * 4 + 2 * 4 +
                           (size_t)d->n_layer * sizeof(Layer));
    const char *pf = getenv("TEZGAH_CUDA_STEP_PF"), *tr = getenv("TEZGAH_CUDA_STEP_TRACE");
    s->pf = !(pf && !strcmp(pf, "0"));
    if (tr && !strcmp(tr, "1")) {
      const size_t tb = ((size_t)2 * (5 * d->n_layer + 2) + 1) * 8;
      TZC_CHECK(cudaMalloc(&s->dtrace, tb));
      s->bytes += (long long)tb;
    }
    tzc_mem_account(be, s->bytes);
    TZC_CHECK(cudaMemsetAsync(s->cnt, 0, (size_t)MR * H * 4, c->stream));
    TZC_CHECK(cudaMemsetAsync(s->bar, 0, 2 * 4, c->stream));
    c->step = s;
    if (c->verbose)
      fprintf(stderr, "cuda: decode_step: one persistent kernel a step (%d blocks of %d threads, %zu bytes of shared memory)\n",
              s->grid, NT, smem);
  }
  if (!s->hlayer || memcmp(s->hlayer, hl, (size_t)d->n_layer * sizeof(Layer))) {
    /* the layer table changes only with the model: upload and wait (hl must outlive the copy) */
    TZC_CHECK(cudaMemcpyAsync(s->dlayer, hl, (size_t)d->n_layer * sizeof(Layer), cudaMemcpyHostToDevice, c->stream));
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    free(s->hlayer);
    s->hlayer = hl;
  } else
    free(hl);
  TZC_PROF(be, "decode_step");
  Params p;
  p.B = B, p.C = C, p.H = H, p.G = G, p.hd = hd, p.Q = Q, p.F = F, p.V = d->vocab, p.Vp = Vp, p.maxT = d->max_T, p.L = d->n_layer;
  p.NSB = NSB, p.eps = d->eps, p.scale = 1.0f / sqrtf((float)hd);
  p.tn_qkv = pick_tn(Q, s->grid), p.tn_fc = pick_tn(F, s->grid);
  p.pf = s->pf;
  p.tok = (const int *)tzc_ptr(d->tokens), p.pos = (const int *)tzc_ptr(d->pos);
  p.wte = (const tzc_bf16 *)tzc_w(be, d->wte), p.wpe = (const tzc_bf16 *)tzc_w(be, d->wpe);
  p.nfw = (const tzc_bf16 *)tzc_w(be, d->normf_w), p.nfb = (const tzc_bf16 *)tzc_w(be, d->normf_b);
  p.lm = (const tzc_bf16 *)tzc_w(be, d->lm_head);
  p.layer = s->dlayer, p.x = s->x, p.qkv = s->qkv, p.att = s->att, p.h = s->h;
  p.logits = (tzc_bf16 *)tzc_ptr(d->logits), p.part = s->part, p.cnt = s->cnt, p.bar = s->bar;
  p.epoch = s->launches++, p.nbar = 5u * (unsigned)d->n_layer + 1u;
  p.trace = s->dtrace;
  void *args[] = {&p};
  TZC_CHECK(cudaLaunchCooperativeKernel(s->fn, dim3(s->grid), dim3(NT), args, s->smem, c->stream));
  if (s->dtrace) trace_add(s, c->stream); /* waits for the step: a diagnosis, not a measurement of speed */
  return 1;
}
