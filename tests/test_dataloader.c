/* Data loader: batches equal the token stream, save/restore, wraparound, errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "data/dataloader.h"
#include "data/shard.h"
#include "testutil.h"

/* Shard `name` in dir with n tokens: token i = (base + i) % 1000. */
static char *make_shard(const char *dir, const char *name, size_t n, int base) {
  char *p = tz_path_join(dir, name);
  int32_t *ids = malloc(n * sizeof *ids);
  for (size_t i = 0; i < n; i++) ids[i] = (int32_t)((base + i) % 1000);
  assert_int_equal(tz_shard_write(p, ids, n), 0);
  free(ids);
  return p;
}

/* Batches follow the stream: inputs = window, targets = window shifted by one, consecutive
 * batches advance by B*T, shards change at the end, wrap with epoch+1. */
static void test_stream_and_wrap(void **state) {
  char *dir = tz_test_tmpdir("loader_stream");
  const int B = 2, T = 5, BT = B * T;
  /* shard a: 35 tokens -> windows at 0, 10, 20 (30+11 > 35); shard b: 21 -> 0, 10 */
  char *a = make_shard(dir, "s_000.bin", 35, 0);
  char *b = make_shard(dir, "s_001.bin", 21, 500);
  char pat[4096];
  snprintf(pat, sizeof pat, "%s/s_*.bin", dir);
  tz_loader *l;
  assert_int_equal(tz_loader_open(&l, pat, 1000, B, T), 0);
  assert_int_equal(tz_loader_num_shards(l), 2);
  assert_string_equal(tz_loader_shard_path(l, 0), a);
  assert_string_equal(tz_loader_shard_path(l, 1), b);
  assert_int_equal(tz_loader_shard_tokens(l, 0), 35);
  assert_int_equal(tz_loader_total_tokens(l), 56);
  assert_int_equal(tz_loader_batches_per_epoch(l), 5);
  int32_t x[10], y[10];
  struct {
    int shard, off, epoch;
  } expect[] = {{0, 0, 0}, {0, 10, 0}, {0, 20, 0}, {1, 0, 0}, {1, 10, 0}, {0, 0, 1}, {0, 10, 1}};
  for (size_t k = 0; k < sizeof expect / sizeof *expect; k++) {
    tz_loader_pos p = tz_loader_get_pos(l);
    assert_int_equal(p.shard, expect[k].shard);
    assert_int_equal(p.offset, expect[k].off);
    assert_int_equal(p.epoch, expect[k].epoch);
    assert_int_equal(tz_loader_next(l, x, y), 0);
    int base = expect[k].shard ? 500 : 0;
    for (int i = 0; i < BT; i++) {
      assert_int_equal(x[i], (base + expect[k].off + i) % 1000);
      assert_int_equal(y[i], (base + expect[k].off + i + 1) % 1000);
    }
  }
  tz_loader_reset(l);
  tz_loader_pos p0 = tz_loader_get_pos(l);
  assert_int_equal(p0.shard + p0.offset + p0.epoch, 0);
  assert_int_equal(tz_loader_next(l, x, y), 0);
  assert_int_equal(x[0], 0);
  tz_loader_free(l);

  /* comma-separated list keeps the given order */
  char list[8192];
  snprintf(list, sizeof list, "%s,%s", b, a);
  assert_int_equal(tz_loader_open(&l, list, 1000, B, T), 0);
  assert_string_equal(tz_loader_shard_path(l, 0), b);
  assert_int_equal(tz_loader_next(l, x, y), 0);
  assert_int_equal(x[0], 500);
  tz_loader_free(l);
  free(a);
  free(b);
  free(dir);
}

