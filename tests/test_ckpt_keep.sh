#!/usr/bin/env bash
# train --keep N / --keep-best: the last N checkpoints stay as checkpoint-<step>.tzc (the newest
# is checkpoint.tzc itself, hard-linked), checkpoint-best.tzc holds the state with the lowest
# validation loss (its step and loss match metrics.jsonl), every kept file loads, --resume keeps
# rotating (the setting is recorded), and SIGKILLs during rotation never leave a partial or
# extra checkpoint behind once the run has finished (resuming a finished run completes a cut rotation,
# and a cut --keep-best link when the final validation was the best).
# Usage (from ctest): bash test_ckpt_keep.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
src=$shared/data/tinyshakespeare.txt
[[ -f $src ]] || { echo "SKIPPED: $src is absent"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
t0=$SECONDS
head -c 24000 "$src" >corpus.txt
small=(--data corpus.txt --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1
       --sample-tokens 0 --quiet --val-batches 2)
kept() { (cd "$1" && ls checkpoint-[0-9]*.tzc 2>/dev/null | tr '\n' ' '); }

"$bin" train "${small[@]}" --steps 30 --ckpt-every 4 --val-every 3 --lr 1e-2 --keep 3 --keep-best --run-dir r ||
  fail "train --keep 3 --keep-best"
[[ $(kept r) == "checkpoint-00000024.tzc checkpoint-00000028.tzc checkpoint-00000030.tzc " ]] ||
  fail "kept checkpoints: $(kept r)"
[[ r/checkpoint.tzc -ef r/checkpoint-00000030.tzc ]] || fail "checkpoint.tzc is not the newest kept one"
for f in r/checkpoint-*.tzc; do
  "$bin" sample "$f" --tokens 2 --temperature 0 >/dev/null 2>err.txt || fail "$f does not load: $(cat err.txt)"
done
# the best: the lowest val_loss in metrics.jsonl, measured on the model after step-1 steps
# (after `step` steps for the final line)
best=$(grep -o '"step":[0-9]*,.*"val_loss":[0-9.e+-]*.*' r/metrics.jsonl |
  sed -E 's/^"step":([0-9]+),.*"val_loss":([0-9.e+-]+)(.*)$/\2 \1 \3/' |
  awk '{ s = ($3 ~ /final/) ? $2 : $2 - 1; if (s > 0 && (n == 0 || $1 < b)) { b = $1; bs = s; n = 1 } } END { print bs }')
[[ -n $best ]] || fail "no validation losses in metrics.jsonl"
"$bin" info r/checkpoint-best.tzc >best.txt || fail "checkpoint-best.tzc does not load"
grep -q "^training: step $best of 30" best.txt || fail "checkpoint-best.tzc is not at step $best: $(grep training best.txt)"

# resume: the recorded --keep rotates on
"$bin" train --resume r --steps 38 --quiet --sample-tokens 0 || fail "resume"
[[ $(kept r) == "checkpoint-00000032.tzc checkpoint-00000036.tzc checkpoint-00000038.tzc " ]] ||
  fail "after resume kept: $(kept r)"
# resume with a lower --keep: the older checkpoint-<step>.tzc files go
"$bin" train --resume r --steps 40 --keep 1 --quiet --sample-tokens 0 || fail "resume --keep 1"
[[ -z $(kept r) ]] || fail "after resume --keep 1 kept: $(kept r)"
# --keep-best with --val-every 0: a notice (the final validation decides), and no 'nan' summary without validation
"$bin" train --data corpus.txt --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 \
  --sample-tokens 0 --val-batches 2 --steps 4 --val-every 0 --keep-best --run-dir v0 2>v0.err || fail "--val-every 0 --keep-best"
grep -q 'note: --keep-best with --val-every 0' v0.err || fail "no notice for --keep-best --val-every 0: $(cat v0.err)"
[[ -f v0/checkpoint-best.tzc ]] || fail "--val-every 0 --keep-best: no checkpoint-best.tzc from the final validation"
shard=$(ls "$PWD"/.cache/*/train.bin | head -1)
"$bin" train --train-shards "$shard" --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 \
  --sample-tokens 0 --steps 2 --run-dir nv 2>nv.err || fail "train without validation: $(cat nv.err)"
grep -q 'no validation' nv.err && ! grep -q 'nan' nv.err || fail "summary without validation: $(grep done: nv.err)"

# SIGKILL at random moments of a run that checkpoints and rotates every step
RANDOM=11
"$bin" train "${small[@]}" --steps 120 --ckpt-every 1 --val-every 5 --keep 2 --keep-best --run-dir k --stop-after 1 ||
  fail "first session"
for i in $(seq 1 12); do
  "$bin" train --resume k --quiet --sample-tokens 0 &
  pid=$!
  sleep "0.0$((RANDOM % 9 + 1))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  for f in k/checkpoint*.tzc; do
    "$bin" info "$f" >/dev/null 2>err.txt || fail "after kill $i: $f does not load: $(cat err.txt)"
  done
done
"$bin" train --resume k --quiet --sample-tokens 0 || fail "final session"
[[ $(kept k) == "checkpoint-00000119.tzc checkpoint-00000120.tzc " ]] || fail "after kills kept: $(kept k)"
! compgen -G "k/*.tmp.*" >/dev/null || fail "temporary files left: $(ls k)"
[[ -f k/checkpoint-best.tzc ]] || fail "no checkpoint-best.tzc after the kills"
# a kill between the final save and its rotation (the kills above land there only sometimes):
# one old name too many and the final one missing; resuming the finished run completes it
ln k/checkpoint.tzc k/checkpoint-00000100.tzc && rm k/checkpoint-00000120.tzc || fail "setting up a cut rotation"
"$bin" train --resume k --quiet --sample-tokens 0 || fail "resume of the finished run"
[[ $(kept k) == "checkpoint-00000119.tzc checkpoint-00000120.tzc " ]] || fail "cut rotation not completed: $(kept k)"
[[ k/checkpoint.tzc -ef k/checkpoint-00000120.tzc ]] || fail "checkpoint-00000120.tzc is not checkpoint.tzc"
# nothing pending: a finished run's resume writes nothing, and a lower --keep given now removes
# nothing (the rotation uses the run's recorded --keep; the command says "nothing to do")
before=$(ls -i k | sort)
"$bin" train --resume k --keep 1 --quiet --sample-tokens 0 || fail "resume of the finished run with --keep 1"
[[ $(ls -i k | sort) == "$before" ]] || fail "a finished run's resume changed the directory: $(ls k)"
# a kill between the final save and its --keep-best link, the final validation being the best
# (the only one: --val-every 0): checkpoint-best.tzc is still an older checkpoint; resuming the
# finished run makes it the final one. Not when the final validation was not the best.
"$bin" train "${small[@]}" --steps 6 --val-every 0 --keep-best --ckpt-every 2 --keep 3 --run-dir b ||
  fail "train --val-every 0 --keep-best --keep 3"
[[ b/checkpoint-best.tzc -ef b/checkpoint.tzc ]] || fail "checkpoint-best.tzc is not the final checkpoint"
ln -f b/checkpoint-00000004.tzc b/checkpoint-best.tzc || fail "setting up a cut --keep-best link"
"$bin" train --resume b --sample-tokens 0 2>b.err || fail "resume of the finished run: $(cat b.err)"
[[ b/checkpoint-best.tzc -ef b/checkpoint.tzc ]] || fail "cut --keep-best link not completed: $(ls -i b)"
grep -q '^note: b: completed the --keep-best link an interruption cut short (checkpoint-best.tzc: the final checkpoint, step 6, val loss [0-9.]*)$' b.err ||
  fail "no note for the completed --keep-best link: $(cat b.err)"
"$bin" info b/checkpoint-best.tzc | grep -q '^training: step 6 of 6' || fail "checkpoint-best.tzc is not at step 6"
# the same cut, but the checkpoint says an earlier validation was the best: nothing to complete
edit=$(dirname "$bin")/tz_ckpt_edit
"$edit" get b/checkpoint.tzc meta >meta.json || fail "tz_ckpt_edit get"
grep -q '"best_val_loss":' meta.json || fail "no best_val_loss in the meta: $(head -c 300 meta.json)"
sed -E 's/"best_val_loss":[0-9.eE+-]+/"best_val_loss":0.5/' meta.json >meta_best.json
"$edit" set b/checkpoint.tzc b/edited.tzc meta meta_best.json && mv b/edited.tzc b/checkpoint.tzc || fail "tz_ckpt_edit set"
ln -f b/checkpoint.tzc b/checkpoint-00000006.tzc && ln -f b/checkpoint-00000004.tzc b/checkpoint-best.tzc # no --keep work
before=$(ls -i b | sort)
"$bin" train --resume b --sample-tokens 0 2>b.err || fail "resume of the edited finished run: $(cat b.err)"
[[ $(ls -i b | sort) == "$before" ]] || fail "a finished run whose best was earlier changed: $(ls -i b)"
! grep -q 'keep-best' b.err || fail "a note for a --keep-best link that was not cut: $(cat b.err)"
echo "ok: --keep/--keep-best rotation, resume, 12 kills ($((SECONDS - t0)) s)"
