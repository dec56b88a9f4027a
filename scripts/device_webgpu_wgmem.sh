#!/usr/bin/env bash
# The WebGPU f16 training step's memory-bound ops on the GPU machine (branch wgmem, issue 22),
# one device call, about 150 s warm (limit 180 s):
#  1. test_webgpu_ops' cases for the changed kernels against the CPU backend: test_norms
#     (layernorm_fwd4 / _bwd4, the one-dispatch colsum of dw and db), test_crossentropy*
#     (softmax_xent_online), test_matmul (bias_bwd: colsum_partial's four sums, colsum_rows8),
#     test_act16 (the f16 outputs / gradient copies of the same ops), test_activations and
#     test_memory_ops (gelu_fwd4 / ffn_gelu_backward4, add4);
#  2. GPT-2 124M, B 16, T 1024, `tezgah train --backend webgpu --precision f16`, STEPS (10)
#     steps: this branch's kernels and, in the same binary, the former ones
#     (TEZGAH_WEBGPU_MEMOPS=0): tokens/s (median of steps 6..) and the losses side by side;
#  3. a 6-step --profile run of each: the new run's whole table, the old run's changed rows
#     (crossentropy, layernorm_*, colsum_add, bias_bwd, gelu_*, add) and total.
#   bash scripts/device_webgpu_wgmem.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   scripts/device_pack_webgpu.sh DIR: bin/ (tezgah, test_webgpu_ops, libtz_napi_stub.so), lib/,
#   dawn/dawn.node.xz, data/train.bin). Writes $OUT/summary.log (the result lines, as on
#   stdout) and one log per run. Prologue, dawn.node, the training run: scripts/device_webgpu_env.sh.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_wgmem /tmp/wgmem_out "" "$@"
device_dawn_node
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix)'
TZ_TEST_FILTER='test_norms,test_crossentropy*,test_matmul,test_act16,test_activations,test_memory_ops' timeout 90 \
  "$dir/bin/test_webgpu_ops" >"$out/ops.log" 2>&1
orc=$?
grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) |error|FAIL' "$out/ops.log" | head -20
say "test_webgpu_ops norms/crossentropy/matmul/act16/activations/memory_ops rc $orc"
steps=${STEPS:-10}
export TTMO=${TTMO:-60}
train() { # NAME STEPS EXTRA...: train_gpt2 (device_webgpu_env.sh) at f16 and its result line
  train_gpt2 "$1" f16 "${@:2}"
  say "train $1 rc $rc: median tokens/s (steps 6..) $tps; $(grep -iE 'error' "$out/$1.log" | head -2 | tr '\n' '|')"
}
train new "$steps"
TEZGAH_WEBGPU_MEMOPS=0 train old "$steps"
say "losses per step: new kernels vs TEZGAH_WEBGPU_MEMOPS=0"
paste "$out/loss_new.txt" "$out/loss_old.txt" | awk '{printf "  step %2d  new %.5f  old %.5f  diff %+.5f\n", NR, $1, $2, $1 - $2}'
train new_prof 6 --profile
sed -n '/ms\/step/,$p' "$out/new_prof.log" | head -45
if ((SECONDS < ${LIM_PROF:-130})); then
  TEZGAH_WEBGPU_MEMOPS=0 train old_prof 6 --profile
  sed -n '/ms\/step/,$p' "$out/old_prof.log" | grep -E 'ms/step|crossentropy|layernorm|colsum|bias_bwd|gelu|^ *add |total' | head -14
fi
say "end ${SECONDS}s"
