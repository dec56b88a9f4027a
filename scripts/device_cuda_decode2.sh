#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 4's decoding speed after branch cudadec2 (the
# device loop, PDL few-row matmuls with prefetched weights, cuBLASLt not preloaded for short
# prompts), from a carried pack DIR (scripts/device_pack.sh's .dev: bin/, lib/, data/).
#
#   here:  bash scripts/device_pack.sh -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_decode2.sh .dev          (run tool, carry [".dev"])
#
# 1. test_cuda_decode (TEZGAH_CUDA_REQUIRED=1).
# 2. A GPT-2 124M-shaped run made on the spot (train 20 steps, B 4, T 256, tiny Shakespeare).
#    CLI checks, each "identical" or not: greedy fp32 CUDA vs CPU; --batch 4 sampled fp32 CUDA
#    vs CPU; bf16 run to run; the device loop against one step at a time (TEZGAH_DECODE_CHUNK=0)
#    for bf16 greedy batch 1, bf16 sampled --batch 4 (the same draws: identical expected), and
#    without programmatic launches (TEZGAH_CUDA_PDL=0: same bits expected).
# 3. Timing, whole process (wall clock around the command), 1,000 new tokens (--ignore-eot),
#    empty prompt, with each --stats line (load, prefill, decode, teardown); A/Bs: device loop
#    off, PDL off, both off (close to the merged cudadec's flow). Then the start-up phases of
#    one bf16 batch-1 run (TEZGAH_VERBOSE: driver, context; --stats: checkpoint and backend,
#    weights, prefill, decode, teardown; the rest = exec, libraries, tokenizer, arguments),
#    a 1-token run (the fixed cost), and a per-op profile (ops one by one, 200 tokens).
# 4. The transformers peer when python3 has torch and transformers (bench/hf_generate.py),
#    fp32 only (its bf16 batch 1 ran at 14 tokens/s on 2026-12-02: 70 s for 1,000 tokens).
# Expected time: ~25 s tests, ~20 s train, ~40 s checks (3 CPU runs), ~35 s timing and
# profiles, ~40 s peer (<= 200 s; the peer is cut at 80 s).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:-.dev}
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/tz-decode2}
mkdir -p "$out"
tz=$dir/bin/tezgah data=$dir/data
t_all=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null | head -1

echo "== 1. tests"
t=test_cuda_decode
if [[ -x $dir/bin/$t ]]; then
  TEZGAH_CUDA_REQUIRED=1 timeout 120 "$dir/bin/$t" > "$out/$t.log" 2>&1
  rc=$?
  grep -E "^\[  (FAILED|PASSED|SKIPPED|ERROR) |error|difference|device [0-9]|pick_dev" "$out/$t.log" | head -30
  echo "$t: exit $rc"
else
  echo "$t: not in the pack"
fi

echo "== 2. a GPT-2 124M-shaped run"
tok=$data/gpt2_tokenizer.bin shard=$data/tiny_shakespeare_train.bin
w=$(mktemp -d)
t=$SECONDS
"$tz" train --backend cuda --model gpt2-124m --vocab-size 50257 -B 4 -T 256 --train-shards "$shard" \
  --val-shards "$shard" --steps 20 --val-every 0 --sample-tokens 0 --ckpt-every 0 --run-dir "$w/run" --quiet \
  > "$out/train.log" 2>&1 || { echo "train failed:"; tail -5 "$out/train.log"; }
echo "train: $((SECONDS - t)) s"
S() { "$tz" sample "$w/run" --tokenizer "$tok" "$@"; }
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
S --backend cuda --tokens 300 --temperature 0 > "$w/g1a" 2>> "$out/cli.err"
TEZGAH_DECODE_CHUNK=0 S --backend cuda --tokens 300 --temperature 0 > "$w/g1b" 2>> "$out/cli.err"
same "bf16 greedy 300 tokens, device loop vs one step at a time" "$w/g1a" "$w/g1b"
TEZGAH_CUDA_PDL=0 S --backend cuda --tokens 300 --temperature 0 > "$w/g1c" 2>> "$out/cli.err"
same "bf16 greedy 300 tokens, PDL vs not" "$w/g1a" "$w/g1c"
S --backend cuda --tokens 200 --batch 4 --seed 7 > "$w/s4a" 2>> "$out/cli.err"
S --backend cuda --tokens 200 --batch 4 --seed 7 > "$w/s4b" 2>> "$out/cli.err"
same "bf16 sampled --batch 4, run to run" "$w/s4a" "$w/s4b"
TEZGAH_DECODE_CHUNK=0 TEZGAH_CUDA_PDL=0 S --backend cuda --tokens 200 --batch 4 --seed 7 > "$w/s4c" 2>> "$out/cli.err"
same "bf16 sampled --batch 4, device loop + PDL vs neither" "$w/s4a" "$w/s4c"
S --backend cuda --tokens 200 --batch 16 --seed 3 --temperature 1 --top-k 0 > "$w/s16a" 2>> "$out/cli.err"
TEZGAH_DECODE_CHUNK=0 S --backend cuda --tokens 200 --batch 16 --seed 3 --temperature 1 --top-k 0 > "$w/s16b" 2>> "$out/cli.err"
same "bf16 full softmax --batch 16, device loop vs not" "$w/s16a" "$w/s16b"
S --backend cuda --tokens 60 --seed 10 --prompt "To be, or not to be, that is the question" > "$w/p1" 2>> "$out/cli.err"
TEZGAH_DECODE_CHUNK=0 S --backend cuda --tokens 60 --seed 10 --prompt "To be, or not to be, that is the question" \
  > "$w/p2" 2>> "$out/cli.err"
