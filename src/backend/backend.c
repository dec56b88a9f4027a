/* Backend selection by name. One entry per compiled backend; "cpu" is always present. */
#include "backend/backend.h"

#include <string.h>

#include "core/error.h"

int tz_backend_check(const char *name, const char *precision) {
  if (!name || (strcmp(name, "cpu") && strcmp(name, "webgpu") && strcmp(name, "cuda")))
    return tz_err("unknown backend '%s' (available: cpu, webgpu, cuda)", name ? name : "(null)");
  if (precision && *precision) {
    if (strcmp(precision, "fp32") != 0 && strcmp(precision, "bf16") != 0)
      return tz_err("precision: '%s' is not one of fp32, bf16", precision);
    if (strcmp(name, "cuda") != 0 && strcmp(precision, "fp32") != 0)
      return tz_err("precision: '%s' is not offered by the %s backend (fp32 only; bf16 needs --backend cuda)",
                    precision, name);
  }
  return 0;
}

tz_backend *tz_backend_create(const char *name, int threads, const char *precision) {
  if (tz_backend_check(name, precision)) return NULL;
  if (strcmp(name, "cpu") == 0) return tz_backend_cpu_create(threads);
  if (strcmp(name, "webgpu") == 0) return tz_backend_webgpu_create();
  return tz_backend_cuda_create(precision);
}
