#!/usr/bin/env bash
# tezgah.wasm (build/wasm/, scripts/build_wasm.sh) under Node's WASI against the native CLI:
#  1. a tiny llama trained 12 steps on 60 kB of tiny shakespeare by both, one thread each:
#     every step's loss and the validation loss agree within 1e-5 (measured on 2026-12-02:
#     max |Δ| 7e-8; the builds differ only in libm, glibc vs wasi-libc's musl, whose
#     expf/logf/... may round differently in the last bit);
#  2. the wasm run's checkpoint loads natively (greedy sample with the prompt), and the wasm
#     build samples the native run's checkpoint; greedy texts of one checkpoint are compared
#     and the result printed (equal so far);
#     the wasm build's SIMD128 GEMM kernel gives its scalar kernel's losses exactly, and
#     bit-identical tiles (wasm/tests/test_gemm_kernels.c: random and crafted inputs);
#  3. --stop-after 5 then --resume in wasm: the losses of the uninterrupted wasm run, exactly;
#     the pre-tokenizer without PCRE2's JIT: BPE and tokens of 1.1 MB and of a crafted text
#     equal the native build's;
#  4. host-only features refused with one line: --nproc, --backend webgpu (no bindings), and
#     a missing corpus.
# Usage (from ctest): bash test_wasm_node.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
root=$(cd "$(dirname "$0")/.." && pwd)
wasm=$(dirname "$tz")/wasm/tezgah.wasm
corpus=$shared/data/tinyshakespeare.txt
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
command -v node >/dev/null || skip "node not found (scripts/setup.sh installs npm/node)"
(( $(node -p 'process.versions.node.split(".")[0]') >= 20 )) || skip "node $(node --version) is older than 20 (node:wasi preview1)"
[[ -f $wasm ]] || skip "$wasm not built (scripts/setup_wasm.sh installs the toolchain; cmake then builds it)"
[[ -f $corpus ]] || skip "$corpus is absent (../shared not available)"
enter_scratch
tzw() { node "$root/wasm/run_node.mjs" "$wasm" "$@"; }
head -c 60000 "$corpus" >corpus.txt
args=(--data corpus.txt --n-layer 2 --n-head 4 --d-model 64 --vocab-size 320 -T 64 -B 4 --steps 12
  --lr 3e-3 --seed 7 --val-every 6 --sample-tokens 0 --quiet)

# ---- 1. losses against the native CLI ----
OMP_NUM_THREADS=1 "$tz" train "${args[@]}" --run-dir native 2>native.log || fail "native train exited with $? ($(tail -1 native.log))"
t0=$(date +%s.%N)
tzw train "${args[@]}" --run-dir wasm 2>wasm.log || fail "wasm train exited with $? ($(tail -1 wasm.log))"
t1=$(date +%s.%N)
compare() { # metrics A, metrics B, tolerance, what -> prints the max |Δ| line; exit 1 beyond it
  node -e '
    const fs = require("fs");
    const rows = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
    const [a, b] = [rows(process.argv[1]), rows(process.argv[2])];
    const tol = Number(process.argv[3]);
    const keys = (r) => ["loss", "val_loss"].filter((k) => k in r);
    let max = 0, n = 0, bad = "";
    if (a.length !== b.length) bad = `${a.length} vs ${b.length} lines`;
    for (let i = 0; i < Math.min(a.length, b.length); i++)
      for (const k of keys(a[i])) {
        const d = Math.abs(a[i][k] - b[i][k]);
        n++;
        if (!(d <= tol) && !bad) bad = `step ${a[i].step} ${k}: ${a[i][k]} vs ${b[i][k]}`;
        if (d > max) max = d;
      }
    console.log(`${process.argv[4]}: ${n} losses, max |delta| ${max.toExponential(2)} (tolerance ${tol})${bad ? ": " + bad : ""}`);
    process.exit(bad ? 1 : 0);' "$1" "$2" "$3" "$4"
}
if [[ -f native/metrics.jsonl && -f wasm/metrics.jsonl ]]; then
  if line=$(compare native/metrics.jsonl wasm/metrics.jsonl 1e-5 "wasm vs native"); then ok "$line"; else fail "$line"; fi
  echo "wasm train: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s under node $(node --version)"
fi

# ---- 2. checkpoints cross the builds ----
"$tz" sample wasm --prompt "ROMEO:" --tokens 30 --temperature 0 >w_native.txt 2>err.txt || fail "native sample of the wasm checkpoint exited with $? ($(tail -1 err.txt))"
tzw sample native --prompt "ROMEO:" --tokens 30 --temperature 0 >n_wasm.txt 2>err.txt || fail "wasm sample of the native checkpoint exited with $? ($(tail -1 err.txt))"
"$tz" sample native --prompt "ROMEO:" --tokens 30 --temperature 0 >n_native.txt 2>/dev/null
grep -q '^ROMEO:' w_native.txt && ok "native sample reads the wasm run's checkpoint" || fail "native sample of the wasm checkpoint: $(head -c 100 w_native.txt)"
grep -q '^ROMEO:' n_wasm.txt && ok "wasm sample reads the native run's checkpoint" || fail "wasm sample of the native checkpoint: $(head -c 100 n_wasm.txt)"
cmp -s w_native.txt n_native.txt && echo "note: greedy samples of the wasm and native runs are equal" || echo "note: greedy samples of the wasm and native runs differ"
cmp -s n_wasm.txt n_native.txt && echo "note: wasm and native greedy samples of one checkpoint are equal" || echo "note: wasm and native greedy samples of one checkpoint differ"

