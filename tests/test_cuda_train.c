/* Whole-model training on CUDA against the CPU backend, through the model API (as
 * test_webgpu_train.c does for WebGPU). Models: a small llama (GQA 4 query / 2 kv heads,
 * RoPE, SwiGLU, RMSNorm, tied embeddings) and a small gpt2 (LayerNorm, GeLU, biases, learned
 * positions), head_dim 64, B = 3, T = 37 (not a multiple of any tile), vocab 101 (padded).
 * 20 AdamW steps with grad-norm clipping as the trainer does it, the same initial weights and
 * batches on every backend:
 * - --precision fp32: every step's loss within 1e-4 relative of the CPU's; then greedy
 *   decoding (KV cache) from the trained weights gives the CPU's tokens exactly;
 * - bf16: every step's loss within 2e-2 relative of the CPU's fp32;
 * - determinism: two bf16 runs (fresh backends) give bit-identical losses;
 * - cross-backend resume (fp32): 8 steps on CUDA, checkpoint (run_ckpt.h, as train.c writes
 *   it: params + AdamW moments), the remaining 12 on the CPU, and the other way round: every
 *   resumed loss within 1e-4 relative of the uninterrupted CPU run;
 * - bf16 resume on CUDA: 8 steps, checkpoint, 12 more on a fresh CUDA backend: bit-identical
 *   to the uninterrupted bf16 run (the bf16 weight copy is rebuilt from the fp32 master);
 * - the classifier in row chunks (tz_model.logits_rows = 40 of the B*T = 111 rows: chunks of
 *   40, 40, 31), against the CPU's whole batch: fp32 every step's loss within 1e-4 relative,
 *   bf16 within 2e-2 (the bars of the whole batch above), and two bf16 chunked runs
 *   bit-identical (llama and gpt2, tied: dW_lm is wte's gradient, embed_bwd adds to it).
 * The CUDA backend runs with its defaults, which the environment may change: the optional ops it
 * offers (printed for each run against the CPU) are the model's path, e.g. TEZGAH_CUDA_GELU_EPI's
 * GeLU epilogues; the bars above hold for each. Not for TEZGAH_CUDA_MM_RES=1 (matmul_t_res, the
 * residual add in cuBLASLt's epilogue; opt-in, off by default): with it gpt2 bf16 went to 2.87e-2
 * on the H200 (1.64e-2 without), past the 2e-2 bar; test_cuda_mm_res checks that op.
 * Needs a CUDA GPU; otherwise SKIPPED (exit 77). TEZGAH_CUDA_REQUIRED=1 turns the skip into a
 * failure (GPU machine). Temporary checkpoints go to $TMPDIR (default /tmp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/run_ckpt.h"
#include "core/rng.h"
#include "cuda_testutil.h"
#include "model/model.h"

#define STEPS 20
#define RESUME_AT 8
#define BB 3
#define TT 37

static tz_config cfg_of(tz_arch arch) {
  tz_config c = {0};
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_kv_head = arch == TZ_ARCH_LLAMA ? 2 : 4;
  c.d_model = 256;
  c.d_ff = arch == TZ_ARCH_LLAMA ? 352 : 0;
  c.vocab_size = 101;
  c.max_seq_len = 40;
  c.tied = 1;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

/* The batches of all steps (a learnable stream: an arithmetic pattern with some noise). */
typedef struct {
  int32_t in[STEPS][BB * TT], tg[STEPS][BB * TT];
} batches;
static void make_batches(batches *d, int V) {
  tz_rng r;
  tz_rng_seed(&r, 99, 1);
  int32_t seq[BB * TT + 1];
  for (int s = 0; s < STEPS; s++) {
    for (int i = 0; i <= BB * TT; i++)
      seq[i] = tz_rng_below(&r, 8) == 0 ? (int32_t)tz_rng_below(&r, (uint32_t)V) : (i * 7 + s) % 50;
    for (int i = 0; i < BB * TT; i++) d->in[s][i] = seq[i], d->tg[s][i] = seq[i + 1];
    d->tg[s][5] = -1; /* an ignored target */
  }
}

