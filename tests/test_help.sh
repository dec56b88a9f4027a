#!/usr/bin/env bash
# Every help text fits a 79-column terminal: `tezgah --help` and `COMMAND --help` for every
# command that `tezgah --help` lists (so a new command is covered without editing this test),
# plus the nested `tokenizer train --help`. Widths are counted in characters, not bytes (the
# texts hold UTF-8 such as "—" and "≤"); a tab counts as one, so the texts must not use tabs.
# On failure: one line per offending help line, naming the command, line number and width.
# Usage (from ctest): bash test_help.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
scratch=${3:?scratch dir}
max=79
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
export LC_ALL=C.UTF-8 # bash's ${#line} counts characters only in a UTF-8 locale (mawk never)

# Prints "NAME: line N is W columns (> max): TEXT" for each line of FILE wider than $max; exit 1
# if there was one. Invalid UTF-8 is a failure too (its width cannot be told), and so is a tab.
check_width() { # name file
  iconv -f UTF-8 -t UTF-8 <"$2" >/dev/null 2>&1 || { echo "$1: output is not valid UTF-8"; return 1; }
  grep -q $'\t' "$2" && { echo "$1: output holds a tab (its width depends on the terminal)"; return 1; }
  local line n=0 bad=0
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    if ((${#line} > max)); then
      echo "$1: line $n is ${#line} columns (> $max): $line"
      bad=1
    fi
  done <"$2"
  return $bad
}

# The locale must count "—" as one character, or every check below would be off.
dash=$'\xe2\x80\x94'
[[ ${#dash} == 1 ]] || fail "bash does not count UTF-8 characters in LC_ALL=C.UTF-8 (no such locale?)"

"$bin" --help >top.txt 2>top.err || fail "tezgah --help: exit $?"
# The command list: the lines after "commands:", two spaces, a name, then its description.
mapfile -t cmds < <(awk '/^commands:/ { on = 1; next } on && /^  [a-z][a-z0-9-]* / { print $1 }' top.txt)
((${#cmds[@]} >= 10)) || fail "found only ${#cmds[@]} commands in tezgah --help: ${cmds[*]}"

bad=0
check_width "tezgah --help" top.txt || bad=1
checked=("--help")
for c in "${cmds[@]}" "tokenizer train"; do
  # shellcheck disable=SC2086 # "tokenizer train" is two words on purpose
  "$bin" $c --help >h.txt 2>h.err </dev/null || { echo "tezgah $c --help: exit $?"; bad=1; continue; }
  [[ -s h.txt ]] || { echo "tezgah $c --help: printed nothing on stdout"; bad=1; continue; }
  check_width "tezgah $c --help" h.txt || bad=1
  checked+=("$c")
done
((bad == 0)) || fail "help texts that do not fit $max columns (see above)"
echo "ok: ${#checked[@]} help texts fit $max columns: ${checked[*]}"
