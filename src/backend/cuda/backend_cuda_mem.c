/* CUDA backend memory: buffers, host <-> device copies through a pinned staging ring,
 * device copies, fill, the bf16 parameter mirror and kernel scratch.
 *
 * Everything here is queued on the backend's main stream (the side queue, backend_cuda_side.c,
 * runs gradient ops and the optimizer's update only, each after all the main stream's earlier
 * work), so a buffer's zero-fill (cudaMemsetAsync at alloc) is ordered before any upload or op
 * that touches it. A download also waits for the side queue's work so far (tzc_side_join).
 * Uploads go through four pinned slots (STAGE_BYTES each): the host data is copied into a slot and the slot's
 * DMA is queued; a slot is reused only after its previous copy finished (an event), so an
 * upload returns without waiting for the GPU. Downloads wait (stream order: every op queued
 * before them has written their source).
 *
 * Any write into the registered parameter buffer that does not come from adamw (upload, copy,
 * fill, copy_rows) refreshes the bf16 mirror over the elements it touched. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_rt.h"
#include "core/error.h"
#include "core/bf16.h" /* tz_f32_to_bf16: the mirror kernel's rounding on the host */

#define STAGE_BYTES ((size_t)4 << 20)
#define NSTAGE 4
#define MiB(x) ((double)(x) / 1048576.0)

static void prof_begin(tz_backend *be, const char *op) {
  if (tzc(be)->prof) tzc_prof_begin(be, op);
}
static void prof_end(tz_backend *be, double bytes) {
  if (tzc(be)->prof) tzc_prof_end(be, 0, bytes);
}

void tzc_stage_init(tzc_ctx *c) {
  c->stage_bytes = STAGE_BYTES;
  for (int i = 0; i < NSTAGE; i++) {
    if (cudaMallocHost(&c->stage[i], STAGE_BYTES) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->stage_ev[i], cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      tzc_stage_free(c); /* pageable copies instead */
      return;
    }
  }
}
void tzc_stage_free(tzc_ctx *c) {
  for (int i = 0; i < NSTAGE; i++) {
    if (c->stage[i]) cudaFreeHost(c->stage[i]);
    if (c->stage_ev[i]) cudaEventDestroy(c->stage_ev[i]);
    c->stage[i] = NULL;
    c->stage_ev[i] = NULL;
  }
  c->stage_bytes = 0;
}
/* The next staging slot, once its previous copy has finished. -1: no staging. */
static int stage_take(tzc_ctx *c) {
  if (!c->stage_bytes) return -1;
  int i = c->stage_next;
  c->stage_next = (i + 1) % NSTAGE;
  TZC_CHECK(cudaEventSynchronize(c->stage_ev[i]));
  return i;
}

tz_buf *tzc_alloc(tz_backend *be, size_t bytes, const char *what) {
  tzc_ctx *c = tzc(be);
  tz_buf *b = tz_calloc(1, sizeof *b);
  cudaError_t e = cudaMalloc(&b->ptr, bytes ? bytes : 256);
  if (e != cudaSuccess) {
    cudaGetLastError();
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    cudaGetLastError();
    tz_err("cuda: out of device memory allocating %zu bytes (%.1f MiB) for %s (%.1f MiB held by tezgah, %.1f MiB "
           "free of %.1f MiB)",
           bytes, MiB(bytes), what ? what : "buffer", MiB(c->bytes_used), MiB(fr), MiB(tot));
    free(b);
    return NULL;
  }
  b->bytes = bytes;
  if (bytes) TZC_CHECK(cudaMemsetAsync(b->ptr, 0, bytes, c->stream));
  tzc_mem_account(be, (long long)bytes);
  if (c->verbose)
    fprintf(stderr, "cuda: alloc %-22s %10.1f MiB (in use %.1f MiB)\n", what ? what : "buffer", MiB(bytes),
            MiB(c->bytes_used));
  return b;
}

