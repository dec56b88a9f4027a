/* Every op's backward against float64 central finite differences, and every forward
 * against a float64 reference.
 *
 * Method: each op has an independent float64 reference forward written here with plain
 * loops. The scalar loss is L = Σ_i w_i·out_i with random weights w; the numeric gradient
 * dL/dx is a central difference (h = 1e-5) of the float64 reference, and the CPU
 * backend's fp32 backward is called with dout = w. Inputs are drawn in fp32 and widened
 * exactly, so both sides see the same numbers.
 *
 * Tolerances (an element passes when either bound holds):
 *   forward:   |got − ref| ≤ 1e-5 (abs) or ≤ 1e-5·|ref| (rel)
 *   gradients: |got − ref| ≤ 1e-4 (abs) or ≤ 1e-3·|ref| (rel)
 * Values are O(1), so a wrong sign, a missing term or a wrong "+=" / "=" trips these.
 * Gradients documented as "+=" are checked on buffers pre-filled with random values
 * (expected = initial + gradient); "=" gradients on buffers pre-filled with garbage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_testutil.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-5
#define GRAD_RTOL 1e-3
#define GRAD_ATOL 1e-4
#define FD_H 1e-5

typedef double (*loss_fn)(void *p);

/* Central differences of L with respect to every element of x (which f reads through p). */
static void numgrad(loss_fn f, void *p, double *x, size_t n, double *g) {
  for (size_t i = 0; i < n; i++) {
    double s = x[i];
    x[i] = s + FD_H;
    double lp = f(p);
    x[i] = s - FD_H;
    double lm = f(p);
    x[i] = s;
    g[i] = (lp - lm) / (2 * FD_H);
  }
}
static double dot(const double *a, const double *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}
/* init + g, the expected content of a "+=" gradient buffer. */
static double *plus(const float *init, const double *g, size_t n) {
  double *r = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) r[i] = init[i] + g[i];
  return r;
}

static tz_backend *g_be;
static int setup(void **state) {
  g_be = tz_backend_create("cpu", 2, NULL);
  return g_be ? 0 : -1;
}
static int teardown(void **state) {
  g_be->destroy(g_be);
  return 0;
}

/* ---------------------------------------------------------------- embedding */
typedef struct {
  int B, T, C, V;
  const int *tok;
  double *wte, *wpe, *w, *out;
} embed_p;
static void embed_ref(embed_p *p) {
  for (int n = 0; n < p->B * p->T; n++)
    for (int c = 0; c < p->C; c++) {
      int id = p->tok[n];
      if (id < 0 || id >= p->V) { /* invalid id: zero row (backend.h) */
        p->out[n * p->C + c] = 0.0;
        continue;
      }
      p->out[n * p->C + c] = p->wte[id * p->C + c] + (p->wpe ? p->wpe[(n % p->T) * p->C + c] : 0.0);
    }
}
static double embed_loss(void *v) {
  embed_p *p = v;
  embed_ref(p);
  return dot(p->w, p->out, (size_t)p->B * p->T * p->C);
}
static void run_embed(int with_wpe) {
  ot_ctx o;
  ot_init(&o, g_be, 1 + with_wpe);
  int B = 2, T = 5, C = 20, V = 7, N = B * T;
  int tok[10] = {3, 1, 3, 3, 0, 6, 1, 3, 7 /* out of range: zeros */, 2};
  float *wte = ot_randn(&o, V * C, 1), *wpe = ot_randn(&o, T * C, 1), *w = ot_randn(&o, N * C, 1);
  float *gte0 = ot_randn(&o, V * C, 1), *gpe0 = ot_randn(&o, T * C, 1);
  embed_p p = {B, T, C, V, tok, ot_dbl(wte, V * C), with_wpe ? ot_dbl(wpe, T * C) : NULL,
               ot_dbl(w, N * C), malloc(sizeof(double) * N * C)};
  tz_slice s_out = ot_buf(&o, NULL, 4 * N * C), s_tok = ot_buf(&o, tok, sizeof tok);
  tz_slice s_wte = ot_buf(&o, wte, 4 * V * C), s_wpe = with_wpe ? ot_buf(&o, wpe, 4 * T * C) : TZ_NONE;
  g_be->embed_fwd(g_be, s_out, s_tok, s_wte, s_wpe, B, T, C, V);
  embed_ref(&p);
  float *out = ot_get(&o, s_out, N * C);
  ot_close("embed fwd", out, p.out, N * C, FWD_RTOL, FWD_ATOL);

  tz_slice s_dte = ot_buf(&o, gte0, 4 * V * C), s_dpe = with_wpe ? ot_buf(&o, gpe0, 4 * T * C) : TZ_NONE;
  g_be->embed_bwd(g_be, s_dte, s_dpe, ot_buf(&o, w, 4 * N * C), s_tok, B, T, C, V);
  double *g = malloc(sizeof(double) * V * C);
  numgrad(embed_loss, &p, p.wte, V * C, g);
  float *dte = ot_get(&o, s_dte, V * C);
  double *want = plus(gte0, g, V * C);
  ot_close("embed dwte (+=)", dte, want, V * C, GRAD_RTOL, GRAD_ATOL);
  if (with_wpe) {
    double *gp = malloc(sizeof(double) * T * C);
    numgrad(embed_loss, &p, p.wpe, T * C, gp);
    float *dpe = ot_get(&o, s_dpe, T * C);
    double *wp = plus(gpe0, gp, T * C);
    ot_close("embed dwpe (+=)", dpe, wp, T * C, GRAD_RTOL, GRAD_ATOL);
    free(gp), free(dpe), free(wp), free(p.wpe);
  }
  free(wte), free(wpe), free(w), free(gte0), free(gpe0), free(p.wte), free(p.w), free(p.out);
  free(out), free(g), free(dte), free(want);
  ot_release(&o);
}
static void test_embed_gpt2(void **state) { run_embed(1); }
static void test_embed_llama(void **state) { run_embed(0); }

