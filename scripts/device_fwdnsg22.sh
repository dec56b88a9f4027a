#!/usr/bin/env bash
# Issue 22 (session 22): the written-out subgroup-matrix attention forward with fewer subgroups
# per workgroup and more keys per tile (TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=1|2|4,
# TEZGAH_WEBGPU_ATTN_SG_FWD_BCM=1|2|4: BC = 16·NSG·BCM keys per tile): `bench_webgpu attention 16
# 1024` profiled per variant (ms per layer), the subgroup-matrix attention test on the real
# builtins for the new shapes, GPT-2 124M f16 training with the best. bash scripts/device_fwdnsg22.sh DIR.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_fwdnsg22 /tmp/fwdnsg22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
for v in "2 1" "1 1" "1 2" "1 4" "2 2" "2 4" "4 1"; do
  set -- $v
  TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=$1 TEZGAH_WEBGPU_ATTN_SG_FWD_BCM=$2 TEZGAH_PROFILE=1 timeout 60 "$dir/bin/bench_webgpu" \
    attention 16 1024 >"$out/bench_$1_$2.log" 2>&1
  say "bench NSG=$1 BCM=$2 rc $?: (hd fwd dkdv dq d conv sum) $(bench_rows "$out/bench_$1_$2.log" | tr '\n' ';')"
done
for v in "1 1" "1 2" "1 4" "2 2"; do
  set -- $v
  TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=$1 TEZGAH_WEBGPU_ATTN_SG_FWD_BCM=$2 TZ_TEST_FILTER=test_attention_sgmat \
    TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 100 "$dir/bin/test_webgpu_ops" >"$out/t_$1_$2.log" 2>&1
  say "test_attention_sgmat NSG=$1 BCM=$2 rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/t_$1_$2.log" | tail -3 | tr '\n' ' ' | cut -c1-200)"
done
pack_logs
