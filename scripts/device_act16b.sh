#!/usr/bin/env bash
# Issue 22 (session 21): f16 activations on WebGPU with 8-byte vector accesses in the memory-bound
# kernels (TEZGAH_WEBGPU_ACT16_VEC, default on) against the per-element f16 variant (=0) and fp32
# activations (TEZGAH_WEBGPU_ACT=f32), same binary; the llama shape too (RMSNorm, RoPE, SwiGLU
# d_ff 2048). 1. the f16-activation op tests on the real builtins and the training test; 2. GPT-2
# 124M and llama f16 B16 T1024, median tokens/s of steps 6..; 3. a per-op profile of the default;
# 4. the peers (PyTorch bf16 eager, both shapes); the table LAST.
#   bash scripts/device_act16b.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/summary.log and logs.tgz. <= 300 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_act16b /tmp/act16b_out "" "$@"
device_dawn_node
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
for t in test_act_f16_elem test_act_f16_matmul test_act_f16_attention; do
  TZ_TEST_FILTER=$t TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 120 "$dir/bin/test_webgpu_ops" >"$out/$t.log" 2>&1
  say "test_webgpu_ops $t rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/$t.log" | tail -3 | tr '\n' ' ' | cut -c1-240)"
done
TZ_TEST_FILTER='*act16*' timeout 60 "$dir/bin/test_webgpu_train" >"$out/test_train.log" 2>&1
say "test_webgpu_train *act16* rc $?: $(grep -E 'worst|PASSED|FAILED' "$out/test_train.log" | tail -3 | tr '\n' ' ' | cut -c1-240)"
run_env g_vec gpt2 TEZGAH_WEBGPU_ACT16_VEC=1
run_env g_elem gpt2 TEZGAH_WEBGPU_ACT16_VEC=0
run_env g_f32 gpt2 TEZGAH_WEBGPU_ACT=f32
run_env g_vec2 gpt2 TEZGAH_WEBGPU_ACT16_VEC=1
run_env l_vec llama TEZGAH_WEBGPU_ACT16_VEC=1
run_env l_f32 llama TEZGAH_WEBGPU_ACT=f32
rm -rf /tmp/run_prof
train_gpt2 prof f16 4 --profile
say "profile (default) rc $rc: $(grep -E '^ +[a-z_]+( \([a-z]+\))? +[0-9.]+ ' "$out/prof.log" | head -24 | awk '{n=$1; if ($2 ~ /^\(/) {n=n$2; v=$3} else v=$2; printf "%s %s; ", n, v}')"
torch_peers
say "peers PyTorch bf16 eager: gpt2 $TG, llama $TL"
say "TABLE: gpt2 f16 act vec ${TPS[g_vec]} / ${TPS[g_vec2]}; per-element ${TPS[g_elem]}; fp32 act ${TPS[g_f32]}; PyTorch bf16 eager $TG | llama f16 act vec ${TPS[l_vec]}; fp32 act ${TPS[l_f32]}; PyTorch bf16 eager $TL"
pack_logs
