#!/usr/bin/env bash
# Bit-identical CPU results whatever the machine-dependent choices (issue 21, docs/RELIABILITY.md):
# a small llama (GQA) and a small gpt2 are trained once as the reference, then again with
#  - each GEMM micro-kernel this CPU runs, forced (TEZGAH_CPU_ISA=avx512|avx2|scalar): what an
#    AVX-512, an AVX2-only and any other x86-64 CPU pick by themselves;
#  - the AVX-512 kernel's other register tiles, MC and loop order (TEZGAH_MM_TILE/MC/LOOP);
#  - 1 and 2 threads;
#  - every buffer misaligned (TEZGAH_CPU_MISALIGN=4|20|36: data 4..36 bytes past 64-byte
#    boundaries, where the allocator would put them for another model or loader);
#  - a run stopped after 3 steps and resumed under another kernel, thread count and alignment;
#  - other builds of tezgah given in TZ_DET_OTHER (scripts/ci_isa.sh: -march=x86-64-v2 / v3).
# Every run's per-step losses (17 significant digits in metrics.jsonl) must equal the
# reference's as text. Then the logits of each exported form of the trained models (llama:
# llama2.c file, Hugging Face directory; gpt2: llm.c file, Hugging Face directory) must equal
# the run's own, bit for bit, under each kernel and with misaligned buffers.
# The OpenBLAS path (TZ_MATMUL=blas, opt-in) is not covered: its bits depend on the CPU and the
# thread count by design (docs/RELIABILITY.md).
# Usage (from ctest): bash test_determinism.sh <tezgah-binary> <shared-dir> <scratch-dir>
set -uo pipefail
tz=$(realpath "${1:?tezgah binary}")
[[ -x $tz ]] || { echo "FAIL: no tezgah binary at $1"; exit 1; }
scratch=${3:?scratch dir}
src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # skip, enter_scratch, fail, ok
enter_scratch
unset TEZGAH_CPU_ISA TEZGAH_CPU_MISALIGN TZ_MATMUL OMP_NUM_THREADS TEZGAH_MM_TILE TEZGAH_MM_MC TEZGAH_MM_LOOP
cat "$src"/README.md "$src"/docs/FORMATS.md >a.txt

# The kernels this CPU can run (a forced kernel the CPU lacks is a one-line error: checked).
isas=()
for isa in avx512 avx2 scalar; do
  TEZGAH_CPU_ISA=$isa TEZGAH_WEBGPU_LIB=/nonexistent "$tz" info >probe.out 2>&1
  if grep -q "^cpu: available, GEMM kernel $isa " probe.out; then
    isas+=("$isa")
  elif grep -q "^cpu: unavailable: TEZGAH_CPU_ISA=$isa: this CPU lacks the instructions" probe.out; then
    echo "note: this CPU lacks $isa: that kernel is not compared here (the CI machine runs it)"
  else
    fail "probe of $isa: $(grep '^cpu:' probe.out)"
  fi
