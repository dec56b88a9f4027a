/* Tokenizer compatibility and robustness: GPT-2 (tiktoken r50k_base vectors), llm.c
 * gpt2_tokenizer.bin, llama2.c tokenizer.bin (against a literal transcription of run.c's
 * encode), parallel encode == serial encode, malformed files, huge / empty / NUL inputs. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static tz_tokenizer *g_gpt2, *g_l2, *g_llmc;

static int setup(void **state) {
  char *d = tz_test_shared("gpt2"), *l = tz_test_shared("llama2c/tok512.bin"),
       *m = tz_test_shared("llmc/gpt2_tokenizer.bin");
  int rc = tz_tok_load(d, &g_gpt2) || tz_tok_load(l, &g_l2) || tz_tok_load(m, &g_llmc);
  if (rc) fprintf(stderr, "load: %s\n", tz_errmsg());
  free(d);
  free(l);
  free(m);
  return rc ? -1 : 0;
}

static int teardown(void **state) {
  tz_tok_free(g_gpt2);
  tz_tok_free(g_l2);
  tz_tok_free(g_llmc);
  return 0;
}

static cJSON *load_json(const char *rel) {
  char *p = tz_test_shared(rel), *s;
  size_t n;
  assert_int_equal(tz_read_file(p, &s, &n), 0);
  cJSON *j = cJSON_ParseWithLength(s, n);
  assert_non_null(j);
  free(s);
  free(p);
  return j;
}

static void expect_ids(const int32_t *ids, size_t n, const cJSON *want) {
  assert_int_equal(n, cJSON_GetArraySize(want));
  for (size_t i = 0; i < n; i++)
    if (ids[i] != cJSON_GetArrayItem(want, (int)i)->valueint)
      fail_msg("id %zu: got %d, want %d", i, ids[i], cJSON_GetArrayItem(want, (int)i)->valueint);
}

static void test_gpt2_vectors(void **state) {
  assert_int_equal(tz_tok_kind(g_gpt2), TZ_TOKENIZER_BPE);
  assert_int_equal(tz_tok_vocab_size(g_gpt2), 50257);
  assert_int_equal(tz_tok_eot(g_gpt2), 50256);
  cJSON *v = load_json("gpt2/vectors.json"), *it;
  int n = 0;
  cJSON_ArrayForEach(it, v) {
    const char *hex = cJSON_GetObjectItem(it, "utf8_hex")->valuestring;
    size_t nb = strlen(hex) / 2;
    char *txt = malloc(nb + 1);
    for (size_t i = 0; i < nb; i++) sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&txt[i]);
    int32_t *ids;
    size_t ni;
    assert_int_equal(tz_tok_encode(g_gpt2, txt, nb, 0, &ids, &ni), 0);
    expect_ids(ids, ni, cJSON_GetObjectItem(it, "ids"));
    char *back;
    size_t bl;
    assert_int_equal(tz_tok_decode(g_gpt2, ids, ni, &back, &bl), 0);
    assert_int_equal(bl, nb);
    if (nb) assert_memory_equal(back, txt, nb);
    free(back);
    free(ids);
    free(txt);
    n++;
  }
  cJSON_Delete(v);
  /* tiny shakespeare prefix, tiktoken r50k_base */
  v = load_json("gpt2/vectors_shakespeare.json");
  char *p = tz_test_shared("data/tinyshakespeare.txt"), *s;
  size_t sl;
  assert_int_equal(tz_read_file(p, &s, &sl), 0);
  size_t nb = (size_t)cJSON_GetObjectItem(v, "num_bytes")->valuedouble;
  assert_true(nb <= sl);
  int32_t *ids;
  size_t ni;
  assert_int_equal(tz_tok_encode(g_gpt2, s, nb, 1, &ids, &ni), 0);
  expect_ids(ids, ni, cJSON_GetObjectItem(v, "ids"));
  print_message("gpt2: %d vectors + %zu shakespeare tokens match tiktoken\n", n, ni);
  free(ids);
  free(s);
  free(p);
  cJSON_Delete(v);
}

static void test_llmc(void **state) {
  assert_int_equal(tz_tok_kind(g_llmc), TZ_TOKENIZER_LLMC);
  assert_int_equal(tz_tok_vocab_size(g_llmc), 50257);
  assert_int_equal(tz_tok_eot(g_llmc), 50256);
  for (int32_t id = 0; id < 50257; id++) { /* same bytes as GPT-2's files */
    const char *a, *b;
    size_t la, lb;
    assert_int_equal(tz_tok_token_bytes(g_gpt2, id, &a, &la), 0);
    assert_int_equal(tz_tok_token_bytes(g_llmc, id, &b, &lb), 0);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
  }
  int32_t *ids;
  size_t n;
  assert_int_not_equal(tz_tok_encode(g_llmc, "hi", 2, 0, &ids, &n), 0);
  assert_non_null(strstr(tz_errmsg(), "decode"));
}

