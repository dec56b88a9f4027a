/* Decoding attention on CUDA (backend.h's attention_decode): one query row per (row b, head h)
 * against that row's KV cache, the new key/value appended in the same launch. Math as
 * attention_cpu.c (the reference) with Tq = 1 at q_pos0 = pos[b]: s_j = q·k_j/√hd over keys
 * j = 0..pos[b], out = Σ softmax(s)_j v_j; GQA kv head g = h / (n_head / n_kv_head).
 *
 * Why its own kernel: the SIMT fallback of attention.cu gives a decoding row one warp (12 warps
 * for GPT-2 124M: 3 of the H200's 132 SMs), and the host path needs the position as a kernel
 * argument and two copy_rows launches per layer. Here the position comes from device memory
 * (so a recorded step replays at the next position) and the cache length is split over blocks.
 *
 * Grid (split s, head h, row b), DEC_WARPS warps a block. Split s owns keys [s·DEC_CHUNK,
 * (s+1)·DEC_CHUNK) ∩ [0, pos[b]]; blocks past pos[b] return at once (the grid is sized for
 * max_T so that it does not depend on the position). Warp w takes keys s·DEC_CHUNK + w,
 * + DEC_WARPS, ... in increasing order: the scores of KU keys at once (loads, lane-split dot
 * products and butterfly sums side by side: one wait for memory per KU keys), then an
 * online-softmax update of (m, l, acc[hd]) per key in key order (lane = dims lane, lane + 32, ...).
 * The block merges its warps in warp order. One split: the block writes out. Several: each
 * writes its (m, l, acc) to a partial buffer, and the last block of (b, h) to finish (a counter
 * per (b, h), reset by that block) merges the partials in split order. The new key (j = pos[b])
 * is read from qkv, and the block that owns it (for the first query head of each kv group)
 * writes k and v into the cache; no block reads cache row pos[b] in this launch.
 * No floating-point atomics, merge orders fixed: bit-identical run to run, and row b's result
 * does not depend on B (batch-invariant). fp32 math on either act dtype. While a decoding step
 * is recorded it is launched with programmatic dependent launch (cuda_pdl.cuh's tzc_pdl_*,
 * as gemv.cu's kernels): its launch overlaps the previous kernel's tail, and the next kernel's
 * launch and weight loads overlap its own.
 *
 * Two kernels share that plan. attn_decode_v (the default where rows are 16-byte aligned: head_dim
 * and the cache / qkv row lengths multiples of 16 bytes' worth of T, head_dim ≤ 32 such vectors):
 * LPK lanes hold one key row (16-byte loads: at head_dim 64 in bf16 8 lanes a key, 4 keys per
 * warp per load), U = 4 rounds of loads in flight per lane, the dot product summed over the LPK
 * lanes by a butterfly, one online-softmax update per round of U keys (one max, one correction),
 * then the warp's key groups merged by a butterfly (lanes LPK, 2·LPK, ... apart; the values of
 * the lanes of group 0 are kept). attn_decode_k (TEZGAH_CUDA_DEC_VEC=0, or unaligned shapes):
 * one key per warp, a lane per dimension (lane, lane + 32, ...), scalar loads, the round-1 form.
 * The last block of (b, h) merges the partials through shared memory (their (m, l) loaded by
 * one thread each, the weights exp(m_t − M) computed once, the sums over t in split order with
 * 8 loads in flight): the same sums in the same order as a serial loop over t.
 * Keys per block (dec_chunk): 32 when B ≤ tzc_gemv_max_m() (the few-row regime, where the
 * matmuls are gemv_k), else 64; TEZGAH_CUDA_DEC_CHUNK overrides. A row's result depends on the
 * chunk, so it is the same for every B within a regime (as the matmuls: gemv_k below the
 * crossover, mma_k above) but not across the crossover. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_pdl.cuh"

namespace {
constexpr int DEC_WARPS = 4;
constexpr int DEC_CHUNK = 64; /* keys per block (the default of TEZGAH_CUDA_DEC_CHUNK) */

constexpr int DEC_MERGE_MAX = 256; /* splits merged through shared memory (more: one at a time) */

