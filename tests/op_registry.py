"""The one table of public ops that the generated tests in ``test_op_registry.py`` run over.

Each ``Op`` row says how to call the op (``fn``: the ``remat.X`` function, ``methods``: Tensor
method/operator/attribute names), what it should compute (``ref``: a NumPy reference, evaluated
in float64), which inputs to draw (``domains``: one value domain per input; ``cases``: a
hypothesis strategy of ``Case(shapes, params)`` for the forward property tests; ``examples``:
a few fixed small cases for the gradient, second-order, CUDA and checkpoint tests), which inputs
it is differentiable in (``diff``), and which bad calls must raise what (``errors``).

Adding an op is one row in ``OPS`` below; every generated test then covers it. For example the
``remat.sin`` / ``remat.cos`` (functions and methods) are one ``unary(...)`` row each, in
the "unary math" block.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import remat
import remat.nn.functional as F
from np_resample import np_conv_transpose, np_interpolate
from np_windows import (
    np_adaptive_avg_pool,
    np_avg_pool,
    np_conv,
    np_fold,
    np_max_pool,
    np_pad,
    np_unfold,
)

# ------------------------------------------------------------------------------ data model


@dataclass(frozen=True)
class Case:
    """One call of an op: the input shapes (one per input) and keyword parameters."""

    shapes: tuple[tuple[int, ...], ...]
    params: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{list(self.shapes)}" + (f" {p}" if p else "")


@dataclass(frozen=True)
class Domain:
    """How to draw one input: ``sample(rng, shape, case) -> float64 array``. ``tensor=False``
    inputs (class labels) are passed to the op as NumPy int64 arrays, never as tensors."""

    name: str
    sample: Callable[[np.random.Generator, tuple, Case], np.ndarray]
    tensor: bool = True


def _uniform(low, high):
    return lambda rng, shape, case: rng.uniform(low, high, size=shape)


def _nonzero(rng, shape, case):
    mag = rng.uniform(0.2, 2.0, size=shape)
    return np.where(rng.random(size=shape) < 0.5, -mag, mag)


def _distinct(rng, shape, case):
    """No ties and gaps of at least 0.15 (max picks a unique element; finite differences with
    eps = 1e-6 never cross a tie)."""
    n = int(np.prod(shape, dtype=np.int64))
    return rng.permutation((np.arange(n) - n / 2) * 0.15).reshape(shape)


def _mask(rng, shape, case):
    return (rng.random(size=shape) < 0.5).astype(np.float64)


def _labels(rng, shape, case):
    """Class indices for cross_entropy: in [0, C) where C is the last axis of input 0."""
    return rng.integers(0, case.shapes[0][-1], size=shape)


def _positions(rng, shape, case):
    """Indices along ``dim`` (param, default 0) of input 0, repeats included."""
    n = case.shapes[0][case.params.get("dim", 0)]
    return rng.integers(0, n, size=shape)


def _signed_positions(rng, shape, case):
    """Indices into axis 0 of input 0 for ``t[idx]``, negative ones included."""
    n = case.shapes[0][0]
    return rng.integers(-n, n, size=shape)


def _ids(rng, shape, case):
    """Embedding ids: rows of input 1 (the weight)."""
    return rng.integers(0, case.shapes[1][0], size=shape)


ANY = Domain("any", _uniform(-2.0, 2.0))
POS = Domain("pos", _uniform(0.2, 2.0))  # log, sqrt, pow bases
ABOVE_M1 = Domain("above_m1", _uniform(-0.8, 2.0))  # log1p: above its pole at -1
PROB = Domain("prob", _uniform(0.05, 0.95))  # probabilities away from 0 and 1
UNIT = Domain("unit", _uniform(-0.9, 0.9))  # asin, acos, atanh: inside (-1, 1)
ABOVE_1 = Domain("above_1", _uniform(1.1, 3.0))  # acosh: above its branch point at 1
NONZERO = Domain("nonzero", _nonzero)  # relu's kink, divisors
DISTINCT = Domain("distinct", _distinct)  # max: away from ties
MASK = Domain("mask", _mask)  # where's condition (0.0 / 1.0 float tensor)
LABELS = Domain("labels", _labels, tensor=False)
POSITIONS = Domain("positions", _positions, tensor=False)  # index_select / gather indices
SIGNED_POSITIONS = Domain("signed_positions", _signed_positions, tensor=False)
IDS = Domain("ids", _ids, tensor=False)  # embedding ids


@dataclass(frozen=True)
class Bad:
    """A call that must fail: ``inputs`` are shapes (float32 ones tensors) or ``Raw`` values;
    ``names``: substrings one of which the message must contain (default: the row's op name)."""

    id: str
    inputs: tuple
    exc: type | tuple
    params: dict = field(default_factory=dict)
    names: tuple[str, ...] | None = ()
    skip_forms: tuple[str, ...] = ()  # form labels not checked (each with a reason at the row)


@dataclass(frozen=True)
class Raw:
    """A non-tensor argument for a ``Bad`` call (None, a string, a NumPy array...)."""

    value: Any


def default_call(f, inputs, params):
    return f(*inputs, **params)


SEED = 1234  # what random ops (dropout) are reseeded with before each call

F32_TOL = (2e-5, 2e-5)
F64_TOL = (1e-11, 1e-11)


@dataclass(frozen=True)
class Op:
    name: str  # unique row id
    fn: Callable | None  # the remat.X function (None: Tensor-only op)
    methods: tuple[str, ...]  # Tensor methods / operators / attributes computing the same
    ref: Callable  # NumPy reference: ref(*float64 arrays, **params)
    domains: tuple[Domain, ...] | Domain  # one per input (one Domain: every input)
    cases: st.SearchStrategy  # of Case, for the hypothesis forward tests
    examples: tuple[Case, ...]  # small fixed cases for grad / 2nd order / CUDA / checkpoint
    diff: tuple[int, ...] | None = None  # inputs with gradients (None: every tensor input)
    call: Callable = default_call  # call(f, inputs, params) -> Tensor
    op: str | None = None  # name error messages use (default: name)
    errors: tuple[Bad, ...] = ()
    random: bool = False  # draws random numbers: reseed before every call
    dtypes: tuple = (np.float32, np.float64)
    tol32: tuple[float, float] = F32_TOL  # forward (rtol, atol) in float32
    tol64: tuple[float, float] = F64_TOL
    grad_tol: tuple[float, float] = (1e-5, 1e-6)  # finite differences (rtol, atol)
    cuda: bool = True  # False: no CUDA path yet, a CUDA input must raise DeviceError
    out_dtype: Any = None  # the result's NumPy dtype when not the inputs' (argmax int64, bool)

    @property
    def differentiable(self) -> bool:
        return self.diff != ()

    @property
    def op_name(self) -> str:
        return self.op or self.name

    def domain(self, i: int) -> Domain:
        return self.domains if isinstance(self.domains, Domain) else self.domains[i]

    def diff_inputs(self, case: Case) -> list[int]:
        """Indices of the inputs gradients are checked for."""
        tensors = [i for i in range(len(case.shapes)) if self.domain(i).tensor]
        return tensors if self.diff is None else [i for i in self.diff if i in tensors]

    def forms(self) -> list[tuple[str, Callable]]:
        """(label, callable) for the function form and every method form."""
        out = [] if self.fn is None else [(f"remat.{self.name}", self.fn)]
        for m in self.methods:
            out.append((f"Tensor.{m}", _method(m)))
        return out

    def __call__(self, *inputs, form: Callable | None = None, seed: int | None = SEED,
                 **params):
        """Run the op (function form unless ``form`` is given) on ``inputs``. A random op is
        reseeded with ``seed`` first (``seed=None``: not reseeded, e.g. inside a checkpoint,
        whose recompute replays the draws itself)."""
        f = form if form is not None else self.forms()[0][1]
        if self.random and seed is not None:
            remat.manual_seed(seed)
        return self.call(f, list(inputs), params)


# Operators are called through the `operator` module (as `a + b` would be), so an unsupported
# operand raises TypeError instead of returning NotImplemented.
_OPERATORS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
    "__truediv__": operator.truediv, "__pow__": operator.pow, "__matmul__": operator.matmul,
    "__neg__": operator.neg, "__getitem__": operator.getitem, "__abs__": operator.abs,
    "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
    "__gt__": operator.gt, "__ge__": operator.ge, "__floordiv__": operator.floordiv,
    "__mod__": operator.mod, "__and__": operator.and_, "__or__": operator.or_,
    "__xor__": operator.xor, "__invert__": operator.invert,
}


def _method(name: str) -> Callable:
    if name in _OPERATORS:
        return _OPERATORS[name]

    def run(x, *rest, **params):
        attr = getattr(x, name)
        return attr(*rest, **params) if callable(attr) else attr

    run.__name__ = f"Tensor.{name}"
    return run


# ------------------------------------------------------------------------------ strategies


def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def one(shape_st=None, **params):
    """Cases of one input of a drawn shape; ``params`` values are strategies."""
    return st.builds(lambda s, p: Case((s,), p), shape_st if shape_st is not None else shapes(),
                     st.fixed_dictionaries(params))


def broadcast(n=2, max_dims=4):
    return hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims,
                                             min_side=1, max_side=4).map(
        lambda bs: Case(tuple(bs.input_shapes)))


@st.composite
def with_axes(draw, min_dims=0, tuple_axes=True):
    """(shape, axis): axis None, an int (either sign), or a tuple of distinct axes."""
    shape = draw(shapes(min_dims=min_dims))
    nd = len(shape)
    kinds = ["int"] if min_dims >= 1 and not tuple_axes else ["none", "int", "tuple"]
    kind = draw(st.sampled_from(kinds))
    if nd == 0 or kind == "none":
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-nd, nd - 1))
    axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    return shape, tuple(a - nd if draw(st.booleans()) else a for a in axes)


def single_reductions():
    """NumPy spellings with ``axis`` None or an int (``max``/``min``: no tuples)."""
    return reductions().filter(lambda c: not isinstance(c.params["axis"], tuple))


def reductions():
    return st.builds(lambda sa, k: Case((sa[0],), {"axis": sa[1], "keepdims": k}),
                     with_axes(), st.booleans())


def _values(r):
    """The values of a ``(values, indices)`` named tuple (``max``/``min`` with a dim), else
    ``r`` itself (without a dim they return the 0-d maximum)."""
    return r.values if isinstance(r, tuple) else r


def _indices(r):
    """The indices of a ``(values, indices)`` named tuple."""
    return r.indices


def np_argmax(x, dim=None, keepdim=False):
    return np.argmax(x, axis=dim, keepdims=keepdim)


def np_argmin(x, dim=None, keepdim=False):
    return np.argmin(x, axis=dim, keepdims=keepdim)


def np_all(x, dim=None, keepdim=False):
    return np.all(x, axis=_np_dim(dim), keepdims=keepdim)


def np_any(x, dim=None, keepdim=False):
    return np.any(x, axis=_np_dim(dim), keepdims=keepdim)


def _np_dim(dim):
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


def torch_reductions(single=False, **params):
    """PyTorch spellings: ``dim`` (an int, or a tuple unless ``single``, or None) and
    ``keepdim``; ``params`` values are strategies."""
    return st.builds(lambda sa, k, p: Case((sa[0],), {"dim": sa[1], "keepdim": k, **p}),
                     with_axes(tuple_axes=not single).filter(
                         lambda sa: not single or not isinstance(sa[1], tuple)),
                     st.booleans(), st.fixed_dictionaries(params))


def along_axis(**params):
    """One input of >= 1 dims and an int ``axis`` of it."""
    return st.builds(lambda sa, p: Case((sa[0],), {"axis": sa[1], **p}),
                     with_axes(min_dims=1, tuple_axes=False), st.fixed_dictionaries(params))


@st.composite
def reshapes(draw):
    shape = draw(shapes())
    perm = draw(st.permutations(range(len(shape))))
    target = [shape[i] for i in perm]
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return Case((shape,), {"shape": tuple(target)})


@st.composite
def transposes(draw):
    shape = draw(shapes(min_dims=1))
    nd = len(shape)
    axis = st.integers(-nd, nd - 1)
    return Case((shape,), {"a": draw(axis), "b": draw(axis)})


@st.composite
def permutes(draw):
    shape = draw(shapes())
    return Case((shape,), {"perm": tuple(draw(st.permutations(range(len(shape)))))})


INDEX_CASES = [
    ((3, 4), (1,)),
    ((3, 4), (slice(1, 3),)),
    ((3, 4), (slice(None), -1)),
    ((5, 3), (slice(None, None, 2), Ellipsis, None)),
    ((2, 3, 4), (-1, slice(None), 0)),
    ((2, 3, 4), (Ellipsis, slice(0, 4, 2))),
    ((4,), (slice(-3, None),)),
    ((2, 3), (None, 1)),
    ((3, 2, 2), (slice(-10, 10), 0)),
]


@st.composite
def joins(draw, same):
    """k >= 1 shapes equal except (for concat) along ``axis``."""
    base = list(draw(shapes(min_dims=1, max_dims=3)))
    nd = len(base)
    axis = draw(st.integers(-nd - 1, nd) if same else st.integers(-nd, nd - 1))
    k = draw(st.integers(1, 4))
    out = []
    for _ in range(k):
        s = list(base)
        if not same:
            s[axis] = draw(st.integers(0 if k > 1 else 1, 4))
        out.append(tuple(s))
    return Case(tuple(out), {"axis": axis})


def _dim_of(draw, nd, extra=0):
    """An int dim of a tensor of ``nd`` dims (either sign; a 0-d tensor takes 0 / -1, and
    ``extra`` widens the range, e.g. 1 for unsqueeze)."""
    n = max(nd, 1) + extra
    return draw(st.integers(-n, n - 1))


@st.composite
def unsqueezes(draw):
    shape = draw(shapes())
    return Case((shape,), {"dim": _dim_of(draw, len(shape) + 1) if shape else
                           draw(st.integers(-1, 0))})


@st.composite
def squeezes(draw):
    shape, dim = draw(with_axes())
    if shape == () and draw(st.booleans()):
        dim = draw(st.sampled_from([0, -1, (0,)]))
    return Case((shape,), {"dim": dim})


@st.composite
def flattens(draw):
    shape = draw(shapes())
    n = max(len(shape), 1)
    a, b = sorted([draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))])
    neg = draw(st.booleans())
    return Case((shape,), {"start_dim": a - n if neg else a, "end_dim": b - n if not neg else b})


@st.composite
def unflattens(draw):
    shape = draw(shapes(min_dims=1))
    d = draw(st.integers(0, len(shape) - 1))
    n = shape[d]
    a = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
    sizes = [a, n // a] if draw(st.booleans()) else [n // a, 1, a]
    if draw(st.booleans()):
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    return Case((shape,), {"dim": d - len(shape) if draw(st.booleans()) else d,
                           "sizes": tuple(sizes)})


@st.composite
def movedims(draw):
    shape = draw(shapes(min_dims=1))
    nd = len(shape)
    k = draw(st.integers(1, nd))
    src = draw(st.lists(st.integers(0, nd - 1), min_size=k, max_size=k, unique=True))
    dst = draw(st.lists(st.integers(-nd, -1), min_size=k, max_size=k, unique=True))
    if k == 1 and draw(st.booleans()):
        return Case((shape,), {"source": src[0], "destination": dst[0]})
    return Case((shape,), {"source": tuple(src), "destination": tuple(dst)})


@st.composite
def narrows(draw):
    shape = draw(shapes(min_dims=1))
    d = draw(st.integers(0, len(shape) - 1))
    n = shape[d]
    start = draw(st.integers(-n, n))
    s = start + n if start < 0 else start
    return Case((shape,), {"dim": d, "start": start, "length": draw(st.integers(0, n - s))})


@st.composite
def flips(draw):
    shape = draw(shapes())
    nd = max(len(shape), 1)
    dims = draw(st.lists(st.integers(0, nd - 1), max_size=nd, unique=True))
    return Case((shape,), {"dims": tuple(d - nd if draw(st.booleans()) else d for d in dims)})


@st.composite
def repeats(draw):
    shape = draw(shapes(max_dims=3, max_side=3))
    k = len(shape) + draw(st.integers(0, 2))
    return Case((shape,), {"sizes": tuple(draw(st.integers(0, 3)) for _ in range(k))})


@st.composite
def unbinds(draw):
    shape = draw(shapes(min_dims=1, max_dims=3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    return Case((shape,), {"dim": dim, "k": draw(st.integers(0, shape[dim] - 1))})


@st.composite
def rolls(draw):
    shape = draw(shapes(min_dims=1, max_dims=3))
    if draw(st.booleans()):
        return Case((shape,), {"shifts": draw(st.integers(-7, 7)), "dims": None})
    dims = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape),
                         unique=True))
    return Case((shape,), {"shifts": tuple(draw(st.integers(-7, 7)) for _ in dims),
                           "dims": tuple(dims)})


@st.composite
def tiles(draw):
    shape = draw(shapes(max_dims=3, max_side=3))
    k = draw(st.integers(0, len(shape) + 1))
    return Case((shape,), {"dims": tuple(draw(st.integers(0, 3)) for _ in range(k))})