/* Saving the position and restoring it into a fresh loader yields the same batches. */
static void test_save_restore(void **state) {
  char *dir = tz_test_tmpdir("loader_pos");
  char *a = make_shard(dir, "a.bin", 1000, 3);
  char *b = make_shard(dir, "b.bin", 777, 11);
  char *c = make_shard(dir, "c.bin", 300, 29);
  char list[8192];
  snprintf(list, sizeof list, "%s,%s, %s", a, b, c);
  const int B = 3, T = 16, BT = B * T;
  tz_loader *l1, *l2;
  assert_int_equal(tz_loader_open(&l1, list, 1000, B, T), 0);
  int32_t x1[BT], y1[BT], x2[BT], y2[BT];
  for (int s = 0; s < 25; s++) assert_int_equal(tz_loader_next(l1, x1, y1), 0);
  tz_loader_pos saved = tz_loader_get_pos(l1);
  unsigned char enc[TZ_LOADER_POS_BYTES];
  tz_loader_pos_encode(saved, enc);
  assert_int_equal(enc[0], saved.shard & 0xff);
  tz_loader_pos dec = tz_loader_pos_decode(enc);
  assert_memory_equal(&dec, &saved, sizeof saved);

  assert_int_equal(tz_loader_open(&l2, list, 1000, B, T), 0);
  assert_int_equal(tz_loader_set_pos(l2, dec), 0);
  for (int s = 0; s < 200; s++) { /* crosses shards and epochs */
    assert_int_equal(tz_loader_next(l1, x1, y1), 0);
    assert_int_equal(tz_loader_next(l2, x2, y2), 0);
    assert_memory_equal(x1, x2, sizeof x1);
    assert_memory_equal(y1, y2, sizeof y1);
    tz_loader_pos p1 = tz_loader_get_pos(l1), p2 = tz_loader_get_pos(l2);
    assert_memory_equal(&p1, &p2, sizeof p1);
  }
  assert_true(tz_loader_get_pos(l1).epoch >= 2);

  /* invalid positions are rejected and leave the position unchanged */
  tz_loader_pos before = tz_loader_get_pos(l2);
  assert_int_not_equal(tz_loader_set_pos(l2, (tz_loader_pos){3, 0, 0}), 0);
  tz_test_assert_msg_has("shard 3");
  assert_int_not_equal(tz_loader_set_pos(l2, (tz_loader_pos){0, 7, 0}), 0);
  tz_test_assert_msg_has("offset 7");
  assert_int_not_equal(tz_loader_set_pos(l2, (tz_loader_pos){2, 288, 0}), 0); /* 288+49 > 300 */
  tz_test_assert_msg_has("c.bin");
  tz_loader_pos after = tz_loader_get_pos(l2);
  assert_memory_equal(&before, &after, sizeof before);
  assert_int_equal(tz_loader_set_pos(l2, (tz_loader_pos){2, 240, 5}), 0);
  assert_int_equal(tz_loader_next(l2, x2, y2), 0);
  assert_int_equal(x2[0], (29 + 240) % 1000);
  tz_loader_free(l1);
  tz_loader_free(l2);
  free(a);
  free(b);
  free(c);
  free(dir);
}

/* Shuffled rows: every row is a genuine window (targets = inputs shifted, starting at a
 * multiple of T), an epoch draws each window at most once, a new epoch draws a different
 * order, and a saved position restores the same batches. */
static void test_shuffle(void **state) {
  char *dir = tz_test_tmpdir("loader_shuffle");
  const int B = 3, T = 4, n = 1000; /* token i = i % 1000: the start of a window is its id */
  char *p = make_shard(dir, "s.bin", n, 0);
  tz_loader *l;
  assert_int_equal(tz_loader_open(&l, p, 1000, B, T), 0);
  tz_loader_shuffle(l, 42);
  int32_t in[12], tg[12], first_epoch[12];
  int seen[250] = {0}, batches = (int)tz_loader_batches_per_epoch(l);
  for (int k = 0; k < batches; k++) {
    assert_int_equal(tz_loader_next(l, in, tg), 0);
    if (k == 0) memcpy(first_epoch, in, sizeof in);
    for (int b = 0; b < B; b++) {
      assert_int_equal(in[b * T] % T, 0);
      for (int t = 0; t < T; t++) {
        assert_int_equal(in[b * T + t], in[b * T] + t);
        assert_int_equal(tg[b * T + t], in[b * T] + t + 1);
      }
      assert_int_equal(seen[in[b * T] / T]++, 0);
    }
  }
  assert_int_equal(tz_loader_get_pos(l).epoch, 1);
  tz_loader_pos pos = tz_loader_get_pos(l);
  assert_int_equal(tz_loader_next(l, in, tg), 0);
  assert_memory_not_equal(in, first_epoch, sizeof in);
  int32_t again[12];
  assert_int_equal(tz_loader_set_pos(l, pos), 0);
  assert_int_equal(tz_loader_next(l, again, tg), 0);
  assert_memory_equal(in, again, sizeof in);
  tz_loader_free(l);
  free(p);
  free(dir);
}

