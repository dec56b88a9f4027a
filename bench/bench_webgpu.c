/* WebGPU benchmarks (GPU machine):
 *   bench_webgpu matmul [S]          f32 matmul (dX = dY·W form) at S³ (8192): TFLOP/s, median
 *                                    of 5 after a warm-up, spot-checked against fp64 dots
 *   bench_webgpu swiglu [N C F]      the SwiGLU down projection's weight gradient dW [C,F] from
 *                                    dY [N,C] (N = B·T, default 16384 768 2048): matmul_at on the
 *                                    stored silu(g)⊙u, swiglu_fwd + matmul_at (recomputed), and
 *                                    the fused matmul_at_swiglu_a; median ms of 5
 *   bench_webgpu attention [B T hd]  causal attention fwd and bwd (fused qkv rows, n_head =
 *                                    768 / hd, default 16 1024 and hd 64, 32, 128 in turn; hd 0
 *                                    = all three): median ms of 5 after a warm-up and TFLOP/s
 *                                    counting the causal half (fwd 2·B·H·T²·hd, bwd 2.5× that);
 *                                    TEZGAH_WEBGPU_ATTN=fallback times the general kernels
 *   bench_webgpu train [B T steps]   GPT-2 124M shape (L12 C768 H12 V50257→50304), f32:
 *                                    tokens/s (median step), TEZGAH_PROFILE=1 adds the
 *                                    per-kernel GPU time table of the timed steps */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/model.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int bench_matmul(tz_backend *be, int S) {
  size_t n = (size_t)S * S;
  float *a = malloc(n * 4), *b = malloc(n * 4);
  tz_rng r;
  tz_rng_seed(&r, 1, 2);
  for (size_t i = 0; i < n; i++) a[i] = tz_rng_normal(&r), b[i] = tz_rng_normal(&r);
  tz_buf *A = be->alloc(be, n * 4, "a"), *Bb = be->alloc(be, n * 4, "b"), *C = be->alloc(be, n * 4, "c");
  if (!A || !Bb || !C) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_slice sa = {A, 0}, sb = {Bb, 0}, sc = {C, 0};
  be->upload(be, sa, a, n * 4);
  be->upload(be, sb, b, n * 4);
  const char *names[] = {"matmul_t", "matmul", "matmul_at"};
  for (int kind = 0; kind < 3; kind++) {
    double t[5];
    for (int i = -1; i < 5; i++) {
      be->sync(be);
      double t0 = now();
      if (kind == 0) be->matmul_t(be, sc, sa, sb, TZ_NONE, S, S, S, 0);
      if (kind == 1) be->matmul(be, sc, sa, sb, S, S, S, 0);
      if (kind == 2) be->matmul_at(be, sc, sa, sb, S, S, S, 0);
      be->sync(be);
      if (i >= 0) t[i] = now() - t0;
    }
    qsort(t, 5, sizeof *t, cmpd);
    /* spot check 8 elements */
    float *c = malloc(n * 4);
    be->download(be, c, sc, n * 4);
    double worst = 0;
    for (int k = 0; k < 8; k++) {
      size_t m = (size_t)(k * 1237) % S, j = (size_t)(k * 3571 + 11) % S;
      double s = 0, mag = 0;
      for (int q = 0; q < S; q++) {
        double x = kind == 2 ? a[(size_t)q * S + m] : a[m * S + q];
        double y = kind == 0 ? b[j * S + q] : b[(size_t)q * S + j];
        s += x * y, mag += fabs(x * y);
      }
      double e = fabs(c[m * S + j] - s) / mag;
      if (e > worst) worst = e;
    }
    free(c);
    printf("matmul %-9s %d^3 f32: median %.3f ms, %.1f TFLOP/s (max err/Σ|ab| %.1e)\n", names[kind], S,
           t[2] * 1e3, 2.0 * S * S * (double)S / t[2] / 1e12, worst);
  }
  be->free(be, A), be->free(be, Bb), be->free(be, C);
  free(a), free(b);
  return 0;
}

