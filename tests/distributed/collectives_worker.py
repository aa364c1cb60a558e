"""One rank of the collective and fault tests, launched by ``mpirun -np 2`` (``_launch.py``).

``python collectives_worker.py CASE`` runs one case and prints ``RESULT <json>`` lines (from
every rank, each naming its rank). The fault cases end the job on purpose: a rank raises, or
dies, while the other waits in a collective.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import remat
import remat.distributed as dist

CASE = sys.argv[1]
TIMEOUT = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0


def report(**kw) -> None:
    print("RESULT " + json.dumps({"rank": dist.get_rank(), **kw}), flush=True)


def error_of(fn) -> str | None:
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def ops() -> None:
    r, n = dist.get_rank(), dist.get_world_size()
    out = {}
    t = remat.tensor([1.0, 2.0]) * (r + 1)
    dist.all_reduce(t)
    out["sum"] = t.tolist()
    for op in ("AVG", "MAX", "MIN", "PRODUCT"):
        t = remat.tensor([1.0, -2.0]) * (r + 2)
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        out[op.lower()] = t.tolist()
    i = remat.tensor([r + 1, 10], dtype=remat.int64)
    dist.all_reduce(i)
    out["int64"] = i.tolist()
    flags = remat.tensor([r == 0, False])
    dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    out["bool_max"] = flags.tolist()
    h = (remat.ones(3) * (r + 0.5)).bfloat16()
    w = dist.all_reduce(h, async_op=True)
    w.wait()
    out["bf16"] = [h.float().tolist(), str(h.dtype)]
    out["work_done"] = w.is_completed() and w.is_success()
    b = remat.full((2, 2), float(r))
    dist.broadcast(b, src=1)
    out["broadcast"] = b.tolist()
    lst = [remat.zeros(2) for _ in range(n)]
    dist.all_gather(lst, remat.full((2,), 10.0 * r))
    out["all_gather"] = [x.tolist() for x in lst]
    cat = remat.zeros(2 * n, 3)
    dist.all_gather_into_tensor(cat, remat.full((2, 3), float(r)))
    out["all_gather_into_tensor"] = cat[:, 0].tolist()
    rs = remat.zeros(2)
    dist.reduce_scatter_tensor(rs, remat.arange(2.0 * n) + r)
    out["reduce_scatter"] = rs.tolist()
    dist.barrier()
    # A version bump: autograd sees that a collective overwrote a tensor.
    v = remat.ones(2)
    before = v._version
    dist.all_reduce(v)
    out["version_bumped"] = v._version > before
    # A group of rank 1 only, and one of both ranks.
    solo = dist.new_group([1])
    both = dist.new_group([0, 1])
    s = remat.ones(1) * (r + 5)
    res = dist.all_reduce(s, group=solo)
    out["solo"] = [s.tolist(), res is None, dist.get_rank(solo), dist.get_world_size(solo)]
    s2 = remat.ones(1) * (r + 1)
    dist.all_reduce(s2, group=both)
    out["both"] = s2.tolist()
    bb = remat.full((1,), float(r))
    dist.broadcast(bb, src=1, group=both)
    out["group_broadcast"] = bb.tolist()
    out["backend"] = dist.get_backend()
    report(**out)


def mismatch() -> None:
    r = dist.get_rank()
    out = {
        "shape": error_of(lambda: dist.all_reduce(remat.ones(3 + r))),
        "dtype": error_of(lambda: dist.all_reduce(
            remat.ones(2, dtype=remat.float64 if r else remat.float32))),
        "collective": error_of(lambda: dist.barrier() if r else dist.all_reduce(remat.ones(2))),
        "root": error_of(lambda: dist.broadcast(remat.ones(2), src=r)),
        "gather_list": error_of(lambda: dist.all_gather([remat.ones(2)], remat.ones(2))),
    }
    t = remat.ones(2)
    dist.all_reduce(t)  # the group still works after every error
    out["after"] = t.tolist()
    report(**out)


def timeout() -> None:
    r = dist.get_rank()
    if r == 0:
        start = time.monotonic()
        try:
            dist.all_reduce(remat.ones(2))
            err, backend_error = None, False
        except Exception as e:
            err, backend_error = f"{type(e).__name__}: {e}", isinstance(e, dist.DistBackendError)
        waited = time.monotonic() - start
        again = error_of(lambda: dist.all_reduce(remat.ones(2)))
        report(error=err, backend_error=backend_error, waited=waited, again=again)
    else:
        time.sleep(3 * TIMEOUT)
        report(slept=True)


def raising() -> None:
    r = dist.get_rank()
    t = remat.ones(2)
    dist.all_reduce(t)
    if r == 1:
        raise ValueError("a bug in rank 1's training step")
    dist.all_reduce(t)  # waits for rank 1, which never comes
    report(reached="after the second all_reduce")


def dying() -> None:
    r = dist.get_rank()
    t = remat.ones(2)
    dist.all_reduce(t)
    if r == 1:
        os._exit(3)
    dist.all_reduce(t)
    report(reached="after the second all_reduce")


def checkpointed() -> None:
    """A collective inside checkpointed code (tensor parallelism's all-reduce of a partial
    product): the recompute must not talk to the other rank again, and the gradients must be
    the plain run's."""
    r = dist.get_rank()
    calls = {"n": 0}
    submit = dist.ProcessGroup.submit

    def counting(self, *a, **k):
        calls["n"] += 1
        return submit(self, *a, **k)

    dist.ProcessGroup.submit = counting

    def block(x, w):
        h = x @ w
        dist.all_reduce(h)  # in place, outside autograd (as torch.distributed's)
        return (h.tanh() * h).sum(dim=1)

    def run(entry):
        remat.manual_seed(3)
        w = remat.randn(4, 4) * (r + 1)
        w.requires_grad_(True)
        x = remat.randn(2, 4)
        calls["n"] = 0
        if entry == "plain":
            y = block(x, w)
        elif entry == "checkpoint":
            y = remat.checkpoint(block, x, w)
        elif entry == "nested":
            y = remat.checkpoint(lambda a, b: remat.checkpoint(block, a, b) * 2, x, w) / 2
        elif entry == "scope":
            with remat.checkpoint_scope():
                y = block(x, w)
        else:
            raise ValueError(entry)
        forward_calls = calls["n"]
        y.sum().backward()
        return w.grad.numpy().copy(), forward_calls, calls["n"] - forward_calls

    ref, ref_calls, _ = run("plain")
    out = {}
    for entry in ("checkpoint", "nested", "scope"):
        g, fwd, bwd = run(entry)
        out[entry] = {"equal": bool(np.array_equal(g, ref)), "forward_calls": fwd,
                      "backward_calls": bwd, "plain_calls": ref_calls}
    dist.ProcessGroup.submit = submit
    report(**out)


def main() -> None:
    dist.init_process_group("mpi", timeout=TIMEOUT)
    {"ops": ops, "mismatch": mismatch, "timeout": timeout, "raising": raising,
     "dying": dying, "checkpointed": checkpointed}[CASE]()
    if CASE != "timeout":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
