#!/usr/bin/env bash
# WebGPU subgroup-matrix attention, written out (issue 22, branch wgatt4): the staged kernels with
# every subgroup matrix its own variable (TEZGAH_WEBGPU_ATTN_SG_WO=1: fa_sg_dkdv_wo.wgsl, and
# fa_sg_fwd_wo.wgsl where the branch has it) against main's staged kernels with arrays indexed in
# loops (WO=0, the default), from the same binary, on the H200 in one device call of <= LIM (230)
# s warm. Parts, each under `timeout`, each started only while it would end within LIM:
#  1. `tezgah info`'s adapter and attention lines;
#  2. correctness on the real builtins, test_webgpu_ops' test_attention_sgmat one case per
#     process (TZ_TEST_SG_CASE="B,T,n_head,n_kv_head,head_dim"): WO=1 on GQA 2 T 70 (several
#     tiles per key block, both DB halves), multi-query T 130, T 9 (below one matrix), T 300
#     (five blocks), head_dim 128 (T 133), then WO=1 KREG=1 and WO=1 NSG=2 (the sweep's other
#     forms) on T 130, and the default (WO=0) on T 130 for its err/bound beside the new ones;
#  3. `TEZGAH_PROFILE=1 bench_webgpu attention 16 1024 HD` (B 16, n_head 768 / HD, T 1024), ms
#     per forward + backward of one layer (GPU timestamps): old (WO=0), wo, wo+kreg, wo+nsg2 at
#     head_dim 64; old, wo at 128;
#  4. GPT-2 124M f16 B16 T1024, STEPS (10) steps, median tokens/s of steps 6..: old vs wo (the
#     first losses of both printed, and their largest difference);
#  5. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1), 12 steps;
#  6. while time is left: the whole test_attention_sgmat under WO=1 (every case: f16 out,
#     chunked dq, grid order, both forward forms; its F32IN cases run fa_sg_dkdv_st);
#  7. the table (last).
#   bash scripts/device_wgatt4.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/ (summary.log and every log). LIM,
#   STEPS, TTMO (per train run, default 30 s), NOTEST / NOTRAIN / NOTORCH / NOBENCH / NOFULL=1
#   skip parts; DRY=1 TRAIN_ARGS="--n-layer 2 --n-head 2 --d-model 128 -B 2 -T 128" for a local run on lavapipe.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_wgatt4 /tmp/wgatt4_out "" "$@"
device_dawn_node
lim=${LIM:-230}
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|attention)' | cut -c1-220 | tee -a "$sum"
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}
read -ra targs <<<"${TRAIN_ARGS:-}"
WO="TEZGAH_WEBGPU_ATTN_SG_WO=1"

declare -A TRES
tcase() { # NAME CASE TMO ENV...: one test_attention_sgmat case in its own process
  local name=$1 cs=$2 tmo=$3 trc
  shift 3
  # shellcheck disable=SC2086  # lb: empty or stdbuf's words
  env "$@" TZ_TEST_FILTER='test_attention_sgmat' TZ_TEST_SG_CASE="$cs" timeout "$tmo" $lb "$dir/bin/test_webgpu_ops" \
    >"$out/test_$name.log" 2>&1
  trc=$?
  local w
  w=$(grep -oE 'worst err/bound [0-9.]+' "$out/test_$name.log" | awk '$3 > m {m = $3} END {print m + 0}')
  TRES[$name]="rc $trc, $(grep -c 'worst err/bound' "$out/test_$name.log") checks, worst err/bound $w"
  grep -q 'SKIPPED' "$out/test_$name.log" && TRES[$name]+=" SKIPPED ($(grep -m1 SKIPPED "$out/test_$name.log" | cut -c1-120))"
  ((trc == 0)) || grep -E 'FAIL|rror|bound' "$out/test_$name.log" | grep -v '^webgpu:' | head -n 4 | cut -c1-200 | tee -a "$sum"
  say "test $name [$cs; ${*:-default}]: ${TRES[$name]}"
}
if [[ -z ${NOTEST:-} ]]; then
  left "test wo" 20 && tcase wo_gqa "2,70,4,2,64" 20 $WO
  left "test wo" 20 && tcase wo_mq "3,130,4,1,64" 20 $WO
  left "test wo" 20 && tcase wo_t9 "2,9,2,2,64" 20 $WO
  left "test wo" 20 && tcase wo_t300 "1,300,2,1,64" 20 $WO
  left "test wo" 20 && tcase wo_128 "2,133,2,2,128" 20 $WO
  left "test wo" 20 && tcase wo_kreg "3,130,4,1,64" 20 $WO TEZGAH_WEBGPU_ATTN_SG_KREG=1
  left "test wo" 20 && tcase wo_nsg2 "3,130,4,1,64" 20 $WO TEZGAH_WEBGPU_ATTN_SG_NSG=2
  left "test old" 20 && tcase old_mq "3,130,4,1,64" 20
fi

