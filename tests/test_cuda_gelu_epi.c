/* The GeLU-epilogue matmuls of the CUDA backend (backend.h's matmul_t_gelu and matmul_dgelu;
 * src/kernels/matmul/matmul.cu, TEZGAH_CUDA_GELU_EPI) against the CPU backend's separate ops.
 *
 * - The switch: a bad TEZGAH_CUDA_GELU_EPI makes tz_backend_create fail with one line naming it
 *   (checked before any device work, so this part runs without a GPU too, in a CUDA build);
 *   off offers neither op, bwd only matmul_dgelu, fwd only matmul_t_gelu, both and both+bgrad
 *   both; auto (and unset, empty) both in bf16 and neither in fp32.
 * - The ops, in fp32 (--precision fp32), bf16, and on the fallback kernel (TEZGAH_CUDA_MATMUL=naive;
 *   also what an N not divisible by 8 gets: cuBLASLt's aux ld rule), at shapes with odd M and odd
 *   N, against the CPU on the same (bf16-rounded in bf16) inputs:
 *     matmul_t_gelu vs matmul_t + gelu_fwd: h within rtol·S + atol (S = Σ_k |x·w| + |bias|;
 *       rtol 2e-5 fp32, 8e-3 bf16 (h's rounding), atol 1e-6) and out within
 *       1.2·(2e-5·S + 1e-6) + r·|ref| + T (|gelu'| ≤ 1.13 carries the fp32 sum's error; r = 1e-5
 *       fp32, 8e-3 bf16: the fused GeLU reads the fp32 sum, so only out's own rounding);
 *     matmul_dgelu vs matmul + gelu_bwd (+ bias_bwd into a db that held values before): dh within
 *       1.2·(3e-5·S + 1e-6) + r·|ref| + T (S = Σ_k |dout·w|), db within the sum over rows of dh's
 *       bounds + 1e-6·(1 + |db before|); with both+bgrad (DGELU_BGRAD) too.
 *   T: cuBLASLt's epilogue may evaluate tanh with the GPU's approximate instruction (PTX
 *   tanh.approx.f32, relative error about 2^-11 by the PTX ISA; CUTLASS's tanh-form GeLU uses it),
 *   so T = ε·|t|·|∂f/∂t| with t = tanh(√(2/π)(h + 0.044715h³)), ε = 1e-3 (twice that bound):
 *   forward f = gelu, ∂f/∂t = h/2; backward f = gelu'(h)·(dout·W), ∂f/∂t = (1/2 − h·t·√(2/π)
 *   (1 + 3·0.044715h²))·|dout·W|. The largest error seen is printed.
 *   Which GeLU cuBLASLt applies: h = x (+ b) exactly (one nonzero column, x = m/32 − 8 in
 *   [-8, 8)); the outputs at 1.5 ≤ |h| ≤ 4 (where the erf form is 1e-4..4.7e-4 from the tanh
 *   form) must be closer on average to the CPU's tanh form than to the erf form (simulated with
 *   tanh errors of the full 2^-11 the margin is 15 %; a precise tanh leaves ~1e-7 vs 2.5e-4).
 * - Training (a small gpt2, B 3, T 37, 12 AdamW steps as test_cuda_train runs them; the residual
 *   epilogue as the backend's default, on in bf16): for each of off, bwd, fwd, both, both+bgrad,
 *   bf16 losses within 5e-2 relative of the CPU's fp32 (test_cuda_train's trajectory bound, which
 *   says why: a loss curve's distance from the CPU's measures how a rounding change grows, not a
 *   step's precision, which test_cuda_train's teacher-forced check measures with the default
 *   both; this test's curves were 3.2e-3 to 4.9e-3 from the CPU's on the H200 before the
 *   residual epilogue was the default) and two runs bit-identical; fp32 with both+bgrad within
 *   1e-3 of the CPU (not test_cuda_train's 1e-4: the epilogue's tanh may be the approximate
 *   instruction, T above); and the recompute rule:
 *   with both, a --recompute run (the forward fusion off, the backward's on) gives bit for bit
 *   the losses of a stored run with bwd.
 * Needs a CUDA GPU; otherwise SKIPPED (exit 77); TEZGAH_CUDA_REQUIRED=1 makes that a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "cuda_testutil.h"
#include "model/model.h"
#ifdef TZ_HAVE_CUDA
#include "backend/cuda/cuda_internal.h"
#endif

static tz_backend *cpu;

/* The CUDA backend with TEZGAH_CUDA_GELU_EPI=epi (and the fallback kernel only when naive). */
static tz_backend *cuda_with(const char *precision, const char *epi, int naive) {
  setenv("TEZGAH_CUDA_GELU_EPI", epi, 1);
  if (naive) setenv("TEZGAH_CUDA_MATMUL", "naive", 1);
  tz_backend *be = ct_cuda(precision);
  unsetenv("TEZGAH_CUDA_MATMUL");
  unsetenv("TEZGAH_CUDA_GELU_EPI");
  return be;
}

