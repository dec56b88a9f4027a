/* GFLOP/s of the CPU matmul family, plain C path vs OpenBLAS path, on the shapes of the
 * llm.c CPU reference config (GPT-2: L=4, n_head=4, C=256, T=256, B=8, Vp=50304, so
 * N = B·T = 2048 rows): each linear layer's forward Y = X·Wᵀ, dX = dY·W and dW += dYᵀ·X.
 * Usage: bench_matmul [threads] [reps] [c]   (threads default 2, reps default 5; best of reps;
 * "c": the plain C path only, for a build without OpenBLAS, where the BLAS column would be the
 * C path again). The last line weighs the shapes as one training step does (4 layers × the 9
 * layer shapes + the 3 lm_head shapes; attention's own matmuls are not among them): total
 * FLOPs / total time. The C path's micro-kernel tile, MC and loop order follow TEZGAH_MM_TILE,
 * TEZGAH_MM_MC and TEZGAH_MM_LOOP (docs/PERF.md). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "core/error.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
  const char *name;
  int M, K, N, kind; /* kind 0 matmul_t, 1 matmul, 2 matmul_at */
} shape;

static double run(tz_backend *be, shape s, int reps) {
  size_t na = (size_t)s.M * s.K, nb = (size_t)s.K * s.N, nc = (size_t)s.M * s.N;
  tz_buf *a = be->alloc(be, na * 4, "a"), *b = be->alloc(be, nb * 4, "b"), *c = be->alloc(be, nc * 4, "c");
  tz_slice sa = {a, 0}, sb = {b, 0}, sc = {c, 0};
  be->fill(be, sa, 0.5f, na, TZ_F32);
  be->fill(be, sb, 0.25f, nb, TZ_F32);
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) { /* first run warms caches and thread pools */
    double t0 = now();
    if (s.kind == 0) be->matmul_t(be, sc, sa, sb, TZ_NONE, s.M, s.K, s.N, 0);
    if (s.kind == 1) be->matmul(be, sc, sa, sb, s.M, s.K, s.N, 0);
    if (s.kind == 2) be->matmul_at(be, sc, sa, sb, s.M, s.K, s.N, 1);
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  be->free(be, a), be->free(be, b), be->free(be, c);
  return 2.0 * s.M * s.K * s.N / best * 1e-9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2, reps = argc > 2 ? atoi(argv[2]) : 5;
  int c_only = argc > 3 && argv[3][0] == 'c';
  const int Nr = 2048, C = 256, V = 50304;
  shape shapes[] = {
      {"qkv fwd   X·Wᵀ", Nr, C, 3 * C, 0},   {"qkv dX    dY·W", Nr, 3 * C, C, 1},
      {"qkv dW    dYᵀX", 3 * C, Nr, C, 2},   {"fc fwd    X·Wᵀ", Nr, C, 4 * C, 0},
      {"fc dX     dY·W", Nr, 4 * C, C, 1},   {"fc dW     dYᵀX", 4 * C, Nr, C, 2},
      {"proj fwd  X·Wᵀ", Nr, 4 * C, C, 0},   {"proj dX   dY·W", Nr, C, 4 * C, 1},
      {"proj dW   dYᵀX", C, Nr, 4 * C, 2},   {"lm_head fwd", Nr, C, V, 0},
      {"lm_head dX", Nr, V, C, 1},           {"lm_head dW", V, Nr, C, 2},
  };
  int ns = sizeof shapes / sizeof shapes[0];
  tz_backend *be[2];
  setenv("TZ_MATMUL", "c", 1);
  be[0] = tz_backend_create("cpu", threads, NULL);
  setenv("TZ_MATMUL", "blas", 1);
  be[1] = c_only ? NULL : tz_backend_create("cpu", threads, NULL);
  if (!be[0] || (!c_only && !be[1])) {
    fprintf(stderr, "bench_matmul: %s\n", tz_errmsg());
    return 1;
  }
  const char *mc = getenv("TEZGAH_MM_MC"), *loop = getenv("TEZGAH_MM_LOOP");
  printf("matmul GFLOP/s, %d threads, best of %d (M x K x N); GEMM kernel %s, MC %s, loop %s\n",
         threads, reps, tz_cpu_gemm_kernel(), mc && *mc ? mc : "default",
         loop && *loop ? loop : "panels");
  printf("%-16s %6s %6s %6s %9s %9s\n", "shape", "M", "K", "N", "C", "BLAS");
  double flops = 0, tc = 0, tb = 0;
  for (int i = 0; i < ns; i++) {
    double gc = run(be[0], shapes[i], reps), gb = c_only ? 0 : run(be[1], shapes[i], reps);
    double f = 2.0 * shapes[i].M * shapes[i].K * shapes[i].N * 1e-9, w = i < 9 ? 4 : 1;
    flops += w * f, tc += w * f / gc, tb += c_only ? 0 : w * f / gb;
    printf("%-16s %6d %6d %6d %9.1f %9.1f\n", shapes[i].name, shapes[i].M, shapes[i].K, shapes[i].N,
           gc, gb);
    fflush(stdout);
  }
  printf("%-16s %6s %6s %6s %9.1f %9.1f\n", "weighted step", "", "", "", flops / tc,
         c_only ? 0.0 : flops / tb);
  be[0]->destroy(be[0]);
  if (be[1]) be[1]->destroy(be[1]);
  return 0;
}
