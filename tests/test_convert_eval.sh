#!/usr/bin/env bash
# convert / eval / sample on foreign checkpoints, through the CLI:
#  1. llama2.c stories260K → run directory (with tok512, stored as its tokenizer.bin) → sample
#     gives run.c's exact output, the same bytes as sampling the .bin directly;
#  2. a tiny gpt2 trained here → llm.c file (fp32 and bf16) → eval of the run, of the fp32
#     file (identical loss) and of the bf16 file (close); --json writes loss and perplexity;
#     the llm.c file converts back to a run with identical eval;
#  3. misuse (llama → llmc, no --data, unknown --from) → one-line error, exit code != 0.
# Usage (from ctest): bash test_convert_eval.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
l2=$shared/llama2c
shards=$shared/llmc
if [[ ! -f $l2/stories260K.bin || ! -f $shards/tiny_shakespeare_val.bin ]]; then
  echo "SKIPPED: ../shared/llama2c or ../shared/llmc is absent"
  exit 77
fi
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
enter_scratch
export OMP_NUM_THREADS=1
want=f5a0e67db7424051520e7d8db9880b3dc2aa13577db570c28805c1b51c42eaf0

# ---- 1. llama2.c ----
"$tz" convert --from llama2c "$l2/stories260K.bin" --tokenizer "$l2/tok512.bin" --out st 2>convert.log ||
  fail "convert llama2c: $(cat convert.log)"
got=$("$tz" sample st --temperature 0 --tokens 200 | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] && ok "converted stories260K samples run.c's output" || fail "converted run: sha256 $got"
# the run holds the tokenizer beside its checkpoint (as a trained run does): tok512.bin's bytes
cmp -s st/tokenizer.bin "$l2/tok512.bin" && ok "converted run holds tokenizer.bin" || fail "st/tokenizer.bin: $(ls st)"
[[ $("$tz" encode --tokenizer st/tokenizer.bin --bos 'Once upon a time') == "[1, 403, 407, 261, 378]" ]] &&
  ok "the run's tokenizer.bin encodes" || fail "encode --tokenizer st/tokenizer.bin"
got=$("$tz" sample "$l2/stories260K.bin" --tokenizer "$l2/tok512.bin" --temperature 0 --tokens 200 --prompt "Once upon a time" | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] && ok "direct .bin with a prompt" || fail "direct .bin: sha256 $got"

# ---- 2. llm.c ----
"$tz" train --arch gpt2 --n-layer 1 --n-head 2 --d-model 32 -B 2 -T 32 --steps 3 --vocab-size 50257 \
  --train-shards "$shards/tiny_shakespeare_train.bin" --run-dir g --sample-tokens 0 --quiet || fail "train gpt2"
"$tz" convert --to llmc g --out g.bin 2>/dev/null || fail "convert --to llmc"
"$tz" convert --to llmc g --out g16.bin --bf16 2>/dev/null || fail "convert --to llmc --bf16"
[[ $(stat -c %s g.bin) == $((1024 + 4 * 1623520)) ]] && ok "llm.c fp32 file size" || fail "g.bin size $(stat -c %s g.bin)"
[[ $(stat -c %s g16.bin) == $((1024 + 2 * 1623520)) ]] && ok "llm.c bf16 file size" || fail "g16.bin size"
ev() { "$tz" eval "$1" --data "$shards/tiny_shakespeare_val.bin" --batches 4 -T 32 "${@:2}" | sed 's/.*loss/loss/'; }
a=$(ev g) b=$(ev g.bin --json e.json) c=$(ev g16.bin)
[[ -n $a && $a == "$b" ]] && ok "eval: run and llm.c file agree ($a)" || fail "eval run '$a' vs llm.c '$b'"
[[ -n $c && $c != "$a" ]] && ok "eval bf16: $c" || fail "eval bf16 '$c'"
grep -q '"perplexity"' e.json && grep -q '"loss"' e.json && ok "eval --json" || fail "eval --json: $(cat e.json)"
"$tz" convert g.bin --out g2 2>/dev/null || fail "convert llm.c back"
[[ $(ev g2) == "$a" ]] && ok "llm.c → run → eval identical" || fail "roundtrip eval $(ev g2)"

# ---- 3. misuse ----
one_line_error() { # cmd...
  "$@" >/dev/null 2>err.txt
  local rc=$?
  [[ $rc -ne 0 && $(wc -l <err.txt) -eq 1 ]] && ok "error: $(cat err.txt)" || fail "$* → rc $rc: $(cat err.txt)"
}
one_line_error "$tz" convert --to llmc st --out x.bin
one_line_error "$tz" eval g
one_line_error "$tz" convert --from gguf g.bin --out x
one_line_error "$tz" eval "$l2/stories260K.bin" --data "$shards/tiny_shakespeare_val.bin"
one_line_error "$tz" train --resume "$l2/stories260K.bin"
echo "$failures failures"
exit $((failures > 0))
