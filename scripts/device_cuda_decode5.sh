#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 4's decoding targets, whole `tezgah sample`
# process, 1,000 new tokens, GPT-2 124M: batch 16 >= 15,000 tokens/s, batch 1 >= 1,500 (branch
# cudadec5, round 2; round 1's figures are in docs/PERF.md). What round 2 changed:
#   - attention_decode: attn_decode_v, the default where rows are 16-byte aligned (16-byte loads,
#     LPK lanes a key, 4 rounds of loads in flight, one softmax update per round);
#     TEZGAH_CUDA_DEC_VEC=0 runs round 1's kernel (attn_decode_k). Both merge the splits'
#     partials through shared memory now (the same sums in the same order as round 1's loop);
#   - keys per block 32 at B <= 7 rows (the gemv regime), 64 above; TEZGAH_CUDA_DEC_CHUNK overrides;
#   - mma_k (8..16 rows) and gemv_k (1 row, no norm) load a round's pieces of a together
#     (PRE; nvcc did not hoist them): TEZGAH_CUDA_MMA_PREA=0 loads them one by one as round 1
#     (the same bits: the CLI checks say "identical");
#   - sample: one-token prompts (an empty prompt) of B > 1 rows prefilled by one batched step
#     (B one-row forwards before: ~10 ms at batch 16, round 1's "prefill" column;
#     TEZGAH_PREFILL_ROWS=1: as before, in the round1 rows);
#   - the checkpoint's sections hashed on threads (params, adam_m, adam_v: 1.5 GB on one thread
#     took ~255 ms beside the ~280 ms CUDA start-up): the start-up phases show both;
#   - TEZGAH_EXIT_RESET=1 (A/B only): cudaDeviceReset() before the quick exit; does tearing the
#     context down in the process make the time after the command shorter in all?
#   - TEZGAH_DETACH_EXIT=1 stays opt-in (it moves the ~0.1 s teardown out of the measured
#     process); shown for reference.
# From a carried pack DIR (scripts/device_pack.sh's output: bin/tezgah, bin/test_cuda_decode,
# lib/, data/ with gpt2_tokenizer.bin, tiny_shakespeare_train.bin).
#
#   here:  TZ_PACK_TARGETS="tezgah test_cuda_decode" nice -n 19 bash scripts/device_pack.sh pack \
#            -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_decode5.sh pack      (run tool, carry ["pack"], timeout 300)
#
# 1. test_cuda_decode, the whole program in one process (as ctest runs it), default and under
#    TEZGAH_CUDA_DEC_CHUNK=64 (batch 16's chunk, for every case); on a failure each case alone,
#    to name it; test_attention_decode under TEZGAH_CUDA_DEC_VEC=0 and TEZGAH_CUDA_DEC_CHUNK=16.
# 2. A GPT-2 124M-shaped run made on the spot (train 20 steps, B 4, T 256), then CLI checks,
#    each "identical" or not: greedy fp32 CUDA vs CPU (batch 1 and 2); bf16 batch 16 run to run;
#    TEZGAH_EXIT_RESET=1 (through a pipe) vs default.
# 3. Timing, whole process (wall clock around the command), 1,000 new tokens (--ignore-eot),
#    empty prompt, greedy bf16, batch 1 and 16: default, round1 (round 1's kernels and prefill:
#    TEZGAH_CUDA_DEC_VEC=0 TEZGAH_CUDA_MMA_PREA=0 TEZGAH_PREFILL_ROWS=1, at batch 1
#    TEZGAH_CUDA_DEC_CHUNK=64; the checkpoint threads stay) and
#    TEZGAH_EXIT_RESET=1 x3 each (interleaved); VEC=0 alone, PREA=0 alone, detached x2; the
#    other key chunk x1; per row min and median.
# 4. Start-up phases at batch 1 and 16 (TEZGAH_VERBOSE=1), 1-token processes default / reset x2,
#    per-op profiles (TEZGAH_PROFILE=1) at batch 1 and 16, default and round 1's kernels.
# 5. The peer: transformers generate() fp32, batch 1 and 16, 1,000 tokens, same weights
#    (bench/hf_generate.py on `tezgah convert --to hf`), cut at 112 s of the script.
# 6. The summary LAST (the output's tail is what comes back): tests, checks, phases, the table.
# Expected: ~20 s tests, ~10 s train, ~8 s checks, ~35 s timing, ~8 s phases, ~30 s peer:
# ~105-120 s.
set -uo pipefail
# shellcheck source=scripts/device_decode_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_decode_lib.sh"
run() { decode_run "$@"; }
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:-pack}
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# logs here; one archive of them to $OUT at the end (the device tool returns 8 files at most,
# shared by every script of a call)
out=/tmp/tz-decode5
rm -rf "$out"
mkdir -p "$out"
tz=$dir/bin/tezgah data=$dir/data
t_all=$SECONDS
gpu=$(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader 2> /dev/null | head -1)
echo "gpu: $gpu"

