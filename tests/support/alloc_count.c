/* LD_PRELOAD shim for tests/test_step_alloc.sh: counts calls of the malloc family of the
 * whole process (every thread) and writes "<ours> <runtime>" to $TZ_ALLOC_COUNT_OUT at exit.
 * "runtime" are calls made directly by libgomp or OpenBLAS (libgomp mallocs a team for every
 * parallel region it runs serialized, e.g. with one thread or a false if() clause; OpenBLAS's
 * threaded gemm allocates per call): those are the runtimes' business, reported apart.
 * Everything else (tezgah, cJSON, libc's stdio on our behalf, ...) is "ours".
 * Allocation itself goes to glibc's __libc_* entry points, so the shim needs no dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_ulong g_calls, g_runtime;

static void count(const void *caller) {
  Dl_info di;
  if (dladdr(caller, &di) && di.dli_fname && (strstr(di.dli_fname, "libgomp") || strstr(di.dli_fname, "openblas")))
    atomic_fetch_add_explicit(&g_runtime, 1, memory_order_relaxed);
  else
    atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
}
#define COUNT() count(__builtin_return_address(0))

void *malloc(size_t n) {
  COUNT();
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t s) {
  COUNT();
  return __libc_calloc(n, s);
}
void *realloc(void *p, size_t n) {
  COUNT();
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n) {
  COUNT();
  return __libc_memalign(a, n);
}
void *memalign(size_t a, size_t n) {
  COUNT();
  return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
  COUNT();
  void *p = __libc_memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void free(void *p) { __libc_free(p); }

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("TZ_ALLOC_COUNT_OUT");
  if (!path) return;
  char buf[48];
  int n = snprintf(buf, sizeof buf, "%lu %lu\n", (unsigned long)atomic_load(&g_calls),
                   (unsigned long)atomic_load(&g_runtime));
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (write(fd, buf, (size_t)n) < 0) { /* nothing to do */ }
    close(fd);
  }
}
