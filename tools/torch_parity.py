#!/usr/bin/env python3
"""PyTorch parity harness for tezgah's llama and gpt2 models (fp32, or bf16 autocast on CUDA).

The models are rebuilt in PyTorch *from tezgah's flat parameter layout* (src/model/layout.c:
same tensor names, shapes and order), trained for N steps on fixed token batches with the
same AdamW hyper-parameters (torch.optim.AdamW, weight decay on >=2-D tensors only), global
grad-norm clipping (torch.nn.utils.clip_grad_norm_) and tezgah's LR schedule
(src/train/schedule.c: linear warmup, cosine decay to lr*min_lr_frac).

  --make-fixture --out DIR   write DIR/parity_{llama,gpt2}.{json,bin}: config, initial weights
                             (drawn here with torch's generator, fixed seed), the batches,
                             the hyper-parameters, per-step losses / grad norms / LRs, the
                             step-1 gradients (before clipping) and the final parameters.
                             Everything in the fixture comes from PyTorch, never from tezgah.
  --make-fixture --bf16 --device cuda --out DIR
                             the same models, weights, batches and hyper-parameters, but the
                             forward runs under torch.autocast("cuda", dtype=torch.bfloat16)
                             (matmuls and attention in bf16; layer_norm and softmax in fp32, as
                             autocast does; the residual stream stays fp32; the loss is left to
                             autocast: with torch 2.11 its per-token values come out bf16-rounded,
                             see docs/PARITY.md), with fp32
                             master parameters, gradients and AdamW. Writes
                             DIR/parity_bf16_{llama,gpt2}.{json,bin} (same format, "precision":
                             "bf16"), checked by tests/test_cuda_parity.c on tezgah's CUDA
                             backend, and DIR/device_report_bf16.json (bf16 vs fp32 PyTorch).
  --check TZ.json --fixture DIR
                             compare tezgah's numbers (written by tests/test_parity_torch.c
                             as build/test-tmp/parity_<arch>_tezgah.json) with the fixture.
Runs on CPU or CUDA (--device); TF32 is disabled so CUDA matmuls are true fp32.
Only torch is required (numpy is not used).
"""
import argparse, array, json, math, os, sys, time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before torch initializes CUDA

ARCH_CFG = {
    # tiny shapes: fast on a 2-core CI machine, yet GQA (llama), an untied lm_head (llama)
    # and a padded vocabulary (gpt2: V=96 -> Vp=128) are all exercised.
    "llama": dict(arch="llama", n_layer=2, n_head=4, n_kv_head=2, d_model=32, d_ff=48,
                  vocab_size=64, padded_vocab=64, max_seq_len=16, tied=0,
                  rope_theta=10000.0, norm_eps=1e-5),
    "gpt2": dict(arch="gpt2", n_layer=2, n_head=4, n_kv_head=4, d_model=32, d_ff=128,
                 vocab_size=96, padded_vocab=128, max_seq_len=16, tied=1,
                 rope_theta=10000.0, norm_eps=1e-5),
}
HP = dict(B=2, T=16, steps=10, lr=1e-2, warmup=2, min_lr_frac=0.1, beta1=0.9, beta2=0.95,
          eps=1e-8, weight_decay=0.1)


