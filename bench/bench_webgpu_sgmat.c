/* The subgroup-matrix matmul (src/backend/webgpu/sgmat.h) per tile variant: TFLOP/s per form,
 * every run checked against the CPU (double) on sampled entries of the same f16 operands.
 *   bench_webgpu_sgmat [M N K [reps]]   one shape (default 8192³, 10 dispatches timed): a line
 *                                       per (form, variant)
 *   bench_webgpu_sgmat sweep            the table: a row per variant with TFLOP/s at 8192³ for
 *                                       the three forms and the GPT-2 124M B16 T1024 matmul time
 *                                       per step per form (below), then the best per form
 * Variants: TZ_SGMAT_TILES="name;name;..." (tz_sgmat_tile_parse names), else the list below.
 * TZ_SGMAT_FORMS="0,1,2" the forms (0 X·Wᵀ + bias, 1 dY·W, 2 dW += dYᵀ·X). TZ_SGMAT_BUDGET_S
 * (sweep, default 120): variants not started by then are left out (said so). TZ_SGMAT_NO_CUBE=1
 * (sweep): the model's shapes only, no 8192³ runs ("-" in those columns).
 * The model's shapes (sweep): GPT-2 124M, B·T = 16384, C = 768, V padded to 50304; per layer
 * (×12) the linear layers qkv [2304, 768], attention projection [768, 768], fc [3072, 768], fc
 * projection [768, 3072], once the lm_head [50304, 768] (no bias). For a layer W [N_out, K_in]:
 * X·Wᵀ is M = 16384, N = N_out, K = K_in (+ bias); dY·W is M = 16384, N = K_in, K = N_out;
 * dW += dYᵀ·X is M = N_out, N = K_in, K = 16384, split over K by tz_sgmat_splits on kernel n
 * (the backend's choice; the split's partial sums are timed too). A shape whose operands or
 * output would exceed 512 MB is run with its long dimension halved until it fits, and its time
 * doubled as often (the lm_head's). A variant that does not fit a shape (BN 256 and N = 50304)
 * has no step total ("-"): the backend then takes the next tile of its list.
 * Time: wall clock around one submission of `reps` dispatches after a warm-up dispatch
 * (GPU-bound), per dispatch; reps such that a submission takes ~30 ms (at least 5).
 * Check: 64 sampled entries per run, |c - ref| <= 1e-3·Σ|a·b| (+ |bias|) + 1e-6; the worst
 * ratio is printed (<= 1 passes). Exit 1 when a run failed its check or errored, 77 when the
 * kernel is not usable here (reason printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/webgpu/sgmat.h"
#include "core/error.h"

/* The sweep's variants (TZ_SGMAT_SWEEP_TILES, sgmat.h), each a guess at a lever:
 *   o:64:4x4:2x2      main's default: 16 subgroups of 2x2, f16 tiles, B transposed, prefetch
 *   n:64:2x4:4x2:vp   vec4<u32> tiles (16-byte stores), X·Wᵀ's B kept [n][k] (column-major
 *                     loads), 8 subgroups of 4x2, register prefetch
 *   n:32:2x4:4x2:v2   two buffers, one barrier per k step
 *   n:32:2x4:4x4:vp   128x256, 8 subgroups of 64x64 (16 accumulators each)
 *   n:32:2x2:4x4:v2   128x128, 4 subgroups of 64x64, two buffers
 *   n:32:2x4:4x4:vpg  128x256 with the grouped grid order (8 tile rows at a time)
 *   n:32:2x4:4x2:v2g  two buffers, grouped grid order
 *   n:64:2x2:4x4:vp   the same with BK 64, one buffer
 *   n:32:4x2:4x4:vp   256x128
 *   n:64:4x4:2x2:tp   main's design written out per matrix (no arrays), 8-half loads
 *   n:64:2x4:4x2:tp   the same with 8 subgroups of 4x2 (main's kernel: 176 TFLOP/s before a
 *                     B-slot change, ~35 after)
 *   n:32:2x4:4x2:t2   two f16 buffers, B transposed
 *   n:32:4x4:2x2:v2   16 subgroups of 2x2, two buffers
 *   n:64:2x4:4x2:v    vec4<u32> tiles without register prefetch (occupancy hides the loads)
 *   o:64:2x4:4x2      main's kernel with 8 subgroups of 4x2
 *   n:64:2x4:4x2:vpP264   the default tile on a persistent grid of 264 workgroups (the next
 *                     tile's first loads overlap this tile's last products and stores)
 *   n:64:2x4:4x2:vpgP132  the same, 132 workgroups, grouped tile order */
static const char *const sweep_default = TZ_SGMAT_SWEEP_TILES;

