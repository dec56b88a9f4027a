#!/usr/bin/env bash
# Bad-input catalog: a table of malformed inputs (checkpoints, shards, tokenizers, corpora,
# flags, prompts, output directories, a full disk), each with the one-line error it must get.
# For every case: exit code != 0 and not a signal; stderr is exactly ONE line, starting with
# "tezgah: error:" and containing the expected text (the file / field / value) -- also where a
# note would precede the refusal had the run started (resume-note-*: --steps replacing the
# run's total, another backend than the run's; train.c holds them until every check passed),
# so those cases run without --quiet; a path option or positional given '' refused naming it
# ("--run-dir: empty path"; --tokenizer '' with what the option takes), and an output that is
# one of the command's inputs refused before any work, the input unchanged (same-*); an output
# file given as '-' where it has no stdout
# form, or as a directory, refused before any work, nothing written (out-*); a resume whose
# first checkpoint into another --run-dir fails leaves neither that directory nor its
# metrics.jsonl (resume-*-fail); a metrics.jsonl not of tezgah's in a --run-dir without a
# checkpoint is refused, kept (stray-metrics-*); no temporary
# file and no new directory left anywhere in the scratch tree; the good checkpoint
# byte-identical afterwards. README explains the params fingerprint that ckpt-fingerprint and
# ckpt-other-config are refused for, where it first names it.
# Usage (from ctest): bash test_bad_inputs.sh <tezgah-binary> <shared-dir> <scratch-dir>
# TZ_BAD_VERBOSE=1 prints every message.
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
edit=$(dirname "$bin")/tz_ckpt_edit
src=$shared/data/tinyshakespeare.txt
[[ -f $src ]] || { echo "SKIPPED: $src is absent"; exit 77; }
[[ -x $edit ]] || { echo "FAIL: helper $edit is not built" >&2; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }
fixtures=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fixtures
readme=$(dirname "$fixtures")/../README.md
mnt= mnt_ro=
cleanup() {
  [[ -n $mnt ]] && mountpoint -q "$mnt" && umount "$mnt"
  [[ -n $mnt_ro ]] && mountpoint -q "$mnt_ro" && umount "$mnt_ro"
  return 0
}
trap cleanup EXIT
for m in "$scratch/w/full" "$scratch/w/ro_mnt"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
rm -rf "$scratch" && mkdir -p "$scratch/w" && cd "$scratch/w" || exit 1

# ---- fixtures -------------------------------------------------------------------------
head -c 24000 "$src" >corpus.txt
small=(--n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 --sample-tokens 0 --val-every 0 --quiet)
"$bin" train --data corpus.txt --vocab-size 300 --steps 4 "${small[@]}" --run-dir good || fail "fixture run failed"
good=good/checkpoint.tzc
shard=$(ls "$PWD"/.cache/*/train.bin) tokjson=$(ls "$PWD"/.cache/*/tokenizer.json)
size=$(stat -c %s "$good")

poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; } # file offset bytes
cp "$good" ck_magic.tzc && poke ck_magic.tzc 0 'XXXX'
cp "$good" ck_version.tzc && poke ck_version.tzc 8 '\x02'
head -c 1000 "$good" >ck_trunc.tzc
head -c $((size - 1)) "$good" >ck_cut1.tzc
head -c 10 "$good" >ck_tiny.tzc
: >ck_empty.tzc
printf 'hello world, this is a text file\n' >notes.txt
printf 'hi' >hi.txt
mkdir -p textrun && cp notes.txt textrun/checkpoint.tzc
printf '\x01\x02' >ck_2bytes.bin
cp "$fixtures/hf_gpt2/model.safetensors" model.safetensors
mkdir -p hf_badjson && cp "$fixtures/hf_gpt2/model.safetensors" hf_badjson/ # config.json line 7 without its ':'
sed 's/^  "attn_pdrop": 0.0,$/  "attn_pdrop" 0.0,/' "$fixtures/hf_gpt2/config.json" >hf_badjson/config.json
cp "$good" ck_garbled.tzc && poke ck_garbled.tzc $((size - 5000)) '\x55\xaa\x55\xaa'
cp "$good" ck_tail.tzc && printf 'junk' >>ck_tail.tzc
"$edit" get "$good" meta >meta.json
sed 's/"fingerprint":"[0-9a-f]*"/"fingerprint":"0123456789abcdef"/' meta.json >m_fp.json
"$edit" set "$good" ck_fp.tzc meta m_fp.json
sed 's/"version":1/"version":7/' meta.json >m_ver.json
"$edit" set "$good" ck_metaver.tzc meta m_ver.json
sed 's/"n_layer":1,//' meta.json >m_nl.json
"$edit" set "$good" ck_nolayer.tzc meta m_nl.json
sed 's/"d_model":32/"d_model":48/' meta.json >m_dm.json # consistent config, other layout
"$edit" set "$good" ck_otherconfig.tzc meta m_dm.json
sed 's/"train":{.*}}$/"x":0}/' meta.json >m_notrain.json
"$edit" set "$good" ck_export.tzc meta m_notrain.json
sed 's/"adam_t":[0-9]*/"adam_t":-1/' meta.json >m_adamt.json # next AdamW step t = 0
"$edit" set "$good" ck_adamt.tzc meta m_adamt.json
sed 's/"step":4,/"step":-3,/' meta.json >m_step.json # training state counts: whole numbers in range
"$edit" set "$good" ck_step.tzc meta m_step.json
sed 's/"skipped":0/"skipped":9/' meta.json >m_skipped.json
"$edit" set "$good" ck_skipped.tzc meta m_skipped.json
sed 's/"step":4,/"step":4,"loss_scale":3,"loss_scale_clean":0,/' meta.json >m_lscale.json
"$edit" set "$good" ck_lscale.tzc meta m_lscale.json
sed 's/"offset":[0-9]*/"offset":1.5/' meta.json >m_offset.json
"$edit" set "$good" ck_offset.tzc meta m_offset.json
sed 's/"epoch":[0-9]*/"epoch":1e300/' meta.json >m_epoch.json
"$edit" set "$good" ck_epoch.tzc meta m_epoch.json
head -c 100 corpus.txt >p100.bin && "$edit" set "$good" ck_params.tzc params p100.bin
# the run's shards gone (its data cache deleted): without the corpus record (a checkpoint from
# before data_prep), and with it but the corpus gone too
sed -e 's/,"data_prep":{[^}]*}//' -e 's|"train_shards":"[^"]*"|"train_shards":"gone/train.bin"|' meta.json >m_noprep.json
"$edit" set "$good" ck_noprep.tzc meta m_noprep.json
sed -e 's|"corpus":"[^"]*"|"corpus":"nocorpus/c.txt"|' -e 's|"train_shards":"[^"]*"|"train_shards":"gone/train.bin"|' meta.json >m_nocorpus.json
"$edit" set "$good" ck_nocorpus.tzc meta m_nocorpus.json
sed -e 's|,"val_shards":"[^"]*"||' meta.json >m_noval.json
sed 's/"precision":"fp32"/"precision":3/' meta.json >m_prec.json # the session record: a name or absent
"$edit" set "$good" ck_prec.tzc meta m_prec.json
sed 's/"backend":"cpu","precision":"fp32"/"backend":"cuda","precision":"bf16"/' meta.json >m_cuda.json # another session's record
"$edit" set "$good" ck_cuda.tzc meta m_cuda.json
"$edit" set "$good" ck_noval.tzc meta m_noval.json
mkdir -p emptyrun
mkdir -p otherrun && cp "$good" otherrun/ # another run: --resume good --run-dir otherrun must not train over it
mkdir -p hf_cfgonly && cp "$fixtures/hf_gpt2/config.json" hf_cfgonly/ # a Hugging Face directory: --resume points to --init-from
# shards
cp "$shard" sh_good.bin
head -c 1500 "$shard" >sh_trunc.bin
head -c 100 "$shard" >sh_tiny.bin
cp "$shard" sh_magic.bin && poke sh_magic.bin 0 '\x01\x00\x00\x00'
cp "$shard" sh_llama3.bin && poke sh_llama3.bin 0 '\xa1\xd9\x34\x01' # 20240801
cp "$shard" sh_version.bin && poke sh_version.bin 4 '\x02'
cp "$shard" sh_ntok0.bin && poke sh_ntok0.bin 8 '\x00\x00\x00\x00'
cp "$shard" sh_bigid.bin && poke sh_bigid.bin $((1024 + 2 * 5)) '\xe8\xfd' # id 65000 at position 5
# GPT-2 ids (llm.c's tiny shakespeare val shard: EOT 50256 first) for a 300-token model / run
cp "$shared/llmc/tiny_shakespeare_val.bin" gpt2_val.bin || fail "fixture: $shared/llmc/tiny_shakespeare_val.bin"
{ head -c 8 "$shard"; printf '\x0a\x00\x00\x00'; head -c 1012 /dev/zero; head -c 20 /dev/zero; } >sh_small.bin
# tokenizers
sed -E 's/("merges":[[:space:]]*\[)("[^"]*")/\1\2, \2/' "$tokjson" >tok_dupmerge.json
sed -E 's/"merges":[[:space:]]*\[[^]]*\]/"merges": []/' "$tokjson" >tok_nomerges.json
sed -E 's/"merges":[[:space:]]*\[[^]]*\]/"no_merges": 0/' "$tokjson" >tok_mergesabsent.json
sed -E 's/("added_tokens":[[:space:]]*\[)/\1{"id": 300, "content": "<|endoftext|>"}, /' "$tokjson" >tok_dupadded.json
head -c 300 "$tokjson" >tok_trunc.json
# tok-missing-*: a --tokenizer that is neither built in nor there gets a line that says what
# --tokenizer takes (it said only "gpt3: No such file or directory")
# a tokenizer of fewer tokens than the model's 300 (ids 280..299 have no text), given with
# --tokenizer and stored in a checkpoint: not an error (below, after the table)
"$bin" tokenizer train --in corpus.txt --out tok280.json --vocab-size 280 2>/dev/null || fail "tokenizer train --vocab-size 280"
"$edit" set "$good" ck_tok280.tzc tokenizer tok280.json
: >tok_empty.json
# a run directory whose tokenizer.json is damaged (text, binary): encode/decode --tokenizer RUN
# named llama2.c's header field (the bytes were read as tokenizer.bin's)
mkdir -p badtok_text badtok_bin && echo 'garbage' >badtok_text/tokenizer.json
printf '\xff\x18\x66\xe2garbage' >badtok_bin/tokenizer.json
# valid JSON that is no object was called "a text file"
echo '[]' >tok_array.json && echo 3 >tok_number.json
# corpora
printf 'abc\0def' >corpus_bin.txt
: >corpus_empty.txt
printf 'hi' >corpus_tiny.txt
# (without --quiet: a corpus too small for a validation split is refused before the BPE is
# trained, so that "data: training a 300-token BPE tokenizer" is not printed first)
head -c 39 corpus.txt >corpus_39.txt
head -c 3000 corpus.txt >corpus_small.txt
# 52 and 60 bytes (past the 40-byte check) that the BPE packs into 13 tokens and into 1: too few
# for a validation split of 2 tokens after encoding
printf 'hello there! hello there! hello there! hello there! ' >corpus_13tok.txt
printf 'ab%.0s' {1..30} >corpus_1tok.txt
touch afile
# inputs that a command is asked to write over (same-*): each must be refused and left as it was
cp corpus.txt same.txt && ln -s same.txt same_link.txt
mkdir -p tokdir imp && cp "$tokjson" tokdir/tokenizer.json && cp "$tokjson" imp/tokenizer.json
cp "$good" ck_same.tzc
same_files=(same.txt tokdir/tokenizer.json imp/tokenizer.json ck_same.tzc)
same_sums=$(sha256sum "${same_files[@]}")
long_prompt=$(head -c 3000 corpus.txt)
printf 'fine\nab\xffc\n' >prompts_bad.txt # line 2, byte 2 of the line (0-based)
printf '\n \t\n\r\n' >prompts_blank.txt     # blank lines alone: no prompt (they are skipped)
mkdir -p rodir outdir # out-isdir-*: an output file named by an existing directory
if [[ $EUID == 0 ]] && mkdir -p ro_mnt && mount -t tmpfs -o size=64k,ro tmpfs ro_mnt 2>/dev/null; then
  umount ro_mnt; ro_how="read-only tmpfs"; ro_dir=ro_mnt
  mount -t tmpfs -o size=64k tmpfs ro_mnt && mnt_ro=$PWD/ro_mnt && mount -o remount,ro ro_mnt
