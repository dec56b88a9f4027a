#!/usr/bin/env bash
# CI stage: valgrind memcheck on one short `tezgah train` (data preparation, training steps,
# a checkpoint, resume) and one `tezgah sample`, requiring zero errors and no definite leaks.
# Builds its own tree, build-valgrind (RelWithDebInfo, -DTEZGAH_NATIVE=OFF: valgrind cannot
# execute AVX-512 code that -march=native may emit; -DTEZGAH_BLAS=OFF).
# No CUDA backend (-DTEZGAH_CUDA=OFF): the runs are on the CPU, and the CUDA runtime under
# valgrind is noise.
#   scripts/ci_valgrind.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-valgrind
bin=$build/tezgah
t0=$SECONDS
# -g1, not RelWithDebInfo's -g: memcheck's stack traces (errors, leaks, --track-origins) print
# function, file and line from the line tables; the types and locals of -g only a debugger reads.
# Same code (-O2). The build: 40.6 CPU s at -g, 35.6 at -g1 (user+sys, time, cold, ci26).
# CI_PREBUILT=1: .ci/run already built this tree (this script under CI_BUILD_ONLY=1, beside the
# test command), so the configure and build are skipped
if [[ -z ${CI_PREBUILT:-} ]]; then
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DTEZGAH_NATIVE=OFF -DTEZGAH_BLAS=OFF -DTEZGAH_CUDA=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target tezgah >"$build/build.log" 2>&1 || { tail -40 "$build/build.log" >&2; exit 1; }
echo "ci_valgrind: built in $((SECONDS - t0)) s"
else
  echo "ci_valgrind: the tree was built beside the test command (CI_PREBUILT=1)"
fi
# CI_BUILD_ONLY=1: stop here, the tree built (.ci/run builds the lanes' trees while the test command runs)
[[ -z ${CI_BUILD_ONLY:-} ]] || exit 0
corpus_src=$root/../shared/data/tinyshakespeare.txt
[[ -x $bin ]] || { echo "ci_valgrind: $bin not built" >&2; exit 1; }
[[ -f $corpus_src ]] || { echo "ci_valgrind: SKIPPED ($corpus_src absent)"; exit 0; }
command -v valgrind >/dev/null || { echo "ci_valgrind: valgrind is not installed (scripts/setup.sh)" >&2; exit 1; }
work=$build/valgrind-tmp
rm -rf "$work" && mkdir -p "$work"
head -c 12000 "$corpus_src" >"$work/corpus.txt"
vg=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=yes --quiet)
# OpenMP's thread pool is left alive at exit (libgomp never frees it): "possibly lost", not an error.
export OMP_NUM_THREADS=2
# Idle OpenMP threads sleep at barriers (passive) instead of spinning: valgrind runs one thread
# at a time, so a spinning thread burns its turn while the one with work waits (the CLI keeps
# libgomp's default under valgrind, src/cli/main.c set_wait_policy: no re-exec there). Same two
# threads and the same tezgah code under memcheck; the three runs 14.6 CPU s with the default,
# 7.5 passive (user+sys, 2 busy loops beside them; 16.1 / 7.3 unloaded, ci26).
export OMP_WAIT_POLICY=PASSIVE
run() {
  local name=$1; shift
  if ! "${vg[@]}" --log-file="$work/$name.vg" "$@" >"$work/$name.out" 2>"$work/$name.err"; then
    echo "ci_valgrind: $name FAILED" >&2; cat "$work/$name.vg" "$work/$name.err" >&2; exit 1
  fi
  local errs
  errs=$(grep -c 'ERROR SUMMARY: [1-9]' "$work/$name.vg" || true)
  [[ $errs == 0 ]] || { cat "$work/$name.vg" >&2; exit 1; }
  echo "ci_valgrind: $name: 0 errors, 0 definite leaks"
}
args=(--data "$work/corpus.txt" --vocab-size 280 --n-layer 1 --n-head 2 --d-model 32 -B 2 -T 16 --val-every 4
      --val-batches 1 --ckpt-every 3 --sample-tokens 8 --quiet --run-dir "$work/run")
run train "$bin" train "${args[@]}" --steps 6 --stop-after 4
run resume "$bin" train --resume "$work/run" --quiet --sample-tokens 8
run sample "$bin" sample "$work/run" --tokens 16 --prompt "First"
echo "ci_valgrind: memcheck clean (train, resume, sample) in $((SECONDS - t0)) s"
