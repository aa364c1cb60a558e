"""Checkpointed functions taking and returning any nesting of tuples, lists, dicts and
namedtuples with Tensors, ``None`` and other values, through every entry
point: the structure comes back unchanged, every Tensor in it is an output of the segment with
the plain run's gradients, and nothing outlives the backward.

Also ``remat.utils.checkpoint``, the ``torch.utils.checkpoint`` mirror (item 6)."""

from __future__ import annotations

import gc
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest

import remat
from remat import nn

Pair = namedtuple("Pair", ["hidden", "extra"])
SENTINEL = object()


class Output(OrderedDict):
    """A dict subclass, as Hugging Face's ModelOutput."""


def _params(seed: int = 0):
    rng = np.random.default_rng(seed)
    w = remat.tensor(rng.standard_normal((4, 4)), dtype=remat.float32, requires_grad=True)
    b = remat.tensor(rng.standard_normal(4), dtype=remat.float32, requires_grad=True)
    return w, b


def _x(seed: int = 1):
    rng = np.random.default_rng(seed)
    return remat.tensor(rng.standard_normal((3, 4)), dtype=remat.float32, requires_grad=True)


# Each function: (w, b) -> x -> a structure built from new tensors (and other values).
def _layer(w, b, x):
    return remat.tanh(x @ w + b)


STRUCTURES = {
    "tensor": lambda h, g: h,
    "tuple_none": lambda h, g: (h, None),
    "none_first": lambda h, g: (None, h),
    "list_mixed": lambda h, g: [h, None, 3, "s", g],
    "dict": lambda h, g: {"hidden": h, "attn": None, "aux": g},
    "ordered_dict": lambda h, g: OrderedDict([("b", g), ("a", h)]),
    "dict_subclass": lambda h, g: Output(hidden=h, past=None),
    "defaultdict": lambda h, g: defaultdict(list, {"h": h, "g": g}),
    "namedtuple": lambda h, g: Pair(h, None),
    "nested_tuple": lambda h, g: (h, (g * 2, (None, g + 1))),
    "deep": lambda h, g: {"out": [(h, {"g": g, "n": None}), SENTINEL], "k": (1, 2.5)},
    "namedtuple_of_dict": lambda h, g: Pair({"h": h}, [g, None]),
}


def _make(kind):
    build = STRUCTURES[kind]

    def fn(x, w, b):
        h = _layer(w, b, x)
        g = remat.sigmoid(h) * 3.0
        return build(h, g)

    return fn


def _leaves(obj):
    """The Tensors of a structure, depth first (dict values in key order)."""
    if isinstance(obj, remat.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _leaves(o)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _leaves(v)]
    return []


def _same_structure(a, b):
    """Same containers (types, keys, lengths) and equal non-tensor values (same objects)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, remat.Tensor):
        return
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_structure(x, y)
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            _same_structure(a[k], b[k])
        if isinstance(a, defaultdict):
            assert a.default_factory is b.default_factory
    else:
        assert a is b or a == b


def _loss(out):
    """A scalar that depends on every tensor leaf (each with its own weight)."""
    total = None
    for i, t in enumerate(_leaves(out)):
        term = (t * (i + 1.0)).sum()
        total = term if total is None else total + term
    return total


def _from_group(kind, got):
    """The function's result from what CheckpointGroup.checkpoint_fn returned: a tuple result
    as is, a list's items as a tuple, anything else as a 1-tuple."""
    assert isinstance(got, tuple)
    plain = STRUCTURES[kind](1.0, 2.0)
    if isinstance(plain, tuple):
        return got
    return list(got) if isinstance(plain, list) else got[0]


class _Block(nn.Module):
    def __init__(self, kind):
        super().__init__()
        w, b = _params()
        self.w, self.b = w, b
        self.fn = _make(kind)

    def forward(self, x):
        return self.fn(x, self.w, self.b)


def _run(entry, kind):
    """(output structure, loss value, grads of x, w, b) for ``entry``."""
    fn = _make(kind)
    w, b = _params()
    x = _x()
    if entry == "plain":
        out = fn(x, w, b)
    elif entry == "segment":
        out = remat.checkpoint_segment(fn, x, w, b)
    elif entry == "checkpoint_fn":
        out = remat.checkpoint(fn, x, w, b, use_reentrant=False)
    elif entry == "utils_checkpoint":
        from remat.utils.checkpoint import checkpoint

        out = checkpoint(fn, x, w, b, use_reentrant=False)
    elif entry == "group":
        got = remat.CheckpointGroup().checkpoint_fn(fn, x, w, b)
        out = _from_group(kind, got)
    elif entry == "gradient_checkpoint_forward":
        out = remat.gradient_checkpoint_forward(fn, True, False, x, w, b)
    elif entry == "module":
        block = _Block(kind)
        block.activation_checkpointing = True
        w, b = block.w, block.b
        out = block(x)
    else:
        raise AssertionError(entry)
    loss = _loss(out)
    loss.backward()
    grads = [t.grad.numpy().copy() for t in (x, w, b)]
    return out, loss.item(), grads


