#!/usr/bin/env bash
# Issue 22 (session 22): the llama block's f16 vector kernels (branch llamaops: rmsnorm_sg_v16,
# rmsnorm_dw_partial_v16, swiglu v16, rope_v16; TEZGAH_WEBGPU_ACT16_VEC=0 the previous per-element
# forms) on the H200: test_act_f16_elem on the real builtins, the llama training cases, then the
# llama shape f16 B16 T1024 alternating (median tokens/s of steps 6..) and a profile.
#   bash scripts/device_llama22.sh DIR   (carry [DIR, ".gl"]). <= 150 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_llama22 /tmp/llama22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
TZ_TEST_FILTER=test_act_f16_elem TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 120 "$dir/bin/test_webgpu_ops" >"$out/t_elem.log" 2>&1
say "test_act_f16_elem rc $?: $(grep -E 'PASSED|FAILED|error' "$out/t_elem.log" | tail -3 | tr '\n' ';')"
TZ_TEST_FILTER="test_train_llama*" timeout 120 "$dir/bin/test_webgpu_train" >"$out/t_train.log" 2>&1
say "test_webgpu_train llama rc $?: $(grep -E 'worst|PASSED|FAILED' "$out/t_train.log" | tr '\n' ';' | cut -c1-300)"
for r in "" b; do
  run_env "l1$r" llama
  run_env "l0$r" llama TEZGAH_WEBGPU_ACT16_VEC=0
done
train_shape prof_l llama f16 8 --profile
say "profile llama total $(row total "$out/prof_l.log"): $(grep -E 'rmsnorm|rope|swiglu' "$out/prof_l.log" | awk '{print $1, $2}' | tr '\n' ';')"
say "TABLE: llama vector ${TPS[l1]} / ${TPS[l1b]}; ACT16_VEC=0 ${TPS[l0]} / ${TPS[l0b]}"
pack_logs
