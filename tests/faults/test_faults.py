"""Fault injection: hostile inputs and conditions, each run in its own interpreter with a
timeout (``_subprocess.run_python``), so that an abort, a segfault or a hang is a failed test
naming the case, not a dead test run.

Every case is a small snippet and the outcome it must have: the name of an exception class
(the raised exception's class or one of its bases) or ``"ok"``. After the snippet, in the same
process, the engine must still work: a small forward/backward, plain and checkpointed, gives
the right gradient, and no checkpoint state outlives it.

Out-of-memory cases lower the address-space limit to what the process already uses plus a
headroom (``limit_headroom``), so the sizes fail the same way on every machine; the limit is
lifted again before the engine is checked.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass

import pytest
from _subprocess import describe, run_python

# Helpers every snippet can use. `limit_headroom(n)` allows `n` more bytes of address space
# (the soft limit only, so it can be lifted again); `engine_works()` is the after-check.
PRELUDE = r'''
import copy, gc, json, os, resource, sys, threading
import numpy as np
import remat

class Skip(Exception):
    """The case needs an API this build does not have."""

_HARD = resource.getrlimit(resource.RLIMIT_AS)[1]

def limit_headroom(nbytes):
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + nbytes, _HARD))

def lift_limit():
    resource.setrlimit(resource.RLIMIT_AS, (_HARD, _HARD))

def parallel_work():
    """Ops big enough to run on the engine's thread pool; returns a checkable number."""
    x = remat.ones(1 << 20)
    a = remat.ones(256, 256)
    return float((x * x).sum().item()) + float((a @ a).detach().numpy()[0, 0])

def wait_for_child(pid):
    """Wait for a forked child (killing it if it hangs); it must exit with status 0."""
    import time
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child hung in a parallel op")
        time.sleep(0.02)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status

def training_step(seed):
    """One small training step (a pool worker's task: defined at module level to pickle)."""
    remat.manual_seed(seed)
    m = remat.nn.Linear(512, 512)
    m(remat.randn(256, 512)).relu().sum().backward()
    return m.weight.grad.shape

def engine_works():
    x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0], x.grad
    w = remat.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = remat.checkpoint_segment(lambda t: (t * w).tanh(), x)
    y.sum().backward()
    assert w.grad is not None and x.grad is not None
    z = remat.checkpoint(x * w)
    (z * z).sum().backward()
    del x, w, y, z
    gc.collect()
    assert remat.live_checkpoint_state() == 0, remat.live_checkpoint_state()
'''

HARNESS = r'''
{prelude}

def case():
{code}

outcome, detail = "ok", ""
try:
    case()
except BaseException as e:  # KeyboardInterrupt and SystemExit are outcomes too
    outcome = [c.__name__ for c in type(e).__mro__]
    detail = f"{{type(e).__name__}}: {{e}}"[:500]
lift_limit()
gc.collect()
if outcome != ["Skip", "Exception", "BaseException", "object"]:
    engine_works()
