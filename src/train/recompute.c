#include "train/recompute.h"

#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"
#include "core/error.h"
#include "tezgah.h"

tz_rc_choice tz_recompute_decide(int mode, size_t need_store, size_t need_rc, size_t free_bytes) {
  if (mode == TZ_RECOMPUTE_ON) return TZ_RC_RECOMPUTE;
  if (mode == TZ_RECOMPUTE_OFF) return TZ_RC_STORE;
  /* auto. Unknown: keep the activations (what every run did before auto); the allocation then
   * says whether they fit, as it did. */
  if (free_bytes == TZ_MEM_UNKNOWN || need_store <= free_bytes) return TZ_RC_STORE;
  if (need_rc <= free_bytes) return TZ_RC_RECOMPUTE;
  return TZ_RC_NEITHER;
}

int tz_recompute_parse(const char *s, const char *flag, int *mode) {
  if (!strcmp(s, "auto")) *mode = TZ_RECOMPUTE_AUTO;
  else if (!strcmp(s, "on")) *mode = TZ_RECOMPUTE_ON;
  else if (!strcmp(s, "off")) *mode = TZ_RECOMPUTE_OFF;
  else return tz_err("%s: '%s' is not auto, on or off", flag, s);
  return 0;
}

const char *tz_recompute_name(int mode) {
  return mode == TZ_RECOMPUTE_ON ? "on" : mode == TZ_RECOMPUTE_OFF ? "off" : "auto";
}

int tz_recompute_debug_free(size_t *bytes) {
  const char *e = getenv("TEZGAH_DEBUG_MEM_FREE");
  long v;
  if (!e || !*e) return 0;
  if (tz_decimal_long(e, strlen(e), &v) || v < 0)
    return tz_err("TEZGAH_DEBUG_MEM_FREE: '%s' is not a number of bytes (a decimal integer from 0 to 2^63 - 1)", e);
  *bytes = (size_t)v;
  return 1;
}