venv() { # a bench variant's environment
  case $1 in
    wo) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 $WO ;;
    wokreg) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 $WO TEZGAH_WEBGPU_ATTN_SG_KREG=1 ;;
    wonsg2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 $WO TEZGAH_WEBGPU_ATTN_SG_NSG=2 ;;
    *) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 ;; # old: main's defaults
  esac
}
declare -A ROW
bench_run() { # v hd
  local v=$1 hd=$2 brc
  # shellcheck disable=SC2046,SC2086  # the variant's assignments and lb, word-split on purpose
  env $(venv "$v") TEZGAH_PROFILE=1 timeout 20 $lb "$dir/bin/bench_webgpu" attention 16 1024 "$hd" >"$out/bench_${v}_$hd.log" 2>&1
  brc=$?
  ((brc == 0)) || say "  [$v $hd] rc $brc: $(grep -iE 'error|abort' "$out/bench_${v}_$hd.log" | head -1 | cut -c1-200)"
  while read -r h f k q d p s bf bb; do
    ROW[$v.$h]=$(printf '%-7s %3s %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f' "$v" "$h" "$f" "$k" "$q" "$d" "$p" "$s")
    say "  ${ROW[$v.$h]}  (bench wall fwd/bwd $bf/$bb)"
  done < <(bench_rows "$out/bench_${v}_$hd.log")
}
if [[ -z ${NOBENCH:-} ]]; then
  for v in old wo wokreg wonsg2; do left "bench $v 64" 10 && bench_run "$v" 64; done
  for v in old wo; do left "bench $v 128" 10 && bench_run "$v" 128; done
fi

declare -A TPS
train_run() { # NAME ENV...: one f16 training run of GPT-2 124M B16 T1024
  local name=$1 v
  shift
  for v in "$@"; do export "${v?}"; done
  rm -rf "/tmp/run_$name" # a run folder left by an earlier call on this machine: tezgah refuses it
  train_gpt2 "$name" f16 "${STEPS:-10}" "${targs[@]}"
  for v in "$@"; do unset "${v%%=*}"; done
  TPS[$name]=$tps
  say "train $name [${*:-default}] rc $rc: median tokens/s (steps 6..) $tps; losses $(head -n 4 "$out/loss_$name.txt" | tr '\n' ' ')" \
    "$(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-200)"
}
export TTMO=${TTMO:-30}
if [[ -z ${NOTRAIN:-} ]]; then
  left "train old" "$TTMO" && train_run g4old
  left "train wo" "$TTMO" && train_run g4wo $WO
  [[ -s $out/loss_g4old.txt && -s $out/loss_g4wo.txt ]] &&
    ldiff=$(paste "$out/loss_g4old.txt" "$out/loss_g4wo.txt" | awk '{d = $1 - $2; if (d < 0) d = -d; r = d / ($1 > 0 ? $1 : 1);
      if (d > m) m = d; if (r > mr) mr = r} END {printf "%.2g (relative %.2g) over %d steps", m, mr, NR}')
fi
ttps="?"
if [[ -z ${NOTORCH:-} && -f $dir/data/torch_gpt.py ]] && left "torch" 25; then
  TF32=1 timeout 25 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager (torch_gpt.py --compile 0) rc $?: $(tail -1 "$out/torch.log" | cut -c1-200)"
  ttps=$(grep -oE 'tok_s=[0-9]+' "$out/torch.log" | tail -1 | cut -d= -f2)
fi
frc="not run"
if [[ -z ${NOTEST:-} && -z ${NOFULL:-} ]] && left "full test" 15; then
  ftmo=$((lim - SECONDS))
  # shellcheck disable=SC2086  # lb: empty or stdbuf's words
  env $WO TZ_TEST_FILTER='test_attention_sgmat' timeout "$ftmo" $lb "$dir/bin/test_webgpu_ops" >"$out/test_full_wo.log" 2>&1
  frc="rc $? (limit ${ftmo} s): $(grep -c 'worst err/bound' "$out/test_full_wo.log") checks, largest worst err/bound $(grep -oE 'worst err/bound [0-9.]+' "$out/test_full_wo.log" |
    awk '$3 > m {m = $3} END {print m + 0}'), $(grep -c '^attention_sgmat' "$out/test_full_wo.log") cases started"
  grep -E 'FAIL|rror' "$out/test_full_wo.log" | grep -v '^webgpu:' | head -n 4 | cut -c1-160 | tee -a "$sum"
  say "full test_attention_sgmat under WO=1: $frc"
fi

ms() { awk -v t="${1:-0}" 'BEGIN {if (t ~ /^[0-9.]+$/ && t + 0 > 0) printf "%.1f", 16384000 / t; else print "?"}'; } # tokens/s -> ms/step
say "===== wgatt4 table (branch wgatt4; $(date -u +%H:%M) UTC, ${SECONDS}s) ====="
for k in wo_gqa wo_mq wo_t9 wo_t300 wo_128 wo_kreg wo_nsg2 old_mq; do
  [[ -n ${TRES[$k]:-} ]] && say "test_attention_sgmat $k: ${TRES[$k]}"
done
say "full test_attention_sgmat under WO=1: $frc"
say "bench_webgpu attention 16 1024 HD, ms per fwd+bwd of one layer (GPU timestamps):"
say "  var      hd    fwd   dkdv     dq      D   conv    sum   (old: main's staged kernels; wo: TEZGAH_WEBGPU_ATTN_SG_WO=1)"
for k in old.64 wo.64 wokreg.64 wonsg2.64 old.128 wo.128; do
  [[ -n ${ROW[$k]:-} ]] && say "  ${ROW[$k]}"
done
say "GPT-2 124M f16 B16 T1024 tokens/s (median steps 6..): old ${TPS[g4old]:-?} ($(ms "${TPS[g4old]:-0}") ms/step)" \
  "vs wo ${TPS[g4wo]:-?} ($(ms "${TPS[g4wo]:-0}") ms/step); losses differ by ${ldiff:-?};" \
  "PyTorch bf16 eager ${ttps:-?} ($(ms "${ttps:-0}") ms/step); target 200000 (81.9 ms/step)"
say "end ${SECONDS}s"
