#!/usr/bin/env bash
# The subgroup-matrix matmul family's defaults on the H200 in GPT-2 124M (issue 22, branch wgmm),
# one device call, <= LIM (default 70) seconds warm; round 3: after the A16W binding fix (the f16
# copy of an fp32 dY was written into an unused binding where the call had no bias: round 2's
# test_act16 failure and diverging losses). Parts, each with a time limit; the peer only while
# it would end before LIM:
#  1. `tezgah info`; test_webgpu_sgmat (real builtins) on the K <= 1024 default tile vpgP264
#     with a in f16 and in f32 writing its f16 copy (vpgP264fw, vpfw: the A32 / A16W path, the
#     copy compared bit for bit) and one emulated tile; test_webgpu_ops' test_act16 through the backend
#     (act16_sg_chain: dX from an fp32 dY, then dW from the copy A16W wrote; bias_bwd from dY's
#     f16 copy after dX, dW), its failing lines printed if any;
#  2. GPT-2 124M f16 B16 T1024, STEPS (8) steps: "main", main's choices restored by switches in
#     this one binary (tiles n:64:2x4:4x2:vp;o:64:4x4:2x2 for every form, the earlier dW split
#     rule SLOTS=0, the to_f16 copy A32=0, the fp32 bias gradient BIAS16=0), and "wgmm", this
#     branch's defaults: median tokens/s of steps 6.., the losses of both and their largest
#     relative difference (f16 rounding in another order: ~1e-6 expected; round 2's bug: 1e-2);
#  3. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1), 8 steps;
#  4. the table, LAST.
#   bash scripts/device_webgpu_mm3.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`: bin/ (tezgah, test_webgpu_ops, test_webgpu_sgmat,
#   libtz_napi_stub.so), lib/, dawn/dawn.node.xz, data/train.bin, data/torch_gpt.py). Writes
#   $OUT/ (summary.log and every log). DRY=1: a local run on lavapipe (TRAIN_ARGS for a small
#   model).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_mm3 /tmp/mm3_out "" "$@"
device_dawn_node
lim=${LIM:-70}
left() { ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }; }
read -ra targs <<<"${TRAIN_ARGS:-}"
main_env=(TEZGAH_WEBGPU_SGMAT_TILE="n:64:2x4:4x2:vp;o:64:4x4:2x2" TEZGAH_WEBGPU_SGMAT_SLOTS=0
  TEZGAH_WEBGPU_SGMAT_A32=0 TEZGAH_WEBGPU_BIAS16=0)
timeout 20 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|subgroup-matrix matmul)' | cut -c1-160 | tee -a "$sum"

# 1. tests on the real builtins (correctness only: the two run side by side)
tiles="n:64:2x4:4x2:vpgP264;n:64:2x4:4x2:vpgP264fw;n:64:2x4:4x2:vpfw"
TEZGAH_TEST_SGMAT_REQUIRED=1 TZ_TEST_SGMAT_TILES="$tiles" TZ_TEST_SGMAT_EMU_TILES="n:32:2x1:1x2:vpgP3fw" timeout 25 \
  "$dir/bin/test_webgpu_sgmat" >"$out/test_sgmat.log" 2>&1 &
pid_t1=$!
TZ_TEST_FILTER=test_act16 timeout 30 "$dir/bin/test_webgpu_ops" >"$out/test_act16.log" 2>&1
rc_t3=$?
wait "$pid_t1"
rc_t1=$?
grep -E 'FAIL|SKIPPED|failed|differs' "$out/test_sgmat.log" | head -6 | cut -c1-160 | tee -a "$sum"
say "test_webgpu_sgmat rc $rc_t1: $(grep -c 'worst error' "$out/test_sgmat.log") form checks, largest err/bound" \
  "$(grep -oE 'worst error [0-9.e+-]+' "$out/test_sgmat.log" | awk '$3 > m {m = $3} END {print m + 0}')"
# the failing checks' own lines (print_error: "what [i]: gpu .. cpu .. (bound ..)") and cmocka's
grep -E ': gpu .* cpu |^\[ *(FAILED|ERROR)|SKIPPED:|non-finite' "$out/test_act16.log" | head -8 | cut -c1-150 | tee -a "$sum"
say "test_webgpu_ops test_act16 rc $rc_t3: db after the producer worst/sum|dY|" \
  "$(grep -oE 'db after the producer: worst .err. / sum.dY. [0-9.e+-]+' "$out/test_act16.log" | awk '$NF > m {m = $NF} END {print m + 0}')"

# 2. training: main's choices, then this branch's defaults
steps=${STEPS:-8}
export TTMO=${TTMO:-30}
declare -A TPS
run_train() { # NAME ENV... -- ARGS...
  local name=$1 e=()
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do e+=("$1"); shift; done
  shift
  rm -rf "/tmp/run_$name"
  if ((${#e[@]})); then export "${e[@]}"; fi
  train_gpt2 "$name" f16 "$steps" "${targs[@]}" "$@"
  for v in "${e[@]}"; do unset "${v%%=*}"; done
  TPS[$name]=$tps
  say "train $name rc $rc: median tokens/s (steps 6..) $tps" "$(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-160)"
}
run_train main "${main_env[@]}" --
run_train wgmm --
# the largest |loss_wgmm - loss_main| / |loss_main| over the steps both logged
maxrel=$(paste "$out/loss_main.txt" "$out/loss_wgmm.txt" 2>/dev/null |
  awk 'NF == 2 {d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > m) m = d; n++} END {printf "%.3g over %d steps", m, n}')

# 3. the peer
TORCH=nan
if [[ -f $dir/data/torch_gpt.py ]] && left torch 16; then
  TF32=1 timeout 25 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 8 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager rc $?: $(grep '^torch ' "$out/torch.log" | tail -1 | cut -c1-160)"
  TORCH=$(grep -oE 'tok_s=[0-9]+' "$out/torch.log" | tail -1 | cut -d= -f2)
fi

# 4. the table, last
echo
echo "== summary (device_webgpu_mm3, round 3) =="
echo "tests: test_webgpu_sgmat rc $rc_t1, test_act16 rc $rc_t3"
echo "GPT-2 124M f16 B16 T1024 tokens/s (median steps 6..$steps): main's choices ${TPS[main]:-nan};" \
  "wgmm defaults ${TPS[wgmm]:-nan}; PyTorch bf16 eager ${TORCH:-nan}"
echo "main switches: ${main_env[*]}"
for n in main wgmm; do
  [[ -f $out/loss_$n.txt ]] && echo "losses $n: $(tr '\n' ' ' <"$out/loss_$n.txt" | cut -c1-170)"
done
echo "losses wgmm vs main: largest relative difference ${maxrel:-nan}"
say "end ($SECONDS s)"
