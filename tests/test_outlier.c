/* The z-score window behind --skip-loss-z / --skip-norm-z: no verdict before 16 values, the
 * z-score itself, the ring dropping the oldest value, and the JSON round trip. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "testutil.h"
#include "train/outlier.h"

static void test_min_count_and_z(void **state) {
  tz_outlier o = {0};
  for (int i = 0; i < TZ_OUTLIER_MIN - 1; i++) tz_outlier_push(&o, i % 2 ? 1.0 : 3.0);
  assert_true(isnan(tz_outlier_z(&o, 100.0)));
  tz_outlier_push(&o, 1.0); /* 16 values: eight 1s, eight 3s: mean 2, std 1 */
  assert_true(fabs(tz_outlier_z(&o, 5.0) - 3.0) < 1e-12);
  assert_true(fabs(tz_outlier_z(&o, 2.0)) < 1e-12);
  assert_true(isnan(tz_outlier_z(&o, NAN)));
  tz_outlier_push(&o, INFINITY); /* ignored */
  assert_int_equal(o.n, TZ_OUTLIER_MIN);
}

static void test_constant_window(void **state) {
  tz_outlier o = {0};
  for (int i = 0; i < 20; i++) tz_outlier_push(&o, 2.5);
  assert_true(tz_outlier_z(&o, 2.5) == 0.0);
  assert_true(isinf(tz_outlier_z(&o, 2.6)) && tz_outlier_z(&o, 2.6) > 0);
}

static void test_ring_and_json(void **state) {
  tz_outlier o = {0}, back;
  for (int i = 0; i < TZ_OUTLIER_WINDOW + 10; i++) tz_outlier_push(&o, i + 0.1);
  assert_int_equal(o.n, TZ_OUTLIER_WINDOW);
  cJSON *a = tz_outlier_to_json(&o);
  assert_int_equal(cJSON_GetArraySize(a), TZ_OUTLIER_WINDOW);
  assert_true(cJSON_GetArrayItem(a, 0)->valuedouble == 10.1); /* the oldest kept */
  char *txt = cJSON_PrintUnformatted(a);
  cJSON *b = cJSON_Parse(txt);
  assert_int_equal(tz_outlier_from_json(b, "x", "loss_window", &back), 0);
  assert_true(tz_outlier_z(&back, 200.0) == tz_outlier_z(&o, 200.0));
  tz_outlier_push(&back, 1.0);
  tz_outlier_push(&o, 1.0);
  assert_true(tz_outlier_z(&back, 7.0) == tz_outlier_z(&o, 7.0));
  cJSON *bad = cJSON_Parse("[1, \"x\"]");
  assert_int_equal(tz_outlier_from_json(bad, "ck.tzc", "loss_window", &back), -1);
  assert_non_null(strstr(tz_errmsg(), "ck.tzc: training state field 'loss_window'"));
  cJSON_Delete(bad);
  cJSON_Delete(a);
  cJSON_Delete(b);
  free(txt);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_min_count_and_z), cmocka_unit_test(test_constant_window),
                                     cmocka_unit_test(test_ring_and_json)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
