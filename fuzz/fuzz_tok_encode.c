/* libFuzzer: byte-level BPE encode/decode on arbitrary bytes.
 * Properties: decode(encode(x)) == x with and without allow_special; the streaming token bytes
 * concatenate to x; and at every context-free cut point that the parallel encoder may use,
 * encode(x) == encode(x[0, p)) ++ encode(x[p, n)) (parallel encode == serial encode). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

static tz_tokenizer *g_tok;

static const char TRAIN[] =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "In the beginning God created the heaven and the earth. 1:2 And the earth was without form, "
    "and void; and darkness was upon the face of the deep.<|endoftext|>It's 12 o'clock, isn't it? "
    "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e   \t\r\n  they'll we've I'm you'd";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  if (tz_tok_train(TRAIN, sizeof TRAIN - 1, 400, &g_tok)) {
    fprintf(stderr, "train: %s\n", tz_errmsg());
    abort();
  }
  return 0;
}

static void encode(const char *s, size_t n, int sp, int32_t **ids, size_t *ni) {
  if (tz_tok_encode(g_tok, s, n, sp, ids, ni)) {
    fprintf(stderr, "encode failed: %s\n", tz_errmsg());
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  for (int sp = 0; sp < 2; sp++) {
    int32_t *ids;
    size_t ni;
    encode(s, size, sp, &ids, &ni);
    char *back;
    size_t bl;
    if (tz_tok_decode(g_tok, ids, ni, &back, &bl)) abort();
    if (bl != size || (size && memcmp(back, s, size))) abort();
    free(back);
    size_t off = 0;
    for (size_t i = 0; i < ni; i++) {
      const char *b;
      size_t l;
      if (tz_tok_token_bytes(g_tok, ids[i], &b, &l) || off + l > size || memcmp(s + off, b, l)) abort();
      off += l;
    }
    if (off != size) abort();
    if (sp == 0) { /* split identity at every cut point (at most 8) */
      size_t p = 0;
      for (int k = 0; k < 8; k++) {
        p = tz_pretok_safe_cut(s, 0, p + 1, size);
        if (p >= size) break;
        int32_t *a, *b;
        size_t na, nb;
        encode(s, p, 0, &a, &na);
        encode(s + p, size - p, 0, &b, &nb);
        if (na + nb != ni || memcmp(a, ids, na * sizeof *a) || memcmp(b, ids + na, nb * sizeof *b)) {
          fprintf(stderr, "cut at %zu changes the encoding\n", p);
          abort();
        }
        free(a);
        free(b);
      }
    }
    free(ids);
  }
  return 0;
}
