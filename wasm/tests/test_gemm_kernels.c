/* The wasm build's GEMM micro-kernels against each other, bit for bit (tests/test_wasm_node.sh
 * runs it under node:wasi): wasm128 (fmaf emulated two lanes at a time in f64x2) and scalar
 * (wasi-libc's fmaf) must give the same C for the same packed panels. Inputs: random floats
 * over wide exponent ranges (accumulators that pass through float's subnormal range) and
 * crafted cases where the double sum lands exactly on a float halfway point although the exact
 * sum does not (the double rounding the kernel must detect): acc = 1 + 2^-23 (odd last bit),
 * a = 1 + 2^-15, b = (1 - 2^-15)·2^-24, so a·b + acc = acc + 2^-24 - 2^-54 rounds to
 * acc + 2^-24 in double, whose float tie goes up, while fmaf keeps acc.
 * Prints one line; exit 0 when every element of every case is equal, 1 otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_kernels.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}
/* a float with a random significand and sign, exponent in [lo, hi] */
static float rnd(int lo, int hi) {
  float m = 1.0f + (float)(next() & 0x7fffff) / 8388608.0f;
  float v = ldexpf(m, lo + (int)(next() % (unsigned)(hi - lo + 1)));
  return next() & 1 ? -v : v;
}

static const tz_mm_ukernel *pick(const char *isa) {
  setenv("TEZGAH_CPU_ISA", isa, 1);
  const tz_mm_ukernel *k = tz_mm_pick();
  if (!k) {
    printf("FAIL: no %s kernel in this build\n", isa);
    exit(1);
  }
  return k;
}

int main(void) {
  const tz_mm_ukernel *w = pick("wasm128"), *s = pick("scalar");
  enum { KC = 64, MAXT = 16 };
  static float a[KC * MAXT], bw[KC * MAXT], bs[KC * MAXT], cw[MAXT * MAXT], cs[MAXT * MAXT];
  long cases = 0, elems = 0, diffs = 0, crafted = 0;
  for (int t = 0; t < 20000; t++) {
    int mode = t % 4, kc = 1 + (int)(next() % KC);
    /* packed a: kc × w->mr (the scalar kernel reads the same values with its own mr) */
    for (int k = 0; k < kc; k++)
      for (int i = 0; i < MAXT; i++)
        a[k * MAXT + i] = mode == 0 ? rnd(-8, 8) : mode == 1 ? rnd(-70, -40) : mode == 2 ? rnd(-30, 30) : 0.0f;
    for (int k = 0; k < kc; k++)
      for (int j = 0; j < MAXT; j++) bw[k * MAXT + j] = mode == 1 ? rnd(-70, -40) : rnd(-8, 8);
    if (mode == 3) { /* crafted: step 0 sets acc = 1 + 2^-23, step 1 adds the near-halfway product */
      kc = 2;
      for (int i = 0; i < MAXT; i++) {
        a[0 * MAXT + i] = 1.0f + 0x1p-23f;
        a[1 * MAXT + i] = 1.0f + 0x1p-15f;
      }
      for (int j = 0; j < MAXT; j++) {
        bw[0 * MAXT + j] = 1.0f;
        bw[1 * MAXT + j] = (j & 1 ? -1.0f : 1.0f) * (1.0f - 0x1p-15f) * 0x1p-24f;
      }
      crafted++;
    }
    /* run both kernels on the same logical mr × nr tile (4 × 4: both kernels' tiles cover it) */
    int mr = 4, nr = 4;
    float pa_w[KC * 4], pb_w[KC * 4], pa_s[KC * 4], pb_s[KC * 8];
    for (int k = 0; k < kc; k++) {
      for (int i = 0; i < 4; i++) pa_w[k * w->mr + i] = pa_s[k * s->mr + i] = a[k * MAXT + i];
      for (int j = 0; j < s->nr; j++) pb_s[k * s->nr + j] = j < nr ? bw[k * MAXT + j] : 0.0f;
      for (int j = 0; j < w->nr; j++) pb_w[k * w->nr + j] = bw[k * MAXT + j];
    }
    memset(cw, 0, sizeof cw), memset(cs, 0, sizeof cs);
    w->fn(kc, pa_w, pb_w, cw, MAXT, mr, nr, 0, NULL);
    s->fn(kc, pa_s, pb_s, cs, MAXT, mr, nr, 0, NULL);
    for (int i = 0; i < mr; i++)
      for (int j = 0; j < nr; j++) {
        uint32_t x, y;
        memcpy(&x, &cw[i * MAXT + j], 4), memcpy(&y, &cs[i * MAXT + j], 4);
        elems++;
        if (x != y && !(isnan(cw[i * MAXT + j]) && isnan(cs[i * MAXT + j]))) {
          if (diffs++ < 5)
            printf("differ: case %d (mode %d) C[%d][%d]: wasm128 %a, scalar %a\n", t, mode, i, j, cw[i * MAXT + j], cs[i * MAXT + j]);
        }
      }
    cases++;
  }
  bw[0] = 0; (void)bs;
  printf("%s: wasm128 vs scalar GEMM kernel: %ld tiles (%ld crafted double-rounding cases), %ld elements, %ld differ\n",
         diffs ? "FAIL" : "ok", cases, crafted, elems, diffs);
  return diffs ? 1 : 0;
}
