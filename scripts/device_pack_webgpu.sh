#!/usr/bin/env bash
# Pack the WebGPU device scripts' folder DIR (scripts/device_webgpu_fasgmat.sh, _attnst.sh, _sgmm.sh, _f16act.sh, ...):
# a portable build (Release, -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4, no BLAS / CUDA /
# MPI / libplot, as scripts/device_pack.sh) in build-devwg/, then
#   DIR/bin/   tezgah, test_webgpu_ops, test_webgpu_train, test_webgpu_sgmat, bench_webgpu, bench_webgpu_sgmat,
#              libtz_napi_stub.so
#   DIR/lib/   the shared libraries the GPU machine lacks (libpcre2-8, libcjson, libxxhash, libgomp,
#              libcmocka)
#   DIR/dawn/  dawn.node.xz (npm webgpu@0.6.2's Dawn from .deps/dawn, xz-compressed)
#   DIR/data/  train.bin (tiny Shakespeare as a GPT-2 token shard, from ../shared/data) and
#              torch_gpt.py (../shared/bench) when ../shared has them
#   bash scripts/device_pack_webgpu.sh .dev/fasgmat      (about 10 minutes on 2 cores, ~12 MB)
set -euo pipefail
dir=${1:?usage: device_pack_webgpu.sh DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-devwg
jobs=${JOBS:-2}
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v4 \
  -DTEZGAH_BLAS=OFF -DTEZGAH_CUDA=OFF -DTEZGAH_MPI=OFF -DTEZGAH_PLOT=OFF -DTEZGAH_WASM=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
progs=(tezgah test_webgpu_ops test_webgpu_train test_webgpu_sgmat bench_webgpu bench_webgpu_sgmat)
cmake --build "$build" -j"$jobs" --target "${progs[@]}" tz_napi_stub >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/dawn" "$dir/data"
for t in "${progs[@]}" libtz_napi_stub.so; do
  f=$(find "$build" -type f -name "$t" | head -1)
  [[ -n $f ]] || { echo "device_pack_webgpu: $t was not built" >&2; exit 1; }
  cp "$f" "$dir/bin/"
done
strip "$dir"/bin/* 2>/dev/null || true
want='^(libpcre2-8|libcjson|libxxhash|libgomp|libcmocka)\.so'
for b in "$dir"/bin/*; do ldd "$b" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    if [[ $name =~ $want ]]; then cp -L "$path" "$dir/lib/$name"; fi
  done
dawn=$root/.deps/dawn/dawn.node
[[ -f $dawn ]] || { echo "device_pack_webgpu: $dawn missing (scripts/setup.sh fetches it)" >&2; exit 1; }
xz -T0 -c "$dawn" >"$dir/dawn/dawn.node.xz"
shared=$(cd "$root/.." && pwd)/shared
if [[ -f $shared/data/tinyshakespeare.txt ]]; then
  TEZGAH_GPT2_DIR=${TEZGAH_GPT2_DIR:-$shared/gpt2} "$dir/bin/tezgah" tokenize --tokenizer gpt2 \
    --in "$shared/data/tinyshakespeare.txt" --out "$dir/data/train.bin" >/dev/null ||
    echo "device_pack_webgpu: warning: no GPT-2 token shard (the training runs need one)" >&2
  [[ -f $shared/bench/torch_gpt.py ]] && cp "$shared/bench/torch_gpt.py" "$dir/data/"
fi
echo "device_pack_webgpu: $dir holds $(du -sm "$dir" | cut -f1) MiB:"
ls "$dir"/* | sed 's/^/  /'
