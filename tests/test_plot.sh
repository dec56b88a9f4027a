#!/usr/bin/env bash
# tezgah plot (issue 11): a synthetic metrics.jsonl with known contents (60 steps, one of them
# skipped, validations at steps 0, 20, 40 and a final one at 60, an unterminated last line)
# drawn as SVG: well-formed XML (xmllint), one polyline per series with exactly the expected
# number of points (train loss 59, its moving average 59, val 4, learning rate 60), 4 + 1
# (legend) val markers, the title and axis labels; as PNG: the PNG signature and 800x600 in
# the IHDR chunk; bad inputs (and a failed write: its OS error): one line, exit 1, no file
# written or temporary file left, an existing output untouched; malformed lines left out with
# one note (line and count); one step drawn as dots; a run whose steps were all skipped plots its learning rate and says so. Then a tiny real run with `train --plot` writes RUN/loss.svg with
# one train-loss point per step.
# Usage (from ctest): bash test_plot.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
shared=${2:?shared dir}
scratch=${3:?scratch dir}
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch/run" && cd "$scratch" || exit 1

# A build without libplot says how to get it (one line); such a build skips the rest visibly.
"$bin" plot --help >/dev/null || fail "plot --help"
msg=$("$bin" plot nosuch 2>&1)
if [[ $msg == *"built without libplot"* ]]; then
  [[ $msg == "tezgah: error: "*"install Debian's libplot-dev"* && $(wc -l <<<"$msg") == 1 ]] ||
    fail "no libplot: want one line saying how to get it: $msg"
  echo "SKIPPED: this tezgah was built without libplot (scripts/setup.sh installs libplot-dev)"
  exit 77
fi

# ---- synthetic metrics ---------------------------------------------------------------------
{
  for s in $(seq 1 60); do
    loss=$(awk -v s="$s" 'BEGIN { printf "%.6f", 3 + 2 * exp(-s / 15) }')
    lr=$(awk -v s="$s" 'BEGIN { printf "%.6g", 0.001 * (1 - s / 61) }')
    extra=
    ((s == 1 || s == 21 || s == 41)) && extra=",\"val_loss\":$(awk -v s="$s" 'BEGIN { printf "%.4f", 3.1 + 2 * exp(-s / 15) }')"
    if ((s == 30)); then
      echo "{\"step\":30,\"loss\":null,\"lr\":$lr,\"grad_norm\":null,\"tok_per_s\":1000,\"elapsed_s\":1,\"skipped\":true,\"reason\":\"loss not finite\"}"
    else
      echo "{\"step\":$s,\"loss\":$loss,\"lr\":$lr,\"grad_norm\":0.5,\"tok_per_s\":1000,\"elapsed_s\":1$extra}"
    fi
  done
  echo '{"step":60,"val_loss":3.2,"final":true}'
  printf '{"step":61,"loss":3.0'   # a line being written right now: ignored
} >run/metrics.jsonl

"$bin" plot run --smooth 5 >p.out 2>p.err || fail "plot run: $(cat p.err)"
[[ ! -s p.out ]] || fail "plot wrote to stdout: $(cat p.out)"
grep -q '^plot: wrote run/loss.svg (59 train losses, 4 val losses, 60 learning rates)$' p.err || fail "plot note: $(cat p.err)"
svg=run/loss.svg
[[ -s $svg ]] || fail "no $svg"
if command -v xmllint >/dev/null; then
  xmllint --noout "$svg" || fail "$svg is not well-formed XML"
else
  echo "note: xmllint absent (Debian libxml2-utils): XML well-formedness not checked"
fi
head -c 200 "$svg" | grep -q '<?xml' || fail "$svg does not start with an XML declaration"
grep -q '<svg' "$svg" && grep -q '</svg>' "$svg" || fail "$svg has no <svg> element"
# points of the polylines drawn in one color (libplot's SVG names colors as #rrggbb)
points() { grep -o "<polyline points=\"[^\"]*\" stroke=\"$1\"" "${2:-$svg}" | sed 's/.*points="//; s/".*//' | wc -w; }
[[ $(points '#b0c4de') == 59 ]] || fail "train loss line: $(points '#b0c4de') points, want 59 (60 steps, 1 skipped)"
[[ $(points '#0000cd') == 59 ]] || fail "moving average line: $(points '#0000cd') points, want 59"
[[ $(points red) == 4 ]] || fail "val loss line: $(points red) points, want 4"
[[ $(points '#006400') == 60 ]] || fail "learning rate line: $(points '#006400') points, want 60"
[[ $(grep -c '<circle .*fill="red"' "$svg") == 5 ]] || fail "want 4 val markers + 1 in the legend: $(grep -c '<circle' "$svg")"
texts=$(grep -o '<text[^>]*>[^<]*</text>' "$svg" | sed 's/<[^>]*>//g')
for want in 'run: 60 steps, loss 3.036' 'val 3.2000@60' 'loss (nats/token)' 'learning rate' 'step' 'train loss' \
  'mean of the last 5 steps' 'val loss' '1 skipped step left out'; do
  grep -qF "$want" <<<"$texts" || fail "$svg lacks the text '$want': $(tr '\n' '|' <<<"$texts")"
