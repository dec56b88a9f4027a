/* Core helpers: RNG determinism and distribution, atomic file writes, the GPU backends' shared
 * profile totals and table (backend.c), strict decimal numbers, the UTF-8 stream of sample, path
 * lists (tz_split_paths, tz_expand_paths), the output-is-an-input refusal (tz_out_not_input) and
 * the stop signals' repeat rule (tz_stop_signal_seen), also under two threads at once. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/decimal.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/stop.h"
#include "core/utf8.h"
#include "testutil.h"

static void test_rng(void **state) {
  tz_rng a, b;
  tz_rng_seed(&a, 42, 0);
  tz_rng_seed(&b, 42, 0);
  for (int i = 0; i < 1000; i++) assert_int_equal(tz_rng_u32(&a), tz_rng_u32(&b));
  /* normal: mean ~0, var ~1 over 200k samples (tolerance ~5 sigma) */
  double s = 0, s2 = 0;
  int n = 200000;
  for (int i = 0; i < n; i++) {
    double x = tz_rng_normal(&a);
    s += x;
    s2 += x * x;
  }
  assert_true(fabs(s / n) < 0.012);
  assert_true(fabs(s2 / n - 1.0) < 0.02);
  for (int i = 0; i < 1000; i++) assert_true(tz_rng_below(&a, 7) < 7);
}

/* tz_rng_advance(k) lands where k draws land (k = 0 .. 3, odd and even, past 2^32 by
 * composition: advance(a); advance(b) equals advance(a + b)). */
static void test_rng_advance(void **state) {
  (void)state;
  uint64_t ks[] = {0, 1, 2, 3, 1000, 65537, 1234567};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    tz_rng a, b;
    tz_rng_seed(&a, 99, 0x7e29a4);
    b = a;
    for (uint64_t k = 0; k < ks[i]; k++) tz_rng_u32(&a);
    tz_rng_advance(&b, ks[i]);
    assert_true(a.state == b.state && a.inc == b.inc);
    assert_int_equal(tz_rng_u32(&a), tz_rng_u32(&b));
  }
  tz_rng a, b;
  tz_rng_seed(&a, 5, 3);
  b = a;
  tz_rng_advance(&a, 5000000000ULL);
  tz_rng_advance(&a, 7000000001ULL);
  tz_rng_advance(&b, 12000000001ULL);
  assert_true(a.state == b.state);
}

static void test_atomic_write(void **state) {
  char *dir = tz_test_tmpdir("core_atomic");
  char *p = tz_path_join(dir, "f.bin");
  assert_int_equal(tz_write_file_atomic(p, "hello", 5), 0);
  char *d;
  size_t n;
  assert_int_equal(tz_read_file(p, &d, &n), 0);
  assert_int_equal(n, 5);
  assert_memory_equal(d, "hello", 5);
  free(d);
  /* an unwritable location fails with a message naming the path */
  assert_int_not_equal(tz_write_file_atomic("/proc/nonexistent/x", "a", 1), 0);
  assert_non_null(strstr(tz_errmsg(), "/proc/nonexistent/x"));
  free(p);
  free(dir);
}

/* tz_path_join: one '/' between the parts whatever a ends with ("c7/" printed "c7//checkpoint.tzc"
 * in train --resume's messages); the root stays "/". */
