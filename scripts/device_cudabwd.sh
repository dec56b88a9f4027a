#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24, the CUDA attention backward with dQ from a stored dS
# (branch cudabwd; round 2's output: /work/notes/s14/dev/call4/c4). TEZGAH_CUDA_ATTN_BWD: unset/auto
# = the default (ds1: fa_dkdv stores dS, fa_dq_ds computes dQ = dS·K in 128-row blocks), old =
# fa_dq recomputing S and dP (main's kernels before this branch), ds | ds2 = fa_dq_ds's 64-row or
# 8-warp blocks; TEZGAH_CUDA_ATTN_DS_STORE=4 = dS by 4-byte fragment stores instead of the default
# 16-byte row stores through a stmatrix stage. All in the same binary, and the PyTorch peer in
# the same call. From a carried pack DIR.
#
#   here:  TZ_PACK_TARGETS="tezgah test_cuda_attention test_cuda_train bench_cuda_attention" \
#            nice -n 19 bash scripts/device_pack.sh .dev -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cudabwd.sh .dev          (run tool, carry [".dev"])
#
# 1. test_cuda_attention and test_cuda_train, TEZGAH_CUDA_REQUIRED=1, under auto, old and ds.v4
#    (BWD=ds DS_STORE=4): 6 processes at once (test_cuda_attention's test_bf16_fast_bwd runs
#    every variant in all three). Nothing else runs beside the bench and the training: in round 2
#    the peer's torch.compile warm-up ran in the background during them and slowed the first
#    bench setting (its forward, which no setting touches, 0.237 ms against 0.132) and the old
#    training runs (reviewer's note, 2026-12-03); the peer now compiles in step 4.
# 2. bench_cuda_attention 20 bf16 fast all split: the 5 shapes under auto, old, ds.v4, ds, each
#    row followed by the backward's per-kernel split (CUDA events, TEZGAH_CUDA_ATTN_TIMING: D,
#    fa_dkdv, fa_dq | fa_dq_ds in ms); ds2 all shapes without the split.
# 3. tezgah train --backend cuda, B16 T1024 bf16, 20 steps (tokens/s = median of steps 6..20; the
#    losses of steps 1-3 and 20): gpt2-124m, gpt2-350m and llama-style head_dim 128 (gpt2-124m
#    sizes, --arch llama --d-ff 2048 --n-head 6) under old and auto. Started only before 140 s.
# 4. the peer: ../shared/bench/torch_gpt.py --compile 1 at 124M and 350M (15 steps, its compile
#    included in the time given: at least 80 s each).
# Logs go to $OUT or /tmp/tz-cudabwd; the summary is printed last. Budget 200 s (each step under
# timeout): tests ~60-90 s, bench ~35 s, training ~60 s, the peer the rest.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:?usage: device_cudabwd.sh DIR (the pack, e.g. .dev)}
out=${OUT:-/tmp/tz-cudabwd}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
unset TEZGAH_CUDA_ATTN_BWD TEZGAH_CUDA_ATTN_DS_STORE TEZGAH_CUDA_ATTN_TIMING
t_all=$SECONDS
budget=200
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
summary=()

# a setting's tag: BWD[.vSTORE], e.g. ds.v4 = TEZGAH_CUDA_ATTN_BWD=ds TEZGAH_CUDA_ATTN_DS_STORE=4
# (STORE default 16)
envof() { # tag -> the env assignments
  local t=$1 st=16
  [[ $t =~ \.v([0-9]+) ]] && st=${BASH_REMATCH[1]}
  echo "TEZGAH_CUDA_ATTN_BWD=${t%%.*} TEZGAH_CUDA_ATTN_DS_STORE=$st"
}

echo "== 1. tests under auto, old and ds.v4"
t0=$SECONDS
peer_shapes=("124m 12 768 12" "350m 24 1024 16")
tests=(test_cuda_attention test_cuda_train)
tvars=(auto old ds.v4)
for t in "${tests[@]}"; do
  for v in "${tvars[@]}"; do
    # shellcheck disable=SC2046
    (env $(envof "$v") TEZGAH_CUDA_REQUIRED=1 timeout 100 "$dir/bin/$t" >"$out/$t.$v.log" 2>&1
     echo $? >"$out/$t.$v.rc") &
  done
done
wait
for t in "${tests[@]}"; do
  for v in "${tvars[@]}"; do
    line="$t ($v): exit $(cat "$out/$t.$v.rc"), $(grep -c '^\[       OK \]' "$out/$t.$v.log") OK, $(grep -c '^\[  FAILED  \]' "$out/$t.$v.log") FAILED"
    echo "$line"
    summary+=("$line")
    grep -E "^\[  (FAILED|SKIPPED) |^\[  ERROR|off;|error|differ|relative RMS" "$out/$t.$v.log" | head -14
  done
done
# the error figures of one case (bf16 fast B 1 T 520 hd 64; B 2 T 200 hd 128) under each setting
for v in "${tvars[@]}"; do
  echo "test_cuda_attention under $v: B 1 T 520 hd 64, then B 2 T 200 hd 128:"
  grep -m1 -A5 "^bf16 fast B 1 T 520" "$out/test_cuda_attention.$v.log" | grep -E "^  d(q|k|v) "
  grep -m1 -A5 "^bf16 fast B 2 T 200 .*128" "$out/test_cuda_attention.$v.log" | grep -E "^  d(q|k|v) "
