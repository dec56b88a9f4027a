/* The byte-level BPE tokenizer on WebGPU: training, encoding and decoding as WGSL kernels
 * (src/kernels/bpe/bpe_train.wgsl, bpe_encode.wgsl), output identical to the CPU's.
 *
 * Own device (Dawn loaded by backend/webgpu/dawn_load.c), separate from the model backend's
 * op dispatch; created once per process on first use. Kernels declare their own bindings and
 * reference all of them in every entry point, so one auto layout per file serves every entry.
 *
 * Training (tz_tok_train_webgpu): unique pre-tokens counted on the GPU (count_words_gpu:
 * bpe_pretok.wgsl's pieces into a hash table of words, bpe_words.wgsl), or on the CPU where the
 * GPU cannot (tz_count_words, all cores), while every kernel compiles asynchronously; their
 * symbols, the
 * pair-count hash table, per-pair block bests, the word lists (which words can hold a pair) and
 * the vocabulary (token bytes + a byte-string hash table for the "already a token" ban) live on
 * the GPU. One merge is three dispatches (refresh the dirty blocks, select the best pair with
 * the CPU's tie-break and ban or record it, apply it to its candidate words with count deltas),
 * each sized by the work of that merge, not by the corpus; up to ITERS merges per submission,
 * two submissions in flight.
 * Encoding: pre-tokens found on the GPU from the raw bytes (bpe_pretok.wgsl, the GPT-2
 * pattern's pieces by a byte-local rule, character classes from PCRE2), BPE on the GPU (one
 * thread per pre-token; up to 64 bytes in private arrays, longer ones with a heap in scratch
 * memory), ids compacted on the GPU; the host cuts ~16 MiB batches at context-free boundaries,
 * uploads them and copies ids out (two readback buffers in flight). Fallback: pre-tokens from
 * the CPU (PCRE2, parallel): all threads pre-tokenize the next 16 MiB segment while the master
 * thread feeds the last one to the GPU and copies older ids out.
 * Decoding: per-block byte counts, a scan, and a byte scatter. Ids must be < 65536 (pairs are
 * 32-bit keys). */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"
#include "tokenizer/tok_internal.h"

typedef struct {
  const char *name, *src;
} tz_wgsl_file;
extern const tz_wgsl_file tz_wgsl_files[];
extern const int tz_wgsl_nfiles;

#define W tz_wgpu
#define EMPTY 0xffffffffu
#define HP 0x01000193u

typedef struct {
  const char *file, *entry;
  WGPUComputePipeline pipe;
  WGPUBindGroupLayout bgl;
  /* asynchronous creation (pipeline_start): pending until pipeline() waits for it */
  int pending, status;
  WGPUFuture fut;
  char msg[256];
} tg_pipe;

static struct {
  int state; /* 0 untried, 1 ready, -1 unavailable (why) */
  char why[600];
  WGPUInstance inst;
  WGPUAdapter adapter;
  WGPUDevice dev;
  WGPUQueue queue;
  WGPULimits lim;
  char desc[300];
  int failed;
  char err[1024];
  tg_pipe pipes[32];
  int npipes;
  WGPUBuffer cls; /* the pre-tokenizer's character classes (tz_pretok_classes), uploaded once */
} G;

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

static void on_error(WGPUDevice const *d, WGPUErrorType type, WGPUStringView m, void *u1, void *u2) {
  if (G.failed) return;
  G.failed = 1;
  char msg[900];
  sv_copy(msg, sizeof msg, m);
  snprintf(G.err, sizeof G.err, "%s error: %s", type == WGPUErrorType_Validation ? "validation"
                                                : type == WGPUErrorType_OutOfMemory ? "out of memory" : "internal", msg);
}
static void on_lost(WGPUDevice const *d, WGPUDeviceLostReason r, WGPUStringView m, void *u1, void *u2) {
  if (r == WGPUDeviceLostReason_Destroyed || r == WGPUDeviceLostReason_CallbackCancelled || G.failed) return;
  G.failed = 1;
  char msg[900];
  sv_copy(msg, sizeof msg, m);
  snprintf(G.err, sizeof G.err, "device lost: %s", msg);
}

static int wait_future(WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  for (int i = 0; i < 3600; i++) {
    WGPUWaitStatus s = W.wgpuInstanceWaitAny(G.inst, 1, &wi, 1000000000ull);
    if (s == WGPUWaitStatus_Success && wi.completed) return 0;
    if (s != WGPUWaitStatus_TimedOut) return -1;
    W.wgpuInstanceProcessEvents(G.inst);
    if (G.failed) return -1;
  }
  return -1;
}

typedef struct {
  int status;
  void *handle;
  char msg[512];
} req_result;
static void on_adapter(WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
  req_result *r = u1;
  r->status = s;
  r->handle = a;
  sv_copy(r->msg, sizeof r->msg, m);
}
static void on_device(WGPURequestDeviceStatus s, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
  req_result *r = u1;
  r->status = s;
  r->handle = d;
  sv_copy(r->msg, sizeof r->msg, m);
}

static int open_device(void) {
  if (tz_wgpu_load() != 0) return -1;
  G.inst = tz_wgpu_create_instance(); /* timed WaitAny, in the loaded build's layout */
  if (!G.inst) return tz_err("webgpu: wgpuCreateInstance failed");
  WGPURequestAdapterOptions o;
  memset(&o, 0, sizeof o);
  o.featureLevel = WGPUFeatureLevel_Core;
  o.powerPreference = WGPUPowerPreference_HighPerformance;
  o.backendType = WGPUBackendType_Vulkan;
  req_result r = {0};
  WGPURequestAdapterCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_adapter, &r, NULL};
  if (wait_future(W.wgpuInstanceRequestAdapter(G.inst, &o, ci)) || r.status != WGPURequestAdapterStatus_Success ||
      !r.handle)
    return tz_err("webgpu: no WebGPU adapter (Vulkan) found%s%s", r.msg[0] ? ": " : "", r.msg);
  G.adapter = r.handle;
  WGPUAdapterInfo info;
  memset(&info, 0, sizeof info);
  W.wgpuAdapterGetInfo(G.adapter, &info);
  sv_copy(G.desc, sizeof G.desc, info.device);
  WGPULimits lim;
  memset(&lim, 0, sizeof lim);
  W.wgpuAdapterGetLimits(G.adapter, &lim);
  lim.nextInChain = NULL;
  if (lim.maxStorageBuffersPerShaderStage < 9)
    return tz_err("webgpu: adapter %s offers %u storage buffers per shader stage; the tokenizer kernels need 9",
                  G.desc, lim.maxStorageBuffersPerShaderStage);
  WGPUDeviceDescriptor dd;
  memset(&dd, 0, sizeof dd);
  dd.label = sv("tezgah tokenizer");
  dd.requiredLimits = &lim;
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  r = (req_result){0};
  WGPURequestDeviceCallbackInfo di = {NULL, WGPUCallbackMode_WaitAnyOnly, on_device, &r, NULL};
  if (wait_future(W.wgpuAdapterRequestDevice(G.adapter, &dd, di)) || r.status != WGPURequestDeviceStatus_Success ||
      !r.handle)
    return tz_err("webgpu: cannot create a device on %s: %s", G.desc, r.msg);
  G.dev = r.handle;
  G.queue = W.wgpuDeviceGetQueue(G.dev);
  W.wgpuDeviceGetLimits(G.dev, &G.lim);
  return 0;
}

int tz_tok_webgpu_available(void) {
  if (G.state == 0) {
    G.state = open_device() == 0 ? 1 : -1;
    if (G.state < 0) snprintf(G.why, sizeof G.why, "%s", tz_errmsg());
  }
  if (G.state < 0) tz_err("%s", G.why);
  return G.state > 0;
}

const char *tz_tok_webgpu_device(void) { return G.state > 0 ? G.desc : ""; }

/* ---- helpers ---- */
static int check_dev(const char *what) {
  W.wgpuInstanceProcessEvents(G.inst);
  if (G.failed) {
    G.failed = 0;
    return tz_err("webgpu tokenizer: %s: %s", what, G.err);
  }
  return 0;
}

static WGPUBuffer mkbuf(uint64_t size, WGPUBufferUsage usage, const char *label) {
  size = (size + 15) / 16 * 16;
  if (size < 16) size = 16;
  WGPUBufferDescriptor d = {NULL, sv(label), usage, size, 0};
  return W.wgpuDeviceCreateBuffer(G.dev, &d);
}
static WGPUBuffer sbuf(uint64_t size, const char *label) {
  return mkbuf(size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, label);
}
static void put(WGPUBuffer b, uint64_t off, const void *data, size_t n) {
  if (n) W.wgpuQueueWriteBuffer(G.queue, b, off, data, (n + 3) / 4 * 4);
}
static void drop(WGPUBuffer *b) {
  if (*b) {
    W.wgpuBufferDestroy(*b);
    W.wgpuBufferRelease(*b);
    *b = NULL;
  }
}

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
  *(int *)u1 = status == WGPUMapAsyncStatus_Success ? 1 : -1;
}

/* Submit enc (may be NULL), then copy n bytes (multiple of 4) of src at off to dst. */
static int read_back(WGPUCommandEncoder enc, WGPUBuffer src, uint64_t off, void *dst, size_t n) {
  size_t m = (n + 7) / 8 * 8;
  WGPUBuffer rb = mkbuf(m, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "tokenizer readback");
  if (!enc) enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, src, off, rb, 0, (n + 3) / 4 * 4);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(G.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  int st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &st, NULL};
  int rc = 0;
  if (wait_future(W.wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, m, ci)) || st != 1) {
    rc = check_dev("readback");
    if (!rc) rc = tz_err("webgpu tokenizer: readback of %zu bytes failed", n);
  } else {
    const void *p = W.wgpuBufferGetConstMappedRange(rb, 0, m);
    if (p) memcpy(dst, p, n);
    W.wgpuBufferUnmap(rb);
    rc = p ? check_dev("readback") : tz_err("webgpu tokenizer: readback has no mapped range");
  }
  drop(&rb);
  return rc;
}

