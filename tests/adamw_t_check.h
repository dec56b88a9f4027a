/* tz_model_adamw refuses a step t < 1 on any backend (issue 12): bias correction divides by
 * 1 − β^t, so t = 0 would write NaN into every parameter. Checks: t = 0 and t = −3 return an
 * error naming t and leave the parameters bit-identical; t = 1 then updates them, all finite.
 * Header-only so tests/CMakeLists.txt needs no change. */
#ifndef TZ_ADAMW_T_CHECK_H
#define TZ_ADAMW_T_CHECK_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"
#include "model/model.h"
#include "testutil.h"

static inline void adamw_t_check(tz_backend *be) {
  tz_config c = {0};
  c.arch = TZ_ARCH_LLAMA, c.n_layer = 1, c.n_head = 2, c.d_model = 16, c.vocab_size = 37, c.max_seq_len = 8;
  assert_int_equal(tz_config_finalize(&c), 0);
  tz_model *m;
  assert_int_equal(tz_model_create(be, &c, &m), 0);
  tz_model_init_weights(m, 5);
  assert_int_equal(tz_model_alloc_training(m, 1, 8), 0);
  int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, tg[8] = {2, 3, 4, 5, 6, 7, 8, 9};
  tz_model_zero_grads(m);
  tz_model_train_micro(m, in, tg, 1.0f); /* nonzero gradients: an update would show */
  size_t n = m->lay.total;
  float *before = malloc(n * sizeof(float)), *after = malloc(n * sizeof(float));
  tz_model_get_params(m, before);
  const int bad[] = {0, -3};
  for (int i = 0; i < 2; i++) {
    tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, bad[i]};
    assert_int_not_equal(tz_model_adamw(m, &hp), 0);
    char want[32];
    snprintf(want, sizeof want, "t=%d", bad[i]);
    tz_test_assert_msg_has(want);
    print_message("  %s: t=%d refused: %s\n", be->name, bad[i], tz_errmsg());
    tz_model_get_params(m, after);
    assert_memory_equal(before, after, n * sizeof(float));
  }
  tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  assert_int_equal(tz_model_adamw(m, &hp), 0);
  tz_model_get_params(m, after);
  assert_memory_not_equal(before, after, n * sizeof(float));
  for (size_t i = 0; i < n; i++) assert_true(isfinite(after[i]));
  free(before), free(after);
  tz_model_free(m);
}

#endif
