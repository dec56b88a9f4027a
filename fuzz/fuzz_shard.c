/* libFuzzer target: llm.c token shard reading (header, size, id range checks). */
#include <string.h>

#include "core/error.h"
#include "data/shard.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  size_t ntok;
  int hdr = tz_shard_read_header(path, &ntok);
  uint16_t *t;
  size_t n;
  int vocab = size > 0 ? 1 + data[size - 1] * 257 : 300; /* vary the id limit */
  if (tz_shard_read(path, vocab, &t, &n) == 0) {
    if (hdr != 0 || n != ntok) abort(); /* header-only and full reads must agree */
    for (size_t i = 0; i < n; i++)
      if (t[i] >= vocab) abort();
    free(t);
  } else if (strchr(tz_errmsg(), '\n') || !tz_errmsg()[0]) {
    abort();
  }
  return 0;
}
