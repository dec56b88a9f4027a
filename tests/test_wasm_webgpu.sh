#!/usr/bin/env bash
# The WebGPU backend inside wasm (src/backend/webgpu/wgpu_wasm.c + web/wgpu_imports.mjs) in
# headless Chromium (Debian's chromium, WebGPU on SwiftShader's Vulkan), docs/BROWSER.md:
#  1. layout: every struct member, size and constant web/wgpu_imports.mjs reads is in the
#     wasm32 layout the C side hands it (tests/wasm/check_layout.mjs, Node's WASI);
#  2. the bindings alone (tests/wasm/wgpu_smoke.c): device, upload, one WGSL kernel, readback
#     exact, and a broken shader reported through the uncaptured-error callback (without
#     navigator.gpu: the engine's one error line in 3, the same loader path);
#  3. the engine (build/wasm/tezgah-webgpu.wasm: scripts/build_wasm.sh, run by cmake, makes it
#     beside tezgah.wasm from the same objects): `tezgah info` in the page names the browser's
#     adapter; a tiny llama trained STEPS steps with --backend webgpu in the page against the
#     native CLI's CPU backend (one thread) on the same 60 kB of tiny shakespeare: every
#     step's loss and the validation losses within 1e-3 relative (test_webgpu_train's bound for
#     WebGPU against the CPU; measured on 2026-12-02: max |Δ| 6.81e-6 over 6 steps; 8 min in
#     all on a loaded 2-core machine, 5.5 of them SwiftShader's first step, that is its compiles
#     of the backward's pipelines: 4 steps, validation at 2 and 4, reach every pipeline and
#     the optimizer's later steps); the page's checkpoint samples natively; --backend webgpu
#     without navigator.gpu is one error line;
#  4. the WebGPU BPE trainer (src/tokenizer/tok_webgpu_*.c: async pipeline creation, its own
#     kernels) in the page writes the same tokenizer.json as the native CPU, byte for byte
#     (50 kB, 144 merges).
# Each Chromium launch costs ~8 CPU s (bench/cpu_tree.py, 2026-12-02): five here.
# Needs clang-19 + wasi-libc (scripts/setup_wasm.sh), node >= 20, chromium and
# web/node_modules' playwright-core and @bjorn3/browser_wasi_shim; SKIPPED (77) without them.
# TEZGAH_WASM_NPM overrides the npm folder. Slow on a CPU: SwiftShader compiles each WGSL
# pipeline on first use (most of the minutes here).
# Usage (from ctest): bash test_wasm_webgpu.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
root=$(cd "$(dirname "$0")/.." && pwd)
npm=${TEZGAH_WASM_NPM:-$root/web/node_modules}
corpus=$shared/data/tinyshakespeare.txt
STEPS=${TEZGAH_WASM_WEBGPU_STEPS:-4}
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
command -v node >/dev/null || skip "node not found (scripts/setup.sh)"
(( $(node -p 'process.versions.node.split(".")[0]') >= 20 )) || skip "node $(node --version) is older than 20"
command -v clang-19 >/dev/null || skip "clang-19 not found (scripts/setup_wasm.sh)"
[[ -f /usr/lib/wasm32-wasi/libc.a ]] || skip "wasi-libc not installed (scripts/setup_wasm.sh)"
[[ -x ${TEZGAH_CHROMIUM:-/usr/bin/chromium} ]] || skip "no chromium (scripts/setup_wasm.sh installs Debian's)"
[[ -d $npm/playwright-core && -d $npm/@bjorn3/browser_wasi_shim ]] ||
  skip "playwright-core / @bjorn3/browser_wasi_shim not in $npm (scripts/setup_wasm.sh)"
[[ -f $corpus ]] || skip "$corpus is absent (../shared not available)"
# the build's wasm with the WebGPU bindings (scripts/build_wasm.sh makes it beside tezgah.wasm
# from the same objects; cmake runs it when the toolchain is installed)
wasm=$(dirname "$tz")/wasm/tezgah-webgpu.wasm
[[ -f $wasm ]] || skip "$wasm not built (scripts/setup_wasm.sh installs the toolchain; cmake then builds it)"
enter_scratch
browser() { node "$root/tests/wasm/run_browser.mjs" --npm "$npm" --timeout 1500 "$@"; }

# ---- 1 + 2. the bindings alone ----
mkdir -p smoke
clang-19 --target=wasm32-wasi -O2 -std=c11 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
  -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DTZ_WASM_WEBGPU=1 -I"$root/src" -I"$root/include" \
  "$root/tests/wasm/wgpu_smoke.c" "$root/src/backend/webgpu/wgpu_wasm.c" "$root/src/core/error.c" \
  -o smoke/wgpu_smoke.wasm 2>smoke.err || { cat smoke.err; fail "wgpu_smoke.c does not build for wasm32"; }
if node --no-warnings "$root/tests/wasm/check_layout.mjs" smoke/wgpu_smoke.wasm >layout.txt 2>&1; then
  ok "$(tail -1 layout.txt)"
else
  cat layout.txt
  fail "layout check"
fi
browser smoke/wgpu_smoke.wasm >smoke.txt 2>&1
rc=$?
grep '^wgpu_smoke\|^run_browser\|^SKIPPED' smoke.txt
if [[ $rc -eq 77 ]]; then
  skip "Chromium gives this machine no WebGPU adapter ($(grep SKIPPED smoke.txt | head -1))"
