/* The WebGPU bindings of a wasm build, alone (no backend): through the function table that
 * src/backend/webgpu/wgpu_wasm.c fills from the page's JavaScript (web/wgpu_imports.mjs), create
 * an instance, adapter and device, upload 1000 floats, run a one-line WGSL kernel with a
 * pipeline-overridable constant, read the result back through a mapped buffer, and check it
 * exactly (x·2 + c: exact in fp32 for these integers); then compile a broken shader and check
 * the uncaptured-error callback reports a validation error. Run by tests/wasm/run_browser.mjs
 * (tests/test_wasm_webgpu.sh). Prints one line per step; exit 0 on success, 1 on a failure, 77
 * (SKIPPED) when the page has no WebGPU adapter.
 *
 * Usage (in the page): wgpu_smoke [n]   (n floats, default 1000)
 *        wgpu_smoke --layout               print the layout JSON handed to the JavaScript and exit
 *                                          (tests/wasm/check_layout.mjs, under Node's WASI) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"


static tz_wgpu_fns W;
static WGPUInstance inst;
static int errors, last_error_type;
static char last_error[512];

static WGPUStringView sv(const char *s) {
  WGPUStringView v = {s, s ? strlen(s) : 0};
  return v;
}
static void svcopy(char *d, size_t cap, WGPUStringView v) {
  size_t n = v.data ? (v.length == WGPU_STRLEN ? strlen(v.data) : v.length) : 0;
  if (n >= cap) n = cap - 1;
  memcpy(d, v.data ? v.data : "", n);
  d[n] = 0;
}

typedef struct {
  int status;
  void *handle;
  char msg[256];
} result;
static void on_adapter(WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
  result *r = u1;
  r->status = (int)s, r->handle = a;
  svcopy(r->msg, sizeof r->msg, m);
}
static void on_device(WGPURequestDeviceStatus s, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
  result *r = u1;
  r->status = (int)s, r->handle = d;
  svcopy(r->msg, sizeof r->msg, m);
}
static void on_status(uint32_t s, WGPUStringView m, void *u1, void *u2) { *(int *)u1 = s == 1 ? 1 : -1; }
static void on_error(WGPUDevice const *d, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
  errors++;
  last_error_type = (int)t;
  svcopy(last_error, sizeof last_error, m);
}
static void on_lost(WGPUDevice const *d, WGPUDeviceLostReason r, WGPUStringView m, void *u1, void *u2) {}

static int wait(WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  for (int i = 0; i < 60; i++) {
    WGPUWaitStatus s = W.wgpuInstanceWaitAny(inst, 1, &wi, 1000000000ull);
    if (s == WGPUWaitStatus_Success && wi.completed) return 0;
    if (s != WGPUWaitStatus_TimedOut) return -1;
  }
  return -1;
}

#define FAIL(...)                        \
  do {                                   \
    printf("wgpu_smoke: FAIL: ");        \
    printf(__VA_ARGS__);                 \
    printf("\n");                        \
    return 1;                            \
  } while (0)

static const char *kernel =
    "override ADD: f32 = 0.0;\n"
    "@group(0) @binding(0) var<storage, read_write> b: array<f32>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {\n"
    "  if (id.x < arrayLength(&b)) { b[id.x] = b[id.x] * 2.0 + ADD; }\n"
    "}\n";

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--layout")) {
    char *j = tz_wgpu_wasm_layout_json();
    printf("%s\n", j ? j : "");
    free(j);
    return j ? 0 : 1;
  }
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  if (n < 1 || n > (1 << 24)) FAIL("n = %d out of 1..2^24", n);
  if (tz_wgpu_wasm_load(&W) != 0) {
    printf("SKIPPED: %s\n", tz_errmsg());
    return 77;
  }
  inst = W.wgpuCreateInstance(NULL);
  WGPURequestAdapterOptions ao;
  memset(&ao, 0, sizeof ao);
  ao.powerPreference = WGPUPowerPreference_HighPerformance;
  result ra = {0};
  WGPURequestAdapterCallbackInfo aci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_adapter, &ra, NULL};
  if (wait(W.wgpuInstanceRequestAdapter(inst, &ao, aci)) != 0) FAIL("adapter request did not complete");
  if (ra.status != WGPURequestAdapterStatus_Success || !ra.handle) {
    printf("SKIPPED: no WebGPU adapter: %s\n", ra.msg);
    return 77;
  }
  WGPUAdapter adapter = ra.handle;
  WGPUAdapterInfo info;
  memset(&info, 0, sizeof info);
  W.wgpuAdapterGetInfo(adapter, &info);
  char vendor[64], arch[64];
  svcopy(vendor, sizeof vendor, info.vendor);
  svcopy(arch, sizeof arch, info.architecture);
  WGPULimits lim;
  memset(&lim, 0, sizeof lim);
  W.wgpuAdapterGetLimits(adapter, &lim);
  printf("wgpu_smoke: adapter %s / %s, subgroups %u..%u, maxStorageBufferBindingSize %llu, "
         "maxComputeWorkgroupStorageSize %u, maxImmediateSize %u, subgroups %d, shader-f16 %d, timestamps %d\n",
         vendor, arch, info.subgroupMinSize, info.subgroupMaxSize, (unsigned long long)lim.maxStorageBufferBindingSize,
         lim.maxComputeWorkgroupStorageSize, lim.maxImmediateSize,
         W.wgpuAdapterHasFeature(adapter, tz_wgpu_abi_browser.FeatureName_Subgroups),
         W.wgpuAdapterHasFeature(adapter, tz_wgpu_abi_browser.FeatureName_ShaderF16),
         W.wgpuAdapterHasFeature(adapter, tz_wgpu_abi_browser.FeatureName_TimestampQuery));
  if (!lim.maxStorageBufferBindingSize || lim.maxStorageBufferBindingSize == WGPU_LIMIT_U64_UNDEFINED)
    FAIL("adapter limits not read");
  W.wgpuAdapterInfoFreeMembers(info);

  WGPUFeatureName feats[1] = {tz_wgpu_abi_browser.FeatureName_Subgroups};
  WGPUDeviceDescriptor dd;
  memset(&dd, 0, sizeof dd);
  dd.label = sv("smoke");
  dd.requiredFeatureCount = W.wgpuAdapterHasFeature(adapter, feats[0]) ? 1 : 0;
  dd.requiredFeatures = feats;
  dd.requiredLimits = &lim; /* all of the adapter's limits */
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  result rd = {0};
  WGPURequestDeviceCallbackInfo dci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_device, &rd, NULL};
  if (wait(W.wgpuAdapterRequestDevice(adapter, &dd, dci)) != 0) FAIL("device request did not complete");
  if (rd.status != WGPURequestDeviceStatus_Success || !rd.handle) FAIL("no device: %s", rd.msg);
  WGPUDevice dev = rd.handle;
  WGPUQueue q = W.wgpuDeviceGetQueue(dev);
  WGPULimits dl;
  memset(&dl, 0, sizeof dl);
  W.wgpuDeviceGetLimits(dev, &dl);
  if (dl.maxStorageBufferBindingSize != lim.maxStorageBufferBindingSize)
    FAIL("device maxStorageBufferBindingSize %llu, adapter %llu: the required limits were not passed",
         (unsigned long long)dl.maxStorageBufferBindingSize, (unsigned long long)lim.maxStorageBufferBindingSize);
  printf("wgpu_smoke: device ok (subgroups %s)\n",
         W.wgpuDeviceHasFeature(dev, feats[0]) ? "required and present" : "not offered");

  size_t bytes = (size_t)n * 4;
  float *x = malloc(bytes), *y = malloc(bytes);
  for (int i = 0; i < n; i++) x[i] = (float)(i % 4096) - 2048.0f;
  WGPUBufferDescriptor bd = {NULL, sv("data"), WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
                             bytes, 0};
  WGPUBuffer buf = W.wgpuDeviceCreateBuffer(dev, &bd);
  WGPUBufferDescriptor rbd = {NULL, sv("readback"), WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, bytes, 0};
  WGPUBuffer rb = W.wgpuDeviceCreateBuffer(dev, &rbd);
  W.wgpuQueueWriteBuffer(q, buf, 0, x, bytes);

  WGPUShaderSourceWGSL src = {{NULL, WGPUSType_ShaderSourceWGSL}, {kernel, WGPU_STRLEN}};
  WGPUShaderModuleDescriptor md = {&src.chain, sv("smoke")};
  WGPUShaderModule mod = W.wgpuDeviceCreateShaderModule(dev, &md);
  WGPUConstantEntry ce = {NULL, sv("ADD"), 3.0};
  WGPUComputePipelineDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.label = sv("smoke");
  pd.compute.module = mod;
  pd.compute.entryPoint = sv("main");
  pd.compute.constantCount = 1;
  pd.compute.constants = &ce;
  WGPUComputePipeline pipe = W.wgpuDeviceCreateComputePipeline(dev, &pd);
  WGPUBindGroupLayout bgl = W.wgpuComputePipelineGetBindGroupLayout(pipe, 0);
  WGPUBindGroupEntry be;
  memset(&be, 0, sizeof be);
  be.binding = 0;
  be.buffer = buf;
  be.size = bytes;
  WGPUBindGroupDescriptor bgd = {NULL, sv(NULL), bgl, 1, &be};
  WGPUBindGroup bg = W.wgpuDeviceCreateBindGroup(dev, &bgd);
  WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(dev, NULL);
  WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  W.wgpuComputePassEncoderSetPipeline(pass, pipe);
  W.wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, NULL);
  W.wgpuComputePassEncoderDispatchWorkgroups(pass, (uint32_t)((n + 63) / 64), 1, 1);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, buf, 0, rb, 0, bytes);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(q, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);

  int done = 0;
  WGPUQueueWorkDoneCallbackInfo wci = {NULL, WGPUCallbackMode_WaitAnyOnly, (WGPUQueueWorkDoneCallback)on_status, &done, NULL};
  if (wait(W.wgpuQueueOnSubmittedWorkDone(q, wci)) != 0 || done != 1) FAIL("queue work-done: %d", done);
  int mapped = 0;
  WGPUBufferMapCallbackInfo mci = {NULL, WGPUCallbackMode_WaitAnyOnly, (WGPUBufferMapCallback)on_status, &mapped, NULL};
  if (wait(W.wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, bytes, mci)) != 0 || mapped != 1) FAIL("map: %d", mapped);
  const float *p = W.wgpuBufferGetConstMappedRange(rb, 0, bytes);
  if (!p) FAIL("no mapped range");
  memcpy(y, p, bytes);
  W.wgpuBufferUnmap(rb);
  W.wgpuInstanceProcessEvents(inst);
  if (errors) FAIL("device error: %s", last_error);
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (y[i] != x[i] * 2.0f + 3.0f) {
      if (bad < 3) printf("wgpu_smoke: y[%d] = %g, want %g\n", i, y[i], x[i] * 2.0f + 3.0f);
      bad++;
    }
  if (bad) FAIL("%d of %d values wrong", bad, n);
  printf("wgpu_smoke: %d floats uploaded, doubled + 3 on the GPU, read back exactly\n", n);

  /* an invalid shader: the uncaptured-error callback must report a validation error */
  WGPUShaderSourceWGSL bad_src = {{NULL, WGPUSType_ShaderSourceWGSL}, sv("fn main( {")};
  WGPUShaderModuleDescriptor bmd = {&bad_src.chain, sv("broken")};
  WGPUShaderModule bm = W.wgpuDeviceCreateShaderModule(dev, &bmd);
  done = 0;
  WGPUQueueWorkDoneCallbackInfo wci2 = {NULL, WGPUCallbackMode_WaitAnyOnly, (WGPUQueueWorkDoneCallback)on_status, &done, NULL};
  wait(W.wgpuQueueOnSubmittedWorkDone(q, wci2));
  for (int i = 0; i < 50 && !errors; i++) { /* the error event may come a little later */
    int d2 = 0;
    WGPUQueueWorkDoneCallbackInfo w3 = {NULL, WGPUCallbackMode_WaitAnyOnly, (WGPUQueueWorkDoneCallback)on_status, &d2, NULL};
    wait(W.wgpuQueueOnSubmittedWorkDone(q, w3));
    W.wgpuInstanceProcessEvents(inst);
  }
  if (!errors || last_error_type != WGPUErrorType_Validation)
    FAIL("a broken shader gave %d errors (type %d), want a validation error", errors, last_error_type);
  char first[120];
  snprintf(first, sizeof first, "%s", last_error);
  printf("wgpu_smoke: broken shader -> validation error: %.100s\n", first);

  W.wgpuShaderModuleRelease(bm);
  W.wgpuBindGroupRelease(bg);
  W.wgpuBindGroupLayoutRelease(bgl);
  W.wgpuComputePipelineRelease(pipe);
  W.wgpuShaderModuleRelease(mod);
  W.wgpuBufferDestroy(buf);
  W.wgpuBufferRelease(buf);
  W.wgpuBufferDestroy(rb);
  W.wgpuBufferRelease(rb);
  W.wgpuQueueRelease(q);
  W.wgpuDeviceDestroy(dev);
  W.wgpuDeviceRelease(dev);
  W.wgpuAdapterRelease(adapter);
  W.wgpuInstanceRelease(inst);
  free(x);
  free(y);
  printf("wgpu_smoke: OK\n");
  return 0;
}
