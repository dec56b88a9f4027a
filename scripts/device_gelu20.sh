#!/usr/bin/env bash
# GeLU in cuBLASLt's matmul epilogues (issue 24 item 2; TEZGAH_CUDA_GELU_EPI, src/kernels/matmul/
# matmul.cu): backward DGELU (+ DGELU_BGRAD for fc's bias gradient), forward GELU_AUX_BIAS,
# against the separate matmul + gelu ops (off, the default).
#   pack (here):  TZ_PACK_TARGETS="tezgah test_cuda_gelu_epi test_cuda_train test_cuda_recompute test_cuda_ops" bash scripts/device_pack.sh .dev-g20 -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (device, carry [".dev-g20"]):  bash scripts/device_gelu20.sh .dev-g20
# 1. tests with TEZGAH_CUDA_REQUIRED=1: test_cuda_gelu_epi (the ops vs the CPU, the switch, training
#    per switch value), test_cuda_train with both+bgrad, test_cuda_recompute (with both: compared
#    as bwd, see the test), test_cuda_ops; test_cuda_train with the default (off) at the end (4.)
#    when the time allows.
# 2. training, B16 T1024 bf16, 12 steps: gpt2-350m off / bwd / fwd / both / both+bgrad, then off and
#    the fastest of the four again; gpt2-774m off / both; gpt2-124m off / both. Median tokens/s of
#    steps 6-12; losses of steps 1, 3, 12; whether the two runs of off (and of the best) give
#    bit-identical losses; TEZGAH_VERBOSE's cuBLASLt epilogue notes (taken / no algorithm).
# 3. --profile of 350m with both (8 steps). Whole script <= ~420 s: a run that would start after
#    380 s is skipped (said in the summary).
# Writes $OUT/gelu20.tgz (every log) and $OUT/gelu20_summary.log, refreshed after each step.
set -uo pipefail
dir=${1:?usage: device_gelu20.sh DIR}
OUT=${OUT:-/tmp/gelu20_out}
L=/tmp/gelu20
rm -rf "$L" && mkdir -p "$L" "$OUT"
: >"$OUT/gelu20_summary.log"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TEZGAH_FIXTURES=$PWD/tests/fixtures
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/gelu20_summary.log"
  tar czf "$OUT/gelu20.tgz" -C /tmp gelu20 2>/dev/null
}
say "start: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. correctness
t() { # tag, timeout, binary, env...
  local tag=$1 to=$2 bin=$3
  shift 3
  env TEZGAH_CUDA_REQUIRED=1 "$@" timeout "$to" "$dir/bin/$bin" >"$L/$tag.log" 2>&1
  local rc=$?
  say "$tag rc $rc: $(grep -cE '^\[       OK \]' "$L/$tag.log") ok, $(grep -cE '^\[  FAILED  \] test' "$L/$tag.log") failed; $(grep -E '^\[  FAILED  \] test|ERROR|error:' "$L/$tag.log" | head -4 | tr '\n' ' ' | cut -c1-500)"
}
t test_cuda_gelu_epi 100 test_cuda_gelu_epi TEZGAH_VERBOSE=1
say "gelu_epi notes: $(grep -E 'fallback kernel$|GeLU form|bit-identical|DIFFER|worst relative|bias gradient in bf16' "$L/test_cuda_gelu_epi.log" | sort | uniq -c | sort -rn | head -24 | tr -s ' ' | tr '\n' ';' | cut -c1-2500)"
say "gelu_epi cuBLASLt: $(grep -oE 'cuBLASLt (has no algorithm for )?matmul[_t]* with [A-Z_()]+' "$L/test_cuda_gelu_epi.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
t test_cuda_train_both_bgrad 90 test_cuda_train TEZGAH_CUDA_GELU_EPI=both+bgrad
t test_cuda_recompute_both 60 test_cuda_recompute TEZGAH_CUDA_GELU_EPI=both
t test_cuda_ops 60 test_cuda_ops

