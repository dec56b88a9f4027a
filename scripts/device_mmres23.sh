#!/usr/bin/env bash
# The residual add in cuBLASLt's epilogue (issue 24; backend.h's matmul_t_res on CUDA: C = res,
# D = out, beta 1, src/kernels/matmul/matmul.cu; opt-in: TEZGAH_CUDA_MM_RES=1; unset, matmul_t + add) on the H200.
#   pack (here):  TZ_PACK_TARGETS="tezgah test_cuda_mm_res test_cuda_train test_cuda_gelu_epi test_cuda_recompute test_cuda_decode test_cuda_ops test_cuda_parity" bash scripts/device_pack.sh .dev-r23 -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (device, carry [".dev-r23"]):  bash scripts/device_mmres23.sh .dev-r23     (<= ~450 s;
#   CAP=SECONDS: no training run started after that many seconds, default 400; a test whose
#   program is not in the pack is skipped with a line)
# 1. tests with TEZGAH_CUDA_REQUIRED=1: test_cuda_mm_res (TEZGAH_VERBOSE=1: cuBLASLt's refusals
#    of C = res are printed), test_cuda_train (the default: no op) and with TEZGAH_CUDA_MM_RES=1
#    (its worst relative differences beside the op's: gpt2 bf16 had 1.64e-2 of 2e-2 before),
#    test_cuda_recompute, test_cuda_decode (the few-row path: res copied, then gemv / mma with
#    acc), test_cuda_gelu_epi, test_cuda_ops, test_cuda_parity.
# 2. training A/B, B16 T1024 bf16, 12 steps, the default GeLU epilogue (auto) and `both`: gpt2-350m
#    op / off / op / off, gpt2-774m op / off, each with `both` too when the time allows. Median
#    tokens/s of steps 6-12, losses of steps 1, 3, 12; repeat runs bit-identical?
# 3. --profile of 350m with the op (8 steps): matmul_t_res against matmul_t + add.
# Writes $OUT/mmres23.tgz (every log) and $OUT/mmres23_summary.log, refreshed after each step.
set -uo pipefail
dir=${1:?usage: device_mmres23.sh DIR}
OUT=${OUT:-/tmp/mmres23_out}
L=/tmp/mmres23
rm -rf "$L" && mkdir -p "$L" "$OUT"
: >"$OUT/mmres23_summary.log"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TEZGAH_FIXTURES=$PWD/tests/fixtures
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/mmres23_summary.log"
  tar czf "$OUT/mmres23.tgz" -C /tmp mmres23 2>/dev/null
}
say "start: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. correctness
t() { # tag, timeout, binary, env...
  local tag=$1 to=$2 bin=$3
  shift 3
  [[ -x $dir/bin/$bin ]] || { say "$tag: $bin not in the pack (skipped)"; return; }
  env TEZGAH_CUDA_REQUIRED=1 "$@" timeout "$to" "$dir/bin/$bin" >"$L/$tag.log" 2>&1
  local rc=$?
  say "$tag rc $rc: $(grep -cE '^\[       OK \]' "$L/$tag.log") ok, $(grep -cE '^\[  FAILED  \] test' "$L/$tag.log") failed; $(grep -E '^\[  FAILED  \] test|ERROR|error:|worst relative|max relative' "$L/$tag.log" | head -8 | tr '\n' ' ' | cut -c1-900)"
}
t mm_res 150 test_cuda_mm_res TEZGAH_VERBOSE=1
say "mm_res: $(grep -c 'from the CPU' "$L/mm_res.log") op checks; on the fallback kernel without being asked: $(grep -E 'on the fallback kernel$' "$L/mm_res.log" | head -12 | tr '\n' ';' | cut -c1-1500); cuBLASLt notes: $(grep -E 'C = res' "$L/mm_res.log" | sort | uniq -c | head -8 | tr -s ' ' | tr '\n' ';' | cut -c1-1200)"
t train 120 test_cuda_train
t train_mmres1 120 test_cuda_train TEZGAH_CUDA_MM_RES=1
t recompute 100 test_cuda_recompute
t decode 100 test_cuda_decode
t gelu_epi 100 test_cuda_gelu_epi
t ops 60 test_cuda_ops
t parity 100 test_cuda_parity

# 2. training A/B
med() { grep -o '"tok_per_s":[0-9.e+]*' "$1" | cut -d: -f2 | tail -n +6 | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
loss() { grep -E "^\{\"step\":$2," "$1" | grep -o '"loss":[0-9.e+-]*' | cut -d: -f2; }
losses() { grep -o '"loss":[0-9.e+-]*' "$1" | cut -d: -f2 | tr '\n' ' '; }
train() { # model, MM_RES value, GELU_EPI value, tag, steps, extra args...
  local m=$1 mr=$2 ge=$3 tag=$4 steps=$5
  shift 5
  TEZGAH_CUDA_MM_RES=$mr TEZGAH_CUDA_GELU_EPI=$ge TEZGAH_VERBOSE=1 timeout 60 "$dir/bin/tezgah" train --backend cuda \
    --model "$m" -B 16 -T 1024 --vocab-size 50257 --train-shards "$dir/data/tiny_shakespeare_train.bin" --steps "$steps" \
    --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir /tmp/r23_run "$@" >"$L/train_$tag.log" 2>&1 </dev/null
  local rc=$?
  cp /tmp/r23_run/metrics.jsonl "$L/metrics_$tag.jsonl" 2>/dev/null
  rm -rf /tmp/r23_run
  return $rc
}
one() { # model, MM_RES (1 op, 0 off), GELU_EPI, run letter
  local m=$1 mr=$2 ge=$3 r=$4 tag=${1}_${2}_${3}_$4
  if ((SECONDS > ${CAP:-400})); then say "$m res=$mr gelu=$ge ($r): skipped (the script's time is up)"; return; fi
  train "$m" "$mr" "$ge" "$tag" 12
  local rc=$? f=$L/metrics_$tag.jsonl
  say "$m res=$mr gelu=$ge ($r): rc $rc, $(med "$f") tokens/s (median of steps 6-12), loss 1/3/12 $(loss "$f" 1) $(loss "$f" 3) $(loss "$f" 12), C = res refused: $(grep -c 'with C = res' "$L/train_$tag.log"), $(grep -o 'device memory: [0-9.]* MiB peak' "$L/train_$tag.log")"
}
same() { # tag1 tag2
  local a b
  a=$(losses "$L/metrics_$1.jsonl") b=$(losses "$L/metrics_$2.jsonl")
  [[ -n $a && $a == "$b" ]] && echo "bit-identical" || echo "DIFFER"
}
for r in a b; do
  one gpt2-350m 1 auto $r
  one gpt2-350m 0 auto $r
done
say "350m repeat runs: op $(same gpt2-350m_1_auto_a gpt2-350m_1_auto_b), off $(same gpt2-350m_0_auto_a gpt2-350m_0_auto_b)"
one gpt2-774m 1 auto a
one gpt2-774m 0 auto a
one gpt2-350m 1 both a
one gpt2-350m 0 both a
one gpt2-774m 1 both a
one gpt2-774m 0 both a

# 3. per-op times at 350m with the op
if ((SECONDS < ${CAP:-400})); then
  train gpt2-350m 1 auto prof_350m 8 --profile
  rc=$?
  say "profile 350m (op): rc $rc; $(grep -E 'matmul|add' "$L/train_prof_350m.log" | tr -s ' ' | head -10 | tr '\n' ';' | cut -c1-1200)"
fi
say "done"