done
echo "tests: $((SECONDS - t0)) s"

echo "== 2. bench_cuda_attention (ms, TFLOP/s; FlashAttention's causal FLOP count; split: ms a call)"
t0=$SECONDS
bench() { # tag shapes [split] -> $out/bench.$tag.txt
  # shellcheck disable=SC2046
  env $(envof "$1") timeout 40 "$dir/bin/bench_cuda_attention" 20 bf16 fast "$2" ${3:+"$3"} \
    >"$out/bench.$1.txt" 2>&1 || echo "bench $1: exit $?" >>"$out/bench.$1.txt"
  tags+=("$1")
}
# tag, shape-name prefix, field counted from the end (0 bwd TFLOP/s, 1 bwd ms, 3 fwd ms)
col() { awk -v s="$2" -v k="$3" 'index($0, s) == 1 {print $(NF - k)}' "$out/bench.$1.txt"; }
# tag, shape-name prefix -> the split line after that shape's row ("D x dkdv y dq z")
splitof() { awk -v s="$2" 'f && /^  split:/ {print $2, $3, $4, $5, $6, $7, $8, $9; exit} {f = index($0, s) == 1}' "$out/bench.$1.txt"; }
tags=()
bench auto all split
bench old all split
bench ds.v4 all split
bench ds all split
bench ds2 all
for v in "${tags[@]}"; do
  echo "-- $v: $(envof "$v")"; grep -vE "^attention|^shape" "$out/bench.$v.txt"
  r="bench $v: bwd ms 124M $(col "$v" "gpt2 (" 1) ($(col "$v" "gpt2 (" 0) TFLOP/s), gqa $(col "$v" gqa 1), hd128 $(col "$v" "hd 128" 1) ($(col "$v" "hd 128" 0)), T2048 $(col "$v" "gpt2, T" 1), 350M $(col "$v" 350m 1) ($(col "$v" 350m 0)); fwd 124M $(col "$v" "gpt2 (" 3)"
  summary+=("$r")
done
for v in auto old ds.v4 ds; do
  summary+=("split $v (D, fa_dkdv, dQ kernel ms): 124M $(splitof "$v" "gpt2 (") | hd128 $(splitof "$v" "hd 128") | 350M $(splitof "$v" 350m)")
done
echo "bench: $((SECONDS - t0)) s"

echo "== 3. train (B16 T1024 bf16, 20 steps)"
shard=$dir/data/tiny_shakespeare_train.bin
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
train() { # name model variant extra... -> prints a line
  local name=$1 m=$2 v=$3 run
  shift 3
  run=$(mktemp -d)
  local t0=$SECONDS
  # shellcheck disable=SC2046
  env $(envof "$v") timeout 60 "$dir/bin/tezgah" train --backend cuda --model "$m" -B 16 -T 1024 \
    --vocab-size 50257 --train-shards "$shard" --val-shards "$shard" --steps 20 --val-every 0 --ckpt-every 0 \
    --sample-tokens 0 --log-every 1 --run-dir "$run/r" "$@" >"$out/train.$name.$v.out" 2>"$out/train.$name.$v.log"
  local rc=$?
  local tps losses
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | median)
  losses=$(grep -o '"loss":[0-9.e+-]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | sed -n '1,3p;20p' | paste -sd' ')
  echo "$name $v: exit $rc, $(printf '%.0f' "$tps") tokens/s, loss steps 1-3,20: $losses, $((SECONDS - t0)) s"
  [[ $rc == 0 ]] || tail -3 "$out/train.$name.$v.log"
  rm -rf "$run"
}
t0=$SECONDS
runs=("124m gpt2-124m old" "124m gpt2-124m auto" "350m gpt2-350m old" "350m gpt2-350m auto"
  "llama-hd128 gpt2-124m old --arch llama --d-ff 2048 --n-head 6"
  "llama-hd128 gpt2-124m auto --arch llama --d-ff 2048 --n-head 6")
for line in "${runs[@]}"; do
  if ((SECONDS - t_all > 140)); then
    summary+=("skipped (budget): train $line"); continue
  fi
  # shellcheck disable=SC2086
  r=$(train $line)
  echo "$r"
  summary+=("$r")
done
echo "train: $((SECONDS - t0)) s"

echo "== 4. peer: torch_gpt.py --compile 1 (bf16)"
t0=$SECONDS
for s in "${peer_shapes[@]}"; do
  read -r m L C H <<<"$s"
  left=$((budget - (SECONDS - t_all)))
  [[ $m == 124m ]] && left=$((left / 2))
  ((left < 80)) && left=80 # its compile (~30-60 s) is in it
  p=$(timeout "$left" python3 "$dir/data/torch_gpt.py" --arch gpt2 --L "$L" --d "$C" --H "$H" --B 16 --T 1024 --compile 1 --steps 15 2>&1 | tail -2)
  r="peer $m: $(grep -o 'tok_s=[0-9.]*' <<<"$p" | head -1) ($((SECONDS - t0)) s so far)"
  echo "$r"; [[ $p == *tok_s=* ]] || echo "$p"
  summary+=("$r")
done

echo "== summary (device_cudabwd, $((SECONDS - t_all)) s)"
printf '%s\n' "${summary[@]}"
