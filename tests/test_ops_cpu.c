/* CPU backend op checks beyond gradients: the matmul family on both paths (plain C and
 * OpenBLAS, selected by TZ_MATMUL at backend creation) against float64 on odd shapes,
 * AdamW against the hand-written float64 formula, sum_sq, the KV-cache form of attention,
 * cross-entropy at extreme logits (xent_extremes.h) and run-to-run bit determinism.
 * Tolerances: matmul |got − ref| ≤ 1e-5·Σ_k|a·b| + 1e-6 (fp32 rounding of a length-K dot
 * product); AdamW ≤ 1e-6 abs / 1e-5 rel; sum_sq ≤ 1e-6 rel; KV-cache rows ≤ 1e-6. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/cpu_kernels.h"
#include "ops_testutil.h"
#include "xent_extremes.h"

static tz_backend *make(const char *path) {
  if (path) setenv("TZ_MATMUL", path, 1);
  tz_backend *be = tz_backend_create("cpu", 2, NULL);
  unsetenv("TZ_MATMUL");
  assert_non_null(be);
  return be;
}

/* kind 0: matmul_t (b is [N,K]); 1: matmul (b is [K,N]); 2: matmul_at (a is [K,M]). */
static void check_mm(tz_backend *be, int kind, int M, int K, int N, int acc, int bias) {
  ot_ctx o;
  ot_init(&o, be, (uint64_t)M * 1000003 + K * 1009 + N * 7 + kind * 3 + acc);
  float *a = ot_randn(&o, (size_t)M * K, 1), *b = ot_randn(&o, (size_t)K * N, 1);
  float *bs = ot_randn(&o, N, 1), *c0 = ot_randn(&o, (size_t)M * N, 1);
  double *ref = malloc(sizeof(double) * ((size_t)M * N + 1));
  double *mag = malloc(sizeof(double) * ((size_t)M * N + 1));
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double s = 0, g = 0;
      for (int k = 0; k < K; k++) {
        double x = kind == 2 ? a[(size_t)k * M + m] : a[(size_t)m * K + k];
        double y = kind == 0 ? b[(size_t)n * K + k] : b[(size_t)k * N + n];
        s += x * y;
        g += fabs(x * y);
      }
      if (bias) s += bs[n], g += fabs(bs[n]);
      if (acc) s += c0[(size_t)m * N + n], g += fabs(c0[(size_t)m * N + n]);
      ref[(size_t)m * N + n] = s;
      mag[(size_t)m * N + n] = g;
    }
  tz_slice sa = ot_buf(&o, a, 4 * (size_t)M * K), sb = ot_buf(&o, b, 4 * (size_t)K * N),
           sbias = bias ? ot_buf(&o, bs, 4 * N) : TZ_NONE, sc = ot_buf(&o, c0, 4 * (size_t)M * N);
  if (kind == 0) be->matmul_t(be, sc, sa, sb, sbias, M, K, N, acc);
  if (kind == 1) be->matmul(be, sc, sa, sb, M, K, N, acc);
  if (kind == 2) be->matmul_at(be, sc, sa, sb, M, K, N, acc);
  float *c = ot_get(&o, sc, (size_t)M * N);
  for (size_t i = 0; i < (size_t)M * N; i++) {
    double err = fabs(c[i] - ref[i]), tol = 1e-5 * mag[i] + 1e-6;
    if (!(err <= tol)) {
      print_error("matmul kind %d M=%d K=%d N=%d acc=%d bias=%d [%zu]: got %.9g want %.9g\n",
                  kind, M, K, N, acc, bias, i, c[i], ref[i]);
      fail();
    }
  }
  free(a), free(b), free(bs), free(c0), free(ref), free(mag), free(c);
  ot_release(&o);
}

