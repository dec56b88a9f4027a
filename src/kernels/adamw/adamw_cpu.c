/* Multi-tensor AdamW (Loshchilov & Hutter 2019, decoupled weight decay), llm.c
 * gpt2_update over ranges of one flat parameter buffer. */
#include <math.h>

#include "kernels/cpu_kernels.h"

/* params, grads, m, v: fp32 flat buffers with one layout; ranges select [off, off+n) and a
 * decay multiplier (1 for matrices/embeddings, 0 for norms/biases). For each element:
 *   g = grad·grad_scale; m = β1m + (1−β1)g; v = β2v + (1−β2)g²;
 *   m̂ = m/(1−β1^t); v̂ = v/(1−β2^t); p −= lr·(m̂/(√v̂ + ε) + wd·decay·p).
 * m, v, params updated in place; grads are read only. Elementwise, so deterministic. */
void tz_cpu_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v,
                  const tz_range *ranges, int n_ranges, const tz_adamw_hp *hp) {
  float *p = TZ_F(params), *mm = TZ_F(m), *vv = TZ_F(v);
  const float *g = TZ_F(grads);
  float b1 = hp->beta1, b2 = hp->beta2, lr = hp->lr, eps = hp->eps, gs = hp->grad_scale;
  float c1 = 1.0f - powf(b1, (float)hp->t), c2 = 1.0f - powf(b2, (float)hp->t);
  for (int r = 0; r < n_ranges; r++) {
    size_t off = ranges[r].off, n = ranges[r].n;
    float wd = hp->weight_decay * ranges[r].decay;
#pragma omp parallel for schedule(static) if (n > 16384)
    for (size_t i = off; i < off + n; i++) {
      float gi = g[i] * gs;
      float mi = b1 * mm[i] + (1.0f - b1) * gi;
      float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;
      mm[i] = mi;
      vv[i] = vi;
      p[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p[i]);
    }
  }
}
