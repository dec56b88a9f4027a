/* CUDA LayerNorm (Ba et al. 2016): layernorm_cpu.c's math in fp32 on act rows.
 * Forward: one warp per row (two-pass mean and variance over the row, as the CPU), out act,
 * mean/rstd fp32. Backward: one warp per row for dinp (+=, act), and dw, db (+=, fp32)
 * through the deterministic two-pass column sum of cuda_common.cuh. */
#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int ROWS_PER_BLOCK = 4; /* warps per block, one row each */

template <int W, class T>
__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
ln_fwd_k(T *out, float *mean, float *rstd, const T *inp, const T *w, const T *b, int N, int C,
         float eps) {
  int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= N) return;
  const T *x = inp + (size_t)row * C;
  float s = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W];
    tzc_ld<W>(x + c, f);
#pragma unroll
    for (int j = 0; j < W; j++) s += f[j];
  }
  float m = tzc_warp_sum(s) / C;
  float v = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W];
    tzc_ld<W>(x + c, f);
#pragma unroll
    for (int j = 0; j < W; j++) v += (f[j] - m) * (f[j] - m);
  }
  v = tzc_warp_sum(v);
  float r = 1.0f / sqrtf(v / C + eps);
  T *o = out + (size_t)row * C;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W], g[W], h[W];
    tzc_ld<W>(x + c, f);
    tzc_ld<W>(w + c, g);
    tzc_ld<W>(b + c, h);
#pragma unroll
    for (int j = 0; j < W; j++) f[j] = (f[j] - m) * r * g[j] + h[j];
    tzc_st<W>(o + c, f);
  }
  if (lane == 0) mean[row] = m, rstd[row] = r;
}

/* dx += r·(w·dy − mean_c(w·dy) − xh·mean_c(w·dy·xh)), xh = (x − mean)·r */
template <int W, class T>
__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
ln_bwd_rows_k(T *dinp, const T *dout, const T *inp, const T *w, const float *mean,
              const float *rstd, int N, int C) {
  int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= N) return;
  const T *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
  T *dx = dinp + (size_t)row * C;
  float m = mean[row], r = rstd[row], gm = 0.0f, gxm = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float a[W], d[W], g[W];
    tzc_ld<W>(x + c, a);
    tzc_ld<W>(dy + c, d);
    tzc_ld<W>(w + c, g);
#pragma unroll
    for (int j = 0; j < W; j++) {
      float gg = g[j] * d[j];
      gm += gg;
      gxm += gg * (a[j] - m) * r;
    }
  }
  gm = tzc_warp_sum(gm) / C;
  gxm = tzc_warp_sum(gxm) / C;
  for (int c = lane * W; c < C; c += 32 * W) {
    float a[W], d[W], g[W], o[W];
    tzc_ld<W>(x + c, a);
    tzc_ld<W>(dy + c, d);
    tzc_ld<W>(w + c, g);
    tzc_ld<W>(dx + c, o);
#pragma unroll
    for (int j = 0; j < W; j++) o[j] += r * (g[j] * d[j] - gm - (a[j] - m) * r * gxm);
    tzc_st<W>(dx + c, o);
  }
}

/* pass 1 of dw, db: partw[chunk, c] = Σ dy·(x − mean)·rstd, partb[chunk, c] = Σ dy */
template <class T>
__global__ void __launch_bounds__(TZC_COL_THREADS)
ln_dwdb_part_k(float *partw, float *partb, const T *dout, const T *inp, const float *mean,
               const float *rstd, int N, int C, int rpc) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  int n0 = blockIdx.y * rpc, n1 = min(N, n0 + rpc);
  float sw = 0.0f, sb = 0.0f;
#pragma unroll 8
  for (int n = n0; n < n1; n++) {
    size_t i = (size_t)n * C + c;
    float d = tzc_tof(dout[i]);
    sw += d * (tzc_tof(inp[i]) - mean[n]) * rstd[n];
    sb += d;
  }
  partw[(size_t)blockIdx.y * C + c] = sw;
  partb[(size_t)blockIdx.y * C + c] = sb;
}

template <class T> bool rows_vec(int C, const void *a, const void *b, const void *c,
                                 const void *d) {
  return C % VW(T) == 0 && tzc_aligned16(a) && tzc_aligned16(b) && tzc_aligned16(c) &&
         tzc_aligned16(d);
}
} // namespace

extern "C" void tzc_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd,
                                  tz_slice inp, tz_slice w, tz_slice b, int N, int C, float eps) {
  TZC_PROF(be, "layernorm_fwd");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(7.0 * N * C, 2.0 * N * C * es + 8.0 * N);
  if (N <= 0 || C <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  unsigned grid = tzc_blocks(N, ROWS_PER_BLOCK);
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *x = (const T *)tzc_ptr(inp), *g = (const T *)tzc_w(be, w),
            *h = (const T *)tzc_w(be, b);
    float *mu = (float *)tzc_ptr(mean), *rs = (float *)tzc_ptr(rstd);
    if (rows_vec<T>(C, o, x, g, h))
      ln_fwd_k<VW(T)><<<grid, 32 * ROWS_PER_BLOCK, 0, st>>>(o, mu, rs, x, g, h, N, C, eps);
    else
      ln_fwd_k<1><<<grid, 32 * ROWS_PER_BLOCK, 0, st>>>(o, mu, rs, x, g, h, N, C, eps);
    TZC_LAUNCHED();
  });
}

extern "C" void tzc_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db,
                                  tz_slice dout, tz_slice inp, tz_slice w, tz_slice mean,
                                  tz_slice rstd, int N, int C) {
  TZC_PROF(be, "layernorm_bwd");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(14.0 * N * C, 6.0 * N * C * es + 8.0 * N);
  if (N <= 0 || C <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  int rpc = tzc_col_rpc(N), P = tzc_col_chunks(N);
  size_t pb = tzc_round256((size_t)P * C * sizeof(float));
  char *s = (char *)tzc_scratch(be, 2 * pb);
  float *partw = (float *)s, *partb = (float *)(s + pb);
  TZC_DISPATCH_ACT(be, {
    T *dx = (T *)tzc_ptr(dinp);
    const T *dy = (const T *)tzc_ptr(dout), *x = (const T *)tzc_ptr(inp);
    const T *g = (const T *)tzc_w(be, w);
    const float *mu = (const float *)tzc_ptr(mean), *rs = (const float *)tzc_ptr(rstd);
    unsigned grid = tzc_blocks(N, ROWS_PER_BLOCK);
    if (rows_vec<T>(C, dx, dy, x, g))
      ln_bwd_rows_k<VW(T)><<<grid, 32 * ROWS_PER_BLOCK, 0, st>>>(dx, dy, x, g, mu, rs, N, C);
    else
      ln_bwd_rows_k<1><<<grid, 32 * ROWS_PER_BLOCK, 0, st>>>(dx, dy, x, g, mu, rs, N, C);
    TZC_LAUNCHED();
    dim3 pg(tzc_blocks(C, TZC_COL_THREADS), (unsigned)P);
    ln_dwdb_part_k<T><<<pg, TZC_COL_THREADS, 0, st>>>(partw, partb, dy, x, mu, rs, N, C, rpc);
    TZC_LAUNCHED();
  });
  tzc_colsum_final_k<<<tzc_blocks(C, TZC_COL_THREADS), TZC_COL_THREADS, 0, st>>>(
      (float *)tzc_ptr(dw), partw, (float *)tzc_ptr(db), partb, P, C);
  TZC_LAUNCHED();
}
