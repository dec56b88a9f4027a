#!/usr/bin/env bash
# No fused multiply-add in the compiled C code except the GEMM micro-kernels (issue 21): the
# CPU kernels' bits must not depend on whether the build's -march has FMA. CMakeLists.txt sets
# -ffp-contract=off, yet gcc 12's vectorizer fused RoPE's rotation into vfmaddsub on FMA
# targets (rope_cpu.c now compiles that function unvectorized); this scans every object of
# libtezgah.a for FMA instructions, so another such fusion fails here on any build machine
# whose -march has FMA (scripts/ci_isa.sh runs it on an x86-64-v3 build too).
# Usage (from ctest): bash test_no_fma.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
scratch=${3:?scratch dir}
lib=$(dirname "$tz")/libtezgah.a
command -v objdump >/dev/null || { echo "SKIPPED: objdump (binutils) not installed"; exit 77; }
[[ -f $lib ]] || { echo "SKIPPED: no $lib (TEZGAH_LINK_SHARED build?)"; exit 77; }
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
ar x "$lib" || { echo "FAIL: ar x $lib"; exit 1; }
# the micro-kernels are the one place meant to fuse (matmul_ukernel_cpu.c's file comment)
allowed=matmul_ukernel_cpu.c.o
n=0 bad=0
for o in *.c.o; do
  n=$((n + 1))
  [[ $o == "$allowed" ]] && continue
  c=$(objdump -d --no-show-raw-insn "$o" | grep -cE '\svf(n)?m(add|sub)')
  ((c == 0)) || { echo "FAIL: $o has $c fused multiply-add instructions"; bad=$((bad + 1)); }
done
k=$(objdump -d --no-show-raw-insn "$allowed" 2>/dev/null | grep -cE '\svfmadd')
((k > 0)) && echo "ok: $allowed fuses ($k FMA instructions: the check sees them)" ||
  { echo "FAIL: no FMA found in $allowed: the scan cannot see fusions"; bad=$((bad + 1)); }
echo "no-fma: $n objects scanned, $bad failure(s)"
((bad == 0))
