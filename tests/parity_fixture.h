/* Loading the PyTorch parity fixtures written by tools/torch_parity.py --make-fixture
 * (tests/fixtures/<stem>.{json,bin}: parity_<arch> in fp32, parity_bf16_<arch> with --bf16),
 * shared by tests/test_parity_torch.c (CPU, fp32) and tests/test_cuda_parity.c (CUDA, bf16).
 * Header-only; cmocka assertions on malformed fixtures.
 *
 * Directory: $TEZGAH_FIXTURES when set (the GPU machine runs the test binary away from its
 * source tree), else TZ_SOURCE_DIR/tests/fixtures. */
#ifndef TZ_PARITY_FIXTURE_H
#define TZ_PARITY_FIXTURE_H
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "model/config_json.h"
#include "model/model.h"
#include "testutil.h"

typedef struct {
  char *js, *bin;
  size_t bin_len;
  cJSON *meta;
  tz_config cfg;
  int B, T, steps, warmup;
  float lr, min_frac, clip;
  tz_adamw_hp ahp; /* lr, grad_scale and t are set per step */
  const cJSON *losses, *grad_norms, *lrs;
} pf_fixture;

static inline double pf_num(const cJSON *o, const char *k) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
  assert_non_null(x);
  assert_true(cJSON_IsNumber(x));
  return x->valuedouble;
}

/* path of <dir>/<stem>.<ext> into buf */
static inline void pf_path(char *buf, size_t n, const char *stem, const char *ext) {
  const char *dir = getenv("TEZGAH_FIXTURES");
  int k = dir && *dir ? snprintf(buf, n, "%s/%s.%s", dir, stem, ext)
                      : snprintf(buf, n, "%s/tests/fixtures/%s.%s", TZ_SOURCE_DIR, stem, ext);
  if (k < 0 || (size_t)k >= n) fail_msg("fixture path too long: %s", stem);
}

/* 1 when both files of the fixture exist. */
static inline int pf_exists(const char *stem) {
  char a[4096], b[4096];
  pf_path(a, sizeof a, stem, "json");
  pf_path(b, sizeof b, stem, "bin");
  return access(a, R_OK) == 0 && access(b, R_OK) == 0;
}

static inline void pf_load(const char *stem, pf_fixture *f) {
  char path[4096];
  size_t js_len;
  memset(f, 0, sizeof *f);
  pf_path(path, sizeof path, stem, "json");
  assert_int_equal(tz_read_file(path, &f->js, &js_len), 0);
  pf_path(path, sizeof path, stem, "bin");
  assert_int_equal(tz_read_file(path, &f->bin, &f->bin_len), 0);
  f->meta = cJSON_ParseWithLength(f->js, js_len);
  assert_non_null(f->meta);
  assert_int_equal(tz_config_from_json(cJSON_GetObjectItemCaseSensitive(f->meta, "config"), "fixture", &f->cfg), 0);
  const cJSON *hp = cJSON_GetObjectItemCaseSensitive(f->meta, "hp");
  f->B = (int)pf_num(hp, "B");
  f->T = (int)pf_num(hp, "T");
  f->steps = (int)pf_num(hp, "steps");
  f->warmup = (int)pf_num(hp, "warmup");
  f->lr = (float)pf_num(hp, "lr");
  f->min_frac = (float)pf_num(hp, "min_lr_frac");
  f->clip = (float)pf_num(hp, "grad_clip");
  f->ahp = (tz_adamw_hp){0, (float)pf_num(hp, "beta1"), (float)pf_num(hp, "beta2"), (float)pf_num(hp, "eps"),
                         (float)pf_num(hp, "weight_decay"), 1.0f, 0};
  f->losses = cJSON_GetObjectItemCaseSensitive(f->meta, "losses");
  f->grad_norms = cJSON_GetObjectItemCaseSensitive(f->meta, "grad_norms");
  f->lrs = cJSON_GetObjectItemCaseSensitive(f->meta, "lrs");
  assert_int_equal(cJSON_GetArraySize(f->losses), f->steps);
  assert_int_equal(cJSON_GetArraySize(f->grad_norms), f->steps);
  assert_int_equal(cJSON_GetArraySize(f->lrs), f->steps);
}

/* The fixture's tensor table must be the model's (names, sizes, order). */
static inline void pf_check_layout(const pf_fixture *f, const tz_model *m) {
  const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(f->meta, "tensors");
  assert_int_equal(cJSON_GetArraySize(tensors), m->lay.n);
  for (int i = 0; i < m->lay.n; i++) {
    const cJSON *t = cJSON_GetArrayItem(tensors, i);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, m->lay.t[i].name);
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
    size_t numel = 1;
    for (int d = 0; d < cJSON_GetArraySize(sh); d++) numel *= (size_t)cJSON_GetArrayItem(sh, d)->valueint;
    assert_int_equal(numel, m->lay.t[i].numel);
  }
}

/* The bytes of array `key` in the .bin (want_bytes 0: any size). */
static inline const void *pf_array(const pf_fixture *f, const char *key, size_t want_bytes) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->meta, "arrays"), key);
  assert_non_null(a);
  size_t off = (size_t)pf_num(a, "offset"), bytes = (size_t)pf_num(a, "bytes");
  assert_true(off + bytes <= f->bin_len);
  if (want_bytes) assert_int_equal(bytes, want_bytes);
  return f->bin + off;
}

static inline double pf_at(const cJSON *arr, int i) { return cJSON_GetArrayItem(arr, i)->valuedouble; }

/* Step s's AdamW settings as the trainer forms them (lr from the fixture's schedule; global
 * grad-norm clipping by scaling). */
static inline void pf_step_hp(pf_fixture *f, int s, float lr_s, double norm) {
  f->ahp.lr = lr_s;
  f->ahp.grad_scale = f->clip > 0 && norm > f->clip ? (float)(f->clip / (norm + 1e-6)) : 1.0f;
  f->ahp.t = s + 1;
}

static inline void pf_free(pf_fixture *f) {
  cJSON_Delete(f->meta);
  free(f->js);
  free(f->bin);
}

#endif
