/* The CUDA elementwise / norm / loss / optimizer kernels against the CPU backend, on fresh
 * random inputs, in both precisions (--precision fp32 and bf16).
 *
 * Each case uploads the same host tensors to the CPU (fp32) and the CUDA backend ("act"
 * tensors in be->act: bf16 values are rounded on the host first and the CPU gets the same
 * rounded values), runs the op and compares every output. Weight ("W") arguments are
 * uploaded as act tensors into plain buffers (tzc_w reads a buffer that is not the registered
 * parameter buffer as it is); the registered bf16 mirror is exercised by test_adamw_mirror.
 * Every case runs twice: tensors at offset 0 (16-byte aligned: the vector paths) and at an
 * odd element offset (the scalar paths). Shapes are odd on purpose (C not a multiple of 8,
 * N odd, several row chunks in the column sums, token runs longer than the unroll).
 *
 * Tolerances. fp32 mode: |gpu − cpu| ≤ max(atol, rtol·|cpu|) (ot_close); bf16 mode:
 * |gpu − cpu| ≤ atol + rtol·|cpu| (ct_close). An act output in bf16 is the fp32 result
 * rounded once (≤ 2^-9 relative), hence rtol 5e-3 for act outputs in bf16; fp32 outputs
 * (statistics, parameter gradients, losses) see identical inputs in both modes.
 *                                 fp32 rtol / atol      bf16 rtol / atol
 *   embed_fwd out                 1e-6 / 1e-7           5e-3 / 1e-6
 *   embed_bwd dwte, dwpe          1e-6 / 1e-6 (same order of adds as the CPU: exact)
 *   layernorm/rmsnorm fwd out     1e-5 / 1e-5           5e-3 / 1e-4
 *     mean, rstd                  1e-5 / 1e-5           1e-5 / 1e-5
 *   norm bwd dinp (+=)            1e-4 / 2e-5           5e-3 / 1e-4
 *     dw, db (+=)                 |Δ| ≤ 2e-5·(|initial| + Σ_rows |term|) + 1e-6, both modes
 *   bias_bwd db                   the same bound (terms: dout)
 *   rope                          1e-5 / 2e-6           5e-3 / 1e-5
 *   gelu_fwd, swiglu fwd/bwd      1e-5 / 1e-6           5e-3 / 1e-5
 *   gelu_bwd                      1e-5 / 1e-5           5e-3 / 1e-5
 *   add (out aliases a)           1e-7 / 0              5e-3 / 1e-6
 *   crossentropy losses           1e-5 / 1e-6           1e-5 / 1e-5
 *     dlogits                     1e-5 / 1e-6           5e-3 / 1e-7
 *   crossentropy extremes         vs float64 of the (rounded) logits: loss and dlogits
 *                                 max(2e-6, 1e-6·|ref|) in fp32; 1e-6 + 5e-3·|ref| in bf16
 *   sum_sq                        1e-6 (fp64 accumulation on both sides)
 *   adamw params, m, v            1e-6 / 1e-7 (the CPU's operation order: exact expected)
 *   adamw bf16 mirror             exactly bf16(params after the step)
 *   layernorm_bwd_rb              as layernorm_bwd; dbias as bias_bwd (terms: the dinp coming in)
 * Determinism (test_determinism): embed_bwd, layernorm_bwd, rmsnorm_bwd, bias_bwd, sum_sq and
 * crossentropy run twice on the GPU give bit-identical outputs; test_layernorm_forms: the same for
 * layernorm_bwd_rb and every TEZGAH_CUDA_LN_WARPS form (dinp bit-identical to the default's).
 * Without a CUDA build, driver or GPU: SKIPPED, exit 77 (TEZGAH_CUDA_REQUIRED=1 makes it fail). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cuda_testutil.h"
#ifdef TZ_HAVE_CUDA
#include "backend/cuda/cuda_internal.h"
#endif

static tz_backend *cpu, *gpus[2]; /* fp32, bf16 */

static int setup(void **state) {
  gpus[0] = ct_cuda("fp32");
  gpus[1] = ct_cuda("bf16");
  cpu = tz_backend_create("cpu", 2, NULL);
  assert_non_null(cpu);
  return 0;
}
static int teardown(void **state) {
  gpus[1]->destroy(gpus[1]);
  gpus[0]->destroy(gpus[0]);
  cpu->destroy(cpu);
  return 0;
}

/* ---- twin tensors ---- */
enum { K_ACT, K_F32, K_I32 };
#define MAXT 16
typedef struct {
  int kind;
  size_t n;
  float *h;      /* host values (int32 bit patterns for K_I32) */
  float *out[2]; /* final contents on backend 0 and 1 */
} ten;
typedef struct {
  ten t[MAXT];
  int nt;
  tz_rng rng;
} kase;

static void k_init(kase *k, uint64_t seed) {
  memset(k, 0, sizeof *k);
  tz_rng_seed(&k->rng, seed, 13);
}
static int k_add(kase *k, int kind, size_t n) {
  assert_true(k->nt < MAXT);
  ten *t = &k->t[k->nt];
  t->kind = kind;
  t->n = n;
  t->h = calloc(n ? n : 1, sizeof(float));
  return k->nt++;
}
static int k_randn(kase *k, int kind, size_t n, float scale) {
  int i = k_add(k, kind, n);
  for (size_t j = 0; j < n; j++) k->t[i].h[j] = tz_rng_normal(&k->rng) * scale;
  return i;
}
static int k_ints(kase *k, const int32_t *v, size_t n) {
  int i = k_add(k, K_I32, n);
  memcpy(k->t[i].h, v, n * 4);
  return i;
}
static void k_clear_out(kase *k) {
  for (int i = 0; i < k->nt; i++) free(k->t[i].out[0]), free(k->t[i].out[1]), k->t[i].out[0] = k->t[i].out[1] = NULL;
}
static void k_free(kase *k) {
  k_clear_out(k);
  for (int i = 0; i < k->nt; i++) free(k->t[i].h);
}

typedef void (*opfn)(tz_backend *be, tz_slice *s, const int *d);

