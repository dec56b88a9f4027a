#!/usr/bin/env bash
# Every help text fits a 79-column terminal: `tezgah --help` and `COMMAND --help` for every
# command that `tezgah --help` lists (so a new command is covered without editing this test),
# plus the nested `tokenizer train --help`. Widths are counted in characters, not bytes (the
# texts hold UTF-8 such as "—" and "≤"); a tab counts as one, so the texts must not use tabs.
# On failure: one line per offending help line, naming the command, line number and width.
# Each command's help also lists exactly the long options it parses: the parser is asked
# (`COMMAND --NAME 1 --help` is refused as "unknown option" / "does not apply" for an option
# the command does not take; candidates are every long option name in src/cli/*.c), and every
# option it takes must be in its help text and, unless the usage line says [options], in the
# usage line itself; every option entry of the help text must be taken.
# Usage (from ctest): bash test_help.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
bin=$(realpath "${1:?tezgah binary}")
src=$(realpath "$(dirname "${BASH_SOURCE[0]}")/..")
scratch=${3:?scratch dir}
max=79
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
export LC_ALL=C.UTF-8 # bash's ${#line} counts characters only in a UTF-8 locale (mawk never)
# About 900 tezgah processes that only parse options: a set wait policy skips the start-up
# probe of the free cores (three 1 ms samples) and the re-exec that sets a passive policy on a
# busy machine (src/cli/main.c), which together cost each call a second process start (half
# of this test's time). No OpenMP team runs here, so the policy changes nothing else.
export OMP_WAIT_POLICY=PASSIVE

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

# ---- the options each command parses against its help text ----
mapfile -t cands < <(grep -ohE '\{"[a-z][a-z0-9-]+", *[012]' "$src"/src/cli/*.c | grep -oE '[a-z][a-z0-9-]+' | sort -u | grep -vx help)
((${#cands[@]} >= 40)) || fail "found only ${#cands[@]} long option names in $src/src/cli/*.c"
# Whether COMMAND takes --NAME itself (getopt_long also takes an unambiguous prefix: --in is
# train's --init-from). A flag given "=1" names itself ("--NAME: takes no value"), an option
# with a value given none names itself too ("option --NAME needs a value"); neither runs.
# About 900 calls: the checks on their output are bash's own (read, [[ =~ ]]), not a grep
# process per call (each process start is ~10 ms of CPU on a loaded 2-core VM).
takes() { # command option
  local err=
  # shellcheck disable=SC2086 # "tokenizer train" is two words on purpose
  "$bin" $1 "--$2" 1 --help >/dev/null 2>p.err </dev/null
  IFS= read -r -d '' err <p.err
  [[ $err =~ unknown\ option|ambiguous|does\ not\ apply ]] && return 1
  local o name
  for o in "${cands[@]}"; do [[ $o != "$2" && $o == "$2"* ]] && break; done
  [[ $o != "$2" && $o == "$2"* ]] || return 0 # no longer name starts with it: no prefix match
  "$bin" $1 "--$2=1" --help >/dev/null 2>p.err </dev/null
  name=$(grep -oE -- '^tezgah: error: --[a-z0-9-]+: takes no value' p.err | sed 's/.*error: //; s/:.*//')
  if [[ -z $name ]]; then
    "$bin" $1 "--$2" >/dev/null 2>p.err </dev/null
    name=$(grep -oE -- 'option --[a-z0-9-]+ needs a value' p.err | cut -d' ' -f2)
  fi
  [[ $name == "--$2" ]]
}
bad=0
for c in "${cmds[@]}"; do
  [[ $c == tokenizer ]] && c="tokenizer train"
  # shellcheck disable=SC2086
  "$bin" $c --help >h.txt 2>/dev/null </dev/null
  # the usage: the "usage:" line and its indented continuation lines
  awk '/^usage:/ { on = 1; print; next } on && /^      / { print; next } on { exit }' h.txt >u.txt
  taken=() help= usage=
  IFS= read -r -d '' help <h.txt
  IFS= read -r -d '' usage <u.txt
  for o in "${cands[@]}"; do
    takes "$c" "$o" || continue
    taken+=("$o")
    # --NAME not followed by a name character (a newline or the end count as not)
    re="--$o([^a-z0-9-]|\$)"
    [[ $help =~ $re ]] || { echo "tezgah $c takes --$o; its --help does not list it"; bad=1; }
    [[ $usage == *"[options]"* || $usage =~ $re ]] ||
      { echo "tezgah $c takes --$o; its usage line does not show it: $(tr -s ' \n' ' ' <u.txt)"; bad=1; }
  done
  # option entries of the help text ("  --name ARG   what", "  -B, --batch-size N   what"):
  # the options before the description column
  for o in $(grep -E '^ {2,4}(-[A-Za-z], )?--[a-z]' h.txt | sed -E 's/^ +//; s/  .*//' | grep -oE -- '--[a-z][a-z0-9-]*' | cut -c3-); do
    [[ $o == help || " ${taken[*]} " == *" $o "* ]] || { echo "tezgah $c --help lists --$o, which it does not take"; bad=1; }
  done
  echo "  $c: ${taken[*]}"
