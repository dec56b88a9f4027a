/* Helpers shared by the op tests (header-only so tests/CMakeLists.txt needs no change):
 * backend buffers from host arrays, deterministic random inputs, and an element-wise
 * comparison that reports the worst element before failing. */
#ifndef TZ_OPS_TESTUTIL_H
#define TZ_OPS_TESTUTIL_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/rng.h"
#include "testutil.h"

#define OT_MAXBUF 64
typedef struct {
  tz_backend *be;
  tz_buf *bufs[OT_MAXBUF];
  int nbufs;
  tz_rng rng;
} ot_ctx;

static inline void ot_init(ot_ctx *o, tz_backend *be, uint64_t seed) {
  memset(o, 0, sizeof *o);
  o->be = be;
  tz_rng_seed(&o->rng, seed, 7);
}
static inline void ot_release(ot_ctx *o) {
  for (int i = 0; i < o->nbufs; i++) o->be->free(o->be, o->bufs[i]);
  o->nbufs = 0;
}
/* A fresh device buffer holding `bytes` copied from host (or zeros when src is NULL). */
static inline tz_slice ot_buf(ot_ctx *o, const void *src, size_t bytes) {
  assert_true(o->nbufs < OT_MAXBUF);
  tz_buf *b = o->be->alloc(o->be, bytes, "test");
  assert_non_null(b);
  o->bufs[o->nbufs++] = b;
  tz_slice s = {b, 0};
  if (src && bytes) o->be->upload(o->be, s, src, bytes);
  return s;
}
/* n floats N(0, scale²) (host, malloc'ed) and their exact double copy. */
static inline float *ot_randn(ot_ctx *o, size_t n, float scale) {
  float *x = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = tz_rng_normal(&o->rng) * scale;
  return x;
}
static inline double *ot_dbl(const float *x, size_t n) {
  double *d = malloc((n ? n : 1) * sizeof(double));
  for (size_t i = 0; i < n; i++) d[i] = x[i];
  return d;
}
static inline float *ot_get(ot_ctx *o, tz_slice s, size_t n) {
  float *x = malloc((n ? n : 1) * sizeof(float));
  o->be->download(o->be, x, s, n * sizeof(float));
  return x;
}

/* Pass when every |got − ref| ≤ atol or ≤ rtol·|ref|. On failure print the worst element
 * (by excess over its bound) and fail the test. */
static inline void ot_close(const char *what, const float *got, const double *ref, size_t n,
                            double rtol, double atol) {
  size_t worst = 0;
  double wx = -1;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - ref[i]);
    double bound = fmax(atol, rtol * fabs(ref[i]));
    if (!(e <= bound)) bad++;
    double x = isnan(e) ? INFINITY : e / bound;
    if (x > wx) {
      wx = x;
      worst = i;
    }
  }
  if (bad) {
    print_error("%s: %d of %zu elements off; worst [%zu] got %.9g want %.9g (rtol %g atol %g)\n",
                what, bad, n, worst, (double)got[worst], ref[worst], rtol, atol);
    fail();
  }
}

#endif