/* ---------------------------------------------------------------- rmsnorm / layernorm */
typedef struct {
  int N, C, ln;
  double eps, *x, *w, *b, *dout, *out;
} norm_p;
static void norm_ref(norm_p *p) {
  for (int n = 0; n < p->N; n++) {
    const double *x = p->x + n * p->C;
    double m = 0, v = 0;
    if (p->ln) {
      for (int c = 0; c < p->C; c++) m += x[c];
      m /= p->C;
    }
    for (int c = 0; c < p->C; c++) v += (x[c] - m) * (x[c] - m);
    double r = 1.0 / sqrt(v / p->C + p->eps);
    for (int c = 0; c < p->C; c++)
      p->out[n * p->C + c] = (x[c] - m) * r * p->w[c] + (p->ln ? p->b[c] : 0.0);
  }
}
static double norm_loss(void *v) {
  norm_p *p = v;
  norm_ref(p);
  return dot(p->dout, p->out, (size_t)p->N * p->C);
}
static void run_norm(int ln) {
  ot_ctx o;
  ot_init(&o, g_be, 10 + ln);
  int N = 7, C = 19;
  size_t NC = (size_t)N * C;
  float *x = ot_randn(&o, NC, 1.5f), *w = ot_randn(&o, C, 1), *b = ot_randn(&o, C, 1);
  float *dy = ot_randn(&o, NC, 1), *dx0 = ot_randn(&o, NC, 1), *dw0 = ot_randn(&o, C, 1),
        *db0 = ot_randn(&o, C, 1);
  for (int i = 0; i < C; i++) x[i] += 3.0f; /* a row with a large mean */
  norm_p p = {N, C, ln, 1e-5, ot_dbl(x, NC), ot_dbl(w, C), ot_dbl(b, C), ot_dbl(dy, NC),
              malloc(NC * sizeof(double))};
  tz_slice s_out = ot_buf(&o, NULL, 4 * NC), s_mean = ot_buf(&o, NULL, 4 * N),
           s_rstd = ot_buf(&o, NULL, 4 * N), s_x = ot_buf(&o, x, 4 * NC), s_w = ot_buf(&o, w, 4 * C),
           s_b = ot_buf(&o, b, 4 * C);
  if (ln)
    g_be->layernorm_fwd(g_be, s_out, s_mean, s_rstd, s_x, s_w, s_b, N, C, 1e-5f);
  else
    g_be->rmsnorm_fwd(g_be, s_out, s_rstd, s_x, s_w, N, C, 1e-5f);
  norm_ref(&p);
  float *out = ot_get(&o, s_out, NC);
  ot_close(ln ? "layernorm fwd" : "rmsnorm fwd", out, p.out, NC, FWD_RTOL, FWD_ATOL);

  tz_slice s_dx = ot_buf(&o, dx0, 4 * NC), s_dw = ot_buf(&o, dw0, 4 * C), s_db = ot_buf(&o, db0, 4 * C);
  tz_slice s_dy = ot_buf(&o, dy, 4 * NC);
  if (ln)
    g_be->layernorm_bwd(g_be, s_dx, s_dw, s_db, s_dy, s_x, s_w, s_mean, s_rstd, N, C);
  else
    g_be->rmsnorm_bwd(g_be, s_dx, s_dw, s_dy, s_x, s_w, s_rstd, N, C);
  double *gx = malloc(NC * sizeof(double)), *gw = malloc(C * sizeof(double)),
         *gb = malloc(C * sizeof(double));
  numgrad(norm_loss, &p, p.x, NC, gx);
  numgrad(norm_loss, &p, p.w, C, gw);
  float *dx = ot_get(&o, s_dx, NC), *dw = ot_get(&o, s_dw, C), *db = ot_get(&o, s_db, C);
  double *ex = plus(dx0, gx, NC), *ew = plus(dw0, gw, C);
  ot_close("norm dinp (+=)", dx, ex, NC, GRAD_RTOL, GRAD_ATOL);
  ot_close("norm dw (+=)", dw, ew, C, GRAD_RTOL, GRAD_ATOL);
  if (ln) {
    numgrad(norm_loss, &p, p.b, C, gb);
    double *eb = plus(db0, gb, C);
    ot_close("layernorm db (+=)", db, eb, C, GRAD_RTOL, GRAD_ATOL);
    free(eb);
  }
  free(x), free(w), free(b), free(dy), free(dx0), free(dw0), free(db0), free(p.x), free(p.w);
  free(p.b), free(p.dout), free(p.out), free(out), free(gx), free(gw), free(gb), free(dx), free(dw);
  free(db), free(ex), free(ew);
  ot_release(&o);
}
static void test_rmsnorm(void **state) { run_norm(0); }
static void test_layernorm(void **state) { run_norm(1); }

