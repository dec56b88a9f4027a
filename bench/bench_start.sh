#!/usr/bin/env bash
# CPU seconds (user + sys, bash's `times` over the children) that `tezgah` spends starting:
# N calls each of `tezgah --help` and `tezgah info` for each binary given, interleaved round by
# round so that a change in the machine's load hits every binary alike, plus the number of
# shared libraries the binary maps at start (ldd). Wall time says little on a shared VM; CPU
# seconds are what the ~900 calls of test_help and every user's `tezgah --help` pay.
#   bash bench/bench_start.sh [-n N] BINARY...      (default N = 200; e.g. main's and a branch's)
# Prints one line per binary and command: "BINARY  CMD  libs  cpu_s_total  ms_per_call".
set -uo pipefail
n=200
if [[ ${1:-} == -n ]]; then n=$2; shift 2; fi
(($#)) || { echo "usage: bench/bench_start.sh [-n N] BINARY..." >&2; exit 2; }
declare -A cpu
rounds=10 per=$((n / 10))
for ((r = 0; r < rounds; r++)); do
  for bin in "$@"; do
    for cmd in --help info; do
      # each batch in a subshell: its `times` counts only that batch's children
      t=$(bash -c 'b=$1 c=$2 k=$3; for ((i = 0; i < k; i++)); do "$b" "$c" >/dev/null 2>&1; done; times' _ "$bin" "$cmd" "$per" |
        tail -1 | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
      cpu[$bin $cmd]=$(awk -v a="${cpu[$bin $cmd]:-0}" -v b="$t" 'BEGIN { print a + b }')
    done
  done
done
for bin in "$@"; do
  libs=$(ldd "$bin" | grep -c '=>')
  for cmd in --help info; do
    awk -v b="$bin" -v c="$cmd" -v l="$libs" -v t="${cpu[$bin $cmd]}" -v n="$((per * rounds))" \
      'BEGIN { printf "%s  %s  %d libs  %.2f s  %.1f ms/call\n", b, c, l, t, 1000 * t / n }'
  done
done