/* End compute pass `pass` of enc and submit enc. */
static void submit_pass(WGPUCommandEncoder enc, WGPUComputePassEncoder pass) {
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(G.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
}

static void on_pipe(WGPUCreatePipelineAsyncStatus st, WGPUComputePipeline pipe, WGPUStringView m, void *u1, void *u2) {
  tg_pipe *p = u1;
  p->status = st;
  p->pipe = st == WGPUCreatePipelineAsyncStatus_Success ? pipe : NULL;
  sv_copy(p->msg, sizeof p->msg, m);
}

/* Start creating the pipeline of `entry` in bpe file `file` (no-op when it exists or is under
 * way): Dawn compiles it on its worker threads, so the driver's compile (most of a first
 * process's start-up on a cold shader cache) overlaps the host's and the GPU's other work;
 * pipeline() waits for it. */
static tg_pipe *pipeline_start(const char *file, const char *entry) {
  for (int i = 0; i < G.npipes; i++)
    if (!strcmp(G.pipes[i].file, file) && !strcmp(G.pipes[i].entry, entry)) return &G.pipes[i];
  const char *src = NULL;
  for (int i = 0; i < tz_wgsl_nfiles; i++)
    if (!strcmp(tz_wgsl_files[i].name, file)) src = tz_wgsl_files[i].src;
  TZ_ASSERT(src && G.npipes < (int)(sizeof G.pipes / sizeof *G.pipes));
  /* the workgroup scan (common/scan256.wgsl: wg_scan, block_id), appended where called */
  char *full = NULL;
  if (strstr(src, "wg_scan(")) {
    const char *scan = NULL;
    for (int i = 0; i < tz_wgsl_nfiles; i++)
      if (!strcmp(tz_wgsl_files[i].name, "scan256")) scan = tz_wgsl_files[i].src;
    TZ_ASSERT(scan);
    size_t a = strlen(src), b = strlen(scan);
    full = tz_malloc(a + b + 2);
    memcpy(full, src, a);
    full[a] = '\n';
    memcpy(full + a + 1, scan, b + 1);
    src = full;
  }
  WGPUShaderSourceWGSL ws = {{NULL, WGPUSType_ShaderSourceWGSL}, sv(src)};
  WGPUShaderModuleDescriptor md = {&ws.chain, sv(file)};
  WGPUShaderModule mod = W.wgpuDeviceCreateShaderModule(G.dev, &md);
  free(full);
  WGPUComputePipelineDescriptor d;
  memset(&d, 0, sizeof d);
  d.label = sv(entry);
  d.compute.module = mod;
  d.compute.entryPoint = sv(entry);
  tg_pipe *p = &G.pipes[G.npipes++];
  memset(p, 0, sizeof *p);
  p->file = file;
  p->entry = entry;
  p->pending = 1;
  WGPUCreateComputePipelineAsyncCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_pipe, p, NULL};
  p->fut = W.wgpuDeviceCreateComputePipelineAsync(G.dev, &d, ci);
  W.wgpuShaderModuleRelease(mod);
  return p;
}

/* The pipeline of `entry` in bpe file `file`, made (or waited for) now; NULL on an error. */
static tg_pipe *pipeline(const char *file, const char *entry) {
  tg_pipe *p = pipeline_start(file, entry);
  if (p->pending) {
    p->pending = 0;
    if (wait_future(p->fut)) p->pipe = NULL; /* (on_pipe sets pipe only on success) */
    if (check_dev(entry)) return NULL;
    if (p->pipe) p->bgl = W.wgpuComputePipelineGetBindGroupLayout(p->pipe, 0);
  }
  if (!p->pipe) {
    tz_err("webgpu tokenizer: pipeline %s: %s", entry, p->msg[0] ? p->msg : "creation failed");
    return NULL;
  }
  return p;
}

/* pipeline_start for every entry point in `entries` (NULL-terminated) of bpe file `file`. */
static void pipelines_start(const char *file, const char *const *entries) {
  for (int i = 0; entries[i]; i++) pipeline_start(file, entries[i]);
}
static const char *const pretok_entries[] = {"pt_mask", "pt_scan", "pt_write", "pt_len", "pt_huge", NULL};
static const char *const words_entries[] = {"wc_clear", "wc_insert", "wc_verify", "wc_compact", NULL};
static const char *const encode_entries[] = {"encode_short", "encode_long", "enc_bsum", "enc_bscan", "enc_scatter", NULL};

/* A bind group for pipeline p: binding 0 = uniform u, 1..n = storage buffers b[] (whole). */
static WGPUBindGroup bind(tg_pipe *p, WGPUBuffer u, uint64_t usize, WGPUBuffer *b, int n) {
  WGPUBindGroupEntry e[12];
  memset(e, 0, sizeof e);
  e[0].binding = 0;
  e[0].buffer = u;
  e[0].size = usize;
  for (int i = 0; i < n; i++) {
    e[i + 1].binding = (uint32_t)i + 1;
    e[i + 1].buffer = b[i];
    e[i + 1].size = WGPU_WHOLE_SIZE;
  }
  WGPUBindGroupDescriptor d = {NULL, sv(NULL), p->bgl, (size_t)n + 1, e};
  return W.wgpuDeviceCreateBindGroup(G.dev, &d);
}

static void dispatch(WGPUComputePassEncoder pass, tg_pipe *p, WGPUBindGroup bg, uint64_t groups) {
  if (!groups) return;
  uint32_t gx = groups < 65535 ? (uint32_t)groups : 65535, gy = (uint32_t)((groups + gx - 1) / gx);
  W.wgpuComputePassEncoderSetPipeline(pass, p->pipe);
  W.wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, NULL);
  W.wgpuComputePassEncoderDispatchWorkgroups(pass, gx, gy, 1);
}

static uint32_t hmix(uint32_t x) {
  uint32_t h = x * 0x9e3779b1u;
  h ^= h >> 15;
  h *= 0x85ebca77u;
  return h ^ (h >> 13);
}
static uint32_t hbytes(const unsigned char *s, size_t n) {
  uint32_t h = 0;
  for (size_t i = 0; i < n; i++) h = h * HP + s[i] + 1u;
  return h;
}
static uint64_t pow2_at_least(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/* The largest buffer one storage binding can take on this device (bytes). */
static uint64_t bind_limit(void) {
  return G.lim.maxStorageBufferBindingSize < G.lim.maxBufferSize ? G.lim.maxStorageBufferBindingSize
                                                                 : G.lim.maxBufferSize;
}

static int too_big(const char *what, uint64_t bytes) {
  if (bytes <= G.lim.maxStorageBufferBindingSize && bytes <= G.lim.maxBufferSize) return 0;
  return tz_err("webgpu tokenizer: %s needs %llu bytes, above this adapter's storage binding limit %llu",
                what, (unsigned long long)bytes, (unsigned long long)G.lim.maxStorageBufferBindingSize);
}

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- training ---- */

#define ITERS 256   /* merge iterations per submission */
#define GRID_REF 64 /* workgroups of refresh (they stride over the dirty blocks) */
#define GRID_APPLY 128 /* workgroups of apply (their threads stride over the candidate words) */

/* The set-up kernels, then one iteration's: refresh, select_best, apply (three dispatches), or
 * with TEZGAH_TOK_GPU_FUSED=1 refresh2, apply2 (two: every apply2 workgroup selects the pair
 * itself; same result) */
static const char *const train_entries[2][8] = {
    {"clear", "count_pairs", "csr_scan", "csr_fill", "refresh", "select_best", "apply", NULL},
    {"clear", "count_pairs", "csr_scan", "csr_fill", "refresh2", "apply2", NULL, NULL}};
#define N_TRAIN_PIPES 7

typedef struct {
  tg_pipe *p[N_TRAIN_PIPES];
  int fused;
} train_pipes;

/* The training pipelines (started at the call's beginning, so they compile while the words are
 * counted): 0, or -1 with the error in tz_errmsg(). */
static int make_train_pipes(train_pipes *tp) {
  for (int i = 0; i < N_TRAIN_PIPES && train_entries[tp->fused][i]; i++)
    if (!(tp->p[i] = pipeline("bpe_train", train_entries[tp->fused][i]))) return -1;
  return 0;
}

/* Submit enc after copying the 16 state words into readback buffer rb and start mapping it. */
typedef struct {
  WGPUBuffer rb;
  WGPUFuture fut;
  int st, busy;
} st_slot;

static void submit_with_state(WGPUCommandEncoder enc, WGPUBuffer state, st_slot *s) {
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, state, 0, s->rb, 0, 64);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(G.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  s->st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &s->st, NULL};
  s->fut = W.wgpuBufferMapAsync(s->rb, WGPUMapMode_Read, 0, 64, ci);
  s->busy = 1;
}

static int wait_state(st_slot *s, uint32_t *st) {
  s->busy = 0;
  if (wait_future(s->fut) || s->st != 1) {
    int rc = check_dev("training state readback");
    return rc ? rc : tz_err("webgpu tokenizer: training state readback failed");
  }
  const void *p = W.wgpuBufferGetConstMappedRange(s->rb, 0, 64);
  if (p) memcpy(st, p, 64);
  W.wgpuBufferUnmap(s->rb);
  return p ? check_dev("training") : tz_err("webgpu tokenizer: readback has no mapped range");
}

static int count_words_gpu(const char *text, size_t len, int roomy, WGPUBuffer *sym, WGPUBuffer *words,
                           uint64_t *nw, uint64_t *nsym, const char **why);

/* k merge iterations into `pass`: refresh, [select_best,] apply (n_iter 3), or refresh2,
 * apply2 (n_iter 2); pipelines and bind groups in train_entries' order. */
static void merge_iters(WGPUComputePassEncoder pass, const train_pipes *tp, WGPUBindGroup *bg, int n_iter,
                        uint64_t g_ref, uint64_t g_apply, uint32_t k) {
  for (uint32_t i = 0; i < k; i++) {
    dispatch(pass, tp->p[4], bg[4], g_ref);
    if (n_iter == 3) dispatch(pass, tp->p[5], bg[5], 1);
    dispatch(pass, tp->p[n_iter + 3], bg[n_iter + 3], g_apply);
  }
}

