#include "cli/args.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "checkpoint/run_ckpt.h"
#include "core/decimal.h"
#include "core/error.h"
#include "core/fileio.h"

/* Decimal notation only (core/decimal.h): strtol / strtod alone would also take leading blanks,
 * strtol's base 0 and strtod's hex floats ("0x10" = 16), "inf" and "nan". Every value that is not
 * decimal notation gets the same words, whatever is wrong with it (" 5", "5 ", "0x10", "ten"),
 * so that the message says what is wanted rather than guessing what was meant. */
static int decimal(const char *s, int frac) { return tz_decimal(s, strlen(s), frac); }

int tz_arg_int_why(const char *flag, const char *s, long min, long max, const char *why, int *out) {
  if (!decimal(s, 0)) return tz_err("%s: '%s' is not a decimal integer", flag, s);
  errno = 0;
  long v = strtol(s, NULL, 10); /* base 10: "010" is 10, not octal 8 */
  const char *o = why ? " (" : "", *w = why ? why : "", *c = why ? ")" : "";
  if (errno) return tz_err("%s: %s is out of range [%ld, %ld]%s%s%s", flag, s, min, max, o, w, c); /* beyond a long */
  if (v < min || v > max) return tz_err("%s: %ld is out of range [%ld, %ld]%s%s%s", flag, v, min, max, o, w, c);
  *out = (int)v;
  return 0;
}

int tz_arg_int(const char *flag, const char *s, long min, long max, int *out) {
  return tz_arg_int_why(flag, s, min, max, NULL, out);
}

int tz_arg_u64(const char *flag, const char *s, uint64_t *out) {
  if (*s == '-') return tz_err("%s: '%s' must not be negative", flag, s);
  if (!decimal(s, 0)) return tz_err("%s: '%s' is not a non-negative decimal integer", flag, s);
  errno = 0;
  unsigned long long v = strtoull(s, NULL, 10);
  if (errno) return tz_err("%s: %s is out of range (max %llu)", flag, s, (unsigned long long)UINT64_MAX);
  *out = v;
  return 0;
}

int tz_arg_float(const char *flag, const char *s, double min, double max, float *out) {
  if (!decimal(s, 1)) {
    const char *w = s + (*s == '+' || *s == '-');
    /* a value strtod reads as infinite: the range says what is meant instead */
    if (!strcasecmp(w, "inf") || !strcasecmp(w, "infinity"))
      return tz_err("%s: '%s' is not finite (give a number in [%g, %g])", flag, s, min, max);
    return tz_err("%s: '%s' is not a decimal number (digits, '.', an exponent: 3e-4)", flag, s);
  }
  errno = 0;
  double v = strtod(s, NULL);
  /* beyond a double (1e999): out of range; an underflow (1e-999) is its rounded value, 0 or
   * subnormal, and the range check below judges that */
  if (errno == ERANGE && isinf(v)) return tz_err("%s: %s is out of range [%g, %g]", flag, s, min, max);
  if (v < min || v > max) return tz_err("%s: %g is out of range [%g, %g]", flag, v, min, max);
  *out = (float)v;
  return 0;
}

/* The long option that `arg` ("--name" or "--name=value", possibly an abbreviation) names:
 * its entry in `longopts` when exactly one option starts with that prefix, else NULL. */
static const struct option *long_match(const struct option *longopts, const char *arg, int *n_match) {
  const char *name = arg + 2;
  size_t len = strcspn(name, "=");
  const struct option *hit = NULL;
  *n_match = 0;
  for (const struct option *o = longopts; o && o->name; o++) {
    if (strncmp(o->name, name, len)) continue;
    if (strlen(o->name) == len) { /* exact: wins over any longer option with this prefix */
      *n_match = 1;
      return o;
    }
    if (!hit || hit->has_arg != o->has_arg || hit->flag != o->flag || hit->val != o->val) ++*n_match; /* getopt's rule */
    hit = o;
  }
  return *n_match == 1 ? hit : NULL;
}

