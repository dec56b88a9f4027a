/* WebGPU backend ops: elementwise add, partial column sums (bias gradient, the norms' weight
 * gradients), the sum of squares (gradient norm), rmsnorm and layernorm forward / backward,
 * and the activations (GELU, SwiGLU) forward / backward. Each splits work above one binding
 * (wg_cap_elems) into pieces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"

/* TEZGAH_WEBGPU_ELEM8: gelu_fwd with eight elements per thread (gelu_fwd8; =0: gelu_fwd4). Elements
 * per thread of gelu_fwd: 8, 4, or 1 (TEZGAH_WEBGPU_MEMOPS=0). Read once. (add stays at add4: add8
 * measured slower on the H200, 1.49 against 1.39 ms per GPT-2 124M B16 T1024 step, issue 22.) */
static int gelu_per_thread(void) {
  static int e8 = -1;
  if (e8 < 0) e8 = env_int("TEZGAH_WEBGPU_ELEM8", 1) != 0;
  return !wg_memops_new() ? 1 : e8 ? 8 : 4;
}

/* With f16 activations add_v16 (16 elements per thread in 8-byte accesses) where each piece's
 * tensors allow it (wg_v16_ok), else add4's per-element f16 variant. */
void wg_add(tz_backend *be, tz_slice out, tz_slice a_, tz_slice b_, size_t n) {
  wg_ctx *c = CTX(be);
  int e4 = wg_memops_new(); /* add4: four elements per thread */
  int pi = wg_pipeline(c, "elementwise", e4 ? "add4" : "add", "");
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {wg_aa(c, wg_act_at(c, out, i), k, "out"), wg_aa(c, wg_act_at(c, a_, i), k, "a"),
                  wg_aa(c, wg_act_at(c, b_, i), k, "b")};
    size_t offs[] = {a[0].s.off, a[1].s.off, a[2].s.off};
    uint32_t gx, gy;
    if (wg_v16_ok(c, k, offs, 3)) {
      grid1((k + 15) / 16, &gx, &gy);
      wg_run(c, "add", wg_pipeline(c, "elementwise", "add_v16", wg_v16_prefix(0)), w, 9, a, 3, gx, gy, 1);
      continue;
    }
    grid1(e4 ? (k + 3) / 4 : k, &gx, &gy);
    wg_run(c, "add", pi, w, 9, a, 3, gx, gy, 1);
  }
}

/* TEZGAH_WEBGPU_MEMOPS=0: the memory-bound ops' former kernels, for a before/after in one binary
 * (add, gelu_fwd, ffn_gelu_backward: one element per thread; layernorm_fwd / _bwd: loops that
 * re-read the row; colsum_rows, one dispatch per layernorm parameter; the three-pass
 * crossentropy). Unset or any other value: the current ones (add4, gelu_fwd4,
 * ffn_gelu_backward4: four per thread; layernorm_fwd4 / _bwd4: the row in registers for
 * C <= 1024; colsum_rows8 and one dispatch for layernorm's dw and db; softmax_xent_online).
 * colsum_partial's and layernorm_dwdb_partial's several running sums have no switch. Read once. */
int wg_memops_new(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("TEZGAH_WEBGPU_MEMOPS");
    on = !(e && strcmp(e, "0") == 0);
  }
  return on;
}

/* Column sums of partials, added to parameter gradients (fp32):
 * dst[c] += Σ_k part[k*stride + c] for c < cols0, and, when dst2 is given (cols1 > 0),
 * dst2[c] += Σ_k part[k*stride + cols0 + c] for c < cols1; k < rows. One dispatch
 * (colsum_rows8: 8 columns per workgroup), or with TEZGAH_WEBGPU_MEMOPS=0 one colsum_rows
 * dispatch (16 columns per workgroup) per destination. */
static void colsum2(wg_ctx *c, tz_slice dst, int cols0, tz_slice dst2, int cols1, tz_slice part, int rows,
                    int stride) {
  if (!wg_memops_new()) {
    for (int d = 0; d < (cols1 > 0 ? 2 : 1); d++) {
      int cols = d ? cols1 : cols0;
      uint32_t w[24] = {0};
      w[8] = rows, w[9] = cols, w[10] = 0, w[11] = stride;
      wg_arg a[] = {A(d ? dst2 : dst, F4(cols), "param grad"),
                    A(d ? tz_f32(part, cols0) : part, F4((size_t)rows * stride - (d ? cols0 : 0)), "partials")};
      wg_run(c, "colsum_add", wg_pipeline(c, "elementwise", "colsum_rows", ""), w, 12, a, 2, (cols + 15) / 16, 1, 1);
    }
    return;
  }
  int cols = cols0 + (cols1 > 0 ? cols1 : 0);
  uint32_t w[24] = {0};
  w[8] = rows, w[9] = cols, w[10] = 0, w[11] = stride, w[12] = cols1 > 0 ? cols0 : 0;
  wg_arg a[] = {A(dst, F4(cols0), "param grad"), A(part, F4((size_t)rows * stride), "partials"),
                A(cols1 > 0 ? dst2 : dst, F4(cols1 > 0 ? cols1 : cols0), "param grad 2")};
  wg_run(c, "colsum_add", wg_pipeline(c, "elementwise", "colsum_rows8", ""), w, 13, a, cols1 > 0 ? 3 : 2,
         (cols + 7) / 8, 1, 1);
}