# 2. training A/B
med() { grep -o '"tok_per_s":[0-9.e+]*' "$1" | cut -d: -f2 | tail -n +6 | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
loss() { grep -E "^\{\"step\":$2," "$1" | grep -o '"loss":[0-9.e+-]*' | cut -d: -f2; }
losses() { grep -o '"loss":[0-9.e+-]*' "$1" | cut -d: -f2 | tr '\n' ' '; }
train() { # model, switch, tag, steps, extra args...
  local m=$1 sw=$2 tag=$3 steps=$4
  shift 4
  TEZGAH_CUDA_GELU_EPI=$sw TEZGAH_VERBOSE=1 timeout 45 "$dir/bin/tezgah" train --backend cuda --model "$m" -B 16 -T 1024 \
    --vocab-size 50257 --train-shards "$dir/data/tiny_shakespeare_train.bin" --steps "$steps" --val-every 0 --ckpt-every 0 \
    --sample-tokens 0 --log-every 1 --run-dir /tmp/g20_run "$@" >"$L/train_$tag.log" 2>&1 </dev/null
  local rc=$?
  cp /tmp/g20_run/metrics.jsonl "$L/metrics_$tag.jsonl" 2>/dev/null
  rm -rf /tmp/g20_run
  return $rc
}
declare -A tps
one() { # model, switch, run letter
  local m=$1 sw=$2 r=$3 tag=${1}_${2}_$3
  if ((SECONDS > 380)); then say "$m $sw ($r): skipped (the script's time is up)"; return; fi
  train "$m" "$sw" "$tag" 12
  local rc=$? f=$L/metrics_$tag.jsonl
  tps[$tag]=$(med "$f")
  say "$m $sw ($r): rc $rc, ${tps[$tag]} tokens/s (median of steps 6-12), loss 1/3/12 $(loss "$f" 1) $(loss "$f" 3) $(loss "$f" 12), epilogue notes $(grep -c 'cuBLASLt matmul' "$L/train_$tag.log") (no algorithm: $(grep -c 'has no algorithm' "$L/train_$tag.log")), $(grep -o 'device memory: [0-9.]* MiB peak' "$L/train_$tag.log")"
}
same() { # tag1 tag2
  local a b
  a=$(losses "$L/metrics_$1.jsonl") b=$(losses "$L/metrics_$2.jsonl")
  [[ -n $a && $a == "$b" ]] && echo "bit-identical" || echo "DIFFER"
}
for sw in off bwd fwd both both+bgrad; do one gpt2-350m "$sw" a; done
best=bwd
for sw in fwd both both+bgrad; do
  awk -v x="${tps[gpt2-350m_${sw}_a]:-0}" -v y="${tps[gpt2-350m_${best}_a]:-0}" 'BEGIN {exit !(x > y)}' && best=$sw
done
say "350m fastest fused in round a: $best"
one gpt2-350m off b
one gpt2-350m "$best" b
say "350m repeat runs: off $(same gpt2-350m_off_a gpt2-350m_off_b), $best $(same gpt2-350m_${best}_a gpt2-350m_${best}_b)"
for m in gpt2-774m gpt2-124m; do
  one "$m" off a
  one "$m" both a
done

# 3. per-op times at 350m with both
if ((SECONDS < 380)); then
  train gpt2-350m both prof_350m_both 8 --profile
  rc=$?
  say "profile 350m both: rc $rc; $(grep -E 'matmul|gelu|bias_bwd' "$L/train_prof_350m_both.log" | tr -s ' ' | head -8 | tr '\n' ';' | cut -c1-900)"
fi
# 4. the default (off) test_cuda_train, if time is left (off runs main's ops; test_cuda_gelu_epi trains with off too)
if ((SECONDS < 330)); then t test_cuda_train_off 80 test_cuda_train; else say "test_cuda_train (off): skipped (time)"; fi
say "done"
