/* A program built against an installed libtezgah (tests/test_install.sh): load a model,
 * encode, forward to logits, generate token by token, train steps, save. Uses only
 * <tezgah.h>. Prints "ok ..." and exits 0, or names the failing call and exits 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tezgah.h>

#define CHECK(call)                                                           \
  do {                                                                        \
    if ((call) != 0) {                                                        \
      fprintf(stderr, "embed_demo: %s failed: %s\n", #call, tz_last_error()); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: embed_demo RUN_DIR OUT.tzc\n");
    return 1;
  }
  tz_lm *lm;
  CHECK(tz_lm_load(argv[1], "cpu", 1, &lm));
  const tz_config *c = tz_lm_config(lm);
  const char *text = "First Citizen: Before we proceed any further, hear me speak.";
  int32_t *ids;
  size_t n;
  CHECK(tz_lm_encode(lm, text, strlen(text), 0, &ids, &n));
  char *back;
  size_t blen;
  CHECK(tz_lm_decode(lm, ids, n, &back, &blen));
  if (blen != strlen(text) || memcmp(back, text, blen)) return fprintf(stderr, "decode(encode(x)) != x\n"), 1;
  tz_free(back);
  int T = n < 16 ? (int)n : 16;
  float *logits = malloc(sizeof(float) * (size_t)T * c->vocab_size);
  CHECK(tz_lm_forward(lm, ids, T, logits));
  int argmax = 0;
  for (int v = 1; v < c->vocab_size; v++)
    if (logits[(size_t)(T - 1) * c->vocab_size + v] > logits[(size_t)(T - 1) * c->vocab_size + argmax]) argmax = v;
  /* greedy generation from the same prefix picks the forward pass's argmax first */
  CHECK(tz_lm_generate_start(lm, ids, T, 0.0f, 0, 1.0f, 1));
  int32_t gen[8];
  for (int i = 0; i < 8; i++) CHECK(tz_lm_next(lm, &gen[i]));
  if (gen[0] != argmax) return fprintf(stderr, "greedy token %d != forward argmax %d\n", gen[0], argmax), 1;
  /* train: the loss on one batch goes down */
  double l0 = 0, l = 0;
  for (int s = 0; s < 5; s++) {
    CHECK(tz_lm_train_step(lm, ids, ids + 1, 1, T, 1e-2f, &l));
    if (s == 0) l0 = l;
  }
  if (!(l < l0)) return fprintf(stderr, "loss did not decrease: %g -> %g\n", l0, l), 1;
  CHECK(tz_lm_save(lm, argv[2]));
  printf("ok: vocab %d, %zu tokens, greedy %d, loss %.4f -> %.4f\n", c->vocab_size, n, gen[0], l0, l);
  tz_free(ids);
  free(logits);
  tz_lm_free(lm);
  return 0;
}
