/* libFuzzer target: checkpoint loading (container validation, meta JSON, config, fingerprint,
 * embedded tokenizer) as `tezgah sample` and `--resume` do it. Never crashes, never leaks:
 * either a one-line error or a fully valid checkpoint. */
#include <string.h>

#include "checkpoint/run_ckpt.h"
#include "core/error.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  tz_run_file rf;
  if (tz_run_open(path, &rf) == 0) {
    /* a valid file: every section must be readable in full */
    for (size_t i = 0; i < tz_ckpt_count(rf.ck); i++) {
      size_t n;
      const unsigned char *p = tz_ckpt_get(rf.ck, tz_ckpt_name(rf.ck, i), &n);
      volatile unsigned s = 0;
      for (size_t k = 0; k < n; k += 4096) s += p[k];
    }
    tz_run_close(&rf);
  } else if (strchr(tz_errmsg(), '\n') || !tz_errmsg()[0]) {
    abort(); /* errors are one non-empty line */
  }
  return 0;
}