/* ---- llama2.c: run.c's encode(), transcribed literally (O(n^2) merge loop) ---- */
typedef struct {
  char **vocab;
  float *scores;
  int V, maxlen;
} ref_tok;

static ref_tok ref_load(const char *path) {
  ref_tok r = {0};
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fread(&r.maxlen, 4, 1, f), 1);
  int cap = 0;
  float sc;
  while (fread(&sc, 4, 1, f) == 1) {
    int len;
    assert_int_equal(fread(&len, 4, 1, f), 1);
    if (r.V == cap) {
      cap = cap ? cap * 2 : 512;
      r.vocab = realloc(r.vocab, cap * sizeof *r.vocab);
      r.scores = realloc(r.scores, cap * sizeof *r.scores);
    }
    r.vocab[r.V] = malloc(len + 1);
    assert_int_equal(fread(r.vocab[r.V], 1, len, f), (size_t)len);
    r.vocab[r.V][len] = 0;
    r.scores[r.V++] = sc;
  }
  fclose(f);
  return r;
}

static int ref_str_lookup(const ref_tok *t, const char *s) {
  for (int i = 0; i < t->V; i++)
    if (strcmp(t->vocab[i], s) == 0) return i; /* run.c: bsearch; pieces are unique here */
  return -1;
}

