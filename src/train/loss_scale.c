/* Dynamic loss scaling: see loss_scale.h. */
#include "train/loss_scale.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"
#include "core/error.h"

int tz_loss_scale_parse(const char *s, int *mode, float *fixed) {
  *mode = -1;
  *fixed = 1.0f;
  if (!s || !*s) return 0;
  if (!strcmp(s, "dynamic")) return *mode = TZ_LS_DYNAMIC, 0;
  if (!strcmp(s, "off")) return *mode = TZ_LS_OFF, 0;
  long v; /* decimal digits only (core/decimal.h) */
  /* a power of two: S·g and g·(clip/S) are then exact in binary floating point */
  if (tz_decimal_long(s, strlen(s), &v) || v < 1 || v > (long)TZ_LS_MAX || (v & (v - 1)))
    return tz_err("--loss-scale: '%s' is not dynamic, off or a power of two in [1, %.0f]", s, (double)TZ_LS_MAX);
  *mode = TZ_LS_FIXED;
  *fixed = (float)v;
  return 0;
}

/* A power of two in [TZ_LS_MIN, TZ_LS_MAX]? */
static int valid_scale(float s) {
  int e;
  return s >= TZ_LS_MIN && s <= TZ_LS_MAX && frexpf(s, &e) == 0.5f;
}

int tz_loss_scaler_init(tz_loss_scaler *ls, const char *opt, int backend_needs, float restored_scale,
                        int restored_clean) {
  int mode;
  float fixed;
  memset(ls, 0, sizeof *ls);
  if (tz_loss_scale_parse(opt, &mode, &fixed)) return -1;
  if (mode < 0) mode = backend_needs ? TZ_LS_DYNAMIC : TZ_LS_OFF;
  ls->mode = (tz_ls_mode)mode;
  ls->growth_interval = TZ_LS_GROWTH;
  const char *g = getenv("TEZGAH_LOSS_SCALE_GROWTH");
  if (g && *g) {
    long v;
    if (tz_decimal_long(g, strlen(g), &v) || v < 1 || v > 1L << 30)
      return tz_err("TEZGAH_LOSS_SCALE_GROWTH: '%s' is not a step count in [1, 2^30]", g);
    ls->growth_interval = (int)v;
  }
  ls->scale = mode == TZ_LS_FIXED ? fixed : 1.0f;
  if (mode == TZ_LS_DYNAMIC) {
    ls->scale = TZ_LS_INIT;
    if (restored_scale > 0 && valid_scale(restored_scale)) {
      ls->scale = restored_scale;
      ls->clean = restored_clean > 0 ? restored_clean : 0;
    }
  }
  return 0;
}

int tz_loss_scaler_update(tz_loss_scaler *ls, int overflow) {
  if (ls->mode != TZ_LS_DYNAMIC) return 0;
  float old = ls->scale;
  if (overflow) {
    ls->clean = 0;
    if (ls->scale > TZ_LS_MIN) ls->scale *= 0.5f;
  } else if (++ls->clean >= ls->growth_interval) {
    ls->clean = 0;
    if (ls->scale < TZ_LS_MAX) ls->scale *= 2.0f;
  }
  return ls->scale != old;
}

const char *tz_loss_scale_mode_name(tz_ls_mode mode) {
  return mode == TZ_LS_DYNAMIC ? "dynamic" : mode == TZ_LS_FIXED ? "fixed" : "off";
}
