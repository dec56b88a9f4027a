#!/usr/bin/env bash
# Issue 22 (session 22): is the K = 768 matmuls' lower rate (~186 TFLOP/s against ~240 at K =
# 3072 in the f16 training profile) kernel n's O16 epilogue (two workgroup barriers per result
# matrix)? 1. GPT-2 124M f16 B16 T1024 profiled per shape with TEZGAH_WEBGPU_SGMAT_O16=0 (kernel
# n stores fp32 straight from its result matrices; a conversion pass after); 2. the standalone
# kernel (fp32 output) at the model's K = 768 and K = 3072 shapes, the default and persistent
# tiles. bash scripts/device_mm22.sh DIR (carry [DIR, ".gl"]). <= 200 s.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_mm22 /tmp/mm22_out "" "$@"
device_dawn_node
export TTMO=${TTMO:-60}
TEZGAH_PROFILE_SHAPES=1 TEZGAH_WEBGPU_SGMAT_O16=0 train_shape prof_o16off gpt2 f16 8 --profile
say "profile O16=0 rc $rc: total $(row total "$out/prof_o16off.log") ms/step"
for s in "16384 3072 768" "16384 2304 768" "16384 768 3072" "16384 768 768"; do
  for f in 0 1; do
    TZ_SGMAT_FORMS=$f TZ_SGMAT_TILES="n:64:2x4:4x2:vp;n:64:2x4:4x2:vpgP264" timeout 60 "$dir/bin/bench_webgpu_sgmat" $s \
      >"$out/sg_${s// /x}_$f.log" 2>&1
    say "sgmat $s form $f rc $?: $(grep -iE 'tflop' "$out/sg_${s// /x}_$f.log" | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
  done
done
pack_logs
