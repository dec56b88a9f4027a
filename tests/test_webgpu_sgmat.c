/* The subgroup-matrix matmul (src/backend/webgpu/sgmat.h, matmul_sgmat.wgsl) and its choice.
 *  - tz_sgmat_pick over configuration lists (no GPU): the f16 × f16 → f32 16×16×16 entry or none;
 *    tz_sgmat_pick_res the f16 × f16 → f16 one (the attention's f16 dq partials) the same way;
 *  - the f16 conversion used to make the operands (bit patterns of known values);
 *  - on the adapter at hand: where the kernel is not usable (lavapipe: no subgroup matrices;
 *    bun's Dawn on NVIDIA: no ShaderF16) the reason is stated and callers fall back, which is
 *    what CI checks; where it is usable (the H200 under the node Dawn) the three forms of the
 *    model against a double-precision CPU product of the same f16-rounded operands:
 *    X·Wᵀ + bias, dY·W, and dW += dYᵀ·X, on shapes of several tiles and two tile shapes.
 *    Tolerance: |c - ref| <= 1e-4 · Σ|a·b| + 1e-6 (products of f16 values are exact in f32;
 *    only the f32 accumulation order differs).
 * TEZGAH_TEST_SGMAT_REQUIRED=1 (the H200 device script) fails instead of falling back.
 * SKIPPED (77) without Dawn or an adapter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/sgmat.h"
#include "core/error.h"
#include "testutil.h"

static void test_pick(void **state) {
  assert_int_equal(tz_sgmat_pick(NULL, 0), -1);
  WGPUSubgroupMatrixConfig h200[] = {
      {WGPUSubgroupMatrixComponentType_F16, WGPUSubgroupMatrixComponentType_F16, 16, 16, 16, 32, 32},
      {WGPUSubgroupMatrixComponentType_F16, WGPUSubgroupMatrixComponentType_F32, 16, 8, 16, 32, 32},
      {WGPUSubgroupMatrixComponentType_F16, WGPUSubgroupMatrixComponentType_F32, 16, 16, 16, 32, 32},
      {5, WGPUSubgroupMatrixComponentType_U32, 16, 16, 32, 32, 32}};
  assert_int_equal(tz_sgmat_pick(h200, 4), 2);
  assert_int_equal(tz_sgmat_pick(h200, 2), -1); /* f16 result or 16x8 only: none */
  /* the f16-result entry (the attention's dq partials): index 0, none without it */
  assert_int_equal(tz_sgmat_pick_res(h200, 4, WGPUSubgroupMatrixComponentType_F16), 0);
  assert_int_equal(tz_sgmat_pick_res(h200, 4, WGPUSubgroupMatrixComponentType_F32), 2);
  assert_int_equal(tz_sgmat_pick_res(h200 + 1, 3, WGPUSubgroupMatrixComponentType_F16), -1);
  WGPUSubgroupMatrixConfig ints[] = {{5, WGPUSubgroupMatrixComponentType_U32, 16, 16, 32, 32, 32},
                                     {6, WGPUSubgroupMatrixComponentType_I32, 16, 16, 32, 32, 32}};
  assert_int_equal(tz_sgmat_pick(ints, 2), -1);
  assert_int_equal(tz_sgmat_pick_res(ints, 2, WGPUSubgroupMatrixComponentType_F16), -1);
}

static void test_f16(void **state) {
  assert_int_equal(tz_sgmat_f16(1.0f), 0x3c00);
  assert_int_equal(tz_sgmat_f16(-2.0f), 0xc000);
  assert_int_equal(tz_sgmat_f16(65504.0f), 0x7bff);
  assert_int_equal(tz_sgmat_f16(1e6f), 0x7c00);
  assert_int_equal(tz_sgmat_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
  assert_int_equal(tz_sgmat_f16(5.9604645e-8f), 0x0001);      /* smallest subnormal */
  for (int i = -3000; i <= 3000; i += 7) {
    float x = i * 0.01234f;
    float y = tz_sgmat_f32(tz_sgmat_f16(x));
    assert_true(fabsf(y - x) <= fabsf(x) * (1.0f / 2048) + 1e-7f);
  }
}

static uint32_t rng = 12345;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return ((rng >> 8) / 16777216.0f) * 2 - 1;
}

