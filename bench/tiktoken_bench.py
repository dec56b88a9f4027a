#!/usr/bin/env python3
"""tiktoken's GPT-2 encoding (r50k_base) on the same files as bench_tokenizer, same table shape.

    python3 bench/tiktoken_bench.py GPT2_DIR SHAKESPEARE.txt KJV.txt [--threads N] [--once] [--local]
    python3 bench/tiktoken_bench.py GPT2_DIR CORPUS.txt [--threads N] [--once] [--local] [--no-1thread]

1 thread: Encoding.encode_ordinary(text). N threads: encode_ordinary_batch over chunks of the
text cut where tezgah's parallel encoder cuts ("X\\nY" with X, Y printable ASCII: a pre-token
boundary that does not depend on the surrounding text), so the token count must equal the
serial one (checked). Cold = first call; warm = best of 3 more (tiktoken keeps no cache across
calls, so they should agree). Uses tiktoken.get_encoding("r50k_base") when its file is cached,
otherwise builds the same encoding from GPT2_DIR's encoder.json (no network needed; --local
always does, so a machine without network never waits on a download). --once: the cold call
only (warm columns "-"), for corpora of hundreds of MB. With one file its row is "corpus".
Prints lines "tokens <name> <count>" for bench/run_tokenizer_bench.sh.
"""
import json
import os
import sys
import time

import tiktoken

R50K_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def load_encoding(gpt2_dir, local=False):
    try:
        if local:
            raise RuntimeError("--local")
        return tiktoken.get_encoding("r50k_base"), "tiktoken r50k_base"
    except Exception as e:  # offline: build it from encoder.json (ranks = GPT-2 ids)
        inv = {c: b for b, c in bytes_to_unicode().items()}
        with open(os.path.join(gpt2_dir, "encoder.json"), encoding="utf-8") as f:
            enc = json.load(f)
        ranks = {bytes(inv[c] for c in tok): i for tok, i in enc.items() if tok != "<|endoftext|>"}
        return tiktoken.Encoding(name="r50k_local", pat_str=R50K_PAT, mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": enc["<|endoftext|>"]},
                                 explicit_n_vocab=len(enc)), f"tiktoken (r50k from {gpt2_dir}/encoder.json; get_encoding failed: {type(e).__name__})"


def graph(c):
    return 0x20 < c < 0x7F


def chunks(data: bytes, nthreads: int):
    """Cut like tezgah's encoder: chunk size len/(8 threads) clamped to [64 KiB, 1 MiB]."""
    size = min(max(len(data) // (nthreads * 8), 64 << 10), 1 << 20)
    out, a = [], 0
    while a < len(data):
        b = len(data)
        if len(data) - a > size:
            p = data.find(b"\n", a + size - 1)
            b = len(data)
            while p != -1 and p + 1 < len(data):
                q = p + 1
                if q >= a + 2 and graph(data[q - 2]) and graph(data[q]):
                    b = q
                    break
                p = data.find(b"\n", q)
        out.append(data[a:b].decode("utf-8", errors="surrogateescape"))
        a = b
    return out


def main():
    args = sys.argv[1:]
    nthreads = os.cpu_count() or 1
    if "--threads" in args:
        i = args.index("--threads")
        nthreads = int(args[i + 1])
        del args[i:i + 2]
    once = "--once" in args
    local = "--local" in args
    one = "--no-1thread" not in args  # the whole-text call on 1 thread (slow on 200 MB)
    args = [a for a in args if a not in ("--once", "--local", "--no-1thread")]
    if len(args) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    enc, what = load_encoding(args[0], local)
    files = (("tinyshakespeare", args[1]), ("kjv", args[2])) if len(args) == 3 else (("corpus", args[1]),)
    print(f"{what} {tiktoken.__version__ if hasattr(tiktoken, '__version__') else ''}, {nthreads} threads\n")
    print(f"| input | MB | tokens | 1 thread MB/s | {nthreads} threads MB/s | 1 thread warm MB/s | {nthreads} threads warm MB/s |")
    print("|---|---|---|---|---|---|---|")
    counts = {}
    for name, path in files:
        data = open(path, "rb").read()
        # tiktoken encodes str: invalid UTF-8 (Latin-1 changelogs in the Debian corpus) becomes
        # U+FFFD first, and the row's MB are those of the repaired text
        text = data.decode("utf-8", errors="replace")
        data = text.encode("utf-8")
        parts = chunks(data, nthreads)
        assert "".join(parts) == text
        res = []
        fns = [lambda: len(enc.encode_ordinary(text)),
               lambda: sum(len(x) for x in enc.encode_ordinary_batch(parts, num_threads=nthreads))]
        for fn in fns if one else fns[1:]:
            t0 = time.perf_counter()
            n = fn()
            cold = time.perf_counter() - t0
            warm = None if once else min(time_it(fn) for _ in range(3))
            res.append((n, cold, warm))
        if not one:
            res.insert(0, (res[0][0], None, None))
        elif res[0][0] != res[1][0]:
            print(f"tiktoken: batch over chunks gave {res[1][0]} tokens, whole text {res[0][0]}", file=sys.stderr)
            sys.exit(1)
        mb = len(data) / 1e6
        counts[name] = res[0][0]
        w = ["-" if x[2] is None else f"{mb / x[2]:.1f}" for x in res]
        c1 = "-" if res[0][1] is None else f"{mb / res[0][1]:.1f}"
        print(f"| {name} | {mb:.2f} | {res[0][0]} | {c1} | {mb / res[1][1]:.1f} | {w[0]} | {w[1]} |",
              flush=True)
    print()
    for name, n in counts.items():
        print(f"tokens {name} {n}")


def time_it(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
