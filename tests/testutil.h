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
/* Run a shell command; returns its exit status (or -1). */
int tz_test_sh(const char *cmd);
/* Fail the current test unless the current tz_err message contains `needle`. */
void tz_test_assert_msg_has(const char *needle);
/* 1 if `dir` holds a file whose name contains ".tmp." (a leftover temporary file). */
int tz_test_has_temp_file(const char *dir);
/* Path under ../shared, or NULL after printing "SKIPPED: ..." and setting
 * tz_test_shared_missing, so the caller can skip() one test and let the others run; main()
 * then returns 77 (ctest shows the program as skipped, not passed). */
extern int tz_test_shared_missing;
char *tz_test_shared_or_skip(const char *rel);

#endif
