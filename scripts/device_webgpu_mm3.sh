#!/usr/bin/env bash
# The subgroup-matrix matmul family at GPT-2 124M's shapes on the H200 (issue 22's >= 200K
# tokens/s, branch wgmm), one device call, <= LIM (default 145) seconds warm. Parts, each with a
# time limit, the optional ones (*) only while they would end before LIM:
#  1. `tezgah info`; test_webgpu_sgmat (real builtins) on the persistent-grid tiles and the
#     default tile (TZ_TEST_SGMAT_TILES), test_webgpu_ops' test_matmul_sgmat through the backend
#     on the same tiles (three forms, accumulation, bias, split-K, shapes off the tile);
#     test_webgpu_ops' test_act16 (bias_bwd from dY's f16 copy after the subgroup-matrix dX, dW);
#  2. GPT-2 124M f16 B16 T1024, STEPS (10) steps, median tokens/s of steps 6..: main's choices
#     ("main": default tiles, TEZGAH_WEBGPU_BIAS16=0) and this branch's ("mm3": the f16 bias
#     gradient, the default now, and the candidate tiles CAND, below);
#  3. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1), 12 steps;
#  5. *bench_webgpu_sgmat sweep at the model's shapes only (TZ_SGMAT_NO_CUBE=1): X·Wᵀ and dY·W per
#     tile of SWEEP_XD (<= 30 s);
#  4. *`--profile` (6 steps) with TEZGAH_PROFILE_SHAPES=1 on the candidate: matmul rows per shape;
#  5b. *the dW sweep: the split rule of main (dw0) vs TEZGAH_WEBGPU_SGMAT_SLOTS=132 / 264;
#  6. the table, LAST.
# CAND (env assignments, default below): X·Wᵀ and dY·W at K <= 1024 on the default tile with a
# persistent grid of 264 workgroups (TEZGAH_WEBGPU_SGMAT_TILE_SHORTK); dW's split by the wave
# rule (TEZGAH_WEBGPU_SGMAT_SLOTS) is measured in the sweep only (part 5: dw0 main's rule, dw132,
# dw264), e.g. CAND="TEZGAH_WEBGPU_SGMAT_TILE_SHORTK=... TEZGAH_WEBGPU_SGMAT_SLOTS=132".
#   bash scripts/device_webgpu_mm3.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`: bin/ (tezgah, test_webgpu_ops, test_webgpu_sgmat,
#   bench_webgpu_sgmat, libtz_napi_stub.so), lib/, dawn/dawn.node.xz, data/train.bin,
#   data/torch_gpt.py). Writes $OUT/ (summary.log and every log). DRY=1: a local run on
#   lavapipe (the tests skip or run emulated nothing; use TRAIN_ARGS for a small model).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_mm3 /tmp/mm3_out "" "$@"
device_dawn_node
lim=${LIM:-145}
left() { ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }; }
read -ra targs <<<"${TRAIN_ARGS:-}"
read -ra cand <<<"${CAND:-TEZGAH_WEBGPU_SGMAT_TILE_SHORTK=n:64:2x4:4x2:vpP264}"
tiles="n:64:2x4:4x2:vpP4;n:32:2x4:4x2:vpgP5;n:64:2x4:4x2:vpP264"
timeout 20 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|precision|subgroup-matrix)' | cut -c1-200 | tee -a "$sum"

# 1. tests on the real builtins
TEZGAH_TEST_SGMAT_REQUIRED=1 TZ_TEST_SGMAT_TILES="$tiles" TZ_TEST_SGMAT_EMU_TILES="n:32:2x1:1x2:vpP3" timeout 30 \
  "$dir/bin/test_webgpu_sgmat" >"$out/test_sgmat.log" 2>&1
rc_t1=$?
grep -E 'FAIL|SKIPPED|failed' "$out/test_sgmat.log" | head -8 | tee -a "$sum"
say "test_webgpu_sgmat rc $rc_t1: $(grep -c 'worst error' "$out/test_sgmat.log") form checks, largest err/bound" \
  "$(grep -oE 'worst error [0-9.e+-]+' "$out/test_sgmat.log" | awk '$3 > m {m = $3} END {print m + 0}')"
TZ_TEST_SGMAT_TILES="$tiles" TZ_TEST_FILTER=test_matmul_sgmat timeout 30 "$dir/bin/test_webgpu_ops" >"$out/test_ops.log" 2>&1
rc_t2=$?
grep -E '^\[ *(FAILED|ERROR)|SKIPPED:|FAIL' "$out/test_ops.log" | head -8 | tee -a "$sum"
say "test_webgpu_ops test_matmul_sgmat rc $rc_t2"
TZ_TEST_FILTER=test_act16 timeout 40 "$dir/bin/test_webgpu_ops" >"$out/test_act16.log" 2>&1
rc_t3=$?
grep -E '^\[ *(FAILED|ERROR)|SKIPPED:|FAIL|db after' "$out/test_act16.log" | head -10 | cut -c1-120 | tee -a "$sum"
say "test_webgpu_ops test_act16 (bias_bwd from dY's f16 copy) rc $rc_t3"

