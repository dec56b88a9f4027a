/* WebGPU backend ops: the matmul family (matmul_t = X·Wᵀ, matmul = dX, matmul_at = dW,
 * matmul_at_swiglu_a) on matmul_sgmat.wgsl (subgroup matrices, f16 operands converted from the
 * fp32 tensors, f32 accumulation: the f16 precision where the adapter has them, sg_kernel),
 * matmul_fast.wgsl (register tiles, split-K, vec4 and f16-mirror operands) or matmul.wgsl (the
 * general kernel for aliased operands), with the splitting of operands above one binding into
 * pieces. The kernel for a call is chosen in mm_one; the tile per adapter in wg_mm_config.
 * f16 activations (c->act_f16, be->act = TZ_F16): matmul_t's out, matmul's out and a (dY),
 * matmul_at's a (dY) and matmul_at_swiglu_a's a and gu are f16 (mm's a16 / b16 / o16). Native
 * (no fp32 copy of the tensor): subgroup-matrix kernel n (f16 operands as they are, the f16
 * output staged through workgroup memory: matmul_sgmm.wgsl O16) and matmul_fast (f16 operand
 * fetches, array<f16> output; split-K's fp32 partials summed into the f16 output by colsum_add's
 * f16 variant). Converted: subgroup-matrix kernel o (an f16 output computed into fp32 scratch,
 * then added / copied into it by copy_rows' f16 variant), the general kernel matmul.wgsl (fp32 copies of the
 * f16 operands, fp32 scratch output), an f16 operand 2 bytes past a 4-byte word (fp32 copy),
 * and the split paths' staging of matmul_t's output columns (fp32 stage, copied into the f16
 * output). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"
#include "backend/webgpu/sgmat.h"

static long db_calls[2]; /* matmul_at_db's calls on kernel n's DB: without, with a split over K */
long tz_webgpu_mm_db_calls(int split) { return split == 0 || split == 1 ? db_calls[split] : 0; }

/* ---- matmul family ---- */
/* Would run_ex give these two arguments one binding (same buffer, overlapping aligned ranges)? */
static int shares_binding(wg_ctx *c, tz_slice x, size_t xb, tz_slice y, size_t yb) {
  if (!x.buf || !y.buf || x.buf != y.buf) return 0;
  uint64_t align = c->lim.minStorageBufferOffsetAlignment;
  return x.off / align * align < ((y.off + yb + 3) & ~3ull) && y.off / align * align < ((x.off + xb + 3) & ~3ull);
}

/* Workgroup memory of a configuration in bytes: NBUF buffers of a BK x 16·TM and a BK x 16·TN
 * fp32 tile, unpadded (transposed tiles are swizzled instead, matmul_fast.wgsl), the same for
 * every form. 8 x 16 / BK 16: 24 576 with one buffer (the default), 49 152 with two. */
size_t wg_mm_smem(mm_cfg f) { return (size_t)f.nbuf * f.bk * (16 * f.tm + 16 * f.tn) * 4; }

/* The configuration for one call. TEZGAH_WEBGPU_MM=TMxTN:BK:NBUF forces one (bench_webgpu's
 * sweeps), TEZGAH_WEBGPU_MM_RW the same for dispatches whose bindings are all read_write (an
 * operand in the output's buffer); what does not fit the adapter's workgroup memory drops to one
 * buffer, then BK 8. */
mm_cfg wg_mm_config(wg_ctx *c, int rw) {
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
  if (wg_mm_smem(f) > lim) f.nbuf = 1;
  if (wg_mm_smem(f) > lim) f.bk = 8, f.nbuf = 2;
  if (wg_mm_smem(f) > lim) f.nbuf = 1;
  if (wg_mm_smem(f) > lim) f.tm = f.tn = 8;
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

/* ---- the subgroup-matrix path (c->sgmat: f16 precision on an adapter with an f16 x f16 -> f32
 * 16x16x16 configuration, chosen at device creation by sgmat_choose in webgpu_rt.c) ---- */
/* The tiles tried per form (0 X·Wᵀ, 1 dY·W, 2 dYᵀ·X: tz_sgmat_form), in order, the first that
 * fits a call taken (shape multiples, alignment, workgroup memory): TEZGAH_WEBGPU_SGMAT_TILE_XWT,
 * _DYW, _DYTX, then TEZGAH_WEBGPU_SGMAT_TILE (all forms), then the defaults; each a
 * ';'-separated list of tz_sgmat_tile_parse names. Default, every form: kernel n (matmul_sgmm.wgsl)
 * with 2 x 4 subgroups of 4 x 2 matrices (128 x 128), BK 64, vec4<u32> workgroup staging and
 * register prefetch — the fastest of the sweep on the H200 (2026-12-02 11:40 UTC, docs/PERF.md:
 * 274 / 271 / 270 TFLOP/s at 8192³, the GPT-2 124M step's matmuls 61 ms vs 105 on the old
 * default) — then main's earlier default o:64:4x4:2x2 (matmul_sgmat.wgsl) where kernel n cannot
 * run (operands not 16-byte aligned, shapes off its tile). */
#define SG_DEFAULT "n:64:2x4:4x2:vp;o:64:4x4:2x2"
static const char *const sg_default[3] = {SG_DEFAULT, SG_DEFAULT, SG_DEFAULT};
/* Default for X·Wᵀ and dY·W at K <= 1024 (GPT-2's K = 768 shapes: 12 k steps per tile, where a
 * tile's prologue and stores weigh), tried before SG_DEFAULT but after every variable above:
 * the same tile on a persistent grid of 264 workgroups in grouped order (vpgP264: the next
 * tile's first loads overlap the last k step). H200 (2026-12-03 04:11 UTC, bench_webgpu_sgmat
 * sweep over GPT-2 124M's shapes of each form, ms summed): X·Wᵀ 20.51 vs 22.05 on
 * n:64:2x4:4x2:vp (vpP264 20.89), dY·W 19.44 vs 19.54 (vpP264 19.69); training step with vpP264
 * 145 030 vs 141 808 tokens/s. main's choice: TEZGAH_WEBGPU_SGMAT_TILE="n:64:2x4:4x2:vp;o:64:4x4:2x2". */
#define SG_SHORTK "n:64:2x4:4x2:vpgP264"

/* Pieces of K for the weight gradient on kernel n (tz_sgmat_splits; TEZGAH_WEBGPU_SGMAT_SPLIT=0:
 * none), fewer where the partial products would not fit one binding. */
static uint32_t sg_split(wg_ctx *c, tz_sgmat_tile t, int form, int M, int K, int N) {
  if (form != TZ_SGMAT_DYTX || !t.kern || t.pers || !env_int("TEZGAH_WEBGPU_SGMAT_SPLIT", 1)) return 1;
  uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16;
  if ((uint32_t)M % bm || (uint32_t)N % bn) return 1;
  uint32_t S = tz_sgmat_splits((uint32_t)(M / bm) * (uint32_t)(N / bn), (uint32_t)K, t.bk);
  while (S > 1 && (uint64_t)S * M * N * 4 > c->lim.maxStorageBufferBindingSize) S--;
  if (((uint64_t)M * N + 255) / 256 > 65535) S = 1; /* colsum_add's one-dimensional grid */
  return S;
}

/* The first tile of the lists above that runs form at M x N x K: 1 with *t and *split, else 0.
 * aligned: the f16 operands start 16-byte aligned (kernel n's 8-half loads). o16: the output is
 * f16 (c->act_f16): kernel n's tiles then store it as f16 (t->o16, its staging counted in the
 * workgroup memory; its epilogue then takes two workgroup barriers per result matrix, not
 * measured on the H200 yet: TEZGAH_WEBGPU_SGMAT_O16=0 gives the scratch path for A/B); kernel o's
 * cannot (t->o16 0: the caller goes through fp32 scratch). */
static int sg_pick(wg_ctx *c, int form, int M, int K, int N, int aligned, tz_sgmat_tile *t, uint32_t *split,
                   int o16) {
  static const char *const env[3] = {"TEZGAH_WEBGPU_SGMAT_TILE_XWT", "TEZGAH_WEBGPU_SGMAT_TILE_DYW",
                                     "TEZGAH_WEBGPU_SGMAT_TILE_DYTX"};
  /* TEZGAH_WEBGPU_SGMAT_TILE_SHORTK (tuning): a list tried first for X·Wᵀ and dY·W at K <= 1024;
   * SG_SHORTK the same calls' default */
  int sk = form != TZ_SGMAT_DYTX && K <= 1024;
  const char *lists[5] = {sk ? getenv("TEZGAH_WEBGPU_SGMAT_TILE_SHORTK") : NULL, getenv(env[form]),
                          getenv("TEZGAH_WEBGPU_SGMAT_TILE"), sk ? SG_SHORTK : NULL, sg_default[form]};
  if (c->sg_emu) /* the emulation's defaults: the same paths on 32 × 32 tiles (lavapipe's 32 KiB of
                  * workgroup memory) */
    lists[3] = sk ? "n:32:2x1:1x2:vpgP3" : NULL, lists[4] = "n:32:2x1:1x2:vp";
  for (int l = 0; l < 5; l++) {
    if (!lists[l] || !*lists[l]) continue;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", lists[l]);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
      tz_sgmat_tile g;
      if (tz_sgmat_tile_parse(tok, &g) != 0) continue; /* a bad name in the variable: the next */
      if (g.kern && !aligned) continue;
      uint32_t S = sg_split(c, g, form, M, K, N);
      /* TEZGAH_WEBGPU_SGMAT_O16=0 (A/B measurements): kernel n too writes an f16 output through
       * fp32 scratch and a copy, as kernel o does */
      g.o16 = o16 && g.kern && S == 1 && env_int("TEZGAH_WEBGPU_SGMAT_O16", 1);
      if (!tz_sgmat_tile_fits(g, form, (uint32_t)M, (uint32_t)N, (uint32_t)K, S, c->sg_size,
                              c->lim.maxComputeWorkgroupStorageSize, c->lim.maxComputeInvocationsPerWorkgroup, NULL))
        continue;
      *t = g, *split = S;
      return 1;
    }
  }
  return 0;
}

