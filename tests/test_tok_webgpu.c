/* The WebGPU tokenizer (src/tokenizer/tok_webgpu.c) against the CPU one: identical merges and
 * tokenizer.json after training (tiny shakespeare and KJV-like text at several vocab sizes, a
 * text that forces banned pairs), identical ids when encoding (GPT-2 vectors and shakespeare,
 * random bytes with invalid UTF-8 and <|endoftext|>, long runs), decode round trips.
 * SKIPPED (exit 77) without a WebGPU adapter; the shakespeare / GPT-2 parts skip visibly
 * without ../shared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <omp.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "testutil.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU and GPU training give byte-identical tokenizer.json: three dispatches per merge after
 * counting the words on the GPU (the default on every adapter) in the test command; under
 * TEZGAH_TEST_SWEEP=1 (ctest entry test_tok_webgpu_fused, label sweep: .ci/run) instead two
 * (TEZGAH_TOK_GPU_FUSED=1, a variant no adapter chooses) after counting them on the CPU
 * (TEZGAH_TOK_GPU_COUNT=cpu; the default path's fallback to CPU counting is
 * test_train_word_count's). Until 2026-12-02 both ran here: the fused one was ~40 % of this
 * program's time (tiny shakespeare at vocab 2000: 11.6 s on lavapipe). Returns the GPU's bans. */
static unsigned same_training(const char *name, const char *text, size_t n, int vocab) {
  tz_tokenizer *a;
  double t0 = now();
  assert_int_equal(tz_tok_train(text, n, vocab, &a), 0);
  double t1 = now();
  char *ja;
  size_t la;
  assert_int_equal(tz_tok_to_json(a, &ja, &la), 0);
  unsigned bans = 0;
  int sweep = getenv("TEZGAH_TEST_SWEEP") != NULL;
  for (int fused = sweep; fused < 1 + sweep; fused++) {
    tz_tokenizer *b;
    tz_tok_gpu_stats st;
    setenv("TEZGAH_TOK_GPU_FUSED", fused ? "1" : "0", 1);
    if (fused) setenv("TEZGAH_TOK_GPU_COUNT", "cpu", 1);
    double t2 = now();
    if (tz_tok_train_webgpu(text, n, vocab, &b, &st)) fail_msg("webgpu training: %s", tz_errmsg());
    double t3 = now();
    unsetenv("TEZGAH_TOK_GPU_FUSED");
    unsetenv("TEZGAH_TOK_GPU_COUNT");
    assert_int_equal(st.fused, fused);
    if (st.count_gpu != !fused) fail_msg("%s: words counted on the %s (%s)", name, st.count_gpu ? "GPU" : "CPU", st.count_why);
    char *jb;
    size_t lb;
    assert_int_equal(tz_tok_to_json(b, &jb, &lb), 0);
    print_message("%s vocab %d: %d tokens, cpu %.2f s, webgpu (%d dispatches/merge) %.2f s (%u merges, %u bans, %u "
                  "submissions, %llu words)\n",
                  name, vocab, tz_tok_vocab_size(b), t1 - t0, fused ? 2 : 3, t3 - t2, st.merges, st.bans,
                  st.submissions, (unsigned long long)st.words);
    assert_int_equal(tz_tok_vocab_size(a), tz_tok_vocab_size(b));
    assert_int_equal(la, lb);
    assert_memory_equal(ja, jb, la);
    free(jb);
    tz_tok_free(b);
    bans = st.bans;
  }
  free(ja);
  tz_tok_free(a);
  return bans;
}

/* Where tz_tok_encode_webgpu is expected to pre-tokenize (1: the GPU). */
static int g_gpu_pretok = 1;

