/* The WebGPU backend inside WebAssembly: the table `tz_wgpu` (webgpu_api.h) filled with
 * functions imported from the page's JavaScript (web/wgpu_imports.mjs, on navigator.gpu)
 * instead of a Dawn library. The backend's op code is the same; only this loader differs.
 *
 * Compiled into wasm32 builds made with TZ_WASM_WEBGPU (scripts/build_wasm.sh --webgpu) only;
 * other builds get an empty translation unit. dawn_load.c's tz_wgpu_load() calls
 * tz_wgpu_wasm_load() there.
 *
 * The contract with the JavaScript side (module "wgpu"), docs/BROWSER.md says more:
 *  - Handles are small integers (indices into a JavaScript table of GPU objects), 0 is NULL.
 *  - Functions whose webgpu.h signature has only scalars and pointers are imported directly
 *    under their webgpu.h name (wgpuDeviceCreateBuffer, ...): JavaScript reads the descriptor
 *    structs from wasm memory. Functions that pass a struct by value, return a status or a
 *    future, name features or allocate memory are C wrappers here around "tzw_*" imports, so
 *    that every webgpu.h constant and every allocation stays on the C side.
 *  - Struct layouts are never written into the JavaScript: the first import call,
 *    tzw_init(json, len), hands it a JSON description of every struct and member the backend
 *    passes (offsetof / sizeof of the wasm32 compile of webgpu_api.h's TZ_WGPU_MEMBERS, plus
 *    the event struct below) and the constants it needs; the JavaScript reads memory only
 *    through those names and refuses a name that is not there (tests/wasm/ checks that every
 *    name it uses is present).
 *  - Callbacks are pulled, never pushed: JavaScript never calls into wasm. When a future
 *    completes (a wait) or events are processed, the JavaScript queues the callback's event; the
 *    wrappers of wgpuInstanceWaitAny / wgpuInstanceProcessEvents then take each event with
 *    tzw_next_event() and call the C callback here, with webgpu.h's status values.
 *  - wgpuInstanceWaitAny is the one suspending import (JSPI, WebAssembly.Suspending): the C
 *    code blocks while the page awaits the GPU's promise; the program's entry must be called
 *    through WebAssembly.promising().
 *  - Mapped ranges are copies: wgpuBufferGetConstMappedRange allocates wasm memory, the
 *    JavaScript copies the mapped bytes into it, and wgpuBufferUnmap frees it.
 */
#if defined(__wasm__) && defined(TZ_WASM_WEBGPU)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"

_Static_assert(sizeof(void *) == 4, "wasm32: handles and pointers are 32-bit");

#define TZW_IMPORT(nm) __attribute__((import_module("wgpu"), import_name(nm)))

/* Status values the wrappers report for failures (webgpu.h, Dawn 7adb0440d5:
 * tests/fixtures/dawn_abi_facts_bun.txt; webgpu_api.h declares only the Success values). */
#define TZW_MapAsyncStatus_Error 0x3u
#define TZW_QueueWorkDoneStatus_Error 0x3u
#define TZW_RequestAdapterStatus_Unavailable 0x3u
#define TZW_RequestDeviceStatus_Error 0x3u
#define TZW_CreatePipelineAsyncStatus_ValidationError 0x3u
#define TZW_WaitStatus_Error 0x3u
#define TZW_Status_Error 0x2u /* WGPUStatus_Error */

/* An event the JavaScript hands back (tzw_next_event): one callback to call. */
enum {
  TZW_EV_STATUS = 1, /* fn(status, message, u1, u2): buffer map, queue work done */
  TZW_EV_ADAPTER = 2, /* fn(status, adapter, message, u1, u2) */
  TZW_EV_DEVICE = 3,  /* fn(status, device, message, u1, u2) */
  TZW_EV_PIPELINE = 4, /* fn(status, pipeline, message, u1, u2): createComputePipelineAsync */
  TZW_EV_ERROR = 5,  /* uncaptured error: fn(&device, type, message, u1, u2) */
  TZW_EV_LOST = 6,   /* device lost: fn(&device, reason, message, u1, u2) */
};
/* error kinds (TZW_EV_ERROR's code) and lost reasons (TZW_EV_LOST's code) as JavaScript sees them */
enum { TZW_ERR_VALIDATION = 1, TZW_ERR_OOM = 2, TZW_ERR_INTERNAL = 3, TZW_ERR_UNKNOWN = 4 };
enum { TZW_LOST_DESTROYED = 1, TZW_LOST_UNKNOWN = 2 };

