/* Rotary position embedding (Su et al. 2021) with llama2.c's pairing: run.c forward()'s
 * "RoPE relative positional encoding" loop rotates adjacent dims (2i, 2i+1) of every q and
 * k head. The angle is computed with the same float expressions as run.c, so a model
 * ported from llama2.c reproduces its logits (and greedy samples) exactly. */
#include <math.h>

#include "kernels/cpu_kernels.h"

/* qkv [B*T, (n_head + 2*n_kv_head)*head_dim] fp32, rotated in place (q and k heads; v is
 * untouched). Row (b,t) is position pos = pos0 + t. For pair i (dims 2i, 2i+1):
 *   freq = 1 / theta^(2i/head_dim), angle = pos·freq (float, as run.c),
 *   (x0, x1) <- (x0·cos − x1·sin, x0·sin + x1·cos), with sin negated for dir = −1.
 * dir = −1 is the inverse rotation, i.e. the adjoint: it maps dout to din in backward.
 * The cos/sin of a pair are computed once per row and reused over all heads (same values
 * run.c computes per head: the functions are deterministic). head_dim must be even. */
/* no-tree-vectorize: gcc 12's vectorizer turns the rotation's x0·cos − x1·sin,
 * x0·sin + x1·cos into one vfmaddsub on FMA targets although -ffp-contract=off forbids the
 * fusion, so x86-64-v3/v4 builds rotated in other bits than x86-64-v2 ones (issue 21; the
 * narrower no-tree-slp-vectorize does not stop it). The loop over heads is short: the scalar
 * rotation costs nothing measurable. tests/test_no_fma.sh checks the objects for fusions. */
__attribute__((optimize("no-tree-vectorize"))) void tz_cpu_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head,
                 int head_dim, int pos0, float theta, int dir) {
  float *x = TZ_F(qkv);
  int N = B * T, nh = n_head + n_kv_head;
  size_t stride = (size_t)(n_head + 2 * n_kv_head) * head_dim;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    int pos = pos0 + n % T;
    float *row = x + (size_t)n * stride;
    for (int i = 0; i < head_dim; i += 2) {
      float freq = 1.0f / powf(theta, i / (float)head_dim);
      float val = pos * freq;
      float fcr = cosf(val);
      float fci = dir < 0 ? -sinf(val) : sinf(val);
      for (int h = 0; h < nh; h++) {
        float *v = row + (size_t)h * head_dim + i;
        float v0 = v[0], v1 = v[1];
        v[0] = v0 * fcr - v1 * fci;
        v[1] = v0 * fci + v1 * fcr;
      }
    }
  }
}
