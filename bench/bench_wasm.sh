#!/usr/bin/env bash
# The CPU backend compiled to WebAssembly against the native build, one thread each (issue 23's
# benchmark): the default model of `tezgah train` (llama 4×128, T 128, B 16, its BPE) on a
# ~1 MB text, STEPS steps, tokens/s = median of the per-step tok_per_s in metrics.jsonl after
# 2 warm-up steps. Rows: native (build/tezgah --threads 1, the widest GEMM kernel this CPU
# has), wasm under Node's WASI (wasm/run_node.mjs; the wasm128 kernel and, for comparison,
# TEZGAH_CPU_ISA=scalar), and wasm in a page of headless Chromium (tests/wasm/run_browser.mjs
# --no-gpu: the page's CPU fallback). Prints a markdown table with the machine, Node and
# Chromium versions; docs/PERF.md records it.
#   bash bench/bench_wasm.sh [TEXT=../shared/data/tinyshakespeare.txt] [STEPS=8]
# Needs build/tezgah and build/wasm/tezgah.wasm (the CMake build with scripts/setup_wasm.sh's
# toolchain), node >= 20; the browser row needs chromium and web/node_modules (else "skipped").
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
text=$(realpath "${1:-$root/../shared/data/tinyshakespeare.txt}")
steps=${2:-8}
native=$root/build/tezgah wasm=$root/build/wasm/tezgah.wasm
for f in "$text" "$native" "$wasm"; do [[ -f $f ]] || { echo "bench_wasm.sh: $f is missing" >&2; exit 1; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$text" "$work/corpus.txt"
args=(train --data corpus.txt --steps "$steps" --val-every 0 --ckpt-every 0 --sample-tokens 0 --log-every 1 --threads 1)
median() { grep -o '"tok_per_s":[0-9.e+]*' "$1" 2>/dev/null | cut -d: -f2 | tail -n +3 | sort -g |
  awk '{a[NR]=$1} END {if (NR == 0) print "failed"; else printf "%.0f", (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
rows=()
run() { # label dir command...
  local label=$1 dir=$work/$2
  shift 2
  mkdir -p "$dir" && cp "$work/corpus.txt" "$dir/"
  local t0=$SECONDS
  (cd "$dir" && "$@" "${args[@]}" --run-dir run >log.txt 2>&1)
  rows+=("| $label | $(median "$dir/run/metrics.jsonl") | $((SECONDS - t0)) |")
  echo "${rows[-1]}" >&2
}
run "native, GEMM kernel $("$native" info 2>/dev/null | grep -o "GEMM kernel [a-z0-9]*" | head -1 | cut -d" " -f3)" native "$native"
run "wasm, node:wasi, wasm128 kernel" node node "$root/wasm/run_node.mjs" "$wasm"
TEZGAH_CPU_ISA=scalar run "wasm, node:wasi, scalar kernel" node_scalar node "$root/wasm/run_node.mjs" "$wasm"
if [[ -x ${TEZGAH_CHROMIUM:-/usr/bin/chromium} && -d $root/web/node_modules/playwright-core ]]; then
  mkdir -p "$work/page"
  t0=$SECONDS
  node "$root/tests/wasm/run_browser.mjs" --no-gpu --file corpus.txt="$work/corpus.txt" --out "$work/page/out" \
    --timeout 1200 "$wasm" "${args[@]}" --run-dir run >"$work/page/log.txt" 2>&1
  rows+=("| wasm, Chromium page (CPU fallback) | $(median "$work/page/out/run/metrics.jsonl") | $((SECONDS - t0)) |")
else
  rows+=("| wasm, Chromium page | skipped (no chromium or web/node_modules) | |")
fi
echo "bench_wasm: $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), node $(node --version), $(chromium --version 2>/dev/null || echo 'no chromium')"
echo "default llama (4x128, T 128, B 16) on $(basename "$text") ($(wc -c <"$text") bytes), $steps steps, one thread"
echo "| build | tokens/s (median after 2 steps) | wall s (incl. BPE) |"
echo "|---|---:|---:|"
printf '%s\n' "${rows[@]}"
