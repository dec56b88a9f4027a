/* Tokenizer on WebGPU vs the CPU on one corpus (bench/run_tok_gpu_bench.sh runs it).
 *
 *   bench_tok_gpu CORPUS.txt GPT2_DIR [--vocab N,N] [--no-cpu-train] [--no-cpu1] [--no-gpu-train] [--train-only]
 *
 * --no-gpu-train: the CPU trainer only (its tokenizer for the encode rows; quick on lavapipe).
 * --train-only: the training rows alone (no encode / decode rows).
 * TEZGAH_BENCH_FUSED_AB=1 adds a GPU training row with two dispatches per merge
 * (TEZGAH_TOK_GPU_FUSED=1: the select folded into every apply workgroup); TEZGAH_BENCH_COUNT_AB=1
 * one with the words counted on the CPU (TEZGAH_TOK_GPU_COUNT=cpu).
 * Training: tz_tok_train (word counting on all cores, merges on one) vs tz_tok_train_webgpu
 * (words counted on the GPU: GPU pre-tokenization and a hash table; merges on the GPU),
 * tokenizer.json compared byte for byte. The CPU's counting alone (tz_count_words) is timed
 * once, so "cpu merges" is the CPU trainer's time after it. Encoding with the first trained tokenizer and GPT-2 (special tokens
 * allowed): the CPU encoder on 1 thread (a fresh tokenizer: empty pre-token cache) and on all
 * threads (cold: a fresh tokenizer; warm: best of 2 more calls, cache filled) vs the GPU
 * encoder (first call: pipelines and tables built; then best of 2), ids compared; the GPU
 * path's phases (tz_tok_gpu_enc_stats: pretok / feed / wait / drain) are printed beside. Decoding: CPU vs
 * GPU of the GPT-2 ids. Prints markdown tables and "tokens corpus <count>" (the GPT-2 count,
 * for tiktoken_bench.py's check). Exits 1 on any difference. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/fileio.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void die(const char *what) {
  fprintf(stderr, "bench_tok_gpu: %s: %s\n", what, tz_errmsg());
  exit(1);
}

/* A fresh copy of t (no encoder contexts, so an empty pre-token cache). */
static tz_tokenizer *fresh(const char *spec, const tz_tokenizer *t) {
  tz_tokenizer *c;
  if (spec) {
    if (tz_tok_load(spec, &c)) die("load");
    return c;
  }
  char *j;
  size_t l;
  if (tz_tok_to_json(t, &j, &l) || tz_tok_load_buf("trained", j, l, &c)) die("copy");
  free(j);
  return c;
}

static double encode_s(const tz_tokenizer *t, const char *s, size_t n, int32_t **ids, size_t *nid) {
  double t0 = now();
  if (tz_tok_encode(t, s, n, 1, ids, nid)) die("cpu encode");
  return now() - t0;
}