elif [[ $rc -ne 0 ]] || ! grep -q '^wgpu_smoke: OK' smoke.txt; then
  fail "wgpu_smoke in Chromium: exit $rc"
  tail -20 smoke.txt
else
  ok "wgpu_smoke in Chromium"
fi

# ---- 3. the engine ----
browser "$wasm" info >info.txt 2>&1
if grep -q 'adapter: .*browser WebGPU' info.txt; then
  ok "tezgah info in the page: $(grep 'adapter:' info.txt | sed 's/^ *//')"
else
  fail "tezgah info in the page"
  grep -v 'pid=' info.txt | tail -20
fi

head -c 60000 "$corpus" >corpus.txt
args=(--data corpus.txt --vocab-size 320 --n-layer 2 --n-head 4 --d-model 64 -B 4 -T 64 --steps "$STEPS"
  --seed 7 --val-every 2 --val-batches 2 --sample-tokens 0 --log-every 1)
OMP_NUM_THREADS=1 "$tz" train "${args[@]}" --backend cpu --threads 1 --run-dir native 2>native.log ||
  fail "native train exited with $? ($(tail -1 native.log))"
t0=$(date +%s)
browser --file corpus.txt=corpus.txt --out page "$wasm" train "${args[@]}" --backend webgpu --run-dir run >page.txt 2>&1
rc=$?
t1=$(date +%s)
grep -a '^webgpu:\|^done:\|^run_browser' page.txt
if [[ $rc -ne 0 || ! -f page/run/metrics.jsonl ]]; then
  fail "train --backend webgpu in the page: exit $rc"
  grep -av 'pid=' page.txt | tr '\r' '\n' | tail -20
else
  if node -e '
    const fs = require("fs");
    const rows = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
    const [cpu, gpu] = [rows(process.argv[1]), rows(process.argv[2])];
    let max = 0, n = 0, bad = cpu.length === gpu.length ? "" : `${cpu.length} vs ${gpu.length} steps`;
    for (let i = 0; i < Math.min(cpu.length, gpu.length); i++)
      for (const k of ["loss", "val_loss"]) {
        if (!(k in cpu[i]) && !(k in gpu[i])) continue;
        if (!(k in cpu[i]) || !(k in gpu[i])) { bad = `step ${i + 1}: ${k} in one run only`; continue; }
        const d = Math.abs(cpu[i][k] - gpu[i][k]);
        n++;
        if (d > max) max = d;
        if (!(d <= 1e-3 * Math.abs(cpu[i][k]))) bad = `step ${i + 1} ${k}: cpu ${cpu[i][k]} webgpu ${gpu[i][k]}`;
      }
    console.log(`${n} losses compared, max |webgpu - cpu| = ${max.toExponential(2)} (bound 1e-3 relative)`);
    if (bad) { console.log(bad); process.exit(1); }
  ' native/metrics.jsonl page/run/metrics.jsonl >cmp.txt; then
    ok "train --backend webgpu in the page ($STEPS steps, $((t1 - t0)) s) vs native cpu: $(cat cmp.txt)"
  else
    fail "losses: $(cat cmp.txt)"
  fi
  if "$tz" sample page/run --prompt "ROMEO:" --tokens 8 --temperature 0 >sample.txt 2>sample.err; then
    ok "the page's checkpoint samples natively ($(wc -c <sample.txt) bytes: $(tr -c '[:print:]' '?' <sample.txt | head -c 60))"
  else
    fail "native sample of the page's checkpoint: $(tail -1 sample.err)"
  fi
fi
browser --no-gpu "$wasm" train "${args[@]}" --steps 1 --backend webgpu --run-dir nogpu >nogpu2.txt 2>&1
rc=$?
errs=$(grep -ac '^tezgah: error:' nogpu2.txt)
if [[ $rc -ne 0 && $errs -eq 1 ]] && grep -aq '^tezgah: error: webgpu: .*navigator.gpu' nogpu2.txt; then
  ok "--backend webgpu without navigator.gpu: $(grep -a '^tezgah: error:' nogpu2.txt)"
else
  fail "--backend webgpu without navigator.gpu: exit $rc, $errs error lines"
  grep -av 'pid=' nogpu2.txt | tail -5
fi

# ---- 4. the WebGPU tokenizer trainer in the page ----
head -c 50000 "$corpus" >in.txt
"$tz" tokenizer train --in in.txt --out cpu.json --vocab-size 400 >/dev/null 2>tokcpu.err ||
  fail "native tokenizer train: $(tail -1 tokcpu.err)"
browser --file in.txt=in.txt --out tok "$wasm" tokenizer train --in in.txt --out gpu.json --vocab-size 400 \
  --backend webgpu >tok.txt 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -aq '(webgpu)' tok.txt && cmp -s cpu.json tok/gpu.json; then
  ok "tokenizer train --backend webgpu in the page = native cpu ($(grep -a '^tokenizer train' tok.txt | sed 's/.* in //'))"
else
  fail "tokenizer train --backend webgpu in the page: exit $rc, $(grep -a '^tokenizer train\|error' tok.txt | head -2)"
fi

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all ok"
