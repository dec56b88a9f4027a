/* tz_expf (src/kernels/common/fastmath.h) against double-precision exp: relative error below
 * 3e-7 (≈ 2.5 ulp) over [-87, 88], exact 0 below the float range, NaN propagated. */
#include <math.h>
#include <stdio.h>

#include "kernels/common/fastmath.h"
#include "testutil.h"

static void test_expf(void **s) {
  double worst = 0;
  for (int i = 0; i <= 2000000; i++) {
    float x = -87.0f + 175.0f * (float)i / 2000000.0f;
    double ref = exp((double)x), got = tz_expf(x);
    double rel = fabs(got - ref) / ref;
    if (rel > worst) worst = rel;
  }
  printf("tz_expf worst relative error on [-87, 88]: %.3g\n", worst);
  assert_true(worst < 3e-7);
  assert_true(tz_expf(-1000.0f) == 0.0f);
  assert_true(tz_expf(0.0f) == 1.0f);
  assert_true(isnan(tz_expf(NAN)));
  assert_true(isnan(tz_expf(-NAN)));
  assert_true(tz_expf(INFINITY) > 1e38f);
  assert_true(tz_expf(-INFINITY) == 0.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_expf)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
