# Shared by the decoding device scripts (scripts/device_cuda_decode5.sh, device_cuda_step.sh):
# sourced after they set $tz, $data (the pack's data/) and $out.
#   decode_setup: a GPT-2 124M-shaped run trained 20 steps on tiny Shakespeare (B 4, T 256) in
#     $w/run (w: a new temporary directory; tok, shard set), S (tezgah sample on it) and
#     same LABEL A B (a line of $out/cli.txt: "identical", or where they differ).
#   decode_run LABEL BATCH [ENV=...]: one whole `tezgah sample` process, 1,000 new tokens, greedy,
#     --stats; appends a line to $out/raw.tsv (label, batch, process s, tokens/s, ms/step, load,
#     weights, prefill, decoding and teardown s, exec-to-main and after-the-command s).
#   decode_table: the markdown table of $out/raw.tsv (min / median per label and batch).
decode_setup() {
  tok=$data/gpt2_tokenizer.bin shard=$data/tiny_shakespeare_train.bin
  w=$(mktemp -d)
  local ts=$SECONDS
  "$tz" train --backend cuda --model gpt2-124m --vocab-size 50257 -B 4 -T 256 --train-shards "$shard" \
    --val-shards "$shard" --steps 20 --val-every 0 --sample-tokens 0 --ckpt-every 0 --run-dir "$w/run" --quiet \
    > "$out/train.log" 2>&1 || { echo "train failed:"; tail -5 "$out/train.log"; }
  echo "train: $((SECONDS - ts)) s"
}
S() { "$tz" sample "$w/run" --tokenizer "$tok" "$@"; }
same() {
  if [[ ! -s $2 || ! -s $3 ]]; then echo "cli: $1: FAILED (no output)" | tee -a "$out/cli.txt"; tail -2 "$out/cli.err"
  elif cmp -s "$2" "$3"; then echo "cli: $1: identical" | tee -a "$out/cli.txt"
  else echo "cli: $1: DIFFERENT ($(cmp "$2" "$3" | head -1))" | tee -a "$out/cli.txt"; fi
}

decode_run() { # label batch [env...]: one whole process, a line of raw.tsv
  local label=$1 b=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  env "$@" "$tz" sample "$w/run" --tokenizer "$tok" --backend cuda --tokens 1000 --ignore-eot --batch "$b" \
    --temperature 0 --stats > "$w/out.txt" 2> "$w/stats.txt"
  rc=$?
  t1=$(date +%s.%N)
  # a detached child tears the context down after the process: let it finish before the next
  # process starts (each run measures one process on an idle GPU)
  [[ $* == *TEZGAH_DETACH_EXIT=1* ]] && sleep 0.25
  if ((rc != 0)); then echo "$label b$b: FAILED (exit $rc)"; tail -2 "$w/stats.txt"; return; fi
  local st td
  st=$(grep '^sample: cuda' "$w/stats.txt" | tail -1)
  td=$(grep '^sample: teardown' "$w/stats.txt" | tail -1)
  python3 - "$label" "$b" "$t0" "$t1" "$st" "$td" << 'PY' | tee -a "$out/raw.tsv"
import re, sys
label, b, t0, t1, st, td = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
g = lambda pat, s: float(re.search(pat, s).group(1)) if re.search(pat, s) else float("nan")
ms = g(r"([0-9.]+) ms/step", st); load = g(r"load ([0-9.]+) s", st); wt = g(r"weights ([0-9.]+)", st)
pf = g(r"prefill ([0-9.]+) s", st); dec = g(r"steps ([0-9.]+) s \(", st); tdn = g(r"teardown ([0-9.]+) s", td)
m = re.search(r"epoch ([0-9.]+) \.\. ([0-9.]+) s", td)
pre, post = (float(m.group(1)) - t0, t1 - float(m.group(2))) if m else (float("nan"),) * 2
d = t1 - t0
print(f"{label}\t{b}\t{d:.3f}\t{1000 * b / d:.0f}\t{ms:.3f}\t{load:.3f}\t{wt:.3f}\t{pf:.3f}\t{dec:.3f}\t{tdn:.3f}\t{pre:.3f}\t{post:.3f}")
PY
}

decode_table() {
python3 - "$out/raw.tsv" << 'PY'
import statistics as S, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
groups = {}
for r in rows:
    groups.setdefault((r[0], int(r[1])), []).append([float(x) for x in r[2:]])
print("| setting | batch | n | process s min / med | tokens/s best / med | ms/step | load s | weights s | prefill s | decode s | teardown s | pre s | post s |")
print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (lab, b), v in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0] != "default", kv[0][0])):
    col = lambda i: [x[i] for x in v]
    d = col(0)
    med = lambda i: S.median(col(i))
    print(f"| {lab} | {b} | {len(v)} | {min(d):.3f} / {S.median(d):.3f} | {1000 * b / min(d):,.0f} / {1000 * b / S.median(d):,.0f} | "
          f"{med(2):.3f} | {med(3):.3f} | {med(4):.3f} | {med(5):.3f} | {med(6):.3f} | {med(7):.3f} | {med(8):.3f} | {med(9):.3f} |")
PY
}