/* one form vs the CPU; returns the worst |err| / bound (1e30 when the run failed) */
static double check_form(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                         uint32_t split, int emu) {
  size_t na = (size_t)M * K, nb = (size_t)N * K;
  uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
  float *af = malloc(na * 4), *bf = malloc(nb * 4), *c = malloc((size_t)M * N * 4), *c0 = malloc((size_t)M * N * 4);
  float *bias = form == TZ_SGMAT_XWT ? malloc(N * 4) : NULL;
  for (size_t i = 0; i < na; i++) a[i] = tz_sgmat_f16(frand()), af[i] = tz_sgmat_f32(a[i]);
  for (size_t i = 0; i < nb; i++) b[i] = tz_sgmat_f16(frand()), bf[i] = tz_sgmat_f32(b[i]);
  for (uint32_t i = 0; bias && i < N; i++) bias[i] = frand();
  for (size_t i = 0; i < (size_t)M * N; i++) c0[i] = c[i] = form == TZ_SGMAT_DYTX ? frand() : 0;
  if (tz_sgmat_run_ex(s, form, t, M, N, K, a, b, bias, c, 0, NULL, split, 0, emu) != 0) {
    printf("run failed: %s\n", tz_errmsg());
    free(a), free(b), free(af), free(bf), free(c), free(c0), free(bias);
    return 1e30; /* failed: reported, the other tiles still run */
  }
  double worst = 0;
  for (uint32_t m = 0; m < M; m++)
    for (uint32_t n = 0; n < N; n++) {
      double ref = 0, mag = 0;
      for (uint32_t k = 0; k < K; k++) {
        double x = form == TZ_SGMAT_DYTX ? af[(size_t)k * M + m] : af[(size_t)m * K + k];
        double y = form == TZ_SGMAT_XWT ? bf[(size_t)n * K + k] : bf[(size_t)k * N + n];
        ref += x * y, mag += fabs(x * y);
      }
      if (bias) ref += bias[n], mag += fabs(bias[n]);
      if (form == TZ_SGMAT_DYTX) ref += c0[(size_t)m * N + n], mag += fabs(c0[(size_t)m * N + n]);
      double err = fabs(c[(size_t)m * N + n] - ref) / (1e-4 * mag + 1e-6);
      if (err > worst) worst = err;
    }
  free(a), free(b), free(af), free(bf), free(c), free(c0), free(bias);
  return worst;
}

/* On the adapter with subgroup matrices (the H200): main's kernel (o: f16 tiles; d: loads from
 * the operands) and every path of matmul_sgmm.wgsl (n: v vec4<u32> tiles, t B transposed, 2 two
 * buffers, p register prefetch, g grouped grid; 4x4 matrices per subgroup), each on a few tiles. */
static const char *const kernel_tiles =
    "o:32:2x2:2x2;o:16:1x2:4x2;o:32:2x2:2x2:d;o:64:4x4:2x2;"
    "n:32:2x2:2x2:v2;n:64:2x4:4x2:vp;n:32:2x4:4x2:v;n:64:2x4:4x2:tp;n:32:2x4:4x2:t2;n:16:2x2:4x4:v2;"
    "n:32:2x4:4x4:vp;n:32:2x2:2x2:p;n:32:2x2:2x2:v2g;n:64:2x4:4x2:vpP4;n:32:2x4:4x2:vpgP5";
/* The emulated builtins (any adapter with ShaderF16): matmul_sgmm.wgsl on small tiles (the
 * emulation repeats each subgroup's work in every invocation). By default the paths of the
 * backend's default tile (SG_DEFAULT in webgpu_ops_matmul.c: vec4<u32> staging, one buffer,
 * register prefetch: "vp"); under TEZGAH_TEST_SWEEP=1 (ctest test_webgpu_sgmat_sweep, label
 * sweep) every path: two buffers, B transposed, the grouped grid, no prefetch, 8-half staging,
 * the persistent grid (P3: 3 workgroups over 6 tiles, instead of the default tile's plain vp),
 * which no adapter takes unless told to (TEZGAH_WEBGPU_SGMAT_TILE). The default list also runs
 * the backend's K <= 1024 tile's paths (SG_SHORTK: persistent grid, grouped order) with a in f32
 * and its f16 copy written by the kernel (fw: the backend's path for an fp32 dY; the copy is
 * compared with a bit for bit). */
static const char *const emu_tiles_default = "n:32:2x1:1x2:vp;n:32:2x1:1x2:vpgP3fw";
static const char *const emu_tiles_sweep =
    "n:32:2x2:2x1:v2;n:32:2x1:1x2:vpP3;n:16:1x2:2x2:v;n:32:2x2:1x2:t2;n:16:2x1:2x1:p;n:16:1x1:1x1:v2g";
