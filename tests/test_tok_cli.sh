#!/usr/bin/env bash
# tezgah tokenize / encode / decode: round trips, llm.c shard equality, one-line errors.
#   test_tok_cli.sh TEZGAH SHARED_DIR TMP_DIR
set -uo pipefail
tz=$1 shared=$2 tmp=$3
[[ -d $shared/gpt2 && -f $shared/llmc/tiny_shakespeare_val.bin ]] || { echo "SKIPPED: $shared absent"; exit 77; }
rm -rf "$tmp" && mkdir -p "$tmp"
export TEZGAH_GPT2_DIR=$shared/gpt2
fails=0
check() { # name, expected, actual
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2] got [$3]"; fails=$((fails + 1)); fi
}
err1() { # name, needle, command...: nonzero exit, exactly one stderr line containing needle
  local name=$1 needle=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if ((rc != 0)) && ((lines == 1)) && grep -q -- "$needle" "$tmp/err"; then
    echo "ok   $name: $(cat "$tmp/err")"
  else
    echo "FAIL $name: rc=$rc lines=$lines: $(cat "$tmp/err")"; fails=$((fails + 1))
  fi
}

check "encode gpt2" "[15496, 995]" "$($tz encode --tokenizer gpt2 "Hello world")"
check "encode stdin" "[15496, 995]" "$(printf 'Hello world' | $tz encode -)"
check "encode special" "[64, 50256, 65]" "$($tz encode --special 'a<|endoftext|>b')"
check "encode plain eot" "[64, 27, 91, 437, 1659, 5239, 91, 29, 65]" "$($tz encode 'a<|endoftext|>b')"
check "encode empty" "[]" "$(printf '' | $tz encode)"
check "decode" "Hello world" "$($tz decode '[15496, 995]')"
check "decode stdin" "Hello world" "$(echo '[15496, 995]' | $tz decode -)"
check "llama2c encode" "[1, 403, 407, 261, 378]" "$($tz encode --tokenizer "$shared/llama2c/tok512.bin" --bos 'Once upon a time')"
check "llama2c decode" "Once upon a time" "$($tz decode --tokenizer "$shared/llama2c/tok512.bin" '[1, 403, 407, 261, 378]')"
check "llmc decode" "Hello world" "$($tz decode --tokenizer "$shared/llmc/gpt2_tokenizer.bin" '[15496, 995]')"
# byte-exact round trip of a file with invalid UTF-8 and NULs
printf 'caf\xc3\xa9 \xff\x00\x01 <|endoftext|>\n\n  x' >"$tmp/bytes"
$tz encode - <"$tmp/bytes" >"$tmp/ids" && $tz decode - <"$tmp/ids" >"$tmp/back"
if cmp -s "$tmp/bytes" "$tmp/back"; then echo "ok   byte round trip"; else echo "FAIL byte round trip"; fails=$((fails + 1)); fi
# ... on purpose (byte-level BPE), so encode says so in its help (it took invalid UTF-8 without
# a word; sample --prompt refuses it): an argument too, exit 0
check "encode invalid UTF-8 argument" "[64, 187, 65]" "$($tz encode $'a\xffb')"
if $tz encode --help | tr '\n' ' ' | grep -q "Any bytes are encoded, invalid UTF-8 and NULs included, on purpose"; then
  echo "ok   encode --help says it takes any bytes"
else
  echo "FAIL encode --help does not say that invalid UTF-8 and NULs are encoded"; fails=$((fails + 1))
fi

# tokenize == llm.c's tinyshakespeare.py shards: sections split on "\n\n", EOT before each,
# "\n\n" kept at the end of all but the last: the same as our <|endoftext|>-separated documents.
perl -0777 -pe 's/\n\n/\n\n<|endoftext|>/g' "$shared/data/tinyshakespeare.txt" >"$tmp/shakes_docs.txt"
if $tz tokenize --in "$tmp/shakes_docs.txt" --out "$tmp/shakes.bin" 2>"$tmp/log"; then
  cat "$tmp/log"
  { tail -c +1025 "$shared/llmc/tiny_shakespeare_val.bin"; tail -c +1025 "$shared/llmc/tiny_shakespeare_train.bin"; } >"$tmp/llmc_body"
  if tail -c +1025 "$tmp/shakes.bin" | cmp -s - "$tmp/llmc_body"; then
    echo "ok   tokenize == llm.c tiny_shakespeare val+train tokens"
  else
    echo "FAIL tokenize differs from llm.c's shards"; fails=$((fails + 1))
  fi
  # same result with 1 thread
  $tz tokenize --threads 1 --in "$tmp/shakes_docs.txt" --out "$tmp/shakes1.bin" 2>/dev/null
  if cmp -s "$tmp/shakes.bin" "$tmp/shakes1.bin"; then echo "ok   tokenize 1 thread == all threads"; else echo "FAIL threads"; fails=$((fails + 1)); fi