done
# a step line's val_loss was measured before it: the step-41 line's point sits at step 40, 2/3 of 0..60
cx=$(grep -o '<circle cx="[0-9.]*"' "$svg" | sed -n 3p | grep -o '[0-9.]*')
x0=$(grep -o '<circle cx="[0-9.]*"' "$svg" | sed -n 1p | grep -o '[0-9.]*')
x4=$(grep -o '<circle cx="[0-9.]*"' "$svg" | sed -n 4p | grep -o '[0-9.]*')
awk -v a="$x0" -v c="$cx" -v d="$x4" 'BEGIN { r = (c - a) / (d - a); exit !(r > 0.66 && r < 0.67) }' ||
  fail "val markers at x $x0 $cx $x4: the step-40 marker is not at 2/3 of 0..60"

"$bin" plot run/metrics.jsonl --out loss.PNG 2>/dev/null || fail "plot to PNG from a metrics file"
[[ $(head -c 8 loss.PNG | od -An -tx1 | xargs) == "89 50 4e 47 0d 0a 1a 0a" ]] || fail "loss.PNG lacks the PNG signature"
[[ $(head -c 24 loss.PNG | tail -c 8 | od -An -tx1 | xargs) == "00 00 03 20 00 00 02 58" ]] || fail "PNG is not 800x600"
"$bin" plot run/metrics.jsonl 2>/dev/null && cmp -s run/loss.svg "$svg" || fail "plot METRICS.jsonl differs from plot RUN_DIR"

# ---- bad inputs: one line, exit 1, nothing written ------------------------------------------
err_case() { # expected-text command...
  local want=$1
  shift
  "$@" >e.out 2>e.err </dev/null
  local rc=$?
  ((rc == 1)) || fail "'$*': exit $rc, want 1"
  [[ $(wc -l <e.err) == 1 && $(cat e.err) == "tezgah: error: "*"$want"* ]] || fail "'$*': want one line with '$want': $(cat e.err)"
  [[ -z $(find . -name '*.tmp.*') ]] || fail "'$*': temporary file left: $(find . -name '*.tmp.*')"
}
mkdir -p norun empty bad
: >empty/metrics.jsonl
{ echo '{"step":1,"loss":3,"lr":0.1}'; echo 'oops'; } >bad/metrics.jsonl
echo '{"loss":3}' >bad/nostep.jsonl
cp "$svg" keep.svg
sum=$(sha256sum <keep.svg)
err_case "nosuch: no such run directory or metrics file" "$bin" plot nosuch
err_case "norun: run directory has no metrics.jsonl" "$bin" plot norun
err_case "empty/metrics.jsonl: no training steps recorded (empty metrics)" "$bin" plot empty
err_case "bad/nostep.jsonl: no valid line (1 malformed, the first at line 1: field 'step' is missing" \
  "$bin" plot bad/nostep.jsonl --out keep.svg
err_case "--out: '.svg' has no file name before .svg (e.g. loss.svg)" "$bin" plot run --out .svg
err_case "--out: 'sub/.PNG' has no file name before .PNG" "$bin" plot run --out sub/.PNG
err_case "--out: 'x.pdf' must end in .svg or .png" "$bin" plot run --out x.pdf
err_case "--out: 'svg' must end in .svg or .png" "$bin" plot run --out svg
err_case "nodir/x.svg: cannot write: No such file or directory" "$bin" plot run --out nodir/x.svg
# an output that is a directory, or stdout, refused before any drawing
mkdir -p dir.svg
err_case "--out: 'dir.svg' is a directory; give a file name" "$bin" plot run --out dir.svg
err_case "--out: '-' (stdout) is not taken for a plot; give a file name" "$bin" plot run --out -
[[ -z $(ls -A dir.svg) && ! -e - ]] || fail "a refused --out was written"
# the default output (RUN/loss.svg) that is a directory: no --out was given to name
mkdir -p dirrun/loss.svg && cp run/metrics.jsonl dirrun/
err_case "dirrun/loss.svg is a directory; the plot is not drawn" "$bin" plot dirrun
[[ -z $(ls -A dirrun/loss.svg) ]] || fail "a refused default output was written"
# a write that fails (a full disk) names the output and the OS error, one line, nothing left. The
# page goes to a temporary file renamed over --out, so /dev/full cannot stand in for the disk:
# a file size limit of 1 KiB does (ulimit -f; SIGXFSZ ignored, so write(2) fails with EFBIG,
# "File too large", the way a full disk fails with ENOSPC). Before the fix libplot wrote the file
# and said only "libplot failed to finish the SVG page" (PNG: libpng's own line besides).
for f in full.svg full.png; do
  err_case "$f: write failed: File too large" bash -c 'ulimit -f 1; trap "" XFSZ; exec "$@"' - "$bin" plot run --out $f
  [[ ! -e $f ]] || fail "a failed write left $f"
