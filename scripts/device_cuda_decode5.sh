#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 4's decoding targets, whole `tezgah sample`
# process, 1,000 new tokens, GPT-2 124M: batch 16 >= 15,000 tokens/s, batch 1 >= 1,500 (branch
# cudadec5; replaces device_cuda_decode4.sh). What this round changed at start-up and exit:
#   - the weight upload's copies into the pinned staging slots on 4 host threads
#     (TEZGAH_CUDA_UPLOAD_THREADS, 1 = one thread as before; 51-67 ms for 498 MB before);
#   - --tokenizer read on the checkpoint's thread (beside the CUDA start-up);
#   - on CUDA, `sample` leaves its model, backend and checkpoint to the process's end instead of
#     freeing them (main.c's quick exit skips the exit handlers anyway; TEZGAH_QUICK_EXIT=0
#     frees as before);
#   - TEZGAH_DETACH_EXIT=1 (not the default; measured here): the driver's context teardown
#     (~0.1 s after the command returned) runs in a child that outlives the process by moments;
#   - TEZGAH_CUDA_DEC_CHUNK (keys per block of the decoding attention, default 64): A/B 32, 128.
# From a carried pack DIR (scripts/device_pack.sh's output: bin/tezgah, bin/test_cuda_decode,
# lib/, data/ with gpt2_tokenizer.bin, tiny_shakespeare_train.bin).
#
#   here:  TZ_PACK_TARGETS="tezgah test_cuda_decode" nice -n 19 bash scripts/device_pack.sh pack \
#            -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cuda_decode5.sh pack      (run tool, carry ["pack"], timeout 300)
#
# 1. test_cuda_decode, the whole program in one process (as ctest runs it); on a failure each
#    case alone, to name it; test_attention_decode under TEZGAH_CUDA_DEC_CHUNK 32 and 128.
# 2. A GPT-2 124M-shaped run made on the spot (train 20 steps, B 4, T 256), then CLI checks,
#    each "identical" or not: greedy fp32 CUDA vs CPU; bf16 batch 16 run to run; output through
#    a pipe with TEZGAH_DETACH_EXIT=1 vs without; TEZGAH_QUICK_EXIT=0 (everything freed) vs
#    default (left to the exit); upload on 1 thread vs 4.
# 3. Timing, whole process (wall clock around the command), 1,000 new tokens (--ignore-eot),
#    empty prompt, greedy bf16: batch 1 and 16, default x3, TEZGAH_DETACH_EXIT=1 x3,
#    TEZGAH_CUDA_UPLOAD_THREADS=1 x2, then x1 each: LAZY modules, TEZGAH_CUDA_DEC_CHUNK 32 and 128,
#    TEZGAH_QUICK_EXIT=0 (all freed, handlers run), TEZGAH_DECODE_CHUNK=128 (steps per round trip
#    of the device loop, default 32); per row min and median.
# 4. Start-up phases (TEZGAH_VERBOSE=1, batch 1 and 16): the backend's (driver, context,
#    staging) and sample's (backend, checkpoint thread, tokenizer, model + weights, decoding
#    buffers, sync); 1-token processes default / detached; per-op profiles (TEZGAH_PROFILE=1,
#    ops one by one) at batch 1 and 16, attention key chunk 64 and 32.
# 5. The peer: transformers generate() fp32, batch 1 and 16, 1,000 tokens, same weights
#    (bench/hf_generate.py on `tezgah convert --to hf`), cut at 140 s of the script.
# 6. The summary LAST (the output's tail is what comes back): tests, checks, phases, the table.
# Expected: ~30 s tests, ~10 s train, ~15 s checks, ~30 s timing, ~5 s phases, ~35 s peer:
# ~125-145 s.
set -uo pipefail
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
  TEZGAH_CUDA_REQUIRED=1 timeout 100 "$dir/bin/$t" > "$out/$t.log" 2>&1
  rc=$?
  np=$(grep -c '^\[       OK \]' "$out/$t.log")
  last=$(grep -E '^\[ RUN' "$out/$t.log" | tail -1 | tr -s ' ')
  if ((rc == 0)); then echo "$t whole program: passed ($np cases, $((SECONDS - ts)) s)" | tee -a "$out/tests.txt"
  else
    echo "$t whole program: FAILED exit $rc ($np cases OK; last: $last)" | tee -a "$out/tests.txt"
    grep -E 'tezgah: error|error:|differ|not bit|FAILED \]|worst' "$out/$t.log" | head -4 | cut -c1-180 >> "$out/tests.txt"
    for c in test_attention_decode test_pick test_norm_matmul test_mma test_model_fp32_gpt2 test_model_fp32_llama \
      test_model_bf16_gpt2 test_model_bf16_llama; do
      ((SECONDS - ts > 80)) && break
      TEZGAH_TEST_FILTER=$c TEZGAH_CUDA_REQUIRED=1 timeout 40 "$dir/bin/$t" > "$out/$t.$c.log" 2>&1
      r=$?
      ((r != 0)) && echo "  $c alone: FAILED exit $r" >> "$out/tests.txt"
    done
  fi
  # the decoding attention at other key chunks per block (TEZGAH_CUDA_DEC_CHUNK; 64 the default)
  for ch in 32 128; do
    TEZGAH_CUDA_DEC_CHUNK=$ch TEZGAH_TEST_FILTER=test_attention_decode TEZGAH_CUDA_REQUIRED=1 timeout 30 "$dir/bin/$t" \
      > "$out/$t.chunk$ch.log" 2>&1
    r=$?
    echo "$t test_attention_decode TEZGAH_CUDA_DEC_CHUNK=$ch: $( ((r == 0)) && echo passed || echo "FAILED exit $r")" |
      tee -a "$out/tests.txt"
  done
