#!/usr/bin/env bash
# Is a CUDA refactor the same machine code? Compiles FILE.cu as it is at git revision REV and
# as it is in the working tree to PTX for each ARCH (default 90) and compares them after
# renaming what changes between two compilations of the same code: the anonymous namespace's
# per-file hash, virtual registers and branch labels (numbered by first use in each function) and
# the .reg declarations. Equal PTX for an arch means the same instructions in the same order on
# the same operands up to their names: the same program for ptxas (whose register allocation may
# still differ by names; compare `cuobjdump -sass` of -cubin builds where that tool is installed).
# Exit 0 if every arch is equal, 1 with a short diff otherwise. Needs nvcc (no GPU).
#   scripts/cuda_ptx_same.sh REV src/kernels/attention/attention_fa.cu [80 89 90]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 REV FILE.cu [ARCH...]" >&2; exit 2; }
rev=$1 file=$2; shift 2
archs=("${@:-90}")
root=$(git rev-parse --show-toplevel)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the old tree: the revision's src/ and include/ (headers the file includes may have changed too)
mkdir -p "$tmp/old"
git -C "$root" archive "$rev" src include 2>/dev/null | tar -x -C "$tmp/old" ||
  git -C "$root" archive "$rev" src | tar -x -C "$tmp/old"
norm() {
  python3 - "$1" <<'PY'
import re, sys
seen, count, labels = {}, {}, {}
def reg(mo):
    k = mo.group(0)
    if k not in seen:
        t = mo.group(1); count[t] = count.get(t, 0) + 1; seen[k] = '%%%s_%d' % (t, count[t])
    return seen[k]
def label(mo):
    # numbered by first appearance in the function, as the registers are: a branch to another
    # block than before stays a difference (one name for every label hid it)
    return labels.setdefault(mo.group(0), '$L_%d' % len(labels))
for line in open(sys.argv[1]):
    if re.match(r'(\.visible )?(\.entry|\.func)', line): seen, count, labels = {}, {}, {}
    if re.match(r'\s*\.reg ', line): continue
    line = re.sub(r'_GLOBAL__N__[0-9a-f]+_', '_G_', line)
    line = re.sub(r'%(rd|rs|r|fd|f|p|hh|h)(\d+)', reg, line)
    line = re.sub(r'\$L__BB\d+_\d+', label, line)
    sys.stdout.write(line)
PY
}
rc=0
for a in "${archs[@]}"; do
  for side in old new; do
    dir=$root; [ $side = old ] && dir=$tmp/old
    (cd "$dir" && "$nvcc" -std=c++17 -O3 -arch=sm_$a -ptx -Isrc -Iinclude -o "$tmp/$side.ptx" "$file")
    norm "$tmp/$side.ptx" > "$tmp/$side.$a"
  done
  if cmp -s "$tmp/old.$a" "$tmp/new.$a"; then echo "sm_$a: same PTX ($(wc -l < "$tmp/new.$a") lines)"
  else echo "sm_$a: PTX differs:"; { diff "$tmp/old.$a" "$tmp/new.$a" || true; } | head -20 || true; rc=1; fi
done
exit $rc