/* Run op on bes[0] and bes[1] with every tensor at element offset `pad`; afterwards
 * t[i].out[0/1] hold every tensor's final contents as floats. Act tensors are rounded to the
 * act dtype of the GPU involved first (in the host copy: both backends see those values). */
static void k_run2(kase *k, tz_backend *b0, tz_backend *b1, opfn f, const int *dims, size_t pad) {
  tz_backend *bes[2] = {b0, b1};
  tz_backend *gpu = b1;
  for (int i = 0; i < k->nt; i++)
    if (k->t[i].kind == K_ACT) ct_round(gpu, k->t[i].h, k->t[i].n);
  k_clear_out(k);
  for (int b = 0; b < 2; b++) {
    tz_backend *be = bes[b];
    tz_buf *bufs[MAXT];
    tz_slice s[MAXT];
    for (int i = 0; i < k->nt; i++) {
      ten *t = &k->t[i];
      size_t es = t->kind == K_ACT ? tz_dtype_size(be->act) : 4;
      bufs[i] = be->alloc(be, (t->n + pad + 8) * 4, "test");
      assert_non_null(bufs[i]);
      s[i] = (tz_slice){bufs[i], pad * es};
      if (t->kind == K_ACT && be->act == TZ_BF16) {
        uint16_t *h = malloc((t->n + 1) * 2);
        for (size_t j = 0; j < t->n; j++) h[j] = ct_f32_to_bf16(t->h[j]);
        be->upload(be, s[i], h, t->n * 2);
        free(h);
      } else {
        be->upload(be, s[i], t->h, t->n * 4);
      }
    }
    f(be, s, dims);
    for (int i = 0; i < k->nt; i++) {
      ten *t = &k->t[i];
      t->out[b] = malloc((t->n + 1) * 4);
      if (t->kind == K_ACT)
        be->download_act(be, t->out[b], s[i], t->n);
      else
        be->download(be, t->out[b], s[i], t->n * 4);
    }
    for (int i = 0; i < k->nt; i++) be->free(be, bufs[i]);
  }
}
static void k_run(kase *k, tz_backend *gpu, opfn f, const int *dims, size_t pad) {
  k_run2(k, cpu, gpu, f, dims, pad);
}

/* Compare tensor i (backend 1 against backend 0) with the fp32- or bf16-mode tolerance. */
static void k_check(kase *k, tz_backend *gpu, int i, const char *what, double r32, double a32, double r16,
                    double a16) {
  char msg[200];
  snprintf(msg, sizeof msg, "%s [%s]", what, tz_dtype_name(gpu->act));
  double *ref = ot_dbl(k->t[i].out[0], k->t[i].n);
  if (gpu->act == TZ_BF16)
    ct_close(msg, k->t[i].out[1], ref, k->t[i].n, r16, a16);
  else
    ot_close(msg, k->t[i].out[1], ref, k->t[i].n, r32, a32);
  free(ref);
}
/* Column sums (parameter gradients): |gpu − cpu| ≤ rel·mag[c] + 1e-6, mag[c] = |initial value| +
 * Σ_rows |term| (the CPU sums rows in sequence, the GPU in chunks: their rounding differs by
 * up to ~n·2^-24·Σ|terms| in the worst case; a missing or doubled row is off by a whole term). */
static void k_check_sum(kase *k, tz_backend *gpu, int i, const char *what, const double *mag, double rel) {
  char msg[200];
  snprintf(msg, sizeof msg, "%s [%s]", what, tz_dtype_name(gpu->act));
  for (size_t c = 0; c < k->t[i].n; c++) {
    double e = fabs((double)k->t[i].out[1][c] - k->t[i].out[0][c]), bound = rel * mag[c] + 1e-6;
    if (!(e <= bound)) {
      print_error("%s [%zu]: gpu %.9g cpu %.9g (bound %.3g)\n", msg, c, k->t[i].out[1][c], k->t[i].out[0][c], bound);
      fail();
    }
  }
}

/* Tensor i bit-identical on both runs. */
static void k_same(kase *k, int i, const char *what, tz_backend *gpu) {
  if (memcmp(k->t[i].out[0], k->t[i].out[1], k->t[i].n * 4) != 0) {
    print_error("%s [%s]: two runs differ\n", what, tz_dtype_name(gpu->act));
    fail();
  }
}

static const size_t PADS[2] = {0, 3}; /* aligned (vector paths), odd (scalar paths) */

/* ---- embedding ---- */
static void op_embed(tz_backend *be, tz_slice *s, const int *d) {
  tz_slice wpe = d[4] ? s[3] : TZ_NONE, dwpe = d[4] ? s[5] : TZ_NONE;
  be->embed_fwd(be, s[0], s[1], s[2], wpe, d[0], d[1], d[2], d[3]);
  be->embed_bwd(be, s[4], dwpe, s[6], s[1], d[0], d[1], d[2], d[3]);
}
static void embed_case(kase *k, int B, int T, int C, int V, int wpe, uint64_t seed) {
  int N = B * T;
  k_init(k, seed);
  int32_t *tok = malloc(N * 4);
  for (int i = 0; i < N; i++) tok[i] = (int32_t)tz_rng_below(&k->rng, V);
  tok[N / 3] = -1, tok[N / 2] = V; /* invalid ids: zero rows, no gradient */
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 0 out */
  k_ints(k, tok, N);                   /* 1 tok */
  k_randn(k, K_ACT, (size_t)V * C, 1); /* 2 wte */
  k_randn(k, K_ACT, (size_t)T * C, 1); /* 3 wpe */
  k_randn(k, K_F32, (size_t)V * C, 1); /* 4 dwte (+=) */
  k_randn(k, K_F32, (size_t)T * C, 1); /* 5 dwpe (+=) */
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 6 dout */
  free(tok);
}
static void test_embed(void **state) {
  /* B, T, C, V: odd C; C multiple of 8; few tokens (runs of > 8 rows per token); C > 128·8 */
  static const int shapes[][4] = {{3, 7, 19, 13}, {2, 9, 64, 13}, {4, 50, 40, 5}, {2, 5, 1032, 7}};
  for (int g = 0; g < 2; g++)
    for (int sh = 0; sh < 4; sh++)
      for (int wpe = 0; wpe < 2; wpe++)
        for (int p = 0; p < 2; p++) {
          const int *x = shapes[sh];
          kase k;
          embed_case(&k, x[0], x[1], x[2], x[3], wpe, 100 + sh * 4 + wpe);
          int d[] = {x[0], x[1], x[2], x[3], wpe};
          k_run(&k, gpus[g], op_embed, d, PADS[p]);
          k_check(&k, gpus[g], 0, "embed_fwd", 1e-6, 1e-7, 5e-3, 1e-6);
          k_check(&k, gpus[g], 4, "embed_bwd dwte", 1e-6, 1e-6, 1e-6, 1e-6);
          if (wpe) k_check(&k, gpus[g], 5, "embed_bwd dwpe", 1e-6, 1e-6, 1e-6, 1e-6);
          k_free(&k);
        }
}

