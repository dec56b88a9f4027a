#!/usr/bin/env bash
# WebGPU f16 training's memory-bound ops on the H200 (issue 22, branch wgfuse), one device call,
# <= ~120 s warm: this branch's kernels against main's in the same binary, through their switches
# (OLD below turns every one off: main's kernels), and the PyTorch peer. Parts, each started only
# while it would end within LIM seconds (default 120) of the start, the must-haves first:
#  1. `tezgah info` (adapter, subgroups);
#  2. test_webgpu_ops' cases of the changed kernels vs the CPU backend (test_memory_ops: add;
#     test_norms, test_act16,
#     test_crossentropy*, test_activations) with this branch's defaults (with OLD at the end, *);
#  3. GPT-2 124M B16 T1024 `tezgah train --backend webgpu --precision f16`, STEPS (10) steps:
#     median tokens/s of steps 6.., this branch (new) and OLD (old); the losses side by side;
#  4. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1) at B 16 T 1024, 12 steps;
#  5. the same two runs with --profile: the memory-bound ops' ms/step, new vs old, and the step;
#  6. a compact table (the key figures, last).
#   bash scripts/device_webgpu_mem3.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/ (summary.log and every log). STEPS,
#   TTMO (per train run, default 30 s), LIM; DRY=1 TRAIN_ARGS="--n-layer 2 --d-model 128 -B 2
#   -T 128": a local run on lavapipe.
# The switches (each read once per process; unset = this branch's kernel):
#   TEZGAH_WEBGPU_LN_SG=0   layernorm fwd / bwd: layernorm.wgsl's workgroup-per-row kernels
#                           instead of layernorm_sg.wgsl's subgroup-per-row ones
#   TEZGAH_WEBGPU_XENT4=0   crossentropy: softmax_xent_online instead of softmax_xent_online4
#   TEZGAH_WEBGPU_ELEM8=0   add, gelu_fwd: add4, gelu_fwd4 (four elements per thread) instead of
#                           add8, gelu_fwd8 (eight)
#   TEZGAH_WEBGPU_LN_DW=0   layernorm bwd: two passes (layernorm_bwd_sg, then layernorm_dwdb_partial
#                           re-reading dout and inp) instead of layernorm_sgdw.wgsl's one
# and, while time is left (*), a profiled run with only TEZGAH_WEBGPU_LN_DW=0 (dw0): the one-pass
# backward's own share.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_mem3 /tmp/mem3_out "" "$@"
device_dawn_node
lim=${LIM:-120}
OLD=(TEZGAH_WEBGPU_LN_SG=0 TEZGAH_WEBGPU_XENT4=0 TEZGAH_WEBGPU_LN_DW=0 TEZGAH_WEBGPU_ELEM8=0)
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|precision|reductions)' | cut -c1-200 | tee -a "$sum"
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}
read -ra targs <<<"${TRAIN_ARGS:-}"
declare -A TRC TPS
test_run() { # v (new | old)
  local v=$1 e=()
  [[ $v == old ]] && e=("${OLD[@]}")
  env "${e[@]}" TZ_TEST_FILTER='test_memory_ops,test_norms,test_act16,test_crossentropy*,test_activations' timeout 40 \
    "$dir/bin/test_webgpu_ops" >"$out/test_$v.log" 2>&1
  TRC[$v]=$?
  grep -E 'FAIL|SKIP|PASSED|rror' "$out/test_$v.log" | grep -v '^webgpu' | head -n 6 | cut -c1-160 | sed "s/^/  [$v] /" | tee -a "$sum"
  say "test_webgpu_ops [$v] rc ${TRC[$v]}"
}
steps=${STEPS:-10}
export TTMO=${TTMO:-30}
train_run() { # NAME (new | old) ARGS...
  local name=$1 v=$2 e=()
  shift 2
  [[ $v == old ]] && e=("${OLD[@]}")
  [[ $v == dw0 ]] && e=(TEZGAH_WEBGPU_LN_DW=0)
  if ((${#e[@]})); then export "${e[@]}"; fi
  rm -rf "/tmp/run_$name"
  train_gpt2 "$name" f16 "$steps" "${targs[@]}" "$@"
  for x in "${e[@]}"; do unset "${x%%=*}"; done
  TPS[$name]=$tps
  say "train $name [$v${*:+ $*}] rc $rc: median tokens/s (steps 6..) $tps $(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-160)"
}

left "test new" 40 && test_run new
left "train new" "$TTMO" && train_run new new
left "train old" "$TTMO" && train_run old old
if [[ -f $dir/data/torch_gpt.py ]] && left "torch" 45; then
  TF32=1 timeout 45 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager (torch_gpt.py --compile 0) rc $?: $(tail -1 "$out/torch.log" | cut -c1-200)"
fi
left "train new --profile" "$TTMO" && train_run newp new --profile
left "train old --profile" "$TTMO" && train_run oldp old --profile
left "train dw0 --profile" "$TTMO" && train_run dw0p dw0 --profile
left "test old" 30 && test_run old
for f in newp oldp; do
  [[ -s $out/$f.log ]] && { say "profile $f (ms/step):"; sed -n '/ms\/step/,$p' "$out/$f.log" | grep -vE '^(step|\{)' | head -40 | cut -c1-100 >>"$sum"; }
done
[[ -s $out/loss_new.txt && -s $out/loss_old.txt ]] &&
  paste "$out/loss_new.txt" "$out/loss_old.txt" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d}
    END {printf "losses new vs old over %d steps: largest |diff| %.2g (summation order only)\n", NR, m}' | tee -a "$sum"
ttok=$(grep -oE 'tok_s=[0-9.]+' "$out/torch.log" 2>/dev/null | tail -1 | cut -d= -f2)
echo "==== device_webgpu_mem3 summary ($SECONDS s) ===="
printf '%-22s %10s %10s %10s\n' "" new old "dw0 (LN_DW=0)"
printf '%-22s %10s %10s\n' "test_webgpu_ops rc" "${TRC[new]:--}" "${TRC[old]:--}"
printf '%-22s %10s %10s\n' "tokens/s (steps 6..)" "${TPS[new]:--}" "${TPS[old]:--}"
printf '%-22s %10s %10s\n' "tokens/s profiled" "${TPS[newp]:--}" "${TPS[oldp]:--}"
for k in layernorm_fwd layernorm_bwd crossentropy colsum_add add gelu_fwd gelu_bwd adamw total; do
  printf '%-22s %10s %10s %10s\n' "$k ms/step" "$(row "$k" "$out/newp.log" 2>/dev/null)" "$(row "$k" "$out/oldp.log" 2>/dev/null)" \
    "$(row "$k" "$out/dw0p.log" 2>/dev/null)"
done
echo "PyTorch bf16 eager tokens/s: ${ttok:-see torch.log}"