static void run_matmul_family(const char *path) {
  tz_backend *be = make(path);
  static const int dims[] = {1, 7, 33, 129};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 4; l++)
        for (int kind = 0; kind < 3; kind++)
          for (int acc = 0; acc < 2; acc++)
            check_mm(be, kind, dims[i], dims[j], dims[l], acc, kind == 0 && ((i + j + l) & 1));
  /* cross the C path's cache blocks: K > KC (256), M > MC (128), N > NC (4096) */
  for (int kind = 0; kind < 3; kind++) {
    check_mm(be, kind, 130, 300, 65, 1, kind == 0);
    check_mm(be, kind, 3, 5, 4133, 0, kind == 0);
  }
  check_mm(be, 0, 4, 0, 5, 1, 1); /* K = 0: out (+)= bias only */
  check_mm(be, 1, 4, 0, 5, 0, 0);
#ifdef TZ_USE_BLAS
  /* the blas path really ran: OpenBLAS is loaded by the first matmul, and a failed load
   * would fall back to the c path (with one warning) and pass the checks above unnoticed */
  if (path && !strcmp(path, "blas")) assert_int_equal(TZ_CPU_CTX(be)->use_blas, 2);
#endif
  be->destroy(be);
}
static void test_matmul_c(void **state) { run_matmul_family("c"); }
static void test_matmul_blas(void **state) { run_matmul_family("blas"); }

static void test_bias_bwd(void **state) {
  tz_backend *be = make(NULL);
  ot_ctx o;
  ot_init(&o, be, 5);
  int M = 37, N = 131;
  float *d = ot_randn(&o, (size_t)M * N, 1), *db0 = ot_randn(&o, N, 1);
  double *ref = malloc(N * sizeof(double));
  for (int n = 0; n < N; n++) {
    ref[n] = db0[n];
    for (int m = 0; m < M; m++) ref[n] += d[m * N + n];
  }
  tz_slice s = ot_buf(&o, db0, 4 * N);
  be->bias_bwd(be, s, ot_buf(&o, d, 4 * M * N), M, N);
  float *got = ot_get(&o, s, N);
  ot_close("bias_bwd", got, ref, N, 1e-5, 1e-5);
  free(d), free(db0), free(ref), free(got);
  ot_release(&o);
  be->destroy(be);
}

/* One AdamW step over two ranges (decay 1 and decay 0) leaving a gap untouched. */
static void test_adamw(void **state) {
  tz_backend *be = make(NULL);
  ot_ctx o;
  ot_init(&o, be, 6);
  size_t n = 100;
  float *p = ot_randn(&o, n, 1), *g = ot_randn(&o, n, 1), *m = ot_randn(&o, n, 0.1f),
        *v = ot_randn(&o, n, 0.1f);
  for (size_t i = 0; i < n; i++) v[i] = v[i] * v[i];
  tz_range r[2] = {{0, 40, 1.0f}, {50, 50, 0.0f}};
  tz_adamw_hp hp = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                    .grad_scale = 0.5f, .t = 3};
  double ep[100], em[100], ev[100];
  for (size_t i = 0; i < n; i++) {
    ep[i] = p[i], em[i] = m[i], ev[i] = v[i];
    int in0 = i < 40, in1 = i >= 50;
    if (!in0 && !in1) continue;
    double gi = (double)g[i] * 0.5, b1 = 0.9, b2 = 0.95;
    em[i] = b1 * m[i] + (1 - b1) * gi;
    ev[i] = b2 * v[i] + (1 - b2) * gi * gi;
    double mh = em[i] / (1 - pow(b1, 3)), vh = ev[i] / (1 - pow(b2, 3));
    ep[i] = p[i] - 1e-2 * (mh / (sqrt(vh) + 1e-8) + 0.1 * (in0 ? 1.0 : 0.0) * p[i]);
  }
  tz_slice sp = ot_buf(&o, p, 4 * n), sg = ot_buf(&o, g, 4 * n), sm = ot_buf(&o, m, 4 * n),
           sv = ot_buf(&o, v, 4 * n);
  be->adamw(be, sp, sg, sm, sv, r, 2, &hp);
  float *gp = ot_get(&o, sp, n), *gm = ot_get(&o, sm, n), *gv = ot_get(&o, sv, n);
  ot_close("adamw m", gm, em, n, 1e-5, 1e-6);
  ot_close("adamw v", gv, ev, n, 1e-5, 1e-6);
  ot_close("adamw params", gp, ep, n, 1e-5, 1e-6);
  for (size_t i = 40; i < 50; i++) assert_true(gp[i] == p[i] && gm[i] == m[i] && gv[i] == v[i]);
  free(p), free(g), free(m), free(v), free(gp), free(gm), free(gv);
  ot_release(&o);
  be->destroy(be);
}

