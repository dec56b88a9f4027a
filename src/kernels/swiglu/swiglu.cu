/* CUDA SwiGLU (Shazeer 2020) on a fused gate|up row: swiglu_cpu.c's math in fp32 on act
 * tensors, 16-byte vectors when F and the rows allow.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include "kernels/common/cuda_common.cuh"

namespace {
/* swiglu_cpu.c's sigmoid_stable without its branch: e = exp(−|x|) ≤ 1 never overflows, then
 * σ = 1/(1 + e) for x ≥ 0 and e/(1 + e) (as e·(1/(1 + e))) below; exp as exp2f(−|x|·log2 e), the
 * hardware's 2^x (relative error about 1e-7·|x| + 2 ulp, below the fp32 tests' 1e-5). ±inf give
 * 1 and 0, NaN NaN. The sign branch, expf's range reduction and the 64-bit index division below
 * made the kernels partly arithmetic-bound (H100: llama's forward at 2.28 TB/s). */
__device__ __forceinline__ float sigmoid_stable(float x) {
  float e = exp2f(-fabsf(x) * 1.4426950408889634f), r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

/* One thread per W consecutive features f of one row n: i indexes (n, f/W); I, the index type:
 * unsigned where N·F/W fits (one 32-bit division a vector), else size_t. */
template <int W, class T, class I>
__global__ void swiglu_fwd_k(T *out, const T *gu, int N, int F) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access */
  I fv = (I)F / W, total = (I)N * fv;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
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
template <int W, class T, class I>
__global__ void swiglu_bwd_k(T *dgu, const T *dout, const T *gu, int N, int F) {
  tzc_pdl_wait();
  I fv = (I)F / W, total = (I)N * fv;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
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

/* launch kern<W, T, unsigned> where the grid's last index fits in 32 bits, else <W, T, size_t>:
 * blocks of 256 threads over n = N·F/W items (the same arithmetic per element either way) */
#define SWIGLU_LAUNCH(kern, W, n, be, ...)                                                         \
  do {                                                                                             \
    size_t n_ = (n);                                                                               \
    if (n_ + 256u * (size_t)tzc_blocks(n_, 256) < 0xffffffffu)                                     \
      tzc_launch(be, kern<W, T, unsigned>, dim3(tzc_blocks(n_, 256)), dim3(256), 0, __VA_ARGS__);  \
    else                                                                                           \
      tzc_launch(be, kern<W, T, size_t>, dim3(tzc_blocks(n_, 256)), dim3(256), 0, __VA_ARGS__);    \
  } while (0)

/* vectors when every row start (n·2F, n·F, +F) stays 16-byte aligned */
template <class T> bool swiglu_vec(int F, const void *a, const void *b, const void *c) {
  return F % VW(T) == 0 && tzc_aligned16(a) && tzc_aligned16(b) && (!c || tzc_aligned16(c));
}
} // namespace

extern "C" void tzc_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  TZC_PROF(be, "swiglu_fwd");
  TZC_PROF_WORK(8.0 * N * F, 3.0 * N * F * tz_dtype_size(tzc(be)->act));
  if (N <= 0 || F <= 0) return;
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *x = (const T *)tzc_ptr(gu);
    if (swiglu_vec<T>(F, o, x, nullptr))
      SWIGLU_LAUNCH(swiglu_fwd_k, VW(T), (size_t)N * F / VW(T), be, o, x, N, F);
    else
      SWIGLU_LAUNCH(swiglu_fwd_k, 1, (size_t)N * F, be, o, x, N, F);
    TZC_LAUNCHED();
  });
}

extern "C" void tzc_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N,
                               int F) {
  TZC_PROF(be, "swiglu_bwd");
  TZC_PROF_WORK(16.0 * N * F, 5.0 * N * F * tz_dtype_size(tzc(be)->act));
  if (N <= 0 || F <= 0) return;
  TZC_DISPATCH_ACT(be, {
    T *d = (T *)tzc_ptr(dgu);
    const T *dy = (const T *)tzc_ptr(dout), *x = (const T *)tzc_ptr(gu);
    if (swiglu_vec<T>(F, d, dy, x))
      SWIGLU_LAUNCH(swiglu_bwd_k, VW(T), (size_t)N * F / VW(T), be, d, dy, x, N, F);
    else
      SWIGLU_LAUNCH(swiglu_bwd_k, 1, (size_t)N * F, be, d, dy, x, N, F);
    TZC_LAUNCHED();
  });
}
