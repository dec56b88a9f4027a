/* The CUDA runtime's memory ops and the cuBLASLt matmul family against the CPU backend, in
 * both precisions (--precision fp32 and bf16).
 *
 * Memory (exact): fresh buffers are zero; upload/download round trips at odd offsets, also
 * larger than the staging slots; copy (also overlapping views of one buffer: memmove);
 * fill in fp32 and bf16 (the value rounded to nearest even; also 70,001 bf16 elements from an
 * odd 16-byte offset: the vector stores' head and tail); zero_ranges (70 ranges, exact);
 * download_act; copy_rows in the
 * act dtype; an impossible allocation fails naming what it was for; mem_used / mem_peak.
 * bf16 parameter mirror (exact): after params_mirror, an upload, fill or copy into the
 * parameters leaves mirror[i] = bf16_rne(params[i]) over the touched range.
 * Matmul (matmul_t with and without bias, matmul, matmul_at; acc 0 and 1; odd sizes, K not a
 * multiple of 8; weights and biases at odd offsets of a registered parameter buffer,
 * activations at odd offsets): out vs the CPU on the same (bf16-rounded in bf16 mode)
 * inputs, |gpu − cpu| ≤ rtol·S + atol with S = Σ_k |a·b| + |out before| + |bias|:
 *   fp32 (strict fp32, no TF32)             rtol 2e-5, atol 1e-6
 *   bf16, matmul_t / matmul (bf16 out)      rtol 8e-3, atol 1e-6  (output rounding 2^-9)
 *   bf16, matmul_at (fp32 out, gradients)   rtol 2e-5, atol 1e-6  (same inputs, fp32 sums)
 * and the fallback kernel (TEZGAH_CUDA_MATMUL=naive) within the same bounds.
 * Without CUDA (build or device): SKIPPED, exit 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "cuda_testutil.h"
#ifdef TZ_HAVE_CUDA
#include "backend/cuda/cuda_internal.h"
#endif

static tz_backend *cpu, *g32, *g16, *gnaive;

static int setup(void **state) {
  g32 = ct_cuda("fp32");
  g16 = ct_cuda("bf16");
  setenv("TEZGAH_CUDA_MATMUL", "naive", 1);
  gnaive = ct_cuda("fp32");
  unsetenv("TEZGAH_CUDA_MATMUL");
  cpu = tz_backend_create("cpu", 2, NULL);
  assert_non_null(cpu);
  return 0;
}
static int teardown(void **state) {
  gnaive->destroy(gnaive);
  g16->destroy(g16);
  g32->destroy(g32);
  cpu->destroy(cpu);
  return 0;
}

/* ---- memory ---- */
static void memory_ops(tz_backend *be) {
  ot_ctx o;
  ot_init(&o, be, 5);
  size_t es = tz_dtype_size(be->act);
  /* zero-filled fresh buffer */
  tz_slice z = ot_buf(&o, NULL, 1000);
  unsigned char zb[1000];
  memset(zb, 0xab, sizeof zb);
  be->download(be, zb, z, sizeof zb);
  for (int i = 0; i < 1000; i++) assert_int_equal(zb[i], 0);
  /* round trip at an odd offset, larger than a staging slot (4 MiB) */
  size_t n = 3u << 20; /* 12 MiB of floats */
  float *h = ot_randn(&o, n, 1), *back = malloc(n * 4);
  tz_slice big = ot_buf(&o, NULL, (n + 8) * 4);
  tz_slice at = tz_at(big, 12);
  be->upload(be, at, h, n * 4);
  be->download(be, back, at, n * 4);
  assert_memory_equal(h, back, n * 4);
  /* copy, disjoint and overlapping (memmove semantics) */
  tz_slice c2 = ot_buf(&o, NULL, 4000 * 4);
  be->copy(be, tz_f32(c2, 1), tz_f32(at, 5), 3000 * 4);
  be->download(be, back, tz_f32(c2, 1), 3000 * 4);
  assert_memory_equal(back, h + 5, 3000 * 4);
  be->copy(be, tz_f32(at, 7), tz_f32(at, 2), 5000 * 4); /* forward overlap */
  be->download(be, back, at, 6000 * 4);
  assert_memory_equal(back, h, 7 * 4);
  assert_memory_equal(back + 7, h + 2, 5000 * 4);
  /* fill fp32 and bf16 */
  be->fill(be, tz_f32(c2, 3), 1.3f, 37, TZ_F32);
  be->download(be, back, c2, 41 * 4);
  for (int i = 0; i < 41; i++) { /* c2[0] untouched, c2[1..3000] = h[5..], c2[3..39] = 1.3 */
    float want = i == 0 ? 0.0f : i >= 3 && i < 40 ? 1.3f : h[4 + i];
    if (back[i] != want) fail_msg("fill [%d]: got %g want %g", i, back[i], want);
  }
  tz_slice f16 = ot_buf(&o, NULL, 64 * 2);
  be->fill(be, tz_at(f16, 2), 1.3f, 61, TZ_BF16);
  uint16_t hb[64];
  be->download(be, hb, f16, sizeof hb);
  for (int i = 0; i < 64; i++) assert_int_equal(hb[i], i >= 1 && i < 62 ? ct_f32_to_bf16(1.3f) : 0);
  be->fill(be, f16, -INFINITY, 1, TZ_BF16);
  be->download(be, hb, f16, 2);
  assert_int_equal(hb[0], 0xff80);
  /* a longer bf16 fill (16-byte stores between a head and a tail, several blocks): elements
   * 3 .. 3 + 70001 of a 70016-element buffer become bf16(-2.75), the rest stay 0 */
  enum { NL = 70016, FL = 70001 };
  tz_slice fl = ot_buf(&o, NULL, NL * 2);
  uint16_t *hl = malloc(NL * 2);
  assert_non_null(hl);
  be->fill(be, tz_at(fl, 6), -2.75f, FL, TZ_BF16);
  be->download(be, hl, fl, NL * 2);
  for (int i = 0; i < NL; i++)
    if (hl[i] != (i >= 3 && i < 3 + FL ? ct_f32_to_bf16(-2.75f) : 0)) fail_msg("bf16 fill [%d]: got 0x%04x", i, hl[i]);
  free(hl);
  /* zero_ranges over big (h at element 3): 70 ranges (two launches of at most 64), lengths 0,
   * 1..9000 (over a block's 4096), gaps between them; everything else keeps its value */
  assert_non_null(be->zero_ranges);
  be->upload(be, at, h, n * 4); /* (the overlapping copy above moved some) */
  size_t zr[140], pos = 5;
  float *want = malloc((n + 8) * 4);
  memset(want, 0, 3 * 4);
  memcpy(want + 3, h, n * 4);
  for (int i = 0; i < 70; i++) {
    size_t len = i == 4 ? 0 : i % 7 == 3 ? 9000 : (size_t)(i * 37 % 101) + 1;
    zr[2 * i] = pos, zr[2 * i + 1] = len;
    memset(want + pos, 0, len * 4);
    pos += len + (size_t)(i % 5);
  }
  be->zero_ranges(be, big.buf, zr, 70);
  float *zd = malloc((n + 8) * 4);
  be->download(be, zd, big, (n + 8) * 4);
  assert_memory_equal(zd, want, (n + 8) * 4);
  free(zd), free(want);
  /* act round trip through download_act */
  float x[301];
  for (int i = 0; i < 301; i++) x[i] = h[i] * 3;
  tz_slice xa = ct_act_upload(&o, x, 301);
  float *xd = ct_act_download(&o, tz_elems(xa, 1, be->act), 300);
  ct_round(be, x, 301);
  assert_memory_equal(xd, x + 1, 300 * 4);
  free(xd);
  /* copy_rows (act elements): 7 rows of 5 from stride 13 to stride 9 */
  tz_slice dr = ct_act_upload(&o, NULL, 70);
  be->copy_rows(be, tz_elems(dr, 2, be->act), 9, tz_elems(xa, 3, be->act), 13, 7, 5);
  float *rows = ct_act_download(&o, dr, 70);
  for (int i = 0; i < 70; i++) {
    int r = (i - 2) / 9, cc = (i - 2) % 9;
    float want = i >= 2 && r < 7 && cc < 5 ? x[3 + r * 13 + cc] : 0.0f;
    if (rows[i] != want) fail_msg("copy_rows [%d]: got %g want %g", i, rows[i], want);
  }
  free(rows);
  /* memory accounting and an impossible allocation */
  size_t used = be->mem_used(be), peak = be->mem_peak(be);
  assert_true(used >= (n + 8) * 4 && peak >= used);
  tz_buf *tmp = be->alloc(be, 1 << 20, "accounting");
  assert_int_equal(be->mem_used(be), used + (1 << 20));
  be->free(be, tmp);
  assert_int_equal(be->mem_used(be), used);
  assert_null(be->alloc(be, (size_t)1 << 52, "huge tensor"));
  tz_test_assert_msg_has("huge tensor");
  tz_test_assert_msg_has("cuda: out of device memory");
  (void)es;
  free(h), free(back);
  ot_release(&o);
}
static void test_memory_fp32(void **state) { memory_ops(g32); }
static void test_memory_bf16(void **state) { memory_ops(g16); }