/* Can variant's call (M, K, N) run on the subgroup-matrix kernels? Its shape must fit a tile (no
 * edge handling in the kernels; other shapes keep the fp32 kernels) and the operands must fit
 * one binding as f16. */
static int sg_shape_ok(wg_ctx *c, int variant, int M, int K, int N, int o16) {
  if (!c->sgmat || variant > 2 || M <= 0 || N <= 0 || K <= 0) return 0;
  tz_sgmat_tile t;
  uint32_t S;
  if (!sg_pick(c, variant, M, K, N, 1, &t, &S, o16)) return 0;
  uint64_t cap = c->lim.maxStorageBufferBindingSize;
  return (uint64_t)M * K * 2 <= cap && (uint64_t)K * N * 2 <= cap;
}

/* Will a call of variant at M x N x K run on kernel n with its f16 tensors as they are (mm's
 * f16 pieces by bytes rely on it: no fp32 copy of an f16 operand, no fp32 scratch for an f16
 * output)? Its tile must be kernel n, with the f16 output stored natively (O16) and without a
 * split whose fp32 partials would exceed a binding, and the operands aligned as sg_matmul
 * requires. A call that still declines (bindings that merge) takes the other kernels, whose fp32
 * copies then exceed a binding: one error line, not a wrong result. */
static int sg_native_ok(wg_ctx *c, int variant, int M, int K, int N, int o16, tz_slice a_, tz_slice out) {
  if (!sg_shape_ok(c, variant, M, K, N, o16)) return 0;
  tz_sgmat_tile t;
  uint32_t S;
  if (!sg_pick(c, variant, M, K, N, 1, &t, &S, o16) || !t.kern || (o16 && !t.o16)) return 0;
  if (S > 1 && (uint64_t)S * M * N * 4 > wg_cap_bytes(c)) return 0;
  return a_.off % 16 == 0 && out.off % 64 == 0;
}
/* TEZGAH_WEBGPU_F16_PIECES=0 (A/B): f16 tensors' pieces counted in fp32 elements, as before */
int wg_f16_pieces(void) { return env_int("TEZGAH_WEBGPU_F16_PIECES", 1) != 0; }

/* The f16 operand scratch buffer `which` (0: a, 1: b) with at least `bytes`; what it held is
 * forgotten when it grows. */
tz_buf *wg_sg16(tz_backend *be, int which, size_t bytes) {
  wg_ctx *c = CTX(be);
  if (!c->sg16[which] || c->sg16[which]->size < bytes) {
    c->sg_src[which] = NULL;
    if (c->sg16[which]) wg_free(be, c->sg16[which]);
    c->sg16[which] = wg_alloc(be, bytes < (1 << 20) ? (1 << 20) : bytes, "webgpu f16 operand");
    if (!c->sg16[which]) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", bytes, 0);
  }
  return c->sg16[which];
}

/* Take the weight mirror and reuse f16 copies in the subgroup-matrix path (sg_operand,
 * sg_matmul, the crossentropy's f16 dlogits)? TEZGAH_WEBGPU_SG_REUSE=0: convert every operand that
 * is not f16 already on every call, as before (A/B measurements). */
int wg_sg_reuse(void) { return env_int("TEZGAH_WEBGPU_SG_REUSE", 1) != 0; }

/* An f16 copy of the fp32 tensor src [n] (n even, src 8-byte aligned) in the operand scratch
 * buffer `which` (0: a, 1: b), through f32_to_f16.wgsl. The copy is reused when the buffer
 * already holds this tensor, or one it lies in (16-byte steps: the f16 part then starts 8-byte
 * aligned), and nothing was dispatched, uploaded or freed since the pass that made it or the
 * subgroup-matrix kernel that last read it (c->serial): the backward's dY is the a operand of
 * matmul (dX = dY·W) and right after of matmul_at (dW += dYᵀ·X); the lm_head's dlogits, written
 * in f16 by crossentropy too (wg_crossentropy, sgmat), are read in row pieces by both. */
tz_slice wg_sg_copy16(wg_ctx *c, int which, tz_slice src, size_t n) {
  if (wg_sg_reuse() && src.buf && c->sg16[which] && c->sg_src[which] == src.buf && c->sg_serial[which] == c->serial &&
      src.off >= c->sg_off[which] &&
      (src.off - c->sg_off[which]) % 16 == 0 && src.off + F4(n) <= c->sg_off[which] + F4(c->sg_n[which]))
    return (tz_slice){c->sg16[which], (src.off - c->sg_off[which]) / 2};
  return TZ_NONE;
}

