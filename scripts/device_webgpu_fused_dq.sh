#!/usr/bin/env bash
# Fused-dq attention backward (branch fdq, TEZGAH_WEBGPU_ATTN_FUSED_DQ) on the GPU machine, one
# device call: the attention tests with the switch on (must pass), then the GPT-2 124M training
# step (B 16, T 1024) profiled with the switch off and on (per-kernel rows), unprofiled off / on,
# and variants of fa_dkdv under the switch (register pressure) while time is left.
#   bash scripts/device_webgpu_fused_dq.sh DIR   (run tool, carry [DIR, ".gl", ".wg"]; ~90 s)
# DIR holds portable CUDA-less test_webgpu_ops and bench_webgpu (stripped) and lib/ (the shared
# libraries the machine lacks, as scripts/device_pack.sh gathers them). Writes $OUT/summary.log
# (the result lines) and $OUT/logs.tgz. Measured with it: docs/PERF.md, "fused dq" (2026-12-01).
# Local dry run on lavapipe (no package unpacking; GPT-2's pipelines compile for minutes there):
#   DRY=1 BT="1 64" STEPS=1 USTEPS=2 TFILTER=test_attention_kvcache TMO=900 OUT=/tmp/x \
#     bash scripts/device_webgpu_fused_dq.sh DIR
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_fused_dq /tmp/fdq_out "" "$@"
bt=${BT:-16 1024}
steps=${STEPS:-4}
usteps=${USTEPS:-6}
tmo=60

TEZGAH_WEBGPU_ATTN_FUSED_DQ=1 TEZGAH_TEST_ATTN_VARIANTS=1 TZ_TEST_FILTER="${TFILTER:-test_attention*}" \
  timeout "${TTMO:-100}" "$dir/test_webgpu_ops" >"$out/test_fused.log" 2>&1
say "FUSED_DQ=1 test_webgpu_ops test_attention* (variants on): rc $? ($(grep -c '^\[       OK' "$out/test_fused.log") OK, $(grep -c FAILED "$out/test_fused.log") FAILED lines)"

plain() {
  local name=$1
  shift
  env "$@" timeout "${TMO:-60}" "$dir/bench_webgpu" train $bt "$usteps" >"$out/u_$name.log" 2>&1
  say "[$name unprofiled] rc $? $(grep '^step' "$out/u_$name.log" | tail -1) | $(grep 'median step' "$out/u_$name.log") ($*)"
}
prof off TEZGAH_WEBGPU_ATTN_FUSED_DQ=0
prof on TEZGAH_WEBGPU_ATTN_FUSED_DQ=1
plain on TEZGAH_WEBGPU_ATTN_FUSED_DQ=1
plain off TEZGAH_WEBGPU_ATTN_FUSED_DQ=0
if ((SECONDS < ${LIM1:-215})); then prof on-dkdv-rg1nt256 TEZGAH_WEBGPU_ATTN_FUSED_DQ=1 TEZGAH_WEBGPU_ATTN_DKDV_RG=1 TEZGAH_WEBGPU_ATTN_DKDV_NT=256; fi
if ((SECONDS < ${LIM2:-245})); then prof on-dkdv-rg1nt128 TEZGAH_WEBGPU_ATTN_FUSED_DQ=1 TEZGAH_WEBGPU_ATTN_DKDV_RG=1 TEZGAH_WEBGPU_ATTN_DKDV_NT=128; fi
say "end"
cd "$out" && tar czf logs.tgz ./*.log && rm -f p_*.log u_*.log test_fused.log
