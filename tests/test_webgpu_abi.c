/* Our webgpu.h subset (src/backend/webgpu/webgpu_api.h) against the ABI facts of BOTH supported
 * Dawn builds: tests/fixtures/dawn_abi_facts_bun.txt (npm bun-webgpu 0.1.7, Dawn 7adb0440d5) and
 * dawn_abi_facts_node.txt (npm webgpu@0.6.2's dawn.node, Dawn after 1e975e28f9), both written
 * by scripts/dawn_abi_facts.py from dawn.json. For each build:
 *  - every struct we declare for both builds: size, alignment, every member's offset and size,
 *    and that we declare every member the facts list;
 *  - the structs declared for that build only (the two instance descriptors), by facts name;
 *  - every constant shared by both, and the loader's table of the constants that differ
 *    (tz_wgpu_abi_bun / tz_wgpu_abi_node: feature numbers), each against its own build;
 *  - every loaded function's and callback's signature: types compared, parameter names not
 *    (they are not ABI, and dawn.json renamed some: RequestDevice's `options` -> `descriptor`).
 * Plus: every line of ../shared/webgpu/dawn_abi_facts.txt (written by another tool for the bun
 * build) appears in our bun facts (that test is SKIPPED where ../shared is absent). No GPU needed. */
#include <ctype.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_api.h"
#include "testutil.h"

static char *facts;      /* the facts file under test */
static const char *build; /* "bun" or "node" */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc(n + 1);
  s[fread(s, 1, n, f)] = 0;
  fclose(f);
  return s;
}

static void use(const char *which) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fixtures/dawn_abi_facts_%s.txt", TZ_SOURCE_DIR, which);
  free(facts);
  facts = slurp(path);
  if (!facts) print_error("cannot read %s\n", path), fail();
  build = which;
}

/* the facts line starting with `prefix` (at a line start), or NULL. memchr to each line's end,
 * not strchr: under ASan's strict_string_checks (scripts/ci_sanitize.sh) every strchr measures
 * the rest of the file first, which made this walk quadratic (13 of the program's 13.0 CPU s in
 * the ASan lane, 0.1 without the option, branch ci38b). */
static const char *line_of(const char *prefix) {
  size_t n = strlen(prefix);
  const char *end = facts + strlen(facts);
  for (const char *p = facts, *e; p < end; p = e ? e + 1 : end) {
    e = memchr(p, '\n', (size_t)(end - p));
    if (!strncmp(p, prefix, n)) return p;
  }
  return NULL;
}
static long field(const char *line, const char *key) {
  const char *e = strchr(line, '\n');
  const char *k = strstr(line, key);
  if (!k || (e && k > e)) return -1;
  return strtol(k + strlen(key), NULL, 0);
}

static int check_struct(const char *facts_name, size_t size, size_t align) {
  char pre[160];
  snprintf(pre, sizeof pre, "struct %s ", facts_name);
  const char *l = line_of(pre);
  if (!l) print_error("[%s] struct %s not in the facts\n", build, facts_name), fail();
  if (field(l, "size=") != (long)size || field(l, "align=") != (long)align) {
    print_error("[%s] %s: size %zu align %zu, facts say %.60s\n", build, facts_name, size, align, l);
    fail();
  }
  return 1;
}
static int check_member(const char *facts_name, const char *m, size_t off, size_t size) {
  char pre[200];
  snprintf(pre, sizeof pre, "  %s.%s ", facts_name, m);
  const char *l = line_of(pre);
  if (!l) print_error("[%s] %s.%s not in the facts\n", build, facts_name, m), fail();
  if (field(l, "offset=") != (long)off || field(l, "size=") != (long)size) {
    print_error("[%s] %s.%s: offset %zu size %zu, facts say %.60s\n", build, facts_name, m, off, size, l);
    fail();
  }
  return 1;
}
static int count_fact_members(const char *facts_name) {
  char pre[160];
  int n = 0;
  snprintf(pre, sizeof pre, "\n  %s.", facts_name);
  for (const char *p = facts; (p = strstr(p, pre)); p++) n++;
  return n;
}

