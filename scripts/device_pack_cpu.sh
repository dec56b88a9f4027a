#!/usr/bin/env bash
# Build the portable CPU-only programs that bench/bench_cpu.sh and scripts/device_cpu17.sh run on
# the GPU machine's host CPU, and gather them into one folder (default .dev/cpu, ignored by git).
#
# Build: build-v4/ (Release, -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4, -DTEZGAH_BLAS=OFF:
# our GEMM only; CUDA, MPI and libplot off), targets tezgah, bench_matmul, bench_fma_peak.
# Folder: bin/ (those three), lib/ (the shared libraries the GPU machine lacks: libgomp,
# libpcre2-8, libcjson, libxxhash, by soname), data/train.bin (tiny Shakespeare as a GPT-2 token
# shard, made with the packed tezgah) and data/torch_gpt.py (the PyTorch peer), both from
# ../shared. About 3 MiB.
#
#   bash scripts/device_pack_cpu.sh [DIR]
#   there (run tool, carry [".dev/cpu"]):  bash scripts/device_cpu17.sh .dev/cpu
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-v4
out=$(realpath -m "${1:-$root/.dev/cpu}")
shared=$(cd "$root/.." && pwd)/shared
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4 \
  -DTEZGAH_CUDA=OFF -DTEZGAH_MPI=OFF -DTEZGAH_PLOT=OFF -DTEZGAH_BLAS=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j2 --target tezgah bench_matmul bench_fma_peak >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/data"
cp "$build/tezgah" "$build/bench/bench_matmul" "$build/bench/bench_fma_peak" "$out/bin/"
want='^(libpcre2-8|libcjson|libxxhash|libgomp)\.so'
for b in "$out"/bin/*; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    if [[ $name =~ $want ]]; then cp -L "$path" "$out/lib/$name"; fi
  done
[[ -f $shared/data/tinyshakespeare.txt ]] || { echo "device_pack_cpu: $shared/data/tinyshakespeare.txt is missing" >&2; exit 1; }
TEZGAH_GPT2_DIR=${TEZGAH_GPT2_DIR:-$shared/gpt2} "$out/bin/tezgah" tokenize --tokenizer gpt2 \
  --in "$shared/data/tinyshakespeare.txt" --out "$out/data/train.bin" >/dev/null
if [[ -f $shared/bench/torch_gpt.py ]]; then cp "$shared/bench/torch_gpt.py" "$out/data/"; fi
echo "device_pack_cpu: $out holds $(du -sh "$out" | cut -f1):"
ls "$out/bin" "$out/lib" "$out/data" | sed 's/^/  /'