static uint32_t rng = 777;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return ((rng >> 8) / 16777216.0f) * 2 - 1;
}
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Operands: a block of random f16 values repeated (period 1,000,003: no alignment with rows). */
#define PERIOD 1000003u
static void fill(uint16_t *x, size_t n) {
  for (size_t i = 0; i < n && i < PERIOD; i++) x[i] = tz_sgmat_f16(frand());
  for (size_t i = PERIOD; i < n; i += PERIOD) memcpy(x + i, x, (n - i < PERIOD ? n - i : PERIOD) * 2);
}

typedef struct {
  tz_sgmat *s;
  uint32_t emu; /* TZ_SGMAT_BENCH_EMU=D (development): emulated builtins, every dimension D */
  uint16_t *a, *b;
  float *c, *bias;
  size_t cap_c;
  int bad;
} ctx;

/* One run: 0 with *ms and *err (worst sampled error / bound), -1 (message printed) when the tile
 * does not fit ("n/a") or the run failed (bad). keep: a and b as in the last run. */
static int run(ctx *x, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K, uint32_t split,
               int reps, int keep, double *ms, double *err, int quiet) {
  const char *why;
  if (x->emu) M = N = K = x->emu;
  if (form == TZ_SGMAT_DYTX) memset(x->c, 0, (size_t)M * N * 4); /* accumulated into: the check's 0 */
  if (!tz_sgmat_tile_fits(t, form, M, N, K, split, tz_sgmat_sgsize(x->s), tz_sgmat_smem_limit(x->s), 1024, &why)) {
    if (!quiet) printf("    n/a: %s\n", why);
    return -1;
  }
  const float *bias = form == TZ_SGMAT_XWT ? x->bias : NULL;
  if (tz_sgmat_run_ex(x->s, form, t, M, N, K, x->a, x->b, bias, x->c, x->emu ? 1 : reps, ms, split, keep,
                      x->emu != 0) != 0) {
    printf("    error: %s\n", tz_errmsg());
    x->bad = 1;
    return -1;
  }
  double worst = 0;
  for (int q = 0; q < 64; q++) {
    uint32_t m = (uint32_t)((q * 2654435761u) % M), n = (uint32_t)((q * 40503u + 17) % N);
    double ref = 0, mag = 0;
    for (uint32_t k = 0; k < K; k++) {
      double u = tz_sgmat_f32(form == TZ_SGMAT_DYTX ? x->a[(size_t)k * M + m] : x->a[(size_t)m * K + k]);
      double v = tz_sgmat_f32(form == TZ_SGMAT_XWT ? x->b[(size_t)n * K + k] : x->b[(size_t)k * N + n]);
      ref += u * v, mag += fabs(u * v);
    }
    if (bias) ref += bias[n], mag += fabs(bias[n]);
    double e = fabs(x->c[(size_t)m * N + n] - ref) / (1e-3 * mag + 1e-6);
    if (e > worst) worst = e;
  }
  *err = worst;
  if (worst > 1) x->bad = 1;
  return 0;
}

static int reps_for(uint32_t M, uint32_t N, uint32_t K) {
  double est_ms = 2.0 * M * N * K / 150e12 * 1e3;
  int r = (int)(30 / est_ms);
  return r < 5 ? 5 : r > 200 ? 200 : r;
}

/* the model's shapes of one form: M, N, K, calls per step */
typedef struct {
  uint32_t M, N, K, calls;
} shape;
static int model_shapes(tz_sgmat_form f, shape *out) {
  static const uint32_t lin[5][3] = {{2304, 768, 12}, {768, 768, 12}, {3072, 768, 12}, {768, 3072, 12}, {50304, 768, 1}};
  const uint32_t BT = 16384;
  for (int i = 0; i < 5; i++) {
    uint32_t no = lin[i][0], ki = lin[i][1];
    if (f == TZ_SGMAT_XWT) out[i] = (shape){BT, no, ki, lin[i][2]};
    else if (f == TZ_SGMAT_DYW) out[i] = (shape){BT, ki, no, lin[i][2]};
    else out[i] = (shape){no, ki, BT, lin[i][2]};
  }
  return 5;
}
/* halve the long dimension until operands and output are <= 512 MB; returns the factor */
static uint32_t shrink(tz_sgmat_form f, shape *s) {
  const uint64_t cap = 512ull << 20;
  uint32_t scale = 1;
  for (;;) {
    uint64_t a = (uint64_t)s->M * s->K * 2, b = (uint64_t)s->N * s->K * 2, c = (uint64_t)s->M * s->N * 4;
    if (a <= cap && b <= cap && c <= cap) return scale;
    if (f == TZ_SGMAT_DYTX) s->K /= 2;
    else s->M /= 2;
    scale *= 2;
  }
}

