/* Whole-model checks on tiny random models of both families (CPU backend):
 * - the model's backward (every parameter gradient, through every op's wiring) against
 *   central finite differences of the model's own loss, evaluated in float64 summation of
 *   fp32 forward passes (tolerance stated below);
 * - KV-cache decoding (prefill + one token at a time) gives the same logits as a full
 *   forward pass over the same tokens;
 * - training steps are deterministic (same seed → identical losses and parameters);
 * - tz_model_adamw refuses t < 1 (adamw_t_check.h);
 * - --recompute (norm and activation outputs recomputed in the backward) gives bit-identical
 *   losses and gradients to the stored-activation path (itself checked against finite
 *   differences above) with a smaller activation arena;
 * - one buffer per activation tensor (be->act_buffers, the WebGPU backend's preference) gives
 *   bit-identical results to the single arena;
 * - the classifier in row chunks (tz_model.logits_rows: R = 1, 4, 7, 8 of N = 21 rows — 4 and 8
 *   do not divide N — and R ≥ N) against the whole batch (R = N): every micro-batch's loss
 *   within 1e-6 relative, every parameter tensor's gradient within 1e-5 relative-rms (fp32
 *   summation order only: dW_lm summed over chunks, and the BLAS blocking of fewer rows), with
 *   gradient accumulation over two micro-batches, with and without --recompute, gpt2 (tied
 *   lm_head = wte: embed_bwd adds to the same gradient) and llama untied; eval losses and the
 *   logits of tz_model_forward_logits equal as stated there; the arena smaller by the logits
 *   rows not kept; a chunked run twice gives the same bits; logits_rows < 0 is refused;
 * - the automatic chunk choice (tz_model_logits_rows) at GPT-2 / Llama-3 sizes;
 * - be->grads_written (only the gradients no op writes whole zero-filled; the first
 *   micro-batch's weight-gradient matmuls write) gives the same bits as one whole fill, with
 *   the gradients poisoned with NaN before each step (gpt2 tied, llama untied; chunked
 *   classifier, accumulation);
 * - tz_model_init_weights (filled in parallel chunks from tz_rng_advance) gives the same bits as
 *   the one-thread definition written out here: one PCG32 stream (seed, 0x7e29a4), tensor after
 *   tensor, N(0, 0.02) / N(0, 0.02 / sqrt(2 n_layer)) / ones / zeros, padded vocab rows zero —
 *   with 1 and 4 OpenMP threads, tensors spanning several chunks. */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/rng.h"
#include "model/model.h"
#include "testutil.h"
#include "adamw_t_check.h"