@st.composite
def interleaves(draw):
    shape = draw(shapes(max_dims=3, max_side=3))
    nd = len(shape)
    dim = None if nd == 0 or draw(st.booleans()) else draw(st.integers(-nd, nd - 1))
    n = int(np.prod(shape)) if dim is None else shape[dim]
    if n == 0 or draw(st.booleans()):
        return Case((shape,), {"repeats": draw(st.integers(0, 3)), "dim": dim})
    return Case((shape,), {"repeats": tuple(draw(st.integers(0, 3)) for _ in range(n)),
                           "dim": dim})


@st.composite
def meshgrids(draw):
    n = draw(st.integers(1, 3))
    lens = [draw(st.integers(1, 4)) for _ in range(n)]
    return Case(tuple((m,) for m in lens), {"indexing": draw(st.sampled_from(["ij", "xy"]))})


@st.composite
def diagonals(draw):
    shape = draw(shapes(min_dims=2, max_dims=4, max_side=4))
    nd = len(shape)
    d1, d2 = draw(st.lists(st.integers(0, nd - 1), min_size=2, max_size=2, unique=True))
    return Case((shape,), {"offset": draw(st.integers(-4, 4)),
                           "dim1": d1 - nd if draw(st.booleans()) else d1,
                           "dim2": d2 - nd if draw(st.booleans()) else d2})


@st.composite
def diags(draw):
    shape = draw(shapes(min_dims=1, max_dims=2, max_side=4))
    return Case((shape,), {"diagonal": draw(st.integers(-3, 3))})


@st.composite
def expands(draw):
    shape = draw(shapes(max_dims=3, min_side=1, max_side=3).map(
        lambda s: tuple(1 if d == 2 else d for d in s)))
    lead = tuple(draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2))))
    rest = tuple(draw(st.sampled_from([-1, 1, 2, 3])) if d == 1 else
                 draw(st.sampled_from([-1, d])) for d in shape)
    return Case((shape,), {"sizes": lead + rest})


@st.composite
def expand_as_cases(draw):
    """(x, other): other's shape is a broadcast of x's."""
    target = draw(shapes(max_dims=3, max_side=3))
    k = draw(st.integers(0, len(target)))
    x = tuple(1 if draw(st.booleans()) else d for d in target[len(target) - k:])
    return Case((x, target))


def np_expand(x, sizes):
    lead = len(sizes) - x.ndim
    shape = [x.shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes)]
    return np.broadcast_to(x, shape)


@st.composite
def splits(draw, sections):
    shape = draw(shapes(min_dims=1))
    nd = len(shape)
    d = draw(st.integers(-nd, nd - 1))
    n = shape[d]
    if sections:
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
        split = tuple(b - a for a, b in zip([0, *cuts], [*cuts, n]))
    else:
        split = draw(st.integers(1, n + 1))
    count = len(split) if sections else -(-n // split)
    return Case((shape,), {"split": split, "dim": d, "k": draw(st.integers(0, count - 1))})


def np_split(x, split, dim, k):
    n = x.shape[dim]
    sizes = split if isinstance(split, tuple) else [split] * (-(-n // split))
    start = sum(sizes[:k])
    return np.take(x, range(start, min(start + sizes[k], n)), axis=dim)


@st.composite
def chunks(draw):
    shape = draw(shapes(min_dims=1))
    nd = len(shape)
    d = draw(st.integers(-nd, nd - 1))
    c = draw(st.integers(1, 6))
    count = -(-shape[d] // -(-shape[d] // c))
    return Case((shape,), {"chunks": c, "dim": d, "k": draw(st.integers(0, count - 1))})


def np_chunk(x, chunks, dim, k):
    return np_split(x, -(-x.shape[dim] // chunks), dim, k)


def np_squeeze(x, dim):
    if dim is None:
        return np.squeeze(x)
    dims = dim if isinstance(dim, tuple) else (dim,)
    if x.ndim == 0:
        return x
    return np.squeeze(x, axis=tuple(d for d in dims if x.shape[d] == 1))


def np_flatten(x, start_dim, end_dim):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


def np_unflatten(x, dim, sizes):
    d = dim % x.ndim
    return x.reshape(x.shape[:d] + tuple(sizes) + x.shape[d + 1:])


def np_narrow(x, dim, start, length):
    s = start + x.shape[dim] if start < 0 else start
    return np.take(x, range(s, s + length), axis=dim)


def np_flip(x, dims):
    return np.flip(x, axis=dims) if x.ndim else x


@st.composite
def matmuls(draw):
    n, k, m = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2,
                                                   max_side=3)).input_shapes
    kind = draw(st.sampled_from(["mm", "vec_left", "vec_right", "dot"]))
    a = (k,) if kind in ("vec_left", "dot") else (*batch[0], n, k)
    b = (k,) if kind in ("vec_right", "dot") else (*batch[1], k, m)
    return Case((a, b))


@st.composite
def mms(draw, batched=False, add=False):
    """(a, b) for ``mm`` (2-D) or ``bmm`` (3-D, equal batches); with ``add`` an ``input``
    broadcastable to the product first, and ``beta`` / ``alpha``."""
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    batch = (draw(st.integers(1, 3)),) if batched else ()
    shapes = ((*batch, n, k), (*batch, k, m))
    if not add:
        return Case(shapes)
    out = (*batch, n, m)
    lead = draw(st.integers(0, len(out)))
    inp = tuple(1 if draw(st.booleans()) else d for d in out[lead:])
    scale = st.sampled_from([1.0, 0.5, -2.0, 0.0])
    return Case((inp, *shapes), {"beta": draw(scale), "alpha": draw(scale)})


def np_addmm(x, a, b, beta=1.0, alpha=1.0):
    return beta * x + alpha * np.matmul(a, b)


@st.composite
def einsums(draw):
    """A random valid equation over 1-3 operands: letters with fixed extents (a letter may
    repeat within a term: a diagonal), optionally ``...`` (broadcast batch axes, some of
    extent 1), and an explicit output (any subset of the letters, any order) or none."""
    pool = "abcde"
    size = {c: draw(st.integers(1, 3)) for c in pool}
    n_ops = draw(st.integers(1, 3))
    ell = draw(st.booleans())
    batch = draw(shapes(min_dims=0, max_dims=2, max_side=3)) if ell else ()
    terms, shapes_ = [], []
    for _ in range(n_ops):
        letters = draw(st.lists(st.sampled_from(pool), max_size=3))
        term = "".join(letters)
        shape = [size[c] for c in letters]
        if ell and draw(st.booleans()):
            k = draw(st.integers(0, len(batch)))
            b = tuple(1 if draw(st.booleans()) else d for d in batch[len(batch) - k:])
            at = draw(st.integers(0, len(letters)))
            term = term[:at] + "..." + term[at:]
            shape = shape[:at] + list(b) + shape[at:]
        terms.append(term)
        shapes_.append(tuple(shape))
    eq = ",".join(terms)
    if draw(st.booleans()):
        used = sorted(set("".join(terms)) - {"."})
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        if any("..." in t for t in terms):
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        eq += "->" + out
    return Case(tuple(shapes_), {"equation": eq})


def _einsum_call(f, inputs, params):
    return f(params["equation"], *inputs)


def _einsum_list_call(f, inputs, params):
    return f(params["equation"], list(inputs))


EINSUM_EXAMPLES = (
    Case(((2, 3), (3, 4)), {"equation": "ij,jk->ik"}),
    Case(((2, 2, 3), (2, 4, 3)), {"equation": "bqd,bkd->bqk"}),
    Case(((2, 3), (3, 4), (4, 2)), {"equation": "ij,jk,kl->il"}),
    Case(((3, 3),), {"equation": "ii->i"}),
    Case(((3, 3),), {"equation": "ii"}),
    Case(((2, 1, 3), (4, 3)), {"equation": "...ij,kj->...ik"}),
    Case(((2, 3), (4,)), {"equation": "ij,k->kj"}),
    Case(((3, 2, 3), (2,)), {"equation": "iji,j"}),
)


@st.composite
def linears(draw, bias=True):
    batch = draw(shapes(min_dims=0, max_dims=2, max_side=4))
    i, o = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    return Case(((*batch, i), (o, i), (o,)) if bias else ((*batch, i), (o, i)))


def _i64(a):
    return np.asarray(a).astype(np.int64)


@st.composite
def masked_fill_cases(draw):
    """(x shape, mask shape broadcastable to it) and a fill value."""
    shape = draw(shapes(max_dims=3))
    k = draw(st.integers(0, len(shape)))
    mask = tuple(s if draw(st.booleans()) else 1 for s in shape[len(shape) - k:])
    value = draw(st.sampled_from([0.0, -1.5, 2.0, float("inf")]))
    return Case((shape, mask), {"value": value})


def where_cases():
    return broadcast(3, max_dims=3)


def mse_cases():
    return shapes(max_dims=3).map(lambda s: Case((s, s)))


# clamp's constant bounds: both, either, inverted (min > max gives max everywhere), ints.
CLAMP_BOUNDS = [{"min": -0.5, "max": 0.8}, {"min": 0.3}, {"max": -0.2}, {"min": 1.0, "max": -1.0},
                {"min": -1, "max": 1}]


def clamp_cases():
    return st.builds(lambda s, b: Case((s,), b), shapes(), st.sampled_from(CLAMP_BOUNDS))


def lerp_cases():
    weights = st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0, -0.7, 1.5])
    return st.builds(lambda c, w: Case(c.shapes, {"weight": w}), broadcast(), weights)


def ce_cases():
    return st.builds(lambda n, c: Case(((n, c), (n,))), st.integers(1, 6), st.integers(1, 6))


# ------------------------------------------------------------------------------ references


def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def np_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0)))


def np_gelu_tanh(x):
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x**3)))


def np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def np_softplus(x, beta=1.0, threshold=20.0):
    with np.errstate(over="ignore"):
        return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def np_clamp(x, min=None, max=None):
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def np_lerp(start, end, weight):
    return start + weight * (end - start)


def np_prod(x, dim=None, keepdim=False):
    return np.prod(x, axis=dim, keepdims=keepdim)


def np_var(x, dim=None, keepdim=False, correction=1, unbiased=None):
    ddof = correction if unbiased is None else int(unbiased)
    dim = _np_dim(dim)
    n = x.size if dim is None else int(np.prod([x.shape[a] for a in np.atleast_1d(dim)]))
    d = x - x.mean(axis=dim, keepdims=True)
    return (d * d).sum(axis=dim, keepdims=keepdim) / max(n - ddof, 0)


def np_std(x, **kw):
    return np.sqrt(np_var(x, **kw))


def np_logsumexp(x, dim=None, keepdim=False):
    dim = _np_dim(dim)
    m = x.max(axis=dim, keepdims=True) if x.size else 0.0
    s = np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) + m
    return s if keepdim else np.squeeze(s, axis=dim) if dim is not None else s.reshape(())


def np_norm(x, p=2, dim=None, keepdim=False):
    dim = _np_dim(dim)
    a = np.abs(x)
    if p == "fro" or p == 2:
        return np.sqrt((a * a).sum(axis=dim, keepdims=keepdim))
    if p == math.inf:
        return a.max(axis=dim, keepdims=keepdim)
    if p == -math.inf:
        return a.min(axis=dim, keepdims=keepdim)
    return (a ** p).sum(axis=dim, keepdims=keepdim) ** (1.0 / p)


def np_sdpa(q, k, v, is_causal=False, scale=None, dropout_p=0.0):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def sdpa_cases(causal):
    """Queries (B, L, E) or (B, H, L, E), keys (..., S, E), values (..., S, Ev)."""
    return st.builds(
        lambda lead, q_len, s, e, ev, scale: Case(
            (lead + (q_len, e), lead + (s, e), lead + (s, ev)),
            {"is_causal": causal, "scale": scale}),
        st.sampled_from([(1,), (2,), (1, 2), (2, 2)]), st.integers(1, 5), st.integers(1, 5),
        st.integers(1, 4), st.integers(1, 3), st.sampled_from([None, 0.5]))



