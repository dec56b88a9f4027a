/* Batched decoding on CUDA (backend.h's embed_pos_fwd, rope_pos, attention_decode, pick and the
 * recorded step) against the CPU backend, which decodes row by row through embed_fwd, rope,
 * copy_rows and attention_fwd (the reference path of src/model/model.c).
 *
 * Ops:
 * - attention_decode: B = 3 rows at positions 0, 63 and 200 (with 32 keys a block, the default
 *   at 3 rows: one split, the edge of the second split, seven splits; TEZGAH_CUDA_DEC_CHUNK=64:
 *   one, the edge of the first, four) of a 256-position cache, 4 query heads on 2 kv heads, head_dim
 *   64 (bf16 and fp32) and 32 (fp32); reference: the CPU's attention_fwd with Tq = 1 at
 *   q_pos0 = pos[b] over that row's cache with the new key appended. Tolerances as
 *   test_cuda_attention.c: fp32 rtol 2e-5 atol 5e-6; bf16 (inputs rounded to bf16, the CPU
 *   fed the same values) rtol 2e-2 atol 1e-2. The new k and v must land in the cache row
 *   pos[b] bit for bit; a second launch must give bit-identical outputs; row 2 alone (B = 1)
 *   bit-identical to row 2 of the B = 3 launch (batch invariance).
 * - pick at GPT-2's width (greedy: 50,257 logits, aligned and unaligned rows, fp32 and bf16).
 * - pick: 4 rows of 1000 logits (padded to 1024) against tz_sampler_pick with the same
 *   generator: greedy, with ties (first maximal id); temperature 0.8 top-k 40; top-k 40 top-p
 *   0.9; full softmax (top-k 0); ids must be equal (fp32 logits: the same values on both
 *   sides). top-k 0 with top-p 0.9 must answer "not offered" (0). pick_dev (the draws read
 *   from device memory, the ids written to a second buffer too) must give pick's ids.
 * - norm_matmul_t: see nm_case below; tzc_mma_t (8..16 rows on the tensor cores): mma_case.
 * Model (gpt2 and llama, 2 layers, d_model 128, vocab 301, context 96, weights N(0, 0.02) × 8
 * so that logits are well separated), 3 rows of one 5-token prompt, seeded apart, 70 steps
 * (positions 5..74: the decoding attention's second 64-key split is reached):
 * - fp32, greedy: CUDA's tokens (fused step, recorded after the first step) equal the CPU's
 *   row-by-row tokens exactly; sampling (temperature 0.8, top-k 40) likewise, with each row's
 *   own seed (equal up to exp() rounding differences: none seen);
 * - bf16: two runs on fresh backends give bit-identical logits at every step, and a run with
 *   recording off (TEZGAH_CUDA_GRAPHS=0) the same bits as the recorded one;
 * - batch rows: row b of the 3-row run equals a 1-row run with row b's seed (fp32 greedy and
 *   sampling: the ids; bf16 sampling: the ids and every step's logits bit for bit, as the
 *   few-row kernels (gemv.cu, attention_decode, pick) compute a row the same way whatever B is).
 * Needs a CUDA GPU; otherwise SKIPPED (exit 77); TEZGAH_CUDA_REQUIRED=1 turns that into a
 * failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_testutil.h"
#ifdef TZ_HAVE_CUDA /* test_mma calls the backend's kernels directly (a build without CUDA skips) */
#include "backend/cuda/cuda_internal.h"
#endif
#include "model/model.h"
#include "sample/sampler.h"

static tz_backend *cpu;

static int setup(void **state) {
  (void)state;
  tz_backend *g = ct_cuda("fp32"); /* or SKIPPED (exit 77) */
  g->destroy(g);
  cpu = tz_backend_create("cpu", 2, NULL);
  assert_non_null(cpu);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cpu->destroy(cpu);
  return 0;
}

