#!/usr/bin/env bash
# Issue 22's convergence check on the GPU machine: GPT-2 124M trained STEPS (1500) steps on a real
# corpus with `--backend webgpu --precision f16` (subgroup-matrix matmuls, f16 activations,
# dynamic loss scaling) and with `--backend cuda` (bf16), same hyperparameters, seed and data;
# the final val losses must agree within 1 %. Then (when the time allows) the WebGPU run's
# speed against PyTorch bf16 eager in the same call.
#
#   bash scripts/device_valloss.sh DIR      (run tool, carry [DIR, ".gl"])
# DIR: bin/ (tezgah built with CUDA and WebGPU, libtz_napi_stub.so), lib/ (libtezgah.so.0 and the
# libraries scripts/device_pack.sh gathers), dawn/dawn.node.xz (npm webgpu@0.6.2), data/
# train.bin.xz and val.bin.xz (llm.c GPT-2 token shards; scripts/make_valloss_data.sh),
# data/torch_gpt.py. Writes $OUT/{summary.log, cuda.log, webgpu.log, *.jsonl}.
# Hyperparameters (nanoGPT / llm.c's GPT-2 124M recipe, shortened): B 16, T 1024, AdamW lr 6e-4,
# 100 warmup steps, cosine to 10 %, weight decay 0.1, grad clip 1.0, val every 250 steps on
# 8 batches (131,072 tokens of the held-out documents).
set -uo pipefail
dir=${1:?usage: device_valloss.sh DIR}
out=${OUT:-/tmp/valloss_out}
steps=${STEPS:-1500}
mkdir -p "$out"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$PWD/$dir/lib:$PWD/$dir/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
xz -dc "$dir/dawn/dawn.node.xz" >/tmp/dawn.node
export TEZGAH_WEBGPU_LIB=/tmp/dawn.node
for s in train val; do xz -dc "$dir/data/$s.bin.xz" >"/tmp/$s.bin"; done
say() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$out/summary.log"; }
say "start $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $steps steps"
train() { # BACKEND PRECISION TIMEOUT
  local be=$1 prec=$2
  timeout "$3" "$dir/bin/tezgah" train --backend "$be" --precision "$prec" --model gpt2-124m -B 16 -T 1024 \
    --vocab-size 50257 --train-shards /tmp/train.bin --val-shards /tmp/val.bin --steps "$steps" \
    --lr 6e-4 --warmup 100 --min-lr-frac 0.1 --weight-decay 0.1 --grad-clip 1.0 --seed 1337 \
    --val-every 250 --val-batches 8 --ckpt-every 0 --sample-tokens 0 --log-every 50 \
    --run-dir "/tmp/run_$be" >"$out/$be.log" 2>&1
  local rc=$?
  cp "/tmp/run_$be/metrics.jsonl" "$out/$be.jsonl" 2>/dev/null
  local vals tps
  vals=$(grep -o '"step":[0-9]*\|"val_loss":[0-9.e+-]*' "/tmp/run_$be/metrics.jsonl" 2>/dev/null |
    awk -F: '$1 ~ /step/ {s = $2} $1 ~ /val_loss/ {printf "%s:%.4f ", s, $2}')
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "/tmp/run_$be/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +3 | sort -g |
    awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}')
  say "$be $prec rc $rc: val loss by step $vals| median tokens/s $tps | $(grep -E 'peak|skipped|overflow' "$out/$be.log" | tail -2 | tr '\n' ' ')"
  grep -o '"val_loss":[0-9.e+-]*' "/tmp/run_$be/metrics.jsonl" 2>/dev/null | tail -1 | cut -d: -f2 >"$out/$be.final"
}
train cuda bf16 "${CUDA_TMO:-150}"
train webgpu f16 "${WEBGPU_TMO:-400}"
c=$(cat "$out/cuda.final" 2>/dev/null) w=$(cat "$out/webgpu.final" 2>/dev/null)
say "final val loss: cuda bf16 ${c:-?}, webgpu f16 ${w:-?}; relative difference $(awk -v c="${c:-0}" -v w="${w:-0}" \
  'BEGIN {if (c > 0) printf "%.3f %%", 100 * (w - c) / c; else print "?"}') (issue 22: within 1 %)"
if ((SECONDS < ${LIM_PEER:-480})); then
  p=$(TF32=1 timeout 90 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 20 2>&1 | tail -2)
  say "PyTorch bf16 eager (same call): $p"
fi
say "end"
