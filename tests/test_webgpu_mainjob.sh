# The main job's model shape through the CLI on the WebGPU backend (lavapipe in CI):
# `tezgah train --backend webgpu` with the defaults' model (llama, 4 layers, 4 heads,
# d_model 128, B 16, T 128, vocab 2048) trains 3 steps at the adapter's default precision, as
# a user's run there would: exit 0, finite losses in metrics.jsonl, the last not above the
# first + 1, and the same 3 steps on --backend cpu give losses within 2e-3 relative where the
# adapter offers ShaderF16 (the f16 weight mirror, the default there: lavapipe and most GPUs)
# and within 1e-3 where it does not (fp32).
# One WebGPU run since 2026-12-02 (branch ttime5): the entry also ran the fp32 path
# (TEZGAH_WEBGPU_F16=0) on lavapipe, 152 of its ~316 cold CPU seconds. fp32 training against
# the CPU is test_webgpu_train's (llama and gpt2, 20 steps, both activation layouts) and, in
# the browser, test_wasm_webgpu's (SwiftShader has no ShaderF16); its kernels at this shape
# (flash attention at head_dim 32, the matmul family) are test_webgpu_ops' cases.
# ctest runs it with llvmpipe at 4 lanes and without LLVM's optimisation passes
# (tests/lavapipe_env.cmake: 306 -> 161 cold CPU s for the lanes; what that moves is said there).
# SKIPPED (exit 77) without ../shared or without Dawn / an adapter.
# Usage (from ctest): bash test_webgpu_mainjob.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
corpus=$shared/data/tinyshakespeare.txt
if [[ ! -f $corpus ]]; then
  echo "SKIPPED: $corpus is absent (../shared not available)"
  exit 77
fi
if ! info=$("$tz" info 2>&1) || ! grep -q '^  adapter:' <<<"$info"; then
  echo "SKIPPED: WebGPU unavailable: $(grep -m1 'unavailable\|error' <<<"$info" || echo 'no adapter listed by tezgah info')"
  exit 77
fi
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
enter_scratch
export OMP_NUM_THREADS=2
# --val-batches 1: the validation after the last step (which the checks below do not read) over one
# batch of the main job's shape, not the default 8: the same forward-only host path and pipelines,
# 7 fewer batches executed by lavapipe at -O0 (the WebGPU run, warm cache: 60.0 -> 38.8 CPU s, the
# step losses bit for bit the same; branch ci38b)
job=(--data "$corpus" --vocab-size 2048 --arch llama --n-layer 4 --n-head 4 --d-model 128 -B 16 -T 128
  --steps 3 --val-every 0 --val-batches 1 --sample-tokens 20 --log-every 1 --seed 11)

losses() { grep -o '"loss":[0-9.eE+-]*\|"loss":[a-z-]*' "$1" | cut -d: -f2; }
tol=1e-3 what=fp32
grep -q '^  precision: f16 weight mirror' <<<"$info" && tol=2e-3 what="f16 weight mirror"
for run in webgpu cpu; do
  start=$(date +%s)
  if "$tz" train "${job[@]}" --backend $run --run-dir runs/$run >$run.out 2>$run.err; then
    ok "$run: trained 3 steps in $(($(date +%s) - start)) s"
  else
    fail "$run: exit $?, stderr:"; tail -20 $run.err
  fi
done
grep -h '^webgpu:' webgpu.err
mapfile -t lw < <(losses runs/webgpu/metrics.jsonl 2>/dev/null)
mapfile -t lc < <(losses runs/cpu/metrics.jsonl 2>/dev/null)
echo "webgpu losses ($what): ${lw[*]:-none}"
echo "cpu losses:    ${lc[*]:-none}"
if ((${#lw[@]} != 3 || ${#lc[@]} != 3)); then
  fail "expected 3 step losses each, got ${#lw[@]} (webgpu) and ${#lc[@]} (cpu)"
else
  if awk -v a="${lw[0]}" -v b="${lw[1]}" -v c="${lw[2]}" 'BEGIN {
      for (i = 0; i < 3; i++) { x = (i == 0 ? a : i == 1 ? b : c) + 0; if (!(x > 0 && x < 20)) exit 1 }
      exit !(c + 0 <= a + 1) }'; then
    ok "webgpu losses finite and sane (last ${lw[2]} <= first ${lw[0]} + 1)"
  else
    fail "webgpu losses not finite or not sane: ${lw[*]}"
  fi
  for i in 0 1 2; do
    if awk -v a="${lw[$i]}" -v b="${lc[$i]}" -v t="$tol" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= t * b) }'; then
      ok "step $((i + 1)): webgpu ($what) ${lw[$i]} vs cpu ${lc[$i]} within $tol relative"
    else
      fail "step $((i + 1)): webgpu ($what) ${lw[$i]} vs cpu ${lc[$i]} differ by more than $tol relative"
    fi
  done
fi
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