/* dst[c] += Σ_k part[k*stride + c], c < cols, k < rows */
void wg_colsum_add(wg_ctx *c, tz_slice dst, tz_slice part, int rows, int cols, int stride) {
  colsum2(c, dst, cols, dst, 0, part, rows, stride);
}

/* TEZGAH_WEBGPU_COLSUM: the column-sum kernels with 16-byte accesses (colsum_f16.wgsl): the bias
 * gradient's partial sums from f16 dY (colsum_partial_f16x8, 128 rows per partial row) and the
 * subgroup-matrix split-K reduction (colsum_add_v4, wg_colsum_add_v4); =0: colsum_partial_f16
 * (32 rows per partial row) and elementwise.wgsl's colsum_add, an A/B switch in one binary
 * (issue 22). Read at each call (a getenv per bias gradient or split-K sum: negligible), so that
 * a test can switch it. */
int wg_colsum_new(void) { return env_int("TEZGAH_WEBGPU_COLSUM", 1) != 0; }

/* dst[i] (+)= Σ_{k < rows} part[k*stride + i], i < cols (fp32 dst and part; overwrite: dst =
 * the sum), in one colsum_add_v4 dispatch labelled label: the same sums, in the same order, as
 * elementwise.wgsl's colsum_add, in 16-byte accesses. Returns 0 and dispatches nothing where it
 * does not apply (TEZGAH_WEBGPU_COLSUM=0, cols or stride not a multiple of 4, dst or part not on
 * 16 bytes, more than 65535 workgroups, dst and part in one binding): the caller then runs
 * colsum_add. */
int wg_colsum_add_v4(wg_ctx *c, const char *label, tz_slice dst, tz_slice part, int rows, size_t cols, size_t stride,
                     int overwrite) {
  if (!wg_colsum_new() || cols % 4 || stride % 4 || dst.off % 16 || part.off % 16 || rows <= 0 ||
      (cols + 1023) / 1024 > 65535 || stride > UINT32_MAX || cols > UINT32_MAX)
    return 0;
  size_t pn = ((size_t)rows - 1) * stride + cols;
  wg_arg a[] = {A(dst, F4(cols), "out"), A(part, F4(pn), "split-K partials")};
  if (!wg_own_bindings(c, a, 2)) return 0;
  uint32_t w[24] = {0};
  w[8] = (uint32_t)rows, w[9] = (uint32_t)cols, w[10] = overwrite ? 1 : 0, w[11] = (uint32_t)stride;
  wg_run(c, label, wg_pipeline(c, "colsum_f16", "colsum_add_v4", ""), w, 12, a, 2, (uint32_t)((cols + 1023) / 1024), 1,
         1);
  return 1;
}

#define CHUNK 32    /* rows per partial column sum */
#define CHUNK8 128  /* rows per partial column sum of colsum_partial_f16x8 */

/* db [N] += Σ_r dout[r, :] over M rows: partial column sums over CHUNK rows, then their sum.
 * Where dout's f16 copy is still valid (the backward's dY: its producer wrote the copy for the
 * subgroup-matrix dX and dW, which ran just before; wg_sg_copy16) and N is even, the partial
 * sums read the copy (colsum_f16.wgsl: half the bytes; dout rounded to f16 as the matmuls use
 * it, f32 sums) and the copy stays valid; TEZGAH_WEBGPU_BIAS16=0: always the fp32 tensor.
 * From f16 with N a multiple of 8 and the f16 matrix on 16 bytes: colsum_partial_f16x8 (16-byte
 * loads, CHUNK8 rows per partial row: a quarter of the partials for colsum_rows8 to add;
 * TEZGAH_WEBGPU_COLSUM=0: colsum_partial_f16). */
void wg_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  size_t mn = (size_t)M * N;
  /* with f16 activations dout itself is the f16 matrix colsum_f16 reads */
  tz_slice h = c->act_f16 ? (N % 2 == 0 && dout.off % 4 == 0 ? dout : TZ_NONE)
               : N % 2 == 0 && env_int("TEZGAH_WEBGPU_BIAS16", 1) ? wg_sg_copy16(c, 0, dout, mn) : TZ_NONE;
  int x8 = h.buf && wg_colsum_new() && N % 8 == 0 && h.off % 16 == 0;
  int chunk = x8 ? CHUNK8 : CHUNK, nch = (M + chunk - 1) / chunk;
  tz_slice part = wg_scratch(be, F4((size_t)nch * N));
  uint32_t w[24] = {0};
  w[8] = M, w[9] = N, w[10] = chunk, w[11] = N;
  if (h.buf) {
    wg_arg a[] = {A(part, F4((size_t)nch * N), "partials"), A(h, mn * 2, "dout (f16 copy)")};
    if (x8 && !wg_own_bindings(c, a, 2)) { /* not expected (scratch and dY): the scalar kernel's chunks */
      x8 = 0, chunk = CHUNK, nch = (M + chunk - 1) / chunk, w[10] = chunk;
      part = wg_scratch(be, F4((size_t)nch * N)), a[0] = A(part, F4((size_t)nch * N), "partials");
    }
    if (x8)
      wg_run(c, "bias_bwd", wg_pipeline(c, "colsum_f16", "colsum_partial_f16x8", ""), w, 12, a, 2, (N + 255) / 256,
             nch, 1);
    else
      wg_run(c, "bias_bwd", wg_pipeline(c, "colsum_f16", "colsum_partial_f16", ""), w, 12, a, 2, (N / 2 + 255) / 256,
             nch, 1);
  } else {
    wg_arg a[] = {A(part, F4((size_t)nch * N), "partials"), wg_aa(c, dout, mn, "dout")};
    wg_run(c, "bias_bwd", wg_pipeline(c, "elementwise", "colsum_partial", ""), w, 12, a, 2, (N + 255) / 256, nch, 1);
  }
  wg_colsum_add(c, db, part, nch, N, N);
  if (h.buf && !c->act_f16) c->sg_serial[0] = c->serial; /* the passes wrote scratch and db only */
}

