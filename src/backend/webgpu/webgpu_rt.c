/* WebGPU backend runtime: the instance, adapter and device (the features requested, the
 * adapter's limits, Dawn's toggles), the uncaptured-error and device-lost callbacks, the op
 * table (tz_backend_webgpu_create), destroy, and the one-line description and `tezgah info`.
 * Everything that picks or configures the adapter and device lives here, in one place, so a
 * change of Dawn or of the device setup touches this file only. The execution model is described
 * in webgpu_internal.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/webgpu/webgpu_internal.h"
#include "backend/webgpu/sgmat.h"

/* ---- errors ---- */
static void on_error(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                     void *u1, void *u2) {
  wg_ctx *c = u1;
  if (c->failed) return;
  c->failed = 1;
  char m[900];
  tz_wgpu_sv_copy(m, sizeof m, message);
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
  tz_wgpu_sv_copy(m, sizeof m, message);
  snprintf(c->errmsg, sizeof c->errmsg, "device lost (reason %u): %s", reason, m);
}

/* Ops cannot return errors (backend.h): a device error ends the program with its message. */
void wg_check(wg_ctx *c) {
  W.wgpuInstanceProcessEvents(c->inst);
  if (c->failed) {
    char msg[sizeof c->errmsg + 16];
    snprintf(msg, sizeof msg, "webgpu: %s", c->errmsg);
    tz_fatal(msg);
  }
}
void wg_fail(wg_ctx *c, const char *fmt, const char *a, const char *b, size_t x, uint64_t y) {
  if (!c->failed) {
    c->failed = 1;
    snprintf(c->errmsg, sizeof c->errmsg, fmt, a, b, x, y);
  }
  wg_check(c);
}

/* env_int's warning for a switch that is not a decimal integer: once per variable name (the first
 * 32 names remembered), since the switches are read at every call */
void wg_env_bad(const char *name, const char *value, int dflt) {
  static char seen[32][64];
  static int nseen;
  for (int i = 0; i < nseen; i++)
    if (!strcmp(seen[i], name)) return;
  if (nseen < 32) snprintf(seen[nseen++], sizeof seen[0], "%s", name);
  fprintf(stderr, "tezgah: warning: %s='%s' is not a decimal integer; its default %d is used\n", name, value, dflt);
}

/* ---- waiting on futures ---- */
/* A CPU adapter (lavapipe; SwiftShader in a browser) compiles a pipeline's code at its first
 * dispatch, inside the wait that follows: `tezgah sample --backend webgpu` on lavapipe printed
 * nothing for 12 s here (10 pipelines, all created in 0.14 s, then 12.3 s in the first wait;
 * cold Mesa shader cache, 2-core VM, 2026-12-03; a new user saw ~30 s) and ran in 0.25 s once
 * the cache held them. So when a wait that follows new pipelines has lasted
 * TEZGAH_WEBGPU_COMPILE_NOTE_S seconds (default 2; 0: from its start, for the tests) on a CPU
 * adapter, one line on stderr says why: once per backend, never on a GPU adapter nor in a
 * quick run from a warm cache. stdout (sample's text) is untouched. s: the seconds of that wait,
 * or (the second caller, wg_pipeline) those spent creating pipelines so far: the node Dawn on
 * lavapipe compiles in wgpuDeviceCreateComputePipeline, so a cold first training step spent ~48 s
 * there with no single wait of 2 s, and the note came only in the sample after training. */
void wg_compile_note(wg_ctx *c, double s) {
  if (c->compile_noted || c->info.adapterType != WGPUAdapterType_CPU) return;
  if (s < env_int("TEZGAH_WEBGPU_COMPILE_NOTE_S", 2)) return;
  c->compile_noted = 1;
  char dev[128];
  tz_wgpu_sv_copy(dev, sizeof dev, c->info.device);
  /* no count: training's first step compiles several batches of pipelines, and this wait the first */
  fprintf(stderr, "webgpu: %s, a CPU adapter, is compiling pipelines on first use (up to a minute from a cold shader "
          "cache, quick once cached)\n", dev[0] ? dev : "the adapter");
}

/* At most TEZGAH_WEBGPU_WAIT_S seconds (default 600): a hung device ends the program with an
 * error rather than waiting forever. A CPU adapter (lavapipe) compiles a pipeline's code at its
 * first dispatch, inside the wait for the next readback: on a loaded machine several cold
 * compiles took more than 10 minutes of wall time (docs/RELIABILITY.md), so the tests set a
 * longer limit and leave hangs to ctest's per-test TIMEOUT (tests/CMakeLists.txt). On timeout
 * the error names the limit (c->errmsg; the caller's own message does not replace it). */
