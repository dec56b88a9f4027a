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
 * One exponential per logit: pass 1 takes each block of CE_BLOCK logits while it is in L1,
 * finds the block max b, overwrites the block with e_c = exp(z_c − b) and sums it; the
 * running (max, sum) pair is rescaled across blocks as in online softmax (Milakov &
 * Gimelshein 2018), the sum accumulated in fp64. Pass 2 (the row, 201 KB for GPT-2, is still
 * in L2) multiplies each block by its factor exp(b − m)·dscale/s: dlogits_c = e_c·exp(b − m)·
 * dscale/s, three roundings from the exact value where the previous form, exp(z_c − m)·
 * dscale/s, had two but a second exponential per logit. exp is tz_expf (fastmath.h) for every
 * fp32 value, the fixed-lane sums of lanes16.h: the same bits on every instruction set. */
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
    float bmax[(V + CE_BLOCK - 1) / CE_BLOCK]; /* each block's max b */
    double mx = -INFINITY, sum = 0.0, zt = zn[t];
    for (int c0 = 0, b = 0; c0 < V; c0 += CE_BLOCK, b++) {
      int c1 = c0 + CE_BLOCK < V ? c0 + CE_BLOCK : V;
      float bmx = -INFINITY;
      /* a max is exact in any order (and NaN is caught below), so the compiler may split it */
#pragma omp simd reduction(max : bmx)
      for (int c = c0; c < c1; c++) bmx = zn[c] > bmx ? zn[c] : bmx;
      float bsum = tz_sumexp16(zn + c0, bmx, c1 - c0, zn + c0);
      bmax[b] = bmx;
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
    loss[n] = (float)(log(sum) - (zt - mx));
    if (mx != mx) { /* NaN: the whole row (its blocks are only partly exponentiated) */
      for (int c = 0; c < V; c++) zn[c] = NAN;
    } else {
      float m = (float)mx, scale = (float)(dscale / sum); /* mx is one of the fp32 logits */
      for (int c0 = 0, b = 0; c0 < V; c0 += CE_BLOCK, b++) {
        int c1 = c0 + CE_BLOCK < V ? c0 + CE_BLOCK : V;
        float f = tz_expf(bmax[b] - m) * scale;
#pragma omp simd
        for (int c = c0; c < c1; c++) zn[c] *= f;
      }
      zn[t] -= dscale;
    }
    for (int c = V; c < Vp; c++) zn[c] = 0.0f;
  }
}