void tzc_free(tz_backend *be, tz_buf *b) {
  if (!b) return;
  tzc_ctx *c = tzc(be);
  TZC_CHECK(cudaStreamSynchronize(c->stream));
  long long held = (long long)b->bytes;
  if (b == c->params) {
    if (c->params_bf16) {
      TZC_CHECK(cudaFree(c->params_bf16));
      tzc_mem_account(be, -(long long)(c->n_params * 2));
    }
    if (!b->ptr) held = 0; /* read-only parameters: the fp32 copy went at registration */
    c->params = NULL;
    c->params_bf16 = NULL;
    c->n_params = 0;
  }
  TZC_CHECK(cudaFree(b->ptr));
  tzc_mem_account(be, -held);
  free(b);
  /* recorded steps may point into the freed buffer (a model freed, another made on the same
   * backend whose buffers need not land at the same addresses: replaying the old recording
   * reads and writes freed memory; the suspected cause of test_cuda_decode's illegal address
   * in its fp32 model test on the H200, 2026-12-02): they are dropped (the stream is idle:
   * synchronized above), and each key's next use is a warm-up again, then recorded. Frees
   * happen at set-up and teardown, never per step, so steps keep their recordings. */
  tzc_graphs_free(be);
}

/* The read-only parameters (tz_backend_hint_weights_read_only) touched other than by an
 * upload or a weight read: a caller broke the hint's promise (an internal error). */
static void ro_misuse(const char *how) {
  char msg[160];
  snprintf(msg, sizeof msg,
           "cuda: the parameters, kept as bf16 only (weights read-only), were %s: internal error", how);
  tz_fatal(msg);
}

/* A copy or read-back touching a buffer without device memory: only the read-only parameters. */
static void ro_check(tz_slice s, const char *how) {
  if (s.buf && !s.buf->ptr) ro_misuse(how);
}

/* After bytes [off, off + bytes) of `buf` were written: refresh the bf16 mirror there. */
static void mirror_touch(tz_backend *be, tz_buf *buf, size_t off, size_t bytes) {
  tzc_ctx *c = tzc(be);
  if (!bytes || !c->params_bf16 || buf != c->params) return;
  if (!c->params->ptr) ro_misuse("written by an op");
  size_t first = off / 4, last = (off + bytes + 3) / 4;
  if (last > c->n_params) last = c->n_params;
  if (last > first) tzc_mirror_refresh(be, first, last - first);
}

/* Host threads filling the staging slots of one large upload: TEZGAH_CUDA_UPLOAD_THREADS
 * (1..NSTAGE; default NSTAGE; 1: one thread, as before 2026-12-03). The weight upload of a
 * `sample` (GPT-2 124M: 498 MB of fp32 parameters) took 51-67 ms on the H200 host with one
 * thread, ~8-10 GB/s: the memcpy into the pinned slots, not the DMA, was the bound. */
static int upload_threads(void) {
  static int n = 0;
  if (!n) {
    const char *e = getenv("TEZGAH_CUDA_UPLOAD_THREADS");
    int v = e && *e ? atoi(e) : NSTAGE;
    n = v < 1 ? 1 : v > NSTAGE ? NSTAGE : v;
  }
  return n;
}

/* An upload of at least this many bytes is split over upload_threads() threads. */
#define UPLOAD_PARALLEL_BYTES ((size_t)32 << 20)

/* `bytes` of host `s` to device `d` through the pinned slots, split over `nt` host threads:
 * thread t owns slot t (after the slots' earlier copies finished) and fills chunks t, t + nt,
 * ...; the chunks land in disjoint device ranges, so their order on the stream does not matter,
 * and each slot is reused only after its own last DMA (its event). The runtime's calls are
 * thread-safe. When `to_bf16`, s holds fp32 and each chunk is converted to bf16 (round to
 * nearest even, as the mirror kernel) into its slot: d receives bytes / 2. */
