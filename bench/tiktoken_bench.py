#!/usr/bin/env python3
"""tiktoken's GPT-2 encoding (r50k_base) on the same files as bench_tokenizer, same table shape.

    python3 bench/tiktoken_bench.py GPT2_DIR SHAKESPEARE.txt KJV.txt [--threads N]

1 thread: Encoding.encode_ordinary(text). N threads: encode_ordinary_batch over chunks of the
text cut where tezgah's parallel encoder cuts ("X\\nY" with X, Y printable ASCII: a pre-token
boundary that does not depend on the surrounding text), so the token count must equal the
serial one (checked). Cold = first call; warm = best of 3 more (tiktoken keeps no cache across
calls, so they should agree). Uses tiktoken.get_encoding("r50k_base") when its file is cached,
otherwise builds the same encoding from GPT2_DIR's encoder.json (no network needed).
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


def load_encoding(gpt2_dir):
    try:
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
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    enc, what = load_encoding(args[0])
    print(f"{what} {tiktoken.__version__ if hasattr(tiktoken, '__version__') else ''}, {nthreads} threads\n")
    print(f"| input | MB | tokens | 1 thread MB/s | {nthreads} threads MB/s | 1 thread warm MB/s | {nthreads} threads warm MB/s |")
    print("|---|---|---|---|---|---|---|")
    counts = {}
    for name, path in (("tinyshakespeare", args[1]), ("kjv", args[2])):
        data = open(path, "rb").read()
        text = data.decode("utf-8")
        parts = chunks(data, nthreads)
        assert "".join(parts) == text
        res = []
        for fn in (lambda: len(enc.encode_ordinary(text)),
                   lambda: sum(len(x) for x in enc.encode_ordinary_batch(parts, num_threads=nthreads))):
            t0 = time.perf_counter()
            n = fn()
            cold = time.perf_counter() - t0
            warm = min(time_it(fn) for _ in range(3))
            res.append((n, cold, warm))
        if res[0][0] != res[1][0]:
            print(f"tiktoken: batch over chunks gave {res[1][0]} tokens, whole text {res[0][0]}", file=sys.stderr)
            sys.exit(1)
        mb = len(data) / 1e6
        counts[name] = res[0][0]
        print(f"| {name} | {mb:.2f} | {res[0][0]} | {mb / res[0][1]:.1f} | {mb / res[1][1]:.1f} | "
              f"{mb / res[0][2]:.1f} | {mb / res[1][2]:.1f} |")
    print()
    for name, n in counts.items():
        print(f"tokens {name} {n}")


def time_it(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
