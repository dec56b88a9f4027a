#!/usr/bin/env bash
# Issue 22 (session 21): does the new default, f16 activations, train as well as fp32 activations?
# GPT-2 124M 1,500 steps on a real corpus with `--backend webgpu --precision f16`, once with f16
# activations (the default) and once with TEZGAH_WEBGPU_ACT=f32, the hyperparameters, seed and
# data of scripts/device_valloss.sh (which also runs the CUDA bf16 reference; this call has no
# CUDA build). Final val losses side by side, steps skipped by the loss scaler, tokens/s.
#   bash scripts/device_act16_valloss.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR` plus DIR/vl/{train,val}.bin.xz from
#   `bash bench/make_valloss_data.sh CORPUS DIR/vl`). Writes $OUT/summary.log and logs.tgz.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_act16_valloss /tmp/act16vl_out "" "$@"
device_dawn_node
steps=${STEPS:-1500}
for s in train val; do xz -dc "$dir/vl/$s.bin.xz" >"/tmp/$s.bin"; done
run() { # NAME ACT TIMEOUT
  rm -rf "/tmp/run_$1"
  TEZGAH_WEBGPU_ACT=$2 timeout "$3" "$dir/bin/tezgah" train --backend webgpu --precision f16 --model gpt2-124m -B 16 \
    -T 1024 --vocab-size 50257 --train-shards /tmp/train.bin --val-shards /tmp/val.bin --steps "$steps" \
    --lr 6e-4 --warmup 100 --min-lr-frac 0.1 --weight-decay 0.1 --grad-clip 1.0 --seed 1337 \
    --val-every 250 --val-batches 8 --ckpt-every 0 --sample-tokens 0 --log-every 50 \
    --run-dir "/tmp/run_$1" >"$out/$1.log" 2>&1
  local rc=$?
  cp "/tmp/run_$1/metrics.jsonl" "$out/$1.jsonl" 2>/dev/null
  local vals tps
  vals=$(grep -o '"val_loss":[0-9.e+-]*' "/tmp/run_$1/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tr '\n' ' ')
  tps=$(median_tps "/tmp/run_$1/metrics.jsonl")
  say "$1 (TEZGAH_WEBGPU_ACT=$2) rc $rc: val losses $vals; median tokens/s $tps; $(grep -E 'skipped' "$out/$1.log" | tail -1 | cut -c1-160)"
}
run act16 f16 280
run act32 f32 290
pack_logs