print("OUTCOME " + json.dumps({{"outcome": outcome, "detail": detail}}))
'''


@dataclass
class Case:
    name: str
    code: str
    expect: str | tuple[str, ...]  # exception class name(s), or "ok"


MB = 1 << 20

CASES = [
    # ---- out of memory: every allocation path raises MemoryError, never aborts ----------
    Case("oom_double", f"""
        x = remat.zeros(25_000_000)  # 100 MB of float32
        limit_headroom(150 * {MB})   # the float64 copy needs 200 MB
        x.double()
    """, "MemoryError"),
    Case("oom_float", f"""
        x = remat.zeros(25_000_000, dtype=remat.float64)
        limit_headroom(50 * {MB})
        x.float()
    """, "MemoryError"),
    Case("oom_tensor_with_dtype", f"""
        x = remat.zeros(25_000_000)
        limit_headroom(150 * {MB})
        remat.tensor(x, dtype=remat.float64)
    """, "MemoryError"),
    Case("oom_tensor_copy", f"""
        x = remat.zeros(25_000_000)
        limit_headroom(50 * {MB})
        remat.tensor(x)
    """, "MemoryError"),
    Case("oom_deepcopy", f"""
        x = remat.zeros(25_000_000)
        limit_headroom(50 * {MB})
        copy.deepcopy(x)
    """, "MemoryError"),
    Case("oom_module_double", f"""
        m = remat.nn.Linear(5000, 5000)  # a 100 MB weight
        limit_headroom(150 * {MB})
        m.double()
    """, "MemoryError"),
    Case("oom_backward_mixed_dtypes", f"""
        a = remat.zeros(25_000_000, requires_grad=True)  # float32
        b = remat.tensor([2.0], dtype=remat.float64)  # 1-d: it promotes (a 0-d would not)
        loss = (a * b).sum()                             # float64
        limit_headroom(250 * {MB})  # the float64 gradient fits, its float32 cast does not
        loss.backward()
    """, "MemoryError"),
    Case("oom_from_numpy_cast", f"""
        arr = np.zeros(25_000_000, dtype=np.float32)
        limit_headroom(50 * {MB})
        remat.tensor(arr, dtype=remat.float64)
    """, "MemoryError"),
    Case("oom_zeros_2_33", f"""
        limit_headroom(512 * {MB})
        remat.zeros(2**33)
    """, "MemoryError"),
    Case("oom_randn", f"""
        limit_headroom(512 * {MB})
        remat.randn(2**31)
    """, "MemoryError"),
    Case("oom_broadcast_result", f"""
        a, b = remat.zeros(1, 2**15), remat.zeros(2**15, 1)
        limit_headroom(512 * {MB})
        a + b  # 4 GB
    """, "MemoryError"),
    Case("oom_transpose_contiguous", f"""
        x = remat.zeros(5000, 5000)
        limit_headroom(50 * {MB})
        x.T.contiguous()
    """, "MemoryError"),
    Case("oom_matmul_output", f"""
        a, b = remat.zeros(2**16, 1), remat.zeros(1, 2**16)
        limit_headroom(512 * {MB})
        a @ b  # 16 GB
    """, "MemoryError"),
    Case("oom_sum_output", f"""
        x = remat.zeros(2, 12_500_000)
        limit_headroom(20 * {MB})
        x.sum(0)
    """, "MemoryError"),
    Case("oom_backward", f"""
        x = remat.zeros(25_000_000, requires_grad=True)
        loss = (x * 2.0).sum()
        limit_headroom(50 * {MB})
        try:
            loss.backward()
        finally:
            assert x.grad is None
    """, "MemoryError"),
    Case("oom_checkpoint_recompute", f"""
        x = remat.zeros(2_500_000, requires_grad=True)
        y = remat.checkpoint_segment(lambda t: (t * 2.0).exp().tanh(), x)
        loss = y.sum()
        limit_headroom(5 * {MB})
        loss.backward()
    """, "MemoryError"),
    Case("oom_parallel_kernel", f"""
        x = remat.zeros(25_000_000)
        limit_headroom(50 * {MB})
        x.exp()
    """, "MemoryError"),

    # ---- fork after the engine ran parallel work (multiprocessing's default) ------------
    Case("fork_os", """
        expected = parallel_work()
        pid = os.fork()
        if pid == 0:
            ok = parallel_work() == expected
            os._exit(0 if ok else 3)
        wait_for_child(pid)
        assert parallel_work() == expected
    """, "ok"),
    Case("fork_after_set_num_threads", """
        remat.set_num_threads(2)
        expected = parallel_work()
        remat.set_num_threads(1)
        remat.set_num_threads(2)  # the pool built before the fork is reused in the parent
        pid = os.fork()
        if pid == 0:
            # The child must not reuse the parent's pools (their threads are gone).
            remat.set_num_threads(1)
            remat.set_num_threads(2)
            ok = parallel_work() == expected and remat.get_num_threads() == 2
            os._exit(0 if ok else 3)
        wait_for_child(pid)
    """, "ok"),
    Case("fork_multiprocessing", """
        import multiprocessing as mp
        expected = parallel_work()
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        procs = [ctx.Process(target=lambda: q.put(parallel_work())) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        hung = [p for p in procs if p.is_alive()]
        for p in hung:
            p.kill()
            p.join()
        assert not hung, "a forked worker hung in a parallel op"
        assert [p.exitcode for p in procs] == [0, 0]
        assert sorted(q.get(timeout=10) for _ in procs) == [expected, expected]
    """, "ok"),
    Case("fork_multiprocessing_pool_training_step", """
        import multiprocessing as mp
        parallel_work()
        with mp.get_context("fork").Pool(2) as pool:
            shapes = pool.map_async(training_step, range(4)).get(120)
        assert shapes == [(512, 512)] * 4, shapes
    """, "ok"),

    # ---- bad inputs to every checkpoint entry point --------------------------------------
    Case("checkpoint_not_callable", "remat.checkpoint(42)", "TypeError"),
    Case("checkpoint_segment_not_callable",
         "remat.checkpoint_segment(42, remat.ones(2, requires_grad=True))", "TypeError"),
    Case("group_not_callable",
         "remat.CheckpointGroup().checkpoint_fn(42, remat.ones(2, requires_grad=True))",
         "TypeError"),
    Case("sequential_not_callable",
         "remat.checkpoint_sequential([42, 43], 2, remat.ones(2, requires_grad=True))",
         "TypeError"),
    Case("sequential_bad_segments",
         "remat.checkpoint_sequential([remat.tanh], -1, remat.ones(2, requires_grad=True))",
         "ValueError"),
    Case("sequential_bad_budget", """
        remat.checkpoint_sequential([remat.tanh] * 4, None, remat.ones(2, requires_grad=True),
                                    budget_bytes=-5)
    """, "ValueError"),
    Case("checkpoint_tensor_extra_args", "remat.checkpoint(remat.ones(2), 3)", "TypeError"),
    Case("adaptive_checkpoint_not_tensor", "remat.adaptive_checkpoint([1.0], 0)", "TypeError"),
    Case("fn_raises_in_forward", """
        def fn(t):
            raise ValueError("boom in forward")
        remat.checkpoint_segment(fn, remat.ones(2, requires_grad=True))
    """, "ValueError"),
    Case("fn_raises_in_recompute", """
        calls = []
        def fn(t):
            calls.append(1)
            if len(calls) > 1:
                raise ValueError("boom in recompute")
            return t.exp()
        y = remat.checkpoint_segment(fn, remat.ones(2, requires_grad=True))
        y.sum().backward()
    """, "ValueError"),
    Case("group_fn_raises_in_recompute", """
        calls = []
        def fn(t):
            calls.append(1)
            if len(calls) > 1:
                raise ValueError("boom in recompute")
            return t.exp(), t.sin()
        a, b = remat.CheckpointGroup().checkpoint_fn(fn, remat.ones(2, requires_grad=True))
        (a + b).sum().backward()
    """, "ValueError"),
    Case("sequential_layer_raises_in_recompute", """
        calls = []
        def layer(t):
            calls.append(1)
            if len(calls) > 2:
                raise ValueError("boom in recompute")
            return t.tanh()
        y = remat.checkpoint_sequential([layer, layer, remat.exp], 2,
                                        remat.ones(2, requires_grad=True))
        y.sum().backward()
    """, "ValueError"),
    # A function returning no tensor at all is fine, as in PyTorch: the value comes back.
    Case("fn_returns_a_string", """
        out = remat.checkpoint_segment(lambda t: "garbage", remat.ones(2, requires_grad=True))
        assert out == "garbage", out
    """, "ok"),
    Case("fn_returns_none", """
        out = remat.checkpoint_segment(lambda t: None, remat.ones(2, requires_grad=True))
        assert out is None, out
    """, "ok"),
    Case("fn_returns_another_shape_on_recompute", """
        calls = []
        def fn(t):
            calls.append(1)
            # exp saves its output: the recompute saves a tensor of another shape.
            return (t * 2).sum().exp() if len(calls) > 1 else (t * 2).exp()
        y = remat.checkpoint_segment(fn, remat.ones(3, requires_grad=True))
        (y * y).sum().backward()
    """, ("CheckpointError", "ShapeError")),
    Case("non_tensor_inputs", """
        x = remat.ones(2, requires_grad=True)
        y = remat.checkpoint_segment(lambda a, s, t, n: (t * a).exp(), 3.0, "s", x, None)
        y.sum().backward()
        assert x.grad is not None
    """, "ok"),
    Case("inputs_without_grad_and_a_captured_parameter", """
        w = remat.ones(2, requires_grad=True)
        y = remat.checkpoint_segment(lambda t: (t * w).tanh(), remat.ones(2))
        y.sum().backward()
        assert w.grad is not None
    """, "ok"),
    Case("nothing_requires_grad", """
        y = remat.checkpoint_segment(lambda t: t.exp(), remat.ones(2))
        y.sum().backward()
    """, "RuntimeError"),
    Case("segment_backward_twice", """
        y = remat.checkpoint_segment(lambda t: t.exp(), remat.ones(2, requires_grad=True))
        loss = y.sum()
        loss.backward()
        loss.backward()
    """, "GraphError"),
    Case("checkpoint_tensor_backward_twice", """
        x = remat.ones(2, requires_grad=True)
        c = remat.checkpoint(x.exp())
        loss = (c * c).sum()
        loss.backward()
        loss.backward()
    """, "GraphError"),
    Case("scope_backward_twice", """
        x = remat.ones(2, requires_grad=True)
        with remat.checkpoint_scope():
            h = x.exp().tanh()
        loss = (h * h).sum()
        loss.backward()
        loss.backward()
    """, "GraphError"),
    Case("checkpoint_under_no_grad", """
        x = remat.ones(2, requires_grad=True)
        with remat.no_grad():
            y = remat.checkpoint_segment(lambda t: t.exp(), x)
            c = remat.checkpoint(x.exp())
            z = remat.checkpoint_sequential([remat.tanh, remat.exp], 2, x)
            a, = remat.CheckpointGroup().checkpoint_fn(lambda t: t.sin(), x)
            with remat.checkpoint_scope():
                h = x.exp()
        assert not (y.requires_grad or c.requires_grad or z.requires_grad or a.requires_grad
                    or h.requires_grad)
    """, "ok"),
    Case("tensor_hook_raises", """
        if not hasattr(remat.Tensor, "register_hook"):
            raise Skip("no Tensor.register_hook")
        x = remat.ones(2, requires_grad=True)
        y = remat.checkpoint_segment(lambda t: t.exp(), x)
        def hook(g):
            raise RuntimeError("boom in hook")
        y.register_hook(hook)
        y.sum().backward()
    """, "RuntimeError"),
    Case("module_forward_raises_in_recompute", """
        class Flaky(remat.nn.Module):
            calls = 0
            def forward(self, t):
                Flaky.calls += 1
                if Flaky.calls > 1:
                    raise LookupError("boom in a checkpointed module")
                return t.tanh()
        m = Flaky()
        m.activation_checkpointing = True
        m(remat.ones(2, requires_grad=True)).sum().backward()
    """, "LookupError"),
    Case("keyboard_interrupt_in_forward", """
        def fn(t):
            raise KeyboardInterrupt
        remat.checkpoint_segment(fn, remat.ones(2, requires_grad=True))
    """, "KeyboardInterrupt"),
    Case("keyboard_interrupt_in_recompute", """
        calls = []
        def fn(t):
            calls.append(1)
            if len(calls) > 1:
                raise KeyboardInterrupt
            return t.exp()
        y = remat.checkpoint_segment(fn, remat.ones(2, requires_grad=True))
        y.sum().backward()
    """, "KeyboardInterrupt"),
    Case("system_exit_in_recompute", """
        calls = []
        def fn(t):
            calls.append(1)
            if len(calls) > 1:
                sys.exit(7)
            return t.exp()
        y = remat.checkpoint_segment(fn, remat.ones(2, requires_grad=True))
        y.sum().backward()
    """, "SystemExit"),

    # ---- huge and negative shapes --------------------------------------------------------
    Case("shape_overflow", "remat.zeros(2**62, 4)", "ShapeError"),
    Case("shape_overflow_3d", "remat.full((2**31, 2**31, 2**31), 1.0)", "ShapeError"),
    Case("shape_negative_zeros", "remat.zeros(-1)", "ValueError"),
    Case("shape_negative_randn", "remat.randn(3, -5)", "ValueError"),
    Case("shape_reshape_negative", "remat.ones(6).reshape(-3, 2)", "ValueError"),
    Case("shape_reshape_huge", "remat.ones(6).reshape(2**40, 2**40)", "ValueError"),
    Case("shape_zero_size_backward", """
        x = remat.ones(0, 3, requires_grad=True)
        remat.checkpoint_segment(lambda t: t.exp(), x).sum().backward()
        assert x.grad.shape == (0, 3)
    """, "ok"),

    # ---- NaN / inf data -------------------------------------------------------------------
    Case("nan_inf_forward_backward", """
        x = remat.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -1.0],
                         requires_grad=True)
        y = x.exp() + x.log() + x.sqrt() + x.tanh() + x.softmax(0) + x.sigmoid()
        y.sum().backward()
        assert x.grad.shape == (5,)
    """, "ok"),
    Case("nan_inf_through_checkpoints", """
        x = remat.tensor([float("nan"), float("inf"), -float("inf"), 1.0], requires_grad=True)
        y = remat.checkpoint_segment(lambda t: t.exp().log_softmax(0), x)
        c = remat.checkpoint(x * 2)
        (y.sum() + c.max()).backward()
        logits = remat.tensor([[float("nan"), 1.0], [float("inf"), 0.0]], requires_grad=True)
        remat.cross_entropy(logits, remat.tensor([0, 1])).backward()
    """, "ok"),

    # ---- tensors deleted mid-graph -------------------------------------------------------
    Case("delete_intermediates", """
        x = remat.ones(4, requires_grad=True)
        y = x * 2
        z = y.exp()
        del y
        gc.collect()
        z.sum().backward()
        assert x.grad is not None
    """, "ok"),
    Case("delete_checkpoint_inputs", """
        x = remat.ones(4, requires_grad=True)
        h = x * 3
        y = remat.checkpoint_segment(lambda t: t.exp().tanh(), h)
        c = remat.checkpoint(h.sin())
        del h
        gc.collect()
        (y.sum() + c.sum()).backward()
        assert x.grad is not None
    """, "ok"),
    Case("delete_leaf_before_backward", """
        x = remat.ones(4, requires_grad=True)
        y = remat.checkpoint_segment(lambda t: t.exp(), x)
        del x
        gc.collect()
        y.sum().backward()
    """, "ok"),
    Case("drop_graph_without_backward", """
        x = remat.ones(4, requires_grad=True)
        for _ in range(100):
            y = remat.checkpoint_segment(lambda t: t.exp(), x)
            with remat.checkpoint_scope():
                h = (y * 2).tanh()
            c = remat.checkpoint(h * 3)
        del x, y, h, c
    """, "ok"),

    # ---- data loading: samplers are iterated lazily -----------------------------------------
    # PyTorch's RandomSampler(ds, replacement=True, num_samples=10**10), and a plain sampler
    # object of that length: a list of it would need terabytes, a batch needs two indices.
    Case("dataloader_sampler_of_1e10_draws", f"""
        import itertools
        from remat.utils.data import DataLoader, RandomSampler, TensorDataset
        ds = TensorDataset(remat.arange(20.0).reshape(10, 2))
        class Draws:
            def __len__(self):
                return 10**10
            def __iter__(self):
                return (i % 10 for i in range(10**10))
        limit_headroom(256 * {MB})
        for s in (RandomSampler(ds, replacement=True, num_samples=10**10), Draws()):
            loader = DataLoader(ds, batch_size=2, sampler=s)
            assert len(loader) == 5 * 10**9
            batches = list(itertools.islice(iter(loader), 3))
            assert [tuple(b.shape) for (b,) in batches] == [(2, 2)] * 3
    """, "ok"),

    # ---- threads ----------------------------------------------------------------------------
    # A checkpointed dropout whose forward pauses before drawing, while another thread draws
    # from the global generator: the recompute must replay the forward's mask every time.
    Case("dropout_recompute_while_another_thread_draws", """
        import time
        stop = threading.Event()
        bad = []
        w = remat.ones(256, 1, requires_grad=True)
        def drawer():
            while not stop.is_set():
                remat.rand(8)
        def trainer():
            try:
                for i in range(50):
                    x = remat.ones(8, 256)
                    store = {}
                    def f(t):
                        time.sleep(0.002)
                        d = remat.dropout(t, 0.5)
                        store.setdefault("d", d.detach().numpy().copy())
                        return d @ w
                    w.grad = None
                    remat.checkpoint_segment(f, x).sum().backward()
                    if not np.array_equal(w.grad.numpy(), store["d"].sum(axis=0)[:, None]):
                        bad.append(i)
            finally:
                stop.set()
        threads = [threading.Thread(target=drawer), threading.Thread(target=trainer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert bad == [], f"{len(bad)} of 50 steps used another mask in backward"
    """, "ok"),

    # ---- gradient assignment -------------------------------------------------------------
    Case("grad_assigned_itself", """
        x = remat.ones(2, requires_grad=True)
        x.grad = x
    """, "RuntimeError"),
    Case("grad_assigned_wrong_shape", """
        x = remat.ones(2, requires_grad=True)
        x.grad = remat.ones(3)
    """, "ValueError"),
    Case("grad_assigned_not_a_tensor", """
        x = remat.ones(2, requires_grad=True)
        x.grad = [1.0, 2.0]
    """, "TypeError"),
]


def _expected(expect: str | tuple[str, ...]) -> tuple[str, ...]:
    return (expect,) if isinstance(expect, str) else expect


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault(case: Case) -> None:
    code = textwrap.indent(textwrap.dedent(case.code).strip("\n"), "    ")
    run = run_python(HARNESS.format(prelude=PRELUDE, code=code))
    assert run.returncode == 0, describe(case.name, run)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("OUTCOME ")]
    assert lines, describe(case.name, run)
    result = json.loads(lines[-1][len("OUTCOME "):])
    outcome, detail = result["outcome"], result["detail"]
    if isinstance(outcome, list) and outcome[0] == "Skip":
        pytest.skip(detail)
    got = ("ok",) if outcome == "ok" else tuple(outcome)
    if "MemoryError" in got:
        # Never an empty MemoryError(): it names the allocation that failed.
        assert "allocat" in detail, f"{case.name}: MemoryError without its size: {detail!r}"
    want = _expected(case.expect)
    assert any(w in got for w in want), (
        f"{case.name}: expected {' or '.join(want)}, got {detail or 'no exception'}"
    )


def test_case_names_are_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
