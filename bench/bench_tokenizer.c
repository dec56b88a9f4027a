/* Tokenizer speed: bench_tokenizer <text file> [vocab_size] [tokenizer to encode with]
 * Trains a byte-level BPE on the file (prints seconds), then encodes the file with it (or with
 * the given tokenizer) and prints MB/s. */
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

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s text.txt [vocab_size] [tokenizer]\n", argv[0]);
    return 2;
  }
  int V = argc > 2 ? atoi(argv[2]) : 4096;
  char *text;
  size_t n;
  if (tz_read_file(argv[1], &text, &n)) {
    fprintf(stderr, "error: %s\n", tz_errmsg());
    return 1;
  }
  tz_tokenizer *t;
  double t0 = now();
  if (argc > 3) {
    if (tz_tok_load(argv[3], &t)) {
      fprintf(stderr, "error: %s\n", tz_errmsg());
      return 1;
    }
    printf("load %s: %.3f s\n", argv[3], now() - t0);
  } else {
    if (tz_tok_train(text, n, V, &t)) {
      fprintf(stderr, "error: %s\n", tz_errmsg());
      return 1;
    }
    printf("train %.2f MB vocab %d: %.3f s\n", n / 1e6, tz_tok_vocab_size(t), now() - t0);
  }
  int32_t *ids;
  size_t nid;
  t0 = now();
  if (tz_tok_encode(t, text, n, 0, &ids, &nid)) {
    fprintf(stderr, "error: %s\n", tz_errmsg());
    return 1;
  }
  double dt = now() - t0;
  printf("encode: %zu bytes -> %zu tokens (%.2f bytes/token) in %.3f s = %.1f MB/s\n", n, nid,
         (double)n / (nid ? nid : 1), dt, n / 1e6 / dt);
  char *back;
  size_t bl;
  t0 = now();
  if (tz_tok_decode(t, ids, nid, &back, &bl)) return 1;
  printf("decode: %.3f s, round trip %s\n", now() - t0, (bl == n && memcmp(back, text, n) == 0) ? "ok" : "MISMATCH");
  free(back);
  free(ids);
  tz_tok_free(t);
  free(text);
  return 0;
}
