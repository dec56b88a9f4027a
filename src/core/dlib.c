/* Finding and explaining libraries loaded on first use (dlib.h). */
#include "core/dlib.h"

#ifndef __wasi__ /* no dlopen in the wasm build: nothing there loads on use */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

#ifndef TZ_MODULE_DIR
#define TZ_MODULE_DIR "/usr/local/lib/tezgah"
#endif

static int readable(char *out, size_t cap, const char *dir, const char *name) {
  int k = snprintf(out, cap, "%s/%s", dir, name);
  return k > 0 && (size_t)k < cap && access(out, R_OK) == 0;
}

int tz_module_find(const char *name, const char *what, char *out, size_t cap) {
  const char *env = getenv("TEZGAH_MODULE_DIR");
  if (env && *env) {
    if (readable(out, cap, env, name)) return 0;
    return tz_err("%s: %s/%s not found (TEZGAH_MODULE_DIR)", what, env, name);
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    for (int up = 0; up < 6; up++) {
      char *slash = strrchr(exe, '/');
      if (!slash) break;
      *slash = 0;
      if (readable(out, cap, *exe ? exe : "/", name)) return 0;
      char inst[PATH_MAX];
      if (up == 1 && snprintf(inst, sizeof inst, "%s/lib/tezgah", exe) < (int)sizeof inst &&
          readable(out, cap, inst, name))
        return 0; /* an install moved elsewhere: <prefix>/bin/tezgah, <prefix>/lib/tezgah */
    }
  }
  if (readable(out, cap, TZ_MODULE_DIR, name)) return 0;
  return tz_err("%s: %s not found beside the program, in the folders above it or in %s (it is built "
                "with tezgah; TEZGAH_MODULE_DIR sets the folder)",
                what, name, TZ_MODULE_DIR);
}

const char *tz_dl_why(const char *path) {
  const char *why = dlerror();
  size_t n = strlen(path);
  if (why && !strncmp(why, path, n) && !strncmp(why + n, ": ", 2)) why += n + 2;
  return why ? why : "dlopen failed";
}

#endif