/* ---- attention_decode ---- */
static void attn_case(const char *prec, int hd) {
  tz_backend *g = tz_backend_create("cuda", 0, prec);
  assert_non_null(g);
  const int B = 3, H = 4, G = 2, maxT = 256, Q = (H + 2 * G) * hd, kvrow = G * hd;
  const int pos[3] = {0, 63, 200};
  ot_ctx o, oc;
  ot_init(&o, g, 11);
  ot_init(&oc, cpu, 12);
  size_t ncache = (size_t)B * maxT * kvrow;
  float *kc = ot_randn(&o, ncache, 1.0f), *vc = ot_randn(&o, ncache, 1.0f), *qkv = ot_randn(&o, (size_t)B * Q, 1.0f);
  ct_round(g, kc, ncache);
  ct_round(g, vc, ncache);
  ct_round(g, qkv, (size_t)B * Q);
  tz_slice dk = ct_act_upload(&o, kc, ncache), dv = ct_act_upload(&o, vc, ncache);
  tz_slice dq = ct_act_upload(&o, qkv, (size_t)B * Q), dp = ot_buf(&o, pos, sizeof pos);
  tz_slice out = ct_act_upload(&o, NULL, (size_t)B * H * hd), out2 = ct_act_upload(&o, NULL, (size_t)B * H * hd);
  g->attention_decode(g, out, dk, dv, dq, dp, B, H, G, hd, Q, maxT);
  float *got = ct_act_download(&o, out, (size_t)B * H * hd);
  float *gk = ct_act_download(&o, dk, ncache), *gv = ct_act_download(&o, dv, ncache);
  /* the second launch: caches now hold the new rows already (the same values) */
  g->attention_decode(g, out2, dk, dv, dq, dp, B, H, G, hd, Q, maxT);
  float *got2 = ct_act_download(&o, out2, (size_t)B * H * hd);
  assert_memory_equal(got, got2, (size_t)B * H * hd * sizeof(float));
  /* row 2 alone: its own one-row cache and qkv views (same bytes) */
  tz_slice dk2 = ct_act_upload(&o, gk + (size_t)2 * maxT * kvrow, (size_t)maxT * kvrow);
  tz_slice dv2 = ct_act_upload(&o, gv + (size_t)2 * maxT * kvrow, (size_t)maxT * kvrow);
  tz_slice dq2 = ct_act_upload(&o, qkv + (size_t)2 * Q, (size_t)Q), dp2 = ot_buf(&o, &pos[2], sizeof(int));
  tz_slice o3 = ct_act_upload(&o, NULL, (size_t)H * hd);
  g->attention_decode(g, o3, dk2, dv2, dq2, dp2, 1, H, G, hd, Q, maxT);
  float *got3 = ct_act_download(&o, o3, (size_t)H * hd);
  assert_memory_equal(got3, got + (size_t)2 * H * hd, (size_t)H * hd * sizeof(float));
  int bf = g->act == TZ_BF16;
  for (int b = 0; b < B; b++) {
    int P = pos[b];
    /* the new k, v in the cache, exactly */
    for (int c = 0; c < kvrow; c++) {
      assert_true(gk[((size_t)b * maxT + P) * kvrow + c] == qkv[(size_t)b * Q + H * hd + c]);
      assert_true(gv[((size_t)b * maxT + P) * kvrow + c] == qkv[(size_t)b * Q + (H + G) * hd + c]);
    }
    /* CPU reference: this row's cache with the new row, attention_fwd Tq = 1 */
    float *kr = malloc((size_t)(P + 1) * kvrow * sizeof(float)), *vr = malloc((size_t)(P + 1) * kvrow * sizeof(float));
    memcpy(kr, kc + (size_t)b * maxT * kvrow, (size_t)P * kvrow * sizeof(float));
    memcpy(vr, vc + (size_t)b * maxT * kvrow, (size_t)P * kvrow * sizeof(float));
    memcpy(kr + (size_t)P * kvrow, qkv + (size_t)b * Q + H * hd, kvrow * sizeof(float));
    memcpy(vr + (size_t)P * kvrow, qkv + (size_t)b * Q + (H + G) * hd, kvrow * sizeof(float));
    tz_slice ck = ot_buf(&oc, kr, (size_t)(P + 1) * kvrow * 4), cv = ot_buf(&oc, vr, (size_t)(P + 1) * kvrow * 4);
    tz_slice cq = ot_buf(&oc, qkv + (size_t)b * Q, (size_t)Q * 4), co = ot_buf(&oc, NULL, (size_t)H * hd * 4);
    cpu->attention_fwd(cpu, co, TZ_NONE, cq, ck, cv, 1, 1, P + 1, P, H, G, hd, Q, kvrow);
    float *ref = ot_get(&oc, co, (size_t)H * hd);
    double *rd = ot_dbl(ref, (size_t)H * hd);
    char what[64];
    snprintf(what, sizeof what, "attention_decode %s hd %d row %d", prec, hd, b);
    ct_close(what, got + (size_t)b * H * hd, rd, (size_t)H * hd, bf ? 2e-2 : 2e-5, bf ? 1e-2 : 5e-6);
    free(kr), free(vr), free(ref), free(rd);
    ot_release(&oc);
  }
  free(kc), free(vc), free(qkv), free(got), free(got2), free(got3), free(gk), free(gv);
  ot_release(&o);
  g->destroy(g);
}
static void test_attention_decode(void **state) {
  (void)state;
  attn_case("fp32", 64);
  attn_case("fp32", 32);
  attn_case("bf16", 64);
}

/* ---- pick ---- */
static void pick_case(tz_backend *g, const float *logits, int B, int V, int Vp, float temp, int top_k, float top_p,
                      const char *what) {
  ot_ctx o;
  ot_init(&o, g, 5);
  tz_slice dl = ct_act_upload(&o, logits, (size_t)B * Vp), dout = ot_buf(&o, NULL, (size_t)B * 4);
  tz_slice dout2 = ot_buf(&o, NULL, (size_t)B * 4), dids = ot_buf(&o, NULL, (size_t)B * 4),
           dr = ot_buf(&o, NULL, (size_t)B * 8);
  tz_sampler sg[4], sh[4];
  double r[4];
  for (int b = 0; b < B; b++) {
    tz_sampler_init(&sg[b], V, temp, top_k, top_p, 100 + b);
    tz_sampler_init(&sh[b], V, temp, top_k, top_p, 100 + b);
  }
  for (int round = 0; round < 5; round++) {
    for (int b = 0; b < B; b++) r[b] = temp > 0 ? tz_rng_uniform(&sg[b].rng) : 0.0;
    assert_int_equal(g->pick(g, dout, dl, B, V, Vp, temp, top_k, top_p, r), 1);
    int32_t ids[4];
    g->download(g, ids, dout, (size_t)B * 4);
    if (g->pick_dev) { /* the device loop's form: draws from device memory, ids also to a second buffer */
      g->upload(g, dr, r, (size_t)B * sizeof *r);
      assert_int_equal(g->pick_dev(g, dout2, dl, B, V, Vp, temp, top_k, top_p, temp > 0 ? dr : TZ_NONE, dids), 1);
      int32_t i2[4], i3[4];
      g->download(g, i2, dout2, (size_t)B * 4);
      g->download(g, i3, dids, (size_t)B * 4);
      for (int b = 0; b < B; b++)
        if (i2[b] != ids[b] || i3[b] != ids[b]) {
          print_error("pick_dev %s: row %d round %d: %d and %d, pick %d\n", what, b, round, i2[b], i3[b], ids[b]);
          fail();
        }
    }
    for (int b = 0; b < B; b++) {
      int want = tz_sampler_pick(&sh[b], logits + (size_t)b * Vp);
      if (ids[b] != want) {
        print_error("pick %s: row %d round %d: device %d, host %d\n", what, b, round, ids[b], want);
        fail();
      }
    }
  }
  for (int b = 0; b < B; b++) tz_sampler_free(&sg[b]), tz_sampler_free(&sh[b]);
  ot_release(&o);
}
/* Greedy picks at GPT-2's width (50,257 ids: ~50 per thread of pick_k's arg-max; fp32 and bf16,
 * rows 16-byte aligned or not) against tz_sampler_pick on the values the device holds (bf16:
 * the rounded logits). Row 0 random; row 1 its maximum in the tail (the last id); row 2 two
 * equal maxima far apart (the lower id wins) and NaN / inf entries (never picked); row 3
 * nothing finite (id 0). */
