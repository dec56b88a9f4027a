#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/fuzz_<name>.c) with clang, ASan and UBSan into build-fuzz
# and run each for SECONDS over its committed corpus fuzz/corpus/<name>/ (new inputs go to
# build-fuzz/corpus/<name>/, so the committed corpus is never modified; crashes are written
# to build-fuzz/crashes/). Prints the executions per target; exits nonzero on any crash.
# The CUDA backend is left out (-DTEZGAH_CUDA=OFF): the targets are parsers, and nvcc does not
# take libFuzzer's flags. MPI too (-DTEZGAH_MPI=OFF): parsers do not communicate.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     CI: scripts/fuzz.sh 10   on demand: scripts/fuzz.sh 600
# Env: FUZZ_JOBS (default 1) parallel workers per target; CC (default clang).
set -euo pipefail
secs=${1:-10}
shift || true
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-fuzz
cc=${CC:-clang}
command -v "$cc" >/dev/null || { echo "fuzz: $cc not found (scripts/setup.sh installs clang)" >&2; exit 1; }
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in "$root"/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c | sed 's/^fuzz_//')"); done
fi
t0=$SECONDS
# CI_PREBUILT=1: .ci/run already built this tree (this script under CI_BUILD_ONLY=1, beside the
# test command), so the configure and build are skipped
if [[ -z ${CI_PREBUILT:-} ]]; then
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEZGAH_FUZZ=ON \
  -DTEZGAH_BLAS=OFF -DTEZGAH_NATIVE=OFF -DTEZGAH_CUDA=OFF -DTEZGAH_MPI=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >"$build/build.log" 2>&1 ||
  { cat "$build/build.log" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >>"$build/build.log" 2>&1 ||
  { tail -30 "$build/build.log" >&2; exit 1; }
echo "fuzz: built ${#targets[@]} targets in $((SECONDS - t0)) s; ${secs} s each"
else
  echo "fuzz: the tree was built beside the test command (CI_PREBUILT=1)"
fi
# CI_BUILD_ONLY=1: stop here, the tree built (.ci/run builds the lanes' trees while the test command runs)
[[ -z ${CI_BUILD_ONLY:-} ]] || exit 0
mkdir -p "$build/crashes"
jobs=()
if ((${FUZZ_JOBS:-1} > 1)); then jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t" "$root/fuzz/corpus/$t"
  log=$build/fuzz_$t.log
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 -max_len=65536 \
      -timeout=10 ${jobs[@]+"${jobs[@]}"} \
      -artifact_prefix="$build/crashes/$t-" "$build/corpus/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    res=ok
  else
    res="CRASH (see $log and $build/crashes/)"
    status=1
  fi
  execs=$(cat "$log" "$build"/fuzz-*.log 2>/dev/null | grep 'stat::number_of_executed_units' | awk '{s += $2} END {print s + 0}' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  printf 'fuzz %-10s %10d executions in %s s (%s) %s\n' "$t" "$execs" "$secs" "${cov:-cov: ?}" "$res"
  rm -f "$build"/fuzz-*.log
done
rm -f /tmp/tezgah-fuzz-*.bin /dev/shm/tezgah-fuzz-*.bin
exit $status