/* The block's end, shared by both kernels: the DEC_WARPS warps' (m, l, acc[0..hd)) are in wm,
 * wl, wacc (row w at wacc + w·ws; a warp without keys has m = −inf, l = 0: weight 0), merged in
 * warp order. One split (nsp = 1): the block writes out. Several: the block writes its partial
 * (m, l, acc) and the last block of (b, h) to finish merges the nsp partials in split order. */
template <class T>
__device__ __forceinline__ void dec_finish(const float *wm, const float *wl, const float *wacc, int ws, T *orow,
                                           float *part, unsigned *cnt, size_t bh, int nsplit, int nsp, int s, int hd) {
  __shared__ int is_last;
  __shared__ float sm[DEC_MERGE_MAX], sl[DEC_MERGE_MAX], sw[DEC_MERGE_MAX];
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < DEC_WARPS; w++) M = fmaxf(M, wm[w]);
  float lb = 0.0f;
#pragma unroll
  for (int w = 0; w < DEC_WARPS; w++) lb += wl[w] > 0.0f ? wl[w] * expf(wm[w] - M) : 0.0f;
  if (nsp == 1) {
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float a = 0.0f;
#pragma unroll
      for (int w = 0; w < DEC_WARPS; w++) a += wl[w] > 0.0f ? wacc[w * ws + d] * expf(wm[w] - M) : 0.0f;
      orow[d] = tzc_from<T>(a / lb);
    }
    return;
  }
  float *pp = part + (bh * nsplit + s) * (size_t)(hd + 2);
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float a = 0.0f;
#pragma unroll
    for (int w = 0; w < DEC_WARPS; w++) a += wl[w] > 0.0f ? wacc[w * ws + d] * expf(wm[w] - M) : 0.0f;
    pp[2 + d] = a;
  }
  if (threadIdx.x == 0) pp[0] = M, pp[1] = lb;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) is_last = atomicAdd(&cnt[bh], 1u) == (unsigned)(nsp - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  /* the last block: merge the nsp partials in split order (every split has ≥ 1 key: l > 0) */
  const float *p0 = part + bh * nsplit * (size_t)(hd + 2);
  const size_t ps = (size_t)(hd + 2);
  if (nsp <= DEC_MERGE_MAX) {
    for (int t = threadIdx.x; t < nsp; t += blockDim.x) sm[t] = __ldcg(p0 + t * ps), sl[t] = __ldcg(p0 + t * ps + 1);
    __syncthreads();
    float MM = -INFINITY;
    for (int t = 0; t < nsp; t++) MM = fmaxf(MM, sm[t]);
    for (int t = threadIdx.x; t < nsp; t += blockDim.x) sw[t] = expf(sm[t] - MM);
    __syncthreads();
    float LL = 0.0f;
    for (int t = 0; t < nsp; t++) LL += sl[t] * sw[t];
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float a = 0.0f;
#pragma unroll 8
      for (int t = 0; t < nsp; t++) a += __ldcg(p0 + t * ps + 2 + d) * sw[t];
      orow[d] = tzc_from<T>(a / LL);
    }
  } else {
    float MM = -INFINITY;
    for (int t = 0; t < nsp; t++) MM = fmaxf(MM, __ldcg(p0 + t * ps));
    float LL = 0.0f;
    for (int t = 0; t < nsp; t++) LL += __ldcg(p0 + t * ps + 1) * expf(__ldcg(p0 + t * ps) - MM);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float a = 0.0f;
      for (int t = 0; t < nsp; t++) a += __ldcg(p0 + t * ps + 2 + d) * expf(__ldcg(p0 + t * ps) - MM);
      orow[d] = tzc_from<T>(a / LL);
    }
  }
  if (threadIdx.x == 0) cnt[bh] = 0u; /* ready for the next launch */
}