ENTRIES = ["segment", "checkpoint_fn", "utils_checkpoint", "group",
           "gradient_checkpoint_forward", "module"]


@pytest.mark.parametrize("kind", sorted(STRUCTURES))
@pytest.mark.parametrize("entry", ENTRIES)
def test_structure_values_and_gradients_match_plain(entry, kind):
    plain, plain_loss, plain_grads = _run("plain", kind)
    out, loss, grads = _run(entry, kind)
    _same_structure(out, plain)
    for a, e in zip(_leaves(out), _leaves(plain)):
        np.testing.assert_array_equal(a.detach().numpy(), e.detach().numpy())
    assert loss == plain_loss
    for g, e in zip(grads, plain_grads):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("kind", sorted(STRUCTURES))
def test_every_tensor_leaf_is_an_output_that_gets_gradients(kind):
    """Backward from each tensor leaf alone reaches the inputs: none is a plain value that
    bypasses the segment."""
    fn = _make(kind)
    for i in range(len(_leaves(fn(_x(), *_params())))):
        w, b = _params()
        x = _x()
        out = remat.checkpoint_segment(fn, x, w, b)
        leaf = _leaves(out)[i]
        assert leaf.requires_grad and not leaf.is_leaf
        leaf.sum().backward()
        w2, b2 = _params()
        x2 = _x()
        _leaves(fn(x2, w2, b2))[i].sum().backward()
        for got, want in ((x, x2), (w, w2), (b, b2)):
            np.testing.assert_array_equal(got.grad.numpy(), want.grad.numpy())


def test_none_output_inside_map_yields_every_result():
    """A ``(hidden, None)`` return used to raise a bare StopIteration, which ``map`` swallows."""
    w, b = _params()

    def layer(x):
        return _layer(w, b, x), None

    xs = [_x(i) for i in range(3)]
    results = list(map(lambda x: remat.checkpoint_segment(layer, x), xs))
    assert len(results) == 3
    for (h, none), x in zip(results, xs):
        assert none is None
        np.testing.assert_array_equal(h.detach().numpy(), _layer(w, b, x).detach().numpy())


def test_module_flag_with_hugging_face_style_return():
    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, attention_mask=None, output_attentions=False):
            h = remat.tanh(self.lin(x))
            if attention_mask is not None:
                h = h * attention_mask
            return (h, None) if not output_attentions else (h, {"attn": h * 2})

    remat.manual_seed(0)
    layer = Layer()
    mask = remat.tensor(np.array([[1.0, 0.0, 1.0, 1.0]]), requires_grad=True)
    x = _x()
    plain = layer(x, attention_mask=mask, output_attentions=True)
    (plain[0].sum() + plain[1]["attn"].sum()).backward()
    want = [t.grad.numpy().copy() for t in (x, mask, layer.lin.weight)]
    for t in (x, mask, layer.lin.weight):
        t.grad = None
    layer.activation_checkpointing = True
    out = layer(x, attention_mask=mask, output_attentions=True)
    assert isinstance(out, tuple) and isinstance(out[1], dict)
    (out[0].sum() + out[1]["attn"].sum()).backward()
    for t, g in zip((x, mask, layer.lin.weight), want):
        np.testing.assert_array_equal(t.grad.numpy(), g)
    h, none = layer(x, attention_mask=mask)
    assert none is None and h.shape == (3, 4)


def test_module_flag_passes_every_keyword_to_forward():
    """Keywords that are also checkpoint_segment's options reach forward untouched."""

    class Echo(nn.Module):
        def forward(self, x, name=None, offload=None, preserve_rng_state=None):
            return x * 2.0, (name, offload, preserve_rng_state)

    m = Echo()
    m.activation_checkpointing = True
    x = _x()
    y, seen = m(x, name="n", offload="o", preserve_rng_state="p")
    assert seen == ("n", "o", "p")
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0, np.float32))


def test_gradient_checkpoint_forward_passes_every_keyword():
    def model(x, name=None, offload=None):
        return {"y": x * 3.0, "seen": (name, offload)}

    x = _x()
    out = remat.gradient_checkpoint_forward(model, True, False, x, name="a", offload="b")
    assert out["seen"] == ("a", "b")
    out["y"].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 3.0, np.float32))


def _nested_input_fn(xs, cfg, *, scale, extra=None):
    h = xs[0] @ cfg["w"] + xs[1]["b"]
    h = remat.tanh(h) * scale
    if extra is not None:
        h = h + extra["t"][0]
    return h


