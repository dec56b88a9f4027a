/* llm.c token shards: round trip, the real tiny-shakespeare shards, malformed files. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "data/shard.h"
#include "testutil.h"

static void test_round_trip(void **state) {
  char *dir = tz_test_tmpdir("shard_rt");
  char *p = tz_path_join(dir, "rt.bin");
  enum { N = 20000 };
  int32_t *ids = malloc(N * sizeof *ids);
  for (int i = 0; i < N; i++) ids[i] = (i * 7919) % 65536;
  assert_int_equal(tz_shard_write(p, ids, N), 0);
  uint16_t *t;
  size_t n;
  assert_int_equal(tz_shard_read(p, 65536, &t, &n), 0);
  assert_int_equal(n, N);
  for (int i = 0; i < N; i++) assert_int_equal(t[i], ids[i]);
  free(t);
  size_t nh;
  assert_int_equal(tz_shard_read_header(p, &nh), 0);
  assert_int_equal(nh, N);
  /* exact byte layout: header ints little-endian, file size 1024 + 2n */
  char *raw;
  size_t len;
  assert_int_equal(tz_read_file(p, &raw, &len), 0);
  assert_int_equal(len, 1024 + 2 * N);
  const unsigned char *u = (const unsigned char *)raw;
  assert_int_equal(u[0] | u[1] << 8 | u[2] << 16 | u[3] << 24, 20240520);
  assert_int_equal(u[4], 1);
  assert_int_equal(u[8] | u[9] << 8 | u[10] << 16, N);
  for (int i = 12; i < 1024; i++) assert_int_equal(u[i], 0);
  assert_int_equal(u[1024 + 2] | u[1024 + 3] << 8, ids[1]);
  free(raw);
  assert_false(tz_test_has_temp_file(dir));

  /* write errors: id out of range, n == 0; nothing is written */
  char *q = tz_path_join(dir, "bad.bin");
  ids[5] = 65536;
  assert_int_not_equal(tz_shard_write(q, ids, N), 0);
  tz_test_assert_msg_has("bad.bin");
  tz_test_assert_msg_has("65536");
  tz_test_assert_msg_has("position 5");
  ids[5] = -1;
  assert_int_not_equal(tz_shard_write(q, ids, N), 0);
  tz_test_assert_msg_has("-1");
  assert_int_not_equal(tz_shard_write(q, ids, 0), 0);
  tz_test_assert_msg_has("bad.bin");
  assert_false(tz_exists(q));
  /* unwritable location: error names the path, no temp file */
  assert_int_not_equal(tz_shard_write("/proc/nonexistent/x.bin", ids, 3), 0);
  tz_test_assert_msg_has("/proc/nonexistent/x.bin");
  assert_false(tz_test_has_temp_file(dir));
  free(q);
  free(ids);
  free(p);
  free(dir);
}

static void test_real_llmc_shards(void **state) {
  char *tr = tz_test_shared_or_skip("llmc/tiny_shakespeare_train.bin");
  if (!tr) skip();
  char *va = tz_test_shared_or_skip("llmc/tiny_shakespeare_val.bin");
  if (!va) skip();
  uint16_t *t;
  size_t n;
  assert_int_equal(tz_shard_read(tr, 50257, &t, &n), 0);
  assert_int_equal(n, 305260);
  free(t);
  assert_int_equal(tz_shard_read(va, 50257, &t, &n), 0);
  assert_int_equal(n, 32768);
  /* tinyshakespeare.py prepends EOT (50256) to every section: the val split starts with it */
  assert_int_equal(t[0], 50256);
  size_t eots = 0;
  for (size_t i = 0; i < n; i++) eots += t[i] == 50256;
  assert_true(eots > 1);
  free(t);
  /* a vocab that excludes EOT is rejected, naming the id and the vocab size */
  assert_int_equal(tz_shard_read(va, 50256, &t, &n), TZ_SHARD_EVOCAB);
  assert_null(t);
  assert_int_equal(n, 0);
  tz_test_assert_msg_has("tiny_shakespeare_val.bin");
  tz_test_assert_msg_has("token id 50256 at position 0");
  tz_test_assert_msg_has("vocab size 50256");
  /* the numbers for the callers' line (train, eval: the model's V and the way out) */
  const tz_shard_bad_id *bad = tz_shard_last_bad_id();
  assert_string_equal(bad->path, va);
  assert_int_equal(bad->id, 50256);
  assert_int_equal(bad->pos, 0);
  assert_int_equal(bad->max_id, 50256);
  assert_int_equal(bad->vocab_size, 50256);
  free(tr);
  free(va);
}