else
  chmod 555 rodir; ro_how="chmod 555 (not root)"; ro_dir=rodir
fi

# ---- the catalog: name | expected text in the message | command (run in the scratch dir) ---
cases=$(cat <<'EOF'
ckpt-bad-magic      |ck_magic.tzc: not a checkpoint: its first int32 1482184792 (0x58585858) is no tezgah ("TZCKPT"), llm.c (20240326) or llama2.c version 1 (0x616b3432) magic, and read as a legacy llama2.c file (no magic): llama2.c header field dim=1482184792 is out of range [1, 65536]|"$bin" sample ck_magic.tzc
ckpt-text           |notes.txt: not a checkpoint: a text file (starts with "hello world, thi..."), not a tezgah ("TZCKPT"), llm.c (magic 20240326) or llama2.c model|"$bin" sample notes.txt
ckpt-text-short     |hi.txt: not a checkpoint: a text file (starts with "hi"), not a tezgah|"$bin" info hi.txt
ckpt-text-eval      |notes.txt: not a checkpoint: a text file|"$bin" eval notes.txt --data corpus.txt
ckpt-text-logits    |notes.txt: not a checkpoint: a text file|"$bin" logits notes.txt --ids 1
ckpt-text-import    |notes.txt: not a checkpoint: a text file|"$bin" convert notes.txt --out cx
ckpt-text-export    |notes.txt: not a checkpoint: a text file|"$bin" convert --to llmc notes.txt --out cx.bin
ckpt-text-init-from |notes.txt: not a checkpoint: a text file|"$bin" train --init-from notes.txt --data corpus.txt "${small[@]}" --run-dir r1
ckpt-text-resume    |notes.txt: not a checkpoint: a text file|"$bin" train --resume notes.txt --quiet
ckpt-text-in-run    |textrun/checkpoint.tzc: not a tezgah checkpoint: a text file (starts with "hello world, thi..."), not the magic "TZCKPT\0\0"|"$bin" sample textrun
ckpt-safetensors    |model.safetensors: a safetensors file, not a checkpoint: give the Hugging Face directory that holds it with its config.json|"$bin" sample model.safetensors
hf-config-json      |hf_badjson/config.json:7:16: invalid JSON near '0.0,'|"$bin" info hf_badjson
hf-config-json-conv |hf_badjson/config.json:7:16: invalid JSON near '0.0,'|"$bin" convert hf_badjson --out cx
ckpt-short-binary   |ck_2bytes.bin: not a checkpoint: 2 bytes, shorter than any checkpoint's header|"$bin" sample ck_2bytes.bin
ckpt-convert-tezgah |good/checkpoint.tzc: already a tezgah checkpoint, nothing to import; to export it give --to: tezgah convert --to llmc|"$bin" convert good/checkpoint.tzc --out cx.bin
convert-run-dir     |good: already a tezgah run, nothing to import; to export it give --to: tezgah convert --to llmc|"$bin" convert good --out cx
convert-run-from    |good: already a tezgah run, nothing to import|"$bin" convert --from llmc good --out cx
convert-plain-dir   |emptyrun: a directory, but neither a tezgah run (checkpoint.tzc) nor a Hugging Face model (config.json)|"$bin" convert emptyrun --out cx
ckpt-wrong-version  |ck_version.tzc: version 2 (expected 1)|"$bin" sample ck_version.tzc
ckpt-truncated      |ck_trunc.tzc: truncated: 1000 bytes, expected @SIZE@ (the size its table of|"$bin" sample ck_trunc.tzc
ckpt-truncated-tiny |ck_tiny.tzc: truncated: 10 bytes|"$bin" sample ck_tiny.tzc
ckpt-cut-1-byte     |ck_cut1.tzc: truncated: @SIZE-1@ bytes, expected @SIZE@ (the size its table of 5 sections gives; 1 byte missing)|"$bin" sample ck_cut1.tzc
ckpt-empty          |ck_empty.tzc: file is empty (not a checkpoint)|"$bin" sample ck_empty.tzc
ckpt-garbled        |ck_garbled.tzc: section 'adam_v' checksum mismatch|"$bin" sample ck_garbled.tzc
ckpt-trailing-junk  |ck_tail.tzc: @SIZE+4@ bytes, expected @SIZE@ (the size its table of 5 sections gives): 4 bytes of trailing data|"$bin" sample ck_tail.tzc
ckpt-fingerprint    |ck_fp.tzc: layout fingerprint 0123456789abcdef does not match|"$bin" sample ck_fp.tzc
ckpt-meta-version   |ck_metaver.tzc: meta version 7 is not supported|"$bin" sample ck_metaver.tzc
ckpt-config-field   |ck_nolayer.tzc: config field 'n_layer' is missing|"$bin" sample ck_nolayer.tzc
ckpt-params-size    |ck_params.tzc: section 'params' has 100 bytes|"$bin" sample ck_params.tzc
ckpt-other-config   |ck_otherconfig.tzc: layout fingerprint|"$bin" train --resume ck_otherconfig.tzc --quiet
ckpt-missing        |nosuch.tzc: no such checkpoint file or run directory|"$bin" sample nosuch.tzc
ckpt-dir-without    |emptyrun: run directory has no checkpoint (checkpoint.tzc) to resume (a run saves one every --ckpt-every steps and at its end)|"$bin" train --resume emptyrun --quiet
ckpt-dir-hf-resume  |hf_cfgonly: no checkpoint (checkpoint.tzc) to resume, but a Hugging Face model's config.json: start a new run from the model with --init-from hf_cfgonly|"$bin" train --resume hf_cfgonly --quiet
ckpt-dir-sample     |emptyrun: run directory has no checkpoint (checkpoint.tzc) and is not a Hugging Face model (config.json)|"$bin" sample emptyrun
ckpt-dir-eval       |emptyrun: run directory has no checkpoint (checkpoint.tzc) and is not a Hugging Face model (config.json)|"$bin" eval emptyrun --data corpus.txt
ckpt-export-resume  |ck_export.tzc: checkpoint has no training state|"$bin" train --resume ck_export.tzc --run-dir rx --quiet
ckpt-adam-t         |ck_adamt.tzc: training state field 'adam_t' = -1 is not a count of AdamW steps in [0, step=4]|"$bin" train --resume ck_adamt.tzc --run-dir rx --quiet
ckpt-step-negative  |ck_step.tzc: training state field 'step' = -3 is not a whole number in [0, 1073741824]|"$bin" train --resume ck_step.tzc --run-dir rx --quiet
ckpt-skipped-range  |ck_skipped.tzc: training state field 'skipped' = 9 is not a whole number in [0, 4]|"$bin" train --resume ck_skipped.tzc --run-dir rx --quiet
ckpt-loss-scale     |ck_lscale.tzc: training state field 'loss_scale' = 3 is not a power of two in [1, 16777216]|"$bin" train --resume ck_lscale.tzc --run-dir rx --quiet
ckpt-loader-offset  |ck_offset.tzc: training state field 'offset' = 1.5 is not a whole number in [0, 9007199254740992]|"$bin" train --resume ck_offset.tzc --run-dir rx --quiet
ckpt-loader-epoch   |ck_epoch.tzc: training state field 'epoch' = 1e+300 is not a whole number|"$bin" train --resume ck_epoch.tzc --run-dir rx --quiet
ckpt-precision-type |ck_prec.tzc: training state field 'precision' is not a name (lowercase letters and digits, at most 16)|"$bin" train --resume ck_prec.tzc --run-dir rx --quiet
resume-shards-gone  |gone/train.bin: the run's token shard is gone, and the run does not record the corpus it was prepared from (a --train-shards run, or a checkpoint from before 2026-12-05): put the shards back, or give copies of the run's shards with --train-shards and --val-shards on --resume|"$bin" train --resume ck_noprep.tzc --run-dir rx --steps 8 --quiet
resume-corpus-gone  |gone/train.bin: the run's token shard is gone (its data cache deleted?), and its corpus cannot be read to prepare it again (nocorpus/c.txt: No such file or directory): put the corpus back, or give copies of the run's shards with --train-shards and --val-shards on --resume|"$bin" train --resume ck_nocorpus.tzc --run-dir rx --steps 8 --quiet
resume-valshards-new|--val-shards: the run ck_noval.tzc has no validation shards to replace|"$bin" train --resume ck_noval.tzc --val-shards sh_good.bin --run-dir rx --steps 8 --quiet
resume-shape-flag   |--n-layer=2 does not match the checkpoint's n_layer=1|"$bin" train --resume good --n-layer 2
resume-dmodel-flag  |--d-model=64 does not match the checkpoint's d_model=32|"$bin" train --resume good --d-model 64
resume-preset       |--model stories15m (n_layer=6) does not match the checkpoint's n_layer=1 (good/checkpoint.tzc)|"$bin" train --resume good --model stories15m
resume-preset-flag  |--model stories15m (n_head=6) does not match the checkpoint's n_head=2|"$bin" train --resume good --model stories15m --n-layer 1
init-from-preset    |--model stories15m (n_layer=6) does not match the model's n_layer=1 (good/checkpoint.tzc)|"$bin" train --init-from good --model stories15m --data corpus.txt --run-dir r1
resume-dir-slash    |--n-layer=2 does not match the checkpoint's n_layer=1 (good/checkpoint.tzc)|"$bin" train --resume good/ --n-layer 2
resume-batch-flag   |--batch-size is not taken with --resume|"$bin" train --resume good -B 8
shard-truncated     |sh_trunc.bin: file size 1500 bytes does not match header ntok|"$bin" train --train-shards sh_trunc.bin --vocab-size 300 --run-dir r1 --quiet
shard-tiny          |sh_tiny.bin: file size 100 bytes is smaller than the 1024-byte header|"$bin" train --train-shards sh_tiny.bin --vocab-size 300 --run-dir r1 --quiet
shard-bad-magic     |sh_magic.bin: not a tezgah/llm.c token shard: header magic 1 (expected 20240520)|"$bin" train --train-shards sh_magic.bin --vocab-size 300 --run-dir r1 --quiet
shard-text          |corpus.txt: not a tezgah/llm.c token shard: a text file (starts with "First Citizen:\nB..."), not the magic 20240520; train --data takes text, or make a shard of it with tezgah tokenize --in TEXT --out SHARD.bin|"$bin" train --train-shards corpus.txt --vocab-size 300 --run-dir r1 --quiet
shard-text-short    |notes.txt: not a tezgah/llm.c token shard: a text file (starts with "hello world, thi..."), not the magic 20240520|"$bin" train --train-shards sh_good.bin --val-shards notes.txt --vocab-size 300 --run-dir r1 --quiet
shard-llama3-magic  |sh_llama3.bin: header magic 20240801 is llm.c's uint32 Llama-3|"$bin" train --train-shards sh_llama3.bin --vocab-size 300 --run-dir r1 --quiet
shard-wrong-version |sh_version.bin: header version 2 (expected 1)|"$bin" train --train-shards sh_version.bin --vocab-size 300 --run-dir r1 --quiet
shard-ntok-zero     |sh_ntok0.bin: header ntok 0 (must be > 0)|"$bin" train --train-shards sh_ntok0.bin --vocab-size 300 --run-dir r1 --quiet
shard-id-vocab      |sh_bigid.bin: token id 65000 (at position 5; this shard's largest is 65000) is outside the model's vocabulary of 300 tokens (--vocab-size 300): the shards were made with a larger tokenizer; give it with --tokenizer (it sets the vocabulary, and the closing sample decodes with it) or --vocab-size 65001 or more|"$bin" train --train-shards sh_bigid.bin --vocab-size 300 --run-dir r1 --quiet
shard-id-vocab-260  |sh_good.bin: token id 287 (at position 1; this shard's largest is 298) is outside the model's vocabulary of 260 tokens (--vocab-size 260): the shards were made with a larger tokenizer; give it with --tokenizer (it sets the vocabulary, and the closing sample decodes with it) or --vocab-size 299 or more|"$bin" train --train-shards sh_good.bin --vocab-size 260 --run-dir r1 --quiet
shard-gpt2-default  |gpt2_val.bin: token id 50256 (at position 0; this shard's largest is 50256) is outside the model's vocabulary of 2048 tokens (--vocab-size 2048, the default): the shards were made with a larger tokenizer; give it with --tokenizer (gpt2 for GPT-2's ids; it sets the vocabulary, and the closing sample decodes with it) or --vocab-size 50257 or more|"$bin" train --train-shards gpt2_val.bin --run-dir r1 --quiet
shard-gpt2-tok      |gpt2_val.bin: token id 50256 (at position 0; this shard's largest is 50256) is outside the vocabulary of --tokenizer good (300 tokens), which sets the model's: the shards were made with another tokenizer; give that one with --tokenizer (gpt2 for GPT-2's ids)|"$bin" train --train-shards gpt2_val.bin --tokenizer good --run-dir r1 --quiet
shard-tok-vocab-below|--vocab-size: 299 is below the 300 tokens of --tokenizer good, whose ids would lie outside the model; leave --vocab-size out (the tokenizer sets it) or give 300 or more|"$bin" train --train-shards sh_good.bin --tokenizer good --vocab-size 299 --run-dir r1 --quiet
shard-gpt2-vocab-257|--vocab-size: 257 is below the 50257 tokens of --tokenizer gpt2, whose ids would lie outside the model; leave --vocab-size out (the tokenizer sets it) or give 50257 or more|"$bin" train --train-shards gpt2_val.bin --tokenizer gpt2 --vocab-size 257 --run-dir r1 --quiet
shard-gpt2-init     |gpt2_val.bin: token id 50256 (at position 0; this shard's largest is 50256) is outside the vocabulary of the model good/checkpoint.tzc (V=300): the shards were made with another tokenizer than the model's; tokenize the text with the model's (tezgah tokenize --tokenizer good)|"$bin" train --init-from good --train-shards gpt2_val.bin "${small[@]}" --run-dir r1
eval-shard-vocab    |gpt2_val.bin: token id 50256 (at position 0; this shard's largest is 50256) is outside the vocabulary of the model good/checkpoint.tzc (V=300): the shards were made with another tokenizer than the model's; tokenize the text with the model's (tezgah tokenize --tokenizer good), or evaluate a model trained with the shards' tokenizer|"$bin" eval good --data gpt2_val.bin
eval-tok-vocab      |--tokenizer gpt2 gives token id 50256 for corpus.txt, outside the vocabulary of the model good/checkpoint.tzc (V=300): the tokenizer does not match the model; leave --tokenizer out (the model's own), or evaluate a model trained with this tokenizer|TEZGAH_GPT2_DIR="$shared/gpt2" "$bin" eval good --data corpus.txt --tokenizer gpt2
shard-below-batch   |sh_small.bin: 10 tokens, corpus smaller than one batch (B*T+1 = 4*32+1 = 129 tokens); lower -B or -T (B*T at most 9) or give a larger shard|"$bin" train --train-shards sh_small.bin --vocab-size 300 -B 4 -T 32 --run-dir r1 --quiet
resume-fin-other    |otherrun: already holds another run (checkpoint.tzc); --resume good continues into a --run-dir without one (or --resume otherrun continues that run)|"$bin" train --resume good --run-dir otherrun --quiet
resume-fin-file     |afile: not a directory|"$bin" train --resume good --run-dir afile --quiet
resume-other-run    |otherrun: already holds another run (checkpoint.tzc); --resume good continues into a --run-dir without one (or --resume otherrun continues that run)|"$bin" train --resume good --run-dir otherrun --steps 99 --quiet
resume-empty        |--resume: empty path|"$bin" train --resume '' --steps 9
resume-missing      |--resume: 'nosuch': no such run directory or checkpoint file|"$bin" train --resume nosuch --run-dir rx --steps 9
resume-twice        |--resume: given twice ('nosuch', then 'good'); give the one run to continue|"$bin" train --resume nosuch --resume good --steps 9
rundir-twice        |--run-dir: given twice ('rd_a', then 'rd_b'); give the one directory|"$bin" train --run-dir rd_a --run-dir rd_b --steps 1
init-twice          |--init-from: given twice ('good', then 'nosuch'); give the one model to start from|"$bin" train --init-from good --init-from nosuch --steps 1
resume-note-other   |otherrun: already holds another run|"$bin" train --resume good --run-dir otherrun --steps 99
resume-note-locked  |good: another tezgah train is writing into this run directory|flock good "$bin" train --resume good --steps 99
resume-note-shards  |sh_trunc.bin: --train-shards: xxh64 |"$bin" train --resume good --steps 99 --train-shards sh_trunc.bin
resume-note-backend |otherrun: already holds another run|"$bin" train --resume ck_cuda.tzc --run-dir otherrun --steps 99
keep-best-note      |good: already holds a run (checkpoint.tzc)|"$bin" train --data corpus.txt --vocab-size 300 --keep-best --val-every 0 --run-dir good
resume-file         |--resume: 'good/checkpoint.tzc' is a file; give the run directory that holds it (good), or --run-dir for the continued run|"$bin" train --resume good/checkpoint.tzc --steps 99
keep-best-no-val    |--keep-best: no validation data (give --val-shards with --train-shards)|"$bin" train --train-shards sh_good.bin --vocab-size 300 --keep-best --run-dir r1 --quiet
shard-no-match      |nothing*.bin: no files match|"$bin" train --train-shards 'nothing*.bin' --vocab-size 300 --run-dir r1 --quiet
list-no-path        |--train-shards: ' , ' names no path (a comma-separated list of files or globs)|"$bin" train --train-shards ' , ' --vocab-size 300 --run-dir r1 --quiet
data-no-path        |--data: ',' names no path (a comma-separated list of files or globs)|"$bin" train --data , --run-dir r1 --quiet
eval-data-no-path   |--data: '' names no path (a comma-separated list of files or globs)|"$bin" eval good --data ''
list-empty-end      |--data: 'corpus.txt,' has an empty entry (a comma-separated list of files or globs: remove the extra ',')|"$bin" train --data corpus.txt, --run-dir r1 --quiet
list-empty-inner    |--train-shards: 'sh_good.bin,,sh_good.bin' has an empty entry|"$bin" train --train-shards sh_good.bin,,sh_good.bin --vocab-size 300 --run-dir r1 --quiet
list-empty-blank    |--data: 'corpus.txt, ' has an empty entry|"$bin" eval good --data 'corpus.txt, '
list-empty-repeated |--val-shards: 'sh_good.bin,' has an empty entry|"$bin" train --train-shards sh_good.bin --val-shards sh_good.bin --val-shards sh_good.bin, --vocab-size 300 --run-dir r1 --quiet
list-split-missing  |'nosuch.txt' (from splitting '--data corpus.txt,nosuch.txt' at ',') not found|"$bin" train --data corpus.txt,nosuch.txt --run-dir r1 --quiet
list-split-nomatch  |'nodir/*.bin' (from splitting '--data sh_good.bin,nodir/*.bin' at ',') matches no file|"$bin" eval good --data 'sh_good.bin,nodir/*.bin'
tok-duplicate-merge |tok_dupmerge.json: merges 0 and 1 both produce|"$bin" train --train-shards sh_good.bin --tokenizer tok_dupmerge.json "${small[@]}" --steps 2 --run-dir r1
tok-missing-merges  |tok_nomerges.json: token id 256 "th" is produced by no merge (missing merges: 0 merges for 300 tokens)|"$bin" train --train-shards sh_good.bin --tokenizer tok_nomerges.json "${small[@]}" --steps 2 --run-dir r1
tok-merges-absent   |tok_mergesabsent.json: missing array "model.merges"|"$bin" train --train-shards sh_good.bin --tokenizer tok_mergesabsent.json "${small[@]}" --steps 2 --run-dir r1
tok-truncated       |tok_trunc.json: invalid JSON near byte|"$bin" train --train-shards sh_good.bin --tokenizer tok_trunc.json "${small[@]}" --steps 2 --run-dir r1
tok-empty           |tok_empty.json: file is empty|"$bin" train --train-shards sh_good.bin --tokenizer tok_empty.json "${small[@]}" --steps 2 --run-dir r1
tok-run-text        |badtok_text/tokenizer.json: not a tokenizer.json: a text file (starts with "garbage\n"), not a JSON object|"$bin" encode --tokenizer badtok_text hi
tok-run-binary      |badtok_bin/tokenizer.json: not a tokenizer.json: starts with bytes ff 18 66 e2 67 61 72 62, not a JSON object|"$bin" decode --tokenizer badtok_bin '[1]'
tok-json-array      |tok_array.json: not a tokenizer.json: JSON, but an array, not an object (a tokenizer.json is one JSON object)|"$bin" encode --tokenizer tok_array.json hi
tok-json-number     |tok_number.json: not a tokenizer.json: JSON, but a number, not an object|"$bin" decode --tokenizer tok_number.json '[1]'
tok-text-llama2c    |notes.txt: not a tokenizer file: a text file (starts with "hello world, thi..."), not a llama2.c tokenizer.bin|"$bin" encode --tokenizer notes.txt hi
tok-text-short      |hi.txt: not a tokenizer file: a text file (starts with "hi")|"$bin" decode --tokenizer hi.txt '[1]'
tok-missing-name    |--tokenizer: gpt3: No such file or directory (built-in tokenizers: gpt2; else a path: a tokenizer.json, llama2.c tokenizer.bin or llm.c gpt2_tokenizer.bin file, or a directory holding one|"$bin" encode --tokenizer gpt3 hi
tok-missing-sample  |--tokenizer: gpt3: No such file or directory (built-in tokenizers: gpt2;|"$bin" sample good --tokenizer gpt3
tok-missing-train   |--tokenizer: nosuch/tok.json: No such file or directory (built-in tokenizers: gpt2;|"$bin" train --train-shards sh_good.bin --tokenizer nosuch/tok.json "${small[@]}" --steps 2 --run-dir r1
convert-text-llama2c|notes.txt: not a llama2.c model: a text file (starts with "hello world, thi...")|"$bin" convert --from llama2c notes.txt --out cx
tok-dup-special     |appears twice (ids 300 and 299)|"$bin" train --train-shards sh_good.bin --tokenizer tok_dupadded.json "${small[@]}" --steps 2 --run-dir r1
corpus-missing      |--data: nosuch.txt: No such file or directory|"$bin" train --data nosuch.txt --run-dir r1 --quiet
corpus-default-gone |data/kjv.txt: No such file or directory (the default corpus, relative to the working directory: run from the repository root, or give --data FILE)|"$bin" train --run-dir r1 --quiet
corpus-binary       |corpus_bin.txt: looks binary (NUL byte at offset 3)|"$bin" train --data corpus_bin.txt --run-dir r1 --quiet
corpus-empty        |corpus_empty.txt: file is empty|"$bin" train --data corpus_empty.txt --run-dir r1 --quiet
corpus-tiny         |corpus_tiny.txt: too small to hold out a validation split|"$bin" train --data corpus_tiny.txt --vocab-size 300 --run-dir r1 --quiet
corpus-tiny-first   |corpus_tiny.txt: too small to hold out a validation split: 2 bytes (at most as many tokens; --val-fraction 0.05 needs 40 bytes or more)|"$bin" train --data corpus_tiny.txt --vocab-size 300 --run-dir r1
corpus-39-bytes     |corpus_39.txt: too small to hold out a validation split: 39 bytes (at most as many tokens; --val-fraction 0.05 needs 40 bytes or more)|"$bin" train --data corpus_39.txt --vocab-size 300 -B 1 -T 4 --run-dir r1
corpus-tiny-valfrac |corpus_39.txt: too small to hold out a validation split: 39 bytes (at most as many tokens; --val-fraction 0.03 needs 67 bytes or more)|"$bin" train --data corpus_39.txt --vocab-size 300 --val-fraction 0.03 -B 1 -T 4 --run-dir r1
corpus-empty-nested |corpus_empty.txt: file is empty|"$bin" train --data corpus_empty.txt --run-dir runs6/a --quiet
corpus-few-tokens   |corpus_13tok.txt: too small to hold out a validation split (13 tokens; --val-fraction 0.05 holds 0, 2 are needed): raise --val-fraction (0.16 holds 2) or give more text|"$bin" train --data corpus_13tok.txt --vocab-size 300 -B 1 -T 1 --run-dir r1 --quiet
corpus-one-token    |corpus_1tok.txt: too small to hold out a validation split (1 token; --val-fraction 0.05 holds 0, 2 are needed): give more text|"$bin" train --data corpus_1tok.txt --vocab-size 300 -B 1 -T 1 --run-dir r1 --quiet
corpus-tiny-nested  |corpus_tiny.txt: too small to hold out a validation split|"$bin" train --data corpus_tiny.txt --vocab-size 300 --run-dir runs7/a/b --quiet
nproc-oversubscribe |--nproc 4000: more processes than the|"$bin" train --data corpus_tiny.txt --vocab-size 300 --nproc 4000 --run-dir r1 --quiet
corpus-val-shards   |--val-shards: a --data run holds out --val-fraction of its text for validation|"$bin" train --data corpus_tiny.txt --val-shards sh_good.bin --vocab-size 300 --run-dir r1 --quiet
corpus-glob-nodir   |--data: nodir/*.txt: no files match|"$bin" train --data 'nodir/*.txt' --run-dir r1 --quiet
toktrain-binary     |corpus_bin.txt: looks binary (NUL byte at offset 3); expected UTF-8 text|"$bin" tokenizer train --in corpus_bin.txt --out t.json
toktrain-empty      |corpus_empty.txt: file is empty|"$bin" tokenizer train --in corpus_empty.txt --out t.json
toktrain-stdin-empty|stdin: file is empty|"$bin" tokenizer train --in - --out t.json
tokenize-binary     |corpus_bin.txt: looks binary (NUL byte at offset 3); expected UTF-8 text|"$bin" tokenize --tokenizer good --in corpus_bin.txt --out t.bin
tokenize-empty      |corpus_empty.txt: file is empty|"$bin" tokenize --tokenizer good --in corpus_empty.txt --out t.bin
eval-text-empty     |corpus_empty.txt: file is empty|"$bin" eval good --data corpus_empty.txt
eval-text-binary    |corpus_bin.txt: looks binary (NUL byte at offset 3)|"$bin" eval good --data corpus_bin.txt
eval-text-tiny      |corpus_tiny.txt: 3 tokens, too few for one batch of B*T+1 = 4*32+1 = 129 tokens; lower -B or -T|"$bin" eval good --data corpus_tiny.txt
eval-json-nodir     |nodir/e.json: cannot write: No such file or directory|"$bin" eval good --data corpus.txt --json nodir/e.json
corpus-below-batch  |corpus_small.txt: 3000 bytes hold out at most 150 validation tokens (--val-fraction 0.05), fewer than one batch (B*T+1 = 16*64+1 = 1025 tokens); lower -B or -T, or raise --val-fraction|"$bin" train --data corpus_small.txt --vocab-size 300 -B 16 -T 64 --run-dir r1 --quiet
corpus-below-batch2 |corpus_small.txt: 3000 bytes are at most 3000 tokens, fewer than one batch (B*T+1 = 64*64+1 = 4097 tokens); lower -B or -T|"$bin" train --data corpus_small.txt --vocab-size 300 -B 64 -T 64 --run-dir r1 --quiet
val-below-batch     |corpus.txt: the validation split holds 854 tokens (--val-fraction 0.05 of 17093), fewer than one batch (B*T+1 = 8*128+1 = 1025 tokens): lower -B or -T (B*T at most 853), take --val-fraction 0.06 (its split holds one) or give more text|"$bin" train --data corpus.txt --vocab-size 300 -B 8 -T 128 --run-dir r1 --quiet
flag-batch-shard    |--batch-size / --seq-len: B*T+1 = 1048576*4096+1 = 4294967297 tokens per batch is above the shard limit of 2147483647 tokens|"$bin" train --data corpus.txt -B 1048576 -T 4096 --max-seq-len 4096 --run-dir r1 --quiet
flag-loss-scale     |--loss-scale: 'abc' is not dynamic, off or a power of two in [1, 16777216]|"$bin" train --loss-scale abc
flag-loss-scale-sp  |--loss-scale: ' 4' is not dynamic, off or a power of two|"$bin" train --loss-scale " 4"
flag-steps-zero     |--steps: 0 is out of range [1, 1073741824]|"$bin" train --steps 0
flag-logits-chunk   |--logits-chunk: 'abc' is not auto or a number of rows (0: the whole batch)|"$bin" train --logits-chunk abc
flag-logits-chunk-e |--logits-chunk: '' is not auto or a number of rows|"$bin" train --logits-chunk=
flag-logits-chunk-n |--logits-chunk: -4 is out of range [0, 1073741824]|"$bin" train --logits-chunk -4
flag-logits-chunk-h |--logits-chunk: 2000000000 is out of range [0, 1073741824]|"$bin" train --logits-chunk 2000000000
flag-steps-negative |--steps: -5 is out of range|"$bin" train --steps -5
flag-steps-huge     |--steps: 99999999999 is out of range|"$bin" train --steps 99999999999
flag-steps-overflow |--steps: 999999999999999999999999 is out of range [1, 1073741824]|"$bin" train --steps 999999999999999999999999
flag-seed-overflow  |--seed: 18446744073709551616 is out of range (max 18446744073709551615)|"$bin" train --seed 18446744073709551616
flag-batch-zero     |--batch-size: 0 is out of range|"$bin" train -B 0
flag-lr-negative    |--lr: -1 is out of range [0, 10]|"$bin" train --lr -1
flag-lr-nan         |--lr: 'nan' is not a decimal number|"$bin" train --lr nan
flag-lr-inf         |--lr: 'inf' is not finite (give a number in [0, 10])|"$bin" train --lr inf
flag-lr-hex         |--lr: '0x10' is not a decimal number (digits, '.', an exponent: 3e-4)|"$bin" train --lr 0x10
flag-lr-hexfrac     |--lr: '0x.1p0' is not a decimal number|"$bin" train --lr 0x.1p0
flag-lr-blank       |--lr: ' 0.1' is not a decimal number|"$bin" train --lr " 0.1"
flag-lr-blank-after |--lr: '0.1 ' is not a decimal number|"$bin" train --lr "0.1 "
flag-lr-word        |--lr: 'fast' is not a decimal number|"$bin" train --lr fast
flag-lr-overflow    |--lr: 1e999 is out of range [0, 10]|"$bin" train --lr 1e999
flag-wd-inf         |--weight-decay: '-Infinity' is not finite|"$bin" train --weight-decay -Infinity
flag-clip-hex       |--grad-clip: '0x1p3' is not a decimal number|"$bin" train --grad-clip 0x1p3
flag-temp-inf       |--temperature: 'inf' is not finite|"$bin" sample good --temperature inf
flag-topp-hex       |--top-p: '0x1p-1' is not a decimal number|"$bin" sample good --top-p 0x1p-1
flag-steps-hex      |--steps: '0x10' is not a decimal integer|"$bin" train --steps 0x10
flag-steps-blank    |--steps: ' 5' is not a decimal integer|"$bin" train --steps " 5"
flag-steps-plus     |--steps: '+5' is not a decimal integer|"$bin" train --steps +5
flag-lr-plus        |--lr: '+0.1' is not a decimal number|"$bin" train --lr +0.1
flag-lr-zero-refused|corpus_tiny.txt: too small to hold out a validation split|"$bin" train --lr 0 --data corpus_tiny.txt --vocab-size 300 --run-dir r1 --quiet
flag-seed-plus      |--seed: '+5' is not a non-negative decimal integer|"$bin" train --seed +5
flag-temp-plus      |--temperature: '+1' is not a decimal number|"$bin" sample good --temperature +1
flag-loss-scale-plus|--loss-scale: '+4' is not dynamic, off or a power of two|"$bin" train --loss-scale +4
flag-inject-plus    |--debug-inject-nan: '+3' is not a list of step numbers|"$bin" train --data corpus.txt --vocab-size 300 --debug-inject-nan +3 --run-dir r1 --quiet
env-ls-growth-plus  |TEZGAH_LOSS_SCALE_GROWTH: '+5' is not a step count in [1, 2^30]|TEZGAH_LOSS_SCALE_GROWTH=+5 "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
logits-ids-plus     |--ids: '1,+2' is not a comma-separated list of token ids|"$bin" logits good --ids 1,+2
flag-batch-blank    |--batch: ' 5' is not a decimal integer|"$bin" sample good --batch " 5"
flag-batch-blank2   |--batch: '5 ' is not a decimal integer|"$bin" sample good --batch "5 "
flag-batch-word     |--batch: 'five' is not a decimal integer|"$bin" sample good --batch five
flag-seed-blank     |--seed: '5 ' is not a non-negative decimal integer|"$bin" train --seed "5 "
flag-batch-octal    |--batch: 1025 is out of range [1, 1024]|"$bin" sample good --batch 01025
flag-seed-hex       |--seed: '0x5' is not a non-negative decimal integer|"$bin" train --seed 0x5
flag-threads-neg    |--threads: -2 is out of range|"$bin" train --threads -2
flag-dmodel-huge    |--d-model: 10000000 is out of range|"$bin" train --d-model 10000000
flag-model-absurd   |out of host memory|"$bin" train --data corpus.txt --vocab-size 300 --n-layer 1024 --d-model 65536 --n-head 64 -B 1 -T 8 --run-dir r1 --quiet
flag-nhead-dmodel   |--n-head 5 does not divide --d-model 128: each head takes d_model/n_head channels|"$bin" train --data corpus.txt --vocab-size 300 --n-head 5 --d-model 128 --run-dir r1 --quiet
flag-nhead-default  |--n-head 5 does not divide d_model=128 (the default)|"$bin" train --data corpus.txt --vocab-size 300 --n-head 5 --run-dir r1 --quiet
flag-nhead-preset   |--n-head 7 does not divide d_model=288 (--model stories15m's)|"$bin" train --data corpus.txt --vocab-size 300 --model stories15m --n-head 7 --run-dir r1 --quiet
flag-nkv-nhead      |--n-kv-head 3 does not divide n_head=4 (the default)|"$bin" train --data corpus.txt --vocab-size 300 --n-kv-head 3 --run-dir r1 --quiet
flag-nkv-gpt2       |--n-kv-head 2 and --n-head 4: gpt2 needs n_kv_head == n_head|"$bin" train --data corpus.txt --vocab-size 300 --arch gpt2 --n-head 4 --n-kv-head 2 --run-dir r1 --quiet
flag-head-odd       |--d-model 120 / --n-head 8: the head size 15 is odd|"$bin" train --data corpus.txt --vocab-size 300 --d-model 120 --n-head 8 --run-dir r1 --quiet
flag-vocab-small    |--vocab-size: 100 is out of range [257, 65536]|"$bin" train --vocab-size 100
flag-vocab-big      |--vocab-size: 65537 is out of range [257, 65536] (at least 256 byte tokens + <@BAR@endoftext@BAR@>; at most 65536: train's token shards hold uint16 ids; tezgah tokenizer train goes to 16777216)|"$bin" train --vocab-size 65537
toktrain-vocab-big  |--vocab-size: 16777217 is out of range [257, 16777216] (at least 256 byte tokens + <@BAR@endoftext@BAR@>; at most 2^24, the largest vocabulary tezgah's tokenizers take; train stops at 65536: its token shards hold uint16 ids)|"$bin" tokenizer train --in corpus.txt --out t.json --vocab-size 16777217
flag-valfrac-big    |--val-fraction: 0.51 is out of range [1e-06, 0.5]|"$bin" train --data corpus.txt --vocab-size 300 --val-fraction 0.51 --run-dir r1 --quiet
flag-valfrac-zero   |--val-fraction: 0 is out of range [1e-06, 0.5]|"$bin" train --data corpus.txt --vocab-size 300 --val-fraction 0 --run-dir r1 --quiet
flag-skipz-negative |--skip-loss-z: -1 is out of range|"$bin" train --skip-loss-z -1
flag-recompute-word |--recompute: 'yes' is not auto, on or off|"$bin" train --recompute yes
flag-recompute-eq   |--recompute: 'ON' is not auto, on or off|"$bin" train --recompute=ON
flag-recompute-empty|--recompute: '' is not auto, on or off|"$bin" train --recompute=
env-mem-free-bad    |TEZGAH_DEBUG_MEM_FREE: '1e9' is not a number of bytes (a decimal integer from 0 to 2^63 - 1)|TEZGAH_DEBUG_MEM_FREE=1e9 "$bin" train --data corpus.txt --vocab-size 300 "${small[@]}" --steps 2 --run-dir r1
env-mem-free-big    |TEZGAH_DEBUG_MEM_FREE: '9223372036854775808' is not a number of bytes (a decimal integer from 0 to 2^63 - 1)|TEZGAH_DEBUG_MEM_FREE=9223372036854775808 "$bin" train --data corpus.txt --vocab-size 300 "${small[@]}" --steps 2 --run-dir r1
recompute-neither   |--recompute auto: training needs |TEZGAH_DEBUG_MEM_FREE=0 "$bin" train --data corpus.txt --vocab-size 300 "${small[@]}" --steps 2 --run-dir r1
recompute-nested    |but the cpu backend has 0.0 MiB free: try a smaller -B|TEZGAH_DEBUG_MEM_FREE=0 "$bin" train --data corpus.txt --vocab-size 300 "${small[@]}" --steps 2 --run-dir runs8/a/b
recompute-resume    |free device memory (the run's batch is fixed on --resume)|TEZGAH_DEBUG_MEM_FREE=0 "$bin" train --resume good --steps 6 --quiet
flag-inject-bad     |--debug-inject-nan: 'x' is not a list of step numbers|"$bin" train --data corpus.txt --vocab-size 300 --debug-inject-nan x --run-dir r1 --quiet
flag-inject-blank   |--debug-inject-nan: ' 3' is not a list of step numbers|"$bin" train --data corpus.txt --vocab-size 300 --debug-inject-nan " 3" --run-dir r1 --quiet
flag-inject-blank2  |--debug-inject-inf: '3, 7' is not a list of step numbers|"$bin" train --data corpus.txt --vocab-size 300 --debug-inject-inf "3, 7" --run-dir r1 --quiet
flag-inject-empty   |--debug-inject-nan: '3,,7' is not a list of step numbers|"$bin" train --data corpus.txt --vocab-size 300 --debug-inject-nan 3,,7 --run-dir r1 --quiet
env-world-blank     |TEZGAH_WORLD_SIZE=' 2' is not a rank or process count|TEZGAH_WORLD_SIZE=" 2" "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-rank-blank      |TEZGAH_RANK='1 ' is not a rank or process count|TEZGAH_WORLD_SIZE=2 TEZGAH_RANK="1 " "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-rank-no-world   |TEZGAH_RANK='1' is set but TEZGAH_WORLD_SIZE is not|TEZGAH_RANK=1 "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-lrank-no-world  |TEZGAH_LOCAL_RANK='0' is set but TEZGAH_WORLD_SIZE is not|TEZGAH_LOCAL_RANK=0 "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-world-no-rank   |TEZGAH_WORLD_SIZE=2 is set but TEZGAH_RANK is not|TEZGAH_WORLD_SIZE=2 "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-dist-timeout    |TEZGAH_DIST_TIMEOUT='ten' is not a number of seconds|TEZGAH_DIST_TIMEOUT=ten "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-dist-timeout-neg|TEZGAH_DIST_TIMEOUT='-5' is not a number of seconds|TEZGAH_DIST_TIMEOUT=-5 "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-misalign-blank  |TEZGAH_CPU_MISALIGN=' 4' is not a multiple of 4 in [0, 60]|TEZGAH_CPU_MISALIGN=" 4" "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-mm-mc-blank     |TEZGAH_MM_MC=' 64' is not a row count|TEZGAH_MM_MC=" 64" "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
env-ls-growth-blank |TEZGAH_LOSS_SCALE_GROWTH: ' 5' is not a step count in [1, 2^30]|TEZGAH_LOSS_SCALE_GROWTH=" 5" "$bin" train --data corpus.txt --vocab-size 300 --run-dir r1 --quiet
flag-unknown        |train: unknown option --frobnicate|"$bin" train --frobnicate
flag-missing-value  |train: option --steps needs a value|"$bin" train --steps
T-above-context     |--seq-len: T=64 is above the model's context max_seq_len=32|"$bin" train --data corpus.txt --vocab-size 300 --max-seq-len 32 -T 64 --run-dir r1 --quiet
sample-tokens-neg   |--tokens: -1 is out of range|"$bin" sample good --tokens -1
sample-topp-zero    |--top-p: 0 is out of range|"$bin" sample good --top-p 0
sample-temp-neg     |--temperature: -1 is out of range|"$bin" sample good --temperature -1
prompt-not-utf8     |--prompt: invalid UTF-8 at byte 2 (0-based)|"$bin" sample good --prompt $'ab\xff\xfe'
prompts-not-utf8    |--prompts: prompts_bad.txt: line 2: invalid UTF-8 at byte 2 of the line (0-based)|"$bin" sample good --prompts prompts_bad.txt
prompts-blank       |--prompts: prompts_blank.txt holds no prompt: its 3 lines are blank (one prompt per line; blank lines are skipped)|"$bin" sample good --prompts prompts_blank.txt
prompts-empty       |--prompts: corpus_empty.txt holds no prompt: it is empty|"$bin" sample good --prompts corpus_empty.txt
empty-run-dir       |--run-dir: empty path|"$bin" train --data corpus.txt --run-dir ''
empty-init-from     |--init-from: empty path|"$bin" train --init-from '' --data corpus.txt --run-dir r1
empty-train-tok     |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" train --train-shards sh_good.bin --tokenizer '' --run-dir r1
empty-convert-out   |--out: empty path|"$bin" convert --to hf good --out ''
empty-convert-in    |convert: IN: empty path|"$bin" convert '' --out cx
empty-convert-model |convert: MODEL: empty path|"$bin" convert --to llmc '' --out cx.bin
empty-convert-tok   |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" convert --to hf good --out cx --tokenizer ''
empty-tokenize-out  |--out: empty path|"$bin" tokenize --tokenizer good --in corpus.txt --out ''
empty-tokenize-in   |--in: empty path|"$bin" tokenize --in '' --out t.bin
empty-tokenize-tok  |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" tokenize --tokenizer '' --in corpus.txt --out t.bin
empty-toktrain-out  |--out: empty path|"$bin" tokenizer train --in corpus.txt --out '' --vocab-size 300
empty-toktrain-in   |--in: empty path|"$bin" tokenizer train --in '' --out t.json --vocab-size 300
empty-encode-tok    |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" encode --tokenizer '' hi
empty-decode-tok    |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" decode --tokenizer '' '[1]'
empty-sample        |sample: RUN_DIR@BAR@CHECKPOINT@BAR@HF_DIR: empty path|"$bin" sample ''
empty-sample-tok    |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" sample good --tokenizer ''
empty-sample-prompts|--prompts: empty path|"$bin" sample good --prompts ''
empty-eval          |eval: RUN_DIR@BAR@CHECKPOINT@BAR@HF_DIR: empty path|"$bin" eval '' --data corpus.txt
empty-eval-json     |--json: empty path|"$bin" eval good --data corpus.txt --json ''
empty-eval-tok      |--tokenizer: '' names no tokenizer (built-in tokenizers: gpt2; else a path:|"$bin" eval good --data corpus.txt --tokenizer ''
empty-info          |info: RUN_DIR@BAR@CHECKPOINT@BAR@HF_DIR: empty path|"$bin" info ''
empty-logits        |logits: MODEL: empty path|"$bin" logits '' --ids 1
empty-logits-out    |--out: empty path|"$bin" logits good --ids 1 --out ''
empty-plot          |plot: RUN_DIR@BAR@METRICS.jsonl: empty path|"$bin" plot ''
empty-plot-out      |--out: empty path|"$bin" plot good --out ''
same-tokenize       |--out: 'same.txt' is the same file as --in 'same.txt', which this command reads|"$bin" tokenize --tokenizer good --in same.txt --out same.txt
same-tokenize-tok   |--out: 'tokdir/tokenizer.json' is the same file as --tokenizer 'tokdir/tokenizer.json'|"$bin" tokenize --tokenizer tokdir --in corpus.txt --out tokdir/tokenizer.json
same-toktrain       |--out: './same.txt' is the same file as --in 'same.txt'|"$bin" tokenizer train --in same.txt --out ./same.txt --vocab-size 300
same-toktrain-link  |--out: 'same_link.txt' is the same file as --in 'same.txt'|"$bin" tokenizer train --in same.txt --out same_link.txt --vocab-size 300
same-eval-json      |--json: 'same.txt' is the same file as --data 'same.txt'|"$bin" eval good --data same.txt --batches 1 --json same.txt
same-eval-glob      |--json: 'same.txt' is the same file as --data 'same.txt'|"$bin" eval good --data 'corpus.txt,sam*.txt' --batches 1 --json same.txt
same-eval-model     |--json: 'good/checkpoint.tzc' is the same file as the model 'good/checkpoint.tzc'|"$bin" eval good --data corpus.txt --batches 1 --json good/checkpoint.tzc
same-eval-tok       |--json: 'tokdir/tokenizer.json' is the same file as --tokenizer 'tokdir/tokenizer.json'|"$bin" eval good --data corpus.txt --tokenizer tokdir/tokenizer.json --batches 1 --json tokdir/tokenizer.json
same-logits-model   |--out: 'ck_same.tzc' is the same file as the model 'ck_same.tzc'|"$bin" logits ck_same.tzc --ids 1 --out ck_same.tzc
same-convert-tok    |--out: 'imp/tokenizer.json' is the same file as --tokenizer 'imp/tokenizer.json'|"$bin" convert "$fixtures/hf_gpt2" --tokenizer imp/tokenizer.json --out imp
out-dash-tokenize   |--out: '-' (stdout) is not taken for a token shard; give a file name|"$bin" tokenize --tokenizer good --in corpus.txt --out -
out-dash-export     |--out: '-' (stdout) is not taken for a model file; give a file name|"$bin" convert --to llmc good --out -
out-dash-hf         |--out: '-' (stdout) is not taken for a Hugging Face directory; give a directory name|"$bin" convert --to hf good --out -
out-dash-import     |--out: '-' (stdout) is not taken for a run directory; give a directory name|"$bin" convert "$fixtures/hf_gpt2" --out -
out-isdir-tokenize  |--out: 'outdir' is a directory; give a file name|"$bin" tokenize --tokenizer good --in corpus.txt --out outdir
out-isdir-slash     |--out: 'newdir/' names a directory; give a file name|"$bin" tokenize --tokenizer good --in corpus.txt --out newdir/
out-isdir-toktrain  |--out: 'outdir' is a directory; give a file name|"$bin" tokenizer train --in corpus.txt --out outdir --vocab-size 300
out-isdir-logits    |--out: 'outdir' is a directory; give a file name|"$bin" logits good --ids 1 --out outdir
out-isdir-eval      |--json: 'outdir' is a directory; give a file name|"$bin" eval good --data corpus.txt --batches 1 --json outdir
out-isdir-export    |--out: 'outdir' is a directory; give a file name|"$bin" convert --to llmc good --out outdir
outdir-not-dir      |afile/run: |"$bin" train --data corpus.txt --vocab-size 300 --run-dir afile/run --quiet
outdir-unwritable   |ROFS|"$bin" train --data corpus.txt --vocab-size 300 "${small[@]}" --run-dir "$ro_dir/run"
EOF
)

n=0 passed=0
# Each case's bookkeeping runs in bash builtins and one walk of the scratch tree (scan), plus one
# cmp: its two `find | sort`, comm, grep, wc, head and sha256sum were ~30 of this test's 44 CPU s
# (17.6 user, 26.8 sys: process starts, 2026-12-06), more than the 288 refusals it checks.
# scan: the scratch tree's directories (scan_dirs, a set) and its first three temporary files
# (scan_tmp), from one find
declare -A scan_dirs=()
scan_tmp=()
scan() {
  local e
  scan_dirs=() scan_tmp=()
  while IFS= read -r -d '' e; do
    if [[ $e == d* ]]; then scan_dirs[${e:1}]=1
    elif ((${#scan_tmp[@]} < 3)); then scan_tmp+=("${e:1}"); fi
  done < <(find "$scratch" \( -name '*.tmp.*' -printf 't%p\0' \) , \( -type d -printf 'd%p\0' \))
}
# Within the table (table=1) nothing runs between one case and the next, so the tree after a case
# is the tree before the next: its walk is reused (tree_known=1). Elsewhere each case walks the
# tree before its command (the script makes directories between those cases).
table= tree_known=
good_ref=$scratch/good_ref.tzc # the good checkpoint's bytes, for cmp
cp "$good" "$good_ref" || fail "fixture: copy of $good"
# ASan's note when an absurd allocation returns NULL (allocator_may_return_null=1) is the
# sanitizer runtime talking, not tezgah
asan_note='^==[0-9]*==WARNING: AddressSanitizer failed to allocate'
run_case() { # name expected command
  local name=$1 want=$2 cmd=$3
  n=$((n + 1))
  [[ $tree_known ]] || scan
  local -A dirs_before=()
  local d
  for d in "${!scan_dirs[@]}"; do dirs_before[$d]=1; done
  eval "$cmd" >out.txt 2>err.raw </dev/null
  local rc=$?
  # stderr less ASan's notes: its lines (wc -l: the newlines) and first 600 bytes
  local -a raw=()
  local l kept= lines=0 msg
  mapfile raw <err.raw
  for l in ${raw[@]+"${raw[@]}"}; do
    [[ $l =~ $asan_note ]] && continue
    kept+=$l
    [[ $l == *$'\n' ]] && lines=$((lines + 1))
  done
  local LC_ALL=C # (bytes, as head -c)
  msg=${kept:0:600}
  while [[ $msg == *$'\n' ]]; do msg=${msg%$'\n'}; done
  [[ ${TZ_BAD_VERBOSE:-} ]] && printf '%-20s rc=%d  %s\n' "$name" "$rc" "$msg"
  ((rc != 0)) || fail "$name: exit code 0 (want an error containing '$want')"
  ((rc < 128)) || fail "$name: killed by signal $((rc - 128)): $msg"
  [[ $lines == 1 ]] || fail "$name: stderr has $lines lines, want exactly one: $msg"
  [[ $msg == "tezgah: error: "* ]] || fail "$name: stderr does not start with 'tezgah: error:': $msg"
  [[ $msg == *"$want"* ]] || fail "$name: message does not contain '$want': $msg"
  scan
  ((${#scan_tmp[@]} == 0)) || fail "$name: temporary file(s) left behind: ${scan_tmp[*]}"
  # a failed command leaves no directory it created (run directories, their parents, empty
  # caches); a complete token cache (train.bin written: the corpus was prepared and a later
  # check failed) is kept on purpose, with the directories above it
  local left=
  for d in "${!scan_dirs[@]}"; do
    [[ ${dirs_before[$d]-} ]] && continue
    [[ -n $(find "$d" -name train.bin | head -1) ]] || left+=" $d"
  done
  [[ -z $left ]] || fail "$name: directories left behind:$left"
  cmp -s "$good" "$good_ref" || fail "$name: the good checkpoint changed"
  tree_known=$table
  passed=$((passed + 1))
}

table=1
while IFS='|' read -r name want cmd; do
  [[ -z $name ]] && continue
  name=${name%% *}
  want=${want//@SIZE+4@/$((size + 4))} # the good checkpoint's size
  want=${want//@SIZE-1@/$((size - 1))}
  want=${want//@SIZE@/$size}
  want=${want//@BAR@/|} # a '|' in the message (the table's separator): <@BAR@endoftext@BAR@>
  if [[ $want == ROFS ]]; then
    if [[ $ro_dir == ro_mnt ]]; then want="ro_mnt/run: cannot create directory: Read-only file system"
    else want="rodir/run: cannot create directory: Permission denied"; fi
  fi
  run_case "$name" "$want" "$cmd"
done <<<"$cases"
table= tree_known=
echo "unwritable output directory simulated with: $ro_how"
[[ ! -e - && -z $(ls -A outdir) ]] || fail "out-*: a refused output was written: $(ls -ld -- - outdir/* 2>&1)"
[[ $(sha256sum "${same_files[@]}") == "$same_sums" ]] || fail "same-*: an input given as the output changed: $(sha256sum "${same_files[@]}")"
# README's first paragraph that names the fingerprint (train's model line shows it, ckpt-fingerprint
# and ckpt-other-config above are refused for it) says what it is and why such a checkpoint is
# refused: until session 36 it was named only in the source table ("offset table, fingerprint")
fp_par=$(awk 'BEGIN { RS = "" } /fingerprint/ { print; exit }' "$readme" | tr '\n' ' ')
[[ -n $fp_par ]] || fail "$readme names no fingerprint (or is absent)"
[[ $fp_par == *"XXH64 over every tensor's name, dtype and shape"* && $fp_par == *"is refused"* &&
   $fp_par == *"layout fingerprint X does not match"* ]] ||
  fail "README does not explain the params fingerprint where it first names it: $(head -c 300 <<<"$fp_par")"

# A tokenizer of fewer tokens than the model's vocab_size is not an error (models padded past
# their tokenizer, Hugging Face exports at 50304 or 32001 rows): sample leaves the ids without
# text out, as it does the padded rows, and says so in one note; train --init-from trains with
# it and its closing sample does the same. Each must exit 0 with the note on stderr: the code
# before sampled those ids and printed nothing for them, then (briefly) refused the tokenizer.
note_case() { # name note command...
  local name=$1 want=$2 rc=0
  shift 2
  "$@" >note.out 2>note.err </dev/null || rc=$?
  ((rc == 0)) || fail "$name: exit $rc (want 0 and a note): $(head -c 400 note.err)"
  grep -qF -- "$want" note.err || fail "$name: no note '$want' on stderr: $(head -c 400 note.err)"
  passed=$((passed + 1))
}
note_case tok-smaller-sample "sample: note: --tokenizer tok280.json has 280 tokens, the model's vocab_size is 300: ids 280..299 have no text and are not sampled" \
  "$bin" sample good --tokenizer tok280.json --tokens 8 --temperature 1 --top-k 0
# a prompt longer than the context keeps its last tokens with one warning (it was refused)
note_case prompt-too-long "tezgah: warning: --prompt: " "$bin" sample good --prompt "$long_prompt" --tokens 4
grep -q "exceed the model's context max_seq_len=32: the prompt's last 32 tokens are kept, its first [0-9]* and the end-of-text token dropped$" note.err &&
  [[ $(wc -l <note.err) == 1 ]] || fail "prompt-too-long: want one warning naming the tokens dropped: $(cat note.err)"
note_case tok-smaller-stored "sample: note: ck_tok280.tzc: its tokenizer has 280 tokens, the model's vocab_size is 300: ids 280..299 have no text" \
  "$bin" sample ck_tok280.tzc --tokens 8
# A file listed twice (as another spelling of itself, or through a glob too) is read twice, as
# given (an up-weighting can be meant), with one note line naming it and the count.
note_case list-repeat-train "note: --data: corpus.txt is listed 3 times and is read 3 times" \
  "$bin" train --data 'corpus.txt,./corpus.txt' --data 'corpus.t?t' --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 \
  --threads 1 --sample-tokens 0 --val-every 0 --steps 1 --run-dir r_repeat
note_case list-repeat-shards "note: --train-shards: sh_good.bin is listed 2 times and is read 2 times" \
  "$bin" train --train-shards sh_good.bin,sh_good.bin --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 \
  --threads 1 --sample-tokens 0 --val-every 0 --steps 1 --run-dir r_repeat2
# validation on a training shard (the same file in both lists, under another name here) is
# taken with one note; it went without a word (the session-34 walkthrough). A copy is another
# file: no note.
ln -sf sh_good.bin sh_link.bin && cp sh_good.bin sh_copy.bin
note_case val-is-train "note: --val-shards: ./sh_link.bin is also in --train-shards: validation reads training data, so the val loss is not measured on held-out tokens" \
  "$bin" train --train-shards sh_good.bin --val-shards ./sh_link.bin --vocab-size 300 --n-layer 1 --n-head 2 \
  --d-model 32 -B 4 -T 32 --threads 1 --sample-tokens 0 --val-every 0 --steps 1 --run-dir r_valtrain
[[ $(grep -c 'note: --val-shards:' note.err) == 1 ]] || fail "val-is-train: want one note line: $(cat note.err)"
note_case val-not-train "model:" \
  "$bin" train --train-shards sh_good.bin --val-shards sh_copy.bin --vocab-size 300 --n-layer 1 --n-head 2 \
  --d-model 32 -B 4 -T 32 --threads 1 --sample-tokens 0 --val-every 0 --steps 1 --run-dir r_valcopy
! grep -q 'also in --train-shards' note.err || fail "val-not-train: a copy noted as the training shard: $(cat note.err)"
note_case list-repeat-eval "eval: note: --data: corpus.txt is listed 2 times and is read 2 times" \
  "$bin" eval good --data corpus.txt --data corpus.txt --batches 1
note_case tok-smaller-init "has 280 tokens, the model's vocab_size is 300: ids 280..299 have no text and are not sampled" \
  "$bin" train --init-from good --tokenizer tok280.json --data corpus.txt "${small[@]}" --steps 2 --run-dir r_tok280 --sample-tokens 8 --quiet
# --lr 0 trains nothing: taken, as PyTorch's optimizers and nanoGPT take it, with one warning
# (it went without a word, the session-37 walkthrough), also under --quiet (small's); held with
# the notes, so a run refused later prints its error line alone (flag-lr-zero-refused above)
note_case lr-zero "tezgah: warning: --lr 0: the learning rate is 0 at every step, so the weights stay as they are" \
  "$bin" train --data corpus.txt --vocab-size 300 "${small[@]}" --lr 0 --steps 2 --run-dir r_lr0
[[ $(wc -l <note.err) == 1 ]] || fail "lr-zero: want the warning alone under --quiet: $(cat note.err)"

# ---- full disk (ENOSPC) ------------------------------------------------------------------
# A run resumed on a nearly full file system: the checkpoint write at the end must fail with
# a message naming the file, leave the existing checkpoint byte-identical and no temporary
# file. A small tmpfs when mounting is permitted; otherwise `ulimit -f` with SIGXFSZ ignored
# (write then fails with EFBIG instead of ENOSPC).
mkdir -p full && mnt=$PWD/full
if [[ $EUID == 0 ]] && mount -t tmpfs -o size=$(((size + 160 * 1024) / 1024))k tmpfs full 2>/dev/null; then
  full_how="tmpfs of $(((size + 160 * 1024) / 1024)) KiB (ENOSPC)"
  full_err="No space left on device"
  limit=()
else
  mnt=
  full_how="ulimit -f (EFBIG; mounting a tmpfs is not permitted here)"
  full_err="File too large"
  limit=(ulimit -f $(((size + 160 * 1024) / 1024)))
fi
cp -r good full/run
full_sum=$(sha256sum <full/run/checkpoint.tzc)
case_full() { # name expected command
  run_case "$1" "$2" "$3"
  [[ $(sha256sum <full/run/checkpoint.tzc) == "$full_sum" ]] || fail "$1: the existing checkpoint changed"
  ! compgen -G "full/run/*.tmp.*" >/dev/null || fail "$1: temporary file left in full/run"
}
if ((${#limit[@]})); then
  case_full enospc-resume-ckpt "full/run/checkpoint.tzc: write failed: $full_err" \
    '( trap "" XFSZ; "${limit[@]}"; "$bin" train --resume full/run --steps 8 --quiet --sample-tokens 0 )'
else
  case_full enospc-resume-ckpt "full/run/checkpoint.tzc: write failed: $full_err" \
    '"$bin" train --resume full/run --steps 8 --quiet --sample-tokens 0'
  # fill the file system: the next write of any kind fails
  head -c $((200 * 1024)) /dev/zero >full/filler 2>/dev/null
  case_full enospc-data-prep "write failed: $full_err" \
    '"$bin" train --data corpus_small.txt --vocab-size 280 -B 4 -T 32 --run-dir full/r2 --quiet'
  case_full enospc-metrics "full/run/metrics.jsonl" \
    '"$bin" train --resume full/run --steps 9 --quiet --sample-tokens 0'
fi
# A resume into a new --run-dir, and into a directory holding a file of the user's, whose first
# checkpoint cannot be written (ulimit -f with SIGXFSZ ignored, here always: EFBIG): the
# directory the run made and the metrics.jsonl it started are removed, the user's file kept
# (both were left behind: the resumed run's fresh metrics were kept as if they were its own)
mkdir -p into_user && echo 'mine' >into_user/notes.txt
half=(ulimit -f $((size / 2 / 1024)))
run_case resume-newdir-fail "into_new/checkpoint.tzc: write failed: File too large" \
  '( trap "" XFSZ; "${half[@]}"; "$bin" train --resume good --run-dir into_new --steps 8 --quiet --sample-tokens 0 )'
[[ ! -e into_new ]] || fail "resume-newdir-fail: left into_new: $(ls -A into_new)"
run_case resume-userdir-fail "into_user/checkpoint.tzc: write failed: File too large" \
  '( trap "" XFSZ; "${half[@]}"; "$bin" train --resume good --run-dir into_user --steps 8 --quiet --sample-tokens 0 )'
[[ $(ls -A into_user) == notes.txt && $(cat into_user/notes.txt) == mine ]] ||
  fail "resume-userdir-fail: want the user's notes.txt alone in into_user: $(ls -A into_user)"
# a --run-dir without a checkpoint but with a metrics.jsonl that is not a tezgah log (a file of
# the user's): refused before training, the file kept (a new run and a resume into it replaced it)
mkdir -p user_log && echo 'my own notes' >user_log/metrics.jsonl
run_case stray-metrics-new "user_log/metrics.jsonl: is not a tezgah run's log" \
  '"$bin" train --data corpus.txt --vocab-size 300 --steps 2 "${small[@]}" --run-dir user_log'
run_case stray-metrics-resume "user_log/metrics.jsonl: is not a tezgah run's log" \
  '"$bin" train --resume good --run-dir user_log --steps 6 --quiet --sample-tokens 0'
[[ $(ls -A user_log) == metrics.jsonl && $(cat user_log/metrics.jsonl) == 'my own notes' ]] ||
  fail "stray-metrics: want the user's metrics.jsonl alone and unchanged in user_log: $(ls -A user_log)"
echo "full disk simulated with: $full_how"
echo "ok: $passed bad inputs, each refused with one clear line, no crash, no leftovers, good checkpoint untouched"
