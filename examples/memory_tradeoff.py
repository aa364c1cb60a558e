"""Measure the memory / time trade-off of gradient checkpointing against network depth.

For each depth and strategy, one training step (forward, backward, SGD update) of a residual
MLP is measured: peak activation memory (the engine's peak byte counter minus what was live
when the step started, with parameter gradients already allocated) and the median wall time
over a few repetitions. The strategies:

    none     keep every activation
    every    every block is a checkpoint segment
    sqrt     checkpoint_sequential(blocks, "sqrt", x)
    budget   checkpoint_sequential(blocks, None, x, budget_bytes=B) with B half the
             activation memory the plain run needs at that depth
    dtr      no change to the model: remat.memory_limit(live bytes + B), the same B
             (dynamic rematerialisation evicts and recomputes activations as needed)

A third panel is the trade-off curve at one depth (``--curve-depth``): time overhead over
the plain step against the activation memory allowed, for the planner (``budget_bytes``)
and for the memory limit (DTR), at the fractions of ``--fractions``.

Prints tables and writes a plot (``--out``).

    python examples/memory_tradeoff.py
    python examples/memory_tradeoff.py --depths 16 64 256 --width 256 --out tradeoff.png
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import remat  # noqa: E402
from remat import nn, optim  # noqa: E402

STRATEGIES = ("none", "every", "sqrt", "budget", "dtr")


class Block(nn.Module):
    """Pre-norm residual MLP block: ``x + fc2(gelu(fc1(norm(x))))``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def run_blocks(blocks: nn.Sequential, x, strategy: str, budget: int | None):
    if strategy == "sqrt":
        return remat.checkpoint_sequential(blocks, "sqrt", x)
    if strategy == "budget":
        return remat.checkpoint_sequential(blocks, None, x, budget_bytes=budget)
    return blocks(x)  # "none", or "every" via activation_checkpointing


def measure(
    depth: int, width: int, batch: int, strategy: str, budget: int | None, reps: int, device: str
) -> tuple[int, float]:
    """(peak activation bytes, median step seconds) of one training step."""
    remat.manual_seed(0)
    blocks = nn.Sequential(*[Block(width) for _ in range(depth)]).to(device)
    for b in blocks:
        b.activation_checkpointing = strategy == "every"
    opt = optim.SGD(blocks.parameters(), lr=1e-3)
    x = remat.randn(batch, width, device=device)

    def step(warm_up: bool = False) -> None:
        opt.zero_grad(set_to_none=False)
        limit = None
        if strategy == "dtr" and budget is not None and not warm_up:
            limit = remat.memory_allocated(device) + budget
        with remat.memory_limit(limit, device):
            y = run_blocks(blocks, x, strategy, budget)
            (y * y).mean().backward()
        opt.step()
        if device != "cpu":
            remat.cuda.synchronize()

    step(warm_up=True)  # allocates the parameter gradients (kept from now on)
    peaks, times = [], []
    for _ in range(reps):
        base = remat.memory_allocated(device)
        remat.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        peaks.append(remat.max_memory_allocated(device) - base)
    return max(peaks), statistics.median(times)


