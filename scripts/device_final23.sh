#!/usr/bin/env bash
# Issue 22 (session 23), the session's last WebGPU call on merged main, the H200:
# 1. the f16-activation tests and the subgroup-matrix attention test on the real builtins
#    (test_act_f16_*: the norms' vector kernels, the bias sums in the weight gradient, the D
#    pass), test_webgpu_train's act16 and llama cases against the CPU;
# 2. GPT-2 124M and llama f16 B16 T1024 training by default (twice) and with the session's
#    switches off (TEZGAH_WEBGPU_SGMAT_SPLIT_COST=1, _NORM_V8=0, _MM_DB=0, _ATTN_D_VEC=0,
#    _FILL_VEC=0), median tokens/s of steps 6..; 3. per-shape profiles of both defaults; 4. the
#    peers, PyTorch bf16 eager; 5. LAST, 1,500 steps of GPT-2 124M on the real corpus
#    (scripts/device_act16_valloss.sh's data and flags), the default: final val loss.
#   bash scripts/device_final23.sh DIR   (carry [DIR, ".gl"]; DIR from device_pack_webgpu.sh plus
#   DIR/vl/{train,val}.bin.xz from bench/make_valloss_data.sh). <= 470 s.
# Later sessions: OFF="VAR=VAL ..." (the switches that turn the session's changes off; default
# session 23's), SWITCHES ("NAME VAR=VAL ..." lines: GPT-2 runs with one change off each; default
# "mmdb TEZGAH_WEBGPU_MM_DB=0") and PROFILES ("NAME ARCH VAR=VAL ..." lines: more per-shape
# profiles, e.g. "llama_epre0 llama TEZGAH_WEBGPU_SGMAT_EPRE=0").
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_final23 /tmp/final23_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-40}
f16_tests
# shellcheck disable=SC2206  # one word a variable
off=(${OFF:-TEZGAH_WEBGPU_SGMAT_SPLIT_COST=1 TEZGAH_WEBGPU_NORM_V8=0 TEZGAH_WEBGPU_MM_DB=0 TEZGAH_WEBGPU_ATTN_D_VEC=0
  TEZGAH_WEBGPU_FILL_VEC=0})
run_env g1 gpt2
run_env g0 gpt2 "${off[@]}"
single=""
while read -r name vars; do
  [[ -n $name ]] || continue
  # shellcheck disable=SC2086  # the variables, one word each
  run_env "g_$name" gpt2 $vars
  single+="$name ${TPS[g_$name]}; "
done <<<"${SWITCHES:-mmdb TEZGAH_WEBGPU_MM_DB=0}"
run_env g1b gpt2
run_env l1 llama
run_env l0 llama "${off[@]}"
run_env l1b llama
for a in gpt2 llama; do
  TEZGAH_PROFILE_SHAPES=1 train_shape "prof_$a" "$a" f16 8 --profile
  say "profile $a total $(row total "$out/prof_$a.log")"
done
while read -r name arch vars; do
  [[ -n $name ]] || continue
  (for kv in $vars; do export "${kv?}"; done
    TEZGAH_PROFILE_SHAPES=1 train_shape "prof_$name" "$arch" f16 8 --profile)
  say "profile $name ($arch $vars) total $(row total "$out/prof_$name.log")"
done <<<"${PROFILES:-}"
torch_peers
say "TABLE: gpt2 default ${TPS[g1]} / ${TPS[g1b]}; the session's switches off ${TPS[g0]}; one off: $single; PyTorch bf16 eager $TG | llama default ${TPS[l1]} / ${TPS[l1b]}; off ${TPS[l0]}; PyTorch bf16 eager $TL"
pack_logs
# 5. the real corpus, last (its log joins the summary only)
valloss_1500
