#!/usr/bin/env bash
# CI stage: the CUDA backend compiles (CI has nvcc and no GPU; scripts/test.sh builds without
# the backend where no GPU is visible, since its tests skip there). Configures build-cuda with
# TEZGAH_CUDA=ON (a missing toolkit is an error here, not a skip) and the kernels as compute_90
# PTX only (CMAKE_CUDA_ARCHITECTURES=90-virtual, below), builds the CLI and the CUDA test
# programs, and runs them: without a GPU each must say SKIPPED (exit 77) and nothing else may fail.
#   bash scripts/ci_cuda_build.sh
# PTX only, not sm_90 machine code (CMake's default here without a GPU): nvcc still runs the
# whole front end (cudafe++, cicc: every template instantiated, every C++ error) and hands the
# PTX to `ptxas -arch=compute_90` for a check without code generation, which rejects bad inline
# PTX (the mma / ldmatrix / cp.async asm of cuda_mma.cuh, attention_fa.cu, decode_step.cu: a
# bogus instruction fails the same way as with code=sm_90, nvcc 13.0, branch ci23). Not checked
# here: what only code generation finds, a static __shared__ array above 48 KB for one (sm_90
# fails "uses too much shared data", PTX passes). scripts/device_pack.sh builds sm_80/89/90
# machine code (TEZGAH_CUDA_ARCH=PORTABLE) before every GPU run, so those reach the GPU
# machine's build. Cost (nvcc per .cu file, CPU s user+sys, the 2-core VM at load 4-9, branch
# ci23): the 18 files 246.6 with sm_90 code, 156.8 as PTX (gemv.cu 118.8 / 55.1, decode_step.cu
# 19.6 / 10.7, embed.cu 17.2 / 12.8, the others 4-10 either way: cicc and the host compiler are
# most of it there); sm_90 code with -Xptxas -O0 saves nothing (gemv.cu 107.1). The stage's C
# files (the library again, with TZ_HAVE_CUDA) are the same either way: the whole stage, cold,
# 248.6 CPU s as PTX (~340 with sm_90 code). CI's stage took 660 s wall in its lane (2026-12-04).
# CI_CUDA_ARCHITECTURES overrides (e.g. 90-real for the machine code).
# Unoptimised (branch ci26): build type None (no -O: gcc's -O0 for the C files and nvcc's host
# code) and the device code at cicc -O0 (-Xcicc -O0; nvcc's own default is -O3 for the device
# whatever -O says). What the stage checks is unchanged: the front end (cudafe++, cicc's parse
# and template instantiation: every C++ error), ptxas -arch=compute_90 over the PTX (a bogus
# modifier in attention_fa.cu's ldmatrix asm fails the same way at cicc -O0 as at -O3, branch
# ci26), the C files with TZ_HAVE_CUDA and the links; its test programs only say SKIPPED. What
# moves: the optimised compiles, whose objects only a GPU runs, to scripts/device_pack.sh's
# sm_80/89/90 build at -O3 before every GPU run (cicc's optimiser was most of the cost: gemv.cu
# 52.5 CPU s at -O3, 7.6 here); the -O3-only gcc warnings of the C files but the CUDA ones to the
# test command's -O3 build of the same files (below, only the CUDA files' warnings are printed:
# gcc at -O0 warns differently, e.g. a -Wformat-truncation in blas_load.c that -O3 proves
# false). Cost of `cmake --build` (user+sys CPU s, time -v, the 2-core VM at load 3-4, ci26):
# 207.7 at -O3 (nvcc 139.5 of it, the C files 43.6), 126.1 unoptimised (nvcc 79.5, C 21.5).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-cuda
t0=$SECONDS
# CI_PREBUILT=1: .ci/run already built this tree (this script under CI_BUILD_ONLY=1, beside the
# test command), so the configure and build are skipped
if [[ -z ${CI_PREBUILT:-} ]]; then
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CUDA_FLAGS="-Xcicc -O0" -DTEZGAH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${CI_CUDA_ARCHITECTURES:-90-virtual}" >"$build/build.log" 2>&1 ||
  { tail -30 "$build/build.log" >&2; exit 1; }
# the CLI and the CUDA test programs only (the rest is the test command's build, without CUDA)
cuda_tests=$(cd "$root/tests" && ls test_cuda_*.c | sed 's/\.c$//')
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target tezgah $cuda_tests >>"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
# the CUDA files' warnings (the CUDA runtime, cuDNN and NCCL glue, info, the kernels, the CUDA tests)
grep -i 'warning' "$build/build.log" | grep -v '^--' |
  grep -E '(/backend/cuda/|\.cuh?[:(]|attention_cudnn\.c|comm_nccl\.c|cmd_info\.c|test_cuda_)' | head -20 || true
echo "ci_cuda_build: built in $((SECONDS - t0)) s"
else
  echo "ci_cuda_build: the tree was built beside the test command (CI_PREBUILT=1)"
fi
# CI_BUILD_ONLY=1: stop here, the tree built (.ci/run builds the lanes' trees while the test command runs)
[[ -z ${CI_BUILD_ONLY:-} ]] || exit 0
"$build/tezgah" info 2>&1 | grep '^cuda' || true
# ctest's own summary stays in build-cuda/ctest.log: printed here it would be the last ctest
# summary of CI's log, "0 tests ran" (all skip without a GPU), and CI's reader takes that one.
if ! ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -R '^test_cuda_' >"$build/ctest.log" 2>&1; then
  cat "$build/ctest.log" >&2
  exit 1
fi
ran=$(grep -c ' Test *#[0-9]*: test_cuda_' "$build/ctest.log" || true)
skipped=$(grep -c '\*\*\*Skipped' "$build/ctest.log" || true)
echo "ci_cuda_build: $ran CUDA test programs built and run: $skipped skipped (SKIPPED, exit 77: no GPU), $((ran - skipped)) passed, 0 failed"
echo "ci_cuda_build: passed in $((SECONDS - t0)) s"