int tz_tok_train_webgpu(const char *text, size_t len, int vocab_size, tz_tokenizer **out, tz_tok_gpu_stats *stats) {
  *out = NULL;
  if (vocab_size < 257 || vocab_size > 65536)
    return tz_err("webgpu tokenizer: vocab size %d out of range (257..65536)", vocab_size);
  if (len >= (1u << 31)) return tz_err("webgpu tokenizer: corpus of %zu bytes is above 2 GiB", len);
  if (!tz_tok_webgpu_available()) return -1;
  double t0 = wall();
  train_pipes tp;
  memset(&tp, 0, sizeof tp);
  const char *fe = getenv("TEZGAH_TOK_GPU_FUSED");
  tp.fused = fe && !strcmp(fe, "1");
  int n_pipes = tp.fused ? 6 : 7, n_iter = tp.fused ? 2 : 3;
  /* every kernel this call may need compiles on Dawn's workers from here on */
  pipelines_start("bpe_pretok", pretok_entries);
  pipelines_start("bpe_words", words_entries);
  pipelines_start("bpe_train", train_entries[tp.fused]);
  /* The words: counted on the GPU (count_words_gpu), else on the CPU by all cores. */
  WGPUBuffer gsym = NULL, gwords = NULL;
  uint64_t gnw = 0, gnsym = 0;
  const char *why = NULL;
  int grc = count_words_gpu(text, len, 0, &gsym, &gwords, &gnw, &gnsym, &why);
  if (grc == 1 && why && strstr(why, "full")) /* text of many unique words: once more, roomier */
    grc = count_words_gpu(text, len, 1, &gsym, &gwords, &gnw, &gnsym, &why);
  if (grc < 0) return -1;
  size_t nw = 0, nsym = 0, npos = 0;
  uint32_t *sym = NULL, *words = NULL;
  tz_wordcount wc;
  memset(&wc, 0, sizeof wc);
  if (grc == 0) nw = gnw, nsym = gnsym, npos = gnsym - gnw;
  else if (tz_count_words(text, len, &wc)) return -1;
  double t1 = wall();
  if (make_train_pipes(&tp)) {
    drop(&gsym), drop(&gwords);
    tz_wordcount_free(&wc);
    return -1;
  }
  double tpipe = wall();
  if (grc != 0) { /* the CPU's words that can hold a pair (length >= 2), in the trainer's layout */
    for (size_t w = 0; w < wc.words.n; w++)
      if (wc.words.ents[w].len >= 2) nw++, nsym += wc.words.ents[w].len, npos += wc.words.ents[w].len - 1;
    sym = tz_malloc((nsym + 1) * 4), words = tz_malloc((nw + 1) * 16);
    nw = nsym = 0;
    for (size_t w = 0; w < wc.words.n; w++) {
      size_t L = wc.words.ents[w].len;
      if (L < 2) continue;
      const unsigned char *k = (const unsigned char *)tz_bmap_key(&wc.words, (long)w);
      words[4 * nw] = (uint32_t)nsym;
      words[4 * nw + 1] = (uint32_t)L;
      words[4 * nw + 2] = (uint32_t)wc.count[w];
      words[4 * nw + 3] = 0;
      for (size_t i = 0; i < L; i++) sym[nsym++] = k[i];
      nw++;
    }
    tz_wordcount_free(&wc);
  }
  /* every pair that can ever exist: the initial ones plus at most two new ones per merged
   * occurrence (at most one per position), so 3 npos at worst; far fewer in practice (the
   * 210 MB Debian corpus: 3.2 M positions, 0.34 M pairs by vocab 8192), and a full table is
   * detected (the caller falls back to the CPU). Pairs get dense positions in creation order,
   * so the per-block bests cover only the pairs that exist. */
  uint64_t pcap = pow2_at_least(3 * (uint64_t)npos + 1024);
  uint64_t maxcap = bind_limit() / 16;
  if (pcap > maxcap) pcap = pow2_at_least(maxcap + 1) / 2; /* the worst case rarely comes near: overflow is detected */
  if (pcap < 1024) pcap = 1024;
  uint64_t nblk = pcap / 256;
  uint32_t V = (uint32_t)vocab_size;
  uint64_t vhcap = pow2_at_least(4 * (uint64_t)V);
  uint64_t arcap = 256 + 64 * (uint64_t)V;
  if (arcap < (1u << 20)) arcap = 1u << 20;
  uint64_t vwords = 4 * (uint64_t)V + vhcap + arcap;
  /* entries: the byte pairs' CSR lists (<= one per position) and the L lists (a word joins one
   * each time a merge rewrites it, which shortens it: <= one per position) */
  uint64_t ent_cap = 2 * (uint64_t)npos + 16;
  uint64_t lo_fill = 65537, lo_start = lo_fill + 65536, lo_merges = lo_start + V, lo_ent = lo_merges + V;
  uint64_t lwords = lo_ent + ent_cap;
  int rc = 0;
  if ((rc = too_big("the pair table", pcap * 16)) || (rc = too_big("the words' symbols", nsym * 4 + 4)) ||
      (rc = too_big("the vocabulary", vwords * 4)) || (rc = too_big("the word lists", lwords * 4)) ||
      (rc = too_big("the words", nw * 16 + 16))) {
    free(sym), free(words);
    drop(&gsym), drop(&gwords);
    return rc;
  }
  /* host-side initial vocabulary: the 256 bytes */
  uint32_t *voc = tz_calloc(vwords, 4);
  memset(voc + 4 * V, 0xff, vhcap * 4);
  for (uint32_t b = 0; b < 256; b++) {
    unsigned char c = (unsigned char)b;
    voc[4 * b] = 1;
    voc[4 * b + 1] = b;
    voc[4 * b + 2] = hbytes(&c, 1);
    voc[4 * b + 3] = HP;
    uint32_t s = hmix(voc[4 * b + 2]) & (uint32_t)(vhcap - 1);
    while (voc[4 * V + s] != EMPTY) s = (s + 1) & (uint32_t)(vhcap - 1);
    voc[4 * V + s] = b;
    voc[4 * V + vhcap + b] = b;
  }
  uint32_t u[16] = {(uint32_t)(pcap - 1), (uint32_t)nw, V - 1, 4 * V, (uint32_t)(vhcap - 1), (uint32_t)(4 * V + vhcap),
                    (uint32_t)arcap, (uint32_t)(3 * nblk), (uint32_t)lo_fill, (uint32_t)lo_start, (uint32_t)lo_merges,
                    (uint32_t)lo_ent, (uint32_t)ent_cap, (uint32_t)pcap, (uint32_t)nblk, (uint32_t)tp.fused};
  uint32_t st[32] = {256, 0, 0, 0, 0, 0, 0, 0, 0, 0, 256};
  if (nw == 0) st[2] = 1;
  WGPUBuffer ub = mkbuf(sizeof u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "bpe uniforms");
  /* storage buffers, zero-initialized by WebGPU (the pair table is set by `clear`) */
  WGPUBuffer B[8];
  B[0] = gsym ? gsym : sbuf(nsym * 4 + 4, "bpe symbols");
  B[1] = gwords ? gwords : sbuf(nw * 16 + 16, "bpe words");
  B[2] = sbuf(pcap * 16, "bpe pair table");
  B[3] = sbuf(nblk * 20, "bpe pair blocks"); /* best count, best key, dirty flag; two dirty lists */
  B[4] = sbuf(sizeof st, "bpe state");
  B[5] = sbuf(vwords * 4, "bpe vocabulary");
  B[6] = sbuf(lwords * 4, "bpe word lists");
  B[7] = sbuf(pcap * 4, "bpe pair positions");
  st_slot S[2];
  memset(S, 0, sizeof S);
  for (int i = 0; i < 2; i++) S[i].rb = mkbuf(64, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "bpe state readback");
  put(ub, 0, u, sizeof u);
  if (sym) put(B[0], 0, sym, nsym * 4);
  if (words) put(B[1], 0, words, nw * 16);
  put(B[4], 0, st, sizeof st);
  put(B[5], 0, voc, vwords * 4);
  free(sym), free(words), free(voc);
  int32_t *merges = NULL;
  uint32_t iters = 0, subs = 0;
  WGPUBindGroup bg[N_TRAIN_PIPES] = {0};
  for (int i = 0; i < n_pipes; i++) bg[i] = bind(tp.p[i], ub, sizeof u, B, 8);
  double t2 = t1;
  if ((rc = check_dev("training setup"))) goto release;
  t2 = wall();
  /* Submissions of up to ITERS iterations, two in flight: the host encodes and submits the next
   * while the GPU runs the last. Iterations after the end are no-ops; the batch sizes follow
   * the merges left (vocab_size - 256 iterations when no pair is banned), then 16 at a time.
   * Grids are capped by the work there can be (small corpora: a few workgroups). */
  uint64_t g_ref = nblk < GRID_REF ? nblk : GRID_REF, g_apply = (nw + 255) / 256 + 1;
  if (g_apply > GRID_APPLY) g_apply = GRID_APPLY;
  int inflight = 0, head = 0, done = 0;
  int64_t submitted = 0;
  for (int first = 1; !done;) {
    int64_t need = (int64_t)V - 256 - submitted;
    if (inflight && (inflight == 2 || need <= 0)) {
      rc = wait_state(&S[head], st);
      head = (head + 1) % 2;
      inflight--;
      done = rc || st[2] != 0;
      continue;
    }
    uint32_t k = need > ITERS ? ITERS : need > 16 ? (uint32_t)need : 16;
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    if (first) {
      dispatch(pass, tp.p[0], bg[0], pcap / 256);
      dispatch(pass, tp.p[1], bg[1], (nw + 255) / 256);
      dispatch(pass, tp.p[2], bg[2], 1);
      dispatch(pass, tp.p[3], bg[3], (nw + 255) / 256);
      first = 0;
    }
    merge_iters(pass, &tp, bg, n_iter, g_ref, g_apply, k);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    submit_with_state(enc, B[4], &S[(head + inflight) % 2]);
    inflight++;
    subs++;
    submitted += k;
  }
  while (inflight) { /* the one still in flight (a no-op once done): its state is the newest */
    uint32_t st2[32];
    int rc2 = wait_state(&S[head], st2);
    head = (head + 1) % 2;
    inflight--;
    if (!rc && !rc2) memcpy(st, st2, 64);
    if (!rc) rc = rc2;
  }
  double t3 = wall(), noop = 0;
  const char *ne = getenv("TEZGAH_TOK_GPU_NOOP_ITERS");
  if (!rc && ne && atoi(ne) > 0) { /* measure the per-iteration floor: iterations after the end */
    int k = atoi(ne);
    double n0 = wall();
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    merge_iters(pass, &tp, bg, n_iter, g_ref, g_apply, (uint32_t)k);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    uint32_t st2[32];
    submit_with_state(enc, B[4], &S[0]);
    rc = wait_state(&S[0], st2);
    noop = (wall() - n0) / k;
  }
  iters = st[12];
  if (!rc && st[2] == 2) rc = tz_err("webgpu tokenizer: the token byte arena (%llu bytes) is full", (unsigned long long)arcap);
  if (!rc && st[2] == 3) rc = tz_err("webgpu tokenizer: the pair table (%llu slots) is full", (unsigned long long)pcap);
  if (!rc && st[2] == 4) rc = tz_err("webgpu tokenizer: the word lists (%llu entries) are full", (unsigned long long)ent_cap);
  if (!rc) {
    uint32_t nm = st[1];
    uint32_t *keys = tz_malloc((size_t)nm * 4 + 4);
    if (!(rc = read_back(NULL, B[6], lo_merges * 4, keys, (size_t)nm * 4))) {
      merges = tz_malloc((size_t)2 * nm * sizeof *merges + 8);
      for (uint32_t i = 0; i < nm; i++) merges[2 * i] = (int32_t)(keys[i] >> 16), merges[2 * i + 1] = (int32_t)(keys[i] & 0xffff);
      if (stats) {
        stats->merges = nm;
        stats->iterations = iters;
        stats->bans = st[11];
        stats->submissions = subs;
        stats->words = nw;
        stats->pair_slots = pcap;
        stats->pairs = st[13];
        stats->list_entries = st[9];
        stats->count_s = t1 - t0;
        stats->count_gpu = grc == 0;
        snprintf(stats->count_why, sizeof stats->count_why, "%s", why ? why : "");
        stats->pipes_s = tpipe - t1;
        stats->upload_s = t2 - tpipe;
        stats->merge_s = t3 - t2;
        stats->noop_iter_s = noop;
        stats->fused = tp.fused;
      }
      rc = tz_tok_from_trained_merges(merges, (int)nm, out);
    }
    free(keys);
  }
release:
  for (int i = 0; i < n_pipes; i++) W.wgpuBindGroupRelease(bg[i]);
  drop(&ub);
  for (int i = 0; i < 8; i++) drop(&B[i]);
  for (int i = 0; i < 2; i++) drop(&S[i].rb);
  return rc;
}

/* ---- encoding / decoding tables ---- */

typedef struct {
  uint32_t *v;
  size_t n;
  uint32_t u[12]; /* byte_off, pair_off, pair_mask, tok_off, vh_off, vh_mask, ar_off */
} enc_tables;