int wg_wait_future(wg_ctx *c, WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  int lim = env_int("TEZGAH_WEBGPU_WAIT_S", 600);
  if (lim < 1) lim = 1;
  int fresh = c->npipes > c->npipes_waited; /* pipelines the adapter may still be compiling */
  if (fresh) wg_compile_note(c, 0);
  for (int i = 0; i < lim; i++) {
    WGPUWaitStatus s = W.wgpuInstanceWaitAny(c->inst, 1, &wi, 1000000000ull);
    if (s == WGPUWaitStatus_Success && wi.completed) {
      c->npipes_waited = c->npipes;
      return 0;
    }
    if (s != WGPUWaitStatus_TimedOut) return -1;
    if (fresh) wg_compile_note(c, i + 1);
    W.wgpuInstanceProcessEvents(c->inst);
    if (c->failed) return -1;
  }
  if (!c->failed) {
    c->failed = 1;
    snprintf(c->errmsg, sizeof c->errmsg,
             "the device did not answer within %d s (TEZGAH_WEBGPU_WAIT_S sets the limit in seconds)", lim);
  }
  return -1;
}

/* ---- lifecycle ---- */
static void wg_destroy(tz_backend *be) {
  if (!be) return;
  wg_ctx *c = CTX(be);
  if (c) {
    if (c->dev) {
      wg_flush(c);
      wg_bg_clear(c);
      if (c->scratch) wg_free(be, c->scratch);
      if (c->stage) wg_free(be, c->stage);
      if (c->wt) wg_free(be, c->wt);
      if (c->a32) wg_free(be, c->a32);
      for (int i = 0; i < 3; i++)
        if (c->a32x[i]) wg_free(be, c->a32x[i]);
      for (int i = 0; i < 2; i++)
        if (c->sg16[i]) wg_free(be, c->sg16[i]);
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


/* Standard error (file descriptor 2) held in a temporary file while the Vulkan loader and Dawn
 * look for an adapter. Why: where there is none they print several lines to stderr (the loader's
 * "Found no drivers!", Dawn's VK_ERROR_INCOMPATIBLE_DRIVER with its source line) before our
 * one-line error. release_stderr replays them (replay != 0: an adapter was found, or
 * TEZGAH_WEBGPU_VERBOSE=1) or drops them; returns the bytes held. No hold where a temporary
 * file or the descriptors cannot be had (and not in the wasm build). */
typedef struct {
  int saved;
  FILE *tmp;
} err_hold;
static void hold_stderr(err_hold *h) {
  h->saved = -1, h->tmp = NULL;
#ifndef __wasi__ /* (the browser build: no dup, no tmpfile) */
  fflush(stderr);
  if (!(h->tmp = tmpfile())) return;
  if ((h->saved = dup(2)) < 0 || dup2(fileno(h->tmp), 2) < 0) {
    if (h->saved >= 0) close(h->saved);
    fclose(h->tmp);
    h->tmp = NULL, h->saved = -1;
  }
#endif
}
static long release_stderr(err_hold *h, int replay) {
#ifdef __wasi__
  (void)h, (void)replay;
  return 0;
#else
  if (!h->tmp) return 0;
  fflush(stderr);
  dup2(h->saved, 2);
  close(h->saved);
  long n = ftell(h->tmp);
  if (replay && n > 0) {
    rewind(h->tmp);
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, h->tmp)) > 0) fwrite(buf, 1, k, stderr);
    fflush(stderr);
  }
  fclose(h->tmp);
  return n > 0 ? n : 0;
#endif
}

