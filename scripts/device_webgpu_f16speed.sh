#!/usr/bin/env bash
# WebGPU f16 training speed on the H200 (issue 22's >= 200K tokens/s, branch wgpu23), one device
# call, <= ~200 s warm. Profile first: where GPT-2 124M B16 T1024's step goes, per op and per
# matmul shape, then this branch's changes measured against the former choices: round 1 (the
# subgroup-matrix attention the default at head_dim 128 too, with the two-pass forward; vs the
# fp32 flash kernels) and round 2 (the staged kernels' element-wise passes in a bank-conflict-free
# order, TEZGAH_WEBGPU_ATTN_SG_EWF=1, the default; vs round 1's order, EWF=0). Every part has a time
# limit and starts only while it would end within LIM seconds (default 200) of the start; the
# must-haves run first, the optional ones (*) after them while time is left:
#  1. `tezgah info` (adapter, subgroup-matrix configurations, the attention choice);
#  2. (and, only if it fails, again with TEZGAH_WEBGPU_ATTN_SG_EWF=0) test_webgpu_ops' test_attention_sgmat (forward, lse and every backward output vs the CPU:
#     head_dim 64 / 128 with each one's default forward form and the other, causal, GQA, T off the
#     blocks, f16 out, chunked dq, grid orders, head_dim 32's fallback) with the default kernels;
#  3. GPT-2 124M B16 T1024 `tezgah train --backend webgpu --precision f16 --profile`, STEPS (10)
#     steps with TEZGAH_PROFILE_SHAPES=1 (the subgroup-matrix matmuls one row per M x N x K):
#     median tokens/s of steps 6.., the whole per-op table (ms/step, share, rate);
#  4. the peer, PyTorch bf16 eager (torch_gpt.py --compile 0, TF32=1) at B 16 T 1024, 12 steps;
#  4b. the same GPT-2 run without --profile (the profile's per-dispatch passes and timestamps cost
#     time): the tokens/s that issue 22's 200K target is about;
#  4c. the same with TEZGAH_WEBGPU_ATTN_SG_EWF=0 (round 1's element-wise order): round 2's A/B;
#  5. the A/B of the switches in training at n_head 6 (head_dim 128), STEPS steps: the default vs
#     EWF=0 (round 2) and vs TEZGAH_WEBGPU_ATTN_SGMAT=0 (*: round 1's, the fp32 flash kernels:
#     146.6K vs 129.2K tokens/s in call 3), median tokens/s and the losses side by side;
#  6. `TEZGAH_PROFILE=1 bench_webgpu attention 16 1024` (n_head = 768 / head_dim; head_dim 64 and
#     128; 32 runs the fp32 kernels in every mode: not shown) per variant, ms per forward +
#     backward pair of one layer: attention_fwd, _bwd_dkdv, _bwd_dq, _bwd_d, the f16 copies, sum:
#       def    nothing set (head_dim 64: one-pass forward; 128: two-pass; EWF on)
#       ewf0   TEZGAH_WEBGPU_ATTN_SG_EWF=0 (round 1's element-wise order, otherwise def)
#       fp32   TEZGAH_WEBGPU_ATTN_SGMAT=0
#      *def_2, ewf0_2: def and ewf0 again, after the others (call 3's def at head_dim 128 took
#              12.1 ms where every named variant took 2.7-2.8: its attention_bwd_d and
#              attention_to_f16 rows, the same kernels in every variant, were 4.7x and 3.9x
#              slower too, as were fp32's and nsg2's at 128: the GPU ran slow then, not a worse
#              kernel; the repeat, the D column (the control) and the SM clock column tell)
#      *sg1    TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 (one-pass at 128 too: main's sg at 128)
#      *dq1    TEZGAH_WEBGPU_ATTN_DQ_KB=1048576: the dq partial sums of all 16 sequences in one
#              chunk (427 MB at head_dim 64) where the binding allows, so dK/dV is one dispatch
#              of 3,072 workgroups, not 9 + 7 sequences' 1,728 + 1,344 (two partial last waves)
#      *nsg2   TEZGAH_WEBGPU_ATTN_SG_NSG=2 (32-key blocks, 2 subgroups per workgroup)
#      *kreg   VST=0 KREG=1 (K's left matrices in registers too)
#      *sgv0   VST=0 (V's left matrices in registers; at 128 they always are: same as def)
#      *sg2p   TEZGAH_WEBGPU_ATTN_SG_ONEPASS=0 (two-pass at 64 too; at 128 the same as def)
#     (every variant sets TEZGAH_WEBGPU_ATTN_SGMAT=1 but fp32 and def);
#  7. *test_attention_sgmat with every kernel direct (TEZGAH_WEBGPU_ATTN_SG_STAGE=0) and with the
#     kreg variant's dK/dV (VST=0 KREG=1): the tuning forms' H200 coverage;
#  8. a summary line (the key figures, last), with the bench rows whose attention_bwd_d (the same
#     kernel in every variant) took over 1.5x the fastest of its head_dim: measured while the GPU
#     ran slow. nvidia-smi samples the SM clock, power and other compute processes every 250 ms
#     ($out/smi.log): each bench row's smallest SM clock (MHz) and most compute processes seen.
#   bash scripts/device_webgpu_f16speed.sh DIR   (run tool, carry [DIR, ".gl"]; DIR from
#   `bash scripts/device_pack_webgpu.sh DIR`: bin/ (tezgah, test_webgpu_ops, bench_webgpu,
#   libtz_napi_stub.so), lib/, dawn/dawn.node.xz, data/train.bin, data/torch_gpt.py). Writes
#   $OUT/ (summary.log and every log). STEPS, TTMO (per train run, default 40 s), LIM,
#   NOTEST=1 / NOTRAIN=1 / NOTORCH=1 / NOBENCH=1 skip parts; VARIANTS="def fp32 ..." picks the
#   bench variants (default "def fp32", then the starred ones while time is left); TRAIN_ARGS
#   are appended to every training command (DRY=1 local runs on lavapipe: a small model, e.g.
#   TRAIN_ARGS="--n-layer 2 --d-model 128 -B 2 -T 128"; the A/B's n_head 6 comes after them).
# Supersedes scripts/device_webgpu_attnst.sh (removed: its tests, bench variants, training A/B and
# peer are parts 2, 4, 6 and 7 here; its head_dim 64 A/B is the profile's attention rows vs
# main's 20:15 call).
set -uo pipefail
# shellcheck source=scripts/device_webgpu_env.sh
source scripts/device_webgpu_env.sh
device_start device_webgpu_f16speed /tmp/f16speed_out "" "$@"
device_dawn_node
lim=${LIM:-200}
timeout 30 "$dir/bin/tezgah" info 2>&1 | grep -E '^  (adapter|precision|subgroup-matrix|attention)' | cut -c1-220 | tee -a "$sum"
lb=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL") # line-buffered: a timeout keeps the lines so far
# the GPU's SM clock, power and compute processes every 250 ms, for the bench rows and the log
smi_q=clocks.sm,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$smi_q --format=csv,noheader,nounits >/dev/null 2>&1 || smi_q=clocks.sm,power.draw,temperature.gpu,utilization.gpu
nvidia-smi --query-gpu=$smi_q --format=csv,noheader,nounits -lms 250 >"$out/smi.log" 2>/dev/null &
smi_pid=$!
trap 'kill "$smi_pid" 2>/dev/null' EXIT
left() { # NAME [SECONDS]: whether the part fits (SECONDS more, default 0, before LIM)
  ((SECONDS + ${2:-0} < lim)) || { say "skipped ($1): $SECONDS s run, LIM $lim"; return 1; }
}
read -ra targs <<<"${TRAIN_ARGS:-}"

