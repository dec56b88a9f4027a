#!/usr/bin/env python3
"""The peer for `tezgah sample` decoding speed: transformers' generate() on the same weights.

    python3 bench/hf_generate.py HF_DIR [--tokens 1000] [--batch 1,16] [--dtype fp32,bf16]

HF_DIR is `tezgah convert --to hf RUN --out HF_DIR` of the run tezgah samples from. Greedy
(do_sample=False), the prompt is <|endoftext|> alone (id 50256: what `tezgah sample` starts from
with an empty prompt), exactly --tokens new tokens (min_new_tokens = max_new_tokens, EOS ignored),
KV cache on (transformers' default). For each dtype and batch: one warm-up generate of 16 tokens,
then the timed one (torch.cuda.synchronize around it). Prints one line per case:
    peer dtype=bf16 batch=1 tokens=1000 generate_s=... tokens_per_s=... (aggregate: batch·tokens/s)
and at the end the process's time from interpreter start (imports and loading included), so that
it can be set beside tezgah's whole-process wall time.
"""
import argparse
import time

T0 = time.time()

import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf_dir")
    ap.add_argument("--tokens", type=int, default=1000)
    ap.add_argument("--batch", default="1")
    ap.add_argument("--dtype", default="fp32,bf16")
    ap.add_argument("--bos", type=int, default=50256)
    a = ap.parse_args()
    print(f"peer: torch {torch.__version__}, imports {time.time() - T0:.2f} s", flush=True)
    for dt in a.dtype.split(","):
        t_load = time.time()
        dtype = torch.float32 if dt == "fp32" else torch.bfloat16
        model = AutoModelForCausalLM.from_pretrained(a.hf_dir, dtype=dtype).to("cuda").eval()
        torch.cuda.synchronize()
        print(f"peer: dtype={dt} load {time.time() - t_load:.2f} s", flush=True)
        for b in [int(x) for x in a.batch.split(",")]:
            ids = torch.full((b, 1), a.bos, dtype=torch.long, device="cuda")
            att = torch.ones_like(ids)
            kw = dict(do_sample=False, pad_token_id=a.bos, eos_token_id=None, attention_mask=att)
            with torch.inference_mode():
                model.generate(ids, max_new_tokens=16, min_new_tokens=16, **kw)
                torch.cuda.synchronize()
                t = time.time()
                out = model.generate(ids, max_new_tokens=a.tokens, min_new_tokens=a.tokens, **kw)
                torch.cuda.synchronize()
                dt_s = time.time() - t
            n = out.shape[1] - 1
            print(f"peer dtype={dt} batch={b} tokens={n} generate_s={dt_s:.3f} "
                  f"tokens_per_s={b * n / dt_s:.1f}", flush=True)
        del model
        torch.cuda.empty_cache()
    print(f"peer: process {time.time() - T0:.2f} s", flush=True)


if __name__ == "__main__":
    main()
