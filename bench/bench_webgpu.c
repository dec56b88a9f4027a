/* WebGPU benchmarks (GPU machine):
 *   bench_webgpu matmul [S]          f32 matmul (dX = dY·W form) at S³ (8192): TFLOP/s, median
 *                                    of 5 after a warm-up, spot-checked against fp64 dots
 *   bench_webgpu shapes [Ntok]       the three forms at GPT-2 124M's matmul shapes for Ntok = B·T
 *                                    tokens (16384), lm_head padded (50304) and not (50257):
 *                                    median ms, TFLOP/s, fp64 spot check, the step's total
 *   bench_webgpu swiglu [N C F]      the SwiGLU down projection's weight gradient dW [C,F] from
 *                                    dY [N,C] (N = B·T, default 16384 768 2048): matmul_at on the
 *                                    stored silu(g)⊙u, swiglu_fwd + matmul_at (recomputed), and
 *                                    the fused matmul_at_swiglu_a; median ms of 5
 *   bench_webgpu attention [B T hd]  causal attention fwd and bwd (fused qkv rows, n_head =
 *                                    768 / hd, default 16 1024 and hd 64, 32, 128 in turn; hd 0
 *                                    = all three): median ms of 5 after a warm-up and TFLOP/s
 *                                    counting the causal half (fwd 2·B·H·T²·hd, bwd 2.5× that);
 *                                    TEZGAH_WEBGPU_ATTN=fallback times the general kernels;
 *                                    TEZGAH_PROFILE=1 adds the per-kernel table (ms per fwd +
 *                                    bwd pair) of each head_dim's timed calls
 *   bench_webgpu embed_bwd [B T [shard.bin]]  embed_backward at GPT-2 124M's tables (V 50257,
 *                                    C 768, wpe T rows; default B 16, T 1024): token ids from an
 *                                    llm.c shard (its first B·T tokens: real text's repeats) or,
 *                                    without one, Zipf-distributed (s = 1, ranks scattered over
 *                                    the ids); median ms of 20 after a warm-up, GB/s of the
 *                                    compulsory bytes (dout read once, tokens, the touched dwte
 *                                    rows and dwpe read and written), and a check against
 *                                    host sums in position order (the CPU backend's order);
 *                                    TEZGAH_PROFILE=1 adds the per-kernel table of the timed calls
 *   bench_webgpu train [B T steps [arch]]  GPT-2 124M shape (L12 C768 H12 V50257→50304), f32:
 *                                    tokens/s (median step), TEZGAH_PROFILE=1 adds the
 *                                    per-kernel GPU time table of the timed steps; arch llama:
 *                                    the same sizes as llama (RMSNorm, RoPE, SwiGLU d_ff 2048,
 *                                    no biases, tied; torch_gpt.py --arch llama) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/shard.h"
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

/* The matmul forms at GPT-2 124M's shapes (C 768, 4C, 3C, Vp 50304 and the unaligned V 50257) for
 * Ntok = B·T tokens: median ms of 5 after a warm-up, TFLOP/s, spot-checked against fp64 dots,
 * and the step total (each layer shape × 12 layers, lm_head once). */
