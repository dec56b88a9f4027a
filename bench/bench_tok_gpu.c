/* Tokenizer on WebGPU vs the CPU on one corpus (bench/run_tok_gpu_bench.sh runs it).
 *
 *   bench_tok_gpu CORPUS.txt GPT2_DIR [--vocab N,N] [--no-cpu-train]
 *
 * Training: tz_tok_train (word counting on all cores, merges on one) vs tz_tok_train_webgpu
 * (same counting, merges on the GPU), tokenizer.json compared byte for byte. Encoding with
 * GPT-2 and with the first trained tokenizer: the CPU encoder on all threads (cold: a fresh
 * tokenizer; warm: best of 2 more calls) vs the GPU encoder (pre-tokenization on the CPU),
 * ids compared. Decoding: CPU vs GPU of the GPT-2 ids. Prints markdown tables and
 * "tokens <name> <count>" lines (the corpus's GPT-2 count, for tiktoken_bench.py). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/fileio.h"
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

static void encode_rows(const char *name, const char *spec, tz_tokenizer *given, const char *s, size_t n) {
  double mb = n / 1e6, cold, warm = 1e30, gpu = 1e30, gpu_first;
  int32_t *a, *b;
  size_t na, nb;
  tz_tokenizer *t = given;
  if (!t && tz_tok_load(spec, &t)) die("load");
  double t0 = now();
  if (tz_tok_encode(t, s, n, 1, &a, &na)) die("cpu encode");
  cold = now() - t0;
  for (int k = 0; k < 2; k++) {
    int32_t *x;
    size_t nx;
    t0 = now();
    if (tz_tok_encode(t, s, n, 1, &x, &nx)) die("cpu encode");
    double dt = now() - t0;
    if (dt < warm) warm = dt;
    free(x);
  }
  t0 = now();
  if (tz_tok_encode_webgpu(t, s, n, 1, &b, &nb)) die("webgpu encode");
  gpu_first = now() - t0;
  if (na != nb || memcmp(a, b, na * sizeof *a)) {
    fprintf(stderr, "bench_tok_gpu: %s: webgpu ids differ from the cpu's (%zu vs %zu)\n", name, nb, na);
    exit(1);
  }
  free(b);
  for (int k = 0; k < 2; k++) {
    t0 = now();
    if (tz_tok_encode_webgpu(t, s, n, 1, &b, &nb)) die("webgpu encode");
    double dt = now() - t0;
    if (dt < gpu) gpu = dt;
    free(b);
  }
  /* pre-tokenization alone (the CPU share of the GPU path) */
  printf("| %s | %.1f | %zu | %.1f | %.1f | %.1f | %.1f | identical |\n", name, mb, na, mb / cold, mb / warm,
         mb / gpu_first, mb / gpu);
  fflush(stdout);
  if (!given) {
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
    tz_tok_free(t);
  }
  free(a);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CORPUS.txt GPT2_DIR [--vocab N,N] [--no-cpu-train]\n", argv[0]);
    return 2;
  }
  const char *vocabs = "8192,32768";
  int cpu_train = 1;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocabs = argv[++i];
    else if (!strcmp(argv[i], "--no-cpu-train")) cpu_train = 0;
    else {
      fprintf(stderr, "bench_tok_gpu: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  char *s;
  size_t n;
  if (tz_read_file(argv[1], &s, &n)) die("read");
  if (!tz_tok_webgpu_available()) die("webgpu");
  printf("corpus %s: %.1f MB; %d CPU threads; GPU: %s\n\n", argv[1], n / 1e6, omp_get_max_threads(),
         tz_tok_webgpu_device());
  printf("| training | vocab | cpu s | webgpu s | speedup | merges | bans | submissions | words | output |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  tz_tokenizer *first = NULL;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", vocabs);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int v = atoi(tok);
    tz_tokenizer *a = NULL, *b;
    double tc = 0, t0;
    if (cpu_train) {
      t0 = now();
      if (tz_tok_train(s, n, v, &a)) die("cpu train");
      tc = now() - t0;
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
    printf("| corpus | %d | %.2f | %.2f | %.2fx | %u | %u | %u | %llu | %s |\n", v, tc, tg, tc > 0 ? tc / tg : 0,
           st.merges, st.bans, st.submissions, (unsigned long long)st.words, same);
    fflush(stdout);
    if (a && strcmp(same, "identical")) return 1;
    tz_tok_free(a);
    if (!first) first = b;
    else tz_tok_free(b);
  }
  printf("\n| encode | MB | tokens | cpu %d thr cold MB/s | cpu warm MB/s | webgpu first MB/s | webgpu MB/s | ids |\n",
         omp_get_max_threads());
  printf("|---|---|---|---|---|---|---|---|\n");
  if (first) encode_rows("trained (first vocab)", NULL, first, s, n);
  encode_rows("gpt2", argv[2], NULL, s, n);
  tz_tok_free(first);
  free(s);
  return 0;
}
