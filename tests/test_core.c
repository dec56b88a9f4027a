/* Core helpers: RNG determinism and distribution, atomic file writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/rng.h"
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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_rng), cmocka_unit_test(test_atomic_write)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
