#!/usr/bin/env bash
# cuDNN fused flash attention (TEZGAH_CUDA_ATTN=cudnn, src/kernels/attention/attention_cudnn.c) on
# the H200, against the built-in mma.sync kernels in the same binaries (issue 24: attention is 17
# of 84 ms a step at 350M, 57 of 344 at 1.5B). Correctness first:
#   1. test_cuda_attention, the cuDNN tests only (TZ_TEST_FILTER='*cudnn*'; TEZGAH_CUDA_REQUIRED=1,
#      TEZGAH_CUDNN_REQUIRED=1: a missing libcudnn fails instead of skipping): forward and backward
#      against the CPU at GPT-2's shapes (T 9/77/300/1024, 12 and 25 heads, GQA, MQA, head_dim 128),
#      run-to-run bit-identity of the backward, and that cuDNN really ran each call; fp32 and
#      decoding calls under the switch must not go to cuDNN. Prints cuDNN's version.
#   2. bench_cuda_attention 10 bf16 {fast, cudnn} gpt2: B16 T1024 hd64 at 124M (12 heads), 350M
#      (16), 1.5B (25); ms and TFLOP/s of forward and backward (mean after a warm-up call; the cudnn
#      run's warm-up also builds its plans). The last cudnn line counts the calls cuDNN ran. When
#      cuDNN refused every backward for want of a deterministic engine, the cudnn bench again with
#      TEZGAH_CUDNN_ALLOW_NONDET=1 (what its backward would cost; measurement only).
#   3. tezgah train gpt2-350m -B 16 -T 1024, 20 steps, bf16: built-in kernels
#      (TEZGAH_CUDA_ATTN=builtin: since session 19 cuDNN is the default on sm_90), then
#      TEZGAH_CUDA_ATTN=cudnn (TEZGAH_VERBOSE=1 on that run: its plan lines say cuDNN ran);
#      tokens/s = median of steps 6..20 from metrics.jsonl; losses of steps 1, 2, 20 for both.
#   4. with what time is left (>= 25 s): the whole test_cuda_attention without the switch (the
#      default's cases: cuDNN first on sm_90 since session 19; the cudnn cases run again).
# The first measurement of the cuDNN path (2026-12-03 21:56); scripts/device_cudnn19.sh measures
# it as the default, with the PyTorch peer.
# Whole script <= 150 s, each step under `timeout`; a summary last.
#
#   pack (here): TZ_PACK_TARGETS="tezgah test_cuda_attention bench_cuda_attention" \
#                  bash scripts/device_pack.sh .dev-cudnn -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (device tool, carry [".dev-cudnn"]):  bash scripts/device_cudnn18.sh .dev-cudnn
# DIR: bin/ (tezgah, test_cuda_attention, bench_cuda_attention), lib/, data/tiny_shakespeare_train.bin.
# libcudnn.so.9 is the machine's (/usr/local/cuda/lib64; not packed). Writes $OUT/cudnn18.tgz (all
# logs) and $OUT/cudnn18_summary.log, both refreshed after every step.
set -uo pipefail
dir=${1:?usage: device_cudnn18.sh DIR}
out=/tmp/cudnn18
OUT=${OUT:-/tmp/cudnn18_out}
rm -rf "$out" && mkdir -p "$out" "$OUT"
: >"$OUT/cudnn18_summary.log"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tz=$PWD/$dir/bin/tezgah
shard=$PWD/$dir/data/tiny_shakespeare_train.bin
work=/tmp/cudnn18_runs
rm -rf "$work" && mkdir -p "$work"
sum=()
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$out/summary.log" >>"$OUT/cudnn18_summary.log"
  sum+=("$*")
  tar czf "$OUT/cudnn18.tgz" -C /tmp cudnn18 2>/dev/null
}
# each step's timeout: its cap, or less so that `reserve` seconds stay for the steps after it (the
# whole script ends by ~148 s even when cuDNN's plan builds are slow); never below 5 s
budget() { # CAP RESERVE
  local t=$((148 - SECONDS - $2))
  ((t > $1)) && t=$1
  ((t < 5)) && t=5
  echo "$t"
}
say "start $(nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader | head -1); $("$tz" info 2>&1 | grep -E 'cuDNN|driver:' | tr -s ' ' | paste -sd';'); $(find /usr/local/cuda/lib64/ -name 'libnvrtc.so.*' 2>/dev/null | head -1)"

# 1. correctness of the cuDNN path
# cuDNN's own log of warnings and errors (why a graph or engine was refused) beside the test's
CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=$out/cudnn_api.log \
  TZ_TEST_FILTER='*cudnn*' TEZGAH_CUDA_REQUIRED=1 TEZGAH_CUDNN_REQUIRED=1 timeout "$(budget 90 55)" "$dir/bin/test_cuda_attention" \
  >"$out/test_cudnn.log" 2>&1