/* Instance + adapter (no device). 0 or -1 with tz_err. */
static int open_adapter(wg_ctx *c) {
  if (tz_wgpu_load() != 0) return -1;
  err_hold eh;
  hold_stderr(&eh);
  c->inst = tz_wgpu_create_instance(); /* timed WaitAny, in the loaded build's layout */
  if (!c->inst) {
    release_stderr(&eh, 1);
    return tz_err("webgpu: %s: wgpuCreateInstance failed", tz_wgpu_lib_path());
  }
  /* the node Dawn's toggles for ShaderF16 and subgroup matrices (TEZGAH_WEBGPU_ADAPTER_TOGGLES
   * replaces them): tz_wgpu_adapter_options */
  static tz_wgpu_toggles tg;
  WGPURequestAdapterOptions o;
  tz_wgpu_adapter_options(&o, &tg, "TEZGAH_WEBGPU_ADAPTER_TOGGLES");
  tz_wgpu_req r = {0};
  WGPURequestAdapterCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_wgpu_on_adapter, &r, NULL};
  WGPUFuture f = W.wgpuInstanceRequestAdapter(c->inst, &o, ci);
  if (wg_wait_future(c, f) != 0 || r.status != WGPURequestAdapterStatus_Success || !r.handle) {
    int verbose = env_int("TEZGAH_WEBGPU_VERBOSE", 0) != 0;
    long held = release_stderr(&eh, verbose);
    return tz_err("webgpu: no WebGPU adapter (Vulkan) found%s%s; on a machine without a GPU install "
                  "lavapipe (scripts/setup_webgpu.sh)%s",
                  r.msg[0] ? ": " : "", r.msg,
                  held && !verbose ? " (TEZGAH_WEBGPU_VERBOSE=1: the Vulkan loader's and Dawn's messages)" : "");
  }
  release_stderr(&eh, 1);
  c->adapter = r.handle;
  W.wgpuAdapterGetInfo(c->adapter, &c->info);
  memset(&c->lim, 0, sizeof c->lim);
  W.wgpuAdapterGetLimits(c->adapter, &c->lim);
  c->has_f16 = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_ShaderF16);
  /* TEZGAH_WEBGPU_HIDE_F16=1 (tests): act as an adapter without ShaderF16 (the fp32 fallback) */
  if (env_int("TEZGAH_WEBGPU_HIDE_F16", 0)) c->has_f16 = 0;
  c->has_subgroups = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_Subgroups);
  c->has_ts = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_TimestampQuery);
  return 0;
}

/* Whether the matmul family runs on the subgroup-matrix kernel (c->sgmat, c->sg_size; c->sg_why
 * says why not): with the f16 precision, where the adapter offers
 * ChromiumExperimentalSubgroupMatrix with an f16 x f16 -> f32 16x16x16 configuration
 * (tz_sgmat_pick), ShaderF16 and one subgroup size (the kernel maps subgroups to consecutive
 * invocations), unless TEZGAH_WEBGPU_SGMAT=0 (A/B measurements). TEZGAH_WEBGPU_SGMAT=1
 * requires it (tests; an error where it cannot run). Before the device is created: the
 * feature must be requested. Also records whether the adapter lists an f16 x f16 -> f16
 * 16x16x16 configuration (c->sgmat_f16res: the attention backward's f16 dq partials,
 * webgpu_ops_attn_sg.c sg_dq16). */
static int sgmat_choose(wg_ctx *c) {
  c->sgmat = c->sgmat_f16res = 0;
  const char *e = getenv("TEZGAH_WEBGPU_SGMAT");
  int off = e && !strcmp(e, "0"), req = e && *e && strcmp(e, "0");
  int has = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_ChromiumExperimentalSubgroupMatrix) != 0;
  int pick = -1;
  if (has) {
    WGPUAdapterPropertiesSubgroupMatrixConfigs mc;
    memset(&mc, 0, sizeof mc);
    mc.chain.sType = WGPUSType_AdapterPropertiesSubgroupMatrixConfigs;
    WGPUAdapterInfo in;
    memset(&in, 0, sizeof in);
    in.nextInChain = (WGPUChainedStruct *)&mc.chain;
    W.wgpuAdapterGetInfo(c->adapter, &in);
    WGPUSubgroupMatrixConfig cf[32];
    size_t n = mc.configCount < 32 ? mc.configCount : 32;
    for (size_t i = 0; i < n; i++) cf[i] = tz_wgpu_sgmat_config(&mc, i);
    pick = tz_sgmat_pick(cf, n);
    c->sgmat_f16res = tz_sgmat_pick_res(cf, n, WGPUSubgroupMatrixComponentType_F16) >= 0;
    W.wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(mc);
    in.nextInChain = NULL;
    W.wgpuAdapterInfoFreeMembers(in);
  }
  if (!has) c->sg_why = "no ChromiumExperimentalSubgroupMatrix";
  else if (pick < 0) c->sg_why = "no f16 x f16 -> f32 16x16x16 subgroup-matrix configuration";
  else if (!c->has_f16) c->sg_why = "no ShaderF16";
  else if (c->info.subgroupMinSize != c->info.subgroupMaxSize || !c->info.subgroupMinSize)
    c->sg_why = "several subgroup sizes";
  else if (!c->f16) c->sg_why = "precision fp32";
  else if (off) c->sg_why = "TEZGAH_WEBGPU_SGMAT=0";
  else c->sgmat = 1, c->sg_size = c->info.subgroupMinSize, c->sg_why = NULL;
  /* TEZGAH_WEBGPU_SGMAT_EMU=1 (tests, lavapipe): the path with the builtins emulated in WGSL
   * (kernel n only; a "subgroup" of 8 invocations, TZ_SGMAT_EMU_SGSIZE another): the backend's
   * operand flow (A32, A16W, copies, splits, persistent grids) checked where no adapter has
   * subgroup matrices. Slow: tile-multiple shapes of a few hundred only. */
  c->sg_emu = 0;
  if (!c->sgmat && !off && c->has_f16 && c->f16 && env_int("TEZGAH_WEBGPU_SGMAT_EMU", 0)) {
    const char *se = getenv("TZ_SGMAT_EMU_SGSIZE");
    c->sgmat = c->sg_emu = 1, c->sg_size = se && atoi(se) > 0 ? (uint32_t)atoi(se) : 8, c->sg_why = NULL;
  }
  if (req && !c->sgmat)
    return tz_err("webgpu: TEZGAH_WEBGPU_SGMAT=%s but the subgroup-matrix matmul cannot run here: %s", e, c->sg_why);
  return 0;
}

