"""Per-op overhead of remat from Python, on 16-element float32 tensors (and PyTorch's, side by
side, when it is installed).

    python benches/op_overhead.py [--repeats 7] [--device cpu|cuda]

At 16 elements the arithmetic is negligible, so the time per call is the cost of crossing
from Python into the engine, validating, allocating the result and (with requires_grad)
recording the graph node. Each figure is the median over ``--repeats`` timeit repeats of
the per-call time in µs; remat and PyTorch repeats alternate. With ``--device cuda`` the
operands live on the GPU and each timed batch of calls ends with a device synchronisation
(counted), so the figure is the launch cost per op: the rate at which the library can issue
small kernels, which is what bounds a model of many small ops.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import timeit

import numpy as np

import remat

from machine_info import machine_line, remat_isa

OPS = [
    ("a + a", "a + a"),
    ("g * g (requires_grad)", "g * g"),
    ("a4 @ b4 (4x4 @ 4x4)", "a4 @ b4"),
    ("relu(a)", "relu(a)"),
]


def _env(m, tensor, relu, sync) -> dict:
    """Operands of the ops above, built with library ``m``, and the loops that time them."""
    one = np.ones(16, dtype=np.float32)
    sq = np.arange(16, dtype=np.float32).reshape(4, 4)
    return {
        "a": tensor(one),
        "g": tensor(one, True),
        "a4": tensor(sq),
        "b4": tensor(sq.copy()),
        "relu": relu,
        "_sync": sync,
    }


def _loop(env: dict, stmt: str):
    """``loop(n)``: run ``stmt`` n times in ``env``, then synchronise the device."""
    exec(f"def _loop(n):\n    for _ in range(n):\n        {stmt}\n    _sync()\n", env)
    return env["_loop"]


def _per_call_us(loop, n: int) -> float:
    t0 = timeit.default_timer()
    loop(n)
    return (timeit.default_timer() - t0) / n * 1e6


def _calibrate(loop) -> int:
    """Calls per timed batch: enough for about 0.2 s."""
    n = 1
    while True:
        t0 = timeit.default_timer()
        loop(n)
        if timeit.default_timer() - t0 >= 0.2 or n >= 1 << 22:
            return n
        n *= 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="timeit repeats per op (default 7)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    args = ap.parse_args()
    dev = args.device
    if dev.startswith("cuda") and not remat.cuda.is_available():
        print("skipped: remat sees no usable GPU")
        return

    envs = {
        "remat": _env(
            remat,
            lambda x, rg=False: remat.tensor(x, device=dev, requires_grad=rg),
            remat.relu,
            remat.cuda.synchronize if dev.startswith("cuda") else (lambda: None),
        )
    }
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
            torch,
            lambda x, rg=False: torch.tensor(x, device=dev, requires_grad=rg),
            torch.relu,
            torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None),
        )
        versions.append(f"PyTorch {torch.__version__}")
    else:
        versions.append("PyTorch not installed")

    print(f"machine: {machine_line()}; {remat_isa()}")
    print("versions: " + ", ".join(versions))
    print(f"device: {dev}")
    print(f"median of {args.repeats} timed batches, µs per call, 16-element float32\n")

    libs = list(envs)
    loops = {(lib, stmt): _loop(envs[lib], stmt) for lib in libs for _, stmt in OPS}
    numbers = {k: _calibrate(loop) for k, loop in loops.items()}
    samples: dict = {k: [] for k in loops}
    for _ in range(args.repeats):
        for k, loop in loops.items():
            samples[k].append(_per_call_us(loop, numbers[k]))

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