/* ---- norms (each op on its own inputs, so tolerances do not compound) ---- */
/* 0 out 1 mean 2 rstd 3 inp 4 w 5 b | 6 dinp 7 dw 8 db 9 dout 10 mean_in 11 rstd_in
 * | 12 rms out 13 rms rstd | 14 rms dinp 15 rms dw */
static void op_norms(tz_backend *be, tz_slice *s, const int *d) {
  int N = d[0], C = d[1];
  be->layernorm_fwd(be, s[0], s[1], s[2], s[3], s[4], s[5], N, C, 1e-5f);
  be->layernorm_bwd(be, s[6], s[7], s[8], s[9], s[3], s[4], s[10], s[11], N, C);
  be->rmsnorm_fwd(be, s[12], s[13], s[3], s[4], N, C, 1e-5f);
  be->rmsnorm_bwd(be, s[14], s[15], s[9], s[3], s[4], s[11], N, C);
}
static void norms_case(kase *k, int N, int C, uint64_t seed) {
  k_init(k, seed);
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 0 out */
  k_randn(k, K_F32, N, 1);             /* 1 mean */
  k_randn(k, K_F32, N, 1);             /* 2 rstd */
  int x = k_randn(k, K_ACT, (size_t)N * C, 2);
  for (size_t i = 0; i < (size_t)N * C; i++) k->t[x].h[i] += 0.3f; /* nonzero mean */
  k_randn(k, K_ACT, C, 1);             /* 4 w */
  k_randn(k, K_ACT, C, 1);             /* 5 b */
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 6 dinp (+=) */
  k_randn(k, K_F32, C, 1);             /* 7 dw (+=) */
  k_randn(k, K_F32, C, 1);             /* 8 db (+=) */
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 9 dout */
  k_randn(k, K_F32, N, 0.3f);          /* 10 saved mean */
  int r = k_randn(k, K_F32, N, 0.2f);  /* 11 saved rstd > 0 */
  for (int i = 0; i < N; i++) k->t[r].h[i] = fabsf(k->t[r].h[i]) + 0.3f;
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 12 rms out */
  k_randn(k, K_F32, N, 1);             /* 13 rms rstd */
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 14 rms dinp (+=) */
  k_randn(k, K_F32, C, 1);             /* 15 rms dw (+=) */
}
static void test_norms(void **state) {
  /* odd C; C % 8 = 4 (fp32 vectors, bf16 scalars); GPT-2's C; llama-large C; many row chunks;
   * GPT-2 774M's and 1.5B's C (layernorm_bwd's one-pass kernel with 5 and 7 vectors per lane,
   * the last partly filled) and 350M's over many chunks */
  static const int shapes[][2] = {{7, 37}, {70, 300}, {33, 768}, {3, 8192}, {301, 64},
                                  {21, 1280}, {19, 1600}, {4099, 1024}};
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
  for (int g = 0; g < 2; g++)
    for (int sh = 0; sh < nshapes; sh++)
      for (int p = 0; p < 2; p++) {
        kase k;
        norms_case(&k, shapes[sh][0], shapes[sh][1], 200 + sh);
        k_run(&k, gpus[g], op_norms, shapes[sh], PADS[p]);
        tz_backend *G = gpus[g];
        k_check(&k, G, 0, "layernorm_fwd out", 1e-5, 1e-5, 5e-3, 1e-4);
        k_check(&k, G, 1, "layernorm_fwd mean", 1e-5, 1e-5, 1e-5, 1e-5);
        k_check(&k, G, 2, "layernorm_fwd rstd", 1e-5, 1e-5, 1e-5, 1e-5);
        k_check(&k, G, 6, "layernorm_bwd dinp", 1e-4, 2e-5, 5e-3, 1e-4);
        int N = shapes[sh][0], C = shapes[sh][1];
        double *mw = calloc(C, 8), *mb = calloc(C, 8), *mr = calloc(C, 8);
        const float *x = k.t[3].h, *dy = k.t[9].h, *mu = k.t[10].h, *rs = k.t[11].h;
        for (int c = 0; c < C; c++) mw[c] = fabs(k.t[7].h[c]), mb[c] = fabs(k.t[8].h[c]), mr[c] = fabs(k.t[15].h[c]);
        for (int n = 0; n < N; n++)
          for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            mw[c] += fabs((double)dy[i] * (x[i] - mu[n]) * rs[n]);
            mb[c] += fabs((double)dy[i]);
            mr[c] += fabs((double)dy[i] * x[i] * rs[n]);
          }
        k_check_sum(&k, G, 7, "layernorm_bwd dw", mw, 2e-5);
        k_check_sum(&k, G, 8, "layernorm_bwd db", mb, 2e-5);
        k_check(&k, G, 12, "rmsnorm_fwd out", 1e-5, 1e-5, 5e-3, 1e-4);
        k_check(&k, G, 13, "rmsnorm_fwd rstd", 1e-5, 1e-5, 1e-5, 1e-5);
        k_check(&k, G, 14, "rmsnorm_bwd dinp", 1e-4, 2e-5, 5e-3, 1e-4);
        k_check_sum(&k, G, 15, "rmsnorm_bwd dw", mr, 2e-5);
        free(mw), free(mb), free(mr);
        k_free(&k);
      }
}