declare -A TRC
test_run() { # v: the test with the default kernels (def), every kernel direct (dir:
  # TEZGAH_WEBGPU_ATTN_SG_STAGE=0) or the staged dK/dV with V's and K's left matrices in
  # registers (kr: the kreg bench variant)
  local v=$1 e="" tmo=60
  [[ $v == dir ]] && e="TEZGAH_WEBGPU_ATTN_SG_STAGE=0" tmo=35
  [[ $v == kr ]] && e="TEZGAH_WEBGPU_ATTN_SG_VST=0 TEZGAH_WEBGPU_ATTN_SG_KREG=1" tmo=40
  [[ $v == e0 ]] && e="TEZGAH_WEBGPU_ATTN_SG_EWF=0"
  # shellcheck disable=SC2086  # e: assignments, lb: empty or stdbuf's words
  env $e TZ_TEST_FILTER='test_attention_sgmat' timeout $tmo $lb "$dir/bin/test_webgpu_ops" >"$out/test_$v.log" 2>&1
  TRC[$v]=$?
  # the checks' largest worst err / bound (<= 1 passes) and cmocka's verdicts; every line in
  # $out/test_$v.log
  say "  [$v] $(grep -c 'worst err/bound' "$out/test_$v.log") checks, largest worst err/bound" \
    "$(grep -oE 'worst err/bound [0-9.]+' "$out/test_$v.log" | awk '$3 > m {m = $3} END {print m + 0}')"
  grep -E 'FAIL|SKIP|PASSED|rror' "$out/test_$v.log" | grep -v '^webgpu:' | head -n 8 | cut -c1-160 | sed "s/^/  [$v] /" | tee -a "$sum"
  say "test_attention_sgmat [$v${e:+: $e}] rc ${TRC[$v]}"
}