/* ---------------------------------------------------------------- linear (matmul family) */
typedef struct {
  int M, K, N;
  double *x, *wt, *b, *dout, *out;
} lin_p;
static double lin_loss(void *v) {
  lin_p *p = v;
  for (int m = 0; m < p->M; m++)
    for (int n = 0; n < p->N; n++) {
      double s = p->b[n];
      for (int k = 0; k < p->K; k++) s += p->x[m * p->K + k] * p->wt[n * p->K + k];
      p->out[m * p->N + n] = s;
    }
  return dot(p->dout, p->out, (size_t)p->M * p->N);
}
/* Y = X·Wᵀ + b through matmul_t, then dX = dY·W (matmul, =), dW += dYᵀ·X (matmul_at,
 * acc), db += Σ dY (bias_bwd), on both matmul paths. */
static void run_linear(const char *path) {
  setenv("TZ_MATMUL", path, 1);
  tz_backend *be = tz_backend_create("cpu", 2, NULL);
  unsetenv("TZ_MATMUL");
  assert_non_null(be);
  ot_ctx o;
  ot_init(&o, be, 20);
  int M = 9, K = 13, N = 35; /* rows, in, out */
  float *x = ot_randn(&o, M * K, 1), *wt = ot_randn(&o, N * K, 1), *b = ot_randn(&o, N, 1);
  float *dy = ot_randn(&o, M * N, 1), *dw0 = ot_randn(&o, N * K, 1), *db0 = ot_randn(&o, N, 1),
        *junk = ot_randn(&o, M * K, 100);
  lin_p p = {M, K, N, ot_dbl(x, M * K), ot_dbl(wt, N * K), ot_dbl(b, N), ot_dbl(dy, M * N),
             malloc(sizeof(double) * M * N)};
  tz_slice s_x = ot_buf(&o, x, 4 * M * K), s_w = ot_buf(&o, wt, 4 * N * K), s_b = ot_buf(&o, b, 4 * N);
  tz_slice s_y = ot_buf(&o, NULL, 4 * M * N);
  be->matmul_t(be, s_y, s_x, s_w, s_b, M, K, N, 0);
  lin_loss(&p);
  float *y = ot_get(&o, s_y, M * N);
  ot_close("linear fwd", y, p.out, M * N, FWD_RTOL, FWD_ATOL);

  tz_slice s_dy = ot_buf(&o, dy, 4 * M * N), s_dx = ot_buf(&o, junk, 4 * M * K),
           s_dw = ot_buf(&o, dw0, 4 * N * K), s_db = ot_buf(&o, db0, 4 * N);
  be->matmul(be, s_dx, s_dy, s_w, M, N, K, 0);
  be->matmul_at(be, s_dw, s_dy, s_x, N, M, K, 1);
  be->bias_bwd(be, s_db, s_dy, M, N);
  double *gx = malloc(sizeof(double) * M * K), *gw = malloc(sizeof(double) * N * K),
         *gb = malloc(sizeof(double) * N);
  numgrad(lin_loss, &p, p.x, M * K, gx);
  numgrad(lin_loss, &p, p.wt, N * K, gw);
  numgrad(lin_loss, &p, p.b, N, gb);
  float *dx = ot_get(&o, s_dx, M * K), *dw = ot_get(&o, s_dw, N * K), *db = ot_get(&o, s_db, N);
  double *ew = plus(dw0, gw, N * K), *eb = plus(db0, gb, N);
  ot_close("linear dX (matmul, =)", dx, gx, M * K, GRAD_RTOL, GRAD_ATOL);
  ot_close("linear dW (matmul_at, +=)", dw, ew, N * K, GRAD_RTOL, GRAD_ATOL);
  ot_close("linear db (bias_bwd, +=)", db, eb, N, GRAD_RTOL, GRAD_ATOL);
  free(x), free(wt), free(b), free(dy), free(dw0), free(db0), free(junk), free(p.x), free(p.wt);
  free(p.b), free(p.dout), free(p.out), free(y), free(gx), free(gw), free(gb), free(dx), free(dw);
  free(db), free(ew), free(eb);
  ot_release(&o);
  be->destroy(be);
}
static void test_linear_c(void **state) { run_linear("c"); }
static void test_linear_blas(void **state) { run_linear("blas"); }

