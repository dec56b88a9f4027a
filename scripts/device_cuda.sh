#!/usr/bin/env bash
# On the GPU machine (device tool): run the CUDA tests and benchmarks from the .dev/ pack that
# scripts/device_pack.sh builds here (binaries in .dev/bin, the Debian libraries the GPU
# machine lacks in .dev/lib, a GPT-2 token shard and the PyTorch peer in .dev/data).
#
#   bash scripts/device_cuda.sh [tests] [bench] [peer] [profile]
#
# tests: every .dev/bin/test_cuda_* (cmocka; each prints its own results); bench: GPT-2 124M
# and llama shapes through `tezgah train --backend cuda` (bench/bench_cuda.sh), with the
# PyTorch torch.compile bf16 peer when `peer` is given; profile: a --profile run's table.
# Logs go to $OUT when set (the device tool's output folder).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/tz-device}
mkdir -p "$out"
want() { [[ " $* " == *" $1 "* ]]; }
args=" $* "
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
.dev/bin/tezgah info 2>&1 | sed -n '/[Cc][Uu][Dd][Aa]/,$p' | head -12
if [[ $args == *" tests "* ]]; then
  for t in .dev/bin/test_cuda_*; do
    echo "== $(basename "$t")"
    timeout 300 "$t" > "$out/$(basename "$t").log" 2>&1
    rc=$?
    grep -E "^\[  (FAILED|PASSED|SKIPPED) |ERROR|worst|off;|error" "$out/$(basename "$t").log" | head -40
    echo "   exit $rc"
  done
fi
if [[ $args == *" bench "* ]]; then
  peer=/dev/null
  [[ $args == *" peer "* ]] && peer=.dev/data/torch_gpt.py
  [[ $args == *" profile "* ]] && export TEZGAH_BENCH_PROFILE=1
  timeout 420 bash bench/bench_cuda.sh .dev/bin/tezgah .dev/data/tiny_shakespeare_train.bin "$peer" \
    "${TZ_BENCH_STEPS:-30}" "${TZ_BENCH_ARCHS:-gpt2 llama}" 2> "$out/bench.err" | tee "$out/bench.md"
  tail -60 "$out/bench.err"
fi
