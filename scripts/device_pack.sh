#!/usr/bin/env bash
# Build a portable tezgah for the GPU machine (the device tool) and gather what runs there.
#
# Builds into build-dev/ (Release, -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4,
# -DTEZGAH_BLAS=OFF, -DTEZGAH_MPI=OFF and -DTEZGAH_PLOT=OFF (the GPU machine has no MPI: --nproc there; no libplot), -DTEZGAH_CUDA=ON: kernels for sm_80/89/90 + PTX; -DTEZGAH_LINK_SHARED=ON:
# the programs share libtezgah.so, so the kernels' device code is carried once) and copies
# into .dev/ (ignored by git):
#   .dev/bin/  tezgah, the CUDA tests (tests/test_cuda_*.c), the bench programs (bench/bench_*.c)
#   .dev/lib/  libtezgah.so.0 and the shared libraries the GPU machine lacks (libpcre2-8, libcjson,
#              libxxhash, libgomp, libcmocka when a test is packed; ../shared/docs/DEVICE.md). libcuda and cuBLASLt
#              are NOT copied: the machine has them (/usr/local/cuda/lib64; tezgah loads
#              libcublasLt.so.13 with dlopen when a CUDA backend is created).
#   .dev/data/ when ../shared has them: tiny Shakespeare as a GPT-2 token shard and
#              ../shared/bench/torch_gpt.py (for scripts/device_cuda.sh's benchmark)
# The test binaries need nothing from the build tree (../shared only optionally, TZ_SHARED_DIR).
#
# On the GPU machine (run tool with carry [".dev"]), from the repository root:
#   export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
#   .dev/bin/tezgah info
#   TEZGAH_CUDA_REQUIRED=1 .dev/bin/test_cuda_ops     # TEZGAH_CUDA_REQUIRED: fail, never skip
#   TEZGAH_CUDA_REQUIRED=1 .dev/bin/test_cuda_train
#   for t in .dev/bin/test_cuda_*; do TEZGAH_CUDA_REQUIRED=1 $t || echo "FAILED: $t"; done
#   bash bench/bench_cuda.sh .dev/bin/tezgah .dev/data/tiny_shakespeare_train.bin .dev/data/torch_gpt.py
#   or all of it: bash scripts/device_cuda.sh tests bench peer
# (cmocka prints one line per test; CMOCKA_MESSAGE_OUTPUT=stdout is the default.)
#
#   bash scripts/device_pack.sh [DIR] [extra cmake args...]     e.g. pack -DCMAKE_CUDA_ARCHITECTURES=90-real
# DIR (a first argument not starting with '-'): the pack's folder instead of .dev/, relative to
# the repository root or absolute. TZ_PACK_TARGETS="tezgah test_cuda_decode": only those
# programs (a smaller pack, a shorter build) instead of tezgah + every CUDA test and bench.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-dev
out=$root/.dev
if (($#)) && [[ $1 != -* ]]; then
  [[ $1 == /* ]] && out=$1 || out=$root/$1
  shift
fi
t0=$SECONDS
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4 \
  -DTEZGAH_BLAS=OFF -DTEZGAH_CUDA=ON -DTEZGAH_CUDA_ARCH=PORTABLE -DTEZGAH_MPI=OFF -DTEZGAH_PLOT=OFF -DTEZGAH_LINK_SHARED=ON "$@" >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
targets=(tezgah)
for f in "$root"/tests/test_cuda_*.c "$root"/bench/bench_*.c; do
  [[ -f $f ]] && targets+=("$(basename "$f" .c)")
done
if [[ -n ${TZ_PACK_TARGETS:-} ]]; then read -r -a targets <<< "$TZ_PACK_TARGETS"; fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
bins=()
for t in "${targets[@]}"; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  [[ -n $f ]] || { echo "device_pack: $t was not built" >&2; exit 1; }
  cp "$f" "$out/bin/"
  bins+=("$out/bin/$t")
done
# The libraries the GPU machine lacks, by soname (cp -L: the file behind the symlink).
want='^(libtezgah|libpcre2-8|libcjson|libxxhash|libgomp|libcmocka)\.so'
for b in "${bins[@]}"; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    if [[ $name =~ $want ]]; then cp -L "$path" "$out/lib/$name"; fi
  done
need=(libtezgah libpcre2-8 libcjson libxxhash libgomp)
# cmocka only when a test is packed (TZ_PACK_TARGETS="tezgah bench_cuda_lt" has none)
for t in "${targets[@]}"; do [[ $t == test_* ]] && { need+=(libcmocka); break; }; done
for lib in "${need[@]}"; do
  ls "$out/lib/$lib".so* >/dev/null 2>&1 || { echo "device_pack: $lib not found among the binaries' libraries" >&2; exit 1; }
done
# Data for scripts/device_cuda.sh's benchmark (when ../shared has it): a GPT-2 token shard of
# tiny Shakespeare (llm.c format, made here with the packed tezgah) and the PyTorch peer.
shared=$(cd "$root/.." && pwd)/shared
if [[ -f $shared/data/tinyshakespeare.txt ]]; then
  mkdir -p "$out/data"
  TEZGAH_GPT2_DIR=${TEZGAH_GPT2_DIR:-$shared/gpt2} "$out/bin/tezgah" tokenize --tokenizer gpt2 \
    --in "$shared/data/tinyshakespeare.txt" --out "$out/data/tiny_shakespeare_train.bin" >/dev/null ||
    echo "device_pack: warning: could not make the GPT-2 token shard (benchmarks need one)" >&2
  [[ -f $shared/bench/torch_gpt.py ]] && cp "$shared/bench/torch_gpt.py" "$out/data/"
fi
# Small models and tokenizers for the CLI checks (scripts/device_cuda.sh, device_cuda_decode5.sh):
# llm.c's GPT-2 tokenizer, llama2.c's stories260K and its tok512 (2 MB together).
for f in llmc/gpt2_tokenizer.bin llama2c/stories260K.bin llama2c/tok512.bin; do
  if [[ -f $shared/$f ]]; then mkdir -p "$out/data" && cp "$shared/$f" "$out/data/"; fi
done
# GPT-2's encoder.json + vocab.bpe (1.5 MB; --tokenizer gpt2 with TEZGAH_GPT2_DIR=.dev/data/gpt2):
# llm.c's gpt2_tokenizer.bin only decodes, so a check with a text prompt needs these.
if [[ -f $shared/gpt2/encoder.json && -f $shared/gpt2/vocab.bpe ]]; then
  mkdir -p "$out/data/gpt2" && cp "$shared/gpt2/encoder.json" "$shared/gpt2/vocab.bpe" "$out/data/gpt2/"
fi
size=$(du -sm "$out" | cut -f1)
echo "device_pack: built ${#targets[@]} programs in $((SECONDS - t0)) s; .dev/ holds ${size} MiB:"
ls "$out/bin" "$out/lib" | sed 's/^/  /'
if ((size > 48)); then echo "device_pack: warning: .dev/ is ${size} MiB (a device call carries 64 MiB at most)" >&2; fi
echo "run there: export LD_LIBRARY_PATH=\$PWD/.dev/lib:/usr/local/cuda/lib64; TEZGAH_CUDA_REQUIRED=1 .dev/bin/test_cuda_ops"
