/* Per-op GPU time for `train --profile` (TEZGAH_PROFILE=1): a pair of CUDA events around
 * each op call, from a pool created with the backend (a step allocates nothing). When the
 * pool is full, or at print time, the recorded pairs are read (one host wait) and added to
 * per-op totals (tz_prof_totals, backend.h), printed by the shared tz_prof_print as the
 * WebGPU profile is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_rt.h"
#include "core/error.h"

#define PAIRS 2048

struct tzc_prof {
  cudaEvent_t ev[2 * PAIRS];
  int lab[PAIRS];
  double flop[PAIRS], bytes[PAIRS];
  int n;     /* pairs recorded, not yet read */
  int depth; /* nesting of begin/end (only the outermost call is timed) */
  int cur;   /* label of the open outermost call */
  tz_prof_totals tot; /* per-op totals (backend.h), printed by tz_prof_print */
};

tzc_prof *tzc_prof_create(void) {
  tzc_prof *p = tz_calloc(1, sizeof *p);
  for (int i = 0; i < 2 * PAIRS; i++)
    if (cudaEventCreate(&p->ev[i]) != cudaSuccess) {
      cudaGetLastError();
      fprintf(stderr, "tezgah: warning: cuda: cannot create profiling events; --profile is off\n");
      tzc_prof_free(p);
      return NULL;
    }
  return p;
}

void tzc_prof_free(tzc_prof *p) {
  if (!p) return;
  for (int i = 0; i < 2 * PAIRS; i++)
    if (p->ev[i]) cudaEventDestroy(p->ev[i]);
  free(p);
}

enum { kArith = 16 }; /* FLOP a byte below which an op's row shows GB/s (harvest) */

/* Read every recorded pair into the totals (waits for the last one). */
static void harvest(tzc_prof *p) {
  if (!p->n) return;
  TZC_CHECK(cudaEventSynchronize(p->ev[2 * p->n - 1]));
  for (int i = 0; i < p->n; i++) {
    float ms = 0;
    TZC_CHECK(cudaEventElapsedTime(&ms, p->ev[2 * i], p->ev[2 * i + 1]));
    tz_prof_row *r = &p->tot.row[p->lab[i]];
    r->ns += ms * 1e6;
    r->calls += 1;
    /* the table's rate is GFLOP/s where flop is nonzero: kept for ops of at least kArith FLOP a
     * byte (matmuls, attention); the memory-bound ops' rate is then GB/s, the figure to hold
     * against the card's bandwidth (their FLOP counts gave "2286.8 GFLOP/s" for the
     * cross-entropy) */
    if (p->flop[i] >= kArith * p->bytes[i]) r->flop += p->flop[i];
    r->bytes += p->bytes[i];
  }
  p->n = 0;
}

void tzc_prof_begin(tz_backend *be, const char *op) {
  tzc_prof *p = tzc(be)->prof;
  if (!p || p->depth++ > 0) return;
  if (p->n == PAIRS) harvest(p);
  p->cur = tz_prof_label(&p->tot, op);
  TZC_CHECK(cudaEventRecord(p->ev[2 * p->n], tzc(be)->stream));
}

void tzc_prof_end(tz_backend *be, double flops, double bytes) {
  tzc_prof *p = tzc(be)->prof;
  if (!p || p->depth <= 0 || --p->depth > 0) return;
  TZC_CHECK(cudaEventRecord(p->ev[2 * p->n + 1], tzc(be)->stream));
  p->lab[p->n] = p->cur;
  p->flop[p->n] = flops;
  p->bytes[p->n] = bytes;
  p->n++;
}

void tz_cuda_profile_print(tz_backend *be, double steps) {
  if (!be || strcmp(be->name, "cuda") || !tzc(be)->prof) return;
  tzc_prof *p = tzc(be)->prof;
  harvest(p);
  /* rates: matmuls and attention GFLOP/s (2MNK; attention's causal count); the others GB/s of
   * the bytes the op nominally moves (harvest) */
  tz_prof_print(&p->tot, "cuda profile (CUDA events", steps);
}

void tz_cuda_profile_reset(tz_backend *be) {
  if (!be || strcmp(be->name, "cuda") || !tzc(be)->prof) return;
  tzc_prof *p = tzc(be)->prof;
  harvest(p);
  tz_prof_clear(&p->tot);
}