/* ---------------------------------------------------------------- rope */
typedef struct {
  int B, T, nh, nkv, hd, pos0;
  double theta, *x, *w, *out;
} rope_p;
static double rope_loss(void *v) {
  rope_p *p = v;
  int W = (p->nh + 2 * p->nkv) * p->hd;
  for (int n = 0; n < p->B * p->T; n++)
    for (int c = 0; c < W; c++) {
      const double *x = p->x + (size_t)n * W;
      double *y = p->out + (size_t)n * W;
      if (c >= (p->nh + p->nkv) * p->hd) {
        y[c] = x[c];
        continue;
      }
      int i = c % p->hd & ~1; /* pair (i, i+1) within the head */
      double ang = (p->pos0 + n % p->T) * pow(p->theta, -(double)i / p->hd);
      double x0 = x[c - c % p->hd + i], x1 = x[c - c % p->hd + i + 1];
      y[c] = (c % 2 == 0) ? x0 * cos(ang) - x1 * sin(ang) : x0 * sin(ang) + x1 * cos(ang);
    }
  return dot(p->w, p->out, (size_t)p->B * p->T * W);
}
static void test_rope(void **state) {
  ot_ctx o;
  ot_init(&o, g_be, 30);
  int B = 2, T = 5, nh = 4, nkv = 2, hd = 6, pos0 = 3, W = (nh + 2 * nkv) * hd;
  size_t n = (size_t)B * T * W;
  float *x = ot_randn(&o, n, 1), *w = ot_randn(&o, n, 1);
  rope_p p = {B, T, nh, nkv, hd, pos0, 10000.0, ot_dbl(x, n), ot_dbl(w, n), malloc(n * sizeof(double))};
  tz_slice s = ot_buf(&o, x, 4 * n);
  g_be->rope(g_be, s, B, T, nh, nkv, hd, pos0, 10000.0f, +1);
  rope_loss(&p);
  float *y = ot_get(&o, s, n);
  ot_close("rope fwd", y, p.out, n, FWD_RTOL, FWD_ATOL);
  /* dir = −1 applied to dout = w must give dL/dx (the adjoint of the rotation) */
  tz_slice sw = ot_buf(&o, w, 4 * n);
  g_be->rope(g_be, sw, B, T, nh, nkv, hd, pos0, 10000.0f, -1);
  double *g = malloc(n * sizeof(double));
  numgrad(rope_loss, &p, p.x, n, g);
  float *dx = ot_get(&o, sw, n);
  ot_close("rope bwd (dir=-1)", dx, g, n, GRAD_RTOL, GRAD_ATOL);
  free(x), free(w), free(p.x), free(p.w), free(p.out), free(y), free(g), free(dx);
  ot_release(&o);
}

