/* Foreign checkpoint formats (src/formats):
 * - llm.c GPT-2: write → read gives identical config and parameters (fp32, version 3);
 *   a bf16 file (version 5) loads every value rounded to nearest-even bf16 (checked against
 *   an independent rounding in double, incl. exact ties);
 * - llama2.c legacy and version 1 files written here from the format description (tied and
 *   untied, GQA) load into our layout with every tensor in its place;
 * - malformed files of each format (truncated, wrong magic, wrong version, header/size
 *   mismatch) give a one-line error naming the file and exit code != 0 from the CLI; a file
 *   that matches no magic and is no valid legacy llama2.c file either (an llm.c file with a
 *   corrupted magic) is reported as such, naming the formats checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "formats/formats.h"
#include "model/layout.h"
#include "testutil.h"

static char *g_tmp;

static char *tmp_path(const char *name) {
  char *p = malloc(strlen(g_tmp) + strlen(name) + 2);
  sprintf(p, "%s/%s", g_tmp, name);
  return p;
}

static void write_bytes(const char *path, const void *a, size_t n, const void *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(a, 1, n, f), n);
  if (nb) assert_int_equal(fwrite(b, 1, nb, f), nb);
  fclose(f);
}

static float *random_params(const tz_config *c, size_t *n, uint64_t seed) {
  *n = tz_config_num_params(c);
  float *p = malloc(*n * sizeof *p);
  tz_rng r;
  tz_rng_seed(&r, seed, 1);
  for (size_t i = 0; i < *n; i++) p[i] = tz_rng_normal(&r);
  return p;
}

static tz_config gpt2_cfg(void) {
  tz_config c = {0};
  c.arch = TZ_ARCH_GPT2;
  c.n_layer = 2;
  c.n_head = 2;
  c.d_model = 8;
  c.vocab_size = 50; /* padded to 128 */
  c.max_seq_len = 6;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

static void test_llmc_roundtrip(void **st) {
  tz_config c = gpt2_cfg(), c2;
  size_t n;
  float *p = random_params(&c, &n, 7), *q = NULL;
  char *path = tmp_path("rt.bin");
  assert_int_equal(tz_llmc_save(path, &c, p, 0), 0);
  assert_int_equal(tz_format_detect(path), TZ_FMT_LLMC);
  assert_int_equal(tz_llmc_load(path, &c2, &q), 0);
  assert_memory_equal(&c, &c2, sizeof c);
  assert_memory_equal(p, q, n * sizeof *p);
  free(q);
  /* llm.c's order on disk: header then wte, wpe, then ln1w of all layers */
  FILE *f = fopen(path, "rb");
  int32_t h[256];
  assert_int_equal(fread(h, 4, 256, f), 256);
  assert_int_equal(h[0], 20240326);
  assert_int_equal(h[1], 3);
  assert_int_equal(h[2], 6);
  assert_int_equal(h[3], 50);
  assert_int_equal(h[7], 128);
  tz_layout lay;
  tz_layout_build(&c, &lay);
  float x;
  fseek(f, 1024 + 4 * (long)(128 * 8 + 6 * 8 + 8), SEEK_SET); /* ln1w of layer 1 */
  assert_int_equal(fread(&x, 4, 1, f), 1);
  assert_true(x == p[tz_layout_find(&lay, "layers.1.ln1.w")->off]);
  fclose(f);
  tz_layout_free(&lay);
  /* a llama model cannot be written */
  tz_config l = {0};
  l.arch = TZ_ARCH_LLAMA;
  l.n_layer = 1; l.n_head = 2; l.d_model = 8; l.vocab_size = 16; l.max_seq_len = 4;
  assert_int_equal(tz_config_finalize(&l), 0);
  assert_int_not_equal(tz_llmc_save(path, &l, p, 0), 0);
  free(p);
  free(path);
}

/* Round-to-nearest-even to bf16, computed independently in double. */
static float rne_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t lo_u = u & 0xffff0000u, hi_u = lo_u + 0x10000u;
  float lo, hi;
  memcpy(&lo, &lo_u, 4);
  memcpy(&hi, &hi_u, 4);
  double dl = fabs((double)f - lo), dh = fabs((double)hi - f);
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return ((lo_u >> 16) & 1) ? hi : lo;
}

