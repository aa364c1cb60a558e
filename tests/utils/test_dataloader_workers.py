"""``DataLoader(num_workers>0)`` as PyTorch's: worker processes that give the batches of
``num_workers=0`` in order, seeded per worker, with ``worker_init_fn``, ``get_worker_info``,
persistent workers, ``prefetch_factor``, worker exceptions re-raised with their traceback,
dead and hung workers detected, and no process left behind.

Every case that starts worker processes runs in a fresh interpreter with a timeout
(``tests/_subprocess.py``): a hang, a crash or a leaked process fails the test instead of
taking the test run with it. Each child prints ``ok`` (or JSON) on success."""

from __future__ import annotations

import json
import os
import pickle
import signal
import textwrap
import time

import numpy as np
import pytest

import remat
from remat.utils.data import DataLoader, get_worker_info

from _subprocess import describe, run_python

# Shared by the children: datasets and a check that no worker process is left.
PRELUDE = """
import gc, json, multiprocessing, os, random, signal, sys, time
import numpy as np
import remat
from remat.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset,
                              get_worker_info)

def no_children(pids=()):
    gc.collect()
    assert multiprocessing.active_children() == [], multiprocessing.active_children()
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"worker {pid} is still running")

class Squares(Dataset):
    def __init__(self, n=23):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return {"x": remat.full((2,), float(i * i)), "i": i}

class Pid(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return os.getpid()
"""


def _program(code: str) -> str:
    return PRELUDE + textwrap.dedent(code)


def _child(code: str) -> str:
    """Run PRELUDE + ``code``; fail unless it exits cleanly. Returns its stdout."""
    run = run_python(_program(code))
    assert run.returncode == 0, describe("child", run)
    return run.stdout


def _ok(code: str) -> None:
    assert _child(textwrap.dedent(code) + "\nprint('ok')\n").strip().splitlines()[-1] == "ok"


# ------------------------------------------------------------------- order and batches


def test_batches_equal_single_process_in_order_with_shuffle_and_generator():
    _ok("""
    def epochs(num_workers, **kw):
        g = remat.Generator().manual_seed(11)
        loader = DataLoader(Squares(), batch_size=4, shuffle=True, generator=g,
                            num_workers=num_workers, **kw)
        return [[(b["i"].tolist(), b["x"].tolist()) for b in loader] for _ in range(2)]
    ref = epochs(0)
    assert ref[0] != ref[1]  # a new permutation each epoch
    assert sorted(i for b in ref[0] for i in b[0]) == list(range(23))
    assert epochs(2) == ref
    assert epochs(2, prefetch_factor=1) == ref
    assert epochs(1) == ref
    # drop_last and a custom collate_fn run in the workers the same way
    for kw in ({"drop_last": True}, {"collate_fn": lambda s: [d["i"] * 10 for d in s]}):
        a = [repr(b) for b in DataLoader(Squares(), batch_size=5, **kw)]
        b = [repr(b) for b in DataLoader(Squares(), batch_size=5, num_workers=2, **kw)]
        assert a == b, (a, b)
    # batch_size=None: one converted sample at a time
    a = DataLoader(Squares(7), batch_size=None, num_workers=2)
    assert [s["i"] for s in a] == list(range(7))
    no_children()
    """)


def test_global_stream_is_used_the_same_with_and_without_workers():
    # No generator: the base seed and the RandomSampler's seed come from the global stream,
    # one draw each, at the same points with and without workers.
    _ok("""
    def run(num_workers):
        remat.manual_seed(4)
        loader = DataLoader(Squares(), batch_size=3, shuffle=True, num_workers=num_workers)
        order = [b["i"].tolist() for b in loader]
        return order, remat.rand(3).tolist()
    assert run(0) == run(2)
    """)


def test_tensors_and_structures_cross_processes_with_their_dtypes():
    _ok("""
    import collections
    Pair = collections.namedtuple("Pair", "a b")
    class Mixed(Dataset):
        def __len__(self):
            return 6
        def __getitem__(self, i):
            return {"f32": remat.full((2, 3), i * 0.5), "f64": remat.tensor([i / 3.0],
                    dtype=remat.float64), "i32": remat.tensor([i], dtype=remat.int32),
                    "b": remat.tensor([i % 2 == 0]), "np": np.arange(3, dtype=np.int16) + i,
                    "pair": Pair(i, float(i)), "name": f"s{i}", "list": [i, remat.tensor(i)]}
    def run(num_workers):
        return list(DataLoader(Mixed(), batch_size=4, num_workers=num_workers))
    for a, b in zip(run(0), run(2), strict=True):
        assert a.keys() == b.keys()
        for k in ("f32", "f64", "i32", "b", "np"):
            assert a[k].dtype == b[k].dtype and a[k].tolist() == b[k].tolist(), k
        assert type(b["pair"]).__name__ == "Pair" and b["pair"].a.tolist() == a["pair"].a.tolist()
        assert b["name"] == a["name"] and [t.tolist() for t in b["list"]] == [
            t.tolist() for t in a["list"]]
    """)