/* ---------------------------------------------------------------- attention */
typedef struct {
  int B, T, nh, nkv, hd;
  double *qkv, *w, *out, *lse;
} att_p;
/* Reference causal GQA attention on a fused qkv buffer [B*T, (nh+2nkv)*hd]. */
static double att_loss(void *v) {
  att_p *p = v;
  int W = (p->nh + 2 * p->nkv) * p->hd, C = p->nh * p->hd, rep = p->nh / p->nkv;
  double sc = 1.0 / sqrt((double)p->hd), s[64];
  for (int b = 0; b < p->B; b++)
    for (int h = 0; h < p->nh; h++)
      for (int t = 0; t < p->T; t++) {
        const double *q = p->qkv + (size_t)(b * p->T + t) * W + h * p->hd;
        int ko = (p->nh + h / rep) * p->hd, vo = (p->nh + p->nkv + h / rep) * p->hd;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= t; j++) {
          const double *k = p->qkv + (size_t)(b * p->T + j) * W + ko;
          s[j] = 0;
          for (int i = 0; i < p->hd; i++) s[j] += q[i] * k[i] * sc;
          mx = fmax(mx, s[j]);
        }
        for (int j = 0; j <= t; j++) sum += exp(s[j] - mx);
        double *o = p->out + (size_t)(b * p->T + t) * C + h * p->hd;
        for (int i = 0; i < p->hd; i++) {
          o[i] = 0;
          for (int j = 0; j <= t; j++)
            o[i] += exp(s[j] - mx) / sum * p->qkv[(size_t)(b * p->T + j) * W + vo + i];
        }
        p->lse[(b * p->nh + h) * p->T + t] = mx + log(sum);
      }
  return dot(p->w, p->out, (size_t)p->B * p->T * C);
}
static void run_attention(int B, int T, int nh, int nkv, int hd) {
  ot_ctx o;
  ot_init(&o, g_be, 40 + T * 7 + nkv);
  int W = (nh + 2 * nkv) * hd, C = nh * hd;
  size_t n = (size_t)B * T * W, no = (size_t)B * T * C, nl = (size_t)B * nh * T;
  float *qkv = ot_randn(&o, n, 1), *w = ot_randn(&o, no, 1), *junk = ot_randn(&o, n, 100);
  att_p p = {B, T, nh, nkv, hd, ot_dbl(qkv, n), ot_dbl(w, no), malloc(no * sizeof(double)),
             malloc(nl * sizeof(double))};
  tz_slice s_qkv = ot_buf(&o, qkv, 4 * n), s_out = ot_buf(&o, NULL, 4 * no),
           s_lse = ot_buf(&o, NULL, 4 * nl);
  tz_slice q = s_qkv, k = tz_f32(s_qkv, nh * hd), vv = tz_f32(s_qkv, (nh + nkv) * hd);
  g_be->attention_fwd(g_be, s_out, s_lse, q, k, vv, B, T, T, 0, nh, nkv, hd, W, W);
  att_loss(&p);
  float *out = ot_get(&o, s_out, no), *lse = ot_get(&o, s_lse, nl);
  ot_close("attention fwd out", out, p.out, no, FWD_RTOL, FWD_ATOL);
  ot_close("attention fwd lse", lse, p.lse, nl, FWD_RTOL, FWD_ATOL);

  tz_slice s_d = ot_buf(&o, junk, 4 * n); /* garbage: dq, dk, dv must be written (=) */
  g_be->attention_bwd(g_be, s_d, tz_f32(s_d, nh * hd), tz_f32(s_d, (nh + nkv) * hd),
                      ot_buf(&o, w, 4 * no), q, k, vv, s_out, s_lse, B, T, nh, nkv, hd, W, W);
  double *g = malloc(n * sizeof(double));
  numgrad(att_loss, &p, p.qkv, n, g);
  float *d = ot_get(&o, s_d, n);
  ot_close("attention dq|dk|dv (=)", d, g, n, GRAD_RTOL, GRAD_ATOL);
  free(qkv), free(w), free(junk), free(p.qkv), free(p.w), free(p.out), free(p.lse), free(out);
  free(lse), free(g), free(d);
  ot_release(&o);
}
static void test_attention_gqa2(void **state) { run_attention(2, 5, 4, 2, 6); }
static void test_attention_mqa(void **state) { run_attention(2, 7, 4, 1, 3); }
static void test_attention_t1(void **state) { run_attention(2, 1, 4, 2, 4); }
static void test_attention_mha(void **state) { run_attention(1, 6, 2, 2, 5); }