/* ---- layernorm_bwd_rb: layernorm_bwd and the bias gradient of the dinp coming in ----
 * 0 dinp (+=) 1 dw 2 db 3 dbias 4 dout 5 inp 6 w 7 mean 8 rstd | 9 bias_bwd db 10 its dout [N, 3C]
 * The CPU (no layernorm_bwd_rb) runs what the model runs without it: bias_bwd of dinp, then
 * layernorm_bwd. */
static void op_rb(tz_backend *be, tz_slice *s, const int *d) {
  int N = d[0], C = d[1];
  if (be->layernorm_bwd_rb) {
    be->layernorm_bwd_rb(be, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], N, C);
  } else {
    be->bias_bwd(be, s[3], s[0], N, C);
    be->layernorm_bwd(be, s[0], s[1], s[2], s[4], s[5], s[6], s[7], s[8], N, C);
  }
  be->bias_bwd(be, s[9], s[10], N, 3 * C);
}
static void rb_case(kase *k, int N, int C, uint64_t seed) {
  k_init(k, seed);
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 0 dinp (+=) */
  k_randn(k, K_F32, C, 1);             /* 1 dw (+=) */
  k_randn(k, K_F32, C, 1);             /* 2 db (+=) */
  k_randn(k, K_F32, C, 1);             /* 3 dbias (+=) */
  k_randn(k, K_ACT, (size_t)N * C, 1); /* 4 dout */
  int x = k_randn(k, K_ACT, (size_t)N * C, 2);
  for (size_t i = 0; i < (size_t)N * C; i++) k->t[x].h[i] += 0.3f; /* 5 inp, nonzero mean */
  k_randn(k, K_ACT, C, 1);             /* 6 w */
  k_randn(k, K_F32, N, 0.3f);          /* 7 saved mean */
  int r = k_randn(k, K_F32, N, 0.2f);  /* 8 saved rstd > 0 */
  for (int i = 0; i < N; i++) k->t[r].h[i] = fabsf(k->t[r].h[i]) + 0.3f;
  k_randn(k, K_F32, 3 * C, 1);             /* 9 bias_bwd db (+=) */
  k_randn(k, K_ACT, (size_t)N * 3 * C, 1); /* 10 its dout */
}
/* The forms of the one-pass LayerNorm backward (backend_cuda.c's switches, read when the backend
 * is created): name, variable, value. */
static const char *const RB_VARIANTS[][3] = {
    {"default", NULL, NULL},
    {"TEZGAH_CUDA_LN_WARPS=2", "TEZGAH_CUDA_LN_WARPS", "2"},
    {"TEZGAH_CUDA_LN_WARPS=4", "TEZGAH_CUDA_LN_WARPS", "4"},
    {"TEZGAH_CUDA_LN_WARPS=8", "TEZGAH_CUDA_LN_WARPS", "8"},
};
enum { N_RB_VARIANTS = (int)(sizeof RB_VARIANTS / sizeof RB_VARIANTS[0]) };
static tz_backend *rb_backend(int v, const char *precision) {
  if (!RB_VARIANTS[v][1]) return ct_cuda(precision);
  char *saved = ct_env_set(RB_VARIANTS[v][1], RB_VARIANTS[v][2]);
  tz_backend *be = ct_cuda(precision);
  ct_env_restore(RB_VARIANTS[v][1], saved);
  return be;
}
/* Against the CPU with layernorm_bwd's tolerances (the header's table): dinp 1e-4 / 2e-5 (fp32),
 * 5e-3 / 1e-4 (bf16); dw, db and dbias (bias_bwd's bound, terms: the dinp coming in) within
 * 2e-5·(|initial| + Σ_rows |term|) + 1e-6. Shapes: C = 1600 and 768 (the one-pass kernel: bf16
 * both, fp32 768; also a chunk count above 1), odd C and C = 3000 (the fallback: the column sum of
 * dinp first, then the rows kernel), each aligned and at an odd offset (the fallback's scalar
 * path); which path ran is checked by tz_cuda_ln_rb_calls. Every variant of RB_VARIANTS. */
/* Whether layernorm_bwd_rb takes the one-pass kernel on G (layernorm.cu's conditions): rows on
 * 16 bytes, C % W == 0, C ≤ 8·32·W, and its 3·nw·C fp32 accumulators within the device's opt-in
 * shared memory, nw = TEZGAH_CUDA_LN_WARPS or 4 where they fit 48 KB, else 2 (8 warps at C 1600
 * take 150 KB: more than sm_86/89's 99 KB). */
