/* Every WebGPU op against the CPU backend on fresh random inputs (fp32 path).
 *
 * Each case uploads the same host tensors to both backends, at odd float offsets inside
 * their buffers (exercising the aligned-binding + element-offset path), runs the op, and
 * compares every output. Shapes are odd on purpose: T not a multiple of the 64-row attention
 * tile or the 128-wide matmul tile, B > 1, GQA (n_kv_head < n_head), C above 256 (more than
 * one element per reduction thread).
 * Tolerances (|gpu − cpu| ≤ max(atol, rtol·|cpu|) unless stated):
 *   elementwise, embed_fwd, fill/copy/add/rope   rtol 1e-5, atol 1e-6
 *   embed_bwd                                    bitwise equal: every element's adds in the
 *                                                CPU's order (positions ascending), no atomics
 *   rmsnorm / layernorm fwd and bwd              rtol 1e-4, atol 1e-5
 *   matmul family, bias_bwd                      |err| ≤ 2e-5·Σ|terms| + 1e-6
 *   matmul family on subgroup matrices (f16      |err| ≤ 1e-3·Σ|terms| + 1e-5 (each operand
 *     operands, f32 accumulation; test_matmul_    rounded to f16: ≤ 2^-11 relative each, so
 *     sgmat, where tz_webgpu_describe says so)    ≤ 2·2^-11 ≈ 9.8e-4 per product; f32 sums below)
 *   matmul_at_swiglu_a (vs CPU swiglu + matmul_at) the same, terms |a·silu(g)·u|
 *   attention fwd / bwd (both kernel sets)       rtol 1e-4, atol 2e-5 (head_dim 32 / 64 / 128 on
 *                                                the flash kernels, 16 / 64 / 128 on the general
 *                                                ones; T = 8192 on the flash kernels: sweep)
 *   gelu / swiglu fwd, bwd                       rtol 1e-5, atol 1e-6 (gelu_bwd atol 1e-5:
 *                                                exp-based tanh in the far tail)
 *   crossentropy losses / dlogits                rtol 1e-5, atol 1e-6
 *   crossentropy at extreme logits               against float64 (xent_extremes.h)
 *   sum_sq                                       rtol 1e-5 (fp32 tree sum vs fp64)
 *   adamw params / m / v                         rtol 1e-5, atol 1e-7
 *   fill's vector form (test_fill_vec: fp32 and   byte for byte (the value's bytes in the range,
 *     f16, both TEZGAH_WEBGPU_FILL_VEC settings)  the pattern around it)
 *   the attention backward's D pass alone         D |err| ≤ 2e-5·Σ_d |dout·out| (fp32 sums of
 *     (test_attention_d_prep: f16 dout and out,   exact f16 products); a non-finite D the same
 *     vector and scalar forms, host reference)    infinity; dout's f16 copy bit for bit
 * The f16 weight mirror (test_w16, TEZGAH_WEBGPU_F16=1; SKIPPED without ShaderF16): weights
 * in a buffer registered with params_mirror(), read as f16 by the forward:
 *   embed_fwd (wte + wpe)                        |err| ≤ 1e-3·(|wte| + |wpe|) + 1e-6
 *   matmul_t (b = weight, with bias)             |err| ≤ 2e-3·Σ|a·b| + 1e-5
 *   after adamw and after an upload into the     same bound (the mirror follows the master);
 *   parameters                                   adamw's fp32 params rtol 1e-5, atol 1e-7
 *   matmul_t with K % 4 != 0 (f16 element loads)  the same bound
 *   matmul (backward dX = dY·W)                  the fp32 bound above (reads fp32 W)
 *   and the f16 results must differ from fp32 somewhere (the mirror really was read).
 * f16 matmul inputs (test_act16, TEZGAH_WEBGPU_F16=1 TEZGAH_WEBGPU_ACT16=1, be->act_mm = TZ_F16;
 * SKIPPED without ShaderF16; every other case runs with TEZGAH_WEBGPU_ACT16=0, fp32 "mmin"):
 *   layernorm / rmsnorm / gelu / swiglu /       f16 outputs: rtol 6e-4 (f16 rounding ≤ 2^-11 =
 *   attention forward outputs                    4.9e-4 relative on top of each fp32 bound), atol
 *                                                1e-5 (2e-5 attention); statistics and lse at the
 *                                                fp32 bounds
 *   attention_bwd with the f16 out               fp32 bound, against the CPU fed the same f16 out
 *   matmul_t with f16 a, matmul_at with f16 b    the fp32 matmul bound, against the CPU fed the
 *     (vec4 and element loads, bias, acc, the     same f16-rounded operands (f16 values are exact
 *     transposed-weight form, the general         in fp32: only the summation order differs)
 *     kernel through its fp32 copy)
 *   the subgroup-matrix path's f16 operands       |err| ≤ 1e-3·Σ|a·b| + 1e-5 (each operand
 *     (act16_sg_chain, act16_xent_chain,          rounded to f16 once), the produced gradients
 *     act16_grad_chain: the weight mirror, reused at their own fp32 bounds; on lavapipe the
 *     dY copies, crossentropy's and the           vector kernels run the same calls (copies
 *     backward producers' f16 gradient copies)    made with TEZGAH_WEBGPU_GRAD16=1, not read)
 * f16 activations (test_act_f16_elem, TEZGAH_WEBGPU_ACT=f16, be->act = TZ_F16; SKIPPED without
 * ShaderF16): every act input rounded to f16 on the host and given to both backends, so only the
 * GPU's f16 outputs add error:
 *   add, gelu / swiglu fwd and bwd, layernorm /   |err| ≤ 1.5e-3·|cpu| + 1e-4 (the fp32 bound plus
 *   rmsnorm fwd, embed_fwd, dlogits               f16's 2^-11 rounding of the result; dinp +=
 *                                                 2e-4, dlogits 1e-4·dscale)
 *   norm dw / db, bias_bwd (fp32 sums of f16)     rtol 1e-3, atol 1e-3·sqrt(N)
 *   bias_bwd on each column-sum path              the same (test_act_f16_bias: colsum_partial_f16x8,
 *                                                 its fallbacks, TEZGAH_WEBGPU_COLSUM=0)
 *   the 16-byte norms (test_act_f16_norms:        the norms' bounds above (mean, rstd rtol 1e-4);
 *   layernorm_v8 / rmsnorm_v8, dw / db fused or   dw / db accumulated into random values; the path
 *   not, their edges and declines)                counted (tz_webgpu_norm_v8_calls)
 *   embed_bwd, fill, copy_rows, download_act      exact; losses rtol 1e-5
 *   rope (in place; the vector and per-element    rtol 1e-5 + 2^-11, atol 1e-5 (as
 *   forms)                                        test_act_f16_attention's)
 *   a store beyond ±65504                         ±inf (not saturated; add, and the gradients of
 *                                                 swiglu_bwd, rmsnorm_bwd (8-byte and v8 forms)
 *                                                 and rope: af_special)
 *   a NaN input                                   NaN through add, rmsnorm_bwd's row and rope's
 *                                                 pair; 0 from swiglu_bwd (the seed's guard)
 * f16 activations in the matmul family (test_act_f16_matmul; the same backend; a and the f16
 * operands rounded to f16 on the host, fp32 weights not):
 *   matmul_t (bias, acc), matmul (acc), matmul_at  |err| ≤ tol·Σ|terms| + atol + 2^-11·|cpu| for an
 *   (acc), matmul_at_swiglu_a on the vector        f16 output (its rounding), without the last
 *   kernels, the general kernel, the split paths,  term for the fp32 parameter gradients; terms:
 *   and the subgroup-matrix kernels (emulated:     the products, the bias and the accumulated old
 *   TEZGAH_WEBGPU_SGMAT_EMU=1, every call forced   value. tol 2e-5, atol 1e-6 on the vector and
 *   onto them natively: SGMAT_NATIVE16=1)          general kernels (fp32 arithmetic on the same
 *                                                  values); 1e-3, 1e-5 on the subgroup matrices
 *                                                  (f16 operands) and the split paths (matmul's
 *                                                  K pieces each rounded to f16)
 * Flash attention on subgroup matrices (test_attention_sgmat, TEZGAH_WEBGPU_ATTN_SGMAT=1; SKIPPED
 * where the adapter has none, lavapipe; every other case runs with TEZGAH_WEBGPU_ATTN_SGMAT=0):
 *   out, dq, dk, dv (f32 and f16 out)            |err| ≤ 1e-2·|cpu| + 1.5e-2·max(rms(cpu), 0.1) (q, k, v,
 *                                                dout, P and dS in f16: see SG_RTOL)
 *   lse                                          |err| ≤ 1.5e-2
 * f16 activations, rope and attention (test_act_f16_attention: TEZGAH_WEBGPU_F16=1
 * TEZGAH_WEBGPU_ACT16=1 TEZGAH_WEBGPU_ACT=f16, be->act = TZ_F16; SKIPPED without ShaderF16): the
 * f16 tensors hold f16-rounded random values and the CPU gets the same values in fp32, so the
 * only new error is the rounding of each f16 output, ≤ 2^-11 = 4.9e-4 relative (AF16_U), added
 * to the fp32 bound: |err| ≤ rtol·|cpu| + atol (the sum; af16_close) with
 *   rope (f16 qkv in place)                      rtol 1e-5 + 2^-11, atol 1e-5
 *   attention out (f16), dq, dk, dv (f16) on     rtol 1e-4 + 2^-11, atol 2e-5; lse (fp32) rtol
 *     the fp32 flash kernels (through fp32        1e-4, atol 2e-5; the backward's CPU fed the
 *     copies), the general ones (native) and      same f16 out
 *     KV-cache decoding (Tq 1, native)
 *   the same on subgroup matrices (native f16;   |err| ≤ (SG_RTOL + 2^-11)·|cpu| + SG_ARMS·max(rms,
 *     the real kernels where the adapter has      0.1); lse |err| ≤ 1.5e-2
 *     them, else the software stand-in)
 * Needs Dawn and a WebGPU adapter (lavapipe in CI); without them it prints SKIPPED and
 * exits 77. */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "backend/webgpu/sgmat.h"
#include "ops_testutil.h"
#include "xent_extremes.h"

static tz_backend *cpu, *gpu;

static int setup(void **state) {
  /* the fp32 op contracts: matmul inputs ("mmin", backend.h) in fp32 here; test_act16 makes its
   * own backend with them in f16 */
  setenv("TEZGAH_WEBGPU_ACT16", "0", 1);
  /* ... and every activation fp32 (the f16 ones, the default with f16 matmul inputs, in the
   * test_act_f16* cases, which set TEZGAH_WEBGPU_ACT=f16 for their own backends) */
  setenv("TEZGAH_WEBGPU_ACT", "f32", 1);
  /* the attention tests of the fp32 kernels run them on every adapter: the subgroup-matrix
   * kernels (f16 operands) only in test_attention_sgmat */
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "0", 1);
  gpu = tz_backend_create("webgpu", 0, NULL);
  if (!gpu) {
    char why[1200];
    snprintf(why, sizeof why, "WebGPU unavailable: %s", tz_errmsg());
    tz_test_skip_all(why);
  }
  cpu = tz_backend_create("cpu", 2, NULL);
  assert_non_null(cpu);
  /* the reductions' path: subgroups where offered, workgroup-only with TEZGAH_WEBGPU_SUBGROUPS=0
   * (ctest test_webgpu_ops_nosubgroups), subgroups required with =1 */
  const char *d = tz_webgpu_describe(gpu), *se = getenv("TEZGAH_WEBGPU_SUBGROUPS");
  printf("webgpu: %s\n", d);
  if (se && !strcmp(se, "0")) assert_non_null(strstr(d, "reductions: workgroup"));
  else if (se && *se) assert_non_null(strstr(d, "reductions: subgroups"));
  return 0;
}
static int teardown(void **state) {
  gpu->destroy(gpu);
  cpu->destroy(cpu);
  return 0;
}

/* Sweep cases: tuning variants that no adapter chooses by default (docs/RELIABILITY.md, "WebGPU
 * kernel variants"). They run under TEZGAH_TEST_SWEEP=1 (ctest -L sweep, which .ci/run runs after
 * the README's test command) or their own switch `var`; otherwise the case is skipped with a
 * SKIPPED line, so a plain run of this program is the default suite. */
static int sweep_on(const char *name, const char *var) {
  if (getenv("TEZGAH_TEST_SWEEP") || getenv(var)) return 1;
  printf("SKIPPED: %s is a tuning sweep (%s%sTEZGAH_TEST_SWEEP=1 runs it; ctest -L sweep)\n", name,
         strcmp(var, "TEZGAH_TEST_SWEEP") ? var : "", strcmp(var, "TEZGAH_TEST_SWEEP") ? "=1 or " : "");
  return 0;
}

/* ---- twin tensors ---- */
#define MAXT 12
#define PAD 3 /* floats before each tensor in its buffer (odd offsets: the general kernels) */
static int g_pad = PAD; /* 4: 16-byte aligned tensors, which the vec4 matmul path needs */
typedef struct {
  size_t n;
  float *h;     /* host values (int32 bit patterns for integer tensors) */
  float *out[2]; /* results downloaded from cpu (0) and gpu (1) */
} ten;
typedef struct {
  ten t[MAXT];
  int nt;
  tz_rng rng;
} kase;

static void k_init(kase *k, uint64_t seed) {
  memset(k, 0, sizeof *k);
  tz_rng_seed(&k->rng, seed, 11);
}
static int k_randn(kase *k, size_t n, float scale) {
  ten *t = &k->t[k->nt];
  t->n = n;
  t->h = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) t->h[i] = tz_rng_normal(&k->rng) * scale;
  return k->nt++;
}
static int k_ints(kase *k, const int32_t *v, size_t n) {
  ten *t = &k->t[k->nt];
  t->n = n;
  t->h = malloc((n ? n : 1) * sizeof(float));
  memcpy(t->h, v, n * 4);
  return k->nt++;
}
static void k_free(kase *k) {
  for (int i = 0; i < k->nt; i++) free(k->t[i].h), free(k->t[i].out[0]), free(k->t[i].out[1]);
}

typedef void (*opfn)(tz_backend *be, tz_slice *s, const int *d);

/* Run op on both backends; afterwards t[i].out[0/1] hold every tensor's final contents. */
static void k_run(kase *k, opfn f, const int *dims) {
  tz_backend *bes[2] = {cpu, gpu};
  for (int b = 0; b < 2; b++) {
    tz_backend *be = bes[b];
    tz_buf *bufs[MAXT];
    tz_slice s[MAXT];
    for (int i = 0; i < k->nt; i++) {
      bufs[i] = be->alloc(be, (k->t[i].n + 2 * g_pad) * 4, "test");
      assert_non_null(bufs[i]);
      s[i] = (tz_slice){bufs[i], (size_t)g_pad * 4};
      be->upload(be, s[i], k->t[i].h, k->t[i].n * 4);
    }
    f(be, s, dims);
    for (int i = 0; i < k->nt; i++) {
      k->t[i].out[b] = malloc((k->t[i].n + 1) * 4);
      be->download(be, k->t[i].out[b], s[i], k->t[i].n * 4);
    }
    for (int i = 0; i < k->nt; i++) be->free(be, bufs[i]);
  }
}

static void k_check(kase *k, int i, const char *what, double rtol, double atol) {
  double *ref = ot_dbl(k->t[i].out[0], k->t[i].n);
  ot_close(what, k->t[i].out[1], ref, k->t[i].n, rtol, atol);
  free(ref);
}

/* ---- memory ops ---- */
static void op_misc(tz_backend *be, tz_slice *s, const int *d) {
  be->fill(be, s[0], 1.5f, 37, TZ_F32);
  be->add(be, s[1], s[1], s[2], 2501); /* add4: three workgroups of 1024, the last partial */
  be->copy(be, s[3], s[2], 500 * 4);
  be->copy_rows(be, s[4], 9, s[2], 13, 7, 5);
}
static void test_memory_ops(void **state) {
  kase k;
  k_init(&k, 1);
  k_randn(&k, 40, 1);
  k_randn(&k, 2501, 1);
  k_randn(&k, 2501, 1);
  k_randn(&k, 600, 1);
  k_randn(&k, 70, 1);
  k_run(&k, op_misc, NULL);
  k_check(&k, 0, "fill", 0, 0);
  k_check(&k, 1, "add (aliased)", 1e-6, 0);
  k_check(&k, 3, "copy", 0, 0);
  k_check(&k, 4, "copy_rows", 0, 0);
  k_free(&k);
  /* a zero-filled fresh buffer and an over-large allocation */
  tz_buf *b = gpu->alloc(gpu, 100, "x");
  float h[25];
  gpu->download(gpu, h, (tz_slice){b, 0}, 100);
  for (int i = 0; i < 25; i++) assert_true(h[i] == 0.0f);
  gpu->free(gpu, b);
  assert_null(gpu->alloc(gpu, (size_t)1 << 50, "huge tensor"));
  assert_non_null(strstr(tz_errmsg(), "huge tensor"));
}

/* ---- embedding ---- */
static void op_embed(tz_backend *be, tz_slice *s, const int *d) {
  tz_slice wpe = d[4] ? s[3] : TZ_NONE, dwpe = d[4] ? s[5] : TZ_NONE;
  be->embed_fwd(be, s[0], s[1], s[2], wpe, d[0], d[1], d[2], d[3]);
  be->embed_bwd(be, s[4], dwpe, s[6], s[1], d[0], d[1], d[2], d[3]);
}
/* Exact equality: the backward adds each element's gradients in the CPU's order. */
static void k_check_exact(kase *k, int i, const char *what) {
  const float *got = k->t[i].out[1], *want = k->t[i].out[0];
  for (size_t j = 0; j < k->t[i].n; j++)
    if (memcmp(&got[j], &want[j], 4)) {
      print_error("%s: element %zu got %.9g want %.9g (bitwise equality expected)\n", what, j, (double)got[j],
                  (double)want[j]);
      fail();
    }
}
static void test_embed(void **state) {
  for (int wpe = 0; wpe < 2; wpe++) {
    int B = 3, T = 7, C = 19, V = 13, N = B * T;
    kase k;
    k_init(&k, 2 + wpe);
    int32_t tok[21];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)tz_rng_below(&k.rng, V);
    tok[4] = -1, tok[9] = V; /* invalid ids: zero rows, no gradient */
    k_randn(&k, (size_t)N * C, 1);
    k_ints(&k, tok, N);
    k_randn(&k, (size_t)V * C, 1);
    k_randn(&k, (size_t)T * C, 1);
    k_randn(&k, (size_t)V * C, 1);
    k_randn(&k, (size_t)T * C, 1);
    k_randn(&k, (size_t)N * C, 1);
    int d[] = {B, T, C, V, wpe};
    k_run(&k, op_embed, d);
    k_check(&k, 0, "embed_fwd", 1e-6, 1e-7);
    k_check_exact(&k, 4, "embed_bwd dwte");
    if (wpe) k_check_exact(&k, 5, "embed_bwd dwpe");
    k_free(&k);
  }
}

/* embed_bwd at sizes that exercise the sort and the run sums: N over several 256-position
 * blocks (one partial), vocabularies needing 1, 2 and 3 radix passes (V 200, 5000, 70001),
 * skewed ids (runs longer than the kernel's 8- and 4-row groups, runs across its 8-index
 * workgroup ranges), invalid ids (negative, V, INT32_MAX), zero-gradient rows, C above 256
 * (two column chunks) and C % 4 != 0. `ge` runs the GPU side (the default backend, or one
 * with small bindings: dwte in pieces). Bitwise against the CPU backend. */
static void embed_bwd_case(tz_backend *ge, int B, int T, int C, int V, uint64_t seed) {
  int N = B * T;
  kase k;
  k_init(&k, seed);
  int32_t *tok = malloc(sizeof *tok * N);
  for (int i = 0; i < N; i++) {
    uint32_t u = tz_rng_below(&k.rng, 100);
    tok[i] = u < 30   ? 1 % V /* one id at 30 %: long runs */
             : u < 45 ? (int32_t)(V - 1)
             : u < 50 ? (int32_t)tz_rng_below(&k.rng, 5)
                      : (int32_t)tz_rng_below(&k.rng, V);
  }
  tok[0] = -7, tok[N / 2] = V, tok[N - 1] = INT32_MAX;
  k_randn(&k, (size_t)N * C, 1); /* unused forward output */
  k_ints(&k, tok, N);
  k_randn(&k, (size_t)V * C, 1);
  k_randn(&k, (size_t)T * C, 1);
  k_randn(&k, (size_t)V * C, 1); /* dwte (accumulated into) */
  k_randn(&k, (size_t)T * C, 1); /* dwpe */
  k_randn(&k, (size_t)N * C, 1); /* dout */
  for (int n = 3; n < N; n += 37) memset(k.t[6].h + (size_t)n * C, 0, (size_t)C * 4); /* zero rows */
  int d[] = {B, T, C, V, 1};
  tz_backend *keep = gpu;
  gpu = ge;
  k_run(&k, op_embed, d);
  gpu = keep;
  char what[96];
  snprintf(what, sizeof what, "embed_bwd dwte B %d T %d C %d V %d", B, T, C, V);
  k_check_exact(&k, 4, what);
  snprintf(what, sizeof what, "embed_bwd dwpe B %d T %d C %d V %d", B, T, C, V);
  k_check_exact(&k, 5, what);
  k_free(&k);
  free(tok);
}
static void test_embed_bwd_sorted(void **state) {
  embed_bwd_case(gpu, 5, 150, 300, 200, 21); /* 1 pass */
  embed_bwd_case(gpu, 3, 257, 67, 5000, 22); /* 2 passes, N = 771: 4 blocks */
  embed_bwd_case(gpu, 2, 100, 5, 70001, 23); /* 3 passes */
  embed_bwd_case(gpu, 1, 1, 8, 3, 24);       /* N = 1 (its id forced invalid) */
  /* dwte (5000 · 40 floats = 800 KB) in pieces of 64 KiB bindings */
  setenv("TEZGAH_WEBGPU_MAX_BINDING", "65536", 1);
  tz_backend *small = tz_backend_create("webgpu", 0, NULL);
  unsetenv("TEZGAH_WEBGPU_MAX_BINDING");
  assert_non_null(small);
  embed_bwd_case(small, 2, 180, 40, 5000, 25);
  small->destroy(small);
}

/* ---- norms ---- */
static void op_norms(tz_backend *be, tz_slice *s, const int *d) {
  int N = d[0], C = d[1];
  /* 0 out 1 mean 2 rstd 3 inp 4 w 5 b 6 dinp 7 dw 8 db 9 dout 10 rms out 11 rms rstd */
  be->layernorm_fwd(be, s[0], s[1], s[2], s[3], s[4], s[5], N, C, 1e-5f);
  be->layernorm_bwd(be, s[6], s[7], s[8], s[9], s[3], s[4], s[1], s[2], N, C);
  be->rmsnorm_fwd(be, s[10], s[11], s[3], s[4], N, C, 1e-5f);
  be->rmsnorm_bwd(be, s[6], s[7], s[9], s[3], s[4], s[11], N, C);
}
static void test_norms(void **state) {
  /* C <= 1024: the register forms layernorm_fwd4 / _bwd4 (1024: all four per thread), 1300 the
   * loop forms; N = 4200: 132 chunks of partials (colsum_rows8's rounds of four sums, one
   * dispatch for layernorm's dw and db). Where the adapter has subgroups: layernorm_sg's
   * subgroup-per-row kernels at every shape (8-row workgroups: N = 7, 70, 33 leave one part
   * full; C 37, 300, 1300 not multiples of the subgroup size, 768 GPT-2's) */
  int shapes[][2] = {{7, 37}, {70, 300}, {1, 1024}, {3, 1300}, {4200, 40}, {70, 128}, {148, 64}, {33, 768}};
  for (int i = 0; i < 8; i++) {
    int N = shapes[i][0], C = shapes[i][1];
    kase k;
    k_init(&k, 10 + i);
    k_randn(&k, (size_t)N * C, 1);
    k_randn(&k, N, 1);
    k_randn(&k, N, 1);
    k_randn(&k, (size_t)N * C, 2);
    k_randn(&k, C, 1);
    k_randn(&k, C, 1);
    k_randn(&k, (size_t)N * C, 1);
    k_randn(&k, C, 1);
    k_randn(&k, C, 1);
    k_randn(&k, (size_t)N * C, 1);
    k_randn(&k, (size_t)N * C, 1);
    k_randn(&k, N, 1);
    int d[] = {N, C};
    k_run(&k, op_norms, d);
    const char *names[] = {"layernorm out", "mean", "rstd", 0, 0, 0, "dinp (ln+rms)", "dw (ln+rms)", "db",
                           0, "rmsnorm out", "rmsnorm rstd"};
    /* dw and db at N = 4200 sum 4200 fp32 terms of size ~1 in another order than the CPU: the
     * rounding of partial sums near √N ≈ 65 over √N additions is ~65·6e-8·65 ≈ 2.5e-4 absolute
     * (observed 1.7e-4), beyond rtol 1e-4 of a result near 1; a lost or misplaced row or column
     * is off by ~1 */
    for (int t = 0; t < 12; t++)
      if (names[t]) k_check(&k, t, names[t], 1e-4, (t == 7 || t == 8) && N > 1000 ? 2e-3 : 1e-5);
    k_free(&k);
  }
}

/* ---- matmul family ---- */
static void op_mm(tz_backend *be, tz_slice *s, const int *d) {
  int kind = d[0], M = d[1], K = d[2], N = d[3], acc = d[4], bias = d[5];
  if (kind == 0) be->matmul_t(be, s[0], s[1], s[2], bias ? s[3] : TZ_NONE, M, K, N, acc);
  if (kind == 1) be->matmul(be, s[0], s[1], s[2], M, K, N, acc);
  if (kind == 2) be->matmul_at(be, s[0], s[1], s[2], M, K, N, acc);
  if (kind == 3) be->bias_bwd(be, s[3], s[1], M, K);
}
static double g_mm_tol = 2e-5, g_mm_atol = 1e-6; /* the matmul family's bound (see the top) */
static void check_mm(int kind, int M, int K, int N, int acc, int bias) {
  kase k;
  k_init(&k, (uint64_t)M * 1000003 + K * 1009 + N * 7 + kind * 3 + acc);
  k_randn(&k, (size_t)M * N, 1);
  k_randn(&k, (size_t)M * K, 1);
  k_randn(&k, (size_t)K * N, 1);
  k_randn(&k, kind == 3 ? K : N, 1);
  int d[] = {kind, M, K, N, acc, bias};
  k_run(&k, op_mm, d);
  int outi = kind == 3 ? 3 : 0;
  size_t n = k.t[outi].n;
  const float *a = k.t[1].h, *b = k.t[2].h;
  for (size_t i = 0; i < n; i++) {
    double mag = fabs(k.t[outi].h[i]);
    if (kind == 3) {
      for (int m = 0; m < M; m++) mag += fabs(a[(size_t)m * K + i]);
    } else {
      int m = (int)(i / N), c = (int)(i % N);
      for (int kk = 0; kk < K; kk++) {
        double x = kind == 2 ? a[(size_t)kk * M + m] : a[(size_t)m * K + kk];
        double y = kind == 0 ? b[(size_t)c * K + kk] : b[(size_t)kk * N + c];
        mag += fabs(x * y);
      }
      if (bias) mag += fabs(k.t[3].h[c]);
    }
    double err = fabs((double)k.t[outi].out[1][i] - k.t[outi].out[0][i]);
    if (!(err <= g_mm_tol * mag + g_mm_atol)) {
      print_error("matmul kind %d M=%d K=%d N=%d acc=%d bias=%d [%zu]: gpu %.9g cpu %.9g\n", kind, M, K, N,
                  acc, bias, i, k.t[outi].out[1][i], k.t[outi].out[0][i]);
      fail();
    }
  }
  k_free(&k);
}
/* matmul_at_swiglu_a (optional op): out (+)= aᵀ · swiglu(gu). The CPU backend does not offer
 * it: its reference is swiglu_fwd into a scratch tensor, then matmul_at. Tensors: 0 out [M,N],
 * 1 a [K,M], 2 gu [K,2N], 3 scratch [K,N]. Same bound as the matmul family, with the terms
 * |a·silu(g)·u| (silu's own rounding is far below it). */
static void op_mm_swiglu(tz_backend *be, tz_slice *s, const int *d) {
  int M = d[0], K = d[1], N = d[2], acc = d[3];
  if (be->matmul_at_swiglu_a) {
    be->matmul_at_swiglu_a(be, s[0], s[1], s[2], M, K, N, acc);
  } else {
    be->swiglu_fwd(be, s[3], s[2], K, N);
    be->matmul_at(be, s[0], s[1], s[3], M, K, N, acc);
  }
}
static void check_mm_swiglu(int M, int K, int N, int acc) {
  kase k;
  k_init(&k, (uint64_t)M * 31 + K * 17 + N + acc);
  k_randn(&k, (size_t)M * N, 1);
  k_randn(&k, (size_t)K * M, 1);
  k_randn(&k, (size_t)K * 2 * N, 2);
  k_randn(&k, (size_t)K * N, 0);
  int d[] = {M, K, N, acc};
  k_run(&k, op_mm_swiglu, d);
  const float *a = k.t[1].h, *gu = k.t[2].h;
  for (size_t i = 0; i < (size_t)M * N; i++) {
    int m = (int)(i / N), c = (int)(i % N);
    double mag = fabs(k.t[0].h[i]);
    for (int kk = 0; kk < K; kk++) {
      double g = gu[(size_t)kk * 2 * N + c], u = gu[(size_t)kk * 2 * N + N + c];
      mag += fabs(a[(size_t)kk * M + m] * g / (1 + exp(-g)) * u);
    }
    double err = fabs((double)k.t[0].out[1][i] - k.t[0].out[0][i]);
    if (!(err <= 2e-5 * mag + 1e-6)) {
      print_error("matmul_at_swiglu_a M=%d K=%d N=%d acc=%d [%zu]: gpu %.9g cpu %.9g\n", M, K, N, acc, i,
                  k.t[0].out[1][i], k.t[0].out[0][i]);
      fail();
    }
  }
  k_free(&k);
}
static void test_matmul_swiglu(void **state) {
  assert_non_null(gpu->matmul_at_swiglu_a);
  check_mm_swiglu(33, 70, 29, 1); /* general kernel (odd shapes and offsets) */
  check_mm_swiglu(7, 5, 130, 0);
  g_pad = 4; /* vec4 fast path */
  check_mm_swiglu(68, 36, 132, 1);
  check_mm_swiglu(64, 2052, 96, 0); /* split-K */
  check_mm_swiglu(8, 1100, 12, 1);
  g_pad = PAD;
}
/* The tile configuration `cfg` forced (TEZGAH_WEBGPU_MM; `bytes`: its unpadded workgroup
 * memory; `nbuf`: how tz_webgpu_describe names its buffer count, required wherever `bytes` fits
 * the adapter's limit, which is read back from the description) on a few vec4 shapes of each
 * form; with tt0 also matmul_t without the transposed weight (TEZGAH_WEBGPU_MM_TT=0: a and b of
 * matmul_t itself in swizzled tiles). */
