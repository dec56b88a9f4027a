/* tezgah sample: load a checkpoint, prefill the prompt into the KV cache, then decode one
 * token at a time, streaming each token's bytes to the output as soon as it is picked.
 * The sequence starts with <|endoftext|> (GPT-2's convention: it doubles as BOS).
 *
 * With a llama2.c tokenizer the loop follows llama2.c run.c's generate() instead, so that
 * its outputs are reproduced byte for byte: the prompt is encoded with BOS = 1 (and run.c's
 * dummy-prefix space), `tokens` counts ALL positions including the prompt's (run.c's
 * -n steps; 0 or more than the context means the context length), the prompt's pieces are
 * printed as they are stepped through, generation stops when BOS = 1 is picked, pieces are
 * decoded as run.c's decode() (a leading space dropped right after BOS, "<0xNN>" → that
 * byte) and printed as its safe_printf() (empty pieces and single non-printable,
 * non-space bytes skipped), and a final newline ends the output. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint/run_ckpt.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gen_defaults.h"
#include "core/utf8.h"
#include "sample/sampler.h"
#include "tezgah.h"

/* With no model: `latest` is written beside the run directory (runs/latest for the default
 * runs/<date-time>, ./latest for --run-dir myrun); of runs/latest and ./latest the one whose
 * checkpoint is newer wins. NULL when neither exists. */
static const char *default_model(void) {
  static const char *cand[2] = {"runs/latest", "latest"};
  const char *best = NULL;
  struct timespec bt = {0, 0};
  for (int i = 0; i < 2; i++) {
    char *ck = tz_path_join(cand[i], TZ_CKPT_FILE);
    struct stat st;
    if (stat(ck, &st) == 0 && (!best || st.st_mtim.tv_sec > bt.tv_sec ||
                               (st.st_mtim.tv_sec == bt.tv_sec && st.st_mtim.tv_nsec > bt.tv_nsec))) {
      best = cand[i];
      bt = st.st_mtim;
    }
    free(ck);
  }
  return best;
}

void tz_sample_opts_default(tz_sample_opts *o) {
  memset(o, 0, sizeof *o);
  o->model = NULL; /* the newest of runs/latest and ./latest */
  o->prompt = "";
  o->backend = "cpu";
  o->tokens = 256;
  o->temperature = TZ_GEN_TEMPERATURE;
  o->top_k = TZ_GEN_TOP_K;
  o->top_p = TZ_GEN_TOP_P;
  o->seed = 1337;
}

/* run.c decode(prev, token) + safe_printf(), streamed. */
static void llama2c_print_piece(FILE *out, const tz_tokenizer *t, int prev, int token) {
  const char *bytes;
  size_t len;
  if (tz_tok_decode_piece_llama2c(t, prev, token, &bytes, &len) == 0 && len) fwrite(bytes, 1, len, out);
}

/* run.c's generate() loop (see the top of this file). */
static int generate_llama2c(tz_model *m, const tz_tokenizer *tok, tz_sampler *smp, const char *prompt,
                            int steps, FILE *out) {
  int maxT = m->cfg.max_seq_len;
  if (steps <= 0 || steps > maxT) steps = maxT;
  int32_t *ids = NULL;
  size_t n = 0;
  if (tz_tok_encode_llama2c(tok, prompt, 1, 0, &ids, &n)) return -1;
  float *logits = tz_malloc((size_t)m->cfg.vocab_size * sizeof *logits);
  int pos = 0, token = ids[0];
  /* the prompt: its pieces are printed as run.c steps through them; one prefill computes the
   * logits at its last position (the only ones run.c uses) */
  int n_pre = (int)n < steps ? (int)n : steps;
  for (; pos < n_pre - 1; pos++) {
    int next = ids[pos + 1];
    if (next == 1) goto done;
    llama2c_print_piece(out, tok, token, next);
    token = next;
  }
  if ((int)n > steps) { /* the prompt alone fills the steps: run.c prints one more piece */
    int next = ids[pos + 1];
    if (next != 1) llama2c_print_piece(out, tok, token, next);
    goto done;
  }
  tz_model_decode(m, ids, (int)n, 0, logits);
  while (pos < steps) {
    int next = tz_sampler_pick(smp, logits);
    pos++;
    if (next == 1) break;
    llama2c_print_piece(out, tok, token, next);
    fflush(out);
    token = next;
    if (pos < steps) tz_model_decode(m, &token, 1, pos, logits);
  }
done:
  fputc('\n', out);
  fflush(out);
  free(logits);
  free(ids);
  return 0;
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
  if (tz_backend_check(o->backend, o->precision)) return -1; /* before reading the checkpoint */
  const char *model = o->model ? o->model : default_model();
  if (!model) return tz_err("no model given, and neither runs/latest nor ./latest holds a checkpoint (train one, or give RUN_DIR)");
  if (tz_run_open(model, &rf)) return -1;
  if (o->tokenizer) {
    tz_tok_free(rf.tok);
    rf.tok = NULL;
    if (tz_tok_load_spec(o->tokenizer, &rf.tok)) goto out;
    if (tz_tok_vocab_size(rf.tok) > rf.cfg.vocab_size) {
      tz_err("--tokenizer: %s has %d tokens but the model's vocab_size is %d", o->tokenizer,
             tz_tok_vocab_size(rf.tok), rf.cfg.vocab_size);
      goto out;
    }
  }
  if (!rf.tok) {
    tz_err("%s: checkpoint has no tokenizer; give one with --tokenizer", rf.path);
    goto out;
  }
  if (!(be = tz_backend_create(o->backend, o->threads, o->precision))) goto out;
  if (tz_run_load_model(&rf, be, &m) || tz_model_alloc_inference(m)) goto out;
  if (tz_tok_kind(rf.tok) == TZ_TOKENIZER_LLAMA2C) {
    tz_sampler_init(&smp, m->cfg.vocab_size, o->temperature, o->top_k, o->top_p, o->seed);
    rc = generate_llama2c(m, rf.tok, &smp, prompt, o->tokens, out);
    goto out;
  }
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
    if (n >= (size_t)maxT) {
      /* Context full: keep the most recent half and prefill it again at positions 0.. (a
       * sliding window; the model never sees more than max_seq_len tokens). */
      size_t keep = (size_t)maxT / 2;
      memmove(ids, ids + n - keep, keep * sizeof *ids);
      n = keep;
      ids[n++] = next;
      tz_model_decode(m, ids, (int)n, 0, logits);
      continue;
    }
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
