#!/usr/bin/env bash
# CLI consistency (issue 11): -h/--help on every command and `tezgah help CMD`; every help that
# takes --backend lists cpu, webgpu and cuda; exit 1 for every usage error, with one line on
# stderr and nothing on stdout; --data takes comma-separated files and globs; a shape error
# comes before any slow work (no BPE training), as does -B x -T too large for the shard limit or
# the corpus; `latest` is written beside the run directory and `sample` with no model finds it;
# the run directory holds tokenizer.json and encode/decode take a run directory; eval takes text (same loss as the tokenized shard),
# shows progress on stderr and `--json -` prints only JSON; the progress line fits 80 columns
# and names the step of its val loss (line N: the one after N steps where one is measured; ETA 0
# at the last step), eval's fits too; `tezgah info RUN` prints the config and state, `info
# HF_DIR` the directory's size. Review leftovers: bare
# `tezgah` (usage, then one error line, exit 1), the top-level help (80 columns, aligned, eval
# takes text), HF directories in the helps, clear messages for a model without a tokenizer,
# an unknown tokenizing backend, an extra `logits` argument, `train --tokenizer` with --data.
# `train --model NAME` (shape presets: the shape, flags beside it win, checked on --resume).
# `train --profile` on the CPU backend prints the per-op table (its last progress line the final
# validation's). Ctrl-C during data preparation ends the run there (exit 130, one line, nothing
# left). A junk line in metrics.jsonl is dropped on resume with one warning. --val-every 0 /
# --ckpt-every 0 are in train's help and do what it says; --resume takes --ckpt-every (the
# losses unchanged); a split too small for a batch once
# encoded names what helps (a --val-fraction that does hold one); a bad --backend names the
# option and value; a gpt2 run (padded vocabulary) samples with its own tokenizer. --resume of a
# directory without a checkpoint says so (a Hugging Face one: --init-from; one holding only an
# unfinished checkpoint write names that file); a finished run resumed into another --run-dir
# checks it before "nothing to do"; info's paths are normalised; a resume on another
# backend or precision than the run record's prints one note (none for an old record); a run
# whose metrics.jsonl was deleted resumes with a note, one whose last line was cut off with a
# warning; a resume into a new --run-dir starts a fresh metrics.jsonl; --vocab-size beside
# --tokenizer pads (a note) or is refused; a `latest` that cannot be written: one warning.
# Usage (from ctest): bash test_cli.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
src=$shared/data/tinyshakespeare.txt
[[ -f $src ]] || { echo "SKIPPED: $src is absent"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
fixtures=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fixtures
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
t0=$SECONDS

# ---- help ---------------------------------------------------------------------------------
cmds=(train sample eval convert logits tokenize encode decode tokenizer plot info env)
for c in "${cmds[@]}"; do
  for h in -h --help; do
    "$bin" "$c" "$h" >h.out 2>h.err </dev/null || fail "$c $h: exit $?"
    [[ -s h.out && ! -s h.err ]] || fail "$c $h: want help on stdout only"
    grep -q "usage: tezgah $c" h.out || fail "$c $h: no usage line"
  done
  "$bin" help "$c" >h2.out 2>&1 || fail "help $c: exit $?"
  cmp -s h.out h2.out || fail "tezgah help $c differs from tezgah $c --help"
done
# help's own help is the top-level one (help help / help --help failed as "unknown command")
"$bin" --help >top.out 2>/dev/null || fail "tezgah --help: exit $?"
for h in help --help -h; do
  "$bin" help "$h" >h.out 2>h.err </dev/null || fail "tezgah help $h: exit $?: $(cat h.err)"
  cmp -s top.out h.out && [[ ! -s h.err ]] || fail "tezgah help $h differs from tezgah --help: $(head -3 h.out h.err)"
done
# The backends in the helps (top-level, train/sample/eval --backend) and info, in the same words:
# cuda as this build has it, "cuda (not in this build)" in one without it, where `--backend
# cuda` is refused as "built without CUDA" (the helps listed it as if it could be chosen)
"$bin" info >info.txt 2>/dev/null
if grep -q '^cuda: unavailable: this tezgah was built without CUDA' info.txt; then
  cu="cuda (not in this build)"
  "$bin" train --backend cuda --steps 1 >/dev/null 2>cu.err && fail "train --backend cuda ran in a build without CUDA"
  grep -q 'built without CUDA' cu.err || fail "train --backend cuda in a build without CUDA: $(cat cu.err)"
else
  cu=cuda
fi
# (grep without -q: it reads the whole help; -q exits at the match, and train's help, written
# in 4 KiB pieces, then dies of SIGPIPE, which pipefail reported as a failure, 1 run in 14)
for c in train sample eval; do
  "$bin" help "$c" | grep -x -- "  --backend NAME  *cpu (default), webgpu or $cu" >/dev/null ||
    fail "$c help does not list cpu, webgpu and $cu: $("$bin" help "$c" | grep -- '--backend NAME')"
done
"$bin" --help | grep -x "backends: cpu, webgpu, $cu" >/dev/null || fail "top-level help does not list cpu, webgpu, $cu: $("$bin" --help | grep backends)"
grep -qx "backends: cpu, webgpu, $cu" info.txt || fail "info does not list cpu, webgpu, $cu: $(grep backends info.txt)"
# info's WebGPU adapter features by name (they were hex numbers, but for four): a number only
# where the loaded Dawn's facts name none (dawn.node is newer than its facts: 0x18, 0x19)
if grep -q '^  features (' info.txt; then
  abi=$(sed -n 's/.*(ABI "\([a-z]*\)";.*/\1/p' info.txt)
  [[ -f $fixtures/dawn_abi_facts_$abi.txt ]] || fail "info: no facts for the Dawn ABI '$abi': $(grep dawn: info.txt)"
  feats=$(sed -n '/^  features (/,/^  ShaderF16:/p' info.txt | sed '$d; s/^  features ([0-9]*)://')
  for f in $feats; do
    [[ $f != 0x* ]] || ! grep -q "^const WGPUFeatureName_[A-Za-z0-9]* = $f\$" "$fixtures/dawn_abi_facts_$abi.txt" ||
      fail "info prints the feature $f as a number; the $abi facts name it: $feats"
  done
  ! grep -q '^  ShaderF16: yes' info.txt || [[ " $(echo $feats) " == *" ShaderF16 "* ]] ||
    fail "info: ShaderF16 offered but not among the features: $feats"
fi
# info's features: MPI, NCCL, libplot and OpenBLAS, each yes/no with what it serves. MPI,
# libplot and OpenBLAS are loaded on use (src/core/dlib.h): the binary links none of them
# (nor libplot's X11 libraries), and info says "loaded on use" for each one it has.
"$bin" info >feat.txt 2>/dev/null
grep -A4 '^features:$' feat.txt | grep -qE '^  mpi: (yes \(.+\)|no \(.+\)): ' || fail "info: no features/mpi line: $(cat feat.txt)"
grep -qE '^  nccl: (yes \(.+TEZGAH_NCCL_LIB|built in, not loadable here: .*TEZGAH_NCCL_LIB|no \(.+\): )' feat.txt ||
  fail "info: no nccl line: $(cat feat.txt)"
grep -qE '^  libplot: (yes|no) \(.+\): .*tezgah plot' feat.txt || fail "info: no libplot line: $(cat feat.txt)"
grep -qE '^  openblas: (yes|no) \(.+\): .*TZ_MATMUL=blas' feat.txt || fail "info: no openblas line: $(cat feat.txt)"
libs=$(ldd "$bin") # not `ldd | grep -q` under pipefail: grep's early exit fails the pipe (SIGPIPE)
for l in libmpi libplot libopenblas libX11; do
  if grep -q "$l" <<<"$libs"; then fail "tezgah links $l, which should load only on use: $(grep "$l" <<<"$libs")"; fi
done
have=$(grep -E '^  (mpi|libplot|openblas): yes' feat.txt || true)
if grep -v 'loaded on use' <<<"$have" | grep -q .; then fail "info: a feature not loaded on use: $have"; fi
# The MPI module missing (TEZGAH_MODULE_DIR names an empty folder): info says so in its line
if grep -q '^  mpi: yes' feat.txt; then
  mkdir -p nomod
  nomod=$(TEZGAH_MODULE_DIR=$PWD/nomod "$bin" info 2>/dev/null)
  grep -qF "  mpi: no (built with MPI, but mpi: $PWD/nomod/libtezgah_mpi.so not found (TEZGAH_MODULE_DIR)): " <<<"$nomod" ||
    fail "info without the MPI module: $(grep '  mpi:' <<<"$nomod")"
fi
"$bin" info | grep -q '^cuda: unavailable: this tezgah was built without CUDA' && ! grep -q '^  nccl: no (a build without the CUDA backend)' feat.txt &&
  fail "info: a build without CUDA claims NCCL: $(grep '  nccl:' feat.txt)"
# info's paths normalised: GPT-2's files found above the program read "build/../.deps/..."
g2=$(env -u TEZGAH_GPT2_DIR "$bin" info 2>/dev/null | sed -n 's/^data: gpt2 tokenizer files: \([^(]*\) (.*$/\1/p')
[[ -n $g2 ]] || fail "info: no gpt2 tokenizer files line"
[[ $g2 == - || ($g2 == /* && $g2 != *'/../'* && $g2 != *'/./'* && -d $g2) ]] ||
  fail "info: gpt2 tokenizer files not an absolute, normalised directory: $g2"
"$bin" --help >top.txt
awk 'length($0) > 79 { print; bad = 1 } END { exit bad }' top.txt || fail "top-level help wider than 79 columns"
[[ $(grep -cE '^  [a-z]+ +[a-z]' top.txt) == 12 ]] || fail "top-level help does not list 12 commands: $(cat top.txt)"
[[ $(grep -E '^  [a-z]+ +[a-z]' top.txt | awk '{ match($0, /^  [a-z]+ +/); print RLENGTH }' | sort -u) == 13 ]] ||
  fail "top-level help: command descriptions are not aligned in one column"
grep -q '^  eval .*text' top.txt || fail "top-level help: eval's line does not say it takes text"
grep -q '^  plot ' top.txt || fail "top-level help lacks plot"
for c in sample eval info; do
  "$bin" "$c" --help | grep -q 'HF_DIR' || fail "$c --help does not name HF directories"
done
"$bin" train --help | grep -A3 -- '--tokenizer SPEC' | grep -q -- '--init-from' || fail "train --help: --tokenizer does not mention --init-from"
# 0 turns the cadences off: train's help says so, and what still happens (the final validation,
# the final checkpoint); the runs under "--val-every 0 / --ckpt-every 0" below check that
"$bin" train --help >th.txt
grep -A3 -- '^  --val-every N' th.txt | grep -q -- '(--val-every 0: that one alone)' ||
  fail "train --help does not say what --val-every 0 does: $(grep -A3 -- '--val-every N' th.txt)"
grep -A1 -- '^  --ckpt-every N' th.txt | grep -q -- '(200; 0: none during the' ||
  fail "train --help does not say what --ckpt-every 0 does: $(grep -A2 -- '--ckpt-every N' th.txt)"

# ---- usage errors: exit 1, one line on stderr, nothing on stdout ----------------------------
usage_case() { # expected-text command...
  local want=$1
  shift
  "$@" >u.out 2>u.err </dev/null
  local rc=$?
  ((rc == 1)) || fail "'$*': exit $rc, want 1"
  [[ ! -s u.out ]] || fail "'$*': wrote to stdout: $(head -c 200 u.out)"
  [[ $(wc -l <u.err) == 1 ]] || fail "'$*': stderr is not one line: $(head -c 300 u.err)"
  [[ $(cat u.err) == "tezgah: error: "*"$want"* ]] || fail "'$*': stderr lacks '$want': $(cat u.err)"
}
usage_case "unknown command 'frob'" "$bin" frob
usage_case "help: unknown command 'frob'" "$bin" help frob
"$bin" >u.out 2>u.err </dev/null
(($? == 1)) || fail "tezgah with no command: want exit 1"
[[ ! -s u.out ]] || fail "tezgah with no command wrote to stdout"
grep -q '^  train ' u.err || fail "tezgah with no command: no list of commands on stderr"
[[ $(grep -c '^tezgah: error:' u.err) == 1 && $(tail -n 1 u.err) == "tezgah: error: no command given"* ]] ||
  fail "tezgah with no command: want the usage, then one error line: $(cat u.err)"
for c in "${cmds[@]}"; do
  [[ $c == tokenizer ]] && usage_case "unknown option" "$bin" tokenizer train --no-such-flag && continue
  usage_case "unknown option" "$bin" "$c" --no-such-flag
done
usage_case "logits: unexpected argument 'extra'" "$bin" logits m --ids 1 extra
# a bad backend: the option, the value and the choices, as every option error says them
usage_case "--backend: 'bogus' is not one of cpu, webgpu (the tokenizing backends)" "$bin" encode --backend bogus hi
usage_case "--backend: 'bogus' is not one of cpu, webgpu (the tokenizing backends)" "$bin" tokenizer train --in x --out y --backend bogus
usage_case "--tokenizer-backend: 'cuda' is not one of cpu, webgpu (the tokenizing backends)" "$bin" train --tokenizer-backend cuda
usage_case "unexpected argument" "$bin" train extra
usage_case "option --steps needs a value" "$bin" train --steps
# a value given to a flag that takes none (getopt_long's optopt is then the flag's val, above
# 255 for long-only flags): the flag by name, on every command; abbreviations named in full
for c in train sample eval convert logits tokenize encode decode plot info env; do
  usage_case "--help: takes no value (got --help=x)" "$bin" "$c" --help=x
done
usage_case "--help: takes no value (got --help=x)" "$bin" tokenizer train --help=x
usage_case "--plot: takes no value (got --plot=yes)" "$bin" train --plot=yes
usage_case "--keep-best: takes no value (got --keep-best=1)" "$bin" train --keep-best=1
usage_case "--bos: takes no value (got --bos=1)" "$bin" encode --bos=1 hi
usage_case "--keep-best: takes no value (got --keep-b=1)" "$bin" train --keep-b=1
usage_case "option --steps needs a value" "$bin" train --ste
usage_case "option --batch is ambiguous (--batches, --batch-size;" "$bin" eval somewhere --batch 3
usage_case "unknown option -Z" "$bin" train -Z
usage_case "give a run directory" "$bin" eval
usage_case "--data SHARDS is required" "$bin" eval somewhere
usage_case "give an input and --out" "$bin" convert
usage_case "--in and --out are required" "$bin" tokenize

# a number of any length where a whole number is read (core/decimal.c copied 31 characters at
# most): a zero-padded TEZGAH_WORLD_SIZE of 1 is one process, and the run gets as far as its data
TEZGAH_WORLD_SIZE=0000000000000000000000000000000000000001 TEZGAH_RANK=00000000000000000000000000000000000000000 \
  usage_case "--data: nosuch.txt: No such file or directory" "$bin" train --data nosuch.txt --run-dir zp

# ---- config errors before slow work ---------------------------------------------------------
head -c 40000 "$src" >big.txt
usage_case "--n-head 5 does not divide d_model=128 (the default)" "$bin" train --data big.txt --n-head 5 --run-dir nh
[[ ! -e .cache && ! -e nh ]] || fail "--n-head 5: data was prepared (or the run directory made) before the config check"
usage_case "T=64 is above the model's context max_seq_len=32" "$bin" train --data big.txt --max-seq-len 32 -T 64 --run-dir nh
[[ ! -e .cache ]] || fail "-T above the context: data was prepared before the check"
usage_case "--batch-size / --seq-len: B*T+1 = 1048576*4096+1 = 4294967297 tokens per batch is above the shard limit" \
  "$bin" train --data big.txt -B 1048576 -T 4096 --max-seq-len 4096 --run-dir nh
usage_case "big.txt: 40000 bytes are at most 40000 tokens, fewer than one batch (B*T+1 = 64*1024+1 = 65537 tokens)" \
  "$bin" train --data big.txt -B 64 -T 1024 --max-seq-len 1024 --run-dir nh
[[ ! -e .cache && ! -e nh ]] || fail "-B x -T above the shard limit or the corpus: data was prepared before the check"
for b in bogus CUDA; do
  usage_case "--backend: '$b' is not one of cpu, webgpu, cuda" "$bin" train --data big.txt --backend "$b" --run-dir nh
done
usage_case "--precision: 'fp16' is not one of fp32, bf16, f16" "$bin" train --data big.txt --precision fp16 --run-dir nh
# an empty value is refused in the same words as any other (it once read "is not fp32, bf16 or f16")
usage_case "--precision: '' is not one of fp32, bf16, f16" "$bin" train --data big.txt --precision '' --run-dir nh
usage_case "--precision: '' is not one of fp32, bf16, f16" "$bin" eval nosuch --data big.txt --precision=
usage_case "--precision: '' is not one of fp32, bf16, f16" "$bin" sample nosuch --precision ''
usage_case "--tokenizer: a --data run trains its own BPE" "$bin" train --data big.txt --tokenizer gpt2 --run-dir nh
usage_case "'bf16' is not offered by the cpu backend" "$bin" train --data big.txt --precision bf16 --run-dir nh
usage_case "'f16' is not offered by the cpu backend" "$bin" train --data big.txt --precision f16 --run-dir nh
usage_case "'bf16' is not offered by the webgpu backend" "$bin" train --data big.txt --backend webgpu --precision bf16 --run-dir nh
usage_case "--backend: 'bogus' is not one of cpu, webgpu, cuda" "$bin" eval nosuch --data big.txt --backend bogus
usage_case "--backend: 'foo' is not one of cpu, webgpu, cuda" "$bin" sample nosuch --backend foo
[[ ! -e .cache && ! -e nh ]] || fail "bad --backend / --precision: data was prepared (or the run directory made) before the check"

# ---- Ctrl-C during data preparation: stops there (not after step 1), exit 130, one error line,
# no run directory, no cache entry, no temporary file. SIGINT once the BPE training has begun
# (its line on stderr): 18 MB take seconds to train and encode, so the signal lands in them.
for _ in {1..16}; do cat "$src"; done >huge.txt
"$bin" train --data huge.txt --steps 2 --sample-tokens 0 --run-dir intr >intr.out 2>intr.err &
pid=$!
for _ in $(seq 600); do grep -q '^data: training' intr.err && break; sleep 0.02; done
kill -INT $pid
t_int=$SECONDS
wait $pid
rc=$?
((rc == 130)) || fail "SIGINT during data preparation: exit $rc, want 130: $(cat intr.err)"
((SECONDS - t_int <= 5)) || fail "SIGINT during data preparation: took $((SECONDS - t_int)) s to stop" # a hang guard
[[ $(grep -c '^tezgah: error:' intr.err) == 1 && $(tail -n 1 intr.err) == \
  "tezgah: error: huge.txt: interrupted by SIGINT while preparing the data, before step 1; no run was made" ]] ||
  fail "SIGINT during data preparation: want one error line last: $(cat intr.err)"
[[ ! -e intr && ! -e latest && ! -e .cache ]] ||
  fail "SIGINT during data preparation left files: $(ls -a; find .cache 2>/dev/null)"
rm -f huge.txt

# ---- one training per run directory (train.c: an flock on the directory): a second one into
# a run directory that a running training writes is refused in one line, exit 1, and the first
# goes on (two at once used to interleave their metrics and keep one checkpoint, 2026-12-04)
lk=(--vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 --sample-tokens 0 --quiet)
"$bin" train --data big.txt "${lk[@]}" --steps 1000000 --run-dir lockrun >lock1.out 2>lock1.err &
lpid=$!
for _ in $(seq 300); do [[ -s lockrun/metrics.jsonl ]] && break; sleep 0.05; done
[[ -s lockrun/metrics.jsonl ]] || fail "the first training into lockrun wrote no metrics: $(cat lock1.err)"
"$bin" train --data big.txt "${lk[@]}" --steps 2 --run-dir lockrun >lock2.out 2>lock2.err && fail "a second training into lockrun while the first runs: exit 0"
[[ $(wc -l <lock2.err) == 1 ]] && grep -q '^tezgah: error: lockrun: another tezgah train is writing into this run directory' lock2.err ||
  fail "a second training into lockrun: want one line naming it: $(cat lock2.err)"
kill -0 $lpid 2>/dev/null || fail "the first training into lockrun stopped: $(cat lock1.err)"
kill -INT $lpid
wait $lpid
rc=$?
((rc == 130)) && [[ -f lockrun/checkpoint.tzc ]] || fail "the first training into lockrun after SIGINT: exit $rc, $(ls lockrun)"
rm -rf lockrun

# ---- the same sender's SIGINT twice (GNU timeout(1) without --foreground signals its command and
# then its process group: `timeout -s INT 60 tezgah train` got two): one signal, so the step is
# finished and checkpointed, exit 130 with the "interrupted" line. A model whose step and
# checkpoint take long enough that the repeat lands while they run; before 2026-12-06 the repeat
# killed the process at once and left checkpoint.tzc.tmp.<pid> (6 runs of 6 on a 2-core VM).
dk=(--vocab-size 300 --n-layer 4 --n-head 4 --d-model 256 -B 4 -T 64 --threads 1 --sample-tokens 0 --quiet)
for i in 1 2; do
  "$bin" train --data big.txt "${dk[@]}" --steps 1000000 --run-dir dkill >dk.out 2>dk.err &
  dpid=$!
  for _ in $(seq 300); do [[ -s dkill/metrics.jsonl ]] && break; sleep 0.05; done
  [[ -s dkill/metrics.jsonl ]] || fail "the training into dkill wrote no metrics: $(cat dk.err)"
  kill -INT $dpid
  sleep 0.01
  kill -INT $dpid 2>/dev/null
  wait $dpid
  rc=$?
  ((rc == 130)) && [[ -f dkill/checkpoint.tzc ]] && grep -q 'interrupted' dk.err ||
    fail "SIGINT twice from one sender ($i): exit $rc, $(ls dkill | tr '\n' ' '), $(tail -n 1 dk.err)"
  rm -rf dkill
done

# ---- --data lists and globs; latest beside the run directory; sample finds it --------------
head -c 12000 "$src" >part_a.txt
head -c 24000 "$src" | tail -c 12000 >part_b.txt
small=(--vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 --sample-tokens 0)
"$bin" train --data 'big.txt,part_*.txt' "${small[@]}" --steps 4 --run-dir myrun 2>train.err ||
  fail "train on a list with a glob: $(tail -3 train.err)"
grep -q 'on big.txt,part_\*.txt' train.err || fail "the data line does not name the list"
usage_case "'nomatch_*.txt' (from splitting '--data big.txt,nomatch_*.txt' at ',') matches no file" "$bin" train --data 'big.txt,nomatch_*.txt' "${small[@]}" --run-dir nm
[[ -L latest && $(readlink latest) == myrun ]] || fail "latest is not ./latest -> myrun: $(ls -la)"
[[ ! -e runs ]] || fail "a runs/ directory appeared for --run-dir myrun"
"$bin" sample --tokens 4 --temperature 0 >s.out 2>s.err || fail "sample with no model (./latest): $(cat s.err)"
mkdir -p elsewhere && (cd elsewhere && "$bin" sample >/dev/null 2>e.err)
(($? == 0)) && fail "sample with no model found one in a directory without latest"
grep -q "neither runs/latest nor ./latest" elsewhere/e.err || fail "sample with no latest: $(cat elsewhere/e.err)"
# latest that cannot be updated (a directory named latest; a read-only parent: a read-only tmpfs
# around a writable run directory as root, chmod otherwise): one warning, training goes on (it
# failed without a word)
lshard=$(ls .cache/*-v300/train.bin | head -1)
mkdir -p lk/latest/x
"$bin" train --train-shards "$lshard" "${small[@]}" --steps 2 --quiet --run-dir lk/run 2>lk.err || fail "train with latest a directory: $(cat lk.err)"
[[ $(cat lk.err) == "tezgah: warning: lk/latest was not updated to point at run: cannot replace it: Is a directory (training goes on; name the run directory instead, e.g. tezgah sample lk/run)" && -f lk/run/checkpoint.tzc ]] ||
  fail "train with latest a directory: want one warning: $(cat lk.err)"
ro_ok=
if [[ $EUID == 0 ]]; then
  mkdir -p lro && mount -t tmpfs -o size=1m tmpfs lro 2>/dev/null && mkdir lro/run && mount -t tmpfs -o size=16m tmpfs lro/run &&
    mount -o remount,ro lro && ro_ok=1
else
  mkdir -p lro/run && chmod 555 lro && ro_ok=1
fi
if [[ -n $ro_ok ]]; then
  "$bin" train --train-shards "$lshard" "${small[@]}" --steps 2 --quiet --run-dir lro/run 2>lro.err
  lro_rc=$? lro_ck=$([[ -f lro/run/checkpoint.tzc ]] && echo yes)
  if [[ $EUID == 0 ]]; then umount lro/run && umount lro; else chmod 755 lro; fi
  ((lro_rc == 0)) && [[ -n $lro_ck ]] || fail "train into a read-only parent: exit $lro_rc: $(cat lro.err)"
  grep -qx "tezgah: warning: lro/latest was not updated to point at run: cannot write in lro: \(Read-only file system\|Permission denied\) (training goes on; name the run directory instead, e.g. tezgah sample lro/run)" lro.err &&
    [[ $(wc -l <lro.err) == 1 ]] || fail "train into a read-only parent: want one warning about latest: $(cat lro.err)"
else
  echo "note: latest under a read-only parent not checked (root without tmpfs mounts)"
fi
# sample --batch N: N samples, row i seeded SEED+i, equal to --batch 1 --seed SEED+i (CPU: rows one by one)
"$bin" sample --tokens 12 --batch 3 --seed 5 --prompt "the" >b3.out 2>b3.err || fail "sample --batch 3: $(cat b3.err)"
[[ $(grep -c '^--- sample [123] of 3 (seed [567]) ---$' b3.out) == 3 ]] || fail "sample --batch 3: want 3 headers: $(cat b3.out)"
"$bin" sample --tokens 12 --seed 7 --prompt "the" >b1.out 2>b1.err || fail "sample --seed 7: $(cat b1.err)"
awk '/^--- sample 3 of 3/{f=1;next} f' b3.out >b3row3.out
cmp -s b1.out b3row3.out || fail "sample --batch 3 row 3 differs from --seed 7: $(cat b3row3.out) vs $(cat b1.out)"
"$bin" sample --tokens 5 --ignore-eot --stats --temperature 0 >st.out 2>st.err || fail "sample --stats: $(cat st.err)"
grep -q '^sample: cpu fp32, 1 row(s), .* 5 tokens in 4 steps' st.err || fail "sample --stats line: $(cat st.err)"
usage_case "--batch: 0 is out of range [1, 1024]" "$bin" sample --batch 0
# --prompts FILE: one row per line, row i = --prompt LINE --seed SEED+i
printf 'the\nand so\n' >prompts.txt
"$bin" sample --prompts prompts.txt --tokens 10 --seed 9 >pr.out 2>pr.err || fail "sample --prompts: $(cat pr.err)"
"$bin" sample --prompt "and so" --tokens 10 --seed 10 >pr1.out 2>pr1.err || fail "sample --prompt 'and so': $(cat pr1.err)"
awk '/^--- sample 2 of 2/{f=1;next} f' pr.out >pr2.out
cmp -s pr1.out pr2.out || fail "sample --prompts row 2 differs from --prompt 'and so' --seed 10: $(cat pr2.out) vs $(cat pr1.out)"
usage_case "--batch: 3, but prompts.txt holds 2 prompts" "$bin" sample --prompts prompts.txt --batch 3
# blank lines (empty, blanks alone, "\r\n") are skipped, not rows of an empty prompt: the same
# rows and seeds as without them, and --batch counts the prompts (a file of blank lines alone
# sampled 3 empty prompts without a word: test_bad_inputs' prompts-blank)
printf '\nthe\n  \r\n\nand so\n\t\n' >prompts_gaps.txt
"$bin" sample --prompts prompts_gaps.txt --tokens 10 --seed 9 >prg.out 2>prg.err || fail "sample --prompts with blank lines: $(cat prg.err)"
cmp -s pr.out prg.out || fail "sample --prompts: blank lines were not skipped: $(cat prg.out) vs $(cat pr.out)"
usage_case "--batch: 6, but prompts_gaps.txt holds 2 prompts (one row each; its 4 blank lines skipped)" \
  "$bin" sample --prompts prompts_gaps.txt --batch 6
# --tokens 0: the prompt alone and its newline; without a prompt nothing at all (it printed an
# empty line)
"$bin" sample --tokens 0 >t0.out 2>t0.err || fail "sample --tokens 0: $(cat t0.err)"
[[ ! -s t0.out && ! -s t0.err ]] || fail "sample --tokens 0 printed: $(od -c t0.out | head -3) $(cat t0.err)"
"$bin" sample --tokens 0 --prompt "the" >t0.out 2>t0.err || fail "sample --tokens 0 --prompt the: $(cat t0.err)"
[[ $(od -An -c t0.out | tr -d ' ') == 'the\n' ]] || fail "sample --tokens 0 --prompt the: $(od -c t0.out | head -3)"
# a corpus of 2- to 3-byte characters and no <|endoftext|>, a model of 10 steps: tokens (mostly
# single bytes: 44 merges) cut characters and make sequences that are none; train's sample and
# sample print valid UTF-8 all the same (U+FFFD for bytes that are no character; a token ending
# inside a character held for the next), and some U+FFFD shows that such bytes were picked
for i in {1..300}; do echo "Çiçekler ağaçta, üzüm bağda; öğle güneşi ışıl ışıl. Ελληνικά γράμματα — “tırnak” €$i 日本語"; done >mb.txt
"$bin" train --data mb.txt --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 --steps 10 \
  --val-every 0 --sample-tokens 60 --quiet --run-dir mb >mb.out 2>mb.err || fail "train on mb.txt: $(tail -3 mb.err)"
[[ -s mb.out ]] || fail "train on mb.txt: no sample printed"
iconv -f UTF-8 -t UTF-8 <mb.out >/dev/null 2>&1 || fail "train's sample is not valid UTF-8: $(od -c mb.out | head -5)"
repl=0
for s in 1 2 3 4 5; do
  "$bin" sample mb --tokens 60 --seed $s --temperature 1 --top-k 0 >mb$s.out 2>mb.err || fail "sample mb: $(cat mb.err)"
  iconv -f UTF-8 -t UTF-8 <mb$s.out >/dev/null 2>&1 || fail "sample --seed $s is not valid UTF-8: $(od -c mb$s.out | head -5)"
  grep -q $'\xEF\xBF\xBD' mb$s.out && repl=$((repl + 1))
done
((repl > 0)) || fail "no U+FFFD in 5 samples of a 10-step model: the test no longer makes bytes that are no character"

# A ',' in a file name: part of the name where a file of that name exists (the lists split every
# ',' before: "part: No such file"), in the list given and in the corpus the run records (a
# resume whose data cache is gone reads it again), in --train-shards / --val-shards and eval.
mkdir -p commas cm_else && cp part_a.txt 'commas/part,c.txt' && cp part_b.txt commas/
(cd commas && "$bin" train --data 'part,c.txt, part_b.txt' "${small[@]}" --steps 2 --val-every 0 --run-dir r --quiet) \
  2>comma.err || fail "train --data with a ',' in a file name: $(tail -3 comma.err)"
rm -rf commas/.cache
(cd cm_else && "$bin" train --resume ../commas/r --steps 3 --quiet) 2>comma.err ||
  fail "--resume of a run whose corpus has a ',' in a name, its cache gone: $(tail -3 comma.err)"
"$bin" tokenize --tokenizer commas/r --in part_a.txt --out 'commas/sh,1.bin' 2>comma.err || fail "tokenize: $(cat comma.err)"
"$bin" train --train-shards 'commas/sh,1.bin' --val-shards 'commas/sh,1.bin' "${small[@]}" --steps 1 --run-dir cm_sh \
  --quiet 2>comma.err || fail "--train-shards with a ',' in a file name: $(tail -3 comma.err)"
"$bin" eval commas/r --data 'commas/sh,1.bin' --batches 1 >comma.out 2>comma.err ||
  fail "eval --data with a ',' in a file name: $(tail -3 comma.err)"
# one batch is said in the singular (it said "1 batches"), in the progress line and the result
grep -q '^eval: 1/1 batch | ' comma.err && grep -q ' (1 batch of 4x32): ' comma.out ||
  fail "eval --batches 1: want '1 batch': $(cat comma.out comma.err)"
# a LIST option given again adds to the list (the last one alone was taken: a missing first file
# went unnoticed)
usage_case "--data: nosuch.txt: No such file or directory" "$bin" train --data nosuch.txt --data part_a.txt "${small[@]}" --steps 1 --run-dir nm
usage_case "--train-shards: nosuch.bin: No such file or directory" "$bin" train --train-shards 'commas/sh,1.bin' \
  --train-shards nosuch.bin "${small[@]}" --steps 1 --run-dir nm
# ... and the line names the list that lacks it (it said only "nosuch.bin: No such file ...")
usage_case "--val-shards: nosuch.bin: No such file or directory" "$bin" train --train-shards 'commas/sh,1.bin' \
  --val-shards nosuch.bin "${small[@]}" --steps 1 --run-dir nm
[[ ! -e nm ]] || fail "a run with a missing --val-shards file left its run directory"
usage_case "--data: nosuch.bin: No such file or directory" "$bin" eval commas/r --data nosuch.bin --data 'commas/sh,1.bin'

# A log reader that goes away (`train 2>&1 | head -1`) does not end the run: SIGPIPE killed it
# at the next line (exit 141, nothing said, no checkpoint). The run finishes, exit 0, its final
# checkpoint and metrics written; the writes to the closed pipe (log lines, the sample) are lost.
"$bin" train --data part_a.txt "${small[@]}" --steps 12 --val-every 0 --sample-tokens 16 --run-dir pipe_r 2>&1 | head -1 >pipe.out
st=("${PIPESTATUS[@]}")
[[ ${st[0]} == 0 ]] || fail "train 2>&1 | head -1: tezgah exited ${st[0]} (want 0: a closed log pipe must not end training)"
[[ -s pipe.out && -f pipe_r/checkpoint.tzc ]] || fail "train 2>&1 | head -1: no final checkpoint in pipe_r: $(ls pipe_r 2>&1)"
grep -q '"step":12,.*"final":true' pipe_r/metrics.jsonl || fail "train 2>&1 | head -1: metrics.jsonl lacks the final record: $(tail -1 pipe_r/metrics.jsonl)"

# a corpus with fewer pairs than the merges asked: data prep says what it got, and why
for i in {1..1000}; do echo "the cat sat on the mat"; done >few.txt
"$bin" train --data few.txt "${small[@]}" --vocab-size 400 --steps 1 --val-every 0 --run-dir few 2>few.err ||
  fail "train on a corpus with few pairs: $(tail -3 few.err)"
grep -q '^data: the tokenizer has 2[0-9][0-9] tokens, not 400: the corpus has no more pairs to merge$' few.err ||
  fail "train on a corpus with few pairs: no line saying the tokenizer is smaller: $(cat few.err)"
# counts of one are singular: "1 step", "1 layer"
grep -q '^model: llama, 1 layer, 2 heads (2 kv), ' few.err && grep -q '^train: cpu backend, B=4 T=32 accum=1, 1 step, ' few.err &&
  grep -q '^done: 1 step, ' few.err || fail "train --steps 1 --n-layer 1: want '1 layer', '1 step': $(cat few.err)"
# the model line names the model's context, and where shorter the -T the run trains at (it said
# "T=<context>" above the train line's "T=<-T>": a -T 32 run of a 64-context model read as T=64)
grep -q '^model: llama, .*, V=[0-9]*, context=32: [0-9.]*M params (' few.err || fail "model line, T = context: $(grep '^model:' few.err)"
"$bin" train --data part_a.txt "${small[@]}" --max-seq-len 64 --steps 1 --val-every 0 --run-dir ctx64 2>ctx.err ||
  fail "train --max-seq-len 64 -T 32: $(tail -3 ctx.err)"
grep -q '^model: llama, 1 layer, 2 heads (2 kv), C=32, d_ff=96, V=300, context=64 (training at T=32): [0-9.]*M params (' ctx.err &&
  grep -q '^train: cpu backend, B=4 T=32 ' ctx.err || fail "model line, -T below the context: $(grep -E '^(model|train):' ctx.err)"
# the done line's tok/s is the steps' own (tokens / the steps' seconds, which metrics.jsonl's
# per-step tok_per_s give: 128 tokens a step here), not the session's wall time: a run that
# validates 16 batches before every step spends most of its time validating (it was in the figure)
"$bin" train --data few.txt "${small[@]}" --steps 20 --val-every 1 --val-batches 16 --run-dir tps 2>tps.err ||
  fail "train --val-every 1: $(tail -3 tps.err)"
done_tps=$(sed -n 's/^done: 20 steps, \([0-9]*\) tok\/s in this session.s steps (\([0-9.]*\) s; validation, checkpoints: \([0-9.]*\) s more), .*/\1/p' tps.err)
[[ -n $done_tps ]] || fail "the done line: $(grep done: tps.err)"
want_tps=$(awk -F'"tok_per_s":' 'NF > 1 { split($2, a, /[,}]/); s += 128 / a[1]; n++ } END { if (n == 20) printf "%.0f", 128 * n / s }' tps/metrics.jsonl)
[[ -n $want_tps ]] && awk -v d="$done_tps" -v w="$want_tps" 'BEGIN { exit !(d > 0.99 * w && d < 1.01 * w) }' ||
  fail "done line $done_tps tok/s, the steps' own (metrics.jsonl) $want_tps: $(grep done: tps.err)"

# ---- a split too small for one batch once encoded (the BPE packs big.txt's 40000 bytes into
# 28547 tokens, which the bytes-based check before it cannot rule out): one line with the counts
# and what helps, and the --val-fraction it names (0.15, below the 0.2 given: at 0.2 the split
# takes every 5th block of 4096 tokens, at 0.15 the tail) does hold a batch ----
vfa=(--data big.txt "${small[@]}" -B 4 -T 1024 --max-seq-len 1024 --steps 1 --quiet)
usage_case "big.txt: the validation split holds 4096 tokens (--val-fraction 0.2 of 28547), fewer than one batch (B*T+1 = 4*1024+1 = 4097 tokens): lower -B or -T (B*T at most 4095), take --val-fraction " \
  "$bin" train "${vfa[@]}" --val-fraction 0.2 --run-dir vf
vf=$(sed -n 's/.*, take --val-fraction \([0-9.]*\) (its split holds one) or give more text$/\1/p' u.err)
[[ -n $vf ]] || fail "a validation split too small for a batch: no --val-fraction named: $(cat u.err)"
"$bin" train "${vfa[@]}" --val-fraction "$vf" --run-dir vf 2>vf.err || fail "train --val-fraction $vf (the error's): $(cat vf.err)"
# --val-fraction's range is one rule: 0.5, its top, trains (the option took it and the data
# preparation then refused it, "must be in (0, 0.5)") and resumes (the checkpoint's data_prep
# record of 0.5 was refused as "not in (0, 0.5)"); past it, test_bad_inputs.sh
"$bin" train --data big.txt "${small[@]}" --steps 2 --stop-after 1 --quiet --val-fraction 0.5 --run-dir vf_half 2>vfh.err ||
  fail "train --val-fraction 0.5 (the top of its range): $(cat vfh.err)"
"$bin" train --resume vf_half --quiet 2>vfh.err || fail "--resume of a --val-fraction 0.5 run: $(cat vfh.err)"

# ---- what a run from the repository root leaves there is git-ignored: the README's --run-dir
# example (myrun, ./latest, ./.cache/) in a scratch git tree holding the repository's .gitignore
# (latest and .cache/ showed up as untracked) ----
command -v git >/dev/null || fail "git is needed to check the repository's .gitignore"
mkdir -p gi && cp "$fixtures/../../.gitignore" gi/ && git -C gi init -q || fail "git init gi"
(cd gi && "$bin" train --data ../big.txt "${small[@]}" --steps 1 --quiet --run-dir myrun 2>../gi.err) || fail "train in gi: $(cat gi.err)"
[[ -L gi/latest && -d gi/.cache ]] || fail "train --run-dir myrun did not write ./latest and ./.cache: $(ls -A gi)"
[[ $(git -C gi status --porcelain -uall) == "?? .gitignore" ]] ||
  fail "a run from the repository root leaves files .gitignore does not cover: $(git -C gi status --porcelain -uall | grep -v ' .gitignore$')"

# ---- the run's tokenizer: tokenizer.json in the run directory; encode/decode take the run ----
[[ -f myrun/tokenizer.json ]] || fail "myrun/tokenizer.json is missing: $(ls myrun)"
ids=$("$bin" encode --tokenizer myrun "First Citizen") || fail "encode --tokenizer RUN_DIR"
[[ $ids == "$("$bin" encode --tokenizer myrun/tokenizer.json "First Citizen")" ]] || fail "run dir vs tokenizer.json ids differ"
[[ $ids == "$("$bin" encode --tokenizer myrun/checkpoint.tzc "First Citizen")" ]] || fail "checkpoint vs tokenizer.json ids differ"
[[ $("$bin" decode --tokenizer myrun "$ids") == "First Citizen" ]] || fail "decode --tokenizer RUN_DIR does not round-trip"
# decode's text is byte-exact into a pipe or file (no newline added: encode | decode gives the
# text back), and ends with a newline on a terminal (script(1)'s pty; it writes \r\n), where
# the shell's prompt continued its last line
"$bin" decode --tokenizer myrun "$ids" >dec.out || fail "decode into a file"
[[ $(od -An -tx1 dec.out | tr -d ' \n') == "$(printf 'First Citizen' | od -An -tx1 | tr -d ' \n')" ]] ||
  fail "decode into a file is not the text byte for byte: $(od -c dec.out | head -3)"
script -qec "$(printf '%q ' "$bin" decode --tokenizer myrun "$ids")" /dev/null </dev/null >dec_tty.out || fail "decode on a pty (script)"
[[ $(od -An -tx1 dec_tty.out | tr -d ' \n') == "$(printf 'First Citizen\r\n' | od -An -tx1 | tr -d ' \n')" ]] ||
  fail "decode on a terminal: want the text and one newline: $(od -c dec_tty.out | head -3)"
# an integer too large for any vocabulary is out of range, not "not an integer"
usage_case "decode: element 0 (99999999999) is out of range (max 299)" "$bin" decode --tokenizer myrun '[99999999999]'
usage_case "--ids: token id 99999999999 is out of range (max 299: the model's vocab_size is 300)" \
  "$bin" logits myrun --ids 1,99999999999
usage_case "--ids: token id -1 in '1, -1' is negative (ids are 0 .. vocab_size-1)" "$bin" logits myrun --ids "1, -1"
# encode's JSON array is taken as --ids: the same logits as the plain list
"$bin" logits myrun --ids "$ids" >lg_json.out 2>/dev/null || fail "logits --ids '$ids' (encode's output)"
"$bin" logits myrun --ids "$(tr -d '[] ' <<<"$ids")" >lg_plain.out 2>/dev/null || fail "logits --ids as a plain list"
cmp -s lg_json.out lg_plain.out && [[ -s lg_plain.out ]] || fail "logits --ids '$ids' and its plain list differ"
# --out - is stdout, as the default (it wrote a file named '-')
"$bin" logits myrun --ids "$ids" --out - >lg_dash.out 2>/dev/null || fail "logits --out -"
cmp -s lg_dash.out lg_plain.out && [[ ! -e - ]] || fail "logits --out -: want the JSON on stdout, no file '-'"
usage_case "--ids: token id 99999999999 is out of range (max 299: the model's vocab_size is 300)" \
  "$bin" logits myrun --ids "[1, 99999999999]"
usage_case "--tokens: 99999999999999999999 is out of range [0, 16777216]" "$bin" sample myrun --tokens 99999999999999999999

# ---- eval on text: same loss as on the tokenized shard; progress on stderr; --json - --------
"$bin" tokenize --tokenizer myrun --in part_b.txt --out part_b.bin 2>tok_b.err || fail "tokenize with the run's tokenizer: $(cat tok_b.err)"
"$bin" eval myrun --data part_b.txt -B 2 -T 32 --batches 20 >ev_text.out 2>ev_text.err || fail "eval on text: $(cat ev_text.err)"
"$bin" eval myrun --data part_b.bin -B 2 -T 32 --batches 20 >ev_shard.out 2>/dev/null || fail "eval on the shard"
lt=$(grep -o 'loss [0-9.]*' ev_text.out) ls=$(grep -o 'loss [0-9.]*' ev_shard.out)
[[ -n $lt && $lt == "$ls" ]] || fail "eval on text ($lt) and on its shard ($ls) differ"
grep -q 'eval: 20/20 batches | loss [0-9.]* | [0-9.kM]* tok/s | ETA 0m00s$' ev_text.err || fail "eval: no progress line on stderr: $(cat ev_text.err)"
awk 'length($0) > 79 { print; bad = 1 } END { exit bad }' ev_text.err || fail "eval's progress line is wider than 79 columns"
"$bin" eval myrun --data part_b.txt -B 2 -T 32 --batches 5 --json - >ev.json 2>ev.err || fail "eval --json -"
[[ $(head -c 1 ev.json) == "{" && $(tail -n 1 ev.json) == "}" ]] || fail "eval --json - stdout is not only JSON: $(cat ev.json)"
grep -q '"perplexity"' ev.json || fail "eval JSON lacks perplexity"
! grep -q '^eval:' ev.json || fail "eval --json - printed the human line on stdout"
grep -q '^eval: .* perplexity' ev.err || fail "eval --json -: the result line is not on stderr"

# ---- progress line: at most 79 columns, val loss with its step -------------------------------
"$bin" train --data part_a.txt "${small[@]}" --steps 1000000 --stop-after 12 --val-every 5 --val-batches 1 \
  --log-every 1 --run-dir wide 2>wide.err || fail "train for the progress line: $(tail -3 wide.err)"
grep -E '^ *[0-9]+/1000000' wide.err >prog.txt
[[ $(wc -l <prog.txt) == 12 ]] || fail "want 12 progress lines: $(cat wide.err)"
awk 'length($0) > 79 { print; bad = 1 } END { exit bad }' prog.txt || fail "progress line wider than 79 columns"
grep -q ' 12/1000000 \[.*\] loss [0-9.]* | [0-9.k]* tok/s | ETA [0-9hms]* | val [0-9.]*@10$' prog.txt ||
  fail "last progress line is not 'step/total [bar] loss | tok/s | ETA | val X@10': $(tail -1 prog.txt)"
# resumed, the lines before the next validation repeat the last one (the checkpoint holds it),
# as the uninterrupted run's lines 11 and 12 do; they were blank until 2026-12-03
v10=$(grep -o '| val [0-9.]*@10$' prog.txt | tail -n 1)
cp -r wide wide_res # (info below reads wide at step 12)
"$bin" train --resume wide_res --stop-after 2 --log-every 1 2>wide2.err || fail "resume for the progress line: $(tail -3 wide2.err)"
grep -E '^ *[0-9]+/1000000' wide2.err >prog2.txt
[[ -n $v10 && $(wc -l <prog2.txt) == 2 && $(grep -cF -- "$v10" prog2.txt) == 2 ]] ||
  fail "resumed lines 13, 14 do not repeat the last validation '$v10': $(cat prog2.txt)"

# line N shows the validation of the model after N steps where there is one (every --val-every
# steps, the final one after the last step), not the one before it (nanoGPT's "step N: ... val
# loss", llm.c's val line after step N); the bar keeps its width (the columns after it stay put
# when the val step gains digits)
"$bin" train --data part_a.txt "${small[@]}" --steps 30 --val-every 10 --val-batches 1 --run-dir valstep 2>valstep.err ||
  fail "train for the val column: $(tail -3 valstep.err)"
grep -E '^ *[0-9]+/30 ' valstep.err >vs.txt
for n in 10 20 30; do
  grep -qE "^$n/30 \[.*\] loss [0-9.]* \| .* \| val [0-9.]*@$n\$" vs.txt || fail "line $n/30 does not show the val loss @$n: $(cat vs.txt)"
done
fv=$(grep -o 'final val loss [0-9.]*' valstep.err | cut -d' ' -f4)
[[ -n $fv && $(tail -n 1 vs.txt) == *"| val $fv@30" ]] || fail "the last line's val is not the final one ($fv): $(tail -n 1 vs.txt)"
[[ $(awk '{ print index($0, "]") }' vs.txt | sort -u | wc -l) == 1 ]] || fail "the progress bar changes width: $(cat vs.txt)"

# not a terminal, default --log-every 10: lines 1, 10, 20 and the last (25, with the final val);
# resumed, the session's first line too (they were missing until 2026-12-03)
"$bin" train --data part_a.txt "${small[@]}" --steps 25 --val-every 10 --val-batches 1 --run-dir lastline 2>ll.err ||
  fail "train for the last line: $(tail -3 ll.err)"
[[ $(grep -oE '^ *[0-9]+/25 ' ll.err | tr -d ' ' | tr '\n' ' ') == "1/25 10/25 20/25 25/25 " ]] ||
  fail "lines of a 25-step run (want 1, 10, 20, 25): $(grep -E '/25 ' ll.err)"
grep -qE '^25/25 .*\| val [0-9.]*@25$' ll.err || fail "the last line lacks the final val: $(grep '^25/25' ll.err)"
"$bin" train --resume lastline --steps 33 2>ll2.err || fail "resume for the first line: $(tail -3 ll2.err)"
[[ $(grep -oE '^ *[0-9]+/33 ' ll2.err | tr -d ' ' | tr '\n' ' ') == "26/33 30/33 33/33 " ]] ||
  fail "lines of the resumed session (want 26, 30, 33): $(grep -E '/33 ' ll2.err)"

"$bin" train --data part_a.txt "${small[@]}" --steps 3 --log-every 1 --val-every 0 --run-dir eta 2>eta.err ||
  fail "train for the last step's ETA: $(tail -3 eta.err)"
grep -q '^3/3 \[.*\] loss [0-9.]* | [0-9.k]* tok/s | ETA 0m00s | val [0-9.]*@3$' eta.err ||
  fail "the last step's ETA is not 0, or its line lacks the final val @3: $(cat eta.err)"
# --val-every 0: the val column is on the last line alone, which waits for the final validation
# (README: "--val-every 0: that one alone ... the line of that step waits for it"). Resumed, the
# lines before it do not repeat the checkpoint's last validation (the session before's final
# one, @3): until session 36 every line showed it, stale beside the done line's new final val
# loss. The bar is sized with the column counted, as a validating run's (valstep above, the same
# step and val-step widths), and keeps that width (it narrowed when the tok/s gained a
# character: 22 -> 21 columns, the session-34 walkthrough)
cp -r eta eta_res
"$bin" train --resume eta_res --steps 12 --log-every 1 2>etar.err || fail "resume of a --val-every 0 run: $(tail -3 etar.err)"
grep -E '^ *[0-9]+/12 ' etar.err >etar.txt
fv=$(grep -o 'final val loss [0-9.]*' etar.err | cut -d' ' -f4)
[[ $(wc -l <etar.txt) == 9 ]] && ! head -n 8 etar.txt | grep -q '| val ' && [[ -n $fv && $(tail -n 1 etar.txt) == "12/12 "*"| val $fv@12" ]] ||
  fail "resumed --val-every 0 lines: want 4..11 without a val column, 12 with the final val ($fv) @12: $(cat etar.txt)"
[[ $(awk '{ print index($0, "]") }' etar.txt vs.txt | sort -u | wc -l) == 1 ]] ||
  fail "a resumed --val-every 0 run's bar is not sized as a validating run's: $(cat etar.txt; tail -n 1 vs.txt)"

# ---- --profile on the CPU backend: the per-op table, its total the step's wall time ---------
# The last progress line shows the final validation, as the done line does: it was printed
# before the table, ahead of the final validation, and repeated the one of step 3 ("6/6 ... |
# val X@3" beside "final val loss Y", the session-37 walkthrough)
"$bin" train --data part_a.txt "${small[@]}" --steps 6 --val-every 3 --profile --run-dir prof 2>prof.err ||
  fail "train --profile on cpu: $(tail -3 prof.err)"
fv=$(grep -o 'final val loss [0-9.]*' prof.err | cut -d' ' -f4)
[[ -n $fv && $(grep -E '^ *[0-9]+/6 ' prof.err | tail -n 1) == "6/6 "*"| val $fv@6" ]] ||
  fail "train --profile: the last progress line is not the final validation's ($fv@6): $(grep -E '^ *[0-9]+/6 |^done' prof.err)"
grep -q '^cpu profile (wall clock, [0-9]* threads, per step over 4 steps):$' prof.err ||
  fail "train --profile: no cpu profile title over steps 3..6: $(grep -i profile prof.err)"
for op in matmul_t attention_bwd crossentropy adamw '(outside ops)' total; do
  grep -qF "  $op " prof.err || fail "train --profile: no '$op' row: $(sed -n '/cpu profile/,$p' prof.err)"
done

# ---- --recompute auto|on|off (default auto): TEZGAH_DEBUG_MEM_FREE stands in for the free memory
# the CPU backend cannot tell. Neither arena fits: one line naming both sizes, exit 1, no run left;
# only the recomputing one fits: a note with both sizes and the free memory, and the losses (train
# and val) bit-identical to --recompute on's, off's and the default's (unknown free memory: stored,
# no note). The mode is recorded in the checkpoint and kept by --resume, whose session chooses its
# arena again (recompute_active); bad values are refused (tests/test_bad_inputs.sh) ----
rcf=(--data part_a.txt "${small[@]}" --n-layer 3 --d-model 64 -B 8 -T 32 --steps 6 --val-every 3 --val-batches 1)
TEZGAH_DEBUG_MEM_FREE=0 usage_case "--recompute auto: training needs " "$bin" train "${rcf[@]}" --quiet --run-dir rc_none
[[ ! -e rc_none ]] || fail "--recompute auto, nothing fits: the run directory was left: $(ls rc_none)"
sizes=$(sed -n 's/^tezgah: error: --recompute auto: training needs \([0-9.]*\) MiB with the activations stored and \([0-9.]*\) MiB with recompute, but the cpu backend has 0\.0 MiB free: try a smaller -B (with --grad-accum for the same batch)$/\1 \2/p' u.err)
read -r st_mib rc_mib <<<"$sizes"
[[ -n $rc_mib ]] && awk -v s="$st_mib" -v r="$rc_mib" 'BEGIN { exit !(s - r >= 0.4) }' ||
  fail "--recompute auto, nothing fits: want both sizes in MiB, stored above recomputed by 0.4 or more: $(cat u.err)"
mid=$(awk -v s="$st_mib" -v r="$rc_mib" 'BEGIN { printf "%.0f", (s + r) / 2 * 1048576 }')
TEZGAH_DEBUG_MEM_FREE=$mid "$bin" train "${rcf[@]}" --run-dir rc_auto 2>rc_auto.err || fail "--recompute auto (recompute fits): $(tail -3 rc_auto.err)"
grep -qx "note: --recompute auto: recompute on: training needs $st_mib MiB with the activations stored, $rc_mib MiB with recompute; the cpu backend has [0-9.]* MiB free" rc_auto.err ||
  fail "--recompute auto (recompute fits): want its note: $(grep -v '^[0-9]*/' rc_auto.err | head -5)"
TEZGAH_DEBUG_MEM_FREE=$((mid * 4)) "$bin" train "${rcf[@]}" --run-dir rc_fits 2>rc_fits.err || fail "--recompute auto (stored fits): $(tail -3 rc_fits.err)"
"$bin" train "${rcf[@]}" --recompute on --quiet --run-dir rc_on || fail "--recompute on"
"$bin" train "${rcf[@]}" --recompute=off --quiet --run-dir rc_off || fail "--recompute=off"
"$bin" train "${rcf[@]}" --run-dir rc_def 2>rc_def.err || fail "train without --recompute: $(tail -3 rc_def.err)"
"$bin" train "${rcf[@]}" --recompute --quiet --run-dir rc_bare || fail "bare --recompute before another option"
! grep -q 'recompute' rc_fits.err rc_def.err || fail "a note where auto keeps the activations: $(grep recompute rc_fits.err rc_def.err)"
for d in rc_fits rc_on rc_off rc_def rc_bare; do
  cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' rc_auto/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' $d/metrics.jsonl) ||
    fail "--recompute: $d's losses differ from auto's with recompute: $(paste rc_auto/metrics.jsonl $d/metrics.jsonl | head -3)"
done
[[ $(grep -c '"loss"' rc_auto/metrics.jsonl) == 6 && $(grep -c '"val_loss"' rc_auto/metrics.jsonl) == 3 ]] ||
  fail "--recompute auto: want 6 losses and 3 val losses: $(cat rc_auto/metrics.jsonl)"
ckstate() { grep -ao '"recompute[a-z_]*":[a-z"]*' "$1/checkpoint.tzc" | tr '\n' ' '; }
for want in 'rc_auto:"recompute":"auto" "recompute_active":true ' 'rc_fits:"recompute":"auto" "recompute_active":false ' \
            'rc_on:"recompute":"on" "recompute_active":true ' 'rc_off:"recompute":"off" "recompute_active":false ' \
            'rc_def:"recompute":"auto" "recompute_active":false ' 'rc_bare:"recompute":"on" "recompute_active":true '; do
  [[ $(ckstate "${want%%:*}") == "${want#*:}" ]] || fail "${want%%:*}'s checkpoint records $(ckstate "${want%%:*}"), want ${want#*:}"
done
"$bin" info rc_auto >rc_info.out || fail "info rc_auto"
grep -q '^training: step 6 of 6, .* skipped steps, activations recomputed in the last session$' rc_info.out &&
  grep -q '^options: .*"recompute":"auto"' rc_info.out || fail "info of an auto run that recomputed: $(cat rc_info.out)"
"$bin" info rc_def | grep -q '^training: step 6 of 6, .* skipped steps$' || fail "info rc_def: $("$bin" info rc_def | grep training)"
# resumed: the mode kept (auto), the arena chosen again (here stored: no free memory given); the
# losses those of the uninterrupted run
TEZGAH_DEBUG_MEM_FREE=$mid "$bin" train "${rcf[@]}" --stop-after 3 --quiet --run-dir rc_res || fail "--recompute auto, 3 steps"
[[ $(ckstate rc_res) == '"recompute":"auto" "recompute_active":true ' ]] || fail "rc_res after 3 steps: $(ckstate rc_res)"
"$bin" train --resume rc_res --quiet || fail "--resume of an auto run"
[[ $(ckstate rc_res) == '"recompute":"auto" "recompute_active":false ' ]] || fail "rc_res resumed: $(ckstate rc_res)"
cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' rc_auto/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' rc_res/metrics.jsonl) ||
  fail "--recompute auto: the resumed run's losses differ: $(paste rc_auto/metrics.jsonl rc_res/metrics.jsonl)"
"$bin" train --resume rc_on --steps 7 --quiet || fail "--resume of a --recompute on run"
[[ $(ckstate rc_on) == '"recompute":"on" "recompute_active":true ' ]] || fail "rc_on resumed without the flag: $(ckstate rc_on)"
"$bin" train --resume rc_on --steps 8 --recompute off --quiet || fail "--resume with --recompute off"
[[ $(ckstate rc_on) == '"recompute":"off" "recompute_active":false ' ]] || fail "rc_on resumed with --recompute off: $(ckstate rc_on)"
TEZGAH_DEBUG_MEM_FREE=0 usage_case "but the cpu backend has 0.0 MiB free: free device memory (the run's batch is fixed on --resume)" \
  "$bin" train --resume rc_fits --steps 8 --quiet
[[ $(grep -c '"loss"' rc_fits/metrics.jsonl) == 6 ]] || fail "a refused --resume changed rc_fits' metrics"

# ---- --val-every 0 / --ckpt-every 0: no validation and no checkpoint during the run; the
# final validation (one "final" record) and the final checkpoint (checkpoint-00000006 with
# --keep) all the same, as train --help says ----
off=(--data part_a.txt "${small[@]}" --steps 6 --val-every 0 --ckpt-every 0 --keep 10 --quiet)
"$bin" train "${off[@]}" --run-dir off_ref || fail "train --val-every 0 --ckpt-every 0"
[[ $(grep -c '"val_loss"' off_ref/metrics.jsonl) == 1 && $(grep -c '"final":true' off_ref/metrics.jsonl) == 1 ]] ||
  fail "--val-every 0: want the final validation alone: $(grep val_loss off_ref/metrics.jsonl)"
[[ $(cd off_ref && echo checkpoint-*.tzc) == checkpoint-00000006.tzc ]] ||
  fail "--ckpt-every 0 --keep 10: want the final checkpoint alone: $(ls off_ref)"

# ---- --ckpt-every on --resume: taken (it was refused, but a checkpoint changes nothing of the
# run's state, as --stop-after's does not): the resumed session checkpoints at the new cadence,
# its losses are the uninterrupted run's, and a later resume without the flag keeps the cadence
"$bin" train "${off[@]}" --stop-after 2 --run-dir off_res || fail "train --stop-after 2 (for --resume --ckpt-every)"
"$bin" train --resume off_res --ckpt-every 2 --quiet 2>ce.err || fail "--resume with --ckpt-every 2: $(cat ce.err)"
[[ $(cd off_res && echo checkpoint-*.tzc) == "checkpoint-00000002.tzc checkpoint-00000004.tzc checkpoint-00000006.tzc" ]] ||
  fail "--resume --ckpt-every 2 (from step 2 to 6): want checkpoints 2 (--stop-after's), 4 and 6: $(ls off_res)"
cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' off_ref/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' off_res/metrics.jsonl) ||
  fail "--resume --ckpt-every 2: the losses differ from the uninterrupted run's: $(paste off_ref/metrics.jsonl off_res/metrics.jsonl)"
"$bin" train --resume off_res --steps 10 --quiet || fail "--resume of a run resumed with --ckpt-every 2"
[[ -f off_res/checkpoint-00000008.tzc ]] || fail "a later --resume did not keep --ckpt-every 2: $(ls off_res)"

# ---- resume with --steps at or below the checkpoint's step: refused, the run untouched ------
sum=$(cat eta/checkpoint.tzc eta/metrics.jsonl | sha256sum)
usage_case "--steps 2: the run is already at step 3; give --steps above 3 to continue it" \
  "$bin" train --resume eta --steps 2 --quiet
usage_case "--steps 3: the run is already at step 3 (nothing to do); give --steps above 3 to continue it" \
  "$bin" train --resume eta --steps 3
[[ $(cat eta/checkpoint.tzc eta/metrics.jsonl | sha256sum) == "$sum" ]] || fail "a refused --resume changed the run"
"$bin" info eta | grep -q '^training: step 3 of 3,' || fail "after a refused --resume: $("$bin" info eta | grep training)"

# ---- resuming a finished run without --steps: nothing to do, exit 0, the run untouched -----
"$bin" train --resume eta >fin.out 2>fin.err || fail "resume of a finished run: exit $?: $(cat fin.err)"
grep -q '^eta: the run is finished (step 3 of 3); nothing to do, give --steps above 3 to continue it$' fin.err ||
  fail "resume of a finished run: $(cat fin.err)"
[[ $(cat eta/checkpoint.tzc eta/metrics.jsonl | sha256sum) == "$sum" ]] || fail "resuming a finished run changed it"
# with a --run-dir elsewhere, that directory first gets a resume's checks (a run there, a file:
# refused in tests/test_bad_inputs.sh; it said "nothing to do" unchecked); one made for them goes
"$bin" train --resume eta --run-dir fin_new/x >fin.out 2>fin.err || fail "resume of a finished run into a new --run-dir: exit $?: $(cat fin.err)"
grep -q '^eta: the run is finished (step 3 of 3); nothing to do' fin.err && [[ ! -e fin_new ]] ||
  fail "resume of a finished run into a new --run-dir: $(cat fin.err; ls -R fin_new 2>&1)"
# into an existing directory: checked, and nothing in it removed (a run's sweep of dead
# processes' *.tmp.<pid> files is for a run that writes there; the check alone deleted them)
dead_tmp=$(sh -c 'echo $$')
mkdir -p fin_mine && echo mine >"fin_mine/report.txt.tmp.$dead_tmp"
"$bin" train --resume eta --run-dir fin_mine >fin.out 2>fin.err || fail "resume of a finished run into an existing --run-dir: exit $?: $(cat fin.err)"
[[ $(ls -A fin_mine) == "report.txt.tmp.$dead_tmp" ]] || fail "resume of a finished run into fin_mine changed it: $(ls -A fin_mine)"

# ---- a new run into a directory holding only a tezgah metrics.jsonl (a run stopped before its
# first checkpoint): that log is replaced, with a note (a file of the user's is refused:
# tests/test_bad_inputs.sh stray-metrics-*)
mkdir -p oldlog && echo '{"step":1,"loss":5.7}' >oldlog/metrics.jsonl
"$bin" train --data big.txt --vocab-size 300 --steps 2 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 --threads 1 \
  --sample-tokens 0 --val-every 0 --run-dir oldlog >ol.out 2>ol.err || fail "train into a directory with a stray log: exit $?: $(cat ol.err)"
grep -q '^note: oldlog/metrics.jsonl, the log of a run that saved no checkpoint, is replaced by this run.s$' ol.err ||
  fail "train into a directory with a stray log: no note: $(cat ol.err)"
! grep -q '"loss":5.7}' oldlog/metrics.jsonl && [[ -s oldlog/metrics.jsonl ]] || fail "oldlog/metrics.jsonl is not the new run's: $(cat oldlog/metrics.jsonl)"

# ---- --resume of a directory without a checkpoint: exit 1, one line, nothing written; one with
# a Hugging Face config.json points to --init-from (sample and eval take such a directory: their
# message is tests/test_bad_inputs.sh's) ----
mkdir -p nockpt hfcfg && cp "$fixtures/hf_gpt2/config.json" hfcfg/
usage_case "nockpt: run directory has no checkpoint (checkpoint.tzc) to resume (a run saves one every --ckpt-every steps and at its end)" \
  "$bin" train --resume nockpt
[[ -z $(ls -A nockpt) ]] || fail "--resume of an empty directory wrote into it: $(ls -A nockpt)"
usage_case "hfcfg: no checkpoint (checkpoint.tzc) to resume, but a Hugging Face model's config.json: start a new run from the model with --init-from hfcfg" \
  "$bin" train --resume hfcfg
[[ $(ls -A hfcfg) == config.json ]] || fail "--resume of a Hugging Face directory wrote into it: $(ls -A hfcfg)"
# a run stopped by a second Ctrl-C while its first checkpoint was written holds only tz_afile's
# temporary file (checkpoint.tzc.tmp.<pid>, of a process now gone): --resume and sample name it
# as an unfinished write and load nothing (they said "no checkpoint" without a word of it)
dead=$(sh -c 'echo $$')
mkdir -p unfin && echo '{"step":1,"loss":5.7}' >unfin/metrics.jsonl && head -c 5000 eta/checkpoint.tzc >"unfin/checkpoint.tzc.tmp.$dead"
unfin_sum=$(cat unfin/* | sha256sum)
usage_case "unfin: run directory has no checkpoint (checkpoint.tzc) to resume, only unfin/checkpoint.tzc.tmp.$dead: an unfinished write of one (its session was stopped while saving it), not loaded; start the run again (train --run-dir unfin), or, if it continued an earlier run, continue that one again (train --resume EARLIER --run-dir unfin)" \
  "$bin" train --resume unfin
usage_case "unfin: run directory has no checkpoint (checkpoint.tzc), only unfin/checkpoint.tzc.tmp.$dead: an unfinished write of one" \
  "$bin" sample unfin
[[ $(cat unfin/* | sha256sum) == "$unfin_sum" && $(ls -A unfin | wc -l) == 2 ]] || fail "--resume of an unfinished checkpoint changed unfin: $(ls -A unfin)"
# the same file of a live writer (this shell's pid: a session saving its first checkpoint now) is
# not called stopped: "being written"
mkdir -p inwrite && cp "unfin/checkpoint.tzc.tmp.$dead" "inwrite/checkpoint.tzc.tmp.$$"
usage_case "inwrite: run directory has no checkpoint (checkpoint.tzc) yet: inwrite/checkpoint.tzc.tmp.$$ is being written by a running session; try again when it has finished" \
  "$bin" train --resume inwrite
[[ $(ls -A inwrite) == "checkpoint.tzc.tmp.$$" ]] || fail "--resume of a checkpoint being written changed inwrite: $(ls -A inwrite)"
# a path that is not there: named as --resume's value; a checkpoint file is offered only with
# --run-dir, where --resume takes one (it said "nosuch: no such checkpoint file or run directory")
usage_case "--resume: 'nosuch': no such run directory" "$bin" train --resume nosuch
[[ $(cat u.err) == "tezgah: error: --resume: 'nosuch': no such run directory" ]] ||
  fail "--resume nosuch without --run-dir offers more than a run directory: $(cat u.err)"
usage_case "--resume: 'nosuch': no such run directory or checkpoint file" "$bin" train --resume nosuch --run-dir nosuch_out
[[ ! -e nosuch_out ]] || fail "a refused --resume made its --run-dir"

# ---- the run records its backend and activation dtype ("backend", "precision"); a resume on
# another backend or dtype says so in one note (the CPU offers fp32 alone: a record edited to
# cuda / bf16 stands in for a CUDA run), on the same says nothing, nor does a record from
# before the fields (absent: resumed as before) ----
edit=$(dirname "$bin")/tz_ckpt_edit
[[ -x $edit ]] || fail "helper $edit is not built"
rec() { grep -ao '"backend":"[a-z0-9]*","precision":"[a-z0-9]*"' "$1/checkpoint.tzc"; }
[[ $(rec eta) == '"backend":"cpu","precision":"fp32"' ]] || fail "eta's checkpoint records $(rec eta), want cpu / fp32"
"$edit" get eta/checkpoint.tzc meta >eta_meta.json
mkdir -p prec_cuda prec_old && cp -r eta prec_same
sed 's/"backend":"cpu","precision":"fp32"/"backend":"cuda","precision":"bf16"/' eta_meta.json >m_cuda.json
sed 's/,"backend":"cpu","precision":"fp32"//' eta_meta.json >m_old.json
for d in cuda old; do
  cp eta/metrics.jsonl eta/tokenizer.json prec_$d/
  "$edit" set eta/checkpoint.tzc prec_$d/checkpoint.tzc meta m_$d.json || fail "tz_ckpt_edit set (prec_$d)"
done
[[ -z $(rec prec_old) ]] || fail "the old-format record still has the fields: $(rec prec_old)"
for d in cuda old same; do
  "$bin" train --resume prec_$d --steps 4 --sample-tokens 0 >/dev/null 2>prec_$d.err || fail "--resume prec_$d: $(tail -3 prec_$d.err)"
  [[ $(rec prec_$d) == '"backend":"cpu","precision":"fp32"' ]] || fail "prec_$d resumed on the CPU records $(rec prec_$d)"
done
[[ $(grep -c '^note: the run.s last session' prec_cuda.err) == 1 ]] &&
  grep -qx "note: the run's last session trained with bf16 activations on cuda; this one resumes it with fp32 on cpu, so the losses differ from an uninterrupted run's" prec_cuda.err ||
  fail "--resume on another backend and precision: want one note: $(grep -v '^ *[0-9]*/' prec_cuda.err)"
! grep -q 'last session' prec_old.err prec_same.err ||
  fail "a note where the record is absent or the same: $(grep 'last session' prec_old.err prec_same.err)"

# ---- a line in metrics.jsonl that is not a record: dropped on resume with one warning -------
cp -r eta eta_junk && echo 'my note' >>eta_junk/metrics.jsonl
"$bin" train --resume eta_junk --steps 4 --quiet --sample-tokens 0 2>junk.err || fail "resume with a junk metrics line: $(cat junk.err)"
[[ $(cat junk.err) == 'tezgah: warning: eta_junk/metrics.jsonl: line 5 is not a metrics record (a JSON object with a numeric "step"); dropped on resume' ]] ||
  fail "resume with a junk metrics line: want one warning naming line 5: $(cat junk.err)"
! grep -q 'my note' eta_junk/metrics.jsonl && [[ $(grep -c '^{"step":4,"loss"' eta_junk/metrics.jsonl) == 1 ]] ||
  fail "resume with a junk metrics line: $(cat eta_junk/metrics.jsonl)"

# ---- metrics.jsonl deleted: the resume goes on (the checkpoint holds the state) with one note
# that a new log starts at the resumed step (it started one without a word); none where the run
# continues into a new --run-dir, whose metrics start there by design (README) ----------------
cp -r eta eta_nomet && rm eta_nomet/metrics.jsonl
"$bin" train --resume eta_nomet --steps 4 --sample-tokens 0 >/dev/null 2>nomet.err || fail "resume without metrics.jsonl: $(cat nomet.err)"
[[ $(grep -c '^note: ' nomet.err) == 2 ]] &&
  grep -qxF "note: eta_nomet/metrics.jsonl is missing: a new one is started from step 4 (the records of steps 1 to 3 are not recovered; the run resumes exactly from its checkpoint)" nomet.err ||
  fail "resume without metrics.jsonl: want the --steps note and one about the log: $(grep -v '^ *[0-9]*/' nomet.err)"
[[ $(grep -c '^{"step":4,' eta_nomet/metrics.jsonl) == 2 && $(wc -l <eta_nomet/metrics.jsonl) == 2 ]] ||
  fail "resume without metrics.jsonl: want step 4's record and the final one: $(cat eta_nomet/metrics.jsonl)"
"$bin" train --resume eta --run-dir eta_into --steps 4 --sample-tokens 0 >/dev/null 2>into.err || fail "resume into a new --run-dir: $(cat into.err)"
! grep -q 'is missing' into.err || fail "resume into a new --run-dir: a note about its metrics: $(grep 'is missing' into.err)"
# a --run-dir holding only a stray metrics.jsonl (no checkpoint, so no run): the resume into it
# starts a fresh file at the resumed step, as a new run into it does (it appended to the stray one)
mkdir -p eta_stray && echo '{"step":2,"loss":9.5}' >eta_stray/metrics.jsonl
"$bin" train --resume eta --run-dir eta_stray --steps 4 --quiet --sample-tokens 0 2>stray.err || fail "resume into a --run-dir with a stray metrics.jsonl: $(cat stray.err)"
[[ ! -s stray.err && $(head -c 10 eta_stray/metrics.jsonl) == '{"step":4,' && $(wc -l <eta_stray/metrics.jsonl) == 2 ]] ||
  fail "resume into a --run-dir with a stray metrics.jsonl: want a fresh log from step 4, no message: $(cat stray.err eta_stray/metrics.jsonl)"

# ---- a cut-off last line of metrics.jsonl (a write cut short): dropped on resume with the warning
# README promises (it went without a word); a whole last record missing only its newline is kept
cp -r eta eta_cut && truncate -s -5 eta_cut/metrics.jsonl
"$bin" train --resume eta_cut --steps 4 --quiet --sample-tokens 0 2>cut.err || fail "resume with a cut-off metrics line: $(cat cut.err)"
[[ $(cat cut.err) == 'tezgah: warning: eta_cut/metrics.jsonl: line 4 is cut off (no newline at its end: a write cut short, e.g. by a kill); dropped on resume' ]] ||
  fail "resume with a cut-off metrics line: want one warning naming line 4: $(cat cut.err)"
[[ $(grep -c '^{"step":[34],"loss"' eta_cut/metrics.jsonl) == 2 && $(wc -l <eta_cut/metrics.jsonl) == 5 ]] ||
  fail "resume with a cut-off metrics line: $(cat eta_cut/metrics.jsonl)"
cp -r eta eta_nonl && head -n 3 eta/metrics.jsonl | head -c -1 >eta_nonl/metrics.jsonl
"$bin" train --resume eta_nonl --steps 4 --quiet --sample-tokens 0 2>nonl.err || fail "resume with an unterminated last record: $(cat nonl.err)"
[[ ! -s nonl.err && $(grep -c '^{"step":[1234],"loss"' eta_nonl/metrics.jsonl) == 4 && $(wc -l <eta_nonl/metrics.jsonl) == 5 ]] ||
  fail "resume with an unterminated last record: want it kept, no message: $(cat nonl.err eta_nonl/metrics.jsonl)"

# ---- --tokenizer-backend on --resume: taken (it was refused as if it changed the run: the BPE
# and the ids are the same on either backend, and on a resume only shards prepared again are
# tokenized, checked byte for byte against the run's record); the losses are the same ---------
cp -r eta eta_tb
"$bin" train --resume eta_tb --steps 4 --tokenizer-backend webgpu --quiet --sample-tokens 0 2>tb.err ||
  fail "--resume with --tokenizer-backend webgpu: $(cat tb.err)"
[[ $(grep -o '"step":4,"loss":[^,]*' eta_tb/metrics.jsonl) == "$(grep -o '"step":4,"loss":[^,]*' eta_nomet/metrics.jsonl)" ]] ||
  fail "--resume with --tokenizer-backend webgpu: other losses: $(paste eta_tb/metrics.jsonl eta_nomet/metrics.jsonl)"
usage_case "--tokenizer-backend: 'gpu' is not one of cpu, webgpu" "$bin" train --resume eta_tb --steps 5 --tokenizer-backend gpu

# ---- a seed above 2^53 survives a resume (JSON numbers are doubles): same losses ------------
big=(--data part_a.txt "${small[@]}" --steps 6 --val-every 0 --sample-tokens 0 --quiet --seed 18446744073709551557)
"$bin" train "${big[@]}" --run-dir seed_ref || fail "train with a 64-bit seed"
"$bin" train "${big[@]}" --run-dir seed_res --stop-after 3 || fail "train with a 64-bit seed, 3 steps"
"$bin" train --resume seed_res --quiet --sample-tokens 0 || fail "resume with a 64-bit seed"
diff <(grep -o '"loss":[^,]*' seed_ref/metrics.jsonl) <(grep -o '"loss":[^,]*' seed_res/metrics.jsonl) >/dev/null ||
  fail "a run resumed with seed 18446744073709551557 has other losses than the uninterrupted one"
grep -q '"loss"' seed_ref/metrics.jsonl || fail "no losses in seed_ref/metrics.jsonl"

# ---- --logits-chunk: the classifier over row chunks, its line; losses (train and val) within
# 1e-5 relative of the whole batch's (fp32 summation order only); another chunk on --resume ----
lc=(--data part_a.txt "${small[@]}" --steps 6 --val-every 3)
"$bin" train "${lc[@]}" --logits-chunk 0 --run-dir lc_whole 2>lc0.err || fail "train --logits-chunk 0: $(tail -2 lc0.err)"
! grep -q '^classifier:' lc0.err || fail "--logits-chunk 0 (the whole batch) printed $(grep '^classifier:' lc0.err)"
"$bin" train "${lc[@]}" --logits-chunk 50 --stop-after 3 --run-dir lc_chunk 2>lc50.err || fail "train --logits-chunk 50: $(tail -2 lc50.err)"
grep -qx 'classifier: logits in chunks of 50 rows (3 chunks for a batch of 128 rows): 0\.1 MiB instead of 0\.2 MiB' lc50.err ||
  fail "--logits-chunk 50: want its classifier line: $(grep -v '^[0-9]*/' lc50.err | head -5)"
"$bin" train --resume lc_chunk --logits-chunk 7 --quiet --sample-tokens 0 2>lc7.err || fail "--resume with --logits-chunk 7: $(cat lc7.err)"
paste <(grep -o '"\(val_\)*loss":[0-9.]*' lc_whole/metrics.jsonl) <(grep -o '"\(val_\)*loss":[0-9.]*' lc_chunk/metrics.jsonl) |
  awk -F'[:\t]' '{ n++; r = ($2 - $4) / $2; if (r < 0) r = -r; if ($1 != $3 || r > 1e-5) bad = bad " " $0 }
                 END { if (n != 9 || bad != "") { print n " losses;" bad; exit 1 } }' >lc.cmp ||
  fail "--logits-chunk 50 / 7 against the whole batch: $(cat lc.cmp)"

# ---- a model without a tokenizer: encode says what to give ---------------------------------
"$bin" convert --from hf "$fixtures/hf_gpt2" --out notok 2>/dev/null || fail "convert --from hf (no tokenizer)"
usage_case "--tokenizer notok: the model in notok/checkpoint.tzc has no tokenizer stored" "$bin" encode --tokenizer notok hi
usage_case "has no tokenizer stored" "$bin" decode --tokenizer notok/checkpoint.tzc '[1]'

# ---- --model presets: the named shape, flags given beside it win, checked on --resume ------
"$bin" train --model stories15m --data big.txt --vocab-size 300 -B 1 -T 8 --steps 1 --threads 1 \
  --sample-tokens 0 --quiet --run-dir preset 2>preset.err || fail "train --model stories15m: $(cat preset.err)"
"$bin" info preset >preset.out || fail "info preset"
# llama2.c's stories15M: dim 288, 6 layers, 6 heads, hidden_dim 768, context 256
grep -q '^model: llama, 6 layers, 6 heads (6 kv), d_model 288, d_ff 768, .*context 256' preset.out ||
  fail "--model stories15m: $(sed -n 2p preset.out)"
"$bin" train --model gpt2-1.5b --n-layer 1 --d-model 32 --n-head 2 --data big.txt --vocab-size 300 -B 1 -T 8 \
  --steps 1 --threads 1 --sample-tokens 0 --quiet --run-dir preset2 2>preset.err || fail "train --model with flags: $(cat preset.err)"
"$bin" info preset2 >preset.out || fail "info preset2"
grep -q '^model: gpt2, 1 layer, 2 heads (2 kv), d_model 32, d_ff 128, .*context 1024' preset.out ||
  fail "--model gpt2-1.5b with shape flags: $(sed -n 2p preset.out)"
# gpt2 pads its vocabulary (300 -> 384 rows); the padded rows are never sampled, so a tokenizer
# of vocab_size tokens is all sample needs (one of fewer tokens: test_bad_inputs.sh's note cases)
grep -q ', vocab 300 (padded 384), ' preset.out || fail "--model gpt2-1.5b with shape flags: want vocab 300 padded to 384: $(sed -n 2p preset.out)"
"$bin" sample preset2 --tokenizer preset2/tokenizer.json --tokens 16 --ignore-eot --temperature 1 --top-k 0 >pad.out 2>pad.err ||
  fail "sample of a gpt2 run (padded vocabulary) with its 300-token tokenizer: $(cat pad.err)"
usage_case "--model: 'gpt2-2b' is not a known shape (gpt2-124m, gpt2-350m" "$bin" train --model gpt2-2b --data big.txt
usage_case "--model gpt2-124m (arch=gpt2) does not match the checkpoint's arch=llama" "$bin" train --resume preset --model gpt2-124m --steps 2
"$bin" train --resume preset --model stories15m --steps 2 --quiet >preset.out 2>preset.err ||
  fail "--resume with the run's own --model: $(cat preset.err)"
# the run's --sample-tokens 0 holds on --resume (it sampled 200 tokens before)
[[ ! -s preset.out ]] || fail "--resume sampled although the run has --sample-tokens 0: $(head -c 200 preset.out)"

# ---- a --train-shards run without --tokenizer: its closing sample cannot be decoded; one note
# says it was skipped, why and what to give (it was skipped without a word) -----------------------
"$bin" tokenize --tokenizer preset --in big.txt --out nt.bin >/dev/null 2>&1 || fail "tokenize big.txt with preset's tokenizer"
"$bin" train --train-shards nt.bin "${small[@]}" --sample-tokens 8 --steps 2 --run-dir ntrun >nt.out 2>nt.err ||
  fail "train --train-shards without --tokenizer: $(cat nt.err)"
grep -qxF "note: no closing sample: the run has no tokenizer to decode with (--train-shards without --tokenizer); give --tokenizer gpt2 or the shards' tokenizer file when training, or sample now with tezgah sample ntrun --tokenizer SPEC" nt.err ||
  fail "train --train-shards without --tokenizer: no note that the closing sample was skipped: $(grep -v '^[0-9]*/' nt.err)"
[[ ! -s nt.out ]] || fail "train --train-shards without --tokenizer printed a sample: $(head -c 200 nt.out)"
"$bin" sample ntrun --tokenizer preset --tokens 4 >/dev/null 2>nt.err || fail "the note's way out (sample --tokenizer): $(cat nt.err)"
# --vocab-size beside --tokenizer (it was ignored without a word, V the tokenizer's): the same
# size goes without a word, a larger one pads the model with a note (sample leaves the padded ids
# out); a smaller one is refused (test_bad_inputs: shard-tok-vocab-below)
pv=$("$bin" info preset | sed -n 's/^tokenizer: .*, \([0-9]*\) tokens$/\1/p')
"$bin" train --train-shards nt.bin --tokenizer preset "${small[@]/300/$pv}" --steps 1 --run-dir tv_same 2>tv.err ||
  fail "train --tokenizer preset --vocab-size $pv: $(cat tv.err)"
! grep -q 'note: --vocab-size' tv.err && grep -q "V=$pv," tv.err || fail "train --tokenizer preset --vocab-size $pv: $(grep -v '^ *[0-9]*/' tv.err)"
"$bin" train --train-shards nt.bin --tokenizer preset "${small[@]/300/$((pv + 20))}" --steps 1 --run-dir tv_pad 2>tv.err ||
  fail "train --tokenizer preset --vocab-size $((pv + 20)): $(cat tv.err)"
grep -qxF "note: --vocab-size $((pv + 20)) is above the $pv tokens of --tokenizer preset: the model is padded with 20 rows no token uses (sample leaves them out)" tv.err &&
  grep -q "V=$((pv + 20))," tv.err || fail "train --tokenizer preset --vocab-size $((pv + 20)): want the padding note and V: $(grep -v '^ *[0-9]*/' tv.err)"
# a --train-shards run records its shards absolute (it recorded 'nt.bin': a resume from another
# directory said the shard was gone)
grep -aqF "\"train_shards\":\"$PWD/nt.bin\"" ntrun/checkpoint.tzc ||
  fail "--train-shards nt.bin recorded as: $(grep -ao '"train_shards":"[^"]*"' ntrun/checkpoint.tzc)"
(cd / && "$bin" train --resume "$OLDPWD/ntrun" --steps 3 --quiet 2>"$OLDPWD/nt.err") ||
  fail "--resume of a --train-shards run from another directory: $(cat nt.err)"

# ---- --resume after the run's data cache was deleted: the shards are prepared again from the
# run's recorded corpus (unchanged), checked byte for byte, and the run goes on exactly; a changed
# or missing corpus: one line naming the missing shard and the way out; copies of the shards
# given with --train-shards / --val-shards on --resume are checked against the record (it failed
# with "<shard>: No such file or directory" and no way out) ---------------------------------------
head -c 30000 "$src" | tail -c 24000 >gone.txt
gone=(--data gone.txt "${small[@]}" --steps 6 --val-every 3)
"$bin" train "${gone[@]}" --quiet --run-dir gone_ref || fail "gone_ref"
"$bin" train "${gone[@]}" --stop-after 3 --quiet --run-dir gone_a || fail "gone_a: 3 steps"
gshard=$(grep -ao '"train_shards":"[^"]*"' gone_a/checkpoint.tzc | cut -d'"' -f4)
gcache=$(dirname "$gshard")
[[ -f $gshard && -f $gcache/val.bin ]] || fail "gone_a's recorded shard $gshard is not there"
cp -r gone_a gone_b && cp -r gone_a gone_c && cp -r "$gcache" gone_saved
rm -rf "$gcache"
"$bin" train --resume gone_a 2>gone.err || fail "--resume after the data cache was deleted: $(cat gone.err)"
grep -qF "note: $gshard: the run's token shard is gone; preparing the shards again from the run's corpus $PWD/gone.txt (unchanged: xxh64 " gone.err ||
  fail "--resume after the cache was deleted: no note: $(grep -v '^[0-9]*/' gone.err | head -3)"
grep -q "^data: the shards prepared again are the run's, byte for byte (xxh64 [0-9a-f]*, [0-9a-f]*): $gshard$" gone.err ||
  fail "--resume after the cache was deleted: no byte-for-byte line: $(grep -v '^[0-9]*/' gone.err | head -5)"
cmp -s "$gshard" gone_saved/train.bin && cmp -s "$gcache/val.bin" gone_saved/val.bin || fail "the shards prepared again differ"
cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' gone_ref/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' gone_a/metrics.jsonl) ||
  fail "--resume with the shards prepared again: losses differ from the uninterrupted run's: $(paste gone_ref/metrics.jsonl gone_a/metrics.jsonl)"
rm -rf "$gcache" && cp gone.txt gone.bak && echo more >>gone.txt
usage_case "$gshard: the run's token shard is gone (its data cache deleted?), and its corpus $PWD/gone.txt has changed since the run prepared it (xxh64 " \
  "$bin" train --resume gone_b --quiet
[[ ! -e $gcache ]] || fail "--resume with a changed corpus prepared shards at the run's place"
mv gone.bak gone.txt && mv gone.txt gone.moved
usage_case "$gshard: the run's token shard is gone (its data cache deleted?), and its corpus cannot be read to prepare it again ($PWD/gone.txt: No such file or directory): put the corpus back, or give copies of the run's shards with --train-shards and --val-shards on --resume" \
  "$bin" train --resume gone_b --quiet
mv gone.moved gone.txt
usage_case "$PWD/gone_saved/val.bin: --train-shards: xxh64 " "$bin" train --resume gone_b --train-shards gone_saved/val.bin --val-shards gone_saved/val.bin --quiet
# given shards that are not there, or a pattern naming two files where the run recorded one
usage_case "--train-shards: $PWD/gone_saved/nomatch*.bin: no such file (or no match)" "$bin" train --resume gone_b --train-shards 'gone_saved/nomatch*.bin' --val-shards gone_saved/val.bin --quiet
usage_case "--train-shards: '$PWD/gone_saved/*.bin' names 2 files; the run recorded one shard here: give the copy of that one" "$bin" train --resume gone_b --train-shards 'gone_saved/*.bin' --val-shards gone_saved/val.bin --quiet
"$bin" train --resume gone_b --train-shards gone_saved/train.bin --val-shards gone_saved/val.bin --quiet --stop-after 1 2>gone.err ||
  fail "--resume with copies of the shards: $(cat gone.err)"
# recorded: the next resume (cd elsewhere: absolute paths) takes them again
(cd gone_saved && "$bin" train --resume ../gone_b --quiet) || fail "--resume of gone_b from another directory"
cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' gone_ref/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' gone_b/metrics.jsonl) ||
  fail "--resume on copies of the shards: losses differ from the uninterrupted run's: $(paste gone_ref/metrics.jsonl gone_b/metrics.jsonl)"
# the run directory moved with its .cache (runs/ copied elsewhere): the entry beside it is the
# run's, byte for byte; taken without the corpus
rm -rf "$gcache" && mkdir -p moved/runs/.cache && cp -r gone_c moved/runs/c && cp -r gone_saved "moved/runs/.cache/$(basename "$gcache")"
mv gone.txt gone.moved
"$bin" train --resume moved/runs/c 2>gone.err || fail "--resume of a run moved with its data cache: $(cat gone.err)"
mv gone.moved gone.txt
grep -qxF "note: $gshard: the run's token shard is gone; the data cache beside the run directory holds the run's shards, byte for byte: $PWD/moved/runs/.cache/$(basename "$gcache")/train.bin" gone.err ||
  fail "--resume of a run moved with its data cache: no note: $(grep -v '^[0-9]*/' gone.err | head -3)"
cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' gone_ref/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' moved/runs/c/metrics.jsonl) ||
  fail "--resume of a run moved with its data cache: losses differ from the uninterrupted run's"