# ---- recurrent layers: x_proj (T, B, G*H), h0 (B, H), [c0 (B, H)], w_hh (G*H, H), [b_hh]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_recurrent(cell, xp, h, c, w, b, reverse):
    """PyTorch's recurrences in NumPy: the flat ``[output, h_n, (c_n)]``."""
    steps, hidden = xp.shape[0], w.shape[1]
    b = np.zeros(w.shape[0]) if b is None else b
    out = np.zeros(xp.shape[:2] + (hidden,))
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        x, hh = xp[t], h @ w.T + b
        parts = [(x[:, k * hidden:(k + 1) * hidden], hh[:, k * hidden:(k + 1) * hidden])
                 for k in range(w.shape[0] // hidden)]
        if cell == "lstm":
            i, f, g, o = (a + bb for a, bb in parts)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
        elif cell == "gru":
            r = _sigmoid(parts[0][0] + parts[0][1])
            z = _sigmoid(parts[1][0] + parts[1][1])
            n = np.tanh(parts[2][0] + r * parts[2][1])
            h = (1 - z) * n + z * h
        elif cell == "tanh":
            h = np.tanh(x + hh)
        else:
            h = np.maximum(x + hh, 0.0)
        out[t] = h
    pieces = [out, h] + ([c] if cell == "lstm" else [])
    return np.concatenate([p.reshape(-1) for p in pieces])


def _layer_call(f, inputs, params):
    """A layer op's outputs flattened into one tensor (output, h_n and, for an LSTM, c_n)."""
    return remat.cat([t.reshape(-1) for t in f(*inputs, **params)])


def recurrent_cases(gates, lstm=False, bias=True, **params):
    """(x_proj, h0, [c0], w_hh, [b_hh]) of a drawn (T, B, H), ``reverse`` drawn."""
    def build(t, b, h, rev, p):
        shapes = [(t, b, gates * h), (b, h)] + ([(b, h)] if lstm else []) + [(gates * h, h)]
        return Case(tuple(shapes + ([(gates * h,)] if bias else [])), {"reverse": rev, **p})
    return st.builds(build, st.integers(1, 4), st.integers(1, 3), st.integers(1, 4),
                     st.booleans(), st.fixed_dictionaries(params))


def recurrent_examples(gates, lstm=False, **params):
    def case(t, b, h, rev):
        shapes = [(t, b, gates * h), (b, h)] + ([(b, h)] if lstm else [])
        return Case(tuple(shapes + [(gates * h, h), (gates * h,)]), {"reverse": rev, **params})
    return (case(3, 2, 2, False), case(2, 1, 3, True))


def _recurrent_errors(gates, lstm=False, **params):
    states = ((2, 3), (2, 3)) if lstm else ((2, 3),)
    return (Bad("x_proj", ((4, 2, gates * 3 + 1),) + states + ((gates * 3, 3),), S, params),
            Bad("h0", ((4, 2, gates * 3), (3, 3)) + states[1:] + ((gates * 3, 3),), S, params),
            Bad("w_hh", ((4, 2, gates * 3),) + states + ((gates * 3, 2),), S, params),
            Bad("empty", ((0, 2, gates * 3),) + states + ((gates * 3, 3),), S, params))


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def np_rms_norm(x, w=None, normalized_shape=(), eps=None):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    eps = np.finfo(np.float32).eps if eps is None else eps  # PyTorch's float32 default
    y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def np_group_norm(x, w=None, b=None, num_groups=1, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(
        x.shape)
    shape = (c,) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    return y if b is None else y + b.reshape(shape)


def _np_bn_affine(y, w, b):
    shape = (1, y.shape[1]) + (1,) * (y.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    return y if b is None else y + b.reshape(shape)


def np_batch_norm(x, w=None, b=None, eps=1e-5, momentum=0.1):
    """Training mode: each channel by the batch's mean and biased variance."""
    axes = (0,) + tuple(range(2, x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return _np_bn_affine(y, w, b)


def np_batch_norm_eval(x, rm, rv, w=None, b=None, eps=1e-5):
    """Evaluation mode: each channel by the running statistics."""
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    y = (x - rm.reshape(shape)) / np.sqrt(rv.reshape(shape) + eps)
    return _np_bn_affine(y, w, b)


def _bn_train(f, ins, p):
    """``F.batch_norm`` in training mode with fresh running statistics on the input's device
    (each call updates its own; the output does not read them)."""
    x = ins[0]
    c = x.shape[1] if x.ndim > 1 else 1  # a 1-d input is refused by the op
    rm = remat.zeros(c, dtype=x.dtype).to(x.device)
    rv = remat.ones(c, dtype=x.dtype).to(x.device)
    return f(x, rm, rv, ins[1], ins[2], training=True, **p)


def np_cross_entropy(logits, target):
    lp = np_log_softmax(logits, axis=-1)
    return -lp[np.arange(len(target)), np.asarray(target)].mean()


def np_gather(x, idx, dim):
    """PyTorch's gather: the index may be smaller than the input off ``dim``."""
    part = x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))]
    return np.take_along_axis(part, idx, axis=dim)


def np_scatter_add(x, idx, src, dim):
    out = x.copy()
    where = tuple(idx if d == dim else np.indices(idx.shape)[d] for d in range(x.ndim))
    np.add.at(out, where, src)
    return out


def select_cases():
    """index_select: an input, a 1-d index along one of its axes."""
    return st.builds(lambda s, k, d: Case((s, (k,)), {"dim": d % len(s)}),
                     shapes(min_dims=1, max_dims=3), st.integers(0, 6), st.integers(0, 2))


def gather_cases():
    """gather / scatter_add: an index of the input's rank, no larger off ``dim``."""
    def build(s, d, k):
        d = d % len(s)
        ishape = tuple(k if i == d else max(1, n - 1) for i, n in enumerate(s))
        return Case((s, ishape), {"dim": d})
    return st.builds(build, shapes(min_dims=1, max_dims=3), st.integers(0, 2),
                     st.integers(1, 4))


def take_cases():
    """take_along_dim: an index of the input's rank, each other axis the input's or 1."""
    def build(s, d, k, ones):
        d = d % len(s)
        ishape = tuple(k if i == d else (1 if one else n) for i, (n, one) in
                       enumerate(zip(s, ones)))
        return Case((s, ishape), {"dim": d})
    return st.builds(build, shapes(min_dims=1, max_dims=3), st.integers(0, 2),
                     st.integers(1, 4), st.lists(st.booleans(), min_size=3, max_size=3))


def index_add_cases():
    """index_add: k positions along ``dim`` and a source of the input's shape with k there."""
    def build(s, d, k):
        d = d % len(s)
        return Case((s, (k,), tuple(k if i == d else n for i, n in enumerate(s))), {"dim": d})
    return st.builds(build, shapes(min_dims=1, max_dims=3), st.integers(0, 2),
                     st.integers(0, 4))


def np_index_add(x, idx, src, dim, alpha=1.0):
    out = x.copy()
    np.add.at(np.moveaxis(out, dim, 0), idx, alpha * np.moveaxis(src, dim, 0))
    return out


def np_dropout(x, p, training=True):
    """Inverted dropout with the engine's mask for seed SEED (the mask is a function of
    (seed, element index) only, the same for every dtype and device)."""
    if not training or p == 0.0:
        return x
    remat.manual_seed(SEED)
    with remat.no_grad():
        kept = remat.dropout(remat.ones(*x.shape, dtype=remat.float64), p=p).numpy() != 0
    return np.where(kept, x / (1.0 - p), 0.0)


def np_binary_cross_entropy(x, t, reduction="mean"):
    """PyTorch's formula: the logarithms clamped at -100."""
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100.0) + (1 - t) * np.maximum(np.log1p(-x), -100.0))
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


def _engine_uniforms(shape):
    """The float64 uniforms the engine's stream gives for seed SEED (what its samplers
    transform: the contract that makes them replayable)."""
    remat.manual_seed(SEED)
    return remat.rand(*shape, dtype=remat.float64).numpy()


def np_bernoulli(p):
    return (_engine_uniforms(p.shape) < p).astype(p.dtype)


def np_normal(mean, std):
    shape = np.broadcast_shapes(mean.shape, std.shape)
    remat.manual_seed(SEED)
    z = remat.randn(*shape, dtype=remat.float64).numpy()
    return mean + std * z


def np_multinomial(w, num_samples, replacement=True):
    """Inverse-CDF draws with replacement from the engine's uniforms."""
    rows = w.reshape(-1, w.shape[-1])
    u = _engine_uniforms((rows.shape[0], num_samples))
    cdf = np.cumsum(rows, axis=1)
    out = np.stack([np.searchsorted(c, ui * c[-1], side="right") for c, ui in zip(cdf, u)])
    return out.reshape(w.shape[:-1] + (num_samples,)).astype(np.int64)


# ------------------------------------------------------------------------------ row helpers

UNARY_EXAMPLES = (Case(((2, 3),)), Case(((),)))
BINARY_EXAMPLES = (Case(((2, 3), (2, 3))), Case(((2, 1, 3), (4, 1))), Case(((), (3,))))
S = remat.ShapeError


def unary(name, fn, methods, ref, domain=ANY, **kw):
    """An elementwise op of one tensor."""
    errors = (
        Bad("none", (Raw(None),), TypeError, names=None),
        Bad("str", (Raw("x"),), TypeError, names=None),
    )
    return Op(name, fn, methods, ref, domain, one(), UNARY_EXAMPLES,
              errors=errors + kw.pop("errors", ()), **kw)


def binary(name, fn, methods, ref, domains=(ANY, ANY), symbol=None, type_skip=(), **kw):
    """A broadcasting elementwise op of two tensors. ``type_skip``: forms whose non-numeric
    operand check is known broken (see the row)."""
    names = (name,) if symbol is None else (name, symbol)
    errors = (
        Bad("shape", ((2, 3), (4,)), S, names=names),
        Bad("shape_3d", ((3, 1, 2), (4, 3)), S, names=names),
        Bad("str", ((2,), Raw("a")), TypeError, names=None, skip_forms=type_skip),
        Bad("none", ((2,), Raw(None)), TypeError, names=None, skip_forms=type_skip),
    )
    return Op(name, fn, methods, ref, domains, broadcast(), BINARY_EXAMPLES, errors=errors,
              **kw)


@st.composite
def conv_cases(draw, rank, bias=True, same=False):
    """A convolution: ``(x, weight[, bias])`` shapes and stride/padding/dilation/groups."""
    ints = lambda lo, hi: tuple(draw(st.integers(lo, hi)) for _ in range(rank))  # noqa: E731
    n, g, cg, og = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3)),
                    draw(st.integers(1, 2)))
    k, d = ints(1, 3), ints(1, 2)
    s, p = ((1,) * rank, (0,) * rank) if same else (ints(1, 2), ints(0, 2))
    sp = tuple(max(d[i] * (k[i] - 1) + 1 - 2 * p[i], 1) + draw(st.integers(0, 3))
               for i in range(rank))
    shapes = ((n, g * cg) + sp, (g * og, cg) + k) + (((g * og,),) if bias else ())
    return Case(shapes, {"stride": s, "padding": "same" if same else p, "dilation": d,
                         "groups": g})


@st.composite
def pool_cases(draw, rank, kind="max"):
    """A pooling call: one ``(N, C, *spatial)`` or ``(C, *spatial)`` input and its window."""
    ints = lambda lo, hi: tuple(draw(st.integers(lo, hi)) for _ in range(rank))  # noqa: E731
    k, s = ints(1, 3), ints(1, 3)
    d = ints(1, 2) if kind == "max" else (1,) * rank
    p = tuple(draw(st.integers(0, ((k[i] - 1) * d[i] + 1) // 2)) for i in range(rank))
    sp = tuple(max(d[i] * (k[i] - 1) + 1 - 2 * p[i], 1) + draw(st.integers(0, 4))
               for i in range(rank))
    lead = draw(st.sampled_from([(2, 2), (3,), (1, 2)]))
    params = {"kernel_size": k, "stride": s, "padding": p, "ceil_mode": draw(st.booleans())}
    if kind == "max":
        params["dilation"] = d
    else:
        params["count_include_pad"] = draw(st.booleans())
        params["divisor_override"] = draw(st.sampled_from([None, None, 2]))
    return Case((lead + sp,), params)


@st.composite
def adaptive_cases(draw, rank):
    sp = tuple(draw(st.integers(1, 7)) for _ in range(rank))
    out = tuple(draw(st.integers(1, 8)) for _ in range(rank))
    return Case((draw(st.sampled_from([(2, 2), (3,)])) + sp,), {"output_size": out})


@st.composite
def pad_cases(draw, mode):
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    j = draw(st.integers(1, len(shape)))
    amounts = []
    for a in range(j):
        n = shape[len(shape) - 1 - a]
        lo, hi = {"constant": (-(n - 1) // 2, 2), "reflect": (0, n - 1), "replicate": (0, 2),
                  "circular": (0, n)}[mode]
        amounts += [draw(st.integers(lo, hi)), draw(st.integers(lo, hi))]
    params = {"pad": tuple(amounts), "mode": mode}
    if mode == "constant":
        params["value"] = draw(st.sampled_from([0.0, 1.5]))
    return Case((shape,), params)


def pad_row(mode, examples):
    # Constant padding has its own CUDA kernel; the other modes are index_select on CUDA.
    return Op(f"pad_{mode}", remat.pad, (), np_pad, ANY, pad_cases(mode), examples, op="pad",
              errors=(Bad("odd", ((2, 3),), ValueError, {"pad": (1,), "mode": mode}),
                      Bad("long", ((3,),), ValueError, {"pad": (1, 1, 1, 1), "mode": mode})))


def conv_errors():
    return (Bad("channels", ((1, 3, 4, 4), (2, 2, 3, 3)), S),
            Bad("kernel_too_big", ((1, 1, 2, 2), (1, 1, 3, 3)), S),
            Bad("groups", ((1, 4, 4, 4), (3, 2, 1, 1)), S, {"groups": 2}),
            Bad("weight_rank", ((1, 1, 4, 4, 4), (1, 1, 3, 3)), S),
            Bad("bias", ((1, 1, 4, 4), (2, 1, 3, 3), (3,)), S),
            Bad("int_input", (Raw(np.ones((1, 1, 4, 4), np.int64)), (1, 1, 3, 3)),
                remat.DTypeError),
            Bad("stride_zero", ((1, 1, 4, 4), (1, 1, 3, 3)), ValueError, {"stride": 0}))


def pool_errors(rank):
    sp = (4,) * rank
    return (Bad("padding", ((1, 1) + sp,), ValueError, {"kernel_size": 2, "padding": 2}),
            Bad("rank", ((4,) * max(rank - 1, 1),), S, {"kernel_size": 1}),
            Bad("too_small", ((1, 1) + (1,) * rank,), S, {"kernel_size": 2}))


def _seq(f, inputs, params):
    return f(list(inputs), **params)


# ------------------------------------------------------------------------------ the registry

# In-place writes (recorded in the graph when the written tensor is part of one): each row
# writes into ``ins[0].clone()`` (a tensor an op made, so a graph tensor when input 0 requires
# grad) and returns it; gradients reach input 0 through the write and the operands.
def into(n=2, max_dims=3):
    """Cases whose first shape is the broadcast of all: the operands broadcast *to* the
    written tensor, never the other way."""
    return hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims,
                                             min_side=1, max_side=4).map(
        lambda bs: Case((bs.result_shape, *bs.input_shapes[1:])))


INTO_EXAMPLES = (Case(((2, 3), (2, 3))), Case(((2, 4, 3), (4, 1))), Case(((3,), ())))


def written(write):
    """``call`` of an in-place row: ``write(f, y, operands, params)`` on a clone ``y`` of
    input 0, then ``y``."""
    def call(f, ins, p):
        y = ins[0].clone()
        write(f, y, ins[1:], p)
        return y
    return call


def _setitem(f, y, rest, p):
    f(y, p["index"], rest[0])


def _view_iadd(f, y, rest, p):
    v = y[p["index"]]
    v += rest[0]  # the write lands in y through the view
    y[p["index"]] = v  # and Python's `y[i] += v` assigns the view back (a no-op copy)


def np_assigned(x, v, index):
    out = x.copy()
    out[index] = v
    return out


def np_added_at(x, v, index):
    out = x.copy()
    out[index] += v
    return out


SETITEM_EXAMPLES = (Case(((3, 4), (4,)), {"index": 1}),
                    Case(((3, 4), (3, 2)), {"index": (slice(None), slice(1, 3))}),
                    Case(((4, 3), (2, 3)), {"index": np.array([2, 0])}),
                    Case(((2, 3), ()), {"index": (slice(None), 0)}))


def np_sorted(x, dim=-1, descending=False):
    out = np.sort(x, axis=dim, kind="stable")
    return np.flip(out, axis=dim) if descending else out


def np_argsorted(x, dim=-1, descending=False):
    return np.argsort(-x if descending else x, axis=dim, kind="stable")


def np_topk(x, k, dim=-1, largest=True):
    return np.take(np_sorted(x, dim, largest), np.arange(k), axis=dim)


@st.composite
def sort_cases(draw, topk=False):
    """A shape of 1 to 3 axes, an axis of it (either sign) and a direction (for topk a k)."""
    s = draw(shapes(min_dims=1, max_dims=3))
    d = draw(st.integers(-len(s), len(s) - 1))
    if topk:
        return Case((s,), {"k": draw(st.integers(0, s[d])), "dim": d,
                           "largest": draw(st.booleans())})
    return Case((s,), {"dim": d, "descending": draw(st.booleans())})


def ordering_rows() -> list[Op]:
    """sort (values), argsort and topk (values): distinct inputs, so the order is unique."""
    return [
        Op("sort", remat.sort, ("sort",), np_sorted, DISTINCT, sort_cases(),
           (Case(((3, 4),), {"dim": 1, "descending": False}),
            Case(((4, 3),), {"dim": 0, "descending": True})),
           call=lambda f, ins, p: f(ins[0], **p).values,
           errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),)),
        Op("argsort", remat.argsort, ("argsort",), np_argsorted, DISTINCT, sort_cases(),
           (Case(((3, 4),), {"dim": -1, "descending": True}),), diff=(), out_dtype=np.int64),
        Op("topk", remat.topk, ("topk",), np_topk, DISTINCT, sort_cases(topk=True),
           (Case(((3, 5),), {"k": 2, "dim": 1, "largest": True}),
            Case(((4, 2),), {"k": 3, "dim": 0, "largest": False})),
           call=lambda f, ins, p: f(ins[0], **p).values,
           errors=(Bad("k", ((2, 3),), ValueError, {"k": 4, "dim": 1, "largest": True}),)),
    ]


def inplace_rows() -> list[Op]:
    """The in-place methods and operators, and assignment, as registry rows."""
    bad = (Bad("shape", ((2, 3), (4,)), S),)
    grow = (Bad("grows", ((3,), (2, 3)), S),)
    rows = [
        Op("add_", None, ("add_", "__iadd__"), lambda x, y: x + y, ANY, into(), INTO_EXAMPLES,
           call=written(lambda f, y, r, p: f(y, r[0])), errors=bad + grow),
        Op("add_alpha", None, ("add_",), lambda x, y, alpha: x + alpha * y, ANY,
           into().map(lambda c: Case(c.shapes, {"alpha": -0.5})),
           (Case(((2, 3), (3,)), {"alpha": -0.5}), Case(((2, 3), ()), {"alpha": 2.0})),
           call=written(lambda f, y, r, p: f(y, r[0], **p)), op="add_"),
        Op("sub_", None, ("sub_", "__isub__"), lambda x, y: x - y, ANY, into(), INTO_EXAMPLES,
           call=written(lambda f, y, r, p: f(y, r[0])), errors=bad),
        Op("mul_", None, ("mul_", "__imul__"), lambda x, y: x * y, ANY, into(), INTO_EXAMPLES,
           call=written(lambda f, y, r, p: f(y, r[0])), errors=bad),
        Op("div_", None, ("div_", "__itruediv__"), lambda x, y: x / y, (ANY, NONZERO), into(),
           INTO_EXAMPLES, call=written(lambda f, y, r, p: f(y, r[0])), errors=bad),
        Op("clamp_", None, ("clamp_",), np_clamp, ANY, clamp_cases(),
           tuple(Case(((2, 3),), b) for b in CLAMP_BOUNDS[:3]),
           call=written(lambda f, y, r, p: f(y, **p))),
        Op("masked_fill_", None, ("masked_fill_",),
           lambda x, m, value: np.where(m != 0, value, x), (ANY, MASK),
           into().map(lambda c: Case(c.shapes, {"value": 0.5})),
           (Case(((2, 3), (2, 3)), {"value": 0.5}), Case(((4, 1, 3), (1, 3)), {"value": 0.0})),
           diff=(0,), call=written(lambda f, y, r, p: f(y, r[0] != 0, p["value"]))),
        Op("copy_", None, ("copy_",), lambda x, y: np.broadcast_to(y, x.shape).copy(), ANY,
           into(), INTO_EXAMPLES, call=written(lambda f, y, r, p: f(y, r[0])), errors=grow),
        Op("setitem", None, ("__setitem__",), np_assigned, ANY,
           st.sampled_from(SETITEM_EXAMPLES), SETITEM_EXAMPLES, call=written(_setitem),
           errors=(Bad("value_shape", ((3, 4), (5,)), S, {"index": 0}),)),
        Op("view_iadd", None, ("__getitem__",), np_added_at, ANY,
           st.sampled_from(SETITEM_EXAMPLES[:2] + SETITEM_EXAMPLES[3:]),
           SETITEM_EXAMPLES[:2] + SETITEM_EXAMPLES[3:],
           call=written(lambda f, y, r, p: _view_iadd(f, y, r, p)), op="add_"),
        # In a graph the write is recorded over the tensor's own storage (the backward reads
        # the result); a negative slope computes from a clone of the overwritten input.
        Op("relu_", None, ("relu_",), lambda x: np.maximum(x, 0.0), NONZERO, one(),
           (Case(((2, 3),)), Case(((4, 1, 3),))), call=written(lambda f, y, r, p: f(y))),
        Op("leaky_relu_", lambda x, negative_slope=0.01: F.leaky_relu_(x, negative_slope), (),
           lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x), NONZERO,
           one(negative_slope=st.sampled_from([0.01, 0.2, 0.0, -0.5, 1.5])),
           (Case(((2, 3),)), Case(((3,),), {"negative_slope": 0.2}),
            Case(((2, 2),), {"negative_slope": -0.5}), Case(((2, 2),), {"negative_slope": 0.0})),
           call=written(lambda f, y, r, p: f(y, **p))),
    ]
    return rows


