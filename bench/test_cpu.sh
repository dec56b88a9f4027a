#!/usr/bin/env bash
# CPU seconds (user + sys of the test and of every process it started, orphans included:
# bench/cpu_tree.py; until 2026-12-02 /usr/bin/time, which missed the processes nobody waited
# for, such as Chromium's GPU process) of ctest entries, each run alone from a cold shader
# cache: Mesa's cache (lavapipe's LLVM code) is pointed at an empty directory per entry, as on
# a fresh clone or in CI. Wall time on a shared machine says little;
# CPU seconds are what a 2-core machine has to spend (docs/RELIABILITY.md, "What the test
# command costs"). Each entry runs as ctest would run it (its command, working directory and
# ENVIRONMENT property, from `ctest --show-only=json-v1`) but without ctest's TIMEOUT, which
# a loaded machine can hit. Extra environment (e.g. GALLIVM_PERF=nopt) passes through to the
# test unless the entry sets the same variable.
#   bash bench/test_cpu.sh [--build DIR] [--warm] NAME...      (NAME: a ctest entry, exact)
# Prints one line per entry: "NAME  RESULT  user sys wall" (seconds), RESULT = Passed, Skipped
# or Failed(exit code); the test's output goes to DIR/test-cpu-NAME.log.
set -uo pipefail
build=build warm=0
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --warm) warm=1 ;;
    *) break ;;
  esac
  shift
done
(($#)) || { echo "usage: bench/test_cpu.sh [--build DIR] [--warm] NAME..." >&2; exit 2; }
build=$(realpath "$build")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=$(mktemp -d "${TMPDIR:-/tmp}/tz-test-cpu.XXXXXX")
trap 'rm -rf "$cache" "$cache.json" "$cache.time"' EXIT
json=$cache.json
ctest --test-dir "$build" --show-only=json-v1 >"$json" || exit 1
for name in "$@"; do
  ((warm)) || { rm -rf "$cache" && mkdir -p "$cache"; }
  # NUL-separated: working directory, then KEY=VALUE pairs, then "--", then the command
  mapfile -d '' spec < <(python3 - "$json" "$name" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = [t for t in d["tests"] if t["name"] == sys.argv[2]]
if not t:
    sys.exit(f"test_cpu: no ctest entry named {sys.argv[2]}")
p = {x["name"]: x["value"] for x in t[0].get("properties", [])}
out = [p.get("WORKING_DIRECTORY", ".")] + p.get("ENVIRONMENT", []) + ["--"] + t[0]["command"]
sys.stdout.write("".join(s + "\0" for s in out))
EOF
  )
  ((${#spec[@]})) || exit 1
  dir=${spec[0]} envs=() i=1
  while [[ ${spec[i]} != -- ]]; do envs+=("${spec[i]}"); i=$((i + 1)); done
  cmd=("${spec[@]:i+1}")
  log=$build/test-cpu-$name.log
  (cd "$dir" && MESA_SHADER_CACHE_DIR=$cache XDG_CACHE_HOME=$cache python3 "$here/cpu_tree.py" "$cache.time" \
    env ${envs[@]+"${envs[@]}"} "${cmd[@]}" >"$log" 2>&1 </dev/null)
  read -r rc user sys wall < <(tail -1 "$cache.time")
  case $rc in 0) result=Passed ;; 77) result=Skipped ;; *) result="Failed($rc)" ;; esac
  printf '%-32s %-10s %s %s %s\n' "$name" "$result" "$user" "$sys" "$wall"
done
