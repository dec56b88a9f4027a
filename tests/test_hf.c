#define _GNU_SOURCE /* memmem */
/* Hugging Face directories and the llama2.c writer, without Python:
 * - tezgah → HF dir → tezgah gives identical parameters and logits (llama tied with GQA,
 *   llama untied, gpt2), and the files hold what transformers expects (names, shapes,
 *   Conv1D transposes, the q/k rotate-half row permutation checked on one row);
 * - fp16 / bf16 tensors load (widened exactly);
 * - llama2.c legacy writer → reader round trip (tied and untied);
 * - malformed safetensors / HF inputs give a one-line error naming the file and what is wrong:
 *   truncated header, header length past EOF, bad JSON, dtype I64, shape mismatch, data offsets
 *   out of range, missing tensor, unexpected tensor, unsupported config. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "formats/formats.h"
#include "formats/safetensors.h"
#include "model/config_json.h"
#include "model/layout.h"
#include "model/model.h"
#include "testutil.h"

static char *g_tmp;

static char *tmp_path(const char *name) {
  char *p = malloc(strlen(g_tmp) + strlen(name) + 2);
  sprintf(p, "%s/%s", g_tmp, name);
  return p;
}

static float *random_params(const tz_config *c, uint64_t seed) {
  tz_layout lay;
  tz_layout_build(c, &lay);
  float *p = calloc(lay.total, sizeof *p);
  tz_rng r;
  tz_rng_seed(&r, seed, 1);
  for (int i = 0; i < lay.n; i++) { /* padded vocab rows stay zero, as in a trained model */
    const tz_tensor_info *t = &lay.t[i];
    size_t n = t->numel;
    if (!strcmp(t->name, "wte") || !strcmp(t->name, "lm_head")) n = (size_t)c->vocab_size * t->shape[1];
    for (size_t j = 0; j < n; j++) p[t->off + j] = 0.3f * tz_rng_normal(&r);
  }
  tz_layout_free(&lay);
  return p;
}

