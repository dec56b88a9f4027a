#!/usr/bin/env bash
# Loss scaling (train --loss-scale, src/train/loss_scale.h) on the CPU backend, tiny models:
# 1. a power-of-two scale is exact in fp32: --loss-scale 1024 / 2^24 / dynamic give losses,
#    grad norms and final parameters and AdamW moments bit-identical to --loss-scale off
#    (llama and gpt2, grad accumulation 2);
# 2. overflow: +Inf injected at step 5 with dynamic scaling skips that step and halves S
#    (metrics.jsonl "loss_scale"), training continues, and a run resumed from a checkpoint
#    after that step equals the uninterrupted one (losses and S);
# 3. growth: with TEZGAH_LOSS_SCALE_GROWTH=5, S doubles every 5 clean steps up to 2^24; S is
#    not halved below 1; the clean-step count survives --resume;
# 4. bad values: one error line naming the flag and the value, nothing written.
# Usage (from ctest): bash test_loss_scale.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=${1:?tezgah binary}
shared=${2:?shared dir}
scratch=${3:?scratch dir}
src=$shared/data/tinyshakespeare.txt
[[ -f $src ]] || { echo "SKIPPED: $src is absent"; exit 77; }
diff_bin=$(dirname "$bin")/tz_ckpt_diff
[[ -x $diff_bin ]] || { echo "FAIL: $diff_bin is not built" >&2; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch"
head -c 24000 "$src" >"$scratch/corpus.txt"
args=(--data "$scratch/corpus.txt" --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --vocab-size 300
      --threads 1 --sample-tokens 0 --val-every 0 --ckpt-every 0 --quiet)
# a step record without its timings (tok_per_s, elapsed_s)
ext() { sed -E 's/,"tok_per_s":[^,}]*//; s/,"elapsed_s":[^,}]*//' "$1"; }

# 1. exactness
for shape in "--arch llama" "--arch gpt2 --grad-accum 2"; do
  tag=${shape// /}
  "$bin" train "${args[@]}" $shape --steps 30 --run-dir "$scratch/off$tag" --loss-scale off || fail "off run ($shape)"
  for ls in 1024 16777216 dynamic; do
    d=$scratch/ls$ls$tag
    "$bin" train "${args[@]}" $shape --steps 30 --run-dir "$d" --loss-scale $ls || fail "--loss-scale $ls run ($shape)"
    diff <(ext "$scratch/off$tag/metrics.jsonl") <(ext "$d/metrics.jsonl" | sed 's/,"loss_scale":[0-9]*//') ||
      fail "--loss-scale $ls ($shape): metrics differ from --loss-scale off"
    out=$("$diff_bin" "$scratch/off$tag/checkpoint.tzc" "$d/checkpoint.tzc" params adam_m adam_v) ||
      fail "tz_ckpt_diff: $out"
    [[ $(grep -c 'differ=0 ' <<<"$out") == 3 ]] || fail "--loss-scale $ls ($shape): final state differs: $out"
  done
done
grep -q '"step":1,.*"loss_scale":65536}' "$scratch/lsdynamic--archllama/metrics.jsonl" ||
  fail "step 1 of a dynamic run does not record loss_scale 65536"
echo "ok: --loss-scale 1024, 2^24 and dynamic bit-identical to off over 30 steps (llama; gpt2 with accum 2)"

# 2. overflow at step 5: skipped, S halved, training continues; resumed after it: identical
"$bin" train "${args[@]}" --steps 30 --run-dir "$scratch/inf" --loss-scale dynamic --debug-inject-inf 5 ||
  fail "dynamic run with +Inf at step 5"
m=$scratch/inf/metrics.jsonl
[[ $(grep -c '"loss"' "$m") == 30 ]] || fail "expected 30 step records"
grep '"step":5,' "$m" | grep -q '"skipped":true,"reason":"non-finite loss","loss_scale":32768}' ||
  fail "step 5 is not skipped with loss_scale 32768: $(grep '"step":5,' "$m")"
[[ $(grep -c '"skipped":true' "$m") == 1 ]] || fail "another step than 5 skipped"
[[ $(grep -c '"loss_scale"' "$m") == 2 ]] || fail "loss_scale recorded on other steps than 1 and 5"
grep '"step":30,' "$m" | grep -q '"loss":[0-9]' || fail "training did not continue with finite losses"
"$bin" train "${args[@]}" --steps 30 --run-dir "$scratch/infr" --loss-scale dynamic --debug-inject-inf 5 \
  --stop-after 8 || fail "stop-after session"
grep -q '"loss_scale":32768' "$scratch/infr/checkpoint.tzc" 2>/dev/null ||
  strings "$scratch/infr/checkpoint.tzc" | grep -q '"loss_scale":32768' || fail "checkpoint lacks loss_scale 32768"
"$bin" train --resume "$scratch/infr" --quiet --sample-tokens 0 --threads 1 --loss-scale dynamic || fail "resume"
diff <(ext "$m") <(ext "$scratch/infr/metrics.jsonl") || fail "resumed run differs from the uninterrupted one"
echo "ok: +Inf at step 5 skipped, S 65536 -> 32768, 29 steps applied; resumed after step 8: identical"

# 3. growth every 5 clean steps up to 2^24, halving not below 1, the clean count resumed
export TEZGAH_LOSS_SCALE_GROWTH=5
"$bin" train "${args[@]}" --steps 50 --run-dir "$scratch/grow" --loss-scale dynamic || fail "growth run"
got=$(grep -o '"step":[0-9]*,.*"loss_scale":[0-9]*' "$scratch/grow/metrics.jsonl" |
      sed -E 's/"step":([0-9]*),.*"loss_scale":([0-9]*)/\1:\2/' | tr '\n' ' ')
want="1:65536 5:131072 10:262144 15:524288 20:1048576 25:2097152 30:4194304 35:8388608 40:16777216 "
[[ $got == "$want" ]] || fail "growth: loss_scale records '$got', want '$want'"
# stop at step 7 (2 clean steps after the doubling at 5) and resume: the next doubling at 10
"$bin" train "${args[@]}" --steps 50 --run-dir "$scratch/growr" --loss-scale dynamic --stop-after 7 || fail "stop"
# (without --loss-scale: the run's recorded option holds)
"$bin" train --resume "$scratch/growr" --quiet --sample-tokens 0 --threads 1 || fail "resume"
diff <(ext "$scratch/grow/metrics.jsonl") <(ext "$scratch/growr/metrics.jsonl") ||
  fail "resumed growth run differs (S or its clean-step count not restored)"
# 17 overflows in a row: 2^16 halves to 1 after 16 and stays there
"$bin" train "${args[@]}" --steps 20 --run-dir "$scratch/floor" --loss-scale dynamic \
  --debug-inject-inf "$(seq -s, 1 17)" || fail "floor run"
got=$(grep -o '"step":[0-9]*,.*"loss_scale":[0-9]*' "$scratch/floor/metrics.jsonl" | tail -2 |
      sed -E 's/"step":([0-9]*),.*"loss_scale":([0-9]*)/\1:\2/' | tr '\n' ' ')
[[ $got == "15:2 16:1 " ]] || fail "halving: last loss_scale records '$got', want '15:2 16:1 '"
unset TEZGAH_LOSS_SCALE_GROWTH
echo "ok: S doubles every 5 clean steps to 2^24 and stops there; halves to 1 and stops; resumed exactly"

# 4. bad values
for v in 3 -1 abc 0 33554432 1.5 ''; do
  rm -rf "$scratch/bad"
  err=$("$bin" train "${args[@]}" --steps 2 --run-dir "$scratch/bad" --loss-scale "$v" 2>&1 >/dev/null) &&
    fail "--loss-scale $v accepted"
  [[ $(wc -l <<<"$err") == 1 && $err == "tezgah: error: --loss-scale: '$v' "* ]] ||
    fail "--loss-scale $v: error is not one line naming the flag and value: $err"
  [[ ! -e $scratch/bad ]] || fail "--loss-scale $v left $scratch/bad behind"
done
echo "ok: --loss-scale 3, -1, abc, 0, 2^25, 1.5 and '' (an empty value) refused with one line"
# an empty --precision likewise (it trained as the default before)
err=$("$bin" train "${args[@]}" --steps 2 --run-dir "$scratch/bad" --precision= 2>&1 >/dev/null) &&
  fail "--precision= accepted"
[[ $(wc -l <<<"$err") == 1 && $err == "tezgah: error: --precision: ''"* ]] || fail "--precision=: $err"
echo "ok: --precision= refused with one line"