static int g_rows; /* tz_model.logits_rows of the models new_model makes (0: auto, the whole batch here) */

static tz_model *new_model(tz_backend *be, const tz_config *c) {
  tz_model *m;
  assert_int_equal(tz_model_create(be, c, &m), 0);
  tz_model_init_weights(m, 1234);
  m->logits_rows = g_rows;
  assert_int_equal(tz_model_alloc_training(m, BB, TT), 0);
  assert_int_equal(m->train.chunk, g_rows && g_rows < BB * TT ? g_rows : BB * TT);
  return m;
}

/* Steps [from, to): zero grads, forward/backward, clip by the global norm, AdamW (t = s+1). */
static void run_steps(tz_model *m, const batches *d, int from, int to, double *losses) {
  for (int s = from; s < to; s++) {
    tz_model_zero_grads(m);
    losses[s] = tz_model_train_micro(m, d->in[s], d->tg[s], 1.0f);
    double norm = tz_model_grad_norm(m);
    tz_adamw_hp hp = {3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, norm > 1.0 ? (float)(1.0 / norm) : 1.0f, s + 1};
    tz_model_adamw(m, &hp);
  }
}

static void train_losses(tz_backend *be, tz_arch arch, const batches *d, double *losses, tz_model **keep) {
  tz_config c = cfg_of(arch);
  tz_model *m = new_model(be, &c);
  run_steps(m, d, 0, STEPS, losses);
  if (keep) *keep = m;
  else tz_model_free(m);
}

static const char *arch_name(tz_arch a) { return a == TZ_ARCH_LLAMA ? "llama" : "gpt2"; }

/* Which optional fused ops the model's path goes through on be (the environment's switches). */
static void print_fused(const char *what, const tz_backend *be) {
  printf("%s: matmul_t_res %s, matmul_t_gelu %s, matmul_dgelu %s\n", what, be->matmul_t_res ? "on" : "off",
         be->matmul_t_gelu ? "on" : "off", be->matmul_dgelu ? "on" : "off");
}

static void check_losses(const char *what, const double *ref, const double *got, int from, double tol) {
  double worst = 0;
  for (int s = from; s < STEPS; s++) {
    double rel = fabs(got[s] - ref[s]) / fabs(ref[s]);
    if (rel > worst || isnan(rel)) worst = isnan(rel) ? INFINITY : rel;
    printf("%s step %2d  cpu %.7f  cuda %.7f  rel %.2e\n", what, s + 1, ref[s], got[s], rel);
  }
  printf("%s: worst relative loss difference %.2e (tolerance %.0e)\n", what, worst, tol);
  assert_true(worst <= tol);
}

static void greedy(tz_model *m, int32_t *toks, int n_prompt, int n_new) {
  assert_int_equal(tz_model_alloc_inference(m), 0);
  int V = m->cfg.vocab_size;
  float *logits = malloc(sizeof(float) * V);
  tz_model_decode(m, toks, n_prompt, 0, logits);
  for (int i = 0; i < n_new; i++) {
    int best = 0;
    for (int v = 1; v < V; v++)
      if (logits[v] > logits[best]) best = v;
    toks[n_prompt + i] = best;
    if (i + 1 < n_new) tz_model_decode(m, &toks[n_prompt + i], 1, n_prompt + i, logits);
  }
  free(logits);
}

