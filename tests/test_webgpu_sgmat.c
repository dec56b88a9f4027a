/* The subgroup-matrix matmul (src/backend/webgpu/sgmat.h, matmul_sgmat.wgsl) and its choice.
 *  - tz_sgmat_pick over configuration lists (no GPU): the f16 × f16 → f32 16×16×16 entry or none;
 *  - the f16 conversion used to make the operands (bit patterns of known values);
 *  - on the adapter at hand: where the kernel is not usable (lavapipe: no subgroup matrices;
 *    bun's Dawn on NVIDIA: no ShaderF16) the reason is stated and callers fall back, which is
 *    what CI checks; where it is usable (the H200 under the node Dawn) the three forms of the
 *    model against a double-precision CPU product of the same f16-rounded operands:
 *    X·Wᵀ + bias, dY·W, and dW += dYᵀ·X, on shapes of several tiles and two tile shapes.
 *    Tolerance: |c - ref| <= 1e-4 · Σ|a·b| + 1e-6 (products of f16 values are exact in f32;
 *    only the f32 accumulation order differs).
 * TEZGAH_TEST_SGMAT_REQUIRED=1 (the H200 device script) fails instead of falling back.
 * SKIPPED (77) without Dawn or an adapter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/sgmat.h"
#include "core/error.h"
#include "testutil.h"

static void test_pick(void **state) {
  assert_int_equal(tz_sgmat_pick(NULL, 0), -1);
  WGPUSubgroupMatrixConfig h200[] = {
      {WGPUSubgroupMatrixComponentType_F16, WGPUSubgroupMatrixComponentType_F16, 16, 16, 16, 32, 32},
      {WGPUSubgroupMatrixComponentType_F16, WGPUSubgroupMatrixComponentType_F32, 16, 8, 16, 32, 32},
      {WGPUSubgroupMatrixComponentType_F16, WGPUSubgroupMatrixComponentType_F32, 16, 16, 16, 32, 32},
      {5, WGPUSubgroupMatrixComponentType_U32, 16, 16, 32, 32, 32}};
  assert_int_equal(tz_sgmat_pick(h200, 4), 2);
  assert_int_equal(tz_sgmat_pick(h200, 2), -1); /* f16 result or 16x8 only: none */
  WGPUSubgroupMatrixConfig ints[] = {{5, WGPUSubgroupMatrixComponentType_U32, 16, 16, 32, 32, 32},
                                     {6, WGPUSubgroupMatrixComponentType_I32, 16, 16, 32, 32, 32}};
  assert_int_equal(tz_sgmat_pick(ints, 2), -1);
}

static void test_f16(void **state) {
  assert_int_equal(tz_sgmat_f16(1.0f), 0x3c00);
  assert_int_equal(tz_sgmat_f16(-2.0f), 0xc000);
  assert_int_equal(tz_sgmat_f16(65504.0f), 0x7bff);
  assert_int_equal(tz_sgmat_f16(1e6f), 0x7c00);
  assert_int_equal(tz_sgmat_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
  assert_int_equal(tz_sgmat_f16(5.9604645e-8f), 0x0001);      /* smallest subnormal */
  for (int i = -3000; i <= 3000; i += 7) {
    float x = i * 0.01234f;
    float y = tz_sgmat_f32(tz_sgmat_f16(x));
    assert_true(fabsf(y - x) <= fabsf(x) * (1.0f / 2048) + 1e-7f);
  }
}

static uint32_t rng = 12345;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return ((rng >> 8) / 16777216.0f) * 2 - 1;
}

