#include "train/outlier.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

static double at(const tz_outlier *o, int i) { /* i-th oldest */
  return o->v[(o->head + i) % TZ_OUTLIER_WINDOW];
}

double tz_outlier_z(const tz_outlier *o, double x) {
  if (o->n < TZ_OUTLIER_MIN || !isfinite(x)) return NAN;
  double mean = 0, var = 0;
  for (int i = 0; i < o->n; i++) mean += at(o, i);
  mean /= o->n;
  for (int i = 0; i < o->n; i++) var += (at(o, i) - mean) * (at(o, i) - mean);
  double sd = sqrt(var / o->n);
  if (sd == 0) return x == mean ? 0.0 : copysign(INFINITY, x - mean);
  return (x - mean) / sd;
}

void tz_outlier_push(tz_outlier *o, double x) {
  if (!isfinite(x)) return;
  if (o->n < TZ_OUTLIER_WINDOW) {
    o->v[(o->head + o->n) % TZ_OUTLIER_WINDOW] = x;
    o->n++;
  } else {
    o->v[o->head] = x;
    o->head = (o->head + 1) % TZ_OUTLIER_WINDOW;
  }
}

cJSON *tz_outlier_to_json(const tz_outlier *o) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < o->n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(at(o, i)));
  return a;
}

int tz_outlier_from_json(const cJSON *arr, const char *where, const char *field, tz_outlier *o) {
  memset(o, 0, sizeof *o);
  if (!arr) return 0;
  if (!cJSON_IsArray(arr)) return tz_err("%s: training state field '%s' is not an array", where, field);
  int n = cJSON_GetArraySize(arr);
  if (n > TZ_OUTLIER_WINDOW)
    return tz_err("%s: training state field '%s' holds %d values (at most %d)", where, field, n, TZ_OUTLIER_WINDOW);
  const cJSON *x;
  cJSON_ArrayForEach(x, arr) {
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
      return tz_err("%s: training state field '%s' holds a value that is not a finite number", where, field);
    tz_outlier_push(o, x->valuedouble);
  }
  return 0;
}