static tz_config llama_cfg(int tied) {
  tz_config c = {0};
  c.arch = TZ_ARCH_LLAMA;
  c.n_layer = 2; c.n_head = 4; c.n_kv_head = 2; c.d_model = 16; c.d_ff = 24;
  c.vocab_size = 37; c.max_seq_len = 8; c.tied = tied;
  c.rope_theta = 500.0f; c.norm_eps = 1e-6f;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

static tz_config gpt2_cfg(void) {
  tz_config c = {0};
  c.arch = TZ_ARCH_GPT2;
  c.n_layer = 2; c.n_head = 2; c.d_model = 16; c.vocab_size = 41; c.max_seq_len = 8;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

/* Logits [n, V] of a model on the CPU backend. */
static float *logits_of(const tz_config *c, const float *p, const int32_t *ids, int n) {
  tz_backend *be = tz_backend_create("cpu", 1, NULL);
  assert_non_null(be);
  tz_model *m;
  assert_int_equal(tz_model_create(be, c, &m), 0);
  tz_model_set_params(m, p);
  assert_int_equal(tz_model_alloc_training(m, 1, n), 0);
  float *lg = malloc((size_t)n * c->vocab_size * sizeof *lg);
  tz_model_forward_logits(m, ids, lg);
  tz_model_free(m);
  be->destroy(be);
  return lg;
}

static void roundtrip(const tz_config *c, const char *name) {
  float *p = random_params(c, 11);
  char *dir = tmp_path(name);
  char note[256];
  assert_int_equal(tz_hf_save(dir, c, p, NULL, note, sizeof note), 0);
  assert_non_null(strstr(note, "no tokenizer"));
  assert_true(tz_hf_is_dir(dir));
  tz_config c2;
  float *q;
  tz_tokenizer *tok = (tz_tokenizer *)1;
  assert_int_equal(tz_hf_load(dir, &c2, &q, &tok), 0);
  assert_null(tok);
  assert_memory_equal(c, &c2, sizeof c2); /* same config, default padding included */
  assert_memory_equal(p, q, tz_config_num_params(c) * sizeof *p);
  int32_t ids[6] = {1, 5, 0, 36, 7, 2};
  float *a = logits_of(c, p, ids, 6), *b = logits_of(&c2, q, ids, 6);
  assert_memory_equal(a, b, 6 * (size_t)c->vocab_size * sizeof *a);
  free(a);
  free(b);

  /* what the files hold */
  char *mpath = tmp_path(name);
  mpath = realloc(mpath, strlen(mpath) + 32);
  strcat(mpath, "/model.safetensors");
  tz_st_file f;
  assert_int_equal(tz_st_open(mpath, &f), 0);
  tz_layout lay;
  tz_layout_build(c, &lay);
  const int C = c->d_model;
  if (c->arch == TZ_ARCH_LLAMA) {
    const tz_st_tensor *e = tz_st_find(&f, "model.embed_tokens.weight");
    assert_non_null(e);
    assert_int_equal(e->shape[0], c->vocab_size); /* V rows, not padded_vocab */
    assert_int_equal(f.n, 2 + 9 * c->n_layer + !c->tied);
    assert_int_equal(tz_st_find(&f, "lm_head.weight") != NULL, !c->tied);
    /* q_proj row h·hd + hd/2 + i is our row h·hd + 2i + 1 (head 1, i = 1) */
    const tz_st_tensor *qp = tz_st_find(&f, "model.layers.1.self_attn.q_proj.weight");
    int hd = C / c->n_head;
    float row[64];
    memcpy(row, qp->data + (size_t)(hd + hd / 2 + 1) * C * 4, (size_t)C * 4);
    assert_memory_equal(row, p + tz_layout_find(&lay, "layers.1.attn.wq")->off + (size_t)(hd + 3) * C, (size_t)C * 4);
    const tz_st_tensor *kp = tz_st_find(&f, "model.layers.0.self_attn.k_proj.weight");
    assert_int_equal(kp->shape[0], c->n_kv_head * hd);
  } else {
    const tz_st_tensor *w = tz_st_find(&f, "transformer.h.1.mlp.c_fc.weight");
    assert_non_null(w);
    assert_int_equal(w->shape[0], C); /* Conv1D: [in, out] */
    assert_int_equal(w->shape[1], c->d_ff);
    float x;
    memcpy(&x, w->data + (size_t)(3 * c->d_ff + 5) * 4, 4); /* [in 3, out 5] = our [5, 3] */
    assert_true(x == p[tz_layout_find(&lay, "layers.1.mlp.fc.w")->off + 5 * C + 3]);
    assert_null(tz_st_find(&f, "lm_head.weight"));
  }
  tz_layout_free(&lay);
  tz_st_close(&f);
  /* the directory reads as a model wherever one is taken, with the right format name */
  free(mpath);
  free(p);
  free(q);
  free(dir);
}

static void test_roundtrip_llama(void **st) {
  (void)st;
  tz_config t = llama_cfg(1), u = llama_cfg(0);
  roundtrip(&t, "llama_tied");
  roundtrip(&u, "llama_untied");
}

static void test_roundtrip_gpt2(void **st) {
  (void)st;
  tz_config c = gpt2_cfg();
  roundtrip(&c, "gpt2");
}

/* ---- hand-written safetensors files ---- */

static void write_raw(const char *path, const void *a, size_t n, const void *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(a, 1, n, f), n);
  if (nb) assert_int_equal(fwrite(b, 1, nb, f), nb);
  fclose(f);
}

/* A safetensors file with the given JSON header and data bytes. */
static void write_st(const char *path, const char *json, const void *data, size_t nd) {
  uint64_t hl = strlen(json);
  unsigned char *buf = malloc(8 + hl);
  memcpy(buf, &hl, 8);
  memcpy(buf + 8, json, hl);
  write_raw(path, buf, 8 + hl, data, nd);
  free(buf);
}

static void test_f16_bf16(void **st) {
  (void)st;
  char *path = tmp_path("half.safetensors");
  uint16_t d[6] = {0x3c00, 0xc000, 0x0001, 0x7bff, /* f16: 1, -2, 2^-24, 65504 */ 0x3f80, 0xc0a0 /* bf16: 1, -5 */};
  write_st(path, "{\"a\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[8,12]}}", d, sizeof d);
  tz_st_file f;
  assert_int_equal(tz_st_open(path, &f), 0);
  float x[4];
  assert_int_equal(tz_st_to_f32(&f, tz_st_find(&f, "a"), x), 0);
  assert_true(x[0] == 1.0f && x[1] == -2.0f && x[2] == 0x1p-24f && x[3] == 65504.0f);
  assert_int_equal(tz_st_to_f32(&f, tz_st_find(&f, "b"), x), 0);
  assert_true(x[0] == 1.0f && x[1] == -5.0f);
  tz_st_close(&f);
  free(path);
}

/* Open must fail with a one-line message containing every needle. */
static void expect_st_error(const char *name, const void *bytes, size_t n, const char *n1, const char *n2) {
  char *path = tmp_path(name);
  write_raw(path, bytes, n, NULL, 0);
  tz_st_file f;
  assert_int_not_equal(tz_st_open(path, &f), 0);
  const char *msg = tz_errmsg();
  if (!strstr(msg, path) || strchr(msg, '\n') || (n1 && !strstr(msg, n1)) || (n2 && !strstr(msg, n2)))
    fail_msg("%s: message '%s' lacks the path, '%s' or '%s'", name, msg, n1 ? n1 : "", n2 ? n2 : "");
  free(path);
}

static void expect_st_json_error(const char *name, const char *json, size_t data, const char *n1, const char *n2) {
  uint64_t hl = strlen(json);
  size_t n = 8 + hl + data;
  unsigned char *b = calloc(1, n);
  memcpy(b, &hl, 8);
  memcpy(b + 8, json, hl);
  expect_st_error(name, b, n, n1, n2);
  free(b);
}

static void test_malformed_safetensors(void **st) {
  (void)st;
  expect_st_error("trunc.st", "\x10\0\0", 3, "truncated", NULL);
  unsigned char past[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};
  expect_st_error("past.st", past, sizeof past, "header length 65535", "past the end");
  expect_st_json_error("badjson.st", "{\"a\": [1,", 0, "not a JSON object", NULL);
  expect_st_json_error("notobj.st", "[1, 2, 3]", 0, "not a JSON object", NULL);
  expect_st_json_error("range.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 8,
                       "'w'", "run past the data area");
  expect_st_json_error("size.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,16]}}", 16, "'w'",
                       "needs 24");
  expect_st_json_error("order.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 16, "'w'",
                       "begin <= end");
  expect_st_json_error("nodtype.st", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "dtype");
  expect_st_json_error("unkdtype.st", "{\"w\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'",
                       "unknown dtype 'Q4'");
  expect_st_json_error("negshape.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "'w'",
                       "shape");
  /* I64 parses (a file may hold tensors we never read) but cannot be read as a weight */
  char *path = tmp_path("i64.st");
  int64_t v[2] = {1, 2};
  write_st(path, "{\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", v, sizeof v);
  tz_st_file f;
  assert_int_equal(tz_st_open(path, &f), 0);
  float x[2];
  assert_int_not_equal(tz_st_to_f32(&f, tz_st_find(&f, "ids"), x), 0);
  tz_test_assert_msg_has("tensor 'ids' has dtype I64");
  tz_st_close(&f);
  free(path);
}

/* A valid llama HF dir, then one file changed: tz_hf_load must fail naming what is wrong. */
static char *fresh_hf(const char *name, const tz_config *c) {
  char *dir = tmp_path(name);
  float *p = random_params(c, 3);
  assert_int_equal(tz_hf_save(dir, c, p, NULL, NULL, 0), 0);
  free(p);
  return dir;
}

static void expect_hf_error(const char *dir, const char *n1, const char *n2) {
  tz_config c;
  float *p = NULL;
  assert_int_not_equal(tz_hf_load(dir, &c, &p, NULL), 0);
  assert_null(p);
  const char *msg = tz_errmsg();
  if (strchr(msg, '\n') || (n1 && !strstr(msg, n1)) || (n2 && !strstr(msg, n2)))
    fail_msg("%s: message '%s' lacks '%s' or '%s'", dir, msg, n1 ? n1 : "", n2 ? n2 : "");
}

/* Replace the first occurrence of `from` in dir/file by `to`. */
static void edit(const char *dir, const char *file, const char *from, const char *to) {
  char *path = malloc(strlen(dir) + strlen(file) + 2);
  sprintf(path, "%s/%s", dir, file);
  char *d;
  size_t n;
  assert_int_equal(tz_read_file(path, &d, &n), 0);
  char *hit = memmem(d, n, from, strlen(from));
  assert_non_null(hit);
  size_t a = (size_t)(hit - d), lf = strlen(from), lt = strlen(to);
  char *out = malloc(n - lf + lt);
  memcpy(out, d, a);
  memcpy(out + a, to, lt);
  memcpy(out + a + lt, hit + lf, n - a - lf);
  write_raw(path, out, n - lf + lt, NULL, 0);
  free(out);
  free(d);
  free(path);
}

static void test_malformed_hf(void **st) {
  (void)st;
  tz_config c = llama_cfg(1);
  char *d;
  /* shape mismatch: config says 3 layers' width differently */
  d = fresh_hf("hf_shape", &c);
  edit(d, "config.json", "\"intermediate_size\":\t24", "\"intermediate_size\":\t32");
  expect_hf_error(d, "model.layers.0.mlp.gate_proj.weight", "has shape [24, 16] but config.json needs [32, 16]");
  free(d);
  /* missing tensor: one more layer in config.json */
  d = fresh_hf("hf_missing", &c);
  edit(d, "config.json", "\"num_hidden_layers\":\t2", "\"num_hidden_layers\":\t3");
  expect_hf_error(d, "missing tensor 'model.layers.2.input_layernorm.weight'", NULL);
  free(d);
  /* unexpected tensor (an untied lm_head while config.json says tied is still fine; a bias is not) */
  tz_config u = llama_cfg(0);
  d = fresh_hf("hf_extra", &u);
  edit(d, "config.json", "\"tie_word_embeddings\":\tfalse", "\"tie_word_embeddings\":\ttrue");
  edit(d, "model.safetensors", "lm_head.weight", "lm_head.bias00");
  expect_hf_error(d, "unexpected tensor 'lm_head.bias00'", NULL);
  free(d);
  d = fresh_hf("hf_missing2", &c);
  edit(d, "model.safetensors", "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.v_proj.xxxxxx");
  expect_hf_error(d, "missing tensor 'model.layers.0.self_attn.v_proj.weight'", NULL);
  free(d);
  /* dtype I64 for a weight */
  d = fresh_hf("hf_i64", &c);
  edit(d, "model.safetensors", "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[16]",
       "\"model.norm.weight\":{\"dtype\":\"I64\",\"shape\":[8] ");
  expect_hf_error(d, "tensor 'model.norm.weight' has dtype I64", NULL);
  free(d);
  /* unsupported variants named by their field */
  d = fresh_hf("hf_scaling", &c);
  edit(d, "config.json", "\"rope_type\":\t\"default\"", "\"rope_type\":\t\"yarn\"");
  expect_hf_error(d, "rope_type", "yarn");
  free(d);
  d = fresh_hf("hf_scaling4", &c); /* transformers 4's spelling */
  edit(d, "config.json", "\"rope_theta\":", "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2},\n\"rope_theta\":");
  expect_hf_error(d, "rope_scaling", "linear");
  free(d);
  d = fresh_hf("hf_type", &c);
  edit(d, "config.json", "\"model_type\":\t\"llama\"", "\"model_type\":\t\"mixtral\"");
  edit(d, "config.json", "LlamaForCausalLM", "MixtralForCausalLM");
  expect_hf_error(d, "model_type 'mixtral' is not supported", NULL);
  free(d);
  /* config.json that is not JSON: where, and what stands there (was "not valid JSON") */
  d = fresh_hf("hf_json", &c);
  edit(d, "config.json", "\"num_hidden_layers\":", "\"num_hidden_layers\"");
  expect_hf_error(d, "/config.json:", ": invalid JSON near '2");
  free(d);
  d = fresh_hf("hf_nofile", &c);
  char *mp = malloc(strlen(d) + 32);
  sprintf(mp, "%s/model.safetensors", d);
  unlink(mp);
  expect_hf_error(d, "no model.safetensors", NULL);
  free(mp);
  free(d);
}

/* tz_json_parse (config.json, model.safetensors.index.json): a refused text gets one line with
 * its line and column (characters, from 1) and what stands there (it said only "not valid
 * JSON"); a good one parses. */
static void test_json_parse_errors(void **st) {
  (void)st;
  static const struct { const char *txt, *msg; } cases[] = {
      {"{\n  \"model_type\": \"llama\",\n  \"hidden_size\" 64\n}", "c.json:3:17: invalid JSON near '64'"},
      {"{\"a\":1,}", "c.json:1:8: invalid JSON near '}'"},
      {"{\"\xc3\xa4\": 1 2}", "c.json:1:9: invalid JSON near '2}'"}, /* ä: one column */
      {"{\"a\": [1, 2}\n", "c.json:1:12: invalid JSON near '}'"},
      {"{\"a\": \xff}", "c.json:1:7: invalid JSON near '\\xff}'"},
      {"{\"a\": 1,\n", "c.json:1:9: invalid JSON: the text ends too soon (unclosed brace, bracket or string, or a ',' before the end?)"},
      /* a ',' before the closing brace: cJSON stops after the brace here (its place is not always
       * the offending character: hence the message's hint) */
      {"{\"a\": 1,}\n", "c.json:1:10: invalid JSON: the text ends too soon (unclosed brace, bracket or string, or a ',' before the end?)"},
      {"", "c.json: empty: no JSON value in it"},
      {" \n ", "c.json: empty: no JSON value in it"},
      {"{\"a\": 1}\n x", "c.json:2:2: invalid JSON: text after the value near 'x'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    assert_null(tz_json_parse(cases[i].txt, strlen(cases[i].txt), "c.json"));
    assert_string_equal(tz_errmsg(), cases[i].msg);
  }
  const char *good = "{\"a\": [1, 2.5e3, \"x\\u00e4\"], \"b\": {\"c\": null}}";
  cJSON *j = tz_json_parse(good, strlen(good), "c.json");
  assert_non_null(j);
  cJSON_Delete(j);
}

/* llama2.c legacy writer → reader: same config (padded_vocab = V) and parameters. */
static void test_llama2c_roundtrip(void **st) {
  (void)st;
  for (int tied = 0; tied <= 1; tied++) {
    tz_config c = llama_cfg(tied);
    c.rope_theta = 10000.0f; /* run.c's constants */
    c.norm_eps = 1e-5f;
    float *p = random_params(&c, 5 + tied), *q;
    char *path = tmp_path(tied ? "l2c_tied.bin" : "l2c_untied.bin");
    assert_int_equal(tz_llama2c_save(path, &c, p), 0);
    tz_config c2;
    assert_int_equal(tz_llama2c_load(path, &c2, &q), 0);
    tz_config want = c;
    want.padded_vocab = c.vocab_size;
    assert_memory_equal(&want, &c2, sizeof c2);
    float *back = tz_params_relayout(&c2, q, &c);
    assert_memory_equal(p, back, tz_config_num_params(&c) * sizeof *p);
    int32_t h[7];
    FILE *f = fopen(path, "rb");
    assert_int_equal(fread(h, 4, 7, f), 7);
    fclose(f);
    assert_int_equal(h[5], tied ? c.vocab_size : -c.vocab_size); /* run.c's shared-weights sign */
    free(back);
    free(p);
    free(q);
    free(path);
  }
  /* refused: gpt2, and rope_theta run.c cannot represent */
  tz_config g = gpt2_cfg(), l = llama_cfg(1);
  float *p = random_params(&g, 1);
  char *path = tmp_path("refused.bin");
  assert_int_not_equal(tz_llama2c_save(path, &g, p), 0);
  tz_test_assert_msg_has("llama models only");
  free(p);
  p = random_params(&l, 1);
  assert_int_not_equal(tz_llama2c_save(path, &l, p), 0);
  tz_test_assert_msg_has("rope_theta=10000");
  free(p);
  free(path);
}

int main(void) {
  g_tmp = tz_test_tmpdir("hf");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_llama),       cmocka_unit_test(test_roundtrip_gpt2),
      cmocka_unit_test(test_f16_bf16),              cmocka_unit_test(test_malformed_safetensors),
      cmocka_unit_test(test_malformed_hf),          cmocka_unit_test(test_llama2c_roundtrip),
      cmocka_unit_test(test_json_parse_errors)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(g_tmp);
  return rc;
}
