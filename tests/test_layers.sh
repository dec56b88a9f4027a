#!/usr/bin/env bash
# The floors of docs/ARCHITECTURE.md hold: every #include "dir/..." in src/ and every call from
# one object file of the build into another go to a unit that the caller's unit may include (the
# table there), and the table only points down or across a floor, so no circle across floors can
# form. Usage (ctest): test_layers.sh TEZGAH_BINARY [SHARED_DIR TMP_DIR]; the object files are
# read from the binary's build directory (CMakeFiles/*.dir/src); without them, or without nm,
# the call check says so and the include check still runs.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
doc=$root/docs/ARCHITECTURE.md
build=$(dirname "${1:-$root/build/tezgah}")
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The table: "| floor | unit | may include |" rows whose first cell is a number.
table=$(awk -F'|' '$2 ~ /^ *[0-9]+ *$/ {
  gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4); print $3, $2, ($4 == "" ? "-" : $4) }' "$doc")
[[ -n $table ]] || { echo "FAIL: no floor table in $doc"; exit 1; }

# One awk program for both checks: reads the table, then "FILE|LINE|TARGET" records (a file of
# src/ and the src/ path it includes or the file whose symbol it uses) and names each step up.
judge='
function unit(p,   s) { # src-relative path -> unit: a dir/stem row of the table, else the directory
  s = p; sub(/\.[a-z.]+$/, "", s)
  if (s in floor) return s
  sub(/\/.*/, "", p); return p
}
FNR == NR {
  floor[$1] = $2; n = split($3, a, ","); for (i = 1; i <= n; i++) if (a[i] != "-") may[$1 "|" a[i]] = 1
  next
}
NF == 0 { next }
{
  split($0, r, "|"); from = unit(r[1]); to = unit(r[3]); total++
  if (!(from in floor)) { print "FAIL: src/" r[1] ": its unit " from " has no row in the table"; bad++; next }
  if (to == from || to == "core" || (from "|" to) in may) next
  why = (to in floor) ? "floor " floor[from] " -> " floor[to] : to " has no row in the table"
  step = kind == "includes" ? "src/" r[1] ":" r[2] " includes " r[3] : "src/" r[1] " calls " r[2] " of src/" r[3]
  print "FAIL: " step ": " from " may not include " to " (" why ")"; bad++
}
END {
  if (kind == "includes") for (k in may) { # the table itself (once): known units, never a floor up
    split(k, e, "|")
    if (!(e[2] in floor)) { print "FAIL: the table: " e[1] " may include " e[2] ", which has no row"; bad++ }
    else if (floor[e[2]] > floor[e[1]]) {
      print "FAIL: the table: " e[1] " (floor " floor[e[1]] ") may include " e[2] " (floor " floor[e[2]] "), a floor up"; bad++
    }
  }
  print kind ": " total " checked, " bad + 0 " step(s) up"; exit bad > 0 }'

# ---- includes ----
includes=$(cd "$root/src" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+/[^"]+"' \
  --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' . |
  sed -E 's|^\./||; s|^([^:]+):([0-9]+):.*"([^"]+)".*|\1\|\2\|\3|')
awk -v kind=includes "$judge" <(echo "$table") <(echo "$includes") || fails=$((fails + 1))
# an include without a directory must name a file beside its includer (or the public header):
# found through an include path, it would reach another unit unseen by the check above
while IFS=: read -r file line inc; do
  inc=$(sed -E 's/.*"([^"]+)".*/\1/' <<<"$inc")
  [[ $inc == tezgah.h || -f $root/src/$(dirname "$file")/$inc ]] ||
    fail "src/$file:$line includes \"$inc\", which is not beside it (name it as \"dir/$inc\")"
done < <(cd "$root/src" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+"' \
  --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' . | sed 's|^\./||')
# every directory of src/ is a unit of the table (a new one comes with its row)
for d in "$root"/src/*/; do
  d=$(basename "$d")
  awk -v d="$d" '$1 == d {found = 1} END {exit !found}' <<<"$table" ||
    fail "src/$d/ has no row in the table of $doc"
done
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/include/tezgah.h"; then
  fail "include/tezgah.h includes files of ours (above): the public header stands alone"
fi

# ---- calls between object files ----
objs=$(find "$build/CMakeFiles" -path '*.dir/src/*' -name '*.o' 2>/dev/null | sort)
if ! command -v nm >/dev/null; then
  echo "calls: not checked (no nm on this machine)"
elif [[ -z $objs ]]; then
  echo "calls: not checked (no object files under $build/CMakeFiles/*.dir/src)"
else
  # "symbol source" pairs, the object path cut to its src-relative source (CMake: SOURCE.o)
  # shellcheck disable=SC2086
  defs=$(nm -A -g --defined-only $objs | awk 'NF == 3 {f = $1; sub(/^.*\.dir\/src\//, "", f); sub(/\.o:.*$/, "", f); print $3, f}' | sort -k1,1)
  # shellcheck disable=SC2086
  uses=$(nm -A -u $objs | awk '{f = $1; sub(/^.*\.dir\/src\//, "", f); sub(/\.o:.*$/, "", f); print $NF, f}' | sort -k1,1)
  # "CALLER|symbol|DEFINER", one per (caller, definer) pair and symbol
  calls=$(join <(echo "$uses") <(echo "$defs") | awk '$2 != $3 {print $2 "|" $1 "|" $3}' | sort -u)
  awk -v kind=calls "$judge" <(echo "$table") <(echo "$calls") || fails=$((fails + 1))
fi

((fails == 0)) || { echo "test_layers: $fails check(s) failed (docs/ARCHITECTURE.md has the floors)"; exit 1; }
echo "test_layers: every include and call goes down or across a floor"