static const char *adapter_type(WGPUAdapterType t) {
  return t == WGPUAdapterType_DiscreteGPU     ? "discrete GPU"
         : t == WGPUAdapterType_IntegratedGPU ? "integrated GPU"
         : t == WGPUAdapterType_CPU           ? "CPU"
                                              : "unknown";
}

/* The API under Dawn: Vulkan natively; the browser's WebGPU in a wasm build (wgpu_wasm.c) */
static const char *api_name(wg_ctx *c) { return c->info.backendType == WGPUBackendType_WebGPU ? "browser WebGPU" : "Vulkan"; }

static void adapter_line(wg_ctx *c, char *out, size_t cap) {
  char dev[128], desc[128];
  tz_wgpu_sv_copy(dev, sizeof dev, c->info.device);
  tz_wgpu_sv_copy(desc, sizeof desc, c->info.description);
  snprintf(out, cap, "%s (%s, %s%s%s)", dev[0] ? dev : "?", adapter_type(c->info.adapterType), api_name(c),
           desc[0] ? ", " : "", desc);
}

/* The precision of an opened adapter (c->has_f16 known): c->f16 (the f16 weight mirror),
 * c->act16 (f16 matmul inputs) and c->act_f16 (f16 activations), from --precision (NULL or "":
 * the default) and the A/B switches below; act_buffers: the backend's one buffer per activation
 * (be->act_buffers). tz_backend_webgpu_create and `tezgah info` both decide here, so that info
 * states what train and sample get. 0, or -1 with tz_err (f16 asked of an adapter without
 * ShaderF16, a bad TEZGAH_WEBGPU_ACT). */
