/* The WebGPU tokenizer's GPU context (tok_webgpu_ctx.h): its own device (Dawn loaded by
 * backend/webgpu/dawn_load.c), separate from the model backend's op dispatch; created once per
 * process on first use. Kernels declare their own bindings and reference all of them in every
 * entry point, so one auto layout per file serves every entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_webgpu_ctx.h"

typedef struct {
  const char *name, *src;
} tz_wgsl_file;
extern const tz_wgsl_file tz_wgsl_files[];
extern const int tz_wgsl_nfiles;

tg_context tz_tg_ctx;

static void on_error(WGPUDevice const *d, WGPUErrorType type, WGPUStringView m, void *u1, void *u2) {
  if (tz_tg_ctx.failed) return;
  tz_tg_ctx.failed = 1;
  char msg[900];
  tz_wgpu_sv_copy(msg, sizeof msg, m);
  snprintf(tz_tg_ctx.err, sizeof tz_tg_ctx.err, "%s error: %s", type == WGPUErrorType_Validation ? "validation"
                                                : type == WGPUErrorType_OutOfMemory ? "out of memory" : "internal", msg);
}
static void on_lost(WGPUDevice const *d, WGPUDeviceLostReason r, WGPUStringView m, void *u1, void *u2) {
  if (r == WGPUDeviceLostReason_Destroyed || r == WGPUDeviceLostReason_CallbackCancelled || tz_tg_ctx.failed) return;
  tz_tg_ctx.failed = 1;
  char msg[900];
  tz_wgpu_sv_copy(msg, sizeof msg, m);
  snprintf(tz_tg_ctx.err, sizeof tz_tg_ctx.err, "device lost: %s", msg);
}

int tz_tg_wait_future(WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  for (int i = 0; i < 3600; i++) {
    WGPUWaitStatus s = W.wgpuInstanceWaitAny(tz_tg_ctx.inst, 1, &wi, 1000000000ull);
    if (s == WGPUWaitStatus_Success && wi.completed) return 0;
    if (s != WGPUWaitStatus_TimedOut) return -1;
    W.wgpuInstanceProcessEvents(tz_tg_ctx.inst);
    if (tz_tg_ctx.failed) return -1;
  }
  return -1;
}


static int open_device(void) {
  if (tz_wgpu_load() != 0) return -1;
  tz_tg_ctx.inst = tz_wgpu_create_instance(); /* timed WaitAny, in the loaded build's layout */
  if (!tz_tg_ctx.inst) return tz_err("webgpu: wgpuCreateInstance failed");
  WGPURequestAdapterOptions o;
  memset(&o, 0, sizeof o);
  o.featureLevel = WGPUFeatureLevel_Core;
  o.powerPreference = WGPUPowerPreference_HighPerformance;
  o.backendType = WGPUBackendType_Vulkan;
  tz_wgpu_req r = {0};
  WGPURequestAdapterCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_wgpu_on_adapter, &r, NULL};
  if (tz_tg_wait_future(W.wgpuInstanceRequestAdapter(tz_tg_ctx.inst, &o, ci)) || r.status != WGPURequestAdapterStatus_Success ||
      !r.handle)
    return tz_err("webgpu: no WebGPU adapter (Vulkan) found%s%s", r.msg[0] ? ": " : "", r.msg);
  tz_tg_ctx.adapter = r.handle;
  WGPUAdapterInfo info;
  memset(&info, 0, sizeof info);
  W.wgpuAdapterGetInfo(tz_tg_ctx.adapter, &info);
  tz_wgpu_sv_copy(tz_tg_ctx.desc, sizeof tz_tg_ctx.desc, info.device);
  WGPULimits lim;
  memset(&lim, 0, sizeof lim);
  W.wgpuAdapterGetLimits(tz_tg_ctx.adapter, &lim);
  lim.nextInChain = NULL;
  if (lim.maxStorageBuffersPerShaderStage < 9)
    return tz_err("webgpu: adapter %s offers %u storage buffers per shader stage; the tokenizer kernels need 9",
                  tz_tg_ctx.desc, lim.maxStorageBuffersPerShaderStage);
  WGPUDeviceDescriptor dd;
  memset(&dd, 0, sizeof dd);
  dd.label = tz_wgpu_sv("tezgah tokenizer");
  dd.requiredLimits = &lim;
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  r = (tz_wgpu_req){0};
  WGPURequestDeviceCallbackInfo di = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_wgpu_on_device, &r, NULL};
  if (tz_tg_wait_future(W.wgpuAdapterRequestDevice(tz_tg_ctx.adapter, &dd, di)) || r.status != WGPURequestDeviceStatus_Success ||
      !r.handle)
    return tz_err("webgpu: cannot create a device on %s: %s", tz_tg_ctx.desc, r.msg);
  tz_tg_ctx.dev = r.handle;
  tz_tg_ctx.queue = W.wgpuDeviceGetQueue(tz_tg_ctx.dev);
  W.wgpuDeviceGetLimits(tz_tg_ctx.dev, &tz_tg_ctx.lim);
  return 0;
}