def test_tensors_pickle_with_dtype_shape_and_requires_grad():
    for t in (remat.arange(6.0).reshape(2, 3).t(), remat.tensor(3, dtype=remat.int32),
              remat.tensor([True, False]), remat.zeros(2, dtype=remat.float64),
              remat.ones(3, requires_grad=True), remat.arange(4)):
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype == t.dtype and u.shape == t.shape
        assert u.requires_grad == t.requires_grad
        np.testing.assert_array_equal(u.detach().numpy(), t.detach().numpy())


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods(method):
    _ok(f"""
    ds = TensorDataset(remat.arange(20.0).reshape(10, 2), remat.arange(10))
    loader = DataLoader(ds, batch_size=3, num_workers=2, multiprocessing_context="{method}")
    assert loader.multiprocessing_context.get_start_method() == "{method}"
    got = [(x.tolist(), y.tolist()) for x, y in loader]
    assert got == [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=3)]
    ctx = multiprocessing.get_context("{method}")
    assert [y.tolist() for _, y in DataLoader(ds, batch_size=5, num_workers=1,
                                               multiprocessing_context=ctx)] == [
        [0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    no_children()
    """)


def test_in_order_false_yields_every_batch():
    _ok("""
    class SlowFirst(Dataset):
        def __len__(self):
            return 12
        def __getitem__(self, i):
            if i == 0:
                time.sleep(0.5)
            return i
    got = [b.tolist() for b in DataLoader(SlowFirst(), batch_size=2, num_workers=2,
                                           in_order=False)]
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]], got
    """)


# --------------------------------------------------- worker_init_fn, get_worker_info, seeds


def test_worker_init_fn_once_per_worker_and_per_epoch(tmp_path):
    out = _child(f"""
    root = {str(tmp_path)!r}
    def init(worker_id):
        info = get_worker_info()
        assert info is not None and info.id == worker_id
        open(os.path.join(root, f"{{worker_id}}-{{os.getpid()}}"), "w").close()
    for persistent in (False, True):
        loader = DataLoader(Pid(), batch_size=2, num_workers=2, worker_init_fn=init,
                            persistent_workers=persistent)
        pids = [sorted(set(sum((b.tolist() for b in loader), []))) for _ in range(2)]
        print(json.dumps({{"persistent": persistent, "pids": pids,
                          "calls": sorted(os.listdir(root))}}))
        for f in os.listdir(root):
            os.remove(os.path.join(root, f))
        del loader
    no_children()
    """)
    fresh, persistent = (json.loads(line) for line in out.splitlines())
    # Without persistence: new workers each epoch, each initialised once.
    ids = [c.split("-")[0] for c in fresh["calls"]]
    assert sorted(ids) == ["0", "0", "1", "1"], fresh
    # Persistent: the same two processes both epochs, each initialised once.
    assert persistent["pids"][0] == persistent["pids"][1] and len(persistent["pids"][0]) == 2
    assert [c.split("-")[0] for c in persistent["calls"]] == ["0", "1"]
    assert sorted(int(c.split("-")[1]) for c in persistent["calls"]) == persistent["pids"][0]
    assert os.getpid() not in persistent["pids"][0]


def test_get_worker_info_in_and_out_of_workers():
    _ok("""
    from remat.utils.data.sampler import draw_seed
    class Info(Dataset):
        def __len__(self):
            return 6
        def __getitem__(self, i):
            info = get_worker_info()
            return (info.id, info.num_workers, info.seed, type(info.dataset).__name__,
                    info.dataset is self)
    assert get_worker_info() is None
    remat.manual_seed(3)
    base = draw_seed()
    remat.manual_seed(3)
    rows = [tuple(r) for r in DataLoader(Info(), batch_size=None, num_workers=2)]
    assert [r[0] for r in rows] == [0, 1, 0, 1, 0, 1]  # round-robin
    assert {r[1] for r in rows} == {2} and {r[3] for r in rows} == {"Info"}
    assert all(r[4] for r in rows)
    assert {(r[0], r[2]) for r in rows} == {(0, base), (1, base + 1)}
    assert get_worker_info() is None
    """)