done
err_case "--smooth: 0 is out of range" "$bin" plot run --smooth 0
err_case "plot: unexpected argument 'more'" "$bin" plot run more
err_case "plot: give a run directory" "$bin" plot
[[ $(sha256sum <keep.svg) == "$sum" ]] || fail "a failed plot changed the existing output"
[[ ! -e x.pdf && ! -e empty/loss.svg && ! -e norun/loss.svg ]] || fail "a failed plot left a file"

# ---- malformed lines are left out (train --resume drops them too) with one note ------------
{ echo '{"step":1,"loss":3,"lr":0.1}'; echo 'oops'; echo '{"step":2,"loss":2.5,"lr":0.1}'; echo '{"loss":1}';
  echo '{"step":3,"lo'; echo '{"step":3,"loss":2,"lr":0.1}'; } >bad/metrics.jsonl
"$bin" plot bad >b.out 2>b.err || fail "plot with malformed lines: $(cat b.err)"
grep -qx 'note: bad/metrics.jsonl: 3 malformed lines left out (the first at line 2: not a JSON object)' b.err ||
  fail "malformed lines: want one note naming line 2 and the count 3: $(cat b.err)"
[[ $(grep -c . b.err) == 2 ]] && grep -q '(3 train losses' b.err || fail "malformed lines: $(cat b.err)"
# ---- one step: visible dots (a polyline of one point draws nothing) -------------------------
mkdir -p one && echo '{"step":1,"loss":5.5,"lr":0.001}' >one/metrics.jsonl
"$bin" plot one 2>one.err || fail "plot of one step"
grep -qx 'plot: wrote one/loss.svg (1 train loss, 0 val losses, 1 learning rate)' one.err || fail "one step: $(cat one.err)"
mkdir -p oneval && echo '{"step":1,"loss":5.5,"lr":0.001,"val_loss":5.6}' >oneval/metrics.jsonl
"$bin" plot oneval 2>oneval.err && grep -q '(1 train loss, 1 val loss, 1 learning rate)$' oneval.err ||
  fail "one validation: want '1 val loss': $(cat oneval.err)"
[[ $(grep -c '<circle .*fill="#0000cd"' one/loss.svg) == 1 && $(grep -c '<circle .*fill="#006400"' one/loss.svg) == 1 ]] ||
  fail "one step: want a loss dot and a learning-rate dot: $(grep '<circle' one/loss.svg)"
# ---- every step skipped: the learning rate is drawn and the title says so --------------------
mkdir -p allskip
for s in 1 2 3; do echo "{\"step\":$s,\"loss\":null,\"lr\":0.00$s,\"skipped\":true,\"reason\":\"loss not finite\"}"; done >allskip/metrics.jsonl
"$bin" plot allskip 2>as.err || fail "plot of a run whose steps were all skipped: $(cat as.err)"
[[ $(points '#006400' allskip/loss.svg) == 3 ]] || fail "all skipped: want the 3 learning rates drawn"
texts=$(grep -o '<text[^>]*>[^<]*</text>' allskip/loss.svg | sed 's/<[^>]*>//g')
grep -qF 'allskip: 3 steps, all 3 skipped' <<<"$texts" && grep -qF 'no training loss: all 3 steps were skipped' <<<"$texts" ||
  fail "all skipped: title/panel text: $(tr '\n' '|' <<<"$texts")"

# ---- train --plot on a tiny real run -------------------------------------------------------
src=$shared/data/tinyshakespeare.txt
if [[ -f $src ]]; then
  head -c 20000 "$src" >c.txt
  "$bin" train --data c.txt --vocab-size 280 --n-layer 1 --n-head 2 --d-model 32 -B 2 -T 32 --threads 1 --steps 12 \
    --val-every 5 --val-batches 1 --sample-tokens 0 --quiet --plot --run-dir tiny 2>t.err || fail "train --plot: $(cat t.err)"
  [[ -s tiny/loss.svg ]] || fail "train --plot wrote no tiny/loss.svg"
  svg=tiny/loss.svg
  [[ $(points '#0000cd') == 12 ]] || fail "train --plot: $(points '#0000cd') train-loss points, want 12"
  [[ $(grep -c '<circle .*fill="red"' "$svg") == 5 ]] || fail "train --plot: want val markers at steps 0, 5, 10, 12 + legend"
  mkdir -p tinyd/loss.svg # train --plot's RUN/loss.svg a directory: the run is kept, the plot refused (exit 1)
  err_case "tinyd/loss.svg is a directory; the plot is not drawn" "$bin" train --data c.txt --vocab-size 280 --n-layer 1 \
    --n-head 2 --d-model 32 -B 2 -T 32 --threads 1 --steps 2 --val-every 0 --sample-tokens 0 --quiet --plot --run-dir tinyd
else
  echo "note: $src absent: train --plot not checked"
fi
echo "ok: plot SVG (points, markers, labels), PNG signature and size, bad inputs, train --plot"
