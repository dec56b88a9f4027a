#!/usr/bin/env python3
"""Hugging Face parity for tezgah's `convert --to hf` / `--from hf` (run by tools/hf_parity.sh).

Needs torch, transformers (4.4x or 5.x), safetensors and tokenizers; runs on CPU (fp32).

  1. tezgah → HF: for each directory exported by tezgah (--export NAME=HF_DIR:RUN_DIR), load it
     with transformers' AutoModelForCausalLM in float32, compute logits on fixed token ids and
     compare them with `tezgah logits RUN_DIR` (the original run) and `tezgah logits HF_DIR`
     (tezgah reading its own export back). The figure is max |hf - tezgah| / max |tezgah|
     over all positions and vocab entries ("relative to the logits' scale"); the elementwise
     max |Δ| / max(|ref|, 1e-3) is printed too. Target: ≤ 1e-4.
     Its tokenizer.json is loaded with `tokenizers` (and AutoTokenizer when it can) and the ids
     of the test texts are compared with `tezgah encode --tokenizer HF_DIR/tokenizer.json`.
  2. HF → tezgah: tiny random LlamaForCausalLM (GQA, untied, rope_theta 5000) and
     GPT2LMHeadModel are created with a fixed seed and saved with save_pretrained (also an
     fp16 copy of the llama and a bf16 copy of the gpt2); their transformers logits on fixed ids
     are written next to them (logits.json) and checked against `tezgah logits DIR`.
  3. Fixtures for CI (tests/test_hf_fixture.c) are written to --out:
       hf_llama/, hf_llama_fp16/, hf_gpt2/, hf_gpt2_bf16/  config.json, model.safetensors,
                                                          logits.json {"ids", "logits"}
       hf_tokenizer/  tokenizer.json (exported by tezgah) + ids.json {"texts", "ids"} from
                      the `tokenizers` library
     and the report hf_parity_report.json (every figure above). Exit status 1 when a check
     fails its target.
"""
import argparse, json, os, shutil, subprocess, sys

import torch
import transformers
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

TARGET = 1e-4
IDS = [1, 5, 17, 42, 63, 7, 90, 3, 31, 2, 77, 11]
TEXTS = [
    "Hello world",
    "Hello, world! How are you today?",
    "In the beginning God created the heaven and the earth.",
    "  leading spaces, trailing spaces   ",
    "tabs\tand\nnewlines\r\nand CRLF\n\n\nruns",
    "contractions: it's, I'm, we'll, they've, she'd, don't, YOU'RE",
    "numbers 1234567890 3.14159 -42 1e-5 0x1F",
    "unicode: naïve café, Straße, Ελληνικά, русский, 日本語, 한국어, emoji 🚀🔥",
    "punctuation!!! ??? ... --- ((brackets)) [x] {y} <z> @#$%^&*",
    "tezgah trains GPT-2 and Llama models in C; `convert --to hf` exports them.",
    "a",
    " ",
]


def tz_env(tezgah):
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(tezgah))), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def tz_logits(tezgah, model, ids, work):
    out = os.path.join(work, "tz_logits_%d.json" % abs(hash(model)))
    subprocess.run([tezgah, "logits", model, "--ids", ",".join(map(str, ids)), "--out", out], check=True,
                   env=tz_env(tezgah))
    with open(out) as f:
        return json.load(f)["logits"]


def tz_encode(tezgah, tok, text):
    # stdin carries the exact bytes; --special: HF matches added tokens (<|endoftext|>) in text
    r = subprocess.run([tezgah, "encode", "--special", "--tokenizer", tok, "-"], input=text.encode(), check=True,
                       capture_output=True, env=tz_env(tezgah))
    return json.loads(r.stdout.decode())


def load_f32(path):
    try:
        m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    except TypeError:  # transformers < 4.56 knows only torch_dtype
        m = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
    return m.float().eval()


@torch.no_grad()
def hf_logits(model, ids):
    return model(torch.tensor([ids], dtype=torch.long)).logits[0].double()