static void upload_slots(tz_backend *be, char *d, const char *s, size_t bytes, int nt, int to_bf16) {
  tzc_ctx *c = tzc(be);
  const size_t per = to_bf16 ? c->stage_bytes / 2 * 4 : c->stage_bytes; /* source bytes a chunk */
  const size_t nchunk = (bytes + per - 1) / per;
  if ((size_t)nt > nchunk) nt = (int)nchunk;
  for (int i = 0; i < NSTAGE; i++) TZC_CHECK(cudaEventSynchronize(c->stage_ev[i]));
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), nth = omp_get_num_threads();
    TZC_CHECK(cudaSetDevice(c->device)); /* a new thread starts on device 0 (TEZGAH_CUDA_DEVICE) */
    for (size_t k = (size_t)t; k < nchunk; k += (size_t)nth) {
      size_t off = k * per, len = bytes - off < per ? bytes - off : per;
      TZC_CHECK(cudaEventSynchronize(c->stage_ev[t]));
      if (to_bf16) {
        uint16_t *h = c->stage[t];
        const float *f = (const float *)(s + off);
        for (size_t i = 0; i < len / 4; i++) h[i] = tz_f32_to_bf16(f[i]);
        TZC_CHECK(cudaMemcpyAsync(d + off / 2, h, len / 2, cudaMemcpyHostToDevice, c->stream));
      } else {
        memcpy(c->stage[t], s + off, len);
        TZC_CHECK(cudaMemcpyAsync(d + off, c->stage[t], len, cudaMemcpyHostToDevice, c->stream));
      }
      TZC_CHECK(cudaEventRecord(c->stage_ev[t], c->stream));
    }
  }
  c->stage_next = 0;
}

/* An upload into the read-only parameters: the fp32 source converted to bf16 into the pinned
 * slots and sent straight to the mirror — half the bytes over the bus, no fp32 copy on the
 * device (upload_slots; GPT-2 124M's 475 MiB of fp32 weights: 237 MiB sent). */
static void upload_ro(tz_backend *be, size_t off, const float *src, size_t bytes) {
  tzc_ctx *c = tzc(be);
  if (off % 4 || bytes % 4) ro_misuse("uploaded in pieces that are not whole floats");
  const size_t n = bytes / 4;
  uint16_t *d = (uint16_t *)c->params_bf16 + off / 4;
  if (!c->stage_bytes) { /* no pinned slots: one pageable copy */
    uint16_t *h = tz_malloc(n * 2);
    for (size_t i = 0; i < n; i++) h[i] = tz_f32_to_bf16(src[i]);
    TZC_CHECK(cudaMemcpyAsync(d, h, n * 2, cudaMemcpyHostToDevice, c->stream));
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    free(h);
    return;
  }
  upload_slots(be, (char *)d, (const char *)src, bytes, bytes >= UPLOAD_PARALLEL_BYTES ? upload_threads() : 1, 1);
}

void tzc_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes) {
  if (!bytes) return;
  tzc_ctx *c = tzc(be);
  prof_begin(be, "upload");
  if (c->params && dst.buf == c->params && !c->params->ptr) {
    upload_ro(be, dst.off, src, bytes);
    prof_end(be, (double)bytes / 2);
    return;
  }
  char *d = tzc_ptr(dst);
  const char *s = src;
  int nt = upload_threads();
  if (c->stage_bytes && nt > 1 && bytes >= UPLOAD_PARALLEL_BYTES) {
    upload_slots(be, d, s, bytes, nt, 0); /* ends before the mirror refresh below */
    mirror_touch(be, dst.buf, dst.off, bytes);
    prof_end(be, (double)bytes);
    return;
  }
  for (size_t done = 0; done < bytes;) {
    int i = stage_take(c);
    if (i < 0) { /* pageable: the copy must finish before the caller may reuse src */
      TZC_CHECK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyHostToDevice, c->stream));
      TZC_CHECK(cudaStreamSynchronize(c->stream));
      break;
    }
    size_t n = bytes - done < c->stage_bytes ? bytes - done : c->stage_bytes;
    memcpy(c->stage[i], s + done, n);
    TZC_CHECK(cudaMemcpyAsync(d + done, c->stage[i], n, cudaMemcpyHostToDevice, c->stream));
    TZC_CHECK(cudaEventRecord(c->stage_ev[i], c->stream));
    done += n;
  }
  mirror_touch(be, dst.buf, dst.off, bytes);
  prof_end(be, (double)bytes);
}

