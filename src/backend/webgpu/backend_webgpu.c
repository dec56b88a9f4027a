/* The WebGPU backend: Dawn (loaded by dawn_load.c) driven through our own webgpu.h subset
 * (webgpu_api.h), every op a WGSL kernel from src/kernels/<op>/<op>.wgsl (embedded at build
 * time, see cmake/embed_wgsl.cmake).
 *
 * Execution model:
 * - Ops are recorded into one command encoder and one compute pass; nothing is submitted
 *   until download(), sync(), upload() (which must not overtake recorded work), free(), or a
 *   full uniform ring. A training micro-step is therefore one submit for forward + loss
 *   readback and one for backward + optimizer.
 * - Uniform parameters live in a ring (one 256-byte slot per dispatch) mirrored on the host
 *   and written with one queue write per submit. Bind groups are cached by (pipeline, slot,
 *   buffers, ranges): a training step repeats the same dispatch sequence, so after the first
 *   step no bind group is created.
 * - A tz_slice is bound from its byte offset rounded down to the storage offset alignment;
 *   the remainder is passed to the kernel in elements (words 0..7 of the uniform block). Each
 *   binding covers exactly the range the op reads or writes; a range above the device's
 *   maxStorageBufferBindingSize stops with an error naming the op and tensor.
 * - Pipelines are created on first use and cached by (file, entry, constant prefix).
 * - The uncaptured-error and device-lost callbacks record the first message; every submit
 *   point checks it and stops the program with that message (never silent zeros).
 * - Precision: fp32 master weights, activations, gradients and optimizer. Where the adapter
 *   offers ShaderF16 (and TEZGAH_WEBGPU_F16 is not 0) the parameter buffer registered by
 *   params_mirror() gets an f16 mirror (w16.wgsl): the forward's weight reads (matmul_t's b, any
 *   shape, embed_fwd's wte/wpe) use it; backward (matmul's W for dX) and AdamW read
 *   fp32. AdamW rewrites the mirror in the same pass; uploads/copies/fills into the parameter
 *   buffer mark it stale and it is re-cast before its next use.
 */
#include <math.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"

/* generated from src/kernels/ * / *.wgsl by cmake/embed_wgsl.cmake */
typedef struct {
  const char *name, *src;
} tz_wgsl_file;
extern const tz_wgsl_file tz_wgsl_files[];
extern const int tz_wgsl_nfiles;

struct tz_buf {
  WGPUBuffer b;
  size_t bytes; /* requested */
  size_t size;  /* allocated (multiple of 16) */
  const char *what;
};

#define UNI_STRIDE 256
#define UNI_SLOTS 4096
#define MAX_ARGS 8
#define MAX_PIPES 512
#define MAX_MODULES 384
#define KEY_CAP 1536
#define BG_CAP 16384
#define PROF_MAX 2048 /* timestamp pairs per submit (4096 queries: the WebGPU maximum) */
#define MAX_LABELS 64

typedef struct {
  char key[KEY_CAP];
  WGPUComputePipeline pipe;
  WGPUBindGroupLayout bgl;
  int nbind; /* storage bindings of a standalone module (0: the preamble's MAX_ARGS) */
  /* preamble modules: the arguments the file writes (bit a; 0xff: no read-only variant) and
   * the read-only variant's pipeline (-1: not made yet); see ro_variant() */
  uint32_t wmask;
  int ro_pi;
} wg_pipe;

typedef struct {
  char key[KEY_CAP];
  WGPUShaderModule mod;
} wg_module;

typedef struct {
  uint32_t pipe, slot, n, used;
  WGPUBuffer buf[MAX_ARGS + 1];
  uint64_t off[MAX_ARGS + 1], size[MAX_ARGS + 1];
  WGPUBindGroup bg;
} wg_bg;

typedef struct {
  WGPUInstance inst;
  WGPUAdapter adapter;
  WGPUDevice dev;
  WGPUQueue queue;
  WGPULimits lim;
  WGPUAdapterInfo info;
  int has_f16, has_subgroups, has_ts;
  int subgroups;     /* reductions with subgroup operations (Subgroups, TEZGAH_WEBGPU_SUBGROUPS != 0) */
  int ro;            /* read-only variants of preamble kernels (ro_variant; TEZGAH_WEBGPU_RO) */
  int f16;           /* f16 weight mirror on (ShaderF16 and TEZGAH_WEBGPU_F16 != 0) */
  tz_buf *pbuf;      /* the registered parameter buffer (params_mirror) */
  tz_buf *mirror;    /* its f16 copy (2 bytes per element) */
  int mirror_stale;  /* pbuf written since the mirror was last made */
  int failed;
  char errmsg[1024];
  /* recording */
  WGPUCommandEncoder enc;
  WGPUComputePassEncoder pass;
  /* uniforms */
  WGPUBuffer uni;
  uint8_t *uni_host;
  uint32_t uni_used;
  /* caches */
  wg_pipe pipes[MAX_PIPES];
  int npipes;
  wg_module mods[MAX_MODULES];
  int nmods;
  wg_bg *bgs;
  size_t nbgs;
  /* buffers owned by the backend */
  tz_buf *scratch, *stage, *wt, *dummy[MAX_ARGS], *ranges;
  uint32_t *ranges_host;
  size_t ranges_words;
  WGPUBuffer readback;
  size_t readback_size;
  /* profiling (TEZGAH_PROFILE=1): one pass per dispatch with timestamps */
  int profile;
  WGPUQuerySet qs;
  WGPUBuffer qres, qread;
  int nq;
  const char *qlabel[PROF_MAX];
  double label_flop[MAX_LABELS], label_bytes[MAX_LABELS], pending_flop; /* per label, summed over dispatches */
  const char *labels[MAX_LABELS];
  double label_ns[MAX_LABELS];
  uint64_t label_calls[MAX_LABELS];
  int nlabels;
  uint64_t submits;
} wg_ctx;

#define CTX(be) ((wg_ctx *)(be)->ctx)
#define W tz_wgpu

static WGPUStringView sv(const char *s) {
  WGPUStringView v = {s, s ? strlen(s) : 0};
  return v;
}
static void sv_copy(char *dst, size_t cap, WGPUStringView v) {
  size_t n = v.data ? (v.length == WGPU_STRLEN ? strlen(v.data) : v.length) : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, v.data, n);
  dst[n] = 0;
}

/* ---- errors ---- */
static void on_error(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                     void *u1, void *u2) {
  wg_ctx *c = u1;
  if (c->failed) return;
  c->failed = 1;
  char m[900];
  sv_copy(m, sizeof m, message);
  const char *kind = type == WGPUErrorType_Validation    ? "validation"
                     : type == WGPUErrorType_OutOfMemory ? "out of memory"
                     : type == WGPUErrorType_Internal    ? "internal"
                                                         : "unknown";
  snprintf(c->errmsg, sizeof c->errmsg, "%s error: %s", kind, m);
}
static void on_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message,
                    void *u1, void *u2) {
  wg_ctx *c = u1;
  if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled)
    return;
  if (c->failed) return;
  c->failed = 1;
  char m[900];
  sv_copy(m, sizeof m, message);
  snprintf(c->errmsg, sizeof c->errmsg, "device lost (reason %u): %s", reason, m);
}

/* Ops cannot return errors (backend.h): a device error ends the program with its message. */
static void check(wg_ctx *c) {
  W.wgpuInstanceProcessEvents(c->inst);
  if (c->failed) {
    char msg[sizeof c->errmsg + 16];
    snprintf(msg, sizeof msg, "webgpu: %s", c->errmsg);
    tz_fatal(msg);
  }
}
static void fail(wg_ctx *c, const char *fmt, const char *a, const char *b, size_t x, uint64_t y) {
  if (!c->failed) {
    c->failed = 1;
    snprintf(c->errmsg, sizeof c->errmsg, fmt, a, b, x, y);
  }
  check(c);
}

/* ---- waiting on futures ---- */
static int wait_future(wg_ctx *c, WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  for (int i = 0; i < 600; i++) { /* 10 minutes */
    WGPUWaitStatus s = W.wgpuInstanceWaitAny(c->inst, 1, &wi, 1000000000ull);
    if (s == WGPUWaitStatus_Success && wi.completed) return 0;
    if (s != WGPUWaitStatus_TimedOut) return -1;
    W.wgpuInstanceProcessEvents(c->inst);
    if (c->failed) return -1;
  }
  return -1;
}

/* ---- submission ---- */
static void prof_collect(wg_ctx *c);

static void end_pass(wg_ctx *c) {
  if (c->pass) {
    W.wgpuComputePassEncoderEnd(c->pass);
    W.wgpuComputePassEncoderRelease(c->pass);
    c->pass = NULL;
  }
}
static WGPUCommandEncoder encoder(wg_ctx *c) {
  if (!c->enc) c->enc = W.wgpuDeviceCreateCommandEncoder(c->dev, NULL);
  return c->enc;
}

static void flush(wg_ctx *c) {
  if (!c->enc) return;
  end_pass(c);
  int nq = c->nq;
  if (c->profile && nq) {
    W.wgpuCommandEncoderResolveQuerySet(c->enc, c->qs, 0, (uint32_t)nq, c->qres, 0);
    W.wgpuCommandEncoderCopyBufferToBuffer(c->enc, c->qres, 0, c->qread, 0, (uint64_t)nq * 8);
  }
  if (c->uni_used)
    W.wgpuQueueWriteBuffer(c->queue, c->uni, 0, c->uni_host, (size_t)c->uni_used * UNI_STRIDE);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(c->enc, NULL);
  W.wgpuQueueSubmit(c->queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(c->enc);
  c->enc = NULL;
  c->uni_used = 0;
  c->submits++;
  if (c->profile && nq) prof_collect(c);
  check(c);
}

static void on_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *u1, void *u2) {
  *(int *)u1 = status == WGPUQueueWorkDoneStatus_Success ? 1 : -1;
}
static void wg_sync_ctx(wg_ctx *c) {
  flush(c);
  int done = 0;
  WGPUQueueWorkDoneCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_done, &done, NULL};
  WGPUFuture f = W.wgpuQueueOnSubmittedWorkDone(c->queue, ci);
  if (wait_future(c, f) != 0 || done != 1)
    fail(c, "%s%squeue did not finish (%zu, %llu)", "", "", 0, 0);
  check(c);
}

/* ---- buffers ---- */
static WGPUBuffer mkbuf(wg_ctx *c, uint64_t size, WGPUBufferUsage usage, const char *label) {
  WGPUBufferDescriptor d = {NULL, sv(label), usage, size, 0};
  return W.wgpuDeviceCreateBuffer(c->dev, &d);
}

static void bg_clear(wg_ctx *c);

static tz_buf *wg_alloc(tz_backend *be, size_t bytes, const char *what) {
  wg_ctx *c = CTX(be);
  size_t size = (bytes + 15) / 16 * 16;
  if (size == 0) size = 16;
  if (size > c->lim.maxBufferSize) {
    tz_err("webgpu: %s needs %zu bytes, above this adapter's maxBufferSize %llu", what ? what : "buffer",
           bytes, (unsigned long long)c->lim.maxBufferSize);
    return NULL;
  }
  WGPUBuffer b = mkbuf(c, size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
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
  return t; /* WebGPU buffers are zero-initialized */
}

static void wg_free(tz_backend *be, tz_buf *t) {
  if (!t) return;
  wg_ctx *c = CTX(be);
  if (t == c->pbuf) { /* the parameter buffer goes: so does its mirror */
    c->pbuf = NULL;
    tz_buf *mir = c->mirror;
    c->mirror = NULL;
    wg_free(be, mir);
  }
  flush(c); /* recorded commands may still use it */
  bg_clear(c);
  W.wgpuBufferDestroy(t->b);
  W.wgpuBufferRelease(t->b);
  free(t);
}

static void wg_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!bytes) return;
  flush(c); /* queue writes must not overtake recorded work */
  TZ_ASSERT(dst.off % 4 == 0 && dst.off + bytes <= dst.buf->size);
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  size_t main = bytes / 4 * 4;
  if (main) W.wgpuQueueWriteBuffer(c->queue, dst.buf->b, dst.off, src, main);
  if (main < bytes) {
    uint8_t tail[4] = {0};
    memcpy(tail, (const uint8_t *)src + main, bytes - main);
    W.wgpuQueueWriteBuffer(c->queue, dst.buf->b, dst.off + main, tail, 4);
  }
}

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
  *(int *)u1 = status == WGPUMapAsyncStatus_Success ? 1 : -1;
}

static void wg_download(tz_backend *be, void *dst, tz_slice src, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!bytes) return;
  size_t off = src.off & ~(size_t)3, end = (src.off + bytes + 3) & ~(size_t)3;
  size_t n = end - off;
  TZ_ASSERT(end <= src.buf->size);
  if (n > c->readback_size) {
    if (c->readback) {
      flush(c);
      W.wgpuBufferDestroy(c->readback);
      W.wgpuBufferRelease(c->readback);
    }
    c->readback_size = (n + 4095) / 4096 * 4096;
    c->readback = mkbuf(c, c->readback_size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "readback");
  }
  end_pass(c);
  W.wgpuCommandEncoderCopyBufferToBuffer(encoder(c), src.buf->b, off, c->readback, 0, n);
  flush(c);
  int st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &st, NULL};
  size_t mapn = (n + 7) / 8 * 8;
  if (mapn > c->readback_size) mapn = n;
  WGPUFuture f = W.wgpuBufferMapAsync(c->readback, WGPUMapMode_Read, 0, mapn, ci);
  if (wait_future(c, f) != 0 || st != 1) fail(c, "%s%sreadback map failed (%zu bytes, %llu)", "", "", n, 0);
  const uint8_t *p = W.wgpuBufferGetConstMappedRange(c->readback, 0, mapn);
  if (!p) fail(c, "%s%sreadback has no mapped range (%zu, %llu)", "", "", n, 0);
  memcpy(dst, p + (src.off - off), bytes);
  W.wgpuBufferUnmap(c->readback);
  check(c);
}

static void wg_sync(tz_backend *be) { wg_sync_ctx(CTX(be)); }

/* scratch for partial sums (never two live users: ops run one after another) */
static tz_slice scratch(tz_backend *be, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!c->scratch || c->scratch->size < bytes) {
    if (c->scratch) wg_free(be, c->scratch);
    c->scratch = wg_alloc(be, bytes < (1 << 20) ? (1 << 20) : bytes * 5 / 4, "webgpu scratch");
    if (!c->scratch) fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", bytes, 0);
  }
  tz_slice s = {c->scratch, 0};
  return s;
}

/* A second scratch buffer for operands staged by the split matmul (mm_split): the matmul
 * it then runs may itself use scratch() for split-K partials. */
static tz_slice stage(tz_backend *be, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!c->stage || c->stage->size < bytes) {
    if (c->stage) wg_free(be, c->stage);
    c->stage = wg_alloc(be, bytes < (1 << 20) ? (1 << 20) : bytes, "webgpu staging");
    if (!c->stage) fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", bytes, 0);
  }
  tz_slice s = {c->stage, 0};
  return s;
}

/* Bytes one binding may cover from any 4-byte-aligned start: a slice is bound from its offset
 * rounded down to minStorageBufferOffsetAlignment, so the limit minus one alignment step.
 * Ops whose tensors are larger split their work into pieces of at most this size. */
static size_t cap_bytes(wg_ctx *c) {
  uint64_t a = c->lim.minStorageBufferOffsetAlignment;
  return (size_t)((c->lim.maxStorageBufferBindingSize - a) & ~15ull);
}
static size_t cap_elems(wg_ctx *c) { return cap_bytes(c) / 4; }

/* ---- pipelines ---- */
static const char *wgsl_src(const char *name) {
  for (int i = 0; i < tz_wgsl_nfiles; i++)
    if (!strcmp(tz_wgsl_files[i].name, name)) return tz_wgsl_files[i].src;
  return NULL;
}

/* A kernel file that declares its own uniform binding is standalone: no preamble (its
 * bindings can then be read-only and vec4-typed); it has as many storage bindings as
 * "@binding(" occurrences minus the uniform. */
static int standalone(const char *body) {
  if (!strstr(body, "@binding(0) var<uniform>")) return 0;
  int n = -1;
  for (const char *q = body; (q = strstr(q, "@binding(")); q++) n++;
  return n;
}

