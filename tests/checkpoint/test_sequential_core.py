"""``checkpoint_sequential`` is planned and run by the engine: its one plan cache hits for the
same model, never serves a freed layer's plan to a new object at the same address, keeps no
layer alive, and the engine validates the arguments (ValueError / TypeError)."""

import gc
import weakref

import numpy as np
import pytest

import remat
from remat import nn

rng = np.random.default_rng(11)

# A budget every plan fits: the planner still measures the layers once, which is what the
# cache saves.
ROOMY = 1 << 30


def stats():
    return remat._remat._plan_cache_stats()


def leaf(shape):
    return remat.tensor(rng.standard_normal(shape).astype(np.float32) * 0.3, requires_grad=True)


class Counting:
    """A layer that counts its calls. Fixed-size instances (``__slots__``), so a freed one's
    memory is handed to the next instance allocated."""

    __slots__ = ("w", "calls", "__weakref__")

    def __init__(self, w):
        self.w = w
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return remat.tanh(x @ self.w)


def test_the_same_sequential_twice_hits_the_plan_cache():
    seq = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh())
    x = remat.tensor(rng.standard_normal((8, 16)).astype(np.float32))
    s0 = stats()
    remat.checkpoint_sequential(seq, None, x, budget_bytes=ROOMY).sum().backward()
    s1 = stats()
    assert (s1["misses"], s1["hits"]) == (s0["misses"] + 1, s0["hits"])
    remat.checkpoint_sequential(seq, None, x, budget_bytes=ROOMY).sum().backward()
    s2 = stats()
    assert (s2["misses"], s2["hits"]) == (s1["misses"], s1["hits"] + 1)
    # sequential_plan reads the same cache.
    runs = remat.sequential_plan(seq, None, x, budget_bytes=ROOMY)
    assert stats()["hits"] == s2["hits"] + 1
    assert runs[0][0] == 0 and runs[-1][1] == 4
    # Another input shape is another plan.
    remat.checkpoint_sequential(seq, None, remat.tensor(np.ones((2, 16), np.float32)),
                                budget_bytes=ROOMY)
    assert stats()["misses"] == s2["misses"] + 1


def test_a_cache_hit_skips_measuring():
    w = leaf((8, 8))
    layers = [Counting(w) for _ in range(3)]
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    assert [f.calls for f in layers] == [2, 2, 2]  # measured, then run
    remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    assert [f.calls for f in layers] == [3, 3, 3]  # run only


def test_a_freed_and_reallocated_layer_list_does_not_reuse_the_stale_plan():
    w = leaf((8, 8))
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    layers = [Counting(w) for _ in range(3)]
    remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    old_ids = [id(f) for f in layers]
    # Freed by reference counting right here (no gc.collect(): a collection in between makes
    # the allocator less likely to hand the blocks straight back).
    del layers
    # New layers at the very same addresses (CPython hands a freed block to the next object
    # of its size); the plan cache would confuse them with the old ones if it keyed on id().
    pool = [Counting(w) for _ in range(64)]
    by_id = {id(f): f for f in pool}
    if not all(i in by_id for i in old_ids):
        pytest.skip("the allocator did not reuse the freed layers' addresses")
    new = [by_id[i] for i in old_ids]
    s0 = stats()
    remat.checkpoint_sequential(new, None, x, budget_bytes=ROOMY)
    assert stats()["misses"] == s0["misses"] + 1 and stats()["hits"] == s0["hits"]
    assert [f.calls for f in new] == [2, 2, 2], "the new layers must be measured"


def test_the_plan_cache_keeps_no_layer_alive():
    w = leaf((8, 8))
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    layers = [Counting(w) for _ in range(3)]
    remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    refs = [weakref.ref(f) for f in layers]
    del layers
    gc.collect()
    assert all(r() is None for r in refs)


class NoWeakref:
    """A callable without weak references (``__slots__`` without ``__weakref__``)."""

    __slots__ = ()

    def __call__(self, x):
        return remat.relu(x)


def test_layers_that_cannot_be_weakly_referenced_still_hit():
    lin, relu = nn.Linear(8, 8), NoWeakref()
    layers = [lin, relu, lin]
    with pytest.raises(TypeError):
        weakref.ref(relu)
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    s0 = stats()
    remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    assert stats()["hits"] == s0["hits"] + 1


def test_arguments_are_validated_by_the_engine():
    layers = [Counting(leaf((8, 8))) for _ in range(3)]
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    for segments, budget, match in [
        (0, None, "segments must be >= 1"),
        (-1, None, "segments must be >= 1"),
        (4, None, "more segments than layers"),
        ("cube", None, "got 'cube'"),
        (True, None, "got True"),
        (2.5, None, "got 2.5"),
        (None, None, "give segments"),
        (2, 1000, "either segments or budget_bytes"),
        (None, -5, "budget_bytes must be >= 0"),
    ]:
        with pytest.raises(ValueError, match=match):
            remat.checkpoint_sequential(layers, segments, x, budget_bytes=budget)
    with pytest.raises(TypeError, match="must be callable"):
        remat.checkpoint_sequential([layers[0], 3], 1, x)
    with pytest.raises(TypeError, match="input must be a Tensor"):
        remat.checkpoint_sequential(layers, 1, np.ones((4, 8)))
    assert [f.calls for f in layers] == [0, 0, 0], "bad arguments are refused before any call"
    # A budget that nothing fits is known only after measuring.
    with pytest.raises(ValueError, match="budget_bytes=10"):
        remat.checkpoint_sequential(layers, None, x, budget_bytes=10)


def test_use_reentrant_is_accepted_and_ignored():
    w = leaf((8, 8))
    layers = [Counting(w) for _ in range(4)]
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))

    def grad_of(**kw):
        w.grad = None
        remat.checkpoint_sequential(layers, 2, x, **kw).sum().backward()
        return w.grad.numpy().copy()

    ref = grad_of()
    for flag in (True, False, None):
        assert np.array_equal(grad_of(use_reentrant=flag), ref)


def test_under_no_grad_the_layers_simply_run():
    layers = [Counting(leaf((8, 8))) for _ in range(3)]
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    with remat.no_grad():
        y = remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
    assert [f.calls for f in layers] == [1, 1, 1]  # nothing measured
    assert not y.requires_grad
    assert np.array_equal(remat.checkpoint_sequential([], 2, x).numpy(), x.numpy())


def test_a_layer_exception_comes_out_unchanged():
    class Boom(Exception):
        pass

    def bad(_):
        raise Boom("layer 2")

    layers = [Counting(leaf((8, 8))), bad]
    x = remat.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    with pytest.raises(Boom, match="layer 2"):
        remat.checkpoint_sequential(layers, None, x, budget_bytes=ROOMY)