template <class T, int NPL>
__global__ void __launch_bounds__(DEC_WARPS * 32)
    attn_decode_k(T *__restrict__ out, T *__restrict__ kc, T *__restrict__ vc, const T *__restrict__ qkv,
                  const int *__restrict__ pos, float *__restrict__ part, unsigned *__restrict__ cnt, int H, int rep,
                  int hd, int qs, int kvrow, int maxT, int nsplit, int chunk, float scale) {
  __shared__ float qsh[32 * NPL];
  __shared__ float wm[DEC_WARPS], wl[DEC_WARPS];
  __shared__ float wacc[DEC_WARPS][32 * NPL];
  /* PDL (while a step is recorded): the next kernel may start; everything below (qkv, the cache,
   * the partials) was written by earlier kernels of the chain, so wait first, in every block */
  tzc_pdl_let_next_start();
  tzc_pdl_wait_prior();
  const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int P = pos[b], L = P + 1, nsp = (L + chunk - 1) / chunk;
  const int g = h / rep;
  const T *qrow = qkv + (size_t)b * qs;
  const T *knew = qrow + (size_t)(H + g) * hd;                  /* k of the new position */
  const T *vnew = qrow + (size_t)(H + H / rep + g) * hd;        /* v: after n_kv_head k heads */
  T *kb = kc + (size_t)b * maxT * kvrow + (size_t)g * hd, *vb = vc + (size_t)b * maxT * kvrow + (size_t)g * hd;
  if (s == P / chunk && h % rep == 0)
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      kb[(size_t)P * kvrow + d] = knew[d];
      vb[(size_t)P * kvrow + d] = vnew[d];
    }
  if (s >= nsp) return; /* whole block */
  for (int d = threadIdx.x; d < hd; d += blockDim.x) qsh[d] = tzc_tof(qrow[(size_t)h * hd + d]);
  __syncthreads();
  float m = -INFINITY, l = 0.0f, acc[NPL];
#pragma unroll
  for (int i = 0; i < NPL; i++) acc[i] = 0.0f;
  /* KU keys at a time (j, j + DEC_WARPS, ...): their loads, dot products and butterfly sums are
   * independent, so a warp waits for memory once per KU keys instead of once per key; the
   * online-softmax updates then run one key after the other in increasing j as before. Keys
   * past j1 load key j1 - 1 again (a valid row) and are not added. */
  constexpr int KU = NPL <= 2 ? 8 : NPL == 4 ? 4 : 2;
  const int j1 = min(L, (s + 1) * chunk);
  for (int j = s * chunk + warp; j < j1; j += KU * DEC_WARPS) {
    float sc[KU], vv[KU][NPL];
#pragma unroll
    for (int u = 0; u < KU; u++) {
      const int jj = min(j + u * DEC_WARPS, j1 - 1);
      const T *kr = jj == P ? knew : kb + (size_t)jj * kvrow;
      const T *vr = jj == P ? vnew : vb + (size_t)jj * kvrow;
      float kv[NPL];
#pragma unroll
      for (int i = 0; i < NPL; i++) {
        const int d = lane + 32 * i;
        kv[i] = d < hd ? tzc_tof(kr[d]) : 0.0f;
        vv[u][i] = d < hd ? tzc_tof(vr[d]) : 0.0f;
      }
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < NPL; i++) dot += (lane + 32 * i < hd ? qsh[lane + 32 * i] : 0.0f) * kv[i];
      sc[u] = dot;
    }
#pragma unroll
    for (int u = 0; u < KU; u++) sc[u] = tzc_warp_sum(sc[u]) * scale;
#pragma unroll
    for (int u = 0; u < KU; u++) {
      if (j + u * DEC_WARPS >= j1) break;
      const float mn = fmaxf(m, sc[u]);
      const float corr = expf(m - mn); /* 0 on the first key (m = −inf) */
      const float p = expf(sc[u] - mn);
      l = l * corr + p;
#pragma unroll
      for (int i = 0; i < NPL; i++) acc[i] = acc[i] * corr + p * vv[u][i];
      m = mn;
    }
  }
  if (lane == 0) wm[warp] = m, wl[warp] = l;
#pragma unroll
  for (int i = 0; i < NPL; i++)
    if (lane + 32 * i < hd) wacc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  dec_finish<T>(wm, wl, &wacc[0][0], 32 * NPL, out + ((size_t)b * H + h) * hd, part, cnt, (size_t)b * H + h, nsplit,
                nsp, s, hd);
}