static int rb_fused(tz_backend *G, int C, int pad) {
#ifdef TZ_HAVE_CUDA
  int W = G->act == TZ_BF16 ? 8 : 4, nw = tzc(G)->ln_warps ? tzc(G)->ln_warps : 3 * 4 * C * 4 <= 48 * 1024 ? 4 : 2;
  return pad == 0 && C % W == 0 && C <= 8 * 32 * W && (long)3 * nw * C * 4 <= tzc(G)->smem_optin;
#else
  (void)G, (void)C, (void)pad;
  return 0;
#endif
}
static void test_layernorm_rb(void **state) {
  static const int shapes[][2] = {{7, 37}, {70, 768}, {19, 1600}, {600, 1600}, {33, 3000}};
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
  for (int v = 0; v < N_RB_VARIANTS; v++)
    for (int g = 0; g < 2; g++) {
      tz_backend *G = rb_backend(v, g ? "bf16" : "fp32");
      assert_non_null(G->layernorm_bwd_rb);
      print_message("  layernorm_bwd_rb [%s] %s\n", tz_dtype_name(G->act), RB_VARIANTS[v][0]);
      for (int sh = 0; sh < nshapes; sh++)
        for (int p = 0; p < 2; p++) {
          int N = shapes[sh][0], C = shapes[sh][1];
          int fused = rb_fused(G, C, PADS[p]);
          long before = tz_cuda_ln_rb_calls(fused);
          kase k;
          rb_case(&k, N, C, 700 + sh);
          k_run(&k, G, op_rb, shapes[sh], PADS[p]);
          assert_int_equal(tz_cuda_ln_rb_calls(fused), before + 1);
          k_check(&k, G, 0, "layernorm_bwd_rb dinp", 1e-4, 2e-5, 5e-3, 1e-4);
          double *mw = calloc(C, 8), *mb = calloc(C, 8), *mr = calloc(C, 8), *mq = calloc(3 * C, 8);
          const float *x = k.t[5].h, *dy = k.t[4].h, *mu = k.t[7].h, *rs = k.t[8].h, *di = k.t[0].h;
          for (int c = 0; c < C; c++) mw[c] = fabs(k.t[1].h[c]), mb[c] = fabs(k.t[2].h[c]), mr[c] = fabs(k.t[3].h[c]);
          for (int c = 0; c < 3 * C; c++) mq[c] = fabs(k.t[9].h[c]);
          for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
              size_t i = (size_t)n * C + c;
              mw[c] += fabs((double)dy[i] * (x[i] - mu[n]) * rs[n]);
              mb[c] += fabs((double)dy[i]);
              mr[c] += fabs((double)di[i]);
            }
          for (size_t i = 0; i < (size_t)N * 3 * C; i++) mq[i % (3 * C)] += fabs(k.t[10].h[i]);
          k_check_sum(&k, G, 1, "layernorm_bwd_rb dw", mw, 2e-5);
          k_check_sum(&k, G, 2, "layernorm_bwd_rb db", mb, 2e-5);
          k_check_sum(&k, G, 3, "layernorm_bwd_rb dbias", mr, 2e-5);
          k_check_sum(&k, G, 9, "bias_bwd db", mq, 2e-5);
          free(mw), free(mb), free(mr), free(mq);
          k_free(&k);
        }
      G->destroy(G);
    }
}
/* Bit-identity and determinism of the forms: each variant run twice on one backend gives the same
 * bits; LN_WARPS changes the partial sums' grouping (dw, db, dbias may differ in the last bits; dinp is
 * per row and must not). Also the plain layernorm_bwd (dinp, dw, db) and rmsnorm_bwd's column sum. */
static void op_forms(tz_backend *be, tz_slice *s, const int *d) {
  op_rb(be, s, d);
  int N = d[0], C = d[1];
  be->layernorm_bwd(be, s[11], s[12], s[13], s[4], s[5], s[6], s[7], s[8], N, C);
  be->rmsnorm_bwd(be, s[14], s[15], s[4], s[5], s[6], s[8], N, C);
}
static void test_layernorm_forms(void **state) {
  static const int shapes[][2] = {{600, 1600}, {301, 768}, {45, 37}};
  for (int g = 0; g < 2; g++) {
    tz_backend *base = rb_backend(0, g ? "bf16" : "fp32");
    for (int v = 0; v < N_RB_VARIANTS; v++) {
      tz_backend *V = v ? rb_backend(v, g ? "bf16" : "fp32") : base;
      int same_bits = !RB_VARIANTS[v][1]; /* every other form sets TEZGAH_CUDA_LN_WARPS */
      for (int sh = 0; sh < 3; sh++)
        for (int rep = 0; rep < 2; rep++) { /* rep 0: V twice (determinism); 1: base against V */
          int N = shapes[sh][0], C = shapes[sh][1];
          kase k;
          rb_case(&k, N, C, 800 + sh);
          k_randn(&k, K_ACT, (size_t)N * C, 1); /* 11 layernorm_bwd dinp (+=) */
          k_randn(&k, K_F32, C, 1);             /* 12 dw */
          k_randn(&k, K_F32, C, 1);             /* 13 db */
          k_randn(&k, K_ACT, (size_t)N * C, 1); /* 14 rmsnorm_bwd dinp (+=) */
          k_randn(&k, K_F32, C, 1);             /* 15 its dw */
          k_run2(&k, rep ? base : V, V, op_forms, shapes[sh], 0);
          static const char *const names[] = {"rb dinp", "rb dw",   "rb db",         "rb dbias",       0, 0, 0, 0, 0,
                                              "bias_bwd db", 0, "layernorm_bwd dinp", "layernorm_bwd dw",
                                              "layernorm_bwd db", "rmsnorm_bwd dinp", "rmsnorm_bwd dw"};
          for (int t = 0; t < 16; t++) {
            if (!names[t]) continue;
            int rowwise = t == 0 || t == 11 || t == 14;
            if (rep == 0 || same_bits || rowwise) {
              char what[160];
              snprintf(what, sizeof what, "%s (%s%s, C %d)", names[t], RB_VARIANTS[v][0], rep ? " vs default" : " twice", C);
              k_same(&k, t, what, V);
            }
          }
          k_free(&k);
        }
      if (v) V->destroy(V);
    }
    base->destroy(base);
  }
}

/* ---- bias_bwd ---- */
static void op_bias(tz_backend *be, tz_slice *s, const int *d) { be->bias_bwd(be, s[0], s[1], d[0], d[1]); }
static void test_bias_bwd(void **state) {
  static const int shapes[][2] = {{70, 33}, {1, 300}, {300, 768}, {5000, 3}};
  for (int g = 0; g < 2; g++)
    for (int sh = 0; sh < 4; sh++)
      for (int p = 0; p < 2; p++) {
        int M = shapes[sh][0], N = shapes[sh][1];
        kase k;
        k_init(&k, 300 + sh);
        k_randn(&k, K_F32, N, 1);
        k_randn(&k, K_ACT, (size_t)M * N, 1);
        k_run(&k, gpus[g], op_bias, shapes[sh], PADS[p]);
        double *mag = calloc(N, 8);
        for (int c = 0; c < N; c++) mag[c] = fabs(k.t[0].h[c]);
        for (size_t i = 0; i < (size_t)M * N; i++) mag[i % N] += fabs(k.t[1].h[i]);
        k_check_sum(&k, gpus[g], 0, "bias_bwd db", mag, 2e-5);
        free(mag);
        k_free(&k);
      }
}

