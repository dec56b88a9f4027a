#!/usr/bin/env bash
# CI stage: the CUDA backend compiles (CI has nvcc and no GPU; scripts/test.sh builds without
# the backend where no GPU is visible, since its tests skip there). Configures build-cuda with
# TEZGAH_CUDA=ON (a missing toolkit is an error here, not a skip) and the default architecture
# choice (sm_90 alone without a GPU: a compile check), builds the CLI and the CUDA test programs,
# and runs them: without a GPU each must say SKIPPED (exit 77) and nothing else may fail.
#   bash scripts/ci_cuda_build.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-cuda
t0=$SECONDS
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=ON >"$build/build.log" 2>&1 ||
  { tail -30 "$build/build.log" >&2; exit 1; }
# the CLI and the CUDA test programs only (the rest is the test command's build, without CUDA)
cuda_tests=$(cd "$root/tests" && ls test_cuda_*.c | sed 's/\.c$//')
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target tezgah $cuda_tests >>"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
grep -i 'warning' "$build/build.log" | grep -v '^--' | head -20 || true
echo "ci_cuda_build: built in $((SECONDS - t0)) s"
"$build/tezgah" info 2>&1 | grep '^cuda' || true
# ctest's own summary stays in build-cuda/ctest.log: printed here it would be the last ctest
# summary of CI's log, "0 tests ran" (all skip without a GPU), and CI's reader takes that one.
if ! ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -R '^test_cuda_' >"$build/ctest.log" 2>&1; then
  cat "$build/ctest.log" >&2
  exit 1
fi
ran=$(grep -c ' Test *#[0-9]*: test_cuda_' "$build/ctest.log" || true)
skipped=$(grep -c '\*\*\*Skipped' "$build/ctest.log" || true)
echo "ci_cuda_build: $ran CUDA test programs built and run: $skipped skipped (SKIPPED, exit 77: no GPU), $((ran - skipped)) passed, 0 failed"
echo "ci_cuda_build: passed in $((SECONDS - t0)) s"
