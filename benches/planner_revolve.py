"""The budget planner against Revolve (Griewank & Walther's binomial checkpointing, the fewest
recomputations for a uniform chain with a given number of checkpoint slots).

The chain: ``n`` alike layers ``h -> sin(h)`` on a (batch, width) float32 tensor; each saves
exactly its input, one activation `a` (Revolve's setting: a step's tape is its input). For
each ``n``, budgets from the smallest the planner accepts upwards:
``checkpoint_sequential(layers, None, x, budget_bytes=B)`` runs one forward + backward while
every layer call is counted; recomputations = calls − n (measured, not modelled), and the
peak above the step's start comes from the byte counters.

Revolve at the same memory: any schedule also holds, besides its checkpoint slots, the chain's
output (the caller's ``y``), the activation of the step being reversed and the backward's
gradient buffers. That overhead is measured, not assumed: the smallest budget the planner
accepts leaves room for no checkpoint slot (its schedule re-runs the chain from its input
for every step: ``n(n-1)/2`` recomputations, Revolve's ``F(n, 0)``), so its measured peak is
the overhead, and a peak ``P`` holds ``P - overhead`` slots (in activations). Revolve's
optimum ``F(n, s)`` (``revolve_table``) counts forward steps outside the reverse steps, the
first sweep included; the engine's measured recomputations are its layer calls beyond the
first forward (the plan is made before counting, so measuring the layers is not counted).
Revolve re-runs every step's forward once more to record it, where the engine keeps the
records of the layers it runs plainly, so the engine may need fewer. The ratio below is the
planner's measured recomputations over ``F(n, s)``.

    python benches/planner_revolve.py [--lengths 16 32 64 128 256 512 1024] [--extra 0 1 2 4 8]
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

import remat

sys.path.insert(0, str(Path(__file__).parent))
from machine_info import machine_line  # noqa: E402


def revolve_table(n_max: int, s_max: int) -> list[list[int]]:
    """``F[s][n]``: Revolve's optimum, the fewest forward steps (outside the reverse steps
    themselves) that reverse a chain of ``n`` steps from its stored input with ``s`` more
    checkpoint slots: ``F[s][n] = min over m of m + F[s-1][n-m] + F[s][m]`` (advance ``m``
    steps, store, reverse the rest with one slot fewer, then the first ``m``), ``F[0][n] =
    n(n-1)/2``, ``F[s][1] = 0``. Griewank & Walther's binomial schedules attain it."""
    F = [[k * (k - 1) // 2 for k in range(n_max + 1)]]
    for s in range(1, s_max + 1):
        row = [0, 0]
        prev = F[s - 1]
        for n in range(2, n_max + 1):
            row.append(min(m + prev[n - m] + row[m] for m in range(1, n)))
        F.append(row)
    return F


def run(n: int, width: int, batch: int, budget_a: float | None) -> dict:
    """One forward + backward of the chain under ``budget_bytes = budget_a`` activations
    (None: the smallest budget the planner accepts); recomputations counted, peak measured."""
    calls = [0]

    def layer(h):
        calls[0] += 1
        return h.sin()

    x = remat.randn(batch, width, requires_grad=True)
    a = x.numel() * 4
    layers = [layer] * n
    if budget_a is None:
        try:
            remat.sequential_plan(layers, None, x, budget_bytes=1)
        except ValueError as e:
            budget_a = int(str(e).split("budget_bytes=")[2].split()[0]) / a
    budget = round(budget_a * a)
    # Plan first (measuring runs every layer once), so only recomputations are counted.
    remat.sequential_plan(layers, None, x, budget_bytes=budget)
    calls[0] = 0
    gc.collect()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    y = remat.checkpoint_sequential(layers, None, x, budget_bytes=budget)
    y.sum().backward()
    peak = remat.max_memory_allocated() - base
    return {"recomputed": calls[0] - n, "peak_a": peak / a, "budget_a": budget_a,
            "fits": peak <= budget}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512, 1024])
    ap.add_argument("--extra", type=float, nargs="+", default=[0, 1, 2, 4, 8],
                    help="budgets: the planner's least, plus these many activations")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    F = revolve_table(max(args.lengths), 64)
    print(f"# planner vs Revolve: {machine_line()}; layers sin on "
          f"({args.batch}, {args.width}) float32; a = one activation\n")
    print("| n | budget (a) | measured peak (a) | within budget | planner recomputes | "
          "Revolve slots at that peak (peak - overhead) | Revolve recomputes | planner / Revolve |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    worst = 0.0
    for n in args.lengths:
        floor = run(n, args.width, args.batch, None)
        least, overhead = floor["budget_a"], floor["peak_a"]
        for extra in args.extra:
            r = run(n, args.width, args.batch, least + extra)
            slots = min(max(round(r["peak_a"] - overhead), 0), 64)
            rev = F[slots][n]
            ratio = r["recomputed"] / rev if rev else (1.0 if r["recomputed"] == 0 else
                                                        float("inf"))
            worst = max(worst, ratio)
            print(f"| {n} | {r['budget_a']:.2f} | {r['peak_a']:.2f} | "
                  f"{'yes' if r['fits'] else 'NO'} | {r['recomputed']} | {slots} | {rev} | "
                  f"{ratio:.3f} |", flush=True)
    print(f"\nworst planner / Revolve: {worst:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
