#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install what is needed, build, prepare the
# King James Bible corpus, train a small llama on the CPU for a few minutes, then sample.
#   bash scripts/main.sh [extra `tezgah train` flags]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo "--- building tezgah in build/ (under a minute the first time without CUDA; log: build/build.log) ---"
# The CUDA backend where a GPU is visible (scripts/cuda_choice.sh, as scripts/test.sh decides);
# only the tezgah target: the tests and benchmarks are scripts/test.sh's (the same build/)
# shellcheck source=scripts/cuda_choice.sh
source scripts/cuda_choice.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=$cuda >/dev/null
cmake --build build --target tezgah -j"$(nproc)" >build/build.log 2>&1 || { tail -30 build/build.log >&2; exit 1; }
[[ -s data/kjv.txt ]] || bash scripts/prepare_kjv.sh
# One sample at the end, the prompted one below: train's own end-of-run sample is turned off
# (a --sample-tokens among the extra flags comes later and wins).
build/tezgah train --sample-tokens 0 "$@"
echo "--- tezgah sample --prompt 'And God said' ---"
build/tezgah sample --prompt "And God said" --tokens 120