def test_random_augmentation_reproducible_and_distinct_per_worker():
    code = """
    class Augment(Dataset):
        def __len__(self):
            return 8
        def __getitem__(self, i):
            return [get_worker_info().id, remat.rand(1).item(), random.random(),
                    float(np.random.rand())]
    def draws(seed):
        remat.manual_seed(seed)
        return [[float(v) for v in s] for s in
                DataLoader(Augment(), batch_size=None, num_workers=2)]
    a = draws(0)
    assert draws(0) == a  # reproducible in one process
    assert draws(1) != a  # and follows the seed
    print(json.dumps(a))
    """
    first = json.loads(_child(code).splitlines()[-1])
    again = json.loads(_child(code).splitlines()[-1])
    assert first == again  # reproducible across interpreters
    w0, w1 = first[0], first[1]
    assert (w0[0], w1[0]) == (0, 1)
    for k in (1, 2, 3):  # remat, random and NumPy streams differ between workers
        assert w0[k] != w1[k]
    assert len({tuple(r[1:]) for r in first}) == len(first)


# ------------------------------------------------------------ persistence and prefetch


def test_persistent_workers_survive_epochs_and_a_broken_epoch():
    _ok("""
    loader = DataLoader(Pid(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {p for b in loader for p in b.tolist()}
    for b in loader:  # an epoch left early: its batches in flight are dropped
        break
    second = {p for b in loader for p in b.tolist()}
    assert first == second and len(first) == 2 and os.getpid() not in first
    assert len(list(loader)) == 4
    sq = DataLoader(Squares(), batch_size=5, num_workers=2, persistent_workers=True)
    for b in sq:
        break
    assert [b["i"].tolist() for b in sq] == [b["i"].tolist() for b in DataLoader(Squares(), 5)]
    pids = [w.pid for w in loader._iterator._workers]
    del loader, sq
    no_children(pids)
    """)


def test_prefetch_factor_bounds_the_batches_in_flight():
    _ok("""
    started = multiprocessing.Value("i", 0)
    class Counted(Dataset):
        def __len__(self):
            return 40
        def __getitem__(self, i):
            with started.get_lock():
                started.value += 1
            return i
    def settle(expected):
        # wait (as long as it takes) for the workers to run ahead, then give them a
        # moment more: they must stop at the bound
        while started.value < expected:
            time.sleep(0.01)
        time.sleep(0.3)
        assert started.value == expected, (started.value, expected)
    for workers, factor in ((2, 3), (1, 1), (2, 2)):
        started.value = 0
        it = iter(DataLoader(Counted(), batch_size=1, num_workers=workers,
                             prefetch_factor=factor))
        settle(workers * factor)  # before anything is consumed
        for consumed in range(1, 6):
            next(it)
            settle(min(40, consumed + workers * factor))
        del it
    no_children()
    """)


# --------------------------------------------------------------- iterable datasets


def test_iterable_dataset_split_by_worker_info_gives_each_item_once():
    _ok("""
    class Stream(IterableDataset):
        def __init__(self, n, split=True):
            self.n, self.split = n, split
        def __iter__(self):
            info = get_worker_info()
            if info is None or not self.split:
                return iter(range(self.n))
            return iter(range(info.id, self.n, info.num_workers))
    loader = DataLoader(Stream(11), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in loader]
    # one batch from each worker in turn, then the longer stream's rest
    assert batches == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]], batches
    dropped = [b.tolist() for b in DataLoader(Stream(11), batch_size=2, num_workers=2,
                                               drop_last=True)]
    assert dropped == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10]], dropped
    # unsplit, every worker yields the whole stream (as in PyTorch)
    whole = sorted(x for b in DataLoader(Stream(5, split=False), batch_size=2, num_workers=2)
                   for x in b.tolist())
    assert whole == sorted(list(range(5)) * 2)
    # uneven streams, a worker with none, persistent workers over two epochs
    class Uneven(IterableDataset):
        def __iter__(self):
            wid = get_worker_info().id
            return iter([] if wid == 1 else range(wid * 100, wid * 100 + 5))
    p = DataLoader(Uneven(), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert [b.tolist() for b in p] == [[0, 1], [2, 3], [4]]
    assert [x for x in DataLoader(Stream(4), batch_size=None, num_workers=2)] == [0, 1, 2, 3]
    del p
    no_children()
    """)


# ---------------------------------------------------------------- errors and cleanup