/* ---- the switch ---- */
static void test_switch(void **state) {
  (void)state;
  static const char *const bad[] = {"on", "1", "BOTH", "both ", "fwd+bgrad", "bgrad"};
  for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
    setenv("TEZGAH_CUDA_GELU_EPI", bad[i], 1);
    tz_backend *be = tz_backend_create("cuda", 0, NULL);
    unsetenv("TEZGAH_CUDA_GELU_EPI");
    printf("TEZGAH_CUDA_GELU_EPI='%s': %s\n", bad[i], be ? "accepted" : tz_errmsg());
    assert_null(be);
    assert_non_null(strstr(tz_errmsg(), "TEZGAH_CUDA_GELU_EPI"));
  }
  /* "" and "auto": the default, both epilogues in bf16 (TZC_GELU_AUTO_BF16), none in fp32 */
  static const char *const good[] = {"off", "bwd", "fwd", "both", "bwd+bgrad", "both+bgrad", "", "auto"};
  static const int fwd[] = {0, 0, 1, 1, 0, 1, 1, 1}, bwd[] = {0, 1, 0, 1, 1, 1, 1, 1};
  for (int i = 0; i < (int)(sizeof good / sizeof *good); i++) {
    tz_backend *be = cuda_with(NULL, good[i], 0);
    assert_int_equal(be->matmul_t_gelu != NULL, fwd[i]);
    assert_int_equal(be->matmul_dgelu != NULL, bwd[i]);
    be->destroy(be);
  }
  tz_backend *be = ct_cuda(NULL); /* unset: auto, bf16: both epilogues */
  assert_non_null(be->matmul_t_gelu);
  assert_non_null(be->matmul_dgelu);
  be->destroy(be);
  be = ct_cuda("fp32"); /* unset: auto, fp32: the separate ops */
  assert_null(be->matmul_t_gelu);
  assert_null(be->matmul_dgelu);
  be->destroy(be);
  be = cuda_with("fp32", "both", 0); /* asked for: offered in fp32 too */
  assert_non_null(be->matmul_t_gelu);
  be->destroy(be);
}

/* ---- the ops vs the CPU ---- */
static double gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
#define TANH_EPS 1e-3 /* T above */
static double t_of(double h) { return tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)); }
static double tanh_term_fwd(double h) { return TANH_EPS * fabs(t_of(h)) * 0.5 * fabs(h); }
static double tanh_term_bwd(double h, double acc) {
  double t = t_of(h);
  return TANH_EPS * fabs(t) * (0.5 + fabs(h * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * h * h)) * fabs(acc);
}

