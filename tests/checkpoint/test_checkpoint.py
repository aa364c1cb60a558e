"""Checkpointing: every entry point gives bit-identical gradients to the plain run, keeps less
memory alive (asserted exactly from the byte counters), and leaves no state behind."""

import gc

import numpy as np
import pytest

import remat

rng = np.random.default_rng(0)


def leaf(shape, scale=1.0, dtype=np.float32, device="cpu"):
    return remat.tensor((rng.standard_normal(shape) * scale).astype(dtype), requires_grad=True,
                        device=device)


def grads(params):
    return [p.grad.detach().numpy().copy() for p in params]


def zero(params):
    for p in params:
        p.grad = None


def assert_bitwise_equal(a, b, what=""):
    assert len(a) == len(b), what
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape, what
        assert np.array_equal(x, y), f"{what}: max diff {np.abs(x - y).max()}"


def assert_no_checkpoint_state():
    gc.collect()
    assert remat.live_checkpoint_state() == 0


# ---------------------------------------------------------------------------------------------
# Models: an MLP, an attention-like block, layer norm, dropout


class MLP:
    def __init__(self, depth=6, width=16, device="cpu"):
        self.ws = [leaf((width, width), 1 / np.sqrt(width), device=device) for _ in range(depth)]
        self.bs = [leaf((width,), 0.1, device=device) for _ in range(depth)]

    @property
    def params(self):
        return self.ws + self.bs

    def layer(self, i):
        return lambda x: remat.relu(x @ self.ws[i] + self.bs[i])

    @property
    def layers(self):
        return [self.layer(i) for i in range(len(self.ws))]


