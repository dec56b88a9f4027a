/* Backend selection by name. One entry per compiled backend; "cpu" is always present. */
#include "backend/backend.h"

#include <string.h>

#include "core/error.h"

tz_backend *tz_backend_create(const char *name, int threads, const char *precision) {
  int cuda = name && strcmp(name, "cuda") == 0;
  if (name && precision && *precision) {
    if (strcmp(precision, "fp32") != 0 && strcmp(precision, "bf16") != 0) {
      tz_err("precision: '%s' is not one of fp32, bf16", precision);
      return NULL;
    }
    if (!cuda && strcmp(precision, "fp32") != 0) {
      tz_err("precision: '%s' is not offered by the %s backend (fp32 only; bf16 needs --backend cuda)",
             precision, name);
      return NULL;
    }
  }
  if (name && strcmp(name, "cpu") == 0) return tz_backend_cpu_create(threads);
  if (name && strcmp(name, "webgpu") == 0) return tz_backend_webgpu_create();
  if (cuda) return tz_backend_cuda_create(precision);
  tz_err("unknown backend '%s' (available: cpu, webgpu, cuda)", name ? name : "(null)");
  return NULL;
}
