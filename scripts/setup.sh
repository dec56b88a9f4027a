#!/usr/bin/env bash
# Install the Debian 12 packages that tezgah's build, tests and data scripts need.
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
)
# strip the comments above
PKGS=($(printf '%s\n' "${PKGS[@]}"))

missing=()
for p in "${PKGS[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

# WebGPU backend: Dawn (npm, sha256-pinned) + lavapipe from bookworm-backports
"$(dirname "$0")/setup_webgpu.sh"

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PKGS[@]} packages already installed"
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
echo "setup: done"
