#!/usr/bin/env bash
# Subgroup-matrix flash attention as the H200's default (branch attn22, issue 22 item 4), one
# device call, at most ~240 s warm: every part has its own time limit, and a part starts only if
# it would end by then within LIM seconds (default 230) of the start; the must-haves run first,
# the optional ones (marked *) after them while time is left (typically ~150 s for the first):
#  1. `tezgah info` (adapter, subgroup-matrix configurations, the attention choice);
#  2. test_webgpu_ops' test_attention_sgmat (forward, lse and every backward output vs the CPU:
#     head_dim 64/128, causal, GQA, T off the blocks, f32 and f16 out, chunked dq, both grid
#     orders, both forward forms, head_dim 32's clean fallback) with the default kernels (every
#     kernel staged: TEZGAH_WEBGPU_ATTN_SG_STAGE unset), *every kernel direct (=0) and *the
#     sgkr variant below; each line its worst err/bound;
#  3. `TEZGAH_PROFILE=1 bench_webgpu attention 16 1024` (B 16, T 1024, n_head = 768 / head_dim,
#     head_dim 64, 32 and 128; 32 is the fp32 kernels in every mode: not shown) per variant:
#       sg    TEZGAH_WEBGPU_ATTN_SGMAT=1: the subgroup-matrix kernels forced, staged, one-pass
#             forward (the default's kernels at head_dim 64)
#       fp32  TEZGAH_WEBGPU_ATTN_SGMAT=0: the fp32 flash kernels
#       *def  nothing set: the default (head_dim 64 sg, 128 fp32 unless changed)
#       *sgkr sg with V's and K's left matrices of the dK/dV kernel in registers
#             (TEZGAH_WEBGPU_ATTN_SG_VST=0 TEZGAH_WEBGPU_ATTN_SG_KREG=1: 9 KB less workgroup
#             memory at head_dim 64, no K matrix loads in Sᵀ = K·Qᵀ)
#       *sgv0 sg with V's left matrices in registers only (TEZGAH_WEBGPU_ATTN_SG_VST=0)
#       *sg2p the two-pass staged forward (TEZGAH_WEBGPU_ATTN_SG_ONEPASS=0)
#     and a table of the kernels' ms per forward + backward pair: attention_fwd, attention_bwd_dkdv,
#     attention_bwd_dq, attention_bwd_d, conversions (the f16 copies, attention_to_f16; the fp32
#     path's to_f16 / to_f32 of its output), their sum;
#  4. GPT-2 124M B16 T1024 `tezgah train --backend webgpu --precision f16 --profile`, STEPS (8)
#     steps, the default vs TEZGAH_WEBGPU_ATTN_SGMAT=0: median tokens/s of steps 6.., the profile's
#     attention rows, the losses side by side;
#  5. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1) at B 16 T 1024, 12 steps;
#  6. a summary line.
#   bash scripts/device_webgpu_attnst.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`: bin/ (tezgah, test_webgpu_ops, bench_webgpu,
#   libtz_napi_stub.so), lib/, dawn/dawn.node.xz, data/train.bin, data/torch_gpt.py). Writes
#   $OUT/ (summary.log and every log). STEPS, TTMO (per train run, default 40 s), LIM,
#   NOTEST=1 / NOBENCH=1 / NOTRAIN=1 / NOTORCH=1 skip parts; VARIANTS="sg fp32 ..." picks the
#   bench variants (default "sg fp32", then "def sg2p" while time is left). DRY=1 runs the
#   logic locally (lavapipe: the subgroup-matrix parts then report "not run here").
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_attnst /tmp/attnst_out "" "$@"
device_dawn_node
lim=${LIM:-230}
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix|attention)' | tee -a "$sum"
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}