/* Copy `bytes` from device address `s` to host `d` through the staging ring; when `bf16`,
 * the device holds bf16 elements and `d` receives bytes/2 floats. Waits. */
static void download_raw(tz_backend *be, void *d, const char *s, size_t bytes, int bf16) {
  tzc_ctx *c = tzc(be);
  tzc_side_join(be);
  for (size_t done = 0; done < bytes;) {
    int i = stage_take(c);
    size_t n = i < 0 ? bytes : (bytes - done < c->stage_bytes ? bytes - done : c->stage_bytes);
    void *tmp = i < 0 ? (bf16 ? tz_malloc(n) : (char *)d + done) : c->stage[i];
    TZC_CHECK(cudaMemcpyAsync(tmp, s + done, n, cudaMemcpyDeviceToHost, c->stream));
    if (i >= 0) TZC_CHECK(cudaEventRecord(c->stage_ev[i], c->stream));
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    if (bf16) {
      const uint16_t *h = tmp;
      float *o = (float *)d + done / 2;
      for (size_t k = 0; k < n / 2; k++) {
        uint32_t u = (uint32_t)h[k] << 16;
        memcpy(&o[k], &u, 4);
      }
    } else if (i >= 0) {
      memcpy((char *)d + done, tmp, n);
    }
    if (i < 0 && bf16) free(tmp);
    done += n;
  }
}

void tzc_download(tz_backend *be, void *dst, tz_slice src, size_t bytes) {
  if (!bytes) return;
  prof_begin(be, "download");
  ro_check(src, "read back");
  download_raw(be, dst, tzc_ptr(src), bytes, 0);
  prof_end(be, (double)bytes);
}

void tzc_download_act(tz_backend *be, float *dst, tz_slice src, size_t n) {
  if (!n) return;
  prof_begin(be, "download");
  int bf16 = tzc(be)->act == TZ_BF16;
  ro_check(src, "read back");
  download_raw(be, dst, tzc_ptr(src), n * (bf16 ? 2 : 4), bf16);
  prof_end(be, (double)n * (bf16 ? 2 : 4));
}

void tzc_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes) {
  if (!bytes) return;
  tzc_ctx *c = tzc(be);
  prof_begin(be, "copy");
  ro_check(dst, "copied into");
  ro_check(src, "copied from");
  char *d = tzc_ptr(dst), *s = tzc_ptr(src);
  if (d != s) {
    if (dst.buf == src.buf && d < s + bytes && s < d + bytes) { /* overlapping views: via scratch */
      void *tmp = tzc_scratch(be, bytes);
      TZC_CHECK(cudaMemcpyAsync(tmp, s, bytes, cudaMemcpyDeviceToDevice, c->stream));
      s = tmp;
    }
    TZC_CHECK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, c->stream));
  }
  mirror_touch(be, dst.buf, dst.off, bytes);
  prof_end(be, 2.0 * bytes);
}

void tzc_fill_op(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt) {
  if (!n) return;
  ro_check(dst, "filled");
  tzc_fill(be, dst, value, n, dt);
  mirror_touch(be, dst.buf, dst.off, n * tz_dtype_size(dt));
}

void tzc_zero_ranges_op(tz_backend *be, tz_buf *buf, const size_t *ranges, int n) {
  tz_slice s = {buf, 0};
  ro_check(s, "filled");
  tzc_zero_ranges(be, (float *)tzc_ptr(s), ranges, n);
  for (int i = 0; i < n; i++) mirror_touch(be, buf, ranges[2 * i] * 4, ranges[2 * i + 1] * 4);
}

void tzc_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows,
                   int cols) {
  if (rows <= 0 || cols <= 0) return;
  tzc_ctx *c = tzc(be);
  size_t es = tz_dtype_size(c->act);
  ro_check(dst, "copied into");
  ro_check(src, "copied from");
  prof_begin(be, "copy_rows");
  TZC_CHECK(cudaMemcpy2DAsync(tzc_ptr(dst), dst_stride * es, tzc_ptr(src), src_stride * es, (size_t)cols * es,
                              (size_t)rows, cudaMemcpyDeviceToDevice, c->stream));
  mirror_touch(be, dst.buf, dst.off, ((size_t)(rows - 1) * dst_stride + (size_t)cols) * es);
  prof_end(be, 2.0 * rows * cols * es);
}