static void encode_rows(const char *name, const char *spec, const tz_tokenizer *given, const char *s, size_t n,
                        int cpu1) {
  double mb = n / 1e6, one = 0, cold, warm = 1e30, gpu = 1e30, gpu_first;
  int32_t *a, *b;
  size_t na, nb;
  int thr = omp_get_max_threads();
  if (cpu1) {
    tz_tokenizer *t1 = fresh(spec, given);
    omp_set_num_threads(1);
    one = encode_s(t1, s, n, &a, &na);
    omp_set_num_threads(thr);
    free(a);
    tz_tok_free(t1);
  }
  tz_tokenizer *t = fresh(spec, given);
  cold = encode_s(t, s, n, &a, &na);
  for (int k = 0; k < 2; k++) {
    int32_t *x;
    size_t nx;
    double dt = encode_s(t, s, n, &x, &nx);
    if (dt < warm) warm = dt;
    if (nx != na || memcmp(x, a, na * sizeof *a)) {
      fprintf(stderr, "bench_tok_gpu: %s: cpu ids differ between calls\n", name);
      exit(1);
    }
    free(x);
  }
  double t0 = now();
  if (tz_tok_encode_webgpu(t, s, n, 1, &b, &nb)) die("webgpu encode");
  gpu_first = now() - t0;
  tz_tok_gpu_enc_stats first_es;
  tz_tok_webgpu_encode_stats(&first_es);
  if (na != nb || memcmp(a, b, na * sizeof *a)) {
    fprintf(stderr, "bench_tok_gpu: %s: webgpu ids differ from the cpu's (%zu vs %zu)\n", name, nb, na);
    exit(1);
  }
  free(b);
  tz_tok_gpu_enc_stats es, best = {0};
  for (int k = 0; k < 2; k++) {
    t0 = now();
    if (tz_tok_encode_webgpu(t, s, n, 1, &b, &nb)) die("webgpu encode");
    double dt = now() - t0;
    tz_tok_webgpu_encode_stats(&es);
    if (dt < gpu) gpu = dt, best = es;
    if (nb != na || memcmp(a, b, na * sizeof *a)) {
      fprintf(stderr, "bench_tok_gpu: %s: webgpu ids differ on a repeated call\n", name);
      exit(1);
    }
    free(b);
  }
  /* the same GPU encoder with the CPU (PCRE2) pre-tokenizer: the step before GPU
   * pre-tokenization, for comparison in the same run */
  double gcpu = 1e30;
  tz_tok_gpu_enc_stats bc = {0};
  setenv("TEZGAH_TOK_GPU_PRETOK", "cpu", 1);
  for (int k = 0; k < 2; k++) {
    t0 = now();
    if (tz_tok_encode_webgpu(t, s, n, 1, &b, &nb)) die("webgpu encode (cpu pre-tokenization)");
    double dt = now() - t0;
    tz_tok_webgpu_encode_stats(&es);
    if (dt < gcpu) gcpu = dt, bc = es;
    if (nb != na || memcmp(a, b, na * sizeof *a)) {
      fprintf(stderr, "bench_tok_gpu: %s: webgpu ids (cpu pre-tokenization) differ\n", name);
      exit(1);
    }
    free(b);
  }
  unsetenv("TEZGAH_TOK_GPU_PRETOK");
  char c1[32] = "-";
  if (cpu1) snprintf(c1, sizeof c1, "%.1f", mb / one);
  printf("| %s | %.1f | %zu | %s | %.1f | %.1f | %.1f | **%.1f** | %s: %.2f / %.2f / %.2f / %.2f / %u | %.1f (%.2f / %.2f / "
         "%.2f / %.2f) | %.2fx | identical |\n",
         name, mb, na, c1, mb / cold, mb / warm, mb / gpu_first, mb / gpu, best.gpu_pretok ? "gpu" : "CPU",
         best.pretok_s, best.feed_s, best.wait_s, best.drain_s, best.batches, mb / gcpu, bc.pretok_s, bc.feed_s,
         bc.wait_s, bc.drain_s, warm / gpu);
  if (first_es.classes_s > 0) printf("(class table from PCRE2 in the first call: %.3f s)\n", first_es.classes_s);
  fflush(stdout);
  if (spec) {
    char *d1, *d2;
    size_t l1, l2;
    t0 = now();
    if (tz_tok_decode(t, a, na, &d1, &l1)) die("cpu decode");
    double dc = now() - t0;
    t0 = now();
    if (tz_tok_decode_webgpu(t, a, na, &d2, &l2)) die("webgpu decode");
    double dg = now() - t0;
    if (l1 != l2 || memcmp(d1, d2, l1)) {
      fprintf(stderr, "bench_tok_gpu: webgpu decode differs\n");
      exit(1);
    }
    printf("\ndecode %s: cpu %.3f s (%.1f MB/s), webgpu %.3f s (%.1f MB/s), identical\n\n", name, dc, l1 / 1e6 / dc, dg,
           l1 / 1e6 / dg);
    printf("tokens corpus %zu\n\n", na);
    free(d1);
    free(d2);
  }
  tz_tok_free(t);
  free(a);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CORPUS.txt GPT2_DIR [--vocab N,N] [--no-cpu-train] [--no-cpu1] [--no-gpu-train] [--train-only]\n", argv[0]);
    return 2;
  }
  const char *vocabs = "8192,32768";
  int cpu_train = 1, cpu1 = 1, gpu_train = 1, train_only = 0;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocabs = argv[++i];
    else if (!strcmp(argv[i], "--no-cpu-train")) cpu_train = 0;
    else if (!strcmp(argv[i], "--no-cpu1")) cpu1 = 0;
    else if (!strcmp(argv[i], "--no-gpu-train")) gpu_train = 0;
    else if (!strcmp(argv[i], "--train-only")) train_only = 1;
    else {
      fprintf(stderr, "bench_tok_gpu: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  char *s;
  size_t n;
  if (tz_read_file(argv[1], &s, &n)) die("read");
  if (!tz_tok_webgpu_available()) die("webgpu");
  int thr = omp_get_max_threads();
  printf("corpus %s: %.1f MB; %d CPU threads; GPU: %s\n\n", argv[1], n / 1e6, thr, tz_tok_webgpu_device());
  /* the word counting both trainers share */
  double t0 = now();
  tz_wordcount wc;
  if (tz_count_words(s, n, &wc)) die("count");
  double count_s = now() - t0;
  printf("word counting (GPT-2 pre-tokenization, %d threads, shared by both trainers): %.2f s, %zu unique words\n\n",
         thr, count_s, wc.words.n);
  tz_wordcount_free(&wc);
  printf("| training | vocab | cpu %d thr s | cpu merges s | webgpu s | webgpu word count s (where) | webgpu pipelines s | "
         "webgpu upload s | webgpu merges s | speedup | merges speedup | merges | bans | submissions | words | pairs | "
         "list entries | output |\n",
         thr);
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  tz_tokenizer *first = NULL;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", vocabs);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int v = atoi(tok);
    tz_tokenizer *a = NULL, *b;
    double tc = 0;
    if (cpu_train) {
      t0 = now();
      if (tz_tok_train(s, n, v, &a)) die("cpu train");
      tc = now() - t0;
    }
    if (!gpu_train) { /* the CPU tokenizer only, for the encode rows */
      if (!a) die("--no-gpu-train needs the cpu trainer");
      printf("| corpus | %d | %.2f | %.2f | (not run) | | | | | | | | | | | | | |\n", v, tc, tc - count_s);
      if (!first) first = a;
      else tz_tok_free(a);
      continue;
    }
    tz_tok_gpu_stats st;
    t0 = now();
    if (tz_tok_train_webgpu(s, n, v, &b, &st)) die("webgpu train");
    double tg = now() - t0;
    const char *same = "(cpu not run)";
    if (a) {
      char *ja, *jb;
      size_t la, lb;
      if (tz_tok_to_json(a, &ja, &la) || tz_tok_to_json(b, &jb, &lb)) die("json");
      same = la == lb && !memcmp(ja, jb, la) ? "identical" : "DIFFERENT";
      free(ja);
      free(jb);
    }
    double cm = tc - count_s;
    printf("| corpus | %d | %.2f | %.2f | **%.2f** | %.2f (%s%s%s) | %.2f | %.2f | %.2f | %.2fx | %.2fx | %u | %u | %u | %llu | "
           "%llu | %llu | %s |\n",
           v, tc, cm, tg, st.count_s, st.count_gpu ? "GPU" : "CPU", st.count_gpu ? "" : ": ", st.count_why, st.pipes_s,
           st.upload_s, st.merge_s, tc > 0 ? tc / tg : 0, cm > 0 ? cm / st.merge_s : 0, st.merges,
           st.bans, st.submissions, (unsigned long long)st.words, (unsigned long long)st.pairs,
           (unsigned long long)st.list_entries, same);
    if (st.noop_iter_s > 0) printf("|   (no-op iteration after the end: %.1f us) | | | | | | | | | | | | | | | | | |\n", st.noop_iter_s * 1e6);
    fflush(stdout);
    if (a && strcmp(same, "identical")) return 1;
    /* A/B rows of the same trainer: two dispatches per merge, or the words counted on the CPU */
    const char *ab[2][4] = {{"TEZGAH_BENCH_FUSED_AB", "TEZGAH_TOK_GPU_FUSED", "1", "webgpu 2 dispatches/merge"},
                            {"TEZGAH_BENCH_COUNT_AB", "TEZGAH_TOK_GPU_COUNT", "cpu", "webgpu, words counted on the CPU"}};
    for (int k = 0; k < 2; k++) {
      if (!getenv(ab[k][0])) continue;
      tz_tokenizer *c;
      tz_tok_gpu_stats s2;
      setenv(ab[k][1], ab[k][2], 1);
      t0 = now();
      if (tz_tok_train_webgpu(s, n, v, &c, &s2)) die(ab[k][3]);
      double t2 = now() - t0;
      unsetenv(ab[k][1]);
      char *jb, *jc;
      size_t lb, lc;
      if (tz_tok_to_json(b, &jb, &lb) || tz_tok_to_json(c, &jc, &lc)) die("json");
      int same2 = lb == lc && !memcmp(jb, jc, lb);
      printf("| corpus, %s | %d | | | %.2f | %.2f (%s) | %.2f | %.2f | %.2f | %.2fx | %.2fx | %u | %u | %u | %llu | %llu | "
             "%llu | %s |\n",
             ab[k][3], v, t2, s2.count_s, s2.count_gpu ? "GPU" : "CPU", s2.pipes_s, s2.upload_s, s2.merge_s,
             tc > 0 ? tc / t2 : 0, cm > 0 ? cm / s2.merge_s : 0, s2.merges, s2.bans, s2.submissions,
             (unsigned long long)s2.words, (unsigned long long)s2.pairs, (unsigned long long)s2.list_entries,
             same2 ? "identical" : "DIFFERENT");
      if (s2.noop_iter_s > 0)
        printf("|   (no-op iteration after the end: %.1f us) | | | | | | | | | | | | | | | | | |\n", s2.noop_iter_s * 1e6);
      fflush(stdout);
      free(jb);
      free(jc);
      tz_tok_free(c);
      if (!same2) return 1;
    }
    tz_tok_free(a);
    if (!first) first = b;
    else tz_tok_free(b);
  }
  if (train_only) {
    tz_tok_free(first);
    free(s);
    return 0;
  }
  printf("\n| encode | MB | tokens | cpu 1 thr MB/s | cpu %d thr cold MB/s | cpu %d thr warm MB/s | webgpu first MB/s | "
         "webgpu MB/s | pre-tokenized on: pretok s / feed s / wait s / drain s / batches | webgpu with CPU pre-tokenization "
         "MB/s (pretok / feed / wait / drain) | webgpu vs cpu warm | ids |\n",
         thr, thr);
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  if (first) encode_rows("trained (first vocab)", NULL, first, s, n, cpu1);
  encode_rows("gpt2", argv[2], NULL, s, n, cpu1);
  tz_tok_free(first);
  free(s);
  return 0;
}