declare -A TRC
test_run() { # v: the test with the default kernels (st), every kernel direct (dir), or the
  # staged dK/dV with V and K's left matrices in registers (kr: the sgkr bench variant)
  local v=$1 stage tmo=60 kr=""
  stage=$([[ $v == dir ]] && echo 0 || echo "")
  [[ $v == dir ]] && tmo=35
  [[ $v == kr ]] && tmo=40 kr="TEZGAH_WEBGPU_ATTN_SG_VST=0 TEZGAH_WEBGPU_ATTN_SG_KREG=1"
  # shellcheck disable=SC2086  # kr: assignments, word-split on purpose
  env ${stage:+TEZGAH_WEBGPU_ATTN_SG_STAGE=$stage} $kr TZ_TEST_FILTER='test_attention_sgmat' timeout $tmo $lb \
    "$dir/bin/test_webgpu_ops" >"$out/test_$v.log" 2>&1
  TRC[$v]=$?
  [[ $v == st ]] && grep -E '^webgpu:' "$out/test_$v.log" | head -1 | cut -c1-400 | tee -a "$sum"
  grep -vE '^webgpu:' "$out/test_$v.log" | head -60 | sed "s/^/  [$v] /" | tee -a "$sum"
  say "test_attention_sgmat [$v: TEZGAH_WEBGPU_ATTN_SG_STAGE=${stage:-unset}${kr:+ $kr}] rc ${TRC[$v]}"
}

venv() { # the environment of a bench variant
  case $1 in
    sg) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 ;;
    sg2p) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=0 ;;
    sgv0) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_VST=0 ;;
    sgkr) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_VST=0 TEZGAH_WEBGPU_ATTN_SG_KREG=1 ;;
    dir) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=0 ;;
    fp32) echo TEZGAH_WEBGPU_ATTN_SGMAT=0 ;;
    *) echo TZ_DEFAULT=1 ;; # def: nothing of ours set
  esac
}
# a bench log's per-head_dim lines: hd fwd dkdv dq d conv sum (ms per pair; conv: the f16 copies
# of q/k/v (attention_to_f16) and the fp32 path's conversions of its out (to_f16 / to_f32 (attn
# out))), fwd_ms bwd_ms (the bench's own wall timing). Needs stdout line-buffered: each head_dim's
# table (stderr) comes before its "attention B=" line (stdout).
bench_rows() {
  awk '$1 ~ /^attention_(fwd|bwd_dkdv|bwd_dq|bwd_d)$/ && $2 ~ /^[0-9.]+$/ {r[$1] = $2}
       $1 == "attention_to_f16" && $2 ~ /^[0-9.]+$/ {cv += $2}
       $1 ~ /^to_f(16|32)$/ && $2 == "(attn" && $4 ~ /^[0-9.]+$/ {cv += $4}
       /^attention B=/ {hd = $5; sub(/hd=/, "", hd); f = $9; b = $14;
         s = r["attention_fwd"] + r["attention_bwd_dkdv"] + r["attention_bwd_dq"] + r["attention_bwd_d"] + cv;
         printf "%s %s %s %s %s %s %.3f %s %s\n", hd, r["attention_fwd"] + 0, r["attention_bwd_dkdv"] + 0, r["attention_bwd_dq"] + 0,
           r["attention_bwd_d"] + 0, cv + 0, s, f, b; delete r; cv = 0}' "$1"
}
declare -A SUMS
bench_run() { # v
  local v=$1 brc
  # shellcheck disable=SC2046  # the variant's assignments, word-split on purpose
  env $(venv "$v") TEZGAH_PROFILE=1 timeout 40 $lb "$dir/bin/bench_webgpu" attention 16 1024 >"$out/bench_$v.log" 2>&1
  brc=$?
  ((brc == 0)) || say "  [$v] rc $brc: $(grep -iE 'error|abort' "$out/bench_$v.log" | head -1 | cut -c1-200)"
  grep -E 'TEZGAH_WEBGPU_ATTN_SGMAT=1, but' "$out/bench_$v.log" | head -2 | sed "s/^/  [$v] /" | tee -a "$sum"
  while read -r hd f k q d p s bf bb; do
    [[ $hd == 32 ]] && continue # fp32 kernels in every mode
    SUMS[$v.$hd]=$s
    say "$(printf '  %-5s %3s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f  %s/%s' "$v" "$hd" "$f" "$k" "$q" "$d" "$p" "$s" "$bf" "$bb")"
  done < <(bench_rows "$out/bench_$v.log")
}

