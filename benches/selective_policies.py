"""Selective checkpoint policies on a stack of GPT blocks (examples/gpt.py's ``Block``): step
time (forward + backward) and the activation bytes kept between forward and backward, for no
checkpointing, per-block checkpointing (``nothing_saveable``), ``dots_saveable`` and
``everything_saveable``. Bytes come from the engine's counters (``memory_allocated()`` after
the forward minus before it: the activations the graph keeps; the peak is
``max_memory_allocated()`` above the start of the step).

    python benches/selective_policies.py [--blocks 4 --batch 8 --tokens 128 --dim 256]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import remat
from remat import checkpoint_policies as cp

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import cpu_flags, cpu_model  # noqa: E402


def load_block():
    path = Path(__file__).resolve().parents[1] / "examples" / "gpt.py"
    spec = importlib.util.spec_from_file_location("gpt_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Block


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    block_cls = load_block()
    remat.manual_seed(0)
    blocks = [block_cls(args.dim, args.heads, 0.0) for _ in range(args.blocks)]
    x0 = remat.randn(args.batch, args.tokens, args.dim)

    strategies = {
        "none": None,
        "per-block (nothing_saveable)": cp.nothing_saveable,
        "dots_saveable": cp.dots_saveable,
        "everything_saveable": cp.everything_saveable,
    }

    def step(policy, plain):
        for b in blocks:
            b.zero_grad()
            b.activation_checkpointing = not plain
            b.activation_checkpointing_policy = policy
        x = x0.detach().requires_grad_()
        remat.reset_peak_memory_stats()
        base = remat.memory_allocated()
        t0 = time.perf_counter()
        h = x
        for b in blocks:
            h = b(h)
        kept = remat.memory_allocated() - base
        (h * h).mean().backward()
        dt = time.perf_counter() - t0
        return dt, kept, remat.max_memory_allocated() - base

    print(f"machine: {cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, "
          f"{remat.get_num_threads()} threads")
    print(f"settings: {args.blocks} GPT blocks, batch {args.batch}, {args.tokens} tokens, "
          f"dim {args.dim}, {args.heads} heads, float32; medians of {args.runs} steps "
          "(forward + backward) after one warm-up, strategies round-robin (one step of "
          "each per round, so the machine's drift hits them alike)")
    for name, policy in strategies.items():
        step(policy, name == "none")
    results: dict[str, list] = {name: [] for name in strategies}
    for _ in range(args.runs):
        for name, policy in strategies.items():
            results[name].append(step(policy, name == "none"))
    rows = [(name, statistics.median(r[0] for r in res) * 1e3, res[0][1], res[0][2])
            for name, res in results.items()]
    base_ms, base_kept = rows[0][1], rows[0][2]
    print("\n| strategy | step ms | × plain | activations kept MiB | × plain | peak MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ms, kept, peak in rows:
        print(f"| {name} | {ms:.1f} | {ms / base_ms:.2f} | {kept / 2**20:.2f} | "
              f"{kept / base_kept:.2f} | {peak / 2**20:.2f} |")


if __name__ == "__main__":
    main()
