#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 4's decoding speed, round 5 (branch decode4; it
# replaces device_cuda_decode3.sh): 8..16 rows (batch 8..16) through gemv.cu's tensor-core
# few-row kernel (mma_k: the weights streamed once into mma.sync, the norm fused) instead of
# cuBLASLt (TEZGAH_CUDA_MMA=0: cuBLASLt); cuBLASLt then not loaded at batch <= 16 (bf16);
# CUDA_MODULE_LOADING=EAGER the default of `sample` only where cuBLASLt is not used; mma_k's
# column tiles per block TEZGAH_CUDA_MMA_TN=S,L, default 2,4 since round 3 (0.627 ms/step at
# batch 16 against 0.728 at 1,4 in round 2). From a carried pack DIR (scripts/device_pack.sh's
# .dev: bin/, lib/, data/ with data/gpt2/).
#
#   here:  nice -n 19 bash scripts/device_pack.sh -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_decode4.sh .dev          (run tool, carry [".dev"], timeout 300)
#
# 1. test_cuda_decode (TEZGAH_CUDA_REQUIRED=1; it sets TEZGAH_CUDA_GEMV_MAX_M=16 itself), each of
#    its 8 cases in its own process (TEZGAH_TEST_FILTER), then test_mma under TEZGAH_CUDA_MMA_TN
#    1,4 (the former default); a failing case's name, exit status, last mma case and first error lines, and
#    compute-sanitizer's first report lines for the first failing case, go to the final summary.
# 2. A GPT-2 124M-shaped run made on the spot (train 20 steps, B 4, T 256, tiny Shakespeare).
#    CLI checks, each "identical" or not: greedy fp32 CUDA vs CPU; --batch 4 sampled fp32 CUDA
#    vs CPU; the device loop vs one step at a time, PDL vs not; batch 8 and 16 (tensor-core
#    few-row kernel) run to run and device loop vs not; batch 16 mma vs cuBLASLt and vs the
#    FMA few-row kernels (other summation orders: may differ); batch 16 mma tilings 1,8 vs 2,4
#    (must be identical); a text prompt.
# 3. Timing, whole process (wall clock around the command), 1,000 new tokens (--ignore-eot),
#    empty prompt, default settings as a user runs them, then A/Bs (PDL off, LAZY module
#    loading, TEZGAH_CUDA_MMA=0, TEZGAH_CUDA_MMA_TN 2,8 and 4,4). Each --stats line (load,
#    prefill, decode, teardown) and the time before the sample command started (pre) and after
#    it returned (post). Start-up phases (TEZGAH_VERBOSE, batch 1 and 16), 1-token processes,
#    per-op profiles per decoding step (batch 1, 16, 16 with TEZGAH_CUDA_MMA=0) and, where nsys
#    is found and less than 95 s are spent, the recorded step's kernels and gaps.
# 4. The peer: transformers generate() fp32, batch 1 and 16, 1,000 tokens, same weights
#    (bench/hf_generate.py on `tezgah convert --to hf`), cut at 145 s of the script.
# 5. The summary (the output's tail is what comes back): the timing table, the tests (failing
#    cases and their diagnosis, <= 25 lines), the CLI checks.
# Expected time: ~40 s tests (+ <= 35 s sanitizer when one fails), ~10 s train, ~35 s checks,
# ~40 s timing, ~12 s profiles, ~30 s peer: ~130-150 s (give timeout 300).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:-.dev}
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/tz-decode4}
mkdir -p "$out"
rm -f "$out/table.md" "$out/cli.txt" "$out/tests.txt"
tz=$dir/bin/tezgah data=$dir/data
t_all=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null | head -1