static void check_mm_tile(const char *cfg, size_t bytes, const char *nbuf, int tt0) {
  setenv("TEZGAH_WEBGPU_MM", cfg, 1);
  const char *d = strstr(tz_webgpu_describe(gpu), "matmul tile");
  assert_non_null(d);
  printf("TEZGAH_WEBGPU_MM=%s: %s\n", cfg, d);
  unsigned lim = 0;
  const char *o = strstr(d, " of ");
  assert_non_null(o);
  assert_int_equal(sscanf(o, " of %u bytes", &lim), 1);
  if (bytes <= lim) assert_non_null(strstr(d, nbuf));
  g_pad = 4;
  for (int kind = 0; kind < 3; kind++) check_mm(kind, 132, 68, 260, kind & 1, kind == 0);
  check_mm(2, 64, 2052, 132, 0, 0);
  check_mm(1, 37, 64, 36, 1, 0);
  check_mm(1, 264, 40, 516, 0, 0);
  if (tt0) {
    setenv("TEZGAH_WEBGPU_MM_TT", "0", 1);
    check_mm(0, 132, 68, 260, 1, 1);
    check_mm(0, 36, 64, 37, 0, 1);
    check_mm(0, 264, 40, 516, 1, 0);
    unsetenv("TEZGAH_WEBGPU_MM_TT");
  }
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_MM");
}
/* The matmul family on the subgroup-matrix kernels, through the backend (operand conversions,
 * the weight mirror's absence, tile choice, split-K partial sums): for every tile the backend can
 * be told to take (TZ_SGMAT_SWEEP_TILES, the bench's sweep: main's kernel "o" and every path of
 * matmul_sgmm.wgsl "n"; TZ_TEST_SGMAT_TILES another list), forced with TEZGAH_WEBGPU_SGMAT_TILE:
 * the three forms on shapes that are tile multiples, with accumulation, matmul_t with bias, a
 * weight gradient over K = 4096 (split over K on kernel n), and shapes that are not multiples
 * of the tile (they take the fp32 kernels). Bound 1e-3·Σ|a·b| + 1e-5 (f16 operands). Where
 * tz_webgpu_describe does not say "matmul on subgroup matrices" (lavapipe, bun's Dawn):
 * SKIPPED (test_matmul covers the fp32 kernels). */
static void test_matmul_sgmat(void **state) {
  (void)state;
  if (!strstr(tz_webgpu_describe(gpu), "matmul on subgroup matrices")) {
    printf("SKIPPED: test_matmul_sgmat: the adapter offers no f16 x f16 -> f32 subgroup matrices\n");
    skip();
  }
  g_mm_tol = 1e-3, g_mm_atol = 1e-5;
  g_pad = 16;
  const char *e = getenv("TZ_TEST_SGMAT_TILES");
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", e ? e : TZ_SGMAT_SWEEP_TILES);
  const char *prev = getenv("TEZGAH_WEBGPU_SGMAT_TILE");
  char *saved = prev ? strdup(prev) : NULL;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
    setenv("TEZGAH_WEBGPU_SGMAT_TILE", tok, 1);
    printf("test_matmul_sgmat: tile %s\n", tok);
    for (int kind = 0; kind < 3; kind++) {
      check_mm(kind, 256, 128, 256, 0, kind == 0);
      check_mm(kind, 512, 192, 256, 1, 0);
      check_mm(kind, 200, 96, 136, kind == 2, kind == 0); /* not a tile multiple */
    }
    check_mm(2, 256, 4096, 256, 1, 0); /* split over K on kernel n */
  }
  if (saved) setenv("TEZGAH_WEBGPU_SGMAT_TILE", saved, 1), free(saved);
  else unsetenv("TEZGAH_WEBGPU_SGMAT_TILE");
  g_pad = PAD;
  g_mm_tol = 2e-5, g_mm_atol = 1e-6;
}

static void test_matmul(void **state) {
  static const int dims[] = {1, 7, 33, 129};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 4; l++)
        for (int kind = 0; kind < 3; kind++)
          check_mm(kind, dims[i], dims[j], dims[l], (i + j + l + kind) & 1, kind == 0 && ((i + j) & 1));
  for (int kind = 0; kind < 3; kind++) check_mm(kind, 130, 300, 257, 1, kind == 0);
  /* the fast kernel with vec4 fetches (M, K, N multiples of 4, 16-byte aligned tensors):
   * partial tiles, K not a multiple of BK; the same shapes at odd offsets fetch element by
   * element (the dims loops above do too). TEZGAH_WEBGPU_MM picks other tile configurations
   * (lavapipe, a CPU adapter, runs 8x8 BK 8 by default; 8x16 BK 16 is checked below). */
  for (int kind = 0; kind < 3; kind++) {
    check_mm(kind, 132, 68, 260, kind & 1, kind == 0);
    g_pad = 4;
    check_mm(kind, 132, 68, 260, kind & 1, kind == 0);
    check_mm(kind, 4, 12, 8, 0, kind == 0);
    /* split-K (few output tiles, K >= 1024), acc 0 and 1 */
    check_mm(kind, 64, 2052, 132, 0, 0);
    check_mm(kind, 8, 1100, 12, 1, 0);
    /* more than one 256-wide tile (the 16-row / 16-column register tiles), and the unaligned
     * lm_head case (V % 4 != 0) with the other dimensions aligned: vec4 operand loads, a
     * per-element epilogue */
    check_mm(kind, 264, 40, 516, kind & 1, kind == 0);
    check_mm(kind, 36, 64, 37, 1, kind == 0);
    check_mm(kind, 37, 64, 36, 0, kind == 0);
    g_pad = PAD;
  }
  /* operands in the output's buffer (the activation arena): a and b at aligned, disjoint
   * ranges after out, for each form, on both backends */
  {
    const int M = 68, K = 36, N = 132;
    size_t oa = 0, ao = 9216, bo = 12288, tot = 17408; /* float offsets, 16-byte aligned */
    float *h = malloc(tot * 4), *res[2];
    tz_rng r;
    tz_rng_seed(&r, 77, 1);
    for (int kind = 0; kind < 3; kind++) {
      for (size_t i = 0; i < tot; i++) h[i] = tz_rng_normal(&r);
      tz_backend *bes[2] = {cpu, gpu};
      for (int b = 0; b < 2; b++) {
        tz_buf *buf = bes[b]->alloc(bes[b], tot * 4, "arena");
        bes[b]->upload(bes[b], (tz_slice){buf, 0}, h, tot * 4);
        tz_slice so = {buf, oa * 4}, sa = {buf, ao * 4}, sb = {buf, bo * 4};
        if (kind == 0) bes[b]->matmul_t(bes[b], so, sa, sb, TZ_NONE, M, K, N, 1);
        if (kind == 1) bes[b]->matmul(bes[b], so, sa, sb, M, K, N, 1);
        if (kind == 2) bes[b]->matmul_at(bes[b], so, sa, sb, M, K, N, 1);
        res[b] = malloc((size_t)M * N * 4);
        bes[b]->download(bes[b], res[b], so, (size_t)M * N * 4);
        bes[b]->free(bes[b], buf);
      }
      for (size_t i = 0; i < (size_t)M * N; i++)
        if (!(fabs(res[1][i] - res[0][i]) <= 1e-4 * (1 + fabs(res[0][i])))) {
          print_error("shared-buffer matmul kind %d [%zu]: gpu %.9g cpu %.9g\n", kind, i, res[1][i], res[0][i]);
          fail();
        }
      free(res[0]), free(res[1]);
    }
    free(h);
  }
  /* The GPUs' default tile, 8 x 16 / BK 16 with one buffer (mm_config: every adapter that is
   * not a CPU one runs it for read-only operands), forced: CPU adapters run 8 x 8 / BK 8 by
   * default, which the shapes above covered (double-buffered swizzled tiles). llvmpipe compiles
   * the big tile slowly, so a few vec4 shapes per form (one pipeline each; split-K and the
   * shapes after it reuse them): the swizzled transposed tiles of a in matmul (kind 1, and kind 0
   * through the transposed weight, the default), partial tiles, K not a multiple of BK (68: the
   * last k-tile's swizzled upper rows hold zeros), unaligned M or N. The configuration that ran
   * is read back from tz_webgpu_describe. The tuning configurations no adapter runs by default
   * (two buffers, matmul_t without the transposed weight) are test_matmul_sweep's. */
  if (!getenv("TEZGAH_WEBGPU_MM")) check_mm_tile("8x16:16:1", 16 * (128 + 256) * 4, ", 1 buffer ", 0);
  check_mm(0, 4, 0, 5, 1, 1); /* K = 0: out (+)= bias */
  check_mm(3, 70, 33, 0, 0, 0); /* bias_bwd over M=70 rows (3 chunks), N=33 */
  check_mm(3, 1, 300, 0, 0, 0);
  check_mm(3, 4500, 37, 0, 0, 0); /* 141 chunks: colsum_rows8's rounds of four sums and its tail */
}

/* Tuning configurations of the matmul that no adapter runs by default (sweep: ctest's
 * test_webgpu_matmul_sweep, label sweep; TEZGAH_TEST_SWEEP=1, else skipped): matmul_t on its own
 * (TEZGAH_WEBGPU_MM_TT=0: b [N,K] transposed into workgroup memory; the default goes through the
 * transposed weight copy) on the default tile and on 8 x 16 / BK 16, aligned and odd offsets,
 * and 8 x 16 / BK 16 with two buffers (unpadded: 49 152 bytes, exactly the H200's limit, where it
 * ran slower than one, mm_config; lavapipe offers 32 768 and runs it with one, test_matmul's
 * pipelines). (8 x 8 / BK 16 with two buffers, exactly lavapipe's limit, passed here too but was
 * dropped for the CI's time: one more set of cold llvmpipe compiles for a combination the others
 * cover.) */
static void test_matmul_sweep(void **state) {
  if (!sweep_on("test_matmul_sweep", "TEZGAH_TEST_SWEEP")) skip();
  /* matmul_t on its own on the adapter's default tile, aligned and odd offsets */
  setenv("TEZGAH_WEBGPU_MM_TT", "0", 1);
  check_mm(0, 132, 68, 260, 1, 1);
  check_mm(0, 33, 70, 29, 0, 1);
  g_pad = 4;
  check_mm(0, 264, 40, 516, 0, 1);
  check_mm(0, 36, 64, 37, 1, 1);
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_MM_TT");
  if (!getenv("TEZGAH_WEBGPU_MM")) {
    check_mm_tile("8x16:16:1", 16 * (128 + 256) * 4, ", 1 buffer ", 1);
    check_mm_tile("8x16:16:2", 2 * 16 * (128 + 256) * 4, ", 2 buffers ", 1);
  }
}

/* ---- rope ---- */
static void op_rope(tz_backend *be, tz_slice *s, const int *d) {
  be->rope(be, s[0], d[0], d[1], d[2], d[3], d[4], d[5], 10000.0f, d[6]);
}
static void test_rope(void **state) {
  for (int dir = -1; dir <= 1; dir += 2) {
    int B = 2, T = 9, nh = 4, nkv = 2, hd = 16;
    kase k;
    k_init(&k, 20 + dir);
    k_randn(&k, (size_t)B * T * (nh + 2 * nkv) * hd, 1);
    int d[] = {B, T, nh, nkv, hd, 5, dir};
    k_run(&k, op_rope, d);
    /* atol 1e-5: WGSL bounds pow (the frequencies) only to 3 + 2|x| ULP and sin/cos to an
     * absolute 2^-11; NVIDIA's Vulkan driver (H200) was 3e-6 off the CPU's powf/sinf here */
    k_check(&k, 0, "rope", 1e-5, 1e-5);
    k_free(&k);
  }
}

/* ---- attention ---- */
static void op_att(tz_backend *be, tz_slice *s, const int *d) {
  int B = d[0], T = d[1], nh = d[2], nkv = d[3], hd = d[4], Q = (nh + 2 * nkv) * hd;
  tz_slice q = s[0], k = tz_f32(q, (size_t)nh * hd), v = tz_f32(q, (size_t)(nh + nkv) * hd);
  tz_slice dq = s[4], dk = tz_f32(dq, (size_t)nh * hd), dv = tz_f32(dq, (size_t)(nh + nkv) * hd);
  be->attention_fwd(be, s[1], s[2], q, k, v, B, T, T, 0, nh, nkv, hd, Q, Q);
  be->attention_bwd(be, dq, dk, dv, s[3], q, k, v, s[1], s[2], B, T, nh, nkv, hd, Q, Q);
}
static void check_att(int B, int T, int nh, int nkv, int hd) {
  kase k;
  k_init(&k, (uint64_t)B * 131 + T * 7 + nh + hd);
  size_t N = (size_t)B * T, Q = (size_t)(nh + 2 * nkv) * hd;
  k_randn(&k, N * Q, 1);
  k_randn(&k, N * nh * hd, 1);
  k_randn(&k, (size_t)B * nh * T, 1);
  k_randn(&k, N * nh * hd, 1);
  k_randn(&k, N * Q, 1);
  int d[] = {B, T, nh, nkv, hd};
  k_run(&k, op_att, d);
  k_check(&k, 1, "attention out", 1e-4, 2e-5);
  k_check(&k, 2, "attention lse", 1e-4, 2e-5);
  k_check(&k, 4, "attention dqkv", 1e-4, 2e-5);
  k_free(&k);
}
/* the general kernels (attention.wgsl), forced: TEZGAH_WEBGPU_ATTN=fallback. head_dim is a
 * constant of their WGSL (HD: per-thread rows in registers, key / value tiles of BC·HD floats),
 * so each head size is a set of pipelines for lavapipe to compile (cold, nopt, 4 lanes: 10-28
 * CPU s each on the 2-core VM); the code is the same. Head sizes here: 16 (the training tests'
 * models, and the head sizes the flash kernels do not take), 128 (the largest arrays; below)
 * and 64 (odd tensor offsets, test_attention_flash's first case); 8 and 32 were dropped for
 * the CI's time (branch ttime4). */
static void test_attention(void **state) {
  setenv("TEZGAH_WEBGPU_ATTN", "fallback", 1);
  check_att(2, 70, 4, 2, 16);  /* GQA, T crosses a 64-row tile */
  check_att(3, 5, 2, 2, 16);   /* T below one tile, B 3 */
  check_att(1, 130, 2, 1, 16); /* multi-query, three tiles */
  unsetenv("TEZGAH_WEBGPU_ATTN");
}
/* head_dim 128 on the general kernels (forced), T not a multiple of any tile, GQA 4/1 and 2/2 */
static void test_attention_hd(void **state) {
  setenv("TEZGAH_WEBGPU_ATTN", "fallback", 1);
  check_att(1, 45, 4, 1, 128);
  check_att(2, 33, 2, 2, 128);
  unsetenv("TEZGAH_WEBGPU_ATTN");
}
/* The flash kernels (attention_fa.wgsl, head_dim 32 / 64 / 128) on the variant the adapter
 * chooses by default (attn_config: RG 2 / NT 256 with register prefetch where the adapter offers
 * its 46.6 KB of workgroup memory and head_dim is 64 or 128, the H200; else RG 1 / NT 128, with
 * prefetch on GPUs, without on CPU adapters: lavapipe), with TEZGAH_WEBGPU_ATTN=fast (an error if a
 * shape or an unaligned tensor would fall back, so these really run them; the backward as the
 * fused dq, the default, made explicit with TEZGAH_WEBGPU_ATTN_FUSED_DQ=1 so that a fallback to
 * the two-kernel path is an error too): T not a multiple of the row block, the column tile or
 * the 16-row chunk, T below one chunk; B > 1; GQA 4/2, 4/1 and 2/2; on both lane-reduction paths
 * (ctest runs this with and without TEZGAH_WEBGPU_SUBGROUPS=0; head_dim 128 with subgroups only,
 * as its lanes are head_dim 64's, and on GPU adapters only: see below). Then the two-kernel
 * backward (fa_dq + fa_dkdv), which the backend chooses by default where one sequence's dq
 * partial sums do not fit (attn_fq_chunk): forced on head_dim 64, and chosen on its own on head_dim
 * 64 where a small TEZGAH_WEBGPU_ATTN_DQ_KB leaves no room for one sequence's partial sums
 * (subgroup run only; on head_dim 32 at T = 8192, where lavapipe's binding limit does the same, in
 * test_attention_flash_long).
 * First, tensors at odd offsets (g_pad 3): the flash kernels decline (vec4 access) and the
 * general ones run, as they do by default for such tensors. Tolerances: check_att's (the sums
 * run in another order than the CPU's, in fp32). The GPUs' prefetching RG 1 / NT 128 variant is
 * test_attention_flash_pf's; tuning variants no adapter chooses by default (other RG / NT / PF /
 * FD, the former grid order, per-kernel mixes, one arena) are the sweep's
 * (test_attention_flash_variants*). */
static void test_attention_flash(void **state) {
  const char *se = getenv("TEZGAH_WEBGPU_SUBGROUPS");
  int sg = !(se && !strcmp(se, "0")); /* the nosubgroups run: fewer cases, see below */
  check_att(2, 70, 4, 2, 64); /* odd tensor offsets: the general kernels */
  g_pad = 4;
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "1", 1); /* the default, explicit: no fallback */
  check_att(2, 70, 4, 2, 64);  /* GQA 2 query heads per kv head */
  check_att(3, 100, 4, 1, 64); /* multi-query, B 3 */
  check_att(1, 150, 2, 2, 64); /* three row blocks, last one partial */
  check_att(2, 9, 4, 4, 64);   /* T below one chunk */
  check_att(2, 77, 4, 2, 32);  /* head_dim 32: 128-row blocks, 32-key tiles */
  check_att(1, 300, 2, 1, 32); /* three blocks of 128, multi-query */
  /* head_dim 128 (two output vec4s per row and thread) on this variant: on a GPU here (its
   * default variant there), on a CPU adapter (lavapipe, where it cost 89 of this case's ~226 cold
   * CPU s) in test_attention_flash_long (the sweep and the device scripts): its two-vec4 rows
   * are test_attention_flash_pf's head_dim 128 on every run, and its lane reductions (16
   * threads across a row) head_dim 64's. Subgroup run only: the lane reductions
   * (lanes_combine) depend on TX, the threads across a row (16 for head_dim 64 and 128, 8 for
   * 32), not on head_dim, so head_dim 64 and 32 cover the workgroup-only form of both */
  if (sg && !strstr(tz_webgpu_describe(gpu), "(CPU,")) {
    check_att(1, 45, 4, 1, 128);
    check_att(2, 133, 2, 2, 128);
  }
  /* the two-kernel backward on the same variant: fa_dkdv reads the D that fa_dq wrote (FD) */
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "0", 1);
  check_att(2, 70, 4, 2, 64);
  /* the two-kernel backward chosen by the backend itself (FUSED_DQ unset): one sequence's dq
   * partial sums (2 heads · 430 rows · 64 · 4 B = 220 kB in lavapipe's 32-row blocks, 88 kB in
   * the H200's 128-row ones; at least T rows in any blocking) above a 64 KiB bound
   * (attn_fq_chunk), on head_dim 64: the pipelines of the forced case above; at T = 8192 they
   * exceed lavapipe's binding limit on their own, on head_dim 32: test_attention_flash_long
   * (the sweep) */
  unsetenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ");
  if (sg) {
    setenv("TEZGAH_WEBGPU_ATTN_DQ_KB", "64", 1);
    check_att(1, 150, 2, 1, 64);
    unsetenv("TEZGAH_WEBGPU_ATTN_DQ_KB");
  }
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_ATTN");
}

/* Whether head size hd is in the comma list of environment variable var (TZ_TEST_PF_HD,
 * TZ_TEST_LONG_HD: ctest's entries that split test_attention_flash_pf and _long by head size,
 * tests/CMakeLists.txt); unset or empty: every head size. A malformed list fails the test. */
static int hd_on(const char *var, int hd) {
  const char *e = getenv(var);
  if (!e || !*e) return 1;
  for (const char *p = e; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) {
      print_error("%s=%s: not a list of head sizes (e.g. 64,128)\n", var, e);
      fail();
    }
    if (v == hd) return 1;
    p = end + strspn(end, ", ");
  }
  return 0;
}

/* The flash kernels at long T (head_dim 32, multi-query, the adapter's default variant): no
 * T×T buffer anywhere (the scores stream through key tiles), and the two-kernel backward
 * reached on the adapter's binding limit (attn_fq_chunk's lim, from wg_cap_bytes; not the
 * TEZGAH_WEBGPU_ATTN_DQ_KB bound that test_attention_flash lowers). T = 8192 by default: 135 MB
 * of dq partial sums in lavapipe's 64-row blocks, above its own 128 MiB binding size (adapters
 * with larger bindings take whichever path their limits give). TZ_TEST_ATTN_LONG_T sets T:
 * ctest's test_webgpu_attn_long runs 2048 under TEZGAH_WEBGPU_MAX_BINDING=4 MiB, the same branch
 * on a lowered limit (8.7 MB of partial sums, and a 16.8 MB T×T matrix per head, both above
 * the binding: the fused path and any T×T buffer are still impossible), the same pipelines and
 * 1/16 of the T² work (the entry is compile-bound either way: tests/CMakeLists.txt has the
 * figures). The same choice runs at T 150 on head_dim 64 in test_attention_flash (and the
 * two-kernel backward on head_dim 32 only here); then head_dim 128 on the fused backward
 * (test_attention_flash's on GPUs). This case is the sweep's (ctest -L sweep, .ci/run; it left
 * the plain entry when its T² work made that entry cost more with unoptimised lavapipe code,
 * docs/RELIABILITY.md) and the device scripts' (TEZGAH_TEST_ATTN_VARIANTS=1, T 8192). Subgroup
 * run only. Tolerances: check_att's. */
static void test_attention_flash_long(void **state) {
  if (!sweep_on("test_attention_flash_long", "TEZGAH_TEST_ATTN_VARIANTS")) skip();
  const char *se = getenv("TEZGAH_WEBGPU_SUBGROUPS");
  if (se && !strcmp(se, "0")) {
    printf("SKIPPED: test_attention_flash_long runs with subgroups (TEZGAH_WEBGPU_SUBGROUPS=0 set)\n");
    skip();
  }
  const char *lt = getenv("TZ_TEST_ATTN_LONG_T");
  int T = lt && *lt ? atoi(lt) : 8192;
  if (T < 1024) { /* below that the case is test_attention_flash's */
    print_error("TZ_TEST_ATTN_LONG_T=%s: expected a T of at least 1024\n", lt);
    fail();
  }
  g_pad = 4;
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  printf("test_attention_flash_long: T %d, binding limit %s\n", T,
         getenv("TEZGAH_WEBGPU_MAX_BINDING") ? getenv("TEZGAH_WEBGPU_MAX_BINDING") : "the adapter's");
  int ran = 0; /* cases run: a TZ_TEST_LONG_HD that selects none fails */
  if (hd_on("TZ_TEST_LONG_HD", 32)) check_att(1, T, 2, 1, 32), ran++;
  /* head_dim 128 on the adapter's default variant with the fused backward, which
   * test_attention_flash runs on GPUs only (lavapipe: RG 1 / NT 128 without prefetch) */
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "1", 1);
  if (hd_on("TZ_TEST_LONG_HD", 128)) check_att(1, 45, 4, 1, 128), check_att(2, 133, 2, 2, 128), ran++;
  unsetenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ");
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_ATTN");
  if (!ran) {
    print_error("TZ_TEST_LONG_HD=%s: no case of test_attention_flash_long has those head sizes (32, 128)\n",
                getenv("TZ_TEST_LONG_HD"));
    fail();
  }
}

/* RG 1 / NT 128 with register prefetch (PF 1, FD 1): what GPUs run by default for head_dim 32
 * (RG 2 / NT 256 would need 52 KB of workgroup memory) and for every head size where the
 * adapter offers less than 46.6 KB (attn_config; lavapipe runs it without prefetch, so it is
 * forced here). The fused dq backward on head_dim 64 (GQA, T not a multiple of the blocks or
 * tiles), 32 (fewer threads than (query block, vec4) pairs) and 128 (two output vec4s); B 3 in
 * chunks of one sequence (TEZGAH_WEBGPU_ATTN_DQ_KB below two sequences' parts: what long T
 * does by default); then the two-kernel backward (fa_dq + fa_dkdv, the default where one
 * sequence's parts do not fit) on head_dim 64. Subgroup run only: the workgroup lane
 * reductions are test_attention_flash's in the nosubgroups run (the prefetch and the lane
 * reductions are separate parts of the kernels; each is covered, their combination on a GPU
 * without Subgroups is not compiled here). Tolerances: check_att's. */
static void test_attention_flash_pf(void **state) {
  const char *se = getenv("TEZGAH_WEBGPU_SUBGROUPS");
  if (se && !strcmp(se, "0")) {
    printf("SKIPPED: test_attention_flash_pf runs with subgroups (TEZGAH_WEBGPU_SUBGROUPS=0 set)\n");
    skip();
  }
  int ran = 0; /* cases run: a TZ_TEST_PF_HD that selects none fails */
  g_pad = 4;
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "1", 1);
  setenv("TEZGAH_WEBGPU_ATTN_RG", "1", 1), setenv("TEZGAH_WEBGPU_ATTN_NT", "128", 1);
  setenv("TEZGAH_WEBGPU_ATTN_PF", "1", 1);
  if (hd_on("TZ_TEST_PF_HD", 64)) check_att(2, 70, 4, 2, 64), ran++;
  if (hd_on("TZ_TEST_PF_HD", 32)) check_att(1, 150, 2, 1, 32), ran++;
  if (hd_on("TZ_TEST_PF_HD", 128)) check_att(2, 133, 4, 2, 128), ran++;
  setenv("TEZGAH_WEBGPU_ATTN_DQ_KB", "40", 1); /* one sequence: 4 heads · 30 rows · 64 · 4 B = 30 KiB */
  if (hd_on("TZ_TEST_PF_HD", 64)) check_att(3, 30, 4, 2, 64), ran++;
  /* 4 blocks of 32 rows: 4 · (100 + 68 + 36 + 4) rows · 256 B = 208 KiB, one sequence a chunk */
  setenv("TEZGAH_WEBGPU_ATTN_DQ_KB", "300", 1);
  if (hd_on("TZ_TEST_PF_HD", 64)) check_att(3, 100, 4, 2, 64), ran++;
  unsetenv("TEZGAH_WEBGPU_ATTN_DQ_KB");
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "0", 1);
  if (hd_on("TZ_TEST_PF_HD", 64)) check_att(2, 70, 4, 2, 64), ran++;
  unsetenv("TEZGAH_WEBGPU_ATTN_RG"), unsetenv("TEZGAH_WEBGPU_ATTN_NT"), unsetenv("TEZGAH_WEBGPU_ATTN_PF");
  unsetenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ");
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_ATTN");
  if (!ran) {
    print_error("TZ_TEST_PF_HD=%s: no case of test_attention_flash_pf has those head sizes (32, 64, 128)\n",
                getenv("TZ_TEST_PF_HD"));
    fail();
  }
}

/* All tensors in one buffer (the model's activation arena): every flash binding read_write
 * (an input shares a buffer with an output). Regions qkv | out | lse | dout | dqkv at 16-byte
 * aligned float offsets; out, lse and dqkv compared with check_att's tolerances. */
static void check_att_arena(int B, int T, int nh, int nkv, int hd) {
  size_t N = (size_t)B * T, Q = (size_t)(nh + 2 * nkv) * hd, C = (size_t)nh * hd;
  size_t r4 = 4, oq = 4, oo = oq + (N * Q + r4 - 1) / r4 * r4, ol = oo + (N * C + 3) / 4 * 4,
         od = ol + ((size_t)B * nh * T + 3) / 4 * 4, og = od + (N * C + 3) / 4 * 4, tot = og + N * Q + 4;
  float *h = malloc(tot * 4), *res[2];
  tz_rng r;
  tz_rng_seed(&r, (uint64_t)T * 5 + hd, 3);
  for (size_t i = 0; i < tot; i++) h[i] = tz_rng_normal(&r);
  tz_backend *bes[2] = {cpu, gpu};
  for (int b = 0; b < 2; b++) {
    tz_backend *be = bes[b];
    tz_buf *buf = be->alloc(be, tot * 4, "arena");
    be->upload(be, (tz_slice){buf, 0}, h, tot * 4);
    tz_slice q = {buf, oq * 4}, k = tz_f32(q, C), v = tz_f32(q, C + (size_t)nkv * hd), so = {buf, oo * 4},
             sl = {buf, ol * 4}, sd = {buf, od * 4}, dq = {buf, og * 4}, dk = tz_f32(dq, C),
             dv = tz_f32(dq, C + (size_t)nkv * hd);
    be->attention_fwd(be, so, sl, q, k, v, B, T, T, 0, nh, nkv, hd, (int)Q, (int)Q);
    be->attention_bwd(be, dq, dk, dv, sd, q, k, v, so, sl, B, T, nh, nkv, hd, (int)Q, (int)Q);
    res[b] = malloc(tot * 4);
    be->download(be, res[b], (tz_slice){buf, 0}, tot * 4);
    be->free(be, buf);
  }
  const char *nm[3] = {"arena attention out", "arena attention lse", "arena attention dqkv"};
  size_t at[3] = {oo, ol, og}, n[3] = {N * C, (size_t)B * nh * T, N * Q};
  for (int i = 0; i < 3; i++) {
    double *ref = ot_dbl(res[0] + at[i], n[i]);
    ot_close(nm[i], res[1] + at[i], ref, n[i], 1e-4, 2e-5);
    free(ref);
  }
  free(h), free(res[0]), free(res[1]);
}

/* Sweep (ctest's test_webgpu_attn_variants, label sweep; TEZGAH_TEST_ATTN_VARIANTS=1 or
 * TEZGAH_TEST_SWEEP=1, else skipped; the device scripts run them on the H200): the variants of
 * the flash kernels (TEZGAH_WEBGPU_ATTN_RG / _NT / _PF / _FD, see attn_config in the backend),
 * each on a few odd shapes (fewer head sizes: lavapipe compiles slowly), on the two-kernel
 * backward, with separate buffers (read-only inputs) and once in one arena (read_write): the
 * former kernels' form (RG 1 / NT 256, no prefetch, separate D pass), 8 × 4 blocks on 128 and on
 * 256 threads (64- and 128-row tiles; the latter is the H200's default for head_dim 64 / 128,
 * there also in test_attention_flash, and runs as RG 1 / NT 128 where the adapter has less
 * workgroup memory, e.g. lavapipe: test_attention_flash_pf's pipelines), 4 × 4 blocks on 128
 * threads with prefetch and without FD. */
static void test_attention_flash_variants(void **state) {
  if (!sweep_on("test_attention_flash_variants", "TEZGAH_TEST_ATTN_VARIANTS")) skip();
  static const char *v[][4] = {{"1", "256", "0", "0"}, {"2", "128", "1", "1"}, {"2", "256", "1", "1"},
                               {"1", "128", "1", "0"}};
  static const int hd2[] = {128, 32, 128, 0};
  g_pad = 4;
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "0", 1); /* fa_dq and fa_dkdv */
  for (int i = 0; i < 4; i++) {
    setenv("TEZGAH_WEBGPU_ATTN_RG", v[i][0], 1);
    setenv("TEZGAH_WEBGPU_ATTN_NT", v[i][1], 1);
    setenv("TEZGAH_WEBGPU_ATTN_PF", v[i][2], 1);
    setenv("TEZGAH_WEBGPU_ATTN_FD", v[i][3], 1);
    check_att(2, 70, 4, 2, 64);
    if (hd2[i] == 32) check_att(1, 150, 2, 1, 32);
    if (hd2[i] == 128) check_att(2, 133, 4, 2, 128);
    if (i == 2) check_att_arena(2, 140, 4, 2, 64);
  }
  unsetenv("TEZGAH_WEBGPU_ATTN_RG"), unsetenv("TEZGAH_WEBGPU_ATTN_NT");
  unsetenv("TEZGAH_WEBGPU_ATTN_PF"), unsetenv("TEZGAH_WEBGPU_ATTN_FD");
  unsetenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ");
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_ATTN");
}