/* ---- rope ---- */
static void op_rope(tz_backend *be, tz_slice *s, const int *d) {
  be->rope(be, s[0], d[0], d[1], d[2], d[3], d[4], d[5], 10000.0f, d[6]);
}
static void test_rope(void **state) {
  /* B, T, n_head, n_kv_head, head_dim, pos0 (large angles in the second) */
  static const int shapes[][6] = {{2, 9, 4, 2, 16, 5}, {1, 33, 2, 1, 64, 1000}, {3, 4, 3, 3, 128, 0}};
  for (int g = 0; g < 2; g++)
    for (int sh = 0; sh < 3; sh++)
      for (int dir = -1; dir <= 1; dir += 2)
        for (int p = 0; p < 2; p++) {
          const int *x = shapes[sh];
          kase k;
          k_init(&k, 400 + sh);
          k_randn(&k, K_ACT, (size_t)x[0] * x[1] * (x[2] + 2 * x[3]) * x[4], 1);
          int d[] = {x[0], x[1], x[2], x[3], x[4], x[5], dir};
          k_run(&k, gpus[g], op_rope, d, PADS[p]);
          k_check(&k, gpus[g], 0, "rope", 1e-5, 2e-6, 5e-3, 1e-5);
          k_free(&k);
        }
}

/* ---- activations and add ---- */
/* 0 gelu out 1 x 2 gelu dinp 3 dout 4 swiglu out 5 gu 6 dgu 7 add a (out aliases it) 8 add b */
static void op_act(tz_backend *be, tz_slice *s, const int *d) {
  int N = d[0], F = d[1];
  size_t n = (size_t)N * F;
  be->gelu_fwd(be, s[0], s[1], n);
  be->gelu_bwd(be, s[2], s[1], s[3], n);
  be->swiglu_fwd(be, s[4], s[5], N, F);
  be->swiglu_bwd(be, s[6], s[3], s[5], N, F);
  be->add(be, s[7], s[7], s[8], n);
}
static void test_activations(void **state) {
  static const int shapes[][2] = {{7, 45}, {4, 64}, {3, 1001}};
  for (int g = 0; g < 2; g++)
    for (int sh = 0; sh < 3; sh++)
      for (int p = 0; p < 2; p++) {
        int N = shapes[sh][0], F = shapes[sh][1];
        size_t n = (size_t)N * F;
        kase k;
        k_init(&k, 500 + sh);
        k_randn(&k, K_ACT, n, 1);
        int x = k_randn(&k, K_ACT, n, 3);
        k_randn(&k, K_ACT, n, 1);
        k_randn(&k, K_ACT, n, 1);
        k_randn(&k, K_ACT, n, 1);
        int gu = k_randn(&k, K_ACT, 2 * n, 3);
        k_randn(&k, K_ACT, 2 * n, 1);
        k_randn(&k, K_ACT, n, 1);
        k_randn(&k, K_ACT, n, 1);
        /* extremes: saturated tanh / sigmoid, the x³ overflow guard */
        float ext[] = {200.f, -200.f, 90.f, -90.f, 1e20f, -1e20f, 0.f};
        for (int i = 0; i < 7; i++) k.t[x].h[i * 5] = ext[i], k.t[gu].h[i * 6] = ext[i];
        k_run(&k, gpus[g], op_act, shapes[sh], PADS[p]);
        tz_backend *G = gpus[g];
        k_check(&k, G, 0, "gelu_fwd", 1e-5, 1e-6, 5e-3, 1e-5);
        k_check(&k, G, 2, "gelu_bwd", 1e-5, 1e-5, 5e-3, 1e-5);
        k_check(&k, G, 4, "swiglu_fwd", 1e-5, 1e-6, 5e-3, 1e-5);
        k_check(&k, G, 6, "swiglu_bwd", 1e-5, 1e-6, 5e-3, 1e-5);
        k_check(&k, G, 7, "add (aliased)", 1e-7, 0, 5e-3, 1e-6);
        k_free(&k);
      }
}

/* ---- cross-entropy and sum_sq ---- */
static void op_xent(tz_backend *be, tz_slice *s, const int *d) {
  be->crossentropy(be, s[0], s[1], s[2], d[0], d[1], d[2], 0.1f);
  be->sum_sq(be, s[3], s[4], (size_t)d[3]);
}
static void xent_case(kase *k, int N, int V, int Vp, int n, uint64_t seed) {
  k_init(k, seed);
  int32_t *y = malloc(N * 4);
  for (int i = 0; i < N; i++) y[i] = (int32_t)tz_rng_below(&k->rng, V);
  y[N / 2] = -1; /* ignored row */
  y[0] = V - 1;
  k_randn(k, K_F32, N, 1);                /* 0 losses */
  k_randn(k, K_ACT, (size_t)N * Vp, 3);   /* 1 logits -> dlogits */
  k_ints(k, y, N);                        /* 2 targets */
  k_randn(k, K_F32, 1, 1);                /* 3 sum_sq out */
  k_randn(k, K_F32, n, 1);                /* 4 x */
  free(y);
}
static void test_crossentropy_sumsq(void **state) {
  /* N, V, Vp, sum_sq n: vectors (Vp·4 and Vp·2 multiples of 16); scalar rows; a wide row */
  static const int shapes[][4] = {{9, 37, 40, 100003}, {5, 1000, 1003, 3}, {3, 50257, 50304, 1 << 20}};
  for (int g = 0; g < 2; g++)
    for (int sh = 0; sh < 3; sh++)
      for (int p = 0; p < 2; p++) {
        kase k;
        xent_case(&k, shapes[sh][0], shapes[sh][1], shapes[sh][2], shapes[sh][3], 600 + sh);
        k_run(&k, gpus[g], op_xent, shapes[sh], PADS[p]);
        tz_backend *G = gpus[g];
        k_check(&k, G, 0, "crossentropy losses", 1e-5, 1e-6, 1e-5, 1e-5);
        k_check(&k, G, 1, "crossentropy dlogits", 1e-5, 1e-6, 5e-3, 1e-7);
        k_check(&k, G, 3, "sum_sq", 1e-6, 0, 1e-6, 0);
        k_free(&k);
      }
}

/* Issue 12's extremes against float64 of the logits the GPU sees (rounded to bf16 in bf16
 * mode). The CPU is not the reference here. */
