#!/usr/bin/env bash
# CI stage: build with AddressSanitizer + UndefinedBehaviorSanitizer (gcc) into build-asan and
# run the whole CPU test suite there. OpenBLAS is left out (-DTEZGAH_BLAS=OFF: the plain C
# matmuls are the reference anyway, and an uninstrumented BLAS only adds noise). Any sanitizer
# report fails the test that triggered it (UBSan is built with -fno-sanitize-recover, ASan
# aborts; leak checking is on, except for the WebGPU tests: see below).
# The CUDA backend is left out (-DTEZGAH_CUDA=OFF): its tests need a GPU, and the CUDA runtime
# under ASan only reports the driver's own allocations.
#   scripts/ci_sanitize.sh [extra ctest args...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-asan
t0=$SECONDS
# -g1, not RelWithDebInfo's -g: line tables and function names (inlined frames too), all that
# ASan's and UBSan's stack traces print (the same report, frame for frame, from an out-of-bounds
# read in an inlined function at -g and -g1, gcc 12, branch ci26), without the types and local
# variables that only a debugger reads; the same code (-O2), so the same run time. The build
# below: 127.1 CPU s at -g, 108.6 at -g1 (user+sys, time, the 2-core VM at load ~3, ci26).
# CI_PREBUILT=1: .ci/run already built this tree (this script under CI_BUILD_ONLY=1, beside the
# test command), so the configure and build are skipped (make's up-to-date walk alone: 31 CPU s on
# this tree)
if [[ -z ${CI_PREBUILT:-} ]]; then
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DTEZGAH_SANITIZE=ON -DTEZGAH_BLAS=OFF -DTEZGAH_CUDA=OFF -DTEZGAH_NATIVE=OFF >/dev/null
# Only what the ctest runs below use: the CLI, the test programs but the CUDA ones (this tree has
# no CUDA backend: they would only print SKIPPED), the shell tests' helpers and the MPI module
# (test_dist_cpu). Not the benchmarks, nor libtezgah.so (test_install, the one entry that links
# it, skips in a sanitizer build): 28 CPU s of instrumented compiles and links (branch ci24,
# measured: 119 CPU s for these targets, 28 more for the rest).
targets=(tezgah tz_ckpt_edit tz_ckpt_diff)
mapfile -t -O 3 targets < <(cd "$root/tests" && ls test_*.c | sed 's/\.c$//' | grep -v '^test_cuda_')
# the MPI module exists where CMake found MPI
all_targets=$(cmake --build "$build" --target help)
if grep -qE '(^|\.\.\. )tezgah_mpi(:|$)' <<<"$all_targets"; then targets+=(tezgah_mpi); fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
echo "ci_sanitize: built in $((SECONDS - t0)) s"
else
  echo "ci_sanitize: the tree was built beside the test command (CI_PREBUILT=1)"
fi
# CI_BUILD_ONLY=1: stop here, the tree built (.ci/run builds the lanes' trees while the test command runs)
[[ -z ${CI_BUILD_ONLY:-} ]] || exit 0
# allocator_may_return_null: an absurd model size must reach our "out of host memory" error
# (as with glibc's malloc) instead of ASan's own abort.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:allocator_may_return_null=1
# The kill test's 100 kills over 1500 steps run in the regular ctest; instrumented, a smaller
# run keeps this stage within the CI budget (still SIGKILLs mid-checkpoint and exact resume).
export TZ_KILL_MIN_MIDWRITE=${TZ_KILL_MIN_MIDWRITE:-0} # the 100-kill run in the main suite checks mid-write kills
export TZ_KILLS=${TZ_KILLS:-25} TZ_KILL_STEPS=${TZ_KILL_STEPS:-300} TZ_KILL_MAX_DELAY_MS=${TZ_KILL_MAX_DELAY_MS:-600}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# leaks inside libraries that are not ours (libplot, libpng: scripts/lsan.supp)
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp:print_suppressions=0
export TZ_E2E_QUICK=1 # the end-to-end test's 600-step run takes >10 min under ASan without AVX
# (label wasm: the wasm build in Node and the browsers runs clang-19's wasm32 code, not this
# build's; the README's test command runs those tests, and here they would only skip or repeat)
# Left out (both run in the README's test command): test_help, ~900 processes that only parse
# options (122 s under ASan on the 2-core CI machine); the parser's code runs under ASan in
# test_cli, test_bad_inputs and every CLI test. test_determinism (121 s here in .ci/run's
# three lanes, 2026-12-02: the longest CPU entry), which checks that runs agree bit for bit;
# the training loop, resume and export code it drives run under ASan in test_cli,
# test_kill_resume, test_convert_eval and test_init_from.
# test_ops_cpu_misaligned (69 s here in .ci/run's lanes, 2026-12-04): test_ops_cpu again with every
# CPU buffer 20 bytes further from its allocation's start (backend_cpu.c cpu_alloc: the slack
# after the data, 64 minus the alignment pad, is the same either way, the slack before it 20
# bytes more), and the CPU kernels take no branch on alignment: under ASan it runs the same code
# with no redzone nearer to the data, so it can find nothing that test_ops_cpu does not. What it
# checks, results that do not depend on alignment, it checks in the README's test command (and
# test_determinism end to end).
# (test_cuda_*: not built here, above; they skip without a GPU, and scripts/ci_cuda_build.sh
# builds and runs them)
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" \
  -E 'webgpu|test_dist_cpu|test_help|test_determinism|test_ops_cpu_misaligned|test_cuda_' -LE wasm "$@"
