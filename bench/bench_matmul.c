/* GFLOP/s of the CPU matmul family, plain C path vs OpenBLAS path, on the shapes of the
 * llm.c CPU reference config (GPT-2: L=4, n_head=4, C=256, T=256, B=8, Vp=50304, so
 * N = B·T = 2048 rows): each linear layer's forward Y = X·Wᵀ, dX = dY·W and dW += dYᵀ·X.
 * Usage: bench_matmul [threads] [reps]   (threads default 2, reps default 5; best of reps) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"

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
  be[1] = tz_backend_create("cpu", threads, NULL);
  if (!be[0] || !be[1]) return 1;
  printf("matmul GFLOP/s, %d threads, best of %d (M x K x N)\n", threads, reps);
  printf("%-16s %6s %6s %6s %9s %9s\n", "shape", "M", "K", "N", "C", "BLAS");
  for (int i = 0; i < ns; i++) {
    double gc = run(be[0], shapes[i], reps), gb = run(be[1], shapes[i], reps);
    printf("%-16s %6d %6d %6d %9.1f %9.1f\n", shapes[i].name, shapes[i].M, shapes[i].K, shapes[i].N,
           gc, gb);
    fflush(stdout);
  }
  be[0]->destroy(be[0]);
  be[1]->destroy(be[1]);
  return 0;
}