/* matmul_t_gelu: out = gelu(h), h = x·Wᵀ + b. form: the GeLU-form case (h = x[:,0] exactly). */
static void check_fwd(tz_backend *be, int M, int K, int N, int bias, int form) {
  ot_ctx o, oc;
  ot_init(&o, be, 77 + M * 31 + K * 7 + N);
  ot_init(&oc, cpu, 1);
  const int bf16 = be->act == TZ_BF16;
  size_t nx = (size_t)M * K, nw = (size_t)N * K, no = (size_t)M * N;
  float *x = ot_randn(&o, nx, 1), *w = ot_randn(&o, nw, 0.3f), *bs = ot_randn(&o, N, 0.5f);
  if (form) { /* h[m,n] = x[m,0] = m/32 - 8: bf16-exact values in [-8, 8) */
    memset(x, 0, nx * 4), memset(w, 0, nw * 4);
    for (int m = 0; m < M; m++) x[(size_t)m * K] = (float)m / 32.0f - 8.0f;
    for (int n = 0; n < N; n++) w[(size_t)n * K] = 1.0f;
  }
  ct_round(be, x, nx), ct_round(be, w, nw), ct_round(be, bs, N);
  float *params = calloc(nw + N + 8, 4);
  memcpy(params, w, nw * 4), memcpy(params + nw + 4, bs, (size_t)N * 4);
  tz_slice P = ct_params(&o, params, nw + N + 8);
  tz_slice gx = ct_act_upload(&o, x, nx), gh = ct_act_upload(&o, NULL, no), ga = ct_act_upload(&o, NULL, no);
  be->matmul_t_gelu(be, ga, gh, gx, P, bias ? tz_f32(P, nw + 4) : TZ_NONE, M, K, N);
  float *h = ct_act_download(&o, gh, no), *a = ct_act_download(&o, ga, no);
  tz_slice cx = ot_buf(&oc, x, nx * 4), cw = ot_buf(&oc, w, nw * 4), cb = ot_buf(&oc, bs, (size_t)N * 4);
  tz_slice ch = ot_buf(&oc, NULL, no * 4), ca = ot_buf(&oc, NULL, no * 4);
  cpu->matmul_t(cpu, ch, cx, cw, bias ? cb : TZ_NONE, M, K, N, 0);
  cpu->gelu_fwd(cpu, ca, ch, no);
  float *hr = ot_get(&oc, ch, no), *ar = ot_get(&oc, ca, no);
  int bad = 0;
  double d_tanh = 0, d_erf = 0, worst = 0;
  int n_band = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      size_t i = (size_t)m * N + n;
      double s = bias ? fabs(bs[n]) : 0;
      for (int k = 0; k < K; k++) s += fabs((double)x[(size_t)m * K + k] * w[(size_t)n * K + k]);
      double bh = (bf16 ? 8e-3 : 2e-5) * s + 1e-6;
      double ba = 1.2 * (2e-5 * s + 1e-6) + (bf16 ? 8e-3 : 1e-5) * fabs(ar[i]) + tanh_term_fwd(hr[i]);
      worst = fmax(worst, fabs(a[i] - ar[i]));
      if (form && fabs(hr[i]) >= 1.5 && fabs(hr[i]) <= 4) {
        d_tanh += fabs(a[i] - gelu_tanh(hr[i])), d_erf += fabs(a[i] - gelu_erf(hr[i]));
        n_band++;
      }
      if (!(fabs(h[i] - hr[i]) <= bh) || !(fabs(a[i] - ar[i]) <= ba)) {
        if (bad++ < 5)
          print_error("matmul_t_gelu %s M=%d K=%d N=%d bias=%d: [%d,%d] h %.9g want %.9g (<= %.3g), out %.9g want "
                      "%.9g (<= %.3g)\n",
                      tz_dtype_name(be->act), M, K, N, bias, m, n, h[i], hr[i], bh, a[i], ar[i], ba);
      }
    }
  printf("matmul_t_gelu %s M=%d K=%d N=%d bias=%d: out at most %.3g from the CPU's\n", tz_dtype_name(be->act), M, K,
         N, bias, worst);
  if (form) {
    printf("GeLU form %s bias=%d, %d outputs at 1.5 <= |h| <= 4: mean distance %.3g to the tanh form, %.3g to the erf "
           "form\n",
           tz_dtype_name(be->act), bias, n_band, d_tanh / n_band, d_erf / n_band);
    assert_true(n_band > 0 && d_tanh < d_erf);
  }
  if (bad) fail();
  free(x), free(w), free(bs), free(params), free(h), free(a), free(hr), free(ar);
  ot_release(&o);
  ot_release(&oc);
}

