/* The CUDA matmuls' choice of cuBLASLt algorithm by time (src/kernels/matmul/matmul.cu's tune,
 * TEZGAH_CUDA_MM_TUNE): at a shape's first call the heuristic's candidates run on the real
 * operands and the fastest of those whose output bits equal the heuristic's first choice is kept.
 * So the choice must never change a result: each form the model uses -- matmul_t (with a bias;
 * fp32 and bf16), matmul, matmul_at (acc = 0, fp32 gradient), matmul_t_gelu (out and h),
 * matmul_dgelu and matmul_t_res -- at a shape large enough to be tuned (≥ 2 GFLOP) gives
 * the same bits, the first call and the next, on a backend with TEZGAH_CUDA_MM_TUNE=1 as on one
 * with =0 (the heuristic's first choice, the algorithm the other CUDA tests check against the CPU
 * backend). The tuned backend must have tuned at least one shape (tzc_matmul_tuned: two or more
 * candidates timed; the untuned none), else this test checks nothing and fails. Inputs
 * N(0, 1) activations, N(0, 0.3²) weights: an output of mostly nonzero bits, which tune needs
 * before it compares candidates. Needs a CUDA GPU; otherwise SKIPPED (exit 77);
 * TEZGAH_CUDA_REQUIRED=1 makes that a failure. */
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

/* Run `form` twice on be (the first call tunes, the second runs the kept algorithm) at M, K, N
 * with inputs from seed; returns the raw bytes of the second call's outputs (out, then h for
 * matmul_t_gelu) and their size in *bytes. First and second call must agree bit for bit. */
static unsigned char *run_form(tz_backend *be, int form, int M, int K, int N, size_t *bytes) {
  ot_ctx o;
  ot_init(&o, be, 77 + (uint64_t)form);
  int a_rows = form == F_AT ? K : M, a_cols = form == F_AT ? M : K; /* matmul_at: a [K, M] */
  size_t na = (size_t)a_rows * a_cols, nw = (size_t)N * K, no = (size_t)M * N;
  float *a = ot_randn(&o, na, 1), *w = ot_randn(&o, nw, 0.3f), *bs = ot_randn(&o, N, 0.5f);
  float *h = ot_randn(&o, no, 1.5f), *res = ot_randn(&o, no, 2);
  float *params = calloc(nw + N + 8, 4);
  memcpy(params, w, nw * 4), memcpy(params + nw + 4, bs, (size_t)N * 4);
  tz_slice P = ct_params(&o, params, nw + N + 8), B = tz_f32(P, nw + 4);
  tz_slice ga = ct_act_upload(&o, a, na);
  tz_slice gb = form == F_AT ? ct_act_upload(&o, w, (size_t)K * N) : P; /* matmul_at's b: act [K, N] */
  tz_slice gh = ct_act_upload(&o, h, no), gres = ct_act_upload(&o, res, no);
  size_t esz = form == F_AT ? 4 : tz_dtype_size(be->act), ob = no * esz, total = form == F_GELU ? 2 * ob : ob;
  tz_slice go = ot_buf(&o, NULL, ob);
  unsigned char *got[2];
  for (int call = 0; call < 2; call++) {
    switch (form) {
    case F_T: be->matmul_t(be, go, ga, P, B, M, K, N, 0); break;
    case F_NN: be->matmul(be, go, ga, P, M, K, N, 0); break; /* b = W as [K, N] */
    case F_AT: be->matmul_at(be, go, ga, gb, M, K, N, 0); break;
    case F_GELU: be->matmul_t_gelu(be, go, gh, ga, P, B, M, K, N); break;
    case F_DGELU: be->matmul_dgelu(be, go, TZ_NONE, ga, P, gh, M, K, N); break;
    default: be->matmul_t_res(be, go, ga, P, B, gres, M, K, N); break;
    }
    got[call] = malloc(total);
    be->download(be, got[call], go, ob);
    if (form == F_GELU) be->download(be, got[call] + ob, gh, ob);
  }
  int same = !memcmp(got[0], got[1], total);
  if (!same) printf("%s %s: the first call (tuning) and the second differ\n", form_name[form], tz_dtype_name(be->act));
  assert_true(same);
  free(got[0]);
  free(a), free(w), free(bs), free(h), free(res), free(params);
  ot_release(&o);
  *bytes = total;
  return got[1];
}

static void same_bits(const char *precision, int nforms) {
  static const int shape[NFORMS][3] = {
      {2048, 768, 1024}, {2048, 1024, 768}, {768, 4096, 1024}, {2048, 768, 3072}, {2048, 768, 3072}, {2048, 3072, 768}};
  unsigned char *out[2][NFORMS];
  size_t bytes[NFORMS];
  long long n_tuned[2];
  for (int t = 0; t < 2; t++) {
    char *saved = ct_env_set("TEZGAH_CUDA_MM_TUNE", t ? "0" : "1");
    tz_backend *be = ct_cuda(precision);
    ct_env_restore("TEZGAH_CUDA_MM_TUNE", saved);
    for (int f = 0; f < nforms; f++) {
      int ok = (f != F_GELU || be->matmul_t_gelu) && (f != F_DGELU || be->matmul_dgelu) &&
               (f != F_RES || be->matmul_t_res);
      out[t][f] = ok ? run_form(be, f, shape[f][0], shape[f][1], shape[f][2], &bytes[f]) : NULL;
    }
    n_tuned[t] = tuned(be);
    be->destroy(be);
  }
  int all = 1;
  for (int f = 0; f < nforms; f++) {
    if (!out[0][f]) {
      printf("%s %s: not offered\n", precision ? precision : "bf16", form_name[f]);
      continue;
    }
    int same = !memcmp(out[0][f], out[1][f], bytes[f]);
    printf("%s %s M=%d K=%d N=%d: TEZGAH_CUDA_MM_TUNE=1 vs 0: %s\n", precision ? precision : "bf16", form_name[f],
           shape[f][0], shape[f][1], shape[f][2], same ? "same bits" : "DIFFERENT");
    all &= same;
    free(out[0][f]), free(out[1][f]);
  }
  printf("%s: shapes tuned %lld (TEZGAH_CUDA_MM_TUNE=1), %lld (=0)\n", precision ? precision : "bf16", n_tuned[0],
         n_tuned[1]);
  assert_true(all);
  assert_true(n_tuned[0] >= 1);
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
