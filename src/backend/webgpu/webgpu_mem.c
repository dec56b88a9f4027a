/* WebGPU backend memory: buffers (alloc / free), upload and download (a mapped readback
 * buffer), the scratch and staging buffers the ops borrow, the binding-size caps, the memory-like
 * ops (fill, copy, copy_rows: elementwise.wgsl dispatches) and the f16 weight mirror
 * (w16.wgsl), which every write into the parameter buffer marks stale. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/sgmat.h"
#include "backend/webgpu/webgpu_internal.h"

/* ---- buffers ---- */
/* Bytes in the buffers the backend made for tensors, scratch and readback (a driver's own
 * overhead is not visible through webgpu.h): be->mem_peak, as the CUDA backend counts. */
static void count_bytes(wg_ctx *c, long long delta) {
  c->bytes_used += (size_t)delta;
  if (c->bytes_used > c->bytes_peak) c->bytes_peak = c->bytes_used;
}

size_t wg_mem_peak(tz_backend *be) { return CTX(be)->bytes_peak; }

WGPUBuffer wg_mkbuf(wg_ctx *c, uint64_t size, WGPUBufferUsage usage, const char *label) {
  WGPUBufferDescriptor d = {NULL, tz_wgpu_sv(label), usage, size, 0};
  return W.wgpuDeviceCreateBuffer(c->dev, &d);
}

tz_buf *wg_alloc(tz_backend *be, size_t bytes, const char *what) {
  wg_ctx *c = CTX(be);
  size_t size = (bytes + 15) / 16 * 16;
  if (size == 0) size = 16;
  if (size > c->lim.maxBufferSize) {
    tz_err("webgpu: %s needs %zu bytes, above this adapter's maxBufferSize %llu", what ? what : "buffer",
           bytes, (unsigned long long)c->lim.maxBufferSize);
    return NULL;
  }
  WGPUBuffer b = wg_mkbuf(c, size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
                       what);
  W.wgpuInstanceProcessEvents(c->inst);
  if (!b || c->failed) {
    tz_err("webgpu: cannot allocate %zu bytes for %s: %s", bytes, what ? what : "buffer",
           c->failed ? c->errmsg : "buffer creation failed");
    return NULL;
  }
  tz_buf *t = tz_calloc(1, sizeof *t);
  t->b = b;
  t->bytes = bytes;
  t->size = size;
  t->what = what;
  count_bytes(c, (long long)size);
  return t; /* WebGPU buffers are zero-initialized */
}

void wg_free(tz_backend *be, tz_buf *t) {
  if (!t) return;
  wg_ctx *c = CTX(be);
  c->serial++; /* a later buffer may reuse this tz_buf's address (sg_operand's reuse test) */
  if (t == c->pbuf) { /* the parameter buffer goes: so does its mirror */
    c->pbuf = NULL;
    tz_buf *mir = c->mirror;
    c->mirror = NULL;
    wg_free(be, mir);
  }
  wg_flush(c); /* recorded commands may still use it */
  wg_bg_clear(c);
  W.wgpuBufferDestroy(t->b);
  W.wgpuBufferRelease(t->b);
  count_bytes(c, -(long long)t->size);
  free(t);
}

void wg_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!bytes) return;
  wg_flush(c); /* queue writes must not overtake recorded work */
  TZ_ASSERT(dst.off % 4 == 0 && dst.off + bytes <= dst.buf->size);
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  c->serial++;
  size_t main = bytes / 4 * 4;
  if (main) W.wgpuQueueWriteBuffer(c->queue, dst.buf->b, dst.off, src, main);
  if (main < bytes) {
    uint8_t tail[4] = {0};
    memcpy(tail, (const uint8_t *)src + main, bytes - main);
    W.wgpuQueueWriteBuffer(c->queue, dst.buf->b, dst.off + main, tail, 4);
  }
}

void wg_on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
  *(int *)u1 = status == WGPUMapAsyncStatus_Success ? 1 : -1;
}

