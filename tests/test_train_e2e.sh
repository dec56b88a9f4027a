#!/usr/bin/env bash
# End to end on the CPU, through the CLI as a user runs it:
#  1. train a tiny llama on tiny shakespeare; the validation loss must fall below 60% of its
#     initial value; the final sample must decode to text;
#  2. an interrupted run (--stop-after) resumed with --resume reproduces the uninterrupted
#     run's per-step losses exactly (same thread count);
#  3. bad input (missing / empty / binary corpus, unknown flag, impossible configs, T above
#     the context, unwritable run directory) → one-line error, exit code ≠ 0, no half-written
#     file.
# Usage (from ctest): bash test_train_e2e.sh <tezgah-binary> <shared-dir> <scratch-dir>
# TZ_E2E_QUICK=1 (the sanitizer stage, where a step is ~20x slower) trains 60 steps and only
# requires the validation loss to fall (below 90% of its initial value); it says so.
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
corpus=$shared/data/tinyshakespeare.txt
if [[ ! -f $corpus ]]; then
  echo "SKIPPED: $corpus is absent (../shared not available)"
  exit 77
fi
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
enter_scratch
export OMP_NUM_THREADS=2

# ---- 1. training brings the validation loss well down ----
small=(--data "$corpus" --vocab-size 320 --n-layer 2 --d-model 64 -B 16 -T 64 --lr 1e-2 --warmup 20)
steps=600 frac=0.6
if [[ ${TZ_E2E_QUICK:-0} == 1 ]]; then
  steps=60 frac=0.9
  echo "quick mode (TZ_E2E_QUICK=1): $steps steps, final val loss must be below ${frac} x initial"
fi
"$tz" train "${small[@]}" --run-dir runs/a --steps $steps --val-every 100 --sample-tokens 120 --seed 7 \
  >sample.txt 2>train.log || fail "training exited with $?"
first=$(grep -m1 -o '"val_loss":[0-9.e+-]*' runs/a/metrics.jsonl | cut -d: -f2)
last=$(grep '"final":true' runs/a/metrics.jsonl | grep -o '"val_loss":[0-9.e+-]*' | cut -d: -f2)
echo "validation loss: initial $first, final $last"
if awk -v a="$first" -v b="$last" -v f="$frac" 'BEGIN { exit !(b < f * a) }'; then
  ok "final val loss $last < $frac x initial $first"
else
  fail "final val loss $last is not below $frac x initial $first"
fi
chars=$(wc -c <sample.txt)
letters=$(tr -cd 'A-Za-z' <sample.txt | wc -c)
if ((chars > 60 && letters * 2 > chars)); then ok "sample decodes to text ($chars bytes)"; else fail "sample is not text: $(head -c 200 sample.txt)"; fi
"$tz" sample runs/a --prompt "ROMEO:" --tokens 40 --temperature 0 >greedy.txt 2>&1 || fail "sample exited with $?"
grep -q '^ROMEO:' greedy.txt || fail "sample does not start with the prompt"
[[ -e runs/latest/checkpoint.tzc ]] || fail "runs/latest does not point to the run"

# ---- 2. resume equality ----
resume=(--data "$corpus" --vocab-size 320 --n-layer 1 --d-model 32 -B 4 -T 32 --steps 24 --ckpt-every 5
  --val-every 6 --sample-tokens 0 --quiet --seed 3)
"$tz" train "${resume[@]}" --run-dir runs/full || fail "uninterrupted run failed"
"$tz" train "${resume[@]}" --run-dir runs/cut --stop-after 7 || fail "interrupted run failed"
"$tz" train --resume runs/cut --stop-after 9 --quiet --sample-tokens 0 || fail "first resume failed"
"$tz" train --resume runs/cut --quiet --sample-tokens 0 || fail "second resume failed"
steps_full=$(grep -c '"loss"' runs/full/metrics.jsonl 2>/dev/null)
if [[ ${steps_full:-0} == 24 ]] && diff <(grep -o '"loss":[^,]*\|"val_loss":[^,}]*' runs/full/metrics.jsonl) \
  <(grep -o '"loss":[^,]*\|"val_loss":[^,}]*' runs/cut/metrics.jsonl) >/dev/null; then
  ok "resumed run's losses equal the uninterrupted run's ($steps_full steps)"
else
  fail "resumed run's losses differ from the uninterrupted run's"
fi

