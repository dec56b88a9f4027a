/* Recorded steps on CUDA (backend.h's replay / record_begin / record_end): the ops of one
 * decoding step are captured from the backend's stream into a CUDA graph once per key (the
 * model uses the number of rows B) and replayed with one cudaGraphLaunch, instead of ~150
 * kernel launches from the host per token.
 *
 * A key's first use is not recorded (record_begin returns 0): the ops run as usual and may
 * grow device buffers (decoding partials, kernel scratch) and fill cuBLASLt's algorithm cache;
 * the second use is captured (cudaStreamBeginCapture, thread-local mode), instantiated and
 * launched; later uses replay it. Replaying is valid because the recorded ops read every
 * per-step value (tokens, positions) from device memory and the buffers they touch stay where
 * they are; a reallocation of scratch or decoding buffers bumps tzc_ctx.graph_gen, which makes
 * older recordings stale (replay returns 0, the step is recorded again); freeing any buffer
 * (tzc_free: e.g. a model freed, another made on the same backend) drops every recording. A capture that fails
 * (an op that cannot be captured) turns recording off for the key: record_end returns 0 and the
 * model runs the ops as usual. TEZGAH_CUDA_GRAPHS=0 or profiling (TEZGAH_PROFILE: per-op
 * events) turn recording off altogether.
 * While a step is recorded the few-row matmuls are launched with programmatic dependent launch
 * (gemv.cu: each lets the next one start and load its weights while it finishes); our other
 * kernels carry it whether recorded or not (cuda_common.cuh's tzc_launch: a cudaLaunchKernelEx
 * with the attribute is captured as a programmatic edge, CUDA 12.3+). A recording that fails with
 * them is made again without them, and tzc_ctx.pdl_off then holds for every launch of the backend
 * (TEZGAH_CUDA_PDL=0: never with them). */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_rt.h"
#include "core/error.h"

#define TZC_NGRAPHS 32

typedef struct {
  int key, used, broken;
  unsigned gen;
  cudaGraphExec_t exec; /* NULL: not recorded yet */
} graph_slot;

/* The slot of `key` (added at first use; NULL when all TZC_NGRAPHS are taken). */
static graph_slot *slot_of(tzc_ctx *c, int key, int add) {
  if (!c->graphs) c->graphs = tz_calloc(TZC_NGRAPHS, sizeof(graph_slot));
  graph_slot *g = c->graphs;
  for (int i = 0; i < TZC_NGRAPHS; i++)
    if (g[i].used && g[i].key == key) return &g[i];
  if (!add) return NULL;
  for (int i = 0; i < TZC_NGRAPHS; i++)
    if (!g[i].used) {
      g[i].used = 1;
      g[i].key = key;
      return &g[i];
    }
  return NULL;
}

int tzc_replay(tz_backend *be, int key) {
  tzc_ctx *c = tzc(be);
  if (c->graphs_off) return 0;
  graph_slot *g = slot_of(c, key, 0);
  if (!g || !g->exec || g->gen != c->graph_gen) return 0;
  TZC_CHECK(cudaGraphLaunch(g->exec, c->stream));
  return 1;
}

int tzc_record_begin(tz_backend *be, int key) {
  tzc_ctx *c = tzc(be);
  if (c->graphs_off) return 0;
  graph_slot *g = slot_of(c, key, 1);
  if (!g || g->broken) return 0;
  if (!g->exec && !g->gen) { /* first use: a warm-up run, not recorded */
    g->gen = c->graph_gen + 1; /* ≠ 0: "warmed up" */
    return 0;
  }
  if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    g->broken = 1;
    return 0;
  }
  c->pdl = !c->pdl_off;
  return 1;
}

int tzc_record_end(tz_backend *be, int key) {
  tzc_ctx *c = tzc(be);
  graph_slot *g = slot_of(c, key, 0);
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  int pdl = c->pdl;
  c->pdl = 0;
  if (e != cudaSuccess || !g) {
    cudaGetLastError();
    if (exec) cudaGraphExecDestroy(exec);
    if (pdl) c->pdl_off = 1; /* record again later without programmatic launches */
    else if (g) g->broken = 1;
    if (c->verbose) fprintf(stderr, "cuda: recording step %d failed (%s): ops run one by one\n", key, cudaGetErrorString(e));
    return 0;
  }
  if (g->exec) TZC_CHECK(cudaGraphExecDestroy(g->exec));
  g->exec = exec;
  g->gen = c->graph_gen;
  TZC_CHECK(cudaGraphLaunch(exec, c->stream));
  return 1;
}

void tzc_graphs_free(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  graph_slot *g = c->graphs;
  if (!g) return;
  for (int i = 0; i < TZC_NGRAPHS; i++)
    if (g[i].exec) cudaGraphExecDestroy(g[i].exec);
  free(g);
  c->graphs = NULL;
}
