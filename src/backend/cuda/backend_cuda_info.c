/* Driver / GPU detection with one-line reasons, and `tezgah info`'s CUDA section.
 *
 * The CUDA runtime is linked statically and loads the driver (libcuda.so.1) itself at the
 * first call; we look for the library first so that its absence is named as such rather
 * than as cudart's generic "insufficient driver". */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_rt.h"
#include "core/error.h"
#include "kernels/attention/attention_cudnn.h"

tzc_lt_api tzc_lt;

/* Where libcublasLt may be besides the loader's search path (LD_LIBRARY_PATH, ld.so.cache):
 * the toolkit this was built with, and the usual install location. */
#ifndef TZ_CUDA_LIBDIR
#define TZ_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

static int lt_load_locked(void);
int tzc_lt_load(void) { /* one loader at a time (backends created back to back each start one) */
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  int rc = lt_load_locked();
  pthread_mutex_unlock(&mu);
  return rc;
}
static int lt_load_locked(void) {
  static int loaded;
  if (loaded) return 0;
  char name[64], path[1024];
  snprintf(name, sizeof name, "libcublasLt.so.%d", CUDART_VERSION / 1000);
  const char *dirs[] = {NULL, TZ_CUDA_LIBDIR, "/usr/local/cuda/lib64", "/usr/local/cuda/lib"};
  void *h = NULL;
  char first_err[512] = "";
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs && !h; i++) {
    if (dirs[i]) snprintf(path, sizeof path, "%s/%s", dirs[i], name);
    else snprintf(path, sizeof path, "%s", name);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h && !first_err[0]) snprintf(first_err, sizeof first_err, "%s", dlerror());
  }
  if (!h)
    return tz_err("cuda: cuBLASLt not found (%s; also looked in %s and /usr/local/cuda/lib64): %s; add the CUDA "
                  "toolkit's lib64 to LD_LIBRARY_PATH", name, TZ_CUDA_LIBDIR, first_err);
#define TZC_LT_SYM(fn)                                                                              \
  if (!(*(void **)&tzc_lt.fn = dlsym(h, "cublasLt" #fn)))                                            \
    return tz_err("cuda: %s has no symbol cublasLt%s (a cuBLASLt older than the toolkit?)", name, #fn);
  TZC_LT_FUNCS(TZC_LT_SYM)
#undef TZC_LT_SYM
  loaded = 1;
  return 0;
}

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
  char dv[16], rv[16], lt[96];
  if (tzc_lt_load() == 0) {
    size_t lv = tzc_lt.GetVersion();
    snprintf(lt, sizeof lt, "cuBLASLt %zu.%zu.%zu", lv / 10000, (lv / 100) % 100, lv % 100);
  } else {
    snprintf(lt, sizeof lt, "cuBLASLt not found");
  }
  printf("cuda:\n  driver: %s, runtime: %s, %s\n", tzc_version_str(dvi, dv, sizeof dv),
         tzc_version_str(rvi, rv, sizeof rv), lt);
  if (strcmp(lt, "cuBLASLt not found") == 0) printf("  %s\n", tz_errmsg());
  { /* cuDNN attention (attention.cu's want_cudnn: the default on sm_90 without GQA): whether it loads */
    int dv_ = 0;
    char why[600];
    if (tzc_cudnn_available(&dv_, why, sizeof why))
      printf("  cuDNN %d.%d.%d (attention on sm_90 without GQA; TEZGAH_CUDA_ATTN=builtin|cudnn to choose)\n",
             dv_ / 10000, dv_ / 100 % 100, dv_ % 100);
    else
      printf("  cuDNN: no (%s)\n", why);
  }
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
  return 0;
}
