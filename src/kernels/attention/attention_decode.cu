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
 * launch and weight loads overlap its own. */
#include <math.h>
#include <stdlib.h>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_pdl.cuh"

namespace {
constexpr int DEC_WARPS = 4;
constexpr int DEC_CHUNK = 64; /* keys per block (the default of TEZGAH_CUDA_DEC_CHUNK) */

template <class T, int NPL>
__global__ void __launch_bounds__(DEC_WARPS * 32)
    attn_decode_k(T *__restrict__ out, T *__restrict__ kc, T *__restrict__ vc, const T *__restrict__ qkv,
                  const int *__restrict__ pos, float *__restrict__ part, unsigned *__restrict__ cnt, int H, int rep,
                  int hd, int qs, int kvrow, int maxT, int nsplit, int chunk, float scale) {
  __shared__ float qsh[32 * NPL];
  __shared__ float wm[DEC_WARPS], wl[DEC_WARPS];
  __shared__ float wacc[DEC_WARPS][32 * NPL];
  __shared__ int is_last;
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
  /* merge the warps in order (a warp without keys has m = −inf, l = 0: weight 0) */
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < DEC_WARPS; w++) M = fmaxf(M, wm[w]);
  float lb = 0.0f;
#pragma unroll
  for (int w = 0; w < DEC_WARPS; w++) lb += wl[w] > 0.0f ? wl[w] * expf(wm[w] - M) : 0.0f;
  T *orow = out + ((size_t)b * H + h) * hd;
  if (nsp == 1) {
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float a = 0.0f;
#pragma unroll
      for (int w = 0; w < DEC_WARPS; w++) a += wl[w] > 0.0f ? wacc[w][d] * expf(wm[w] - M) : 0.0f;
      orow[d] = tzc_from<T>(a / lb);
    }
    return;
  }
  const size_t bh = (size_t)b * H + h;
  float *pp = part + (bh * nsplit + s) * (size_t)(hd + 2);
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float a = 0.0f;
#pragma unroll
    for (int w = 0; w < DEC_WARPS; w++) a += wl[w] > 0.0f ? wacc[w][d] * expf(wm[w] - M) : 0.0f;
    pp[2 + d] = a;
  }
  if (threadIdx.x == 0) pp[0] = M, pp[1] = lb;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) is_last = atomicAdd(&cnt[bh], 1u) == (unsigned)(nsp - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  /* the last block: merge the nsp partials in split order */
  const float *p0 = part + bh * nsplit * (size_t)(hd + 2);
  float MM = -INFINITY;
  for (int t = 0; t < nsp; t++) MM = fmaxf(MM, __ldcg(p0 + (size_t)t * (hd + 2)));
  float LL = 0.0f;
  for (int t = 0; t < nsp; t++) {
    const float *pt = p0 + (size_t)t * (hd + 2);
    LL += __ldcg(pt + 1) * expf(__ldcg(pt) - MM);
  }
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float a = 0.0f;
    for (int t = 0; t < nsp; t++) {
      const float *pt = p0 + (size_t)t * (hd + 2);
      a += __ldcg(pt + 2 + d) * expf(__ldcg(pt) - MM);
    }
    orow[d] = tzc_from<T>(a / LL);
  }
  if (threadIdx.x == 0) cnt[bh] = 0u; /* ready for the next launch */
}

/* Keys per block: TEZGAH_CUDA_DEC_CHUNK (16..512, a multiple of 16; default DEC_CHUNK), read
 * once. Other values split and merge the keys differently: other bits (within the tests'
 * tolerances), still run to run identical. For A/Bs (scripts/device_cuda_decode5.sh). */
int dec_chunk() {
  static int c = 0;
  if (!c) {
    const char *e = getenv("TEZGAH_CUDA_DEC_CHUNK");
    int v = e && *e ? atoi(e) : DEC_CHUNK;
    c = v >= 16 && v <= 512 && v % 16 == 0 ? v : DEC_CHUNK;
  }
  return c;
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
                   unsigned *cnt, int H, int rep, int hd, int qs, int kvrow, int maxT, int nsplit, int chunk, float scale) {
  const dim3 blk(DEC_WARPS * 32);
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
  const int chunk = dec_chunk(), nsplit = (max_T + chunk - 1) / chunk, kvrow = n_kv_head * head_dim;
  float *part = (float *)tzc_dec_buffer(be, 0, (size_t)B * n_head * nsplit * (head_dim + 2) * sizeof(float));
  unsigned *cnt = (unsigned *)tzc_dec_buffer(be, 1, (size_t)B * n_head * sizeof(unsigned));
  const float scale = 1.0f / sqrtf((float)head_dim);
  dim3 grid(nsplit, n_head, B);
  cudaStream_t st = tzc(be)->stream;
  const int rep = n_head / n_kv_head;
  const int pdl = tzc(be)->pdl;
  TZC_DISPATCH_ACT(be, launch_decode<T>(grid, st, pdl, (T *)tzc_ptr(out), (T *)tzc_ptr(kcache), (T *)tzc_ptr(vcache),
                                        (const T *)tzc_ptr(qkv), (const int *)tzc_ptr(pos), part, cnt, n_head, rep,
                                        head_dim, q_stride, kvrow, max_T, nsplit, chunk, scale));
}