done
((bad == 0)) || fail "help texts that do not list the options their command takes (see above)"
echo "ok: every command's help and usage list the options it takes"

# ---- scripts/main.sh --help: its own usage, before any install, build, train or sample ----
# (it used to pass --help to train, which printed its help, and then ran the sample). A copy
# of main.sh in a scratch tree whose scripts/setup.sh, cmake and nvidia-smi are stubs that
# leave a mark and fail (and which has no build/tezgah): --help must print main.sh's usage on
# stdout, exit 0 and leave no mark.
fake=$PWD/mainsh && mkdir -p "$fake/scripts" "$fake/bin" || fail "mkdir $fake"
cp "$src/scripts/main.sh" "$src/scripts/cuda_choice.sh" "$fake/scripts/" || fail "copy main.sh"
# shellcheck disable=SC2016 # $0 and $* are the stub's own
printf '#!/bin/sh\necho "$0 $*" >>"%s/ran"\nexit 1\n' "$fake" >"$fake/bin/stub" || fail "write the stub"
for s in scripts/setup.sh bin/cmake bin/nvidia-smi; do cp "$fake/bin/stub" "$fake/$s" && chmod +x "$fake/$s" || fail "stub $s"; done
for h in --help -h "--steps 5 --help"; do
  rm -f "$fake/ran"
  # shellcheck disable=SC2086 # "--steps 5 --help" is three words on purpose
  PATH=$fake/bin:$PATH bash "$fake/scripts/main.sh" $h >m.out 2>m.err </dev/null || fail "main.sh $h: exit $? ($(head -3 m.err))"
  [[ ! -e $fake/ran ]] || fail "main.sh $h ran: $(cat "$fake/ran")"
  grep -q '^usage: bash scripts/main.sh' m.out || fail "main.sh $h: no usage line: $(head -3 m.out)"
  grep -q 'tezgah train' m.out || fail "main.sh $h: its usage does not say the options go to tezgah train"
  [[ ! -s m.err ]] || fail "main.sh $h: stderr: $(head -3 m.err)"
  check_width "main.sh $h" m.out || fail "main.sh's usage does not fit $max columns"
done
echo "ok: scripts/main.sh --help prints its own usage and runs nothing"
# A bad train option is refused before the install and the build where a build/tezgah of this
# tree is there (`--steps abc` failed only after both): one error line, exit 1, no mark. Good
# options go on to the install (the stub's mark); a build older than a source file is not asked.
mkdir -p "$fake/build" && ln -sf "$bin" "$fake/build/tezgah" || fail "link $fake/build/tezgah"
rm -f "$fake/ran"
PATH=$fake/bin:$PATH bash "$fake/scripts/main.sh" --steps abc >m.out 2>m.err </dev/null && fail "main.sh --steps abc: exit 0"
[[ ! -e $fake/ran ]] || fail "main.sh --steps abc ran before the option was refused: $(cat "$fake/ran")"
[[ $(cat m.err) == "tezgah: error: --steps: 'abc' is not a decimal integer" && ! -s m.out ]] ||
  fail "main.sh --steps abc: want train's one error line, nothing on stdout: $(head -3 m.err m.out)"
