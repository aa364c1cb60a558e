"""Training under a memory limit (dynamic rematerialisation, ``remat.memory_limit``) against
the plain run, the static planner at the same peak, and √n checkpointing.

Two parts:

1. An MLP of ``depth`` × (Linear + GELU) and a stack of GPT blocks (examples/gpt.py): the
   plain step (forward + backward), then DTR at limits of 1/2, 1/3 and 1/4 of the plain
   activation memory on top of parameters and gradients; beside each,
   ``checkpoint_sequential(budget_bytes=...)`` given the activation memory DTR actually used,
   and ``checkpoint_sequential("sqrt")``.
2. A depth-1000 MLP (narrow, so it runs quickly) under a limit of 2√n layer activations.

Peak = ``max_memory_allocated()`` above parameters + gradients (engine byte counters); time =
median of ``--runs`` steps; "act" = peak in units of the plain run's activation memory.

    python benches/dtr.py [--runs 5] [--depth 64 --width 256 --batch 256]
                          [--blocks 8 --dim 256 --heads 4 --tokens 128 --gpt-batch 8]
                          [--deep 1000 --deep-width 64 --deep-batch 64]
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import remat
from remat import nn

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import cpu_model  # noqa: E402
from machine_info import cpu_flags  # noqa: E402
from selective_policies import load_block  # noqa: E402


def mlp(depth: int, width: int) -> nn.Sequential:
    remat.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers)


def measure(model: nn.Module, step: Callable[[], remat.Tensor], runs: int,
            limit: int | None = None) -> dict:
    """Median time, peak above the step's start (gradients allocated before), and the
    eviction counts per step, of ``step().backward()`` under ``limit`` (bytes above the
    start; None: no limit)."""
    for p in model.parameters():
        if p.grad is None:
            p.grad = remat.zeros_like(p)
    times, peaks = [], []
    before = remat.memory_stats()
    for _ in range(runs + 1):
        gc.collect()
        base = remat.memory_allocated()
        remat.reset_peak_memory_stats()
        with remat.memory_limit(None if limit is None else base + limit):
            t0 = time.perf_counter()
            step().backward()
            times.append(time.perf_counter() - t0)
        gc.collect()
        peaks.append(remat.max_memory_allocated() - base)
    after = remat.memory_stats()
    n = runs + 1
    return {"time": statistics.median(times[1:]), "peak": max(peaks[1:]),
            "evictions": (after["evictions"] - before["evictions"]) / n,
            "remats": (after["rematerializations"] - before["rematerializations"]) / n,
            "remat_s": (after["remat_seconds"] - before["remat_seconds"]) / n}


def row(name: str, m: dict, plain: dict, act: int) -> str:
    ev = (f"{m['evictions']:8.0f} {m['remats']:8.0f} {m['remat_s'] * 1e3:9.1f}"
          if m["evictions"] else "")
    return (f"{name:<34} {m['time'] * 1e3:9.1f} {m['time'] / plain['time']:6.2f}x "
            f"{m['peak'] / 2**20:9.2f} {m['peak'] / act:6.2f} {ev}")


def header() -> str:
    return (f"{'strategy':<34} {'ms/step':>9} {'time':>7} {'peak MiB':>9} {'act':>6} "
            f"{'evicted':>8} {'rebuilt':>8} {'rebuild ms':>9}")


def part_one(title: str, model: nn.Sequential, x: remat.Tensor, runs: int) -> None:
    layers = list(model)

    def plain_step():
        return model(x).mean()

    plain = measure(model, plain_step, runs)
    act = plain["peak"]
    print(f"\n## {title}; plain activation peak {act / 2**20:.2f} MiB\n")
    print(header())
    print(row("none (plain)", plain, plain, act))
    sqrt = measure(model, lambda: remat.checkpoint_sequential(layers, "sqrt", x).mean(), runs)
    print(row("checkpoint_sequential sqrt", sqrt, plain, act))
    for d in (2, 3, 4):
        dtr = measure(model, plain_step, runs, limit=act // d)
        print(row(f"memory_limit act/{d}", dtr, plain, act))
        budget = dtr["peak"]
        try:
            planned = measure(model, lambda b=budget: remat.checkpoint_sequential(
                layers, None, x, budget_bytes=b).mean(), runs)
            print(row(f"  planner at DTR's peak ({budget / 2**20:.2f} MiB)", planned, plain,
                      act))
        except ValueError:
            print(f"  planner at DTR's peak ({budget / 2**20:.2f} MiB): no plan fits")


def part_two(args) -> None:
    n = args.deep
    model = mlp(n, args.deep_width)
    x = remat.randn(args.deep_batch, args.deep_width)

    def step():
        return model(x).mean()

    plain = measure(model, step, args.runs)
    act = plain["peak"]
    per_layer = act / n
    budget = int(2 * math.sqrt(n) * per_layer)
    print(f"\n## depth-{n} MLP (Linear({args.deep_width}) + GELU), batch {args.deep_batch}: "
          f"limit 2*sqrt(n) = {2 * math.sqrt(n):.0f} layer activations "
          f"({budget / 2**20:.2f} MiB of {act / 2**20:.2f} MiB)\n")
    print(header())
    print(row("none (plain)", plain, plain, act))
    dtr = measure(model, step, args.runs, limit=budget)
    print(row("memory_limit 2*sqrt(n) layers", dtr, plain, act))
    layers = list(model)
    sqrt = measure(model, lambda: remat.checkpoint_sequential(layers, "sqrt", x).mean(),
                   args.runs)
    print(row("checkpoint_sequential sqrt", sqrt, plain, act))
    print(f"\nDTR peak = {dtr['peak'] / per_layer:.1f} layer activations "
          f"(2*sqrt(n) = {2 * math.sqrt(n):.1f}), time {dtr['time'] / plain['time']:.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--gpt-batch", type=int, default=8)
    ap.add_argument("--deep", type=int, default=1000)
    ap.add_argument("--deep-width", type=int, default=64)
    ap.add_argument("--deep-batch", type=int, default=64)
    args = ap.parse_args()
    print(f"# remat memory-limit benchmark: {os.cpu_count()} cores, {cpu_model()}, "
          f"flags {cpu_flags()}, {remat.get_num_threads()} threads, median of {args.runs}")
    part_one(f"MLP {args.depth} x (Linear({args.width}) + GELU), batch {args.batch}, float32",
             mlp(args.depth, args.width), remat.randn(args.batch, args.width), args.runs)
    block_cls = load_block()
    remat.manual_seed(0)
    gpt = nn.Sequential(*[block_cls(args.dim, args.heads, 0.0) for _ in range(args.blocks)])
    part_one(f"GPT blocks {args.blocks} x Block(dim {args.dim}, {args.heads} heads), batch "
             f"{args.gpt_batch}, {args.tokens} tokens",
             gpt, remat.randn(args.gpt_batch, args.tokens, args.dim), args.runs)
    part_two(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
