#!/usr/bin/env bash
# Issue 22 (session 20): does the GPU wait for the host's recording? Dawn translates a command
# buffer to Vulkan at Submit, and the backend submitted a step's forward, backward and update
# whole (at the loss / grad-norm downloads), so the GPU idled while each part was recorded.
# TEZGAH_WEBGPU_FLUSH_EVERY=N submits after every N dispatches instead. GPT-2 124M f16 B16 T1024,
# the same binary alternating N, then the peer (PyTorch bf16 eager), then the table LAST.
#   bash scripts/device_flush20.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/summary.log and every log.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_flush20 /tmp/flush20_out "" "$@"
device_dawn_node
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
declare -A TPS
run() { # NAME N
  rm -rf "/tmp/run_$1"
  TEZGAH_WEBGPU_FLUSH_EVERY=$2 train_gpt2 "$1" f16 "$steps"
  TPS[$1]=$tps
  say "train $1 (FLUSH_EVERY=$2) rc $rc: median tokens/s (steps 6..) $tps $(grep -iE 'error' "$out/$1.log" | head -1 | cut -c1-160)"
}
timeout 20 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|subgroup-matrix matmul)' | cut -c1-160 | tee -a "$sum"
run f0 0
run f32 32
run f128 128
run f8 8
run f0b 0
run f32b 32
maxrel=$(paste "$out/loss_f0.txt" "$out/loss_f32.txt" 2>/dev/null |
  awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')
TORCH=nan
if [[ -f $dir/data/torch_gpt.py ]]; then
  TF32=1 timeout 40 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 8 >"$out/torch.log" 2>&1
  TORCH=$(grep -oE 'tok_s=[0-9]+' "$out/torch.log" | tail -1 | cut -d= -f2)
  say "peer PyTorch bf16 eager: $TORCH $(grep '^torch ' "$out/torch.log" | tail -1 | cut -c1-120)"
fi
say "losses f0 vs f32: largest relative difference $maxrel (expected 0: the same dispatches)"
say "TABLE: f0 ${TPS[f0]} / ${TPS[f0b]}; f8 ${TPS[f8]}; f32 ${TPS[f32]} / ${TPS[f32b]}; f128 ${TPS[f128]}; PyTorch bf16 eager $TORCH"
