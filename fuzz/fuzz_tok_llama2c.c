/* libFuzzer: the llama2.c tokenizer.bin loader on arbitrary file bytes (tz_tok_load_buf).
 * On success: run.c encode of a few texts, decode, and run.c's per-token decode for every id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* keep the bytes from being taken for JSON or llm.c: the loader is chosen by content */
  if (size >= 1 && (data[0] == '{' || data[0] == ' ' || data[0] == '\n' || data[0] == '\r' || data[0] == '\t'))
    return 0;
  tz_tokenizer *t;
  if (tz_tok_load_buf("fuzz.bin", (const char *)data, size, &t)) {
    if (strchr(tz_errmsg(), '\n') || !tz_errmsg()[0]) abort();
    return 0;
  }
  if (tz_tok_kind(t) != TZ_TOKENIZER_LLAMA2C) {
    tz_tok_free(t);
    return 0;
  }
  static const char *texts[] = {"", "Once upon a time", " \xc3\xa9\xff\x80\xe6\x97\xa5 ab\n", "<0x41><s>"};
  for (int k = 0; k < 4; k++) {
    int32_t *ids;
    size_t ni;
    if (tz_tok_encode_llama2c(t, texts[k], k & 1, k >> 1, &ids, &ni) == 0) {
      char *s;
      size_t sl;
      if (tz_tok_decode(t, ids, ni, &s, &sl)) abort();
      free(s);
      free(ids);
    }
  }
  int V = tz_tok_vocab_size(t);
  for (int i = 0; i < V && i < 4096; i++) {
    const char *b;
    size_t l;
    if (tz_tok_decode_piece_llama2c(t, i == 0 ? 1 : i - 1, i, &b, &l)) abort();
    for (size_t j = 0; j < l; j++) (void)*(volatile const char *)&b[j];
  }
  tz_tok_free(t);
  return 0;
}
