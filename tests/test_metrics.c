/* metrics.jsonl writer: one object per line, append mode, partial-line repair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "data/metrics.h"
#include "testutil.h"

static void test_lines(void **state) {
  char *dir = tz_test_tmpdir("metrics");
  char *p = tz_path_join(dir, "metrics.jsonl");
  tz_metrics *m = tz_metrics_open(p, 0);
  assert_non_null(m);
  const char *keys[] = {"step", "loss"};
  double vals[] = {1, 2.5};
  assert_int_equal(tz_metrics_write_kv(m, 2, keys, vals), 0);
  /* flushed right away: visible before close */
  char *d;
  size_t n;
  assert_int_equal(tz_read_file(p, &d, &n), 0);
  assert_string_equal(d, "{\"step\":1,\"loss\":2.5}\n");
  free(d);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "step", 2);
  cJSON_AddStringToObject(o, "split", "val");
  assert_int_equal(tz_metrics_write(m, o), 0);
  cJSON_Delete(o);
  cJSON *arr = cJSON_CreateArray();
  assert_int_not_equal(tz_metrics_write(m, arr), 0);
  cJSON_Delete(arr);
  assert_int_equal(tz_metrics_close(m), 0);

  /* append after a crash mid-line: the partial line is dropped, the rest kept */
  FILE *f = fopen(p, "a");
  fputs("{\"step\":3,\"lo", f);
  fclose(f);
  m = tz_metrics_open(p, 1);
  assert_non_null(m);
  vals[0] = 3;
  assert_int_equal(tz_metrics_write_kv(m, 1, keys, vals), 0);
  assert_int_equal(tz_metrics_close(m), 0);
  assert_int_equal(tz_read_file(p, &d, &n), 0);
  assert_string_equal(d, "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"split\":\"val\"}\n{\"step\":3}\n");
  free(d);
  /* append == 0 truncates */
  m = tz_metrics_open(p, 0);
  assert_int_equal(tz_metrics_close(m), 0);
  assert_int_equal(tz_read_file(p, &d, &n), 0);
  assert_int_equal(n, 0);
  free(d);
  /* missing directory */
  char *bad = tz_path_join(dir, "nodir/m.jsonl");
  assert_null(tz_metrics_open(bad, 1));
  assert_non_null(strstr(tz_errmsg(), bad));
  free(bad);
  free(p);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_lines)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
