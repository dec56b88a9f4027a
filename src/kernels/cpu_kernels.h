/* CPU reference kernels: one function per tz_backend op slot, same signature as the slot.
 *
 * Each op family lives in its own folder (src/kernels/<op>/<op>_cpu.c); later WGSL/CUDA
 * kernels go next to them. The math and the gradient rule (+= or =) of every op is stated
 * at its definition; the contract is backend.h and docs/OPS.md.
 *
 * Determinism: every kernel uses static OpenMP schedules, no float atomics, and reductions
 * whose order depends at most on the thread count, so a fixed thread count gives
 * bit-identical results run to run. Most kernels are even independent of the thread count
 * (each output element is reduced by exactly one thread in a fixed order).
 */
#ifndef TZ_KERNELS_CPU_KERNELS_H
#define TZ_KERNELS_CPU_KERNELS_H
#include <stddef.h>

#include "backend/backend.h"

/* Host memory behind a tz_buf. Buffers are 64-byte aligned and zero-filled at alloc, except
 * under the test switch TEZGAH_CPU_MISALIGN=N (data starts N bytes past the boundary). */
struct tz_buf {
  void *data;
  size_t bytes;
  void *mem; /* the allocation (what free() takes): data − the misalignment */
};

/* Matmul packing geometry (matmul_cpu.c): cache blocks MC (rounded down to the kernel's MR;
 * TEZGAH_MM_MC=n picks another in [MR, TZ_MM_MC_MAX] for measurements), KC, NC (a multiple of
 * every kernel's NR). KC is part of the arithmetic (an element's sum is one FMA chain per KC
 * slice, slices added in order): changing it changes results' bits; MC, NC and the tile only
 * decide who computes an element and when, never how. */
#define TZ_MM_MC 128
#define TZ_MM_MC_MAX 512 /* apack's rows per thread */
#define TZ_MM_KC 256
#define TZ_MM_NC 4096
/* Teams of at most this many threads run the GEMM without barriers: each thread owns a band of
 * C's rows (or columns) and packs its own copy of the other operand's KC-deep slices, so bpack
 * holds one KC*NC block per thread (matmul_cpu.c, gemm_bands). Larger teams share one block. */
#define TZ_MM_BAND_THREADS 4

/* A GEMM micro-kernel (matmul_ukernel_cpu.c): C[mr,nr] (ldc) = (load ? C : 0) + (bias ? bias :
 * 0) + a·b over kc, a a packed MR-row strip, b a packed NR-wide panel (64-byte aligned). */
typedef struct {
  const char *name; /* the ISA: "avx512", "avx2", "scalar" */
  const char *tile; /* "MRxNR", plus "pf" where the kernel prefetches C (TEZGAH_MM_TILE) */
  int mr, nr;       /* register tile */
  void (*fn)(int kc, const float *a, const float *b, float *C, size_t ldc, int mr, int nr,
             int load, const float *bias);
  /* Transposing pack (a copy: no arithmetic, so any implementation gives the same bits):
   * dst[k*w + i] = i < n ? src[i*stride + k] : 0 for k < kc (kc <= TZ_MM_KC), i < w. Packs a
   * row-major A into an MR-row strip (w = MR) and a transposed B view into an NR-wide panel. */
  void (*pack_t)(float *dst, int w, const float *src, size_t stride, int n, int kc);
} tz_mm_ukernel;

/* The widest micro-kernel this CPU runs, or the one TEZGAH_CPU_ISA=avx512|avx2|scalar names,
 * with the tile TEZGAH_MM_TILE names or this CPU's default; NULL with tz_err() when that ISA or
 * tile is unknown or the CPU lacks its instructions. */
const tz_mm_ukernel *tz_mm_pick(void);

typedef struct tz_cpu_prof tz_cpu_prof; /* backend_cpu_prof.c */

/* The CPU backend's private state (be->ctx). Scratch is allocated at creation (matmul
 * packing) or grown on first use (attention rows), never per call in steady state. */
