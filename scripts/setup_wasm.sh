#!/usr/bin/env bash
# What the wasm build (scripts/build_wasm.sh), the page (web/) and its browser test need
# (called by scripts/setup.sh; safe to run on its own). Only the Debian archive and the npm
# registry are used. Idempotent: each step is skipped when its result is already there.
#  1. Debian packages: clang-19, lld-19 (wasm-ld-19), libclang-rt-19-dev-wasm32 (compiler
#     builtins for wasm32), dpkg-dev (apt-get source unpacks with dpkg-source), chromium
#     (headless, for tests/test_browser.sh), firefox-esr (headless, tests/test_firefox.sh); wasi-libc from bookworm-backports (0.0~git20240708:
#     bookworm's own 2022 snapshot lacks parts of the emulated POSIX layer).
#  2. The source packages of PCRE2 and cJSON (apt-get source, which needs deb-src lines: added
#     as /etc/apt/sources.list.d/tezgah-deb-src.sources) unpacked into .deps/wasm/src/: the
#     build compiles them for wasm32 (nothing third-party is committed). The version taken is
#     the one of the installed -dev package when the archive still serves it, else the newest
#     the archive serves (the file says which in .deps/wasm/src/VERSIONS).
#  3. npm packages of the page and its test (web/package.json, pinned by web/package-lock.json):
#     npm ci into web/node_modules.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ((EUID == 0)); then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo); else SUDO=(false); fi

PKGS=(clang-19 lld-19 libclang-rt-19-dev-wasm32 dpkg-dev chromium firefox-esr)
missing=()
for p in "${PKGS[@]}" wasi-libc; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $st == "install ok installed" ]] || { [[ $p == wasi-libc ]] || missing+=("$p"); }
done
wasi_ver=$(dpkg-query -W -f='${Version}' wasi-libc 2>/dev/null || true)
need_wasi=0
[[ $wasi_ver == *bpo* ]] || need_wasi=1

SRC_LIST=/etc/apt/sources.list.d/tezgah-deb-src.sources
need_update=0
if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "setup_wasm: adding deb-src lines for apt-get source ($SRC_LIST)"
  "${SUDO[@]}" tee "$SRC_LIST" >/dev/null <<'SRC'
# Added by tezgah's scripts/setup_wasm.sh: source packages (apt-get source) of PCRE2 and cJSON,
# which the wasm build compiles for wasm32.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  need_update=1
fi
if ((need_wasi)) && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "setup_wasm: adding the bookworm-backports suite to apt"
  echo "deb http://deb.debian.org/debian bookworm-backports main" |
    "${SUDO[@]}" tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
  need_update=1
fi
if ((${#missing[@]} || need_wasi || need_update)); then
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
fi
if ((${#missing[@]} || need_wasi)); then
  inst=("${missing[@]}")
  ((need_wasi)) && inst+=(wasi-libc/bookworm-backports)
  echo "setup_wasm: installing ${inst[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Use-Pty=0 "${inst[@]}" >/dev/null
else
  echo "setup_wasm: clang-19, lld-19, wasm32 builtins, wasi-libc $wasi_ver, chromium and firefox-esr installed"
fi

# 2. PCRE2 and cJSON sources
SRC_DIR=$ROOT/.deps/wasm/src
mkdir -p "$SRC_DIR"
fetch_source() { # source package, the -dev package whose version is wanted
  local src=$1 dev=$2 want have v
  if compgen -G "$SRC_DIR/$src-*/" >/dev/null && grep -qs "^$src " "$SRC_DIR/VERSIONS"; then
    echo "setup_wasm: $(grep "^$src " "$SRC_DIR/VERSIONS") already in .deps/wasm/src"
    return
  fi
  want=$(dpkg-query -W -f='${source:Version}' "$dev" 2>/dev/null || true)
  # the installed version first, then the others the archive lists, newest first
  local versions=($want $(apt-cache showsrc "$src" 2>/dev/null | sed -n 's/^Version: //p' | sort -rV | grep -vxF "${want:-none}"))
  local tmp; tmp=$(mktemp -d "$SRC_DIR/.fetch.XXXXXX")
  for v in "${versions[@]}"; do
    if (cd "$tmp" && apt-get source -qq "$src=$v" >/dev/null 2>&1); then
      local dir; dir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -1)
      rm -rf "${SRC_DIR:?}/$(basename "$dir")"
      mv "$dir" "$SRC_DIR/"
      sed -i "/^$src /d" "$SRC_DIR/VERSIONS" 2>/dev/null || true
      echo "$src $v $(basename "$dir")${want:+ (installed $dev: $want)}" >>"$SRC_DIR/VERSIONS"
      rm -rf "$tmp"
      echo "setup_wasm: apt-get source $src=$v -> .deps/wasm/src/$(basename "$dir")"
      return
    fi
    echo "setup_wasm: apt-get source $src=$v failed (not served by the archive?), trying the next version"
  done
  rm -rf "$tmp"
  echo "setup_wasm: could not fetch the source package $src (deb-src lines in apt's sources?)" >&2
  exit 1
}
fetch_source pcre2 libpcre2-dev
fetch_source cjson libcjson-dev

# 3. npm packages of web/
if [[ -f $ROOT/web/package-lock.json ]]; then
  if [[ -d $ROOT/web/node_modules && $ROOT/web/node_modules/.package-lock.json -nt $ROOT/web/package-lock.json ]]; then
    echo "setup_wasm: web/node_modules up to date"
  else
    command -v npm >/dev/null || { echo "setup_wasm: npm is needed for web/'s packages" >&2; exit 1; }
    echo "setup_wasm: npm ci in web/"
    (cd "$ROOT/web" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  fi
fi