static int build_tables(const tz_tokenizer *t, enc_tables *e) {
  if (t->kind != TZ_TOK_BYTELEVEL) return tz_err("webgpu tokenizer: only byte-level BPE tokenizers run on the GPU");
  uint32_t V = (uint32_t)t->vocab_size;
  if (V > 65536) return tz_err("webgpu tokenizer: vocab size %u above 65536 (pairs are 32-bit keys)", V);
  uint64_t pcap = pow2_at_least(2 * (uint64_t)t->pair.n + 16), vhcap = pow2_at_least(2 * (uint64_t)V + 16);
  size_t arbytes = 0;
  for (uint32_t i = 0; i < V; i++) arbytes += t->tok_len[i];
  size_t byte_off = V, pair_off = byte_off + 256, tok_off = pair_off + 2 * pcap, vh_off = tok_off + 3 * (size_t)V,
         ar_off = vh_off + vhcap, n = ar_off + (arbytes + 3) / 4;
  uint32_t *v = tz_calloc(n + 1, 4);
  for (uint32_t i = 0; i < V; i++) v[i] = t->rank[i] == INT32_MAX ? 0x7fffffffu : (uint32_t)t->rank[i];
  for (int b = 0; b < 256; b++) v[byte_off + b] = (uint32_t)t->byte_id[b];
  memset(v + pair_off, 0xff, 2 * pcap * 4);
  for (size_t s = 0; s < t->pair.cap; s++) {
    if (!t->pair.used[s]) continue;
    uint64_t key = t->pair.keys[s];
    uint32_t k = (uint32_t)(key >> 32) << 16 | (uint32_t)(key & 0xffff);
    uint32_t h = hmix(k) & (uint32_t)(pcap - 1);
    while (v[pair_off + 2 * h] != EMPTY) h = (h + 1) & (uint32_t)(pcap - 1);
    v[pair_off + 2 * h] = k;
    v[pair_off + 2 * h + 1] = (uint32_t)t->pair.vals[s];
  }
  memset(v + vh_off, 0xff, vhcap * 4);
  unsigned char *ar = (unsigned char *)(v + ar_off);
  size_t at = 0;
  for (uint32_t i = 0; i < V; i++) {
    const unsigned char *s = (const unsigned char *)t->tok[i];
    uint32_t h = hbytes(s, t->tok_len[i]);
    v[tok_off + 3 * i] = (uint32_t)t->tok_len[i];
    v[tok_off + 3 * i + 1] = (uint32_t)at;
    v[tok_off + 3 * i + 2] = h;
    memcpy(ar + at, s, t->tok_len[i]);
    at += t->tok_len[i];
    if (t->special[i]) continue; /* specials are never a pre-token's whole-piece match */
    uint32_t q = hmix(h) & (uint32_t)(vhcap - 1);
    while (v[vh_off + q] != EMPTY) q = (q + 1) & (uint32_t)(vhcap - 1);
    v[vh_off + q] = i;
  }
  e->v = v;
  e->n = n;
  memset(e->u, 0, sizeof e->u);
  e->u[0] = (uint32_t)byte_off, e->u[1] = (uint32_t)pair_off, e->u[2] = (uint32_t)(pcap - 1);
  e->u[3] = (uint32_t)tok_off, e->u[4] = (uint32_t)vh_off, e->u[5] = (uint32_t)(vhcap - 1), e->u[6] = (uint32_t)ar_off;
  e->u[9] = (uint32_t)(t->eot >= 0 ? t->eot : 0);
  return too_big("the tokenizer tables", n * 4);
}

#define SHORT 64
/* Text bytes pre-tokenized per step of the encoder's CPU/GPU pipeline (env
 * TEZGAH_TOK_GPU_SEGMENT overrides: the tests use small segments to reach many batches). */
#define SEGMENT (16u << 20)

static tz_tok_gpu_enc_stats last_enc;

void tz_tok_webgpu_encode_stats(tz_tok_gpu_enc_stats *out) { *out = last_enc; }

/* A buffer of at least `need` bytes: kept when large enough, else replaced (1.25x slack). */
static void ensure(WGPUBuffer *b, uint64_t *have, uint64_t need, WGPUBufferUsage usage, const char *label) {
  if (*b && *have >= need) return;
  drop(b);
  /* a quarter more for the next, larger batch, but never past what one storage binding takes: a
   * batch sized to fit the limit (the encoder's scratch, 36 bytes per byte of text) must not be
   * pushed over it by the headroom (lavapipe's 128 MiB: a 3 MB text without a newline did) */
  uint64_t lim = bind_limit();
  lim = lim / 16 * 16;
  *have = need + need / 4 + 16;
  if (*have > lim && need <= lim) *have = lim;
  *b = mkbuf(*have, usage, label);
}

/* One batch in flight: its readback buffer (mapped when done) and where its ids go. */
typedef struct {
  WGPUBuffer rb;
  uint64_t rb_size, mapped_size;
  int busy, st;
  long seq;
  WGPUFuture fut;
  /* GPU pre-tokenization: the byte offset in rb of the state (st[3] = nhuge) and the huge
   * pieces the CPU encodes (0: none), the batch's text and the tokenizer */
  uint64_t huge_at;
  const char *text;
  const tz_tokenizer *t;
} enc_slot;

/* A pre-token too long for the GPU's one-thread heap loop (bpe_pretok.wgsl, pt_len / pt_huge):
 * piece index, start byte and length in the batch, ids before it in the batch's GPU ids. */
typedef struct {
  uint32_t k, s, len, off;
} huge_piece;

static int huge_cmp(const void *a, const void *b) {
  uint32_t x = ((const huge_piece *)a)->k, y = ((const huge_piece *)b)->k;
  return x < y ? -1 : x > y;
}

/* dst[0, n) = src[0, n), in 1 MiB pieces over the threads when large (outside a parallel
 * region): the copy touches the id array's fresh pages, whose faults cost as much as the copy */
static void copy_ids(int32_t *dst, const uint32_t *src, size_t n) {
  size_t chunk = 1u << 18;
#pragma omp parallel for schedule(static) if (n > 4 * chunk)
  for (size_t c = 0; c < n; c += chunk) memcpy(dst + c, src + c, (n - c < chunk ? n - c : chunk) * 4);
}

/* The batch's ids with the huge pieces' ids (encoded here, on all threads) spliced in at their
 * places: gpu[0, n) has none of theirs. Appends to out[o ..]; returns the count or -1. */
static long splice_huge(const enc_slot *s, const uint32_t *gpu, size_t n, const uint32_t *hw, uint32_t nh,
                        int32_t *dst) {
  last_enc.huge_pieces += nh;
  huge_piece *hp = tz_malloc((size_t)nh * sizeof *hp);
  memcpy(hp, hw, (size_t)nh * sizeof *hp);
  qsort(hp, nh, sizeof *hp, huge_cmp);
  int32_t **cid = tz_calloc(nh, sizeof *cid);
  size_t *cn = tz_calloc(nh, sizeof *cn);
  char errmsg[TZ_ERR_MAX] = "";
  int failed = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (uint32_t j = 0; j < nh; j++) {
    /* a pre-token alone is pre-tokenized into itself, so the CPU encoder gives its ids */
    if (tz_tok_encode(s->t, s->text + hp[j].s, hp[j].len, 0, &cid[j], &cn[j])) {
#pragma omp critical(tz_tok_gpu_huge)
      {
        if (!failed) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
        failed = 1;
      }
    }
  }
  long o = 0;
  size_t pos = 0;
  for (uint32_t j = 0; j < nh && !failed; j++) {
    if (hp[j].off < pos || hp[j].off > n) {
      snprintf(errmsg, sizeof errmsg, "webgpu tokenizer: a long pre-token's id offset %u is out of order", hp[j].off);
      failed = 1;
      break;
    }
    copy_ids(dst + o, gpu + pos, hp[j].off - pos);
    o += (long)(hp[j].off - pos);
    if (cn[j]) memcpy(dst + o, cid[j], cn[j] * sizeof *dst);
    o += (long)cn[j];
    pos = hp[j].off;
  }
  if (!failed) copy_ids(dst + o, gpu + pos, n - pos), o += (long)(n - pos);
  for (uint32_t j = 0; j < nh; j++) free(cid[j]);
  free(cid), free(cn), free(hp);
  return failed ? tz_err("%s", errmsg) : o;
}

typedef struct {
  int32_t *v;
  size_t n, cap;
} id_vec;

/* Wait for slot s's batch, append its ids to out. */
static int finish_slot(enc_slot *s, id_vec *out) {
  if (!s->busy) return 0;
  s->busy = 0;
  double t0 = wall();
  int rc = 0;
  if (wait_future(s->fut) || s->st != 1) {
    rc = check_dev("encode readback");
    if (!rc) rc = tz_err("webgpu tokenizer: encode readback failed");
    last_enc.wait_s += wall() - t0;
    return rc;
  }
  last_enc.wait_s += wall() - t0;
  const uint32_t *p = W.wgpuBufferGetConstMappedRange(s->rb, 0, s->mapped_size);
  if (!p) rc = tz_err("webgpu tokenizer: encode readback has no mapped range");
  else if ((uint64_t)p[0] + 1 > s->mapped_size / 4) rc = tz_err("webgpu tokenizer: encode produced %u ids, above its bound", p[0]);
  else {
    size_t n = p[0], extra = 0;
    uint32_t nh = 0;
    const uint32_t *hw = NULL;
    if (s->huge_at) {
      nh = p[s->huge_at / 4 + 3];
      hw = p + s->huge_at / 4 + 4;
      if (s->huge_at + 16 + 16 * (uint64_t)nh > s->mapped_size)
        rc = tz_err("webgpu tokenizer: %u long pre-tokens, above their bound", nh);
      for (uint32_t j = 0; j < nh && !rc; j++) extra += hw[4 * j + 2]; /* <= 1 id per byte */
    }
    if (!rc && out->n + n + extra > out->cap) {
      while (out->n + n + extra > out->cap) out->cap = out->cap ? out->cap * 2 : 1u << 16;
      out->v = tz_realloc(out->v, out->cap * sizeof *out->v);
    }
    if (!rc && nh == 0) {
      copy_ids(out->v + out->n, p + 1, n);
      out->n += n;
    } else if (!rc) {
      long m = splice_huge(s, p + 1, n, hw, nh, out->v + out->n);
      if (m < 0) rc = -1;
      else out->n += (size_t)m;
    }
  }
  W.wgpuBufferUnmap(s->rb);
  return rc ? rc : check_dev("encode readback");
}

/* Finish both slots, the older batch first (ids stay in text order). */
static int finish_all(enc_slot *S, id_vec *out) {
  int a = S[0].seq <= S[1].seq ? 0 : 1;
  int rc = finish_slot(&S[a], out);
  int rc2 = finish_slot(&S[1 - a], out);
  return rc ? rc : rc2;
}

/* Everything one encode call's GPU feeding needs (used by the OpenMP master thread only). */
typedef struct {
  enc_tables tb;
  WGPUBuffer ub, B[8];
  uint64_t bs[8], cap;
  tg_pipe *P[5];
  enc_slot S[2];
  id_vec out;
  uint32_t *lng, *local;
  size_t lcap, loc_cap;
  long seq;
  /* GPU pre-tokenization (bpe_pretok.wgsl): its uniforms, the per-thread masks and the state
   * (piece count, long pieces, blocks), its pipelines */
  WGPUBuffer pu, PB[3];
  uint64_t pbs[3];
  tg_pipe *Q[5];
  uint32_t pt_u[16];
  const tz_tokenizer *t;
} enc_run;

