#!/usr/bin/env bash
# All tests, from a fresh Debian 12 machine: install what is needed, build, run ctest.
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
t_setup=$SECONDS
bash scripts/setup.sh
# the wasm build and its browser tests: clang-19/lld-19, wasi-libc, chromium, PCRE2/cJSON
# source packages, web/'s npm packages (docs/BROWSER.md)
bash scripts/setup_wasm.sh
t_build=$SECONDS
echo "--- building tezgah and the tests in build/ (a few minutes the first time; log: build/build.log) ---"
# The CUDA backend is built where it can run (scripts/cuda_choice.sh says why; its tests skip
# elsewhere)
# shellcheck source=scripts/cuda_choice.sh
source scripts/cuda_choice.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=$cuda >/dev/null
cmake --build build -j"$(nproc)" >build/build.log 2>&1 || { tail -30 build/build.log >&2; exit 1; }
# Tests that need a GPU or ../shared exit 77 after printing "SKIPPED: <reason>"; ctest lists
# them as skipped without the reason, so the reasons are printed after its summary.
# -LE sweep: the tuning variants no adapter chooses by default (label sweep, minutes of cold
# lavapipe compiles) are left to CI (.ci/run: ctest --test-dir build -L sweep) and to
# whoever changes a kernel; docs/RELIABILITY.md says what each set covers.
t_ctest=$SECONDS
set +e
ctest --test-dir build --output-on-failure -j"$(nproc)" -LE sweep | tee build/ctest.log
rc=${PIPESTATUS[0]}
set -e
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9]* - \([A-Za-z0-9_]*\) (Skipped)$/\1/p' build/ctest.log)
if ((${#skipped[@]})); then
  echo "--- ${#skipped[@]} skipped tests and why ---"
  for t in "${skipped[@]}"; do
    # the test's first "SKIPPED: " line in its block of ctest's log
    why=$(awk -v t="$t" '$0 ~ ("^[0-9]+/[0-9]+ Test: " t "$") { on = 1; next }
      on && /^SKIPPED: / { sub(/^SKIPPED: /, ""); print; exit }
      on && /^"/ && / end time: / { exit }' build/Testing/Temporary/LastTest.log)
    echo "  $t: ${why:-no reason printed (ctest --test-dir build -R $t -V)}"
  done
fi
# wall seconds of each phase (issue 21: the test command's time without the package installs is
# the build and ctest phases)
echo "test.sh: setup $((t_build - t_setup)) s, build $((t_ctest - t_build)) s, ctest $((SECONDS - t_ctest)) s (wall, $(nproc) cores)"
exit "$rc"
