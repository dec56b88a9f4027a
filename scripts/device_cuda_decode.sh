#!/usr/bin/env bash
# On the GPU machine (device tool): the decoding tests and the `tezgah sample` speed of issue 24
# item 4, from a carried pack DIR (scripts/device_pack.sh's .dev: bin/, lib/, data/).
#
#   here:  bash scripts/device_pack.sh -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_decode.sh .dev          (run tool, carry [".dev"])
#
# 1. test_cuda_decode (TEZGAH_CUDA_REQUIRED=1): attention_decode and pick against the CPU, the
#    model's greedy/sampled decoding fp32 CUDA = CPU, bf16 run to run and recorded = unrecorded.
# 2. A GPT-2 124M-shaped run made on the spot (no GPT-2 weights in the pack): `train --model
#    gpt2-124m` for 20 steps on tiny Shakespeare (B 4, T 256), GPT-2 tokenizer from the pack.
#    CLI checks: greedy fp32 100 tokens, CUDA vs CPU (identical text), `--batch 4` on CUDA and
#    on the CPU (identical), and the CPU's batch row 3 vs a one-row CPU run with seed + 3.
# 3. Timing, whole process (wall clock around the command, start-up and loading included),
#    1,000 new tokens (--ignore-eot), empty prompt: bf16 and fp32, batch 1 and 16, greedy and
#    the default sampling (temperature 0.8, top-k 40: picked on the device); recording off
#    (TEZGAH_CUDA_GRAPHS=0) at batch 1 as the A/B; each command's --stats line (load, prefill,
#    decode tokens/s). Then a TEZGAH_PROFILE=1 run (ops one by one, per-op table, 200 tokens).
# 4. The peer when python3 has torch and transformers: bench/hf_generate.py on the same weights
#    (`tezgah convert --to hf`), greedy, 1,000 tokens, fp32 and bf16, batch 1 and 16.
# Prints a table; logs go to $OUT (the device tool's output folder) or /tmp/tz-decode.
# Expected time: ~25 s tests, ~20 s train, ~40 s timing, ~60 s peer (<= 200 s).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-.dev}
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/tz-decode}
mkdir -p "$out"
tz=$dir/bin/tezgah data=$dir/data
t_all=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null | head -1

echo "== 1. tests"
if [[ -x $dir/bin/test_cuda_decode ]]; then
  TEZGAH_CUDA_REQUIRED=1 timeout 180 "$dir/bin/test_cuda_decode" > "$out/test_cuda_decode.log" 2>&1
  rc=$?
  grep -E "^\[  (FAILED|PASSED|SKIPPED|  OK|ERROR) |error|difference|device [0-9]|off;" "$out/test_cuda_decode.log" | head -40
  echo "test_cuda_decode: exit $rc"
else
  echo "test_cuda_decode: not in the pack"
fi

echo "== 2. a GPT-2 124M-shaped run"
tok=$data/gpt2_tokenizer.bin shard=$data/tiny_shakespeare_train.bin
w=$(mktemp -d)
t=$SECONDS
$tz train --backend cuda --model gpt2-124m --vocab-size 50257 -B 4 -T 256 --train-shards "$shard" \
  --val-shards "$shard" --steps 20 --val-every 0 --sample-tokens 0 --ckpt-every 0 --run-dir "$w/run" --quiet \
  > "$out/train.log" 2>&1 || { echo "train failed:"; tail -5 "$out/train.log"; }
echo "train: $((SECONDS - t)) s"
S() { $tz sample "$w/run" --tokenizer "$tok" "$@"; }
same() {
  if [[ ! -s $2 || ! -s $3 ]]; then echo "cli: $1: FAILED (no output; $out/cli.err)"; tail -2 "$out/cli.err"
  elif cmp -s "$2" "$3"; then echo "cli: $1: identical"; else echo "cli: $1: DIFFERENT"; cmp "$2" "$3" | head -2; fi
}
S --backend cpu --precision fp32 --temperature 0 --tokens 100 > "$w/g.cpu" 2>> "$out/cli.err"
S --backend cuda --precision fp32 --temperature 0 --tokens 100 > "$w/g.cuda" 2>> "$out/cli.err"
same "greedy 100 tokens fp32, cuda vs cpu" "$w/g.cpu" "$w/g.cuda"
S --backend cpu --precision fp32 --tokens 60 --batch 4 --seed 7 > "$w/b.cpu" 2>> "$out/cli.err"
S --backend cuda --precision fp32 --tokens 60 --batch 4 --seed 7 > "$w/b.cuda" 2>> "$out/cli.err"
same "--batch 4 sampled fp32, cuda vs cpu" "$w/b.cpu" "$w/b.cuda"
S --backend cpu --precision fp32 --tokens 60 --seed 10 > "$w/one.cpu" 2>> "$out/cli.err"
awk '/^--- sample 4 of 4/{f=1;next} /^--- sample/{f=0} f' "$w/b.cpu" > "$w/row3.cpu"
same "cpu --batch 4 row 4 vs --batch 1 --seed 10" "$w/one.cpu" "$w/row3.cpu"
awk '/^--- sample 4 of 4/{f=1;next} /^--- sample/{f=0} f' "$w/b.cuda" > "$w/row3.cuda"
S --backend cuda --precision fp32 --tokens 60 --seed 10 > "$w/one.cuda" 2>> "$out/cli.err"
same "cuda fp32 --batch 4 row 4 vs --batch 1 --seed 10" "$w/one.cuda" "$w/row3.cuda"
S --backend cuda --tokens 60 --batch 4 --seed 7 > "$w/b16a" 2>> "$out/cli.err"
S --backend cuda --tokens 60 --batch 4 --seed 7 > "$w/b16b" 2>> "$out/cli.err"
same "--batch 4 bf16, run to run" "$w/b16a" "$w/b16b"
awk '/^--- sample 2 of 4/{f=1;next} /^--- sample/{f=0} f' "$w/b16a" > "$w/row1.bf16"
S --backend cuda --tokens 60 --seed 8 > "$w/one.bf16" 2>> "$out/cli.err"
same "cuda bf16 --batch 4 row 2 vs --batch 1 --seed 8" "$w/one.bf16" "$w/row1.bf16"
head -c 160 "$w/g.cuda" | tr '\n' ' '; echo

