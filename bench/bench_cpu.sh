#!/usr/bin/env bash
# CPU training throughput through the CLI against PyTorch (eager and torch.compile) in the same
# run, with the OpenMP wait policy varied, on an idle machine and with cores held by busy loops;
# plus the FMA peak and the matmul GFLOP/s on 2 cores. Figures go into docs/PERF.md ("CPU
# training on 16 cores").
#
#   bash bench/bench_cpu.sh DIR [STEPS=10] [SHAPE]
#
# DIR holds (scripts/ in the repository make none of it: see docs/PERF.md for the build):
#   bin/tezgah            the binary under test (plain C matmuls, TEZGAH_BLAS=OFF)
#   bin/tezgah-before     optional: the binary before the change, same build flags
#   bin/tezgah-blas       optional: the binary under test built with OpenBLAS (OpenMP flavour)
#   bin/bench_fma_peak    optional: the FMA peak probe (bench/bench_fma_peak.c)
#   bin/bench_matmul      optional: the matmul shapes, C and BLAS paths (a BLAS build)
#   lib/                  shared libraries the binaries need (LD_LIBRARY_PATH)
#   data/train.bin        an llm.c GPT-2 token shard (tezgah tokenize --tokenizer gpt2)
#   data/torch_gpt.py     ../shared/bench/torch_gpt.py (the peer); skipped when absent
# SHAPE (default "4 4 256 256 8" = n_layer n_head C T B, llm.c's CPU reference shape), GPT-2,
# V = 50257 padded to 50304. tokens/s = median of the per-step tok_per_s in metrics.jsonl after
# 4 warm-up steps (no validation, one checkpoint at the end). TEZGAH_BENCH_BUSY (default 2):
# busy-loop processes for the contended rows; TEZGAH_BENCH_PEER_STEPS (10): the peer's steps.
# TEZGAH_BENCH_QUICK=1: only the default rows (a dry run); with TEZGAH_BENCH_2CORE=1 also the
# 2-core rows. TEZGAH_BENCH_PEER_TMO (240): seconds each peer run may take (compile included).
# TEZGAH_BENCH_PROFILE=1: also the per-op profile (train --profile, 8 steps) of the default and
# 2-core runs, on stderr.
# Each "ours" row reads back the wait policy the CLI ran with (GOMP_SPINCOUNT / OMP_WAIT_POLICY in the running process).
# As run on the GPU machine 2026-12-02 (docs/PERF.md), from a folder made like this:
#   cmake -S . -B build-v4 -DCMAKE_BUILD_TYPE=Release -DTEZGAH_NATIVE=OFF \
#     -DCMAKE_C_FLAGS=-march=x86-64-v4 -DTEZGAH_CUDA=OFF -DTEZGAH_MPI=OFF -DTEZGAH_PLOT=OFF -DTEZGAH_BLAS=OFF
#   (and build-v4b with -DTEZGAH_BLAS=ON); cmake --build build-v4 --target tezgah bench_fma_peak
#   D=.dev/cpu; cp build-v4/tezgah build-v4/bench/bench_fma_peak $D/bin/; cp build-v4b/tezgah $D/bin/tezgah-blas
#   cp build-v4b/bench/bench_matmul $D/bin/; cp -L the libraries ldd names (libgomp, libpcre2-8,
#   libcjson, libxxhash) $D/lib/, and libopenblas.so.0 of openblas-openmp, libgfortran and
#   libquadmath, which ldd no longer names: tezgah loads OpenBLAS on use (TZ_MATMUL=blas), by
#   its soname through LD_LIBRARY_PATH when the build's path is not on the machine
#   tezgah tokenize --tokenizer gpt2 --in tinyshakespeare.txt --out $D/data/train.bin
#   there: bash bench/bench_cpu.sh .dev/cpu     (about 4.5 minutes with the peer's compile)
set -uo pipefail
dir=$(realpath "${1:?DIR}")
steps=${2:-10}
read -r L H C T B <<<"${3:-4 4 256 256 8}"
busy_n=${TEZGAH_BENCH_BUSY:-2}
peer_steps=${TEZGAH_BENCH_PEER_STEPS:-10}
export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d)
busy=()
stop_busy() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done; busy=(); }
trap 'stop_busy; rm -rf "$work"' EXIT
shard=$dir/data/train.bin
[[ -f $shard ]] || { echo "bench_cpu.sh: $shard is missing" >&2; exit 1; }
ncpu=$(nproc)
V=50304 F=$((4 * C))
# FLOPs per token (../shared/docs/PEERS.md, torch_gpt.py): 6·(non-embedding matmul params + C·V)
# + 12·L·C·T (attention's QKᵀ and AV, forward and backward)
fpt=$((6 * (L * (4 * C * C + 2 * C * F) + C * V) + 12 * L * C * T))
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
rows=()
row() { # label tokens/s note
  rows+=("$(awk -v l="$1" -v t="$2" -v f=$fpt -v n="$3" 'BEGIN {
    if (t + 0 > 0) printf "| %s | %.0f | %.1f | %.1f | %s |", l, t, 1000 * '"$B * $T"' / t, t * f / 1e9, n;
    else printf "| %s | failed | | | %s |", l, n }')")
  printf '%s\n' "${rows[-1]}" >&2
}
n_run=0
ours() { # label binary [env assignments...]
  local label=$1 bin=$dir/bin/$2
  shift 2
  [[ -x $bin ]] || return 0
  n_run=$((n_run + 1))
  local run=$work/r$n_run
  env "$@" "$bin" train --arch gpt2 --n-layer "$L" --n-head "$H" --d-model "$C" --max-seq-len "$T" -T "$T" -B "$B" \
    --vocab-size 50257 --train-shards "$shard" --steps "$steps" --val-every 0 --ckpt-every 0 --sample-tokens 0 \
    --log-every 1 --run-dir "$run" >"$run.out" 2>"$run.log" </dev/null &
  local pid=$! policy=
  sleep 1 # the CLI has re-executed itself with its wait policy by now: read it back
  policy=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -E '^(GOMP_SPINCOUNT|OMP_WAIT_POLICY)=' | tr '\n' ' ')
  wait "$pid" || tail -3 "$run.log" >&2
  local tps
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +5 | median)
  row "$label" "$tps" "$(echo "$*" | sed 's/X=1//') [ran with: ${policy:-?}]"
  rm -rf "$run"
}
peer() { # label compile threads
  [[ -f $dir/data/torch_gpt.py ]] || return 0
  local out
  out=$(timeout "${TEZGAH_BENCH_PEER_TMO:-240}" python3 "$dir/data/torch_gpt.py" --device cpu --threads "$3" --compile "$2" --arch gpt2 --L "$L" --H "$H" \
    --d "$C" --T "$T" --B "$B" --steps "$peer_steps" 2>&1 | tail -3)
  echo "peer: $out" >&2
  row "$1" "$(grep -o 'tok_s=[0-9.]*' <<<"$out" | cut -d= -f2 | head -1)" "torch_gpt.py --compile $2 --threads $3"
}
start_busy() {
  for ((i = 0; i < busy_n; i++)); do
    bash -c 'while :; do :; done' &
    busy+=($!)
  done
  sleep 0.3
}

