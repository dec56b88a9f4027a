/* Our webgpu.h subset (src/backend/webgpu/webgpu_api.h) against the ABI facts of the pinned
 * Dawn build (../shared/webgpu/dawn_abi_facts.txt): for every struct we declare, its size
 * and alignment and every member's offset and size; every constant's value; every loaded
 * function's signature and every callback typedef (text compared with whitespace and the
 * "struct " keyword removed). Functions the facts file does not list (SetBindGroup,
 * GetBindGroupLayout) are reported and only checked for presence when Dawn is loadable.
 * SKIPPED (exit 77) when the facts file is absent. No GPU needed. */
#include <ctype.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_api.h"
#include "testutil.h"

static char *facts;

static int setup(void **state) {
  char *path = tz_test_shared("webgpu/dawn_abi_facts.txt");
  FILE *f = fopen(path, "rb");
  if (!f) tz_test_skip_all("../shared/webgpu/dawn_abi_facts.txt is absent");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  facts = malloc(n + 1);
  facts[fread(facts, 1, n, f)] = 0;
  fclose(f);
  free(path);
  return 0;
}

/* the facts line starting with `prefix` (at a line start), or NULL */
static const char *line_of(const char *prefix) {
  size_t n = strlen(prefix);
  for (const char *p = facts; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (!strncmp(p, prefix, n)) return p;
  return NULL;
}
static long field(const char *line, const char *key) {
  const char *e = strchr(line, '\n');
  const char *k = strstr(line, key);
  if (!k || (e && k > e)) return -1;
  return strtol(k + strlen(key), NULL, 0);
}

static void test_structs(void **state) {
  int n = 0;
#define CHECK_STRUCT(S)                                                                         \
  {                                                                                             \
    const char *l = line_of("struct " #S " ");                                                  \
    if (!l) print_error("struct %s not in the facts\n", #S), fail();                              \
    if (field(l, "size=") != (long)sizeof(S) || field(l, "align=") != (long)alignof(S)) {       \
      print_error("%s: size %zu align %zu, facts say %.60s\n", #S, sizeof(S), alignof(S), l);  \
      fail();                                                                                   \
    }                                                                                           \
    n++;                                                                                        \
  }
  TZ_WGPU_STRUCTS(CHECK_STRUCT)
#define CHECK_MEMBER(S, m)                                                                      \
  {                                                                                             \
    const char *l = line_of("  " #S "." #m " ");                                                \
    if (!l) print_error("%s.%s not in the facts\n", #S, #m), fail();                            \
    if (field(l, "offset=") != (long)offsetof(S, m) || field(l, "size=") != (long)sizeof(((S *)0)->m)) { \
      print_error("%s.%s: offset %zu size %zu, facts say %.60s\n", #S, #m, offsetof(S, m),     \
                  sizeof(((S *)0)->m), l);                                                      \
      fail();                                                                                   \
    }                                                                                           \
    n++;                                                                                        \
  }
  TZ_WGPU_MEMBERS(CHECK_MEMBER)
  /* every member the facts list for a struct we declare is declared by us */
  int listed = 0;
#define COUNT_FACT_MEMBERS(S)                                                                   \
  for (const char *p = facts; (p = strstr(p, "\n  " #S ".")); p++) listed++;
  TZ_WGPU_STRUCTS(COUNT_FACT_MEMBERS)
  int ours = 0;
#define COUNT_OURS(S, m) ours++;
  TZ_WGPU_MEMBERS(COUNT_OURS)
  if (listed != ours) print_error("facts list %d members of our structs, we declare %d\n", listed, ours), fail();
  printf("checked %d struct and member facts\n", n);
}

static void test_constants(void **state) {
  int n = 0;
  char pre[128];
#define CHECK_CONST(C)                                                                          \
  {                                                                                             \
    snprintf(pre, sizeof pre, "const %s = ", #C);                                               \
    const char *l = line_of(pre);                                                               \
    if (!l) print_error("%s not in the facts\n", #C), fail();                                   \
    unsigned long long v = strtoull(l + strlen(pre), NULL, 0);                                  \
    if (v != (unsigned long long)(C)) print_error("%s = 0x%llx, facts 0x%llx\n", #C, (unsigned long long)(C), v), fail(); \
    n++;                                                                                        \
  }
  TZ_WGPU_CONSTS(CHECK_CONST)
  assert_non_null(line_of("sizeof(enum) = 4"));
  assert_int_equal(sizeof(WGPUFeatureName), 4);
  printf("checked %d constants\n", n);
}

/* remove spaces and "struct " so "WGPUX const * x" == "WGPUX const* x" */
static void norm(const char *in, char *out, size_t cap) {
  size_t j = 0;
  for (size_t i = 0; in[i] && in[i] != '\n' && j + 1 < cap; i++) {
    if (!strncmp(in + i, "struct ", 7)) {
      i += 6;
      continue;
    }
    if (!isspace((unsigned char)in[i])) out[j++] = in[i];
  }
  out[j] = 0;
}

static void test_signatures(void **state) {
  int n = 0, absent = 0;
  char want[1024], got[1024], tmp[1024];
#define CHECK_FN(ret, name, args)                                                               \
  {                                                                                             \
    snprintf(tmp, sizeof tmp, " %s(", #name);                                                   \
    const char *l = strstr(facts, tmp);                                                         \
    if (!l) {                                                                                   \
      printf("note: %s is not listed in the facts (resolved at load time only)\n", #name);     \
      absent++;                                                                                 \
    } else {                                                                                    \
      while (l > facts && l[-1] != '\n') l--;                                                   \
      norm(l, want, sizeof want);                                                               \
      snprintf(tmp, sizeof tmp, "%s %s%s;", #ret, #name, #args);                                \
      norm(tmp, got, sizeof got);                                                               \
      if (strcmp(want, got)) print_error("signature of %s:\n ours  %s\n facts %s\n", #name, got, want), fail(); \
      n++;                                                                                      \
    }                                                                                           \
  }
  TZ_WGPU_FUNCS(CHECK_FN)
#define CHECK_CB(name, args)                                                                    \
  {                                                                                             \
    snprintf(tmp, sizeof tmp, "typedef void (*%s)", #name);                                     \
    const char *l = line_of(tmp);                                                               \
    if (!l) print_error("callback %s not in the facts\n", #name), fail();                       \
    norm(l, want, sizeof want);                                                                 \
    snprintf(tmp, sizeof tmp, "typedef void (*%s)%s;", #name, #args);                           \
    norm(tmp, got, sizeof got);                                                                 \
    if (strcmp(want, got)) print_error("callback %s:\n ours  %s\n facts %s\n", #name, got, want), fail(); \
    n++;                                                                                        \
  }
  TZ_WGPU_CALLBACKS(CHECK_CB)
  printf("checked %d signatures (%d functions not in the facts)\n", n, absent);
  assert_true(absent <= 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_structs), cmocka_unit_test(test_constants),
                                     cmocka_unit_test(test_signatures)};
  return cmocka_run_group_tests(tests, setup, NULL);
}