/* ---- fp32 vs the CPU, then greedy decoding ---- */
static void fp32_vs_cpu(tz_arch arch) {
  tz_backend *gpu = ct_cuda("fp32");
  tz_backend *cpu = tz_backend_create("cpu", 2, NULL);
  batches *d = malloc(sizeof *d);
  make_batches(d, 101);
  double lc[STEPS], lg[STEPS];
  tz_model *mc, *mg;
  train_losses(cpu, arch, d, lc, &mc);
  train_losses(gpu, arch, d, lg, &mg);
  char what[64];
  snprintf(what, sizeof what, "%s fp32", arch_name(arch));
  print_fused(what, gpu);
  check_losses(what, lc, lg, 0, 1e-4);
  assert_true(lc[STEPS - 1] < lc[0]); /* it learned something */
  int32_t tc[30] = {3, 10, 17, 24, 31}, tg[30] = {3, 10, 17, 24, 31};
  greedy(mc, tc, 5, 20);
  greedy(mg, tg, 5, 20);
  for (int i = 0; i < 25; i++) printf("%d%c", tg[i], i == 24 ? '\n' : ' ');
  assert_memory_equal(tc, tg, sizeof(int32_t) * 25);
  tz_model_free(mc);
  tz_model_free(mg);
  free(d);
  cpu->destroy(cpu);
  gpu->destroy(gpu);
}
static void test_fp32_llama(void **state) { fp32_vs_cpu(TZ_ARCH_LLAMA); }
static void test_fp32_gpt2(void **state) { fp32_vs_cpu(TZ_ARCH_GPT2); }

/* ---- bf16 vs the CPU's fp32, and run-to-run determinism ---- */
static void bf16_vs_cpu(tz_arch arch) {
  tz_backend *cpu = tz_backend_create("cpu", 2, NULL);
  batches *d = malloc(sizeof *d);
  make_batches(d, 101);
  double lc[STEPS], l1[STEPS], l2[STEPS];
  train_losses(cpu, arch, d, lc, NULL);
  for (int run = 0; run < 2; run++) { /* a fresh backend each time */
    tz_backend *gpu = ct_cuda("bf16");
    assert_int_equal(gpu->act, TZ_BF16);
    if (!run) print_fused(arch_name(arch), gpu);
    train_losses(gpu, arch, d, run ? l2 : l1, NULL);
    gpu->destroy(gpu);
  }
  char what[64];
  snprintf(what, sizeof what, "%s bf16", arch_name(arch));
  check_losses(what, lc, l1, 0, 2e-2);
  int same = memcmp(l1, l2, sizeof l1) == 0;
  if (!same)
    for (int s = 0; s < STEPS; s++) printf("determinism step %2d: %.17g vs %.17g\n", s + 1, l1[s], l2[s]);
  assert_true(same);
  assert_true(l1[STEPS - 1] < l1[0]);
  free(d);
  cpu->destroy(cpu);
}
static void test_bf16_llama(void **state) { bf16_vs_cpu(TZ_ARCH_LLAMA); }
static void test_bf16_gpt2(void **state) { bf16_vs_cpu(TZ_ARCH_GPT2); }

/* ---- resume: RESUME_AT steps on `first`, a checkpoint, the rest on `second` ---- */
static void resume_run(tz_backend *first, tz_backend *second, tz_arch arch, const batches *d, double *losses) {
  char dir[] = "/tmp/tz_cuda_train_XXXXXX";
  char tmpl[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/tz_cuda_train_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  char *dp = mkdtemp(tmpl);
  if (!dp) dp = mkdtemp(dir);
  assert_non_null(dp);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dp, TZ_CKPT_FILE);
  tz_config c = cfg_of(arch);
  tz_model *m = new_model(first, &c);
  run_steps(m, d, 0, RESUME_AT, losses);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddNumberToObject(st, "step", RESUME_AT);
  assert_int_equal(tz_run_save(path, m, NULL, st), 0);
  cJSON_Delete(st);
  tz_model_free(m);
  tz_run_file rf;
  assert_int_equal(tz_run_open(path, &rf), 0);
  assert_int_equal(tz_run_load_model(&rf, second, &m), 0);
  assert_int_equal(tz_model_alloc_training(m, BB, TT), 0);
  assert_int_equal(tz_run_load_adam(&rf, m), 0);
  tz_run_close(&rf);
  run_steps(m, d, RESUME_AT, STEPS, losses);
  tz_model_free(m);
  unlink(path);
  rmdir(dp);
}

