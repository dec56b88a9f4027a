#!/usr/bin/env bash
# On the GPU machine (device tool): run the CUDA tests and benchmarks from the .dev/ pack that
# scripts/device_pack.sh builds here (binaries in .dev/bin, the Debian libraries the GPU
# machine lacks in .dev/lib, a GPT-2 token shard and the PyTorch peer in .dev/data).
#
#   bash scripts/device_cuda.sh [tests] [cli] [bench] [peer] [profile]
#
# tests: every .dev/bin/test_cuda_* (cmocka; each prints its own results); cli: train, sample and
# eval through the CLI on --backend cuda: greedy samples in --precision fp32 must equal the
# CPU's (stories260K through run.c's loop, and a run trained on CUDA), eval losses agree; bench: GPT-2 124M
# and llama shapes through `tezgah train --backend cuda` (bench/bench_cuda.sh), with the
# PyTorch torch.compile bf16 peer when `peer` is given; profile: a --profile run's table.
# Logs go to $OUT when set (the device tool's output folder).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# test_cuda_parity's PyTorch fixtures: the binary was built elsewhere (its TZ_SOURCE_DIR is this
# machine's checkout path), the working tree here has them
export TEZGAH_FIXTURES=${TEZGAH_FIXTURES:-$PWD/tests/fixtures}
out=${OUT:-/tmp/tz-device}
mkdir -p "$out"
want() { [[ " $* " == *" $1 "* ]]; }
args=" $* "
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
.dev/bin/tezgah info 2>&1 | sed -n '/[Cc][Uu][Dd][Aa]/,$p' | head -12
if [[ $args == *" tests "* ]]; then
  for t in .dev/bin/test_cuda_*; do
    echo "== $(basename "$t")"
    TEZGAH_CUDA_REQUIRED=1 timeout 300 "$t" > "$out/$(basename "$t").log" 2>&1
    rc=$?
    grep -E "^\[  (FAILED|PASSED|SKIPPED) |ERROR|worst|off;|error" "$out/$(basename "$t").log" | head -40
    echo "   exit $rc"
  done
fi
if [[ $args == *" cli "* ]]; then
  tz=.dev/bin/tezgah d=$(mktemp -d) fails=0
  same() { # name, file a, file b
    if cmp -s "$2" "$3"; then echo "cli: $1: identical"; else echo "cli: $1: DIFFERENT"; diff "$2" "$3" | head -5; fails=$((fails + 1)); fi
  }
  s260=.dev/data/stories260K.bin t512=.dev/data/tok512.bin
  for be in cpu cuda; do
    $tz sample $s260 --tokenizer $t512 --temperature 0 --tokens 200 --backend $be --precision fp32 > $d/s260.$be 2>> $out/cli.err
  done
  same "stories260K greedy, cuda fp32 vs cpu" $d/s260.cpu $d/s260.cuda
  $tz train --backend cuda --precision fp32 --arch llama --n-layer 2 --n-head 4 --n-kv-head 2 --d-model 128 \
    --max-seq-len 128 -B 8 -T 128 --vocab-size 50257 --train-shards .dev/data/tiny_shakespeare_train.bin \
    --val-shards .dev/data/tiny_shakespeare_train.bin --steps 60 --val-every 0 --sample-tokens 0 \
    --run-dir $d/run --quiet 2>> $out/cli.err || { echo "cli: train failed"; fails=$((fails + 1)); }
  for be in cpu cuda; do
    $tz sample $d/run --tokenizer .dev/data/gpt2_tokenizer.bin --temperature 0 --tokens 60 --backend $be --precision fp32 > $d/run.$be 2>> $out/cli.err
    $tz eval $d/run --data .dev/data/tiny_shakespeare_train.bin --batches 4 --backend $be --precision fp32 \
      --json $d/eval.$be.json > /dev/null 2>> $out/cli.err
  done
  same "trained run greedy, cuda fp32 vs cpu" $d/run.cpu $d/run.cuda
  echo "cli: eval cpu $(cat $d/eval.cpu.json 2>/dev/null | tr -d '\n' | cut -c1-80)"
  echo "cli: eval cuda $(cat $d/eval.cuda.json 2>/dev/null | tr -d '\n' | cut -c1-80)"
  $tz sample $d/run --tokenizer .dev/data/gpt2_tokenizer.bin --temperature 0 --tokens 60 --backend cuda > $d/run.bf16 2>> $out/cli.err &&
    echo "cli: bf16 sample: $(head -c 120 $d/run.bf16 | tr '\n' ' ')"
  echo "cli: $fails failure(s)"; tail -5 $out/cli.err
fi
if [[ $args == *" bench "* ]]; then
  peer=/dev/null
  [[ $args == *" peer "* ]] && peer=.dev/data/torch_gpt.py
  [[ $args == *" profile "* ]] && export TEZGAH_BENCH_PROFILE=1
  timeout 420 bash bench/bench_cuda.sh .dev/bin/tezgah .dev/data/tiny_shakespeare_train.bin "$peer" \
    "${TZ_BENCH_STEPS:-30}" "${TZ_BENCH_ARCHS:-gpt2 llama}" 2> "$out/bench.err" | tee "$out/bench.md"
  tail -60 "$out/bench.err"
fi
