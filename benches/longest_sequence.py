"""The longest sequence one GPT block trains on in this machine's memory, remat against
PyTorch: the peak of a training step (forward + backward) of ``benches/gpt_block.py``'s block
at batch 1 for growing T, and the T at which each library's peak reaches the machine's
memory, from the line through the two longest measured (attention keeps O(T) in both, so
the peak grows linearly; the T² weights a math path keeps would set the limit instead).
remat's peak comes from its byte counters, PyTorch's from its profiler's allocations and
frees in time order (``strategies_torch.peak_bytes``); both above the step's start, with the
parameters' gradients allocated before.

    python benches/longest_sequence.py [--dim 256 --heads 4] [--lengths 1024,2048,4096,8192]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import remat
from remat import nn

sys.path.insert(0, str(Path(__file__).parent))
from gpt_block import block_class  # noqa: E402
from machine_info import cpu_flags, cpu_model  # noqa: E402


def memory_bytes() -> int:
    """The machine's memory (MemTotal)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def remat_peak(dim: int, heads: int, t: int) -> tuple[int, float]:
    remat.manual_seed(0)
    block = block_class(nn)(dim, heads)
    x = remat.randn(1, t, dim, requires_grad=True)
    for p in block.parameters():
        p.grad = remat.zeros_like(p)
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    t0 = time.perf_counter()
    block(x).mean().backward()
    return remat.max_memory_allocated() - base, time.perf_counter() - t0


def torch_peak(dim: int, heads: int, t: int) -> tuple[int, float]:
    import torch
    from strategies_torch import peak_bytes

    torch.manual_seed(0)
    block = block_class(torch.nn)(dim, heads)
    x = torch.randn(1, t, dim, requires_grad=True)
    for p in block.parameters():
        p.grad = torch.zeros_like(p)
    t0 = time.perf_counter()
    peak = peak_bytes(lambda: block(x).mean().backward())
    return peak, time.perf_counter() - t0


def longest(points: list[tuple[int, int]], memory: int) -> int:
    """The T where the line through the two longest (T, peak) points reaches ``memory``."""
    (t1, p1), (t2, p2) = points[-2], points[-1]
    slope = (p2 - p1) / (t2 - t1)
    return int(t2 + (memory - p2) / slope)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lengths", default="1024,2048,4096,8192")
    a = ap.parse_args()
    lengths = [int(t) for t in a.lengths.split(",")]
    memory = memory_bytes()
    have_torch = importlib.util.find_spec("torch") is not None
    if have_torch:
        import torch

        torch.set_num_threads(remat.get_num_threads())
    print(f"machine: {cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, "
          f"{memory / 2**30:.1f} GiB; {remat.get_num_threads()} threads; float32; one Block("
          f"dim {a.dim}, {a.heads} heads), batch 1, causal; peak of one forward+backward "
          "above its start")
    print("\n| T | remat peak MiB | remat s | PyTorch peak MiB | PyTorch s |")
    print("|---:|---:|---:|---:|---:|")
    ours, theirs = [], []
    for t in lengths:
        p, s = remat_peak(a.dim, a.heads, t)
        ours.append((t, p))
        cells = "– | –"
        if have_torch:
            tp, ts = torch_peak(a.dim, a.heads, t)
            theirs.append((t, tp))
            cells = f"{tp / 2**20:.1f} | {ts:.2f}"
        print(f"| {t} | {p / 2**20:.1f} | {s:.2f} | {cells} |", flush=True)
    print(f"\nlongest T whose step fits {memory / 2**30:.1f} GiB (the line through T = "
          f"{lengths[-2]} and {lengths[-1]}): remat {longest(ours, memory):,}"
          + (f", PyTorch {longest(theirs, memory):,}" if theirs else ""))


if __name__ == "__main__":
    main()