else
  echo "FAIL tokenize: $(cat "$tmp/log")"; fails=$((fails + 1))
fi
printf 'doc one<|endoftext|>doc two<|endoftext|>' >"$tmp/two.txt"
$tz tokenize --in "$tmp/two.txt" --out "$tmp/two.bin" 2>/dev/null
check "tokenize docs" "50256 15390 530 50256 15390 734" "$(tail -c +1025 "$tmp/two.bin" | od -An -tu2 -v | xargs)"
printf 'x' >"$tmp/one.txt" # <|endoftext|> x
# the summary line on stderr, as convert's and plot's; stdout stays empty (README: results there)
check "tokenize one: singular counts, on stderr" "tokenize: $tmp/one.txt: 1 byte, 1 document -> 2 tokens (0.50 bytes/token) -> $tmp/one.bin" \
  "$($tz tokenize --in "$tmp/one.txt" --out "$tmp/one.bin" 2>&1 >"$tmp/one.out")"
check "tokenize: nothing on stdout" "" "$(cat "$tmp/one.out")"

# errors: one line, nonzero exit
err1 "decode out of range" "out of range" $tz decode '[15496, 50257]'
err1 "decode negative" "out of range" $tz decode '[-1]'
err1 "decode llama2c range" "out of range" $tz decode --tokenizer "$shared/llama2c/tok512.bin" '[512]'
err1 "decode llmc range" "out of range" $tz decode --tokenizer "$shared/llmc/gpt2_tokenizer.bin" '[99999]'
err1 "decode not json" "decode: the argument:1:1: invalid JSON near 'hello'" $tz decode 'hello'
err1 "decode cut" "decode: the argument:1:6: invalid JSON: the text ends too soon" $tz decode '[1, 2'
err1 "decode text after" "invalid JSON: text after the value near 'x'" $tz decode '[15496] x'
err1 "decode not an array" "not a JSON array of token ids" $tz decode '{"a": 1}'
err1 "decode empty" "decode: the argument: empty" $tz decode ' '
err1 "decode stdin not json" "decode: stdin:2:1: invalid JSON near 'oops]'" bash -c 'printf "[1,\noops]" | "$0" decode -' "$tz"
err1 "decode huge" "decode: element 1 (99999999999) is out of range (max 50256)" $tz decode '[15496, 99999999999]'
err1 "decode above vocab" "decode: element 0 (50257) is out of range (max 50256)" $tz decode '[50257]'
err1 "decode fraction" "not an integer" $tz decode '[1.5]'
err1 "decode string" "not an integer" $tz decode '["a"]'
err1 "llmc encode" "only decode" $tz encode --tokenizer "$shared/llmc/gpt2_tokenizer.bin" hi
err1 "missing tokenizer" "No such file" $tz encode --tokenizer "$tmp/nope.json" hi
err1 "bad tokenizer" "not a tokenizer file" $tz encode --tokenizer "$tmp/bytes" hi
err1 "tokenize no out" "required" $tz tokenize --in "$tmp/two.txt"
err1 "tokenize missing in" "No such file" $tz tokenize --in "$tmp/nope.txt" --out "$tmp/x.bin"
: >"$tmp/empty.txt"
# train's corpus rule (src/train/data_prep.h) for every text input: not empty, not binary
err1 "tokenize empty" "empty.txt: file is empty" $tz tokenize --in "$tmp/empty.txt" --out "$tmp/x.bin"
err1 "tokenize binary" "bytes: looks binary (NUL byte at offset 7); expected UTF-8 text" $tz tokenize --in "$tmp/bytes" --out "$tmp/x.bin"
err1 "tokenize stdin empty" "stdin: file is empty" $tz tokenize --in - --out "$tmp/x.bin" </dev/null
# an unwritable --out is found before encoding: with WebGPU missing, encoding would first add
# its fallback notice (a second stderr line)
err1 "tokenize unwritable out" "nodir/x.bin: cannot write: No such file or directory" \
  env TEZGAH_WEBGPU_LIB=/nonexistent $tz tokenize --in "$tmp/two.txt" --out "$tmp/nodir/x.bin" --backend webgpu