static void test_path_join(void **state) {
  (void)state;
  const char *cases[][3] = {{"run", "x", "run/x"}, {"run/", "x", "run/x"}, {"run//", "x", "run/x"},
                            {"/", "x", "/x"}, {"//", "x", "/x"}, {"a/b/", "c.tzc", "a/b/c.tzc"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *p = tz_path_join(cases[i][0], cases[i][1]);
    assert_string_equal(p, cases[i][2]);
    free(p);
  }
}

/* The list tests' fixture: a new directory holding the files `names` (one byte each), made the
 * working directory; the previous one is written to cwd (cap bytes) for enter_back. */
static char *enter_dir_with(const char *tag, const char *const *names, size_t n, char *cwd, size_t cap) {
  char *dir = tz_test_tmpdir(tag);
  for (size_t i = 0; i < n; i++) {
    char *p = tz_path_join(dir, names[i]);
    assert_int_equal(tz_write_file_atomic(p, "t", 1), 0);
    free(p);
  }
  assert_non_null(getcwd(cwd, cap));
  assert_int_equal(chdir(dir), 0);
  return dir;
}
static void enter_back(char *dir, const char *cwd) {
  assert_int_equal(chdir(cwd), 0);
  free(dir);
}
/* fn(list) (tz_split_paths or tz_expand_paths) returns want_rc (tz_split_paths: the empty
 * entries it left out; tz_expand_paths: 0) and the entries want ('|' between) */
typedef int (*list_fn)(const char *, char ***, size_t *);
static void check_list(list_fn fn, const char *list, const char *want, int want_rc) {
  char **v;
  size_t n;
  int rc = fn(list, &v, &n);
  if (rc != want_rc) fprintf(stderr, "list '%s': returned %d, want %d (%s)\n", list, rc, want_rc, tz_errmsg());
  assert_int_equal(rc, want_rc);
  char got[256] = "";
  for (size_t i = 0; i < n; i++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "|" : "", v[i]);
  if (strcmp(got, want)) fprintf(stderr, "list '%s': got '%s', want '%s'\n", list, got, want);
  assert_string_equal(got, want);
  tz_paths_free(v, n);
}

/* tz_split_paths against lists worked out by hand, in a directory holding a, b.txt, "x,y.txt"
 * and "a,b.txt": commas split (spaces around entries and empty entries dropped, the latter
 * counted: the command line refuses them); a piece that
 * names nothing alone joins the following pieces into the longest run that names a file
 * ("x,y.txt"), or stays alone (its error comes from the reader); where both readings name files
 * the split wins ("a,b.txt" is a and b.txt: a repeated --data a --data b.txt joins to that
 * string); patterns count as names where they match. A list of 3,000 existing paths splits in
 * one check each (the longest-run-first rule took n²/2: 8 s at 3,000). */
static void test_split_paths(void **state) {
  (void)state;
  const char *files[] = {"a", "b.txt", "x,y.txt", "a,b.txt"};
  char cwd[4096];
  char *dir = enter_dir_with("core_split", files, 4, cwd, sizeof cwd);
  const struct { const char *list; const char *want; int empty; } cases[] = {
      {"a,b.txt", "a|b.txt", 0},       {" a , b.txt ,", "a|b.txt", 1}, {"a,,b.txt", "a|b.txt", 1},
      {"x,y.txt", "x,y.txt", 0},       {"a,x,y.txt,b.txt", "a|x,y.txt|b.txt", 0},
      {"nope,b.txt", "nope|b.txt", 0}, {"x,nope", "x|nope", 0},        {",", "", 2},
      {"*.txt,a", "*.txt|a", 0},       {"x,y.*", "x,y.*", 0},          {"a, ,,b.txt,", "a|b.txt", 3},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    check_list(tz_split_paths, cases[c].list, cases[c].want, cases[c].empty);
  /* names: a path as given, or a pattern that matches */
  assert_int_equal(tz_names_something("x,y.txt"), 1);
  assert_int_equal(tz_names_something("*.txt"), 1);
  assert_int_equal(tz_names_something("nope"), 0);
  assert_int_equal(tz_names_something("*.nope"), 0);
  /* 3,000 entries (each "a"): one entry each */
  size_t big = 3000;
  char *list = malloc(2 * big);
  for (size_t i = 0; i < big; i++) list[2 * i] = 'a', list[2 * i + 1] = i + 1 < big ? ',' : 0;
  char **v;
  size_t n;
  assert_int_equal(tz_split_paths(list, &v, &n), 0);
  assert_int_equal(n, big);
  tz_paths_free(v, n);
  free(list);
  enter_back(dir, cwd);
}

/* tz_expand_paths: an entry that exists as given is that file even with glob characters in its
 * name ("a[1].txt" read as the pattern a1.txt: no match, or silently the other file a1.txt);
 * only an entry that is not there is a pattern ("b[1].txt", missing, matches b1.txt; "c[1].txt"
 * matches nothing). A comma and glob characters together: "k[0],z.txt" exists, one entry. */
static void test_expand_paths_literal(void **state) {
  (void)state;
  const char *files[] = {"a[1].txt", "a1.txt", "b1.txt", "k[0],z.txt"};
  char cwd[4096];
  char *dir = enter_dir_with("core_expand_literal", files, 4, cwd, sizeof cwd);
  const struct { const char *list; const char *want; } cases[] = {
      {"a[1].txt", "a[1].txt"}, {"b[1].txt", "b1.txt"},         {"*1.txt", "a1.txt|b1.txt"},
      {"a1.txt,a[1].txt", "a1.txt|a[1].txt"},                    {"k[0],z.txt", "k[0],z.txt"},
      {"a[1].txt,k[0],z.txt", "a[1].txt|k[0],z.txt"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) check_list(tz_expand_paths, cases[c].list, cases[c].want, 0);
  char **v;
  size_t n;
  assert_int_equal(tz_expand_paths("c[1].txt", &v, &n), -1);
  assert_string_equal(tz_errmsg(), "c[1].txt: no files match");
  enter_back(dir, cwd);
}

/* tz_same_file / tz_out_not_input / tz_out_not_in_list / tz_list_repeats: an existing output that is an input
 * (the same path, another spelling of it, a hard link, a listed or globbed input, a file of an
 * input directory named in dir_files) is refused naming both; a missing output, another file,
 * stdin ("-") and a NULL input are not. */
static void test_out_not_input(void **state) {
  (void)state;
  char *dir = tz_test_tmpdir("core_out_in");
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(dir), 0);
  assert_int_equal(tz_write_file_atomic("in.txt", "t", 1), 0);
  assert_int_equal(tz_write_file_atomic("other.txt", "t", 1), 0);
  assert_int_equal(tz_mkdirs("run"), 0);
  assert_int_equal(tz_write_file_atomic("run/checkpoint.tzc", "t", 1), 0);
  assert_int_equal(link("in.txt", "hard.txt"), 0);
  assert_int_equal(tz_same_file("in.txt", "./in.txt"), 1);
  assert_int_equal(tz_same_file("in.txt", "hard.txt"), 1);
  assert_int_equal(tz_same_file("in.txt", "other.txt"), 0);
  assert_int_equal(tz_same_file("missing", "missing"), 0);
  assert_int_equal(tz_out_not_input("--out", "./in.txt", "--in", "in.txt", NULL), -1);
  assert_string_equal(tz_errmsg(), "--out: './in.txt' is the same file as --in 'in.txt', which this command reads: "
                                   "give another path (writing it would replace the input)");
  assert_int_equal(tz_out_not_input("--out", "hard.txt", "--in", "in.txt", NULL), -1);
  assert_int_equal(tz_out_not_input("--out", "other.txt", "--in", "in.txt", NULL), 0);
  assert_int_equal(tz_out_not_input("--out", "new.txt", "--in", "in.txt", NULL), 0);
  assert_int_equal(tz_out_not_input("--out", "in.txt", "--in", "-", NULL), 0);
  assert_int_equal(tz_out_not_input("--out", "in.txt", "--in", NULL, NULL), 0);
  const char *const names[] = {"checkpoint.tzc", NULL};
  assert_int_equal(tz_out_not_input("--json", "run/checkpoint.tzc", "the model", "run", names), -1);
  assert_non_null(strstr(tz_errmsg(), "the model 'run/checkpoint.tzc'"));
  assert_int_equal(tz_out_not_input("--json", "run/checkpoint.tzc", "the model", "run", NULL), 0);
  assert_int_equal(tz_out_not_in_list("--json", "in.txt", "--data", "other.txt,i*.txt"), -1);
  assert_string_equal(tz_errmsg(), "--json: 'in.txt' is the same file as --data 'in.txt', which this command reads: "
                                   "give another path (writing it would replace the input)");
  assert_int_equal(tz_out_not_in_list("--json", "in.txt", "--data", "other.txt"), 0);
  assert_int_equal(tz_out_not_in_list("--json", "in.txt", "--data", "nomatch*.txt"), 0); /* the reader's error */
  /* tz_list_repeats: one line for each file a list reads more than once (another spelling, a
   * hard link, a glob's match), named as first listed; none for a list without repeats, or one
   * that does not expand (no error left set: its reader says it) */
  char *notes = tz_list_repeats("eval: ", "--data", "in.txt,other.txt,./in.txt,hard.txt");
  assert_string_equal(notes, "eval: note: --data: in.txt is listed 3 times and is read 3 times (list it once to read "
                             "it once)\n");
  free(notes);
  notes = tz_list_repeats("", "--train-shards", "o*.txt,in.txt,other.txt,./hard.txt");
  assert_string_equal(notes, "note: --train-shards: other.txt is listed 2 times and is read 2 times (list it once to "
                             "read it once)\nnote: --train-shards: in.txt is listed 2 times and is read 2 times (list it "
                             "once to read it once)\n");
  free(notes);
  assert_null(tz_list_repeats("", "--data", "in.txt,other.txt"));
  assert_null(tz_list_repeats("", "--data", "in.txt,nomatch*.txt"));
  assert_string_equal(tz_errmsg(), "");
  assert_int_equal(chdir(cwd), 0);
  free(dir);
}

/* tz_prof_totals: rows found by pointer or string, the last row "(other)" once all are taken,
 * clear keeps the labels, and the printed table (expected lines worked out by hand: ms/step =
 * ns / 1e6 / steps, share of the summed ns, GFLOP/s = flop / ns, GB/s = bytes / ns) leaves out
 * rows that did not run. */
static void test_profile_totals(void **state) {
  tz_prof_totals *t = calloc(1, sizeof *t);
  char name[8] = "add";
  int mm = tz_prof_label(t, "matmul"), add = tz_prof_label(t, "add");
  assert_int_equal(tz_prof_label(t, name), add); /* same string, other pointer */
  int unused = tz_prof_label(t, "unused");
  assert_int_equal(t->n, 3);
  t->row[mm].ns = 3e6, t->row[mm].calls = 4, t->row[mm].flop = 6e9;
  t->row[add].ns = 1e6, t->row[add].calls = 2, t->row[add].bytes = 4e6;
  (void)unused;
  char *dir = tz_test_tmpdir("core_prof");
  char *p = tz_path_join(dir, "err.txt");
  fflush(stderr);
  int saved = dup(2);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  dup2(fileno(f), 2);
  tz_prof_print(t, "test profile (unit", 2);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  fclose(f);
  char *d;
  size_t n;
  assert_int_equal(tz_read_file(p, &d, &n), 0);
  const char *want = "test profile (unit, per step over 2 steps):\n"
                     "  kernel                ms/step    calls   share         rate\n"
                     "  matmul                  1.500        2   75.0% 2000.0 GFLOP/s\n"
                     "  add                     0.500        1   25.0%     4.0 GB/s\n"
                     "  total                   2.000\n";
  assert_int_equal(n, strlen(want));
  assert_memory_equal(d, want, n);
  free(d);
  assert_int_equal(tz_prof_label(t, "matmul"), mm); /* printing left the rows in place */
  tz_prof_clear(t);
  assert_true(t->row[mm].ns == 0 && t->row[mm].calls == 0 && t->row[mm].flop == 0 && t->row[add].bytes == 0);
  assert_int_equal(tz_prof_label(t, "add"), add);
  /* fill every row: the last is "(other)" and takes the labels beyond */
  static char names[TZ_PROF_LABELS + 2][8];
  for (int i = 0; i < TZ_PROF_LABELS + 2; i++) {
    snprintf(names[i], sizeof names[i], "op%d", i);
    int r = tz_prof_label(t, names[i]);
    assert_true(r < TZ_PROF_LABELS);
    if (3 + i >= TZ_PROF_LABELS - 1) assert_int_equal(r, TZ_PROF_LABELS - 1);
  }
  assert_int_equal(t->n, TZ_PROF_LABELS);
  assert_string_equal(t->row[TZ_PROF_LABELS - 1].label, "(other)");
  free(p);
  free(dir);
  free(t);
}

/* core/decimal.h: decimal notation only, the same answer for a blank before or after, a length
 * that ends an item of a list, longs beyond range refused. */
static void test_decimal(void **state) {
  (void)state;
  static const char *ints[] = {"0", "5", "-12", "010", "9223372036854775807"};
  /* a leading '+' too: numbers as written back, the README's "decimal only" (--steps +5 passed) */
  static const char *not_ints[] = {"", " 5", "5 ", "\t5", "5\n", "+", "-", "+7", "0x10", "1.5", "1e3", "five", "5,"};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) assert_int_equal(tz_decimal(ints[i], strlen(ints[i]), 0), 1);
  for (size_t i = 0; i < sizeof not_ints / sizeof *not_ints; i++)
    assert_int_equal(tz_decimal(not_ints[i], strlen(not_ints[i]), 0), 0);
  static const char *nums[] = {"1.5", ".5", "5.", "-2e-3", "3E+4", "7"};
  static const char *not_nums[] = {".", "e3", "1e", "1e+", " 0.1", "0.1 ", "+0.1", "+.5", "inf", "nan", "0x1p3",
                                   "1..2", "1e3.5"};
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) assert_int_equal(tz_decimal(nums[i], strlen(nums[i]), 1), 1);
  for (size_t i = 0; i < sizeof not_nums / sizeof *not_nums; i++)
    assert_int_equal(tz_decimal(not_nums[i], strlen(not_nums[i]), 1), 0);
  long v = 0;
  assert_int_equal(tz_decimal_long("3,7", 1, &v), 0); /* the first item of a list */
  assert_int_equal(v, 3);
  assert_int_equal(tz_decimal_long("-42", 3, &v), 0);
  assert_int_equal(v, -42);
  assert_int_equal(tz_decimal_long(" 3", 2, &v), -1);
  assert_int_equal(tz_decimal_long("3 ", 2, &v), -1);
  assert_int_equal(tz_decimal_long("", 0, &v), -1);
  assert_int_equal(tz_decimal_long("9223372036854775808", 19, &v), -1); /* LONG_MAX + 1 */
  assert_int_equal(v, -42);                                            /* untouched on failure */
  /* any length (a 32-byte copy for strtol refused 32 characters and more until 2026-12-03) */
  static const struct { const char *s; long v; } longs[] = {
      {"0000000000000000000000000000000000000005", 5},
      {"-0000000000000000000000000000000000000000000000000009223372036854775808", -9223372036854775807L - 1},
      {"000000000000000000000000000000000000009223372036854775807", 9223372036854775807L},
      {"00000000000000000000000000000000000000000000000000000000000000000000000000000000", 0},
      {"-0", 0}, {"010", 10}};
  for (size_t i = 0; i < sizeof longs / sizeof *longs; i++) {
    v = 1;
    assert_int_equal(tz_decimal_long(longs[i].s, strlen(longs[i].s), &v), 0);
    assert_true(v == longs[i].v);
  }
  assert_int_equal(tz_decimal_long("+5", 2, &v), -1);
  static const char *too_big[] = {"-9223372036854775809", "00000000000000000000000000000000009223372036854775808",
                                  "99999999999999999999999999999999999999", "-99999999999999999999999999999999999999"};
  for (size_t i = 0; i < sizeof too_big / sizeof *too_big; i++) {
    v = 7;
    assert_int_equal(tz_decimal_long(too_big[i], strlen(too_big[i]), &v), -1);
    assert_true(v == 7);
  }
  /* a long list item: the length given ends it */
  const char *list = "000000000000000000000000000000000000012,7";
  assert_int_equal(tz_decimal_long(list, 39, &v), 0);
  assert_true(v == 12);
}

