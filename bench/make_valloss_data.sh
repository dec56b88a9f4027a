#!/usr/bin/env bash
# The data of scripts/device_valloss.sh (issue 22's 1,500-step convergence check): a real corpus
# (bench/make_debian_corpus.sh: the King James Bible, /usr/share/doc, manual pages, headers and
# Perl / Python sources of this Debian 12 machine) split by document into train and val, each
# shuffled by document with a fixed seed (the corpus is ordered by source; an unshuffled run would
# see the Bible first and code last), tokenized with GPT-2's tokenizer into llm.c shards, and
# xz-compressed for the device call's 64 MiB carry.
#
#   bash bench/make_valloss_data.sh CORPUS.txt OUTDIR [TRAIN_TOKENS=24600000]
# Documents are cut into pieces of about 8 KB at line ends (NUL bytes dropped) before the
# shuffle. OUTDIR gets train.bin.xz, val.bin.xz. Every 100th piece (after the shuffle) goes to val;
# train keeps documents until it holds TRAIN_TOKENS tokens (1,500 steps of B 16 × T 1024 = 24.6M:
# one epoch, no token seen twice). Needs build/tezgah and GPT-2's tokenizer files (setup.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=${1:?CORPUS.txt} outdir=${2:?OUTDIR} want=${3:-24600000}
mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$corpus" "$tmp" <<'EOF'
import random, sys
text = open(sys.argv[1], encoding='utf-8', errors='replace').read().replace('\0', '')
# pieces of about 8 KB cut at line ends, so that long documents (the Bible, big changelogs) are
# spread over the whole run and the val set samples every source
docs = []
for d in text.split('<|endoftext|>'):
    lines, cur, n = d.strip('\n').split('\n'), [], 0
    for line in lines:
        cur.append(line); n += len(line) + 1
        if n >= 8192:
            docs.append('\n'.join(cur)); cur, n = [], 0
    if any(l.strip() for l in cur):
        docs.append('\n'.join(cur))
random.Random(1337).shuffle(docs)
val = [d for i, d in enumerate(docs) if i % 100 == 0]
train = [d for i, d in enumerate(docs) if i % 100 != 0]
for name, part in (('train', train), ('val', val)):
    with open(f'{sys.argv[2]}/{name}.txt', 'w', encoding='utf-8') as f:
        f.write(''.join(d + '\n<|endoftext|>\n' for d in part))
print(f'{len(docs)} documents: {len(train)} train, {len(val)} val', file=sys.stderr)
EOF
for s in train val; do
  "$root/build/tezgah" tokenize --tokenizer gpt2 --in "$tmp/$s.txt" --out "$tmp/$s.bin" >&2
done
# keep the first TRAIN_TOKENS tokens of train (llm.c header: int32 magic, version, token count)
python3 - "$tmp/train.bin" "$want" <<'EOF'
import struct, sys
p, want = sys.argv[1], int(sys.argv[2])
with open(p, 'rb') as f:
    head = bytearray(f.read(1024)); body = f.read()
n = struct.unpack_from('<i', head, 8)[0]
keep = min(n, want)
struct.pack_into('<i', head, 8, keep)
with open(p + '.cut', 'wb') as f:
    f.write(head); f.write(body[:2 * keep])
print(f'train: {n} tokens, kept {keep}', file=sys.stderr)
EOF
mv "$tmp/train.bin.cut" "$tmp/train.bin"
for s in train val; do xz -T2 -6 -c "$tmp/$s.bin" >"$outdir/$s.bin.xz.tmp" && mv "$outdir/$s.bin.xz.tmp" "$outdir/$s.bin.xz"; done
ls -l "$outdir"