void tzc_written(tz_backend *be, tz_slice dst, size_t bytes) { mirror_touch(be, dst.buf, dst.off, bytes); }

void tzc_params_mirror(tz_backend *be, tz_buf *params) {
  tzc_ctx *c = tzc(be);
  if (c->act != TZ_BF16 || !params) return;
  if (c->params_bf16) { /* a new registration replaces the old one */
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    TZC_CHECK(cudaFree(c->params_bf16));
    tzc_mem_account(be, -(long long)(c->n_params * 2));
    c->params_bf16 = NULL;
  }
  size_t n = params->bytes / 4;
  cudaError_t e = cudaMalloc(&c->params_bf16, (n ? n : 1) * 2);
  if (e != cudaSuccess) {
    cudaGetLastError();
    char msg[128];
    snprintf(msg, sizeof msg, "cuda: out of device memory for the bf16 parameter copy (%.1f MiB)", MiB(n * 2));
    tz_fatal(msg);
  }
  c->params = params;
  c->n_params = n;
  tzc_mem_account(be, (long long)(n * 2));
  if (c->verbose) fprintf(stderr, "cuda: alloc %-22s %10.1f MiB (in use %.1f MiB)\n", "params bf16 copy", MiB(n * 2),
                          MiB(c->bytes_used));
  if (c->params_ro && params->ptr) { /* weights read-only: the bf16 copy alone (uploads fill it) */
    TZC_CHECK(cudaStreamSynchronize(c->stream)); /* the buffer's zero-fill may still be queued */
    TZC_CHECK(cudaFree(params->ptr));
    params->ptr = NULL;
    tzc_mem_account(be, -(long long)params->bytes);
    if (n) TZC_CHECK(cudaMemsetAsync(c->params_bf16, 0, n * 2, c->stream)); /* as the fp32 zero-fill */
    if (c->verbose)
      fprintf(stderr, "cuda: free  %-22s %10.1f MiB (in use %.1f MiB): weights read-only, kept as bf16 only\n",
              "params", MiB(params->bytes), MiB(c->bytes_used));
    return;
  }
  if (n) tzc_mirror_refresh(be, 0, n);
}

int tzc_scratch_fits(tz_backend *be, size_t bytes) {
  const size_t have = tzc(be)->scratch_bytes, reserve = (size_t)1 << 30;
  if (bytes <= have) return 1;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return fr > reserve && bytes - have <= (fr - reserve) / 2;
}

void *tzc_scratch(tz_backend *be, size_t bytes) {
  tzc_ctx *c = tzc(be);
  if (bytes <= c->scratch_bytes) return c->scratch;
  size_t want = (bytes + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1); /* whole MiB */
  if (c->scratch) { /* ops queued before may still read the old scratch */
    TZC_CHECK(cudaStreamSynchronize(c->stream));
    TZC_CHECK(cudaFree(c->scratch));
    tzc_mem_account(be, -(long long)c->scratch_bytes);
    c->scratch = NULL;
    c->scratch_bytes = 0;
  }
  cudaError_t e = cudaMalloc(&c->scratch, want);
  if (e != cudaSuccess) {
    cudaGetLastError();
    char msg[128];
    snprintf(msg, sizeof msg, "cuda: out of device memory for %.1f MiB of kernel scratch (%.1f MiB in use)", MiB(want),
             MiB(c->bytes_used));
    tz_fatal(msg);
  }
  c->scratch_bytes = want;
  c->graph_gen++; /* recorded steps that used the old scratch are stale */
  tzc_mem_account(be, (long long)want);
  if (c->verbose) fprintf(stderr, "cuda: alloc %-22s %10.1f MiB (in use %.1f MiB)\n", "kernel scratch", MiB(want),
                          MiB(c->bytes_used));
  return c->scratch;
}

void tzc_scratch_free(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  if (c->scratch) cudaFree(c->scratch);
  c->scratch = NULL;
  c->scratch_bytes = 0;
}