echo "== 1. tests"
# Each test case of test_cuda_decode in its own process (TEZGAH_TEST_FILTER; an abort in one does
# not hide the others), then test_mma under the former default tiling 1,4 (8,1 and 2,8 passed in round 2). For each
# failing run, $out/diag.txt keeps (for the final summary): the case, its exit status, the mma
# case running when it stopped (test_mma names each before it runs) and the first error lines;
# the first failing case is run again under compute-sanitizer (memcheck) and its first report
# lines are kept too.
t=test_cuda_decode
rm -f "$out/diag.txt" "$out/whole.txt"
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null | head -1)
diag() { # label log rc: a compact note of a failed run
  {
    echo "FAILED $1: exit $3; last case: $(grep -E '^mma M|^\[ RUN' "$2" | tail -1 | tr -s ' ')"
    grep -E 'tezgah: error|error:|Error|differ|not bit|FAILED \]|worst' "$2" | grep -v '^\[  FAILED  \] [0-9]' | head -3 | cut -c1-200
  } >> "$out/diag.txt"
}
failed=()
if [[ -x $dir/bin/$t ]]; then
  for c in test_attention_decode test_pick test_norm_matmul test_mma test_model_fp32_gpt2 test_model_fp32_llama \
    test_model_bf16_gpt2 test_model_bf16_llama; do
    TEZGAH_TEST_FILTER=$c TEZGAH_CUDA_REQUIRED=1 timeout 60 "$dir/bin/$t" > "$out/$t.$c.log" 2>&1
    rc=$?
    if ((rc == 0)) && grep -q "^\[  PASSED  \] 1 test" "$out/$t.$c.log"; then r=passed
    else r="FAILED (exit $rc)"; failed+=("$c"); diag "$c" "$out/$t.$c.log" $rc; fi
    echo "$t $c: $r" | tee -a "$out/tests.txt"
  done
  # test_mma under other column tilings (TEZGAH_CUDA_MMA_TN "small,large"; default now 2,4; the
  # bits must not depend on it): 1,4, the former default (2,8 and 8,1 passed in round 2)
  for tn in 1,4; do
    TEZGAH_CUDA_MMA_TN=$tn TEZGAH_TEST_FILTER=test_mma TEZGAH_CUDA_REQUIRED=1 timeout 60 "$dir/bin/$t" > "$out/$t.tn$tn.log" 2>&1
    r=$?
    echo "$t test_mma TEZGAH_CUDA_MMA_TN=$tn: $( ((r == 0)) && echo passed || echo "FAILED (exit $r)")" | tee -a "$out/tests.txt"
    if ((r != 0)); then diag "test_mma TN $tn" "$out/$t.tn$tn.log" $r; [[ ${#failed[@]} -gt 0 ]] || failed+=("test_mma TN $tn"); fi
  done
  # The whole program in one process, as ctest runs it (the 23:40 call: test_mma OK, then
  # test_model_fp32_gpt2 aborted on an illegal address; each case alone passes). On a failure:
  # test_mma + the model tests (filter test_m*, same order) with TEZGAH_CUDA_PDL=0, and under
  # compute-sanitizer memcheck (names the faulting kernel and address), notes to diag.txt.
  TEZGAH_CUDA_REQUIRED=1 timeout 90 "$dir/bin/$t" > "$out/$t.whole.log" 2>&1
  rw=$?
  lastrun=$(grep -E '^\[ RUN' "$out/$t.whole.log" | tail -1 | tr -s ' ')
  echo "$t whole program, one process: exit $rw; last: $lastrun" | tee -a "$out/tests.txt"
  echo "WHOLE: exit $rw; last: $lastrun" >> "$out/whole.txt"
  if ((rw != 0)); then
    diag "whole program" "$out/$t.whole.log" $rw
    TEZGAH_CUDA_PDL=0 TEZGAH_TEST_FILTER='test_m*' TEZGAH_CUDA_REQUIRED=1 timeout 40 "$dir/bin/$t" > "$out/$t.whole_pdl0.log" 2>&1
    r=$?
    echo "WHOLE test_m* PDL=0: exit $r; last: $(grep -E '^\[ RUN' "$out/$t.whole_pdl0.log" | tail -1 | tr -s ' ')" >> "$out/whole.txt"
    if [[ -n $san ]]; then
      TEZGAH_TEST_FILTER='test_m*' TEZGAH_CUDA_REQUIRED=1 timeout 50 "$san" --print-limit 3 "$dir/bin/$t" \
        > "$out/$t.whole_san.log" 2>&1
      echo "WHOLE test_m* sanitizer: exit $?; last: $(grep -E '^\[ RUN|^mma M' "$out/$t.whole_san.log" | tail -1 | tr -s ' ')" >> "$out/whole.txt"
      grep -E 'Invalid|^=+ +at |by thread|Address|out of bounds|ERROR SUMMARY|rror' "$out/$t.whole_san.log" |
        grep -v 'Host Frame|Saved host backtrace' | head -8 | cut -c1-180 | sed 's/^/  /' >> "$out/whole.txt"
    fi
  fi
  if ((${#failed[@]})) && [[ -n $san ]]; then
    c=${failed[0]} env=()
    [[ $c == "test_mma TN "* ]] && env=(TEZGAH_CUDA_MMA_TN=${c##* }) c=test_mma
    echo "-- compute-sanitizer memcheck: $c ${env[*]}"
    env "${env[@]}" TEZGAH_TEST_FILTER=$c TEZGAH_CUDA_REQUIRED=1 timeout 35 "$san" --print-limit 2 "$dir/bin/$t" \
      > "$out/$t.san.log" 2>&1
    echo "sanitizer ($c ${env[*]}, exit $?):" >> "$out/diag.txt"
    { grep '^mma M' "$out/$t.san.log" | tail -1
      grep -E 'Invalid|^=+ +at |by thread|Address|out of bounds|ERROR SUMMARY|rror' "$out/$t.san.log" |
        grep -v 'Host Frame|Saved host backtrace' | head -9; } | cut -c1-180 | sed 's/^/  /' >> "$out/diag.txt"
  elif ((${#failed[@]})); then
    echo "compute-sanitizer: not on this machine" >> "$out/diag.txt"
  fi
  [[ -f $out/diag.txt ]] && head -25 "$out/diag.txt"
else
  echo "$t: not in the pack" | tee -a "$out/tests.txt"
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
  if [[ ! -s $2 || ! -s $3 ]]; then echo "cli: $1: FAILED (no output; $out/cli.err)" | tee -a "$out/cli.txt"; tail -2 "$out/cli.err"
  elif cmp -s "$2" "$3"; then echo "cli: $1: identical" | tee -a "$out/cli.txt"
  else echo "cli: $1: DIFFERENT" | tee -a "$out/cli.txt"; cmp "$2" "$3" | head -2; fi
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
S --backend cuda --tokens 200 --batch 8 --seed 5 > "$w/s8a" 2>> "$out/cli.err"
S --backend cuda --tokens 200 --batch 8 --seed 5 > "$w/s8b" 2>> "$out/cli.err"
same "bf16 sampled --batch 8 (mma steps), run to run" "$w/s8a" "$w/s8b"
S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16c" 2>> "$out/cli.err"
S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16e" 2>> "$out/cli.err"
same "bf16 greedy --batch 16 (mma), run to run" "$w/s16c" "$w/s16e"
TEZGAH_CUDA_MMA=0 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16d" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, mma vs cuBLASLt (other sums: may differ)" "$w/s16c" "$w/s16d"
TEZGAH_CUDA_GEMV_MAX_M=16 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16f" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, mma vs FMA few-row kernels (other sums: may differ)" "$w/s16c" "$w/s16f"
TEZGAH_CUDA_MMA_TN=1,8 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16g" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, mma column tiles 1,8 vs default 2,4 (same sums: must be identical)" "$w/s16c" "$w/s16g"
# a text prompt: --tokenizer gpt2 (encoder.json + vocab.bpe in data/gpt2; llm.c's file only decodes)
P() { TEZGAH_GPT2_DIR=$data/gpt2 "$tz" sample "$w/run" --tokenizer gpt2 "$@"; }
lp="To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"
P --backend cuda --tokens 60 --seed 10 --prompt "$lp" > "$w/p1" 2>> "$out/cli.err"
TEZGAH_DECODE_CHUNK=0 P --backend cuda --tokens 60 --seed 10 --prompt "$lp" > "$w/p2" 2>> "$out/cli.err"
same "bf16 long prompt (cuBLASLt prefill), device loop vs not" "$w/p1" "$w/p2"
P --backend cuda --tokens 60 --seed 10 --prompt "$lp" --batch 8 > "$w/p3" 2>> "$out/cli.err"
P --backend cuda --tokens 60 --seed 10 --prompt "$lp" --batch 8 > "$w/p4" 2>> "$out/cli.err"
same "bf16 long prompt --batch 8, run to run" "$w/p3" "$w/p4"
head -c 160 "$w/g.cuda" | tr '\n' ' '; echo

echo "== 3. tezgah sample, 1,000 new tokens, whole process"
echo "| precision | batch | picking | env | process s | tokens/s (process) | decode tokens/s | ms/step | load s | prefill s | teardown s | pre s | post s |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
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
  if ((rc != 0)); then echo "| $p | $b | $k | $* | FAILED (exit $rc) | | | | | | | | |"; tail -2 "$w/stats.txt"; return; fi
  local st; st=$(grep '^sample: cuda' "$w/stats.txt" | tail -1)
  local rate ms load pf td e0 e1
  rate=$(sed -n 's/.*s (\([0-9.]*\) tokens\/s.*/\1/p' <<< "$st")
  ms=$(sed -n 's/.*tokens\/s, \([0-9.]*\) ms\/step.*/\1/p' <<< "$st")
  load=$(sed -n 's/.*load \([0-9.]*\) s.*/\1/p' <<< "$st")
  pf=$(sed -n 's/.*prefill \([0-9.]*\) s.*/\1/p' <<< "$st")
  td=$(sed -n 's/^sample: teardown \([0-9.]*\) s.*/\1/p' "$w/stats.txt")
  e0=$(sed -n 's/^sample: teardown.*epoch \([0-9.]*\) \.\. .*/\1/p' "$w/stats.txt")
  e1=$(sed -n 's/^sample: teardown.*epoch [0-9.]* \.\. \([0-9.]*\) s.*/\1/p' "$w/stats.txt")
  awk -v p="$p" -v b="$b" -v k="$k" -v f="${*:-default}" -v a="$t0" -v z="$t1" -v rate="$rate" -v ms="$ms" -v ld="$load" \
    -v pf="$pf" -v td="$td" -v e0="${e0:-0}" -v e1="${e1:-0}" \
    'BEGIN { d = z - a; printf "| %s | %d | %s | %s | %.3f | %.0f | %s | %s | %s | %s | %s | %.3f | %.3f |\n", p, b, k, f, d, 1000 * b / d, rate, ms, ld, pf, td, e0 - a, z - e1 }' |
    tee -a "$out/table.md"
  echo "$* $st" >> "$out/stats.log"
}
run bf16 1 greedy
run bf16 1 greedy
run bf16 1 sampled
run bf16 1 greedy CUDA_MODULE_LOADING=LAZY
run bf16 1 greedy TEZGAH_CUDA_PDL=0
run fp32 1 greedy
run bf16 8 greedy
run bf16 16 greedy
run bf16 16 greedy
run bf16 16 sampled
run bf16 16 greedy TEZGAH_CUDA_MMA_TN=2,8
run bf16 16 greedy TEZGAH_CUDA_MMA_TN=4,4
run bf16 16 greedy TEZGAH_CUDA_MMA=0
run bf16 16 greedy CUDA_MODULE_LOADING=LAZY
run bf16 16 greedy TEZGAH_CUDA_PDL=0
run fp32 16 greedy
run bf16 64 greedy
for b in 1 16; do
  echo "-- start-up phases (bf16, batch $b, 1,000 tokens greedy, TEZGAH_VERBOSE=1 --stats)"
  t0=$(date +%s.%N)
  TEZGAH_VERBOSE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1000 --ignore-eot --temperature 0 \
    --batch $b --stats > /dev/null 2> "$out/verbose$b.txt"
  t1=$(date +%s.%N)
  grep -E "start-up|cuBLASLt|^sample:|recording" "$out/verbose$b.txt"
  awk -v a="$t0" -v z="$t1" 'BEGIN { printf "process: %.3f s\n", z - a }'
done
one() { # label batch [env...]: a 1-token process, its stats and its time before/after the command
  local label=$1 b=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1 --batch "$b" --temperature 0 --stats \
    > /dev/null 2> "$w/one.txt"
  t1=$(date +%s.%N)
  grep "^sample:" "$w/one.txt" | sed 's/^/  /'
  local e0 e1
  e0=$(sed -n 's/^sample: teardown.*epoch \([0-9.]*\) \.\. .*/\1/p' "$w/one.txt")
  e1=$(sed -n 's/^sample: teardown.*epoch [0-9.]* \.\. \([0-9.]*\) s.*/\1/p' "$w/one.txt")
  awk -v l="$label" -v a="$t0" -v z="$t1" -v e0="${e0:-0}" -v e1="${e1:-0}" \
    'BEGIN { printf "1-token process (%s): %.3f s (before the command %.3f, after it %.3f)\n", l, z - a, e0 - a, z - e1 }'
}
one default 1
one default 1
one "LAZY module loading" 1 CUDA_MODULE_LOADING=LAZY
one "batch 16" 16
one "batch 16, cuBLASLt (TEZGAH_CUDA_MMA=0)" 16 TEZGAH_CUDA_MMA=0
t0=$(date +%s.%N); "$tz" --help > /dev/null; t1=$(date +%s.%N)
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "tezgah --help (exec, libraries): %.3f s\n", z - a }'
for b in 1 16 16m; do
  echo "-- per-op profile per decoding step (bf16, batch $b, 200 tokens, ops one by one, not recorded; 16m: TEZGAH_CUDA_MMA=0)"
  mm=1; [[ $b == 16m ]] && mm=0
  TEZGAH_CUDA_MMA=$mm TEZGAH_PROFILE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 200 --batch ${b%m} --ignore-eot \
    --temperature 0 --stats > /dev/null 2> "$out/profile$b.txt"
  sed -n '2,12p' "$out/profile$b.txt"
done
# The recorded step as the GPU runs it: per-kernel time (graph nodes traced one by one) and the
# share of the decoding span in which some kernel runs (the rest: gaps between kernels).
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
  /usr/local/cuda/nsight-systems*/bin/nsys 2> /dev/null | head -1)
if [[ -z $nsys ]]; then
  echo "-- nsys: not on this machine (no recorded-step profile; see the per-op tables)"
else
  for b in 1 16; do
    echo "-- nsys, recorded steps (bf16, batch $b, 300 tokens): kernels, busy share, gaps"
    if ((SECONDS - t_all > 95)); then echo "  skipped: $((SECONDS - t_all)) s spent (the peer comes next)"; continue; fi
    # TEZGAH_QUICK_EXIT=0: nsys writes its trace from the exit handlers. A PDL-launched kernel's
    # duration includes its wait for the one before (its blocks start early): see the busy share.
    TEZGAH_QUICK_EXIT=0 timeout 60 "$nsys" profile -t cuda --cuda-graph-trace=node -f true -o "$w/ns$b" \
      "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 300 --batch $b --ignore-eot --temperature 0 \
      > /dev/null 2> "$out/nsys$b.err" || { echo "nsys profile failed:"; tail -3 "$out/nsys$b.err"; continue; }
    timeout 60 "$nsys" stats -q -r cuda_gpu_trace -f csv -o "$w/tr$b" "$w/ns$b.nsys-rep" > /dev/null 2>> "$out/nsys$b.err"
    f=$(ls "$w/tr$b"*.csv 2> /dev/null | head -1)
    [[ -n $f ]] || { echo "nsys stats failed:"; tail -3 "$out/nsys$b.err"; continue; }
    cp "$f" "$out/nsys_trace$b.csv"
    python3 - "$f" 300 << 'PY'
import csv, re, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
ks = []
for r in rows:
    name = r.get("Name", "")
    start = r.get("Start (ns)") or r.get("Start")
    dur = r.get("Duration (ns)") or r.get("Duration")
    if not start or not dur or name.startswith("["):  # copies, memsets
        continue
    ks.append((int(float(start)), int(float(dur)), name))
ks.sort()
n = len(ks)
ks = ks[n // 3:]  # the last two thirds: decoding steps, recorded, warm
span = ks[-1][0] + ks[-1][1] - ks[0][0]
busy, end = 0, ks[0][0]
gaps = []
per = {}
for i, (s, d, name) in enumerate(ks):
    if i:
        gaps.append((s - (ks[i - 1][0] + ks[i - 1][1])) / 1e3)
    a = max(s, end)
    if s + d > a:
        busy += s + d - a
    end = max(end, s + d)
    key = re.sub(r"^void |\(anonymous namespace\)::", "", name).split("(")[0].replace("__nv_bfloat16", "bf16")[:48]
    t = per.setdefault(key, [0, 0])
    t[0] += d
    t[1] += 1
steps = sum(1 for _, _, nm in ks if "embed_fwd_k" in nm) or 1  # one embedding per step
print(f"  {len(ks)} kernels over {span / 1e6:.2f} ms, ~{steps} steps: {span / 1e3 / steps:.1f} us/step, "
      f"GPU busy {100 * busy / span:.1f} %, kernels {len(ks) / steps:.0f}/step")
print(f"  gap to the previous kernel's end (us; negative: overlap, PDL): median {statistics.median(gaps):.2f}, "
      f"mean {statistics.mean(gaps):.2f}, p90 {sorted(gaps)[int(0.9 * len(gaps))]:.2f}")
print(f"  {'kernel':48s}  us/step calls/step  us/call")
for k, (t, c) in sorted(per.items(), key=lambda kv: -kv[1][0])[:10]:
    print(f"  {k:48s} {t / 1e3 / steps:8.1f} {c / steps:10.1f} {t / 1e3 / c:8.2f}")
PY
  done
fi

echo "== 4. peer: transformers generate (fp32; batch 1, 16; 1,000 tokens)"
if python3 -c "import torch, transformers" 2> /dev/null; then
  "$tz" convert --to hf "$w/run" --out "$w/hf" > /dev/null 2> "$out/convert.err" || tail -3 "$out/convert.err"
  lim=$((145 - (SECONDS - t_all)))
  ((lim < 25)) && lim=25
  timeout $lim python3 bench/hf_generate.py "$w/hf" --tokens 1000 --batch 1,16 --dtype fp32 2>&1 |
    grep -E "^peer" | tee "$out/peer.log"
else
  echo "peer: no torch/transformers in python3"
fi
rm -rf "$w"
echo "== 5. summary: 1,000 new tokens, whole process (section 3)"
echo "| precision | batch | picking | env | process s | tokens/s (process) | decode tokens/s | ms/step | load s | prefill s | teardown s | pre s | post s |"
cat "$out/table.md"
echo "tests: $(grep -c ': passed$' "$out/tests.txt" 2> /dev/null) cases passed; not passed:"
grep -v ': passed$' "$out/tests.txt" 2> /dev/null
[[ -f $out/diag.txt ]] && head -25 "$out/diag.txt"
[[ -f $out/whole.txt ]] && head -12 "$out/whole.txt"
echo "cli checks: $(grep -c ': identical$' "$out/cli.txt" 2> /dev/null) identical; not: $(grep -vc ': identical$' "$out/cli.txt" 2> /dev/null)"
grep -v ': identical$' "$out/cli.txt" 2> /dev/null
echo "total: $((SECONDS - t_all)) s"