static void test_llmc_bf16(void **st) {
  tz_config c = gpt2_cfg(), c2;
  size_t n;
  float *p = random_params(&c, &n, 8), *q = NULL;
  const float special[] = {1.0f + 0x1p-8f,            /* tie → even: 1.0 */
                           1.0f + 3 * 0x1p-8f,        /* tie → even: 1 + 2^-6 */
                           1.0f + 0x1p-8f + 0x1p-20f, /* above the tie: 1 + 2^-7 */
                           -2.5f, 0.0f, 3.14159265f};
  const float want[] = {1.0f, 1.0f + 0x1p-6f, 1.0f + 0x1p-7f, -2.5f, 0.0f, 3.140625f};
  memcpy(p, special, sizeof special);
  char *path = tmp_path("bf16.bin");
  assert_int_equal(tz_llmc_save(path, &c, p, 1), 0);
  assert_int_equal(tz_llmc_load(path, &c2, &q), 0);
  assert_memory_equal(&c, &c2, sizeof c);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_true(q[i] == want[i]);
  for (size_t i = 0; i < n; i++) {
    if (q[i] != rne_bf16(p[i])) fail_msg("param %zu: %.9g loaded as %.9g, expected %.9g", i, p[i], q[i], rne_bf16(p[i]));
  }
  free(p);
  free(q);
  free(path);
}

/* llama2.c files written from the format description (formats.h). */
typedef struct {
  int dim, hidden, L, nh, nkv, V, seq, shared;
} l2c;

static tz_config l2c_cfg(const l2c *m) {
  tz_config c = {0};
  c.arch = TZ_ARCH_LLAMA;
  c.d_model = m->dim; c.d_ff = m->hidden; c.n_layer = m->L; c.n_head = m->nh; c.n_kv_head = m->nkv;
  c.vocab_size = m->V; c.padded_vocab = m->V; c.max_seq_len = m->seq; c.tied = m->shared;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

/* Append tensor(s) of our layout (per layer when pat has %d) to buf in foreign order. */
static size_t put(float *buf, size_t at, const tz_layout *lay, const float *p, const char *pat, int L) {
  for (int l = 0; l < (strstr(pat, "%d") ? L : 1); l++) {
    char nm[64];
    snprintf(nm, sizeof nm, pat, l);
    const tz_tensor_info *t = tz_layout_find(lay, nm);
    assert_non_null(t);
    memcpy(buf + at, p + t->off, t->numel * sizeof(float));
    at += t->numel;
  }
  return at;
}

static void write_l2c(const char *path, const l2c *m, const float *p, int version, size_t *size_out) {
  tz_config c = l2c_cfg(m);
  tz_layout lay;
  tz_layout_build(&c, &lay);
  int hd = m->dim / m->nh;
  float *buf = calloc(lay.total + (size_t)m->seq * hd + 16, sizeof(float));
  size_t k = 0;
  int L = m->L;
  if (version == 0) {
    const char *order[] = {"wte", "layers.%d.attn_norm.w", "layers.%d.attn.wq", "layers.%d.attn.wk",
                           "layers.%d.attn.wv", "layers.%d.attn.wo", "layers.%d.ffn_norm.w", "layers.%d.ffn.w1",
                           "layers.%d.ffn.w2", "layers.%d.ffn.w3", "norm.w"};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) k = put(buf, k, &lay, p, order[i], L);
    for (size_t i = 0; i < (size_t)m->seq * hd; i++) buf[k++] = 1e30f; /* RoPE tables: ignored */
  } else {
    const char *order[] = {"layers.%d.attn_norm.w", "layers.%d.ffn_norm.w", "norm.w", "wte",
                           "layers.%d.attn.wq", "layers.%d.attn.wk", "layers.%d.attn.wv", "layers.%d.attn.wo",
                           "layers.%d.ffn.w1", "layers.%d.ffn.w2", "layers.%d.ffn.w3"};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) k = put(buf, k, &lay, p, order[i], L);
  }
  if (!m->shared) k = put(buf, k, &lay, p, "lm_head", L);
  unsigned char hdr[256] = {0};
  int32_t dims[7] = {m->dim, m->hidden, m->L, m->nh, m->nkv, version == 0 && !m->shared ? -m->V : m->V, m->seq};
  size_t hn;
  if (version == 0) {
    memcpy(hdr, dims, 28);
    hn = 28;
  } else {
    uint32_t magic = 0x616b3432;
    int32_t ver = version;
    memcpy(hdr, &magic, 4);
    memcpy(hdr + 4, &ver, 4);
    memcpy(hdr + 8, dims, 28);
    hdr[36] = (unsigned char)m->shared;
    hn = 256;
  }
  write_bytes(path, hdr, hn, buf, k * sizeof(float));
  if (size_out) *size_out = hn + k * sizeof(float);
  free(buf);
  tz_layout_free(&lay);
}

