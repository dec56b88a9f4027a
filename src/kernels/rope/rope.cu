/* CUDA RoPE (Su et al. 2021, llama2.c's adjacent pairs (2i, 2i+1)), in place on the q and k
 * heads of fused qkv act rows (rope_cpu.c's math).
 *
 * Matching the CPU to rounding: the frequency table freq_i = 1/theta^(2i/head_dim) is
 * computed on the host with the very float expression of rope_cpu.c (libm powf, one float
 * division) and passed by value; angle = (float)pos · freq_i is one fp32 multiply on both
 * sides; cos/sin are evaluated in double and rounded to float (the correctly rounded value,
 * which glibc's cosf/sinf also return except in rare cases) instead of CUDA's 2-ulp
 * sinf/cosf; the rotation uses explicitly rounded multiplies and adds (no FMA contraction,
 * like the ISO C build of the CPU kernels).
 *
 * Two forms, the same arithmetic per element (so the same bits):
 * - rope_vec_k (16-byte rows: head_dim, the row stride and the base at 16 bytes): one thread
 *   per (row, 16-byte vector of a head slice: 4 pairs in bf16, 2 in fp32); its cos/sin pairs
 *   serve every head, which it reads ROPE_HB at a time, all loads before any store. The pair
 *   form below keeps one load in flight per thread (the compiler may not move a head's load
 *   above the previous head's store through the same pointer), so it was latency-bound: on an
 *   H100, llama's 24 rope calls a step took 1.47 ms, ~49 % of their DRAM floor.
 * - rope_k: one thread per (row, pair), looping over the n_head + n_kv_head heads with one
 *   cos/sin pair; any alignment.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
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

/* the rotation of one pair: explicitly rounded, no FMA (the CPU's ISO C arithmetic) */
__device__ __forceinline__ void rot(float &v0, float &v1, float fcr, float fci) {
  float r0 = __fsub_rn(__fmul_rn(v0, fcr), __fmul_rn(v1, fci));
  float r1 = __fadd_rn(__fmul_rn(v0, fci), __fmul_rn(v1, fcr));
  v0 = r0, v1 = r1;
}
/* cos and (dir-signed) sin of pos·freq, rounded from double */
__device__ __forceinline__ void cs(int pos, float freq, int dir, float &fcr, float &fci) {
  float val = (float)pos * freq;
  double sd, cd;
  sincos((double)val, &sd, &cd);
  fcr = (float)cd, fci = dir < 0 ? -(float)sd : (float)sd;
}

constexpr int ROPE_HB = 8; /* heads whose 16-byte vectors a thread has in flight together */
/* W = VW(T) elements (W/2 pairs) of every head of row n: thread i is (n, q), q indexing the
 * head_dim/W vectors of a head slice */
template <class T>
__global__ void rope_vec_k(T *qkv, int N, int T_, int nh, int stride, int hd, int pos0, int dir,
                           rope_freqs fr, const int *posv) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access */
  constexpr int W = VW(T);
  int qn = hd / W;
  size_t total = (size_t)N * qn;
  for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (size_t)gridDim.x * blockDim.x) {
    int n = (int)(idx / qn), q = (int)(idx % qn);
    int pos = posv ? posv[n] : pos0 + n % T_;
    T *row = qkv + (size_t)n * stride + (size_t)q * W;
    float v[ROPE_HB][W];
    /* the first heads' loads before the cos/sin: their double-precision sincos (W / 2 of
     * them) then runs while the loads are in flight (H100, llama shape: 24 calls 1.108 -> 1.040
     * ms a step, the same bits) */
#pragma unroll
    for (int u = 0; u < ROPE_HB; u++)
      if (u < nh) tzc_ld<W>(row + (size_t)u * hd, v[u]);
    float fcr[W / 2], fci[W / 2];
#pragma unroll
    for (int j = 0; j < W / 2; j++) cs(pos, fr.f[q * (W / 2) + j], dir, fcr[j], fci[j]);
    for (int h0 = 0; h0 < nh; h0 += ROPE_HB) {
      if (h0)
#pragma unroll
        for (int u = 0; u < ROPE_HB; u++)
          if (h0 + u < nh) tzc_ld<W>(row + (size_t)(h0 + u) * hd, v[u]);
#pragma unroll
      for (int u = 0; u < ROPE_HB; u++)
        if (h0 + u < nh) {
#pragma unroll
          for (int j = 0; j < W / 2; j++) rot(v[u][2 * j], v[u][2 * j + 1], fcr[j], fci[j]);
          tzc_st<W>(row + (size_t)(h0 + u) * hd, v[u]);
        }
    }
  }
}

