/* Cross-entropy at extreme logits, the same cases on every backend (issue 12, after
 * pytorch/pytorch#11752): a kernel that rounds logsumexp to fp32 before subtracting z[target]
 * loses everything below the fp32 spacing of |z| (8 at 1e8), e.g. loss 0 instead of ln 2.
 *
 * Each case is one row; the reference is plain float64 (lse = max + log Σ exp(z − max),
 * loss = lse − z[t], dz = (exp(z − lse) − onehot)·dscale), whose rounding at |z| = 1e8 is
 * ~1e-8, far below the tolerances: loss and dlogits |got − ref| ≤ 2e-6 or ≤ 1e-6·|ref|.
 * Every output must also be finite. Header-only so tests/CMakeLists.txt needs no change. */
#ifndef TZ_XENT_EXTREMES_H
#define TZ_XENT_EXTREMES_H
#include "ops_testutil.h"

typedef struct {
  const char *what;
  int V, Vp, target;
  float dscale;
  float z[8]; /* the first V logits; when V > 8 every logit is z[0] */
} xe_case;

static const xe_case XE_CASES[] = {
    {"[1e8, 1e8] target 1", 2, 2, 1, 1.0f, {1e8f, 1e8f}},                 /* ln 2, [0.5, -0.5] */
    {"[1e4, 1e4] target 0", 2, 2, 0, 1.0f, {1e4f, 1e4f}},                 /* ln 2 */
    {"four -300 target 2", 4, 4, 2, 1.0f, {-300, -300, -300, -300}},      /* ln 4, 0.25 - onehot */
    {"[-431, 279, 427] target 0", 3, 4, 0, 1.0f, {-431, 279, 427}},       /* 858, ~[-1, 0, 1] */
    {"[1e8, 1e8+8] target 0, dscale 0.37", 2, 3, 0, 0.37f, {1e8f, 100000008.0f}}, /* one fp32 ulp apart */
    {"3000 x 1e6 target 2999", 3000, 3008, 2999, 1.0f, {1e6f}},           /* ln 3000, across CPU blocks */
};

/* Runs every case on `be`, compares with float64, prints the measured values. */
static inline void xe_check_all(tz_backend *be, const char *backend) {
  for (size_t k = 0; k < sizeof XE_CASES / sizeof *XE_CASES; k++) {
    const xe_case *c = &XE_CASES[k];
    float *z = malloc((size_t)c->Vp * sizeof *z);
    double *ref = malloc((size_t)c->Vp * sizeof *ref);
    for (int i = 0; i < c->Vp; i++) z[i] = i >= c->V ? 5.0f : c->V > 8 ? c->z[0] : c->z[i]; /* padding: ignored */
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < c->V; i++) mx = fmax(mx, z[i]);
    for (int i = 0; i < c->V; i++) s += exp((double)z[i] - mx);
    double lse = mx + log(s), want_loss = lse - z[c->target];
    for (int i = 0; i < c->Vp; i++)
      ref[i] = i >= c->V ? 0.0 : (exp((double)z[i] - lse) - (i == c->target)) * c->dscale;
    ot_ctx o;
    ot_init(&o, be, 12);
    int32_t t = c->target;
    tz_slice sz = ot_buf(&o, z, (size_t)c->Vp * 4), sl = ot_buf(&o, NULL, 4);
    be->crossentropy(be, sl, sz, ot_buf(&o, &t, 4), 1, c->V, c->Vp, c->dscale);
    float *loss = ot_get(&o, sl, 1), *d = ot_get(&o, sz, (size_t)c->Vp);
    print_message("  %s %s: loss %.9g (want %.9g), dlogits [%.9g, %.9g, %.9g%s]\n", backend, c->what, loss[0],
                  want_loss, d[0], d[1], c->Vp > 2 ? d[2] : 0.0, c->Vp > 3 ? ", ..." : "");
    char what[160];
    snprintf(what, sizeof what, "%s crossentropy %s: loss", backend, c->what);
    assert_true(isfinite(loss[0]));
    ot_close(what, loss, &want_loss, 1, 1e-6, 2e-6);
    for (int i = 0; i < c->Vp; i++) assert_true(isfinite(d[i]));
    snprintf(what, sizeof what, "%s crossentropy %s: dlogits", backend, c->what);
    ot_close(what, d, ref, (size_t)c->Vp, 1e-6, 2e-6);
    free(z), free(ref), free(loss), free(d);
    ot_release(&o);
  }
}

#endif