/* Sweep (as above): the default variant's tuning switches that no adapter chooses by default.
 * The former grid order (TEZGAH_WEBGPU_ATTN_ORDER=0, blocks fastest; the default puts the block
 * index in z: a uniform, no new pipelines) on the fused backward, head_dim 64 / 32 / 128; then the
 * two-kernel backward with each kernel its own variant (per-kernel RG / NT and grid order):
 * fa_dkdv reads the D that fa_dq wrote in other row blocks. Head_dim 64 only (each variant and
 * head size is a set of pipelines lavapipe compiles for a minute or more). */
static void test_attention_flash_variants_mixes(void **state) {
  if (!sweep_on("test_attention_flash_variants_mixes", "TEZGAH_TEST_ATTN_VARIANTS")) skip();
  g_pad = 4;
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "1", 1);
  setenv("TEZGAH_WEBGPU_ATTN_ORDER", "0", 1);
  check_att(2, 70, 4, 2, 64);
  check_att(1, 300, 2, 1, 32);
  check_att(2, 133, 2, 2, 128);
  unsetenv("TEZGAH_WEBGPU_ATTN_ORDER");
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "0", 1);
  setenv("TEZGAH_WEBGPU_ATTN_DQ_RG", "1", 1);
  setenv("TEZGAH_WEBGPU_ATTN_DQ_NT", "256", 1);
  check_att(1, 150, 2, 2, 64);
  setenv("TEZGAH_WEBGPU_ATTN_DQ_ORDER", "0", 1); /* and its own grid order */
  check_att(2, 70, 4, 2, 64);
  unsetenv("TEZGAH_WEBGPU_ATTN_DQ_RG"), unsetenv("TEZGAH_WEBGPU_ATTN_DQ_NT");
  unsetenv("TEZGAH_WEBGPU_ATTN_DQ_ORDER");
  setenv("TEZGAH_WEBGPU_ATTN_FWD_RG", "1", 1), setenv("TEZGAH_WEBGPU_ATTN_FWD_NT", "256", 1);
  setenv("TEZGAH_WEBGPU_ATTN_DKDV_RG", "1", 1), setenv("TEZGAH_WEBGPU_ATTN_DKDV_NT", "256", 1);
  check_att(2, 70, 4, 2, 64);
  setenv("TEZGAH_WEBGPU_ATTN_DKDV_ORDER", "0", 1);
  check_att(3, 100, 4, 1, 64);
  unsetenv("TEZGAH_WEBGPU_ATTN_DKDV_ORDER");
  unsetenv("TEZGAH_WEBGPU_ATTN_FWD_RG"), unsetenv("TEZGAH_WEBGPU_ATTN_FWD_NT");
  unsetenv("TEZGAH_WEBGPU_ATTN_DKDV_RG"), unsetenv("TEZGAH_WEBGPU_ATTN_DKDV_NT");
  unsetenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ");
  g_pad = PAD;
  unsetenv("TEZGAH_WEBGPU_ATTN");
}

/* Sweep (as above): the flash kernels with every tensor in one buffer (read_write bindings),
 * which only the single activation arena (TEZGAH_WEBGPU_ARENA=1, an A/B switch; the default is
 * one buffer per tensor, model.c) or a caller's own aliasing reaches: the adapter's default
 * variant with the fused backward on head_dim 64 / 32 / 128, and RG 1 / NT 128 with prefetch. */
static void test_attention_flash_variants_arena(void **state) {
  if (!sweep_on("test_attention_flash_variants_arena", "TEZGAH_TEST_ATTN_VARIANTS")) skip();
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  check_att_arena(2, 70, 4, 2, 64);
  check_att_arena(1, 77, 2, 1, 32);
  check_att_arena(1, 45, 4, 2, 128);
  setenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "1", 1);
  setenv("TEZGAH_WEBGPU_ATTN_RG", "1", 1), setenv("TEZGAH_WEBGPU_ATTN_NT", "128", 1);
  setenv("TEZGAH_WEBGPU_ATTN_PF", "1", 1);
  check_att_arena(2, 140, 4, 2, 64);
  unsetenv("TEZGAH_WEBGPU_ATTN_RG"), unsetenv("TEZGAH_WEBGPU_ATTN_NT"), unsetenv("TEZGAH_WEBGPU_ATTN_PF");
  unsetenv("TEZGAH_WEBGPU_ATTN_FUSED_DQ");
  unsetenv("TEZGAH_WEBGPU_ATTN");
}

/* decoding form: Tq < Tk against a separate KV cache, no lse */
static void op_att_kv(tz_backend *be, tz_slice *s, const int *d) {
  int nh = 4, nkv = 2, hd = 16, Tq = 3, Tk = 11, qs = (nh + 2 * nkv) * hd, kvs = nkv * hd;
  be->attention_fwd(be, s[0], TZ_NONE, s[1], s[2], s[3], 1, Tq, Tk, Tk - Tq, nh, nkv, hd, qs, kvs);
}
static void test_attention_kvcache(void **state) {
  kase k;
  k_init(&k, 33);
  k_randn(&k, 3 * 64, 1);
  k_randn(&k, 3 * 128, 1);
  k_randn(&k, 11 * 32, 1);
  k_randn(&k, 11 * 32, 1);
  k_run(&k, op_att_kv, NULL);
  k_check(&k, 0, "attention kv-cache out", 1e-4, 2e-5);
  k_free(&k);
}

/* ---- activations ---- */
static void op_act(tz_backend *be, tz_slice *s, const int *d) {
  int N = d[0], F = d[1];
  size_t n = (size_t)N * F;
  be->gelu_fwd(be, s[0], s[1], n);
  be->gelu_bwd(be, s[2], s[1], s[3], n);
  be->swiglu_fwd(be, s[4], s[5], N, F);
  be->swiglu_bwd(be, s[6], s[3], s[5], N, F);
}
static void test_activations(void **state) {
  int N = 37, F = 45; /* n = 1665: gelu_fwd4 / ffn_gelu_backward4 over two workgroups, one partial; gelu_fwd8: one, partial */
  size_t n = (size_t)N * F;
  kase k;
  k_init(&k, 40);
  k_randn(&k, n, 1);
  int x = k_randn(&k, n, 3);
  k_randn(&k, n, 1);
  k_randn(&k, n, 1);
  k_randn(&k, n, 1);
  int gu = k_randn(&k, 2 * n, 3);
  k_randn(&k, 2 * n, 1);
  /* extremes: saturated tanh / sigmoid, x³ overflow guard */
  float ext[] = {200.f, -200.f, 90.f, -90.f, 1e20f, -1e20f, 0.f};
  for (int i = 0; i < 7; i++) k.t[x].h[i * 11] = ext[i], k.t[gu].h[i * 13] = ext[i];
  int d[] = {N, F};
  k_run(&k, op_act, d);
  k_check(&k, 0, "gelu_fwd", 1e-5, 1e-6);
  k_check(&k, 2, "gelu_bwd", 1e-5, 1e-5);
  k_check(&k, 4, "swiglu_fwd", 1e-5, 1e-6);
  k_check(&k, 6, "swiglu_bwd", 1e-5, 1e-6);
  k_free(&k);
}

/* ---- loss, grad norm, optimizer ---- */
static void op_xent(tz_backend *be, tz_slice *s, const int *d) {
  be->crossentropy(be, s[0], s[1], s[2], d[0], d[1], d[2], 0.1f);
  be->sum_sq(be, s[3], s[4], (size_t)d[3]);
}
static void xent_case(int N, int V, int Vp, const int32_t *y, double scale, uint64_t seed) {
  kase k;
  k_init(&k, seed);
  k_randn(&k, N, 1);
  int l = k_randn(&k, (size_t)N * Vp, scale);
  k_ints(&k, y, N);
  k_randn(&k, 1, 1);
  k_randn(&k, 1, 1);
  /* rising logits along row 0 (every element a new running max: the online sum's rescale on
   * each step) and falling along row 1 */
  for (int c = 0; c < V; c++) k.t[l].h[c] = 0.01f * (float)c, k.t[l].h[Vp + c] = -0.01f * (float)c;
  int d[] = {N, V, Vp, 1};
  k_run(&k, op_xent, d);
  k_check(&k, 0, "crossentropy losses (V 3001)", 1e-5, 1e-6);
  k_check(&k, 1, "crossentropy dlogits (V 3001)", 1e-5, 1e-6);
  k_free(&k);
}
static void test_crossentropy_sumsq(void **state) {
  /* rows of 3001: about 12 logits per thread of the online max / sum pass (softmax_xent_online) */
  int32_t y3[4] = {5, 3000, -1, 1234};
  xent_case(4, 3001, 3002, y3, 4, 51);
  int N = 9, V = 37, Vp = 40, n = 100003;
  int32_t y[9] = {0, 36, 5, -1, 12, 7, 7, 30, 1};
  kase k;
  k_init(&k, 50);
  k_randn(&k, N, 1);
  k_randn(&k, (size_t)N * Vp, 3);
  k_ints(&k, y, N);
  k_randn(&k, 1, 1);
  k_randn(&k, n, 1);
  int d[] = {N, V, Vp, n};
  k_run(&k, op_xent, d);
  k_check(&k, 0, "crossentropy losses", 1e-5, 1e-6);
  k_check(&k, 1, "crossentropy dlogits", 1e-5, 1e-6);
  k_check(&k, 3, "sum_sq", 1e-5, 0);
  k_free(&k);
}

static void test_crossentropy_extremes(void **state) { xe_check_all(gpu, "webgpu"); }

static void op_adamw(tz_backend *be, tz_slice *s, const int *d) {
  tz_range r[] = {{0, 300, 1.0f}, {300, 7, 0.0f}, {320, 680, 1.0f}};
  tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3};
  be->adamw(be, s[0], s[1], s[2], s[3], r, 3, &hp);
  hp.t = 4;
  be->adamw(be, s[0], s[1], s[2], s[3], r, 3, &hp);
}
static void test_adamw(void **state) {
  kase k;
  k_init(&k, 60);
  k_randn(&k, 1000, 1);
  k_randn(&k, 1000, 1);
  k_randn(&k, 1000, 0.1f);
  int v = k_randn(&k, 1000, 0.1f);
  for (int i = 0; i < 1000; i++) k.t[v].h[i] = fabsf(k.t[v].h[i]);
  k_run(&k, op_adamw, NULL);
  k_check(&k, 0, "adamw params", 1e-5, 1e-7);
  k_check(&k, 2, "adamw m", 1e-5, 1e-7);
  k_check(&k, 3, "adamw v", 1e-5, 1e-7);
  k_free(&k);
}

/* ---- f16 weight mirror ---- */
/* |got - ref| <= rel·mag[i] + abs for every i; returns how many differ from ref at all. */
static int check_bound(const char *what, const float *got, const float *ref, const double *mag, size_t n,
                       double rel, double abs_) {
  int differ = 0;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - ref[i]);
    differ += got[i] != ref[i];
    if (!(err <= rel * mag[i] + abs_)) {
      print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], rel * mag[i] + abs_);
      fail();
    }
  }
  return differ;
}

static void test_w16(void **state) {
  setenv("TEZGAH_WEBGPU_F16", "1", 1);
  tz_backend *g16 = tz_backend_create("webgpu", 0, NULL);
  unsetenv("TEZGAH_WEBGPU_F16");
  if (!g16) {
    printf("SKIPPED: f16 mirror unavailable: %s\n", tz_errmsg());
    skip();
  }
  assert_non_null(g16->params_mirror);
  assert_null(cpu->params_mirror);
  /* parameter layout (floats): [4 pad | wte V*C | wpe T*C | W N*K | bias N], 16-byte aligned */
  const int V = 37, C = 48, T = 12, Bt = 2, M = 20, K = C, N = 36;
  size_t o_wte = 4, o_wpe = o_wte + (size_t)V * C, o_w = o_wpe + (size_t)T * C, o_b = o_w + (size_t)N * K,
         np = o_b + N;
  tz_rng r;
  tz_rng_seed(&r, 77, 5);
  float *ph = malloc(np * 4), *ph2 = malloc(np * 4), *x = malloc((size_t)M * K * 4), *dy = malloc((size_t)M * N * 4);
  float *gr = malloc(np * 4), *mm_ = calloc(np, 4), *vv = calloc(np, 4);
  for (size_t i = 0; i < np; i++) ph[i] = tz_rng_normal(&r), ph2[i] = tz_rng_normal(&r) * 0.5f, gr[i] = tz_rng_normal(&r);
  for (int i = 0; i < M * K; i++) x[i] = tz_rng_normal(&r);
  for (int i = 0; i < M * N; i++) dy[i] = tz_rng_normal(&r);
  int32_t tok[24];
  for (int i = 0; i < Bt * T; i++) tok[i] = (int32_t)tz_rng_below(&r, V);
  tok[3] = V + 5; /* invalid: zero row */
  tz_range rg[] = {{o_wte, (size_t)V * C + (size_t)T * C, 1.0f}, {o_w, (size_t)N * K, 1.0f}, {o_b, (size_t)N, 0.0f}};
  tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 1};
  /* outputs per backend: emb, mm (fresh), mm after adamw, mm after upload, dX, params after adamw */
  size_t ne = (size_t)Bt * T * C, nm = (size_t)M * N, nx = (size_t)M * K;
  float *res[2][7];
  tz_backend *bes[2] = {cpu, g16};
  for (int b = 0; b < 2; b++) {
    tz_backend *be = bes[b];
    tz_buf *P = be->alloc(be, np * 4, "params"), *G = be->alloc(be, np * 4, "grads"),
           *Mb = be->alloc(be, np * 4, "m"), *Vb = be->alloc(be, np * 4, "v"),
           *act = be->alloc(be, (ne + 2 * nx + 2 * nm + 64) * 4, "acts");
    if (be->params_mirror) be->params_mirror(be, P);
    tz_slice ps = {P, 0}, gs = {G, 0}, ms = {Mb, 0}, vs = {Vb, 0};
    be->upload(be, ps, ph, np * 4);
    be->upload(be, gs, gr, np * 4);
    tz_slice emb = {act, 16}, xs = tz_f32(emb, ne), tk = tz_f32(xs, nx), out = tz_f32(tk, 32), dys = tz_f32(out, nm);
    tz_slice dx = tz_f32(dys, nm);
    be->upload(be, xs, x, nx * 4);
    be->upload(be, tk, tok, sizeof tok);
    be->upload(be, dys, dy, nm * 4);
    for (int k = 0; k < 7; k++) res[b][k] = malloc(np * 4);
    be->embed_fwd(be, emb, tk, tz_f32(ps, o_wte), tz_f32(ps, o_wpe), Bt, T, C, V);
    be->download(be, res[b][0], emb, ne * 4);
    be->matmul_t(be, out, xs, tz_f32(ps, o_w), tz_f32(ps, o_b), M, K, N, 0);
    be->download(be, res[b][1], out, nm * 4);
    be->adamw(be, ps, gs, ms, vs, rg, 3, &hp);
    be->matmul_t(be, out, xs, tz_f32(ps, o_w), tz_f32(ps, o_b), M, K, N, 0);
    be->download(be, res[b][2], out, nm * 4);
    be->download(be, res[b][5], ps, np * 4);
    be->upload(be, ps, ph2, np * 4);
    be->matmul_t(be, out, xs, tz_f32(ps, o_w), tz_f32(ps, o_b), M, K, N, 0);
    be->download(be, res[b][3], out, nm * 4);
    be->matmul(be, dx, dys, tz_f32(ps, o_w), M, N, K, 0); /* dX = dY·W, fp32 W */
    be->download(be, res[b][4], dx, nx * 4);
    /* the unaligned form: K' = K - 3 (f16 read element by element), weight 2 floats further */
    be->matmul_t(be, out, xs, tz_f32(ps, o_w + 2), tz_f32(ps, o_b), M, K - 3, N, 0);
    be->download(be, res[b][6], out, nm * 4);
    tz_buf *all[] = {act, Vb, Mb, G, P};
    for (int i = 0; i < 5; i++) be->free(be, all[i]);
  }
  double *mag = malloc(np * 8);
  /* embed */
  for (int n = 0; n < Bt * T; n++)
    for (int c = 0; c < C; c++)
      mag[(size_t)n * C + c] = tok[n] < V ? fabs(ph[o_wte + (size_t)tok[n] * C + c]) + fabs(ph[o_wpe + (size_t)(n % T) * C + c]) : 0;
  int d_emb = check_bound("w16 embed_fwd", res[1][0], res[0][0], mag, ne, 1e-3, 1e-6);
  /* matmul_t from three weight states: initial, after adamw, after an upload */
  const float *wst[3] = {ph, res[0][5], ph2};
  int d_mm = 0;
  for (int s = 0; s < 3; s++) {
    const float *w = wst[s];
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++) {
        double t = fabs(w[o_b + n]);
        for (int k = 0; k < K; k++) t += fabs((double)x[m * K + k] * w[o_w + (size_t)n * K + k]);
        mag[m * N + n] = t;
      }
    const char *nm_[3] = {"w16 matmul_t", "w16 matmul_t after adamw", "w16 matmul_t after upload"};
    d_mm += check_bound(nm_[s], res[1][s == 0 ? 1 : s == 1 ? 2 : 3], res[0][s == 0 ? 1 : s == 1 ? 2 : 3], mag, nm,
                        2e-3, 1e-5);
  }
  {
    const int K3 = K - 3;
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++) {
        double t = fabs(ph2[o_b + n]);
        for (int k = 0; k < K3; k++) t += fabs((double)x[m * K3 + k] * ph2[o_w + 2 + (size_t)n * K3 + k]);
        mag[m * N + n] = t;
      }
    d_mm += check_bound("w16 matmul_t, K % 4 != 0", res[1][6], res[0][6], mag, nm, 2e-3, 1e-5);
  }
  double *pref = ot_dbl(res[0][5], np);
  ot_close("w16 adamw params (fp32 master)", res[1][5], pref, np, 1e-5, 1e-7);
  free(pref);
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) {
      double t = 0;
      for (int n = 0; n < N; n++) t += fabs((double)dy[m * N + n] * ph2[o_w + (size_t)n * K + k]);
      mag[m * K + k] = t;
    }
  check_bound("w16 backward matmul (fp32 W)", res[1][4], res[0][4], mag, nx, 2e-5, 1e-6);
  printf("w16: %d of %zu embed and %d of %zu matmul_t outputs differ from fp32 (f16 weights read)\n", d_emb, ne,
         d_mm, 4 * nm);
  assert_true(d_emb > 0 && d_mm > 0);
  for (int b = 0; b < 2; b++)
    for (int k = 0; k < 7; k++) free(res[b][k]);
  free(mag), free(ph), free(ph2), free(x), free(dy), free(gr), free(mm_), free(vv);
  g16->destroy(g16);
}

/* ---- f16 matmul inputs (be->act_mm == TZ_F16) ---- */
/* f16 bit patterns of x[0..n) uploaded at byte offset `off` (even) of a fresh buffer */
static tz_slice up16(ot_ctx *o, const float *x, size_t n, size_t off) {
  size_t lead = off % 4 / 2; /* uploads start on 4-byte words: a leading zero half */
  uint16_t *h = malloc((n + 2) * 2);
  h[0] = 0;
  for (size_t i = 0; i < n; i++) h[lead + i] = tz_sgmat_f16(x[i]);
  size_t nh = lead + n;
  if (nh % 2) h[nh++] = 0; /* ... and end on them */
  tz_slice s = ot_buf(o, NULL, off + n * 2 + 64);
  s.off = off - 2 * lead;
  o->be->upload(o->be, s, h, nh * 2);
  s.off = off;
  free(h);
  return s;
}
static float *down16(ot_ctx *o, tz_slice s, size_t n) {
  uint16_t *h = malloc((n + 1) * 2);
  o->be->download(o->be, h, s, (n + 1) / 2 * 4);
  float *x = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = tz_sgmat_f32(h[i]);
  free(h);
  return x;
}
/* x rounded to f16 in place (the values the GPU's f16 operands hold) */
static void round16(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = tz_sgmat_f32(tz_sgmat_f16(x[i]));
}
static tz_slice up32(ot_ctx *o, const float *x, size_t n) { return ot_buf(o, x, n * 4); }

/* matmul_t (kind 0: out = a·bᵀ (+ bias), a f16 [M, K]) or matmul_at (kind 2: out (+)= aᵀ·b, b f16
 * [K, N]) on g16 vs the CPU on the same f16-rounded values; the f16 operand at byte offset off16 */
static void act16_mm(tz_backend *g16, int kind, int M, int K, int N, int acc, int bias, size_t off16) {
  ot_ctx og, oc;
  ot_init(&og, g16, (uint64_t)M * 7919 + K * 31 + N + kind);
  ot_init(&oc, cpu, 1);
  size_t na = (size_t)M * K, nb = (size_t)K * N, no = (size_t)M * N;
  float *a = ot_randn(&og, kind == 0 ? na : (size_t)K * M, 1), *b = ot_randn(&og, kind == 0 ? (size_t)N * K : nb, 1);
  float *o0 = ot_randn(&og, no, 1), *bs = ot_randn(&og, N, 1);
  float *h = kind == 0 ? a : b; /* the f16 operand */
  size_t nh = kind == 0 ? na : nb;
  round16(h, nh);
  tz_slice ga = kind == 0 ? up16(&og, a, na, off16) : up32(&og, a, na), gb = kind == 0 ? up32(&og, b, nb) : up16(&og, b, nb, off16);
  tz_slice go = up32(&og, o0, no), gbias = up32(&og, bs, N);
  tz_slice ca = up32(&oc, a, na), cb = up32(&oc, b, nb), co = up32(&oc, o0, no), cbias = up32(&oc, bs, N);
  if (kind == 0) {
    g16->matmul_t(g16, go, ga, gb, bias ? gbias : TZ_NONE, M, K, N, acc);
    cpu->matmul_t(cpu, co, ca, cb, bias ? cbias : TZ_NONE, M, K, N, acc);
  } else {
    g16->matmul_at(g16, go, ga, gb, M, K, N, acc);
    cpu->matmul_at(cpu, co, ca, cb, M, K, N, acc);
  }
  float *got = ot_get(&og, go, no), *ref = ot_get(&oc, co, no);
  double *mag = malloc(no * sizeof(double));
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double t = (acc ? fabs(o0[m * N + n]) : 0) + (bias ? fabs(bs[n]) : 0);
      for (int k = 0; k < K; k++)
        t += kind == 0 ? fabs((double)a[(size_t)m * K + k] * b[(size_t)n * K + k])
                       : fabs((double)a[(size_t)k * M + m] * b[(size_t)k * N + n]);
      mag[(size_t)m * N + n] = t;
    }
  char what[96];
  snprintf(what, sizeof what, "act16 %s M%d K%d N%d acc%d bias%d off%zu", kind == 0 ? "matmul_t" : "matmul_at", M, K, N,
           acc, bias, off16);
  check_bound(what, got, ref, mag, no, g_mm_tol, g_mm_atol);
  free(got), free(ref), free(mag), free(a), free(b), free(o0), free(bs);
  ot_release(&og), ot_release(&oc);
}

static void act16_norms_acts(tz_backend *g16, int N, int C) {
  ot_ctx og, oc;
  ot_init(&og, g16, (uint64_t)N * 13 + C);
  ot_init(&oc, cpu, 1);
  size_t nc = (size_t)N * C;
  float *x = ot_randn(&og, nc, 2), *w = ot_randn(&og, C, 1), *b = ot_randn(&og, C, 1), *h = ot_randn(&og, 2 * nc, 2);
  tz_slice gx = up32(&og, x, nc), gw = up32(&og, w, C), gb = up32(&og, b, C), gh = up32(&og, h, 2 * nc);
  tz_slice cx = up32(&oc, x, nc), cw = up32(&oc, w, C), cb = up32(&oc, b, C), ch = up32(&oc, h, 2 * nc);
  tz_slice gs[5], cs[5], gst[3], cst[3];
  for (int i = 0; i < 5; i++) gs[i] = ot_buf(&og, NULL, nc * 2 + 64), cs[i] = ot_buf(&oc, NULL, nc * 4 + 64);
  for (int i = 0; i < 3; i++) gst[i] = ot_buf(&og, NULL, N * 4 + 64), cst[i] = ot_buf(&oc, NULL, N * 4 + 64);
  gs[2].off = 4; /* an f16 output starting 4 bytes into its buffer */
  tz_backend *bes[2] = {g16, cpu};
  for (int i = 0; i < 2; i++) {
    tz_backend *be = bes[i];
    tz_slice *o = i ? cs : gs, *st = i ? cst : gst, xx = i ? cx : gx, ww = i ? cw : gw, bb = i ? cb : gb, hh = i ? ch : gh;
    be->layernorm_fwd(be, o[0], st[0], st[1], xx, ww, bb, N, C, 1e-5f);
    be->rmsnorm_fwd(be, o[1], st[2], xx, ww, N, C, 1e-5f);
    be->gelu_fwd(be, o[2], xx, nc);
    be->swiglu_fwd(be, o[3], hh, N, C);
  }
  const char *names[4] = {"act16 layernorm out", "act16 rmsnorm out", "act16 gelu out", "act16 swiglu out"};
  for (int t = 0; t < 4; t++) {
    float *got = down16(&og, gs[t], nc), *ref = ot_get(&oc, cs[t], nc);
    double *rd = ot_dbl(ref, nc);
    ot_close(names[t], got, rd, nc, 6e-4, 1e-5);
    free(got), free(ref), free(rd);
  }
  const char *sn[3] = {"act16 layernorm mean", "act16 layernorm rstd", "act16 rmsnorm rstd"};
  for (int t = 0; t < 3; t++) {
    float *got = ot_get(&og, gst[t], N), *ref = ot_get(&oc, cst[t], N);
    double *rd = ot_dbl(ref, N);
    ot_close(sn[t], got, rd, N, 1e-4, 1e-5);
    free(got), free(ref), free(rd);
  }
  free(x), free(w), free(b), free(h);
  ot_release(&og), ot_release(&oc);
}

/* attention forward (f16 out) and backward reading it; the CPU's backward gets the same f16 out */
static void act16_att(tz_backend *g16, int B, int T, int nh, int nkv, int hd) {
  ot_ctx og, oc;
  ot_init(&og, g16, (uint64_t)B * 131 + T * 7 + nh + hd);
  ot_init(&oc, cpu, 1);
  size_t N = (size_t)B * T, Q = (size_t)(nh + 2 * nkv) * hd, C = (size_t)nh * hd, nl = (size_t)B * nh * T;
  float *qkv = ot_randn(&og, N * Q, 1), *dout = ot_randn(&og, N * C, 1);
  tz_slice gq = up32(&og, qkv, N * Q), gd = up32(&og, dout, N * C), go = ot_buf(&og, NULL, N * C * 2 + 64),
           gl = ot_buf(&og, NULL, nl * 4), gdq = ot_buf(&og, NULL, N * Q * 4);
  tz_slice cq = up32(&oc, qkv, N * Q), cd = up32(&oc, dout, N * C), co = ot_buf(&oc, NULL, N * C * 4),
           cl = ot_buf(&oc, NULL, nl * 4), cdq = ot_buf(&oc, NULL, N * Q * 4);
  g16->attention_fwd(g16, go, gl, gq, tz_f32(gq, C), tz_f32(gq, C + (size_t)nkv * hd), B, T, T, 0, nh, nkv, hd, (int)Q,
                     (int)Q);
  cpu->attention_fwd(cpu, co, cl, cq, tz_f32(cq, C), tz_f32(cq, C + (size_t)nkv * hd), B, T, T, 0, nh, nkv, hd, (int)Q,
                     (int)Q);
  float *got = down16(&og, go, N * C), *ref = ot_get(&oc, co, N * C);
  double *rd = ot_dbl(ref, N * C);
  ot_close("act16 attention out", got, rd, N * C, 6e-4, 2e-5);
  free(rd), free(ref);
  float *gl_ = ot_get(&og, gl, nl), *cl_ = ot_get(&oc, cl, nl);
  rd = ot_dbl(cl_, nl);
  ot_close("act16 attention lse", gl_, rd, nl, 1e-4, 2e-5);
  free(rd), free(gl_), free(cl_);
  cpu->upload(cpu, co, got, N * C * 4); /* the f16 out both backwards read */
  g16->attention_bwd(g16, gdq, tz_f32(gdq, C), tz_f32(gdq, C + (size_t)nkv * hd), gd, gq, tz_f32(gq, C),
                     tz_f32(gq, C + (size_t)nkv * hd), go, gl, B, T, nh, nkv, hd, (int)Q, (int)Q);
  cpu->attention_bwd(cpu, cdq, tz_f32(cdq, C), tz_f32(cdq, C + (size_t)nkv * hd), cd, cq, tz_f32(cq, C),
                     tz_f32(cq, C + (size_t)nkv * hd), co, cl, B, T, nh, nkv, hd, (int)Q, (int)Q);
  float *g2 = ot_get(&og, gdq, N * Q), *r2 = ot_get(&oc, cdq, N * Q);
  rd = ot_dbl(r2, N * Q);
  ot_close("act16 attention dqkv", g2, rd, N * Q, 1e-4, 2e-5);
  free(rd), free(g2), free(r2), free(got), free(qkv), free(dout);
  ot_release(&og), ot_release(&oc);
}

/* The model's use in miniature, where the subgroup-matrix kernel runs (H200) on tile-multiple
 * shapes: W [N, K] in a parameter buffer with the f16 mirror, x [M, K] f16 (an "mmin" tensor), dY
 * [M, N] fp32. matmul_t(x, W) and matmul(dY, W) read W's mirror; matmul(dY, W) and then
 * matmul_at(dY, x) share dY's f16 copy (sg_operand's reuse); after an upload into dY's buffer
 * matmul_at must convert again (a stale copy would give the old dW). Bound 1e-3·Σ|a·b| + 1e-5
 * (each operand rounded to f16 at most once) against the CPU on the fp32 values (x as its f16
 * values). Elsewhere (lavapipe) the same calls take the vector kernels, within the same bound. */