static void structs_of(const char *which) {
  use(which);
  int n = 0, listed = 0, ours = 0;
#define CHECK_STRUCT(S) n += check_struct(#S, sizeof(S), alignof(S)); listed += count_fact_members(#S);
  TZ_WGPU_STRUCTS(CHECK_STRUCT)
#define CHECK_MEMBER(S, m) n += check_member(#S, #m, offsetof(S, m), sizeof(((S *)0)->m)), ours++;
  TZ_WGPU_MEMBERS(CHECK_MEMBER)
#define CHECK_STRUCT2(T, F) n += check_struct(#F, sizeof(T), alignof(T)); listed += count_fact_members(#F);
#define CHECK_MEMBER2(T, F, m) n += check_member(#F, #m, offsetof(T, m), sizeof(((T *)0)->m)), ours++;
  if (!strcmp(which, "bun")) {
    TZ_WGPU_STRUCTS_BUN(CHECK_STRUCT2)
    TZ_WGPU_MEMBERS_BUN(CHECK_MEMBER2)
  } else {
    TZ_WGPU_STRUCTS_NODE(CHECK_STRUCT2)
    TZ_WGPU_MEMBERS_NODE(CHECK_MEMBER2)
  }
  /* every member the facts list for a struct we declare is declared by us */
  if (listed != ours) print_error("[%s] facts list %d members of our structs, we declare %d\n", which, listed, ours), fail();
  printf("[%s] checked %d struct and member facts\n", which, n);
}
static void test_structs_bun(void **state) { structs_of("bun"); }
static void test_structs_node(void **state) { structs_of("node"); }

static int check_const(const char *name, unsigned long long ours) {
  char pre[128];
  snprintf(pre, sizeof pre, "const %s = ", name);
  const char *l = line_of(pre);
  if (!l) print_error("[%s] %s not in the facts\n", build, name), fail();
  unsigned long long v = strtoull(l + strlen(pre), NULL, 0);
  if (v != ours) print_error("[%s] %s = 0x%llx, facts 0x%llx\n", build, name, ours, v), fail();
  return 1;
}

static void constants_of(const char *which, const tz_wgpu_abi_t *table) {
  use(which);
  int n = 0;
#define CHECK_CONST(C) n += check_const(#C, (unsigned long long)(C));
  TZ_WGPU_CONSTS(CHECK_CONST)
  if (!strcmp(which, "node")) { TZ_WGPU_CONSTS_NODE(CHECK_CONST) }
  /* the loader's per-build table, field by field */
#define CHECK_ABI(fld) n += check_const("WGPU" #fld, table->fld);
  TZ_WGPU_ABI_CONSTS(CHECK_ABI)
  assert_string_equal(table->name, which);
  /* the feature names `tezgah info` prints: each with its facts value, and every feature of the
   * facts named (a list copied incompletely printed numbers again) */
  for (size_t i = 0; i < table->n_feature_names; i++) {
    char c[96];
    snprintf(c, sizeof c, "WGPUFeatureName_%s", table->feature_names[i].name);
    n += check_const(c, table->feature_names[i].value);
  }
  size_t in_facts = 0;
  for (const char *p = facts; (p = strstr(p, "\nconst WGPUFeatureName_")); p++) in_facts++;
  if (in_facts != table->n_feature_names)
    print_error("[%s] %zu feature names, the facts %zu\n", which, table->n_feature_names, in_facts), fail();
  /* with the count equal, a name listed twice would hide one missing: each once */
  for (size_t i = 0; i < table->n_feature_names; i++)
    for (size_t j = i + 1; j < table->n_feature_names; j++)
      if (!strcmp(table->feature_names[i].name, table->feature_names[j].name))
        print_error("[%s] feature %s listed twice\n", which, table->feature_names[i].name), fail();
  /* the element size of the subgroup-matrix configuration list */
  n += check_struct("WGPUSubgroupMatrixConfig", table->SubgroupMatrixConfig_size, 4);
  assert_non_null(line_of("sizeof(enum) = 4"));
  assert_int_equal(sizeof(WGPUFeatureName), 4);
  printf("[%s] checked %d constants\n", which, n);
}
static void test_constants_bun(void **state) { constants_of("bun", &tz_wgpu_abi_bun); }
static void test_constants_node(void **state) { constants_of("node", &tz_wgpu_abi_node); }

