#!/usr/bin/env bash
# Data-parallel CUDA throughput: GPT-2 124M, B=16 T=1024 per GPU, bf16, through the CLI on 1 and
# N GPUs (train --nproc N: NCCL), with the PyTorch DDP peer (bench/torch_ddp.py under torchrun:
# DDP + bf16 autocast + torch.compile) in the same call (GPU machine, docs/PERF.md).
#
#   bench/bench_dist.sh TEZGAH SHARD [STEPS] ["1 2"] [PEER]
#
# TEZGAH: the tezgah binary (NCCL through TEZGAH_NCCL_LIB or libnccl.so.2); SHARD: an llm.c GPT-2
# token shard (e.g. tiny_shakespeare_train.bin); STEPS (30); the GPU counts ("1 2"); PEER:
# bench/torch_ddp.py, or /dev/null for none. NCCL_NVLS_ENABLE=0 stays set (the lent machines'
# NVLink multicast is off). tokens/s = median of the per-step tok_per_s in metrics.jsonl after 5
# warm-up steps (all ranks' tokens); efficiency = tokens/s on N GPUs / (N · tokens/s on 1).
# The N-GPU runs are repeated with --zero 1. Prints a markdown table.
set -uo pipefail
tz=$1 shard=$2 steps=${3:-30} counts=${4:-"1 2"} peer=${5:-/dev/null}
export NCCL_NVLS_ENABLE=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }

declare -A tps
rows=()
for n in $counts; do
  for zero in 0 1; do
    ((n == 1 && zero == 1)) && continue
    run=$work/tz-$n-$zero log=$work/tz-$n-$zero.log
    launch=()
    ((n > 1)) && launch=(--nproc "$n" --zero "$zero")
    if ! timeout 150 "$tz" train --backend cuda --arch gpt2 --n-layer 12 --n-head 12 --d-model 768 --max-seq-len 1024 \
      -B 16 -T 1024 --vocab-size 50257 --train-shards "$shard" --steps "$steps" --val-every 0 --ckpt-every 0 \
      --sample-tokens 0 --log-every 10 "${launch[@]}" --run-dir "$run" >/dev/null 2>"$log"; then
      echo "tezgah on $n GPU(s), zero $zero failed:" >&2
      tail -5 "$log" >&2
      continue
    fi
    t=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/metrics.jsonl" | cut -d: -f2 | tail -n +6 | median)
    tps[$n-$zero]=$t
    mem=$(grep -o 'peak memory per rank.*' "$log" | sed 's/peak memory per rank (MiB, host \/ cuda): //')
    [[ -n $mem ]] || mem="0: $(grep -o 'cuda device memory: [0-9.]* MiB peak' "$log" | grep -o '[0-9.]*' | head -1) (device)"
    eff=$(awk -v t="$t" -v one="${tps[1-0]:-0}" -v n=$n 'BEGIN { if (one > 0) printf "%.1f%%", 100 * t / (n * one); else print "-" }')
    rows+=("| tezgah$([[ $zero == 1 ]] && echo ' --zero 1') | $n | $(printf '%.0f' "$t") | $eff | host/device MiB per rank: $mem |")
    cp "$log" "${OUT:-$work}/bench_dist_tz_${n}_${zero}.log" 2>/dev/null || true
  done
  if [[ $peer != /dev/null ]]; then
    plog=$work/ddp-$n.log
    timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node "$n" "$peer" --steps "$steps" >"$plog" 2>&1
    p=$(grep -o 'tok_s=[0-9.]*' "$plog" | cut -d= -f2 | head -1)
    pm=$(grep -o 'peak_mem_GB=[0-9.]*' "$plog" | cut -d= -f2 | head -1)
    [[ -n $p ]] || { echo "torch DDP on $n GPU(s) failed:" >&2; tail -5 "$plog" >&2; }
    tps[ddp-$n]=${p:-0}
    eff=$(awk -v t="${p:-0}" -v one="${tps[ddp-1]:-0}" -v n=$n 'BEGIN { if (one > 0 && t > 0) printf "%.1f%%", 100 * t / (n * one); else print "-" }')
    rows+=("| PyTorch DDP compile bf16 | $n | ${p:-failed} | $eff | ${pm:-?} GB per rank (max_memory_allocated) |")
    echo "peer ($n GPUs): $(grep -m1 '^ddp' "$plog")" >&2
    cp "$plog" "${OUT:-$work}/bench_dist_ddp_$n.log" 2>/dev/null || true
  fi
done
echo "| engine | GPUs | tokens/s (all GPUs) | scaling efficiency vs 1 GPU | peak memory |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
for n in $counts; do
  [[ -n ${tps[$n-0]:-} && -n ${tps[ddp-$n]:-} && ${tps[ddp-$n]} != 0 ]] &&
    awk -v a="${tps[$n-0]}" -v b="${tps[ddp-$n]}" -v n=$n 'BEGIN { printf "tezgah / PyTorch DDP on %d GPU(s): %.2fx\n", n, a / b }'
done
