#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char g_err[TZ_ERR_MAX];

int tz_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  for (char *p = g_err; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  return -1;
}

int tz_err_prefix(const char *prefix) {
  char copy[TZ_ERR_MAX];
  snprintf(copy, sizeof copy, "%s", g_err);
  return tz_err("%s: %s", prefix, copy);
}

const char *tz_errmsg(void) { return g_err; }
void tz_err_clear(void) { g_err[0] = 0; }

_Noreturn void tz_panic(const char *file, int line, const char *what) {
  fprintf(stderr, "tezgah: internal error at %s:%d: %s\n", file, line, what);
  abort();
}

static void (*g_fatal)(const char *msg);
void tz_set_fatal_handler(void (*handler)(const char *msg)) { g_fatal = handler; }

_Noreturn void tz_fatal(const char *msg) {
  if (g_fatal) g_fatal(msg); /* the CLI's: print and exit(1) */
  fprintf(stderr, "tezgah: error: %s\n", msg);
  abort();
}

static void *oom(size_t bytes) {
  char msg[96];
  snprintf(msg, sizeof msg, "out of host memory allocating %zu bytes", bytes);
  tz_fatal(msg);
}

void *tz_malloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  return p ? p : oom(bytes);
}
void *tz_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  return p ? p : oom(n * size);
}
void *tz_realloc(void *q, size_t bytes) {
  void *p = realloc(q, bytes ? bytes : 1);
  return p ? p : oom(bytes);
}
char *tz_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = tz_malloc(n);
  memcpy(p, s, n);
  return p;
}