typedef struct {
  int threads;    /* OpenMP team size used by every kernel */
  int use_blas;   /* matmul path (TZ_MATMUL env, default c): 0 = our GEMM; 1 = cblas_sgemm asked
                   * for, OpenBLAS not loaded yet; 2 = cblas_sgemm (matmul_cpu.c, blas_on) */
  const tz_mm_ukernel *mm; /* our GEMM's micro-kernel (tz_mm_pick) */
  int mm_mc;      /* MC: rows of A packed per block, a multiple of mm->mr (TEZGAH_MM_MC) */
  int mm_loop;    /* macro-kernel order: 0 B panels outer, 1 A strips outer (TEZGAH_MM_LOOP) */
  float *apack;   /* [threads][TZ_MM_MC_MAX*KC] packed A blocks, one per thread */
  float *bpack;   /* [KC*NC] packed B block shared by the team, or one per thread for teams of
                   * at most TZ_MM_BAND_THREADS */
  float *scratch; /* attention score rows, [threads][scratch_stride] */
  /* apack and scratch are indexed by omp_get_thread_num(): regions using them pin
   * num_threads(threads) so a later omp_set_num_threads() cannot index past them. */
  size_t scratch_stride;
  size_t misalign; /* TEZGAH_CPU_MISALIGN: bytes past 64-byte alignment for every buffer */
  size_t bytes_used, bytes_peak; /* buffers from alloc(): now and at most (mem_used/mem_peak) */
  tz_cpu_prof *prof; /* per-op wall-clock totals; NULL unless TEZGAH_PROFILE=1 at creation */
  tz_backend inner;  /* with prof: the op slots as they were before the timing wrappers */
} tz_cpu_ctx;

/* train --profile (TEZGAH_PROFILE=1): time every op slot of a CPU backend (backend_cpu_prof.c),
 * setting be->profile_print / profile_reset. Called once, at the end of creation. */
void tz_cpu_prof_attach(tz_backend *be);

/* Grow ctx->scratch so that every thread owns `per_thread` floats (called outside any
 * parallel region). Returns the per-thread stride in floats. */
size_t tz_cpu_scratch(tz_cpu_ctx *cx, size_t per_thread);

#define TZ_CPU_CTX(be) ((tz_cpu_ctx *)(be)->ctx)
#define TZ_F(s) ((float *)tz_cpu_ptr(s))
#define TZ_I(s) ((int *)tz_cpu_ptr(s))

/* memory-like ops (elementwise/elementwise_cpu.c) */
void tz_cpu_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt);
void tz_cpu_download_act(tz_backend *be, float *dst, tz_slice src, size_t n);
void tz_cpu_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src,
                      size_t src_stride, int rows, int cols);
void tz_cpu_add(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, size_t n);
void tz_cpu_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n);

void tz_cpu_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe,
                      int B, int T, int C, int V);
void tz_cpu_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout,
                      tz_slice tok, int B, int T, int C, int V);

void tz_cpu_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp,
                        tz_slice w, int N, int C, float eps);
void tz_cpu_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout,
                        tz_slice inp, tz_slice w, tz_slice rstd, int N, int C);

void tz_cpu_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd,
                          tz_slice inp, tz_slice w, tz_slice b, int N, int C, float eps);
void tz_cpu_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db,
                          tz_slice dout, tz_slice inp, tz_slice w, tz_slice mean,
                          tz_slice rstd, int N, int C);

void tz_cpu_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias,
                     int M, int K, int N, int acc);
void tz_cpu_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N,
                   int acc);
void tz_cpu_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K,
                      int N, int acc);
void tz_cpu_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N);

void tz_cpu_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head,
                 int head_dim, int pos0, float theta, int dir);

void tz_cpu_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k,
                          tz_slice v, int B, int Tq, int Tk, int q_pos0, int n_head,
                          int n_kv_head, int head_dim, int q_stride, int kv_stride);
void tz_cpu_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv,
                          tz_slice dout, tz_slice q, tz_slice k, tz_slice v, tz_slice out,
                          tz_slice lse, int B, int T, int n_head, int n_kv_head, int head_dim,
                          int q_stride, int kv_stride);

void tz_cpu_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n);
void tz_cpu_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n);

void tz_cpu_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F);
void tz_cpu_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F);

void tz_cpu_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets,
                         int N, int V, int Vp, float dscale);

void tz_cpu_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v,
                  const tz_range *ranges, int n_ranges, const tz_adamw_hp *hp);

#endif
