/* The model-level public API (include/tezgah.h, tz_lm_*): one model on one backend with its
 * tokenizer, for programs that embed libtezgah. Built from the same pieces as the CLI:
 * checkpoints (run_ckpt), KV-cache decoding, the sampler and the training step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "checkpoint/run_ckpt.h"
#include "core/error.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "tezgah.h"
#include "tokenizer/tokenizer.h"

struct tz_lm {
  tz_backend *be;
  tz_model *m;
  tz_tokenizer *tok;
  int infer_ready, train_B, train_T;
  int64_t adam_t;
  /* generation */
  tz_sampler smp;
  int have_smp, pos;
  int32_t last;
  float *logits;
};

void tz_free(void *p) { free(p); }

int tz_lm_load(const char *path, const char *backend, int threads, tz_lm **out) {
  *out = NULL;
  tz_run_file rf;
  if (tz_run_open(path, &rf)) return -1;
  tz_lm *lm = tz_calloc(1, sizeof *lm);
  if (!(lm->be = tz_backend_create(backend ? backend : "cpu", threads, NULL)) || tz_run_load_model(&rf, lm->be, &lm->m)) {
    tz_run_close(&rf);
    tz_lm_free(lm);
    return -1;
  }
  lm->tok = rf.tok;
  rf.tok = NULL;
  tz_run_close(&rf);
  lm->logits = tz_malloc((size_t)lm->m->cfg.vocab_size * sizeof *lm->logits);
  *out = lm;
  return 0;
}

void tz_lm_free(tz_lm *lm) {
  if (!lm) return;
  if (lm->have_smp) tz_sampler_free(&lm->smp);
  tz_model_free(lm->m);
  if (lm->be) lm->be->destroy(lm->be);
  tz_tok_free(lm->tok);
  free(lm->logits);
  free(lm);
}

const tz_config *tz_lm_config(const tz_lm *lm) { return &lm->m->cfg; }

int tz_lm_encode(const tz_lm *lm, const char *text, size_t len, int allow_special, int32_t **ids, size_t *n) {
  if (!lm->tok) return tz_err("the model has no tokenizer");
  if (tz_tok_kind(lm->tok) == TZ_TOKENIZER_LLAMA2C) {
    char *z = tz_malloc(len + 1);
    memcpy(z, text, len);
    z[len] = 0;
    int rc = tz_tok_encode_llama2c(lm->tok, z, 1, 0, ids, n);
    free(z);
    return rc;
  }
  return tz_tok_encode(lm->tok, text, len, allow_special, ids, n);
}

int tz_lm_decode(const tz_lm *lm, const int32_t *ids, size_t n, char **text, size_t *len) {
  if (!lm->tok) return tz_err("the model has no tokenizer");
  return tz_tok_decode(lm->tok, ids, n, text, len);
}

int tz_lm_eot(const tz_lm *lm) { return lm->tok ? tz_tok_eot(lm->tok) : -1; }

static int check_ids(const tz_lm *lm, const int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= lm->m->cfg.vocab_size)
      return tz_err("token %zu: id %d is outside the vocabulary [0, %d)", i, ids[i], lm->m->cfg.vocab_size);
  return 0;
}

static int ensure_infer(tz_lm *lm) {
  if (!lm->infer_ready && tz_model_alloc_inference(lm->m)) return -1;
  lm->infer_ready = 1;
  return 0;
}

int tz_lm_forward(tz_lm *lm, const int32_t *tokens, int n, float *logits) {
  if (n < 1 || n > lm->m->cfg.max_seq_len)
    return tz_err("forward: %d tokens (must be 1..%d, the context)", n, lm->m->cfg.max_seq_len);
  if (check_ids(lm, tokens, (size_t)n) || ensure_infer(lm)) return -1;
  /* KV-cache decoding one position at a time equals the full forward pass (tests/test_model.c) */
  for (int i = 0; i < n; i++) tz_model_decode(lm->m, tokens + i, 1, i, logits + (size_t)i * lm->m->cfg.vocab_size);
  lm->pos = 0; /* any generation in progress is over */
  return 0;
}

int tz_lm_generate_start(tz_lm *lm, const int32_t *prompt, int n, float temperature, int top_k, float top_p,
                         uint64_t seed) {
  if (n < 1 || n > lm->m->cfg.max_seq_len)
    return tz_err("generate: prompt of %d tokens (must be 1..%d)", n, lm->m->cfg.max_seq_len);
  if (!(temperature >= 0) || top_k < 0 || !(top_p > 0 && top_p <= 1))
    return tz_err("generate: temperature %g, top_k %d, top_p %g out of range", temperature, top_k, top_p);
  if (check_ids(lm, prompt, (size_t)n) || ensure_infer(lm)) return -1;
  if (lm->have_smp) tz_sampler_free(&lm->smp);
  tz_sampler_init(&lm->smp, lm->m->cfg.vocab_size, temperature, top_k, top_p, seed);
  lm->have_smp = 1;
  tz_model_decode(lm->m, prompt, n, 0, lm->logits);
  lm->pos = n;
  return 0;
}

int tz_lm_next(tz_lm *lm, int32_t *token) {
  if (!lm->have_smp || lm->pos == 0) return tz_err("generate: call tz_lm_generate_start first");
  if (lm->pos > lm->m->cfg.max_seq_len) return tz_err("generate: the context (%d tokens) is full", lm->m->cfg.max_seq_len);
  int t = tz_sampler_pick(&lm->smp, lm->logits);
  *token = t;
  if (lm->pos < lm->m->cfg.max_seq_len) tz_model_decode(lm->m, &t, 1, lm->pos, lm->logits);
  lm->pos++;
  return 0;
}

int tz_lm_train_step(tz_lm *lm, const int32_t *inputs, const int32_t *targets, int B, int T, float lr, double *loss) {
  if (B < 1 || T < 1 || T > lm->m->cfg.max_seq_len) return tz_err("train step: B=%d, T=%d (T ≤ %d)", B, T, lm->m->cfg.max_seq_len);
  if (lm->train_B && (B != lm->train_B || T != lm->train_T))
    return tz_err("train step: B=%d T=%d differ from the first step's B=%d T=%d", B, T, lm->train_B, lm->train_T);
  if (check_ids(lm, inputs, (size_t)B * T) || check_ids(lm, targets, (size_t)B * T)) return -1;
  if (!lm->train_B) {
    if (tz_model_alloc_training(lm->m, B, T)) return -1;
    lm->train_B = B, lm->train_T = T;
  }
  tz_model_zero_grads(lm->m);
  double l = tz_model_train_micro(lm->m, inputs, targets, 1.0f);
  double norm = tz_model_grad_norm(lm->m);
  if (!isfinite(l) || !isfinite(norm)) return tz_err("train step: non-finite loss %g or grad norm %g (step skipped)", l, norm);
  float clip = norm > 1.0 ? (float)(1.0 / (norm + 1e-6)) : 1.0f;
  tz_adamw_hp hp = {lr, 0.9f, 0.95f, 1e-8f, 0.1f, clip, (int)(++lm->adam_t)};
  tz_model_adamw(lm->m, &hp);
  lm->be->sync(lm->be);
  if (loss) *loss = l;
  return 0;
}

int tz_lm_save(tz_lm *lm, const char *path) { return tz_run_save(path, lm->m, lm->tok, NULL); }
