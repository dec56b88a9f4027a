/* The CUDA entry points when tezgah is built without CUDA (TEZGAH_CUDA=OFF, or AUTO without
 * a CUDA toolkit >= 12): every call explains why and how to get the backend. */
#include "backend/backend.h"
#include "core/error.h"

#define TZ_NO_CUDA "cuda: this tezgah was built without CUDA (configure with -DTEZGAH_CUDA=ON and a CUDA toolkit >= 12)"

tz_backend *tz_backend_cuda_create(const char *precision) {
  (void)precision;
  tz_err(TZ_NO_CUDA);
  return NULL;
}
void tz_backend_cuda_env(const char *precision) { (void)precision; }
int tz_cuda_info(void) { return tz_err(TZ_NO_CUDA); }
void tz_cuda_profile_print(tz_backend *be, double steps) { (void)be, (void)steps; }
void tz_cuda_profile_reset(tz_backend *be) { (void)be; }
double tz_backend_cuda_reset_device(void) { return 0.0; }
long tz_cuda_ln_rb_calls(int fused) { (void)fused; return 0; }