def test_worker_exception_is_reraised_with_its_traceback():
    _ok("""
    class Bad(Dataset):
        def __len__(self):
            return 10
        def __getitem__(self, i):
            if i == 5:
                raise ValueError(f"bad index {i}")
            if i == 8:
                raise KeyError("missing")
            return i
    got = []
    try:
        for b in DataLoader(Bad(), batch_size=2, num_workers=2):
            got.append(b.tolist())
    except ValueError as e:
        msg = str(e)
    else:
        raise AssertionError("no error")
    assert got == [[0, 1], [2, 3]]
    assert msg.startswith("Caught ValueError in DataLoader worker process 0."), msg
    assert "Original Traceback (most recent call last)" in msg
    assert "__getitem__" in msg and "bad index 5" in msg
    no_children()  # the loop's iterator is gone, and its workers with it
    # the iterator stays usable after a bad batch, as in PyTorch
    it = iter(DataLoader(Bad(), batch_size=1, num_workers=2))
    seen, errors = [], []
    while True:
        try:
            seen.append(next(it).item())
        except StopIteration:
            break
        except (ValueError, KeyError) as e:
            errors.append(type(e).__name__)
            text = str(e)
    assert seen == [0, 1, 2, 3, 4, 6, 7, 9] and errors == ["ValueError", "KeyError"]
    assert "\\\\n" not in text and "Caught KeyError in DataLoader worker process 0" in text
    def init(worker_id):
        if worker_id == 1:
            raise OSError("no disk")
    try:
        list(DataLoader(Pid(), batch_size=1, num_workers=2, worker_init_fn=init))
    except OSError as e:
        assert "worker process 1" in str(e) and "no disk" in str(e)
    else:
        raise AssertionError("no error")
    class Unpicklable(Dataset):
        def __len__(self):
            return 2
        def __getitem__(self, i):
            return lambda: i
    try:
        list(DataLoader(Unpicklable(), batch_size=None, num_workers=1))
    except Exception as e:
        assert "pickling its batch" in str(e), e
    else:
        raise AssertionError("no error")
    no_children()
    """)


@pytest.mark.parametrize("how", ["SIGKILL", "segfault"])
def test_dead_worker_raises_naming_it(how):
    die = ("os.kill(os.getpid(), signal.SIGKILL)" if how == "SIGKILL"
           else "import ctypes; ctypes.string_at(0)")
    _ok(f"""
    class Dies(Dataset):
        def __len__(self):
            return 20
        def __getitem__(self, i):
            if i == 6:
                {die}
            return i
    loader = DataLoader(Dies(), batch_size=2, num_workers=2)
    try:
        for b in loader:
            pass
    except RuntimeError as e:
        msg = str(e)
    else:
        raise AssertionError("no error")
    assert "DataLoader worker (pid(s) " in msg and "exited unexpectedly" in msg, msg
    assert "worker 1" in msg, msg
    no_children()
    """)


def test_timeout_raises_and_stops_a_hung_worker():
    _ok("""
    class Hangs(Dataset):
        def __len__(self):
            return 6
        def __getitem__(self, i):
            if i == 2:
                time.sleep(600)
            return i
    try:
        list(DataLoader(Hangs(), batch_size=1, num_workers=2, timeout=0.5))
    except RuntimeError as e:
        assert str(e) == "DataLoader timed out after 0.5 seconds", e
    else:
        raise AssertionError("no error")
    no_children()
    """)


def test_no_worker_left_after_delete_break_or_exit(tmp_path):
    _ok("""
    class Slow(Dataset):
        def __len__(self):
            return 100
        def __getitem__(self, i):
            time.sleep(0.05)
            return os.getpid()
    it = iter(DataLoader(Slow(), batch_size=2, num_workers=2))
    next(it)
    pids = [w.pid for w in it._workers]
    del it  # mid-epoch, with batches in flight
    no_children(pids)
    for b in DataLoader(Slow(), batch_size=2, num_workers=2):
        break
    no_children()
    loader = DataLoader(Slow(), batch_size=2, num_workers=2, persistent_workers=True)
    next(iter(loader))
    del loader
    no_children()
    """)
    # A loader alive at interpreter exit: the interpreter exits and so do its workers.
    pid_file = tmp_path / "pids"
    run = run_python(_program(f"""
    loader = DataLoader(Pid(), batch_size=1, num_workers=2, persistent_workers=True)
    it = iter(loader)
    next(it)
    open({str(pid_file)!r}, "w").write(" ".join(str(w.pid) for w in it._workers))
    """))
    assert run.returncode == 0, describe("exit with live workers", run)
    _assert_gone([int(p) for p in pid_file.read_text().split()])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _assert_gone(pids: list[int]) -> None:
    # Workers notice a vanished parent within their poll interval; wait as long as it
    # takes (the subprocess timeout of the test run bounds a real hang).
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"workers {left} outlived their loader's process"