static void check_l2c(const l2c *m, int version) {
  tz_config c = l2c_cfg(m), c2;
  size_t n;
  float *p = random_params(&c, &n, 11 + version), *q = NULL;
  char *path = tmp_path("l2c.bin");
  write_l2c(path, m, p, version, NULL);
  assert_int_equal(tz_format_detect(path), version ? TZ_FMT_LLAMA2C : TZ_FMT_UNKNOWN);
  if (tz_llama2c_load(path, &c2, &q)) fail_msg("%s", tz_last_error());
  assert_memory_equal(&c, &c2, sizeof c);
  assert_memory_equal(p, q, n * sizeof *p);
  free(q);
  assert_int_equal(tz_foreign_load(path, NULL, &c2, &q), 0);
  assert_memory_equal(p, q, n * sizeof *p);
  free(q);
  free(p);
  free(path);
}

static void test_llama2c_files(void **st) {
  l2c tied = {16, 40, 2, 4, 2, 32, 8, 1}, untied = {16, 24, 3, 4, 1, 20, 5, 0};
  check_l2c(&tied, 0);
  check_l2c(&untied, 0);
  check_l2c(&tied, 1);
  check_l2c(&untied, 1);
}

/* The CLI on a malformed file: exit code != 0 and exactly one stderr line naming the file
 * and containing `expect`. */
static void expect_cli_error(const char *args, const char *file, const char *expect) {
  char cmd[8192], *log = tmp_path("err.txt");
  snprintf(cmd, sizeof cmd, "%s %s > /dev/null 2> '%s'", TZ_CLI, args, log);
  int rc = tz_test_sh(cmd);
  char *txt;
  size_t len;
  FILE *f = fopen(log, "rb");
  assert_non_null(f);
  txt = calloc(1, 1 << 16);
  len = fread(txt, 1, (1 << 16) - 1, f);
  fclose(f);
  int lines = 0;
  for (size_t i = 0; i < len; i++) lines += txt[i] == '\n';
  if (rc == 0 || lines != 1 || !strstr(txt, file) || !strstr(txt, expect))
    fail_msg("`%s`: rc=%d, %d lines: %s (expected one line naming %s with '%s')", args, rc, lines, txt, file, expect);
  free(txt);
  free(log);
}