static WGPUShaderModule module(wg_ctx *c, const char *file, const char *prefix) {
  char key[KEY_CAP];
  snprintf(key, sizeof key, "%s|%s", file, prefix);
  for (int i = 0; i < c->nmods; i++)
    if (!strcmp(c->mods[i].key, key)) return c->mods[i].mod;
  const char *pre = wgsl_src("preamble"), *body = wgsl_src(file);
  TZ_ASSERT(pre && body && c->nmods < MAX_MODULES);
  /* the workgroup reductions (wg_sum, wg_max) where the file uses them: subgroup operations
   * where offered, else shared memory only */
  const char *red = "", *en = "";
  int alone = standalone(body);
  if (alone) pre = "";
  if (!alone && (strstr(body, "wg_sum(") || strstr(body, "wg_max("))) {
    red = wgsl_src(c->subgroups ? "reduce_sg" : "reduce_wg");
    if (c->subgroups) en = "enable subgroups;\n";
  }
  /* the lane reductions (lanes_max4, lanes_sum4: the standalone attention_fa.wgsl) the same
   * way; the caller's prefix sets SGW (attn_prefix) */
  else if (strstr(body, "lanes_max4(") || strstr(body, "lanes_sum4(")) {
    red = wgsl_src(c->subgroups ? "lanes_sg" : "lanes_wg");
    if (c->subgroups) en = "enable subgroups;\n";
  }
  TZ_ASSERT(red);
  /* the workgroup scan (wg_scan: common/scan256.wgsl, also the tokenizer's) where called */
  const char *scan = strstr(body, "wg_scan(") ? wgsl_src("scan256") : "";
  TZ_ASSERT(scan);
  /* A prefix containing "// rw" turns a standalone module's read-only bindings read_write:
   * Dawn rejects a buffer bound read-only and writable in the same dispatch, even for
   * disjoint ranges. */
  char *rw = NULL;
  if (strstr(prefix, "// rw")) {
    const char *ro = "var<storage, read>", *wr = "var<storage, read_write>";
    rw = tz_malloc(strlen(body) * 2 + 1);
    char *o = rw;
    for (const char *q = body; *q;)
      if (!strncmp(q, ro, strlen(ro))) {
        o += sprintf(o, "%s", wr);
        q += strlen(ro);
      } else {
        *o++ = *q++;
      }
    *o = 0;
    body = rw;
  }
  /* "// ro W=<hex mask>" in the prefix: the preamble's argument block with read-only bindings
   * for the arguments outside the mask (ro_variant) */
  char *pre_ro = NULL;
  const char *rom = strstr(prefix, "// ro W=");
  if (rom && !alone) {
    unsigned wm = (unsigned)strtoul(rom + 8, NULL, 16);
    const char *b0 = strstr(pre, "// ARGS BEGIN"), *b1 = strstr(pre, "// ARGS END");
    TZ_ASSERT(b0 && b1);
    size_t cap = strlen(pre) + 4096;
    pre_ro = tz_malloc(cap);
    size_t o = (size_t)snprintf(pre_ro, cap, "%.*s", (int)(b0 - pre), pre);
    for (int k = 0; k < MAX_ARGS; k++)
      o += (size_t)snprintf(pre_ro + o, cap - o, "@group(0) @binding(%d) var<storage, %s> B%d: array<f32>;\n", k + 1,
                            (wm >> k) & 1 ? "read_write" : "read", k);
    /* every binding statically used by ld and st: the auto layout then always has all eight */
    o += (size_t)snprintf(pre_ro + o, cap - o, "fn touch_args() {");
    for (int k = 0; k < MAX_ARGS; k++) o += (size_t)snprintf(pre_ro + o, cap - o, " _ = &B%d;", k);
    o += (size_t)snprintf(pre_ro + o, cap - o, " }\nfn ld(a: u32, i: u32) -> f32 {\n  touch_args();\n  let j = aoff(a) + i;\n  switch a {\n");
    for (int k = 0; k < MAX_ARGS - 1; k++) o += (size_t)snprintf(pre_ro + o, cap - o, "    case %du: { return B%d[j]; }\n", k, k);
    o += (size_t)snprintf(pre_ro + o, cap - o, "    default: { return B7[j]; }\n  }\n}\nfn st(a: u32, i: u32, v: f32) {\n  touch_args();\n  let j = aoff(a) + i;\n  switch a {\n");
    for (int k = 0; k < MAX_ARGS; k++)
      if ((wm >> k) & 1) o += (size_t)snprintf(pre_ro + o, cap - o, "    case %du: { B%d[j] = v; }\n", k, k);
    o += (size_t)snprintf(pre_ro + o, cap - o, "    default: {}\n  }\n}\n%s", b1);
    pre = pre_ro;
  }
  size_t n = strlen(en) + strlen(pre) + strlen(red) + strlen(scan) + strlen(prefix) + strlen(body) + 8;
  char *src = tz_malloc(n);
  snprintf(src, n, "%s%s\n%s\n%s\n%s\n%s", en, prefix, pre, red, scan, body);
  WGPUShaderSourceWGSL ws = {{NULL, WGPUSType_ShaderSourceWGSL}, sv(src)};
  WGPUShaderModuleDescriptor d = {&ws.chain, sv(file)};
  WGPUShaderModule m = W.wgpuDeviceCreateShaderModule(c->dev, &d);
  free(src);
  free(rw);
  free(pre_ro);
  snprintf(c->mods[c->nmods].key, sizeof c->mods[c->nmods].key, "%s", key);
  c->mods[c->nmods++].mod = m;
  return m;
}

/* The arguments a preamble kernel file writes, as a bit mask: every st(<digit>u, ...) call, and
 * 0, 2, 3 where it calls adamw_elem. 0xff (no read-only variant) when it stores through a
 * non-constant argument or indexes the bindings B0..B7 itself (matmul.wgsl's DIRECT form). */
static uint32_t written_args(const char *body) {
  uint32_t m = 0;
  if (strstr(body, "adamw_elem(")) m |= 1u | 4u | 8u;
  for (int k = 0; k < MAX_ARGS; k++) {
    char b[8];
    snprintf(b, sizeof b, "B%d[", k);
    if (strstr(body, b)) return 0xff;
  }
  for (const char *q = body; (q = strstr(q, "st(")); q += 3) {
    if (q > body && (isalnum((unsigned char)q[-1]) || q[-1] == '_')) continue;
    if (q[3] >= '0' && q[3] < '0' + MAX_ARGS && q[4] == 'u' && q[5] == ',') m |= 1u << (q[3] - '0');
    else return 0xff;
  }
  return m;
}

/* Pipeline index for entry point `entry` of src/kernels/<file>/<file>.wgsl, with `prefix`
 * (WGSL const declarations) prepended. */
static int pipeline(wg_ctx *c, const char *file, const char *entry, const char *prefix) {
  char key[KEY_CAP];
  snprintf(key, sizeof key, "%s:%s|%s", file, entry, prefix);
  TZ_ASSERT(strlen(file) + strlen(entry) + strlen(prefix) + 3 < KEY_CAP);
  for (int i = 0; i < c->npipes; i++)
    if (!strcmp(c->pipes[i].key, key)) return i;
  TZ_ASSERT(c->npipes < MAX_PIPES);
  WGPUComputePipelineDescriptor d;
  memset(&d, 0, sizeof d);
  d.label = sv(entry);
  d.compute.module = module(c, file, prefix);
  d.compute.entryPoint = sv(entry);
  wg_pipe *p = &c->pipes[c->npipes];
  snprintf(p->key, sizeof p->key, "%s", key);
  p->pipe = W.wgpuDeviceCreateComputePipeline(c->dev, &d);
  p->bgl = W.wgpuComputePipelineGetBindGroupLayout(p->pipe, 0);
  p->nbind = standalone(wgsl_src(file));
  p->wmask = p->nbind || strstr(prefix, "// ro W=") ? 0xff : written_args(wgsl_src(file));
  p->ro_pi = -1;
  /* a standalone module's prefix may declare bindings too (matmul_fast's operands) */
  for (const char *q = prefix; p->nbind && (q = strstr(q, "@binding(")); q++) p->nbind++;
  check(c);
  return c->npipes++;
}

/* ---- bind groups ---- */
static void bg_clear(wg_ctx *c) {
  if (!c->nbgs) return;
  for (size_t i = 0; i < BG_CAP; i++)
    if (c->bgs[i].used) {
      W.wgpuBindGroupRelease(c->bgs[i].bg);
      c->bgs[i].used = 0;
    }
  c->nbgs = 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static WGPUBindGroup bind_group(wg_ctx *c, int pi, uint32_t slot, int n, WGPUBuffer *buf,
                                uint64_t *off, uint64_t *size) {
  uint64_t h = mix(mix(pi, slot), n);
  for (int i = 0; i < n; i++) h = mix(mix(mix(h, (uint64_t)(uintptr_t)buf[i]), off[i]), size[i]);
  size_t at = h % BG_CAP;
  for (;;) {
    wg_bg *e = &c->bgs[at];
    if (!e->used) break;
    if (e->pipe == (uint32_t)pi && e->slot == slot && e->n == (uint32_t)n &&
        !memcmp(e->buf, buf, n * sizeof *buf) && !memcmp(e->off, off, n * sizeof *off) &&
        !memcmp(e->size, size, n * sizeof *size))
      return e->bg;
    at = (at + 1) % BG_CAP;
  }
  TZ_ASSERT(c->nbgs < BG_CAP / 2 + 1); /* run() empties a full cache before a dispatch */
  WGPUBindGroupEntry e[MAX_ARGS + 2];
  TZ_ASSERT(n <= MAX_ARGS + 1);
  memset(e, 0, sizeof e);
  e[0].binding = 0;
  e[0].buffer = c->uni;
  e[0].offset = (uint64_t)slot * UNI_STRIDE;
  e[0].size = UNI_STRIDE;
  for (int i = 0; i < n; i++) {
    e[i + 1].binding = i + 1;
    e[i + 1].buffer = buf[i];
    e[i + 1].offset = off[i];
    e[i + 1].size = size[i];
  }
  WGPUBindGroupDescriptor d = {NULL, sv(NULL), c->pipes[pi].bgl, (size_t)n + 1, e};
  wg_bg *slotp = &c->bgs[at];
  slotp->pipe = pi;
  slotp->slot = slot;
  slotp->n = n;
  memcpy(slotp->buf, buf, n * sizeof *buf);
  memcpy(slotp->off, off, n * sizeof *off);
  memcpy(slotp->size, size, n * sizeof *size);
  slotp->bg = W.wgpuDeviceCreateBindGroup(c->dev, &d);
  slotp->used = 1;
  c->nbgs++;
  return slotp->bg;
}

/* ---- dispatch ---- */
typedef struct {
  tz_slice s;
  size_t bytes; /* extent read or written from s.off */
  const char *name;
} wg_arg;

static int label_index(wg_ctx *c, const char *label) {
  for (int i = 0; i < c->nlabels; i++)
    if (c->labels[i] == label || !strcmp(c->labels[i], label)) return i;
  if (c->nlabels == MAX_LABELS) return MAX_LABELS - 1;
  c->labels[c->nlabels] = label;
  return c->nlabels++;
}

/* The bindings run_ex gives a dispatch's arguments: arguments in the same buffer whose aligned
 * ranges overlap share one binding. Fills slot_of[i] (-1 for an absent argument), and per
 * binding its buffer sb[k] and byte range [lo[k], hi[k]); returns the number of bindings. The
 * first present argument always gets binding 0. */
static int bind_slots(wg_ctx *c, const wg_arg *args, int nargs, int *slot_of, tz_buf **sb, uint64_t *lo,
                      uint64_t *hi) {
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  int ns = 0;
  for (int i = 0; i < nargs; i++) {
    slot_of[i] = -1;
    const wg_arg *a = &args[i];
    if (!a->s.buf) continue;
    uint64_t l = a->s.off, h = a->s.off + (a->bytes ? a->bytes : 4);
    int s = -1;
    for (int k = 0; k < ns; k++)
      if (sb[k] == a->s.buf && l / align * align < ((hi[k] + 3) & ~3ull) &&
          lo[k] / align * align < ((h + 3) & ~3ull))
        s = k;
    if (s < 0) {
      s = ns++;
      sb[s] = a->s.buf, lo[s] = l, hi[s] = h;
    } else {
      if (l < lo[s]) lo[s] = l;
      if (h > hi[s]) hi[s] = h;
    }
    slot_of[i] = s;
  }
  /* merging can make two slots overlap: fold them until none do */
  for (int changed = 1; changed;) {
    changed = 0;
    for (int x = 0; x < ns && !changed; x++)
      for (int y = x + 1; y < ns && !changed; y++)
        if (sb[x] == sb[y] && lo[y] / align * align < ((hi[x] + 3) & ~3ull) &&
            lo[x] / align * align < ((hi[y] + 3) & ~3ull)) {
          if (lo[y] < lo[x]) lo[x] = lo[y];
          if (hi[y] > hi[x]) hi[x] = hi[y];
          for (int i = 0; i < nargs; i++)
            if (slot_of[i] == y) slot_of[i] = x;
            else if (slot_of[i] == ns - 1) slot_of[i] = y;
          sb[y] = sb[ns - 1], lo[y] = lo[ns - 1], hi[y] = hi[ns - 1];
          ns--;
          changed = 1;
        }
  }
  return ns;
}

/* The read-only variant of preamble pipeline pi for this dispatch, or pi. The variant binds
 * argument a at binding a, read-only where the kernel file never writes it (written_args), and
 * its ld / st fold to one binding per call site (the generic form switches on the binding
 * number from the uniform block). Usable when every argument got its own binding in order (no
 * two share one) and no read-only binding's buffer is also bound writable (Dawn rejects a buffer
 * bound both ways in one dispatch, even on disjoint ranges). Why: NVIDIA loads read-only storage
 * through its non-coherent path; the matmul and attention kernels gained 20-35 % from
 * read-only operands on the H200 (docs/PERF.md). On by default except on CPU adapters
 * (lavapipe: no difference there, and more pipelines to compile); TEZGAH_WEBGPU_RO=0/1
 * overrides (the tests force it on lavapipe). */
static int ro_variant(wg_ctx *c, int pi, const wg_arg *args, int nargs, const int *slot_of, tz_buf *const *sb,
                      int ns, const wg_arg *atomic_arg) {
  wg_pipe *p = &c->pipes[pi];
  if (!c->ro || p->wmask == 0xff) return pi;
  for (int i = 0; i < nargs; i++)
    if (slot_of[i] >= 0 ? slot_of[i] != i : i < ns) return pi;
  for (int k = 0; k < ns; k++) {
    if ((p->wmask >> k) & 1) continue;
    if (atomic_arg && atomic_arg->s.buf == sb[k]) return pi;
    for (int j = 0; j < ns; j++)
      if (((p->wmask >> j) & 1) && sb[j] == sb[k]) return pi;
  }
  if (p->ro_pi < 0) { /* key = file:entry|prefix */
    char file[64], entry[128], prefix[KEY_CAP];
    const char *colon = strchr(p->key, ':'), *bar = strchr(p->key, '|');
    TZ_ASSERT(colon && bar && colon - p->key < 64 && bar - colon - 1 < 128);
    snprintf(file, sizeof file, "%.*s", (int)(colon - p->key), p->key);
    snprintf(entry, sizeof entry, "%.*s", (int)(bar - colon - 1), colon + 1);
    snprintf(prefix, sizeof prefix, "%s\n// ro W=%02x", bar + 1, p->wmask);
    c->pipes[pi].ro_pi = pipeline(c, file, entry, prefix);
  }
  return c->pipes[pi].ro_pi;
}

/* Record one dispatch. words[8..nwords) are the kernel's scalar parameters (u0, u1, ...);
 * words[0..7] are scratch. args (at most 8) are the tensor arguments in the kernel's order.
 * Arguments in the same buffer whose aligned ranges overlap share one binding (Dawn rejects
 * overlapping writable bindings); the block written to the uniform slot is
 * [element offset of each arg][binding of each arg][parameters]. atomic_arg (or NULL) is
 * bound alone at binding 9, its element offset in u5 (embed_backward's integer scratch, the
 * f16 mirror's range). */
static void run_ex(wg_ctx *c, const char *label, int pi, uint32_t *words, int nwords, const wg_arg *args,
                   int nargs, uint32_t gx, uint32_t gy, uint32_t gz, const wg_arg *atomic_arg, int pi_direct) {
  TZ_ASSERT(nargs <= MAX_ARGS && nwords - 8 <= 16);
  if (!gx || !gy || !gz) return;
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  tz_buf *sb[MAX_ARGS];
  uint64_t lo[MAX_ARGS], hi[MAX_ARGS];
  int slot_of[MAX_ARGS], ns = bind_slots(c, args, nargs, slot_of, sb, lo, hi);
  /* pi_direct: a variant of the kernel that indexes bindings 0..nargs-1 directly, usable
   * when argument i got binding i (no merges) */
  if (pi_direct >= 0) {
    int ok = 1;
    for (int i = 0; i < nargs; i++)
      if (slot_of[i] >= 0 ? slot_of[i] != i : i < ns) ok = 0;
    if (ok) pi = pi_direct;
  } else {
    pi = ro_variant(c, pi, args, nargs, slot_of, sb, ns, atomic_arg);
  }
  WGPUBuffer buf[MAX_ARGS + 1];
  uint64_t off[MAX_ARGS + 1], size[MAX_ARGS + 1];
  for (int k = 0; k < MAX_ARGS; k++) {
    if (k >= ns) {
      buf[k] = c->dummy[k]->b, off[k] = 0, size[k] = 16;
      continue;
    }
    uint64_t base = lo[k] / align * align, end = (hi[k] + 3) & ~3ull;
    if (end > sb[k]->size) end = sb[k]->size;
    buf[k] = sb[k]->b, off[k] = base, size[k] = end - base;
    if (size[k] > c->lim.maxStorageBufferBindingSize) {
      char nm[160] = "?";
      for (int i = 0; i < nargs; i++)
        if (slot_of[i] == k)
          snprintf(nm, sizeof nm, "%s' in buffer '%s", args[i].name, sb[k]->what ? sb[k]->what : "?");
      fail(c, "%s: tensor '%s' spans %zu bytes, above this adapter's maxStorageBufferBindingSize %llu "
              "(use a smaller model or batch, or a GPU with larger bindings)",
           label, nm, (size_t)size[k], (unsigned long long)c->lim.maxStorageBufferBindingSize);
    }
  }
  uint32_t block[32];
  memset(block, 0, sizeof block);
  for (int i = 0; i < nargs; i++)
    if (slot_of[i] >= 0) {
      block[i] = (uint32_t)((args[i].s.off - off[slot_of[i]]) / 4);
      block[8 + i] = (uint32_t)slot_of[i];
    }
  memcpy(block + 16, words + 8, (size_t)(nwords - 8) * 4);
  int nb = c->pipes[pi].nbind ? c->pipes[pi].nbind : MAX_ARGS;
  if (atomic_arg) {
    uint64_t base = atomic_arg->s.off / align * align;
    uint64_t end = (atomic_arg->s.off + atomic_arg->bytes + 3) & ~3ull;
    buf[nb] = atomic_arg->s.buf->b, off[nb] = base, size[nb] = end - base;
    if (size[nb] > c->lim.maxStorageBufferBindingSize)
      fail(c, "%s: tensor '%s' spans %zu bytes, above this adapter's maxStorageBufferBindingSize %llu "
              "(use a smaller model or batch, or a GPU with larger bindings)",
           label, atomic_arg->name, (size_t)size[nb], (unsigned long long)c->lim.maxStorageBufferBindingSize);
    block[16 + 5] = (uint32_t)((atomic_arg->s.off - base) / 4); /* u5 */
    nb++;
  }
  /* Everything that may submit comes before the dispatch takes its uniform slot. A full bind
   * group cache is emptied only after the work that uses its groups has been submitted. */
  if (c->uni_used == UNI_SLOTS || c->nbgs > BG_CAP / 2 || (c->profile && c->nq + 2 > PROF_MAX * 2)) {
    flush(c);
    if (c->nbgs > BG_CAP / 2) bg_clear(c);
  }
  uint32_t slot = c->uni_used++;
  memcpy(c->uni_host + (size_t)slot * UNI_STRIDE, block, sizeof block);
  WGPUBindGroup bg = bind_group(c, pi, slot, nb, buf, off, size);
  encoder(c);
  if (c->profile) {
    int li = label_index(c, label);
    for (int i = 0; i < nargs; i++) c->label_bytes[li] += (double)args[i].bytes;
    c->label_flop[li] += c->pending_flop;
    end_pass(c);
    WGPUPassTimestampWrites tw = {NULL, c->qs, (uint32_t)c->nq, (uint32_t)c->nq + 1};
    WGPUComputePassDescriptor pd = {NULL, sv(label), &tw};
    c->pass = W.wgpuCommandEncoderBeginComputePass(c->enc, &pd);
    c->qlabel[c->nq / 2] = label;
    c->nq += 2;
  } else if (!c->pass) {
    c->pass = W.wgpuCommandEncoderBeginComputePass(c->enc, NULL);
  }
  W.wgpuComputePassEncoderSetPipeline(c->pass, c->pipes[pi].pipe);
  W.wgpuComputePassEncoderSetBindGroup(c->pass, 0, bg, 0, NULL);
  W.wgpuComputePassEncoderDispatchWorkgroups(c->pass, gx, gy, gz);
  if (c->profile) end_pass(c);
}
static void run(wg_ctx *c, const char *label, int pi, uint32_t *words, int nwords, const wg_arg *args,
                int nargs, uint32_t gx, uint32_t gy, uint32_t gz) {
  run_ex(c, label, pi, words, nwords, args, nargs, gx, gy, gz, NULL, -1);
}

/* A 1-D grid of `threads` threads in workgroups of 256, folded into x and y. */
static void grid1(uint64_t threads, uint32_t *gx, uint32_t *gy) {
  uint64_t wgs = (threads + 255) / 256;
  if (wgs == 0) {
    *gx = *gy = 0;
    return;
  }
  uint64_t x = wgs < 32768 ? wgs : 32768;
  *gx = (uint32_t)x;
  *gy = (uint32_t)((wgs + x - 1) / x);
}
/* A grid of `groups` workgroups (one per row), folded into x and y. */
static void gridn(uint64_t groups, uint32_t *gx, uint32_t *gy) {
  if (!groups) {
    *gx = *gy = 0;
    return;
  }
  uint64_t x = groups < 32768 ? groups : 32768;
  *gx = (uint32_t)x;
  *gy = (uint32_t)((groups + x - 1) / x);
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

#define A(slice, nbytes, nm) ((wg_arg){(slice), (nbytes), (nm)})
#define F4(n) ((size_t)(n) * 4)

/* ---- memory-like ops ---- */
/* Activations are fp32 here: a plain download. */
static void wg_download_act(tz_backend *be, float *dst, tz_slice src, size_t n) {
  wg_download(be, dst, src, n * sizeof(float));
}

/* Elementwise ops over n elements run in pieces of at most cap_elems() (each binding then
 * fits maxStorageBufferBindingSize: the flat gradient buffer of a 124M model is 497 MB). */
static void wg_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt) {
  wg_ctx *c = CTX(be);
  TZ_ASSERT(dt == TZ_F32); /* WebGPU activations are fp32 (be->act) */
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  int pi = pipeline(c, "elementwise", "fill", "");
  for (size_t i = 0, cap = cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    w[9] = fbits(value);
    wg_arg a[] = {A(tz_f32(dst, i), F4(k), "dst")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    run(c, "fill", pi, w, 10, a, 1, gx, gy, 1);
  }
}

static void wg_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes) {
  wg_ctx *c = CTX(be);
  TZ_ASSERT(bytes % 4 == 0 && dst.off % 4 == 0 && src.off % 4 == 0);
  TZ_ASSERT(dst.buf != src.buf || dst.off + bytes <= src.off || src.off + bytes <= dst.off);
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  size_t n = bytes / 4;
  int pi = pipeline(c, "elementwise", "copy", "");
  for (size_t i = 0, cap = cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(dst, i), F4(k), "dst"), A(tz_f32(src, i), F4(k), "src")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    run(c, "copy", pi, w, 9, a, 2, gx, gy, 1);
  }
}