/* The vectorised form (see the top): LPK lanes a key row, VEC = 16 / sizeof(T) elements a lane
 * (lanes with d0 = (lane % LPK)·VEC ≥ hd hold zeros), KPW = 32 / LPK keys per warp per load.
 * Block (s, h, b) takes keys [j0, j1) = [s·chunk, min(L, (s + 1)·chunk)); warp w, key group kq
 * = lane / LPK: keys j0 + w·KPW + kq + r·DEC_WARPS·KPW for r = 0, 1, ..., U rounds' loads at
 * once. Needs (the host checks): hd, kvrow and qs multiples of VEC, hd ≤ 32·VEC, qkv, kc, vc
 * 16-byte aligned. */
template <class T, int LPK>
__global__ void __launch_bounds__(DEC_WARPS * 32)
    attn_decode_v(T *__restrict__ out, T *__restrict__ kc, T *__restrict__ vc, const T *__restrict__ qkv,
                  const int *__restrict__ pos, float *__restrict__ part, unsigned *__restrict__ cnt, int H, int rep,
                  int hd, int qs, int kvrow, int maxT, int nsplit, int chunk, float scale) {
  constexpr int VEC = 16 / (int)sizeof(T), KPW = 32 / LPK, HDX = LPK * VEC, U = 4, STEP = DEC_WARPS * KPW;
  __shared__ float wm[DEC_WARPS], wl[DEC_WARPS];
  __shared__ __align__(16) float wacc[DEC_WARPS][HDX];
  tzc_pdl_let_next_start(); /* as attn_decode_k: everything read below was written earlier */
  tzc_pdl_wait_prior();
  const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int P = pos[b], L = P + 1, nsp = (L + chunk - 1) / chunk;
  const int g = h / rep;
  const T *qrow = qkv + (size_t)b * qs;
  const T *knew = qrow + (size_t)(H + g) * hd;
  const T *vnew = qrow + (size_t)(H + H / rep + g) * hd;
  T *kb = kc + (size_t)b * maxT * kvrow + (size_t)g * hd, *vb = vc + (size_t)b * maxT * kvrow + (size_t)g * hd;
  if (s == P / chunk && h % rep == 0)
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      kb[(size_t)P * kvrow + d] = knew[d];
      vb[(size_t)P * kvrow + d] = vnew[d];
    }
  if (s >= nsp) return; /* whole block */
  const int kq = lane / LPK, d0 = (lane % LPK) * VEC;
  const bool dv = d0 < hd;
  float q[VEC], m = -INFINITY, l = 0.0f, acc[VEC];
#pragma unroll
  for (int e = 0; e < VEC; e++) q[e] = 0.0f, acc[e] = 0.0f;
  if (dv) tzc_ld<VEC>(qrow + (size_t)h * hd + d0, q);
  const int j0 = s * chunk, j1 = min(L, j0 + chunk);
  for (int jb = j0 + warp * KPW; jb < j1; jb += U * STEP) { /* uniform over the warp */
    float sc[U], vv[U][VEC];
#pragma unroll
    for (int u = 0; u < U; u++) { /* keys past j1 load key j1 - 1 again (a valid row), score −inf */
      const int jj = min(jb + u * STEP + kq, j1 - 1);
      const T *kr = jj == P ? knew : kb + (size_t)jj * kvrow;
      const T *vr = jj == P ? vnew : vb + (size_t)jj * kvrow;
      float kv[VEC];
#pragma unroll
      for (int e = 0; e < VEC; e++) kv[e] = 0.0f, vv[u][e] = 0.0f;
      if (dv) {
        tzc_ld<VEC>(kr + d0, kv);
        tzc_ld<VEC>(vr + d0, vv[u]);
      }
      float dot = 0.0f;
#pragma unroll
      for (int e = 0; e < VEC; e++) dot += q[e] * kv[e];
      sc[u] = dot;
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
#pragma unroll
      for (int o = LPK / 2; o > 0; o >>= 1) sc[u] += __shfl_xor_sync(0xffffffffu, sc[u], o);
      sc[u] = jb + u * STEP + kq < j1 ? sc[u] * scale : -INFINITY;
    }
    float mx = m;
#pragma unroll
    for (int u = 0; u < U; u++) mx = fmaxf(mx, sc[u]);
    if (mx != -INFINITY) { /* this key group had a key this round */
      const float corr = expf(m - mx); /* 0 while m = −inf */
      l *= corr;
#pragma unroll
      for (int e = 0; e < VEC; e++) acc[e] *= corr;
#pragma unroll
      for (int u = 0; u < U; u++) {
        const float p = expf(sc[u] - mx); /* 0 for a key past j1 */
        l += p;
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[e] += p * vv[u][e];
      }
      m = mx;
    }
  }
  /* the warp's KPW key groups merged by a butterfly (group 0's lanes' values are used) */