def layout(c):
    """[(name, shape, kind)] in tezgah's order; kind: 'w' matrix, 'n' norm weight, 'b' bias."""
    C, L, hd = c["d_model"], c["n_layer"], c["d_model"] // c["n_head"]
    t = [("wte", (c["padded_vocab"], C), "w")]
    if c["arch"] == "gpt2":
        Q = 3 * C
        t.append(("wpe", (c["max_seq_len"], C), "w"))
        for l in range(L):
            p = f"layers.{l}."
            t += [(p + "ln1.w", (C,), "n"), (p + "ln1.b", (C,), "b"),
                  (p + "attn.qkv.w", (Q, C), "w"), (p + "attn.qkv.b", (Q,), "b"),
                  (p + "attn.proj.w", (C, C), "w"), (p + "attn.proj.b", (C,), "b"),
                  (p + "ln2.w", (C,), "n"), (p + "ln2.b", (C,), "b"),
                  (p + "mlp.fc.w", (c["d_ff"], C), "w"), (p + "mlp.fc.b", (c["d_ff"],), "b"),
                  (p + "mlp.proj.w", (C, c["d_ff"]), "w"), (p + "mlp.proj.b", (C,), "b")]
        t += [("lnf.w", (C,), "n"), ("lnf.b", (C,), "b")]
    else:
        kv = c["n_kv_head"] * hd
        for l in range(L):
            p = f"layers.{l}."
            t += [(p + "attn_norm.w", (C,), "n"), (p + "attn.wq", (c["n_head"] * hd, C), "w"),
                  (p + "attn.wk", (kv, C), "w"), (p + "attn.wv", (kv, C), "w"),
                  (p + "attn.wo", (C, c["n_head"] * hd), "w"), (p + "ffn_norm.w", (C,), "n"),
                  (p + "ffn.w1", (c["d_ff"], C), "w"), (p + "ffn.w3", (c["d_ff"], C), "w"),
                  (p + "ffn.w2", (C, c["d_ff"]), "w")]
        t.append(("norm.w", (C,), "n"))
        if not c["tied"]:
            t.append(("lm_head", (c["padded_vocab"], C), "w"))
    return t


def lr_at(step, steps, warmup, lr, min_frac):
    """src/train/schedule.c tz_lr_at, with its float32 roundings."""
    f32 = lambda x: array.array("f", [x])[0]
    if step < warmup:
        return f32(f32(lr * f32(step + 1)) / f32(warmup))
    lr_min = f32(lr * min_frac)
    if steps <= warmup:
        return lr_min
    progress = (step - warmup) / (steps - warmup)
    return f32(lr_min + 0.5 * (lr - lr_min) * (1.0 + math.cos(math.pi * progress)))


def init_params(torch, c, seed):
    g = torch.Generator().manual_seed(seed)
    L = c["n_layer"]
    P = {}
    for name, shape, kind in layout(c):
        if kind == "w":
            std = 0.05 / math.sqrt(2 * L) if name.endswith(("attn.wo", "ffn.w2", "attn.proj.w", "mlp.proj.w")) else 0.05
            x = torch.randn(shape, generator=g) * std
            if name in ("wte", "lm_head"):
                x[c["vocab_size"]:] = 0.0  # padded vocab rows are zero (tezgah and llm.c)
        elif kind == "n":  # norm weights around 1, not exactly 1, so their gradients matter
            x = 1.0 + 0.1 * torch.randn(shape, generator=g)
        else:
            x = 0.02 * torch.randn(shape, generator=g)
        P[name] = x.float()
    return P


