/* WebGPU backend ops: rope and attention. Forward and backward run the flash kernels
 * (attention_fa.wgsl: variants by row groups, threads, prefetch, fused dq) where the shape and
 * alignment allow, else the general kernels (attention.wgsl).
 * f16 activations (c->act_f16, be->act = TZ_F16: qkv, q, k, v, dout, dq, dk, dv in f16): rope and
 * the general kernels read and write them natively (preamble kernels: wg_run_ex's f16 binding
 * variant); the subgroup-matrix kernels natively too (webgpu_ops_attn_sg.c); the fp32 flash
 * kernels (standalone, vec4<f32>) through fp32 copies: q, k, v and dout converted into fp32
 * buffers (wg_act32x), dq, dk, dv computed into one and converted back (attn16_map). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"

/* ---- rope ---- */
void wg_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head, int head_dim,
                    int pos0, float theta, int dir) {
  wg_ctx *c = CTX(be);
  size_t N = (size_t)B * T, stride = (size_t)(n_head + 2 * n_kv_head) * head_dim;
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = T, w[10] = n_head + n_kv_head, w[11] = head_dim, w[12] = (uint32_t)stride,
  w[13] = pos0, w[14] = fbits(theta), w[15] = fbits(dir < 0 ? -1.0f : 1.0f);
  wg_arg a[] = {wg_aa(c, qkv, N * stride, "qkv")}; /* (f16 activations: rope.wgsl's f16 variant) */
  uint32_t gx, gy;
  /* f16 activations: rope_v16 (8-byte accesses, a thread per row and four dims across the heads)
   * where head_dim and qkv allow (wg_v16_ok) */
  size_t offs[] = {qkv.off};
  if (wg_v16_ok(c, (size_t)head_dim, offs, 1)) {
    grid1(N * (head_dim / 4), &gx, &gy);
    wg_run(c, "rope", wg_pipeline(c, "rope", "rope_v16", wg_v16_prefix(0)), w, 16, a, 1, gx, gy, 1);
    return;
  }
  grid1(N * (n_head + n_kv_head) * (head_dim / 2), &gx, &gy);
  wg_run(c, "rope", wg_pipeline(c, "rope", "rope", ""), w, 16, a, 1, gx, gy, 1);
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
    wg_fail(c, "%s%s", op, m, 0, 0);
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
  int ns = wg_bind_slots(c, a, nargs, sl, sb, lo, hi);
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
    if (f && !strcmp(f, "fast")) wg_fail(c, "%s%s", op, ": TEZGAH_WEBGPU_ATTN=fast but a tensor is not 16-byte aligned", 0, 0);
    return 0;
  }
  for (int i = 0; i < nargs; i++)
    if (a[i].s.buf) a[i].bytes = (a[i].s.off + a[i].bytes + 15) / 16 * 16 - a[i].s.off;
  return 1;
}

/* h16: out, q, k, v are f16 (c->act_f16): the general kernel on them, natively (its f16 binding
 * variant); the caller decided against the flash kernels */