#define TZW_MSG_CAP 1024
typedef struct tzw_event {
  uint32_t kind;   /* TZW_EV_* */
  uint32_t ok;     /* 1: the operation succeeded */
  uint32_t code;   /* TZW_ERR_* / TZW_LOST_* */
  uint32_t handle; /* the new object (adapter, device, pipeline), 0 if none */
  uint32_t device; /* the device of an error / lost event */
  void *fn, *u1, *u2;
  uint32_t msg_len; /* bytes written into msg (at most TZW_MSG_CAP - 1; nul-terminated) */
  char msg[TZW_MSG_CAP];
} tzw_event;

/* ---- the imports ---- */
/* Hand the layout (JSON, below) to the JavaScript; 1 if navigator.gpu exists, else 0 and the
 * reason in why[0..cap). */
TZW_IMPORT("tzw_init") int tzw_init(const char *json, size_t len, char *why, size_t cap);
/* Futures: the JavaScript returns its future id (> 0); the callback info is read from *ci. */
TZW_IMPORT("tzw_instance_request_adapter")
uint32_t tzw_instance_request_adapter(WGPUInstance inst, const WGPURequestAdapterOptions *o,
                                      const WGPURequestAdapterCallbackInfo *ci);
/* feats: the WebGPU names of the required features, comma-separated */
TZW_IMPORT("tzw_adapter_request_device")
uint32_t tzw_adapter_request_device(WGPUAdapter a, const WGPUDeviceDescriptor *d, const char *feats, size_t flen,
                                    const WGPURequestDeviceCallbackInfo *ci);
TZW_IMPORT("tzw_device_create_compute_pipeline_async")
uint32_t tzw_device_create_compute_pipeline_async(WGPUDevice d, const WGPUComputePipelineDescriptor *desc,
                                                  const WGPUCreateComputePipelineAsyncCallbackInfo *ci);
TZW_IMPORT("tzw_buffer_map_async")
uint32_t tzw_buffer_map_async(WGPUBuffer b, uint32_t mode, size_t off, size_t size, const WGPUBufferMapCallbackInfo *ci);
TZW_IMPORT("tzw_queue_on_submitted_work_done")
uint32_t tzw_queue_on_submitted_work_done(WGPUQueue q, const WGPUQueueWorkDoneCallbackInfo *ci);
/* The suspending wait: marks completed futures in futures[] (their events queued); 1 if any
 * completed, 0 on timeout. */
TZW_IMPORT("tzw_wait_any") uint32_t tzw_wait_any(WGPUInstance inst, size_t n, WGPUFutureWaitInfo *futures, uint64_t timeout_ns);
/* Queue the events of completed AllowProcessEvents / AllowSpontaneous futures and device errors. */
TZW_IMPORT("tzw_process_events") void tzw_process_events(WGPUInstance inst);
/* Take one queued event into *ev (1), or 0 when none. */
TZW_IMPORT("tzw_next_event") uint32_t tzw_next_event(tzw_event *ev);
/* Adapter info: scalars into *info; string k (0 vendor, 1 architecture, 2 device, 3
 * description) into buf[0..cap) (nul-terminated), returning its full length. */
TZW_IMPORT("tzw_adapter_get_info") uint32_t tzw_adapter_get_info(WGPUAdapter a, WGPUAdapterInfo *info);
TZW_IMPORT("tzw_adapter_info_string") size_t tzw_adapter_info_string(WGPUAdapter a, uint32_t k, char *buf, size_t cap);
/* Limits of an adapter (is_device 0) or device (1) into *l: 1 on success. */
TZW_IMPORT("tzw_get_limits") uint32_t tzw_get_limits(uint32_t obj, uint32_t is_device, WGPULimits *l);
/* Does the adapter / device have the WebGPU feature `name`? */
TZW_IMPORT("tzw_has_feature") uint32_t tzw_has_feature(uint32_t obj, uint32_t is_device, const char *name, size_t len);
/* Copy bytes [off, off + size) of the mapped buffer into dst: 1, or 0 (not mapped). */
TZW_IMPORT("tzw_buffer_read_mapped") uint32_t tzw_buffer_read_mapped(WGPUBuffer b, size_t off, size_t size, void *dst);
TZW_IMPORT("tzw_buffer_unmap") void tzw_buffer_unmap(WGPUBuffer b);