#pragma unroll
  for (int o = LPK; o < 32; o <<= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o), ol = __shfl_xor_sync(0xffffffffu, l, o);
    const float mm = fmaxf(m, om);
    const float wa = l > 0.0f ? expf(m - mm) : 0.0f, wb = ol > 0.0f ? expf(om - mm) : 0.0f;
    l = l * wa + ol * wb;
#pragma unroll
    for (int e = 0; e < VEC; e++) {
      const float oa = __shfl_xor_sync(0xffffffffu, acc[e], o);
      acc[e] = acc[e] * wa + oa * wb;
    }
    m = mm;
  }
  if (lane == 0) wm[warp] = m, wl[warp] = l;
  if (kq == 0 && dv)
#pragma unroll
    for (int e = 0; e < VEC; e++) wacc[warp][d0 + e] = acc[e];
  __syncthreads();
  dec_finish<T>(wm, wl, &wacc[0][0], HDX, out + ((size_t)b * H + h) * hd, part, cnt, (size_t)b * H + h, nsplit, nsp,
                s, hd);
}

/* Keys per block: TEZGAH_CUDA_DEC_CHUNK (16..512, a multiple of 16; read once) when set, else 32
 * for B ≤ tzc_gemv_max_m() rows and 64 above (the H200 run of 2026-12-03 04:01,
 * device_cuda_decode5.sh, attn_decode_k: 0.124 ms/step at 32 against 0.146 at 64 with one row,
 * 0.208 against 0.187 with 16). Other values split and merge the keys differently: other bits
 * (within the tests' tolerances), still run to run identical. */
int dec_chunk(int B) {
  static int c = -1;
  if (c < 0) {
    const char *e = getenv("TEZGAH_CUDA_DEC_CHUNK");
    int v = e && *e ? atoi(e) : 0;
    c = v >= 16 && v <= 512 && v % 16 == 0 ? v : 0;
  }
  return c ? c : B <= tzc_gemv_max_m() ? 32 : DEC_CHUNK;
}

/* TEZGAH_CUDA_DEC_VEC=0 (read once): attn_decode_k for every shape (an A/B of the kernels). */
int dec_vec_off() {
  static int off = -1;
  if (off < 0) {
    const char *e = getenv("TEZGAH_CUDA_DEC_VEC");
    off = e && !strcmp(e, "0");
  }
  return off;
}

/* Device buffers of the decoding kernels, grown outside recordings (the first, warm-up use of
 * a shape runs unrecorded: backend_cuda_graph.c); growing one makes recordings stale. */