PATH=$fake/bin:$PATH bash "$fake/scripts/main.sh" --steps 5 --lr 1e-3 >m.out 2>m.err </dev/null
grep -q 'setup.sh' "$fake/ran" 2>/dev/null || fail "main.sh --steps 5: good options did not reach the install: $(head -3 m.err)"
# an option last, maybe missing its value: not checked early (the check's --help became
# --run-dir's value, and the check itself trained into ./--help); train says it after the build
rm -f "$fake/ran"
PATH=$fake/bin:$PATH timeout 60 bash "$fake/scripts/main.sh" --steps 5 --run-dir >m.out 2>m.err </dev/null
[[ ! -e $fake/--help && ! -e $fake/runs ]] || fail "main.sh --run-dir: the early check trained: $(ls "$fake")"
grep -q 'setup.sh' "$fake/ran" 2>/dev/null || fail "main.sh --steps 5 --run-dir: did not go on to the install: $(head -3 m.err)"
rm -f "$fake/ran" && mkdir -p "$fake/src" && touch -h -d '2000-01-01' "$fake/build/tezgah" && touch "$fake/src/new.c"
PATH=$fake/bin:$PATH bash "$fake/scripts/main.sh" --steps abc >m.out 2>m.err </dev/null
grep -q 'setup.sh' "$fake/ran" 2>/dev/null || fail "main.sh asked a build/tezgah older than src/: $(head -3 m.err)"
rm -rf "$fake/src" "$fake/build"
echo "ok: scripts/main.sh refuses a bad train option before installing or building"
# stdout carries the sample alone: the install, build and corpus lines and train's progress go
# to stderr (setup.sh's lines, cuda_choice's and main.sh's own "--- ..." headers went to
# stdout, mixed with the sample: the session-37 walkthrough). Stubs that succeed and print on
# stdout: setup.sh, prepare_kjv.sh, cmake; nvidia-smi lists no GPU (cuda_choice says so); a
# build/tezgah whose sample prints one line on stdout and whose train prints on stderr alone.
ok=$PWD/mainsh_ok && mkdir -p "$ok/scripts" "$ok/bin" "$ok/build" || fail "mkdir $ok"
cp "$src/scripts/main.sh" "$src/scripts/cuda_choice.sh" "$ok/scripts/" || fail "copy main.sh"
printf '#!/bin/sh\necho "$0: stub output on stdout"\n' >"$ok/bin/stub" || fail "write the stub"
for s in scripts/setup.sh scripts/prepare_kjv.sh bin/cmake; do cp "$ok/bin/stub" "$ok/$s" && chmod +x "$ok/$s" || fail "stub $s"; done
printf '#!/bin/sh\necho "no GPU"\nexit 6\n' >"$ok/bin/nvidia-smi" && chmod +x "$ok/bin/nvidia-smi" || fail "stub nvidia-smi"
# shellcheck disable=SC2016 # $1 and $* are the stub's own
printf '#!/bin/sh\ncase $1 in\n  train) case "$*" in *--help*) echo "train help" ;; *) echo "1/2 [#.] loss 5.0" >&2 ;; esac ;;\n  sample) echo "And God said SAMPLE" ;;\nesac\n' \
  >"$ok/build/tezgah" && chmod +x "$ok/build/tezgah" || fail "stub build/tezgah"
PATH=$ok/bin:$PATH bash "$ok/scripts/main.sh" --steps 2 >m.out 2>m.err </dev/null || fail "main.sh with stubs: exit $? ($(head -3 m.err))"
[[ $(cat m.out) == "And God said SAMPLE" ]] || fail "main.sh: stdout is not the sample alone: $(head -5 m.out)"
for want in 'setup.sh: stub output' 'prepare_kjv.sh: stub output' '--- building tezgah' '--- no NVIDIA GPU visible' '1/2 [#.] loss' '--- tezgah sample'; do
  grep -qF -- "$want" m.err || fail "main.sh: '$want' is not on stderr: $(head -12 m.err)"