/* s[0..n) through a tz_utf8_stream in writes of `chunk` bytes (0: one write), the end included:
 * the bytes printed, a malloc'd buffer of *len bytes; *dropped: what the end dropped. */
static char *stream_text(const char *s, size_t n, size_t chunk, size_t *len, int *dropped) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  assert_non_null(f);
  tz_utf8_stream u = {0};
  for (size_t i = 0; i < n; i += chunk ? chunk : n) {
    size_t k = chunk && chunk < n - i ? chunk : n - i;
    tz_utf8_stream_write(&u, s + i, k, f);
  }
  *dropped = tz_utf8_stream_end(&u);
  fclose(f);
  assert_true(u.written == *len);
  return buf;
}

/* tz_f32_str: the shortest %g that reads back as the same float32 (info's options) */
static void test_f32_str(void **state) {
  (void)state;
  char b[TZ_F32_STR];
  static const struct { float v; const char *s; } cases[] = {
      {0.003f, "0.003"}, {0.1f, "0.1"}, {0.9f, "0.9"}, {0.95f, "0.95"}, {1e-8f, "1e-08"}, {1.0f, "1"},
      {3e-4f, "0.0003"}, {-2.5f, "-2.5"}, {0.0f, "0"}, {16777216.0f, "16777216"}, {1e10f, "1e+10"}, {10000.0f, "10000"}, {150000.0f, "150000"}, {1e6f, "1e+06"},
      {0.100000009f, "0.10000001"}, /* the float after 0.1f: eight digits tell it from 0.1f */
      {3.40282347e38f, "3.4028235e+38"}, {1.17549435e-38f, "1.1754944e-38"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) assert_string_equal(tz_f32_str(cases[i].v, b), cases[i].s);
  /* every printed value reads back exactly, over a spread of bit patterns */
  for (uint32_t u = 0x00800000u; u < 0x7f800000u; u += 0x00012345u) {
    float f;
    memcpy(&f, &u, sizeof f);
    assert_true(strtof(tz_f32_str(f, b), NULL) == f);
    assert_true(strlen(b) <= 15);
  }
}

/* tz_utf8_stream: expected outputs worked out by hand from the Unicode Standard's table 3-7
 * (well-formed byte sequences) and its maximal-subpart rule (one U+FFFD per subpart: the lead
 * byte and the continuation bytes that still fit it), as Python's bytes.decode("utf-8",
 * "replace") prints them; the same output however the bytes are cut into writes; an unfinished
 * character at the end dropped; random bytes always come out valid UTF-8. */
static void test_utf8_stream(void **state) {
  (void)state;
#define R "\xEF\xBF\xBD" /* U+FFFD */
  static const struct { const char *in, *out; int dropped; } cases[] = {
      {"plain ascii", "plain ascii", 0},
      {"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80!", "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80!", 0},
      {"a\x80" "b", "a" R "b", 0},                /* a stray continuation byte */
      {"\xE2\x82", "", 2},                        /* unfinished at the end: dropped */
      {"x\xF0\x9F\x98", "x", 3},
      {"\xE2\x82" "a", R "a", 0},                 /* broken off: one U+FFFD for E2 82 */
      {"\xE2\xE2\x82\xAC", R "\xE2\x82\xAC", 0}, /* the breaking byte starts a character */
      {"\xC0\xAF", R R, 0},                       /* overlong lead bytes are never valid */
      {"\xE0\x80\x80", R R R, 0},                 /* E0 takes A0..BF next */
      {"\xED\xA0\x80", R R R, 0},                 /* a surrogate (ED A0..BF) */
      {"\xED\x9F\xBF", "\xED\x9F\xBF", 0},      /* U+D7FF, just below */
      {"\xF0\x80\x80\x80", R R R R, 0},           /* F0 takes 90..BF next */
      {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF", 0}, /* U+10FFFF */
      {"\xF4\x90\x80\x80", R R R R, 0},           /* above U+10FFFF */
      {"\xF5\xFF\xFE", R R R, 0},
      {"\xF0\x9F\x98" "a\xF0\x9F", R "a", 2},
  };
#undef R
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    size_t n = strlen(cases[c].in);
    for (size_t chunk = 0; chunk <= n; chunk++) {
      size_t len;
      int dropped;
      char *got = stream_text(cases[c].in, n, chunk, &len, &dropped);
      if (len != strlen(cases[c].out) || memcmp(got, cases[c].out, len) || dropped != cases[c].dropped)
        fail_msg("case %zu, writes of %zu bytes: %zu bytes out, %d dropped", c, chunk, len, dropped);
      free(got);
    }
  }
  /* random bytes, mostly 0x80..0xFF: valid UTF-8 out, the same for one write and byte by byte */
  tz_rng r;
  tz_rng_seed(&r, 7, 0);
  unsigned char in[64];
  for (int t = 0; t < 2000; t++) {
    size_t n = 1 + tz_rng_below(&r, sizeof in);
    for (size_t i = 0; i < n; i++) in[i] = (unsigned char)(tz_rng_below(&r, 4) ? 0x80 + tz_rng_below(&r, 128) : tz_rng_below(&r, 128));
    size_t l1, l2;
    int d1, d2;
    char *a = stream_text((const char *)in, n, 0, &l1, &d1), *b = stream_text((const char *)in, n, 1, &l2, &d2);
    assert_true(l1 == l2 && d1 == d2 && !memcmp(a, b, l1));
    assert_true(tz_utf8_invalid_at((const unsigned char *)a, l1) == -1);
    if (tz_utf8_invalid_at(in, n) == -1) assert_true(l1 == n && !memcmp(a, in, n)); /* valid text unchanged */
    free(a);
    free(b);
  }
}

/* core/stop.h's repeat rule, against its statement: the same signal from the same sender within a
 * second is a repeat; another signal, sender, or a terminal's (SI_KERNEL) is not; keep_sender 0
 * records none; tz_stop_clear starts over. */
static siginfo_t sig_from(int signo, int code, pid_t pid) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = signo, si.si_code = code, si.si_pid = pid;
  return si;
}
static void test_stop_signal_seen(void **state) {
  (void)state;
  siginfo_t a = sig_from(SIGINT, SI_USER, 4242), term = sig_from(SIGTERM, SI_USER, 4242),
            other = sig_from(SIGINT, SI_USER, 4243), tty = sig_from(SIGINT, SI_KERNEL, 0);
  tz_stop_clear();
  assert_int_equal(tz_stop_signal_seen(&a, 1), TZ_STOP_SIG_FIRST);
  assert_int_equal(tz_stop_signal_seen(&a, 1), TZ_STOP_SIG_REPEAT);
  assert_int_equal(tz_stop_signal_seen(&a, 1), TZ_STOP_SIG_REPEAT);
  assert_int_equal(tz_stop_signal_seen(&term, 1), TZ_STOP_SIG_AGAIN);
  assert_int_equal(tz_stop_signal_seen(&other, 1), TZ_STOP_SIG_AGAIN);
  assert_int_equal(tz_stop_signal_seen(NULL, 1), TZ_STOP_SIG_AGAIN);
  tz_stop_clear();
  assert_int_equal(tz_stop_signal_seen(&tty, 1), TZ_STOP_SIG_FIRST);
  assert_int_equal(tz_stop_signal_seen(&tty, 1), TZ_STOP_SIG_AGAIN);
  tz_stop_clear();
  assert_int_equal(tz_stop_signal_seen(&a, 0), TZ_STOP_SIG_FIRST); /* no sender kept */
  assert_int_equal(tz_stop_signal_seen(&a, 0), TZ_STOP_SIG_AGAIN);
  tz_stop_clear();
}