static tz_slice sg_operand(tz_backend *be, int which, tz_slice src, size_t n) {
  wg_ctx *c = CTX(be);
  size_t bytes = n * 2;
  tz_slice have = wg_sg_copy16(c, which, src, n);
  if (have.buf) return have;
  c->sg_src[which] = NULL;
  tz_slice d = {wg_sg16(be, which, bytes), 0};
  uint32_t w[24] = {0};
  w[8] = (uint32_t)(n / 2);
  wg_arg a[] = {A(d, bytes, "f16 operand"), A(src, F4(n), "fp32 operand")};
  uint32_t gx, gy;
  grid1(n / 2, &gx, &gy);
  double fl = c->pending_flop;
  c->pending_flop = 0;
  int other = c->sg_src[1 - which] && c->sg_serial[1 - which] == c->serial; /* valid before this pass */
  wg_run(c, "to_f16 (sgmat)", wg_pipeline(c, "f32_to_f16", "f32_to_f16", ""), w, 9, a, 2, gx, gy, 1);
  c->pending_flop = fl;
  /* valid as of now; the other copy stays valid (this pass wrote only the scratch buffer) */
  c->sg_src[which] = src.buf, c->sg_off[which] = src.off, c->sg_n[which] = n, c->sg_serial[which] = c->serial;
  if (other) c->sg_serial[1 - which] = c->serial;
  return d;
}

/* Read an fp32 a operand (the gradients dY) in kernel n directly, rounding it to f16 while
 * staging (matmul_sgmm.wgsl, A32), instead of an f16 copy made by a conversion pass
 * (sg_operand)? TEZGAH_WEBGPU_SGMAT_A32=0: the copy, as before (A/B). GPT-2 124M f16 on the
 * H200: the pass cost 1.12 ms / step in 12 calls (round 1 of 2026-12-03, 04:11 UTC): the
 * attention backward's dqkv [B·T, 3C], read by dX = dqkv·W_qkv and dW_qkv += dqkvᵀ·ln1. */
static int sg_a32(void) { return env_int("TEZGAH_WEBGPU_SGMAT_A32", 1) != 0; }

/* The profile label of a subgroup-matrix call: the form's ("matmul_t (sgmat)", ...), or with
 * TEZGAH_PROFILE_SHAPES=1 (tuning: which of the model's shapes costs what) the form's followed
 * by " MxNxK" and, for a split-K call, " /S" (its colsum_add reduction then " MxN +S"). The
 * profile keeps label pointers (tz_prof_label), so each distinct label is kept in a process-wide
 * table of SG_LABELS entries; past that, the form's label. */
#define SG_LABELS 48
static const char *sg_label(const char *form, int M, int N, int K, uint32_t S, int reduce) {
  static char names[SG_LABELS][64];
  static int used;
  if (!env_int("TEZGAH_PROFILE_SHAPES", 0)) return form;
  char l[64];
  if (reduce) snprintf(l, sizeof l, "%s %dx%d +%u", form, M, N, S);
  else if (S > 1) snprintf(l, sizeof l, "%s %dx%dx%d /%u", form, M, N, K, S);
  else snprintf(l, sizeof l, "%s %dx%dx%d", form, M, N, K);
  for (int i = 0; i < used; i++)
    if (!strcmp(names[i], l)) return names[i];
  if (used == SG_LABELS) return form;
  snprintf(names[used], sizeof names[used], "%s", l);
  return names[used++];
}

/* The subgroup-matrix kernel for one call, when sg_shape_ok and the operands allow it: 2 when it
 * ran with its output stored as it is (fp32, or f16 through O16), 1 when it ran into fp32 scratch
 * for an f16 output (kernel o), 0 when the caller must take the other kernels (bias with accumulation, bias in the
 * output's buffer, unaligned operands). out [M, N] f32 (+)= op(a)·op(b) (+ bias) with a and b
 * rounded to f16 (round to nearest even) and f32 accumulation (tolerance: tests/test_webgpu_ops.c
 * states it, ~1e-3·Σ|a·b|). The f16 operands come from, in this order: the tensor itself where
 * it is already f16 (a16 / b16: matmul inputs written as f16 by their producer, c->act16); the
 * f16 weight mirror where b is a weight of the mirrored parameter buffer (matmul_t's W and
 * matmul's W: the same values the conversion would give, without the pass); else an f16 copy
 * in scratch (sg_operand: the gradients dY, fp32 weights outside the parameter buffer). */