static void attn_fwd32(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v,
                             int B, int Tq, int Tk, int q_pos0, int n_head, int n_kv_head, int head_dim,
                             int q_stride, int kv_stride, int h16) {
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
  if (h16) {
    size_t nkv = ((size_t)B * Tk - 1) * kv_stride + (size_t)n_kv_head * head_dim;
    a[0] = AH(out, (size_t)B * Tq * C, "att out"), a[2] = AH(q, ((size_t)B * Tq - 1) * q_stride + C, "q"),
    a[3] = AH(k, nkv, "k"), a[4] = AH(v, nkv, "v");
  }
  /* vec4 access: out, q, k, v; lse is read as scalars */
  attn_cfg f = attn_config(c, head_dim, ATTN_FWD);
  if (!h16 && attn_fast(c, "attention_fwd", Tq, Tk, q_pos0, head_dim) && f.rg &&
      attn_vec4(c, "attention_fwd", a, 5, 0x1d, q_stride, kv_stride)) {
    char fp[1280];
    uint32_t g[3];
    attn_prefix(c, fp, sizeof fp, f, a, 5, 0x3);
    attn_grid(f, Tq, n_head, B, w, g);
    c->pending_flop = attn_flop(2, B, n_head, Tq, head_dim);
    wg_run(c, "attention_fwd", wg_pipeline(c, "attention_fa", "fa_fwd", fp), w, 19, a, 5, g[0], g[1], g[2]);
    c->pending_flop = 0;
  } else
    wg_run(c, "attention_fwd", wg_pipeline(c, "attention", "attn_fwd", pre), w, 17, a, 5, (Tq + 63) / 64, n_head, B);
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
 * (maxStorageBufferBindingSize, with D) and 4/5 of maxBufferSize (wg_scratch() allocates 5/4 of
 * a request). Returns the sequences per chunk, 0 if not even one fits (the two-kernel path
 * runs); *rows: the part rows per (sequence, head). */
static int attn_fq_chunk(wg_ctx *c, attn_cfg fk, int B, int T, int n_head, size_t dbytes, size_t *rows) {
  size_t R = (size_t)attn_rows(fk), nkb = ((size_t)T + R - 1) / R;
  *rows = nkb * (size_t)T - R * (nkb * (nkb - 1) / 2);
  size_t per = (size_t)n_head * *rows * (size_t)fk.hd * 4;
  size_t cap = (size_t)env_int("TEZGAH_WEBGPU_ATTN_DQ_KB", 256 * 1024) * 1024, lim = wg_cap_bytes(c);
  if ((size_t)(c->lim.maxBufferSize / 5 * 4) < lim) lim = (size_t)(c->lim.maxBufferSize / 5 * 4);
  lim = lim > dbytes ? lim - dbytes : 0;
  if (cap > lim) cap = lim;
  size_t n = cap / per;
  return n < (size_t)B ? (int)n : B;
}

/* h16: dq, dk, dv, dout, q, k, v, out are f16 (c->act_f16): the general kernels on them, natively
 * (their f16 binding variants); the caller decided against the flash kernels */
static void attn_bwd32(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q,
                             tz_slice k, tz_slice v, tz_slice out, tz_slice lse, int B, int T, int n_head,
                             int n_kv_head, int head_dim, int q_stride, int kv_stride, int h16) {
  wg_ctx *c = CTX(be);
  char pre[48];
  hd_prefix(pre, sizeof pre, head_dim);
  size_t C = (size_t)n_head * head_dim, rows_total = (size_t)B * n_head * T;
  if (h16) {
    size_t nq = ((size_t)B * T - 1) * q_stride + C, no = (size_t)B * T * C;
    size_t nk = ((size_t)B * T - 1) * kv_stride + (size_t)n_kv_head * head_dim;
    tz_slice D = wg_scratch(be, (F4(rows_total) + 15) / 16 * 16);
    uint32_t w[24] = {0}, gx, gy;
    w[8] = T, w[9] = T, w[10] = 0, w[11] = n_head, w[12] = n_kv_head, w[13] = q_stride, w[14] = kv_stride,
    w[15] = 1, w[16] = fbits(1.0f / sqrtf((float)head_dim)), w[17] = B;
    wg_arg a0[] = {A(D, F4(rows_total), "D"), AH(dout, no, "dout"), AH(out, no, "out")};
    grid1(rows_total, &gx, &gy);
    wg_run(c, "attention_bwd_d", wg_pipeline(c, "attention", "attn_bwd_d", pre), w, 18, a0, 3, gx, gy, 1);
    wg_arg a1[] = {AH(dq, nq, "dq"), AH(q, nq, "q"), AH(k, nk, "k"), AH(v, nk, "v"), AH(dout, no, "dout"),
                   A(lse, F4(rows_total), "lse"), A(D, F4(rows_total), "D")};
    wg_run(c, "attention_bwd_dq", wg_pipeline(c, "attention", "attn_bwd_dq", pre), w, 18, a1, 7, (T + 63) / 64, n_head, B);
    wg_arg a2[] = {AH(dk, nk, "dk"), AH(dv, nk, "dv"), AH(q, nq, "q"), AH(k, nk, "k"), AH(v, nk, "v"),
                   AH(dout, no, "dout"), A(lse, F4(rows_total), "lse"), A(D, F4(rows_total), "D")};
    wg_run(c, "attention_bwd_dkdv", wg_pipeline(c, "attention", "attn_bwd_dkdv", pre), w, 18, a2, 8, (T + 63) / 64,
           n_kv_head, B);
    return;
  }
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
      wg_fail(c, "%s%s", "attention_bwd",
           ": TEZGAH_WEBGPU_ATTN=fast and TEZGAH_WEBGPU_ATTN_FUSED_DQ=1 but one sequence's dq partial sums exceed "
           "TEZGAH_WEBGPU_ATTN_DQ_KB or the adapter's binding / buffer limits",
           0, 0);
  }
  size_t pbytes = (size_t)bc * n_head * prows * head_dim * 4;
  tz_slice D = wg_scratch(be, dbytes + pbytes);
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
    wg_run(c, "attention_bwd_d", wg_pipeline(c, "attention_fa", "fa_d", fp), w, 18, ad, 3, gx, gy, 1);
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
      wg_run(c, "attention_bwd_dkdv", wg_pipeline(c, "attention_fa", "fa_dkdv", fp), w, 22, a2, 8, g[0], g[1], g[2]);
      c->pending_flop = 0;
      grid1((size_t)nb * n_head * T * (head_dim / 4), &gx, &gy);
      wg_run(c, "attention_bwd_dq", wg_pipeline(c, "attention_fa", "fa_dq_sum", fs), w, 22, as, 2, gx, gy, 1);
    }
    return;
  }
  if (!fa || !fq.fd) { /* D = rowsum(dout ∘ out) in its own pass */
    wg_arg a0[] = {A(D, F4(rows_total), "D"), A(dout, oext, "dout"), A(out, oext, "out")};
    uint32_t gx, gy;
    grid1(rows_total, &gx, &gy);
    wg_run(c, "attention_bwd_d", wg_pipeline(c, "attention", "attn_bwd_d", pre), w, 18, a0, 3, gx, gy, 1);
  }
  if (fa) {
    char fp[1280];
    uint32_t g[3];
    if (!fq.fd) f1[7] = A(TZ_NONE, 0, "out");
    attn_prefix(c, fp, sizeof fp, fq, f1, 8, fq.fd ? 0x3 : 0x1);
    attn_grid(fq, T, n_head, B, w, g);
    c->pending_flop = attn_flop(3, B, n_head, T, head_dim);
    wg_run(c, "attention_bwd_dq", wg_pipeline(c, "attention_fa", "fa_dq", fp), w, 19, f1, 8, g[0], g[1], g[2]);
    attn_prefix(c, fp, sizeof fp, fk, a2, 8, 0x3);
    attn_grid(fk, T, n_kv_head, B, w, g);
    c->pending_flop = attn_flop(4, B, n_head, T, head_dim);
    wg_run(c, "attention_bwd_dkdv", wg_pipeline(c, "attention_fa", "fa_dkdv", fp), w, 19, a2, 8, g[0], g[1], g[2]);
    c->pending_flop = 0;
    return;
  }
  wg_arg a1[] = {A(dq, qext, "dq"), A(q, qext, "q"), A(k, kext, "k"), A(v, kext, "v"), A(dout, oext, "dout"),
                 A(lse, F4(rows_total), "lse"), A(D, F4(rows_total), "D")};
  wg_run(c, "attention_bwd_dq", wg_pipeline(c, "attention", "attn_bwd_dq", pre), w, 18, a1, 7, (T + 63) / 64, n_head, B);
  wg_run(c, "attention_bwd_dkdv", wg_pipeline(c, "attention", "attn_bwd_dkdv", pre), w, 18, a2, 8, (T + 63) / 64,
      n_kv_head, B);
}