same "bf16 long prompt (cuBLASLt prefill), device loop vs not" "$w/p1" "$w/p2"
head -c 160 "$w/g.cuda" | tr '\n' ' '; echo

echo "== 3. tezgah sample, 1,000 new tokens, whole process"
echo "| precision | batch | picking | flow | process s | tokens/s (process) | decode tokens/s | ms/step | load s | teardown s |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
run() { # precision batch picking(greedy|sampled) [env...]
  local p=$1 b=$2 k=$3; shift 3
  local extra=(--temperature 0)
  [[ $k == sampled ]] && extra=(--temperature 0.8 --top-k 40)
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --precision "$p" --tokens 1000 --ignore-eot \
    --batch "$b" --stats "${extra[@]}" > "$w/out.txt" 2> "$w/stats.txt"
  local rc=$?
  t1=$(date +%s.%N)
  if ((rc != 0)); then echo "| $p | $b | $k | $* | FAILED (exit $rc) | | | | | |"; tail -2 "$w/stats.txt"; return; fi
  local st; st=$(grep '^sample: cuda' "$w/stats.txt" | tail -1)
  local rate ms load td
  rate=$(sed -n 's/.*s (\([0-9.]*\) tokens\/s.*/\1/p' <<< "$st")
  ms=$(sed -n 's/.*tokens\/s, \([0-9.]*\) ms\/step.*/\1/p' <<< "$st")
  load=$(sed -n 's/.*load \([0-9.]*\) s.*/\1/p' <<< "$st")
  td=$(sed -n 's/^sample: teardown \([0-9.]*\) s.*/\1/p' "$w/stats.txt")
  local flow="loop+PDL"
  [[ " $* " == *"TEZGAH_DECODE_CHUNK=0"* ]] && flow=${flow/loop/step}
  [[ " $* " == *"TEZGAH_CUDA_PDL=0"* ]] && flow=${flow/+PDL/}
  awk -v p="$p" -v b="$b" -v k="$k" -v f="$flow" -v a="$t0" -v z="$t1" -v rate="$rate" -v ms="$ms" -v ld="$load" -v td="$td" \
    'BEGIN { d = z - a; printf "| %s | %d | %s | %s | %.3f | %.0f | %s | %s | %s | %s |\n", p, b, k, f, d, 1000 * b / d, rate, ms, ld, td }'
  echo "$* $st" >> "$out/stats.log"
}
run bf16 1 greedy
run bf16 1 greedy
run bf16 1 sampled
run bf16 16 greedy
run bf16 16 sampled
run fp32 1 greedy
run fp32 16 greedy
run bf16 1 greedy TEZGAH_DECODE_CHUNK=0
run bf16 1 greedy TEZGAH_CUDA_PDL=0
run bf16 1 greedy TEZGAH_DECODE_CHUNK=0 TEZGAH_CUDA_PDL=0
run bf16 16 greedy TEZGAH_DECODE_CHUNK=0 TEZGAH_CUDA_PDL=0
run bf16 64 greedy
echo "-- start-up phases (bf16, batch 1, 1,000 tokens greedy, TEZGAH_VERBOSE=1 --stats)"
t0=$(date +%s.%N)
TEZGAH_VERBOSE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1000 --ignore-eot --temperature 0 \
  --stats > /dev/null 2> "$out/verbose.txt"
t1=$(date +%s.%N)
grep -E "start-up|cuBLASLt|^sample:|recording" "$out/verbose.txt"
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "process: %.3f s\n", z - a }'
t0=$(date +%s.%N)
"$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1 --temperature 0 --stats > /dev/null 2> "$w/one.txt"
t1=$(date +%s.%N)
grep "^sample:" "$w/one.txt"
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "1-token process (fixed cost): %.3f s\n", z - a }'
t0=$(date +%s.%N); "$tz" --help > /dev/null; t1=$(date +%s.%N)
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "tezgah --help (exec, libraries): %.3f s\n", z - a }'
echo "-- per-op profile (bf16, batch 1, 200 tokens, ops one by one)"
TEZGAH_PROFILE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 200 --ignore-eot --temperature 0 \
  --stats > /dev/null 2> "$out/profile.txt"
head -24 "$out/profile.txt"
echo "-- per-op profile (bf16, batch 16, 100 tokens)"
TEZGAH_PROFILE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 100 --batch 16 --ignore-eot \
  --temperature 0 --stats > /dev/null 2> "$out/profile16.txt"
head -16 "$out/profile16.txt"

echo "== 4. peer: transformers generate"
if python3 -c "import torch, transformers" 2> /dev/null; then
  "$tz" convert --to hf "$w/run" --out "$w/hf" > /dev/null 2> "$out/convert.err" || tail -3 "$out/convert.err"
  timeout 80 python3 bench/hf_generate.py "$w/hf" --tokens 1000 --batch 1,16 --dtype fp32 2>&1 |
    grep -E "^peer" | tee "$out/peer.log"
else
  echo "peer: no torch/transformers in python3"
fi
rm -rf "$w"
echo "total: $((SECONDS - t_all)) s"
