/* The NCCL communicator (src/dist/comm_nccl.c) on ONE GPU: a world of one rank, bootstrapped
 * the way `train --nproc` does it (a unique id in TEZGAH_NCCL_ID), working in place on the
 * CUDA backend's device buffers and stream.
 *
 * With one rank every collective is the identity, so the expected values are the inputs
 * themselves (exact): reduce_scatter + all_gather (tz_comm_allreduce's pair) leave a
 * buffer of world·shard_n floats unchanged, broadcast from rank 0 too, allgather_f64 returns
 * the doubles given, tz_comm_agree(ok) is 0. What this checks is the plumbing a 2-GPU run
 * needs and a 1-GPU machine can run: libnccl found and loaded (TEZGAH_NCCL_LIB or
 * libnccl.so.2), ncclGetUniqueId, ncclCommInitRank, collectives queued on the backend's stream
 * at the right device addresses (slices at a nonzero offset), the device staging of host
 * doubles, and a clean teardown. Several GPUs: tests/test_cuda_dist.sh (training, 2 ranks).
 *
 * SKIPPED (exit 77) without a CUDA device or without NCCL, unless TEZGAH_CUDA_REQUIRED=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_testutil.h"
#include "dist/comm.h"

static tz_backend *g;

static int setup(void **state) {
  (void)state;
  g = ct_cuda("fp32");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (g) g->destroy(g);
  return 0;
}

/* A one-rank NCCL communicator, or skip (no NCCL library). */
static tz_comm *nccl_one(void) {
  char hex[512];
  if (tz_nccl_unique_id_hex(hex, sizeof hex)) {
    char why[1200];
    snprintf(why, sizeof why, "NCCL unavailable: %s", tz_errmsg());
    const char *req = getenv("TEZGAH_CUDA_REQUIRED");
    if (req && *req && strcmp(req, "0") != 0) fail_msg("TEZGAH_CUDA_REQUIRED is set but %s", why);
    tz_test_skip_all(why);
  }
  setenv("TEZGAH_NCCL_ID", hex, 1);
  tz_dist_env env = {.rank = 0, .world = 1, .local_rank = 0, .local_world = 1, .launcher = TZ_LAUNCH_LOCAL};
  tz_comm *c = calloc(1, sizeof *c);
  c->rank = 0;
  c->world = 1;
  c->be = g;
  c->kind = "single";
  if (tz_comm_nccl_init(c, &env)) fail_msg("tz_comm_nccl_init: %s", tz_errmsg());
  assert_string_equal(c->kind, "nccl");
  return c;
}

static void test_nccl_one_rank(void **state) {
  (void)state;
  tz_comm *c = nccl_one();
  const size_t shard = tz_dist_shard_size(1000, 1), off = 320; /* floats; off: a view inside a buffer */
  assert_true(shard >= 1000 && shard % 64 == 0);
  float *x = malloc((off + shard) * sizeof *x), *y = malloc((off + shard) * sizeof *y);
  for (size_t i = 0; i < off + shard; i++) x[i] = (float)i * 0.25f - 7.0f;
  tz_buf *b = g->alloc(g, (off + shard) * sizeof(float), "nccl test");
  assert_non_null(b);
  g->upload(g, (tz_slice){b, 0}, x, (off + shard) * sizeof(float));
  tz_slice s = {b, off * sizeof(float)};
  c->reduce_scatter(c, s, shard);
  c->all_gather(c, s, shard);
  c->broadcast(c, s, shard, 0);
  c->barrier(c);
  g->download(g, y, (tz_slice){b, 0}, (off + shard) * sizeof(float));
  assert_memory_equal(x, y, (off + shard) * sizeof(float));

  double d[3] = {1.5, -2.25, 1e300}, all[3] = {0};
  c->allgather_f64(c, d, all, 3);
  assert_memory_equal(d, all, sizeof d);
  assert_int_equal(tz_comm_agree(c, 1), 0);

  g->free(g, b);
  tz_comm_free(c);
  free(x);
  free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_nccl_one_rank)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
