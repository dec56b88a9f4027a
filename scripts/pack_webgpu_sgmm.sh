#!/usr/bin/env bash
# Build the carried folder DIR for scripts/device_webgpu_sgmm.sh (branch sgmm, issue 22 item 3):
#   DIR/bin/  tezgah, test_webgpu_ops, test_webgpu_sgmat, bench_webgpu_sgmat, libtz_napi_stub.so
#   DIR/lib/  the shared libraries the GPU machine lacks (libpcre2-8, libcjson, libxxhash,
#             libgomp, libcmocka; ../shared/docs/DEVICE.md)
#   DIR/dawn/dawn.node.xz   the node Dawn (npm webgpu@0.6.2, from .deps/dawn)
#   DIR/data/train.bin      tiny Shakespeare as a GPT-2 token shard (made with the packed tezgah)
# Portable build in build-sgmm-dev/: Release, -DTEZGAH_NATIVE=OFF -march=x86-64-v4, no BLAS, CUDA,
# MPI or libplot (as scripts/device_pack.sh, without CUDA). Then on the GPU machine, run tool with
# carry [DIR, ".gl"]: bash scripts/device_webgpu_sgmm.sh DIR
#   bash scripts/pack_webgpu_sgmm.sh [DIR]      (default .dev/sgmm)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-.dev/sgmm}
[[ $dir = /* ]] || dir=$root/$dir
build=$root/build-sgmm-dev
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4 \
  -DTEZGAH_BLAS=OFF -DTEZGAH_CUDA=OFF -DTEZGAH_MPI=OFF -DTEZGAH_PLOT=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
targets=(tezgah test_webgpu_ops test_webgpu_sgmat bench_webgpu_sgmat tz_napi_stub)
cmake --build "$build" -j2 --target "${targets[@]}" >"$build/build.log" 2>&1 || { tail -40 "$build/build.log" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/dawn" "$dir/data"
for t in tezgah test_webgpu_ops test_webgpu_sgmat bench_webgpu_sgmat libtz_napi_stub.so; do
  f=$(find "$build" -type f -name "$t" | head -1)
  [[ -n $f ]] || { echo "pack_webgpu_sgmm: $t was not built" >&2; exit 1; }
  cp "$f" "$dir/bin/"
done
strip "$dir/bin/tezgah" "$dir/bin/test_webgpu_ops" "$dir/bin/test_webgpu_sgmat" "$dir/bin/bench_webgpu_sgmat"
want='^(libpcre2-8|libcjson|libxxhash|libgomp|libcmocka)\.so'
for b in "$dir"/bin/*; do ldd "$b" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    if [[ $name =~ $want ]]; then cp -L "$path" "$dir/lib/$name"; fi
  done
dawn=$root/.deps/dawn/dawn.node
[[ -f $dawn ]] || { echo "pack_webgpu_sgmm: $dawn missing (scripts/setup.sh fetches it)" >&2; exit 1; }
xz -T2 -6 -c "$dawn" >"$dir/dawn/dawn.node.xz"
shared=$(cd "$root/.." && pwd)/shared
TEZGAH_GPT2_DIR=${TEZGAH_GPT2_DIR:-$shared/gpt2} "$dir/bin/tezgah" tokenize --tokenizer gpt2 \
  --in "$shared/data/tinyshakespeare.txt" --out "$dir/data/train.bin" >/dev/null
echo "pack_webgpu_sgmm: $(du -sm "$dir" | cut -f1) MiB in $dir:"
ls -R "$dir" | sed 's/^/  /'