rc=$?
say "test_cuda_attention *cudnn* rc $rc: $(grep -cE '^\[       OK \]' "$out/test_cudnn.log") ok, $(grep -cE '^\[  FAILED  \] test' "$out/test_cudnn.log") failed, $(grep -cE '^\[  SKIPPED \] test' "$out/test_cudnn.log") skipped; $(grep -m1 -E '^cuDNN [0-9]+' "$out/test_cudnn.log"); $(grep -cE 'cudnn calls: forward 1 \(want 1\), backward 2 \(want 2\)' "$out/test_cudnn.log") cases ran on cuDNN"
say "  first problems: $(grep -E 'note:|error|differ|off;|want|SKIPPED' "$out/test_cudnn.log" | grep -v 'forward 1 (want 1), backward 2 (want 2)' | head -4 | tr '\n' ';' | cut -c1-600); last line: $(tail -1 "$out/test_cudnn.log" | cut -c1-200); cuDNN log: $(wc -l <"$out/cudnn_api.log" 2>/dev/null || echo 0) lines"

# 2. kernels: built-in (fast) vs cuDNN
for path in fast cudnn; do
  timeout "$(budget 40 35)" "$dir/bin/bench_cuda_attention" 10 bf16 "$path" gpt2 >"$out/bench_$path.log" 2>&1
  rc=$?
  ((rc == 0)) || say "  bench $path: $(tail -2 "$out/bench_$path.log" | tr '\n' ' ' | cut -c1-300)"
  say "bench $path rc $rc: $(grep -E '^(gpt2 \(MHA|350m|1\.5b)' "$out/bench_$path.log" | awk '{printf "%s fwd %s ms %s TF/s, bwd %s ms %s TF/s | ", $1, $(NF-3), $(NF-2), $(NF-1), $NF}') $(grep -E '^cudnn calls' "$out/bench_$path.log")"
done
while read -r l; do say "  bench cudnn: $l"; done < <(grep -E 'note:' "$out/bench_cudnn.log" | head -2)
# every backward refused for want of a deterministic engine: its speed anyway (measurement only)
if grep -q 'cudnn calls: forward [1-9][0-9]*, backward 0' "$out/bench_cudnn.log" && grep -q nondet "$out/bench_cudnn.log" &&
  ((148 - SECONDS > 55)); then
  TEZGAH_CUDNN_ALLOW_NONDET=1 timeout "$(budget 30 35)" "$dir/bin/bench_cuda_attention" 10 bf16 cudnn gpt2 >"$out/bench_cudnn_nondet.log" 2>&1
  say "bench cudnn, nondeterministic engines allowed: $(grep -E '^(gpt2 \(MHA|350m|1\.5b)' "$out/bench_cudnn_nondet.log" | awk '{printf "%s bwd %s ms %s TF/s | ", $1, $(NF-1), $NF}') $(grep -E '^cudnn calls' "$out/bench_cudnn_nondet.log")"
fi

# 3. 350M training, 20 steps
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
train() { # TAG RESERVE ENV... -> a summary line
  local tag=$1 reserve=$2
  shift 2
  local run=$work/$tag t0=$SECONDS
  env "$@" timeout "$(budget 45 "$reserve")" "$tz" train --backend cuda --model gpt2-350m -B 16 -T 1024 --vocab-size 50257 \
    --train-shards "$shard" --steps 20 --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 \
    --run-dir "$run" >"$out/train_$tag.log" 2>&1 </dev/null
  local rc=$?
  local tps losses
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | median)
  losses=$(grep -o '"loss":[0-9.e+-]*' "$run/metrics.jsonl" 2>/dev/null | cut -d: -f2 | sed -n '1p;2p;20p' | paste -sd' ')
  say "train 350m $tag: rc $rc, $(printf '%.0f' "${tps:-nan}") tokens/s (median steps 6-20), loss steps 1 2 20: ${losses:-?}, $((SECONDS - t0)) s; $(grep -cE 'cuDNN [0-9]+ attention' "$out/train_$tag.log") cuDNN plan lines; $(grep -E 'note:|error' "$out/train_$tag.log" | head -2 | tr '\n' ' ' | cut -c1-300)"
  rm -rf "$run"
}
train builtin 25 TEZGAH_CUDA_ATTN=builtin
train cudnn 0 TEZGAH_CUDA_ATTN=cudnn TEZGAH_VERBOSE=1

# 4. the rest of the tests, without the switch, in the time left
left=$((148 - SECONDS))
if ((left >= 25)); then
  TEZGAH_CUDA_REQUIRED=1 TEZGAH_CUDNN_REQUIRED=1 timeout "$left" "$dir/bin/test_cuda_attention" >"$out/test_all.log" 2>&1
  rc=$?
  say "test_cuda_attention (all, no switch; timeout $left s) rc $rc: $(grep -cE '^\[       OK \]' "$out/test_all.log") ok, $(grep -cE '^\[  FAILED  \] test' "$out/test_all.log") failed: $(grep -E '^\[  FAILED  \] test' "$out/test_all.log" | head -3 | tr '\n' ' ')"
else
  say "test_cuda_attention (all): skipped, $left s left"
fi
echo "==== summary ===="
printf '%s\n' "${sum[@]}"