void wg_download(tz_backend *be, void *dst, tz_slice src, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!bytes) return;
  size_t off = src.off & ~(size_t)3, end = (src.off + bytes + 3) & ~(size_t)3;
  size_t n = end - off;
  TZ_ASSERT(end <= src.buf->size);
  if (n > c->readback_size) {
    if (c->readback) {
      wg_flush(c);
      W.wgpuBufferDestroy(c->readback);
      W.wgpuBufferRelease(c->readback);
      count_bytes(c, -(long long)c->readback_size);
    }
    c->readback_size = (n + 4095) / 4096 * 4096;
    count_bytes(c, (long long)c->readback_size);
    c->readback = wg_mkbuf(c, c->readback_size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "readback");
  }
  wg_end_pass(c);
  W.wgpuCommandEncoderCopyBufferToBuffer(wg_encoder(c), src.buf->b, off, c->readback, 0, n);
  wg_flush(c);
  int st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, wg_on_mapped, &st, NULL};
  size_t mapn = (n + 7) / 8 * 8;
  if (mapn > c->readback_size) mapn = n;
  WGPUFuture f = W.wgpuBufferMapAsync(c->readback, WGPUMapMode_Read, 0, mapn, ci);
  if (wg_wait_future(c, f) != 0 || st != 1) wg_fail(c, "%s%sreadback map failed (%zu bytes, %llu)", "", "", n, 0);
  const uint8_t *p = W.wgpuBufferGetConstMappedRange(c->readback, 0, mapn);
  if (!p) wg_fail(c, "%s%sreadback has no mapped range (%zu, %llu)", "", "", n, 0);
  memcpy(dst, p + (src.off - off), bytes);
  W.wgpuBufferUnmap(c->readback);
  wg_check(c);
}

void wg_sync(tz_backend *be) { wg_sync_ctx(CTX(be)); }

/* scratch for partial sums (never two live users: ops run one after another) */
tz_slice wg_scratch(tz_backend *be, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!c->scratch || c->scratch->size < bytes) {
    if (c->scratch) wg_free(be, c->scratch);
    c->scratch = wg_alloc(be, bytes < (1 << 20) ? (1 << 20) : bytes * 5 / 4, "webgpu scratch");
    if (!c->scratch) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", bytes, 0);
  }
  tz_slice s = {c->scratch, 0};
  return s;
}

/* A second scratch buffer for operands staged by the split matmul (mm_split): the matmul
 * it then runs may itself use wg_scratch() for split-K partials. */
tz_slice wg_stage(tz_backend *be, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!c->stage || c->stage->size < bytes) {
    if (c->stage) wg_free(be, c->stage);
    c->stage = wg_alloc(be, bytes < (1 << 20) ? (1 << 20) : bytes, "webgpu staging");
    if (!c->stage) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", bytes, 0);
  }
  tz_slice s = {c->stage, 0};
  return s;
}

/* Bytes one binding may cover from any 4-byte-aligned start: a slice is bound from its offset
 * rounded down to minStorageBufferOffsetAlignment, so the limit minus one alignment step.
 * Ops whose tensors are larger split their work into pieces of at most this size. */
size_t wg_cap_bytes(wg_ctx *c) {
  uint64_t a = c->lim.minStorageBufferOffsetAlignment;
  return (size_t)((c->lim.maxStorageBufferBindingSize - a) & ~15ull);
}
size_t wg_cap_elems(wg_ctx *c) { return wg_cap_bytes(c) / 4; }

/* ---- memory-like ops ---- */
/* fp32 activations: a plain download; f16 ones (c->act_f16): downloaded as they are (the
 * aligned 4-byte words around them) and widened on the host. */
void wg_download_act(tz_backend *be, float *dst, tz_slice src, size_t n) {
  if (!CTX(be)->act_f16) {
    wg_download(be, dst, src, n * sizeof(float));
    return;
  }
  size_t h = src.off % 4 / 2; /* src starts in the second half of a word */
  src.off -= 2 * h;
  size_t words = (n + h + 1) / 2;
  uint16_t *t = tz_malloc(words * 4);
  wg_download(be, t, src, words * 4);
  for (size_t i = 0; i < n; i++) dst[i] = tz_sgmat_f32(t[h + i]);
  free(t);
}