/* Every function of the table as an import under its webgpu.h name: the ones used directly
 * below become imports; the declarations of the others are never referenced (no import). */
#define TZW_DECLARE(ret, name, args) TZW_IMPORT(#name) ret tzw_imp_##name args;
TZ_WGPU_FUNCS(TZW_DECLARE)
#undef TZW_DECLARE

/* the functions imported as they are (scalars and pointers only; JavaScript reads the structs) */
#define TZW_DIRECT(X)                                                                                       \
  X(wgpuCreateInstance) X(wgpuInstanceRelease) X(wgpuAdapterRelease) X(wgpuDeviceGetQueue)                  \
  X(wgpuDeviceCreateBuffer) X(wgpuDeviceCreateShaderModule) X(wgpuDeviceCreateComputePipeline)              \
  X(wgpuDeviceCreateBindGroup) X(wgpuDeviceCreateCommandEncoder) X(wgpuDeviceCreateQuerySet)                \
  X(wgpuDeviceDestroy) X(wgpuDeviceRelease) X(wgpuBufferDestroy) X(wgpuBufferRelease)                       \
  X(wgpuShaderModuleRelease) X(wgpuComputePipelineGetBindGroupLayout) X(wgpuComputePipelineRelease)         \
  X(wgpuBindGroupLayoutRelease) X(wgpuBindGroupRelease) X(wgpuCommandEncoderBeginComputePass)              \
  X(wgpuCommandEncoderCopyBufferToBuffer) X(wgpuCommandEncoderResolveQuerySet) X(wgpuCommandEncoderFinish) \
  X(wgpuCommandEncoderRelease) X(wgpuComputePassEncoderSetPipeline) X(wgpuComputePassEncoderSetBindGroup)  \
  X(wgpuComputePassEncoderDispatchWorkgroups) X(wgpuComputePassEncoderEnd)                                  \
  X(wgpuComputePassEncoderRelease) X(wgpuCommandBufferRelease) X(wgpuQueueSubmit) X(wgpuQueueWriteBuffer)   \
  X(wgpuQueueRelease) X(wgpuQuerySetDestroy) X(wgpuQuerySetRelease)

/* ---- features: webgpu_api.h's numbers (this build's table, below) <-> WebGPU's names ---- */
const tz_wgpu_abi_t tz_wgpu_abi_browser = {
    "browser", "the browser's navigator.gpu through JavaScript imports (web/wgpu_imports.mjs)",
    /* the numbers of bun's Dawn (any distinct values would do: only this file maps them) */
    0x3, 0xa, 0x11, 0x50037, sizeof(WGPUSubgroupMatrixConfigBun), NULL, 0};

static const char *feature_name(WGPUFeatureName f) {
  const tz_wgpu_abi_t *a = &tz_wgpu_abi_browser;
  if (f == a->FeatureName_TimestampQuery) return "timestamp-query";
  if (f == a->FeatureName_ShaderF16) return "shader-f16";
  if (f == a->FeatureName_Subgroups) return "subgroups";
  if (f == a->FeatureName_ChromiumExperimentalSubgroupMatrix) return "chromium-experimental-subgroup-matrix";
  return NULL;
}
static WGPUFeatureName known_features[4];
static void fill_known(void) {
  known_features[0] = tz_wgpu_abi_browser.FeatureName_TimestampQuery;
  known_features[1] = tz_wgpu_abi_browser.FeatureName_ShaderF16;
  known_features[2] = tz_wgpu_abi_browser.FeatureName_Subgroups;
  known_features[3] = tz_wgpu_abi_browser.FeatureName_ChromiumExperimentalSubgroupMatrix;
}