/* dst[r*ds + c] (+)= src[r*ss + c] (acc: add). Also the split matmul's staging copies. */
static void copy_rows_ex(wg_ctx *c, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows,
                         int cols, int acc) {
  uint32_t w[24] = {0};
  w[8] = rows, w[9] = cols, w[10] = (uint32_t)dst_stride, w[11] = (uint32_t)src_stride, w[12] = acc;
  wg_arg a[] = {A(dst, F4((size_t)(rows - 1) * dst_stride + cols), "dst"),
                A(src, F4((size_t)(rows - 1) * src_stride + cols), "src")};
  uint32_t gx, gy;
  grid1((uint64_t)rows * cols, &gx, &gy);
  run(c, "copy_rows", pipeline(c, "elementwise", "copy_rows", ""), w, 13, a, 2, gx, gy, 1);
}

static void wg_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src,
                         size_t src_stride, int rows, int cols) {
  wg_ctx *c = CTX(be);
  if (rows <= 0 || cols <= 0) return;
  if (dst.buf == c->pbuf) c->mirror_stale = 1;
  copy_rows_ex(c, dst, dst_stride, src, src_stride, rows, cols, 0);
}

static void wg_add(tz_backend *be, tz_slice out, tz_slice a_, tz_slice b_, size_t n) {
  wg_ctx *c = CTX(be);
  int pi = pipeline(c, "elementwise", "add", "");
  for (size_t i = 0, cap = cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(out, i), F4(k), "out"), A(tz_f32(a_, i), F4(k), "a"), A(tz_f32(b_, i), F4(k), "b")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    run(c, "add", pi, w, 9, a, 3, gx, gy, 1);
  }
}

/* dst[c] += Σ_k part[k*stride + c], c < cols, k < rows (colsum_rows: 16 columns per workgroup) */
static void colsum_add(wg_ctx *c, tz_slice dst, tz_slice part, int rows, int cols, int stride) {
  uint32_t w[24] = {0};
  w[8] = rows, w[9] = cols, w[10] = 0, w[11] = stride;
  wg_arg a[] = {A(dst, F4(cols), "param grad"), A(part, F4((size_t)rows * stride), "partials")};
  run(c, "colsum_add", pipeline(c, "elementwise", "colsum_rows", ""), w, 12, a, 2, (cols + 15) / 16, 1, 1);
}

#define CHUNK 32 /* rows per partial column sum */

static void wg_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  int nch = (M + CHUNK - 1) / CHUNK;
  tz_slice part = scratch(be, F4((size_t)nch * N));
  uint32_t w[24] = {0};
  w[8] = M, w[9] = N, w[10] = CHUNK, w[11] = N;
  wg_arg a[] = {A(part, F4((size_t)nch * N), "partials"), A(dout, F4((size_t)M * N), "dout")};
  run(c, "bias_bwd", pipeline(c, "elementwise", "colsum_partial", ""), w, 12, a, 2, (N + 255) / 256, nch, 1);
  colsum_add(c, db, part, nch, N, N);
}

static void wg_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n) {
  wg_ctx *c = CTX(be);
  uint32_t nparts = 1024;
  size_t cap = cap_elems(c), npieces = n ? (n + cap - 1) / cap : 1;
  tz_slice part = scratch(be, F4(nparts * npieces));
  int pi = pipeline(c, "elementwise", "sum_sq_partial", "");
  for (size_t p = 0; p < npieces; p++) { /* 1024 partials per piece of x */
    size_t i = p * cap, k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k, w[9] = nparts;
    wg_arg a[] = {A(tz_f32(part, p * nparts), F4(nparts), "partials"), A(tz_f32(x, i), F4(k), "x")};
    run(c, "sum_sq", pi, w, 10, a, 2, nparts, 1, 1);
  }
  uint32_t w[24] = {0};
  w[8] = (uint32_t)(nparts * npieces);
  wg_arg b[] = {A(out, 4, "out"), A(part, F4(nparts * npieces), "partials")};
  run(c, "sum_sq", pipeline(c, "elementwise", "sum_final", ""), w, 10, b, 2, 1, 1, 1);
}

/* ---- the f16 weight mirror ---- */
#define F16_PREFIX "enable f16;"

/* Mirror elements [e0, e0 + n) as run_ex's extra binding 9: bound from e0's byte offset
 * rounded down to the storage offset alignment (element offset u5 = 0); *h0 = e0's index
 * inside the binding. Only the range an op touches is bound (a 124M model's mirror is
 * 248 MB, above 128 MiB bindings). */
static wg_arg mirror_range(wg_ctx *c, size_t e0, size_t n, uint32_t *h0) {
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  size_t base = (size_t)(e0 * 2 / align * align), end = ((e0 + n) * 2 + 3) & ~(size_t)3;
  if (end > c->mirror->size) end = c->mirror->size;
  *h0 = (uint32_t)(e0 - base / 2);
  tz_slice s = {c->mirror, base};
  return A(s, end - base, "params f16 mirror");
}

/* Re-cast the mirror from the fp32 parameters when they were written since. */
static void mirror_refresh(wg_ctx *c) {
  if (!c->mirror || !c->mirror_stale) return;
  size_t n = c->pbuf->bytes / 4;
  int pi = pipeline(c, "w16", "cast_w16", F16_PREFIX);
  for (size_t i = 0, cap = cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0}, h0;
    wg_arg h = mirror_range(c, i, k, &h0);
    w[8] = (uint32_t)k, w[9] = h0;
    tz_slice ps = {c->pbuf, F4(i)};
    wg_arg a[] = {A(ps, F4(k), "params")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    run_ex(c, "cast_w16", pi, w, 10, a, 1, gx, gy, 1, &h, -1);
  }
  c->mirror_stale = 0;
}

/* Does this weight slice lie in the mirrored parameter buffer? */
static int mirrored(wg_ctx *c, tz_slice s) { return c->mirror && s.buf && s.buf == c->pbuf; }

/* Register the model's flat parameter buffer: with f16 on, allocate its f16 mirror (made
 * from the fp32 values before its first use). */
static void wg_params_mirror(tz_backend *be, tz_buf *params) {
  wg_ctx *c = CTX(be);
  if (!c->f16 || !params) return;
  if (c->mirror) {
    tz_buf *mir = c->mirror;
    c->mirror = NULL;
    wg_free(be, mir);
  }
  c->pbuf = params;
  c->mirror = wg_alloc(be, params->bytes / 4 * 2, "params f16 mirror");
  if (!c->mirror) fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", params->bytes, 0);
  c->mirror_stale = 1;
}

/* ---- embedding ---- */
static void wg_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe,
                         int B, int T, int C, int V) {
  wg_ctx *c = CTX(be);
  size_t N = (size_t)B * T;
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = T, w[10] = C, w[11] = V, w[12] = tz_present(wpe);
  uint32_t gx, gy;
  grid1(N * C, &gx, &gy);
  if (mirrored(c, wte) && (!tz_present(wpe) || mirrored(c, wpe))) {
    /* the f16 tables in one binding of the mirror when they fit (else the fp32 path below) */
    size_t e_te = wte.off / 4, e_pe = tz_present(wpe) ? wpe.off / 4 : e_te;
    size_t lo = e_te < e_pe ? e_te : e_pe, hi = e_te + (size_t)V * C;
    if (tz_present(wpe) && e_pe + (size_t)T * C > hi) hi = e_pe + (size_t)T * C;
    if ((hi - lo) * 2 + 4 <= cap_bytes(c)) {
      mirror_refresh(c);
      uint32_t h0;
      wg_arg h = mirror_range(c, lo, hi - lo, &h0);
      w[14] = (uint32_t)(e_te - lo) + h0, w[15] = (uint32_t)(e_pe - lo) + h0;
      wg_arg a[] = {A(out, F4(N * C), "embed out"), A(tok, F4(N), "tokens")};
      run_ex(c, "embed_lookup", pipeline(c, "w16", "embed_lookup_w16", F16_PREFIX), w, 16, a, 2, gx, gy, 1, &h,
             -1);
      return;
    }
  }
  /* wte in pieces of rows [r0, r0 + nr) that fit one binding: each pass writes the rows whose
   * token falls in its piece (and the zero rows of invalid ids) */
  size_t nr = cap_elems(c) / (size_t)C;
  if (nr == 0) nr = 1;
  int pi = pipeline(c, "embed", "embed_lookup", "");
  for (size_t r0 = 0; r0 < (size_t)V; r0 += nr) {
    size_t k = (size_t)V - r0 < nr ? (size_t)V - r0 : nr;
    w[13] = (uint32_t)r0, w[14] = (uint32_t)k;
    wg_arg a[] = {A(out, F4(N * C), "embed out"), A(tok, F4(N), "tokens"),
                  A(tz_f32(wte, r0 * C), F4(k * C), "wte"), A(wpe, F4((size_t)T * C), "wpe")};
    run(c, "embed_lookup", pi, w, 15, a, 4, gx, gy, 1);
  }
}

/* Sorted indices per embed_dwte workgroup (the runs that start there are its): 8, or
 * TEZGAH_WEBGPU_EMBED_IPW=1..1024 (tuning: fewer, mostly idle workgroups against longer
 * chains of runs per workgroup). */
static uint32_t embed_ipw(void) {
  const char *e = getenv("TEZGAH_WEBGPU_EMBED_IPW");
  int v = e && *e ? atoi(e) : 8;
  return v >= 1 && v <= 1024 ? (uint32_t)v : 8;
}

/* Embedding backward (embed.wgsl; the CPU's tz_cpu_embed_bwd, bit for bit): dwpe[t] += Σ_b
 * dout[b·T + t] (embed_dwpe, thread per element), then dwte: a stable radix sort groups the
 * positions by token id (8-bit digits, ceil(bits / 8) passes of count / scan / scatter over
 * the integer scratch, bound at binding 9), and embed_dwte adds each id's dout rows in
 * position order into its dwte row, one dispatch per piece of rows that fits one binding.
 * No atomics: deterministic. dout, tokens and dwpe must each fit one binding. The tables are
 * argument 0, the only one embed.wgsl writes, so the read-only variant (ro_variant) reads
 * dout and the tokens through read-only bindings. */
