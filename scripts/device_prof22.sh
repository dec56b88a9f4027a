#!/usr/bin/env bash
# Issue 22 (session 22): where the f16 step's time goes, per shape. GPT-2 124M and the llama
# shape, `--precision f16` B16 T1024, 8 steps each with `train --profile` and
# TEZGAH_PROFILE_SHAPES=1 (each matmul's M x N x K on its own row), then the plain 10-step
# runs' median tokens/s. bash scripts/device_prof22.sh DIR (carry [DIR, ".gl"]). <= 240 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_prof22 /tmp/prof22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
for a in gpt2 llama; do
  TEZGAH_PROFILE_SHAPES=1 train_shape "prof_$a" "$a" f16 8 --profile
  say "profile $a rc $rc: total $(row total "$out/prof_$a.log") ms/step"
  train_shape "run_$a" "$a" f16 10
  say "train $a rc $rc: median tokens/s (steps 6..) $tps"
done
pack_logs