static void act16_sg_chain(tz_backend *g16) {
  const int M = 256, K = 128, N = 128;
  ot_ctx og, oc;
  ot_init(&og, g16, 4242);
  ot_init(&oc, cpu, 1);
  size_t nw = (size_t)N * K, nx = (size_t)M * K, ny = (size_t)M * N;
  float *w = ot_randn(&og, nw + 16, 1), *x = ot_randn(&og, nx, 1), *dy = ot_randn(&og, ny, 1), *dy2 = ot_randn(&og, ny, 1);
  round16(x, nx);
  tz_buf *P = g16->alloc(g16, (nw + 16) * 4, "params");
  g16->params_mirror(g16, P);
  tz_slice gw = {P, 16 * 4}; /* the weight 64 bytes into the parameters */
  g16->upload(g16, (tz_slice){P, 0}, w, (nw + 16) * 4);
  tz_slice gx = up16(&og, x, nx, 0), gdy = up32(&og, dy, ny), go = ot_buf(&og, NULL, ny * 4), gdx = ot_buf(&og, NULL, nx * 4),
           gdw = ot_buf(&og, NULL, nw * 4), gdw2 = ot_buf(&og, NULL, nw * 4);
  tz_slice cw = up32(&oc, w + 16, nw), cx = up32(&oc, x, nx), cdy = up32(&oc, dy, ny), cdy2 = up32(&oc, dy2, ny),
           co = ot_buf(&oc, NULL, ny * 4), cdx = ot_buf(&oc, NULL, nx * 4), cdw = ot_buf(&oc, NULL, nw * 4),
           cdw2 = ot_buf(&oc, NULL, nw * 4);
  g16->matmul_t(g16, go, gx, gw, TZ_NONE, M, K, N, 0);
  g16->matmul(g16, gdx, gdy, gw, M, N, K, 0);
  g16->matmul_at(g16, gdw, gdy, gx, N, M, K, 0);
  g16->upload(g16, gdy, dy2, ny * 4); /* dY's f16 copy is stale now */
  g16->matmul_at(g16, gdw2, gdy, gx, N, M, K, 0);
  cpu->matmul_t(cpu, co, cx, cw, TZ_NONE, M, K, N, 0);
  cpu->matmul(cpu, cdx, cdy, cw, M, N, K, 0);
  cpu->matmul_at(cpu, cdw, cdy, cx, N, M, K, 0);
  cpu->matmul_at(cpu, cdw2, cdy2, cx, N, M, K, 0);
  struct { tz_slice g, c; int m, k, n, form; const char *what; const float *a, *b; } cs[] = {
      {go, co, M, K, N, 0, "act16 sg chain matmul_t (x f16, W mirror)", x, w + 16},
      {gdx, cdx, M, N, K, 1, "act16 sg chain matmul (dY, W mirror)", dy, w + 16},
      {gdw, cdw, N, M, K, 2, "act16 sg chain matmul_at (dY copy reused, x f16)", dy, x},
      {gdw2, cdw2, N, M, K, 2, "act16 sg chain matmul_at after dY's upload", dy2, x}};
  for (int t = 0; t < 4; t++) {
    size_t n = (size_t)cs[t].m * cs[t].n;
    float *got = ot_get(&og, cs[t].g, n), *ref = ot_get(&oc, cs[t].c, n);
    double *mag = calloc(n, sizeof(double));
    for (int i = 0; i < cs[t].m; i++)
      for (int j = 0; j < cs[t].n; j++)
        for (int k = 0; k < cs[t].k; k++) {
          double av = cs[t].form == 2 ? cs[t].a[(size_t)k * cs[t].m + i] : cs[t].a[(size_t)i * cs[t].k + k];
          double bv = cs[t].form == 0 ? cs[t].b[(size_t)j * cs[t].k + k] : cs[t].b[(size_t)k * cs[t].n + j];
          mag[(size_t)i * cs[t].n + j] += fabs(av * bv);
        }
    check_bound(cs[t].what, got, ref, mag, n, 1e-3, 1e-5);
    free(got), free(ref), free(mag);
  }
  g16->free(g16, P);
  free(w), free(x), free(dy), free(dy2);
  ot_release(&og), ot_release(&oc);
}

/* The lm_head's backward in miniature: crossentropy (in place: logits [R, Vp] -> dlogits, with
 * the f16 copy where the subgroup-matrix kernel runs, or TEZGAH_WEBGPU_GRAD16=1) then dX =
 * dlogits·W and dW += dlogitsᵀ·nf, which take that copy (sg_operand) where the kernel runs.
 * R 256, Vp 128 (V 120), C 128: tile multiples. Bound 1e-3·Σ|a·b| + 1e-5 against the CPU; the
 * losses at the fp32 bound. */
static void act16_xent_chain(tz_backend *g16) {
  const int R = 256, V = 120, Vp = 128, C = 128;
  ot_ctx og, oc;
  ot_init(&og, g16, 777);
  ot_init(&oc, cpu, 1);
  size_t nl = (size_t)R * Vp, nw = (size_t)Vp * C, nx = (size_t)R * C;
  float *lg = ot_randn(&og, nl, 3), *w = ot_randn(&og, nw, 1), *nf = ot_randn(&og, nx, 1);
  round16(nf, nx);
  int32_t *tg = malloc(R * sizeof(int32_t));
  for (int r = 0; r < R; r++) tg[r] = r == 5 ? -1 : (int32_t)tz_rng_below(&og.rng, V);
  tz_slice gl = up32(&og, lg, nl), gw = up32(&og, w, nw), gn = up16(&og, nf, nx, 0), gt = ot_buf(&og, tg, R * 4),
           gloss = ot_buf(&og, NULL, R * 4), gdx = ot_buf(&og, NULL, nx * 4), gdw = ot_buf(&og, NULL, nw * 4);
  tz_slice cl = up32(&oc, lg, nl), cw = up32(&oc, w, nw), cn = up32(&oc, nf, nx), ct = ot_buf(&oc, tg, R * 4),
           closs = ot_buf(&oc, NULL, R * 4), cdx = ot_buf(&oc, NULL, nx * 4), cdw = ot_buf(&oc, NULL, nw * 4);
  tz_backend *bes[2] = {g16, cpu};
  for (int i = 0; i < 2; i++) {
    tz_backend *be = bes[i];
    tz_slice l = i ? cl : gl, ww = i ? cw : gw, n_ = i ? cn : gn, t = i ? ct : gt, lo = i ? closs : gloss, dx = i ? cdx : gdx,
             dw = i ? cdw : gdw;
    be->crossentropy(be, lo, l, t, R, V, Vp, 1.0f);
    be->matmul(be, dx, l, ww, R, Vp, C, 0);
    be->matmul_at(be, dw, l, n_, Vp, R, C, 0);
  }
  float *dl = ot_get(&oc, cl, nl); /* the CPU's dlogits: the terms' magnitudes */
  float *gls = ot_get(&og, gloss, R), *cls = ot_get(&oc, closs, R);
  double *rd = ot_dbl(cls, R);
  ot_close("act16 xent chain losses", gls, rd, R, 1e-5, 1e-6);
  free(rd), free(gls), free(cls);
  float *got = ot_get(&og, gdx, nx), *ref = ot_get(&oc, cdx, nx);
  double *mag = calloc(nw > nx ? nw : nx, sizeof(double));
  for (int r = 0; r < R; r++)
    for (int j = 0; j < C; j++)
      for (int v = 0; v < Vp; v++) mag[(size_t)r * C + j] += fabs((double)dl[(size_t)r * Vp + v] * w[(size_t)v * C + j]);
  check_bound("act16 xent chain dX = dlogits·W", got, ref, mag, nx, 1e-3, 1e-5);
  free(got), free(ref);
  got = ot_get(&og, gdw, nw), ref = ot_get(&oc, cdw, nw);
  memset(mag, 0, nw * sizeof(double));
  for (int v = 0; v < Vp; v++)
    for (int j = 0; j < C; j++)
      for (int r = 0; r < R; r++) mag[(size_t)v * C + j] += fabs((double)dl[(size_t)r * Vp + v] * nf[(size_t)r * C + j]);
  check_bound("act16 xent chain dW += dlogitsᵀ·nf", got, ref, mag, nw, 1e-3, 1e-5);
  free(got), free(ref), free(mag), free(dl);
  /* dlogits beyond f16's range (dscale 1e6: the target entries near -1e6) must reach the matmul
   * as inf where it reads the f16 copy (the subgroup-matrix kernel), so that dynamic loss scaling
   * sees the overflow; elsewhere the matmul reads fp32 and stays finite */
  int sg = strstr(tz_webgpu_describe(g16), "matmul on subgroup matrices") != NULL;
  g16->upload(g16, gl, lg, nl * 4);
  g16->crossentropy(g16, gloss, gl, gt, R, V, Vp, 1e6f);
  g16->matmul(g16, gdx, gl, gw, R, Vp, C, 0);
  got = ot_get(&og, gdx, nx);
  int nonfinite = 0;
  for (size_t i = 0; i < nx; i++) nonfinite += !isfinite(got[i]);
  printf("act16 xent chain, dscale 1e6: %d of %zu dX elements non-finite (%s)\n", nonfinite, nx,
         sg ? "f16 copy read: expected > 0" : "fp32 read: expected 0");
  assert_true(sg ? nonfinite > 0 : nonfinite == 0);
  free(got), free(lg), free(w), free(nf), free(tg);
  ot_release(&og), ot_release(&oc);
}

/* The backward's dY producers with their f16 copy (where the subgroup-matrix kernel runs, or
 * TEZGAH_WEBGPU_GRAD16=1): layernorm_bwd / rmsnorm_bwd (dinp +=), gelu_bwd (dinp), swiglu_bwd
 * (dgu), each followed by dX = dY·W and dW = dYᵀ·X (X f16), which take the copy where the kernel
 * runs. R 256 rows, C 128 (the norms), gelu on [R, 128], swiglu F 64 (dgu [R, 128]); W [128,
 * 128]. The produced dY at the op's own fp32 bound, the products within 1e-3·Σ|a·b| + 1e-5 of the
 * CPU's. */
static void act16_grad_chain(tz_backend *g16) {
  const int R = 256, C = 128, F = 64;
  ot_ctx og, oc;
  ot_init(&og, g16, 99);
  ot_init(&oc, cpu, 1);
  size_t nc = (size_t)R * C, nw = (size_t)C * C;
  float *x = ot_randn(&og, nc, 2), *dy = ot_randn(&og, nc, 1), *d0 = ot_randn(&og, nc, 1), *nw_ = ot_randn(&og, C, 1),
        *w = ot_randn(&og, nw, 1), *xf = ot_randn(&og, nc, 1), *st = ot_randn(&og, 2 * (size_t)R, 1);
  for (int r = 0; r < R; r++) st[R + r] = 0.5f + fabsf(st[R + r]); /* rstd > 0 */
  round16(xf, nc);
  tz_backend *bes[2] = {g16, cpu};
  float *res[2][5]; /* [backend][dY, dX, dW, db right after the producer, db after dW] of one op */
  const char *ops[4] = {"layernorm_bwd", "rmsnorm_bwd", "gelu_bwd", "swiglu_bwd"};
  for (int op = 0; op < 4; op++) {
    for (int i = 0; i < 2; i++) {
      tz_backend *be = bes[i];
      ot_ctx *o = i ? &oc : &og;
      tz_slice sx = up32(o, x, nc), sdy = up32(o, dy, nc), sd = up32(o, d0, nc), sw = up32(o, nw_, C),
               sm = up32(o, st, R), sr = up32(o, st + R, R), W = up32(o, w, nw), X = i ? up32(o, xf, nc) : up16(o, xf, nc, 0),
               dwn = ot_buf(o, NULL, C * 4), dbn = ot_buf(o, NULL, C * 4), dx = ot_buf(o, NULL, nc * 4),
               dW = ot_buf(o, NULL, nw * 4), db1 = ot_buf(o, NULL, C * 4), db2 = ot_buf(o, NULL, C * 4);
      be->fill(be, db1, 0.25f, C, TZ_F32), be->fill(be, db2, -0.5f, C, TZ_F32); /* bias_bwd accumulates */
      if (op == 0) be->layernorm_bwd(be, sd, dwn, dbn, sdy, sx, sw, sm, sr, R, C);
      if (op == 1) be->rmsnorm_bwd(be, sd, dwn, sdy, sx, sw, sr, R, C);
      if (op == 2) be->gelu_bwd(be, sd, sx, sdy, nc);
      if (op == 3) be->swiglu_bwd(be, sd, sdy, sx, R, F); /* dout [R, F] = dy's first half */
      /* bias_bwd reads dY's f16 copy while it is valid: right after its producer (lavapipe with
       * GRAD16=1 too), and after dX and dW where the subgroup-matrix kernel keeps it (the model's
       * order) */
      be->bias_bwd(be, db1, sd, R, C);
      be->matmul(be, dx, sd, W, R, C, C, 0);
      be->matmul_at(be, dW, sd, X, C, R, C, 0);
      be->bias_bwd(be, db2, sd, R, C);
      res[i][0] = ot_get(o, sd, nc), res[i][1] = ot_get(o, dx, nc), res[i][2] = ot_get(o, dW, nw);
      res[i][3] = ot_get(o, db1, C), res[i][4] = ot_get(o, db2, C);
      ot_release(o);
    }
    char what[96];
    double *rd = ot_dbl(res[1][0], nc);
    snprintf(what, sizeof what, "act16 grad chain %s dY", ops[op]);
    ot_close(what, res[0][0], rd, nc, 1e-4, 1e-5);
    free(rd);
    const float *g = res[1][0]; /* the CPU's dY: the terms' magnitudes */
    double *mag = calloc(nc, sizeof(double));
    for (int r = 0; r < R; r++)
      for (int j = 0; j < C; j++)
        for (int k = 0; k < C; k++) mag[(size_t)r * C + j] += fabs((double)g[(size_t)r * C + k] * w[(size_t)k * C + j]);
    snprintf(what, sizeof what, "act16 grad chain %s dX = dY·W", ops[op]);
    check_bound(what, res[0][1], res[1][1], mag, nc, 1e-3, 1e-5);
    memset(mag, 0, nc * sizeof(double));
    for (int k = 0; k < C; k++)
      for (int j = 0; j < C; j++)
        for (int r = 0; r < R; r++) mag[(size_t)k * C + j] += fabs((double)g[(size_t)r * C + k] * xf[(size_t)r * C + j]);
    snprintf(what, sizeof what, "act16 grad chain %s dW = dYᵀ·X", ops[op]);
    check_bound(what, res[0][2], res[1][2], mag, nw, 1e-3, 1e-5);
    /* db: the f16 copy's rounding (2^-11 relative per term) under 1e-3·Σ_r |dY[r, j]| */
    memset(mag, 0, nc * sizeof(double));
    for (int r = 0; r < R; r++)
      for (int j = 0; j < C; j++) mag[j] += fabs((double)g[(size_t)r * C + j]);
    snprintf(what, sizeof what, "act16 grad chain %s db after the producer", ops[op]);
    check_bound(what, res[0][3], res[1][3], mag, C, 1e-3, 1e-5);
    double wr = 0; /* the worst |err| / Σ|dY|: ~1e-4 where the f16 copy was read, ~1e-7 from fp32 */
    for (int j = 0; j < C; j++) wr = fmax(wr, fabs((double)res[0][3][j] - res[1][3][j]) / (mag[j] + 1e-30));
    printf("%s: worst |err| / sum|dY| %.2g\n", what, wr);
    snprintf(what, sizeof what, "act16 grad chain %s db after dX, dW", ops[op]);
    check_bound(what, res[0][4], res[1][4], mag, C, 1e-3, 1e-5);
    free(mag);
    for (int i = 0; i < 2; i++)
      for (int t = 0; t < 5; t++) free(res[i][t]);
  }
  free(x), free(dy), free(d0), free(nw_), free(w), free(xf), free(st);
}

static void test_act16(void **state) {
  setenv("TEZGAH_WEBGPU_F16", "1", 1);
  setenv("TEZGAH_WEBGPU_ACT16", "1", 1);
  tz_backend *g16 = tz_backend_create("webgpu", 0, NULL);
  unsetenv("TEZGAH_WEBGPU_F16");
  setenv("TEZGAH_WEBGPU_ACT16", "0", 1);
  if (!g16) {
    printf("SKIPPED: f16 activations unavailable: %s\n", tz_errmsg());
    skip();
  }
  assert_int_equal(g16->act_mm, TZ_F16);
  assert_int_equal(g16->act, TZ_F32);
  printf("webgpu (f16 matmul inputs): %s\n", tz_webgpu_describe(g16));
  act16_norms_acts(g16, 7, 37);
  act16_norms_acts(g16, 70, 300);
  /* matmul_t: vec4<f16> loads (K % 4 == 0, 16-byte aligned) through the transposed weight (N %
   * 4 == 0), element loads (offset 4 bytes; K odd), the direct form (N % 4 != 0) with a bias */
  act16_mm(g16, 0, 70, 36, 52, 0, 1, 0);
  act16_mm(g16, 0, 70, 36, 52, 1, 0, 4);
  act16_mm(g16, 0, 33, 37, 37, 0, 1, 0);
  act16_mm(g16, 0, 130, 64, 36, 0, 1, 64);
  act16_mm(g16, 0, 33, 37, 36, 0, 1, 2); /* a 2 bytes past a 4-byte word: read through an fp32 copy */
  act16_mm(g16, 2, 37, 33, 50, 1, 0, 2);
  /* matmul_at with f16 b: vec4 and element loads, accumulate; split-K (K >= 1024) */
  act16_mm(g16, 2, 36, 70, 52, 1, 0, 0);
  act16_mm(g16, 2, 37, 33, 50, 0, 0, 4);
  act16_mm(g16, 2, 20, 1100, 24, 1, 0, 0);
  /* the general kernel (fp32 copy of the f16 operand) */
  setenv("TEZGAH_WEBGPU_NO_FAST_MATMUL", "1", 1);
  act16_mm(g16, 0, 33, 37, 37, 0, 1, 4);
  act16_mm(g16, 2, 37, 33, 50, 1, 0, 0);
  unsetenv("TEZGAH_WEBGPU_NO_FAST_MATMUL");
  /* attention: the general kernels (head_dim 16, forced) and the flash kernels (head_dim 64) */
  setenv("TEZGAH_WEBGPU_ATTN", "fallback", 1);
  act16_att(g16, 2, 70, 4, 2, 16);
  unsetenv("TEZGAH_WEBGPU_ATTN");
  act16_att(g16, 2, 70, 4, 2, 64);
  act16_sg_chain(g16);
  act16_xent_chain(g16); /* the f16 dlogits copy where the subgroup-matrix kernel runs */
  setenv("TEZGAH_WEBGPU_GRAD16", "1", 1); /* and forced (lavapipe: the copy is made, not read) */
  act16_xent_chain(g16);
  act16_grad_chain(g16);
  unsetenv("TEZGAH_WEBGPU_GRAD16");
  act16_grad_chain(g16);
  g16->destroy(g16);
}

/* ---- attention on subgroup matrices (webgpu_ops_attn_sg.c) ---- */
static int env_flag(const char *name) {
  const char *e = getenv(name);
  return e && *e && strcmp(e, "0");
}
/* |gpu − cpu| ≤ rtol·|cpu| + arms·max(rms(cpu), 0.1) for every element; prints the worst ratio
 * err/bound (and err/rms) so that a run on the device shows the margin. The floor 0.1 (of these
 * unit-normal inputs' scale): a gradient that is 0 in exact arithmetic (T = 1: dS = P·(dP − D)
 * with D = dP) is the difference of two f16-rounded O(1) values. */
static void sg_close(const char *what, const float *got, const float *ref, size_t n, double rtol, double arms) {
  double ss = 0, worst = 0, emax = 0, es = 0;
  for (size_t i = 0; i < n; i++) ss += (double)ref[i] * ref[i];
  double rms = sqrt(ss / (n ? n : 1)), scale = rms > 0.1 ? rms : 0.1;
  size_t bad = 0, wi = 0;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - ref[i]), bound = rtol * fabs(ref[i]) + arms * scale;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], bound);
      bad++;
    }
    if (err > emax) emax = err;
    es += err * err;
    if (bound > 0 && err / bound > worst) worst = err / bound, wi = i;
  }
  printf("  %-28s max |err| %.3g = %.3g rms (rms %.3g), rms err %.3g, worst err/bound %.3f at %zu%s\n", what, emax,
         rms > 0 ? emax / rms : 0, rms, sqrt(es / (n ? n : 1)), worst, wi, bad ? " FAILED" : "");
  if (bad) {
    print_error("%s: %zu of %zu outside the bound\n", what, bad, n);
    fail();
  }
}
/* The f16 bound of the subgroup-matrix kernels (TOL below): q, k, v and dout are rounded to f16
 * (u = 2^-11 = 4.9e-4 relative each), so a score s = scale·Σ_d q_d·k_d is off by at most
 * 2u·scale·Σ_d |q_d·k_d|: 5e-3 (head_dim 64) to 7e-3 (128) for these unit-normal inputs, and P
 * and dS are rounded to f16 once more (u). Every output is a sum of such terms, so its error is
 * at most about 1e-2 of the magnitude of its terms, which for these sums of random-sign terms is
 * the output's rms. Bound: 1e-2·|cpu| + 1.5e-2·rms(cpu), lse 1.5e-2 absolute (its terms are
 * the scores). A wrong mask, row, head or block gives errors of the order of the rms itself.
 * With f16 activations the written-out dK/dV's dq partial sums are f16 too (webgpu_ops_attn_sg.c
 * sg_dq16): each key block's part dS·K rounded to f16 after each of its NSG (2 or 4) 16-key
 * multiply-accumulates, ≤ NSG·u ≤ 2e-3 of the part's terms, a few parts per query at random
 * signs: well inside the same bound, not widened for it (the _wo entry prints dq's max and rms
 * errors; fp32 parts: TEZGAH_WEBGPU_ATTN_DQ16=0). */
#define SG_RTOL 1e-2
#define SG_ARMS 1.5e-2
static void check_att_sg(tz_backend *ge, int B, int T, int nh, int nkv, int hd) {
  ot_ctx og, oc;
  ot_init(&og, ge, (uint64_t)B * 131 + T * 7 + nh * 3 + nkv + hd);
  ot_init(&oc, cpu, 1);
  int o16 = ge->act_mm == TZ_F16;
  size_t N = (size_t)B * T, Q = (size_t)(nh + 2 * nkv) * hd, C = (size_t)nh * hd, nl = (size_t)B * nh * T;
  float *qkv = ot_randn(&og, N * Q, 1), *dout = ot_randn(&og, N * C, 1);
  tz_slice gq = up32(&og, qkv, N * Q), gd = up32(&og, dout, N * C), go = ot_buf(&og, NULL, N * C * 4 + 64),
           gl = ot_buf(&og, NULL, nl * 4), gdq = ot_buf(&og, NULL, N * Q * 4);
  tz_slice cq = up32(&oc, qkv, N * Q), cd = up32(&oc, dout, N * C), co = ot_buf(&oc, NULL, N * C * 4),
           cl = ot_buf(&oc, NULL, nl * 4), cdq = ot_buf(&oc, NULL, N * Q * 4);
  size_t kc = C, vc = C + (size_t)nkv * hd;
  ge->attention_fwd(ge, go, gl, gq, tz_f32(gq, kc), tz_f32(gq, vc), B, T, T, 0, nh, nkv, hd, (int)Q, (int)Q);
  cpu->attention_fwd(cpu, co, cl, cq, tz_f32(cq, kc), tz_f32(cq, vc), B, T, T, 0, nh, nkv, hd, (int)Q, (int)Q);
  printf("attention_sgmat B %d T %d n_head %d n_kv_head %d head_dim %d (out %s)\n", B, T, nh, nkv, hd, o16 ? "f16" : "f32");
  float *gl_ = ot_get(&og, gl, nl), *cl_ = ot_get(&oc, cl, nl);
  for (size_t i = 0; i < nl; i++) cl_[i] -= gl_[i], gl_[i] = 0; /* absolute: compare the difference with 0 */
  double *z = ot_dbl(gl_, nl);
  ot_close("attention_sgmat lse", cl_, z, nl, 0, 1.5e-2);
  free(z), free(gl_), free(cl_);
  float *got = o16 ? down16(&og, go, N * C) : ot_get(&og, go, N * C), *ref = ot_get(&oc, co, N * C);
  sg_close("out", got, ref, N * C, SG_RTOL, SG_ARMS);
  if (o16) cpu->upload(cpu, co, got, N * C * 4); /* both backwards read the f16 out */
  ge->attention_bwd(ge, gdq, tz_f32(gdq, kc), tz_f32(gdq, vc), gd, gq, tz_f32(gq, kc), tz_f32(gq, vc), go, gl, B, T, nh,
                    nkv, hd, (int)Q, (int)Q);
  cpu->attention_bwd(cpu, cdq, tz_f32(cdq, kc), tz_f32(cdq, vc), cd, cq, tz_f32(cq, kc), tz_f32(cq, vc), co, cl, B, T,
                     nh, nkv, hd, (int)Q, (int)Q);
  float *g2 = ot_get(&og, gdq, N * Q), *r2 = ot_get(&oc, cdq, N * Q);
  /* dq, dk, dv apart (each its own rms) */
  size_t w[3] = {C, (size_t)nkv * hd, (size_t)nkv * hd}, o[3] = {0, kc, vc};
  const char *nm[3] = {"dq", "dk", "dv"};
  for (int p = 0; p < 3; p++) {
    float *a = malloc(N * w[p] * 4), *r = malloc(N * w[p] * 4);
    for (size_t n = 0; n < N; n++)
      for (size_t c = 0; c < w[p]; c++) a[n * w[p] + c] = g2[n * Q + o[p] + c], r[n * w[p] + c] = r2[n * Q + o[p] + c];
    sg_close(nm[p], a, r, N * w[p], SG_RTOL, SG_ARMS);
    free(a), free(r);
  }
  free(g2), free(r2), free(got), free(ref), free(qkv), free(dout);
  ot_release(&og), ot_release(&oc);
}
/* Flash attention forward and backward on subgroup matrices (f16 × f16 → f32, webgpu_ops_attn_sg.c)
 * against the CPU on fresh random inputs, where tz_webgpu_describe says they run (the H200 under
 * the node Dawn; SKIPPED elsewhere: lavapipe has no subgroup matrices), with
 * TEZGAH_WEBGPU_ATTN_SGMAT=1 (a call that would fall back to the fp32 kernels is an error):
 * head_dim 64 and 128; causal; GQA 2/1 and 4/1 query heads per kv head and none; T below one
 * 64-row block, between blocks, an exact multiple, several blocks; B 1-3; the fp32 output (the
 * fp32 op contract) and the f16 output (c->act16: a backend with TEZGAH_WEBGPU_ACT16=1, the
 * CPU's backward fed the same f16 out); the backward's dq partial sums in chunks of one sequence
 * (TEZGAH_WEBGPU_ATTN_DQ_KB); the former grid order; the forward's form not the default for its
 * head_dim (TEZGAH_WEBGPU_ATTN_SG_ONEPASS: the default is one-pass at 64, two-pass at 128); the
 * one-pass forward's output rescale taken at every growth of a row's maximum
 * (TEZGAH_WEBGPU_ATTN_SG_LAZY=2; random inputs seldom take it by default); the staged kernels
 * reading the fp32 q, k, v in place (TEZGAH_WEBGPU_ATTN_SG_F32IN=1, opt-in; the default reads
 * f16 copies) and with unfolded scales and one-float dq sums (_EWX=0, _DQV4=0); head_dim 32, which falls back to
 * the fp32 kernels under TEZGAH_WEBGPU_ATTN_SGMAT=1. Under TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1 (the
 * software stand-in for subgroup matrices, ctest test_webgpu_ops_attn_sgemu on lavapipe, where
 * a case takes about a minute) one case per path: GQA head_dim 64 (LAZY=2), head_dim 128 (two-pass
 * forward), its one-pass forward, chunked dq sums, f16 out, head_dim 32. Every case runs the kernels
 * TEZGAH_WEBGPU_ATTN_SG_STAGE picks (unset or 1: both staged: fa_sg_fwd_wo / fa_sg_dkdv_wo, or
 * with TEZGAH_WEBGPU_ATTN_SG_WO=0 and where those decline fa_sg_fwd_st and fa_sg_dkdv_st;
 * 2: the staged forward and the direct backward fa_sg_dkdv; 0: both direct; ctest's sweep
 * entries run 2 and 0 on every case, 1 on one case each (_staged, _db, _wo),
 * scripts/device_webgpu_f16speed.sh 1 and 0). Bound: SG_RTOL / SG_ARMS above. The other
 * attention tests run with TEZGAH_WEBGPU_ATTN_SGMAT=0 (setup): the fp32 kernels at their fp32
 * bounds on every adapter. */
/* (below: the f16-activation backend and check, test_act_f16_attention's) */
static tz_backend *act_f16_backend(void);
static float *af16_att(tz_backend *g, int B, int T, int nh, int nkv, int hd, int sg, size_t off);
static void test_attention_sgmat(void **state) {
  const char *d = tz_webgpu_describe(gpu);
  if (!strstr(d, "attention on subgroup matrices")) {
    const char *w = strstr(d, "subgroup-matrix attention off");
    printf("SKIPPED: no subgroup-matrix attention on this adapter (%s)\n", w ? w : d);
    skip();
  }
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "1", 1);
  /* TZ_TEST_SG_CASE="B,T,n_head,n_kv_head,head_dim[ B,T,...]" (spaces or ';' between cases):
   * those cases only (debugging, and ctest's stand-in entries); with TZ_TEST_SG_ACT=f16 on a
   * backend with f16 activations (the H200's default: act_f16_backend, TEZGAH_WEBGPU_ACT=f16;
   * f16 q, k, v, dout, out, dq, dk, dv at 16-byte aligned offsets, so the f16 packs qkv8h and
   * the dK/dV's 16-byte stores DK8) through test_act_f16_attention's check (af16_att: the bound
   * SG_RTOL + 2^-11, SG_ARMS) */
  int cs[5];
  const char *one = getenv("TZ_TEST_SG_CASE"), *act = getenv("TZ_TEST_SG_ACT");
  /* the software stand-in (TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1, lavapipe) is slow: one case per path */
  int emu = env_flag("TEZGAH_WEBGPU_ATTN_SGMAT_EMU");
  if (act && *act && strcmp(act, "f16")) {
    print_error("TZ_TEST_SG_ACT=%s: only f16 is known\n", act);
    fail();
  }
  if (one && *one) {
    tz_backend *g = gpu;
    if (act && *act) {
      g = act_f16_backend();
      if (!g) { /* (the stand-in needs ShaderF16, as f16 activations do: no silent pass) */
        print_error("TZ_TEST_SG_ACT=f16 but no backend with f16 activations: %s\n", tz_errmsg());
        fail();
      }
      assert_int_equal(g->act, TZ_F16);
    }
    for (const char *p = one; *p;) { /* every case; a malformed one fails */
      if (sscanf(p, "%d,%d,%d,%d,%d", &cs[0], &cs[1], &cs[2], &cs[3], &cs[4]) != 5) {
        print_error("TZ_TEST_SG_CASE: '%s' is not B,T,n_head,n_kv_head,head_dim\n", p);
        fail();
      }
      if (g != gpu) {
        float *r = af16_att(g, cs[0], cs[1], cs[2], cs[3], cs[4], 1, 0);
        /* TZ_TEST_SG_DUMP=file (measurements, e.g. TEZGAH_WEBGPU_ATTN_DQ16=1 against =0): the
         * case's GPU results appended as floats (lse, out, dq|dk|dv: af16_att's order) */
        const char *dp = getenv("TZ_TEST_SG_DUMP");
        if (dp && *dp) {
          size_t N = (size_t)cs[0] * cs[1], nr = (size_t)cs[0] * cs[2] * cs[1] + N * cs[2] * cs[4] +
                                                    N * (size_t)(cs[2] + 2 * cs[3]) * cs[4];
          FILE *f = fopen(dp, "ab");
          assert_non_null(f);
          assert_int_equal(fwrite(r, 4, nr, f), nr);
          fclose(f);
        }
        free(r);
      } else
        check_att_sg(gpu, cs[0], cs[1], cs[2], cs[3], cs[4]);
      p += strcspn(p, " ;");
      p += strspn(p, " ;");
    }
    if (g != gpu) g->destroy(g);
    /* TEZGAH_WEBGPU_ATTN_SG_EWO set (=1: the default's form, =0: the loops): the cases ran that
     * form and no other */
    const char *ewo = getenv("TEZGAH_WEBGPU_ATTN_SG_EWO");
    if (ewo && *ewo && (strcmp(ewo, "0") != 0) != (tz_webgpu_attn_ewo_calls() != 0)) {
      print_error("TEZGAH_WEBGPU_ATTN_SG_EWO=%s but %ld forwards ran the written-out softmax\n", ewo,
                  tz_webgpu_attn_ewo_calls());
      fail();
    }
  } else if (act && *act) {
    print_error("TZ_TEST_SG_ACT needs TZ_TEST_SG_CASE\n");
    fail();
  } else {
    /* the staged one-pass forward's rare rescale of its output matrices
     * (TEZGAH_WEBGPU_ATTN_SG_LAZY=2: at every growth of a row's maximum, which random inputs
     * seldom grow by the default's e^8): the stand-in's first case, two more on a GPU */
    if (emu) setenv("TEZGAH_WEBGPU_ATTN_SG_LAZY", "2", 1);
    check_att_sg(gpu, 2, 70, 4, 2, 64); /* GQA 2, T between blocks */
    if (!emu) {
      setenv("TEZGAH_WEBGPU_ATTN_SG_LAZY", "2", 1);
      check_att_sg(gpu, 3, 130, 4, 1, 64);
      setenv("TEZGAH_WEBGPU_ATTN_SG_ONEPASS", "1", 1);
      check_att_sg(gpu, 2, 133, 2, 2, 128);
      unsetenv("TEZGAH_WEBGPU_ATTN_SG_ONEPASS");
    }
    unsetenv("TEZGAH_WEBGPU_ATTN_SG_LAZY");
    if (!emu) {
      check_att_sg(gpu, 3, 130, 4, 1, 64); /* multi-query, B 3, three blocks */
      check_att_sg(gpu, 1, 64, 2, 2, 64);  /* T a multiple of the block */
      check_att_sg(gpu, 2, 9, 2, 2, 64);   /* T below one 16-row matrix */
      check_att_sg(gpu, 1, 300, 2, 1, 64); /* five blocks */
      check_att_sg(gpu, 2, 133, 2, 2, 128);
    }
    check_att_sg(gpu, 1, 45, 4, 1, 128);
    /* the staged kernels' other operand path and former element-wise passes (q, k, v read as
     * fp32 in place, TEZGAH_WEBGPU_ATTN_SG_F32IN=1; unfolded scales, TEZGAH_WEBGPU_ATTN_SG_EWX=0;
     * the dq sums one float per thread, TEZGAH_WEBGPU_ATTN_SG_DQV4=0) */
    if (!emu) {
      setenv("TEZGAH_WEBGPU_ATTN_SG_F32IN", "1", 1);
      setenv("TEZGAH_WEBGPU_ATTN_SG_EWX", "0", 1);
      setenv("TEZGAH_WEBGPU_ATTN_SG_DQV4", "0", 1);
      check_att_sg(gpu, 2, 70, 4, 2, 64);
      check_att_sg(gpu, 1, 45, 4, 1, 128);
      unsetenv("TEZGAH_WEBGPU_ATTN_SG_F32IN");
      unsetenv("TEZGAH_WEBGPU_ATTN_SG_EWX");
      unsetenv("TEZGAH_WEBGPU_ATTN_SG_DQV4");
    }
    /* the forward's other form per head_dim (the default, sg_onepass: one-pass at 64, output
     * rows in registers; two-pass at 128, which the cases above ran): one-pass at 128
     * (TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1), two-pass at 64 (=0) */
    setenv("TEZGAH_WEBGPU_ATTN_SG_ONEPASS", "1", 1);
    check_att_sg(gpu, 2, 70, 4, 2, 128);
    setenv("TEZGAH_WEBGPU_ATTN_SG_ONEPASS", "0", 1);
    if (!emu) check_att_sg(gpu, 3, 130, 4, 1, 64);
    unsetenv("TEZGAH_WEBGPU_ATTN_SG_ONEPASS");
    setenv("TEZGAH_WEBGPU_ATTN_DQ_KB", "200", 1); /* chunks of 2 sequences (64-key blocks: 98 KB of parts each) or 1 (32: 160 KB) */
    check_att_sg(gpu, 3, 100, 2, 1, 64);
    unsetenv("TEZGAH_WEBGPU_ATTN_DQ_KB");
    if (!emu) {
      setenv("TEZGAH_WEBGPU_ATTN_ORDER", "0", 1);
      check_att_sg(gpu, 2, 70, 4, 2, 128);
      unsetenv("TEZGAH_WEBGPU_ATTN_ORDER");
    }
    /* the f16 attention output (the backend's f16 activations) */
    setenv("TEZGAH_WEBGPU_F16", "1", 1);
    setenv("TEZGAH_WEBGPU_ACT16", "1", 1);
    tz_backend *g16 = tz_backend_create("webgpu", 0, NULL);
    unsetenv("TEZGAH_WEBGPU_F16");
    setenv("TEZGAH_WEBGPU_ACT16", "0", 1);
    assert_non_null(g16);
    assert_int_equal(g16->act_mm, TZ_F16);
    check_att_sg(g16, 2, 70, 4, 2, 64);
    if (!emu) check_att_sg(g16, 1, 100, 2, 1, 128);
    g16->destroy(g16);
    /* head_dim 32 under TEZGAH_WEBGPU_ATTN_SGMAT=1: not a subgroup-matrix shape, so the fp32
     * flash kernels run it (a clean fallback; it aborted before) */
    check_att_sg(gpu, 1, 40, 2, 2, 32);
  }
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "0", 1);
}

