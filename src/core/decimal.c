#include "core/decimal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tz_decimal(const char *s, size_t n, int frac) {
  const char *p = s, *e = s + n;
  if (p < e && (*p == '+' || *p == '-')) p++;
  size_t d = 0;
  while (p < e && *p >= '0' && *p <= '9') p++, d++;
  if (frac && p < e && *p == '.') {
    p++;
    while (p < e && *p >= '0' && *p <= '9') p++, d++;
  }
  if (!d) return 0;
  if (frac && p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    size_t x = 0;
    while (p < e && *p >= '0' && *p <= '9') p++, x++;
    if (!x) return 0;
  }
  return p == e;
}

int tz_decimal_long(const char *s, size_t n, long *out) {
  if (!tz_decimal(s, n, 0)) return -1;
  char buf[32]; /* strtol needs a terminated string; a long has at most 20 characters */
  if (n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  errno = 0;
  long v = strtol(buf, NULL, 10);
  if (errno) return -1;
  *out = v;
  return 0;
}