/* CPU and GPU encoding give the same ids; GPU decoding gives the text back. */
static void same_encoding(const tz_tokenizer *t, const char *name, const char *s, size_t n, int special) {
  int32_t *a, *b;
  size_t na, nb;
  double t0 = now();
  assert_int_equal(tz_tok_encode(t, s, n, special, &a, &na), 0);
  double t1 = now();
  if (tz_tok_encode_webgpu(t, s, n, special, &b, &nb)) fail_msg("webgpu encode: %s", tz_errmsg());
  double t2 = now();
  tz_tok_gpu_enc_stats es;
  tz_tok_webgpu_encode_stats(&es);
  if (es.gpu_pretok != g_gpu_pretok) fail_msg("%s: pre-tokenized on the %s, expected the %s", name, es.gpu_pretok ? "GPU" : "CPU", g_gpu_pretok ? "GPU" : "CPU");
  if (na != nb || (na && memcmp(a, b, na * sizeof *a))) {
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    fail_msg("%s: webgpu ids differ from the cpu's at %zu (%zu vs %zu ids)", name, i, nb, na);
  }
  char *back;
  size_t bl;
  if (tz_tok_decode_webgpu(t, b, nb, &back, &bl)) fail_msg("webgpu decode: %s", tz_errmsg());
  double t3 = now();
  char *cb;
  size_t cl;
  assert_int_equal(tz_tok_decode(t, a, na, &cb, &cl), 0);
  assert_int_equal(bl, cl);
  if (cl) assert_memory_equal(back, cb, cl);
  if (!special) {
    assert_int_equal(bl, n);
    if (n) assert_memory_equal(back, s, n);
  }
  if (n > 100000)
    print_message("%s: %zu bytes -> %zu ids, cpu %.3f s, webgpu encode %.3f s, decode %.3f s\n", name, n, na, t1 - t0,
                  t2 - t1, t3 - t2);
  free(a);
  free(b);
  free(back);
  free(cb);
}

static char *g_shakes;
static size_t g_shakes_len;

static void test_train_shakespeare(void **state) {
  if (!g_shakes) skip();
  /* no merge; one submission; seven (ITERS 256 merges each, two in flight: vocab 1024's three
   * were dropped on 2026-12-02, 6.5 s on lavapipe, a subset of this) */
  int vocabs[] = {257, 300, 2000};
  for (int i = 0; i < 3; i++) same_training("tinyshakespeare", g_shakes, g_shakes_len, vocabs[i]);
}

/* KJV-like text: data/kjv.txt (first 1.5 MB) when prepared, else verses made of the KJV's
 * most common words with numbers, punctuation and <|endoftext|> between books. */
static char *kjv_like(size_t *n) {
  char *p = NULL;
  size_t len;
  char path[1024];
  snprintf(path, sizeof path, "%s/data/kjv.txt", TZ_SOURCE_DIR);
  if (tz_exists(path) && !tz_read_file(path, &p, &len)) {
    if (len > (3u << 19)) len = 3u << 19;
    *n = len;
    return p;
  }
  static const char *W[] = {"the", "and", "of", "to", "that", "in", "he", "shall", "unto", "for", "i", "his",
                            "a", "lord", "they", "be", "is", "him", "not", "them", "it", "with", "all", "thou",
                            "thy", "was", "god", "which", "my", "me", "said", "but", "ye", "their", "have",
                            "will", "thee", "from", "as", "are", "when", "this", "out", "were", "upon", "man",
                            "by", "you", "israel", "king", "son", "up", "there", "hath", "then", "people",
                            "came", "had", "house", "into", "on", "her", "come", "one", "we", "children", "s",
                            "before", "your", "also", "day", "land", "men", "against", "shalt", "if", "at",
                            "let", "go", "us", "saying", "made", "went", "even", "behold", "Jerusalem", "David"};
  int nw = (int)(sizeof W / sizeof *W);
  tz_rng r;
  tz_rng_seed(&r, 7, 1);
  size_t cap = 1 << 20, o = 0;
  p = malloc(cap + 256);
  while (o < cap) {
    if (tz_rng_u32(&r) % 400 == 0) o += (size_t)sprintf(p + o, "<|endoftext|>");
    int words = 6 + (int)(tz_rng_u32(&r) % 20);
    for (int k = 0; k < words && o < cap; k++) {
      const char *w = W[tz_rng_u32(&r) % (uint32_t)nw];
      int cap1 = k == 0 || tz_rng_u32(&r) % 9 == 0;
      o += (size_t)sprintf(p + o, "%s%c%s", k ? " " : "", cap1 && w[0] >= 'a' ? w[0] - 32 : w[0], w + 1);
      uint32_t x = tz_rng_u32(&r) % 16;
      if (x == 0) o += (size_t)sprintf(p + o, ",");
      if (x == 1) o += (size_t)sprintf(p + o, ";");
      if (x == 2) o += (size_t)sprintf(p + o, ":%u", tz_rng_u32(&r) % 50);
    }
    o += (size_t)sprintf(p + o, ".\n");
  }
  *n = o;
  return p;
}