done
echo "ok: scripts/main.sh prints the sample alone on stdout, its other lines on stderr"
# README's Tests section says what ../shared is and what happens without it (it named it only:
# "Tests that need ../shared ... report SKIPPED")
shared_par=$(awk 'BEGIN { RS = "" } /Tests read fixtures from/ { print; exit }' "$src/README.md" | tr '\n' ' ')
[[ $shared_par == *'`../shared`, the directory beside the repository ('* && $shared_par == *'report SKIPPED with the reason'* ]] ||
  fail "README does not say what ../shared is and that its tests report SKIPPED without it: $(head -c 200 <<<"$shared_par")"
echo "ok: README says what ../shared is"

# ---- tezgah env lists exactly the environment variables that src/ reads ----
# Every "TEZGAH_..." / "TZ_..." string quoted in src/ is a variable tezgah reads (getenv,
# env_int, the names train --nproc sets for its ranks); cmd_env.c, the table itself, is left
# out. A name built at run time ("TEZGAH_WEBGPU_ATTN_%s_RG") is a pattern, %s standing for
# [A-Z0-9]+, which the table lists expanded. Both ways: a switch read but not in the table (a
# user cannot find it), a table entry no longer read anywhere (it documents nothing).
"$bin" env >env.out 2>env.err || fail "tezgah env: exit $? ($(head -3 env.err))"
check_width "env" env.out || fail "tezgah env does not fit $max columns"
table=$(grep -oE '^  (TEZGAH|TZ)_[A-Z0-9_]+' env.out | sed 's/^  //')
[[ -z $(sort <<<"$table" | uniq -d) ]] || fail "tezgah env lists twice: $(sort <<<"$table" | uniq -d | tr '\n' ' ')"
read_names=$(grep -rhoE --exclude=cmd_env.c '"(TEZGAH|TZ)_[A-Z0-9_%s]+"' "$src/src" | tr -d '"' | sort -u)
((${#table} > 0 && ${#read_names} > 0)) || fail "no names found (table: ${#table} bytes, src/: ${#read_names})"
bad=0
for n in $read_names; do
  grep -qE "^${n//%s/[A-Z0-9]+}\$" <<<"$table" || { echo "src/ reads $n; tezgah env does not list it"; bad=1; }
done
for t in $table; do
  hit=0
  for n in $read_names; do [[ $t =~ ^${n//%s/[A-Z0-9]+}$ ]] && { hit=1; break; }; done
  ((hit)) || { echo "tezgah env lists $t; nothing in src/ reads it"; bad=1; }
done
((bad == 0)) || fail "tezgah env's table (src/cli/cmd_env.c) and the variables src/ reads differ (see above)"
# a variable set here is shown with its value, and --set shows only those
# (in a subshell without the TEZGAH_* / TZ_* the test's own environment sets: ctest's lavapipe
# entries set TEZGAH_WEBGPU_WAIT_S, which --set rightly showed as a third)
(for v in $(compgen -e | grep -E '^(TEZGAH|TZ)_'); do unset "$v"; done
 TZ_MATMUL=c TEZGAH_PROFILE_SHAPES=0 "$bin" env --set) >env_set.out 2>&1 || fail "tezgah env --set: exit $?"
[[ $(grep -cE '^  (TEZGAH|TZ)_' env_set.out) == 2 ]] && grep -q '^  TZ_MATMUL (default: c) = c$' env_set.out ||
  fail "tezgah env --set with TZ_MATMUL=c TEZGAH_PROFILE_SHAPES=0: $(head -c 400 env_set.out)"
echo "ok: tezgah env lists the $(wc -w <<<"$table") variables src/ reads, and their values where set"