static void test_crossentropy_extremes(void **state) {
  static const struct {
    const char *what;
    int V, Vp, y;
    float z[4];
    float fill; /* V > 4: every logit is this */
  } cs[] = {
      {"[1e8, 1e8] target 1", 2, 2, 1, {1e8f, 1e8f}, 0},
      {"four -300 target 2", 4, 4, 2, {-300, -300, -300, -300}, 0},
      {"[-431, 279, 427] target 0", 3, 4, 0, {-431, 279, 427}, 0},
      {"3000 x 1e6 target 2999", 3000, 3008, 2999, {0}, 1e6f},
  };
  for (int g = 0; g < 2; g++) {
    tz_backend *be = gpus[g];
    for (size_t c = 0; c < sizeof cs / sizeof *cs; c++) {
      int V = cs[c].V, Vp = cs[c].Vp, y = cs[c].y;
      float *z = malloc(Vp * 4);
      for (int i = 0; i < Vp; i++) z[i] = i >= V ? 5.0f : V > 4 ? cs[c].fill : cs[c].z[i];
      ct_round(be, z, Vp);
      double mx = -INFINITY, s = 0;
      for (int i = 0; i < V; i++) mx = fmax(mx, z[i]);
      for (int i = 0; i < V; i++) s += exp((double)z[i] - mx);
      double want = log(s) - ((double)z[y] - mx), *ref = malloc(Vp * 8);
      for (int i = 0; i < Vp; i++) ref[i] = i >= V ? 0.0 : exp((double)z[i] - mx) / s - (i == y);
      ot_ctx o;
      ot_init(&o, be, 1);
      int32_t t = y;
      tz_slice sz = ct_act_upload(&o, z, Vp), sl = ot_buf(&o, NULL, 4);
      be->crossentropy(be, sl, sz, ot_buf(&o, &t, 4), 1, V, Vp, 1.0f);
      float *loss = ot_get(&o, sl, 1), *d = ct_act_download(&o, sz, Vp);
      print_message("  %s %s: loss %.9g (want %.9g), dlogits [%.6g, %.6g, %.6g]\n", tz_dtype_name(be->act),
                    cs[c].what, loss[0], want, d[0], d[1], Vp > 2 ? d[2] : 0.0);
      assert_true(isfinite(loss[0]));
      for (int i = 0; i < Vp; i++) assert_true(isfinite(d[i]));
      char what[160];
      snprintf(what, sizeof what, "crossentropy %s [%s]: loss", cs[c].what, tz_dtype_name(be->act));
      ot_close(what, loss, &want, 1, 1e-6, 2e-6);
      snprintf(what, sizeof what, "crossentropy %s [%s]: dlogits", cs[c].what, tz_dtype_name(be->act));
      if (be->act == TZ_BF16)
        ct_close(what, d, ref, Vp, 5e-3, 1e-6);
      else
        ot_close(what, d, ref, Vp, 1e-6, 2e-6);
      free(z), free(ref), free(loss), free(d);
      ot_release(&o);
    }
  }
}

/* ---- AdamW ---- */
#define AW_NR 41 /* > 32 ranges: more than one launch */
static tz_range aw_ranges[AW_NR];
static int aw_nr;
static void op_adamw(tz_backend *be, tz_slice *s, const int *d) {
  tz_adamw_hp hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3};
  be->adamw(be, s[0], s[1], s[2], s[3], aw_ranges, aw_nr, &hp);
  hp.t = 4, hp.grad_scale = 0.25f;
  be->adamw(be, s[0], s[1], s[2], s[3], aw_ranges, aw_nr, &hp);
}
static void test_adamw(void **state) {
  /* small ranges with a gap and decay 0; then 38 more, two of them larger than a block's
   * 4096-element chunk */
  size_t n = 0;
  aw_nr = 0;
  aw_ranges[aw_nr++] = (tz_range){0, 300, 1.0f};
  aw_ranges[aw_nr++] = (tz_range){300, 7, 0.0f};
  n = 320;
  for (int r = 2; r < AW_NR; r++) {
    size_t len = r == 5 ? 10007 : r == 30 ? 4096 : (size_t)(r * 37 % 500 + 1);
    aw_ranges[aw_nr++] = (tz_range){n, len, (float)(r & 1)};
    n += len + (r % 3);
  }
  for (int g = 0; g < 2; g++)
    for (int p = 0; p < 2; p++) {
      kase k;
      k_init(&k, 700);
      k_randn(&k, K_F32, n, 1);
      k_randn(&k, K_F32, n, 1);
      k_randn(&k, K_F32, n, 0.1f);
      int v = k_randn(&k, K_F32, n, 0.1f);
      for (size_t i = 0; i < n; i++) k.t[v].h[i] = fabsf(k.t[v].h[i]);
      k_run(&k, gpus[g], op_adamw, NULL, PADS[p]);
      const char *names[] = {"adamw params", "adamw grads (read only)", "adamw m", "adamw v"};
      for (int t = 0; t < 4; t++) {
        k_check(&k, gpus[g], t, names[t], 1e-6, 1e-7, 1e-6, 1e-7);
        size_t diff = 0;
        for (size_t i = 0; i < n; i++) diff += k.t[t].out[0][i] != k.t[t].out[1][i];
        if (t == 0) print_message("  adamw [%s, pad %zu]: %zu of %zu params differ from the CPU bitwise\n",
                                  tz_dtype_name(gpus[g]->act), PADS[p], diff, n);
      }
      k_free(&k);
    }
}

/* The fused bf16 mirror: params registered with params_mirror; after adamw, a kernel that
 * reads the weights (embed_fwd with wte = the params slice, one row per token) sees exactly
 * bf16(new fp32 params). The params slice starts 16 floats into the buffer. */