OPS: list[Op] = [
    # ---- unary math
    unary("neg", remat.neg, ("neg", "__neg__"), np.negative),
    unary("exp", remat.exp, ("exp",), np.exp),
    unary("log", remat.log, ("log",), np.log, POS),
    unary("sqrt", remat.sqrt, ("sqrt",), np.sqrt, POS),
    unary("sin", remat.sin, ("sin",), np.sin),
    unary("cos", remat.cos, ("cos",), np.cos),
    unary("tan", remat.tan, ("tan",), np.tan, Domain("tan", _uniform(-1.2, 1.2))),  # poles: ±pi/2
    unary("abs", remat.abs, ("abs", "__abs__"), np.abs, NONZERO),
    unary("erf", remat.erf, ("erf",), np_erf),
    unary("rsqrt", remat.rsqrt, ("rsqrt",), lambda x: 1.0 / np.sqrt(x), POS),
    unary("square", remat.square, ("square",), np.square),
    unary("log1p", remat.log1p, ("log1p",), np.log1p, ABOVE_M1),
    unary("expm1", remat.expm1, ("expm1",), np.expm1),
    unary("asin", remat.asin, ("asin",), np.arcsin, UNIT),
    unary("acos", remat.acos, ("acos",), np.arccos, UNIT),
    unary("atan", remat.atan, ("atan",), np.arctan),
    unary("sinh", remat.sinh, ("sinh",), np.sinh),
    unary("cosh", remat.cosh, ("cosh",), np.cosh),
    unary("asinh", remat.asinh, ("asinh",), np.arcsinh),
    unary("acosh", remat.acosh, ("acosh",), np.arccosh, ABOVE_1),
    unary("atanh", remat.atanh, ("atanh",), np.arctanh, UNIT),
    unary("log2", remat.log2, ("log2",), np.log2, POS),
    unary("log10", remat.log10, ("log10",), np.log10, POS),
    unary("exp2", remat.exp2, ("exp2",), np.exp2),
    unary("reciprocal", remat.reciprocal, ("reciprocal",), np.reciprocal, NONZERO),
    # Piecewise constant (zero gradients; finite differences agree away from the jumps).
    unary("sign", remat.sign, ("sign",), np.sign, NONZERO),
    unary("floor", remat.floor, ("floor",), np.floor),
    unary("ceil", remat.ceil, ("ceil",), np.ceil),
    unary("trunc", remat.trunc, ("trunc",), np.trunc),
    # Gradient 1 everywhere (finite differences agree away from the jumps at the integers).
    unary("frac", remat.frac, ("frac",), lambda x: x - np.trunc(x)),
    unary("round", remat.round, ("round",), np.round),  # both round half to even
    # ---- activations
    unary("tanh", remat.tanh, ("tanh",), np.tanh),
    unary("sigmoid", remat.sigmoid, ("sigmoid",), np_sigmoid),
    unary("relu", remat.relu, ("relu",), lambda x: np.maximum(x, 0.0), NONZERO),
    unary("gelu", remat.gelu, ("gelu",), np_gelu, tol32=(1e-5, 1e-6), tol64=(1e-10, 1e-12),
          errors=(Bad("mode", ((2,),), ValueError, {"approximate": "fast"}),)),
    unary("gelu_tanh", lambda x: remat.gelu(x, approximate="tanh"), (), np_gelu_tanh,
          op="gelu", tol32=(1e-5, 1e-6), tol64=(1e-10, 1e-12)),
    unary("silu", remat.silu, ("silu",), lambda x: x * np_sigmoid(x)),
    # beta * x crosses the threshold at 0.75 (beta 2, threshold 1.5) and 2 (beta 0.5, 1).
    Op("softplus", remat.softplus, (), np_softplus, ANY,
       one(beta=st.sampled_from([1.0, 2.0, 0.5]), threshold=st.sampled_from([20.0, 1.0, 1.5])),
       (Case(((2, 3),)), Case(((3, 4),), {"beta": 2.0, "threshold": 1.5}),
        Case(((2, 2),), {"beta": 0.5})),
       errors=(Bad("beta_str", ((2,),), TypeError, {"beta": "x"}, names=None),
               Bad("threshold_none", ((2,),), TypeError, {"threshold": None}, names=None))),
    Op("leaky_relu", remat.leaky_relu, (),
       lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x), NONZERO,
       one(negative_slope=st.sampled_from([0.01, 0.2, -0.5, 1.5])),
       (Case(((2, 3),)), Case(((3,),), {"negative_slope": 0.2})),
       errors=(Bad("slope_str", ((2,),), TypeError, {"negative_slope": "x"}, names=None),)),
    # ---- clamping, elementwise extrema, interpolation (inputs away from kinks and ties)
    Op("clamp", remat.clamp, ("clamp",), np_clamp, ANY, clamp_cases(),
       tuple(Case(((2, 3),), b) for b in CLAMP_BOUNDS[:4]),
       errors=(Bad("no_bounds", ((2,),), ValueError), Bad("none_bounds", ((2,),), ValueError,
                                                           {"min": None, "max": None}),
               Bad("min_str", ((2,),), TypeError, {"min": "a"}, names=None),
               Bad("max_shape", ((2, 3),), S, {"max": np.zeros(4)}),
               Bad("min_shape", ((2, 3),), S, {"min": np.zeros((3, 1)), "max": 1.0}))),
    Op("clip", remat.clip, ("clip",), np_clamp, ANY, clamp_cases(),
       (Case(((2, 3),), {"min": -0.5, "max": 0.8}),), op="clamp",
       errors=(Bad("no_bounds", ((2,),), ValueError),)),
    Op("clamp_tensor", remat.clamp, ("clamp", "clip"), np_clamp, ANY, broadcast(3, max_dims=3),
       (Case(((2, 3), (3,), (2, 1))), Case(((3,), (), ()))),
       call=lambda f, ins, p: f(ins[0], min=ins[1], max=ins[2]), op="clamp",
       errors=(Bad("shape", ((2, 3), (4,), (1,)), S),)),
    Op("clamp_tensor_min", remat.clamp, ("clamp",), np.maximum, ANY, broadcast(),
       BINARY_EXAMPLES, call=lambda f, ins, p: f(ins[0], min=ins[1]), op="clamp"),
    Op("clamp_tensor_max", remat.clamp, ("clamp",), np.minimum, ANY, broadcast(),
       BINARY_EXAMPLES, call=lambda f, ins, p: f(ins[0], max=ins[1]), op="clamp"),
    binary("maximum", remat.maximum, ("maximum",), np.maximum),
    binary("minimum", remat.minimum, ("minimum",), np.minimum),
    # Nonzero operands: away from the origin and the branch cut (b < 0, a = 0).
    binary("atan2", remat.atan2, ("atan2",), np.arctan2, (NONZERO, NONZERO)),
    Op("lerp", remat.lerp, ("lerp",), np_lerp, ANY, lerp_cases(),
       tuple(Case(c.shapes, {"weight": w}) for c, w in zip(BINARY_EXAMPLES, (0.3, 0.8, 1.0))),
       call=lambda f, ins, p: f(ins[0], ins[1], p["weight"]),
       errors=(Bad("shape", ((2, 3), (4,)), S, {"weight": 0.5}),
               Bad("weight_str", ((2,), (2,)), TypeError, {"weight": "a"}, names=None))),
    Op("lerp_tensor", remat.lerp, ("lerp",), np_lerp, ANY, broadcast(3, max_dims=3),
       (Case(((2, 3), (3,), (2, 1))), Case(((), (2,), ()))), op="lerp",
       errors=(Bad("shape", ((2, 3), (3,), (4,)), S),)),
    # ---- binary arithmetic (Tensor operators are the method forms)
    binary("add", remat.add, ("__add__",), np.add, symbol="+"),
    binary("sub", remat.sub, ("__sub__",), np.subtract, symbol="-"),
    binary("mul", remat.mul, ("__mul__",), np.multiply, symbol="*"),
    binary("div", remat.div, ("__truediv__",), np.divide, (ANY, NONZERO), symbol="/"),
    # Known binding bug: Tensor.pow("a") / Tensor.matmul("x") return NotImplemented instead of
    # raising TypeError, so those two method forms are left out of the non-numeric cases.
    binary("pow", remat.pow, ("pow", "__pow__"), np.power, (POS, ANY), symbol="**",
           type_skip=("Tensor.pow",)),
    Op("pow_scalar", remat.pow, ("pow", "__pow__"), lambda x, exponent: np.power(x, exponent),
       POS, one(exponent=st.sampled_from([2, 3, 0.5, -1.5, 1.7, 0.0])),
       (Case(((2, 3),), {"exponent": 2}), Case(((2, 3),), {"exponent": -1.5}),
        Case(((3,),), {"exponent": 1.7})),
       call=lambda f, ins, p: f(ins[0], p["exponent"]), op="pow"),
    # ---- floor division and remainder (Python's sign conventions; floats here, integers in
    # test_compare_logical.py). floor_divide is piecewise constant and never recorded.
    binary("floor_divide", remat.floor_divide, ("floor_divide", "__floordiv__"),
           np.floor_divide, (ANY, NONZERO), symbol="//", diff=()),
    binary("remainder", remat.remainder, ("remainder", "__mod__"), np.remainder,
           (ANY, NONZERO), symbol="%"),
    # ---- comparisons, logical and bitwise ops, float classes: bool results, never recorded.
    # `t == "a"` / `t != None` are NotImplemented (Python then compares identities: False/True,
    # as for any object), so the non-numeric cases skip the == and != operator forms.
    *[binary(n, getattr(remat, n), (n, dunder), ref, symbol=sym, diff=(),
             out_dtype=np.bool_, type_skip=skip)
      for n, dunder, ref, sym, skip in (
          ("eq", "__eq__", np.equal, "==", ("Tensor.__eq__",)),
          ("ne", "__ne__", np.not_equal, "!=", ("Tensor.__ne__",)),
          ("lt", "__lt__", np.less, "<", ()),
          ("le", "__le__", np.less_equal, "<=", ()),
          ("gt", "__gt__", np.greater, ">", ()),
          ("ge", "__ge__", np.greater_equal, ">=", ()))],
    *[binary(n, getattr(remat, n), (n,), getattr(np, n), diff=(),
             out_dtype=np.bool_) for n in ("logical_and", "logical_or", "logical_xor")],
    # Closeness: PyTorch's formula is NumPy's (|a - b| <= atol + rtol * |b|), same defaults.
    binary("isclose", remat.isclose, ("isclose",), np.isclose, diff=(), out_dtype=np.bool_),
    # Bitwise ops take integers (the sampled values truncate to -1, 0, 1).
    *[binary(n, getattr(remat, n), (n, dunder), ref, symbol=sym, diff=(),
             dtypes=(np.int64, np.int32))
      for n, dunder, ref, sym in (
          ("bitwise_and", "__and__", lambda a, b: np.bitwise_and(_i64(a), _i64(b)), "&"),
          ("bitwise_or", "__or__", lambda a, b: np.bitwise_or(_i64(a), _i64(b)), "|"),
          ("bitwise_xor", "__xor__", lambda a, b: np.bitwise_xor(_i64(a), _i64(b)), "^"))],
    unary("bitwise_not", remat.bitwise_not, ("bitwise_not", "__invert__"),
          lambda x: np.invert(_i64(x)), diff=(), dtypes=(np.int64, np.int32)),
    *[unary(n, getattr(remat, n), (n,), getattr(np, n), diff=(),
            out_dtype=np.bool_) for n in ("logical_not", "isnan", "isinf", "isfinite")],
    # The mask is drawn as 0/1 and passed as a bool tensor (`m != 0`).
    Op("masked_fill", remat.masked_fill, ("masked_fill",),
       lambda x, m, value: np.where(m != 0, value, x), (ANY, MASK), masked_fill_cases(),
       (Case(((2, 3), (2, 3)), {"value": 0.5}), Case(((2, 3), (3,)), {"value": -1.0}),
        Case(((4, 1, 3), (1, 3)), {"value": 0.0})),
       diff=(0,), call=lambda f, ins, p: f(ins[0], ins[1] != 0, p["value"])),
    # ---- linear algebra
    Op("matmul", remat.matmul, ("matmul", "__matmul__"), np.matmul, ANY, matmuls(),
       (Case(((2, 3), (3, 4))), Case(((3,), (3,))), Case(((3,), (2, 3, 2))),
        Case(((2, 2, 3), (3,))), Case(((2, 3), (2, 3, 4))), Case(((2, 1, 2, 3), (3, 3, 2)))),
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("inner", ((2, 3), (4, 5)), S, names=("matmul", "@")),
               Bad("batch", ((2, 2, 3), (3, 3, 4)), S, names=("matmul", "@")),
               Bad("vec_mat", ((3,), (4, 5)), S, names=("matmul", "@")),
               Bad("0d", ((), (3,)), S, names=("matmul", "@")),
               Bad("str", ((2, 2), Raw("x")), TypeError, names=None,
                   skip_forms=("Tensor.matmul",)))),
    Op("linear", remat.linear, (), lambda x, w, b: x @ w.T + b, ANY, linears(),
       (Case(((4, 3), (2, 3), (2,))), Case(((2, 2, 3), (4, 3), (4,))), Case(((3,), (2, 3), (2,)))),
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("in_features", ((4, 3), (2, 5), (2,)), S),
               Bad("bias", ((4, 3), (2, 3), (3,)), S))),
    Op("linear_nobias", remat.linear, (), lambda x, w: x @ w.T, ANY, linears(bias=False),
       (Case(((4, 3), (2, 3))),), op="linear", tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("weight_1d", ((4, 3), (3,)), S),)),
    Op("mm", remat.mm, ("mm",), np.matmul, ANY, mms(),
       (Case(((2, 3), (3, 4))), Case(((1, 3), (3, 1)))), tol32=(1e-4, 1e-5),
       tol64=(1e-10, 1e-12),
       errors=(Bad("rank", ((2, 3, 4), (4, 5)), S), Bad("vec", ((3,), (3, 2)), S),
               Bad("inner", ((2, 3), (4, 5)), S), Bad("str", ((2, 2), Raw("x")), TypeError,
                                                        names=None))),
    Op("bmm", remat.bmm, ("bmm",), np.matmul, ANY, mms(batched=True),
       (Case(((2, 2, 3), (2, 3, 4))), Case(((1, 3, 2), (1, 2, 1)))), tol32=(1e-4, 1e-5),
       tol64=(1e-10, 1e-12),
       errors=(Bad("rank", ((2, 3), (3, 4)), S), Bad("batch", ((2, 2, 3), (3, 3, 4)), S),
               Bad("inner", ((2, 2, 3), (2, 4, 5)), S))),
    Op("addmm", remat.addmm, ("addmm",), np_addmm, ANY, mms(add=True),
       (Case(((2, 4), (2, 3), (3, 4))), Case(((4,), (2, 3), (3, 4)), {"beta": 0.5, "alpha": -2.0}),
        Case(((2, 1), (2, 3), (3, 4)), {"beta": 0.0, "alpha": 0.5}), Case(((), (1, 2), (2, 3)))),
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("rank", ((2,), (2, 3, 4), (4, 2)), S), Bad("inner", ((2, 2), (2, 3), (2, 2)), S),
               Bad("input", ((3, 3), (2, 3), (3, 4)), S),
               Bad("beta_str", ((2, 2), (2, 3), (3, 2)), TypeError, {"beta": "x"},
                   names=None))),
    Op("baddbmm", remat.baddbmm, ("baddbmm",), np_addmm, ANY, mms(batched=True, add=True),
       (Case(((2, 2, 4), (2, 2, 3), (2, 3, 4))),
        Case(((2, 1), (3, 2, 3), (3, 3, 1)), {"beta": -1.0, "alpha": 0.5}),
        Case(((4,), (1, 2, 2), (1, 2, 4)), {"beta": 0.0})),
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("rank", ((2, 2), (2, 3), (3, 2)), S),
               Bad("batch", ((2, 2), (2, 2, 3), (3, 3, 2)), S),
               Bad("input", ((3, 2, 2), (2, 2, 3), (2, 3, 2)), S))),
    Op("outer", remat.outer, ("outer",), np.outer, ANY,
       st.builds(lambda n, m: Case(((n,), (m,))), st.integers(1, 5), st.integers(1, 5)),
       (Case(((3,), (4,))), Case(((1,), (2,)))),
       errors=(Bad("rank", ((2, 3), (3,)), S), Bad("0d", ((), (3,)), S))),
    Op("einsum", remat.einsum, (), lambda *xs, equation: np.einsum(equation, *xs), ANY,
       einsums(), EINSUM_EXAMPLES, call=_einsum_call, tol32=(1e-4, 1e-5),
       tol64=(1e-10, 1e-12),
       errors=(Bad("terms", ((2, 3),), S, {"equation": "ij,jk->ik"}),
               Bad("output", ((2, 3), (3, 4)), S, {"equation": "ij,jk->il"}),
               Bad("extent", ((2, 3), (4, 5)), S, {"equation": "ij,jk->ik"}),
               Bad("char", ((2, 3),), S, {"equation": "i1"}),
               Bad("rank", ((2, 3),), S, {"equation": "ijk->i"}),
               Bad("diagonal", ((2, 3),), S, {"equation": "ii->i"}),
               Bad("operand", ((2, 3), Raw("x")), TypeError, {"equation": "ij,jk"},
                   names=None))),
    Op("einsum_list", remat.einsum, (), lambda *xs, equation: np.einsum(equation, *xs), ANY,
       einsums(), EINSUM_EXAMPLES[:3], call=_einsum_list_call, op="einsum",
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12)),
    # ---- recurrent layers (one layer and direction over a whole sequence)
    Op("lstm_layer", remat.lstm_layer, (),
       lambda xp, h, c, w, b=None, reverse=False: np_recurrent("lstm", xp, h, c, w, b, reverse),
       ANY, recurrent_cases(4, lstm=True), recurrent_examples(4, lstm=True), call=_layer_call,
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12), errors=_recurrent_errors(4, lstm=True)),
    Op("lstm_layer_nobias", remat.lstm_layer, (),
       lambda xp, h, c, w, reverse=False: np_recurrent("lstm", xp, h, c, w, None, reverse),
       ANY, recurrent_cases(4, lstm=True, bias=False),
       (Case(((2, 2, 8), (2, 2), (2, 2), (8, 2)), {"reverse": True}),), call=_layer_call,
       op="lstm_layer", tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12)),
    Op("gru_layer", remat.gru_layer, (),
       lambda xp, h, w, b=None, reverse=False: np_recurrent("gru", xp, h, None, w, b, reverse),
       ANY, recurrent_cases(3), recurrent_examples(3), call=_layer_call, tol32=(1e-4, 1e-5),
       tol64=(1e-10, 1e-12), errors=_recurrent_errors(3)),
    Op("rnn_layer", remat.rnn_layer, (),
       lambda xp, h, w, b=None, reverse=False, nonlinearity="tanh":
       np_recurrent(nonlinearity, xp, h, None, w, b, reverse),
       ANY, recurrent_cases(1, nonlinearity=st.just("tanh")),
       recurrent_examples(1, nonlinearity="tanh"), call=_layer_call, tol32=(1e-4, 1e-5),
       tol64=(1e-10, 1e-12),
       errors=_recurrent_errors(1) + (Bad("nonlinearity", ((4, 2, 3), (2, 3), (3, 3)),
                                          ValueError, {"nonlinearity": "gelu"}),)),
    Op("rnn_layer_relu", remat.rnn_layer, (),
       lambda xp, h, w, b=None, reverse=False, nonlinearity="relu":
       np_recurrent(nonlinearity, xp, h, None, w, b, reverse),
       NONZERO, recurrent_cases(1, nonlinearity=st.just("relu")),
       recurrent_examples(1, nonlinearity="relu"), call=_layer_call, op="rnn_layer",
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12)),
    # ---- attention: (batch, L, E) queries, (batch, S, E) keys, (batch, S, Ev) values
    Op("scaled_dot_product_attention", F.scaled_dot_product_attention, (), np_sdpa, ANY,
       sdpa_cases(causal=False),
       (Case(((2, 3, 4), (2, 5, 4), (2, 5, 3)), {"is_causal": False, "scale": None}),
        Case(((1, 2, 4, 2), (1, 2, 3, 2), (1, 2, 3, 2)), {"is_causal": False, "scale": 0.5})),
       tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("last_dim", ((1, 2, 4), (1, 3, 3), (1, 3, 4)), S),
               Bad("keys_values", ((1, 2, 4), (1, 3, 4), (1, 2, 4)), S),
               Bad("dropout_p", ((1, 2, 4), (1, 3, 4), (1, 3, 4)), ValueError,
                   {"dropout_p": 2.0}))),
    # causal: fused scaling, mask and softmax (rows see keys j <= i, also when L != S)
    Op("sdpa_causal", F.scaled_dot_product_attention, (), np_sdpa, ANY,
       sdpa_cases(causal=True),
       (Case(((2, 4, 3), (2, 4, 3), (2, 4, 2)), {"is_causal": True, "scale": None}),
        Case(((1, 2, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3)), {"is_causal": True, "scale": 0.7}),
        Case(((1, 5, 2), (1, 2, 2), (1, 2, 2)), {"is_causal": True, "scale": None})),
       op="scaled_dot_product_attention", tol32=(1e-4, 1e-5), tol64=(1e-10, 1e-12),
       errors=(Bad("mask_and_causal", ((1, 2, 4), (1, 2, 4), (1, 2, 4)), ValueError,
                   {"is_causal": True, "attn_mask": remat.ones(2, 2, dtype=remat.bool_)},
                   names=("is_causal",)),)),
    # ---- softmax family, normalisation, dropout
    Op("softmax", remat.softmax, ("softmax",), np_softmax, ANY, along_axis(),
       (Case(((3, 4),), {"axis": -1}), Case(((2, 3, 4),), {"axis": 1}), Case(((5,),), {"axis": 0})),
       errors=(Bad("axis", ((2, 3),), S, {"axis": 2}),)),
    Op("log_softmax", remat.log_softmax, ("log_softmax",), np_log_softmax, ANY, along_axis(),
       (Case(((3, 4),), {"axis": -1}), Case(((2, 3, 4),), {"axis": 0})),
       errors=(Bad("axis", ((2, 3),), S, {"axis": -3}),)),
    Op("layer_norm", remat.layer_norm, (), np_layer_norm, ANY,
       one(shapes(min_dims=1, max_dims=3, max_side=6), eps=st.sampled_from([1e-5, 1e-3])),
       (Case(((3, 5),), {"eps": 1e-5}), Case(((2, 2, 4),), {"eps": 1e-3})),
       tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6),
       errors=(Bad("0d", ((),), S), Bad("eps", ((2, 3),), ValueError, {"eps": -1.0}))),
    Op("layer_norm_affine", remat.layer_norm, (),
       lambda x, w, b, eps: np_layer_norm(x, w, b, eps), ANY,
       st.builds(lambda s, eps: Case((s, s[-1:], s[-1:]), {"eps": eps}),
                 shapes(min_dims=1, max_dims=3, max_side=6), st.sampled_from([1e-5, 1e-3])),
       (Case(((3, 5), (5,), (5,)), {"eps": 1e-5}), Case(((2, 2, 4), (4,), (4,)), {"eps": 1e-3})),
       call=lambda f, ins, p: f(ins[0], weight=ins[1], bias=ins[2], **p), op="layer_norm",
       tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6),
       errors=(Bad("weight", ((2, 3), (2,), (3,)), S, {"eps": 1e-5}),
               Bad("bias", ((2, 3), (3,), (3, 1)), S, {"eps": 1e-5}),
               Bad("weight_type", ((2, 3), Raw("w"), (3,)), TypeError, {"eps": 1e-5},
                   names=None))),
    Op("layer_norm_weight", remat.layer_norm, (), lambda x, w: np_layer_norm(x, w), ANY,
       shapes(min_dims=1, max_dims=3, max_side=6).map(lambda s: Case((s, s[-1:]))),
       (Case(((3, 5), (5,))),), call=lambda f, ins, p: f(ins[0], weight=ins[1]),
       op="layer_norm", tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6)),
    Op("layer_norm_bias", remat.layer_norm, (), lambda x, b: np_layer_norm(x, None, b), ANY,
       shapes(min_dims=1, max_dims=3, max_side=6).map(lambda s: Case((s, s[-1:]))),
       (Case(((2, 2, 4), (4,))),), call=lambda f, ins, p: f(ins[0], bias=ins[1]),
       op="layer_norm", tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6)),
    Op("rms_norm", remat.rms_norm, (), np_rms_norm, ANY,
       st.builds(lambda s, k, eps: Case((s, s[len(s) - k:]), {"normalized_shape": s[len(s) - k:],
                                                          "eps": eps}),
                 shapes(min_dims=2, max_dims=3, max_side=5), st.integers(1, 2),
                 st.sampled_from([1e-6, 1e-5, 1e-2])),
       (Case(((3, 5), (5,)), {"normalized_shape": (5,), "eps": 1e-5}),
        Case(((2, 2, 4), (2, 4)), {"normalized_shape": (2, 4), "eps": 1e-3})),
       call=lambda f, ins, p: f(ins[0], p["normalized_shape"], ins[1], p["eps"]),
       tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6),
       errors=(Bad("shape", ((2, 3), (2,)), S, {"normalized_shape": (2,), "eps": None}),
               Bad("weight", ((2, 3), (2,)), S, {"normalized_shape": (3,), "eps": None}),
               Bad("eps", ((2, 3), (3,)), ValueError, {"normalized_shape": (3,), "eps": -1.0}))),
    Op("group_norm", remat.group_norm, (), np_group_norm, ANY,
       st.builds(lambda n, g, cg, sp, eps: Case(((n, g * cg) + sp, (g * cg,), (g * cg,)),
                                                {"num_groups": g, "eps": eps}),
                 st.integers(1, 3), st.integers(1, 3), st.integers(1, 2),
                 shapes(min_dims=1, max_dims=2, min_side=2, max_side=4),
                 st.sampled_from([1e-5, 1e-2])),
       (Case(((2, 4, 3), (4,), (4,)), {"num_groups": 2, "eps": 1e-5}),
        Case(((1, 3, 2, 2), (3,), (3,)), {"num_groups": 3, "eps": 1e-3})),
       call=lambda f, ins, p: f(ins[0], p["num_groups"], ins[1], ins[2], p["eps"]),
       tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6),
       errors=(Bad("groups", ((2, 4, 3), (4,), (4,)), S, {"num_groups": 3, "eps": 1e-5}),
               Bad("weight", ((2, 4, 3), (3,), (4,)), S, {"num_groups": 2, "eps": 1e-5}),
               Bad("rank", ((4,), (4,), (4,)), S, {"num_groups": 2, "eps": 1e-5}))),
    Op("batch_norm", remat.batch_norm, (), np_batch_norm, ANY,
       st.builds(lambda n, c, sp, eps, m: Case(((n, c) + sp, (c,), (c,)),
                                               {"eps": eps, "momentum": m}),
                 st.integers(2, 4), st.integers(1, 3),
                 shapes(min_dims=0, max_dims=3, max_side=3), st.sampled_from([1e-5, 1e-2]),
                 st.sampled_from([0.1, 0.5])),
       (Case(((4, 3), (3,), (3,)), {"eps": 1e-5}),
        Case(((2, 3, 2, 2), (3,), (3,)), {"eps": 1e-3, "momentum": 0.3})),
       call=_bn_train, tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6),
       errors=(Bad("one_value", ((1, 3), (3,), (3,)), ValueError, {"eps": 1e-5}),
               Bad("one_value_spatial", ((1, 2, 1, 1), (2,), (2,)), ValueError, {"eps": 1e-5}),
               Bad("weight", ((4, 3), (2,), (3,)), S, {"eps": 1e-5}),
               Bad("bias", ((4, 3, 2), (3,), (5,)), S, {"eps": 1e-5}),
               Bad("rank", ((4,), (4,), (4,)), S, {"eps": 1e-5}),
               Bad("eps", ((4, 3), (3,), (3,)), ValueError, {"eps": 0.0}))),
    Op("batch_norm_eval", remat.batch_norm, (), np_batch_norm_eval, (ANY, ANY, POS, ANY, ANY),
       st.builds(lambda n, c, sp, eps: Case(((n, c) + sp, (c,), (c,), (c,), (c,)),
                                            {"eps": eps}),
                 st.integers(1, 3), st.integers(1, 3),
                 shapes(min_dims=0, max_dims=3, max_side=3), st.sampled_from([1e-5, 1e-2])),
       (Case(((3, 2), (2,), (2,), (2,), (2,)), {"eps": 1e-5}),
        Case(((1, 3, 2, 2), (3,), (3,), (3,), (3,)), {"eps": 1e-3})),
       diff=(0, 3, 4), op="batch_norm",
       call=lambda f, ins, p: f(*ins, training=False, **p),
       tol32=(1e-4, 1e-4), tol64=(1e-9, 1e-9), grad_tol=(1e-4, 1e-6),
       errors=(Bad("running_var", ((2, 3), (3,), (2,), (3,), (3,)), S, {"eps": 1e-5}),
               Bad("running_mean_rank", ((2, 3), (3, 1), (3,), (3,), (3,)), S, {"eps": 1e-5}),
               Bad("eps", ((2, 3), (3,), (3,), (3,), (3,)), ValueError, {"eps": -1.0}))),
    Op("dropout", remat.dropout, (), np_dropout, NONZERO,
       one(p=st.sampled_from([0.0, 0.2, 0.5, 0.9]), training=st.booleans()),
       (Case(((4, 5),), {"p": 0.4, "training": True}), Case(((3,),), {"p": 0.5, "training": True})),
       random=True,
       errors=(Bad("p_high", ((3,),), ValueError, {"p": 1.5}),
               Bad("p_negative", ((3,),), ValueError, {"p": -0.1}),
               Bad("p_nan", ((3,),), ValueError, {"p": float("nan")}),
               Bad("p_str", ((3,),), TypeError, {"p": "half"}, names=None))),
    # ---- sampling (the draws are the engine's stream for SEED, transformed)
    Op("bernoulli", remat.bernoulli, ("bernoulli",), np_bernoulli, PROB, one(),
       (Case(((4, 5),)), Case(((3,),))), diff=(), random=True,
       errors=(Bad("p_range", (Raw(remat.tensor([0.5, 1.5])),), ValueError),
               Bad("int", (Raw(remat.tensor([1, 0])),), remat.DTypeError))),
    Op("normal", remat.normal, (), np_normal, (ANY, POS), broadcast(), BINARY_EXAMPLES,
       diff=(), random=True,
       errors=(Bad("std_negative", ((3,), Raw(remat.tensor([-1.0, 1.0, 1.0]))), ValueError),
               Bad("broadcast", ((3,), (4,)), S))),
    Op("multinomial", remat.multinomial, ("multinomial",), np_multinomial, POS,
       shapes(min_dims=1, max_dims=2).map(
           lambda s: Case((s,), {"num_samples": 3, "replacement": True})),
       (Case(((4,),), {"num_samples": 5, "replacement": True}),
        Case(((3, 6),), {"num_samples": 2, "replacement": True})),
       diff=(), random=True, out_dtype=np.int64,
       errors=(Bad("rank", ((2, 2, 2),), S, {"num_samples": 1}),
               Bad("too_many", ((3,),), ValueError, {"num_samples": 4}),
               Bad("negative", (Raw(remat.tensor([1.0, -1.0])),), ValueError,
                   {"num_samples": 1}),
               Bad("zero_sum", (Raw(remat.zeros(3)),), ValueError, {"num_samples": 1}))),
    # ---- reductions
    Op("sum", remat.sum, ("sum",), np.sum, ANY, reductions(),
       (Case(((2, 3),), {"axis": None, "keepdims": False}),
        Case(((2, 3, 2),), {"axis": 1, "keepdims": True}),
        Case(((2, 3, 2),), {"axis": (0, -1), "keepdims": False})),
       tol32=(1e-5, 1e-5), tol64=(1e-12, 1e-12),
       errors=(Bad("axis", ((2, 3),), S, {"axis": 2}), Bad("neg_axis", ((2, 3),), S, {"axis": -3}),
               Bad("dup_axis", ((2, 3),), S, {"axis": (0, 0)}),
               Bad("axis_0d", ((),), S, {"axis": 1}),  # 0 and -1 are fine (PyTorch)
               Bad("axis_str", ((2, 3),), TypeError, {"axis": "0"}, names=None))),
    Op("mean", remat.mean, ("mean",), np.mean, ANY, reductions(),
       (Case(((2, 3),), {"axis": None, "keepdims": False}),
        Case(((2, 3, 2),), {"axis": (1, 2), "keepdims": True})),
       tol32=(1e-5, 1e-5), tol64=(1e-12, 1e-12),
       errors=(Bad("axis", ((2, 3),), S, {"axis": (0, 5)}),
               Bad("axis_float", ((2, 3),), TypeError, {"axis": 1.5}, names=None))),
    # max/min with an int dim/axis return (values, indices): the rows check the values (their
    # gradient goes to the one selected element; no CUDA path yet), `_indices` the indices.
    Op("max", remat.max, ("max",), np.max, DISTINCT, single_reductions(),
       (Case(((2, 3),), {"axis": None, "keepdims": False}),
        Case(((2, 3, 2),), {"axis": None, "keepdims": True})),
       call=lambda f, ins, p: _values(f(*ins, **p)),
       errors=(Bad("axis", ((2, 3),), S, {"axis": -4}), Bad("empty", ((0,),), S),
               Bad("empty_axis", ((2, 0),), S, {"axis": 1}),
               Bad("axis_tuple", ((2, 3),), TypeError, {"axis": (0, 1)}),
               Bad("dim_and_axis", ((2, 3),), TypeError, {"dim": 0, "axis": 0}),
               Bad("out", ((2, 3),), TypeError, {"out": Raw(np.zeros(3))}))),
    Op("max_dim", remat.max, ("max",), lambda x, dim, keepdim: np.max(x, dim, keepdims=keepdim),
       DISTINCT, torch_reductions(single=True),
       (Case(((2, 3),), {"dim": 1, "keepdim": False}),
        Case(((3, 2, 2),), {"dim": 0, "keepdim": True}),
        Case(((4,),), {"dim": -1, "keepdim": False})),
       call=lambda f, ins, p: _values(f(*ins, **p)), op="max",
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),
               Bad("empty_dim", ((3, 0),), S, {"dim": -1}))),
    Op("max_indices", remat.max, ("max",), np_argmax, DISTINCT,
       torch_reductions(single=True).filter(lambda c: c.params["dim"] is not None),
       (Case(((2, 3),), {"dim": 1, "keepdim": False}),),
       call=lambda f, ins, p: _indices(f(*ins, **p)), op="max", diff=(),
       out_dtype=np.int64),
    Op("min_dim", remat.min, ("min",), lambda x, dim, keepdim: np.min(x, dim, keepdims=keepdim),
       DISTINCT, torch_reductions(single=True),
       (Case(((2, 3),), {"dim": 0, "keepdim": False}),
        Case(((2, 3, 2),), {"dim": -1, "keepdim": True})),
       call=lambda f, ins, p: _values(f(*ins, **p)), op="min",
       errors=(Bad("dim", ((2, 3),), S, {"dim": -3}),)),
    Op("min_indices", remat.min, ("min",), np_argmin, DISTINCT,
       torch_reductions(single=True).filter(lambda c: c.params["dim"] is not None),
       (Case(((2, 3),), {"dim": 0, "keepdim": True}),),
       call=lambda f, ins, p: _indices(f(*ins, **p)), op="min", diff=(),
       out_dtype=np.int64),
    Op("argmax", remat.argmax, ("argmax",), np_argmax, DISTINCT, torch_reductions(single=True),
       (Case(((2, 3),), {"dim": None, "keepdim": False}),
        Case(((2, 3, 4),), {"dim": 1, "keepdim": True})),
       diff=(), out_dtype=np.int64,
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}), Bad("empty", ((0,),), S),
               Bad("empty_dim", ((2, 0),), S, {"dim": 1}),
               Bad("dim_tuple", ((2, 3),), TypeError, {"dim": (0, 1)}))),
    Op("argmin", remat.argmin, ("argmin",), np_argmin, DISTINCT, torch_reductions(single=True),
       (Case(((3, 2),), {"dim": 0, "keepdim": False}),),
       diff=(), out_dtype=np.int64,
       errors=(Bad("dim", ((2, 3),), S, {"dim": -3}), Bad("empty", ((0, 2),), S))),
    Op("all", remat.all, ("all",), np_all, MASK, torch_reductions(),
       (Case(((2, 3),), {"dim": None, "keepdim": False}),
        Case(((2, 3, 2),), {"dim": (0, 2), "keepdim": True})),
       diff=(), out_dtype=np.bool_,
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),
               Bad("dup_dim", ((2, 3),), S, {"dim": (1, -1)}))),
    Op("any", remat.any, ("any",), np_any, MASK, torch_reductions(),
       (Case(((2, 3),), {"dim": 1, "keepdim": False}),),
       diff=(), out_dtype=np.bool_,
       errors=(Bad("dim", ((2, 3),), S, {"dim": -3}),)),
    Op("sum_dim", remat.sum, ("sum",), lambda x, dim, keepdim: np.sum(x, _np_dim(dim),
                                                                       keepdims=keepdim),
       ANY, torch_reductions(),
       (Case(((2, 3, 2),), {"dim": (0, -1), "keepdim": True}),),
       tol32=(1e-5, 1e-5), tol64=(1e-12, 1e-12), op="sum",
       errors=(Bad("dim_and_axis", ((2, 3),), TypeError, {"dim": 0, "axis": 0}),)),
    Op("mean_dim", remat.mean, ("mean",), lambda x, dim, keepdim: np.mean(x, _np_dim(dim),
                                                                          keepdims=keepdim),
       ANY, torch_reductions(),
       (Case(((2, 3, 2),), {"dim": 1, "keepdim": False}),),
       tol32=(1e-5, 1e-5), tol64=(1e-12, 1e-12), op="mean"),
    Op("min", remat.min, ("min",), np.min, DISTINCT, single_reductions(),
       (Case(((2, 3),), {"axis": None, "keepdims": False}),
        Case(((3, 4),), {"axis": None, "keepdims": True})),
       call=lambda f, ins, p: _values(f(*ins, **p)),
       errors=(Bad("axis", ((2, 3),), S, {"axis": 2}), Bad("empty", ((0,),), S))),
    Op("amax", remat.amax, ("amax",), lambda x, dim, keepdim: np.max(x, _np_dim(dim),
                                                                      keepdims=keepdim),
       DISTINCT, torch_reductions(),
       (Case(((2, 3),), {"dim": None, "keepdim": False}),
        Case(((2, 3, 2),), {"dim": (0, -1), "keepdim": True})),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}), Bad("empty", ((2, 0),), S, {"dim": 1}))),
    Op("amin", remat.amin, ("amin",), lambda x, dim, keepdim: np.min(x, _np_dim(dim),
                                                                      keepdims=keepdim),
       DISTINCT, torch_reductions(),
       (Case(((3, 4),), {"dim": 1, "keepdim": False}),),
       errors=(Bad("dim", ((2, 3),), S, {"dim": (0, 3)}),)),
    Op("prod", remat.prod, ("prod",), np_prod, NONZERO, torch_reductions(single=True),
       (Case(((2, 5),), {"dim": 1, "keepdim": False}),
        Case(((3, 2),), {"dim": None, "keepdim": False}),
        Case(((3, 2, 3),), {"dim": 0, "keepdim": True})),
       tol32=(1e-4, 1e-5), grad_tol=(1e-4, 1e-6),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),
               Bad("dim_tuple", ((2, 3),), TypeError, {"dim": (0, 1)}))),
    Op("var", remat.var, ("var",), np_var, ANY,
       torch_reductions(correction=st.sampled_from([0, 1, 2])),
       (Case(((3, 4),), {"dim": 1, "keepdim": False, "correction": 1}),
        Case(((2, 3, 2),), {"dim": (0, 2), "keepdim": True, "correction": 0})),
       tol32=(1e-4, 1e-5),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 3}),
               Bad("both", ((2, 3),), TypeError, {"unbiased": True, "correction": 1}))),
    Op("var_unbiased", remat.var, ("var",), np_var, ANY,
       torch_reductions(unbiased=st.booleans()),
       (Case(((4, 3),), {"dim": 0, "keepdim": False, "unbiased": False}),), op="var",
       tol32=(1e-4, 1e-5)),
    Op("std", remat.std, ("std",), np_std, ANY,
       torch_reductions(correction=st.sampled_from([0, 1])).filter(
           lambda c: int(np.prod([c.shapes[0][a] for a in np.atleast_1d(c.params["dim"])]
                                 if c.params["dim"] is not None else c.shapes[0]))
           > c.params["correction"]),
       (Case(((3, 4),), {"dim": -1, "keepdim": True, "correction": 1}),
        Case(((2, 3),), {"dim": None, "keepdim": False, "correction": 0})),
       tol32=(1e-4, 1e-5), grad_tol=(1e-4, 1e-6),
       errors=(Bad("dim", ((2, 3),), S, {"dim": -3}),)),
    Op("logsumexp", remat.logsumexp, ("logsumexp",), np_logsumexp, ANY, torch_reductions(),
       (Case(((3, 4),), {"dim": 1, "keepdim": False}),
        Case(((2, 3, 2),), {"dim": (0, 1), "keepdim": True})),
       tol32=(1e-5, 1e-5),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),)),
    Op("norm", remat.norm, ("norm",), np_norm, NONZERO,
       torch_reductions(p=st.sampled_from([2, 1, 3, 0.5, math.inf, -math.inf, "fro"])),
       (Case(((3, 4),), {"p": 2, "dim": 1, "keepdim": False}),
        Case(((2, 3),), {"p": 3, "dim": None, "keepdim": False}),
        Case(((2, 3, 2),), {"p": 1, "dim": (0, 2), "keepdim": True}),
        Case(((3, 4),), {"p": math.inf, "dim": 0, "keepdim": False})),
       tol32=(1e-4, 1e-5), grad_tol=(1e-4, 1e-6),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),
               Bad("p_str", ((2, 3),), ValueError, {"p": "nuc"}),
               Bad("p_type", ((2, 3),), TypeError, {"p": [1]}))),
    Op("cumsum", remat.cumsum, ("cumsum",), lambda x, dim: np.cumsum(x, axis=dim), ANY,
       along_axis().map(lambda c: Case(c.shapes, {"dim": c.params["axis"]})),
       (Case(((3, 4),), {"dim": 1}), Case(((3, 2, 2),), {"dim": 0})),
       tol32=(1e-5, 1e-5),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),
               Bad("dim_tuple", ((2, 3),), TypeError, {"dim": (0, 1)}))),
    # ---- shape and view ops
    Op("reshape", remat.reshape, ("reshape",), lambda x, shape: x.reshape(shape), ANY,
       reshapes(), (Case(((2, 6),), {"shape": (3, 4)}), Case(((2, 3, 2),), {"shape": (-1,)})),
       call=lambda f, ins, p: f(ins[0], p["shape"]),
       errors=(Bad("size", ((2, 3),), S, {"shape": (4, 2)}),
               Bad("two_neg", ((2, 3),), S, {"shape": (-1, -1)}),
               Bad("neg_bad", ((2, 3),), S, {"shape": (-1, 4)}),
               Bad("float", ((6,),), TypeError, {"shape": 2.5}, names=None))),
    Op("view", None, ("view",), lambda x, shape: x.reshape(shape), ANY, reshapes(),
       (Case(((2, 6),), {"shape": (4, 3)}),), call=lambda f, ins, p: f(ins[0], p["shape"]),
       op="reshape",
       errors=(Bad("size", ((2, 3),), S, {"shape": (5,)}, names=("view", "reshape")),)),
    Op("flatten", remat.flatten, ("flatten",), lambda x: x.reshape(-1), ANY, one(),
       (Case(((2, 3, 2),)), Case(((),)))),
    Op("flatten_dims", remat.flatten, ("flatten",), np_flatten, ANY, flattens(),
       (Case(((2, 3, 2),), {"start_dim": 1, "end_dim": -1}),
        Case(((2, 3, 2, 2),), {"start_dim": -3, "end_dim": 2})),
       call=lambda f, ins, p: f(ins[0], p["start_dim"], p["end_dim"]), op="flatten",
       errors=(Bad("order", ((2, 3, 4),), S, {"start_dim": 2, "end_dim": 1}),
               Bad("range", ((2, 3),), S, {"start_dim": 0, "end_dim": 2}))),
    Op("unflatten", remat.unflatten, ("unflatten",), np_unflatten, ANY, unflattens(),
       (Case(((2, 6),), {"dim": 1, "sizes": (3, 2)}),
        Case(((4, 3),), {"dim": -2, "sizes": (2, -1, 1)})),
       call=lambda f, ins, p: f(ins[0], p["dim"], p["sizes"]),
       errors=(Bad("sizes", ((2, 6),), S, {"dim": 1, "sizes": (4, 2)}),
               Bad("two_neg", ((2, 6),), S, {"dim": 1, "sizes": (-1, -1)}),
               Bad("dim", ((2, 6),), S, {"dim": 2, "sizes": (2, 1)}),
               Bad("0d", ((),), S, {"dim": 0, "sizes": (1,)}),
               Bad("empty", ((2, 6),), S, {"dim": 0, "sizes": ()}))),
    Op("unsqueeze", remat.unsqueeze, ("unsqueeze",), lambda x, dim: np.expand_dims(x, dim), ANY,
       unsqueezes(), (Case(((2, 3),), {"dim": 1}), Case(((2, 3),), {"dim": -1}),
                      Case(((),), {"dim": 0})),
       call=lambda f, ins, p: f(ins[0], p["dim"]),
       errors=(Bad("dim", ((2, 3),), S, {"dim": 3}), Bad("neg_dim", ((2, 3),), S, {"dim": -4}),
               Bad("type", ((2, 3),), TypeError, {"dim": "a"}, names=None))),
    Op("squeeze", remat.squeeze, ("squeeze",), np_squeeze, ANY,
       squeezes(),
       (Case(((2, 1, 3, 1),), {"dim": None}), Case(((2, 1, 3, 1),), {"dim": -1}),
        Case(((1, 2, 1),), {"dim": (0, 1)})),
       call=lambda f, ins, p: f(ins[0], p["dim"]),
       errors=(Bad("dim", ((2, 1),), S, {"dim": 2}),
               Bad("dup", ((1, 1),), S, {"dim": (0, -2)}),
               Bad("type", ((1, 1),), TypeError, {"dim": 0.5}, names=None))),
    Op("movedim", remat.movedim, ("movedim",), np.moveaxis, ANY, movedims(),
       (Case(((2, 3, 4),), {"source": 0, "destination": -1}),
        Case(((2, 3, 4),), {"source": (0, 1), "destination": (2, 0)})),
       call=lambda f, ins, p: f(ins[0], p["source"], p["destination"]),
       errors=(Bad("count", ((2, 3),), S, {"source": (0, 1), "destination": 0}),
               Bad("dup", ((2, 3),), S, {"source": (0, 0), "destination": (0, 1)}),
               Bad("range", ((2, 3),), S, {"source": 2, "destination": 0}))),
    Op("narrow", remat.narrow, ("narrow",), np_narrow, ANY, narrows(),
       (Case(((4, 3),), {"dim": 0, "start": 1, "length": 2}),
        Case(((2, 5),), {"dim": -1, "start": -3, "length": 3})),
       call=lambda f, ins, p: f(ins[0], p["dim"], p["start"], p["length"]),
       errors=(Bad("length", ((4, 3),), S, {"dim": 0, "start": 2, "length": 3}),
               Bad("start", ((4, 3),), S, {"dim": 0, "start": 5, "length": 0}),
               Bad("neg_length", ((4, 3),), S, {"dim": 0, "start": 0, "length": -1}),
               Bad("dim", ((4, 3),), S, {"dim": 2, "start": 0, "length": 1}),
               Bad("0d", ((),), S, {"dim": 0, "start": 0, "length": 1}))),
    Op("split", remat.split, ("split",), np_split, ANY, splits(sections=False),
       (Case(((5, 3),), {"split": 2, "dim": 0, "k": 2}),
        Case(((2, 5),), {"split": 3, "dim": -1, "k": 0})),
       call=lambda f, ins, p: f(ins[0], p["split"], p["dim"])[p["k"]],
       errors=(Bad("zero", ((4, 3),), S, {"split": 0, "dim": 0, "k": 0}),
               Bad("dim", ((4, 3),), S, {"split": 1, "dim": 2, "k": 0}),
               Bad("neg", ((4, 3),), S, {"split": -1, "dim": 0, "k": 0}))),
    Op("split_sections", remat.split, ("split",), np_split, ANY, splits(sections=True),
       (Case(((5, 3),), {"split": (1, 4), "dim": 0, "k": 1}),
        Case(((2, 5),), {"split": (2, 0, 3), "dim": 1, "k": 2})),
       call=lambda f, ins, p: f(ins[0], p["split"], p["dim"])[p["k"]], op="split",
       errors=(Bad("sum", ((4, 3),), S, {"split": (1, 2), "dim": 0, "k": 0}),
               Bad("neg", ((4, 3),), S, {"split": (5, -1), "dim": 0, "k": 0}))),
    Op("chunk", remat.chunk, ("chunk",), np_chunk, ANY, chunks(),
       (Case(((5, 3),), {"chunks": 3, "dim": 0, "k": 2}),
        Case(((2, 6),), {"chunks": 4, "dim": -1, "k": 1})),
       call=lambda f, ins, p: f(ins[0], p["chunks"], p["dim"])[p["k"]],
       errors=(Bad("zero", ((4, 3),), S, {"chunks": 0, "dim": 0, "k": 0}),
               Bad("dim", ((4, 3),), S, {"chunks": 2, "dim": -3, "k": 0}))),
    Op("flip", remat.flip, ("flip",), np_flip, ANY, flips(),
       (Case(((2, 3),), {"dims": (0,)}), Case(((2, 3, 4),), {"dims": (-1, 0)}),
        Case(((3,),), {"dims": ()})),
       call=lambda f, ins, p: f(ins[0], p["dims"]),
       errors=(Bad("dup", ((2, 3),), S, {"dims": (0, -2)}),
               Bad("range", ((2, 3),), S, {"dims": (2,)}))),
    Op("repeat", remat.repeat, ("repeat",), lambda x, sizes: np.tile(x, sizes), ANY, repeats(),
       (Case(((2, 3),), {"sizes": (2, 1)}), Case(((3,),), {"sizes": (2, 1, 2)}),
        Case(((2, 1),), {"sizes": (1, 1)})),
       call=lambda f, ins, p: f(ins[0], *p["sizes"]),
       errors=(Bad("few", ((2, 3),), S, {"sizes": (2,)}),
               Bad("neg", ((2, 3),), S, {"sizes": (2, -1)}))),
    # ---- rearranging ops composed of views, copies and joins (core ops/rearrange.rs)
    Op("unbind", remat.unbind, ("unbind",), lambda x, dim, k: np.take(x, k, axis=dim), ANY,
       unbinds(), (Case(((3, 2),), {"dim": 0, "k": 2}), Case(((2, 4, 3),), {"dim": -2, "k": 1})),
       call=lambda f, ins, p: f(ins[0], p["dim"])[p["k"]],
       errors=(Bad("dim", ((2, 3),), S, {"dim": 2, "k": 0}),
               Bad("scalar", ((),), S, {"dim": 0, "k": 0}))),
    Op("roll", remat.roll, ("roll",), lambda x, shifts, dims: np.roll(x, shifts, axis=dims),
       ANY, rolls(),
       (Case(((3, 4),), {"shifts": (1, -2), "dims": (0, 1)}),
        Case(((2, 3),), {"shifts": 4, "dims": None})),
       errors=(Bad("align", ((2, 3),), S, {"shifts": (1, 2), "dims": (0,)}),
               Bad("dim", ((2, 3),), S, {"shifts": 1, "dims": 2}))),
    Op("tile", remat.tile, ("tile",), lambda x, dims: np.tile(x, dims), ANY, tiles(),
       (Case(((2, 3),), {"dims": (2,)}), Case(((3,),), {"dims": (2, 1, 2)})),
       call=lambda f, ins, p: f(ins[0], p["dims"])),
    Op("repeat_interleave", remat.repeat_interleave, ("repeat_interleave",),
       lambda x, repeats, dim: np.repeat(x, repeats, axis=dim), ANY, interleaves(),
       (Case(((2, 3),), {"repeats": 2, "dim": 0}),
        Case(((2, 3),), {"repeats": (1, 0, 2), "dim": 1}),
        Case(((2, 2),), {"repeats": 3, "dim": None})),
       call=lambda f, ins, p: f(ins[0], list(p["repeats"]) if isinstance(p["repeats"], tuple)
                                else p["repeats"], dim=p["dim"]),
       errors=(Bad("neg", ((2, 3),), ValueError, {"repeats": -1, "dim": 0}),
               Bad("counts", ((2, 3),), S, {"repeats": (1, 2), "dim": 1}),
               Bad("dim", ((2, 3),), S, {"repeats": 2, "dim": 2}))),
    # All outputs stacked, so every input has a gradient.
    Op("meshgrid", remat.meshgrid, (),
       lambda *xs, indexing: np.stack(np.meshgrid(*xs, indexing=indexing)), ANY, meshgrids(),
       (Case(((2,), (3,)), {"indexing": "ij"}), Case(((2,), (3,), (2,)), {"indexing": "xy"})),
       call=lambda f, ins, p: remat.stack(f(*ins, indexing=p["indexing"]), 0),
       errors=(Bad("indexing", ((2,), (3,)), ValueError, {"indexing": "yx"}),
               Bad("matrix", ((2, 2), (3,)), S, {"indexing": "ij"}))),
    Op("diagonal", remat.diagonal, ("diagonal",),
       lambda x, offset, dim1, dim2: np.diagonal(x, offset, dim1, dim2), ANY, diagonals(),
       (Case(((3, 4),), {"offset": 0, "dim1": 0, "dim2": 1}),
        Case(((3, 2, 4),), {"offset": 1, "dim1": 0, "dim2": -1}),
        Case(((2, 3, 3),), {"offset": -1, "dim1": 2, "dim2": 1})),
       errors=(Bad("same", ((3, 3),), S, {"offset": 0, "dim1": 1, "dim2": -1}),
               Bad("vector", ((3,),), S, {"offset": 0, "dim1": 0, "dim2": 1}))),
    Op("diag", remat.diag, ("diag",), lambda x, diagonal: np.diag(x, diagonal), ANY, diags(),
       (Case(((3,),), {"diagonal": 0}), Case(((3,),), {"diagonal": -2}),
        Case(((3, 4),), {"diagonal": 1})),
       errors=(Bad("rank", ((2, 2, 2),), S, {"diagonal": 0}),)),
    Op("trace", remat.trace, ("trace",), lambda x: np.asarray(np.trace(x)), ANY,
       one(shapes(min_dims=2, max_dims=2)), (Case(((3, 4),)), Case(((2, 2),))),
       errors=(Bad("rank", ((3,),), S),)),
    Op("swapaxes", remat.swapaxes, ("swapaxes",),
       lambda x, axis0, axis1: np.swapaxes(x, axis0, axis1), ANY,
       one(shapes(min_dims=2, max_dims=3), axis0=st.just(0), axis1=st.just(-1)),
       (Case(((2, 3, 4),), {"axis0": 0, "axis1": 2}),),
       errors=(Bad("axis", ((2, 3),), S, {"axis0": 0, "axis1": 2}),)),
    Op("swapdims", remat.swapdims, ("swapdims",),
       lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1), ANY,
       one(shapes(min_dims=2, max_dims=3), dim0=st.just(-1), dim1=st.just(0)),
       (Case(((2, 3),), {"dim0": 1, "dim1": 0}),)),
    # ---- small composites (core ops/composites.rs)
    Op("take_along_dim", remat.take_along_dim, ("take_along_dim",),
       lambda x, i, dim: np.take_along_axis(x, i, axis=dim), (ANY, POSITIONS), take_cases(),
       (Case(((3, 4), (3, 2)), {"dim": 1}), Case(((4, 3), (2, 1)), {"dim": 0})),
       call=lambda f, ins, p: f(ins[0], ins[1], p["dim"]),
       errors=(Bad("rank", ((2, 3), Raw(np.array([0]))), S, {"dim": 1}),)),
    Op("masked_select", remat.masked_select, ("masked_select",),
       lambda x, m: np.broadcast_arrays(x, m)[0][np.broadcast_arrays(x, m)[1] != 0],
       (ANY, MASK), broadcast(2, max_dims=3),
       (Case(((2, 3), (2, 3))), Case(((2, 3), (3,))), Case(((3, 1), (1, 2)))),
       diff=(0,), call=lambda f, ins, p: f(ins[0], ins[1] != 0),
       errors=(Bad("shape", ((2, 3), (4,)), S),)),
    Op("count_nonzero", remat.count_nonzero, ("count_nonzero",),
       lambda x, dim: np.asarray(np.count_nonzero(x, axis=_np_dim(dim)), dtype=np.int64), MASK,
       torch_reductions().map(lambda c: Case(c.shapes, {"dim": c.params["dim"]})),
       (Case(((3, 4),), {"dim": 1}), Case(((2, 3),), {"dim": None})),
       diff=(), out_dtype=np.int64, errors=(Bad("dim", ((2, 3),), S, {"dim": 2}),)),
    Op("nan_to_num", remat.nan_to_num, ("nan_to_num",),
       lambda x, nan, posinf: np.nan_to_num(x, nan=nan, posinf=posinf), ANY,
       one(nan=st.just(0.0), posinf=st.just(5.0)),
       (Case(((2, 3),), {"nan": 1.0, "posinf": 3.0}),)),
    Op("addcmul", remat.addcmul, ("addcmul",), lambda a, b, c, value: a + value * b * c, ANY,
       broadcast(3, max_dims=3).map(lambda c: Case(c.shapes, {"value": 0.5})),
       (Case(((2, 3), (2, 3), (3,)), {"value": 1.0}),
        Case(((3,), (2, 1), (1, 3)), {"value": -2.0})),
       call=lambda f, ins, p: f(ins[0], ins[1], ins[2], value=p["value"]),
       errors=(Bad("shape", ((2, 3), (4,), (3,)), S, {"value": 1.0}),)),
    Op("addcdiv", remat.addcdiv, ("addcdiv",), lambda a, b, c, value: a + value * b / c,
       (ANY, ANY, NONZERO),
       broadcast(3, max_dims=3).map(lambda c: Case(c.shapes, {"value": 0.5})),
       (Case(((2, 3), (2, 3), (3,)), {"value": 1.0}),
        Case(((3,), (2, 1), (1, 3)), {"value": 3.0})),
       call=lambda f, ins, p: f(ins[0], ins[1], ins[2], value=p["value"]),
       errors=(Bad("shape", ((2, 3), (4,), (3,)), S, {"value": 1.0}),)),
    Op("var_mean", remat.var_mean, (),
       lambda x, dim, keepdim, correction: np.stack(
           [np_var(x, dim=dim, keepdim=keepdim, correction=correction),
            x.mean(axis=_np_dim(dim), keepdims=keepdim)]),
       ANY, torch_reductions(correction=st.sampled_from([0, 1])),
       (Case(((3, 4),), {"dim": 1, "keepdim": False, "correction": 1}),
        Case(((2, 3),), {"dim": None, "keepdim": True, "correction": 0})),
       call=lambda f, ins, p: remat.stack(f(ins[0], p["dim"], keepdim=p["keepdim"],
                                           correction=p["correction"]), 0),
       tol32=(1e-4, 1e-5), errors=(Bad("dim", ((2, 3),), S, {"dim": 3, "keepdim": False,
                                                              "correction": 1}),)),
    Op("std_mean", remat.std_mean, (),
       lambda x, dim, keepdim, correction: np.stack(
           [np.sqrt(np_var(x, dim=dim, keepdim=keepdim, correction=correction)),
            x.mean(axis=_np_dim(dim), keepdims=keepdim)]),
       ANY, torch_reductions(correction=st.sampled_from([0, 1])),
       (Case(((3, 4),), {"dim": 0, "keepdim": True, "correction": 1}),),
       call=lambda f, ins, p: remat.stack(f(ins[0], p["dim"], keepdim=p["keepdim"],
                                           correction=p["correction"]), 0),
       tol32=(1e-4, 1e-5), grad_tol=(1e-4, 1e-6)),
    Op("expand", remat.expand, ("expand",), np_expand, ANY, expands(),
       (Case(((3, 1),), {"sizes": (2, -1, 4)}), Case(((1,),), {"sizes": (3,)})),
       call=lambda f, ins, p: f(ins[0], *p["sizes"]),
       errors=(Bad("size", ((2, 3),), S, {"sizes": (2, 4)}),
               Bad("few", ((2, 3),), S, {"sizes": (3,)}),
               Bad("lead_neg", ((2, 3),), S, {"sizes": (-1, 2, 3)}))),
    Op("broadcast_to", remat.broadcast_to, ("broadcast_to",), np_expand, ANY, expands(),
       (Case(((3, 1),), {"sizes": (2, 3, 4)}),),
       call=lambda f, ins, p: f(ins[0], p["sizes"]),
       errors=(Bad("size", ((2, 3),), S, {"sizes": (2, 4)}),)),
    Op("expand_as", remat.expand_as, ("expand_as",), lambda x, o: np.broadcast_to(x, o.shape),
       ANY, expand_as_cases(),
       (Case(((3, 1), (2, 3, 4))),), diff=(0,),
       errors=(Bad("shape", ((2, 3), (2, 4)), S),)),
    Op("clone", remat.clone, ("clone",), lambda x: x.copy(), ANY, one(),
       (Case(((2, 3),)), Case(((),)))),
    Op("mT", None, ("mT",), lambda x: np.swapaxes(x, -1, -2), ANY, one(shapes(min_dims=2)),
       (Case(((2, 3),)), Case(((2, 3, 4),))),
       errors=(Bad("1d", ((3,),), S, names=("mT",)),)),
    Op("transpose", remat.transpose, ("transpose",), lambda x, a, b: np.swapaxes(x, a, b), ANY,
       transposes(), (Case(((3, 4),), {"a": 0, "b": 1}), Case(((2, 3, 4),), {"a": 0, "b": -1})),
       call=lambda f, ins, p: f(ins[0], p["a"], p["b"]),
       errors=(Bad("axis", ((2, 3),), S, {"a": 0, "b": 2}),
               Bad("neg_axis", ((2, 3),), S, {"a": -3, "b": 0}),
               Bad("type", ((2, 3),), TypeError, {"a": "a", "b": 0}, names=None))),
    Op("permute", remat.permute, ("permute",), lambda x, perm: np.transpose(x, perm), ANY,
       permutes(), (Case(((2, 3, 4),), {"perm": (2, 0, 1)}), Case(((3, 2),), {"perm": (1, 0)})),
       call=lambda f, ins, p: f(ins[0], *p["perm"]),
       errors=(Bad("dup", ((2, 3),), S, {"perm": (0, 0)}),
               Bad("count", ((2, 3),), S, {"perm": (0, 1, 2)}))),
    Op("T", None, ("T",), lambda x: x.T, ANY, one(), (Case(((2, 3, 4),)), Case(((3,),))),
       op="transpose"),
    Op("t", None, ("t",), lambda x: x.T, ANY, one(shapes(max_dims=2)),
       (Case(((2, 3),)), Case(((3,),)), Case(((),))),
       errors=(Bad("3d", ((2, 3, 4),), S, names=("t()",)),)),
    Op("index", None, ("__getitem__",), lambda x, key: x[key], ANY,
       st.sampled_from(INDEX_CASES).map(lambda sk: Case((sk[0],), {"key": sk[1]})),
       tuple(Case((s,), {"key": k}) for s, k in INDEX_CASES[:6]),
       call=lambda f, ins, p: f(ins[0], p["key"]),
       errors=(Bad("range", ((3,),), IndexError, {"key": 3}, names=None),
               Bad("neg_range", ((3, 2),), IndexError, {"key": (slice(None), -3)}, names=None),
               Bad("too_many", ((3,),), IndexError, {"key": (0, 0)}, names=None),
               Bad("0d", ((),), IndexError, {"key": 0}, names=None),
               Bad("two_ellipsis", ((2, 2),), IndexError, {"key": (..., ..., 0)}, names=None),
               Bad("step_zero", ((3,),), ValueError, {"key": slice(None, None, 0)},
                   names=None))),
    # ---- joins and selection
    Op("concat", remat.concat, (), lambda *xs, axis: np.concatenate(xs, axis=axis), ANY,
       joins(same=False),
       (Case(((2, 3), (2, 3), (2, 3)), {"axis": 0}), Case(((2, 3), (2, 1)), {"axis": -1})),
       call=_seq,
       errors=(Bad("shape", ((2, 3), (3, 2)), S, {"axis": 0}),
               Bad("ndim", ((2, 3), (3,)), S, {"axis": 0}),
               Bad("axis", ((2,), (2,)), S, {"axis": 1}),
               Bad("0d", ((), ()), S, {"axis": 0}),
               Bad("empty", (), ValueError, {"axis": 0}))),
    Op("cat", remat.cat, (), lambda *xs, dim: np.concatenate(xs, axis=dim), ANY,
       joins(same=False).map(lambda c: Case(c.shapes, {"dim": c.params["axis"]})),
       (Case(((2, 3), (2, 3)), {"dim": 0}), Case(((2, 3), (2, 1), (2, 2)), {"dim": -1})),
       call=_seq, op="concat",
       errors=(Bad("shape", ((2, 3), (3, 2)), S, {"dim": 0}),
               Bad("dim", ((2,), (2,)), S, {"dim": 1}),
               Bad("empty", (), ValueError, {"dim": 0}, names=("cat", "concat")))),
    Op("concatenate", remat.concatenate, (), lambda *xs, dim: np.concatenate(xs, axis=dim), ANY,
       joins(same=False).map(lambda c: Case(c.shapes, {"dim": c.params["axis"]})),
       (Case(((2, 3), (2, 3)), {"dim": 1}),), call=_seq, op="concat"),
    Op("stack", remat.stack, (), lambda *xs, axis: np.stack(xs, axis=axis), ANY,
       joins(same=True),
       (Case(((2, 3), (2, 3)), {"axis": 0}), Case(((2, 3), (2, 3), (2, 3)), {"axis": -1})),
       call=_seq,
       errors=(Bad("shape", ((2,), (3,)), S, {"axis": 0}),
               Bad("axis", ((2,), (2,)), S, {"axis": 3}),
               Bad("empty", (), ValueError, {"axis": 0}))),
    Op("where", remat.where, (), lambda c, a, b: np.where(c != 0, a, b), (MASK, ANY, ANY),
       where_cases(),
       (Case(((2, 3), (2, 3), (1, 3))), Case(((3,), (2, 1), ()))), diff=(1, 2),
       errors=(Bad("shape", ((2,), (3,), (3,)), S), Bad("ab_shape", ((1,), (2,), (3,)), S),
               Bad("cond_str", (Raw("x"), (2,), (2,)), TypeError))),
    # ---- convolution, pooling, padding (sliding windows; NumPy references in np_windows.py)
    Op("conv1d", remat.conv1d, (), np_conv, ANY, conv_cases(1),
       (Case(((2, 2, 7), (4, 1, 3), (4,)), {"stride": 2, "padding": 1, "dilation": 1,
                                             "groups": 2}),),
       tol32=(1e-4, 1e-4), tol64=(1e-10, 1e-10),
       errors=(Bad("channels", ((1, 3, 4), (2, 2, 3)), S),)),
    Op("conv2d", remat.conv2d, (), np_conv, ANY, conv_cases(2),
       (Case(((2, 3, 5, 4), (4, 3, 3, 2), (4,)), {"stride": (2, 1), "padding": (1, 0),
                                                   "dilation": (1, 2), "groups": 1}),
        Case(((1, 4, 4, 4), (2, 2, 2, 2), (2,)), {"stride": 1, "padding": 1, "dilation": 1,
                                                   "groups": 2}),
        Case(((3, 4, 4), (2, 3, 1, 1), (2,)), {"stride": 1, "padding": 0, "dilation": 1,
                                                "groups": 1})),
       tol32=(1e-4, 1e-4), tol64=(1e-10, 1e-10), errors=conv_errors()),
    Op("conv2d_same", remat.conv2d, (), np_conv, ANY, conv_cases(2, bias=False, same=True),
       (Case(((1, 2, 5, 5), (3, 2, 2, 3)), {"stride": 1, "padding": "same",
                                            "dilation": (1, 2), "groups": 1}),),
       op="conv2d", tol32=(1e-4, 1e-4), tol64=(1e-10, 1e-10),
       errors=(Bad("same_strided", ((1, 1, 4, 4), (1, 1, 3, 3)), ValueError,
                   {"padding": "same", "stride": 2}),
               Bad("padding_word", ((1, 1, 4, 4), (1, 1, 3, 3)), ValueError,
                   {"padding": "full"}))),
    Op("conv3d", remat.conv3d, (), np_conv, ANY, conv_cases(3),
       (Case(((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (2,)), {"stride": 1, "padding": 1,
                                                        "dilation": 1, "groups": 1}),),
       tol32=(1e-4, 1e-4), tol64=(1e-10, 1e-10)),
    Op("max_pool1d", remat.max_pool1d, (), lambda x, **p: np_max_pool(x, rank=1, **p),
       DISTINCT, pool_cases(1),
       (Case(((2, 3, 7),), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1,
                            "ceil_mode": True}),),
       errors=pool_errors(1)),
    Op("max_pool2d", remat.max_pool2d, (), lambda x, **p: np_max_pool(x, rank=2, **p),
       DISTINCT, pool_cases(2),
       (Case(((2, 2, 5, 6),), {"kernel_size": 2, "stride": 2, "padding": 0, "dilation": 1,
                               "ceil_mode": False}),
        Case(((3, 5, 5),), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1),
                            "dilation": (1, 2), "ceil_mode": True})),
       errors=pool_errors(2)),
    Op("avg_pool1d", remat.avg_pool1d, (), lambda x, **p: np_avg_pool(x, rank=1, **p),
       ANY, pool_cases(1, "avg"),
       (Case(((2, 3, 7),), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                            "count_include_pad": False}),),
       errors=pool_errors(1)),
    Op("avg_pool2d", remat.avg_pool2d, (), lambda x, **p: np_avg_pool(x, rank=2, **p),
       ANY, pool_cases(2, "avg"),
       (Case(((2, 2, 5, 6),), {"kernel_size": 2}),
        Case(((3, 5, 5),), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                            "count_include_pad": False}),
        Case(((1, 2, 4, 4),), {"kernel_size": 2, "divisor_override": 3})),
       errors=pool_errors(2) + (
           Bad("divisor_zero", ((1, 1, 4, 4),), ValueError,
               {"kernel_size": 2, "divisor_override": 0}),)),
    Op("adaptive_avg_pool2d", remat.adaptive_avg_pool2d, (),
       lambda x, output_size: np_adaptive_avg_pool(x, output_size, rank=2), ANY,
       adaptive_cases(2),
       (Case(((2, 2, 5, 7),), {"output_size": (2, 3)}), Case(((3, 4, 4),), {"output_size": 1})),
       errors=(Bad("rank", ((4, 4),), S, {"output_size": 2}),
               Bad("zero", ((1, 1, 4, 4),), S, {"output_size": (0, 2)}))),
    pad_row("constant", (Case(((2, 3, 4),), {"pad": (1, 2, -1, 1), "mode": "constant",
                                             "value": 0.5}),)),
    pad_row("reflect", (Case(((2, 3, 4),), {"pad": (1, 3, 2, 0), "mode": "reflect"}),)),
    pad_row("replicate", (Case(((2, 3, 4),), {"pad": (2, 1, 0, 1), "mode": "replicate"}),)),
    pad_row("circular", (Case(((2, 3, 4),), {"pad": (4, 1, 3, 2), "mode": "circular"}),)),
    Op("unfold", F.unfold, (), np_unfold, ANY,
       st.builds(lambda n, c, h, w, k, d, p, s: Case(((n, c, h + (k - 1) * d, w + d),),
                                                      {"kernel_size": (k, 2), "dilation": d,
                                                       "padding": p, "stride": s}),
                 st.integers(1, 2), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4),
                 st.integers(1, 3), st.integers(1, 2), st.integers(0, 1), st.integers(1, 2)),
       (Case(((2, 2, 5, 4),), {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1,
                               "stride": (2, 1)}),),
       errors=(Bad("rank", ((2, 4, 4),), S, {"kernel_size": 2}),)),
    Op("fold", F.fold, (), np_fold, ANY,
       st.builds(lambda n, c, h, w: Case(((n, c * 4, (h - 1) * w),),
                                         {"output_size": (h, w + 1), "kernel_size": 2}),
                 st.integers(1, 2), st.integers(1, 3), st.integers(2, 5), st.integers(1, 4)),
       (Case(((2, 3 * 6, 12),), {"output_size": (5, 4), "kernel_size": (2, 3),
                                 "dilation": (2, 1), "padding": 1, "stride": (2, 1)}),),
       errors=(Bad("blocks", ((1, 4, 5),), S, {"output_size": (3, 3),
                                                           "kernel_size": 2}),)),
    # ---- spatial upsampling (decoders, GANs, U-Nets)
    Op("conv_transpose2d", remat.conv_transpose2d, (), np_conv_transpose, ANY,
       st.builds(lambda n, ci, co, h, w, k, s, p, g: Case(
           ((n, ci * g, h, w), (ci * g, co, k, k)),
           {"stride": s, "padding": min(p, k - 1), "output_padding": s - 1, "groups": g}),
           st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 4),
           st.integers(1, 4), st.integers(1, 3), st.integers(1, 2), st.integers(0, 1),
           st.integers(1, 2)),
       (Case(((2, 2, 3, 3), (2, 3, 3, 3)), {"stride": 2, "padding": 1, "output_padding": 1}),
        Case(((1, 4, 2, 3), (4, 1, 2, 2)), {"groups": 2, "dilation": 2}),
        Case(((3, 2, 2), (3, 2, 2, 1)), {"stride": (1, 2)})),
       errors=(Bad("channels", ((1, 2, 3, 3), (3, 1, 2, 2)), S),
               Bad("output_padding", ((1, 1, 3, 3), (1, 1, 2, 2)), ValueError,
                   {"stride": 2, "output_padding": 2}),
               Bad("rank", ((1, 3), (1, 1, 2, 2)), S))),
    Op("interpolate_nearest", F.interpolate, (), np_interpolate, ANY,
       st.builds(lambda n, c, h, w, oh, ow: Case(((n, c, h, w),), {"size": (oh, ow)}),
                 st.integers(1, 2), st.integers(1, 2), st.integers(1, 5), st.integers(1, 5),
                 st.integers(1, 9), st.integers(1, 9)),
       (Case(((1, 2, 3, 4),), {"size": (5, 7)}), Case(((2, 1, 4),), {"scale_factor": 2.5}),
        Case(((1, 1, 5, 5),), {"size": 2, "mode": "nearest-exact"})),
       op="interpolate",
       errors=(Bad("no_size", ((1, 1, 3, 3),), ValueError),
               Bad("mode", ((1, 1, 3, 3),), ValueError, {"size": 2, "mode": "bicubic"}),
               Bad("rank", ((3, 3),), S, {"size": 2}))),
    Op("interpolate_linear", F.interpolate, (), np_interpolate, ANY,
       st.builds(lambda n, h, w, oh, ow, ac: Case(((n, 2, h, w),),
                                                  {"size": (oh, ow), "mode": "bilinear",
                                                   "align_corners": ac}),
                 st.integers(1, 2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 9),
                 st.integers(1, 9), st.booleans()),
       (Case(((1, 2, 3, 4),), {"size": (5, 7), "mode": "bilinear"}),
        Case(((1, 1, 3, 3),), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
        Case(((2, 1, 4),), {"size": 6, "mode": "linear"}),
        Case(((1, 1, 2, 2, 3),), {"size": (3, 3, 2), "mode": "trilinear"}),
        Case(((1, 2, 6, 5),), {"size": (3, 2), "mode": "area"})),
       op="interpolate",
       errors=(Bad("rank_mode", ((1, 1, 3),), ValueError, {"size": 2, "mode": "bilinear"}),
               Bad("align_nearest", ((1, 1, 3),), ValueError,
                   {"size": 2, "align_corners": True}))),
    # ---- losses
    Op("mse_loss", remat.mse_loss, (), lambda p, y: np.mean((p - y) ** 2), ANY, mse_cases(),
       (Case(((3, 4), (3, 4))), Case(((5,), (5,)))),
       errors=(Bad("shape", ((3,), (4,)), S),)),
    Op("binary_cross_entropy", remat.binary_cross_entropy, (), np_binary_cross_entropy,
       (PROB, PROB), mse_cases().flatmap(lambda c: st.sampled_from(
           [c, Case(c.shapes, {"reduction": "sum"}), Case(c.shapes, {"reduction": "none"})])),
       (Case(((3, 4), (3, 4))), Case(((5,), (5,)), {"reduction": "none"})),
       errors=(Bad("shape", ((3,), (4,)), S),
               Bad("range", (Raw(remat.tensor([0.5, 1.5])), Raw(remat.tensor([1.0, 0.0]))),
                   ValueError),
               Bad("reduction", ((3,), (3,)), ValueError, {"reduction": "avg"}))),
    Op("cross_entropy", remat.cross_entropy, (), np_cross_entropy, (ANY, LABELS), ce_cases(),
       (Case(((4, 5), (4,))), Case(((1, 3), (1,)))),
       errors=(Bad("target_range", ((2, 3), Raw(np.array([0, 3]))), ValueError),
               Bad("target_negative", ((2, 3), Raw([0, -1])), ValueError),
               Bad("target_len", ((2, 3), Raw([0, 1, 2])), S),
               Bad("logits_3d", ((2, 3, 4), Raw([0, 1])), S))),
    # selection by integer index: the backward is a scatter-add of rows / elements
    Op("index_select", remat.index_select, ("index_select",),
       lambda x, i, dim: np.take(x, i, axis=dim), (ANY, POSITIONS), select_cases(),
       (Case(((3, 4), (5,)), {"dim": 1}), Case(((4,), (6,)), {"dim": 0}),
        Case(((2, 3, 2), (2,)), {"dim": -2})),
       call=lambda f, ins, p: f(ins[0], p["dim"], ins[1]),
       errors=(Bad("range", ((3,), Raw(np.array([3]))), IndexError, {"dim": 0}),
               Bad("float_index", ((3,), Raw(np.array([0.5]))), remat.DTypeError, {"dim": 0}),
               Bad("index_2d", ((3,), Raw(np.zeros((2, 2), np.int64))), S, {"dim": 0}),
               Bad("dim", ((3,), Raw(np.array([0]))), S, {"dim": 1}))),
    Op("gather", remat.gather, ("gather",),
       np_gather, (ANY, POSITIONS), gather_cases(),
       (Case(((3, 4), (3, 5)), {"dim": 1}), Case(((4, 3), (2, 3)), {"dim": 0})),
       call=lambda f, ins, p: f(ins[0], p["dim"], ins[1]),
       errors=(Bad("range", ((2, 3), Raw(np.array([[3], [0]]))), IndexError, {"dim": 1}),
               Bad("rank", ((2, 3), Raw(np.array([0]))), S, {"dim": 1}))),
    Op("index_add", remat.index_add, ("index_add",), np_index_add, (ANY, POSITIONS, ANY),
       index_add_cases(),
       (Case(((3, 4), (5,), (5, 4)), {"dim": 0}), Case(((2, 3), (2,), (2, 2)), {"dim": 1}),
        Case(((4,), (3,), (3,)), {"dim": 0, "alpha": -0.5})),
       call=lambda f, ins, p: f(ins[0], p["dim"], ins[1], ins[2], alpha=p.get("alpha", 1.0)),
       errors=(Bad("source", ((2, 3), Raw(np.array([0, 1])), (2, 2)), S, {"dim": 0}),
               Bad("range", ((2, 3), Raw(np.array([2])), (1, 3)), (IndexError, S), {"dim": 0}))),
    Op("scatter_add", remat.scatter_add, ("scatter_add",), np_scatter_add,
       (ANY, POSITIONS, ANY), gather_cases().map(
           lambda c: Case((c.shapes[0], c.shapes[1], c.shapes[1]), c.params)),
       (Case(((3, 4), (3, 5), (3, 5)), {"dim": 1}), Case(((4, 3), (2, 3), (2, 3)), {"dim": 0})),
       call=lambda f, ins, p: f(ins[0], p["dim"], ins[1], ins[2]),
       errors=(Bad("src_shape", ((2, 3), Raw(np.array([[0, 1], [1, 0]])), (2, 1)), S,
                   {"dim": 1}),)),
    Op("embedding", remat.embedding, (), lambda i, w: w[i], (IDS, ANY),
       st.builds(lambda b, v, d: Case((b, (v, d))), shapes(min_dims=0, max_dims=2),
                 st.integers(1, 6), st.integers(1, 4)),
       (Case(((2, 3), (5, 4))), Case(((7,), (3, 2)))),
       errors=(Bad("range", (Raw(np.array([5])), (5, 2)), IndexError),
               Bad("weight_1d", (Raw(np.array([0])), (5,)), S))),
    Op("getitem_int_tensor", None, ("__getitem__",), lambda x, i: x[i],
       (ANY, SIGNED_POSITIONS),
       st.builds(lambda s, k: Case((s, k)), shapes(min_dims=1, max_dims=3),
                 shapes(min_dims=0, max_dims=2)),
       (Case(((4, 3), (5,))), Case(((3,), (2, 2)))), op="index",
       errors=(Bad("range", ((3,), Raw(np.array([3]))), IndexError),)),
    Op("getitem_list_after_slice", None, ("__getitem__",), lambda x, i, dim: x[:, i],
       (ANY, POSITIONS), st.builds(lambda s, k: Case(((s[0], 3) + s[1:], (k,)), {"dim": 1}),
                                   shapes(min_dims=1, max_dims=2), st.integers(0, 4)),
       (Case(((2, 3), (4,)), {"dim": 1}), Case(((2, 3, 2), (2,)), {"dim": 1})), op="index",
       call=lambda f, ins, p: f(ins[0], (slice(None), list(map(int, ins[1])))),
       dtypes=(np.float32, np.float64)),
    *ordering_rows(),
    *inplace_rows(),
]

