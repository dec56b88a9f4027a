/* Load Dawn (libwebgpu_wrapper.so from npm bun-webgpu-linux-x64@0.1.7) at run time.
 *
 * Search order: $TEZGAH_WEBGPU_LIB (a path to another build); then .deps/dawn/
 * libwebgpu_wrapper.so in the executable's folder or any of its parents (the repository's
 * scripts/setup_webgpu.sh puts it there, and build/, build/tests/ sit below it); then
 * ../share/tezgah/dawn/libwebgpu_wrapper.so beside an installed bin/tezgah (cmake --install).
 * ABI sanity check: every function of TZ_WGPU_FUNCS must resolve, plus a marker symbol that
 * only Dawn builds with this ABI generation export (subgroup-matrix configs, mid 2025);
 * a library lacking either is reported as incompatible, naming the symbol. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"

tz_wgpu_fns tz_wgpu;
static void *lib;
static char lib_path[PATH_MAX];

const char *tz_wgpu_lib_path(void) { return lib ? lib_path : NULL; }

#define TZ_DAWN_REL ".deps/dawn/libwebgpu_wrapper.so"
#define TZ_DAWN_MARKER "wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers"

static int find_default(char *out, size_t cap) {
  char exe[PATH_MAX - 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  for (int up = 0; up < 6; up++) {
    char *slash = strrchr(exe, '/');
    if (!slash) break;
    *slash = 0;
    int k = snprintf(out, cap, "%s/%s", exe, TZ_DAWN_REL);
    if (k > 0 && (size_t)k < cap && access(out, R_OK) == 0) return 0;
    if (up == 1) { /* exe is now the prefix above bin/ */
      k = snprintf(out, cap, "%s/share/tezgah/dawn/libwebgpu_wrapper.so", exe);
      if (k > 0 && (size_t)k < cap && access(out, R_OK) == 0) return 0;
    }
  }
  return -1;
}

int tz_wgpu_load(void) {
  if (lib) return 0;
  const char *env = getenv("TEZGAH_WEBGPU_LIB");
  if (env && *env) {
    snprintf(lib_path, sizeof lib_path, "%s", env);
  } else if (find_default(lib_path, sizeof lib_path) != 0) {
    return tz_err("webgpu: Dawn library not found: set TEZGAH_WEBGPU_LIB or run "
                  "scripts/setup_webgpu.sh (installs %s in the repository)", TZ_DAWN_REL);
  }
  void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    /* glibc's dlerror() starts with the path itself ("/x.so: cannot open shared object
     * file: ..."): name it once */
    const char *why = dlerror();
    size_t n = strlen(lib_path);
    if (why && !strncmp(why, lib_path, n) && !strncmp(why + n, ": ", 2)) why += n + 2;
    return tz_err("webgpu: cannot load Dawn from %s: %s", lib_path, why ? why : "dlopen failed");
  }
  tz_wgpu_fns f;
#define TZ_WGPU_SYM(ret, name, args)                                                           \
  *(void **)&f.name = dlsym(h, #name);                                                         \
  if (!f.name) {                                                                               \
    dlclose(h);                                                                                \
    return tz_err("webgpu: %s is not a compatible Dawn build (no symbol %s; need "             \
                  "bun-webgpu-linux-x64@0.1.7's libwebgpu_wrapper.so)", lib_path, #name);      \
  }
  TZ_WGPU_FUNCS(TZ_WGPU_SYM)
#undef TZ_WGPU_SYM
  if (!dlsym(h, TZ_DAWN_MARKER)) {
    dlclose(h);
    return tz_err("webgpu: %s has an older webgpu.h ABI than this build expects (no %s; need "
                  "bun-webgpu-linux-x64@0.1.7's libwebgpu_wrapper.so)", lib_path, TZ_DAWN_MARKER);
  }
  tz_wgpu = f;
  lib = h;
  return 0;
}