/* matmul_dgelu: dh = gelu'(h) ⊙ (dout·W), db += Σ_m dh. */
static void check_bwd(tz_backend *be, int M, int K, int N, int with_db) {
  ot_ctx o, oc;
  ot_init(&o, be, 99 + M * 31 + K * 7 + N);
  ot_init(&oc, cpu, 1);
  const int bf16 = be->act == TZ_BF16;
  size_t nd = (size_t)M * K, nw = (size_t)K * N, no = (size_t)M * N;
  float *dout = ot_randn(&o, nd, 1), *w = ot_randn(&o, nw, 0.3f), *h = ot_randn(&o, no, 2), *db0 = ot_randn(&o, N, 1);
  ct_round(be, dout, nd), ct_round(be, w, nw), ct_round(be, h, no);
  tz_slice P = ct_params(&o, w, nw);
  tz_slice gd = ct_act_upload(&o, dout, nd), gh = ct_act_upload(&o, h, no), gdh = ct_act_upload(&o, NULL, no);
  tz_slice gdb = ot_buf(&o, db0, (size_t)N * 4);
  be->matmul_dgelu(be, gdh, with_db ? gdb : TZ_NONE, gd, P, gh, M, K, N);
  float *dh = ct_act_download(&o, gdh, no), *db = ot_get(&o, gdb, N);
  tz_slice cd = ot_buf(&oc, dout, nd * 4), cw = ot_buf(&oc, w, nw * 4), ch = ot_buf(&oc, h, no * 4);
  tz_slice cda = ot_buf(&oc, NULL, no * 4), cdh = ot_buf(&oc, NULL, no * 4), cdb = ot_buf(&oc, db0, (size_t)N * 4);
  cpu->matmul(cpu, cda, cd, cw, M, K, N, 0);
  cpu->gelu_bwd(cpu, cdh, ch, cda, no);
  cpu->bias_bwd(cpu, cdb, cdh, M, N);
  float *dhr = ot_get(&oc, cdh, no), *dbr = ot_get(&oc, cdb, N), *dar = ot_get(&oc, cda, no);
  double *dbb = calloc(N, sizeof(double)), worst = 0;
  int bad = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      size_t i = (size_t)m * N + n;
      double s = 0;
      for (int k = 0; k < K; k++) s += fabs((double)dout[(size_t)m * K + k] * w[(size_t)k * N + n]);
      double b = 1.2 * (3e-5 * s + 1e-6) + (bf16 ? 8e-3 : 1e-5) * fabs(dhr[i]) + tanh_term_bwd(h[i], dar[i]);
      dbb[n] += b;
      worst = fmax(worst, fabs(dh[i] - dhr[i]));
      if (!(fabs(dh[i] - dhr[i]) <= b) && bad++ < 5)
        print_error("matmul_dgelu %s M=%d K=%d N=%d: dh[%d,%d] %.9g want %.9g (<= %.3g)\n", tz_dtype_name(be->act), M,
                    K, N, m, n, dh[i], dhr[i], b);
    }
  for (int n = 0; n < N; n++) {
    double want = with_db ? dbr[n] : db0[n], b = with_db ? dbb[n] + 1e-6 * (1 + fabs(db0[n])) : 0;
    if (!(fabs(db[n] - want) <= b) && bad++ < 10)
      print_error("matmul_dgelu %s M=%d K=%d N=%d db=%d: db[%d] %.9g want %.9g (<= %.3g)\n", tz_dtype_name(be->act),
                  M, K, N, with_db, n, db[n], want, b);
  }
  printf("matmul_dgelu %s M=%d K=%d N=%d db=%d: dh at most %.3g from the CPU's\n", tz_dtype_name(be->act), M, K, N,
         with_db, worst);
  if (bad) fail();
  free(dout), free(w), free(h), free(db0), free(dh), free(db), free(dhr), free(dbr), free(dar), free(dbb);
  ot_release(&o);
  ot_release(&oc);
}

/* {M, K, N}: odd M (the training rows of test_cuda_train: 111), N a multiple of 8 (cuBLASLt), odd
 * N (the fallback kernel), a GPT-2-like fc (K = C, N = 4C). */