void wg_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n) {
  wg_ctx *c = CTX(be);
  uint32_t nparts = 1024;
  size_t cap = wg_cap_elems(c), npieces = n ? (n + cap - 1) / cap : 1;
  tz_slice part = wg_scratch(be, F4(nparts * npieces));
  int pi = wg_pipeline(c, "elementwise", "sum_sq_partial", "");
  for (size_t p = 0; p < npieces; p++) { /* 1024 partials per piece of x */
    size_t i = p * cap, k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k, w[9] = nparts;
    wg_arg a[] = {A(tz_f32(part, p * nparts), F4(nparts), "partials"), A(tz_f32(x, i), F4(k), "x")};
    wg_run(c, "sum_sq", pi, w, 10, a, 2, nparts, 1, 1);
  }
  uint32_t w[24] = {0};
  w[8] = (uint32_t)(nparts * npieces);
  wg_arg b[] = {A(out, 4, "out"), A(part, F4(nparts * npieces), "partials")};
  wg_run(c, "sum_sq", wg_pipeline(c, "elementwise", "sum_final", ""), w, 10, b, 2, 1, 1, 1);
}

/* The output argument of a kernel that writes a matmul input (backend.h "mmin": the norms'
 * forward, gelu_fwd, swiglu_fwd): fp32 as argument 0, or with f16 activations (c->act16) a
 * 16-byte placeholder as argument 0 and the f16 tensor `out` [n] as binding 9 (*h; the
 * kernel's st16, wg_out16_prefix). */
static wg_arg out_arg(wg_ctx *c, tz_slice out, size_t n, wg_arg *h) {
  if (!c->act16) return A(out, F4(n), "out");
  TZ_ASSERT(out.off % 4 == 0);
  *h = A(out, (n * 2 + 3) & ~(size_t)3, "out (f16)");
  tz_slice ph = {c->dummy[0], 0};
  return A(ph, 16, "out placeholder (f16 out at binding 9)");
}

/* ---- norms ---- */
static int ln_sg(wg_ctx *c);
#define RN_SG_ROWS 8 /* rmsnorm_sg.wgsl's RN_ROWS */

/* The f16 norms with 16-byte accesses and the row in registers (layernorm_v8.wgsl,
 * rmsnorm_v8.wgsl, common/norm_rows.wgsl; issue 22). TEZGAH_WEBGPU_NORM_V8 (default 1; read at
 * each call): the forward and backward row passes of both norms run there where nv8_nk
 * allows; =0: the kernels before (rmsnorm_sg / layernorm_sg's 8-byte v16 forms, ...).
 * TEZGAH_WEBGPU_NORM_FUSE (default 1, read at each call): the v8 backward also sums the weight
 * gradients' terms (dw, db) over each workgroup's NV8_FUSE_ROWS rows into one partial row of
 * scratch, which colsum_rows8 adds into dw / db (one small pass instead of a second read of dout
 * and inp); =0: the v8 row pass alone and the separate partials kernel (*_dw_partial_v16 /
 * layernorm_dwdb_partial_v16) as before. TEZGAH_WEBGPU_NORM_ROWS: the fused backward's rows a
 * workgroup (default NV8_FUSE_ROWS, 64: N / 64 partial rows, 1.5 MB at GPT-2's B16 T1024 C 768
 * for layernorm; more rows: fewer partials, fewer workgroups. H200, 2026-12-04 19:16 UTC, GPT-2
 * 124M f16 profile, layernorm_bwd + colsum_add ms/step: 16 rows 1.418 + 0.316, 32 1.251 + 0.253,
 * 64 1.168 + 0.246, 128 1.452 + 0.237; 19:30, 1.258 at 32 against 1.170 at 64). The forward and the unfused backward take NV8_ROWS rows a workgroup (one a
 * subgroup at 32 lanes, as layernorm_sg). */
#define NV8_ROWS 8
#define NV8_FUSE_ROWS 64
static long nv8_calls[3]; /* forwards, backwards, backwards with the fused weight gradients */
long tz_webgpu_norm_v8_calls(int which) { return which >= 0 && which < 3 ? nv8_calls[which] : 0; }

/* Groups of eight columns a lane holds (NK, 1..4) where the v8 kernels apply, else 0: f16
 * activations with the vector kernels on (wg_v16_on: TEZGAH_WEBGPU_ACT16_VEC), subgroups (ln_sg:
 * TEZGAH_WEBGPU_LN_SG), TEZGAH_WEBGPU_NORM_V8 != 0, C a multiple of 8, the n tensors' byte
 * offsets offs[] (f16 activations, w, b) multiples of 16 and the storage offset alignment too
 * (their 16-byte vectors), and C / 8 <= 4 lanes' worth at the adapter's smallest subgroup size
 * (subgroupMinSize: the kernels hold NK groups a lane and must cover the row at any size the
 * adapter runs; C <= 1024 at 32 lanes, C <= 128 on lavapipe's 4). */
