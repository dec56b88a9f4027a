/* The matmul family (linear layers' forward and backward): llm.c matmul_forward /
 * matmul_backward split into the three shapes a linear layer needs, plus bias_bwd.
 *
 * Two paths, chosen once per backend (TZ_MATMUL=c|blas, read at tz_backend_cpu_create):
 * - blas (default when built with TZ_USE_BLAS): cblas_sgemm. OpenBLAS partitions work
 *   statically, so results are bit-identical for a fixed thread count.
 * - c: a plain C GEMM in the Goto/BLIS structure (Goto & van de Geijn 2008, "Anatomy of
 *   high-performance matrix multiplication"): B is packed into KC×NR panels shared by the
 *   team, each thread packs an MC×KC block of A into MR-row strips, and an MR×NR
 *   register-tile micro-kernel (AVX-512 intrinsics, scalar fallback) runs over them.
 *   Every output element is summed by one thread in k order: deterministic for any
 *   thread count.
 */
#include <string.h>
#include <omp.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#ifdef TZ_USE_BLAS
#include <cblas.h>
#endif

#include "kernels/cpu_kernels.h"

enum { MR = TZ_MM_MR, NR = TZ_MM_NR, MC = TZ_MM_MC, KC = TZ_MM_KC, NC = TZ_MM_NC };

/* A strided matrix view: element (r, c) is p[r*rs + c*cs]. Transposes are stride swaps. */
typedef struct {
  const float *p;
  size_t rs, cs;
} view;

/* Pack rows [r0, r0+mr) x k-range [k0, k0+kc) of A into MR-row strips: dst[k*MR + i].
 * Rows past mr are zero so the micro-kernel never needs an edge case on its inputs. */
static void pack_a(float *dst, view A, int r0, int mr, int k0, int kc) {
  for (int k = 0; k < kc; k++)
    for (int i = 0; i < MR; i++)
      dst[k * MR + i] = i < mr ? A.p[(size_t)(r0 + i) * A.rs + (size_t)(k0 + k) * A.cs] : 0.0f;
}

/* Pack k-range [k0, k0+kc) x columns [c0, c0+nr) of B into one NR-wide panel: dst[k*NR+j]. */
static void pack_b(float *dst, view B, int k0, int kc, int c0, int nr) {
  if (B.cs == 1 && nr == NR) { /* rows of B are contiguous: straight copies */
    for (int k = 0; k < kc; k++) memcpy(dst + k * NR, B.p + (size_t)(k0 + k) * B.rs + c0, NR * sizeof(float));
    return;
  }
  for (int j = 0; j < NR; j++)
    for (int k = 0; k < kc; k++)
      dst[k * NR + j] = j < nr ? B.p[(size_t)(k0 + k) * B.rs + (size_t)(c0 + j) * B.cs] : 0.0f;
}

/* C[mr, nr] (ldc) = (load ? C : 0) + (bias ? bias : 0) + a·b over kc, a an MR strip and b
 * an NR panel. Full tiles store straight into C; edge tiles go through a local tile. */
static void kernel(int kc, const float *a, const float *b, float *C, size_t ldc, int mr, int nr,
                   int load, const float *bias) {
  float tile[MR * NR] __attribute__((aligned(64)));
#ifdef __AVX512F__
  __m512 c0[MR], c1[MR];
  for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int k = 0; k < kc; k++) {
    __m512 b0 = _mm512_load_ps(b + k * NR), b1 = _mm512_load_ps(b + k * NR + 16);
    for (int i = 0; i < MR; i++) {
      __m512 ai = _mm512_set1_ps(a[k * MR + i]);
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
    }
  }
  if (mr == MR && nr == NR) {
    __m512 bs0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
    __m512 bs1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
    for (int i = 0; i < MR; i++) {
      float *ci = C + (size_t)i * ldc;
      __m512 x0 = _mm512_add_ps(c0[i], bs0), x1 = _mm512_add_ps(c1[i], bs1);
      if (load) {
        x0 = _mm512_add_ps(_mm512_loadu_ps(ci), x0);
        x1 = _mm512_add_ps(_mm512_loadu_ps(ci + 16), x1);
      }
      _mm512_storeu_ps(ci, x0);
      _mm512_storeu_ps(ci + 16, x1);
    }
    return;
  }
  for (int i = 0; i < MR; i++) {
    _mm512_store_ps(tile + i * NR, c0[i]);
    _mm512_store_ps(tile + i * NR + 16, c1[i]);
  }