static int bench_shapes(tz_backend *be, int Nt) {
  enum { L = 12 };
  struct {
    const char *name;
    int form, M, K, N, bias, count; /* form 0 matmul_t, 1 matmul, 2 matmul_at */
  } sh[] = {
      {"fwd qkv", 0, Nt, 768, 2304, 1, L},           {"fwd proj", 0, Nt, 768, 768, 1, L},
      {"fwd fc", 0, Nt, 768, 3072, 1, L},            {"fwd fcproj", 0, Nt, 3072, 768, 1, L},
      {"fwd lm_head Vp", 0, Nt, 768, 50304, 0, 1},   {"fwd lm_head V", 0, Nt, 768, 50257, 0, 0},
      {"dX lm_head Vp", 1, Nt, 50304, 768, 0, 1},    {"dX lm_head V", 1, Nt, 50257, 768, 0, 0},
      {"dX fcproj", 1, Nt, 768, 3072, 0, L},         {"dX fc", 1, Nt, 3072, 768, 0, L},
      {"dX proj", 1, Nt, 768, 768, 0, L},            {"dX qkv", 1, Nt, 2304, 768, 0, L},
      {"dW lm_head Vp", 2, 50304, Nt, 768, 0, 1},    {"dW lm_head V", 2, 50257, Nt, 768, 0, 0},
      {"dW fcproj", 2, 768, Nt, 3072, 0, L},         {"dW fc", 2, 3072, Nt, 768, 0, L},
      {"dW proj", 2, 768, Nt, 768, 0, L},            {"dW qkv", 2, 2304, Nt, 768, 0, L},
  };
  int ns = (int)(sizeof sh / sizeof sh[0]);
  size_t na = (size_t)Nt * 50304, nb = (size_t)50304 * 768, blk = 1 << 22;
  if ((size_t)Nt * 3072 > nb) nb = (size_t)Nt * 3072;
  float *h = malloc(blk * 4);
  tz_rng r;
  tz_rng_seed(&r, 7, 8);
  for (size_t i = 0; i < blk; i++) h[i] = tz_rng_normal(&r);
  tz_buf *A = be->alloc(be, na * 4, "a"), *Bb = be->alloc(be, nb * 4, "b"), *O = be->alloc(be, (na > (size_t)50304 * 768 ? na : (size_t)50304 * 768) * 4, "out"),
         *Bi = be->alloc(be, 50304 * 4, "bias");
  if (!A || !Bb || !O || !Bi) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  /* a and b repeat one block of 4M normals (period 4M: no dot product here sees a repeat
   * pattern that could hide an indexing error, as 4M is not a multiple of the row lengths) */
  for (size_t i = 0; i < na; i += blk) be->upload(be, (tz_slice){A, i * 4}, h, (na - i < blk ? na - i : blk) * 4);
  for (size_t i = 0; i < nb; i += blk - 12345)
    be->upload(be, (tz_slice){Bb, i * 4}, h + 12345, (nb - i < blk - 12345 ? nb - i : blk - 12345) * 4);
  be->upload(be, (tz_slice){Bi, 0}, h + 777, 50304 * 4);
  double step = 0, step_fl = 0;
  for (int s_ = 0; s_ < ns; s_++) {
    int M = sh[s_].M, K = sh[s_].K, N = sh[s_].N, f = sh[s_].form;
    tz_slice sa = {A, 0}, sb = {Bb, 0}, so = {O, 0}, sbias = sh[s_].bias ? (tz_slice){Bi, 0} : TZ_NONE;
    double t[5];
    for (int i = -1; i < 5; i++) {
      be->sync(be);
      double t0 = now();
      if (f == 0) be->matmul_t(be, so, sa, sb, sbias, M, K, N, 0);
      if (f == 1) be->matmul(be, so, sa, sb, M, K, N, 0);
      if (f == 2) be->matmul_at(be, so, sa, sb, M, K, N, 0);
      be->sync(be);
      if (i >= 0) t[i] = now() - t0;
    }
    qsort(t, 5, sizeof *t, cmpd);
    double worst = 0;
    for (int k = 0; k < 6; k++) {
      size_t m = (size_t)(k * 7919 + 3) % M, j = (size_t)(k * 3571 + 11) % N;
      float got;
      be->download(be, &got, (tz_slice){O, (m * N + j) * 4}, 4);
      double sum = sh[s_].bias ? h[777 + j] : 0, mag = fabs(sum);
      for (int q = 0; q < K; q++) {
        size_t ia = f == 2 ? (size_t)q * M + m : m * K + q, ib = f == 0 ? j * K + q : (size_t)q * N + j;
        double x = h[ia % blk], y = h[12345 + ib % (blk - 12345)];
        sum += x * y, mag += fabs(x * y);
      }
      double e = fabs(got - sum) / mag;
      if (e > worst) worst = e;
    }
    double fl = 2.0 * M * N * (double)K;
    printf("shape %-15s %-9s M %5d K %5d N %5d: median %8.3f ms, %5.1f TFLOP/s (max err/Σ|ab| %.1e)%s\n",
           sh[s_].name, f == 0 ? "matmul_t" : f == 1 ? "matmul" : "matmul_at", M, K, N, t[2] * 1e3,
           fl / t[2] / 1e12, worst, worst > 1e-5 ? "  WRONG" : "");
    step += sh[s_].count * t[2], step_fl += sh[s_].count * fl;
  }
  printf("shapes: GPT-2 124M step's matmuls (Ntok %d): %.1f ms, %.1f TFLOP/s\n", Nt, step * 1e3, step_fl / step / 1e12);
  be->free(be, A), be->free(be, Bb), be->free(be, O), be->free(be, Bi);
  free(h);
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
  tz_webgpu_profile_reset(be); /* TEZGAH_PROFILE=1: the kernels of the 6 calls of each kind below */
  for (int kind = 0; kind < 2; kind++)
    for (int i = -1; i < 5; i++) {
      be->sync(be);
      double t0 = now();
      if (kind == 0) be->attention_fwd(be, so, sl, q, k, v, B, T, T, 0, H, H, hd, 3 * C, 3 * C);
      else be->attention_bwd(be, dq, dk, dv, sd, q, k, v, so, sl, B, T, H, H, hd, 3 * C, 3 * C);
      be->sync(be);
      if (i >= 0) t[kind][i] = now() - t0;
    }
  tz_webgpu_profile_print(be, 6); /* per forward + backward pair */
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
         getenv("TEZGAH_WEBGPU_ATTN_RG") ? " [TEZGAH_WEBGPU_ATTN_RG set]" : "");
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

