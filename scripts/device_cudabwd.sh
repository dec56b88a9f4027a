#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24, the CUDA attention backward with dQ from a stored dS
# (branch cudabwd: TEZGAH_CUDA_ATTN_BWD=ds|ds1|ds2, fa_dkdv writes dS, fa_dq_ds computes dQ = dS·K;
# default old = fa_dq recomputing S and dP) against the old kernels in the same binary, and the
# PyTorch peer in the same call. From a carried pack DIR.
#
#   here:  TZ_PACK_TARGETS="tezgah test_cuda_attention test_cuda_train bench_cuda_attention" \
#            nice -n 19 bash scripts/device_pack.sh .dev -DCMAKE_CUDA_ARCHITECTURES=90-real
#   there: bash scripts/device_cudabwd.sh .dev          (run tool, carry [".dev"])
#
# 1. test_cuda_attention and test_cuda_train, TEZGAH_CUDA_REQUIRED=1, under TEZGAH_CUDA_ATTN_BWD=old
#    and =ds (4 processes at once; test_cuda_attention's test_bf16_fast_ds runs the ds kernels in
#    both), the peer's torch.compile warm-up in the background.
# 2. bench_cuda_attention 20 bf16 fast: all 5 shapes under old and ds; then the two GPT-2 shapes
#    (124M H12, 350M H16; B16 T1024 hd64) with fa_dkdv split in half query tiles (.s2,
#    TEZGAH_CUDA_ATTN_DKV_SPLIT=2), under ds1 and ds2 with the better split, the fastest of those
#    in chunks of 2 and 4 sequences (.c2 .c4, TEZGAH_CUDA_ATTN_DS_CHUNK), then the best of those
#    and old with blocks started longest first (.o24 .o96, TEZGAH_CUDA_ATTN_ORDER). Step 3 trains
#    main's kernels (old) against the fastest setting at 350M (a ds one, old.s2 or old.o24).
# 3. tezgah train --backend cuda, B16 T1024 bf16, 20 steps: gpt2-124m and gpt2-350m, old then the
#    chosen ds setting (tokens/s = median of steps 6..20; the losses of steps 1-3 of both printed:
#    they must agree to ~bf16 noise), then gpt2-124m --profile under both if the budget allows
#    (started only before 120 s; plain runs only before 170 s).
# 4. the peer: ../shared/bench/torch_gpt.py --compile 1 at 124M and 350M (15 steps) with what is left.
# Logs go to $OUT or /tmp/tz-cudabwd; the summary is printed last. Budget 238 s (each step under
# timeout): tests ~60-100 s, bench ~40 s, training ~50-80 s, the peer the rest.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:?usage: device_cudabwd.sh DIR (the pack, e.g. .dev)}
out=${OUT:-/tmp/tz-cudabwd}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
unset TEZGAH_CUDA_ATTN_BWD
t_all=$SECONDS
budget=238
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
summary=()

echo "== 1. tests under TEZGAH_CUDA_ATTN_BWD=old and =ds (and the peer's torch.compile warm-up)"
t0=$SECONDS
peer_shapes=("124m 12 768 12" "350m 24 1024 16")
(for s in "${peer_shapes[@]}"; do
  read -r m L C H <<<"$s"
  timeout "$([[ $m == 124m ]] && echo 50 || echo 60)" python3 "$dir/data/torch_gpt.py" --arch gpt2 --L "$L" --d "$C" \
    --H "$H" --B 16 --T 1024 --compile 1 --steps 1 >"$out/peer_warm.$m.log" 2>&1
done) &
warm=$!
tests=(test_cuda_attention test_cuda_train)
for t in "${tests[@]}"; do
  for v in old ds; do
    (TEZGAH_CUDA_ATTN_BWD=$v TEZGAH_CUDA_REQUIRED=1 timeout 110 "$dir/bin/$t" >"$out/$t.$v.log" 2>&1
     echo $? >"$out/$t.$v.rc") &
  done