def compare(ref, got):
    """ref: tensor [n, V] (float64); got: nested lists. Returns (scale-relative, elementwise)."""
    g = torch.tensor(got, dtype=torch.float64)
    if g.shape != ref.shape:
        raise SystemExit("shape mismatch: %s vs %s" % (tuple(g.shape), tuple(ref.shape)))
    d = (g - ref).abs()
    return (d.max() / ref.abs().max()).item(), (d / ref.abs().clamp(min=1e-3)).max().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tezgah", required=True, help="tezgah binary")
    ap.add_argument("--export", action="append", default=[], help="NAME=HF_DIR:RUN_DIR exported by tezgah")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--out", required=True, help="fixture output directory")
    ap.add_argument("--texts", help="optional JSON list of {\"text\": ...} objects (e.g. ../shared/gpt2/vectors.json)")
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    texts = list(TEXTS)
    if a.texts and os.path.exists(a.texts):
        texts += [v["text"] for v in json.load(open(a.texts)) if v.get("text")]
    report = {"transformers": transformers.__version__, "torch": torch.__version__, "target": TARGET,
              "tezgah_to_hf": {}, "hf_to_tezgah": {}, "tokenizer": {}}
    ok = True

    # ---- 1. tezgah → HF ----
    tok_fixture_done = False
    for spec in a.export:
        name, dirs = spec.split("=", 1)
        hf_dir, run_dir = dirs.split(":", 1)
        cfg = json.load(open(os.path.join(hf_dir, "config.json")))
        ids = [i % cfg["vocab_size"] for i in IDS]
        ref = hf_logits(load_f32(hf_dir), ids)
        r_run = compare(ref, tz_logits(a.tezgah, run_dir, ids, a.work))
        r_hf = compare(ref, tz_logits(a.tezgah, hf_dir, ids, a.work))
        good = r_run[0] <= TARGET and r_hf[0] <= TARGET
        ok &= good
        report["tezgah_to_hf"][name] = {"model_type": cfg["model_type"], "ids": ids,
                                        "rel_to_scale_run": r_run[0], "rel_elementwise_run": r_run[1],
                                        "rel_to_scale_hfdir": r_hf[0], "rel_elementwise_hfdir": r_hf[1],
                                        "ok": good}
        print("tezgah→HF %-6s %s: max|Δ|/max|logit| = %.3g (run), %.3g (HF dir read by tezgah); "
              "elementwise %.3g  %s" % (name, cfg["model_type"], r_run[0], r_hf[0], r_run[1], "ok" if good else "FAIL"))
        tj = os.path.join(hf_dir, "tokenizer.json")
        if os.path.exists(tj):
            from tokenizers import Tokenizer
            t = Tokenizer.from_file(tj)
            mism = []
            hf_ids = []
            for s in texts:
                h = t.encode(s).ids
                z = tz_encode(a.tezgah, tj, s)
                hf_ids.append(h)
                if h != z:
                    mism.append({"text": s, "hf": h, "tezgah": z})
            auto = None
            try:
                at = transformers.AutoTokenizer.from_pretrained(hf_dir)
                auto = sum(at.encode(s, add_special_tokens=False) != h for s, h in zip(texts, hf_ids))
            except Exception as e:  # report, do not fail: tokenizers is the reference
                auto = "AutoTokenizer failed: %s" % e
            ok &= not mism
            report["tokenizer"][name] = {"texts": len(texts), "mismatches": mism, "autotokenizer_mismatches": auto}
            print("tokenizer %-6s: %d texts, %d mismatches with `tokenizers`; AutoTokenizer mismatches: %s"
                  % (name, len(texts), len(mism), auto))
            if not tok_fixture_done:
                d = os.path.join(a.out, "hf_tokenizer")
                os.makedirs(d, exist_ok=True)
                shutil.copy(tj, os.path.join(d, "tokenizer.json"))
                json.dump({"texts": texts, "ids": hf_ids}, open(os.path.join(d, "ids.json"), "w"), ensure_ascii=False)
                tok_fixture_done = True

    # ---- 2. HF → tezgah: random tiny models saved by transformers ----
    torch.manual_seed(1234)
    lc = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False,
              initializer_range=0.2, bos_token_id=1, eos_token_id=2)
    if int(transformers.__version__.split(".")[0]) >= 5:  # RoPE settings live in rope_parameters
        llama_cfg = LlamaConfig(**lc, rope_parameters={"rope_type": "default", "rope_theta": 5000.0})
    else:
        llama_cfg = LlamaConfig(**lc, rope_theta=5000.0)
    gpt2_cfg = GPT2Config(vocab_size=96, n_positions=64, n_embd=32, n_layer=2, n_head=4, initializer_range=0.2,
                          activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                          bos_token_id=95, eos_token_id=95)
    models = {"hf_llama": LlamaForCausalLM(llama_cfg), "hf_gpt2": GPT2LMHeadModel(gpt2_cfg)}
    for name, m in models.items():
        with torch.no_grad():  # norms away from 1 and biases away from 0, so every tensor matters
            for pn, p in m.named_parameters():
                if p.dim() == 1:
                    p.add_(0.1 * torch.randn_like(p))
        m.eval()
        for suffix, dt in [("", None), ("_fp16" if "llama" in name else "_bf16",
                                        torch.float16 if "llama" in name else torch.bfloat16)]:
            d = os.path.join(a.out, name + suffix)
            shutil.rmtree(d, ignore_errors=True)
            (m if dt is None else m.to(dt)).save_pretrained(d)  # safetensors (the only format in v5)
            m.float()
            for extra in ("generation_config.json",):
                if os.path.exists(os.path.join(d, extra)):
                    os.remove(os.path.join(d, extra))
            ref = hf_logits(load_f32(d), IDS)  # what transformers computes from the saved file
            json.dump({"ids": IDS, "logits": [[float("%.9g" % x) for x in row] for row in ref.tolist()]},
                      open(os.path.join(d, "logits.json"), "w"))
            r = compare(ref, tz_logits(a.tezgah, d, IDS, a.work))
            good = r[0] <= TARGET
            ok &= good
            size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
            report["hf_to_tezgah"][name + suffix] = {"rel_to_scale": r[0], "rel_elementwise": r[1], "bytes": size,
                                                     "ok": good}
            print("HF→tezgah %-14s: max|Δ|/max|logit| = %.3g, elementwise %.3g (%d bytes)  %s"
                  % (name + suffix, r[0], r[1], size, "ok" if good else "FAIL"))

    report["ok"] = bool(ok)
    json.dump(report, open(os.path.join(a.out, "hf_parity_report.json"), "w"), indent=1, ensure_ascii=False)
    print("hf_parity: %s (report: %s)" % ("all checks within %g" % TARGET if ok else "FAILED",
                                          os.path.join(a.out, "hf_parity_report.json")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
