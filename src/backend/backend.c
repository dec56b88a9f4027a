/* Backend selection by name. One entry per compiled backend; "cpu" is always present. */
#include "backend/backend.h"

#include <string.h>

#include "core/error.h"

tz_backend *tz_backend_create(const char *name, int threads) {
  if (name && strcmp(name, "cpu") == 0) return tz_backend_cpu_create(threads);
  if (name && strcmp(name, "webgpu") == 0) return tz_backend_webgpu_create();
  tz_err("unknown backend '%s' (available: cpu, webgpu)", name ? name : "(null)");
  return NULL;
}
