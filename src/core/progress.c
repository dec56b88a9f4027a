#include "core/progress.h"

#include <math.h>
#include <stdio.h>

void tz_fmt_rate(char *buf, size_t n, double tok_s) {
  if (!isfinite(tok_s) || tok_s < 0) tok_s = 0;
  if (tok_s >= 1e6) snprintf(buf, n, "%.2fM", tok_s / 1e6);
  else if (tok_s >= 1e4) snprintf(buf, n, "%.1fk", tok_s / 1e3);
  else snprintf(buf, n, "%.0f", tok_s);
}

void tz_fmt_eta(char *buf, size_t n, double s) {
  if (!isfinite(s) || s < 0) s = 0;
  if (s > 359999) s = 359999;
  int h = (int)(s / 3600), mi = (int)(s / 60) % 60, se = (int)s % 60;
  if (h) snprintf(buf, n, "%dh%02dm", h, mi);
  else snprintf(buf, n, "%dm%02ds", mi, se);
}