steps=${STEPS:-8}
export TTMO=${TTMO:-40}
declare -A TPS ATT
att_rows() { # the attention rows of the last profile table in a log, then their sum
  sed -n '/ms\/step/,$p' "$1" | grep -E '^  (attention_|to_f16 \(attn out\)|to_f32 \(attn out\)|total)' |
    awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/) {l = $1; for (j = 2; j < i; j++) l = l " " $j;
         printf "    %-20s %8.3f ms/step\n", l, $i; if (l != "total") s += $i; break}}
         END {printf "    %-20s %8.3f ms/step\n", "attention sum", s}'
}
train_run() { # mode: default (nothing set) or fp32 (TEZGAH_WEBGPU_ATTN_SGMAT=0)
  local mode=$1
  unset TEZGAH_WEBGPU_ATTN_SGMAT TEZGAH_WEBGPU_ATTN_SG_ONEPASS TEZGAH_WEBGPU_ATTN_SG_STAGE TEZGAH_WEBGPU_ATTN_SG_NSG
  [[ $mode == fp32 ]] && export TEZGAH_WEBGPU_ATTN_SGMAT=0
  train_gpt2 "train_$mode" f16 "$steps" --profile
  unset TEZGAH_WEBGPU_ATTN_SGMAT
  TPS[$mode]=$tps
  ATT[$mode]=$(att_rows "$out/train_$mode.log" | tail -1 | awk '{print $3}')
  say "train [$mode$([[ $mode == fp32 ]] && echo ": TEZGAH_WEBGPU_ATTN_SGMAT=0")] rc $rc: median tokens/s (steps 6..) $tps;" \
    "$(grep -E '^webgpu: ' "$out/train_$mode.log" | head -1 | grep -oE '(attention on subgroup matrices|attention: fp32 flash)[^;]*' | cut -c1-160)" \
    "$(grep -iE 'error' "$out/train_$mode.log" | head -1 | cut -c1-200)"
  att_rows "$out/train_$mode.log" | tee -a "$sum"
}

# the must-haves first: the default's test, the two bench variants, the two training runs, the peer
[[ -n ${NOTEST:-} ]] || { left "test st" 60 && test_run st; }
if [[ -z ${NOBENCH:-} ]]; then
  say "bench_webgpu attention 16 1024, ms per forward + backward (GPU timestamps; bench fwd/bwd: wall ms):"
  say "$(printf '  %-5s %3s %8s %8s %8s %8s %8s %8s  %s' variant hd fwd dkdv dq D conv sum 'bench fwd/bwd')"
  for v in ${VARIANTS:-sg fp32}; do left "bench $v" 40 && bench_run "$v"; done
fi
if [[ -z ${NOTRAIN:-} ]]; then
  for mode in default fp32; do left "train $mode" "$TTMO" && train_run "$mode"; done
  [[ -s $out/loss_train_default.txt && -s $out/loss_train_fp32.txt ]] &&
    paste "$out/loss_train_default.txt" "$out/loss_train_fp32.txt" |
    awk '{printf "  step %2d  loss default %.5f  fp32-attention %.5f  diff %+.5f\n", NR, $1, $2, $1 - $2}' | tee -a "$sum"
fi
if [[ -z ${NOTORCH:-} && -f $dir/data/torch_gpt.py ]] && left "torch" 60; then
  TF32=1 timeout 60 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager (torch_gpt.py --compile 0) rc $?:"
  tail -3 "$out/torch.log" | sed 's/^/  /' | tee -a "$sum"
fi
# then the optional parts while time is left
[[ -n ${NOTEST:-} ]] || { left "test dir" 35 && test_run dir; }
[[ -n ${NOTEST:-} ]] || { left "test kr" 40 && test_run kr; }
if [[ -z ${NOBENCH:-} && -z ${VARIANTS:-} ]]; then
  for v in sgkr sgv0 def sg2p; do left "bench $v" 40 && bench_run "$v"; done
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.2fx", b / a; else print "?"}'; }
say "SUMMARY tests rc default ${TRC[st]:-?} direct ${TRC[dir]:-?} kr ${TRC[kr]:-?}; fwd+bwd ms hd64 sg ${SUMS[sg.64]:-?} fp32 ${SUMS[fp32.64]:-?}" \
  "($(ratio "${SUMS[sg.64]:-0}" "${SUMS[fp32.64]:-0}")), hd128 sg ${SUMS[sg.128]:-?} fp32 ${SUMS[fp32.128]:-?}" \
  "($(ratio "${SUMS[sg.128]:-0}" "${SUMS[fp32.128]:-0}")); train tokens/s default ${TPS[default]:-?} fp32-attention ${TPS[fp32]:-?};" \
  "attention ms/step default ${ATT[default]:-?} fp32 ${ATT[fp32]:-?}"
say "end ${SECONDS}s"
