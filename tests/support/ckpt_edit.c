/* Test helper for tests/test_bad_inputs.sh: read or replace one section of a checkpoint
 * (with valid checksums, so the loader's later checks can be reached).
 *   tz_ckpt_edit get IN SECTION            payload to stdout
 *   tz_ckpt_edit set IN OUT SECTION FILE   copy IN to OUT with SECTION's payload from FILE
 *                                          (added at the end when IN lacks it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/ckpt.h"
#include "core/error.h"
#include "core/fileio.h"

int main(int argc, char **argv) {
  tz_ckpt *ck;
  if (argc == 4 && !strcmp(argv[1], "get")) {
    if (tz_ckpt_open(argv[2], &ck)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
    size_t n;
    const void *p = tz_ckpt_get(ck, argv[3], &n);
    if (!p) return fprintf(stderr, "no section %s\n", argv[3]), 1;
    fwrite(p, 1, n, stdout);
    tz_ckpt_close(ck);
    return 0;
  }
  if (argc != 6 || strcmp(argv[1], "set")) {
    fprintf(stderr, "usage: tz_ckpt_edit get IN SECTION | set IN OUT SECTION FILE\n");
    return 2;
  }
  char *data;
  size_t len;
  if (tz_read_file(argv[5], &data, &len) || tz_ckpt_open(argv[2], &ck)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_ckpt_writer *w = tz_ckpt_begin();
  int found = 0;
  for (size_t i = 0; i < tz_ckpt_count(ck); i++) {
    const char *name = tz_ckpt_name(ck, i);
    size_t n;
    const void *p = tz_ckpt_get(ck, name, &n);
    if (!strcmp(name, argv[4])) found = 1, p = data, n = len;
    tz_ckpt_add_ref(w, name, p, n);
  }
  if (!found) tz_ckpt_add_ref(w, argv[4], data, len);
  int rc = tz_ckpt_commit(w, argv[3]);
  if (rc) fprintf(stderr, "%s\n", tz_errmsg());
  tz_ckpt_free(w);
  tz_ckpt_close(ck);
  free(data);
  return rc ? 1 : 0;
}
