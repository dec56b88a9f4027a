/* Helpers for the CUDA tests (header-only, on top of ops_testutil.h): create the backend or
 * skip, move "act" tensors (dtype be->act: fp32 or bf16) between host floats and the device,
 * and host bf16 rounding so the CPU reference can be fed exactly the values the GPU sees.
 *
 * Skipping: ct_cuda() calls tz_test_skip_all() ("SKIPPED: CUDA unavailable: <reason>", exit
 * 77) when the backend cannot be created (built without CUDA, no driver, no GPU). On the GPU
 * machine set TEZGAH_CUDA_REQUIRED=1 so that a failure to create the backend fails the test
 * instead of skipping it. In a build without CUDA the reason (the backend's "configure with
 * -DTEZGAH_CUDA=ON ...") gains CT_NO_CUDA_HINT, on the same line: scripts/test.sh configures
 * build/ itself and takes TEZGAH_TEST_CUDA=ON for that (scripts/cuda_choice.sh), which the
 * reason alone did not say (test_cuda_dist.sh checks the line).
 *
 * Tolerances (what the op tests state, per op, as llm.c's test_gpt2.cu does):
 * - fp32 mode (--precision fp32) against the CPU backend: rtol/atol about 1e-5..1e-4
 *   (reductions in another order; no TF32 anywhere, matmuls are strict fp32).
 * - bf16 mode: |Δ| ≤ atol + rtol·|ref| (ct_close), ref computed by the CPU in fp32 from the
 *   same bf16-rounded inputs (ct_round), so only the output rounding (2^-8 relative, i.e.
 *   rtol ≈ 4e-3..1e-2) and fp32 accumulation order remain; state atol for values near 0.
 */
#ifndef TZ_CUDA_TESTUTIL_H
#define TZ_CUDA_TESTUTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops_testutil.h"

/* fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN. */
static inline uint16_t ct_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float ct_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* The nearest bf16 value (RNE), as a float. */
static inline float ct_bf16_round(float f) { return ct_bf16_to_f32(ct_f32_to_bf16(f)); }
/* Round n host floats in place to what the backend's act dtype can hold (no-op for fp32). */
static inline void ct_round(tz_backend *be, float *x, size_t n) {
  if (be->act == TZ_BF16)
    for (size_t i = 0; i < n; i++) x[i] = ct_bf16_round(x[i]);
}

#ifdef TZ_HAVE_CUDA
#define CT_NO_CUDA_HINT ""
#else
#define CT_NO_CUDA_HINT "; with scripts/test.sh: TEZGAH_TEST_CUDA=ON bash scripts/test.sh (builds it where a CUDA toolkit is found)"
#endif

/* The CUDA backend in `precision` (NULL: its default, bf16), or skip the whole program. */
static inline tz_backend *ct_cuda(const char *precision) {
  tz_backend *be = tz_backend_create("cuda", 0, precision);
  if (!be) {
    char why[1400];
    snprintf(why, sizeof why, "CUDA unavailable: %s%s", tz_errmsg(), CT_NO_CUDA_HINT);
    const char *req = getenv("TEZGAH_CUDA_REQUIRED");
    if (req && *req && strcmp(req, "0") != 0) {
      fprintf(stderr, "TEZGAH_CUDA_REQUIRED is set but %s\n", why);
      exit(1);
    }
    tz_test_skip_all(why);
  }
  return be;
}

/* Set environment variable `name` to `value` for a part of a test (the backend reads its switches
 * when it is created); returns the caller's value (malloc'ed, NULL: it was unset) for
 * ct_env_restore, which puts it back and frees it. */
static inline char *ct_env_set(const char *name, const char *value) {
  const char *old = getenv(name);
  char *saved = old ? strdup(old) : NULL;
  setenv(name, value, 1);
  return saved;
}
static inline void ct_env_restore(const char *name, char *saved) {
  if (saved) setenv(name, saved, 1);
  else unsetenv(name);
  free(saved);
}

/* Bytes of n act elements on o->be. */
static inline size_t ct_act_bytes(ot_ctx *o, size_t n) { return n * tz_dtype_size(o->be->act); }

/* Upload n host floats into a fresh buffer as act elements (bf16: rounded to nearest even on
 * the host). host NULL: zeros. */
static inline tz_slice ct_act_upload(ot_ctx *o, const float *host, size_t n) {
  if (o->be->act != TZ_BF16 || !host) return ot_buf(o, host, ct_act_bytes(o, n));
  uint16_t *h = malloc((n ? n : 1) * sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = ct_f32_to_bf16(host[i]);
  tz_slice s = ot_buf(o, h, n * 2);
  free(h);
  return s;
}
/* n act elements as host floats (malloc'ed; through download_act). */
static inline float *ct_act_download(ot_ctx *o, tz_slice s, size_t n) {
  float *x = malloc((n ? n : 1) * sizeof(float));
  o->be->download_act(o->be, x, s, n);
  return x;
}

/* A flat fp32 "parameter" buffer of n floats (host values, or zeros when NULL) registered with
 * params_mirror, as the model's is. IMPORTANT for op tests: in bf16 mode the kernels read
 * weight ("W") arguments through tzc_w(), i.e. from the bf16 mirror, which exists only for
 * this registered buffer; a weight in any other buffer would be misread. So put W arguments
 * (norm weights, wte/wpe, matmul b, biases) into this buffer (at offsets: tz_f32(s, k)), and
 * round their host copies with ct_round() for the CPU reference. One registration per
 * backend at a time (a new one replaces it; freeing the buffer ends it). */
static inline tz_slice ct_params(ot_ctx *o, const float *host, size_t n) {
  tz_slice s = ot_buf(o, host, n * sizeof(float));
  if (o->be->params_mirror) o->be->params_mirror(o->be, s.buf);
  return s;
}

/* Pass when every |got − ref| ≤ atol + rtol·|ref| (llm.c's test_gpt2.cu bound). On failure
 * print the worst element (by excess over its bound), the count, and fail the test. */
static inline void ct_close(const char *what, const float *got, const double *ref, size_t n, double rtol,
                            double atol) {
  size_t worst = 0, bad = 0;
  double wx = -1;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - ref[i]);
    double bound = atol + rtol * fabs(ref[i]);
    if (!(e <= bound)) bad++;
    double x = isnan(e) ? INFINITY : e / bound;
    if (x > wx) wx = x, worst = i;
  }
  if (bad) {
    print_error("%s: %zu of %zu elements off; worst [%zu] got %.9g want %.9g (|d| <= %g + %g*|ref|)\n", what, bad,
                n, worst, (double)got[worst], ref[worst], atol, rtol);
    fail();
  }
}

#endif
