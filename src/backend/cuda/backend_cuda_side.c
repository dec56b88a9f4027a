/* The CUDA backend's side queue (backend.h side_begin / side_end / side_wait): a second stream
 * for work off the critical path -- the backward's weight-gradient matmuls, which nothing reads
 * until the optimizer, and the optimizer's AdamW, which the next forward needs one layer at a
 * time (model.c tz_model_adamw). On one stream every kernel waits for the one before; on two,
 * the GPU may start a dW matmul's blocks on SMs that a memory-bound norm, the attention backward
 * or the last partial wave of an input-gradient matmul leaves idle.
 *
 * While on the side, tzc_ctx.stream, .lt_ws and .scratch are the side stream, its own cuBLASLt
 * workspace (a workspace is in use until its matmul ends, so two streams cannot share one) and
 * its own kernel scratch (tzc_scratch's contract is stream order: bias_bwd's partial sums), so
 * matmul.cu and bias_bwd.cu launch there unchanged.
 *
 * Tickets: side_end records one of kEvents events on the side stream, ticket t on event
 * t % kEvents; side_wait(t) makes the main stream wait for it. An event recorded again by a
 * later ticket (t + kEvents) only makes the wait longer (the side is in order), never shorter.
 * Tickets run 1, 2, ..., 2^30 and start again at 1 (a multiple of kEvents: the events' order
 * goes on across the wrap), so a long run never overflows them. A ticket is waited for at most
 * n_layer + 3 tickets after it is issued (model.c: an update's first part, waited after its
 * n_layer + 1 other parts and the gradient fills), never 2^30 later: kEvents (512) keeps each
 * wait on its own event up to 509 layers. With 32 events, a 48-layer model's forward waited
 * for its embedding part on the event of layer 31's part (ticket t + 32 re-recorded it): the
 * update overlapped a third of the forward at most (the session-36 review).
 *
 * Determinism: each op computes what it computes on one stream, and the caller (model.c) orders
 * every access of a buffer shared between the two queues; the results are the same bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

enum { kEvents = 512 }; /* (a power of two: 2^30 is a multiple of it) */

/* The side's stream, cuBLASLt workspace (lt_ws_bytes) and kernel scratch while on the main
 * queue; swapped with tzc_ctx's (then holding the main ones) while on the side. */
struct tzc_side {
  cudaStream_t stream;
  void *ws;
  void *scratch;
  size_t scratch_bytes;
  cudaEvent_t fork;
  cudaEvent_t ev[kEvents];
  unsigned long long issued; /* tickets issued so far */
};

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)
/* Main <-> side: tzc_scratch then grows whichever scratch tzc_ctx holds, in its stream's order. */
static void swap_queues(tzc_ctx *c) {
  struct tzc_side *s = c->side;
  SWAP(cudaStream_t, c->stream, s->stream);
  SWAP(void *, c->lt_ws, s->ws);
  SWAP(void *, c->scratch, s->scratch);
  SWAP(size_t, c->scratch_bytes, s->scratch_bytes);
  c->on_side = !c->on_side;
}

static void side_begin(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  struct tzc_side *s = c->side;
  if (c->on_side) tz_fatal("cuda: side_begin while on the side queue (model.c pairs them)");
  TZC_CHECK(cudaEventRecord(s->fork, c->stream));
  TZC_CHECK(cudaStreamWaitEvent(s->stream, s->fork, 0));
  swap_queues(c);
}

/* The ticket of the side's n-th piece of work (0-based): 1, 2, ..., 2^30, then 1 again. */
static int ticket_of(unsigned long long n) { return (int)(n % (1ull << 30)) + 1; }

static int side_end(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  struct tzc_side *s = c->side;
  if (!c->on_side) tz_fatal("cuda: side_end without side_begin");
  int t = ticket_of(s->issued++);
  TZC_CHECK(cudaEventRecord(s->ev[t % kEvents], c->stream)); /* (the side stream, still) */
  swap_queues(c);
  return t;
}

