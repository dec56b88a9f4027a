/* Fixed-lane float reductions for the CPU kernels: the same bits on every x86-64 CPU.
 *
 * A sum of n terms is kept in 16 lanes, term i going to lane i % 16 in index order, and the
 * lanes are folded pairwise in a fixed tree (lanes 0-7 += 8-15, then 0-3 += 4-7, ...). The
 * compiler maps the lanes onto one zmm, two ymm or four xmm registers (or none) without
 * changing any lane's arithmetic: products and sums stay unfused (-ffp-contract=off, set in
 * CMakeLists.txt) and lanes are chosen by index, never by address. So the result does not
 * depend on the instruction set of the build (-march) or the CPU, nor on buffer alignment.
 * `#pragma omp simd reduction(+:s)`, which these replace, lets the compiler pick the number
 * of partial sums (8 with AVX2, 16 with AVX-512) and peel iterations until an aligned
 * address: its bits changed with both (issue 21, docs/RELIABILITY.md).
 */
#ifndef TZ_KERNELS_LANES16_H
#define TZ_KERNELS_LANES16_H
#include "kernels/common/fastmath.h"

#define TZ_LANES 16

/* Σ lanes in the fixed tree order; l is clobbered. */
static inline float tz_lanes_fold(float l[TZ_LANES]) {
  for (int w = TZ_LANES / 2; w > 0; w /= 2)
    for (int i = 0; i < w; i++) l[i] += l[i + w];
  return l[0];
}

/* Σ_i a[i]·b[i], i in [0, n). */
static inline float tz_dot16(const float *a, const float *b, int n) {
  float l[TZ_LANES] = {0};
  int i = 0;
  for (; i + TZ_LANES <= n; i += TZ_LANES)
    for (int j = 0; j < TZ_LANES; j++) l[j] += a[i + j] * b[i + j];
  for (int j = 0; i + j < n; j++) l[j] += a[i + j] * b[i + j];
  return tz_lanes_fold(l);
}

/* Two dot products over the same range at once: *s = Σ a·b, *t = Σ c·d. */
static inline void tz_dot16x2(const float *a, const float *b, const float *c, const float *d,
                              int n, float *s, float *t) {
  float l[TZ_LANES] = {0}, m[TZ_LANES] = {0};
  int i = 0;
  for (; i + TZ_LANES <= n; i += TZ_LANES)
    for (int j = 0; j < TZ_LANES; j++) {
      l[j] += a[i + j] * b[i + j];
      m[j] += c[i + j] * d[i + j];
    }
  for (int j = 0; i + j < n; j++) {
    l[j] += a[i + j] * b[i + j];
    m[j] += c[i + j] * d[i + j];
  }
  *s = tz_lanes_fold(l);
  *t = tz_lanes_fold(m);
}

/* Σ_i tz_expf(x[i] − mx); with out != NULL also out[i] = tz_expf(x[i] − mx) (out may be x). */
static inline float tz_sumexp16(const float *x, float mx, int n, float *out) {
  float l[TZ_LANES] = {0};
  int i = 0;
  for (; i + TZ_LANES <= n; i += TZ_LANES)
    for (int j = 0; j < TZ_LANES; j++) {
      float e = tz_expf(x[i + j] - mx);
      if (out) out[i + j] = e;
      l[j] += e;
    }
  for (int j = 0; i + j < n; j++) {
    float e = tz_expf(x[i + j] - mx);
    if (out) out[i + j] = e;
    l[j] += e;
  }
  return tz_lanes_fold(l);
}

#endif
