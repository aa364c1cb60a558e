"""PyTorch beside ``benches/strategies.py``: the same two models (an MLP of n × (Linear +
GELU), and GPT blocks as in examples/gpt.py) under ``torch.utils.checkpoint`` per block,
selective activation checkpointing (SAC) saving matmul outputs per block (the analogue of
``dots_saveable``), and ``checkpoint_sequential`` with √n segments. PyTorch has no byte
counters on the CPU, so memory is the peak RSS growth during the step (the kernel's
high-water mark, reset before each step); remat's counters are in strategies.py.

Each (model, strategy) runs in its own subprocess so that one's RSS peak does not hide
another's. Skips with a message where PyTorch is not installed.

    python benches/strategies_torch.py [--runs 5] [same model flags as strategies.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import cpu_model, maxrss_kib, reset_peak_rss  # noqa: E402

STRATEGIES = ("none", "per-block", "per-block SAC (save mm)", "checkpoint_sequential sqrt")


def build(kind: str, a):
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(0)
    if kind == "mlp":
        blocks = [nn.Sequential(nn.Linear(a.width, a.width), nn.GELU())
                  for _ in range(a.mlp_depth)]
        return nn.Sequential(*blocks), torch.randn(a.batch, a.width)

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    model = nn.Sequential(*[Block(a.dim, a.heads) for _ in range(a.blocks)])
    return model, torch.randn(a.gpt_batch, a.tokens, a.dim)


def child(kind: str, strategy: str, a) -> dict:
    """One (model, strategy): median step time and peak RSS growth (this process)."""
    import torch
    from torch.utils.checkpoint import (
        CheckpointPolicy,
        checkpoint,
        checkpoint_sequential,
        create_selective_checkpoint_contexts,
    )

    torch.set_num_threads(a.threads)
    model, x = build(kind, a)
    blocks = list(model)
    # Matmuls and attention (what remat's dots_saveable keeps); ops a build lacks are skipped.
    names = ("mm", "addmm", "bmm", "_scaled_dot_product_flash_attention_for_cpu")
    mm_ops = {getattr(torch.ops.aten, n).default for n in names
              if hasattr(torch.ops.aten, n)}

    def save_mm(ctx, op, *args, **kwargs):
        return (CheckpointPolicy.MUST_SAVE if op in mm_ops
                else CheckpointPolicy.PREFER_RECOMPUTE)

    def forward():
        if strategy == "none":
            return model(x)
        if strategy == "checkpoint_sequential sqrt":
            segments = max(1, round(math.sqrt(len(blocks))))
            return checkpoint_sequential(model, segments, x, use_reentrant=False)
        h = x
        for b in blocks:
            if strategy == "per-block":
                h = checkpoint(b, h, use_reentrant=False)
            else:
                h = checkpoint(b, h, use_reentrant=False, context_fn=lambda:
                               create_selective_checkpoint_contexts(save_mm))
        return h

    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    times, peaks = [], []
    for _ in range(a.runs + 1):
        reset_peak_rss()
        before = maxrss_kib()
        t0 = time.perf_counter()
        forward().float().mean().backward()
        times.append(time.perf_counter() - t0)
        peaks.append(maxrss_kib() - before)
    return {"time": statistics.median(times[1:]), "rss_kib": max(peaks[1:])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--mlp-depth", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--gpt-batch", type=int, default=8)
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "STRATEGY"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a)))
        return 0
    if importlib.util.find_spec("torch") is None:
        print("PyTorch is not installed: nothing to compare (pip install torch)")
        return 0
    import torch

    print(f"PyTorch {torch.__version__}, {a.threads} threads, {cpu_model()}, "
          f"{os.cpu_count()} logical cores; float32; medians of {a.runs} steps after one "
          "warm-up; memory = peak RSS growth during the step")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items()
             if k not in ("child",)]
    for kind, title in (("mlp", f"MLP: {a.mlp_depth} x (Linear({a.width}) + GELU), batch "
                                f"{a.batch}"),
                        ("gpt", f"GPT blocks: {a.blocks} x Block(dim {a.dim}, {a.heads} heads),"
                                f" batch {a.gpt_batch}, {a.tokens} tokens")):
        print(f"\n{title}\n")
        print("| strategy | step ms | × plain | peak RSS growth MiB | × plain |")
        print("|---|---:|---:|---:|---:|")
        plain = None
        for strategy in STRATEGIES:
            out = subprocess.run([sys.executable, __file__, *flags, "--child", kind, strategy],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            plain = plain or r
            print(f"| {strategy} | {r['time'] * 1e3:.1f} | {r['time'] / plain['time']:.2f} | "
                  f"{r['rss_kib'] / 1024:.1f} | {r['rss_kib'] / max(plain['rss_kib'], 1):.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