echo "== 3. tezgah sample, 1,000 new tokens, whole process"
echo "| precision | batch | picking | recording | process s | tokens/s (process) | decode tokens/s (--stats) | ms/step | load s |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|"
run() { # precision batch picking(greedy|sampled) [env...]
  local p=$1 b=$2 k=$3; shift 3
  local extra=(--temperature 0)
  [[ $k == sampled ]] && extra=(--temperature 0.8 --top-k 40)
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" $tz sample "$w/run" --tokenizer "$tok" --backend cuda --precision "$p" --tokens 1000 --ignore-eot \
    --batch "$b" --stats "${extra[@]}" > "$w/out.txt" 2> "$w/stats.txt"
  local rc=$?
  t1=$(date +%s.%N)
  if ((rc != 0)); then echo "| $p | $b | $k | $* | FAILED (exit $rc) | | | | |"; tail -2 "$w/stats.txt"; return; fi
  local st; st=$(grep '^sample:' "$w/stats.txt" | tail -1)
  local rate ms load
  rate=$(sed -n 's/.*s (\([0-9.]*\) tokens\/s.*/\1/p' <<< "$st")
  ms=$(sed -n 's/.*tokens\/s, \([0-9.]*\) ms\/step.*/\1/p' <<< "$st")
  load=$(sed -n 's/.*load \([0-9.]*\) s.*/\1/p' <<< "$st")
  local rec=on; [[ " $* " == *"TEZGAH_CUDA_GRAPHS=0"* ]] && rec=off
  [[ " $* " == *"TEZGAH_CUDA_GEMV=0"* ]] && rec="$rec, cuBLASLt for M<=16"
  awk -v p="$p" -v b="$b" -v k="$k" -v r="$rec" -v a="$t0" -v z="$t1" -v rate="$rate" -v ms="$ms" -v ld="$load" \
    'BEGIN { d = z - a; printf "| %s | %d | %s | %s | %.3f | %.0f | %s | %s | %s |\n", p, b, k, r, d, 1000 * b / d, rate, ms, ld }'
  echo "$st" >> "$out/stats.log"
  grep -v '^sample:' "$w/stats.txt" | head -3
}
run bf16 1 greedy
run bf16 1 greedy
run bf16 16 greedy
run bf16 1 sampled
run bf16 16 sampled
run fp32 1 greedy
run fp32 16 greedy
run bf16 1 greedy TEZGAH_CUDA_GRAPHS=0
run bf16 64 greedy
echo "-- start-up (TEZGAH_VERBOSE=1, bf16, batch 1, 10 tokens)"
t0=$(date +%s.%N)
TEZGAH_VERBOSE=1 $tz sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 10 --ignore-eot --temperature 0 \
  --stats > /dev/null 2> "$out/verbose.txt"
t1=$(date +%s.%N)
grep -E "start-up|^sample:" "$out/verbose.txt"
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "process: %.3f s\n", z - a }'
t0=$(date +%s.%N); $tz --help > /dev/null; t1=$(date +%s.%N)
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "tezgah --help (exec, libraries): %.3f s\n", z - a }'
run bf16 1 greedy TEZGAH_CUDA_GEMV=0
echo "-- per-op profile (bf16, batch 1, 200 tokens, ops one by one)"
TEZGAH_PROFILE=1 $tz sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 200 --ignore-eot --temperature 0 \
  --stats > /dev/null 2> "$out/profile.txt"
head -30 "$out/profile.txt"

echo "== 4. peer: transformers generate"
if python3 -c "import torch, transformers" 2> /dev/null; then
  $tz convert --to hf "$w/run" --out "$w/hf" > /dev/null 2> "$out/convert.err" || tail -3 "$out/convert.err"
  timeout 150 python3 bench/hf_generate.py "$w/hf" --tokens 1000 --batch 1,16 --dtype fp32,bf16 2>&1 |
    grep -E "^peer" | tee "$out/peer.log"
else
  echo "peer: no torch/transformers in python3"
fi
rm -rf "$w"
echo "total: $((SECONDS - t_all)) s"
