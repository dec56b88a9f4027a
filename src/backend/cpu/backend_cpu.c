/* The CPU backend: host memory plus the reference kernels of src/kernels/<op>/<op>_cpu.c.
 *
 * Buffers are plain 64-byte aligned host allocations (zero-filled), so memory ops are
 * memcpy and sync is a no-op: every op has finished when its call returns. The context
 * holds the thread count, the matmul path (TZ_MATMUL=c|blas, read once at creation; c, our
 * GEMM, by default, with the micro-kernel tz_mm_pick chose for this CPU) and
 * scratch memory that kernels reuse across calls so a training step allocates nothing.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/decimal.h"
#include "core/error.h"
#include "kernels/cpu_kernels.h"
#include "kernels/matmul/blas_load.h"

void *tz_cpu_ptr(tz_slice s) { return s.buf ? (char *)s.buf->data + s.off : NULL; }

/* "avx512 8x32": the micro-kernel tz_mm_pick chooses and its register tile (MR x NR). */
const char *tz_cpu_gemm_kernel(void) {
  static char s[32];
  const tz_mm_ukernel *k = tz_mm_pick();
  if (!k) return NULL;
  snprintf(s, sizeof s, "%s %s", k->name, k->tile);
  return s;
}

int tz_cpu_blas_describe(char *out, size_t cap) {
#ifdef TZ_USE_BLAS
  char line[TZ_ERR_MAX];
  if (!tz_blas_describe(line, sizeof line)) {
    snprintf(out, cap, "%s", line);
    return 0;
  }
  snprintf(out, cap, "yes (%s, loaded on use)", line);
  return 1;
#else
  snprintf(out, cap, "no (built without OpenBLAS: TEZGAH_BLAS=OFF or no libopenblas-dev)");
  return 0;
#endif
}

static void *aligned_zalloc(size_t bytes) {
  size_t n = (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, n ? n : 64);
  if (p) memset(p, 0, n ? n : 64);
  return p;
}

/* A buffer's memory: zeroed, 64-byte aligned plus the test misalignment. calloc with room to
 * align, not aligned_zalloc: glibc serves large callocs from fresh mmap'd pages that are zero
 * without being touched, so a buffer costs memory only where it is written (a GPT-2 1.5B run
 * refused by --recompute auto spent ~12 s zeroing 6 GB of weights it never used). */
static tz_buf *cpu_alloc(tz_backend *be, size_t bytes, const char *what) {
  tz_cpu_ctx *cx = be->ctx;
  tz_buf *b = malloc(sizeof *b);
  void *d = b ? calloc(1, bytes + cx->misalign + 64) : NULL;
  if (!d) {
    free(b);
    tz_err("cpu: out of host memory allocating %zu bytes for %s", bytes, what ? what : "buffer");
    return NULL;
  }
  b->mem = d;
  b->data = (char *)(((uintptr_t)d + 63) / 64 * 64) + cx->misalign;
  b->bytes = bytes;
  cx->bytes_used += bytes;
  if (cx->bytes_used > cx->bytes_peak) cx->bytes_peak = cx->bytes_used;
  return b;
}

static void cpu_free(tz_backend *be, tz_buf *b) {
  if (!b) return;
  ((tz_cpu_ctx *)be->ctx)->bytes_used -= b->bytes;
  free(b->mem);
  free(b);
}

static void cpu_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes) {
  memcpy(tz_cpu_ptr(dst), src, bytes);
}
static void cpu_download(tz_backend *be, void *dst, tz_slice src, size_t bytes) {
  memcpy(dst, tz_cpu_ptr(src), bytes);
}
/* memmove: dst and src may be overlapping views of one buffer. */
static void cpu_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes) {
  memmove(tz_cpu_ptr(dst), tz_cpu_ptr(src), bytes);
}
static void cpu_sync(tz_backend *be) {}
static void *cpu_raw_ptr(tz_backend *be, tz_slice s) { return tz_cpu_ptr(s); }
static size_t cpu_mem_used(tz_backend *be) { return ((tz_cpu_ctx *)be->ctx)->bytes_used; }
static size_t cpu_mem_peak(tz_backend *be) { return ((tz_cpu_ctx *)be->ctx)->bytes_peak; }

size_t tz_cpu_scratch(tz_cpu_ctx *cx, size_t per_thread) {
  size_t stride = (per_thread + 15) / 16 * 16; /* keep each thread's row on its own lines */
  if (stride > cx->scratch_stride) {
    free(cx->scratch);
    cx->scratch = aligned_zalloc(stride * (size_t)cx->threads * sizeof(float));
    if (!cx->scratch) tz_panic(__FILE__, __LINE__, "out of memory for attention scratch");
    cx->scratch_stride = stride;
  }
  return cx->scratch_stride;
}

static void cpu_destroy(tz_backend *be) {
  if (!be) return;
  tz_cpu_ctx *cx = be->ctx;
  if (cx) {
    free(cx->apack);
    free(cx->bpack);
    free(cx->scratch);
    free(cx->prof);
    free(cx);
  }
  free(be);
}

/* threads > 0 sets the OpenMP team size for the process (omp_set_num_threads); <= 0 keeps
 * the OpenMP default (OMP_NUM_THREADS or all cores). OpenBLAS (pthread flavour), loaded by the
 * first matmul with TZ_MATMUL=blas (matmul_cpu.c), gets the same count so the two thread pools
 * never oversubscribe the cores: BLAS is only ever called from the serial part of a kernel,
 * never inside an OpenMP region. */