static int bench_swiglu(tz_backend *be, int N, int C, int F) {
  if (!be->matmul_at_swiglu_a) return fprintf(stderr, "no matmul_at_swiglu_a\n"), 1;
  size_t ndy = (size_t)N * C, ngu = (size_t)N * 2 * F;
  float *h = malloc(ngu * 4);
  tz_rng r;
  tz_rng_seed(&r, 3, 4);
  for (size_t i = 0; i < ngu; i++) h[i] = tz_rng_normal(&r);
  tz_buf *dy = be->alloc(be, ndy * 4, "dy"), *gu = be->alloc(be, ngu * 4, "gu"),
         *a = be->alloc(be, (size_t)N * F * 4, "a"), *dw = be->alloc(be, (size_t)C * F * 4, "dw");
  if (!dy || !gu || !a || !dw) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_slice sdy = {dy, 0}, sgu = {gu, 0}, sa = {a, 0}, sdw = {dw, 0};
  be->upload(be, sdy, h, ndy * 4);
  be->upload(be, sgu, h, ngu * 4);
  be->swiglu_fwd(be, sa, sgu, N, F);
  const char *names[] = {"matmul_at (stored a)", "swiglu_fwd + matmul_at", "matmul_at_swiglu_a (fused)"};
  for (int kind = 0; kind < 3; kind++) {
    double t[5];
    for (int i = -1; i < 5; i++) {
      be->sync(be);
      double t0 = now();
      if (kind == 1) be->swiglu_fwd(be, sa, sgu, N, F);
      if (kind < 2) be->matmul_at(be, sdw, sdy, sa, C, N, F, 1);
      else be->matmul_at_swiglu_a(be, sdw, sdy, sgu, C, N, F, 1);
      be->sync(be);
      if (i >= 0) t[i] = now() - t0;
    }
    qsort(t, 5, sizeof *t, cmpd);
    printf("dW_down N=%d C=%d F=%d %-27s median %.3f ms, %.1f TFLOP/s\n", N, C, F, names[kind], t[2] * 1e3,
           2.0 * N * C * (double)F / t[2] / 1e12);
  }
  be->free(be, dy), be->free(be, gu), be->free(be, a), be->free(be, dw);
  free(h);
  return 0;
}

static int bench_attention_hd(tz_backend *be, int B, int T, int hd) {
  int H = 768 / hd, C = H * hd;
  size_t N = (size_t)B * T, nq = N * 3 * C, no = N * C, nl = (size_t)B * H * T;
  float *h = malloc(nq * 4);
  tz_rng r;
  tz_rng_seed(&r, 7, 8);
  for (size_t i = 0; i < nq; i++) h[i] = tz_rng_normal(&r);
  tz_buf *qkv = be->alloc(be, nq * 4, "qkv"), *out = be->alloc(be, no * 4, "out"), *lse = be->alloc(be, nl * 4, "lse"),
         *dout = be->alloc(be, no * 4, "dout"), *dqkv = be->alloc(be, nq * 4, "dqkv");
  if (!qkv || !out || !lse || !dout || !dqkv) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_slice q = {qkv, 0}, k = tz_f32(q, C), v = tz_f32(q, 2 * C), so = {out, 0}, sl = {lse, 0}, sd = {dout, 0},
           dq = {dqkv, 0}, dk = tz_f32(dq, C), dv = tz_f32(dq, 2 * C);
  be->upload(be, q, h, nq * 4);
  be->upload(be, sd, h, no * 4);
  /* warm-up: compile the pipelines and bring the clocks up (about half a second of work) */
  for (double w0 = now(); now() - w0 < 0.5;) {
    be->attention_fwd(be, so, sl, q, k, v, B, T, T, 0, H, H, hd, 3 * C, 3 * C);
    be->attention_bwd(be, dq, dk, dv, sd, q, k, v, so, sl, B, T, H, H, hd, 3 * C, 3 * C);
    be->sync(be);
  }
  double fl = 2.0 * B * H * (double)T * T * hd, t[2][5];
  for (int kind = 0; kind < 2; kind++)
    for (int i = -1; i < 5; i++) {
      be->sync(be);
      double t0 = now();
      if (kind == 0) be->attention_fwd(be, so, sl, q, k, v, B, T, T, 0, H, H, hd, 3 * C, 3 * C);
      else be->attention_bwd(be, dq, dk, dv, sd, q, k, v, so, sl, B, T, H, H, hd, 3 * C, 3 * C);
      be->sync(be);
      if (i >= 0) t[kind][i] = now() - t0;
    }
  qsort(t[0], 5, sizeof(double), cmpd);
  qsort(t[1], 5, sizeof(double), cmpd);
  float *o = malloc(no * 4);
  be->download(be, o, so, no * 4);
  int finite = 1;
  for (size_t i = 0; i < no; i++) finite &= isfinite(o[i]) != 0;
  printf("attention B=%d H=%d T=%d hd=%d causal f32: fwd %.3f ms (%.1f TFLOP/s), bwd %.3f ms (%.1f TFLOP/s), "
         "fwd+bwd %.3f ms%s%s\n",
         B, H, T, hd, t[0][2] * 1e3, fl / t[0][2] / 1e12, t[1][2] * 1e3, 2.5 * fl / t[1][2] / 1e12,
         (t[0][2] + t[1][2]) * 1e3, finite ? "" : " (NON-FINITE OUTPUT)",
         getenv("TEZGAH_WEBGPU_ATTN_TX") ? " [TEZGAH_WEBGPU_ATTN_TX set]" : "");
  be->free(be, qkv), be->free(be, out), be->free(be, lse), be->free(be, dout), be->free(be, dqkv);
  free(h), free(o);
  return !finite;
}
static int bench_attention(tz_backend *be, int B, int T, int hd) {
  int rc = 0, hds[] = {64, 32, 128};
  for (int i = 0; i < 3; i++)
    if (hd == 0 || hd == hds[i]) rc |= bench_attention_hd(be, B, T, hds[i]);
  return rc;
}