static const int kShapes[][3] = {{64, 64, 128}, {37, 48, 64}, {111, 256, 1024}, {33, 40, 37}, {7, 16, 8}, {64, 768, 3072}};

static void op_suite(const char *precision, const char *epi, int naive) {
  tz_backend *be = cuda_with(precision, epi, naive);
  assert_non_null(be->matmul_t_gelu);
  assert_non_null(be->matmul_dgelu);
#ifdef TZ_HAVE_CUDA
  long long fb0 = tzc_matmul_fallbacks(be);
#endif
  for (int s = 0; s < (int)(sizeof kShapes / sizeof *kShapes); s++) {
    const int M = kShapes[s][0], K = kShapes[s][1], N = kShapes[s][2];
    check_fwd(be, M, K, N, 1, 0);
    check_fwd(be, M, K, N, 0, 0);
    check_bwd(be, M, K, N, 1);
    check_bwd(be, M, K, N, 0);
  }
  check_fwd(be, 512, 8, 8, 0, 1); /* the GeLU form: h = x (GELU_AUX) */
  check_fwd(be, 512, 8, 8, 1, 1); /* h = x + b (GELU_AUX_BIAS) */
  for (int r = 0; r < 2; r++) check_bwd(be, 111, 256, 1024, 1); /* the descriptor cache's second use */
#ifdef TZ_HAVE_CUDA
  printf("%s %s%s: %lld of the calls ran on the fallback kernel\n", precision ? precision : "bf16", epi,
         naive ? " (TEZGAH_CUDA_MATMUL=naive)" : "", tzc_matmul_fallbacks(be) - fb0);
#endif
  be->destroy(be);
}
static void test_ops_fp32(void **state) { op_suite("fp32", "both", 0); }
static void test_ops_bf16(void **state) { op_suite(NULL, "both", 0); }
static void test_ops_bgrad_fp32(void **state) { op_suite("fp32", "both+bgrad", 0); }
static void test_ops_bgrad_bf16(void **state) { op_suite(NULL, "both+bgrad", 0); }
static void test_ops_fallback_fp32(void **state) { op_suite("fp32", "both+bgrad", 1); }
static void test_ops_fallback_bf16(void **state) { op_suite(NULL, "both+bgrad", 1); }

