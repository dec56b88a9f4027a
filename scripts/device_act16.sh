#!/usr/bin/env bash
# Issue 22 (session 21): f16 activations on WebGPU (TEZGAH_WEBGPU_ACT=f16: be->act = TZ_F16, the
# residual stream, matmul outputs, activation gradients and logits in f16) against fp32
# activations, same binary. 1. the f16-activation op tests on the real subgroup-matrix builtins
# (matmul family and attention) and the training test (llama, gpt2 against the CPU); 2. GPT-2 124M
# f16 B16 T1024 training alternating, median tokens/s of steps 6.., losses, peak memory; 3. one
# per-op profile of each; 4. the peer (PyTorch bf16 eager); the table LAST.
#   bash scripts/device_act16.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/summary.log and the logs. <= 300 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_act16 /tmp/act16_out "" "$@"
device_dawn_node
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
timeout 20 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|subgroup-matrix matmul)' | cut -c1-160 | tee -a "$sum"
for t in test_act_f16_elem test_act_f16_matmul test_act_f16_attention; do
  TZ_TEST_FILTER=$t TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 120 "$dir/bin/test_webgpu_ops" >"$out/$t.log" 2>&1
  say "test_webgpu_ops $t rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/$t.log" | tail -3 | tr '\n' ' ' | cut -c1-240)"
done
TZ_TEST_FILTER='*act16*' timeout 60 "$dir/bin/test_webgpu_train" >"$out/test_train.log" 2>&1
say "test_webgpu_train *act16* rc $?: $(grep -E 'worst|PASSED|FAILED|SKIPPED' "$out/test_train.log" | tail -4 | tr '\n' ' ' | cut -c1-240)"
declare -A TPS
run() { # NAME ACT
  rm -rf "/tmp/run_$1"
  TEZGAH_WEBGPU_ACT=$2 train_gpt2 "$1" f16 "$steps"
  TPS[$1]=$tps
  say "train $1 (ACT=$2) rc $rc: median tokens/s (steps 6..) $tps; $(grep -iE 'peak' "$out/$1.log" | tail -1 | cut -c1-100) $(grep -iE 'error' "$out/$1.log" | head -1 | cut -c1-160)"
}
run a16 f16
run a32 f32
run a16b f16
run a32b f32
rm -rf /tmp/run_o16off
TEZGAH_WEBGPU_SGMAT_O16=0 TEZGAH_WEBGPU_ACT=f16 train_gpt2 o16off f16 "$steps"
TPS[o16off]=$tps
say "train o16off (ACT=f16, TEZGAH_WEBGPU_SGMAT_O16=0: kernel n's f16 outputs through fp32 scratch) rc $rc: $tps"
maxrel=$(paste "$out/loss_a16.txt" "$out/loss_a32.txt" 2>/dev/null |
  awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')
say "losses f16 act vs fp32 act: largest relative difference $maxrel; f16: $(tr '\n' ' ' <"$out/loss_a16.txt" | cut -c1-120)"
for a in f16 f32; do
  rm -rf /tmp/run_prof_$a
  TEZGAH_WEBGPU_ACT=$a train_gpt2 "prof_$a" f16 4 --profile
  say "profile ACT=$a rc $rc: $(grep -E '^ *(matmul|attention|crossentropy|layernorm|gelu|add|bias_bwd|adamw|embed|to_f16|fa_)' "$out/prof_$a.log" | awk '{printf "%s %s; ", $1, $2}' | cut -c1-900)"
done
TORCH=nan
if [[ -f $dir/data/torch_gpt.py ]]; then
  TF32=1 timeout 40 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 8 >"$out/torch.log" 2>&1
  TORCH=$(grep -oE 'tok_s=[0-9]+' "$out/torch.log" | tail -1 | cut -d= -f2)
  say "peer PyTorch bf16 eager: $TORCH"
fi
say "TABLE: ACT=f16 ${TPS[a16]} / ${TPS[a16b]}; ACT=f32 ${TPS[a32]} / ${TPS[a32b]}; ACT=f16 O16=0 ${TPS[o16off]}; PyTorch bf16 eager $TORCH"
pack_logs
