#!/usr/bin/env bash
# All tests, from a fresh Debian 12 machine: install what is needed, build, run ctest.
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo "--- building tezgah and the tests in build/ (a few minutes the first time; log: build/build.log) ---"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >build/build.log 2>&1 || { tail -30 build/build.log >&2; exit 1; }
# Tests that need a GPU or ../shared report SKIPPED with their reason (ctest -R NAME -V shows it).
ctest --test-dir build --output-on-failure -j"$(nproc)"