static void test_crossentropy_extremes(void **state) {
  tz_backend *be = make(NULL);
  xe_check_all(be, "cpu");
  be->destroy(be);
}

static void test_sum_sq(void **state) {
  tz_backend *be = make(NULL);
  ot_ctx o;
  ot_init(&o, be, 7);
  size_t sizes[] = {0, 1, 63, 100003};
  for (int t = 0; t < 4; t++) {
    size_t n = sizes[t];
    float *x = ot_randn(&o, n, 3);
    double ref = 0;
    for (size_t i = 0; i < n; i++) ref += (double)x[i] * x[i];
    tz_slice s = ot_buf(&o, NULL, 4), sx = ot_buf(&o, NULL, 4 * n + 4); /* n = 0: non-empty */
    be->upload(be, sx, x, 4 * n);
    be->sum_sq(be, s, sx, n);
    float *got = ot_get(&o, s, 1);
    ot_close("sum_sq", got, &ref, 1, 1e-6, 1e-30);
    free(x), free(got);
  }
  ot_release(&o);
  be->destroy(be);
}

/* Decoding form: the last Tq rows of a full causal pass, recomputed with Tq < Tk,
 * q_pos0 = Tk − Tq and K/V in separate cache buffers with their own stride, must match. */
static void test_attention_kvcache(void **state) {
  tz_backend *be = make(NULL);
  ot_ctx o;
  ot_init(&o, be, 8);
  int T = 9, nh = 4, nkv = 2, hd = 8, W = (nh + 2 * nkv) * hd, C = nh * hd, Tq = 3;
  int q0 = T - Tq, cs = nkv * hd + 5; /* cache row stride with padding */
  float *qkv = ot_randn(&o, (size_t)T * W, 1);
  tz_slice s_qkv = ot_buf(&o, qkv, 4 * T * W), s_full = ot_buf(&o, NULL, 4 * T * C);
  be->attention_fwd(be, s_full, TZ_NONE, s_qkv, tz_f32(s_qkv, nh * hd), tz_f32(s_qkv, (nh + nkv) * hd),
                    1, T, T, 0, nh, nkv, hd, W, W);
  tz_slice kc = ot_buf(&o, NULL, 4 * T * cs), vc = ot_buf(&o, NULL, 4 * T * cs);
  be->copy_rows(be, kc, cs, tz_f32(s_qkv, nh * hd), W, T, nkv * hd);
  be->copy_rows(be, vc, cs, tz_f32(s_qkv, (nh + nkv) * hd), W, T, nkv * hd);
  tz_slice s_part = ot_buf(&o, NULL, 4 * Tq * C), s_lse = ot_buf(&o, NULL, 4 * nh * Tq);
  be->attention_fwd(be, s_part, s_lse, tz_f32(s_qkv, (size_t)q0 * W), kc, vc, 1, Tq, T, q0, nh, nkv,
                    hd, W, cs);
  float *full = ot_get(&o, s_full, T * C), *part = ot_get(&o, s_part, Tq * C);
  double *want = malloc(sizeof(double) * Tq * C);
  for (int i = 0; i < Tq * C; i++) want[i] = full[q0 * C + i];
  ot_close("attention kv-cache rows", part, want, Tq * C, 1e-6, 1e-6);
  free(qkv), free(full), free(part), free(want);
  ot_release(&o);
  be->destroy(be);
}