static void side_wait(tz_backend *be, int t) {
  tzc_ctx *c = tzc(be);
  struct tzc_side *s = c->side;
  if (t <= 0) return;
  if (c->on_side || !s->issued) tz_fatal("cuda: side_wait on the side queue, or before any side work");
  TZC_CHECK(cudaStreamWaitEvent(c->stream, s->ev[t % kEvents], 0));
}

void tzc_side_join(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  struct tzc_side *s = c->side;
  if (!s || !s->issued || c->on_side) return;
  TZC_CHECK(cudaStreamWaitEvent(c->stream, s->ev[ticket_of(s->issued - 1) % kEvents], 0)); /* the newest */
}

/* TEZGAH_CUDA_SIDE's value as tzc_side_wanted's, TZC_SIDE_DEFAULT when unset or empty, -1 when
 * unknown */
static int parse_side(const char *e) {
  if (!e || !*e) return TZC_SIDE_DEFAULT;
  return !strcmp(e, "0") ? 0 : !strcmp(e, "1") ? 1 : !strcmp(e, "grads") ? 2 : -1;
}

int tzc_side_wanted(void) {
  int v = parse_side(getenv("TEZGAH_CUDA_SIDE"));
  return v < 0 ? TZC_SIDE_DEFAULT : v; /* (an unknown value fails backend creation first) */
}

int tzc_side_env_check(char *why, size_t cap) {
  const char *e = getenv("TEZGAH_CUDA_SIDE");
  if (parse_side(e) >= 0) return 0;
  snprintf(why, cap, "TEZGAH_CUDA_SIDE=%.40s: must be 1, 0 or grads", e);
  return -1;
}

void tzc_side_offer(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  /* not under GELU_EPI's +bgrad: there matmul_dgelu sums fc's bias gradient in its epilogue,
   * which model.c moves to bias_bwd on the side where there is one (other bits) */
  int wanted = tzc_side_wanted();
  if (!wanted || c->prof || (tzc_gelu_epi_mode(c->act == TZ_BF16) & TZC_GELU_BGRAD)) return;
  struct tzc_side *s = calloc(1, sizeof *s);
  if (!s) return;
  c->side = s;
  cudaError_t r = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
  if (r == cudaSuccess) r = cudaEventCreateWithFlags(&s->fork, cudaEventDisableTiming);
  for (int i = 0; i < kEvents && r == cudaSuccess; i++) r = cudaEventCreateWithFlags(&s->ev[i], cudaEventDisableTiming);
  if (r == cudaSuccess) r = cudaMalloc(&s->ws, c->lt_ws_bytes);
  if (r != cudaSuccess) { /* an optional speed-up: one queue, as without it */
    cudaGetLastError();
    if (c->verbose) fprintf(stderr, "cuda: no side queue: %s\n", cudaGetErrorString(r));
    tzc_side_free(be);
    return;
  }
  tzc_mem_account(be, (long long)c->lt_ws_bytes);
  be->side_begin = side_begin;
  be->side_end = side_end;
  be->side_wait = side_wait;
  be->side_update = wanted == 1;
}

void tzc_side_free(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  struct tzc_side *s = c->side;
  if (!s) return;
  if (s->stream) cudaStreamSynchronize(s->stream);
  if (s->ws) {
    cudaFree(s->ws);
    if (be->side_begin) tzc_mem_account(be, -(long long)c->lt_ws_bytes); /* (counted once offered) */
  }
  if (s->scratch) {
    cudaFree(s->scratch);
    tzc_mem_account(be, -(long long)s->scratch_bytes);
  }
  if (s->fork) cudaEventDestroy(s->fork);
  for (int i = 0; i < kEvents; i++)
    if (s->ev[i]) cudaEventDestroy(s->ev[i]);
  if (s->stream) cudaStreamDestroy(s->stream);
  free(s);
  c->side = NULL;
}