static void run_tiles(tz_sgmat *s, const char *names, int emu);

static void test_kernel_or_fallback(void **state) {
  tz_sgmat *s = tz_sgmat_open();
  if (!s) {
    char why[1200];
    snprintf(why, sizeof why, "WebGPU unavailable: %s", tz_errmsg());
    tz_test_skip_all(why);
  }
  printf("adapter: %s\n", tz_sgmat_describe(s));
  const char *why = NULL;
  const char *req = getenv("TEZGAH_TEST_SGMAT_REQUIRED");
  if (!tz_sgmat_usable(s, &why)) {
    printf("subgroup-matrix matmul: not chosen (%s): the fp32 / f16-vector kernels run\n", why);
    assert_non_null(why);
    if (req && !strcmp(req, "1")) print_error("TEZGAH_TEST_SGMAT_REQUIRED=1 but %s\n", why), fail();
    /* the choice must match the facts: no usable kernel means no 16x16x16 f16->f32 config,
     * no ShaderF16 or no single subgroup size; running anyway is refused with one error */
    uint16_t h[256] = {0};
    float c[256];
    tz_sgmat_tile t = {.bk = 16, .sg_m = 1, .sg_n = 1, .tm = 1, .tn = 1};
    assert_int_equal(tz_sgmat_run(s, TZ_SGMAT_XWT, t, 16, 16, 16, h, h, NULL, c, 0, NULL), -1);
    tz_sgmat_close(s);
    return;
  }
  const char *e = getenv("TZ_TEST_SGMAT_TILES"); /* another list (a device script's short run) */
  run_tiles(s, e && *e ? e : kernel_tiles, 0);
  tz_sgmat_close(s);
}

/* Every tile in `names` (';'-separated), every form on a shape of several tiles and k steps, the
 * weight gradient also split over K in 3 pieces (kernel n); emu: the emulated builtins. */
static void run_tiles(tz_sgmat *s, const char *names, int emu) {
  int bad = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", names);
  for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
    tz_sgmat_tile t;
    assert_int_equal(tz_sgmat_tile_parse(tok, &t), 0);
    uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16;
    uint32_t M = (t.swz ? 11 : 3) * bm, N = 2 * bn, K = 5 * t.bk; /* g: a second, partial group of rows */
    const char *fe = getenv("TZ_TEST_SGMAT_FORMS"); /* "0123": forms, 3 = split dW (development) */
    for (int f = 0; f < 4; f++) {
      if (fe && !strchr(fe, '0' + f)) continue;
      uint32_t split = f == 3 ? 3 : 1;
      if (split > 1 && (!t.kern || t.pers)) continue; /* P: no split (tz_sgmat_tile_fits) */
      tz_sgmat_form form = f == 3 ? TZ_SGMAT_DYTX : (tz_sgmat_form)f;
      double w = check_form(s, form, t, M, N, K, split, emu);
      printf("%stile %s form %d (%ux%ux%u, split %u): worst error %.3g of the bound%s\n", emu ? "emulated " : "", tok,
             form, M, N, K, split, w, w <= 1.0 ? "" : "  FAIL");
      bad += !(w <= 1.0);
    }
  }
  assert_int_equal(bad, 0);
}

/* matmul_sgmm.wgsl's indexing (loads, stores, transposition, buffers, bias rounds, split-K)
 * with the subgroup-matrix builtins emulated: on any adapter with ShaderF16 (lavapipe in CI);
 * the default tile's paths, or every path under TEZGAH_TEST_SWEEP=1 (emu_tiles_*).
 * SKIPPED without one. */
static void test_emulated(void **state) {
  tz_sgmat *s = tz_sgmat_open_emu();
  const char *why = NULL;
  if (!s || !tz_sgmat_usable(s, &why)) {
    char msg[1200];
    snprintf(msg, sizeof msg, "emulated subgroup matrices: %s", s ? why : tz_errmsg());
    tz_sgmat_close(s);
    printf("SKIPPED: %s\n", msg);
    skip();
  }
  const char *e = getenv("TZ_TEST_SGMAT_EMU_TILES"); /* another list (development) */
  const char *sw = getenv("TEZGAH_TEST_SWEEP");
  run_tiles(s, e ? e : sw && *sw && strcmp(sw, "0") ? emu_tiles_sweep : emu_tiles_default, 1);
  tz_sgmat_close(s);
}

/* The preprocessor of the kernel files (no GPU): //#if / //#else / //#endif nesting, //#for
 * repetition with {V} substitution, the EMU rewrite. */
