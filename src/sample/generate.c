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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "checkpoint/run_ckpt.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gen_defaults.h"
#include "core/progress.h"
#include "core/utf8.h"
#include "sample/sampler.h"
#include "tezgah.h"

/* --batch's bound (the decoding arena also needs batch ≤ max_seq_len). */
#define TZ_SAMPLE_MAX_BATCH 1024

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

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds since the epoch (--stats' teardown line: a wall clock around the process can tell the
 * time before the sample command started and after it returned: exec, libraries, exit). */
static double epoch_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* K of the device loop (generate_rows): TEZGAH_DECODE_CHUNK=K (0 or 1: off, one step at a
 * time as before), default 32 steps per round trip. */
static int decode_chunk(void) {
  const char *e = getenv("TEZGAH_DECODE_CHUNK");
  if (!e || !*e) return 32;
  int k = atoi(e);
  return k < 0 ? 0 : k > 1024 ? 1024 : k;
}

/* A slice `bytes` further into the same buffer. */
static tz_slice slice_at(tz_slice s, size_t bytes) { return (tz_slice){s.buf, s.off + bytes}; }

/* One generated row's output: batch 1 streams to `out` as tokens are picked; a batch keeps
 * each row's bytes (an open_memstream) and prints them when every row is done. Either way the
 * bytes go through a tz_utf8_stream: only whole UTF-8 characters are printed (a token that ends
 * inside a character is held until the next completes it; one still unfinished at the end is
 * dropped; bytes that are no character print as U+FFFD), so that a sample cut mid-character
 * (a tiny corpus, no <|endoftext|>) is still valid text. */
typedef struct {
  FILE *f;
  char *buf;
  size_t len;
  tz_utf8_stream u;
} row_text;

/* The loop for B rows of one prompt (ids[0..n0), EOT-first as above), row b sampled with
 * seed + b: prefill every row, then pick and step all rows together (tz_sampler_pick_rows,
 * tz_model_step: one recorded step on the GPU). A row ends at <|endoftext|> (unless
 * ignore_eot) or after `tokens`; past the context a row keeps its most recent half and is
 * prefilled again (the sliding window of the one-row loop). */
/* How many ids the sampler picks among: the model's vocab_size, or the tokenizer's count where it
 * has fewer (the ids past it have no text: tz_sample's note) */
static int sampled_ids(const tz_model *m, const tz_tokenizer *tok) {
  int V = m->cfg.vocab_size, tv = tz_tok_vocab_size(tok);
  return tv < V ? tv : V;
}