static void ref_encode(const ref_tok *t, const char *text, int bos, int eos, int *tokens, int *n_tokens) {
  char *str_buffer = malloc((t->maxlen * 2 + 1 + 2) * sizeof(char));
  size_t str_len = 0;
  *n_tokens = 0;
  if (bos) tokens[(*n_tokens)++] = 1;
  if (text[0] != '\0') tokens[(*n_tokens)++] = ref_str_lookup(t, " ");
  for (const char *c = text; *c != '\0'; c++) {
    if ((*c & 0xC0) != 0x80) str_len = 0;
    str_buffer[str_len++] = *c;
    str_buffer[str_len] = '\0';
    if ((*(c + 1) & 0xC0) == 0x80 && str_len < 4) continue;
    int id = ref_str_lookup(t, str_buffer);
    if (id != -1) {
      tokens[(*n_tokens)++] = id;
    } else {
      for (size_t i = 0; i < str_len; i++) tokens[(*n_tokens)++] = (unsigned char)str_buffer[i] + 3;
    }
    str_len = 0;
  }
  while (1) {
    float best_score = -1e10;
    int best_id = -1, best_idx = -1;
    for (int i = 0; i < (*n_tokens - 1); i++) {
      sprintf(str_buffer, "%s%s", t->vocab[tokens[i]], t->vocab[tokens[i + 1]]);
      int id = ref_str_lookup(t, str_buffer);
      if (id != -1 && t->scores[id] > best_score) {
        best_score = t->scores[id];
        best_id = id;
        best_idx = i;
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    for (int i = best_idx + 1; i < (*n_tokens - 1); i++) tokens[i] = tokens[i + 1];
    (*n_tokens)--;
  }
  if (eos) tokens[(*n_tokens)++] = 2;
  free(str_buffer);
}

static void test_llama2c_encode(void **state) {
  assert_int_equal(tz_tok_kind(g_l2), TZ_TOKENIZER_LLAMA2C);
  assert_int_equal(tz_tok_vocab_size(g_l2), 512);
  char *p = tz_test_shared("llama2c/tok512.bin");
  ref_tok r = ref_load(p);
  free(p);
  assert_int_equal(r.V, 512);
  tz_rng rng;
  tz_rng_seed(&rng, 11, 0);
  static const char *frags[] = {"Once", " upon", " a", " time", "Lily", "\n", "é", "日本", "\xf0\x9f\x98\x80",
                                "\xff", "\x80", "\xc3", ",", "'s", "  ", "1", "the", "<0x41>"};
  char buf[400];
  int ref[1000];
  for (int iter = 0; iter < 400; iter++) {
    size_t o = 0, n = tz_rng_below(&rng, 60);
    for (size_t k = 0; k < n; k++) {
      const char *f = frags[tz_rng_below(&rng, sizeof frags / sizeof *frags)];
      if (tz_rng_below(&rng, 3) == 0) {
        buf[o++] = (char)(1 + tz_rng_below(&rng, 255)); /* random non-NUL byte */
      } else {
        memcpy(buf + o, f, strlen(f));
        o += strlen(f);
      }
    }
    buf[o] = 0;
    int bos = iter & 1, eos = (iter >> 1) & 1, nref;
    ref_encode(&r, buf, bos, eos, ref, &nref);
    int32_t *ids;
    size_t ni;
    assert_int_equal(tz_tok_encode_llama2c(g_l2, buf, bos, eos, &ids, &ni), 0);
    assert_int_equal(ni, nref);
    for (size_t i = 0; i < ni; i++) assert_int_equal(ids[i], ref[i]);
    free(ids);
  }
  /* empty text: no dummy prefix */
  int32_t *ids;
  size_t ni;
  assert_int_equal(tz_tok_encode_llama2c(g_l2, "", 1, 0, &ids, &ni), 0);
  assert_int_equal(ni, 1);
  assert_int_equal(ids[0], 1);
  free(ids);
  assert_int_equal(tz_tok_encode_llama2c(g_l2, "", 0, 0, &ids, &ni), 0);
  assert_int_equal(ni, 0);
  free(ids);
  /* run.c's prompt "Once upon a time": BOS, " " merged in; streaming decode drops the space
   * after BOS, so the stream reproduces the prompt exactly */
  assert_int_equal(tz_tok_encode_llama2c(g_l2, "Once upon a time", 1, 0, &ids, &ni), 0);
  assert_int_equal(ids[0], 1);
  char out[256];
  size_t ol = 0;
  for (size_t i = 1; i < ni; i++) {
    const char *b;
    size_t l;
    assert_int_equal(tz_tok_decode_piece_llama2c(g_l2, ids[i - 1], ids[i], &b, &l), 0);
    memcpy(out + ol, b, l);
    ol += l;
  }
  out[ol] = 0;
  assert_string_equal(out, "Once upon a time");
  char *dec;
  size_t dl;
  assert_int_equal(tz_tok_decode(g_l2, ids, ni, &dec, &dl), 0);
  assert_string_equal(dec, "Once upon a time");
  free(dec);
  free(ids);
  /* byte pieces: raw byte; safe_printf drops a lone unprintable byte, keeps '\n' */
  const char *b;
  size_t l;
  assert_int_equal(tz_tok_decode_piece_llama2c(g_l2, 5, 3 + 'A', &b, &l), 0);
  assert_int_equal(l, 1);
  assert_int_equal(b[0], 'A');
  assert_int_equal(tz_tok_decode_piece_llama2c(g_l2, 5, 3 + '\n', &b, &l), 0);
  assert_int_equal(l, 1);
  assert_int_equal(tz_tok_decode_piece_llama2c(g_l2, 5, 3 + 0x07, &b, &l), 0);
  assert_int_equal(l, 0);
  assert_int_equal(tz_tok_decode_piece_llama2c(g_l2, 5, 3 + 0xE2, &b, &l), 0);
  assert_int_equal(l, 0);
  /* full decode keeps every byte: "é" as two byte pieces */
  int32_t e2[] = {3 + 0xC3, 3 + 0xA9};
  assert_int_equal(tz_tok_decode(g_l2, e2, 2, &dec, &dl), 0);
  assert_string_equal(dec, "é");
  free(dec);
  assert_int_not_equal(tz_tok_decode_piece_llama2c(g_gpt2, 1, 5, &b, &l), 0);
  for (int i = 0; i < r.V; i++) free(r.vocab[i]);
  free(r.vocab);
  free(r.scores);
}

static void test_out_of_range_all_kinds(void **state) {
  tz_tokenizer *trained;
  const char *txt = "hello hello world";
  assert_int_equal(tz_tok_train(txt, strlen(txt), 260, &trained), 0);
  tz_tokenizer *all[] = {g_gpt2, g_l2, g_llmc, trained};
  for (int k = 0; k < 4; k++) {
    int V = tz_tok_vocab_size(all[k]);
    int32_t bad[] = {0, V};
    char *s;
    size_t n;
    assert_int_not_equal(tz_tok_decode(all[k], bad, 2, &s, &n), 0);
    assert_non_null(strstr(tz_errmsg(), "out of range"));
    int32_t neg[] = {-5};
    assert_int_not_equal(tz_tok_decode(all[k], neg, 1, &s, &n), 0);
    const char *b;
    size_t l;
    assert_int_not_equal(tz_tok_token_bytes(all[k], V, &b, &l), 0);
  }
  const char *b;
  size_t l;
  assert_int_not_equal(tz_tok_decode_piece_llama2c(g_l2, 1, 512, &b, &l), 0);
  assert_int_not_equal(tz_tok_decode_piece_llama2c(g_l2, 1, -1, &b, &l), 0);
  tz_tok_free(trained);
}

/* ---- parallel encode == serial encode ---- */
static void same_all_threads(const tz_tokenizer *t, const char *s, size_t n, const char *what) {
  for (int sp = 0; sp < 2; sp++) {
    omp_set_num_threads(1);
    int32_t *ref;
    size_t nref;
    assert_int_equal(tz_tok_encode(t, s, n, sp, &ref, &nref), 0);
    for (int th = 2; th <= 4; th++) {
      omp_set_num_threads(th);
      int32_t *ids;
      size_t ni;
      assert_int_equal(tz_tok_encode(t, s, n, sp, &ids, &ni), 0);
      if (ni != nref || memcmp(ids, ref, ni * sizeof *ids)) fail_msg("%s: %d threads differ from serial", what, th);
      free(ids);
    }
    if (!sp) print_message("%s: %zu bytes -> %zu tokens, identical with 1..4 threads\n", what, n, nref);
    free(ref);
  }
  omp_set_num_threads(omp_get_num_procs());
}

static void test_parallel_identity(void **state) {
  char *p = tz_test_shared("data/tinyshakespeare.txt"), *s;
  size_t n;
  assert_int_equal(tz_read_file(p, &s, &n), 0);
  same_all_threads(g_gpt2, s, n, "gpt2 tiny shakespeare");
  free(s);
  free(p);
  /* KJV (when the bible-kjv package is installed) */
  char *dir = tz_test_tmpdir("tok_parallel"), cmd[2048];
  snprintf(cmd, sizeof cmd, "bash '%s/scripts/prepare_kjv.sh' '%s/kjv.txt' >/dev/null 2>&1", TZ_SOURCE_DIR, dir);
  char *kp = tz_path_join(dir, "kjv.txt");
  if (tz_test_sh(cmd) == 0 && tz_read_file(kp, &s, &n) == 0) {
    same_all_threads(g_gpt2, s, n, "gpt2 KJV");
    free(s);
  } else {
    print_message("KJV: bible-kjv not installed; using the synthetic text only\n");
  }
  free(kp);
  free(dir);
  /* adversarial: every kind of neighbourhood around newlines (unicode spaces, CR, runs of
   * blank lines, contractions, invalid UTF-8, EOT literals), 1.5 MB so that it is cut into
   * many chunks */
  static const char *frags[] = {"\n", "\n\n", " \n", "\r\n", "\xc2\xa0", "\xc2\x85", "\xe2\x80\xa8", "a", "Z",
                                "'s", "'", " the", "  ", "\t", "12", ".", "\xff", "\xc3", "é", "<|endoftext|>",
                                "\n'll", "x\ny", "\n ", "\x00", "\xe3\x80\x80"};
  tz_rng rng;
  tz_rng_seed(&rng, 5, 0);
  size_t cap = 1500000, o = 0;
  char *a = malloc(cap + 32);
  while (o < cap) {
    const char *f = frags[tz_rng_below(&rng, sizeof frags / sizeof *frags)];
    size_t fl = f[0] ? strlen(f) : 1;
    memcpy(a + o, f, fl);
    o += fl;
  }
  same_all_threads(g_gpt2, a, o, "gpt2 adversarial");
  tz_tokenizer *small;
  assert_int_equal(tz_tok_train(a, 200000, 400, &small), 0);
  same_all_threads(small, a, o, "trained-400 adversarial");
  tz_tok_free(small);
  free(a);
}

/* ---- robustness ---- */
static void roundtrip(const tz_tokenizer *t, const char *s, size_t n) {
  int32_t *ids;
  size_t ni;
  assert_int_equal(tz_tok_encode(t, s, n, 0, &ids, &ni), 0);
  char *back;
  size_t bl;
  assert_int_equal(tz_tok_decode(t, ids, ni, &back, &bl), 0);
  assert_int_equal(bl, n);
  if (n) assert_memory_equal(back, s, n);
  free(back);
  free(ids);
}

static void test_robust_inputs(void **state) {
  /* empty */
  int32_t *ids;
  size_t ni;
  assert_int_equal(tz_tok_encode(g_gpt2, "", 0, 1, &ids, &ni), 0);
  assert_int_equal(ni, 0);
  free(ids);
  char *s;
  size_t sl;
  assert_int_equal(tz_tok_decode(g_gpt2, NULL, 0, &s, &sl), 0);
  assert_int_equal(sl, 0);
  assert_string_equal(s, "");
  free(s);
  /* NUL bytes */
  static const char nuls[] = "a\0b\0\0 c\0\n\0";
  roundtrip(g_gpt2, nuls, sizeof nuls - 1);
  roundtrip(g_gpt2, "\0\0\0\0", 4);
  /* a 2 MB single word: one pre-token far past the pre-token cache's limit (256 bytes) and
   * the JIT-less pre-tokenizer's first window, through the heap BPE of bpe_piece. A quadratic
   * step would take hours here; the linear path takes a few CPU seconds (10 MB took 45 CPU s,
   * a fifth of them in the kernel: not worth a test's time for the same code path). */
  size_t n = 2u << 20;
  char *w = malloc(n);
  tz_rng rng;
  tz_rng_seed(&rng, 9, 0);
  for (size_t i = 0; i < n; i++) w[i] = "abcdefghijklmnopqrstuvwxyz"[tz_rng_below(&rng, 26)];
  /* CPU time of this process (every thread), not wall time: a loaded machine (ctest -j, a
   * shared CI host) stretches the wall clock, not the work; the bound only tells linear from
   * quadratic. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  roundtrip(g_gpt2, w, n);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  print_message("2 MB single word: encode + decode %.2f CPU s\n", dt);
  assert_true(dt < 30);
  free(w);
}

/* ---- malformed files ---- */
static void write_file(const char *dir, const char *name, const void *d, size_t n) {
  char *p = tz_path_join(dir, name);
  assert_int_equal(tz_write_file_atomic(p, d, n), 0);
  free(p);
}

static void expect_fail(const char *path, const char *needle) {
  tz_tokenizer *t = (tz_tokenizer *)1;
  if (tz_tok_load(path, &t) == 0) fail_msg("%s: loaded without error", path);
  assert_null(t);
  const char *m = tz_errmsg();
  assert_null(strchr(m, '\n'));
  if (needle && !strstr(m, needle)) fail_msg("%s: error lacks \"%s\": %s", path, needle, m);
  print_message("  -> %s\n", m);
}

static void gpt2_case(const char *dir, const char *name, const char *enc, size_t el, const char *bpe, size_t bl,
                      const char *needle) {
  char *d = tz_path_join(dir, name);
  assert_int_equal(tz_mkdirs(d), 0);
  write_file(d, "encoder.json", enc, el);
  write_file(d, "vocab.bpe", bpe, bl);
  expect_fail(d, needle);
  free(d);
}

static void test_malformed_loaders(void **state) {
  char *dir = tz_test_tmpdir("tok_compat_malformed");
  char *ep = tz_test_shared("gpt2/encoder.json"), *bp = tz_test_shared("gpt2/vocab.bpe");
  char *enc, *bpe;
  size_t el, bl;
  assert_int_equal(tz_read_file(ep, &enc, &el), 0);
  assert_int_equal(tz_read_file(bp, &bpe, &bl), 0);
  /* GPT-2 directory */
  gpt2_case(dir, "g_badjson", enc, el / 2, bpe, bl, "JSON");
  gpt2_case(dir, "g_notobj", "[1,2]", 5, bpe, bl, "object");
  gpt2_case(dir, "g_truncbpe", enc, el, bpe, bl / 2, "produced by no merge");
  { /* duplicate merge: repeat line 2 at the end */
    char *nl1 = strchr(bpe, '\n') + 1, *nl2 = strchr(nl1, '\n') + 1;
    size_t ll = (size_t)(nl2 - nl1);
    char *m = malloc(bl + ll);
    memcpy(m, bpe, bl);
    memcpy(m + bl, nl1, ll);
    gpt2_case(dir, "g_dupmerge", enc, el, m, bl + ll, "duplicate merge");
    free(m);
  }
  {
    char *m = malloc(bl + 32);
    int k = snprintf(m, 32, "#version: 0.2\nzzzq xx\n");
    memcpy(m + k, strchr(bpe, '\n') + 1, bl - (size_t)(strchr(bpe, '\n') + 1 - bpe));
    gpt2_case(dir, "g_unknown", enc, el, m, k + bl - (size_t)(strchr(bpe, '\n') + 1 - bpe), "zzzq");
    free(m);
  }
  gpt2_case(dir, "g_badline", enc, el, "#version: 0.2\nabc\n", 19, "left right");
  gpt2_case(dir, "g_nomerges", enc, el, "#version: 0.2\n", 14, "no merges");
  {
    char *d = tz_path_join(dir, "g_missing");
    assert_int_equal(tz_mkdirs(d), 0);
    write_file(d, "encoder.json", enc, el);
    expect_fail(d, "vocab.bpe");
    free(d);
  }
  /* llama2.c */
  char *lp = tz_test_shared("llama2c/tok512.bin"), *l2;
  size_t l2n;
  assert_int_equal(tz_read_file(lp, &l2, &l2n), 0);
  char *p = tz_path_join(dir, "l2_trunc.bin");
  write_file(dir, "l2_trunc.bin", l2, l2n - 3);
  expect_fail(p, "truncated");
  free(p);
  p = tz_path_join(dir, "l2_short.bin");
  write_file(dir, "l2_short.bin", l2, 4 + 50 * 14);
  expect_fail(p, NULL);
  free(p);
  {
    char *m = malloc(l2n);
    memcpy(m, l2, l2n);
    int32_t bad = -7;
    memcpy(m + 4 + 4, &bad, 4); /* token 0's length */
    p = tz_path_join(dir, "l2_neglen.bin");
    write_file(dir, "l2_neglen.bin", m, l2n);
    expect_fail(p, "length -7");
    free(p);
    int32_t big = 1 << 30;
    memcpy(m, &big, 4);
    p = tz_path_join(dir, "l2_maxlen.bin");
    write_file(dir, "l2_maxlen.bin", m, l2n);
    expect_fail(p, "max_token_length");
    free(p);
    free(m);
  }
  p = tz_path_join(dir, "tiny.bin");
  write_file(dir, "tiny.bin", "\x01\x02", 2); /* binary: a text file of 2 bytes is called text (test_bad_inputs) */
  expect_fail(p, "too short");
  free(p);
  /* llm.c */
  char *mp = tz_test_shared("llmc/gpt2_tokenizer.bin"), *mc;
  size_t mn;
  assert_int_equal(tz_read_file(mp, &mc, &mn), 0);
  p = tz_path_join(dir, "m_trunc.bin");
  write_file(dir, "m_trunc.bin", mc, mn - 100);
  expect_fail(p, "truncated");
  free(p);
  p = tz_path_join(dir, "m_hdr.bin");
  write_file(dir, "m_hdr.bin", mc, 600);
  expect_fail(p, "1024-byte");
  free(p);
  {
    char *m = malloc(mn + 1);
    memcpy(m, mc, mn);
    uint32_t v = 9;
    memcpy(m + 4, &v, 4);
    p = tz_path_join(dir, "m_version.bin");
    write_file(dir, "m_version.bin", m, mn);
    expect_fail(p, "version 9");
    free(p);
    v = 2;
    memcpy(m + 4, &v, 4);
    v = 70000;
    memcpy(m + 12, &v, 4);
    p = tz_path_join(dir, "m_eot.bin");
    write_file(dir, "m_eot.bin", m, mn);
    expect_fail(p, "EOT id 70000");
    free(p);
    v = 50256;
    memcpy(m + 12, &v, 4);
    m[mn] = 'x';
    p = tz_path_join(dir, "m_trailing.bin");
    write_file(dir, "m_trailing.bin", m, mn + 1);
    expect_fail(p, "trailing");
    free(p);
    m[1024] = 0; /* token 0 length 0 */
    p = tz_path_join(dir, "m_zero.bin");
    write_file(dir, "m_zero.bin", m, mn);
    expect_fail(p, "length 0");
    free(p);
    free(m);
  }
  free(mc);
  free(mp);
  free(l2);
  free(lp);
  free(enc);
  free(bpe);
  free(ep);
  free(bp);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpt2_vectors),      cmocka_unit_test(test_llmc),
      cmocka_unit_test(test_llama2c_encode),    cmocka_unit_test(test_out_of_range_all_kinds),
      cmocka_unit_test(test_parallel_identity), cmocka_unit_test(test_robust_inputs),
      cmocka_unit_test(test_malformed_loaders),
  };
  if (getenv("TZ_TEST_FILTER")) cmocka_set_test_filter(getenv("TZ_TEST_FILTER")); /* one case */
  return cmocka_run_group_tests(tests, setup, teardown);
}
