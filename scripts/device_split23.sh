#!/usr/bin/env bash
# Issue 22 (session 23): the weight gradient's split-K count on the H200. tz_sgmat_splits
# (src/backend/webgpu/sgmat.c) picks S for matmul_at from TEZGAH_WEBGPU_SGMAT_SLOTS (workgroups
# in flight, default 132; <= 0: the older fill-264 rule), charging 1% per split for the partial
# sums, which the profile shows cost more (GPT-2: the +10 sums 0.44 ms beside a 4.07 ms matmul).
# GPT-2 124M and llama f16 B16 T1024 by default and with other slot counts, median tokens/s of
# steps 6..; a per-shape profile of GPT-2 at the best other count.
#   bash scripts/device_split23.sh DIR   (carry [DIR, ".gl"]; DIR from device_pack_webgpu.sh). <= 300 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_split23 /tmp/split23_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-40}
run_env g1 gpt2
for s in 264 66 33 -1; do run_env "g$s" gpt2 TEZGAH_WEBGPU_SGMAT_SLOTS=$s; done
run_env g1b gpt2
run_env l1 llama
for s in 264 66; do run_env "l$s" llama TEZGAH_WEBGPU_SGMAT_SLOTS=$s; done
run_env l1b llama
for s in 66 264; do
  TEZGAH_WEBGPU_SGMAT_SLOTS=$s TEZGAH_PROFILE_SHAPES=1 train_shape "prof_g$s" gpt2 f16 8 --profile
  say "profile gpt2 SLOTS=$s total $(row total "$out/prof_g$s.log"): $(grep -E 'matmul_at' "$out/prof_g$s.log" | awk '{printf "%s %s %s; ", $3, $4, $5}')"
done
pack_logs
