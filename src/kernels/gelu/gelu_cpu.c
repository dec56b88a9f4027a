/* GeLU, tanh approximation (Hendrycks & Gimpel 2016): llm.c gelu_forward / gelu_backward. */
#include <math.h>

#include "kernels/cpu_kernels.h"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* The seed clamps x to [-100, 100] inside the tanh argument so that x³ cannot overflow
 * (inf·0 = NaN in the derivative). The clamp is exact: for |x| ≥ 100 the argument is
 * ≥ 3.5e4 and tanh is ±1 in fp32 either way; the outer x stays unclamped. */
static inline float clamp100(float x) { return x < -100.0f ? -100.0f : (x > 100.0f ? 100.0f : x); }

/* out [n] = 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))), fp32, elementwise. */
void tz_cpu_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  float *o = TZ_F(out);
  const float *x = TZ_F(inp);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    float xc = clamp100(x[i]);
    float u = GELU_K * (xc + 0.044715f * xc * xc * xc);
    o[i] = 0.5f * x[i] * (1.0f + tanhf(u));
  }
}

/* dinp [n] = dout · gelu'(x) (written, =). With u as above:
 * gelu'(x) = 0.5(1 + tanh u) + 0.5x · sech²(u) · √(2/π)(1 + 3·0.044715x²).
 * sech² is computed as 1 − tanh² which is ≥ 0 and exactly 0 once tanh saturates. */
void tz_cpu_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n) {
  float *dx = TZ_F(dinp);
  const float *x = TZ_F(inp), *dy = TZ_F(dout);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    float xc = clamp100(x[i]);
    float u = GELU_K * (xc + 0.044715f * xc * xc * xc);
    float th = tanhf(u);
    float sech2 = 1.0f - th * th;
    float g = 0.5f * (1.0f + th) + 0.5f * xc * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * xc * xc);
    dx[i] = g * dy[i];
  }
}