/* fp32 copies of f16 activation tensors for the fp32 flash kernels (c->act_f16): tensors in one
 * buffer form a group whose span (from the first one's offset, rounded down to 4 bytes, to the
 * last one's end) is converted as one piece into a region of wg_act32x's buffer `slot`, so the
 * fused qkv (or dqkv) of q, k, v is converted once, not three times; each tensor's fp32 slice
 * keeps its place in the span (offset ·2; element strides unchanged). */
typedef struct {
  int ng;
  tz_slice h[3], f[3]; /* per group: the f16 span's start and its fp32 copy */
  size_t n[3];         /* per group: the span's elements */
} attn16_map;
/* s[0..k) (k ≤ 3; n[i] elements each) replaced by their fp32 copies, converted now */
static void attn16_to32(tz_backend *be, attn16_map *m, int slot, tz_slice *s, const size_t *n, int k,
                        const char *label) {
  wg_ctx *c = CTX(be);
  int grp[3];
  size_t hi[3];
  m->ng = 0;
  for (int i = 0; i < k; i++) {
    int g = 0;
    while (g < m->ng && m->h[g].buf != s[i].buf) g++;
    size_t lo = s[i].off / 4 * 4, e = s[i].off + 2 * n[i];
    if (g == m->ng) m->h[g] = (tz_slice){s[i].buf, lo}, hi[g] = e, m->ng++;
    if (lo < m->h[g].off) m->h[g].off = lo;
    if (e > hi[g]) hi[g] = e;
    grp[i] = g;
  }
  size_t r[3], at = 0;
  for (int g = 0; g < m->ng; g++) {
    m->n[g] = (hi[g] - m->h[g].off + 1) / 2;
    r[g] = at, at += (F4(m->n[g]) + 255) / 256 * 256;
  }
  tz_slice base = wg_act32x(be, slot, at);
  for (int g = 0; g < m->ng; g++) {
    m->f[g] = tz_at(base, r[g]);
    wg_to_f32(c, label, m->f[g], m->h[g], m->n[g]);
  }
  for (int i = 0; i < k; i++) s[i] = tz_at(m->f[grp[i]], 2 * (s[i].off - m->h[grp[i]].off));
}
/* the fp32 copies back into their f16 tensors (gradients: beyond f16's range ±inf, for the loss
 * scaler, wg_to_f16_inf): the whole spans, so the halves between and around the tensors (gaps,
 * the alignment's; the caller loaded them first) go through fp32 and back unchanged (in the
 * model's fused dqkv there are none: q, k, v's gradients cover it) */