static void wg_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout, tz_slice tok,
                         int B, int T, int C, int V) {
  wg_ctx *c = CTX(be);
  size_t N = (size_t)B * T;
  if (!N || C <= 0 || V <= 0) return;
  uint32_t w[24] = {0}, gx, gy;
  w[8] = (uint32_t)N, w[9] = T, w[10] = C, w[11] = V;
  if (tz_present(dwpe)) {
    w[12] = B;
    wg_arg a[] = {A(dwpe, F4((size_t)T * C), "dwpe"), A(dout, F4(N * C), "dout"), A(tok, F4(N), "tokens")};
    grid1((uint64_t)T * C, &gx, &gy);
    run(c, "embed_bwd_dwpe", pipeline(c, "embed", "embed_dwpe", ""), w, 13, a, 3, gx, gy, 1);
  }
  /* keys: ids, INV = 2^bits − 1 (≥ V) for invalid ones; scratch layout in embed.wgsl */
  int bits = 1;
  while (bits < 32 && (1ull << bits) <= (uint64_t)V) bits++;
  int npass = (bits + 7) / 8;
  size_t nblk = (N + 255) / 256, words = 5 * N + 256 * nblk;
  wg_arg s = A(scratch(be, F4(words)), F4(words), "embed sort");
  wg_arg at[] = {A(tok, F4(N), "tokens")};
  int pc = pipeline(c, "embed", "embed_sort_count", ""), ps = pipeline(c, "embed", "embed_sort_scan", ""),
      px = pipeline(c, "embed", "embed_sort_scatter", "");
  gridn(nblk, &gx, &gy);
  for (int pass = 0; pass < npass; pass++) { /* pass k reads set k % 2 (tokens first), writes the other */
    w[12] = (uint32_t)nblk, w[14] = 8 * pass, w[15] = pass == 0;
    w[16] = pass % 2 ? (uint32_t)(2 * N) : 0, w[17] = pass % 2 ? 0 : (uint32_t)(2 * N);
    w[18] = (uint32_t)((1ull << bits) - 1);
    run_ex(c, "embed_bwd_sort", pc, w, 19, at, 1, gx, gy, 1, &s, -1);
    run_ex(c, "embed_bwd_sort", ps, w, 19, at, 1, 1, 1, 1, &s, -1);
    run_ex(c, "embed_bwd_sort", px, w, 19, at, 1, gx, gy, 1, &s, -1);
  }
  /* dwte in pieces of rows [r0, r0 + nr) that fit one binding (u6 r0, u7 nr); workgroups of
   * ipw sorted indices × 256 columns */
  uint32_t nch = (uint32_t)((C + 255) / 256);
  uint32_t ipw = embed_ipw();
  w[12] = nch, w[16] = npass % 2 ? (uint32_t)(2 * N) : 0, w[17] = ipw;
  gridn((N + ipw - 1) / ipw * nch, &gx, &gy);
  int pd = pipeline(c, "embed", "embed_dwte", "");
  size_t nr = cap_elems(c) / (size_t)C;
  if (nr == 0) nr = 1;
  for (size_t r0 = 0; r0 < (size_t)V; r0 += nr) {
    size_t k = (size_t)V - r0 < nr ? (size_t)V - r0 : nr;
    w[14] = (uint32_t)r0, w[15] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(dwte, r0 * C), F4(k * C), "dwte"), A(dout, F4(N * C), "dout")};
    run_ex(c, "embed_bwd_dwte", pd, w, 18, a, 2, gx, gy, 1, &s, -1);
  }
}

/* ---- norms ---- */
static void wg_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w_,
                           int N, int C, float eps) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = C, w[10] = fbits(eps);
  size_t NC = (size_t)N * C;
  wg_arg a[] = {A(out, F4(NC), "out"), A(rstd, F4(N), "rstd"), A(inp, F4(NC), "inp"), A(w_, F4(C), "w")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  run(c, "rmsnorm_fwd", pipeline(c, "rmsnorm", "rmsnorm_fwd", ""), w, 12, a, 4, gx, gy, 1);
}

static void wg_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp,
                           tz_slice w_, tz_slice rstd, int N, int C) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  size_t NC = (size_t)N * C;
  w[8] = N, w[9] = C, w[11] = CHUNK;
  wg_arg a[] = {A(dinp, F4(NC), "dinp"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"), A(w_, F4(C), "w"),
                A(rstd, F4(N), "rstd")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  run(c, "rmsnorm_bwd", pipeline(c, "rmsnorm", "rmsnorm_bwd", ""), w, 12, a, 5, gx, gy, 1);
  int nch = (N + CHUNK - 1) / CHUNK;
  tz_slice part = scratch(be, F4((size_t)nch * C));
  wg_arg b[] = {A(part, F4((size_t)nch * C), "partials"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"),
                A(rstd, F4(N), "rstd")};
  run(c, "rmsnorm_bwd", pipeline(c, "rmsnorm", "rmsnorm_dw_partial", ""), w, 12, b, 4, (C + 255) / 256, nch, 1);
  colsum_add(c, dw, part, nch, C, C);
}

static void wg_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd, tz_slice inp,
                             tz_slice w_, tz_slice b_, int N, int C, float eps) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = C, w[10] = fbits(eps);
  size_t NC = (size_t)N * C;
  wg_arg a[] = {A(out, F4(NC), "out"), A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd"), A(inp, F4(NC), "inp"),
                A(w_, F4(C), "w"), A(b_, F4(C), "b")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  run(c, "layernorm_fwd", pipeline(c, "layernorm", "layernorm_fwd", ""), w, 12, a, 6, gx, gy, 1);
}

static void wg_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout,
                             tz_slice inp, tz_slice w_, tz_slice mean, tz_slice rstd, int N, int C) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  size_t NC = (size_t)N * C;
  w[8] = N, w[9] = C, w[11] = CHUNK;
  wg_arg a[] = {A(dinp, F4(NC), "dinp"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"), A(w_, F4(C), "w"),
                A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  run(c, "layernorm_bwd", pipeline(c, "layernorm", "layernorm_bwd", ""), w, 12, a, 6, gx, gy, 1);
  int nch = (N + CHUNK - 1) / CHUNK;
  tz_slice part = scratch(be, F4((size_t)nch * 2 * C));
  wg_arg b[] = {A(part, F4((size_t)nch * 2 * C), "partials"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"),
                A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd")};
  run(c, "layernorm_bwd", pipeline(c, "layernorm", "layernorm_dwdb_partial", ""), w, 12, b, 5,
      (C + 255) / 256, nch, 1);
  colsum_add(c, dw, part, nch, C, 2 * C);
  colsum_add(c, db, tz_f32(part, C), nch, C, 2 * C);
}

/* ---- matmul family ---- */
/* Would run_ex give these two arguments one binding (same buffer, overlapping aligned ranges)? */
static int shares_binding(wg_ctx *c, tz_slice x, size_t xb, tz_slice y, size_t yb) {
  if (!x.buf || !y.buf || x.buf != y.buf) return 0;
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  return x.off / align * align < ((y.off + yb + 3) & ~3ull) && y.off / align * align < ((x.off + xb + 3) & ~3ull);
}

/* Tile configuration of matmul_fast.wgsl: a TM x TN register tile per thread (workgroup tile
 * 16·TM x 16·TN), k-tile depth BK, NBUF workgroup tile buffers. */
typedef struct {
  int tm, tn, bk, nbuf;
} mm_cfg;

/* Workgroup memory of a configuration in bytes: NBUF buffers of a BK x 16·TM and a BK x 16·TN
 * fp32 tile, unpadded (transposed tiles are swizzled instead, matmul_fast.wgsl), the same for
 * every form. 8 x 16 / BK 16: 24 576 with one buffer (the default), 49 152 with two. */
static size_t mm_smem(mm_cfg f) { return (size_t)f.nbuf * f.bk * (16 * f.tm + 16 * f.tn) * 4; }

/* The configuration for one call. TEZGAH_WEBGPU_MM=TMxTN:BK:NBUF forces one (bench_webgpu's
 * sweeps), TEZGAH_WEBGPU_MM_RW the same for dispatches whose bindings are all read_write (an
 * operand in the output's buffer); what does not fit the adapter's workgroup memory drops to one
 * buffer, then BK 8. */
static mm_cfg mm_config(wg_ctx *c, int rw) {
  /* Read-only operands: 8 x 16, BK 16, ONE buffer (24 576 bytes). H200 (docs/PERF.md,
   * 2026-12-01): 8 x 16, BK 16 was the fastest of seven configurations for all three forms at
   * 8192³; in the GPT-2 124M training step with read-only operands (be->act_buffers) it ran
   * matmul 93.4, matmul_t 96.5, matmul_at 90.7 ms/step (13:07 UTC). Those figures were already
   * single-buffered: the tiles then had a 4-float pad per row, two buffers took 50 176 bytes,
   * above the H200 Dawn's 49 152, and the fit below took one. Unpadded (transposed tiles swizzled
   * instead, matmul_fast.wgsl) two buffers take exactly 49 152 and run there, but slower, in the
   * same call (16:21 UTC): step 393.7 / 391.6 ms against 381.4 ms with one buffer; matmul_t
   * 100.7 vs 98.0, matmul 97.8 vs 94.9, matmul_at 95.2 vs 89.3 ms/step (matmul_at's tiles are
   * not swizzled: double-buffering itself is the loss, its cause not measured), 8192³ 42.3 /
   * 43.3 / 44.2 vs 43.2 / 44.5 / 47.4 TFLOP/s. So one buffer, and the second barrier per k-tile,
   * on every adapter (none other measured); TEZGAH_WEBGPU_MM=8x16:16:2 forces two. */
  mm_cfg f = {8, 16, 16, 1};
  /* All-read_write dispatches (an operand in the output's buffer: the single activation arena of
   * TEZGAH_WEBGPU_ARENA=1, or a caller's own aliasing) take 8 x 8, BK 8: read_write bindings cost
   * this tile ~20 % in the training step (matmul 114.6, matmul_t 113.4 ms/step against 94.7 /
   * 96.5 read-only, 2026-12-01 13:07 UTC) and the 8 x 16 tile ~50 % (142 / 148 ms: 568 ms/step
   * against 505 with 8 x 8 / BK 8 and 604 with 8 x 8 / BK 16, 10:59 UTC). The cause is not
   * measured directly: read_write storage is presumably kept off NVIDIA's read-only
   * (non-coherent) load path, and the big tile's register pressure makes that worse. */
  if (rw) f = (mm_cfg){8, 8, 8, 2};
  /* CPU adapters (lavapipe) take 8 x 8, BK 8 for everything: a GPU's register tile means nothing
   * there, and llvmpipe compiles the 8 x 16 kernel very slowly (its coroutine split of the
   * barrier-separated k loop with 128 accumulators: test_matmul took 615 s from a cold shader
   * cache with 8 x 16 against 100 s with 8 x 8, this 2-core VM, 2026-12-01). The tests still
   * run 8 x 16 there on a few shapes through TEZGAH_WEBGPU_MM. */
  if (c->info.adapterType == WGPUAdapterType_CPU) f = (mm_cfg){8, 8, 8, 2};
  const char *e = getenv("TEZGAH_WEBGPU_MM");
  if (rw && getenv("TEZGAH_WEBGPU_MM_RW")) e = getenv("TEZGAH_WEBGPU_MM_RW");
  mm_cfg g;
  if (e && sscanf(e, "%dx%d:%d:%d", &g.tm, &g.tn, &g.bk, &g.nbuf) == 4 && (g.tm == 8 || g.tm == 16) &&
      (g.tn == 8 || g.tn == 16) && g.tm + g.tn <= 24 && (g.bk == 8 || g.bk == 16) && (g.nbuf == 1 || g.nbuf == 2))
    f = g;
  size_t lim = c->lim.maxComputeWorkgroupStorageSize;
  if (mm_smem(f) > lim) f.nbuf = 1;
  if (mm_smem(f) > lim) f.bk = 8, f.nbuf = 2;
  if (mm_smem(f) > lim) f.nbuf = 1;
  if (mm_smem(f) > lim) f.tm = f.tn = 8;
  return f;
}

/* matmul_t as the matmul form on a transposed copy of the weight (TEZGAH_WEBGPU_MM_TT=0: off)? */
static int mm_tt(void) {
  const char *e = getenv("TEZGAH_WEBGPU_MM_TT");
  return !(e && !strcmp(e, "0"));
}

/* Operand binding `bind` of matmul_fast.wgsl, array `name`, and its fetch function `fn` (see
 * there): vec4 loads (vec) or scalar ones, f32 or f16 elements (h), element offset `off`
 * (in 4-byte units, from the uniform block). */
static size_t mm_operand(char *o, size_t cap, int bind, const char *name, const char *fn, const char *off, int vec,
                         int h, int rw) {
  const char *et = h ? "f16" : "f32", *acc = rw ? "read_write" : "read";
  if (vec)
    return (size_t)snprintf(o, cap,
                            "@group(0) @binding(%d) var<storage, %s> %s: array<vec4<%s>>;\n"
                            "fn %s(e: u32, n: u32) -> vec4<f32> { return vec4<f32>(%s[%s / %du + e / 4u]); }\n",
                            bind, acc, name, et, fn, name, off, h ? 2 : 4);
  return (size_t)snprintf(o, cap,
                          "@group(0) @binding(%d) var<storage, %s> %s: array<%s>;\n"
                          "fn %s(e: u32, n: u32) -> vec4<f32> { let i = %s * %du + e; "
                          "var v = vec4<f32>(f32(%s[i]), 0.0, 0.0, 0.0); if (n > 1u) { v.y = f32(%s[i + 1u]); } "
                          "if (n > 2u) { v.z = f32(%s[i + 2u]); } if (n > 3u) { v.w = f32(%s[i + 3u]); } return v; }\n",
                          bind, acc, name, et, fn, off, h ? 2 : 1, name, name, name, name);
}

/* Split-K count for an output of `tiles` workgroup tiles: the S (1..16, at least 256 k's per
 * split) that minimises the waves per unit of work, ceil(tiles·S / slots) / S, with 1% per split
 * for the partial sums' traffic. slots: workgroups in flight on a 132-SM GPU (H200), one per SM
 * for the 8 x 16 register tile (its registers), two for 8 x 8. (A fixed ~2 workgroups per SM
 * target left the last wave 3/4 empty for GPT-2's weight gradients: dW fc 72 tiles → S 4.) */
static uint32_t mm_splits(uint32_t tiles, int K, mm_cfg f) {
  const double slots = f.tm * f.tn > 64 ? 132 : 264;
  if (tiles >= 4 * slots || K < 1024) return 1;
  uint32_t best = 1;
  double best_cost = 1e30;
  for (uint32_t S = 1; S <= 16 && (S == 1 || (uint32_t)K / S >= 256); S++) {
    double waves = ceil(tiles * (double)S / slots), cost = waves / S * (1 + 0.01 * S);
    if (cost < best_cost - 1e-9) best_cost = cost, best = S;
  }
  return best;
}

static void mm_one(tz_backend *be, const char *label, int variant, tz_slice out, tz_slice a_, tz_slice b_,
                   tz_slice bias, int M, int K, int N, int acc) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  c->pending_flop = 2.0 * M * N * K;
  char prefix[1280], direct[80];
  uint32_t w[24] = {0};
  w[8] = M, w[9] = K, w[10] = N, w[11] = acc, w[12] = tz_present(bias);
  /* variant 3: matmul_at whose b is swiglu(gu) of gu [K, 2N], computed on load (SWB) */
  int swb = variant == 3, kv = swb ? 2 : variant;
  wg_arg a[] = {A(out, F4((size_t)M * N), "out"), A(a_, F4((size_t)M * K), "a"),
                A(b_, F4((size_t)K * N * (swb ? 2 : 1)), swb ? "gu" : "b"), A(bias, F4(N), "bias")};
  /* fast path (matmul_fast.wgsl): any shape, four distinct bindings */
  int fast = !getenv("TEZGAH_WEBGPU_NO_FAST_MATMUL");
  /* matmul_t's weight in the mirrored parameter buffer: read its f16 copy (as vec4<f16> where the
   * f16 slice starts 8-byte aligned and K % 4 == 0, else f16 by f16; the element offset is in
   * 4-byte units, so the f16 slice must start 4-byte aligned) */
  int w16 = fast && variant == 0 && mirrored(c, b_) && b_.off % 8 == 0;
  if (w16) {
    tz_slice h = {c->mirror, b_.off / 2};
    a[2] = A(h, (size_t)K * N * 2, "b (f16 mirror)");
  }
  for (int pass = 0; pass < 2; pass++) {
    fast = !getenv("TEZGAH_WEBGPU_NO_FAST_MATMUL");
    for (int i = 0; i < 4 && fast; i++)
      for (int j = i + 1; j < 4 && fast; j++)
        if (shares_binding(c, a[i].s, a[i].bytes, a[j].s, a[j].bytes)) fast = 0;
    if (fast || !w16) break;
    w16 = 0; /* the fp32 weight through the general kernel */
    a[2] = A(b_, F4((size_t)K * N), "b");
  }
  if (w16) {
    double fl = c->pending_flop;
    c->pending_flop = 0;
    mirror_refresh(c);
    c->pending_flop = fl;
  }
  if (fast) {
    int rw = 0; /* an operand in the output's buffer: bind everything read_write */
    for (int i = 1; i < 4; i++)
      if (a[i].s.buf && a[i].s.buf == out.buf) rw = 1;
    mm_cfg f = mm_config(c, rw);
    uint32_t bk = (uint32_t)f.bk, BM = 16u * f.tm, BN = 16u * f.tn;
    /* vec4 fetches where the operand's contiguous dimension is a multiple of 4 and it starts on a
     * 16-byte boundary (the binding's own offset is a multiple of minStorageBufferOffsetAlignment) */
    int al = c->lim.minStorageBufferOffsetAlignment % 16 == 0;
    int va = al && (kv == 2 ? M : K) % 4 == 0 && a_.off % 16 == 0;
    int vb = al && (kv == 0 ? K : N) % 4 == 0 && b_.off % 16 == 0;
    size_t n = (size_t)snprintf(prefix, sizeof prefix,
                                "%sconst VARIANT: u32 = %du; const SWB: bool = %s; const BK: u32 = %uu; "
                                "const TM: u32 = %du; const TN: u32 = %du; const NBUF: u32 = %du;\n",
                                w16 ? F16_PREFIX "\n" : "", kv, swb ? "true" : "false", bk, f.tm, f.tn, f.nbuf);
    n += mm_operand(prefix + n, sizeof prefix - n, 2, "A", "ga", "p.oa.y", va, 0, rw);
    n += mm_operand(prefix + n, sizeof prefix - n, 3, "Bm", "gb", "p.oa.z", vb, w16, rw);
    if (rw) snprintf(prefix + n, sizeof prefix - n, "// rw\n");
    TZ_ASSERT(n + 8 < sizeof prefix);
    int pf = pipeline(c, "matmul_fast", "matmul_fast", prefix);
    uint32_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM, tiles = gx * gy, S = 1;
    uint32_t ks = ((uint32_t)K + bk - 1) / bk * bk;
    /* split-K when the output has too few tiles to fill the GPU (weight gradients: K = B*T) */
    if (!tz_present(bias)) {
      S = mm_splits(tiles, K, f);
      uint64_t cap = c->lim.maxStorageBufferBindingSize / 2;
      if (cap > (256ull << 20)) cap = 256ull << 20;
      while (S > 1 && (uint64_t)S * M * N * 4 > cap) S--;
      if (S > 1) {
        ks = ((uint32_t)K + S - 1) / S;
        ks = (ks + bk - 1) / bk * bk;
        S = ((uint32_t)K + ks - 1) / ks;
      }
    }
    w[13] = ks;
    if (S == 1) {
      run_ex(c, label, pf, w, 14, a, 4, gx, gy, 1, NULL, -1);
      c->pending_flop = 0;
      return;
    }
    size_t pn = (size_t)S * M * N;
    tz_slice part = scratch(be, F4(pn));
    w[11] = 0;
    a[0] = A(part, F4(pn), "split-K partials");
    run_ex(c, label, pf, w, 14, a, 4, gx, gy, S, NULL, -1);
    c->pending_flop = 0;
    /* out (+)= Σ_s part[s] */
    uint32_t r[24] = {0};
    r[8] = S, r[9] = (uint32_t)((size_t)M * N), r[10] = !acc, r[11] = (uint32_t)((size_t)M * N);
    wg_arg ra[] = {A(out, F4((size_t)M * N), "out"), A(part, F4(pn), "split-K partials")};
    run(c, label, pipeline(c, "elementwise", "colsum_add", ""), r, 12, ra, 2, (uint32_t)(((size_t)M * N + 255) / 256),
        1, 1);
    return;
  }
  snprintf(prefix, sizeof prefix, "const VARIANT: u32 = %du; const DIRECT: bool = false; const SWB: bool = %s;", kv,
           swb ? "true" : "false");
  snprintf(direct, sizeof direct, "const VARIANT: u32 = %du; const DIRECT: bool = true; const SWB: bool = %s;", kv,
           swb ? "true" : "false");
  run_ex(c, label, pipeline(c, "matmul", "matmul_tiled", prefix), w, 13, a, 4, (N + 127) / 128, (M + 127) / 128, 1,
         NULL, pipeline(c, "matmul", "matmul_tiled", direct));
  c->pending_flop = 0;
}

/* A transposed copy of matmul_t's weight b [N, K] as [K, N] in its own buffer (the forward then
 * runs the matmul form, mm_tt); NULL slice where it would not fit one binding. */
static tz_slice mm_transposed(tz_backend *be, const char *label, tz_slice b_, int N, int K) {
  wg_ctx *c = CTX(be);
  size_t n = (size_t)N * K;
  if (n > cap_elems(c)) return TZ_NONE;
  if (!c->wt || c->wt->size < F4(n)) {
    if (c->wt) wg_free(be, c->wt);
    c->wt = wg_alloc(be, F4(n) < (1 << 20) ? (1 << 20) : F4(n), "webgpu transposed weight");
    if (!c->wt) fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", F4(n), 0);
  }
  tz_slice t = {c->wt, 0};
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = (uint32_t)K;
  wg_arg a[] = {A(t, F4(n), "b transposed"), A(b_, F4(n), "b")};
  run(c, label, pipeline(c, "elementwise", "transpose", ""), w, 10, a, 2, (uint32_t)(K + 31) / 32,
      (uint32_t)(N + 31) / 32, 1);
  return t;
}
/* Round a piece count down to a multiple of 128 (whole tiles) or at least 4 (vec4 path). */
static size_t piece_round(size_t n) {
  if (n >= 128) return n / 128 * 128;
  return n >= 4 ? n / 4 * 4 : n;
}

/* The matmul family with operands above one binding (maxStorageBufferBindingSize), split into
 * pieces that fit: rows of M (out and a rows are contiguous in matmul_t / matmul), and the
 * weight in pieces of rows: matmul_t over N (GPT-2's lm_head, wte [50304, 768] = 154 MB: the
 * output's column piece goes through a staging buffer and copy_rows), matmul over K (a's
 * column piece staged, partial products accumulated into out), matmul_at over K (rows of a and
 * b, accumulated) and then M (a's column piece staged; out's rows are contiguous). Anything else too large (or a piece of one row
 * still too large) reaches run_ex's binding-size error. */
static void mm(tz_backend *be, const char *label, int variant, tz_slice out, tz_slice a_, tz_slice b_,
               tz_slice bias, int M, int K, int N, int acc) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  size_t cap = cap_elems(c), m = (size_t)M, k = (size_t)K, n = (size_t)N;
  size_t bs = variant == 3 ? 2 * n : n; /* b's row stride (variant 3: gu [K, 2N]) */
  /* matmul_t on an fp32 weight: transpose it once, then the matmul form (its tile loads
   * transpose only a; H200 8192³: 44.8 vs 43.0 TFLOP/s, docs/PERF.md). Not where N % 4 != 0 (the
   * transposed rows would not take vec4 loads: lm_head at V = 50257 ran 28 TFLOP/s that way) nor
   * for the f16 mirror's reads, which stay matmul_t. */
  if (variant == 0 && K > 0 && N % 4 == 0 && mm_tt() && !(mirrored(c, b_) && b_.off % 8 == 0) &&
      !getenv("TEZGAH_WEBGPU_NO_FAST_MATMUL")) {
    tz_slice bt = mm_transposed(be, label, b_, N, K);
    if (bt.buf) {
      mm(be, label, 1, out, a_, bt, bias, M, K, N, acc);
      return;
    }
  }
  if (variant < 2 && (m * k > cap || m * n > cap) && M > 1) { /* rows of out and a */
    size_t mc = piece_round(cap / (k > n ? k : n));
    if (mc == 0) mc = 1;
    if (mc < m) {
      for (size_t m0 = 0; m0 < m; m0 += mc) {
        size_t r = m - m0 < mc ? m - m0 : mc;
        mm(be, label, variant, tz_f32(out, m0 * n), tz_f32(a_, m0 * k), b_, bias, (int)r, K, N, acc);
      }
      return;
    }
  }
  if (variant == 0 && n * k > cap && N > 1) { /* weight rows = output columns, staged */
    size_t nc = piece_round(cap / (k > m ? k : m));
    if (nc == 0) nc = 1;
    if (nc < n) {
      tz_slice st = stage(be, F4(m * nc));
      for (size_t n0 = 0; n0 < n; n0 += nc) {
        size_t r = n - n0 < nc ? n - n0 : nc;
        mm_one(be, label, 0, st, a_, tz_f32(b_, n0 * k), tz_present(bias) ? tz_f32(bias, n0) : TZ_NONE, M, K,
               (int)r, 0);
        copy_rows_ex(c, tz_f32(out, n0), n, st, r, M, (int)r, acc);
      }
      return;
    }
  }
  if (variant == 1 && k * n > cap && K > 1) { /* weight rows = a's columns, staged */
    size_t kc = piece_round(cap / (n > m ? n : m));
    if (kc == 0) kc = 1;
    if (kc < k) {
      tz_slice st = stage(be, F4(m * kc));
      for (size_t k0 = 0; k0 < k; k0 += kc) {
        size_t r = k - k0 < kc ? k - k0 : kc;
        copy_rows_ex(c, st, r, tz_f32(a_, k0), k, M, (int)r, 0);
        mm_one(be, label, 1, out, st, tz_f32(b_, k0 * n), TZ_NONE, M, (int)r, N, acc || k0 > 0);
      }
      return;
    }
  }
  if (variant >= 2 && (k * m > cap || k * bs > cap) && K > 1) { /* rows of a and b: partial sums */
    size_t kc = cap / (m > bs ? m : bs);
    if (kc == 0) kc = 1;
    if (kc < k) {
      for (size_t k0 = 0; k0 < k; k0 += kc) {
        size_t r = k - k0 < kc ? k - k0 : kc;
        mm(be, label, variant, out, tz_f32(a_, k0 * m), tz_f32(b_, k0 * bs), TZ_NONE, M, (int)r, N, acc || k0 > 0);
      }
      return;
    }
  }
  if (variant >= 2 && m * n > cap && M > 1) { /* out rows = a's columns, staged */
    size_t mc = piece_round(cap / (n > k ? n : k));
    if (mc == 0) mc = 1;
    if (mc < m) {
      tz_slice st = stage(be, F4(k * mc));
      for (size_t m0 = 0; m0 < m; m0 += mc) {
        size_t r = m - m0 < mc ? m - m0 : mc;
        copy_rows_ex(c, st, r, tz_f32(a_, m0), m, K, (int)r, 0);
        mm_one(be, label, variant, tz_f32(out, m0 * n), st, b_, TZ_NONE, (int)r, K, N, acc);
      }
      return;
    }
  }
  mm_one(be, label, variant, out, a_, b_, bias, M, K, N, acc);
}

static void wg_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M, int K,
                        int N, int acc) {
  mm(be, "matmul_t", 0, out, a, b, bias, M, K, N, acc);
}
static void wg_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  mm(be, "matmul", 1, out, a, b, TZ_NONE, M, K, N, acc);
}
static void wg_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  mm(be, "matmul_at", 2, out, a, b, TZ_NONE, M, K, N, acc);
}
/* out[M,N] (+)= a[K,M]ᵀ · (silu(gate) ⊙ up)[K,N], gu [K, 2N] = gate | up: the down
 * projection's weight gradient without swiglu_fwd's output (matmul_at_swiglu_a, backend.h) */