static int choose_precision(wg_ctx *c, int act_buffers, const char *precision) {
  /* the precision (--precision; f16 today is the f16 weight mirror): "fp32" off, "f16" on
   * (an error without ShaderF16); by default on where ShaderF16 exists, fp32 otherwise, and
   * then TEZGAH_WEBGPU_F16=0 turns it off and TEZGAH_WEBGPU_F16=1 requires it (tests) */
  if (precision && *precision) {
    c->f16 = !strcmp(precision, "f16");
    if (c->f16 && !c->has_f16)
      return tz_err("webgpu: --precision f16 but this adapter offers no ShaderF16 (use --precision fp32)");
  } else {
    const char *fe = getenv("TEZGAH_WEBGPU_F16");
    int f16_forced = fe && *fe && strcmp(fe, "0") != 0;
    c->f16 = c->has_f16 && !(fe && !strcmp(fe, "0"));
    if (f16_forced && !c->has_f16)
      return tz_err("webgpu: TEZGAH_WEBGPU_F16=%s but this adapter offers no ShaderF16 (unset it for fp32)", fe);
  }
  /* f16 matmul inputs (be->act_mm, backend.h): with the f16 precision the norms, attention and
   * GeLU / SwiGLU write their outputs as f16 and the matmuls read them so (no conversion pass
   * before the subgroup-matrix kernel; half the bytes for the vector kernels).
   * TEZGAH_WEBGPU_ACT16=0 keeps them fp32 (A/B, and the fp32 op tests of test_webgpu_ops). Not
   * with the single activation arena (TEZGAH_WEBGPU_ARENA=1): the f16 output is bound apart from
   * the kernel's other arguments (binding 9), and in one buffer its aligned-down binding could
   * overlap an input's writable one, which Dawn rejects. */
  c->act16 = c->f16 && act_buffers && env_int("TEZGAH_WEBGPU_ACT16", 1) != 0;
  /* f16 activations (be->act, backend.h), on with the f16 matmul inputs (act16): the residual
   * stream, matmul outputs, activation gradients and logits in f16 too, as CUDA keeps them in
   * bf16 -- half the bytes of every memory-bound op and of the activations' memory (GPT-2 124M
   * B16 T1024 on the H200: 169.5K -> 187.8K tokens/s, peak 15,178 -> 9,106 MiB; docs/PERF.md).
   * TEZGAH_WEBGPU_ACT=f32 keeps them fp32 (A/B; the f16 matmul inputs stay); =f16 requires them. */
  const char *ae = getenv("TEZGAH_WEBGPU_ACT");
  if (ae && *ae && strcmp(ae, "f16") && strcmp(ae, "f32"))
    return tz_err("webgpu: TEZGAH_WEBGPU_ACT=%s is not f16 or f32", ae);
  if (ae && !strcmp(ae, "f16") && !c->act16)
    return tz_err("webgpu: TEZGAH_WEBGPU_ACT=f16 needs the f16 precision with f16 matmul inputs (--precision f16, "
                  "TEZGAH_WEBGPU_ACT16 and TEZGAH_WEBGPU_ARENA unset)");
  c->act_f16 = c->act16 && !(ae && !strcmp(ae, "f32"));
  return 0;
}

/* One buffer per activation tensor unless TEZGAH_WEBGPU_ARENA=1 (see tz_backend_webgpu_create). */
static int act_buffers_env(void) {
  const char *ar = getenv("TEZGAH_WEBGPU_ARENA");
  return !(ar && !strcmp(ar, "1"));
}