# Open MPI allocates at MPI_Init what it never frees (LeakSanitizer reports libopen-pal and
# PMIx): the data-parallel test runs with ASan and UBSan but without leak checking.
ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0} \
  ctest --test-dir "$build" --output-on-failure -R test_dist_cpu "$@"
# The WebGPU tests load Dawn and Mesa's lavapipe, which are not ours and allocate memory they
# never free (LeakSanitizer reports it from an unloaded driver module, so suppressions by
# library name cannot match): those tests run with ASan and UBSan but without leak checking.
# ASan checks our C host code, not the kernels (lavapipe's JIT code is not instrumented), and
# the WebGPU entries' cost is lavapipe compiling and running kernels: the entries below reach
# the host code of every op and path (issue 21 part 2); the others run the same host code with
# other kernel constants or through the CLI, which the CPU entries above check under ASan:
#   test_webgpu_load, _abi, _sgmat    Dawn's loading, the ABI subset, the subgroup-matrix pick
#   test_webgpu_ops_nosubgroups       every op (odd offsets, pieces, the read-only preamble and
#                                     workgroup-reduction forms, flash and general attention)
#   test_webgpu_ops_matmul            the matmul family (tiles, matmul_fast, transposed weight)
#   test_webgpu_ops_act16             f16 matmul inputs, be->act_mm (the conversions, f16 scratch sizes)
#   test_webgpu_train, _large         whole models: f16 mirror, decoding, split bindings; here
#                                     without the f16-mirror pair (test_train_*_f16, TZ_TEST_SKIP
#                                     below: ~22 CPU s under ASan, branch ci24): the _act16 pair
#                                     runs the mirror and f16 matmul inputs with f16 activations
#                                     on top, test_webgpu_ops_act16 each op's f16 inputs from fp32
#                                     activations; the test command runs the pair uninstrumented
#   test_tok_webgpu                   the tokenizer's WebGPU trainer and encoder; here without
#                                     test_train_shakespeare (TEZGAH_TEST_SKIP below: ~20 CPU s
#                                     under ASan, branch ci24): the trainer's submissions (one;
#                                     several, two in flight) run in _edge and _kjv (vocab 1,500:
#                                     five submissions); the test command runs it uninstrumented
# Left out: test_webgpu_ops_attn_sgemu (the subgroup-matrix attention's stand-in, a sweep entry:
# lavapipe's LLVM compiling its pipelines under ASan's allocator took 14 minutes cold on the
# 2-core CI machine, 2026-12-02; its host code, webgpu_ops_attn_sg.c, runs without ASan in the
# sweep and on the H200), the plain test_webgpu_ops entry (nosubgroups' host code with subgroup lanes, and
# the two-kernel attention backward at T 8192), _attn_pf and _attn_pf4 (another RG / NT / PF), the sweeps
# (label sweep: other kernel constants), test_webgpu_cli, _mainjob and test_tok_webgpu_cli
# (the CLI over the same backend calls).
asan_webgpu='^(test_webgpu_(load|abi|sgmat|large|train|ops_nosubgroups|ops_matmul|ops_act16)|test_tok_webgpu)$'
# (TZ_TEST_SKIP: read by test_webgpu_train and the test_webgpu_ops entries, whose own ctest
# ENVIRONMENT sets theirs where they have one; no test_webgpu_ops case matches this glob.
# TEZGAH_TEST_SKIP: test_tok_webgpu's alone.)
# TZ_TEST_STEPS=3: test_webgpu_train's cases train 3 steps, not 6-20 (73.0 -> 34.5 CPU s, branch
# ci38b): steps after the second run the same host code (the same dispatches, buffers and bind
# groups: 1,373 bind groups created by the whole program at 2 steps, at 3 and at 20), and half a
# case's time here was lavapipe executing kernels, uninstrumented; the losses' agreement over all
# the steps is the test command's check.
ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0} TZ_TEST_SKIP='test_train_*_f16' \
  TEZGAH_TEST_SKIP=test_train_shakespeare TZ_TEST_STEPS=3 \
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -R "$asan_webgpu" "$@"
echo "ci_sanitize: ASan+UBSan suite passed in $((SECONDS - t0)) s"