@pytest.mark.parametrize("entry", ["segment", "checkpoint_fn", "group", "module"])
def test_tensors_nested_in_inputs_and_keywords_are_segment_inputs(entry):
    """Tensors inside list/dict arguments and passed as keywords receive the plain run's
    gradients (and stay usable by the recompute)."""

    def setup():
        w, b = _params()
        x = _x()
        e = remat.tensor(np.ones(4), dtype=remat.float32, requires_grad=True)
        s = remat.tensor(np.float32(1.5), requires_grad=True)
        # Intermediate (non-leaf) tensors: only a real segment input carries their gradient.
        return (x, w, b, e, s), ([x * 1.0], {"w": w * 1.0}, b * 1.0, e * 1.0, s * 1.0)

    leaves, (xs0, cfg, b_, e_, s_) = setup()
    args = ([xs0[0], {"b": b_}], cfg)
    kw = {"scale": s_, "extra": {"t": (e_,)}}
    _nested_input_fn(*args, **kw).sum().backward()
    want = [t.grad.numpy().copy() for t in leaves]

    leaves, (xs0, cfg, b_, e_, s_) = setup()
    args = ([xs0[0], {"b": b_}], cfg)
    kw = {"scale": s_, "extra": {"t": (e_,)}}
    if entry == "segment":
        out = remat.checkpoint_segment(_nested_input_fn, *args, **kw)
    elif entry == "checkpoint_fn":
        out = remat.checkpoint(_nested_input_fn, *args, use_reentrant=False, **kw)
    elif entry == "group":
        (out,) = remat.CheckpointGroup().checkpoint_fn(_nested_input_fn, *args, **kw)
    else:
        class M(nn.Module):
            def forward(self, *a, **k):
                return _nested_input_fn(*a, **k)

        m = M()
        m.activation_checkpointing = True
        out = m(*args, **kw)
    out.sum().backward()
    for t, g in zip(leaves, want):
        np.testing.assert_array_equal(t.grad.numpy(), g)


def test_passthrough_input_and_non_tensor_only_outputs():
    x = _x()
    y, c = remat.checkpoint_segment(lambda a: (a, 7), x)
    assert c == 7
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4), np.float32))
    assert remat.checkpoint_segment(lambda a: None, x) is None
    assert remat.checkpoint_segment(lambda a: {"n": None, "k": (1, "s")}, x) == {
        "n": None, "k": (1, "s")}


def _settle():
    gc.collect()
    return remat.memory_allocated(), remat.live_checkpoint_state()


@pytest.mark.parametrize("kind", ["nested_tuple", "dict", "deep", "namedtuple_of_dict",
                                  "tuple_none"])
@pytest.mark.parametrize("entry", ["segment", "group", "module"])
def test_nothing_outlives_backward_over_many_steps(entry, kind):
    """200 steps returning nested structures: live bytes and checkpoint state are back at the
    baseline after every backward (a nested tuple of new tensors used to leak ~120 KB/step)."""
    w = remat.tensor(np.random.default_rng(0).standard_normal((64, 64)), dtype=remat.float32,
                     requires_grad=True)
    b = remat.zeros(64, requires_grad=True)
    block = _Block(kind)
    block.w, block.b = w, b
    block.activation_checkpointing = True
    fn = _make(kind)
    x = remat.tensor(np.random.default_rng(1).standard_normal((32, 64)), dtype=remat.float32)
    # One step first, so gradients exist and the baseline counts them.
    for step in range(201):
        if entry == "segment":
            out = remat.checkpoint_segment(fn, x, w, b)
        elif entry == "group":
            got = remat.CheckpointGroup().checkpoint_fn(fn, x, w, b)
            out = _from_group(kind, got)
        else:
            out = block(x)
        _loss(out).backward()
        del out
        if step == 0:
            base = _settle()
            assert base[1] == 0
        elif step % 50 == 0 or step == 200:
            assert _settle() == base, f"step {step}"
    assert _settle() == base


def test_recompute_sees_rebuilt_inputs_each_time():
    """The recompute unflattens the inputs again: a function that mutates its list argument
    does not change what the recompute receives."""
    w, b = _params()
    calls = []

    def fn(xs):
        calls.append(len(xs))
        h = _layer(w, b, xs[0])
        xs.append("seen")
        return h

    x = _x()
    out = remat.checkpoint_segment(fn, [x])
    out.sum().backward()
    assert calls == [1, 1]


# ---- remat.utils.checkpoint --------------------------------------------------------------


def test_utils_checkpoint_mirrors_torch_layout():
    import remat.utils
    import remat.utils.checkpoint as uc
    from remat.utils.checkpoint import (checkpoint, checkpoint_sequential,
                                        set_checkpoint_early_stop)

    assert checkpoint is remat.checkpoint
    assert checkpoint_sequential is remat.checkpoint_sequential
    assert set_checkpoint_early_stop is remat.set_checkpoint_early_stop
    assert remat.utils.checkpoint is uc
    assert {"checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop"} <= set(uc.__all__)
    for name in uc.__all__:
        assert hasattr(uc, name)


def test_utils_checkpoint_sequential_matches_plain():
    from remat.utils.checkpoint import checkpoint_sequential

    def run(checkpointed):
        remat.manual_seed(3)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                              nn.Linear(8, 2))
        x = _x()
        y = checkpoint_sequential(model, 2, x, use_reentrant=False) if checkpointed \
            else model(x)
        y.sum().backward()
        return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]

    for a, e in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, e)
