/* Tokenizer speed: GPT-2 encode MB/s with 1 thread and all threads on tiny shakespeare and the
 * KJV text, and BPE training time on the KJV text.
 *
 *   bench_tokenizer GPT2_DIR SHAKESPEARE.txt KJV.txt [--no-train] [--vocab N,N,...]
 *
 * Encode: each measurement loads a fresh tokenizer ("cold": its pre-token cache starts empty,
 * as in a one-shot `tezgah tokenize`), then the best of 3 more calls on it ("warm": the cache
 * persists across calls). Load time is excluded. Prints markdown tables and, for scripts,
 * lines "tokens <name> <count>". bench/tiktoken_bench.py prints the same shape for tiktoken. */
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

static void die(void) {
  fprintf(stderr, "bench_tokenizer: error: %s\n", tz_errmsg());
  exit(1);
}

/* seconds for one encode; *ntok = tokens */
static double time_encode(const tz_tokenizer *t, const char *s, size_t n, size_t *ntok) {
  int32_t *ids;
  double t0 = now();
  if (tz_tok_encode(t, s, n, 0, &ids, ntok)) die();
  double dt = now() - t0;
  free(ids);
  return dt;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s GPT2_DIR SHAKESPEARE.txt KJV.txt [--no-train] [--vocab 4096,16384]\n", argv[0]);
    return 2;
  }
  int train = 1;
  const char *vocabs = "4096,16384";
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "--no-train")) train = 0;
    else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocabs = argv[++i];
    else {
      fprintf(stderr, "bench_tokenizer: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  const char *names[2] = {"tinyshakespeare", "kjv"};
  char *text[2];
  size_t len[2];
  for (int f = 0; f < 2; f++)
    if (tz_read_file(argv[2 + f], &text[f], &len[f])) die();
  int nthr = omp_get_max_threads();
  printf("tezgah tokenizer bench: GPT-2 (%s), %d threads available\n\n", argv[1], nthr);
  printf("| input | MB | tokens | 1 thread MB/s | %d threads MB/s | 1 thread warm MB/s | %d threads warm MB/s |\n",
         nthr, nthr);
  printf("|---|---|---|---|---|---|---|\n");
  size_t counts[2] = {0, 0};
  for (int f = 0; f < 2; f++) {
    double cold[2], warm[2];
    size_t ntok = 0;
    for (int k = 0; k < 2; k++) {
      omp_set_num_threads(k == 0 ? 1 : nthr);
      tz_tokenizer *t;
      if (tz_tok_load(argv[1], &t)) die();
      cold[k] = time_encode(t, text[f], len[f], &ntok);
      if (k == 0) counts[f] = ntok;
      else if (ntok != counts[f]) {
        fprintf(stderr, "bench_tokenizer: %d threads gave %zu tokens, 1 thread %zu\n", nthr, ntok, counts[f]);
        return 1;
      }
      warm[k] = 1e30;
      for (int r = 0; r < 3; r++) {
        double dt = time_encode(t, text[f], len[f], &ntok);
        if (dt < warm[k]) warm[k] = dt;
      }
      tz_tok_free(t);
    }
    double mb = len[f] / 1e6;
    printf("| %s | %.2f | %zu | %.1f | %.1f | %.1f | %.1f |\n", names[f], mb, counts[f], mb / cold[0], mb / cold[1],
           mb / warm[0], mb / warm[1]);
  }
  omp_set_num_threads(nthr);
  printf("\n");
  for (int f = 0; f < 2; f++) printf("tokens %s %zu\n", names[f], counts[f]);
  if (train) {
    printf("\n| BPE training on kjv (%.2f MB) | vocab | seconds |\n|---|---|---|\n", len[1] / 1e6);
    const char *p = vocabs;
    while (*p) {
      int V = atoi(p);
      tz_tokenizer *t;
      double t0 = now();
      if (tz_tok_train(text[1], len[1], V, &t)) die();
      printf("| train | %d | %.2f |\n", tz_tok_vocab_size(t), now() - t0);
      fflush(stdout);
      tz_tok_free(t);
      p = strchr(p, ',');
      if (!p) break;
      p++;
    }
  }
  free(text[0]);
  free(text[1]);
  return 0;
}