/* Every op that reduces across threads, run twice on the same inputs: identical bits. */
static void run_twice_identical(const char *path) {
  tz_backend *be = make(path);
  ot_ctx o;
  ot_init(&o, be, 9);
  int B = 2, T = 33, nh = 4, nkv = 2, hd = 16, W = (nh + 2 * nkv) * hd, C = nh * hd, V = 50;
  int N = B * T;
  float *qkv = ot_randn(&o, (size_t)N * W, 1), *dy = ot_randn(&o, (size_t)N * C, 1);
  float *w = ot_randn(&o, (size_t)300 * C, 1), *logits = ot_randn(&o, (size_t)N * 64, 2);
  int *tok = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) tok[i] = (int)tz_rng_below(&o.rng, V);
  tz_slice s_qkv = ot_buf(&o, qkv, 4 * N * W), s_dy = ot_buf(&o, dy, 4 * N * C),
           s_w = ot_buf(&o, w, 4 * 300 * C), s_tok = ot_buf(&o, tok, 4 * N);
  float *res[2][6];
  for (int rep = 0; rep < 2; rep++) {
    tz_slice out = ot_buf(&o, NULL, 4 * N * C), lse = ot_buf(&o, NULL, 4 * B * nh * T),
             dqkv = ot_buf(&o, NULL, 4 * N * W), y = ot_buf(&o, NULL, 4 * N * 300),
             dw = ot_buf(&o, NULL, 4 * 300 * C), dwte = ot_buf(&o, NULL, 4 * V * C),
             lg = ot_buf(&o, logits, 4 * N * 64), ls = ot_buf(&o, NULL, 4 * N),
             ss = ot_buf(&o, NULL, 4);
    tz_slice k = tz_f32(s_qkv, nh * hd), v = tz_f32(s_qkv, (nh + nkv) * hd);
    be->attention_fwd(be, out, lse, s_qkv, k, v, B, T, T, 0, nh, nkv, hd, W, W);
    be->attention_bwd(be, dqkv, tz_f32(dqkv, nh * hd), tz_f32(dqkv, (nh + nkv) * hd), s_dy, s_qkv,
                      k, v, out, lse, B, T, nh, nkv, hd, W, W);
    be->matmul_t(be, y, s_dy, s_w, TZ_NONE, N, C, 300, 0);
    be->matmul_at(be, dw, y, s_dy, 300, N, C, 1);
    be->embed_bwd(be, dwte, TZ_NONE, s_dy, s_tok, B, T, C, V);
    be->crossentropy(be, ls, lg, s_tok, N, V, 64, 1.0f / N);
    be->sum_sq(be, ss, dqkv, (size_t)N * W);
    res[rep][0] = ot_get(&o, dqkv, N * W);
    res[rep][1] = ot_get(&o, y, N * 300);
    res[rep][2] = ot_get(&o, dw, 300 * C);
    res[rep][3] = ot_get(&o, dwte, V * C);
    res[rep][4] = ot_get(&o, lg, N * 64);
    res[rep][5] = ot_get(&o, ss, 1);
  }
  size_t sz[6] = {(size_t)N * W, (size_t)N * 300, (size_t)300 * C, (size_t)V * C, (size_t)N * 64, 1};
  for (int i = 0; i < 6; i++) {
    if (memcmp(res[0][i], res[1][i], sz[i] * 4) != 0) {
      print_error("result %d differs between two identical runs\n", i);
      fail();
    }
    free(res[0][i]), free(res[1][i]);
  }
  free(qkv), free(dy), free(w), free(logits), free(tok);
  ot_release(&o);
  be->destroy(be);
}
static void test_determinism_c(void **state) { run_twice_identical("c"); }
static void test_determinism_blas(void **state) { run_twice_identical("blas"); }

/* The plain C matmul sums every output element in one task in k order: the same bits for
 * any thread count, also where few M blocks make it split each block's columns across
 * threads (M = 256: 2 blocks of 128 rows). */
