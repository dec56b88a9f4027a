#!/usr/bin/env bash
# WebGPU subgroup-matrix attention, round 4 (issue 22, branch wgattn): this branch's changes to
# the staged kernels against main's forms, from the same binary (main's are the switches' 0
# values), on the H200 in one device call of <= ~100 s warm:
#   F32IN TEZGAH_WEBGPU_ATTN_SG_F32IN=1 (opt-in since 04:53, slower): the staged forward and dK/dV read q, k, v from
#         the fp32 tensors and convert while staging, so the fa_sg_pack passes
#         ("attention_to_f16", the conv column) go; 0 = main's (the packs)
#   LAZY  TEZGAH_WEBGPU_ATTN_SG_LAZY=1 (default): the one-pass forward's lazy output rescale
#   DB    TEZGAH_WEBGPU_ATTN_SG_DB=1 (default): dK/dV's Q / dO tiles double-buffered
#   EWX   TEZGAH_WEBGPU_ATTN_SG_EWX=1 (default): dK/dV's element-wise passes with the scales
#         folded (exp2 of one fma; dS's scale in P's register copy); 0 = main's
#   DQV4  TEZGAH_WEBGPU_ATTN_SG_DQV4=1 (default): the dq sums (the dq column) four floats per
#         thread with 16-byte loads; 0 = main's (one per thread)
# Parts, each with a time limit, each started only while it would end within LIM (100) s:
#  1. `tezgah info`'s adapter and attention lines;
#  2. test_webgpu_ops' test_attention_sgmat with the defaults (every subgroup-matrix kernel vs
#     the CPU: head_dim 64 / 128, both forward forms, causal, GQA, T off the blocks, f16 out,
#     chunked dq, grid orders);
#  3. `TEZGAH_PROFILE=1 bench_webgpu attention 16 1024 HD` (B 16, n_head 768 / HD, T 1024),
#     ms per forward + backward of one layer (GPU timestamps): main (every switch 0), def
#     (nothing set), pack (F32IN=0 set: since bb82983 the default, so the same as def), f32l (F32IN=2: the
#     conversion at the loads, halves in the prefetch registers) at head_dim 64 and 128;
#  4. GPT-2 124M f16 B16 T1024, STEPS (10) steps, median tokens/s of steps 6..: default vs
#     main's, the losses side by side;
#  5. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1), 12 steps; then the
#     training run with pack's switch (F32IN=0) while time is left;
#  6. the table (last).
#   bash scripts/device_webgpu_attn3.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/ (summary.log and every log). LIM,
#   STEPS, TTMO (per train run, default 30 s), NOTEST / NOTRAIN / NOTORCH / NOBENCH=1 skip parts;
#   DRY=1 TRAIN_ARGS="--n-layer 2 --d-model 128 -B 2 -T 128" for a local run on lavapipe.
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_attn3 /tmp/attn3_out "" "$@"
device_dawn_node
lim=${LIM:-100}
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|attention)' | cut -c1-220 | tee -a "$sum"
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}
read -ra targs <<<"${TRAIN_ARGS:-}"
MAIN="TEZGAH_WEBGPU_ATTN_SG_F32IN=0 TEZGAH_WEBGPU_ATTN_SG_LAZY=0 TEZGAH_WEBGPU_ATTN_SG_DB=0 TEZGAH_WEBGPU_ATTN_SG_EWX=0"
MAIN+=" TEZGAH_WEBGPU_ATTN_SG_DQV4=0"

trc="?"
if [[ -z ${NOTEST:-} ]] && left "test" 40; then
  # shellcheck disable=SC2086  # lb: empty or stdbuf's words
  TZ_TEST_FILTER='test_attention_sgmat' timeout 40 $lb "$dir/bin/test_webgpu_ops" >"$out/test.log" 2>&1
  trc=$?
  tchk="$(grep -c 'worst err/bound' "$out/test.log") checks, largest worst err/bound $(grep -oE 'worst err/bound [0-9.]+' "$out/test.log" |
    awk '$3 > m {m = $3} END {print m + 0}')"
  grep -E 'FAIL|SKIP|rror' "$out/test.log" | grep -v '^webgpu:' | head -n 6 | cut -c1-160 | tee -a "$sum"
  say "test_attention_sgmat rc $trc: $tchk"
