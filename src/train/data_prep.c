#define _GNU_SOURCE /* memmem */
#include "train/data_prep.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "core/stop.h"
#include "core/utf8.h"
#include "data/shard.h"

#define PREP_VERSION 2
#define VAL_BLOCK 4096 /* tokens per held-out block */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A text corpus must not contain NUL bytes (images, archives and executables have them
 * early) and must be mostly UTF-8 (more than 5% invalid bytes means it is not text). */
int tz_corpus_check_text(const char *path, const char *data, size_t len) {
  if (len == 0) return tz_err("%s: file is empty", path);
  const char *nul = memchr(data, 0, len);
  if (nul) return tz_err("%s: looks binary (NUL byte at offset %zu); expected UTF-8 text", path, (size_t)(nul - data));
  /* Text in another encoding (Latin-1, say) still trains; random bytes do not make sense. */
  size_t probe = len < (1 << 20) ? len : (1 << 20);
  size_t bad = tz_utf8_count_invalid((const unsigned char *)data, probe);
  if (bad * 20 > probe)
    return tz_err("%s: looks binary (%zu of the first %zu bytes are not UTF-8); expected UTF-8 text", path, bad, probe);
  return 0;
}

/* The corpus list (comma-separated files / globs) read and checked file by file, then joined
 * in order with <|endoftext|> between files (unless one is already there). One file gives
 * its bytes unchanged (the cache key of a single-file corpus is that file's). */
static int read_corpus(const char *list, char **text, size_t *len) {
  char **paths;
  size_t np;
  if (tz_expand_paths(list, &paths, &np)) return -1;
  static const char SEP[] = "<|endoftext|>";
  const size_t sl = sizeof SEP - 1;
  char *all = NULL;
  size_t n = 0;
  int rc = 0;
  for (size_t i = 0; i < np && !rc; i++) {
    char *t;
    size_t l;
    if (tz_read_file(paths[i], &t, &l)) {
      rc = -1;
      break;
    }
    if (tz_corpus_check_text(paths[i], t, l)) {
      free(t);
      rc = -1;
      break;
    }
    if (np == 1) {
      all = t;
      n = l;
      break;
    }
    int sep = n > 0 && !(n >= sl && !memcmp(all + n - sl, SEP, sl)) && !(l >= sl && !memcmp(t, SEP, sl));
    all = tz_realloc(all, n + (sep ? sl : 0) + l + 1);
    if (sep) memcpy(all + n, SEP, sl), n += sl;
    memcpy(all + n, t, l);
    n += l;
    all[n] = 0;
    free(t);
  }
  tz_paths_free(paths, np);
  if (rc) {
    free(all);
    return -1;
  }
  *text = all;
  *len = n;
  return 0;
}

int tz_prep_corpus_xxh64(const char *list, uint64_t *hash) {
  char *text;
  size_t len;
  if (read_corpus(list, &text, &len)) return -1;
  *hash = XXH64(text, len, 0);
  free(text);
  return 0;
}

int tz_prep_file_xxh64(const char *path, uint64_t *hash, uint64_t *bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) return tz_err("%s: %s", path, strerror(errno));
  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, 0);
  enum { CHUNK = 1 << 20 };
  char *buf = tz_malloc(CHUNK);
  uint64_t n = 0;
  size_t got;
  while ((got = fread(buf, 1, CHUNK, f)) > 0) {
    XXH64_update(h, buf, got);
    n += got;
  }
  int bad = ferror(f);
  fclose(f);
  free(buf);
  *hash = XXH64_digest(h);
  *bytes = n;
  XXH64_freeState(h);
  return bad ? tz_err("%s: read error", path) : 0;
}

/* Encode a corpus with a given tokenizer as `tezgah tokenize` does: byte-level BPE with
 * <|endoftext|> as a special token; llama2.c per document (split at <|endoftext|>): BOS + run.c
 * encode, as llama2.c's pretokenizer. */