# the recorded shards that are there are checked against the record too: a cache entry
# rewritten since (its train.bin replaced) is refused (a preparation again that did not give
# the run's shards, refused, left them at the recorded place, and the next --resume took them
# without a word)
mkdir -p "$gcache" && cp gone_saved/val.bin "$gshard" && cp gone_saved/val.bin "$gcache/val.bin"
usage_case "$gshard: the run's training shard: xxh64 " "$bin" train --resume gone_c --quiet
grep -qF "delete $gcache and resume to prepare them again from the corpus" u.err || fail "a changed cache entry: no way out: $(cat u.err)"
rm -rf "$gcache"
# shards given on --resume as a pattern: the run records the one file it matched (the pattern
# was recorded, and the next --resume read it as a file name: 'saved/t*.bin: No such file')
mkdir -p gone_glob && cp gone_saved/train.bin gone_glob/t1.bin && cp gone_saved/val.bin gone_glob/v1.bin
"$bin" train --resume gone_c --train-shards 'gone_glob/t*.bin' --val-shards 'gone_glob/v*.bin' --stop-after 1 --quiet 2>gg.err ||
  fail "--resume with shards given as patterns: $(cat gg.err)"
grep -aqF "\"train_shards\":\"$PWD/gone_glob/t1.bin\"" gone_c/checkpoint.tzc ||
  fail "--train-shards 'gone_glob/t*.bin' recorded as: $(grep -ao '"train_shards":"[^"]*"' gone_c/checkpoint.tzc)"
"$bin" train --resume gone_c --quiet 2>gg.err || fail "the resume after one with patterns: $(cat gg.err)"
cmp -s <(grep -o '"\(val_\)*loss":[^,}]*' gone_ref/metrics.jsonl) <(grep -o '"\(val_\)*loss":[^,}]*' gone_c/metrics.jsonl) ||
  fail "--resume on shards given as patterns: losses differ from the uninterrupted run's"
# a recorded copy (not in the data cache) changed since: the way out is copies again, not the
# deletion of the copies' directory
cp gone_saved/val.bin gone_glob/t1.bin
usage_case "$PWD/gone_glob/t1.bin: the run's training shard: xxh64 " "$bin" train --resume gone_c --steps 8 --quiet
grep -qF "(changed since it was given); an exact resume needs the run's own shards: give copies" u.err ||
  fail "a changed copy of a shard: the wrong way out: $(cat u.err)"
# a --data list with spaces after its commas (tz_expand_paths drops them) is recorded without
# them: "$PWD/ sp2.txt" was recorded, a file that is not there to prepare the shards again from
head -c 12000 gone.txt >sp1.txt && tail -c 12000 gone.txt >sp2.txt
"$bin" train --data 'sp1.txt, sp2.txt' "${small[@]}" --steps 2 --stop-after 1 --quiet --run-dir sp 2>sp.err ||
  fail "train --data 'sp1.txt, sp2.txt': $(cat sp.err)"
grep -aqF "\"corpus\":\"$PWD/sp1.txt,$PWD/sp2.txt\"" sp/checkpoint.tzc ||
  fail "the corpus list 'sp1.txt, sp2.txt' recorded as: $(grep -ao '"corpus":"[^"]*"' sp/checkpoint.tzc)"
spc=$(dirname "$(grep -ao '"train_shards":"[^"]*"' sp/checkpoint.tzc | cut -d'"' -f4)")
rm -rf "$spc" && "$bin" train --resume sp --quiet 2>sp.err || fail "--resume of a 'sp1.txt, sp2.txt' run, its cache deleted: $(cat sp.err)"

# ---- info RUN ---------------------------------------------------------------------------------
"$bin" info wide >info.out 2>info.err || fail "info RUN: $(cat info.err)"
grep -q '^model: llama, 1 layer, 2 heads (2 kv), d_model 32' info.out || fail "info: no model line: $(cat info.out)"
grep -q '^training: step 12 of 1000000' info.out || fail "info: no training state: $(cat info.out)"
grep -q '^last val loss: [0-9.]* at step 10$' info.out || fail "info: no last val loss: $(cat info.out)"
grep -q '^tokenizer: byte-level BPE, 300 tokens' info.out || fail "info: no tokenizer line"
# the float32 options in their shortest round-tripping form (the doubles of the floats were
# printed: "lr":0.0030000000260770321), warmup -1 as what train makes of it ("warmup":-1)
opts=$(grep '^options: ' info.out)
for want in '"warmup":"auto (5% of steps: 50000)",' '"lr":0.003,' '"min_lr_frac":0.1,' '"beta1":0.9,' '"beta2":0.95,' \
  '"eps":1e-08,' '"weight_decay":0.1,' '"grad_clip":1,'; do
  [[ $opts == *"$want"* ]] || fail "info: the options lack $want: $opts"
done
grep -qx 'rope_theta 10000, norm_eps 1e-05' info.out || fail "info: rope_theta / norm_eps: $(grep rope_theta info.out)"
usage_case "nosuch: no such checkpoint file or run directory" "$bin" info nosuch
"$bin" info "$fixtures/hf_gpt2" >info_hf.out || fail "info HF_DIR"
grep -q '^checkpoint: .*hf_gpt2 (Hugging Face, 0\.1 MiB)$' info_hf.out || fail "info HF_DIR: want its files' size (0.1 MiB): $(head -1 info_hf.out)"

echo "ok: help, usage errors, --data lists, early config errors, latest, run tokenizer, eval on text, progress line, info RUN ($((SECONDS - t0)) s)"
