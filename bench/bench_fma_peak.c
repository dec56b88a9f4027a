/* The FMA peak of this CPU, measured: the denominator of docs/PERF.md's "% of FMA peak".
 * Each thread runs 16 independent chains of fused multiply-adds on full vector registers
 * (zmm with AVX-512F, else ymm with FMA3: 16 or 8 fp32 lanes), enough chains to cover the
 * FMA latency times the FMA ports of current cores (4 cycles × 2 ports = 8 in flight), so
 * the loop runs at the FMA throughput limit. FLOPs = 2 per lane per FMA. Threads: OpenMP
 * (OMP_NUM_THREADS or the argument), each on its own chains, no shared data.
 *   build/bench/bench_fma_peak [threads=all] [seconds=1]
 * Prints: threads, vector width, GFLOP/s total and per thread (best of 3 runs). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#if defined(__AVX512F__)
#define LANES 16
typedef __m512 vec;
#define VSET(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VSUM(v) _mm512_reduce_add_ps(v)
#elif defined(__FMA__)
#define LANES 8
typedef __m256 vec;
#define VSET(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float VSUM(vec v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
#define LANES 1
typedef float vec;
#define VSET(x) (x)
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VSUM(v) (v)
#endif

/* iters × 16 FMAs on LANES lanes; returns a sum so the compiler keeps the work */
static float chains(long iters) {
  vec a = VSET(0.999999f), b = VSET(1e-7f);
  vec c[16];
  for (int i = 0; i < 16; i++) c[i] = VSET((float)i);
  for (long it = 0; it < iters; it++)
    for (int i = 0; i < 16; i++) c[i] = VFMA(c[i], a, b);
  float s = 0;
  for (int i = 0; i < 16; i++) s += VSUM(c[i]);
  return s;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : omp_get_max_threads();
  double seconds = argc > 2 ? atof(argv[2]) : 1.0;
  if (threads < 1) threads = 1;
  /* calibrate: iterations that take ~seconds on one thread */
  long iters = 1 << 20;
  for (;;) {
    double t0 = now_s();
    volatile float sink = chains(iters);
    (void)sink;
    double dt = now_s() - t0;
    if (dt > 0.05) {
      iters = (long)(iters * seconds / dt);
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now_s();
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += chains(iters);
    double dt = now_s() - t0;
    double gf = 2.0 * LANES * 16 * (double)iters * threads / dt / 1e9;
    if (gf > best) best = gf;
    if (total == 12345.0f) printf("(unlikely)\n");
  }
  printf("fma peak: %d threads, %d fp32 lanes, %.1f GFLOP/s (%.1f per thread)\n", threads, LANES, best,
         best / threads);
  return 0;
}
