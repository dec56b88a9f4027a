/* GeLU, tanh approximation (Hendrycks & Gimpel 2016): llm.c gelu_forward / gelu_backward. */
#include <math.h>

#include "kernels/common/fastmath.h"
#include "kernels/cpu_kernels.h"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* The seed clamps x to [-100, 100] inside the tanh argument so that x³ cannot overflow
 * (inf·0 = NaN in the derivative). The clamp is exact: for |x| ≥ 100 the argument is
 * ≥ 3.5e4 and tanh is ±1 in fp32 either way; the outer x stays unclamped. */
static inline float clamp100(float x) { return x < -100.0f ? -100.0f : (x > 100.0f ? 100.0f : x); }

/* tanh is never called: with u as below, 1 + tanh u = 2σ(2u) and 1 − tanh² u = 4σ(2u)(1 − σ(2u)),
 * σ(z) = 1 / (1 + e^−z), the exponential being tz_expf (fastmath.h): no libm call, so the
 * loops vectorize, and every operation is an unfused IEEE add, multiply or divide in a fixed
 * order, so the bits are the same on every instruction set (glibc's tanhf took 2/3 of a CPU
 * step's GeLU time). e^−2u overflows to +inf for u < −44: σ = 1/(1 + inf) = 0, exact. */
static inline float sigmoid2u(float xc) {
  float u = GELU_K * (xc + 0.044715f * xc * xc * xc);
  return 1.0f / (1.0f + tz_expf(-2.0f * u));
}

/* out [n] = 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) = x·σ(2u), fp32, elementwise. */
void tz_cpu_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  float *o = TZ_F(out);
  const float *x = TZ_F(inp);
#pragma omp parallel for simd schedule(static) if (n > 4096)
  for (size_t i = 0; i < n; i++) o[i] = x[i] * sigmoid2u(clamp100(x[i]));
}

/* dinp [n] = dout · gelu'(x) (written, =). With u as above:
 * gelu'(x) = 0.5(1 + tanh u) + 0.5x · sech²(u) · √(2/π)(1 + 3·0.044715x²)
 *          = σ + 2x·σ(1 − σ)·√(2/π)(1 + 3·0.044715x²),  σ = σ(2u);
 * σ(1 − σ) ≥ 0 and exactly 0 once σ saturates. */
void tz_cpu_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n) {
  float *dx = TZ_F(dinp);
  const float *x = TZ_F(inp), *dy = TZ_F(dout);
#pragma omp parallel for simd schedule(static) if (n > 4096)
  for (size_t i = 0; i < n; i++) {
    float xc = clamp100(x[i]);
    float sg = sigmoid2u(xc);
    float g = sg + 2.0f * xc * (sg * (1.0f - sg)) * GELU_K * (1.0f + 3.0f * 0.044715f * xc * xc);
    dx[i] = g * dy[i];
  }
}