#else
  memset(tile, 0, sizeof tile);
  for (int k = 0; k < kc; k++)
    for (int i = 0; i < MR; i++)
      for (int j = 0; j < NR; j++) tile[i * NR + j] += a[k * MR + i] * b[k * NR + j];
#endif
  for (int i = 0; i < mr; i++) {
    float *ci = C + (size_t)i * ldc;
    for (int j = 0; j < nr; j++) {
      float x = tile[i * NR + j] + (bias ? bias[j] : 0.0f);
      ci[j] = load ? ci[j] + x : x;
    }
  }
}

/* C[M,N] (ldc = N) (+)= A·B (+ bias), A an M×K view, B a K×N view. */
static void gemm_c(tz_cpu_ctx *cx, float *C, view A, view B, const float *bias, int M, int K,
                   int N, int acc) {
  if (K == 0) { /* empty sum: only the bias (and the old value) remain */
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++)
        C[(size_t)m * N + n] = (acc ? C[(size_t)m * N + n] : 0.0f) + (bias ? bias[n] : 0.0f);
    return;
  }
  float *bp = cx->bpack;
  int nt = cx->threads, mblk = (M + MC - 1) / MC;
#pragma omp parallel num_threads(nt)
  {
    float *ap = cx->apack + (size_t)omp_get_thread_num() * MC * KC;
    for (int jc = 0; jc < N; jc += NC) {
      int nc = N - jc < NC ? N - jc : NC, npan = (nc + NR - 1) / NR;
      /* Tasks are (M block, run of NR panels). With few M blocks per thread (a weight
       * gradient of C = 256 rows has 2 blocks: 2 of 16 threads busy) each block's panels
       * are split into nsplit runs so that there are about 4 tasks per thread; each task
       * packs its A block unless its previous task had the same (the extra packing is at
       * most 1/(NR·panels per run) of its FMAs).
       * Each output element is still summed by one task in k order: the split changes no
       * result bit, for any thread count. */
      int nsplit = 1;
      if (mblk < 4 * nt) {
        nsplit = (4 * nt + mblk - 1) / mblk;
        if (nsplit > npan) nsplit = npan;
      }
      for (int pc = 0; pc < K; pc += KC) {
        int kc = K - pc < KC ? K - pc : KC;
#pragma omp for schedule(static)
        for (int jp = 0; jp < npan; jp++) {
          int c0 = jc + jp * NR;
          pack_b(bp + (size_t)jp * NR * kc, B, pc, kc, c0, N - c0 < NR ? N - c0 : NR);
        }
        int load = acc || pc > 0, packed_ic = -1; /* the A block in this thread's ap */
        /* the implicit barrier keeps bp intact until every task is done */
#pragma omp for schedule(static)
        for (int task = 0; task < mblk * nsplit; task++) {
          int ic = task / nsplit * MC, js = task % nsplit;
          int mc = M - ic < MC ? M - ic : MC;
          int jp0 = (int)((long)npan * js / nsplit), jp1 = (int)((long)npan * (js + 1) / nsplit);
          if (ic != packed_ic) /* consecutive tasks of one thread often share their block */
            for (int ir = 0; ir < mc; ir += MR)
              pack_a(ap + (size_t)ir * kc, A, ic + ir, mc - ir < MR ? mc - ir : MR, pc, kc);
          packed_ic = ic;
          for (int jp = jp0; jp < jp1; jp++) {
            int c0 = jc + jp * NR, nr = N - c0 < NR ? N - c0 : NR;
            const float *bb = bias && pc == 0 ? bias + c0 : NULL;
            for (int ir = 0; ir < mc; ir += MR)
              kernel(kc, ap + (size_t)ir * kc, bp + (size_t)jp * NR * kc,
                     C + (size_t)(ic + ir) * N + c0, N, mc - ir < MR ? mc - ir : MR, nr, load, bb);
          }
        }
      }
    }
  }
}