echo "machine: $ncpu CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" >&2
lscpu 2>/dev/null | grep -E '^(Thread|Core|Socket|L2|L3|CPU max MHz|Model name)' >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); shape L$L H$H C$C T$T B$B V50257->$V; $steps steps" >&2
if [[ -x $dir/bin/bench_fma_peak ]]; then
  for t in 1 2 "$ncpu"; do
    if [[ $t == 2 ]]; then taskset -c 0,1 "$dir/bin/bench_fma_peak" 2 0.5 >&2; else "$dir/bin/bench_fma_peak" "$t" 0.5 >&2; fi
  done
fi

ours "tezgah, CLI default" tezgah X=1
# TEZGAH_BENCH_PROFILE=1: the per-op table (`train --profile`, wall clock per op) of the default
# run and of the 2-core run, on stderr (not rows of the table)
profile_table() { # label [env assignments...]
  local label=$1 run=$work/prof
  shift
  env "$@" "$dir/bin/tezgah" train --arch gpt2 --n-layer "$L" --n-head "$H" --d-model "$C" --max-seq-len "$T" -T "$T" \
    -B "$B" --vocab-size 50257 --train-shards "$shard" --steps 8 --val-every 0 --ckpt-every 0 --sample-tokens 0 \
    --profile --run-dir "$run" </dev/null 2>&1 >/dev/null | sed -n '/profile/,/^  total/p' | sed "s/^/[$label] /" >&2
  rm -rf "$run"
}
[[ ${TEZGAH_BENCH_PROFILE:-0} == 1 ]] && profile_table "$ncpu threads" X=1
if [[ ${TEZGAH_BENCH_QUICK:-0} != 1 ]]; then
  ours "before (main), CLI default (passive)" tezgah-before X=1
  ours "tezgah, passive" tezgah OMP_WAIT_POLICY=PASSIVE
  for s in 3000 300000; do ours "tezgah, spin $s" tezgah GOMP_SPINCOUNT=$s; done
  ours "tezgah + OpenBLAS, CLI default" tezgah-blas X=1
  ours "tezgah + OpenBLAS, CLI default, Haswell kernels" tezgah-blas OPENBLAS_CORETYPE=Haswell
