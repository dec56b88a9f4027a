/* train --recompute auto|on|off (src/train/recompute.h):
 * - the decision: auto keeps the activations stored when they fit or the free memory is
 *   unknown, recomputes when only that fits, and reports neither; on / off whatever the sizes;
 *   the boundaries (a need equal to the free bytes fits);
 * - the mode's parsing and names, and the TEZGAH_DEBUG_MEM_FREE hook's;
 * - the sizes it decides on (tz_model_training_bytes, tz_model_inference_bytes) are what the
 *   allocations then take: the CPU backend's mem_used grows by exactly them, for both model
 *   families, with and without recompute, in one arena and one buffer per tensor
 *   (be->act_buffers), and for a data-parallel layout (padding, ZeRO-1 shards);
 * - the backend's free-memory query: NULL on the CPU (documented in backend.h).
 * The CLI side (the note, the error, the losses of auto equal to on's) is tests/test_cli.sh's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "model/model.h"
#include "testutil.h"
#include "train/recompute.h"

static void test_decide(void **s) {
  const size_t store = 1000, rc = 600, U = TZ_MEM_UNKNOWN;
  /* auto */
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, 5000), TZ_RC_STORE);  /* fits */
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, 1000), TZ_RC_STORE);  /* exactly */
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, 999), TZ_RC_RECOMPUTE);
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, 600), TZ_RC_RECOMPUTE);
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, 599), TZ_RC_NEITHER);
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, 0), TZ_RC_NEITHER);
  assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_AUTO, store, rc, U), TZ_RC_STORE);   /* unknown */
  assert_int_equal(tz_recompute_decide(-1, store, rc, 700), TZ_RC_RECOMPUTE);            /* other: auto */
  /* on / off: whatever the sizes (the allocation reports a failure, as before auto) */
  const size_t frees[] = {0, 599, 600, 999, 1000, 5000, U};
  for (size_t i = 0; i < sizeof frees / sizeof *frees; i++) {
    assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_ON, store, rc, frees[i]), TZ_RC_RECOMPUTE);
    assert_int_equal(tz_recompute_decide(TZ_RECOMPUTE_OFF, store, rc, frees[i]), TZ_RC_STORE);
  }
}

static void test_parse(void **s) {
  int m = -5;
  assert_int_equal(tz_recompute_parse("auto", "--recompute", &m), 0);
  assert_int_equal(m, TZ_RECOMPUTE_AUTO);
  assert_int_equal(tz_recompute_parse("on", "--recompute", &m), 0);
  assert_int_equal(m, TZ_RECOMPUTE_ON);
  assert_int_equal(tz_recompute_parse("off", "--recompute", &m), 0);
  assert_int_equal(m, TZ_RECOMPUTE_OFF);
  const char *bad[] = {"", "ON", "yes", "1", "auto "};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    m = -5;
    assert_int_not_equal(tz_recompute_parse(bad[i], "--recompute", &m), 0);
    assert_int_equal(m, -5);
    tz_test_assert_msg_has("is not auto, on or off");
  }
  tz_recompute_parse("yes", "--recompute", &m);
  assert_string_equal(tz_last_error(), "--recompute: 'yes' is not auto, on or off");
  assert_string_equal(tz_recompute_name(TZ_RECOMPUTE_AUTO), "auto");
  assert_string_equal(tz_recompute_name(TZ_RECOMPUTE_ON), "on");
  assert_string_equal(tz_recompute_name(TZ_RECOMPUTE_OFF), "off");
}

static void test_debug_free(void **s) {
  size_t b = 7;
  unsetenv("TEZGAH_DEBUG_MEM_FREE");
  assert_int_equal(tz_recompute_debug_free(&b), 0);
  assert_int_equal(b, 7);
  setenv("TEZGAH_DEBUG_MEM_FREE", "", 1);
  assert_int_equal(tz_recompute_debug_free(&b), 0);
  setenv("TEZGAH_DEBUG_MEM_FREE", "123456789", 1);
  assert_int_equal(tz_recompute_debug_free(&b), 1);
  assert_int_equal(b, 123456789);
  setenv("TEZGAH_DEBUG_MEM_FREE", "0", 1);
  assert_int_equal(tz_recompute_debug_free(&b), 1);
  assert_int_equal(b, 0);
  const char *bad[] = {"-1", "1e9", "12 ", "0x10", "lots", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("TEZGAH_DEBUG_MEM_FREE", bad[i], 1);
    assert_int_equal(tz_recompute_debug_free(&b), -1);
    tz_test_assert_msg_has("TEZGAH_DEBUG_MEM_FREE: '");
  }
  unsetenv("TEZGAH_DEBUG_MEM_FREE");
}

static tz_config small(tz_arch arch) {
  tz_config c = {0};
  c.arch = arch;
  c.n_layer = 3;
  c.n_head = 4;
  c.n_kv_head = arch == TZ_ARCH_LLAMA ? 2 : 0;
  c.d_model = 32;
  c.vocab_size = 37; /* padded */
  c.max_seq_len = 16;
  c.tied = 1;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

/* The sizes the decision uses equal what the allocations take (the CPU backend counts every
 * byte it allocates: mem_used). */
static void check_sizes(tz_arch arch) {
  tz_backend *be = tz_backend_create("cpu", 1, NULL);
  assert_non_null(be);
  assert_null(be->mem_free); /* the CPU cannot tell (backend.h) */
  tz_config c = small(arch);
  const int B = 3, T = 10;
  for (int per = 0; per < 2; per++)
    for (int world = 1; world <= 3; world += 2)
      for (int rc = 0; rc < 2; rc++) {
        be->act_buffers = per;
        tz_model *m;
        assert_int_equal(tz_model_create(be, &c, &m), 0);
        m->dist_world = world, m->dist_rank = 0, m->zero = world > 1;
        size_t acts = 0, acts_other = 0;
        size_t want = tz_model_training_bytes(m, B, T, rc, &acts);
        tz_model_training_bytes(m, B, T, !rc, &acts_other);
        assert_int_equal(tz_model_training_bytes(m, B, T, rc, NULL), want);
        m->recompute = rc;
        size_t before = be->mem_used(be);
        assert_int_equal(tz_model_alloc_training(m, B, T), 0);
        size_t got = be->mem_used(be) - before;
        printf("%s %s world %d recompute %d: training %zu bytes (arena %zu), allocated %zu\n",
               arch == TZ_ARCH_GPT2 ? "gpt2" : "llama", per ? "per tensor" : "arena", world, rc, want, acts, got);
        assert_int_equal(got, want);
        assert_int_equal(acts, m->train.bytes);
        if (rc) assert_true(acts < acts_other); /* recompute leaves tensors out */
        else assert_true(acts > acts_other);
        before = be->mem_used(be);
        size_t inf = tz_model_inference_bytes(m, 2);
        assert_int_equal(tz_model_alloc_inference_rows(m, 2), 0);
        assert_int_equal(be->mem_used(be) - before, inf);
        tz_model_free(m);
        assert_int_equal(be->mem_used(be), 0);
      }
  be->destroy(be);
}
static void test_sizes_llama(void **s) { check_sizes(TZ_ARCH_LLAMA); }
static void test_sizes_gpt2(void **s) { check_sizes(TZ_ARCH_GPT2); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decide),      cmocka_unit_test(test_parse),      cmocka_unit_test(test_debug_free),
      cmocka_unit_test(test_sizes_llama), cmocka_unit_test(test_sizes_gpt2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
