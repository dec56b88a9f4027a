#!/usr/bin/env bash
# Numerical guards: NaN / Inf injected into a step's gradients / activations (debug flags) make
# that step skip with "skipped": true and a reason in metrics.jsonl while training continues;
# the z-score rules (--skip-loss-z / --skip-norm-z) skip spiking steps, and a resumed run makes
# the same decisions as an uninterrupted one (the windows are in the checkpoint).
# Usage (from ctest): bash test_numerical_guards.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=${1:?tezgah binary}
shared=${2:?shared dir}
scratch=${3:?scratch dir}
src=$shared/data/tinyshakespeare.txt
[[ -f $src ]] || { echo "SKIPPED: $src is absent"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch"
head -c 24000 "$src" >"$scratch/corpus.txt"
args=(--data "$scratch/corpus.txt" --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --vocab-size 300
      --steps 60 --threads 1 --sample-tokens 0 --val-every 0 --ckpt-every 0 --quiet)

# 1. injected NaN (gradients, steps 3 and 5) and +Inf (activations, step 7)
"$bin" train "${args[@]}" --run-dir "$scratch/inj" --debug-inject-nan 3,5 --debug-inject-inf 7 ||
  fail "training with injected NaN/Inf did not complete"
m=$scratch/inj/metrics.jsonl
[[ $(grep -c '"loss"' "$m") == 60 ]] || fail "expected 60 step records"
skips=$(grep '"skipped":true' "$m" | grep -o '"step":[0-9]*' | tr '\n' ' ')
[[ $skips == '"step":3 "step":5 "step":7 ' ]] || fail "skipped steps are '$skips', want 3 5 7"
grep '"step":3,' "$m" | grep -q '"reason":"non-finite grad norm"' || fail "step 3 reason"
grep '"step":7,' "$m" | grep -q '"reason":"non-finite loss"' || fail "step 7 reason"
grep '"step":60,' "$m" | grep -q '"loss":[0-9]' || fail "training did not continue with finite losses"
! grep '"step":\(8\|9\|10\),' "$m" | grep -q null || fail "non-finite values after the injected steps"
echo "ok: injected NaN/Inf steps 3,5,7 skipped and recorded, 57 steps applied"

# 2. z-score rule on the grad norm (a tight threshold: some steps must be skipped, none before
#    the window holds 16 values)
"$bin" train "${args[@]}" --run-dir "$scratch/z" --skip-norm-z 0.5 --skip-loss-z 3 || fail "z-score run failed"
m=$scratch/z/metrics.jsonl
nz=$(grep -c '"reason":"grad norm z-score' "$m")
((nz > 0)) || fail "--skip-norm-z 0.5 skipped no step"
first=$(grep '"skipped":true' "$m" | head -1 | grep -o '"step":[0-9]*' | cut -d: -f2)
((first > 16)) || fail "a z-score skip at step $first, before the window has 16 values"
echo "ok: --skip-norm-z 0.5 skipped $nz of 60 steps (first at step $first)"

# 3. resume keeps the z-score windows: stop after 30 steps, resume, compare with run 2
"$bin" train "${args[@]}" --run-dir "$scratch/zr" --skip-norm-z 0.5 --skip-loss-z 3 --stop-after 30 ||
  fail "stop-after session failed"
"$bin" train --resume "$scratch/zr" --quiet --sample-tokens 0 --threads 1 || fail "resume failed"
ext() { grep -o '"step":[0-9]*,"loss":[^,]*\|"skipped":true,"reason":"[^"]*"' "$1"; }
diff <(ext "$scratch/z/metrics.jsonl") <(ext "$scratch/zr/metrics.jsonl") >/dev/null ||
  fail "resumed z-score run differs from the uninterrupted one"
echo "ok: resumed z-score run identical (losses and skip decisions)"
