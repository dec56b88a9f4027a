/* SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer"), llama2.c forward()'s
 * "SwiGLU non-linearity" on a fused gate|up row, and its backward (seed's
 * ffn_swiglu_backward). */
#include <math.h>

#include "kernels/cpu_kernels.h"

/* Branch on the sign so exp() only sees x ≤ 0: no overflow to inf for any finite x, and
 * the result underflows cleanly to 0 or 1. */
static inline float sigmoid_stable(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

/* gu [N, 2F] (gate = cols [0,F), up = cols [F,2F)); out [N,F] = silu(gate) ⊙ up with
 * silu(g) = g·σ(g). fp32. */
void tz_cpu_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  float *o = TZ_F(out);
  const float *x = TZ_F(gu);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *g = x + (size_t)n * 2 * F, *u = g + F;
    float *on = o + (size_t)n * F;
    for (int f = 0; f < F; f++) on[f] = g[f] * sigmoid_stable(g[f]) * u[f];
  }
}

/* dgu [N, 2F] written (=): dgate = dout·up·σ(g)(1 + g(1 − σ(g))), dup = dout·silu(g).
 * A NaN product becomes 0 (seed's guard: inf·0 from an overflowed activation must not
 * poison the whole gradient; the grad-norm check still sees any inf). */
void tz_cpu_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F) {
  float *d = TZ_F(dgu);
  const float *x = TZ_F(gu), *dy = TZ_F(dout);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *g = x + (size_t)n * 2 * F, *u = g + F, *dn = dy + (size_t)n * F;
    float *dg = d + (size_t)n * 2 * F, *du = dg + F;
    for (int f = 0; f < F; f++) {
      float s = sigmoid_stable(g[f]);
      float a = dn[f] * u[f] * s * (1.0f + g[f] * (1.0f - s));
      float b = dn[f] * g[f] * s;
      dg[f] = isnan(a) ? 0.0f : a;
      du[f] = isnan(b) ? 0.0f : b;
    }
  }
}