static void attn16_to16(wg_ctx *c, const attn16_map *m, const char *label) {
  for (int g = 0; g < m->ng; g++) wg_to_f16_inf(c, label, m->h[g], m->f[g], m->n[g]);
}

/* With f16 activations (c->act_f16): the flash kernels' alignment (attn_vec4) on the fp32 copies
 * attn16_to32 makes, whose offsets are 16-byte aligned where the f16 tensors are 8-byte
 * aligned: every f16 tensor 8-byte aligned, the row strides multiples of 4. Else 0 (the general
 * kernels run natively), an error under TEZGAH_WEBGPU_ATTN=fast. */
static int attn16_flash(wg_ctx *c, const char *op, const tz_slice *s, int n, int q_stride, int kv_stride) {
  int ok = q_stride % 4 == 0 && kv_stride % 4 == 0;
  for (int i = 0; i < n; i++)
    if (s[i].buf && s[i].off % 8) ok = 0;
  const char *f = getenv("TEZGAH_WEBGPU_ATTN");
  if (!ok && f && !strcmp(f, "fast"))
    wg_fail(c, "%s%s", op, ": TEZGAH_WEBGPU_ATTN=fast but an f16 tensor is not 8-byte aligned", 0, 0);
  return ok;
}

/* The subgroup-matrix kernels (webgpu_ops_attn_sg.c) take the training form where the adapter
 * allows; they read and write the f16 attention output themselves. The attention output is a
 * matmul input (backend.h "mmin"): with f16 activations (c->act16) the fp32 kernels write it to the backend's fp32 buffer (wg_act32)
 * and one pass converts it to f16 (profile row "to_f16 (attn out)"); the backward, which
 * reads it for D = rowsum(dout ∘ out), gets an fp32 copy of the f16 values ("to_f32 (attn
 * out)"). An f16-output flash kernel would drop both passes (not done yet). */
