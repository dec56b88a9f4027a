/* omp.h for the wasm build (scripts/build_wasm.sh): the OpenMP runtime calls tezgah makes, as
 * one thread. The wasm build compiles with -fopenmp-simd, so `#pragma omp simd` still
 * vectorizes and every `#pragma omp parallel` is ignored: the code runs as a team of one, which
 * is what these answer (the OpenMP specification's stub semantics for a serial program). The
 * CPU backend's results do not depend on the thread count (docs/RELIABILITY.md), so a team of
 * one computes the native build's bits. Not for native builds: gcc's libgomp provides omp.h. */
#ifndef TZ_WASM_OMP_H
#define TZ_WASM_OMP_H
#include <time.h>

static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_in_parallel(void) { return 0; }
static inline void omp_set_num_threads(int n) { (void)n; }
/* Seconds on a monotonic clock (WASI clock_time_get, CLOCK_MONOTONIC); only differences mean
 * anything, as in OpenMP. */
static inline double omp_get_wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif
