/* The matmul family (linear layers' forward and backward): llm.c matmul_forward /
 * matmul_backward split into the three shapes a linear layer needs, plus bias_bwd.
 *
 * Two paths, chosen once per backend (TZ_MATMUL=c|blas, read at tz_backend_cpu_create):
 * - c (the default): a GEMM in the Goto/BLIS structure (Goto & van de Geijn 2008, "Anatomy of
 *   high-performance matrix multiplication"): each KC-deep slice of B is packed into NR-wide
 *   panels (by each thread for its own band of C in teams of up to TZ_MM_BAND_THREADS, else
 *   once, shared by the team), an MC×KC block of A is packed into MR-row strips, and a
 *   register-tile micro-kernel (matmul_ukernel_cpu.c: AVX-512, AVX2+FMA or scalar fmaf,
 *   picked at run time; the AVX-512 tile's height, MC and the macro-kernel's loop order are
 *   choices per CPU: TEZGAH_MM_TILE, TEZGAH_MM_MC, TEZGAH_MM_LOOP) runs over them. Every output
 *   element is one fused multiply-add chain in k order per KC slice, the slices added in
 *   order, by one thread: bit-identical for any thread count, CPU, build flags, tile, MC, loop
 *   order, matrix size and buffer address.
 * - blas (opt-in, when built with TZ_USE_BLAS): cblas_sgemm. OpenBLAS picks its kernel by CPU
 *   and splits work by thread count and shape, so its bits change with those (a run resumed
 *   with another thread count, or a model whose vocabulary is padded differently, differs in
 *   the last bits: docs/RELIABILITY.md). OpenBLAS is loaded by the backend's first matmul
 *   (blas_load.h); when it cannot be, the c path runs and stderr says so once.
 */
#include <string.h>
#include <omp.h>
#include <stdio.h>

#include "core/error.h"
#include "kernels/cpu_kernels.h"
#include "kernels/matmul/blas_load.h"

enum { KC = TZ_MM_KC, NC = TZ_MM_NC };
#define TZ_MM_BAND_C_BYTES ((size_t)4 << 20) /* see gemm_band */

/* A strided matrix view: element (r, c) is p[r*rs + c*cs]. Transposes are stride swaps. */
typedef struct {
  const float *p;
  size_t rs, cs;
} view;

/* Pack rows [r0, r0+mr) x k-range [k0, k0+kc) of A into one MR-row strip: dst[k*MR + i].
 * Rows past mr are zero so the micro-kernel never needs an edge case on its inputs. */
static void pack_a(const tz_mm_ukernel *uk, float *dst, int MR, view A, int r0, int mr, int k0,
                   int kc) {
  if (A.cs == 1) { /* row-major A (forward X, backward dY): transposed 8 × 8 at a time */
    uk->pack_t(dst, MR, A.p + (size_t)r0 * A.rs + k0, A.rs, mr, kc);
    return;
  }
  if (A.rs == 1 && mr == MR) { /* Aᵀ view (weight gradients' dYᵀ): MR contiguous per k */
    for (int k = 0; k < kc; k++)
      memcpy(dst + k * MR, A.p + r0 + (size_t)(k0 + k) * A.cs, MR * sizeof(float));
    return;
  }
  for (int k = 0; k < kc; k++)
    for (int i = 0; i < MR; i++)
      dst[k * MR + i] = i < mr ? A.p[(size_t)(r0 + i) * A.rs + (size_t)(k0 + k) * A.cs] : 0.0f;
}

/* Pack a whole mc-row block of an Aᵀ view (A.rs == 1: the weight gradients' dYᵀ, whose rows
 * of A are the columns of dY) into its MR-row strips, dst[ir*kc + k*MR + i] (rows past mc
 * zero). k outermost: each source row's mc contiguous floats are read once, start to end, and
 * the rows kc ahead are prefetched. Packing strip by strip instead read 32 bytes of each of kc
 * rows, one memcpy call per 32 bytes, per strip; for the lm_head dW (rows 201 KB apart, one
 * page each) that was latency-bound (bench_matmul 1 thread: lm_head dW 50 GFLOP/s against
 * 92-125 for the layers' shapes). A copy: no arithmetic, so the same bits. */
#ifndef PACK_AHEAD
#define PACK_AHEAD 8 /* rows prefetched ahead */
#endif
static void pack_a_t_block(float *dst, int MR, view A, int r0, int mc, int k0, int kc) {
  for (int k = 0; k < kc; k++) {
    const float *src = A.p + r0 + (size_t)(k0 + k) * A.cs;
    if (k + PACK_AHEAD < kc)
      for (int i = 0; i < mc; i += 16) __builtin_prefetch(src + PACK_AHEAD * A.cs + i);
    for (int ir = 0; ir < mc; ir += MR) {
      float *d = dst + (size_t)ir * kc + (size_t)k * MR;
      if (ir + MR <= mc)
        for (int i = 0; i < MR; i++) d[i] = src[ir + i];
      else
        for (int i = 0; i < MR; i++) d[i] = ir + i < mc ? src[ir + i] : 0.0f;
    }
  }
}

/* Pack k-range [k0, k0+kc) x columns [c0, c0+nr) of B into one NR-wide panel: dst[k*NR+j]. */
static void pack_b(const tz_mm_ukernel *uk, float *dst, int NR, view B, int k0, int kc, int c0,
                   int nr) {
  if (B.cs == 1 && nr == NR) { /* rows of B are contiguous: straight copies */
    for (int k = 0; k < kc; k++) memcpy(dst + k * NR, B.p + (size_t)(k0 + k) * B.rs + c0, NR * sizeof(float));
    return;
  }
  if (B.rs == 1) { /* Wᵀ view (forward): columns of B are contiguous in k */
    uk->pack_t(dst, NR, B.p + (size_t)c0 * B.cs + k0, B.cs, nr, kc);
    return;
  }
  for (int j = 0; j < NR; j++)
    for (int k = 0; k < kc; k++)
      dst[k * NR + j] = j < nr ? B.p[(size_t)(k0 + k) * B.rs + (size_t)(c0 + j) * B.cs] : 0.0f;
}

static int imin(int a, int b) { return a < b ? a : b; }

/* The macro-kernel: C rows [ic, ic+mc) × the packed panels [jp0, jp1) of the B block at bp
 * (its first panel is column jc), one KC slice of depth kc starting at k = pc. Packs the A
 * block into ap first unless *packed_ic says ap already holds it. Loop order (TEZGAH_MM_LOOP):
 * panels outer (0, BLIS: one B panel, KC·NR·4 = 32 KB, stays in L1 while the A strips stream
 * from L2) or strips outer (1: one A strip, KC·MR·4 = 8-14 KB, stays in L1 while the B panels
 * stream from L2; for cores whose 32-48 KB L1 cannot hold a B panel and a strip). Either order
 * gives every C tile the same one kernel call per slice: the same bits. */
