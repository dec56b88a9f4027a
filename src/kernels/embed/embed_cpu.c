/* Token (+ learned position) embedding: llm.c encoder_forward / encoder_backward, llama2.c's
 * `memcpy(x, content_row, ...)` when wpe is absent. */
#include <string.h>

#include "kernels/cpu_kernels.h"

/* out [N,C] fp32, N = B*T; tok int32 [N]; wte [V,C]; wpe [maxT,C] or NONE.
 * out[n,:] = wte[tok[n],:] + wpe[n % T,:]. An id outside [0,V) writes a zero row (the
 * seed's guard, as backend.h states); ids are validated when data is loaded. */
void tz_cpu_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe,
                      int B, int T, int C, int V) {
  float *o = TZ_F(out);
  const int *ids = TZ_I(tok);
  const float *te = TZ_F(wte), *pe = tz_present(wpe) ? TZ_F(wpe) : NULL;
  int N = B * T;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float *on = o + (size_t)n * C;
    int id = ids[n];
    if (id < 0 || id >= V) {
      memset(on, 0, (size_t)C * sizeof(float));
      continue;
    }
    const float *tr = te + (size_t)id * C, *pr = pe ? pe + (size_t)(n % T) * C : NULL;
    for (int c = 0; c < C; c++) on[c] = tr[c] + (pr ? pr[c] : 0.0f);
  }
}

/* dwte[tok[n],:] += dout[n,:]; dwpe[n % T,:] += dout[n,:] (parameter grads: +=).
 * Deterministic scatter-add without atomics: threads own disjoint column blocks and each
 * walks all N rows in order, so every dwte element receives its adds in token order
 * whatever the thread count. Rows with an id outside [0,V) are skipped (for wpe too:
 * the forward wrote zeros there). */
#define EMBED_CB 16 /* columns per block: one cache line of fp32 */
void tz_cpu_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout,
                      tz_slice tok, int B, int T, int C, int V) {
  float *dte = TZ_F(dwte), *dpe = tz_present(dwpe) ? TZ_F(dwpe) : NULL;
  const float *d = TZ_F(dout);
  const int *ids = TZ_I(tok);
  int N = B * T, nblk = (C + EMBED_CB - 1) / EMBED_CB;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < nblk; blk++) {
    int c0 = blk * EMBED_CB, c1 = c0 + EMBED_CB < C ? c0 + EMBED_CB : C;
    for (int n = 0; n < N; n++) {
      const float *dn = d + (size_t)n * C;
      int id = ids[n];
      if (id < 0 || id >= V) continue; /* its forward row was zeros: no gradient */
      float *row = dte + (size_t)id * C;
      for (int c = c0; c < c1; c++) row[c] += dn[c];
      if (dpe) {
        float *row = dpe + (size_t)(n % T) * C;
        for (int c = c0; c < c1; c++) row[c] += dn[c];
      }
    }
  }
}
