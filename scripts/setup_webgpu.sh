#!/usr/bin/env bash
# WebGPU backend prerequisites (called by scripts/setup.sh; safe to run on its own):
#  1. Dawn, two builds, sha256-pinned, into .deps/dawn/ (tezgah loads one at run time, see
#     docs/WEBGPU.md): npm bun-webgpu-linux-x64@0.1.7 (libwebgpu_wrapper.so) and npm
#     webgpu@0.6.2 (dawn.node).
#  2. Mesa's lavapipe (CPU Vulkan driver) from bookworm-backports plus the Vulkan loader
#     (libvulkan1): Debian 12's own Mesa 22.3 is rejected by Dawn.
# Idempotent: each step is skipped when its result is already there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG=bun-webgpu-linux-x64
VER=0.1.7
SHA=3190c3777f2c07fcf6a0640833cbf5d0cde859dc53aed6d9083946d093198788
DEST="$ROOT/.deps/dawn"
LIB="$DEST/libwebgpu_wrapper.so"

if [[ -f "$LIB" && -f "$DEST/.sha256-ok" ]] && echo "$SHA  $LIB" | sha256sum -c --quiet 2>/dev/null; then
  echo "setup_webgpu: Dawn already in $LIB"
else
  command -v npm >/dev/null || { echo "setup_webgpu: npm is needed to fetch $PKG@$VER" >&2; exit 1; }
  mkdir -p "$DEST"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$PKG@$VER" >/dev/null)
  tgz="$tmp/$PKG-$VER.tgz"
  so=$(tar -tzf "$tgz" | grep 'libwebgpu_wrapper.so$' | head -1)
  tar -xzf "$tgz" -C "$tmp" "$so"
  got=$(sha256sum "$tmp/$so" | cut -d' ' -f1) # the pin is the library's own hash
  if [[ $got != "$SHA" ]]; then
    echo "setup_webgpu: sha256 mismatch for $PKG@$VER libwebgpu_wrapper.so: got $got, want $SHA" >&2
    rm -rf "$tmp"; exit 1
  fi
  mv "$tmp/$so" "$LIB"
  echo "$SHA  libwebgpu_wrapper.so" > "$DEST/.sha256-ok"
  rm -rf "$tmp"
  echo "setup_webgpu: Dawn $PKG@$VER -> $LIB (sha256 ok)"
fi

# 1b. Dawn as npm webgpu@0.6.2's Node addon (dist/linux-x64/dawn.node, 21.5 MB): a 2026 Dawn that
# offers ShaderF16 and subgroup matrices on NVIDIA; tezgah loads its C API from the ELF symbol
# table (src/backend/webgpu/dawn_load.c). Both the tarball's and dawn.node's sha256 are pinned.
NPKG=webgpu
NVER=0.6.2
NTGZ_SHA=77a6be6513b9f7c2e94425620ce603efb38cdc5d0393e1b31a1b0c8479330ffd
NODE_SHA=ab18a659f8325e874ea45c80347b64336d7f748601102753d2bc669fdecfd710
NODE="$DEST/dawn.node"
if [[ -f "$NODE" ]] && echo "$NODE_SHA  $NODE" | sha256sum -c --quiet 2>/dev/null; then
  echo "setup_webgpu: Dawn (node) already in $NODE"
else
  command -v npm >/dev/null || { echo "setup_webgpu: npm is needed to fetch $NPKG@$NVER" >&2; exit 1; }
  mkdir -p "$DEST"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$NPKG@$NVER" >/dev/null)
  tgz="$tmp/$NPKG-$NVER.tgz"
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [[ $got != "$NTGZ_SHA" ]]; then
    echo "setup_webgpu: sha256 mismatch for $NPKG-$NVER.tgz: got $got, want $NTGZ_SHA" >&2
    rm -rf "$tmp"; exit 1
  fi
  tar -xzf "$tgz" -C "$tmp" package/dist/linux-x64/dawn.node
  got=$(sha256sum "$tmp/package/dist/linux-x64/dawn.node" | cut -d' ' -f1)
  if [[ $got != "$NODE_SHA" ]]; then
    echo "setup_webgpu: sha256 mismatch for $NPKG@$NVER dist/linux-x64/dawn.node: got $got, want $NODE_SHA" >&2
    rm -rf "$tmp"; exit 1
  fi
  mv "$tmp/package/dist/linux-x64/dawn.node" "$NODE"
  rm -rf "$tmp"
  echo "setup_webgpu: Dawn $NPKG@$NVER dawn.node -> $NODE (sha256 of the tarball and of dawn.node ok)"
fi

mesa_ver=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
vk_ok=$(dpkg-query -W -f='${Status}' libvulkan1 2>/dev/null || true)
if [[ $mesa_ver == *bpo* && $vk_ok == "install ok installed" ]]; then
  echo "setup_webgpu: lavapipe (mesa-vulkan-drivers $mesa_ver) and libvulkan1 already installed"
  exit 0
fi
if ((EUID == 0)); then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo); else
  echo "setup_webgpu: need root (or sudo) to install mesa-vulkan-drivers and libvulkan1" >&2; exit 1; fi
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "setup_webgpu: adding the bookworm-backports suite to apt"
  echo "deb http://deb.debian.org/debian bookworm-backports main" |
    "${SUDO[@]}" tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
fi
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Use-Pty=0 -t bookworm-backports mesa-vulkan-drivers libvulkan1 >/dev/null
echo "setup_webgpu: installed lavapipe $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