static tz_config tiny(tz_arch arch, int n_kv_head, int tied) {
  tz_config c = {0};
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_kv_head = n_kv_head;
  c.d_model = 16;
  c.d_ff = arch == TZ_ARCH_LLAMA ? 24 : 0;
  c.vocab_size = 37; /* odd, padded up to 64/128 */
  c.max_seq_len = 12;
  c.tied = tied;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

static void random_tokens(tz_rng *r, int32_t *x, int n, int V) {
  for (int i = 0; i < n; i++) x[i] = (int32_t)tz_rng_below(r, (uint32_t)V);
}

/* Perturb parameter i by ±h and return the loss difference quotient. */
static double fd_grad(tz_model *m, float *p, size_t i, const int32_t *in, const int32_t *tg) {
  const float h = 1e-2f;
  float orig = p[i];
  p[i] = orig + h;
  tz_model_set_params(m, p);
  double lp = tz_model_eval_loss(m, in, tg);
  p[i] = orig - h;
  tz_model_set_params(m, p);
  double lm = tz_model_eval_loss(m, in, tg);
  p[i] = orig;
  tz_model_set_params(m, p);
  return (lp - lm) / (2.0 * h);
}

static void check_grads(tz_arch arch, int n_kv, int tied) {
  tz_backend *be = tz_backend_create("cpu", 0, NULL);
  tz_config c = tiny(arch, n_kv, tied);
  tz_model *m;
  assert_int_equal(tz_model_create(be, &c, &m), 0);
  tz_model_init_weights(m, 7);
  int B = 2, T = 5;
  assert_int_equal(tz_model_alloc_training(m, B, T), 0);
  /* larger weights than the 0.02 init so gradients are well above fp32 noise */
  float *p = malloc(m->lay.total * sizeof *p), *g = malloc(m->lay.total * sizeof *g);
  tz_rng r;
  tz_rng_seed(&r, 99, 1);
  tz_model_get_params(m, p);
  for (size_t i = 0; i < m->lay.total; i++) p[i] += 0.3f * tz_rng_normal(&r);
  tz_model_set_params(m, p);
  int32_t in[10], tg[10];
  random_tokens(&r, in, B * T, c.vocab_size);
  random_tokens(&r, tg, B * T, c.vocab_size);
  tg[3] = -1; /* an ignored target */
  tz_model_zero_grads(m);
  tz_model_train_micro(m, in, tg, 1.0f);
  tz_slice gs = {m->grads, 0};
  be->download(be, g, gs, m->lay.total * sizeof *g);
  int checked = 0, bad = 0;
  for (int t = 0; t < m->lay.n; t++) {
    const tz_tensor_info *ti = &m->lay.t[t];
    for (int k = 0; k < 4; k++) {
      size_t j = tz_rng_below(&r, (uint32_t)ti->numel);
      if ((ti->off == m->lay.wte || ti->off == m->lay.lm_head) && j / ti->shape[1] >= (size_t)c.vocab_size)
        continue; /* padded rows: gradient is exactly 0 by construction */
      size_t i = ti->off + j;
      double num = fd_grad(m, p, i, in, tg), ana = g[i];
      /* fp32 forward with h = 1e-2: truncation O(h²) and rounding ~1e-7/h; 2e-2 relative
       * plus 2e-4 absolute separates wiring bugs (O(1) errors) from noise. */
      double tol = 2e-4 + 2e-2 * fabs(num);
      if (fabs(num - ana) > tol) {
        bad++;
        printf("  %s[%zu]: analytic %.6g vs numeric %.6g\n", ti->name, j, ana, num);
      }
      checked++;
    }
  }
  printf("%s n_kv_head=%d tied=%d: %d gradients checked, %d off\n", arch == TZ_ARCH_GPT2 ? "gpt2" : "llama",
         n_kv, tied, checked, bad);
  assert_int_equal(bad, 0);
  free(p);
  free(g);
  tz_model_free(m);
  be->destroy(be);
}

static void test_grads_llama_gqa(void **s) { check_grads(TZ_ARCH_LLAMA, 2, 1); }
static void test_grads_llama_untied_mqa(void **s) { check_grads(TZ_ARCH_LLAMA, 1, 0); }
static void test_grads_gpt2(void **s) { check_grads(TZ_ARCH_GPT2, 0, 1); }

static void check_kv(tz_arch arch, int n_kv) {
  tz_backend *be = tz_backend_create("cpu", 0, NULL);
  tz_config c = tiny(arch, n_kv, 1);
  tz_model *m;
  assert_int_equal(tz_model_create(be, &c, &m), 0);
  tz_model_init_weights(m, 3);
  float *p = malloc(m->lay.total * sizeof *p);
  tz_rng r;
  tz_rng_seed(&r, 5, 2);
  tz_model_get_params(m, p);
  for (size_t i = 0; i < m->lay.total; i++) p[i] += 0.2f * tz_rng_normal(&r);
  tz_model_set_params(m, p);
  int T = c.max_seq_len;
  assert_int_equal(tz_model_alloc_training(m, 1, T), 0);
  assert_int_equal(tz_model_alloc_inference(m), 0);
  int32_t tok[12];
  random_tokens(&r, tok, T, c.vocab_size);
  float *full = malloc((size_t)T * c.vocab_size * sizeof *full), *step = malloc(c.vocab_size * sizeof *step);
  tz_model_forward_logits(m, tok, full);
  double worst = 0;
  int prefill = 5;
  tz_model_decode(m, tok, prefill, 0, step);
  for (int t = prefill - 1; t < T; t++) {
    if (t >= prefill) tz_model_decode(m, tok + t, 1, t, step);
    /* relative to the row's largest logit: OpenBLAS uses other kernels for the one-row
     * decode product than for the full forward's, so tiny logits differ in their last bits */
    double scale = 1e-3;
    for (int v = 0; v < c.vocab_size; v++) scale = fmax(scale, fabs(full[(size_t)t * c.vocab_size + v]));
    for (int v = 0; v < c.vocab_size; v++) {
      double d = fabs(step[v] - full[(size_t)t * c.vocab_size + v]) / scale;
      if (d > worst) worst = d;
    }
  }
  printf("%s n_kv_head=%d: worst relative logit difference KV-cache vs full forward %.3g\n",
         arch == TZ_ARCH_GPT2 ? "gpt2" : "llama", n_kv, worst);
  assert_true(worst < 1e-5); /* same math, different summation order in matmul tiles */
  free(full);
  free(step);
  free(p);
  tz_model_free(m);
  be->destroy(be);
}

/* Loss and every gradient of one micro-batch, with and without recompute: bit-identical. */
static void check_recompute(tz_arch arch) {
  tz_backend *be = tz_backend_create("cpu", 1, NULL);
  tz_config c = tiny(arch, arch == TZ_ARCH_LLAMA ? 2 : 0, 1);
  c.n_layer = 3;
  int B = 2, T = 7;
  tz_rng r;
  tz_rng_seed(&r, 11, 3);
  int32_t in[14], tg[14];
  random_tokens(&r, in, B * T, c.vocab_size);
  random_tokens(&r, tg, B * T, c.vocab_size);
  float *g[2] = {0};
  double loss[2];
  size_t bytes[2], total = 0;
  for (int rc = 0; rc < 2; rc++) {
    tz_model *m;
    assert_int_equal(tz_model_create(be, &c, &m), 0);
    tz_model_init_weights(m, 5);
    m->recompute = rc;
    assert_int_equal(tz_model_alloc_training(m, B, T), 0);
    tz_model_zero_grads(m);
    loss[rc] = tz_model_train_micro(m, in, tg, 1.0f);
    total = m->lay.total;
    g[rc] = malloc(total * sizeof(float));
    be->download(be, g[rc], (tz_slice){m->grads, 0}, total * sizeof(float));
    bytes[rc] = m->train.bytes;
    tz_model_free(m);
  }
  printf("%s recompute: loss %.9g vs %.9g, arena %zu -> %zu bytes\n", arch == TZ_ARCH_GPT2 ? "gpt2" : "llama",
         loss[0], loss[1], bytes[0], bytes[1]);
  assert_true(loss[0] == loss[1]);
  assert_memory_equal(g[0], g[1], total * sizeof(float));
  assert_true(bytes[1] < bytes[0]);
  free(g[0]);
  free(g[1]);
  be->destroy(be);
}
/* The two allocation preferences (be->act_buffers, backend.h) on the CPU backend: the arena
 * and one buffer per activation tensor give bit-identical losses, gradients (with and without
 * recompute) and decoded logits; per tensor, every slice starts its own buffer, the outputs of
 * layer 0's ops lie in other buffers than their inputs, and freeing the model releases every
 * byte (mem_used back to 0). */
static void check_act_buffers(tz_arch arch) {
  tz_backend *be = tz_backend_create("cpu", 1, NULL);
  tz_config c = tiny(arch, arch == TZ_ARCH_LLAMA ? 2 : 0, 1);
  c.n_layer = 3;
  int B = 2, T = 6;
  tz_rng r;
  tz_rng_seed(&r, 21, 4);
  int32_t in[12], tg[12];
  random_tokens(&r, in, B * T, c.vocab_size);
  random_tokens(&r, tg, B * T, c.vocab_size);
  for (int rc = 0; rc < 2; rc++) {
    double loss[2];
    float *g[2], *lg[2];
    size_t total = 0;
    for (int per = 0; per < 2; per++) {
      be->act_buffers = per;
      tz_model *m;
      assert_int_equal(tz_model_create(be, &c, &m), 0);
      tz_model_init_weights(m, 5);
      m->recompute = rc;
      assert_int_equal(tz_model_alloc_training(m, B, T), 0);
      assert_int_equal(tz_model_alloc_inference(m), 0);
      tz_acts *a = &m->train;
      tz_layer_acts *x = &a->layer[0];
      if (!per) {
        assert_int_equal(a->nbufs, 1);
        assert_int_equal(m->infer.nbufs, 1);
      } else {
        assert_true(a->nbufs > 20 && m->infer.nbufs > 10);
        for (int i = 0; i < a->nbufs; i++)
          for (int j = i + 1; j < a->nbufs; j++) assert_ptr_not_equal(a->bufs[i], a->bufs[j]);
        tz_slice outs[][2] = {{x->qkv, x->n1}, {x->att, x->qkv}, {x->mid, x->att}, {x->n2, x->mid},
                              {x->h, x->n2},   {x->a, x->h},     {a->res[1], x->a}, {a->logits, a->nf},
                              {a->dtmp, a->logits}, {a->da, a->dres}, {a->dh, a->da}, {a->dtmp, a->dh},
                              {a->dqkv, a->dtmp}, {a->dtmp, a->dqkv}};
        for (size_t k = 0; k < sizeof outs / sizeof *outs; k++) {
          assert_int_equal(outs[k][0].off, 0);
          assert_ptr_not_equal(outs[k][0].buf, outs[k][1].buf);
        }
      }
      tz_model_zero_grads(m);
      loss[per] = tz_model_train_micro(m, in, tg, 1.0f);
      total = m->lay.total;
      g[per] = malloc(total * sizeof(float));
      be->download(be, g[per], (tz_slice){m->grads, 0}, total * sizeof(float));
      lg[per] = malloc((size_t)c.vocab_size * sizeof(float));
      tz_model_decode(m, in, T, 0, lg[per]);
      tz_model_decode(m, in + T, 1, T, lg[per]);
      tz_model_free(m);
      assert_int_equal(be->mem_used(be), 0);
    }
    printf("%s recompute=%d: loss arena %.9g, per tensor %.9g\n", arch == TZ_ARCH_GPT2 ? "gpt2" : "llama", rc,
           loss[0], loss[1]);
    assert_true(loss[0] == loss[1]);
    assert_memory_equal(g[0], g[1], total * sizeof(float));
    assert_memory_equal(lg[0], lg[1], (size_t)c.vocab_size * sizeof(float));
    for (int per = 0; per < 2; per++) free(g[per]), free(lg[per]);
  }
  be->destroy(be);
}
static void test_act_buffers_llama(void **s) { check_act_buffers(TZ_ARCH_LLAMA); }
static void test_act_buffers_gpt2(void **s) { check_act_buffers(TZ_ARCH_GPT2); }

static void test_recompute_llama(void **s) { check_recompute(TZ_ARCH_LLAMA); }
static void test_recompute_gpt2(void **s) { check_recompute(TZ_ARCH_GPT2); }

static void test_kv_llama(void **s) { check_kv(TZ_ARCH_LLAMA, 2); }
static void test_kv_gpt2(void **s) { check_kv(TZ_ARCH_GPT2, 0); }

static void test_determinism(void **s) {
  double losses[2][3];
  float *params[2];
  for (int run = 0; run < 2; run++) {
    tz_backend *be = tz_backend_create("cpu", 0, NULL);
    tz_config c = tiny(TZ_ARCH_LLAMA, 2, 1);
    tz_model *m;
    assert_int_equal(tz_model_create(be, &c, &m), 0);
    tz_model_init_weights(m, 11);
    assert_int_equal(tz_model_alloc_training(m, 2, 8), 0);
    tz_rng r;
    tz_rng_seed(&r, 1, 1);
    for (int st = 0; st < 3; st++) {
      int32_t in[16], tg[16];
      random_tokens(&r, in, 16, c.vocab_size);
      random_tokens(&r, tg, 16, c.vocab_size);
      tz_model_zero_grads(m);
      losses[run][st] = tz_model_train_micro(m, in, tg, 1.0f);
      tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, st + 1};
      tz_model_adamw(m, &hp);
    }
    params[run] = malloc(m->lay.total * sizeof(float));
    tz_model_get_params(m, params[run]);
    if (run == 1) assert_memory_equal(params[0], params[1], m->lay.total * sizeof(float));
    tz_model_free(m);
    be->destroy(be);
  }
  assert_memory_equal(losses[0], losses[1], sizeof losses[0]);
  assert_true(losses[0][2] < losses[0][0] + 1.0); /* sanity: training did not blow up */
  free(params[0]);
  free(params[1]);
}

