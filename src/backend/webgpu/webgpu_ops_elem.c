/* WebGPU backend ops: elementwise add, partial column sums (bias gradient, the norms' weight
 * gradients), the sum of squares (gradient norm), rmsnorm and layernorm forward / backward,
 * and the activations (GELU, SwiGLU) forward / backward. Each splits work above one binding
 * (wg_cap_elems) into pieces. */
#include <stdio.h>
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"

void wg_add(tz_backend *be, tz_slice out, tz_slice a_, tz_slice b_, size_t n) {
  wg_ctx *c = CTX(be);
  int pi = wg_pipeline(c, "elementwise", "add", "");
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(out, i), F4(k), "out"), A(tz_f32(a_, i), F4(k), "a"), A(tz_f32(b_, i), F4(k), "b")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run(c, "add", pi, w, 9, a, 3, gx, gy, 1);
  }
}

/* dst[c] += Σ_k part[k*stride + c], c < cols, k < rows (colsum_rows: 16 columns per workgroup) */
void wg_colsum_add(wg_ctx *c, tz_slice dst, tz_slice part, int rows, int cols, int stride) {
  uint32_t w[24] = {0};
  w[8] = rows, w[9] = cols, w[10] = 0, w[11] = stride;
  wg_arg a[] = {A(dst, F4(cols), "param grad"), A(part, F4((size_t)rows * stride), "partials")};
  wg_run(c, "colsum_add", wg_pipeline(c, "elementwise", "colsum_rows", ""), w, 12, a, 2, (cols + 15) / 16, 1, 1);
}

#define CHUNK 32 /* rows per partial column sum */

void wg_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  wg_ctx *c = CTX(be);
  if (M <= 0 || N <= 0) return;
  int nch = (M + CHUNK - 1) / CHUNK;
  tz_slice part = wg_scratch(be, F4((size_t)nch * N));
  uint32_t w[24] = {0};
  w[8] = M, w[9] = N, w[10] = CHUNK, w[11] = N;
  wg_arg a[] = {A(part, F4((size_t)nch * N), "partials"), A(dout, F4((size_t)M * N), "dout")};
  wg_run(c, "bias_bwd", wg_pipeline(c, "elementwise", "colsum_partial", ""), w, 12, a, 2, (N + 255) / 256, nch, 1);
  wg_colsum_add(c, db, part, nch, N, N);
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
void wg_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w_,
                           int N, int C, float eps) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = C, w[10] = fbits(eps);
  size_t NC = (size_t)N * C;
  wg_arg h, a[] = {out_arg(c, out, NC, &h), A(rstd, F4(N), "rstd"), A(inp, F4(NC), "inp"), A(w_, F4(C), "w")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  wg_run_ex(c, "rmsnorm_fwd", wg_pipeline(c, "rmsnorm", "rmsnorm_fwd", wg_out16_prefix(c)), w, 12, a, 4, gx, gy, 1,
            c->act16 ? &h : NULL, -1);
}