tz_backend *tz_backend_webgpu_create(const char *precision) {
  wg_ctx *c = tz_calloc(1, sizeof *c);
  tz_backend *be = tz_calloc(1, sizeof *be);
  be->name = "webgpu";
  be->ctx = c;
  be->act = TZ_F32; /* f16 below where the precision and TEZGAH_WEBGPU_ACT allow (act_f16) */
  /* One buffer per activation tensor (backend.h): the model's matmul and matmul_t operands are
   * then bound read-only and take the 8 x 16 tile (mm_config). TEZGAH_WEBGPU_ARENA=1 (A/B
   * measurement) keeps the single arena, whose read_write dispatches take 8 x 8, BK 8. */
  be->act_buffers = act_buffers_env();
  if (open_adapter(c) != 0) {
    wg_destroy(be);
    return NULL;
  }
  if (choose_precision(c, be->act_buffers, precision)) {
    wg_destroy(be);
    return NULL;
  }
  /* f16 mixed precision asks train for dynamic loss scaling (backend.h, needs_loss_scale):
   * f16's range ends at 6.1e-5 (normal) / 6e-8 (subnormal), where small gradients vanish */
  be->needs_loss_scale = c->f16;
  be->act_mm = c->act16 ? TZ_F16 : TZ_F32; /* f16 matmul inputs (backend.h) */
  if (c->act_f16) be->act = TZ_F16;         /* f16 activations (backend.h) */
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
  /* 32: GPT-2 124M f16 B16 T1024 on the H200 trained at 164.7K tokens/s submitting only at the
   * downloads, 168.6–169.0K with 32, 168.8K with 128, 166.7K with 8 (docs/PERF.md, session 20) */
  c->flush_every = env_int("TEZGAH_WEBGPU_FLUSH_EVERY", 32);
  if (c->flush_every < 0) c->flush_every = 0;
  const char *pe = getenv("TEZGAH_PROFILE");
  c->profile = pe && *pe && strcmp(pe, "0") && c->has_ts;
  if (sgmat_choose(c) != 0) {
    wg_destroy(be);
    return NULL;
  }
  WGPUFeatureName feats[5];
  size_t nf = 0;
  if (c->has_ts) feats[nf++] = WGPUFeatureName_TimestampQuery;
  if (c->has_f16) feats[nf++] = WGPUFeatureName_ShaderF16;
  if (c->has_subgroups) feats[nf++] = WGPUFeatureName_Subgroups;
  if (c->sgmat && !c->sg_emu) feats[nf++] = WGPUFeatureName_ChromiumExperimentalSubgroupMatrix;
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
  dd.label = tz_wgpu_sv("tezgah");
  dd.requiredFeatureCount = nf;
  dd.requiredFeatures = feats;
  dd.requiredLimits = &lim;
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.deviceLostCallbackInfo.userdata1 = c;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  dd.uncapturedErrorCallbackInfo.userdata1 = c;
  tz_wgpu_req r = {0};
  WGPURequestDeviceCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_wgpu_on_device, &r, NULL};
  WGPUFuture f = W.wgpuAdapterRequestDevice(c->adapter, &dd, ci);
  if (wg_wait_future(c, f) != 0 || r.status != WGPURequestDeviceStatus_Success || !r.handle) {
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
    /* a value that is not a byte count ("pear") is ignored with a warning: read as 0 it became
     * 64 KiB and the next model failed with the adapter's limit misreported (walkthrough,
     * 2026-12-05) */
    char *end;
    unsigned long long v = strtoull(mb, &end, 0);
    if (end == mb || *end || *mb == '-') {
      fprintf(stderr, "tezgah: warning: TEZGAH_WEBGPU_MAX_BINDING='%s' is not a byte count; the adapter's limit is used\n", mb);
    } else {
      if (v < 65536) v = 65536;
      if (v < c->lim.maxStorageBufferBindingSize) c->lim.maxStorageBufferBindingSize = v;
    }
  }
  c->uni = wg_mkbuf(c, (uint64_t)UNI_SLOTS * UNI_STRIDE, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "uniforms");
  c->uni_host = tz_calloc(UNI_SLOTS, UNI_STRIDE);
  c->bgs = tz_calloc(BG_CAP, sizeof *c->bgs);
  TZ_ASSERT(c->lim.minUniformBufferOffsetAlignment <= UNI_STRIDE);
  for (int i = 0; i < MAX_ARGS; i++) c->dummy[i] = wg_alloc(be, 16, "unused binding");
  if (c->profile) {
    WGPUQuerySetDescriptor qd = {NULL, tz_wgpu_sv("profile"), WGPUQueryType_Timestamp, PROF_MAX * 2};
    c->qs = W.wgpuDeviceCreateQuerySet(c->dev, &qd);
    c->qres = wg_mkbuf(c, PROF_MAX * 16, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "timestamps");
    c->qread = wg_mkbuf(c, PROF_MAX * 16, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "timestamps read");
  }
  W.wgpuInstanceProcessEvents(c->inst);
  if (c->failed || !c->dummy[MAX_ARGS - 1]) {
    tz_err("webgpu: device setup failed: %s", c->errmsg);
    wg_destroy(be);
    return NULL;
  }
  be->alloc = wg_alloc;
  be->free = wg_free;
  be->mem_peak = wg_mem_peak;
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
  be->matmul_t_res = wg_matmul_t_res;
  /* GeLU in kernel n's epilogues with f16 activations on the subgroup-matrix matmul:
   * TEZGAH_WEBGPU_GELU_EPI=auto (the default) = bwd: matmul_dgelu (GPT-2's fcproj input gradient
   * times gelu'(h): dh without da and gelu_bwd); fwd: matmul_t_gelu (the fc forward writing h and
   * gelu(h)); both; off. Where an op is not offered the model runs the separate ops. H200
   * (2026-12-04, GPT-2 124M f16 B16 T1024): the backward's saves 0.49 ms a step, the forward's
   * costs 0.28 (its second f16 output doubles the epilogue's stores; gelu_fwd only read h). */
  {
    const char *ge = getenv("TEZGAH_WEBGPU_GELU_EPI");
    int fw = 0, bw = 1;
    if (ge && *ge && strcmp(ge, "auto")) {
      fw = !strcmp(ge, "fwd") || !strcmp(ge, "both");
      bw = !strcmp(ge, "bwd") || !strcmp(ge, "both");
      if (!fw && !bw && strcmp(ge, "off") && strcmp(ge, "0")) {
        tz_err("webgpu: TEZGAH_WEBGPU_GELU_EPI=%.40s: must be auto, off, bwd, fwd or both", ge);
        wg_destroy(be);
        return NULL;
      }
    }
    if (c->act_f16 && c->sgmat && fw) be->matmul_t_gelu = wg_matmul_t_gelu;
    if (c->act_f16 && c->sgmat && bw) be->matmul_dgelu = wg_matmul_dgelu;
  }
  /* SwiGLU's backward in the down projection's input-gradient epilogue (DSWIGLU), with f16
   * activations on the subgroup-matrix matmul; TEZGAH_WEBGPU_SWIGLU_EPI=0 (A/B): not offered,
   * the model runs matmul and swiglu_bwd */
  if (c->act_f16 && c->sgmat && env_int("TEZGAH_WEBGPU_SWIGLU_EPI", 1)) be->matmul_dswiglu = wg_matmul_dswiglu;
  be->matmul = wg_matmul;
  be->matmul_at = wg_matmul_at;
  be->matmul_at_db = wg_matmul_at_db;
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
  if (c->f16 && c->act_f16)
    return "f16 weight mirror, f16 activations and activation gradients (residual stream, matmul outputs, "
           "logits), fp32 master weights, parameter gradients and optimizer (--precision fp32 for fp32 throughout)";
  if (c->f16 && c->act16)
    return "f16 weight mirror for the forward (matmul weights, embeddings) and f16 matmul inputs (norm, "
           "attention, GeLU/SwiGLU outputs), fp32 master weights, residual stream, gradients and optimizer "
           "(--precision fp32 for fp32 throughout)";
  if (c->f16)
    return "f16 weight mirror for the forward (matmul_t weights, embeddings), fp32 master weights, "
           "activations, backward and optimizer (--precision fp32 for fp32 throughout)";
  if (c->has_f16) return "fp32 throughout (ShaderF16 offered; f16 weight mirror off: --precision fp32)";
  return "fp32 throughout (no ShaderF16 on this adapter)";
}

