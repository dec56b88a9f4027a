#!/usr/bin/env bash
# Issue 22 (session 22): other kernel-n tiles for the K <= 1024 matmuls (X·Wᵀ and dY·W at K =
# 768: ~185 TFLOP/s against ~240 at K = 3072 in GPT-2 124M's f16 step), through
# TEZGAH_WEBGPU_SGMAT_TILE_SHORTK in the training run itself (a tile that does not fit a call
# leaves it to the default): GPT-2 124M f16 B16 T1024, median tokens/s of steps 6.., the default
# first and last; a per-shape profile of each 128 x 256 tile.
#   bash scripts/device_tile22.sh DIR   (carry [DIR, ".gl"]). <= 200 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_tile22 /tmp/tile22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
i=0
for t in default n:32:2x4:4x4:vpgP264 n:32:2x4:4x4:vpgP132 n:64:2x4:4x2:vpgP132 n:32:4x2:4x4:vpgP264 \
  n:64:2x4:4x2:vpg n:32:2x4:4x4:vpg default; do
  i=$((i + 1))
  rm -rf "/tmp/run_t$i"
  if [[ $t == default ]]; then train_shape "t$i" gpt2 f16 10; else TEZGAH_WEBGPU_SGMAT_TILE_SHORTK=$t train_shape "t$i" gpt2 f16 10; fi
  say "tile $t rc $rc: median tokens/s $tps $(grep -iE 'error' "$out/t$i.log" | head -1 | cut -c1-160)"
done
for t in n:32:2x4:4x4:vpgP264; do
  TEZGAH_WEBGPU_SGMAT_TILE_SHORTK=$t TEZGAH_PROFILE_SHAPES=1 train_shape prof_t gpt2 f16 8 --profile
  say "profile $t: $(grep -E 'x768 ' "$out/prof_t.log" | grep -v matmul_at | awk '{print $3, $4}' | tr '\n' ';')"
done
pack_logs