# ---- 3. bad input ----
: >empty.txt
head -c 4096 /dev/urandom >binary.bin
printf 'x' >binary2.bin && head -c 100 /dev/zero >>binary2.bin
printf 'plain file' >notadir
expect_error() { # expect_error NAME EXPECTED-SUBSTRING -- ARGS...
  local name=$1 want=$2
  shift 3
  local before
  before=$(find . -name '*.tmp.*' | wc -l)
  "$tz" "$@" >out.txt 2>err.txt
  local rc=$?
  local lines
  lines=$(wc -l <err.txt)
  if ((rc == 0)); then
    fail "$name: exit code 0"
  elif ((rc >= 128)); then
    fail "$name: crashed (exit $rc)"
  elif ((lines != 1)); then
    fail "$name: expected one line on stderr, got $lines: $(head -c 300 err.txt)"
  elif ! grep -q '^tezgah: error: ' err.txt; then
    fail "$name: message does not start with 'tezgah: error:': $(cat err.txt)"
  elif ! grep -qF -- "$want" err.txt; then
    fail "$name: message lacks '$want': $(cat err.txt)"
  elif (($(find . -name '*.tmp.*' | wc -l) != before)); then
    fail "$name: left a temporary file behind"
  else
    ok "$name: $(cat err.txt)"
  fi
}
q=(--quiet --sample-tokens 0 --steps 2)
expect_error "missing corpus" "nope.txt" -- train --data nope.txt --run-dir runs/bad1 "${q[@]}"
expect_error "empty corpus" "empty.txt: file is empty" -- train --data empty.txt --run-dir runs/bad2 "${q[@]}"
expect_error "binary corpus" "binary2.bin: looks binary" -- train --data binary2.bin --run-dir runs/bad3 "${q[@]}"
expect_error "random-bytes corpus" "binary.bin" -- train --data binary.bin --run-dir runs/bad3b "${q[@]}"
expect_error "unknown flag" "unknown option --frobnicate" -- train --frobnicate 3
expect_error "non-numeric flag" "--steps: 'ten' is not a decimal integer" -- train --steps ten
expect_error "negative flag" "--batch-size: -4 is out of range" -- train -B -4
expect_error "n_head not dividing d_model" "--n-head 5 does not divide --d-model 64" -- \
  train "${small[@]}" --n-head 5 --run-dir runs/bad4 "${q[@]}"
expect_error "n_kv_head not dividing n_head" "--n-kv-head 3 does not divide n_head=4 (the default)" -- \
  train "${small[@]}" --n-kv-head 3 --run-dir runs/bad5 "${q[@]}"
expect_error "T above context" "T=64 is above the model's context max_seq_len=32" -- \
  train "${small[@]}" --max-seq-len 32 --run-dir runs/bad6 "${q[@]}"
expect_error "unwritable run directory" "notadir/run" -- train "${small[@]}" --run-dir notadir/run "${q[@]}"
expect_error "unknown command" "unknown command 'trian'" -- trian
expect_error "sample without a run" "nothing-here" -- sample nothing-here
# a prompt longer than the context keeps its last tokens, with one warning line (it was refused)
"$tz" sample runs/full --prompt "$(head -c 3000 "$corpus")" --tokens 20 --temperature 0 >long.out 2>long.err
rc=$?
if ((rc == 0)) && [[ $(wc -l <long.err) == 1 ]] &&
  grep -q "^tezgah: warning: --prompt: [0-9]* tokens and the end-of-text token that starts the sequence exceed the model's context max_seq_len=32: the prompt's last 32 tokens are kept, its first [0-9]* and the end-of-text token dropped$" long.err &&
  cmp -s <(head -c 3000 "$corpus") <(head -c 3000 long.out) && (($(wc -c <long.out) > 3000)); then
  ok "prompt longer than context: its tail kept: $(cat long.err)"
else
  fail "prompt longer than context: exit $rc, want 0, the prompt and a continuation on stdout, one warning: $(head -c 400 long.err)"
fi
expect_error "non-UTF-8 prompt" "--prompt: invalid UTF-8" -- sample runs/full --prompt $'abc\xff'
for d in runs/bad1 runs/bad2 runs/bad3 runs/bad4 runs/bad5 runs/bad6; do
  [[ -e $d/checkpoint.tzc ]] && fail "$d: a checkpoint was written for a failed run"
done

if ((failures)); then
  echo "$failures failed"
  exit 1
fi
echo "all end-to-end checks passed"