fi
peer "PyTorch eager" 0 "$ncpu"
peer "PyTorch torch.compile" 1 "$ncpu"
if [[ ${TEZGAH_BENCH_QUICK:-0} != 1 ]] && ((busy_n > 0)); then
  start_busy
  echo "contended: $busy_n busy-loop processes (pids ${busy[*]})" >&2
  ours "busy $busy_n: tezgah, CLI default" tezgah X=1
  ours "busy $busy_n: before (main), CLI default (passive)" tezgah-before X=1
  for s in 3000 30000; do ours "busy $busy_n: tezgah, spin $s" tezgah GOMP_SPINCOUNT=$s; done
  ours "busy $busy_n: tezgah, threads $((ncpu - busy_n)), CLI default" tezgah OMP_NUM_THREADS=$((ncpu - busy_n))
  stop_busy
fi
# 2 cores (CPUs 0 and 1): the training step and the matmul shapes on 2 threads
if [[ ${TEZGAH_BENCH_QUICK:-0} != 1 || ${TEZGAH_BENCH_2CORE:-0} == 1 ]]; then
  steps_all=$steps
  steps=5
  ours "2 cores (taskset 0,1): tezgah, CLI default" tezgah OMP_NUM_THREADS=2 taskset -c 0,1
  [[ ${TEZGAH_BENCH_PROFILE:-0} == 1 ]] && profile_table "2 cores" OMP_NUM_THREADS=2 taskset -c 0,1
  ours "2 cores (taskset 0,1): tezgah + OpenBLAS" tezgah-blas OMP_NUM_THREADS=2 taskset -c 0,1
  steps=$steps_all
  if [[ -x $dir/bin/bench_matmul ]]; then
    # without tezgah-blas the pack is a build without OpenBLAS: its BLAS column would be the C path
    OMP_WAIT_POLICY=ACTIVE taskset -c 0,1 "$dir/bin/bench_matmul" 2 3 $([[ -x $dir/bin/tezgah-blas ]] || echo c) >&2
  fi
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "| run (GPT-2 L$L H$H C$C T$T B$B, $ncpu CPUs) | tokens/s | ms/step | GFLOP/s (PEERS.md count) | env / flags |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
