#!/usr/bin/env bash
# Issue 22, branch dq24 (f16 dq partial sums in the written-out dK/dV, TEZGAH_WEBGPU_ATTN_DQ16), the
# H200; written for the lead's call, not run by its author (no GPU on the helper's machine):
# 1. the f16-activation tests and the subgroup-matrix attention test on the real builtins
#    (test_act_f16_attention asserts the f16 parts at head_dim 64 and prints dq's errors), then
#    test_act_f16_attention* again with TEZGAH_WEBGPU_ATTN_DQ16=0 (the fp32 parts: dq's errors
#    side by side; its log t_ops_dq32.log);
# 2. GPT-2 124M and llama f16 B16 T1024 training, DQ16 on (the default) and off, interleaved,
#    median tokens/s of steps 6.. and the losses of every step (loss_NAME.txt: on vs off);
# 3. per-shape profiles of GPT-2 with DQ16 on and off (attention_bwd_dq, attention_bwd_dkdv).
#   bash scripts/device_dq24.sh DIR   (carry [DIR, ".gl"]; DIR from device_pack_webgpu.sh). <= 420 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_dq24 /tmp/dq24_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-40}
f16_tests
TEZGAH_WEBGPU_ATTN_DQ16=0 TZ_TEST_FILTER="test_act_f16_attention*" TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 120 \
  "$dir/bin/test_webgpu_ops" >"$out/t_ops_dq32.log" 2>&1
say "test_webgpu_ops act_f16_attention* DQ16=0 rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/t_ops_dq32.log" | tail -4 | tr '\n' ' ' | cut -c1-300)"
say "dq errors DQ16=1: $(grep -E 'act_f16 dq ' "$out/t_ops.log" | awk '{print "max", $5, "rms", $13, "worst", $16}' | tr '\n' ';' | cut -c1-300)"
say "dq errors DQ16=0: $(grep -E 'act_f16 dq ' "$out/t_ops_dq32.log" | awk '{print "max", $5, "rms", $13, "worst", $16}' | tr '\n' ';' | cut -c1-300)"
run_env g1 gpt2
run_env g0 gpt2 TEZGAH_WEBGPU_ATTN_DQ16=0
run_env g1b gpt2
run_env g0b gpt2 TEZGAH_WEBGPU_ATTN_DQ16=0
run_env l1 llama
run_env l0 llama TEZGAH_WEBGPU_ATTN_DQ16=0
say "losses g1 vs g0 (steps 1..10): $(paste -d/ "$out/loss_g1.txt" "$out/loss_g0.txt" | tr '\n' ' ' | cut -c1-400)"
for v in 1 0; do
  TEZGAH_WEBGPU_ATTN_DQ16=$v TEZGAH_PROFILE_SHAPES=1 train_shape "prof_dq$v" gpt2 f16 8 --profile
  say "profile gpt2 DQ16=$v: attention_bwd_dq $(row attention_bwd_dq "$out/prof_dq$v.log") attention_bwd_dkdv $(row attention_bwd_dkdv "$out/prof_dq$v.log") total $(row total "$out/prof_dq$v.log")"
done
say "TABLE: gpt2 DQ16=1 ${TPS[g1]} / ${TPS[g1b]}, DQ16=0 ${TPS[g0]} / ${TPS[g0b]} | llama DQ16=1 ${TPS[l1]}, DQ16=0 ${TPS[l0]}"
pack_logs