static void test_adamw_mirror(void **state) {
  tz_backend *be = gpus[1];
  if (!be->params_mirror) {
    print_message("SKIPPED: the CUDA backend has no params_mirror\n");
    skip();
  }
  const int V = 40, C = 25, off = 16;
  size_t n = (size_t)V * C, nb = n + off;
  tz_rng r;
  tz_rng_seed(&r, 800, 1);
  float *ph = malloc(nb * 4), *gh = malloc(nb * 4), *after = malloc(n * 4);
  for (size_t i = 0; i < nb; i++) ph[i] = tz_rng_normal(&r), gh[i] = tz_rng_normal(&r);
  tz_buf *P = be->alloc(be, nb * 4, "params"), *G = be->alloc(be, nb * 4, "grads"),
         *M = be->alloc(be, nb * 4, "m"), *Vb = be->alloc(be, nb * 4, "v");
  assert_true(P && G && M && Vb);
  be->params_mirror(be, P);
  be->upload(be, (tz_slice){P, 0}, ph, nb * 4);
  be->upload(be, (tz_slice){G, 0}, gh, nb * 4);
  tz_slice ps = {P, off * 4}, gs = {G, off * 4}, ms = {M, off * 4}, vs = {Vb, off * 4};
  tz_range rg[] = {{0, (size_t)V * 10, 1.0f}, {(size_t)V * 10, n - (size_t)V * 10, 0.0f}};
  tz_adamw_hp hp = {1e-1f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  be->adamw(be, ps, gs, ms, vs, rg, 2, &hp);
  be->download(be, after, ps, n * 4);
  ot_ctx o;
  ot_init(&o, be, 2);
  int32_t tok[40];
  for (int i = 0; i < V; i++) tok[i] = i;
  tz_slice out = ct_act_upload(&o, NULL, n), ts = ot_buf(&o, tok, sizeof tok);
  be->embed_fwd(be, out, ts, ps, TZ_NONE, 1, V, C, V);
  float *got = ct_act_download(&o, out, n);
  size_t bad = 0, moved = 0;
  for (size_t i = 0; i < n; i++) {
    bad += got[i] != ct_bf16_round(after[i]);
    moved += ct_bf16_round(after[i]) != ct_bf16_round(ph[off + i]);
  }
  print_message("  mirror: %zu of %zu bf16 weights changed by the step; %zu mismatches\n", moved, n, bad);
  assert_true(moved > 0);
  assert_int_equal(bad, 0);
  free(got), free(ph), free(gh), free(after);
  ot_release(&o);
  tz_buf *all[] = {Vb, M, G, P};
  for (int i = 0; i < 4; i++) be->free(be, all[i]);
}

/* ---- determinism: the reductions run twice give bit-identical results ---- */
static void op_det(tz_backend *be, tz_slice *s, const int *d) {
  int B = d[0], T = d[1], C = d[2], V = d[3], N = B * T;
  be->embed_bwd(be, s[0], s[1], s[2], s[3], B, T, C, V);
  be->layernorm_bwd(be, s[4], s[5], s[6], s[2], s[7], s[8], s[9], s[10], N, C);
  be->rmsnorm_bwd(be, s[11], s[12], s[2], s[7], s[8], s[10], N, C);
  be->bias_bwd(be, s[13], s[2], N, C);
  be->sum_sq(be, s[14], s[1], (size_t)T * C); /* dwpe, after embed_bwd */
  be->crossentropy(be, s[15], s[7], s[3], N, C, C, 0.5f);
}
static void test_determinism(void **state) {
  const int B = 8, T = 100, C = 200, V = 11, N = B * T;
  for (int g = 0; g < 2; g++) {
    kase k;
    k_init(&k, 900);
    int32_t tok[800];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)tz_rng_below(&k.rng, V);
    k_randn(&k, K_F32, (size_t)V * C, 1); /* 0 dwte */
    k_randn(&k, K_F32, (size_t)T * C, 1); /* 1 dwpe */
    k_randn(&k, K_ACT, (size_t)N * C, 1); /* 2 dout */
    k_ints(&k, tok, N);                   /* 3 tok (also targets: < V ≤ C) */
    k_randn(&k, K_ACT, (size_t)N * C, 1); /* 4 dinp */
    k_randn(&k, K_F32, C, 1);             /* 5 dw */
    k_randn(&k, K_F32, C, 1);             /* 6 db */
    k_randn(&k, K_ACT, (size_t)N * C, 2); /* 7 inp (then logits) */
    k_randn(&k, K_ACT, C, 1);             /* 8 w */
    k_randn(&k, K_F32, N, 0.3f);          /* 9 mean */
    int r = k_randn(&k, K_F32, N, 0.2f);  /* 10 rstd */
    for (int i = 0; i < N; i++) k.t[r].h[i] = fabsf(k.t[r].h[i]) + 0.3f;
    k_randn(&k, K_ACT, (size_t)N * C, 1); /* 11 rms dinp */
    k_randn(&k, K_F32, C, 1);             /* 12 rms dw */
    k_randn(&k, K_F32, C, 1);             /* 13 bias db */
    k_randn(&k, K_F32, 1, 1);             /* 14 sum_sq out */
    k_randn(&k, K_F32, N, 1);             /* 15 losses */
    int d[] = {B, T, C, V};
    k_run2(&k, gpus[g], gpus[g], op_det, d, 0);
    const char *names[] = {"embed_bwd dwte", "embed_bwd dwpe", 0, 0, "layernorm_bwd dinp", "layernorm_bwd dw",
                           "layernorm_bwd db", "crossentropy dlogits", 0, 0, 0, "rmsnorm_bwd dinp",
                           "rmsnorm_bwd dw", "bias_bwd db", "sum_sq", "crossentropy losses"};
    for (int t = 0; t < 16; t++)
      if (names[t]) k_same(&k, t, names[t], gpus[g]);
    k_free(&k);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embed),
      cmocka_unit_test(test_norms),
      cmocka_unit_test(test_bias_bwd),
      cmocka_unit_test(test_layernorm_rb),
      cmocka_unit_test(test_layernorm_forms),
      cmocka_unit_test(test_rope),
      cmocka_unit_test(test_activations),
      cmocka_unit_test(test_crossentropy_sumsq),
      cmocka_unit_test(test_crossentropy_extremes),
      cmocka_unit_test(test_adamw),
      cmocka_unit_test(test_adamw_mirror),
      cmocka_unit_test(test_determinism),
  };
  if (getenv("TZ_TEST_FILTER")) cmocka_set_test_filter(getenv("TZ_TEST_FILTER"));
  return cmocka_run_group_tests(tests, setup, teardown);
}
