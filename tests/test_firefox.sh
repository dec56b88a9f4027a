#!/usr/bin/env bash
# The CPU backend as wasm in headless Firefox ESR (Debian's firefox-esr), run without a driver by
# tests/wasm/run_firefox.mjs (playwright-core drives only Playwright's patched Firefox): the tiny
# llama of test_browser.sh, 12 steps on a 60 kB corpus, in a page on Firefox's own thread.
# Checked here:
#  1. the per-step losses match the native CLI's run with the same flags, one thread, within
#     1e-5 (measured 2026-12-02, Firefox ESR 153.8: max |Δ| 3.2e-8; glibc vs musl libm);
#  2. the BPE tokenizer the page trained equals the native one byte for byte;
#  3. the page's checkpoint loads natively (`tezgah sample`, `tezgah info` shows step 12).
# WebGPU in Firefox (lavapipe) is not tested here: docs/BROWSER.md, "Firefox ESR", says why.
# Usage (from ctest): bash test_firefox.sh <tezgah-binary> <shared-dir> <scratch-dir>
# TEZGAH_FIREFOX: the browser (default /usr/bin/firefox-esr, Debian's, scripts/setup_wasm.sh).
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
root=$(cd "$(dirname "$0")/.." && pwd)
wasm=$(dirname "$tz")/wasm/tezgah.wasm
firefox=${TEZGAH_FIREFOX:-/usr/bin/firefox-esr}
corpus=$shared/data/tinyshakespeare.txt
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
command -v node >/dev/null || skip "node not found (scripts/setup.sh)"
[[ -x $firefox ]] || skip "no firefox-esr at $firefox (scripts/setup_wasm.sh installs Debian's; TEZGAH_FIREFOX=PATH)"
[[ -d $root/web/node_modules/@bjorn3/browser_wasi_shim ]] ||
  skip "web/node_modules lacks @bjorn3/browser_wasi_shim (scripts/setup_wasm.sh: npm ci in web/)"
[[ -f $wasm ]] || skip "$wasm not built (scripts/setup_wasm.sh installs the toolchain; cmake then builds it)"
[[ -f $corpus ]] || skip "$corpus is absent (../shared not available)"
enter_scratch
head -c 60000 "$corpus" >corpus.txt
steps=12
# the page's "tiny" size and defaults (web/app.js)
args=(--data corpus.txt --n-layer 2 --n-head 4 --d-model 64 --vocab-size 320 -T 64 --steps $steps -B 4
  --lr 3e-3 --seed 1337 --sample-tokens 0 --backend cpu)
node "$root/tests/wasm/run_firefox.mjs" --firefox "$firefox" --timeout 300 --file corpus.txt=corpus.txt --out page \
  "$wasm" train "${args[@]}" --run-dir run >page.txt 2>&1
rc=$?
grep -a '^run_firefox\|^SKIPPED\|^done:' page.txt
if [[ $rc -eq 77 ]]; then
  skip "$(grep -a '^SKIPPED' page.txt | head -1 | sed 's/^SKIPPED: //')"
elif [[ $rc -ne 0 || ! -f page/run/metrics.jsonl ]]; then
  fail "train in Firefox: exit $rc"
  tr '\r' '\n' <page.txt | grep -av 'pid=' | tail -20
  echo "$failures failure(s)"
  exit 1
fi

# ---- 1. losses against the native CLI ----
OMP_NUM_THREADS=1 "$tz" train "${args[@]}" --threads 1 --run-dir native --quiet 2>native.log ||
  fail "native train exited with $? ($(tail -1 native.log))"
line=$(node -e '
  const fs = require("fs");
  const rows = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse).filter((r) => !r.final).map((r) => r.loss);
  const [page, nat] = [rows("page/run/metrics.jsonl"), rows("native/metrics.jsonl")];
  let max = 0, bad = page.length === nat.length ? "" : `${page.length} page steps vs ${nat.length} native`;
  page.forEach((l, i) => { const d = Math.abs(l - nat[i]); if (!(d <= 1e-5) && !bad) bad = `step ${i + 1}: ${l} vs ${nat[i]}`; max = Math.max(max, d); });
  console.log(`firefox vs native: ${page.length} losses, max |delta| ${max.toExponential(2)} (tolerance 1e-5)${bad ? ": " + bad : ""}`);
  process.exit(bad ? 1 : 0);') && ok "$line" || fail "$line"

# ---- 2. the tokenizer ----
cmp -s page/run/tokenizer.json native/tokenizer.json && ok "the page's tokenizer.json equals the native one" ||
  fail "the page's tokenizer.json differs from the native one"

# ---- 3. the checkpoint, natively ----
if "$tz" sample page/run/checkpoint.tzc --prompt the --tokens 20 --temperature 0 >sample.txt 2>err.txt; then
  ok "native tezgah sample reads the page's checkpoint ($(stat -c %s page/run/checkpoint.tzc) bytes)"
else
  fail "native sample of the page's checkpoint: $(tail -1 err.txt)"
fi
"$tz" info page/run/checkpoint.tzc >info.txt 2>&1 || fail "tezgah info of the page's checkpoint: $(tail -1 info.txt)"
grep -Eq "step[^0-9]*$steps\b" info.txt && ok "checkpoint holds step $steps" || fail "tezgah info does not show step $steps"

((failures == 0)) && echo "PASS" || echo "$failures failure(s)"
exit $((failures > 0))
