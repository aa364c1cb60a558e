"""Train a character-level GPT with per-block activation checkpointing, and report the test
loss, step time and peak memory.

The text is the docstrings of a few standard-library modules (bundled with Python, so no
download). The model is a pre-norm transformer: token and position embeddings, ``layers``
blocks of causal self-attention (``F.scaled_dot_product_attention``) and a GELU MLP, and a
head tied to the token embedding. With ``--checkpoint block`` every block is a checkpoint
segment (``block.activation_checkpointing = True``): only its input is kept for backward and
its forward is re-run there, with bit-identical gradients. ``--compare`` trains both ways
from the same seed and checks the losses agree exactly.

    python examples/gpt.py --checkpoint block
    python examples/gpt.py --compare --steps 50
"""

from __future__ import annotations

import argparse
import collections
import functools
import itertools
import json
import re
import statistics
import sys
import time

import numpy as np
from tqdm import tqdm

import remat
import remat.nn.functional as F
from remat import nn, optim


def corpus() -> str:
    """Some English text that ships with Python."""
    parts = [m.__doc__ or "" for m in (collections, functools, itertools, json, re, argparse)]
    return "\n".join(parts)


class Block(nn.Module):
    """``x + attn(ln1(x))``, then ``x + mlp(ln2(x))``."""

    def __init__(self, d: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                 nn.Dropout(dropout))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, context: int,
                 dropout: float, checkpoint: bool) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        # A chain (nn.Sequential): checkpoint_sequential and auto_checkpoint can plan it.
        self.blocks = nn.Sequential(*[Block(d, heads, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        for block in self.blocks:
            block.activation_checkpointing = checkpoint

    def forward(self, idx):
        x = self.tok(idx) + self.pos(remat.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def batches(data: remat.Tensor, batch: int, context: int):
    while True:
        starts = remat.randint(0, len(data) - context - 1, (batch,))
        offsets = starts[:, None] + remat.arange(context + 1)
        chunk = data[offsets]
        yield chunk[:, :-1], chunk[:, 1:]


def loss_of(model: GPT, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def train(args, checkpoint: bool, show: bool = True) -> dict:
    remat.manual_seed(args.seed)
    text = corpus()
    chars = sorted(set(text))
    ids = remat.tensor(np.array([chars.index(c) for c in text], dtype=np.int64))
    split = int(0.9 * len(ids))
    train_ids, test_ids = ids[:split], ids[split:]
    model = GPT(len(chars), args.d, args.heads, args.layers, args.context, args.dropout,
                checkpoint)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    data = batches(train_ids, args.batch, args.context)
    losses, times = [], []
    remat.reset_peak_memory_stats()
    base = remat.memory_allocated()
    bar = tqdm(range(args.steps), desc="ckpt" if checkpoint else "plain", disable=not show)
    for _ in bar:
        x, y = next(data)
        t0 = time.perf_counter()
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
    peak = remat.max_memory_allocated() - base
    model.eval()
    with remat.no_grad():
        test_data = batches(test_ids, args.batch, args.context)
        test = statistics.fmean(loss_of(model, *next(test_data)).item() for _ in range(10))
    return {"losses": losses, "test": test, "step_ms": 1e3 * statistics.median(times),
            "peak": peak}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", choices=["none", "block"], default="block")
    p.add_argument("--compare", action="store_true", help="train plain and checkpointed")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    modes = [False, True] if args.compare else [args.checkpoint == "block"]
    results = {}
    for ck in modes:
        r = results[ck] = train(args, ck)
        print(f"{'checkpointed' if ck else 'plain'}: train loss {r['losses'][0]:.3f} -> "
              f"{r['losses'][-1]:.3f}, test loss {r['test']:.3f}, step {r['step_ms']:.1f} ms "
              f"(median), peak memory above the model {r['peak'] / 2**20:.2f} MiB")
    if args.compare:
        same = results[False]["losses"] == results[True]["losses"]
        saved = 1 - results[True]["peak"] / results[False]["peak"]
        print(f"losses identical: {same}; checkpointing saved {100 * saved:.0f}% of peak memory")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
