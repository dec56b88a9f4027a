/* CUDA RMSNorm (Zhang & Sennrich 2019): rmsnorm_cpu.c's math in fp32 on act rows.
 * Forward: one warp per row, out act, rstd fp32. Backward: where 16-byte rows allow (C % W == 0,
 * C ≤ 2048 in bf16, 1024 in fp32; dinp, dout, inp and w 16-byte aligned), layernorm.cu's one-pass kernel in its RMS form reads each row once for dinp
 * and dw (tzc_rmsnorm_bwd_onepass; H100, llama C 768: the two passes below took 0.0589 ms a call,
 * 43 % of the DRAM floor); otherwise one warp per row for dinp (+=, the residual stream's
 * gradient, act dtype), and dw (+=, fp32) through the deterministic tiled column sum of
 * cuda_common.cuh.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int ROWS_PER_BLOCK = 4; /* warps per block, one row each */

template <int W, class T>
__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
rms_fwd_k(T *out, float *rstd, const T *inp, const T *w, int N, int C, float eps) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access or return */
  int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= N) return;
  const T *x = inp + (size_t)row * C;
  float ss = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W];
    tzc_ld<W>(x + c, f);
#pragma unroll
    for (int j = 0; j < W; j++) ss += f[j] * f[j];
  }
  ss = tzc_warp_sum(ss);
  float r = 1.0f / sqrtf(ss / C + eps);
  T *o = out + (size_t)row * C;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W], g[W];
    tzc_ld<W>(x + c, f);
    tzc_ld<W>(w + c, g);
#pragma unroll
    for (int j = 0; j < W; j++) f[j] = f[j] * r * g[j];
    tzc_st<W>(o + c, f);
  }
  if (lane == 0) rstd[row] = r;
}

/* dx += r·w·dy − x·r³·(Σ_c w·dy·x)/C */
template <int W, class T>
__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
rms_bwd_rows_k(T *dinp, const T *dout, const T *inp, const T *w, const float *rstd, int N,
               int C) {
  tzc_pdl_wait();
  int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= N) return;
  const T *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
  T *dx = dinp + (size_t)row * C;
  float dot = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float a[W], b[W], g[W];
    tzc_ld<W>(x + c, a);
    tzc_ld<W>(dy + c, b);
    tzc_ld<W>(w + c, g);
#pragma unroll
    for (int j = 0; j < W; j++) dot += g[j] * b[j] * a[j];
  }
  dot = tzc_warp_sum(dot);
  float r = rstd[row], k = r * r * r * dot / C;
  for (int c = lane * W; c < C; c += 32 * W) {
    float a[W], b[W], g[W], d[W];
    tzc_ld<W>(x + c, a);
    tzc_ld<W>(dy + c, b);
    tzc_ld<W>(w + c, g);
    tzc_ld<W>(dx + c, d);
#pragma unroll
    for (int j = 0; j < W; j++) d[j] += r * g[j] * b[j] - k * a[j];
    tzc_st<W>(dx + c, d);
  }
}

/* dw summand of row n (the tiled column sum): dy·x·rstd */
template <int W, class T> struct RmsDwTerm {
  const T *dout, *inp;
  const float *rstd;
  int C;
  __device__ __forceinline__ void operator()(int n, int c, float *v, float *) const {
    float x[W];
    tzc_ld<W>(dout + (size_t)n * C + c, v);
    tzc_ld<W>(inp + (size_t)n * C + c, x);
    float r = rstd[n];
#pragma unroll
    for (int j = 0; j < W; j++) v[j] = v[j] * x[j] * r;
  }
};

template <class T> bool rows_vec(int C, const void *a, const void *b, const void *c,
                                 const void *d) {
  return C % VW(T) == 0 && tzc_aligned16(a) && tzc_aligned16(b) && tzc_aligned16(c) &&
         (!d || tzc_aligned16(d));
}
} // namespace

extern "C" void tzc_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp,
                                tz_slice w, int N, int C, float eps) {
  TZC_PROF(be, "rmsnorm_fwd");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(4.0 * N * C, 2.0 * N * C * es + 4.0 * N);
  if (N <= 0 || C <= 0) return;
  const dim3 grid(tzc_blocks(N, ROWS_PER_BLOCK)), block(32 * ROWS_PER_BLOCK);
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *x = (const T *)tzc_ptr(inp), *g = (const T *)tzc_w(be, w);
    float *rs = (float *)tzc_ptr(rstd);
    if (rows_vec<T>(C, o, x, g, nullptr))
      tzc_launch(be, rms_fwd_k<VW(T), T>, grid, block, 0, o, rs, x, g, N, C, eps);
    else
      tzc_launch(be, rms_fwd_k<1, T>, grid, block, 0, o, rs, x, g, N, C, eps);
    TZC_LAUNCHED();
  });
}

extern "C" void tzc_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout,
                                tz_slice inp, tz_slice w, tz_slice rstd, int N, int C) {
  TZC_PROF(be, "rmsnorm_bwd");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(10.0 * N * C, 4.0 * N * C * es + 8.0 * N); /* the one-pass kernel's traffic (layernorm_bwd's) */
  if (N <= 0 || C <= 0) return;
  if (tzc_rmsnorm_bwd_onepass(be, dinp, dw, dout, inp, w, rstd, N, C)) return;
  TZC_PROF_WORK(10.0 * N * C, 6.0 * N * C * es + 8.0 * N); /* two passes and the column sum */
  TZC_DISPATCH_ACT(be, {
    T *dx = (T *)tzc_ptr(dinp);
    const T *dy = (const T *)tzc_ptr(dout), *x = (const T *)tzc_ptr(inp);
    const T *g = (const T *)tzc_w(be, w);
    const float *rs = (const float *)tzc_ptr(rstd);
    const dim3 grid(tzc_blocks(N, ROWS_PER_BLOCK)), block(32 * ROWS_PER_BLOCK);
    if (rows_vec<T>(C, dx, dy, x, g)) {
      tzc_launch(be, rms_bwd_rows_k<VW(T), T>, grid, block, 0, dx, dy, x, g, rs, N, C);
      TZC_LAUNCHED();
      tzc_colsum<VW(T), 1>(be, (float *)tzc_ptr(dw), nullptr, N, C,
                           RmsDwTerm<VW(T), T>{dy, x, rs, C});
    } else {
      tzc_launch(be, rms_bwd_rows_k<1, T>, grid, block, 0, dx, dy, x, g, rs, N, C);
      TZC_LAUNCHED();
      tzc_colsum<1, 1>(be, (float *)tzc_ptr(dw), nullptr, N, C, RmsDwTerm<1, T>{dy, x, rs, C});
    }
  });
}
