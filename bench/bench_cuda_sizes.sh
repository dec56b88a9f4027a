#!/usr/bin/env bash
# Bigger GPT-2 shapes on one GPU (issue 24 item 3), with the PyTorch peer in the same call.
#
#   bench/bench_cuda_sizes.sh TEZGAH SHARD TORCH_GPT_PY [STEPS=12] [PRESETS="gpt2-350m gpt2-774m gpt2-1.5b"]
#
# For each `--model` preset (src/model/presets.c), B=16, T=1024, V=50257 padded to 50304:
# `tezgah train --backend cuda` (bf16) for STEPS steps with stored activations; when that run
# fails (device memory), again with --recompute (norm and GeLU outputs recomputed in the
# backward), so the row shows what fits. tokens/s = median of the per-step tok_per_s after 5
# warm-up steps; peak GPU memory from train's "device memory: N MiB peak" line. Then the peer:
# ../shared/bench/torch_gpt.py --L --d --H --B 16 --compile 1 (bf16 autocast, torch.compile,
# fused AdamW), PEER_STEPS (15) steps. MFU against 790 TFLOP/s (measured bf16 dense, PEERS.md),
# FLOPs per token as PEERS.md counts them: 6·(L·(4C² + 2C·4C) + C·V) + 12·L·C·T.
# Prints a markdown table (the per-run logs go to stderr's tail on failure).
set -uo pipefail
tz=${1:?TEZGAH} shard=${2:?SHARD} peer=${3:?TORCH_GPT_PY}
steps=${4:-12} presets=${5:-"gpt2-350m gpt2-774m gpt2-1.5b"}
peer_steps=${PEER_STEPS:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
shape() { # preset -> "L H C"
  case $1 in
    gpt2-124m) echo "12 12 768" ;; gpt2-350m) echo "24 16 1024" ;;
    gpt2-774m) echo "36 20 1280" ;; gpt2-1.5b) echo "48 25 1600" ;;
    *) echo "bench_cuda_sizes.sh: unknown preset $1" >&2; exit 2 ;;
  esac
}
ours() { # preset run-dir extra... -> "tokens/s peak_MiB" or "" on failure
  local p=$1 run=$2
  shift 2
  "$tz" train --backend cuda --model "$p" -B 16 -T 1024 --vocab-size 50257 --train-shards "$shard" \
    --val-shards "$shard" --steps "$steps" --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 \
    --run-dir "$run" "$@" >"$run.out" 2>"$run.log" </dev/null || { tail -2 "$run.log" >&2; return 1; }
  local tps mem
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/metrics.jsonl" | cut -d: -f2 | tail -n +6 | median)
  mem=$(grep -o 'device memory: [0-9.]* MiB peak' "$run.log" | grep -o '[0-9.]*' | head -1)
  echo "$tps ${mem:-?}"
}
rows=()
for p in $presets; do
  read -r L H C <<<"$(shape "$p")"
  how="stored activations"
  r=$(ours "$p" "$work/$p") || { how="--recompute"; r=$(ours "$p" "$work/$p-rc" --recompute) || r="nan ?"; }
  read -r tps mem <<<"$r"
  echo "ours $p ($how): $tps tokens/s, peak $mem MiB" >&2
  pout=$(python3 "$peer" --arch gpt2 --L "$L" --d "$C" --H "$H" --B 16 --T 1024 --compile 1 --steps "$peer_steps" 2>&1 | tail -3)
  echo "peer $p: $pout" >&2
  ptps=$(grep -o 'tok_s=[0-9.]*' <<<"$pout" | cut -d= -f2 | head -1)
  pmem=$(grep -o 'peak_mem_GB=[0-9.]*' <<<"$pout" | cut -d= -f2 | head -1)
  fpt=$((6 * (L * 12 * C * C + C * 50304) + 12 * L * C * 1024))
  rows+=("$(awk -v p="$p" -v h="$how" -v t="$tps" -v q="${ptps:-nan}" -v f=$fpt -v m="$mem" -v pm="${pmem:-?}" 'BEGIN {
    printf "| %s | %s | %.0f | %.1f | %s | %.2fx | %.1f%% | %s MiB | %s GB |", p, h, t, 1000 * 16384 / t, q,
      (q + 0 > 0 ? t / q : 0), 100 * t * f / 790e12, m, pm }')")
done
echo "| model (B16 T1024, bf16) | activations | tezgah tokens/s | ms/step | PyTorch compile bf16 tokens/s | ratio | MFU | tezgah peak | PyTorch peak |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
