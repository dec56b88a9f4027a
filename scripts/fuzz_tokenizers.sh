#!/usr/bin/env bash
# Build the tokenizer fuzz targets (fuzz/fuzz_tok_*.c) with clang's libFuzzer + ASan + UBSan
# in build-fuzz/tok, and run each for SECONDS (default 10). Prints executions per target.
#
#   scripts/fuzz_tokenizers.sh [SECONDS]
#
# Seeds: fuzz/corpus/<target>/ (committed, small). New inputs go to build-fuzz/tok/corpus/<target>/
# so the committed seeds do not grow. A crash leaves build-fuzz/tok/crash-* (or leak-*, ...)
# and makes the script exit 1. Needs clang and libclang-rt-14-dev (scripts/setup.sh).
# The library is compiled without OpenMP here: the fuzzed encoder is the serial path, and
# fuzz_tok_encode checks that the cut points the parallel path uses do not change the ids.
set -euo pipefail
secs=${1:-10}
[[ $secs =~ ^[0-9]+$ ]] || { echo "fuzz_tokenizers: SECONDS must be a whole number, got '$secs'" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/build-fuzz/tok
CC=${CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz_tokenizers: $CC not found (run scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out/obj"

flags=(-g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fno-omit-frame-pointer
       -fsanitize=address,undefined -fno-sanitize-recover=undefined -I"$root/src" -I"$root/include"
       $(pkg-config --cflags libpcre2-8 libcjson libxxhash))
libs=($(pkg-config --libs libpcre2-8 libcjson libxxhash) -lm -lpthread)

# library objects (instrumented for coverage), rebuilt when a source is newer
objs=()
for src in "$root"/src/tokenizer/*.c "$root"/src/core/error.c "$root"/src/core/fileio.c; do
  o=$out/obj/$(basename "$(dirname "$src")")_$(basename "${src%.c}").o
  if [[ ! -f $o || $src -nt $o || -n $(find "$root/src/tokenizer" "$root/src/core" -name '*.h' -newer "$o") ]]; then
    "$CC" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$o"
  fi
  objs+=("$o")
done

targets=()
for f in "$root"/fuzz/fuzz_tok_*.c; do
  t=$(basename "${f%.c}")
  "$CC" "${flags[@]}" -fsanitize=fuzzer "$f" "${objs[@]}" "${libs[@]}" -o "$out/$t"
  targets+=("$t")
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
printf '%-20s %12s %10s %s\n' target executions exec/s result
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  seeds=$root/fuzz/corpus/$t
  [[ -d $seeds ]] || seeds=
  log=$out/$t.log
  set +e
  (cd "$out" && "./$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
     -print_final_stats=1 "corpus/$t" ${seeds:+"$seeds"}) >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  if ((rc == 0)); then res=ok; else res="CRASH (rc $rc, see $log)"; status=1; fi
  printf '%-20s %12s %10s %s\n' "$t" "${execs:-0}" "${rate:-0}" "$res"
done
exit $status