static void wg_matmul_at_swiglu_a(tz_backend *be, tz_slice out, tz_slice a, tz_slice gu, int M, int K, int N,
                                  int acc) {
  mm(be, "matmul_at_swiglu", 3, out, a, gu, TZ_NONE, M, K, N, acc);
}

/* ---- rope ---- */
static void wg_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head, int head_dim,
                    int pos0, float theta, int dir) {
  wg_ctx *c = CTX(be);
  size_t N = (size_t)B * T, stride = (size_t)(n_head + 2 * n_kv_head) * head_dim;
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = T, w[10] = n_head + n_kv_head, w[11] = head_dim, w[12] = (uint32_t)stride,
  w[13] = pos0, w[14] = fbits(theta), w[15] = fbits(dir < 0 ? -1.0f : 1.0f);
  wg_arg a[] = {A(qkv, F4(N * stride), "qkv")};
  uint32_t gx, gy;
  grid1(N * (n_head + n_kv_head) * (head_dim / 2), &gx, &gy);
  run(c, "rope", pipeline(c, "rope", "rope", ""), w, 16, a, 1, gx, gy, 1);
}

/* ---- attention ---- */
static void hd_prefix(char *p, size_t cap, int hd) { snprintf(p, cap, "const HD: u32 = %du;", hd); }

/* Flash kernels (attention_fa.wgsl) for the training form: Tq == Tk, q_pos0 == 0, head_dim
 * 32, 64 or 128 (GPT-2, most llamas); KV-cache decoding and other head sizes run
 * attention.wgsl. TEZGAH_WEBGPU_ATTN=fallback forces attention.wgsl;
 * TEZGAH_WEBGPU_ATTN=fast (tests) makes a shape the flash kernels cannot take an error. */
static int attn_fast(wg_ctx *c, const char *op, int Tq, int Tk, int q_pos0, int head_dim) {
  const char *e = getenv("TEZGAH_WEBGPU_ATTN");
  if (e && !strcmp(e, "fallback")) return 0;
  int ok = Tq == Tk && q_pos0 == 0 && (head_dim == 32 || head_dim == 64 || head_dim == 128);
  if (!ok && e && !strcmp(e, "fast")) {
    char m[160];
    snprintf(m, sizeof m, ": TEZGAH_WEBGPU_ATTN=fast but Tq %d, Tk %d, q_pos0 %d, head_dim %d is not a flash shape",
             Tq, Tk, q_pos0, head_dim);
    fail(c, "%s%s", op, m, 0, 0);
  }
  return ok;
}
/* A variant of the flash kernels (attention_fa.wgsl): RG row groups of 4 per thread (4 × 4 or
 * 8 × 4 score blocks), NT threads, PF register prefetch of the staged chunks, FD D = rowsum(dout
 * ∘ out) inside fa_dq (no separate pass). Tiles: TX = 8 threads across the columns for head_dim
 * 32, else 16; R = 4·RG·NT/TX rows, C = 4·TX columns. ord: the dispatch order (a uniform, not
 * part of the pipeline; attn_grid). */
typedef struct {
  int hd, tx, rg, nt, pf, fd, ord, fq;
} attn_cfg;

/* the three flash kernels; each may run its own (RG, NT) and grid order */
enum { ATTN_FWD, ATTN_DQ, ATTN_DKDV };

static int attn_rows(attn_cfg f) { return 4 * f.rg * (f.nt / f.tx); }
/* workgroup memory of a variant (Xs and Ps of attention_fa.wgsl), bytes: 46.6 KB for the
 * 128-row tiles of RG 2 / NT 256 (the H200 offers 48 KB, lavapipe 32 KB), 26.1 KB for RG 1 /
 * NT 256, 15.4-17.4 KB for RG 1 / NT 128 */
static size_t attn_smem(attn_cfg f) {
  size_t R = (size_t)attn_rows(f), C = 4 * (size_t)f.tx, dk = 16, hv = (size_t)f.hd / 4;
  size_t xs = dk * (R / 4 + 1 + C / 4 + 1), ps = C * (R / 4 + 1);
  if (dk * hv > xs) xs = dk * hv;
  if ((size_t)f.nt > xs) xs = (size_t)f.nt;
  return 16 * (xs + ps);
}
static int env_int(const char *name, int dflt) {
  const char *e = getenv(name);
  return e && *e ? atoi(e) : dflt;
}
static int attn_cfg_ok(wg_ctx *c, attn_cfg f) {
  return (f.rg == 1 || f.rg == 2) && (f.nt == 128 || f.nt == 256) &&
         (uint32_t)f.nt <= c->lim.maxComputeInvocationsPerWorkgroup && attn_rows(f) <= f.nt && f.hd <= f.nt &&
         attn_smem(f) <= c->lim.maxComputeWorkgroupStorageSize;
}
/* Default: RG 2, NT 256 (8 × 4 blocks, 128-row tiles; 46.6 KB of workgroup memory for head_dim
 * 64 / 128), PF 1, FD 1; where the adapter's workgroup memory is smaller (lavapipe: 32 KB) or
 * the head_dim is 32 (256-row tiles, 52 KB), RG 1, NT 128 (4 × 4 blocks, 32-row tiles); the
 * block index in grid z (ord 1). From the GPT-2 124M training step on the H200 (TEZGAH_PROFILE=1
 * bench_webgpu train 16 1024 4, one device call, 2026-12-01 19:21 UTC; docs/PERF.md), ms/step of
 * fa_fwd / fa_dq / fa_dkdv: RG 2 / NT 256 11.4 / 22.7 / 27.2 (former order 12.2 / 23.7 / 27.3);
 * RG 1 / NT 128 12.7 / 22.9 / 27.9 (former order 12.9 / 22.1 / 27.1); RG 1 / NT 256 15.0 / 23.1
 * / 34.8; RG 2 / NT 128 15.1 / 33.9 / 38.2: RG 2 / NT 256 is each kernel's fastest in the
 * default order. (PF 0 / FD 0, the former kernels, at 13:42 UTC with one activation arena:
 * 23.7 + 79.7 ms/step of fwd + bwd against RG 1 / NT 256's 22.9 + 74.7.)
 * Tuning: TEZGAH_WEBGPU_ATTN_RG=1|2, TEZGAH_WEBGPU_ATTN_NT=128|256 (all three kernels; given
 * either, the other defaults to RG 1 / NT 256), then per kernel TEZGAH_WEBGPU_ATTN_FWD_RG / _NT,
 * TEZGAH_WEBGPU_ATTN_DQ_RG / _NT, TEZGAH_WEBGPU_ATTN_DKDV_RG / _NT (each replaces only its own
 * value), TEZGAH_WEBGPU_ATTN_PF=0|1, TEZGAH_WEBGPU_ATTN_FD=0|1 and TEZGAH_WEBGPU_ATTN_ORDER=0|1
 * (attn_grid; per kernel TEZGAH_WEBGPU_ATTN_FWD_ORDER, _DQ_ORDER, _DKDV_ORDER). A variant the
 * adapter cannot offer (workgroup memory, threads) runs RG 1, NT 128; rg 0 if neither fits (the
 * general kernels run). The backward's form (fused dq or fa_dq + fa_dkdv; FD applies to the
 * latter only) is wg_attention_bwd's (attn_fq_chunk). */