void wg_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp,
                           tz_slice w_, tz_slice rstd, int N, int C) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  size_t NC = (size_t)N * C;
  w[8] = N, w[9] = C, w[11] = CHUNK;
  wg_arg a[] = {A(dinp, F4(NC), "dinp"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"), A(w_, F4(C), "w"),
                A(rstd, F4(N), "rstd")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  wg_arg h = {{0}, 0, 0};
  int g16 = wg_grad16(be, dinp, NC, &h); /* dinp (the residual stream's gradient) is the next dY */
  wg_run_ex(c, "rmsnorm_bwd", wg_pipeline(c, "rmsnorm", "rmsnorm_bwd", wg_out16_prefix_on(g16, 1)), w, 12, a, 5, gx, gy,
            1, g16 ? &h : NULL, -1);
  int nch = (N + CHUNK - 1) / CHUNK;
  tz_slice part = wg_scratch(be, F4((size_t)nch * C));
  wg_arg b[] = {A(part, F4((size_t)nch * C), "partials"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"),
                A(rstd, F4(N), "rstd")};
  wg_run(c, "rmsnorm_bwd", wg_pipeline(c, "rmsnorm", "rmsnorm_dw_partial", wg_out16_prefix_on(0, 0)), w, 12, b, 4,
         (C + 255) / 256, nch, 1);
  wg_colsum_add(c, dw, part, nch, C, C);
  if (g16) wg_grad16_made(c, dinp, NC); /* the passes since wrote scratch and dw only */
}

void wg_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd, tz_slice inp,
                             tz_slice w_, tz_slice b_, int N, int C, float eps) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = C, w[10] = fbits(eps);
  size_t NC = (size_t)N * C;
  wg_arg h, a[] = {out_arg(c, out, NC, &h), A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd"),
                   A(inp, F4(NC), "inp"), A(w_, F4(C), "w"), A(b_, F4(C), "b")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  wg_run_ex(c, "layernorm_fwd", wg_pipeline(c, "layernorm", "layernorm_fwd", wg_out16_prefix(c)), w, 12, a, 6, gx, gy,
            1, c->act16 ? &h : NULL, -1);
}

void wg_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout,
                             tz_slice inp, tz_slice w_, tz_slice mean, tz_slice rstd, int N, int C) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  size_t NC = (size_t)N * C;
  w[8] = N, w[9] = C, w[11] = CHUNK;
  wg_arg a[] = {A(dinp, F4(NC), "dinp"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"), A(w_, F4(C), "w"),
                A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd")};
  uint32_t gx, gy;
  gridn(N, &gx, &gy);
  wg_arg h = {{0}, 0, 0};
  int g16 = wg_grad16(be, dinp, NC, &h); /* dinp (the residual stream's gradient) is the next dY */
  wg_run_ex(c, "layernorm_bwd", wg_pipeline(c, "layernorm", "layernorm_bwd", wg_out16_prefix_on(g16, 1)), w, 12, a, 6,
            gx, gy, 1, g16 ? &h : NULL, -1);
  int nch = (N + CHUNK - 1) / CHUNK;
  tz_slice part = wg_scratch(be, F4((size_t)nch * 2 * C));
  wg_arg b[] = {A(part, F4((size_t)nch * 2 * C), "partials"), A(dout, F4(NC), "dout"), A(inp, F4(NC), "inp"),
                A(mean, F4(N), "mean"), A(rstd, F4(N), "rstd")};
  wg_run(c, "layernorm_bwd", wg_pipeline(c, "layernorm", "layernorm_dwdb_partial", wg_out16_prefix_on(0, 0)), w, 12, b,
         5, (C + 255) / 256, nch, 1);
  wg_colsum_add(c, dw, part, nch, C, 2 * C);
  wg_colsum_add(c, db, tz_f32(part, C), nch, C, 2 * C);
  if (g16) wg_grad16_made(c, dinp, NC); /* the passes since wrote scratch, dw and db only */
}

/* ---- activations ---- */
void wg_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  wg_ctx *c = CTX(be);
  int pi = wg_pipeline(c, "gelu", "gelu_fwd", wg_out16_prefix(c));
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg h, a[] = {out_arg(c, tz_at(out, i * (c->act16 ? 2 : 4)), k, &h), A(tz_f32(inp, i), F4(k), "inp")};
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run_ex(c, "gelu_fwd", pi, w, 9, a, 2, gx, gy, 1, c->act16 ? &h : NULL, -1);
  }
}
void wg_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n) {
  wg_ctx *c = CTX(be);
  wg_arg h = {{0}, 0, 0};
  int g16 = wg_grad16(be, dinp, n, &h); /* dinp (dh) is the next dY */
  int pi = wg_pipeline(c, "gelu", "ffn_gelu_backward", wg_out16_prefix_on(g16, 1));
  for (size_t i = 0, cap = wg_cap_elems(c); i < n; i += cap) {
    size_t k = n - i < cap ? n - i : cap;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(dinp, i), F4(k), "dinp"), A(tz_f32(inp, i), F4(k), "inp"),
                  A(tz_f32(dout, i), F4(k), "dout")};
    wg_arg hp = A(tz_at(h.s, 2 * i), (2 * k + 3) & ~(size_t)3, "dinp (f16 copy)");
    uint32_t gx, gy;
    grid1(k, &gx, &gy);
    wg_run_ex(c, "gelu_bwd", pi, w, 9, a, 3, gx, gy, 1, g16 ? &hp : NULL, -1);
  }
  if (g16) wg_grad16_made(c, dinp, n);
}
void wg_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = F;
  wg_arg h, a[] = {out_arg(c, out, (size_t)N * F, &h), A(gu, F4((size_t)N * 2 * F), "gu")};
  uint32_t gx, gy;
  grid1((size_t)N * F, &gx, &gy);
  wg_run_ex(c, "swiglu_fwd", wg_pipeline(c, "swiglu", "swiglu_fwd", wg_out16_prefix(c)), w, 10, a, 2, gx, gy, 1,
            c->act16 ? &h : NULL, -1);
}
void wg_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F) {
  wg_ctx *c = CTX(be);
  uint32_t w[24] = {0};
  w[8] = N, w[9] = F;
  wg_arg a[] = {A(dgu, F4((size_t)N * 2 * F), "dgu"), A(gu, F4((size_t)N * 2 * F), "gu"),
                A(dout, F4((size_t)N * F), "dout")};
  uint32_t gx, gy;
  grid1((size_t)N * F, &gx, &gy);
  wg_arg h = {{0}, 0, 0};
  int g16 = wg_grad16(be, dgu, (size_t)N * 2 * F, &h); /* dgu (dh) is the next dY */
  wg_run_ex(c, "swiglu_bwd", wg_pipeline(c, "swiglu", "ffn_swiglu_backward", wg_out16_prefix_on(g16, 1)), w, 10, a, 3,
            gx, gy, 1, g16 ? &h : NULL, -1);
  if (g16) wg_grad16_made(c, dgu, (size_t)N * 2 * F);
}
