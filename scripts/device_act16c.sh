#!/usr/bin/env bash
# Issue 22 (session 21), the session's last WebGPU call on merged main: f16 activations with the
# written-out dK/dV's 16-byte f16 stores (TEZGAH_WEBGPU_ATTN_SG_DK8, default on) against its
# one-half stores (=0), same binary. 1. the f16-activation tests and the fp32 subgroup-matrix
# attention test on the real builtins, test_webgpu_train whole; 2. `bench_webgpu attention 16 1024`
# profiled with fp32 activations, f16 with DK8=0 and =1 (ms per layer: is dK/dV slower with f16
# activations?); 3. GPT-2 124M and llama f16 B16 T1024 training, median tokens/s of steps 6..;
# 4. the peers (PyTorch bf16 eager); the table LAST.
#   bash scripts/device_act16c.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/summary.log and logs.tgz. <= 360 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_act16c /tmp/act16c_out "" "$@"
device_dawn_node
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
for t in test_act_f16_elem test_act_f16_matmul test_act_f16_attention test_attention_sgmat; do
  TZ_TEST_FILTER=$t TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 150 "$dir/bin/test_webgpu_ops" >"$out/$t.log" 2>&1
  say "test_webgpu_ops $t rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/$t.log" | tail -3 | tr '\n' ' ' | cut -c1-240)"
done
timeout 150 "$dir/bin/test_webgpu_train" >"$out/test_train.log" 2>&1
say "test_webgpu_train rc $?: $(grep -E 'PASSED|FAILED' "$out/test_train.log" | tail -2 | tr '\n' ' ' | cut -c1-240)"
for v in "f32 1" "f16 0" "f16 1"; do
  set -- $v # (split: ACT DK8)
  TEZGAH_WEBGPU_ACT=$1 TEZGAH_WEBGPU_ATTN_SG_DK8=$2 TEZGAH_PROFILE=1 timeout 60 "$dir/bin/bench_webgpu" attention 16 1024 \
    >"$out/bench_$1_$2.log" 2>&1
  say "bench attention ACT=$1 DK8=$2 rc $?: (hd fwd dkdv dq d conv sum) $(bench_rows "$out/bench_$1_$2.log" | tr '\n' ';')"
done
run_env g1 gpt2 TEZGAH_WEBGPU_ATTN_SG_DK8=1
run_env g0 gpt2 TEZGAH_WEBGPU_ATTN_SG_DK8=0
run_env g1b gpt2 TEZGAH_WEBGPU_ATTN_SG_DK8=1
run_env g0b gpt2 TEZGAH_WEBGPU_ATTN_SG_DK8=0
run_env l1 llama TEZGAH_WEBGPU_ATTN_SG_DK8=1
maxrel=$(paste "$out/loss_g1.txt" "$out/loss_g0.txt" 2>/dev/null |
  awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')
say "losses DK8=1 vs 0: largest relative difference $maxrel (expected 0: the same bytes)"
torch_peers
say "peers PyTorch bf16 eager: gpt2 $TG, llama $TL"
say "TABLE: gpt2 DK8=1 ${TPS[g1]} / ${TPS[g1b]}; DK8=0 ${TPS[g0]} / ${TPS[g0b]}; PyTorch bf16 eager $TG | llama ${TPS[l1]}; PyTorch bf16 eager $TL"
pack_logs