static attn_cfg attn_config(wg_ctx *c, int hd, int kernel) {
  static const char *const kname[3] = {"FWD", "DQ", "DKDV"};
  attn_cfg f = {hd, hd == 32 ? 8 : 16, 2, 256, 1, 1, 1, 0};
  if (getenv("TEZGAH_WEBGPU_ATTN_RG") || getenv("TEZGAH_WEBGPU_ATTN_NT")) {
    f.rg = env_int("TEZGAH_WEBGPU_ATTN_RG", 1);
    f.nt = env_int("TEZGAH_WEBGPU_ATTN_NT", 256);
  }
  char name[48];
  snprintf(name, sizeof name, "TEZGAH_WEBGPU_ATTN_%s_RG", kname[kernel]);
  f.rg = env_int(name, f.rg);
  snprintf(name, sizeof name, "TEZGAH_WEBGPU_ATTN_%s_NT", kname[kernel]);
  f.nt = env_int(name, f.nt);
  /* register prefetch hides a GPU's memory latency; on a CPU adapter (lavapipe) it only makes
   * llvmpipe's compile slower (the prefetched values live across the barriers), so off there */
  f.pf = env_int("TEZGAH_WEBGPU_ATTN_PF", c->info.adapterType != WGPUAdapterType_CPU) != 0;
  f.fd = env_int("TEZGAH_WEBGPU_ATTN_FD", 1) != 0;
  snprintf(name, sizeof name, "TEZGAH_WEBGPU_ATTN_%s_ORDER", kname[kernel]);
  f.ord = env_int(name, env_int("TEZGAH_WEBGPU_ATTN_ORDER", 1)) != 0;
  if (!attn_cfg_ok(c, f)) f.rg = 1, f.nt = 128;
  if (!attn_cfg_ok(c, f)) f.rg = 0;
  return f;
}
/* The grid of a flash kernel over `heads` heads (query heads; kv heads for fa_dkdv) and B
 * sequences, in blocks of R rows. The kernels take the most expensive causal blocks first
 * (the last query blocks in fa_fwd / fa_dq, the first key blocks in fa_dkdv); NVIDIA launches
 * workgroups x fastest, so ord 1 (the default) puts the block index in z, the slowest
 * dimension — grid (heads, B, blocks): every head's heaviest block goes first, the light ones
 * fill the last waves — where ord 0 (TEZGAH_WEBGPU_ATTN_ORDER=0, the former grid (blocks,
 * heads, B)) orders the blocks only inside each (head, sequence), so heavy blocks reach the
 * end of the dispatch. The kernels read the order from uniform u10 (words[18]). */
static void attn_grid(attn_cfg f, int T, int heads, int B, uint32_t *words, uint32_t g[3]) {
  uint32_t nb = (uint32_t)((T + attn_rows(f) - 1) / attn_rows(f));
  words[18] = (uint32_t)f.ord;
  if (f.ord) g[0] = (uint32_t)heads, g[1] = (uint32_t)B, g[2] = nb;
  else g[0] = nb, g[1] = (uint32_t)heads, g[2] = (uint32_t)B;
}
/* Executed FLOP of a flash kernel for the profile's rate column: `units` matmuls of the causal
 * half, B·n_head·T²·head_dim each (fa_fwd 2: S, P·V; fa_dq 3: S, dP, dS·K; fa_dkdv 4: S, dP,
 * Pᵀ·dout, dSᵀ·Q) */
static double attn_flop(int units, int B, int n_head, int T, int hd) {
  return (double)units * B * n_head * (double)T * T * hd;
}

/* The flash kernels' prefix for one dispatch: the variant's constants (HD, TX, RG, NT, PF, FD,
 * FQ and SGW, the subgroup width the lane reductions shuffle over: the adapter's fixed subgroup
 * size, 1 where it varies or subgroups are off), then bindings 2..8 and the argument → binding
 * table SL and the store functions (attention_fa.wgsl's header): the arguments in `wmask`
 * (bit i: argument i) are written. Inputs bind read-only (the driver may then use its
 * read-only load path; the big matmul tile ran 40-50 % slower with read_write bindings on the
 * H200, while for these kernels the comparison is still open, docs/PERF.md) unless one shares
 * a buffer with an output (the model's single activation arena) or TEZGAH_WEBGPU_ATTN_RO=0. */
static void attn_prefix(wg_ctx *c, char *p, size_t cap, attn_cfg f, const wg_arg *a, int nargs, unsigned wmask) {
  unsigned sgw = c->subgroups && c->info.subgroupMinSize == c->info.subgroupMaxSize ? c->info.subgroupMinSize : 1;
  size_t n = (size_t)snprintf(p, cap,
                              "const HD: u32 = %du; const TX: u32 = %du; const RG: u32 = %du; const NT: u32 = %du; "
                              "const PF: u32 = %du; const FD: u32 = %du; const FQ: u32 = %du; "
                              "const SGW: u32 = %uu;\n",
                              f.hd, f.tx, f.rg, f.nt, f.pf, f.fd, f.fq, sgw ? sgw : 1);
  tz_buf *sb[MAX_ARGS];
  uint64_t lo[MAX_ARGS], hi[MAX_ARGS];
  int sl[MAX_ARGS], wr[MAX_ARGS] = {0};
  int ns = bind_slots(c, a, nargs, sl, sb, lo, hi);
  for (int i = 0; i < nargs; i++)
    if ((wmask >> i & 1) && sl[i] >= 0) wr[sl[i]] = 1;
  TZ_ASSERT(sl[0] == 0);
  int ro = env_int("TEZGAH_WEBGPU_ATTN_RO", 1) != 0;
  for (int k = 0; k < ns; k++)
    for (int j = 0; j < ns; j++)
      if (!wr[k] && wr[j] && sb[k] == sb[j]) ro = 0;
  for (int k = 1; k < MAX_ARGS; k++)
    n += (size_t)snprintf(p + n, cap - n, "@group(0) @binding(%d) var<storage, %s> B%d: array<vec4<f32>>;\n", k + 1,
                          ro && !(k < ns && wr[k]) ? "read" : "read_write", k);
  n += (size_t)snprintf(p + n, cap - n, "const SL = array<u32, 8>(");
  for (int i = 0; i < MAX_ARGS; i++)
    n += (size_t)snprintf(p + n, cap - n, "%du%s", i < nargs && sl[i] > 0 ? sl[i] : 0, i < 7 ? ", " : ");\n");
  const char *fn[2] = {"fn stv(a: u32, i4: u32, v: vec4<f32>) { let j = aoff(a) / 4u + i4; switch a { ",
                       "fn sts(a: u32, i: u32, v: f32) { let j = aoff(a) + i; switch a { "};
  for (int w = 0; w < 2; w++) {
    n += (size_t)snprintf(p + n, cap - n, "%s", fn[w]);
    for (int i = 0; i < nargs; i++)
      if ((wmask >> i & 1) && sl[i] >= 0)
        n += (size_t)snprintf(p + n, cap - n, w ? "case %du: { B%d[j / 4u][j %% 4u] = v; } " : "case %du: { B%d[j] = v; } ",
                              i, sl[i]);
    n += (size_t)snprintf(p + n, cap - n, "default: {} } }\n");
  }
  TZ_ASSERT(n + 1 < cap);
}

/* The flash kernels read and write the arguments in `vmask` (bit i: argument i) as vec4s: they
 * need those to start on 16-byte boundaries and the row strides to be multiples of 4 floats;
 * otherwise the general kernels run (or, under TEZGAH_WEBGPU_ATTN=fast, an error). When they
 * can, every argument's extent is rounded up to a 16-byte boundary (buffers are allocated in
 * 16-byte units) so that the last vec4 of each binding is whole. */
static int attn_vec4(wg_ctx *c, const char *op, wg_arg *a, int nargs, unsigned vmask, int q_stride, int kv_stride) {
  int ok = q_stride % 4 == 0 && kv_stride % 4 == 0 && c->lim.minStorageBufferOffsetAlignment % 16 == 0;
  for (int i = 0; i < nargs && ok; i++)
    if ((vmask >> i & 1) && a[i].s.buf && a[i].s.off % 16) ok = 0;
  if (!ok) {
    const char *f = getenv("TEZGAH_WEBGPU_ATTN");
    if (f && !strcmp(f, "fast")) fail(c, "%s%s", op, ": TEZGAH_WEBGPU_ATTN=fast but a tensor is not 16-byte aligned", 0, 0);
    return 0;
  }
  for (int i = 0; i < nargs; i++)
    if (a[i].s.buf) a[i].bytes = (a[i].s.off + a[i].bytes + 15) / 16 * 16 - a[i].s.off;
  return 1;
}

static void wg_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v,
                             int B, int Tq, int Tk, int q_pos0, int n_head, int n_kv_head, int head_dim,
                             int q_stride, int kv_stride) {
  wg_ctx *c = CTX(be);
  char pre[48];
  hd_prefix(pre, sizeof pre, head_dim);
  uint32_t w[24] = {0};
  w[8] = Tq, w[9] = Tk, w[10] = q_pos0, w[11] = n_head, w[12] = n_kv_head, w[13] = q_stride,
  w[14] = kv_stride, w[15] = tz_present(lse), w[16] = fbits(1.0f / sqrtf((float)head_dim));
  size_t C = (size_t)n_head * head_dim;
  wg_arg a[] = {A(out, F4((size_t)B * Tq * C), "att out"), A(lse, F4((size_t)B * n_head * Tq), "lse"),
                A(q, F4(((size_t)B * Tq - 1) * q_stride + C), "q"),
                A(k, F4(((size_t)B * Tk - 1) * kv_stride + (size_t)n_kv_head * head_dim), "k"),
                A(v, F4(((size_t)B * Tk - 1) * kv_stride + (size_t)n_kv_head * head_dim), "v")};
  /* vec4 access: out, q, k, v; lse is read as scalars */
  attn_cfg f = attn_config(c, head_dim, ATTN_FWD);
  if (attn_fast(c, "attention_fwd", Tq, Tk, q_pos0, head_dim) && f.rg &&
      attn_vec4(c, "attention_fwd", a, 5, 0x1d, q_stride, kv_stride)) {
    char fp[1280];
    uint32_t g[3];
    attn_prefix(c, fp, sizeof fp, f, a, 5, 0x3);
    attn_grid(f, Tq, n_head, B, w, g);
    c->pending_flop = attn_flop(2, B, n_head, Tq, head_dim);
    run(c, "attention_fwd", pipeline(c, "attention_fa", "fa_fwd", fp), w, 19, a, 5, g[0], g[1], g[2]);
    c->pending_flop = 0;
  } else
    run(c, "attention_fwd", pipeline(c, "attention", "attn_fwd", pre), w, 17, a, 5, (Tq + 63) / 64, n_head, B);
}

/* The fused-dq backward (the default; TEZGAH_WEBGPU_ATTN_FUSED_DQ=0 runs fa_dq and fa_dkdv
 * instead; attention_fa.wgsl, FQ): fa_d computes D, fa_dkdv also stores each (key block, query
 * tile)'s partial dq = dS·K to the scratch after D, and fa_dq_sum adds them per query (no
 * fa_dq: five causal matmul units instead of seven). GPT-2 124M training step on the H200
 * (B 16, T 1024, one device call, docs/PERF.md): attention backward 35.6 ms/step against 49.6,
 * step 349.7 ms against 363.4. The partial sums take n_head·rows·head_dim floats per
 * sequence, rows = Σ over the key blocks kb of T − kb·R (causal packing; GPT-2 124M at T 1024,
 * R 128: 4608 rows, 14.2 MB per sequence, 226 MB for B 16). Sequences run in chunks whose
 * parts fit the bound TEZGAH_WEBGPU_ATTN_DQ_KB (default 262144 KiB = 256 MiB), one binding
 * (maxStorageBufferBindingSize, with D) and 4/5 of maxBufferSize (scratch() allocates 5/4 of
 * a request). Returns the sequences per chunk, 0 if not even one fits (the two-kernel path
 * runs); *rows: the part rows per (sequence, head). */
static int attn_fq_chunk(wg_ctx *c, attn_cfg fk, int B, int T, int n_head, size_t dbytes, size_t *rows) {
  size_t R = (size_t)attn_rows(fk), nkb = ((size_t)T + R - 1) / R;
  *rows = nkb * (size_t)T - R * (nkb * (nkb - 1) / 2);
  size_t per = (size_t)n_head * *rows * (size_t)fk.hd * 4;
  size_t cap = (size_t)env_int("TEZGAH_WEBGPU_ATTN_DQ_KB", 256 * 1024) * 1024, lim = cap_bytes(c);
  if ((size_t)(c->lim.maxBufferSize / 5 * 4) < lim) lim = (size_t)(c->lim.maxBufferSize / 5 * 4);
  lim = lim > dbytes ? lim - dbytes : 0;
  if (cap > lim) cap = lim;
  size_t n = cap / per;
  return n < (size_t)B ? (int)n : B;
}

