/* The subgroup-matrix matmul as a standalone op with its own device (sgmat.h says why and what).
 * Shapes, layouts and the kernel: src/kernels/matmul_sgmat/matmul_sgmat.wgsl. */
#include "backend/webgpu/sgmat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"

typedef struct {
  const char *name, *src;
} tz_wgsl_file;
extern const tz_wgsl_file tz_wgsl_files[];
extern const int tz_wgsl_nfiles;

#define W tz_wgpu

struct tz_sgmat {
  WGPUInstance inst;
  WGPUAdapter adapter;
  WGPUDevice dev;
  WGPUQueue queue;
  WGPUAdapterInfo info;
  WGPULimits lim;
  int has_f16, has_sgmat, pick, usable;
  uint32_t sgsize;
  const char *why;
  char desc[1024];
  int failed;
  char errmsg[1024];
};

uint16_t tz_sgmat_f16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  uint32_t sign = (u >> 16) & 0x8000u, e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
  if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
  int ee = (int)e - 127 + 15;
  if (ee >= 31) return (uint16_t)(sign | 0x7c00u);
  if (ee <= 0) { /* subnormal or zero */
    if (ee < -10) return (uint16_t)sign;
    m |= 0x800000u;
    int shift = 14 - ee;
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)ee << 10) | (m >> 13), rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent: right */
  return (uint16_t)(sign | h);
}

float tz_sgmat_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) {
    float f = ldexpf((float)m, -24);
    return sign ? -f : f;
  }
  if (e == 31) u = sign | 0x7f800000u | (m << 13);
  else u = sign | ((e - 15 + 127) << 23) | (m << 13);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int tz_sgmat_pick(const WGPUSubgroupMatrixConfig *cfg, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (cfg[i].componentType == WGPUSubgroupMatrixComponentType_F16 &&
        cfg[i].resultComponentType == WGPUSubgroupMatrixComponentType_F32 && cfg[i].M == 16 &&
        cfg[i].N == 16 && cfg[i].K == 16)
      return (int)i;
  return -1;
}

static void on_error(WGPUDevice const *d, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
  tz_sgmat *s = u1;
  if (s->failed) return;
  s->failed = 1;
  char b[900];
  tz_wgpu_sv_copy(b, sizeof b, m);
  snprintf(s->errmsg, sizeof s->errmsg, "device error (type %u): %s", t, b);
}
static void on_lost(WGPUDevice const *d, WGPUDeviceLostReason r, WGPUStringView m, void *u1, void *u2) {
  tz_sgmat *s = u1;
  if (r == WGPUDeviceLostReason_Destroyed || r == WGPUDeviceLostReason_CallbackCancelled || s->failed) return;
  s->failed = 1;
  char b[900];
  tz_wgpu_sv_copy(b, sizeof b, m);
  snprintf(s->errmsg, sizeof s->errmsg, "device lost (reason %u): %s", r, b);
}
static void on_done(WGPUQueueWorkDoneStatus st, WGPUStringView m, void *u1, void *u2) {
  *(int *)u1 = st == WGPUQueueWorkDoneStatus_Success ? 1 : -1;
}
static void on_mapped(WGPUMapAsyncStatus st, WGPUStringView m, void *u1, void *u2) {
  *(int *)u1 = st == WGPUMapAsyncStatus_Success ? 1 : -1;
}

static int wait(tz_sgmat *s, WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  for (int i = 0; i < 600; i++) {
    WGPUWaitStatus st = W.wgpuInstanceWaitAny(s->inst, 1, &wi, 1000000000ull);
    if (st == WGPUWaitStatus_Success && wi.completed) return 0;
    if (st != WGPUWaitStatus_TimedOut) return -1;
    W.wgpuInstanceProcessEvents(s->inst);
    if (s->failed) return -1;
  }
  return -1;
}

static int finish(tz_sgmat *s) {
  int done = 0;
  WGPUQueueWorkDoneCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_done, &done, NULL};
  WGPUFuture f = W.wgpuQueueOnSubmittedWorkDone(s->queue, ci);
  if (wait(s, f) != 0 || done != 1 || s->failed)
    return tz_err("webgpu sgmat: %s", s->failed ? s->errmsg : "queue did not finish");
  return 0;
}