static void tiles_from(const char *list, tz_sgmat_tile *t, char names[][40], int *nt, int max) {
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok(buf, ";"); tok && *nt < max; tok = strtok(NULL, ";")) {
    if (tz_sgmat_tile_parse(tok, &t[*nt]) != 0) {
      fprintf(stderr, "tezgah: error: %s\n", tz_errmsg());
      exit(2);
    }
    tz_sgmat_tile_name(t[*nt], names[*nt], 40);
    (*nt)++;
  }
}

static int sweep(ctx *x, tz_sgmat_tile *tiles, char names[][40], int nt, const int *forms, int nf) {
  const char *fname[3] = {"XWT", "DYW", "DYTX"};
  double budget = getenv("TZ_SGMAT_BUDGET_S") ? atof(getenv("TZ_SGMAT_BUDGET_S")) : 120, t0 = now_s();
  double best[3] = {1e30, 1e30, 1e30};
  int besti[3] = {-1, -1, -1};
  printf("\nsweep: TFLOP/s at 8192^3 per form; GPT-2 124M B16 T1024 matmul ms/step per form (12 layers + lm_head;\n"
         "       dW split over K by tz_sgmat_splits on kernel n); err = worst sampled error / bound over the row\n");
  printf("%-18s %7s %7s %7s | %9s %9s %9s | %6s\n", "variant", "XWT", "DYW", "DYTX", "XWT ms", "DYW ms", "DYTX ms", "err");
  for (int ti = 0; ti < nt; ti++) {
    if (now_s() - t0 > budget) {
      printf("%-18s (not run: the sweep's budget of %.0f s is spent)\n", names[ti], budget);
      continue;
    }
    double tf[3] = {-1, -1, -1}, step[3] = {-1, -1, -1}, worst = 0;
    printf("  [%s]\n", names[ti]);
    for (int fi = 0; fi < nf; fi++) {
      tz_sgmat_form f = (tz_sgmat_form)forms[fi];
      double ms, e;
      if (!getenv("TZ_SGMAT_NO_CUBE") && run(x, f, tiles[ti], 8192, 8192, 8192, 1, 10, 1, &ms, &e, 0) == 0) {
        tf[f] = 2.0 * 8192 * 8192 * 8192 / (ms * 1e-3) / 1e12;
        if (e > worst) worst = e;
        printf("    %-4s 8192^3: %.3f ms %.1f TFLOP/s err %.3f\n", fname[f], ms, tf[f], e);
      }
      shape sh[5];
      int ns = model_shapes(f, sh);
      double total = 0, flop = 0;
      int complete = 1;
      for (int i = 0; i < ns; i++) {
        shape r = sh[i];
        uint32_t scale = shrink(f, &r);
        uint32_t bm = tiles[ti].sg_m * tiles[ti].tm * 16, bn = tiles[ti].sg_n * tiles[ti].tn * 16;
        uint32_t split = f == TZ_SGMAT_DYTX && tiles[ti].kern && !tiles[ti].pers && r.M % bm == 0 && r.N % bn == 0
                             ? tz_sgmat_splits((r.M / bm) * (r.N / bn), r.K, tiles[ti].bk)
                             : 1;
        if (getenv("TZ_SGMAT_SPLIT") && atoi(getenv("TZ_SGMAT_SPLIT")) == 0) split = 1;
        if (run(x, f, tiles[ti], r.M, r.N, r.K, split, reps_for(r.M, r.N, r.K), 1, &ms, &e, 1) != 0) {
          printf("    %-4s %ux%ux%u: n/a\n", fname[f], sh[i].M, sh[i].N, sh[i].K);
          complete = 0;
          continue;
        }
        if (e > worst) worst = e;
        double full = ms * scale;
        printf("    %-4s %ux%ux%u%s x%u: %.3f ms %.1f TFLOP/s split %u err %.3f\n", fname[f], sh[i].M, sh[i].N, sh[i].K,
               scale > 1 ? " (scaled)" : "", sh[i].calls, full, 2.0 * r.M * r.N * r.K / (ms * 1e-3) / 1e12, split, e);
        total += full * sh[i].calls;
        flop += 2.0 * sh[i].M * sh[i].N * sh[i].K * sh[i].calls;
      }
      if (complete) {
        step[f] = total;
        printf("    %-4s step: %.2f ms (%.1f TFLOP/s)\n", fname[f], total, flop / (total * 1e-3) / 1e12);
        if (total < best[f]) best[f] = total, besti[f] = ti;
      }
      fflush(stdout);
    }
    char col[6][16];
    for (int f = 0; f < 3; f++) {
      if (tf[f] >= 0) snprintf(col[f], 16, "%.1f", tf[f]);
      else snprintf(col[f], 16, "-");
      if (step[f] >= 0) snprintf(col[3 + f], 16, "%.2f", step[f]);
      else snprintf(col[3 + f], 16, "-");
    }
    printf("ROW %-18s %7s %7s %7s | %9s %9s %9s | %6.3f%s\n", names[ti], col[0], col[1], col[2], col[3], col[4], col[5],
           worst, worst > 1 ? " FAIL" : "");
    fflush(stdout);
  }
  printf("BEST");
  for (int f = 0; f < 3; f++)
    if (besti[f] >= 0) printf(" %s=%s", fname[f], names[besti[f]]);
  printf("\n");
  if (besti[0] >= 0 && besti[1] >= 0 && besti[2] >= 0)
    printf("best step total: %.2f ms (XWT %.2f + DYW %.2f + DYTX %.2f)\n", best[0] + best[1] + best[2], best[0], best[1],
           best[2]);
  printf("sweep time %.1f s\n", now_s() - t0);
  return x->bad;
}

