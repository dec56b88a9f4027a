#!/usr/bin/env bash
# Sourced by scripts/main.sh and scripts/test.sh: sets cuda (the TEZGAH_CUDA value to configure
# build/ with) to AUTO where `nvidia-smi -L` lists a GPU, or where TEZGAH_TEST_CUDA=ON asks for
# the CUDA backend anyway (it is then built where a CUDA toolkit is found), else OFF, and says so
# (nvidia-smi bounded: a hung driver must not hang the build).
# Why: without a GPU the CUDA backend cannot run (its tests skip), and compiling its kernels is
# ~170 of the build's ~300 CPU s on a 2-core machine (issue 21 part 2); both commands decide
# alike so that running one after the other does not reconfigure build/ and recompile the
# kernels. .ci/run compiles the backend in a stage of its own (scripts/ci_cuda_build.sh).
# shellcheck disable=SC2034  # cuda: read by the script that sources this one
if [[ ${TEZGAH_TEST_CUDA:-} == ON ]] || timeout 20 nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  cuda=AUTO
else
  cuda=OFF
  echo "--- no NVIDIA GPU visible (nvidia-smi -L): the CUDA backend is not built (TEZGAH_TEST_CUDA=ON builds it where a CUDA toolkit is found) ---"
fi
