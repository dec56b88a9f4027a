#!/usr/bin/env bash
# Issue 22 (session 22), the session's last WebGPU call on merged main, the H200:
# 1. the f16-activation tests and the subgroup-matrix attention test on the real builtins
#    (test_act_f16_*: the epilogues, the llama vector kernels, the bias sums, the no-pack
#    attention), test_webgpu_train's act16 and llama cases against the CPU;
# 2. GPT-2 124M and llama f16 B16 T1024 training by default and with the session's switches off
#    (TEZGAH_WEBGPU_ATTN_NOPACK=0, _MM_RES=0, _GELU_EPI=off, _SWIGLU_EPI=0, _F16_PIECES=0,
#    _COLSUM=0; llama's "off" also ACT16_VEC=0, which turns off session 21's vector kernels
#    too), the default twice, median tokens/s of steps 6..; losses of NOPACK 1 vs 0 (the same bits);
# 3. per-shape profiles of both defaults; 4. the peers, PyTorch bf16 eager; 5. LAST, 1,500 steps
#    of GPT-2 124M on the real corpus (scripts/device_act16_valloss.sh's data and flags), the
#    default: final val loss.
#   bash scripts/device_final22.sh DIR   (carry [DIR, ".gl"]; DIR from device_pack_webgpu.sh plus
#   DIR/vl/{train,val}.bin.xz from bench/make_valloss_data.sh). <= 470 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_final22 /tmp/final22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-40}
TZ_TEST_FILTER="test_act_f16*,test_attention_sgmat" TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 150 "$dir/bin/test_webgpu_ops" \
  >"$out/t_ops.log" 2>&1
say "test_webgpu_ops act_f16*, attention_sgmat rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/t_ops.log" | tail -4 | tr '\n' ' ' | cut -c1-300)"
for f in "*act16*" "test_train_llama*"; do
  TZ_TEST_FILTER=$f timeout 90 "$dir/bin/test_webgpu_train" >"$out/t_train.log" 2>&1
  say "test_webgpu_train $f rc $?: $(grep -E 'worst|PASSED|FAILED' "$out/t_train.log" | tr '\n' ';' | cut -c1-300)"
done
off=(TEZGAH_WEBGPU_ATTN_NOPACK=0 TEZGAH_WEBGPU_MM_RES=0 TEZGAH_WEBGPU_GELU_EPI=off TEZGAH_WEBGPU_SWIGLU_EPI=0
  TEZGAH_WEBGPU_F16_PIECES=0 TEZGAH_WEBGPU_COLSUM=0)
run_env g1 gpt2
run_env g0 gpt2 "${off[@]}"
run_env gn gpt2 TEZGAH_WEBGPU_ATTN_NOPACK=0
run_env gc gpt2 TEZGAH_WEBGPU_COLSUM=0
run_env g1b gpt2
run_env l1 llama
run_env l0 llama "${off[@]}" TEZGAH_WEBGPU_ACT16_VEC=0
run_env ln llama TEZGAH_WEBGPU_ATTN_NOPACK=0
run_env l1b llama
maxrel=$(paste "$out/loss_g1.txt" "$out/loss_gn.txt" 2>/dev/null |
  awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')
say "losses gpt2 NOPACK 1 vs 0: largest relative difference $maxrel (expected 0)"
for a in gpt2 llama; do
  TEZGAH_PROFILE_SHAPES=1 train_shape "prof_$a" "$a" f16 8 --profile
  say "profile $a total $(row total "$out/prof_$a.log")"
done
torch_peers
say "TABLE: gpt2 default ${TPS[g1]} / ${TPS[g1b]}; session-22 switches off ${TPS[g0]}; NOPACK=0 ${TPS[gn]}; COLSUM=0 ${TPS[gc]}; PyTorch bf16 eager $TG | llama default ${TPS[l1]} / ${TPS[l1b]}; off (+ACT16_VEC=0) ${TPS[l0]}; NOPACK=0 ${TPS[ln]}; PyTorch bf16 eager $TL"
pack_logs
# 5. the real corpus, last (its log joins the summary only)
valloss_1500