void grow(tz_backend *be, void **p, size_t *have, size_t want, int zero) {
  tzc_ctx *c = tzc(be);
  if (want <= *have) return;
  if (*p) {
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    TZC_CHECK(cudaFree(*p));
    tzc_mem_account(be, -(long long)*have);
  }
  TZC_CHECK(cudaMalloc(p, want));
  if (zero) TZC_CHECK(cudaMemsetAsync(*p, 0, want, c->stream));
  *have = want;
  tzc_mem_account(be, (long long)want);
  c->graph_gen++;
}
template <class T>
void launch_decode(dim3 grid, cudaStream_t st, int pdl, T *o, T *kc, T *vc, const T *x, const int *p, float *part,
                   unsigned *cnt, int H, int rep, int hd, int qs, int kvrow, int maxT, int nsplit, int chunk, float scale,
                   int verbose) {
  const dim3 blk(DEC_WARPS * 32);
  constexpr int VEC = 16 / (int)sizeof(T);
  const bool vec = !dec_vec_off() && hd % VEC == 0 && kvrow % VEC == 0 && qs % VEC == 0 && hd <= 32 * VEC &&
                   tzc_aligned16(kc) && tzc_aligned16(vc) && tzc_aligned16(x);
  static int told = 0; /* TEZGAH_VERBOSE: which kernel, once a process */
  if (verbose && !told) {
    told = 1;
    fprintf(stderr, "cuda: attention_decode: %s, %d keys a block, %d rows\n",
            vec ? "attn_decode_v (16-byte loads)" : dec_vec_off() ? "attn_decode_k (TEZGAH_CUDA_DEC_VEC=0)"
                                                                  : "attn_decode_k (rows not 16-byte aligned)",
            chunk, (int)grid.z);
  }
  if (vec) {
    const int nv = hd / VEC; /* lanes a key: the power of two ≥ nv, at least 2 */
    if (nv <= 2)
      tzc_launch_pdl(attn_decode_v<T, 2>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
    else if (nv <= 4)
      tzc_launch_pdl(attn_decode_v<T, 4>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
    else if (nv <= 8)
      tzc_launch_pdl(attn_decode_v<T, 8>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
    else if (nv <= 16)
      tzc_launch_pdl(attn_decode_v<T, 16>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
    else
      tzc_launch_pdl(attn_decode_v<T, 32>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
    return;
  }
  if (hd <= 32)
    tzc_launch_pdl(attn_decode_k<T, 1>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
  else if (hd <= 64)
    tzc_launch_pdl(attn_decode_k<T, 2>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
  else if (hd <= 128)
    tzc_launch_pdl(attn_decode_k<T, 4>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
  else
    tzc_launch_pdl(attn_decode_k<T, 8>, grid, blk, st, pdl, o, kc, vc, x, p, part, cnt, H, rep, hd, qs, kvrow, maxT, nsplit, chunk, scale);
}
} // namespace

extern "C" void tzc_dec_buffers_free(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  if (c->dec_part) cudaFree(c->dec_part);
  if (c->dec_cnt) cudaFree(c->dec_cnt);
  if (c->dec_r) cudaFree(c->dec_r);
  c->dec_part = c->dec_cnt = c->dec_r = NULL;
  c->dec_part_bytes = c->dec_cnt_bytes = c->dec_r_bytes = 0;
}

extern "C" void *tzc_dec_buffer(tz_backend *be, int which, size_t bytes) {
  tzc_ctx *c = tzc(be);
  if (which == 0) return grow(be, &c->dec_part, &c->dec_part_bytes, bytes, 0), c->dec_part;
  if (which == 1) return grow(be, &c->dec_cnt, &c->dec_cnt_bytes, bytes, 1), c->dec_cnt;
  return grow(be, &c->dec_r, &c->dec_r_bytes, bytes, 0), c->dec_r;
}

extern "C" void tzc_attention_decode(tz_backend *be, tz_slice out, tz_slice kcache, tz_slice vcache, tz_slice qkv,
                                     tz_slice pos, int B, int n_head, int n_kv_head, int head_dim, int q_stride,
                                     int max_T) {
  TZC_PROF(be, "attention_decode");
  if (B <= 0 || n_head <= 0) return;
  TZC_ASSERT(head_dim >= 1 && head_dim <= 256 && n_kv_head >= 1 && n_head % n_kv_head == 0);
  const int chunk = dec_chunk(B), nsplit = (max_T + chunk - 1) / chunk, kvrow = n_kv_head * head_dim;
  float *part = (float *)tzc_dec_buffer(be, 0, (size_t)B * n_head * nsplit * (head_dim + 2) * sizeof(float));
  unsigned *cnt = (unsigned *)tzc_dec_buffer(be, 1, (size_t)B * n_head * sizeof(unsigned));
  const float scale = 1.0f / sqrtf((float)head_dim);
  dim3 grid(nsplit, n_head, B);
  cudaStream_t st = tzc(be)->stream;
  const int rep = n_head / n_kv_head;
  const int pdl = tzc(be)->pdl;
  TZC_DISPATCH_ACT(be, launch_decode<T>(grid, st, pdl, (T *)tzc_ptr(out), (T *)tzc_ptr(kcache), (T *)tzc_ptr(vcache),
                                        (const T *)tzc_ptr(qkv), (const int *)tzc_ptr(pos), part, cnt, n_head, rep,
                                        head_dim, q_stride, kvrow, max_T, nsplit, chunk, scale, tzc(be)->verbose));
}