static int nv8_nk(wg_ctx *c, int C, const size_t *offs, int n) {
  if (!env_int("TEZGAH_WEBGPU_NORM_V8", 1) || !wg_v16_on(c) || !ln_sg(c) || C <= 0 || C % 8 ||
      c->lim.minStorageBufferOffsetAlignment % 16)
    return 0;
  for (int i = 0; i < n; i++)
    if (offs[i] % 16) return 0;
  uint32_t ns = c->info.subgroupMinSize;
  if (!ns || 256 % ns) return 0;
  uint32_t nk = ((uint32_t)C / 8 + ns - 1) / ns;
  return nk <= 4 ? (int)nk : 0;
}

/* Whether an argument outside the written mask wm shares a buffer with a written one (Dawn
 * rejects a buffer bound read-only and writable in one dispatch: the standalone module's
 * read-only bindings then become read_write, "// rw" in module()). */
static int ro_clash(const wg_arg *a, int n, unsigned wm) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n && !((wm >> i) & 1); j++)
      if (((wm >> j) & 1) && a[i].s.buf == a[j].s.buf) return 1;
  return 0;
}

/* One v8 dispatch (entry of layernorm_v8 / rmsnorm_v8) labelled label over N rows of C, R rows a
 * workgroup, NK nk, fuse: the backward's partials (args a[0..na), written mask wm). Returns 0 and
 * dispatches nothing where an argument would share a binding (the standalone module's bindings
 * are fixed): the caller then runs the kernels before. */
static int nv8_run(wg_ctx *c, const char *label, const char *file, const char *entry, int nk, int fuse,
                   const wg_arg *a, int na, unsigned wm, int N, int C, float eps, int R) {
  if (!wg_own_bindings(c, a, na)) return 0;
  char prefix[160];
  snprintf(prefix, sizeof prefix, "//defs NK=%d\nconst NK: u32 = %du;\nconst DWDB = %s;\nconst DW = %s;\n%s", nk, nk,
           fuse ? "true" : "false", fuse ? "true" : "false", ro_clash(a, na, wm) ? "// rw\n" : "");
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = (uint32_t)C, w[10] = fbits(eps), w[11] = (uint32_t)R;
  uint32_t gx, gy;
  gridn(((size_t)N + R - 1) / R, &gx, &gy);
  wg_run(c, label, wg_pipeline(c, file, entry, prefix), w, 12, a, na, gx, gy, 1);
  return 1;
}
/* the fused backward's rows a workgroup (TEZGAH_WEBGPU_NORM_ROWS, 8..4096, default NV8_FUSE_ROWS) */
static int nv8_fuse_rows(void) {
  int r = env_int("TEZGAH_WEBGPU_NORM_ROWS", NV8_FUSE_ROWS);
  return r < 8 ? 8 : r > 4096 ? 4096 : r;
}

/* With f16 activations the forward and backward row passes are rmsnorm_sg.wgsl's
 * rmsnorm_fwd_sg_v16 / rmsnorm_bwd_sg_v16 (one subgroup per row, 8-byte accesses) and the dw
 * partials rmsnorm_dw_partial_v16 where C and the tensors allow (wg_v16_ok) and, for the row
 * passes, the adapter has subgroups (ln_sg: TEZGAH_WEBGPU_LN_SG=0 turns them off as it does
 * layernorm's); else (and with TEZGAH_WEBGPU_ACT16_VEC=0) rmsnorm.wgsl's per-element kernels. */
void wg_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w_,
                           int N, int C, float eps) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = C, w[10] = fbits(eps);
  size_t NC = (size_t)N * C;
  wg_arg h, a[] = {out_arg(c, out, NC, &h), A(rstd, F4(N), "rstd"), wg_aa(c, inp, NC, "inp"), A(w_, F4(C), "w")};
  uint32_t gx, gy;
  size_t o8[] = {inp.off, out.off, w_.off};
  int nk = nv8_nk(c, C, o8, 3);
  if (nk) { /* rmsnorm_fwd_v8: 16-byte accesses, the row in registers */
    wg_arg a8[] = {A(out, NC * 2, "out (f16)"), A(rstd, F4(N), "rstd"), A(inp, NC * 2, "inp (f16)"), A(w_, F4(C), "w")};
    if (nv8_run(c, "rmsnorm_fwd", "rmsnorm_v8", "rmsnorm_fwd_v8", nk, 0, a8, 4, 3u, N, C, eps, NV8_ROWS)) {
      nv8_calls[0]++;
      return;
    }
  }
  size_t offs[] = {inp.off, out.off};
  int pi;
  if (ln_sg(c) && wg_v16_ok(c, (size_t)C, offs, 2)) {
    gridn(((size_t)N + RN_SG_ROWS - 1) / RN_SG_ROWS, &gx, &gy);
    pi = wg_pipeline(c, "rmsnorm_sg", "rmsnorm_fwd_sg_v16", wg_v16_prefix(1));
  } else {
    gridn(N, &gx, &gy);
    pi = wg_pipeline(c, "rmsnorm", "rmsnorm_fwd", wg_out16_prefix(c));
  }
  wg_run_ex(c, "rmsnorm_fwd", pi, w, 12, a, 4, gx, gy, 1, c->act16 ? &h : NULL, -1);
}