static void resume_cross(tz_arch arch) {
  tz_backend *gpu = ct_cuda("fp32");
  tz_backend *cpu = tz_backend_create("cpu", 2, NULL);
  batches *d = malloc(sizeof *d);
  make_batches(d, 101);
  double lc[STEPS], lr[STEPS];
  train_losses(cpu, arch, d, lc, NULL);
  char what[64];
  resume_run(gpu, cpu, arch, d, lr);
  snprintf(what, sizeof what, "%s cuda->cpu resume", arch_name(arch));
  check_losses(what, lc, lr, 0, 1e-4);
  resume_run(cpu, gpu, arch, d, lr);
  snprintf(what, sizeof what, "%s cpu->cuda resume", arch_name(arch));
  check_losses(what, lc, lr, 0, 1e-4);
  free(d);
  cpu->destroy(cpu);
  gpu->destroy(gpu);
}
static void test_resume_cross_llama(void **state) { resume_cross(TZ_ARCH_LLAMA); }
static void test_resume_cross_gpt2(void **state) { resume_cross(TZ_ARCH_GPT2); }

static void test_resume_bf16_exact(void **state) {
  for (int a = 0; a < 2; a++) {
    tz_arch arch = a ? TZ_ARCH_GPT2 : TZ_ARCH_LLAMA;
    batches *d = malloc(sizeof *d);
    make_batches(d, 101);
    double lu[STEPS], lr[STEPS];
    tz_backend *g1 = ct_cuda("bf16");
    train_losses(g1, arch, d, lu, NULL);
    tz_backend *g2 = ct_cuda("bf16");
    resume_run(g1, g2, arch, d, lr);
    for (int s = 0; s < STEPS; s++)
      printf("%s bf16 resume step %2d: uninterrupted %.9g resumed %.9g%s\n", arch_name(arch), s + 1, lu[s], lr[s],
             lu[s] == lr[s] ? "" : "  DIFFERENT");
    assert_memory_equal(lu, lr, sizeof lu);
    g2->destroy(g2);
    g1->destroy(g1);
    free(d);
  }
}

/* ---- the classifier in chunks of 40 rows vs the CPU's whole batch ---- */
static void chunked(tz_arch arch) {
  tz_backend *cpu = tz_backend_create("cpu", 2, NULL);
  batches *d = malloc(sizeof *d);
  make_batches(d, 101);
  double lc[STEPS], lf[STEPS], l1[STEPS], l2[STEPS];
  train_losses(cpu, arch, d, lc, NULL);
  g_rows = 40;
  tz_backend *gpu = ct_cuda("fp32");
  train_losses(gpu, arch, d, lf, NULL);
  gpu->destroy(gpu);
  char what[64];
  snprintf(what, sizeof what, "%s fp32 chunks of 40", arch_name(arch));
  check_losses(what, lc, lf, 0, 1e-4);
  for (int run = 0; run < 2; run++) { /* a fresh backend each time */
    gpu = ct_cuda("bf16");
    train_losses(gpu, arch, d, run ? l2 : l1, NULL);
    gpu->destroy(gpu);
  }
  g_rows = 0;
  snprintf(what, sizeof what, "%s bf16 chunks of 40", arch_name(arch));
  check_losses(what, lc, l1, 0, 2e-2);
  int same = memcmp(l1, l2, sizeof l1) == 0;
  if (!same)
    for (int s = 0; s < STEPS; s++) printf("determinism step %2d: %.17g vs %.17g\n", s + 1, l1[s], l2[s]);
  assert_true(same);
  free(d);
  cpu->destroy(cpu);
}
static void test_chunked_llama(void **state) { chunked(TZ_ARCH_LLAMA); }
static void test_chunked_gpt2(void **state) { chunked(TZ_ARCH_GPT2); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fp32_llama),         cmocka_unit_test(test_fp32_gpt2),
      cmocka_unit_test(test_bf16_llama),         cmocka_unit_test(test_bf16_gpt2),
      cmocka_unit_test(test_resume_cross_llama), cmocka_unit_test(test_resume_cross_gpt2),
      cmocka_unit_test(test_resume_bf16_exact),  cmocka_unit_test(test_chunked_llama),
      cmocka_unit_test(test_chunked_gpt2),
  };
  /* skip the whole program up front when there is no CUDA device */
  tz_backend *probe = ct_cuda(NULL);
  probe->destroy(probe);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
