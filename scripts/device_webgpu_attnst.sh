#!/usr/bin/env bash
# Staged subgroup-matrix flash attention on the GPU machine (branch attnst, issue 22 item 4), one
# device call, at most ~200 s warm (each part has a time limit; a part is skipped once the script
# has run LIM seconds, default 160; worst case ~200 s):
#  1. `tezgah info` (adapter, subgroup-matrix configurations) and the backend's description line;
#  2. test_webgpu_ops' test_attention_sgmat (forward, lse and every backward output vs the CPU:
#     head_dim 64/128, causal, GQA, T off the blocks, f32 and f16 out, chunked dq, both grid
#     orders, the one-pass forward) with every kernel staged (TEZGAH_WEBGPU_ATTN_SG_STAGE=1: the
#     staged backward's only check, lavapipe cannot compile its stand-in) and every kernel direct
#     (TEZGAH_WEBGPU_ATTN_SG_STAGE=0); each line its worst err/bound;
#  3. `TEZGAH_PROFILE=1 bench_webgpu attention 16 1024` (B 16, T 1024, n_head = 768 / head_dim,
#     head_dim 64 (GPT-2 124M: C 768, H 12), 32 (fp32 kernels in every mode) and 128) per variant:
#       sf2  staged fwd, direct bwd (the default of TEZGAH_WEBGPU_ATTN_SGMAT=1)
#       st2  staged fwd (two-pass) and bwd      st1  staged, one-pass forward
#       dir2 direct (the fasgmat kernels)       (dir1 direct one-pass, st2n2 staged with 2
#                                               subgroups: VARIANTS only)
#       fp32 TEZGAH_WEBGPU_ATTN_SGMAT=0: the fp32 flash kernels (main's default)
#     and a table of the kernels' ms per forward + backward pair: attention_fwd, attention_bwd_dkdv,
#     attention_bwd_dq, attention_bwd_d, conversions (the f16 copies, attention_to_f16; the fp32
#     path's to_f16 / to_f32 of its output), their sum; the best
#     forward (attention_fwd) and the best backward (dkdv + dq) at head_dim 64 are combined;
#  4. GPT-2 124M B16 T1024 `tezgah train --backend webgpu --precision f16 --profile`, STEPS (8)
#     steps, with that best combination and with the default (fp32 flash attention): median
#     tokens/s of steps 6.. and the profile's attention rows;
#  5. a summary table (summary.log).
#   bash scripts/device_webgpu_attnst.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`: bin/ (tezgah, test_webgpu_ops, bench_webgpu,
#   libtz_napi_stub.so), lib/, dawn/dawn.node.xz, data/train.bin). Writes $OUT/ (summary.log and
#   every log). STEPS, TTMO (per train run, default 40 s), LIM, NOTEST=1 / NOBENCH=1 / NOTRAIN=1
#   skip parts; VARIANTS="st2 st1 ..." picks the bench variants. DRY=1 runs the logic locally
#   (lavapipe: the subgroup-matrix parts then report "not run here"; with
#   TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1 the tests run the software stand-in, slowly).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_attnst /tmp/attnst_out "" "$@"
device_dawn_node
lim=${LIM:-160}
timeout 60 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (library|adapter|precision|ShaderF16|subgroup-matrix)' | tee -a "$sum"
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
left() { ((SECONDS < lim)) || { say "skipped ($1): $SECONDS s past LIM $lim"; return 1; }; }

# 2. the tests, staged then direct
declare -A TRC
if [[ -z ${NOTEST:-} ]]; then
  for v in st dir; do
    left "test $v" || continue
    stage=1 tmo=50
    [[ $v == dir ]] && stage=0 tmo=35
    TZ_TEST_FILTER='test_attention_sgmat' TEZGAH_WEBGPU_ATTN_SG_STAGE=$stage timeout $tmo $lb "$dir/bin/test_webgpu_ops" \
      >"$out/test_$v.log" 2>&1
    TRC[$v]=$?
    [[ $v == st ]] && grep -E '^webgpu:' "$out/test_$v.log" | head -1 | cut -c1-300 | tee -a "$sum"
    grep -vE '^webgpu:' "$out/test_$v.log" | head -60 | sed "s/^/  [$v] /" | tee -a "$sum"
    say "test_attention_sgmat [$v: TEZGAH_WEBGPU_ATTN_SG_STAGE=$stage] rc ${TRC[$v]}"
  done
fi

