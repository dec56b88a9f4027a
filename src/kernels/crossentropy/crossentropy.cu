/* CUDA fused softmax cross-entropy, in place (crossentropy_cpu.c's contract, with issue 12's
 * numerics): one block per row. Pass 1 reads the row once, each thread keeping an online
 * (max m, Σexp(z − m)) pair over its 16-byte vectors, 4 vectors' loads in flight per step (one
 * rescale per step, one exp per logit), then the pairs are merged in a fixed tree. loss = log s − (z[y] − m) in fp64 and
 * dlogit_c = exp(z_c − m)·(dscale/s) − [c = y]·dscale: logsumexp = m + log s is never rounded
 * to fp32 (it would lose everything below the spacing of |m|: loss 0 for [1e8, 1e8]).
 * Pass 2 rewrites the row. (A form whose pass 2 read the row from shared memory, one DRAM read
 * instead of two, was measured on an H100 on 2026-12-05: GPT-2 124M, the llama shape and 350M
 * trained no faster, within 0.5 %; it was removed; forms keeping the row in registers, 7 to 25
 * vectors a thread, were 1-40 % slower on 2026-12-06: too few blocks an SM.) The kernel is
 * partly arithmetic-bound, two exponentials a logit, so each is exp_off's exp2 of
 * (z − m)·log2 e (the hardware's 2^x) rather than expf's longer range reduction (H100,
 * 2026-12-06, 16384 × 50,257 bf16 logits in [−8, 8]: 1.395–1.400 ms a call against expf's
 * 1.548–1.550, bf16 dlogits within one unit of expf's, losses within 1.2e-7 relative; GPT-2
 * 124M trained 0.4 % faster). Padding [V, Vp) becomes 0; a
 * target outside [0, V) gives loss 0 and a zero row. NaN logits give a NaN loss (the step is
 * then skipped by the grad-norm check), like the CPU.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int CE_THREADS = 512;

/* exp(z − m) as exp2((z − m)·log2 e): z − m as expf(z − m) takes it (exact where z is near m),
 * then one rounding of the product, so the relative error stays below about 2e-7·|z − m| + 2
 * ulp (exp2f's own), far below a bf16 unit and within the fp32 tests' bounds. Not
 * exp2(z·log2 e − m·log2 e) with one FMA: the rounding of m·log2 e is not small for large |m|
 * (at m = 1e8 up to 8, half of ulp(1.44e8) = 16: a factor of up to 256 in every term).
 * z = −inf gives 0, NaN NaN. */
__device__ __forceinline__ float exp_off(float z, float m) { return exp2f((z - m) * 1.4426950408889634f); }

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

template <int W, class T>
__global__ void __launch_bounds__(CE_THREADS)
xent_k(float *losses, T *logits, const int *targets, int V, int Vp, float dscale) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access */
  __shared__ float sh_m[32], sh_s[32];
  __shared__ float sh_zy;
  int n = blockIdx.x, tid = threadIdx.x;
  T *z = logits + (size_t)n * Vp;
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
    for (int u = 0; u < U; u++) tzc_ld<W>(z + (size_t)(i + u * blockDim.x) * W, f[u]);
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
      for (int j = 0; j < W; j++) s += f[u][j] == -INFINITY ? 0.0f : exp_off(f[u][j], m);
  }
  for (; i < nv; i += blockDim.x) {
    float f[W];
    tzc_ld<W>(z + (size_t)i * W, f);
    float lm = f[0];
#pragma unroll
    for (int j = 1; j < W; j++) lm = fmaxf(lm, f[j]);
    if (lm > m) {
      s = m == -INFINITY ? s : s * expf(m - lm);
      m = lm;
    }
#pragma unroll
    for (int j = 0; j < W; j++) s += f[j] == -INFINITY ? 0.0f : exp_off(f[j], m);
  }
  for (int c = nv * W + tid; c < V; c += blockDim.x) {
    float f = tzc_tof(z[c]);
    if (f > m) {
      s = m == -INFINITY ? s : s * expf(m - f);
      m = f;
    }
    s += f == -INFINITY ? 0.0f : exp_off(f, m);
  }
  /* NaN: fmaxf and the comparisons skip it, but exp_off(NaN, m) makes s NaN, so the loss is NaN */
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
    for (int u = 0; u < U; u++) tzc_ld<W>(z + (size_t)(i + u * blockDim.x) * W, f[u]);
#pragma unroll
    for (int u = 0; u < U; u++) {
      int iu = i + u * blockDim.x;
#pragma unroll
      for (int j = 0; j < W; j++) {
        f[u][j] = exp_off(f[u][j], m) * scale;
        if (iu * W + j == y) f[u][j] -= dscale;
      }
      tzc_st<W>(z + (size_t)iu * W, f[u]);
    }
  }
  for (; i < nv; i += blockDim.x) {
    float f[W];
    tzc_ld<W>(z + (size_t)i * W, f);
#pragma unroll
    for (int j = 0; j < W; j++) {
      f[j] = exp_off(f[j], m) * scale;
      if (i * W + j == y) f[j] -= dscale;
    }
    tzc_st<W>(z + (size_t)i * W, f);
  }
  for (int c = nv * W + tid; c < Vp; c += blockDim.x) {
    float d = 0.0f;
    if (c < V) {
      d = exp_off(tzc_tof(z[c]), m) * scale;
      if (c == y) d -= dscale;
    }
    z[c] = tzc_from<T>(d);
  }
}
} // namespace

extern "C" void tzc_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits,
                                 tz_slice targets, int N, int V, int Vp, float dscale) {
  TZC_PROF(be, "crossentropy");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(4.0 * N * V, 3.0 * N * Vp * es + 8.0 * N);
  if (N <= 0) return;
  TZC_DISPATCH_ACT(be, {
    T *z = (T *)tzc_ptr(logits);
    float *l = (float *)tzc_ptr(losses);
    const int *y = (const int *)tzc_ptr(targets);
    if (((size_t)Vp * sizeof(T)) % 16 == 0 && tzc_aligned16(z))
      tzc_launch(be, xent_k<VW(T), T>, dim3(N), dim3(CE_THREADS), 0, l, z, y, V, Vp, dscale);
    else
      tzc_launch(be, xent_k<1, T>, dim3(N), dim3(CE_THREADS), 0, l, z, y, V, Vp, dscale);
    TZC_LAUNCHED();
  });
}