/* Two threads see one signal each at the same instant (timeout(1)'s two SIGINTs handled on two
 * threads): exactly one is FIRST and the other its REPEAT, every time. A check of "no first yet"
 * followed by a separate record would let both be FIRST, or the second read a half-made record
 * and call it AGAIN (a kill without a checkpoint). The two calls start together: both spin on an
 * atomic count of arrivals (a pthread barrier wakes its second thread microseconds late: the calls
 * rarely overlapped), then wait a few loop turns that differ from round to round, so that the
 * two calls' offset sweeps across the few nanoseconds in which they overlap. */
enum { STOP_RACE_ROUNDS = 20000 };
static atomic_int g_race_in, g_race_done, g_race_kind;
static const siginfo_t *g_race_si;
static void race_wait(atomic_int *v, int want) { /* spin, yielding now and then (a busy 2-core machine) */
  for (unsigned i = 1; atomic_load(v) < want; i++)
    if (!(i & 1023)) sched_yield();
}
static int race_call(int r, int who) { /* both threads in, then a round's own delay, then the call */
  atomic_fetch_add(&g_race_in, 1);
  race_wait(&g_race_in, 2 * r);
  for (volatile int i = (r * 7 + who * 29) % 48; i > 0; i--) {
  }
  return tz_stop_signal_seen(g_race_si, 1);
}
static void *stop_racer(void *p) {
  (void)p;
  for (int r = 1; r <= STOP_RACE_ROUNDS; r++) {
    atomic_store(&g_race_kind, race_call(r, 1));
    atomic_store(&g_race_done, r); /* (its next arrival waits for main's, after main's tz_stop_clear) */
  }
  return NULL;
}
static void test_stop_signal_race(void **state) {
  (void)state;
  siginfo_t a = sig_from(SIGINT, SI_USER, 4242);
  g_race_si = &a;
  atomic_store(&g_race_in, 0);
  atomic_store(&g_race_done, 0);
  tz_stop_clear();
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, stop_racer, NULL), 0);
  int bad = 0;
  for (int r = 1; r <= STOP_RACE_ROUNDS; r++) {
    int k0 = race_call(r, 0);
    race_wait(&g_race_done, r);
    int k1 = atomic_load(&g_race_kind);
    bad += !((k0 == TZ_STOP_SIG_FIRST && k1 == TZ_STOP_SIG_REPEAT) || (k1 == TZ_STOP_SIG_FIRST && k0 == TZ_STOP_SIG_REPEAT));
    tz_stop_clear();
  }
  pthread_join(t, NULL);
  tz_stop_clear();
  if (bad) fail_msg("%d of %d rounds: not one FIRST and one REPEAT", bad, STOP_RACE_ROUNDS);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_rng), cmocka_unit_test(test_rng_advance), cmocka_unit_test(test_atomic_write), cmocka_unit_test(test_path_join), cmocka_unit_test(test_split_paths), cmocka_unit_test(test_expand_paths_literal),
                                     cmocka_unit_test(test_out_not_input),
                                     cmocka_unit_test(test_profile_totals), cmocka_unit_test(test_decimal), cmocka_unit_test(test_f32_str),
                                     cmocka_unit_test(test_utf8_stream), cmocka_unit_test(test_stop_signal_seen),
                                     cmocka_unit_test(test_stop_signal_race)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