void wg_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp,
                           tz_slice w_, tz_slice rstd, int N, int C) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  size_t NC = (size_t)N * C;
  w[8] = N, w[9] = C, w[11] = CHUNK;
  wg_arg a[] = {wg_aa(c, dinp, NC, "dinp"), wg_aa(c, dout, NC, "dout"), wg_aa(c, inp, NC, "inp"), A(w_, F4(C), "w"),
                A(rstd, F4(N), "rstd")};
  uint32_t gx, gy;
  wg_arg h = {{0}, 0, 0, 0};
  int g16 = wg_grad16(be, dinp, NC, &h); /* dinp (the residual stream's gradient) is the next dY */
  /* f16 activations: the vector kernels where C and the tensors allow (wg_v16_ok; g16 is 0 there) */
  size_t offs[] = {dinp.off, dout.off, inp.off};
  int v16 = wg_v16_ok(c, (size_t)C, offs, 3);
  TZ_ASSERT(!(v16 && g16));
  /* rmsnorm_bwd_v8 (16-byte accesses, the row in registers), with dw's partials where fused */
  size_t o8[] = {dinp.off, dout.off, inp.off, w_.off};
  int nk = g16 ? 0 : nv8_nk(c, C, o8, 4), done = 0;
  if (nk) {
    int fuse = env_int("TEZGAH_WEBGPU_NORM_FUSE", 1) != 0, R = fuse ? nv8_fuse_rows() : NV8_ROWS;
    int nwg = (N + R - 1) / R;
    tz_slice part = fuse ? wg_scratch(be, F4((size_t)nwg * C)) : TZ_NONE;
    wg_arg a8[] = {A(dinp, NC * 2, "dinp (f16)"), A(dout, NC * 2, "dout (f16)"), A(inp, NC * 2, "inp (f16)"),
                   A(w_, F4(C), "w"), A(rstd, F4(N), "rstd"), A(part, F4((size_t)nwg * C), "partials")};
    if (nv8_run(c, "rmsnorm_bwd", "rmsnorm_v8", "rmsnorm_bwd_v8", nk, fuse, a8, fuse ? 6 : 5, 1u | (unsigned)fuse << 5,
                N, C, 0.0f, R)) {
      nv8_calls[1]++;
      if (fuse) {
        nv8_calls[2]++;
        wg_colsum_add(c, dw, part, nwg, C, C);
        return;
      }
      done = 1;
    }
  }
  if (!done) {
    int pi;
    if (v16 && ln_sg(c)) {
      gridn(((size_t)N + RN_SG_ROWS - 1) / RN_SG_ROWS, &gx, &gy);
      pi = wg_pipeline(c, "rmsnorm_sg", "rmsnorm_bwd_sg_v16", wg_v16_prefix(0));
    } else {
      gridn(N, &gx, &gy);
      pi = wg_pipeline(c, "rmsnorm", "rmsnorm_bwd", wg_out16_prefix_on(g16, 1));
    }
    wg_run_ex(c, "rmsnorm_bwd", pi, w, 12, a, 5, gx, gy, 1, g16 ? &h : NULL, -1);
  }
  int nch = (N + CHUNK - 1) / CHUNK;
  tz_slice part = wg_scratch(be, F4((size_t)nch * C));
  wg_arg b[] = {A(part, F4((size_t)nch * C), "partials"), wg_aa(c, dout, NC, "dout"), wg_aa(c, inp, NC, "inp"),
                A(rstd, F4(N), "rstd")};
  /* its own profile row (rmsnorm_bwd: the row pass), as layernorm_dwdb */
  if (v16) /* four columns per thread in 8-byte accesses */
    wg_run(c, "rmsnorm_dw", wg_pipeline(c, "rmsnorm", "rmsnorm_dw_partial_v16", wg_v16_prefix(0)), w, 12, b, 4,
           (C / 4 + 255) / 256, nch, 1);
  else
    wg_run(c, "rmsnorm_dw", wg_pipeline(c, "rmsnorm", "rmsnorm_dw_partial", wg_out16_prefix_on(0, 0)), w, 12, b, 4,
           (C + 255) / 256, nch, 1);
  wg_colsum_add(c, dw, part, nch, C, C);
  if (g16) wg_grad16_made(c, dinp, NC); /* the passes since wrote scratch and dw only */
}

/* TEZGAH_WEBGPU_LN_SG: layernorm's forward and backward row passes with one subgroup per row
 * (layernorm_sg.wgsl, LN_SG_ROWS rows a workgroup) and the backward's dw / db partials four rows
 * per iteration (layernorm_dwdb_partial4) where the adapter has subgroups; =0: the kernels below
 * and layernorm_dwdb_partial (issue 22's before / after). Read once. */
#define LN_SG_ROWS 8 /* layernorm_sg.wgsl's LN_ROWS */
static int ln_sg(wg_ctx *c) {
  static int on = -1;
  if (on < 0) on = env_int("TEZGAH_WEBGPU_LN_SG", 1) != 0;
  return on && c->subgroups;
}

/* layernorm_fwd4 / layernorm_bwd4 (the row in registers, C <= 4·256) where they fit, else (or
 * with TEZGAH_WEBGPU_MEMOPS=0) the loop forms layernorm_fwd / layernorm_bwd */
static const char *ln_entry(int C, int bwd) {
  int r4 = C <= 4 * 256 && wg_memops_new();
  return bwd ? (r4 ? "layernorm_bwd4" : "layernorm_bwd") : (r4 ? "layernorm_fwd4" : "layernorm_fwd");
}

