/* CUDA SwiGLU (Shazeer 2020) on a fused gate|up row: swiglu_cpu.c's math in fp32 on act
 * tensors, 16-byte vectors when F and the rows allow. */
#include "kernels/common/cuda_common.cuh"

namespace {
/* branch on the sign so expf only sees x ≤ 0 (swiglu_cpu.c's sigmoid_stable) */
__device__ __forceinline__ float sigmoid_stable(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

/* One thread per W consecutive features f of one row n: i indexes (n, f/W). */
template <int W, class T>
__global__ void swiglu_fwd_k(T *out, const T *gu, int N, int F) {
  size_t fv = (size_t)F / W, total = (size_t)N * fv;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t n = i / fv, f = (i % fv) * W;
    const T *g = gu + n * 2 * F + f;
    float a[W], u[W];
    tzc_ld<W>(g, a);
    tzc_ld<W>(g + F, u);
#pragma unroll
    for (int j = 0; j < W; j++) a[j] = a[j] * sigmoid_stable(a[j]) * u[j];
    tzc_st<W>(out + n * F + f, a);
  }
}

/* dgate = dout·up·σ(g)(1 + g(1 − σ(g))), dup = dout·g·σ(g); NaN → 0 (the seed's guard). */
template <int W, class T>
__global__ void swiglu_bwd_k(T *dgu, const T *dout, const T *gu, int N, int F) {
  size_t fv = (size_t)F / W, total = (size_t)N * fv;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t n = i / fv, f = (i % fv) * W;
    const T *g = gu + n * 2 * F + f;
    float gv[W], u[W], dy[W], dg[W], du[W];
    tzc_ld<W>(g, gv);
    tzc_ld<W>(g + F, u);
    tzc_ld<W>(dout + n * F + f, dy);
#pragma unroll
    for (int j = 0; j < W; j++) {
      float s = sigmoid_stable(gv[j]);
      float a = dy[j] * u[j] * s * (1.0f + gv[j] * (1.0f - s));
      float b = dy[j] * gv[j] * s;
      dg[j] = isnan(a) ? 0.0f : a;
      du[j] = isnan(b) ? 0.0f : b;
    }
    T *d = dgu + n * 2 * F + f;
    tzc_st<W>(d, dg);
    tzc_st<W>(d + F, du);
  }
}

/* vectors when every row start (n·2F, n·F, +F) stays 16-byte aligned */
template <class T> bool swiglu_vec(int F, const void *a, const void *b, const void *c) {
  return F % VW(T) == 0 && tzc_aligned16(a) && tzc_aligned16(b) && (!c || tzc_aligned16(c));
}
} // namespace

extern "C" void tzc_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  TZC_PROF(be, "swiglu_fwd");
  TZC_PROF_WORK(8.0 * N * F, 3.0 * N * F * tz_dtype_size(tzc(be)->act));
  if (N <= 0 || F <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *x = (const T *)tzc_ptr(gu);
    if (swiglu_vec<T>(F, o, x, nullptr))
      swiglu_fwd_k<VW(T)><<<tzc_blocks((size_t)N * F / VW(T), 256), 256, 0, st>>>(o, x, N, F);
    else
      swiglu_fwd_k<1><<<tzc_blocks((size_t)N * F, 256), 256, 0, st>>>(o, x, N, F);
    TZC_LAUNCHED();
  });
}

extern "C" void tzc_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N,
                               int F) {
  TZC_PROF(be, "swiglu_bwd");
  TZC_PROF_WORK(16.0 * N * F, 5.0 * N * F * tz_dtype_size(tzc(be)->act));
  if (N <= 0 || F <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  TZC_DISPATCH_ACT(be, {
    T *d = (T *)tzc_ptr(dgu);
    const T *dy = (const T *)tzc_ptr(dout), *x = (const T *)tzc_ptr(gu);
    if (swiglu_vec<T>(F, d, dy, x))
      swiglu_bwd_k<VW(T)><<<tzc_blocks((size_t)N * F / VW(T), 256), 256, 0, st>>>(d, dy, x, N, F);
    else
      swiglu_bwd_k<1><<<tzc_blocks((size_t)N * F, 256), 256, 0, st>>>(d, dy, x, N, F);
    TZC_LAUNCHED();
  });
}