/* The two tables differ where the facts differ, and only as the header says: a build's
 * feature numbers are not the other's (a wrong selection at load would ask for wrong features). */
static void test_tables_differ(void **state) {
  assert_int_not_equal(tz_wgpu_abi_bun.FeatureName_ShaderF16, tz_wgpu_abi_node.FeatureName_ShaderF16);
  assert_int_not_equal(tz_wgpu_abi_bun.FeatureName_Subgroups, tz_wgpu_abi_node.FeatureName_Subgroups);
  /* before any load, the macros read the bun table (the documented default) */
  assert_ptr_equal(tz_wgpu_abi, &tz_wgpu_abi_bun);
  assert_int_equal(WGPUFeatureName_ShaderF16, 0xa);
}

/* A declaration with whitespace, "struct " and parameter names removed:
 * "WGPUX const * x, size_t n" -> "WGPUXconst*,size_t". */
static void norm(const char *in, char *out, size_t cap) {
  char buf[1024];
  size_t j = 0;
  const char *open = NULL;
  for (size_t i = 0; in[i] && in[i] != '\n' && j + 1 < sizeof buf; i++) buf[j++] = in[i];
  buf[j] = 0;
  open = strchr(buf, '(');
  if (open && !strncmp(buf, "typedef", 7)) open = strchr(open + 1, '('); /* typedef void (*N)(...) */
  j = 0;
  for (size_t i = 0; buf[i] && j + 1 < cap; i++) {
    if (!strncmp(buf + i, "struct ", 7)) {
      i += 6;
      continue;
    }
    /* inside the parameter list, drop the identifier before ',' or ')' when a type precedes it */
    if (open && buf + i > open && (isalpha((unsigned char)buf[i]) || buf[i] == '_') &&
        (isspace((unsigned char)buf[i - 1]) || buf[i - 1] == '*')) {
      size_t k = i;
      while (isalnum((unsigned char)buf[k]) || buf[k] == '_') k++;
      size_t e = k;
      while (isspace((unsigned char)buf[e])) e++;
      /* a trailing identifier (a name), unless it is the parameter's only word (void) */
      if ((buf[e] == ',' || buf[e] == ')') && strncmp(buf + i, "void", 4)) {
        size_t b = i;
        while (b > 0 && isspace((unsigned char)buf[b - 1])) b--;
        if (b > 0 && buf[b - 1] != '(' && buf[b - 1] != ',') {
          i = k - 1;
          continue;
        }
      }
    }
    if (!isspace((unsigned char)buf[i])) out[j++] = buf[i];
  }
  out[j] = 0;
}