/* be->grads_written (tz_model_zero_grads fills only the gradients no op writes whole; the
 * weight-gradient matmuls of a step's first micro-batch write) against the whole fill: two
 * optimizer steps of two accumulated micro-batches each, the classifier in chunks of 4 rows
 * (its first chunk writes lm_head's gradient, the others add), the gradient buffer poisoned
 * with NaN before every tz_model_zero_grads so that a gradient the lazy path left unwritten
 * (or added to instead of writing) shows. Gradients, losses and parameters equal bit for bit
 * (the CPU's matmul writes exactly what adding to zeros gives). */
static void check_grads_written(tz_arch arch, int tied) {
  tz_config c = tiny(arch, arch == TZ_ARCH_LLAMA ? 2 : 0, tied);
  enum { B = 2, T = 7, N = B * T };
  double loss[2][4];
  float *g[2], *p[2];
  int ranges = 0;
  size_t total = 0;
  for (int gw = 0; gw < 2; gw++) {
    tz_backend *be = tz_backend_create("cpu", 2, NULL);
    be->grads_written = gw;
    tz_model *m;
    assert_int_equal(tz_model_create(be, &c, &m), 0);
    tz_model_init_weights(m, 23);
    m->logits_rows = 4;
    assert_int_equal(tz_model_alloc_training(m, B, T), 0);
    total = m->lay.total;
    tz_rng r;
    tz_rng_seed(&r, 31, 2);
    for (int st = 0; st < 2; st++) {
      be->fill(be, (tz_slice){m->grads, 0}, NAN, total, TZ_F32);
      tz_model_zero_grads(m);
      for (int k = 0; k < 2; k++) {
        int32_t in[N], tg[N];
        random_tokens(&r, in, N, c.vocab_size);
        random_tokens(&r, tg, N, c.vocab_size);
        loss[gw][2 * st + k] = tz_model_train_micro(m, in, tg, 0.5f);
      }
      tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, st + 1};
      tz_model_adamw(m, &hp);
    }
    g[gw] = malloc(total * sizeof(float));
    p[gw] = malloc(total * sizeof(float));
    be->download(be, g[gw], (tz_slice){m->grads, 0}, total * sizeof(float));
    tz_model_get_params(m, p[gw]);
    if (gw) { /* what was filled: everything but the weight matrices (and lm_head) */
      ranges = m->n_gz_ranges;
      size_t filled = 0, C = (size_t)c.d_model, hd = C / c.n_head, F = (size_t)c.d_ff;
      size_t Q = (size_t)(c.n_head + 2 * c.n_kv_head) * hd, F2 = arch == TZ_ARCH_LLAMA ? 2 * F : F;
      for (int i = 0; i < m->n_gz_ranges; i++) filled += m->gz_ranges[2 * i + 1];
      assert_int_equal(filled, total - (size_t)c.padded_vocab * C - c.n_layer * (Q * C + C * C + F2 * C + C * F));
    }
    tz_model_free(m);
    be->destroy(be);
  }
  printf("%s%s: losses %.9g %.9g %.9g %.9g (whole fill %.9g ...), %d ranges zero-filled\n",
         arch == TZ_ARCH_GPT2 ? "gpt2" : "llama", tied ? "" : " untied", loss[1][0], loss[1][1], loss[1][2], loss[1][3],
         loss[0][0], ranges);
  for (size_t i = 0; i < total; i++) assert_false(isnan(g[1][i]));
  assert_memory_equal(loss[0], loss[1], sizeof loss[0]);
  assert_memory_equal(g[0], g[1], total * sizeof(float));
  assert_memory_equal(p[0], p[1], total * sizeof(float));
  /* a run of non-matrix tensors between each two weight matrices, one before and after */
  assert_true(ranges >= 2 && ranges <= 4 * c.n_layer + 2);
  for (int k = 0; k < 2; k++) free(g[k]), free(p[k]);
}
static void test_grads_written_gpt2(void **s) { check_grads_written(TZ_ARCH_GPT2, 1); }
static void test_grads_written_llama_untied(void **s) { check_grads_written(TZ_ARCH_LLAMA, 0); }