/* Elementwise ops over n elements run in pieces of at most wg_cap_elems() (each binding then
 * fits maxStorageBufferBindingSize: the flat gradient buffer of a 124M model is 497 MB). */
/* The scalar fill (elementwise.wgsl `fill`: one element per thread; f16 through the preamble's
 * f16 variant, f16s) of n elements of dtype dt from dst. */
static void fill_scalar(wg_ctx *c, tz_slice dst, float value, size_t n, tz_dtype dt) {
  int pi = wg_pipeline(c, "elementwise", "fill", "");
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    w[9] = fbits(value);
    wg_arg a[] = {dt == TZ_F16 ? AH(tz_at(dst, 2 * i), k, "dst") : A(tz_f32(dst, i), F4(k), "dst")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run(c, "fill", pi, w, 10, a, 1, gx, gy, 1);
  }
}

/* The vector fill (fill16.wgsl): nv 16-byte vectors from dst (16-byte aligned) with the value's
 * bytes in dtype dt (f16: two f16s(value) a word, the GPU's conversion as the scalar fill's). */
static void fill_vec(wg_ctx *c, tz_slice dst, float value, size_t nv, tz_dtype dt) {
  const char *pre = dt == TZ_F16 ? "enable f16;\nfn word(b: u32) -> u32 {\n  let h = f16s(bitcast<f32>(b));\n"
                                   "  return bitcast<u32>(vec2<f16>(h, h));\n}\n"
                                 : "fn word(b: u32) -> u32 { return b; }\n";
  int pi = wg_pipeline(c, "fill16", "main", pre);
  for (size_t i = 0, cap = wg_cap_bytes(c) / 16; i < nv; i += cap) {
    size_t k = nv - i < cap ? nv - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    w[9] = fbits(value);
    wg_arg a[] = {A(tz_at(dst, 16 * i), 16 * k, "dst")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run(c, "fill", pi, w, 10, a, 1, gx, gy, 1);
  }
}

/* dst[0..n) = value, fp32 or (dt TZ_F16, f16 activations) f16 rounded by f16s (±inf beyond f16's
 * range, NaN kept). The 16-byte aligned middle of the byte range by fill_vec, one 16-byte store
 * per thread, the ragged ends (under 16 bytes each) by the scalar fill, where the range holds at
 * least FILL_VEC_MIN bytes and dst's offset is a multiple of the element size; else the scalar
 * fill alone (small fills: one dispatch instead of up to three). The same bytes either way.
 * TEZGAH_WEBGPU_FILL_VEC=0: the scalar fill always (A/B). Why: the scalar fill's 4-byte stores
 * ran at ~1.5 TB/s on the H200 (fill16.wgsl). */
#define FILL_VEC_MIN 4096
static long fill_vec_calls; /* the fills that took the vector form (tests) */
long tz_webgpu_fill_vec_calls(void) { return fill_vec_calls; }
void wg_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt) {
  wg_ctx *c = CTX(be);
  TZ_ASSERT(dt == TZ_F32 || (dt == TZ_F16 && c->act_f16)); /* fp32, or f16 activations (be->act) */
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  size_t es = dt == TZ_F16 ? 2 : 4, b0 = dst.off, b1 = dst.off + n * es, a0 = (b0 + 15) & ~(size_t)15,
         a1 = b1 & ~(size_t)15;
  if (env_int("TEZGAH_WEBGPU_FILL_VEC", 1) && n * es >= FILL_VEC_MIN && b0 % es == 0 && a1 > a0) {
    fill_scalar(c, dst, value, (a0 - b0) / es, dt);
    fill_vec(c, tz_at(dst, a0 - b0), value, (a1 - a0) / 16, dt);
    fill_scalar(c, tz_at(dst, a1 - b0), value, (b1 - a1) / es, dt);
    fill_vec_calls++;
    return;
  }
  fill_scalar(c, dst, value, n, dt);
}

