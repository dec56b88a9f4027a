/* LayerNorm (Ba et al. 2016): llm.c layernorm_forward / layernorm_backward. */
#include <math.h>

#include "kernels/cpu_kernels.h"

/* out [N,C], mean [N], rstd [N] (saved), inp [N,C], w [C], b [C]; fp32.
 * mean = Σx/C; var = Σ(x − mean)²/C (two-pass, biased like PyTorch);
 * rstd = 1/sqrt(var + eps); out = (x − mean) · rstd · w + b. */
void tz_cpu_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd,
                          tz_slice inp, tz_slice w, tz_slice b, int N, int C, float eps) {
  float *o = TZ_F(out), *mu = TZ_F(mean), *rs = TZ_F(rstd);
  const float *x = TZ_F(inp), *wt = TZ_F(w), *bs = TZ_F(b);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *xn = x + (size_t)n * C;
    float *on = o + (size_t)n * C;
    float m = 0.0f;
    for (int c = 0; c < C; c++) m += xn[c];
    m /= C;
    float v = 0.0f;
    for (int c = 0; c < C; c++) v += (xn[c] - m) * (xn[c] - m);
    float r = 1.0f / sqrtf(v / C + eps);
    for (int c = 0; c < C; c++) on[c] = (xn[c] - m) * r * wt[c] + bs[c];
    mu[n] = m;
    rs[n] = r;
  }
}

/* dinp [N,C] +=, dw [C] +=, db [C] +=; dout, inp [N,C]; w [C]; mean, rstd [N].
 * With xh = (x − mean)·rstd and g = w ⊙ dout (llm.c's three terms):
 * dx = rstd · (g − mean_c(g) − xh · mean_c(g ⊙ xh)); dw += Σ_n dout ⊙ xh; db += Σ_n dout.
 * Rows pass for dinp, then a column-block pass for dw/db (deterministic, no sharing). */
void tz_cpu_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db,
                          tz_slice dout, tz_slice inp, tz_slice w, tz_slice mean,
                          tz_slice rstd, int N, int C) {
  float *dx = TZ_F(dinp), *dwt = TZ_F(dw), *dbs = TZ_F(db);
  const float *dy = TZ_F(dout), *x = TZ_F(inp), *wt = TZ_F(w), *mu = TZ_F(mean),
              *rs = TZ_F(rstd);
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; n++) {
      const float *xn = x + (size_t)n * C, *dn = dy + (size_t)n * C;
      float *dxn = dx + (size_t)n * C;
      float m = mu[n], r = rs[n], gm = 0.0f, gxm = 0.0f;
      for (int c = 0; c < C; c++) {
        float g = wt[c] * dn[c];
        gm += g;
        gxm += g * (xn[c] - m) * r;
      }
      gm /= C;
      gxm /= C;
      for (int c = 0; c < C; c++)
        dxn[c] += r * (wt[c] * dn[c] - gm - (xn[c] - m) * r * gxm);
    }
#pragma omp for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
      int c1 = c0 + 16 < C ? c0 + 16 : C;
      float aw[16] = {0}, ab[16] = {0};
      for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C, *dn = dy + (size_t)n * C;
        for (int c = c0; c < c1; c++) {
          aw[c - c0] += dn[c] * (xn[c] - mu[n]) * rs[n];
          ab[c - c0] += dn[c];
        }
      }
      for (int c = c0; c < c1; c++) {
        dwt[c] += aw[c - c0];
        dbs[c] += ab[c - c0];
      }
    }
  }
}