def test_workers_exit_when_the_main_process_is_killed(tmp_path):
    pid_file = tmp_path / "pids"
    run = run_python(_program(f"""
    it = iter(DataLoader(Pid(), batch_size=1, num_workers=2))
    next(it)
    open({str(pid_file)!r}, "w").write(" ".join(str(w.pid) for w in it._workers))
    os.kill(os.getpid(), signal.SIGKILL)
    """))
    assert run.returncode == -signal.SIGKILL, describe("killed main", run)
    _assert_gone([int(p) for p in pid_file.read_text().split()])


# -------------------------------------------------------------------- end to end


def test_gpt_style_token_dataset_trains_identically_with_two_workers():
    out = _child("""
    import remat.nn as nn
    import remat.nn.functional as F
    tokens = np.random.RandomState(0).randint(0, 16, size=300)
    class Tokens(Dataset):
        def __init__(self, block):
            self.block = block
        def __len__(self):
            return len(tokens) - self.block
        def __getitem__(self, i):
            chunk = tokens[i : i + self.block + 1]
            return (remat.tensor(chunk[:-1], dtype=remat.int64),
                    remat.tensor(chunk[1:], dtype=remat.int64))
    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(16, 12)
            self.drop = nn.Dropout(0.1)
            self.head = nn.Linear(12, 16)
        def forward(self, x):
            return self.head(self.drop(self.emb(x)))
    def train(num_workers):
        remat.manual_seed(0)
        model = TinyGPT()
        opt = remat.optim.SGD(model.parameters(), lr=0.5)
        loader = DataLoader(Tokens(8), batch_size=16, shuffle=True, drop_last=True,
                            num_workers=num_workers)
        losses = []
        for epoch in range(2):
            for step, (x, y) in enumerate(loader):
                if step == 4:
                    break
                loss = F.cross_entropy(model(x).reshape(-1, 16), y.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses, [p.detach().numpy().tolist() for p in model.parameters()]
    a, b = train(0), train(2)
    assert a == b, (a[0], b[0])
    assert a[0][0] > a[0][-1]  # it learns
    print(json.dumps(a[0]))
    """)
    losses = json.loads(out.splitlines()[-1])
    assert len(losses) == 8


# -------------------------------------------------------------- arguments (no workers)


@pytest.mark.parametrize("kwargs,match", [
    ({"num_workers": -1}, "num_workers"),
    ({"num_workers": 1.5}, "num_workers"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified"),
    ({"num_workers": 2, "prefetch_factor": 0}, "prefetch_factor"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"timeout": -1, "num_workers": 1}, "timeout"),
    ({"timeout": 5}, "timeout"),
    ({"multiprocessing_context": "spawn"}, "multiprocessing_context can only be used"),
    ({"num_workers": 1, "multiprocessing_context": "nope"}, "valid start method"),
    ({"batch_size": None, "drop_last": True}, "drop_last"),
])
def test_bad_worker_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(list(range(4)), **kwargs)


def test_bad_context_type_and_defaults():
    with pytest.raises(TypeError, match="multiprocessing_context"):
        DataLoader([1], num_workers=1, multiprocessing_context=3)
    loader = DataLoader([1], num_workers=1, pin_memory=True)
    assert loader.prefetch_factor == 2 and loader.multiprocessing_context is None
    assert DataLoader([1]).prefetch_factor is None
    assert get_worker_info() is None


def test_iterable_interleaving_matches_torch():
    pytest.importorskip("torch")
    code = """
    def batches(data):
        class Stream(data.IterableDataset):
            def __init__(self, n):
                self.n = n
            def __iter__(self):
                info = data.get_worker_info()
                if info.id == 1 and self.n == 3:
                    return iter([])
                return iter(range(info.id, self.n, info.num_workers))
        out = []
        for n, kw in ((11, {}), (11, {"drop_last": True}), (3, {}), (9, {"prefetch_factor": 1})):
            loader = data.DataLoader(Stream(n), batch_size=2, num_workers=2, **kw)
            out.append([b.tolist() for b in loader])
        return out
    import torch.utils.data
    import remat.utils.data
    assert batches(remat.utils.data) == batches(torch.utils.data), (
        batches(remat.utils.data), batches(torch.utils.data))
    """
    _ok(code)