def tradeoff_curve(args) -> dict[str, list[tuple[float, float]]]:
    """For the planner ("budget") and the memory limit ("dtr") at depth ``--curve-depth``:
    (peak activation memory, step time), both as multiples of the plain step's, at each
    fraction of the plain activation memory (-1 where nothing fits)."""
    depth, w, b, reps, dev = args.curve_depth, args.width, args.batch_size, args.reps, args.device
    plain_peak, plain_secs = measure(depth, w, b, "none", None, reps, dev)
    print(f"\ntrade-off at depth {depth}: plain step {plain_secs * 1e3:.1f} ms, "
          f"{plain_peak / 2**20:.2f} MiB of activations")
    print(f"{'allowed':>8} {'planner mem':>12} {'planner time':>13} {'dtr mem':>9} "
          f"{'dtr time':>9}")
    curve: dict[str, list[tuple[float, float]]] = {"planner (budget_bytes)": [],
                                                   "memory limit (DTR)": []}
    for f in args.fractions:
        line = f"{f:>8.3f} "
        for name, strategy in zip(curve, ("budget", "dtr")):
            try:
                peak, secs = measure(depth, w, b, strategy, max(int(plain_peak * f), 1), reps,
                                     dev)
                point = (peak / plain_peak, secs / plain_secs)
                line += f"{point[0]:>12.2f} {point[1]:>12.2f}x "
            except (ValueError, MemoryError):
                point = (-1.0, math.nan)
                line += f"{'n/a':>12} {'n/a':>13} "
            curve[name].append(point)
        print(line.rstrip(), flush=True)
    return curve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3, help="timed steps per point (median)")
    ap.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--curve-depth", type=int, default=64, help="depth of the trade-off curve")
    ap.add_argument("--fractions", type=float, nargs="+",
                    default=[0.125, 0.2, 0.25, 0.33, 0.5, 0.75, 1.0],
                    help="activation memory allowed, as fractions of the plain run's")
    ap.add_argument("--out", default="memory_tradeoff.png", help="where to write the plot")
    ap.add_argument("--quick", action="store_true", help="a tiny sweep for the test suite")
    args = ap.parse_args(argv)
    if args.quick:
        args.depths, args.width, args.batch_size, args.reps = [8, 16], 32, 16, 1
        args.curve_depth, args.fractions = 16, [0.25, 0.5, 1.0]
    if args.device.startswith("cuda"):
        try:
            remat.zeros(1, device=args.device)
        except remat.DeviceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    strategies = list(args.strategies)
    results: dict[str, list[tuple[int, float]]] = {s: [] for s in strategies}
    print(
        f"width {args.width}, batch {args.batch_size}, device {args.device}; "
        "activation memory = peak bytes during a step minus bytes live at its start"
    )
    header = f"{'depth':>6} " + " ".join(f"{s + ' MiB':>12} {s + ' ms':>10}" for s in strategies)
    print(header)
    for depth in args.depths:
        none_peak = None
        row = f"{depth:>6} "
        for s in strategies:
            budget = None
            if s in ("budget", "dtr"):
                if none_peak is None:
                    none_peak, _ = measure(
                        depth, args.width, args.batch_size, "none", None, 1, args.device
                    )
                budget = max(none_peak // 2, 1)
            try:
                peak, secs = measure(
                    depth, args.width, args.batch_size, s, budget, args.reps, args.device
                )
            except (ValueError, RuntimeError, MemoryError) as e:  # a budget nothing fits
                print(f"  {s} at depth {depth}: {e}", file=sys.stderr)
                peak, secs = -1, math.nan
            if s == "none":
                none_peak = peak
            results[s].append((peak, secs))
            mem = f"{peak / 2**20:.2f}" if peak >= 0 else "n/a"
            row += f"{mem:>12} {secs * 1e3:>10.1f} "
        print(row.rstrip(), flush=True)

    curve = tradeoff_curve(args)

    fig, (ax_mem, ax_time, ax_curve) = plt.subplots(1, 3, figsize=(16, 4.2))
    for s in strategies:
        mem = [p / 2**20 if p >= 0 else np.nan for p, _ in results[s]]
        ms = [t * 1e3 for _, t in results[s]]
        ax_mem.plot(args.depths, mem, marker="o", label=s)
        ax_time.plot(args.depths, ms, marker="o", label=s)
    for ax, title, unit in (
        (ax_mem, "peak activation memory", "MiB"),
        (ax_time, "training step time (median)", "ms"),
    ):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("depth (residual blocks)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
    for name, points in curve.items():
        ok = [(p, t) for p, t in points if p >= 0]
        ax_curve.plot([p for p, _ in ok], [t for _, t in ok], marker="o", label=name)
    ax_curve.set_xlabel("peak activation memory (fraction of the plain run's)")
    ax_curve.set_ylabel("step time (× plain)")
    ax_curve.set_title(f"time against memory, depth {args.curve_depth}")
    ax_curve.grid(True, alpha=0.3)
    ax_curve.legend()
    fig.suptitle(f"remat gradient checkpointing: width {args.width}, batch {args.batch_size}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
