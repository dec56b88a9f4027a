/* WebGPU backend recording and dispatch: the command encoder and compute pass, submission
 * (flush, with the uniform ring and the profile's timestamp resolve) and sync; shader modules
 * (a kernel file with the preamble, reductions and scan it uses, and the caller's constants)
 * and the pipeline cache; the bind group cache; and wg_run_ex, which turns an op's tensor
 * arguments into bindings and one recorded dispatch. Every op goes through here. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/webgpu/webgpu_internal.h"
#include "backend/webgpu/sgmat.h"

/* ---- submission ---- */
void wg_end_pass(wg_ctx *c) {
  if (c->pass) {
    W.wgpuComputePassEncoderEnd(c->pass);
    W.wgpuComputePassEncoderRelease(c->pass);
    c->pass = NULL;
  }
}
WGPUCommandEncoder wg_encoder(wg_ctx *c) {
  if (!c->enc) c->enc = W.wgpuDeviceCreateCommandEncoder(c->dev, NULL);
  return c->enc;
}

void wg_flush(wg_ctx *c) {
  if (!c->enc) return;
  wg_end_pass(c);
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
  c->since_flush = 0;
  c->submits++;
  if (c->profile && nq) wg_prof_collect(c);
  wg_check(c);
}

static void on_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *u1, void *u2) {
  *(int *)u1 = status == WGPUQueueWorkDoneStatus_Success ? 1 : -1;
}
void wg_sync_ctx(wg_ctx *c) {
  wg_flush(c);
  int done = 0;
  WGPUQueueWorkDoneCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, on_done, &done, NULL};
  WGPUFuture f = W.wgpuQueueOnSubmittedWorkDone(c->queue, ci);
  if (wg_wait_future(c, f) != 0 || done != 1)
    wg_fail(c, "%s%squeue did not finish (%zu, %llu)", "", "", 0, 0);
  wg_check(c);
}

/* ---- pipelines ---- */
static const char *wgsl_src(const char *name) {
  for (int i = 0; i < tz_wgsl_nfiles; i++)
    if (!strcmp(tz_wgsl_files[i].name, name)) return tz_wgsl_files[i].src;
  return NULL;
}

/* A kernel file that declares its own uniform binding is standalone: no preamble (its
 * bindings can then be read-only and vec4-typed); it has as many storage bindings as
 * distinct "@binding(" numbers minus the uniform's. */
