/* Shared by the libFuzzer targets: the loaders under test take a path, so each input is
 * written to one private temporary file first (rewritten in place for every input). */
#ifndef TZ_FUZZ_COMMON_H
#define TZ_FUZZ_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *fuzz_path(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; /* tmpfs: no disk I/O */
    snprintf(path, sizeof path, "%s/tezgah-fuzz-%ld.bin", dir, (long)getpid());
  }
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  return path;
}
#endif
