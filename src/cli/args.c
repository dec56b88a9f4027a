#include "cli/args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int tz_arg_int(const char *flag, const char *s, long min, long max, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno) return tz_err("%s: '%s' is not an integer", flag, s);
  if (v < min || v > max) return tz_err("%s: %ld is out of range [%ld, %ld]", flag, v, min, max);
  *out = (int)v;
  return 0;
}

int tz_arg_u64(const char *flag, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (*s == '-') return tz_err("%s: '%s' must not be negative", flag, s);
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno) return tz_err("%s: '%s' is not a non-negative integer", flag, s);
  *out = v;
  return 0;
}

int tz_arg_float(const char *flag, const char *s, double min, double max, float *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v)) return tz_err("%s: '%s' is not a number", flag, s);
  if (v < min || v > max) return tz_err("%s: %g is out of range [%g, %g]", flag, v, min, max);
  *out = (float)v;
  return 0;
}

int tz_arg_bad(const char *cmd, int argc, char **argv, int optind_, int optopt_, int missing) {
  const char *arg = optind_ - 1 < argc ? argv[optind_ - 1] : "?";
  if (missing) return tz_err("%s: option %s needs a value (see tezgah %s --help)", cmd, arg, cmd);
  if (optopt_ && optopt_ != '?') return tz_err("%s: unknown option -%c (see tezgah %s --help)", cmd, optopt_, cmd);
  return tz_err("%s: unknown option %s (see tezgah %s --help)", cmd, arg, cmd);
}

int tz_cli_fail(void) {
  fprintf(stderr, "tezgah: error: %s\n", tz_errmsg());
  return 1;
}