/* Relative rms difference of got against ref over n values (0 when both are all zero). */
static double rel_rms(const float *got, const float *ref, size_t n) {
  double d = 0, r = 0;
  for (size_t i = 0; i < n; i++) {
    d += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
    r += (double)ref[i] * ref[i];
  }
  return r > 0 ? sqrt(d / r) : (d > 0 ? INFINITY : 0.0);
}

/* One model with the classifier in chunks of `rows` (INT_MAX: whole batch): two accumulated
 * micro-batches (dscale 1/2 each), then an eval loss and the logits of the first batch.
 * Fills loss[0..2] (micro 1, micro 2, eval), the gradients g and the logits lg; returns the
 * arena's bytes. */
static size_t chunk_run(tz_backend *be, const tz_config *c, int B, int T, int rows, int recompute,
                        const int32_t *in, const int32_t *tg, double *loss, float *g, float *lg) {
  tz_model *m;
  assert_int_equal(tz_model_create(be, c, &m), 0);
  tz_model_init_weights(m, 17);
  /* larger weights than the init: logits of O(1) and gradients well above fp32 noise */
  float *p = malloc(m->lay.total * sizeof *p);
  tz_rng r;
  tz_rng_seed(&r, 77, 5);
  tz_model_get_params(m, p);
  for (size_t i = 0; i < m->lay.total; i++) p[i] += 0.2f * tz_rng_normal(&r);
  tz_model_set_params(m, p);
  free(p);
  m->recompute = recompute;
  m->logits_rows = rows;
  assert_int_equal(tz_model_alloc_training(m, B, T), 0);
  int N = B * T;
  assert_int_equal(m->train.chunk, rows < N ? rows : N);
  tz_model_zero_grads(m);
  loss[0] = tz_model_train_micro(m, in, tg, 0.5f);
  loss[1] = tz_model_train_micro(m, in + N, tg + N, 0.5f);
  be->download(be, g, (tz_slice){m->grads, 0}, m->lay.total * sizeof(float));
  loss[2] = tz_model_eval_loss(m, in, tg);
  tz_model_forward_logits(m, in, lg);
  size_t bytes = m->train.bytes;
  tz_model_free(m);
  return bytes;
}

