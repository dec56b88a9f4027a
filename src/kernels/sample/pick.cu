/* Picking the next token on the device (backend.h's pick): src/sample/sampler.c's
 * tz_sampler_pick (the reference) for B rows of logits at once, so that only B token ids come
 * back to the host instead of B·V logits. One block of PK_THREADS threads per row; thread t
 * owns the ids [t·chunk, (t+1)·chunk) (chunk = ⌈V / PK_THREADS⌉), so every id-ordered pass is
 * a per-thread pass plus a block scan in thread order.
 *
 *   greedy (temperature ≤ 0): the first maximal finite logit (block arg-max, ties to the lower
 *     id); none finite: id 0, as the host.
 *   full softmax (no top-k below V, top_p = 1): p_i = exp((z_i − max)/temperature) in double
 *     (0 for a non-finite z), the pick is the first id whose running sum exceeds r·Σp; the sum
 *     runs per thread and across threads by a scan (the host sums left to right: the last bits
 *     of the sums may differ, which moves a pick only when r·Σp falls within that rounding of
 *     a boundary).
 *   top-k (1 ≤ k ≤ PK_MAXK, k < V), then top_p: the k largest logits by a radix select on the
 *     order-preserving integer form of the float (4 passes of 8 bits: histogram in shared
 *     memory, integer atomics only, one per warp and bin), ties at the k-th value taken in id
 *     order; their p computed as above and sorted by (p descending, id ascending) (bitonic
 *     sort, the host's qsort order); then one thread runs the host's loops literally: the
 *     top_p cut (kept ≥ top_p·total), the sum, and the scan against r·sum.
 * Not offered (returns 0; the caller picks on the host): top-k off or ≥ V with top_p < 1
 * (a full sort), and k > PK_MAXK. Logits with equal p but different values at the k-th edge
 * can be cut differently than the host (the host cuts by p, this by logit). */
#include <math.h>

#include "kernels/common/cuda_common.cuh"

extern "C" void *tzc_dec_buffer(tz_backend *be, int which, size_t bytes);

namespace {
constexpr int PK_THREADS = 1024;
constexpr int PK_MAXK = 1024;

struct pick_args {
  int V, Vp, top_k;
  float temperature, top_p;
};

/* order-preserving unsigned form of a finite float (larger float, larger key); non-finite: 0 */
__device__ __forceinline__ unsigned fkey(float x) {
  if (!isfinite(x)) return 0u;
  unsigned u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Exclusive scan over the block in thread order (blockDim.x == PK_THREADS): thread t gets
 * incl[t − 1] (0 for t = 0) where incl[t] is its inclusive sum, so that the ranges [excl, incl)
 * of consecutive threads meet exactly even in floating point; the total (incl of the last
 * thread) to *tot. incl: PK_THREADS elements of shared scratch, wsh: 32. */
template <class F> __device__ F block_excl_scan(F v, F *incl, F *wsh, F *tot) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  F x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    F y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  __syncthreads();
  if (lane == 31) wsh[warp] = x;
  __syncthreads();
  if (warp == 0) {
    F w = wsh[lane], zz = w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      F y = __shfl_up_sync(0xffffffffu, zz, o);
      if (lane >= o) zz += y;
    }
    F ex = __shfl_up_sync(0xffffffffu, zz, 1);
    wsh[lane] = lane ? ex : (F)0; /* the warps' exclusive prefixes */
  }
  __syncthreads();
  F inc = wsh[warp] + x;
  incl[threadIdx.x] = inc;
  __syncthreads();
  F ex = threadIdx.x ? incl[threadIdx.x - 1] : (F)0;
  *tot = incl[PK_THREADS - 1];
  __syncthreads(); /* incl and wsh free for the next call */
  return ex;
}