done
wait $(jobs -p | grep -v "^$warm\$")
for t in "${tests[@]}"; do
  for v in old ds; do
    line="$t ($v): exit $(cat "$out/$t.$v.rc"), $(grep -c '^\[       OK \]' "$out/$t.$v.log") OK, $(grep -c '^\[  FAILED  \]' "$out/$t.$v.log") FAILED"
    echo "$line"
    summary+=("$line")
    grep -E "^\[  (FAILED|SKIPPED) |^\[  ERROR|off;|error|differ|relative RMS" "$out/$t.$v.log" | head -14
  done
done
# the error figures of one case (bf16 fast B 1 T 520, test_bf16_fast's) under both settings
for v in old ds; do
  echo "test_cuda_attention, B 1 T 520 hd 64 under $v:"
  grep -m1 -A5 "^bf16 fast B 1 T 520" "$out/test_cuda_attention.$v.log" | grep -E "^  d(q|k|v) "
done
echo "tests: $((SECONDS - t0)) s"

echo "== 2. bench_cuda_attention (ms, TFLOP/s; FlashAttention's causal FLOP count)"
t0=$SECONDS
# a setting's tag: BWD[.sSPLIT][.cCHUNK][.oORDER], e.g. ds1.s2.c4.o24 = TEZGAH_CUDA_ATTN_BWD=ds1
# TEZGAH_CUDA_ATTN_DKV_SPLIT=2 TEZGAH_CUDA_ATTN_DS_CHUNK=4 TEZGAH_CUDA_ATTN_ORDER=24
envof() { # tag -> the env assignments
  local t=$1 sp=1 ch=0 od=0
  [[ $t =~ \.s([0-9]+) ]] && sp=${BASH_REMATCH[1]}
  [[ $t =~ \.c([0-9]+) ]] && ch=${BASH_REMATCH[1]}
  [[ $t =~ \.o([0-9]+) ]] && od=${BASH_REMATCH[1]}
  echo "TEZGAH_CUDA_ATTN_BWD=${t%%.*} TEZGAH_CUDA_ATTN_DKV_SPLIT=$sp TEZGAH_CUDA_ATTN_DS_CHUNK=$ch TEZGAH_CUDA_ATTN_ORDER=$od"
}
bench() { # tag shapes -> $out/bench.$tag.txt
  # shellcheck disable=SC2046
  env $(envof "$1") timeout 30 "$dir/bin/bench_cuda_attention" 20 bf16 fast "$2" \
    >"$out/bench.$1.txt" 2>&1 || echo "bench $1: exit $?" >>"$out/bench.$1.txt"
  tags+=("$1")
}
# tag, shape-name prefix, field counted from the end (0 bwd TFLOP/s, 1 bwd ms, 3 fwd ms)
col() { awk -v s="$2" -v k="$3" 'index($0, s) == 1 {print $(NF - k)}' "$out/bench.$1.txt"; }
faster() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN {exit !(a < b)}'; }
tags=()
pick() { # candidates... -> $best: the fastest backward at 350M among them
  best=$1
  for c in "$@"; do faster "$(col "$c" 350m 1)" "$(col "$best" 350m 1)" && best=$c; done
}
bench old all
bench ds all
bench old.s2 gpt2
bench ds.s2 gpt2
pick ds ds.s2
s=${best#ds}                       # the better fa_dkdv split under ds ("" or .s2)
bench "ds1$s" gpt2
bench "ds2$s" gpt2
pick "ds$s" "ds1$s" "ds2$s"
b0=$best
bench "$b0.c2" gpt2
bench "$b0.c4" gpt2
pick "$b0" "$b0.c2" "$b0.c4"
b1=$best
# blocks longest first in super-groups of 24 or 96 (batch, head) pairs (TEZGAH_CUDA_ATTN_ORDER)
bench "$b1.o24" gpt2
bench "$b1.o96" gpt2
bench old.o24 gpt2
pick "$b1" "$b1.o24" "$b1.o96" old.s2 old.o24
besttag=$best
oldtag=old # main's kernels, the baseline
for v in "${tags[@]}"; do
  echo "-- $v: $(envof "$v")"; grep -vE "^attention|^shape" "$out/bench.$v.txt"
  r="bench $v: bwd ms 124M $(col "$v" "gpt2 (" 1) ($(col "$v" "gpt2 (" 0) TFLOP/s), 350M $(col "$v" 350m 1) ($(col "$v" 350m 0)); fwd 124M $(col "$v" "gpt2 (" 3)"
  summary+=("$r")
done
summary+=("trained: main's kernels ($oldtag) against the fastest bwd at 350M, $besttag = $(envof "$besttag")")
echo "bench: $((SECONDS - t0)) s; training $oldtag against $besttag"

echo "== 3. train (B16 T1024 bf16, 20 steps)"
shard=$dir/data/tiny_shakespeare_train.bin
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
train() { # model variant extra... -> prints a line
  local m=$1 v=$2 run
  shift 2
  run=$(mktemp -d)
  local t0=$SECONDS
  # shellcheck disable=SC2046
  env $(envof "$v") timeout 60 "$dir/bin/tezgah" train --backend cuda --model "$m" -B 16 -T 1024 \
    --vocab-size 50257 --train-shards "$shard" --val-shards "$shard" --steps 20 --val-every 0 --ckpt-every 0 \
    --sample-tokens 0 --log-every 1 --run-dir "$run/r" "$@" >"$out/train.$m.$v$#.out" 2>"$out/train.$m.$v$#.log"
  local rc=$?
  local tps losses prof
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | median)
  losses=$(grep -o '"loss":[0-9.e+-]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | sed -n '1,3p;20p' | paste -sd' ')
  prof=$(grep -E "^  (attention_fwd|attention_bwd|total) " "$out/train.$m.$v$#.log" | awk '{printf "%s %s ms  ", $1, $2}')
  echo "$m $v$([[ $# -gt 0 ]] && echo " $*"): exit $rc, $(printf '%.0f' "$tps") tokens/s, loss steps 1-3,20: $losses, $((SECONDS - t0)) s${prof:+ | $prof}"
  [[ $rc == 0 ]] || tail -3 "$out/train.$m.$v$#.log"
  rm -rf "$run"
}
t0=$SECONDS
for line in "gpt2-124m $oldtag" "gpt2-124m $besttag" "gpt2-350m $oldtag" "gpt2-350m $besttag" \
  "gpt2-124m $oldtag --profile" "gpt2-124m $besttag --profile"; do
  # the profiled runs only while the peer keeps >= ~100 s; the plain ones while it keeps ~60 s
  if ((SECONDS - t_all > 170)) || { [[ $line == *--profile ]] && ((SECONDS - t_all > 120)); }; then
    summary+=("skipped (budget): train $line"); continue
  fi
  # shellcheck disable=SC2086
  r=$(train $line)
  echo "$r"
  summary+=("$r")
done
echo "train: $((SECONDS - t0)) s"

wait "$warm"
echo "peer warm-up: $(grep -ho 'tok_s=[0-9]*' "$out"/peer_warm.*.log | paste -sd' ')"
echo "== 4. peer: torch_gpt.py --compile 1 (bf16)"
t0=$SECONDS
for s in "${peer_shapes[@]}"; do
  read -r m L C H <<<"$s"
  left=$((budget - (SECONDS - t_all)))
  [[ $m == 124m ]] && left=$((left / 2))
  ((left < 20)) && left=20
  p=$(timeout "$left" python3 "$dir/data/torch_gpt.py" --arch gpt2 --L "$L" --d "$C" --H "$H" --B 16 --T 1024 --compile 1 --steps 15 2>&1 | tail -2)
  r="peer $m: $(grep -o 'tok_s=[0-9.]*' <<<"$p" | head -1) ($((SECONDS - t0)) s so far)"
  echo "$r"; [[ $p == *tok_s=* ]] || echo "$p"
  summary+=("$r")
done

echo "== summary (device_cudabwd, $((SECONDS - t_all)) s)"
printf '%s\n' "${summary[@]}"