/* ---- f16 activations: rope and attention (be->act == TZ_F16, c->act_f16) ---- */
/* The f16 rounding of an output (2^-11 relative), on top of each fp32 bound (see the top). */
#define AF16_U (1.0 / 2048)
/* |gpu − cpu| ≤ rtol·|cpu| + atol for every element (the sum, not the larger: the f16 rounding
 * (in rtol) comes on top of the fp32 kernel's own error (atol), e.g. rope's sin/cos) */
static void af16_close(const char *what, const float *got, const float *ref, size_t n, double rtol, double atol) {
  size_t bad = 0, wi = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - ref[i]), bound = rtol * fabs(ref[i]) + atol;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], bound);
      bad++;
    }
    if (err / bound > worst) worst = err / bound, wi = i;
  }
  printf("  %-36s worst err/bound %.3f at %zu%s\n", what, worst, wi, bad ? " FAILED" : "");
  if (bad) {
    print_error("%s: %zu of %zu outside the bound\n", what, bad, n);
    fail();
  }
}
/* rope in place on f16 qkv [B·T, (nh + 2·nkv)·hd] at byte offset off (even; rope_v16 where hd % 4
 * == 0 and off % 8 == 0 with the vector kernels on, else rope's per-element f16 variant) */
static void af16_rope(tz_backend *g, int B, int T, int nh, int nkv, int hd, int dir, size_t off) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)B * 17 + T * 3 + hd + dir + off);
  ot_init(&oc, cpu, 1);
  size_t n = (size_t)B * T * (nh + 2 * nkv) * hd;
  float *x = ot_randn(&og, n, 1);
  round16(x, n);
  tz_slice gx = up16(&og, x, n, off), cx = up32(&oc, x, n);
  g->rope(g, gx, B, T, nh, nkv, hd, 5, 10000.0f, dir);
  cpu->rope(cpu, cx, B, T, nh, nkv, hd, 5, 10000.0f, dir);
  float *got = down16(&og, gx, n), *ref = ot_get(&oc, cx, n);
  char what[96];
  snprintf(what, sizeof what, "act_f16 rope B%d T%d nh%d+%d hd%d dir %d off %zu", B, T, nh, nkv, hd, dir, off);
  af16_close(what, got, ref, n, 1e-5 + AF16_U, 1e-5); /* rope's atol: test_rope */
  free(got), free(ref), free(x);
  ot_release(&og), ot_release(&oc);
}
/* Whether the environment leaves the backward on the written-out dK/dV (fa_sg_dkdv_wo: the
 * staged backward, TEZGAH_WEBGPU_ATTN_SG_STAGE unset, 1 or 3; TEZGAH_WEBGPU_ATTN_SG_WO unset or
 * 1; no ablation) */
static int sg_dkdv_wo_env(void) {
  const char *st = getenv("TEZGAH_WEBGPU_ATTN_SG_STAGE"), *wo = getenv("TEZGAH_WEBGPU_ATTN_SG_WO"),
             *ab = getenv("TEZGAH_WEBGPU_ATTN_SG_ABLATE");
  return (!st || !*st || !strcmp(st, "1") || !strcmp(st, "3")) && (!wo || !*wo || !strcmp(wo, "1")) &&
         (!ab || !*ab || !strcmp(ab, "0"));
}
/* That the subgroup-matrix backward just run (tz_webgpu_attn_dq16_calls was n0 before it) wrote
 * its dq partial sums as f16 where it should (webgpu_ops_attn_sg.c sg_dq16: the written-out
 * dK/dV with f16 activations where the adapter lists an f16-result configuration, or the
 * stand-in; TEZGAH_WEBGPU_ATTN_DQ16=0: never), and not elsewhere: want 0 under DQ16=0 or where
 * tz_webgpu_describe does not say "dq partials f16" (the direct or loop-indexed staged dK/dV, an
 * adapter without the configuration), 1 where it says so and the environment leaves the
 * written-out dK/dV on (sg_dkdv_wo_env) at head_dim 64 (they run there on the H200 and, through
 * the stand-in, on lavapipe); elsewhere (head_dim 128: the staged kernels fit or not by the
 * adapter's workgroup memory) the count is printed, not checked. The stand-in always offers it:
 * its describe line without "dq partials f16" while the written-out kernels are on fails. */
static void af16_dq16(tz_backend *g, long n0, int hd, const char *what) {
  const char *e = getenv("TEZGAH_WEBGPU_ATTN_DQ16"), *d = tz_webgpu_describe(g);
  int off = e && *e && atoi(e) == 0, says = strstr(d, "dq partials f16") != NULL;
  long got = tz_webgpu_attn_dq16_calls() - n0, want = off || !says ? 0 : hd == 64 && sg_dkdv_wo_env() ? 1 : -1;
  if (!off && !says && sg_dkdv_wo_env() && env_flag("TEZGAH_WEBGPU_ATTN_SGMAT_EMU")) {
    print_error("%s: the stand-in runs the written-out kernels, but no f16 dq partials: %s\n", what, d);
    fail();
  }
  printf("act_f16 attention %s: f16 dq partials in %ld backwards (want %ld%s)\n", what, got, want,
         want < 0 ? ": not checked here" : "");
  if (want >= 0 && got != want) {
    print_error("act_f16 attention %s: f16 dq partials in %ld backwards, want %ld\n", what, got, want);
    fail();
  }
}
/* attention forward and backward on f16 q, k, v (one fused qkv at byte offset off), dout, dq, dk,
 * dv (one fused dqkv at off) and out; sg: the subgroup-matrix bound (SG_RTOL), else the fp32
 * kernels'; after a subgroup-matrix backward, af16_dq16 checks where the dq parts were f16.
 * TZ_TEST_SG_KSHIFT: a measurement knob (a mean added to every key component), unset in ctest. */
static float *af16_att(tz_backend *g, int B, int T, int nh, int nkv, int hd, int sg, size_t off) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)B * 131 + T * 7 + nh * 3 + nkv + hd + off);
  ot_init(&oc, cpu, 1);
  size_t N = (size_t)B * T, Q = (size_t)(nh + 2 * nkv) * hd, C = (size_t)nh * hd, nl = (size_t)B * nh * T;
  size_t kc = C, vc = C + (size_t)nkv * hd;
  float *qkv = ot_randn(&og, N * Q, 1), *dout = ot_randn(&og, N * C, 1);
  /* TZ_TEST_SG_KSHIFT=c (measurements; unset in ctest): c added to every key component, a key
   * mean shared by all keys, which leaves softmax and dq unchanged in exact arithmetic but makes
   * each key block's dq part carry c·Σ_block dS, cancelling between blocks (Σ_keys dS = 0 per
   * row): the case in which f16 dq partials (sg_dq16) lose most relative to dq */
  const char *ksh = getenv("TZ_TEST_SG_KSHIFT");
  if (ksh && *ksh)
    for (size_t n = 0; n < N; n++)
      for (size_t c = 0; c < (size_t)nkv * hd; c++) qkv[n * Q + kc + c] += (float)atof(ksh);
  round16(qkv, N * Q);
  round16(dout, N * C);
  tz_slice gq = up16(&og, qkv, N * Q, off), gd = up16(&og, dout, N * C, off), go = ot_buf(&og, NULL, N * C * 2 + 64),
           gl = ot_buf(&og, NULL, nl * 4), gdq = ot_buf(&og, NULL, off + N * Q * 2 + 64);
  gdq.off = off;
  tz_slice cq = up32(&oc, qkv, N * Q), cd = up32(&oc, dout, N * C), co = ot_buf(&oc, NULL, N * C * 4),
           cl = ot_buf(&oc, NULL, nl * 4), cdq = ot_buf(&oc, NULL, N * Q * 4);
  printf("act_f16 attention B %d T %d n_head %d n_kv_head %d head_dim %d off %zu (%s)\n", B, T, nh, nkv, hd, off,
         sg ? "subgroup matrices" : "fp32 kernels");
  g->attention_fwd(g, go, gl, gq, tz_at(gq, kc * 2), tz_at(gq, vc * 2), B, T, T, 0, nh, nkv, hd, (int)Q, (int)Q);
  cpu->attention_fwd(cpu, co, cl, cq, tz_f32(cq, kc), tz_f32(cq, vc), B, T, T, 0, nh, nkv, hd, (int)Q, (int)Q);
  float *gl_ = ot_get(&og, gl, nl), *cl_ = ot_get(&oc, cl, nl);
  if (sg) { /* absolute, as check_att_sg */
    for (size_t i = 0; i < nl; i++) cl_[i] -= gl_[i], gl_[i] = 0;
    double *z = ot_dbl(gl_, nl);
    ot_close("act_f16 attention lse", cl_, z, nl, 0, 1.5e-2);
    free(z);
  } else
    af16_close("act_f16 attention lse", gl_, cl_, nl, 1e-4, 2e-5);
  free(gl_), free(cl_);
  float *got = down16(&og, go, N * C), *ref = ot_get(&oc, co, N * C);
  if (sg) sg_close("act_f16 out", got, ref, N * C, SG_RTOL + AF16_U, SG_ARMS);
  else
    af16_close("act_f16 attention out", got, ref, N * C, 1e-4 + AF16_U, 2e-5);
  cpu->upload(cpu, co, got, N * C * 4); /* both backwards read the f16 out */
  long q0 = tz_webgpu_attn_dq16_calls();
  g->attention_bwd(g, gdq, tz_at(gdq, kc * 2), tz_at(gdq, vc * 2), gd, gq, tz_at(gq, kc * 2), tz_at(gq, vc * 2), go, gl,
                   B, T, nh, nkv, hd, (int)Q, (int)Q);
  if (sg) af16_dq16(g, q0, hd, "backward");
  else if (tz_webgpu_attn_dq16_calls() != q0) { /* (the fp32 flash and general kernels have no dq parts of this kind) */
    print_error("act_f16 attention: f16 dq partials counted on the fp32 kernels\n");
    fail();
  }
  cpu->attention_bwd(cpu, cdq, tz_f32(cdq, kc), tz_f32(cdq, vc), cd, cq, tz_f32(cq, kc), tz_f32(cq, vc), co, cl, B, T,
                     nh, nkv, hd, (int)Q, (int)Q);
  /* (downloads start on 4-byte words: from the half before where off is not on one) */
  tz_slice gw = gdq;
  gw.off -= off % 4;
  float *g2w = down16(&og, gw, N * Q + off % 4 / 2), *g2 = g2w + off % 4 / 2, *r2 = ot_get(&oc, cdq, N * Q);
  size_t w[3] = {C, (size_t)nkv * hd, (size_t)nkv * hd}, o[3] = {0, kc, vc};
  const char *nm[3] = {"act_f16 dq", "act_f16 dk", "act_f16 dv"};
  for (int p = 0; p < 3; p++) { /* dq, dk, dv apart (each its own rms) */
    float *a = malloc(N * w[p] * 4), *r = malloc(N * w[p] * 4);
    for (size_t n = 0; n < N; n++)
      for (size_t c = 0; c < w[p]; c++) a[n * w[p] + c] = g2[n * Q + o[p] + c], r[n * w[p] + c] = r2[n * Q + o[p] + c];
    if (sg) sg_close(nm[p], a, r, N * w[p], SG_RTOL + AF16_U, SG_ARMS);
    else
      af16_close(nm[p], a, r, N * w[p], 1e-4 + AF16_U, 2e-5);
    free(a), free(r);
  }
  /* the GPU's results for the caller (test_act_f16_attention_nopack): lse, out, dq|dk|dv */
  float *res = malloc((nl + N * C + N * Q) * 4);
  float *gl2 = ot_get(&og, gl, nl);
  memcpy(res, gl2, nl * 4), memcpy(res + nl, got, N * C * 4), memcpy(res + nl + N * C, g2, N * Q * 4);
  free(gl2), free(g2w), free(r2), free(got), free(ref), free(qkv), free(dout);
  ot_release(&og), ot_release(&oc);
  return res;
}
/* KV-cache decoding: one query row per sequence (Tq 1, q_pos0 Tk − 1) from an f16 qkv row against
 * f16 caches [B·Tk, n_kv_head·hd] (the general kernel, natively) */
static void af16_decode(tz_backend *g, int B, int Tk, int nh, int nkv, int hd) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)B * 7 + Tk + hd);
  ot_init(&oc, cpu, 1);
  size_t Q = (size_t)(nh + 2 * nkv) * hd, C = (size_t)nh * hd, kvs = (size_t)nkv * hd, nk = (size_t)B * Tk * kvs;
  float *qkv = ot_randn(&og, B * Q, 1), *kc = ot_randn(&og, nk, 1), *vc = ot_randn(&og, nk, 1);
  round16(qkv, B * Q), round16(kc, nk), round16(vc, nk);
  tz_slice gq = up16(&og, qkv, B * Q, 0), gk = up16(&og, kc, nk, 0), gv = up16(&og, vc, nk, 0),
           go = ot_buf(&og, NULL, B * C * 2 + 64);
  tz_slice cq = up32(&oc, qkv, B * Q), ck = up32(&oc, kc, nk), cv = up32(&oc, vc, nk), co = ot_buf(&oc, NULL, B * C * 4);
  g->attention_fwd(g, go, TZ_NONE, gq, gk, gv, B, 1, Tk, Tk - 1, nh, nkv, hd, (int)Q, (int)kvs);
  cpu->attention_fwd(cpu, co, TZ_NONE, cq, ck, cv, B, 1, Tk, Tk - 1, nh, nkv, hd, (int)Q, (int)kvs);
  float *got = down16(&og, go, B * C), *ref = ot_get(&oc, co, B * C);
  af16_close("act_f16 attention decode out", got, ref, B * C, 1e-4 + AF16_U, 2e-5);
  free(got), free(ref), free(qkv), free(kc), free(vc);
  ot_release(&og), ot_release(&oc);
}

/* A backend with f16 activations (TEZGAH_WEBGPU_ACT=f16), or NULL (the caller skips, visibly). */
static tz_backend *act_f16_backend(void) {
  setenv("TEZGAH_WEBGPU_F16", "1", 1);
  setenv("TEZGAH_WEBGPU_ACT16", "1", 1);
  setenv("TEZGAH_WEBGPU_ACT", "f16", 1);
  tz_backend *g = tz_backend_create("webgpu", 0, NULL);
  unsetenv("TEZGAH_WEBGPU_F16");
  setenv("TEZGAH_WEBGPU_ACT", "f32", 1);
  setenv("TEZGAH_WEBGPU_ACT16", "0", 1);
  if (!g) printf("SKIPPED: f16 activations unavailable: %s\n", tz_errmsg());
  return g;
}
/* That the subgroup-matrix backward's D pass took its vector form (fa_sg_prep.wgsl main8,
 * tz_webgpu_attn_dvec_calls) `want` times since the count was n0 (0 where
 * TEZGAH_WEBGPU_ATTN_D_VEC=0 turns it off); what: the case. */
static void af16_dvec(long n0, long want, const char *what) {
  const char *e = getenv("TEZGAH_WEBGPU_ATTN_D_VEC");
  if (e && *e && !atoi(e)) want = 0;
  long got = tz_webgpu_attn_dvec_calls() - n0;
  printf("act_f16 attention %s: the D pass's vector form ran %ld times (want %ld)\n", what, got, want);
  if (got != want) {
    print_error("act_f16 attention %s: the D pass's vector form ran %ld times, want %ld\n", what, got, want);
    fail();
  }
}
/* Whether the environment leaves the attention on the defaults that the no-pack path needs (the
 * staged, written-out kernels with the lazy one-pass forward at head_dim 64; NOPACK on): unset,
 * or set to the default (LAZY also 2) */
static int sg_wo_default(void) {
  static const char *const ev[][3] = {{"TEZGAH_WEBGPU_ATTN_SG_STAGE", "1", "1"}, {"TEZGAH_WEBGPU_ATTN_SG_WO", "1", "1"},
                                      {"TEZGAH_WEBGPU_ATTN_SG_LAZY", "1", "2"}, {"TEZGAH_WEBGPU_ATTN_SG_ONEPASS", "1", "1"},
                                      {"TEZGAH_WEBGPU_ATTN_NOPACK", "1", "1"}, {"TEZGAH_WEBGPU_ATTN_SG_ABLATE", "0", "0"},
                                      {"TEZGAH_WEBGPU_ATTN_SG_F32IN", "0", "0"}};
  for (size_t i = 0; i < sizeof ev / sizeof *ev; i++) {
    const char *e = getenv(ev[i][0]);
    if (e && *e && strcmp(e, ev[i][1]) && strcmp(e, ev[i][2])) return 0;
  }
  return 1;
}
/* Rope and attention with f16 activations (be->act == TZ_F16: TEZGAH_WEBGPU_ACT=f16) against the CPU
 * fed the same f16-rounded values: rope both ways; attention (GQA, T not a multiple of 64, head_dim
 * 64 and 128, B 2) on the fp32 flash kernels (TEZGAH_WEBGPU_ATTN=fast: a fallback is an error; their
 * fp32 copies of the f16 tensors), the general kernels (TEZGAH_WEBGPU_ATTN=fallback: the f16
 * tensors natively), KV-cache decoding, and the subgroup-matrix kernels (TEZGAH_WEBGPU_ATTN_SGMAT=1,
 * natively: the real ones where tz_webgpu_describe says so, else the software stand-in
 * TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1 with the direct kernels, TEZGAH_WEBGPU_ATTN_SG_STAGE=0, unless the
 * environment picks others: the staged stand-ins compile for many minutes on lavapipe, so with
 * TEZGAH_WEBGPU_ATTN_SG_STAGE set the stand-in runs head_dim 64 only, saying so;
 * TEZGAH_TEST_SGMAT_REQUIRED=1, as scripts/device_act16.sh sets, makes the stand-in a failure);
 * on the real subgroup-matrix kernels also T 128, a multiple of their padding, with q, k, v and
 * dout 16-byte aligned: the no-pack path (webgpu_ops_attn_sg.c sg_nopack), a failure where it
 * does not run with the environment on the defaults it needs (sg_wo_default; the stand-in's
 * no-pack path: test_act_f16_attention_nopack). Bounds: the header's table. */
static void test_act_f16_attention(void **state) {
  tz_backend *g = act_f16_backend();
  if (!g) skip();
  assert_int_equal(g->act, TZ_F16);
  printf("webgpu (f16 activations): %s\n", tz_webgpu_describe(g));
  af16_rope(g, 2, 9, 4, 2, 16, 1, 0);
  af16_rope(g, 2, 70, 4, 2, 64, -1, 0);
  setenv("TEZGAH_WEBGPU_ATTN", "fast", 1);
  free(af16_att(g, 2, 70, 4, 2, 64, 0, 0));
  free(af16_att(g, 2, 45, 4, 1, 128, 0, 8));
  setenv("TEZGAH_WEBGPU_ATTN", "fallback", 1);
  free(af16_att(g, 2, 70, 4, 2, 64, 0, 2)); /* 2 bytes past a word: the f16 variant's element offsets */
  unsetenv("TEZGAH_WEBGPU_ATTN");
  af16_decode(g, 2, 37, 4, 2, 64);
  const char *d = tz_webgpu_describe(g);
  int real = strstr(d, "attention on subgroup matrices") != NULL, st = getenv("TEZGAH_WEBGPU_ATTN_SG_STAGE") != NULL;
  if (!real && env_flag("TEZGAH_TEST_SGMAT_REQUIRED")) { /* (the H200 device scripts: the real kernels or a failure) */
    print_error("TEZGAH_TEST_SGMAT_REQUIRED=1 but no subgroup-matrix attention: %s\n", d);
    fail();
  }
  if (!real) setenv("TEZGAH_WEBGPU_ATTN_SGMAT_EMU", "1", 1);
  if (!real && !st) setenv("TEZGAH_WEBGPU_ATTN_SG_STAGE", "0", 1);
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "1", 1);
  /* (the backward's D pass: the vector form, fa_sg_prep's main8, where dout and out are 16-byte
   * aligned, checked by af16_dvec; main at the other offsets) */
  long dv0 = tz_webgpu_attn_dvec_calls();
  free(af16_att(g, 2, 70, 4, 2, 64, 1, 0));
  af16_dvec(dv0, 1, "head_dim 64 off 0");
  /* 2 halves past 16 bytes: the per-block packs (main_h) and, staged, the dK/dV's one-half stores
   * (rows_out; aligned above: rows_out8, DK8) */
  dv0 = tz_webgpu_attn_dvec_calls();
  free(af16_att(g, 2, 70, 4, 2, 64, 1, 2));
  af16_dvec(dv0, 0, "head_dim 64 off 2");
  if (real || !st) {
    dv0 = tz_webgpu_attn_dvec_calls();
    free(af16_att(g, 2, 45, 4, 1, 128, 1, 8));
    af16_dvec(dv0, 0, "head_dim 128 off 8");
    free(af16_att(g, 2, 45, 4, 1, 128, 1, 16));
    af16_dvec(dv0, 1, "head_dim 128 off 16");
  } else /* (the staged stand-ins at head_dim 128: tests/CMakeLists.txt's _sgemu_staged note) */
    printf("SKIPPED: act_f16 subgroup-matrix head_dim 128 under the stand-in with TEZGAH_WEBGPU_ATTN_SG_STAGE set "
           "(llvmpipe compiles the staged stand-ins at 128 for many minutes); unset, the direct kernels run it\n");
  /* T a multiple of the kernels' padding (64), q, k, v and dout 16-byte aligned: the written-out
   * kernels read q, k, v in the qkv and dO in dout, no copies (TEZGAH_WEBGPU_ATTN_NOPACK, the
   * default), where the staged kernels run (the real ones; the stand-in's no-pack path runs in
   * test_act_f16_attention_nopack, ctest's _attn_nopack entry) */
  if (real) {
    long n0 = tz_webgpu_attn_nopack_calls(0), n1 = tz_webgpu_attn_nopack_calls(1);
    dv0 = tz_webgpu_attn_dvec_calls();
    free(af16_att(g, 2, 128, 4, 2, 64, 1, 0));
    af16_dvec(dv0, 1, "T 128 (no-pack: D only)");
    if (!sg_wo_default())
      printf("SKIPPED: the no-pack check at T 128 (the environment picks other attention kernels)\n");
    else if (tz_webgpu_attn_nopack_calls(0) != n0 + 1 || tz_webgpu_attn_nopack_calls(1) != n1 + 1) {
      print_error("act_f16 attention T 128: the no-pack path did not run\n");
      fail();
    }
  }
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "0", 1);
  if (!real) unsetenv("TEZGAH_WEBGPU_ATTN_SGMAT_EMU");
  if (!real && !st) unsetenv("TEZGAH_WEBGPU_ATTN_SG_STAGE");
  g->destroy(g);
}

/* The no-pack path of the subgroup-matrix attention with f16 activations (webgpu_ops_attn_sg.c
 * sg_nopack: T a multiple of the padding, q, k, v read in the fused f16 qkv and dO in the f16
 * dout by the written-out kernels, fa_sg_prep computing D only) against the packs
 * (TEZGAH_WEBGPU_ATTN_NOPACK=0: fa_sg_pack's qkv8h copies and fa_sg_prep's dout16): lse, out,
 * dq, dk, dv bit for bit the same (the same f16 operands in the same order), each run against the
 * CPU as test_act_f16_attention's (the header's bounds), and the no-pack path counted as run
 * (tz_webgpu_attn_nopack_calls) or not. One case, test_attention_sgmat's _wo shape with T 64
 * (B 2, GQA 2, head_dim 64: two 32-row blocks at 2 subgroups, several tiles per key block). On
 * lavapipe through the stand-in (TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1) with the staged kernels, as
 * ctest's _attn_nopack entry sets (STAGE=1, NSG=2: lavapipe's 32 KB), the real kernels where
 * the adapter has them. SKIPPED without f16 activations, or where the environment picks other
 * kernels than the written-out ones (sg_wo_default; saying so). */
static void test_act_f16_attention_nopack(void **state) {
  if (!sg_wo_default()) {
    printf("SKIPPED: the environment picks other attention kernels than the written-out staged ones\n");
    skip();
  }
  tz_backend *g = act_f16_backend();
  if (!g) skip();
  const char *d = tz_webgpu_describe(g);
  int real = strstr(d, "attention on subgroup matrices") != NULL;
  if (!real) setenv("TEZGAH_WEBGPU_ATTN_SGMAT_EMU", "1", 1);
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "1", 1);
  int B = 2, T = 64, nh = 4, nkv = 2, hd = 64;
  size_t n = (size_t)B * nh * T + (size_t)B * T * nh * hd + (size_t)B * T * (nh + 2 * nkv) * hd;
  float *r[2];
  for (int np = 0; np < 2; np++) {
    setenv("TEZGAH_WEBGPU_ATTN_NOPACK", np ? "1" : "0", 1);
    long n0 = tz_webgpu_attn_nopack_calls(0), n1 = tz_webgpu_attn_nopack_calls(1);
    long dv0 = tz_webgpu_attn_dvec_calls();
    r[np] = af16_att(g, B, T, nh, nkv, hd, 1, 0);
    af16_dvec(dv0, 1, np ? "no-pack (D only)" : "packs (D and dout16)");
    long f = tz_webgpu_attn_nopack_calls(0) - n0, b = tz_webgpu_attn_nopack_calls(1) - n1;
    printf("act_f16 attention NOPACK=%d: no-pack forwards %ld, backwards %ld\n", np, f, b);
    if (f != np || b != np) {
      print_error("TEZGAH_WEBGPU_ATTN_NOPACK=%d: %ld forwards, %ld backwards took the no-pack path (want %d)\n", np,
                  f, b, np);
      fail();
    }
  }
  unsetenv("TEZGAH_WEBGPU_ATTN_NOPACK");
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&r[0][i], &r[1][i], 4) && bad++ < 5)
      print_error("no-pack vs packs: element %zu: %.9g vs %.9g\n", i, r[1][i], r[0][i]);
  printf("act_f16 attention no-pack vs packs: %zu of %zu values differ (lse, out, dq, dk, dv)\n", bad, n);
  assert_int_equal(bad, 0);
  free(r[0]), free(r[1]);
  setenv("TEZGAH_WEBGPU_ATTN_SGMAT", "0", 1);
  if (!real) unsetenv("TEZGAH_WEBGPU_ATTN_SGMAT_EMU");
  g->destroy(g);
}

/* ---- wg_fill's vector form (webgpu_mem.c; fill16.wgsl) ---- */
/* One fill of n elements of dtype dt (f16: g has f16 activations) at element offset eoff of a
 * fresh buffer whose every byte holds a pattern: with TEZGAH_WEBGPU_FILL_VEC=1 (the vector
 * middle and the scalar ends, which must run where n·es ≥ 4096 bytes: counted by
 * tz_webgpu_fill_vec_calls) and =0 (the scalar fill alone), the whole buffer downloaded and
 * compared byte for byte with the expected one: the value's bytes in the range (fp32: its bits;
 * f16: the host's IEEE rounding, tz_sgmat_f16: ±inf beyond f16's range, NaN 0x7e00 with the
 * sign, as f16s), the pattern before it and in the 64 bytes after it (nothing written outside). */