/* ---- the bf16 mirror ---- */
#ifdef TZ_HAVE_CUDA
static void check_mirror(tz_backend *be, tz_slice params, size_t n, const char *what) {
  tzc_ctx *c = tzc(be);
  assert_true(c->params == params.buf && c->params_bf16 && c->n_params == n);
  float *p = malloc(n * 4);
  uint16_t *m = malloc(n * 2);
  be->download(be, p, params, n * 4);
  struct tz_buf mb = {c->params_bf16, n * 2};
  be->download(be, m, (tz_slice){&mb, 0}, n * 2);
  for (size_t i = 0; i < n; i++)
    if (m[i] != ct_f32_to_bf16(p[i])) fail_msg("%s: mirror[%zu] = 0x%04x, params %.9g -> 0x%04x", what, i, m[i], p[i],
                                               ct_f32_to_bf16(p[i]));
  free(p), free(m);
}
#endif
static void test_mirror(void **state) {
#ifdef TZ_HAVE_CUDA
  ot_ctx o;
  ot_init(&o, g16, 9);
  size_t n = 5000;
  float *h = ot_randn(&o, n, 2);
  tz_slice p = ct_params(&o, h, n);
  check_mirror(g16, p, n, "after params_mirror + upload");
  float *u = ot_randn(&o, 333, 5);
  g16->upload(g16, tz_f32(p, 17), u, 333 * 4);
  check_mirror(g16, p, n, "after an upload at an odd offset");
  g16->fill(g16, tz_f32(p, 1001), 0.1f, 77, TZ_F32);
  check_mirror(g16, p, n, "after fill");
  g16->copy(g16, tz_f32(p, 2001), tz_f32(p, 3), 999 * 4);
  check_mirror(g16, p, n, "after copy");
  /* fp32 mode keeps no mirror */
  ot_ctx o2;
  ot_init(&o2, g32, 1);
  ct_params(&o2, h, 10);
  assert_null(tzc(g32)->params_bf16);
  ot_release(&o2);
  /* freeing the buffer ends the registration */
  ot_release(&o);
  assert_null(tzc(g16)->params_bf16);
  assert_null(tzc(g16)->params);
  free(h), free(u);
#else
  skip();
#endif
}