done
((${#isas[@]} >= 2)) && ok "kernels compared: ${isas[*]}" || fail "fewer than two kernels to compare: ${isas[*]}"

losses() { grep -o '"\(val_\)\?loss":[-0-9.e+]*' "$1/metrics.jsonl"; }
# train NAME ARCH [env...]: 6 steps of a small model of ARCH under the given environment
train() {
  local name=$1 arch=$2 shape
  shift 2
  if [[ $arch == llama ]]; then shape=(--n-layer 2 --n-head 4 --n-kv-head 2 --d-model 64)
  else shape=(--arch gpt2 --n-layer 2 --n-head 2 --d-model 64); fi
  env "$@" "$tz" train --data a.txt --vocab-size 300 "${shape[@]}" -B 4 -T 32 --steps 6 --seed 11 \
    --val-every 3 --sample-tokens 0 --quiet --run-dir "runs/$name" "${ADD[@]}" 2>"$name.err" ||
    { fail "train $name: $(tail -1 "$name.err")"; return 1; }
}
same() { # name: its losses against the reference of its arch
  if [[ -n $(losses "runs/$1") ]] && diff <(losses "runs/ref_$2") <(losses "runs/$1") >/dev/null; then
    ok "$1: losses identical to ref_$2"
  else
    fail "$1: losses differ from ref_$2: $(diff <(losses "runs/ref_$2") <(losses "runs/$1") | head -4 | tr '\n' ' ')"
  fi
}

ADD=()
for arch in llama gpt2; do
  train "ref_$arch" $arch OMP_NUM_THREADS=2 || continue
  i=0
  for isa in "${isas[@]}"; do
    for th in 1 2; do
      mis=$(((i % 3) * 16 + 4)) # 4, 20, 36: every other run misaligned
      ((i % 2)) || mis=0
      name=${arch}_${isa}_t${th}_m${mis}
      train "$name" $arch TEZGAH_CPU_ISA=$isa OMP_NUM_THREADS=$th TEZGAH_CPU_MISALIGN=$mis && same "$name" $arch
      i=$((i + 1))
    done
  done
  # the AVX-512 kernel's other register tiles, cache block and loop order (TEZGAH_MM_TILE,
  # TEZGAH_MM_MC, TEZGAH_MM_LOOP: chosen per CPU or for measurements, never part of the bits)
  if [[ " ${isas[*]} " == *" avx512 "* ]]; then
    train "${arch}_14x32pf" $arch TEZGAH_CPU_ISA=avx512 TEZGAH_MM_TILE=14x32pf TEZGAH_MM_LOOP=strips \
      TEZGAH_MM_MC=40 OMP_NUM_THREADS=2 && same "${arch}_14x32pf" $arch
    train "${arch}_12x32" $arch TEZGAH_CPU_ISA=avx512 TEZGAH_MM_TILE=12x32 OMP_NUM_THREADS=1 \
      TEZGAH_CPU_MISALIGN=36 && same "${arch}_12x32" $arch
  fi
  # stop under the narrowest kernel on one thread, resume under the widest on two, misaligned
  last=${isas[${#isas[@]} - 1]}
  ADD=(--stop-after 3)
  train "${arch}_stop" $arch TEZGAH_CPU_ISA=$last OMP_NUM_THREADS=1
  ADD=()
  TEZGAH_CPU_ISA=${isas[0]} OMP_NUM_THREADS=2 TEZGAH_CPU_MISALIGN=20 "$tz" train --resume "runs/${arch}_stop" \
    --quiet --sample-tokens 0 2>resume.err || fail "resume ${arch}_stop: $(tail -1 resume.err)"
  same "${arch}_stop" $arch
  for other in ${TZ_DET_OTHER:-}; do
    [[ -x $other ]] || { fail "TZ_DET_OTHER: no tezgah binary at $other"; continue; }
    b=$(basename "$(dirname "$other")")
    tz_main=$tz tz=$other
    train "${arch}_build_$b" $arch OMP_NUM_THREADS=2 && same "${arch}_build_$b" $arch
    # and a run stopped there after 3 steps, resumed by the same build: the reference's losses
    ADD=(--stop-after 3)
    train "${arch}_build_${b}_stop" $arch OMP_NUM_THREADS=1
    ADD=()
    OMP_NUM_THREADS=2 "$tz" train --resume "runs/${arch}_build_${b}_stop" --quiet --sample-tokens 0 2>resume.err ||
      fail "resume ${arch}_build_${b}_stop: $(tail -1 resume.err)"
    same "${arch}_build_${b}_stop" $arch
    tz=$tz_main
  done
done

# Exports give the run's logits exactly, under every kernel and with misaligned buffers.
ids=1,2,3,17,40,299
logits() { # model [env...]
  local m=$1
  shift
  env "$@" "$tz" logits "$m" --ids $ids 2>/dev/null | tail -n +2 | md5sum | cut -d' ' -f1
}
"$tz" convert --to llama2c runs/ref_llama --out llama.bin 2>/dev/null || fail "convert --to llama2c"
"$tz" convert --to hf runs/ref_llama --out llama_hf 2>/dev/null || fail "convert llama --to hf"
"$tz" convert --to llmc runs/ref_gpt2 --out gpt2.bin 2>/dev/null || fail "convert --to llmc"
"$tz" convert --to hf runs/ref_gpt2 --out gpt2_hf 2>/dev/null || fail "convert gpt2 --to hf"
for arch in llama gpt2; do
  if [[ $arch == llama ]]; then forms=(runs/ref_llama llama.bin llama_hf); else forms=(runs/ref_gpt2 gpt2.bin gpt2_hf); fi
  want=$(logits "${forms[0]}")
  [[ -n $("$tz" logits "${forms[0]}" --ids $ids 2>/dev/null | tail -n +2) ]] || fail "no logits from ${forms[0]}"
  bad=0 n=0
  for f in "${forms[@]}"; do
    for isa in "${isas[@]}"; do
      for mis in 0 36; do
        got=$(logits "$f" TEZGAH_CPU_ISA=$isa TEZGAH_CPU_MISALIGN=$mis OMP_NUM_THREADS=$((1 + n % 2)))
        n=$((n + 1))
        [[ $got == "$want" ]] || { bad=$((bad + 1)); echo "  $f under $isa, misalign $mis: logits differ"; }
      done
    done
  done
  for other in ${TZ_DET_OTHER:-}; do # the exports' logits from the other builds too
    for f in "${forms[@]}"; do
      got=$(tz=$other logits "$f" OMP_NUM_THREADS=2)
      n=$((n + 1))
      [[ $got == "$want" ]] || { bad=$((bad + 1)); echo "  $f by $other: logits differ"; }
    done
  done
  ((n > 0 && bad == 0)) && ok "$arch: logits of ${forms[*]} identical under ${isas[*]}, aligned and not ($n runs)" ||
    fail "$arch: $bad of $n logits runs differ from the run's own"
done

echo "determinism: $failures failure(s)"
((failures == 0))
