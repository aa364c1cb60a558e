"""One rank of the data-parallel tests, launched by ``mpirun -np 2`` (``_launch.py``).

Each case trains a small MLP for five SGD steps twice in every rank: once alone on the whole
batch (the reference, no communication), once under ``DistributedDataParallel`` on this
rank's half of the batch with a checkpoint entry point in the forward. It prints one JSON
line per case: the largest difference between the two models' parameters, the number of
collectives the second run issued inside the recompute (always 0), and whether the ranks
ended with the same parameters.

    mpirun -np 2 python ddp_worker.py MODE [MODE ...]
"""

from __future__ import annotations

import json
import sys

import numpy as np

import remat
import remat.distributed as dist
import remat.nn.functional as F
from remat import checkpoint_policies as cp
from remat import nn
from remat.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH, LR = 5, 128, 0.1


class Net(nn.Module):
    """Six blocks and a head; ``mode`` picks how the forward checkpoints them."""

    # Every checkpoint entry point; each must recompute something in the DDP run.
    MODES = ("plain", "checkpoint", "checkpoint_tensor", "policy", "group",
             "checkpoint_sequential", "offload", "budget", "module_flag", "scope",
             "memory_limit", "auto_checkpoint", "autocast_bf16")

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.blocks = nn.Sequential(
            nn.Sequential(nn.Linear(6, 32), nn.Tanh()),
            *(nn.Sequential(nn.Linear(32, 32), nn.GELU() if i % 2 else nn.Tanh())
              for i in range(5)),
        )
        self.head = nn.Linear(32, 3)
        if mode == "module_flag":
            for b in self.blocks:
                b.activation_checkpointing = True

    def body(self, x):
        m, blocks = self.mode, list(self.blocks)
        if m in ("plain", "module_flag", "scope", "memory_limit", "auto_checkpoint"):
            return self.blocks(x)
        if m in ("checkpoint", "autocast_bf16"):
            for b in blocks:
                x = remat.checkpoint(b, x)
            return x
        if m == "checkpoint_tensor":
            for b in blocks:
                x = remat.checkpoint(b(x))
            return x
        if m == "policy":
            for b in blocks:
                x = remat.checkpoint(b, x, policy=cp.dots_saveable)
            return x
        if m == "group":
            for b in blocks:
                (x,) = remat.CheckpointGroup().checkpoint_fn(b, x)
            return x
        if m == "checkpoint_sequential":
            return remat.checkpoint_sequential(self.blocks, 2, x)
        if m == "offload":
            return remat.checkpoint_sequential(self.blocks, 2, x, offload=True)
        if m == "budget":
            # Between the planner's least budget and the plain run's, for either batch.
            return remat.checkpoint_sequential(self.blocks, None, x,
                                               budget_bytes=900 * x.shape[0])
        raise ValueError(m)

    def forward(self, x):
        if self.mode == "scope":
            with remat.checkpoint_scope():
                return self.head(self.body(x))
        return self.head(self.body(x))


def data(step: int):
    rng = np.random.default_rng(100 + step)
    x = rng.standard_normal((BATCH, 6)).astype(np.float32)
    y = rng.standard_normal((BATCH, 3)).astype(np.float32)
    return remat.from_numpy(x), remat.from_numpy(y)


def step(model, x, y, mode):
    if mode == "memory_limit":
        # About 85% of the plain step's peak, for either batch.
        with remat.memory_limit(remat.memory_allocated() + 1100 * x.shape[0]):
            loss = F.mse_loss(model(x), y)
            loss.backward()
    elif mode == "autocast_bf16":
        with remat.autocast("cpu", dtype=remat.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        loss.backward()
    else:
        F.mse_loss(model(x), y).backward()
    with remat.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * LR)
            p.grad = None