static void test_train_kjv(void **state) {
  size_t n;
  char *p = kjv_like(&n);
  int vocabs[] = {400, 1500};
  for (int i = 0; i < 2; i++) same_training("kjv-like", p, n, vocabs[i]);
  free(p);
}

/* Texts where a pair's bytes already are a token (bans), long runs and invalid UTF-8. */
static void test_train_edge(void **state) {
  tz_rng r;
  tz_rng_seed(&r, 11, 1);
  size_t n = 60000;
  char *p = malloc(n);
  for (size_t i = 0; i < n; i++) {
    uint32_t x = tz_rng_u32(&r) % 100;
    p[i] = x < 30 ? "ab c"[tz_rng_u32(&r) % 4] : x < 40 ? 'a' : x < 45 ? (char)(tz_rng_u32(&r) & 0xff) : "abc bcd "[x % 8];
  }
  memset(p + 1000, 'x', 1500); /* a long run: one long word */
  same_training("edge", p, n, 500);
  /* runs of one letter, of many lengths: the same strings come out of different splits
   * (aa+aaaa, aaa+aaa), so pairs get banned */
  for (size_t i = 0; i < n;) {
    size_t l = 1 + tz_rng_u32(&r) % 40;
    char c = "ab"[tz_rng_u32(&r) % 8 == 0];
    for (size_t k = 0; k < l && i < n; k++) p[i++] = c;
    if (i < n) p[i++] = tz_rng_u32(&r) % 3 ? ' ' : '\n';
  }
  same_training("runs", p, 40000, 400);
  same_training("tiny", "ab", 2, 300);
  same_training("empty-ish", "<|endoftext|>a", 14, 300);
  free(p);
}

/* Small adversarial corpora, most trained until no pair is left: count ties at every level
 * (the tie-break on the smallest ids), runs of one byte where overlapping pairs merge left to
 * right ("aaaaaaa", a NUL run), a single word, words that all end as one token, and pairs of
 * two merged ids (whose candidate words come from the shorter of two word lists). */
static void test_train_adversarial(void **state) {
  char *p = malloc(1 << 16);
  size_t n = 0;
  /* ties: 26 two-letter words and 26 four-letter ones, each 3 times */
  for (int rep = 0; rep < 3; rep++)
    for (int i = 0; i < 26; i++)
      n += (size_t)sprintf(p + n, " %c%c %c%c%c%c", 'a' + i, 'a' + (i * 7 + 3) % 26, 'a' + (i * 5 + 1) % 26,
                           'a' + (i * 11 + 2) % 26, 'a' + (i * 5 + 1) % 26, 'a' + (i * 11 + 2) % 26);
  same_training("ties", p, n, 400);
  same_training("ties", p, n, 270);
  /* one word of 1000 'a's: (a,a) x500, then (aa,aa) x250, ... */
  memset(p, 'a', 1000);
  same_training("run of 1000 a", p, 1000, 300);
  same_training("run of 777 a", p, 777, 300);
  /* runs of 1..64 of one letter, each once, as separate words */
  n = 0;
  for (int l = 1; l <= 64; l++) {
    memset(p + n, 'z', (size_t)l);
    n += (size_t)l;
    p[n++] = '\n';
  }
  same_training("runs 1..64", p, n, 400);
  /* a NUL run and high bytes: one long pre-token of invalid UTF-8 between words */
  n = (size_t)sprintf(p, "abc ");
  memset(p + n, 0, 3000);
  n += 3000;
  for (int i = 0; i < 500; i++) p[n++] = (char)(0x80 + i % 3);
  n += (size_t)sprintf(p + n, " abc abd");
  same_training("NUL run", p, n, 320);
  /* a single word */
  same_training("one word", "abcdefghijklmnopqrstuvwxyz", 26, 400);
  /* words that all become one token, one of them a whole pre-token repeated */
  n = 0;
  for (int rep = 0; rep < 50; rep++) n += (size_t)sprintf(p + n, " the cat the hat that abab cdcd ababcdcd");
  same_training("whole words", p, n, 600);
  free(p);
}

