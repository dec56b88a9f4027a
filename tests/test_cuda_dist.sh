#!/usr/bin/env bash
# Data-parallel training on CUDA with NCCL (train --nproc 2: forked ranks, one GPU each, no MPI;
# docs/DIST.md), on a tiny GPT-2 shape:
#  1. 2 GPUs × B=2 equal 1 GPU × B=4 in --precision fp32: losses, grad norms, val losses within
#     1e-5 relative, parameters and moments within 1e-4 of the largest magnitude (the ranks'
#     gradient sums and cuBLAS's row sums differ in order: fp32 rounding, amplified by 8 AdamW
#     steps; the CPU test measures the same within 1e-6);
#  2. ZeRO-1 equals no ZeRO bit for bit in bf16 (the default precision: the bf16 weight copy
#     is refreshed after the all-gather of the parameters);
#  3. a checkpoint of the 2-GPU run resumes on 2 GPUs exactly and on 1 GPU within tolerance;
#  4. a rank killed mid-run: the launcher names it and ends the run with status 1 within 60 s.
# Needs 2 CUDA devices and NCCL (TEZGAH_NCCL_LIB or libnccl.so.2): SKIPPED otherwise, unless
# TEZGAH_CUDA_REQUIRED=1 (then missing GPUs or NCCL fail the test).
# In a build without CUDA the CUDA tests' skip line, this one's and the C programs'
# (tests/cuda_testutil.h), is one line that says how to get the backend built, with cmake
# (-DTEZGAH_CUDA=ON, the backend's own words) and with scripts/test.sh (TEZGAH_TEST_CUDA=ON,
# scripts/cuda_choice.sh): until session 36 it named cmake's flag alone, which scripts/test.sh
# overrides. This test checks test_cuda_ops's line there before it skips.
# Usage (from ctest): bash test_cuda_dist.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/support/dist_compare.sh"
bin=${1:?tezgah binary}
shared=${2:?shared dir}
scratch=${3:?scratch dir}
diff_bin=$(dirname "$bin")/tz_ckpt_diff
corpus_src=$shared/data/tinyshakespeare.txt
no_cuda=
if "$bin" info 2>&1 | grep -q '^backends:.*cuda (not in this build)'; then
  no_cuda="; with scripts/test.sh: TEZGAH_TEST_CUDA=ON bash scripts/test.sh (builds it where a CUDA toolkit is found)"
  ops=$(dirname "$bin")/tests/test_cuda_ops
  [[ -x $ops ]] || fail "$ops is not built (it is the C CUDA tests' skip line checked here)"
  out=$("$ops" 2>&1)
  rc=$?
  [[ $rc == 77 && $(grep -c '^SKIPPED: ' <<<"$out") == 1 ]] &&
    grep -q '^SKIPPED: CUDA unavailable: .*-DTEZGAH_CUDA=ON.*; with scripts/test.sh: TEZGAH_TEST_CUDA=ON bash scripts/test.sh ' <<<"$out" ||
    fail "the skip line of a CUDA test in a build without CUDA does not name scripts/test.sh's TEZGAH_TEST_CUDA=ON: exit $rc: $out"
fi
if [[ ! -f $corpus_src ]]; then
  echo "SKIPPED: $corpus_src is absent"
  exit 77
fi
skip() {
  if [[ ${TEZGAH_CUDA_REQUIRED:-0} == 1 ]]; then fail "$* (TEZGAH_CUDA_REQUIRED=1)"; fi
  echo "SKIPPED: $*"
  exit 77
}
ngpu=$("$bin" info 2>/dev/null | grep -cE '^  device [0-9]+:')
((ngpu >= 2)) || skip "needs 2 CUDA devices, found $ngpu; tezgah info: $("$bin" info 2>&1 | grep -m1 '^cuda')$no_cuda"
[[ -x $diff_bin ]] || fail "$diff_bin is not built"
rm -rf "$scratch" && mkdir -p "$scratch"
head -c 60000 "$corpus_src" >"$scratch/corpus.txt"
cd "$scratch" || exit 1
export TEZGAH_DIST_TIMEOUT=60 NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
args=(--backend cuda --data "$scratch/corpus.txt" --vocab-size 300 --arch gpt2 --n-layer 2 --n-head 2
      --d-model 64 -T 64 --steps 8 --val-every 4 --val-batches 2 --ckpt-every 4 --sample-tokens 0 --quiet)

"$bin" train "${args[@]}" --precision fp32 -B 4 --run-dir g1 || fail "1-GPU run failed"
if ! "$bin" train "${args[@]}" --precision fp32 -B 2 --nproc 2 --run-dir g2 2>g2.err; then
  cat g2.err >&2
  grep -q "nccl: cannot load" g2.err && skip "NCCL is not available: $(grep -m1 'nccl:' g2.err)"
  fail "2-GPU run failed"
fi
echo "1. 2 GPUs vs 1 GPU (global batch 4, fp32)"
metrics_close g1 g2 1e-5
params_close g1 g2 1e-4

echo "2. ZeRO-1 vs none (bf16)"
"$bin" train "${args[@]}" -B 2 --nproc 2 --run-dir b2 || fail "2-GPU bf16 run failed"
"$bin" train "${args[@]}" -B 2 --nproc 2 --zero 1 --run-dir b2z 2>b2z.err || { cat b2z.err >&2; fail "2-GPU ZeRO run failed"; }
metrics_close b2 b2z 0 exact
params_same b2 b2z

echo "3. resume a 2-GPU checkpoint on 2 GPUs and on 1"
"$bin" train "${args[@]}" --precision fp32 -B 2 --nproc 2 --stop-after 4 --run-dir r || fail "2-GPU run to step 4 failed"
cp -r r r2 && cp -r r r1
"$bin" train --resume r2 --nproc 2 --quiet --sample-tokens 0 || fail "resume on 2 GPUs failed"
"$bin" train --resume r1 --quiet --sample-tokens 0 || fail "resume on 1 GPU failed"
metrics_close g2 r2 0 exact
params_same g2 r2
metrics_close g2 r1 1e-5
params_close g2 r1 1e-4

echo "4. a killed rank ends the run"
t0=$SECONDS
TEZGAH_DEBUG_KILL=1:3 timeout 120 "$bin" train "${args[@]}" -B 2 --nproc 2 --run-dir k >k.out 2>&1
rc=$?
((rc == 1)) || { cat k.out >&2; fail "expected exit status 1 after rank 1 was killed, got $rc"; }
((SECONDS - t0 <= 60)) || fail "the run took $((SECONDS - t0)) s to end after rank 1 was killed"
grep -q "rank 1 of 2 (pid [0-9]*) was killed by signal 9" k.out || { cat k.out >&2; fail "the error does not name rank 1"; }
echo "  ended with status $rc after $((SECONDS - t0)) s: $(grep -m1 'rank 1 of 2' k.out)"
echo "PASS"