tz_sgmat *tz_sgmat_open(void) {
  if (tz_wgpu_load() != 0) return NULL;
  tz_sgmat *s = calloc(1, sizeof *s);
  s->inst = tz_wgpu_create_instance();
  if (!s->inst) {
    tz_err("webgpu sgmat: wgpuCreateInstance failed");
    free(s);
    return NULL;
  }
  /* the node Dawn's toggles for ShaderF16 and subgroup matrices; TZ_SGMAT_ADAPTER_TOGGLES
   * (comma-separated) replaces them (measurements): tz_wgpu_adapter_options */
  tz_wgpu_toggles tg;
  WGPURequestAdapterOptions o;
  tz_wgpu_adapter_options(&o, &tg, "TZ_SGMAT_ADAPTER_TOGGLES");
  tz_wgpu_req r = {0};
  WGPURequestAdapterCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_wgpu_on_adapter, &r, NULL};
  if (wait(s, W.wgpuInstanceRequestAdapter(s->inst, &o, ci)) != 0 || r.status != WGPURequestAdapterStatus_Success ||
      !r.handle) {
    tz_err("webgpu sgmat: no Vulkan adapter%s%s", r.msg[0] ? ": " : "", r.msg);
    tz_sgmat_close(s);
    return NULL;
  }
  s->adapter = r.handle;
  WGPUAdapterPropertiesSubgroupMatrixConfigs mc;
  memset(&mc, 0, sizeof mc);
  mc.chain.sType = WGPUSType_AdapterPropertiesSubgroupMatrixConfigs;
  s->has_f16 = W.wgpuAdapterHasFeature(s->adapter, WGPUFeatureName_ShaderF16) != 0;
  s->has_sgmat = W.wgpuAdapterHasFeature(s->adapter, WGPUFeatureName_ChromiumExperimentalSubgroupMatrix) != 0;
  s->info.nextInChain = s->has_sgmat ? (WGPUChainedStruct *)&mc.chain : NULL;
  W.wgpuAdapterGetInfo(s->adapter, &s->info);
  W.wgpuAdapterGetLimits(s->adapter, &s->lim);
  WGPUSubgroupMatrixConfig cf[32];
  size_t ncf = mc.configCount < 32 ? mc.configCount : 32;
  for (size_t i = 0; i < ncf; i++) cf[i] = tz_wgpu_sgmat_config(&mc, i);
  s->pick = tz_sgmat_pick(cf, ncf);
  char dev[128], cfgs[600] = "";
  tz_wgpu_sv_copy(dev, sizeof dev, s->info.device);
  size_t used = 0;
  for (size_t i = 0; i < ncf && used < sizeof cfgs - 40; i++) {
    static const char *ty[] = {"?", "f32", "f16", "u32", "i32", "u8", "i8"};
    const WGPUSubgroupMatrixConfig *g = &cf[i];
    used += (size_t)snprintf(cfgs + used, sizeof cfgs - used, "%s%s×%s→%s %u×%u×%u", i ? ", " : "",
                             ty[g->componentType < 7 ? g->componentType : 0], ty[g->componentType < 7 ? g->componentType : 0],
                             ty[g->resultComponentType < 7 ? g->resultComponentType : 0], g->M, g->N, g->K);
  }
  if (s->has_sgmat) W.wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(mc);
  s->info.nextInChain = NULL;
  s->sgsize = s->info.subgroupMinSize;
  snprintf(s->desc, sizeof s->desc, "%s; Dawn %s; ShaderF16 %s; subgroup sizes %u..%u; subgroup-matrix configs (%zu): %s",
           dev, tz_wgpu_abi->name, s->has_f16 ? "yes" : "no", s->info.subgroupMinSize, s->info.subgroupMaxSize,
           mc.configCount, mc.configCount ? cfgs : "none");
  if (!s->has_sgmat) s->why = "the adapter offers no ChromiumExperimentalSubgroupMatrix";
  else if (s->pick < 0) s->why = "the adapter lists no f16 x f16 -> f32 16x16x16 subgroup-matrix configuration";
  else if (!s->has_f16) s->why = "the adapter offers no ShaderF16";
  else if (s->info.subgroupMinSize != s->info.subgroupMaxSize || !s->sgsize) s->why = "the adapter has several subgroup sizes";
  if (s->why) return s; /* usable = 0: callers fall back */
  WGPUFeatureName feats[3] = {WGPUFeatureName_ShaderF16, WGPUFeatureName_ChromiumExperimentalSubgroupMatrix,
                              WGPUFeatureName_Subgroups};
  size_t nf = W.wgpuAdapterHasFeature(s->adapter, WGPUFeatureName_Subgroups) ? 3 : 2;
  WGPULimits lim = s->lim;
  lim.nextInChain = NULL;
  const char *on[] = {"disable_robustness"};
  WGPUDawnTogglesDescriptor dt;
  memset(&dt, 0, sizeof dt);
  dt.chain.sType = WGPUSType_DawnTogglesDescriptor;
  dt.enabledToggleCount = 1;
  dt.enabledToggles = on;
  WGPUDeviceDescriptor dd;
  memset(&dd, 0, sizeof dd);
  dd.nextInChain = &dt.chain;
  dd.label = tz_wgpu_sv("tezgah sgmat");
  dd.requiredFeatureCount = nf;
  dd.requiredFeatures = feats;
  dd.requiredLimits = &lim;
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.deviceLostCallbackInfo.userdata1 = s;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  dd.uncapturedErrorCallbackInfo.userdata1 = s;
  tz_wgpu_req rd = {0};
  WGPURequestDeviceCallbackInfo dci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_wgpu_on_device, &rd, NULL};
  if (wait(s, W.wgpuAdapterRequestDevice(s->adapter, &dd, dci)) != 0 || rd.status != WGPURequestDeviceStatus_Success ||
      !rd.handle) {
    tz_err("webgpu sgmat: cannot create a device with ShaderF16 and subgroup matrices: %s", rd.msg);
    tz_sgmat_close(s);
    return NULL;
  }
  s->dev = rd.handle;
  s->queue = W.wgpuDeviceGetQueue(s->dev);
  s->usable = 1;
  return s;
}

