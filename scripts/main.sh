#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install what is needed, build, prepare the
# King James Bible corpus, train a small llama on the CPU for a few minutes, then sample.
#   bash scripts/main.sh [extra `tezgah train` flags]      (-h, --help: the usage below)
set -euo pipefail
usage() {
  cat <<'USAGE'
usage: bash scripts/main.sh [TRAIN_OPTIONS...]   (-h, --help: this text)
The README's main job, from the repository root of a fresh Debian 12 machine:
  1. scripts/setup.sh: installs the Debian packages (apt-get; sudo when not
     root), GPT-2's tokenizer files and Dawn (npm)
  2. builds the tezgah target into build/ (log: build/build.log), with the
     CUDA backend only where `nvidia-smi -L` lists a GPU
  3. writes data/kjv.txt (scripts/prepare_kjv.sh) unless it is there
  4. build/tezgah train --sample-tokens 0 TRAIN_OPTIONS...: by default a small
     llama on data/kjv.txt, 600 steps on the CPU (into runs/<time>/)
  5. build/tezgah sample [RUN_DIR] --prompt "And God said" --tokens 120:
     that run (its --run-dir, or the run --resume continued, when given)
stdout carries the sample alone (and train's own, given --sample-tokens N);
the install, build, corpus and training lines go to stderr.
Every argument goes to `tezgah train`, e.g. --steps 2000 or --backend webgpu;
its options: build/tezgah train --help (once built).
Environment: TEZGAH_TEST_CUDA=ON builds the CUDA backend without a visible
GPU (where a CUDA toolkit is found).
USAGE
}
# -h / --help anywhere among the arguments is main.sh's own, before any install or build:
# passed on, train printed its help and exited 0, and the sample after it then ran
for a in "$@"; do
  case $a in -h | --help) usage; exit 0 ;; esac
done
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The train options checked before the install and the build (`--steps abc` failed only after
# both), where a tezgah built from this tree is there: train parses every option, checking
# each value, before it acts on a --help at the end (stdout dropped). Only where nothing in
# src/, include/, cmake/ or CMakeLists.txt is newer than build/tezgah: an older build would
# refuse an option added since (train itself checks the rest after the build).
# ('--' among them: the --help after it would be an argument, refused. An option last: it may
# be one missing its value, which would then take the --help as its value -- `--run-dir` made
# the check itself train into ./--help, the session-37 walkthrough -- so there train alone, after
# the build, says "option --run-dir needs a value".)
check=1
for a in "$@"; do [[ $a == -- ]] && check=0; done
(($#)) && [[ ${!#} == -* ]] && check=0
if ((check)) && [[ -x build/tezgah && -z $(find src include cmake CMakeLists.txt -newer build/tezgah -print -quit 2>/dev/null) ]]; then
  build/tezgah train "$@" --help >/dev/null || exit 1
fi
# stdout carries the sample alone, as every tezgah command keeps its results there and its
# progress on stderr: the install, build and corpus lines (setup.sh's, apt-get's and npm's
# included) go to stderr. They went to stdout, mixed with the sample (the session-37 walkthrough).
bash scripts/setup.sh >&2
echo "--- building tezgah in build/ (under a minute the first time without CUDA; log: build/build.log) ---" >&2
# The CUDA backend where a GPU is visible (scripts/cuda_choice.sh, as scripts/test.sh decides);
# only the tezgah target: the tests and benchmarks are scripts/test.sh's (the same build/)
# shellcheck source=scripts/cuda_choice.sh
source scripts/cuda_choice.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTEZGAH_CUDA=$cuda >/dev/null
cmake --build build --target tezgah -j"$(nproc)" >build/build.log 2>&1 || { tail -30 build/build.log >&2; exit 1; }
[[ -s data/kjv.txt ]] || bash scripts/prepare_kjv.sh >&2
# One sample at the end, the prompted one below: train's own end-of-run sample is turned off
# (a --sample-tokens among the extra flags comes later and wins).
build/tezgah train --sample-tokens 0 "$@"
# the run just trained: its --run-dir when given, else the run --resume continued (train writes
# a resumed run into --run-dir when both are given), else sample's default (the newer of
# runs/latest and ./latest; a `latest` link lands beside a --run-dir, which that need not see).
# The options' unique prefixes too, as train's getopt_long takes them (--ru.. for --run-dir,
# --res.. for --resume: --recompute shares --re).
rundir= resume=
for ((i = 1; i <= $#; i++)); do
  a=${!i} j=$((i + 1))
  opt=${a%%=*}
  [[ $opt == --r* ]] || continue
  if ((${#opt} >= 4)) && [[ --run-dir == "$opt"* ]]; then
    if [[ $a == *=* ]]; then rundir=${a#*=}; else rundir=${!j-}; fi
  elif ((${#opt} >= 5)) && [[ --resume == "$opt"* ]]; then
    if [[ $a == *=* ]]; then resume=${a#*=}; else resume=${!j-}; fi
  fi
done
run=()
[[ -n ${rundir:-$resume} ]] && run=("${rundir:-$resume}")
echo "--- tezgah sample --prompt 'And God said' ---" >&2
build/tezgah sample "${run[@]}" --prompt "And God said" --tokens 120