def attention_block(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    att = remat.softmax(q @ k.transpose(-1, -2) * (1.0 / np.sqrt(q.shape[-1])), axis=-1)
    return att @ v


def norm_block(x, w, g, b):
    return remat.layer_norm(remat.gelu(x @ w), weight=g, bias=b)


def dropout_block(x, w):
    return remat.dropout(remat.tanh(x @ w), p=0.3, training=True)


def run_plain_and(fn_plain, fn_ckpt, params, seed=1):
    """Gradients of sum(out * out) for the plain and the checkpointed forward."""
    out = []
    for fn in (fn_plain, fn_ckpt):
        zero(params)
        remat.manual_seed(seed)
        y = fn()
        (y * y).sum().backward()
        out.append(grads(params))
        del y
    return out


def test_every_entry_point_matches_plain_on_an_mlp(devices):
    m = MLP(device=devices)
    x = remat.tensor(rng.standard_normal((4, 16)).astype(np.float32), device=devices)

    def plain():
        h = x
        for f in m.layers:
            h = f(h)
        return h

    def per_layer(entry):
        def run():
            h = x
            for f in m.layers:
                h = entry(f, h)
            return h
        return run

    variants = {
        "checkpoint(fn)": per_layer(lambda f, h: remat.checkpoint(f, h)),
        "checkpoint_segment": per_layer(lambda f, h: remat.checkpoint_segment(f, h)),
        "checkpoint(tensor)": per_layer(lambda f, h: remat.checkpoint(f(h))),
        "adaptive_checkpoint": per_layer(lambda f, h: remat.adaptive_checkpoint(f(h), 0)),
        "group": per_layer(lambda f, h: remat.CheckpointGroup().checkpoint_fn(f, h)[0]),
        "sequential(3)": lambda: remat.checkpoint_sequential(m.layers, 3, x),
        "sequential(sqrt)": lambda: remat.checkpoint_sequential(m.layers, "sqrt", x),
        "sequential(3, offload)": lambda: remat.checkpoint_sequential(m.layers, 3, x,
                                                                      offload=True),
        "sequential(budget)": lambda: remat.checkpoint_sequential(
            m.layers, None, x, budget_bytes=4000),
        "gradient_checkpoint_forward": per_layer(
            lambda f, h: remat.gradient_checkpoint_forward(f, True, False, h)),
        "gradient_checkpoint_forward(offload)": per_layer(
            lambda f, h: remat.gradient_checkpoint_forward(f, False, True, h)),
    }

    def scoped():
        with remat.checkpoint_scope():
            return plain()

    def scoped_seed():
        with remat.gradient_checkpoint_scope():
            return plain()

    variants["checkpoint_scope"] = scoped
    variants["gradient_checkpoint_scope"] = scoped_seed
    for name, fn in variants.items():
        ref, got = run_plain_and(plain, fn, m.params)
        assert_bitwise_equal(ref, got, name)
    assert_no_checkpoint_state()


@pytest.mark.parametrize("block", ["attention", "norm", "dropout"])
def test_blocks_match_plain(block, devices):
    d = 8
    x = leaf((2, 5, d), device=devices)
    if block == "attention":
        params = [leaf((d, d), 0.3, device=devices) for _ in range(3)]
        fn = attention_block
    elif block == "norm":
        params = [leaf((d, d), 0.3, device=devices), leaf((d,), device=devices),
                  leaf((d,), device=devices)]
        fn = norm_block
    else:
        params = [leaf((d, d), 0.3, device=devices)]
        fn = dropout_block
    all_params = [x, *params]
    ref, seg = run_plain_and(lambda: fn(x, *params),
                             lambda: remat.checkpoint_segment(fn, x, *params), all_params)
    assert_bitwise_equal(ref, seg)
    _, tensor_level = run_plain_and(lambda: fn(x, *params),
                                    lambda: remat.checkpoint(fn(x, *params)), all_params)
    assert_bitwise_equal(ref, tensor_level)

    def scoped():
        with remat.checkpoint_scope():
            return fn(x, *params)

    _, sc = run_plain_and(lambda: fn(x, *params), scoped, all_params)
    assert_bitwise_equal(ref, sc)
    assert_no_checkpoint_state()


def test_dropout_mask_replays_and_later_draws_are_not_shifted():
    x = leaf((64,))

    def run(ckpt, preserve=True):
        x.grad = None
        remat.manual_seed(3)
        # The product saves the dropout output, so the recompute must draw the same mask.
        f = lambda t: remat.dropout(t * 2.0, p=0.5) * t  # noqa: E731
        y = remat.checkpoint_segment(f, x, preserve_rng_state=preserve) if ckpt else f(x)
        after = remat.rand(8).detach().numpy().copy()
        (y * y).sum().backward()
        return x.grad.detach().numpy().copy(), after

    g_plain, after_plain = run(False)
    g_ckpt, after_ckpt = run(True)
    assert np.array_equal(g_plain, g_ckpt)
    assert np.array_equal(after_plain, after_ckpt)
    g_fresh, _ = run(True, preserve=False)
    assert not np.array_equal(g_plain, g_fresh)


def test_segment_inputs_outputs_and_captured_parameters():
    w = leaf((4, 4))
    x = leaf((3, 4))
    c = remat.tensor(rng.standard_normal((3, 4)).astype(np.float32))  # needs no grad

    def fn(a, const, scale, *, shift):
        h = remat.tanh(a @ w) * scale + const
        return h + shift, "label", h.sum()

    y, label, s = remat.checkpoint_segment(fn, x, c, 0.5, shift=1.0)
    assert label == "label"
    ((y * y).sum() + s).backward()
    g = [x.grad.detach().numpy().copy(), w.grad.detach().numpy().copy()]
    x.grad = None
    w.grad = None
    y, _, s = fn(x, c, 0.5, shift=1.0)
    ((y * y).sum() + s).backward()
    assert_bitwise_equal(g, [x.grad.detach().numpy(), w.grad.detach().numpy()])
    assert c.grad is None


def test_nested_segments_and_no_grad():
    m = MLP(depth=4)
    x = remat.tensor(rng.standard_normal((2, 16)).astype(np.float32))

    def inner(h):
        return m.layer(1)(m.layer(0)(h))

    def outer(h):
        return m.layer(3)(m.layer(2)(remat.checkpoint_segment(inner, h)))

    def plain():
        h = x
        for f in m.layers:
            h = f(h)
        return h

    ref, got = run_plain_and(plain, lambda: remat.checkpoint_segment(outer, x), m.params)
    assert_bitwise_equal(ref, got)
    with remat.no_grad():
        y = remat.checkpoint_segment(outer, x)
        assert not y.requires_grad
        assert np.array_equal(y.detach().numpy(), plain().detach().numpy())
    assert_no_checkpoint_state()


def test_recompute_with_different_shapes_raises_checkpoint_error():
    w = leaf((4, 4))
    calls = []

    def fn(x):
        calls.append(1)
        if len(calls) > 1:
            x = remat.concat([x, x], axis=0)
        return x @ w

    y = remat.checkpoint_segment(fn, remat.ones(2, 4), name="shifty")
    with pytest.raises(remat.CheckpointError, match="shifty"):
        y.sum().backward()
    del y
    # The engine stays usable.
    z = remat.checkpoint_segment(lambda t: t @ w, remat.ones(2, 4))
    z.sum().backward()
    assert w.grad is not None


def test_errors_raised_by_the_function_propagate():
    def boom(x):
        raise KeyError("inside")

    with pytest.raises(KeyError):
        remat.checkpoint_segment(boom, leaf((2,)))
    # Any return value is fine (as in PyTorch), even one without a Tensor.
    assert remat.checkpoint_segment(lambda x: 3, leaf((2,))) == 3
    with pytest.raises(TypeError):
        remat.checkpoint(42)


def test_group_shares_one_recompute_and_counts():
    w = leaf((8, 8))
    x = leaf((4, 8))
    group = remat.CheckpointGroup(name="pair")

    def two(t):
        h = remat.tanh(t @ w)
        return h * 2.0, h * 3.0

    a, b = group.checkpoint_fn(two, x)
    assert group.checkpoint_count == 1
    assert group.memory_saved > 0
    (a.sum() + b.sum()).backward()
    assert group.recompute_count == 1
    assert_no_checkpoint_state()


def test_scope_tensors_consumed_outside_are_recomputed():
    w = leaf((8, 8))
    x = leaf((4, 8))
    with remat.CheckpointProfiler() as prof:
        with remat.checkpoint_scope():
            h = remat.tanh(x @ w)
        y = (remat.sigmoid(h) * 2.0).sum()
        del h
        y.backward()
    assert prof.recompute_count() >= 1
    g = [x.grad.detach().numpy().copy(), w.grad.detach().numpy().copy()]
    x.grad = w.grad = None
    (remat.sigmoid(remat.tanh(x @ w)) * 2.0).sum().backward()
    assert_bitwise_equal(g, [x.grad.detach().numpy(), w.grad.detach().numpy()])


def test_adaptive_checkpoint_decides_on_real_size():
    x = leaf((10,))
    y = x * 2.0
    small = remat.adaptive_checkpoint(y, 41)  # 40 bytes < 41: unchanged
    big = remat.adaptive_checkpoint(y, 40)
    with remat.CheckpointProfiler() as prof:
        remat.adaptive_checkpoint(y, 41)
        assert prof.checkpoint_count() == 0
        remat.adaptive_checkpoint(y, 40)
        assert prof.checkpoint_count() == 1
    assert np.array_equal(small.detach().numpy(), big.detach().numpy())


def test_budget_planner_errors_clearly_when_nothing_fits():
    m = MLP(depth=4)
    x = remat.tensor(rng.standard_normal((4, 16)).astype(np.float32))
    with pytest.raises(ValueError, match="budget_bytes=10"):
        remat.checkpoint_sequential(m.layers, None, x, budget_bytes=10)
    with pytest.raises(ValueError):
        remat.checkpoint_sequential(m.layers, 0, x)
    with pytest.raises(ValueError):
        remat.checkpoint_sequential(m.layers, "cube", x)


# ---------------------------------------------------------------------------------------------
# Memory, exactly from the byte counters


def _preallocate_grads(params):
    for p in params:
        p.grad = remat.zeros_like(p)


def peak_above_baseline(params, step):
    _preallocate_grads(params)
    gc.collect()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    step()
    gc.collect()
    assert remat.memory_allocated() == base, "the step leaked memory"
    return remat.max_memory_allocated() - base


def test_sequential_checkpointing_of_a_deep_mlp_keeps_under_030_of_peak():
    depth, width, batch = 64, 256, 512
    ws = [leaf((width, width), 1 / np.sqrt(width)) for _ in range(depth)]
    bs = [leaf((width,), 0.01) for _ in range(depth)]
    def linear_relu(w, b):
        return lambda h: remat.relu(h @ w + b)

    layers = [linear_relu(w, b) for w, b in zip(ws, bs)]
    x = remat.tensor(rng.standard_normal((batch, width)).astype(np.float32))

    def plain():
        h = x
        for f in layers:
            h = f(h)
        h.mean().backward()

    def ckpt():
        remat.checkpoint_sequential(layers, 8, x).mean().backward()

    p_plain = peak_above_baseline(ws + bs, plain)
    p_ckpt = peak_above_baseline(ws + bs, ckpt)
    assert p_ckpt <= 0.30 * p_plain, (p_ckpt, p_plain)
    budget = p_plain // 3

    def planned():
        remat.checkpoint_sequential(layers, None, x, budget_bytes=budget).mean().backward()

    assert peak_above_baseline(ws + bs, planned) <= budget
    assert_no_checkpoint_state()


def test_checkpointing_the_gelu_output_of_an_mlp_block_keeps_at_most_055():
    d, batch = 128, 256
    w1 = leaf((d, 4 * d), 1 / np.sqrt(d))
    w2 = leaf((4 * d, d), 1 / np.sqrt(4 * d))
    x = remat.tensor(rng.standard_normal((batch, d)).astype(np.float32))

    def kept_after_forward(block):
        gc.collect()
        base = remat.memory_allocated()
        loss = block().mean()
        gc.collect()
        kept = remat.memory_allocated() - base
        loss.backward()
        return kept

    plain = kept_after_forward(lambda: remat.gelu(x @ w1) @ w2)
    ckpt = kept_after_forward(lambda: remat.checkpoint(remat.gelu(x @ w1)) @ w2)
    assert ckpt <= 0.55 * plain, (ckpt, plain)
    assert_no_checkpoint_state()


def test_profiler_memory_saved_equals_bytes_not_kept():
    m = MLP(depth=8, width=64)
    x = remat.tensor(rng.standard_normal((32, 64)).astype(np.float32))
    gc.collect()
    base = remat.memory_allocated()
    h = x
    for f in m.layers:
        h = f(h)
    kept_plain = remat.memory_allocated() - base
    del h, f
    gc.collect()
    with remat.CheckpointProfiler() as prof:
        y = remat.checkpoint_sequential(m.layers, 4, x)
        kept_ckpt = remat.memory_allocated() - base
        assert prof.memory_saved() == kept_plain - kept_ckpt
        assert prof.checkpoint_count() == 3
        y.sum().backward()
        assert prof.recompute_count() == 3
        assert prof.recompute_seconds() > 0
        assert prof.peak_bytes() >= remat.memory_allocated()
    recs = prof.records()
    assert len(recs) == 3 and {r["kind"] for r in recs} == {"sequential"}
    assert sum(r["bytes_saved"] for r in recs) == prof.memory_saved()
    assert "memory saved" in prof.report()
    # The class's static methods read the same numbers.
    assert remat.CheckpointProfiler.memory_saved() == prof.memory_saved()
    del y
    assert_no_checkpoint_state()


# ---------------------------------------------------------------------------------------------
# Autograd semantics through checkpoints


def _segmented(m, x):
    h = x
    for f in m.layers:
        h = remat.checkpoint_segment(f, h)
    return (h * h).sum()


def test_retain_graph_through_segments_recomputes_each_time():
    m = MLP(depth=4)
    x = remat.tensor(rng.standard_normal((3, 16)).astype(np.float32))
    zero(m.params)
    loss = _segmented(m, x)
    with remat.CheckpointProfiler() as prof:
        loss.backward(retain_graph=True)
        first = grads(m.params)
        loss.backward()
        assert prof.recompute_count() == 8  # each of the 4 segments, once per backward
    for g1, g2 in zip(first, grads(m.params)):
        assert np.array_equal(2 * g1, g2)
    with pytest.raises(remat.GraphError, match="retain_graph=True"):
        loss.backward()
    del loss
    assert_no_checkpoint_state()


def test_grad_through_segments_matches_plain_and_leaves_dot_grad_alone():
    m = MLP(depth=4)
    x = leaf((3, 16))
    zero(m.params)
    x.grad = None
    (gx_ckpt, gw_ckpt) = remat.grad(_segmented(m, x), [x, m.ws[0]])
    assert x.grad is None and m.ws[0].grad is None
    h = x
    for f in m.layers:
        h = f(h)
    (gx, gw) = remat.grad((h * h).sum(), [x, m.ws[0]])
    assert np.array_equal(gx.detach().numpy(), gx_ckpt.detach().numpy())
    assert np.array_equal(gw.detach().numpy(), gw_ckpt.detach().numpy())
    assert_no_checkpoint_state()


def test_checkpointed_tensor_and_scope_survive_retain_graph():
    w = leaf((8, 8))
    x = leaf((4, 8))
    with remat.checkpoint_scope():
        h = remat.tanh(x @ w)
    y = remat.checkpoint(remat.gelu(h @ w))
    loss = (y * y).sum()
    del h, y
    loss.backward(retain_graph=True)
    g1 = w.grad.detach().numpy().copy()
    loss.backward()
    assert np.array_equal(w.grad.detach().numpy(), 2 * g1)
    del loss
    assert_no_checkpoint_state()


@pytest.mark.skipif(not remat.cuda.is_available(), reason="needs a CUDA device")
def test_offload_keeps_segment_inputs_in_host_memory():
    ws = [remat.tensor(rng.standard_normal((256, 256)).astype(np.float32) / 16,
                       requires_grad=True, device="cuda") for _ in range(6)]
    # Inputs 8x the weights: the weight gradients, which accumulate as backward goes on
    # (measured on an H200: at 2x they decided the offloaded peak), stay small next to them.
    x = remat.tensor(rng.standard_normal((2048, 256)).astype(np.float32), device="cuda")
    size = 2048 * 256 * 4

    def run(offload):
        for w in ws:
            w.grad = None
        gc.collect()
        base, host_base = remat.memory_allocated("cuda"), remat.memory_allocated("cpu")
        h = x
        for w in ws:
            h = remat.checkpoint_segment(lambda t, w=w: remat.tanh(t @ w), h, offload=offload)
        kept = remat.memory_allocated("cuda") - base
        host = remat.memory_allocated("cpu") - host_base
        remat.reset_peak_memory_stats("cuda")
        (h * h).sum().backward()
        peak = remat.max_memory_allocated("cuda") - base
        del h
        gc.collect()
        assert remat.memory_allocated("cpu") == host_base
        return kept, host, peak, [w.grad.detach().numpy().copy() for w in ws]

    kept_plain, host_plain, peak_plain, g_plain = run(False)
    for _ in range(2):  # the second offloaded run reuses the pooled pinned blocks
        kept_off, host_off, peak_off, g_off = run(True)
        # The six segment inputs (x and five intermediates, 2048 x 256 float32 each) live in
        # host memory; the five intermediates' device memory is free (x is still held here).
        assert host_plain == 0
        assert host_off == 6 * size
        assert kept_plain - kept_off == 5 * size
        # Backward holds at most two inputs on the device (the one read and the one
        # prefetched) where the plain checkpointed run holds all five intermediates.
        assert peak_off <= peak_plain - 2 * size
        for a, b in zip(g_plain, g_off):
            assert np.array_equal(a, b)
    assert_no_checkpoint_state()
    remat.cuda.empty_cache()


@pytest.mark.skipif(not remat.cuda.is_available(), reason="needs a CUDA device")
def test_offload_of_views_and_parameters():
    """A strided view is offloaded as a contiguous copy; a parameter passed as an input stays
    on the device (a host copy would free nothing)."""
    w = remat.tensor(rng.standard_normal((16, 16)).astype(np.float32), requires_grad=True,
                     device="cuda")
    base = remat.tensor(rng.standard_normal((16, 32)).astype(np.float32), device="cuda")

    def f(t, p):
        return remat.tanh(t @ p)

    def run(offload):
        w.grad = None
        view = base[:, ::2]
        host0 = remat.memory_allocated("cpu")
        y = remat.checkpoint_segment(f, view, w, offload=offload)
        host = remat.memory_allocated("cpu") - host0
        (y * y).sum().backward()
        return host, w.grad.detach().numpy().copy()

    host_plain, g_plain = run(False)
    host_off, g_off = run(True)
    assert host_plain == 0 and host_off == 16 * 16 * 4
    assert np.array_equal(g_plain, g_off)


def test_offload_is_accepted_and_changes_nothing_on_the_cpu():
    m = MLP(depth=3)
    x = remat.tensor(rng.standard_normal((2, 16)).astype(np.float32))
    zero(m.params)

    def run(offload):
        h = x
        for f in m.layers:
            h = remat.checkpoint_segment(f, h, offload=offload)
        return h

    ref, got = run_plain_and(lambda: run(False), lambda: run(True), m.params)
    assert_bitwise_equal(ref, got)


def test_pytorch_keywords_are_consumed_and_other_keywords_reach_the_function():
    # Hugging Face / Diffusers call sites: checkpoint(block, h, use_reentrant=False).
    w = remat.tensor(np.array([[0.5, -1.0], [2.0, 0.25]]), requires_grad=True)
    h = remat.tensor(np.array([[1.0, 2.0]]))

    def block(h, x=None, scale=1.0):
        out = (h @ w).tanh() * scale
        return out if x is None else out + x

    def grads(run):
        w.grad = None
        run().sum().backward()
        return w.grad.detach().numpy().copy()

    plain = grads(lambda: block(h, x=h, scale=2.0))
    for kw in ({"use_reentrant": False}, {"use_reentrant": True},
               {"determinism_check": "none"}, {"determinism_check": "default"},
               {"debug": False}, {"preserve_rng_state": False}):
        got = grads(lambda kw=kw: remat.checkpoint(block, h, x=h, scale=2.0, **kw))
        assert np.array_equal(got, plain), kw
    # A keyword named like checkpoint's first parameter goes to the function too.
    got = grads(lambda: remat.checkpoint(lambda x: block(h, x=x), x=h))
    assert np.array_equal(got, grads(lambda: block(h, x=h)))
    with pytest.raises(ValueError, match="determinism_check"):
        remat.checkpoint(block, h, determinism_check="sometimes")
    with pytest.raises(NotImplementedError, match="context_fn"):
        remat.checkpoint(block, h, context_fn=lambda: None)