static void check_chunks(tz_arch arch, int tied) {
  tz_backend *be = tz_backend_create("cpu", 2, NULL);
  tz_config c = tiny(arch, arch == TZ_ARCH_LLAMA ? 2 : 0, tied);
  enum { B = 3, T = 7, N = B * T };
  tz_rng r;
  tz_rng_seed(&r, 13, 6);
  int32_t in[2 * N], tg[2 * N];
  random_tokens(&r, in, 2 * N, c.vocab_size);
  random_tokens(&r, tg, 2 * N, c.vocab_size);
  tg[4] = -1, tg[N + 9] = -1; /* ignored targets, in two chunks */
  tz_model *probe;
  assert_int_equal(tz_model_create(be, &c, &probe), 0);
  size_t total = probe->lay.total;
  tz_layout lay = probe->lay;
  float *g0 = malloc(total * sizeof(float)), *g = malloc(total * sizeof(float));
  float *l0 = malloc((size_t)N * c.vocab_size * sizeof(float)), *lg = malloc((size_t)N * c.vocab_size * sizeof(float));
  const char *name = arch == TZ_ARCH_GPT2 ? "gpt2" : tied ? "llama" : "llama untied";
  for (int rc = 0; rc < 2; rc++) {
    double ref[3], got[3];
    size_t whole = chunk_run(be, &c, B, T, INT_MAX, rc, in, tg, ref, g0, l0);
    const int rows[] = {1, 4, 7, 8, N, 50};
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
      size_t bytes = chunk_run(be, &c, B, T, rows[k], rc, in, tg, got, g, lg);
      double worst_loss = 0, worst_g = 0, worst_lg = 0;
      const char *worst_t = "";
      for (int i = 0; i < 3; i++) worst_loss = fmax(worst_loss, fabs(got[i] - ref[i]) / fabs(ref[i]));
      for (int t = 0; t < lay.n; t++) {
        double e = rel_rms(g + lay.t[t].off, g0 + lay.t[t].off, lay.t[t].numel);
        if (e > worst_g) worst_g = e, worst_t = lay.t[t].name;
      }
      worst_lg = rel_rms(lg, l0, (size_t)N * c.vocab_size);
      printf("%s recompute=%d rows %2d: losses %.9g %.9g eval %.9g (whole %.9g %.9g %.9g); worst loss rel %.2g, "
             "gradient rel-rms %.2g (%s), logits rel-rms %.2g; arena %zu -> %zu bytes\n",
             name, rc, rows[k], got[0], got[1], got[2], ref[0], ref[1], ref[2], worst_loss, worst_g, worst_t, worst_lg,
             whole, bytes);
      assert_true(worst_loss <= 1e-6);
      assert_true(worst_g <= 1e-5);
      /* the eval loss and logits: nf·Wᵀ row by row, only the matmul's blocking of R rows differs */
      assert_true(fabs(got[2] - ref[2]) <= 1e-6 * fabs(ref[2]));
      assert_true(worst_lg <= 1e-6);
      if (rows[k] >= N) { /* one chunk: the whole batch's ops, bit for bit */
        assert_true(memcmp(got, ref, sizeof got) == 0);
        assert_memory_equal(g, g0, total * sizeof(float));
        assert_int_equal(bytes, whole);
      } else { /* the logits slice holds rows[k] rows of Vp fp32 (64-byte padded) */
        size_t lb = ((size_t)rows[k] * c.padded_vocab * 4 + 63) & ~(size_t)63;
        size_t wb = ((size_t)N * c.padded_vocab * 4 + 63) & ~(size_t)63;
        assert_int_equal(whole - bytes, wb - lb);
      }
    }
    /* a chunked run repeats its bits */
    double again[3];
    float *g2 = malloc(total * sizeof(float));
    chunk_run(be, &c, B, T, 8, rc, in, tg, got, g, lg);
    chunk_run(be, &c, B, T, 8, rc, in, tg, again, g2, lg);
    assert_memory_equal(got, again, sizeof got);
    assert_memory_equal(g, g2, total * sizeof(float));
    free(g2);
  }
  probe->logits_rows = -1;
  assert_int_not_equal(tz_model_alloc_training(probe, B, T), 0);
  tz_test_assert_msg_has("logits chunk: -1 rows");
  tz_model_free(probe);
  free(g0), free(g), free(l0), free(lg);
  be->destroy(be);
}
static void test_chunks_gpt2(void **s) { check_chunks(TZ_ARCH_GPT2, 1); }
static void test_chunks_llama_untied(void **s) { check_chunks(TZ_ARCH_LLAMA, 0); }