/* The CPU trainer's tokenizer.json for text[0, n) at vocab (malloc'ed, *len bytes). */
static char *cpu_json(const char *text, size_t n, int vocab, size_t *len) {
  tz_tokenizer *a;
  char *j;
  assert_int_equal(tz_tok_train(text, n, vocab, &a), 0);
  assert_int_equal(tz_tok_to_json(a, &j, len), 0);
  tz_tok_free(a);
  return j;
}

/* GPU training of text[0, n) at vocab with environment variable name = value (name NULL: none)
 * gives tokenizer.json ja (la bytes); its stats into *st; prints where the words were counted. */
static void gpu_same_json(const char *name, const char *value, const char *text, size_t n, int vocab, const char *ja,
                          size_t la, tz_tok_gpu_stats *st) {
  tz_tokenizer *b;
  char *jb;
  size_t lb;
  if (name) setenv(name, value, 1);
  int rc = tz_tok_train_webgpu(text, n, vocab, &b, st);
  if (name) unsetenv(name);
  if (rc) fail_msg("webgpu training: %s", tz_errmsg());
  print_message("%s%s%s: %llu words counted on the %s%s%s\n", name ? name : "default", name ? "=" : "", name ? value : "",
                (unsigned long long)st->words, st->count_gpu ? "GPU" : "CPU", st->count_gpu ? "" : ": ", st->count_why);
  assert_int_equal(tz_tok_to_json(b, &jb, &lb), 0);
  assert_int_equal(la, lb);
  assert_memory_equal(ja, jb, la);
  free(jb);
  tz_tok_free(b);
}

/* GPU word counting under a 4-bit key (TEZGAH_TOK_GPU_KEYBITS=4: different words meet on one
 * slot): its byte-for-byte check must see it and hand the counting to the CPU, same output; with
 * small batches (TEZGAH_TOK_GPU_SEGMENT) the words of many batches go into one table; and text
 * of many distinct words overflows the first table and is counted again in a roomier one. */
static void test_train_word_count(void **state) {
  size_t n, la;
  char *p = kjv_like(&n);
  if (n > 200000) n = 200000;
  char *ja = cpu_json(p, n, 600, &la);
  tz_tok_gpu_stats st;
  gpu_same_json("TEZGAH_TOK_GPU_KEYBITS", "4", p, n, 600, ja, la, &st);
  if (st.count_gpu || !strstr(st.count_why, "share")) fail_msg("a 4-bit key: no collision seen");
  gpu_same_json("TEZGAH_TOK_GPU_SEGMENT", "5000", p, n, 600, ja, la, &st);
  if (!st.count_gpu) fail_msg("small batches: counted on the CPU (%s)", st.count_why);
  free(ja);
  free(p);
  /* 600 kB of random six-letter words (~95 K distinct): more words than the table sized for
   * natural text holds, so the GPU counts again with a roomier one (still on the GPU) */
  tz_rng r;
  tz_rng_seed(&r, 5, 1);
  n = 600000;
  p = malloc(n);
  for (size_t i = 0; i < n; i++) p[i] = i % 7 == 6 ? ' ' : (char)('a' + tz_rng_u32(&r) % 26);
  ja = cpu_json(p, n, 300, &la);
  gpu_same_json(NULL, NULL, p, n, 300, ja, la, &st);
  if (!st.count_gpu) fail_msg("random words: counted on the CPU (%s)", st.count_why);
  free(ja);
  free(p);
}

static tz_tokenizer *gpt2(void) {
  char *dir = tz_test_shared_or_skip("gpt2");
  if (!dir) return NULL;
  tz_tokenizer *t;
  assert_int_equal(tz_tok_load(dir, &t), 0);
  free(dir);
  return t;
}

