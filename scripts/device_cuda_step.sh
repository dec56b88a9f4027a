#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 4's decoding targets and the whole step in one
# persistent kernel (src/kernels/decode_step/decode_step.cu, opt-in: TEZGAH_CUDA_STEP=1) against
# the default recorded op-by-op step, in the same binary. Whole `tezgah sample` process, 1,000 new
# tokens, GPT-2 124M: batch 1 >= 1,500 tokens/s, batch 16 >= 15,000.
# From a carried pack DIR (scripts/device_pack.sh's output):
#   here:  TZ_PACK_TARGETS="tezgah test_cuda_decode" nice -n 19 bash scripts/device_pack.sh pack \
#            -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_step.sh pack      (run tool, carry ["pack"], timeout 300)
# 1. test_cuda_decode, the whole program (as ctest runs it), then test_model_step_kernel alone
#    (its error line printed) and under compute-sanitizer memcheck if present.
# 2. A GPT-2 124M-shaped run (train 20 steps, B 4, T 256); CLI checks with the one-kernel step:
#    bf16 --batch 16 greedy and sampled run to run; batch 1 greedy vs the op-by-op step and vs the
#    CPU's fp32 (equal leading bytes).
# 3. Timing, whole process, 1,000 new tokens, greedy bf16, batch 1 and 16: default and
#    TEZGAH_CUDA_STEP=1 x3 each, interleaved; per-op profiles (TEZGAH_PROFILE=1); the one-kernel
#    step's phase trace (TEZGAH_CUDA_STEP_TRACE=1) at batch 1 and 16.
# 4. The peer: transformers generate() fp32 at batch 1 (bench/hf_generate.py), cut to the budget.
# 5. The summary LAST. ~85 s.
set -uo pipefail
# shellcheck source=scripts/device_decode_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_decode_lib.sh"
run() { decode_run "$@"; }
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:-pack}
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=/tmp/tz-step
rm -rf "$out"
mkdir -p "$out"
tz=$dir/bin/tezgah data=$dir/data
t_all=$SECONDS
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1)
echo "gpu: $gpu"
pack_logs() { [[ -n ${OUT:-} ]] && tar czf "$OUT/step_logs.tgz" -C "$out" . 2> /dev/null; }

echo "== 1. test_cuda_decode"
t=test_cuda_decode
ts=$SECONDS
TEZGAH_CUDA_REQUIRED=1 timeout 90 "$dir/bin/$t" > "$out/$t.log" 2>&1
rc=$?
np=$(grep -c '^\[       OK \]' "$out/$t.log")
last=$(grep -E '^\[ RUN' "$out/$t.log" | tail -1 | tr -s ' ')
if ((rc == 0)); then echo "$t whole program: passed ($np cases, $((SECONDS - ts)) s)" | tee -a "$out/tests.txt"
else
  echo "$t whole program: FAILED exit $rc ($np cases OK; last: $last)" | tee -a "$out/tests.txt"
  grep -E 'tezgah: error|error:|differ|FAILED \]|decode_step|\.c:[0-9]+' "$out/$t.log" | head -6 | cut -c1-200 >> "$out/tests.txt"
fi
TEZGAH_TEST_FILTER=test_model_step_kernel TEZGAH_CUDA_REQUIRED=1 timeout 60 "$dir/bin/$t" > "$out/$t.step.log" 2>&1
rc=$?
echo "$t test_model_step_kernel alone: $( ((rc == 0)) && echo passed || echo "FAILED exit $rc")" | tee -a "$out/tests.txt"
grep -E '^decode_step' "$out/$t.step.log" | tee -a "$out/tests.txt"
((rc != 0)) && grep -E 'error|\.c:[0-9]+|FAILED' "$out/$t.step.log" | head -4 | cut -c1-200 | tee -a "$out/tests.txt"
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null | head -1)
if [[ -n $cs ]]; then
  TEZGAH_TEST_FILTER=test_model_step_kernel TEZGAH_CUDA_REQUIRED=1 timeout 60 "$cs" --tool memcheck "$dir/bin/$t" \
    > "$out/$t.memcheck.log" 2>&1
  rc=$?
  echo "$t test_model_step_kernel under memcheck: exit $rc, $(grep -E 'ERROR SUMMARY' "$out/$t.memcheck.log" | tail -1)" | tee -a "$out/tests.txt"
fi
pack_logs