int tz_sgmat_usable(const tz_sgmat *s, const char **why) {
  if (why) *why = s->why;
  return s->usable;
}
const char *tz_sgmat_describe(const tz_sgmat *s) { return s->desc; }

void tz_sgmat_close(tz_sgmat *s) {
  if (!s) return;
  if (s->queue) W.wgpuQueueRelease(s->queue);
  if (s->dev) W.wgpuDeviceDestroy(s->dev), W.wgpuDeviceRelease(s->dev);
  if (s->adapter) W.wgpuAdapterRelease(s->adapter);
  if (s->inst) W.wgpuInstanceRelease(s->inst);
  free(s);
}

static WGPUBuffer mkbuf(tz_sgmat *s, uint64_t size, WGPUBufferUsage u) {
  WGPUBufferDescriptor d = {NULL, tz_wgpu_sv("sgmat"), u, (size + 15) / 16 * 16, 0};
  return W.wgpuDeviceCreateBuffer(s->dev, &d);
}

static const char *kernel_src(void) {
  for (int i = 0; i < tz_wgsl_nfiles; i++)
    if (!strcmp(tz_wgsl_files[i].name, "matmul_sgmat")) return tz_wgsl_files[i].src;
  return NULL;
}

char *tz_sgmat_preprocess(const char *src, int direct, int has_bias) {
  size_t n = strlen(src);
  char *out = malloc(n + 1), *o = out;
  int keep = 1;
  for (const char *l = src; *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l + 1) : strlen(l);
    if (!strncmp(l, "//#if ", 6)) {
      keep = !strncmp(l + 6, "DIRECT", 6) ? direct : has_bias;
    } else if (!strncmp(l, "//#else", 7)) {
      keep = !keep;
    } else if (!strncmp(l, "//#endif", 8)) {
      keep = 1;
    } else if (keep) {
      memcpy(o, l, len);
      o += len;
    }
    l += len;
  }
  *o = 0;
  return out;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int tz_sgmat_run(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                 const uint16_t *a, const uint16_t *b, const float *bias, float *c, int reps, double *ms) {
  if (!s->usable) return tz_err("webgpu sgmat: not usable here: %s", s->why);
  uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16;
  if (!t.bk || t.bk % 16 || !bm || !bn || M % bm || N % bn || K % t.bk)
    return tz_err("webgpu sgmat: shape %ux%ux%u is not a multiple of the tile %ux%ux%u", M, N, K, bm, bn, t.bk);
  uint32_t nt = t.sg_m * t.sg_n * s->sgsize;
  if (!t.direct && ((bm * t.bk / 4) % nt || (bn * t.bk / 4) % nt))
    return tz_err("webgpu sgmat: tile %ux%ux%u does not split evenly over %u threads", bm, bn, t.bk, nt);
  if (bias && form != TZ_SGMAT_XWT) return tz_err("webgpu sgmat: bias only with the X·Wᵀ form");
  const char *body = kernel_src();
  if (!body) return tz_err("webgpu sgmat: kernel matmul_sgmat not embedded");
  int a_mk = form != TZ_SGMAT_DYTX, b_nk = form == TZ_SGMAT_XWT, acc = form == TZ_SGMAT_DYTX;
  char head[768];
  snprintf(head, sizeof head,
           "const BM = %uu;\nconst BN = %uu;\nconst BK = %uu;\nconst SG_M = %uu;\nconst SG_N = %uu;\n"
           "const TM = %uu;\nconst TN = %uu;\nconst SGSIZE = %uu;\nconst A_MK = %s;\nconst B_NK = %s;\n"
           "const ACC = %s;\n",
           bm, bn, t.bk, t.sg_m, t.sg_n, t.tm, t.tn, s->sgsize, a_mk ? "true" : "false", b_nk ? "true" : "false",
           acc ? "true" : "false");
  if (t.direct) /* the element-wise views of a and b (DIRECT loads) */
    strcat(head, "@group(0) @binding(5) var<storage, read> a_h: array<f16>;\n"
                 "@group(0) @binding(6) var<storage, read> b_h: array<f16>;\n");
  /* the `enable` lines must come first: split the body after them */
  const char *rest = strstr(body, "// end of directives\n");
  if (!rest) return tz_err("webgpu sgmat: kernel source has no '// end of directives' line");
  rest += strlen("// end of directives\n");
  char *pre = tz_sgmat_preprocess(rest, t.direct != 0, bias != NULL);
  size_t n = strlen(body) + strlen(head) + 8;
  char *src = malloc(n);
  snprintf(src, n, "%.*s%s%s", (int)(rest - body), body, head, pre);
  free(pre);
  WGPUShaderSourceWGSL ws = {{NULL, WGPUSType_ShaderSourceWGSL}, tz_wgpu_sv(src)};
  WGPUShaderModuleDescriptor md = {&ws.chain, tz_wgpu_sv("matmul_sgmat")};
  WGPUShaderModule mod = W.wgpuDeviceCreateShaderModule(s->dev, &md);
  WGPUComputePipelineDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.label = tz_wgpu_sv("matmul_sgmat");
  pd.compute.module = mod;
  pd.compute.entryPoint = tz_wgpu_sv("main");
  WGPUComputePipeline pipe = W.wgpuDeviceCreateComputePipeline(s->dev, &pd);
  free(src);
  W.wgpuShaderModuleRelease(mod);
  if (s->failed || !pipe) return tz_err("webgpu sgmat: pipeline: %s", s->failed ? s->errmsg : "creation failed");
  uint64_t na = (uint64_t)M * K * 2, nb = (uint64_t)N * K * 2, nc = (uint64_t)M * N * 4;
  WGPUBufferUsage st = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
  WGPUBuffer ba = mkbuf(s, na, st), bb = mkbuf(s, nb, st), bc = mkbuf(s, nc, st), bz = mkbuf(s, (uint64_t)N * 4, st);
  WGPUBuffer bu = mkbuf(s, 128, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst);
  WGPUBuffer rb = mkbuf(s, nc, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
  W.wgpuQueueWriteBuffer(s->queue, ba, 0, a, na);
  W.wgpuQueueWriteBuffer(s->queue, bb, 0, b, nb);
  if (bias) W.wgpuQueueWriteBuffer(s->queue, bz, 0, bias, (size_t)N * 4);
  if (acc) W.wgpuQueueWriteBuffer(s->queue, bc, 0, c, nc);
  /* the kernel's uniform block (the backend's layout, wg_run_ex): element offsets (all 0 here),
   * slots, then M, N, K */
  uint32_t pr[32] = {0};
  pr[16] = M, pr[17] = N, pr[18] = K;
  W.wgpuQueueWriteBuffer(s->queue, bu, 0, pr, 128);
  /* bindings: 0 uniform, 1 c, 2 a, 3 b, 4 bias (all in every layout: the kernel touches
   * them), 5 a_h and 6 b_h with DIRECT */
  WGPUBindGroupEntry e[7];
  memset(e, 0, sizeof e);
  WGPUBuffer bufs[7] = {bu, bc, ba, bb, bz, ba, bb};
  uint64_t sizes[7] = {128, (nc + 15) / 16 * 16, (na + 15) / 16 * 16, (nb + 15) / 16 * 16,
                       ((uint64_t)N * 4 + 15) / 16 * 16, (na + 15) / 16 * 16, (nb + 15) / 16 * 16};
  int used[7] = {1, 1, 1, 1, 1, t.direct != 0, t.direct != 0};
  size_t ne = 0;
  for (int i = 0; i < 7; i++)
    if (used[i]) e[ne].binding = (uint32_t)i, e[ne].buffer = bufs[i], e[ne].size = sizes[i], ne++;
  WGPUBindGroupLayout bgl = W.wgpuComputePipelineGetBindGroupLayout(pipe, 0);
  WGPUBindGroupDescriptor bd = {NULL, tz_wgpu_sv("sgmat"), bgl, ne, e};
  WGPUBindGroup bg = W.wgpuDeviceCreateBindGroup(s->dev, &bd);
  int rc = 0;
  /* `count` dispatches in one submission */
#define SUBMIT(count)                                                                           \
  {                                                                                             \
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(s->dev, NULL);                    \
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);              \
    W.wgpuComputePassEncoderSetPipeline(pass, pipe);                                            \
    W.wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, NULL);                                 \
    for (int q = 0; q < (count); q++) W.wgpuComputePassEncoderDispatchWorkgroups(pass, N / bn, M / bm, 1); \
    W.wgpuComputePassEncoderEnd(pass);                                                          \
    W.wgpuComputePassEncoderRelease(pass);                                                      \
    WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);                               \
    W.wgpuQueueSubmit(s->queue, 1, &cb);                                                        \
    W.wgpuCommandBufferRelease(cb);                                                             \
    W.wgpuCommandEncoderRelease(enc);                                                           \
  }
  SUBMIT(1);
  if (finish(s) != 0) rc = -1;
  if (!rc) {
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(s->dev, NULL);
    W.wgpuCommandEncoderCopyBufferToBuffer(enc, bc, 0, rb, 0, (nc + 15) / 16 * 16);
    WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
    W.wgpuQueueSubmit(s->queue, 1, &cb);
    W.wgpuCommandBufferRelease(cb);
    W.wgpuCommandEncoderRelease(enc);
    int mst = 0;
    WGPUBufferMapCallbackInfo mci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &mst, NULL};
    size_t mapn = (size_t)((nc + 15) / 16 * 16);
    if (wait(s, W.wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, mapn, mci)) != 0 || mst != 1) {
      rc = tz_err("webgpu sgmat: readback failed%s%s", s->failed ? ": " : "", s->failed ? s->errmsg : "");
    } else {
      const void *pm = W.wgpuBufferGetConstMappedRange(rb, 0, mapn);
      if (pm) memcpy(c, pm, nc);
      else rc = tz_err("webgpu sgmat: no mapped range");
      W.wgpuBufferUnmap(rb);
    }
  }
  if (!rc && reps > 0 && ms) {
    SUBMIT(1); /* warm-up */
    if (finish(s) != 0) rc = -1;
    double t0 = now_ms();
    if (!rc) SUBMIT(reps);
    if (!rc && finish(s) != 0) rc = -1;
    *ms = (now_ms() - t0) / reps;
  }
#undef SUBMIT
  W.wgpuBindGroupRelease(bg);
  W.wgpuBindGroupLayoutRelease(bgl);
  W.wgpuComputePipelineRelease(pipe);
  WGPUBuffer all[6] = {ba, bb, bc, bz, bu, rb};
  for (int i = 0; i < 6; i++) W.wgpuBufferDestroy(all[i]), W.wgpuBufferRelease(all[i]);
  return rc;
}