static void test_preprocess(void **state) {
  const char *src = "a\n//#if X\nx1\n//#if !Y\nnoty\n//#else\ny\n//#endif\n//#endif\n"
                    "//#for i in N\nl{i}\n//#for j in M\nm{i}{j}\n//#endfor\n//#endfor\nz\n";
  char *o = tz_sgmat_preprocess(src, "//defs X=1 Y=0 N=2 M=2\n");
  assert_string_equal(o, "a\nx1\nnoty\nl0\nm00\nm01\nl1\nm10\nm11\nz\n");
  free(o);
  o = tz_sgmat_preprocess(src, "//defs X=0 N=0\n");
  assert_string_equal(o, "a\nz\n");
  free(o);
  o = tz_sgmat_preprocess("enable chromium_experimental_subgroup_matrix;\n"
                          "let r = subgroupMatrixLoad<Right, col_major>(&bs_, 3u, 4u);\n"
                          "subgroupMatrixStore<row_major>(&c, 1u, x, 2u);\nacc = subgroupMatrixMultiplyAccumulate(l, r, acc);\n",
                          "//defs EMU=1\n");
  assert_string_equal(o, "let r = emu_ld_bs__col_major(3u, 4u);\nemu_st_c_row_major(1u, x, 2u);\nacc = emu_mma(l, r, acc);\n");
  free(o);
  tz_sgmat_tile t;
  char name[40];
  assert_int_equal(tz_sgmat_tile_parse("n:32:2x4:4x2:v2p", &t), 0);
  assert_true(t.kern == 1 && t.bk == 32 && t.sg_m == 2 && t.sg_n == 4 && t.tm == 4 && t.tn == 2 && t.tv8 && t.nbuf == 2 && t.pf);
  tz_sgmat_tile_name(t, name, sizeof name);
  assert_string_equal(name, "n:32:2x4:4x2:v2p");
  assert_int_equal(tz_sgmat_tile_parse("o:64:4x4:2x2", &t), 0);
  assert_true(t.kern == 0 && t.nbuf == 1);
  assert_int_equal(tz_sgmat_tile_parse("n:24:1x1:1x1", &t), -1);
  assert_int_equal(tz_sgmat_tile_parse("o:32:1x1:1x1:v", &t), -1);
  assert_int_equal(tz_sgmat_tile_parse("x", &t), -1);
  /* splits, the earlier rule (TEZGAH_WEBGPU_SGMAT_SLOTS=0): 36 tiles over K = 16384 -> 8 pieces
   * of 2048; enough tiles -> 1 */
  setenv("TEZGAH_WEBGPU_SGMAT_SLOTS", "0", 1);
  assert_int_equal(tz_sgmat_splits(36, 16384, 32), 8);
  assert_int_equal(tz_sgmat_splits(300, 16384, 32), 1);
  assert_int_equal(tz_sgmat_splits(144, 16384, 64), 2);
  unsetenv("TEZGAH_WEBGPU_SGMAT_SLOTS");
  /* the default, the wave rule on 132 slots with 4 % a piece: 144 tiles -> 5 pieces (6 waves:
   * 1.2 · 1.2 = 1.44 against 1.1 · 1.4 = 1.54 at 10), 36 tiles -> 7 (2 waves: 2 / 7 · 1.28),
   * 108 -> 6, 192 -> 2, a short K -> 1 */
  assert_int_equal(tz_sgmat_splits(144, 16384, 64), 5);
  assert_int_equal(tz_sgmat_splits(36, 16384, 32), 7);
  assert_int_equal(tz_sgmat_splits(108, 16384, 64), 6);
  assert_int_equal(tz_sgmat_splits(192, 16384, 64), 2);
  /* at 1 % a piece (TEZGAH_WEBGPU_SGMAT_SPLIT_COST=1, the earlier default): 10 and 11 */
  setenv("TEZGAH_WEBGPU_SGMAT_SPLIT_COST", "1", 1);
  assert_int_equal(tz_sgmat_splits(144, 16384, 64), 10);
  assert_int_equal(tz_sgmat_splits(36, 16384, 32), 11);
  unsetenv("TEZGAH_WEBGPU_SGMAT_SPLIT_COST");
  assert_int_equal(tz_sgmat_splits(3072, 768, 64), 1);
  /* f: operand a in f32 (kernel n only) */
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpgP264f", &t), 0);
  assert_true(t.a32 == 1 && t.pers == 264 && t.swz == 1);
  tz_sgmat_tile_name(t, name, sizeof name);
  assert_string_equal(name, "n:64:2x4:4x2:vpgP264f");
  assert_int_equal(tz_sgmat_tile_parse("o:64:4x4:2x2:f", &t), -1);
  /* w: a's f16 copy written by the kernel, with f, p and one buffer */
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpfw", &t), 0);
  assert_true(t.a32 == 1 && t.a16w == 1);
  tz_sgmat_tile_name(t, name, sizeof name);
  assert_string_equal(name, "n:64:2x4:4x2:vpfw");
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_DYW, 1024, 1024, 1024, 1, 32, 49152, 1024, NULL), 1);
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpw", &t), 0);
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_DYW, 1024, 1024, 1024, 1, 32, 49152, 1024, NULL), 0); /* no f */
  /* the persistent grid: P<n> names n workgroups (P alone 264), needs p and one buffer */
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpgP132", &t), 0);
  assert_int_equal(t.pers, 132);
  assert_int_equal(t.swz, 1);
  tz_sgmat_tile_name(t, name, sizeof name);
  assert_string_equal(name, "n:64:2x4:4x2:vpgP132");
  uint32_t g[3];
  tz_sgmat_grid(t, 1024, 512, 1, g); /* 8 x 4 tiles: 32 < 132 workgroups */
  assert_true(g[0] == 32 && g[1] == 1 && g[2] == 1);
  tz_sgmat_grid(t, 16384, 3072, 1, g);
  assert_true(g[0] == 132 && g[1] == 1 && g[2] == 1);
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vP", &t), 0);
  assert_int_equal(t.pers, 264);
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_XWT, 1024, 1024, 1024, 1, 32, 49152, 1024, NULL), 0); /* no p */
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpP264", &t), 0);
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_XWT, 1024, 1024, 1024, 1, 32, 49152, 1024, NULL), 1);
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_DYTX, 1024, 1024, 1024, 2, 32, 49152, 1024, NULL), 0); /* split */
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpP0", &t), -1);
  tz_sgmat_grid((tz_sgmat_tile){64, 2, 4, 4, 2, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0}, 1024, 512, 3, g); /* no P: (N/BN, M/BM, S) */
  assert_true(g[0] == 4 && g[1] == 8 && g[2] == 3);
  /* o16 (f16 output, the backend's f16 activations): kernel n only, no split; its staging (one
   * 16x16 f32 block per subgroup) shares the bias tile, the larger counted: the H200's default
   * tile then takes 36 864 + 8 192 bytes for X·Wᵀ (of the H200's 49 152) */
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vpgP264", &t), 0);
  t.o16 = 1;
  assert_int_equal(tz_sgmat_tile_smem(t, TZ_SGMAT_XWT, 1), 36864 + 8192);
  assert_int_equal(tz_sgmat_tile_smem(t, TZ_SGMAT_DYW, 0), 35840 + 8192); /* B [BK][BN + 8] */
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_XWT, 1024, 1024, 1024, 1, 32, 49152, 1024, NULL), 1);
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_XWT, 1024, 1024, 1024, 1, 32, 45056 - 16, 1024, NULL), 0);
  t.o16 = 0;
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_XWT, 1024, 1024, 1024, 1, 32, 45056 - 16, 1024, NULL), 1);
  assert_int_equal(tz_sgmat_tile_parse("n:64:2x4:4x2:vp", &t), 0);
  t.o16 = 1;
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_DYTX, 1024, 1024, 4096, 2, 32, 49152, 1024, NULL), 0); /* split */
  assert_int_equal(tz_sgmat_tile_parse("o:64:4x4:2x2", &t), 0);
  t.o16 = 1;
  assert_int_equal(tz_sgmat_tile_fits(t, TZ_SGMAT_DYW, 1024, 1024, 1024, 1, 32, 49152, 1024, NULL), 0); /* kernel o */
  /* TEZGAH_WEBGPU_SGMAT_SLOTS=264: the wave rule on 264 slots; 144 tiles: 5 pieces, 3 waves
   * (11 pieces at 1 % a piece) */
  setenv("TEZGAH_WEBGPU_SGMAT_SLOTS", "264", 1);
  assert_int_equal(tz_sgmat_splits(144, 16384, 64), 5);
  unsetenv("TEZGAH_WEBGPU_SGMAT_SLOTS");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pick), cmocka_unit_test(test_f16),
                                     cmocka_unit_test(test_preprocess), cmocka_unit_test(test_kernel_or_fallback),
                                     cmocka_unit_test(test_emulated)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
