/* Fused softmax + cross-entropy, forward and backward in one pass over the logits
 * (llm.c crossentropy_forward + crossentropy_softmax_backward, fused in place like its
 * CUDA fused_classifier). */
#include <math.h>

#include "kernels/common/lanes16.h"
#include "kernels/cpu_kernels.h"

/* losses [N] fp32 written; logits [N, Vp] fp32 overwritten with dlogits; targets int32 [N].
 * For a counted row (0 ≤ y < V), with m = max_{c<V} z_c and s = Σ_{c<V} exp(z_c − m):
 * loss = log s − (z_y − m), dlogits_c = (exp(z_c − m) / s − [c = y]) · dscale for c < V.
 * That is lse − z_y and softmax − onehot, but lse = m + log s is never formed: rounded to
 * fp32 it loses everything below the spacing of |m| (8 at 1e8: loss 0 instead of ln 2 for
 * [1e8, 1e8], pytorch/pytorch#11752). z_y − m is exact in fp64; z_c − m is exact in fp32
 * near the max (Sterbenz) and an ordinary fp32 rounding elsewhere. Padding columns [V, Vp)
 * are zeroed. A target < 0 (or ≥ V, which data loading rejects) is ignored: loss 0 and an
 * all-zero dlogits row. Rows are independent: parallel over n.
 * The row is streamed from memory twice, not three times: pass 1 computes (m, s) online over
 * blocks of CE_BLOCK logits (block max and block sum while the block is in L1, then the
 * running (max, sum) pair is rescaled, as in online softmax, Milakov & Gimelshein 2018);
 * pass 2 writes the gradient. The sum is accumulated in fp64 across blocks. */
#define CE_BLOCK 1024
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
    double mx = -INFINITY, sum = 0.0;
    for (int c0 = 0; c0 < V; c0 += CE_BLOCK) {
      int c1 = c0 + CE_BLOCK < V ? c0 + CE_BLOCK : V;
      float bmx = -INFINITY;
      /* a max is exact in any order (and NaN is caught below), so the compiler may split it */
#pragma omp simd reduction(max : bmx)
      for (int c = c0; c < c1; c++) bmx = zn[c] > bmx ? zn[c] : bmx;
      float bsum = tz_sumexp16(zn + c0, bmx, c1 - c0, NULL);
      if (bmx != bmx || bsum != bsum) { /* NaN logits: let the loss say so (step is skipped) */
        mx = NAN;
        break;
      }
      if (bmx > mx) {
        sum = sum * exp(mx - bmx) + bsum;
        mx = bmx;
      } else {
        sum += bsum * exp(bmx - mx);
      }
    }
    loss[n] = (float)(log(sum) - ((double)zn[t] - mx));
    float m = (float)mx, scale = (float)(dscale / sum); /* mx is one of the fp32 logits */
#pragma omp simd
    for (int c = 0; c < V; c++) zn[c] = tz_expf(zn[c] - m) * scale;
    zn[t] -= dscale;
    for (int c = V; c < Vp; c++) zn[c] = 0.0f;
  }
}