/* ---------------------------------------------------------------- gelu / swiglu */
typedef struct {
  int N, F, kind; /* kind 0: gelu over N elements; 1: swiglu [N, 2F] -> [N, F] */
  double *x, *w, *out;
} act_p;
static double act_loss(void *v) {
  act_p *p = v;
  if (p->kind == 0) {
    for (int i = 0; i < p->N; i++) {
      double x = p->x[i];
      p->out[i] = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    }
    return dot(p->w, p->out, p->N);
  }
  for (int n = 0; n < p->N; n++)
    for (int f = 0; f < p->F; f++) {
      double g = p->x[n * 2 * p->F + f], u = p->x[n * 2 * p->F + p->F + f];
      p->out[n * p->F + f] = g / (1 + exp(-g)) * u;
    }
  return dot(p->w, p->out, (size_t)p->N * p->F);
}
static void test_gelu(void **state) {
  ot_ctx o;
  ot_init(&o, g_be, 50);
  int n = 41;
  float *x = ot_randn(&o, n, 2), *w = ot_randn(&o, n, 1), *junk = ot_randn(&o, n, 100);
  x[0] = 30, x[1] = -30, x[2] = 150, x[3] = -150, x[4] = 0; /* saturated and clamped zones */
  act_p p = {n, 0, 0, ot_dbl(x, n), ot_dbl(w, n), malloc(n * sizeof(double))};
  tz_slice s_x = ot_buf(&o, x, 4 * n), s_y = ot_buf(&o, NULL, 4 * n), s_d = ot_buf(&o, junk, 4 * n);
  g_be->gelu_fwd(g_be, s_y, s_x, n);
  act_loss(&p);
  float *y = ot_get(&o, s_y, n);
  ot_close("gelu fwd", y, p.out, n, FWD_RTOL, FWD_ATOL);
  g_be->gelu_bwd(g_be, s_d, s_x, ot_buf(&o, w, 4 * n), n);
  double *g = malloc(n * sizeof(double));
  numgrad(act_loss, &p, p.x, n, g);
  float *d = ot_get(&o, s_d, n);
  ot_close("gelu bwd (=)", d, g, n, GRAD_RTOL, GRAD_ATOL);
  free(x), free(w), free(junk), free(p.x), free(p.w), free(p.out), free(y), free(g), free(d);
  ot_release(&o);
}
static void test_swiglu(void **state) {
  ot_ctx o;
  ot_init(&o, g_be, 60);
  int N = 3, F = 11;
  size_t ni = (size_t)N * 2 * F, no = (size_t)N * F;
  float *x = ot_randn(&o, ni, 2), *w = ot_randn(&o, no, 1), *junk = ot_randn(&o, ni, 100);
  x[0] = 30, x[1] = -30, x[2] = 90, x[3] = -90, x[F] = 30, x[F + 1] = -30; /* |gate| large */
  act_p p = {N, F, 1, ot_dbl(x, ni), ot_dbl(w, no), malloc(no * sizeof(double))};
  tz_slice s_x = ot_buf(&o, x, 4 * ni), s_y = ot_buf(&o, NULL, 4 * no), s_d = ot_buf(&o, junk, 4 * ni);
  g_be->swiglu_fwd(g_be, s_y, s_x, N, F);
  act_loss(&p);
  float *y = ot_get(&o, s_y, no);
  ot_close("swiglu fwd", y, p.out, no, FWD_RTOL, FWD_ATOL);
  g_be->swiglu_bwd(g_be, s_d, ot_buf(&o, w, 4 * no), s_x, N, F);
  double *g = malloc(ni * sizeof(double));
  numgrad(act_loss, &p, p.x, ni, g);
  float *d = ot_get(&o, s_d, ni);
  for (size_t i = 0; i < ni; i++) assert_false(isnan(d[i]));
  ot_close("swiglu bwd (=)", d, g, ni, GRAD_RTOL, GRAD_ATOL);
  free(x), free(w), free(junk), free(p.x), free(p.w), free(p.out), free(y), free(g), free(d);
  ot_release(&o);
}