static int bench_train(tz_backend *be, int B, int T, int steps) {
  tz_config c = {0};
  c.arch = TZ_ARCH_GPT2;
  c.n_layer = 12, c.n_head = 12, c.d_model = 768, c.vocab_size = 50257, c.max_seq_len = 1024, c.tied = 1;
  if (tz_config_finalize(&c)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_model *m;
  if (tz_model_create(be, &c, &m)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_model_init_weights(m, 1);
  if (tz_model_alloc_training(m, B, T)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  int N = B * T;
  int32_t *in = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
  tz_rng r;
  tz_rng_seed(&r, 5, 5);
  double *dt = malloc(sizeof(double) * steps);
  for (int s = -2; s < steps; s++) {
    if (s == 0) tz_webgpu_profile_reset(be);
    for (int i = 0; i < N; i++) in[i] = tz_rng_below(&r, 50257), tg[i] = tz_rng_below(&r, 50257);
    double t0 = now();
    tz_model_zero_grads(m);
    double loss = tz_model_train_micro(m, in, tg, 1.0f);
    double norm = tz_model_grad_norm(m);
    tz_adamw_hp hp = {6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, norm > 1 ? (float)(1 / norm) : 1.0f, s + 3};
    tz_model_adamw(m, &hp);
    be->sync(be);
    double t = now() - t0;
    if (s >= 0) dt[s] = t;
    printf("step %3d loss %.4f norm %.3f %.1f ms %.0f tok/s\n", s, loss, norm, t * 1e3, N / t);
    fflush(stdout);
  }
  tz_webgpu_profile_print(be, steps);
  qsort(dt, steps, sizeof *dt, cmpd);
  printf("gpt2-124M B=%d T=%d f32 webgpu: median step %.1f ms, %.0f tokens/s\n", B, T, dt[steps / 2] * 1e3,
         N / dt[steps / 2]);
  tz_model_free(m);
  free(in), free(tg), free(dt);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "train";
  tz_backend *be = tz_backend_create("webgpu", 0, NULL);
  if (!be) return fprintf(stderr, "bench_webgpu: %s\n", tz_errmsg()), 1;
  printf("device: %s\n", tz_webgpu_describe(be));
  int rc;
  if (!strcmp(mode, "matmul")) rc = bench_matmul(be, argc > 2 ? atoi(argv[2]) : 8192);
  else if (!strcmp(mode, "attention"))
    rc = bench_attention(be, argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1024,
                         argc > 4 ? atoi(argv[4]) : 0);
  else if (!strcmp(mode, "swiglu"))
    rc = bench_swiglu(be, argc > 2 ? atoi(argv[2]) : 16384, argc > 3 ? atoi(argv[3]) : 768,
                      argc > 4 ? atoi(argv[4]) : 2048);
  else
    rc = bench_train(be, argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1024,
                     argc > 4 ? atoi(argv[4]) : 10);
  be->destroy(be);
  return rc;
}