static int encode_with(const tz_tokenizer *tok, const char *corpus, char *text, size_t len, int32_t **ids,
                       size_t *n) {
  *ids = NULL;
  *n = 0;
  if (tz_tok_kind(tok) == TZ_TOKENIZER_LLMC)
    return tz_err("%s: the model's tokenizer (llm.c gpt2_tokenizer.bin) can only decode; give --tokenizer gpt2 or "
                  "token shards (--train-shards)", corpus);
  if (tz_tok_kind(tok) != TZ_TOKENIZER_LLAMA2C) return tz_tok_encode(tok, text, len, 1, ids, n);
  size_t cap = 0, p = 0;
  for (;;) {
    if (tz_stop_check()) return -1; /* Ctrl-C: between documents (core/stop.h) */
    char *hit = memmem(text + p, len - p, "<|endoftext|>", 13);
    size_t e = hit ? (size_t)(hit - text) : len;
    if (e > p) {
      char save = text[e];
      text[e] = 0;
      int32_t *d;
      size_t nd;
      int rc = tz_tok_encode_llama2c(tok, text + p, 1, 0, &d, &nd);
      text[e] = save;
      if (rc) return -1;
      if (*n + nd > cap) *ids = tz_realloc(*ids, (cap = (*n + nd) * 2) * sizeof **ids);
      memcpy(*ids + *n, d, nd * sizeof *d);
      *n += nd;
      free(d);
    }
    if (!hit) return 0;
    p = e + 13;
  }
}

/* k of "every k-th block held out": 1/val_fraction rounded */
static size_t val_every(float val_fraction) { return (size_t)(1.0 / val_fraction + 0.5); }

/* The train / validation split of n tokens: every k-th block of VAL_BLOCK tokens held out (k =
 * val_every), so that the validation split samples the whole corpus, not only its end (a corpus
 * in reading order changes style from start to end); a corpus too small for one block per k
 * holds out floor(n * val_fraction) tokens of its tail. With ids, the tokens are copied into tr
 * and va (n each); without, only counted (tz_prep_val_tokens): one rule for both. */
static void val_split(const int32_t *ids, size_t n, float val_fraction, int32_t *tr, int32_t *va, size_t *n_train,
                      size_t *n_val) {
  size_t every = val_every(val_fraction);
  *n_train = *n_val = 0;
  if (n >= every * VAL_BLOCK) {
    for (size_t b = 0; b * VAL_BLOCK < n; b++) {
      size_t len = n - b * VAL_BLOCK < VAL_BLOCK ? n - b * VAL_BLOCK : VAL_BLOCK;
      int held = b % every == every - 1;
      if (ids) memcpy(held ? va + *n_val : tr + *n_train, ids + b * VAL_BLOCK, len * sizeof *ids);
      *(held ? n_val : n_train) += len;
    }
  } else {
    *n_val = (size_t)(n * (double)val_fraction);
    *n_train = n - *n_val;
    if (ids) {
      memcpy(tr, ids, *n_train * sizeof *ids);
      memcpy(va, ids + *n_train, *n_val * sizeof *ids);
    }
  }
}

size_t tz_prep_val_tokens(size_t n, float val_fraction) {
  size_t n_train, n_val;
  val_split(NULL, n, val_fraction, NULL, NULL, &n_train, &n_val);
  return n_val;
}

float tz_prep_val_fraction_for(size_t n, size_t need) {
  for (int k = 1; k <= 50; k++) { /* 0.01 .. 0.5: --val-fraction's range, as a user types it */
    float f = (float)(k / 100.0);
    size_t v = tz_prep_val_tokens(n, f);
    if (v >= need && n - v >= need) return f;
  }
  return 0;
}

int tz_prepare_corpus(const char *corpus, int vocab_size, float val_fraction,
                      const char *cache_root, int quiet, const char *tok_backend, tz_prepared *out) {
  return tz_prepare_corpus_tok(corpus, NULL, vocab_size, val_fraction, 0, 0, cache_root, quiet, tok_backend, out);
}

/* What the splits of a corpus of len bytes cannot hold whatever the BPE learns (byte-level: at
 * most one token per byte; the split as below), refused before the slow work (BPE training,
 * encoding): a validation split under 2 tokens even at one token per byte (< 40 bytes at
 * --val-fraction 0.05; the check after encoding still refuses a corpus whose merges leave too
 * few tokens, with the count), and with B, T > 0 a batch (B*T+1 tokens) that either split
 * cannot hold. n_val is floor(n * val_fraction) for a corpus under every * VAL_BLOCK tokens,
 * else at most (n + VAL_BLOCK) / every, with n <= len. */