void wg_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes) {
  wg_ctx *c = CTX(be);
  TZ_ASSERT(bytes % 4 == 0 && dst.off % 4 == 0 && src.off % 4 == 0);
  TZ_ASSERT(dst.buf != src.buf || dst.off + bytes <= src.off || src.off + bytes <= dst.off);
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  size_t n = bytes / 4;
  int pi = wg_pipeline(c, "elementwise", "copy", "");
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(dst, i), F4(k), "dst"), A(tz_f32(src, i), F4(k), "src")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run(c, "copy", pi, w, 9, a, 2, gx, gy, 1);
  }
}

/* dst[r*ds + c] (+)= src[r*ss + c] (acc: add, in f32); dh16 / sh16: dst / src f16 (activations,
 * converted by the preamble's f16 variant: a store beyond f16's range gives ±inf), else fp32.
 * Also the split matmul's staging copies (wg_copy_rows_ex, fp32; wg_copy_rows_h). */
static void copy_rows(wg_ctx *c, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows, int cols,
                      int acc, int dh16, int sh16) {
  uint32_t w[24] = {0};
  w[8] = rows, w[9] = cols, w[10] = (uint32_t)dst_stride, w[11] = (uint32_t)src_stride, w[12] = acc;
  size_t nd = (size_t)(rows - 1) * dst_stride + cols, ns = (size_t)(rows - 1) * src_stride + cols;
  wg_arg a[] = {dh16 ? AH(dst, nd, "dst") : A(dst, F4(nd), "dst"), sh16 ? AH(src, ns, "src") : A(src, F4(ns), "src")};
  uint32_t gx, gy;
  grid1((uint64_t)rows * cols, &gx, &gy);
  wg_run(c, "copy_rows", wg_pipeline(c, "elementwise", "copy_rows", ""), w, 13, a, 2, gx, gy, 1);
}
void wg_copy_rows_ex(wg_ctx *c, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows,
                         int cols, int acc) {
  copy_rows(c, dst, dst_stride, src, src_stride, rows, cols, acc, 0, 0);
}
/* The same with dst and src each f16 (dh16, sh16) or fp32: the split matmul's staging with f16
 * activations (an f16 operand's column piece, an fp32 partial product into an f16 output). */
void wg_copy_rows_h(wg_ctx *c, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows, int cols,
                    int acc, int dh16, int sh16) {
  copy_rows(c, dst, dst_stride, src, src_stride, rows, cols, acc, dh16, sh16);
}

void wg_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src,
                         size_t src_stride, int rows, int cols) {
  wg_ctx *c = CTX(be);
  if (rows <= 0 || cols <= 0) return;
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  copy_rows(c, dst, dst_stride, src, src_stride, rows, cols, 0, c->act_f16, c->act_f16); /* act rows (backend.h) */
}

/* ---- the f16 weight mirror ---- */
/* Mirror elements [e0, e0 + n) as run_ex's extra binding 9: bound from e0's byte offset
 * rounded down to the storage offset alignment (element offset u5 = 0); *h0 = e0's index
 * inside the binding. Only the range an op touches is bound (a 124M model's mirror is
 * 248 MB, above 128 MiB bindings). */
wg_arg wg_mirror_range(wg_ctx *c, size_t e0, size_t n, uint32_t *h0) {
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  size_t base = (size_t)(e0 * 2 / align * align), end = ((e0 + n) * 2 + 3) & ~(size_t)3;
  if (end > c->mirror->size) end = c->mirror->size;
  *h0 = (uint32_t)(e0 - base / 2);
  tz_slice s = {c->mirror, base};
  return A(s, end - base, "params f16 mirror");
}

/* Re-cast the mirror from the fp32 parameters when they were written since. */
void wg_mirror_refresh(wg_ctx *c) {
  if (!c->mirror || !c->mirror_stale) return;
  size_t n = c->pbuf->bytes / 4;
  int pi = wg_pipeline(c, "w16", "cast_w16", F16_PREFIX);
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0}, h0;
    wg_arg h = wg_mirror_range(c, i, k, &h0);
    w[8] = (uint32_t)k, w[9] = h0;
    tz_slice ps = {c->pbuf, F4(i)};
    wg_arg a[] = {A(ps, F4(k), "params")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run_ex(c, "cast_w16", pi, w, 10, a, 1, gx, gy, 1, &h, -1);
  }
  c->mirror_stale = 0;
}

