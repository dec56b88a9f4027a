/* Checkpoint container: round trip, truncation at every length, every single-byte
 * corruption, failed commits leave the old file and no temporary file. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/ckpt.h"
#include "core/error.h"
#include "core/fileio.h"
#include "testutil.h"

/* Plain (non-fsync'ed) write for the thousands of damaged copies below. */
static void write_plain(const char *path, const void *d, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(d, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static float params[1000];
static const char config[] = "{\"n_layer\":2}";

/* Writer with sections: params (copied), config (referenced), empty, rng. */
static tz_ckpt_writer *make_writer(void) {
  for (int i = 0; i < 1000; i++) params[i] = (float)i * 0.25f - 3.0f;
  tz_ckpt_writer *w = tz_ckpt_begin();
  assert_int_equal(tz_ckpt_add(w, "params", params, sizeof params), 0);
  assert_int_equal(tz_ckpt_add_ref(w, "config", config, sizeof config), 0);
  assert_int_equal(tz_ckpt_add(w, "empty", NULL, 0), 0);
  uint64_t rng[2] = {0x0123456789abcdefULL, 7};
  assert_int_equal(tz_ckpt_add(w, "rng", rng, sizeof rng), 0);
  return w;
}

static void check_contents(const tz_ckpt *ck) {
  assert_int_equal(tz_ckpt_count(ck), 4);
  assert_string_equal(tz_ckpt_name(ck, 0), "params");
  assert_string_equal(tz_ckpt_name(ck, 3), "rng");
  size_t n;
  const void *p = tz_ckpt_get(ck, "params", &n);
  assert_non_null(p);
  assert_int_equal(n, sizeof params);
  assert_int_equal((uintptr_t)p % 64, 0);
  assert_memory_equal(p, params, sizeof params);
  p = tz_ckpt_get(ck, "config", &n);
  assert_int_equal(n, sizeof config);
  assert_string_equal((const char *)p, config);
  p = tz_ckpt_get(ck, "empty", &n);
  assert_non_null(p);
  assert_int_equal(n, 0);
  const void *r;
  assert_int_equal(tz_ckpt_require(ck, "rng", 16, &r), 0);
  assert_int_equal(((const uint64_t *)r)[1], 7);
}

static void test_round_trip(void **state) {
  char *dir = tz_test_tmpdir("ckpt_rt");
  char *path = tz_path_join(dir, "a.ckpt");
  tz_ckpt_writer *w = make_writer();
  params[0] = 99; /* "params" was copied: this change must not reach the file */
  assert_int_equal(tz_ckpt_commit(w, path), 0);
  params[0] = -3.0f;
  tz_ckpt_free(w);
  assert_false(tz_test_has_temp_file(dir));

  tz_ckpt *ck;
  assert_int_equal(tz_ckpt_open(path, &ck), 0);
  check_contents(ck);
  size_t n = 5;
  assert_null(tz_ckpt_get(ck, "absent", &n));
  assert_int_equal(n, 0);
  const void *d = (const void *)1;
  assert_int_not_equal(tz_ckpt_require(ck, "absent", 4, &d), 0);
  assert_null(d);
  tz_test_assert_msg_has("a.ckpt: missing section 'absent'");
  assert_int_not_equal(tz_ckpt_require(ck, "params", 3996, &d), 0);
  tz_test_assert_msg_has("a.ckpt: section 'params' has 4000 bytes (expected 3996)");
  tz_ckpt_close(ck);

  /* layout: magic, version, count, first entry name/offset */
  char *raw;
  size_t len;
  assert_int_equal(tz_read_file(path, &raw, &len), 0);
  assert_memory_equal(raw, "TZCKPT\0\0", 8);
  assert_int_equal(raw[8], 1);
  assert_int_equal(raw[12], 4);
  assert_string_equal(raw + 16, "params");
  uint64_t off0 = 0;
  for (int i = 0; i < 8; i++) off0 |= (uint64_t)(unsigned char)raw[16 + 48 + i] << (8 * i);
  assert_int_equal(off0, 320); /* 16 + 4*72 = 304 rounded up to 64 */
  free(raw);

  /* bad names */
  w = tz_ckpt_begin();
  assert_int_not_equal(tz_ckpt_add(w, "", "x", 1), 0);
  assert_int_not_equal(tz_ckpt_add(w, "0123456789012345678901234567890123456789012345678", "x", 1), 0);
  assert_int_equal(tz_ckpt_add(w, "012345678901234567890123456789012345678901234", "x", 1), 0);
  assert_int_equal(tz_ckpt_add(w, "dup", "x", 1), 0);
  assert_int_not_equal(tz_ckpt_add(w, "dup", "y", 1), 0);
  tz_test_assert_msg_has("duplicate section 'dup'");
  tz_ckpt_free(w);

  /* zero sections is a valid checkpoint */
  w = tz_ckpt_begin();
  assert_int_equal(tz_ckpt_commit(w, path), 0);
  tz_ckpt_free(w);
  assert_int_equal(tz_ckpt_open(path, &ck), 0);
  assert_int_equal(tz_ckpt_count(ck), 0);
  tz_ckpt_close(ck);
  free(path);
  free(dir);
}

/* Every truncation length and every single-byte corruption is an error, never a crash. */
static void test_truncation_and_corruption(void **state) {
  char *dir = tz_test_tmpdir("ckpt_bad");
  char *good = tz_path_join(dir, "good.ckpt");
  char *bad = tz_path_join(dir, "bad.ckpt");
  tz_ckpt_writer *w = make_writer();
  assert_int_equal(tz_ckpt_commit(w, good), 0);
  tz_ckpt_free(w);
  char *raw;
  size_t len;
  assert_int_equal(tz_read_file(good, &raw, &len), 0);
  tz_ckpt *ck = (tz_ckpt *)1;
  /* a cut past the table is told by its size, not as a checksum mismatch (the table checksum is
   * the file's last 8 bytes, the first thing a cut takes) */
  uint32_t n_sec = (uint32_t)(unsigned char)raw[12] | (uint32_t)(unsigned char)raw[13] << 8;
  size_t table_fits = 16 + 72 * (size_t)n_sec + 8;
  for (size_t cut = 0; cut < len; cut++) {
    write_plain(bad, raw, cut);
    if (tz_ckpt_open(bad, &ck) == 0) fail_msg("truncation to %zu of %zu bytes was accepted", cut, len);
    assert_null(ck);
    assert_non_null(strstr(tz_errmsg(), bad));
    char want[128];
    snprintf(want, sizeof want, ": truncated: %zu bytes, expected %zu (the size its table of %u sections gives; %zu",
             cut, len, n_sec, len - cut);
    if (cut >= table_fits && !strstr(tz_errmsg(), want)) fail_msg("cut to %zu bytes: %s", cut, tz_errmsg());
  }
  /* one extra byte is rejected too, by the size */
  char *longer = malloc(len + 1);
  memcpy(longer, raw, len);
  longer[len] = 0;
  write_plain(bad, longer, len + 1);
  assert_int_not_equal(tz_ckpt_open(bad, &ck), 0);
  char want[128];
  snprintf(want, sizeof want, ": %zu bytes, expected %zu (the size its table of %u sections gives): 1 byte of trailing data",
           len + 1, len, n_sec);
  tz_test_assert_msg_has(want);
  free(longer);

  int saw_section_checksum = 0, saw_table_checksum = 0;
  for (size_t i = 0; i < len; i++) {
    raw[i] ^= 0x10;
    write_plain(bad, raw, len);
    if (tz_ckpt_open(bad, &ck) == 0) fail_msg("flipping byte %zu of %zu was accepted", i, len);
    assert_null(strchr(tz_errmsg(), '\n'));
    if (strstr(tz_errmsg(), "section 'params' checksum mismatch")) saw_section_checksum = 1;
    if (strstr(tz_errmsg(), "table checksum mismatch")) saw_table_checksum = 1;
    raw[i] ^= 0x10;
  }
  assert_true(saw_section_checksum);
  assert_true(saw_table_checksum);
  raw[0] = 'X';
  write_plain(bad, raw, len);
  assert_int_not_equal(tz_ckpt_open(bad, &ck), 0);
  tz_test_assert_msg_has("not a tezgah checkpoint: starts with bytes 58 5a 43 4b 50 54 00 00, not the magic");
  /* a short text file: not "truncated" (the magic is checked over the bytes there are) */
  write_plain(bad, "hi\n", 3);
  assert_int_not_equal(tz_ckpt_open(bad, &ck), 0);
  tz_test_assert_msg_has("bad.ckpt: not a tezgah checkpoint: a text file (starts with \"hi\\n\"), not the magic");
  write_plain(bad, "{\"n_layer\": 12, \"d_model\": 768}", 31);
  assert_int_not_equal(tz_ckpt_open(bad, &ck), 0);
  tz_test_assert_msg_has("a text file (starts with \"{\\\"n_layer\\\": 12, ...\")");
  raw[0] = 'T';
  write_plain(bad, raw, 10); /* the magic's first bytes, no whole header: truncated */
  assert_int_not_equal(tz_ckpt_open(bad, &ck), 0);
  tz_test_assert_msg_has("truncated: 10 bytes, smaller than the 24-byte minimum checkpoint");
  raw[8] = 2;
  write_plain(bad, raw, len);
  assert_int_not_equal(tz_ckpt_open(bad, &ck), 0);
  tz_test_assert_msg_has("version 2 (expected 1)");
  free(raw);

  /* missing file */
  char *missing = tz_path_join(dir, "missing.ckpt");
  assert_int_not_equal(tz_ckpt_open(missing, &ck), 0);
  tz_test_assert_msg_has("missing.ckpt: No such file");
  free(missing);
  free(good);
  free(bad);
  free(dir);
}

static void read_all(const char *path, char **d, size_t *n) { assert_int_equal(tz_read_file(path, d, n), 0); }

/* A failed commit leaves the existing file as it was and no temporary file. */
static void test_failed_commit(void **state) {
  char *dir = tz_test_tmpdir("ckpt_fail");
  char *path = tz_path_join(dir, "c.ckpt");
  tz_ckpt_writer *w0 = tz_ckpt_begin();
  assert_int_equal(tz_ckpt_add(w0, "step", "\x01\x00\x00\x00", 4), 0);
  assert_int_equal(tz_ckpt_commit(w0, path), 0);
  tz_ckpt_free(w0);
  char *before;
  size_t nbefore;
  read_all(path, &before, &nbefore);

  /* 1. the directory is unwritable. Permission bits do not stop root, so as root the commit
   * runs with the effective uid of "nobody" (seteuid; the saved uid lets us switch back). */
  tz_ckpt_writer *w = make_writer();
  assert_int_equal(chmod(dir, 0555), 0);
  int as_root = geteuid() == 0, dropped = as_root && seteuid(65534) == 0;
  if (!as_root || dropped) {
    int rc1 = tz_ckpt_commit(w, path);
    if (dropped) assert_int_equal(seteuid(0), 0);
    assert_int_not_equal(rc1, 0);
    tz_test_assert_msg_has(path);
    tz_test_assert_msg_has("Permission denied");
  } else {
    printf("note: cannot drop root privileges; unwritable-directory case not run\n");
  }
  assert_int_equal(chmod(dir, 0755), 0);
  /* 2. the parent directory does not exist */
  char *nodir = tz_path_join(dir, "no/such/dir/c.ckpt");
  assert_int_not_equal(tz_ckpt_commit(w, nodir), 0);
  tz_test_assert_msg_has(nodir);
  tz_test_assert_msg_has("No such file or directory");
  free(nodir);

  /* 3. the disk "fills up" mid-write: RLIMIT_FSIZE makes writes past 1000 bytes fail with
   * EFBIG, like ENOSPC (works as root too) */
  struct rlimit old;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {1000, old.rlim_max};
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int rc = tz_ckpt_commit(w, path);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, oldsig);
  assert_int_not_equal(rc, 0);
  tz_test_assert_msg_has(path);
  tz_test_assert_msg_has("File too large");
  assert_null(strchr(tz_errmsg(), '\n'));

  char *after;
  size_t nafter;
  read_all(path, &after, &nafter);
  assert_int_equal(nafter, nbefore);
  assert_memory_equal(after, before, nbefore);
  free(after);
  assert_false(tz_test_has_temp_file(dir));
  tz_ckpt *ck;
  assert_int_equal(tz_ckpt_open(path, &ck), 0);
  assert_int_equal(tz_ckpt_count(ck), 1);
  tz_ckpt_close(ck);

  /* and the same writer still commits fine afterwards, replacing the file */
  assert_int_equal(tz_ckpt_commit(w, path), 0);
  tz_ckpt_free(w);
  assert_int_equal(tz_ckpt_open(path, &ck), 0);
  check_contents(ck);
  tz_ckpt_close(ck);
  assert_false(tz_test_has_temp_file(dir));
  free(before);
  free(path);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_truncation_and_corruption),
      cmocka_unit_test(test_failed_commit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