static void test_malformed(void **st) {
  char args[4096];
  char *good = tmp_path("good.bin"), *bad = tmp_path("bad.bin"), *out = tmp_path("out");
  /* llm.c */
  tz_config c = gpt2_cfg();
  size_t n;
  float *p = random_params(&c, &n, 3);
  assert_int_equal(tz_llmc_save(good, &c, p, 0), 0);
  FILE *f = fopen(good, "rb");
  size_t size = 1024 + n * 4;
  unsigned char *b = malloc(size + 8);
  assert_int_equal(fread(b, 1, size, f), size);
  fclose(f);
  int32_t *h = (int32_t *)b;
  write_bytes(bad, b, 100, NULL, 0);
  snprintf(args, sizeof args, "convert --from llmc '%s' --out '%s'", bad, out);
  expect_cli_error(args, bad, "truncated llm.c checkpoint: 100 bytes");
  write_bytes(bad, b, size - 4, NULL, 0);
  snprintf(args, sizeof args, "sample '%s'", bad);
  expect_cli_error(args, bad, "(truncated?)");
  write_bytes(bad, b, size, "\0\0\0\0", 4);
  snprintf(args, sizeof args, "eval '%s' --data x", bad);
  expect_cli_error(args, bad, "needs");
  h[0] = 20240327;
  write_bytes(bad, b, size, NULL, 0);
  snprintf(args, sizeof args, "convert --from llmc '%s' --out '%s'", bad, out);
  expect_cli_error(args, bad, "magic 20240327");
  /* the same file detected by its magic: the legacy llama2.c reading (no magic) fails too,
   * and the message names what was checked rather than only llama2.c's complaint */
  h[0] = 12345;
  write_bytes(bad, b, size, NULL, 0);
  snprintf(args, sizeof args, "sample '%s'", bad);
  expect_cli_error(args, bad,
                   "not a checkpoint: its first int32 12345 (0x00003039) is no tezgah (\"TZCKPT\"), llm.c (20240326) "
                   "or llama2.c version 1 (0x616b3432) magic, and read as a legacy llama2.c file (no magic): "
                   "llama2.c header n_heads=50 does not divide dim=12345");
  h[0] = 20240326;
  h[1] = 4;
  write_bytes(bad, b, size, NULL, 0);
  snprintf(args, sizeof args, "sample '%s'", bad);
  expect_cli_error(args, bad, "version 4");
  h[1] = 3;
  h[6] = 9; /* C not divisible by NH=2 */
  write_bytes(bad, b, size, NULL, 0);
  expect_cli_error(args, bad, "C=9");
  h[6] = 8;
  h[4] = 3; /* L=3: header/size mismatch */
  write_bytes(bad, b, size, NULL, 0);
  expect_cli_error(args, bad, "L=3");
  free(b);
  free(p);
  /* llama2.c legacy and version 1 */
  for (int version = 0; version <= 1; version++) {
    l2c m = {16, 24, 2, 4, 2, 20, 5, 1};
    tz_config lc = l2c_cfg(&m);
    p = random_params(&lc, &n, 5);
    write_l2c(good, &m, p, version, &size);
    free(p);
    b = malloc(size + 8);
    f = fopen(good, "rb");
    assert_int_equal(fread(b, 1, size, f), size);
    fclose(f);
    write_bytes(bad, b, version ? 100 : 20, NULL, 0);
    snprintf(args, sizeof args, "convert --from llama2c '%s' --out '%s'", bad, out);
    expect_cli_error(args, bad, "truncated llama2.c checkpoint");
    write_bytes(bad, b, size - 4, NULL, 0);
    snprintf(args, sizeof args, "sample '%s'", bad);
    expect_cli_error(args, bad, "(truncated?)");
    write_bytes(bad, b, size, "abcd", 4);
    expect_cli_error(args, bad, "needs");
    int32_t *d = (int32_t *)(b + (version ? 8 : 0));
    d[3] = 3; /* n_heads does not divide dim */
    write_bytes(bad, b, size, NULL, 0);
    expect_cli_error(args, bad, "n_heads=3");
    d[3] = 4;
    d[0] = -5;
    write_bytes(bad, b, size, NULL, 0);
    expect_cli_error(args, bad, "dim=-5");
    d[0] = 16;
    if (version) {
      ((int32_t *)b)[1] = 2; /* int8 version */
      write_bytes(bad, b, size, NULL, 0);
      expect_cli_error(args, bad, "version 2 is not supported");
      ((int32_t *)b)[1] = 1;
      b[0] ^= 0xff; /* wrong magic: no longer a version 1 file; read as legacy, whose header is garbage */
      write_bytes(bad, b, size, NULL, 0);
      expect_cli_error(args, bad, "and read as a legacy llama2.c file (no magic): llama2.c header field");
    }
    free(b);
  }
  /* a directory that is not a run, and a missing file */
  snprintf(args, sizeof args, "convert '%s/nonexistent.bin' --out '%s'", g_tmp, out);
  expect_cli_error(args, "nonexistent.bin", "No such file");
  free(good);
  free(bad);
  free(out);
}

int main(void) {
  g_tmp = tz_test_tmpdir("formats");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llmc_roundtrip), cmocka_unit_test(test_llmc_bf16),
      cmocka_unit_test(test_llama2c_files), cmocka_unit_test(test_malformed)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(g_tmp);
  return rc;
}