static void greedy_wide_case(const char *prec, int Vp) {
  tz_backend *g = tz_backend_create("cuda", 0, prec);
  assert_non_null(g);
  const int B = 4, V = 50257;
  ot_ctx o;
  ot_init(&o, g, 91);
  float *z = ot_randn(&o, (size_t)B * Vp, 3.0f);
  for (int b = 0; b < B; b++)
    for (int i = V; i < Vp; i++) z[(size_t)b * Vp + i] = 1e30f; /* padding must never be read */
  z[(size_t)Vp + V - 1] = 40.0f;
  z[2 * (size_t)Vp + 12345] = 41.0f, z[2 * (size_t)Vp + 40000] = 41.0f;
  z[2 * (size_t)Vp + 7] = NAN, z[2 * (size_t)Vp + 8] = INFINITY, z[2 * (size_t)Vp + 50000] = INFINITY;
  for (int i = 0; i < V; i++) z[3 * (size_t)Vp + i] = i % 2 ? NAN : -INFINITY;
  if (g->act == TZ_BF16)
    for (size_t i = 0; i < (size_t)B * Vp; i++) z[i] = ct_bf16_round(z[i]);
  char what[64];
  snprintf(what, sizeof what, "greedy %s V %d Vp %d", prec, V, Vp);
  pick_case(g, z, B, V, Vp, 0.0f, 40, 1.0f, what);
  free(z);
  ot_release(&o);
  g->destroy(g);
}
static void test_pick_greedy_wide(void **state) {
  (void)state;
  greedy_wide_case("fp32", 50304);
  greedy_wide_case("bf16", 50304);
  greedy_wide_case("fp32", 50257); /* rows not 16-byte aligned: the one-element path */
  greedy_wide_case("bf16", 50257);
}

static void test_pick(void **state) {
  (void)state;
  tz_backend *g = tz_backend_create("cuda", 0, "fp32");
  assert_non_null(g);
  const int B = 4, V = 1000, Vp = 1024;
  ot_ctx o;
  ot_init(&o, g, 77);
  float *z = ot_randn(&o, (size_t)B * Vp, 2.0f);
  for (int b = 0; b < B; b++)
    for (int i = V; i < Vp; i++) z[(size_t)b * Vp + i] = 1e30f; /* padding must never be read */
  pick_case(g, z, B, V, Vp, 0.0f, 40, 1.0f, "greedy");
  pick_case(g, z, B, V, Vp, 0.8f, 40, 1.0f, "top-k 40");
  pick_case(g, z, B, V, Vp, 0.8f, 40, 0.9f, "top-k 40 top-p 0.9");
  pick_case(g, z, B, V, Vp, 1.0f, 0, 1.0f, "full softmax");
  pick_case(g, z, B, V, Vp, 0.7f, 1000, 1.0f, "top-k = V");
  /* ties: row 0 all equal (greedy: id 0; top-k takes the lowest ids), row 1 two maxima */
  for (int i = 0; i < V; i++) z[i] = 0.5f;
  z[Vp + 17] = 9.0f, z[Vp + 400] = 9.0f;
  z[2 * Vp + 3] = NAN, z[2 * Vp + 4] = INFINITY;
  pick_case(g, z, B, V, Vp, 0.0f, 40, 1.0f, "greedy ties");
  pick_case(g, z, B, V, Vp, 0.8f, 40, 1.0f, "top-k ties");
  tz_slice dl = ct_act_upload(&o, z, (size_t)B * Vp), dout = ot_buf(&o, NULL, 16);
  double r[4] = {0.5, 0.5, 0.5, 0.5};
  assert_int_equal(g->pick(g, dout, dl, B, V, Vp, 0.8f, 0, 0.9f, r), 0); /* full sort: not offered */
  if (g->pick_dev) assert_int_equal(g->pick_dev(g, dout, dl, B, V, Vp, 0.8f, 0, 0.9f, dout, TZ_NONE), 0);
  free(z);
  ot_release(&o);
  g->destroy(g);
}

/* ---- norm_matmul_t (and matmul_t for few rows) ---- */
/* M rows, K (96: the 16-byte path; 99 in fp32 / 98 in bf16: the scalar path; 1,100 / 1,104:
 * past the 1,024 elements whose statistics gemv.cu keeps in registers), N columns (50; 8,200:
 * one row takes 4 columns a warp from 8,192, as lm_head); LayerNorm + GeLU, LayerNorm, RMSNorm.
 * Against the CPU's norm_fwd, matmul_t, gelu_fwd: fp32 rtol 1e-4 atol 1e-5 (two roundings of
 * other summation orders, GeLU's fast exp); against the same three ops on CUDA bit for bit (the
 * fused kernel uses their loops); with M = 1, against both rows of the same product over the
 * row twice (M = 2) bit for bit (batch invariance across the kernels' column blocking). */