/* the pipeline and workgroup count of layernorm's row pass (fwd or bwd) */
static int ln_pipe(wg_ctx *c, int N, int C, int bwd, const char *prefix, uint32_t *gx, uint32_t *gy) {
  if (ln_sg(c)) {
    gridn(((size_t)N + LN_SG_ROWS - 1) / LN_SG_ROWS, gx, gy);
    return wg_pipeline(c, "layernorm_sg", bwd ? "layernorm_bwd_sg" : "layernorm_fwd_sg", prefix);
  }
  gridn(N, gx, gy);
  return wg_pipeline(c, "layernorm", ln_entry(C, bwd), prefix);
}

void wg_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd, tz_slice inp,
                             tz_slice w_, tz_slice b_, int N, int C, float eps) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = C, w[10] = fbits(eps);
  size_t NC = (size_t)N * C;
  wg_arg h, a[] = {out_arg(c, out, NC, &h), A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd"),
                   wg_aa(c, inp, NC, "inp"), A(w_, F4(C), "w"), A(b_, F4(C), "b")};
  uint32_t gx, gy;
  size_t o8[] = {inp.off, out.off, w_.off, b_.off};
  int nk = nv8_nk(c, C, o8, 4);
  if (nk) { /* layernorm_fwd_v8: 16-byte accesses, the row in registers */
    wg_arg a8[] = {A(out, NC * 2, "out (f16)"), A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd"),
                   A(inp, NC * 2, "inp (f16)"), A(w_, F4(C), "w"), A(b_, F4(C), "b")};
    if (nv8_run(c, "layernorm_fwd", "layernorm_v8", "layernorm_fwd_v8", nk, 0, a8, 6, 7u, N, C, eps, NV8_ROWS)) {
      nv8_calls[0]++;
      return;
    }
  }
  size_t offs[] = {inp.off, out.off};
  int pi;
  if (ln_sg(c) && wg_v16_ok(c, (size_t)C, offs, 2)) { /* vector accesses (layernorm_fwd_sg_v16) */
    gridn(((size_t)N + LN_SG_ROWS - 1) / LN_SG_ROWS, &gx, &gy);
    pi = wg_pipeline(c, "layernorm_sg", "layernorm_fwd_sg_v16", wg_v16_prefix(1));
  } else {
    pi = ln_pipe(c, N, C, 0, wg_out16_prefix(c), &gx, &gy);
  }
  wg_run_ex(c, "layernorm_fwd", pi, w, 12, a, 6, gx, gy, 1, c->act16 ? &h : NULL, -1);
}