/* The automatic choice: the whole batch up to 3.5 GiB of logits, else ~1 GiB chunks. */
static void test_chunks_auto(void **s) {
  tz_backend fake = {0};
  tz_model m = {0};
  m.be = &fake;
  m.cfg.padded_vocab = 50304; /* GPT-2 */
  fake.act = TZ_BF16;
  assert_int_equal(tz_model_logits_rows(&m, 16384, 0), 16384); /* 1.65 GB: whole (the CUDA default) */
  fake.act = TZ_F32;
  assert_int_equal(tz_model_logits_rows(&m, 16384, 0), 16384); /* 3.30e9 bytes (3.07 GiB) ≤ 3.5 GiB: whole */
  assert_int_equal(tz_model_logits_rows(&m, 18672, 0), 18672); /* 3.757e9 bytes, just ≤ 3.5 GiB */
  assert_int_equal(tz_model_logits_rows(&m, 18688, 0), 4672);  /* 3.760e9 > 3.5 GiB: 4 chunks of 4672 */
  assert_int_equal(tz_model_logits_rows(&m, 20000, 0), 5056);  /* 4.02e9: 4 chunks of 5000 → 5056 */
  m.cfg.padded_vocab = 128256; /* Llama 3 */
  assert_int_equal(tz_model_logits_rows(&m, 16384, 0), 2048); /* 8.4 GB fp32: 8 chunks */
  fake.act = TZ_BF16;
  assert_int_equal(tz_model_logits_rows(&m, 16384, 0), 4096); /* 4.2 GB bf16: 4 chunks */
  assert_int_equal(tz_model_logits_rows(&m, 16384, 5), 5);
  assert_int_equal(tz_model_logits_rows(&m, 16384, INT_MAX), 16384);
  assert_int_equal(tz_model_logits_rows(&m, 100, 0), 100);
}

