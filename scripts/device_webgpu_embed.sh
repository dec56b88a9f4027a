#!/usr/bin/env bash
# WebGPU embedding backward on the GPU machine, one device call: correctness (test_webgpu_ops'
# embed tests, bit for bit against the CPU backend), `bench_webgpu embed_bwd` at GPT-2 124M's
# tables on real token ids (an llm.c shard) and on Zipf ids, a sweep of the sorted indices per
# embed_dwte workgroup (TEZGAH_WEBGPU_EMBED_IPW), then the per-kernel profile of the GPT-2 and
# llama 124M training steps (the embed_bwd_* lines replace main's embed_backward, 4.8 and
# 5.9 ms/step on 2026-12-01) and one unprofiled GPT-2 step timing.
#
#   bash DIR/device_webgpu_embed.sh DIR    (run tool, carry [DIR, ".gl", ".wg"]; ~2-3 minutes)
# DIR holds portable CUDA-less binaries test_webgpu_ops and bench_webgpu, lib/ (the shared
# libraries the machine lacks, as scripts/device_pack.sh gathers them) and
# tiny_shakespeare_train.bin (../shared/llmc/; without it only Zipf ids); Dawn is
# .wg/libwebgpu_wrapper.so and the Vulkan loader debs are in .gl/. Writes $OUT/embed.log
# (everything) and $OUT/summary.log (the result lines). A local dry run of the script's logic:
# DRY=1 EMB="2 128" NOTRAIN=1 (no package unpacking; lavapipe; a small batch).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_embed /tmp embed.log "$@"
emb=${EMB:-16 1024}
shard=$dir/tiny_shakespeare_train.bin
[[ -f $shard ]] || shard=

TZ_TEST_FILTER='test_embed*' timeout 120 "$dir/test_webgpu_ops" >>"$log" 2>&1
say "test_webgpu_ops test_embed* (bitwise vs the CPU backend): rc $?"

# embed_bwd alone: default, profiled (sort / dwte / dwpe), then the IPW sweep
bench() { # label, env..., then bench_webgpu's arguments after --
  local label=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env X=1 "${envs[@]}" timeout 60 "$dir/bench_webgpu" embed_bwd "$@" >"$out/b.txt" 2>&1
  local rc=$?
  cat "$out/b.txt" >>"$log"
  grep -E "^embed_bwd B=|^  embed_bwd_" "$out/b.txt" | sed "s/^/[$label] /" | tee -a "$sum"
  ((rc == 0)) || say "[$label] rc $rc"
}
for ids in ${shard:+real} zipf; do
  args=($emb)
  [[ $ids == real ]] && args+=("$shard")
  bench "$ids" -- "${args[@]}"
  bench "$ids profiled" TEZGAH_PROFILE=1 -- "${args[@]}"
  for ipw in 1 2 4 16 64; do bench "$ids IPW $ipw" TEZGAH_WEBGPU_EMBED_IPW=$ipw -- "${args[@]}"; done
done
rm -f "$out/b.txt"

[[ -n ${NOTRAIN:-} ]] && exit 0
# the training step (uniform random ids), per-kernel profile
for arch in gpt2 llama; do
  TEZGAH_PROFILE=1 timeout 60 "$dir/bench_webgpu" train 16 1024 4 $arch >"$out/t.txt" 2>&1
  rc=$?
  cat "$out/t.txt" >>"$log"
  say "train profiled $arch rc $rc: $(grep -E 'embed|total|median step' "$out/t.txt" | tr -s ' ' | tr '\n' ';')"
done
rm -f "$out/t.txt"
timeout 60 "$dir/bench_webgpu" train 16 1024 6 >>"$log" 2>&1
say "train gpt2 rc $?: $(grep 'median step' "$log" | tail -1)"
say "done: $(date -u)"