template <class T>
__global__ void __launch_bounds__(PK_THREADS) pick_k(int *__restrict__ out, int *__restrict__ ids,
                                                     const T *__restrict__ logits, const double *__restrict__ r,
                                                     pick_args a) {
  __shared__ float smax[32];
  __shared__ int sidx[32];
  __shared__ double dsh[32], dincl[PK_THREADS];
  __shared__ int ish[32], iincl[PK_THREADS];
  __shared__ unsigned hist[256];
  __shared__ double cp[PK_MAXK];
  __shared__ int cid[PK_MAXK];
  __shared__ int found;
  __shared__ unsigned sprefix, skk;
  const int b = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  auto put = [&](int id) { /* the pick, into out (the next step's tokens) and ids (kept) */
    out[b] = id;
    if (ids) ids[b] = id;
  };
  const T *z = logits + (size_t)b * a.Vp;
  const int chunk = (a.V + PK_THREADS - 1) / PK_THREADS, lo = min(a.V, tid * chunk), hi = min(a.V, lo + chunk);
  /* arg-max over finite logits, first index on ties: thread t reads ids t, t + PK_THREADS, ...
   * (coalesced: a warp's load is 32 neighbours; by contiguous chunks each load touched 32
   * cache lines), ascending, and the reduction below orders ties by id, so the pair (max,
   * first id) is the same whatever the split */
  float best = -INFINITY;
  int bi = INT_MAX;
  for (int i = tid; i < a.V; i += PK_THREADS) {
    float x = tzc_tof(z[i]);
    if (isfinite(x) && (bi == INT_MAX || x > best)) best = x, bi = i;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float ob = __shfl_xor_sync(0xffffffffu, best, o);
    int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (oi != INT_MAX && (bi == INT_MAX || ob > best || (ob == best && oi < bi))) best = ob, bi = oi;
  }
  if (lane == 0) smax[warp] = best, sidx[warp] = bi;
  __syncthreads();
  if (warp == 0) {
    best = smax[lane], bi = sidx[lane];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      float ob = __shfl_xor_sync(0xffffffffu, best, o);
      int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (oi != INT_MAX && (bi == INT_MAX || ob > best || (ob == best && oi < bi))) best = ob, bi = oi;
    }
    if (lane == 0) smax[0] = best, sidx[0] = bi;
  }
  __syncthreads();
  best = smax[0], bi = sidx[0];
  if (bi == INT_MAX || !(a.temperature > 0.0f)) { /* none finite: 0, as the host; greedy */
    if (tid == 0) put(bi == INT_MAX ? 0 : bi);
    return;
  }
  const double mx = best, temp = a.temperature, rr = r[b];
  if (a.top_k <= 0 || a.top_k >= a.V) { /* full softmax in id order */
    double s = 0.0;
    for (int i = lo; i < hi; i++) {
      float x = tzc_tof(z[i]);
      s += isfinite(x) ? exp(((double)x - mx) / temp) : 0.0;
    }
    double dtot;
    double pre = block_excl_scan(s, dincl, dsh, &dtot);
    if (tid == 0) found = 0;
    __syncthreads();
    const double target = rr * dtot;
    if (pre <= target && target < (tid + 1 < PK_THREADS ? dincl[tid] : dtot)) {
      double acc = pre;
      for (int i = lo; i < hi; i++) {
        float x = tzc_tof(z[i]);
        acc += isfinite(x) ? exp(((double)x - mx) / temp) : 0.0;
        if (target < acc) {
          put(i);
          found = 1;
          break;
        }
      }
      if (!found) put(hi - 1), found = 1; /* the range said "here": rounding of the running sum */
    }
    __syncthreads();
    if (tid == 0 && !found) put(a.V - 1); /* the host's fallback: the last id */
    return;
  }
  /* top-k: radix select of the k-th largest key */
  const int k = a.top_k;
  if (tid == 0) sprefix = 0u, skk = (unsigned)k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += PK_THREADS) hist[i] = 0u;
    __syncthreads();
    const unsigned prefix = sprefix;
    const unsigned hmask = shift == 24 ? 0u : (0xffffffffu << (shift + 8));
    /* counts only: any order will do, so the reads are strided (coalesced) and each warp adds
     * once per distinct bin (most logits share the top byte: one shared atomic per lane there
     * serialized 32-fold) */
    for (int i = tid; i < a.V; i += PK_THREADS) {
      const unsigned key = fkey(tzc_tof(z[i]));
      const bool in = (key & hmask) == (prefix & hmask);
      const unsigned bin = in ? (key >> shift) & 255u : 256u;
      const unsigned peers = __match_any_sync(__activemask(), bin);
      if (in && __ffs(peers) - 1 == lane) atomicAdd(&hist[bin], (unsigned)__popc(peers));
    }
    __syncthreads();
    if (tid == 0) {
      unsigned kk = skk, cum = 0;
      for (int d = 255; d >= 0; d--) {
        if (cum + hist[d] >= kk) {
          sprefix = prefix | ((unsigned)d << shift);
          skk = kk - cum;
          break;
        }
        cum += hist[d];
      }
    }
    __syncthreads();
  }
  const unsigned thr = sprefix;
  const int need_eq = (int)skk; /* how many keys equal to thr are taken (the lowest ids) */
  /* candidates in id order: all keys > thr, then the first need_eq keys == thr */
  int gt = 0, eq = 0;
  for (int i = lo; i < hi; i++) {
    unsigned key = fkey(tzc_tof(z[i]));
    gt += key > thr;
    eq += key == thr;
  }
  int ngt, neq;
  int gpre = block_excl_scan(gt, iincl, ish, &ngt);
  int epre = block_excl_scan(eq, iincl, ish, &neq);
  (void)neq;
  for (int i = lo; i < hi && (gt > 0 || epre < need_eq); i++) {
    float x = tzc_tof(z[i]);
    unsigned key = fkey(x);
    int slot = -1;
    if (key > thr) slot = gpre++, gt--;
    else if (key == thr && epre < need_eq) slot = ngt + epre++;
    if (slot >= 0) {
      cid[slot] = i;
      cp[slot] = isfinite(x) ? exp(((double)x - mx) / temp) : 0.0;
    }
  }
  for (int i = k + tid; i < PK_MAXK; i += PK_THREADS) cp[i] = -1.0, cid[i] = INT_MAX; /* padding sorts last */
  __syncthreads();
  /* bitonic sort of PK_MAXK entries by (p descending, id ascending) */
  for (int size = 2; size <= PK_MAXK; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = tid; i < PK_MAXK; i += PK_THREADS) {
        int j = i ^ stride;
        if (j > i) {
          bool desc_block = (i & size) == 0; /* this half sorts "first-before" */
          double pi = cp[i], pj = cp[j];
          int ii = cid[i], ij = cid[j];
          bool i_first = pi > pj || (pi == pj && ii < ij); /* i belongs before j */
          if (desc_block != i_first) {
            cp[i] = pj, cp[j] = pi;
            cid[i] = ij, cid[j] = ii;
          }
        }
      }
      __syncthreads();
    }
  }
  if (tid == 0) { /* sampler.c's loops, literally */
    int n = k;
    if (a.top_p < 1.0f) {
      double kept = 0, total = 0;
      for (int i = 0; i < n; i++) total += cp[i];
      for (int i = 0; i < n; i++) {
        kept += cp[i];
        if (kept >= (double)a.top_p * total) {
          n = i + 1;
          break;
        }
      }
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += cp[i];
    double target = rr * sum, acc = 0;
    int pick = cid[n - 1];
    for (int i = 0; i < n; i++) {
      acc += cp[i];
      if (target < acc) {
        pick = cid[i];
        break;
      }
    }
    put(pick);
  }
}
} // namespace