/* ---- events ---- */
static void deliver(tzw_event *ev) {
  WGPUStringView m = {ev->msg, ev->msg_len};
  switch (ev->kind) {
  case TZW_EV_STATUS: { /* map and work-done callbacks share this shape and their Error value */
    WGPUBufferMapCallback cb = (WGPUBufferMapCallback)ev->fn;
    if (cb) cb(ev->ok ? WGPUMapAsyncStatus_Success : TZW_MapAsyncStatus_Error, m, ev->u1, ev->u2);
    break;
  }
  case TZW_EV_ADAPTER: {
    WGPURequestAdapterCallback cb = (WGPURequestAdapterCallback)ev->fn;
    if (cb)
      cb(ev->ok ? WGPURequestAdapterStatus_Success : TZW_RequestAdapterStatus_Unavailable,
         (WGPUAdapter)(uintptr_t)ev->handle, m, ev->u1, ev->u2);
    break;
  }
  case TZW_EV_DEVICE: {
    WGPURequestDeviceCallback cb = (WGPURequestDeviceCallback)ev->fn;
    if (cb)
      cb(ev->ok ? WGPURequestDeviceStatus_Success : TZW_RequestDeviceStatus_Error, (WGPUDevice)(uintptr_t)ev->handle,
         m, ev->u1, ev->u2);
    break;
  }
  case TZW_EV_PIPELINE: {
    WGPUCreateComputePipelineAsyncCallback cb = (WGPUCreateComputePipelineAsyncCallback)ev->fn;
    if (cb)
      cb(ev->ok ? WGPUCreatePipelineAsyncStatus_Success : TZW_CreatePipelineAsyncStatus_ValidationError,
         (WGPUComputePipeline)(uintptr_t)ev->handle, m, ev->u1, ev->u2);
    break;
  }
  case TZW_EV_ERROR: {
    WGPUUncapturedErrorCallback cb = (WGPUUncapturedErrorCallback)ev->fn;
    WGPUDevice d = (WGPUDevice)(uintptr_t)ev->device;
    WGPUErrorType t = ev->code == TZW_ERR_VALIDATION ? WGPUErrorType_Validation
                      : ev->code == TZW_ERR_OOM      ? WGPUErrorType_OutOfMemory
                      : ev->code == TZW_ERR_INTERNAL ? WGPUErrorType_Internal
                                                     : WGPUErrorType_Unknown;
    if (cb) cb(&d, t, m, ev->u1, ev->u2);
    break;
  }
  case TZW_EV_LOST: {
    WGPUDeviceLostCallback cb = (WGPUDeviceLostCallback)ev->fn;
    WGPUDevice d = (WGPUDevice)(uintptr_t)ev->device;
    if (cb)
      cb(&d, ev->code == TZW_LOST_DESTROYED ? WGPUDeviceLostReason_Destroyed : WGPUDeviceLostReason_Unknown, m,
         ev->u1, ev->u2);
    break;
  }
  default:
    break;
  }
}
static void drain(void) {
  static tzw_event ev; /* static: 1 KiB off the stack; one drain at a time (single-threaded) */
  while (tzw_next_event(&ev)) deliver(&ev);
}
static WGPUFuture fut(uint32_t id) {
  WGPUFuture f = {id};
  return f;
}

