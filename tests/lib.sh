# shellcheck shell=bash disable=SC2154  # scratch: set by the test that sources this
# Sourced by the shell tests (tests/test_*.sh), which set `scratch` (their third argument):
#   skip WHY...     print "SKIPPED: WHY" and exit 77 (ctest's SKIP_RETURN_CODE): a test that
#                   cannot run says why and never passes silently
#   enter_scratch   an empty $scratch (removed and made anew) as the working directory, and
#                   failures=0; exits 1 where it cannot
#   fail WHAT...    print "FAIL: WHAT" and count it in $failures (the test's exit status ends
#                   nonzero where failures > 0)
#   ok WHAT...      print "ok: WHAT"
skip() { echo "SKIPPED: $*"; exit 77; }
enter_scratch() {
  rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
  failures=0
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
