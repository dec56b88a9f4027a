#!/usr/bin/env bash
# WebGPU subgroup-matrix attention, written out (issue 22, branch wgatt4), round 2: the new
# defaults on the H200 in one short device call (<= LIM, 60 s warm). The defaults now: dK/dV
# written out (fa_sg_dkdv_wo.wgsl, head_dim 64 and 128, 4 subgroups), the one-pass forward
# written out with 2 subgroups per workgroup (fa_sg_fwd_wo.wgsl; head_dim 64), head_dim 128's
# two-pass forward fa_sg_fwd_st as before; TEZGAH_WEBGPU_ATTN_SG_WO=0 gives main's former staged
# kernels (the "old" rows). Round 1's longer comparison (WO=1 against main, KREG, NSG=2,
# training, the peer) is this file at f3ff9e3; the lead's call of 2026-12-03 07:35 ran it.
# Parts, each under `timeout`, each started only while it would end within LIM:
#  1. `tezgah info`'s adapter and attention lines (each bench row says the backend's choice);
#  2. correctness on the real builtins with the defaults, test_webgpu_ops' test_attention_sgmat
#     one case per process (TZ_TEST_SG_CASE="B,T,n_head,n_kv_head,head_dim"): GQA 2 T 70
#     (several tiles per key block), multi-query T 130, T 9 (below one matrix), T 300 (five
#     blocks), head_dim 128 T 133; then head_dim 128 with the one-pass forward (ONEPASS=1: the
#     written-out forward at 128, the candidate row of part 3);
#  3. `TEZGAH_PROFILE=1 bench_webgpu attention 16 1024 HD` (B 16, n_head 768 / HD, T 1024), ms
#     per forward + backward of one layer (GPU timestamps): old (WO=0) and default at head_dim 64
#     and 128; two candidate rows: "oldf2" (WO=0 with the forward at 2 subgroups,
#     TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=2: whether the forward's gain is the written-out form or the
#     subgroup count) and "def1p" at 128 (ONEPASS=1: the written-out one-pass forward at 128
#     against the two-pass default);
#  4. the table (last).
#   bash scripts/device_wgatt4.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`). Writes $OUT/ (summary.log and every log). LIM,
#   NOTEST / NOBENCH / NOCAND=1 skip parts (NOCAND: the candidate rows and test); DRY=1 for a
#   local run on lavapipe (the tests skip there: no subgroup matrices, and say so).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_wgatt4 /tmp/wgatt4_out "" "$@"
device_dawn_node
lim=${LIM:-60}
timeout 20 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|attention)' | cut -c1-220 | tee -a "$sum"
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}

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
TCASES=(d_gqa d_mq d_t9 d_t300 d_128)
if [[ -z ${NOTEST:-} ]]; then
  left "test d_gqa" 12 && tcase d_gqa "2,70,4,2,64" 12
  left "test d_mq" 12 && tcase d_mq "3,130,4,1,64" 12
  left "test d_t9" 12 && tcase d_t9 "2,9,2,2,64" 12
  left "test d_t300" 12 && tcase d_t300 "1,300,2,1,64" 12
  left "test d_128" 12 && tcase d_128 "2,133,2,2,128" 12
  if [[ -z ${NOCAND:-} ]]; then
    TCASES+=(d_128_1p)
    left "test d_128_1p" 12 && tcase d_128_1p "2,133,2,2,128" 12 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1
  fi
fi

venv() { # a bench variant's environment
  case $1 in
    old) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_WO=0 ;;            # main's former staged kernels
    oldf2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_WO=0 TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=2 ;;
    def1p) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 ;;
    *) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 ;; # def: the defaults
  esac
}
declare -A ROW
bench_run() { # v hd
  local v=$1 hd=$2 brc
  # shellcheck disable=SC2046,SC2086  # the variant's assignments and lb, word-split on purpose
  env $(venv "$v") TEZGAH_PROFILE=1 timeout 15 $lb "$dir/bin/bench_webgpu" attention 16 1024 "$hd" >"$out/bench_${v}_$hd.log" 2>&1
  brc=$?
  ((brc == 0)) || say "  [$v $hd] rc $brc: $(grep -iE 'error|abort' "$out/bench_${v}_$hd.log" | head -1 | cut -c1-200)"
  while read -r h f k q d p s bf bb; do
    ROW[$v.$h]=$(printf '%-7s %3s %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f' "$v" "$h" "$f" "$k" "$q" "$d" "$p" "$s")
    say "  ${ROW[$v.$h]}  (bench wall fwd/bwd $bf/$bb)"
  done < <(bench_rows "$out/bench_${v}_$hd.log")
  # the backend's attention choice, once per variant (tz_webgpu_describe's line in the bench's log)
  say "  [$v] $(grep -m1 -oE 'attention on subgroup matrices[^;]*' "$out/bench_${v}_$hd.log" | cut -c1-200)"
}
BROWS=(old.64 def.64 old.128 def.128)
if [[ -z ${NOBENCH:-} ]]; then
  for v in old def; do left "bench $v 64" 6 && bench_run "$v" 64; done
  for v in old def; do left "bench $v 128" 6 && bench_run "$v" 128; done
  if [[ -z ${NOCAND:-} ]]; then
    BROWS+=(oldf2.64 def1p.128)
    left "bench oldf2 64" 6 && bench_run oldf2 64
    left "bench def1p 128" 6 && bench_run def1p 128
  fi
fi

say "===== wgatt4 round 2 table (branch wgatt4; $(date -u +%H:%M) UTC, ${SECONDS}s) ====="
for k in "${TCASES[@]}"; do
  [[ -n ${TRES[$k]:-} ]] && say "test_attention_sgmat $k: ${TRES[$k]}"
done
say "bench_webgpu attention 16 1024 HD, ms per fwd+bwd of one layer (GPU timestamps):"
say "  var      hd    fwd   dkdv     dq      D   conv    sum   (old: TEZGAH_WEBGPU_ATTN_SG_WO=0; def: the defaults)"
for k in "${BROWS[@]}"; do
  [[ -n ${ROW[$k]:-} ]] && say "  ${ROW[$k]}"
done
say "  (oldf2: WO=0 with TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=2; def1p: the defaults with TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1)"
say "  expected from the 07:35 call: def 64 ~0.48 1.30 0.14 0.06 0.21 ~2.19 vs old 2.684; def 128 ~2.13 vs old 2.537"
say "end ${SECONDS}s"
