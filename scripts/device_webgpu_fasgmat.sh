#!/usr/bin/env bash
# Flash attention on subgroup matrices on the GPU machine (branch fasgmat, issue 22 item 4), one
# device call, about 150-200 s warm:
#  1. `tezgah info` (Dawn, adapter, ShaderF16, subgroup-matrix configurations) and the backend's
#     description line (says "attention on subgroup matrices" where the new kernels run);
#  2. test_webgpu_ops' test_attention_sgmat (TZ_TEST_FILTER): forward and every backward output of
#     the new kernels vs the CPU (head_dim 64 / 128, causal, GQA, T off the 64-row blocks, B 1-3,
#     f32 and f16 out, chunked dq sums, both grid orders), each line with its worst err/bound;
#  3. if DIR/bin/bench_webgpu exists: `bench_webgpu attention 16 1024` (fwd + bwd ms, TFLOP/s;
#     head_dim 32 (fp32 kernels in every mode), 64 and 128) with the new kernels (4 subgroups per
#     workgroup; then 2: TEZGAH_WEBGPU_ATTN_SG_NSG=2) and with TEZGAH_WEBGPU_ATTN_SGMAT=0 (fp32);
#  4. GPT-2 124M, B 16, T 1024, `tezgah train --backend webgpu --precision f16`: new kernels vs
#     TEZGAH_WEBGPU_ATTN_SGMAT=0 (the fp32 flash kernels, main's path) in the same binary, STEPS
#     steps each (tokens/s: median of steps 6..; losses side by side), then a 6-step --profile run
#     of each (and of the forward's one-pass form while time is left): the attention rows
#     (ms/step) and their sum;
#  5. a summary table.
#   bash scripts/device_webgpu_fasgmat.sh DIR   (run tool, carry [DIR, ".gl"]; DIR: bin/ (tezgah,
#   test_webgpu_ops, libtz_napi_stub.so, optionally bench_webgpu), lib/, dawn/dawn.node.xz,
#   data/train.bin; as scripts/device_webgpu_f16act.sh). Writes $OUT/ (summary.log, logs).
#   STEPS (default 12), TTMO (per train run, default 70 s), NOBENCH=1 / NOTRAIN=1 skip parts.
#   The prologue, dawn.node and the training run: scripts/device_webgpu_env.sh (device_start,
#   device_dawn_node, train_gpt2). DRY=1 runs the logic locally (lavapipe).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_fasgmat /tmp/fasgmat_out "" "$@"
device_dawn_node
timeout 60 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix)' | tee -a "$sum"

# 2. the tests
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
TZ_TEST_FILTER='test_attention_sgmat' timeout 150 $lb "$dir/bin/test_webgpu_ops" >"$out/test.log" 2>&1
trc=$?
grep -E '^webgpu:' "$out/test.log" | sed 's/^webgpu: .*; subgroup-matrix/  webgpu: ... subgroup-matrix/; s/^webgpu: .*; matmul on/  webgpu: ... matmul on/' | tee -a "$sum"
grep -vE '^webgpu:' "$out/test.log" | head -80 | tee -a "$sum"
say "test_attention_sgmat rc $trc"

# 3. the standalone attention bench (if packed)
if [[ -x $dir/bin/bench_webgpu && -z ${NOBENCH:-} ]]; then
  for mode in new onepass nsg2 old; do
    case $mode in
      old) v=TEZGAH_WEBGPU_ATTN_SGMAT=0 ;;
      onepass) v="TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1" ;; # the forward's one-pass form
      nsg2) v="TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_NSG=2" ;; # 32-row blocks, 64 threads
      *) v=TEZGAH_WEBGPU_ATTN_SGMAT=1 ;; # opt-in since the H200 run of 12:24 UTC
    esac
    # shellcheck disable=SC2086  # v: one or two assignments
    env $v timeout 60 "$dir/bin/bench_webgpu" attention 16 1024 >"$out/bench_$mode.log" 2>&1
    say "bench_webgpu attention 16 1024 [$mode] rc $?: $(grep -E '^attention' "$out/bench_$mode.log" | tr '\n' '|')"
  done
fi

# 4. GPT-2 124M training, new vs old attention
steps=${STEPS:-12}
export TTMO=${TTMO:-70}
declare -A TPS ATT
train() { # NAME STEPS EXTRA...: train_gpt2 (device_webgpu_env.sh) at f16 and its result line
  train_gpt2 "$1" f16 "${@:2}"
  TPS[$1]=$tps
  say "train $1 rc $rc: median tokens/s (steps 6..) $tps; $(grep -iE 'error|precision' "$out/$1.log" | head -2 | tr '\n' '|')"
}
# the attention rows of the last profile table in a log: label and ms/step, then their sum
att_rows() {
  sed -n '/ms\/step/,$p' "$1" | grep -E '^  (attention_|to_f16 \(attn out\)|to_f32 \(attn out\)|total)' |
    awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/) {l = $1; for (j = 2; j < i; j++) l = l " " $j;
         printf "    %-20s %8.3f ms/step  %s\n", l, $i, $(NF-1) " " $NF; if (l != "total") s += $i; break}}
         END {printf "    %-20s %8.3f ms/step\n", "attention sum", s}'
}
if [[ -z ${NOTRAIN:-} ]]; then
  TEZGAH_WEBGPU_ATTN_SGMAT=1 train new "$steps"
  TEZGAH_WEBGPU_ATTN_SGMAT=0 train old "$steps"
  say "losses per step: subgroup-matrix attention vs fp32 attention (both --precision f16)"
  paste "$out/loss_new.txt" "$out/loss_old.txt" | awk '{printf "  step %2d  new %.5f  old %.5f  diff %+.5f\n", NR, $1, $2, $1 - $2}' | tee -a "$sum"
  for mode in new old onepass; do
    if ((SECONDS < ${LIM_PROF:-175})) && [[ $mode != onepass || $SECONDS -lt ${LIM_ONEPASS:-165} ]]; then
      case $mode in
        old) TEZGAH_WEBGPU_ATTN_SGMAT=0 train "prof_$mode" 6 --profile ;;
        onepass) TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 train "prof_$mode" 6 --profile ;;
        *) TEZGAH_WEBGPU_ATTN_SGMAT=1 train "prof_$mode" 6 --profile ;;
      esac
      ATT[$mode]=$(att_rows "$out/prof_$mode.log" | tail -1 | awk '{print $3}')
      say "profile [$mode] attention rows (ms/step):"
      att_rows "$out/prof_$mode.log" | tee -a "$sum"
    fi
  done
fi
say "SUMMARY  attention ms/step (profile): new ${ATT[new]:-?} old ${ATT[old]:-?} onepass ${ATT[onepass]:-?};" \
  "tokens/s: new ${TPS[new]:-?} old ${TPS[old]:-?}; tests rc $trc"
say "end"