int main(int argc, char **argv) {
  int do_sweep = argc > 1 && !strcmp(argv[1], "sweep");
  uint32_t M = 8192, N = 8192, K = 8192;
  int reps = 10;
  if (!do_sweep && argc > 3) M = (uint32_t)atoi(argv[1]), N = (uint32_t)atoi(argv[2]), K = (uint32_t)atoi(argv[3]);
  if (!do_sweep && argc > 4) reps = atoi(argv[4]);
  uint32_t emu = getenv("TZ_SGMAT_BENCH_EMU") ? (uint32_t)atoi(getenv("TZ_SGMAT_BENCH_EMU")) : 0;
  tz_sgmat *s = emu ? tz_sgmat_open_emu() : tz_sgmat_open();
  if (!s) {
    fprintf(stderr, "tezgah: error: %s\n", tz_errmsg());
    return 1;
  }
  printf("adapter: %s\n", tz_sgmat_describe(s));
  const char *why;
  if (!tz_sgmat_usable(s, &why)) {
    printf("SKIPPED: subgroup-matrix matmul not usable: %s\n", why);
    tz_sgmat_close(s);
    return 77;
  }
  printf("limits: workgroup memory %u bytes, binding %llu bytes, subgroup size %u\n", tz_sgmat_smem_limit(s),
         (unsigned long long)tz_sgmat_binding_limit(s), tz_sgmat_sgsize(s));
  tz_sgmat_tile tiles[32];
  char names[32][40];
  int nt = 0;
  const char *te = getenv("TZ_SGMAT_TILES");
  tiles_from(te ? te : sweep_default, tiles, names, &nt, 32);
  int forms[3], nf = 0;
  const char *fe = getenv("TZ_SGMAT_FORMS");
  for (const char *f = fe ? fe : "0,1,2"; *f; f++)
    if (*f >= '0' && *f <= '2' && nf < 3) forms[nf++] = *f - '0';
  /* operands for the largest shape run: 512 MB each at most (shrink), or M·K, N·K of one shape */
  size_t na = do_sweep ? (256u << 20) : (size_t)M * K, nb = do_sweep ? (256u << 20) : (size_t)N * K;
  size_t nc = do_sweep ? (128u << 20) : (size_t)M * N;
  ctx x = {s, emu, malloc(na * 2), malloc(nb * 2), malloc(nc * 4), malloc(65536 * 4), nc, 0};
  if (!x.a || !x.b || !x.c || !x.bias) {
    fprintf(stderr, "tezgah: error: out of host memory for the operands\n");
    return 1;
  }
  fill(x.a, na);
  fill(x.b, nb);
  for (uint32_t i = 0; i < 65536; i++) x.bias[i] = frand();
  int rc;
  if (do_sweep) {
    rc = sweep(&x, tiles, names, nt, forms, nf);
  } else {
    for (int fi = 0; fi < nf; fi++)
      for (int ti = 0; ti < nt; ti++) {
        double ms, e;
        printf("form %d %ux%ux%u tile %s:\n", forms[fi], M, N, K, names[ti]);
        if (run(&x, (tz_sgmat_form)forms[fi], tiles[ti], M, N, K, 1, reps, 1, &ms, &e, 0) == 0)
          printf("    %.3f ms  %.1f TFLOP/s  sampled error %.3f of bound%s\n", ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12, e,
                 e <= 1 ? "" : "  FAIL");
        fflush(stdout);
      }
    rc = x.bad;
  }
  free(x.a), free(x.b), free(x.c), free(x.bias);
  tz_sgmat_close(s);
  return rc;
}
