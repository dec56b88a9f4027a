/* Test helper for tests/test_dist_cpu.sh: compare fp32 sections of two checkpoints.
 *   tz_ckpt_diff A B SECTION...
 * prints, per section, "SECTION n=N differ=K max_abs=X rel=Y" where rel = max|a−b| / max|a|
 * (the largest difference relative to the section's largest magnitude; 0 when identical);
 * exit 0, or 1 when a file or section is missing or the sizes differ. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checkpoint/ckpt.h"
#include "core/error.h"

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: tz_ckpt_diff A B SECTION...\n");
    return 2;
  }
  tz_ckpt *a, *b;
  if (tz_ckpt_open(argv[1], &a) || tz_ckpt_open(argv[2], &b)) return fprintf(stderr, "%s\n", tz_errmsg()), 1;
  int rc = 0;
  for (int i = 3; i < argc; i++) {
    size_t na, nb;
    const float *x = tz_ckpt_get(a, argv[i], &na), *y = tz_ckpt_get(b, argv[i], &nb);
    if (!x || !y || na != nb || na % 4) {
      fprintf(stderr, "%s: missing or of different sizes (%zu, %zu bytes)\n", argv[i], x ? na : 0, y ? nb : 0);
      rc = 1;
      continue;
    }
    size_t n = na / 4, differ = 0;
    double max_abs = 0, max_a = 0;
    for (size_t k = 0; k < n; k++) {
      if (memcmp(x + k, y + k, 4)) differ++;
      double d = fabs((double)x[k] - (double)y[k]);
      if (!(d <= max_abs)) max_abs = d; /* NaN propagates */
      if (fabs(x[k]) > max_a) max_a = fabs(x[k]);
    }
    printf("%s n=%zu differ=%zu max_abs=%.3g rel=%.3g\n", argv[i], n, differ, max_abs, max_a > 0 ? max_abs / max_a : max_abs);
  }
  tz_ckpt_close(a);
  tz_ckpt_close(b);
  return rc;
}