# 2. training: main's default, then the candidate
steps=${STEPS:-10}
export TTMO=${TTMO:-40}
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
  say "train $name [${e[*]:-main default}${*:+ $*}] rc $rc: median tokens/s (steps 6..) $tps; last loss $(tail -1 "$out/loss_$name.txt" 2>/dev/null)" \
    "$(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-160)"
}
run_train main TEZGAH_WEBGPU_BIAS16=0 --
run_train mm3 "${cand[@]}" --

# 3. the peer
TORCH=nan
if [[ -f $dir/data/torch_gpt.py ]] && left torch 45; then
  TF32=1 timeout 45 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager rc $?: $(grep '^torch ' "$out/torch.log" | tail -1 | cut -c1-200)"
  TORCH=$(grep -oE 'tok_s=[0-9]+' "$out/torch.log" | tail -1 | cut -d= -f2)
fi

# 5. the sweep at the model's shapes (checked against the CPU on sampled entries)
sw() { # NAME BUDGET ENV...
  local name=$1 b=$2
  shift 2
  env "$@" TZ_SGMAT_NO_CUBE=1 TZ_SGMAT_BUDGET_S="$b" timeout $((b + 15)) "$dir/bin/bench_webgpu_sgmat" sweep >"$out/sweep_$name.log" 2>&1
  say "sweep $name rc $?"
}
if left sweep_xd 45; then
  sw xd $((lim - SECONDS - 40 > 30 ? 30 : lim - SECONDS - 40)) TZ_SGMAT_FORMS=0,1 \
    TZ_SGMAT_TILES="${SWEEP_XD:-n:64:2x4:4x2:vp;n:64:2x4:4x2:vpP264;n:64:2x4:4x2:vpP132;n:32:2x4:4x2:vpP264;n:64:2x4:4x2:vpgP264;n:64:2x4:4x2:v}"
fi
# 4. the candidate's profile, per shape (6 steps)
if left profile 25; then
  steps=6 run_train mm3_prof "${cand[@]}" TEZGAH_PROFILE_SHAPES=1 -- --profile
  grep -E 'matmul|colsum|bias_bwd|to_f16|total|ms/step' "$out/mm3_prof.log" | grep -vE '^webgpu' | cut -c1-110 >"$out/prof_rows.txt"
fi

for sl in 0 132 264; do
  left "sweep_dw$sl" 12 || break
  if ((sl)); then sw "dw$sl" 8 TZ_SGMAT_FORMS=2 TZ_SGMAT_TILES="n:64:2x4:4x2:vp" TEZGAH_WEBGPU_SGMAT_SLOTS=$sl
  else sw dw0 8 TZ_SGMAT_FORMS=2 TZ_SGMAT_TILES="n:64:2x4:4x2:vp"; fi
done

# 6. the table, last
echo
echo "== per shape (sweep, ms per call, TFLOP/s, split; every run checked vs the CPU) =="
for f in "$out"/sweep_*.log; do
  [[ -f $f ]] || continue
  n=$(basename "$f" .log)
  awk -v n="${n#sweep_}" '/^  \[/ {t = $1} /^    (XWT|DYW|DYTX) [0-9]/ {printf "%-5s %-22s %-4s %-15s %7s ms %6s TF/s split %s\n", n, t, $1, $2, $(NF-7), $(NF-5), $(NF-2)}' "$f" |
    cut -c1-100
  grep -E '^ROW' "$f" | cut -c1-110
done
echo "== candidate profile (ms/step per shape) =="
[[ -f $out/prof_rows.txt ]] && head -40 "$out/prof_rows.txt"
echo "== summary =="
echo "tests: test_webgpu_sgmat rc $rc_t1, test_matmul_sgmat rc $rc_t2, test_act16 rc $rc_t3"
echo "GPT-2 124M f16 B16 T1024 tokens/s (median steps 6..$steps): main default ${TPS[main]:-nan}; mm3 [${cand[*]}] ${TPS[mm3]:-nan}; PyTorch bf16 eager ${TORCH:-nan}"
echo "losses main: $(tr '\n' ' ' <"$out/loss_main.txt" 2>/dev/null | cut -c1-120)"
echo "losses mm3:  $(tr '\n' ' ' <"$out/loss_mm3.txt" 2>/dev/null | cut -c1-120)"
say "end ($SECONDS s)"
