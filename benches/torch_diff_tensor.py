"""Differential tester: the tensor API of remat against PyTorch, case by case.

Every case is one Python expression over ``L`` (the library module: ``torch`` or ``remat``),
``F`` (``L.nn.functional``) and ``T`` (``L.tensor``), compiled to ``lambda L, F, T: <expr>``
and run once per library on identical inputs (the NumPy arrays below, copied afresh for every
call). The two outcomes are compared:

* success vs exception (torch raises -> remat must raise, any type; torch succeeds -> remat
  must succeed), a PyO3 panic (``PanicException``) is always reported;
* for tensors: shape, dtype (``str`` without ``torch.``), values (float32: rtol 1e-5 /
  atol 1e-6, float64: rtol 1e-10 / atol 1e-12, integers and bools exactly, nan positions
  must match, the sign of zeros is reported separately), recursively through tuples, lists
  and named tuples (field names too); Python scalars by type and value; dtypes and devices by
  name.

Adding a case is one line in ``CASES_TEXT`` (``# name`` lines start a section) or one
``case(section, expr)`` call. Gradients use ``grad(L, fn, *arrays)``: the arrays become leaf
tensors that require grad, ``(fn(*leaves) * w).sum().backward()`` runs with fixed random
weights ``w``, and the output and every leaf's ``.grad`` are compared.

Cases run in a worker subprocess, so a panic that aborts or a hang (60 s) in one case is
reported as such and the run goes on with the next case.

    python benches/torch_diff_tensor.py            # all cases, summary of mismatches
    python benches/torch_diff_tensor.py -k einsum  # only cases whose text contains 'einsum'
    python benches/torch_diff_tensor.py -v         # also list cases where both raised

A script, not a test: the test suite never imports torch. Exits 1 when there is a mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

nan, inf = math.nan, math.inf
f32, f64, i64, i32 = np.float32, np.float64, np.int64, np.int32

# ----------------------------------------------------------------------------- inputs
_rng = np.random.default_rng(0)


def _normal(*shape: int, dtype=f32) -> np.ndarray:
    return np.round(_rng.standard_normal(shape), 3).astype(dtype)


ARRAYS: dict[str, np.ndarray] = {
    # forward inputs
    "A": _normal(3, 4),
    "Bv": _normal(4),
    "Cm": _normal(4, 5),
    "X3": _normal(2, 3, 4),
    "Y3": _normal(2, 4, 5),
    "X4": _normal(2, 1, 3, 4),
    "Sq": _normal(3, 3),
    "I": _rng.integers(-5, 6, (3, 4)).astype(i64),
    "Bm": _rng.random((3, 4)) > 0.5,
    "Bm2": np.array([[True, False, True, False], [False, False, False, False],
                     [True, True, True, True]]),
    "Z": np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, nan, inf, -inf], f32),
    "VF": np.array([-3.5, -2.0, -0.5, 1.0, 2.5, 7.0], f32),
    "VI": np.array([-7, -3, -1, 1, 4, 6], i64),
    "VB": np.array([True, False, True, True, False, True]),
    "I1": np.array([-3, -1, 0, 2, 5], i64),
    "B1": np.array([True, False, True, False, False]),
    "TIE": np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]], f32),
    "NANM": np.array([[1, nan, 3, nan], [2, 0, 5, 1], [-inf, -inf, -inf, -inf]], f32),
    "INFM": np.array([[1, inf, 3, -inf], [-inf, -inf, 0, 1], [inf, inf, 1, 1]], f32),
    "RND": np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1.25, -3.5], f32),
    # gradient inputs (float64 unless the name ends in 32)
    "G": _normal(3, 4, dtype=f64),
    "G2": _normal(3, 4, dtype=f64),
    "Gw": np.round(_rng.random((3, 4)), 3),
    "G0": np.array([[0.0, 1.0, -1.0, 2.0], [2.0, 2.0, 0.0, -3.0],
                    [0.5, -0.5, 1.0, 0.0]], f64),
    "G0T": np.array([[0.0, 1.0, 1.0, -2.0], [2.0, 1.0, 0.0, -3.0],
                     [-0.5, -0.5, 2.0, 1.0]], f64),
    "GZ": np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 1.0], [1.0, 2.0, 0.5, -2.0]], f64),
    "GC": np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 2.0, 3.0], [-1.0, 2.0, 0.5, 0.0]], f64),
    "Gv": _normal(4, dtype=f64),
    "Gv3": _normal(3, dtype=f64),
    "Gcol": _normal(3, 1, dtype=f64),
    "Grow": _normal(1, 4, dtype=f64),
    "Gm": _normal(4, 5, dtype=f64),
    "Gb": _normal(2, 3, 4, dtype=f64),
    "Gb2": _normal(2, 4, 5, dtype=f64),
    "G4": _normal(2, 1, 3, 4, dtype=f64),
    "Gbias": _normal(5, dtype=f64),
    "Gbm": _normal(3, 5, dtype=f64),
    "Gs": _normal(3, 2, dtype=f64),
    "Sq64": _normal(3, 3, dtype=f64),
    "P64": np.round(_rng.random((3, 4)) * 2 + 0.1, 3),
    "T0": np.array([0.0, 1.0, 4.0, 0.25], f64),
    "Z0": np.zeros((3, 4)),
    "NINF": np.array([[-inf, 1.0, 2.0, -inf], [-inf, -inf, -inf, -inf],
                      [0.0, 0.5, -1.0, 3.0]], f64),
    "S0": np.array(1.5),
    "G32": _normal(3, 4),
}
ARRAYS["A64"] = ARRAYS["A"].astype(f64)
ARRAYS["I32"] = ARRAYS["I"].astype(i32)
ARRAYS["Z64"] = ARRAYS["Z"].astype(f64)
ARRAYS["VD"] = ARRAYS["VF"].astype(f64)
ARRAYS["VI32"] = ARRAYS["VI"].astype(i32)
ARRAYS["I1_32"] = ARRAYS["I1"].astype(i32)


# ----------------------------------------------------------------------------- helpers
def setitem(t, idx, v):
    """``t[idx] = v``; returns ``t``."""
    t[idx] = v
    return t


def iop(t, op: str, v):
    """Augmented assignment ``t op= v``; returns ``(t, result is t)``."""
    r = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
         "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
         "**=": operator.ipow}[op](t, v)
    return r, r is t


def inplace(t, meth: str, *args, **kwargs):
    """``t.meth(*args)``; returns ``(t, returned)`` (both compared)."""
    r = getattr(t, meth)(*args, **kwargs)
    return t, r


def same(t, meth: str, *args, **kwargs):
    """Whether ``t.meth(*args)`` returns ``t`` itself (torch: in-place ops and no-op casts)."""
    return getattr(t, meth)(*args, **kwargs) is t


def meta(t):
    """Shape and dtype only (random or uninitialised tensors)."""
    return tuple(t.shape), t.dtype


def inrange(t, lo, hi):
    """Shape, dtype and whether every element lies in ``[lo, hi)``."""
    a = np.asarray(t.detach().numpy())
    return tuple(t.shape), t.dtype, bool(((a >= lo) & (a < hi)).all())


def grad(L, fn, *arrays):
    """Output of ``fn`` on leaf tensors made from ``arrays`` and the leaves' ``.grad`` after
    backward of a fixed random weighting of the output."""
    xs = [L.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    if isinstance(out, (tuple, list)):
        out = out[0]
    w = np.random.default_rng(7 + out.numel()).standard_normal(tuple(out.shape))
    (out * L.tensor(w).to(out.dtype)).sum().backward()
    return (out, *[x.grad for x in xs])


def nonleaf_setitem(L, x):
    y = x * 2
    y[0] = 0.0
    return y


def nonleaf_inplace(L, x, meth, *args):
    y = x * 1.5
    getattr(y, meth)(*args)
    return y


def view_writes(L, x, w):
    """Writes through views of a graph tensor: a row, a column, a transposed row, and a view
    made before another view was written (PyTorch's view replay)."""
    h = x * 1.5
    early = h[:2]
    h[1] += w
    h[:, 2] *= w[:3]
    h.t()[0].clamp_(-0.5)
    return h * early.sum()


def buffer_writes(L, w, v):
    """A plain buffer written from tensors that require grad (becomes part of the graph)."""
    buf = L.zeros(3, 4, dtype=L.float64)
    buf[0] = w
    buf[1:] = v.tanh()
    buf[:, 0] += 1.0
    return buf * buf


def index_writes(L, x, v):
    """Integer-array and mask assignment into a graph tensor (distinct rows: with a repeated
    row PyTorch gives every copy of the value the gradient, remat only the last, which wins)."""
    h = x * 1.5
    h[L.tensor([2, 0])] = v[:2]
    h[h > 0.5] = 0.25
    return h * h


def residual_block(L, x, w):
    """ResNet's ``out += identity`` after ops that save nothing of ``out``."""
    out = x @ w
    out = out * 2.0 - 1.0
    out += x
    out = L.relu(out)
    out *= out
    return out


def self_operand(L, x):
    h = x * 1.5
    h *= h
    h += h
    return h


def fills(L, x, v):
    """Fills keep the tensor in the graph; the filled value gets its gradient."""
    a = x * 1.5
    a.zero_()
    b = x * 2.0
    b.fill_(v)
    c = x * 1.0
    c.copy_(v.expand(3, 4) * 3)
    return a + b + c


def saved_output_written(L, x):
    """exp saves its output: writing it in place fails at backward (both libraries)."""
    y = x.exp()
    y += 1
    return y


def saved_modified(L):
    """A tensor saved for backward modified in place -> error at backward."""
    x = L.tensor(ARRAYS["G"], requires_grad=True)
    y = x * 2
    z = y.sin()
    y.add_(1)
    z.sum().backward()
    return x.grad


def saved_leaf_modified_no_grad(L):
    x = L.tensor(ARRAYS["G"], requires_grad=True)
    y = (x * x).sum()
    with L.no_grad():
        x.add_(1)
    y.backward()
    return x.grad


def leaf_no_grad_update(L):
    x = L.tensor(ARRAYS["G"], requires_grad=True)
    (x * x).sum().backward()
    with L.no_grad():
        x.sub_(x.grad, alpha=0.1)
    return x, x.grad, x.requires_grad, x.is_leaf


def leaf_inplace(L):
    x = L.tensor(ARRAYS["G"], requires_grad=True)
    x.add_(1)
    return x


def accumulate(L):
    x = L.tensor(ARRAYS["G"], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    return x.grad


def grad_attrs(L):
    x = L.tensor(ARRAYS["G"], requires_grad=True)
    y = x * 2
    return x.is_leaf, y.is_leaf, y.requires_grad, x.grad is None, y.detach().requires_grad


def numpy_shares(L, ctor):
    a = ARRAYS["A"].copy()
    t = getattr(L, ctor)(a)
    t[0, 0] = 100.0
    return float(a[0, 0])


NS: dict = {"np": np, "math": math, "nan": nan, "inf": inf, "operator": operator,
            "f32": f32, "f64": f64, "i64": i64, "i32": i32}
NS.update({k: v for k, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__
           and not k.startswith("_")})

# ----------------------------------------------------------------------------- cases
CASES_TEXT = r"""
# creation: dtype inference
T([1, 2, 3])
T([1.0, 2, 3])
T([True, False])
T([True, 2])
T([True, 2.5])
T([1, 2.5])
T(3)
T(3.5)
T(True)
T(-0.0)
T([])
T([[]])
T([[1, 2], [3]])
T([[1, 2], [3, 4]])
T([[[1.5]]])
T(np.array([1, 2], dtype=np.int32))
T(np.array([1, 2], dtype=np.int16))
T(np.array([1, 2], dtype=np.uint8))
T(np.array([1.0, 2.0]))
T(np.array([1.0, 2.0], dtype=np.float16))
T(np.array([1.0, 2.5], dtype='>f4'))
T(np.array([1, 2], dtype='>i8'))
T(np.array([True, False]))
T(np.float64(2.5))
T(np.float32(2.5))
T(np.int32(3))
T(np.bool_(True))
T(np.array(2.5))
T(np.array(7))
T(A[:, ::2])
T(A.T)
T([np.float32(1.5), 2])
T([1, 2], dtype=L.float64)
T([1.7, -1.7, 2.5], dtype=L.int64)
T([1.7, -1.7], dtype=L.int32)
T([0.0, 2.0, -0.5], dtype=L.bool)
T([3, 0], dtype=L.bool)
T(T([1, 2]))
T(T([1, 2]), dtype=L.float32)
T(np.array([1 + 2j]))
T(np.array(['a']))
T(np.array([object()]))
T('abc')
T(None)
T(2 ** 63)
T([2 ** 62, 1])
T([1e40])
T([1e40], dtype=L.float64)
T([1, 2], requires_grad=True)
T([1.0, 2.0], requires_grad=True).requires_grad
T([[1, 2], [3, 4]], dtype=L.long)
T([1, 2], dtype=L.double)
T([1, 2], dtype=L.float)
T([1, 2], dtype=L.int)
L.as_tensor([1, 2])
L.as_tensor(np.array([1.0, 2.0], dtype=np.float32))
L.as_tensor([1, 2], dtype=L.float32)
L.as_tensor(T([1, 2]), dtype=L.float64)
L.as_tensor(3.5)
L.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3)[:, ::2])
L.from_numpy(np.arange(3.0)[::-1])
L.from_numpy(np.array([1.0, 2.0], dtype=np.float32))
L.from_numpy(np.array(5))
L.from_numpy(np.array([True]))
L.from_numpy([1, 2])
numpy_shares(L, 'from_numpy')
numpy_shares(L, 'tensor')
numpy_shares(L, 'as_tensor')
# creation: zeros/ones/full/like
L.zeros(2, 3)
L.zeros((2, 3))
L.zeros([2, 3])
L.zeros(2, 3, dtype=L.int64)
L.zeros(())
L.zeros(0, 3)
L.zeros(-1)
L.zeros(2.5)
L.ones(2, dtype=L.bool)
L.ones(3, dtype=L.int32)
L.ones((2, 1), dtype=L.float64)
L.full((2, 2), 7)
L.full((2, 2), 7.0)
L.full((2, 2), True)
L.full((2,), 1.5, dtype=L.int64)
L.full((2,), -1, dtype=L.bool)
L.full((2,), nan)
L.full(3, 1.0)
L.full([2, 3], -inf, dtype=L.float64)
L.full((), 4)
L.zeros_like(T([1, 2]))
L.zeros_like(T(A), dtype=L.int64)
L.ones_like(T([1.0, 2]), dtype=L.int64)
L.ones_like(T(VB))
L.full_like(T([1, 2]), 2.7)
L.full_like(T([1.0, 2]), 3)
L.full_like(T(VB), 5)
L.full_like(T(A), 1, dtype=L.int32)
meta(L.empty(2, 3))
meta(L.empty((2, 3), dtype=L.int64))
meta(L.empty(0))
meta(L.empty_like(T([1, 2])))
meta(L.empty_like(T(A), dtype=L.float64))
# creation: random
inrange(L.rand(2, 3), 0, 1)
inrange(L.rand((2, 3)), 0, 1)
inrange(L.rand(4, dtype=L.float64), 0, 1)
meta(L.randn(2, 3))
meta(L.randn(2, 3, dtype=L.float64))
meta(L.randn(()))
meta(L.rand(2, dtype=L.int64))
meta(L.randn(2, dtype=L.bool))
inrange(L.randint(0, 10, (3,)), 0, 10)
inrange(L.randint(5, (2, 2)), 0, 5)
inrange(L.randint(-3, 3, (4, 4)), -3, 3)
inrange(L.randint(0, 10, (3,), dtype=L.int32), 0, 10)
inrange(L.randint(0, 2, (3,), dtype=L.float32), 0, 2)
inrange(L.randint(0, 10, size=(2,)), 0, 10)
meta(L.randint(3, 3, (2,)))
meta(L.randint(5, 3, (2,)))
meta(L.randint(0, 5, ()))
meta(L.rand_like(T(A)))
meta(L.rand_like(T([1, 2])))
meta(L.randn_like(T(A), dtype=L.float64))
meta(L.randn_like(T([1, 2])))
inrange(inplace(T(A), 'uniform_', -2, -1)[0], -2, -1)
inrange(inplace(T(A64), 'uniform_')[0], 0, 1)
meta(inplace(T(A), 'normal_', 0, 2)[0])
meta(inplace(T(I), 'normal_')[0])
# creation: arange
L.arange(5)
L.arange(5.0)
L.arange(1, 4)
L.arange(0, 1, 0.1)
L.arange(0, 1, 0.25)
L.arange(0.0, 1.0, 0.3)
L.arange(1, 2.5, 0.5)
L.arange(5, 0, -1)
L.arange(5, 0, -1.5)
L.arange(-3, 3, 2)
L.arange(1, 10, 3)
L.arange(0, 0)
L.arange(3, 1)
L.arange(0, 5, -1)
L.arange(0, -1, 0.1)
L.arange(0, 5, 0)
L.arange(10, dtype=L.float64)
L.arange(4, dtype=L.int32)
L.arange(0, 1, 0.25, dtype=L.float64)
L.arange(0.5, 3, dtype=L.int64)
L.arange(1e-3)
L.arange(-2.5)
L.arange(start=1, end=4)
L.arange(T(3))
L.arange(np.int64(4))
L.arange(0, 1.0, 1 / 3)
L.arange(-1, 1, 0.4)
# creation: linspace
L.linspace(0, 1, 5)
L.linspace(0, 1, 1)
L.linspace(0, 1, 0)
L.linspace(1, 0, 4)
L.linspace(0, 10, 5, dtype=L.int64)
L.linspace(0, 10, 4, dtype=L.int64)
L.linspace(-1, 1, 7, dtype=L.float64)
L.linspace(0, 1, steps=3)
L.linspace(0, 1, -1)
L.linspace(3, 3, 3)
L.linspace(-5, 5, 2)
L.linspace(0.1, 0.7, 7)
L.linspace(0, 1)
# creation: eye / tril / triu
L.eye(3)
L.eye(2, 3)
L.eye(3, 2, dtype=L.bool)
L.eye(3, dtype=L.int64)
L.eye(0)
L.eye(1, 0)
L.eye(-1)
L.eye(n=2, m=4)
L.tril(T(A))
L.tril(T(A), 1)
L.tril(T(A), -1)
L.tril(T(A), diagonal=-5)
L.triu(T(A))
L.triu(T(A), 2)
L.triu(T(A), -1)
L.triu(T(A), diagonal=10)
L.tril(T(X3))
L.triu(T(X3), 1)
L.tril(T(Bv))
L.tril(T(I))
L.triu(T(Bm))
T(A).tril(1)
T(A).triu(diagonal=-2)
L.tril(L.ones(2, 0))
# unary matrix (generated below)
# elementwise: rounding, sign, clamp, special values
L.round(T(RND))
L.round(T(RND, dtype=L.float64))
L.round(T([1.25, 1.35, -1.25, 2.675]), decimals=1)
L.round(T([1234.5, 1250.0]), decimals=-2)
T(RND).round()
L.round(T(I1))
L.sign(T(Z))
L.sign(T([-0.0, 0.0]))
L.floor(T(Z))
L.ceil(T(Z))
L.clamp(T(Z), -1, 1)
L.clamp(T(Z), min=0)
L.clamp(T(Z), max=0)
L.clamp(T(Z), min=0.0, max=0.0)
L.clamp(T(Z), 1, -1)
L.clamp(T(Z), nan, 1)
L.clamp(T(Z), -inf, inf)
L.clamp(T(Z))
L.clamp(T(I), -2, 2)
L.clamp(T(I), -2.5, 2.5)
L.clamp(T(I), min=0.5)
L.clamp(T(I32), 0, 3)
L.clamp(T(VB), 0, 1)
L.clamp(T(A), T(Bv), 1.0)
L.clamp(T(A), min=T(Bv), max=T(Bv) + 1)
L.clamp(T(A), T([0.0]), T(1.0))
L.clamp(T(A64), min=T(Bv))
L.clamp(T(A), -1, 1) is not None
L.clip(T(Z), -1, 1)
T(Z).clip(min=-1)
T(Z).clamp(-1, 1)
L.maximum(T(Z), L.zeros(11))
L.minimum(T(Z), L.zeros(11))
L.maximum(T([-0.0, 0.0, nan, 1.0]), T([0.0, -0.0, 1.0, nan]))
L.minimum(T([-0.0, 0.0, nan, 1.0]), T([0.0, -0.0, 1.0, nan]))
L.maximum(T(VI), T(VF))
L.maximum(T(VI), T(VI32))
L.maximum(T(VB), T(VB))
L.maximum(T(VI), T(2.5))
L.maximum(T(A), T(Bv))
L.maximum(T(A), 0.0)
L.minimum(T(A), T(A64))
T(A).maximum(T(Bv))
T(A).minimum(T(Bv))
L.max(T(A), T(Bv))
L.min(T(A), T(Bv))
# elementwise: activations
F.silu(T(Z))
F.softplus(T(Z))
F.softplus(T(A), beta=2.0, threshold=1.0)
F.leaky_relu(T(Z))
F.leaky_relu(T(Z), 0.2)
F.leaky_relu(T(Z), negative_slope=-1.0)
F.gelu(T(Z))
F.gelu(T(Z), approximate='tanh')
F.relu(T(Z))
F.silu(T(I1))
F.softplus(T(I1))
F.leaky_relu(T(I1))
F.gelu(T(I1))
F.relu(T(I1))
F.relu(T(B1))
L.relu(T(I1))
L.sigmoid(T(I1))
L.silu(T(Z))
L.softplus(T(Z))
L.leaky_relu(T(Z), 0.1)
F.silu(T(Z64))
F.softplus(T(Z64))
L.softmax(T(A), 1)
L.softmax(T(NANM), -1)
L.softmax(T(INFM), -1)
L.log_softmax(T(A), 0)
L.log_softmax(T(INFM), -1)
L.softmax(T(I), 1)
F.softmax(T(A), dim=-1)
# elementwise: masked_fill / where / lerp
T(A).masked_fill(T(Bm), 0.0)
T(A).masked_fill(T(Bm), -inf)
T(A).masked_fill(T(Bm[0]), 9.0)
T(A).masked_fill(T(Bm[:, :1]), 9.0)
T(A).masked_fill(T(Bm), T(5.0))
T(A).masked_fill(T(Bm), T([5.0]))
T(A).masked_fill(T(Bm), 2)
T(A).masked_fill(T(I), 0.0)
T(A).masked_fill(T(Bm), T(5, dtype=L.int64))
T(I).masked_fill(T(Bm), 2.7)
T(I).masked_fill(T(Bm), -1)
T(Bm).masked_fill(T(Bm), False)
T(A).masked_fill(T(Bm[:2]), 0.0)
L.masked_fill(T(A), T(Bm), 1.0)
L.where(T(Bm), T(A), T(I))
L.where(T(Bm), T(A), T(A64))
L.where(T(Bm), 1.0, 0.0)
L.where(T(Bm), 1, 0)
L.where(T(Bm), T(A), 0)
L.where(T(Bm), T(A), 0.5)
L.where(T(Bm), T(I), 0.5)
L.where(T(Bm), T(I), 7)
L.where(T(Bm), T(I32), 7)
L.where(T(Bm), 2, T(A))
L.where(T(Bm), True, False)
L.where(T(Bm[0]), T(A), T(Bv))
L.where(T(Bm[:, :1]), T(Bv), -1.0)
L.where(T(A) > 0, T(A), nan)
L.where(T(Bm))
L.where(T(I), T(A), 0.0)
L.where(T(A), T(A), 0.0)
L.where(T(Bm), T(A), T(Bv[:3]))
L.where(T(Bm), T(3.0, dtype=L.float64), T(A))
T(A).where(T(Bm), 0.0)
L.lerp(T(A), T(A64).float() * 2, 0.5)
L.lerp(T(A), T(Bv), 0.25)
L.lerp(T(A), T(Bv), T(Bm).float())
L.lerp(T(A), T(A), T(2.0))
L.lerp(T(VF), T(VF) + 1, 1.5)
L.lerp(T(A), T(A64), 0.5)
L.lerp(T(I), T(I), 0.5)
T(A).lerp(T(Bv), 0.3)
# elementwise: division and modulo corner cases
T([1.0, -1.0, 0.0]) / 0
T([1.0, -1.0, 0.0]) / -0.0
T([1, -1, 0]) / 0
T([1, 2, 3]) / 2
T([1, 2]) / T([2, 4])
T([True, False]) / 2
T([1, 2], dtype=L.int32) / T([3, 4], dtype=L.int32)
T(7) / 2
T([-7.5, 7.5, -0.5]) // 2
T([-7.5, 7.5, -0.5]) // -2
T([1.0, -1.0, 0.0]) // 0
T([-7, 7, -1, 0]) // 2
T([-7, 7, -1, 0]) // -2
T([-7, 7]) // T([2, -2])
T([5, 6]) // 0
T([5, 6]) // T([0, 1])
T([-7.0, 7.0, -0.0]) % 3
T([-7.0, 7.0, -0.0]) % -3
T([-7, 7, 0]) % 3
T([-7, 7, 0]) % -3
T([-7, 7]) % T([2, -2])
T([5, 6]) % 0
T([5.0, -6.0]) % 0
T([5.5, -5.5]) % 2.5
-7 // T([2, -2])
-7.5 % T([2.0, -2.0])
7 % T([-3, 3])
L.floor_divide(T([-7, 7]), 2)
L.remainder(T([-7.0, 7.0]), 3)
L.div(T([7, -7]), 2, rounding_mode='floor')
L.div(T([7, -7]), 2, rounding_mode='trunc')
L.div(T([7.5, -7.5]), 2, rounding_mode='trunc')
L.div(T([7, -7]), 2, rounding_mode='bad')
T([2 ** 40]) * 2 ** 20
T([2 ** 62]) * 4
T([1]) + 2 ** 64
T([1]) + (2 ** 63 - 1)
T([1], dtype=L.int32) + 2 ** 40
T([1], dtype=L.int32) * 3
T([1], dtype=L.int32) + T(2 ** 40)
T([1.0]) + 1e300
T([1.0], dtype=L.float64) + 1e300
# elementwise: powers
T([2, 3]) ** 2
T([2, 3]) ** 2.0
T([2, 3]) ** -1
T([2, 3]) ** -1.0
T([2, 3]) ** 0.5
T([2, 3]) ** 0
T([2, 3], dtype=L.int32) ** 2
2 ** T([1, 2])
2.0 ** T([1, 2])
2 ** T([-1, 2])
T([-8.0, 8.0]) ** (1 / 3)
T([0.0]) ** 0
T([0.0, -0.0]) ** -1
T([0.0]) ** 0.5
T([-2.0, 2.0]) ** 3
T([2, 3]) ** T([2.0, 0.5])
T([2, 3]) ** T([2, -1])
T([2, 0]) ** T([-1, -1])
T([True, False]) ** 2
T([True, False]) ** T([True, True])
T([2.0, 3.0]) ** T(2)
T(2.0) ** T([1.0, 2.0])
T([inf, -inf, nan]) ** 0
T([1.0, -1.0]) ** inf
T([4.0, 9.0]).pow(0.5)
L.pow(T([2, 3]), 3)
L.pow(2, T([2, 3]))
L.pow(T([2.0]), T([[1.0], [2.0]]))
T([2, 3]).pow(2.5)
T(VI) ** 3
T([3]) ** 40
T([2]) ** 63
# elementwise: broadcasting and 0-d
T(A) + T(Bv)
T(A) + T(Bv[:3])
T(A[:, :1]) + T(Bv)
T(A)[:, None, :] + T(A)[None, :, :]
T(X3) * T(A)
T(X3) * T(Bv[:3])
T(X4) + T(X3)
T(3.0) + T(Bv)
T(3) + T(2)
T(3) / T(2)
T(3.0, dtype=L.float64) + T(2)
(T(3) + T(2.5)).dtype
L.zeros(0, 4) + T(Bv)
L.zeros(0) + 1
L.zeros(2, 0) * L.zeros(1, 0)
L.zeros(3, 0) + L.zeros(2, 0)
L.add(T(A), T(Bv), alpha=2)
L.add(T(A), 1, alpha=0.5)
L.add(T(I), T(I), alpha=2)
L.add(T(I), T(I), alpha=0.5)
L.sub(T(A), T(Bv), alpha=-1)
L.sub(T(VB), T(VB))
L.mul(T(A), 2)
L.mul(T(VB), T(VB))
L.div(T(VI), T(VI32))
L.neg(T(VB))
L.neg(T(VI32))
-T(VB)
-T(VI)
+T(VF)
abs(T(VI))
abs(T(Z))
# comparison / logical extras
T(Z) == T(Z)
T(Z) != T(Z)
T(Z) < inf
T(Z) >= -inf
T(Z) > nan
T([1, 2]) == T([1.0, 2.5])
T([1, 2]) == None
T([1, 2]) != None
T([1, 2]) == 'a'
T(A) > T(Bv)
T(A) > T(Bv[:3])
T([True, False]) == 1
T([True, False]) < 0.5
T([2 ** 53 + 1]) == T([2.0 ** 53])
L.eq(T(A), T(A64))
L.ne(T(I), 0)
L.lt(T(A), 0)
L.le(T(A), T(Bv))
L.gt(T(I), T(A))
L.ge(T(VB), T(VB))
L.eq(2, T([2]))
T(A).eq(0)
T(A).ge(T(Bv))
L.greater(T(A), 0)
L.less_equal(T(A), 0)
L.not_equal(T(A), 0)
L.logical_and(T(A), T(I))
L.logical_and(T(Z), T(Z))
L.logical_or(T(Z), 0)
L.logical_or(T(I), T(Bm))
L.logical_xor(T(Bm), T(Bm2))
L.logical_not(T(Z))
L.logical_not(T(I))
L.logical_not(T(Bm))
L.logical_and(T(Bm), T(Bv))
L.isnan(T(Z))
L.isinf(T(Z))
L.isfinite(T(Z))
L.isnan(T(I))
L.isinf(T(VB))
L.isfinite(T(I32))
T(Z).isnan()
T(Z).isfinite()
~T(Bm)
~T(VI)
~T(VI32)
~T(VF)
~T(True)
L.bitwise_not(T(VI))
L.bitwise_and(T(VI), 3)
L.bitwise_or(T(VB), T(VB))
L.bitwise_xor(T(VI32), T(VI))
# reductions: specials
L.sum(T(A), ())
L.sum(T(A), (0, 0))
L.sum(T(A), [0, 1])
L.sum(T(A), dim=None)
L.sum(T(A), 2)
L.sum(T(2.5), 0)
L.sum(T(2.5), -1)
L.sum(T(2.5), 1)
L.sum(T(A), dtype=L.float64)
L.sum(T(I), dtype=L.float32)
L.sum(T(Bm), dtype=L.int32)
L.sum(T(I32))
L.sum(T(I32), 0)
L.sum(T(A64), 1)
L.sum(L.zeros(0))
L.sum(L.zeros(0, 3), 0)
L.sum(L.zeros(0, 3), 1)
L.sum(T(Z))
L.sum(T(INFM), 1)
T(A).sum(0, True)
T(A).sum(-1, keepdim=True)
T(A).sum(dim=(1, 0))
T(A).sum(dim=(-1, -2), keepdims=True)
T(X3).sum((0, 2))
T(X3).sum(axis=(0, -1), keepdims=True)
L.mean(T(I))
L.mean(T(I), dtype=L.float32)
L.mean(T(I), 0)
L.mean(T(Bm))
L.mean(T(A64))
L.mean(L.zeros(0))
L.mean(L.zeros(0, 3), 0)
L.mean(T(A), (0, 1))
L.mean(T(X3), (0, 2), keepdim=True)
L.mean(T(A), dtype=L.float64)
L.prod(T(A), (0, 1))
L.prod(T(I), dtype=L.float64)
L.prod(T(I32))
L.prod(T(Bm), 1)
L.prod(L.zeros(0))
L.prod(T(Z))
L.prod(T(I), 0)
T(A).prod(dim=1, keepdim=True)
L.max(T(A))
L.max(T(A), 1)
L.max(T(A), dim=0)
L.max(T(A), 1, True)
L.max(T(A), dim=-1, keepdim=True)
L.max(T(A), axis=1)
L.max(T(A), (0, 1))
L.max(T(TIE), 1)
L.max(T(TIE), 0)
L.min(T(TIE), 1)
L.min(T(TIE), 0)
L.max(T(NANM), 1)
L.min(T(NANM), 1)
L.max(T(NANM))
L.min(T(NANM))
L.max(T(I), 1)
L.max(T(I32), 0)
L.max(T(Bm), 1)
L.max(T(Bm))
L.max(L.zeros(0))
L.max(L.zeros(0, 3), 1)
L.max(L.zeros(0, 3), 0)
L.max(T(2.5), 0)
L.max(T(A), 1).values
L.max(T(A), 1).indices
L.max(T(A), 1)[1]
T(A).max(1)
T(A).max(dim=0, keepdim=True)
T(A).min(-1)
T(A).max(T(Bv))
L.amax(T(A))
L.amax(T(A), (0, 1))
L.amax(T(A), -1, keepdim=True)
L.amax(T(TIE), 1)
L.amax(T(NANM), 1)
L.amin(T(NANM), 1)
L.amax(T(I), 0)
L.amax(T(Bm), 0)
L.amax(L.zeros(0))
L.amax(L.zeros(0, 3), 1)
L.amin(T(A), dim=(0,))
L.argmax(T(A))
L.argmax(T(TIE))
L.argmax(T(TIE), 1)
L.argmax(T(TIE), 0)
L.argmin(T(TIE), 1)
L.argmin(T(TIE), 0)
L.argmax(T(NANM), 1)
L.argmin(T(NANM), 1)
L.argmax(T(NANM))
L.argmax(T(INFM), 1)
L.argmin(T(INFM), 1)
L.argmax(T(A), dim=1, keepdim=True)
L.argmax(T(A), keepdim=True)
L.argmax(T(I))
L.argmax(T(Bm), 1)
L.argmax(T(Bm))
L.argmax(T(2.5))
L.argmax(L.zeros(0))
L.argmax(T(A), (0, 1))
T(A).argmax(-1)
T(A).argmin(0)
L.var(T(A))
L.var(T(A), 0)
L.var(T(A), unbiased=False)
L.var(T(A), 1, correction=0)
L.var(T(A), correction=2)
L.var(T(A), 1, unbiased=True, keepdim=True)
L.var(T(A), dim=1, keepdim=True)
L.var(T(A), (0, 1))
L.var(T(A), 1, False)
L.var(T([1.5]))
L.var(T([1.5]), correction=0)
L.var(T(A), correction=4)
L.var(T(A), 1, correction=5)
L.var(T(I))
L.var(T(A64), 0, correction=0)
L.var(T(Z))
L.std(T(A))
L.std(T(A), 0, correction=0)
L.std(T(A), unbiased=False)
L.std(T(A), axis=0)
L.std(T(A), dim=(0, 1), keepdim=True)
L.std(T(I))
L.std(T([2.0]))
T(A).var(1)
T(A).std(dim=0, correction=0)
L.norm(T(A))
L.norm(T(A), p=1)
L.norm(T(A), p=2, dim=1)
L.norm(T(A), p=inf)
L.norm(T(A), p=-inf)
L.norm(T(A), p=inf, dim=0)
L.norm(T(A), p=0)
L.norm(T(A), p=3)
L.norm(T(A), p=0.5)
L.norm(T(A), dim=(0, 1))
L.norm(T(A), p='fro')
L.norm(T(A), p='fro', dim=1)
L.norm(T(A), dim=1, keepdim=True)
L.norm(T(A), 2, 0, True)
L.norm(T(Z))
L.norm(T(I))
L.norm(T(I).float(), p=1)
L.norm(L.zeros(0))
L.norm(T(A64), p=3, dim=-1)
T(A).norm()
T(A).norm(p=1, dim=0)
T(A).norm(1)
L.logsumexp(T(A), 1)
L.logsumexp(T(A), 1, keepdim=True)
L.logsumexp(T(A), (0, 1))
L.logsumexp(T(A), dim=-1)
L.logsumexp(T(NANM), 1)
L.logsumexp(T(INFM), 1)
L.logsumexp(T(NINF), 1)
L.logsumexp(T(I), 0)
L.logsumexp(T(A))
L.logsumexp(L.zeros(0), 0)
L.logsumexp(T(A64), 0)
T(A).logsumexp(0)
L.cumsum(T(A), 0)
L.cumsum(T(A), dim=-1)
L.cumsum(T(I), 1)
L.cumsum(T(I32), 0)
L.cumsum(T(Bm), 0)
L.cumsum(T(A), 0, dtype=L.float64)
L.cumsum(T(I), 0, dtype=L.float32)
L.cumsum(T(A))
L.cumsum(T(2.5), 0)
L.cumsum(L.zeros(0), 0)
L.cumsum(T(Z), 0)
T(I).cumsum(0)
T(A).cumsum(axis=1)
L.all(T(A))
L.all(T(I))
L.all(T(I32))
L.all(T(Bm), 0)
L.any(T(Bm), 0)
L.any(T(Bm), 1, keepdim=True)
L.all(T(A), dim=1, keepdim=True)
L.all(T(Z))
L.any(T(Z))
L.all(L.zeros(0, dtype=L.bool))
L.any(L.zeros(0, dtype=L.bool))
L.all(L.zeros(0))
L.any(T(A), (0, 1))
L.all(T([nan]))
T(Bm).any()
T(Bm).all(0)
T(I).any(1)
np.mean(T(A))
np.sum(T(I))
np.max(T(A))
np.sum(T(A), axis=0)
np.mean(T(A), axis=1)
# shape ops
T(A).view(12)
T(A).view(-1, 6)
T(A).view(2, -1, 2)
T(A).view((3, 4))
T(A).view(-1)
T(A).view(5, -1)
T(A).view(-1, -1)
T(A).view(6, 3)
T(A).T.view(12)
T(A).T.reshape(12)
T(A).t().view(-1)
T(A).view(1, 12, 1)
T(A).view(L.int32)
T([2.5]).view(())
T(2.5).view(1)
T(A).reshape(-1, 2)
T(A).reshape((2, -1))
T(A).reshape([4, 3])
T(A).reshape(12, 1)
T(A).reshape(0, -1)
L.zeros(0, 3).reshape(-1)
L.zeros(0, 3).reshape(3, -1)
L.reshape(T(A), (-1,))
T(A).permute(1, 0)
T(X3).permute((2, 0, 1))
T(X3).permute(-1, 0, 1)
T(X3).permute(0, 0, 1)
T(X3).permute(0, 1)
L.permute(T(X3), (1, 2, 0))
T(A).transpose(0, 1)
T(X3).transpose(-1, -2)
T(A).transpose(0, 2)
L.transpose(T(X3), 0, 2)
T(X3).T
T(X3).mT
T(Bv).T
T(Bv).mT
T(X3).movedim(0, -1)
T(X3).movedim((0, 1), (2, 0))
T(X3).movedim(0, 5)
T(X3).movedim((0, 1), (1, 1))
L.movedim(T(X3), -1, 0)
T(A).unsqueeze(0)
T(A).unsqueeze(-1)
T(A).unsqueeze(2)
T(A).unsqueeze(-3)
T(A).unsqueeze(3)
T(A).unsqueeze(-4)
L.unsqueeze(T(2.5), 0)
L.unsqueeze(T(A), dim=1)
L.zeros(1, 3, 1).squeeze()
L.zeros(1, 3, 1).squeeze(0)
L.zeros(1, 3, 1).squeeze(1)
L.zeros(1, 3, 1).squeeze(-1)
L.zeros(1, 3, 1).squeeze((0, 2))
L.zeros(1, 3, 1).squeeze((0, 1))
L.zeros(1, 3, 1).squeeze(dim=(0, -1))
L.zeros(1, 3, 1).squeeze(3)
T(2.5).squeeze()
T(2.5).squeeze(0)
L.squeeze(L.zeros(1, 1))
L.squeeze(L.zeros(1, 2), 0)
T(A[:, :1]).expand(3, 5)
T(A[:, :1]).expand(-1, 4)
T(A[:, :1]).expand(2, 3, 4)
T(A[:, :1]).expand(2, -1, 4)
T(A[:, :1]).expand(-1, 3, 4)
T(A[:, :1]).expand(4, 4)
T(A[:, :1]).expand((3, 2))
T(A).expand(3, 4)
T(2.5).expand(3)
T(A[:, :1]).expand_as(T(A))
L.broadcast_to(T(Bv), (3, 4))
L.broadcast_to(T(Bv), (2, 3, 4))
L.broadcast_to(T(Bv), (4, 3))
L.broadcast_to(T(A[:, :1]), (3, -1))
T(Bv).broadcast_to((2, 4))
T(X3).flatten()
T(X3).flatten(1)
T(X3).flatten(0, 1)
T(X3).flatten(-2, -1)
T(X3).flatten(start_dim=1, end_dim=0)
T(X3).flatten(1, 1)
T(2.5).flatten()
L.flatten(T(X3), 1)
T(A).unflatten(1, (2, 2))
T(A).unflatten(-1, (2, -1))
T(A).unflatten(0, (2, 2))
T(A).unflatten(1, (4,))
T(A).unflatten(1, (-1, -1))
L.unflatten(T(A), 0, (1, 3))
T(A).split(2)
T(A).split(2, dim=1)
T(A).split([1, 3], 1)
T(A).split([1, 1], 0)
T(A).split(5)
T(A).split([3, 0], 0)
T(A).split(0)
L.split(T(A), 3, 1)
L.split(T(A), [2, 2], dim=-1)
T(A).chunk(2)
T(Bv).chunk(3)
L.arange(5).chunk(3)
L.arange(10).chunk(4)
L.arange(4).chunk(6)
L.arange(6).chunk(4)
T(A).chunk(4, dim=1)
T(A).chunk(0)
L.chunk(T(A), 2, -1)
L.zeros(0).chunk(2)
T(A).narrow(1, 1, 2)
T(A).narrow(0, -1, 1)
T(A).narrow(1, 3, 2)
T(A).narrow(1, 0, 0)
T(A).narrow(-1, 2, 2)
L.narrow(T(A), 0, 1, 2)
T(A).repeat(2, 1)
T(A).repeat(2, 1, 1)
T(A).repeat(1)
T(A).repeat((2, 2))
T(A).repeat(0, 1)
T(Bv).repeat(3)
T(2.5).repeat(2)
L.repeat(T(A), 1, 2)
T(A).flip(0)
T(A).flip((0, 1))
T(A).flip(-1)
T(A).flip(0, 1)
T(I).flip(1)
T(A).flip(2)
L.flip(T(A), [1])
T(A).flip(())
L.cat([T(A), T(A)])
L.cat([T(A), T(A)], 1)
L.cat([T(A), T(A)], dim=-1)
L.cat([T(A), T(I)])
L.cat([T(I), T(Bm)])
L.cat([T(I32), T(I)])
L.cat([T(A), T(A64)])
L.cat([T(A), L.zeros(0)])
L.cat([L.zeros(0), T(A)], 1)
L.cat([L.zeros(0), L.zeros(0)])
L.cat([L.zeros(0, 4), T(A)])
L.cat([T(A), T(Bv)])
L.cat([T(A), T(Bv[None])])
L.cat([T(A)])
L.cat([])
L.cat((T(A), T(A)), axis=1)
L.cat([T(A), T(A)], 2)
L.cat([T(2.5), T(2.5)])
L.concat([T(A), T(A)])
L.concatenate([T(A), T(A)], axis=0)
L.concatenate([T(A), T(A)], 1)
L.stack([T(Bv), T(Bv)])
L.stack([T(Bv), T(Bv)], 1)
L.stack([T(Bv), T(Bv)], dim=-1)
L.stack([T(Bv), T(Bv).long()])
L.stack([T(VI), T(VB)])
L.stack([T(Bv), T(Bv[:3])])
L.stack([L.zeros(0), L.zeros(0)])
L.stack([T(2.5), T(1.0)])
L.stack([T(Bv)], 2)
L.stack([])
L.stack((T(A), T(A)), axis=0)
# indexing: basic
T(A)[1]
T(A)[-1]
T(A)[1, 2]
T(A)[1][2]
T(A)[:, 1]
T(A)[::2]
T(A)[1:]
T(A)[:, ::3]
T(A)[10:]
T(A)[-10:2]
T(A)[1:100]
T(A)[2:1]
T(A)[:, -3:-1]
T(A)[::-1]
T(A)[::0]
T(A)[None]
T(A)[:, None]
T(A)[..., 1]
T(A)[..., None]
T(A)[None, ..., None]
T(A)[1, ..., 2]
T(A)[..., ...]
T(A)[5]
T(A)[-4]
T(A)[0, 4]
T(A)[0.5]
T(A)[1, 2, 3]
T(A)[()]
T(2.5)[()]
T(2.5)[None]
T(2.5)[...]
T(2.5)[0]
T(X3)[1, :, ::2]
T(X3)[..., -1]
T(X3)[:, None, 1]
T(A)[True]
T(A)[False]
T(A)[np.int64(1)]
T(A)[T(1)]
T(A)[T(1), T(2)]
# indexing: advanced
T(A)[[0, 2]]
T(A)[[0, 2], [1, 3]]
T(A)[[[0], [2]], [1, 3]]
T(A)[T([0, 2])]
T(A)[T([-1])]
T(A)[T([[0, 1]])]
T(A)[T([0, 2], dtype=L.int32)]
T(A)[T([0.0, 2.0])]
T(A)[T([5])]
T(A)[T([-4])]
T(A)[[0, 5]]
T(A)[:, [1, 0]]
T(A)[:, T([3, 3, 0])]
T(A)[[0, 1], :, None]
T(A)[T(Bm)]
T(A)[T(Bm[:, 0])]
T(A)[T([True, False, True])]
T(A)[[True, False, True]]
T(A)[T([True, False])]
T(A)[T(Bm[:2])]
T(A)[:, T([True, False, True, True])]
T(A)[T(A) > 0]
T(A)[T(I) > 100]
T(X3)[:, [0, 1], [1, 2]]
T(X3)[[0, 1], :, [1, 2]]
T(X3)[[0, 1], [1, 2]]
T(X3)[..., [0, 0]]
T(X3)[T(Bm)]
T(X3)[0, T(Bm)]
T(X3)[:, T(Bm)]
T(X3)[T([1, 0]), :, T([0, 3])]
T(X3)[None, [1], ..., [0]]
T(I)[T([0, 1]), T([2])]
T(A)[T([[0, 1], [2, 2]]), T([[1], [3]])]
T(A)[[0, 1], 1:]
T(A)[1:, [0, 1]]
T(A)[T(Bm[:, 0]), 1]
T(A)[L.zeros(0, dtype=L.int64)]
T(A)[[]]
# indexing: setitem
setitem(T(A), 0, 5.0)
setitem(T(A), (0, 1), 5.0)
setitem(T(A), np.s_[:, 1], T([1.0, 2.0, 3.0]))
setitem(T(A), np.s_[:, 1], T([[1.0], [2.0], [3.0]]))
setitem(T(A), np.s_[:, 1:3], T([[1.0], [2.0], [3.0]]))
setitem(T(A), np.s_[1:3], T(Bv))
setitem(T(A), np.s_[1:3], T([1.0, 2.0]))
setitem(T(A), np.s_[::2, ::2], 1.0)
setitem(T(A), np.s_[..., -1], 0)
setitem(T(A), np.s_[...], 3)
setitem(T(A), None, 1.0)
setitem(T(A), T(Bm), 0.0)
setitem(T(A), T(Bm), T(-1.0))
setitem(T(A), T(Bm2), T([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
setitem(T(A), T(Bm2), T([1.0, 2.0]))
setitem(T(A), T(Bm2[:, 0]), T(Bv))
setitem(T(A), T(A) < 0, 0)
setitem(T(A), [0, 2], T(Bv))
setitem(T(A), T([0, 2]), 7.0)
setitem(T(A), ([0, 2], [1, 3]), T([8.0, 9.0]))
setitem(T(A), np.s_[:, [0, 2]], T([[1.0, 2.0]]))
setitem(T(A), T([-1]), 1.0)
setitem(T(A), 5, 1.0)
setitem(T(A), T([5]), 1.0)
setitem(T(A), 0, T([1.0, 2.0]))
setitem(T(A), 0, T(Bv, dtype=L.float64))
setitem(T(A), 0, T([1, 2, 3, 4]))
setitem(T(I), 0, 2.7)
setitem(T(I), 0, -2.7)
setitem(T(I), np.s_[:, 0], T([1.5, 2.5, -3.5]))
setitem(T(I), T(Bm), True)
setitem(T(Bm), 0, 2)
setitem(T(Bm), 0, 0.0)
setitem(T(I32), 1, 2 ** 40)
setitem(T(A), 0, nan)
setitem(T(X3), (0, np.s_[:], 1), 0.0)
setitem(T(X3), (np.s_[:], [0, 1], [1, 2]), -1.0)
setitem(T(2.5), (), 1.0)
setitem(T(2.5), ..., 1.0)
setitem(T(A), 0, T(A))
iop(T(A), '+=', 1)
iop(T(A), '+=', T(Bv))
iop(T(A), '*=', 2.5)
iop(T(A), '/=', 2)
iop(T(A), '-=', T(A64))
iop(T(I), '+=', 1)
iop(T(I), '+=', 2.5)
iop(T(I), '*=', 2.5)
iop(T(I), '/=', 2)
iop(T(I), '//=', 2)
iop(T(I), '%=', 3)
iop(T(I), '**=', 2)
iop(T(I), '+=', T(A))
iop(T(Bm), '+=', 1)
iop(T(Bv), '+=', T(A))
iop(T(A), '+=', T(I))
# indexing: index_select / gather / scatter_add / one_hot
L.index_select(T(A), 0, T([2, 0]))
L.index_select(T(A), 1, T([3, 3, 0]))
L.index_select(T(A), 1, T([1], dtype=L.int32))
L.index_select(T(A), -1, T([0]))
L.index_select(T(A), 0, [0, 1])
L.index_select(T(A), 0, T([[0, 1]]))
L.index_select(T(A), 0, T([-1]))
L.index_select(T(A), 0, T([3]))
L.index_select(T(A), 0, T([0.0]))
L.index_select(T(A), 0, T(1))
L.index_select(T(I), 1, T([0, 2]))
L.index_select(T(2.5), 0, T([0]))
T(A).index_select(1, T([2]))
L.gather(T(A), 1, T([[0, 0], [1, 0], [3, 2]]))
L.gather(T(A), 0, T([[0, 1, 2, 0]]))
L.gather(T(A), 1, T([[0], [1]]))
L.gather(T(A), -1, T([[3], [2], [1]]))
L.gather(T(A), 1, T([[0, 4]]))
L.gather(T(A), 1, T([[0, -1]]))
L.gather(T(A), 1, T([[0, 1]], dtype=L.int32))
L.gather(T(A), 1, T([0, 1]))
L.gather(T(A), 1, T([[0, 1, 2, 3, 0]]))
L.gather(T(A), 0, T([[0, 1, 2, 0, 1]]))
L.gather(T(I), 0, T([[2, 2, 2, 2]]))
T(A).gather(1, T([[1], [2], [3]]))
L.scatter_add(L.zeros(3, 4), 1, T([[0, 0], [1, 1], [3, 0]]), T(A[:, :2]))
L.scatter_add(L.zeros(3, 4), 0, T([[0, 0, 0, 0], [0, 1, 2, 0]]), T(A[:2]))
L.scatter_add(L.zeros(3, 4), 1, T([[0], [1]]), T(A))
L.scatter_add(L.zeros(3, 4), 1, T([[0, 5]]), T(A))
L.scatter_add(L.zeros(3, 4), 1, T([[0, 1]]), T(A64))
L.scatter_add(L.zeros(3, 4, dtype=L.int64), 1, T([[0, 0, 1]]), T(I))
L.scatter_add(L.zeros(3, 4), 1, T([[0, 1]], dtype=L.int32), T(A))
L.scatter_add(L.zeros(3, 4), 1, T([[0, 1, 2, 3, 0]]), T(A))
L.scatter_add(L.zeros(2, 2), 0, T([[0, 1], [1, 0]]), T(A))
T(A).scatter_add(1, T([[0, 0]]), L.ones(1, 2))
F.one_hot(T([0, 2, 1]))
F.one_hot(T([0, 2, 1]), 5)
F.one_hot(T([0, 2, 1]), num_classes=3)
F.one_hot(T([0, 2, 1]), -1)
F.one_hot(T([[0, 2], [1, 1]]))
F.one_hot(T([0, 3]), 3)
F.one_hot(T([0, -1]))
F.one_hot(T([0.0, 1.0]))
F.one_hot(T([0, 1], dtype=L.int32))
F.one_hot(T(2), 4)
F.one_hot(L.zeros(0, dtype=L.int64), 3)
F.one_hot(L.zeros(0, dtype=L.int64))
L.one_hot(T([0, 2, 1]))
L.nn.functional.one_hot(T([1]), 2).dtype
# in-place ops
inplace(T(A), 'add_', 1)
inplace(T(A), 'add_', T(Bv), alpha=2)
inplace(T(A), 'add_', T(A64))
inplace(T(I), 'add_', 2.5)
inplace(T(I), 'add_', 2)
inplace(T(I), 'add_', T(A))
inplace(T(I), 'add_', T(I32), alpha=3)
inplace(T(I), 'add_', T(I), alpha=0.5)
inplace(T(Bm), 'add_', T(Bm))
inplace(L.zeros(3), 'add_', L.ones(2, 3))
inplace(T(Bv), 'add_', T(A))
inplace(T(A), 'sub_', T(Bv), alpha=0.5)
inplace(T(A), 'sub_', 1)
inplace(T(I), 'sub_', 1.5)
inplace(T(A), 'mul_', 2)
inplace(T(A), 'mul_', T(A[:, :1]))
inplace(T(I), 'mul_', 2.5)
inplace(T(I), 'mul_', 3)
inplace(T(A), 'div_', 2)
inplace(T(A), 'div_', T(Bv))
inplace(T(I), 'div_', 2)
inplace(T(A), 'div_', 2, rounding_mode='floor')
inplace(T(A), 'zero_')
inplace(T(I), 'zero_')
inplace(T(A), 'fill_', 3.5)
inplace(T(I), 'fill_', 3.7)
inplace(T(I), 'fill_', -3.7)
inplace(T(Bm), 'fill_', 2)
inplace(T(A), 'fill_', T(2.0))
inplace(T(A), 'fill_', T([2.0]))
inplace(T(A), 'fill_', T(Bv))
inplace(T(A), 'fill_', nan)
inplace(T(A), 'copy_', T(Bv))
inplace(T(A), 'copy_', T(I))
inplace(T(I), 'copy_', T(A))
inplace(T(Bm), 'copy_', T(A))
inplace(T(A), 'copy_', T(A64))
inplace(T(A), 'copy_', T(Bv[:3]))
inplace(T(A), 'copy_', T(2.0))
inplace(T(Bv), 'copy_', T(A))
inplace(T(A), 'clamp_', 0, 1)
inplace(T(A), 'clamp_', min=0)
inplace(T(A), 'clamp_', max=-0.5)
inplace(T(I), 'clamp_', -1, 1)
inplace(T(I), 'clamp_', -1.5, 1.5)
inplace(T(Z), 'clamp_', -1, 1)
inplace(T(A), 'clamp_', T(Bv), 2.0)
inplace(T(A), 'clip_', -1, 1)
inplace(T(A), 'clamp_')
inplace(T(A), 'masked_fill_', T(Bm), 1.5)
inplace(T(A), 'masked_fill_', T(Bm[0]), -inf)
inplace(T(A), 'masked_fill_', T(Bm), T(2.0))
inplace(T(I), 'masked_fill_', T(Bm), 1.5)
inplace(T(I), 'masked_fill_', T(Bm), -4)
inplace(T(A), 'masked_fill_', T(I), 1.0)
inplace(T(A[:1]), 'masked_fill_', T(Bm), 1.0)
same(T(A), 'add_', 1)
same(T(A), 'mul_', 2)
same(T(A), 'clamp_', 0, 1)
same(T(A), 'masked_fill_', T(Bm), 0.0)
same(T(A), 'zero_')
same(T(A), 'fill_', 1.0)
same(T(A), 'copy_', T(A))
same(T(A), 'requires_grad_')
same(T(A), 'to', L.float32)
same(T(A), 'float')
same(T(A), 'contiguous')
same(T(A), 'detach')
same(T(A), 'clone')
same(T(A), 'to', 'cpu')
iop(T(A), '+=', 1)[1]
leaf_inplace(L)
leaf_no_grad_update(L)
saved_modified(L)
saved_leaf_modified_no_grad(L)
accumulate(L)
grad_attrs(L)
# linear algebra
T(Bv) @ T(Bv)
T(A) @ T(Bv)
T(Bv[:3]) @ T(A)
T(A) @ T(Cm)
T(X3) @ T(Cm)
T(X3) @ T(Y3)
T(Bv) @ T(Y3)
T(X3) @ T(Bv)
T(X4) @ T(Y3)
T(X4) @ T(Y3[:1])
T(A) @ T(A)
T(X3) @ T(A)
T(2.5) @ T(Bv)
T(Bv) @ T(Bv[:3])
T(I) @ T(I.T)
T(I) @ T(A.T)
T(A) @ T(A64.T)
T(VI) @ T(VI)
T(A) @ T(Cm).T
L.zeros(0, 3) @ L.zeros(3, 2)
L.zeros(2, 0) @ L.zeros(0, 3)
L.matmul(T(A), T(Cm))
L.matmul(T(Bv), T(Bv))
L.matmul(T(X4), T(Cm))
T(A).matmul(T(Bv))
L.mm(T(A), T(Cm))
L.mm(T(A), T(Bv))
L.mm(T(X3), T(Cm))
L.mm(T(I), T(I.T))
L.mm(T(A), T(A))
T(A).mm(T(Cm))
L.bmm(T(X3), T(Y3))
L.bmm(T(X3), T(Y3[:1]))
L.bmm(T(A), T(Cm))
L.bmm(T(X3), T(X3))
T(X3).bmm(T(Y3))
L.addmm(T(Gbm).float(), T(A), T(Cm))
L.addmm(T(Gbm).float(), T(A), T(Cm), beta=0.5, alpha=2.0)
L.addmm(T(Gbias).float(), T(A), T(Cm))
L.addmm(T(Gbm[:1]).float(), T(A), T(Cm), alpha=-1)
L.addmm(L.full((3, 5), nan), T(A), T(Cm), beta=0)
L.addmm(L.full((3, 5), nan), T(A), T(Cm), beta=0.0, alpha=0.0)
L.addmm(T(Gbias).float(), T(A), T(Bv))
L.addmm(T(Gbias).float(), T(Cm), T(Cm))
L.addmm(T(2.0), T(A), T(Cm))
T(Gbm).float().addmm(T(A), T(Cm), beta=2)
L.baddbmm(L.zeros(2, 3, 5), T(X3), T(Y3))
L.baddbmm(T(Gbm).float(), T(X3), T(Y3), beta=0.5, alpha=2.0)
L.baddbmm(T(Gbias).float(), T(X3), T(Y3))
L.baddbmm(L.full((2, 3, 5), nan), T(X3), T(Y3), beta=0)
L.baddbmm(L.zeros(2, 3, 5), T(X3), T(Cm))
T(Gbm).float().baddbmm(T(X3), T(Y3), alpha=0.5)
L.outer(T(Bv), T(Bv[:3]))
L.outer(T(VI), T(VI))
L.outer(T(VI), T(VF))
L.outer(T(A), T(Bv))
L.outer(T(Bv), T(2.0))
T(Bv).outer(T(Bv))
# einsum
L.einsum('ij,jk->ik', T(A), T(Cm))
L.einsum('ij->ji', T(A))
L.einsum('ii->i', T(Sq))
L.einsum('ii', T(Sq))
L.einsum('ii->', T(Sq))
L.einsum('ij->', T(A))
L.einsum('ij', T(A))
L.einsum('ji', T(A))
L.einsum('ij,jk', T(A), T(Cm))
L.einsum('ij,kj', T(A), T(A))
L.einsum('bij,bjk->bik', T(X3), T(Y3))
L.einsum('...ij,...jk->...ik', T(X3), T(Y3))
L.einsum('...ij,jk->...ik', T(X4), T(Cm))
L.einsum('...ij,...jk', T(X3), T(Y3))
L.einsum('i,j->ij', T(Bv), T(Bv[:3]))
L.einsum('i,i->', T(Bv), T(Bv))
L.einsum('i,i', T(Bv), T(Bv))
L.einsum('ij,ij->ij', T(A), T(A))
L.einsum('ij,ij', T(A), T(A))
L.einsum('ij,ij->i', T(A), T(A))
L.einsum('bi,bi->b', T(A), T(A))
L.einsum('ab...,b->a...', T(X3).permute(1, 2, 0), T(Bv))
L.einsum('i...->...', T(X3))
L.einsum('...', T(X3))
L.einsum('...i->...', T(X3))
L.einsum('iij->j', T(X3[:1, :1]))
L.einsum('iji->j', L.ones(3, 2, 3))
L.einsum('bii->bi', L.ones(2, 3, 3))
L.einsum('ij,jk,kl->il', T(A), T(Cm), T(Cm.T))
L.einsum('ij,jk->ik', [T(A), T(Cm)])
L.einsum('ij, jk -> ik', T(A), T(Cm))
L.einsum('Ab,bC->AC', T(A), T(Cm))
L.einsum('ij,jk->ik', T(A), T(A))
L.einsum('ij->ik', T(A))
L.einsum('ij,jk->ik', T(A))
L.einsum('ij,jk->ik', T(I), T(I.T))
L.einsum('ij,jk->ik', T(A), T(A64.T))
L.einsum('i,i->i', T(Bv), T(2.0).expand(4))
L.einsum('ij->jii', T(A))
L.einsum('i,j', T(Bv), T(Bv))
L.einsum('ba', T(A))
# casts and scalars
T(A).to(L.float64)
T(VF).to(L.int64)
T([-1.5, 1.5, 300.7]).to(L.int32)
T([0.0, -0.0, 0.1, nan]).bool()
T([2, 0]).bool()
T([True, False]).float()
T(VI).to(L.float32)
T(VD).float()
T(1e300, dtype=L.float64).float()
T(A).to(dtype=L.int64)
T(A).to(T(I))
T(I).to(T(A64))
T(A).to('cpu', L.float64)
T(A).to('cpu')
T(A).to(L.device('cpu'))
T(A).to('cuda')
T(A).to('tpu')
T(A).to(device='cpu', dtype=L.int32)
T(A).float()
T(A).double()
T(A).long()
T(A).int()
T(A).bool()
T(I).float()
T(I).double()
T(I32).long()
T(Bm).long()
T(Bm).int()
T(A).type(L.float64)
T(A).type(L.int32)
T(A).type()
T(A).type('torch.DoubleTensor')
T(A).clone()
T(A).contiguous()
T(A).detach()
T(A).T.contiguous()
L.clone(T(I))
T(A).cpu()
T(A).data
T([2.5]).item()
T([3]).item()
T([True]).item()
T(2.5).item()
T(-7).item()
T(A64)[0, 0].item()
T(I32)[0, 0].item()
T(A).item()
T([]).item()
T(A).tolist()
T(I).tolist()
T(B1).tolist()
T(2.5).tolist()
T(7).tolist()
T(I32).tolist()
T([]).tolist()
L.zeros(2, 0).tolist()
T(A64).tolist()
float(T(2.5))
float(T([2.5]))
float(T(A))
float(T(3))
int(T(-2.7))
int(T([5]))
int(T(True))
bool(T([0.0]))
bool(T(2))
bool(T([1, 2]))
bool(T([]))
operator.index(T(3))
operator.index(T(1.5))
operator.index(T([3]))
[10, 20, 30][T(1)]
list(range(T(3)))
len(T(A))
len(T(2.5))
len(L.zeros(0, 3))
list(T(VF))
[float(v) for v in T(VF)]
list(T(A))
list(T(2.5))
2.0 in T(VF)
f'{T(2.5):.2f}'
f'{T(3):d}'
f'{T([1.0]):.2f}'
repr(T([1.0, 2.5]))
repr(T([1, 2]))
repr(T([True, False]))
repr(T([1.0], dtype=L.float64))
str(T(2.5))
# attributes
T(A).shape
T(A).ndim
T(A).dtype
T(A).size()
T(A).size(1)
T(A).size(-1)
T(A).size(2)
T(A).size(dim=0)
T(A).shape[0]
T(A).shape == (3, 4)
T(A).numel()
T(2.5).numel()
T(A).dim()
T(A).element_size()
T(I32).element_size()
T(Bm).element_size()
T(A).nbytes
T(I).nbytes
T(A).is_leaf
T(A).requires_grad
T(A).grad
T(A, requires_grad=True).is_leaf
T(A, requires_grad=True).numpy()
T(A, requires_grad=True).detach().numpy()
T(A).device
str(T(A).device)
T(A).device.type
T(A).numpy()
np.asarray(T(I))
np.asarray(T(A64)).dtype
np.asarray(T(Bm)).dtype
T(I).requires_grad_()
T(I).requires_grad_(False)
T(A).requires_grad_().requires_grad
(T(A) * 2).grad_fn is None
(T(A, requires_grad=True) * 2).grad_fn is None
# numpy operands
T(VF) + np.float64(2.5)
T(VI) + np.int32(2)
T(VI) + np.float32(2.5)
T(VF) + VF
T(VF) * VD
VF + T(VF)
VD * T(VF)
T(VI) + np.array([1 + 1j] * 6)
T(VF) + np.array(['a'] * 6)
T(A) @ Cm
Cm.T @ T(A).T
T(VI) == VI
VF < T(VF)
T(VB) & VB
# extras: contiguity, promotion, overflow
T(A)[:, :1].expand(3, 4).view(12)
T(A)[::2].view(-1)
T(A)[:, 1:3].view(6)
T(A)[1:].view(8)
T(X3).transpose(0, 1).view(3, 8)
T(X3).permute(1, 0, 2).reshape(3, 8)
T([T(1.0), T(2.0)])
T([T(1), T(2.5)])
L.zeros(2, 3, dtype=L.bool)
L.full((2,), 2 ** 40, dtype=L.int32)
L.where(T(Bm), 1, 0.5)
L.where(T(Bm), T(VB[:4]), 0)
T(A).sum(dtype=L.float64)
T(I).sum(0, dtype=L.float32)
T(Bm).sum(1)
T(Bm).mean()
T(Bm).float().mean(0)
T(I).prod(1)
~T(3)
setitem(T(A), np.s_[:, T([True, False, True, True])], 0.0)
setitem(T(A), (T([0, 1]), T([1, 1])), T([5.0, 6.0]))
T(A).masked_fill(T(Bm)[None], 0.0)
T(I32) + 2 ** 40
T(VI32) / T(VI32)
T(VI32) * 2.5
T(VI32) + T(VB)
T(VB) + T(VB)
T(VB) * 2
T(VB) / T(VB)
T(A64) + T(2.5)
T(I) + T(2.5, dtype=L.float64)
T(I32) + T(2.5, dtype=L.float64)
T(I32) + T(True)
T(VB) + T(2)
T(3, dtype=L.int32) + T(4)
T(A) * T(np.float64(2.0))
""".strip("\n")

# gradient cases: one line each, all compared through grad(L, fn, *arrays)
GRAD_TEXT = r"""
grad(L, lambda x: x.abs(), G0)
grad(L, lambda x: L.abs(x), G32)
grad(L, lambda x: L.relu(x), G0)
grad(L, lambda x: x.relu(), G0)
grad(L, lambda x: F.relu(x), G0)
grad(L, lambda x: L.sqrt(x), T0)
grad(L, lambda x: L.rsqrt(x), P64)
grad(L, lambda x: L.rsqrt(x), T0)
grad(L, lambda x: x.max(), G0)
grad(L, lambda x: x.min(), G0T)
grad(L, lambda x: L.max(x), GC)
grad(L, lambda x: L.max(x, 1).values, G0)
grad(L, lambda x: L.max(x, 1).values, GC)
grad(L, lambda x: L.max(x, dim=1, keepdim=True)[0], G0)
grad(L, lambda x: L.min(x, 0).values, G0T)
grad(L, lambda x: L.min(x, 1)[0], GC)
grad(L, lambda x: L.amax(x, 1), G0)
grad(L, lambda x: L.amax(x, 1), GC)
grad(L, lambda x: L.amax(x), G0)
grad(L, lambda x: L.amin(x, (0, 1)), G0T)
grad(L, lambda x: L.amin(x, 0, keepdim=True), GC)
grad(L, lambda x, y: L.maximum(x, y), G0, G0T)
grad(L, lambda x, y: L.minimum(x, y), G0, G0T)
grad(L, lambda x, y: L.maximum(x, y), G, Gv)
grad(L, lambda x, y: L.max(x, y), G0, G0T)
grad(L, lambda x: L.clamp(x, -0.5, 1.0), G0)
grad(L, lambda x: L.clamp(x, min=0.0), G0)
grad(L, lambda x: L.clamp(x, max=0.0), G0)
grad(L, lambda x: L.clamp(x, 1.0, -1.0), G0)
grad(L, lambda x, lo: L.clamp(x, min=lo), G0, G0T)
grad(L, lambda x, lo, hi: L.clamp(x, lo, hi), G0, G0T, GC)
grad(L, lambda x, lo: L.clamp(x, lo, 1.0), G0, Gv)
grad(L, lambda x: x.clip(-1, 1), G0)
grad(L, lambda x: x.clamp(min=-1), G32)
grad(L, lambda x: L.norm(x), Z0)
grad(L, lambda x: L.norm(x), G0)
grad(L, lambda x: L.norm(x, p=1), G0)
grad(L, lambda x: L.norm(x, p=inf), G0)
grad(L, lambda x: L.norm(x, p=inf), GC)
grad(L, lambda x: L.norm(x, p=3, dim=1), G0)
grad(L, lambda x: L.norm(x, dim=1), G0)
grad(L, lambda x: L.norm(x, dim=0), GZ)
grad(L, lambda x: L.norm(x, p=1, dim=0), Z0)
grad(L, lambda x: L.norm(x, p=3), Z0)
grad(L, lambda x: L.norm(x, p=0.5), G)
grad(L, lambda x: L.norm(x, dim=(0, 1), keepdim=True), G)
grad(L, lambda x: x.norm(), G32)
grad(L, lambda x: L.where(x > 0, L.sqrt(x), 0.0), G0)
grad(L, lambda x: L.where(x > 0, x, L.log(x)), G0)
grad(L, lambda x: L.where(x > 0, x, nan), G0)
grad(L, lambda x, y: L.where(x > y, x, y), G0, G0T)
grad(L, lambda x, y: L.where(x > 0, x, y), G, Gv)
grad(L, lambda x: L.where(x > 0, x * 2, 1.0), G)
grad(L, lambda x: L.sign(x) * x, G0)
grad(L, lambda x: L.sign(x), G0)
grad(L, lambda x: L.floor(x) + L.ceil(x) + L.round(x), G0)
grad(L, lambda x: L.exp(x), G)
grad(L, lambda x: L.log(x), P64)
grad(L, lambda x: L.log(x), T0)
grad(L, lambda x: L.log1p(x), P64)
grad(L, lambda x: L.expm1(x), G)
grad(L, lambda x: L.sin(x) + L.cos(x), G)
grad(L, lambda x: L.tanh(x), G)
grad(L, lambda x: L.sigmoid(x), G)
grad(L, lambda x: L.erf(x), G)
grad(L, lambda x: L.square(x), G)
grad(L, lambda x: F.silu(x), G0)
grad(L, lambda x: F.softplus(x), G0)
grad(L, lambda x: F.softplus(x, beta=2.0, threshold=1.0), G0)
grad(L, lambda x: F.leaky_relu(x, 0.1), G0)
grad(L, lambda x: F.gelu(x), G0)
grad(L, lambda x: F.gelu(x, approximate='tanh'), G0)
grad(L, lambda x: L.softmax(x, 1), G)
grad(L, lambda x: L.log_softmax(x, 0), G)
grad(L, lambda x: L.softmax(x, -1), NINF[[0, 2]])
grad(L, lambda x: -x, G)
grad(L, lambda x: x ** 2, G0)
grad(L, lambda x: x ** 0.5, T0)
grad(L, lambda x: x ** 0, G0)
grad(L, lambda x: x ** 3, G0)
grad(L, lambda x: x ** -1, P64)
grad(L, lambda x: x ** 1.5, T0)
grad(L, lambda x: 2 ** x, G)
grad(L, lambda x: 0 ** x, P64)
grad(L, lambda x, y: x ** y, P64, G)
grad(L, lambda x, y: x ** y, T0, T0)
grad(L, lambda x, y: x / y, G, P64)
grad(L, lambda x: 1 / x, P64)
grad(L, lambda x: x / 0, G)
grad(L, lambda x: x // 2, G)
grad(L, lambda x: x % 1.5, G)
grad(L, lambda x, y: x * y, G, G2)
grad(L, lambda x: x * x, G)
grad(L, lambda x, y: x + y, G, Gv)
grad(L, lambda x, y: x - y, Gcol, Gv)
grad(L, lambda x, y: x * y, G, S0)
grad(L, lambda x, y: y - x, G, S0)
grad(L, lambda x: x * 3, S0)
grad(L, lambda x: x + 2.5, G32)
grad(L, lambda x: x + L.tensor(2.0, dtype=L.float64), G32)
grad(L, lambda x: x.sum(), G)
grad(L, lambda x: x.mean(), G)
grad(L, lambda x: x.mean(1), G)
grad(L, lambda x: x.sum((0, 1)), G)
grad(L, lambda x: x.sum(dim=1, keepdim=True), G)
grad(L, lambda x: x.sum(-1) * 1.0, Gb)
grad(L, lambda x: x.prod(), G)
grad(L, lambda x: x.prod(1), GZ)
grad(L, lambda x: x.prod(), GZ)
grad(L, lambda x: x.prod(0, keepdim=True), GZ)
grad(L, lambda x: x.var(), G)
grad(L, lambda x: x.var(1, correction=0), G)
grad(L, lambda x: x.var(0, unbiased=True), G)
grad(L, lambda x: x.std(), G)
grad(L, lambda x: x.std(0, unbiased=False), G)
grad(L, lambda x: x.std(1), GC)
grad(L, lambda x: x.var(1), GC)
grad(L, lambda x: L.logsumexp(x, 1), G)
grad(L, lambda x: L.logsumexp(x, 1), NINF)
grad(L, lambda x: L.logsumexp(x, (0, 1)), G)
grad(L, lambda x: L.cumsum(x, 1), G)
grad(L, lambda x: L.cumsum(x, 0), G32)
grad(L, lambda x, y: x @ y, Gv, Gv)
grad(L, lambda x, y: x @ y, G, Gv)
grad(L, lambda x, y: x @ y, Gv3, G)
grad(L, lambda x, y: x @ y, Gb, Gm)
grad(L, lambda x, y: x @ y, Gv3, Gb)
grad(L, lambda x, y: L.matmul(x, y), G4, Gb2)
grad(L, lambda x, y: L.matmul(x, y), Gb, Gb2)
grad(L, lambda x, y: L.mm(x, y), G, Gm)
grad(L, lambda x, y: L.bmm(x, y), Gb, Gb2)
grad(L, lambda m, x, y: L.addmm(m, x, y, beta=0.5, alpha=2.0), Gbias, G, Gm)
grad(L, lambda m, x, y: L.addmm(m, x, y), Gbm, G, Gm)
grad(L, lambda m, x, y: L.addmm(m, x, y, beta=0.0), Gbm, G, Gm)
grad(L, lambda m, x, y: L.baddbmm(m, x, y, beta=0.5, alpha=2.0), Gbm, Gb, Gb2)
grad(L, lambda m, x, y: L.baddbmm(m, x, y), Gbias, Gb, Gb2)
grad(L, lambda x: L.einsum('ii->', x), Sq64)
grad(L, lambda x: L.einsum('ii->i', x), Sq64)
grad(L, lambda x, y: L.einsum('...ij,jk->...ik', x, y), Gb, Gm)
grad(L, lambda x, y: L.einsum('ij,ij->i', x, y), G, G2)
grad(L, lambda x: L.einsum('ij,ij->i', x, x), G)
grad(L, lambda x, y: L.einsum('bij,bkj->bik', x, y), Gb, Gb)
grad(L, lambda x, y: L.einsum('i,j', x, y), Gv, Gv3)
grad(L, lambda x, y: L.outer(x, y), Gv, Gv3)
grad(L, lambda x, y: L.lerp(x, y, 0.3), G, G2)
grad(L, lambda x, y, w: L.lerp(x, y, w), G, G2, Gw)
grad(L, lambda x: x.masked_fill(L.tensor(Bm), 0.0), G)
grad(L, lambda x: x.masked_fill(L.tensor(Bm[0]), nan), G)
grad(L, lambda x: L.gather(x, 1, L.tensor([[0, 0], [1, 3], [2, 2]])), G)
grad(L, lambda x, s: L.scatter_add(x, 1, L.tensor([[0, 0], [1, 3], [2, 2]]), s), G, Gs)
grad(L, lambda x: L.index_select(x, 0, L.tensor([2, 0, 2])), G)
grad(L, lambda x: x[L.tensor([0, 0, 2])], G)
grad(L, lambda x: x[[0, 0], [1, 1]], G)
grad(L, lambda x: x[L.tensor(Bm)], G)
grad(L, lambda x: x[1:, ::2], G)
grad(L, lambda x: x[None, ..., -1], G)
grad(L, lambda x: x[1, 2], G)
grad(L, lambda x: x[:, [3, 3, 0]], G)
grad(L, lambda x: L.cat([x, x * 2], 1), G)
grad(L, lambda x, y: L.cat([x, y]), G, G2)
grad(L, lambda x, y: L.cat([x, y]), G, G32)
grad(L, lambda x, y: L.stack([x, y], -1), G, G2)
grad(L, lambda x: L.split(x, [1, 3], 1)[1], G)
grad(L, lambda x: L.chunk(x, 2, 0)[1], G)
grad(L, lambda x: sum(t.sum() * i for i, t in enumerate(x.split(1, 1))), G)
grad(L, lambda x: x.expand(2, 3, 4), G)
grad(L, lambda x: x.expand(3, -1), Grow)
grad(L, lambda x: x.expand_as(L.zeros(3, 4)), Gcol)
grad(L, lambda x: L.broadcast_to(x, (2, 3, 4)), Gv)
grad(L, lambda x: x.repeat(2, 3), G)
grad(L, lambda x: x.repeat(2, 1, 1), Gv)
grad(L, lambda x: x.flip(0, 1), G)
grad(L, lambda x: x.flip(-1), G)
grad(L, lambda x: x.permute(1, 0), G)
grad(L, lambda x: x.permute(2, 0, 1), Gb)
grad(L, lambda x: x.reshape(-1), G)
grad(L, lambda x: x.view(2, 6), G)
grad(L, lambda x: x.transpose(0, 1).reshape(-1), G)
grad(L, lambda x: x.movedim(0, -1), Gb)
grad(L, lambda x: x.unsqueeze(1), G)
grad(L, lambda x: x.squeeze(1), Gcol)
grad(L, lambda x: x.flatten(), Gb)
grad(L, lambda x: x.unflatten(1, (2, 2)), G)
grad(L, lambda x: x.narrow(1, 1, 2), G)
grad(L, lambda x: x.tril(1), G)
grad(L, lambda x: x.triu(-1), G)
grad(L, lambda x: L.tril(x), Gb)
grad(L, lambda x: x.T, G)
grad(L, lambda x: x.mT, Gb)
grad(L, lambda x: x.to(L.float64), G32)
grad(L, lambda x: x.double() * 2, G32)
grad(L, lambda x: x.float(), G)
grad(L, lambda x: x.clone(), G)
grad(L, lambda x: x.contiguous(), G)
grad(L, lambda x: x + x.detach(), G)
grad(L, lambda x: x * x.sum(), G)
grad(L, lambda x: nonleaf_setitem(L, x), G)
grad(L, lambda x: nonleaf_inplace(L, x, 'add_', 1.0), G)
grad(L, lambda x: nonleaf_inplace(L, x, 'mul_', 2.0), G)
grad(L, lambda x: nonleaf_inplace(L, x, 'clamp_', -1.0, 1.0), G)
grad(L, lambda x: nonleaf_inplace(L, x, 'masked_fill_', L.tensor(Bm), 0.0), G)
grad(L, lambda x: nonleaf_inplace(L, x, 'div_', 4.0), G)
grad(L, lambda x, w: view_writes(L, x, w), G, G[0])
grad(L, lambda w, v: buffer_writes(L, w, v), G[0], G[1:])
grad(L, lambda x, v: index_writes(L, x, v), G, G[:3, :].copy())
grad(L, lambda x, w: residual_block(L, x, w), G, np.eye(4) * 0.5 + 0.1)
grad(L, lambda x: self_operand(L, x), G)
grad(L, lambda x, v: fills(L, x, v), G, np.array(0.5))
grad(L, lambda x: saved_output_written(L, x), G)
L.sort(T(G), 1)
L.sort(T(G), 0, descending=True)
T(G).sort(dim=-1, stable=True)
L.sort(T(I), 0)
L.sort(T(NANM))
L.sort(T(NANM), descending=True)
L.sort(T(TIE), 1)
L.argsort(T(TIE), dim=1, stable=True)
L.argsort(T(G), 1)
L.argsort(T(G), dim=0, descending=True)
T(G).argsort()
L.topk(T(G), 2)
L.topk(T(G), 2, dim=0, largest=False)
T(G).topk(3, 1)
L.topk(T(I), 1, 0)
L.topk(T(G), 5)
L.topk(T(G), -1)
L.sort(T(G), 2)
L.topk(T(S0), 1)
L.sort(T(S0))
grad(L, lambda x: L.sort(x, 1, descending=True).values, G)
grad(L, lambda x: L.topk(x, 2, 0).values * 2, G)
grad(L, lambda x: L.norm(x, dim=1), Z0)
grad(L, lambda x: L.norm(x, p=2, dim=0), GC - GC[0])
grad(L, lambda x: x.var(), np.ones((1, 1)))
grad(L, lambda x: x.std(0), GC)
grad(L, lambda x: L.max(x, 1)[0], NINF)
grad(L, lambda x: L.amax(x, 1), NINF)
grad(L, lambda x: L.logsumexp(x, 0), NINF)
grad(L, lambda x: x.abs().sum(), Z0)
grad(L, lambda x: L.clamp(x, 0.0, 0.0), G0)
grad(L, lambda x: L.relu(x) * L.relu(-x), G0)
grad(L, lambda x: L.sqrt(x * x), G0)
grad(L, lambda x: L.where(x == 0, 1.0, L.sin(x) / x), G0)
""".strip("\n")


def _generated() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    tens = ["T(VF)", "T(VD)", "T(VI)", "T(VI32)", "T(VB)", "T(3)", "T(-2.5)",
            "T(1.5, dtype=L.float64)"]
    scalars = ["2", "(-3)", "(-2.5)", "True"]
    for op in ["+", "-", "*", "/", "//", "%", "**"]:
        sec = f"binary {op}"
        for a in tens:
            for b in tens:
                out.append((sec, f"{a} {op} {b}"))
        for a in tens:
            for s in scalars:
                out.append((sec, f"{a} {op} {s}"))
                out.append((sec, f"{s} {op} {a}"))
    for op in ["<", "=="]:
        for a in tens:
            for b in tens:
                out.append((f"compare {op}", f"{a} {op} {b}"))
        for a in tens:
            for s in ["2", "(-2.5)", "True", "nan"]:
                out.append((f"compare {op}", f"{a} {op} {s}"))
                out.append((f"compare {op}", f"{s} {op} {a}"))
    bits = ["T(VI)", "T(VI32)", "T(VB)", "T(VF)", "T(3)"]
    for op in ["&", "|", "^"]:
        for a in bits:
            for b in bits:
                out.append((f"bitwise {op}", f"{a} {op} {b}"))
            for s in ["True", "3", "2.5"]:
                out.append((f"bitwise {op}", f"{a} {op} {s}"))
                out.append((f"bitwise {op}", f"{s} {op} {a}"))
    unary = ["abs", "sin", "cos", "erf", "rsqrt", "square", "log1p", "expm1", "sign",
             "floor", "ceil", "round", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
             "neg", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not", "tan"]
    for fn in unary:
        for x in ["Z", "Z64", "I1", "I1_32", "B1"]:
            out.append(("unary", f"L.{fn}(T({x}))"))
        out.append(("unary method", f"T(Z).{fn}()"))
    for fn in ["silu", "softplus", "leaky_relu", "gelu", "relu", "sigmoid", "tanh"]:
        for x in ["Z", "Z64"]:
            out.append(("activations", f"F.{fn}(T({x}))"))
    reds = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "all", "any", "var",
            "std", "logsumexp", "norm", "cumsum", "max", "min"]
    for r in reds:
        for x in ["A", "I", "Bm"]:
            sec = f"reduction {r}"
            out.append((sec, f"L.{r}(T({x}))"))
            out.append((sec, f"L.{r}(T({x}), 1)"))
            out.append((sec, f"L.{r}(T({x}), dim=-1, keepdim=True)"))
            out.append((sec, f"T({x}).{r}(axis=0, keepdims=True)"))
            out.append((sec, f"L.{r}(T({x}), (0, 1))"))
            out.append((sec, f"L.{r}(T({x}), dim=-3)"))
    return out


def build_cases() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    section = "misc"
    for line in CASES_TEXT.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            section = line[1:].strip()
            continue
        cases.append((section, line))
    cases += [("gradients", line.strip()) for line in GRAD_TEXT.splitlines() if line.strip()]
    cases += _generated()
    return cases


CASES = build_cases()


def case(section: str, expr: str) -> None:
    """Add one case programmatically."""
    CASES.append((section, expr))


# ----------------------------------------------------------------------------- comparison
def _is_tensor(x) -> bool:
    return type(x).__name__ == "Tensor" and hasattr(x, "dtype") and hasattr(x, "shape")


def _dtype_name(d) -> str:
    return str(d).replace("torch.", "")


def normalize(x, depth: int = 0):
    """A library-independent description of a result."""
    if depth > 6:
        return ("other", type(x).__name__, repr(x)[:60])
    if _is_tensor(x):
        try:
            arr = x.detach().numpy()
        except Exception:  # noqa: BLE001 - fall back to the array protocol
            arr = np.asarray(x)
        return ("tensor", _dtype_name(x.dtype), tuple(int(s) for s in x.shape),
                np.array(arr, copy=True))
    tname = type(x).__name__
    mod = type(x).__module__ or ""
    if tname in ("dtype", "DType"):
        return ("dtype", _dtype_name(x))
    if tname == "device":
        return ("device", str(x))
    if isinstance(x, tuple) and (mod.endswith("return_types") or hasattr(x, "_fields")):
        fields = getattr(x, "_fields", None) or getattr(type(x), "__match_args__", ())
        return ("named", tname, tuple(fields), [normalize(v, depth + 1) for v in x])
    if isinstance(x, (tuple, list)):
        kind = "list" if isinstance(x, list) else "tuple"
        return ("seq", kind, [normalize(v, depth + 1) for v in x])
    if isinstance(x, (bool, int, float)):
        return ("py", type(x).__name__, x)
    if isinstance(x, np.ndarray):
        return ("ndarray", str(x.dtype), x.shape, np.array(x, copy=True))
    if isinstance(x, np.generic):
        return ("npscalar", str(x.dtype), x.item())
    if isinstance(x, str):
        return ("str", x)
    if x is None:
        return ("none",)
    return ("other", tname, repr(x)[:60])


def short(n) -> str:
    """A short text of a normalized result."""
    kind = n[0]
    if kind in ("tensor", "ndarray"):
        arr = n[3]
        body = np.array2string(arr, precision=4, threshold=12, edgeitems=2,
                               max_line_width=10_000, separator=",").replace("\n", "")
        pre = "" if kind == "tensor" else "ndarray "
        return f"{pre}{n[1]}{list(n[2])} {body}"[:160]
    if kind == "named":
        return f"{n[1]}({', '.join(f'{f}={short(v)}' for f, v in zip(n[2], n[3]))})"[:240]
    if kind == "seq":
        inner = ", ".join(short(v) for v in n[2][:4]) + (", ..." if len(n[2]) > 4 else "")
        return ("[%s]" if n[1] == "list" else "(%s)") % inner
    if kind == "py":
        return f"{n[1]} {n[2]!r}"
    if kind == "npscalar":
        return f"np.{n[1]} {n[2]!r}"
    if kind in ("dtype", "device", "str"):
        return f"{kind} {n[1]!r}"
    if kind == "none":
        return "None"
    return f"{n[1]} {n[2]}"


def _tol(dt_a: str, dt_b: str) -> tuple[float, float]:
    if dt_a == dt_b == "float64":
        return 1e-10, 1e-12
    return 1e-5, 1e-6


def _cmp_arrays(ta, ra, tol, path, out):
    if ta.dtype.kind in "fc" or ra.dtype.kind in "fc":
        ta64, ra64 = ta.astype(np.float64), ra.astype(np.float64)
        try:
            np.testing.assert_allclose(ra64, ta64, rtol=tol[0], atol=tol[1], equal_nan=True)
        except AssertionError:
            bad = ~np.isclose(ra64, ta64, rtol=tol[0], atol=tol[1], equal_nan=True)
            out.append(("value", f"{path}{int(bad.sum())} of {bad.size} elements differ"))
            return
        zt, zr = ta64 == 0, ra64 == 0
        both = zt & zr
        if np.any(np.signbit(ta64[both]) != np.signbit(ra64[both])):
            out.append(("signed-zero", f"{path}sign of zero differs"))
    elif not np.array_equal(ta, ra):
        bad = ta != ra
        out.append(("value", f"{path}{int(np.sum(bad))} of {bad.size} elements differ"))


def compare(t, r, path: str = "") -> list[tuple[str, str]]:
    """Differences between normalized results: a list of (kind, text)."""
    out: list[tuple[str, str]] = []
    if t[0] != r[0]:
        out.append(("type", f"{path}torch gives {t[0]}, remat {r[0]}"))
        return out
    kind = t[0]
    if kind in ("tensor", "ndarray"):
        if t[1] != r[1]:
            out.append(("dtype", f"{path}dtype torch {t[1]} vs remat {r[1]}"))
        if tuple(t[2]) != tuple(r[2]):
            out.append(("shape", f"{path}shape torch {tuple(t[2])} vs remat {tuple(r[2])}"))
            return out
        _cmp_arrays(t[3], r[3], _tol(t[1], r[1]), path, out)
    elif kind == "named":
        if t[1] != r[1] or t[2] != r[2]:
            out.append(("type", f"{path}named tuple {t[1]}{t[2]} vs {r[1]}{r[2]}"))
        for i, (a, b) in enumerate(zip(t[3], r[3])):
            out += compare(a, b, f"{path}[{i}] ")
    elif kind == "seq":
        if t[1] != r[1]:
            out.append(("container", f"{path}torch {t[1]} vs remat {r[1]}"))
        if len(t[2]) != len(r[2]):
            out.append(("shape", f"{path}length torch {len(t[2])} vs remat {len(r[2])}"))
            return out
        for i, (a, b) in enumerate(zip(t[2], r[2])):
            out += compare(a, b, f"{path}[{i}] ")
    elif kind in ("py", "npscalar"):
        if t[1] != r[1]:
            out.append(("pytype", f"{path}python type torch {t[1]} vs remat {r[1]}"))
        a, b = t[2], r[2]
        if isinstance(a, float) or isinstance(b, float):
            ok = (math.isnan(a) and math.isnan(b)) if (isinstance(a, float) and math.isnan(a)) \
                else math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
            if not ok:
                out.append(("value", f"{path}{a!r} vs {b!r}"))
        elif a != b:
            out.append(("value", f"{path}{a!r} vs {b!r}"))
    elif t != r:
        out.append(("value" if kind != "other" else "type", f"{path}{t[1:]} vs {r[1:]}"))
    return out


# ----------------------------------------------------------------------------- worker
def _err_text(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:150]}"


def _run_one(lib, expr: str):
    ns = dict(NS)
    ns.update({k: v.copy() for k, v in ARRAYS.items()})
    try:
        fn = eval(f"lambda L, F, T: {expr}", ns)  # noqa: S307 - our own case text
        return ("ok", normalize(fn(lib, lib.nn.functional, lib.tensor)))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: B036 - PyO3 panics derive from BaseException
        bases = [c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"]
        return ("err", _err_text(e), type(e).__name__, bases)


def judge(tr, rr) -> dict:
    if tr[0] == "err" and rr[0] == "err":
        res = {"status": "both-raise", "torch": tr[1], "remat": rr[1]}
        if tr[3][0] not in rr[3]:
            # a port's ``except <torch's exception class>`` would not catch remat's error
            res["exc_class"] = f"{tr[3][0]} -> {rr[2]}({', '.join(rr[3][:-3])})"
        if rr[2] == "PanicException":
            res.update(status="mismatch", kinds=["panic"], details=["remat panicked"])
        return res
    if tr[0] == "err":
        return {"status": "mismatch", "kinds": ["remat-accepts"], "details": [],
                "torch": tr[1], "remat": short(rr[1])}
    if rr[0] == "err":
        kind = "panic" if rr[2] == "PanicException" else "remat-raises"
        return {"status": "mismatch", "kinds": [kind], "details": [],
                "torch": short(tr[1]), "remat": rr[1]}
    diffs = compare(tr[1], rr[1])
    if not diffs:
        return {"status": "ok"}
    kinds = sorted({k for k, _ in diffs})
    return {"status": "mismatch", "kinds": kinds, "details": [d for _, d in diffs][:4],
            "torch": short(tr[1]), "remat": short(rr[1])}


def _import_libs():
    import torch

    for attempt in range(10):
        try:
            import remat

            return torch, remat
        except ImportError:
            if attempt == 9:
                raise
            time.sleep(30)
    raise RuntimeError("unreachable")


def worker(start: int, selected: list[int]) -> None:
    warnings.simplefilter("ignore")
    torch, remat = _import_libs()
    torch.manual_seed(0)
    remat.manual_seed(0)

    def emit(obj):
        sys.stdout.write("@@" + json.dumps(obj) + "\n")
        sys.stdout.flush()

    for i in selected:
        if i < start:
            continue
        _, expr = CASES[i]
        emit({"i": i, "ev": "torch"})
        tr = _run_one(torch, expr)
        emit({"i": i, "ev": "remat"})
        rr = _run_one(remat, expr)
        emit({"i": i, "ev": "done", **judge(tr, rr)})
    emit({"ev": "end"})


# ----------------------------------------------------------------------------- driver
def run_isolated(selected: list[int], timeout: float) -> dict[int, dict]:
    results: dict[int, dict] = {}
    start = 0
    while True:
        todo = [i for i in selected if i >= start]
        if not todo:
            return results
        err = tempfile.TemporaryFile()
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(start),
               "--only", ",".join(map(str, todo))]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        lines: queue.Queue = queue.Queue()

        def pump(p=proc, q=lines):
            for ln in p.stdout:
                q.put(ln)
            q.put(None)

        threading.Thread(target=pump, daemon=True).start()
        current: tuple[int, str] | None = None
        finished = False
        while True:
            try:
                ln = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                proc.wait()
                i = current[0] if current else todo[0]
                results[i] = {"status": "mismatch", "kinds": ["hang"],
                              "details": [f"no answer in {timeout:.0f}s during "
                                          f"{current[1] if current else 'start'}"],
                              "torch": "", "remat": ""}
                start = i + 1
                break
            if ln is None:
                rc = proc.wait()
                if finished:
                    return results
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
                if current is None:
                    raise SystemExit("worker failed to start:\n" + "\n".join(tail))
                i, phase = current
                results[i] = {"status": "mismatch", "kinds": ["crash"],
                              "details": [f"process died (rc {rc}) during {phase}"],
                              "torch": "", "remat": " | ".join(tail)[:300]}
                start = i + 1
                break
            if not ln.startswith("@@"):
                continue
            msg = json.loads(ln[2:])
            if msg["ev"] == "end":
                finished = True
            elif msg["ev"] == "done":
                results[msg["i"]] = msg
                current = None
            else:
                current = (msg["i"], msg["ev"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", default=None, help="only cases whose text or section contains this")
    ap.add_argument("-v", action="store_true", help="also list cases where both raised")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--only", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker is not None:
        sel = [int(s) for s in args.only.split(",")] if args.only else list(range(len(CASES)))
        worker(args.worker, sel)
        return 0

    selected = [i for i, (sec, expr) in enumerate(CASES)
                if args.k is None or args.k in expr or args.k in sec]
    t0 = time.time()
    results = run_isolated(selected, args.timeout)
    mism = [i for i in selected if results.get(i, {}).get("status") == "mismatch"]
    both = [i for i in selected if results.get(i, {}).get("status") == "both-raise"]
    by_kind: dict[str, int] = {}
    for i in mism:
        for k in results[i]["kinds"]:
            by_kind[k] = by_kind.get(k, 0) + 1

    if args.v and both:
        print(f"--- {len(both)} cases where both raised (torch | remat)")
        for i in both:
            r = results[i]
            print(f"  {CASES[i][1]}\n      torch: {r['torch']}\n      remat: {r['remat']}")
    exc = [i for i in both if "exc_class" in results[i]]
    if exc:
        pairs: dict[str, int] = {}
        for i in exc:
            pairs[results[i]["exc_class"]] = pairs.get(results[i]["exc_class"], 0) + 1
        print(f"--- {len(exc)} cases where both raised but remat's exception is not an instance "
              "of torch's builtin class (torch -> remat):")
        for pair, n in sorted(pairs.items(), key=lambda kv: -kv[1]):
            first = next(CASES[i][1] for i in exc if results[i]["exc_class"] == pair)
            print(f"  {n:4d}  {pair}   e.g. {first}")
    print(f"--- {len(mism)} mismatches")
    section = None
    for i in mism:
        sec, expr = CASES[i]
        r = results[i]
        if sec != section:
            section = sec
            print(f"\n## {sec}")
        print(f"[{','.join(r['kinds'])}] {expr}")
        for d in r.get("details", []):
            print(f"      {d}")
        print(f"      torch: {r.get('torch', '')}")
        print(f"      remat: {r.get('remat', '')}")
    print(f"\ncases: {len(selected)}  ok: {len(selected) - len(mism) - len(both)}  "
          f"both raised: {len(both)}  mismatches: {len(mism)}  "
          f"({time.time() - t0:.1f}s)")
    if by_kind:
        print("mismatches by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())))
    return 1 if mism else 0


if __name__ == "__main__":
    sys.exit(main())
