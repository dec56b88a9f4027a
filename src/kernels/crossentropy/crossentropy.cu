/* CUDA fused softmax cross-entropy, in place (crossentropy_cpu.c's contract, with issue 12's
 * numerics): one block per row. Pass 1 reads the row once, each thread keeping an online
 * (max m, Σexp(z − m)) pair over its 16-byte vectors, 4 vectors' loads in flight per step (one
 * rescale per step, one exp per logit), then the pairs are merged in a fixed tree. loss = log s − (z[y] − m) in fp64 and
 * dlogit_c = exp(z_c − m)·(dscale/s) − [c = y]·dscale: logsumexp = m + log s is never rounded
 * to fp32 (it would lose everything below the spacing of |m|: loss 0 for [1e8, 1e8]).
 * Pass 2 rewrites the row (its second read mostly hits L2). Padding [V, Vp) becomes 0; a
 * target outside [0, V) gives loss 0 and a zero row. NaN logits give a NaN loss (the step is
 * then skipped by the grad-norm check), like the CPU.
 * SM (TEZGAH_CUDA_XENT_SMEM=1, opt-in: an A/B for the H200, not measured): pass 1 also copies each
 * 16-byte vector it reads into dynamic shared memory (the row's full vectors, (V / W)·16 bytes:
 * 100.5 KB for GPT-2's bf16 row, two blocks an SM), and pass 2 reads them there: one read of the
 * row from DRAM, not two. Why: the 350M profile's 1.5 ms a step at B16 T1024 V 50257 (bf16,
 * docs/PERF.md 2026-12-03) is the time of ~5 GB at ~3.3 TB/s, three passes over 1.65 GB, which
 * suggests the second read comes from DRAM rather than L2 (not measured apart); with SM it is
 * ~3.3 GB. Same values as without, bit for bit (the same loads and
 * arithmetic; only where pass 2's vectors come from differs). */
#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int CE_THREADS = 512;

/* merge (m2, s2) into (m, s); a side with m = −inf holds no finite logit (s = 0, or NaN);
 * −inf logits contribute exp = 0 (never exp(−inf − (−inf)) = NaN) */
__device__ __forceinline__ void ms_merge(float &m, float &s, float m2, float s2) {
  if (m2 == -INFINITY) { /* s2 is 0, or NaN from NaN logits: keep the NaN */
    s += s2;
    return;
  }
  if (m == -INFINITY) {
    m = m2, s += s2;
    return;
  }
  float M = fmaxf(m, m2);
  s = s * expf(m - M) + s2 * expf(m2 - M);
  m = M;
}