static int sg_matmul(tz_backend *be, int variant, tz_slice out, tz_slice a_, tz_slice b_, tz_slice bias, int M,
                     int K, int N, int acc, int a16, int b16, int o16, tz_slice ex, int epi) {
  wg_ctx *c = CTX(be);
  if (!sg_shape_ok(c, variant, M, K, N, o16)) return 0;
  /* epi (TZ_SGMAT_EPI_*, with its f16 tensor ex, [M, N], or [M, 2N] with out for DSWIGLU): kernel
   * n's RES (wg_matmul_t_res) or GELU (wg_matmul_t_gelu) epilogue for X·Wᵀ, DGELU
   * (wg_matmul_dgelu) or DSWIGLU (wg_matmul_dswiglu) for dY·W, each with an f16 out written (not
   * accumulated) and ex 16-byte aligned in a buffer of its own (GELU writes ex: not a_'s or the
   * bias's buffer either, which a dispatch may not both read and write); else 0 (the caller runs
   * the separate op after) */
  /* TZ_SGMAT_EPI_DB (wg_matmul_at_db): dW += dYᵀ·X with the bias gradient ex (f32 [M]) += Σ_k
   * dY[k, :] from the f16 dY the kernel stages (DB), written right after dW: ex must follow out
   * in its buffer (the flat gradient buffer's layout), and the split's partials are [M·N + M]
   * apart, so that one sum adds both */
  int dbe = epi == TZ_SGMAT_EPI_DB;
  if (dbe) {
    /* (and acc: db always accumulates, and the one sum adds dW and db alike) */
    if (variant != 2 || o16 || !a16 || !acc || ex.buf != out.buf || ex.off != out.off + (size_t)M * N * 4) return 0;
    epi = TZ_SGMAT_EPI_NONE;
  }
  int hr = epi != TZ_SGMAT_EPI_NONE;
  int dsw = epi == TZ_SGMAT_EPI_DSWIGLU; /* out and ex [M, 2N] */
  if (hr && (variant != (epi >= TZ_SGMAT_EPI_DGELU ? 1 : 0) || acc || !o16 || ex.off % 16 || ex.buf == out.buf ||
             !tz_present(ex) || (dsw && N % 8) ||
             (epi == TZ_SGMAT_EPI_GELU && (ex.buf == a_.buf || (tz_present(bias) && ex.buf == bias.buf)))))
    return 0;
  if (tz_present(bias) && (acc || variant != 0)) return 0;
  if (a_.off % 8 || b_.off % 8 || out.off % 64 || (tz_present(bias) && bias.buf == out.buf)) return 0;
  /* the mirror's offset b_.off / 2 must be 8-byte aligned */
  int bmir = !b16 && variant < 2 && wg_mirrored(c, b_) && b_.off % 16 == 0 && wg_sg_reuse();
  static const char *labels[3] = {"matmul_t (sgmat)", "matmul (sgmat)", "matmul_at (sgmat)"};
  size_t m = (size_t)M, k = (size_t)K, n = (size_t)N;
  if (bmir) {
    double fl = c->pending_flop;
    c->pending_flop = 0;
    wg_mirror_refresh(c);
    c->pending_flop = fl;
  }
  tz_slice bh = b16 ? b_ : bmir ? (tz_slice){c->mirror, b_.off / 2} : sg_operand(be, 1, b_, k * n);
  int al16 = c->lim.minStorageBufferOffsetAlignment % 16 == 0 && bh.off % 16 == 0;
  tz_sgmat_tile t;
  uint32_t S = 1;
  /* a fp32 with no valid f16 copy (the gradients dY): kernel n reads it as f32 and rounds it
   * while staging (A32), where the tile picked for a 16-byte aligned a is kernel n and a fits
   * one binding as f32; else an f16 copy first (sg_operand) */
  tz_slice ah = a16 ? a_ : wg_sg_copy16(c, 0, a_, m * k);
  int a32 = 0;
  if (!ah.buf && sg_a32() && m * k * 4 <= c->lim.maxStorageBufferBindingSize &&
      sg_pick(c, variant, M, K, N, al16 && a_.off % 16 == 0, &t, &S, o16) && t.kern)
    a32 = 1, t.a32 = 1, ah = a_;
  if (!ah.buf) ah = sg_operand(be, 0, a_, m * k);
  /* ... and, on the tiles that can (p, one buffer), writes a's f16 copy while it stages a (A16W)
   * into the operand scratch, for the calls that read the same a next (dW, the bias gradient) */
  tz_slice h16 = TZ_NONE;
  if (a32 && t.pf && t.nbuf == 1 && env_int("TEZGAH_WEBGPU_SGMAT_A16W", 1) && a_.buf != out.buf)
    t.a16w = 1, h16 = (tz_slice){wg_sg16(be, 0, m * k * 2), 0};
  int al = al16 && ah.off % 16 == 0;
  /* none: only kernel n fitted and the operands are not 16-byte aligned (the conversions made
   * are harmless) */
  if (!a32 && !sg_pick(c, variant, M, K, N, al, &t, &S, o16)) return 0;
  if (hr && (!t.kern || !t.o16 || S != 1 || t.a16w)) return 0;
  t.epi = (uint32_t)epi;
  if (dbe) {
    t.db = 1;
    /* (c and the split's partials grow by M a row: within a binding, the fallback sum's grid) */
    size_t mnb = ((size_t)M * N + M) * 4;
    if (a32 || !tz_sgmat_tile_fits(t, variant, (uint32_t)M, (uint32_t)N, (uint32_t)K, S, c->sg_size,
                                   c->lim.maxComputeWorkgroupStorageSize, c->lim.maxComputeInvocationsPerWorkgroup, NULL) ||
        mnb > wg_cap_bytes(c) || (uint64_t)S * mnb > c->lim.maxStorageBufferBindingSize ||
        (S > 1 && (mnb / 4 + 255) / 256 > 65535))
      return 0;
  }
  int hb = tz_present(bias);
  /* an f16 output on a tile that cannot store it (kernel o): computed into fp32 scratch (the
   * split-K partials' buffer: no split in the forms with an f16 output), then added / copied
   * into the output by copy_rows' f16 variant below (converted, not native) */
  int o32 = o16 && !t.o16;
  TZ_ASSERT(!o16 || S == 1);
  char prefix[1024];
  tz_sgmat_prefix(prefix, sizeof prefix, t, variant, acc && S == 1 && !o32, hb, (int)S, c->sg_size, c->sg_emu);
  uint32_t w[24] = {0};
  uint32_t ks = S > 1 ? (((uint32_t)K + S - 1) / S + t.bk - 1) / t.bk * t.bk : (uint32_t)K;
  w[8] = (uint32_t)M, w[9] = (uint32_t)N, w[10] = (uint32_t)K, w[11] = ks;
  /* c: [M, N], with DB [M, N] then db's M (the split's partials that far apart) */
  size_t mn = m * n + (dbe ? m : 0);
  tz_slice part = S > 1 || o32 ? wg_scratch(be, F4(S * mn)) : TZ_NONE;
  tz_slice bias4 = hb || !(t.a16w || hr) ? bias : (tz_slice){c->dummy[3], 0};
  /* the native f16 output: 4-byte-unit offset (p.off.x, 16-byte aligned here) and n % 8 == 0 */
  wg_arg ar[] = {S > 1 || o32 ? A(part, F4(S * mn), o32 ? "out (fp32 scratch)" : "split-K partials")
                 : o16        ? A(out, m * n * (dsw ? 4 : 2), "out (f16)")
                              : A(out, F4(mn), dbe ? "out, db" : "out"),
                 a32 ? A(ah, F4(m * k), "a (f32)") : A(ah, m * k * 2, "a (f16)"), A(bh, k * n * 2, "b (f16)"),
                 /* the kernel's bindings are fixed (1 c, 2 a, 3 b, 4 bias, 5 a16w) while wg_run
                  * numbers the PRESENT arguments in order: with A16W an absent bias would move
                  * the copy to binding 4 (the kernel then wrote it into an unused 16-byte
                  * binding: dW and the bias gradient read a stale scratch, H200 2026-12-03), so
                  * a placeholder buffer holds binding 4 (and for RES's residual at binding 5) */
                 A(bias4, hb || !(t.a16w || hr) ? F4(n) : 16, "bias"),
                 hr ? A(ex, m * n * (dsw ? 4 : 2),
                        epi == TZ_SGMAT_EPI_RES    ? "res (f16)"
                        : epi == TZ_SGMAT_EPI_GELU ? "gelu(h) (f16)"
                        : dsw                      ? "gu (f16)"
                                                   : "h (f16)")
                    : A(h16, m * k * 2, "a (f16 copy out)")};
  { /* every present argument must get its own binding, in order (no merge, no gap before the
     * last): else the other kernels (the conversions made are harmless) */
    int slot_of[MAX_ARGS];
    tz_buf *sb[MAX_ARGS];
    uint64_t lo[MAX_ARGS], hi[MAX_ARGS];
    int na = t.a16w || hr ? 5 : 4, ns = wg_bind_slots(c, ar, na, slot_of, sb, lo, hi);
    for (int i = 0; i < na; i++)
      if (slot_of[i] >= 0 ? slot_of[i] != i : i < ns) return 0;
  }
  int valid[2];
  for (int i = 0; i < 2; i++) valid[i] = c->sg_src[i] && c->sg_serial[i] == c->serial;
  c->pending_flop = 2.0 * M * N * K;
  uint32_t grid[3];
  tz_sgmat_grid(t, (uint32_t)M, (uint32_t)N, S, grid);
  wg_run(c, sg_label(labels[variant], M, N, K, S, 0), wg_pipeline(c, tz_sgmat_file(t), "main", prefix), w, 12, ar,
         t.a16w || hr ? 5 : 4, grid[0], grid[1], grid[2]);
  c->pending_flop = 0;
  if (dbe) db_calls[S > 1]++;
  if (o32) /* the f16 out (+)= the fp32 result (copy_rows' f16 variant: ±inf beyond f16's range) */
    wg_copy_rows_h(c, out, n, part, n, M, N, acc, 1, 0);
  if (S > 1 && !wg_colsum_add_v4(c, sg_label(labels[variant], M, N, K, S, 1), out, part, S, mn, mn, !acc)) {
    /* out (+)= Σ_s part[s]: colsum_add_v4 in 16-byte accesses, else (TEZGAH_WEBGPU_COLSUM=0, or
     * unaligned) colsum_add */
    uint32_t r[24] = {0};
    r[8] = S, r[9] = (uint32_t)mn, r[10] = !acc, r[11] = (uint32_t)mn;
    wg_arg ra[] = {A(out, F4(mn), "out"), A(part, F4(S * mn), "split-K partials")};
    wg_run(c, sg_label(labels[variant], M, N, K, S, 1), wg_pipeline(c, "elementwise", "colsum_add", ""), r, 12, ra, 2,
           (uint32_t)((mn + 255) / 256), 1, 1);
  }
  /* the scratch copies valid before this dispatch stay valid unless it wrote their source */
  for (int i = 0; i < 2; i++)
    if (valid[i] && c->sg_src[i] != out.buf && !(epi == TZ_SGMAT_EPI_GELU && c->sg_src[i] == ex.buf))
      c->sg_serial[i] = c->serial;
  if (t.a16w) /* the copy A16W wrote, valid as of now (wg_sg_copy16) */
    c->sg_src[0] = a_.buf, c->sg_off[0] = a_.off, c->sg_n[0] = m * k, c->sg_serial[0] = c->serial;
  return o32 ? 1 : 2;
}