/* one form vs the CPU; returns the worst |err| / bound */
static double check_form(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K) {
  size_t na = (size_t)M * K, nb = (size_t)N * K;
  uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
  float *af = malloc(na * 4), *bf = malloc(nb * 4), *c = malloc((size_t)M * N * 4), *c0 = malloc((size_t)M * N * 4);
  float *bias = form == TZ_SGMAT_XWT ? malloc(N * 4) : NULL;
  for (size_t i = 0; i < na; i++) a[i] = tz_sgmat_f16(frand()), af[i] = tz_sgmat_f32(a[i]);
  for (size_t i = 0; i < nb; i++) b[i] = tz_sgmat_f16(frand()), bf[i] = tz_sgmat_f32(b[i]);
  for (uint32_t i = 0; bias && i < N; i++) bias[i] = frand();
  for (size_t i = 0; i < (size_t)M * N; i++) c0[i] = c[i] = form == TZ_SGMAT_DYTX ? frand() : 0;
  if (tz_sgmat_run(s, form, t, M, N, K, a, b, bias, c, 0, NULL) != 0) {
    print_error("%s\n", tz_errmsg());
    fail();
  }
  double worst = 0;
  for (uint32_t m = 0; m < M; m++)
    for (uint32_t n = 0; n < N; n++) {
      double ref = 0, mag = 0;
      for (uint32_t k = 0; k < K; k++) {
        double x = form == TZ_SGMAT_DYTX ? af[(size_t)k * M + m] : af[(size_t)m * K + k];
        double y = form == TZ_SGMAT_XWT ? bf[(size_t)n * K + k] : bf[(size_t)k * N + n];
        ref += x * y, mag += fabs(x * y);
      }
      if (bias) ref += bias[n], mag += fabs(bias[n]);
      if (form == TZ_SGMAT_DYTX) ref += c0[(size_t)m * N + n], mag += fabs(c0[(size_t)m * N + n]);
      double err = fabs(c[(size_t)m * N + n] - ref) / (1e-4 * mag + 1e-6);
      if (err > worst) worst = err;
    }
  free(a), free(b), free(af), free(bf), free(c), free(c0), free(bias);
  return worst;
}

static void test_kernel_or_fallback(void **state) {
  tz_sgmat *s = tz_sgmat_open();
  if (!s) {
    char why[1200];
    snprintf(why, sizeof why, "WebGPU unavailable: %s", tz_errmsg());
    tz_test_skip_all(why);
  }
  printf("adapter: %s\n", tz_sgmat_describe(s));
  const char *why = NULL;
  const char *req = getenv("TEZGAH_TEST_SGMAT_REQUIRED");
  if (!tz_sgmat_usable(s, &why)) {
    printf("subgroup-matrix matmul: not chosen (%s): the fp32 / f16-vector kernels run\n", why);
    assert_non_null(why);
    if (req && !strcmp(req, "1")) print_error("TEZGAH_TEST_SGMAT_REQUIRED=1 but %s\n", why), fail();
    /* the choice must match the facts: no usable kernel means no 16x16x16 f16->f32 config,
     * no ShaderF16 or no single subgroup size; running anyway is refused with one error */
    uint16_t h[256] = {0};
    float c[256];
    tz_sgmat_tile t = {16, 1, 1, 1, 1, 0};
    assert_int_equal(tz_sgmat_run(s, TZ_SGMAT_XWT, t, 16, 16, 16, h, h, NULL, c, 0, NULL), -1);
    tz_sgmat_close(s);
    return;
  }
  tz_sgmat_tile tiles[] = {{32, 2, 2, 2, 2, 0}, {16, 1, 2, 4, 2, 0}, {32, 2, 2, 2, 2, 1}};
  for (int ti = 0; ti < 3; ti++) {
    tz_sgmat_tile t = tiles[ti];
    uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16;
    uint32_t M = 3 * bm, N = 2 * bn, K = 5 * t.bk;
    for (int f = 0; f < 3; f++) {
      double w = check_form(s, (tz_sgmat_form)f, t, M, N, K);
      printf("tile %ux%ux%u%s form %d (%ux%ux%u): worst error %.3f of the bound\n", bm, bn, t.bk,
             t.direct ? " direct" : "", f, M, N, K, w);
      assert_true(w <= 1.0);
    }
  }
  tz_sgmat_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pick), cmocka_unit_test(test_f16),
                                     cmocka_unit_test(test_kernel_or_fallback)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
