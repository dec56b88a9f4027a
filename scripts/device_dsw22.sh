#!/usr/bin/env bash
# Issue 22 (session 22): SwiGLU's backward in kernel n's epilogue (matmul_dswiglu;
# TEZGAH_WEBGPU_SWIGLU_EPI=0: matmul, then swiglu_bwd) on the H200: the f16-activation matmul test
# on the real builtins, test_webgpu_train's llama cases, then the llama shape f16 B16 T1024
# alternating on / off (median tokens/s of steps 6..) and one profile with it on.
#   bash scripts/device_dsw22.sh DIR   (carry [DIR, ".gl"]). <= 150 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_dsw22 /tmp/dsw22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
TZ_TEST_FILTER=test_act_f16_matmul TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 150 "$dir/bin/test_webgpu_ops" >"$out/t_mm.log" 2>&1
say "test_act_f16_matmul rc $?: $(grep -E 'dswiglu|PASSED|FAILED|error' "$out/t_mm.log" | tail -5 | tr -s ' ' | tr '\n' ';')"
TZ_TEST_FILTER="test_train_llama*" timeout 150 "$dir/bin/test_webgpu_train" >"$out/t_train.log" 2>&1
say "test_webgpu_train llama rc $?: $(grep -E 'worst|PASSED|FAILED' "$out/t_train.log" | tr '\n' ';' | cut -c1-300)"
for r in l1 l0 l1b l0b; do
  rm -rf "/tmp/run_$r"
  if [[ $r == l0* ]]; then TEZGAH_WEBGPU_SWIGLU_EPI=0 train_shape "$r" llama f16 10; else train_shape "$r" llama f16 10; fi
  say "train $r rc $rc: median tokens/s $tps"
done
train_shape prof_l llama f16 8 --profile
say "profile llama total $(row total "$out/prof_l.log"): $(grep -E 'matmul \(sgmat\)|swiglu|rmsnorm|rope' "$out/prof_l.log" | awk '{print $1, $2, $3}' | tr '\n' ';')"
pack_logs
