/* Per-op GPU time for `train --profile` (TEZGAH_PROFILE=1): a pair of CUDA events around
 * each op call, from a pool created with the backend (a step allocates nothing). When the
 * pool is full, or at print time, the recorded pairs are read (one host wait) and added to
 * per-op totals. The table has the WebGPU profile's shape (tz_webgpu_profile_print). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_rt.h"
#include "core/error.h"

#define PAIRS 2048
#define LABELS 64

struct tzc_prof {
  cudaEvent_t ev[2 * PAIRS];
  int lab[PAIRS];
  double flop[PAIRS], bytes[PAIRS];
  int n;     /* pairs recorded, not yet read */
  int depth; /* nesting of begin/end (only the outermost call is timed) */
  int cur;   /* label of the open outermost call */
  const char *labels[LABELS];
  double ns[LABELS], calls[LABELS], lflop[LABELS], lbytes[LABELS];
  int nlabels;
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

static int label(tzc_prof *p, const char *op) {
  for (int i = 0; i < p->nlabels; i++)
    if (p->labels[i] == op || !strcmp(p->labels[i], op)) return i;
  if (p->nlabels < LABELS - 1) {
    p->labels[p->nlabels] = op;
    return p->nlabels++;
  }
  p->labels[LABELS - 1] = "(other)";
  if (p->nlabels < LABELS) p->nlabels = LABELS;
  return LABELS - 1;
}

/* Read every recorded pair into the totals (waits for the last one). */
static void harvest(tzc_prof *p) {
  if (!p->n) return;
  TZC_CHECK(cudaEventSynchronize(p->ev[2 * p->n - 1]));
  for (int i = 0; i < p->n; i++) {
    float ms = 0;
    TZC_CHECK(cudaEventElapsedTime(&ms, p->ev[2 * i], p->ev[2 * i + 1]));
    int l = p->lab[i];
    p->ns[l] += ms * 1e6;
    p->calls[l] += 1;
    p->lflop[l] += p->flop[i];
    p->lbytes[l] += p->bytes[i];
  }
  p->n = 0;
}

void tzc_prof_begin(tz_backend *be, const char *op) {
  tzc_prof *p = tzc(be)->prof;
  if (!p || p->depth++ > 0) return;
  if (p->n == PAIRS) harvest(p);
  p->cur = label(p, op);
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
  /* rates: matmuls GFLOP/s (2MNK); others GB/s of the bytes the op nominally moves */
  tz_prof_row rows[LABELS];
  int n = 0;
  for (int i = 0; i < p->nlabels; i++)
    if (p->calls[i]) rows[n++] = (tz_prof_row){p->labels[i], p->ns[i], p->calls[i], p->lflop[i], p->lbytes[i]};
  tz_profile_table("cuda profile (CUDA events", rows, n, steps);
}

void tz_cuda_profile_reset(tz_backend *be) {
  if (!be || strcmp(be->name, "cuda") || !tzc(be)->prof) return;
  tzc_prof *p = tzc(be)->prof;
  harvest(p);
  memset(p->ns, 0, sizeof p->ns);
  memset(p->calls, 0, sizeof p->calls);
  memset(p->lflop, 0, sizeof p->lflop);
  memset(p->lbytes, 0, sizeof p->lbytes);
}