err1 "tokenizer train empty" "empty.txt: file is empty" $tz tokenizer train --in "$tmp/empty.txt" --out "$tmp/t.json"
err1 "tokenizer train binary" "looks binary (NUL byte at offset 7)" $tz tokenizer train --in "$tmp/bytes" --out "$tmp/t.json"
head -c 3000 /dev/urandom | tr -d '\000' >"$tmp/random.bin"
err1 "tokenizer train random" "not UTF-8); expected UTF-8 text" $tz tokenizer train --in "$tmp/random.bin" --out "$tmp/t.json"
# an unwritable --out is found before training: with WebGPU missing, training would first add
# its fallback notice (a second stderr line)
err1 "tokenizer train unwritable out" "nodir/t.json: cannot write: No such file or directory" \
  env TEZGAH_WEBGPU_LIB=/nonexistent $tz tokenizer train --in "$tmp/two.txt" --out "$tmp/nodir/t.json" --backend webgpu
# a text with fewer pairs than merges asked: a smaller vocabulary, said in the summary, exit 0
if out=$($tz tokenizer train --in "$tmp/two.txt" --out "$tmp/few.json" --vocab-size 400 2>&1 >"$tmp/stdout") && [[ ! -s $tmp/stdout ]] &&
  grep -q ' -> 2[0-9][0-9] tokens (of 400 asked: no more pairs to merge) in ' <<<"$out"; then
  echo "ok   tokenizer train: fewer tokens than asked"
else
  echo "FAIL tokenizer train: fewer tokens than asked (the summary on stderr alone): $out $(cat "$tmp/stdout")"; fails=$((fails + 1))
fi
rm -f "$tmp/few.json"
# --out - is stdout (JSON text, as eval --json -): the same bytes as the file, no file named '-'
if (cd "$tmp" && $tz tokenizer train --in two.txt --out - --vocab-size 300 >dash.out 2>/dev/null &&
  $tz tokenizer train --in two.txt --out file.json --vocab-size 300 2>/dev/null && cmp -s dash.out file.json &&
  [[ ! -e - ]]); then
  echo "ok   tokenizer train --out - writes to stdout"
else
  echo "FAIL tokenizer train --out -: want the tokenizer.json on stdout, no file '-'"; fails=$((fails + 1))
fi
if [[ ! -e $tmp/x.bin && ! -e $tmp/t.json ]]; then echo "ok   refused inputs wrote nothing"; else echo "FAIL refused inputs wrote a file"; fails=$((fails + 1)); fi
err1 "unknown option" "unknown option" $tz encode --bogus
err1 "wrong option" "does not apply" $tz decode --special '[1]'
err1 "bad threads" "--threads: 'x' is not a decimal integer" $tz encode --threads x hi
err1 "gpt2 env" "TEZGAH_GPT2_DIR" env TEZGAH_GPT2_DIR="$tmp" $tz encode hi
# A 2 MB run of one letter trains tokens of up to 1 MB; loading them indexed every split of every
# token (O(L^2) hashing: 400 s). Now well under a second; 120 s is only a hang guard.
head -c 2000000 /dev/zero | tr '\0' x > "$tmp/run.txt"
if timeout 120 "$tz" tokenizer train --in "$tmp/run.txt" --out "$tmp/run.json" --vocab-size 300 2>/dev/null &&
  timeout 120 "$tz" encode --tokenizer "$tmp/run.json" - < "$tmp/run.txt" > "$tmp/run.ids" &&
  timeout 120 "$tz" decode --tokenizer "$tmp/run.json" - < "$tmp/run.ids" | cmp -s - "$tmp/run.txt"; then
  echo "ok   2 MB run of one letter: train, encode, decode round trip"
else
  echo "FAIL 2 MB run of one letter: train, encode, decode"; fails=$((fails + 1))
fi
for c in tokenize encode decode; do
  if $tz $c --help | grep -q "usage: tezgah $c"; then echo "ok   $c --help"; else echo "FAIL $c --help"; fails=$((fails + 1)); fi
done
((fails == 0)) && echo "all passed" || echo "$fails failed"
((fails == 0))