static int check_batch_fits(const char *corpus, size_t len, float val_fraction, int B, int T) {
  if ((size_t)(len * (double)val_fraction) < 2) {
    size_t least = (size_t)ceil(2.0 / val_fraction); /* the fewest bytes that pass, exactly as tested */
    while ((size_t)(least * (double)val_fraction) < 2) least++;
    while (least > 1 && (size_t)((least - 1) * (double)val_fraction) >= 2) least--;
    return tz_err("%s: too small to hold out a validation split: %zu byte%s (at most as many tokens; --val-fraction %g "
                  "needs %zu bytes or more)", corpus, len, tz_plural((long long)len), val_fraction, least);
  }
  if (B <= 0 || T <= 0) return 0; /* no batch to check */
  size_t need = (size_t)B * (size_t)T + 1, every = val_every(val_fraction);
  if (need > len)
    return tz_err("%s: %zu byte%s %s at most %zu token%s, fewer than one batch (B*T+1 = %d*%d+1 = %zu tokens); lower "
                  "-B or -T", corpus, len, tz_plural((long long)len), len == 1 ? "is" : "are", len,
                  tz_plural((long long)len), B, T, need);
  size_t val_max = (size_t)(len * (double)val_fraction);
  if (len >= every * VAL_BLOCK && (len + VAL_BLOCK) / every > val_max) val_max = (len + VAL_BLOCK) / every;
  if (need > val_max)
    return tz_err("%s: %zu bytes hold out at most %zu validation tokens (--val-fraction %g), fewer than one batch "
                  "(B*T+1 = %d*%d+1 = %zu tokens); lower -B or -T, or raise --val-fraction", corpus, len, val_max,
                  val_fraction, B, T, need);
  return 0;
}

