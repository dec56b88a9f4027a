#!/usr/bin/env bash
# The node Dawn (npm webgpu@0.6.2's dawn.node) and the subgroup-matrix matmul on the GPU machine,
# one device call (branch dawn, issue 22 items 1 and 3):
#  1. the loader: `tezgah info` under dawn.node and under bun's libwebgpu_wrapper.so;
#  2. test_webgpu_sgmat with TEZGAH_TEST_SGMAT_REQUIRED=1 (adapter line with ShaderF16 and the
#     subgroup-matrix configurations; the three matmul forms vs the CPU on small shapes);
#  3. bench_webgpu_sgmat at 8192³ (TFLOP/s per form and tile, sampled check vs the CPU);
#  4. test_webgpu_ops (every op vs the CPU) under dawn.node, then under bun, while time is left.
#   bash scripts/device_webgpu_dawn.sh DIR      (run tool, carry [DIR, ".gl"]; DIR holds bin/
#   (tezgah, the tests and bench, libtz_napi_stub.so), lib/ (the shared libraries the machine
#   lacks), dawn/dawn.node.xz and dawn/libwebgpu_wrapper.so.xz; packed by hand as in
#   scripts/device_pack.sh). Writes $OUT/summary.log and $OUT/logs.tgz.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_dawn /tmp/dawn_out "" "$@"
# both Dawns unpacked side by side; every run below names its own TEZGAH_WEBGPU_LIB
dd=/tmp/dawn_libs
mkdir -p "$dd"
python3 - "$dir/dawn" "$dd" <<'PY'
import lzma, shutil, sys, os
for n in ("dawn.node", "libwebgpu_wrapper.so"):
    src = os.path.join(sys.argv[1], n + ".xz")
    if os.path.exists(src):
        with lzma.open(src) as f, open(os.path.join(sys.argv[2], n), "wb") as g:
            shutil.copyfileobj(f, g)
PY
node=$dd/dawn.node
bun=$dd/libwebgpu_wrapper.so
say "sha256 $(sha256sum "$node" | cut -c1-16) $(sha256sum "$bun" | cut -c1-16)"
for w in ${INFO:-node bun}; do
  lib=$node; [[ $w == bun ]] && lib=$bun
  TEZGAH_WEBGPU_LIB=$lib timeout 60 "$dir/bin/tezgah" info >"$out/info_$w.log" 2>&1
  say "[$w] tezgah info rc $?: $(grep -E '^  (library|adapter|precision):' "$out/info_$w.log" | tr -s ' ' | tr '\n' '|')"
  say "[$w]   $(grep -E '^  (ShaderF16|subgroup-matrix|dawn)' "$out/info_$w.log" | tr -s ' ' | tr '\n' '|')"
done
TEZGAH_WEBGPU_LIB=$node TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 120 "$dir/bin/test_webgpu_sgmat" >"$out/test_sgmat.log" 2>&1
rc=$?
say "[node] test_webgpu_sgmat rc $rc: $(grep -E '^adapter:|worst error|not chosen|FAIL|error' "$out/test_sgmat.log" | head -12 | tr '\n' '|')"
if ((rc != 0)); then
  TZ_SGMAT_ADAPTER_TOGGLES=vulkan_enable_f16_on_nvidia,allow_unsafe_apis,use_vulkan_memory_model \
    TEZGAH_WEBGPU_LIB=$node TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 120 "$dir/bin/test_webgpu_sgmat" >"$out/test_sgmat2.log" 2>&1
  say "[node] test_webgpu_sgmat + use_vulkan_memory_model rc $?: $(grep -E 'worst error|not chosen|FAIL|error' "$out/test_sgmat2.log" | head -8 | tr '\n' '|')"
fi
TEZGAH_WEBGPU_LIB=$node timeout "${BTMO:-200}" "$dir/bin/bench_webgpu_sgmat" 8192 8192 8192 10 >"$out/bench.log" 2>&1
say "[node] bench_webgpu_sgmat 8192^3 rc $?"
grep -E '^form|error' "$out/bench.log" | tee -a "$sum"
if ((SECONDS < ${LIM_OPS:-330})); then  # the whole op suite; the f16 mirror is on where ShaderF16 is
  TEZGAH_WEBGPU_LIB=$node timeout "${OTMO:-150}" "$dir/bin/test_webgpu_ops" >"$out/ops_node.log" 2>&1
  say "[node] test_webgpu_ops rc $? ($(grep -c '^\[       OK' "$out/ops_node.log") OK, $(grep -c '^\[  FAILED' "$out/ops_node.log") FAILED; $(grep -E 'SKIPPED' "$out/ops_node.log" | head -1))"
fi
say "end"
cd "$out" && tar czf logs.tgz ./*.log && rm -f info_*.log test_sgmat*.log bench.log ops_*.log
