"""A few training steps of the gpu_compare MLP in one library, for a kernel profiler; and the
summary of such a profile.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file remat.csv \\
        python benches/gpu_profile.py run --lib remat [--mode plain] [--depth 8]
    python benches/gpu_profile.py summary remat.csv torch.csv [--steps 3] [--top 12]

``run`` builds ``depth`` x (Linear(width) + ReLU) (the weights of benches/gpu_compare.py) and
runs ``--steps`` steps (forward, mean(y²), backward, SGD) of ``--mode`` plain / ckpt /
offload after one warm-up step. ``summary`` reads Nsight Compute CSV logs (one row per kernel
launch and metric) and prints, per log, the kernels with the largest total device time, each
as milliseconds per step (the total over the ``--steps`` + 1 steps run, divided by that), its
launches per step and its share; then the libraries side by side by kernel family (GEMM,
elementwise, reduction, copy, other).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}


def run(a: argparse.Namespace) -> None:
    from gpu_compare import LR, _input, _make_lib

    lib = _make_lib(a.lib, "cuda")
    model = lib.build(a.width, a.depth)
    x = lib.tensor(_input(a.batch, a.width))
    params = list(model.parameters())
    opt = lib.m.optim.SGD(params, lr=LR)
    notes: list = []
    forward = lib.forward_fn(a.mode, model, a.segments, x, notes)
    for p in params:
        p.grad = lib.zeros_like(p)
    for _ in range(a.steps + 1):
        opt.zero_grad(set_to_none=False)
        loss = (forward() ** 2).mean()
        loss.backward()
        opt.step()
    lib.sync()
    print(f"{a.lib} {a.mode}: {a.steps + 1} steps, loss {float(loss.item()):.6g}")


def family(name: str) -> str:
    n = name.lower()
    if re.search(r"gemm|sgemm|dgemm|cutlass|xmma|nvjet|matmul|gemv", n):
        return "GEMM"
    if re.search(r"reduce|sum_chunks|reduction", n):
        return "reduction"
    if re.search(r"copy|strided|cast|fill|memset|memcpy", n):
        return "copy/fill/cast"
    if re.search(r"elementwise|unary|binary|vectorized|relu|threshold|mul|add|axpy|sgd", n):
        return "elementwise"
    return "other"


def read(path: str) -> dict[str, list[float]]:
    """Kernel name -> durations in ms, from an ncu CSV log (text before the header skipped)."""
    lines = Path(path).read_text(errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    out: dict[str, list[float]] = defaultdict(list)
    if start is None:
        return out
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        out[row["Kernel Name"]].append(value * UNITS.get(row.get("Metric Unit", ""), 1e-6))
    return out


def summary(a: argparse.Namespace) -> None:
    steps = a.steps + 1
    families = {}
    for path in a.logs:
        k = read(path)
        total = sum(sum(v) for v in k.values())
        print(f"\n{path}: {sum(len(v) for v in k.values())} launches, "
              f"{total / steps:.2f} ms of kernel time per step")
        print("| kernel | ms/step | launches/step | share |\n|---|---:|---:|---:|")
        for name, v in sorted(k.items(), key=lambda kv: -sum(kv[1]))[: a.top]:
            short = name if len(name) < 90 else name[:87] + "..."
            print(f"| `{short}` | {sum(v) / steps:.3f} | {len(v) / steps:.1f} | "
                  f"{sum(v) / max(total, 1e-12):.1%} |")
        fam: dict[str, float] = defaultdict(float)
        for name, v in k.items():
            fam[family(name)] += sum(v) / steps
        families[path] = fam
    names = sorted({f for fam in families.values() for f in fam})
    print("\n| family | " + " | ".join(f"{p} ms/step" for p in families) + " |")
    print("|---|" + "---:|" * len(families))
    for f in names:
        print(f"| {f} | " + " | ".join(f"{fam.get(f, 0.0):.2f}" for fam in families.values())
              + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--lib", choices=("remat", "torch"), required=True)
    r.add_argument("--mode", choices=("plain", "ckpt", "offload"), default="plain")
    r.add_argument("--width", type=int, default=4096)
    r.add_argument("--depth", type=int, default=8)
    r.add_argument("--batch", type=int, default=4096)
    r.add_argument("--segments", type=int, default=4)
    r.add_argument("--steps", type=int, default=2)
    s = sub.add_parser("summary")
    s.add_argument("logs", nargs="+")
    s.add_argument("--steps", type=int, default=2)
    s.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    run(a) if a.cmd == "run" else summary(a)


if __name__ == "__main__":
    main()
