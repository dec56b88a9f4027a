#!/usr/bin/env bash
# Write the King James Bible (Debian's bible-kjv package) as plain training text.
#
#   scripts/prepare_kjv.sh [OUT]      (default: data/kjv.txt under the repository root)
#
# Source: `bible Gen1:1-Rev22:21`, which prints, per chapter, a blank line, a heading
# "<Book> <chapter>", a blank line, then verses as "  <n> <text>" wrapped onto
# continuation lines. Output:
#   - one verse per line (verse number removed, wrapped lines re-joined, runs of spaces
#     collapsed to one, trailing spaces removed);
#   - chapter headings dropped; a blank line between chapters of the same book;
#   - a line containing only <|endoftext|> between books (the tokenizer's document
#     separator); none before the first book or after the last.
# Deterministic (LC_ALL=C, fixed line width) and fast (well under a second). The file is
# written to a temporary name in the same directory and renamed into place, so OUT is
# never half-written. Prints the byte count.
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/data/kjv.txt}

if ! command -v bible >/dev/null 2>&1; then
  echo "prepare_kjv: the 'bible' program is missing (package bible-kjv; run scripts/setup.sh)" >&2
  exit 1
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT

# -l10000: a line width no verse reaches, so the output does not depend on $COLUMNS
# (the awk below re-joins wrapped lines anyway).
bible -l10000 Gen1:1-Rev22:21 | awk '
  function flush() {
    if (have) { gsub(/[ \t]+/, " ", verse); sub(/ $/, "", verse); print verse; have = 0 }
  }
  /^[ \t]*$/ { flush(); blank = 1; next }              # blank line around headings
  /^[ \t]+[0-9]+[ \t]/ {                               # "  <n> <text>": a new verse
    flush(); blank = 0
    verse = $0; sub(/^[ \t]+[0-9]+[ \t]+/, "", verse); have = 1; nverse++
    next
  }
  blank {                                              # "<Book> <chapter>" heading
    blank = 0
    book = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", book)
    if (nchap > 0) print (book != prev ? "<|endoftext|>" : "")
    if (book != prev) nbook++
    prev = book; nchap++
    next
  }
  {                                                    # continuation of a wrapped verse
    line = $0; sub(/^[ \t]+/, "", line); sub(/[ \t]+$/, "", verse)
    verse = verse " " line
  }
  END {
    flush()
    printf "%d books, %d chapters, %d verses\n", nbook, nchap, nverse > "/dev/stderr"
    if (nverse == 0) exit 1
  }
' >"$tmp" 2>"$tmp.stats" || { cat "$tmp.stats" >&2; rm -f "$tmp.stats"; echo "prepare_kjv: conversion failed" >&2; exit 1; }
stats=$(cat "$tmp.stats")
rm -f "$tmp.stats"
sync "$tmp" 2>/dev/null || true
mv -f "$tmp" "$out"
trap - EXIT
bytes=$(wc -c <"$out")
echo "prepare_kjv: wrote $out: $bytes bytes ($stats)"