static void signatures_of(const char *which) {
  use(which);
  int n = 0, absent = 0;
  char want[1024], got[1024], tmp[1024];
#define CHECK_FN(ret, name, args)                                                               \
  {                                                                                             \
    snprintf(tmp, sizeof tmp, " %s(", #name);                                                   \
    const char *l = strstr(facts, tmp);                                                         \
    if (!l) {                                                                                   \
      printf("[%s] note: %s is not listed in the facts\n", which, #name);                     \
      absent++;                                                                                 \
    } else {                                                                                    \
      while (l > facts && l[-1] != '\n') l--;                                                   \
      norm(l, want, sizeof want);                                                               \
      snprintf(tmp, sizeof tmp, "%s %s%s;", #ret, #name, #args);                                \
      norm(tmp, got, sizeof got);                                                               \
      if (strcmp(want, got)) print_error("[%s] signature of %s:\n ours  %s\n facts %s\n", which, #name, got, want), fail(); \
      n++;                                                                                      \
    }                                                                                           \
  }
  TZ_WGPU_FUNCS(CHECK_FN)
#define CHECK_CB(name, args)                                                                    \
  {                                                                                             \
    snprintf(tmp, sizeof tmp, "typedef void (*%s)", #name);                                     \
    const char *l = line_of(tmp);                                                               \
    if (!l) print_error("[%s] callback %s not in the facts\n", which, #name), fail();           \
    norm(l, want, sizeof want);                                                                 \
    snprintf(tmp, sizeof tmp, "typedef void (*%s)%s;", #name, #args);                           \
    norm(tmp, got, sizeof got);                                                                 \
    if (strcmp(want, got)) print_error("[%s] callback %s:\n ours  %s\n facts %s\n", which, #name, got, want), fail(); \
    n++;                                                                                        \
  }
  TZ_WGPU_CALLBACKS(CHECK_CB)
  printf("[%s] checked %d signatures (%d functions not in the facts)\n", which, n, absent);
  /* our facts are the whole header: every function we load is listed */
  assert_int_equal(absent, 0);
}
static void test_signatures_bun(void **state) { signatures_of("bun"); }
static void test_signatures_node(void **state) { signatures_of("node"); }

/* the normaliser keeps types and drops names */
static void test_norm(void **state) {
  char a[256], b[256];
  norm("WGPUFuture wgpuX(WGPUAdapter adapter, WGPUDeviceDescriptor const * options, size_t n);", a, sizeof a);
  norm("WGPUFuture wgpuX(WGPUAdapter a, struct WGPUDeviceDescriptor const* descriptor, size_t count);", b, sizeof b);
  assert_string_equal(a, b);
  assert_string_equal(a, "WGPUFuturewgpuX(WGPUAdapter,WGPUDeviceDescriptorconst*,size_t);");
  norm("WGPUFuture wgpuX(WGPUAdapter adapter, WGPUDeviceDescriptor * options);", b, sizeof b);
  assert_string_not_equal(a, b); /* a pointer's constness and the arity still count */
}

/* ../shared's facts (another tool, the bun build) are a subset of ours, line for line */
static void test_shared_facts_agree(void **state) {
  char *path = tz_test_shared_or_skip("webgpu/dawn_abi_facts.txt");
  if (!path) skip();
  char *shared = slurp(path);
  assert_non_null(shared);
  use("bun");
  int n = 0, bad = 0;
  for (char *p = shared; *p;) {
    char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    while (len && p[len - 1] == ' ') len--;
    if (len && p[0] != '#') {
      char line[1024];
      snprintf(line, sizeof line, "\n%.*s\n", (int)len, p);
      if (!strstr(facts, line)) {
        if (bad++ < 5) print_error("shared line not in our bun facts: %.*s\n", (int)len, p);
      }
      n++;
    }
    p = e ? e + 1 : p + len;
  }
  printf("%d lines of ../shared/webgpu/dawn_abi_facts.txt, %d missing from ours\n", n, bad);
  assert_int_equal(bad, 0);
  free(shared);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_norm),           cmocka_unit_test(test_structs_bun),
      cmocka_unit_test(test_structs_node),   cmocka_unit_test(test_constants_bun),
      cmocka_unit_test(test_constants_node), cmocka_unit_test(test_tables_differ),
      cmocka_unit_test(test_signatures_bun), cmocka_unit_test(test_signatures_node),
      cmocka_unit_test(test_shared_facts_agree)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  return rc ? rc : (tz_test_shared_missing ? 77 : 0);
}