static void gemm_block(const tz_mm_ukernel *uk, float *ap, const float *bp, float *C, view A,
                       const float *bias, int N, int jc, int jp0, int jp1, int ic, int mc,
                       int pc, int kc, int load, int *packed_ic, int strips_outer) {
  const int MR = uk->mr, NR = uk->nr;
  if (ic != *packed_ic && A.rs == 1)
    pack_a_t_block(ap, MR, A, ic, mc, pc, kc);
  else if (ic != *packed_ic)
    for (int ir = 0; ir < mc; ir += MR)
      pack_a(uk, ap + (size_t)ir * kc, MR, A, ic + ir, imin(mc - ir, MR), pc, kc);
  *packed_ic = ic;
  if (strips_outer) {
    for (int ir = 0; ir < mc; ir += MR)
      for (int jp = jp0; jp < jp1; jp++) {
        int c0 = jc + jp * NR, nr = imin(N - c0, NR);
        const float *bb = bias && pc == 0 ? bias + c0 : NULL;
        uk->fn(kc, ap + (size_t)ir * kc, bp + (size_t)jp * NR * kc,
               C + (size_t)(ic + ir) * N + c0, N, imin(mc - ir, MR), nr, load, bb);
      }
    return;
  }
  for (int jp = jp0; jp < jp1; jp++) {
    int c0 = jc + jp * NR, nr = imin(N - c0, NR);
    const float *bb = bias && pc == 0 ? bias + c0 : NULL;
    for (int ir = 0; ir < mc; ir += MR)
      uk->fn(kc, ap + (size_t)ir * kc, bp + (size_t)jp * NR * kc, C + (size_t)(ic + ir) * N + c0,
             N, imin(mc - ir, MR), nr, load, bb);
  }
}

/* One thread's band of C, rows [m0, m1) × columns [n0, n1) (n0 a multiple of NR). The thread
 * packs the B slices it needs into its own bp (no other thread reads them: no barrier). Loop
 * order: NC columns, KC slices, MC rows, NR panels, MR strips (BLIS), except where the band's
 * C block is larger than the caches (TZ_MM_BAND_C_BYTES, the lm_head dW's 25 MB per thread):
 * there as many KC slices as bp holds are packed together and each MC-row block of C runs
 * through all of them before the next block, so the block stays in cache instead of going to
 * memory and back once per slice (lm_head dW 1 thread: 119 -> 157 GFLOP/s; the layers' dW with
 * C blocks of 0.4-0.5 MB measured 4-7% slower that way, so they keep the plain order). The
 * slices still reach every element in k order (load = acc || pc > 0): the same bits. */
static void gemm_band(const tz_mm_ukernel *uk, int MC, int loop, float *ap, float *bp, float *C, view A,
                      view B, const float *bias, int m0, int m1, int n0, int n1, int K, int N,
                      int acc) {
  const int NR = uk->nr;
  for (int jc = n0; jc < n1; jc += NC) {
    int nc = imin(n1 - jc, NC), npan = (nc + NR - 1) / NR;
    size_t slice = (size_t)npan * NR * KC; /* floats of one packed KC slice */
    int group = (size_t)(m1 - m0) * nc * sizeof(float) > TZ_MM_BAND_C_BYTES
                    ? (int)((size_t)KC * NC / slice) /* slices that bp holds at once (>= 1) */
                    : 1;
    for (int pg = 0; pg < K; pg += group * KC) {
      int pg1 = K - pg < group * KC ? K : pg + group * KC;
      for (int pc = pg; pc < pg1; pc += KC) {
        float *bs = bp + (size_t)(pc - pg) / KC * slice;
        int kc = imin(K - pc, KC);
        for (int jp = 0; jp < npan; jp++) {
          int c0 = jc + jp * NR;
          pack_b(uk, bs + (size_t)jp * NR * kc, NR, B, pc, kc, c0, imin(n1 - c0, NR));
        }
      }
      for (int ic = m0; ic < m1; ic += MC)
        for (int pc = pg; pc < pg1; pc += KC) {
          int none = -1; /* A's block changes with the slice: always pack */
          gemm_block(uk, ap, bp + (size_t)(pc - pg) / KC * slice, C, A, bias, N, jc, 0, npan, ic,
                     imin(m1 - ic, MC), pc, imin(K - pc, KC), acc || pc > 0, &none, loop);
        }
    }
  }
}