template <bool P2, class T>
__global__ void rope_k(T *qkv, int N, int T_, int nh, int stride, int hd, int pos0, int dir,
                       rope_freqs fr, const int *posv) {
  tzc_pdl_wait();
  int half = hd / 2;
  size_t total = (size_t)N * half;
  for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (size_t)gridDim.x * blockDim.x) {
    int n = (int)(idx / half), p = (int)(idx % half);
    int pos = posv ? posv[n] : pos0 + n % T_; /* posv: decoding rows at their own positions */
    float fcr, fci;
    cs(pos, fr.f[p], dir, fcr, fci);
    T *row = qkv + (size_t)n * stride + 2 * p;
    for (int h = 0; h < nh; h++) {
      T *v = row + (size_t)h * hd;
      float v0, v1;
      ld2<P2>(v, v0, v1);
      rot(v0, v1, fcr, fci);
      st2<P2>(v, v0, v1);
    }
  }
}
} // namespace

/* Launch over N rows of qkv (row n at position posv[n] when posv, else pos0 + n % T_):
 * rope_vec_k where 16-byte vectors fit (and TEZGAH_CUDA_ROPE_PAIRS is not 1), else rope_k. */
static void rope_launch(tz_backend *be, tz_slice qkv, int N, int T_, int nh, int stride, int hd,
                        int pos0, int dir, float theta, const int *posv) {
  TZC_ASSERT(hd % 2 == 0 && hd / 2 <= ROPE_MAX_PAIRS);
  rope_freqs fr;
  for (int i = 0; i < hd; i += 2) fr.f[i / 2] = 1.0f / powf(theta, i / (float)hd);
  TZC_DISPATCH_ACT(be, {
    T *x = (T *)tzc_ptr(qkv);
    constexpr int W = VW(T);
    const dim3 pairs_grid(tzc_blocks((size_t)N * (hd / 2), 256));
    /* (the row stride is a multiple of hd, so hd % W keeps every head slice 16-byte aligned) */
    if (!tzc(be)->rope_pairs && hd % W == 0 && tzc_aligned16(x))
      tzc_launch(be, rope_vec_k<T>, dim3(tzc_blocks((size_t)N * (hd / W), 256)), dim3(256), 0, x, N, T_, nh, stride,
                 hd, pos0, dir, fr, posv);
    else if (((uintptr_t)x & (2 * sizeof(T) - 1)) == 0)
      tzc_launch(be, rope_k<true, T>, pairs_grid, dim3(256), 0, x, N, T_, nh, stride, hd, pos0, dir, fr, posv);
    else
      tzc_launch(be, rope_k<false, T>, pairs_grid, dim3(256), 0, x, N, T_, nh, stride, hd, pos0, dir, fr, posv);
    TZC_LAUNCHED();
  });
}

extern "C" void tzc_rope(tz_backend *be, tz_slice qkv, int B, int T_, int n_head, int n_kv_head,
                         int head_dim, int pos0, float theta, int dir) {
  TZC_PROF(be, "rope");
  int N = B * T_, nh = n_head + n_kv_head, stride = (n_head + 2 * n_kv_head) * head_dim;
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(6.0 * N * nh * head_dim / 2, 2.0 * N * nh * head_dim * es);
  if (N <= 0 || nh <= 0 || head_dim <= 0) return;
  rope_launch(be, qkv, N, T_, nh, stride, head_dim, pos0, dir, theta, nullptr);
}

/* backend.h's rope_pos: row n at position pos[n] (device int32), dir +1. */
extern "C" void tzc_rope_pos(tz_backend *be, tz_slice qkv, tz_slice pos, int B, int n_head, int n_kv_head,
                             int head_dim, float theta) {
  TZC_PROF(be, "rope");
  int N = B, nh = n_head + n_kv_head, stride = (n_head + 2 * n_kv_head) * head_dim;
  if (N <= 0 || nh <= 0 || head_dim <= 0) return;
  rope_launch(be, qkv, N, 1, nh, stride, head_dim, 0, 1, theta, (const int *)tzc_ptr(pos));
}