static void nm_case(const char *prec, int M, int K, int N, int kind) {
  tz_backend *g = tz_backend_create("cuda", 0, prec);
  assert_non_null(g);
  const int ln = kind != 2, gelu = kind == 0;
  ot_ctx o, oc;
  ot_init(&o, g, 21);
  ot_init(&oc, cpu, 22);
  /* params: nw [K], nb [K], W [N,K], bias [N] at float offsets 0, K, 2K, 2K + N·K (+ odd pad) */
  size_t nw = 0, nb = (size_t)K, w = 2 * (size_t)K, bi = w + (size_t)N * K, np = bi + N;
  float *p = ot_randn(&o, np, 0.3f), *x = ot_randn(&o, (size_t)M * K, 1.5f);
  for (int k = 0; k < K; k++) p[nw + k] += 1.0f;
  ct_round(g, p, np);
  ct_round(g, x, (size_t)M * K);
  tz_slice gp = ct_params(&o, p, np), gx = ct_act_upload(&o, x, (size_t)M * K);
  tz_slice fused = ct_act_upload(&o, NULL, (size_t)M * N), h = ct_act_upload(&o, NULL, (size_t)M * N);
  tz_slice n1 = ct_act_upload(&o, NULL, (size_t)M * K), st = ot_buf(&o, NULL, (size_t)2 * M * 4);
  tz_slice nbs = ln ? tz_f32(gp, nb) : TZ_NONE;
  assert_int_equal(g->norm_matmul_t(g, fused, gx, tz_f32(gp, nw), nbs, 1e-5f, tz_f32(gp, w), tz_f32(gp, bi), M, K, N, gelu), 1);
  /* the same on CUDA, op by op */
  if (ln) g->layernorm_fwd(g, n1, st, tz_f32(st, M), gx, tz_f32(gp, nw), nbs, M, K, 1e-5f);
  else g->rmsnorm_fwd(g, n1, st, gx, tz_f32(gp, nw), M, K, 1e-5f);
  g->matmul_t(g, h, n1, tz_f32(gp, w), tz_f32(gp, bi), M, K, N, 0);
  if (gelu) g->gelu_fwd(g, h, h, (size_t)M * N);
  float *gf = ct_act_download(&o, fused, (size_t)M * N), *gu = ct_act_download(&o, h, (size_t)M * N);
  char what[96];
  snprintf(what, sizeof what, "norm_matmul_t %s M %d K %d kind %d: fused vs ops on cuda", prec, M, K, kind);
  if (memcmp(gf, gu, (size_t)M * N * 4)) {
    print_error("%s: not bit-identical\n", what);
    fail();
  }
  if (M == 1) {
    float *x2 = malloc((size_t)2 * K * sizeof *x2);
    memcpy(x2, x, (size_t)K * sizeof *x2);
    memcpy(x2 + K, x, (size_t)K * sizeof *x2);
    tz_slice gx2 = ct_act_upload(&o, x2, (size_t)2 * K), f2 = ct_act_upload(&o, NULL, (size_t)2 * N);
    assert_int_equal(g->norm_matmul_t(g, f2, gx2, tz_f32(gp, nw), nbs, 1e-5f, tz_f32(gp, w), tz_f32(gp, bi), 2, K, N, gelu), 1);
    float *r2 = ct_act_download(&o, f2, (size_t)2 * N);
    snprintf(what, sizeof what, "norm_matmul_t %s K %d N %d kind %d: 1 row vs 2 rows", prec, K, N, kind);
    if (memcmp(gf, r2, (size_t)N * 4) || memcmp(gf, r2 + N, (size_t)N * 4)) {
      print_error("%s: not bit-identical\n", what);
      fail();
    }
    free(x2), free(r2);
  }
  /* CPU reference */
  tz_slice cp = ot_buf(&oc, p, np * 4), cx = ot_buf(&oc, x, (size_t)M * K * 4);
  tz_slice cn = ot_buf(&oc, NULL, (size_t)M * K * 4), cs = ot_buf(&oc, NULL, (size_t)2 * M * 4);
  tz_slice ch = ot_buf(&oc, NULL, (size_t)M * N * 4);
  if (ln) cpu->layernorm_fwd(cpu, cn, cs, tz_f32(cs, M), cx, tz_f32(cp, nw), tz_f32(cp, nb), M, K, 1e-5f);
  else cpu->rmsnorm_fwd(cpu, cn, cs, cx, tz_f32(cp, nw), M, K, 1e-5f);
  float *cnh = ot_get(&oc, cn, (size_t)M * K);
  ct_round(g, cnh, (size_t)M * K); /* the GPU rounds the norm's output to bf16 in bf16 mode */
  cpu->upload(cpu, cn, cnh, (size_t)M * K * 4);
  cpu->matmul_t(cpu, ch, cn, tz_f32(cp, w), tz_f32(cp, bi), M, K, N, 0);
  if (gelu) {
    float *hh = ot_get(&oc, ch, (size_t)M * N);
    ct_round(g, hh, (size_t)M * N);
    cpu->upload(cpu, ch, hh, (size_t)M * N * 4);
    free(hh);
    cpu->gelu_fwd(cpu, ch, ch, (size_t)M * N);
  }
  float *ref = ot_get(&oc, ch, (size_t)M * N);
  double *rd = ot_dbl(ref, (size_t)M * N);
  snprintf(what, sizeof what, "norm_matmul_t %s M %d K %d kind %d vs cpu", prec, M, K, kind);
  int bf = g->act == TZ_BF16;
  ct_close(what, gf, rd, (size_t)M * N, bf ? 2e-2 : 1e-4, bf ? 2e-2 : 1e-5);
  free(p), free(x), free(gf), free(gu), free(cnh), free(ref), free(rd);
  ot_release(&oc);
  ot_release(&o);
  g->destroy(g);
}
static void test_norm_matmul(void **state) {
  (void)state;
  for (int kind = 0; kind < 3; kind++) {
    nm_case("fp32", 1, 96, 50, kind);
    nm_case("fp32", 3, 99, 50, kind);
    nm_case("fp32", 16, 96, 50, kind);
    nm_case("bf16", 5, 96, 50, kind);
    nm_case("bf16", 9, 98, 50, kind);
    nm_case("fp32", 1, 1100, 8200, kind);
    nm_case("bf16", 1, 1104, 8200, kind);
    nm_case("bf16", 3, 1104, 50, kind);
  }
}

#ifdef TZ_HAVE_CUDA
/* ---- tzc_mma_t: the few-row product on the tensor cores (bf16) ----
 * M rows (1, 9, 16), K (96; 1,056: past the 1,024 elements norm_row_stats keeps in registers;
 * 4,096: more than one round of the 12 loads in flight per warp), N (50: a partial last 8-column
 * tile; 8,200); kind 0 plain with bias (acc 0 and 1), 1 LayerNorm + GeLU, 2 LayerNorm,
 * 3 RMSNorm. Against the CPU's norm_fwd (output rounded to bf16 as the GPU stores it),
 * matmul_t, gelu_fwd on the same bf16-rounded inputs: rtol 2e-2 atol 2e-2 (the output's bf16
 * rounding, 2^-8, plus fp32 sums in another order; GeLU of a rounded value); a second launch
 * bit-identical (deterministic); the first rows of an M-row call bit-identical to a call with
 * fewer rows (a row does not depend on M). Called directly: the test process sets
 * TEZGAH_CUDA_GEMV_MAX_M=16, so the backend's ops take gemv_k at these M. */
