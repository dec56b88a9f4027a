/* The Dawn loader's failures (src/backend/webgpu/dawn_load.c), each one tz_err line naming the
 * file and the problem, and no half-loaded state after them:
 *  - a path that does not exist;
 *  - a stripped file that exports no wgpu* functions (no .symtab to take them from);
 *  - an ELF symbol-table Dawn that is not the pinned dawn.node (GNU build-id mismatch: the
 *    loader-time counterpart of setup's sha256 check);
 *  - with TEZGAH_WEBGPU_ABI_UNCHECKED=1: a build without the node ABI's marker symbol (ABI
 *    mismatch) and one that lacks an entry point (missing symbol);
 *  - TEZGAH_WEBGPU_DAWN set to neither kind.
 * The stand-ins are tests/support/fake_dawn.c, built by tests/CMakeLists.txt. No GPU needed;
 * the CPU backend's independence from Dawn is test_webgpu_cli's part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"
#include "testutil.h"

static void expect(const char *lib, const char *unchecked, const char *needle, const char *path_part) {
  if (lib) setenv("TEZGAH_WEBGPU_LIB", lib, 1);
  if (unchecked) setenv("TEZGAH_WEBGPU_ABI_UNCHECKED", unchecked, 1);
  else unsetenv("TEZGAH_WEBGPU_ABI_UNCHECKED");
  assert_int_equal(tz_wgpu_load(), -1);
  const char *m = tz_errmsg();
  printf("%s -> %s\n", lib ? lib : "(default)", m);
  assert_non_null(strstr(m, needle));
  if (path_part) assert_non_null(strstr(m, path_part));
  assert_null(strchr(m, '\n')); /* one line */
  assert_null(tz_wgpu_lib_path()); /* nothing half-loaded */
  assert_ptr_equal(tz_wgpu_abi, &tz_wgpu_abi_bun);
}

static void test_failures(void **state) {
  setenv("TEZGAH_NAPI_STUB", TZ_NAPI_STUB_PATH, 1);
  expect("/nonexistent/dawn.node", NULL, "no such readable file", "/nonexistent/dawn.node");
  expect(TZ_FAKE_DIR "/libtz_fake_dawn_stripped.so", NULL, "is stripped", "libtz_fake_dawn_stripped.so");
  expect(TZ_FAKE_DIR "/libtz_fake_dawn.so", NULL, "not the pinned dawn.node", "build-id");
  expect(TZ_FAKE_DIR "/libtz_fake_dawn_nomarker.so", "1", "has an ABI other than", "wgpuGetInstanceLimits");
  expect(TZ_FAKE_DIR "/libtz_fake_dawn.so", "1", "no symbol wgpuInstanceRequestAdapter", "libtz_fake_dawn.so");
  unsetenv("TEZGAH_WEBGPU_LIB");
  setenv("TEZGAH_WEBGPU_DAWN", "chrome", 1);
  expect(NULL, NULL, "TEZGAH_WEBGPU_DAWN=chrome", NULL);
  unsetenv("TEZGAH_WEBGPU_DAWN");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_failures)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