static int generate_rows(tz_model *m, const tz_tokenizer *tok, const tz_sample_opts *o, char **prompt,
                         int32_t **prompt_ids, const size_t *n0, int B, FILE *out, const double *t_mark) {
  int maxT = m->cfg.max_seq_len, eot = tz_tok_eot(tok), V = m->cfg.vocab_size;
  int Vs = sampled_ids(m, tok);
  tz_sampler *smp = tz_calloc((size_t)B, sizeof *smp);
  int32_t *hist = tz_malloc((size_t)B * (maxT + 1) * sizeof *hist), *next = tz_malloc((size_t)B * sizeof *next),
          *pos = tz_malloc((size_t)B * sizeof *pos);
  size_t *n = tz_malloc((size_t)B * sizeof *n);
  int *done = tz_calloc((size_t)B, sizeof *done);
  row_text *rt = tz_calloc((size_t)B, sizeof *rt);
  float *logits = tz_malloc((size_t)V * sizeof *logits);
  for (int b = 0; b < B; b++) {
    tz_sampler_init(&smp[b], Vs, o->temperature, o->top_k, o->top_p, o->seed + (uint64_t)b);
    memcpy(hist + (size_t)b * (maxT + 1), prompt_ids[b], n0[b] * sizeof *hist);
    n[b] = n0[b];
    rt[b].f = B == 1 ? out : open_memstream(&rt[b].buf, &rt[b].len);
    if (!rt[b].f) tz_fatal("sample: out of memory for a row's text");
    tz_utf8_stream_write(&rt[b].u, prompt[b], strlen(prompt[b]), rt[b].f); /* valid UTF-8 (checked) */
  }
  if (B == 1) fflush(out);
  tz_backend *be = m->be;
  double t_loaded = now_s();
  /* prefill. Every row a one-token prompt (an empty --prompt: <|endoftext|>) on a backend with the
   * fused step: one batched step at position 0 instead of B one-row forwards (each ~62 kernels
   * launched one by one: ~10 ms at B = 16 on the H200, 2026-12-03). The same ops a decoding step
   * runs (the first, unrecorded use of the step; rows computed as in every later step).
   * TEZGAH_PREFILL_ROWS=1: row by row as before (an A/B). */
  const char *pr = getenv("TEZGAH_PREFILL_ROWS");
  int one_step = B > 1 && tz_model_step_fused(m) && !(pr && *pr && strcmp(pr, "0") != 0);
  for (int b = 0; b < B && one_step; b++) one_step = n0[b] == 1;
  if (one_step) {
    int32_t *t0 = tz_malloc((size_t)B * sizeof *t0), *p0 = tz_calloc((size_t)B, sizeof *p0);
    for (int b = 0; b < B; b++) t0[b] = hist[(size_t)b * (maxT + 1)];
    be->upload(be, m->infer.tokens, t0, (size_t)B * sizeof *t0);
    tz_model_step(m, p0, B);
    free(t0), free(p0);
  } else
    for (int b = 0; b < B; b++) tz_model_feed_row(m, b, hist + (size_t)b * (maxT + 1), (int)n0[b], 0);
  be->sync(be);
  double t_prefilled = now_s();
  /* TEZGAH_PROFILE's table is per decoding step: the weight upload and the prefill left out
   * (until 2026-12-02 they were in it: the "upload" row, 0.34 ms/step over 199 steps, was the
   * 0.067 s weight upload of the load) */
  if (be->profile_reset) be->profile_reset(be);
  long produced = 0, steps = 0;
  int alive = B;
  /* The device loop: K picks and steps queued at once (pick_dev writes each step's ids on the
   * device where the next step's embedding reads them; positions and draws uploaded once per
   * K), then the K·B ids come back in one download. Rows are told apart from here as in the
   * one-step loop below; a row that ends inside a chunk is stepped on to its end unseen (rows
   * do not interact). K stops before the last token and before any row fills the context
   * (those go through the one-step loop). */
  int kmax = decode_chunk();
  tz_buf *cb = NULL;
  int32_t *h_pos = NULL, *h_ids = NULL;
  double *h_r = NULL;
  tz_rng *saved = NULL;
  if (kmax >= 2 && be->pick_dev && tz_model_step_fused(m)) {
    size_t kb = (size_t)kmax * B;
    cb = be->alloc(be, kb * (sizeof(double) + 2 * sizeof(int32_t)), "decoding chunk");
    h_pos = tz_malloc(kb * sizeof *h_pos);
    h_ids = tz_malloc(kb * sizeof *h_ids);
    h_r = tz_malloc(kb * sizeof *h_r);
    saved = tz_malloc((size_t)B * sizeof *saved);
  }
  tz_slice c_r = {cb, 0}, c_pos = {cb, (size_t)kmax * B * sizeof(double)},
           c_ids = {cb, (size_t)kmax * B * (sizeof(double) + sizeof(int32_t))};
  for (int i = 0; i < o->tokens && alive; i++) {
    int K = 0;
    if (cb) {
      int maxn = 0;
      for (int b = 0; b < B; b++)
        if (!done[b] && (int)n[b] > maxn) maxn = (int)n[b];
      K = kmax;
      if (K > o->tokens - i - 1) K = o->tokens - i - 1;
      if (K > maxT - maxn) K = maxT - maxn;
    }
    if (K >= 2) {
      const float temp = smp[0].temperature;
      for (int k = 0; k < K; k++)
        for (int b = 0; b < B; b++)
          h_pos[(size_t)k * B + b] = (int32_t)(done[b] ? (n[b] < (size_t)maxT ? n[b] : (size_t)maxT - 1) : n[b] + k);
      for (int b = 0; b < B; b++) saved[b] = smp[b].rng;
      if (temp > 0) /* the draws the one-step loop would take: per step, one per row */
        for (int k = 0; k < K; k++)
          for (int b = 0; b < B; b++) h_r[(size_t)k * B + b] = tz_rng_uniform(&smp[b].rng);
      if (temp > 0) be->upload(be, c_r, h_r, (size_t)K * B * sizeof *h_r);
      be->upload(be, c_pos, h_pos, (size_t)K * B * sizeof *h_pos);
      int queued = 1;
      for (int k = 0; k < K && queued; k++) {
        tz_slice rk = temp > 0 ? slice_at(c_r, (size_t)k * B * sizeof(double)) : TZ_NONE;
        queued = be->pick_dev(be, m->infer.tokens, m->infer.logits, B, Vs, m->cfg.padded_vocab, temp, smp[0].top_k,
                              smp[0].top_p, rk, slice_at(c_ids, (size_t)k * B * sizeof(int32_t)));
        if (queued) tz_model_step_dev(m, slice_at(c_pos, (size_t)k * B * sizeof(int32_t)), B);
      }
      if (!queued) { /* settings pick_dev does not take (only ever at the first k): one step at a time */
        for (int b = 0; b < B; b++) smp[b].rng = saved[b];
        be->free(be, cb);
        cb = NULL;
        i--;
        continue;
      }
      be->download(be, h_ids, c_ids, (size_t)K * B * sizeof *h_ids);
      steps += K;
      for (int k = 0; k < K && alive; k++)
        for (int b = 0; b < B; b++) {
          if (done[b]) continue;
          int id = h_ids[(size_t)k * B + b];
          if (id == eot && !o->ignore_eot) {
            done[b] = 1;
            alive--;
            continue;
          }
          const char *bytes;
          size_t len;
          if (tz_tok_token_bytes(tok, id, &bytes, &len) == 0) tz_utf8_stream_write(&rt[b].u, bytes, len, rt[b].f);
          produced++;
          hist[(size_t)b * (maxT + 1) + n[b]] = id;
          n[b]++;
        }
      if (B == 1) fflush(out);
      i += K - 1;
      continue;
    }
    tz_sampler_pick_rows(smp, m, B, next, logits);
    int window = 0;
    for (int b = 0; b < B; b++) {
      if (done[b]) continue;
      if (next[b] == eot && !o->ignore_eot) {
        done[b] = 1;
        alive--;
        continue;
      }
      const char *bytes;
      size_t len;
      if (tz_tok_token_bytes(tok, next[b], &bytes, &len) == 0) {
        tz_utf8_stream_write(&rt[b].u, bytes, len, rt[b].f);
        if (B == 1) fflush(out);
      }
      produced++;
      if (n[b] >= (size_t)maxT) window = 1;
    }
    if (!alive || i + 1 == o->tokens) break; /* no step after the last token */
    steps++;
    if (window) { /* a row's context is full: every live row through the one-row path */
      for (int b = 0; b < B; b++) {
        if (done[b]) continue;
        int32_t *h = hist + (size_t)b * (maxT + 1);
        if (n[b] >= (size_t)maxT) { /* keep the most recent half, prefill it again at 0.. */
          size_t keep = (size_t)maxT / 2;
          memmove(h, h + n[b] - keep, keep * sizeof *h);
          n[b] = keep;
          h[n[b]++] = next[b];
          tz_model_feed_row(m, b, h, (int)n[b], 0);
        } else {
          h[n[b]] = next[b];
          tz_model_feed_row(m, b, h + n[b], 1, (int)n[b]);
          n[b]++;
        }
      }
      continue;
    }
    for (int b = 0; b < B; b++) {
      if (done[b]) { /* still stepped (the step is shared); its cache row is rewritten, unused */
        pos[b] = (int32_t)(n[b] < (size_t)maxT ? n[b] : (size_t)maxT - 1);
        continue;
      }
      hist[(size_t)b * (maxT + 1) + n[b]] = next[b];
      pos[b] = (int32_t)n[b]++;
    }
    tz_model_step(m, pos, B);
  }
  double t_end = now_s();
  int chunked = cb != NULL;
  if (cb) be->free(be, cb);
  free(h_pos);
  free(h_ids);
  free(h_r);
  free(saved);
  for (int b = 0; b < B; b++) tz_utf8_stream_end(&rt[b].u);
  if (B == 1) {
    /* the newline ends printed text; where nothing was printed (--tokens 0 or <|endoftext|> first,
     * no prompt) it would be a stray empty line */
    if (rt[0].u.written) fputc('\n', out);
    fflush(out);
  } else {
    for (int b = 0; b < B; b++) {
      fclose(rt[b].f);
      fprintf(out, "--- sample %d of %d (seed %llu) ---\n", b + 1, B, (unsigned long long)(o->seed + (uint64_t)b));
      fwrite(rt[b].buf, 1, rt[b].len, out);
      fputc('\n', out);
      free(rt[b].buf);
    }
    fflush(out);
  }
  if (o->stats) {
    double dec = t_end - t_prefilled;
    fprintf(stderr,
            "sample: %s %s, %d row(s), %zu prompt tokens (row 1): load %.3f s (checkpoint and backend %.3f, "
            "weights %.3f), prefill %.3f s, %ld tokens in %ld steps %.3f s (%.1f tokens/s, %.3f ms/step), %s steps%s\n",
            be->name, tz_dtype_name(be->act), B, n0[0], t_loaded - t_mark[0], t_mark[1] - t_mark[0],
            t_mark[3] - t_mark[2], t_prefilled - t_loaded, produced, steps, dec,
            dec > 0 ? produced / dec : 0.0, steps ? 1e3 * dec / steps : 0.0,
            tz_model_step_fused(m) ? "fused" : "row-by-row", chunked ? ", device loop" : "");
    if (be->profile_print) be->profile_print(be, steps > 0 ? (double)steps : 1.0);
  }
  for (int b = 0; b < B; b++) tz_sampler_free(&smp[b]);
  free(smp);
  free(hist);
  free(next);
  free(pos);
  free(n);
  free(done);
  free(rt);
  free(logits);
  return 0;
}