echo "== 2. a GPT-2 124M-shaped run, CLI checks"
decode_setup
TEZGAH_CUDA_STEP=1 S --backend cuda --tokens 300 --batch 16 --seed 5 --temperature 0 > "$w/s16a" 2>> "$out/cli.err"
TEZGAH_CUDA_STEP=1 S --backend cuda --tokens 300 --batch 16 --seed 5 --temperature 0 > "$w/s16b" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, run to run" "$w/s16a" "$w/s16b"
TEZGAH_CUDA_STEP=1 S --backend cuda --tokens 300 --batch 16 --seed 5 --temperature 0.8 > "$w/t16a" 2>> "$out/cli.err"
TEZGAH_CUDA_STEP=1 S --backend cuda --tokens 300 --batch 16 --seed 5 --temperature 0.8 > "$w/t16b" 2>> "$out/cli.err"
same "bf16 sampled --batch 16, run to run" "$w/t16a" "$w/t16b"
S --backend cuda --tokens 300 --temperature 0 > "$w/s1" 2>> "$out/cli.err"
TEZGAH_CUDA_STEP=1 S --backend cuda --tokens 300 --temperature 0 > "$w/s1op" 2>> "$out/cli.err"
echo "cli: bf16 greedy batch 1, op by op (default) vs one kernel: $(cmp "$w/s1" "$w/s1op" > /dev/null && echo identical || echo "differ from byte $(cmp "$w/s1" "$w/s1op" | sed -n 's/.*byte \([0-9]*\).*/\1/p') of $(wc -c < "$w/s1")")" | tee -a "$out/cli.txt"
S --backend cpu --precision fp32 --tokens 300 --temperature 0 > "$w/s1cpu" 2>> "$out/cli.err"
echo "cli: greedy batch 1 vs cpu fp32: op by op equal for $(cmp "$w/s1" "$w/s1cpu" > /dev/null && echo all || cmp "$w/s1" "$w/s1cpu" | sed -n 's/.*byte \([0-9]*\).*/\1/p') bytes, one kernel for $(cmp "$w/s1op" "$w/s1cpu" > /dev/null && echo all || cmp "$w/s1op" "$w/s1cpu" | sed -n 's/.*byte \([0-9]*\).*/\1/p') (of $(wc -c < "$w/s1cpu"))" | tee -a "$out/cli.txt"
pack_logs

echo "== 3. tezgah sample, 1,000 new tokens, whole process"
for b in 1 16; do
  for i in 1 2 3; do
    run default $b
    run step $b TEZGAH_CUDA_STEP=1
  done
done
pack_logs
for pv in "1 1" "16 1" "1 0" "16 0"; do
  read -r b v <<< "$pv"
  env=(); ((v == 1)) && env=(TEZGAH_CUDA_STEP=1)
  env "${env[@]}" TEZGAH_PROFILE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 200 \
    --batch $b --ignore-eot --temperature 0 --stats > /dev/null 2> "$out/profile$b.$v.txt"
  echo "per-op b$b $( ((v)) && echo step || echo default) (ms/step, calls): $(awk '$2 ~ /^[0-9.]+$/ && $1 != "total" && NR > 2 && n++ < 4 { printf "%s %s (%s), ", $1, $2, $3 } $1 == "total" { printf "total %s", $2 }' "$out/profile$b.$v.txt")" |
    tee -a "$out/phases.txt"
done
for b in 1 16; do
  TEZGAH_CUDA_STEP=1 TEZGAH_CUDA_STEP_TRACE=1 TEZGAH_VERBOSE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda \
    --tokens 400 --ignore-eot --temperature 0 --batch $b --stats > /dev/null 2> "$out/trace$b.txt"
  echo "batch $b: $(grep -E "^cuda: decode_step trace" "$out/trace$b.txt" | tail -1)" | cut -c1-300 | tee -a "$out/phases.txt"
done
pack_logs

echo "== 4. peer: transformers generate (fp32, batch 1, 1,000 tokens)"
if python3 -c "import torch, transformers" 2> /dev/null; then
  "$tz" convert --to hf "$w/run" --out "$w/hf" > /dev/null 2> "$out/convert.err" || tail -3 "$out/convert.err"
  lim=$((150 - (SECONDS - t_all)))
  ((lim < 25)) && lim=25
  timeout $lim python3 bench/hf_generate.py "$w/hf" --tokens 1000 --batch 1 --dtype fp32 2>&1 |
    grep -E "^peer" | tee "$out/peer.log"
else
  echo "peer: no torch/transformers in python3" | tee "$out/peer.log"
fi
rm -rf "$w"

echo "== 5. summary (gpu: $gpu)"
cat "$out/tests.txt"
cat "$out/cli.txt"
cat "$out/phases.txt"
grep -E "^peer dtype" "$out/peer.log" | sed 's/^peer /peer (transformers) /'
echo "whole process, 1,000 new tokens, bf16 greedy; process s and tokens/s as min / median over the runs; other columns medians"
decode_table
pack_logs
echo "targets: batch 1 >= 1,500 tokens/s (<= 0.667 s), batch 16 >= 15,000 (<= 1.067 s). total: $((SECONDS - t_all)) s"