echo "== 1. test_cuda_decode (whole program)"
t=test_cuda_decode
ts=$SECONDS
if [[ -x $dir/bin/$t ]]; then
  for v in default chunk64; do
    env=(); [[ $v == chunk64 ]] && env=(TEZGAH_CUDA_DEC_CHUNK=64)
    env "${env[@]}" TEZGAH_CUDA_REQUIRED=1 timeout 60 "$dir/bin/$t" > "$out/$t.$v.log" 2>&1
    rc=$?
    np=$(grep -c '^\[       OK \]' "$out/$t.$v.log")
    last=$(grep -E '^\[ RUN' "$out/$t.$v.log" | tail -1 | tr -s ' ')
    if ((rc == 0)); then echo "$t whole program ($v): passed ($np cases, $((SECONDS - ts)) s)" | tee -a "$out/tests.txt"
    else
      echo "$t whole program ($v): FAILED exit $rc ($np cases OK; last: $last)" | tee -a "$out/tests.txt"
      grep -E 'tezgah: error|error:|differ|not bit|FAILED \]|worst' "$out/$t.$v.log" | head -4 | cut -c1-180 >> "$out/tests.txt"
      for c in test_attention_decode test_model_fp32_gpt2 test_model_fp32_llama test_model_bf16_gpt2 test_model_bf16_llama; do
        ((SECONDS - ts > 45)) && break
        env "${env[@]}" TEZGAH_TEST_FILTER=$c TEZGAH_CUDA_REQUIRED=1 timeout 20 "$dir/bin/$t" > "$out/$t.$v.$c.log" 2>&1
        r=$?
        ((r != 0)) && echo "  $c alone ($v): FAILED exit $r" >> "$out/tests.txt"
      done
    fi
  done
  for e in TEZGAH_CUDA_DEC_VEC=0 TEZGAH_CUDA_DEC_CHUNK=16; do
    env $e TEZGAH_TEST_FILTER=test_attention_decode TEZGAH_CUDA_REQUIRED=1 timeout 30 "$dir/bin/$t" \
      > "$out/$t.$e.log" 2>&1
    r=$?
    echo "$t test_attention_decode $e: $( ((r == 0)) && echo passed || echo "FAILED exit $r")" | tee -a "$out/tests.txt"
  done
else
  echo "$t: not in the pack" | tee -a "$out/tests.txt"
fi

echo "== 2. a GPT-2 124M-shaped run, CLI checks"
decode_setup
S --backend cpu --precision fp32 --temperature 0 --tokens 100 > "$w/g.cpu" 2>> "$out/cli.err"
S --backend cuda --precision fp32 --temperature 0 --tokens 100 > "$w/g.cuda" 2>> "$out/cli.err"
same "greedy 100 tokens fp32, cuda vs cpu" "$w/g.cpu" "$w/g.cuda"
# batch 2: the one-step prefill of one-token prompts (generate.c), 2-row kernels, chunk 32
S --backend cpu --precision fp32 --temperature 0 --tokens 100 --batch 2 > "$w/g2.cpu" 2>> "$out/cli.err"
S --backend cuda --precision fp32 --temperature 0 --tokens 100 --batch 2 > "$w/g2.cuda" 2>> "$out/cli.err"
same "greedy 100 tokens fp32 --batch 2, cuda vs cpu" "$w/g2.cpu" "$w/g2.cuda"
S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16a" 2>> "$out/cli.err"
S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16b" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, run to run" "$w/s16a" "$w/s16b"
TEZGAH_EXIT_RESET=1 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 2>> "$out/cli.err" | cat > "$w/s16c"
same "bf16 --batch 16 through a pipe, TEZGAH_EXIT_RESET=1 vs default" "$w/s16a" "$w/s16c"
TEZGAH_CUDA_MMA_PREA=0 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16d" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, TEZGAH_CUDA_MMA_PREA=0 (a loaded chunk by chunk) vs default" "$w/s16a" "$w/s16d"
S --backend cuda --tokens 200 --temperature 0 > "$w/s1a" 2>> "$out/cli.err"
TEZGAH_CUDA_MMA_PREA=0 S --backend cuda --tokens 200 --temperature 0 > "$w/s1b" 2>> "$out/cli.err"
same "bf16 greedy batch 1, TEZGAH_CUDA_MMA_PREA=0 vs default" "$w/s1a" "$w/s1b"
sleep 0.3
left=$(pgrep -c -f "$tz sample" 2> /dev/null || true)
echo "tezgah sample processes left after the checks: ${left:-0}" | tee -a "$out/cli.txt"

echo "== 3. tezgah sample, 1,000 new tokens, whole process"
for b in 1 16; do
  other=64; ((b > 7)) && other=32
  r1=(TEZGAH_CUDA_DEC_VEC=0 TEZGAH_CUDA_MMA_PREA=0 TEZGAH_PREFILL_ROWS=1); ((b == 1)) && r1+=(TEZGAH_CUDA_DEC_CHUNK=64)
  for i in 1 2 3; do
    run default $b
    run round1 $b "${r1[@]}"
    run reset $b TEZGAH_EXIT_RESET=1
  done
  for i in 1 2; do
    run vec0 $b TEZGAH_CUDA_DEC_VEC=0
    run prea0 $b TEZGAH_CUDA_MMA_PREA=0
    run detach $b TEZGAH_DETACH_EXIT=1
  done
  run chunk$other $b TEZGAH_CUDA_DEC_CHUNK=$other