static void wg_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q,
                             tz_slice k, tz_slice v, tz_slice out, tz_slice lse, int B, int T, int n_head,
                             int n_kv_head, int head_dim, int q_stride, int kv_stride) {
  wg_ctx *c = CTX(be);
  char pre[48];
  hd_prefix(pre, sizeof pre, head_dim);
  size_t C = (size_t)n_head * head_dim, rows_total = (size_t)B * n_head * T;
  size_t qext = F4(((size_t)B * T - 1) * q_stride + C), oext = F4((size_t)B * T * C);
  size_t kext = F4(((size_t)B * T - 1) * kv_stride + (size_t)n_kv_head * head_dim);
  attn_cfg fq = attn_config(c, head_dim, ATTN_DQ), fk = attn_config(c, head_dim, ATTN_DKDV);
  int fa = attn_fast(c, "attention_bwd", T, T, 0, head_dim) && fq.rg && fk.rg;
  /* fused dq (attn_fq_chunk): D, then per chunk of bc sequences fa_dkdv (FQ) and fa_dq_sum */
  size_t dbytes = (F4(rows_total) + 15) / 16 * 16, prows = 0;
  int fused = fa && env_int("TEZGAH_WEBGPU_ATTN_FUSED_DQ", 1);
  int bc = fused ? attn_fq_chunk(c, fk, B, T, n_head, dbytes, &prows) : 0;
  if (fused && !bc && getenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ")) {
    const char *e = getenv("TEZGAH_WEBGPU_ATTN");
    if (e && !strcmp(e, "fast")) /* the tests: the fused path runs where they ask for it explicitly */
      fail(c, "%s%s", "attention_bwd",
           ": TEZGAH_WEBGPU_ATTN=fast and TEZGAH_WEBGPU_ATTN_FUSED_DQ=1 but one sequence's dq partial sums exceed "
           "TEZGAH_WEBGPU_ATTN_DQ_KB or the adapter's binding / buffer limits",
           0, 0);
  }
  size_t pbytes = (size_t)bc * n_head * prows * head_dim * 4;
  tz_slice D = scratch(be, dbytes + pbytes);
  uint32_t w[24] = {0};
  w[8] = T, w[9] = T, w[10] = 0, w[11] = n_head, w[12] = n_kv_head, w[13] = q_stride, w[14] = kv_stride,
  w[15] = 1, w[16] = fbits(1.0f / sqrtf((float)head_dim)), w[17] = B;
  /* flash: fa_dq's arguments (D written there under FD, else read; out read under FD only) and
   * fa_dkdv's; the ones in the masks are read or written as vec4s */
  wg_arg f1[] = {A(dq, qext, "dq"), A(D, F4(rows_total), "D"), A(q, qext, "q"), A(k, kext, "k"), A(v, kext, "v"),
                 A(dout, oext, "dout"), A(lse, F4(rows_total), "lse"), A(out, oext, "out")};
  wg_arg a2[] = {A(dk, kext, "dk"), A(dv, kext, "dv"), A(q, qext, "q"), A(k, kext, "k"), A(v, kext, "v"),
                 A(dout, oext, "dout"), A(lse, F4(rows_total), "lse"), A(D, F4(rows_total), "D")};
  fa = fa && attn_vec4(c, "attention_bwd", f1, 8, 0xbd, q_stride, kv_stride) &&
       attn_vec4(c, "attention_bwd", a2, 8, 0x3f, q_stride, kv_stride);
  /* profile labels: the D pass, the dq kernel (fused: the sum of the parts) and the dk/dv
   * kernel apart (flash or general) */
  if (fa && bc) {
    char fp[1280], fs[1280];
    uint32_t g[3], gx, gy;
    wg_arg ad[] = {A(D, F4(rows_total), "D"), f1[5], f1[7]}; /* dout, out: vec4 extents */
    attn_prefix(c, fp, sizeof fp, fk, ad, 3, 0x1);
    grid1(rows_total, &gx, &gy);
    run(c, "attention_bwd_d", pipeline(c, "attention_fa", "fa_d", fp), w, 18, ad, 3, gx, gy, 1);
    fk.fq = 1;
    a2[7] = A(D, dbytes + pbytes, "D, dq parts");
    wg_arg as[] = {f1[0], A(D, dbytes + pbytes, "D, dq parts")};
    attn_prefix(c, fp, sizeof fp, fk, a2, 8, 0x83);
    attn_prefix(c, fs, sizeof fs, fk, as, 2, 0x1);
    w[19] = (uint32_t)(dbytes / 4), w[20] = (uint32_t)prows;
    for (int b0 = 0; b0 < B; b0 += bc) {
      int nb = B - b0 < bc ? B - b0 : bc;
      w[17] = (uint32_t)nb, w[21] = (uint32_t)b0;
      attn_grid(fk, T, n_kv_head, nb, w, g);
      c->pending_flop = attn_flop(5, nb, n_head, T, head_dim);
      run(c, "attention_bwd_dkdv", pipeline(c, "attention_fa", "fa_dkdv", fp), w, 22, a2, 8, g[0], g[1], g[2]);
      c->pending_flop = 0;
      grid1((size_t)nb * n_head * T * (head_dim / 4), &gx, &gy);
      run(c, "attention_bwd_dq", pipeline(c, "attention_fa", "fa_dq_sum", fs), w, 22, as, 2, gx, gy, 1);
    }
    return;
  }
  if (!fa || !fq.fd) { /* D = rowsum(dout ∘ out) in its own pass */
    wg_arg a0[] = {A(D, F4(rows_total), "D"), A(dout, oext, "dout"), A(out, oext, "out")};
    uint32_t gx, gy;
    grid1(rows_total, &gx, &gy);
    run(c, "attention_bwd_d", pipeline(c, "attention", "attn_bwd_d", pre), w, 18, a0, 3, gx, gy, 1);
  }
  if (fa) {
    char fp[1280];
    uint32_t g[3];
    if (!fq.fd) f1[7] = A(TZ_NONE, 0, "out");
    attn_prefix(c, fp, sizeof fp, fq, f1, 8, fq.fd ? 0x3 : 0x1);
    attn_grid(fq, T, n_head, B, w, g);
    c->pending_flop = attn_flop(3, B, n_head, T, head_dim);
    run(c, "attention_bwd_dq", pipeline(c, "attention_fa", "fa_dq", fp), w, 19, f1, 8, g[0], g[1], g[2]);
    attn_prefix(c, fp, sizeof fp, fk, a2, 8, 0x3);
    attn_grid(fk, T, n_kv_head, B, w, g);
    c->pending_flop = attn_flop(4, B, n_head, T, head_dim);
    run(c, "attention_bwd_dkdv", pipeline(c, "attention_fa", "fa_dkdv", fp), w, 19, a2, 8, g[0], g[1], g[2]);
    c->pending_flop = 0;
    return;
  }
  wg_arg a1[] = {A(dq, qext, "dq"), A(q, qext, "q"), A(k, kext, "k"), A(v, kext, "v"), A(dout, oext, "dout"),
                 A(lse, F4(rows_total), "lse"), A(D, F4(rows_total), "D")};
  run(c, "attention_bwd_dq", pipeline(c, "attention", "attn_bwd_dq", pre), w, 18, a1, 7, (T + 63) / 64, n_head, B);
  run(c, "attention_bwd_dkdv", pipeline(c, "attention", "attn_bwd_dkdv", pre), w, 18, a2, 8, (T + 63) / 64,
      n_kv_head, B);
}

/* ---- activations ---- */
static void wg_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  wg_ctx *c = CTX(be);
  int pi = pipeline(c, "gelu", "gelu_fwd", "");
  for (size_t i = 0, cap = cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(out, i), F4(k), "out"), A(tz_f32(inp, i), F4(k), "inp")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    run(c, "gelu_fwd", pi, w, 9, a, 2, gx, gy, 1);
  }
}
static void wg_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n) {
  wg_ctx *c = CTX(be);
  int pi = pipeline(c, "gelu", "ffn_gelu_backward", "");
  for (size_t i = 0, cap = cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(dinp, i), F4(k), "dinp"), A(tz_f32(inp, i), F4(k), "inp"),
                  A(tz_f32(dout, i), F4(k), "dout")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    run(c, "gelu_bwd", pi, w, 9, a, 3, gx, gy, 1);
  }
}
static void wg_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = F;
  wg_arg a[] = {A(out, F4((size_t)N * F), "out"), A(gu, F4((size_t)N * 2 * F), "gu")};
  uint32_t gx, gy;
  grid1((size_t)N * F, &gx, &gy);
  run(c, "swiglu_fwd", pipeline(c, "swiglu", "swiglu_fwd", ""), w, 10, a, 2, gx, gy, 1);
}
static void wg_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = F;
  wg_arg a[] = {A(dgu, F4((size_t)N * 2 * F), "dgu"), A(gu, F4((size_t)N * 2 * F), "gu"),
                A(dout, F4((size_t)N * F), "dout")};
  uint32_t gx, gy;
  grid1((size_t)N * F, &gx, &gy);
  run(c, "swiglu_bwd", pipeline(c, "swiglu", "ffn_swiglu_backward", ""), w, 10, a, 3, gx, gy, 1);
}

/* ---- loss ---- */
static void wg_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets, int N, int V,
                            int Vp, float dscale) {
  wg_ctx *c = CTX(be);
  size_t rc = cap_elems(c) / (size_t)Vp; /* rows per piece: logits above one binding run in pieces */
  if (rc == 0) rc = 1;
  int pi = pipeline(c, "crossentropy", "softmax_xent", "");
  for (size_t r0 = 0; r0 < (size_t)N; r0 += rc) {
    size_t r = (size_t)N - r0 < rc ? (size_t)N - r0 : rc;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)r, w[9] = V, w[10] = Vp, w[11] = fbits(dscale);
    wg_arg a[] = {A(tz_f32(losses, r0), F4(r), "losses"), A(tz_f32(logits, r0 * Vp), F4(r * Vp), "logits"),
                  A(tz_f32(targets, r0), F4(r), "targets")};
    uint32_t gx, gy;
    gridn(r, &gx, &gy);
    run(c, "crossentropy", pi, w, 12, a, 3, gx, gy, 1);
  }
}

/* ---- optimizer ---- */
static void wg_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v,
                     const tz_range *ranges, int n_ranges, const tz_adamw_hp *hp) {
  wg_ctx *c = CTX(be);
  if (n_ranges <= 0) return;
  /* Pieces of at most cap elements (a range above one binding is cut: AdamW is elementwise),
   * grouped into batches whose span [base, end) fits one binding of each of the four buffers.
   * One dispatch per batch (one in all when the buffers fit: the common case); the table holds
   * every batch's (off − base, n, decay) rows back to back. */
  size_t cap = cap_elems(c), np = 0;
  for (int r = 0; r < n_ranges; r++) np += ranges[r].n ? (ranges[r].n + cap - 1) / cap : 1;
  size_t *poff = tz_malloc(np * sizeof *poff), *pn = tz_malloc(np * sizeof *pn);
  float *pdec = tz_malloc(np * sizeof *pdec);
  np = 0;
  for (int r = 0; r < n_ranges; r++) {
    size_t o = 0;
    do {
      size_t k = ranges[r].n - o < cap ? ranges[r].n - o : cap;
      poff[np] = ranges[r].off + o, pn[np] = k, pdec[np] = ranges[r].decay, np++;
      o += k;
    } while (o < ranges[r].n);
  }
  /* batches: [bfirst[b], bfirst[b + 1]) pieces, span [bbase[b], bend[b]) */
  size_t *bfirst = tz_malloc((np + 1) * sizeof *bfirst), *bbase = tz_malloc(np * sizeof *bbase),
         *bend = tz_malloc(np * sizeof *bend), nb = 0;
  for (size_t i = 0; i < np; i++) {
    size_t lo = poff[i], hi = poff[i] + pn[i];
    if (nb && i - bfirst[nb - 1] < 65535) {
      size_t l2 = lo < bbase[nb - 1] ? lo : bbase[nb - 1], h2 = hi > bend[nb - 1] ? hi : bend[nb - 1];
      if (h2 - l2 <= cap) {
        bbase[nb - 1] = l2, bend[nb - 1] = h2;
        continue;
      }
    }
    bfirst[nb] = i, bbase[nb] = lo, bend[nb] = hi, nb++;
  }
  bfirst[nb] = np;
  size_t nw = np * 3;
  uint32_t *tab = tz_malloc(nw * 4);
  for (size_t b = 0; b < nb; b++)
    for (size_t i = bfirst[b]; i < bfirst[b + 1]; i++) {
      TZ_ASSERT(poff[i] - bbase[b] + pn[i] < 0xffffffffu);
      tab[3 * i] = (uint32_t)(poff[i] - bbase[b]);
      tab[3 * i + 1] = (uint32_t)pn[i];
      tab[3 * i + 2] = fbits(pdec[i]);
    }
  /* the range table is uploaded once and kept while it does not change */
  if (!c->ranges || c->ranges_words != nw || memcmp(c->ranges_host, tab, nw * 4)) {
    if (c->ranges && c->ranges->size < nw * 4) {
      wg_free(be, c->ranges);
      c->ranges = NULL;
    }
    if (!c->ranges) c->ranges = wg_alloc(be, nw * 4, "adamw ranges");
    if (!c->ranges) fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", nw, 0);
    tz_slice rs = {c->ranges, 0};
    wg_upload(be, rs, tab, nw * 4);
    free(c->ranges_host);
    c->ranges_host = tab;
    c->ranges_words = nw;
  } else {
    free(tab);
  }
  float b1 = hp->beta1, b2 = hp->beta2;
  uint32_t w[24] = {0};
  w[8] = fbits(hp->lr), w[9] = fbits(b1), w[10] = fbits(b2), w[11] = fbits(hp->eps),
  w[12] = fbits(hp->weight_decay), w[13] = fbits(hp->grad_scale),
  w[14] = fbits(1.0f - powf(b1, (float)hp->t)), w[15] = fbits(1.0f - powf(b2, (float)hp->t));
  int w16 = mirrored(c, params); /* the same update, writing the f16 mirror too */
  if (w16) {
    mirror_refresh(c);
    w[13] = 0, w[16] = fbits(hp->grad_scale);
  }
  int pi = w16 ? pipeline(c, "w16", "adamw_w16", F16_PREFIX) : pipeline(c, "adamw", "adamw", "");
  for (size_t b = 0; b < nb; b++) {
    size_t span = bend[b] - bbase[b], maxn = 0, n_b = bfirst[b + 1] - bfirst[b];
    for (size_t i = bfirst[b]; i < bfirst[b + 1]; i++)
      if (pn[i] > maxn) maxn = pn[i];
    tz_slice rs = {c->ranges, F4(3 * bfirst[b])};
    wg_arg a[] = {A(tz_f32(params, bbase[b]), F4(span), "params"), A(tz_f32(grads, bbase[b]), F4(span), "grads"),
                  A(tz_f32(m, bbase[b]), F4(span), "adamw m"), A(tz_f32(v, bbase[b]), F4(span), "adamw v"),
                  A(rs, F4(3 * n_b), "ranges")};
    uint64_t gx = (maxn + 255) / 256;
    if (gx > 512) gx = 512;
    if (gx == 0) gx = 1;
    if (w16) {
      uint32_t h0;
      wg_arg h = mirror_range(c, params.off / 4 + bbase[b], span, &h0);
      w[17] = h0;
      run_ex(c, "adamw", pi, w, 18, a, 5, (uint32_t)gx, (uint32_t)n_b, 1, &h, -1);
    } else {
      run(c, "adamw", pi, w, 16, a, 5, (uint32_t)gx, (uint32_t)n_b, 1);
    }
  }
  free(poff), free(pn), free(pdec), free(bfirst), free(bbase), free(bend);
}

/* ---- profiling ---- */
static void prof_collect(wg_ctx *c) {
  int nq = c->nq;
  c->nq = 0;
  int st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &st, NULL};
  WGPUFuture f = W.wgpuBufferMapAsync(c->qread, WGPUMapMode_Read, 0, (size_t)nq * 8, ci);
  if (wait_future(c, f) != 0 || st != 1) return;
  const uint64_t *t = W.wgpuBufferGetConstMappedRange(c->qread, 0, (size_t)nq * 8);
  for (int i = 0; t && i < nq / 2; i++) {
    int li = label_index(c, c->qlabel[i]);
    if (t[2 * i + 1] > t[2 * i]) c->label_ns[li] += (double)(t[2 * i + 1] - t[2 * i]);
    c->label_calls[li]++;
  }
  W.wgpuBufferUnmap(c->qread);
}

void tz_webgpu_profile_print(tz_backend *be, double steps) {
  if (!be || strcmp(be->name, "webgpu")) return;
  wg_ctx *c = CTX(be);
  if (!c->profile) return;
  wg_sync_ctx(c);
  /* rates: matmuls GFLOP/s (2MNK), the flash attention kernels GFLOP/s of their causal matmul
   * units (attn_flop); others GB/s of the tensor extents bound (each read or written once: a
   * lower bound on the traffic). The attention backward is three rows: attention_bwd_dq and
   * attention_bwd_dkdv, and attention_bwd_d where D runs as its own pass (under the fused dq,
   * attention_bwd_dq is fa_dq_sum, the sum of the partial dq, and attention_bwd_dkdv counts
   * five units). */
  tz_prof_row rows[MAX_LABELS];
  for (int i = 0; i < c->nlabels; i++)
    rows[i] = (tz_prof_row){c->labels[i], c->label_ns[i], (double)c->label_calls[i], c->label_flop[i], c->label_bytes[i]};
  tz_profile_table("webgpu profile (GPU timestamps", rows, c->nlabels, steps);
}

void tz_webgpu_profile_reset(tz_backend *be) {
  if (!be || strcmp(be->name, "webgpu")) return;
  wg_ctx *c = CTX(be);
  wg_sync_ctx(c);
  memset(c->label_ns, 0, sizeof c->label_ns);
  memset(c->label_calls, 0, sizeof c->label_calls);
  memset(c->label_flop, 0, sizeof c->label_flop);
  memset(c->label_bytes, 0, sizeof c->label_bytes);
}

/* ---- lifecycle ---- */
static void wg_destroy(tz_backend *be) {
  if (!be) return;
  wg_ctx *c = CTX(be);
  if (c) {
    if (c->dev) {
      flush(c);
      bg_clear(c);
      if (c->scratch) wg_free(be, c->scratch);
      if (c->stage) wg_free(be, c->stage);
      if (c->wt) wg_free(be, c->wt);
      if (c->ranges) wg_free(be, c->ranges);
      for (int i = 0; i < MAX_ARGS; i++)
        if (c->dummy[i]) wg_free(be, c->dummy[i]);
      for (int i = 0; i < c->npipes; i++) {
        W.wgpuBindGroupLayoutRelease(c->pipes[i].bgl);
        W.wgpuComputePipelineRelease(c->pipes[i].pipe);
      }
      for (int i = 0; i < c->nmods; i++) W.wgpuShaderModuleRelease(c->mods[i].mod);
      WGPUBuffer bs[] = {c->uni, c->readback, c->qres, c->qread};
      for (size_t i = 0; i < sizeof bs / sizeof *bs; i++)
        if (bs[i]) {
          W.wgpuBufferDestroy(bs[i]);
          W.wgpuBufferRelease(bs[i]);
        }
      if (c->qs) {
        W.wgpuQuerySetDestroy(c->qs);
        W.wgpuQuerySetRelease(c->qs);
      }
      W.wgpuQueueRelease(c->queue);
      W.wgpuDeviceDestroy(c->dev);
      W.wgpuDeviceRelease(c->dev);
    }
    if (c->adapter) {
      W.wgpuAdapterInfoFreeMembers(c->info);
      W.wgpuAdapterRelease(c->adapter);
    }
    if (c->inst) W.wgpuInstanceRelease(c->inst);
    free(c->uni_host);
    free(c->bgs);
    free(c->ranges_host);
    free(c);
  }
  free(be);
}

