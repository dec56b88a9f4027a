#!/bin/bash
# WebGPU activation layouts on the GPU machine (issue 10; docs/PERF.md "one buffer per activation
# tensor"): correctness, then GPT-2 124M and the llama shape, B 16 T 1024 fp32, with main's single
# arena (TEZGAH_WEBGPU_ARENA=1: read_write matmul operands) and one buffer per tensor (the
# default: read-only operands), each unprofiled and profiled, and the PyTorch strict-fp32 peer of
# each arch in the same call. Logs: $OUT/logs.tgz (updated after each part).
#
# Here: a portable CUDA-less build of bench_webgpu, test_webgpu_ops and test_webgpu_train
# (cmake -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=OFF -DTEZGAH_NATIVE=OFF
# -DCMAKE_C_FLAGS=-march=x86-64-v4 -DTEZGAH_BLAS=OFF -DTEZGAH_MPI=OFF -DTEZGAH_PLOT=OFF), copied
# with libcmocka, libgomp, libxxhash (DIR/lib) and ../shared/bench/torch_gpt.py into an ignored
# folder DIR of the repository (default .i10buf). There (carry DIR, .gl, .wg; ~3.5 minutes):
#   bash scripts/device_webgpu_layout.sh DIR
# SHAPE="B T" overrides 16 1024.
cd "$(dirname "$0")/.."
source scripts/device_webgpu_env.sh
D=${1:-.i10buf}
export LD_LIBRARY_PATH=$PWD/$D/lib PYTHONUNBUFFERED=1
B=$D/bench_webgpu; T0=$SECONDS; L=/tmp/logs; mkdir -p $L
SH=${SHAPE:-16 1024}
save() { tar czf $OUT/logs.tgz -C /tmp logs; }
t() { echo "== [t=$((SECONDS-T0))] $*"; }
t "date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t test_webgpu_train; timeout 90 $D/test_webgpu_train > $L/test_train.log 2>&1; echo "exit $?"; grep -E "worst|^\[  (FAILED|PASSED|SKIPPED)|FAIL" $L/test_train.log | tail -12
t "test_webgpu_ops (matmul)"; TZ_TEST_FILTER='test_matmul*' timeout 60 $D/test_webgpu_ops > $L/test_ops.log 2>&1; echo "exit $?"; grep -E "^\[  (FAILED|PASSED|SKIPPED)|FAIL" $L/test_ops.log | tail -4; save
bench() { # name arch env...
  local n=$1 a=$2; shift 2
  t "$n: env $* bench_webgpu train 16 1024 6 $a"
  timeout 50 env "$@" $B train $SH 6 $a > $L/$n.log 2>&1; grep -E "^activations|median" $L/$n.log
  t "$n profiled: TEZGAH_PROFILE=1 bench_webgpu train 16 1024 4 $a"
  TEZGAH_PROFILE=1 timeout 50 env "$@" $B train $SH 4 $a > $L/$n-prof.log 2>&1; grep -E "^  (matmul|attention|total)|median" $L/$n-prof.log
}
bench gpt2-arena gpt2 TEZGAH_WEBGPU_ARENA=1
bench gpt2-tensor gpt2 TEZGAH_WEBGPU_ARENA=0; save
t "peer gpt2: TF32=0 python3 torch_gpt.py --arch gpt2 --fp32 1"; TF32=0 timeout 100 python3 $D/torch_gpt.py --arch gpt2 --fp32 1 2>&1 | grep "^torch"
bench llama-arena llama TEZGAH_WEBGPU_ARENA=1
bench llama-tensor llama TEZGAH_WEBGPU_ARENA=0; save
t "peer llama: TF32=0 python3 torch_gpt.py --arch llama --fp32 1"; TF32=0 timeout 100 python3 $D/torch_gpt.py --arch llama --fp32 1 2>&1 | grep "^torch"
t "gpt2, one buffer per tensor, TEZGAH_WEBGPU_MM=8x8:8:2 (tile only)"
TEZGAH_PROFILE=1 timeout 40 env TEZGAH_WEBGPU_MM=8x8:8:2 $B train $SH 4 > $L/gpt2-tensor-mm88-prof.log 2>&1; grep -E "^  (matmul|attention|total)|median" $L/gpt2-tensor-mm88-prof.log
t done; save