static void test_encode_gpt2(void **state) {
  tz_tokenizer *t = gpt2();
  if (!t) skip();
  char *p = tz_test_shared("gpt2/vectors.json");
  char *js;
  size_t jl;
  assert_int_equal(tz_read_file(p, &js, &jl), 0);
  cJSON *root = cJSON_ParseWithLength(js, jl);
  assert_non_null(root);
  const cJSON *v;
  int nvec = 0;
  cJSON_ArrayForEach(v, root) {
    const char *hex = cJSON_GetObjectItem(v, "utf8_hex")->valuestring;
    size_t n = strlen(hex) / 2;
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
      unsigned x;
      sscanf(hex + 2 * i, "%2x", &x);
      s[i] = (char)x;
    }
    /* the expected ids (tiktoken) */
    int32_t *b;
    size_t nb;
    if (tz_tok_encode_webgpu(t, s, n, 0, &b, &nb)) fail_msg("webgpu encode: %s", tz_errmsg());
    const cJSON *ids = cJSON_GetObjectItem(v, "ids");
    assert_int_equal(nb, (size_t)cJSON_GetArraySize(ids));
    for (size_t i = 0; i < nb; i++) assert_int_equal(b[i], cJSON_GetArrayItem(ids, (int)i)->valueint);
    free(b);
    same_encoding(t, "vector", s, n, 0);
    same_encoding(t, "vector special", s, n, 1);
    free(s);
    nvec++;
  }
  print_message("gpt2: %d vectors identical on webgpu\n", nvec);
  cJSON_Delete(root);
  free(js);
  free(p);
  if (g_shakes) {
    same_encoding(t, "gpt2 tinyshakespeare (300 kB)", g_shakes, 300000, 1);
    /* GPU pre-tokenization over many batches (cut at context-free boundaries after 64 KiB),
     * two in flight: the ids must come back in order */
    setenv("TEZGAH_TOK_GPU_SEGMENT", "65536", 1);
    same_encoding(t, "gpt2 tinyshakespeare, 64 KiB batches", g_shakes, g_shakes_len, 1);
    tz_tok_gpu_enc_stats es;
    tz_tok_webgpu_encode_stats(&es);
    print_message("gpu pre-tokenization: %u batches\n", es.batches);
    assert_true(es.batches >= 8);
    /* the CPU pre-tokenizer's pipeline (TEZGAH_TOK_GPU_PRETOK=cpu) over many segments and
     * batches (4 threads: spans of 64 KiB, one segment each) */
    int thr = omp_get_max_threads();
    omp_set_num_threads(4);
    setenv("TEZGAH_TOK_GPU_SEGMENT", "1", 1);
    setenv("TEZGAH_TOK_GPU_PRETOK", "cpu", 1);
    g_gpu_pretok = 0;
    same_encoding(t, "gpt2 tinyshakespeare, cpu pre-tokenization, 64 KiB segments", g_shakes, g_shakes_len, 1);
    tz_tok_webgpu_encode_stats(&es);
    print_message("cpu pre-tokenization: %u segments, %u batches\n", es.segments, es.batches);
    assert_true(es.batches >= 8);
    g_gpu_pretok = 1;
    unsetenv("TEZGAH_TOK_GPU_PRETOK");
    unsetenv("TEZGAH_TOK_GPU_SEGMENT");
    omp_set_num_threads(thr);
  }
  tz_tok_free(t);
}

static void random_text(tz_rng *r, char *p, size_t n) {
  static const char *pieces[] = {"<|endoftext|>", " the", "'s", "'ll", "  ", "\n\n", "\r\n", "é", "日本", "🙂", "123",
                                 " ?!", "\t", "\xc3", "\xff\xfe", "aaaa", "\xe2\x80\xa8"};
  size_t o = 0;
  while (o < n) {
    uint32_t x = tz_rng_u32(r) % 10;
    if (x < 4) {
      p[o++] = (char)(tz_rng_u32(r) & 0xff);
    } else {
      const char *s = pieces[tz_rng_u32(r) % (sizeof pieces / sizeof *pieces)];
      size_t l = strlen(s);
      if (o + l > n) l = n - o;
      memcpy(p + o, s, l);
      o += l;
    }
  }
}

static void test_encode_random(void **state) {
  tz_rng r;
  tz_rng_seed(&r, 3, 1);
  size_t n = 200000;
  char *p = malloc(n);
  random_text(&r, p, n);
  tz_tokenizer *tr;
  size_t kn;
  char *k = kjv_like(&kn);
  assert_int_equal(tz_tok_train(k, kn, 1000, &tr), 0);
  same_encoding(tr, "trained random bytes", p, n, 0);
  same_encoding(tr, "trained random bytes special", p, n, 1);
  same_encoding(tr, "trained kjv-like", k, kn, 1);
  for (int i = 0; i < 20; i++) {
    size_t a = tz_rng_u32(&r) % n, l = tz_rng_u32(&r) % 300;
    if (a + l > n) l = n - a;
    same_encoding(tr, "trained slice", p + a, l, (int)(i & 1));
  }
  tz_tokenizer *t = gpt2();
  if (t) {
    same_encoding(t, "gpt2 random bytes", p, n, 0);
    same_encoding(t, "gpt2 random bytes special", p, n, 1);
    tz_tok_free(t);
  }
  free(k);
  free(p);
  tz_tok_free(tr);
  if (!t) skip();
}