def forward(torch, c, P, idx, tgt):
    F = torch.nn.functional
    B, T = idx.shape
    C, nh, nkv = c["d_model"], c["n_head"], c["n_kv_head"]
    hd, V, eps = C // nh, c["vocab_size"], c["norm_eps"]
    gpt2 = c["arch"] == "gpt2"

    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

    def ln(x, w, b):
        return F.layer_norm(x, (C,), w, b, eps)

    def rope(x):  # x: B,T,H,hd; run.c pairs adjacent dims (2i, 2i+1)
        i = torch.arange(0, hd, 2, device=x.device, dtype=torch.float32)
        freq = 1.0 / torch.pow(torch.tensor(c["rope_theta"], dtype=torch.float32, device=x.device), i / hd)
        ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * freq[None, :]
        cos, sin = torch.cos(ang)[None, :, None, :], torch.sin(ang)[None, :, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).flatten(-2)

    def attend(q, k, v):  # q: B,T,nh,hd; k, v: B,T,nkv,hd (GQA: kv head = h / (nh/nkv))
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        rep = nh // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.triu(torch.ones(T, T, device=q.device), 1) > 0
        s = s.masked_fill(mask, float("-inf"))
        return (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, nh * hd)

    x = P["wte"][idx]
    if gpt2:
        x = x + P["wpe"][:T][None]
    for l in range(c["n_layer"]):
        p = f"layers.{l}."
        if gpt2:
            h = ln(x, P[p + "ln1.w"], P[p + "ln1.b"])
            qkv = h @ P[p + "attn.qkv.w"].T + P[p + "attn.qkv.b"]
            q, k, v = qkv.split(C, -1)
            a = attend(q.view(B, T, nh, hd), k.view(B, T, nh, hd), v.view(B, T, nh, hd))
            x = x + a @ P[p + "attn.proj.w"].T + P[p + "attn.proj.b"]
            h = ln(x, P[p + "ln2.w"], P[p + "ln2.b"])
            h = F.gelu(h @ P[p + "mlp.fc.w"].T + P[p + "mlp.fc.b"], approximate="tanh")
            x = x + h @ P[p + "mlp.proj.w"].T + P[p + "mlp.proj.b"]
        else:
            h = rms(x, P[p + "attn_norm.w"])
            q = rope((h @ P[p + "attn.wq"].T).view(B, T, nh, hd))
            k = rope((h @ P[p + "attn.wk"].T).view(B, T, nkv, hd))
            v = (h @ P[p + "attn.wv"].T).view(B, T, nkv, hd)
            x = x + attend(q, k, v) @ P[p + "attn.wo"].T
            h = rms(x, P[p + "ffn_norm.w"])
            x = x + (F.silu(h @ P[p + "ffn.w1"].T) * (h @ P[p + "ffn.w3"].T)) @ P[p + "ffn.w2"].T
    x = ln(x, P["lnf.w"], P["lnf.b"]) if gpt2 else rms(x, P["norm.w"])
    head = P["wte"] if c["tied"] else P["lm_head"]
    logits = x @ head.T  # [B, T, Vp]; the padded columns are excluded from the loss
    return F.cross_entropy(logits[..., :V].reshape(-1, V), tgt.reshape(-1))


def make_batches(torch, c, seed):
    """A learnable stream: each token is the previous plus 1..3 (mod V)."""
    g = torch.Generator().manual_seed(seed + 1)
    n = HP["steps"] * HP["B"] * HP["T"] + 1
    stream = torch.cumsum(torch.randint(1, 4, (n,), generator=g), 0) % c["vocab_size"]
    BT = HP["B"] * HP["T"]
    xs = [stream[s * BT:(s + 1) * BT].view(HP["B"], HP["T"]) for s in range(HP["steps"])]
    ys = [stream[s * BT + 1:(s + 1) * BT + 1].view(HP["B"], HP["T"]) for s in range(HP["steps"])]
    return xs, ys