static void fill_case(tz_backend *g, tz_dtype dt, size_t eoff, size_t n, float value) {
  size_t es = dt == TZ_F16 ? 2 : 4, b0 = eoff * es, b1 = b0 + n * es, total = (b1 + 64 + 3) & ~(size_t)3;
  uint8_t *init = malloc(total), *want = malloc(total), *got = malloc(total), pat[4];
  if (dt == TZ_F16) {
    uint16_t h = tz_sgmat_f16(value);
    memcpy(pat, &h, 2);
  } else
    memcpy(pat, &value, 4);
  for (size_t i = 0; i < total; i++) {
    init[i] = (uint8_t)(0xa5 ^ (i * 7));
    want[i] = i >= b0 && i < b1 ? pat[(i - b0) % es] : init[i];
  }
  for (int v = 1; v >= 0; v--) {
    setenv("TEZGAH_WEBGPU_FILL_VEC", v ? "1" : "0", 1);
    tz_buf *b = g->alloc(g, total, "fill test");
    assert_non_null(b);
    g->upload(g, (tz_slice){b, 0}, init, total);
    long c0 = tz_webgpu_fill_vec_calls();
    g->fill(g, (tz_slice){b, b0}, value, n, dt);
    long ran = tz_webgpu_fill_vec_calls() - c0, wran = v && n * es >= 4096;
    g->download(g, got, (tz_slice){b, 0}, total);
    g->free(g, b);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < total; i++)
      if (got[i] != want[i] && !bad++) first = i;
    printf("  fill %s n %zu at element %zu value %g FILL_VEC=%d: vector form %s, %zu of %zu bytes differ\n",
           dt == TZ_F16 ? "f16" : "f32", n, eoff, (double)value, v, ran ? "ran" : "not run", bad, total);
    if (ran != wran) {
      print_error("fill: the vector form %s, expected %s\n", ran ? "ran" : "did not run", wran ? "to" : "not to");
      fail();
    }
    if (bad) {
      print_error("fill: byte %zu (range [%zu, %zu)) is 0x%02x, want 0x%02x\n", first, b0, b1, got[first], want[first]);
      fail();
    }
  }
  unsetenv("TEZGAH_WEBGPU_FILL_VEC");
  free(init), free(want), free(got);
}
/* wg_fill, fp32 on the fp32 backend and f16 on one with f16 activations (SKIPPED where it cannot
 * be made, saying so): counts below the vector form's 4096 bytes (the scalar fill alone), a
 * 16-byte aligned range with no ends, and odd counts at unaligned starts (both ragged ends: up to
 * 3 floats or 7 halves each side); values 0, 1.5, 0.1 (f16: rounded), -70000 (f16: -inf) and
 * NaN. Exact (fill_case). */
static void test_fill_vec(void **state) {
  static const float val[] = {0.0f, 1.5f, 0.1f, -70000.0f, NAN};
  static const size_t f32c[][2] = {{3, 37}, {0, 1024}, {1, 1025}, {2, 5000}, {3, 70001}, {5, 1023}};
  for (size_t i = 0; i < sizeof f32c / sizeof *f32c; i++) fill_case(gpu, TZ_F32, f32c[i][0], f32c[i][1], val[i % 5]);
  tz_backend *g = act_f16_backend();
  if (!g) return;
  static const size_t f16c[][2] = {{1, 99}, {0, 2048}, {1, 4097}, {3, 2049}, {7, 70001}, {6, 3000}};
  for (size_t i = 0; i < sizeof f16c / sizeof *f16c; i++) fill_case(g, TZ_F16, f16c[i][0], f16c[i][1], val[i % 5]);
  fill_case(g, TZ_F16, 5, 9001, NAN);
  fill_case(g, TZ_F16, 2, 8191, -70000.0f);
  g->destroy(g);
}

/* ---- the subgroup-matrix attention backward's D pass (fa_sg_prep.wgsl) ---- */
/* D [B, nh, T] = Σ_d dout·out per head and, with dcopy, dout16 [B, Tp, nh·hd] (Tp = T rounded up
 * to 64) through tz_webgpu_attn_sg_prep on g (f16 activations: dout and out f16 at byte offsets
 * doff, ooff), with TEZGAH_WEBGPU_ATTN_D_VEC=1 (the vector form main8 must run iff want_vec) and
 * =0 (main), each against the host: D within 2e-5·Σ_d |dout·out| of the exact sum (fp32 sums of
 * ≤ 128 exact products: ≤ 128·2^-24 ≈ 7.6e-6 of it; a lost lane or chunk is far outside), a
 * non-finite D (a row with an f16 ±inf in dout) the same infinity; dout16 bit for bit (the f16
 * values, ±inf clamped to ±65504, zero rows for T ≤ t < Tp), or untouched without dcopy; 16
 * floats past D and 32 halves past dout16 untouched. */
static void dprep_case(tz_backend *g, int B, int T, int nh, int hd, int dcopy, size_t doff, size_t ooff, int want_vec) {
  ot_ctx og;
  ot_init(&og, g, (uint64_t)B * 31 + T * 5 + nh + hd + dcopy + doff + ooff);
  int Tp = (T + 63) / 64 * 64;
  size_t C = (size_t)nh * hd, N = (size_t)B * T, nl = (size_t)B * nh * T, n16 = (size_t)B * Tp * C;
  float *dout = ot_randn(&og, N * C, 1), *out = ot_randn(&og, N * C, 1);
  dout[3] = INFINITY, dout[N * C - 5] = -1e6f, dout[C + 1] = 65504.0f, out[3] = 0.5f, out[N * C - 5] = 0.25f;
  round16(dout, N * C), round16(out, N * C);
  tz_slice gd = up16(&og, dout, N * C, doff), go = up16(&og, out, N * C, ooff);
  size_t nd = nl + 16, nb16 = n16 * 2 + 64;
  uint32_t *dsent = malloc(nd * 4);
  uint8_t *s16 = malloc(nb16);
  for (size_t i = 0; i < nd; i++) dsent[i] = 0x7f00dead ^ (uint32_t)i; /* (a pattern: compared bytewise) */
  for (size_t i = 0; i < nb16; i++) s16[i] = (uint8_t)(0x5a ^ i);
  tz_slice gD = ot_buf(&og, NULL, nd * 4), g16 = ot_buf(&og, NULL, nb16);
  /* the host's D and dout16 */
  double *ref = malloc(nl * sizeof(double)), *mag = malloc(nl * sizeof(double));
  for (int b = 0; b < B; b++)
    for (int h = 0; h < nh; h++)
      for (int t = 0; t < T; t++) {
        double s = 0, m = 0;
        for (int d = 0; d < hd; d++) {
          size_t e = ((size_t)b * T + t) * C + (size_t)h * hd + d;
          s += (double)dout[e] * out[e], m += fabs((double)dout[e] * out[e]);
        }
        ref[((size_t)b * nh + h) * T + t] = s, mag[((size_t)b * nh + h) * T + t] = m;
      }
  uint16_t *w16 = malloc(n16 * 2);
  for (size_t r = 0; r < (size_t)B * Tp; r++)
    for (size_t c = 0; c < C; c++) {
      size_t b = r / Tp, t = r % Tp;
      float x = t < (size_t)T ? fminf(fmaxf(dout[(b * T + t) * C + c], -65504.0f), 65504.0f) : 0.0f;
      w16[r * C + c] = tz_sgmat_f16(x);
    }
  float *gotD = malloc(nd * 4);
  uint8_t *got16 = malloc(nb16);
  for (int v = 1; v >= 0; v--) {
    setenv("TEZGAH_WEBGPU_ATTN_D_VEC", v ? "1" : "0", 1);
    g->upload(g, gD, dsent, nd * 4), g->upload(g, g16, s16, nb16);
    long c0 = tz_webgpu_attn_dvec_calls();
    int r = tz_webgpu_attn_sg_prep(g, gD, g16, gd, go, B, T, nh, hd, dcopy);
    long ran = tz_webgpu_attn_dvec_calls() - c0;
    g->download(g, gotD, gD, nd * 4), g->download(g, got16, g16, nb16);
    size_t badD = 0, bad16 = 0, wi = 0;
    double worst = 0;
    for (size_t i = 0; i < nl; i++) {
      double e = fabs((double)gotD[i] - ref[i]), bound = 2e-5 * mag[i] + 1e-30;
      int ok = isfinite(ref[i]) ? e <= bound : (double)gotD[i] == ref[i];
      if (!ok && badD++ < 3) print_error("D [%zu]: gpu %.9g host %.9g (bound %.3g)\n", i, gotD[i], ref[i], bound);
      if (isfinite(ref[i]) && e / bound > worst) worst = e / bound, wi = i;
    }
    badD += memcmp(gotD + nl, dsent + nl, 16 * 4) != 0;
    for (size_t i = 0; i < nb16; i++) {
      uint8_t want = dcopy && i < n16 * 2 ? ((const uint8_t *)w16)[i] : s16[i];
      if (got16[i] != want && bad16++ < 3)
        print_error("dout16 byte %zu (of %zu): 0x%02x, want 0x%02x\n", i, n16 * 2, got16[i], want);
    }
    printf("  D pass B %d T %d nh %d hd %d dcopy %d offsets %zu %zu D_VEC=%d: %s form; D worst err/bound %.3f at "
           "%zu, %zu bad; dout16 %zu bytes bad\n",
           B, T, nh, hd, dcopy, doff, ooff, v, r == 1 ? "vector" : r == 0 ? "scalar" : "NO", worst, wi, badD, bad16);
    int wv = v && want_vec;
    if (r != wv || ran != wv) {
      print_error("D pass: returned %d, counted %ld, want %d (D_VEC=%d)\n", r, ran, wv, v);
      fail();
    }
    if (badD || bad16) fail();
  }
  unsetenv("TEZGAH_WEBGPU_ATTN_D_VEC");
  free(dout), free(out), free(dsent), free(s16), free(ref), free(mag), free(w16), free(gotD), free(got16);
  ot_release(&og);
}
/* The D pass directly (dprep_case) on a backend with f16 activations, with subgroup shuffles
 * (lavapipe: 4 or 8 lanes, so head_dim 64's 8 and 128's 16 threads per row also join partials
 * through workgroup memory at 4 lanes) and without (TEZGAH_WEBGPU_SUBGROUPS=0: workgroup memory
 * only): head_dim 64 and 128, dcopy on and off, T below and at the padding, 16-byte aligned
 * offsets (the vector form) and 2- or 8-byte ones (main). SKIPPED without f16 activations. */
static void test_attention_d_prep(void **state) {
  /* (the environment's TEZGAH_WEBGPU_SUBGROUPS, e.g. ctest's _nosubgroups entry's, is restored) */
  const char *e = getenv("TEZGAH_WEBGPU_SUBGROUPS");
  char *env_sg = e ? strdup(e) : NULL;
  for (int sg = 1; sg >= 0; sg--) {
    if (!sg) setenv("TEZGAH_WEBGPU_SUBGROUPS", "0", 1);
    tz_backend *g = act_f16_backend();
    if (env_sg) setenv("TEZGAH_WEBGPU_SUBGROUPS", env_sg, 1);
    else unsetenv("TEZGAH_WEBGPU_SUBGROUPS");
    if (!g) break;
    printf("D pass, %s\n", tz_webgpu_describe(g));
    dprep_case(g, 2, 70, 4, 64, 1, 0, 0, 1);
    dprep_case(g, 2, 70, 4, 64, 0, 16, 48, 1);
    dprep_case(g, 1, 45, 3, 128, 1, 32, 16, 1);
    dprep_case(g, 2, 64, 2, 128, 0, 0, 0, 1);
    if (sg) {
      dprep_case(g, 2, 70, 4, 64, 1, 2, 0, 0);
      dprep_case(g, 1, 45, 3, 128, 0, 0, 8, 0);
    }
    g->destroy(g);
  }
  free(env_sg);
}

/* name matches one of the comma-separated glob patterns in list */
static int name_in(const char *name, const char *list) {
  char pat[256];
  for (const char *p = list; *p;) {
    size_t k = strcspn(p, ",");
    snprintf(pat, sizeof pat, "%.*s", (int)k, p);
    if (k && !fnmatch(pat, name, 0)) return 1;
    p += k + (p[k] == ',');
  }
  return 0;
}


/* ---- f16 activations (be->act == TZ_F16): the elementwise, norm, activation, embedding, loss
 * and memory ops (test_act_f16_elem) ---- */
/* got (f16 act on the GPU, n elements) against the CPU's fp32 ref: |err| <= rtol·|ref| + atol */
static void af_check(ot_ctx *og, tz_slice g, ot_ctx *oc, tz_slice c_, size_t n, const char *what, double rtol,
                     double atol) {
  float *got = og->be->act == TZ_F16 ? down16(og, g, n) : ot_get(og, g, n), *ref = ot_get(oc, c_, n);
  double *rd = ot_dbl(ref, n);
  ot_close(what, got, rd, n, rtol, atol);
  free(got), free(ref), free(rd);
}
static void af_check32(ot_ctx *og, tz_slice g, ot_ctx *oc, tz_slice c_, size_t n, const char *what, double rtol,
                       double atol) {
  float *got = ot_get(og, g, n), *ref = ot_get(oc, c_, n);
  double *rd = ot_dbl(ref, n);
  ot_close(what, got, rd, n, rtol, atol);
  free(got), free(ref), free(rd);
}
/* host x rounded to f16, uploaded as f16 to the GPU (offset off, even) and as fp32 to the CPU */
static void af_up(ot_ctx *og, ot_ctx *oc, float *x, size_t n, size_t off, tz_slice *g, tz_slice *c_) {
  round16(x, n);
  *g = up16(og, x, n, off);
  *c_ = up32(oc, x, n);
}

/* Tolerances (f16 activations: every act input rounded to f16 on the host and given to both
 * backends, so only the GPU's f16 outputs add error): outputs in f16 |err| <= 1.5e-3·|cpu| + atol
 * (the op's fp32 bound plus f16's rounding, 2^-11 = 4.9e-4 relative, of the result and, for
 * the accumulating dinp, of the stored sum; atol 1e-4 at unit scale), fp32 outputs (parameter
 * gradients, statistics, losses) at 1e-3 relative (sums over f16 inputs of the same values:
 * order only, plus the CPU's fp32 accumulation); fill / copy_rows / the download exact.
 * Vp: the logits' row stride (≥ V); xoff, doff: byte offsets of x (add's b, gelu's and the
 * norms' inp) and of layernorm_bwd's dinp. The vector kernels (wg_v16_ok) run where the sizes
 * (n, C, Vp) are multiples of 4 and the offsets of 8, the per-element f16 variant elsewhere. */
static void act_f16_case(tz_backend *g, int N, int C, int V, int Vp, size_t xoff, size_t doff, uint64_t seed) {
  ot_ctx og, oc;
  ot_init(&og, g, seed);
  ot_init(&oc, cpu, 1);
  size_t nc = (size_t)N * C;
  float *x = ot_randn(&og, nc, 2), *y = ot_randn(&og, nc, 1), *w = ot_randn(&og, C, 1), *b = ot_randn(&og, C, 1);
  float *dinp0 = ot_randn(&og, nc, 1), *h = ot_randn(&og, 2 * nc, 2);
  tz_slice gx, cx, gy, cy, gd, cd, gh, ch;
  af_up(&og, &oc, x, nc, xoff, &gx, &cx); /* xoff 2: odd element offset, the binding's 2-byte element offset */
  af_up(&og, &oc, y, nc, 0, &gy, &cy);
  af_up(&og, &oc, dinp0, nc, doff, &gd, &cd);
  af_up(&og, &oc, h, 2 * nc, 0, &gh, &ch);
  tz_slice gw = up32(&og, w, C), cw = up32(&oc, w, C), gb = up32(&og, b, C), cb = up32(&oc, b, C);
  char what[96];
  /* add, in place into a copy of y (out aliases a) */
  tz_slice go = up16(&og, y, nc, 0), co = up32(&oc, y, nc);
  g->add(g, go, go, gx, nc);
  cpu->add(cpu, co, co, cx, nc);
  snprintf(what, sizeof what, "act f16 add N%d C%d", N, C);
  af_check(&og, go, &oc, co, nc, what, 1.5e-3, 1e-4);
  /* gelu forward (mmin out, f16) and backward (dinp act) */
  tz_slice ga = ot_buf(&og, NULL, nc * 2 + 64), ca = ot_buf(&oc, NULL, nc * 4);
  g->gelu_fwd(g, ga, gx, nc);
  cpu->gelu_fwd(cpu, ca, cx, nc);
  snprintf(what, sizeof what, "act f16 gelu_fwd N%d C%d", N, C);
  af_check(&og, ga, &oc, ca, nc, what, 1.5e-3, 1e-4);
  tz_slice gdi = ot_buf(&og, NULL, nc * 2 + 64), cdi = ot_buf(&oc, NULL, nc * 4);
  g->gelu_bwd(g, gdi, gx, gy, nc);
  cpu->gelu_bwd(cpu, cdi, cx, cy, nc);
  snprintf(what, sizeof what, "act f16 gelu_bwd N%d C%d", N, C);
  af_check(&og, gdi, &oc, cdi, nc, what, 1.5e-3, 1e-4);
  /* swiglu forward and backward on gu = h [N, 2C] */
  g->swiglu_fwd(g, ga, gh, N, C);
  cpu->swiglu_fwd(cpu, ca, ch, N, C);
  snprintf(what, sizeof what, "act f16 swiglu_fwd N%d C%d", N, C);
  af_check(&og, ga, &oc, ca, nc, what, 1.5e-3, 1e-4);
  tz_slice gdgu = ot_buf(&og, NULL, 2 * nc * 2 + 64), cdgu = ot_buf(&oc, NULL, 2 * nc * 4);
  g->swiglu_bwd(g, gdgu, gy, gh, N, C);
  cpu->swiglu_bwd(cpu, cdgu, cy, ch, N, C);
  snprintf(what, sizeof what, "act f16 swiglu_bwd N%d C%d", N, C);
  af_check(&og, gdgu, &oc, cdgu, 2 * nc, what, 1.5e-3, 1e-4);
  /* layernorm forward, backward (dinp += into dinp0; dw, db fp32 +=) */
  tz_slice gm = ot_buf(&og, NULL, N * 4), cm = ot_buf(&oc, NULL, N * 4), gr = ot_buf(&og, NULL, N * 4),
           cr = ot_buf(&oc, NULL, N * 4);
  g->layernorm_fwd(g, ga, gm, gr, gx, gw, gb, N, C, 1e-5f);
  cpu->layernorm_fwd(cpu, ca, cm, cr, cx, cw, cb, N, C, 1e-5f);
  snprintf(what, sizeof what, "act f16 layernorm_fwd N%d C%d", N, C);
  af_check(&og, ga, &oc, ca, nc, what, 1.5e-3, 1e-4);
  af_check32(&og, gr, &oc, cr, N, "act f16 layernorm rstd", 1e-4, 1e-5);
  float *zc = calloc(2 * (size_t)C, sizeof(float));
  tz_slice gdw = up32(&og, zc, 2 * C), cdw = up32(&oc, zc, 2 * C);
  g->layernorm_bwd(g, gd, gdw, tz_f32(gdw, C), gy, gx, gw, gm, gr, N, C);
  cpu->layernorm_bwd(cpu, cd, cdw, tz_f32(cdw, C), cy, cx, cw, cm, cr, N, C);
  snprintf(what, sizeof what, "act f16 layernorm_bwd dinp N%d C%d", N, C);
  af_check(&og, gd, &oc, cd, nc, what, 1.5e-3, 2e-4);
  af_check32(&og, gdw, &oc, cdw, 2 * (size_t)C, "act f16 layernorm_bwd dw|db", 1e-3, 1e-3 * sqrt((double)N));
  /* rmsnorm forward and backward (its dinp += starts from the GPU's f16 dinp on both) */
  float *gdv = down16(&og, gd, nc);
  cpu->upload(cpu, cd, gdv, nc * 4);
  free(gdv);
  g->rmsnorm_fwd(g, ga, gr, gx, gw, N, C, 1e-5f);
  cpu->rmsnorm_fwd(cpu, ca, cr, cx, cw, N, C, 1e-5f);
  snprintf(what, sizeof what, "act f16 rmsnorm_fwd N%d C%d", N, C);
  af_check(&og, ga, &oc, ca, nc, what, 1.5e-3, 1e-4);
  g->rmsnorm_bwd(g, gd, gdw, gy, gx, gw, gr, N, C);
  cpu->rmsnorm_bwd(cpu, cd, cdw, cy, cx, cw, cr, N, C);
  snprintf(what, sizeof what, "act f16 rmsnorm_bwd dinp N%d C%d", N, C);
  af_check(&og, gd, &oc, cd, nc, what, 1.5e-3, 2e-4);
  af_check32(&og, gdw, &oc, cdw, C, "act f16 rmsnorm_bwd dw", 1e-3, 1e-3 * sqrt((double)N));
  /* bias_bwd of the f16 dout (colsum_f16 where C is even) */
  tz_slice gdb = up32(&og, zc, C), cdb = up32(&oc, zc, C);
  g->bias_bwd(g, gdb, gy, N, C);
  cpu->bias_bwd(cpu, cdb, cy, N, C);
  af_check32(&og, gdb, &oc, cdb, C, "act f16 bias_bwd", 1e-3, 1e-3 * sqrt((double)N));
  /* embedding: lookup into f16 out, backward from the f16 dout */
  int32_t *tok = malloc(sizeof(int32_t) * N);
  for (int i = 0; i < N; i++) tok[i] = (int32_t)((i * 7 + 3) % V);
  float *wte = ot_randn(&og, (size_t)V * C, 1), *wpe = ot_randn(&og, (size_t)N * C, 1);
  tz_slice gt = ot_buf(&og, tok, N * 4), ct = ot_buf(&oc, tok, N * 4);
  tz_slice gte = up32(&og, wte, (size_t)V * C), cte = up32(&oc, wte, (size_t)V * C), gpe = up32(&og, wpe, nc),
           cpe = up32(&oc, wpe, nc);
  g->embed_fwd(g, go, gt, gte, gpe, 1, N, C, V);
  cpu->embed_fwd(cpu, co, ct, cte, cpe, 1, N, C, V);
  snprintf(what, sizeof what, "act f16 embed_fwd N%d C%d", N, C);
  af_check(&og, go, &oc, co, nc, what, 1e-3, 1e-4);
  float *zv = calloc((size_t)(V > N ? V : N) * C, sizeof(float)); /* zeros for dwte [V, C] and dwpe [N, C] */
  tz_slice gdte = up32(&og, zv, (size_t)V * C), cdte = up32(&oc, zv, (size_t)V * C), gdpe = up32(&og, zv, nc),
           cdpe = up32(&oc, zv, nc);
  g->embed_bwd(g, gdte, gdpe, gy, gt, 1, N, C, V);
  cpu->embed_bwd(cpu, cdte, cdpe, cy, ct, 1, N, C, V);
  af_check32(&og, gdte, &oc, cdte, (size_t)V * C, "act f16 embed_bwd dwte", 1e-6, 1e-6); /* exact: f16 values, CPU order */
  af_check32(&og, gdpe, &oc, cdpe, nc, "act f16 embed_bwd dwpe", 1e-6, 1e-6);
  /* cross-entropy in place on f16 logits [N, Vp] (V of Vp columns), dscale with a loss scale */
  float *lg = ot_randn(&og, (size_t)N * Vp, 3);
  int32_t *tg = malloc(sizeof(int32_t) * N);
  for (int i = 0; i < N; i++) tg[i] = i % 5 == 4 ? -1 : (int32_t)((i * 13) % V);
  tz_slice glg, clg, gtg = ot_buf(&og, tg, N * 4), ctg = ot_buf(&oc, tg, N * 4), gl = ot_buf(&og, NULL, N * 4),
                     cl = ot_buf(&oc, NULL, N * 4);
  af_up(&og, &oc, lg, (size_t)N * Vp, 0, &glg, &clg);
  float ds = 1024.0f / N;
  g->crossentropy(g, gl, glg, gtg, N, V, Vp, ds);
  cpu->crossentropy(cpu, cl, clg, ctg, N, V, Vp, ds);
  af_check32(&og, gl, &oc, cl, N, "act f16 crossentropy losses", 1e-5, 1e-5);
  snprintf(what, sizeof what, "act f16 crossentropy dlogits N%d V%d", N, V);
  af_check(&og, glg, &oc, clg, (size_t)N * Vp, what, 1.5e-3, 1e-4 * ds);
  /* fill and copy_rows on f16 act tensors; download_act widens exactly */
  g->fill(g, go, 0.375f, nc, TZ_F16);
  cpu->fill(cpu, co, 0.375f, nc, TZ_F32);
  af_check(&og, go, &oc, co, nc, "act f16 fill", 0, 0);
  g->copy_rows(g, go, C, gx, C, N / 2, C - 1);
  cpu->copy_rows(cpu, co, C, cx, C, N / 2, C - 1);
  af_check(&og, go, &oc, co, nc, "act f16 copy_rows", 0, 0);
  float *dl = malloc(nc * sizeof(float));
  g->download_act(g, dl, tz_at(gx, 2), nc - 1); /* from an odd element */
  for (size_t i = 0; i + 1 < nc; i++) assert_true(dl[i] == x[i + 1]);
  /* a store beyond f16's range is ±inf, not saturated (the loss scaler must see the overflow) */
  g->fill(g, go, -40000.0f, nc, TZ_F16);
  g->add(g, go, go, go, nc);
  g->download_act(g, dl, go, nc);
  for (size_t i = 0; i < nc; i++) assert_true(isinf(dl[i]) && dl[i] < 0);
  /* ... and NaN stays NaN */
  g->fill(g, go, NAN, nc, TZ_F16);
  g->add(g, go, go, gx, nc);
  g->download_act(g, dl, go, nc);
  for (size_t i = 0; i < nc; i++) assert_true(isnan(dl[i]));
  free(dl), free(tg), free(lg), free(zv), free(wte), free(wpe), free(tok), free(zc);
  free(x), free(y), free(w), free(b), free(dinp0), free(h);
  ot_release(&og), ot_release(&oc);
}

/* ---- f16 activations: the matmul family (test_act_f16_matmul) ---- */
/* One call on g (f16 activations) and the CPU on the same f16-rounded values:
 *   kind 0 matmul_t: out f16 [M,N] (+)= a f16 [M,K] · b fp32 [N,K]ᵀ (+ bias fp32)
 *   kind 1 matmul:   out f16 [M,N] (+)= a f16 [M,K] (dY) · b fp32 [K,N]
 *   kind 2 matmul_at: out fp32 [M,N] (+)= a f16 [K,M]ᵀ (dY) · b f16 [K,N]
 *   kind 3 matmul_at_swiglu_a: out fp32 [M,N] (+)= a f16 [K,M]ᵀ · swiglu(gu f16 [K,2N]) (the CPU:
 *     swiglu_fwd into scratch, then matmul_at)
 *   kind 4 matmul_t_res: out f16 [M,N] = a f16 [M,K] · b fp32 [N,K]ᵀ (+ bias) + res f16 [M,N] (res:
 *     the old-value values, in a tensor of their own; out starts as other random values, so that
 *     an accumulation into it instead of a write, or res left out, shows; the CPU: matmul_t
 *     accumulating onto res)
 * f16 tensors at byte offset off (even), the fp32 weight 64 bytes in, the bias at 0.
 * Bound per element: tol·Σ|terms| + atol (the terms: the products, the bias and the accumulated
 * old value) plus, for an f16 output, its rounding 2^-11·|cpu|. The weights b are not f16-exact:
 * the subgroup-matrix path rounds them (within tol = 1e-3), the vector kernels read them as they
 * are. Returns nothing; fails the test on the first element outside. */
static long g_afm_offb = -1; /* b's f16 offset (X, gu) where it differs from a's off; -1: the same */
/* kind 4 off the subgroup-matrix path (matmul_t, then add): the product is rounded to f16 before
 * the add, a second rounding the bound then allows (2^-11·|a·bᵀ + bias|); 0 where the caller
 * made sure the RES epilogue ran (one rounding, SGMAT_NATIVE16=1) */
static int g_afm_res2 = 1;
static void afm_case(tz_backend *g, int kind, int M, int K, int N, int acc, int bias, size_t off, double tol,
                     double atol) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)kind * 1000003 + (uint64_t)M * 7919 + K * 31 + N + acc * 2 + bias + off);
  ot_init(&oc, cpu, 1);
  int o16 = kind < 2 || kind == 4;
  size_t no = (size_t)M * N, na = (size_t)M * K, nb = (size_t)K * N * (kind == 3 ? 2 : 1);
  float *a = ot_randn(&og, na, 1), *b = ot_randn(&og, nb, 1), *o0 = ot_randn(&og, no, 1), *bs = ot_randn(&og, N, 1);
  round16(a, na);
  int tr = kind == 2 || kind == 3; /* a is [K, M] (dY), b an f16 activation (X or gu) */
  if (tr) round16(b, nb);
  if (o16) round16(o0, no);
  tz_slice ga, gb, go, gbias = TZ_NONE, ca, cb, co, cbias = TZ_NONE;
  ga = up16(&og, a, na, off), ca = up32(&oc, a, na);
  if (tr) gb = up16(&og, b, nb, g_afm_offb >= 0 ? (size_t)g_afm_offb : off);
  else gb = ot_buf(&og, NULL, nb * 4 + 64), gb.off = 64, g->upload(g, gb, b, nb * 4);
  cb = up32(&oc, b, nb);
  float *o1 = kind == 4 ? ot_randn(&og, no, 1) : NULL; /* kind 4's out before the call */
  if (o16) go = up16(&og, kind == 4 ? o1 : o0, no, off);
  else go = ot_buf(&og, NULL, no * 4 + 64), go.off = 64, g->upload(g, go, o0, no * 4);
  co = up32(&oc, o0, no);
  if (bias) gbias = up32(&og, bs, N), cbias = up32(&oc, bs, N);
  tz_slice cs = kind == 3 ? ot_buf(&oc, NULL, (size_t)K * N * 4) : TZ_NONE;
  switch (kind) {
  case 0:
    g->matmul_t(g, go, ga, gb, gbias, M, K, N, acc);
    cpu->matmul_t(cpu, co, ca, cb, cbias, M, K, N, acc);
    break;
  case 1:
    g->matmul(g, go, ga, gb, M, K, N, acc);
    cpu->matmul(cpu, co, ca, cb, M, K, N, acc);
    break;
  case 2:
    g->matmul_at(g, go, ga, gb, M, K, N, acc);
    cpu->matmul_at(cpu, co, ca, cb, M, K, N, acc);
    break;
  case 4:
    g->matmul_t_res(g, go, ga, gb, gbias, up16(&og, o0, no, off), M, K, N);
    cpu->matmul_t(cpu, co, ca, cb, cbias, M, K, N, 1);
    break;
  default:
    g->matmul_at_swiglu_a(g, go, ga, gb, M, K, N, acc);
    cpu->swiglu_fwd(cpu, cs, cb, K, N);
    cpu->matmul_at(cpu, co, ca, cs, M, K, N, acc);
  }
  float *got = o16 ? down16(&og, go, no) : ot_get(&og, go, no), *ref = ot_get(&oc, co, no);
  char what[160];
  snprintf(what, sizeof what, "act_f16 %s M %d K %d N %d acc %d bias %d off %zu",
           (const char *[]){"matmul_t", "matmul", "matmul_at", "matmul_at_swiglu_a", "matmul_t_res"}[kind], M, K, N,
           kind == 4 ? 1 : acc, bias, off);
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < no; i++) {
    int m = (int)(i / N), n = (int)(i % N);
    double mag = acc || kind == 4 ? fabs(o0[i]) : 0;
    if (bias) mag += fabs(bs[n]);
    for (int k = 0; k < K; k++) {
      double x = tr ? a[(size_t)k * M + m] : a[(size_t)m * K + k], y;
      if (kind == 0 || kind == 4) y = b[(size_t)n * K + k];
      else if (kind == 1 || kind == 2) y = b[(size_t)k * N + n];
      else {
        double gt = b[(size_t)k * 2 * N + n], u = b[(size_t)k * 2 * N + N + n];
        y = gt / (1 + exp(-gt)) * u;
      }
      mag += fabs(x * y);
    }
    double bound = tol * mag + atol + (o16 ? ldexp(fabs(ref[i]), -11) : 0), err = fabs((double)got[i] - ref[i]);
    if (kind == 4 && g_afm_res2) bound += ldexp(fabs((double)ref[i] - o0[i]), -11) * 1.01;
    if (bound > 0 && err / bound > worst) worst = err / bound;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], bound);
      bad++;
    }
  }
  printf("  %-70s worst err/bound %.3f%s\n", what, worst, bad ? " FAILED" : "");
  if (bad) fail();
  free(got), free(ref), free(a), free(b), free(o0), free(o1), free(bs);
  ot_release(&og), ot_release(&oc);
}

