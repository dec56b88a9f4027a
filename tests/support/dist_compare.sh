# Helpers of the data-parallel tests (tests/test_dist_cpu.sh, tests/test_cuda_dist.sh), sourced.
# They need $diff_bin (tz_ckpt_diff) and compare two run directories.
fail() { echo "FAIL: $*" >&2; exit 1; }

# metrics_close A B REL [exact]: losses, grad norms and val losses of two runs' metrics.jsonl
# agree within REL relative (exact: the lines agree textually but for tok_per_s, elapsed_s)
metrics_close() {
  local a=$1/metrics.jsonl b=$2/metrics.jsonl rel=$3
  [[ $(wc -l <"$a") == $(wc -l <"$b") ]] || fail "$1 and $2: different numbers of metrics lines"
  if [[ ${4:-} == exact ]]; then
    diff <(sed -E 's/"(tok_per_s|elapsed_s)":[^,}]*//g' "$a") <(sed -E 's/"(tok_per_s|elapsed_s)":[^,}]*//g' "$b") >/dev/null ||
      fail "$1 and $2: metrics differ (expected bit-identical)"
    return
  fi
  paste -d'\n' "$a" "$b" | awk -v rel="$rel" -v A="$1" -v B="$2" '
    function get(line, key,   m) { if (match(line, "\"" key "\":[-0-9.eE+]+")) return substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 3); return "" }
    NR % 2 == 1 { prev = $0; next }
    { for (k = 1; k <= 3; k++) {
        key = k == 1 ? "loss" : k == 2 ? "grad_norm" : "val_loss"
        x = get(prev, key); y = get($0, key)
        if ((x == "") != (y == "")) { print "FAIL: " A " vs " B ": " key " present in one run only (line " NR/2 ")"; bad = 1; continue }
        if (x == "") continue
        d = x - y; if (d < 0) d = -d; s = x < 0 ? -x : x
        if (d > rel * s) { printf "FAIL: %s vs %s: %s %s vs %s (rel %.2g > %g, line %d)\n", A, B, key, x, y, d / s, rel, NR/2; bad = 1 }
        if (d / (s > 0 ? s : 1) > worst) worst = d / (s > 0 ? s : 1)
      } }
    END { if (!bad) printf "  metrics %s vs %s: worst relative difference %.2g\n", A, B, worst; exit bad }' ||
    exit 1
}
# params_close A B REL: parameters and AdamW moments of two final checkpoints
params_close() {
  local out
  out=$("$diff_bin" "$1/checkpoint.tzc" "$2/checkpoint.tzc" params adam_m adam_v) || fail "tz_ckpt_diff $1 $2"
  echo "$out" | sed "s|^|  $1 vs $2: |"
  echo "$out" | awk -v rel="$3" '{ split($5, r, "="); if (r[2] + 0 > rel + 0 || r[2] == "nan") bad = 1 } END { exit bad }' ||
    fail "$1 vs $2: parameters differ by more than $3 relative"
}
params_same() {
  local out
  out=$("$diff_bin" "$1/checkpoint.tzc" "$2/checkpoint.tzc" params adam_m adam_v) || fail "tz_ckpt_diff $1 $2"
  echo "$out" | grep -qv " differ=0 " && { echo "$out" >&2; fail "$1 vs $2: parameters not bit-identical"; }
  echo "  $1 vs $2: parameters and moments bit-identical"
}