typedef struct {
  int status;
  void *handle;
  char msg[512];
} req_result;
static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *u1, void *u2) {
  req_result *r = u1;
  r->status = status;
  r->handle = adapter;
  sv_copy(r->msg, sizeof r->msg, message);
}
static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1,
                      void *u2) {
  req_result *r = u1;
  r->status = status;
  r->handle = device;
  sv_copy(r->msg, sizeof r->msg, message);
}

/* Instance + adapter (no device). 0 or -1 with tz_err. */
static int open_adapter(wg_ctx *c) {
  if (tz_wgpu_load() != 0) return -1;
  c->inst = tz_wgpu_create_instance(); /* timed WaitAny, in the loaded build's layout */
  if (!c->inst) return tz_err("webgpu: %s: wgpuCreateInstance failed", tz_wgpu_lib_path());
  WGPURequestAdapterOptions o;
  memset(&o, 0, sizeof o);
  o.featureLevel = WGPUFeatureLevel_Core;
  o.powerPreference = WGPUPowerPreference_HighPerformance;
  o.backendType = WGPUBackendType_Vulkan;
  req_result r = {0};
  WGPURequestAdapterCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_adapter, &r, NULL};
  WGPUFuture f = W.wgpuInstanceRequestAdapter(c->inst, &o, ci);
  if (wait_future(c, f) != 0 || r.status != WGPURequestAdapterStatus_Success || !r.handle)
    return tz_err("webgpu: no WebGPU adapter (Vulkan) found%s%s; on a machine without a GPU install "
                  "lavapipe (scripts/setup_webgpu.sh)",
                  r.msg[0] ? ": " : "", r.msg);
  c->adapter = r.handle;
  W.wgpuAdapterGetInfo(c->adapter, &c->info);
  memset(&c->lim, 0, sizeof c->lim);
  W.wgpuAdapterGetLimits(c->adapter, &c->lim);
  c->has_f16 = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_ShaderF16);
  c->has_subgroups = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_Subgroups);
  c->has_ts = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_TimestampQuery);
  return 0;
}

static const char *adapter_type(WGPUAdapterType t) {
  return t == WGPUAdapterType_DiscreteGPU     ? "discrete GPU"
         : t == WGPUAdapterType_IntegratedGPU ? "integrated GPU"
         : t == WGPUAdapterType_CPU           ? "CPU"
                                              : "unknown";
}

static void adapter_line(wg_ctx *c, char *out, size_t cap) {
  char dev[128], desc[128];
  sv_copy(dev, sizeof dev, c->info.device);
  sv_copy(desc, sizeof desc, c->info.description);
  snprintf(out, cap, "%s (%s, Vulkan%s%s)", dev[0] ? dev : "?", adapter_type(c->info.adapterType),
           desc[0] ? ", " : "", desc);
}

tz_backend *tz_backend_webgpu_create(void) {
  wg_ctx *c = tz_calloc(1, sizeof *c);
  tz_backend *be = tz_calloc(1, sizeof *be);
  be->name = "webgpu";
  be->ctx = c;
  be->act = TZ_F32; /* the f16 mirror covers weights only; activations stay fp32 */
  /* One buffer per activation tensor (backend.h): the model's matmul and matmul_t operands are
   * then bound read-only and take the 8 x 16 tile (mm_config). TEZGAH_WEBGPU_ARENA=1 (A/B
   * measurement) keeps the single arena, whose read_write dispatches take 8 x 8, BK 8. */
  const char *ar = getenv("TEZGAH_WEBGPU_ARENA");
  be->act_buffers = !(ar && !strcmp(ar, "1"));
  if (open_adapter(c) != 0) {
    wg_destroy(be);
    return NULL;
  }
  /* the f16 weight mirror: on where ShaderF16 exists unless TEZGAH_WEBGPU_F16=0;
   * TEZGAH_WEBGPU_F16=1 requires it (tests) */
  const char *fe = getenv("TEZGAH_WEBGPU_F16");
  int f16_forced = fe && *fe && strcmp(fe, "0") != 0;
  c->f16 = c->has_f16 && !(fe && !strcmp(fe, "0"));
  if (f16_forced && !c->has_f16) {
    tz_err("webgpu: TEZGAH_WEBGPU_F16=%s but this adapter offers no ShaderF16 (unset it for fp32)", fe);
    wg_destroy(be);
    return NULL;
  }
  /* subgroup reductions: on where Subgroups exists unless TEZGAH_WEBGPU_SUBGROUPS=0;
   * TEZGAH_WEBGPU_SUBGROUPS=1 requires them (tests) */
  const char *se = getenv("TEZGAH_WEBGPU_SUBGROUPS");
  c->subgroups = c->has_subgroups && !(se && !strcmp(se, "0"));
  if (se && *se && strcmp(se, "0") && !c->has_subgroups) {
    tz_err("webgpu: TEZGAH_WEBGPU_SUBGROUPS=%s but this adapter offers no Subgroups (unset it)", se);
    wg_destroy(be);
    return NULL;
  }
  /* read-only variants of the preamble kernels (ro_variant): GPUs yes, CPU adapters no */
  c->ro = env_int("TEZGAH_WEBGPU_RO", c->info.adapterType != WGPUAdapterType_CPU) != 0;
  const char *pe = getenv("TEZGAH_PROFILE");
  c->profile = pe && *pe && strcmp(pe, "0") && c->has_ts;
  WGPUFeatureName feats[4];
  size_t nf = 0;
  if (c->has_ts) feats[nf++] = WGPUFeatureName_TimestampQuery;
  if (c->has_f16) feats[nf++] = WGPUFeatureName_ShaderF16;
  if (c->has_subgroups) feats[nf++] = WGPUFeatureName_Subgroups;
  WGPULimits lim = c->lim; /* request the adapter's maximum limits */
  lim.nextInChain = NULL;
  const char *off_toggles[] = {"timestamp_quantization"};
  WGPUDawnTogglesDescriptor tg;
  memset(&tg, 0, sizeof tg);
  tg.chain.sType = WGPUSType_DawnTogglesDescriptor;
  tg.disabledToggleCount = 1;
  tg.disabledToggles = off_toggles;
  /* Every kernel bounds-checks its own indices, so Dawn's robustness transform (a clamp on
   * every storage access) is off unless TEZGAH_WEBGPU_ROBUST=1. */
  const char *on_toggles[2];
  size_t n_on = 0;
  const char *rb = getenv("TEZGAH_WEBGPU_ROBUST");
  if (!(rb && *rb && strcmp(rb, "0"))) on_toggles[n_on++] = "disable_robustness";
  /* Measurement switch only (off by default): WGSL zero-initialises workgroup memory, which Dawn
   * implements as a store loop and a barrier at the start of every dispatch; this drops it. Not
   * a default: a kernel may rely on the zeros (the language guarantees them). */
  if (env_int("TEZGAH_WEBGPU_NO_WGINIT", 0)) on_toggles[n_on++] = "disable_workgroup_init";
  tg.enabledToggleCount = n_on;
  tg.enabledToggles = on_toggles;
  WGPUDeviceDescriptor dd;
  memset(&dd, 0, sizeof dd);
  dd.nextInChain = &tg.chain;
  dd.label = sv("tezgah");
  dd.requiredFeatureCount = nf;
  dd.requiredFeatures = feats;
  dd.requiredLimits = &lim;
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.deviceLostCallbackInfo.userdata1 = c;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  dd.uncapturedErrorCallbackInfo.userdata1 = c;
  req_result r = {0};
  WGPURequestDeviceCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_device, &r, NULL};
  WGPUFuture f = W.wgpuAdapterRequestDevice(c->adapter, &dd, ci);
  if (wait_future(c, f) != 0 || r.status != WGPURequestDeviceStatus_Success || !r.handle) {
    tz_err("webgpu: cannot create a device on the adapter: %s", r.msg);
    wg_destroy(be);
    return NULL;
  }
  c->dev = r.handle;
  c->queue = W.wgpuDeviceGetQueue(c->dev);
  W.wgpuDeviceGetLimits(c->dev, &c->lim);
  /* TEZGAH_WEBGPU_MAX_BINDING=bytes (debugging, tests): act as if maxStorageBufferBindingSize
   * were this small (at least 64 KiB), to exercise the split paths on any adapter */
  const char *mb = getenv("TEZGAH_WEBGPU_MAX_BINDING");
  if (mb && *mb) {
    unsigned long long v = strtoull(mb, NULL, 0);
    if (v < 65536) v = 65536;
    if (v < c->lim.maxStorageBufferBindingSize) c->lim.maxStorageBufferBindingSize = v;
  }
  c->uni = mkbuf(c, (uint64_t)UNI_SLOTS * UNI_STRIDE, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "uniforms");
  c->uni_host = tz_calloc(UNI_SLOTS, UNI_STRIDE);
  c->bgs = tz_calloc(BG_CAP, sizeof *c->bgs);
  TZ_ASSERT(c->lim.minUniformBufferOffsetAlignment <= UNI_STRIDE);
  for (int i = 0; i < MAX_ARGS; i++) c->dummy[i] = wg_alloc(be, 16, "unused binding");
  if (c->profile) {
    WGPUQuerySetDescriptor qd = {NULL, sv("profile"), WGPUQueryType_Timestamp, PROF_MAX * 2};
    c->qs = W.wgpuDeviceCreateQuerySet(c->dev, &qd);
    c->qres = mkbuf(c, PROF_MAX * 16, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "timestamps");
    c->qread = mkbuf(c, PROF_MAX * 16, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "timestamps read");
  }
  W.wgpuInstanceProcessEvents(c->inst);
  if (c->failed || !c->dummy[MAX_ARGS - 1]) {
    tz_err("webgpu: device setup failed: %s", c->errmsg);
    wg_destroy(be);
    return NULL;
  }
  be->alloc = wg_alloc;
  be->free = wg_free;
  be->upload = wg_upload;
  be->download = wg_download;
  be->copy = wg_copy;
  be->fill = wg_fill;
  be->download_act = wg_download_act;
  be->copy_rows = wg_copy_rows;
  be->sync = wg_sync;
  be->destroy = wg_destroy;
  be->profile_print = tz_webgpu_profile_print;
  be->profile_reset = tz_webgpu_profile_reset;
  be->embed_fwd = wg_embed_fwd;
  be->embed_bwd = wg_embed_bwd;
  be->rmsnorm_fwd = wg_rmsnorm_fwd;
  be->rmsnorm_bwd = wg_rmsnorm_bwd;
  be->layernorm_fwd = wg_layernorm_fwd;
  be->layernorm_bwd = wg_layernorm_bwd;
  be->matmul_t = wg_matmul_t;
  be->matmul = wg_matmul;
  be->matmul_at = wg_matmul_at;
  be->bias_bwd = wg_bias_bwd;
  be->matmul_at_swiglu_a = wg_matmul_at_swiglu_a;
  be->rope = wg_rope;
  be->attention_fwd = wg_attention_fwd;
  be->attention_bwd = wg_attention_bwd;
  be->gelu_fwd = wg_gelu_fwd;
  be->gelu_bwd = wg_gelu_bwd;
  be->swiglu_fwd = wg_swiglu_fwd;
  be->swiglu_bwd = wg_swiglu_bwd;
  be->add = wg_add;
  be->crossentropy = wg_crossentropy;
  be->sum_sq = wg_sum_sq;
  be->adamw = wg_adamw;
  be->params_mirror = wg_params_mirror;
  return be;
}

/* The precision in words (train's startup line, `tezgah info`). */
static const char *precision(wg_ctx *c) {
  if (c->f16)
    return "f16 weight mirror for the forward (matmul_t weights, embeddings), fp32 master weights, "
           "activations, backward and optimizer (TEZGAH_WEBGPU_F16=0 for fp32 throughout)";
  if (c->has_f16) return "fp32 throughout (ShaderF16 offered; f16 weight mirror off: TEZGAH_WEBGPU_F16=0)";
  return "fp32 throughout (no ShaderF16 on this adapter)";
}

/* One line naming the device, precision, reduction path and read-only matmul tile, for logs
 * ("llvmpipe (CPU, Vulkan, ...); fp32 ...; reductions: ...; matmul tile 8x8, BK 8, 2 buffers ..."). */
const char *tz_webgpu_describe(tz_backend *be) {
  static char line[800];
  if (!be || strcmp(be->name, "webgpu")) return "";
  wg_ctx *c = CTX(be);
  char a[300];
  adapter_line(c, a, sizeof a);
  char r[96];
  if (c->subgroups)
    snprintf(r, sizeof r, "reductions: subgroups (%u..%u lanes)", c->info.subgroupMinSize, c->info.subgroupMaxSize);
  else
    snprintf(r, sizeof r, "reductions: workgroup (%s)",
             c->has_subgroups ? "Subgroups offered, TEZGAH_WEBGPU_SUBGROUPS=0" : "no Subgroups");
  /* the read-only matmul tile after the fit (TEZGAH_WEBGPU_MM as now set): what tests and
   * benches ran */
  mm_cfg f = mm_config(c, 0);
  snprintf(line, sizeof line, "%s; %s; %s; matmul tile %dx%d, BK %d, %d buffer%s (%zu of %u bytes)", a, precision(c),
           r, f.tm, f.tn, f.bk, f.nbuf, f.nbuf > 1 ? "s" : "", mm_smem(f),
           (unsigned)c->lim.maxComputeWorkgroupStorageSize);
  return line;
}

/* `tezgah info`: Dawn library, adapter, features and limits. 0, or -1 with tz_err. */
int tz_webgpu_info(void) {
  wg_ctx *c = tz_calloc(1, sizeof *c);
  tz_backend *be = tz_calloc(1, sizeof *be);
  be->name = "webgpu";
  be->ctx = c;
  be->act = TZ_F32; /* the f16 mirror covers weights only; activations stay fp32 */
  if (open_adapter(c) != 0) {
    wg_destroy(be);
    return -1;
  }
  char a[300], vendor[128], arch[128];
  adapter_line(c, a, sizeof a);
  sv_copy(vendor, sizeof vendor, c->info.vendor);
  sv_copy(arch, sizeof arch, c->info.architecture);
  printf("webgpu:\n  library: %s\n  adapter: %s\n  vendor: %s (0x%04x) architecture: %s device id 0x%04x\n",
         tz_wgpu_lib_path(), a, vendor, c->info.vendorID, arch, c->info.deviceID);
  printf("  backend: Vulkan\n  subgroup size: %u..%u\n", c->info.subgroupMinSize, c->info.subgroupMaxSize);
  WGPUSupportedFeatures sf = {0, NULL};
  W.wgpuAdapterGetFeatures(c->adapter, &sf);
  printf("  features (%zu):", sf.featureCount);
  for (size_t i = 0; i < sf.featureCount; i++) {
    uint32_t v = sf.features[i];
    const char *n = v == WGPUFeatureName_ShaderF16                            ? "ShaderF16"
                    : v == WGPUFeatureName_Subgroups                          ? "Subgroups"
                    : v == WGPUFeatureName_TimestampQuery                     ? "TimestampQuery"
                    : v == WGPUFeatureName_ChromiumExperimentalSubgroupMatrix ? "SubgroupMatrix"
                                                                              : NULL;
    if (n) printf(" %s", n);
    else printf(" 0x%x", v);
  }
  const char *fe = getenv("TEZGAH_WEBGPU_F16");
  c->f16 = c->has_f16 && !(fe && !strcmp(fe, "0"));
  printf("\n  precision: %s\n", precision(c));
  W.wgpuSupportedFeaturesFreeMembers(sf);
  WGPULimits *l = &c->lim;
  printf("  limits: maxBufferSize %llu, maxStorageBufferBindingSize %llu, maxComputeWorkgroupStorageSize %u,\n"
         "          maxComputeInvocationsPerWorkgroup %u, maxComputeWorkgroupsPerDimension %u,\n"
         "          maxStorageBuffersPerShaderStage %u, minStorageBufferOffsetAlignment %u\n",
         (unsigned long long)l->maxBufferSize, (unsigned long long)l->maxStorageBufferBindingSize,
         l->maxComputeWorkgroupStorageSize, l->maxComputeInvocationsPerWorkgroup,
         l->maxComputeWorkgroupsPerDimension, l->maxStorageBuffersPerShaderStage,
         l->minStorageBufferOffsetAlignment);
  wg_destroy(be);
  return 0;
}
