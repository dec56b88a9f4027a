#include "core/decimal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tz_decimal(const char *s, size_t n, int frac) {
  const char *p = s, *e = s + n;
  /* a leading '-' only: "+5" is not how a number is written back (info, metrics, the README),
   * and the options' numbers are "decimal only" as written; an exponent keeps its '+' ("3e+4",
   * as printf's %g writes it) */
  if (p < e && *p == '-') p++;
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
  /* digit by digit (no copy for strtol: a value of any length, "000...05" too), the sum kept
   * on the value's own side of zero so that LONG_MIN, whose magnitude is LONG_MAX + 1, fits */
  int neg = s[0] == '-';
  size_t i = (size_t)neg;
  long v = 0;
  for (; i < n; i++) {
    int d = s[i] - '0';
    if (neg) {
      if (v < LONG_MIN / 10 || (v == LONG_MIN / 10 && d > -(LONG_MIN % 10))) return -1;
      v = v * 10 - d;
    } else {
      if (v > LONG_MAX / 10 || (v == LONG_MAX / 10 && d > LONG_MAX % 10)) return -1;
      v = v * 10 + d;
    }
  }
  *out = v;
  return 0;
}

char *tz_f32_str(float v, char *buf) {
  if (!isfinite(v)) { /* strtof reads these back too, but not as equal (nan) */
    snprintf(buf, TZ_F32_STR, "%g", (double)v);
    return buf;
  }
  for (int n = 1; n <= 9; n++) {
    snprintf(buf, TZ_F32_STR, "%.*g", n, (double)v);
    if (strtof(buf, NULL) == v) break; /* -0 reads back as -0 (== 0): "%.1g" printed it "-0" */
  }
  /* a whole number below 1e6 in full, as %g writes it: "10000", not "1e+04" (a tie in length) */
  char w[TZ_F32_STR];
  if (strstr(buf, "e+") && fabsf(v) < 1e6f && snprintf(w, sizeof w, "%.0f", (double)v) > 0 && strtof(w, NULL) == v)
    memcpy(buf, w, sizeof w);
  return buf;
}