void wg_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v, int B, int Tq,
                      int Tk, int q_pos0, int n_head, int n_kv_head, int head_dim, int q_stride, int kv_stride) {
  wg_ctx *c = CTX(be);
  if (wg_attn_sg_fwd(be, out, lse, q, k, v, B, Tq, Tk, q_pos0, n_head, n_kv_head, head_dim, q_stride, kv_stride)) return;
  if (!c->act16) {
    attn_fwd32(be, out, lse, q, k, v, B, Tq, Tk, q_pos0, n_head, n_kv_head, head_dim, q_stride, kv_stride, 0);
    return;
  }
  size_t n = (size_t)B * Tq * n_head * head_dim;
  if (c->act_f16) { /* f16 q, k, v (and out): natively unless the fp32 flash kernels take it */
    attn_cfg f = attn_config(c, head_dim, ATTN_FWD);
    tz_slice in[3] = {q, k, v};
    size_t C = (size_t)n_head * head_dim, nkv = ((size_t)B * Tk - 1) * kv_stride + (size_t)n_kv_head * head_dim;
    size_t ne[3] = {((size_t)B * Tq - 1) * q_stride + C, nkv, nkv};
    if (!(attn_fast(c, "attention_fwd", Tq, Tk, q_pos0, head_dim) && f.rg &&
          attn16_flash(c, "attention_fwd", in, 3, q_stride, kv_stride))) {
      attn_fwd32(be, out, lse, q, k, v, B, Tq, Tk, q_pos0, n_head, n_kv_head, head_dim, q_stride, kv_stride, 1);
      return;
    }
    attn16_map m;
    attn16_to32(be, &m, 0, in, ne, 3, "to_f32 (attn q, k, v)");
    q = in[0], k = in[1], v = in[2];
  }
  tz_slice o32 = wg_act32(be, n);
  attn_fwd32(be, o32, lse, q, k, v, B, Tq, Tk, q_pos0, n_head, n_kv_head, head_dim, q_stride, kv_stride, 0);
  wg_to_f16(c, "to_f16 (attn out)", out, o32, n);
}
void wg_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q, tz_slice k,
                      tz_slice v, tz_slice out, tz_slice lse, int B, int T, int n_head, int n_kv_head, int head_dim,
                      int q_stride, int kv_stride) {
  wg_ctx *c = CTX(be);
  if (wg_attn_sg_bwd(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, n_head, n_kv_head, head_dim, q_stride, kv_stride))
    return;
  attn16_map mo; /* f16 activations: dq, dk, dv's fp32 copies (the flash kernels) */
  int a16 = 0;
  if (c->act_f16) { /* f16 dq, dk, dv, dout, q, k, v (and out): natively unless the fp32 flash kernels take it */
    attn_cfg fq = attn_config(c, head_dim, ATTN_DQ), fk = attn_config(c, head_dim, ATTN_DKDV);
    size_t C = (size_t)n_head * head_dim, nq = ((size_t)B * T - 1) * q_stride + C;
    size_t nkv = ((size_t)B * T - 1) * kv_stride + (size_t)n_kv_head * head_dim, no = (size_t)B * T * C;
    tz_slice in[3] = {q, k, v}, gr[3] = {dq, dk, dv}, all[7] = {q, k, v, dq, dk, dv, dout};
    size_t ne[3] = {nq, nkv, nkv};
    if (!(attn_fast(c, "attention_bwd", T, T, 0, head_dim) && fq.rg && fk.rg &&
          attn16_flash(c, "attention_bwd", all, 7, q_stride, kv_stride))) {
      attn_bwd32(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, n_head, n_kv_head, head_dim, q_stride, kv_stride, 1);
      return;
    }
    attn16_map mi, md;
    attn16_to32(be, &mi, 0, in, ne, 3, "to_f32 (attn q, k, v)");
    attn16_to32(be, &md, 1, &dout, &no, 1, "to_f32 (attn dout)");
    /* (loaded too: the write-back covers the span from dq to the end of dv, gaps included) */
    attn16_to32(be, &mo, 2, gr, ne, 3, "to_f32 (attn dq, dk, dv)");
    q = in[0], k = in[1], v = in[2], dq = gr[0], dk = gr[1], dv = gr[2];
    a16 = 1;
  }
  if (c->act16) {
    size_t n = (size_t)B * T * n_head * head_dim;
    tz_slice o32 = wg_act32(be, n);
    wg_to_f32(c, "to_f32 (attn out)", o32, out, n);
    out = o32;
  }
  attn_bwd32(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, n_head, n_kv_head, head_dim, q_stride, kv_stride, 0);
  if (a16) attn16_to16(c, &mo, "to_f16 (attn dq, dk, dv)");
}
