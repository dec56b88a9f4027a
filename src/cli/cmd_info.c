/* tezgah info: what this build can run on (backends; for WebGPU the Dawn library, adapter,
 * backend, features and limits; for CUDA the devices and driver/runtime versions). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/error.h"

int tz_cmd_info(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: tezgah info\nList the backends: for WebGPU the adapter, features and limits; for CUDA the devices (name, compute capability, SMs, memory) and the driver and runtime versions.\n");
    return 0;
  }
  printf("backends: cpu, webgpu, cuda\ncpu: available\n");
  if (tz_webgpu_info() != 0) printf("webgpu: unavailable: %s\n", tz_errmsg());
  /* CUDA: the devices, or one line saying why there are none (not a failure of `info`) */
  if (tz_cuda_info() != 0) {
    const char *msg = tz_errmsg();
    printf("cuda: unavailable: %s\n", strncmp(msg, "cuda: ", 6) ? msg : msg + 6);
  }
  return 0;
}
