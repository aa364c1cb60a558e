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

Prints a table and writes a plot of both figures against depth (``--out``).

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

STRATEGIES = ("none", "every", "sqrt", "budget")


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

    def step() -> None:
        opt.zero_grad(set_to_none=False)
        y = run_blocks(blocks, x, strategy, budget)
        (y * y).mean().backward()
        opt.step()
        if device != "cpu":
            remat.cuda.synchronize()

    step()  # allocates the parameter gradients (kept from now on)
    peaks, times = [], []
    for _ in range(reps):
        base = remat.memory_allocated(device)
        remat.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        peaks.append(remat.max_memory_allocated(device) - base)
    return max(peaks), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3, help="timed steps per point (median)")
    ap.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="memory_tradeoff.png", help="where to write the plot")
    ap.add_argument("--quick", action="store_true", help="a tiny sweep for the test suite")
    args = ap.parse_args(argv)
    if args.quick:
        args.depths, args.width, args.batch_size, args.reps = [8, 16], 32, 16, 1
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
            if s == "budget":
                if none_peak is None:
                    none_peak, _ = measure(
                        depth, args.width, args.batch_size, "none", None, 1, args.device
                    )
                budget = max(none_peak // 2, 1)
            try:
                peak, secs = measure(
                    depth, args.width, args.batch_size, s, budget, args.reps, args.device
                )
            except (ValueError, RuntimeError) as e:  # e.g. a budget no plan fits
                print(f"  {s} at depth {depth}: {e}", file=sys.stderr)
                peak, secs = -1, math.nan
            if s == "none":
                none_peak = peak
            results[s].append((peak, secs))
            mem = f"{peak / 2**20:.2f}" if peak >= 0 else "n/a"
            row += f"{mem:>12} {secs * 1e3:>10.1f} "
        print(row.rstrip(), flush=True)

    fig, (ax_mem, ax_time) = plt.subplots(1, 2, figsize=(11, 4.2))
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
    fig.suptitle(f"remat gradient checkpointing: width {args.width}, batch {args.batch_size}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