/* embed_bwd at GPT-2 124M's tables (see the header). */
static int bench_embed_bwd(tz_backend *be, int B, int T, const char *shard) {
  const int V = 50257, C = 768;
  size_t N = (size_t)B * T, nte = (size_t)V * C, npe = (size_t)T * C, nd = N * C;
  int32_t *tok = malloc(N * sizeof *tok);
  if (shard) {
    uint16_t *ids;
    size_t n;
    if (tz_shard_read(shard, V, &ids, &n)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
    if (n < N) return fprintf(stderr, "%s: %zu tokens, fewer than B·T = %zu\n", shard, n, N), 1;
    for (size_t i = 0; i < N; i++) tok[i] = ids[i];
    free(ids);
  } else { /* Zipf s = 1: P(rank r) ∝ 1/(r+1); rank r is id (r·7919) mod V (7919 is prime to V) */
    double *cdf = malloc(V * sizeof *cdf), z = 0;
    for (int r = 0; r < V; r++) cdf[r] = (z += 1.0 / (r + 1));
    tz_rng rg;
    tz_rng_seed(&rg, 9, 9);
    for (size_t i = 0; i < N; i++) {
      double u = tz_rng_uniform(&rg) * z;
      int lo = 0, hi = V - 1;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cdf[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      tok[i] = (int32_t)((uint64_t)lo * 7919 % V);
    }
    free(cdf);
  }
  int *cnt = calloc(V, sizeof *cnt), distinct = 0, most = 0;
  for (size_t i = 0; i < N; i++)
    if (cnt[tok[i]]++ == 0) distinct++;
  for (int v = 0; v < V; v++) most = cnt[v] > most ? cnt[v] : most;
  float *h = malloc(nd * 4);
  tz_rng r;
  tz_rng_seed(&r, 3, 3);
  for (size_t i = 0; i < nd; i++) h[i] = tz_rng_normal(&r);
  tz_buf *dout = be->alloc(be, nd * 4, "dout"), *tk = be->alloc(be, N * 4, "tokens"),
         *dte = be->alloc(be, nte * 4, "dwte"), *dpe = be->alloc(be, npe * 4, "dwpe");
  if (!dout || !tk || !dte || !dpe) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_slice sd = {dout, 0}, st = {tk, 0}, ste = {dte, 0}, spe = {dpe, 0};
  be->upload(be, sd, h, nd * 4);
  be->upload(be, st, tok, N * 4);
  /* check: one call on zeroed tables against host sums in position order */
  be->embed_bwd(be, ste, spe, sd, st, B, T, C, V);
  be->sync(be);
  float *gte = malloc(nte * 4), *gpe = malloc(npe * 4), *rte = calloc(nte, 4), *rpe = calloc(npe, 4);
  for (size_t n = 0; n < N; n++)
    for (int c = 0; c < C; c++) {
      rte[(size_t)tok[n] * C + c] += h[n * C + c];
      rpe[(n % T) * C + c] += h[n * C + c];
    }
  be->download(be, gte, ste, nte * 4);
  be->download(be, gpe, spe, npe * 4);
  size_t differ = 0;
  double worst = 0;
  for (size_t i = 0; i < nte + npe; i++) {
    float g = i < nte ? gte[i] : gpe[i - nte], w = i < nte ? rte[i] : rpe[i - nte];
    if (memcmp(&g, &w, 4)) differ++;
    double e = fabs((double)g - w) / (1 + fabs(w));
    worst = e > worst ? e : worst;
  }
  double t[20];
  for (int i = -3; i < 20; i++) {
    if (i == 0) tz_webgpu_profile_reset(be); /* TEZGAH_PROFILE=1: the timed calls' kernels */
    be->sync(be);
    double t0 = now();
    be->embed_bwd(be, ste, spe, sd, st, B, T, C, V);
    be->sync(be);
    if (i >= 0) t[i] = now() - t0;
  }
  tz_webgpu_profile_print(be, 20);
  qsort(t, 20, sizeof *t, cmpd);
  double bytes = nd * 4.0 + N * 4.0 + (double)distinct * C * 8 + npe * 8.0;
  printf("embed_bwd B=%d T=%d V=%d C=%d f32, ids %s (%d distinct, most frequent %d times): median %.3f ms, "
         "%.2f GB/s; %zu of %zu elements differ from position-order sums (max rel %.1e)\n",
         B, T, V, C, shard ? shard : "Zipf s=1", distinct, most, t[10] * 1e3, bytes / t[10] / 1e9, differ,
         nte + npe, worst);
  be->free(be, dout), be->free(be, tk), be->free(be, dte), be->free(be, dpe);
  free(tok), free(cnt), free(h), free(gte), free(gpe), free(rte), free(rpe);
  return 0;
}

static int bench_train(tz_backend *be, int B, int T, int steps, const char *arch) {
  tz_config c = {0};
  int llama = !strcmp(arch, "llama");
  c.arch = llama ? TZ_ARCH_LLAMA : TZ_ARCH_GPT2;
  c.n_layer = 12, c.n_head = 12, c.d_model = 768, c.vocab_size = 50257, c.max_seq_len = T > 1024 ? T : 1024, c.tied = 1;
  if (llama) c.d_ff = 2048;
  if (tz_config_finalize(&c)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_model *m;
  if (tz_model_create(be, &c, &m)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  tz_model_init_weights(m, 1);
  if (tz_model_alloc_training(m, B, T)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  printf("activations: %.1f MiB in %d buffer%s (%s)\n", m->train.bytes / 1048576.0, m->train.nbufs,
         m->train.nbufs == 1 ? "" : "s", be->act_buffers ? "one per tensor" : "one arena: TEZGAH_WEBGPU_ARENA=1");
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
  printf("%s B=%d T=%d f32 webgpu: median step %.1f ms, %.0f tokens/s\n", llama ? "llama (gpt2-124M sizes, d_ff 2048)" : "gpt2-124M",
         B, T, dt[steps / 2] * 1e3, N / dt[steps / 2]);
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
  if (!strcmp(mode, "shapes")) rc = bench_shapes(be, argc > 2 ? atoi(argv[2]) : 16384);
  else if (!strcmp(mode, "matmul")) rc = bench_matmul(be, argc > 2 ? atoi(argv[2]) : 8192);
  else if (!strcmp(mode, "attention"))
    rc = bench_attention(be, argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1024,
                         argc > 4 ? atoi(argv[4]) : 0);
  else if (!strcmp(mode, "swiglu"))
    rc = bench_swiglu(be, argc > 2 ? atoi(argv[2]) : 16384, argc > 3 ? atoi(argv[3]) : 768,
                      argc > 4 ? atoi(argv[4]) : 2048);
  else if (!strcmp(mode, "embed_bwd"))
    rc = bench_embed_bwd(be, argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1024,
                         argc > 4 ? argv[4] : NULL);
  else
    rc = bench_train(be, argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1024,
                     argc > 4 ? atoi(argv[4]) : 10, argc > 5 ? argv[5] : "gpt2");
  be->destroy(be);
  return rc;
}
