/* Shared test helpers. Tests are cmocka programs registered by tests/CMakeLists.txt.
 * A test that cannot run (e.g. ../shared missing) calls tz_test_skip_all(), which prints
 * "SKIPPED: <why>" and exits 77; ctest reports it as "Not Run" (skipped), never as passed. */
#ifndef TZ_TESTUTIL_H
#define TZ_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

_Noreturn void tz_test_skip_all(const char *why);
/* Path under ../shared (TZ_SHARED_DIR), malloc'ed; skips the whole test when it is absent. */
char *tz_test_shared(const char *rel);
/* A fresh empty scratch directory for this test (under build/test-tmp/<name>). */
char *tz_test_tmpdir(const char *name);
/* Run a shell command; returns its exit status (or -1). Output goes to `log` when non-NULL. */
int tz_test_sh(const char *cmd);

#endif