int tz_prepare_corpus_tok(const char *corpus, const tz_tokenizer *given, int vocab_size, float val_fraction, int B,
                          int T, const char *cache_root, int quiet, const char *tok_backend, tz_prepared *out) {
  memset(out, 0, sizeof *out);
  char *blob = NULL;
  size_t blob_len = 0;
  if (given) {
    if (tz_tok_to_blob(given, &blob, &blob_len)) return -1;
    vocab_size = tz_tok_vocab_size(given);
  } else if (vocab_size < TZ_PREP_VOCAB_MIN || vocab_size > TZ_PREP_VOCAB_MAX) /* as train's option says it */
    return tz_err("--vocab-size: %d is out of range [%d, %d] (%s)", vocab_size, TZ_PREP_VOCAB_MIN, TZ_PREP_VOCAB_MAX,
                  TZ_PREP_VOCAB_WHY);
  if (!(val_fraction >= (float)TZ_VAL_FRACTION_MIN && val_fraction <= (float)TZ_VAL_FRACTION_MAX))
    return tz_err("--val-fraction: %g is out of range [%g, %g]", val_fraction, TZ_VAL_FRACTION_MIN,
                  TZ_VAL_FRACTION_MAX); /* as tz_arg_float words it for the option */
  char *text = NULL;
  size_t len;
  if (read_corpus(corpus, &text, &len) ||
      ((!given || tz_tok_kind(given) == TZ_TOKENIZER_BPE) && check_batch_fits(corpus, len, val_fraction, B, T))) {
    free(text);
    free(blob);
    return -1;
  }
  out->corpus_xxh64 = XXH64(text, len, 0); /* as tz_prep_corpus_xxh64 gives it: the run records it */
  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, PREP_VERSION);
  XXH64_update(h, text, len);
  int32_t params[2] = {vocab_size, (int32_t)(val_fraction * 1e6f)};
  XXH64_update(h, params, sizeof params);
  if (blob) XXH64_update(h, blob, blob_len); /* a given tokenizer: its bytes are part of the key */
  uint64_t key = XXH64_digest(h);
  XXH64_freeState(h);
  char sub[64];
  snprintf(sub, sizeof sub, "%016" PRIx64 "-%s%d", key, given ? "t" : "v", vocab_size);
  char *dir = tz_path_join(cache_root, sub);
  out->train_path = tz_path_join(dir, "train.bin");
  out->val_path = tz_path_join(dir, "val.bin");
  /* a given tokenizer is stored in its native format (tz_tok_to_blob; tz_tok_load detects it) */
  out->tokenizer_path = tz_path_join(dir, given ? "tokenizer" : "tokenizer.json");
  int rc = -1;
  char *made = NULL; /* the shallowest cache directory this call created */
  tz_tokenizer *tok = NULL;
  int32_t *ids = NULL;
  size_t n = 0;
  if (tz_exists(out->train_path) && tz_exists(out->val_path) && tz_exists(out->tokenizer_path)) {
    size_t a, b;
    if (!tz_shard_read_header(out->train_path, &a) && !tz_shard_read_header(out->val_path, &b)) {
      out->n_train = a;
      out->n_val = b;
      if (!quiet) fprintf(stderr, "data: using cached tokens in %s (%zu train, %zu val)\n", dir, a, b);
      rc = 0;
      goto done;
    }
  }
  if (tz_mkdirs_track(dir, &made)) goto done;
  tz_afile_sweep(dir); /* shards of an earlier, killed preparation */
  double t0 = now_s();
  if (given) {
    if (!quiet) fprintf(stderr, "data: encoding %s (%.1f MB) with the model's %d-token tokenizer...\n", corpus, len / 1e6, vocab_size);
  } else {
    if (!quiet) fprintf(stderr, "data: training a %d-token BPE tokenizer on %s (%.1f MB)...\n", vocab_size, corpus, len / 1e6);
    if (tz_tok_train_on(tok_backend, text, len, vocab_size, &tok)) {
      tz_err_prefix(corpus);
      goto done;
    }
  }
  double t1 = now_s();
  /* a stop request (Ctrl-C) between the stages too: the GPU's stages do not poll for one */
  if (tz_stop_check() ||
      (given ? encode_with(given, corpus, text, len, &ids, &n) : tz_tok_encode_on(tok_backend, tok, text, len, 1, &ids, &n)) ||
      tz_stop_check())
    goto done;
  double t2 = now_s();
  if (n < 4 || (size_t)(n * (double)val_fraction) < 2) {
    /* what helps: a share that holds 2 tokens when one below the limit does, else more text */
    char vf[80] = "";
    float f = n >= 4 ? tz_prep_val_fraction_for(n, 2) : 0;
    if (f > 0) snprintf(vf, sizeof vf, "raise --val-fraction (%g holds 2) or ", f);
    tz_err("%s: too small to hold out a validation split (%zu token%s; --val-fraction %g holds %zu, 2 are needed): "
           "%sgive more text", corpus, n, tz_plural((long long)n), val_fraction, (size_t)(n * (double)val_fraction), vf);
    goto done;
  }
  /* the split (val_split: every k-th block held out, or the tail of a small corpus) */
  int32_t *tr = tz_malloc(n * sizeof *tr), *va = tz_malloc(n * sizeof *va);
  size_t n_train, n_val;
  val_split(ids, n, val_fraction, tr, va, &n_train, &n_val);
  /* The tokenizer is written last: its presence marks a complete cache entry. */
  int wrc = tz_shard_write(out->train_path, tr, n_train) || tz_shard_write(out->val_path, va, n_val) ||
            (given ? tz_write_file_atomic(out->tokenizer_path, blob, blob_len) : tz_tok_save(tok, out->tokenizer_path));
  free(tr);
  free(va);
  if (wrc) goto done;
  out->n_train = n_train;
  out->n_val = n_val;
  if (!quiet)
    fprintf(stderr, "data: tokenizer %.1f s, encoding %.1f s (%.2f bytes/token): %zu train + %zu val tokens in %s\n",
            t1 - t0, t2 - t1, (double)len / n, n_train, n_val, dir);
  /* "training a 400-token BPE" above; a small corpus may run out of pairs first */
  if (!quiet && !given && tz_tok_vocab_size(tok) < vocab_size)
    fprintf(stderr, "data: the tokenizer has %d tokens, not %d: the corpus has no more pairs to merge\n",
            tz_tok_vocab_size(tok), vocab_size);
  rc = 0;
done:
  if (rc) tz_rmdirs_upto(dir, made); /* no empty cache directories left by a failed preparation */
  free(made);
  free(blob);
  free(ids);
  tz_tok_free(tok);
  free(text);
  free(dir);
  if (rc) tz_prepared_free(out);
  return rc;
}

void tz_prepared_free(tz_prepared *p) {
  free(p->train_path);
  free(p->val_path);
  free(p->tokenizer_path);
  memset(p, 0, sizeof *p);
}
