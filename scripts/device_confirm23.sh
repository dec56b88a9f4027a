#!/usr/bin/env bash
# Session 23's confirmation call on the H200: (1) GPT-2 124M f16 B16 T1024 by default four more
# times and llama twice (the final call's GPT-2 runs sat at 200,152 / 199,988 tokens/s), and
# GPT-2 with --precision fp32 (issue 22: the fp32 path no slower than 2026-12-02's 46,852);
# (2) the CUDA tests of the opt-in matmul_t_res (test_cuda_mm_res; test_cuda_train by default and
# with TEZGAH_CUDA_MM_RES=1).
#   bash scripts/device_confirm23.sh WGDIR CUDADIR   (carry [WGDIR, ".gl", CUDADIR]; WGDIR from
#   device_pack_webgpu.sh, CUDADIR from `TZ_PACK_TARGETS="tezgah test_cuda_mm_res test_cuda_train
#   test_cuda_ops" bash scripts/device_pack.sh CUDADIR -DCMAKE_CUDA_ARCHITECTURES=90-real`). <= 300 s.
set -uo pipefail
cdir=${2:?usage: device_confirm23.sh WGDIR CUDADIR}
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_confirm23 /tmp/confirm23_out "" "$1"
device_dawn_node
export TTMO=${TTMO:-40}
for r in 1 2 3 4; do run_env "g$r" gpt2; done
for r in 1 2; do run_env "l$r" llama; done
rm -rf /tmp/run_fp32
train_shape fp32 gpt2 fp32 10
say "train fp32 (gpt2 --precision fp32) rc $rc: median tokens/s (steps 6..) $tps"
say "TABLE gpt2 ${TPS[g1]} ${TPS[g2]} ${TPS[g3]} ${TPS[g4]}; llama ${TPS[l1]} ${TPS[l2]}; gpt2 fp32 $tps"
export LD_LIBRARY_PATH=$PWD/$cdir/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export TEZGAH_FIXTURES=$PWD/tests/fixtures
for t in "test_cuda_mm_res" "test_cuda_train" "test_cuda_train TEZGAH_CUDA_MM_RES=1"; do
  # shellcheck disable=SC2086  # the program, then its variables, one word each
  set -- $t
  env TEZGAH_CUDA_REQUIRED=1 "${@:2}" timeout 150 "$cdir/bin/$1" >"$out/${1}_$#.log" 2>&1
  say "$t rc $?: $(grep -cE '^\[       OK \]' "$out/${1}_$#.log") ok; $(grep -E '^\[  FAILED  \] test|worst relative|fallback kernel' "$out/${1}_$#.log" | head -8 | tr '\n' ' ' | cut -c1-700)"
done
pack_logs