/* Encode one segment's pieces on the GPU: pcs[0..2 np) are (start, length) pairs relative to
 * seg (length 0xffffffff: an EOT). Cut into batches of at most R->cap bytes and pieces (one
 * batch unless the segment is larger); each batch is uploaded, encoded and its ids read back
 * asynchronously into a slot, the slot's previous batch finished first (ids appended in
 * order). Returns 0 or -1 with tz_err set. */
static int feed_segment(enc_run *R, const char *seg, const uint32_t *pcs, size_t np) {
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  size_t pi = 0;
  int rc = 0;
  while (pi < np && !rc) {
    /* batch [p0, p1) of the segment's pieces */
    size_t p0 = pi, base = pcs[2 * p0], p1 = p0, nl = 0;
    uint64_t scr_need = 0;
    while (p1 < np && p1 - p0 < R->cap) {
      uint32_t L = pcs[2 * p1 + 1], n = L == EMPTY ? 1 : L; /* an EOT writes its id at its start */
      if (pcs[2 * p1] + (uint64_t)n - base > R->cap) break;
      if (L != EMPTY && L > SHORT) {
        if (nl + 1 > R->lcap) R->lcap = R->lcap ? R->lcap * 2 : 64, R->lng = tz_realloc(R->lng, R->lcap * 8);
        R->lng[2 * nl] = (uint32_t)(p1 - p0);
        R->lng[2 * nl + 1] = (uint32_t)scr_need;
        nl++;
        scr_need += 9 * (uint64_t)L;
      }
      p1++;
    }
    if (p1 == p0)
      return tz_err("webgpu tokenizer: a pre-token of %u bytes is above the batch size %llu", pcs[2 * p0 + 1],
                    (unsigned long long)R->cap);
    if ((rc = too_big("the long pre-tokens' scratch", scr_need * 4 + 64))) break;
    size_t npb = p1 - p0, bytes = pcs[2 * (p1 - 1)] + (pcs[2 * p1 - 1] == EMPTY ? 1 : pcs[2 * p1 - 1]) - base;
    uint64_t nblocks = (npb + 4095) / 4096;
    /* this slot's previous batch must be done before its readback buffer is reused, and the
     * work buffers may only be replaced while nothing is in flight */
    enc_slot *s = &R->S[R->seq % 2];
    if ((rc = finish_slot(s, &R->out))) break;
    uint64_t need[8] = {0, bytes + 16, npb * 8 + 16, bytes * 4 + 16, (npb + nblocks + 2) * 4, nl * 8 + 16,
                        scr_need * 4 + 64, bytes * 4 + 32};
    int grow = 0;
    for (int i = 1; i < 8; i++) grow |= !R->B[i] || R->bs[i] < need[i];
    if (grow && (rc = finish_all(R->S, &R->out))) break;
    const char *lab[8] = {"", "bpe text", "bpe pieces", "bpe ids", "bpe counts", "bpe long pieces", "bpe scratch",
                          "bpe compacted ids"};
    for (int i = 1; i < 8; i++) ensure(&R->B[i], &R->bs[i], need[i], SU, lab[i]);
    ensure(&s->rb, &s->rb_size, need[7], WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "bpe ids readback");
    const uint32_t *up = pcs + 2 * p0; /* the pieces relative to the batch's first byte */
    if (base) {
      if (npb > R->loc_cap) R->loc_cap = npb + npb / 4, R->local = tz_realloc(R->local, R->loc_cap * 8);
      for (size_t i = p0; i < p1; i++)
        R->local[2 * (i - p0)] = pcs[2 * i] - (uint32_t)base, R->local[2 * (i - p0) + 1] = pcs[2 * i + 1];
      up = R->local;
    }
    /* the whole 4-byte words, then the last partial word zero-padded (never read past the text) */
    if (bytes / 4) put(R->B[1], 0, seg + base, bytes / 4 * 4);
    if (bytes % 4) {
      uint32_t tail = 0;
      size_t a = bytes / 4 * 4;
      memcpy(&tail, seg + base + a, bytes - a);
      W.wgpuQueueWriteBuffer(G.queue, R->B[1], a, &tail, 4);
    }
    put(R->B[2], 0, up, npb * 8);
    put(R->B[5], 0, R->lng, nl * 8);
    R->tb.u[7] = (uint32_t)npb;
    R->tb.u[8] = (uint32_t)nl;
    R->tb.u[11] = (uint32_t)nblocks;
    put(R->ub, 0, R->tb.u, sizeof R->tb.u);
    WGPUBindGroup g[5];
    for (int i = 0; i < 5; i++) g[i] = bind(R->P[i], R->ub, sizeof R->tb.u, R->B, 8);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    dispatch(pass, R->P[0], g[0], (npb + 63) / 64);
    dispatch(pass, R->P[1], g[1], (nl + 63) / 64);
    dispatch(pass, R->P[2], g[2], nblocks);
    dispatch(pass, R->P[3], g[3], 1);
    dispatch(pass, R->P[4], g[4], nblocks);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    s->mapped_size = (bytes + 1) * 4;
    s->huge_at = 0;
    W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->B[7], 0, s->rb, 0, s->mapped_size);
    WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
    W.wgpuQueueSubmit(G.queue, 1, &cb);
    W.wgpuCommandBufferRelease(cb);
    W.wgpuCommandEncoderRelease(enc);
    for (int i = 0; i < 5; i++) W.wgpuBindGroupRelease(g[i]);
    s->st = 0;
    WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &s->st, NULL};
    s->fut = W.wgpuBufferMapAsync(s->rb, WGPUMapMode_Read, 0, s->mapped_size, ci);
    s->busy = 1;
    s->seq = R->seq++;
    last_enc.batches++;
    pi = p1;
  }
  return rc;
}

/* ---- GPU pre-tokenization (bpe_pretok.wgsl) ---- */

/* Why the GPU cannot pre-tokenize for this call ("" when it can): the special literal must be
 * ASCII, at most 32 bytes, hold no newline (so no context-free cut falls inside it) and never
 * overlap itself (so its occurrences are exactly memmem's, found locally on the GPU). */
static const char *pretok_literal_why(const char *e, size_t n) {
  if (!e) return "";
  if (n == 0 || n > 32) return "the special literal is empty or longer than 32 bytes";
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)e[i] >= 0x80 || e[i] == '\n') return "the special literal is not ASCII without newlines";
  for (size_t k = 1; k < n; k++)
    if (!memcmp(e, e + k, n - k)) return "the special literal overlaps itself";
  return "";
}

/* The class table on the device (once per process). */
static int upload_classes(void) {
  if (G.cls) return 0;
  const uint32_t *tab;
  double s;
  if (tz_pretok_classes(&tab, &s)) return -1;
  last_enc.classes_s = s;
  G.cls = sbuf((uint64_t)TZ_PRETOK_CLASS_WORDS * 4, "pretok classes");
  put(G.cls, 0, tab, (size_t)TZ_PRETOK_CLASS_WORDS * 4);
  return check_dev("class table upload");
}

/* The end of the batch starting at a: len when the rest fits `target`; else the first
 * context-free cut (tz_pretok_safe_cut) or special literal at or after a + target, else after
 * a; it must leave at most cap bytes in the batch. 0 when there is none (the caller
 * pre-tokenizes on the CPU instead). The GPU treats the batch's ends as the text's ends, which
 * is exact at these cuts (tokenizer.c proves it for the safe cut; the literal ends documents). */
static size_t next_cut(const char *text, size_t len, size_t a, size_t target, size_t cap, const char *eot,
                       size_t eotn) {
  if (len - a <= target) return len;
  size_t end = len - a <= cap ? len : a + cap; /* the batch ends by here */
  size_t starts[2] = {a + target, a + 1};
  for (int k = 0; k < 2; k++) {
    size_t from = starts[k];
    if (from >= end) continue;
    size_t best = tz_pretok_safe_cut(text, a, from, end); /* end when there is none */
    const char *hit = eotn ? memmem(text + from, best - from, eot, eotn) : NULL;
    if (hit) best = (size_t)(hit - text);
    if (best < end) return best;
    if (end == len) return len; /* no cut, but the rest fits */
  }
  return 0;
}

/* Pre-tokenize and encode text[0, n) (one batch, n <= R->cap) on the GPU: pretok pass (masks,
 * scan, piece starts, lengths and long pieces), the counts copied into bpe_encode's uniforms,
 * then the encode pass as in feed_segment (dispatched for the most pieces n bytes can hold; the
 * kernels stop at the count). Ids read back asynchronously into a slot, as there. */
static int feed_batch_gpu(enc_run *R, const char *text, size_t n) {
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  uint64_t nblk = (n + 4095) / 4096, maxlong = n / (SHORT + 1) + 1, maxhuge = n / ((uint64_t)R->pt_u[4] + 1) + 1;
  /* the readback: the ids, then (16-byte aligned) the state and the huge pieces */
  uint64_t huge_at = (((uint64_t)n + 1) * 4 + 15) / 16 * 16, rb_need = huge_at + 16 + 16 * maxhuge;
  enc_slot *s = &R->S[R->seq % 2];
  int rc;
  if ((rc = finish_slot(s, &R->out))) return rc;
  uint64_t need[8] = {0, n + 16, 8 * (uint64_t)n + 16, 4 * (uint64_t)n + 16, 4 * ((uint64_t)n + nblk + 3),
                      8 * maxlong + 16, 36 * (uint64_t)n + 64, 4 * (uint64_t)n + 32};
  uint64_t pneed[3] = {257 * nblk * 4 + 16, 16, 16 * maxhuge + 16};
  int grow = 0;
  for (int i = 1; i < 8; i++) grow |= !R->B[i] || R->bs[i] < need[i];
  for (int i = 0; i < 3; i++) grow |= !R->PB[i] || R->pbs[i] < pneed[i];
  if (grow && (rc = finish_all(R->S, &R->out))) return rc;
  const char *lab[8] = {"", "bpe text", "bpe pieces", "bpe ids", "bpe counts", "bpe long pieces", "bpe scratch",
                        "bpe compacted ids"};
  for (int i = 1; i < 8; i++) ensure(&R->B[i], &R->bs[i], need[i], SU, lab[i]);
  ensure(&R->PB[0], &R->pbs[0], pneed[0], SU, "pretok masks");
  ensure(&R->PB[1], &R->pbs[1], pneed[1], SU, "pretok state");
  ensure(&R->PB[2], &R->pbs[2], pneed[2], SU, "pretok huge pieces");
  ensure(&s->rb, &s->rb_size, rb_need, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "bpe ids readback");
  if (n / 4) put(R->B[1], 0, text, n / 4 * 4);
  if (n % 4) {
    uint32_t tail = 0;
    size_t a = n / 4 * 4;
    memcpy(&tail, text + a, n - a);
    W.wgpuQueueWriteBuffer(G.queue, R->B[1], a, &tail, 4);
  }
  R->pt_u[0] = (uint32_t)n;
  R->pt_u[1] = (uint32_t)nblk;
  put(R->pu, 0, R->pt_u, sizeof R->pt_u);
  put(R->ub, 0, R->tb.u, sizeof R->tb.u); /* npieces, nlong, nblocks: copied from the GPU below */
  WGPUBuffer pb[8] = {G.cls, R->B[1], R->B[2], R->PB[0], R->B[5], R->PB[1], R->B[4], R->PB[2]};
  WGPUBindGroup q[5], g[5];
  for (int i = 0; i < 5; i++) q[i] = bind(R->Q[i], R->pu, sizeof R->pt_u, pb, 8);
  for (int i = 0; i < 5; i++) g[i] = bind(R->P[i], R->ub, sizeof R->tb.u, R->B, 8);
  WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
  WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  dispatch(pass, R->Q[0], q[0], nblk);
  dispatch(pass, R->Q[1], q[1], 1);
  dispatch(pass, R->Q[2], q[2], nblk);
  dispatch(pass, R->Q[3], q[3], (n + 255) / 256);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  /* st[0], st[1] -> U.npieces, U.nlong (u32 7, 8); st[2] -> U.nblocks (u32 11) */
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[1], 0, R->ub, 7 * 4, 8);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[1], 8, R->ub, 11 * 4, 4);
  pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  dispatch(pass, R->P[0], g[0], (n + 63) / 64);
  dispatch(pass, R->P[1], g[1], (maxlong + 63) / 64);
  dispatch(pass, R->P[2], g[2], nblk);
  dispatch(pass, R->P[3], g[3], 1);
  dispatch(pass, R->P[4], g[4], nblk);
  dispatch(pass, R->Q[4], q[4], (maxhuge + 63) / 64);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  s->mapped_size = rb_need;
  s->huge_at = huge_at;
  s->text = text;
  s->t = R->t;
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->B[7], 0, s->rb, 0, ((uint64_t)n + 1) * 4);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[1], 0, s->rb, huge_at, 16);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[2], 0, s->rb, huge_at + 16, 16 * maxhuge);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(G.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  for (int i = 0; i < 5; i++) W.wgpuBindGroupRelease(q[i]), W.wgpuBindGroupRelease(g[i]);
  s->st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &s->st, NULL};
  s->fut = W.wgpuBufferMapAsync(s->rb, WGPUMapMode_Read, 0, s->mapped_size, ci);
  s->busy = 1;
  s->seq = R->seq++;
  last_enc.batches++;
  return 0;
}

