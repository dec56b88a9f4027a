/* CUDA RoPE (Su et al. 2021, llama2.c's adjacent pairs (2i, 2i+1)), in place on the q and k
 * heads of fused qkv act rows (rope_cpu.c's math).
 *
 * Matching the CPU to rounding: the frequency table freq_i = 1/theta^(2i/head_dim) is
 * computed on the host with the very float expression of rope_cpu.c (libm powf, one float
 * division) and passed by value; angle = (float)pos · freq_i is one fp32 multiply on both
 * sides; cos/sin are evaluated in double and rounded to float (the correctly rounded value,
 * which glibc's cosf/sinf also return except in rare cases) instead of CUDA's 2-ulp
 * sinf/cosf; the rotation uses explicitly rounded multiplies and adds (no FMA contraction,
 * like the ISO C build of the CPU kernels). One thread per (row, pair), looping over the
 * n_head + n_kv_head heads with one cos/sin pair. */
#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int ROPE_MAX_PAIRS = 256; /* head_dim ≤ 512 */
struct rope_freqs {
  float f[ROPE_MAX_PAIRS];
};

/* pair loads/stores: one 2-element access when the row base allows (P2), else scalars */
template <bool P2, class T> __device__ __forceinline__ void ld2(const T *p, float &a, float &b) {
  if constexpr (P2 && sizeof(T) == 4) {
    float2 v = *reinterpret_cast<const float2 *>(p);
    a = v.x, b = v.y;
  } else if constexpr (P2) {
    __nv_bfloat162 v = *reinterpret_cast<const __nv_bfloat162 *>(p);
    a = __low2float(v), b = __high2float(v);
  } else {
    a = tzc_tof(p[0]), b = tzc_tof(p[1]);
  }
}
template <bool P2, class T> __device__ __forceinline__ void st2(T *p, float a, float b) {
  if constexpr (P2 && sizeof(T) == 4) {
    *reinterpret_cast<float2 *>(p) = make_float2(a, b);
  } else if constexpr (P2) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(a, b);
  } else {
    p[0] = tzc_from<T>(a), p[1] = tzc_from<T>(b);
  }
}

template <bool P2, class T>
__global__ void rope_k(T *qkv, int N, int T_, int nh, int stride, int hd, int pos0, int dir,
                       rope_freqs fr, const int *posv) {
  int half = hd / 2;
  size_t total = (size_t)N * half;
  for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (size_t)gridDim.x * blockDim.x) {
    int n = (int)(idx / half), p = (int)(idx % half);
    int pos = posv ? posv[n] : pos0 + n % T_; /* posv: decoding rows at their own positions */
    float val = (float)pos * fr.f[p];
    double sd, cd;
    sincos((double)val, &sd, &cd);
    float fcr = (float)cd, fci = dir < 0 ? -(float)sd : (float)sd;
    T *row = qkv + (size_t)n * stride + 2 * p;
    for (int h = 0; h < nh; h++) {
      T *v = row + (size_t)h * hd;
      float v0, v1;
      ld2<P2>(v, v0, v1);
      float r0 = __fsub_rn(__fmul_rn(v0, fcr), __fmul_rn(v1, fci));
      float r1 = __fadd_rn(__fmul_rn(v0, fci), __fmul_rn(v1, fcr));
      st2<P2>(v, r0, r1);
    }
  }
}
} // namespace

extern "C" void tzc_rope(tz_backend *be, tz_slice qkv, int B, int T_, int n_head, int n_kv_head,
                         int head_dim, int pos0, float theta, int dir) {
  TZC_PROF(be, "rope");
  int N = B * T_, nh = n_head + n_kv_head, stride = (n_head + 2 * n_kv_head) * head_dim;
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(6.0 * N * nh * head_dim / 2, 2.0 * N * nh * head_dim * es);
  if (N <= 0 || nh <= 0 || head_dim <= 0) return;
  TZC_ASSERT(head_dim % 2 == 0 && head_dim / 2 <= ROPE_MAX_PAIRS);
  rope_freqs fr;
  for (int i = 0; i < head_dim; i += 2) fr.f[i / 2] = 1.0f / powf(theta, i / (float)head_dim);
  cudaStream_t st = tzc(be)->stream;
  unsigned grid = tzc_blocks((size_t)N * (head_dim / 2), 256);
  TZC_DISPATCH_ACT(be, {
    T *x = (T *)tzc_ptr(qkv);
    if (((uintptr_t)x & (2 * sizeof(T) - 1)) == 0)
      rope_k<true><<<grid, 256, 0, st>>>(x, N, T_, nh, stride, head_dim, pos0, dir, fr, nullptr);
    else
      rope_k<false><<<grid, 256, 0, st>>>(x, N, T_, nh, stride, head_dim, pos0, dir, fr, nullptr);
    TZC_LAUNCHED();
  });
}

/* backend.h's rope_pos: rope_k with row n at position pos[n] (device int32), dir +1. */
extern "C" void tzc_rope_pos(tz_backend *be, tz_slice qkv, tz_slice pos, int B, int n_head, int n_kv_head,
                             int head_dim, float theta) {
  TZC_PROF(be, "rope");
  int N = B, nh = n_head + n_kv_head, stride = (n_head + 2 * n_kv_head) * head_dim;
  if (N <= 0 || nh <= 0 || head_dim <= 0) return;
  TZC_ASSERT(head_dim % 2 == 0 && head_dim / 2 <= ROPE_MAX_PAIRS);
  rope_freqs fr;
  for (int i = 0; i < head_dim; i += 2) fr.f[i / 2] = 1.0f / powf(theta, i / (float)head_dim);
  cudaStream_t st = tzc(be)->stream;
  unsigned grid = tzc_blocks((size_t)N * (head_dim / 2), 256);
  const int *pv = (const int *)tzc_ptr(pos);
  TZC_DISPATCH_ACT(be, {
    T *x = (T *)tzc_ptr(qkv);
    if (((uintptr_t)x & (2 * sizeof(T) - 1)) == 0)
      rope_k<true><<<grid, 256, 0, st>>>(x, N, 1, nh, stride, head_dim, 0, 1, fr, pv);
    else
      rope_k<false><<<grid, 256, 0, st>>>(x, N, 1, nh, stride, head_dim, 0, 1, fr, pv);
    TZC_LAUNCHED();
  });
}