fi

venv() { # a bench variant's environment
  case $1 in
    main) echo "TEZGAH_WEBGPU_ATTN_SGMAT=1 $MAIN" ;;
    pack) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_F32IN=0 ;;
    f32l) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_F32IN=2 ;;
    *) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 ;; # def
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
    ROW[$v.$h]=$(printf '%-6s %3s %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f' "$v" "$h" "$f" "$k" "$q" "$d" "$p" "$s")
    say "  ${ROW[$v.$h]}  (bench wall fwd/bwd $bf/$bb)"
  done < <(bench_rows "$out/bench_${v}_$hd.log")
}
if [[ -z ${NOBENCH:-} ]]; then
  for v in main def pack f32l; do left "bench $v 64" 8 && bench_run "$v" 64; done
  for v in main def pack f32l; do left "bench $v 128" 8 && bench_run "$v" 128; done
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
  say "train $name [${*:-default}] rc $rc: median tokens/s (steps 6..) $tps $(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-200)"
}
export TTMO=${TTMO:-30}
if [[ -z ${NOTRAIN:-} ]]; then
  left "train def" "$TTMO" && train_run a4def
  # shellcheck disable=SC2086  # MAIN: five assignments
  left "train main" "$TTMO" && train_run a4main $MAIN
  [[ -s $out/loss_a4def.txt && -s $out/loss_a4main.txt ]] &&
    ldiff=$(paste "$out/loss_a4def.txt" "$out/loss_a4main.txt" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d}
      END {printf "%.2g over %d steps", m, NR}')
fi
ttps="?"
if [[ -z ${NOTORCH:-} && -f $dir/data/torch_gpt.py ]] && left "torch" 25; then
  TF32=1 timeout 25 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager (torch_gpt.py --compile 0) rc $?: $(tail -1 "$out/torch.log" | cut -c1-200)"
  ttps=$(grep -oE 'tok_s=[0-9]+' "$out/torch.log" | tail -1 | cut -d= -f2)
fi
[[ -z ${NOTRAIN:-} ]] && left "train pack" 16 && train_run a4pack TEZGAH_WEBGPU_ATTN_SG_F32IN=0

ms() { awk -v t="${1:-0}" 'BEGIN {if (t ~ /^[0-9.]+$/ && t + 0 > 0) printf "%.1f", 16384000 / t; else print "?"}'; } # tokens/s -> ms/step
say "===== attn4 table (branch wgattn; $(date -u +%H:%M) UTC, ${SECONDS}s) ====="
say "test_attention_sgmat (defaults) rc $trc: ${tchk:-not run}"
say "bench_webgpu attention 16 1024 HD, ms per fwd+bwd of one layer (GPU timestamps):"
say "  var     hd    fwd   dkdv     dq      D   conv    sum   (main: F32IN LAZY DB EWX DQV4 0; pack: F32IN 0; f32l: 2)"
for k in main.64 def.64 pack.64 f32l.64 main.128 def.128 pack.128 f32l.128; do
  [[ -n ${ROW[$k]:-} ]] && say "  ${ROW[$k]}"
done
say "GPT-2 124M f16 B16 T1024 tokens/s (median steps 6..10): default ${TPS[a4def]:-?} ($(ms "${TPS[a4def]:-0}") ms/step)" \
  "vs main's (F32IN LAZY DB EWX DQV4 0) ${TPS[a4main]:-?} ($(ms "${TPS[a4main]:-0}") ms/step) vs pack (F32IN 0)" \
  "${TPS[a4pack]:-?} ($(ms "${TPS[a4pack]:-0}") ms/step); losses def vs main differ by ${ldiff:-?};" \
  "PyTorch bf16 eager ${ttps:-?} ($(ms "${ttps:-0}") ms/step); target 200000 (81.9 ms/step)"
say "end ${SECONDS}s"
