#!/usr/bin/env bash
# Issue 24 (session 20), merged main with the GeLU epilogues on by default in bf16 (the 05:48
# call's build: TEZGAH_CUDA_GELU_EPI=auto = both; since then auto = bwd; the run folders were
# under the tarball's folder then, which this version fixes): 1. tests with TEZGAH_CUDA_REQUIRED=1 (test_cuda_gelu_epi,
# test_cuda_train and test_cuda_recompute under the default and under bwd, test_cuda_ops,
# test_cuda_attention); 2. bench/bench_cuda_sizes.sh at gpt2-350m and gpt2-774m with the PyTorch
# torch.compile peer (default settings); 3. the same binary with off and bwd at those shapes, and
# gpt2-1.5b default / off (no peer: its compile outlasts a call). Summary LAST.
#   pack: TZ_PACK_TARGETS="tezgah test_cuda_gelu_epi test_cuda_train test_cuda_recompute test_cuda_ops test_cuda_attention" bash scripts/device_pack.sh .dev-m20 -DCMAKE_CUDA_ARCHITECTURES=90-real
#   run (carry [".dev-m20"]): bash scripts/device_gelu20b.sh .dev-m20     (<= ~560 s)
set -uo pipefail
dir=${1:?usage: device_gelu20b.sh DIR}
OUT=${OUT:-/tmp/gelu20b_out}
L=/tmp/gelu20b
R=/tmp/gelu20b_runs # run folders (a 350M checkpoint is 4 GB) outside the tarball
rm -rf "$L" "$R" && mkdir -p "$L" "$R" "$OUT"
: >"$OUT/gelu20b_summary.log"
export LD_LIBRARY_PATH=$PWD/$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TEZGAH_FIXTURES=$PWD/tests/fixtures
say() {
  echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/gelu20b_summary.log"
  tar czf "$OUT/gelu20b.tgz" -C /tmp gelu20b 2>/dev/null
}
say "start: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
t() { # tag timeout binary env...
  local tag=$1 to=$2 bin=$3
  shift 3
  env TEZGAH_CUDA_REQUIRED=1 "$@" timeout "$to" "$dir/bin/$bin" >"$L/$tag.log" 2>&1
  local rc=$?
  say "$tag rc $rc: $(grep -cE '^\[       OK \]' "$L/$tag.log") ok, $(grep -cE '^\[  FAILED  \] test' "$L/$tag.log") failed; $(grep -E '^\[  FAILED  \] test|worst|ERROR' "$L/$tag.log" | head -4 | tr '\n' ' ' | cut -c1-400)"
}
t gelu_epi 100 test_cuda_gelu_epi
t train_default 120 test_cuda_train
t train_bwd 120 test_cuda_train TEZGAH_CUDA_GELU_EPI=bwd
t recompute_default 100 test_cuda_recompute
t ops 60 test_cuda_ops
t attention 120 test_cuda_attention
shard=$dir/data/tiny_shakespeare_train.bin
PEER_STEPS=10 timeout 330 bash bench/bench_cuda_sizes.sh "$dir/bin/tezgah" "$shard" "$dir/data/torch_gpt.py" 12 "gpt2-350m gpt2-774m" \
  >"$L/sizes.md" 2>"$L/sizes.err"
say "sizes (default = GeLU epilogues both, peer torch.compile): rc $?"
grep -E '^\|' "$L/sizes.md" | while IFS= read -r line; do say "  $line"; done
run() { # model tag env...
  local m=$1 tag=$2
  shift 2
  env "$@" timeout 120 "$dir/bin/tezgah" train --backend cuda --model "$m" -B 16 -T 1024 --vocab-size 50257 --train-shards "$shard" \
    --val-shards "$shard" --steps 12 --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir "$R/r_${m}_${tag}" \
    >"$L/r_${m}_$tag.out" 2>"$L/r_${m}_$tag.log" </dev/null
  local rc=$?
  local tps
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "$R/r_${m}_${tag}/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | sort -g |
    awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}')
  say "$m $tag: rc $rc, $tps tokens/s (median of steps 6-12), $(grep -o 'device memory: [0-9.]* MiB peak' "$L/r_${m}_$tag.log" | head -1)"
  rm -rf "$R/r_${m}_${tag}"
}
for m in gpt2-350m gpt2-774m; do
  ((SECONDS < 470)) && run $m off TEZGAH_CUDA_GELU_EPI=off
  ((SECONDS < 480)) && run $m bwd TEZGAH_CUDA_GELU_EPI=bwd
  ((SECONDS < 490)) && run $m both TEZGAH_CUDA_GELU_EPI=both
done
((SECONDS < 500)) && run gpt2-1.5b default
((SECONDS < 530)) && run gpt2-1.5b off TEZGAH_CUDA_GELU_EPI=off
say "done"
