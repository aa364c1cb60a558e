"""One rank of the ZeroRedundancyOptimizer tests, launched by ``mpirun -np 2`` (``_launch.py``).

Each case trains a small MLP twice in every rank: with a plain optimizer over all its
parameters (the reference, no communication) and with ``ZeroRedundancyOptimizer`` wrapping
the same optimizer class, fed the same whole-batch gradients (or, in ``ddp``, half batches
through ``DistributedDataParallel``). Every rank prints one JSON line per case: the largest
difference between the two models' parameters, whether the ranks ended equal, the optimizer
state bytes each rank holds, and the case's own checks.

    mpirun -np 2 python zero_worker.py CASE [CASE ...]
"""

from __future__ import annotations

import json
import sys

import numpy as np

import remat
import remat.distributed as dist
import remat.nn.functional as F
from remat import nn
from remat.distributed.optim import ZeroRedundancyOptimizer
from remat.nn.parallel import DistributedDataParallel as DDP
from remat.optim.lr_scheduler import ExponentialLR

BATCH, LR = 64, 0.01
CASES = ("adam", "bucket_view", "bucket_mixed", "ddp", "sgd", "groups", "state_dict", "round_trip",
         "subgroup", "errors")


def make_model() -> nn.Module:
    # Parameters of 192, 32, 1024, 32, 1024, 32, 96 and 3 elements: the greedy partition
    # splits them 1219 / 1216 over two ranks.
    remat.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))


def copy_of(model: nn.Module) -> nn.Module:
    m = make_model()
    m.load_state_dict(model.state_dict())
    return m


def data(step: int):
    rng = np.random.default_rng(100 + step)
    x = rng.standard_normal((BATCH, 6)).astype(np.float32)
    y = rng.standard_normal((BATCH, 3)).astype(np.float32)
    return remat.from_numpy(x), remat.from_numpy(y)


def train(model, opt, steps: int, start: int = 0, sched=None, half: bool = False) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    for s in range(start, start + steps):
        x, y = data(s)
        if half:
            per = BATCH // world
            x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        for p in model.parameters():
            p.grad = None
        F.mse_loss(model(x), y).backward()
        opt.step()
        if sched is not None:
            sched.step()


def params(model) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.parameters()]


def max_diff(a, b) -> float:
    return max(float(np.abs(u - v).max()) for u, v in zip(params(a), params(b)))


def ranks_equal(model) -> bool:
    flat = remat.from_numpy(np.concatenate([v.ravel() for v in params(model)]))
    gathered = [remat.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    return all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered)