/* ---------------------------------------------------------------- cross-entropy */
typedef struct {
  int N, V, Vp;
  const int *y;
  double dscale, *z, *loss;
} ce_p;
/* L = dscale · Σ_counted-rows loss_n: its gradient is what the kernel writes into logits. */
static double ce_loss(void *v) {
  ce_p *p = v;
  double L = 0;
  for (int n = 0; n < p->N; n++) {
    p->loss[n] = 0;
    if (p->y[n] < 0) continue;
    double mx = -INFINITY, s = 0;
    for (int c = 0; c < p->V; c++) mx = fmax(mx, p->z[n * p->Vp + c]);
    for (int c = 0; c < p->V; c++) s += exp(p->z[n * p->Vp + c] - mx);
    p->loss[n] = mx + log(s) - p->z[n * p->Vp + p->y[n]];
    L += p->dscale * p->loss[n];
  }
  return L;
}
static void test_crossentropy(void **state) {
  ot_ctx o;
  ot_init(&o, g_be, 70);
  int N = 5, V = 11, Vp = 16, y[5] = {3, -1, 10, 0, 3};
  size_t n = (size_t)N * Vp;
  float *z = ot_randn(&o, n, 3);
  z[2 * Vp + 4] = 40; /* a dominant logit: the max subtraction matters */
  ce_p p = {N, V, Vp, y, 0.37, ot_dbl(z, n), malloc(N * sizeof(double))};
  tz_slice s_z = ot_buf(&o, z, 4 * n), s_l = ot_buf(&o, NULL, 4 * N);
  g_be->crossentropy(g_be, s_l, s_z, ot_buf(&o, y, sizeof y), N, V, Vp, 0.37f);
  ce_loss(&p);
  float *loss = ot_get(&o, s_l, N);
  ot_close("crossentropy losses", loss, p.loss, N, FWD_RTOL, FWD_ATOL);
  double *g = malloc(n * sizeof(double));
  numgrad(ce_loss, &p, p.z, n, g); /* padding and the ignored row have gradient 0 */
  float *d = ot_get(&o, s_z, n);
  for (int c = 0; c < Vp; c++) assert_true(d[1 * Vp + c] == 0.0f);
  for (int r = 0; r < N; r++)
    for (int c = V; c < Vp; c++) assert_true(d[r * Vp + c] == 0.0f);
  ot_close("crossentropy dlogits", d, g, n, GRAD_RTOL, GRAD_ATOL);
  free(z), free(p.z), free(p.loss), free(loss), free(g), free(d);
  ot_release(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embed_gpt2),     cmocka_unit_test(test_embed_llama),
      cmocka_unit_test(test_rmsnorm),        cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_linear_c),       cmocka_unit_test(test_linear_blas),
      cmocka_unit_test(test_rope),           cmocka_unit_test(test_attention_gqa2),
      cmocka_unit_test(test_attention_mqa),  cmocka_unit_test(test_attention_t1),
      cmocka_unit_test(test_attention_mha),  cmocka_unit_test(test_gelu),
      cmocka_unit_test(test_swiglu),         cmocka_unit_test(test_crossentropy),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