static size_t frag_text(tz_rng *r, char *p, size_t n);

/* Long single pre-tokens go through the heap kernel (O(n log n)), the longest (above
 * TEZGAH_TOK_GPU_HUGE, default 4096 bytes) through the CPU encoder. */
static void test_encode_long_runs(void **state) {
  size_t n = 1 << 20;
  char *p = malloc(n + 1);
  memset(p, 'a', n);
  tz_tokenizer *t = gpt2(), *tr;
  assert_int_equal(tz_tok_train(g_shakes ? g_shakes : "aaaa bbbb", g_shakes ? g_shakes_len : 9, 600, &tr), 0);
  same_encoding(tr, "trained 100 kB run", p, 100000, 0);
  if (t) {
    double t0 = now();
    same_encoding(t, "gpt2 1 MB run", p, n, 0);
    assert_true(now() - t0 < 60); /* O(n log n): ~12 s on lavapipe; quadratic would be hours */
    for (size_t i = 0; i < n; i++) p[i] = "ab"[(i / 7) & 1];
    same_encoding(t, "gpt2 200 kB mixed run", p, 200000, 0);
    memset(p, ' ', 70000);
    same_encoding(t, "gpt2 spaces", p, 70000, 0);
    /* a text with no context-free cut within a batch (a 300 kB run, batches capped at 100 kB):
     * the CPU pre-tokenizes, same ids */
    memset(p, 'a', 300000);
    setenv("TEZGAH_TOK_GPU_SEGMENT", "50000", 1);
    setenv("TEZGAH_TOK_GPU_BATCH_CAP", "100000", 1);
    g_gpu_pretok = 0;
    same_encoding(t, "gpt2 300 kB run, no cut", p, 300000, 0);
    g_gpu_pretok = 1;
    /* ... while a text with cuts is cut into batches of <= 100 kB */
    if (g_shakes) same_encoding(t, "gpt2 shakespeare 200 kB, 100 kB batches", g_shakes, 200000, 1);
    unsetenv("TEZGAH_TOK_GPU_BATCH_CAP");
    unsetenv("TEZGAH_TOK_GPU_SEGMENT");
    /* pre-tokens above TEZGAH_TOK_GPU_HUGE bytes are encoded on the CPU and their ids spliced
     * in: many of them (runs of letters, digits, punctuation, spaces, invalid bytes; some
     * adjacent) between ordinary text and <|endoftext|>, over several batches */
    tz_rng r;
    tz_rng_seed(&r, 21, 1);
    size_t o = 0, cap = 400000;
    while (o + 400 < cap) {
      o += frag_text(&r, p + o, 1 + tz_rng_u32(&r) % 200);
      uint32_t l = 1 + tz_rng_u32(&r) % 300;
      char c = "a1! \xff"[tz_rng_u32(&r) % 5];
      memset(p + o, c, l);
      o += l;
    }
    setenv("TEZGAH_TOK_GPU_HUGE", "64", 1);
    setenv("TEZGAH_TOK_GPU_SEGMENT", "65536", 1);
    same_encoding(t, "gpt2 runs, huge pieces on the cpu", p, o, 0);
    same_encoding(t, "gpt2 runs, huge pieces on the cpu, special", p, o, 1);
    same_encoding(tr, "trained runs, huge pieces on the cpu, special", p, o, 1);
    tz_tok_gpu_enc_stats es;
    tz_tok_webgpu_encode_stats(&es);
    print_message("%llu pre-tokens encoded on the cpu, %u batches\n", (unsigned long long)es.huge_pieces, es.batches);
    assert_true(es.huge_pieces > 1000 && es.batches > 4);
    unsetenv("TEZGAH_TOK_GPU_SEGMENT");
    unsetenv("TEZGAH_TOK_GPU_HUGE");
    tz_tok_free(t);
  }
  tz_tok_free(tr);
  free(p);
  if (!t) skip();
}

