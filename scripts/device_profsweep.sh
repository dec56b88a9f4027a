#!/usr/bin/env bash
# Issue 22: per-kernel GPU profiles of GPT-2 124M (or llama, ARCH=llama) f16 B16 T1024 training on
# the H200, one run per setting, for settings that the A/B's tokens/s cannot tell apart: each
# SWITCHES line "NAME VAR=VALUE ..." gives a profiled run of 8 steps (TEZGAH_PROFILE_SHAPES=1,
# --profile) with those variables, plus one of the defaults ("default"); a result line per run:
# its profile's total ms/step and the rows whose text matches ROWS (an awk regex, e.g. "x768 |layernorm").
#   SWITCHES=$'bk32 TEZGAH_WEBGPU_SGMAT_TILE_SHORTK=n:32:2x4:4x2:vpgP264' ROWS='^matmul' \
#     bash scripts/device_profsweep.sh DIR      (carry [DIR, ".gl"]; DIR from device_pack_webgpu.sh)
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_profsweep /tmp/profsweep_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-40}
ROWS=${ROWS:-.}
# profile NAME VAR=VALUE...: a profiled run with the variables set for it only
profile() {
  local name=$1 kv
  rm -rf "/tmp/run_p_$name"
  shift
  for kv in "$@"; do export "${kv?}"; done
  TEZGAH_PROFILE_SHAPES=1 train_shape "p_$name" "${ARCH:-gpt2}" f16 8 --profile
  for kv in "$@"; do unset "${kv%%=*}"; done
  say "[$name] rc $rc total $(row total "$out/p_$name.log") | $(sed -n '/kernel *ms\/step/,/total/p' "$out/p_$name.log" |
    awk -v r="$ROWS" '$1 != "kernel" && $1 != "total" && $0 ~ r {n = $0; sub(/ +[0-9.]+ +[0-9]+ +[0-9.]+%.*/, "", n);
      sub(/^ +/, "", n); for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $(i+1) ~ /^[0-9]+$/) {printf "%s %s; ", n, $i; break}}')"
}
profile default
while read -r name vars; do
  [[ -n $name ]] || continue
  # shellcheck disable=SC2086  # the variables, one word each
  profile "$name" $vars
done <<<"${SWITCHES:-}"
pack_logs
