/* RMSNorm (Zhang & Sennrich 2019), llama2.c rmsnorm() with the saved statistic of llm.c's
 * layernorm_forward, and its backward. */
#include <math.h>

#include "kernels/cpu_kernels.h"

/* out [N,C], rstd [N] (saved), inp [N,C], w [C]; fp32.
 * rstd = 1/sqrt(mean(x²) + eps); out = x · rstd · w. */
void tz_cpu_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp,
                        tz_slice w, int N, int C, float eps) {
  float *o = TZ_F(out), *rs = TZ_F(rstd);
  const float *x = TZ_F(inp), *wt = TZ_F(w);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *xn = x + (size_t)n * C;
    float *on = o + (size_t)n * C;
    float ss = 0.0f;
    for (int c = 0; c < C; c++) ss += xn[c] * xn[c];
    float r = 1.0f / sqrtf(ss / C + eps);
    for (int c = 0; c < C; c++) on[c] = xn[c] * r * wt[c];
    rs[n] = r;
  }
}

/* dinp [N,C] +=, dw [C] +=; dout, inp [N,C]; w [C]; rstd [N].
 * With g = w ⊙ dout: dx = rstd·g − x · rstd³ · (Σ_c g_c x_c) / C, dw += Σ_n dout ⊙ x · rstd.
 * Two passes so nothing is shared between threads: rows for dinp, then column blocks for
 * dw (each column summed over n in order: deterministic for any thread count). */
void tz_cpu_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout,
                        tz_slice inp, tz_slice w, tz_slice rstd, int N, int C) {
  float *dx = TZ_F(dinp), *dwt = TZ_F(dw);
  const float *dy = TZ_F(dout), *x = TZ_F(inp), *wt = TZ_F(w), *rs = TZ_F(rstd);
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; n++) {
      const float *xn = x + (size_t)n * C, *dn = dy + (size_t)n * C;
      float *dxn = dx + (size_t)n * C;
      float r = rs[n], dot = 0.0f;
      for (int c = 0; c < C; c++) dot += wt[c] * dn[c] * xn[c];
      float k = r * r * r * dot / C;
      for (int c = 0; c < C; c++) dxn[c] += r * wt[c] * dn[c] - k * xn[c];
    }
#pragma omp for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
      int c1 = c0 + 16 < C ? c0 + 16 : C;
      float acc[16] = {0};
      for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C, *dn = dy + (size_t)n * C;
        for (int c = c0; c < c1; c++) acc[c - c0] += dn[c] * xn[c] * rs[n];
      }
      for (int c = c0; c < c1; c++) dwt[c] += acc[c - c0];
    }
  }
}