/* ---- the GPU pre-tokenizer (bpe_pretok.wgsl) against PCRE2 ---- */

/* Fragments that reach every case of the piece rule: whitespace of every kind (U+0020, tabs,
 * newlines, CR, VT, FF, NEL, U+00A0, U+1680, U+2028, U+3000; U+200B and U+FEFF are not \s),
 * apostrophes and contractions (and near misses: 'S, 'x, 'r, 'l, ''), letters of several scripts,
 * combining marks (O), digits of other scripts and other numbers (Arabic-Indic, Devanagari,
 * fullwidth, Roman numeral Nl, vulgar fraction No), symbols and emoji (O), invalid UTF-8
 * (lone lead / continuation bytes, truncated sequences, surrogates, overlongs, above U+10FFFF,
 * 0xFE/0xFF), NUL, and the special literal, whole and cut short. */
static const char *const FRAG[] = {
    "a", "b", "s", "t", "re", "ve", "ll", "d", "m", "e", "l", "x", "S", "Hello", "world", "1", "42", "2024",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\v", "\f", " \n", "\n ", "\t ", " \t",
    "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\xa8", "\xe3\x80\x80", "\xe2\x80\x8b", "\xef\xbb\xbf",
    "'", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'x", "'r", "'l", "''", "'''s", " 's", "!'s",
    "\xc3\xa9", "\xc3\x89t\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xce\xb1\xce\xb2", "\xd0\xb4\xd0\xb0",
    "e\xcc\x81", "\xcc\x88", "\xd9\xa3", "\xe0\xa5\xa9", "\xef\xbc\x91", "\xe2\x85\xab", "\xc2\xbd",
    "\xf0\x9f\x99\x82", "\xe2\x82\xac", "!", "?!", ".", ",", "-", "(", ")", "\"", "#",
    "\xff", "\xfe", "\xc3", "\x80", "\xbf\xbf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xe0\x80\xaf",
    "\xf0\x9f\x99", "\xe6\x97", "\xf8\x88\x80\x80\x80", "<|endoftext|>", "<|endoftext", "endoftext|>",
};

static size_t frag_text(tz_rng *r, char *p, size_t n) {
  size_t o = 0, nf = sizeof FRAG / sizeof *FRAG;
  while (o < n) {
    const char *f = FRAG[tz_rng_u32(r) % nf];
    size_t l = strlen(f);
    if (f == FRAG[0] && tz_rng_u32(r) % 64 == 0) f = "\0", l = 1; /* a NUL now and then */
    if (o + l > n) break;
    memcpy(p + o, f, l);
    o += l;
  }
  return o;
}

/* The GPU's pieces of s[0, n) equal PCRE2's (tz_pretok_pieces), special literal on or off. */
static void same_pieces(const tz_tokenizer *t, const char *name, const char *s, size_t n, int special) {
  uint32_t *a, *b;
  size_t na, nb;
  assert_int_equal(tz_pretok_pieces(t, s, n, special, &a, &na), 0);
  if (tz_tok_webgpu_pretok(s, n, special ? TZ_EOT_STR : NULL, special ? TZ_EOT_LEN : 0, &b, &nb))
    fail_msg("webgpu pretok: %s", tz_errmsg());
  size_t i = 0;
  while (i < na && i < nb && a[2 * i] == b[2 * i] && a[2 * i + 1] == b[2 * i + 1]) i++;
  if (i < na || i < nb) {
    size_t at = i < na ? a[2 * i] : i < nb ? b[2 * i] : n, from = at > 12 ? at - 12 : 0;
    char ctx[200];
    size_t o = 0;
    for (size_t k = from; k < n && k < at + 12 && o + 8 < sizeof ctx; k++)
      o += (size_t)snprintf(ctx + o, sizeof ctx - o, k == at ? "[%02x]" : "%02x ", (unsigned char)s[k]);
    fail_msg("%s: piece %zu differs (%zu pieces from PCRE2, %zu from the GPU): PCRE2 (%u, %d), GPU (%u, %d); bytes %s",
             name, i, na, nb, i < na ? a[2 * i] : 0, i < na ? (int)a[2 * i + 1] : -1, i < nb ? b[2 * i] : 0,
             i < nb ? (int)b[2 * i + 1] : -1, ctx);
  }
  free(a);
  free(b);
}

