/* OpenBLAS loaded on first use (blas_load.h). */
#include "kernels/matmul/blas_load.h"

#ifdef TZ_USE_BLAS
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dlib.h"
#include "core/error.h"

/* Where OpenBLAS is looked for, in order: $TEZGAH_OPENBLAS_LIB when set (and only there);
 * TZ_OPENBLAS_PATH, the library of the flavour that the build chose (CMakeLists.txt prefers the OpenMP one, which shares libgomp's thread pool
 * with our kernels; a plain soname would get Debian's system-wide alternative, the pthread
 * one by default), then the soname through the usual search (LD_LIBRARY_PATH, ld.so.cache). */
#define TZ_OPENBLAS_SONAME "libopenblas.so.0"

__typeof__(&cblas_sgemm) tz_blas_sgemm;
static void (*set_threads)(int);
static char *(*get_config)(void);
static char loaded_path[512];
static char load_error[TZ_ERR_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *try_open(const char *path, char *why, size_t cap) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(why, cap, "%s: %s", path, tz_dl_why(path));
  return h;
}

static void load_once(void) {
  const char *paths[] = {
#ifdef TZ_OPENBLAS_PATH
      TZ_OPENBLAS_PATH,
#endif
      TZ_OPENBLAS_SONAME};
  char why[TZ_ERR_MAX] = "";
  void *h = NULL;
  size_t n = sizeof paths / sizeof paths[0];
  const char *env = getenv("TEZGAH_OPENBLAS_LIB");
  if (env && *env) paths[0] = env, n = 1;
  for (size_t i = 0; i < n && !h; i++)
    if ((h = try_open(paths[i], why, sizeof why))) snprintf(loaded_path, sizeof loaded_path, "%s", paths[i]);
  if (!h) {
    snprintf(load_error, sizeof load_error, "OpenBLAS: cannot load %s (Debian: libopenblas0-openmp)", why);
    return;
  }
  tz_blas_sgemm = (__typeof__(&cblas_sgemm))dlsym(h, "cblas_sgemm");
  set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
  get_config = (char *(*)(void))dlsym(h, "openblas_get_config");
  if (!tz_blas_sgemm || !set_threads) {
    snprintf(load_error, sizeof load_error, "OpenBLAS: %s has no %s", loaded_path,
             tz_blas_sgemm ? "openblas_set_num_threads" : "cblas_sgemm");
    tz_blas_sgemm = NULL;
    dlclose(h);
  }
  /* otherwise kept loaded for the life of the process (its thread pool may be running) */
}

int tz_blas_load(void) {
  pthread_once(&once, load_once);
  if (tz_blas_sgemm) return 0;
  return tz_err("%s", load_error);
}

void tz_blas_set_threads(int threads) { set_threads(threads); }

int tz_blas_describe(char *out, size_t cap) {
  if (tz_blas_load() != 0) {
    snprintf(out, cap, "no (%s)", tz_errmsg());
    tz_err_clear();
    return 0;
  }
  snprintf(out, cap, "%s, %s", get_config ? get_config() : "OpenBLAS", loaded_path);
  return 1;
}
#endif