static void test_matmul_c_threads(void **state) {
  static const int shapes[][4] = {{2, 256, 300, 1024}, {0, 300, 70, 100}, {1, 40, 513, 96}, {2, 1100, 33, 64},
                                  {2, 700, 600, 40}, {1, 130, 777, 50}}; /* K > KC: B packed whole */
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int kind = shapes[s][0], M = shapes[s][1], K = shapes[s][2], N = shapes[s][3];
    float *got[3];
    static const int threads[3] = {1, 3, 16};
    for (int t = 0; t < 3; t++) {
      setenv("TZ_MATMUL", "c", 1);
      tz_backend *be = tz_backend_create("cpu", threads[t], NULL);
      unsetenv("TZ_MATMUL");
      assert_non_null(be);
      ot_ctx o;
      ot_init(&o, be, 77 + s);
      float *a = ot_randn(&o, (size_t)M * K, 1), *b = ot_randn(&o, (size_t)K * N, 1);
      tz_slice sa = ot_buf(&o, a, 4 * (size_t)M * K), sb = ot_buf(&o, b, 4 * (size_t)K * N),
               sc = ot_buf(&o, NULL, 4 * (size_t)M * N);
      if (kind == 0) be->matmul_t(be, sc, sa, sb, TZ_NONE, M, K, N, 0);
      else if (kind == 1) be->matmul(be, sc, sa, sb, M, K, N, 0);
      else be->matmul_at(be, sc, sa, sb, M, K, N, 0);
      got[t] = ot_get(&o, sc, (size_t)M * N);
      free(a), free(b);
      ot_release(&o);
      be->destroy(be);
    }
    for (int t = 1; t < 3; t++)
      if (memcmp(got[0], got[t], (size_t)M * N * 4)) {
        print_error("matmul kind %d %dx%dx%d: %d threads differ from 1 thread\n", kind, M, K, N, threads[t]);
        fail();
      }
    for (int t = 0; t < 3; t++) free(got[t]);
  }
}

/* The micro-kernel's register tile (TEZGAH_MM_TILE), the A block's rows (TEZGAH_MM_MC) and the
 * macro-kernel's loop order (TEZGAH_MM_LOOP) only decide who computes an element and when:
 * every setting gives the default's bits, on 2 threads (bands) and 16 (shared blocks), on
 * edge-heavy shapes, accumulating and with a bias. Tiles are those of the kernel this CPU
 * runs (all six AVX-512 ones on an AVX-512 CPU; under TEZGAH_CPU_ISA=avx2 only MC and loop). */
static float *mm_with(const char *tile, const char *mc, const char *loop, int threads, int kind,
                      int M, int K, int N) {
  if (tile) setenv("TEZGAH_MM_TILE", tile, 1);
  if (mc) setenv("TEZGAH_MM_MC", mc, 1);
  if (loop) setenv("TEZGAH_MM_LOOP", loop, 1);
  setenv("TZ_MATMUL", "c", 1);
  tz_backend *be = tz_backend_create("cpu", threads, NULL);
  unsetenv("TZ_MATMUL"), unsetenv("TEZGAH_MM_TILE"), unsetenv("TEZGAH_MM_MC");
  unsetenv("TEZGAH_MM_LOOP");
  if (!be) print_error("tile %s MC %s loop %s: %s\n", tile, mc, loop, tz_errmsg());
  assert_non_null(be);
  ot_ctx o;
  ot_init(&o, be, 1234 + kind * 7 + M + K + N);
  float *a = ot_randn(&o, (size_t)M * K, 1), *b = ot_randn(&o, (size_t)K * N, 1);
  float *bs = ot_randn(&o, N, 1), *c0 = ot_randn(&o, (size_t)M * N, 1);
  tz_slice sa = ot_buf(&o, a, 4 * (size_t)M * K), sb = ot_buf(&o, b, 4 * (size_t)K * N),
           sc = ot_buf(&o, c0, 4 * (size_t)M * N);
  if (kind == 0) be->matmul_t(be, sc, sa, sb, ot_buf(&o, bs, 4 * (size_t)N), M, K, N, 0);
  else if (kind == 1) be->matmul(be, sc, sa, sb, M, K, N, 1);
  else be->matmul_at(be, sc, sa, sb, M, K, N, 1);
  float *c = ot_get(&o, sc, (size_t)M * N);
  free(a), free(b), free(bs), free(c0);
  ot_release(&o);
  be->destroy(be);
  return c;
}