int tz_tok_webgpu_available(void) {
  if (tz_tg_ctx.state == 0) {
    tz_tg_ctx.state = open_device() == 0 ? 1 : -1;
    if (tz_tg_ctx.state < 0) snprintf(tz_tg_ctx.why, sizeof tz_tg_ctx.why, "%s", tz_errmsg());
  }
  if (tz_tg_ctx.state < 0) tz_err("%s", tz_tg_ctx.why);
  return tz_tg_ctx.state > 0;
}

const char *tz_tok_webgpu_device(void) { return tz_tg_ctx.state > 0 ? tz_tg_ctx.desc : ""; }

/* ---- helpers ---- */
int tz_tg_check_dev(const char *what) {
  W.wgpuInstanceProcessEvents(tz_tg_ctx.inst);
  if (tz_tg_ctx.failed) {
    tz_tg_ctx.failed = 0;
    return tz_err("webgpu tokenizer: %s: %s", what, tz_tg_ctx.err);
  }
  return 0;
}

WGPUBuffer tz_tg_mkbuf(uint64_t size, WGPUBufferUsage usage, const char *label) {
  size = (size + 15) / 16 * 16;
  if (size < 16) size = 16;
  WGPUBufferDescriptor d = {NULL, tz_wgpu_sv(label), usage, size, 0};
  return W.wgpuDeviceCreateBuffer(tz_tg_ctx.dev, &d);
}
WGPUBuffer tz_tg_sbuf(uint64_t size, const char *label) {
  return tz_tg_mkbuf(size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, label);
}
void tz_tg_put(WGPUBuffer b, uint64_t off, const void *data, size_t n) {
  if (n) W.wgpuQueueWriteBuffer(tz_tg_ctx.queue, b, off, data, (n + 3) / 4 * 4);
}
void tz_tg_drop(WGPUBuffer *b) {
  if (*b) {
    W.wgpuBufferDestroy(*b);
    W.wgpuBufferRelease(*b);
    *b = NULL;
  }
}

void tz_tg_on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
  *(int *)u1 = status == WGPUMapAsyncStatus_Success ? 1 : -1;
}

/* Submit enc (may be NULL), then copy n bytes (multiple of 4) of src at off to dst. */
int tz_tg_read_back(WGPUCommandEncoder enc, WGPUBuffer src, uint64_t off, void *dst, size_t n) {
  size_t m = (n + 7) / 8 * 8;
  WGPUBuffer rb = tz_tg_mkbuf(m, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "tokenizer readback");
  if (!enc) enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, src, off, rb, 0, (n + 3) / 4 * 4);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(tz_tg_ctx.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  int st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_tg_on_mapped, &st, NULL};
  int rc = 0;
  if (tz_tg_wait_future(W.wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, m, ci)) || st != 1) {
    rc = tz_tg_check_dev("readback");
    if (!rc) rc = tz_err("webgpu tokenizer: readback of %zu bytes failed", n);
  } else {
    const void *p = W.wgpuBufferGetConstMappedRange(rb, 0, m);
    if (p) memcpy(dst, p, n);
    W.wgpuBufferUnmap(rb);
    rc = p ? tz_tg_check_dev("readback") : tz_err("webgpu tokenizer: readback has no mapped range");
  }
  tz_tg_drop(&rb);
  return rc;
}

/* End compute pass `pass` of enc and submit enc. */
void tz_tg_submit_pass(WGPUCommandEncoder enc, WGPUComputePassEncoder pass) {
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(tz_tg_ctx.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
}

static void on_pipe(WGPUCreatePipelineAsyncStatus st, WGPUComputePipeline pipe, WGPUStringView m, void *u1, void *u2) {
  tg_pipe *p = u1;
  p->status = st;
  p->pipe = st == WGPUCreatePipelineAsyncStatus_Success ? pipe : NULL;
  tz_wgpu_sv_copy(p->msg, sizeof p->msg, m);
}

/* Start creating the pipeline of `entry` in bpe file `file` (no-op when it exists or is under
 * way): Dawn compiles it on its worker threads, so the driver's compile (most of a first
 * process's start-up on a cold shader cache) overlaps the host's and the GPU's other work;
 * tz_tg_pipeline() waits for it. */
static tg_pipe *pipeline_start(const char *file, const char *entry) {
  for (int i = 0; i < tz_tg_ctx.npipes; i++)
    if (!strcmp(tz_tg_ctx.pipes[i].file, file) && !strcmp(tz_tg_ctx.pipes[i].entry, entry)) return &tz_tg_ctx.pipes[i];
  const char *src = NULL;
  for (int i = 0; i < tz_wgsl_nfiles; i++)
    if (!strcmp(tz_wgsl_files[i].name, file)) src = tz_wgsl_files[i].src;
  TZ_ASSERT(src && tz_tg_ctx.npipes < (int)(sizeof tz_tg_ctx.pipes / sizeof *tz_tg_ctx.pipes));
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
  WGPUShaderSourceWGSL ws = {{NULL, WGPUSType_ShaderSourceWGSL}, tz_wgpu_sv(src)};
  WGPUShaderModuleDescriptor md = {&ws.chain, tz_wgpu_sv(file)};
  WGPUShaderModule mod = W.wgpuDeviceCreateShaderModule(tz_tg_ctx.dev, &md);
  free(full);
  WGPUComputePipelineDescriptor d;
  memset(&d, 0, sizeof d);
  d.label = tz_wgpu_sv(entry);
  d.compute.module = mod;
  d.compute.entryPoint = tz_wgpu_sv(entry);
  tg_pipe *p = &tz_tg_ctx.pipes[tz_tg_ctx.npipes++];
  memset(p, 0, sizeof *p);
  p->file = file;
  p->entry = entry;
  p->pending = 1;
  WGPUCreateComputePipelineAsyncCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_pipe, p, NULL};
  p->fut = W.wgpuDeviceCreateComputePipelineAsync(tz_tg_ctx.dev, &d, ci);
  W.wgpuShaderModuleRelease(mod);
  return p;
}