/* C[M,N] (ldc = N) (+)= A·B (+ bias), A an M×K view, B a K×N view.
 * Two work splits; a split only decides who computes an element, never how (file comment).
 * - Bands (teams of at most TZ_MM_BAND_THREADS): each thread owns a band of MR-aligned rows
 *   (when M >= N) or NR-aligned columns and runs the whole K loop on it with its own packed
 *   B block: no barrier in the call, so a thread that the OS delays (a loaded 2-core machine)
 *   holds up no one until the end. The cost is packing the shared operand once per thread:
 *   K·min(M,N) copies per thread against 2·M·N·K/threads FLOPs.
 * - Shared (larger teams): the tasks of a KC slice are (block of MC rows) × (group of NR
 *   panels), enough groups that every thread has a task even when M is small (the weight
 *   gradients' M = C); the B slice is packed once by the team, two barriers per slice. When
 *   all of B fits the shared block, the team packs it whole first and each task then runs
 *   every slice (one barrier per call). */
static void gemm_c(tz_cpu_ctx *cx, float *C, view A, view B, const float *bias, int M, int K,
                   int N, int acc) {
  if (K == 0) { /* empty sum: only the bias (and the old value) remain */
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++)
        C[(size_t)m * N + n] = (acc ? C[(size_t)m * N + n] : 0.0f) + (bias ? bias[n] : 0.0f);
    return;
  }
  const tz_mm_ukernel *uk = cx->mm;
  const int MR = uk->mr, NR = uk->nr, MC = cx->mm_mc; /* a multiple of MR */
  const int mblocks = (M + MC - 1) / MC;
  if (cx->threads <= TZ_MM_BAND_THREADS) {
#pragma omp parallel num_threads(cx->threads)
    {
      int t = omp_get_thread_num(), nt = omp_get_num_threads();
      float *ap = cx->apack + (size_t)t * TZ_MM_MC_MAX * KC, *bp = cx->bpack + (size_t)t * KC * NC;
      if (M >= N) {
        int per = ((M + MR - 1) / MR + nt - 1) / nt * MR, m0 = imin(M, t * per);
        if (m0 < M) gemm_band(uk, MC, cx->mm_loop, ap, bp, C, A, B, bias, m0, imin(M, m0 + per), 0, N, K, N, acc);
      } else {
        int per = ((N + NR - 1) / NR + nt - 1) / nt * NR, n0 = imin(N, t * per);
        if (n0 < N) gemm_band(uk, MC, cx->mm_loop, ap, bp, C, A, B, bias, 0, M, n0, imin(N, n0 + per), K, N, acc);
      }
    }
    return;
  }
  float *bp = cx->bpack;
  const int npan_all = (N + NR - 1) / NR, nslices = (K + KC - 1) / KC;
  if (N <= NC && (size_t)npan_all * NR * K <= (size_t)KC * NC) {
    /* All of B fits the shared block (the weight gradients: K = B·T, N = C): the team packs
     * every KC slice at once, one barrier, then each task runs all slices in order over its C
     * block, which stays in cache between slices (per-slice tasks streamed the lm_head dW's
     * 51 MB C from memory and back once per slice, with two barriers per slice). Slice pc
     * starts at bp + pc·npan·NR, laid out as gemm_block expects. */
    int groups = imin(npan_all, (4 * cx->threads + mblocks - 1) / mblocks);
    int per = (npan_all + groups - 1) / groups;
    groups = (npan_all + per - 1) / per;
#pragma omp parallel num_threads(cx->threads)
    {
      float *ap = cx->apack + (size_t)omp_get_thread_num() * TZ_MM_MC_MAX * KC;
#pragma omp for schedule(static)
      for (int task = 0; task < nslices * npan_all; task++) {
        int pc = task / npan_all * KC, jp = task % npan_all, kc = imin(K - pc, KC);
        pack_b(uk, bp + (size_t)pc * npan_all * NR + (size_t)jp * NR * kc, NR, B, pc, kc, jp * NR,
               imin(N - jp * NR, NR));
      }
#pragma omp for schedule(static)
      for (int task = 0; task < mblocks * groups; task++) {
        int ic = task / groups * MC, jp0 = task % groups * per, jp1 = imin(npan_all, jp0 + per);
        for (int pc = 0; pc < K; pc += KC) {
          int none = -1; /* A's block changes with the slice: always pack */
          gemm_block(uk, ap, bp + (size_t)pc * npan_all * NR, C, A, bias, N, 0, jp0, jp1, ic,
                     imin(M - ic, MC), pc, imin(K - pc, KC), acc || pc > 0, &none,
                     cx->mm_loop);
        }
      }
    }
    return;
  }