BY_NAME = {op.name: op for op in OPS}
INPLACE = {op.name for op in inplace_rows()}  # rows writing into their first input
assert len(BY_NAME) == len(OPS), "row names must be unique"

DIFFERENTIABLE = [op for op in OPS if op.differentiable]


# ------------------------------------------------------------------------------ inputs


def arrays_for(op: Op, case: Case, dtype=np.float64, seed: int = 0) -> list[np.ndarray]:
    """Reproducible inputs for ``case``: float arrays in ``dtype`` (labels stay int64)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, shape in enumerate(case.shapes):
        d = op.domain(i)
        a = d.sample(rng, tuple(shape), case)
        out.append(a.astype(dtype) if d.tensor else np.asarray(a, dtype=np.int64))
    return out


def tensors_for(op: Op, arrays: Sequence[np.ndarray], device: str = "cpu",
                requires_grad: Sequence[int] = ()) -> list[Any]:
    """The op's arguments: remat tensors on ``device`` (``requires_grad`` for the given input
    indices) and label arrays unchanged."""
    out = []
    for i, a in enumerate(arrays):
        if op.domain(i).tensor:
            out.append(remat.tensor(a, requires_grad=i in requires_grad, device=device))
        else:
            out.append(a)
    return out


def reference(op: Op, arrays: Sequence[np.ndarray], case: Case) -> np.ndarray:
    """The NumPy reference in float64 (on float64 copies of the inputs)."""
    xs = [a.astype(np.float64) if op.domain(i).tensor else a for i, a in enumerate(arrays)]
    with np.errstate(all="ignore"):
        return np.asarray(op.ref(*xs, **case.params), dtype=np.float64)


def ids(rows: Sequence[Op]) -> list[str]:
    return [r.name for r in rows]


def example_params(rows: Sequence[Op]) -> list[tuple[Op, int]]:
    """(row, example index) pairs, for parametrizing over every fixed example."""
    return [(r, i) for r in rows for i in range(len(r.examples))]


def example_ids(rows: Sequence[Op]) -> list[str]:
    return [f"{r.name}-{i}" for r, i in example_params(rows)]
