#!/usr/bin/env bash
# Issue 22 (session 22): kernel n's f16 epilogues and the f16 logits in one piece on the H200,
# each switch against the default in the same binary: the residual connection (matmul_t_res;
# TEZGAH_WEBGPU_MM_RES=0: matmul_t then add), GeLU (TEZGAH_WEBGPU_GELU_EPI=auto|off|bwd|fwd|both;
# auto = bwd, matmul_dgelu), SwiGLU's backward (matmul_dswiglu; TEZGAH_WEBGPU_SWIGLU_EPI=0), the
# lm_head's f16 logits counted by bytes (TEZGAH_WEBGPU_F16_PIECES=0: fp32-element pieces).
# 1. test_act_f16_matmul and test_act_f16_elem on the real builtins (the epilogue cases on kernel
# n), test_webgpu_train's act16 and llama cases against the CPU; 2. GPT-2 124M and llama f16 B16
# T1024 alternating the switches (median tokens/s of steps 6..); 3. a per-shape profile of each
# shape's default. (The 12:43 and 12:49 calls ran this script's first form, device_res22.sh:
# the RES and PIECES rows only.)
#   bash scripts/device_epi22.sh DIR   (carry [DIR, ".gl"]). <= 300 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_epi22 /tmp/epi22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
TZ_TEST_FILTER=test_act_f16_matmul,test_act_f16_elem TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 150 "$dir/bin/test_webgpu_ops" \
  >"$out/t_ops.log" 2>&1
say "test_act_f16_matmul, _elem rc $?: $(grep -E 'matmul_t_res|gelu|swiglu M|PASSED|FAILED|error' "$out/t_ops.log" | tail -14 | tr -s ' ' | tr '\n' ';' | cut -c1-1200)"
for f in "test_train_*act16" "test_train_llama*"; do
  TZ_TEST_FILTER=$f timeout 150 "$dir/bin/test_webgpu_train" >"$out/t_train.log" 2>&1
  say "test_webgpu_train $f rc $?: $(grep -E 'worst|PASSED|FAILED' "$out/t_train.log" | tr '\n' ';' | cut -c1-300)"
done
off=(TEZGAH_WEBGPU_MM_RES=0 TEZGAH_WEBGPU_GELU_EPI=off TEZGAH_WEBGPU_SWIGLU_EPI=0 TEZGAH_WEBGPU_F16_PIECES=0)
for r in "" b; do
  run_env "g1$r" gpt2
  run_env "gr$r" gpt2 TEZGAH_WEBGPU_MM_RES=0
  run_env "ge$r" gpt2 TEZGAH_WEBGPU_GELU_EPI=off
  run_env "gp$r" gpt2 TEZGAH_WEBGPU_F16_PIECES=0
  run_env "g0$r" gpt2 "${off[@]}"
  run_env "l1$r" llama
  run_env "ls$r" llama TEZGAH_WEBGPU_SWIGLU_EPI=0
  run_env "l0$r" llama "${off[@]}"
done
for a in gpt2 llama; do
  TEZGAH_PROFILE_SHAPES=1 train_shape "prof_$a" "$a" f16 8 --profile
  say "profile $a total $(row total "$out/prof_$a.log")"
done
say "TABLE: gpt2 default ${TPS[g1]} / ${TPS[g1b]}; MM_RES=0 ${TPS[gr]} / ${TPS[grb]}; GELU_EPI=off ${TPS[ge]} / ${TPS[geb]}; F16_PIECES=0 ${TPS[gp]} / ${TPS[gpb]}; all off ${TPS[g0]} / ${TPS[g0b]} | llama default ${TPS[l1]} / ${TPS[l1b]}; SWIGLU_EPI=0 ${TPS[ls]} / ${TPS[lsb]}; all off ${TPS[l0]} / ${TPS[l0b]}"
pack_logs