/* ---- matmul family vs the CPU ---- */
enum { MM_T, MM_NN, MM_AT };
static const char *const form_name[] = {"matmul_t", "matmul", "matmul_at"};

/* One case: form, sizes, acc, bias (matmul_t only), pad = odd element offset of tensors. */
static void check_mm(tz_backend *be, int form, int M, int K, int N, int acc, int bias, int pad) {
  ot_ctx o, oc;
  ot_init(&o, be, 1000 + M * 31 + K * 7 + N + form);
  ot_init(&oc, cpu, 1);
  int bf16 = be->act == TZ_BF16, out_act = form != MM_AT;
  size_t na = (size_t)M * K, nb = (size_t)K * N, no = (size_t)M * N;
  float *a = ot_randn(&o, na, 1), *b = ot_randn(&o, nb, 1), *bs = ot_randn(&o, N, 1), *o0 = ot_randn(&o, no, 1);
  ct_round(be, a, na);
  ct_round(be, b, nb);
  ct_round(be, bs, N);
  if (out_act) ct_round(be, o0, no);
  if (!acc)
    for (size_t i = 0; i < no; i++) o0[i] = NAN; /* acc = 0 must overwrite */
  /* GPU tensors at odd offsets: a (and b for matmul_at) in act buffers; weights b and bias in
   * a registered parameter buffer; out in act (or fp32 for matmul_at) */
  float *pa = calloc(na + pad, 4), *po = calloc(no + pad, 4), *pb = calloc(nb + pad, 4);
  memcpy(pa + pad, a, na * 4), memcpy(po + pad, o0, no * 4), memcpy(pb + pad, b, nb * 4);
  tz_slice ga = tz_elems(ct_act_upload(&o, pa, na + pad), pad, be->act);
  tz_slice go = out_act ? tz_elems(ct_act_upload(&o, po, no + pad), pad, be->act) : tz_f32(ot_buf(&o, po, (no + pad) * 4), pad);
  tz_slice gb, gbias = TZ_NONE;
  if (form == MM_AT) {
    gb = tz_elems(ct_act_upload(&o, pb, nb + pad), pad, be->act);
  } else {
    size_t boff = (size_t)pad, biasoff = boff + nb + 1 + (pad & 2);
    float *params = calloc(biasoff + N + 3, 4);
    memcpy(params + boff, b, nb * 4);
    memcpy(params + biasoff, bs, (size_t)N * 4);
    tz_slice P = ct_params(&o, params, biasoff + N + 3);
    gb = tz_f32(P, boff);
    if (bias) gbias = tz_f32(P, biasoff);
    free(params);
  }
  if (form == MM_T) be->matmul_t(be, go, ga, gb, gbias, M, K, N, acc);
  if (form == MM_NN) be->matmul(be, go, ga, gb, M, K, N, acc);
  if (form == MM_AT) be->matmul_at(be, go, ga, gb, M, K, N, acc);
  float *got = out_act ? ct_act_download(&o, go, no) : ot_get(&o, go, no);
  /* CPU reference on the same values */
  float *o0c = malloc(no * 4);
  for (size_t i = 0; i < no; i++) o0c[i] = acc ? o0[i] : 0;
  tz_slice ca = ot_buf(&oc, a, na * 4), cb = ot_buf(&oc, b, nb * 4), co = ot_buf(&oc, o0c, no * 4);
  tz_slice cbias = bias ? ot_buf(&oc, bs, (size_t)N * 4) : TZ_NONE;
  if (form == MM_T) cpu->matmul_t(cpu, co, ca, cb, cbias, M, K, N, acc);
  if (form == MM_NN) cpu->matmul(cpu, co, ca, cb, M, K, N, acc);
  if (form == MM_AT) cpu->matmul_at(cpu, co, ca, cb, M, K, N, acc);
  float *ref = ot_get(&oc, co, no);
  /* bound: rtol·S + atol, S = Σ|a·b| + |out before| + |bias| */
  double rtol = bf16 && out_act ? 8e-3 : 2e-5, atol = 1e-6;
  int bad = 0;
  for (int m = 0; m < M && bad < 5; m++)
    for (int nn = 0; nn < N && bad < 5; nn++) {
      double s = (acc ? fabs(o0[(size_t)m * N + nn]) : 0) + (bias ? fabs(bs[nn]) : 0);
      for (int k = 0; k < K; k++) {
        double x = form == MM_AT ? a[(size_t)k * M + m] : a[(size_t)m * K + k];
        double y = form == MM_T ? b[(size_t)nn * K + k] : b[(size_t)k * N + nn];
        s += fabs(x * y);
      }
      size_t i = (size_t)m * N + nn;
      double e = fabs((double)got[i] - ref[i]);
      if (!(e <= rtol * s + atol)) {
        print_error("%s %s M=%d K=%d N=%d acc=%d bias=%d pad=%d: [%d,%d] got %.9g want %.9g (|d| %.3g > %.3g)\n",
                    form_name[form], tz_dtype_name(be->act), M, K, N, acc, bias, pad, m, nn, got[i], ref[i], e,
                    rtol * s + atol);
        bad++;
      }
    }
  if (bad) fail();
  free(a), free(b), free(bs), free(o0), free(o0c), free(pa), free(po), free(pb), free(got), free(ref);
  ot_release(&o);
  ot_release(&oc);
}