#ifdef TZ_USE_BLAS
/* Row-major sgemm; the bias is pre-added to C and then accumulated (beta = 1). */
static void gemm_blas(float *C, const float *A, int ta, const float *B, int tb, const float *bias,
                      int M, int K, int N, int acc) {
  float beta = acc ? 1.0f : 0.0f;
  if (bias) {
    for (int m = 0; m < M; m++) {
      float *cm = C + (size_t)m * N;
      for (int n = 0; n < N; n++) cm[n] = (acc ? cm[n] : 0.0f) + bias[n];
    }
    beta = 1.0f;
  }
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == 0.0f) memset(C, 0, (size_t)M * N * sizeof(float));
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
              N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, beta, C, N);
}
#endif

/* out [M,N] (+)= a [M,K] · b [N,K]ᵀ (+ bias [N] if present). Forward Y = X·Wᵀ + b with W
 * stored [out, in]. acc = 0 writes, 1 accumulates. */
void tz_cpu_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias,
                     int M, int K, int N, int acc) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
  const float *bs = tz_present(bias) ? TZ_F(bias) : NULL;
#ifdef TZ_USE_BLAS
  if (cx->use_blas) {
    gemm_blas(TZ_F(out), TZ_F(a), 0, TZ_F(b), 1, bs, M, K, N, acc);
    return;
  }
#endif
  view A = {TZ_F(a), (size_t)K, 1}, B = {TZ_F(b), 1, (size_t)K};
  gemm_c(cx, TZ_F(out), A, B, bs, M, K, N, acc);
}

/* out [M,N] (+)= a [M,K] · b [K,N]. Backward dX = dY·W. */
void tz_cpu_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N,
                   int acc) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
#ifdef TZ_USE_BLAS
  if (cx->use_blas) {
    gemm_blas(TZ_F(out), TZ_F(a), 0, TZ_F(b), 0, NULL, M, K, N, acc);
    return;
  }
#endif
  view A = {TZ_F(a), (size_t)K, 1}, B = {TZ_F(b), (size_t)N, 1};
  gemm_c(cx, TZ_F(out), A, B, NULL, M, K, N, acc);
}

/* out [M,N] (+)= a [K,M]ᵀ · b [K,N]. Backward dW += dYᵀ·X (acc = 1 for parameter grads). */
void tz_cpu_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K,
                      int N, int acc) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
#ifdef TZ_USE_BLAS
  if (cx->use_blas) {
    gemm_blas(TZ_F(out), TZ_F(a), 1, TZ_F(b), 0, NULL, M, K, N, acc);
    return;
  }
#endif
  view A = {TZ_F(a), 1, (size_t)M}, B = {TZ_F(b), (size_t)N, 1};
  gemm_c(cx, TZ_F(out), A, B, NULL, M, K, N, acc);
}

/* db [N] += Σ_m dout [M,N] (parameter grad, +=). Threads own column blocks and sum rows in
 * order: deterministic for any thread count. */
void tz_cpu_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  float *d = TZ_F(db);
  const float *y = TZ_F(dout);
#pragma omp parallel for schedule(static)
  for (int c0 = 0; c0 < N; c0 += 64) {
    int c1 = c0 + 64 < N ? c0 + 64 : N;
    float acc[64] = {0};
    for (int m = 0; m < M; m++)
      for (int c = c0; c < c1; c++) acc[c - c0] += y[(size_t)m * N + c];
    for (int c = c0; c < c1; c++) d[c] += acc[c - c0];
  }
}
