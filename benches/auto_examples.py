"""``auto_checkpoint`` on the examples' own models (``examples/gpt.py``'s ``GPT`` and
``examples/deep_mlp.py``'s ``DeepMLP``) at 1/2, 1/3 and 1/5 of the plain peak, against every
hand-placed per-block checkpointing (the first k blocks checkpointed, k = 0 .. n).

For each budget: the plan's measured peak and step time, and the fastest hand-placed plan
whose peak is at most the plan's ("best per-block at that peak"; none when even all blocks
checkpointed keep more). Peak = ``max_memory_allocated()`` above what is live when the step
starts (gradients allocated before it); time = median of ``--runs`` steps (forward +
backward), the configurations measured round-robin (one step of each per round, after a
warm-up round, each plan right after the plain step) so that drifts of the machine's speed
hit them alike; a plan's "× plain" is the median over rounds of its time over that round's
plain step.

    python benches/auto_examples.py [--runs 5]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
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

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def settings(model: nn.Module) -> dict[str, tuple]:
    """Every module's checkpoint settings (flag, policy, chain budget, memory cap), to
    re-apply a plan."""
    return {n: (m.activation_checkpointing, m.activation_checkpointing_policy,
                m.__dict__.get("_chain_budget_bytes"), m.__dict__.get("_memory_cap_bytes"))
            for n, m in model.named_modules()}


def apply(model: nn.Module, s: dict[str, tuple]) -> None:
    for n, m in model.named_modules():
        m.activation_checkpointing, m.activation_checkpointing_policy, chain, cap = s[n]
        m.__dict__["_chain_budget_bytes"] = chain
        m.__dict__["_memory_cap_bytes"] = cap


def step(loss: Callable[[], remat.Tensor]) -> tuple[float, int]:
    """(seconds, peak bytes above the step's start) of one ``loss().backward()``."""
    gc.collect()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    t0 = time.perf_counter()
    loss().backward()
    seconds = time.perf_counter() - t0
    gc.collect()
    return seconds, remat.max_memory_allocated() - base


def compare(title: str, model: nn.Module, blocks: nn.Sequential, inputs: tuple,
            loss_of: Callable[[object], remat.Tensor], runs: int) -> None:
    def loss() -> remat.Tensor:
        return loss_of(model(*inputs))

    for p in model.parameters():
        p.grad = remat.zeros_like(p)
    hand: dict[str, dict[str, tuple]] = {}
    for k in range(len(blocks) + 1):
        for i, b in enumerate(blocks):
            b.activation_checkpointing = i < k
        hand[f"{k} blocks"] = settings(model)
    # The plans are measured right after the plain step of each round (see below).
    configs: dict[str, dict[str, tuple]] = {"0 blocks": hand["0 blocks"]}
    apply(model, configs["0 blocks"])
    plain = step(loss)[1]
    plans = {}
    for frac in (2, 3, 5):
        try:
            plan = remat.auto_checkpoint(model, *inputs, budget_bytes=plain // frac,
                                         loss_fn=loss_of)
        except ValueError as e:
            plans[frac] = str(e)
            continue
        configs[f"auto plain/{frac}"] = settings(model)
        plans[frac] = plan.candidates[0][0]
        print(f"plain/{frac}: candidates (what, peak, median seconds): "
              + "; ".join(f"{w} {p / plain:.2f}x {t * 1e3:.1f} ms" for w, p, t in plan.candidates),
              flush=True)
        plan.remove()
    configs.update(hand)
    # Round-robin: one step of every configuration per round, so drifts of the machine's
    # speed hit them all alike; medians over the rounds.
    times: dict[str, list[float]] = {n: [] for n in configs}
    peaks: dict[str, int] = {}
    for r in range(runs + 1):
        for name, s in configs.items():
            apply(model, s)
            t, peak = step(loss)
            if r:
                times[name].append(t)
                peaks[name] = max(peaks.get(name, 0), peak)
    apply(model, configs["0 blocks"])
    med = {n: statistics.median(t) for n, t in times.items()}
    # Each plan's time over the plain step of the same round (measured just before it), the
    # median of those ratios: steadier than a ratio of medians on a machine whose speed drifts.
    over_plain = {n: statistics.median(a / b for a, b in zip(t, times["0 blocks"]))
                  for n, t in times.items()}
    plain_s = med["0 blocks"]
    print(f"\n{title}\n")
    print(f"plain: {plain_s * 1e3:.1f} ms, peak {plain / 2**20:.2f} MiB. Hand-placed (first k "
          "blocks checkpointed): " + ", ".join(
              f"k={k}: {med[f'{k} blocks'] / plain_s:.2f}x time, "
              f"{peaks[f'{k} blocks'] / plain:.2f}x peak" for k in range(1, len(blocks) + 1)))
    print()
    print("| budget | plan | peak × plain | fits | step ms | × plain | best per-block at that "
          "peak: ms | plan / best per-block |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for frac in (2, 3, 5):
        name = f"auto plain/{frac}"
        if name not in configs:
            print(f"| plain/{frac} | does not fit: {plans[frac]} | | | | | | |")
            continue
        s, peak = med[name], peaks[name]
        what = plans[frac] if len(plans[frac]) <= 60 else plans[frac][:57] + "..."
        same = [med[f"{k} blocks"] for k in range(len(blocks) + 1)
                if peaks[f"{k} blocks"] <= peak]
        best = min(same) if same else None
        print(f"| plain/{frac} | {what} | {peak / plain:.3f} | "
              f"{'yes' if peak <= plain // frac else 'NO'} | {s * 1e3:.1f} | "
              f"{over_plain[name]:.2f} | "
              + (f"{best * 1e3:.1f} | {s / best:.2f} |" if best else "none reaches it | – |"),
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, "
          f"{remat.get_num_threads()} threads; float32; medians of {args.runs} steps after a "
          "warm-up")

    gpt = load("gpt")
    remat.manual_seed(0)
    model = gpt.GPT(vocab=65, d=256, heads=4, layers=8, context=128, dropout=0.0,
                    checkpoint=False)
    idx = remat.randint(0, 65, (8, 128))
    target = remat.randint(0, 65, (8, 128))

    def gpt_loss(logits: remat.Tensor) -> remat.Tensor:
        return remat.nn.functional.cross_entropy(logits.reshape(-1, 65), target.reshape(-1))

    compare("examples/gpt.py GPT: 8 blocks, d 256, 4 heads, vocab 65, batch 8 × 128 tokens",
            model, model.blocks, (idx,), gpt_loss, args.runs)

    mlp = load("deep_mlp")
    remat.manual_seed(0)
    model = mlp.DeepMLP(64, 10, depth=32, width=256)
    x = remat.randn(512, 64)
    y = remat.randint(0, 10, (512,))
    compare("examples/deep_mlp.py DeepMLP: 32 residual blocks, width 256, batch 512", model,
            model.blocks, (x,), lambda out: remat.cross_entropy(out, y), args.runs)


if __name__ == "__main__":
    main()