static void matmul_suite(tz_backend *be) {
  static const int shapes[][3] = {{1, 1, 1},    {7, 13, 5},    {33, 37, 29},   {64, 64, 64},    {3, 96, 202},
                                  {130, 67, 257}, {96, 768, 50}, {256, 384, 200}, {1, 64, 1024}, {200, 1, 33}};
  int ns = (int)(sizeof shapes / sizeof *shapes);
  for (int s = 0; s < ns; s++)
    for (int form = 0; form < 3; form++)
      for (int acc = 0; acc < 2; acc++) {
        int pad = (s + acc) & 1 ? 3 : 8; /* odd and 16-byte-aligned (fp32) offsets */
        check_mm(be, form, shapes[s][0], shapes[s][1], shapes[s][2], acc, 0, pad);
        if (form == MM_T) check_mm(be, form, shapes[s][0], shapes[s][1], shapes[s][2], acc, 1, pad + 2);
      }
  check_mm(be, MM_T, 4, 0, 5, 1, 1, 3); /* K = 0: out (+)= bias */
  /* repeated calls hit the descriptor cache (same shapes, same alignments) */
  for (int r = 0; r < 3; r++) check_mm(be, MM_T, 33, 37, 29, 1, 1, 5);
}
/* Well-aligned shapes must run on cuBLASLt, not on the fallback kernel. */
static void assert_cublaslt(tz_backend *be) {
#ifdef TZ_HAVE_CUDA
  long long before = tzc_matmul_fallbacks(be);
  for (int form = 0; form < 3; form++) check_mm(be, form, 64, 64, 128, form & 1, form == MM_T, 8);
  check_mm(be, MM_T, 96, 768, 256, 0, 1, 8);
  printf("%s: %lld matmul calls fell back from cuBLASLt in the suite; 0 among the aligned ones\n",
         tz_dtype_name(be->act), before);
  assert_true(tzc_matmul_fallbacks(be) == before);
#endif
}
static void test_matmul_fp32(void **state) {
  matmul_suite(g32);
  assert_cublaslt(g32);
}
static void test_matmul_bf16(void **state) {
  matmul_suite(g16);
  assert_cublaslt(g16);
}
static void test_matmul_fallback(void **state) { matmul_suite(gnaive); }