/* The pipeline of `entry` in bpe file `file`, made (or waited for) now; NULL on an error. */
tg_pipe *tz_tg_pipeline(const char *file, const char *entry) {
  tg_pipe *p = pipeline_start(file, entry);
  if (p->pending) {
    p->pending = 0;
    if (tz_tg_wait_future(p->fut)) p->pipe = NULL; /* (on_pipe sets pipe only on success) */
    if (tz_tg_check_dev(entry)) return NULL;
    if (p->pipe) p->bgl = W.wgpuComputePipelineGetBindGroupLayout(p->pipe, 0);
  }
  if (!p->pipe) {
    tz_err("webgpu tokenizer: pipeline %s: %s", entry, p->msg[0] ? p->msg : "creation failed");
    return NULL;
  }
  return p;
}

/* pipeline_start for every entry point in `entries` (NULL-terminated) of bpe file `file`. */
void tz_tg_pipelines_start(const char *file, const char *const *entries) {
  for (int i = 0; entries[i]; i++) pipeline_start(file, entries[i]);
}

/* A bind group for pipeline p: binding 0 = uniform u, 1..n = storage buffers b[] (whole). */
WGPUBindGroup tz_tg_bind(tg_pipe *p, WGPUBuffer u, uint64_t usize, WGPUBuffer *b, int n) {
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
  WGPUBindGroupDescriptor d = {NULL, tz_wgpu_sv(NULL), p->bgl, (size_t)n + 1, e};
  return W.wgpuDeviceCreateBindGroup(tz_tg_ctx.dev, &d);
}

void tz_tg_dispatch(WGPUComputePassEncoder pass, tg_pipe *p, WGPUBindGroup bg, uint64_t groups) {
  if (!groups) return;
  uint32_t gx = groups < 65535 ? (uint32_t)groups : 65535, gy = (uint32_t)((groups + gx - 1) / gx);
  W.wgpuComputePassEncoderSetPipeline(pass, p->pipe);
  W.wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, NULL);
  W.wgpuComputePassEncoderDispatchWorkgroups(pass, gx, gy, 1);
}

uint32_t tz_tg_hmix(uint32_t x) {
  uint32_t h = x * 0x9e3779b1u;
  h ^= h >> 15;
  h *= 0x85ebca77u;
  return h ^ (h >> 13);
}
uint32_t tz_tg_hbytes(const unsigned char *s, size_t n) {
  uint32_t h = 0;
  for (size_t i = 0; i < n; i++) h = h * HP + s[i] + 1u;
  return h;
}
uint64_t tz_tg_pow2_at_least(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/* The largest buffer one storage binding can take on this device (bytes). */
uint64_t tz_tg_bind_limit(void) {
  return tz_tg_ctx.lim.maxStorageBufferBindingSize < tz_tg_ctx.lim.maxBufferSize ? tz_tg_ctx.lim.maxStorageBufferBindingSize
                                                                 : tz_tg_ctx.lim.maxBufferSize;
}

int tz_tg_too_big(const char *what, uint64_t bytes) {
  if (bytes <= tz_tg_ctx.lim.maxStorageBufferBindingSize && bytes <= tz_tg_ctx.lim.maxBufferSize) return 0;
  return tz_err("webgpu tokenizer: %s needs %llu bytes, above this adapter's storage binding limit %llu",
                what, (unsigned long long)bytes, (unsigned long long)tz_tg_ctx.lim.maxStorageBufferBindingSize);
}

double tz_tg_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The reason in a fallback notice, without the "webgpu tokenizer: " / "webgpu: " that the
 * error carries for callers on their own: the notice names the task and WebGPU already
 * ("tezgah: encoding on WebGPU: <reason>; using the CPU"), one prefix. */
const char *tz_tg_why_bare(const char *msg) {
  static const char *const prefixes[] = {"webgpu tokenizer: ", "webgpu: "};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(msg, prefixes[i], strlen(prefixes[i]))) msg += strlen(prefixes[i]);
  return msg;
}