def gather_int(value: int) -> list[int]:
    t = remat.tensor([value], dtype=remat.int64)
    out = [remat.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [int(o.item()) for o in out]


def state_bytes(opt) -> int:
    """Bytes of the tensors in a plain optimizer's state."""
    return sum(v.numel() * v.element_size() for p in opt.state for v in opt.state[p].values()
               if isinstance(v, remat.Tensor))


def greedy(numels: list[int], world: int) -> list[int]:
    """The owner of each parameter: largest first, to the rank with the least so far."""
    owner, sizes = [0] * len(numels), [0] * world
    for i in sorted(range(len(numels)), key=lambda i: -numels[i]):
        r = sizes.index(min(sizes))
        owner[i] = r
        sizes[r] += numels[i]
    return owner


def shard_report(zero, plain, model) -> dict:
    """This rank's state bytes against its shard of the greedy partition."""
    ps = list(model.parameters())
    owner = greedy([p.numel() for p in ps], dist.get_world_size())
    mine = [i for i, r in enumerate(owner) if r == dist.get_rank()]
    owned = sorted(i for g in zero.optim.param_groups for p in g["params"]
                   for i, q in enumerate(ps) if q is p)
    expected = sum(2 * ps[i].numel() * ps[i].element_size() for i in mine)
    return {"owned": owned, "expected_owned": mine, "local_bytes": zero.local_state_bytes(),
            "expected_bytes": expected, "all_local_bytes": gather_int(zero.local_state_bytes()),
            "plain_bytes": state_bytes(plain)}


def compare_state_dicts(ours: dict, theirs: dict) -> dict:
    """Whether two optimizer state dicts hold the same keys, groups and (allclose) tensors."""
    same_keys = list(ours["state"]) == list(theirs["state"]) and all(
        sorted(ours["state"][i]) == sorted(theirs["state"][i]) for i in theirs["state"])
    worst = 0.0
    kinds_match = True
    if same_keys:
        for i, st in theirs["state"].items():
            for k, v in st.items():
                o = ours["state"][i][k]
                if isinstance(v, remat.Tensor):
                    kinds_match &= isinstance(o, remat.Tensor) and tuple(o.shape) == tuple(
                        v.shape) and o.dtype == v.dtype
                    if kinds_match:
                        worst = max(worst, float(np.abs(o.numpy() - v.numpy()).max())
                                    if v.numel() else 0.0)
                else:
                    kinds_match &= o == v
    return {"same_keys": same_keys, "tensor_kinds_match": bool(kinds_match),
            "state_max_diff": worst, "groups_equal": ours["param_groups"] == theirs["param_groups"]}


# -- the cases --------------------------------------------------------------------------------

def case_adam(bucket_view: bool = False) -> dict:
    ref, zm = make_model(), make_model()
    plain = remat.optim.Adam(ref.parameters(), lr=LR)
    zero = ZeroRedundancyOptimizer(zm.parameters(), remat.optim.Adam,
                                   parameters_as_bucket_view=bucket_view, lr=LR)
    # A scheduler sets the lr of zero.param_groups: it must reach the local optimizer.
    train(ref, plain, 5, sched=ExponentialLR(plain, gamma=0.7))
    train(zm, zero, 5, sched=ExponentialLR(zero, gamma=0.7))
    return {"max_diff": max_diff(ref, zm), "ranks_equal": ranks_equal(zm),
            "lr": zero.param_groups[0]["lr"], "plain_lr": plain.param_groups[0]["lr"],
            "local_lr": zero.optim.param_groups[0]["lr"],
            "n_groups": len(zero.param_groups),
            "n_params": len(zero.param_groups[0]["params"]),
            **shard_report(zero, plain, zm)}


def case_bucket_mixed() -> dict:
    """Bucket views over parameters of two dtypes (one flat buffer per dtype and rank)."""
    out = {}
    models, opts, extras = [], [], []
    for zero in (False, True):
        model = make_model()
        extra = remat.tensor(np.linspace(-1.0, 1.0, 700), dtype=remat.float64,
                             requires_grad=True)
        ps = [*model.parameters(), extra]
        opts.append(ZeroRedundancyOptimizer(ps, remat.optim.Adam, lr=LR,
                                            parameters_as_bucket_view=True)
                    if zero else remat.optim.Adam(ps, lr=LR))
        models.append(model)
        extras.append(extra)
    for s in range(5):
        x, y = data(s)
        for model, opt, extra in zip(models, opts, extras):
            opt.zero_grad()
            (F.mse_loss(model(x), y) + (extra * extra).sum().float() * 1e-3).backward()
            opt.step()
    ref, zm = models
    out.update(max_diff=max_diff(ref, zm), ranks_equal=ranks_equal(zm),
               extra_diff=float(np.abs(extras[0].detach().numpy()
                                       - extras[1].detach().numpy()).max()),
               extra_owner=[r for r, groups in enumerate(opts[1]._partition_parameters())
                            if any(p is extras[1] for g in groups for p in g["params"])],
               extra_dtype=str(extras[1].dtype),
               all_local_bytes=gather_int(opts[1].local_state_bytes()),
               plain_bytes=state_bytes(opts[0]))
    return out


def case_ddp() -> dict:
    ref, zm = make_model(), make_model()
    plain = remat.optim.Adam(ref.parameters(), lr=LR)
    model = DDP(zm)
    zero = ZeroRedundancyOptimizer(model.parameters(), remat.optim.Adam, lr=LR)
    train(ref, plain, 5)
    train(model, zero, 5, half=True)
    return {"max_diff": max_diff(ref, zm), "ranks_equal": ranks_equal(zm),
            **shard_report(zero, plain, zm)}


def case_sgd() -> dict:
    ref, zm = make_model(), make_model()
    plain = remat.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    zero = ZeroRedundancyOptimizer(zm.parameters(), remat.optim.SGD, lr=0.05, momentum=0.9,
                                   nesterov=True)
    train(ref, plain, 5)
    train(zm, zero, 5)
    local = sum(v.numel() * v.element_size() for p in zero.optim.state
                for v in zero.optim.state[p].values() if isinstance(v, remat.Tensor))
    return {"max_diff": max_diff(ref, zm), "ranks_equal": ranks_equal(zm),
            "local_bytes": zero.local_state_bytes(), "counted_bytes": local,
            "all_local_bytes": gather_int(zero.local_state_bytes()),
            "plain_bytes": state_bytes(plain)}


def named_groups(model):
    named = list(model.named_parameters())
    weights = [(n, p) for n, p in named if n.endswith("weight")]
    biases = [(n, p) for n, p in named if n.endswith("bias")]
    return weights, biases


def case_groups() -> dict:
    """Named parameters in two groups with their own lr, the second added after two steps."""
    ref, zm = make_model(), make_model()
    out = {}
    opts = []
    for model, zero in ((ref, False), (zm, True)):
        weights, _ = named_groups(model)
        first = [{"params": weights, "lr": 0.02}]
        if zero:
            opts.append(ZeroRedundancyOptimizer(first, remat.optim.Adam, betas=(0.8, 0.99)))
        else:
            opts.append(remat.optim.Adam(first, betas=(0.8, 0.99)))
    plain, zero = opts
    train(ref, plain, 2)
    train(zm, zero, 2)
    plain.add_param_group({"params": named_groups(ref)[1], "lr": 0.05, "amsgrad": True})
    zero.add_param_group({"params": named_groups(zm)[1], "lr": 0.05, "amsgrad": True})
    out["groups_after_add"] = [len(zero.param_groups), len(zero.optim.param_groups)]
    out["added_lr"] = [zero.param_groups[1]["lr"], zero.optim.param_groups[1]["lr"]]
    out["added_has_defaults"] = zero.param_groups[1].get("eps") == 1e-8
    train(ref, plain, 3, start=2)
    train(zm, zero, 3, start=2)
    out.update(max_diff=max_diff(ref, zm), ranks_equal=ranks_equal(zm))
    zero.consolidate_state_dict(to=0)
    if dist.get_rank() == 0:
        sd = zero.state_dict()
        out.update(compare_state_dicts(sd, plain.state_dict()))
        out["param_names"] = sd["param_groups"][1].get("param_names")
    all_bytes = gather_int(zero.local_state_bytes())
    out.update(all_local_bytes=all_bytes, plain_bytes=state_bytes(plain))
    return out


def case_state_dict() -> dict:
    ref, zm = make_model(), make_model()
    plain = remat.optim.Adam(ref.parameters(), lr=LR, weight_decay=0.01)
    zero = ZeroRedundancyOptimizer(zm.parameters(), remat.optim.Adam, lr=LR,
                                   weight_decay=0.01)
    train(ref, plain, 5)
    train(zm, zero, 5)
    out: dict = {"max_diff": max_diff(ref, zm)}
    rank = dist.get_rank()

    def try_state_dict(key: str):
        try:
            sd = zero.state_dict()
        except RuntimeError as e:
            out[key] = "RuntimeError: " + str(e)
            return None
        out[key] = "ok"
        return sd

    try_state_dict("before_consolidation")
    zero.consolidate_state_dict(to=0)
    sd = try_state_dict("after_to_0")
    if sd is not None:
        out["to_0"] = compare_state_dicts(sd, plain.state_dict())
        out["n_state"] = len(sd["state"])
        out["keys_sorted"] = list(sd["state"]) == sorted(sd["state"])
        out["tensors_on_cpu"] = all(v.device.type == "cpu" for st in sd["state"].values()
                                    for v in st.values() if isinstance(v, remat.Tensor))
    zero.consolidate_state_dict(to=1)
    sd = try_state_dict("after_to_1")
    if sd is not None:
        out["to_1"] = compare_state_dicts(sd, plain.state_dict())
    # The dict is a snapshot: steps after it do not change it.
    if rank == 1:
        before = sd["state"][2]["exp_avg"].numpy().copy()
    train(zm, zero, 1, start=5)
    train(ref, plain, 1, start=5)
    if rank == 1:
        out["snapshot_kept"] = bool(np.array_equal(before, sd["state"][2]["exp_avg"].numpy()))
        out["stale_state_dict"] = compare_state_dicts(zero.state_dict(),
                                                      plain.state_dict())["state_max_diff"]
    # A lr set on the full groups shows in the next state dict.
    zero.param_groups[0]["lr"] = 0.123
    zero.consolidate_state_dict(to=1)
    if rank == 1:
        out["lr_in_state_dict"] = zero.state_dict()["param_groups"][0]["lr"]
    return out


def case_round_trip() -> dict:
    """State dicts between ZeroRedundancyOptimizer and a plain optimizer, both ways, and
    ZeRO to ZeRO: each continues training exactly as the original plain optimizer does."""
    ref, zm = make_model(), make_model()
    plain = remat.optim.Adam(ref.parameters(), lr=LR, amsgrad=True)
    zero = ZeroRedundancyOptimizer(zm.parameters(), remat.optim.Adam, lr=LR, amsgrad=True)
    train(ref, plain, 4)
    train(zm, zero, 4)
    rank, world = dist.get_rank(), dist.get_world_size()
    # Every rank gets the consolidated dict (one consolidation to each rank).
    consolidated = None
    for r in range(world):
        zero.consolidate_state_dict(to=r)
        if rank == r:
            consolidated = zero.state_dict()
    plain_sd = plain.state_dict()
    zero_to_zero, plain_to_zero, zero_to_plain = copy_of(ref), copy_of(ref), copy_of(ref)
    z2 = ZeroRedundancyOptimizer(zero_to_zero.parameters(), remat.optim.Adam, lr=0.5)
    z2.load_state_dict(consolidated)
    z3 = ZeroRedundancyOptimizer(plain_to_zero.parameters(), remat.optim.Adam, lr=0.5)
    z3.load_state_dict(plain_sd)
    p2 = remat.optim.Adam(zero_to_plain.parameters(), lr=0.5)
    p2.load_state_dict(consolidated)
    out = {"loaded_lr": [z2.param_groups[0]["lr"], z2.optim.param_groups[0]["lr"],
                         p2.param_groups[0]["lr"]],
           "loaded_amsgrad": z2.optim.param_groups[0]["amsgrad"],
           "loaded_local_bytes": z3.local_state_bytes(),
           "original_local_bytes": zero.local_state_bytes()}
    for model, opt in ((ref, plain), (zm, zero), (zero_to_zero, z2),
                       (plain_to_zero, z3), (zero_to_plain, p2)):
        train(model, opt, 3, start=4)
    out.update(max_diff=max_diff(ref, zm), zero_to_zero=max_diff(ref, zero_to_zero),
               plain_to_zero=max_diff(ref, plain_to_zero),
               zero_to_plain=max_diff(ref, zero_to_plain),
               ranks_equal=ranks_equal(zero_to_zero) and ranks_equal(plain_to_zero))
    return out


def case_subgroup() -> dict:
    """A group of rank 1 alone: there ZeRO owns everything; rank 0 is refused."""
    group = dist.new_group([1])
    ref, zm = make_model(), make_model()
    out: dict = {}
    if dist.get_rank() == 0:
        try:
            ZeroRedundancyOptimizer(zm.parameters(), remat.optim.Adam, process_group=group)
            out["outside"] = "no error"
        except ValueError as e:
            out["outside"] = "ValueError: " + str(e)
        return out
    plain = remat.optim.Adam(ref.parameters(), lr=LR)
    zero = ZeroRedundancyOptimizer(zm.parameters(), remat.optim.Adam, process_group=group,
                                   lr=LR)
    for s in range(3):  # collectives on the group only (rank 0 does not take part)
        x, y = data(s)
        for model, opt in ((ref, plain), (zm, zero)):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    zero.consolidate_state_dict(to=0)
    out.update(world_size=zero.world_size, group_rank=zero.rank, global_rank=zero.global_rank,
               max_diff=max_diff(ref, zm), local_bytes=zero.local_state_bytes(),
               plain_bytes=state_bytes(plain),
               state=compare_state_dicts(zero.state_dict(), plain.state_dict()))
    return out


def case_errors() -> dict:
    model = make_model()
    zero = ZeroRedundancyOptimizer(model.parameters(), remat.optim.Adam, lr=LR)
    out = {}
    for label, call, kind in (
            ("to_too_big", lambda: zero.consolidate_state_dict(to=2), ValueError),
            ("to_negative", lambda: zero.consolidate_state_dict(to=-1), ValueError),
            ("bad_lr", lambda: ZeroRedundancyOptimizer(model.parameters(), remat.optim.Adam,
                                                       lr=-1.0), ValueError),
            ("bad_group", lambda: zero.load_state_dict(
                {"state": {}, "param_groups": []}), ValueError),
            ("bad_index", lambda: zero.load_state_dict(
                {"state": {99: {}}, "param_groups": [{"params": list(range(8)), "lr": 1}]}),
             KeyError),
            ("repeated", lambda: zero.add_param_group(
                {"params": [next(iter(model.parameters()))]}), ValueError),
            ("bad_added_lr", lambda: zero.add_param_group(
                {"params": [remat.zeros(3, requires_grad=True)], "lr": -2.0}), ValueError)):
        try:
            call()
            out[label] = "no error"
        except kind as e:
            out[label] = f"{type(e).__name__}: {e}"
        except Exception as e:  # reported: the wrong kind
            out[label] = f"wrong {type(e).__name__}: {e}"
    out["groups_after_failed_add"] = [len(zero.param_groups), len(zero.optim.param_groups)]
    return out


RUN = {"adam": case_adam, "bucket_view": lambda: case_adam(bucket_view=True),
       "bucket_mixed": case_bucket_mixed,
       "ddp": case_ddp, "sgd": case_sgd, "groups": case_groups,
       "state_dict": case_state_dict, "round_trip": case_round_trip,
       "subgroup": case_subgroup, "errors": case_errors}


def main() -> None:
    dist.init_process_group("mpi", timeout=60)
    for case in sys.argv[1:] or CASES:
        try:
            out = RUN[case]()
        except Exception as e:  # reported, so that the other cases still run
            import traceback

            out = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
        out.update(case=case, rank=dist.get_rank())
        print("RESULT " + json.dumps(out), flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