void wg_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout,
                             tz_slice inp, tz_slice w_, tz_slice mean, tz_slice rstd, int N, int C) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  size_t NC = (size_t)N * C;
  w[8] = N, w[9] = C, w[11] = CHUNK;
  wg_arg a[] = {wg_aa(c, dinp, NC, "dinp"), wg_aa(c, dout, NC, "dout"), wg_aa(c, inp, NC, "inp"), A(w_, F4(C), "w"),
                A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd")};
  uint32_t gx, gy;
  wg_arg h = {{0}, 0, 0, 0};
  int g16 = wg_grad16(be, dinp, NC, &h); /* dinp (the residual stream's gradient) is the next dY */
  /* f16 activations: the vector kernels where C and the tensors allow (wg_v16_ok; g16 is 0 there) */
  size_t offs[] = {dinp.off, dout.off, inp.off};
  int v16 = wg_v16_ok(c, (size_t)C, offs, 3);
  TZ_ASSERT(!(v16 && g16));
  /* layernorm_bwd_v8 (16-byte accesses, the row in registers), with dw's and db's partials where
   * fused */
  size_t o8[] = {dinp.off, dout.off, inp.off, w_.off};
  int nk = g16 ? 0 : nv8_nk(c, C, o8, 4), done = 0;
  if (nk) {
    int fuse = env_int("TEZGAH_WEBGPU_NORM_FUSE", 1) != 0, R = fuse ? nv8_fuse_rows() : NV8_ROWS;
    int nwg = (N + R - 1) / R;
    tz_slice part = fuse ? wg_scratch(be, F4((size_t)nwg * 2 * C)) : TZ_NONE;
    wg_arg a8[] = {A(dinp, NC * 2, "dinp (f16)"), A(dout, NC * 2, "dout (f16)"), A(inp, NC * 2, "inp (f16)"),
                   A(w_, F4(C), "w"), A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd"),
                   A(part, F4((size_t)nwg * 2 * C), "partials")};
    if (nv8_run(c, "layernorm_bwd", "layernorm_v8", "layernorm_bwd_v8", nk, fuse, a8, fuse ? 7 : 6,
                1u | (unsigned)fuse << 6, N, C, 0.0f, R)) {
      nv8_calls[1]++;
      if (fuse) {
        nv8_calls[2]++;
        colsum2(c, dw, C, db, C, part, nwg, 2 * C); /* [dw | db] partials: one dispatch */
        return;
      }
      done = 1;
    }
  }
  if (!done) {
    int pi;
    if (v16 && ln_sg(c)) {
      gridn(((size_t)N + LN_SG_ROWS - 1) / LN_SG_ROWS, &gx, &gy);
      pi = wg_pipeline(c, "layernorm_sg", "layernorm_bwd_sg_v16", wg_v16_prefix(0));
    } else {
      pi = ln_pipe(c, N, C, 1, wg_out16_prefix_on(g16, 1), &gx, &gy);
    }
    wg_run_ex(c, "layernorm_bwd", pi, w, 12, a, 6, gx, gy, 1, g16 ? &h : NULL, -1);
  }
  int nch = (N + CHUNK - 1) / CHUNK;
  tz_slice part = wg_scratch(be, F4((size_t)nch * 2 * C));
  wg_arg b[] = {A(part, F4((size_t)nch * 2 * C), "partials"), wg_aa(c, dout, NC, "dout"), wg_aa(c, inp, NC, "inp"),
                A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd")};
  /* its own profile row (layernorm_bwd: the row pass; the op is both); four rows per iteration
   * where layernorm_sg runs */
  const char *pe = ln_sg(c) ? "layernorm_dwdb_partial4" : "layernorm_dwdb_partial";
  if (v16) /* four columns per thread in 8-byte accesses (layernorm_dwdb_partial_v16) */
    wg_run(c, "layernorm_dwdb", wg_pipeline(c, "layernorm", "layernorm_dwdb_partial_v16", wg_v16_prefix(0)), w, 12,
           b, 5, (C / 4 + 255) / 256, nch, 1);
  else
    wg_run(c, "layernorm_dwdb", wg_pipeline(c, "layernorm", pe, wg_out16_prefix_on(0, 0)), w, 12, b,
           5, (C + 255) / 256, nch, 1);
  colsum2(c, dw, C, db, C, part, nch, 2 * C); /* [dw | db] partials: one dispatch */
  if (g16) wg_grad16_made(c, dinp, NC); /* the passes since wrote scratch, dw and db only */
}

/* ---- activations ---- */
void wg_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  wg_ctx *c = CTX(be);
  int ept = gelu_per_thread();
  int pi = wg_pipeline(c, "gelu", ept == 8 ? "gelu_fwd8" : ept == 4 ? "gelu_fwd4" : "gelu_fwd", wg_out16_prefix(c));
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg h, a[] = {out_arg(c, tz_at(out, i * (c->act16 ? 2 : 4)), k, &h), wg_aa(c, wg_act_at(c, inp, i), k, "inp")};
    uint32_t gx, gy;
    size_t offs[] = {a[1].s.off, out.off + i * 2};
    if (wg_v16_ok(c, k, offs, 2)) { /* f16 activations: gelu_fwd_v16, 8-byte accesses (out at binding 9) */
      grid1((k + 15) / 16, &gx, &gy);
      wg_run_ex(c, "gelu_fwd", wg_pipeline(c, "gelu", "gelu_fwd_v16", wg_v16_prefix(1)), w, 9, a, 2, gx, gy, 1, &h, -1);
      continue;
    }
    grid1((k + ept - 1) / ept, &gx, &gy);
    wg_run_ex(c, "gelu_fwd", pi, w, 9, a, 2, gx, gy, 1, c->act16 ? &h : NULL, -1);
  }
}
void wg_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n) {
  wg_ctx *c = CTX(be);
  wg_arg h = {{0}, 0, 0, 0};
  int g16 = wg_grad16(be, dinp, n, &h); /* dinp (dh) is the next dY */
  int e4 = wg_memops_new(); /* ffn_gelu_backward4: four elements per thread */
  int pi = wg_pipeline(c, "gelu", e4 ? "ffn_gelu_backward4" : "ffn_gelu_backward", wg_out16_prefix_on(g16, 1));
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {wg_aa(c, wg_act_at(c, dinp, i), k, "dinp"), wg_aa(c, wg_act_at(c, inp, i), k, "inp"),
                  wg_aa(c, wg_act_at(c, dout, i), k, "dout")};
    wg_arg hp = A(tz_at(h.s, 2 * i), (2 * k + 3) & ~(size_t)3, "dinp (f16 copy)");
    uint32_t gx, gy;
    size_t offs[] = {a[0].s.off, a[1].s.off, a[2].s.off};
    if (!g16 && wg_v16_ok(c, k, offs, 3)) { /* f16 activations: ffn_gelu_backward_v16, 8-byte accesses */
      grid1((k + 15) / 16, &gx, &gy);
      wg_run(c, "gelu_bwd", wg_pipeline(c, "gelu", "ffn_gelu_backward_v16", wg_v16_prefix(0)), w, 9, a, 3, gx, gy, 1);
      continue;
    }
    grid1(e4 ? (k + 3) / 4 : k, &gx, &gy);
    wg_run_ex(c, "gelu_bwd", pi, w, 9, a, 3, gx, gy, 1, g16 ? &hp : NULL, -1);
  }
  if (g16) wg_grad16_made(c, dinp, n);
}
/* swiglu_fwd_v8 (swiglu_v8.wgsl: 16-byte accesses) where it applies: f16 activations with the
 * vector kernels on (wg_v16_on), TEZGAH_WEBGPU_SWIGLU_V8 != 0 (default 1, read at each call: an
 * A/B switch for the H200 and the tests), F a multiple of 8, out and gu on 16 bytes in bindings of
 * their own. Returns 1 when it ran, 0 (nothing dispatched) otherwise. */
/* One swiglu_v8.wgsl dispatch (entry, labelled label) over N × F outputs, argument 0 written: 0
 * and nothing dispatched where an argument would share a binding */
