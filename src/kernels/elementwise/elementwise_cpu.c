/* Elementwise and memory-like ops: fill, copy_rows (KV-cache writes), add (residual), sum_sq
 * (gradient norm, llm.c's global_norm_squared). */
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "kernels/cpu_kernels.h"

/* dst[0..n) = value. Every CPU tensor is fp32 (be->act == TZ_F32). */
void tz_cpu_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt) {
  TZ_ASSERT(dt == TZ_F32);
  float *d = TZ_F(dst);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) d[i] = value;
}

/* n act (fp32) elements to the host. */
void tz_cpu_download_act(tz_backend *be, float *dst, tz_slice src, size_t n) {
  memcpy(dst, TZ_F(src), n * sizeof(float));
}

/* dst[r*dst_stride + c] = src[r*src_stride + c], r < rows, c < cols (fp32, strides in
 * floats). memmove per row: the rows of one call may be views of the same buffer. */
void tz_cpu_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src,
                      size_t src_stride, int rows, int cols) {
  float *d = TZ_F(dst);
  const float *s = TZ_F(src);
  for (int r = 0; r < rows; r++)
    memmove(d + (size_t)r * dst_stride, s + (size_t)r * src_stride, (size_t)cols * sizeof(float));
}

/* out = a + b over n fp32 elements; out may alias a or b (each element is read before it
 * is written, by the same thread). */
void tz_cpu_add(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, size_t n) {
  float *o = TZ_F(out);
  const float *x = TZ_F(a), *y = TZ_F(b);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i];
}

/* out[0] = Σ x[i]² in fp64 (fp32 result). The sum is split into a fixed number of
 * contiguous blocks whatever the thread count; in a block, term lo + i goes to fp64 lane i % 8
 * (by index, never by address: the compiler maps the lanes onto registers of any width without
 * changing their arithmetic, so the same bits at every -march), the lanes are folded in a fixed
 * pairwise tree, and the blocks' sums are added in block order: bit-identical for any thread
 * count and instruction set. One chain per lane, not one for the block: the block's single
 * chain of dependent fp64 adds ran at one add per 4 cycles. A non-finite x gives a non-finite
 * result, which the training loop uses to skip the step. */
#define SUMSQ_BLOCKS 64
#define SUMSQ_LANES 8
void tz_cpu_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n) {
  const float *p = TZ_F(x);
  double part[SUMSQ_BLOCKS];
  size_t per = (n + SUMSQ_BLOCKS - 1) / SUMSQ_BLOCKS;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int b = 0; b < SUMSQ_BLOCKS; b++) {
    size_t lo = (size_t)b * per < n ? (size_t)b * per : n, hi = lo + per < n ? lo + per : n;
    double l[SUMSQ_LANES] = {0};
    size_t i = lo;
    for (; i + SUMSQ_LANES <= hi; i += SUMSQ_LANES)
      for (int j = 0; j < SUMSQ_LANES; j++) l[j] += (double)p[i + j] * (double)p[i + j];
    for (int j = 0; i + j < hi; j++) l[j] += (double)p[i + j] * (double)p[i + j];
    for (int w = SUMSQ_LANES / 2; w > 0; w /= 2)
      for (int j = 0; j < w; j++) l[j] += l[j + w];
    part[b] = l[0];
  }
  double s = 0.0;
  for (int b = 0; b < SUMSQ_BLOCKS; b++) s += part[b];
  TZ_F(out)[0] = (float)s;
}