static void test_errors(void **state) {
  char *dir = tz_test_tmpdir("loader_err");
  char *a = make_shard(dir, "a.bin", 100, 0);
  char *small = make_shard(dir, "small.bin", 64, 0);
  tz_loader *l = (tz_loader *)1;
  /* too small: B*T+1 = 4*16+1 = 65 > 64 */
  char list[8192];
  snprintf(list, sizeof list, "%s,%s", a, small);
  assert_int_not_equal(tz_loader_open(&l, list, 1000, 4, 16), 0);
  assert_null(l);
  tz_test_assert_msg_has("small.bin");
  tz_test_assert_msg_has("corpus smaller than one batch");
  tz_test_assert_msg_has("64 tokens");
  tz_test_assert_msg_has("65");
  /* exactly B*T+1 is enough: every batch is the same window */
  assert_int_equal(tz_loader_open(&l, small, 1000, 3, 21), 0);
  int32_t x[63], y[63];
  for (int k = 0; k < 3; k++) {
    assert_int_equal(tz_loader_next(l, x, y), 0);
    assert_int_equal(x[0], 0);
    assert_int_equal(y[62], 63);
    assert_int_equal(tz_loader_get_pos(l).epoch, k + 1);
  }
  tz_loader_free(l);
  /* vocab validated at open: ids reach 99 */
  assert_int_not_equal(tz_loader_open(&l, a, 50, 2, 2), 0);
  tz_test_assert_msg_has("a.bin");
  tz_test_assert_msg_has("token id 50");
  /* no matches, missing file, empty list, bad shape */
  char pat[4096];
  snprintf(pat, sizeof pat, "%s/nothing_*.bin", dir);
  assert_int_not_equal(tz_loader_open(&l, pat, 1000, 1, 1), 0);
  tz_test_assert_msg_has("no files match");
  snprintf(pat, sizeof pat, "%s/missing.bin", dir);
  assert_int_not_equal(tz_loader_open(&l, pat, 1000, 1, 1), 0);
  tz_test_assert_msg_has("missing.bin");
  assert_int_not_equal(tz_loader_open(&l, " , ", 1000, 1, 1), 0);
  tz_test_assert_msg_has("no files given (empty list ' , ')");
  /* a pattern under a missing directory matches nothing (glob's ENOENT is no read error) */
  snprintf(pat, sizeof pat, "%s/nodir/*.bin", dir);
  assert_int_not_equal(tz_loader_open(&l, pat, 1000, 1, 1), 0);
  tz_test_assert_msg_has("nodir/*.bin: no files match");
  assert_int_not_equal(tz_loader_open(&l, a, 1000, 0, 4), 0);
  tz_test_assert_msg_has("B=0");
  free(a);
  free(small);
  free(dir);
}

/* The real llm.c val shard: first batch = first B*T+1 tokens. */
static void test_real_shard(void **state) {
  char *va = tz_test_shared_or_skip("llmc/tiny_shakespeare_val.bin");
  if (!va) skip();
  uint16_t *t;
  size_t n;
  assert_int_equal(tz_shard_read(va, 50257, &t, &n), 0);
  tz_loader *l;
  const int B = 4, T = 64;
  assert_int_equal(tz_loader_open(&l, va, 50257, B, T), 0);
  assert_int_equal(tz_loader_batches_per_epoch(l), (32768 - 1) / (B * T));
  int32_t x[B * T], y[B * T];
  for (int s = 0; s < 3; s++) {
    assert_int_equal(tz_loader_next(l, x, y), 0);
    for (int i = 0; i < B * T; i++) {
      assert_int_equal(x[i], t[s * B * T + i]);
      assert_int_equal(y[i], t[s * B * T + i + 1]);
    }
  }
  free(t);
  tz_loader_free(l);
  free(va);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stream_and_wrap),
      cmocka_unit_test(test_save_restore),
      cmocka_unit_test(test_shuffle),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_real_shard),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  return failed ? failed : tz_test_shared_missing ? 77 : 0;
}
