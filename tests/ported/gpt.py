"""A plain PyTorch training script: a small character-level GPT (token and position
embeddings, causal self-attention through F.scaled_dot_product_attention, pre-norm blocks,
a tied output head) trained with AdamW, gradient clipping, a cosine schedule and
per-block activation checkpointing (torch.utils.checkpoint); with `amp=True` under
`torch.autocast("cpu", dtype=torch.bfloat16)` and a GradScaler that bf16 leaves disabled.

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife. However little known the feelings or views of such "
    "a man may be on his first entering a neighbourhood, this truth is so well fixed in the "
    "minds of the surrounding families, that he is considered the rightful property of some "
    "one or other of their daughters. "
) * 8


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    def __init__(self, vocab, d=32, heads=4, layers=2, context=32, checkpointing=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying
        self.checkpointing = checkpointing
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for block in self.blocks:
            if self.checkpointing:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(self.ln(x))


def make_data():
    chars = sorted(set(TEXT))
    ids = np.array([chars.index(c) for c in TEXT], dtype=np.int64)
    return torch.tensor(ids), len(chars)


def get_batch(data, batch=8, context=32):
    starts = torch.randint(0, len(data) - context - 1, (batch,))
    x = torch.stack([data[int(s): int(s) + context] for s in starts])
    y = torch.stack([data[int(s) + 1: int(s) + 1 + context] for s in starts])
    return x, y


def loss_fn(model, batch, amp=False):
    x, y = batch
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        logits = model(x)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def train(steps=30, seed=0, checkpointing=True, amp=False):
    torch.manual_seed(seed)
    data, vocab = make_data()
    model = Model(vocab, checkpointing=checkpointing)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    # bf16 has float32's range: loss scaling is for float16, so the scaler stays disabled.
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model, get_batch(data), amp=amp)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        losses.append(loss.item())
    assert math.isfinite(losses[-1])
    return losses


if __name__ == "__main__":
    losses = train()
    print(f"first loss {losses[0]:.4f}  last loss {losses[-1]:.4f}")