/* ---- training ---- */
#define STEPS 12
#define BB 3
#define TT 37
typedef struct {
  int32_t in[STEPS][BB * TT], tg[STEPS][BB * TT];
} batches;
static void make_batches(batches *d, int V) {
  tz_rng r;
  tz_rng_seed(&r, 42, 1);
  int32_t seq[BB * TT + 1];
  for (int s = 0; s < STEPS; s++) {
    for (int i = 0; i <= BB * TT; i++)
      seq[i] = tz_rng_below(&r, 8) == 0 ? (int32_t)tz_rng_below(&r, (uint32_t)V) : (i * 7 + s) % 50;
    for (int i = 0; i < BB * TT; i++) d->in[s][i] = seq[i], d->tg[s][i] = seq[i + 1];
  }
}
static void train(tz_backend *be, const batches *d, int recompute, double *losses) {
  tz_config c = {0};
  c.arch = TZ_ARCH_GPT2;
  c.n_layer = 2, c.n_head = 4, c.n_kv_head = 4, c.d_model = 256; /* fc: N = 1024 (cuBLASLt) */
  c.vocab_size = 101, c.max_seq_len = 40, c.tied = 1;
  assert_int_equal(tz_config_finalize(&c), 0);
  tz_model *m;
  assert_int_equal(tz_model_create(be, &c, &m), 0);
  tz_model_init_weights(m, 1234);
  m->recompute = recompute;
  assert_int_equal(tz_model_alloc_training(m, BB, TT), 0);
  for (int s = 0; s < STEPS; s++) {
    tz_model_zero_grads(m);
    losses[s] = tz_model_train_micro(m, d->in[s], d->tg[s], 1.0f);
    double norm = tz_model_grad_norm(m);
    tz_adamw_hp hp = {3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, norm > 1.0 ? (float)(1.0 / norm) : 1.0f, s + 1};
    tz_model_adamw(m, &hp);
  }
  tz_model_free(m);
}
static void check_rel(const char *what, const double *ref, const double *got, double tol) {
  double worst = 0;
  for (int s = 0; s < STEPS; s++) {
    double rel = fabs(got[s] - ref[s]) / fabs(ref[s]);
    worst = isnan(rel) ? INFINITY : fmax(worst, rel);
  }
  printf("%s: first loss %.7f, last %.7f (cpu %.7f); worst relative difference %.2e (tolerance %.0e)\n", what, got[0],
         got[STEPS - 1], ref[STEPS - 1], worst, tol);
  assert_true(worst <= tol);
}
static void test_training(void **state) {
  (void)state;
  batches *d = malloc(sizeof *d);
  make_batches(d, 101);
  double lc[STEPS], l1[STEPS], l2[STEPS];
  train(cpu, d, 0, lc);
  assert_true(lc[STEPS - 1] < lc[0]);
  static const char *const modes[] = {"off", "bwd", "fwd", "both", "both+bgrad"};
  char what[80];
  for (int i = 0; i < 5; i++) {
    for (int r = 0; r < 2; r++) {
      tz_backend *be = cuda_with(NULL, modes[i], 0);
      train(be, d, 0, r ? l2 : l1);
      be->destroy(be);
    }
    snprintf(what, sizeof what, "bf16 %s", modes[i]);
    check_rel(what, lc, l1, 5e-2); /* the header: why not tighter */
    printf("bf16 %s: two runs %s\n", modes[i], memcmp(l1, l2, sizeof l1) ? "DIFFER" : "bit-identical");
    assert_memory_equal(l1, l2, sizeof l1);
  }
  tz_backend *be = cuda_with("fp32", "both+bgrad", 0);
  train(be, d, 0, l1);
  be->destroy(be);
  check_rel("fp32 both+bgrad", lc, l1, 1e-3); /* 1e-3: the epilogue's tanh may be the approximate one (T) */
  /* recompute: the forward fusion is off, the backward's on: exactly a stored run with bwd */
  be = cuda_with(NULL, "both", 0);
  train(be, d, 1, l1);
  be->destroy(be);
  be = cuda_with(NULL, "bwd", 0);
  train(be, d, 0, l2);
  be->destroy(be);
  printf("bf16 both with recompute vs bwd stored: %s\n", memcmp(l1, l2, sizeof l1) ? "DIFFER" : "bit-identical");
  assert_memory_equal(l1, l2, sizeof l1);
  free(d);
}

static int setup(void **state) {
  (void)state;
  cpu = tz_backend_create("cpu", 2, NULL);
  assert_non_null(cpu);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cpu->destroy(cpu);
  return 0;
}

int main(void) {
#ifdef TZ_HAVE_CUDA
  /* the switch's check runs before the device is touched: a bad value fails even without a GPU */
  setenv("TEZGAH_CUDA_GELU_EPI", "sometimes", 1);
  tz_backend *bad = tz_backend_create("cuda", 0, NULL);
  unsetenv("TEZGAH_CUDA_GELU_EPI");
  if (bad || !strstr(tz_errmsg(), "TEZGAH_CUDA_GELU_EPI=sometimes: must be")) {
    fprintf(stderr, "FAILED: a bad TEZGAH_CUDA_GELU_EPI was %s\n", bad ? "accepted" : tz_errmsg());
    return 1;
  }
  printf("a bad TEZGAH_CUDA_GELU_EPI: %s\n", tz_errmsg());
#endif
  tz_backend *probe = ct_cuda(NULL); /* no GPU: SKIPPED (exit 77) here */
  probe->destroy(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_switch),         cmocka_unit_test(test_ops_fp32),
      cmocka_unit_test(test_ops_bf16),       cmocka_unit_test(test_ops_bgrad_fp32),
      cmocka_unit_test(test_ops_bgrad_bf16), cmocka_unit_test(test_ops_fallback_fp32),
      cmocka_unit_test(test_ops_fallback_bf16), cmocka_unit_test(test_training),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