static void test_pretok_gpu(void **state) {
  tz_tokenizer *t;
  assert_int_equal(tz_tok_train("a b", 3, 260, &t), 0); /* the pattern and <|endoftext|> */
  const uint32_t *cls;
  double cs;
  assert_int_equal(tz_pretok_classes(&cls, &cs), 0);
  print_message("class table from PCRE2: %.3f s\n", cs);
  /* a few classes the rule depends on, as PCRE2 gives them */
  assert_int_equal(cls[0x20 >> 4] >> (0x20 % 16 * 2) & 3, 3);      /* space: \s */
  assert_int_equal(cls[0x3000 >> 4] >> (0x3000 % 16 * 2) & 3, 3);  /* ideographic space: \s */
  assert_int_equal(cls[0x301 >> 4] >> (0x301 % 16 * 2) & 3, 0);    /* combining acute: other */
  assert_int_equal(cls[0x663 >> 4] >> (0x663 % 16 * 2) & 3, 2);    /* Arabic-Indic three: \p{N} */
  assert_int_equal(cls[0x65e5 >> 4] >> (0x65e5 % 16 * 2) & 3, 1);  /* 日: \p{L} */
  static const char *fixed[] = {"", "a", "'s", "a's", "a 's", "a  's", "a\t's", "''s", "!'s", "Hello world",
                                "a  b", "a \t b", "a\t\tb", "a  ", "  a", "\n\n", "a\xc2\xa0 b", " \xc2\xa0" "a",
                                "'re're", "'rex", "x'llx", "'", "' ", " '", "\xff'\xffs", "1 2  3", "<|endoftext|>'s",
                                "ab<|endoftext|>  <|endoftext|><|endoftext|>\n", "e\xcc\x81\xcc\x88 x"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    for (int sp = 0; sp < 2; sp++) same_pieces(t, fixed[i], fixed[i], strlen(fixed[i]), sp);
  tz_rng r; /* TEZGAH_TEST_SEED: other random texts (the test's default is fixed) */
  tz_rng_seed(&r, getenv("TEZGAH_TEST_SEED") ? strtoull(getenv("TEZGAH_TEST_SEED"), NULL, 10) : 13, 1);
  char buf[256];
  for (int i = 0; i < 300; i++) { /* short texts: the rule at the batch's start and end */
    size_t n = frag_text(&r, buf, 1 + tz_rng_u32(&r) % (sizeof buf - 1));
    same_pieces(t, "short fragments", buf, n, i & 1);
  }
  size_t big = 3u << 20;
  char *p = malloc(big);
  size_t n = frag_text(&r, p, big);
  same_pieces(t, "3 MB of fragments", p, n, 0);
  same_pieces(t, "3 MB of fragments, special", p, n, 1);
  for (size_t i = 0; i < 1000000; i++) p[i] = (char)(tz_rng_u32(&r) & 0xff);
  same_pieces(t, "1 MB random bytes", p, 1000000, 1);
  tz_tok_free(t);
  free(p);
}

int main(void) {
  if (!tz_tok_webgpu_available()) {
    char why[600];
    snprintf(why, sizeof why, "WebGPU unavailable: %s", tz_errmsg());
    tz_test_skip_all(why);
  }
  print_message("webgpu tokenizer on %s\n", tz_tok_webgpu_device());
  char *p = tz_test_shared_or_skip("data/tinyshakespeare.txt");
  if (p) {
    if (tz_read_file(p, &g_shakes, &g_shakes_len)) g_shakes = NULL;
    free(p);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_train_edge),       cmocka_unit_test(test_train_adversarial),
      cmocka_unit_test(test_train_shakespeare),
      cmocka_unit_test(test_train_kjv),        cmocka_unit_test(test_train_word_count),        cmocka_unit_test(test_encode_gpt2),
      cmocka_unit_test(test_encode_random),    cmocka_unit_test(test_encode_long_runs),
      cmocka_unit_test(test_pretok_gpu),
  };
  if (getenv("TEZGAH_TEST_FILTER")) cmocka_set_test_filter(getenv("TEZGAH_TEST_FILTER"));
  if (getenv("TEZGAH_TEST_SKIP")) cmocka_set_skip_filter(getenv("TEZGAH_TEST_SKIP"));
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(g_shakes);
  if (!rc && tz_test_shared_missing) return 77;
  return rc;
}
