#!/usr/bin/env bash
# WebGPU flash attention in the GPT-2 124M training step on the GPU machine, one device call:
# the grid order (TEZGAH_WEBGPU_ATTN_ORDER=0, the former grid, vs 1) and the per-kernel
# variants (TEZGAH_WEBGPU_ATTN_FWD|DQ|DKDV_RG / _NT; attn_config in webgpu_ops_attn.c), read
# from the per-kernel profile (attention_fwd, attention_bwd_dq, attention_bwd_dkdv), then the
# fastest variant of each kernel together, profiled and unprofiled against the former default,
# and the PyTorch peer in the same call.
#
#   bash scripts/device_webgpu_attn_order.sh DIR   (run tool, carry [DIR, ".gl", ".wg"]; ~5-6 min)
# DIR holds portable CUDA-less test_webgpu_ops and bench_webgpu, lib/ (the shared libraries the
# machine lacks, as scripts/device_pack.sh gathers them) and
# torch_gpt.py (../shared/bench). Writes $OUT/summary.log (the result lines) and one log per
# run. Local dry run on lavapipe: DRY=1 BT="1 64" STEPS=1 bash scripts/device_webgpu_attn_order.sh DIR
# (no package unpacking, tiny shapes, no peer).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_attn_order /tmp/attn_order "" "$@"
bt=${BT:-16 1024}
steps=${STEPS:-4}
usteps=${USTEPS:-6}
tmo=90

TZ_TEST_FILTER='test_attention*' timeout "${TTMO:-200}" "$dir/test_webgpu_ops" >"$out/test.log" 2>&1
say "test_webgpu_ops test_attention*: rc $? ($(grep -c '^\[       OK' "$out/test.log") OK, $(grep -c FAILED "$out/test.log") FAILED lines)"

# one profiled run: prof (device_webgpu_env.sh) NAME VAR=VALUE...
# one unprofiled run: median step
plain() {
  local name=$1
  shift
  env "$@" timeout "${TMO:-90}" "$dir/bench_webgpu" train $bt "$usteps" >"$out/u_$name.log" 2>&1
  say "[$name unprofiled] rc $? $(grep 'median step' "$out/u_$name.log") ($*)"
}

# RG / NT of each variant name
declare -A RG=([rg2nt256]=2 [rg1nt128]=1 [rg1nt256]=1 [rg2nt128]=2)
declare -A NT=([rg2nt256]=256 [rg1nt128]=128 [rg1nt256]=256 [rg2nt128]=128)
prof old-order TEZGAH_WEBGPU_ATTN_ORDER=0
prof rg2nt256 TEZGAH_WEBGPU_ATTN_ORDER=1
prof rg1nt128 TEZGAH_WEBGPU_ATTN_RG=1 TEZGAH_WEBGPU_ATTN_NT=128
prof rg1nt256 TEZGAH_WEBGPU_ATTN_RG=1 TEZGAH_WEBGPU_ATTN_NT=256

# the fastest variant of each kernel (new order)
best() { # array name -> variant with the smallest value
  local -n a=$1
  local b="" v
  for v in rg2nt256 rg1nt128 rg1nt256 rg2nt128; do
    [[ -n ${a[$v]:-} ]] || continue
    if [[ -z $b ]] || awk -v x="${a[$v]}" -v y="${a[$b]}" 'BEGIN {exit !(x < y)}'; then b=$v; fi
  done
  echo "${b:-rg2nt256}"
}
combo_env() {
  local f q k
  f=$(best F) q=$(best Q) k=$(best K)
  echo "TEZGAH_WEBGPU_ATTN_FWD_RG=${RG[$f]} TEZGAH_WEBGPU_ATTN_FWD_NT=${NT[$f]}" \
    "TEZGAH_WEBGPU_ATTN_DQ_RG=${RG[$q]} TEZGAH_WEBGPU_ATTN_DQ_NT=${NT[$q]}" \
    "TEZGAH_WEBGPU_ATTN_DKDV_RG=${RG[$k]} TEZGAH_WEBGPU_ATTN_DKDV_NT=${NT[$k]}"
}
combo=$(combo_env)
say "fastest per kernel: $combo"
# shellcheck disable=SC2086
prof combo $combo
plain old-order TEZGAH_WEBGPU_ATTN_ORDER=0
# shellcheck disable=SC2086
plain combo $combo
plain new-default TEZGAH_WEBGPU_ATTN_ORDER=1

if [[ -z ${DRY:-} ]]; then
  TF32=0 timeout 150 python3 "$dir/torch_gpt.py" --arch gpt2 --fp32 1 --steps 12 >"$out/torch.log" 2>&1
  say "peer rc $?: $(grep '^torch' "$out/torch.log")"
fi

# extras while time is left (the call's limit is 420 s)
if ((SECONDS < 330)); then
  prof rg2nt128 TEZGAH_WEBGPU_ATTN_RG=2 TEZGAH_WEBGPU_ATTN_NT=128
  combo2=$(combo_env)
  [[ $combo2 != "$combo" ]] && say "fastest per kernel with rg2nt128: $combo2"
fi
if ((SECONDS < 360)); then prof old-order-rg1nt128 TEZGAH_WEBGPU_ATTN_ORDER=0 TEZGAH_WEBGPU_ATTN_RG=1 TEZGAH_WEBGPU_ATTN_NT=128; fi
if ((SECONDS < 380)); then prof rg2nt256-again TEZGAH_WEBGPU_ATTN_ORDER=1; fi
say "end"
