#!/usr/bin/env bash
# f16 matmul inputs on the GPU machine (branch f16act, issue 22 item 2), one lean device call:
#  1. test_webgpu_ops' test_act16 (the f16 producers and consumers vs the CPU; on the H200 its
#     act16_sg_chain takes the subgroup-matrix kernel: the weight mirror as b, dY's f16 copy
#     reused by matmul_at and refreshed after an upload) and test_matmul_sgmat;
#  2. GPT-2 124M, B 16, T 1024, `tezgah train --backend webgpu --precision f16`: this branch's
#     default (f16 matmul inputs, the weight mirror as the subgroup-matrix kernel's W, reused dY
#     copies, f16 gradient copies from crossentropy, the norms' and GeLU's backward) and, in the
#     same binary, main's data flow
#     (TEZGAH_WEBGPU_ACT16=0 TEZGAH_WEBGPU_SG_REUSE=0: fp32 activations, every operand converted on
#     every call), STEPS steps each, tokens/s (median of steps 6..) and the losses side by side;
#     then a --profile run of each (to_f16 rows: calls and ms/step).
#   bash scripts/device_webgpu_f16act.sh DIR   (run tool, carry [DIR, ".gl"]; DIR as for
#   scripts/device_webgpu_sgint.sh: bin/ (tezgah, test_webgpu_ops, libtz_napi_stub.so), lib/,
#   dawn/dawn.node.xz, data/train.bin). Writes $OUT/summary.log (the result lines, as on stdout)
#   and one log per run; about 3 minutes warm. The prologue, dawn.node and the training run:
#   scripts/device_webgpu_env.sh (device_start, device_dawn_node, train_gpt2).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_f16act /tmp/f16act_out "" "$@"
device_dawn_node
timeout 60 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix)'
TZ_TEST_FILTER='test_act16,test_matmul_sgmat' timeout 120 "$dir/bin/test_webgpu_ops" 2>&1 |
  grep -E 'webgpu \(f16|test_matmul_sgmat:|OK|FAIL|PASS|SKIP|error|act16' | head -30
say "test_webgpu_ops act16 + sgmat rc ${PIPESTATUS[0]}"
steps=${STEPS:-15}
train() { # NAME STEPS EXTRA...: train_gpt2 (device_webgpu_env.sh) at f16 and its result line
  train_gpt2 "$1" f16 "${@:2}"
  say "train $1 rc $rc: median tokens/s (steps 6..) $tps; $(grep -iE 'error|precision' "$out/$1.log" | head -2 | tr '\n' '|')"
}
train act16 "$steps"
TEZGAH_WEBGPU_ACT16=0 TEZGAH_WEBGPU_SG_REUSE=0 train main "$steps"
say "losses per step: this branch vs main's data flow (both --precision f16, subgroup matrices)"
paste "$out/loss_act16.txt" "$out/loss_main.txt" | awk '{printf "  step %2d  f16act %.5f  main %.5f  diff %+.5f\n", NR, $1, $2, $1 - $2}'
train act16_prof 6 --profile
sed -n '/ms\/step/,$p' "$out/act16_prof.log" | head -45
if ((SECONDS < ${LIM_PROF:-240})); then
  TEZGAH_WEBGPU_ACT16=0 TEZGAH_WEBGPU_SG_REUSE=0 train main_prof 6 --profile
  sed -n '/ms\/step/,$p' "$out/main_prof.log" | grep -E 'ms/step|to_f16|sgmat|total' | head -12
fi
say "end"