def autocast(torch, device, bf16):
    """bf16: torch.autocast on CUDA; else a no-op context (plain fp32)."""
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16) if bf16 else _NullCtx()


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def train(torch, c, P0, xs, ys, grad_clip, device, bf16=False):
    names = [n for n, _, _ in layout(c)]
    kinds = {n: k for n, _, k in layout(c)}
    P = {n: P0[n].clone().to(device).requires_grad_(True) for n in names}
    groups = [{"params": [P[n] for n in names if kinds[n] == "w"], "weight_decay": HP["weight_decay"]},
              {"params": [P[n] for n in names if kinds[n] != "w"], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"],
                            foreach=False, fused=False)
    out = dict(losses=[], grad_norms=[], lrs=[], clipped=[])
    grads1 = None
    for s in range(HP["steps"]):
        lr = lr_at(s, HP["steps"], HP["warmup"], HP["lr"], HP["min_lr_frac"])
        for gr in opt.param_groups:
            gr["lr"] = lr
        opt.zero_grad(set_to_none=True)
        with autocast(torch, device, bf16):
            loss = forward(torch, c, P, xs[s].to(device), ys[s].to(device))
        loss = loss.float()
        loss.backward()
        if s == 0:
            grads1 = {n: P[n].grad.detach().cpu().clone() for n in names}
        norm64 = math.sqrt(sum(float((P[n].grad.double() ** 2).sum()) for n in names))
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_([P[n] for n in names], grad_clip, foreach=False)
        opt.step()
        out["losses"].append(float(loss.detach()))
        out["grad_norms"].append(norm64)
        out["lrs"].append(lr)
        out["clipped"].append(bool(grad_clip > 0 and norm64 > grad_clip))
    final = {n: P[n].detach().cpu().clone() for n in names}
    return out, grads1, final


def flat(torch, c, D):
    return torch.cat([D[n].reshape(-1) for n, _, _ in layout(c)]).float()


def f32_bytes(t):
    return array.array("f", t.reshape(-1).tolist()).tobytes()


def i32_bytes(t):
    return array.array("i", [int(v) for v in t.reshape(-1).tolist()]).tobytes()


def make_fixture(torch, arch, outdir, device, seed, bf16=False):
    c = ARCH_CFG[arch]
    P0 = init_params(torch, c, seed)
    xs, ys = make_batches(torch, c, seed)
    # Clip at 80% of the first step's gradient norm so that clipping is exercised.
    P = {n: P0[n].clone().to(device).requires_grad_(True) for n in P0}
    with autocast(torch, device, bf16):
        loss0 = forward(torch, c, P, xs[0].to(device), ys[0].to(device))
    loss0.float().backward()
    norm0 = math.sqrt(sum(float((P[n].grad.double() ** 2).sum()) for n in P))
    grad_clip = float(array.array("f", [0.8 * norm0])[0])
    t0 = time.time()
    res, g1, fin = train(torch, c, P0, xs, ys, grad_clip, device, bf16)
    stem = f"parity_bf16_{arch}" if bf16 else f"parity_{arch}"
    dt = time.time() - t0
    blobs, arrays, off = [], {}, 0
    for key, data, dtype, shape in [
            ("params0", f32_bytes(flat(torch, c, P0)), "f32", [sum(math.prod(s) for _, s, _ in layout(c))]),
            ("inputs", i32_bytes(torch.stack(xs)), "i32", [HP["steps"], HP["B"] * HP["T"]]),
            ("targets", i32_bytes(torch.stack(ys)), "i32", [HP["steps"], HP["B"] * HP["T"]]),
            ("grads1", f32_bytes(flat(torch, c, g1)), "f32", None),
            ("params_final", f32_bytes(flat(torch, c, fin)), "f32", None)]:
        arrays[key] = dict(offset=off, bytes=len(data), dtype=dtype)
        blobs.append(data)
        off += len(data)
    meta = dict(format="tezgah-torch-parity", version=1, arch=arch, precision="bf16" if bf16 else "fp32",
                config=c,
                hp=dict(HP, grad_clip=grad_clip), seed=seed,
                tensors=[dict(name=n, shape=list(s)) for n, s, _ in layout(c)],
                losses=res["losses"], grad_norms=res["grad_norms"], lrs=res["lrs"],
                clipped=res["clipped"], bin=f"{stem}.bin", arrays=arrays,
                made_with=dict(torch=torch.__version__, device=str(device),
                               device_name=torch.cuda.get_device_name(0) if str(device).startswith("cuda") else "cpu",
                               tf32=False, seconds=round(dt, 3),
                               autocast="cuda bfloat16" if bf16 else None,
                               date=time.strftime("%Y-%m-%d %H:%M:%S %Z")))
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, f"{stem}.bin"), "wb") as f:
        f.write(b"".join(blobs))
    with open(os.path.join(outdir, f"{stem}.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta, res, g1, fin


def cross_device(torch, arch, seed, ref):
    """Re-run on the CPU and report how far CUDA fp32 and CPU fp32 PyTorch agree."""
    c = ARCH_CFG[arch]
    P0 = init_params(torch, c, seed)
    xs, ys = make_batches(torch, c, seed)
    res, g1, fin = train(torch, c, P0, xs, ys, ref[0]["hp"]["grad_clip"], "cpu")
    rl = max(abs(a - b) / abs(b) for a, b in zip(res["losses"], ref[1]["losses"]))
    rn = max(abs(a - b) / abs(b) for a, b in zip(res["grad_norms"], ref[1]["grad_norms"]))
    rg = max(float((g1[n] - ref[2][n]).abs().max()) / max(float(ref[2][n].abs().max()), 1e-30) for n in g1)
    rp = max(float((fin[n] - ref[3][n]).abs().max()) for n in fin)
    return dict(max_rel_loss=rl, max_rel_grad_norm=rn, max_rel_grad1_per_tensor=rg, max_abs_final_param=rp)


def bf16_vs_fp32(torch, arch, seed, ref, device):
    """Re-run in fp32 on the same device: how far bf16 autocast moves PyTorch itself."""
    c = ARCH_CFG[arch]
    P0 = init_params(torch, c, seed)
    xs, ys = make_batches(torch, c, seed)
    res, _, _ = train(torch, c, P0, xs, ys, ref[0]["hp"]["grad_clip"], device)
    rl = [abs(a - b) / abs(b) for a, b in zip(ref[1]["losses"], res["losses"])]
    rn = [abs(a - b) / abs(b) for a, b in zip(ref[1]["grad_norms"], res["grad_norms"])]
    return dict(fp32_losses=res["losses"], rel_loss=rl, max_rel_loss=max(rl), max_rel_grad_norm=max(rn))


def check(tz_path, fixture_dir):
    tz = json.load(open(tz_path))
    bf16 = tz.get("precision") == "bf16"
    stem = f"parity_bf16_{tz['arch']}" if bf16 else f"parity_{tz['arch']}"
    fx = json.load(open(os.path.join(fixture_dir, f"{stem}.json")))
    limit = 2e-2 if bf16 else 1e-4
    print(f"{tz['arch']}: step  loss(torch)      loss(tezgah)     rel        gnorm rel")
    worst = 0.0
    for s, (a, b, ga, gb) in enumerate(zip(fx["losses"], tz["losses"], fx["grad_norms"], tz["grad_norms"])):
        r = abs(a - b) / abs(a)
        worst = max(worst, r)
        print(f"  {s + 1:4d}  {a:.9f}  {b:.9f}  {r:.2e}  {abs(ga - gb) / abs(ga):.2e}")
    print(f"max relative loss difference over {len(fx['losses'])} steps: {worst:.3e} (limit {limit:g})")
    return 0 if worst <= limit else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-fixture", action="store_true")
    ap.add_argument("--out", default="tests/fixtures")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--bf16", action="store_true",
                    help="forward under torch.autocast(cuda, bfloat16); fp32 master weights and AdamW")
    ap.add_argument("--arch", default="llama,gpt2")
    ap.add_argument("--check", metavar="TEZGAH_JSON", nargs="*")
    ap.add_argument("--fixture", default="tests/fixtures")
    a = ap.parse_args()
    if a.check:
        return max(check(p, a.fixture) for p in a.check)
    if not a.make_fixture:
        ap.error("give --make-fixture or --check")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if a.bf16 and not str(dev).startswith("cuda"):
        ap.error("--bf16 needs a CUDA device (torch.autocast(\"cuda\", dtype=torch.bfloat16))")
    report = {}
    for arch in a.arch.split(","):
        ref = make_fixture(torch, arch, a.out, dev, a.seed, a.bf16)
        meta, res = ref[0], ref[1]
        print(f"[{arch}{' bf16' if a.bf16 else ''}] made on {dev} ({meta['made_with']['device_name']}), torch {torch.__version__}, "
              f"grad_clip {meta['hp']['grad_clip']:.6g}")
        for s in range(HP["steps"]):
            print(f"  step {s + 1:2d} lr {res['lrs'][s]:.6e} loss {res['losses'][s]:.9f} "
                  f"grad_norm {res['grad_norms'][s]:.9f}{' clipped' if res['clipped'][s] else ''}")
        if a.bf16:
            xd = bf16_vs_fp32(torch, arch, a.seed, ref, dev)
            report[arch] = xd
            print(f"  torch bf16 vs fp32 ({dev}): max rel loss {xd['max_rel_loss']:.3e}, "
                  f"max rel grad norm {xd['max_rel_grad_norm']:.3e}")
        elif dev != "cpu":
            xd = cross_device(torch, arch, a.seed, ref)
            report[arch] = xd
            print(f"  torch cuda vs cpu fp32: {json.dumps(xd)}")
    name = "device_report_bf16.json" if a.bf16 else "device_report.json"
    with open(os.path.join(a.out, name), "w") as f:
        key = "bf16_vs_fp32" if a.bf16 else "cross_device"
        json.dump({"device": dev, "torch": torch.__version__, key: report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