/* ---- profiling: the table prints, a matmul's rate in GFLOP/s and a memory-bound op's (add,
 * which declares both its FLOP and its bytes) in GB/s (the timings are the GPU's) ---- */
static void test_profile(void **state) {
  setenv("TEZGAH_PROFILE", "1", 1);
  tz_backend *be = ct_cuda("bf16");
  unsetenv("TEZGAH_PROFILE");
  ot_ctx o;
  ot_init(&o, be, 3);
  tz_slice x = ct_act_upload(&o, NULL, 64 * 64), w = ct_params(&o, NULL, 64 * 64), y = ct_act_upload(&o, NULL, 64 * 64);
  for (int i = 0; i < 5000; i++) be->matmul_t(be, y, x, w, TZ_NONE, 64, 64, 64, 0); /* > one event pool */
  be->fill(be, y, 1.0f, 64 * 64, be->act);
  be->add(be, y, y, x, 64 * 64);
  char path[] = "/tmp/tz_cuda_prof_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  tz_cuda_profile_print(be, 5);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  char *d = NULL;
  size_t n = 0;
  assert_int_equal(tz_read_file(path, &d, &n), 0);
  unlink(path);
  fputs(d, stderr);
  const char *mm = strstr(d, "\n  matmul_t "), *add = strstr(d, "\n  add ");
  assert_non_null(mm);
  assert_non_null(add);
  const char *mm_end = strchr(mm + 1, '\n'), *add_end = strchr(add + 1, '\n');
  assert_true(mm_end && add_end);
  const char *r1 = strstr(mm, "GFLOP/s"), *r2 = strstr(add, "GB/s");
  assert_true(r1 && r1 < mm_end);  /* the matmul: GFLOP/s */
  assert_true(r2 && r2 < add_end); /* add: GB/s (it said GFLOP/s of its one FLOP an element) */
  free(d);
  tz_cuda_profile_reset(be);
  tz_cuda_profile_print(be, 1);
  ot_release(&o);
  be->destroy(be);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_fp32), cmocka_unit_test(test_memory_bf16),   cmocka_unit_test(test_mirror),
      cmocka_unit_test(test_matmul_fp32), cmocka_unit_test(test_matmul_bf16),   cmocka_unit_test(test_matmul_fallback),
      cmocka_unit_test(test_profile),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
