/* The CUDA matmuls' choice of cuBLASLt algorithm by time (src/kernels/matmul/matmul.cu's tune,
 * TEZGAH_CUDA_MM_TUNE): at a shape's first call the heuristic's candidates run on the real
 * operands and the fastest of those whose output bits equal the heuristic's first choice is kept.
 * So the choice must never change a result: each form the model uses -- matmul_t (with a bias;
 * fp32 and bf16), matmul, matmul_at (acc = 0, fp32 gradient), matmul_t_gelu (out and h),
 * matmul_dgelu and matmul_t_res -- at a shape large enough to be tuned (≥ 2 GFLOP), called
 * twice (the first call tunes, the second runs the kept algorithm on other inputs), gives the
 * same bits in both calls on a backend with TEZGAH_CUDA_MM_TUNE=1 as on one with =0 (the
 * heuristic's first choice, the algorithm the other CUDA tests check against the CPU backend).
 * Each form says whether its shape was tuned (tzc_matmul_tuned rose: two or more candidates
 * timed; a shape with one candidate, or none other with the first one's bits, is not); at
 * least one shape per precision must have been, else this test checks nothing and fails, and
 * the untuned backend none. Tuning inside training, on the side queue, is test_cuda_train's
 * test_side_queue (TEZGAH_CUDA_MM_TUNE=all there). Inputs N(0, 1) activations, N(0, 0.3²)
 * weights: outputs of mostly nonzero bits, which tune needs before it compares candidates.
 * Needs a CUDA GPU; otherwise SKIPPED (exit 77); TEZGAH_CUDA_REQUIRED=1 makes that a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_testutil.h"
#ifdef TZ_HAVE_CUDA
#include "backend/cuda/cuda_internal.h"
#endif

enum { F_T, F_NN, F_AT, F_GELU, F_DGELU, F_RES, NFORMS };
static const char *const form_name[NFORMS] = {"matmul_t", "matmul", "matmul_at", "matmul_t_gelu", "matmul_dgelu",
                                              "matmul_t_res"};

static long long tuned(tz_backend *be) {
#ifdef TZ_HAVE_CUDA
  return tzc_matmul_tuned(be);
#else
  (void)be;
  return 0;
#endif
}

/* Run `form` twice on be at M, K, N: the first call (which tunes the shape) on inputs from seed
 * 77 + form, the second (the kept algorithm) on other inputs in the same buffers, from seed
 * 177 + form, so the kept algorithm is checked on data it was not chosen on. Returns the raw
 * bytes of both calls' outputs (out, then h for matmul_t_gelu; the first call's, then the
 * second's) and their size in *bytes; *tuned_here: 1 when this form's shape was tuned
 * (tzc_matmul_tuned rose). */
static unsigned char *run_form(tz_backend *be, int form, int M, int K, int N, size_t *bytes, int *tuned_here) {
  ot_ctx o;
  ot_init(&o, be, 77 + (uint64_t)form);
  int a_rows = form == F_AT ? K : M, a_cols = form == F_AT ? M : K; /* matmul_at: a [K, M] */
  size_t na = (size_t)a_rows * a_cols, nw = (size_t)N * K, no = (size_t)M * N;
  size_t esz = form == F_AT ? 4 : tz_dtype_size(be->act), ob = no * esz, one = form == F_GELU ? 2 * ob : ob;
  unsigned char *got = malloc(2 * one);
  tz_slice P = TZ_NONE, B = TZ_NONE, ga = TZ_NONE, gb = TZ_NONE, gh = TZ_NONE, gres = TZ_NONE, go = TZ_NONE;
  long long t0 = tuned(be);
  for (int call = 0; call < 2; call++) {
    tz_rng_seed(&o.rng, (uint64_t)(call ? 177 : 77) + (uint64_t)form, 7);
    float *a = ot_randn(&o, na, 1), *w = ot_randn(&o, nw, 0.3f), *bs = ot_randn(&o, N, 0.5f);
    float *h = ot_randn(&o, no, 1.5f), *res = ot_randn(&o, no, 2);
    float *params = calloc(nw + N + 8, 4);
    memcpy(params, w, nw * 4), memcpy(params + nw + 4, bs, (size_t)N * 4);
    if (!call) { /* the buffers, with the first inputs */
      P = ct_params(&o, params, nw + N + 8), B = tz_f32(P, nw + 4);
      ga = ct_act_upload(&o, a, na);
      gb = form == F_AT ? ct_act_upload(&o, w, (size_t)K * N) : P; /* matmul_at's b: act [K, N] */
      gh = ct_act_upload(&o, h, no), gres = ct_act_upload(&o, res, no);
      go = ot_buf(&o, NULL, ob);
    } else { /* the second inputs into the same buffers (act tensors through fresh uploads, copied over) */
      ot_ctx t;
      ot_init(&t, be, 1);
      be->upload(be, P, params, (nw + N + 8) * 4); /* (refreshes the bf16 mirror) */
      tz_slice ta = ct_act_upload(&t, a, na), th = ct_act_upload(&t, h, no), tr = ct_act_upload(&t, res, no);
      be->copy(be, ga, ta, na * tz_dtype_size(be->act));
      be->copy(be, gh, th, no * tz_dtype_size(be->act));
      be->copy(be, gres, tr, no * tz_dtype_size(be->act));
      if (form == F_AT) {
        tz_slice tb = ct_act_upload(&t, w, (size_t)K * N);
        be->copy(be, gb, tb, (size_t)K * N * tz_dtype_size(be->act));
      }
      ot_release(&t);
    }
    switch (form) {
    case F_T: be->matmul_t(be, go, ga, P, B, M, K, N, 0); break;
    case F_NN: be->matmul(be, go, ga, P, M, K, N, 0); break; /* b = W as [K, N] */
    case F_AT: be->matmul_at(be, go, ga, gb, M, K, N, 0); break;
    case F_GELU: be->matmul_t_gelu(be, go, gh, ga, P, B, M, K, N); break;
    case F_DGELU: be->matmul_dgelu(be, go, TZ_NONE, ga, P, gh, M, K, N); break;
    default: be->matmul_t_res(be, go, ga, P, B, gres, M, K, N); break;
    }
    be->download(be, got + call * one, go, ob);
    if (form == F_GELU) be->download(be, got + call * one + ob, gh, ob);
    free(a), free(w), free(bs), free(h), free(res), free(params);
  }
  *tuned_here = tuned(be) > t0;
  ot_release(&o);
  *bytes = 2 * one;
  return got;
}