/* ---- the wrappers ---- */
static WGPUFuture w_InstanceRequestAdapter(WGPUInstance inst, WGPURequestAdapterOptions const *o,
                                           WGPURequestAdapterCallbackInfo ci) {
  return fut(tzw_instance_request_adapter(inst, o, &ci));
}
static WGPUWaitStatus w_InstanceWaitAny(WGPUInstance inst, size_t n, WGPUFutureWaitInfo *futures, uint64_t timeout) {
  uint32_t r = tzw_wait_any(inst, n, futures, timeout);
  drain();
  return r == 1 ? WGPUWaitStatus_Success : r == 0 ? WGPUWaitStatus_TimedOut : TZW_WaitStatus_Error;
}
static void w_InstanceProcessEvents(WGPUInstance inst) {
  tzw_process_events(inst);
  drain();
}
static char *info_string(WGPUAdapter a, uint32_t k, WGPUStringView *out) {
  size_t n = tzw_adapter_info_string(a, k, NULL, 0);
  char *s = malloc(n + 1);
  if (!s) return NULL;
  tzw_adapter_info_string(a, k, s, n + 1);
  s[n] = 0;
  out->data = s;
  out->length = n;
  return s;
}
static WGPUStatus w_AdapterGetInfo(WGPUAdapter a, WGPUAdapterInfo *info) {
  if (!tzw_adapter_get_info(a, info)) return TZW_Status_Error;
  info_string(a, 0, &info->vendor);
  info_string(a, 1, &info->architecture);
  info_string(a, 2, &info->device);
  info_string(a, 3, &info->description);
  /* no adapter type in WebGPU: SwiftShader (the CPU rasterizer) is a CPU adapter, others unknown */
  info->adapterType = info->architecture.data && strstr(info->architecture.data, "swiftshader")
                          ? WGPUAdapterType_CPU
                          : WGPUAdapterType_Unknown;
  info->backendType = WGPUBackendType_WebGPU;
  return WGPUStatus_Success;
}
static void w_AdapterInfoFreeMembers(WGPUAdapterInfo v) {
  free((void *)v.vendor.data);
  free((void *)v.architecture.data);
  free((void *)v.device.data);
  free((void *)v.description.data);
}
static void w_AdapterPropertiesSubgroupMatrixConfigsFreeMembers(WGPUAdapterPropertiesSubgroupMatrixConfigs v) {
  /* never filled: no browser offers the feature's configurations through WebGPU's JS API */
}
static WGPUStatus w_AdapterGetLimits(WGPUAdapter a, WGPULimits *l) {
  return tzw_get_limits((uint32_t)(uintptr_t)a, 0, l) ? WGPUStatus_Success : TZW_Status_Error;
}
static WGPUStatus w_DeviceGetLimits(WGPUDevice d, WGPULimits *l) {
  return tzw_get_limits((uint32_t)(uintptr_t)d, 1, l) ? WGPUStatus_Success : TZW_Status_Error;
}
static WGPUBool has_feature(uint32_t obj, int dev, WGPUFeatureName f) {
  const char *n = feature_name(f);
  return n && tzw_has_feature(obj, (uint32_t)dev, n, strlen(n));
}
static WGPUBool w_AdapterHasFeature(WGPUAdapter a, WGPUFeatureName f) { return has_feature((uint32_t)(uintptr_t)a, 0, f); }
static WGPUBool w_DeviceHasFeature(WGPUDevice d, WGPUFeatureName f) { return has_feature((uint32_t)(uintptr_t)d, 1, f); }
/* the features this build knows by number (the others have no webgpu_api.h number) */
static void w_AdapterGetFeatures(WGPUAdapter a, WGPUSupportedFeatures *sf) {
  WGPUFeatureName *list = malloc(sizeof known_features);
  size_t n = 0;
  for (size_t i = 0; list && i < sizeof known_features / sizeof *known_features; i++)
    if (w_AdapterHasFeature(a, known_features[i])) list[n++] = known_features[i];
  sf->featureCount = n;
  sf->features = list;
}
static void w_SupportedFeaturesFreeMembers(WGPUSupportedFeatures v) { free((void *)v.features); }
static WGPUFuture w_AdapterRequestDevice(WGPUAdapter a, WGPUDeviceDescriptor const *d, WGPURequestDeviceCallbackInfo ci) {
  char feats[256];
  size_t o = 0;
  feats[0] = 0;
  for (size_t i = 0; d && i < d->requiredFeatureCount; i++) {
    const char *n = feature_name(d->requiredFeatures[i]);
    if (!n) { /* no WebGPU name: the request fails as an unknown feature would */
      n = "unknown-feature";
    }
    int k = snprintf(feats + o, sizeof feats - o, "%s%s", o ? "," : "", n);
    if (k > 0 && (size_t)k < sizeof feats - o) o += (size_t)k;
  }
  return fut(tzw_adapter_request_device(a, d, feats, o, &ci));
}
static WGPUFuture w_DeviceCreateComputePipelineAsync(WGPUDevice d, WGPUComputePipelineDescriptor const *desc,
                                                     WGPUCreateComputePipelineAsyncCallbackInfo ci) {
  return fut(tzw_device_create_compute_pipeline_async(d, desc, &ci));
}
static WGPUFuture w_BufferMapAsync(WGPUBuffer b, WGPUMapMode mode, size_t off, size_t size, WGPUBufferMapCallbackInfo ci) {
  return fut(tzw_buffer_map_async(b, (uint32_t)mode, off, size, &ci));
}
static WGPUFuture w_QueueOnSubmittedWorkDone(WGPUQueue q, WGPUQueueWorkDoneCallbackInfo ci) {
  return fut(tzw_queue_on_submitted_work_done(q, &ci));
}

