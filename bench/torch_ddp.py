"""PyTorch DDP peer for tezgah's data-parallel benchmark (bench/bench_dist.sh, docs/PERF.md).

A GPT-2 124M (12 layers, 12 heads, C=768, vocab 50304, T=1024: LayerNorm, GeLU-tanh MLP with
biases, learned positions, lm_head tied to wte) trained with DistributedDataParallel (NCCL),
bf16 autocast, torch.compile, fused AdamW and grad-norm clipping at 1.0: the work of one
`tezgah train --backend cuda --arch gpt2 ... -B 16 -T 1024` step on every rank.

    torchrun --standalone --nproc_per_node N bench/torch_ddp.py [--B 16] [--T 1024] [--steps 30]

Each rank trains on random token ids (B rows of T per rank; the data does not change the
time). The median step time over --steps timed steps (after 5 warm-up steps, compilation
included there) gives tokens/s = N·B·T / median; rank 0 prints one line:
    ddp world=N B=16 T=1024 step_ms=... tok_s=... peak_mem_GB=...
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

ap = argparse.ArgumentParser()
ap.add_argument("--B", type=int, default=16, help="rows per rank")
ap.add_argument("--T", type=int, default=1024)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--compile", type=int, default=1)
args = ap.parse_args()
n_layer, n_head, d_model, vocab = 12, 12, 768, 50304


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.c_attn(x).view(B, T, 3, n_head, C // n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention()
        self.c_fc, self.c_fc_proj = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_fc_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, T):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d_model), nn.Embedding(T, d_model)
        self.layers = nn.ModuleList(Layer() for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2
        for name, p in self.named_parameters():  # llm.c's init: N(0, 0.02), residual projections scaled
            if p.dim() >= 2:
                std = 0.02 / (2 * n_layer) ** 0.5 if name.endswith("c_proj.weight") or name.endswith("c_fc_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, vocab), targets.view(-1))


dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
torch.manual_seed(1337)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
torch.backends.cuda.matmul.allow_tf32 = True
model = GPT2(args.T).to(dev)
ddp = DDP(model, device_ids=[local])
fwd = torch.compile(ddp) if args.compile else ddp
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
g = torch.Generator(device=dev)
g.manual_seed(1000 + rank)  # each rank its own batch
x = torch.randint(0, vocab, (args.B, args.T), device=dev, generator=g)
y = torch.randint(0, vocab, (args.B, args.T), device=dev, generator=g)


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = fwd(x, y)
    loss.backward()  # DDP all-reduces (averages) the gradients in buckets during the backward
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


for _ in range(5):
    step()
torch.cuda.synchronize()
times = []
for _ in range(args.steps):
    dist.barrier()
    t0 = time.perf_counter()
    loss = step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
# the slowest rank sets the pace: take each step's maximum over ranks
t = torch.tensor(times, device=dev)
dist.all_reduce(t, op=dist.ReduceOp.MAX)
med = t.sort().values[len(times) // 2].item()
if rank == 0:
    print(f"ddp world={world} B={args.B} T={args.T} compile={args.compile} step_ms={med * 1e3:.1f} "
          f"tok_s={world * args.B * args.T / med:.0f} loss={loss.item():.3f} "
          f"peak_mem_GB={torch.cuda.max_memory_allocated() / 1e9:.1f}", flush=True)
dist.destroy_process_group()
