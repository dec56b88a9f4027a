#include "testutil.h"

#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

_Noreturn void tz_test_skip_all(const char *why) {
  printf("SKIPPED: %s\n", why);
  fflush(stdout);
  exit(77);
}

char *tz_test_shared(const char *rel) {
  size_t n = strlen(TZ_SHARED_DIR) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", TZ_SHARED_DIR, rel);
  struct stat st;
  if (stat(p, &st) != 0) {
    char why[1024];
    snprintf(why, sizeof why, "%s is absent (../shared not available)", p);
    tz_test_skip_all(why);
  }
  return p;
}

char *tz_test_tmpdir(const char *name) {
  size_t n = strlen(TZ_TEST_TMP) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", TZ_TEST_TMP, name);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", p, p);
  if (system(cmd) != 0) {
    fprintf(stderr, "cannot create %s\n", p);
    exit(1);
  }
  return p;
}

int tz_test_sh(const char *cmd) {
  int st = system(cmd);
  if (st == -1) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void tz_test_assert_msg_has(const char *needle) {
  if (!strstr(tz_errmsg(), needle)) fail_msg("error '%s' does not contain '%s'", tz_errmsg(), needle);
}

int tz_test_has_temp_file(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int found = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp.")) found = 1;
  closedir(d);
  return found;
}

int tz_test_shared_missing;
char *tz_test_shared_or_skip(const char *rel) {
  size_t n = strlen(TZ_SHARED_DIR) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", TZ_SHARED_DIR, rel);
  struct stat st;
  if (stat(p, &st) != 0) {
    printf("SKIPPED: %s is absent (../shared not available)\n", p);
    tz_test_shared_missing = 1;
    free(p);
    return NULL;
  }
  return p;
}
