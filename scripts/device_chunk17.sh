#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 2, the classifier and cross-entropy in row chunks
# (src/model/model.c, classify; branch chunk17). `train --logits-chunk ROWS` picks the chunk in the
# same binary: 0 = the whole batch (what main did), 4096 / 2048 rows; auto keeps GPT-2 124M B16
# T1024 bf16 (1.65 GB of logits) whole. From a carried pack DIR:
#
#   here:  TZ_PACK_TARGETS="tezgah test_cuda_train" nice -n 19 bash scripts/device_pack.sh .dev \
#            -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_chunk17.sh .dev          (run tool, carry [".dev"], timeout 300)
#
# 1. test_cuda_train, TEZGAH_CUDA_REQUIRED=1 (its chunked cases: chunks of 40 of 111 rows against
#    the CPU, fp32 and bf16, and bf16 run to run).
# 2. tezgah train --backend cuda --model gpt2-124m, B16 T1024 bf16, 30 steps each, with
#    --logits-chunk 0, 4096, 2048, then 0 again (the drift check): tokens/s = median of the per-step
#    tok_per_s of steps 6..30 (bench/bench_cuda.sh's way), the activation arena (the run's memory
#    line), the peak device memory (its exit line), the losses of steps 1, 2, 3 and 30.
# 3. If the budget allows: the largest vocabulary llm.c's uint16 shards allow (--vocab-size 65536,
#    the same GPT-2 shard) at B32 T1024: 4.3 GB of bf16 logits, what a 128K vocabulary holds at
#    B16. auto (4 chunks of 8192 rows) against 0: the memory drop where auto chunks, and its cost.
# Logs go to $OUT (or /tmp/tz-chunk17); the summary is printed last. Budget 150 s, each step under
# timeout: the test ~30-60 s, a training run ~10-15 s.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:?usage: device_chunk17.sh DIR (the pack, e.g. .dev)}
out=${OUT:-/tmp/tz-chunk17}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t_all=$SECONDS
budget=150
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
summary=()

echo "== 1. test_cuda_train"
t0=$SECONDS
TEZGAH_CUDA_REQUIRED=1 timeout 90 "$dir/bin/test_cuda_train" >"$out/test_cuda_train.log" 2>&1
rc=$?
line="test_cuda_train: exit $rc, $(grep -c '^\[       OK \]' "$out/test_cuda_train.log") OK, $(grep -c '^\[  FAILED  \]' "$out/test_cuda_train.log") FAILED, $((SECONDS - t0)) s"
echo "$line"
summary+=("$line")
grep -E "^\[  (FAILED|SKIPPED) |^\[  ERROR|worst relative|determinism|error" "$out/test_cuda_train.log" | head -24
while read -r l; do summary+=("  $l"); done < <(grep -E "chunks of 40: worst" "$out/test_cuda_train.log")

echo "== 2. train gpt2-124m B16 T1024 bf16, 30 steps, --logits-chunk 0 / 4096 / 2048 / 0"
shard=$dir/data/tiny_shakespeare_train.bin
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
train() { # tag chunk extra... -> prints one line
  local tag=$1 chunk=$2 run t0=$SECONDS
  shift 2
  run=$(mktemp -d)
  timeout 40 "$dir/bin/tezgah" train --backend cuda --model gpt2-124m -B 16 -T 1024 --vocab-size 50257 \
    --train-shards "$shard" --val-shards "$shard" --steps 30 --val-every 0 --ckpt-every 0 --sample-tokens 0 \
    --log-every 1 --run-dir "$run/r" --logits-chunk "$chunk" "$@" >"$out/train.$tag.out" 2>"$out/train.$tag.log"
  local rc=$? tps losses act peak cls
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | median)
  losses=$(grep -o '"loss":[0-9.e+-]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | sed -n '1,3p;30p' | paste -sd' ')
  act=$(grep -o 'activations [0-9.]*' "$out/train.$tag.log" | head -1 | cut -d' ' -f2)
  peak=$(grep -o 'device memory: [0-9.]* MiB peak' "$out/train.$tag.log" | grep -o '[0-9.]*' | head -1)
  cls=$(grep -o '^classifier: .*' "$out/train.$tag.log" | head -1)
  echo "$tag (--logits-chunk $chunk): exit $rc, $(printf '%.0f' "${tps:-nan}") tokens/s, activations ${act:-?} MiB, peak ${peak:-?} MiB, loss steps 1-3,30: $losses, $((SECONDS - t0)) s${cls:+; $cls}"
  [[ $rc == 0 ]] || tail -3 "$out/train.$tag.log"
  rm -rf "$run"
}
t0=$SECONDS
runs=("whole 0" "c4096 4096" "c2048 2048" "whole-again 0")
for r in "${runs[@]}"; do
  if ((SECONDS - t_all > budget - 20)); then summary+=("skipped (budget): train $r"); continue; fi
  # shellcheck disable=SC2086
  l=$(train $r)
  echo "$l"
  summary+=("$l")
done
echo "train: $((SECONDS - t0)) s"

echo "== 3. V 65536, B32 T1024 (4.3 GB of bf16 logits): auto vs 0"
for r in "v64k-b32-auto auto --vocab-size 65536 -B 32" "v64k-b32-whole 0 --vocab-size 65536 -B 32"; do
  if ((SECONDS - t_all > budget - 20)); then summary+=("skipped (budget): train $r"); continue; fi
  # shellcheck disable=SC2086
  l=$(train $r)
  echo "$l"
  summary+=("$l")
done

echo "== summary (device_chunk17, $((SECONDS - t_all)) s)"
printf '%s\n' "${summary[@]}"
