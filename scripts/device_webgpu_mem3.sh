#!/usr/bin/env bash
# WebGPU f16 training's memory-bound ops on the H200 (issue 22, branch wgfuse, round 2), one
# device call, <= ~80 s warm: this branch's kernels against main's in the same binary, through
# their switches (OLD below turns every one off: main's kernels), and the PyTorch peer. Parts,
# each started only while it would end within LIM seconds (default 90) of the start, the
# must-haves first:
#  1. `tezgah info` (adapter, subgroups);
#  2. test_webgpu_ops' cases of the changed kernels vs the CPU backend (test_norms,
#     test_act16, test_crossentropy*, test_activations, test_memory_ops) with this branch's defaults;
#  3. GPT-2 124M B16 T1024 `tezgah train --backend webgpu --precision f16`, STEPS (10) steps:
#     median tokens/s of steps 6.., this branch (new) and OLD (old); the losses side by side;
#  4. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1) at B 16 T 1024, 12 steps;
#  5. new with --profile: the memory-bound ops' ms/step; then, while time is left, OLD's;
#  6. a compact table (the key figures, last).
#   bash scripts/device_webgpu_mem3.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/ (summary.log and every log). STEPS,
#   TTMO (per train run, default 30 s), LIM; DRY=1 TRAIN_ARGS="--n-layer 2 --d-model 128 -B 2
#   -T 128": a local run on lavapipe.
# The switches (each read once per process; unset = this branch's kernel):
#   TEZGAH_WEBGPU_LN_SG=0   layernorm fwd / bwd: layernorm.wgsl's workgroup-per-row kernels and
#                           two-row layernorm_dwdb_partial instead of layernorm_sg.wgsl's
#                           subgroup-per-row ones and the four-row layernorm_dwdb_partial4
#   TEZGAH_WEBGPU_XENT4=0   crossentropy: softmax_xent_online instead of softmax_xent_online4
#   TEZGAH_WEBGPU_ELEM8=0   gelu_fwd: gelu_fwd4 (four elements per thread) instead of gelu_fwd8
# Profile rows: layernorm_bwd is the backward's row pass, layernorm_dwdb its dw / db partial
# sums (layernorm_dwdb_partial; main profiled both as layernorm_bwd).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_mem3 /tmp/mem3_out "" "$@"
device_dawn_node
lim=${LIM:-90}
OLD=(TEZGAH_WEBGPU_LN_SG=0 TEZGAH_WEBGPU_XENT4=0 TEZGAH_WEBGPU_ELEM8=0)
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|subgroup size|reductions)' | cut -c1-160 | tee -a "$sum"
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}
read -ra targs <<<"${TRAIN_ARGS:-}"
declare -A TPS
trc=-
if left "test" 25; then
  TZ_TEST_FILTER='test_memory_ops,test_norms,test_act16,test_crossentropy*,test_activations' timeout 25 \
    "$dir/bin/test_webgpu_ops" >"$out/test_new.log" 2>&1
  trc=$?
  grep -E 'FAIL|SKIP|PASSED|rror' "$out/test_new.log" | grep -v '^webgpu' | head -n 6 | cut -c1-160 | tee -a "$sum"
  say "test_webgpu_ops rc $trc"
fi
steps=${STEPS:-10}
export TTMO=${TTMO:-30}
train_run() { # NAME (new | old) ARGS...
  local name=$1 v=$2 e=()
  shift 2
  [[ $v == old ]] && e=("${OLD[@]}")
  if ((${#e[@]})); then export "${e[@]}"; fi
  rm -rf "/tmp/run_$name"
  train_gpt2 "$name" f16 "$steps" "${targs[@]}" "$@"
  for x in "${e[@]}"; do unset "${x%%=*}"; done
  TPS[$name]=$tps
  say "train $name [$v${*:+ $*}] rc $rc: median tokens/s (steps 6..) $tps $(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-160)"
}

left "train new" 15 && train_run new new
left "train old" 15 && train_run old old
if [[ -f $dir/data/torch_gpt.py ]] && left "torch" 20; then
  TF32=1 timeout 40 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager (torch_gpt.py --compile 0) rc $?: $(tail -1 "$out/torch.log" | cut -c1-200)"
fi
left "train new --profile" 15 && train_run newp new --profile
left "train old --profile" 15 && train_run oldp old --profile
[[ -s $out/newp.log ]] && sed -n '/ms\/step/,$p' "$out/newp.log" | grep -vE '^(step|\{)' | head -40 | cut -c1-100 >>"$sum"
[[ -s $out/loss_new.txt && -s $out/loss_old.txt ]] &&
  paste "$out/loss_new.txt" "$out/loss_old.txt" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d}
    END {printf "losses new vs old over %d steps: largest |diff| %.2g (summation order only)\n", NR, m}' | tee -a "$sum"
ttok=$(grep -oE 'tok_s=[0-9.]+' "$out/torch.log" 2>/dev/null | tail -1 | cut -d= -f2)
echo "==== device_webgpu_mem3 summary ($SECONDS s; test_webgpu_ops rc $trc) ===="
printf '%-22s %10s %10s\n' "" new old
printf '%-22s %10s %10s\n' "tokens/s (steps 6..)" "${TPS[new]:--}" "${TPS[old]:--}"
printf '%-22s %10s %10s\n' "tokens/s profiled" "${TPS[newp]:--}" "${TPS[oldp]:--}"
for k in layernorm_fwd layernorm_bwd layernorm_dwdb crossentropy colsum_add add gelu_fwd gelu_bwd adamw total; do
  printf '%-22s %10s %10s\n' "$k ms/step" "$(row "$k" "$out/newp.log" 2>/dev/null)" "$(row "$k" "$out/oldp.log" 2>/dev/null)"
done
echo "PyTorch bf16 eager tokens/s: ${ttok:-see torch.log}"
