#!/usr/bin/env bash
# WebGPU flash attention on the GPU machine: correctness and speed of each row-group layout of
# attention_fa.wgsl (TEZGAH_WEBGPU_ATTN_RG=1, the default, and 2), then a GPT-2 124M training
# step with the fastest one (and its per-kernel profile: the in-step attention time is the
# figure to trust, docs/PERF.md).
#
#   bash scripts/device_webgpu_attn.sh DIR     (run tool, carry [DIR, ".gl", ".wg"])
# DIR holds portable CUDA-less binaries test_webgpu_ops and bench_webgpu and lib/ (the shared
# libraries the machine lacks, as scripts/device_pack.sh gathers them), and optionally pair/
# (the same two programs built from another branch, an experiment: tested and timed here when
# present); Dawn is
# .wg/libwebgpu_wrapper.so and the Vulkan loader debs are in .gl/. Writes $OUT/attn.log
# (everything) and prints its summary lines. About 2-3 minutes.
set -uo pipefail
dir=${1:?usage: device_webgpu_attn.sh DIR}
out=${OUT:-/tmp}
log=$out/attn.log
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export TEZGAH_WEBGPU_LIB=$PWD/.wg/libwebgpu_wrapper.so
export LD_LIBRARY_PATH=$PWD/$dir/lib:${LD_LIBRARY_PATH:-}
: >"$log"
say() { echo "$@" | tee -a "$log"; }
say "device_webgpu_attn: $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"

# correctness: every attention test (both row-group layouts), subgroup and workgroup reductions
ok_all=0 ok_pair=1
for sg in 1 0; do
  TEZGAH_WEBGPU_SUBGROUPS=$sg TZ_TEST_FILTER='test_attention*' timeout 120 "$dir/test_webgpu_ops" >>"$log" 2>&1
  rc=$?
  say "test_webgpu_ops attention (TEZGAH_WEBGPU_SUBGROUPS=$sg): rc $rc"
  ((rc == 0)) || ok_all=1
done
if [[ -x $dir/pair/bench_webgpu ]]; then
  ok_pair=0
  for sg in 1 0; do
    TEZGAH_WEBGPU_SUBGROUPS=$sg TZ_TEST_FILTER='test_attention_flash' timeout 120 "$dir/pair/test_webgpu_ops" >>"$log" 2>&1
    rc=$?
    say "pair/test_webgpu_ops attention (TEZGAH_WEBGPU_SUBGROUPS=$sg): rc $rc"
    ((rc == 0)) || ok_pair=1
  done
fi

# speed: bench_webgpu attention 16 1024 hd for every variant; the fastest at head_dim 64 among
# those whose tests passed runs the training step (rg1, the default, when none did)
# (TEZGAH_WEBGPU_ATTN=fast: an error rather than a silent fallback if a kernel declines)
variants=("rg1" "rg2")
envs=("TEZGAH_WEBGPU_ATTN_RG=1" "TEZGAH_WEBGPU_ATTN_RG=2")
hds=("64 32 128" "64 32 128")
bins=("$dir" "$dir")
if [[ -x $dir/pair/bench_webgpu ]]; then
  variants+=("pair") envs+=("X=1") hds+=("64 32 128") bins+=("$dir/pair")
fi
best=0 best_ms=1e9
for i in "${!variants[@]}"; do
  for hd in ${hds[$i]}; do
    line=$(env TEZGAH_WEBGPU_ATTN=fast ${envs[$i]} timeout 30 "${bins[$i]}/bench_webgpu" attention 16 1024 $hd 2>&1 | grep "attention B=" | tail -1)
    say "[${variants[$i]}] ${line:-no result (rc or timeout)}"
    ok=$ok_all
    [[ ${variants[$i]} == pair ]] && ok=$ok_pair
    if [[ $hd == 64 && -n $line && $ok == 0 ]]; then
      ms=$(sed -n 's/.*fwd+bwd \([0-9.]*\) ms.*/\1/p' <<<"$line")
      if [[ -n $ms ]] && awk -v a="$ms" -v b="$best_ms" 'BEGIN{exit !(a < b)}'; then best=$i best_ms=$ms; fi
    fi
  done
done
say "fastest at head_dim 64: ${variants[$best]} (fwd+bwd $best_ms ms)"

# a GPT-2 124M step (head_dim 64) with the fastest variant, then once more with the per-kernel
# GPU time table (TEZGAH_PROFILE=1: attention_fwd / attention_bwd ms per step)
env ${envs[$best]} timeout 60 "${bins[$best]}/bench_webgpu" train 16 1024 6 >>"$log" 2>&1
say "train [${variants[$best]}] rc $?: $(grep 'median step' "$log" | tail -1)"
env TEZGAH_PROFILE=1 ${envs[$best]} timeout 60 "${bins[$best]}/bench_webgpu" train 16 1024 4 >>"$log" 2>&1
say "train profiled [${variants[$best]}] rc $?: $(grep -i 'attention' "$log" | tail -2 | tr '\n' ' ')"
