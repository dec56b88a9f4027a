#!/usr/bin/env bash
# On the GPU machine (device tool): issue 24 item 3's memory-bound kernels at the bigger GPT-2
# shapes (layernorm_bwd's one-pass kernel now for any C ≤ 2048 in bf16), before and after, from a
# carried pack DIR (scripts/device_pack.sh's .dev: bin/, lib/, data/).
#
#   here:  bash scripts/device_pack.sh -DCMAKE_CUDA_ARCHITECTURES=90-real
#          mkdir -p .dev/lib-main && cp /work/main/.dev/lib/libtezgah.so.0 .dev/lib-main/
#            (main's library, same ABI: the "before" column; left out, only "after" is shown)
#   there: bash scripts/device_cuda_ln.sh .dev          (run tool, carry [".dev"])
#
# 1. test_cuda_kernels, test_cuda_ops, test_cuda_train (TEZGAH_CUDA_REQUIRED=1, at once): each op against
#    the CPU with the tolerances stated in the tests, run-to-run determinism.
# 2. bench_cuda_ops C n_layer OPS at GPT-2 124M/350M/774M/1.5B (C 768/1024/1280/1600, B=16 T=1024
#    bf16): median ms per call of layernorm_bwd/fwd, bias_bwd, gelu_fwd/bwd, add, adamw (124M and
#    350M only: 1.5B's fp32 state takes long to fill), with main's library (before) and the
#    pack's (after), GB/s over each op's floor bytes; then layernorm_bwd's chunk count swept
#    (TEZGAH_CUDA_LN_CHUNKS 256, 1024, 2048; 512, the default, is in the table above).
# 3. `tezgah train --backend cuda --model gpt2-350m|gpt2-774m -B 16 -T 1024 --steps 10 --profile`
#    with both libraries: tokens/s (median after 4 warm-up steps, with --profile on) and the
#    profile's total and memory-bound rows in ms/step.
# Logs go to $OUT (the device tool's output folder) or /tmp/tz-cudaln.
# Expected time: ~40 s tests, ~60 s bench, ~80 s training (<= 200 s).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:?usage: device_cuda_ln.sh DIR (the pack, e.g. .dev)}
out=${OUT:-/tmp/tz-cudaln}
mkdir -p "$out"
t_all=$SECONDS
libs=(new)
[[ -f $dir/lib-main/libtezgah.so.0 ]] && libs=(main new)
libpath() { # main|new -> LD_LIBRARY_PATH (main's libtezgah first, the pack's other libraries after)
  if [[ $1 == main ]]; then echo "$PWD/$dir/lib-main:$PWD/$dir/lib:/usr/local/cuda/lib64"
  else echo "$PWD/$dir/lib:/usr/local/cuda/lib64"; fi
}
export LD_LIBRARY_PATH=$(libpath new)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader

echo "== 1. tests (pack's library; the three at once)"
t0=$SECONDS
tests=(test_cuda_kernels test_cuda_ops test_cuda_train)
for t in "${tests[@]}"; do
  (TEZGAH_CUDA_REQUIRED=1 timeout 150 "$dir/bin/$t" >"$out/$t.log" 2>&1; echo $? >"$out/$t.rc") &
done
wait
for t in "${tests[@]}"; do
  echo "$t: exit $(cat "$out/$t.rc"), $(grep -c '^\[       OK \]' "$out/$t.log") OK, $(grep -c '^\[  FAILED  \]' "$out/$t.log") FAILED lines"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  ERROR|worst|error" "$out/$t.log" | head -12
done
echo "tests: $((SECONDS - t0)) s"

echo "== 2. bench_cuda_ops (median ms per call; GB/s over the floor bytes)"
ops=layernorm_bwd,layernorm_fwd,bias_bwd,gelu_fwd,gelu_bwd,add
printf "%-6s %-14s %-16s %10s %10s %8s %8s\n" model op shape before_ms after_ms after_GB/s speedup
for s in "124M 768 12" "350M 1024 24" "774M 1280 36" "1.5B 1600 48"; do
  read -r m C L <<<"$s"
  o=$ops
  [[ $m == 124M || $m == 350M ]] && o=$ops,adamw
  for lib in "${libs[@]}"; do
    LD_LIBRARY_PATH=$(libpath "$lib") timeout 60 "$dir/bin/bench_cuda_ops" "$C" "$L" "$o" >"$out/ops.$m.$lib.txt" 2>&1 ||
      echo "bench_cuda_ops $C $L ($lib): failed: $(tail -1 "$out/ops.$m.$lib.txt")"
  done
  # rows: op shape ms GB/s ...; the same op can have several shapes (bias_bwd)
  awk -v m="$m" 'FNR == 1 {f++} f && $1 != "total" && $3 ~ /^[0-9.]+$/ {k = $1 " " $2; ms[f, k] = $3; gb[f, k] = $4; if (f == 1) ord[++n] = k}
    END {for (i = 1; i <= n; i++) {k = ord[i]; split(k, p, " "); if (("2", k) in ms) {b = ms[1, k]; a = ms[2, k]; g = gb[2, k]} else {b = "-"; a = ms[1, k]; g = gb[1, k]}
      printf "%-6s %-14s %-16s %10s %10s %8s %8s\n", m, p[1], p[2], b, a, g, (b == "-" ? "-" : sprintf("%.2fx", b / a))}}' \
    $(for lib in "${libs[@]}"; do echo "$out/ops.$m.$lib.txt"; done)
done

echo "== 2b. layernorm_bwd at other chunk counts (TEZGAH_CUDA_LN_CHUNKS; default 512), pack's library, ms"
for s in "124M 768 12" "350M 1024 24" "774M 1280 36" "1.5B 1600 48"; do
  read -r m C L <<<"$s"
  line="$m:"
  for ch in 256 1024 2048; do
    t=$(TEZGAH_CUDA_LN_CHUNKS=$ch timeout 30 "$dir/bin/bench_cuda_ops" "$C" "$L" layernorm_bwd 2>&1 | awk '$1 == "layernorm_bwd" {print $3}')
    line+=" $ch=${t:-?}"
  done
  echo "$line"
done

echo "== 3. train --profile (B 16, T 1024, bf16, 10 steps; tokens/s = median of steps 5-10, profiled)"
shard=$dir/data/tiny_shakespeare_train.bin
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
rows="layernorm_bwd|layernorm_fwd|bias_bwd|gelu_bwd|gelu_fwd|add|adamw|total"
for m in gpt2-350m gpt2-774m; do
  for lib in "${libs[@]}"; do
    run=$(mktemp -d)
    t0=$SECONDS
    LD_LIBRARY_PATH=$(libpath "$lib") timeout 100 "$dir/bin/tezgah" train --backend cuda --model "$m" -B 16 -T 1024 \
      --vocab-size 50257 --train-shards "$shard" --val-shards "$shard" --steps 10 --val-every 0 --ckpt-every 0 \
      --sample-tokens 0 --log-every 1 --run-dir "$run/r" --profile >"$out/train.$m.$lib.out" 2>"$out/train.$m.$lib.log"
    rc=$?
    tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$run/r/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +5 | median)
    echo "$m ($lib lib): exit $rc, $tps tokens/s, $((SECONDS - t0)) s; profile ms/step:"
    grep -E "^  ($rows) " "$out/train.$m.$lib.log" | awk '{printf "    %-16s %9s\n", $1, $2}' | paste -sd' ' | fold -w 120
    [[ $rc == 0 ]] || tail -3 "$out/train.$m.$lib.log"
    rm -rf "$run"
  done
done
echo "device_cuda_ln: $((SECONDS - t_all)) s in all"
