/* libFuzzer: tz_tok_from_json on arbitrary bytes. Must fail cleanly (one-line error) or give a
 * tokenizer that encodes, decodes (round trip) and re-serializes to an equal tokenizer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tz_tokenizer *t;
  if (tz_tok_from_json((const char *)data, size, "fuzz.json", &t)) {
    if (strchr(tz_errmsg(), '\n') || !tz_errmsg()[0]) abort();
    return 0;
  }
  static const char probe[] = "Hello world<|endoftext|> it's \xff\x00 caf\xc3\xa9\n\n";
  for (int sp = 0; sp < 2; sp++) {
    int32_t *ids;
    size_t ni;
    if (tz_tok_encode(t, probe, sizeof probe - 1, sp, &ids, &ni)) abort();
    char *back;
    size_t bl;
    if (tz_tok_decode(t, ids, ni, &back, &bl)) abort();
    if (bl != sizeof probe - 1 || memcmp(back, probe, bl)) abort();
    free(back);
    free(ids);
  }
  char *js, *js2;
  size_t jl, jl2;
  tz_tokenizer *t2;
  if (tz_tok_to_json(t, &js, &jl)) abort();
  if (tz_tok_from_json(js, jl, "again", &t2)) abort();
  if (tz_tok_to_json(t2, &js2, &jl2) || jl2 != jl || memcmp(js, js2, jl)) abort();
  free(js);
  free(js2);
  tz_tok_free(t2);
  tz_tok_free(t);
  return 0;
}