static int standalone(const char *body) {
  if (!strstr(body, "@binding(0) var<uniform>")) return 0;
  /* distinct binding numbers: a file may declare one binding twice, as views of different types
   * for different entry points (fa_sg_dqsum.wgsl) */
  unsigned long long seen = 0;
  int n = -1;
  for (const char *q = body; (q = strstr(q, "@binding(")); q++) {
    int b = atoi(q + 9);
    if (b < 0 || b > 63 || !(seen >> b & 1)) n++;
    if (b >= 0 && b <= 63) seen |= 1ull << b;
  }
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
  /* f16 bindings (the f16 variant, "// f16 S=" below) need the f16 extension enabled */
  char en2[64];
  if (!alone && strstr(prefix, "// f16 S=") && !strstr(prefix, "enable f16")) {
    snprintf(en2, sizeof en2, "enable f16;\n%s", en);
    en = en2;
  }
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
   * for the arguments outside the mask, argument a at binding a (ro_variant). "// f16 S=<hex
   * mask>": bindings in the mask are array<f16> (f16 activations, wg_arg.h16), read and
   * written as f32 by ld / st (f16_variant). With "// v16" in the prefix as well (the vector
   * kernels' prefix, wg_v16_prefix) those f16 bindings are array<vec4<f16>> instead: ld4 / st4
   * move four elements in one 8-byte access (why: the per-element 2-byte accesses left the
   * memory-bound kernels at 0.65-1.15 TB/s of the H200's ~4); ld reads a component, and st
   * writes one, which the vector kernels never do on those bindings (a component store may
   * rewrite the whole vector). */
  char *pre_ro = NULL;
  const char *rom = strstr(prefix, "// ro W="), *f16m = strstr(prefix, "// f16 S=");
  if ((rom || f16m) && !alone) {
    unsigned wm = rom ? (unsigned)strtoul(rom + 8, NULL, 16) : 0xffu;
    unsigned hm = f16m ? (unsigned)strtoul(f16m + 9, NULL, 16) : 0u;
    unsigned vm = strstr(prefix, "// v16") ? hm : 0u; /* the vector f16 bindings */
    const char *b0 = strstr(pre, "// ARGS BEGIN"), *b1 = strstr(pre, "// ARGS END");
    TZ_ASSERT(b0 && b1);
    size_t cap = strlen(pre) + 16384;
    pre_ro = tz_malloc(cap);
    size_t o = (size_t)snprintf(pre_ro, cap, "%.*s", (int)(b0 - pre), pre);
    for (int k = 0; k < MAX_ARGS; k++)
      o += (size_t)snprintf(pre_ro + o, cap - o, "@group(0) @binding(%d) var<storage, %s> B%d: array<%s>;\n", k + 1,
                            (wm >> k) & 1 ? "read_write" : "read", k,
                            (vm >> k) & 1 ? "vec4<f16>" : (hm >> k) & 1 ? "f16" : "f32");
    /* f16 stores: f16s (common/f16s.wgsl, appended below: ±inf beyond f16's range, NaN kept);
     * f16s4: the same per component */
    if (hm)
      o += (size_t)snprintf(pre_ro + o, cap - o,
                            "fn f16s4(v: vec4<f32>) -> vec4<f16> {\n"
                            "  return vec4<f16>(f16s(v.x), f16s(v.y), f16s(v.z), f16s(v.w));\n}\n");
    /* every binding statically used by ld and st: the auto layout then always has all eight */
    const char *sw = rom ? "a" : "aslot(a)";
    o += (size_t)snprintf(pre_ro + o, cap - o, "fn touch_args() {");
    for (int k = 0; k < MAX_ARGS; k++) o += (size_t)snprintf(pre_ro + o, cap - o, " _ = &B%d;", k);
    o += (size_t)snprintf(pre_ro + o, cap - o, " }\nfn ld(a: u32, i: u32) -> f32 {\n  touch_args();\n  let j = aoff(a) + i;\n  switch %s {\n", sw);
    for (int k = 0; k < MAX_ARGS; k++) {
      char cs[16];
      snprintf(cs, sizeof cs, k < MAX_ARGS - 1 ? "case %du:" : "default:", k);
      if ((vm >> k) & 1)
        o += (size_t)snprintf(pre_ro + o, cap - o, "    %s { return f32(B%d[j >> 2u][j & 3u]); }\n", cs, k);
      else
        o += (size_t)snprintf(pre_ro + o, cap - o, "    %s { return %sB%d[j]%s; }\n", cs, (hm >> k) & 1 ? "f32(" : "",
                              k, (hm >> k) & 1 ? ")" : "");
    }
    o += (size_t)snprintf(pre_ro + o, cap - o, "  }\n}\nfn st(a: u32, i: u32, v: f32) {\n  touch_args();\n  let j = aoff(a) + i;\n  switch %s {\n", sw);
    for (int k = 0; k < MAX_ARGS; k++)
      if ((wm >> k) & 1)
        o += (size_t)snprintf(pre_ro + o, cap - o, "    case %du: { B%d%s = %s; }\n", k, k,
                              (vm >> k) & 1 ? "[j >> 2u][j & 3u]" : "[j]", (hm >> k) & 1 ? "f16s(v)" : "v");
    o += (size_t)snprintf(pre_ro + o, cap - o, "    default: {}\n  }\n}\n");
    /* ld4 / st4: one vector access on the vector bindings, four scalar ones elsewhere */
    o += (size_t)snprintf(pre_ro + o, cap - o, "fn ld4(a: u32, i: u32) -> vec4<f32> {\n  let j = aoff(a) + i;\n  switch %s {\n", sw);
    for (int k = 0; k < MAX_ARGS; k++)
      if ((vm >> k) & 1) o += (size_t)snprintf(pre_ro + o, cap - o, "    case %du: { return vec4<f32>(B%d[j >> 2u]); }\n", k, k);
    o += (size_t)snprintf(pre_ro + o, cap - o,
                          "    default: { return vec4<f32>(ld(a, i), ld(a, i + 1u), ld(a, i + 2u), ld(a, i + 3u)); }\n  }\n}\n"
                          "fn st4(a: u32, i: u32, v: vec4<f32>) {\n  let j = aoff(a) + i;\n  switch %s {\n", sw);
    for (int k = 0; k < MAX_ARGS; k++)
      if ((vm >> k) & 1 && (wm >> k) & 1)
        o += (size_t)snprintf(pre_ro + o, cap - o, "    case %du: { B%d[j >> 2u] = f16s4(v); }\n", k, k);
    o += (size_t)snprintf(pre_ro + o, cap - o,
                          "    default: { st(a, i, v.x); st(a, i + 1u, v.y); st(a, i + 2u, v.z); st(a, i + 3u, v.w); }\n"
                          "  }\n}\n%s", b1);
    pre = pre_ro;
  }
  /* A file with its own directives (matmul_sgmat.wgsl: enable lines must precede every
   * declaration) marks their end with "// end of directives"; the prefix goes after it. Its
   * `//#if` / `//#for` lines (the subgroup-matrix kernels) are expanded with the values of the
   * prefix's `//defs` line (tz_sgmat_preprocess), the directives included. */
  const char *dir = "";
  int ndir = 0;
  char *pp = NULL;
  if (strstr(body, "\n//#if ") || strstr(body, "\n//#for ")) {
    pp = tz_sgmat_preprocess(body, prefix);
    body = pp;
  }
  /* the subgroup-matrix attention kernels with their software stand-in (tests): after the
   * expansion, so that it sees the lines the `//defs` keep (fa_sg_dkdv_wo's DQ16: the f16 parts'
   * binding and store exist only with it) */
  char *emu = NULL;
  if (strstr(prefix, "// sgmat emulation")) body = emu = wg_attn_sg_emulate(body);
  const char *dend = strstr(body, "// end of directives\n");
  if (dend) {
    dir = body;
    ndir = (int)(dend + strlen("// end of directives\n") - body);
    body += ndir;
  }
  /* the f16 norms' row code (common/norm_rows.wgsl: layernorm_v8.wgsl, rmsnorm_v8.wgsl) where the
   * module's code calls it */
  const char *nr = "";
  if (strstr(body, "nr_h8(") && !strstr(body, "fn nr_h8(")) {
    nr = wgsl_src("norm_rows");
    TZ_ASSERT(nr);
  }
  /* the 16-byte f16 groups' unpack and store (common/h8.wgsl: swiglu_v8.wgsl)
   * where the module's code calls them */
  const char *h8 = "";
  if ((strstr(body, "h8lo(") || strstr(body, "h8hi(") || strstr(body, "h8s(")) && !strstr(body, "fn h8lo(")) {
    h8 = wgsl_src("h8");
    TZ_ASSERT(h8);
  }
  /* the f16 activation store (common/f16s.wgsl) where the module's code calls it */
  const char *f16s = "";
  if ((strstr(body, "f16s(") || strstr(pre, "f16s(") || strstr(prefix, "f16s(") || strstr(nr, "f16s(") ||
       strstr(h8, "f16s(")) &&
      !strstr(body, "fn f16s(")) {
    f16s = wgsl_src("f16s");
    TZ_ASSERT(f16s);
  }
  /* the GeLU and its derivative (common/gelu_math.wgsl), SwiGLU's element math
   * (common/swiglu_math.wgsl) where the module's code calls them */
  const char *gm = "", *sm = "";
  if ((strstr(body, "gelu_f(") || strstr(body, "gelu_g(")) && !strstr(body, "fn gelu_f(")) {
    gm = wgsl_src("gelu_math");
    TZ_ASSERT(gm);
  }
  if ((strstr(body, "sigmoid_stable(") || strstr(body, "nan_to_zero(") || strstr(body, "swiglu_dgu(")) &&
      !strstr(body, "fn sigmoid_stable(") && !strstr(body, "fn nan_to_zero(")) {
    sm = wgsl_src("swiglu_math");
    TZ_ASSERT(sm);
  }
  size_t n = (size_t)ndir + strlen(en) + strlen(pre) + strlen(red) + strlen(scan) + strlen(f16s) + strlen(gm) +
             strlen(sm) + strlen(nr) + strlen(h8) + strlen(prefix) + strlen(body) + 14;
  char *src = tz_malloc(n);
  snprintf(src, n, "%.*s%s%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s", ndir, dir, en, prefix, pre, red, scan, f16s, gm,
           sm, nr, h8, body);
  /* TEZGAH_WEBGPU_DUMP_WGSL=DIR: every module's source as DIR/<file>_<n>.wgsl (debugging) */
  const char *dd = getenv("TEZGAH_WEBGPU_DUMP_WGSL");
  if (dd && *dd) {
    char fn[512];
    snprintf(fn, sizeof fn, "%s/%s_%d.wgsl", dd, file, c->nmods);
    FILE *df = fopen(fn, "w");
    if (df) fputs(src, df), fclose(df);
  }
  WGPUShaderSourceWGSL ws = {{NULL, WGPUSType_ShaderSourceWGSL}, tz_wgpu_sv(src)};
  WGPUShaderModuleDescriptor d = {&ws.chain, tz_wgpu_sv(file)};
  WGPUShaderModule m = W.wgpuDeviceCreateShaderModule(c->dev, &d);
  free(src);
  free(pp);
  free(emu);
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
  /* st4(<digit>u, ...): the vector stores write their argument too */
  for (const char *q = body; (q = strstr(q, "st4(")); q += 4) {
    if (q > body && (isalnum((unsigned char)q[-1]) || q[-1] == '_')) continue;
    if (q[4] >= '0' && q[4] < '0' + MAX_ARGS && q[5] == 'u' && q[6] == ',') m |= 1u << (q[4] - '0');
    else return 0xff;
  }
  return m;
}

/* Pipeline index for entry point `entry` of src/kernels/<file>/<file>.wgsl, with `prefix`
 * (WGSL const declarations) prepended. */
int wg_pipeline(wg_ctx *c, const char *file, const char *entry, const char *prefix) {
  char key[KEY_CAP];
  snprintf(key, sizeof key, "%s:%s|%s", file, entry, prefix);
  TZ_ASSERT(strlen(file) + strlen(entry) + strlen(prefix) + 3 < KEY_CAP);
  for (int i = 0; i < c->npipes; i++)
    if (!strcmp(c->pipes[i].key, key)) return i;
  TZ_ASSERT(c->npipes < MAX_PIPES);
  WGPUComputePipelineDescriptor d;
  memset(&d, 0, sizeof d);
  d.label = tz_wgpu_sv(entry);
  d.compute.module = module(c, file, prefix);
  d.compute.entryPoint = tz_wgpu_sv(entry);
  wg_pipe *p = &c->pipes[c->npipes];
  snprintf(p->key, sizeof p->key, "%s", key);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  p->pipe = W.wgpuDeviceCreateComputePipeline(c->dev, &d);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  c->pipe_s += (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  wg_compile_note(c, c->pipe_s);
  p->bgl = W.wgpuComputePipelineGetBindGroupLayout(p->pipe, 0);
  p->nbind = standalone(wgsl_src(file));
  p->wmask = p->nbind || strstr(prefix, "// ro W=") ? 0xff : written_args(wgsl_src(file));
  p->ro_pi = -1;
  p->v16 = strstr(prefix, "// v16") != NULL;
  /* a standalone module's prefix may declare bindings too (matmul_fast's operands) */
  for (const char *q = prefix; p->nbind && (q = strstr(q, "@binding(")); q++) p->nbind++;
  wg_check(c);
  return c->npipes++;
}

/* ---- bind groups ---- */
void wg_bg_clear(wg_ctx *c) {
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
  TZ_ASSERT(c->nbgs < BG_CAP / 2 + 1); /* wg_run() empties a full cache before a dispatch */
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
  WGPUBindGroupDescriptor d = {NULL, tz_wgpu_sv(NULL), c->pipes[pi].bgl, (size_t)n + 1, e};
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

/* The bindings run_ex gives a dispatch's arguments: arguments in the same buffer whose aligned
 * ranges overlap share one binding. Fills slot_of[i] (-1 for an absent argument), and per
 * binding its buffer sb[k] and byte range [lo[k], hi[k]); returns the number of bindings. The
 * first present argument always gets binding 0. */
int wg_bind_slots(wg_ctx *c, const wg_arg *args, int nargs, int *slot_of, tz_buf **sb, uint64_t *lo,
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

/* Whether a standalone kernel's arguments get bindings 1..n in order, none merged (two arguments
 * in overlapping ranges of one buffer share a binding: the standalone kernels declare fixed
 * bindings and cannot follow such a merge). */
int wg_own_bindings(wg_ctx *c, const wg_arg *a, int n) {
  int slot_of[MAX_ARGS];
  tz_buf *sb[MAX_ARGS];
  uint64_t lo[MAX_ARGS], hi[MAX_ARGS];
  TZ_ASSERT(n <= MAX_ARGS);
  int ns = wg_bind_slots(c, a, n, slot_of, sb, lo, hi);
  if (ns != n) return 0;
  for (int i = 0; i < n; i++)
    if (slot_of[i] != i) return 0;
  return 1;
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
    c->pipes[pi].ro_pi = wg_pipeline(c, file, entry, prefix);
  }
  return c->pipes[pi].ro_pi;
}

/* The f16 variant of preamble pipeline pi: bindings in mask hm (bit k: binding k) declared
 * array<f16>, which ld / st convert from and to f32 (module(), "// f16 S="). Made on first use
 * and remembered in the pipeline (at most four masks each; more go through wg_pipeline's
 * lookup). Why a variant per mask and not per kernel: WGSL types each binding statically, and
 * which arguments share a binding is decided per dispatch (wg_bind_slots). */
static int f16_variant(wg_ctx *c, int pi, unsigned hm) {
  wg_pipe *p = &c->pipes[pi];
  for (int i = 0; i < p->nf16; i++)
    if (p->f16_mask[i] == hm) return p->f16_pi[i];
  char file[64], entry[128], prefix[KEY_CAP];
  const char *colon = strchr(p->key, ':'), *bar = strchr(p->key, '|');
  TZ_ASSERT(colon && bar && colon - p->key < 64 && bar - colon - 1 < 128);
  snprintf(file, sizeof file, "%.*s", (int)(colon - p->key), p->key);
  snprintf(entry, sizeof entry, "%.*s", (int)(bar - colon - 1), colon + 1);
  snprintf(prefix, sizeof prefix, "%s\n// f16 S=%02x", bar + 1, hm);
  int v = wg_pipeline(c, file, entry, prefix);
  p = &c->pipes[pi]; /* (wg_pipeline may have added pipelines; the array does not move) */
  if (p->nf16 < 4) p->f16_mask[p->nf16] = (uint8_t)hm, p->f16_pi[p->nf16++] = v;
  return v;
}

/* Record one dispatch. words[8..nwords) are the kernel's scalar parameters (u0, u1, ...);
 * words[0..7] are scratch. args (at most 8) are the tensor arguments in the kernel's order.
 * Arguments in the same buffer whose aligned ranges overlap share one binding (Dawn rejects
 * overlapping writable bindings); the block written to the uniform slot is
 * [element offset of each arg][binding of each arg][parameters]. atomic_arg (or NULL) is
 * bound alone at binding 9, its element offset in u5 (embed_backward's integer scratch, the
 * f16 mirror's range). */
void wg_run_ex(wg_ctx *c, const char *label, int pi, uint32_t *words, int nwords, const wg_arg *args,
                   int nargs, uint32_t gx, uint32_t gy, uint32_t gz, const wg_arg *atomic_arg, int pi_direct) {
  TZ_ASSERT(nargs <= MAX_ARGS && nwords - 8 <= 16);
  if (!gx || !gy || !gz) return;
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  tz_buf *sb[MAX_ARGS];
  uint64_t lo[MAX_ARGS], hi[MAX_ARGS];
  int slot_of[MAX_ARGS], ns = wg_bind_slots(c, args, nargs, slot_of, sb, lo, hi);
  /* f16 arguments (wg_arg.h16): their bindings, which no fp32 argument may share */
  unsigned hm = 0, fm = 0;
  for (int i = 0; i < nargs; i++)
    if (slot_of[i] >= 0) {
      if (args[i].h16) hm |= 1u << slot_of[i];
      else fm |= 1u << slot_of[i];
    }
  if (hm & fm) {
    const char *n16 = "?", *n32 = "?";
    for (int i = 0; i < nargs; i++)
      if (slot_of[i] >= 0 && ((hm & fm) >> slot_of[i] & 1)) *(args[i].h16 ? &n16 : &n32) = args[i].name;
    char why[160];
    snprintf(why, sizeof why, "'%s' (f16) and '%s' (fp32)", n16, n32);
    wg_fail(c, "%s: %s share one binding (internal error)", label, why, 0, 0);
  }
  /* a preamble kernel reads and writes them through its f16 variant (the standalone kernels
   * that take f16 tensors declare them so themselves) */
  if (hm && !c->pipes[pi].nbind) {
    pi = f16_variant(c, pi, hm);
    pi_direct = -1;
  }
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
      wg_fail(c, "%s: tensor '%s' spans %zu bytes, above this adapter's maxStorageBufferBindingSize %llu "
              "(use a smaller model or batch, or a GPU with larger bindings)",
           label, nm, (size_t)size[k], (unsigned long long)c->lim.maxStorageBufferBindingSize);
    }
  }
  uint32_t block[32];
  memset(block, 0, sizeof block);
  for (int i = 0; i < nargs; i++)
    if (slot_of[i] >= 0) {
      uint64_t es = args[i].h16 ? 2 : 4; /* element size */
      TZ_ASSERT((args[i].s.off - off[slot_of[i]]) % es == 0);
      block[i] = (uint32_t)((args[i].s.off - off[slot_of[i]]) / es);
      block[8 + i] = (uint32_t)slot_of[i];
      /* a vector kernel's f16 argument: whole 8-byte vectors of its array<vec4<f16>> binding
       * (the host chose the vector kernel by wg_v16_ok: a failure here is a bug) */
      if (args[i].h16 && c->pipes[pi].v16 && (block[i] % 4 || size[slot_of[i]] % 8))
        wg_fail(c, "%s: f16 argument '%s' not 8-byte aligned in its binding (vector kernel; internal error)", label,
                args[i].name, 0, 0);
    }
  memcpy(block + 16, words + 8, (size_t)(nwords - 8) * 4);
  int nb = c->pipes[pi].nbind ? c->pipes[pi].nbind : MAX_ARGS;
  if (atomic_arg) {
    uint64_t base = atomic_arg->s.off / align * align;
    uint64_t end = (atomic_arg->s.off + atomic_arg->bytes + 3) & ~3ull;
    buf[nb] = atomic_arg->s.buf->b, off[nb] = base, size[nb] = end - base;
    if (size[nb] > c->lim.maxStorageBufferBindingSize)
      wg_fail(c, "%s: tensor '%s' spans %zu bytes, above this adapter's maxStorageBufferBindingSize %llu "
              "(use a smaller model or batch, or a GPU with larger bindings)",
           label, atomic_arg->name, (size_t)size[nb], (unsigned long long)c->lim.maxStorageBufferBindingSize);
    block[16 + 5] = (uint32_t)((atomic_arg->s.off - base) / 4); /* u5 */
    nb++;
  }
  /* Everything that may submit comes before the dispatch takes its uniform slot. A full bind
   * group cache is emptied only after the work that uses its groups has been submitted. */
  if (c->uni_used == UNI_SLOTS || c->nbgs > BG_CAP / 2 || (c->profile && c->nq + 2 > PROF_MAX * 2)) {
    wg_flush(c);
    if (c->nbgs > BG_CAP / 2) wg_bg_clear(c);
  }
  c->serial++;
  uint32_t slot = c->uni_used++;
  memcpy(c->uni_host + (size_t)slot * UNI_STRIDE, block, sizeof block);
  WGPUBindGroup bg = bind_group(c, pi, slot, nb, buf, off, size);
  wg_encoder(c);
  if (c->profile) {
    tz_prof_row *r = &c->prof.row[tz_prof_label(&c->prof, label)];
    for (int i = 0; i < nargs; i++) r->bytes += (double)args[i].bytes;
    r->flop += c->pending_flop;
    wg_end_pass(c);
    WGPUPassTimestampWrites tw = {NULL, c->qs, (uint32_t)c->nq, (uint32_t)c->nq + 1};
    WGPUComputePassDescriptor pd = {NULL, tz_wgpu_sv(label), &tw};
    c->pass = W.wgpuCommandEncoderBeginComputePass(c->enc, &pd);
    c->qlabel[c->nq / 2] = label;
    c->nq += 2;
  } else if (!c->pass) {
    c->pass = W.wgpuCommandEncoderBeginComputePass(c->enc, NULL);
  }
  W.wgpuComputePassEncoderSetPipeline(c->pass, c->pipes[pi].pipe);
  W.wgpuComputePassEncoderSetBindGroup(c->pass, 0, bg, 0, NULL);
  W.wgpuComputePassEncoderDispatchWorkgroups(c->pass, gx, gy, gz);
  if (c->profile) wg_end_pass(c);
  if (c->flush_every && ++c->since_flush >= c->flush_every) wg_flush(c);
}
void wg_run(wg_ctx *c, const char *label, int pi, uint32_t *words, int nwords, const wg_arg *args,
                int nargs, uint32_t gx, uint32_t gy, uint32_t gz) {
  wg_run_ex(c, label, pi, words, nwords, args, nargs, gx, gy, gz, NULL, -1);
}
