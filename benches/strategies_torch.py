"""PyTorch beside ``benches/strategies.py``: the same three models (an MLP of n × (Linear +
GELU), GPT blocks as in examples/gpt.py, and a CNN of n × (Conv2d 3×3 + ReLU)) under
``torch.utils.checkpoint`` per block, selective activation checkpointing (SAC) saving matmul
and convolution outputs per block (the analogue of ``dots_saveable``), and
``checkpoint_sequential`` with √n segments. PyTorch has no byte counters on the CPU, so the
peak comes from its profiler (``profile_memory=True``): the running sum of every allocation
and free of the step, each at its own time stamp — bytes of live tensors, as remat's
counters in strategies.py. (Summing each op's netted memory at the op's start instead would
count the saved tensors a backward node frees when it ends before the gradients it
allocates, and understate the peak.) Skips with a message where PyTorch is not installed.

    python benches/strategies_torch.py [--runs 5] [same model flags as strategies.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gpt_block import block_class  # noqa: E402
from machine_info import machine_line  # noqa: E402
from strategies import add_model_args  # noqa: E402

STRATEGIES = ("none", "per-block", "per-block SAC (save mm)", "checkpoint_sequential sqrt")


def build(kind: str, a):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if kind == "mlp":
        blocks = [nn.Sequential(nn.Linear(a.width, a.width), nn.GELU())
                  for _ in range(a.mlp_depth)]
        return nn.Sequential(*blocks), torch.randn(a.batch, a.width)
    if kind == "cnn":
        blocks = [nn.Sequential(nn.Conv2d(a.channels, a.channels, 3, padding=1), nn.ReLU())
                  for _ in range(a.cnn_depth)]
        return nn.Sequential(*blocks), torch.randn(a.cnn_batch, a.channels, a.image, a.image)

    Block = block_class(nn)
    model = nn.Sequential(*[Block(a.dim, a.heads) for _ in range(a.blocks)])
    return model, torch.randn(a.gpt_batch, a.tokens, a.dim)


def peak_bytes(step) -> int:
    """Peak live tensor bytes above the start of ``step()``, from the profiler's memory
    events: every allocation and free, summed in the order they happened."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def measure(kind: str, strategy: str, a) -> dict:
    """One (model, strategy): median step time and peak live bytes."""
    import torch
    from torch.utils.checkpoint import (
        CheckpointPolicy,
        checkpoint,
        checkpoint_sequential,
        create_selective_checkpoint_contexts,
    )

    model, x = build(kind, a)
    blocks = list(model)
    # Matmuls, convolutions and attention (what remat's dots_saveable keeps); ops a build
    # lacks are skipped.
    names = ("mm", "addmm", "bmm", "convolution", "_scaled_dot_product_flash_attention_for_cpu")
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

    def step():
        forward().float().mean().backward()

    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    times = []
    for _ in range(a.runs + 1):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"time": statistics.median(times[1:]), "peak": peak_bytes(step)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(ap)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    if importlib.util.find_spec("torch") is None:
        print("PyTorch is not installed: nothing to compare (pip install torch)")
        return 0
    import torch

    print(f"PyTorch {torch.__version__}, {a.threads} threads, {machine_line()}, "
          f"{os.cpu_count()} logical cores; float32; medians of {a.runs} steps after one "
          "warm-up; peak = live tensor bytes above the step's start (profiler)")
    torch.set_num_threads(a.threads)
    for kind, title in (("mlp", f"MLP: {a.mlp_depth} x (Linear({a.width}) + GELU), batch "
                                f"{a.batch}"),
                        ("gpt", f"GPT blocks: {a.blocks} x Block(dim {a.dim}, {a.heads} heads),"
                                f" batch {a.gpt_batch}, {a.tokens} tokens"),
                        ("cnn", f"CNN: {a.cnn_depth} x (Conv2d({a.channels}, {a.channels}, 3, "
                                f"padding=1) + ReLU), batch {a.cnn_batch}, {a.image}x{a.image}")):
        if kind not in a.models.split(","):
            continue
        print(f"\n{title}\n")
        print("| strategy | step ms | × plain | peak MiB | × plain |")
        print("|---|---:|---:|---:|---:|")
        plain = None
        for strategy in STRATEGIES:
            r = measure(kind, strategy, a)
            plain = plain or r
            print(f"| {strategy} | {r['time'] * 1e3:.1f} | {r['time'] / plain['time']:.2f} | "
                  f"{r['peak'] / 2**20:.2f} | {r['peak'] / max(plain['peak'], 1):.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
