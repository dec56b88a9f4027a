#!/usr/bin/env bash
# GPU training throughput through the CLI, with the PyTorch peer in the same call (GPU machine).
#
#   bench/bench_cuda.sh TEZGAH SHARD TORCH_GPT_PY [STEPS] [ARCHS]
#   TEZGAH_BENCH_BACKEND=webgpu bench/bench_cuda.sh ...   the WebGPU backend (fp32) instead
#
# cuda (default): bf16 mixed precision against the peer's bf16 autocast + torch.compile, MFU
# against 790 TFLOP/s (measured bf16 dense, PEERS.md). webgpu: fp32 against the peer's strict
# fp32 (TF32=0, --fp32 1), MFU against 66.9 TFLOP/s (H200 fp32 FMA: 132 SMs x 128 lanes x 2 x
# 1.98 GHz; issue 10), STEPS default 12.
#
# TEZGAH: the tezgah binary; SHARD: an llm.c GPT-2 token shard (e.g. tiny_shakespeare_train.bin);
# TORCH_GPT_PY: ../shared/bench/torch_gpt.py (bf16 autocast + torch.compile); STEPS (30), for
# the peer too; ARCHS ("gpt2 llama"), each one of gpt2, llama (12 layers, 12 heads, C=768: GPT-2
# 124M's shape; llama: RMSNorm, RoPE, SwiGLU d_ff 2048, no biases) and GPT-2's bigger shapes
# gpt2-350m (L24 C1024 H16), gpt2-774m (L36 C1280 H20), gpt2-1.5b (L48 C1600 H25): `train
# --model NAME`'s presets, the peer at the same --L --d --H. Workload (docs/PERF.md, PEERS.md):
# V=50257 padded to 50304, T=1024, B=16.
# For each arch: `tezgah train --backend cuda` for STEPS steps (no validation, checkpoint only at
# the end), tokens/s = median of the per-step tok_per_s in metrics.jsonl after 5 warm-up steps;
# then the peer. TEZGAH_BENCH_PROFILE=1 adds `--profile` runs (per-op table on stderr).
# Prints a table: tokens/s, ms/step, ratio to PyTorch, MFU (FLOPs/token as PEERS.md counts
# them, against 790 TFLOP/s measured bf16 dense), peak GPU memory.
set -euo pipefail
be=${TEZGAH_BENCH_BACKEND:-cuda}
case $be in
  cuda) peak=790e12 psteps=30 peer_env=() peer_args=(--compile 1) plabel="PyTorch compile bf16" ;;
  webgpu) peak=66.9e12 psteps=12 peer_env=(TF32=0) peer_args=(--compile 1 --fp32 1) plabel="PyTorch strict fp32" ;;
  *) echo "bench_cuda.sh: TEZGAH_BENCH_BACKEND=$be: want cuda or webgpu" >&2; exit 2 ;;
esac
tz=$1 shard=$2 peer=$3 steps=${4:-$psteps} archs=${5:-"gpt2 llama"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
T=1024 B=16 V=50304

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }

rows=()
for arch in $archs; do
  case $arch in
    gpt2 | llama) L=12 C=768 H=12 ;;
    gpt2-350m) L=24 C=1024 H=16 ;;
    gpt2-774m) L=36 C=1280 H=20 ;;
    gpt2-1.5b) L=48 C=1600 H=25 ;;
    *) echo "bench_cuda.sh: ARCHS: '$arch' is not gpt2, llama, gpt2-350m, gpt2-774m or gpt2-1.5b" >&2; exit 2 ;;
  esac
  ff=$((4 * C)) extra=(--arch gpt2) parch=gpt2
  [[ $arch == llama ]] && ff=2048 extra=(--arch llama --d-ff 2048) parch=llama
  run=$work/$arch
  log=$work/$arch.log
  "$tz" train --backend "$be" "${extra[@]}" --n-layer $L --n-head $H --d-model $C --max-seq-len $T \
    -B $B -T $T --vocab-size 50257 --train-shards "$shard" --val-shards "$shard" --steps "$steps" --val-every 0 \
    --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir "$run" 2> "$log" >/dev/null || { cat "$log"; exit 1; }
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/metrics.jsonl" | cut -d: -f2 | tail -n +6 | median)
  mem=$(grep -o 'device memory: [0-9.]* MiB peak' "$log" | grep -o '[0-9.]*' | head -1 || true)
  if [[ ${TEZGAH_BENCH_PROFILE:-0} == 1 ]]; then
    "$tz" train --backend "$be" "${extra[@]}" --n-layer $L --n-head $H --d-model $C --max-seq-len $T \
      -B $B -T $T --vocab-size 50257 --train-shards "$shard" --val-shards "$shard" --steps 8 --val-every 0 --ckpt-every 0 \
      --sample-tokens 0 --run-dir "$run-prof" --profile 2>&1 >/dev/null | sed -n '/ms\/step/,$p' >&2 || true
  fi
  peer_out=$(env "${peer_env[@]}" python3 "$peer" --arch $parch --L $L --d $C --H $H --steps "$steps" "${peer_args[@]}" 2>&1 |
    tail -5)
  ptps=$(grep -o 'tok_s=[0-9.]*' <<<"$peer_out" | cut -d= -f2 | head -1 || true)
  pmem=$(grep -o 'peak_mem_GB=[0-9.]*' <<<"$peer_out" | cut -d= -f2 | head -1 || true)
  [[ -n $pmem ]] && pmem="$pmem GB"
  # FLOPs per token (PEERS.md, torch_gpt.py): 6·(non-embedding matmul params + C·V) + 12·L·C·T
  nonemb=$((L * (4 * C * C + 2 * C * ff)))
  [[ $arch == llama ]] && nonemb=$((L * (4 * C * C + 3 * C * ff)))
  fpt=$((6 * (nonemb + C * V) + 12 * L * C * T))
  rows+=("$(awk -v a=$arch -v t="$tps" -v p="${ptps:-nan}" -v f=$fpt -v m="${mem:-?}" -v pm="${pmem:-?}" -v pk=$peak 'BEGIN {
    printf "| %s | %.0f | %.1f | %s | %.2fx | %.1f%% | %s MiB | %s |", a, t, 1000 * 16 * 1024 / t, p,
      (p + 0 > 0 ? t / p : 0), 100 * t * f / pk, m, pm }')")
  echo "peer ($arch): $peer_out" >&2
done
echo "| arch ($be) | tezgah tokens/s | ms/step | $plabel tokens/s | ratio | MFU | tezgah peak GPU memory | PyTorch memory |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