else
  echo "$t: not in the pack" | tee -a "$out/tests.txt"
fi

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
  else echo "cli: $1: DIFFERENT" | tee -a "$out/cli.txt"; cmp "$2" "$3" | head -2; fi
}
S --backend cpu --precision fp32 --temperature 0 --tokens 100 > "$w/g.cpu" 2>> "$out/cli.err"
S --backend cuda --precision fp32 --temperature 0 --tokens 100 > "$w/g.cuda" 2>> "$out/cli.err"
same "greedy 100 tokens fp32, cuda vs cpu" "$w/g.cpu" "$w/g.cuda"
S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16a" 2>> "$out/cli.err"
S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16b" 2>> "$out/cli.err"
same "bf16 greedy --batch 16, run to run" "$w/s16a" "$w/s16b"
# detached exit: the whole output through a pipe (the reader sees EOF when the process ends)
TEZGAH_DETACH_EXIT=1 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 2>> "$out/cli.err" | cat > "$w/s16c"
same "bf16 --batch 16 through a pipe, TEZGAH_DETACH_EXIT=1 vs default" "$w/s16a" "$w/s16c"
TEZGAH_QUICK_EXIT=0 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16d" 2>> "$out/cli.err"
same "bf16 --batch 16, TEZGAH_QUICK_EXIT=0 (all freed) vs default" "$w/s16a" "$w/s16d"
TEZGAH_CUDA_UPLOAD_THREADS=1 S --backend cuda --tokens 200 --batch 16 --seed 5 --temperature 0 > "$w/s16e" 2>> "$out/cli.err"
same "bf16 --batch 16, upload on 1 thread vs 4" "$w/s16a" "$w/s16e"
S --backend cuda --tokens 200 --seed 9 > "$w/s1a" 2>> "$out/cli.err"
TEZGAH_DETACH_EXIT=1 S --backend cuda --tokens 200 --seed 9 > "$w/s1b" 2>> "$out/cli.err"
same "bf16 sampled batch 1, TEZGAH_DETACH_EXIT=1 vs default" "$w/s1a" "$w/s1b"
sleep 0.3
left=$(pgrep -c -f "$tz sample" 2> /dev/null || true)
echo "tezgah sample processes left after the checks: ${left:-0}" | tee -a "$out/cli.txt"

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
  for i in 1 2 3; do run default $b; run detach $b TEZGAH_DETACH_EXIT=1; done
  for i in 1 2; do run upload1 $b TEZGAH_CUDA_UPLOAD_THREADS=1; done
  run lazy $b CUDA_MODULE_LOADING=LAZY
  run chunk32 $b TEZGAH_CUDA_DEC_CHUNK=32
  run chunk128 $b TEZGAH_CUDA_DEC_CHUNK=128
  run loop128 $b TEZGAH_DECODE_CHUNK=128
  run freed $b TEZGAH_QUICK_EXIT=0
done

