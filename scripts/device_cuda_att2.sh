#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24's CUDA attention figures (branch cudaatt2, merged
# defaults: dQ with 32-key tiles and Q / dO in registers, the 16-byte-load D kernel; the tuning
# sweep that chose them ran in session 12, docs/PERF.md) and the PyTorch peer in the same call.
# From a carried pack DIR (device_pack.sh's .dev).
#
#   here:  nice -n 19 bash scripts/device_pack.sh -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_att2.sh .dev          (run tool, carry [".dev"])
#
# 1. test_cuda_attention (the tensor-core and SIMT kernels against the CPU, determinism) and
#    test_cuda_train, at once, TEZGAH_CUDA_REQUIRED=1.
# 2. bench_cuda_attention 20 bf16 fast gpt2 (B16 T1024 hd64, H 12 and H 16; mean ms after a
#    warm-up, FlashAttention's causal FLOP count).
# 3. tezgah train --backend cuda, B16 T1024 bf16: gpt2-124m with --profile (tokens/s = median of
#    steps 6-20, profiled; the attention rows), then unprofiled gpt2-124m and gpt2-350m.
# 4. the peer: ../shared/bench/torch_gpt.py --compile 1 (bf16 autocast, torch.compile, fused
#    AdamW) at 124M and 350M, 15 steps each (compiled once already during step 1, untimed).
# Logs go to $OUT (the device tool's output folder) or /tmp/tz-cudaatt2; the summary is printed last.
# Expected time: ~60-110 s tests + the peer's compile (in parallel), ~5 s bench, ~15 s training,
# the peer what is left of 198 s (<= 200 s; each step has its own timeout).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:?usage: device_cuda_att2.sh DIR (the pack, e.g. .dev)}
out=${OUT:-/tmp/tz-cudaatt2}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t_all=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
summary=()

echo "== 1. tests (and the peer's torch.compile warm-up in the background, 1 step each: its FX graph
#       cache makes the timed peer runs of step 4 start in seconds; bounded at 50 + 60 s)"
t0=$SECONDS
peer_shapes=("124m 12 768 12" "350m 24 1024 16")
(for s in "${peer_shapes[@]}"; do
  read -r m L C H <<<"$s"
  timeout "$([[ $m == 124m ]] && echo 50 || echo 60)" python3 "$dir/data/torch_gpt.py" --arch gpt2 --L "$L" --d "$C" \
    --H "$H" --B 16 --T 1024 --compile 1 --steps 1 >"$out/peer_warm.$m.log" 2>&1
done) &
warm=$!
tests=(test_cuda_attention test_cuda_train)
for t in "${tests[@]}"; do
  (TEZGAH_CUDA_REQUIRED=1 timeout 100 "$dir/bin/$t" >"$out/$t.log" 2>&1; echo $? >"$out/$t.rc") &
done
wait
for t in "${tests[@]}"; do
  line="$t: exit $(cat "$out/$t.rc"), $(grep -c '^\[       OK \]' "$out/$t.log") OK, $(grep -c '^\[  FAILED  \]' "$out/$t.log") FAILED"
  echo "$line"
  summary+=("$line")
  grep -E "^\[  (FAILED|SKIPPED) |^\[  ERROR|off;|error|differ" "$out/$t.log" | head -14
done
echo "tests: $((SECONDS - t0)) s"
wait "$warm"
echo "peer warm-up done at $((SECONDS - t0)) s: $(grep -ho 'tok_s=[0-9]*' "$out"/peer_warm.*.log | paste -sd' ')"

echo "== 2. bench_cuda_attention (ms, TFLOP/s)"
t0=$SECONDS
if timeout 25 "$dir/bin/bench_cuda_attention" 20 bf16 fast gpt2 >"$out/bench.txt" 2>&1; then
  r=$(awk '{t = $(NF-3) " " $(NF-2) " " $(NF-1) " " $NF} /^gpt2 \(MHA/ {a = t} /^350m/ {b = t} END {print (a == "" || b == "" ? "fail" : a " | " b)}' "$out/bench.txt")
else
  r="fail (exit $?)"; tail -3 "$out/bench.txt"
fi
r="attention kernels (ms TFLOP/s: fwd124 bwd124 | fwd350 bwd350): $r"
echo "$r"
echo "bench: $((SECONDS - t0)) s"
summary+=("$r")

echo "== 3. train (B16 T1024 bf16)"
shard=$dir/data/tiny_shakespeare_train.bin
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
train() { # model tag extra... -> prints a line
  local m=$1 tag=$2 run
  shift 2
  run=$(mktemp -d)
  local t0=$SECONDS
  timeout 60 "$dir/bin/tezgah" train --backend cuda --model "$m" -B 16 -T 1024 \
    --vocab-size 50257 --train-shards "$shard" --val-shards "$shard" --steps 20 --val-every 0 --ckpt-every 0 \
    --sample-tokens 0 --log-every 1 --run-dir "$run/r" "$@" >"$out/train.$m.$tag.out" 2>"$out/train.$m.$tag.log"
  local rc=$?
  local tps
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | median)
  local prof
  prof=$(grep -E "^  (attention_fwd|attention_bwd|total) " "$out/train.$m.$tag.log" | awk '{printf "%s %s ms  ", $1, $2}')
  echo "$m $tag: exit $rc, $(printf '%.0f' "$tps") tokens/s, $((SECONDS - t0)) s ${prof:+| $prof}"
  [[ $rc == 0 ]] || tail -3 "$out/train.$m.$tag.log"
  rm -rf "$run"
}
t0=$SECONDS
for line in "gpt2-124m prof --profile" "gpt2-124m plain" "gpt2-350m plain"; do
  # shellcheck disable=SC2086
  r=$(train $line)
  echo "$r"
  summary+=("$r")
done
echo "train: $((SECONDS - t0)) s"

echo "== 4. peer: torch_gpt.py --compile 1 (bf16)"
t0=$SECONDS
for s in "${peer_shapes[@]}"; do
  read -r m L C H <<<"$s"
  left=$((198 - (SECONDS - t_all)))
  [[ $m == 124m ]] && left=$((left / 2))
  ((left < 20)) && left=20 # the 200 s budget: the peer gets what is left (compiled already)
  p=$(timeout "$left" python3 "$dir/data/torch_gpt.py" --arch gpt2 --L "$L" --d "$C" --H "$H" --B 16 --T 1024 --compile 1 --steps 15 2>&1 | tail -2)
  r="peer $m: $(grep -o 'tok_s=[0-9.]*' <<<"$p" | head -1) ($((SECONDS - t0)) s so far)"
  echo "$r"; [[ $p == *tok_s=* ]] || echo "$p"
  summary+=("$r")
done

echo "== summary (device_cuda_att2, $((SECONDS - t_all)) s)"
printf '%s\n' "${summary[@]}"