tz_backend *tz_backend_cpu_create(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
  tz_backend *be = tz_calloc(1, sizeof *be);
  tz_cpu_ctx *cx = tz_calloc(1, sizeof *cx);
  cx->threads = omp_get_max_threads();
  const char *mm = getenv("TZ_MATMUL");
#ifdef TZ_USE_BLAS
  cx->use_blas = mm && strcmp(mm, "blas") == 0; /* 1: asked for, loaded by the first matmul */
#else
  cx->use_blas = 0;
#endif
  if (mm && strcmp(mm, "c") != 0 && strcmp(mm, "blas") != 0) {
    tz_err("TZ_MATMUL='%s' is not one of c, blas", mm);
    free(cx);
    free(be);
    return NULL;
  }
  /* Test switch: every buffer N bytes (a multiple of 4, below 64) past a 64-byte boundary, so
   * tests can show that no result depends on where buffers sit (docs/RELIABILITY.md). */
  const char *mis = getenv("TEZGAH_CPU_MISALIGN");
  if (mis && *mis) {
    long v; /* decimal digits only (core/decimal.h), as every TEZGAH_* number */
    if (tz_decimal_long(mis, strlen(mis), &v) || v < 0 || v >= 64 || v % 4) {
      tz_err("TEZGAH_CPU_MISALIGN='%s' is not a multiple of 4 in [0, 60]", mis);
      free(cx);
      free(be);
      return NULL;
    }
    cx->misalign = (size_t)v;
  }
  if (!(cx->mm = tz_mm_pick())) {
    free(cx);
    free(be);
    return NULL;
  }
  /* MC, the A block's rows: TZ_MM_MC, or TEZGAH_MM_MC (for measurements: scripts/device_cpu17.sh),
   * rounded down to the tile's MR. A blocking choice: the same bits with any. */
  int mc = TZ_MM_MC;
  const char *mcs = getenv("TEZGAH_MM_MC");
  if (mcs && *mcs) {
    long v;
    if (tz_decimal_long(mcs, strlen(mcs), &v) || v < cx->mm->mr || v > TZ_MM_MC_MAX) {
      tz_err("TEZGAH_MM_MC='%s' is not a row count in [%d, %d]", mcs, cx->mm->mr, TZ_MM_MC_MAX);
      free(cx);
      free(be);
      return NULL;
    }
    mc = (int)v;
  }
  cx->mm_mc = mc / cx->mm->mr * cx->mm->mr;
  /* the macro-kernel's loop order (matmul_cpu.c, gemm_block): panels (default) or strips */
  const char *loop = getenv("TEZGAH_MM_LOOP");
  if (loop && *loop && strcmp(loop, "panels") && strcmp(loop, "strips")) {
    tz_err("TEZGAH_MM_LOOP='%s' is not one of panels, strips", loop);
    free(cx);
    free(be);
    return NULL;
  }
  cx->mm_loop = loop && !strcmp(loop, "strips");
  cx->apack = aligned_zalloc((size_t)cx->threads * TZ_MM_MC_MAX * TZ_MM_KC * sizeof(float));
  size_t bblocks = cx->threads <= TZ_MM_BAND_THREADS ? (size_t)cx->threads : 1;
  cx->bpack = aligned_zalloc(bblocks * TZ_MM_KC * TZ_MM_NC * sizeof(float));
  if (!cx->apack || !cx->bpack) {
    tz_err("cpu: out of host memory for matmul packing buffers");
    free(cx->apack);
    free(cx->bpack);
    free(cx);
    free(be);
    return NULL;
  }
  be->name = "cpu";
  be->ctx = cx;
  be->act = TZ_F32;
  be->act_mm = TZ_F32;
  be->grads_written = 1; /* fills are memsets: a few small ones cost nothing (backend.h) */
  be->alloc = cpu_alloc;
  be->free = cpu_free;
  be->upload = cpu_upload;
  be->download = cpu_download;
  be->copy = cpu_copy;
  be->fill = tz_cpu_fill;
  be->download_act = tz_cpu_download_act;
  be->copy_rows = tz_cpu_copy_rows;
  be->sync = cpu_sync;
  be->destroy = cpu_destroy;
  be->mem_used = cpu_mem_used;
  be->mem_peak = cpu_mem_peak;
  be->raw_ptr = cpu_raw_ptr;
  be->embed_fwd = tz_cpu_embed_fwd;
  be->embed_bwd = tz_cpu_embed_bwd;
  be->rmsnorm_fwd = tz_cpu_rmsnorm_fwd;
  be->rmsnorm_bwd = tz_cpu_rmsnorm_bwd;
  be->layernorm_fwd = tz_cpu_layernorm_fwd;
  be->layernorm_bwd = tz_cpu_layernorm_bwd;
  be->matmul_t = tz_cpu_matmul_t;
  be->matmul = tz_cpu_matmul;
  be->matmul_at = tz_cpu_matmul_at;
  be->bias_bwd = tz_cpu_bias_bwd;
  be->rope = tz_cpu_rope;
  be->attention_fwd = tz_cpu_attention_fwd;
  be->attention_bwd = tz_cpu_attention_bwd;
  be->gelu_fwd = tz_cpu_gelu_fwd;
  be->gelu_bwd = tz_cpu_gelu_bwd;
  be->swiglu_fwd = tz_cpu_swiglu_fwd;
  be->swiglu_bwd = tz_cpu_swiglu_bwd;
  be->add = tz_cpu_add;
  be->crossentropy = tz_cpu_crossentropy;
  be->sum_sq = tz_cpu_sum_sq;
  be->adamw = tz_cpu_adamw;
  const char *pf = getenv("TEZGAH_PROFILE");
  if (pf && *pf && strcmp(pf, "0")) tz_cpu_prof_attach(be);
  return be;
}
