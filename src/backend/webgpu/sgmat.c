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
  int failed, lost, emu;
  char errmsg[1024];
  /* pipelines by source key, and the buffers of the last run (kept, grown on demand) */
  struct {
    char *key;
    WGPUComputePipeline pipe;
    WGPUBindGroupLayout bgl;
  } pipes[64];
  int npipes;
  WGPUBuffer buf[9]; /* a, b, c, bias, uniform, readback, partials, a16w copy, its readback */
  uint64_t cap[9];
  uint64_t up_a, up_b; /* bytes of a and b uploaded by the last run */
  int up_a32;           /* ... a as f32 (tile flag f) */
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

int tz_sgmat_pick_res(const WGPUSubgroupMatrixConfig *cfg, size_t n, WGPUSubgroupMatrixComponentType res) {
  for (size_t i = 0; i < n; i++)
    if (cfg[i].componentType == WGPUSubgroupMatrixComponentType_F16 && cfg[i].resultComponentType == res &&
        cfg[i].M == 16 && cfg[i].N == 16 && cfg[i].K == 16)
      return (int)i;
  return -1;
}
int tz_sgmat_pick(const WGPUSubgroupMatrixConfig *cfg, size_t n) {
  return tz_sgmat_pick_res(cfg, n, WGPUSubgroupMatrixComponentType_F32);
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
  s->failed = s->lost = 1;
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

static tz_sgmat *open_impl(int emu) {
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
  s->emu = emu;
  snprintf(s->desc, sizeof s->desc, "%s; Dawn %s; ShaderF16 %s; subgroup sizes %u..%u; subgroup-matrix configs (%zu): %s",
           dev, tz_wgpu_abi->name, s->has_f16 ? "yes" : "no", s->info.subgroupMinSize, s->info.subgroupMaxSize,
           mc.configCount, mc.configCount ? cfgs : "none");
  if (emu) {
    /* the emulated builtins need ShaderF16 only; their subgroup size is the block of threads
     * a "subgroup" of the kernel spans (TZ_SGMAT_EMU_SGSIZE, default 8: fewer threads repeat
     * the emulation's work less) */
    const char *e = getenv("TZ_SGMAT_EMU_SGSIZE");
    s->sgsize = e && atoi(e) > 0 ? (uint32_t)atoi(e) : 8;
    if (!s->has_f16) s->why = "the adapter offers no ShaderF16";
  } else if (!s->has_sgmat) s->why = "the adapter offers no ChromiumExperimentalSubgroupMatrix";
  else if (s->pick < 0) s->why = "the adapter lists no f16 x f16 -> f32 16x16x16 subgroup-matrix configuration";
  else if (!s->has_f16) s->why = "the adapter offers no ShaderF16";
  else if (s->info.subgroupMinSize != s->info.subgroupMaxSize || !s->sgsize) s->why = "the adapter has several subgroup sizes";
  if (s->why) return s; /* usable = 0: callers fall back */
  WGPUFeatureName feats[3] = {WGPUFeatureName_ShaderF16, WGPUFeatureName_ChromiumExperimentalSubgroupMatrix,
                              WGPUFeatureName_Subgroups};
  size_t nf = W.wgpuAdapterHasFeature(s->adapter, WGPUFeatureName_Subgroups) ? 3 : 2;
  if (emu) feats[1] = WGPUFeatureName_Subgroups, nf--; /* no subgroup matrices asked for */
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

tz_sgmat *tz_sgmat_open(void) { return open_impl(0); }
tz_sgmat *tz_sgmat_open_emu(void) { return open_impl(1); }
uint32_t tz_sgmat_sgsize(const tz_sgmat *s) { return s->sgsize; }
uint32_t tz_sgmat_smem_limit(const tz_sgmat *s) { return s->lim.maxComputeWorkgroupStorageSize; }
uint64_t tz_sgmat_binding_limit(const tz_sgmat *s) { return s->lim.maxStorageBufferBindingSize; }

int tz_sgmat_usable(const tz_sgmat *s, const char **why) {
  if (why) *why = s->why;
  return s->usable;
}
const char *tz_sgmat_describe(const tz_sgmat *s) { return s->desc; }

void tz_sgmat_close(tz_sgmat *s) {
  if (!s) return;
  for (int i = 0; i < s->npipes; i++) {
    free(s->pipes[i].key);
    W.wgpuBindGroupLayoutRelease(s->pipes[i].bgl);
    W.wgpuComputePipelineRelease(s->pipes[i].pipe);
  }
  for (int i = 0; i < 9; i++)
    if (s->buf[i]) W.wgpuBufferDestroy(s->buf[i]), W.wgpuBufferRelease(s->buf[i]);
  if (s->queue) W.wgpuQueueRelease(s->queue);
  if (s->dev) W.wgpuDeviceDestroy(s->dev), W.wgpuDeviceRelease(s->dev);
  if (s->adapter) W.wgpuAdapterRelease(s->adapter);
  if (s->inst) W.wgpuInstanceRelease(s->inst);
  free(s);
}

static const char *kernel_src(const char *name) {
  for (int i = 0; i < tz_wgsl_nfiles; i++)
    if (!strcmp(tz_wgsl_files[i].name, name)) return tz_wgsl_files[i].src;
  return NULL;
}

/* ---- the kernel files' preprocessor (sgmat.h) ---- */
typedef struct {
  char *p;
  size_t n, cap;
} sbuf;
static void put(sbuf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

/* The value of NAME (len bytes) on the `//defs` line of defs; 0 when absent. */
static long def_value(const char *defs, const char *name, size_t len) {
  const char *d = defs ? strstr(defs, "//defs") : NULL;
  if (!d) return 0;
  d += 6;
  const char *end = strchr(d, '\n');
  if (!end) end = d + strlen(d);
  for (const char *q = d; q < end;) {
    while (q < end && *q == ' ') q++;
    const char *eq = memchr(q, '=', (size_t)(end - q));
    if (!eq) break;
    if ((size_t)(eq - q) == len && !strncmp(q, name, len)) return strtol(eq + 1, NULL, 10);
    for (q = eq; q < end && *q != ' ';) q++;
  }
  return 0;
}

static size_t line_len(const char *l) {
  const char *e = strchr(l, '\n');
  return e ? (size_t)(e - l + 1) : strlen(l);
}
static size_t word_len(const char *w) {
  size_t n = 0;
  while (w[n] == '_' || (w[n] >= 'A' && w[n] <= 'Z') || (w[n] >= 'a' && w[n] <= 'z') || (w[n] >= '0' && w[n] <= '9')) n++;
  return n;
}

static void pp(const char *src, size_t len, const char *defs, sbuf *out) {
  int keep[64], depth = 0;
  const char *end = src + len;
  for (const char *l = src; l < end;) {
    size_t n = line_len(l);
    if (l + n > end) n = (size_t)(end - l);
    int on = 1;
    for (int i = 0; i < depth; i++) on &= keep[i];
    if (!strncmp(l, "//#if ", 6)) {
      const char *w = l + 6;
      int neg = *w == '!';
      w += neg;
      int v = def_value(defs, w, word_len(w)) != 0;
      if (depth < 64) keep[depth++] = neg ? !v : v;
    } else if (!strncmp(l, "//#else", 7)) {
      if (depth) keep[depth - 1] = !keep[depth - 1];
    } else if (!strncmp(l, "//#endif", 8)) {
      if (depth) depth--;
    } else if (!strncmp(l, "//#for ", 7)) {
      /* "//#for V in NAME": the body up to the matching //#endfor */
      const char *v = l + 7;
      size_t vn = word_len(v);
      const char *nm = v + vn + 4; /* " in " */
      long count = def_value(defs, nm, word_len(nm));
      const char *b0 = l + n, *q = b0;
      int nest = 1;
      while (q < end) {
        size_t qn = line_len(q);
        if (!strncmp(q, "//#for ", 7)) nest++;
        else if (!strncmp(q, "//#endfor", 9) && --nest == 0) break;
        q += qn;
      }
      if (on) {
        char pat[40];
        snprintf(pat, sizeof pat, "{%.*s}", (int)(vn < 30 ? vn : 30), v);
        size_t pl = strlen(pat);
        for (long i = 0; i < count; i++) {
          sbuf body = {0};
          char num[24];
          snprintf(num, sizeof num, "%ld", i);
          for (const char *r = b0; r < q;) {
            if (!strncmp(r, pat, pl)) put(&body, num, strlen(num)), r += pl;
            else put(&body, r, 1), r++;
          }
          if (body.p) pp(body.p, body.n, defs, out);
          free(body.p);
        }
      }
      n = (size_t)(q - l);
      if (q < end) n += line_len(q);
    } else if (!strncmp(l, "//#endfor", 9)) {
      /* unmatched: ignored */
    } else if (on) {
      put(out, l, n);
    }
    l += n;
  }
}

/* EMU: the builtins to the kernel's emu_* functions (sgmat.h) */
static char *emu_rewrite(const char *s) {
  sbuf o = {0};
  put(&o, "", 0);
  for (const char *q = s; *q;) {
    size_t n = line_len(q);
    if (!strncmp(q, "enable chromium_experimental_subgroup_matrix;", 45) ||
        !strncmp(q, "diagnostic(off, chromium.", 25)) {
      q += n;
      continue;
    }
    const char *ld = "subgroupMatrixLoad<", *st = "subgroupMatrixStore<", *mma = "subgroupMatrixMultiplyAccumulate(";
    if (!strncmp(q, mma, strlen(mma))) {
      put(&o, "emu_mma(", 8);
      q += strlen(mma);
    } else if (!strncmp(q, ld, strlen(ld)) || !strncmp(q, st, strlen(st))) {
      int is_ld = !strncmp(q, ld, strlen(ld));
      const char *gt = strchr(q, '>'), *maj = gt;
      while (maj > q && maj[-1] != ' ' && maj[-1] != '<') maj--;
      const char *arr = gt + 3; /* ">(&" */
      size_t an = word_len(arr);
      char name[96];
      snprintf(name, sizeof name, "emu_%s_%.*s_%.*s(", is_ld ? "ld" : "st", (int)an, arr, (int)(gt - maj), maj);
      put(&o, name, strlen(name));
      q = arr + an + 2; /* ", " */
    } else {
      put(&o, q, 1);
      q++;
    }
  }
  return o.p;
}

char *tz_sgmat_preprocess(const char *src, const char *defs) {
  sbuf out = {0};
  put(&out, "", 0);
  pp(src, strlen(src), defs, &out);
  if (def_value(defs, "EMU", 3)) {
    char *e = emu_rewrite(out.p);
    free(out.p);
    return e;
  }
  return out.p;
}

/* ---- tiles ---- */
int tz_sgmat_tile_parse(const char *s, tz_sgmat_tile *t) {
  tz_sgmat_tile g = {0};
  char kind = 0, flags[16] = "";
  int used = 0;
  if (!s || sscanf(s, "%c:%u:%ux%u:%ux%u%n", &kind, &g.bk, &g.sg_m, &g.sg_n, &g.tm, &g.tn, &used) != 6 ||
      (kind != 'o' && kind != 'n') || (s[used] && (s[used] != ':' || sscanf(s + used + 1, "%15s", flags) != 1)))
    return tz_err("webgpu sgmat: tile '%s' is not o|n:BK:SGMxSGN:TMxTN[:FLAGS]", s ? s : "(null)");
  g.kern = kind == 'n';
  g.nbuf = 1;
  for (const char *f = flags; *f; f++) {
    if (*f == 'd' && !g.kern) g.direct = 1;
    else if (*f == 'v' && g.kern) g.tv8 = 1;
    else if (*f == 't' && g.kern) g.trb = 1;
    else if (*f == '2' && g.kern) g.nbuf = 2;
    else if (*f == 'p' && g.kern) g.pf = 1;
    else if (*f == 'g' && g.kern) g.swz = 1;
    else if (*f == 'f' && g.kern) g.a32 = 1;
    else if (*f == 'w' && g.kern) g.a16w = 1;
    else if (*f == 'P' && g.kern) {
      char *e;
      unsigned long v = strtoul(f + 1, &e, 10);
      g.pers = e == f + 1 ? 264 : (uint32_t)v;
      if (!g.pers || g.pers > 65535) return tz_err("webgpu sgmat: tile '%s': P takes 1..65535 workgroups", s);
      f = e - 1;
    }
    else return tz_err("webgpu sgmat: tile '%s': unknown flag '%c'", s, *f);
  }
  if (!g.bk || g.bk % 16 || !g.sg_m || !g.sg_n || !g.tm || !g.tn)
    return tz_err("webgpu sgmat: tile '%s': BK must be a positive multiple of 16, the counts positive", s);
  *t = g;
  return 0;
}

void tz_sgmat_tile_name(tz_sgmat_tile t, char *buf, size_t cap) {
  char f[24] = "", *q = f;
  if (t.kern) {
    if (t.tv8) *q++ = 'v';
    if (t.trb) *q++ = 't';
    if (t.nbuf == 2) *q++ = '2';
    if (t.pf) *q++ = 'p';
    if (t.swz) *q++ = 'g';
    if (t.pers) q += snprintf(q, 8, "P%u", t.pers);
    if (t.a32) *q++ = 'f';
    if (t.a16w) *q++ = 'w';
  } else if (t.direct) {
    *q++ = 'd';
  }
  *q = 0;
  snprintf(buf, cap, "%c:%u:%ux%u:%ux%u%s%s", t.kern ? 'n' : 'o', t.bk, t.sg_m, t.sg_n, t.tm, t.tn, f[0] ? ":" : "", f);
}

uint32_t tz_sgmat_tile_smem(tz_sgmat_tile t, int form, int has_bias) {
  uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16, bk = t.bk;
  int a_mk = form != TZ_SGMAT_DYTX, b_nk = form == TZ_SGMAT_XWT;
  uint32_t a_rows = a_mk ? bm : bk, a_cols = a_mk ? bk : bm;
  if (!t.kern) {
    uint32_t tiles = t.direct ? 0 : (a_rows * (a_cols + 8) + bk * (bn + 8)) * 2;
    return tiles + (has_bias ? 16 * bn * 4 : 0);
  }
  uint32_t b_sz = b_nk && !t.trb ? bn * (bk + 8) : bk * (bn + 8);
  /* the f32 tile wst: the bias rows, and with o16 the output staging (one 16x16 block per
   * subgroup), the larger of the two */
  uint32_t wst = has_bias ? 16 * t.sg_n * 16 * 4 : 0, stg = t.o16 ? t.sg_m * t.sg_n * 256 * 4 : 0;
  return (t.nbuf ? t.nbuf : 1) * (a_rows * (a_cols + 8) + b_sz) * 2 + (stg > wst ? stg : wst);
}

int tz_sgmat_tile_fits(tz_sgmat_tile t, int form, uint32_t M, uint32_t N, uint32_t K, uint32_t split,
                       uint32_t sgsize, uint32_t smem_limit, uint32_t max_threads, const char **why) {
  const char *w = NULL;
  uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16, nt = t.sg_m * t.sg_n * sgsize;
  if (!t.bk || t.bk % 16 || !bm || !bn || !sgsize) w = "bad tile";
  else if (M % bm || N % bn || K % t.bk) w = "shape not a multiple of the tile";
  else if (split > 1 && (form != TZ_SGMAT_DYTX || !t.kern)) w = "split-K is for the weight gradient on kernel n";
  else if (nt > max_threads) w = "too many threads per workgroup";
  else if (t.kern && (t.nbuf < 1 || t.nbuf > 2)) w = "nbuf must be 1 or 2";
  else if (t.kern && t.tv8 && t.trb) w = "trb needs f16 tiles (no v)";
  else if (t.pers && (!t.pf || t.nbuf == 2 || split > 1)) w = "P needs p, one buffer and no split";
  else if (t.a32 && !t.kern) w = "f (a in f32) is kernel n's";
  else if (t.a16w && (!t.a32 || !t.pf || t.nbuf == 2)) w = "w (a's f16 copy) needs f, p and one buffer";
  else if (t.o16 && (!t.kern || split > 1)) w = "an f16 output is kernel n's, without split";
  else if (t.epi && (!t.o16 || t.a16w)) w = "an epilogue tensor needs an f16 output (o16) and no a16w";
  else if (t.db && (!t.kern || form != TZ_SGMAT_DYTX || t.a32 || !t.pf || t.nbuf > 1 || !t.tv8 || t.o16 || t.epi ||
                     t.pers))
    w = "the bias sums (db) are kernel n's weight gradient with f16 a, v, p, one buffer and no P";
  else if (t.db && (nt % (bm / 8) || 2 * nt > t.bk * (bm + 8) / 8))
    w = "the bias sums (db) need the threads in whole rows of a's tile and 2 vec4 each in it";
  else if (t.kern && ((bm * t.bk / 8) % nt || (bn * t.bk / 8) % nt)) w = "tile loads do not divide over the threads";
  else if (!t.kern && !t.direct && ((bm * t.bk / 4) % nt || (bn * t.bk / 4) % nt))
    w = "tile loads do not divide over the threads";
  else if (tz_sgmat_tile_smem(t, form, form == TZ_SGMAT_XWT) > smem_limit) w = "workgroup memory over the limit";
  if (why) *why = w;
  return w == NULL;
}

uint32_t tz_sgmat_splits(uint32_t tiles, uint32_t K, uint32_t bk) {
  const char *se = getenv("TEZGAH_WEBGPU_SGMAT_SLOTS");
  uint32_t S;
  if (!se || atoi(se) > 0) {
    double slots = se ? atoi(se) : 132, best = 1e30;
    /* the cost of a piece, percent (TEZGAH_WEBGPU_SGMAT_SPLIT_COST, tuning; default 4) */
    const char *pc = getenv("TEZGAH_WEBGPU_SGMAT_SPLIT_COST");
    char *end = NULL;
    double pv = pc ? strtod(pc, &end) : -1;
    double per = (pc && end != pc && !*end && pv >= 0 ? pv : 4.0) / 100; /* junk: the default */
    if (!tiles || K < 1024 || !bk) return 1;
    S = 1;
    for (uint32_t s = 1; s <= 16 && (s == 1 || K / s >= 512); s++) {
      double cost = ceil(tiles * (double)s / slots) / s * (1 + per * s);
      if (cost < best - 1e-9) best = cost, S = s;
    }
  } else {
    if (!tiles || tiles >= 264 || K < 2048 || !bk) return 1;
    S = (264 + tiles - 1) / tiles;
    while (S > 1 && K / S < 512) S--;
    if (S > 16) S = 16;
  }
  /* whole BK pieces; the count that covers K with them */
  uint32_t ks = ((K + S - 1) / S + bk - 1) / bk * bk;
  return (K + ks - 1) / ks;
}

const char *tz_sgmat_file(tz_sgmat_tile t) { return t.kern ? "matmul_sgmm" : "matmul_sgmat"; }

void tz_sgmat_grid(tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t split, uint32_t g[3]) {
  uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16;
  g[0] = bn ? N / bn : 0, g[1] = bm ? M / bm : 0, g[2] = split ? split : 1;
  if (t.pers && t.kern) {
    uint32_t tiles = g[0] * g[1];
    g[0] = tiles < t.pers ? tiles : t.pers, g[1] = g[2] = 1;
  }
}

size_t tz_sgmat_prefix(char *buf, size_t cap, tz_sgmat_tile t, int form, int acc, int has_bias, int split,
                       uint32_t sgsize, int emu) {
  uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16, nt = t.sg_m * t.sg_n * sgsize;
  int a_mk = form != TZ_SGMAT_DYTX, b_nk = form == TZ_SGMAT_XWT;
  uint32_t a_per = nt ? bm * t.bk / 8 / nt : 0, b_per = nt ? bn * t.bk / 8 / nt : 0;
  /* (an epilogue tensor needs O16 without A16W and never goes with ACC: DSWIGLU's [M, 2N] c
   * would be read at [M, N] indices) */
  uint32_t epi = t.epi && t.o16 && t.kern && !t.a16w && !acc ? t.epi : TZ_SGMAT_EPI_NONE;
  /* (DB: the A loads' registers, tile column 0, summed; its checks are tz_sgmat_tile_fits') */
  int db = t.db && t.kern && form == TZ_SGMAT_DYTX && !t.a32 && t.pf && t.nbuf <= 1 && t.tv8 && !t.o16 && !epi &&
           !t.pers;
  /* EPRE (matmul_sgmm.wgsl): binding 5's epilogue chunks loaded in the last k step, where the
   * epilogue reads them and the k loop is PF's with one buffer: by default DGELU's h only. H200
   * (2026-12-04, per-shape profiles of GPT-2 124M and the llama shape, ms/step): DGELU's
   * 16384x3072x768 5.705 -> 5.473 with it; RES's 16384x768x768 1.485 -> 1.550 (its K = 3072 call
   * 3.896 -> 3.895) and DSWIGLU's 16384x2048x768 4.890 -> 5.102, so those two keep the loads
   * after the k loop (in the last k step the next tile's prefetch, the k step's matrices and these
   * chunks are live at once: more registers). TEZGAH_WEBGPU_SGMAT_EPRE=0: none (A/B), =all: RES
   * and DSWIGLU too; any other value: the default. */
  const char *ee = getenv("TEZGAH_WEBGPU_SGMAT_EPRE");
  int e_off = ee && !strcmp(ee, "0"), e_all = ee && !strcmp(ee, "all");
  int epre = (epi == TZ_SGMAT_EPI_DGELU || (e_all && (epi == TZ_SGMAT_EPI_RES || epi == TZ_SGMAT_EPI_DSWIGLU))) &&
             t.pf && t.nbuf != 2 && !e_off;
  int n = snprintf(buf, cap,
                   "const BM = %uu;\nconst BN = %uu;\nconst BK = %uu;\nconst SG_M = %uu;\nconst SG_N = %uu;\n"
                   "const TM = %uu;\nconst TN = %uu;\nconst SGSIZE = %uu;\nconst A_MK = %s;\nconst B_NK = %s;\n"
                   "const ACC = %s;\nconst NBUF = %uu;\n"
                   "//defs DIRECT=%d HAS_BIAS=%d TM=%u TN=%u A_PER=%u B_PER=%u A_MK=%d B_NK=%d ACC=%d TV8=%d TRB=%d "
                   "NBUF2=%d PF=%d SPLIT=%d SWZ=%d PERS=%d A32=%d A16W=%d O16=%d WST=%d EMU=%d RES=%d GELU=%d "
                   "DGELU=%d DSWIGLU=%d EPIN=%d DB=%d EPRE=%d\n",
                   bm, bn, t.bk, t.sg_m, t.sg_n, t.tm, t.tn, sgsize, a_mk ? "true" : "false", b_nk ? "true" : "false",
                   acc ? "true" : "false", t.nbuf ? t.nbuf : 1, t.direct != 0, has_bias != 0, t.tm, t.tn, a_per, b_per,
                   a_mk, b_nk, acc != 0, t.tv8 != 0, t.trb != 0 && b_nk, t.nbuf == 2, t.pf != 0, split > 1, t.swz != 0, t.pers != 0 && t.kern,
                   t.a32 != 0 && t.kern, t.a16w != 0 && t.a32 && t.kern, t.o16 != 0 && t.kern,
                   has_bias || (t.o16 && t.kern), emu != 0, epi == TZ_SGMAT_EPI_RES, epi == TZ_SGMAT_EPI_GELU,
                   epi == TZ_SGMAT_EPI_DGELU, epi == TZ_SGMAT_EPI_DSWIGLU,
                   epi == TZ_SGMAT_EPI_RES || epi == TZ_SGMAT_EPI_DGELU, db, epre);
  if (n >= 0 && t.a16w && t.a32 && t.kern && (size_t)n < cap) /* A16W's output, binding 5 (the fifth argument) */
    n += snprintf(buf + n, cap - (size_t)n, "@group(0) @binding(5) var<storage, read_write> a16w: array<vec4<u32>>;\n");
  else if (n >= 0 && epi == TZ_SGMAT_EPI_GELU && (size_t)n < cap) /* GELU's second output, binding 5 */
    n += snprintf(buf + n, cap - (size_t)n, "@group(0) @binding(5) var<storage, read_write> ga: array<vec4<u32>>;\n");
  else if (n >= 0 && epi && (size_t)n < cap) /* RES's residual, DGELU's h, DSWIGLU's gu: binding 5 */
    n += snprintf(buf + n, cap - (size_t)n, "@group(0) @binding(5) var<storage, read> res: array<vec4<u32>>;\n");
  return n < 0 ? 0 : (size_t)n;
}

/* ---- the standalone run ---- */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The pipeline of `file` with `prefix` (cached); NULL with tz_err. A shader or pipeline error
 * is reported and cleared, so later pipelines can still be made (the device is not lost). */
static int pipeline(tz_sgmat *s, const char *file, const char *prefix, WGPUComputePipeline *pipe,
                    WGPUBindGroupLayout *bgl) {
  size_t kn = strlen(file) + strlen(prefix) + 2;
  char *key = malloc(kn);
  snprintf(key, kn, "%s|%s", file, prefix);
  for (int i = 0; i < s->npipes; i++)
    if (!strcmp(s->pipes[i].key, key)) {
      free(key);
      *pipe = s->pipes[i].pipe, *bgl = s->pipes[i].bgl;
      return 0;
    }
  const char *body = kernel_src(file);
  if (!body) {
    free(key);
    return tz_err("webgpu sgmat: kernel %s not embedded", file);
  }
  /* the directives (preprocessed too: EMU drops some) first, then the prefix, then the rest */
  char *pre = tz_sgmat_preprocess(body, prefix);
  const char *mark = "// end of directives\n", *rest = strstr(pre, mark);
  size_t dn = rest ? (size_t)(rest - pre) + strlen(mark) : 0;
  size_t n = strlen(pre) + strlen(prefix) + 8;
  char *src = malloc(n);
  snprintf(src, n, "%.*s%s%s", (int)dn, pre, prefix, pre + dn);
  free(pre);
  if (getenv("TZ_SGMAT_DUMP")) fprintf(stderr, "---- %s\n%s\n", file, src);
  s->failed = 0;
  WGPUShaderSourceWGSL ws = {{NULL, WGPUSType_ShaderSourceWGSL}, tz_wgpu_sv(src)};
  WGPUShaderModuleDescriptor md = {&ws.chain, tz_wgpu_sv(file)};
  WGPUShaderModule mod = W.wgpuDeviceCreateShaderModule(s->dev, &md);
  WGPUComputePipelineDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.label = tz_wgpu_sv(file);
  pd.compute.module = mod;
  pd.compute.entryPoint = tz_wgpu_sv("main");
  WGPUComputePipeline p = W.wgpuDeviceCreateComputePipeline(s->dev, &pd);
  free(src);
  W.wgpuShaderModuleRelease(mod);
  W.wgpuInstanceProcessEvents(s->inst);
  if (s->failed || !p) {
    if (p) W.wgpuComputePipelineRelease(p);
    free(key);
    int rc = tz_err("webgpu sgmat: pipeline %s: %s", file, s->failed ? s->errmsg : "creation failed");
    if (!s->lost) s->failed = 0;
    return rc;
  }
  if (s->npipes == 64) { /* full: forget the oldest */
    free(s->pipes[0].key);
    W.wgpuBindGroupLayoutRelease(s->pipes[0].bgl);
    W.wgpuComputePipelineRelease(s->pipes[0].pipe);
    memmove(&s->pipes[0], &s->pipes[1], 63 * sizeof s->pipes[0]);
    s->npipes--;
  }
  s->pipes[s->npipes].key = key;
  s->pipes[s->npipes].pipe = p;
  s->pipes[s->npipes].bgl = W.wgpuComputePipelineGetBindGroupLayout(p, 0);
  *pipe = p, *bgl = s->pipes[s->npipes].bgl;
  s->npipes++;
  return 0;
}

/* Resident buffer i with at least `bytes` (16-byte multiple); what it held is lost if it grows. */
static WGPUBuffer rbuf(tz_sgmat *s, int i, uint64_t bytes, WGPUBufferUsage u) {
  bytes = (bytes + 15) / 16 * 16;
  if (s->buf[i] && s->cap[i] >= bytes) return s->buf[i];
  if (s->buf[i]) W.wgpuBufferDestroy(s->buf[i]), W.wgpuBufferRelease(s->buf[i]);
  WGPUBufferDescriptor d = {NULL, tz_wgpu_sv("sgmat"), u, bytes, 0};
  s->buf[i] = W.wgpuDeviceCreateBuffer(s->dev, &d);
  s->cap[i] = bytes;
  if (i == 0) s->up_a = 0;
  if (i == 1) s->up_b = 0;
  return s->buf[i];
}

/* Copy n bytes of GPU buffer src into host memory out through the map-readable buffer rb (at
 * least n rounded up to 16 bytes). Errors: "webgpu sgmat: readback<what> failed[: device error]",
 * "no mapped range". */
static int readback(tz_sgmat *s, WGPUBuffer src, WGPUBuffer rb, uint64_t n, void *out, const char *what) {
  size_t mapn = (size_t)((n + 15) / 16 * 16);
  WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(s->dev, NULL);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, src, 0, rb, 0, mapn);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(s->queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  int mst = 0;
  WGPUBufferMapCallbackInfo mci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_mapped, &mst, NULL};
  if (wait(s, W.wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, mapn, mci)) != 0 || mst != 1)
    return tz_err("webgpu sgmat: readback%s failed%s%s", what, s->failed ? ": " : "", s->failed ? s->errmsg : "");
  const void *pm = W.wgpuBufferGetConstMappedRange(rb, 0, mapn);
  int rc = pm ? 0 : tz_err("webgpu sgmat: no mapped range");
  if (pm) memcpy(out, pm, (size_t)n);
  W.wgpuBufferUnmap(rb);
  return rc;
}

int tz_sgmat_run(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                 const uint16_t *a, const uint16_t *b, const float *bias, float *c, int reps, double *ms) {
  return tz_sgmat_run_ex(s, form, t, M, N, K, a, b, bias, c, reps, ms, 1, 0, 0);
}

int tz_sgmat_run_ex(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                    const uint16_t *a, const uint16_t *b, const float *bias, float *c, int reps, double *ms,
                    uint32_t split, int keep_ab, int emu) {
  if (!s->usable) return tz_err("webgpu sgmat: not usable here: %s", s->why);
  if (s->lost) return tz_err("webgpu sgmat: %s", s->errmsg);
  if (emu != s->emu) return tz_err("webgpu sgmat: emu runs need tz_sgmat_open_emu's handle, and only those");
  if (emu && !t.kern) return tz_err("webgpu sgmat: the emulated builtins are matmul_sgmm.wgsl's (kernel n)");
  if (t.o16) return tz_err("webgpu sgmat: the standalone run has no f16 output (o16 is the backend's)");
  if (bias && form != TZ_SGMAT_XWT) return tz_err("webgpu sgmat: bias only with the X·Wᵀ form");
  if (split < 1) split = 1;
  const char *why;
  if (!tz_sgmat_tile_fits(t, form, M, N, K, split, s->sgsize, s->lim.maxComputeWorkgroupStorageSize,
                          s->lim.maxComputeInvocationsPerWorkgroup, &why))
    return tz_err("webgpu sgmat: tile does not fit %ux%ux%u: %s", M, N, K, why);
  uint32_t ks = K;
  if (split > 1) {
    ks = ((K + split - 1) / split + t.bk - 1) / t.bk * t.bk;
    split = (K + ks - 1) / ks;
  }
  int acc = form == TZ_SGMAT_DYTX;
  char prefix[1024];
  tz_sgmat_prefix(prefix, sizeof prefix, t, form, acc && split == 1, bias != NULL, (int)split, s->sgsize, emu);
  if (t.direct) /* the element-wise views of a and b (kern 0's DIRECT loads) */
    strcat(prefix, "@group(0) @binding(5) var<storage, read> a_h: array<f16>;\n"
                   "@group(0) @binding(6) var<storage, read> b_h: array<f16>;\n");
  WGPUComputePipeline pipe, spipe = NULL;
  WGPUBindGroupLayout bgl, sbgl = NULL;
  if (pipeline(s, tz_sgmat_file(t), prefix, &pipe, &bgl) != 0) return -1;
  if (split > 1 && pipeline(s, "sgmat_sum", "", &spipe, &sbgl) != 0) return -1;
  uint64_t na = (uint64_t)M * K * (t.a32 ? 4 : 2), nb = (uint64_t)N * K * 2, nc = (uint64_t)M * N * 4, np = nc * split;
  uint64_t lim = s->lim.maxStorageBufferBindingSize;
  if (na > lim || nb > lim || np > lim) return tz_err("webgpu sgmat: an operand is over the binding limit %llu", (unsigned long long)lim);
  WGPUBufferUsage st = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
  WGPUBuffer ba = rbuf(s, 0, na, st), bb = rbuf(s, 1, nb, st), bc = rbuf(s, 2, nc, st), bz = rbuf(s, 3, (uint64_t)N * 4, st);
  WGPUBuffer bu = rbuf(s, 4, 512, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst);
  WGPUBuffer rb = rbuf(s, 5, nc, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
  WGPUBuffer bp = split > 1 ? rbuf(s, 6, np, st) : NULL;
  uint64_t nw = (uint64_t)M * K * 2; /* a16w: a's f16 copy, read back and compared with a */
  WGPUBuffer bw = t.a16w ? rbuf(s, 7, nw, st) : NULL;
  /* keep_ab: the buffers already hold a prefix of the same arrays (uploaded by earlier runs) */
  if (!keep_ab || s->up_a < na || s->up_a32 != (int)t.a32) {
    if (t.a32) { /* a's f16 values as f32 (exact): the f16 run's results */
      float *af = malloc((size_t)na);
      if (!af) return tz_err("webgpu sgmat: out of memory (%llu bytes)", (unsigned long long)na);
      for (uint64_t i = 0; i < (uint64_t)M * K; i++) af[i] = tz_sgmat_f32(a[i]);
      W.wgpuQueueWriteBuffer(s->queue, ba, 0, af, (size_t)na);
      free(af);
    } else {
      W.wgpuQueueWriteBuffer(s->queue, ba, 0, a, (size_t)na);
    }
    s->up_a = na, s->up_a32 = (int)t.a32;
  }
  if (!keep_ab || s->up_b < nb) W.wgpuQueueWriteBuffer(s->queue, bb, 0, b, (size_t)nb), s->up_b = nb;
  if (bias) W.wgpuQueueWriteBuffer(s->queue, bz, 0, bias, (size_t)N * 4);
  if (acc) W.wgpuQueueWriteBuffer(s->queue, bc, 0, c, (size_t)nc);
  /* the kernel's uniform block (the backend's layout, wg_run_ex): element offsets (all 0 here),
   * slots, then M, N, K, KS; then sgmat_sum's at byte 256 (an offset alignment): MN / 4,
   * splits, acc */
  uint32_t pr[128] = {0};
  pr[16] = M, pr[17] = N, pr[18] = K, pr[19] = ks;
  pr[64] = (uint32_t)(nc / 16), pr[65] = split, pr[66] = (uint32_t)acc;
  W.wgpuQueueWriteBuffer(s->queue, bu, 0, pr, sizeof pr);
  /* bindings: 0 uniform, 1 c (or the partials), 2 a, 3 b, 4 bias (all in every layout: the
   * kernel touches them), 5 a_h and 6 b_h with DIRECT */
  WGPUBindGroupEntry e[7];
  memset(e, 0, sizeof e);
  WGPUBuffer bufs[7] = {bu, bp ? bp : bc, ba, bb, bz, bw ? bw : ba, bb};
  uint64_t sizes[7] = {128, bp ? np : nc, (na + 15) / 16 * 16, (nb + 15) / 16 * 16, ((uint64_t)N * 4 + 15) / 16 * 16,
                       bw ? (nw + 15) / 16 * 16 : (na + 15) / 16 * 16, (nb + 15) / 16 * 16};
  int used[7] = {1, 1, 1, 1, 1, t.direct != 0 || bw != NULL, t.direct != 0};
  size_t ne = 0;
  for (int i = 0; i < 7; i++)
    if (used[i]) e[ne].binding = (uint32_t)i, e[ne].buffer = bufs[i], e[ne].size = sizes[i], ne++;
  WGPUBindGroupDescriptor bd = {NULL, tz_wgpu_sv("sgmat"), bgl, ne, e};
  WGPUBindGroup bg = W.wgpuDeviceCreateBindGroup(s->dev, &bd), sbg = NULL;
  uint32_t sgx = 0, sgy = 1;
  if (split > 1) {
    WGPUBindGroupEntry se[3];
    memset(se, 0, sizeof se);
    se[0].binding = 0, se[0].buffer = bu, se[0].offset = 256, se[0].size = 16;
    se[1].binding = 1, se[1].buffer = bc, se[1].size = nc;
    se[2].binding = 2, se[2].buffer = bp, se[2].size = np;
    WGPUBindGroupDescriptor sd = {NULL, tz_wgpu_sv("sgmat sum"), sbgl, 3, se};
    sbg = W.wgpuDeviceCreateBindGroup(s->dev, &sd);
    uint64_t groups = (nc / 16 + 255) / 256;
    sgx = (uint32_t)(groups < 65535 ? groups : 65535), sgy = (uint32_t)((groups + 65534) / 65535);
  }
  int rc = 0;
  uint32_t grid[3];
  tz_sgmat_grid(t, M, N, split, grid);
  /* `count` repetitions (the matmul, and the partial sums after a split) in one submission */
#define SUBMIT(count)                                                                           \
  {                                                                                             \
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(s->dev, NULL);                    \
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);              \
    for (int q = 0; q < (count); q++) {                                                         \
      W.wgpuComputePassEncoderSetPipeline(pass, pipe);                                          \
      W.wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, NULL);                               \
      W.wgpuComputePassEncoderDispatchWorkgroups(pass, grid[0], grid[1], grid[2]);             \
      if (sbg) {                                                                                \
        W.wgpuComputePassEncoderSetPipeline(pass, spipe);                                       \
        W.wgpuComputePassEncoderSetBindGroup(pass, 0, sbg, 0, NULL);                            \
        W.wgpuComputePassEncoderDispatchWorkgroups(pass, sgx, sgy, 1);                          \
      }                                                                                         \
    }                                                                                           \
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
    rc = readback(s, bc, rb, nc, c, "");
  }
  if (!rc && bw) { /* a's f16 copy: a, bit for bit (a's values are f16, uploaded as f32) */
    uint16_t *pw = malloc((size_t)nw);
    if (!pw) rc = tz_err("webgpu sgmat: out of host memory for a's f16 copy");
    else rc = readback(s, bw, rbuf(s, 8, nw, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst), nw, pw,
                       " of a's f16 copy");
    uint64_t bad = 0, first = 0;
    for (uint64_t i = 0; !rc && i < (uint64_t)M * K; i++)
      if (pw[i] != a[i] && !bad++) first = i;
    if (!rc && bad)
      rc = tz_err("webgpu sgmat: a's f16 copy (w) differs from a at %llu of %llu halves, first at %llu",
                  (unsigned long long)bad, (unsigned long long)M * K, (unsigned long long)first);
    free(pw);
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
  if (sbg) W.wgpuBindGroupRelease(sbg);
  if (rc && !s->lost) s->failed = 0; /* reported; later runs may go on */
  return rc;
}
