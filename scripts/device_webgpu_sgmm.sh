#!/usr/bin/env bash
# The subgroup-matrix matmul's tiles on the GPU machine (branch sgmm, issue 22 item 3's speed),
# one device call, about 200 s warm:
#  1. `tezgah info` under the node Dawn; test_webgpu_sgmat with TEZGAH_TEST_SGMAT_REQUIRED=1
#     (every kernel path on the real builtins, the emulated ones, the preprocessor) and
#     test_webgpu_ops' test_matmul_sgmat (every sweep tile through the backend: three forms,
#     accumulation, bias, split-K, shapes that are not tile multiples);
#  2. bench_webgpu_sgmat sweep: one ROW per tile variant, TFLOP/s at 8192³ per form and the
#     GPT-2 124M B16 T1024 matmul ms/step per form, every run checked against the CPU on sampled
#     entries; the BEST line names the fastest tile per form (TZ_SGMAT_BUDGET_S, default 85);
#  3. GPT-2 124M, B 16, T 1024, `tezgah train --backend webgpu --precision f16` with the best
#     tiles (TEZGAH_WEBGPU_SGMAT_TILE_XWT/_DYW/_DYTX from the BEST line, main's default after
#     them): STEPS (12) steps, tokens/s = median of steps 6..; then a 6-step --profile run (the
#     matmul rows); then, while time is left (LIM_MAIN, 170 s), the same 12 steps on main's
#     default tile (the peer).
#   bash scripts/device_webgpu_sgmm.sh DIR     (run tool, carry [DIR, ".gl"]; DIR made by
#   scripts/device_pack_webgpu.sh DIR: bin/ (tezgah, test_webgpu_ops, test_webgpu_sgmat,
#   bench_webgpu_sgmat, libtz_napi_stub.so), lib/, dawn/dawn.node.xz, data/train.bin).
#   Writes $OUT/ (logs).
set -uo pipefail
dir=${1:?usage: device_webgpu_sgmm.sh DIR}
out=${OUT:-/tmp/sgmm_out}
mkdir -p "$out"
if [[ -z ${DRY:-} ]]; then # DRY=1: a local dry run of the logic (lavapipe; no training)
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
export LD_LIBRARY_PATH=$PWD/$dir/lib:$PWD/$dir/bin:${LD_LIBRARY_PATH:-}
xz -dc "$dir/dawn/dawn.node.xz" >/tmp/dawn.node
export TEZGAH_WEBGPU_LIB=/tmp/dawn.node
say() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*"; }
say "start $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
timeout 60 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix|limits)'

TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 60 "$dir/bin/test_webgpu_sgmat" >"$out/test_sgmat.log" 2>&1
rc=$?
grep -E '^\[ *(FAILED|ERROR|SKIPPED|PASSED|  ERROR)|SKIPPED:|FAIL$|failed:' "$out/test_sgmat.log" | head -24
say "test_webgpu_sgmat rc $rc ($(grep -c 'worst error' "$out/test_sgmat.log") form checks)"
TZ_TEST_FILTER='test_matmul_sgmat' timeout 75 "$dir/bin/test_webgpu_ops" >"$out/test_ops.log" 2>&1
rc=$?
grep -E '^\[ *(FAILED|ERROR|SKIPPED|PASSED|  ERROR)|SKIPPED:|error|FAIL' "$out/test_ops.log" | grep -v '^Warning' | head -16
say "test_webgpu_ops test_matmul_sgmat rc $rc ($(grep -c 'tile ' "$out/test_ops.log") tiles)"

TZ_SGMAT_BUDGET_S=${TZ_SGMAT_BUDGET_S:-85} timeout 170 "$dir/bin/bench_webgpu_sgmat" sweep >"$out/sweep.log" 2>&1
rc=$?
grep -E '^(adapter|limits|sweep|variant|ROW|BEST|best|sweep time|SKIPPED)|^ +[a-z]' "$out/sweep.log" | grep -vE '^    (XWT|DYW|DYTX) [0-9]' |
  sed -n '1,80p'
say "sweep rc $rc"
best=$(grep '^BEST' "$out/sweep.log" | tail -1)
tile() { echo "$best" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
def="o:64:4x4:2x2"
bx=$(tile XWT)
bw=$(tile DYW)
bd=$(tile DYTX)
say "best tiles: XWT ${bx:-none} DYW ${bw:-none} DYTX ${bd:-none}"
for fb in "XWT $bx" "DYW $bw" "DYTX $bd" "XWT $def" "DYW $def" "DYTX $def"; do # the best's shapes, and main's
  set -- $fb
  [[ -n ${2:-} ]] && awk -v t="  [$2]" -v f="$1" '$0 == t {on = 1; next} /^ROW/ {on = 0} on && $1 == f' "$out/sweep.log" |
    sed "s|^|  $2 |"
done

train() { # NAME STEPS EXTRA...
  local name=$1 n=$2
  shift 2
  timeout "${TTMO:-75}" "$dir/bin/tezgah" train --backend webgpu --precision f16 --arch gpt2 --n-layer 12 \
    --n-head 12 --d-model 768 --max-seq-len 1024 -B 16 -T 1024 --vocab-size 50257 \
    --train-shards "$dir/data/train.bin" --val-shards "$dir/data/train.bin" --steps "$n" --val-every 0 \
    --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir "/tmp/run_$name" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local tps
  tps=$(grep -o '"tok_per_s":[0-9.e+]*' "/tmp/run_$name/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -n +6 | sort -g |
    awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}')
  local loss
  loss=$(grep -o '"loss":[0-9.e+-]*' "/tmp/run_$name/metrics.jsonl" 2>/dev/null | cut -d: -f2 | tail -1)
  say "train $name rc $rc: median tokens/s (steps 6..) $tps; last loss $loss; $(grep -iE 'error' "$out/$name.log" | head -2 | tr '\n' '|')"
}
[[ -z ${DRY:-} ]] || { say "end (DRY: no training)"; exit 0; }
steps=${STEPS:-12}
export TEZGAH_WEBGPU_SGMAT_TILE_XWT="${bx:+$bx;}$def" TEZGAH_WEBGPU_SGMAT_TILE_DYW="${bw:+$bw;}$def"
export TEZGAH_WEBGPU_SGMAT_TILE_DYTX="${bd:+$bd;}$def"
train best "$steps"
train best_prof 6 --profile
sed -n '/ms\/step/,$p' "$out/best_prof.log" | grep -E 'ms/step|matmul|to_f16|colsum|total' | head -14
if ((SECONDS < ${LIM_MAIN:-170})); then
  unset TEZGAH_WEBGPU_SGMAT_TILE_XWT TEZGAH_WEBGPU_SGMAT_TILE_DYW TEZGAH_WEBGPU_SGMAT_TILE_DYTX
  train main_default "$steps"
fi
say "end"