done

echo "== 4. start-up phases"
for b in 1 16; do
  t0=$(date +%s.%N)
  TEZGAH_VERBOSE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1000 --ignore-eot --temperature 0 \
    --batch $b --stats > /dev/null 2> "$out/verbose$b.txt"
  t1=$(date +%s.%N)
  {
    echo "batch $b, default:"
    grep -E "^cuda: start-up|^cuda: attention_decode|^sample: start-up|^sample: cuda" "$out/verbose$b.txt" |
      sed -e 's/ (cuBLASLt.*//' -e 's/; epoch.*//' -e 's/^/  /' | cut -c1-230
    awk -v a="$t0" -v z="$t1" 'BEGIN { printf "  process %.3f s\n", z - a }'
  } | tee -a "$out/phases.txt"
done
one() { # label [env...]: a 1-token process, batch 1
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" TEZGAH_VERBOSE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1 --temperature 0 --stats \
    > /dev/null 2> "$w/one.txt"
  t1=$(date +%s.%N)
  [[ $* == *TEZGAH_DETACH_EXIT=1* ]] && sleep 0.25
  local e1 rs
  e1=$(sed -n 's/^sample: teardown.*epoch [0-9.]* \.\. \([0-9.]*\) s.*/\1/p' "$w/one.txt")
  rs=$(sed -n 's/^exit: cudaDeviceReset \([0-9.]*\) ms/, of which cudaDeviceReset \1 ms/p' "$w/one.txt")
  awk -v l="$label" -v a="$t0" -v z="$t1" -v e1="${e1:-0}" -v rs="$rs" \
    'BEGIN { printf "1-token process (%s): %.3f s, after the command %.3f s%s\n", l, z - a, z - e1, rs }' | tee -a "$out/phases.txt"
}
for i in 1 2; do one default; one reset TEZGAH_EXIT_RESET=1; done
echo "run dir (the checkpoint read and verified at start-up): $(du -sm "$w/run" | cut -f1) MB: $(cd "$w/run" && ls -s --block-size=M | tail -n +2 | tr -s ' ' | tr '\n' ';')" |
  cut -c1-200 | tee -a "$out/phases.txt"
# per-op profiles per decoding step (ops one by one, not recorded: each op's own time; 200 tokens)
for pv in "1 1" "1 0" "16 1" "16 0"; do # 1: default; 0: round 1's kernels (VEC=0, PREA=0; chunk 64)
  read -r b v <<< "$pv"
  env=(); ((v == 0)) && env=(TEZGAH_CUDA_DEC_VEC=0 TEZGAH_CUDA_MMA_PREA=0 TEZGAH_CUDA_DEC_CHUNK=64)
  env "${env[@]}" TEZGAH_PROFILE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 200 \
    --batch $b --ignore-eot --temperature 0 --stats > /dev/null 2> "$out/profile$b.$v.txt"
  echo "per-op b$b $( ((v)) && echo default || echo round1) (ms/step, calls): $(awk '$2 ~ /^[0-9.]+$/ && $1 != "total" && NR > 2 && n++ < 4 { printf "%s %s (%s), ", $1, $2, $3 } $1 == "total" { printf "total %s", $2 }' "$out/profile$b.$v.txt")" |
    tee -a "$out/phases.txt"
done

echo "== 5. peer: transformers generate (fp32; batch 1, 16; 1,000 tokens)"
if python3 -c "import torch, transformers" 2> /dev/null; then
  "$tz" convert --to hf "$w/run" --out "$w/hf" > /dev/null 2> "$out/convert.err" || tail -3 "$out/convert.err"
  lim=$((112 - (SECONDS - t_all)))
  ((lim < 25)) && lim=25
  timeout $lim python3 bench/hf_generate.py "$w/hf" --tokens 1000 --batch 1,16 --dtype fp32 2>&1 |
    grep -E "^peer" | tee "$out/peer.log"
else
  echo "peer: no torch/transformers in python3" | tee "$out/peer.log"
fi
rm -rf "$w"

echo "== 6. summary (cudadec5 round 2; gpu: $gpu)"
cat "$out/tests.txt"
echo "cli checks: $(grep -c ': identical$' "$out/cli.txt") identical, $(grep -c ': DIFFERENT$\|: FAILED' "$out/cli.txt") not"
grep -v ': identical$' "$out/cli.txt"
cat "$out/phases.txt"
grep -E "^peer dtype" "$out/peer.log" | sed 's/^peer /peer (transformers) /'
echo "whole process, 1,000 new tokens, bf16 greedy; process s and tokens/s as min / median over the runs; other columns medians"
decode_table
[[ -n ${OUT:-} ]] && tar czf "$OUT/decode5_logs.tgz" -C "$out" . 2> /dev/null
echo "targets: batch 1 >= 1,500 tokens/s (<= 0.667 s), batch 16 >= 15,000 (<= 1.067 s). total: $((SECONDS - t_all)) s"