static void test_matmul_c_tiles(void **state) {
  static const int shapes[][4] = {{0, 301, 300, 70}, {1, 130, 513, 97}, {2, 77, 600, 45},
                                  {0, 29, 40, 4133}, {2, 1030, 300, 33}};
  static const char *tiles[] = {NULL, "8x32", "12x32", "14x32", "8x32pf", "12x32pf", "14x32pf"};
  static const char *mcs[] = {NULL, "14", "40", "512"};
  static const char *loops[] = {NULL, "panels", "strips"};
  int avx512 = !strncmp(tz_cpu_gemm_kernel(), "avx512 ", 7);
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int kind = shapes[s][0], M = shapes[s][1], K = shapes[s][2], N = shapes[s][3];
    float *ref = mm_with(NULL, NULL, NULL, 1, kind, M, K, N);
    for (int th = 2; th <= 16; th += 14)
      for (int t = 0; t < (avx512 ? 7 : 1); t++)
        for (int m = 0; m < 4; m++)
          for (int l = 0; l < 3; l++) {
            if ((t + m + l + th) % 3 && m + l) continue; /* a spread, not all 168 */
            float *got = mm_with(tiles[t], mcs[m], loops[l], th, kind, M, K, N);
            if (memcmp(ref, got, (size_t)M * N * 4)) {
              print_error("matmul kind %d %dx%dx%d: tile %s MC %s loop %s, %d threads differ "
                          "from the default, 1 thread\n", kind, M, K, N, tiles[t], mcs[m],
                          loops[l], th);
              fail();
            }
            free(got);
          }
    free(ref);
  }
  /* bad settings: one error line each, no backend */
  static const char *bad[][2] = {{"TEZGAH_MM_TILE", "9x32"}, {"TEZGAH_MM_MC", "0"},
                                 {"TEZGAH_MM_MC", "513"}, {"TEZGAH_MM_MC", "64k"},
                                 {"TEZGAH_MM_LOOP", "rows"}};
  for (int i = 0; i < 5; i++) {
    setenv(bad[i][0], bad[i][1], 1);
    tz_backend *be = tz_backend_create("cpu", 1, NULL);
    unsetenv(bad[i][0]);
    assert_null(be);
    assert_non_null(strstr(tz_errmsg(), bad[i][0]));
  }
}

static void test_backend_create(void **state) {
  assert_null(tz_backend_create("vulkan", 1, NULL));
  assert_non_null(strstr(tz_errmsg(), "--backend: 'vulkan' is not one of cpu, webgpu, cuda"));
  setenv("TZ_MATMUL", "fortran", 1);
  assert_null(tz_backend_create("cpu", 1, NULL));
  unsetenv("TZ_MATMUL");
  tz_backend *be = make(NULL);
  tz_buf *b = be->alloc(be, 1000, "x");
  tz_slice s = {b, 0};
  /* 64-byte aligned, or exactly TEZGAH_CPU_MISALIGN bytes past it (the test switch that moves
   * every buffer; ctest's test_ops_cpu_misaligned runs this program under it) */
  const char *mis = getenv("TEZGAH_CPU_MISALIGN");
  assert_true(((uintptr_t)tz_cpu_ptr(s) & 63) == (uintptr_t)(mis && *mis ? atoi(mis) : 0));
  for (int i = 0; i < 250; i++) assert_true(((float *)tz_cpu_ptr(s))[i] == 0.0f);
  be->fill(be, tz_f32(s, 10), 2.5f, 5, TZ_F32);
  float h[16];
  be->download(be, h, s, sizeof h);
  assert_true(h[9] == 0.0f && h[10] == 2.5f && h[14] == 2.5f && h[15] == 0.0f);
  be->add(be, tz_f32(s, 10), tz_f32(s, 10), tz_f32(s, 11), 3);
  be->download(be, h, s, sizeof h);
  assert_true(h[10] == 5.0f && h[12] == 5.0f && h[13] == 2.5f);
  be->free(be, b);
  be->destroy(be);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backend_create),   cmocka_unit_test(test_matmul_c),
      cmocka_unit_test(test_matmul_blas),      cmocka_unit_test(test_bias_bwd),
      cmocka_unit_test(test_adamw),            cmocka_unit_test(test_sum_sq),
      cmocka_unit_test(test_attention_kvcache), cmocka_unit_test(test_determinism_c),
      cmocka_unit_test(test_determinism_blas), cmocka_unit_test(test_crossentropy_extremes),
      cmocka_unit_test(test_matmul_c_threads), cmocka_unit_test(test_matmul_c_tiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
