/* tezgah sample: load a checkpoint, prefill the prompt into the KV cache, then decode one
 * token at a time, streaming each token's bytes to the output as soon as it is picked.
 * The sequence starts with <|endoftext|> (GPT-2's convention: it doubles as BOS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/run_ckpt.h"
#include "core/error.h"
#include "core/utf8.h"
#include "sample/sampler.h"
#include "tezgah.h"

void tz_sample_opts_default(tz_sample_opts *o) {
  memset(o, 0, sizeof *o);
  o->model = "runs/latest";
  o->prompt = "";
  o->backend = "cpu";
  o->tokens = 256;
  o->temperature = 0.8f;
  o->top_k = 40;
  o->top_p = 1.0f;
  o->seed = 1337;
}

int tz_sample(const tz_sample_opts *o, void *out_file) {
  FILE *out = out_file;
  tz_run_file rf;
  tz_backend *be = NULL;
  tz_model *m = NULL;
  int32_t *ids = NULL;
  float *logits = NULL;
  tz_sampler smp = {0};
  int rc = -1;
  if (o->tokens < 0) return tz_err("--tokens: %d must be ≥ 0", o->tokens);
  if (!(o->temperature >= 0) || o->temperature > 100) return tz_err("--temperature: %g must be in [0, 100]", o->temperature);
  if (o->top_k < 0) return tz_err("--top-k: %d must be ≥ 0", o->top_k);
  if (!(o->top_p > 0 && o->top_p <= 1)) return tz_err("--top-p: %g must be in (0, 1]", o->top_p);
  const char *prompt = o->prompt ? o->prompt : "";
  long bad = tz_utf8_invalid_at((const unsigned char *)prompt, strlen(prompt));
  if (bad >= 0) return tz_err("--prompt: invalid UTF-8 at byte %ld", bad);
  if (tz_run_open(o->model, &rf)) return -1;
  if (!rf.tok) {
    tz_err("%s: checkpoint has no tokenizer; cannot turn text into tokens", rf.path);
    goto out;
  }
  if (!(be = tz_backend_create(o->backend, o->threads))) goto out;
  if (tz_run_load_model(&rf, be, &m) || tz_model_alloc_inference(m)) goto out;
  size_t n_prompt = 0;
  int32_t *pids = NULL;
  if (*prompt && tz_tok_encode(rf.tok, prompt, strlen(prompt), 0, &pids, &n_prompt)) goto out;
  int maxT = m->cfg.max_seq_len, eot = tz_tok_eot(rf.tok);
  size_t n0 = n_prompt + (eot >= 0);
  if (n0 > (size_t)maxT) {
    free(pids);
    tz_err("--prompt: %zu tokens exceed the model's context max_seq_len=%d", n_prompt, maxT);
    goto out;
  }
  ids = tz_malloc((size_t)(maxT + 1) * sizeof *ids);
  size_t n = 0;
  if (eot >= 0) ids[n++] = eot;
  if (n_prompt) memcpy(ids + n, pids, n_prompt * sizeof *ids);
  n += n_prompt;
  free(pids);
  if (n == 0) { /* no EOT in this vocabulary and an empty prompt: start from token 0 */
    ids[n++] = 0;
  }
  fputs(prompt, out);
  fflush(out);
  logits = tz_malloc((size_t)m->cfg.vocab_size * sizeof *logits);
  tz_sampler_init(&smp, m->cfg.vocab_size, o->temperature, o->top_k, o->top_p, o->seed);
  tz_model_decode(m, ids, (int)n, 0, logits); /* prefill */
  for (int i = 0; i < o->tokens; i++) {
    int next = tz_sampler_pick(&smp, logits);
    if (next == eot) break;
    const char *bytes;
    size_t len;
    if (tz_tok_token_bytes(rf.tok, next, &bytes, &len) == 0) {
      fwrite(bytes, 1, len, out);
      fflush(out);
    }
    if (n >= (size_t)maxT) break; /* context full */
    ids[n] = next;
    tz_model_decode(m, ids + n, 1, (int)n, logits);
    n++;
  }
  fputc('\n', out);
  fflush(out);
  rc = 0;
out:
  tz_sampler_free(&smp);
  free(logits);
  free(ids);
  tz_model_free(m);
  if (be) be->destroy(be);
  tz_run_close(&rf);
  return rc;
}
