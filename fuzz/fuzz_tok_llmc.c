/* libFuzzer: the llm.c gpt2_tokenizer.bin loader. The input is the file after its magic
 * (20240328 is prepended so every input reaches this loader). On success decode every id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 4);
  uint32_t magic = 20240328;
  memcpy(buf, &magic, 4);
  if (size) memcpy(buf + 4, data, size);
  tz_tokenizer *t;
  int rc = tz_tok_load_buf("fuzz.bin", buf, size + 4, &t);
  free(buf);
  if (rc) {
    if (strchr(tz_errmsg(), '\n') || !tz_errmsg()[0]) abort();
    return 0;
  }
  int V = tz_tok_vocab_size(t);
  if (tz_tok_eot(t) < 0 || tz_tok_eot(t) >= V) abort();
  int32_t *ids = malloc((size_t)V * sizeof *ids);
  for (int i = 0; i < V; i++) ids[i] = i;
  char *s;
  size_t sl;
  if (tz_tok_decode(t, ids, (size_t)V, &s, &sl)) abort();
  free(s);
  int32_t bad = V;
  if (tz_tok_decode(t, &bad, 1, &s, &sl) == 0) abort();
  int32_t *e;
  size_t ne;
  if (tz_tok_encode(t, "x", 1, 0, &e, &ne) == 0) abort(); /* llm.c tokenizers cannot encode */
  free(ids);
  tz_tok_free(t);
  return 0;
}
