"""Per-op overhead of remat from Python, on 16-element float32 tensors (and PyTorch's, side by
side, when it is installed).

    python benches/op_overhead.py [--repeats 7]

At 16 elements the arithmetic is negligible, so the time per call is the cost of crossing
from Python into the engine, validating, allocating the result and (with requires_grad)
recording the graph node. Each figure is the median over ``--repeats`` timeit repeats of
the per-call time in µs; remat and PyTorch repeats alternate.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import timeit

import numpy as np

import remat

from machine_info import cpu_model

OPS = [
    ("a + a", "a + a"),
    ("g * g (requires_grad)", "g * g"),
    ("a4 @ b4 (4x4 @ 4x4)", "a4 @ b4"),
    ("relu(a)", "relu(a)"),
]


def _env(m, tensor, relu) -> dict:
    """Operands of the ops above, built with library ``m``."""
    one = np.ones(16, dtype=np.float32)
    sq = np.arange(16, dtype=np.float32).reshape(4, 4)
    return {
        "a": tensor(one),
        "g": tensor(one, True),
        "a4": tensor(sq),
        "b4": tensor(sq.copy()),
        "relu": relu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="timeit repeats per op (default 7)")
    args = ap.parse_args()

    envs = {"remat": _env(remat, lambda x, rg=False: remat.tensor(x, requires_grad=rg), remat.relu)}
    versions = [
        f"Python {platform.python_version()}",
        f"NumPy {np.__version__}",
        f"remat {getattr(remat, '__version__', '')}".strip(),
    ]
    if importlib.util.find_spec("torch") is not None:
        import torch

        # Small ops run on the calling thread anyway; one thread keeps the two comparable.
        torch.set_num_threads(1)
        envs["torch"] = _env(
            torch, lambda x, rg=False: torch.tensor(x, requires_grad=rg), torch.relu
        )
        versions.append(f"PyTorch {torch.__version__}")
    else:
        versions.append("PyTorch not installed")

    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores")
    print("versions: " + ", ".join(versions))
    print(f"median of {args.repeats} timeit repeats, µs per call, 16-element float32\n")

    libs = list(envs)
    timers = {(lib, stmt): timeit.Timer(stmt, globals=envs[lib]) for lib in libs for _, stmt in OPS}
    numbers = {k: t.autorange()[0] for k, t in timers.items()}
    samples: dict = {k: [] for k in timers}
    for _ in range(args.repeats):
        for k, t in timers.items():
            samples[k].append(t.timeit(numbers[k]) / numbers[k] * 1e6)

    head = "| op | remat µs |" + (" PyTorch µs | remat/PyTorch |" if "torch" in libs else "")
    print(head)
    print("|---|---:|" + ("---:|---:|" if "torch" in libs else ""))
    for name, stmt in OPS:
        r = statistics.median(samples[("remat", stmt)])
        line = f"| `{name}` | {r:.2f} |"
        if "torch" in libs:
            t = statistics.median(samples[("torch", stmt)])
            line += f" {t:.2f} | {r / t:.2f} |"
        print(line)


if __name__ == "__main__":
    main()
