#!/usr/bin/env bash
# Build tezgah.wasm (wasm32-wasi, single-threaded CPU backend) from the same sources as the
# native build, with wasm/Makefile:
#
#   scripts/build_wasm.sh [--webgpu] [--out DIR] [-j N]     (default: build-wasm/, -j2)
#
# Result: DIR/tezgah.wasm, a WASI command (`tezgah ARGS...` as _start) that runs under Node's
# node:wasi (tests/test_wasm_node.sh) and in the page (web/, docs/BROWSER.md), which copies it
# to web/tezgah.wasm. Also DIR/tezgah-webgpu.wasm: the same engine with the WebGPU bindings
# (src/backend/webgpu/wgpu_wasm.c, issue 23 item 2; two more compiles and a link, the other
# objects shared). --webgpu puts the bindings into DIR/tezgah.wasm itself.
# Needs scripts/setup_wasm.sh (clang-19, lld-19, wasm32 builtins, wasi-libc from
# bookworm-backports, PCRE2 and cJSON source packages in .deps/wasm/src).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=build-wasm
JOBS=2
WEBGPU=0
while (($#)); do
  case $1 in
    --webgpu) WEBGPU=1 ;;
    --out) OUT=$2; shift ;;
    --out=*) OUT=${1#--out=} ;;
    -j) JOBS=$2; shift ;;
    -j*) JOBS=${1#-j} ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build_wasm: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
  shift
done
cd "$ROOT"
fail() { echo "build_wasm: $*" >&2; exit 1; }
command -v clang-19 >/dev/null || fail "clang-19 not found (scripts/setup_wasm.sh installs it)"
command -v wasm-ld-19 >/dev/null || command -v wasm-ld >/dev/null || fail "wasm-ld (lld-19) not found (scripts/setup_wasm.sh)"
[[ -f /usr/lib/wasm32-wasi/libc.a ]] || fail "wasi-libc not found in /usr/lib/wasm32-wasi (scripts/setup_wasm.sh)"
[[ -f /usr/lib/wasm32-wasi/libwasi-emulated-mman.a ]] || fail "wasi-libc without the emulated POSIX libraries: install bookworm-backports' (scripts/setup_wasm.sh)"
[[ -f $(clang-19 --target=wasm32-wasi -print-libgcc-file-name) ]] || fail "no wasm32 compiler builtins (libclang-rt-19-dev-wasm32; scripts/setup_wasm.sh)"
[[ -f /usr/include/xxhash.h ]] || fail "xxhash.h not found (libxxhash-dev; scripts/setup.sh)"
pcre2=$(compgen -G ".deps/wasm/src/pcre2-*/" | head -1 || true)
cjson=$(compgen -G ".deps/wasm/src/cjson-*/" | head -1 || true)
[[ -n $pcre2 && -n $cjson ]] || fail "PCRE2 / cJSON sources not in .deps/wasm/src (scripts/setup_wasm.sh fetches them with apt-get source)"
make --no-print-directory -f wasm/Makefile -j"$JOBS" OUT="$OUT" WEBGPU="$WEBGPU" \
  PCRE2_SRC="${pcre2%/}" CJSON_SRC="${cjson%/}"
bind=""
((WEBGPU)) && bind=", WebGPU bindings"
echo "build_wasm: $OUT/tezgah.wasm ($(stat -c %s "$OUT/tezgah.wasm") bytes$bind)," \
  "$OUT/tezgah-webgpu.wasm ($(stat -c %s "$OUT/tezgah-webgpu.wasm") bytes, WebGPU bindings)"