/* Does this weight slice lie in the mirrored parameter buffer? */
int wg_mirrored(wg_ctx *c, tz_slice s) { return c->mirror && s.buf && s.buf == c->pbuf; }

/* Register the model's flat parameter buffer: with f16 on, allocate its f16 mirror (made
 * from the fp32 values before its first use). */
void wg_params_mirror(tz_backend *be, tz_buf *params) {
  wg_ctx *c = CTX(be);
  if (!c->f16 || !params) return;
  if (c->mirror) {
    tz_buf *mir = c->mirror;
    c->mirror = NULL;
    wg_free(be, mir);
  }
  c->pbuf = params;
  c->mirror = wg_alloc(be, params->bytes / 4 * 2, "params f16 mirror");
  if (!c->mirror) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", params->bytes, 0);
  c->mirror_stale = 1;
}

/* ---- f16 activations (c->act16) ---- */
static void to_f16(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n, const char *entry) {
  TZ_ASSERT(dst.off % 4 == 0 && src.off % 4 == 0);
  int pi = wg_pipeline(c, "to_f16", entry, F16_PREFIX);
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_at(dst, 2 * i), (k * 2 + 3) & ~(size_t)3, "dst (f16)"), A(tz_f32(src, i), F4(k), "src")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run(c, label, pi, w, 9, a, 2, gx, gy, 1);
  }
}
void wg_to_f16(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n) {
  to_f16(c, label, dst, src, n, "to_f16");
}
void wg_to_f16_inf(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n) {
  to_f16(c, label, dst, src, n, "to_f16_inf");
}
void wg_to_f32(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n) {
  TZ_ASSERT(dst.off % 4 == 0 && src.off % 2 == 0);
  int pi = wg_pipeline(c, "to_f32", "to_f32", F16_PREFIX);
  uint32_t h = (uint32_t)(src.off % 4) / 2; /* src starts at the second half of a 4-byte word */
  src.off -= 2 * h;
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k, w[9] = h;
    wg_arg a[] = {A(tz_f32(dst, i), F4(k), "dst"), A(tz_at(src, 2 * i), (k * 2 + 2 * h + 3) & ~(size_t)3, "src (f16)")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run(c, label, pi, w, 10, a, 2, gx, gy, 1);
  }
}

tz_slice wg_act32(tz_backend *be, size_t n) {
  wg_ctx *c = CTX(be);
  if (!c->a32 || c->a32->size < F4(n)) {
    if (c->a32) wg_free(be, c->a32);
    c->a32 = wg_alloc(be, F4(n) < (1 << 20) ? (1 << 20) : F4(n), "webgpu fp32 activation copy");
    if (!c->a32) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", F4(n), 0);
  }
  return (tz_slice){c->a32, 0};
}
tz_slice wg_act32x(tz_backend *be, int slot, size_t bytes) {
  wg_ctx *c = CTX(be);
  TZ_ASSERT(slot >= 0 && slot < 3);
  tz_buf **b = &c->a32x[slot];
  if (!*b || (*b)->size < bytes) {
    if (*b) wg_free(be, *b);
    *b = wg_alloc(be, bytes < (1 << 20) ? (1 << 20) : bytes, "webgpu fp32 activation copy");
    if (!*b) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", bytes, 0);
  }
  return (tz_slice){*b, 0};
}

/* (inf: h = ±65504 after the clamp, so h·h overflows to +inf at run time: WGSL rejects an
 * infinite f16 constant). st16x4(i, v): st16 of elements i .. i + 3 (the vector kernels call it;
 * four scalar stores here, one 8-byte store under wg_v16_prefix). */