/* Mapped ranges: one malloc'd copy per mapped buffer, freed at unmap (the backend maps one or
 * two buffers at a time: readback, timestamps). */
#define TZW_MAPS 16
static struct {
  WGPUBuffer b;
  void *p;
} maps[TZW_MAPS];
static void const *w_BufferGetConstMappedRange(WGPUBuffer b, size_t off, size_t size) {
  int slot = -1;
  for (int i = 0; i < TZW_MAPS && slot < 0; i++)
    if (!maps[i].b) slot = i;
  void *p = slot >= 0 ? malloc(size ? size : 1) : NULL;
  if (!p) return NULL;
  if (!tzw_buffer_read_mapped(b, off, size, p)) {
    free(p);
    return NULL;
  }
  maps[slot].b = b;
  maps[slot].p = p;
  return p;
}
static void w_BufferUnmap(WGPUBuffer b) {
  for (int i = 0; i < TZW_MAPS; i++)
    if (maps[i].b == b) {
      free(maps[i].p);
      maps[i].b = NULL;
      maps[i].p = NULL;
    }
  tzw_buffer_unmap(b);
}

/* ---- the layout handed to the JavaScript ---- */
#define TZW_KIND(T, m) _Generic((((T *)0)->m), double: "f", float: "f", default: "u")
static size_t json_fields(char *out, size_t cap) {
  size_t o = 0;
#define PUT(...)                                                        \
  do {                                                                  \
    int k_ = snprintf(out ? out + o : NULL, out ? cap - o : 0, __VA_ARGS__); \
    if (k_ > 0) o += (size_t)k_;                                        \
  } while (0)
  PUT("{\"members\":[");
  int first = 1;
#define MEMBER(T, m)                                                                                      \
  PUT("%s[\"%s\",\"%s\",%u,%u,\"%s\"]", first ? "" : ",", #T, #m, (unsigned)offsetof(T, m),                \
      (unsigned)sizeof(((T *)0)->m), TZW_KIND(T, m));                                                     \
  first = 0;
  TZ_WGPU_MEMBERS(MEMBER)
  /* declared in webgpu_api.h beside the facts-checked structs (not in TZ_WGPU_MEMBERS) */
  MEMBER(WGPUCreateComputePipelineAsyncCallbackInfo, nextInChain)
  MEMBER(WGPUCreateComputePipelineAsyncCallbackInfo, mode)
  MEMBER(WGPUCreateComputePipelineAsyncCallbackInfo, callback)
  MEMBER(WGPUCreateComputePipelineAsyncCallbackInfo, userdata1)
  MEMBER(WGPUCreateComputePipelineAsyncCallbackInfo, userdata2)
  /* the JavaScript's own protocol struct */
  MEMBER(tzw_event, kind) MEMBER(tzw_event, ok) MEMBER(tzw_event, code) MEMBER(tzw_event, handle)
  MEMBER(tzw_event, device) MEMBER(tzw_event, fn) MEMBER(tzw_event, u1) MEMBER(tzw_event, u2)
  MEMBER(tzw_event, msg_len) MEMBER(tzw_event, msg)
#undef MEMBER
  PUT("],\"sizes\":{");
  first = 1;
#define SIZE(T)                                                         \
  PUT("%s\"%s\":%u", first ? "" : ",", #T, (unsigned)sizeof(T));          \
  first = 0;
  TZ_WGPU_STRUCTS(SIZE)
  SIZE(WGPUCreateComputePipelineAsyncCallbackInfo) SIZE(tzw_event) SIZE(WGPUCommandBuffer) SIZE(void *) SIZE(size_t)
#undef SIZE
  /* constants as decimal strings (64-bit values exceed a JavaScript number) */
  PUT("},\"consts\":{");
  first = 1;
#define CONST(name)                                                                 \
  PUT("%s\"%s\":\"%llu\"", first ? "" : ",", #name, (unsigned long long)(name));    \
  first = 0;
  TZ_WGPU_CONSTS(CONST)
  CONST(TZW_EV_STATUS) CONST(TZW_EV_ADAPTER) CONST(TZW_EV_DEVICE) CONST(TZW_EV_PIPELINE) CONST(TZW_EV_ERROR)
  CONST(TZW_EV_LOST) CONST(TZW_ERR_VALIDATION) CONST(TZW_ERR_OOM) CONST(TZW_ERR_INTERNAL) CONST(TZW_ERR_UNKNOWN)
  CONST(TZW_LOST_DESTROYED) CONST(TZW_LOST_UNKNOWN) CONST(TZW_MSG_CAP)
#undef CONST
  PUT("}}");
#undef PUT
  return o;
}

/* The layout JSON (malloc'd, nul-terminated) or NULL. Also used by tests/wasm/ to check the
 * JavaScript's names without a browser. */
char *tz_wgpu_wasm_layout_json(void) {
  size_t n = json_fields(NULL, 0);
  char *s = malloc(n + 1);
  if (s) json_fields(s, n + 1);
  return s;
}

/* Fill *f from the page's imports: 0, or -1 with tz_err (no navigator.gpu in this page). */
int tz_wgpu_wasm_load(tz_wgpu_fns *f) {
  char *json = tz_wgpu_wasm_layout_json();
  if (!json) return tz_err("webgpu: out of memory for the WebGPU layout description");
  char why[256] = "";
  int ok = tzw_init(json, strlen(json), why, sizeof why);
  free(json);
  if (!ok) return tz_err("webgpu: %s", why[0] ? why : "this page has no navigator.gpu");
  fill_known();
  memset(f, 0, sizeof *f);
#define DIRECT(name) f->name = tzw_imp_##name;
  TZW_DIRECT(DIRECT)
#undef DIRECT
  f->wgpuInstanceRequestAdapter = w_InstanceRequestAdapter;
  f->wgpuInstanceWaitAny = w_InstanceWaitAny;
  f->wgpuInstanceProcessEvents = w_InstanceProcessEvents;
  f->wgpuAdapterGetInfo = w_AdapterGetInfo;
  f->wgpuAdapterInfoFreeMembers = w_AdapterInfoFreeMembers;
  f->wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers = w_AdapterPropertiesSubgroupMatrixConfigsFreeMembers;
  f->wgpuAdapterGetLimits = w_AdapterGetLimits;
  f->wgpuAdapterGetFeatures = w_AdapterGetFeatures;
  f->wgpuAdapterHasFeature = w_AdapterHasFeature;
  f->wgpuSupportedFeaturesFreeMembers = w_SupportedFeaturesFreeMembers;
  f->wgpuAdapterRequestDevice = w_AdapterRequestDevice;
  f->wgpuDeviceGetLimits = w_DeviceGetLimits;
  f->wgpuDeviceHasFeature = w_DeviceHasFeature;
  f->wgpuDeviceCreateComputePipelineAsync = w_DeviceCreateComputePipelineAsync;
  f->wgpuBufferMapAsync = w_BufferMapAsync;
  f->wgpuBufferGetConstMappedRange = w_BufferGetConstMappedRange;
  f->wgpuBufferUnmap = w_BufferUnmap;
  f->wgpuQueueOnSubmittedWorkDone = w_QueueOnSubmittedWorkDone;
  /* every slot filled (a function added to TZ_WGPU_FUNCS needs a line above) */
  void **slot = (void **)f;
  for (size_t i = 0; i < sizeof *f / sizeof(void *); i++)
    if (!slot[i]) return tz_err("webgpu: the wasm bindings lack function %zu of TZ_WGPU_FUNCS (wgpu_wasm.c)", i);
  return 0;
}
#else
typedef int tz_wgpu_wasm_unused; /* native builds load Dawn (dawn_load.c); wasm without TZ_WASM_WEBGPU has none */
#endif