/* The GeLU-epilogue matmuls (backend.h's matmul_t_gelu, matmul_dgelu) on g (f16 activations)
 * against the CPU's separate ops on the same f16-rounded values (the CPU's gelu_fwd / gelu_bwd
 * are the same tanh form):
 *   fwd: h f16 [M,N] = x f16 [M,K] · W fp32 [N,K]ᵀ (+ bias), a f16 = gelu(h); the CPU: matmul_t,
 *        gelu_fwd. h at afm_case's bound; a within 1.13 (|gelu'| <= 1.13) times h's bound before
 *        its rounding, + 2^-11·|h|·1.13 where `two` (the fallback applies gelu to the rounded h),
 *        + a's own rounding 2^-11·|a|.
 *   bwd: dh f16 [M,N] = gelu'(h f16 [M,N]) ⊙ (dout f16 [M,K] · W fp32 [K,N]), db fp32 [N] += Σ_m
 *        dh (db starts random); the CPU: matmul, gelu_bwd, bias_bwd. dh within |gelu'(h)|·
 *        (tol·Σ|terms| + atol + 2^-11·|da| where `two`: the fallback rounds da first) + 2^-11·|dh|;
 *        db within Σ_m of dh's bounds + 1e-5.
 * Both also allow the fp32 evaluation of gelu / gelu' (cancellation in 1 + tanh for negative
 * arguments: an absolute error ~1e-7 on terms of order 1, differently rounded exp on each side):
 * 2e-6 times |h| (fwd) or |da| (bwd), and 2^-14 for an f16 result below f16's normal range (an
 * adapter may flush f16 subnormals: lavapipe does).
 * h's values are spread over [-4, 4] so gelu' varies (including its negative dip). */
static void gelu_epi_case(tz_backend *g, int fwd, int M, int K, int N, int bias, size_t off, double tol, double atol,
                          int two) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)fwd * 1000003 + (uint64_t)M * 7919 + K * 31 + N + bias + off);
  ot_init(&oc, cpu, 1);
  size_t no = (size_t)M * N, na = (size_t)M * K, nb = (size_t)K * N;
  float *a = ot_randn(&og, na, 1), *b = ot_randn(&og, nb, 1), *bs = ot_randn(&og, N, 1), *hh = ot_randn(&og, no, 2);
  float *db0 = ot_randn(&og, N, 1);
  round16(a, na);
  round16(hh, no);
  tz_slice ga = up16(&og, a, na, off), ca = up32(&oc, a, na);
  tz_slice gb = ot_buf(&og, NULL, nb * 4 + 64);
  gb.off = 64, g->upload(g, gb, b, nb * 4);
  tz_slice cb = up32(&oc, b, nb);
  tz_slice gbias = bias ? up32(&og, bs, N) : TZ_NONE, cbias = bias ? up32(&oc, bs, N) : TZ_NONE;
  /* the outputs on 4-byte boundaries (the model's activations are; gelu_fwd's f16 output must
   * be), the inputs at off */
  size_t oo = off & ~(size_t)3;
  tz_slice go = up16(&og, hh, no, oo), co = ot_buf(&oc, NULL, no * 4); /* h (fwd) / dh (bwd) */
  tz_slice g2 = up16(&og, hh, no, fwd ? oo : off), c2 = up32(&oc, hh, no); /* a (fwd, written) / h (bwd) */
  tz_slice gdb = up32(&og, db0, N), cdb = up32(&oc, db0, N), cda = ot_buf(&oc, NULL, no * 4);
  if (fwd) {
    g->matmul_t_gelu(g, g2, go, ga, gb, gbias, M, K, N);
    cpu->matmul_t(cpu, co, ca, cb, cbias, M, K, N, 0);
    cpu->gelu_fwd(cpu, c2, co, no);
  } else {
    g->matmul_dgelu(g, go, bias ? gdb : TZ_NONE, ga, gb, g2, M, K, N);
    cpu->matmul(cpu, cda, ca, cb, M, K, N, 0);
    cpu->gelu_bwd(cpu, co, c2, cda, no);
    if (bias) cpu->bias_bwd(cpu, cdb, co, M, N);
  }
  float *got = down16(&og, go, no), *ref = ot_get(&oc, co, no);
  float *got2 = fwd ? down16(&og, g2, no) : NULL, *ref2 = fwd ? ot_get(&oc, c2, no) : NULL;
  float *da = fwd ? NULL : ot_get(&oc, cda, no), *gdbv = ot_get(&og, gdb, N), *cdbv = ot_get(&oc, cdb, N);
  char what[160];
  snprintf(what, sizeof what, "act_f16 %s M %d K %d N %d bias %d off %zu%s", fwd ? "matmul_t_gelu" : "matmul_dgelu", M,
           K, N, bias, off, two ? " (two ops)" : "");
  size_t bad = 0;
  double worst = 0, *dbb = calloc((size_t)N, sizeof(double));
  for (size_t i = 0; i < no; i++) {
    int m = (int)(i / N), n = (int)(i % N);
    double mag = fwd && bias ? fabs(bs[n]) : 0;
    for (int k = 0; k < K; k++)
      mag += fabs((double)a[(size_t)m * K + k] * (fwd ? b[(size_t)n * K + k] : b[(size_t)k * N + n]));
    double pre = tol * mag + atol, bound, err = fabs((double)got[i] - ref[i]);
    if (fwd) {
      bound = pre + ldexp(fabs(ref[i]), -11);
      double b2 = 1.13 * (pre + (two ? ldexp(fabs(ref[i]), -11) : 0)) + ldexp(fabs(ref2[i]), -11) +
                  2e-6 * fabs(ref[i]) + ldexp(1, -14);
      double e2 = fabs((double)got2[i] - ref2[i]);
      if (e2 / b2 > worst) worst = e2 / b2;
      if (!(e2 <= b2)) {
        if (bad < 5) print_error("%s gelu(h)[%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got2[i], ref2[i], b2);
        bad++;
      }
    } else {
      double x = hh[i], xc = x < -100 ? -100 : x > 100 ? 100 : x, u = 0.7978845608028654 * (xc + 0.044715 * xc * xc * xc);
      double th = tanh(u), gp = 0.5 * (1 + th) + 0.5 * xc * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * xc * xc);
      bound = fabs(gp) * (pre + (two ? ldexp(fabs(da[i]), -11) : 0)) + ldexp(fabs(ref[i]), -11) + 2e-6 * fabs(da[i]) +
              ldexp(1, -14);
      dbb[n] += bound;
    }
    if (bound > 0 && err / bound > worst) worst = err / bound;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], bound);
      bad++;
    }
  }
  if (!fwd && bias)
    for (int n = 0; n < N; n++) {
      double e = fabs((double)gdbv[n] - cdbv[n]), bd = dbb[n] + 1e-5;
      if (e / bd > worst) worst = e / bd;
      if (!(e <= bd)) {
        if (bad < 5) print_error("%s db[%d]: gpu %.9g cpu %.9g (bound %.3g)\n", what, n, gdbv[n], cdbv[n], bd);
        bad++;
      }
    }
  printf("  %-70s worst err/bound %.3f%s\n", what, worst, bad ? " FAILED" : "");
  if (bad) fail();
  free(dbb), free(got), free(ref), free(got2), free(ref2), free(da), free(gdbv), free(cdbv);
  free(a), free(b), free(bs), free(hh), free(db0);
  ot_release(&og), ot_release(&oc);
}

/* matmul_at_db (backend.h) on g (f16 activations) against the CPU's matmul_at then bias_bwd on the
 * same f16-rounded values: dW fp32 [M,N] (+)= dY f16 [K,M]ᵀ · X f16 [K,N] (dW starts random with
 * acc), db fp32 [M] += Σ_k dY[k, :] (db starts random). dW within 1e-3·Σ|terms| + 1e-5 (afm_case's
 * f16-operand bound); db within 1e-5·Σ_k |dY[k, m]| + 1e-6 (fp32 sums of the same f16 values in
 * another order: the kernel's per-thread, per-split sums). off: dY's byte offset. same: dW and db
 * in one buffer, db right after dW (the flat gradient buffer's layout, as training binds them).
 * want_split: the call must run on DB without (0) or with (1) a split over K, or not on DB (-1;
 * tz_webgpu_mm_db_calls). */
static void mm_db_case(tz_backend *g, int M, int K, int N, int acc, size_t off, int same, int want_split) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)M * 7919 + K * 31 + N + off + acc + 99);
  ot_init(&oc, cpu, 1);
  size_t no = (size_t)M * N, na = (size_t)K * M, nb = (size_t)K * N;
  float *a = ot_randn(&og, na, 1), *b = ot_randn(&og, nb, 1), *w0 = ot_randn(&og, no, 1), *db0 = ot_randn(&og, M, 1);
  round16(a, na);
  round16(b, nb);
  tz_slice ga = up16(&og, a, na, off), ca = up32(&oc, a, na), gb = up16(&og, b, nb, 0), cb = up32(&oc, b, nb);
  tz_slice gw = up32(&og, w0, no), cw = up32(&oc, w0, no), gdb = up32(&og, db0, M), cdb = up32(&oc, db0, M);
  if (same) {
    gw = ot_buf(&og, NULL, (no + M) * 4), gdb = tz_f32(gw, no);
    g->upload(g, gw, w0, no * 4), g->upload(g, gdb, db0, (size_t)M * 4);
  }
  long db0c = tz_webgpu_mm_db_calls(0), db1c = tz_webgpu_mm_db_calls(1);
  g->matmul_at_db(g, gw, gdb, ga, gb, M, K, N, acc);
  /* where the call must run on DB (want_split 0 / 1) or must not (-1) */
  long d0 = tz_webgpu_mm_db_calls(0) - db0c, d1 = tz_webgpu_mm_db_calls(1) - db1c;
  if (want_split >= 0 ? (want_split ? d1 : d0) != 1 || d0 + d1 != 1 : d0 + d1 != 0) {
    print_error("act_f16 matmul_at_db M %d K %d N %d: DB calls %ld without a split, %ld with (want %s)\n", M, K, N, d0,
                d1, want_split < 0 ? "none" : want_split ? "one with" : "one without");
    fail();
  }
  cpu->matmul_at(cpu, cw, ca, cb, M, K, N, acc);
  cpu->bias_bwd(cpu, cdb, ca, K, M);
  float *got = ot_get(&og, gw, no), *ref = ot_get(&oc, cw, no), *gd = ot_get(&og, gdb, M), *cd = ot_get(&oc, cdb, M);
  char what[128];
  snprintf(what, sizeof what, "act_f16 matmul_at_db M %d K %d N %d acc %d off %zu%s", M, K, N, acc, off,
           same ? " (dW, db one buffer)" : "");
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < no; i++) {
    int m = (int)(i / N), n = (int)(i % N);
    double mag = 0;
    for (int k = 0; k < K; k++) mag += fabs((double)a[(size_t)k * M + m] * b[(size_t)k * N + n]);
    double bound = 1e-3 * mag + 1e-5, err = fabs((double)got[i] - ref[i]);
    if (err / bound > worst) worst = err / bound;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s dW[%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], bound);
      bad++;
    }
  }
  for (int m = 0; m < M; m++) {
    double mag = 0;
    for (int k = 0; k < K; k++) mag += fabs((double)a[(size_t)k * M + m]);
    double bound = 1e-5 * mag + 1e-6, err = fabs((double)gd[m] - cd[m]);
    if (err / bound > worst) worst = err / bound;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s db[%d]: gpu %.9g cpu %.9g (bound %.3g)\n", what, m, gd[m], cd[m], bound);
      bad++;
    }
  }
  printf("  %-70s worst err/bound %.3f%s\n", what, worst, bad ? " FAILED" : "");
  if (bad) fail();
  free(got), free(ref), free(gd), free(cd), free(a), free(b), free(w0), free(db0);
  ot_release(&og), ot_release(&oc);
}

/* matmul_dswiglu (backend.h) on g (f16 activations) against the CPU's matmul then swiglu_bwd on
 * the same f16-rounded values: dgu f16 [M, 2N] = swiglu_bwd(da = dout f16 [M,K] · W fp32 [K,N],
 * gu f16 [M, 2N]). Per element, with c the derivative of the output in da (dgate: u·σ(g)(1 +
 * g(1 − σ(g))), dup: silu(g)): |c|·(tol·Σ|terms| + atol + 2^-11·|da| where `two`: the fallback
 * rounds da to f16 first) + the output's rounding 2^-11·|ref| + 2e-6·|da|·(|u| + |g| + 1) (the
 * fp32 evaluation of σ on each side) + 2^-14 (an f16 result below f16's normal range may be
 * flushed: lavapipe). */
static void dswiglu_case(tz_backend *g, int M, int K, int N, size_t off, double tol, double atol, int two) {
  ot_ctx og, oc;
  ot_init(&og, g, (uint64_t)M * 7919 + K * 31 + N + off + 77);
  ot_init(&oc, cpu, 1);
  size_t na = (size_t)M * K, nb = (size_t)K * N, ng = (size_t)M * 2 * N, nd = (size_t)M * N;
  float *a = ot_randn(&og, na, 1), *b = ot_randn(&og, nb, 1), *gu = ot_randn(&og, ng, 2);
  round16(a, na);
  round16(gu, ng);
  tz_slice ga = up16(&og, a, na, off), ca = up32(&oc, a, na);
  tz_slice gb = ot_buf(&og, NULL, nb * 4 + 64);
  gb.off = 64, g->upload(g, gb, b, nb * 4);
  tz_slice cb = up32(&oc, b, nb);
  size_t oo = off & ~(size_t)15;
  tz_slice ggu = up16(&og, gu, ng, oo), cgu = up32(&oc, gu, ng);
  tz_slice go = up16(&og, gu, ng, oo), co = ot_buf(&oc, NULL, ng * 4), cda = ot_buf(&oc, NULL, nd * 4);
  g->matmul_dswiglu(g, go, ga, gb, ggu, M, K, N);
  cpu->matmul(cpu, cda, ca, cb, M, K, N, 0);
  cpu->swiglu_bwd(cpu, co, cda, cgu, M, N);
  float *got = down16(&og, go, ng), *ref = ot_get(&oc, co, ng), *da = ot_get(&oc, cda, nd);
  char what[160];
  snprintf(what, sizeof what, "act_f16 matmul_dswiglu M %d K %d N %d off %zu%s", M, K, N, off, two ? " (two ops)" : "");
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < ng; i++) {
    int m = (int)(i / (2 * N)), col = (int)(i % (2 * N)), n = col % N, up = col >= N;
    double mag = 0;
    for (int k = 0; k < K; k++) mag += fabs((double)a[(size_t)m * K + k] * b[(size_t)k * N + n]);
    double gt = gu[(size_t)m * 2 * N + n], u = gu[(size_t)m * 2 * N + N + n], sg = 1 / (1 + exp(-gt));
    double cf = up ? gt * sg : u * sg * (1 + gt * (1 - sg)), d = da[(size_t)m * N + n];
    double bound = fabs(cf) * (tol * mag + atol + (two ? ldexp(fabs(d), -11) : 0)) + ldexp(fabs(ref[i]), -11) +
                   2e-6 * fabs(d) * (fabs(u) + fabs(gt) + 1) + ldexp(1, -14);
    double err = fabs((double)got[i] - ref[i]);
    if (err / bound > worst) worst = err / bound;
    if (!(err <= bound)) {
      if (bad < 5) print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", what, i, got[i], ref[i], bound);
      bad++;
    }
  }
  printf("  %-70s worst err/bound %.3f%s\n", what, worst, bad ? " FAILED" : "");
  if (bad) fail();
  free(got), free(ref), free(da), free(a), free(b), free(gu);
  ot_release(&og), ot_release(&oc);
}

/* The matmul family with f16 activations (TEZGAH_WEBGPU_ACT=f16, be->act = TZ_F16; SKIPPED
 * without ShaderF16) against the CPU (afm_case), every kind with and without accumulation:
 * - the vector kernels (matmul_fast: f16 output stored in place, f16 dY / X / gu fetched as
 *   vec4<f16> or element by element; the transposed-weight form of matmul_t; split-K's fp32
 *   partials summed into the f16 output), odd shapes, f16 tensors 2 bytes past a word (an f16
 *   operand then read through an fp32 copy; the output written in place), bias; at the fp32
 *   bound 2e-5·Σ|terms| + 1e-6 (+ the output's f16 rounding);
 * - the general kernel (TEZGAH_WEBGPU_NO_FAST_MATMUL=1: fp32 copies, fp32 scratch output);
 * - the split paths (a backend with TEZGAH_WEBGPU_MAX_BINDING=65536: rows of out, matmul_t's
 *   staged output columns, matmul's staged f16 dY columns over K pieces, matmul_at's rows of a
 *   and b and staged f16 columns of a), bound 1e-3 (matmul over K pieces: each piece's sum is
 *   rounded to f16 once more);
 * - the subgroup-matrix kernels with their builtins emulated (a backend with
 *   TEZGAH_WEBGPU_SGMAT_EMU=1: kernel n on 32 x 32 tiles, the persistent grid at K <= 1024,
 *   split-K for matmul_at at K >= 1024) with TEZGAH_WEBGPU_SGMAT_NATIVE16=1, so every call must
 *   run there with its f16 tensors as they are (the O16 store, f16 dY read directly), at the
 *   subgroup-matrix bound 1e-3·Σ|terms| + 1e-5 (+ the output's f16 rounding). On an adapter
 *   with subgroup matrices (the H200) the same calls on its own tiles (shapes in 128s). Then the
 *   f16 output through fp32 scratch (SGMAT_NATIVE16=2): kernel n with TEZGAH_WEBGPU_SGMAT_O16=0,
 *   and where not emulated kernel o (TEZGAH_WEBGPU_SGMAT_TILE=o:64:4x4:2x2; lavapipe cannot run
 *   kernel o emulated). SKIPPED where neither runs. */
static void test_act_f16_matmul(void **state) {
  tz_backend *g = act_f16_backend();
  if (!g) skip();
  assert_int_equal(g->act, TZ_F16);
  assert_non_null(g->matmul_at_swiglu_a);
  printf("webgpu (f16 activations): %s\n", tz_webgpu_describe(g));
  const int sgm = strstr(tz_webgpu_describe(g), "matmul on subgroup matrices") != NULL;
  const double vt = sgm ? 1e-3 : 2e-5, va = sgm ? 1e-5 : 1e-6; /* an adapter with them takes them */
  for (int kind = 0; kind < 4; kind++)
    for (int acc = 0; acc < 2; acc++) {
      afm_case(g, kind, 33, 37, 29, acc, kind == 0 && !acc, 2, vt, va); /* odd: element loads, 2 bytes past */
      afm_case(g, kind, 68, 36, 132, acc, kind == 0 && acc == 0, 0, vt, va); /* vec4 loads */
      afm_case(g, kind, 7, 5, 130, acc, kind == 0, 4, vt, va);
    }
  afm_case(g, 0, 36, 64, 52, 1, 1, 8, vt, va);   /* bias with acc (N % 4 == 0: transposed weight) */
  afm_case(g, 1, 20, 1100, 24, 1, 0, 0, vt, va); /* split-K into the f16 output */
  afm_case(g, 2, 20, 1100, 24, 1, 0, 2, vt, va);
  afm_case(g, 3, 8, 1100, 12, 0, 0, 0, vt, va);
  afm_case(g, 4, 33, 37, 29, 0, 1, 2, vt, va); /* matmul_t_res off the subgroup-matrix path: matmul_t, add */
  afm_case(g, 4, 68, 36, 132, 0, 0, 0, vt, va);
  setenv("TEZGAH_WEBGPU_NO_FAST_MATMUL", "1", 1); /* the general kernel */
  for (int kind = 0; kind < 4; kind++) afm_case(g, kind, 33, 37, 29, kind & 1, kind == 0, 2, vt, va);
  afm_case(g, 0, 36, 40, 20, 1, 1, 0, vt, va);
  /* a 2 bytes past a word (its fp32 copy made first), b aligned: b's copy must not overwrite a's
   * (a review found it did: errors of 57) */
  g_afm_offb = 0;
  afm_case(g, 2, 33, 37, 29, 0, 0, 2, vt, va);
  afm_case(g, 3, 33, 37, 29, 1, 0, 2, vt, va);
  g_afm_offb = -1;
  unsetenv("TEZGAH_WEBGPU_NO_FAST_MATMUL");
  g->destroy(g);

  setenv("TEZGAH_WEBGPU_MAX_BINDING", "65536", 1); /* the split paths: 16K fp32 elements per binding */
  g = act_f16_backend();
  unsetenv("TEZGAH_WEBGPU_MAX_BINDING");
  assert_non_null(g);
  afm_case(g, 0, 300, 40, 72, 1, 0, 0, 1e-3, 1e-5);  /* rows of out and a */
  afm_case(g, 0, 20, 300, 100, 1, 1, 2, 1e-3, 1e-5); /* weight rows = output columns, staged */
  afm_case(g, 1, 20, 300, 100, 1, 0, 2, 1e-3, 1e-5); /* weight rows = dY's columns, staged f16 */
  afm_case(g, 1, 300, 40, 72, 0, 0, 0, 1e-3, 1e-5);
  afm_case(g, 2, 40, 600, 36, 1, 0, 2, 1e-3, 1e-5);  /* rows of a and b */
  afm_case(g, 2, 300, 20, 100, 1, 0, 0, 1e-3, 1e-5); /* out rows = dY's columns, staged f16 */
  afm_case(g, 3, 300, 20, 100, 1, 0, 2, 1e-3, 1e-5);
  g->destroy(g);

  setenv("TEZGAH_WEBGPU_SGMAT_EMU", "1", 1);
  g = act_f16_backend();
  unsetenv("TEZGAH_WEBGPU_SGMAT_EMU");
  assert_non_null(g);
  if (!strstr(tz_webgpu_describe(g), "matmul on subgroup matrices")) {
    printf("SKIPPED: the subgroup-matrix matmul (emulated) does not run here: %s\n", tz_webgpu_describe(g));
    g->destroy(g);
    return;
  }
  /* the emulation's default tiles are 32 x 32; an adapter with subgroup matrices (the H200,
   * where TEZGAH_WEBGPU_SGMAT_EMU changes nothing) takes its own, 128 x 128 */
  const int emu = strstr(tz_webgpu_describe(g), "builtins emulated") != NULL, u = emu ? 32 : 128;
  printf("webgpu (f16 activations, subgroup matrices%s): %s\n", emu ? ", builtins emulated" : "", tz_webgpu_describe(g));
  setenv("TEZGAH_WEBGPU_SGMAT_NATIVE16", "1", 1);
  for (int kind = 0; kind < 3; kind++)
    for (int acc = 0; acc < 2; acc++) afm_case(g, kind, 2 * u, 3 * u, 2 * u, acc, kind == 0 && !acc, 64, 1e-3, 1e-5);
  afm_case(g, 0, 3 * u, 2 * u, u, 0, 1, 64, 1e-3, 1e-5); /* bias: the f32 tile shared with the output staging */
  afm_case(g, 1, u, 1088, 2 * u, 1, 0, 0, 1e-3, 1e-5); /* K > 1024: the non-persistent grid */
  afm_case(g, 2, 2 * u, 1024, u, 1, 0, 64, 1e-3, 1e-5); /* split over K */
  /* matmul_t_res on kernel n's RES epilogue (SGMAT_NATIVE16=1: a fallback to matmul_t + add
   * fails), the persistent grid (K <= 1024) and the plain one, with and without bias */
  g_afm_res2 = 0;
  afm_case(g, 4, 2 * u, 3 * u, 2 * u, 0, 1, 64, 1e-3, 1e-5);
  afm_case(g, 4, u, 1088, 2 * u, 0, 0, 0, 1e-3, 1e-5);
  g_afm_res2 = 1;
  /* the GeLU epilogues (GELU, DGELU; offered with f16 activations on the subgroup-matrix
   * matmul), on kernel n and, for a shape off its tiles, through the separate ops */
  assert_null(g->matmul_t_gelu); /* the default offers the backward's only */
  assert_non_null(g->matmul_dgelu);
  g->destroy(g);
  setenv("TEZGAH_WEBGPU_SGMAT_EMU", "1", 1);
  setenv("TEZGAH_WEBGPU_GELU_EPI", "both", 1);
  g = act_f16_backend();
  unsetenv("TEZGAH_WEBGPU_SGMAT_EMU");
  unsetenv("TEZGAH_WEBGPU_GELU_EPI");
  assert_non_null(g);
  assert_non_null(g->matmul_t_gelu);
  assert_non_null(g->matmul_dgelu);
  for (int fwd = 0; fwd < 2; fwd++) {
    gelu_epi_case(g, fwd, 2 * u, 3 * u, 2 * u, 1, 64, 1e-3, 1e-5, 0);
    gelu_epi_case(g, fwd, u, 1088, 2 * u, !fwd, 0, 1e-3, 1e-5, 0);
  }
  /* SwiGLU's backward in the epilogue (DSWIGLU) */
  assert_non_null(g->matmul_dswiglu);
  dswiglu_case(g, 2 * u, 3 * u, 2 * u, 64, 1e-3, 1e-5, 0);
  dswiglu_case(g, u, 1088, 2 * u, 0, 1e-3, 1e-5, 0);
  /* K = BK, one k step (the emulation's BK 32, the H200's 64): the epilogue's loads in the last k
   * step (EPRE: DGELU by default) are then also the first k step's, beside the prologue's
   * (session 24's review) */
  const int kb1 = emu ? 32 : 64;
  gelu_epi_case(g, 0, 2 * u, kb1, 2 * u, 1, 64, 1e-3, 1e-5, 0);
  dswiglu_case(g, 2 * u, kb1, 2 * u, 64, 1e-3, 1e-5, 0);
  afm_case(g, 4, 2 * u, kb1, 2 * u, 0, 1, 64, 1e-3, 1e-5);
  /* the weight gradient with its bias sums (DB; SGMAT_NATIVE16=1: a fallback to matmul_at +
   * bias_bwd fails), db right after dW as in training, dW accumulated (DB's only form): no split;
   * split over K; dY at an offset */
  assert_non_null(g->matmul_at_db);
  mm_db_case(g, 2 * u, 3 * u, 2 * u, 1, 0, 1, 0);
  mm_db_case(g, 2 * u, 3 * u, 2 * u, 1, 64, 1, 0);
  mm_db_case(g, 3 * u, 2048, u, 1, 0, 1, 1);
  /* db not right after dW, and dW overwritten (acc 0; db still accumulates): matmul_at and
   * bias_bwd (NATIVE16 off for them) */
  unsetenv("TEZGAH_WEBGPU_SGMAT_NATIVE16");
  mm_db_case(g, 2 * u, 3 * u, 2 * u, 1, 0, 0, -1);
  mm_db_case(g, 2 * u, 3 * u, 2 * u, 0, 0, 1, -1);
  setenv("TEZGAH_WEBGPU_SGMAT_NATIVE16", "1", 1);
  /* the f16 output through fp32 scratch and copy_rows: kernel n with TEZGAH_WEBGPU_SGMAT_O16=0,
   * and kernel o (no emulated form: not on lavapipe) */
  setenv("TEZGAH_WEBGPU_SGMAT_NATIVE16", "2", 1);
  for (int ko = 0; ko < (emu ? 1 : 2); ko++) {
    if (ko) setenv("TEZGAH_WEBGPU_SGMAT_TILE", "o:64:4x4:2x2", 1);
    else setenv("TEZGAH_WEBGPU_SGMAT_O16", "0", 1);
    for (int kind = 0; kind < 2; kind++)
      for (int acc = 0; acc < 2; acc++) afm_case(g, kind, 2 * u, 3 * u, 2 * u, acc, kind == 0 && !acc, 64, 1e-3, 1e-5);
    unsetenv("TEZGAH_WEBGPU_SGMAT_TILE");
    unsetenv("TEZGAH_WEBGPU_SGMAT_O16");
  }
  unsetenv("TEZGAH_WEBGPU_SGMAT_NATIVE16");
  afm_case(g, 3, 2 * u, 3 * u, 2 * u, 1, 0, 64, 1e-3, 1e-5); /* (not a subgroup-matrix form: the vector kernel) */
  for (int fwd = 0; fwd < 2; fwd++) gelu_epi_case(g, fwd, 33, 37, 29, 1, 2, 1e-3, 1e-5, 1); /* the two ops */
  dswiglu_case(g, 33, 37, 29, 2, 1e-3, 1e-5, 1);
  g->destroy(g);
  if (!emu) return; /* (the shapes below are the emulation's 32 x 32 tiles) */
  /* f16 tensors counted by their bytes against the binding (mm's pieces where the call runs on
   * the subgroup-matrix kernels): 16K fp32 elements per binding, 64 KiB */
  setenv("TEZGAH_WEBGPU_SGMAT_EMU", "1", 1);
  setenv("TEZGAH_WEBGPU_MAX_BINDING", "65536", 1);
  g = act_f16_backend();
  unsetenv("TEZGAH_WEBGPU_MAX_BINDING");
  unsetenv("TEZGAH_WEBGPU_SGMAT_EMU");
  assert_non_null(g);
  setenv("TEZGAH_WEBGPU_SGMAT_NATIVE16", "1", 1);
  afm_case(g, 0, 256, 64, 96, 0, 1, 64, 1e-3, 1e-5);  /* out 48 KiB: one piece (24K fp32 elements) */
  afm_case(g, 1, 256, 64, 96, 1, 0, 64, 1e-3, 1e-5);
  afm_case(g, 0, 256, 64, 192, 1, 0, 64, 1e-3, 1e-5); /* out 96 KiB: two pieces of 128 rows */
  afm_case(g, 2, 96, 256, 64, 1, 0, 64, 1e-3, 1e-5);  /* dW: a [256, 96] f16 48 KiB, one piece */
  unsetenv("TEZGAH_WEBGPU_SGMAT_NATIVE16");
  g->destroy(g);
}

/* got (f16 on the GPU) against the CPU's fp32 ref where the values leave f16's range: a ref
 * beyond ±65504 (or ±inf) must come back as the same-signed inf (gradients and the in-place
 * rope store ±inf, not the saturated value: dynamic loss scaling must see the overflow), a NaN
 * ref as NaN, and the rest within 1.5e-3·|ref| + 1e-4 (act_f16_case's bound). Returns how many
 * refs were beyond the range and NaN (*nbig, *nnan) so the caller can check its case made them. */
