"""A U-Net's training step under a memory cap (dynamic rematerialisation,
``remat.memory_limit``) at 1/2 and 1/3 of its plain peak, and ``auto_checkpoint`` at 1/2,
against the plain step; PyTorch's plain step beside it where PyTorch is installed.

The model is ``benches/unet_model.py`` (three levels of two 3×3 convolutions + ReLU,
average pooling down, nearest upsampling up, skip connections concatenated). Peak =
``max_memory_allocated()`` above the step's start, gradients allocated before it (engine
byte counters; PyTorch: its profiler's allocations and frees in time order); time = median
of ``--runs`` steps after one warm-up. Gradients under the cap are checked equal to the
plain step's.

    python benches/unet.py [--runs 3] [--batch 8 --image 64 --width 32 --levels 3]
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
from remat import nn

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import cpu_flags, cpu_model  # noqa: E402
from unet_model import unet_class  # noqa: E402


def measure(model, x, runs: int, limit: int | None = None) -> dict:
    """Median step time and the largest peak above the step's start, under ``limit`` bytes
    above the start (None: no limit); and the gradients of the last step."""
    for p in model.parameters():
        p.grad = remat.zeros_like(p)
    times, peaks = [], []
    for _ in range(runs + 1):
        for p in model.parameters():
            p.grad.zero_()
        base = remat.memory_allocated()
        remat.reset_peak_memory_stats()
        with remat.memory_limit(None if limit is None else base + limit):
            t0 = time.perf_counter()
            model(x).float().mean().backward()
            times.append(time.perf_counter() - t0)
        peaks.append(remat.max_memory_allocated() - base)
    grads = [p.grad.clone() for p in model.parameters()]
    return {"time": statistics.median(times[1:]), "peak": max(peaks[1:]), "grads": grads}


def torch_plain(a) -> dict | None:
    """PyTorch's plain step on the same model: median time and peak live bytes."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch
    from strategies_torch import peak_bytes

    torch.set_num_threads(remat.get_num_threads())
    torch.manual_seed(0)
    model = unet_class(torch.nn, torch.cat)(3, a.width, a.levels)
    x = torch.randn(a.batch, 3, a.image, a.image)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)

    def step():
        model(x).float().mean().backward()

    times = []
    for _ in range(a.runs + 1):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"time": statistics.median(times[1:]), "peak": peak_bytes(step),
            "version": torch.__version__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--levels", type=int, default=3)
    a = ap.parse_args()
    print(f"machine: {cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, "
          f"{remat.get_num_threads()} threads; float32; U-Net width {a.width}, {a.levels} "
          f"levels, batch {a.batch}, {a.image}×{a.image}; medians of {a.runs} steps after one "
          "warm-up; peak above the step's start")
    remat.manual_seed(0)
    model = unet_class(nn, remat.cat)(3, a.width, a.levels)
    x = remat.randn(a.batch, 3, a.image, a.image)
    plain = measure(model, x, a.runs)
    print("\n| strategy | step ms | × plain | peak MiB | × plain | gradients |")
    print("|---|---:|---:|---:|---:|---|")

    def row(name: str, m: dict) -> None:
        same = all(remat.equal(g, h) for g, h in zip(m["grads"], plain["grads"]))
        print(f"| {name} | {m['time'] * 1e3:.1f} | {m['time'] / plain['time']:.2f} | "
              f"{m['peak'] / 2**20:.2f} | {m['peak'] / plain['peak']:.2f} | "
              f"{'identical' if same else 'DIFFER'} |", flush=True)

    row("none", plain)
    for d in (2, 3):
        try:
            row(f"memory_limit(plain/{d})", measure(model, x, a.runs, plain["peak"] // d))
        except MemoryError as e:
            print(f"| memory_limit(plain/{d}) | does not fit: {str(e)[:80]}… | | | | |")
    try:
        plan = remat.auto_checkpoint(model, x, budget_bytes=plain["peak"] // 2)
        row("auto_checkpoint(plain/2)", measure(model, x, a.runs))
        plan.remove()
    except ValueError as e:
        print(f"| auto_checkpoint(plain/2) | does not fit: {str(e)[:80]}… | | | | |")
    t = torch_plain(a)
    if t is not None:
        print(f"\nPyTorch {t['version']} plain step: {t['time'] * 1e3:.1f} ms "
              f"({t['time'] / plain['time']:.2f}× remat's), peak {t['peak'] / 2**20:.2f} MiB "
              f"({t['peak'] / plain['peak']:.2f}× remat's)")


if __name__ == "__main__":
    main()
