"""Memory and time per checkpoint strategy: none, per-block, ``"sqrt"``, ``dots_saveable``,
``budget_bytes`` and ``auto_checkpoint`` at 1/2, 1/3 and 1/5 of the plain peak, on
a deep MLP (n × (Linear + GELU)), a stack of GPT blocks (examples/gpt.py's ``Block``) and a
CNN (n × (Conv2d 3×3 + ReLU), same-size feature maps).
Peak = ``max_memory_allocated()`` above what is live when the step starts (gradients exist
before it), from the engine's byte counters; time = median step (forward + backward). The
static strategies run round-robin; each ``auto_checkpoint`` plan is timed against plain steps
run just before and after it (its row: that ratio times the round-robin plain median).

    python benches/strategies.py [--runs 5] [--mlp-depth 32 --width 256 --batch 512]
                                 [--blocks 8 --tokens 128 --dim 256 --gpt-batch 8]
                                 [--cnn-depth 8 --channels 32 --image 32 --cnn-batch 16]
                                 [--models mlp,gpt,cnn]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import remat
from remat import checkpoint_policies as cp
from remat import nn

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import cpu_model  # noqa: E402
from auto_examples import step  # noqa: E402
from machine_info import cpu_flags  # noqa: E402
from selective_policies import load_block  # noqa: E402


def one_step(model: nn.Module, run: Callable[[], remat.Tensor]) -> tuple[float, int]:
    """(seconds, peak bytes above the step's start) of one ``run().backward()``, gradients
    allocated before it."""
    for p in model.parameters():
        if p.grad is None:
            p.grad = remat.zeros_like(p)
    return step(run)


def summary(steps: list[tuple[float, int]]) -> tuple[float, int]:
    """(median seconds, largest peak) of the steps after the first (a warm-up)."""
    return statistics.median(s for s, _ in steps[1:]), max(p for _, p in steps[1:])


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
    """Each strategy's median step and peak. The static strategies run round-robin (one step
    of each per round, so the machine's drift hits them alike); an ``auto_checkpoint`` plan
    (installed once) runs its steps between two sets of plain steps, and its time is given
    relative to those (scaled to the round-robin plain median)."""
    blocks = list(model)

    def loss() -> remat.Tensor:
        return model(x).float().mean()

    def per_block(policy=None):
        return lambda: set_blocks(blocks, True, policy)

    def plain_blocks():
        set_blocks(blocks, False)

    def sequential(segments, budget=None):
        return lambda: remat.checkpoint_sequential(model, segments, x,
                                                   budget_bytes=budget).float().mean()

    # (name, set up the model, the step's loss)
    static = [("none", plain_blocks, loss),
              ("per-block", per_block(), loss),
              ("per-block, dots_saveable", per_block(cp.dots_saveable), loss),
              ('checkpoint_sequential("sqrt")', plain_blocks, sequential("sqrt"))]
    plain_peak = one_step(model, loss)[1]
    unfit: dict[int, str] = {}
    for frac in FRACTIONS:
        budget = plain_peak // frac
        plain_blocks()
        try:
            one_step(model, sequential(None, budget))
        except ValueError as e:
            least = int(str(e).split("smallest budget that fits is budget_bytes=")[1].split()[0])
            unfit[frac] = (f"budget_bytes = plain/{frac}: does not fit; the smallest that does "
                           f"is plain/{plain_peak / least:.2f}")
            continue
        static.append((f"budget_bytes = plain/{frac}", plain_blocks, sequential(None, budget)))
    steps: dict[str, list[tuple[float, int]]] = {name: [] for name, _, _ in static}
    for _ in range(runs + 1):
        for name, setup, run in static:
            setup()
            steps[name].append(one_step(model, run))
    plain_blocks()
    rows = [(name, *summary(steps[name])) for name, _, _ in static]
    rows += [(text, float("nan"), 0) for text in unfit.values()]
    plain_s = rows[0][1]
    for frac in FRACTIONS:
        before = summary([one_step(model, loss) for _ in range(runs + 1)])[0]
        try:
            plan = remat.auto_checkpoint(model, x, budget_bytes=plain_peak // frac)
        except ValueError as e:
            reached = int(str(e).split("smallest peak reached is ")[1].split()[0])
            rows.append((f"auto_checkpoint(plain/{frac}): does not fit; it reaches "
                         f"plain/{plain_peak / reached:.2f}", float("nan"), 0))
            continue
        planned_s, peak = summary([one_step(model, loss) for _ in range(runs + 1)])
        plan.remove()
        after = summary([one_step(model, loss) for _ in range(runs + 1)])[0]
        ratio = planned_s / ((before + after) / 2)
        rows.append((f"auto_checkpoint(plain/{frac}): {describe(plan)}", ratio * plain_s, peak))
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
    ap.add_argument("--models", default="mlp,gpt,cnn",
                    help="which of the models to run, comma-separated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(ap)
    args = ap.parse_args()
    print(f"machine: {cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, "
          f"{remat.get_num_threads()} threads; float32; medians of {args.runs} steps after "
          "one warm-up, static strategies round-robin, auto_checkpoint plans against plain "
          "steps just before and after; peak = max_memory_allocated() above the step's start")

    models = set(args.models.split(","))
    if "mlp" in models:
        mlp_table(args)
    if "gpt" in models:
        gpt_table(args)
    if "cnn" in models:
        cnn_table(args)


def mlp_table(args) -> None:
    remat.manual_seed(0)
    mlp = nn.Sequential(*[nn.Sequential(nn.Linear(args.width, args.width), nn.GELU())
                          for _ in range(args.mlp_depth)])
    x = remat.randn(args.batch, args.width)
    table(f"MLP: {args.mlp_depth} × (Linear({args.width}) + GELU), batch {args.batch}",
          strategies(mlp, x, args.runs))


def gpt_table(args) -> None:
    block_cls = load_block()
    remat.manual_seed(0)
    gpt = nn.Sequential(*[block_cls(args.dim, args.heads, 0.0) for _ in range(args.blocks)])
    h = remat.randn(args.gpt_batch, args.tokens, args.dim)
    table(f"GPT blocks: {args.blocks} × Block(dim {args.dim}, {args.heads} heads), batch "
          f"{args.gpt_batch}, {args.tokens} tokens", strategies(gpt, h, args.runs))


def cnn_table(args) -> None:
    remat.manual_seed(0)
    cnn = nn.Sequential(*[nn.Sequential(nn.Conv2d(args.channels, args.channels, 3, padding=1),
                                        nn.ReLU()) for _ in range(args.cnn_depth)])
    img = remat.randn(args.cnn_batch, args.channels, args.image, args.image)
    table(f"CNN: {args.cnn_depth} × (Conv2d({args.channels}, {args.channels}, 3, padding=1) + "
          f"ReLU), batch {args.cnn_batch}, {args.image}×{args.image}",
          strategies(cnn, img, args.runs))


if __name__ == "__main__":
    main()