# ---- 2b. the wasm build's SIMD128 GEMM kernel (exact fma in f64x2) against its scalar one
# (wasi-libc's fmaf): the same bits, so the same losses exactly ----
TEZGAH_CPU_ISA=scalar tzw train "${args[@]}" --run-dir scalar 2>err.txt || fail "wasm scalar-kernel run exited with $? ($(tail -1 err.txt))"
if [[ -f scalar/metrics.jsonl ]]; then
  if line=$(compare wasm/metrics.jsonl scalar/metrics.jsonl 0 "wasm128 vs scalar GEMM kernel"); then ok "$line"; else fail "$line"; fi
fi

kt=$(dirname "$wasm")/test_gemm_kernels.wasm # the kernels tile by tile, crafted double roundings included
if [[ -f $kt ]]; then
  if line=$(node "$root/wasm/run_node.mjs" "$kt"); then echo "$line"; else fail "$line"; fi
else
  fail "$kt not built"
fi

# ---- 3. stop and resume inside wasm ----
tzw train "${args[@]}" --run-dir cut --stop-after 5 2>/dev/null || fail "wasm --stop-after run exited with $?"
tzw train --resume cut --quiet --sample-tokens 0 2>err.txt || fail "wasm --resume exited with $? ($(tail -1 err.txt))"
if [[ -f cut/metrics.jsonl ]]; then
  if line=$(compare wasm/metrics.jsonl cut/metrics.jsonl 0 "wasm resumed vs uninterrupted"); then ok "$line"; else fail "$line"; fi
fi

# ---- 3b. the pre-tokenizer without PCRE2's JIT (windowed matches, tokenizer.c): the BPE
# trained on, and the tokens of, the whole 1.1 MB corpus and a crafted text (runs of letters,
# digits, spaces and punctuation longer than the first window, contractions, multi-byte
# characters, invalid bytes) equal the native build's, whose PCRE2 has JIT ----
node -e '
  let x = 5, out = [];
  const r = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pieces = ["'"'"'s", "'"'"'t", "'"'"'re", "'"'"'ll", " ", "  ", "\n", "\t", "\u00e9", "\u4e2d\u6587",
    "\u{1F600}", "123", "!?", "word", " world", "\r\n", "\u00a0"];
  const run = (c, lo, hi) => c.repeat(lo + Math.floor(r() * (hi - lo)));
  for (let i = 0; i < 20000; i++) {
    const p = r();
    out.push(p < .02 ? run("ab"[i & 1], 200, 1200) : p < .04 ? run(" ", 200, 900) + (i & 1 ? "x" : "") :
      p < .05 ? run("7", 250, 700) : p < .06 ? run("-", 250, 600) : p < .07 ? run("\u00e9", 100, 400) :
      pieces[Math.floor(r() * pieces.length)]);
  }
  const b = Buffer.from(out.join(""));
  const bad = [0x80, 0xbf, 0xc3, 0xe4, 0xf0, 0xff];
  for (let i = 0; i < 200; i++) b[Math.floor(r() * b.length)] = bad[i % bad.length];
  require("fs").writeFileSync("crafted.txt", b);'
cp "$corpus" shakespeare.txt # the wasm process sees the working directory only
for f in crafted.txt shakespeare.txt; do
  name=${f%.txt}
  { "$tz" tokenizer train --in "$f" --out "tok_$name.n.json" --vocab-size 700
    tzw tokenizer train --in "$f" --out "tok_$name.w.json" --vocab-size 700
    "$tz" tokenize --tokenizer "tok_$name.n.json" --in "$f" --out "$name.n.bin"
    tzw tokenize --tokenizer "tok_$name.n.json" --in "$f" --out "$name.w.bin"; } >tok.log 2>&1
  if [[ -s tok_$name.n.json && -s $name.n.bin ]] && cmp -s "tok_$name.n.json" "tok_$name.w.json" && cmp -s "$name.n.bin" "$name.w.bin"; then
    ok "$name ($(stat -c %s "$f") bytes): the same BPE and tokens in wasm (no JIT) as natively"
  else
    fail "$name: wasm and native BPE or tokens differ (tok_$name.*.json, $name.*.bin; $(tail -1 tok.log))"
  fi
done

# ---- 4. host-only features and bad input: one line, exit 1 ----
one_line() { # what, expected substring, command...
  local what=$1 want=$2; shift 2
  "$@" >out.txt 2>err.txt
  local rc=$?
  if ((rc == 1)) && [[ $(wc -l <err.txt) -eq 1 ]] && grep -q "^tezgah: error: .*$want" err.txt; then
    ok "$what: $(cat err.txt)"
  else
    fail "$what: exit $rc, stderr: $(head -c 300 err.txt)"
  fi
}
one_line "--nproc" "wasm build runs one process" tzw train "${args[@]}" --run-dir np --nproc 2
one_line "--backend webgpu" "no WebGPU bindings" tzw train "${args[@]}" --run-dir wg --backend webgpu
one_line "missing corpus" "missing.txt" tzw train --data missing.txt --run-dir miss --steps 2

((failures == 0)) && echo "PASS" || echo "$failures failure(s)"
exit $((failures > 0))