/* One line naming the device, precision, reduction path and read-only matmul tile, for logs
 * ("llvmpipe (CPU, Vulkan, ...); fp32 ...; reductions: ...; matmul tile 8x8, BK 8, 2 buffers ..."). */
const char *tz_webgpu_describe(tz_backend *be) {
  static char line[1200];
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
  mm_cfg f = wg_mm_config(c, 0);
  char sg[128];
  if (c->sgmat)
    snprintf(sg, sizeof sg, "; matmul on subgroup matrices (f16 x f16 -> f32, %u lanes%s)", c->sg_size,
             c->sg_emu ? ", builtins emulated" : "");
  else snprintf(sg, sizeof sg, "; subgroup-matrix matmul off (%s)", c->sg_why ? c->sg_why : "?");
  /* the attention kernels' choice (webgpu_ops_attn_sg.c: sg_use) */
  char sa[320];
  snprintf(sa, sizeof sa, "; %s", wg_attn_sg_choice(c));
  snprintf(line, sizeof line, "%s; %s; %s; matmul tile %dx%d, BK %d, %d buffer%s (%zu of %u bytes)%s%s", a, precision(c),
           r, f.tm, f.tn, f.bk, f.nbuf, f.nbuf > 1 ? "s" : "", wg_mm_smem(f),
           (unsigned)c->lim.maxComputeWorkgroupStorageSize, sg, sa);
  return line;
}