static const char *why_bare(const char *msg);

/* Pre-tokenization on the GPU for this call? 1 yes (R->Q, R->pu, R->pt_u set up), 0 no: why
 * (a structural reason, silently: the CPU's pieces are the same) or a missing capability (a
 * one-line notice on stderr, once per process). TEZGAH_TOK_GPU_PRETOK=cpu forces the CPU. */
static int gpu_pretok_setup(enc_run *R, const char *eot, size_t eotn) {
  const char *env = getenv("TEZGAH_TOK_GPU_PRETOK");
  if (env && !strcmp(env, "cpu")) return 0;
  if (*pretok_literal_why(eot, eotn)) return 0;
  static int warned;
  int ok = R->cap >= (64u << 10) && upload_classes() == 0;
  if (R->cap < (64u << 10))
    tz_err("the adapter's storage binding limit (%llu bytes) leaves batches below 64 KiB",
           (unsigned long long)G.lim.maxStorageBufferBindingSize);
  for (int i = 0; i < 5 && ok; i++) ok = (R->Q[i] = pipeline("bpe_pretok", pretok_entries[i])) != NULL;
  if (!ok) {
    if (!warned) fprintf(stderr, "tezgah: GPU pre-tokenization unavailable (%s); pre-tokenizing on the CPU\n", why_bare(tz_errmsg()));
    warned = 1;
    return 0;
  }
  memset(R->pt_u, 0, sizeof R->pt_u);
  R->pt_u[2] = eot ? 1 : 0;
  R->pt_u[3] = (uint32_t)eotn;
  /* pre-tokens longer than this are encoded on the CPU (TEZGAH_TOK_GPU_HUGE overrides, for
   * tests): a GPU thread's heap loop costs tens of microseconds per byte once its heap leaves
   * the caches (a 1 MB run took > 30 s on the H200), the CPU encoder ~1 */
  const char *h = getenv("TEZGAH_TOK_GPU_HUGE");
  R->pt_u[4] = h && atoll(h) >= SHORT ? (uint32_t)atoll(h) : 4096;
  if (eot) memcpy(&R->pt_u[8], eot, eotn);
  R->pu = mkbuf(sizeof R->pt_u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "pretok uniforms");
  return 1;
}

int tz_tok_webgpu_pretok(const char *text, size_t n, const char *eot, size_t eotn, uint32_t **pcs, size_t *np) {
  *pcs = NULL;
  *np = 0;
  if (!tz_tok_webgpu_available()) return -1;
  if (*pretok_literal_why(eot, eotn)) return tz_err("webgpu pretok: %s", pretok_literal_why(eot, eotn));
  enc_run R;
  memset(&R, 0, sizeof R);
  uint64_t lim = bind_limit();
  R.cap = (lim - 64) / 36 < (64u << 20) ? (lim - 64) / 36 : (64u << 20);
  if (n > R.cap) return tz_err("webgpu pretok: %zu bytes above one batch (%llu)", n, (unsigned long long)R.cap);
  const char *env = getenv("TEZGAH_TOK_GPU_PRETOK");
  if (env && !strcmp(env, "cpu")) return tz_err("webgpu pretok: TEZGAH_TOK_GPU_PRETOK=cpu");
  if (!gpu_pretok_setup(&R, eot, eotn)) return tz_err("webgpu pretok: unavailable");
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  uint64_t nblk = (n + 4095) / 4096;
  WGPUBuffer tx = mkbuf(n + 16, SU, "pretok text"), pc = mkbuf(8 * (uint64_t)n + 16, SU, "pretok pieces"),
             mk = mkbuf(257 * nblk * 4 + 16, SU, "pretok masks"), lg = mkbuf(8 * (n / (SHORT + 1) + 1) + 16, SU, "pretok long"),
             sb = mkbuf(16, SU, "pretok state"), cn = mkbuf(4 * (uint64_t)n + 16, SU, "pretok counts"),
             hg = mkbuf(16 * (n / ((uint64_t)R.pt_u[4] + 1) + 1) + 16, SU, "pretok huge");
  char *pad = tz_calloc(n + 4, 1);
  memcpy(pad, text, n);
  put(tx, 0, pad, n);
  free(pad);
  R.pt_u[0] = (uint32_t)n;
  R.pt_u[1] = (uint32_t)nblk;
  put(R.pu, 0, R.pt_u, sizeof R.pt_u);
  WGPUBuffer pb[8] = {G.cls, tx, pc, mk, lg, sb, cn, hg};
  WGPUBindGroup q[4];
  for (int i = 0; i < 4; i++) q[i] = bind(R.Q[i], R.pu, sizeof R.pt_u, pb, 8);
  WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
  WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  dispatch(pass, R.Q[0], q[0], nblk);
  dispatch(pass, R.Q[1], q[1], 1);
  dispatch(pass, R.Q[2], q[2], nblk);
  dispatch(pass, R.Q[3], q[3], (n + 255) / 256);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  uint32_t st[4] = {0};
  int rc = read_back(enc, sb, 0, st, 12);
  for (int i = 0; i < 4; i++) W.wgpuBindGroupRelease(q[i]);
  uint32_t *v = NULL;
  if (!rc && st[0] > n) rc = tz_err("webgpu pretok: %u pieces for %zu bytes", st[0], n);
  if (!rc) {
    v = tz_malloc(((size_t)st[0] * 2 + 1) * 4);
    rc = read_back(NULL, pc, 0, v, ((size_t)st[0] * 2 + 1) * 4);
  }
  drop(&tx), drop(&pc), drop(&mk), drop(&lg), drop(&sb), drop(&cn), drop(&hg), drop(&R.pu);
  if (rc) {
    free(v);
    return -1;
  }
  *pcs = v;
  *np = st[0];
  return 0;
}

/* ---- word counting for training on the GPU ---- */

/* The unique pre-tokens of two or more bytes and their counts — tz_count_words' words (the GPT-2
 * pattern's pieces, documents split at <|endoftext|>), less the single bytes the trainer drops —
 * counted on the GPU: bpe_pretok.wgsl finds the pieces of each batch (the encoder's batches, cut
 * at context-free boundaries), bpe_words.wgsl hashes them into a table of unique words whose bytes
 * go to an arena, then verifies every piece against its slot's word byte for byte. The result
 * stays on the GPU in the trainer's layout: *sym (one u32 per byte, nsym of them) and *words
 * (offset, length, count, 0 per word, nw of them).
 * Returns 0, or 1 when the GPU cannot count this text (*why says why; the caller counts on the
 * CPU): GPU pre-tokenization unavailable, a batch without a context-free cut, the table or the
 * arena full, two words on one key (never seen on real text; TEZGAH_TOK_GPU_KEYBITS=4 forces
 * it for the tests); -1 on a device error. TEZGAH_TOK_GPU_COUNT=cpu skips it (returns 1).
 * roomy: table and arena sized for any text (one slot and one symbol per byte, within the
 * binding limit) instead of for natural text; the caller's second try after "full". */
