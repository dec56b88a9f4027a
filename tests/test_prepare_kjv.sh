#!/usr/bin/env bash
# scripts/prepare_kjv.sh: structure of the KJV text, determinism, no temporary files.
# Usage (from ctest): bash test_prepare_kjv.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -euo pipefail
scratch=${3:?scratch dir}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v bible >/dev/null 2>&1; then
  echo "SKIPPED: the bible program (package bible-kjv) is not installed"
  exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch"
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$here/../scripts/prepare_kjv.sh" "$scratch/a/kjv.txt" | tee "$scratch/log"
grep -q "wrote $scratch/a/kjv.txt: [0-9]* bytes" "$scratch/log" || fail "no byte count printed"
COLUMNS=33 bash "$here/../scripts/prepare_kjv.sh" "$scratch/b.txt" >/dev/null
cmp -s "$scratch/a/kjv.txt" "$scratch/b.txt" || fail "output differs between runs"

f=$scratch/a/kjv.txt
[[ $(grep -c '^<|endoftext|>$' "$f") == 65 ]] || fail "expected 65 book separators"
[[ $(grep -c '^$' "$f") == 1123 ]] || fail "expected 1123 blank lines (1189 chapters - 66 books)"
[[ $(grep -vc -e '^$' -e '^<|endoftext|>$' "$f") == 31102 ]] || fail "expected 31102 verse lines"
[[ $(head -1 "$f") == "In the beginning God created the heaven and the earth." ]] || fail "first line"
[[ $(tail -1 "$f") == "The grace of our Lord Jesus Christ be with you all. Amen." ]] || fail "last line"
! grep -qE '^(Genesis|Exodus|Revelation) [0-9]+$' "$f" || fail "chapter headings left in"
! grep -qE '^[[:space:]]*[0-9]+ ' "$f" || fail "verse numbers left in"
! grep -qE ' $|  ' "$f" || fail "trailing or doubled spaces"
# Genesis ends, Exodus starts right after the separator
grep -A1 -m1 '^<|endoftext|>$' "$f" | tail -1 | grep -q '^Now these are the names of the children of Israel' \
  || fail "Exodus does not follow the first separator"
! ls "$scratch"/a/*.tmp.* >/dev/null 2>&1 || fail "temporary file left behind"
echo "ok"
