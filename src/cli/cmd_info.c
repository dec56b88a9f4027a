/* tezgah info: what this build can run on (backends; for WebGPU the Dawn library, adapter,
 * backend, features and limits). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/error.h"

int tz_cmd_info(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: tezgah info\nList the backends and, for WebGPU, the adapter, features and limits.\n");
    return 0;
  }
  printf("backends: cpu, webgpu\ncpu: available\n");
  if (tz_webgpu_info() != 0) {
    printf("webgpu: unavailable: %s\n", tz_errmsg());
    return 0;
  }
  return 0;
}
