#!/usr/bin/env bash
# Build the tokenizer benchmark corpus (>= 200 MB of real text from Debian packages) and an
# xz-compressed copy to carry to another machine.
#
#   bash bench/make_debian_corpus.sh [OUT.txt]     (default data/bench/debian_corpus.txt)
#
# Documents, in this order, each followed by a line "<|endoftext|>" (the document separator):
#   1. the King James Bible (bible-kjv, through scripts/prepare_kjv.sh; skipped when missing)
#   2. every text file under /usr/share/doc (changelogs, READMEs, copyright files; *.gz unpacked),
#      in sorted path order, files that `grep -I` calls binary skipped
#   3. every manual page source under /usr/share/man/man[1-9] (roff, unpacked)
#   4. C headers under /usr/include, Perl modules under /usr/share/perl*, Python under
#      /usr/lib/python3 (sorted), until the corpus holds TARGET_MB (default 210) MB
# NO_XZ=1: skip the compressed copy.
# On the build machine (Debian 12 with scripts/setup.sh's packages) this gave 210,721,288 bytes
# (sha256 e730625ab42faace...) and OUT.xz of 24 MB (2026-12-01). The same file is used by every side of bench/run_tok_gpu_bench.sh.
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/data/bench/debian_corpus.txt}
target=$(( ${TARGET_MB:-210} * 1000000 ))
mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp" "$tmp.kjv"' EXIT
: > "$tmp"
size() { stat -c %s "$tmp"; }
emit() { # file
  if [[ $1 == *.gz ]]; then zcat -f -- "$1" 2>/dev/null | grep -Ia '' || true
  else grep -I '' -- "$1" 2>/dev/null || true; fi
}
if command -v bible >/dev/null 2>&1; then
  bash "$root/scripts/prepare_kjv.sh" "$tmp.kjv" >/dev/null
  cat "$tmp.kjv" >> "$tmp"
  printf '\n<|endoftext|>\n' >> "$tmp"
fi
add_tree() { # find args...
  while IFS= read -r -d '' f; do
    (( $(size) >= target )) && return 0
    emit "$f" >> "$tmp"
    printf '<|endoftext|>\n' >> "$tmp"
  done < <(find "$@" -type f -print0 2>/dev/null | sort -z)
}
add_tree /usr/share/doc
add_tree /usr/share/man -path '*/man[1-9]/*'
add_tree /usr/include -name '*.h'
add_tree /usr/share/perl /usr/share/perl5 -name '*.pm'
add_tree /usr/lib/python3 -name '*.py'
n=$(size)
need=$(( target < 200000000 ? target : 200000000 )) # TARGET_MB below 200: a smaller corpus asked for
if (( n < need )); then echo "make_debian_corpus: only $n bytes of text found (need $((need / 1000000)) MB)" >&2; exit 1; fi
mv "$tmp" "$out"
[[ ${NO_XZ:-0} == 1 ]] || xz -6 -T0 -k -f "$out"
echo "make_debian_corpus: $out: $n bytes; $( [[ -f $out.xz ]] && echo "$out.xz: $(stat -c %s "$out.xz") bytes; ")sha256 $(sha256sum "$out" | cut -c1-16)"