static int count_words_gpu(const char *text, size_t len, int roomy, WGPUBuffer *sym, WGPUBuffer *words,
                           uint64_t *nw, uint64_t *nsym, const char **why) {
  *sym = *words = NULL;
  *nw = *nsym = 0;
  const char *env = getenv("TEZGAH_TOK_GPU_COUNT");
  if (env && !strcmp(env, "cpu")) return *why = "TEZGAH_TOK_GPU_COUNT=cpu", 1;
  enc_run R;
  memset(&R, 0, sizeof R);
  uint64_t lim = bind_limit();
  /* a batch needs 8 bytes of pieces per byte of text (the largest of pre-tokenization's buffers) */
  R.cap = (lim - 64) / 8 < (64u << 20) ? (lim - 64) / 8 : (64u << 20);
  env = getenv("TEZGAH_TOK_GPU_BATCH_CAP"); /* tests: smaller batches */
  if (env && atoll(env) > 0 && (uint64_t)atoll(env) < R.cap) R.cap = (uint64_t)atoll(env);
  uint64_t seg = SEGMENT;
  env = getenv("TEZGAH_TOK_GPU_SEGMENT");
  if (env && atoll(env) > 0) seg = (uint64_t)atoll(env);
  uint64_t target = seg < R.cap / 2 ? seg : R.cap / 2;
  if (!gpu_pretok_setup(&R, TZ_EOT_STR, TZ_EOT_LEN)) return *why = "GPU pre-tokenization unavailable", 1;
  R.pt_u[4] = 0xffffffffu; /* no piece is "huge" here: each is hashed by one thread, whatever its length */
  tg_pipe *P[4];
  for (int i = 0; i < 4; i++)
    if (!(P[i] = pipeline("bpe_words", words_entries[i]))) {
      drop(&R.pu);
      return -1;
    }
  /* the table: 1/64 slot per byte of text (the 210 MB Debian corpus: 4 M slots for 0.52 M words),
   * loaded to 3/4 at most; the arena: 1/4 symbol per byte of text (that corpus: 3.7 M symbols
   * for 53 M) */
  uint64_t slots = 0, acap = 0;
  for (int r = 0; r <= roomy; r++) { /* roomy: 1 slot and 1 symbol per byte (words of >= 2 bytes fill <= 1/2) */
    uint64_t per = r ? 1 : 64, aper = r ? 1 : 4;
    uint64_t s = pow2_at_least(len / per > 65536 ? len / per : 65536), a = len / aper > (4u << 20) ? len / aper : (4u << 20);
    while (s * 16 > lim) s /= 2;
    if (a * 4 > lim) a = lim / 4;
    if (r && s <= slots && a <= acap) return *why = "the word table would not be larger", 1;
    slots = s, acap = a;
  }
  uint32_t keymask = 0xffffffffu;
  env = getenv("TEZGAH_TOK_GPU_KEYBITS"); /* tests: a short key, so that words collide */
  if (env && atoi(env) > 0 && atoi(env) < 32) keymask = (1u << atoi(env)) - 1;
  uint32_t wu[4] = {keymask, (uint32_t)(slots - 1), (uint32_t)acap, (uint32_t)(slots / 4 * 3)};
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  uint64_t bcap = R.cap, nblk = (bcap + 4095) / 4096;
  WGPUBuffer wub = mkbuf(sizeof wu, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "words uniforms");
  WGPUBuffer tx = mkbuf(bcap + 16, SU, "words text"), pc = mkbuf(8 * bcap + 16, SU, "words pieces"),
             mk = mkbuf(257 * nblk * 4 + 16, SU, "words masks"), lg = mkbuf(8 * (bcap / (SHORT + 1) + 1) + 16, SU, "words long"),
             ps = mkbuf(16, SU, "words pretok state"), cn = mkbuf(16, SU, "words counts"), hg = mkbuf(16, SU, "words huge");
  WGPUBuffer tab = mkbuf(slots * 16, SU, "words table"), ar = mkbuf(acap * 4 + 16, SU, "words arena"),
             ws = mkbuf(16, SU, "words state"), dummy = mkbuf(16, SU, "words none"), wo = NULL;
  put(wub, 0, wu, sizeof wu);
  WGPUBuffer pb[8] = {G.cls, tx, pc, mk, lg, ps, cn, hg}, wb[7] = {tx, pc, ps, tab, ar, ws, dummy};
  WGPUBindGroup q[4], g[3];
  for (int i = 0; i < 4; i++) q[i] = bind(R.Q[i], R.pu, sizeof R.pt_u, pb, 8);
  for (int i = 0; i < 3; i++) g[i] = bind(P[i], wub, sizeof wu, wb, 7);
  uint64_t grid = 0;
  int rc = 0;
  *why = NULL;
  for (size_t a = 0; a < len && !rc && !*why;) {
    size_t b = next_cut(text, len, a, target, bcap, TZ_EOT_STR, TZ_EOT_LEN);
    if (!b) {
      *why = "a batch without a context-free cut";
      break;
    }
    size_t n = b - a;
    put(tx, 0, text + a, n / 4 * 4);
    if (n % 4) {
      uint32_t t4 = 0;
      memcpy(&t4, text + a + n / 4 * 4, n % 4);
      W.wgpuQueueWriteBuffer(G.queue, tx, n / 4 * 4, &t4, 4);
    }
    uint64_t nb = (n + 4095) / 4096;
    R.pt_u[0] = (uint32_t)n;
    R.pt_u[1] = (uint32_t)nb;
    put(R.pu, 0, R.pt_u, sizeof R.pt_u);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    if (a == 0) dispatch(pass, P[0], g[0], slots / 256);
    dispatch(pass, R.Q[0], q[0], nb);
    dispatch(pass, R.Q[1], q[1], 1);
    dispatch(pass, R.Q[2], q[2], nb);
    dispatch(pass, R.Q[3], q[3], (n + 255) / 256);
    /* pieces <= n; a grid of up to 2048 workgroups strides over them */
    grid = (n + 1023) / 1024 < 2048 ? (n + 1023) / 1024 : 2048;
    dispatch(pass, P[1], g[1], grid);
    dispatch(pass, P[2], g[2], grid);
    submit_pass(enc, pass);
    rc = check_dev("word counting");
    a = b;
  }
  uint32_t st[4] = {0};
  if (!rc && !*why) rc = read_back(NULL, ws, 0, st, 16);
  if (!rc && !*why) {
    if (st[2] & 1) *why = "two words share a hash key";
    else if (st[2] & 2) *why = "the word arena is full";
    else if (st[2] & 4) *why = "the word table is full";
  }
  if (!rc && !*why) { /* the table's words into the trainer's word array */
    wo = mkbuf((uint64_t)st[1] * 16 + 16, SU, "bpe words");
    wb[6] = wo;
    WGPUBindGroup gc = bind(P[3], wub, sizeof wu, wb, 7);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    dispatch(pass, P[3], gc, slots / 256);
    submit_pass(enc, pass);
    W.wgpuBindGroupRelease(gc);
    rc = check_dev("word compaction");
  }
  for (int i = 0; i < 4; i++) W.wgpuBindGroupRelease(q[i]);
  for (int i = 0; i < 3; i++) W.wgpuBindGroupRelease(g[i]);
  drop(&wub), drop(&tx), drop(&pc), drop(&mk), drop(&lg), drop(&ps), drop(&cn), drop(&hg), drop(&tab), drop(&ws);
  drop(&dummy), drop(&R.pu);
  if (rc || *why) {
    drop(&ar), drop(&wo);
    return rc ? -1 : 1;
  }
  *sym = ar;
  *words = wo;
  *nw = st[1];
  *nsym = st[0];
  return 0;
}

/* One span's pieces, (start, length) relative to the segment's first byte `seg`. */
typedef struct {
  uint32_t *v;
  size_t n, cap;
  const char *seg;
} span_pcs;

static int span_piece(void *ud, const char *s, size_t n) {
  span_pcs *p = ud;
  if (p->n + 2 > p->cap) {
    p->cap = p->cap ? p->cap * 2 : 1024;
    p->v = tz_realloc(p->v, p->cap * sizeof *p->v);
  }
  p->v[p->n++] = (uint32_t)(s - p->seg);
  p->v[p->n++] = (uint32_t)n;
  return 0;
}

/* A segment's pieces, concatenated in text order. */
typedef struct {
  uint32_t *pcs;
  size_t np;
  const char *seg;
} seg_pcs;

int tz_tok_encode_webgpu(const tz_tokenizer *t, const char *text, size_t len, int allow_special, int32_t **ids,
                         size_t *n_ids) {
  *ids = NULL;
  *n_ids = 0;
  double t_start = wall();
  memset(&last_enc, 0, sizeof last_enc);
  if (len >= 0xffffffffu) return tz_err("tokenizer: text of %zu bytes is too long for 32-bit piece offsets", len);
  if (!tz_tok_webgpu_available()) return -1;
  enc_run R;
  memset(&R, 0, sizeof R);
  R.t = t;
  /* the kernels compile on Dawn's workers while the host builds the tables */
  pipelines_start("bpe_encode", encode_entries);
  if (!getenv("TEZGAH_TOK_GPU_PRETOK") || strcmp(getenv("TEZGAH_TOK_GPU_PRETOK"), "cpu"))
    pipelines_start("bpe_pretok", pretok_entries);
  if (build_tables(t, &R.tb)) return -1;
  int nthr = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) nthr = omp_get_max_threads();
