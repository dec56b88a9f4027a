#!/usr/bin/env bash
# CI stage (issue 21): the same CPU results from builds for other instruction sets. Builds the
# CLI at -march=x86-64-v2 (SSE4.2, no AVX: the oldest x86-64 tezgah targets) and x86-64-v3
# (AVX2 + FMA, what an AVX2-only CPU's -march=native gives) beside the main build, then runs
# tests/test_determinism.sh against the main build with both as TZ_DET_OTHER (their losses must
# equal the main build's bit for bit) and tests/test_no_fma.sh on the v3 build. The v3 build also
# runs on an emulated AVX2-only CPU: QEMU user mode's TCG "max" model has AVX2 and FMA but no
# AVX-512, so the CPU backend picks its kernels by cpuid there as on an AVX2-only machine (the
# CPUs of issue 21's failure) instead of being forced by TEZGAH_CPU_ISA; its training, resume and
# export logits must equal the main build's too.
#   bash scripts/ci_isa.sh        (after scripts/test.sh has built build/)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
others=()
for level in x86-64-v2 x86-64-v3; do
  dir=build-$level
  echo "--- ci_isa: building tezgah at -march=$level in $dir/ (log: $dir/build.log) ---"
  # (CI_PREBUILT=1: .ci/run's CI_BUILD_ONLY=1 run of this script built it beside the test command)
  if [[ -z ${CI_PREBUILT:-} ]]; then
    mkdir -p "$dir"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTEZGAH_NATIVE=OFF -DCMAKE_C_FLAGS="-march=$level" \
      -DTEZGAH_CUDA=OFF >"$dir/build.log" 2>&1
    cmake --build "$dir" -j"$(nproc)" --target tezgah >>"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; exit 1; }
  fi
  others+=("$PWD/$dir/tezgah")
done
# CI_BUILD_ONLY=1: stop here, the tree built (.ci/run builds the lanes' trees while the test command runs)
[[ -z ${CI_BUILD_ONLY:-} ]] || exit 0
# the emulated AVX2-only CPU (qemu-user from Debian's archive; installed here when missing)
command -v qemu-x86_64 >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user >/dev/null ||
  { echo "ci_isa: qemu-user is not installed and could not be (apt-get install qemu-user)" >&2; exit 1; }
emu=build-x86-64-v3-avx2cpu
mkdir -p "$emu"
# OMP_WAIT_POLICY set: the CLI does not re-execute itself (that exec would leave the emulator)
cat >"$emu/tezgah" <<EOS
#!/bin/sh
OMP_WAIT_POLICY=\${OMP_WAIT_POLICY:-PASSIVE} exec qemu-x86_64 -cpu max "$PWD/build-x86-64-v3/tezgah" "\$@"
EOS
chmod +x "$emu/tezgah"
"$emu/tezgah" info 2>&1 | grep -q '^cpu: available, GEMM kernel avx2 ' ||
  { echo "ci_isa: the emulated CPU does not run the AVX2 kernel: $("$emu/tezgah" info 2>&1 | grep '^cpu')" >&2; exit 1; }
others+=("$PWD/$emu/tezgah")
TZ_DET_OTHER="${others[*]}" bash tests/test_determinism.sh build/tezgah ../shared build/test-tmp/ci_isa_determinism
bash tests/test_no_fma.sh build-x86-64-v3/tezgah ../shared build/test-tmp/ci_isa_no_fma
echo "ci_isa: 2 passed, 0 failed"
