/* The subgroup-matrix matmul (src/backend/webgpu/sgmat.h) at one shape: TFLOP/s per form and
 * tile, with a sampled check against the CPU (double) on the same f16 operands.
 *   bench_webgpu_sgmat [M N K [reps]]         (default 8192 8192 8192, 10 dispatches timed)
 * TZ_SGMAT_TILES="bk,sg_m,sg_n,tm,tn;..." replaces the tile list; TZ_SGMAT_FORMS="0,1,2" the forms
 * (0 X·Wᵀ+bias, 1 dY·W, 2 dW+=dYᵀ·X). Time: wall clock around one submission of `reps`
 * dispatches after a warm-up dispatch (GPU-bound at these sizes), per dispatch.
 * Prints one line per (form, tile): ms, TFLOP/s (2·M·N·K / time), worst sampled error relative
 * to 1e-3·Σ|a·b| (must be <= 1). Exit 77 when the kernel is not usable here (reason printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/sgmat.h"
#include "core/error.h"

static uint32_t rng = 777;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return ((rng >> 8) / 16777216.0f) * 2 - 1;
}

int main(int argc, char **argv) {
  uint32_t M = argc > 3 ? (uint32_t)atoi(argv[1]) : 8192, N = argc > 3 ? (uint32_t)atoi(argv[2]) : 8192,
           K = argc > 3 ? (uint32_t)atoi(argv[3]) : 8192;
  int reps = argc > 4 ? atoi(argv[4]) : 10;
  tz_sgmat *s = tz_sgmat_open();
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
  tz_sgmat_tile tiles[16];
  int nt = 0;
  const char *te = getenv("TZ_SGMAT_TILES");
  char buf[512];
  snprintf(buf, sizeof buf, "%s", te ? te : "64,2,4,4,2;32,2,4,4,2;64,4,2,2,4;64,4,4,2,2;32,4,4,2,4");
  for (char *tok = strtok(buf, ";"); tok && nt < 16; tok = strtok(NULL, ";")) {
    tz_sgmat_tile t = {0};
    if (sscanf(tok, "%u,%u,%u,%u,%u,%u", &t.bk, &t.sg_m, &t.sg_n, &t.tm, &t.tn, &t.direct) >= 5) tiles[nt++] = t;
  }
  const char *fe = getenv("TZ_SGMAT_FORMS");
  const char *forms = fe ? fe : "0,1,2";
  size_t na = (size_t)M * K, nb = (size_t)N * K; /* B is [N, K] or [K, N]: the same count */
  uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
  float *c = malloc((size_t)M * N * 4), *bias = malloc((size_t)N * 4);
  for (size_t i = 0; i < na; i++) a[i] = tz_sgmat_f16(frand());
  for (size_t i = 0; i < nb; i++) b[i] = tz_sgmat_f16(frand());
  for (uint32_t i = 0; i < N; i++) bias[i] = frand();
  int bad = 0;
  for (const char *f = forms; *f; f++) {
    if (*f < '0' || *f > '2') continue;
    tz_sgmat_form form = (tz_sgmat_form)(*f - '0');
    for (int ti = 0; ti < nt; ti++) {
      tz_sgmat_tile t = tiles[ti];
      uint32_t bm = t.sg_m * t.tm * 16, bn = t.sg_n * t.tn * 16;
      memset(c, 0, (size_t)M * N * 4);
      double ms = 0;
      if (tz_sgmat_run(s, form, t, M, N, K, a, b, form == TZ_SGMAT_XWT ? bias : NULL, c, reps, &ms) != 0) {
        printf("form %d tile %ux%ux%u%s (%u subgroups): error: %s\n", form, bm, bn, t.bk, t.direct ? " direct" : "",
               t.sg_m * t.sg_n, tz_errmsg());
        bad = 1;
        continue;
      }
      /* 64 sampled entries vs the CPU in double (the first dispatch's result: c was 0 for DYTX) */
      double worst = 0;
      for (int q = 0; q < 64; q++) {
        uint32_t m = (uint32_t)((q * 2654435761u) % M), n = (uint32_t)((q * 40503u + 17) % N);
        double ref = 0, mag = 0;
        for (uint32_t k = 0; k < K; k++) {
          double x = tz_sgmat_f32(form == TZ_SGMAT_DYTX ? a[(size_t)k * M + m] : a[(size_t)m * K + k]);
          double y = tz_sgmat_f32(form == TZ_SGMAT_XWT ? b[(size_t)n * K + k] : b[(size_t)k * N + n]);
          ref += x * y, mag += fabs(x * y);
        }
        if (form == TZ_SGMAT_XWT) ref += bias[n], mag += fabs(bias[n]);
        double e = fabs(c[(size_t)m * N + n] - ref) / (1e-3 * mag + 1e-6);
        if (e > worst) worst = e;
      }
      double tflops = 2.0 * M * N * K / (ms * 1e-3) / 1e12;
      printf("form %d %ux%ux%u tile %ux%ux%u%s (%u subgroups, %ux%u each): %.3f ms  %.1f TFLOP/s  "
             "sampled error %.3f of bound%s\n",
             form, M, N, K, bm, bn, t.bk, t.direct ? " direct" : "", t.sg_m * t.sg_n, t.tm, t.tn, ms, tflops, worst,
             worst <= 1 ? "" : "  FAIL");
      fflush(stdout);
      if (worst > 1) bad = 1;
    }
  }
  free(a), free(b), free(c), free(bias);
  tz_sgmat_close(s);
  return bad;
}
