/* libFuzzer target: tokenizer.json loading (tz_tok_load, the path --tokenizer takes); a
 * tokenizer that loads must round-trip a fixed text through encode and decode. */
#include <string.h>

#include "core/error.h"
#include "fuzz_common.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  tz_tokenizer *tok;
  if (tz_tok_load(path, &tok) == 0) {
    static const char text[] = "First Citizen:\nBefore we proceed any further, hear me speak. \xc3\xa9\xe2\x82\xac";
    int32_t *ids = NULL;
    size_t n = 0;
    if (tz_tok_encode(tok, text, sizeof text - 1, 0, &ids, &n) == 0) {
      char *back = NULL;
      size_t len = 0;
      if (tz_tok_decode(tok, ids, n, &back, &len) == 0) {
        /* byte-level BPE (tokenizer.json) is lossless */
        if (data[0] == '{' && (len != sizeof text - 1 || memcmp(back, text, len))) abort();
        free(back);
      }
      free(ids);
    }
    tz_tok_free(tok);
  } else if (strchr(tz_errmsg(), '\n') || !tz_errmsg()[0]) {
    abort();
  }
  return 0;
}
