#!/usr/bin/env bash
# The subgroup-matrix matmul inside the WebGPU training backend on the GPU machine (branch
# sgint, issue 22 item 3), one device call, peers in the same call:
#  1. `tezgah info` under the node Dawn (dawn.node); test_webgpu_ops' matmul tests
#     (TZ_TEST_FILTER=test_matmul*: test_matmul_sgmat takes the subgroup-matrix kernel there with
#     the f16 bound 1e-3·Σ|a·b|) and test_webgpu_train (f16 and fp32 vs the CPU);
#  2. GPT-2 124M, B 16, T 1024: `tezgah train --backend webgpu --precision f16` (the matmul
#     family on subgroup matrices) and `--precision fp32`, STEPS steps each, tokens/s (median of
#     steps 6..) and the losses of every step side by side; then a short --profile run of each;
#  3. the PyTorch peer (torch_gpt.py): bf16 eager (`--compile 0`) and strict fp32
#     (`TF32=0 --compile 1 --fp32 1`), B 16, T 1024.
#   bash scripts/device_webgpu_sgint.sh DIR     (run tool, carry [DIR, ".gl"]; DIR holds bin/
#   (tezgah, test_webgpu_ops, test_webgpu_train, libtz_napi_stub.so), lib/, dawn/dawn.node.xz,
#   data/train.bin (a GPT-2 token shard) and data/torch_gpt.py). Writes $OUT/summary.log
#   (the result lines, as on stdout) and one log per run. The prologue, dawn.node and the training
#   run: scripts/device_webgpu_env.sh (device_start, device_dawn_node, train_gpt2).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_sgint /tmp/sgint_out "" "$@"
device_dawn_node
timeout 60 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix)'
TZ_TEST_FILTER='test_matmul*' timeout 150 "$dir/bin/test_webgpu_ops" 2>&1 | grep -E 'test_matmul_sgmat:|OK|FAIL|PASS|SKIP|error|matmul kind' | head -30
say "test_webgpu_ops matmul rc ${PIPESTATUS[0]}"
steps=${STEPS:-20}
train() { # NAME PRECISION STEPS EXTRA...: train_gpt2 (device_webgpu_env.sh) and its result line
  train_gpt2 "$@"
  say "train $1 rc $rc: median tokens/s (steps 6..) $tps; $(grep -iE 'error|precision|matmul on|subgroup' "$out/$1.log" | head -3 | tr '\n' '|')"
}
train f16 f16 "$steps"
if ! grep -q . "$out/loss_f16.txt"; then # the subgroup-matrix path failed: the f16 mirror alone, for the record
  tail -5 "$out/f16.log"
  TEZGAH_WEBGPU_SGMAT=0 train f16_nosg f16 "$steps"
fi
train fp32 fp32 "$steps"
say "losses per step: f16 (dynamic loss scaling: loss_scale in metrics.jsonl) vs fp32"
paste "$out/loss_f16.txt" "$out/loss_fp32.txt" | awk '{printf "  step %2d  f16 %.5f  fp32 %.5f  diff %+.5f\n", NR, $1, $2, $1 - $2}'
train f16_prof f16 6 --profile
sed -n '/ms\/step/,$p' "$out/f16_prof.log" | head -40
say "peer: PyTorch bf16 eager"
TF32=1 timeout 150 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 20 2>&1 | tail -3
say "peer: PyTorch strict fp32 (TF32=0, compile)"
TF32=0 timeout 200 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 1 --fp32 1 --steps 12 2>&1 | tail -3
if ((SECONDS < ${LIM_TRAIN:-330})); then
  timeout 60 "$dir/bin/test_webgpu_train" 2>&1 | grep -E 'OK|FAIL|PASS|SKIP|loss|error' | head -20
  say "test_webgpu_train rc ${PIPESTATUS[0]}"
fi
if ((SECONDS < ${LIM_PROF:-360})); then
  train fp32_prof fp32 6 --profile
  sed -n '/ms\/step/,$p' "$out/fp32_prof.log" | head -40
fi
say "end"