steps=${STEPS:-10}
export TTMO=${TTMO:-40}
declare -A TPS
train_run() { # NAME ENV... -- ARGS...: one f16 training run, its result line
  local name=$1 e=()
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do e+=("$1"); shift; done
  shift
  # shellcheck disable=SC2034  # the exports are read by train_gpt2's tezgah
  if ((${#e[@]})); then export "${e[@]}"; fi
  rm -rf "/tmp/run_$name" # a run folder left by an earlier call on this machine: tezgah refuses it
  train_gpt2 "$name" f16 "$steps" "${targs[@]}" "$@"
  for v in "${e[@]}"; do unset "${v%%=*}"; done
  TPS[$name]=$tps
  say "train $name [${e[*]:-default}${*:+ $*}] rc $rc: median tokens/s (steps 6..) $tps;" \
    "$(grep -E '^webgpu: ' "$out/$name.log" | head -1 | grep -oE '(attention on subgroup matrices|attention: fp32 flash)[^;]*' | cut -c1-150)" \
    "$(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-200)"
}

venv() { # the environment of a bench variant
  case $1 in
    fp32) echo TEZGAH_WEBGPU_ATTN_SGMAT=0 ;;
    sg1) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 ;;
    sgv0) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_VST=0 ;;
    sg2p) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_ONEPASS=0 ;;
    dq1) echo TEZGAH_WEBGPU_ATTN_DQ_KB=1048576 ;;
    ewf0 | ewf0_2) echo TEZGAH_WEBGPU_ATTN_SG_EWF=0 ;;
    nsg2) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_NSG=2 ;;
    kreg) echo TEZGAH_WEBGPU_ATTN_SGMAT=1 TEZGAH_WEBGPU_ATTN_SG_VST=0 TEZGAH_WEBGPU_ATTN_SG_KREG=1 ;;
    *) echo TZ_DEFAULT=1 ;; # def, def_2: nothing of ours set
  esac
}
# bench_rows: scripts/device_webgpu_env.sh
declare -A SUMS DS
smi_n() { wc -l <"$out/smi.log" 2>/dev/null || echo 0; }
smi_since() { # N: the smallest SM clock (MHz) and most compute processes in the samples after line N
  tail -n +$(($1 + 1)) "$out/smi.log" 2>/dev/null | awk -F', *' '$1 ~ /^[0-9]+$/ {if (m == "" || $1 < m) m = $1}
    END {printf "%s", (m == "" ? "?" : m)}'
}
bench_run() { # v
  local v=$1 brc s0 apps
  s0=$(smi_n)
  # shellcheck disable=SC2046,SC2086  # the variant's assignments and lb, word-split on purpose
  env $(venv "$v") TEZGAH_PROFILE=1 timeout 40 $lb "$dir/bin/bench_webgpu" attention 16 1024 >"$out/bench_$v.log" 2>&1
  brc=$?
  apps=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | wc -l)
  ((brc == 0)) || say "  [$v] rc $brc: $(grep -iE 'error|abort' "$out/bench_$v.log" | head -1 | cut -c1-200)"
  while read -r hd f k q d p s bf bb; do
    [[ $hd == 32 ]] && continue # fp32 kernels in every mode
    SUMS[$v.$hd]=$s DS[$v.$hd]=$d
    say "$(printf '  %-6s %3s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f  %s/%s  %s MHz' "$v" "$hd" "$f" "$k" "$q" "$d" "$p" "$s" "$bf" "$bb" "$(smi_since "$s0")")"
  done < <(bench_rows "$out/bench_$v.log")
  ((apps == 0)) || say "  [$v] $apps compute processes on the GPU after the run"
}
slow_rows() { # the bench rows whose attention_bwd_d took over 1.5x its head_dim's fastest
  local k
  for k in "${!DS[@]}"; do echo "$k ${DS[$k]}"; done | awk '{split($1, a, "."); hd = a[2]; v[$1] = $2; h[$1] = hd
      if (!(hd in m) || $2 < m[hd]) m[hd] = $2}
    END {for (k in v) if (m[h[k]] > 0 && v[k] > 1.5 * m[h[k]]) printf " %s(D %.1fx)", k, v[k] / m[h[k]]}'
}

