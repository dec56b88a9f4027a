#!/usr/bin/env bash
# Hugging Face parity on a machine with torch + transformers (no internet needed):
#   1. trains a small llama (GQA, untied lm_head) and a small gpt2 with tezgah for a few steps on
#      the repository's own text (README.md + docs/*.md; tokenizer: a 320-token BPE trained on it),
#   2. exports both with `tezgah convert --to hf`,
#   3. runs tools/hf_parity.py: transformers loads the exports (logits vs tezgah's, tokenizer ids
#      vs tezgah's), and saves tiny random HF models whose logits tezgah must reproduce;
#   4. leaves the CI fixtures in OUT_DIR (hf_llama, hf_llama_fp16, hf_gpt2, hf_gpt2_bf16,
#      hf_tokenizer) with hf_parity_report.json and hf_parity.log. Copy OUT_DIR/hf_* to
#      tests/fixtures/ and tests/test_hf_fixture.c checks them in CI.
# Usage: bash tools/hf_parity.sh TEZGAH_BINARY OUT_DIR
#   (libraries next to the binary in ../lib are found: .dev/bin/tezgah + .dev/lib)
set -euo pipefail
tz=$(realpath "${1:?usage: tools/hf_parity.sh TEZGAH_BINARY OUT_DIR}")
out=${2:?usage: tools/hf_parity.sh TEZGAH_BINARY OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
lib=$(dirname "$(dirname "$tz")")/lib
[[ -d $lib ]] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exec > >(tee "$out/hf_parity.log") 2>&1
echo "tezgah: $tz ($("$tz" --version))"
python3 -c 'import torch, transformers, safetensors, tokenizers; print("torch", torch.__version__, "transformers", transformers.__version__)'

cat "$root"/README.md "$root"/docs/*.md >"$work/corpus.txt"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
common=(--data "$work/corpus.txt" --vocab-size 320 -B 4 -T 64 --steps 30 --lr 3e-3 --val-every 0 --sample-tokens 0
  --quiet --backend cpu)
"$tz" train "${common[@]}" --n-layer 2 --n-head 4 --n-kv-head 2 --d-model 64 --untied --run-dir "$work/runs/llama"
"$tz" train "${common[@]}" --arch gpt2 --n-layer 2 --n-head 4 --d-model 64 --run-dir "$work/runs/gpt2"
for m in llama gpt2; do
  "$tz" convert --to hf "$work/runs/$m" --out "$work/hf_$m"
done
texts=()
[[ -f $root/../shared/gpt2/vectors.json ]] && texts=(--texts "$root/../shared/gpt2/vectors.json")
python3 "$root/tools/hf_parity.py" --tezgah "$tz" --work "$work/py" --out "$out" "${texts[@]}" \
  --export "llama=$work/hf_llama:$work/runs/llama" --export "gpt2=$work/hf_gpt2:$work/runs/gpt2"
du -sh "$out"/hf_*/ | sed 's/^/fixture size: /'
