"""Regression tests for the checkpoint core faults: stack depth on long chains,
recompute from other threads, random ops in scopes, `grad` inside a checkpoint, panics and
misleading errors, a bounded profiler, and early stop. Anything that could crash the
interpreter runs in a subprocess, so a crash is a failed test."""

import gc
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import remat

rng = np.random.default_rng(11)


def leaf(shape, dtype=np.float64):
    return remat.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)


def run_isolated(code, timeout=600):
    """Run `code` in a fresh interpreter; a crash (segfault, abort) or a failed assert is a
    failed test with the child's output."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"child exited with {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
        f"stderr:\n{proc.stderr[-3000:]}"
    )
    assert "OK" in proc.stdout, proc.stdout


def assert_no_checkpoint_state():
    gc.collect()
    assert remat.live_checkpoint_state() == 0


# ---------------------------------------------------------------------------------------------
# 1. Long chains: recompute, backward and drop are iterative


def test_backward_through_100k_checkpointed_tensors_does_not_overflow_the_stack():
    run_isolated(
        """
        import numpy as np, remat
        x = remat.tensor(np.arange(4.0), requires_grad=True)
        y = x
        for _ in range(100_000):
            y = remat.checkpoint(y * 1.0)
        y.sum().backward()
        assert np.array_equal(x.grad.detach().numpy(), np.ones(4)), x.grad.detach().numpy()
        del y
        assert remat.live_checkpoint_state() == 0, remat.live_checkpoint_state()
        print("OK")
        """
    )


def test_backward_through_100k_scope_ops_does_not_overflow_the_stack():
    run_isolated(
        """
        import numpy as np, remat
        x = remat.tensor(np.arange(4.0), requires_grad=True)
        with remat.checkpoint_scope():
            y = x
            for _ in range(100_000):
                y = y * 1.0
        (y * y).sum().backward()
        assert np.array_equal(x.grad.detach().numpy(), 2 * np.arange(4.0)), x.grad.detach().numpy()
        print("OK")
        """
    )


def test_dropping_long_checkpoint_chains_without_backward_does_not_overflow():
    run_isolated(
        """
        import numpy as np, remat
        x = remat.tensor(np.arange(4.0), requires_grad=True)
        y = x
        for _ in range(100_000):
            y = remat.checkpoint(y * 1.0)
        del y
        with remat.checkpoint_scope():
            y = x
            for _ in range(100_000):
                y = y * 1.0
        del y
        assert remat.live_checkpoint_state() == 0, remat.live_checkpoint_state()
        print("OK")
        """
    )


def test_100k_plain_ops_and_100k_segments_backward_and_drop():
    run_isolated(
        """
        import numpy as np, remat
        x = remat.tensor(np.arange(4.0), requires_grad=True)
        y = x
        for _ in range(100_000):
            y = y * 1.0
        y.sum().backward()
        assert np.array_equal(x.grad.detach().numpy(), np.ones(4))
        del y
        x.grad = None
        y = x
        for _ in range(100_000):
            y = remat.checkpoint_segment(lambda t: t * 1.0, y)
        y.sum().backward()
        assert np.array_equal(x.grad.detach().numpy(), np.ones(4))
        del y
        assert remat.live_checkpoint_state() == 0, remat.live_checkpoint_state()
        print("OK")
        """
    )


def test_chains_of_nested_segments():
    run_isolated(
        """
        import numpy as np, remat
        x = remat.tensor(np.arange(4.0), requires_grad=True)

        def many(t):
            # 10,000 segments inside one segment, each fed by the outer segment's slots.
            for _ in range(10_000):
                t = remat.checkpoint_segment(lambda u: u * 1.0, t)
            return t

        def nest(depth):
            def f(t):
                t = t * 1.0
                return nest(depth - 1)(t) if depth else t
            return lambda t: remat.checkpoint_segment(f, t)

        y = remat.checkpoint_segment(many, x)
        y = nest(100)(y)
        with remat.checkpoint_scope():
            for _ in range(10_000):
                y = y * 1.0
        y.sum().backward()
        assert np.array_equal(x.grad.detach().numpy(), np.ones(4)), x.grad.detach().numpy()
        del y
        assert remat.live_checkpoint_state() == 0, remat.live_checkpoint_state()
        print("OK")
        """
    )


# ---------------------------------------------------------------------------------------------
# 4. A recompute replays its own random stream; other threads never shift it


def test_recompute_replays_its_dropout_while_another_thread_draws():
    w = remat.tensor(rng.standard_normal((64, 64)), requires_grad=True)
    x = remat.tensor(rng.standard_normal((32, 64)))
    c = rng.standard_normal((32, 64))
    stop = threading.Event()
    drawn = []

    def drawer():
        while not stop.is_set():
            drawn.append(float(remat.randn(1, dtype=remat.float64).detach().numpy()[0]))

    def segment(t):
        return remat.dropout(t @ w, 0.5)

    t = threading.Thread(target=drawer)
    t.start()
    try:
        for _ in range(60):
            w.grad = None
            h = x @ w
            y = remat.checkpoint_segment(segment, x)
            (y * remat.tensor(c)).sum().backward()
            # The forward's mask, read off its output: backward must have used the same one.
            kept = y.detach().numpy() != 0
            expected = x.detach().numpy().T @ np.where(kept, 2.0 * c, 0.0)
            np.testing.assert_allclose(w.grad.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
            del h
    finally:
        stop.set()
        t.join()
    # The recompute never rewound the global generator: no draw of the other thread repeats.
    assert len(drawn) == len(set(drawn))


def test_a_forward_that_sleeps_before_its_dropout_is_replayed_while_another_thread_draws():
    # The user's reproducer: the forward pauses before drawing, so the other thread always
    # draws between the region's start and its dropout.
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

                def f(t, store=store):
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
    assert bad == []


def test_global_generator_advances_exactly_as_in_the_plain_run():
    w = leaf((16, 16))
    x = remat.tensor(rng.standard_normal((8, 16)))

    def f(t):
        return remat.dropout(remat.tanh(t @ w), 0.3) + remat.randn(8, 16, dtype=remat.float64)

    def step(ckpt):
        remat.manual_seed(5)
        w.grad = None
        y = remat.checkpoint_segment(f, x) if ckpt else f(x)
        y.sum().backward()
        return w.grad.detach().numpy().copy(), remat.randn(4).detach().numpy()

    g_plain, next_plain = step(False)
    g_ckpt, next_ckpt = step(True)
    assert np.array_equal(g_plain, g_ckpt)
    assert np.array_equal(next_plain, next_ckpt)


# ---------------------------------------------------------------------------------------------
# 7. Random ops inside a scope are replayed, not kept; the profiler reports what was freed


def _noisy(x, n):
    noise = remat.randn(n, dtype=remat.float64)
    mask = remat.dropout(remat.rand(n, dtype=remat.float64), 0.5)
    return remat.tanh(x * 2.0 + noise + mask)


def test_random_ops_in_a_scope_are_replayed_not_kept():
    n = 4096
    x = leaf((n,))

    def run(scoped):
        remat.manual_seed(3)
        x.grad = None
        gc.collect()
        base = remat.memory_allocated()
        with remat.CheckpointProfiler() as prof:
            if scoped:
                with remat.checkpoint_scope():
                    y = _noisy(x, n)
            else:
                y = _noisy(x, n)
            loss = y.sum()
            del y
            gc.collect()
            kept = remat.memory_allocated() - base
            loss.backward()
        return kept, prof.memory_saved(), x.grad.numpy().copy(), remat.randn(3).numpy()

    kept_plain, _, g_plain, next_plain = run(False)
    kept_scope, saved, g_scope, next_scope = run(True)
    assert np.array_equal(g_plain, g_scope)
    assert np.array_equal(next_plain, next_scope)
    # The scope kept neither the noise nor the tanh output: one n-element buffer less.
    assert kept_plain - kept_scope == n * 8, (kept_plain, kept_scope)
    assert saved == kept_plain - kept_scope, (saved, kept_plain, kept_scope)
    assert_no_checkpoint_state()


# ---------------------------------------------------------------------------------------------
# 8. `remat.grad` inside a checkpointed function


@pytest.mark.parametrize("create_graph", [True, False])
def test_grad_inside_a_checkpoint_matches_the_plain_run(create_graph):
    w = leaf((6, 6))
    x = leaf((4, 6))

    def penalty(t):
        y = remat.tanh(t @ w)
        (g,) = remat.grad(y.sum(), t, create_graph=create_graph, retain_graph=True)
        return y.sum() + (g * g).sum() * 0.5

    def run(ckpt):
        w.grad = x.grad = None
        out = remat.checkpoint_segment(penalty, x) if ckpt else penalty(x)
        out.backward()
        return [w.grad.detach().numpy().copy(), x.grad.detach().numpy().copy()]

    plain = run(False)
    for a, b in zip(plain, run(True)):
        np.testing.assert_array_equal(a, b)
    assert_no_checkpoint_state()


def test_grad_wrt_a_captured_parameter_inside_a_nested_checkpoint():
    w = leaf((5, 5))
    x = leaf((3, 5))

    def inner(t):
        y = remat.sigmoid(t @ w)
        (gw,) = remat.grad((y * y).sum(), w, create_graph=True)
        return y * gw.sum()

    def outer(t):
        return remat.checkpoint_segment(inner, remat.tanh(t)) * 2.0

    def run(ckpt):
        w.grad = x.grad = None
        out = remat.checkpoint_segment(outer, x) if ckpt else inner(remat.tanh(x)) * 2.0
        out.sum().backward()
        return [w.grad.detach().numpy().copy(), x.grad.detach().numpy().copy()]

    plain = run(False)
    for a, b in zip(plain, run(True)):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# 11. Errors, not panics; scopes and graphs across threads


@pytest.mark.parametrize("op", ["softmax", "tanh"])
def test_shape_change_without_determinism_check_is_a_checkpoint_error(op):
    # The function reads a global that changes between forward and backward: the recompute
    # saves tensors of other shapes. Without the check that used to reach the backward
    # kernels (softmax's panicked); it is a CheckpointError naming the segment.
    run_isolated(
        f"""
        import numpy as np, remat
        width = {{"n": 5}}
        x = remat.tensor(np.ones((3, 4)), requires_grad=True)

        def f(t):
            h = t @ remat.tensor(np.ones((4, width["n"])))
            return remat.{op}(h).sum(axis=1)

        y = remat.checkpoint_segment(f, x, determinism_check=False, name="reader")
        width["n"] = 7
        try:
            y.sum().backward()
        except remat.CheckpointError as e:
            assert "reader" in str(e) and "(4, 7)" in str(e), e
            print("OK")
        """,
        timeout=300,
    )


def test_scope_closed_from_another_thread_ends_it_for_its_owner():
    x = leaf((8,))
    scope = remat.checkpoint_scope()
    scope.__enter__()
    try:
        inside = x * 2.0
        assert remat.live_checkpoint_state() > 0  # a recipe: the scope is active
        errors = []

        def close():
            try:
                scope.__exit__(None, None, None)
            except BaseException as e:  # pragma: no cover - the failure being tested
                errors.append(e)

        t = threading.Thread(target=close)
        t.start()
        t.join()
        assert not errors, errors
        del inside
        gc.collect()
        before = remat.live_checkpoint_state()
        after_close = x * 3.0  # plain again on this thread: no recipe
        assert remat.live_checkpoint_state() == before
        del after_close
    finally:
        scope.__exit__(None, None, None)  # closing again is harmless
    assert_no_checkpoint_state()


def test_concurrent_grad_with_retain_graph_on_one_checkpointed_graph():
    # Big enough that the ops release the GIL: the threads really overlap in the recompute.
    w = remat.tensor(rng.standard_normal((256, 256)) / 16, requires_grad=True)
    x = remat.tensor(rng.standard_normal((64, 256)), requires_grad=True)

    def block(t):
        return remat.tanh(remat.tanh(t @ w) @ w)

    plain_out = block(x).sum()
    expected = [g.detach().numpy() for g in remat.grad(plain_out, [w, x], retain_graph=True)]
    out = remat.checkpoint_segment(block, x).sum()
    errors, results = [], []
    start = threading.Barrier(4)

    def worker():
        try:
            start.wait()
            for _ in range(8):
                gs = remat.grad(out, [w, x], retain_graph=True)
                results.append([g.detach().numpy() for g in gs])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 32
    for r in results:
        for a, b in zip(r, expected):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# 13. The profiler holds a bounded amount while tracking


def test_profiler_records_stay_bounded_over_thousands_of_steps():
    w = leaf((8, 8))
    x = remat.tensor(rng.standard_normal((4, 8)))

    def blk(t):
        return remat.tanh(t @ w)

    with remat.CheckpointProfiler() as prof:
        for step in range(3000):
            h = remat.checkpoint_segment(blk, x, name="blk")
            y = remat.checkpoint(remat.tanh(h))
            loss = (y * y).sum()
            del y  # what the checkpoint frees: nothing else holds the tanh output
            loss.backward()
            if step in (10, 2999):
                recs = prof.records()
                assert len(recs) == 2, [(r["name"], r["kind"]) for r in recs]
    recs = {(r["name"], r["kind"]): r for r in prof.records()}
    assert recs[("blk", "segment")]["recompute_count"] == 3000
    assert recs[("tanh", "tensor")]["bytes_saved"] > 0
    assert prof.checkpoint_count() == 6000
    assert prof.memory_saved() == sum(r["bytes_saved"] for r in recs.values())


# ---------------------------------------------------------------------------------------------
# 6. Early stop


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop_skips_work_after_the_last_saved_tensor(early_stop):
    w = leaf((6, 6))
    x = leaf((4, 6))
    calls = []

    def f(t):
        y = remat.tanh(t @ w)  # tanh saves its output: the last saved tensor
        calls.append("after last save")
        return y + 1.0

    plain = f(x).sum()
    plain.backward()
    g_plain = [w.grad.detach().numpy().copy(), x.grad.detach().numpy().copy()]
    w.grad = x.grad = None
    calls.clear()
    out = remat.checkpoint_segment(f, x, early_stop=early_stop).sum()
    assert calls == ["after last save"]
    out.backward()
    assert calls == ["after last save"] * (1 if early_stop else 2)
    assert np.array_equal(w.grad.detach().numpy(), g_plain[0])
    assert np.array_equal(x.grad.detach().numpy(), g_plain[1])
    assert_no_checkpoint_state()


def test_set_checkpoint_early_stop_is_a_global_default_and_a_context_manager():
    w = leaf((3, 3))
    x = leaf((2, 3))
    calls = []

    def f(t):
        y = remat.tanh(t @ w)
        calls.append(1)
        return y + 0.0

    def recomputes_fully(**kw):
        calls.clear()
        remat.checkpoint_segment(f, x, **kw).sum().backward()
        return len(calls) == 2

    assert not recomputes_fully()  # early stop is on by default
    with remat.set_checkpoint_early_stop(False):
        assert recomputes_fully()
        assert not recomputes_fully(early_stop=True)  # an explicit keyword wins
    assert not recomputes_fully()
    remat.set_checkpoint_early_stop(False)  # also a plain call
    try:
        assert recomputes_fully()
    finally:
        remat.set_checkpoint_early_stop(True)
    assert not recomputes_fully()
    calls.clear()
    with remat.set_checkpoint_early_stop(False):
        out = remat.checkpoint(f, x)  # the setting when the checkpoint is made counts
    out.sum().backward()
    assert len(calls) == 2
