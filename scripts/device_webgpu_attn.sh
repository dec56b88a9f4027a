#!/usr/bin/env bash
# WebGPU flash attention on the GPU machine, one device call: correctness of every attention
# test, a sweep of the kernel variants of attention_fa.wgsl (attn_config in webgpu_ops_attn.c:
# TEZGAH_WEBGPU_ATTN_RG / _NT / _PF / _FD, and _RO=0 for read_write bindings) on the
# standalone bench, then the GPT-2 124M training step's per-kernel profile for the main ones
# (the in-step attention time is the steadier figure, docs/PERF.md) and one unprofiled step
# timing of the default.
#
#   bash DIR/device_webgpu_attn.sh DIR     (run tool, carry [DIR, ".gl", ".wg"]; ~4-5 minutes)
# DIR holds portable CUDA-less binaries test_webgpu_ops and bench_webgpu and lib/ (the shared
# libraries the machine lacks, as scripts/device_pack.sh gathers them); Dawn is
# .wg/libwebgpu_wrapper.so and the Vulkan loader debs are in .gl/. Writes $OUT/attn.log
# (everything) and $OUT/summary.log (the result lines). A local dry run of the script's logic:
# DRY=1 ATT="1 64" NOTRAIN=1 NOTEST=1 (no package unpacking; lavapipe; tiny shapes).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_attn /tmp attn.log "$@"
att=${ATT:-16 1024}

# correctness: every attention test with subgroup reductions, the flash ones without
if [[ -z ${NOTEST:-} ]]; then
  TEZGAH_TEST_ATTN_VARIANTS=1 TZ_TEST_FILTER='test_attention*' timeout 150 "$dir/test_webgpu_ops" >>"$log" 2>&1
  say "test_webgpu_ops test_attention* (subgroups): rc $?"
  TEZGAH_TEST_ATTN_VARIANTS=1 TEZGAH_WEBGPU_SUBGROUPS=0 TZ_TEST_FILTER='test_attention_flash_*' timeout 60 "$dir/test_webgpu_ops" >>"$log" 2>&1
  say "test_webgpu_ops test_attention_flash_* (TEZGAH_WEBGPU_SUBGROUPS=0): rc $?"
fi

# the sweep: every variant at head_dim 64, 32 and 128 in one process (B 16, T 1024, n_head
# 768 / hd; separate buffers, so read-only inputs unless RO=0)
names=(default rw pf0fd0 pf0fd0-rw pf1fd0 rg2nt128 rg2nt256 rg2nt256-rw nt128)
envs=("X=1" "TEZGAH_WEBGPU_ATTN_RO=0" "TEZGAH_WEBGPU_ATTN_PF=0 TEZGAH_WEBGPU_ATTN_FD=0"
  "TEZGAH_WEBGPU_ATTN_PF=0 TEZGAH_WEBGPU_ATTN_FD=0 TEZGAH_WEBGPU_ATTN_RO=0" "TEZGAH_WEBGPU_ATTN_FD=0"
  "TEZGAH_WEBGPU_ATTN_RG=2 TEZGAH_WEBGPU_ATTN_NT=128" "TEZGAH_WEBGPU_ATTN_RG=2 TEZGAH_WEBGPU_ATTN_NT=256"
  "TEZGAH_WEBGPU_ATTN_RG=2 TEZGAH_WEBGPU_ATTN_NT=256 TEZGAH_WEBGPU_ATTN_RO=0" "TEZGAH_WEBGPU_ATTN_NT=128")
for i in "${!names[@]}"; do
  env TEZGAH_WEBGPU_ATTN=fast ${envs[$i]} timeout 25 "$dir/bench_webgpu" attention $att >"$out/b.txt" 2>&1
  rc=$?
  cat "$out/b.txt" >>"$log"
  grep "attention B=" "$out/b.txt" | sed "s/^/[${names[$i]}] /" | tee -a "$sum"
  ((rc == 0)) || say "[${names[$i]}] rc $rc"
done
rm -f "$out/b.txt"

[[ -n ${NOTRAIN:-} ]] && exit 0
# the training step (one activation arena: read_write bindings), per-kernel profile
for i in 0 2 4 6 5 8; do
  env ${envs[$i]} TEZGAH_PROFILE=1 timeout 40 "$dir/bench_webgpu" train 16 1024 4 >"$out/t.txt" 2>&1
  rc=$?
  cat "$out/t.txt" >>"$log"
  say "train profiled [${names[$i]}] rc $rc: $(grep -iE 'attention|total|median step' "$out/t.txt" | tr -s ' ' | tr '\n' ';')"
done
rm -f "$out/t.txt"
timeout 40 "$dir/bench_webgpu" train 16 1024 6 >>"$log" 2>&1
say "train [default] rc $?: $(grep 'median step' "$log" | tail -1)"
say "done: $(date -u)"