/* a16 / b16: operand a / b is f16 (a matmul input written as f16 by its producer, c->act16:
 * matmul_t's a, matmul_at's b; with f16 activations, c->act_f16, also dY, matmul_at_swiglu_a's
 * a and gu), else fp32. o16: out is f16 (an activation with c->act_f16: matmul_t, matmul), else
 * fp32. */
static void mm_one(tz_backend *be, const char *label, int variant, tz_slice out, tz_slice a_, tz_slice b_,
                   tz_slice bias, int M, int K, int N, int acc, int a16, int b16, int o16) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  /* THE kernel choice: subgroup matrices where this adapter and call allow them (sg_matmul),
   * else matmul_fast, else the general matmul.wgsl */
  /* f16 operands are addressed in 4-byte units (wg_run_ex's element offsets): one that starts 2
   * bytes past a 4-byte boundary (a row of an odd-C tensor: the KV-cache decode's last row of nf)
   * is read through an fp32 copy */
  /* (with f16 activations both may be: a's copy at the start of the fp32 copy buffer, b's after
   * it, 256-byte aligned) */
  size_t bn_ = (size_t)K * N * (variant == 3 ? 2 : 1), a32n = (a16 && a_.off % 4) ? ((size_t)M * K + 63) & ~(size_t)63 : 0;
  if ((a16 && a_.off % 4) || (b16 && b_.off % 4)) {
    tz_slice f = wg_act32(be, a32n + ((b16 && b_.off % 4) ? bn_ : 0));
    if (a16 && a_.off % 4) {
      wg_to_f32(c, label, f, a_, (size_t)M * K);
      a_ = f, a16 = 0;
    }
    if (b16 && b_.off % 4) {
      tz_slice fb = tz_f32(f, a32n);
      wg_to_f32(c, label, fb, b_, bn_);
      b_ = fb, b16 = 0;
    }
  }
  int sg = variant < 3 ? sg_matmul(be, variant, out, a_, b_, bias, M, K, N, acc, a16, b16, o16, TZ_NONE, 0) : 0;
  /* TEZGAH_WEBGPU_SGMAT_NATIVE16=1 (tests): with f16 activations, a call of the three forms that
   * does not run on the subgroup-matrix kernels with its f16 tensors as they are (kernel n's O16
   * store, the f16 dY read directly) is an error, so a test of that path cannot pass on another;
   * =2: one that does not run on them at all (kernel o's fp32 scratch allowed) */
  int nat = c->act_f16 && c->sgmat && variant < 3 ? env_int("TEZGAH_WEBGPU_SGMAT_NATIVE16", 0) : 0;
  if (nat && sg < (nat == 1 ? 2 : 1))
    wg_fail(c, "%s: %s (TEZGAH_WEBGPU_SGMAT_NATIVE16=1)", label,
            sg ? "the f16 output went through fp32 scratch" : "not on the subgroup-matrix kernels", 0, 0);
  if (sg) return;
  c->pending_flop = 2.0 * M * N * K;
  char prefix[1900], direct[80];
  uint32_t w[24] = {0};
  w[8] = M, w[9] = K, w[10] = N, w[11] = acc, w[12] = tz_present(bias);
  /* variant 3: matmul_at whose b is swiglu(gu) of gu [K, 2N], computed on load (SWB) */
  int swb = variant == 3, kv = swb ? 2 : variant;
  size_t an = (size_t)M * K, bn = (size_t)K * N * (swb ? 2 : 1);
  wg_arg a[] = {o16 ? AH(out, (size_t)M * N, "out (f16)") : A(out, F4((size_t)M * N), "out"),
                A(a_, a16 ? (an * 2 + 3) & ~(size_t)3 : F4(an), "a"),
                A(b_, b16 ? (bn * 2 + 3) & ~(size_t)3 : F4(bn), swb ? "gu" : "b"), A(bias, F4(N), "bias")};
  /* fast path (matmul_fast.wgsl): any shape, four distinct bindings */
  int fast = !getenv("TEZGAH_WEBGPU_NO_FAST_MATMUL");
  /* matmul_t's weight in the mirrored parameter buffer: read its f16 copy (as vec4<f16> where the
   * f16 slice starts 8-byte aligned and K % 4 == 0, else f16 by f16; the element offset is in
   * 4-byte units, so the f16 slice must start 4-byte aligned) */
  int w16 = fast && variant == 0 && wg_mirrored(c, b_) && b_.off % 8 == 0;
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
  tz_slice o32 = TZ_NONE; /* the general kernel's fp32 result for an f16 out (c->act_f16) */
  if (!fast && c->act_f16 && (a16 || b16 || o16)) {
    /* the general kernel reads and writes fp32 only (its DIRECT loads type the bindings f32):
     * fp32 copies of the f16 operands (a's, then b's, in the fp32 copy buffer) and an fp32
     * result in scratch, added / copied into the f16 out after (converted, not native: this
     * kernel runs only for aliased operands or TEZGAH_WEBGPU_NO_FAST_MATMUL) */
    double fl = c->pending_flop;
    c->pending_flop = 0;
    /* in buffers of their own (wg_act32x 0 and 1): the fp32 copy buffer (wg_act32) may already
     * hold a's copy from the misaligned-operand block above, which b's must not overwrite */
    if (a16) {
      tz_slice f = wg_act32x(be, 0, F4(an));
      wg_to_f32(c, label, f, a_, an);
      a[1] = A(f, F4(an), "a (fp32 copy)");
    }
    if (b16) {
      tz_slice f = wg_act32x(be, 1, F4(bn));
      wg_to_f32(c, label, f, b_, bn);
      a[2] = A(f, F4(bn), swb ? "gu (fp32 copy)" : "b (fp32 copy)");
    }
    if (o16) {
      o32 = wg_scratch(be, F4((size_t)M * N));
      a[0] = A(o32, F4((size_t)M * N), "out (fp32 scratch)");
      w[11] = 0;
    }
    a16 = b16 = 0;
    c->pending_flop = fl;
  }
  if (!fast && (a16 || b16)) { /* the general kernel reads fp32 only: an fp32 copy of the f16 operand */
    double fl = c->pending_flop;
    c->pending_flop = 0;
    size_t en = a16 ? an : bn;
    tz_slice f = wg_act32(be, en);
    wg_to_f32(c, label, f, a16 ? a_ : b_, en);
    a[a16 ? 1 : 2] = A(f, F4(en), a16 ? "a (fp32 copy)" : "b (fp32 copy)");
    a16 = b16 = 0;
    c->pending_flop = fl;
  }
  if (w16) {
    double fl = c->pending_flop;
    c->pending_flop = 0;
    wg_mirror_refresh(c);
    c->pending_flop = fl;
  }
  if (fast) {
    int rw = 0; /* an operand in the output's buffer: bind everything read_write */
    for (int i = 1; i < 4; i++)
      if (a[i].s.buf && a[i].s.buf == out.buf) rw = 1;
    mm_cfg f = wg_mm_config(c, rw);
    uint32_t bk = (uint32_t)f.bk, BM = 16u * f.tm, BN = 16u * f.tn;
    /* vec4 fetches where the operand's contiguous dimension is a multiple of 4 and it starts on a
     * 16-byte boundary (the binding's own offset is a multiple of minStorageBufferOffsetAlignment) */
    int al = c->lim.minStorageBufferOffsetAlignment % 16 == 0;
    int va = al && (kv == 2 ? M : K) % 4 == 0 && a_.off % 16 == 0;
    int vb = al && (kv == 0 ? K : N) % 4 == 0 && b_.off % 16 == 0;
    size_t n = (size_t)snprintf(prefix, sizeof prefix,
                                "%sconst VARIANT: u32 = %du; const SWB: bool = %s; const BK: u32 = %uu; "
                                "const TM: u32 = %du; const TN: u32 = %du; const NBUF: u32 = %du;\n",
                                w16 || a16 || b16 || o16 ? F16_PREFIX "\n" : "", kv, swb ? "true" : "false", bk, f.tm, f.tn,
                                f.nbuf);
    n += mm_operand(prefix + n, sizeof prefix - n, 2, "A", "ga", "p.oa.y", va, a16, rw);
    n += mm_operand(prefix + n, sizeof prefix - n, 3, "Bm", "gb", "p.oa.z", vb, w16 || b16, rw);
    if (rw) n += (size_t)snprintf(prefix + n, sizeof prefix - n, "// rw\n");
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
    /* the output binding: f16 (o16, one split: the result stored as f16 in place) or fp32 (the
     * split-K partials, and fp32 outputs) */
    int oh = o16 && S == 1;
    if (oh)
      n += (size_t)snprintf(prefix + n, sizeof prefix - n,
                            "@group(0) @binding(1) var<storage, read_write> O: array<f16>;\n"
                            "fn ldo(i: u32) -> f32 { return f32(O[i]); }\n"
                            "fn sto(i: u32, v: f32) { O[i] = f16s(v); }\n"); /* common/f16s.wgsl */
    else
      n += (size_t)snprintf(prefix + n, sizeof prefix - n,
                            "@group(0) @binding(1) var<storage, read_write> O: array<f32>;\n"
                            "fn ldo(i: u32) -> f32 { return O[i]; }\nfn sto(i: u32, v: f32) { O[i] = v; }\n");
    TZ_ASSERT(n + 8 < sizeof prefix);
    int pf = wg_pipeline(c, "matmul_fast", "matmul_fast", prefix);
    if (S == 1) {
      wg_run_ex(c, label, pf, w, 14, a, 4, gx, gy, 1, NULL, -1);
      c->pending_flop = 0;
      return;
    }
    size_t pn = (size_t)S * M * N;
    tz_slice part = wg_scratch(be, F4(pn));
    w[11] = 0;
    a[0] = A(part, F4(pn), "split-K partials");
    wg_run_ex(c, label, pf, w, 14, a, 4, gx, gy, S, NULL, -1);
    c->pending_flop = 0;
    /* out (+)= Σ_s part[s]: fp32 out in colsum_add_v4's 16-byte accesses where it applies */
    if (!o16 && wg_colsum_add_v4(c, label, out, part, (int)S, (size_t)M * N, (size_t)M * N, !acc)) return;
    uint32_t r[24] = {0};
    r[8] = S, r[9] = (uint32_t)((size_t)M * N), r[10] = !acc, r[11] = (uint32_t)((size_t)M * N);
    wg_arg ra[] = {o16 ? AH(out, (size_t)M * N, "out (f16)") : A(out, F4((size_t)M * N), "out"),
                   A(part, F4(pn), "split-K partials")};
    wg_run(c, label, wg_pipeline(c, "elementwise", "colsum_add", ""), r, 12, ra, 2, (uint32_t)(((size_t)M * N + 255) / 256),
        1, 1);
    return;
  }
  snprintf(prefix, sizeof prefix, "const VARIANT: u32 = %du; const DIRECT: bool = false; const SWB: bool = %s;", kv,
           swb ? "true" : "false");
  snprintf(direct, sizeof direct, "const VARIANT: u32 = %du; const DIRECT: bool = true; const SWB: bool = %s;", kv,
           swb ? "true" : "false");
  wg_run_ex(c, label, wg_pipeline(c, "matmul", "matmul_tiled", prefix), w, 13, a, 4, (N + 127) / 128, (M + 127) / 128, 1,
         NULL, wg_pipeline(c, "matmul", "matmul_tiled", direct));
  c->pending_flop = 0;
  /* the f16 out (+)= the fp32 result (copy_rows' f16 variant: ±inf beyond f16's range) */
  if (o32.buf) wg_copy_rows_h(c, out, (size_t)N, o32, (size_t)N, M, N, acc, 1, 0);
}

