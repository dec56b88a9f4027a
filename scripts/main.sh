#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install what is needed, build, prepare the
# King James Bible corpus, train a small llama on the CPU for a few minutes, then sample.
#   bash scripts/main.sh [extra `tezgah train` flags]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
[[ -s data/kjv.txt ]] || bash scripts/prepare_kjv.sh
build/tezgah train "$@"
echo "--- tezgah sample --prompt 'And God said' ---"
build/tezgah sample --prompt "And God said" --tokens 120
