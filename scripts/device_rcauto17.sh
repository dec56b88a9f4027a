#!/usr/bin/env bash
# train --recompute auto on the H200 (issue 24 item 3: GPT-2 350M / 774M / 1.5B shapes train on
# one GPU with activation recompute chosen by what fits). Correctness first, then the choices at
# sizes picked from tz_model_training_bytes (bf16, T 1024, V 50257, logits in chunks where main's
# auto cuts them; the H200's 140.4 GiB, ~134.6 GiB left by 774M's weights and the 1 GiB reserve,
# ~130 by 1.5B's):
#   1. test_cuda_recompute (TEZGAH_CUDA_REQUIRED=1): be->mem_free follows allocations; the sizes
#      auto decides on equal what alloc_training takes (mem_used) and what mem_free loses; stored
#      and recomputed arenas give bit-identical losses and gradients (bf16, fp32).
#   2. gpt2-774m -B 160, auto: neither arena fits (stored 241 GiB, recompute 159): one error
#      line naming both sizes, exit 1, before anything is allocated.
#   3. gpt2-774m -B 96 --recompute off: stored (148 GiB) does not fit: the allocation's error
#      (what a user got before auto).
#   4. gpt2-1.5b -B 56, auto (the default): stored 152 GiB does not fit, recompute 104 does: the
#      note, 2 steps, the peak device memory against the estimate (held + the note's size).
#   5. gpt2-774m -B 96, auto, 3 steps, when the time allows: stored 148, recompute 99: the note,
#      the peak.
# Whole script <= 200 s, each step under `timeout`; a summary last.
#
#   pack (here): TZ_PACK_TARGETS="tezgah test_cuda_recompute" bash scripts/device_pack.sh .dev \
#                  -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (device tool, carry [".dev"]):  bash scripts/device_rcauto17.sh .dev
# DIR: bin/ (tezgah, test_cuda_recompute), lib/, data/tiny_shakespeare_train.bin (device_pack.sh
# makes it from ../shared). Writes $OUT/rcauto17.tgz and $OUT/rcauto17_summary.log.
set -uo pipefail
dir=${1:?usage: device_rcauto17.sh DIR}
# logs under /tmp/rcauto17; after each step $OUT/rcauto17.tgz (all of them) and
# $OUT/rcauto17_summary.log: the device tool returns at most 8 files (the 18:04 call on
# 2026-12-03 lost every log but the first this way)
out=/tmp/rcauto17
OUT=${OUT:-/tmp/rcauto17_out}
rm -rf "$out" && mkdir -p "$out" "$OUT"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tz=$PWD/$dir/bin/tezgah
shard=$PWD/$dir/data/tiny_shakespeare_train.bin
work=/tmp/rcauto17_runs
rm -rf "$work" && mkdir -p "$work"
sum=()
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$out/summary.log" >>"$OUT/rcauto17_summary.log"
  sum+=("$*")
  tar czf "$OUT/rcauto17.tgz" -C /tmp rcauto17 2>/dev/null
}
say "start $(nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader | head -1)"

# 1. correctness
TEZGAH_CUDA_REQUIRED=1 timeout 90 "$dir/bin/test_cuda_recompute" >"$out/test_cuda_recompute.log" 2>&1
rc=$?
say "test_cuda_recompute rc $rc: $(grep -cE '^\[       OK \]' "$out/test_cuda_recompute.log") ok, $(grep -cE '^\[  FAILED  \] test' "$out/test_cuda_recompute.log") failed; $(grep -E '^mem_free|recompute 1:|loss stored' "$out/test_cuda_recompute.log" | head -4 | tr '\n' ';')"

run() { # NAME TIMEOUT PRESET B STEPS extra... -> $out/NAME.log, rc in $r_rc
  local name=$1 tmo=$2 preset=$3 B=$4 steps=$5
  shift 5
  timeout "$tmo" "$tz" train --backend cuda --model "$preset" -B "$B" -T 1024 --vocab-size 50257 \
    --train-shards "$shard" --steps "$steps" --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 \
    --run-dir "$work/$name" "$@" >"$out/$name.log" 2>&1 </dev/null
  r_rc=$?
  rm -rf "$work/$name" # checkpoints of 9-19 GB
}
# the estimate of a run that trained: the parameters and their bf16 copy (6 bytes each, held
# before the decision; the count from train's model line) + the note's recompute size, against
# train's peak line (which also holds the kernel scratch and cuBLASLt's workspace)
peak() { # NAME
  local l=$out/$1.log
  local need pk pm
  need=$(sed -n 's/.*GiB with the activations stored, \([0-9.]*\) GiB with recompute;.*/\1/p' "$l" | head -1)
  pk=$(grep -o 'device memory: [0-9.]* MiB peak' "$l" | grep -o '[0-9.]*' | head -1)
  pm=$(sed -n 's/^model: .*: \([0-9.]*\)M params.*/\1/p' "$l" | head -1)
  awk -v n="${need:-0}" -v p="${pm:-0}" -v k="${pk:-0}" 'BEGIN {
    printf "estimate %.2f GiB (held %.2f + %.2f), peak %.2f GiB", p * 6e6 / 2^30 + n, p * 6e6 / 2^30, n, k / 1024 }'
}

# 2. neither fits
run neither774 60 gpt2-774m 160 2
say "774m B160 auto: rc $r_rc (want 1): $(grep -E 'error|note' "$out/neither774.log" | head -2 | tr '\n' ' ')"
# 3. stored only, as before auto
run off774 60 gpt2-774m 96 2 --recompute off
say "774m B96 --recompute off: rc $r_rc (want 1: out of memory): $(grep -E 'error' "$out/off774.log" | head -1)"
# 4. 1.5B at B56: auto turns recompute on
run auto1558 110 gpt2-1.5b 56 2
say "1.5b B56 auto: rc $r_rc (want 0): $(grep -E '^note: --recompute|error' "$out/auto1558.log" | head -1)"
say "1.5b B56 auto: $(grep -E '^memory:' "$out/auto1558.log" | head -1); $(peak auto1558); $(grep -E '^ *2/2 ' "$out/auto1558.log" | tail -1)"
# 5. 774M at B96, when the time allows
if ((SECONDS < 140)); then
  run auto774 $((195 - SECONDS)) gpt2-774m 96 3
  say "774m B96 auto: rc $r_rc (want 0): $(grep -E '^note: --recompute|error' "$out/auto774.log" | head -1)"
  say "774m B96 auto: $(grep -E '^memory:' "$out/auto774.log" | head -1); $(peak auto774); $(grep -E '^ *3/3 ' "$out/auto774.log" | tail -1)"
else
  say "774m B96 auto: skipped (time)"
fi
echo "==== summary ===="
printf '%s\n' "${sum[@]}"
