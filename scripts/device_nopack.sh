#!/usr/bin/env bash
# Issue 22: the subgroup-matrix attention without the f16 packs (TEZGAH_WEBGPU_ATTN_NOPACK=1, the
# default: with f16 activations and T a multiple of 64 the written-out kernels read q, k, v in the
# qkv and dO in dout; webgpu_ops_attn_sg.c sg_nopack) against the packs (=0), same binary.
# 1. the f16-attention tests (test_act_f16_attention: its T 128 case must take the no-pack path;
# test_act_f16_attention_nopack: NOPACK 0 vs 1 bit for bit) and test_attention_sgmat on the real
# builtins; 2. `bench_webgpu attention 16 1024` profiled with f16 activations, NOPACK=0 and =1
# (attention_to_f16 should vanish, attention_bwd_d shrink); 3. GPT-2 124M and llama f16 B16 T1024
# training, alternating, median tokens/s of steps 6.., and the losses (expected the same bits);
# the table LAST.
#   bash scripts/device_nopack.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/summary.log and logs.tgz. <= 360 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_nopack /tmp/nopack_out "" "$@"
device_dawn_node
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
for t in test_act_f16_attention test_act_f16_attention_nopack test_attention_sgmat; do
  TZ_TEST_FILTER=$t TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 150 "$dir/bin/test_webgpu_ops" >"$out/$t.log" 2>&1
  say "test_webgpu_ops $t rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error|no-pack' "$out/$t.log" | tail -4 | tr '\n' ' ' | cut -c1-300)"
done
for np in 0 1; do
  TEZGAH_WEBGPU_ACT=f16 TEZGAH_WEBGPU_ATTN_NOPACK=$np TEZGAH_PROFILE=1 timeout 60 "$dir/bin/bench_webgpu" attention 16 1024 \
    >"$out/bench_f16_np$np.log" 2>&1
  say "bench attention ACT=f16 NOPACK=$np rc $?: (hd fwd dkdv dq d conv sum) $(bench_rows "$out/bench_f16_np$np.log" | tr '\n' ';')"
done
run_env g1 gpt2 TEZGAH_WEBGPU_ATTN_NOPACK=1
run_env g0 gpt2 TEZGAH_WEBGPU_ATTN_NOPACK=0
run_env g1b gpt2 TEZGAH_WEBGPU_ATTN_NOPACK=1
run_env g0b gpt2 TEZGAH_WEBGPU_ATTN_NOPACK=0
run_env l1 llama TEZGAH_WEBGPU_ATTN_NOPACK=1
run_env l0 llama TEZGAH_WEBGPU_ATTN_NOPACK=0
for p in "g1 g0" "l1 l0"; do
  set -- $p
  maxrel=$(paste "$out/loss_$1.txt" "$out/loss_$2.txt" 2>/dev/null |
    awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')
  say "losses $1 vs $2 (NOPACK 1 vs 0): largest relative difference $maxrel (expected 0: the same bits)"
done
say "TABLE: gpt2 NOPACK=1 ${TPS[g1]} / ${TPS[g1b]}; NOPACK=0 ${TPS[g0]} / ${TPS[g0b]} | llama NOPACK=1 ${TPS[l1]}; NOPACK=0 ${TPS[l0]}"
pack_logs