static void mma_case(int M, int K, int N, int kind, int acc) {
  tz_backend *g = tz_backend_create("cuda", 0, "bf16");
  assert_non_null(g);
  const int ln = kind == 1 || kind == 2, norm = kind == 0 ? 0 : ln ? 1 : 2, gelu = kind == 1;
  ot_ctx o, oc;
  ot_init(&o, g, 31);
  ot_init(&oc, cpu, 32);
  size_t nw = 0, nb = (size_t)K, w = 2 * (size_t)K, bi = w + (size_t)N * K, np = bi + N;
  float *p = ot_randn(&o, np, 0.3f), *x = ot_randn(&o, (size_t)M * K, 1.5f), *o0 = ot_randn(&o, (size_t)M * N, 1.0f);
  for (int k = 0; k < K; k++) p[nw + k] += 1.0f;
  ct_round(g, p, np);
  ct_round(g, x, (size_t)M * K);
  ct_round(g, o0, (size_t)M * N);
  tz_slice gp = ct_params(&o, p, np), gx = ct_act_upload(&o, x, (size_t)M * K);
  tz_slice y1 = ct_act_upload(&o, o0, (size_t)M * N), y2 = ct_act_upload(&o, o0, (size_t)M * N);
  const int Mh = M > 1 ? M / 2 + 1 : 1;
  tz_slice yh = ct_act_upload(&o, o0, (size_t)Mh * N);
  void *W = tzc_w(g, tz_f32(gp, w)), *B = tzc_w(g, tz_f32(gp, bi));
  void *NW = norm ? tzc_w(g, tz_f32(gp, nw)) : NULL, *NB = norm == 1 ? tzc_w(g, tz_f32(gp, nb)) : NULL;
  char what[96];
  snprintf(what, sizeof what, "mma M %d K %d N %d kind %d acc %d", M, K, N, kind, acc);
  print_message("%s\n", what); /* the case is named before it runs (a fault aborts the process) */
  fflush(stdout);
  for (int r = 0; r < 2; r++)
    assert_int_equal(tzc_mma_t(g, tzc_ptr(r ? y2 : y1), tzc_ptr(gx), W, B, NW, NB, 1e-5f, norm, gelu, M, K, N, acc), 1);
  assert_int_equal(tzc_mma_t(g, tzc_ptr(yh), tzc_ptr(gx), W, B, NW, NB, 1e-5f, norm, gelu, Mh, K, N, acc), 1);
  float *r1 = ct_act_download(&o, y1, (size_t)M * N), *r2 = ct_act_download(&o, y2, (size_t)M * N);
  float *rh = ct_act_download(&o, yh, (size_t)Mh * N);
  if (memcmp(r1, r2, (size_t)M * N * 4)) {
    print_error("%s: two launches not bit-identical\n", what);
    fail();
  }
  if (memcmp(r1, rh, (size_t)Mh * N * 4)) {
    print_error("%s: the first %d rows differ from a %d-row call\n", what, Mh, Mh);
    fail();
  }
  /* CPU reference */
  tz_slice cp = ot_buf(&oc, p, np * 4), cx = ot_buf(&oc, x, (size_t)M * K * 4);
  tz_slice cn = ot_buf(&oc, NULL, (size_t)M * K * 4), cs = ot_buf(&oc, NULL, (size_t)2 * M * 4);
  tz_slice ch = ot_buf(&oc, o0, (size_t)M * N * 4);
  tz_slice in = cx;
  if (norm) {
    if (ln) cpu->layernorm_fwd(cpu, cn, cs, tz_f32(cs, M), cx, tz_f32(cp, nw), tz_f32(cp, nb), M, K, 1e-5f);
    else cpu->rmsnorm_fwd(cpu, cn, cs, cx, tz_f32(cp, nw), M, K, 1e-5f);
    float *cnh = ot_get(&oc, cn, (size_t)M * K);
    ct_round(g, cnh, (size_t)M * K);
    cpu->upload(cpu, cn, cnh, (size_t)M * K * 4);
    free(cnh);
    in = cn;
  }
  cpu->matmul_t(cpu, ch, in, tz_f32(cp, w), tz_f32(cp, bi), M, K, N, acc);
  if (gelu) {
    float *hh = ot_get(&oc, ch, (size_t)M * N);
    ct_round(g, hh, (size_t)M * N);
    cpu->upload(cpu, ch, hh, (size_t)M * N * 4);
    free(hh);
    cpu->gelu_fwd(cpu, ch, ch, (size_t)M * N);
  }
  float *ref = ot_get(&oc, ch, (size_t)M * N);
  double *rd = ot_dbl(ref, (size_t)M * N);
  ct_close(what, r1, rd, (size_t)M * N, 2e-2, 2e-2);
  free(p), free(x), free(o0), free(r1), free(r2), free(rh), free(ref), free(rd);
  ot_release(&oc);
  ot_release(&o);
  g->destroy(g);
}
static void test_mma(void **state) {
  (void)state;
  tz_backend *g = tz_backend_create("cuda", 0, "bf16");
  assert_non_null(g);
  const int cc = tzc(g)->cc_major;
  g->destroy(g);
  if (cc < 8) {
    print_message("SKIPPED part: tzc_mma_t needs sm_80+ (cc %d)\n", cc);
    return;
  }
  mma_case(16, 96, 50, 0, 0);
  mma_case(9, 96, 50, 0, 1);
  mma_case(16, 1056, 8200, 0, 0);
  mma_case(16, 4096, 50, 0, 1);
  for (int kind = 1; kind < 4; kind++) {
    mma_case(16, 96, 50, kind, 0);
    mma_case(9, 1056, 50, kind, 0);
    mma_case(1, 768, 8200, kind, 0);
    mma_case(16, 768, 8200, kind, 0);
  }
}
#else
static void test_mma(void **state) { (void)state; skip(); } /* never reached: setup skips first */
#endif