static void same_bits(const char *precision, int nforms) {
  static const int shape[NFORMS][3] = {
      {2048, 768, 1024}, {2048, 1024, 768}, {768, 4096, 1024}, {2048, 768, 3072}, {2048, 768, 3072}, {2048, 3072, 768}};
  unsigned char *out[2][NFORMS];
  size_t bytes[NFORMS];
  int tuned_form[2][NFORMS];
  long long n_tuned[2];
  const char *pn = precision ? precision : "bf16";
  for (int t = 0; t < 2; t++) {
    char *saved = ct_env_set("TEZGAH_CUDA_MM_TUNE", t ? "0" : "1");
    tz_backend *be = ct_cuda(precision);
    ct_env_restore("TEZGAH_CUDA_MM_TUNE", saved);
    for (int f = 0; f < nforms; f++) {
      int ok = (f != F_GELU || be->matmul_t_gelu) && (f != F_DGELU || be->matmul_dgelu) &&
               (f != F_RES || be->matmul_t_res);
      out[t][f] = ok ? run_form(be, f, shape[f][0], shape[f][1], shape[f][2], &bytes[f], &tuned_form[t][f]) : NULL;
    }
    n_tuned[t] = tuned(be);
    be->destroy(be);
  }
  int all = 1;
  for (int f = 0; f < nforms; f++) {
    if (!out[0][f]) {
      printf("%s %s: not offered\n", pn, form_name[f]);
      continue;
    }
    int same = !memcmp(out[0][f], out[1][f], bytes[f]);
    printf("%s %s M=%d K=%d N=%d (%s): both calls, TEZGAH_CUDA_MM_TUNE=1 vs 0: %s\n", pn, form_name[f], shape[f][0],
           shape[f][1], shape[f][2],
           tuned_form[0][f] ? "tuned" : "not tuned: one candidate, or none other with the first one's bits",
           same ? "same bits" : "DIFFERENT");
    all &= same;
    assert_false(tuned_form[1][f]);
    free(out[0][f]), free(out[1][f]);
  }
  printf("%s: shapes tuned %lld (TEZGAH_CUDA_MM_TUNE=1), %lld (=0)\n", pn, n_tuned[0], n_tuned[1]);
  assert_true(all);
  assert_true(n_tuned[0] >= 1); /* else nothing here was checked */
  assert_int_equal(n_tuned[1], 0);
}

static void test_bf16(void **state) {
  (void)state;
  same_bits(NULL, NFORMS);
}
static void test_fp32(void **state) {
  (void)state;
  same_bits("fp32", F_AT + 1); /* the plain forms (fp32 offers no GeLU or residual epilogue) */
}

int main(void) {
  tz_backend *probe = ct_cuda(NULL); /* no GPU: SKIPPED (exit 77) here */
  probe->destroy(probe);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bf16), cmocka_unit_test(test_fp32)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
