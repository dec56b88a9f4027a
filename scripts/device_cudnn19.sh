#!/usr/bin/env bash
# cuDNN attention as the sm_90 default (session 19): the whole CUDA test suite under the new
# default, then GPT-2 124M / llama training with the PyTorch torch.compile peer (bench_cuda.sh),
# and the same tezgah runs with TEZGAH_CUDA_ATTN=builtin (the kernels that were the default).
#   pack (here):  bash scripts/device_pack.sh .dev-cd -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (device, carry [".dev-cd"]):  bash scripts/device_cudnn19.sh .dev-cd [tests] [bench] [sizes]
# sizes: bench_cuda_sizes.sh at gpt2-350m and gpt2-774m with the peer (default attention), then
# tezgah alone with builtin at those two, and gpt2-1.5b both ways without the peer.
# Writes $OUT/cudnn19.tgz (every log) and $OUT/cudnn19_summary.log, refreshed after each step.
set -uo pipefail
dir=${1:?usage: device_cudnn19.sh DIR [tests] [bench] [sizes]}
shift
args=" $* "
OUT=${OUT:-/tmp/cudnn19_out}
L=/tmp/cudnn19
rm -rf "$L" && mkdir -p "$L" "$OUT"
: >"$OUT/cudnn19_summary.log"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/cudnn19_summary.log"
  tar czf "$OUT/cudnn19.tgz" -C /tmp cudnn19 2>/dev/null
}
say "start: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $("$dir/bin/tezgah" info 2>&1 | grep -E 'cuDNN' | tr -s ' ' | head -1)"
if [[ $args == *" tests "* ]]; then
  for t in "$dir"/bin/test_cuda_*; do
    n=$(basename "$t")
    TEZGAH_CUDA_REQUIRED=1 TEZGAH_CUDNN_REQUIRED=1 timeout 240 "$t" >"$L/$n.log" 2>&1
    rc=$?
    say "$n rc $rc: $(grep -cE '^\[       OK \]' "$L/$n.log") ok, $(grep -cE '^\[  FAILED  \] test' "$L/$n.log") failed, $(grep -cE '^\[  SKIPPED \] test' "$L/$n.log") skipped $(grep -E '^\[  FAILED  \] test|elements off|error' "$L/$n.log" | head -3 | tr '\n' ' ' | cut -c1-300)"
  done
fi
if [[ $args == *" bench "* ]]; then
  timeout 300 bash bench/bench_cuda.sh "$dir/bin/tezgah" "$dir/data/tiny_shakespeare_train.bin" "$dir/data/torch_gpt.py" 30 "gpt2 llama" \
    >"$L/bench_default.md" 2>"$L/bench_default.err"
  say "bench (default attention, peer): rc $? $(grep -E '^\|' "$L/bench_default.md" | tr '\n' ' ')"
  TEZGAH_CUDA_ATTN=builtin timeout 120 bash bench/bench_cuda.sh "$dir/bin/tezgah" "$dir/data/tiny_shakespeare_train.bin" /dev/null 30 "gpt2 llama" \
    >"$L/bench_builtin.md" 2>"$L/bench_builtin.err"
  say "bench (TEZGAH_CUDA_ATTN=builtin): rc $? $(grep -E '^\|' "$L/bench_builtin.md" | tail -2 | tr '\n' ' ')"
fi
if [[ $args == *" sizes "* ]]; then
  PEER_STEPS=10 timeout 330 bash bench/bench_cuda_sizes.sh "$dir/bin/tezgah" "$dir/data/tiny_shakespeare_train.bin" "$dir/data/torch_gpt.py" 12 "gpt2-350m gpt2-774m" \
    >"$L/sizes_default.md" 2>"$L/sizes_default.err"
  say "sizes (default attention, peer): rc $? $(grep -E '^\|' "$L/sizes_default.md" | tail -2 | tr '\n' ' ')"
  med() { grep -o '"tok_per_s":[0-9.e+]*' "$1" | cut -d: -f2 | tail -n +6 | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
  for m in gpt2-350m gpt2-774m gpt2-1.5b; do
    for a in builtin auto; do
      [[ $m != gpt2-1.5b && $a == auto ]] && continue # measured above, with the peer
      TEZGAH_CUDA_ATTN=$a timeout 150 "$dir/bin/tezgah" train --backend cuda --model $m -B 16 -T 1024 --vocab-size 50257 \
        --train-shards "$dir/data/tiny_shakespeare_train.bin" --steps 12 --val-every 0 --ckpt-every 0 --sample-tokens 0 \
        --log-every 1 --run-dir /tmp/cd_run >"$L/train_${m}_$a.log" 2>&1 </dev/null
      rc=$?
      cp /tmp/cd_run/metrics.jsonl "$L/metrics_${m}_$a.jsonl" 2>/dev/null
      rm -rf /tmp/cd_run
      say "$m $a: rc $rc, $(med "$L/metrics_${m}_$a.jsonl") tokens/s (median of steps 6-12), $(grep -o 'device memory: [0-9.]* MiB peak' "$L/train_${m}_$a.log")"
    done
  done
fi
say "done"