# the must-haves: the test, the profiled default, the peer, the A/B; then the bench variants
[[ -n ${NOTEST:-} ]] || { left "test def" 60 && test_run def; }
# round 1's element-wise order (call 3 passed it) only where the default failed: which change did
[[ -n ${NOTEST:-} || ${TRC[def]:-0} == 0 ]] || { left "test e0" 60 && test_run e0; }
if [[ -z ${NOTRAIN:-} ]] && left "train default" "$TTMO"; then
  train_run gpt2 TEZGAH_PROFILE_SHAPES=1 -- --profile
  say "per-op profile of train gpt2 (ms/step; matmuls on subgroup matrices per M x N x K: X·Wᵀ matmul_t" \
    "[B·T, N_out, K_in], dY·W matmul [B·T, K_in, N_out], dW matmul_at [N_out, K_in, B·T] /split-K):"
  sed -n '/ms\/step/,$p' "$out/gpt2.log" | grep -vE '^(step|\{)' | head -70 | cut -c1-120 | tee -a "$sum"
fi
if [[ -z ${NOTORCH:-} && -f $dir/data/torch_gpt.py ]] && left "torch" 60; then
  TF32=1 timeout 60 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 12 >"$out/torch.log" 2>&1
  say "peer PyTorch bf16 eager (torch_gpt.py --compile 0) rc $?:"
  tail -3 "$out/torch.log" | sed 's/^/  /' | tee -a "$sum"
fi
if [[ -z ${NOTRAIN:-} ]]; then
  left "train gpt2 plain" "$TTMO" && train_run gpt2_plain --
  left "train gpt2 ewf0" "$TTMO" && train_run gpt2_ewf0 TEZGAH_WEBGPU_ATTN_SG_EWF=0 --
  left "train hd128 default" "$TTMO" && train_run hd128 -- --n-head 6
  left "train hd128 ewf0" "$TTMO" && train_run hd128_ewf0 TEZGAH_WEBGPU_ATTN_SG_EWF=0 -- --n-head 6
  [[ -s $out/loss_gpt2_plain.txt && -s $out/loss_gpt2_ewf0.txt ]] &&
    paste "$out/loss_gpt2_plain.txt" "$out/loss_gpt2_ewf0.txt" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d}
      END {printf "  gpt2 losses EWF=1 vs EWF=0 over %d steps: largest |diff| %.2g (the same arithmetic: 0 expected)\n", NR, m}' | tee -a "$sum"
