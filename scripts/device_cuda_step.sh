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
tok=$data/gpt2_tokenizer.bin shard=$data/tiny_shakespeare_train.bin
w=$(mktemp -d)
ts=$SECONDS
"$tz" train --backend cuda --model gpt2-124m --vocab-size 50257 -B 4 -T 256 --train-shards "$shard" \
  --val-shards "$shard" --steps 20 --val-every 0 --sample-tokens 0 --ckpt-every 0 --run-dir "$w/run" --quiet \
  > "$out/train.log" 2>&1 || { echo "train failed:"; tail -5 "$out/train.log"; }
echo "train: $((SECONDS - ts)) s"
S() { "$tz" sample "$w/run" --tokenizer "$tok" "$@"; }
same() {
  if [[ ! -s $2 || ! -s $3 ]]; then echo "cli: $1: FAILED (no output)" | tee -a "$out/cli.txt"; tail -2 "$out/cli.err"
  elif cmp -s "$2" "$3"; then echo "cli: $1: identical" | tee -a "$out/cli.txt"
  else echo "cli: $1: DIFFERENT ($(cmp "$2" "$3" | head -1))" | tee -a "$out/cli.txt"; fi
}
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
run() { # label batch [env...]: one whole process, a line of raw.tsv
  local label=$1 b=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  env "$@" "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1000 --ignore-eot --batch "$b" \
    --temperature 0 --stats > "$w/out.txt" 2> "$w/stats.txt"
  rc=$?
  t1=$(date +%s.%N)
  # a detached child tears the context down after the process: let it finish before the next
  # process starts (each run measures one process on an idle GPU)
  [[ $* == *TEZGAH_DETACH_EXIT=1* ]] && sleep 0.25
  if ((rc != 0)); then echo "$label b$b: FAILED (exit $rc)"; tail -2 "$w/stats.txt"; return; fi
  local st td
  st=$(grep '^sample: cuda' "$w/stats.txt" | tail -1)
  td=$(grep '^sample: teardown' "$w/stats.txt" | tail -1)
  python3 - "$label" "$b" "$t0" "$t1" "$st" "$td" << 'PY' | tee -a "$out/raw.tsv"
import re, sys
label, b, t0, t1, st, td = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
g = lambda pat, s: float(re.search(pat, s).group(1)) if re.search(pat, s) else float("nan")
ms = g(r"([0-9.]+) ms/step", st); load = g(r"load ([0-9.]+) s", st); wt = g(r"weights ([0-9.]+)", st)
pf = g(r"prefill ([0-9.]+) s", st); dec = g(r"steps ([0-9.]+) s \(", st); tdn = g(r"teardown ([0-9.]+) s", td)
m = re.search(r"epoch ([0-9.]+) \.\. ([0-9.]+) s", td)
pre, post = (float(m.group(1)) - t0, t1 - float(m.group(2))) if m else (float("nan"),) * 2
d = t1 - t0
print(f"{label}\t{b}\t{d:.3f}\t{1000 * b / d:.0f}\t{ms:.3f}\t{load:.3f}\t{wt:.3f}\t{pf:.3f}\t{dec:.3f}\t{tdn:.3f}\t{pre:.3f}\t{post:.3f}")
PY
}
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
python3 - "$out/raw.tsv" << 'PY'
import statistics as S, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
groups = {}
for r in rows:
    groups.setdefault((r[0], int(r[1])), []).append([float(x) for x in r[2:]])
print("| setting | batch | n | process s min / med | tokens/s best / med | ms/step | load s | weights s | prefill s | decode s | teardown s | pre s | post s |")
print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (lab, b), v in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0] != "default", kv[0][0])):
    col = lambda i: [x[i] for x in v]
    d = col(0)
    med = lambda i: S.median(col(i))
    print(f"| {lab} | {b} | {len(v)} | {min(d):.3f} / {S.median(d):.3f} | {1000 * b / min(d):,.0f} / {1000 * b / S.median(d):,.0f} | "
          f"{med(2):.3f} | {med(3):.3f} | {med(4):.3f} | {med(5):.3f} | {med(6):.3f} | {med(7):.3f} | {med(8):.3f} | {med(9):.3f} |")
PY
pack_logs
echo "targets: batch 1 >= 1,500 tokens/s (<= 0.667 s), batch 16 >= 15,000 (<= 1.067 s). total: $((SECONDS - t_all)) s"