#define ST16X4_SCALAR \
  "fn st16x4(i: u32, v: vec4<f32>) { st16(i, v.x); st16(i + 1u, v.y); st16(i + 2u, v.z); st16(i + 3u, v.w); }\n"
const char *wg_out16_prefix_on(int on, int inf) {
  if (on && inf)
    return F16_PREFIX "\nconst OUT16 = true;\n@group(0) @binding(9) var<storage, read_write> O16: array<f16>;\n"
                      "fn st16(i: u32, v: f32) { var h = f16(clamp(v, -65504.0, 65504.0)); "
                      "if (abs(v) > 65504.0) { let big = h * h; h = select(-big, big, v > 0.0); } O16[2u * pu(5u) + i] = h; }\n"
                      ST16X4_SCALAR;
  if (on)
    return F16_PREFIX "\nconst OUT16 = true;\n@group(0) @binding(9) var<storage, read_write> O16: array<f16>;\n"
                      "fn st16(i: u32, v: f32) { O16[2u * pu(5u) + i] = f16(clamp(v, -65504.0, 65504.0)); }\n"
                      ST16X4_SCALAR;
  return "const OUT16 = false;\nfn st16(i: u32, v: f32) {}\nfn st16x4(i: u32, v: vec4<f32>) {}\n";
}
/* The vector kernels' prefix ("// v16": their f16 variant declares the f16 bindings
 * array<vec4<f16>>, module() in webgpu_pipe.c). out16 = 1: the mmin output at binding 9 as
 * array<vec4<f16>> too, saturated as wg_out16_prefix_on(1, 0)'s st16, st16x4 one 8-byte store
 * (element 2·u5 + i, a multiple of 4: the output starts on 8 bytes, wg_v16_ok); st16 writes
 * one component, which the vector kernels never do. out16 = 0: OUT16 off. */
const char *wg_v16_prefix(int out16) {
  if (out16)
    return "// v16\n" F16_PREFIX "\nconst OUT16 = true;\n"
           "@group(0) @binding(9) var<storage, read_write> O16: array<vec4<f16>>;\n"
           "fn st16(i: u32, v: f32) { let k = 2u * pu(5u) + i; O16[k >> 2u][k & 3u] = f16(clamp(v, -65504.0, 65504.0)); }\n"
           "fn st16x4(i: u32, v: vec4<f32>) { O16[(2u * pu(5u) + i) >> 2u] = "
           "vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0))); }\n";
  return "// v16\nconst OUT16 = false;\nfn st16(i: u32, v: f32) {}\nfn st16x4(i: u32, v: vec4<f32>) {}\n";
}
/* TEZGAH_WEBGPU_ACT16_VEC: the vector kernels for f16 activations (wg_v16_ok); =0: the
 * per-element f16 variant of the scalar kernels everywhere (A/B). Read at each call (the tests
 * switch it). Needs a storage offset alignment that keeps 8-byte alignment. */
int wg_v16_on(wg_ctx *c) {
  return c->act_f16 && env_int("TEZGAH_WEBGPU_ACT16_VEC", 1) != 0 && c->lim.minStorageBufferOffsetAlignment % 8 == 0;
}
const char *wg_out16_prefix(wg_ctx *c) { return wg_out16_prefix_on(c->act16, 0); }

int wg_grad16(tz_backend *be, tz_slice dst, size_t n, wg_arg *h) {
  wg_ctx *c = CTX(be);
  if (c->act_f16) return 0; /* the gradient itself is f16 */
  if (!(env_int("TEZGAH_WEBGPU_GRAD16", c->sgmat && wg_sg_reuse()) != 0 && c->has_f16 && dst.off % 16 == 0 && n % 2 == 0))
    return 0;
  tz_slice s = {wg_sg16(be, 0, n * 2), 0};
  *h = A(s, n * 2, "gradient (f16 copy)");
  return 1;
}
void wg_grad16_made(wg_ctx *c, tz_slice dst, size_t n) {
  c->sg_src[0] = dst.buf, c->sg_off[0] = dst.off, c->sg_n[0] = n, c->sg_serial[0] = c->serial;
}
