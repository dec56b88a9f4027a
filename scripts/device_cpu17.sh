#!/usr/bin/env bash
# The CPU GEMM's register tiles, MC and loop order at the GPT-2 L4 H4 C256 T256 B8 shapes, on the
# GPU machine's host CPU (issue 21 part 3: >= 70 % of the FMA peak on 2 cores), then the
# training step and the peers with the best setting found (bench/bench_cpu.sh). About 200 s.
#
#   bash scripts/device_cpu17.sh DIR        (DIR: the folder scripts/device_pack_cpu.sh makes)
#
# 1. bench_fma_peak on 1 thread (taskset 0), 2 (taskset 0,1) and all CPUs: the peaks.
# 2. bench_matmul (plain C path, best of CPU17_REPS = 2 after a warm-up) for each AVX-512 tile
#    (TEZGAH_MM_TILE = 8x32 [the default], 12x32, 14x32, and each with "pf": C prefetched) on
#    2 threads (taskset 0,1, OMP_WAIT_POLICY=ACTIVE, as bench_cpu.sh) and on all CPUs; then for
#    the best tile on 2 threads: TEZGAH_MM_LOOP=strips, TEZGAH_MM_MC=64 and 256; and 8x32 and the
#    best tile on 1 thread (taskset 0: the kernel alone, no split). One table row
#    per run: the weighted step (4 layers × 9 layer shapes + 3 lm_head shapes, FLOPs / time),
#    its % of the peak for that thread count, and the lm_head shapes.
# 3. tezgah train on 2 cores (taskset 0,1), 6 steps, default settings against the best one.
# 4. bench/bench_cpu.sh DIR with TEZGAH_BENCH_QUICK=1 TEZGAH_BENCH_2CORE=1 TEZGAH_BENCH_PROFILE=1
#    and the best setting exported (the CLI default row on all CPUs, its per-op profile, PyTorch
#    eager and torch.compile, the 2-core row, its profile, bench_matmul 2 threads), cut off at
#    CPU17_BUDGET (235) s from the start (each peer run at that less 80 s: torch.compile's
#    compile is the long one); its rows are printed as they come. Stages 1-3 take about 80 s
#    on the device host (estimated: 12 bench_matmul runs of ~3.5 s on 2 threads and ~1 s on 16,
#    4 of ~4.5 s, two 6-step trainings of ~12 s), leaving bench_cpu.sh ~150 s.
# Every setting gives the same bits (tests/test_ops_cpu.c, test_matmul_c_tiles): only speed differs.
# Output: stdout (the tables) and $OUT (else /tmp/cpu17): every program's full output.
# CPU17_QUICK=1: 2 tiles, 1 rep, no stage 2, 2 train steps (the dry run on a 2-core VM).
set -uo pipefail
dir=$(realpath "${1:?usage: device_cpu17.sh DIR}")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-/tmp/cpu17}
mkdir -p "$out"
budget=${CPU17_BUDGET:-235}
quick=${CPU17_QUICK:-0}
reps=${CPU17_REPS:-2}
((quick)) && reps=1
ncpu=$(nproc)
for b in tezgah bench_matmul bench_fma_peak; do
  [[ -x $dir/bin/$b ]] || { echo "device_cpu17: $dir/bin/$b is missing (scripts/device_pack_cpu.sh)" >&2; exit 1; }
done
stamp() { printf '[%s +%ds] ' "$(date -u +%H:%M:%S)" "$SECONDS"; }
echo "$(stamp)device_cpu17: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $ncpu CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for c in /sys/devices/system/cpu/cpu0/cache/index*; do # the caches of CPU 0
  [[ -f $c/size ]] && printf '%s L%s %s %s; ' "$(cat "$c/type")" "$(cat "$c/level")" "$(cat "$c/size")" \
    "shared by $(cat "$c/shared_cpu_list" 2>/dev/null)"
done
echo
"$dir/bin/tezgah" info 2>&1 | grep '^cpu:'

# ---- 1. peaks ----
declare -A peak
for t in $(printf '%s\n' 1 2 "$ncpu" | sort -un); do
  case $t in 1) pin=(taskset -c 0) ;; 2) pin=(taskset -c 0,1) ;; *) pin=() ;; esac
  line=$("${pin[@]}" "$dir/bin/bench_fma_peak" "$t" 0.5 2>&1 | grep 'fma peak' | tail -1)
  echo "$(stamp)$line"
  peak[$t]=$(grep -o '[0-9.]* GFLOP/s' <<<"$line" | cut -d' ' -f1)
done

