/* Fused softmax + cross-entropy, forward and backward in one pass over the logits
 * (llm.c crossentropy_forward + crossentropy_softmax_backward, fused in place like its
 * CUDA fused_classifier). */
#include <math.h>

#include "kernels/common/fastmath.h"
#include "kernels/cpu_kernels.h"

/* losses [N] fp32 written; logits [N, Vp] fp32 overwritten with dlogits; targets int32 [N].
 * For a counted row (0 ≤ y < V): e_c = exp(z_c − max), S = Σ_{c<V} e_c (in fp64),
 * loss = max + log S − z_y, dlogits_c = (e_c / S − [c = y]) · dscale for c < V.
 * Padding columns [V, Vp) are zeroed. A target < 0 (or ≥ V, which data loading rejects)
 * is ignored: loss 0 and an all-zero dlogits row. Rows are independent: parallel over n. */
void tz_cpu_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets,
                         int N, int V, int Vp, float dscale) {
  float *loss = TZ_F(losses), *z = TZ_F(logits);
  const int *y = TZ_I(targets);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float *zn = z + (size_t)n * Vp;
    int t = y[n];
    if (t < 0 || t >= V) {
      loss[n] = 0.0f;
      for (int c = 0; c < Vp; c++) zn[c] = 0.0f;
      continue;
    }
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int c = 0; c < V; c++) mx = zn[c] > mx ? zn[c] : mx;
    float zt = zn[t];
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < V; c++) {
      float e = tz_expf(zn[c] - mx); /* one exp per logit: kept for the softmax below */
      zn[c] = e;
      sum += e;
    }
    loss[n] = mx + (float)log(sum) - zt;
    float scale = (float)(dscale / sum);
    for (int c = 0; c < V; c++) zn[c] *= scale;
    zn[t] -= dscale;
    for (int c = V; c < Vp; c++) zn[c] = 0.0f;
  }
}
