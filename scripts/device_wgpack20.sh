#!/usr/bin/env bash
# Issue 22 (session 20): the subgroup-matrix attention's q, k, v f16 copies in one dispatch of
# eight columns a thread (fa_sg_pack.wgsl qkv8) against three single-block dispatches
# (TEZGAH_WEBGPU_ATTN_PACK8=0), same binary. 1. test_attention_sgmat on the real builtins (the
# copies feed every case; the losses below are the end-to-end check); 2. `bench_webgpu attention
# 16 1024` profiled, both settings (attention_to_f16 and the kernels, ms per layer, head_dim 64
# and 128); 3. GPT-2 124M f16 B16 T1024 training alternating, median tokens/s of steps 6.. and the
# losses (expected bit for bit the same); 4. the table LAST.
#   bash scripts/device_wgpack20.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/summary.log and the logs. <= 150 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_wgpack20 /tmp/wgpack20_out "" "$@"
device_dawn_node
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
TZ_TEST_FILTER=test_attention_sgmat TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 100 "$dir/bin/test_webgpu_ops" >"$out/test_sgmat.log" 2>&1
rc_t=$?
say "test_attention_sgmat rc $rc_t: $(grep -c '^attention_sgmat B' "$out/test_sgmat.log") cases; $(grep -E 'PASSED|FAILED|SKIPPED' "$out/test_sgmat.log" | tail -2 | tr '\n' ' ' | cut -c1-200)"
for p8 in 1 0; do
  TEZGAH_WEBGPU_ATTN_PACK8=$p8 TEZGAH_PROFILE=1 timeout 40 "$dir/bin/bench_webgpu" attention 16 1024 >"$out/bench_p$p8.log" 2>&1
  say "bench attention PACK8=$p8 rc $?: (hd fwd dkdv dq d conv sum) $(bench_rows "$out/bench_p$p8.log" | tr '\n' ';')"
done
declare -A TPS
run() { # NAME PACK8
  rm -rf "/tmp/run_$1"
  TEZGAH_WEBGPU_ATTN_PACK8=$2 train_gpt2 "$1" f16 "$steps"
  TPS[$1]=$tps
  say "train $1 (PACK8=$2) rc $rc: median tokens/s (steps 6..) $tps $(grep -iE 'error' "$out/$1.log" | head -1 | cut -c1-160)"
}
run p1 1
run p0 0
run p1b 1
run p0b 0
maxrel=$(paste "$out/loss_p1.txt" "$out/loss_p0.txt" 2>/dev/null |
  awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')
say "losses PACK8=1 vs 0: largest relative difference $maxrel (expected 0)"
say "TABLE: PACK8=1 ${TPS[p1]} / ${TPS[p1b]}; PACK8=0 ${TPS[p0]} / ${TPS[p0b]}"