/* ---- the model ---- */
#define STEPS 70
#define NROW 3
static tz_config cfg_of(tz_arch arch) {
  tz_config c = {0};
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_kv_head = arch == TZ_ARCH_LLAMA ? 2 : 4;
  c.d_model = 128;
  c.d_ff = arch == TZ_ARCH_LLAMA ? 176 : 0;
  c.vocab_size = 301;
  c.max_seq_len = 96;
  c.tied = 1;
  assert_int_equal(tz_config_finalize(&c), 0);
  return c;
}

/* The test models' weights as the host holds them: init_weights(4321) × scale, made on the
 * CPU backend (so that a backend whose weights cannot be read back gets the same ones). */
static float *host_weights(const tz_config *c, float scale, size_t *total) {
  tz_model *m;
  assert_int_equal(tz_model_create(cpu, c, &m), 0);
  tz_model_init_weights(m, 4321);
  float *p = malloc(m->lay.total * sizeof(float));
  tz_model_get_params(m, p);
  for (size_t i = 0; i < m->lay.total; i++) p[i] *= scale;
  *total = m->lay.total;
  tz_model_free(m);
  return p;
}
static tz_model *new_model_scaled(tz_backend *be, const tz_config *c, int rows, float scale) {
  tz_model *m;
  assert_int_equal(tz_model_create(be, c, &m), 0);
  size_t total;
  float *p = host_weights(c, scale, &total);
  assert_int_equal(total, m->lay.total);
  tz_model_set_params(m, p);
  free(p);
  assert_int_equal(tz_model_alloc_inference_rows(m, rows), 0);
  return m;
}
static tz_model *new_model(tz_backend *be, const tz_config *c, int rows) { return new_model_scaled(be, c, rows, 8.0f); }

/* Decode STEPS tokens for `rows` rows (row b seeded 500 + seed0 + b) from one prompt; ids to
 * out[rows][STEPS]; every step's logits (rows × V) appended to `lg` when given. */
static void decode_run(tz_backend *be, const tz_config *c, int rows, int seed0, float temp, int32_t *out, float *lg) {
  tz_model *m = new_model(be, c, rows);
  const int32_t prompt[5] = {1, 7, 42, 99, 3};
  tz_sampler s[NROW];
  for (int b = 0; b < rows; b++) {
    tz_sampler_init(&s[b], c->vocab_size, temp, 40, 1.0f, 500 + (uint64_t)(seed0 + b));
    tz_model_feed_row(m, b, prompt, 5, 0);
  }
  float *scratch = malloc((size_t)c->vocab_size * sizeof(float));
  int32_t next[NROW], pos[NROW];
  for (int i = 0; i < STEPS; i++) {
    if (lg)
      for (int b = 0; b < rows; b++)
        be->download_act(be, lg + ((size_t)i * rows + b) * c->vocab_size,
                         tz_elems(m->infer.logits, (size_t)b * c->padded_vocab, be->act), (size_t)c->vocab_size);
    tz_sampler_pick_rows(s, m, rows, next, scratch);
    for (int b = 0; b < rows; b++) out[b * STEPS + i] = next[b], pos[b] = 5 + i;
    tz_model_step(m, pos, rows);
  }
  free(scratch);
  for (int b = 0; b < rows; b++) tz_sampler_free(&s[b]);
  tz_model_free(m);
}

static void same_ids(const char *what, const int32_t *got, const int32_t *want, int n) {
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) {
      print_error("%s: first difference at %d (row %d step %d): %d vs %d\n", what, i, i / STEPS, i % STEPS, got[i],
                  want[i]);
      fail();
    }
}

/* decode_run on the CUDA backend g with a spacer of `k` + 1 MiB held meanwhile: each run's model
 * buffers then land at other addresses than the previous run's on g, so that a recorded step
 * of a freed model replayed by the next one (the backend must not) reads the wrong buffers. */
static void gpu_run(tz_backend *g, const tz_config *c, int rows, int seed0, float temp, int32_t *out, int k) {
  tz_buf *sp = g->alloc(g, ((size_t)k + 1) << 20, "test spacer");
  assert_non_null(sp);
  decode_run(g, c, rows, seed0, temp, out, NULL);
  g->free(g, sp);
}

static void model_fp32(tz_arch arch) {
  tz_config c = cfg_of(arch);
  tz_backend *g = tz_backend_create("cuda", 0, "fp32");
  assert_non_null(g);
  int k = 0;
  for (int mode = 0; mode < 2; mode++) {
    float temp = mode ? 0.8f : 0.0f;
    int32_t want[NROW * STEPS], got[NROW * STEPS], one[STEPS];
    decode_run(cpu, &c, NROW, 0, temp, want, NULL);
    gpu_run(g, &c, NROW, 0, temp, got, k++);
    same_ids(mode ? "fp32 sampled, cuda vs cpu" : "fp32 greedy, cuda vs cpu", got, want, NROW * STEPS);
    for (int b = 0; b < NROW; b++) { /* row b of the batch = a one-row run with its seed */
      gpu_run(g, &c, 1, b, temp, one, k++);
      same_ids("fp32, cuda batch row vs one row", one, got + b * STEPS, STEPS);
      decode_run(cpu, &c, 1, b, temp, one, NULL);
      same_ids("fp32, cpu batch row vs one row", one, want + b * STEPS, STEPS);
    }
  }
  g->destroy(g);
}
static void test_model_fp32_gpt2(void **state) {
  (void)state;
  model_fp32(TZ_ARCH_GPT2);
}
static void test_model_fp32_llama(void **state) {
  (void)state;
  model_fp32(TZ_ARCH_LLAMA);
}

