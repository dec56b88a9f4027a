/* Tokenizers as self-contained byte blobs for checkpoints: each kind is written in its own
 * native format, which tz_tok_load_buf reads back (it detects the format), so any tokenizer
 * a run was trained with travels inside its checkpoint.
 *   byte-level BPE → tokenizer.json (tok_json.c)
 *   llama2.c       → tokenizer.bin: int32 max_token_length, then per token float32 score,
 *                    int32 length, bytes (llama2.c's tokenizer.py export format)
 *   llm.c          → gpt2_tokenizer.bin version 2: 256×uint32 header (20240328, 2, V, EOT),
 *                    then per token uint8 length and bytes (llm.c's write_tokenizer format) */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

typedef struct {
  char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 1024;
    b->p = tz_realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

int tz_tok_to_blob(const tz_tokenizer *t, char **data, size_t *len) {
  buf b = {0};
  if (t->kind == TZ_TOK_BYTELEVEL) return tz_tok_to_json(t, data, len);
  if (t->kind == TZ_TOK_LLAMA2C) {
    int32_t maxlen = t->max_token_length;
    put(&b, &maxlen, 4);
    for (int i = 0; i < t->vocab_size; i++) {
      int32_t l = (int32_t)strlen(t->piece[i]);
      put(&b, &t->score[i], 4);
      put(&b, &l, 4);
      put(&b, t->piece[i], (size_t)l);
    }
  } else if (t->kind == TZ_TOK_LLMC) {
    uint32_t hdr[256] = {20240328, 2, (uint32_t)t->vocab_size, (uint32_t)t->eot};
    put(&b, hdr, sizeof hdr);
    for (int i = 0; i < t->vocab_size; i++) {
      uint8_t l = (uint8_t)t->tok_len[i];
      put(&b, &l, 1);
      put(&b, t->tok[i], t->tok_len[i]);
    }
  } else {
    return tz_err("tokenizer: unknown kind %d", t->kind);
  }
  *data = b.p;
  *len = b.n;
  return 0;
}