/* The initial weights against their one-thread definition (the loop tz_model_init_weights had
 * before it was parallel), bit for bit. */
static void check_init(tz_arch arch, int tied, int threads) {
  tz_backend *be = tz_backend_create("cpu", 0, NULL);
  tz_config c = {0};
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_kv_head = arch == TZ_ARCH_LLAMA ? 2 : 0;
  c.d_model = 256; /* wte 3072 (gpt2) × 256 = three chunks of 2^18, the llama one (3008 rows) a partial fourth */
  c.d_ff = arch == TZ_ARCH_LLAMA ? 1200 : 0;
  c.vocab_size = 3001; /* padded rows stay zero */
  c.max_seq_len = 64;
  c.tied = tied;
  assert_int_equal(tz_config_finalize(&c), 0);
  tz_model *m;
  assert_int_equal(tz_model_create(be, &c, &m), 0);
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  tz_model_init_weights(m, 1234);
  omp_set_num_threads(saved);
  const tz_layout *lay = &m->lay;
  float *got = malloc(lay->total * sizeof(float)), *want = malloc(lay->total * sizeof(float));
  assert_non_null(got);
  assert_non_null(want);
  tz_model_get_params(m, got);
  tz_rng r;
  tz_rng_seed(&r, 1234, 0x7e29a4);
  for (int i = 0; i < lay->n; i++) {
    const tz_tensor_info *t = &lay->t[i];
    int vocab = !strcmp(t->name, "wte") || !strcmp(t->name, "lm_head");
    size_t rows = vocab ? (size_t)c.vocab_size : (size_t)t->shape[0];
    for (size_t j = 0; j < t->numel; j++) {
      float v = 0.0f;
      if (j / t->shape[1] < rows) {
        if (t->init == 1) v = 1.0f;
        else if (t->init == 2) v = 0.02f * tz_rng_normal(&r);
        else if (t->init == 3) v = 0.02f / sqrtf(2.0f * c.n_layer) * tz_rng_normal(&r);
      }
      want[t->off + j] = v;
    }
  }
  assert_memory_equal(got, want, lay->total * sizeof(float));
  free(got);
  free(want);
  tz_model_free(m);
  be->destroy(be);
}
static void test_init_weights(void **s) {
  check_init(TZ_ARCH_GPT2, 1, 1);
  check_init(TZ_ARCH_GPT2, 1, 4);
  check_init(TZ_ARCH_LLAMA, 0, 4);
}