/* Not offered (0): sampling with top-k off (or ≥ V) and top_p < 1, or k > PK_MAXK. */
static bool pick_offered(int V, float temperature, int top_k, float top_p) {
  return !(temperature > 0.0f) || ((top_k <= 0 || top_k >= V) ? top_p >= 1.0f : top_k <= PK_MAXK);
}

template <class T>
void pick_launch(tzc_ctx *c, int *out, int *ids, const void *logits, const double *rd, int B, const pick_args &a) {
  pick_k<T><<<B, PK_THREADS, 0, c->stream>>>(out, ids, (const T *)logits, rd, a);
  TZC_LAUNCHED();
}

extern "C" int tzc_pick(tz_backend *be, tz_slice out, tz_slice logits, int B, int V, int Vp, float temperature,
                        int top_k, float top_p, const double *r) {
  if (B <= 0) return 1;
  const int sampling = temperature > 0.0f;
  if (!pick_offered(V, temperature, top_k, top_p)) return 0;
  TZC_PROF(be, "pick");
  tzc_ctx *c = tzc(be);
  double *rd = (double *)tzc_dec_buffer(be, 2, (size_t)B * sizeof(double));
  if (sampling) TZC_CHECK(cudaMemcpyAsync(rd, r, (size_t)B * sizeof(double), cudaMemcpyHostToDevice, c->stream));
  pick_args a = {V, Vp, top_k, temperature, top_p};
  TZC_DISPATCH_ACT(be, pick_launch<T>(c, (int *)tzc_ptr(out), nullptr, tzc_ptr(logits), rd, B, a));
  return 1;
}

/* backend.h's pick_dev: the draws already on the device (r: double [B], absent when greedy),
 * the ids also to `ids` (int32 [B], absent: not); nothing waits for the host. */
extern "C" int tzc_pick_dev(tz_backend *be, tz_slice out, tz_slice logits, int B, int V, int Vp, float temperature,
                            int top_k, float top_p, tz_slice r, tz_slice ids) {
  if (B <= 0) return 1;
  if (!pick_offered(V, temperature, top_k, top_p)) return 0;
  if (temperature > 0.0f && !tz_present(r)) return 0;
  TZC_PROF(be, "pick");
  tzc_ctx *c = tzc(be);
  pick_args a = {V, Vp, top_k, temperature, top_p};
  TZC_DISPATCH_ACT(be, pick_launch<T>(c, (int *)tzc_ptr(out), (int *)tzc_ptr(ids), tzc_ptr(logits),
                                      (const double *)tzc_ptr(r), B, a));
  return 1;
}
