#!/usr/bin/env bash
# Mesa's llvmpipe keys its shader disk cache without LP_NATIVE_VECTOR_WIDTH (Mesa 25.0.7), so a
# process at llvmpipe's default width could run code a process at another width had compiled,
# with subgroups of a size its adapter did not report (dawn_load.c, tz_backend_webgpu_env). A
# process that sets the width therefore gets a cache of its own. This test runs the v8 norms'
# op test (test_webgpu_ops' test_act_f16_norms, against the CPU) twice on one fresh cache home
# (XDG_CACHE_HOME), MESA_SHADER_CACHE_DIR unset as a user's shell has it:
#  1. at 4 lanes (LP_NATIVE_VECTOR_WIDTH=128): passes, and its cache is <home>/tezgah-mesa-w128;
#  2. at llvmpipe's default width: passes. Before the fix it failed here, on the first case, in
#     0.1 s, from the cache run 1 had filled (session 30, Mesa 25.0.7 at 8 lanes: "fused
#     layernorm_fwd N70 C64: 4469 of 4480 elements off").
# Both runs with GALLIVM_PERF=nopt (Mesa keys that setting, so the runs still share one key
# space), and only the op test's first three cases (TZ_TEST_NORMS_FIRST=1: N 70 C 64, N 37
# C 120, N 9 C 8; layernorm and rmsnorm, forward and fused backward): at 4 lanes they compile the
# v8 kernels with NK (groups of 8 columns a lane) 2, 4 and 1, and at 8 lanes C 64 asks for NK 1's
# WGSL, C 120 for NK 2's: the code run 1 compiled for other rows (NK is all the WGSL says of the
# width), what a shared cache handed back. With MESA_SHADER_CACHE_DIR set to one directory for
# both runs (the bug), run 2 still fails on its first case (branch ci37: "4469 of 4480 elements
# off"; with the first case alone it passed: NK 2's code does not serve NK 1). The other nine
# cases (other C, offsets, the 8-byte and unfused forms: ~60 CPU s of cold compiles at each width)
# test nothing more about the cache; test_webgpu_ops_act_f16 runs them.
# SKIPPED where the op test skips (no adapter with ShaderF16 for f16 activations, or none with
# subgroups), or where llvmpipe's default width is 4 lanes too (a CPU without AVX2: no second
# width to mix up). A caller's own LP_NATIVE_VECTOR_WIDTH is dropped: run 2 is llvmpipe's default.
# Usage (from ctest): bash test_webgpu_mesa_cache.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
scratch=${3:?scratch dir}
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
ops=$(dirname "$tz")/tests/test_webgpu_ops
[[ -x $ops ]] || skip "$ops is not built (scripts/test.sh builds it)"
enter_scratch
unset MESA_SHADER_CACHE_DIR MESA_GLSL_CACHE_DIR LP_NATIVE_VECTOR_WIDTH
export XDG_CACHE_HOME=$PWD/cache GALLIVM_PERF=nopt TZ_TEST_FILTER=test_act_f16_norms TZ_TEST_NORMS_FIRST=1 # (absolute, as XDG wants)

LP_NATIVE_VECTOR_WIDTH=128 "$ops" >run4.txt 2>&1
rc=$?
grep -q "SKIPPED" run4.txt && [[ $rc == 0 || $rc == 77 ]] && skip "$(grep -m1 SKIPPED run4.txt)"
if [[ $rc == 0 ]]; then ok "4 lanes: the v8 norms against the CPU"; else fail "4 lanes (rc $rc): $(grep -m1 -E 'elements off|FAILED' run4.txt)"; fi
lanes4=$(grep -m1 -o 'subgroups ([0-9]*' run4.txt | grep -o '[0-9]*$')
[[ $lanes4 == 4 ]] || fail "LP_NATIVE_VECTOR_WIDTH=128 gave ${lanes4:-no} subgroup lanes, not 4"
if [[ -d $XDG_CACHE_HOME/tezgah-mesa-w128 ]]; then ok "the 4-lane run's cache: \$XDG_CACHE_HOME/tezgah-mesa-w128"
else fail "no \$XDG_CACHE_HOME/tezgah-mesa-w128 after the 4-lane run: $(find "$XDG_CACHE_HOME" -maxdepth 1 -mindepth 1 -printf "%f ")"; fi

"$ops" >rundef.txt 2>&1
rc=$?
lanes=$(grep -m1 -o 'subgroups ([0-9]*' rundef.txt | grep -o '[0-9]*$')
if [[ $rc == 0 ]]; then ok "llvmpipe's default width (${lanes:-?} lanes) after it: the v8 norms against the CPU"
else fail "default width (${lanes:-?} lanes, rc $rc) after a 4-lane run: $(grep -m1 -E 'elements off|FAILED' rundef.txt)"; fi
((failures == 0)) && [[ $lanes == 4 ]] && skip "llvmpipe's default width is 4 lanes here too (no AVX2): nothing to mix up"
exit $((failures > 0))