static void af_check_special(const float *got, const float *ref, size_t n, const char *what, int *nbig, int *nnan) {
  size_t bad = 0;
  *nbig = *nnan = 0;
  for (size_t i = 0; i < n; i++) {
    int ok;
    if (isnan(ref[i])) ok = isnan(got[i]), ++*nnan;
    else if (fabsf(ref[i]) > 65504.0f) ok = isinf(got[i]) && (got[i] > 0) == (ref[i] > 0), ++*nbig;
    else ok = fabs((double)got[i] - ref[i]) <= 1.5e-3 * fabs(ref[i]) + 1e-4;
    if (!ok && bad++ < 5) print_error("%s [%zu]: gpu %.9g cpu %.9g\n", what, i, got[i], ref[i]);
  }
  if (bad) {
    print_error("%s: %zu of %zu wrong\n", what, bad, n);
    fail();
  }
}

/* NaN and overflow through the f16 kernels of the llama block (vector forms where C, F and hd
 * are multiples of 4 and the offsets of 8, as here; the per-element forms with
 * TEZGAH_WEBGPU_ACT16_VEC=0), each against the CPU on the same f16 inputs (af_check_special):
 * - swiglu_bwd: gate 8, up 1, dout 2·10^4: dup ≈ 1.6·10^5 overflows to +inf, dgate ≈ 2·10^4
 *   stays finite; a NaN dout makes both its outputs 0 (the seed's guard, as the CPU);
 * - rmsnorm_bwd: dinp 6·10^4 in row 1 pushed past 65504 (+inf), a NaN dout in row 2 makes that
 *   row's dinp NaN (through the row's dot product) and no other;
 * - rope: a pair of 6·10^4 at position 5 (pos0 5, angle 5 rad) rotates to ≈ 7.5·10^4 (inf), a
 *   NaN element makes its pair NaN.
 * xoff: the rmsnorm's x byte offset (8: the 8-byte kernels; 16 with C % 8 = 0: rmsnorm_v8). */
static void af_special(tz_backend *g, int N, int C, size_t xoff) {
  ot_ctx og, oc;
  ot_init(&og, g, 77);
  ot_init(&oc, cpu, 1);
  size_t nc = (size_t)N * C;
  int nbig, nnan;
  char what[96];
  /* swiglu_bwd */
  float *gu = malloc(2 * nc * sizeof(float)), *d = ot_randn(&og, nc, 1);
  for (int n = 0; n < N; n++)
    for (int f = 0; f < C; f++) gu[(size_t)n * 2 * C + f] = 8.0f, gu[(size_t)n * 2 * C + C + f] = 1.0f;
  for (size_t i = 0; i < nc; i++) d[i] = 20000.0f + (float)(i % 7);
  d[C + 3] = NAN;
  tz_slice ggu, cgu, gd, cd;
  af_up(&og, &oc, gu, 2 * nc, 0, &ggu, &cgu);
  af_up(&og, &oc, d, nc, 8, &gd, &cd);
  tz_slice gdgu = ot_buf(&og, NULL, 2 * nc * 2 + 64), cdgu = ot_buf(&oc, NULL, 2 * nc * 4);
  g->swiglu_bwd(g, gdgu, gd, ggu, N, C);
  cpu->swiglu_bwd(cpu, cdgu, cd, cgu, N, C);
  float *got = down16(&og, gdgu, 2 * nc), *ref = ot_get(&oc, cdgu, 2 * nc);
  snprintf(what, sizeof what, "act f16 swiglu_bwd overflow / NaN N%d F%d", N, C);
  af_check_special(got, ref, 2 * nc, what, &nbig, &nnan);
  assert_true(nbig == (int)nc - 1 && nnan == 0 && got[2 * C + 3] == 0.0f && got[2 * C + C + 3] == 0.0f);
  free(got), free(ref);
  /* rmsnorm_bwd (its dinp += on an f16 dinp; w, rstd fp32) */
  float *x = ot_randn(&og, nc, 1), *dout = ot_randn(&og, nc, 1), *dinp = ot_randn(&og, nc, 1), *w = ot_randn(&og, C, 1);
  for (int c = 0; c < C; c++) {
    w[c] = 1.0f + 0.01f * c;
    dinp[C + c] = 60000.0f, dout[C + c] = 20000.0f, x[C + c] = 0.001f;
  }
  dout[2 * C + 1] = NAN;
  tz_slice gx, cx, gdo, cdo, gdi, cdi;
  af_up(&og, &oc, x, nc, xoff, &gx, &cx);
  af_up(&og, &oc, dout, nc, 0, &gdo, &cdo);
  af_up(&og, &oc, dinp, nc, 16, &gdi, &cdi);
  tz_slice gw = up32(&og, w, C), cw = up32(&oc, w, C), gr = ot_buf(&og, NULL, N * 4), cr = ot_buf(&oc, NULL, N * 4);
  tz_slice ga = ot_buf(&og, NULL, nc * 2 + 64), ca = ot_buf(&oc, NULL, nc * 4);
  g->rmsnorm_fwd(g, ga, gr, gx, gw, N, C, 1e-5f);
  cpu->rmsnorm_fwd(cpu, ca, cr, cx, cw, N, C, 1e-5f);
  float *rs = ot_get(&og, gr, N); /* the same rstd on both */
  cpu->upload(cpu, cr, rs, N * 4);
  free(rs);
  float *zc = calloc((size_t)C, sizeof(float));
  tz_slice gdw = up32(&og, zc, C), cdw = up32(&oc, zc, C);
  g->rmsnorm_bwd(g, gdi, gdw, gdo, gx, gw, gr, N, C);
  cpu->rmsnorm_bwd(cpu, cdi, cdw, cdo, cx, cw, cr, N, C);
  got = down16(&og, gdi, nc), ref = ot_get(&oc, cdi, nc);
  snprintf(what, sizeof what, "act f16 rmsnorm_bwd overflow / NaN N%d C%d", N, C);
  af_check_special(got, ref, nc, what, &nbig, &nnan);
  assert_true(nbig == C && nnan == C);
  free(got), free(ref);
  /* rope on q | k | v heads of hd = C / 4 (2 q, 1 k, 1 v), positions 5.. */
  int hd = C / 4;
  float *q = ot_randn(&og, nc, 1);
  q[0] = q[1] = 60000.0f;         /* row 0 (position 5), head 0, pair 0 */
  q[(size_t)C + hd + 2] = NAN;    /* row 1, head 1, pair 1 */
  tz_slice gq, cq;
  af_up(&og, &oc, q, nc, 8, &gq, &cq);
  g->rope(g, gq, 1, N, 2, 1, hd, 5, 10000.0f, 1);
  cpu->rope(cpu, cq, 1, N, 2, 1, hd, 5, 10000.0f, 1);
  got = down16(&og, gq, nc), ref = ot_get(&oc, cq, nc);
  snprintf(what, sizeof what, "act f16 rope overflow / NaN N%d hd%d", N, hd);
  af_check_special(got, ref, nc, what, &nbig, &nnan);
  assert_true(nbig >= 1 && nnan == 2);
  free(got), free(ref);
  free(gu), free(d), free(x), free(dout), free(dinp), free(w), free(zc), free(q);
  ot_release(&og), ot_release(&oc);
}

/* crossentropy on f16 logits [N, Vp] (V real columns) at byte offset off, in place, against the
 * CPU fed the same f16 values (softmax_xent_v16 where the vector kernels apply, else the
 * per-element kernel; session 28's row-in-registers kernel, measured 6x slower on an H100 and
 * wrong there, is gone). Targets: ignored rows (-1 and V), column 0, V − 1 (in a partial last
 * group where V is not a multiple of the group), and others. Logits N(0, 3²) with one large row (a spread of ±60 around 40: the max subtracted
 * before exp matters). Bounds: act_f16_case's (losses 1e-5 relative + 1e-5; dlogits, stored in
 * f16, 1.5e-3 relative + 1e-4·dscale). */
static void af16_xent(tz_backend *g, int N, int V, int Vp, size_t off, uint64_t seed) {
  ot_ctx og, oc;
  ot_init(&og, g, seed);
  ot_init(&oc, cpu, 1);
  size_t n = (size_t)N * Vp;
  float *lg = ot_randn(&og, n, 3);
  for (int c = 0; c < Vp; c++) lg[c] = 40.0f + 60.0f * (float)sin(0.37 * c); /* row 0: large logits */
  int32_t *tg = malloc(sizeof(int32_t) * N);
  for (int i = 0; i < N; i++) {
    int k = i % 6;
    tg[i] = k == 1 ? -1 : k == 2 ? V : k == 3 ? V - 1 : k == 4 ? 0 : (int32_t)((i * 7919 + 13) % V);
  }
  round16(lg, n);
  tz_slice glg = up16(&og, lg, n, off), clg = up32(&oc, lg, n);
  tz_slice gtg = ot_buf(&og, tg, N * 4), ctg = ot_buf(&oc, tg, N * 4), gl = ot_buf(&og, NULL, N * 4),
           cl = ot_buf(&oc, NULL, N * 4);
  float ds = 1024.0f / N;
  g->crossentropy(g, gl, glg, gtg, N, V, Vp, ds);
  cpu->crossentropy(cpu, cl, clg, ctg, N, V, Vp, ds);
  char what[96];
  snprintf(what, sizeof what, "act f16 crossentropy losses N%d V%d Vp%d", N, V, Vp);
  af_check32(&og, gl, &oc, cl, N, what, 1e-5, 1e-5);
  snprintf(what, sizeof what, "act f16 crossentropy dlogits N%d V%d Vp%d", N, V, Vp);
  af_check(&og, glg, &oc, clg, n, what, 1.5e-3, 1e-4 * ds);
  free(lg), free(tg);
  ot_release(&og), ot_release(&oc);
}

static void test_act_f16_elem(void **state) {
  tz_backend *g = act_f16_backend();
  if (!g) skip();
  assert_int_equal(g->act, TZ_F16);
  printf("webgpu (f16 activations): %s\n", tz_webgpu_describe(g));
  /* the per-element f16 variant (offsets 2 and 4 bytes, Vp = V + 3: no vector kernel) */
  act_f16_case(g, 7, 37, 11, 14, 2, 4, 1);    /* odd sizes: the scalar forms, f16 pairs split across words */
  act_f16_case(g, 70, 300, 50, 53, 2, 4, 2);  /* C in (256, 1024]: the row-in-registers norms */
  act_f16_case(g, 33, 1100, 20, 23, 2, 4, 3); /* C > 1024: the loop norms */
  /* the vector kernels (wg_v16_ok): every op of the list there; V not a multiple of 4 (the
   * cross-entropy's partial last group), N not a multiple of the norms' 8 rows a workgroup or of
   * the dw / db chunk's two rows an iteration */
  act_f16_case(g, 70, 300, 50, 52, 0, 8, 4);
  long sw8 = tz_webgpu_swiglu_v8_calls(), sb8 = tz_webgpu_swiglu_bwd_v8_calls();
  act_f16_case(g, 17, 768, 3001, 3004, 8, 16, 5); /* GPT-2's C; Vp / 4 > 2·256: the cross-entropy's loops */
  assert_int_equal(tz_webgpu_swiglu_v8_calls(), sw8 + 1); /* F % 8 == 0: swiglu_fwd_v8 (16-byte) ran */
  assert_int_equal(tz_webgpu_swiglu_bwd_v8_calls(), sb8 + 1); /* and swiglu_bwd_v8 */
  /* the same shape on swiglu_fwd_v16 / ffn_swiglu_backward_v16 (TEZGAH_WEBGPU_SWIGLU_V8=0,
   * TEZGAH_WEBGPU_SWIGLU_BWD_V8=0), whose 8-byte paths they replace */
  setenv("TEZGAH_WEBGPU_SWIGLU_V8", "0", 1);
  setenv("TEZGAH_WEBGPU_SWIGLU_BWD_V8", "0", 1);
  act_f16_case(g, 17, 768, 3001, 3004, 8, 16, 8);
  unsetenv("TEZGAH_WEBGPU_SWIGLU_V8");
  unsetenv("TEZGAH_WEBGPU_SWIGLU_BWD_V8");
  assert_int_equal(tz_webgpu_swiglu_v8_calls(), sw8 + 1);
  assert_int_equal(tz_webgpu_swiglu_bwd_v8_calls(), sb8 + 1);
  act_f16_case(g, 12, 90, 36, 40, 8, 8, 6);       /* C % 4 = 2: norms, SwiGLU per element; add / GeLU / xent vector */
  /* the cross-entropy alone at more shapes: V = Vp, a partial last group of four (V 3001 of
   * 3004), GPT-2's vocabulary (50257 of 50304), logits at an offset of 8 bytes */
  af16_xent(g, 7, 2048, 2048, 0, 21);
  af16_xent(g, 13, 3001, 3008, 0, 22);
  af16_xent(g, 6, 50257, 50304, 0, 23);
  af16_xent(g, 6, 3001, 3004, 0, 24);
  af16_xent(g, 6, 3001, 3008, 8, 25);
  /* rope (the llama block's third f16 kernel; test_act_f16_attention has the per-element
   * variant's own cases): rope_v16 with six and eight heads rotated (the four-head loop and its
   * tail), positions past T; per element at hd % 4 == 2 and at an offset of 4 bytes */
  af16_rope(g, 2, 9, 4, 2, 16, 1, 0);
  af16_rope(g, 1, 37, 6, 2, 8, -1, 8);
  af16_rope(g, 2, 5, 3, 1, 6, 1, 0);
  af16_rope(g, 2, 5, 4, 2, 16, -1, 4);
  af_special(g, 9, 16, 8);
  /* TEZGAH_WEBGPU_ACT16_VEC=0: the per-element variant on the shapes above */
  setenv("TEZGAH_WEBGPU_ACT16_VEC", "0", 1);
  act_f16_case(g, 17, 768, 3001, 3004, 8, 16, 7);
  af16_rope(g, 1, 37, 6, 2, 8, -1, 8);
  af_special(g, 9, 16, 8);
  unsetenv("TEZGAH_WEBGPU_ACT16_VEC");
  g->destroy(g);
}

/* The f16 norms with 16-byte accesses (layernorm_v8 / rmsnorm_v8, webgpu_ops_elem.c nv8_nk) on one
 * shape against the CPU fed the same f16 values: layernorm fwd, bwd (dinp += from random values;
 * dw, db += from random values, fused into the row pass or not), rmsnorm fwd, bwd (the same).
 * Offsets in bytes: x (the norms' inp) xoff, dinp doff. v8: whether the v8 kernels must run
 * (their call counters, tz_webgpu_norm_v8_calls, checked either way: a shape they must decline
 * runs the kernels before, and one they must take is not allowed to fall back unnoticed); fused:
 * whether the backward must have fused the weight gradients. Bounds: act_f16_case's (the f16
 * outputs |err| <= 1.5e-3·|cpu| + 1e-4, dinp + 2e-4; rstd 1e-4 relative; dw / db 1e-3 relative
 * + 1e-3·sqrt(N): fp32 sums of the same values in another order). */
/* f16 bit patterns of x[0..n) (n even) uploaded to s (its offset a multiple of 4) */
static void up16_at(ot_ctx *o, tz_slice s, const float *x, size_t n) {
  uint16_t *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = tz_sgmat_f16(x[i]);
  o->be->upload(o->be, s, h, n * 2);
  free(h);
}
/* one: 0 each tensor in its own buffer; 1 x (the norms' inp), dout and dinp in one buffer, 4 KB
 * apart (own bindings of one buffer: the backward's read-only ones then read_write, "// rw"; a
 * merged binding, which the v8 kernels decline, needs a storage offset alignment above the
 * tensors' distance: lavapipe's is too small to make one without overlapping tensors) */
static void af16_norms1(tz_backend *g, int N, int C, size_t xoff, size_t doff, int v8f, int v8b, int fused,
                        int one, uint64_t seed) {
  ot_ctx og, oc;
  ot_init(&og, g, seed);
  ot_init(&oc, cpu, 1);
  size_t nc = (size_t)N * C;
  float *x = ot_randn(&og, nc, 2), *y = ot_randn(&og, nc, 1), *w = ot_randn(&og, C, 1), *b = ot_randn(&og, C, 1);
  float *d0 = ot_randn(&og, nc, 1), *g0 = ot_randn(&og, 2 * (size_t)C, 1);
  for (size_t i = 0; i < nc; i++) x[i] += 0.5f; /* a nonzero mean: the two-pass variance matters */
  tz_slice gx, cx, gy, cy, gd, cd;
  af_up(&og, &oc, x, nc, xoff, &gx, &cx);
  af_up(&og, &oc, y, nc, 0, &gy, &cy);
  af_up(&og, &oc, d0, nc, doff, &gd, &cd);
  if (one) { /* x, dout, dinp again, in one buffer (the same f16 values: af_up rounded them) */
    assert_true(nc % 8 == 0);
    size_t at1 = (nc * 2 + 4096 + 15) / 16 * 16;
    tz_slice big = ot_buf(&og, NULL, 3 * at1 + 64);
    gx = big, gy = tz_at(big, at1), gd = tz_at(big, 2 * at1);
    up16_at(&og, gx, x, nc), up16_at(&og, gy, y, nc), up16_at(&og, gd, d0, nc);
    xoff = 0, doff = 2 * at1;
  }
  tz_slice gw = up32(&og, w, C), cw = up32(&oc, w, C), gb = up32(&og, b, C), cb = up32(&oc, b, C);
  tz_slice ga = ot_buf(&og, NULL, nc * 2 + 64), ca = ot_buf(&oc, NULL, nc * 4);
  tz_slice gm = ot_buf(&og, NULL, N * 4), cm = ot_buf(&oc, NULL, N * 4), gr = ot_buf(&og, NULL, N * 4),
           cr = ot_buf(&oc, NULL, N * 4);
  tz_slice gdw = up32(&og, g0, 2 * C), cdw = up32(&oc, g0, 2 * C); /* dw | db, nonzero: += */
  long f0 = tz_webgpu_norm_v8_calls(0), b0 = tz_webgpu_norm_v8_calls(1), u0 = tz_webgpu_norm_v8_calls(2);
  char what[128];
  const char *tag = v8b ? (fused ? "v8 fused" : "v8") : v8f ? "v8 forward" : "declined";
  g->layernorm_fwd(g, ga, gm, gr, gx, gw, gb, N, C, 1e-5f);
  cpu->layernorm_fwd(cpu, ca, cm, cr, cx, cw, cb, N, C, 1e-5f);
  snprintf(what, sizeof what, "act f16 %s layernorm_fwd N%d C%d", tag, N, C);
  af_check(&og, ga, &oc, ca, nc, what, 1.5e-3, 1e-4);
  af_check32(&og, gm, &oc, cm, N, "act f16 layernorm mean", 1e-4, 1e-5);
  af_check32(&og, gr, &oc, cr, N, "act f16 layernorm rstd", 1e-4, 1e-5);
  g->layernorm_bwd(g, gd, gdw, tz_f32(gdw, C), gy, gx, gw, gm, gr, N, C);
  cpu->layernorm_bwd(cpu, cd, cdw, tz_f32(cdw, C), cy, cx, cw, cm, cr, N, C);
  snprintf(what, sizeof what, "act f16 %s layernorm_bwd dinp N%d C%d", tag, N, C);
  af_check(&og, gd, &oc, cd, nc, what, 1.5e-3, 2e-4);
  snprintf(what, sizeof what, "act f16 %s layernorm_bwd dw|db N%d C%d", tag, N, C);
  af_check32(&og, gdw, &oc, cdw, 2 * (size_t)C, what, 1e-3, 1e-3 * sqrt((double)N));
  /* rmsnorm: its dinp += starts from the GPU's f16 dinp on both, dw from the layernorm's dw */
  float *gdv = down16(&og, gd, nc);
  cpu->upload(cpu, cd, gdv, nc * 4);
  free(gdv);
  g->rmsnorm_fwd(g, ga, gr, gx, gw, N, C, 1e-5f);
  cpu->rmsnorm_fwd(cpu, ca, cr, cx, cw, N, C, 1e-5f);
  snprintf(what, sizeof what, "act f16 %s rmsnorm_fwd N%d C%d", tag, N, C);
  af_check(&og, ga, &oc, ca, nc, what, 1.5e-3, 1e-4);
  af_check32(&og, gr, &oc, cr, N, "act f16 rmsnorm rstd", 1e-4, 1e-5);
  g->rmsnorm_bwd(g, gd, gdw, gy, gx, gw, gr, N, C);
  cpu->rmsnorm_bwd(cpu, cd, cdw, cy, cx, cw, cr, N, C);
  snprintf(what, sizeof what, "act f16 %s rmsnorm_bwd dinp N%d C%d", tag, N, C);
  af_check(&og, gd, &oc, cd, nc, what, 1.5e-3, 2e-4);
  snprintf(what, sizeof what, "act f16 %s rmsnorm_bwd dw N%d C%d", tag, N, C);
  af_check32(&og, gdw, &oc, cdw, C, what, 1e-3, 1e-3 * sqrt((double)N));
  long f = tz_webgpu_norm_v8_calls(0) - f0, bw = tz_webgpu_norm_v8_calls(1) - b0, u = tz_webgpu_norm_v8_calls(2) - u0;
  printf("act f16 norms N %d C %d x off %zu dinp off %zu%s: v8 forwards %ld, backwards %ld (fused %ld)\n", N, C, xoff,
         doff, one ? " (one buffer)" : "", f, bw, u);
  if (f != 2 * v8f || bw != 2 * v8b || u != 2 * (v8b && fused)) {
    print_error("act f16 norms N %d C %d: %ld / %ld / %ld calls took the v8 forward / backward / fused path (want %d / "
                "%d / %d)\n", N, C, f, bw, u, 2 * v8f, 2 * v8b, 2 * (v8b && fused));
    fail();
  }
  free(x), free(y), free(w), free(b), free(d0), free(g0);
  ot_release(&og), ot_release(&oc);
}

static void af16_norms(tz_backend *g, int N, int C, size_t xoff, size_t doff, int v8, int fused, uint64_t seed) {
  af16_norms1(g, N, C, xoff, doff, v8, v8, fused, 0, seed);
}

/* The v8 norms' edges (af16_norms): C at 8 columns a group and NK groups a lane (C <= 128: the
 * path at 4 lanes, lavapipe's and the smallest subgroup size assumed here), N not a multiple of
 * the rows a workgroup (8 forward, 64 fused backward, TEZGAH_WEBGPU_NORM_ROWS=8 too), C 768 and
 * 1024 (the path where the subgroup size allows it: the H200, else a decline), a lane's
 * last group past the row (C / 8 not a multiple of the lanes), the unfused backward
 * (TEZGAH_WEBGPU_NORM_FUSE=0), the backward's tensors in one buffer (bound apart, read_write),
 * and the declines to the kernels before: C % 8 = 4, x 8 bytes off 16,
 * TEZGAH_WEBGPU_NORM_V8=0. */
static void test_act_f16_norms(void **state) {
  (void)state;
  tz_backend *g = act_f16_backend();
  if (!g) skip();
  assert_int_equal(g->act, TZ_F16);
  printf("webgpu (f16 activations): %s\n", tz_webgpu_describe(g));
  if (!strstr(tz_webgpu_describe(g), "reductions: subgroups")) {
    printf("SKIPPED: the adapter has no subgroups (the v8 norms need them)\n");
    g->destroy(g);
    skip();
  }
  af16_norms(g, 70, 64, 0, 16, 1, 1, 1);   /* two groups a lane at 4 lanes; 70 = 64 + 6 rows */
  af16_norms(g, 37, 120, 16, 0, 1, 1, 2);  /* 15 groups over 4 lanes: the fourth's last past the row */
  af16_norms(g, 9, 8, 0, 0, 1, 1, 3);      /* one group: the other lanes hold nothing */
  /* TZ_TEST_NORMS_FIRST=1: these three cases alone (tests/test_webgpu_mesa_cache.sh). Their
   * groups a lane, NK, are 2, 4, 1 at 4 lanes and 1, 2, 1 at 8: an 8-lane run's C 64 asks for
   * the NK 1 and its C 120 for the NK 2 WGSL that a 4-lane run compiled for C 8 and C 64, the
   * collision a cache shared across widths turned into wrong results (C 64 at 8 lanes, 4469 of
   * 4480 elements off). The other cases' pipelines run in test_webgpu_ops_act_f16. */
  const char *first = getenv("TZ_TEST_NORMS_FIRST");
  if (first && *first && strcmp(first, "0")) {
    g->destroy(g);
    return;
  }
  setenv("TEZGAH_WEBGPU_NORM_ROWS", "8", 1); /* 9 workgroups' partial rows */
  af16_norms(g, 67, 96, 0, 32, 1, 1, 4);
  unsetenv("TEZGAH_WEBGPU_NORM_ROWS");
  setenv("TEZGAH_WEBGPU_NORM_FUSE", "0", 1); /* the v8 row pass, dw / db apart */
  af16_norms(g, 67, 96, 16, 0, 1, 0, 5);
  unsetenv("TEZGAH_WEBGPU_NORM_FUSE");
  /* GPT-2's C 768 and C 1024: the v8 kernels where C / 8 <= 4 x the adapter's smallest subgroup
   * size (the H200's 32: three and four groups a lane), the kernels before at lavapipe's 4 */
  unsigned lmin = 0;
  const char *sl = strstr(tz_webgpu_describe(g), "reductions: subgroups (");
  assert_true(sl && sscanf(sl, "reductions: subgroups (%u", &lmin) == 1 && lmin > 0);
  af16_norms(g, 40, 768, 16, 0, 96 <= 4 * lmin, 1, 9);
  af16_norms(g, 12, 1024, 0, 16, 128 <= 4 * lmin, 1, 10);
  af16_norms1(g, 24, 64, 0, 0, 1, 1, 1, 1, 11); /* x, dout, dinp in one buffer: read_write bindings */
  af16_norms(g, 20, 68, 0, 0, 0, 0, 6);    /* C % 8 = 4: the 8-byte kernels */
  af16_norms(g, 20, 64, 8, 0, 0, 0, 7);    /* x 8 bytes off 16 */
  /* overflow to ±inf and NaN through rmsnorm_bwd_v8's dinp (af_special with x on 16 bytes) */
  long sf = tz_webgpu_norm_v8_calls(0), sb = tz_webgpu_norm_v8_calls(2);
  af_special(g, 9, 16, 16);
  sf = tz_webgpu_norm_v8_calls(0) - sf, sb = tz_webgpu_norm_v8_calls(2) - sb;
  printf("act f16 special values: v8 rmsnorm forwards %ld, fused backwards %ld\n", sf, sb);
  assert_true(sf == 1 && sb == 1);
  setenv("TEZGAH_WEBGPU_NORM_V8", "0", 1);
  af16_norms(g, 20, 64, 0, 0, 0, 0, 8);
  unsetenv("TEZGAH_WEBGPU_NORM_V8");
  g->destroy(g);
}

/* bias_bwd of an f16 dout (f16 activations) on each column-sum path, against the CPU fed the same
 * f16 values, db starting from random values (bias_bwd accumulates): colsum_partial_f16x8 (N a
 * multiple of 8, dout on 16 bytes: the default; M = 300 spans two full 128-row chunks, the
 * four-load loop, and a 44-row last chunk; N = 264 leaves most of the second workgroup's column
 * threads idle), and the fallbacks colsum_partial_f16 (dout 8 bytes off 16; N % 8 = 4;
 * TEZGAH_WEBGPU_COLSUM=0). Tolerance: test_act_f16_elem's parameter-gradient bound (fp32 sums of
 * the same f16 values: order only), rtol 1e-3, atol 1e-3·sqrt(M). */
static void test_act_f16_bias(void **state) {
  (void)state;
  tz_backend *g = act_f16_backend();
  if (!g) skip();
  assert_int_equal(g->act, TZ_F16);
  const struct {
    int M, N;
    size_t off;
    const char *colsum, *what;
  } cs[] = {{300, 264, 0, NULL, "x8"},
            {300, 264, 8, NULL, "dout 8 B off 16: colsum_partial_f16"},
            {300, 260, 0, NULL, "N % 8 = 4: colsum_partial_f16"},
            {300, 264, 0, "0", "TEZGAH_WEBGPU_COLSUM=0"},
            {17, 768, 16, NULL, "x8, one partial chunk"}};
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
    ot_ctx og, oc;
    ot_init(&og, g, 40 + i);
    ot_init(&oc, cpu, 1);
    size_t mn = (size_t)cs[i].M * cs[i].N;
    float *y = ot_randn(&og, mn, 1), *b0 = ot_randn(&og, (size_t)cs[i].N, 1);
    tz_slice gy, cy;
    af_up(&og, &oc, y, mn, cs[i].off, &gy, &cy);
    tz_slice gdb = up32(&og, b0, cs[i].N), cdb = up32(&oc, b0, cs[i].N);
    if (cs[i].colsum) setenv("TEZGAH_WEBGPU_COLSUM", cs[i].colsum, 1);
    g->bias_bwd(g, gdb, gy, cs[i].M, cs[i].N);
    unsetenv("TEZGAH_WEBGPU_COLSUM");
    cpu->bias_bwd(cpu, cdb, cy, cs[i].M, cs[i].N);
    char what[128];
    snprintf(what, sizeof what, "act f16 bias_bwd M%d N%d (%s)", cs[i].M, cs[i].N, cs[i].what);
    af_check32(&og, gdb, &oc, cdb, cs[i].N, what, 1e-3, 1e-3 * sqrt((double)cs[i].M));
    free(y), free(b0);
    ot_release(&og), ot_release(&oc);
  }
  g->destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_ops), cmocka_unit_test(test_embed), cmocka_unit_test(test_embed_bwd_sorted),
      cmocka_unit_test(test_norms),      cmocka_unit_test(test_matmul),      cmocka_unit_test(test_matmul_sgmat),
      cmocka_unit_test(test_matmul_swiglu), cmocka_unit_test(test_rope),       cmocka_unit_test(test_attention),
      cmocka_unit_test(test_attention_flash), cmocka_unit_test(test_attention_flash_pf),
      cmocka_unit_test(test_attention_hd),
      cmocka_unit_test(test_attention_kvcache), cmocka_unit_test(test_activations),
      cmocka_unit_test(test_crossentropy_sumsq), cmocka_unit_test(test_crossentropy_extremes),
      cmocka_unit_test(test_adamw),
      cmocka_unit_test(test_w16),        cmocka_unit_test(test_act16), cmocka_unit_test(test_attention_sgmat),
      cmocka_unit_test(test_act_f16_elem), cmocka_unit_test(test_act_f16_norms), cmocka_unit_test(test_act_f16_bias),
      cmocka_unit_test(test_act_f16_matmul),
      cmocka_unit_test(test_act_f16_attention),
      cmocka_unit_test(test_act_f16_attention_nopack),
      cmocka_unit_test(test_fill_vec), cmocka_unit_test(test_attention_d_prep),
      /* the sweep (sweep_on): skipped unless TEZGAH_TEST_SWEEP=1 or their own switch */
      cmocka_unit_test(test_matmul_sweep), cmocka_unit_test(test_attention_flash_variants),
      cmocka_unit_test(test_attention_flash_variants_mixes), cmocka_unit_test(test_attention_flash_variants_arena),
      cmocka_unit_test(test_attention_flash_long),
  };
  /* TZ_TEST_FILTER / TZ_TEST_SKIP: comma-separated glob patterns (e.g. "test_matmul*,test_rope"):
   * run only the cases matching one of the first, none of the second (ctest's entries of this
   * program, tests/CMakeLists.txt) */
  struct CMUnitTest sel[sizeof tests / sizeof *tests];
  size_t n = 0;
  const char *only = getenv("TZ_TEST_FILTER"), *skip_ = getenv("TZ_TEST_SKIP");
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++)
    if ((!only || name_in(tests[i].name, only)) && !(skip_ && name_in(tests[i].name, skip_))) sel[n++] = tests[i];
  return _cmocka_run_group_tests("test_webgpu_ops", sel, n, setup, teardown);
}