def params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def run(mode: str) -> dict:
    rank, world = dist.get_rank(), dist.get_world_size()
    remat.manual_seed(0)
    ref = Net(mode)
    remat.manual_seed(1 + rank)  # a different start on each rank: DDP broadcasts rank 0's
    local = Net(mode)
    if rank == 0:
        local.load_state_dict(ref.state_dict())
    if mode == "auto_checkpoint":
        # Each model planned for the batch it trains on, at about 60% of its plain peak, so
        # that whichever plan wins (the choice is timed) really recomputes.
        x0, _ = data(0)
        per = BATCH // world
        remat.auto_checkpoint(ref, x0, budget_bytes=780 * BATCH)
        remat.auto_checkpoint(local, x0[:per], budget_bytes=780 * per)
    ddp = DDP(local, bucket_cap_mb=0.0005)  # ~512 bytes: several buckets
    per = BATCH // world
    rebuilds = remat.memory_stats()["rematerializations"]
    recomputes = 0
    for s in range(STEPS):
        x, y = data(s)
        step(ref, x, y, mode)
        with remat.CheckpointProfiler() as prof:
            step(ddp, x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per], mode)
        recomputes += prof.recompute_count()
    recomputes += remat.memory_stats()["rematerializations"] - rebuilds
    a, b = params(ref), params(ddp.module)
    diff = max(float(np.abs(u - v).max()) for u, v in zip(a, b))
    flat = remat.from_numpy(np.concatenate([v.ravel() for v in b]))
    gathered = [remat.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    same = all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered)
    return {"mode": mode, "max_diff": diff, "ranks_equal": same,
            "buckets": ddp.last_sync_stats["buckets"], "recomputes": recomputes}


def no_sync() -> dict:
    """Two micro-batches accumulated under no_sync, the third synchronised: the average over
    the ranks of the summed gradients of all three, as one process summing all three."""
    rank, world = dist.get_rank(), dist.get_world_size()
    remat.manual_seed(0)
    ref = Net("checkpoint")
    local = Net("checkpoint")
    local.load_state_dict(ref.state_dict())
    ddp = DDP(local)
    per = BATCH // world
    for s in range(3):
        x, y = data(s)
        F.mse_loss(ref(x), y).backward()
        xs, ys = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        if s < 2:
            with ddp.no_sync():
                F.mse_loss(ddp(xs), ys).backward()
            synced_early = ddp.last_sync_stats["bytes"]
        else:
            F.mse_loss(ddp(xs), ys).backward()
    diff = max(float(np.abs(p.grad.numpy() - q.grad.numpy()).max())
               for p, q in zip(ref.parameters(), local.parameters()))
    return {"mode": "no_sync", "max_diff": diff, "bytes_before_sync": synced_early,
            "bytes_synced": ddp.last_sync_stats["bytes"]}


class Branchy(nn.Module):
    """``b`` is used on rank 0 only, ``never`` on no rank."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.never = nn.Linear(4, 4)

    def forward(self, x, use_b):
        h = self.a(x)
        return self.b(h) if use_b else h


def unused() -> dict:
    rank = dist.get_rank()
    remat.manual_seed(0)
    model = Branchy()
    ddp = DDP(model, find_unused_parameters=True)
    x = remat.ones(2, 4) * (rank + 1)
    remat.checkpoint(ddp, x, rank == 0).sum().backward()
    grads = {n: (None if p.grad is None else p.grad.tolist())
             for n, p in model.named_parameters()}
    # Without find_unused_parameters, a parameter without a gradient stops the next forward.
    strict = DDP(Branchy())
    strict(x, False).sum().backward()
    try:
        strict(x, False)
        err = None
    except RuntimeError as e:
        err = str(e)
    # A second backward of one forward marks a parameter ready twice.
    twice = DDP(nn.Linear(4, 4))
    out = twice(x)
    out.sum().backward(retain_graph=True)
    try:
        out.sum().backward()
        err2 = None
    except RuntimeError as e:
        err2 = str(e)
    return {"mode": "unused", "rank": rank, "grads": grads, "strict_error": err,
            "twice_error": err2}


def buffers() -> dict:
    """BatchNorm's running statistics come from rank 0 at the start of every forward (each
    rank's training forward then updates its own, as in PyTorch)."""
    rank = dist.get_rank()
    remat.manual_seed(rank)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    ddp = DDP(model)
    start = [b.tolist() for b in model.buffers()]
    ddp(remat.randn(8, 3) + rank * 10).sum().backward()
    ddp.eval()
    ddp(remat.randn(8, 3))  # broadcasts rank 0's statistics first (eval mode keeps them)
    flat = remat.cat([b.float().reshape(-1) for b in model.buffers()])
    got = [remat.zeros_like(flat) for _ in range(2)]
    dist.all_gather(got, flat)
    return {"mode": "buffers", "start": start, "equal": got[0].tolist() == got[1].tolist()}


SPECIAL = {"no_sync": no_sync, "unused": unused, "buffers": buffers}


def main() -> None:
    dist.init_process_group("mpi", timeout=60)
    for mode in sys.argv[1:] or Net.MODES:
        try:
            out = SPECIAL[mode]() if mode in SPECIAL else run(mode)
        except Exception as e:  # reported, so that the other cases still run
            out = {"mode": mode, "error": f"{type(e).__name__}: {e}"}
        if dist.get_rank() == 0 or "rank" in out:
            print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
