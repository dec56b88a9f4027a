/* OpenBLAS for the CPU matmuls' opt-in path (TZ_MATMUL=blas), loaded on first use.
 *
 * tezgah does not link OpenBLAS (its loading costs every tezgah call ~9 ms of CPU: src/core/
 * dlib.h): the first matmul of a backend created with TZ_MATMUL=blas loads libopenblas.so.0
 * with dlopen (TEZGAH_OPENBLAS_LIB=PATH names another file; else the flavour the build chose,
 * then the soname through the usual search) and takes cblas_sgemm and
 * openblas_set_num_threads from it. When it cannot be
 * loaded, that matmul and all later ones run the plain C GEMM, and one warning line on stderr
 * says so (once per process). Built only with TZ_USE_BLAS (TEZGAH_BLAS=ON and cblas.h found). */
#ifndef TZ_KERNELS_MATMUL_BLAS_LOAD_H
#define TZ_KERNELS_MATMUL_BLAS_LOAD_H
#ifdef TZ_USE_BLAS
#include <cblas.h>

/* Load OpenBLAS once per process (thread-safe). 0 when cblas_sgemm is ready, else -1 with
 * the error message set ("OpenBLAS: cannot load <path>: <reason>"); the outcome is kept, so
 * later calls answer at once. */
int tz_blas_load(void);

/* After a successful tz_blas_load: cblas_sgemm of the loaded library (row-major, fp32;
 * arguments as in the CBLAS standard) and openblas_set_num_threads (threads >= 1). */
extern __typeof__(&cblas_sgemm) tz_blas_sgemm;
void tz_blas_set_threads(int threads);

/* One line for `tezgah info` into out (cap bytes), no newline: "<openblas_get_config()>, <path>"
 * or "no (<why it cannot be loaded>)". Loads the library (tz_blas_load). 1 when it loads, else 0. */
int tz_blas_describe(char *out, size_t cap);
#endif
#endif