/* `tezgah info`: Dawn library, adapter, features and limits. 0, or -1 with tz_err. */
int tz_webgpu_info(void) {
  wg_ctx *c = tz_calloc(1, sizeof *c);
  tz_backend *be = tz_calloc(1, sizeof *be);
  be->name = "webgpu";
  be->ctx = c;
  be->act = TZ_F32; /* (`tezgah info`: no model runs) */
  if (open_adapter(c) != 0) {
    wg_destroy(be);
    return -1;
  }
  char a[300], vendor[128], arch[128];
  adapter_line(c, a, sizeof a);
  tz_wgpu_sv_copy(vendor, sizeof vendor, c->info.vendor);
  tz_wgpu_sv_copy(arch, sizeof arch, c->info.architecture);
  printf("webgpu:\n  library: %s\n  dawn: %s (ABI \"%s\"; chosen by %s)\n  adapter: %s\n"
         "  vendor: %s (0x%04x) architecture: %s device id 0x%04x\n",
         tz_wgpu_lib_path(), tz_wgpu_abi->what, tz_wgpu_abi->name, tz_wgpu_lib_reason(), a, vendor,
         c->info.vendorID, arch, c->info.deviceID);
  printf("  backend: %s\n  subgroup size: %u..%u\n", api_name(c), c->info.subgroupMinSize, c->info.subgroupMaxSize);
  WGPUSupportedFeatures sf = {0, NULL};
  W.wgpuAdapterGetFeatures(c->adapter, &sf);
  int col = printf("  features (%zu):", sf.featureCount);
  for (size_t i = 0; i < sf.featureCount; i++) {
    /* by name from the loaded build's list; a number it lacks (another Dawn, under
     * TEZGAH_WEBGPU_LIB) in hex; lines wrapped at 79 columns (26 names on lavapipe) */
    char hex[16];
    const char *n = tz_wgpu_feature_name(sf.features[i]);
    if (!n) snprintf(hex, sizeof hex, "0x%x", sf.features[i]), n = hex;
    if (col + 1 + (int)strlen(n) > 79) col = printf("\n   ") - 1;
    col += printf(" %s", n);
  }
  printf("\n  ShaderF16: %s\n", c->has_f16 ? "yes" : "no");
  /* the subgroup-matrix configurations (element size per build: tz_wgpu_sgmat_config) */
  WGPUAdapterPropertiesSubgroupMatrixConfigs mc;
  memset(&mc, 0, sizeof mc);
  mc.chain.sType = WGPUSType_AdapterPropertiesSubgroupMatrixConfigs;
  int has_sgm = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_ChromiumExperimentalSubgroupMatrix) != 0;
  if (has_sgm) {
    WGPUAdapterInfo info2;
    memset(&info2, 0, sizeof info2);
    info2.nextInChain = (WGPUChainedStruct *)&mc.chain;
    W.wgpuAdapterGetInfo(c->adapter, &info2);
    W.wgpuAdapterInfoFreeMembers(info2);
  }
  printf("  subgroup-matrix configurations (%zu):", mc.configCount);
  static const char *ty[] = {"?", "f32", "f16", "u32", "i32", "u8", "i8"};
  int f16f32 = 0;
  for (size_t i = 0; i < mc.configCount; i++) {
    WGPUSubgroupMatrixConfig g = tz_wgpu_sgmat_config(&mc, i);
    printf("%s %s x %s -> %s %ux%ux%u", i ? "," : "", ty[g.componentType < 7 ? g.componentType : 0],
           ty[g.componentType < 7 ? g.componentType : 0], ty[g.resultComponentType < 7 ? g.resultComponentType : 0],
           g.M, g.N, g.K);
    f16f32 |= g.componentType == WGPUSubgroupMatrixComponentType_F16 &&
              g.resultComponentType == WGPUSubgroupMatrixComponentType_F32 && g.M == 16 && g.N == 16 && g.K == 16;
  }
  printf("%s\n", mc.configCount ? "" : " none");
  printf("  subgroup-matrix matmul (f16 x f16 -> f32 16x16x16): %s\n",
         f16f32 && c->has_f16 ? "available (the matmul family's kernel with --precision f16; TEZGAH_WEBGPU_SGMAT=0: off)"
                              : "not available here: the fp32 / f16-vector kernels run");
  /* the attention kernels' choice as training makes it (webgpu_ops_attn_sg.c: sg_use; the
   * train log's "webgpu:" line says it for the device it opened) */
  printf("  attention (training form): %s\n",
         f16f32 && c->has_f16 && c->has_subgroups
             ? "subgroup matrices at head_dim 64 and 128 with --precision f16 (faster there on the H200), fp32 flash "
               "kernels elsewhere; TEZGAH_WEBGPU_ATTN_SGMAT=1 forces them (head_dim 64 and 128), =0 off"
             : "fp32 flash kernels (no f16 x f16 -> f32 subgroup matrices with Subgroups here)");
  if (has_sgm) W.wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(mc);
  /* what train and sample choose without --precision (the same function, the same environment):
   * until 2026-12-04 only the weight mirror was decided here, and info said "fp32 activations"
   * on lavapipe where train ran f16 ones */
  if (choose_precision(c, act_buffers_env(), NULL) == 0)
    printf("  precision: %s; what train and sample use here without --precision\n", precision(c));
  else {
    printf("  precision: none: train and sample would fail here without --precision: %s\n", tz_errmsg());
    tz_err_clear(); /* printed: info itself succeeds */
  }
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