/* A transposed copy of matmul_t's weight b [N, K] as [K, N] in its own buffer (the forward then
 * runs the matmul form, mm_tt); NULL slice where it would not fit one binding. */
static tz_slice mm_transposed(tz_backend *be, const char *label, tz_slice b_, int N, int K) {
  wg_ctx *c = CTX(be);
  size_t n = (size_t)N * K;
  if (n > wg_cap_elems(c)) return TZ_NONE;
  if (!c->wt || c->wt->size < F4(n)) {
    if (c->wt) wg_free(be, c->wt);
    c->wt = wg_alloc(be, F4(n) < (1 << 20) ? (1 << 20) : F4(n), "webgpu transposed weight");
    if (!c->wt) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", F4(n), 0);
  }
  tz_slice t = {c->wt, 0};
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = (uint32_t)K;
  wg_arg a[] = {A(t, F4(n), "b transposed"), A(b_, F4(n), "b")};
  wg_run(c, label, wg_pipeline(c, "elementwise", "transpose", ""), w, 10, a, 2, (uint32_t)(K + 31) / 32,
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
 * still too large) reaches run_ex's binding-size error. a16 / b16 / o16: mm_one's. With f16
 * activations the staged pieces of an f16 a are f16 (copy_rows' f16 variant), matmul_t's
 * output columns are staged in fp32 and copied into the f16 out, and matmul over K pieces
 * accumulates into the f16 out piece by piece (each piece's sum rounded to f16 once more). */
static void mm(tz_backend *be, const char *label, int variant, tz_slice out, tz_slice a_, tz_slice b_,
               tz_slice bias, int M, int K, int N, int acc, int a16, int b16, int o16) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  size_t cap = wg_cap_elems(c), m = (size_t)M, k = (size_t)K, n = (size_t)N;
  size_t ae = a16 ? 2 : 4, be_ = b16 ? 2 : 4, oe = o16 ? 2 : 4; /* element bytes of a, b, out */
  size_t bs = variant == 3 ? 2 * n : n; /* b's row stride (variant 3: gu [K, 2N]) */
  /* matmul_t on an fp32 weight: transpose it once, then the matmul form (its tile loads
   * transpose only a; H200 8192³: 44.8 vs 43.0 TFLOP/s, docs/PERF.md). Not where N % 4 != 0 (the
   * transposed rows would not take vec4 loads: lm_head at V = 50257 ran 28 TFLOP/s that way) nor
   * for the f16 mirror's reads, which stay matmul_t. */
  if (variant == 0 && K > 0 && N % 4 == 0 && mm_tt() && !(wg_mirrored(c, b_) && b_.off % 8 == 0) &&
      !sg_shape_ok(c, 0, M, K, N, o16) &&
      !getenv("TEZGAH_WEBGPU_NO_FAST_MATMUL")) {
    tz_slice bt = mm_transposed(be, label, b_, N, K);
    if (bt.buf) {
      mm(be, label, 1, out, a_, bt, bias, M, K, N, acc, a16, 0, o16);
      return;
    }
  }
  /* f16 tensors take half a binding's fp32 elements' bytes: where the call runs on the
   * subgroup-matrix kernels (no fp32 copies of its f16 operands), their pieces are counted in
   * bytes (GPT-2's lm_head with f16 activations: the [16384, 50304] f16 logits, 1.65 GB, in one
   * piece instead of 10624 + 5760 rows; on the H200 the 5760-row dX ran at 201 TFLOP/s against
   * 265 for the other). TEZGAH_WEBGPU_F16_PIECES=0 (A/B): fp32 elements, as before. */
  size_t capb = wg_cap_bytes(c);
  int bytes = (a16 || o16) && wg_f16_pieces() && sg_native_ok(c, variant, M, K, N, o16, a_, out);
  /* rows of out and a (counted by bytes where `bytes`, else in fp32 elements) */
  if (variant < 2 && M > 1 && (bytes ? m * k * ae > capb || m * n * oe > capb : m * k > cap || m * n > cap)) {
    size_t mc = bytes ? piece_round(capb / (k * ae > n * oe ? k * ae : n * oe)) : piece_round(cap / (k > n ? k : n));
    if (mc == 0) mc = 1;
    if (mc < m) {
      for (size_t m0 = 0; m0 < m; m0 += mc) {
        size_t r = m - m0 < mc ? m - m0 : mc;
        mm(be, label, variant, tz_at(out, m0 * n * oe), tz_at(a_, m0 * k * ae), b_, bias, (int)r, K, N, acc, a16, b16,
           o16);
      }
      return;
    }
  }
  if (variant == 0 && n * k > cap && N > 1) { /* weight rows = output columns, staged */
    size_t nc = piece_round(cap / (k > m ? k : m));
    if (nc == 0) nc = 1;
    if (nc < n) {
      tz_slice st = wg_stage(be, F4(m * nc));
      for (size_t n0 = 0; n0 < n; n0 += nc) {
        size_t r = n - n0 < nc ? n - n0 : nc;
        mm_one(be, label, 0, st, a_, tz_f32(b_, n0 * k), tz_present(bias) ? tz_f32(bias, n0) : TZ_NONE, M, K,
               (int)r, 0, a16, 0, 0);
        if (o16) wg_copy_rows_h(c, tz_at(out, n0 * 2), n, st, r, M, (int)r, acc, 1, 0);
        else wg_copy_rows_ex(c, tz_f32(out, n0), n, st, r, M, (int)r, acc);
      }
      return;
    }
  }
  if (variant == 1 && k * n > cap && K > 1) { /* weight rows = a's columns, staged */
    size_t kc = piece_round(cap / (n > m ? n : m));
    if (kc == 0) kc = 1;
    if (kc < k) {
      /* a's column pieces staged in fp32, or f16 where a is an f16 activation (c->act_f16: dY;
       * with act16 only, mm_tt's f16 a never gets here: its weight fits) */
      TZ_ASSERT(!a16 || c->act_f16);
      tz_slice st = wg_stage(be, m * kc * ae + 4);
      for (size_t k0 = 0; k0 < k; k0 += kc) {
        size_t r = k - k0 < kc ? k - k0 : kc;
        if (a16) wg_copy_rows_h(c, st, r, tz_at(a_, k0 * 2), k, M, (int)r, 0, 1, 1);
        else wg_copy_rows_ex(c, st, r, tz_f32(a_, k0), k, M, (int)r, 0);
        mm_one(be, label, 1, out, st, tz_f32(b_, k0 * n), TZ_NONE, M, (int)r, N, acc || k0 > 0, a16, 0, o16);
      }
      return;
    }
  }
  if (variant >= 2 && (bytes ? k * m * ae > capb || k * bs * be_ > capb : k * m > cap || k * bs > cap) &&
      K > 1) { /* rows of a and b: partial sums (by bytes as above) */
    /* whole 128-row pieces: the subgroup-matrix kernel needs K % BK == 0 (GPT-2's lm_head dW,
     * [50304 x 768] over K = 16384, fell back to matmul_fast on the H200 with arbitrary pieces) */
    size_t kc = bytes ? piece_round(capb / (m * ae > bs * be_ ? m * ae : bs * be_)) : piece_round(cap / (m > bs ? m : bs));
    if (kc == 0) kc = 1;
    if (kc < k) {
      for (size_t k0 = 0; k0 < k; k0 += kc) {
        size_t r = k - k0 < kc ? k - k0 : kc;
        mm(be, label, variant, out, tz_at(a_, k0 * m * ae), tz_at(b_, k0 * bs * be_), TZ_NONE, M, (int)r, N,
           acc || k0 > 0, a16, b16, o16);
      }
      return;
    }
  }
  if (variant >= 2 && m * n > cap && M > 1) { /* out rows = a's columns, staged */
    size_t mc = piece_round(cap / (n > k ? n : k));
    if (mc == 0) mc = 1;
    if (mc < m) {
      tz_slice st = wg_stage(be, k * mc * ae + 4);
      for (size_t m0 = 0; m0 < m; m0 += mc) {
        size_t r = m - m0 < mc ? m - m0 : mc;
        if (a16) wg_copy_rows_h(c, st, r, tz_at(a_, m0 * 2), m, K, (int)r, 0, 1, 1); /* f16 dY (c->act_f16) */
        else wg_copy_rows_ex(c, st, r, tz_f32(a_, m0), m, K, (int)r, 0);
        mm_one(be, label, variant, tz_at(out, m0 * n * oe), st, b_, TZ_NONE, (int)r, K, N, acc, a16, b16, o16);
      }
      return;
    }
  }
  mm_one(be, label, variant, out, a_, b_, bias, M, K, N, acc, a16, b16, o16);
}

void wg_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M, int K,
                        int N, int acc) {
  wg_ctx *c = CTX(be);
  mm(be, "matmul_t", 0, out, a, b, bias, M, K, N, acc, c->act16, 0, c->act_f16);
}
/* Can a call of M x K x N with its f16 operand a try kernel n's epilogues (f16 activations, every
 * tensor within one binding as fp32, a on a 4-byte boundary)? sg_matmul decides the rest. */
static int epi_fits(wg_ctx *c, tz_slice a, int M, int K, int N) {
  size_t cap = wg_cap_elems(c);
  return c->act_f16 && M > 0 && N > 0 && (size_t)M * K <= cap && (size_t)M * N <= cap && (size_t)N * K <= cap &&
         !(a.off % 4);
}
/* TEZGAH_WEBGPU_SGMAT_NATIVE16=1 (tests): a call of op that does not run on kernel n's epilogue
 * (while its switch is on: `on`) fails, as mm_one's calls off the native f16 path do */
static void epi_native_check(wg_ctx *c, const char *op, int on) {
  if (c->act_f16 && c->sgmat && env_int("TEZGAH_WEBGPU_SGMAT_NATIVE16", 0) == 1 && on)
    wg_fail(c, "%s: %s (TEZGAH_WEBGPU_SGMAT_NATIVE16=1)", op, "not on kernel n's epilogue", 0, 0);
}
/* out = a·bᵀ + bias + res (backend.h's matmul_t_res): kernel n's RES epilogue where the call runs
 * on it as one dispatch with an f16 out (c->act_f16; sg_matmul says when), else matmul_t, then
 * add. TEZGAH_WEBGPU_MM_RES=0 (A/B, read at every call): always the two ops. */
void wg_matmul_t_res(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, tz_slice res, int M, int K,
                     int N) {
  wg_ctx *c = CTX(be);
  if (epi_fits(c, a, M, K, N) && env_int("TEZGAH_WEBGPU_MM_RES", 1) &&
      sg_matmul(be, 0, out, a, b, bias, M, K, N, 0, c->act16, 0, 1, res, TZ_SGMAT_EPI_RES) == 2)
    return;
  epi_native_check(c, "matmul_t_res", env_int("TEZGAH_WEBGPU_MM_RES", 1));
  wg_matmul_t(be, out, a, b, bias, M, K, N, 0);
  wg_add(be, out, out, res, (size_t)M * N);
}
/* h = x·Wᵀ + bias, out = gelu(h) (backend.h's matmul_t_gelu): kernel n's GELU epilogue where the
 * call runs on it as one dispatch (c->act_f16, sg_matmul), else matmul_t, then gelu_fwd.
 * Offered by TEZGAH_WEBGPU_GELU_EPI=fwd|both only (webgpu_rt.c says why). */
void wg_matmul_t_gelu(tz_backend *be, tz_slice out, tz_slice h, tz_slice x, tz_slice w, tz_slice bias, int M, int K,
                      int N) {
  wg_ctx *c = CTX(be);
  if (epi_fits(c, x, M, K, N) &&
      sg_matmul(be, 0, h, x, w, bias, M, K, N, 0, c->act16, 0, 1, out, TZ_SGMAT_EPI_GELU) == 2)
    return;
  epi_native_check(c, "matmul_t_gelu", 1); /* (offered only with its switch on) */
  wg_matmul_t(be, h, x, w, bias, M, K, N, 0);
  wg_gelu_fwd(be, out, h, (size_t)M * N);
}
/* dh = gelu'(h) ⊙ (dout·W), db += Σ_m dh where db is present (backend.h's matmul_dgelu): kernel
 * n's DGELU epilogue where the call runs on it as one dispatch, else matmul into dh, then
 * gelu_bwd in place; then bias_bwd over dh. dout, h, dh: f16 activations (c->act_f16). */
void wg_matmul_dgelu(tz_backend *be, tz_slice dh, tz_slice db, tz_slice dout, tz_slice w, tz_slice h, int M, int K,
                     int N) {
  wg_ctx *c = CTX(be);
  if (!(epi_fits(c, dout, M, K, N) &&
        sg_matmul(be, 1, dh, dout, w, TZ_NONE, M, K, N, 0, c->act_f16, 0, 1, h, TZ_SGMAT_EPI_DGELU) == 2)) {
    epi_native_check(c, "matmul_dgelu", 1);
    wg_matmul(be, dh, dout, w, M, K, N, 0);
    wg_gelu_bwd(be, dh, h, dh, (size_t)M * N);
  }
  if (tz_present(db)) wg_bias_bwd(be, db, dh, M, N);
}
/* dgu [M, 2N] = SwiGLU's backward of da = dout·W with gu [M, 2N] (backend.h's matmul_dswiglu):
 * kernel n's DSWIGLU epilogue where the call runs on it as one dispatch, else matmul into a
 * scratch da (wg_act32x's buffer 2), then swiglu_bwd. dout, gu, dgu: f16 activations. */
void wg_matmul_dswiglu(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice w, tz_slice gu, int M, int K, int N) {
  wg_ctx *c = CTX(be);
  if (epi_fits(c, dout, M, K, 2 * N) &&
      sg_matmul(be, 1, dgu, dout, w, TZ_NONE, M, K, N, 0, c->act_f16, 0, 1, gu, TZ_SGMAT_EPI_DSWIGLU) == 2)
    return;
  epi_native_check(c, "matmul_dswiglu", 1);
  tz_slice da = wg_act32x(be, 2, (size_t)M * N * 2 + 16);
  wg_matmul(be, da, dout, w, M, K, N, 0);
  wg_swiglu_bwd(be, dgu, da, gu, M, N);
}
/* with f16 activations (c->act_f16) out (dX) and a (dY) are f16 */
void wg_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  wg_ctx *c = CTX(be);
  mm(be, "matmul", 1, out, a, b, TZ_NONE, M, K, N, acc, c->act_f16, 0, c->act_f16);
}
/* with f16 activations a (dY) is f16 too; out (the parameter gradient) stays fp32 */
void wg_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  wg_ctx *c = CTX(be);
  mm(be, "matmul_at", 2, out, a, b, TZ_NONE, M, K, N, acc, c->act_f16, c->act16, 0);
}
/* out[M,N] (+)= a[K,M]ᵀ · b[K,N] and db[M] += Σ_k a[k, :] (backend.h's matmul_at_db): with f16
 * activations on kernel n the bias sums come from the f16 dY the weight gradient stages (DB: no
 * second read of dY, no bias_bwd dispatches); else matmul_at, then bias_bwd.
 * TEZGAH_WEBGPU_MM_DB=0 (A/B, read at every call): always the two ops. */
