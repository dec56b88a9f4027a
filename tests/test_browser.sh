#!/usr/bin/env bash
# The page (web/) in headless Chromium, driven by web/browser_test.mjs (playwright-core) as a
# user drives it: a 60 kB corpus file, the tiny model, 12 steps, a greedy sample, the
# checkpoint downloaded, then a second run stopped with the Stop button. Checked here:
#  1. the page's per-step losses match the native CLI's run with the same flags (the page's
#     own, read back from it), one thread, within 1e-5 (measured 2026-12-02: max |Δ| 7e-8;
#     the page and Node's WASI give identical numbers, the rest is glibc vs musl libm);
#  2. a sample came back and starts with the prompt;
#  3. the downloaded checkpoint loads natively (`tezgah sample` on it, greedy; whether its text
#     equals the page's is printed) and holds the 12 steps (`tezgah info`);
#  4. Stop: the stopped run exits as Ctrl-C does (130) after its checkpoint.
# Usage (from ctest): bash test_browser.sh <tezgah-binary> <shared-dir> <scratch-dir>
# TEZGAH_CHROMIUM: the browser (default /usr/bin/chromium, Debian's, scripts/setup_wasm.sh).
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
root=$(cd "$(dirname "$0")/.." && pwd)
wasm=$(dirname "$tz")/wasm/tezgah.wasm
chromium=${TEZGAH_CHROMIUM:-/usr/bin/chromium}
corpus=$shared/data/tinyshakespeare.txt
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
command -v node >/dev/null || skip "node not found (scripts/setup.sh)"
(( $(node -p 'process.versions.node.split(".")[0]') >= 20 )) || skip "node $(node --version) is older than 20 (playwright-core 1.65)"
[[ -x $chromium ]] || skip "no chromium at $chromium (scripts/setup_wasm.sh installs Debian's; TEZGAH_CHROMIUM=PATH)"
[[ -d $root/web/node_modules/playwright-core && -d $root/web/node_modules/@bjorn3/browser_wasi_shim ]] ||
  skip "web/node_modules lacks playwright-core or @bjorn3/browser_wasi_shim (scripts/setup_wasm.sh: npm ci in web/)"
[[ -f $wasm ]] || skip "$wasm not built (scripts/setup_wasm.sh installs the toolchain; cmake then builds it)"
[[ -f $corpus ]] || skip "$corpus is absent (../shared not available)"
enter_scratch
head -c 60000 "$corpus" >corpus.txt
# the server's bad arguments: one line, exit 2 (it printed Node stack traces; found by a
# new-user check)
for a in "--port abc" "--port" "--bogus" "--wasm /nonexistent"; do
  node "$root/web/serve.mjs" $a >srv.out 2>srv.err
  rc=$?
  if ((rc == 2)) && [[ $(wc -l <srv.err) == 1 && ! -s srv.out ]] && grep -q '^serve: ' srv.err; then :; else
    fail "serve.mjs $a: exit $rc, stderr: $(head -c 300 srv.err)"; fi
done
mkdir -p page
steps=12
t0=$(date +%s)
if ! node "$root/web/browser_test.mjs" --corpus corpus.txt --steps $steps --out page --wasm "$wasm" \
     --chromium "$chromium" --stop-test; then
  fail "the page did not complete (above)"
fi
echo "page run: $(($(date +%s) - t0)) s (chromium start, data preparation, training, sample, download, stopped run)"
[[ -f page/result.json ]] || { echo "FAIL: no page/result.json"; exit 1; }
get() { node -e 'const r = JSON.parse(require("fs").readFileSync("page/result.json", "utf8")); const v = eval("r." + process.argv[1]); console.log(typeof v === "object" ? JSON.stringify(v) : v);' "$1"; }
echo "browser: chromium $(get chromium), cross-origin isolated: $(get crossOriginIsolated), $(get tok_per_s) tok/s at the last step"

# ---- 1. losses against the native CLI with the page's flags ----
mapfile -t pargs < <(node -e 'for (const a of JSON.parse(require("fs").readFileSync("page/result.json", "utf8")).args) console.log(a)')
OMP_NUM_THREADS=1 "$tz" train --data corpus.txt --run-dir native "${pargs[@]}" --quiet 2>native.log ||
  fail "native train exited with $? ($(tail -1 native.log))"
line=$(node -e '
  const fs = require("fs");
  const page = JSON.parse(fs.readFileSync("page/result.json", "utf8")).losses;
  const nat = fs.readFileSync("native/metrics.jsonl", "utf8").trim().split("\n").map(JSON.parse)
    .filter((r) => !r.final).map((r) => r.loss);
  let max = 0, bad = page.length === nat.length ? "" : `${page.length} page steps vs ${nat.length} native`;
  page.forEach((l, i) => { const d = Math.abs(l - nat[i]); if (!(d <= 1e-5) && !bad) bad = `step ${i + 1}: ${l} vs ${nat[i]}`; max = Math.max(max, d); });
  console.log(`page vs native: ${page.length} losses, max |delta| ${max.toExponential(2)} (tolerance 1e-5)${bad ? ": " + bad : ""}`);
  process.exit(bad ? 1 : 0);') && ok "$line" || fail "$line"

# ---- 2. the sample ----
sample=$(get sample.text)
[[ $sample == the* && ${#sample} -gt 3 ]] && ok "page sample came back (${#sample} chars)" || fail "page sample: $(get sample)"

# ---- 3. the downloaded checkpoint, natively ----
if [[ -s page/checkpoint.tzc ]]; then
  "$tz" sample page/checkpoint.tzc --prompt the --tokens 40 --temperature 0 >native_sample.txt 2>err.txt &&
    ok "native tezgah sample reads the downloaded checkpoint ($(stat -c %s page/checkpoint.tzc) bytes)" ||
    fail "native sample of the downloaded checkpoint: exit $? ($(tail -1 err.txt))"
  node -e 'const r = JSON.parse(require("fs").readFileSync("page/result.json", "utf8"));
    process.exit(r.sample.text === require("fs").readFileSync("native_sample.txt", "utf8") ? 0 : 1)' &&
    echo "note: the page's greedy sample equals the native one of the downloaded checkpoint" ||
    echo "note: the page's greedy sample differs from the native one of the downloaded checkpoint"
  "$tz" info page/checkpoint.tzc >info.txt 2>&1 || fail "tezgah info of the downloaded checkpoint: $(tail -1 info.txt)"
  grep -Eq "step[^0-9]*$steps\b" info.txt && ok "checkpoint holds step $steps" || fail "tezgah info does not show step $steps: $(grep -i step info.txt | head -2)"
else
  fail "no downloaded checkpoint"
fi

# ---- 4. Stop ----
stop_rc=$(get stop.rc)
stop_steps=$(get stop.steps)
[[ $stop_rc == 130 && $stop_steps -ge 3 ]] && ok "Stop: train exited 130 after $stop_steps steps" || fail "Stop: $(get stop)"
errs=$(get errors)
[[ $errs == "[]" ]] || echo "note: page console errors: $errs"

((failures == 0)) && echo "PASS" || echo "$failures failure(s)"
exit $((failures > 0))
