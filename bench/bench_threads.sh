#!/usr/bin/env bash
# Thread count under contention: training tokens/s of the default thread count and of
# --threads 1, on an idle machine and with one core held by a busy loop (another process).
# Figures go into docs/PERF.md ("CPU threads under contention").
#   bash bench/bench_threads.sh [build/tezgah] [corpus] [steps]
# The default is measured as the CLI runs it (libgomp's spinning when the thread team fits in the
# free cores at start, else passive waiting; neither when OMP_WAIT_POLICY or GOMP_SPINCOUNT is
# set) and with OMP_WAIT_POLICY=ACTIVE (unbounded spinning).
set -uo pipefail
bin=$(realpath "${1:-build/tezgah}")
corpus=$(realpath "${2:-../shared/data/tinyshakespeare.txt}")
steps=${3:-40}
work=$(mktemp -d)
busy=
trap '[[ -n $busy ]] && kill "$busy" 2>/dev/null; rm -rf "$work"' EXIT
head -c 200000 "$corpus" >"$work/c.txt"
cd "$work" || exit 1
# the token cache once, so that every measurement is training only
"$bin" train --data c.txt --vocab-size 512 --steps 1 --sample-tokens 0 --quiet --run-dir warm >/dev/null
one() { # label threads(0 = default) env-assignments...
  local label=$1 th=$2
  shift 2
  rm -rf run
  local r
  r=$(env "$@" "$bin" train --data c.txt --vocab-size 512 --steps "$steps" -B 8 -T 128 --val-every 0 \
      --ckpt-every 0 --sample-tokens 0 --threads "$th" --run-dir run 2>&1 |
      grep -o '[0-9]* tok/s this session' | grep -o '^[0-9]*')
  printf '  %-46s %8s tok/s\n' "$label" "$r"
}
suite() {
  one "default threads, CLI default wait policy" 0 X=1
  one "default threads, OMP_WAIT_POLICY=ACTIVE" 0 OMP_WAIT_POLICY=ACTIVE
  one "--threads 1" 1 X=1
}
echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "idle (no busy loop):"
suite
bash -c 'while :; do :; done' &
busy=$!
sleep 0.5
echo "one core busy (a busy-loop process, pid $busy):"
suite
kill "$busy"
busy=
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