static int swiglu_v8_run(wg_ctx *c, const char *label, const char *entry, const wg_arg *a8, int na, int N, int F) {
  if (!wg_own_bindings(c, a8, na)) return 0;
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = (uint32_t)F;
  uint32_t gx, gy;
  gridn(((size_t)N * F / 8 + 1023) / 1024, &gx, &gy);
  const char *pre = ro_clash(a8, na, 1u) ? "//defs NG=4\n// rw\n" : "//defs NG=4\n";
  wg_run(c, label, wg_pipeline(c, "swiglu_v8", entry, pre), w, 10, a8, na, gx, gy, 1);
  return 1;
}
static long swiglu_v8_n;
long tz_webgpu_swiglu_v8_calls(void) { return swiglu_v8_n; }
static int swiglu_fwd_v8(wg_ctx *c, tz_slice out, tz_slice gu, int N, int F) {
  if (!wg_v16_on(c) || !env_int("TEZGAH_WEBGPU_SWIGLU_V8", 1) || F % 8 || out.off % 16 || gu.off % 16 || N <= 0)
    return 0;
  size_t nf = (size_t)N * F;
  wg_arg a8[] = {A(out, nf * 2, "out (f16)"), A(gu, nf * 4, "gu (f16)")};
  if (!swiglu_v8_run(c, "swiglu_fwd", "swiglu_fwd_v8", a8, 2, N, F)) return 0;
  swiglu_v8_n++;
  return 1;
}
/* swiglu_bwd_v8 (swiglu_v8.wgsl: 16-byte accesses) where it applies: as swiglu_fwd_v8, with
 * TEZGAH_WEBGPU_SWIGLU_BWD_V8 (default 1, read at each call) and dgu, gu, dout on 16 bytes in
 * bindings of their own. The H200's llama default runs SwiGLU's backward in the dY·W matmul's
 * epilogue instead (wg_matmul_dswiglu); this is the path without it (TEZGAH_WEBGPU_SWIGLU_EPI=0,
 * adapters without subgroup matrices). Returns 1 when it ran, 0 (nothing dispatched) otherwise. */
static long swiglu_bwd_v8_n;
long tz_webgpu_swiglu_bwd_v8_calls(void) { return swiglu_bwd_v8_n; }
static int swiglu_bwd_v8(wg_ctx *c, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F) {
  if (!wg_v16_on(c) || !env_int("TEZGAH_WEBGPU_SWIGLU_BWD_V8", 1) || F % 8 || dgu.off % 16 || gu.off % 16 ||
      dout.off % 16 || N <= 0)
    return 0;
  size_t nf = (size_t)N * F;
  wg_arg a8[] = {A(dgu, nf * 4, "dgu (f16)"), A(gu, nf * 4, "gu (f16)"), A(dout, nf * 2, "dout (f16)")};
  if (!swiglu_v8_run(c, "swiglu_bwd", "swiglu_bwd_v8", a8, 3, N, F)) return 0;
  swiglu_bwd_v8_n++;
  return 1;
}
void wg_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  wg_ctx *c = CTX(be);
  if (swiglu_fwd_v8(c, out, gu, N, F)) return;
  uint32_t w[24] = {0};
  w[8] = N, w[9] = F;
  wg_arg h, a[] = {out_arg(c, out, (size_t)N * F, &h), wg_aa(c, gu, (size_t)N * 2 * F, "gu")};
  uint32_t gx, gy;
  size_t offs[] = {gu.off, out.off};
  if (wg_v16_ok(c, (size_t)F, offs, 2)) { /* f16 activations: swiglu_fwd_v16, 8-byte accesses (out at binding 9) */
    grid1(((size_t)N * F + 15) / 16, &gx, &gy);
    wg_run_ex(c, "swiglu_fwd", wg_pipeline(c, "swiglu", "swiglu_fwd_v16", wg_v16_prefix(1)), w, 10, a, 2, gx, gy, 1, &h,
              -1);
    return;
  }
  grid1((size_t)N * F, &gx, &gy);
  wg_run_ex(c, "swiglu_fwd", wg_pipeline(c, "swiglu", "swiglu_fwd", wg_out16_prefix(c)), w, 10, a, 2, gx, gy, 1,
            c->act16 ? &h : NULL, -1);
}
void wg_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F) {
  wg_ctx *c = CTX(be);
  if (swiglu_bwd_v8(c, dgu, dout, gu, N, F)) return;
  uint32_t w[24] = {0};
  w[8] = N, w[9] = F;
  wg_arg a[] = {wg_aa(c, dgu, (size_t)N * 2 * F, "dgu"), wg_aa(c, gu, (size_t)N * 2 * F, "gu"),
                wg_aa(c, dout, (size_t)N * F, "dout")};
  uint32_t gx, gy;
  wg_arg h = {{0}, 0, 0, 0};
  int g16 = wg_grad16(be, dgu, (size_t)N * 2 * F, &h); /* dgu (dh) is the next dY */
  size_t offs[] = {dgu.off, gu.off, dout.off};
  if (!g16 && wg_v16_ok(c, (size_t)F, offs, 3)) { /* f16 activations: ffn_swiglu_backward_v16, 8-byte accesses */
    grid1(((size_t)N * F + 15) / 16, &gx, &gy);
    wg_run(c, "swiglu_bwd", wg_pipeline(c, "swiglu", "ffn_swiglu_backward_v16", wg_v16_prefix(0)), w, 10, a, 3, gx, gy,
           1);
    return;
  }
  grid1((size_t)N * F, &gx, &gy);
  wg_run_ex(c, "swiglu_bwd", wg_pipeline(c, "swiglu", "ffn_swiglu_backward", wg_out16_prefix_on(g16, 1)), w, 10, a, 3,
            gx, gy, 1, g16 ? &h : NULL, -1);
  if (g16) wg_grad16_made(c, dgu, (size_t)N * 2 * F);
}