static void model_bf16(tz_arch arch) {
  tz_config c = cfg_of(arch);
  size_t n = (size_t)STEPS * NROW * c.vocab_size;
  float *l1 = malloc(n * 4), *l2 = malloc(n * 4), *l3 = malloc(n * 4);
  int32_t i1[NROW * STEPS], i2[NROW * STEPS], i3[NROW * STEPS];
  for (int run = 0; run < 3; run++) {
    if (run == 2) setenv("TEZGAH_CUDA_GRAPHS", "0", 1);
    tz_backend *g = tz_backend_create("cuda", 0, "bf16");
    assert_non_null(g);
    decode_run(g, &c, NROW, 0, 0.8f, run == 0 ? i1 : run == 1 ? i2 : i3, run == 0 ? l1 : run == 1 ? l2 : l3);
    g->destroy(g);
  }
  unsetenv("TEZGAH_CUDA_GRAPHS");
  { /* row 1 alone (seed 501) = row 1 of the batch, bit for bit (the few-row kernels are batch-invariant) */
    tz_backend *g = tz_backend_create("cuda", 0, "bf16");
    assert_non_null(g);
    int32_t one[STEPS];
    float *l4 = malloc((size_t)STEPS * c.vocab_size * 4);
    decode_run(g, &c, 1, 1, 0.8f, one, l4);
    g->destroy(g);
    same_ids("bf16 batch row 1 vs one row", one, i1 + STEPS, STEPS);
    for (int i = 0; i < STEPS; i++)
      assert_memory_equal(l4 + (size_t)i * c.vocab_size, l1 + ((size_t)i * NROW + 1) * c.vocab_size, c.vocab_size * 4);
    free(l4);
  }
  assert_memory_equal(l1, l2, n * 4);
  same_ids("bf16 run to run", i2, i1, NROW * STEPS);
  assert_memory_equal(l1, l3, n * 4);
  same_ids("bf16 recorded vs not", i3, i1, NROW * STEPS);
  free(l1), free(l2), free(l3);
}
static void test_model_bf16_gpt2(void **state) {
  (void)state;
  model_bf16(TZ_ARCH_GPT2);
}
static void test_model_bf16_llama(void **state) {
  (void)state;
  model_bf16(TZ_ARCH_LLAMA);
}

/* ---- weights read-only (tz_backend_hint_weights_read_only: `sample`'s backend) ----
 * The CUDA bf16 backend then keeps only the bf16 copy, converted on the host during the upload
 * (tz_f32_to_bf16) instead of by the mirror kernel on the device: the same rounding, so the
 * decoded ids and every step's logits must equal those of a backend made without the hint, bit
 * for bit, sampled (T 0.8) over NROW rows; and the backend must hold the fp32 parameters' bytes
 * less. Cases: gpt2 and llama uploaded at once; gpt2 in two uploads (the second starting
 * mid-buffer); gpt2 with a 70,001-token vocabulary (36 MB of weights: above the 32 MiB from
 * which the upload is spread over threads, chunk by chunk). */
static void ro_case(tz_arch arch, int halves, int vocab) {
  tz_config c = cfg_of(arch);
  if (vocab) {
    c.vocab_size = vocab;
    c.padded_vocab = 0; /* derived again from vocab_size */
    assert_int_equal(tz_config_finalize(&c), 0);
  }
  size_t n = (size_t)STEPS * NROW * c.vocab_size, total;
  float *l0 = malloc(n * 4), *l1 = malloc(n * 4), *w = host_weights(&c, 8.0f, &total);
  int32_t i0[NROW * STEPS], i1[NROW * STEPS];
  size_t used[2];
  for (int ro = 0; ro < 2; ro++) {
    tz_backend_hint_weights_read_only(ro);
    tz_backend *g = tz_backend_create("cuda", 0, "bf16");
    tz_backend_hint_weights_read_only(0);
    assert_non_null(g);
    size_t before = g->mem_used(g);
    tz_model *m;
    assert_int_equal(tz_model_create(g, &c, &m), 0);
    used[ro] = g->mem_used(g) - before;
    if (halves) { /* two uploads: the second starts mid-buffer */
      size_t h = total / 2;
      g->upload(g, (tz_slice){m->params, 0}, w, h * sizeof(float));
      g->upload(g, (tz_slice){m->params, h * sizeof(float)}, w + h, (total - h) * sizeof(float));
    } else
      tz_model_set_params(m, w);
    assert_int_equal(tz_model_alloc_inference_rows(m, NROW), 0);
    const int32_t prompt[5] = {1, 7, 42, 99, 3};
    tz_sampler s[NROW];
    for (int b = 0; b < NROW; b++) {
      tz_sampler_init(&s[b], c.vocab_size, 0.8f, 40, 1.0f, 500 + (uint64_t)b);
      tz_model_feed_row(m, b, prompt, 5, 0);
    }
    float *scratch = malloc((size_t)c.vocab_size * sizeof(float)), *lg = ro ? l1 : l0;
    int32_t next[NROW], pos[NROW], *ids = ro ? i1 : i0;
    for (int i = 0; i < STEPS; i++) {
      for (int b = 0; b < NROW; b++)
        g->download_act(g, lg + ((size_t)i * NROW + b) * c.vocab_size,
                        tz_elems(m->infer.logits, (size_t)b * c.padded_vocab, g->act), (size_t)c.vocab_size);
      tz_sampler_pick_rows(s, m, NROW, next, scratch);
      for (int b = 0; b < NROW; b++) ids[b * STEPS + i] = next[b], pos[b] = 5 + i;
      tz_model_step(m, pos, NROW);
    }
    free(scratch);
    for (int b = 0; b < NROW; b++) tz_sampler_free(&s[b]);
    tz_model_free(m);
    g->destroy(g);
  }
  printf("weights read-only (%s, V %d%s): model buffers %zu bytes against %zu\n", arch == TZ_ARCH_GPT2 ? "gpt2" : "llama",
         c.vocab_size, halves ? ", two uploads" : "", used[1], used[0]);
  assert_int_equal(used[0] - used[1], total * sizeof(float));
  same_ids("bf16, weights read-only vs not", i1, i0, NROW * STEPS);
  assert_memory_equal(l1, l0, n * 4);
  free(l0), free(l1), free(w);
}
static void test_model_weights_read_only(void **state) {
  (void)state;
  ro_case(TZ_ARCH_GPT2, 0, 0);
  ro_case(TZ_ARCH_LLAMA, 0, 0);
  ro_case(TZ_ARCH_GPT2, 1, 0);
  ro_case(TZ_ARCH_GPT2, 0, 70001);
}