# 3. the kernels alone: per variant and head_dim, the profile's attention rows (ms per fwd + bwd)
venv() { # the environment of a variant
  case $1 in
    sf2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=2 ;; # the default: staged forward only
    st2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=1 ;;
    st1) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 ;;
    dir2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=0 ;;
    dir1) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=0 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 ;;
    st2n2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=1 TEZGAH_WEBGPU_ATTN_SG_NSG=2 ;;
    best) # the best forward variant's form with the best backward variant's staging
      local s=0 o=0
      [[ $bestf == s* && $bestb == st* ]] && s=1
      [[ $bestf == s* && $bestb != st* ]] && s=2
      [[ $bestf != s* && $bestb == st* ]] && s=3
      [[ $bestf == *1 ]] && o=1
      echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_STAGE=$s TEZGAH_WEBGPU_ATTN_SG_ONEPASS=$o ;;
    *) echo TEZGAH_WEBGPU_ATTN_SGMAT=0 ;;
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
best="" bestv=1e9 bestf="" bestfv=1e9 bestb="" bestbv=1e9
better() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a > 0 && a < b)}'; }
if [[ -z ${NOBENCH:-} ]]; then
  say "bench_webgpu attention 16 1024, ms per forward + backward (GPU timestamps; bench fwd/bwd: wall ms):"
  say "$(printf '  %-5s %3s %8s %8s %8s %8s %8s %8s  %s' variant hd fwd dkdv dq D conv sum 'bench fwd/bwd')"
  for v in ${VARIANTS:-sf2 st2 st1 dir2 fp32}; do
    left "bench $v" || continue
    # shellcheck disable=SC2046  # the variant's assignments, word-split on purpose
    env $(venv $v) TEZGAH_PROFILE=1 timeout 40 $lb "$dir/bin/bench_webgpu" attention 16 1024 >"$out/bench_$v.log" 2>&1
    brc=$?
    ((brc == 0)) || say "  [$v] rc $brc: $(grep -iE 'error' "$out/bench_$v.log" | head -1 | cut -c1-200)"
    while read -r hd f k q d p s bf bb; do
      [[ $hd == 32 ]] && continue # fp32 kernels in every mode
      say "$(printf '  %-5s %3s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f  %s/%s' "$v" "$hd" "$f" "$k" "$q" "$d" "$p" "$s" "$bf" "$bb")"
      if [[ $hd == 64 && $v != fp32 && $brc == 0 ]]; then
        better "$s" "$bestv" && best=$v bestv=$s
        better "$f" "$bestfv" && bestf=$v bestfv=$f
        kq=$(awk -v a="$k" -v b="$q" 'BEGIN {print a + b}')
        better "$kq" "$bestbv" && bestb=$v bestbv=$kq
      fi
    done < <(bench_rows "$out/bench_$v.log")
  done
  say "best at head_dim 64: whole ${best:-none} (${bestv} ms per fwd + bwd); forward ${bestf:-none} (${bestfv} ms);" \
    "backward ${bestb:-none} (dkdv + dq ${bestbv} ms); training runs $(venv best)"
fi

# 4. GPT-2 124M training: the best variant vs the default (fp32 flash attention)
steps=${STEPS:-8}
export TTMO=${TTMO:-40}
declare -A TPS ATT
att_rows() { # the attention rows of the last profile table in a log, then their sum
  sed -n '/ms\/step/,$p' "$1" | grep -E '^  (attention_|to_f16 \(attn out\)|to_f32 \(attn out\)|total)' |
    awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/) {l = $1; for (j = 2; j < i; j++) l = l " " $j;
         printf "    %-20s %8.3f ms/step\n", l, $i; if (l != "total") s += $i; break}}
         END {printf "    %-20s %8.3f ms/step\n", "attention sum", s}'
}
if [[ -z ${NOTRAIN:-} ]]; then
  for mode in best default; do
    left "train $mode" || continue
    if [[ $mode == best ]]; then
      [[ -n $bestf && -n $bestb ]] || { say "train best: no subgroup-matrix variant measured"; continue; }
      # shellcheck disable=SC2046
      export $(venv best)
    else
      unset TEZGAH_WEBGPU_ATTN_SGMAT TEZGAH_WEBGPU_ATTN_SG_ONEPASS TEZGAH_WEBGPU_ATTN_SG_STAGE TEZGAH_WEBGPU_ATTN_SG_NSG
    fi
    train_gpt2 "train_$mode" f16 "$steps" --profile
    TPS[$mode]=$tps
    ATT[$mode]=$(att_rows "$out/train_$mode.log" | tail -1 | awk '{print $3}')
    say "train [$mode$([[ $mode == best ]] && echo ": $(venv best)")] rc $rc: median tokens/s (steps 6..) $tps;" \
      "$(grep -iE 'error' "$out/train_$mode.log" | head -1 | cut -c1-200)"
    att_rows "$out/train_$mode.log" | tee -a "$sum"
  done
  unset TEZGAH_WEBGPU_ATTN_SGMAT TEZGAH_WEBGPU_ATTN_SG_ONEPASS TEZGAH_WEBGPU_ATTN_SG_STAGE TEZGAH_WEBGPU_ATTN_SG_NSG
  [[ -s $out/loss_train_best.txt && -s $out/loss_train_default.txt ]] &&
    paste "$out/loss_train_best.txt" "$out/loss_train_default.txt" |
    awk '{printf "  step %2d  loss best %.5f  default %.5f  diff %+.5f\n", NR, $1, $2, $1 - $2}' | tee -a "$sum"
fi
say "SUMMARY tests rc staged ${TRC[st]:-?} direct ${TRC[dir]:-?}; best fwd ${bestf:-?} (${bestfv} ms) bwd ${bestb:-?} (${bestbv} ms) hd64;" \
  "train tokens/s best ${TPS[best]:-?} default ${TPS[default]:-?}; attention ms/step best ${ATT[best]:-?} default ${ATT[default]:-?}"
say "end ${SECONDS}s"