static void test_adamw_t(void **s) {
  tz_backend *be = tz_backend_create("cpu", 2, NULL);
  adamw_t_check(be);
  be->destroy(be);
}

static void test_config_errors(void **s) {
  tz_config c = {TZ_ARCH_LLAMA, 2, 5, 0, 64, 0, 100, 0, 16, 1, 0, 0};
  assert_int_not_equal(tz_config_finalize(&c), 0);
  assert_non_null(strstr(tz_last_error(), "n_head=5 does not divide d_model=64"));
  tz_config d = {TZ_ARCH_LLAMA, 2, 4, 3, 64, 0, 100, 0, 16, 1, 0, 0};
  assert_int_not_equal(tz_config_finalize(&d), 0);
  assert_non_null(strstr(tz_last_error(), "n_kv_head=3"));
  tz_config e = {TZ_ARCH_GPT2, 2, 4, 0, 64, 0, 50257, 0, 16, 0, 0, 0};
  assert_int_equal(tz_config_finalize(&e), 0);
  assert_int_equal(e.padded_vocab, 50304); /* llm.c's padding */
  assert_int_equal(e.d_ff, 256);
  assert_int_equal(e.tied, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_errors),      cmocka_unit_test(test_grads_llama_gqa),
      cmocka_unit_test(test_grads_llama_untied_mqa), cmocka_unit_test(test_grads_gpt2),
      cmocka_unit_test(test_kv_llama),           cmocka_unit_test(test_kv_gpt2),
      cmocka_unit_test(test_determinism),        cmocka_unit_test(test_adamw_t),
      cmocka_unit_test(test_recompute_llama),    cmocka_unit_test(test_recompute_gpt2),
      cmocka_unit_test(test_act_buffers_llama),  cmocka_unit_test(test_act_buffers_gpt2),
      cmocka_unit_test(test_chunks_gpt2),        cmocka_unit_test(test_chunks_llama_untied),
      cmocka_unit_test(test_chunks_auto),        cmocka_unit_test(test_init_weights),
      cmocka_unit_test(test_grads_written_gpt2), cmocka_unit_test(test_grads_written_llama_untied),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