#pragma omp parallel num_threads(cx->threads)
  {
    float *ap = cx->apack + (size_t)omp_get_thread_num() * TZ_MM_MC_MAX * KC;
    for (int jc = 0; jc < N; jc += NC) {
      int nc = imin(N - jc, NC), npan = (nc + NR - 1) / NR;
      /* Tasks are (M block, run of NR panels), about 4 per thread: a weight gradient of
       * C = 256 rows has 2 M blocks, which alone would keep 2 of 16 threads busy. A task packs
       * its A block unless the thread's previous task had the same one (consecutive tasks of
       * a thread usually do). */
      int groups = imin(npan, (4 * cx->threads + mblocks - 1) / mblocks);
      int per = (npan + groups - 1) / groups;
      groups = (npan + per - 1) / per;
      for (int pc = 0; pc < K; pc += KC) {
        int kc = imin(K - pc, KC);
#pragma omp for schedule(static)
        for (int jp = 0; jp < npan; jp++) {
          int c0 = jc + jp * NR;
          pack_b(uk, bp + (size_t)jp * NR * kc, NR, B, pc, kc, c0, imin(N - c0, NR));
        }
        int load = acc || pc > 0, packed_ic = -1; /* the A block in this thread's ap */
        /* the implicit barrier keeps bp intact until every task is done */
#pragma omp for schedule(static)
        for (int task = 0; task < mblocks * groups; task++) {
          int ic = task / groups * MC;
          int jp0 = task % groups * per, jp1 = imin(npan, jp0 + per);
          gemm_block(uk, ap, bp, C, A, bias, N, jc, jp0, jp1, ic, imin(M - ic, MC), pc, kc,
                     load, &packed_ic, cx->mm_loop);
        }
      }
    }
  }
}

#ifdef TZ_USE_BLAS
/* Whether this matmul runs on OpenBLAS: cx->use_blas is 1 while TZ_MATMUL=blas has not been
 * tried yet; the first matmul loads the library (2: loaded, OpenBLAS's thread count set to the
 * backend's) or falls back to the c path for good (0), with one warning per process. */
static int blas_on(tz_cpu_ctx *cx) {
  if (cx->use_blas != 1) return cx->use_blas == 2;
  static int warned;
  if (tz_blas_load() != 0) {
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "tezgah: warning: TZ_MATMUL=blas: %s: the CPU matmuls run tezgah's own GEMM\n", tz_errmsg());
    tz_err_clear();
    cx->use_blas = 0;
    return 0;
  }
  tz_blas_set_threads(cx->threads);
  cx->use_blas = 2;
  return 1;
}

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
  tz_blas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
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
  if (blas_on(cx)) {
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
  if (blas_on(cx)) {
    gemm_blas(TZ_F(out), TZ_F(a), 0, TZ_F(b), 0, NULL, M, K, N, acc);
    return;
  }
#endif
  view A = {TZ_F(a), (size_t)K, 1}, B = {TZ_F(b), (size_t)N, 1};
  gemm_c(cx, TZ_F(out), A, B, NULL, M, K, N, acc);
}

/* out [M,N] (+)= a [K,M]ᵀ · b [K,N]. Backward dW += dYᵀ·X (acc = 1 for parameter grads; 0 on a
 * step's first backward, be->grads_written). */
void tz_cpu_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K,
                      int N, int acc) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
#ifdef TZ_USE_BLAS
  if (blas_on(cx)) {
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
