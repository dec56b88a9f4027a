/* Progress lines on stderr (train's step line, eval's batch line): one width rule and one way
 * to print rates and remaining times, so that every line fits an 80-column terminal. */
#ifndef TZ_CORE_PROGRESS_H
#define TZ_CORE_PROGRESS_H
#include <stddef.h>

/* A progress line never reaches an 80-column terminal's last column (where a terminal wraps). */
#define TZ_PROGRESS_COLS 79

/* Tokens per second with at most 6 characters: "812", "12.3k", "1.25M". */
void tz_fmt_rate(char *buf, size_t n, double tok_s);
/* Remaining seconds as "1m23s" or "2h05m" (capped at 99h59m; negative or not finite: 0m00s). */
void tz_fmt_eta(char *buf, size_t n, double s);
/* The plural ending of a count in a message: "s", or "" for 1 ("%d step%s", n, tz_plural(n)). */
static inline const char *tz_plural(long long n) { return n == 1 ? "" : "s"; }

#endif
