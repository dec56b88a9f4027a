#!/usr/bin/env bash
# Issue 24 (session 20), merged main's final check on the H200: the GeLU epilogue default (auto:
# bwd in bf16). 1. tests with TEZGAH_CUDA_REQUIRED=1: test_cuda_gelu_epi, test_cuda_train,
# test_cuda_recompute, test_cuda_ops, test_cuda_parity (bf16 training against the PyTorch
# fixture); 2. bench/bench_cuda_sizes.sh at gpt2-350m and gpt2-774m with the PyTorch torch.compile
# peer; 3. gpt2-1.5b with the default (no peer: its compile outlasts a call). Summary LAST.
#   pack: TZ_PACK_TARGETS="tezgah test_cuda_gelu_epi test_cuda_train test_cuda_recompute test_cuda_ops test_cuda_parity" bash scripts/device_pack.sh .dev-m20 -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (carry [".dev-m20"]): bash scripts/device_final20.sh .dev-m20     (<= ~330 s)
set -uo pipefail
dir=${1:?usage: device_final20.sh DIR}
OUT=${OUT:-/tmp/final20_out}
L=/tmp/final20
R=/tmp/final20_runs # run folders (checkpoints) outside the tarball
rm -rf "$L" "$R" && mkdir -p "$L" "$R" "$OUT"
: >"$OUT/final20_summary.log"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TEZGAH_FIXTURES=$PWD/tests/fixtures
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/final20_summary.log"
  tar czf "$OUT/final20.tgz" -C /tmp final20 2>/dev/null
}
say "start: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
t() { # tag timeout binary env...
  local tag=$1 to=$2 bin=$3
  shift 3
  env TEZGAH_CUDA_REQUIRED=1 "$@" timeout "$to" "$dir/bin/$bin" >"$L/$tag.log" 2>&1
  local rc=$?
  say "$tag rc $rc: $(grep -cE '^\[       OK \]' "$L/$tag.log") ok, $(grep -cE '^\[  FAILED  \] test' "$L/$tag.log") failed; $(grep -E '^\[  FAILED  \] test|worst relative|max relative' "$L/$tag.log" | head -6 | tr '\n' ' ' | cut -c1-600)"
}
t gelu_epi 100 test_cuda_gelu_epi
t train 120 test_cuda_train
t recompute 100 test_cuda_recompute
t ops 60 test_cuda_ops
t parity 100 test_cuda_parity
shard=$dir/data/tiny_shakespeare_train.bin
PEER_STEPS=10 timeout 300 bash bench/bench_cuda_sizes.sh "$dir/bin/tezgah" "$shard" "$dir/data/torch_gpt.py" 12 "gpt2-350m gpt2-774m" \
  >"$L/sizes.md" 2>"$L/sizes.err"
say "sizes (default: GeLU epilogue bwd; peer torch.compile): rc $?"
grep -E '^\|' "$L/sizes.md" | while IFS= read -r line; do say "  $line"; done
timeout 100 "$dir/bin/tezgah" train --backend cuda --model gpt2-1.5b -B 16 -T 1024 --vocab-size 50257 --train-shards "$shard" \
  --val-shards "$shard" --steps 12 --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir "$R/r15" \
  >"$L/r15.out" 2>"$L/r15.log" </dev/null
rc=$?
tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$R/r15/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | sort -g |
  awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}')
say "gpt2-1.5b default: rc $rc, $tps tokens/s (median of steps 6-12), $(grep -o 'device memory: [0-9.]* MiB peak' "$L/r15.log" | head -1)"
say "done"