/* ---- the whole step in one kernel (decode_step.cu) ----
 * Teacher forcing: R = 10 rows (tile rows 0..7 and 8..9), the 5-token prompt, then STEPS steps
 * feeding the same pseudo-random ids on every backend, weights N(0, 0.02) × 2 (the ×8 of the
 * tests above makes bf16 runs drift from fp32 by the size of the logits themselves); every
 * step's logits of every row compared with the CPU's fp32 ones: error = max |cuda − cpu| over
 * all rows, steps and logits / max |cpu|. The one-kernel step (the default) must be within
 * 1.5× the op-by-op bf16 path's error (the default) plus 1e-3, and below 0.05 (both
 * round weights and activations to bf16; the kernel keeps the residual in fp32); it must have
 * run (TEZGAH_CUDA_STEP=1: the backend's step state made) and the op-by-op run must not. gpt2 at
 * head_dim 32 (n_head 4) and 64 (n_head 2). */
#define FROWS 10
static void forced_run(tz_backend *be, const tz_config *c, float *lg, int *made_step) {
  tz_model *m = new_model_scaled(be, c, FROWS, 2.0f);
  const int32_t prompt[5] = {1, 7, 42, 99, 3};
  for (int b = 0; b < FROWS; b++) tz_model_feed_row(m, b, prompt, 5, 0);
  uint32_t st = 12345u;
  int32_t ids[FROWS], pos[FROWS];
  for (int i = 0; i < STEPS; i++) {
    for (int b = 0; b < FROWS; b++)
      be->download_act(be, lg + ((size_t)i * FROWS + b) * c->vocab_size,
                       tz_elems(m->infer.logits, (size_t)b * c->padded_vocab, be->act), (size_t)c->vocab_size);
    for (int b = 0; b < FROWS; b++) {
      st = st * 1664525u + 1013904223u;
      ids[b] = (int32_t)((st >> 8) % (uint32_t)c->vocab_size), pos[b] = 5 + i;
    }
    be->upload(be, m->infer.tokens, ids, sizeof ids);
    tz_model_step(m, pos, FROWS);
  }
#ifdef TZ_HAVE_CUDA
  if (made_step) *made_step = tzc(be)->step != NULL;
#else
  (void)made_step;
#endif
  tz_model_free(m);
}
static double forced_err(const float *got, const float *want, int V) {
  double d = 0.0, mx = 0.0;
  for (size_t i = 0; i < (size_t)STEPS * FROWS * V; i++) {
    const double e = fabs((double)got[i] - want[i]);
    if (!(e <= d)) d = e; /* NaN counts as worst */
    if (fabs(want[i]) > mx) mx = fabs(want[i]);
  }
  return d / (mx > 0.0 ? mx : 1.0);
}
static void step_case(int n_head) {
  tz_config c = cfg_of(TZ_ARCH_GPT2);
  c.n_head = c.n_kv_head = n_head;
  assert_int_equal(tz_config_finalize(&c), 0);
  size_t n = (size_t)STEPS * FROWS * c.vocab_size;
  float *ref = malloc(n * 4), *mk = malloc(n * 4), *op = malloc(n * 4);
  forced_run(cpu, &c, ref, NULL);
  int made_mk = 0, made_op = 1;
  setenv("TEZGAH_CUDA_STEP", "1", 1);
  tz_backend *g = tz_backend_create("cuda", 0, "bf16");
  assert_non_null(g);
  forced_run(g, &c, mk, &made_mk);
  g->destroy(g);
  unsetenv("TEZGAH_CUDA_STEP");
  g = tz_backend_create("cuda", 0, "bf16");
  assert_non_null(g);
  forced_run(g, &c, op, &made_op);
  g->destroy(g);
  const double e_mk = forced_err(mk, ref, c.vocab_size), e_op = forced_err(op, ref, c.vocab_size);
  printf("decode_step head_dim %d: error vs cpu fp32 %.3g (one kernel), %.3g (op by op), bound %.3g\n",
         c.d_model / n_head, e_mk, e_op, 1.5 * e_op + 1e-3);
  assert_true(made_mk);
  assert_false(made_op);
  assert_true(e_mk <= 1.5 * e_op + 1e-3);
  assert_true(e_mk < 0.05);
  free(ref), free(mk), free(op);
}
static void test_model_step_kernel(void **state) {
  (void)state;
  step_case(4);
  step_case(2);
}

int main(void) {
  /* the few-row kernels at up to 16 rows (nm_case's M 9 and 16), whatever the default crossover
   * (TZC_GEMV_CROSSOVER) is; a value given in the environment is kept */
  setenv("TEZGAH_CUDA_GEMV_MAX_M", "16", 0);
  /* TEZGAH_TEST_FILTER=test_mma (a cmocka pattern): only those tests (the device script runs
   * test_mma alone under other TEZGAH_CUDA_MMA_TN tilings and under compute-sanitizer) */
  const char *filter = getenv("TEZGAH_TEST_FILTER");
  if (filter && *filter) cmocka_set_test_filter(filter);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention_decode), cmocka_unit_test(test_pick), cmocka_unit_test(test_pick_greedy_wide), cmocka_unit_test(test_norm_matmul), cmocka_unit_test(test_mma),
      cmocka_unit_test(test_model_fp32_gpt2),  cmocka_unit_test(test_model_fp32_llama),
      cmocka_unit_test(test_model_bf16_gpt2),  cmocka_unit_test(test_model_bf16_llama),
      cmocka_unit_test(test_model_step_kernel), cmocka_unit_test(test_model_weights_read_only),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
