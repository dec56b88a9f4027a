#!/usr/bin/env bash
# Issue 22 (session 23), A/B on the H200 of the session's WebGPU changes:
# 1. the f16-activation tests and the subgroup-matrix attention test on the real builtins,
#    test_webgpu_train's act16 and llama cases against the CPU;
# 2. GPT-2 124M and llama f16 B16 T1024 training: the default (twice), each switch of the
#    session off on its own (SWITCHES: "NAME VAR=VALUE ..." lines, below), all off; median
#    tokens/s of steps 6..; 3. per-shape profiles of both defaults.
#   bash scripts/device_ab23.sh DIR   (carry [DIR, ".gl"]; DIR from device_pack_webgpu.sh). <= 420 s.
# Optional: TESTS=0 (no part 1), ARCHS="gpt2" (the shapes of part 2; default both), PROFILE=0 (no
# part 3), ALLOFF=0 (no all-off run: switches that are settings, not changes to turn off), steps=N
# (steps per run; 10 by default), PEERS=1 (PyTorch bf16 eager on both shapes after the runs, in the
# same call: torch_peers), PROF_SWITCHES (lines as SWITCHES: a llama profile under each).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_ab23 /tmp/ab23_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-40}
[[ ${TESTS:-1} == 0 ]] || f16_tests
# the session's switches, one line each: a name, then the variables that turn the change off
SWITCHES=${SWITCHES:-"split TEZGAH_WEBGPU_SGMAT_SPLIT_COST=1"}
all=()
while read -r name vars; do
  # shellcheck disable=SC2206  # the variables, one word each
  [[ -n $name ]] && all+=($vars)
done <<<"$SWITCHES"
for arch in ${ARCHS:-gpt2 llama}; do
  p=${arch:0:1}
  while read -r name vars; do
    [[ -n $name ]] || continue
    # shellcheck disable=SC2086  # the variables, one word each
    run_env "${p}_$name" "$arch" $vars
  done <<<"$SWITCHES"
  run_env "${p}1" "$arch"
  [[ ${ALLOFF:-1} == 0 ]] || run_env "${p}0" "$arch" "${all[@]}"
  run_env "${p}1b" "$arch"
done
[[ ${PROFILE:-1} == 0 ]] ||
for a in gpt2 llama; do
  TEZGAH_PROFILE_SHAPES=1 train_shape "prof_$a" "$a" f16 8 --profile
  say "profile $a total $(row total "$out/prof_$a.log")"
done
# PROF_SWITCHES ("NAME VAR=VALUE ..." lines): llama profiles under each set, for the kernels' times
while read -r name vars; do
  [[ -n $name ]] || continue
  # shellcheck disable=SC2086  # the variables, one word each
  (for kv in $vars; do export "${kv?}"; done
   TEZGAH_PROFILE_SHAPES=1 train_shape "prof_l_$name" llama f16 8 --profile)
  f=$out/prof_l_$name.log
  say "profile llama [$vars] total $(row total "$f"); attention_fwd $(row attention_fwd "$f"); crossentropy $(row crossentropy "$f"); swiglu_bwd $(row swiglu_bwd "$f")"
done <<<"${PROF_SWITCHES:-}"
[[ ${PEERS:-0} == 0 ]] || { torch_peers; say "PyTorch bf16 eager: gpt2 $TG, llama $TL"; }
say "TABLE gpt2: default ${TPS[g1]:-} / ${TPS[g1b]:-}; all off ${TPS[g0]:-}; $(for k in "${!TPS[@]}"; do [[ $k == g_* ]] && printf '%s %s; ' "${k#g_}" "${TPS[$k]}"; done)"
say "TABLE llama: default ${TPS[l1]:-} / ${TPS[l1b]:-}; all off ${TPS[l0]:-}; $(for k in "${!TPS[@]}"; do [[ $k == l_* ]] && printf '%s %s; ' "${k#l_}" "${TPS[$k]}"; done)"
pack_logs