template <int W, bool SM, class T>
__global__ void __launch_bounds__(CE_THREADS)
xent_k(float *losses, T *logits, const int *targets, int V, int Vp, float dscale) {
  __shared__ float sh_m[32], sh_s[32];
  __shared__ float sh_zy;
  extern __shared__ int4 ce_row[]; /* SM: the row's full vectors (dynamic, (V / W)·16 bytes) */
  int n = blockIdx.x, tid = threadIdx.x;
  T *z = logits + (size_t)n * Vp;
  /* vector k of the row into f (SM: kept in ce_row too), and pass 2's read of it */
  auto ld1 = [&](int k, float *f) {
    if constexpr (SM) {
      int4 r = *reinterpret_cast<const int4 *>(z + (size_t)k * W);
      ce_row[k] = r;
      const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
      for (int j = 0; j < W; j++) f[j] = tzc_tof(e[j]);
    } else {
      tzc_ld<W>(z + (size_t)k * W, f);
    }
  };
  auto ld2 = [&](int k, float *f) {
    if constexpr (SM)
      tzc_ld<W>(reinterpret_cast<const T *>(ce_row + k), f);
    else
      tzc_ld<W>(z + (size_t)k * W, f);
  };
  int y = targets[n];
  int nv = V / W; /* full vectors inside [0, V); the rest of the row is scalar */
  if (y < 0 || y >= V) {
    float zero[W];
#pragma unroll
    for (int j = 0; j < W; j++) zero[j] = 0.0f;
    for (int i = tid; i < nv; i += blockDim.x) tzc_st<W>(z + (size_t)i * W, zero);
    for (int c = nv * W + tid; c < Vp; c += blockDim.x) z[c] = tzc_from<T>(0.0f);
    if (tid == 0) losses[n] = 0.0f;
    return;
  }
  if (tid == 0) sh_zy = tzc_tof(z[y]); /* read before any thread rewrites the row */
  /* pass 1: online (max, sum) */
  float m = -INFINITY, s = 0.0f;
  /* U vectors per step (their loads in flight together), one rescale per step */
  constexpr int U = W > 1 ? 4 : 1;
  int i = tid;
  for (; i + (U - 1) * (int)blockDim.x < nv; i += U * blockDim.x) {
    float f[U][W];
#pragma unroll
    for (int u = 0; u < U; u++) ld1(i + u * blockDim.x, f[u]);
    float lm = f[0][0];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int j = 0; j < W; j++) lm = fmaxf(lm, f[u][j]);
    if (lm > m) {
      s = m == -INFINITY ? s : s * expf(m - lm); /* s is 0 (or NaN) while m = −inf */
      m = lm;
    }
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int j = 0; j < W; j++) s += f[u][j] == -INFINITY ? 0.0f : expf(f[u][j] - m);
  }
  for (; i < nv; i += blockDim.x) {
    float f[W];
    ld1(i, f);
    float lm = f[0];
#pragma unroll
    for (int j = 1; j < W; j++) lm = fmaxf(lm, f[j]);
    if (lm > m) {
      s = m == -INFINITY ? s : s * expf(m - lm);
      m = lm;
    }
#pragma unroll
    for (int j = 0; j < W; j++) s += f[j] == -INFINITY ? 0.0f : expf(f[j] - m);
  }
  for (int c = nv * W + tid; c < V; c += blockDim.x) {
    float f = tzc_tof(z[c]);
    if (f > m) {
      s = m == -INFINITY ? s : s * expf(m - f);
      m = f;
    }
    s += f == -INFINITY ? 0.0f : expf(f - m);
  }
  /* NaN: fmaxf and the comparisons skip it, but expf(NaN − m) makes s NaN, so the loss is NaN */
  /* merge: warp butterfly (same order in every lane), then the warps in index order */
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    ms_merge(m, s, m2, s2);
  }
  int lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
  if (lane == 0) sh_m[warp] = m, sh_s[warp] = s;
  __syncthreads(); /* also publishes sh_zy */
  m = -INFINITY, s = 0.0f;
  for (int k = 0; k < nw; k++) ms_merge(m, s, sh_m[k], sh_s[k]);
  float zy = sh_zy;
  if (tid == 0) losses[n] = (float)(log((double)s) - ((double)zy - (double)m));
  float scale = (float)((double)dscale / (double)s);
  /* pass 2: dlogits */
  i = tid;
  for (; i + (U - 1) * (int)blockDim.x < nv; i += U * blockDim.x) {
    float f[U][W];
#pragma unroll
    for (int u = 0; u < U; u++) ld2(i + u * blockDim.x, f[u]);
#pragma unroll
    for (int u = 0; u < U; u++) {
      int iu = i + u * blockDim.x;
#pragma unroll
      for (int j = 0; j < W; j++) {
        f[u][j] = expf(f[u][j] - m) * scale;
        if (iu * W + j == y) f[u][j] -= dscale;
      }
      tzc_st<W>(z + (size_t)iu * W, f[u]);
    }
  }
  for (; i < nv; i += blockDim.x) {
    float f[W];
    ld2(i, f);
#pragma unroll
    for (int j = 0; j < W; j++) {
      f[j] = expf(f[j] - m) * scale;
      if (i * W + j == y) f[j] -= dscale;
    }
    tzc_st<W>(z + (size_t)i * W, f);
  }
  for (int c = nv * W + tid; c < Vp; c += blockDim.x) {
    float d = 0.0f;
    if (c < V) {
      d = expf(tzc_tof(z[c]) - m) * scale;
      if (c == y) d -= dscale;
    }
    z[c] = tzc_from<T>(d);
  }
}

/* Whether xent_k's SM form runs with `smem` bytes of the row: TEZGAH_CUDA_XENT_SMEM=1 (read at
 * each call: the A/B switch and the tests), at most half the device's shared memory per SM (two
 * blocks an SM, so one block's writes overlap another's reads) and within the per-block opt-in
 * limit, which is raised for kernel k once. */
template <class K> bool xent_smem_ok(size_t smem, K k) {
  const char *e = getenv("TEZGAH_CUDA_XENT_SMEM");
  if (!e || strcmp(e, "1") != 0 || smem == 0) return false;
  static int per_sm = -1, optin = -1;
  if (per_sm < 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
      per_sm = 0, optin = 0;
  }
  if (smem + 1024 > (size_t)per_sm / 2 || smem > (size_t)optin) return false;
  static size_t raised = 0; /* (one instantiation runs: the backend's act type) */
  if (smem > raised) {
    if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    raised = smem;
  }
  return true;
}
} // namespace

static long xent_smem_n; /* the crossentropy calls that ran xent_k's SM form */
extern "C" long tzc_xent_smem_calls(void) { return xent_smem_n; }

extern "C" void tzc_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits,
                                 tz_slice targets, int N, int V, int Vp, float dscale) {
  TZC_PROF(be, "crossentropy");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(4.0 * N * V, 3.0 * N * Vp * es + 8.0 * N);
  if (N <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  TZC_DISPATCH_ACT(be, {
    T *z = (T *)tzc_ptr(logits);
    float *l = (float *)tzc_ptr(losses);
    const int *y = (const int *)tzc_ptr(targets);
    if (((size_t)Vp * sizeof(T)) % 16 == 0 && tzc_aligned16(z)) {
      size_t smem = (size_t)(V / VW(T)) * 16;
      if (xent_smem_ok(smem, xent_k<VW(T), true, T>)) {
        xent_k<VW(T), true><<<N, CE_THREADS, smem, st>>>(l, z, y, V, Vp, dscale);
        xent_smem_n++;
      } else
        xent_k<VW(T), false><<<N, CE_THREADS, 0, st>>>(l, z, y, V, Vp, dscale);
    } else {
      xent_k<1, false><<<N, CE_THREADS, 0, st>>>(l, z, y, V, Vp, dscale);
    }
    TZC_LAUNCHED();
  });
}