/* --prompts FILE: one prompt per line (a final newline ends the last line; "\r\n" is read as a
 * line end), each valid UTF-8; the batch is the number of prompts (--batch, if given, must
 * agree). Blank lines (empty, or blanks alone) are skipped, not rows: a blank line between
 * prompts, or one left at the end, is layout rather than a prompt, and a file of blank lines
 * alone sampled that many rows of empty prompts without a word (the session-37 walkthrough);
 * it is refused, as an empty file is. An empty prompt is --prompt '' (--batch N for N rows).
 * *data: the file with its line ends replaced by NULs; *rows: B pointers into it; *lines: the
 * line number (1-based) of each row, for the lines that name one. */
static int read_prompts(const tz_sample_opts *o, char **data, char ***rows, int **lines, int *B) {
  size_t len;
  if (tz_read_file(o->prompts_file, data, &len)) { /* name the option before the file's error */
    char why[512];
    snprintf(why, sizeof why, "%s", tz_errmsg());
    return tz_err("--prompts: %s", why);
  }
  char *d = *data;
  int n_lines = 0;
  for (size_t i = 0; i < len; i++) n_lines += d[i] == '\n';
  if (len && d[len - 1] != '\n') n_lines++;
  char **r = tz_calloc((size_t)n_lines + 1, sizeof *r);
  int *ln = tz_calloc((size_t)n_lines + 1, sizeof *ln);
  int n = 0, rc = 0;
  size_t start = 0;
  for (int k = 0; k < n_lines && !rc; k++) {
    size_t e = start;
    while (e < len && d[e] != '\n') e++;
    if (e < len) d[e] = 0;
    if (e > start && d[e - 1] == '\r') d[e - 1] = 0;
    char *line = d + start;
    long bad = tz_utf8_invalid_at((const unsigned char *)line, strlen(line));
    if (bad >= 0)
      rc = tz_err("--prompts: %s: line %d: invalid UTF-8 at byte %ld of the line (0-based)", o->prompts_file, k + 1,
                  bad);
    else if (strlen(line) != (e > start && !d[e - 1] ? e - start - 1 : e - start))
      rc = tz_err("--prompts: %s: line %d holds a NUL byte", o->prompts_file, k + 1);
    else if (line[strspn(line, " \t\r\v\f")]) /* not blank: a row */
      r[n] = line, ln[n++] = k + 1;
    start = e + 1;
  }
  if (!rc && n == 0) {
    char what[64] = "it is empty";
    if (n_lines == 1) snprintf(what, sizeof what, "its only line is blank");
    else if (n_lines) snprintf(what, sizeof what, "its %d lines are blank", n_lines);
    rc = tz_err("--prompts: %s holds no prompt: %s (one prompt per line; blank lines are skipped)", o->prompts_file,
                what);
  } else if (!rc && n > TZ_SAMPLE_MAX_BATCH) {
    rc = tz_err("--prompts: %s holds %d prompts, more than the %d rows a batch takes", o->prompts_file, n,
                TZ_SAMPLE_MAX_BATCH);
  } else if (!rc && o->batch > 0 && o->batch != n) {
    char skipped[64] = "";
    if (n_lines > n)
      snprintf(skipped, sizeof skipped, "; its %d blank line%s skipped", n_lines - n, tz_plural(n_lines - n));
    rc = tz_err("--batch: %d, but %s holds %d prompts (one row each%s)", o->batch, o->prompts_file, n, skipped);
  } else if (!rc && o->prompt && *o->prompt) {
    rc = tz_err("--prompt and --prompts: give one of them");
  }
  if (rc) {
    free(r);
    free(ln);
    free(d);
    *data = NULL;
    return -1;
  }
  *rows = r;
  *lines = ln;
  *B = n;
  return 0;
}