echo "== 4. start-up phases"
for b in 1 16; do
  for v in default detach; do
    env=(); [[ $v == detach ]] && env=(TEZGAH_DETACH_EXIT=1)
    t0=$(date +%s.%N)
    env "${env[@]}" TEZGAH_VERBOSE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1000 \
      --ignore-eot --temperature 0 --batch $b --stats > /dev/null 2> "$out/verbose$b$v.txt"
    t1=$(date +%s.%N)
    [[ $v == detach ]] && sleep 0.25
    {
      echo "batch $b, $v:"
      grep -E "^cuda: start-up|^sample: start-up|^sample: cuda|^sample: teardown" "$out/verbose$b$v.txt" |
        sed -e 's/ (cuBLASLt.*//' -e 's/; epoch.*//' -e 's/^/  /' | cut -c1-230
      awk -v a="$t0" -v z="$t1" 'BEGIN { printf "  process %.3f s\n", z - a }'
    } | tee -a "$out/phases.txt"
  done
done
one() { # label [env...]: a 1-token process, batch 1
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1 --temperature 0 --stats \
    > /dev/null 2> "$w/one.txt"
  t1=$(date +%s.%N)
  [[ $* == *TEZGAH_DETACH_EXIT=1* ]] && sleep 0.25
  local e1
  e1=$(sed -n 's/^sample: teardown.*epoch [0-9.]* \.\. \([0-9.]*\) s.*/\1/p' "$w/one.txt")
  awk -v l="$label" -v a="$t0" -v z="$t1" -v e1="${e1:-0}" \
    'BEGIN { printf "1-token process (%s): %.3f s, after the command %.3f s\n", l, z - a, z - e1 }' | tee -a "$out/phases.txt"
}
one default
one default
one detached TEZGAH_DETACH_EXIT=1
one detached TEZGAH_DETACH_EXIT=1
# per-op profiles per decoding step (ops one by one, not recorded: each op's own time; 200 tokens)
for pv in "1 64" "1 32" "16 64" "16 32"; do
  read -r b ch <<< "$pv"
  TEZGAH_CUDA_DEC_CHUNK=$ch TEZGAH_PROFILE=1 "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 200 \
    --batch $b --ignore-eot --temperature 0 --stats > /dev/null 2> "$out/profile$b.$ch.txt"
  echo "per-op b$b chunk $ch (ms/step, calls): $(awk '$2 ~ /^[0-9.]+$/ && $1 != "total" && NR > 2 && n++ < 5 { printf "%s %s (%s), ", $1, $2, $3 } $1 == "total" { printf "total %s", $2 }' "$out/profile$b.$ch.txt")" |
    tee -a "$out/phases.txt"
done
t0=$(date +%s.%N); "$tz" --version > /dev/null; t1=$(date +%s.%N)
awk -v a="$t0" -v z="$t1" 'BEGIN { printf "tezgah --version (exec, libraries): %.3f s\n", z - a }' | tee -a "$out/phases.txt"

echo "== 5. peer: transformers generate (fp32; batch 1, 16; 1,000 tokens)"
if python3 -c "import torch, transformers" 2> /dev/null; then
  "$tz" convert --to hf "$w/run" --out "$w/hf" > /dev/null 2> "$out/convert.err" || tail -3 "$out/convert.err"
  lim=$((140 - (SECONDS - t_all)))
  ((lim < 25)) && lim=25
  timeout $lim python3 bench/hf_generate.py "$w/hf" --tokens 1000 --batch 1,16 --dtype fp32 2>&1 |
    grep -E "^peer" | tee "$out/peer.log"
else
  echo "peer: no torch/transformers in python3" | tee "$out/peer.log"
fi
rm -rf "$w"

echo "== 6. summary (cudadec5; gpu: $gpu)"
cat "$out/tests.txt"
echo "cli checks: $(grep -c ': identical$' "$out/cli.txt") identical, $(grep -c ': DIFFERENT$\|: FAILED' "$out/cli.txt") not"
grep -v ': identical$' "$out/cli.txt"
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
[[ -n ${OUT:-} ]] && tar czf "$OUT/decode5_logs.tgz" -C "$out" . 2> /dev/null
echo "targets: batch 1 >= 1,500 tokens/s (<= 0.667 s), batch 16 >= 15,000 (<= 1.067 s). total: $((SECONDS - t_all)) s"