# ---- 2. the GEMM settings ----
rows=()
declare -A w2
bm() { # label threads env assignments...
  local label=$1 t=$2 f
  shift 2
  f=$out/bm_${label//[^A-Za-z0-9]/_}_t$t.txt
  local pin=()
  [[ $t == 2 ]] && pin=(taskset -c 0,1)
  [[ $t == 1 ]] && pin=(taskset -c 0)
  env OMP_WAIT_POLICY=ACTIVE "$@" "${pin[@]}" "$dir/bin/bench_matmul" "$t" "$reps" c >"$f" 2>&1
  local w lm pk=${peak[$t]:-0}
  w=$(awk '/^weighted step/ {print $3}' "$f")
  lm=$(awk '/^lm_head/ {printf "%s%s", s, $(NF-1); s=" / "}' "$f")
  [[ $t == 2 ]] && w2[$label]=${w:-0}
  rows+=("$(awk -v l="$label" -v t="$t" -v w="$w" -v p="$pk" -v lm="$lm" -v s="$(awk '$1 !~ /^(matmul|shape|weighted|lm_head)/ && NF >= 6 {printf "%s%.0f", c, $(NF-1); c=" "}' "$f")" 'BEGIN {
    if (w == "") printf "| %s | %s | failed | | | |", l, t;
    else printf "| %s | %s | %.1f | %.0f %% | %s | %s |", l, t, w, (p > 0 ? 100 * w / p : 0), lm, s }')")
  echo "$(stamp)${rows[-1]}"
}
echo "| setting | threads | weighted GFLOP/s | % of peak | lm_head fwd / dX / dW | layer shapes (qkv fwd dX dW, fc ..., proj ...) |"
tiles=(8x32 12x32 14x32 8x32pf 12x32pf 14x32pf)
((quick)) && tiles=(8x32 14x32pf)
threads=(2 "$ncpu")
[[ $ncpu == 2 ]] && threads=(2)
for tile in "${tiles[@]}"; do
  for t in "${threads[@]}"; do bm "tile $tile" "$t" TEZGAH_MM_TILE="$tile"; done
done
best_tile=8x32 best=0
for tile in "${tiles[@]}"; do
  if awk -v a="${w2["tile $tile"]:-0}" -v b="$best" 'BEGIN {exit !(a > b)}'; then best_tile=$tile best=${w2["tile $tile"]}; fi
done
best_env=(TEZGAH_MM_TILE="$best_tile")
if ((!quick)); then
  declare -A extra=([strips]="TEZGAH_MM_LOOP=strips" [mc64]="TEZGAH_MM_MC=64" [mc256]="TEZGAH_MM_MC=256")
  for k in strips mc64 mc256; do
    for t in "${threads[@]}"; do bm "tile $best_tile $k" "$t" TEZGAH_MM_TILE="$best_tile" ${extra[$k]}; done
    if awk -v a="${w2["tile $best_tile $k"]:-0}" -v b="$best" 'BEGIN {exit !(a > b)}'; then
      best=${w2["tile $best_tile $k"]}
      best_env=(TEZGAH_MM_TILE="$best_tile" ${extra[$k]})
    fi
  done
fi
# 1 thread (taskset 0): the default and the best, to tell the kernel from the 2-thread split
if ((!quick)); then
  bm "tile 8x32" 1 TEZGAH_MM_TILE=8x32
  [[ $best_tile != 8x32 ]] && bm "tile $best_tile" 1 TEZGAH_MM_TILE="$best_tile"
fi
echo "$(stamp)best on 2 threads: ${best_env[*]} ($best GFLOP/s, $(awk -v w="$best" -v p="${peak[2]:-0}" 'BEGIN {printf "%.0f", (p > 0 ? 100 * w / p : 0)}') % of the 2-thread peak ${peak[2]:-?})"

# ---- 3. the training step on 2 cores: default against the best setting ----
shard=$dir/data/train.bin
steps=6
((quick)) && steps=3
train2() { # label env assignments...
  local label=$1 run=$out/run_${1// /_}
  shift
  rm -rf "$run"
  env OMP_NUM_THREADS=2 "$@" taskset -c 0,1 "$dir/bin/tezgah" train --arch gpt2 --n-layer 4 --n-head 4 --d-model 256 \
    --max-seq-len 256 -T 256 -B 8 --vocab-size 50257 --train-shards "$shard" --steps $steps --val-every 0 \
    --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir "$run" >"$run.log" 2>&1 </dev/null
  local tps
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +3 | sort -g |
    awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2); else print "failed"}')
  echo "$(stamp)| 2 cores train, $label | $tps tokens/s (median of steps 3..$steps) |"
}
if [[ -f $shard ]]; then
  train2 "default" X=1
  train2 "${best_env[*]}" "${best_env[@]}"
else
  echo "device_cpu17: $shard is missing: no training runs" >&2
fi

# ---- 4. bench_cpu.sh with the best setting ----
left=$((budget - SECONDS))
if ((left < 40)); then
  echo "$(stamp)bench_cpu.sh skipped: ${left} s of the ${budget} s budget left"
else
  echo "$(stamp)bench_cpu.sh (QUICK, 2CORE, PROFILE, peers) with ${best_env[*]}, cut off after $left s:"
  env "${best_env[@]}" TEZGAH_BENCH_QUICK=1 TEZGAH_BENCH_2CORE=1 TEZGAH_BENCH_PROFILE=1 \
    TEZGAH_BENCH_PEER_TMO=$((left > 120 ? left - 80 : 40)) timeout "$left" bash "$root/bench/bench_cpu.sh" "$dir" >"$out/bench_cpu.txt" 2>&1
  rc=$?
  echo "$(stamp)bench_cpu.sh exit $rc$( ((rc == 124)) && echo ' (cut off: the rows so far)')"
  grep -E '^\||^peer:|fma peak|^weighted|^lm_head|^\[[^]]*\].*(matmul|total|profile)' "$out/bench_cpu.txt" | head -80
fi
echo "$(stamp)device_cpu17: done; outputs in $out"