int tz_arg_bad(const char *cmd, const struct option *longopts, int argc, char **argv, int optind_, int optopt_,
               int missing) {
  const char *arg = optind_ - 1 < argc && optind_ > 0 ? argv[optind_ - 1] : "?";
  int is_long = !strncmp(arg, "--", 2) && arg[2] && arg[2] != '=', n = 0;
  const struct option *o = is_long ? long_match(longopts, arg, &n) : NULL;
  int len = is_long ? (int)strcspn(arg, "=") : 0;
  if (missing) {
    if (o) return tz_err("%s: option --%s needs a value (see tezgah %s --help)", cmd, o->name, cmd);
    return tz_err("%s: option %s needs a value (see tezgah %s --help)", cmd, arg, cmd);
  }
  /* getopt_long reports "--flag=value" for a flag without a value as '?' with optopt = the
   * option's val (above 255 for long-only options: not a character to print) */
  if (is_long && optopt_ && strchr(arg, '='))
    return tz_err("--%s: takes no value (got %s)", o ? o->name : "?", arg);
  if (is_long && n > 1) {
    char names[256] = "";
    size_t used = 0;
    for (const struct option *p = longopts; p->name && used < sizeof names - 40; p++)
      if (!strncmp(p->name, arg + 2, (size_t)len - 2))
        used += (size_t)snprintf(names + used, sizeof names - used, "%s--%s", used ? ", " : "", p->name);
    return tz_err("%s: option %.*s is ambiguous (%s; see tezgah %s --help)", cmd, len, arg, names, cmd);
  }
  if (!is_long && optopt_ > 0 && optopt_ < 256 && optopt_ != '?')
    return tz_err("%s: unknown option -%c (see tezgah %s --help)", cmd, optopt_, cmd);
  return tz_err("%s: unknown option %s (see tezgah %s --help)", cmd, arg, cmd);
}

int tz_cli_fail(void) {
  fprintf(stderr, "tezgah: error: %s\n", tz_errmsg());
  return 1;
}

int tz_arg_path(const char *what, const char *val) {
  /* '' reached the readers and writers as a path and came back as ": No such file or
   * directory", naming nothing, some of them after the whole work (convert --to hf --out '') */
  return val && !*val ? tz_err("%s: empty path", what) : 0;
}

/* what a model directory is read from: a run (tz_run_open), a Hugging Face directory
 * (tz_hf_load), a tokenizer directory (load_tok: tokenizer.json, tokenizer.bin) */
const char *const TZ_MODEL_DIR_FILES[] = {TZ_CKPT_FILE, "config.json", "model.safetensors",
                                          "model.safetensors.index.json", "tokenizer.json", "tokenizer.bin",
                                          NULL};

int tz_arg_list_add(const char *flag, const char **list, const char *val) {
  /* a value of commas and blanks alone names no path (it reached the reader as "no files
   * given (empty list ',')", naming no option) */
  if (!val[strspn(val, ", ")]) return tz_err("%s: '%s' names no path (a comma-separated list of files or globs)", flag, val);
  /* the value split as its readers will split it (tz_split_paths: a name with a comma that
   * exists is one entry). An empty entry ("a.txt,", "a,,b") was dropped without a word while
   * ',' alone was refused: refused too. A piece that names nothing, where the value split, was
   * reported by its reader as "b.txt: No such file or directory", not saying that the ',' split
   * it (the user may have meant one file "a,b.txt"): said here. */
  char **items;
  size_t ni;
  int empty = tz_split_paths(val, &items, &ni), rc = 0;
  if (empty)
    rc = tz_err("%s: '%s' has an empty entry (a comma-separated list of files or globs: remove the extra ',')", flag,
                val);
  for (size_t i = 0; i < ni && ni > 1 && !rc; i++)
    if (!tz_names_something(items[i]))
      rc = tz_err("'%s' (from splitting '%s %s' at ',') %s", items[i], flag, val,
                  strpbrk(items[i], "*?[") ? "matches no file" : "not found");
  tz_paths_free(items, ni);
  if (rc) return -1;
  /* every join kept in a static array (reachable, not a leak to valgrind): a command's options
   * point into them until it returns */
  static char **kept;
  static size_t n_kept;
  if (!*list) {
    *list = val;
    return 0;
  }
  size_t n = strlen(*list) + strlen(val) + 2;
  char *j = tz_malloc(n);
  snprintf(j, n, "%s,%s", *list, val);
  kept = tz_realloc(kept, (n_kept + 1) * sizeof *kept);
  kept[n_kept++] = j;
  *list = j;
  return 0;
}

int tz_arg_list_failed_missing(const char *list) {
  if (!list) return 0;
  char **items;
  size_t ni;
  tz_split_paths(list, &items, &ni);
  const char *msg = tz_errmsg();
  int hit = 0;
  for (size_t i = 0; i < ni && !hit; i++) {
    size_t l = strlen(items[i]);
    hit = !strncmp(msg, items[i], l) && msg[l] == ':' && !tz_names_something(items[i]);
  }
  tz_paths_free(items, ni);
  return hit;
}
