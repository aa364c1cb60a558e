"""Memory and time per checkpoint strategy: none, per-block, ``"sqrt"``, ``dots_saveable``,
``budget_bytes`` and ``auto_checkpoint`` at 1/2, 1/3 and 1/5 of the plain peak, on
a deep MLP (n × (Linear + GELU)), a stack of GPT blocks (examples/gpt.py's ``Block``) and a
CNN (n × (Conv2d 3×3 + ReLU), same-size feature maps).
Peak = ``max_memory_allocated()`` above what is live when the step starts (gradients exist
before it), from the engine's byte counters; time = median step (forward + backward).

    python benches/strategies.py [--runs 5] [--mlp-depth 32 --width 256 --batch 512]
                                 [--blocks 8 --tokens 128 --dim 256 --gpt-batch 8]
                                 [--cnn-depth 8 --channels 32 --image 32 --cnn-batch 16]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import remat
from remat import checkpoint_policies as cp
from remat import nn

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import cpu_model  # noqa: E402
from selective_policies import cpu_flags, load_block  # noqa: E402


def measure(model: nn.Module, run: Callable[[], remat.Tensor], runs: int) -> tuple[float, int]:
    """(median seconds, peak bytes above the step's start) of ``run().backward()``."""
    for p in model.parameters():
        if p.grad is None:
            p.grad = remat.zeros_like(p)
    times, peaks = [], []
    for _ in range(runs + 1):
        gc.collect()
        base = remat.memory_allocated()
        remat.reset_peak_memory_stats()
        t0 = time.perf_counter()
        run().backward()
        times.append(time.perf_counter() - t0)
        gc.collect()
        peaks.append(remat.max_memory_allocated() - base)
    return statistics.median(times[1:]), max(peaks[1:])


#: The budgets tried, as fractions of the plain peak (plain/2, plain/3, plain/5).
FRACTIONS = (2, 3, 5)


def describe(plan: remat.AutoCheckpointPlan) -> str:
    """What an auto_checkpoint plan chose, in a few words."""
    parts = []
    if plan.chains:
        parts.append("the chain under the planner")
    if plan.modules:
        dots = len(plan.policies)
        parts.append(f"{len(plan.modules)} modules" + (f" ({dots} dots_saveable)" if dots else ""))
    if plan.memory_cap_bytes is not None:
        parts.append("a memory cap (dynamic rematerialisation)")
    return ", ".join(parts) or "nothing"


def set_blocks(blocks: list[nn.Module], on: bool, policy=None) -> None:
    for b in blocks:
        b.activation_checkpointing = on
        b.activation_checkpointing_policy = policy


def strategies(model: nn.Sequential, x: remat.Tensor, runs: int) -> list[tuple[str, float, int]]:
    blocks = list(model)

    def loss() -> remat.Tensor:
        return model(x).float().mean()

    rows = []
    set_blocks(blocks, False)
    plain_s, plain = measure(model, loss, runs)
    rows.append(("none", plain_s, plain))
    set_blocks(blocks, True)
    rows.append(("per-block", *measure(model, loss, runs)))
    set_blocks(blocks, True, cp.dots_saveable)
    rows.append(("per-block, dots_saveable", *measure(model, loss, runs)))
    set_blocks(blocks, False)
    rows.append(('checkpoint_sequential("sqrt")', *measure(
        model, lambda: remat.checkpoint_sequential(model, "sqrt", x).float().mean(), runs)))
    for frac in FRACTIONS:
        budget = plain // frac
        try:
            rows.append((f"budget_bytes = plain/{frac}", *measure(
                model, lambda b=budget: remat.checkpoint_sequential(
                    model, None, x, budget_bytes=b).float().mean(), runs)))
        except ValueError as e:
            least = int(str(e).split("smallest budget that fits is budget_bytes=")[1].split()[0])
            rows.append((f"budget_bytes = plain/{frac}: does not fit; the smallest that does "
                         f"is plain/{plain / least:.2f}", float("nan"), 0))
    for frac in FRACTIONS:
        try:
            plan = remat.auto_checkpoint(model, x, budget_bytes=plain // frac)
        except ValueError as e:
            reached = int(str(e).split("smallest peak reached is ")[1].split()[0])
            rows.append((f"auto_checkpoint(plain/{frac}): does not fit; it reaches "
                         f"plain/{plain / reached:.2f}", float("nan"), 0))
            continue
        rows.append((f"auto_checkpoint(plain/{frac}): {describe(plan)}",
                     *measure(model, loss, runs)))
        plan.remove()
    return rows


def table(title: str, rows: list[tuple[str, float, int]]) -> None:
    plain_s, plain = rows[0][1], rows[0][2]
    print(f"\n{title}\n")
    print("| strategy | step ms | × plain | peak MiB | × plain |")
    print("|---|---:|---:|---:|---:|")
    for name, s, peak in rows:
        if s != s:  # NaN: the strategy raised
            print(f"| {name} | – | – | – | – |")
            continue
        print(f"| {name} | {s * 1e3:.1f} | {s / plain_s:.2f} | {peak / 2**20:.2f} | "
              f"{peak / plain:.2f} |")


def add_model_args(ap: argparse.ArgumentParser) -> None:
    """The three models' flags (shared with strategies_torch.py, so both measure the same)."""
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mlp-depth", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--gpt-batch", type=int, default=8)
    ap.add_argument("--cnn-depth", type=int, default=8)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--cnn-batch", type=int, default=16)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(ap)
    args = ap.parse_args()
    print(f"machine: {cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, "
          f"{remat.get_num_threads()} threads; float32; medians of {args.runs} steps after "
          "one warm-up; peak = max_memory_allocated() above the step's start")

    remat.manual_seed(0)
    mlp = nn.Sequential(*[nn.Sequential(nn.Linear(args.width, args.width), nn.GELU())
                          for _ in range(args.mlp_depth)])
    x = remat.randn(args.batch, args.width)
    table(f"MLP: {args.mlp_depth} × (Linear({args.width}) + GELU), batch {args.batch}",
          strategies(mlp, x, args.runs))

    block_cls = load_block()
    remat.manual_seed(0)
    gpt = nn.Sequential(*[block_cls(args.dim, args.heads, 0.0) for _ in range(args.blocks)])
    h = remat.randn(args.gpt_batch, args.tokens, args.dim)
    table(f"GPT blocks: {args.blocks} × Block(dim {args.dim}, {args.heads} heads), batch "
          f"{args.gpt_batch}, {args.tokens} tokens", strategies(gpt, h, args.runs))

    remat.manual_seed(0)
    cnn = nn.Sequential(*[nn.Sequential(nn.Conv2d(args.channels, args.channels, 3, padding=1),
                                        nn.ReLU()) for _ in range(args.cnn_depth)])
    img = remat.randn(args.cnn_batch, args.channels, args.image, args.image)
    table(f"CNN: {args.cnn_depth} × (Conv2d({args.channels}, {args.channels}, 3, padding=1) + "
          f"ReLU), batch {args.cnn_batch}, {args.image}×{args.image}",
          strategies(cnn, img, args.runs))


if __name__ == "__main__":
    main()
