/* Training throughput on the CPU backend: full steps (forward, fused cross-entropy, backward,
 * grad norm, AdamW) on random tokens, for a fixed GPT-2 shape (llm.c's CPU reference config:
 * L=4, n_head=4, C=256, T=256, B=8, V=50257 padded to 50304) and a llama shape.
 * Prints a table: median step time, tokens/s and achieved GFLOP/s, with FLOPs counted as
 * 6·params·tokens (the convention of the llm.c figure in docs/PERF.md; it also counts the
 * embedding lookups as if they were matmuls) and, separately, the matmul work
 * 6·(non-embedding params + C·V) + 12·L·C·T per token (../shared/docs/PEERS.md's count).
 *   build/bench/bench_train [steps=5] [which=all|gpt2|llama]
 * Threads: OMP_NUM_THREADS (default: all cores). Matmul path: TZ_MATMUL=c|blas. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/rng.h"
#include "model/model.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void run(const char *name, tz_config c, int B, int T, int steps) {
  if (tz_config_finalize(&c)) {
    fprintf(stderr, "%s: %s\n", name, tz_last_error());
    exit(1);
  }
  tz_backend *be = tz_backend_create("cpu", 0, NULL);
  tz_model *m;
  if (!be || tz_model_create(be, &c, &m) || tz_model_alloc_training(m, B, T)) {
    fprintf(stderr, "%s: %s\n", name, tz_last_error());
    exit(1);
  }
  tz_model_init_weights(m, 1);
  size_t N = (size_t)B * T;
  int32_t *in = malloc(N * sizeof *in), *tg = malloc(N * sizeof *tg);
  tz_rng r;
  tz_rng_seed(&r, 42, 0);
  double *dt = malloc((size_t)(steps + 1) * sizeof *dt), loss = 0;
  for (int s = 0; s <= steps; s++) { /* step 0 is warm-up */
    for (size_t i = 0; i < N; i++) {
      in[i] = (int32_t)tz_rng_below(&r, (uint32_t)c.vocab_size);
      tg[i] = (int32_t)tz_rng_below(&r, (uint32_t)c.vocab_size);
    }
    double t0 = now_s();
    tz_model_zero_grads(m);
    loss = tz_model_train_micro(m, in, tg, 1.0f);
    double norm = tz_model_grad_norm(m);
    tz_adamw_hp hp = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.0f, norm > 1 ? (float)(1 / norm) : 1.0f, s + 1};
    tz_model_adamw(m, &hp);
    be->sync(be);
    dt[s] = now_s() - t0;
  }
  qsort(dt + 1, steps, sizeof *dt, cmp_d);
  double med = dt[1 + steps / 2];
  size_t P = m->lay.total;
  /* embedding tables: wte (+ wpe), and an untied lm_head, which the C·V term counts */
  size_t emb = (size_t)c.padded_vocab * c.d_model * (c.tied ? 1 : 2) +
               (c.arch == TZ_ARCH_GPT2 ? (size_t)c.max_seq_len * c.d_model : 0);
  double f_simple = 6.0 * P * N;
  double f_peers = (6.0 * (P - emb + (double)c.d_model * c.vocab_size) + 12.0 * c.n_layer * c.d_model * T) * N;
  printf("| %-34s | %5.2fM | %2d | %7.3f s | %8.0f | %6.1f | %6.1f | %.3f |\n", name, P / 1e6,
         omp_get_max_threads(), med, N / med, f_simple / med / 1e9, f_peers / med / 1e9, loss);
  free(in);
  free(tg);
  free(dt);
  tz_model_free(m);
  be->destroy(be);
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 5;
  const char *which = argc > 2 ? argv[2] : "all";
  const char *mm = getenv("TZ_MATMUL");
  printf("matmul path: %s\n\n", mm ? mm : "default");
  printf("| config | params | thr | step (median of %d) | tok/s | GFLOP/s 6PN | GFLOP/s PEERS | loss |\n", steps);
  printf("|---|---|---|---|---|---|---|---|\n");
  if (!strcmp(which, "all") || !strcmp(which, "gpt2")) {
    tz_config g = {TZ_ARCH_GPT2, 4, 4, 0, 256, 0, 50257, 0, 256, 1, 0, 0};
    run("gpt2 L4 H4 C256 T256 B8 V50257", g, 8, 256, steps);
  }
  if (!strcmp(which, "all") || !strcmp(which, "llama")) {
    tz_config l = {TZ_ARCH_LLAMA, 4, 8, 2, 256, 0, 32000, 0, 256, 0, 0, 0};
    run("llama L4 H8/2 C256 T256 B8 V32000", l, 8, 256, steps);
    tz_config d = {TZ_ARCH_LLAMA, 4, 4, 0, 128, 0, 2048, 0, 128, 1, 0, 0};
    run("main job: llama L4 C128 T128 B16", d, 16, 128, steps);
  }
  return 0;
}