#endif
  uint64_t seg = SEGMENT;
  const char *env = getenv("TEZGAH_TOK_GPU_SEGMENT");
  if (env && atoll(env) > 0) seg = (uint64_t)atoll(env);
  const char *eot = t->eot >= 0 && allow_special ? t->tok[t->eot] : NULL;
  size_t eotn = eot ? t->tok_len[t->eot] : 0;
  uint64_t lim = bind_limit();
  R.ub = mkbuf(sizeof R.tb.u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "bpe uniforms");
  R.B[0] = sbuf(R.tb.n * 4 + 4, "bpe tables");
  put(R.B[0], 0, R.tb.v, R.tb.n * 4);
  free(R.tb.v);
  R.tb.v = NULL;
  int rc = 0;
  for (int i = 0; i < 5; i++)
    if (!(R.P[i] = pipeline("bpe_encode", encode_entries[i]))) rc = -1;
  /* every id covers >= 1 byte of text: room for all of them up front (pages are touched only
   * as ids arrive), so the ids are never copied again */
  R.out.cap = len + 1;
  R.out.v = tz_malloc(R.out.cap * sizeof *R.out.v);
  /* Pre-tokenization on the GPU when it can (the usual case): the host only cuts the text into
   * batches of about seg bytes at context-free boundaries, uploads them and copies the ids out
   * (two batches in flight). The GPU's scratch takes 36 bytes per byte of text (bpe_encode's
   * long-piece heap at 9 u32 per byte), which bounds a batch. */
  R.cap = (lim - 64) / 36 < (64u << 20) ? (lim - 64) / 36 : (64u << 20);
  env = getenv("TEZGAH_TOK_GPU_BATCH_CAP"); /* tests: smaller batches */
  if (env && atoll(env) > 0 && (uint64_t)atoll(env) < R.cap) R.cap = (uint64_t)atoll(env);
  size_t *cuts = NULL, ncut = 0;
  if (!rc && gpu_pretok_setup(&R, eot, eotn)) {
    size_t target = seg < R.cap / 2 ? seg : R.cap / 2, a = 0, cap = 0;
    while (a < len) {
      size_t b = next_cut(text, len, a, target, R.cap, eot, eotn);
      if (!b) { /* no context-free cut within a batch: the CPU pre-tokenizes this call */
        free(cuts);
        cuts = NULL;
        ncut = 0;
        break;
      }
      if (ncut == cap) cap = cap ? 2 * cap : 64, cuts = tz_realloc(cuts, cap * sizeof *cuts);
      cuts[ncut++] = b;
      a = b;
    }
    last_enc.gpu_pretok = a >= len;
  }
  /* else: spans of about seg / (4 nthr) bytes for the CPU pre-tokenizer: each segment gives
   * every thread several spans to balance (the CPU encoder's larger chunks would leave threads
   * idle within a segment); a batch holds at most `cap` bytes of text and as many pieces (pieces
   * are >= 1 byte, an EOT piece 13): its ids (<= 1 per byte) and the per-byte id slots must fit
   * one binding */
  tz_span *sp = NULL;
  size_t nsp = 0;
  if (!last_enc.gpu_pretok) {
    size_t chunk = seg / (4 * (uint64_t)nthr);
    if (chunk < (64u << 10)) chunk = 64u << 10;
    if (chunk > (1u << 20)) chunk = 1u << 20;
    if (nthr == 1) chunk = SIZE_MAX;
    nsp = tz_text_spans_chunk(text, len, eot, eotn, chunk, &sp);
    R.cap = lim / 4 - 16 < (64u << 20) ? lim / 4 - 16 : (64u << 20);
  } else {
    double f0 = wall();
    for (size_t k = 0, a = 0; k < ncut && !rc; a = cuts[k++]) rc = feed_batch_gpu(&R, text + a, cuts[k] - a);
    last_enc.feed_s = wall() - f0;
    free(cuts);
  }
  /* The pipeline: segment k (spans [si, sj), up to seg bytes) is pre-tokenized by all threads
   * while the master thread feeds segment k-1 to the GPU (upload, submit, finish the batch
   * before, copy its ids out) and then joins the pre-tokenization; the spans' pieces are then
   * concatenated in parallel. */
  seg_pcs prev = {0};
  size_t si = 0;
  char errmsg[TZ_ERR_MAX] = "";
  while (!rc && (si < nsp || prev.pcs)) {
    size_t sj = si;
    if (si < nsp) {
      sj = si + 1;
      while (sj < nsp && sp[sj].b - sp[si].a <= seg) sj++;
    }
    size_t ns = sj - si;
    span_pcs *parts = tz_calloc(ns ? ns : 1, sizeof *parts);
    size_t *off = tz_malloc((ns + 1) * sizeof *off);
    seg_pcs cur = {NULL, 0, si < nsp ? text + sp[si].a : NULL};
    int feed_rc = 0, failed = 0;
    double t0 = wall();
#pragma omp parallel num_threads(nthr) if (nthr > 1)
    {
#pragma omp master
      {
        if (prev.pcs) {
          double f0 = wall();
          feed_rc = feed_segment(&R, prev.seg, prev.pcs, prev.np);
          if (feed_rc) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
          last_enc.feed_s += wall() - f0;
        }
      }
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < ns; i++) {
        const tz_span *x = &sp[si + i];
        span_pcs *p = &parts[i];
        p->seg = cur.seg;
        p->cap = (x->b - x->a) / 2 + 64; /* ~ 2 words per 3.5 bytes: rarely regrown */
        p->v = tz_malloc(p->cap * sizeof *p->v);
        if (x->b > x->a && tz_pretok_each(t->re, text + x->a, x->b - x->a, span_piece, p)) {
#pragma omp critical(tz_tok_gpu_err)
          {
            if (!failed) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
            failed = 1;
          }
        }
        if (x->eot_after) {
          span_piece(p, text + x->b, 0);
          p->v[p->n - 1] = EMPTY;
        }
      }
#pragma omp single
      {
        off[0] = 0;
        for (size_t i = 0; i < ns; i++) off[i + 1] = off[i] + parts[i].n;
        cur.np = off[ns] / 2;
        cur.pcs = ns ? tz_malloc((off[ns] ? off[ns] : 1) * sizeof *cur.pcs) : NULL;
      }
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < ns; i++) {
        if (parts[i].n) memcpy(cur.pcs + off[i], parts[i].v, parts[i].n * sizeof *cur.pcs);
        free(parts[i].v);
      }
    }
    last_enc.pretok_s += wall() - t0;
    if (ns) last_enc.segments++;
    free(parts);
    free(off);
    free(prev.pcs);
    prev = cur;
    si = sj;
    if (feed_rc || failed) rc = tz_err("%s", errmsg);
  }
  free(prev.pcs);
  double d0 = wall();
  int rc2 = finish_all(R.S, &R.out);
  last_enc.drain_s = wall() - d0;
  if (!rc) rc = rc2;
  free(sp), free(R.lng), free(R.local);
  drop(&R.ub);
  for (int i = 0; i < 8; i++) drop(&R.B[i]);
  for (int i = 0; i < 2; i++) drop(&R.S[i].rb);
  for (int i = 0; i < 3; i++) drop(&R.PB[i]);
  drop(&R.pu);
  last_enc.total_s = wall() - t_start;
  if (rc) {
    free(R.out.v);
    return -1;
  }
  *ids = tz_realloc(R.out.v, (R.out.n ? R.out.n : 1) * sizeof(int32_t));
  *n_ids = R.out.n;
  return 0;
}

int tz_tok_decode_webgpu(const tz_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->vocab_size)
      return tz_err("tokenizer: token id %d out of range (vocab size %d)", ids[i], t->vocab_size);
  if (!tz_tok_webgpu_available()) return -1;
  enc_tables tb;
  if (build_tables(t, &tb)) return -1;
  if (n == 0) {
    free(tb.v);
    *text = tz_calloc(1, 1);
    return 0;
  }
  if (n >= (1u << 31) || too_big("the ids", n * 4)) {
    free(tb.v);
    return n >= (1u << 31) ? tz_err("webgpu tokenizer: %zu ids are too many for one decode", n) : -1;
  }
  uint64_t nblocks = (n + 4095) / 4096;
  tb.u[10] = (uint32_t)n;
  tb.u[11] = (uint32_t)nblocks;
  WGPUBuffer ub = mkbuf(sizeof tb.u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "bpe uniforms");
  WGPUBuffer B[8] = {0};
  B[0] = sbuf(tb.n * 4 + 4, "bpe tables");
  B[1] = sbuf(16, "bpe text");
  B[2] = sbuf(16, "bpe pieces");
  B[3] = sbuf(n * 4, "bpe ids");
  B[4] = sbuf(nblocks * 4 + 4, "bpe block sums");
  B[5] = sbuf(16, "bpe long pieces");
  B[6] = sbuf(16, "bpe scratch");
  B[7] = sbuf(16, "bpe compacted ids");
  put(B[0], 0, tb.v, tb.n * 4);
  free(tb.v);
  put(B[3], 0, ids, n * 4);
  put(ub, 0, tb.u, sizeof tb.u);
  tg_pipe *pl = pipeline("bpe_encode", "dec_len"), *psc = pipeline("bpe_encode", "dec_scan"),
          *pw = pipeline("bpe_encode", "dec_write");
  int rc = (!pl || !psc || !pw) ? -1 : 0;
  uint32_t total = 0;
  char *s = NULL;
  if (!rc) {
    WGPUBindGroup g1 = bind(pl, ub, sizeof tb.u, B, 8), g2 = bind(psc, ub, sizeof tb.u, B, 8);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    dispatch(pass, pl, g1, nblocks);
    dispatch(pass, psc, g2, 1);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    rc = read_back(enc, B[4], nblocks * 4, &total, 4);
    W.wgpuBindGroupRelease(g1);
    W.wgpuBindGroupRelease(g2);
  }
  if (!rc && (rc = too_big("the decoded bytes", (uint64_t)total + 16)) == 0) {
    drop(&B[1]);
    B[1] = sbuf((uint64_t)total + 16, "bpe text"); /* zero-initialized */
    WGPUBindGroup g3 = bind(pw, ub, sizeof tb.u, B, 8);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(G.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    dispatch(pass, pw, g3, nblocks);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    s = tz_malloc((size_t)total + 8);
    rc = read_back(enc, B[1], 0, s, ((size_t)total + 3) / 4 * 4);
    W.wgpuBindGroupRelease(g3);
  }
  drop(&ub);
  for (int i = 0; i < 8; i++) drop(&B[i]);
  if (rc) {
    free(s);
    return -1;
  }
  s[total] = 0;
  *text = s;
  *len = total;
  return 0;
}

/* ---- backend choice with CPU fallback ---- */

/* The reason in a fallback notice, without the "webgpu tokenizer: " / "webgpu: " that the
 * error carries for callers on their own: the notice names the task and WebGPU already
 * ("tezgah: encoding on WebGPU: <reason>; using the CPU"), one prefix. */
static const char *why_bare(const char *msg) {
  static const char *const prefixes[] = {"webgpu tokenizer: ", "webgpu: "};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(msg, prefixes[i], strlen(prefixes[i]))) msg += strlen(prefixes[i]);
  return msg;
}

static void fallback_notice(const char *what, const char *why) {
  fprintf(stderr, "tezgah: %s on WebGPU: %s; using the CPU\n", what, why_bare(why));
}

static int want_gpu(const char *backend, const char *what) {
  if (!backend || !strcmp(backend, "cpu")) return 0;
  if (tz_tok_webgpu_available()) return 1;
  fprintf(stderr, "tezgah: %s: WebGPU unavailable (%s); using the CPU\n", what, why_bare(tz_errmsg()));
  return 0;
}

int tz_tok_backend_check(const char *backend) {
  if (!backend || !strcmp(backend, "cpu") || !strcmp(backend, "webgpu")) return 0;
  return tz_err("unknown backend '%s' for tokenizing (available: cpu, webgpu)", backend);
}

static const char *last_train = "cpu";
const char *tz_tok_train_ran_on(void) { return last_train; }

int tz_tok_train_on(const char *backend, const char *text, size_t len, int vocab_size, tz_tokenizer **out) {
  last_train = "cpu";
  if (tz_tok_backend_check(backend)) return -1;
  if (want_gpu(backend, "tokenizer training")) {
    char why[160];
    /* the limit that applies, with the value that exceeds it */
    if (vocab_size > 65536) {
      snprintf(why, sizeof why, "vocab size %d is above the GPU trainer's limit of 65536", vocab_size);
      fallback_notice("tokenizer training", why);
    } else if (len >= (1u << 31)) {
      snprintf(why, sizeof why, "%zu bytes of text are above the GPU trainer's limit of 2 GiB", len);
      fallback_notice("tokenizer training", why);
    } else {
      if (tz_tok_train_webgpu(text, len, vocab_size, out, NULL) == 0) {
        last_train = "webgpu";
        return 0;
      }
      fallback_notice("tokenizer training", tz_errmsg());
    }
  }
  return tz_tok_train(text, len, vocab_size, out);
}

int tz_tok_encode_on(const char *backend, const tz_tokenizer *t, const char *text, size_t len, int allow_special,
                     int32_t **ids, size_t *n_ids) {
  if (tz_tok_backend_check(backend)) return -1;
  if (t->kind == TZ_TOK_BYTELEVEL && want_gpu(backend, "encoding")) {
    if (t->vocab_size > 65536) {
      char why[96];
      snprintf(why, sizeof why, "vocab size %d is above the GPU encoder's limit of 65536", t->vocab_size);
      fallback_notice("encoding", why);
    } else {
      if (tz_tok_encode_webgpu(t, text, len, allow_special, ids, n_ids) == 0) return 0;
      fallback_notice("encoding", tz_errmsg());
    }
  }
  return tz_tok_encode(t, text, len, allow_special, ids, n_ids);
}

int tz_tok_decode_on(const char *backend, const tz_tokenizer *t, const int32_t *ids, size_t n, char **text,
                     size_t *len) {
  if (tz_tok_backend_check(backend)) return -1;
  if (t->kind == TZ_TOK_BYTELEVEL && want_gpu(backend, "decoding")) {
    for (size_t i = 0; i < n; i++)
      if (ids[i] < 0 || ids[i] >= t->vocab_size) return tz_tok_decode(t, ids, n, text, len); /* its error */
    if (t->vocab_size > 65536) {
      char why[96];
      snprintf(why, sizeof why, "vocab size %d is above the GPU decoder's limit of 65536", t->vocab_size);
      fallback_notice("decoding", why);
    } else {
      if (tz_tok_decode_webgpu(t, ids, n, text, len) == 0) return 0;
      fallback_notice("decoding", tz_errmsg());
    }
  }
  return tz_tok_decode(t, ids, n, text, len);
}