static int exits_after; /* tz_sample_process_exits_after */
void tz_sample_process_exits_after(int yes) { exits_after = yes; }

#define TZ_ERR_MAX_COPY 1024
/* tz_run_open on a thread, then the --tokenizer file when one is given (tz_err is thread-local:
 * the message is copied out; tok_rc says which of the two failed). */
typedef struct {
  const char *model, *tok_spec;
  tz_tokenizer *tok; /* --tokenizer's, when given and read */
  int tok_rc;
  tz_run_file rf;
  int rc;
  double t_done; /* now_s() when the checkpoint was read and verified */
  char err[TZ_ERR_MAX_COPY];
} open_job;
static void *open_thread(void *p) {
  open_job *j = p;
  j->rc = tz_run_open(j->model, &j->rf);
  if (!j->rc && j->tok_spec && (j->tok_rc = tz_tok_load_spec(j->tok_spec, &j->tok)) != 0)
    snprintf(j->err, sizeof j->err, "%s", tz_errmsg());
  j->t_done = now_s();
  if (j->rc) snprintf(j->err, sizeof j->err, "%s", tz_errmsg());
  return NULL;
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
  if (o->batch < 0 || o->batch > TZ_SAMPLE_MAX_BATCH) return tz_err("--batch: %d must be in 1..%d", o->batch, TZ_SAMPLE_MAX_BATCH);
  int B = o->batch > 0 ? o->batch : 1;
  char *pf_data = NULL, **rows_prompt = NULL; /* --prompts: the file, cut into lines in place */
  int *rows_line = NULL;                        /* and each row's line number */
  if (o->prompts_file && read_prompts(o, &pf_data, &rows_prompt, &rows_line, &B)) return -1;
  double t_mark[4] = {now_s(), 0, 0, 0}; /* start, checkpoint and backend ready, (same), model on it */
  const double epoch_start = epoch_s();
  const char *prompt = o->prompt ? o->prompt : "";
  long bad = tz_utf8_invalid_at((const unsigned char *)prompt, strlen(prompt));
  const char *model = o->model ? o->model : default_model();
  if (bad >= 0) tz_err("--prompt: invalid UTF-8 at byte %ld (0-based)", bad);
  else if (tz_backend_check(o->backend, o->precision)) { /* before reading the checkpoint */
  } else if (!model)
    tz_err("no model given, and neither runs/latest nor ./latest holds a checkpoint (train one, or give RUN_DIR)");
  if (bad >= 0 || !model || tz_backend_check(o->backend, o->precision)) {
    free(rows_prompt);
    free(rows_line);
    free(pf_data);
    return -1;
  }
  /* A prompt of P bytes is at most P + 2 tokens (byte-level BPE: a token is ≥ 1 byte; + EOT or
   * BOS and the llama2.c dummy space); a step has B rows: when both are few, CUDA need not
   * preload cuBLASLt (a sliding window past the context loads it). */
  size_t pmax = strlen(prompt);
  for (int b = 0; rows_prompt && b < B; b++)
    if (strlen(rows_prompt[b]) > pmax) pmax = strlen(rows_prompt[b]);
  tz_backend_hint_matmul_rows(pmax + 2 > (size_t)B ? (int)(pmax + 2 < 1 << 20 ? pmax + 2 : 1 << 20) : B);
  /* the backend's environment before the thread below starts: that thread reads the environment
   * (the tokenizer's TEZGAH_GPT2_DIR) while the backend is created, and setenv there would race */
  tz_backend_env(o->backend, o->precision);
  /* The checkpoint is read and verified (checksums over every section) on a thread while the
   * backend starts (CUDA: driver, context, cuBLASLt: a few hundred ms each, side by side). */
  open_job job = {model, o->tokenizer, NULL, 0, {0}, 0, 0, {0}};
  pthread_t th;
  int threaded = pthread_create(&th, NULL, open_thread, &job) == 0;
  if (!threaded) open_thread(&job);
  tz_backend_hint_weights_read_only(1); /* sampling never writes or reads back the weights */
  be = tz_backend_create(o->backend, o->threads, o->precision);
  tz_backend_hint_weights_read_only(0);
  tz_backend_hint_matmul_rows(-1);
  double t_be = now_s();
  char be_err[TZ_ERR_MAX_COPY];
  snprintf(be_err, sizeof be_err, "%s", be ? "" : tz_errmsg());
  if (threaded) pthread_join(th, NULL);
  double t_joined = now_s();
  rf = job.rf;
  if (job.rc) {
    if (be) be->destroy(be);
    free(rows_prompt);
    free(rows_line);
    free(pf_data);
    return tz_err("%s", job.err);
  }
  if (o->tokenizer && !job.tok_rc) { /* read on the thread: it replaces the checkpoint's */
    tz_tok_free(rf.tok);
    rf.tok = job.tok;
  }
  if (!be) {
    tz_err("%s", be_err);
    goto out;
  }
  if (o->tokenizer) {
    if (job.tok_rc) {
      tz_err("%s", job.err);
      goto out;
    }
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
  /* Every id the sampler picks must have text. It picks among the model's vocab_size ids (the
   * padded rows up to padded_vocab, GPT-2's 50257 -> 50304, never), or among the tokenizer's
   * where it has fewer: a model whose vocabulary was padded past its tokenizer (Hugging Face
   * exports at 50304 or 32001 rows, a shard run given --vocab-size 50304) then samples the ids
   * that have text, and the rows past them are left out like padding, with a note (before: they
   * were sampled and printed nothing). */
  int tok_v = tz_tok_vocab_size(rf.tok), V = rf.cfg.vocab_size;
  if (tok_v < V) {
    if (o->tokenizer)
      fprintf(stderr, "sample: note: --tokenizer %s has %d tokens, the model's vocab_size is %d: ids %d..%d have no "
                      "text and are not sampled\n", o->tokenizer, tok_v, V, tok_v, V - 1);
    else
      fprintf(stderr, "sample: note: %s: its tokenizer has %d tokens, the model's vocab_size is %d: ids %d..%d have "
                      "no text and are not sampled\n", rf.path, tok_v, V, tok_v, V - 1);
  }
  if (rows_prompt) prompt = rows_prompt[0];
  if (tz_tok_kind(rf.tok) == TZ_TOKENIZER_LLAMA2C && B > 1) {
    tz_err("%s: %d rows are not offered with a llama2.c tokenizer (run.c's loop is one sequence)",
           o->prompts_file ? "--prompts" : "--batch", B);
    goto out;
  }
  t_mark[1] = t_mark[2] = now_s(); /* checkpoint and backend: together */
  if (tz_run_load_model(&rf, be, &m)) goto out;
  double t_model = now_s();
  if (B > m->cfg.max_seq_len) {
    tz_err("--batch: %d rows exceed the model's context max_seq_len=%d (the decoding arena holds that many rows)", B,
           m->cfg.max_seq_len);
    goto out;
  }
  if (tz_model_alloc_inference_rows(m, B)) goto out;
  double t_rows = now_s();
  be->sync(be);
  tz_run_release_params_async(&rf); /* the weights are on the backend: unmapped beside the decoding */
  t_mark[3] = now_s();
  const char *vb = getenv("TEZGAH_VERBOSE");
  if (vb && *vb && strcmp(vb, "0") != 0) /* the start-up's phases (device_cuda_decode5.sh) */
    fprintf(stderr,
            "sample: start-up %.1f ms: backend %.1f ms; checkpoint read+verified on a thread %.1f ms (waited for "
            "%.1f more); tokenizer %.1f ms; model made + weights queued %.1f ms; decoding buffers %.1f ms; sync %.1f "
            "ms\n",
            1e3 * (t_mark[3] - t_mark[0]), 1e3 * (t_be - t_mark[0]), 1e3 * (job.t_done - t_mark[0]),
            1e3 * (t_joined - t_be), 1e3 * (t_mark[1] - t_joined), 1e3 * (t_model - t_mark[1]),
            1e3 * (t_rows - t_model), 1e3 * (t_mark[3] - t_rows));
  if (tz_tok_kind(rf.tok) == TZ_TOKENIZER_LLAMA2C) {
    tz_sampler_init(&smp, sampled_ids(m, rf.tok), o->temperature, o->top_k, o->top_p, o->seed);
    rc = generate_llama2c(m, rf.tok, &smp, prompt, o->tokens, out);
    goto out;
  }
  {
    int maxT = m->cfg.max_seq_len, eot = tz_tok_eot(rf.tok);
    char **rp = rows_prompt ? rows_prompt : tz_calloc((size_t)B, sizeof *rp);
    int32_t **rid = tz_calloc((size_t)B, sizeof *rid);
    size_t *rn = tz_calloc((size_t)B, sizeof *rn);
    for (int b = 0; b < B && rc == -1; b++) {
      if (!rows_prompt) rp[b] = (char *)prompt;
      size_t n_prompt = 0;
      int32_t *pids = NULL;
      if (*rp[b] && tz_tok_encode(rf.tok, rp[b], strlen(rp[b]), 0, &pids, &n_prompt)) {
        rc = -2;
        break;
      }
      /* A prompt longer than the context keeps its last max_seq_len tokens, the window the model
       * can see (the end-of-text token that starts a sequence is the first to go), with one
       * warning line saying how many were dropped (it was refused: the session-37 walkthrough).
       * The whole prompt is still printed, and the text continues its end; any backend. */
      size_t skip = 0; /* prompt tokens dropped from the front */
      int with_eot = eot >= 0;
      if (n_prompt + (size_t)with_eot > (size_t)maxT) {
        skip = n_prompt > (size_t)maxT ? n_prompt - (size_t)maxT : 0;
        char where[TZ_ERR_MAX_COPY];
        if (rows_prompt) snprintf(where, sizeof where, "--prompts: %s: line %d", o->prompts_file, rows_line[b]);
        else snprintf(where, sizeof where, "--prompt");
        const char *plus = with_eot ? " and the end-of-text token that starts the sequence" : "";
        if (rows_prompt || b == 0) { /* one line for --prompt, however many rows repeat it */
          if (!skip)
            fprintf(stderr,
                    "tezgah: warning: %s: %zu tokens%s exceed the model's context max_seq_len=%d: the end-of-text "
                    "token is dropped, the prompt kept whole\n",
                    where, n_prompt, plus, maxT);
          else
            fprintf(stderr,
                    "tezgah: warning: %s: %zu tokens%s exceed the model's context max_seq_len=%d: the prompt's last "
                    "%d tokens are kept, its first %zu%s dropped\n",
                    where, n_prompt, plus, maxT, maxT, skip, with_eot ? " and the end-of-text token" : "");
        }
        with_eot = 0;
      }
      rid[b] = tz_malloc((size_t)(maxT + 1) * sizeof **rid);
      size_t n = 0;
      if (with_eot) rid[b][n++] = eot;
      if (n_prompt > skip) memcpy(rid[b] + n, pids + skip, (n_prompt - skip) * sizeof **rid);
      n += n_prompt - skip;
      free(pids);
      if (n == 0) rid[b][n++] = 0; /* no EOT in this vocabulary and an empty prompt: start from token 0 */
      rn[b] = n;
    }
    if (rc == -1) rc = generate_rows(m, rf.tok, o, rp, rid, rn, B, out, t_mark);
    else rc = -1;
    for (int b = 0; b < B; b++) free(rid[b]);
    free(rid);
    free(rn);
    if (!rows_prompt) free(rp);
  }
  goto out;
out:
  tz_sampler_free(&smp);
  free(logits);
  free(ids);
  free(rows_prompt);
  free(rows_line);
  free(pf_data);
  double t_free = now_s();
  /* leave them to the process's end (see tz_sample_process_exits_after): the output is
   * flushed, the GPU idle after the last download */
  int left = rc == 0 && exits_after && be && !strcmp(be->name, "cuda");
  if (left) be->sync(be);
  else {
    tz_model_free(m);
    if (be) be->destroy(be);
    tz_run_close(&rf);
  }
  if (o->stats && rc == 0)
    fprintf(stderr, "sample: teardown %.3f s (model, backend, checkpoint %s); epoch %.6f .. %.6f s\n",
            now_s() - t_free, left ? "left to the process exit" : "freed", epoch_start, epoch_s());
  return rc;
}