void wg_matmul_at_db(tz_backend *be, tz_slice out, tz_slice db, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  wg_ctx *c = CTX(be);
  if (env_int("TEZGAH_WEBGPU_MM_DB", 1) && c->act_f16 && c->sgmat && tz_present(db) && epi_fits(c, a, K, M, N) &&
      sg_matmul(be, 2, out, a, b, TZ_NONE, M, K, N, acc, 1, c->act16, 0, db, TZ_SGMAT_EPI_DB) == 2)
    return;
  epi_native_check(c, "matmul_at_db", env_int("TEZGAH_WEBGPU_MM_DB", 1) && tz_present(db));
  wg_matmul_at(be, out, a, b, M, K, N, acc);
  if (tz_present(db)) wg_bias_bwd(be, db, a, K, M);
}
/* out[M,N] (+)= a[K,M]ᵀ · (silu(gate) ⊙ up)[K,N], gu [K, 2N] = gate | up: the down
 * projection's weight gradient without swiglu_fwd's output (matmul_at_swiglu_a, backend.h) */
void wg_matmul_at_swiglu_a(tz_backend *be, tz_slice out, tz_slice a, tz_slice gu, int M, int K, int N,
                                  int acc) {
  wg_ctx *c = CTX(be); /* with f16 activations a (dY) and gu are f16 */
  mm(be, "matmul_at_swiglu", 3, out, a, gu, TZ_NONE, M, K, N, acc, c->act_f16, c->act_f16, 0);
}