fi
if [[ -z ${NOBENCH:-} ]]; then
  say "bench_webgpu attention 16 1024, ms per forward + backward of one layer (GPU timestamps; bench fwd/bwd: wall ms):"
  say "$(printf '  %-5s %3s %8s %8s %8s %8s %8s %8s  %s' variant hd fwd dkdv dq D conv sum 'bench fwd/bwd')"
  for v in ${VARIANTS:-def ewf0 fp32 dq1 sg1 kreg def_2 ewf0_2 sgv0 sg2p nsg2}; do left "bench $v" 30 && bench_run "$v"; done
fi
if [[ -z ${NOTRAIN:-} ]] && left "train hd128 fp32" "$TTMO"; then
  train_run hd128_fp32 TEZGAH_WEBGPU_ATTN_SGMAT=0 -- --n-head 6
fi
[[ -n ${NOTEST:-} ]] || { left "test dir" 35 && test_run dir; }
[[ -n ${NOTEST:-} ]] || { left "test kr" 40 && test_run kr; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.2fx", b / a; else print "?"}'; }
kill "$smi_pid" 2>/dev/null
say "nvidia-smi over the call (SM MHz, W, C, util%[, event reasons]): $(awk -F', *' '$1 ~ /^[0-9]+$/ {n++; if (n == 1 || $1 < m) m = $1
  if ($1 > x) x = $1; if ($2 > w) w = $2} END {printf "%d samples, SM clock %s..%s MHz, power max %s W", n, m, x, w}' "$out/smi.log" 2>/dev/null)"
say "SUMMARY tests rc def ${TRC[def]:-?}${TRC[e0]:+ (EWF=0: ${TRC[e0]})} dir ${TRC[dir]:-?} kr ${TRC[kr]:-?}; GPT-2 124M f16 tokens/s ${TPS[gpt2_plain]:-?}" \
  "(step ms $(awk -v t="${TPS[gpt2_plain]:-0}" 'BEGIN {if (t > 0) printf "%.1f", 16384000 / t; else print "?"}'))" \
  "vs EWF=0 ${TPS[gpt2_ewf0]:-?}; profiled ${TPS[gpt2]:-?};" \
  "torch bf16 eager $(grep -oE 'tok_s=[0-9]+' "$out/torch.log" 2>/dev/null | tail -1 | cut -d= -f2);" \
  "hd128 train default ${TPS[hd128]:-?} vs EWF=0 ${TPS[hd128_ewf0]:-?} vs fp32-attention ${TPS[hd128_fp32]:-?};" \
  "attention fwd+bwd ms/layer hd64 def ${SUMS[def.64]:-?}/${SUMS[def_2.64]:-?} ewf0 ${SUMS[ewf0.64]:-?}/${SUMS[ewf0_2.64]:-?}" \
  "fp32 ${SUMS[fp32.64]:-?}; hd128 def ${SUMS[def.128]:-?}/${SUMS[def_2.128]:-?} ewf0 ${SUMS[ewf0.128]:-?}/${SUMS[ewf0_2.128]:-?}" \
  "fp32 ${SUMS[fp32.128]:-?} ($(ratio "${SUMS[def.128]:-0}" "${SUMS[fp32.128]:-0}")); hd64 dq1 ${SUMS[dq1.64]:-?} kreg ${SUMS[kreg.64]:-?};" \
  "rows measured while the GPU ran slow (attention_bwd_d > 1.5x its fastest):$(slow_rows)"
say "end ${SECONDS}s"
