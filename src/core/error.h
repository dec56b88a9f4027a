/* Error reporting: one line, naming the file, field and value.
 *
 * Library functions return 0 on success and nonzero on failure after calling tz_err()
 * with a message such as "corpus.txt: file is empty". The CLI prints
 * "tezgah: error: <message>" and exits 1. The message lives in a thread-local buffer
 * (TZ_ERR_MAX bytes); a later tz_err() overwrites it. */
#ifndef TZ_CORE_ERROR_H
#define TZ_CORE_ERROR_H
#include <stddef.h>

#define TZ_ERR_MAX 1024

/* Set the current error message (printf-style). Always returns -1 so callers can write
 * `return tz_err("...")`. Newlines in the message are replaced by spaces (one line). */
int tz_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prepend "<prefix>: " to the current message (e.g. the file being loaded). Returns -1. */
int tz_err_prefix(const char *prefix);
/* The current error message ("" when none). */
const char *tz_errmsg(void);
/* Clear the current error message. */
void tz_err_clear(void);

/* Abort with file:line for a broken internal invariant (a bug, never bad user input). */
#define TZ_ASSERT(cond)                                                        \
  do {                                                                         \
    if (!(cond)) tz_panic(__FILE__, __LINE__, #cond);                          \
  } while (0)
_Noreturn void tz_panic(const char *file, int line, const char *what);

/* An unrecoverable error (out of host memory, a lost GPU device): print "tezgah: error: <msg>"
 * and end the process. The library never calls exit(): without a handler it aborts; the CLI
 * installs one that exits with status 1 (tz_set_fatal_handler). */
_Noreturn void tz_fatal(const char *msg);
void tz_set_fatal_handler(void (*handler)(const char *msg));

/* malloc/calloc that abort with a message on out-of-memory (host memory is not a user error
 * we can recover from mid-step). Size in bytes. */
void *tz_malloc(size_t bytes);
void *tz_calloc(size_t n, size_t size);
void *tz_realloc(void *p, size_t bytes);
char *tz_strdup(const char *s);

#endif