/* Write a raw file: header ints (magic, version, ntok) then `body` bytes. */
static void write_raw(const char *path, int32_t magic, int32_t version, int32_t ntok, size_t body) {
  size_t len = 1024 + body;
  unsigned char *b = calloc(1, len);
  int32_t h[3] = {magic, version, ntok};
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 4; j++) b[4 * k + j] = (unsigned char)((uint32_t)h[k] >> (8 * j));
  for (size_t i = 0; i < body; i += 2) b[1024 + i] = (unsigned char)(i / 2 % 200); /* ids < 200 */
  assert_int_equal(tz_write_file_atomic(path, b, len), 0);
  free(b);
}

static void expect_read_error(const char *path, int vocab, const char *a, const char *b) {
  uint16_t *t = (uint16_t *)1;
  size_t n = 99;
  assert_int_not_equal(tz_shard_read(path, vocab, &t, &n), 0);
  assert_null(t);
  assert_int_equal(n, 0);
  tz_test_assert_msg_has(path);
  if (a) tz_test_assert_msg_has(a);
  if (b) tz_test_assert_msg_has(b);
  assert_null(strchr(tz_errmsg(), '\n'));
}

static void test_malformed(void **state) {
  char *dir = tz_test_tmpdir("shard_bad");
  char *p = tz_path_join(dir, "x.bin");

  write_raw(p, 12345, 1, 10, 20);
  expect_read_error(p, 256, "header magic 12345", "expected 20240520");
  write_raw(p, 20240801, 7, 10, 40);
  expect_read_error(p, 256, "header magic 20240801", "Llama-3");
  write_raw(p, 20240520, 3, 10, 20);
  expect_read_error(p, 256, "header version 3", "expected 1");
  write_raw(p, 20240520, 1, 0, 0);
  expect_read_error(p, 256, "header ntok 0", NULL);
  write_raw(p, 20240520, 1, -5, 0);
  expect_read_error(p, 256, "header ntok -5", NULL);
  write_raw(p, 20240520, 1, 10, 22); /* one token too many */
  expect_read_error(p, 256, "file size 1046", "ntok 10");
  write_raw(p, 20240520, 1, 10, 19); /* odd size */
  expect_read_error(p, 256, "file size 1043", "1044");

  /* truncated: a valid shard cut at several lengths, header included */
  int32_t ids[100];
  for (int i = 0; i < 100; i++) ids[i] = i;
  assert_int_equal(tz_shard_write(p, ids, 100), 0);
  char *raw;
  size_t len;
  assert_int_equal(tz_read_file(p, &raw, &len), 0);
  size_t cuts[] = {0, 1, 4, 11, 12, 1000, 1023, 1024, 1025, 1100, len - 1};
  for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
    assert_int_equal(tz_write_file_atomic(p, raw, cuts[k]), 0);
    char want[64];
    snprintf(want, sizeof want, "file size %zu byte%s", cuts[k], cuts[k] == 1 ? "" : "s"); /* "1 byte": singular */
    expect_read_error(p, 256, want, cuts[k] < 1024 ? "truncated" : "ntok 100");
  }
  free(raw);

  /* id >= vocab: names id, position and vocab size */
  ids[42] = 77;
  ids[57] = 90;
  assert_int_equal(tz_shard_write(p, ids, 100), 0);
  expect_read_error(p, 90, "token id 90 at position 57", "vocab size 90");
  expect_read_error(p, 60, "token id 77 at position 42", "vocab size 60");
  uint16_t *t;
  size_t n;
  assert_int_equal(tz_shard_read(p, 100, &t, &n), 0);
  free(t);
  assert_int_equal(tz_shard_read(p, 0, &t, &n), 0); /* 0: no id check */
  free(t);

  /* missing file */
  char *m = tz_path_join(dir, "missing.bin");
  expect_read_error(m, 256, "No such file", NULL);
  assert_false(tz_test_has_temp_file(dir));
  free(m);
  free(p);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_real_llmc_shards),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  return failed ? failed : tz_test_shared_missing ? 77 : 0;
}
