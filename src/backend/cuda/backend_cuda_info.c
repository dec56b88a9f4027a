/* Driver / GPU detection with one-line reasons, and `tezgah info`'s CUDA section.
 *
 * The CUDA runtime is linked statically and loads the driver (libcuda.so.1) itself at the
 * first call; we look for the library first so that its absence is named as such rather
 * than as cudart's generic "insufficient driver". */
#include <cublasLt.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_rt.h"
#include "core/error.h"

const char *tzc_version_str(int v, char *buf, size_t n) {
  snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
  return buf;
}

int tzc_probe(int *n_devices, int *driver_version, int *runtime_version) {
  *n_devices = 0;
  *driver_version = *runtime_version = 0;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return tz_err("cuda: no NVIDIA driver found (libcuda.so.1 missing): %s", why ? why : "dlopen failed");
  }
  dlclose(h);
  cudaDriverGetVersion(driver_version);
  cudaRuntimeGetVersion(runtime_version);
  cudaGetLastError();
  char dv[16], rv[16];
  tzc_version_str(*driver_version, dv, sizeof dv);
  tzc_version_str(*runtime_version, rv, sizeof rv);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  cudaGetLastError();
  if (e == cudaErrorInsufficientDriver)
    return tz_err("cuda: driver too old for this CUDA runtime (driver %s, runtime %s)", dv, rv);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0))
    return tz_err("cuda: no CUDA GPU visible (driver %s; CUDA_VISIBLE_DEVICES=%s)", dv,
                  getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
  if (e != cudaSuccess)
    return tz_err("cuda: cannot initialize CUDA (driver %s, runtime %s): %s (%s)", dv, rv, cudaGetErrorString(e),
                  cudaGetErrorName(e));
  *n_devices = n;
  return 0;
}

int tz_cuda_info(void) {
  int n, dvi, rvi;
  if (tzc_probe(&n, &dvi, &rvi)) return -1;
  char dv[16], rv[16];
  size_t lv = cublasLtGetVersion();
  printf("cuda:\n  driver: %s, runtime: %s, cuBLASLt %zu.%zu.%zu\n", tzc_version_str(dvi, dv, sizeof dv),
         tzc_version_str(rvi, rv, sizeof rv), lv / 10000, (lv / 100) % 100, lv % 100);
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      cudaGetLastError();
      printf("  device %d: (properties unavailable)\n", d);
      continue;
    }
    printf("  device %d: %s, compute capability %d.%d, %d SMs, %.0f MiB, L2 %.0f MiB%s\n", d, p.name, p.major, p.minor,
           p.multiProcessorCount, p.totalGlobalMem / 1048576.0, p.l2CacheSize / 1048576.0,
           p.major < 8 ? " (unsupported: needs compute capability 8.0+)" : "");
  }
  printf("  precision: bf16 (default: bf16 activations and weight copies, fp32 master weights), fp32 (--precision fp32)\n");
  const char *miss = tzc_missing_ops();
  if (*miss) printf("  ops missing from this build: %s\n", miss);
  return 0;
}
