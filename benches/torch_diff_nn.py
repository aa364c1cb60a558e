"""Differential tester: remat against PyTorch for the "Functions", "Autograd" and "nn and optim"
sections of the API contract (docs: /work/shared/API.md).

    python benches/torch_diff_nn.py [-v] [-k SUBSTRING]

Each case is a small function ``fn(L, c)`` that builds its inputs through the context ``c``
(``c.randn``, ``c.t``, ``c.randint``, ``c.module``: identical NumPy data for both libraries,
float inputs become leaves that require grad) and returns anything (tensors, tuples, dicts,
Python values). The case runs once with ``L = torch`` and once with ``L = remat``; the two
results are compared (exception or not, shape, dtype name, values with NaN positions, Python
values), then ``sum(out * w)`` over every float output that requires grad (``w`` random,
the same for both) is back-propagated and the gradients of every leaf are compared.

Tolerances: float32 rtol 1e-5 / atol 1e-6, float64 rtol 1e-9 / atol 1e-11 (per case
overrides with ``tol=``). Prints a summary and each mismatch; exits 1 if any.
A script, not a test: the test suite never imports torch.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import tempfile
import traceback
import warnings
import zlib

import numpy as np

warnings.simplefilter("ignore")

import torch  # noqa: E402

for _try in range(10):
    try:
        import remat  # noqa: E402
        break
    except ImportError:  # another engineer may be rebuilding the extension
        if _try == 9:
            raise
        import time

        time.sleep(30)

torch.set_num_threads(1)

F32 = (1e-5, 1e-6)
F64 = (1e-9, 1e-11)


# --------------------------------------------------------------------------------------------
# harness


class Ctx:
    """Per-run input factory: the same calls give the same NumPy data in both runs."""

    def __init__(self, L, name: str, shared: dict):
        self.L = L
        self.F = L.nn.functional
        self.nn = L.nn
        self.is_torch = L is torch
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.leaves: list[tuple[str, object]] = []
        self.shared = shared
        self._mod = 0

    def t(self, a, grad=None, dtype=None):
        a = np.asarray(a)
        if dtype is not None:
            a = a.astype(dtype)
        x = self.L.tensor(a.copy())
        if grad is None:
            grad = a.dtype.kind == "f"
        if grad:
            x.requires_grad_(True)
            self.leaves.append((f"arg{len(self.leaves)}", x))
        return x

    def arr(self, *shape, dtype=np.float32, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(dtype)

    def randn(self, *shape, dtype=np.float32, grad=None, scale=1.0):
        return self.t(self.arr(*shape, dtype=dtype, scale=scale), grad=grad)

    def rand(self, *shape, dtype=np.float32, grad=None):
        return self.t(self.rng.random(shape).astype(dtype), grad=grad)

    def randint(self, hi, *shape, lo=0, dtype=np.int64):
        return self.t(self.rng.integers(lo, hi, shape).astype(dtype), grad=False)

    def module(self, build, name="m", grads=True):
        """Build a module in this library; the remat run loads the torch run's state_dict."""
        m = build(self.L.nn)
        if self.is_torch:
            sd = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
            self.shared.setdefault("mods", []).append(sd)
        else:
            m.load_state_dict(self.shared["mods"][self._mod])
        self._mod += 1
        if grads:
            for n, p in m.named_parameters():
                self.leaves.append((f"{name}.{n}", p))
        return m


class Case:
    def __init__(self, name, fn, grad=True, tol=None):
        self.name, self.fn, self.grad, self.tol = name, fn, grad, tol


CASES: list[Case] = []


def add(name, fn, grad=True, tol=None):
    CASES.append(Case(name, fn, grad, tol))


def case(name=None, grad=True, tol=None):
    def deco(fn):
        add(name or fn.__name__, fn, grad, tol)
        return fn

    return deco


def is_tensor(x):
    return isinstance(x, (torch.Tensor, remat.Tensor))


def dtype_name(d):
    return str(d).replace("torch.", "")


def norm(x, depth=0):
    """A library-neutral description of a result."""
    if depth > 20:
        return ("deep",)
    if is_tensor(x):
        a = np.array(x.detach().numpy(), copy=True)
        return ("T", tuple(x.shape), dtype_name(x.dtype), a)
    if isinstance(x, np.ndarray):
        return ("N", tuple(x.shape), str(x.dtype), x.copy())
    if isinstance(x, (bool, np.bool_)):
        return ("bool", bool(x))
    if isinstance(x, (int, np.integer)):
        return ("int", int(x))
    if isinstance(x, (float, np.floating)):
        return ("float", float(x))
    if isinstance(x, str):
        return ("str", x)
    if x is None:
        return ("None",)
    if isinstance(x, dict):
        return ("dict", [(norm(k, depth + 1), norm(v, depth + 1)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return ("seq", [norm(v, depth + 1) for v in x])
    if isinstance(x, (set, frozenset)):
        return ("set", sorted(repr(v) for v in x))
    if isinstance(x, (torch.dtype, type(remat.float32))):
        return ("dtype", dtype_name(x))
    return ("obj", type(x).__name__)


def short(n, maxlen=160):
    k = n[0]
    if k in ("T", "N"):
        a = n[3]
        flat = a.ravel()
        body = np.array2string(flat[:6], precision=5, separator=",")
        s = f"{'tensor' if k == 'T' else 'ndarray'}{list(n[1])} {n[2]} {body}"
        if flat.size > 6:
            s += "..."
    elif k == "dict":
        s = "{" + ", ".join(f"{short(a, 30)}: {short(b, 40)}" for a, b in n[1]) + "}"
    elif k == "seq":
        s = "[" + ", ".join(short(v, 40) for v in n[1]) + "]"
    elif k in ("None",):
        s = "None"
    elif k == "exc":
        s = f"{n[1]}: {n[2]}"
    else:
        s = repr(n[1]) if len(n) > 1 else k
    return s if len(s) <= maxlen else s[: maxlen - 3] + "..."


def cmp(a, b, tol, path="out"):
    """List of differences between two normalised results (a: torch, b: remat)."""
    ka, kb = a[0], b[0]
    if ka in ("int", "float") and kb in ("int", "float") and ka != kb:
        if a[1] == b[1]:  # 1 vs 1.0: not worth a report
            return []
        return [f"{path}: python type {ka} vs {kb} ({a[1]!r} vs {b[1]!r})"]
    if ka != kb:
        return [f"{path}: kind {ka} vs {kb}: {short(a)} | {short(b)}"]
    if ka in ("T", "N"):
        out = []
        if a[1] != b[1]:
            return [f"{path}: shape {a[1]} vs {b[1]}"]
        if a[2] != b[2]:
            out.append(f"{path}: dtype {a[2]} vs {b[2]}")
        x, y = a[3], b[3]
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            if x.dtype == np.float64 and y.dtype == np.float64:
                rtol, atol = tol or F64
            else:
                rtol, atol = tol or F32
            nx, ny = np.isnan(x64), np.isnan(y64)
            if not np.array_equal(nx, ny):
                out.append(f"{path}: NaN positions differ ({int(nx.sum())} vs {int(ny.sum())} "
                           f"NaNs): {short(a)} | {short(b)}")
            else:
                ok = np.isclose(y64, x64, rtol=rtol, atol=atol) | nx
                if not ok.all():
                    with np.errstate(invalid="ignore"):
                        d = np.where(ok, 0, np.abs(x64 - y64))
                    d = np.nan_to_num(d, nan=np.inf)
                    i = np.unravel_index(int(np.argmax(d)), d.shape) if d.ndim else ()
                    scale = float(np.nanmax(np.abs(x64[np.isfinite(x64)]), initial=0.0))
                    tag = " [rounding-level]" if float(d.max()) <= 1e-5 * scale else ""
                    out.append(f"{path}: values differ{tag} at {int((~ok).sum())}/{ok.size}, "
                               f"max abs diff {float(d.max()):.3g} at {tuple(int(j) for j in i)} "
                               f"({x64[i]!r} vs {y64[i]!r}): {short(a)} | {short(b)}")
        elif not np.array_equal(x, y):
            out.append(f"{path}: values differ: {short(a)} | {short(b)}")
        return out
    if ka == "float":
        x, y = a[1], b[1]
        if math.isnan(x) and math.isnan(y):
            return []
        if not (x == y or math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-9)):
            return [f"{path}: {x!r} vs {y!r}"]
        return []
    if ka in ("int", "bool", "str", "obj", "dtype", "set"):
        return [] if a[1] == b[1] else [f"{path}: {a[1]!r} vs {b[1]!r}"]
    if ka == "None":
        return []
    if ka == "seq":
        if len(a[1]) != len(b[1]):
            return [f"{path}: length {len(a[1])} vs {len(b[1])}: {short(a)} | {short(b)}"]
        out = []
        for i, (u, v) in enumerate(zip(a[1], b[1])):
            out += cmp(u, v, tol, f"{path}[{i}]")
        return out
    if ka == "dict":
        keys_a = [short(k) for k, _ in a[1]]
        keys_b = [short(k) for k, _ in b[1]]
        if keys_a != keys_b:
            if sorted(keys_a) == sorted(keys_b):
                return [f"{path}: key order {keys_a} vs {keys_b}"]
            return [f"{path}: keys {keys_a} vs {keys_b}"]
        out = []
        for (k, u), (_, v) in zip(a[1], b[1]):
            out += cmp(u, v, tol, f"{path}[{short(k)}]")
        return out
    return [f"{path}: cannot compare {ka}"]


def float_outputs(x, acc):
    if is_tensor(x):
        if x.requires_grad and dtype_name(x.dtype) in ("float32", "float64"):
            acc.append(x)
    elif isinstance(x, dict):
        for v in x.values():
            float_outputs(v, acc)
    elif isinstance(x, (list, tuple)):
        for v in x:
            float_outputs(v, acc)
    return acc


def exc_desc(e):
    msg = str(e).strip().splitlines()
    return ("exc", type(e).__name__, (msg[0] if msg else "")[:200], type(e).__mro__)


def run_one(cs, L, shared):
    c = Ctx(L, cs.name, shared)
    L.manual_seed(0)
    res = {"leaves": c.leaves}
    try:
        out = cs.fn(L, c)
    except Exception as e:  # noqa: BLE001
        res["out"] = exc_desc(e)
        res["tb"] = traceback.format_exc(limit=-3)
        return res
    res["out"] = norm(out)
    if cs.grad:
        outs = float_outputs(out, [])
        if outs:
            wr = np.random.default_rng(1234)
            try:
                total = None
                for o in outs:
                    w = wr.standard_normal(tuple(o.shape)).astype(dtype_name(o.dtype))
                    term = (o * L.tensor(w)).sum()
                    total = term if total is None else total + term
                total.backward()
                res["grads"] = [(n, norm(p.grad)) for n, p in c.leaves]
            except Exception as e:  # noqa: BLE001
                res["grads"] = exc_desc(e)
                res["gtb"] = traceback.format_exc(limit=-3)
    return res


STATS = {"grad_cases": 0, "grad_tensors": 0}
BUILTIN_EXC = (ValueError, TypeError, RuntimeError, IndexError, KeyError, NotImplementedError,
               AttributeError, AssertionError, ZeroDivisionError)


def compare_case(cs, verbose=False):
    shared: dict = {}
    rt = run_one(cs, torch, shared)
    rr = run_one(cs, remat, shared)
    problems, notes = [], []
    ta, ra = rt["out"], rr["out"]
    if ta[0] == "exc" and ra[0] == "exc":
        tcls = next((k for k in ta[3] if k in BUILTIN_EXC), None)
        if tcls is not None and tcls not in ra[3]:
            notes.append(f"both raise; torch {ta[1]}({tcls.__name__}): {ta[2][:90]} | "
                         f"remat {ra[1]}: {ra[2][:90]}")
        return problems, notes
    if ta[0] == "exc":
        problems.append(f"torch raises, remat does not: torch {ta[1]}: {ta[2][:150]} | "
                        f"remat -> {short(ra)}")
        return problems, notes
    if ra[0] == "exc":
        problems.append(f"remat raises, torch does not: remat {ra[1]}: {ra[2][:200]} | "
                        f"torch -> {short(ta)}")
        if verbose:
            problems.append(rr.get("tb", ""))
        return problems, notes
    problems += cmp(ta, ra, cs.tol)
    if cs.grad:
        tg, rg = rt.get("grads"), rr.get("grads")
        if tg is None and rg is None:
            pass
        elif tg is None or rg is None:
            problems.append(f"grad: only one side had float outputs requiring grad "
                            f"(torch {tg is not None}, remat {rg is not None})")
        elif isinstance(tg, tuple) or isinstance(rg, tuple):
            if not (isinstance(tg, tuple) and isinstance(rg, tuple)):
                problems.append(f"backward: torch {short(tg) if isinstance(tg, tuple) else 'ok'}"
                                f" | remat {short(rg) if isinstance(rg, tuple) else 'ok'}")
                if verbose and "gtb" in rr:
                    problems.append(rr["gtb"])
        else:
            STATS["grad_cases"] += 1
            STATS["grad_tensors"] += sum(u[0] != "None" for _, u in tg)
            if [n for n, _ in tg] != [n for n, _ in rg]:
                problems.append(f"grad leaves {[n for n, _ in tg]} vs {[n for n, _ in rg]}")
            else:
                for (n, u), (_, v) in zip(tg, rg):
                    if u[0] == "None" and v[0] != "None":
                        problems.append(f"grad[{n}]: torch None, remat {short(v)}")
                    elif v[0] == "None" and u[0] != "None":
                        problems.append(f"grad[{n}]: remat None, torch {short(u)}")
                    else:
                        problems += cmp(u, v, cs.tol, f"grad[{n}]")
    return problems, notes


# --------------------------------------------------------------------------------------------
# small helpers used by cases


def lib_name(L):
    return "torch" if L is torch else "remat"


def P(L, a):
    """An nn.Parameter holding a copy of the NumPy array a."""
    return L.nn.Parameter(L.tensor(np.array(a, copy=True)))


def npy(t):
    return np.array(t.detach().numpy(), copy=True)


# ============================================================================================
# Functions
# ============================================================================================

# ---- softmax / log_softmax -------------------------------------------------------------------
for _fname in ("softmax", "log_softmax"):
    for _dim in (0, 1, 2, -1, -2):
        add(f"F.{_fname}(x(3,4,5), dim={_dim})",
            lambda L, c, f=_fname, d=_dim: getattr(c.F, f)(c.randn(3, 4, 5), dim=d))
    add(f"F.{_fname} float64 dim=1",
        lambda L, c, f=_fname: getattr(c.F, f)(c.randn(3, 4, dtype=np.float64), 1))
    add(f"F.{_fname} 1-D dim=0",
        lambda L, c, f=_fname: getattr(c.F, f)(c.randn(7), dim=0))
    add(f"F.{_fname} 0-d dim=0",
        lambda L, c, f=_fname: getattr(c.F, f)(c.randn(), dim=0))
    add(f"F.{_fname} large logits (stability)",
        lambda L, c, f=_fname: getattr(c.F, f)(c.t(np.array([[1000., 0., -1000.],
                                                                [1e4, 1e4, 1e4]], np.float32)),
                                                 dim=-1))
    add(f"F.{_fname} row with -inf",
        lambda L, c, f=_fname: getattr(c.F, f)(c.t(np.array([[0., -np.inf, 1.],
                                                                [-np.inf, -np.inf, -np.inf]],
                                                               np.float32), grad=False), dim=-1),
        grad=False)
    add(f"F.{_fname} dim out of range", lambda L, c, f=_fname: getattr(c.F, f)(c.randn(3, 4), 2))
    add(f"{_fname} top-level L.{_fname}(x, -1)",
        lambda L, c, f=_fname: getattr(L, f)(c.randn(2, 5), -1))
    add(f"Tensor.{_fname}(dim=1) method",
        lambda L, c, f=_fname: getattr(c.randn(2, 5), f)(dim=1))
    add(f"F.{_fname}(x, dim=-1, dtype=float64) on float32",
        lambda L, c, f=_fname: getattr(c.F, f)(c.randn(2, 5), dim=-1, dtype=L.float64))
    add(f"F.{_fname} implicit dim on 2-D (torch warns; dim=1)",
        lambda L, c, f=_fname: getattr(c.F, f)(c.randn(2, 5)))
    add(f"F.{_fname} implicit dim on 3-D (torch: legacy dim=0)",
        lambda L, c, f=_fname: getattr(c.F, f)(c.randn(2, 3, 4)))

# ---- activations -----------------------------------------------------------------------------
for _appr in ("none", "tanh"):
    add(f"F.gelu approximate={_appr}",
        lambda L, c, a=_appr: c.F.gelu(c.randn(4, 6, scale=3.0), approximate=a))
    add(f"F.gelu approximate={_appr} float64",
        lambda L, c, a=_appr: c.F.gelu(c.randn(4, 6, dtype=np.float64, scale=3.0),
                                       approximate=a))
    add(f"F.gelu approximate={_appr} extreme values",
        lambda L, c, a=_appr: c.F.gelu(c.t(np.array([-60., -10., -5., 0., 5., 10., 60.],
                                                    np.float32)), approximate=a))
add("F.gelu default", lambda L, c: c.F.gelu(c.randn(10)))
add("F.gelu approximate='foo'", lambda L, c: c.F.gelu(c.randn(10), approximate="foo"))
add("F.relu", lambda L, c: c.F.relu(c.randn(3, 4)))
add("F.sigmoid", lambda L, c: c.F.sigmoid(c.randn(3, 4, scale=5)))
add("F.tanh", lambda L, c: c.F.tanh(c.randn(3, 4, scale=2)))
add("F.silu", lambda L, c: c.F.silu(c.randn(3, 4, scale=3)))
add("F.leaky_relu slope 0.2", lambda L, c: c.F.leaky_relu(c.randn(3, 4), 0.2))
add("F.leaky_relu default slope", lambda L, c: c.F.leaky_relu(c.randn(3, 4)))
add("F.softplus default", lambda L, c: c.F.softplus(c.randn(3, 4, scale=10)))
add("F.softplus beta=2 threshold=5",
    lambda L, c: c.F.softplus(c.randn(3, 4, scale=5), beta=2, threshold=5))
add("L.relu top-level", lambda L, c: L.relu(c.randn(5)))
add("L.sigmoid top-level", lambda L, c: L.sigmoid(c.randn(5)))
add("L.tanh top-level", lambda L, c: L.tanh(c.randn(5)))

# ---- dropout ---------------------------------------------------------------------------------
add("F.dropout training=False p=0.5", lambda L, c: c.F.dropout(c.randn(4, 5), p=0.5,
                                                               training=False))
add("F.dropout positional (x, 0.3, False)", lambda L, c: c.F.dropout(c.randn(4, 5), 0.3, False))
add("F.dropout p=0 training=True", lambda L, c: c.F.dropout(c.randn(4, 5), p=0.0))
add("F.dropout p=1 training=True", lambda L, c: c.F.dropout(c.randn(4, 5), p=1.0))
add("F.dropout p=1 training=False", lambda L, c: c.F.dropout(c.randn(4, 5), 1.0, False))
add("F.dropout p=1.5 (invalid)", lambda L, c: c.F.dropout(c.randn(4, 5), p=1.5))
add("F.dropout p=-0.1 (invalid)", lambda L, c: c.F.dropout(c.randn(4, 5), p=-0.1))
add("F.dropout p=1.5 training=False (invalid)",
    lambda L, c: c.F.dropout(c.randn(4, 5), p=1.5, training=False))


@case("F.dropout p=0.5 statistics (values 0 or 2x, rate ~0.5, grad mask)", grad=False)
def _dropout_stats(L, c):
    x = c.t(np.ones(4000, np.float32))
    y = c.F.dropout(x, 0.5)
    y.sum().backward()
    yv, gv = npy(y), npy(x.grad)
    return (bool(np.all((yv == 0) | (yv == 2))), bool(0.45 < (yv == 0).mean() < 0.55),
            bool(np.array_equal(gv, yv)), dtype_name(y.dtype))


add("F.dropout float64 p=0.25 values in {0, x/0.75}",
    lambda L, c: (lambda x, y: bool(np.all((npy(y) == 0)
                                           | np.isclose(npy(y), npy(x) / 0.75))))(
        *(lambda x: (x, c.F.dropout(x, 0.25)))(c.randn(200, dtype=np.float64, grad=False))),
    grad=False)

# ---- layer_norm ------------------------------------------------------------------------------
add("F.layer_norm (5,) no affine", lambda L, c: c.F.layer_norm(c.randn(3, 4, 5), (5,)))
add("F.layer_norm int 5", lambda L, c: c.F.layer_norm(c.randn(3, 4, 5), 5))
add("F.layer_norm list [5]", lambda L, c: c.F.layer_norm(c.randn(3, 4, 5), [5]))
add("F.layer_norm (4,5) weight+bias",
    lambda L, c: c.F.layer_norm(c.randn(3, 4, 5), (4, 5), c.randn(4, 5), c.randn(4, 5)))
add("F.layer_norm weight only", lambda L, c: c.F.layer_norm(c.randn(3, 5), (5,), c.randn(5)))
add("F.layer_norm bias only kw",
    lambda L, c: c.F.layer_norm(c.randn(3, 5), (5,), bias=c.randn(5)))
add("F.layer_norm eps=1e-1", lambda L, c: c.F.layer_norm(c.randn(3, 5, scale=0.1), (5,),
                                                         c.randn(5), c.randn(5), eps=1e-1))
add("F.layer_norm float64", lambda L, c: c.F.layer_norm(c.randn(3, 5, dtype=np.float64), (5,),
                                                        c.randn(5, dtype=np.float64),
                                                        c.randn(5, dtype=np.float64)))
add("F.layer_norm 1-D input", lambda L, c: c.F.layer_norm(c.randn(6), (6,)))
add("F.layer_norm whole (2,3,4)", lambda L, c: c.F.layer_norm(c.randn(2, 3, 4), (2, 3, 4)))
add("F.layer_norm constant rows", lambda L, c: c.F.layer_norm(
    c.t(np.ones((2, 4), np.float32)), (4,), c.randn(4), c.randn(4)))
add("F.layer_norm shape mismatch (4,)", lambda L, c: c.F.layer_norm(c.randn(3, 5), (4,)))
add("F.layer_norm weight shape mismatch",
    lambda L, c: c.F.layer_norm(c.randn(3, 5), (5,), c.randn(4)))
add("F.layer_norm keyword normalized_shape",
    lambda L, c: c.F.layer_norm(c.randn(3, 5), normalized_shape=(5,), weight=c.randn(5)))
add("L.layer_norm top-level", lambda L, c: L.layer_norm(c.randn(3, 5), (5,)))

# ---- rms_norm / group_norm -------------------------------------------------------------------
add("F.rms_norm no weight", lambda L, c: c.F.rms_norm(c.randn(3, 5), (5,)))
add("F.rms_norm weight", lambda L, c: c.F.rms_norm(c.randn(3, 5), (5,), c.randn(5)))
add("F.rms_norm (4,5) weight eps=1e-2",
    lambda L, c: c.F.rms_norm(c.randn(2, 4, 5), (4, 5), c.randn(4, 5), eps=1e-2))
add("F.rms_norm int shape", lambda L, c: c.F.rms_norm(c.randn(3, 5), 5))
add("F.rms_norm float64", lambda L, c: c.F.rms_norm(c.randn(3, 5, dtype=np.float64), (5,),
                                                    c.randn(5, dtype=np.float64)))
add("F.rms_norm zeros input", lambda L, c: c.F.rms_norm(c.t(np.zeros((2, 3), np.float32)), (3,)))
add("F.rms_norm shape mismatch", lambda L, c: c.F.rms_norm(c.randn(3, 5), (4,)))
add("F.group_norm (2,6,4) G=3 affine",
    lambda L, c: c.F.group_norm(c.randn(2, 6, 4), 3, c.randn(6), c.randn(6)))
add("F.group_norm (2,6,3,3) G=2 no affine", lambda L, c: c.F.group_norm(c.randn(2, 6, 3, 3), 2))
add("F.group_norm G=1", lambda L, c: c.F.group_norm(c.randn(2, 4, 5), 1, c.randn(4)))
add("F.group_norm G=C", lambda L, c: c.F.group_norm(c.randn(2, 4, 5), 4, bias=c.randn(4)))
add("F.group_norm 2-D input (N,C)", lambda L, c: c.F.group_norm(c.randn(3, 6), 2))
add("F.group_norm eps=0.1", lambda L, c: c.F.group_norm(c.randn(2, 4, 5), 2, eps=0.1))
add("F.group_norm float64", lambda L, c: c.F.group_norm(c.randn(2, 4, 5, dtype=np.float64), 2,
                                                        c.randn(4, dtype=np.float64)))
add("F.group_norm C not divisible", lambda L, c: c.F.group_norm(c.randn(2, 6, 4), 4))


# ---- batch_norm ------------------------------------------------------------------------------
def _bn_stats(c, n, dtype=np.float32):
    """Running statistics (no grad): a mean near 0 and a positive variance."""
    return (c.t(c.arr(n, dtype=dtype), grad=False),
            c.t(np.abs(c.arr(n, dtype=dtype)) + 0.5, grad=False))


def _bn_f(shape, training, affine=True, stats=True, dtype=np.float32, **kw):
    """F.batch_norm on a fresh input; returns the output and the running statistics after."""
    def fn(L, c):
        x = c.randn(*shape, dtype=dtype)
        rm, rv = _bn_stats(c, shape[1], dtype) if stats else (None, None)
        w, b = (c.randn(shape[1], dtype=dtype), c.randn(shape[1], dtype=dtype)) if affine \
            else (None, None)
        y = c.F.batch_norm(x, rm, rv, w, b, training=training, **kw)
        return (y, rm, rv) if stats else y
    return fn


add("F.batch_norm train (4,3) running stats updated", _bn_f((4, 3), True))
add("F.batch_norm train (2,3,4,4) momentum=0.3 eps=1e-3",
    _bn_f((2, 3, 4, 4), True, momentum=0.3, eps=1e-3))
add("F.batch_norm train (3,2,5) no running stats", _bn_f((3, 2, 5), True, stats=False))
add("F.batch_norm train (2,2,2,2,3) no affine", _bn_f((2, 2, 2, 2, 3), True, affine=False))
add("F.batch_norm train (2,3,1) two values per channel", _bn_f((2, 3, 1), True))
add("F.batch_norm train float64", _bn_f((5, 3, 2), True, dtype=np.float64))
add("F.batch_norm eval (2,3,4)", _bn_f((2, 3, 4), False))
add("F.batch_norm eval (1,3) one sample", _bn_f((1, 3), False))
add("F.batch_norm eval float64 no affine", _bn_f((3, 2, 2, 2), False, affine=False,
                                                 dtype=np.float64))
add("F.batch_norm eval eps=0", _bn_f((2, 3), False, eps=0.0))
add("F.batch_norm defaults (eval)", lambda L, c: c.F.batch_norm(c.randn(3, 4), *_bn_stats(c, 4)))
add("F.batch_norm weight only", lambda L, c: c.F.batch_norm(
    c.randn(4, 3), *_bn_stats(c, 3), c.randn(3), training=True))
add("F.batch_norm empty batch leaves the statistics", _bn_f((0, 3), True))
add("F.batch_norm train one value per channel", _bn_f((1, 3), True))
add("F.batch_norm train (1,2,1,1) one value per channel", _bn_f((1, 2, 1, 1), True))
add("F.batch_norm running_mean size mismatch", lambda L, c: c.F.batch_norm(
    c.randn(4, 3), *_bn_stats(c, 4), training=True))
add("F.batch_norm weight size mismatch", lambda L, c: c.F.batch_norm(
    c.randn(4, 3), *_bn_stats(c, 3), c.randn(4), training=True))
add("F.batch_norm only running_mean", lambda L, c: c.F.batch_norm(
    c.randn(4, 3), _bn_stats(c, 3)[0], None, training=True))
add("F.batch_norm eval without running stats", lambda L, c: c.F.batch_norm(c.randn(4, 3),
                                                                           None, None))
add("F.batch_norm train eps=0", _bn_f((4, 3), True, eps=0.0))
add("F.batch_norm eval eps<0", _bn_f((4, 3), False, eps=-1.0))
add("F.batch_norm mixed dtypes", lambda L, c: c.F.batch_norm(
    c.randn(4, 3, dtype=np.float64), *_bn_stats(c, 3), training=True))

# ---- linear ----------------------------------------------------------------------------------
add("F.linear 2-D + bias", lambda L, c: c.F.linear(c.randn(3, 4), c.randn(5, 4), c.randn(5)))
add("F.linear 1-D input", lambda L, c: c.F.linear(c.randn(4), c.randn(5, 4), c.randn(5)))
add("F.linear 3-D input no bias", lambda L, c: c.F.linear(c.randn(2, 3, 4), c.randn(5, 4)))
add("F.linear 4-D input bias=None kw",
    lambda L, c: c.F.linear(c.randn(2, 2, 3, 4), c.randn(5, 4), bias=None))
add("F.linear 1-D weight", lambda L, c: c.F.linear(c.randn(3, 4), c.randn(4)))
add("F.linear 0-d bias", lambda L, c: c.F.linear(c.randn(3, 4), c.randn(5, 4), c.randn()))
add("F.linear float64", lambda L, c: c.F.linear(c.randn(3, 4, dtype=np.float64),
                                                c.randn(5, 4, dtype=np.float64),
                                                c.randn(5, dtype=np.float64)))
add("F.linear in-feature mismatch", lambda L, c: c.F.linear(c.randn(3, 4), c.randn(5, 3)))
add("F.linear bias size mismatch",
    lambda L, c: c.F.linear(c.randn(3, 4), c.randn(5, 4), c.randn(4)))
add("F.linear dtype mismatch f32 x f64",
    lambda L, c: c.F.linear(c.randn(3, 4), c.randn(5, 4, dtype=np.float64)))

# ---- embedding -------------------------------------------------------------------------------
add("F.embedding (2,3) ids", lambda L, c: c.F.embedding(c.randint(10, 2, 3), c.randn(10, 4)))
add("F.embedding repeated ids (grad accumulates)",
    lambda L, c: c.F.embedding(c.t(np.array([1, 1, 3, 1])), c.randn(5, 3)))
add("F.embedding 0-d id", lambda L, c: c.F.embedding(c.t(np.array(2)), c.randn(5, 3)))
add("F.embedding int32 ids", lambda L, c: c.F.embedding(c.randint(10, 4, dtype=np.int32),
                                                        c.randn(10, 4)))
add("F.embedding padding_idx=0",
    lambda L, c: c.F.embedding(c.t(np.array([[0, 2, 0], [1, 0, 3]])), c.randn(5, 3),
                               padding_idx=0))
add("F.embedding padding_idx=-1",
    lambda L, c: c.F.embedding(c.t(np.array([4, 2, 4])), c.randn(5, 3), padding_idx=-1))
add("F.embedding id out of range", lambda L, c: c.F.embedding(c.t(np.array([5])), c.randn(5, 3)))
add("F.embedding negative id", lambda L, c: c.F.embedding(c.t(np.array([-1])), c.randn(5, 3)))
add("F.embedding float ids", lambda L, c: c.F.embedding(c.t(np.array([1.0]), grad=False),
                                                        c.randn(5, 3)))
add("F.embedding padding_idx out of range",
    lambda L, c: c.F.embedding(c.t(np.array([1])), c.randn(5, 3), padding_idx=7))


@case("F.embedding max_norm=1 renormalises weight rows in place")
def _emb_maxnorm(L, c):
    w = c.randn(5, 3, grad=False, scale=3.0)
    y = c.F.embedding(c.t(np.array([0, 2, 2])), w, max_norm=1.0)
    return y, w


add("L.embedding top-level (torch: embedding(weight, ids))",
    lambda L, c: L.embedding(c.t(np.array([0, 2])), c.randn(5, 3)) if L is remat
    else L.embedding(c.randn(5, 3), c.t(np.array([0, 2]))))

# ---- scaled_dot_product_attention -----------------------------------------------------------


def _sdpa(L, c, qs, ks, vs, **kw):
    q, k, v = c.randn(*qs), c.randn(*ks), c.randn(*vs)
    return c.F.scaled_dot_product_attention(q, k, v, **kw)


add("sdpa basic (2,2,4,8)", lambda L, c: _sdpa(L, c, (2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8)))
add("sdpa 3-D (B,L,E)", lambda L, c: _sdpa(L, c, (2, 4, 8), (2, 6, 8), (2, 6, 8)))
add("sdpa Ev != E", lambda L, c: _sdpa(L, c, (1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 3)))
add("sdpa L != S", lambda L, c: _sdpa(L, c, (1, 2, 3, 4), (1, 2, 6, 4), (1, 2, 6, 4)))
add("sdpa is_causal L==S",
    lambda L, c: _sdpa(L, c, (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4), is_causal=True))
add("sdpa is_causal L=3 < S=5 (top-left)",
    lambda L, c: _sdpa(L, c, (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), is_causal=True))
add("sdpa is_causal L=5 > S=3 (top-left)",
    lambda L, c: _sdpa(L, c, (1, 2, 5, 4), (1, 2, 3, 4), (1, 2, 3, 4), is_causal=True))
add("sdpa scale=0.3",
    lambda L, c: _sdpa(L, c, (1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), scale=0.3))
add("sdpa scale=0.3 + causal",
    lambda L, c: _sdpa(L, c, (1, 1, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8), scale=0.3,
                       is_causal=True))
add("sdpa dropout_p=0.0 explicit",
    lambda L, c: _sdpa(L, c, (1, 1, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8), dropout_p=0.0))
add("sdpa float64", lambda L, c: c.F.scaled_dot_product_attention(
    c.randn(1, 2, 3, 4, dtype=np.float64), c.randn(1, 2, 3, 4, dtype=np.float64),
    c.randn(1, 2, 3, 4, dtype=np.float64), is_causal=True))


def _mask_bool(c, *shape, p=0.7):
    m = c.rng.random(shape) < p
    m[..., 0] = True  # no fully masked row
    return c.t(m)


add("sdpa bool mask (L,S) broadcast", lambda L, c: _sdpa(
    L, c, (2, 2, 4, 8), (2, 2, 5, 8), (2, 2, 5, 8), attn_mask=_mask_bool(c, 4, 5)))
add("sdpa bool mask (B,1,L,S)", lambda L, c: _sdpa(
    L, c, (2, 2, 4, 8), (2, 2, 5, 8), (2, 2, 5, 8), attn_mask=_mask_bool(c, 2, 1, 4, 5)))
add("sdpa bool mask (B,1,1,S) key padding", lambda L, c: _sdpa(
    L, c, (2, 2, 4, 8), (2, 2, 5, 8), (2, 2, 5, 8), attn_mask=_mask_bool(c, 2, 1, 1, 5)))
add("sdpa bool mask fully-masked row", lambda L, c: _sdpa(
    L, c, (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4),
    attn_mask=c.t(np.array([[True, True, False], [False, False, False], [True, True, True]]))))
add("sdpa float mask (L,S)", lambda L, c: _sdpa(
    L, c, (2, 2, 4, 8), (2, 2, 5, 8), (2, 2, 5, 8), attn_mask=c.randn(4, 5)))
add("sdpa float mask (1,H,L,S) with -inf", lambda L, c: _sdpa(
    L, c, (2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4),
    attn_mask=c.t(np.where(np.tril(np.ones((3, 3))) > 0, 0.0, -np.inf)
                  .astype(np.float32)[None, None].repeat(2, 1), grad=False)))
add("sdpa float mask requires grad (B,H,L,S)", lambda L, c: _sdpa(
    L, c, (1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4), attn_mask=c.randn(1, 2, 3, 4)))
add("sdpa is_causal + attn_mask (torch errors)", lambda L, c: _sdpa(
    L, c, (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4), attn_mask=_mask_bool(c, 3, 3),
    is_causal=True))
add("sdpa mask wrong shape", lambda L, c: _sdpa(
    L, c, (1, 1, 3, 4), (1, 1, 5, 4), (1, 1, 5, 4), attn_mask=_mask_bool(c, 3, 4)))
add("sdpa q/k head-dim mismatch", lambda L, c: _sdpa(
    L, c, (1, 1, 3, 4), (1, 1, 3, 5), (1, 1, 3, 4)))
add("sdpa enable_gqa (4 q heads, 2 kv heads)", lambda L, c: c.F.scaled_dot_product_attention(
    c.randn(1, 4, 3, 4), c.randn(1, 2, 3, 4), c.randn(1, 2, 3, 4), enable_gqa=True))
add("sdpa heads mismatch without gqa", lambda L, c: _sdpa(
    L, c, (1, 4, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4)))
add("sdpa float64 q + float32 mask", lambda L, c: c.F.scaled_dot_product_attention(
    c.randn(1, 1, 3, 4, dtype=np.float64), c.randn(1, 1, 3, 4, dtype=np.float64),
    c.randn(1, 1, 3, 4, dtype=np.float64), attn_mask=c.randn(3, 3)))

# ---- conv1d / conv2d -------------------------------------------------------------------------


def _conv(L, c, nd, xs, ws, bias=True, **kw):
    f = c.F.conv1d if nd == 1 else c.F.conv2d
    x, w = c.randn(*xs), c.randn(*ws)
    b = c.randn(ws[0]) if bias else None
    return f(x, w, b, **kw)


_CONV1 = [
    ("basic", {}),
    ("stride=2", {"stride": 2}),
    ("padding=1", {"padding": 1}),
    ("padding=(2,)", {"padding": (2,)}),
    ("padding='same'", {"padding": "same"}),
    ("padding='valid'", {"padding": "valid"}),
    ("dilation=2", {"dilation": 2}),
    ("dilation=2 padding='same'", {"dilation": 2, "padding": "same"}),
    ("stride=3 padding=2 dilation=2", {"stride": 3, "padding": 2, "dilation": 2}),
]
for _n, _kw in _CONV1:
    add(f"F.conv1d {_n}", lambda L, c, kw=_kw: _conv(L, c, 1, (2, 4, 10), (6, 4, 3), **kw))
    add(f"F.conv1d {_n} bias=None",
        lambda L, c, kw=_kw: _conv(L, c, 1, (2, 4, 10), (6, 4, 3), bias=False, **kw))
add("F.conv1d groups=2", lambda L, c: _conv(L, c, 1, (2, 4, 9), (6, 2, 3), groups=2))
add("F.conv1d depthwise groups=4",
    lambda L, c: _conv(L, c, 1, (2, 4, 9), (8, 1, 3), groups=4, padding=1))
add("F.conv1d even kernel padding='same'",
    lambda L, c: _conv(L, c, 1, (1, 2, 7), (3, 2, 4), padding="same"))
add("F.conv1d unbatched (C,L)", lambda L, c: _conv(L, c, 1, (4, 10), (6, 4, 3)))
add("F.conv1d same + stride=2 (torch errors)",
    lambda L, c: _conv(L, c, 1, (2, 4, 10), (6, 4, 3), padding="same", stride=2))
add("F.conv1d channel mismatch", lambda L, c: _conv(L, c, 1, (2, 3, 10), (6, 4, 3)))
add("F.conv1d groups not dividing", lambda L, c: _conv(L, c, 1, (2, 4, 10), (6, 2, 3), groups=3))
add("F.conv1d kernel > input", lambda L, c: _conv(L, c, 1, (1, 2, 2), (3, 2, 3)))
add("F.conv1d padding='bogus'", lambda L, c: _conv(L, c, 1, (1, 2, 6), (3, 2, 3),
                                                   padding="bogus"))
add("F.conv1d float64", lambda L, c: c.F.conv1d(c.randn(1, 2, 6, dtype=np.float64),
                                                c.randn(3, 2, 3, dtype=np.float64), stride=2))
_CONV2 = [
    ("basic", {}),
    ("stride=2", {"stride": 2}),
    ("stride=(2,1)", {"stride": (2, 1)}),
    ("padding=1", {"padding": 1}),
    ("padding=(1,0)", {"padding": (1, 0)}),
    ("padding='same'", {"padding": "same"}),
    ("padding='valid'", {"padding": "valid"}),
    ("dilation=(2,1)", {"dilation": (2, 1)}),
    ("dilation=2 padding='same'", {"dilation": 2, "padding": "same"}),
    ("stride=2 padding=2 dilation=2", {"stride": 2, "padding": 2, "dilation": 2}),
]
for _n, _kw in _CONV2:
    add(f"F.conv2d {_n}", lambda L, c, kw=_kw: _conv(L, c, 2, (2, 4, 7, 6), (6, 4, 3, 3), **kw))
add("F.conv2d bias=None padding=1",
    lambda L, c: _conv(L, c, 2, (2, 4, 7, 6), (6, 4, 3, 3), bias=False, padding=1))
add("F.conv2d groups=2 rect kernel",
    lambda L, c: _conv(L, c, 2, (2, 4, 7, 6), (6, 2, 3, 2), groups=2, stride=(1, 2)))
add("F.conv2d depthwise groups=4",
    lambda L, c: _conv(L, c, 2, (2, 4, 6, 6), (4, 1, 3, 3), groups=4, padding=1))
add("F.conv2d even kernel (4,2) padding='same'",
    lambda L, c: _conv(L, c, 2, (1, 2, 7, 6), (3, 2, 4, 2), padding="same"))
add("F.conv2d 1x1", lambda L, c: _conv(L, c, 2, (2, 4, 3, 3), (5, 4, 1, 1)))
add("F.conv2d unbatched (C,H,W)", lambda L, c: _conv(L, c, 2, (4, 5, 5), (6, 4, 3, 3)))
add("F.conv2d same + stride=2 (torch errors)",
    lambda L, c: _conv(L, c, 2, (1, 4, 6, 6), (6, 4, 3, 3), padding="same", stride=2))
add("F.conv2d kernel > input", lambda L, c: _conv(L, c, 2, (1, 4, 2, 2), (6, 4, 3, 3)))
add("F.conv2d channel mismatch", lambda L, c: _conv(L, c, 2, (1, 3, 5, 5), (6, 4, 3, 3)))
add("F.conv2d padding=(1,1,1,1) (4-tuple invalid)",
    lambda L, c: _conv(L, c, 2, (1, 4, 5, 5), (6, 4, 3, 3), padding=(1, 1, 1, 1)))
add("F.conv2d float64", lambda L, c: c.F.conv2d(c.randn(1, 2, 5, 5, dtype=np.float64),
                                                c.randn(3, 2, 3, 3, dtype=np.float64),
                                                c.randn(3, dtype=np.float64), padding=1))
add("L.conv2d top-level", lambda L, c: L.conv2d(c.randn(1, 2, 5, 5), c.randn(3, 2, 3, 3)))
add("L.conv1d top-level", lambda L, c: L.conv1d(c.randn(1, 2, 5), c.randn(3, 2, 3), padding=1))

# ---- pooling ---------------------------------------------------------------------------------
_MAXP = [
    ("k=2", (2,), {}),
    ("k=3 s=2", (3,), {"stride": 2}),
    ("k=3 s=2 p=1", (3,), {"stride": 2, "padding": 1}),
    ("k=(2,3) s=(1,2)", ((2, 3),), {"stride": (1, 2)}),
    ("k=2 ceil_mode", (2,), {"ceil_mode": True}),
    ("k=3 s=2 p=1 ceil_mode", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}),
    ("k=2 s=3 ceil_mode (last window out)", (2,), {"stride": 3, "ceil_mode": True}),
    ("k=2 dilation=2", (2,), {"dilation": 2}),
    ("k=3 stride=1 (overlapping)", (3,), {"stride": 1}),
    ("k=3 padding=2 (too big)", (3,), {"padding": 2}),
]
for _n, _a, _kw in _MAXP:
    add(f"F.max_pool2d {_n}", lambda L, c, a=_a, kw=_kw: c.F.max_pool2d(c.randn(2, 3, 7, 6), *a,
                                                                        **kw))
add("F.max_pool2d return_indices",
    lambda L, c: c.F.max_pool2d(c.randn(1, 2, 6, 6), 3, 2, 1, return_indices=True))
add("F.max_pool2d unbatched (C,H,W)", lambda L, c: c.F.max_pool2d(c.randn(2, 5, 5), 2))
add("F.max_pool2d -inf input padding", lambda L, c: c.F.max_pool2d(
    c.t(np.full((1, 1, 3, 3), -np.inf, np.float32), grad=False), 2, 2, 1), grad=False)
add("F.max_pool2d ties (constant input) grad",
    lambda L, c: c.F.max_pool2d(c.t(np.ones((1, 1, 4, 4), np.float32)), 2, 1))
add("F.max_pool2d float64", lambda L, c: c.F.max_pool2d(c.randn(1, 2, 5, 5, dtype=np.float64),
                                                        2, ceil_mode=True))
_AVGP = [
    ("k=2", (2,), {}),
    ("k=3 s=2 p=1", (3,), {"stride": 2, "padding": 1}),
    ("k=3 s=2 p=1 count_include_pad=False", (3,),
     {"stride": 2, "padding": 1, "count_include_pad": False}),
    ("k=3 s=2 p=1 ceil_mode", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}),
    ("k=3 s=2 p=1 ceil_mode count_include_pad=False", (3,),
     {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}),
    ("k=2 s=3 ceil_mode", (2,), {"stride": 3, "ceil_mode": True}),
    ("k=(2,3) s=(2,1) p=(1,1)", ((2, 3),), {"stride": (2, 1), "padding": (1, 1)}),
    ("k=3 divisor_override=2", (3,), {"divisor_override": 2}),
    ("k=3 padding=2 (too big)", (3,), {"padding": 2}),
]
for _n, _a, _kw in _AVGP:
    add(f"F.avg_pool2d {_n}", lambda L, c, a=_a, kw=_kw: c.F.avg_pool2d(c.randn(2, 3, 7, 6), *a,
                                                                        **kw))
add("F.avg_pool2d unbatched", lambda L, c: c.F.avg_pool2d(c.randn(2, 4, 4), 2))
add("F.avg_pool2d float64 ceil p=1 (6 wide)",
    lambda L, c: c.F.avg_pool2d(c.randn(1, 1, 6, 6, dtype=np.float64), 3, 2, 1, ceil_mode=True))

# ---- pad -------------------------------------------------------------------------------------
_PADS = [
    ("constant (1,2) on 1 dim", (2, 3, 4), (1, 2), {}),
    ("constant (1,1,2,0)", (2, 3, 4), (1, 1, 2, 0), {}),
    ("constant 3 pairs", (2, 3, 4), (1, 0, 0, 1, 1, 1), {}),
    ("constant value=1.5", (2, 3), (1, 1), {"value": 1.5}),
    ("constant negative (-1,2)", (2, 5), (-1, 2), {}),
    ("constant negative both dims", (3, 5), (-1, -2, 1, -1), {}),
    ("constant all 4 dims", (2, 2, 2, 2), (1, 1, 1, 1, 1, 1, 1, 1), {}),
    ("constant too many pairs", (2, 3), (1, 1, 1, 1, 1, 1), {}),
    ("constant odd length", (2, 3), (1, 1, 1), {}),
    ("constant negative removes all", (2, 3), (-2, -2), {}),
    ("reflect 3-D (1,2)", (1, 2, 5), (1, 2), {"mode": "reflect"}),
    ("reflect 4-D (1,2,2,1)", (1, 2, 4, 5), (1, 2, 2, 1), {"mode": "reflect"}),
    ("reflect pad >= size", (1, 2, 3), (3, 0), {"mode": "reflect"}),
    ("reflect 2-D unbatched (C,W)", (2, 5), (2, 2), {"mode": "reflect"}),
    ("replicate 3-D", (1, 2, 5), (2, 3), {"mode": "replicate"}),
    ("replicate 4-D", (1, 2, 4, 5), (1, 2, 3, 0), {"mode": "replicate"}),
    ("circular 3-D", (1, 2, 5), (2, 1), {"mode": "circular"}),
    ("circular 4-D", (1, 2, 4, 5), (1, 2, 2, 1), {"mode": "circular"}),
    ("circular negative", (1, 2, 5), (-1, 2), {"mode": "circular"}),
    ("reflect negative", (1, 2, 5), (-1, 2), {"mode": "reflect"}),
    ("replicate negative", (1, 2, 5), (-1, 2), {"mode": "replicate"}),
    ("mode='bogus'", (1, 2, 5), (1, 1), {"mode": "bogus"}),
    ("reflect on 1-D (torch errors)", (5,), (1, 1), {"mode": "reflect"}),
    ("reflect value=1 (torch errors)", (1, 2, 5), (1, 1), {"mode": "reflect", "value": 1.0}),
]
for _n, _s, _p, _kw in _PADS:
    add(f"F.pad {_n}", lambda L, c, s=_s, p=_p, kw=_kw: c.F.pad(c.randn(*s), p, **kw))
add("F.pad int64 constant", lambda L, c: c.F.pad(c.randint(5, 2, 3), (1, 1), value=7))
add("F.pad bool constant", lambda L, c: c.F.pad(c.t(np.array([True, False])), (1, 0)))
add("F.pad list pad", lambda L, c: c.F.pad(c.randn(2, 3), [0, 2]))
add("F.pad float64 reflect", lambda L, c: c.F.pad(c.randn(1, 1, 4, dtype=np.float64), (2, 1),
                                                  mode="reflect"))

# ---- losses ----------------------------------------------------------------------------------
for _loss in ("mse_loss", "l1_loss"):
    for _red in ("mean", "sum", "none"):
        add(f"F.{_loss} reduction={_red}",
            lambda L, c, f=_loss, r=_red: getattr(c.F, f)(c.randn(3, 4), c.randn(3, 4),
                                                          reduction=r))
    add(f"F.{_loss} broadcast target (3,4) vs (4,)",
        lambda L, c, f=_loss: getattr(c.F, f)(c.randn(3, 4), c.randn(4)))
    add(f"F.{_loss} float64", lambda L, c, f=_loss: getattr(c.F, f)(
        c.randn(3, 4, dtype=np.float64), c.randn(3, 4, dtype=np.float64)))
    add(f"F.{_loss} reduction='bogus'",
        lambda L, c, f=_loss: getattr(c.F, f)(c.randn(3), c.randn(3), reduction="bogus"))
    add(f"F.{_loss} shape mismatch (3,) vs (4,)",
        lambda L, c, f=_loss: getattr(c.F, f)(c.randn(3), c.randn(4)))
    add(f"F.{_loss} target no grad", lambda L, c, f=_loss: getattr(c.F, f)(
        c.randn(2, 3), c.randn(2, 3, grad=False)))
    add(f"F.{_loss} 0-d", lambda L, c, f=_loss: getattr(c.F, f)(c.randn(), c.randn()))
    add(f"F.{_loss} empty mean (nan)",
        lambda L, c, f=_loss: getattr(c.F, f)(c.randn(0), c.randn(0)), grad=False)
add("F.l1_loss ties at 0 (grad sign(0))", lambda L, c: c.F.l1_loss(
    c.t(np.array([1.0, 2.0], np.float32)), c.t(np.array([1.0, 3.0], np.float32))))


def _tgt(c, n, C, *extra, ignore=None, frac=0.3):
    t = c.rng.integers(0, C, (n,) + extra)
    if ignore is not None:
        t = np.where(c.rng.random(t.shape) < frac, ignore, t)
        t.flat[0] = 0 if ignore != 0 else 1  # at least one valid
    return c.t(t.astype(np.int64))


def _ce(L, c, shape=(5, 4), ignore=None, weight=False, probs=False, tkw=None, **kw):
    C = shape[1]
    x = c.randn(*shape, scale=2.0)
    if probs:
        p = c.rng.random(shape).astype(np.float32)
        p /= p.sum(1, keepdims=True)
        t = c.t(p, grad=False)
    else:
        t = _tgt(c, shape[0], C, *shape[2:], ignore=ignore)
    if weight:
        kw["weight"] = c.t((c.rng.random(C) + 0.5).astype(np.float32), grad=False)
    if ignore is not None:
        kw["ignore_index"] = ignore
    return c.F.cross_entropy(x, t, **kw)


for _red in ("mean", "sum", "none"):
    for _shape in ((5, 4), (2, 4, 3, 2)):
        _sn = "x".join(map(str, _shape))
        add(f"F.cross_entropy {_sn} {_red}",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} ignore_index=-100",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, ignore=-100, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} ignore_index=1",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, ignore=1, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} weight",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, weight=True, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} label_smoothing=0.1",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, label_smoothing=0.1, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} weight+ls",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, weight=True, label_smoothing=0.2,
                                               reduction=r))
        add(f"F.cross_entropy {_sn} {_red} weight+ignore",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, weight=True, ignore=-100, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} ls+ignore",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, ignore=2, label_smoothing=0.3,
                                               reduction=r))
        add(f"F.cross_entropy {_sn} {_red} weight+ls+ignore",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, weight=True, ignore=-100,
                                               label_smoothing=0.15, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} probs",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, probs=True, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} probs+ls",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, probs=True, label_smoothing=0.1,
                                               reduction=r))
        add(f"F.cross_entropy {_sn} {_red} probs+weight",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, probs=True, weight=True, reduction=r))
        add(f"F.cross_entropy {_sn} {_red} probs+weight+ls",
            lambda L, c, r=_red, s=_shape: _ce(L, c, s, probs=True, weight=True,
                                               label_smoothing=0.2, reduction=r))
add("F.cross_entropy all targets ignored (mean -> nan)", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([-100, -100, -100]))))
add("F.cross_entropy all ignored + weight + ls", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([1, 1, 1])), ignore_index=1, label_smoothing=0.1,
    weight=c.t(np.array([1, 2, 3, 4], np.float32), grad=False)))
add("F.cross_entropy unbatched (C,) + 0-d target", lambda L, c: c.F.cross_entropy(
    c.randn(4), c.t(np.array(2))))
add("F.cross_entropy unbatched probs (C,)", lambda L, c: c.F.cross_entropy(
    c.randn(4), c.t(np.array([0.1, 0.2, 0.3, 0.4], np.float32), grad=False)))
add("F.cross_entropy target out of range", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 4, 1]))))
add("F.cross_entropy negative target (not ignore)", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, -1, 1]))))
add("F.cross_entropy int32 target", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 3, 1], np.int32))))
add("F.cross_entropy target shape mismatch", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 3]))))
add("F.cross_entropy probs shape mismatch", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.rand(3, 5, grad=False)))
add("F.cross_entropy label_smoothing=1.0", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 3, 1])), label_smoothing=1.0))
add("F.cross_entropy label_smoothing=1.5 (invalid)", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 3, 1])), label_smoothing=1.5))
add("F.cross_entropy weight wrong size", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 3, 1])), weight=c.t(np.ones(3, np.float32), grad=False)))
add("F.cross_entropy float64 weight+ls+ignore", lambda L, c: c.F.cross_entropy(
    c.randn(6, 5, dtype=np.float64), c.t(np.array([0, 4, -100, 2, 2, 1])),
    weight=c.t(np.linspace(0.5, 2, 5), grad=False), label_smoothing=0.25))
add("F.cross_entropy (N,C,d1) 3-D", lambda L, c: _ce(L, c, (2, 3, 4), ignore=0,
                                                     label_smoothing=0.1))
add("F.cross_entropy extreme logits", lambda L, c: c.F.cross_entropy(
    c.t(np.array([[1000., -1000., 0.], [-1e4, 1e4, 0.]], np.float32)), c.t(np.array([1, 0]))))
add("F.cross_entropy weight requires grad", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.t(np.array([0, 3, 1])), weight=c.rand(4)))
add("F.cross_entropy probs target requires grad", lambda L, c: c.F.cross_entropy(
    c.randn(3, 4), c.F.softmax(c.randn(3, 4), -1)))


def _nll(L, c, shape=(5, 4), ignore=None, weight=False, **kw):
    x = c.F.log_softmax(c.randn(*shape), 1)
    t = _tgt(c, shape[0], shape[1], *shape[2:], ignore=ignore)
    if weight:
        kw["weight"] = c.t((c.rng.random(shape[1]) + 0.5).astype(np.float32), grad=False)
    if ignore is not None:
        kw["ignore_index"] = ignore
    return c.F.nll_loss(x, t, **kw)


for _red in ("mean", "sum", "none"):
    for _shape in ((5, 4), (2, 4, 3, 2)):
        _sn = "x".join(map(str, _shape))
        add(f"F.nll_loss {_sn} {_red}", lambda L, c, r=_red, s=_shape: _nll(L, c, s, reduction=r))
        add(f"F.nll_loss {_sn} {_red} weight+ignore",
            lambda L, c, r=_red, s=_shape: _nll(L, c, s, weight=True, ignore=1, reduction=r))
add("F.nll_loss raw (non-normalised) input", lambda L, c: c.F.nll_loss(
    c.randn(3, 4), c.t(np.array([0, 3, 1]))))
add("F.nll_loss unbatched", lambda L, c: c.F.nll_loss(c.randn(4), c.t(np.array(1))))
add("F.nll_loss target out of range", lambda L, c: c.F.nll_loss(
    c.randn(3, 4), c.t(np.array([0, 9, 1]))))
add("F.nll_loss float targets (torch errors)", lambda L, c: c.F.nll_loss(
    c.randn(3, 4), c.rand(3, 4, grad=False)))


def _bce(L, c, shape=(3, 4), weight=None, pos_weight=None, tgrad=False, **kw):
    x = c.randn(*shape, scale=3.0)
    t = c.rand(*shape, grad=tgrad)
    if weight is not None:
        kw["weight"] = c.rand(*weight, grad=False)
    if pos_weight is not None:
        kw["pos_weight"] = c.t((c.rng.random(pos_weight) * 3).astype(np.float32), grad=False)
    return c.F.binary_cross_entropy_with_logits(x, t, **kw)


for _red in ("mean", "sum", "none"):
    add(f"F.bce_with_logits {_red}", lambda L, c, r=_red: _bce(L, c, reduction=r))
    add(f"F.bce_with_logits {_red} weight (4,)",
        lambda L, c, r=_red: _bce(L, c, weight=(4,), reduction=r))
    add(f"F.bce_with_logits {_red} pos_weight (4,)",
        lambda L, c, r=_red: _bce(L, c, pos_weight=(4,), reduction=r))
    add(f"F.bce_with_logits {_red} weight (3,1) + pos_weight",
        lambda L, c, r=_red: _bce(L, c, weight=(3, 1), pos_weight=(4,), reduction=r))
add("F.bce_with_logits target requires grad",
    lambda L, c: _bce(L, c, pos_weight=(4,), tgrad=True))
add("F.bce_with_logits pos_weight (2,3,4) N-d", lambda L, c: _bce(L, c, (2, 3, 4),
                                                                  pos_weight=(3, 1)))
add("F.bce_with_logits extreme logits", lambda L, c: c.F.binary_cross_entropy_with_logits(
    c.t(np.array([-100., 100., -1000., 1000., 0.], np.float32)),
    c.t(np.array([1., 0., 0., 1., 0.5], np.float32)), reduction="none"))
add("F.bce_with_logits extreme + pos_weight", lambda L, c: c.F.binary_cross_entropy_with_logits(
    c.t(np.array([-100., 100., -30.], np.float32)), c.t(np.array([1., 0., 1.], np.float32)),
    pos_weight=c.t(np.array([2.0], np.float32), grad=False), reduction="none"))
add("F.bce_with_logits shape mismatch", lambda L, c: c.F.binary_cross_entropy_with_logits(
    c.randn(3, 4), c.rand(3, grad=False)))
add("F.bce_with_logits int target (torch errors?)",
    lambda L, c: c.F.binary_cross_entropy_with_logits(c.randn(3), c.t(np.array([0, 1, 1]))))
add("F.bce_with_logits float64", lambda L, c: c.F.binary_cross_entropy_with_logits(
    c.randn(3, 4, dtype=np.float64), c.rand(3, 4, dtype=np.float64, grad=False),
    pos_weight=c.t(np.array([1., 2., 3., 4.]), grad=False)))

add("F.one_hot num_classes=5", lambda L, c: c.F.one_hot(c.randint(5, 2, 3), 5))
add("F.one_hot inferred classes", lambda L, c: c.F.one_hot(c.t(np.array([0, 3, 1]))))
add("F.one_hot 0-d", lambda L, c: c.F.one_hot(c.t(np.array(2)), 4))
add("F.one_hot class >= num_classes", lambda L, c: c.F.one_hot(c.t(np.array([0, 5])), 4))
add("F.one_hot negative index", lambda L, c: c.F.one_hot(c.t(np.array([0, -1])), 4))
add("F.one_hot float input", lambda L, c: c.F.one_hot(c.t(np.array([0., 1.]), grad=False), 4))
add("F.one_hot int32 input", lambda L, c: c.F.one_hot(c.t(np.array([0, 1], np.int32)), 3))
add("F.one_hot empty with num_classes", lambda L, c: c.F.one_hot(
    c.t(np.zeros(0, np.int64)), 3))
add("F.one_hot empty inferred (torch errors)", lambda L, c: c.F.one_hot(
    c.t(np.zeros(0, np.int64))))


# ---- more edge cases --------------------------------------------------------------------------
add("F.softmax on int64 (torch errors)", lambda L, c: c.F.softmax(c.randint(5, 3), dim=0))
add("F.linear int input (torch errors)", lambda L, c: c.F.linear(c.randint(5, 2, 3),
                                                                 c.randn(4, 3)))
add("F.mse_loss int target", lambda L, c: c.F.mse_loss(c.randn(3), c.randint(5, 3)))
add("F.mse_loss float64 input float32 target", lambda L, c: c.F.mse_loss(
    c.randn(3, dtype=np.float64), c.randn(3)))
add("sdpa 5-D batch dims (B,G,H,L,E)", lambda L, c: _sdpa(
    L, c, (2, 2, 2, 3, 4), (2, 2, 2, 5, 4), (2, 2, 2, 5, 4), is_causal=True))
add("sdpa float32 q + float64 mask", lambda L, c: _sdpa(
    L, c, (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4), attn_mask=c.randn(3, 3, dtype=np.float64)))
add("sdpa int mask (torch errors)", lambda L, c: _sdpa(
    L, c, (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4), attn_mask=c.t(np.ones((3, 3), np.int64))))
add("F.max_pool2d H=5 k=2 s=2 p=1 ceil (last window in padding dropped)",
    lambda L, c: c.F.max_pool2d(c.randn(1, 1, 5, 5), 2, 2, 1, ceil_mode=True))
add("F.avg_pool2d H=5 k=2 s=2 p=1 ceil (last window in padding dropped)",
    lambda L, c: c.F.avg_pool2d(c.randn(1, 1, 5, 5), 2, 2, 1, ceil_mode=True))
add("F.avg_pool2d H=5 k=2 s=2 p=1 ceil count_include_pad=False",
    lambda L, c: c.F.avg_pool2d(c.randn(1, 1, 5, 5), 2, 2, 1, ceil_mode=True,
                                count_include_pad=False))
add("F.avg_pool2d k=3 s=2 p=1 divisor_override=5 ceil",
    lambda L, c: c.F.avg_pool2d(c.randn(1, 2, 6, 5), 3, 2, 1, ceil_mode=True,
                                divisor_override=5))
add("F.max_pool2d dilation=2 ceil_mode p=1",
    lambda L, c: c.F.max_pool2d(c.randn(1, 2, 8, 7), 3, 2, 1, dilation=2, ceil_mode=True))
add("F.cross_entropy probs + ignore_index (ignored for probs)", lambda L, c: _ce(
    L, c, (4, 3), probs=True, ignore_index=1))
add("F.cross_entropy probs N-d + weight + ls none", lambda L, c: _ce(
    L, c, (2, 3, 2, 2), probs=True, weight=True, label_smoothing=0.3, reduction="none"))
add("F.nll_loss weight all-ignored (mean -> nan)", lambda L, c: c.F.nll_loss(
    c.randn(2, 3), c.t(np.array([1, 1])), ignore_index=1,
    weight=c.t(np.array([1., 2., 3.], np.float32), grad=False)))
add("F.nll_loss weight zero for present classes (0/0)", lambda L, c: c.F.nll_loss(
    c.randn(2, 3), c.t(np.array([0, 0])),
    weight=c.t(np.array([0., 2., 3.], np.float32), grad=False)))
add("F.layer_norm float64 input float32 weight", lambda L, c: c.F.layer_norm(
    c.randn(2, 3, dtype=np.float64), (3,), c.randn(3)))
add("F.embedding 3-D ids", lambda L, c: c.F.embedding(c.randint(6, 2, 2, 3), c.randn(6, 2)))


# remat's documented extensions / aliases, compared with the equivalent torch call
add("remat layer_norm(x) without normalized_shape == torch layer_norm(x, (D,))",
    lambda L, c: (lambda x: c.F.layer_norm(x, (5,)) if L is torch else c.F.layer_norm(x))(
        c.randn(3, 5)))
add("remat softmax(x, axis=1) == torch softmax(x, dim=1)",
    lambda L, c: (lambda x: c.F.softmax(x, dim=1) if L is torch else c.F.softmax(x, axis=1))(
        c.randn(3, 4, 2)))
add("F.softmax(x, dim=-1, dtype=None)", lambda L, c: c.F.softmax(c.randn(2, 3), dim=-1,
                                                                 dtype=None))
add("F.dropout(x, 0.2, False, inplace=False)", lambda L, c: c.F.dropout(c.randn(2, 3), 0.2,
                                                                         False, inplace=False))
add("F.dropout(x, 1.0, True, inplace=True) on a no-grad tensor (written in place)",
    lambda L, c: (lambda x: (lambda y: (y is x, x))(c.F.dropout(x, 1.0, True, inplace=True)))(
        c.randn(2, 3, grad=False)), grad=False)
add("F.dropout(x, 0.3, False, inplace=True) returns x", lambda L, c: (lambda x: c.F.dropout(
    x, 0.3, False, inplace=True) is x)(c.randn(2, 3, grad=False)), grad=False)
add("F.mse_loss weight=", lambda L, c: c.F.mse_loss(c.randn(3, 4), c.randn(3, 4),
                                                   weight=c.rand(3, 4, grad=False)))
add("F.l1_loss weight= reduction=sum", lambda L, c: c.F.l1_loss(
    c.randn(3, 4), c.randn(3, 4), reduction="sum", weight=c.rand(3, 4, grad=False)))
add("F.mse_loss broadcast target (2,1,4) vs (3,1) reduction=none",
    lambda L, c: c.F.mse_loss(c.randn(2, 1, 4), c.randn(3, 1), reduction="none"))
add("nn.MSELoss broadcast target (3,4) vs (4,)", lambda L, c: L.nn.MSELoss()(
    c.randn(3, 4), c.randn(4)))
add("F.log_softmax implicit dim on 2-D (torch: dim=1)", lambda L, c: c.F.log_softmax(
    c.randn(3, 4)))
add("nn.Softmax() implicit dim on 3-D", lambda L, c: L.nn.Softmax()(c.randn(2, 3, 4)))


# ============================================================================================
# nn modules: built in torch, weights copied into remat through load_state_dict(numpy)
# ============================================================================================


def _mod(build, *xshape, train=None, x_dtype=np.float32, call=None):
    def fn(L, c):
        m = c.module(build)
        if train is not None:
            m.train(train)
        x = c.randn(*xshape, dtype=x_dtype) if xshape else None
        return call(m, x, c) if call else m(x)
    return fn


add("nn.Linear(3,4)", _mod(lambda nn: nn.Linear(3, 4), 2, 5, 3))
add("nn.Linear(3,4,bias=False) 1-D input", _mod(lambda nn: nn.Linear(3, 4, bias=False), 3))
add("nn.Linear(3,4) wrong in-features", _mod(lambda nn: nn.Linear(3, 4), 2, 5))
add("nn.Conv1d(4,6,3,stride=2,padding=1)",
    _mod(lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=1), 2, 4, 9))
add("nn.Conv1d groups=2 dilation=2 padding='same' bias=False",
    _mod(lambda nn: nn.Conv1d(4, 6, 3, groups=2, dilation=2, padding="same", bias=False),
         2, 4, 9))
add("nn.Conv1d padding_mode='reflect'",
    _mod(lambda nn: nn.Conv1d(2, 3, 3, padding=1, padding_mode="reflect"), 1, 2, 6))
add("nn.Conv1d padding_mode='circular'",
    _mod(lambda nn: nn.Conv1d(2, 3, 3, padding=2, padding_mode="circular"), 1, 2, 6))
add("nn.Conv2d(3,6,3,padding=1)", _mod(lambda nn: nn.Conv2d(3, 6, 3, padding=1), 2, 3, 5, 5))
add("nn.Conv2d(4,8,(3,2),stride=(2,1),groups=2,bias=False)",
    _mod(lambda nn: nn.Conv2d(4, 8, (3, 2), stride=(2, 1), groups=2, bias=False), 2, 4, 7, 6))
add("nn.Conv2d padding='same' dilation=2",
    _mod(lambda nn: nn.Conv2d(2, 3, 3, padding="same", dilation=2), 1, 2, 6, 6))
add("nn.Conv2d padding_mode='replicate'",
    _mod(lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="replicate"), 1, 2, 5, 5))
add("nn.Conv2d in_channels not divisible by groups",
    _mod(lambda nn: nn.Conv2d(3, 6, 3, groups=2), 1, 3, 5, 5))
add("nn.LayerNorm(5)", _mod(lambda nn: nn.LayerNorm(5), 3, 4, 5))
add("nn.LayerNorm((4,5))", _mod(lambda nn: nn.LayerNorm((4, 5)), 3, 4, 5))
add("nn.LayerNorm(5, elementwise_affine=False)",
    _mod(lambda nn: nn.LayerNorm(5, elementwise_affine=False), 3, 5))
add("nn.LayerNorm(5, bias=False)", _mod(lambda nn: nn.LayerNorm(5, bias=False), 3, 5))
add("nn.LayerNorm(5, eps=0.1)", _mod(lambda nn: nn.LayerNorm(5, eps=0.1), 3, 5))
add("nn.RMSNorm(5)", _mod(lambda nn: nn.RMSNorm(5), 3, 5))
add("nn.RMSNorm(5, eps=1e-3)", _mod(lambda nn: nn.RMSNorm(5, eps=1e-3), 3, 5))
add("nn.RMSNorm((4,5), elementwise_affine=False)",
    _mod(lambda nn: nn.RMSNorm((4, 5), elementwise_affine=False), 2, 4, 5))
add("nn.GroupNorm(2,6)", _mod(lambda nn: nn.GroupNorm(2, 6), 2, 6, 3))


def _sd(m):
    """A state dict as NumPy arrays in both libraries (torch's holds tensors)."""
    return {k: npy(v) if is_tensor(v) else np.asarray(v) for k, v in m.state_dict().items()}


def _bn_mod(build, *xshape, steps=3, then_eval=True, dtype=np.float32):
    """A BatchNorm module trained ``steps`` batches (its weight and bias loaded from the torch
    run, made non-trivial first), then (optionally) one eval call; returns every output and the
    buffers, ``num_batches_tracked`` included."""
    def fn(L, c):
        def built(nn):
            m = build(nn)
            if dtype == np.float64:  # before the leaves are registered (remat replaces them)
                m = m.double()
            if m.weight is not None:
                with L.no_grad():
                    m.weight.mul_(L.tensor(1.5))
                    if m.bias is not None:
                        m.bias.add_(L.tensor(0.25))
            return m
        m = c.module(built)
        outs = [m(c.randn(*xshape, dtype=dtype, scale=2.0)) for _ in range(steps)]
        if then_eval:
            m.eval()
            outs.append(m(c.randn(*xshape, dtype=dtype)))
        return outs, _sd(m)
    return fn


add("nn.BatchNorm1d(3) (4,3) train x3 + eval", _bn_mod(lambda nn: nn.BatchNorm1d(3), 4, 3))
add("nn.BatchNorm1d(3) (4,3,5) train x3 + eval", _bn_mod(lambda nn: nn.BatchNorm1d(3), 4, 3, 5))
add("nn.BatchNorm2d(3) train x3 + eval", _bn_mod(lambda nn: nn.BatchNorm2d(3), 2, 3, 4, 4))
add("nn.BatchNorm2d(3) float64", _bn_mod(lambda nn: nn.BatchNorm2d(3), 2, 3, 3, 3,
                                         dtype=np.float64))
add("nn.BatchNorm3d(2) train x2 + eval", _bn_mod(lambda nn: nn.BatchNorm3d(2), 2, 2, 2, 3, 3,
                                                 steps=2))
add("nn.BatchNorm1d(3, momentum=None) cumulative average",
    _bn_mod(lambda nn: nn.BatchNorm1d(3, momentum=None), 5, 3, steps=4))
add("nn.BatchNorm2d(3, momentum=0.5, eps=1e-3)",
    _bn_mod(lambda nn: nn.BatchNorm2d(3, momentum=0.5, eps=1e-3), 3, 3, 2, 2))
add("nn.BatchNorm2d(3, affine=False)", _bn_mod(lambda nn: nn.BatchNorm2d(3, affine=False),
                                               2, 3, 2, 2))
add("nn.BatchNorm2d(3, bias=False)", _bn_mod(lambda nn: nn.BatchNorm2d(3, bias=False),
                                             2, 3, 2, 2))
add("nn.BatchNorm1d(3, track_running_stats=False) (eval uses the batch)",
    _bn_mod(lambda nn: nn.BatchNorm1d(3, track_running_stats=False), 4, 3))
add("nn.BatchNorm2d wrong rank", _mod(lambda nn: nn.BatchNorm2d(3), 2, 3, 4))
add("nn.BatchNorm1d wrong rank", _mod(lambda nn: nn.BatchNorm1d(3), 2, 3, 4, 4))
add("nn.BatchNorm3d wrong rank", _mod(lambda nn: nn.BatchNorm3d(3), 2, 3, 4, 4))
add("nn.BatchNorm1d one value per channel", _mod(lambda nn: nn.BatchNorm1d(3), 1, 3))
add("nn.BatchNorm1d one sample in eval", _mod(lambda nn: nn.BatchNorm1d(3), 1, 3, train=False))
add("nn.BatchNorm2d channel mismatch", _mod(lambda nn: nn.BatchNorm2d(4), 2, 3, 2, 2))


@case("nn.BatchNorm repr, buffers, state_dict keys and dtypes", grad=False)
def _bn_surface(L, c):
    ms = [L.nn.BatchNorm1d(3), L.nn.BatchNorm2d(4, eps=1e-3, momentum=None),
          L.nn.BatchNorm3d(2, affine=False, track_running_stats=False),
          L.nn.BatchNorm2d(2, bias=False)]
    return [(repr(m), [n for n, _ in m.named_buffers()], [n for n, _ in m.named_parameters()],
             [(k, str(v.dtype).replace("torch.", "").replace("remat.", ""), tuple(v.shape))
              for k, v in m.state_dict().items()])
            for m in ms]


@case("nn.BatchNorm2d reset_running_stats / reset_parameters")
def _bn_reset(L, c):
    m = c.module(lambda nn: nn.BatchNorm2d(3))
    m(c.randn(2, 3, 2, 2))
    m.reset_running_stats()
    after_stats = _sd(m)
    with L.no_grad():
        m.weight.mul_(L.tensor(2.0))
    m.reset_parameters()
    return after_stats, _sd(m)


def _bn_cnn(nn):
    """conv-BN-ReLU twice, float64: a conv bias before BN has a gradient of exactly 0 in
    theory, so in float32 both libraries' values are rounding noise of differing size."""
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()).double()


@case("BatchNorm2d under checkpoint: remat's checkpointed step == torch's plain step")
def _bn_checkpointed(L, c):
    """PyTorch updates the running statistics again when it recomputes a checkpoint; remat does
    not. So remat's checkpointed step is compared with torch's plain one: outputs, gradients,
    running statistics and num_batches_tracked must all agree."""
    m = c.module(_bn_cnn)
    x = c.randn(2, 3, 5, 5, dtype=np.float64)
    y = m(x) if c.is_torch else L.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
    (y * y).sum().backward()
    return y, _sd(m), [p.grad for p in m.parameters()]


@case("BatchNorm2d under checkpoint_sequential: remat's == torch's plain step")
def _bn_checkpointed_seq(L, c):
    m = c.module(_bn_cnn)
    x = c.randn(2, 3, 5, 5, dtype=np.float64)
    y = m(x) if c.is_torch else L.utils.checkpoint.checkpoint_sequential(m, 2, x,
                                                                          use_reentrant=False)
    (y * y).sum().backward()
    return y, _sd(m), [p.grad for p in m.parameters()]
add("nn.GroupNorm(3,6,affine=False)", _mod(lambda nn: nn.GroupNorm(3, 6, affine=False),
                                           2, 6, 2, 2))


def _emb_call(m, x, c):
    return m(c.t(np.array([[0, 3, 2], [1, 0, 9]])))


add("nn.Embedding(10,4)", _mod(lambda nn: nn.Embedding(10, 4), call=_emb_call))
add("nn.Embedding(10,4,padding_idx=0) (grad of pad row 0)",
    _mod(lambda nn: nn.Embedding(10, 4, padding_idx=0), call=_emb_call))
add("nn.Embedding padding row zero at init", lambda L, c: npy(
    L.nn.Embedding(6, 3, padding_idx=2).weight)[2], grad=False)
add("nn.Embedding(padding_idx=-1) resolved", lambda L, c: L.nn.Embedding(
    6, 3, padding_idx=-1).padding_idx, grad=False)
add("nn.Embedding.from_pretrained freeze", lambda L, c: (lambda e: (
    e.weight.requires_grad, npy(e(c.t(np.array([1, 0]))))))(
    L.nn.Embedding.from_pretrained(L.tensor(np.arange(6, dtype=np.float32).reshape(3, 2)))),
    grad=False)
add("nn.Dropout(0.3) eval", _mod(lambda nn: nn.Dropout(0.3), 4, 5, train=False))
add("nn.Dropout(0.0) train", _mod(lambda nn: nn.Dropout(0.0), 4, 5))
add("nn.Dropout(1.5) constructor", _mod(lambda nn: nn.Dropout(1.5), 4, 5))
add("nn.GELU()", _mod(lambda nn: nn.GELU(), 4, 5))
add("nn.GELU('tanh')", _mod(lambda nn: nn.GELU("tanh"), 4, 5))
add("nn.GELU(approximate='tanh')", _mod(lambda nn: nn.GELU(approximate="tanh"), 4, 5))
add("nn.ReLU()", _mod(lambda nn: nn.ReLU(), 4, 5))
add("nn.SiLU()", _mod(lambda nn: nn.SiLU(), 4, 5))
add("nn.Tanh()", _mod(lambda nn: nn.Tanh(), 4, 5))
add("nn.Sigmoid()", _mod(lambda nn: nn.Sigmoid(), 4, 5))
add("nn.LeakyReLU(0.2)", _mod(lambda nn: nn.LeakyReLU(0.2), 4, 5))
add("nn.LeakyReLU()", _mod(lambda nn: nn.LeakyReLU(), 4, 5))
add("nn.Softmax(dim=1)", _mod(lambda nn: nn.Softmax(dim=1), 2, 3, 4))
add("nn.LogSoftmax(dim=-1)", _mod(lambda nn: nn.LogSoftmax(dim=-1), 2, 3, 4))
add("nn.Identity()", _mod(lambda nn: nn.Identity(), 2, 3))
add("nn.Flatten()", _mod(lambda nn: nn.Flatten(), 2, 3, 4, 5))
add("nn.Flatten(0, 1)", _mod(lambda nn: nn.Flatten(0, 1), 2, 3, 4))
add("nn.Flatten(-2)", _mod(lambda nn: nn.Flatten(-2), 2, 3, 4, 5))
add("nn.MaxPool2d(2)", _mod(lambda nn: nn.MaxPool2d(2), 2, 3, 6, 5))
add("nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)",
    _mod(lambda nn: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), 1, 2, 6, 6))
add("nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)",
    _mod(lambda nn: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), 1, 2, 6, 5))
add("nn.AvgPool2d(2, ceil_mode=True)", _mod(lambda nn: nn.AvgPool2d(2, ceil_mode=True),
                                            1, 2, 5, 5))
add("nn.Sequential(Linear,ReLU,Linear)",
    _mod(lambda nn: nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)), 4, 3))
add("nn.Sequential(Conv2d,GELU,MaxPool2d,Flatten,Linear)",
    _mod(lambda nn: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(12, 2)), 2, 2, 4, 4))
add("nn.Sequential() empty is identity", _mod(lambda nn: nn.Sequential(), 2, 3))


def _mha(**kw):
    def build(nn):
        return nn.MultiheadAttention(8, 2, batch_first=True, **kw)
    return build


def _mha_call(**kw):
    def call(m, x, c):
        kw2 = dict(kw)
        kv = c.randn(2, 5, 8) if kw2.pop("cross", False) else x
        extra = {}
        for k, v in kw2.items():
            extra[k] = v(c) if callable(v) else v
        return m(x, kv, kv, **extra)
    return call


add("nn.MultiheadAttention self-attn", _mod(_mha(), 2, 4, 8, call=_mha_call()))
add("nn.MultiheadAttention cross-attn S=5", _mod(_mha(), 2, 4, 8, call=_mha_call(cross=True)))
add("nn.MultiheadAttention need_weights=False",
    _mod(_mha(), 2, 4, 8, call=_mha_call(need_weights=False)))
add("nn.MultiheadAttention average_attn_weights=False",
    _mod(_mha(), 2, 4, 8, call=_mha_call(average_attn_weights=False)))
add("nn.MultiheadAttention bool attn_mask causal", _mod(_mha(), 2, 4, 8, call=_mha_call(
    attn_mask=lambda c: c.t(np.triu(np.ones((4, 4), bool), 1)))))
add("nn.MultiheadAttention float attn_mask", _mod(_mha(), 2, 4, 8, call=_mha_call(
    attn_mask=lambda c: c.randn(4, 4, grad=False))))
add("nn.MultiheadAttention key_padding_mask", _mod(_mha(), 2, 4, 8, call=_mha_call(
    key_padding_mask=lambda c: c.t(np.array([[False] * 4, [False, False, True, True]])))))
add("nn.MultiheadAttention is_causal with mask", _mod(_mha(), 2, 4, 8, call=_mha_call(
    attn_mask=lambda c: c.t(np.triu(np.ones((4, 4), bool), 1)), is_causal=True)))
add("nn.MultiheadAttention bias=False", _mod(_mha(bias=False), 2, 3, 8, call=_mha_call()))
add("nn.MultiheadAttention kdim/vdim", _mod(
    lambda nn: nn.MultiheadAttention(8, 2, batch_first=True, kdim=5, vdim=3), 2, 4, 8,
    call=lambda m, x, c: m(x, c.randn(2, 6, 5), c.randn(2, 6, 3))))
add("nn.MultiheadAttention batch_first=False (default)", _mod(
    lambda nn: nn.MultiheadAttention(8, 2), 4, 2, 8, call=lambda m, x, c: m(x, x, x)))
add("nn.MultiheadAttention dropout=0.5 eval", _mod(_mha(dropout=0.5), 2, 4, 8,
                                                   call=_mha_call(), train=False))
add("nn.MultiheadAttention embed not divisible by heads", lambda L, c: L.nn.MultiheadAttention(
    8, 3, batch_first=True), grad=False)
add("nn.MultiheadAttention state_dict keys", lambda L, c: list(L.nn.MultiheadAttention(
    8, 2, batch_first=True).state_dict().keys()), grad=False)
add("nn.BatchNorm1d exists (not in API.md)", lambda L, c: hasattr(L.nn, "BatchNorm1d"),
    grad=False)
add("nn.BatchNorm2d exists (not in API.md)", lambda L, c: hasattr(L.nn, "BatchNorm2d"),
    grad=False)

# loss modules (weight tensors passed to both; compare forward + grads and state_dict keys)
add("nn.CrossEntropyLoss(weight, ignore_index, label_smoothing)",
    lambda L, c: L.nn.CrossEntropyLoss(
        weight=c.t(np.array([1., 2., .5, 1.5], np.float32), grad=False), ignore_index=0,
        label_smoothing=0.1)(c.randn(5, 4), c.t(np.array([0, 1, 2, 3, 1]))))
add("nn.CrossEntropyLoss(reduction='none') N-d", lambda L, c: L.nn.CrossEntropyLoss(
    reduction="none")(c.randn(2, 3, 4), _tgt(c, 2, 3, 4)))
add("nn.CrossEntropyLoss state_dict keys (weight buffer)", lambda L, c: list(
    L.nn.CrossEntropyLoss(weight=c.t(np.ones(3, np.float32), grad=False)).state_dict()),
    grad=False)
add("nn.MSELoss(reduction='sum')", lambda L, c: L.nn.MSELoss(reduction="sum")(
    c.randn(3, 4), c.randn(3, 4)))
add("nn.L1Loss()", lambda L, c: L.nn.L1Loss()(c.randn(3, 4), c.randn(3, 4)))
add("nn.NLLLoss(weight, ignore_index=2)", lambda L, c: L.nn.NLLLoss(
    weight=c.t(np.array([1., 2., 3.], np.float32), grad=False), ignore_index=2)(
    c.F.log_softmax(c.randn(4, 3), -1), c.t(np.array([0, 2, 1, 1]))))
add("nn.BCEWithLogitsLoss(pos_weight)", lambda L, c: L.nn.BCEWithLogitsLoss(
    pos_weight=c.t(np.array([1., 3.], np.float32), grad=False))(c.randn(3, 2), c.rand(3, 2,
                                                                                        grad=False)))
add("nn.BCEWithLogitsLoss(weight, reduction='sum')", lambda L, c: L.nn.BCEWithLogitsLoss(
    weight=c.t(np.array([1., 3.], np.float32), grad=False), reduction="sum")(
    c.randn(3, 2), c.rand(3, 2, grad=False)))

# ---- module traversal ------------------------------------------------------------------------


def make_net(L):
    nn = L.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(4)
            self.scale = nn.Parameter(L.ones(4))
            self.fc = nn.Linear(4, 4)
            self.register_buffer("running", L.zeros(4))
            self.register_buffer("steps", L.zeros(1, dtype=L.int64))
            self.not_a_param = L.ones(3)

        def forward(self, x):
            return self.fc(self.norm(x) * self.scale) + self.running

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3, 4)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.heads = nn.ModuleDict({"b": nn.Linear(4, 2), "a": nn.Linear(4, 1, bias=False)})
            self.act = nn.GELU()
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Dropout(0.1))
            self.plist = nn.ParameterList([nn.Parameter(L.ones(2)), nn.Parameter(L.zeros(3))])

        def forward(self, x):
            h = self.act(self.embed(x))
            for b in self.blocks:
                h = b(h)
            h = self.seq(h)
            return self.heads["b"](h), self.heads["a"](h) + self.plist[0].sum()

    return Net()


def _net(L, c):
    return c.module(lambda nn: make_net(L), "net")


def _netcase(name, f, grad=False):
    add(f"module traversal: {name}", lambda L, c: f(L, c, _net(L, c)), grad=grad)


_netcase("named_parameters names/order", lambda L, c, m: [n for n, _ in m.named_parameters()])
_netcase("parameters() shapes", lambda L, c, m: [tuple(p.shape) for p in m.parameters()])
_netcase("parameters() are Parameters requiring grad",
         lambda L, c, m: [(isinstance(p, L.nn.Parameter), p.requires_grad, p.is_leaf)
                          for p in m.parameters()])
_netcase("named_parameters(prefix='model', recurse=False) on block",
         lambda L, c, m: [n for n, _ in m.blocks[0].named_parameters(prefix="model",
                                                                     recurse=False)])
_netcase("parameters(recurse=False)", lambda L, c, m: len(list(m.parameters(recurse=False))))
_netcase("children() types", lambda L, c, m: [type(x).__name__ for x in m.children()])
_netcase("named_children() names", lambda L, c, m: [n for n, _ in m.named_children()])
_netcase("modules() types", lambda L, c, m: [type(x).__name__ for x in m.modules()])
_netcase("named_modules() names", lambda L, c, m: [n for n, _ in m.named_modules()])
_netcase("state_dict keys", lambda L, c, m: list(m.state_dict().keys()))
_netcase("state_dict values detached", lambda L, c, m: [v.requires_grad
                                                        for v in m.state_dict().values()])
_netcase("named_buffers names", lambda L, c, m: [n for n, _ in m.named_buffers()])
_netcase("buffers() count", lambda L, c, m: len(list(m.buffers())))
_netcase("get_submodule('blocks.1.fc')", lambda L, c, m: type(m.get_submodule("blocks.1.fc"))
         .__name__)
_netcase("get_submodule('') is self", lambda L, c, m: m.get_submodule("") is m)
_netcase("get_submodule missing", lambda L, c, m: m.get_submodule("blocks.7"))
_netcase("training flags default", lambda L, c, m: [x.training for x in m.modules()])
_netcase("eval() returns self and sets flags",
         lambda L, c, m: (m.eval() is m, [x.training for x in m.modules()]))
_netcase("train(False) then train()",
         lambda L, c, m: ([x.training for x in m.train(False).modules()],
                          [x.training for x in m.train().modules()]))
_netcase("submodule eval only", lambda L, c, m: (m.blocks.eval(), [x.training
                                                                   for x in m.modules()])[1])
_netcase("apply order", lambda L, c, m: (lambda acc: (m.apply(lambda x: acc.append(
    type(x).__name__)), acc)[1])([]))
_netcase("apply returns self", lambda L, c, m: m.apply(lambda x: None) is m)
_netcase("requires_grad_(False)", lambda L, c, m: [p.requires_grad
                                                   for p in m.requires_grad_(False).parameters()])
_netcase("double() dtypes", lambda L, c, m: [dtype_name(p.dtype) for p in m.double().parameters()]
         + [dtype_name(b.dtype) for b in m.buffers()])
_netcase("to(float64) dtypes", lambda L, c, m: [dtype_name(p.dtype)
                                                for p in m.to(L.float64).parameters()])
_netcase("float() after double()", lambda L, c, m: [dtype_name(p.dtype)
                                                    for p in m.double().float().parameters()])
_netcase("forward outputs and grads (eval)",
         lambda L, c, m: m.eval()(c.randn(2, 3)), grad=True)
_netcase("len/index of containers", lambda L, c, m: (
    len(m.blocks), len(m.heads), list(m.heads.keys()), "a" in m.heads, len(m.seq),
    type(m.seq[0]).__name__, type(m.seq[-1]).__name__, type(m.seq[1:]).__name__,
    len(m.seq[1:]), len(m.plist), type(m.blocks[-1]).__name__, type(m.blocks[:1]).__name__))
_netcase("plain tensor attribute not a parameter",
         lambda L, c, m: (is_tensor(m.blocks[0].not_a_param),
                          any(p is m.blocks[0].not_a_param for p in m.parameters())))


@case("module: zero_grad sets grads to None (default)", grad=False)
def _zero_grad(L, c):
    m = _net(L, c)
    a, b = m(c.randn(2, 3))
    (a.sum() + b.sum()).backward()
    before = [p.grad is None for p in m.parameters()]
    m.zero_grad()
    return before, [p.grad is None for p in m.parameters()]


@case("module: zero_grad(set_to_none=False) zeros", grad=False)
def _zero_grad2(L, c):
    m = _net(L, c)
    a, b = m(c.randn(2, 3))
    (a.sum() + b.sum()).backward()
    m.zero_grad(set_to_none=False)
    return [None if p.grad is None else float(np.abs(npy(p.grad)).sum()) for p in m.parameters()]


@case("module: grads accumulate over two backward calls")
def _accum(L, c):
    m = c.module(lambda nn: nn.Linear(3, 2))
    x = c.randn(4, 3, grad=False)
    m(x).sum().backward()
    return m(x * 2)


@case("module: register_forward_hook modifies output + remove")
def _fwd_hook(L, c):
    m = c.module(lambda nn: nn.Linear(3, 2))
    seen = []

    def hook(mod, args, out):
        seen.append((type(mod).__name__, type(args).__name__, len(args), tuple(out.shape)))
        return out * 2

    h = m.register_forward_hook(hook)
    x = c.randn(4, 3)
    y1 = m(x)
    h.remove()
    y2 = m(x)
    return y1, y2, seen


@case("module: forward hook returning None keeps output; hook order")
def _fwd_hook2(L, c):
    m = c.module(lambda nn: nn.Linear(3, 2))
    order = []
    m.register_forward_hook(lambda mod, a, o: order.append(1))
    m.register_forward_hook(lambda mod, a, o: (order.append(2), o + 1)[1])
    return m(c.randn(4, 3)), order


@case("module: register_forward_pre_hook modifies input")
def _pre_hook(L, c):
    m = c.module(lambda nn: nn.Linear(3, 2))
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 3,))
    return m(c.randn(4, 3))


@case("module: hook on submodule of Sequential", grad=True)
def _sub_hook(L, c):
    m = c.module(lambda nn: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
    acts = {}
    m[1].register_forward_hook(lambda mod, a, o: acts.__setitem__("tanh", o))
    y = m(c.randn(2, 3))
    return y, acts["tanh"]


@case("module: load_state_dict strict=False missing/unexpected", grad=False)
def _lsd_nonstrict(L, c):
    m = L.nn.Linear(3, 2)
    res = m.load_state_dict({"weight": L.zeros(2, 3), "extra": L.ones(1)}, strict=False)
    return sorted(res.missing_keys), sorted(res.unexpected_keys), npy(m.weight)


add("module: load_state_dict missing key raises", lambda L, c: L.nn.Linear(3, 2).load_state_dict(
    {"weight": L.zeros(2, 3)}), grad=False)
add("module: load_state_dict unexpected key raises", lambda L, c: L.nn.Linear(
    3, 2).load_state_dict({"weight": L.zeros(2, 3), "bias": L.zeros(2), "x": L.zeros(1)}),
    grad=False)


@case("module: load_state_dict shape mismatch raises; model unchanged?", grad=False)
def _lsd_shape(L, c):
    m = c.module(lambda nn: nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2)))
    before = [npy(p) for p in m.parameters()]
    try:
        m.load_state_dict({"0.weight": L.zeros(2, 3), "0.bias": L.zeros(2),
                           "1.weight": L.zeros(3, 3), "1.bias": L.zeros(2)})
        raised = False
    except Exception:  # noqa: BLE001
        raised = True
    return raised, [bool(np.array_equal(a, npy(p))) for a, p in zip(before, m.parameters())]


@case("nn.Parameter basics", grad=False)
def _param_basics(L, c):
    p = L.nn.Parameter(L.zeros(2))
    q = L.nn.Parameter(L.zeros(2), requires_grad=False)
    r = L.nn.Parameter(L.ones(2) * 2)
    return (p.requires_grad, q.requires_grad, p.is_leaf, r.is_leaf, isinstance(p, L.Tensor),
            isinstance(p * 2, L.nn.Parameter), dtype_name(p.dtype))


@case("module: assigning Parameter registers it; del attr", grad=False)
def _assign_param(L, c):
    m = L.nn.Module()
    m.w = L.nn.Parameter(L.zeros(2))
    m.sub = L.nn.Linear(2, 2)
    names = [n for n, _ in m.named_parameters()]
    del m.w
    return names, [n for n, _ in m.named_parameters()]


@case("module: shared submodule counted once in parameters()", grad=False)
def _shared(L, c):
    lin = L.nn.Linear(2, 2)
    m = L.nn.Sequential(lin, lin)
    return (len(list(m.parameters())), [n for n, _ in m.named_parameters()],
            list(m.state_dict().keys()), [n for n, _ in m.named_modules()])


@case("module: register_buffer(persistent=False) not in state_dict", grad=False)
def _nonpersistent(L, c):
    m = L.nn.Module()
    m.register_buffer("a", L.ones(2))
    m.register_buffer("b", L.zeros(3), persistent=False)
    m.register_buffer("n", None)
    return ([n for n, _ in m.named_buffers()], list(m.state_dict().keys()),
            dtype_name(m.double().b.dtype))


@case("module: tied weights: torch-style state_dict (both keys) loads", grad=False)
def _tied_load(L, c):
    lin = L.nn.Linear(2, 2)
    m = L.nn.Sequential(lin, L.nn.ReLU(), lin)
    w, b = c.arr(2, 2), c.arr(2)
    res = m.load_state_dict({"0.weight": L.tensor(w), "0.bias": L.tensor(b),
                             "2.weight": L.tensor(w), "2.bias": L.tensor(b)})
    return sorted(res.missing_keys), sorted(res.unexpected_keys), npy(m[2].weight)


@case("module: named_parameters(remove_duplicate=False) of a shared module", grad=False)
def _shared_nodedup(L, c):
    lin = L.nn.Linear(2, 2)
    m = L.nn.Sequential(lin, L.nn.ReLU(), lin)
    return ([n for n, _ in m.named_parameters(remove_duplicate=False)],
            [n for n, _ in m.named_modules(remove_duplicate=False)],
            [n for n, _ in m.named_parameters()], list(m.state_dict().keys()))


@case("module: tied parameter (two modules, one weight) in state_dict", grad=False)
def _tied_param(L, c):
    a, b = L.nn.Linear(3, 3), L.nn.Linear(3, 3)
    b.weight = a.weight
    m = L.nn.Sequential(a, b)
    sd = m.state_dict()
    res = m.load_state_dict({k: L.tensor(np.asarray(v)) for k, v in sd.items()})
    return list(sd.keys()), [n for n, _ in m.named_parameters()], list(res.missing_keys)


@case("module: non-persistent buffer key is unexpected in load_state_dict", grad=False)
def _nonpersistent_load(L, c):
    m = L.nn.Module()
    m.register_buffer("a", L.ones(2))
    m.register_buffer("b", L.zeros(2), persistent=False)
    res = m.load_state_dict({"a": L.zeros(2), "b": L.ones(2)}, strict=False)
    m.register_buffer("b", L.zeros(2))  # re-registered persistent
    return list(res.missing_keys), list(res.unexpected_keys), list(m.state_dict().keys())


@case("module: float()/to(float64) keep int and bool buffers", grad=False)
def _float_int_buffers(L, c):
    m = L.nn.Linear(2, 2)
    m.register_buffer("ids", L.tensor(np.arange(3)))
    m.register_buffer("mask", L.tensor(np.array([True, False])))
    m.to(L.float64)
    d1 = [dtype_name(t.dtype) for t in (m.weight, m.ids, m.mask)]
    m.float()
    return d1, [dtype_name(t.dtype) for t in (m.weight, m.ids, m.mask)]


add("module: to(int64) raises (torch TypeError)", lambda L, c: L.nn.Linear(2, 2).to(L.int64),
    grad=False)
add("nn.Dropout repr (inplace)", lambda L, c: (repr(L.nn.Dropout(0.25)),
                                               repr(L.nn.Dropout(0.1, inplace=True))),
    grad=False)


@case("module: copy.deepcopy is independent", grad=False)
def _deepcopy(L, c):
    m = c.module(lambda nn: nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2)))
    m2 = copy.deepcopy(m)
    with L.no_grad():
        m[0].weight.add_(1.0)
    return ([n for n, _ in m2.named_parameters()], npy(m2[0].weight) - npy(m[0].weight),
            isinstance(m2[0].weight, L.nn.Parameter), m2[0].weight.requires_grad)


@case("module: assigning plain tensor to a parameter attribute", grad=False)
def _assign_tensor(L, c):
    m = L.nn.Linear(2, 2)
    m.weight = L.zeros(2, 2)
    return [n for n, _ in m.named_parameters()]


@case("module: weight.data = ... and no_grad copy_", grad=False)
def _assign_data(L, c):
    m = L.nn.Linear(2, 2)
    m.weight.data = L.tensor(c.arr(2, 2))
    with L.no_grad():
        m.bias.copy_(L.tensor(c.arr(2)))
    return (npy(m.weight), npy(m.bias), isinstance(m.weight, L.nn.Parameter),
            m.weight.requires_grad, [n for n, _ in m.named_parameters()])


@case("module: Parameter before super().__init__()", grad=False)
def _before_init(L, c):
    class M(L.nn.Module):
        def __init__(self):
            self.w = L.nn.Parameter(L.zeros(2))
            super().__init__()

    return M()


@case("module: call without forward", grad=False)
def _no_forward(L, c):
    return L.nn.Module()(L.zeros(2))


@case("module: parameters() is a generator; list(named_parameters) tuples", grad=False)
def _gen(L, c):
    m = L.nn.Linear(2, 2)
    return (type(m.parameters()).__name__, type(m.named_parameters()).__name__,
            type(next(m.named_parameters())).__name__, type(m.state_dict()).__name__)


@case("module: state_dict values share storage with params (torch) ", grad=False)
def _sd_alias(L, c):
    m = L.nn.Linear(2, 2)
    sd = m.state_dict()
    with L.no_grad():
        m.weight.add_(1.0)
    return bool(np.array_equal(np.asarray(sd["weight"]), npy(m.weight)))


@case("module: ResNet-style out += identity (in-place on graph tensor)")
def _resnet_add(L, c):
    m = c.module(lambda nn: nn.Linear(3, 3))
    x = c.randn(2, 3)
    out = m(x)
    out += x
    return c.F.relu(out)


@case("nn.Sequential OrderedDict names + append", grad=False)
def _seq_od(L, c):
    from collections import OrderedDict
    s = L.nn.Sequential(OrderedDict([("fc", L.nn.Linear(2, 3)), ("act", L.nn.ReLU())]))
    s.append(L.nn.Linear(3, 1))
    return [n for n, _ in s.named_parameters()], [n for n, _ in s.named_children()]


@case("nn.ModuleList append/extend/insert", grad=False)
def _mlist(L, c):
    ml = L.nn.ModuleList()
    ml.append(L.nn.Linear(2, 2))
    ml.extend([L.nn.ReLU(), L.nn.Linear(2, 3)])
    ml.insert(1, L.nn.Tanh())
    return ([type(x).__name__ for x in ml], [n for n, _ in ml.named_parameters()], len(ml))


@case("nn.ModuleDict ops", grad=False)
def _mdict(L, c):
    md = L.nn.ModuleDict({"z": L.nn.ReLU(), "a": L.nn.Linear(2, 2)})
    md["m"] = L.nn.Tanh()
    md.update({"q": L.nn.Identity()})
    return (list(md.keys()), [type(v).__name__ for v in md.values()],
            [k for k, _ in md.items()], "a" in md, len(md),
            [n for n, _ in md.named_parameters()])


@case("nn.ModuleList insert at 0 / end, del slice, pop, slice, +=, +", grad=False)
def _mlist2(L, c):
    nn = L.nn
    ml = nn.ModuleList([nn.Linear(2, 2), nn.ReLU(), nn.Tanh(), nn.Linear(2, 3)])
    ml.insert(0, nn.Sigmoid())
    ml.insert(len(ml), nn.Identity())
    del ml[1:3]
    popped = ml.pop(-2)
    ml += [nn.ReLU()]
    both = ml + nn.ModuleList([nn.Tanh()])
    return ([type(x).__name__ for x in ml], [n for n, _ in ml.named_children()],
            type(popped).__name__, type(ml[1:]).__name__, [type(x).__name__ for x in ml[1:]],
            [n for n, _ in both.named_children()], len(both))


@case("nn.ModuleList repr compresses repeats", grad=False)
def _mlist_repr(L, c):
    nn = L.nn
    return repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.ReLU()]))


@case("nn.Sequential insert/pop/+/*/del", grad=False)
def _seq_ops(L, c):
    nn = L.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.insert(1, nn.Sigmoid())
    s.insert(-1, nn.Identity())
    p = s.pop(0)
    t = s + nn.Sequential(nn.ReLU())
    m = nn.Sequential(nn.Tanh()) * 3
    del t[0]
    return ([type(x).__name__ for x in s], type(p).__name__, [type(x).__name__ for x in t],
            [n for n, _ in t.named_children()], len(m), len(2 * nn.Sequential(nn.ReLU())))


@case("nn.ModuleDict update from ModuleDict / pairs, pop, del, clear", grad=False)
def _mdict2(L, c):
    nn = L.nn
    md = nn.ModuleDict([("z", nn.ReLU()), ("a", nn.Linear(2, 2))])
    md.update(nn.ModuleDict({"q": nn.Tanh(), "z": nn.Identity()}))
    md.update([["w", nn.Sigmoid()]])
    popped = md.pop("a")
    del md["q"]
    keys = list(md)
    vals = [type(v).__name__ for v in md.values()]
    md.clear()
    return keys, vals, type(popped).__name__, len(md)


add("nn.ModuleDict update with a 3-tuple (ValueError)", lambda L, c: L.nn.ModuleDict().update(
    [("a", L.nn.ReLU(), 1)]), grad=False)


@case("nn.ParameterList", grad=False)
def _plist(L, c):
    pl = L.nn.ParameterList([L.nn.Parameter(L.ones(2)), L.nn.Parameter(L.zeros(3))])
    pl.append(L.nn.Parameter(L.ones(1)))
    return len(pl), [n for n, _ in pl.named_parameters()], [tuple(p.shape) for p in pl]


# ---- nn.init ---------------------------------------------------------------------------------

_GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("sigmoid", None),
          ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
          ("selu", None), ("leaky_relu", 0)]
for _nl, _p in _GAINS:
    add(f"init.calculate_gain({_nl!r}, {_p})",
        lambda L, c, nl=_nl, p=_p: L.nn.init.calculate_gain(nl, p), grad=False)
add("init.calculate_gain('bogus')", lambda L, c: L.nn.init.calculate_gain("bogus"), grad=False)


def _uniform_stat(w, bound):
    a = npy(w)
    return (round(float(np.abs(a).max() / bound), 2), bool(np.abs(a).max() <= bound * 1.0000001),
            round(float(abs(a.mean()) / bound), 1))


def _normal_stat(w, std, mean=0.0):
    a = npy(w)
    return (round(float(a.std() / std), 1), round(float((a.mean() - mean) / std), 1))


def _w(L, *shape):
    return L.nn.Parameter(L.zeros(*shape))


_INITS = [
    ("kaiming_uniform_ default (128,64)", (64, 128), "kaiming_uniform_", {},
     ("u", math.sqrt(2) * math.sqrt(3 / 128))),
    ("kaiming_uniform_ a=sqrt(5)", (64, 128), "kaiming_uniform_", {"a": math.sqrt(5)},
     ("u", 1 / math.sqrt(128))),
    ("kaiming_uniform_ fan_out relu conv", (16, 8, 3, 3), "kaiming_uniform_",
     {"mode": "fan_out", "nonlinearity": "relu"}, ("u", math.sqrt(2) * math.sqrt(3 / 144))),
    ("kaiming_uniform_ tanh", (64, 128), "kaiming_uniform_", {"nonlinearity": "tanh"},
     ("u", 5 / 3 * math.sqrt(3 / 128))),
    ("kaiming_normal_ fan_out", (128, 64), "kaiming_normal_", {"mode": "fan_out"},
     ("n", math.sqrt(2) / math.sqrt(128))),
    ("kaiming_normal_ fan_in conv a=0.1 leaky", (16, 8, 3, 3), "kaiming_normal_",
     {"a": 0.1}, ("n", math.sqrt(2 / 1.01) / math.sqrt(72))),
    ("xavier_uniform_ gain=2", (64, 128), "xavier_uniform_", {"gain": 2.0},
     ("u", 2 * math.sqrt(6 / 192))),
    ("xavier_uniform_ conv", (16, 8, 3, 3), "xavier_uniform_", {},
     ("u", math.sqrt(6 / (72 + 144)))),
    ("xavier_normal_ conv", (16, 8, 3, 3), "xavier_normal_", {},
     ("n", math.sqrt(2 / (72 + 144)))),
    ("xavier_normal_ gain=0.5", (64, 128), "xavier_normal_", {"gain": 0.5},
     ("n", 0.5 * math.sqrt(2 / 192))),
    ("uniform_(a=-0.5, b=0.25)", (100, 100), "uniform_", {"a": -0.5, "b": 0.25}, ("r",)),
    ("uniform_ default [0,1)", (100, 100), "uniform_", {}, ("r",)),
    ("normal_(mean=3, std=0.5)", (100, 100), "normal_", {"mean": 3.0, "std": 0.5},
     ("n", 0.5, 3.0)),
    ("trunc_normal_(std=0.02) absolute a,b", (100, 100), "trunc_normal_", {"std": 0.02},
     ("n", 0.02)),
    ("trunc_normal_(a=-0.5, b=1)", (100, 100), "trunc_normal_", {"a": -0.5, "b": 1.0},
     ("r",)),
    ("trunc_normal_(mean=5, std=1, a=4, b=6)", (100, 100), "trunc_normal_",
     {"mean": 5.0, "std": 1.0, "a": 4.0, "b": 6.0}, ("r",)),
]
for _n, _s, _f, _kw, _exp in _INITS:
    def _init_case(L, c, s=_s, f=_f, kw=_kw, exp=_exp):
        w = _w(L, *s)
        ret = getattr(L.nn.init, f)(w, **kw)
        info = [ret is w, w.requires_grad, w.is_leaf, w.grad_fn is None,
                dtype_name(w.dtype)]
        if exp[0] == "u":
            info.append(_uniform_stat(w, exp[1]))
        elif exp[0] == "n":
            info.append(_normal_stat(w, *exp[1:]))
        else:
            a = npy(w)
            info.append((round(float(a.min()), 1), round(float(a.max()), 1),
                         round(float(a.mean()), 1), round(float(a.std()), 1)))
        return info
    add(f"init.{_n}", _init_case, grad=False)

add("init.constant_(0.3)", lambda L, c: npy(L.nn.init.constant_(_w(L, 2, 3), 0.3)), grad=False)
add("init.zeros_", lambda L, c: npy(L.nn.init.zeros_(L.nn.Parameter(L.ones(2, 3)))), grad=False)
add("init.ones_", lambda L, c: npy(L.nn.init.ones_(_w(L, 2, 3))), grad=False)
add("init.eye_ (3,4)", lambda L, c: npy(L.nn.init.eye_(_w(L, 3, 4))), grad=False)
add("init.xavier_uniform_ on 1-D", lambda L, c: L.nn.init.xavier_uniform_(_w(L, 5)), grad=False)
add("init.kaiming_uniform_ on 1-D", lambda L, c: L.nn.init.kaiming_uniform_(_w(L, 5)),
    grad=False)
add("init.kaiming_uniform_ mode='bogus'",
    lambda L, c: L.nn.init.kaiming_uniform_(_w(L, 3, 4), mode="bogus"), grad=False)
add("init.kaiming_normal_ nonlinearity='bogus'",
    lambda L, c: L.nn.init.kaiming_normal_(_w(L, 3, 4), nonlinearity="bogus"), grad=False)
add("init.uniform_ float64 keeps dtype", lambda L, c: dtype_name(L.nn.init.uniform_(
    L.zeros(3, dtype=L.float64)).dtype), grad=False)
add("init on a plain tensor (no grad)", lambda L, c: (lambda t: (
    L.nn.init.normal_(t) is t, t.requires_grad))(L.zeros(3, 3)), grad=False)

# default initialisation of modules
_DEFAULTS = [
    ("Linear(128,64) weight", lambda nn: nn.Linear(128, 64).weight, ("u", 1 / math.sqrt(128))),
    ("Linear(128,2048) bias", lambda nn: nn.Linear(128, 2048).bias, ("u", 1 / math.sqrt(128))),
    ("Conv2d(8,64,3) weight", lambda nn: nn.Conv2d(8, 64, 3).weight, ("u", 1 / math.sqrt(72))),
    ("Conv2d(8,2048,3) bias", lambda nn: nn.Conv2d(8, 2048, 3).bias,
     ("u", 1 / math.sqrt(72))),
    ("Conv1d(4,64,5,groups=2) weight", lambda nn: nn.Conv1d(4, 64, 5, groups=2).weight,
     ("u", 1 / math.sqrt(10))),
    ("Embedding(200,50) weight", lambda nn: nn.Embedding(200, 50).weight, ("n", 1.0)),
    ("MultiheadAttention(64,4) in_proj_weight", lambda nn: nn.MultiheadAttention(
        64, 4, batch_first=True).in_proj_weight, ("u", math.sqrt(6 / (64 + 192)))),
    ("MultiheadAttention(64,4) out_proj.weight", lambda nn: nn.MultiheadAttention(
        64, 4, batch_first=True).out_proj.weight, ("u", 1 / math.sqrt(64))),
]
for _n, _b, _exp in _DEFAULTS:
    add(f"default init {_n}", lambda L, c, b=_b, exp=_exp: (
        _uniform_stat(b(L.nn), exp[1]) if exp[0] == "u" else _normal_stat(b(L.nn), exp[1])),
        grad=False)
add("default init MultiheadAttention biases zero", lambda L, c: (lambda m: (
    npy(m.in_proj_bias), npy(m.out_proj.bias)))(L.nn.MultiheadAttention(8, 2, batch_first=True)),
    grad=False)
add("default init LayerNorm/GroupNorm/RMSNorm", lambda L, c: [
    npy(p) for m in (L.nn.LayerNorm(3), L.nn.GroupNorm(1, 3), L.nn.RMSNorm(3))
    for p in m.parameters()], grad=False)

# ---- clip_grad_norm_ / clip_grad_value_ ------------------------------------------------------


def _clip_params(L, c, grads=True, nan=False):
    ps = [P(L, c.arr(3, 4)), P(L, c.arr(5)), P(L, c.arr(2))]
    gs = [c.arr(3, 4, scale=2.0), c.arr(5), c.arr(2)]
    if nan:
        gs[1][2] = np.nan
    for p, g in zip(ps, gs):
        p.grad = L.tensor(g)
    ps[2].grad = None
    return ps


def _clip(max_norm, norm_type=2.0, nan=False, **kw):
    def fn(L, c):
        ps = _clip_params(L, c, nan=nan)
        tot = L.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type, **kw)
        return tot, [p.grad for p in ps]
    return fn


add("clip_grad_norm_ max_norm=1 L2", _clip(1.0), grad=False)
add("clip_grad_norm_ max_norm=100 (no clipping)", _clip(100.0), grad=False)
add("clip_grad_norm_ norm_type=inf", _clip(0.5, float("inf")), grad=False)
add("clip_grad_norm_ norm_type='inf' string", _clip(0.5, "inf"), grad=False)
add("clip_grad_norm_ norm_type=1", _clip(0.5, 1.0), grad=False)
add("clip_grad_norm_ norm_type=3", _clip(0.5, 3.0), grad=False)
add("clip_grad_norm_ nan grad, error_if_nonfinite=False", _clip(1.0, nan=True), grad=False)
add("clip_grad_norm_ nan grad, error_if_nonfinite=True",
    _clip(1.0, nan=True, error_if_nonfinite=True), grad=False)
add("clip_grad_norm_ inf-norm nan grad error_if_nonfinite=True",
    _clip(1.0, float("inf"), nan=True, error_if_nonfinite=True), grad=False)
add("clip_grad_norm_ max_norm=0", _clip(0.0), grad=False)
add("clip_grad_norm_ single tensor arg", lambda L, c: (lambda p: (
    L.nn.utils.clip_grad_norm_(p, 0.1), p.grad))(_clip_params(L, c)[0]), grad=False)
add("clip_grad_norm_ all grads None", lambda L, c: L.nn.utils.clip_grad_norm_(
    [P(L, c.arr(3))], 1.0), grad=False)
add("clip_grad_norm_ generator of params", lambda L, c: (lambda ps: (
    L.nn.utils.clip_grad_norm_((p for p in ps), 1.0), [p.grad for p in ps]))(
    _clip_params(L, c)), grad=False)


@case("clip_grad_norm_ float64 grads", grad=False)
def _clip64(L, c):
    p = P(L, c.arr(4, dtype=np.float64))
    p.grad = L.tensor(c.arr(4, dtype=np.float64, scale=3.0))
    return L.nn.utils.clip_grad_norm_([p], 1.0), p.grad


add("clip_grad_value_(0.1)", lambda L, c: (lambda ps: (
    L.nn.utils.clip_grad_value_(ps, 0.1), [p.grad for p in ps]))(_clip_params(L, c)),
    grad=False)
add("clip_grad_value_ single tensor", lambda L, c: (lambda p: (
    L.nn.utils.clip_grad_value_(p, 0.5), p.grad))(_clip_params(L, c)[0]), grad=False)
add("clip_grad_value_ negative clip_value", lambda L, c: (lambda ps: (
    L.nn.utils.clip_grad_value_(ps, -0.1), [p.grad for p in ps]))(_clip_params(L, c)),
    grad=False)

# ============================================================================================
# optimisers
# ============================================================================================


def _opt_run(make, steps=5, dtype=np.float32, none_at=None, lr_change=None):
    def fn(L, c):
        ps = [P(L, c.arr(3, 4, dtype=dtype)), P(L, c.arr(4, dtype=dtype))]
        opt = make(L.optim, ps)
        hist = []
        for s in range(steps):
            gs = [c.arr(3, 4, dtype=dtype), c.arr(4, dtype=dtype)]
            for p, g in zip(ps, gs):
                p.grad = L.tensor(g)
            if none_at is not None and s == none_at:
                ps[1].grad = None
            if lr_change is not None and s == lr_change:
                for g in opt.param_groups:
                    g["lr"] = g["lr"] * 0.3
            opt.step()
            hist.append([npy(p) for p in ps])
        return hist
    return fn


_OPTS = [
    ("SGD lr=0.1", lambda o, ps: o.SGD(ps, lr=0.1)),
    ("SGD momentum=0.9", lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.9)),
    ("SGD momentum=0.9 dampening=0.5", lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.9,
                                                           dampening=0.5)),
    ("SGD nesterov", lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD weight_decay=0.1", lambda o, ps: o.SGD(ps, lr=0.1, weight_decay=0.1)),
    ("SGD momentum+wd+nesterov", lambda o, ps: o.SGD(ps, lr=0.05, momentum=0.8,
                                                     weight_decay=0.05, nesterov=True)),
    ("SGD momentum+dampening+wd", lambda o, ps: o.SGD(ps, lr=0.05, momentum=0.8, dampening=0.3,
                                                      weight_decay=0.05)),
    ("SGD maximize", lambda o, ps: o.SGD(ps, lr=0.1, maximize=True)),
    ("SGD maximize momentum+wd+nesterov", lambda o, ps: o.SGD(
        ps, lr=0.05, momentum=0.8, weight_decay=0.05, nesterov=True, maximize=True)),
    ("Adam maximize amsgrad+wd", lambda o, ps: o.Adam(ps, lr=0.01, weight_decay=0.1,
                                                      amsgrad=True, maximize=True)),
    ("AdamW maximize wd=0.1", lambda o, ps: o.AdamW(ps, lr=0.01, weight_decay=0.1,
                                                    maximize=True)),
    ("RMSprop maximize centered+momentum+wd", lambda o, ps: o.RMSprop(
        ps, lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adagrad maximize lr_decay+wd", lambda o, ps: o.Adagrad(
        ps, lr=0.1, lr_decay=0.1, weight_decay=0.1, maximize=True)),
    ("Adam default", lambda o, ps: o.Adam(ps)),
    ("Adam lr=0.01 betas=(0.8,0.9) eps=1e-3", lambda o, ps: o.Adam(ps, lr=0.01, betas=(0.8, 0.9),
                                                                   eps=1e-3)),
    ("Adam amsgrad", lambda o, ps: o.Adam(ps, lr=0.01, amsgrad=True)),
    ("Adam weight_decay=0.1", lambda o, ps: o.Adam(ps, lr=0.01, weight_decay=0.1)),
    ("Adam amsgrad+wd", lambda o, ps: o.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW default", lambda o, ps: o.AdamW(ps)),
    ("AdamW lr=0.01 wd=0.1", lambda o, ps: o.AdamW(ps, lr=0.01, weight_decay=0.1)),
    ("AdamW amsgrad wd=0.5", lambda o, ps: o.AdamW(ps, lr=0.01, weight_decay=0.5, amsgrad=True)),
    ("RMSprop default", lambda o, ps: o.RMSprop(ps)),
    ("RMSprop alpha=0.9", lambda o, ps: o.RMSprop(ps, lr=0.01, alpha=0.9)),
    ("RMSprop momentum=0.9", lambda o, ps: o.RMSprop(ps, lr=0.01, momentum=0.9)),
    ("RMSprop centered", lambda o, ps: o.RMSprop(ps, lr=0.01, centered=True)),
    ("RMSprop centered+momentum+wd", lambda o, ps: o.RMSprop(ps, lr=0.01, centered=True,
                                                             momentum=0.5, weight_decay=0.1)),
    ("RMSprop eps=0.1", lambda o, ps: o.RMSprop(ps, lr=0.01, eps=0.1)),
    ("Adagrad default", lambda o, ps: o.Adagrad(ps)),
    ("Adagrad lr_decay=0.1", lambda o, ps: o.Adagrad(ps, lr=0.1, lr_decay=0.1)),
    ("Adagrad weight_decay=0.1", lambda o, ps: o.Adagrad(ps, lr=0.1, weight_decay=0.1)),
    ("Adagrad initial_accumulator_value=0.5 eps=1e-3", lambda o, ps: o.Adagrad(
        ps, lr=0.1, initial_accumulator_value=0.5, eps=1e-3)),
]
for _n, _mk in _OPTS:
    add(f"optim.{_n} 5 steps", _opt_run(_mk), grad=False)
    add(f"optim.{_n} 5 steps float64", _opt_run(_mk, dtype=np.float64), grad=False)
    add(f"optim.{_n} grad None at step 2", _opt_run(_mk, none_at=2), grad=False)
    add(f"optim.{_n} lr changed in param_groups at step 3", _opt_run(_mk, lr_change=3),
        grad=False)


def _opt_sd(make, hyper):
    def fn(L, c):
        ps = [P(L, c.arr(3, 4)), P(L, c.arr(4))]
        opt = make(L.optim, ps)
        for _ in range(2):
            for p in ps:
                p.grad = L.tensor(c.arr(*p.shape))
            opt.step()
        sd = opt.state_dict()
        return (list(sd.keys()),
                {k: sorted(v.keys()) for k, v in sd["state"].items()},
                {k: {kk: type(vv).__name__ for kk, vv in v.items()}
                 for k, v in sd["state"].items()},
                {k: {kk: npy(vv) if is_tensor(vv) else np.asarray(vv)
                     for kk, vv in v.items()} for k, v in sd["state"].items()},
                [g["params"] for g in sd["param_groups"]],
                [{h: g.get(h, "MISSING") for h in hyper} for g in sd["param_groups"]],
                sorted(opt.state[ps[0]].keys()) if ps[0] in opt.state else "absent")
    return fn


def _opt_roundtrip(make):
    def fn(L, c):
        init = [c.arr(3, 4), c.arr(4)]
        grads = [[c.arr(3, 4), c.arr(4)] for _ in range(5)]
        pa = [P(L, a) for a in init]
        oa = make(L.optim, pa)
        pb = None
        ob = None
        for s in range(5):
            if s == 2:
                sd = copy.deepcopy(oa.state_dict())  # torch's state_dict shares buffers
                pb = [P(L, npy(p)) for p in pa]
                ob = make(L.optim, pb)
                ob.load_state_dict(sd)
            for group in [pa] + ([pb] if pb else []):
                for p, g in zip(group, grads[s]):
                    p.grad = L.tensor(g)
            oa.step()
            if ob is not None:
                ob.step()
        return [npy(p) for p in pa], [npy(p) for p in pb]
    return fn


_SD = [
    ("SGD momentum", lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.9),
     ["lr", "momentum", "dampening", "weight_decay", "nesterov"]),
    ("SGD no momentum", lambda o, ps: o.SGD(ps, lr=0.1), ["lr", "momentum"]),
    ("Adam amsgrad", lambda o, ps: o.Adam(ps, lr=0.01, amsgrad=True),
     ["lr", "betas", "eps", "weight_decay", "amsgrad"]),
    ("AdamW", lambda o, ps: o.AdamW(ps, lr=0.01), ["lr", "betas", "eps", "weight_decay",
                                                   "amsgrad"]),
    ("RMSprop centered momentum", lambda o, ps: o.RMSprop(ps, lr=0.01, centered=True,
                                                          momentum=0.9),
     ["lr", "alpha", "eps", "weight_decay", "momentum", "centered"]),
    ("Adagrad", lambda o, ps: o.Adagrad(ps, lr=0.1, lr_decay=0.01),
     ["lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"]),
]
for _n, _mk, _h in _SD:
    add(f"optim.{_n} state_dict structure", _opt_sd(_mk, _h), grad=False)
    add(f"optim.{_n} state_dict/load_state_dict round trip", _opt_roundtrip(_mk), grad=False)


@case("optim: param_groups with per-group options", grad=False)
def _groups(L, c):
    a, b = P(L, c.arr(3)), P(L, c.arr(2))
    opt = L.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.01, "momentum": 0.5}],
                      lr=0.1, momentum=0.9)
    out = []
    for _ in range(4):
        a.grad, b.grad = L.tensor(c.arr(3)), L.tensor(c.arr(2))
        opt.step()
        out.append((npy(a), npy(b)))
    return out, [(g["lr"], g["momentum"], len(g["params"])) for g in opt.param_groups]


add("optim: state[p] of a fresh optimizer (defaultdict)", lambda L, c: (lambda p: dict(
    L.optim.SGD([p], lr=0.1).state[p]))(P(L, c.arr(2))), grad=False)
add("optim: state after a step is keyed by the Parameter", lambda L, c: (lambda p, o: (
    setattr(p, "grad", L.ones(2)), o.step(), list(o.state.keys())[0] is p,
    sorted(o.state[p].keys()))[2:])(*(lambda p: (p, L.optim.Adam([p])))(P(L, c.arr(2)))),
    grad=False)


@case("optim: add_param_group", grad=False)
def _add_group(L, c):
    a, b = P(L, c.arr(3)), P(L, c.arr(2))
    opt = L.optim.Adam([a], lr=0.1)
    a.grad = L.tensor(c.arr(3))
    opt.step()
    opt.add_param_group({"params": [b], "lr": 0.5})
    a.grad, b.grad = L.tensor(c.arr(3)), L.tensor(c.arr(2))
    opt.step()
    return npy(a), npy(b), [g["lr"] for g in opt.param_groups], opt.param_groups[1]["betas"]


@case("optim: zero_grad default set_to_none / set_to_none=False", grad=False)
def _opt_zero(L, c):
    a = P(L, c.arr(3))
    opt = L.optim.SGD([a], lr=0.1)
    (a * a).sum().backward()
    opt.zero_grad(set_to_none=False)
    z = a.grad
    (a * a).sum().backward()
    opt.zero_grad()
    return z, a.grad


@case("optim: training loop with backward + closure", grad=False)
def _closure(L, c):
    w = P(L, c.arr(3, 2))
    x, y = L.tensor(c.arr(5, 3)), L.tensor(c.arr(5, 2))
    opt = L.optim.SGD([w], lr=0.05, momentum=0.9)
    losses = []

    def closure():
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        return loss

    for _ in range(4):
        losses.append(float(opt.step(closure)))
    return losses, npy(w)


add("optim: step() without closure returns None", lambda L, c: (lambda p: (
    setattr(p, "grad", L.ones(2)), L.optim.SGD([p], lr=0.1).step())[1])(P(L, c.arr(2))),
    grad=False)
add("optim.SGD nesterov without momentum", lambda L, c: L.optim.SGD([P(L, c.arr(2))], lr=0.1,
                                                                    nesterov=True), grad=False)
add("optim.SGD nesterov with dampening", lambda L, c: L.optim.SGD(
    [P(L, c.arr(2))], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), grad=False)
add("optim.SGD lr=-1", lambda L, c: L.optim.SGD([P(L, c.arr(2))], lr=-1.0), grad=False)
add("optim.SGD momentum=-0.5", lambda L, c: L.optim.SGD([P(L, c.arr(2))], lr=0.1,
                                                        momentum=-0.5), grad=False)
add("optim.SGD no lr (torch 2.x default 1e-3)", lambda L, c: L.optim.SGD(
    [P(L, c.arr(2))]).param_groups[0]["lr"], grad=False)
add("optim.Adam betas[0]=1.0", lambda L, c: L.optim.Adam([P(L, c.arr(2))], betas=(1.0, 0.9)),
    grad=False)
add("optim.Adam eps=-1", lambda L, c: L.optim.Adam([P(L, c.arr(2))], eps=-1.0), grad=False)
add("optim.Adam weight_decay=-1", lambda L, c: L.optim.Adam([P(L, c.arr(2))],
                                                            weight_decay=-1.0), grad=False)
add("optim.Adam empty params", lambda L, c: L.optim.Adam([]), grad=False)
add("optim.Adam single tensor (not iterable)", lambda L, c: L.optim.Adam(P(L, c.arr(2))),
    grad=False)
add("optim.Adam param in two groups", lambda L, c: (lambda p: L.optim.Adam(
    [{"params": [p]}, {"params": [p]}]))(P(L, c.arr(2))), grad=False)
add("optim.RMSprop alpha=-1", lambda L, c: L.optim.RMSprop([P(L, c.arr(2))], alpha=-1.0),
    grad=False)
add("optim.Adagrad lr_decay=-1", lambda L, c: L.optim.Adagrad([P(L, c.arr(2))], lr_decay=-1.0),
    grad=False)
add("optim.Adam params generator", lambda L, c: len(L.optim.Adam(
    p for p in [P(L, c.arr(2)), P(L, c.arr(3))]).param_groups[0]["params"]), grad=False)
add("optim.Adam named params iterable (torch 2.6+)", lambda L, c: len(L.optim.Adam(
    L.nn.Linear(2, 2).named_parameters()).param_groups[0]["params"]), grad=False)

add("optim.Adam named params: param_names and state_dict groups", lambda L, c: (lambda o: (
    o.param_groups[0]["param_names"], o.state_dict()["param_groups"][0]["param_names"],
    o.state_dict()["param_groups"][0]["params"]))(L.optim.Adam(
        L.nn.Linear(2, 2).named_parameters(), lr=0.1)), grad=False)
add("optim.SGD param-group dicts of named params", lambda L, c: (lambda m: [
    (g["param_names"], g["lr"]) for g in L.optim.SGD([
        {"params": m[0].named_parameters(), "lr": 0.5},
        {"params": m[1].named_parameters()}], lr=0.1).param_groups])(
    L.nn.Sequential(L.nn.Linear(2, 2), L.nn.Linear(2, 1))), grad=False)
add("optim: named and unnamed params mixed (ValueError)", lambda L, c: (lambda m: L.optim.SGD(
    [("w", m.weight), m.bias], lr=0.1))(L.nn.Linear(2, 2)), grad=False)


@case("optim: state[p] touched before the first step, then steps and state_dict", grad=False)
def _state_touch(L, c):
    a, b = P(L, c.arr(3)), P(L, c.arr(2))
    opt = L.optim.Adam([a, b], lr=0.1)
    first = dict(opt.state[a])
    touched = (a in opt.state, b in opt.state, len(opt.state))
    a.grad = L.tensor(c.arr(3))
    opt.step()
    sd = opt.state_dict()
    return (first, touched, sorted(opt.state[a].keys()), b in opt.state,
            sorted(sd["state"].keys()), npy(a))


@case("optim: SGD without momentum keeps no state", grad=False)
def _sgd_nostate(L, c):
    a = P(L, c.arr(3))
    opt = L.optim.SGD([a], lr=0.1)
    a.grad = L.tensor(c.arr(3))
    opt.step()
    return len(opt.state), opt.state_dict()["state"]


add("optim.Adagrad state exists before the first step", lambda L, c: (lambda p: sorted(
    L.optim.Adagrad([p], initial_accumulator_value=0.3).state[p].keys()))(P(L, c.arr(2))),
    grad=False)


# ============================================================================================
# lr_scheduler
# ============================================================================================


def _sched(make, steps=30, opt=None, extra=None):
    def fn(L, c):
        ps = [P(L, np.zeros(2, np.float32)), P(L, np.zeros(2, np.float32))]
        o = (opt or (lambda om, ps: om.SGD(ps, lr=0.1, momentum=0.9)))(L.optim, ps)
        s = make(L.optim.lr_scheduler, o)
        out = [list(s.get_last_lr()), [g["lr"] for g in o.param_groups]]
        for _ in range(steps):
            o.step()
            s.step()
            row = list(s.get_last_lr()) + [g["lr"] for g in o.param_groups]
            if extra:
                row += [g.get(extra) for g in o.param_groups]
            out.append(row)
        return out
    return fn


def _two_groups(om, ps):
    return om.SGD([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.5}], lr=0.1, momentum=0.9)


_SCHED = [
    ("StepLR(5, 0.5)", lambda S, o: S.StepLR(o, step_size=5, gamma=0.5), {}),
    ("StepLR(3) default gamma", lambda S, o: S.StepLR(o, 3), {}),
    ("MultiStepLR([3,7,7,20], 0.1) dup milestone",
     lambda S, o: S.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.1), {}),
    ("MultiStepLR unsorted [10, 2]", lambda S, o: S.MultiStepLR(o, [10, 2], gamma=0.5), {}),
    ("ExponentialLR(0.9)", lambda S, o: S.ExponentialLR(o, gamma=0.9), {}),
    ("CosineAnnealingLR(T_max=10, eta_min=0.001) past T_max",
     lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001), {}),
    ("CosineAnnealingLR(T_max=30)", lambda S, o: S.CosineAnnealingLR(o, 30), {}),
    ("CosineAnnealingLR two groups", lambda S, o: S.CosineAnnealingLR(o, 7),
     {"opt": _two_groups}),
    ("LambdaLR(0.95**e)", lambda S, o: S.LambdaLR(o, lambda e: 0.95 ** e), {}),
    ("LambdaLR list per group", lambda S, o: S.LambdaLR(o, [lambda e: 1.0 / (e + 1),
                                                          lambda e: 0.9 ** e]),
     {"opt": _two_groups}),
    ("LambdaLR warmup", lambda S, o: S.LambdaLR(o, lambda e: min(1.0, (e + 1) / 5)), {}),
    ("LinearLR default", lambda S, o: S.LinearLR(o), {}),
    ("LinearLR(0.25, 1.0, 4)", lambda S, o: S.LinearLR(o, start_factor=0.25, total_iters=4), {}),
    ("LinearLR(1.0, 0.1, 10) decay", lambda S, o: S.LinearLR(o, 1.0, 0.1, 10), {}),
    ("LinearLR start_factor=0 (invalid)", lambda S, o: S.LinearLR(o, start_factor=0.0), {}),
    ("OneCycleLR(max_lr=1, total_steps=30) 29 steps",
     lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=30), {"steps": 29,
                                                                "extra": "momentum"}),
    ("OneCycleLR 31 steps (past total)", lambda S, o: S.OneCycleLR(o, max_lr=1.0,
                                                                   total_steps=30),
     {"steps": 31}),
    ("OneCycleLR linear three_phase", lambda S, o: S.OneCycleLR(
        o, max_lr=0.5, total_steps=25, anneal_strategy="linear", three_phase=True),
     {"steps": 24, "extra": "momentum"}),
    ("OneCycleLR epochs*steps_per_epoch pct_start=0.4 div_factor=10",
     lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 2.0], epochs=3, steps_per_epoch=10,
                               pct_start=0.4, div_factor=10, final_div_factor=100),
     {"steps": 29, "opt": _two_groups, "extra": "momentum"}),
    ("OneCycleLR with Adam (betas cycled)", lambda S, o: S.OneCycleLR(o, 0.01, total_steps=20),
     {"steps": 19, "opt": lambda om, ps: om.Adam(ps, lr=0.001), "extra": "betas"}),
    ("OneCycleLR SGD without momentum (torch errors)",
     lambda S, o: S.OneCycleLR(o, 0.01, total_steps=20),
     {"steps": 5, "opt": lambda om, ps: om.SGD(ps, lr=0.1)}),
    ("OneCycleLR cycle_momentum=False no momentum", lambda S, o: S.OneCycleLR(
        o, 0.01, total_steps=20, cycle_momentum=False),
     {"steps": 19, "opt": lambda om, ps: om.SGD(ps, lr=0.1)}),
    ("SequentialLR(LinearLR warmup, ExponentialLR) milestones=[3]",
     lambda S, o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=3),
                                     S.ExponentialLR(o, 0.9)], milestones=[3]), {}),
    ("SequentialLR(ConstantLR, CosineAnnealingLR, StepLR) milestones=[2,12]",
     lambda S, o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.5, total_iters=2),
                                     S.CosineAnnealingLR(o, T_max=10),
                                     S.StepLR(o, 4, 0.5)], milestones=[2, 12]), {}),
    ("SequentialLR wrong milestones count",
     lambda S, o: S.SequentialLR(o, [S.LinearLR(o), S.ExponentialLR(o, 0.9)],
                                 milestones=[3, 5]), {}),
    ("chained CosineAnnealingLR + MultiStepLR (both stepped)",
     lambda S, o: (lambda a, b: type("Chain", (), {
         "step": lambda self: (a.step(), b.step()), "get_last_lr": lambda self: b.get_last_lr()
     })())(S.CosineAnnealingLR(o, 12, 0.01), S.MultiStepLR(o, [5, 9], 0.5)), {}),
    ("chained LinearLR warmup + CosineAnnealingLR (both stepped)",
     lambda S, o: (lambda a, b: type("Chain", (), {
         "step": lambda self: (a.step(), b.step()), "get_last_lr": lambda self: b.get_last_lr()
     })())(S.LinearLR(o, 0.1, 1.0, 5), S.CosineAnnealingLR(o, 20)), {}),
    ("chained ExponentialLR + LambdaLR (LambdaLR not chainable)",
     lambda S, o: (lambda a, b: type("Chain", (), {
         "step": lambda self: (a.step(), b.step()), "get_last_lr": lambda self: b.get_last_lr()
     })())(S.ExponentialLR(o, 0.9), S.LambdaLR(o, lambda e: 1.0 / (e + 1))), {}),
    ("ChainedScheduler(ConstantLR, ExponentialLR)",
     lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 3), S.ExponentialLR(o, 0.9)]), {}),
    ("SequentialLR(CosineAnnealingLR, CosineAnnealingLR) milestones=[6]",
     lambda S, o: S.SequentialLR(o, [S.CosineAnnealingLR(o, 5),
                                     S.CosineAnnealingLR(o, 9, 0.01)], milestones=[6]), {}),
    ("chained StepLR + ExponentialLR (both stepped)",
     lambda S, o: (lambda a, b: type("Chain", (), {
         "step": lambda self: (a.step(), b.step()), "get_last_lr": lambda self: b.get_last_lr()
     })())(S.StepLR(o, 4, 0.5), S.ExponentialLR(o, 0.95)), {}),
]
for _n, _mk, _kw in _SCHED:
    add(f"lr_scheduler.{_n}", _sched(_mk, **_kw), grad=False)


add("lr_scheduler: last_epoch=4 without initial_lr (torch KeyError)", lambda L, c: L.optim
    .lr_scheduler.StepLR(L.optim.SGD([P(L, np.zeros(2, np.float32))], lr=0.1), 3,
                         last_epoch=4).get_last_lr(), grad=False)
add("optim: defaults dict", lambda L, c: {k: v for k, v in L.optim.Adam(
    [P(L, np.zeros(2, np.float32))], lr=0.5).defaults.items() if k in (
    "lr", "betas", "eps", "weight_decay", "amsgrad")}, grad=False)
add("optim.Adam maximize=True (not in API.md)", _opt_run(
    lambda o, ps: o.Adam(ps, lr=0.1, maximize=True)), grad=False)


@case("lr_scheduler: state_dict keys / last_epoch", grad=False)
def _sched_sd(L, c):
    o = L.optim.SGD([P(L, np.zeros(2, np.float32))], lr=0.1)
    s = L.optim.lr_scheduler.StepLR(o, 3, 0.5)
    for _ in range(4):
        o.step()
        s.step()
    sd = s.state_dict()
    return s.last_epoch, {k: sd[k] for k in ("last_epoch", "base_lrs", "step_size", "gamma")
                          if k in sd}, o.param_groups[0].get("initial_lr")


@case("lr_scheduler: scheduler.load_state_dict resumes", grad=False)
def _sched_resume(L, c):
    S = L.optim.lr_scheduler
    o = L.optim.SGD([P(L, np.zeros(2, np.float32))], lr=0.1)
    s = S.CosineAnnealingLR(o, 10)
    for _ in range(4):
        o.step()
        s.step()
    sd = s.state_dict()
    o2 = L.optim.SGD([P(L, np.zeros(2, np.float32))], lr=0.1)
    o2.load_state_dict(o.state_dict())
    s2 = S.CosineAnnealingLR(o2, 10)
    s2.load_state_dict(sd)
    out = []
    for _ in range(4):
        o2.step()
        s2.step()
        out.append(s2.get_last_lr()[0])
    return out

# ============================================================================================
# autograd
# ============================================================================================


def _second(fwd, dtype=np.float64, shape=(3, 4)):
    """First and second derivatives through grad(create_graph=True)."""
    def fn(L, c):
        x = c.randn(*shape, dtype=dtype)
        y = fwd(L, c, x)
        w = L.tensor(c.arr(*y.shape, dtype=dtype))
        (g,) = L.autograd.grad((y * w).sum(), x, create_graph=True)
        v = L.tensor(c.arr(*shape, dtype=dtype))
        (h,) = L.autograd.grad((g * v).sum(), x)
        return g.requires_grad, g, h
    return fn


_SECOND = [
    ("tanh", lambda L, c, x: L.tanh(x)),
    ("sigmoid", lambda L, c, x: L.sigmoid(x)),
    ("exp*x", lambda L, c, x: L.exp(x) * x),
    ("softmax dim=-1", lambda L, c, x: c.F.softmax(x, dim=-1)),
    ("softmax dim=0", lambda L, c, x: c.F.softmax(x, dim=0)),
    ("log_softmax", lambda L, c, x: c.F.log_softmax(x, dim=-1)),
    ("layer_norm no affine", lambda L, c, x: c.F.layer_norm(x, (4,))),
    ("layer_norm affine", lambda L, c, x: c.F.layer_norm(
        x, (4,), L.tensor(c.arr(4, dtype=np.float64)), L.tensor(c.arr(4, dtype=np.float64)))),
    ("gelu", lambda L, c, x: c.F.gelu(x)),
    ("gelu tanh", lambda L, c, x: c.F.gelu(x, approximate="tanh")),
    ("silu", lambda L, c, x: c.F.silu(x)),
    ("matmul x @ x.T", lambda L, c, x: x @ x.T),
    ("x**3 / (1 + x*x)", lambda L, c, x: x ** 3 / (1 + x * x)),
    ("rms_norm", lambda L, c, x: c.F.rms_norm(x, (4,))),
    ("sqrt(x*x+1)", lambda L, c, x: L.sqrt(x * x + 1)),
    ("softplus", lambda L, c, x: c.F.softplus(x)),
    ("relu (zero 2nd deriv)", lambda L, c, x: c.F.relu(x) * x),
    ("linear", lambda L, c, x: c.F.linear(x, L.tensor(c.arr(5, 4, dtype=np.float64)))),
    ("sdpa", lambda L, c, x: c.F.scaled_dot_product_attention(
        x[None], x[None], x[None], is_causal=True)[0]),
    ("mse_loss (0-d)", lambda L, c, x: c.F.mse_loss(x * x, L.tensor(c.arr(3, 4,
                                                                         dtype=np.float64)))),
    ("cross_entropy (0-d)", lambda L, c, x: c.F.cross_entropy(x, L.tensor(
        np.array([0, 3, 1])), label_smoothing=0.1)),
    ("group_norm", lambda L, c, x: c.F.group_norm(x[None], 1)[0]),
]
for _n, _f in _SECOND:
    add(f"autograd.grad create_graph 2nd derivative: {_n}", _second(_f), grad=False)
add("autograd 2nd derivative float32 tanh", _second(_SECOND[0][1], dtype=np.float32),
    grad=False)


@case("autograd: gradient penalty on Linear weight (double backward into params)")
def _gp(L, c):
    m = c.module(lambda nn: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
    x = c.randn(5, 3)
    out = m(x).sum()
    (g,) = L.autograd.grad(out, x, create_graph=True)
    return (g.norm(2, dim=1) - 1).pow(2).mean()


@case("autograd: remat.grad top-level alias (torch.autograd.grad)", grad=False)
def _grad_alias(L, c):
    x = c.randn(3)
    g = (L.autograd.grad if L is torch else L.grad)((x * x).sum(), [x])
    return type(g).__name__, g


add("autograd.grad grad_outputs on non-scalar", lambda L, c: (lambda x: L.autograd.grad(
    x * x, x, grad_outputs=L.ones(3) * 2))(c.randn(3)), grad=False)
add("autograd.grad non-scalar without grad_outputs", lambda L, c: (lambda x: L.autograd.grad(
    x * x, x))(c.randn(3)), grad=False)
add("autograd.grad unused input (allow_unused=False)", lambda L, c: (lambda x, y: L.autograd.grad(
    (x * x).sum(), [x, y]))(c.randn(3), c.randn(2)), grad=False)
add("autograd.grad unused input allow_unused=True", lambda L, c: (lambda x, y: L.autograd.grad(
    (x * x).sum(), [x, y], allow_unused=True))(c.randn(3), c.randn(2)), grad=False)
add("autograd.grad input not requiring grad", lambda L, c: (lambda x, y: L.autograd.grad(
    (x * y).sum(), [y]))(c.randn(3), c.randn(3, grad=False)), grad=False)
add("autograd.grad output not requiring grad", lambda L, c: L.autograd.grad(
    L.ones(3).sum(), [c.randn(3)]), grad=False)
add("autograd.grad does not touch .grad", lambda L, c: (lambda x: (L.autograd.grad(
    (x * x).sum(), x), x.grad)[1])(c.randn(3)), grad=False)


@case("autograd: second backward through freed graph raises", grad=False)
def _twice(L, c):
    x = c.randn(3)
    y = (x * x).sum()
    y.backward()
    y.backward()


@case("autograd: second backward with no saved tensors (x.sum(); torch allows)", grad=False)
def _twice_nosave(L, c):
    x = c.randn(3)
    y = (x * 2 + 1).sum()
    y.backward()
    y.backward()
    return x.grad


@case("autograd: retain_graph=True allows second backward (accumulates)", grad=False)
def _retain(L, c):
    x = c.randn(3)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


@case("autograd: grad() then backward over the same graph raises", grad=False)
def _grad_then_backward(L, c):
    x = c.randn(3)
    y = (x.exp() * x).sum()
    L.autograd.grad(y, x)
    y.backward()
    return x.grad


@case("autograd: grad(retain_graph=True) then backward", grad=False)
def _grad_then_backward2(L, c):
    x = c.randn(3)
    y = (x.exp() * x).sum()
    (g,) = L.autograd.grad(y, x, retain_graph=True)
    y.backward()
    return g, x.grad


@case("autograd: backward of non-scalar without gradient raises", grad=False)
def _nonscalar(L, c):
    x = c.randn(3)
    (x * 2).backward()


@case("autograd: backward(gradient=...) non-scalar", grad=False)
def _nonscalar2(L, c):
    x = c.randn(2, 3)
    (x * x).backward(gradient=L.tensor(c.arr(2, 3)))
    return x.grad


@case("autograd: backward(gradient=) wrong shape", grad=False)
def _nonscalar3(L, c):
    x = c.randn(2, 3)
    (x * x).backward(gradient=L.ones(3, 2))


@case("autograd: backward(inputs=[x]) only accumulates x", grad=False)
def _bw_inputs(L, c):
    x, w = c.randn(3), c.randn(3)
    (x * w).sum().backward(inputs=[x])
    return x.grad, w.grad


@case("autograd: backward on tensor not requiring grad raises", grad=False)
def _bw_nograd(L, c):
    L.ones(3).sum().backward()


@case("autograd: leaf register_hook doubles grad", grad=False)
def _hook_leaf(L, c):
    x = c.randn(3)
    x.register_hook(lambda g: g * 2)
    (x * x).sum().backward()
    return x.grad


@case("autograd: intermediate hook modifies upstream grads; sees grad", grad=False)
def _hook_mid(L, c):
    x = c.randn(3)
    seen = []
    h = x * 3
    h.register_hook(lambda g: seen.append(g.clone()))
    h.register_hook(lambda g: g + 1)
    (h * h).sum().backward()
    return x.grad, seen


@case("autograd: hooks compose in registration order", grad=False)
def _hook_order(L, c):
    x = c.randn(3)
    h = x * 1
    h.register_hook(lambda g: g * 2)
    h.register_hook(lambda g: g + 1)
    h.sum().backward()
    return x.grad


@case("autograd: hook handle.remove()", grad=False)
def _hook_remove(L, c):
    x = c.randn(3)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    (x * x).sum().backward()
    return x.grad


@case("autograd: hook on tensor not requiring grad raises", grad=False)
def _hook_nograd(L, c):
    L.ones(3).register_hook(lambda g: g)


@case("autograd: hook with retain_grad sees hooked grad?", grad=False)
def _hook_retain(L, c):
    x = c.randn(3)
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 10)
    (h * h).sum().backward()
    return h.grad, x.grad


@case("autograd: retain_grad on intermediate", grad=False)
def _retain_grad(L, c):
    x = c.randn(3)
    h = x * 2
    h.retain_grad()
    z = h.exp()
    z.retain_grad()
    (z * 3).sum().backward()
    return h.grad, z.grad, h.is_leaf, x.is_leaf


@case("autograd: non-leaf .grad without retain_grad is None", grad=False)
def _nonleaf_grad(L, c):
    x = c.randn(3)
    h = x * 2
    h.sum().backward()
    return h.grad


@case("autograd: retain_grad accumulates over two backward", grad=False)
def _retain_accum(L, c):
    x = c.randn(3)
    h = x * 2
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    return h.grad


@case("autograd: no_grad / enable_grad / inference_mode nesting", grad=False)
def _modes(L, c):
    x = c.randn(3)
    out = [L.is_grad_enabled()]
    with L.no_grad():
        a = x * 2
        out += [L.is_grad_enabled(), a.requires_grad]
        with L.enable_grad():
            b = x * 2
            out += [L.is_grad_enabled(), b.requires_grad]
        out.append(L.is_grad_enabled())
    with L.inference_mode():
        d = x * 2
        out += [L.is_grad_enabled(), d.requires_grad]
        with L.no_grad():
            out.append(L.is_grad_enabled())
    with L.inference_mode(False):
        e = x * 2
        out += [L.is_grad_enabled(), e.requires_grad]
    with L.enable_grad():
        with L.no_grad():
            out.append((x * 2).requires_grad)
    out.append(L.is_grad_enabled())
    return out


@case("autograd: no_grad as decorator and restores after exception", grad=False)
def _nograd_deco(L, c):
    x = c.randn(3)

    @L.no_grad()
    def f(t):
        return t * 2, L.is_grad_enabled()

    y, flag = f(x)
    try:
        with L.no_grad():
            raise KeyError
    except KeyError:
        pass
    return y.requires_grad, flag, L.is_grad_enabled()


add("autograd: no_grad decorator without parentheses", lambda L, c: L.no_grad(
    lambda t: t * 2)(c.randn(2)).requires_grad, grad=False)
add("autograd: set_grad_enabled(False) context", lambda L, c: (lambda x: [
    (x * 2).requires_grad for _ in [L.set_grad_enabled(False).__enter__()]] + [
    L.set_grad_enabled(True) and None, L.is_grad_enabled()])(c.randn(2)), grad=False)
add("autograd: is_inference_mode_enabled", lambda L, c: (lambda r: (
    r, L.is_inference_mode_enabled()))([L.is_inference_mode_enabled()]), grad=False)


@case("autograd: inference tensor used in autograd later raises (torch)", grad=False)
def _inf_tensor(L, c):
    with L.inference_mode():
        t = L.ones(3) * 2
    x = c.randn(3)
    (x * t).sum().backward()
    return x.grad


@case("autograd: in-place on leaf requiring grad raises", grad=False)
def _inplace_leaf(L, c):
    x = c.randn(3)
    x.add_(1)
    return x


@case("autograd: in-place on leaf under no_grad ok", grad=False)
def _inplace_leaf_ng(L, c):
    x = c.randn(3)
    with L.no_grad():
        x.mul_(2)
    return x, x.requires_grad, x.is_leaf


@case("autograd: modifying a saved tensor -> error at backward", grad=False)
def _version(L, c):
    x = c.randn(3)
    a = x * 2
    b = a * a
    a.mul_(2)
    b.sum().backward()
    return x.grad


@case("autograd: in-place on non-leaf not saved (torch ok)", grad=False)
def _inplace_ok(L, c):
    x = c.randn(3)
    a = x * 2
    a.add_(1)
    (a * 3).sum().backward()
    return x.grad, a


@case("autograd: requires_grad on int tensor", grad=False)
def _int_rg(L, c):
    return L.tensor([1, 2]).requires_grad_(True)


@case("autograd: .grad assignment wrong shape", grad=False)
def _grad_assign(L, c):
    x = c.randn(3)
    x.grad = L.ones(4)


@case("autograd: detach shares no graph; requires_grad False", grad=False)
def _detach(L, c):
    x = c.randn(3)
    d = (x * 2).detach()
    return d.requires_grad, d.is_leaf, d


@case("autograd: grad accumulation into user-assigned .grad (copy, not alias)", grad=False)
def _grad_copy(L, c):
    x = c.randn(3)
    g = L.ones(3)
    x.grad = g
    (x * 2).sum().backward()
    return x.grad, g


# ---- autograd.Function ----------------------------------------------------------------------


def _fn_classes(L):
    class ScaledExp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            out = L.exp(x) * k + y
            ctx.save_for_backward(x, out)
            ctx.k = k
            ctx.nig = tuple(ctx.needs_input_grad)
            return out

        @staticmethod
        def backward(ctx, g):
            x, out = ctx.saved_tensors
            gx = g * L.exp(x) * ctx.k if ctx.needs_input_grad[0] else None
            gy = g if ctx.needs_input_grad[2] else None
            return gx, None, gy

    class TwoOut(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, ga, gb):
            a, b = ctx.saved_tensors
            return ga * b + gb, ga * a + gb

    class WrongCount(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return (g,)

    return ScaledExp, TwoOut, WrongCount


@case("autograd.Function save_for_backward + non-tensor arg + needs_input_grad")
def _fn1(L, c):
    se, _, _ = _fn_classes(L)
    x, y = c.randn(3), c.randn(3, grad=False)
    nig = []

    class Spy(se):
        @staticmethod
        def forward(ctx, *a):
            r = se.forward(ctx, *a)
            nig.append(ctx.nig)
            return r

    out = Spy.apply(x, 2.5, y)
    return out, nig


@case("autograd.Function needs_input_grad both tensors")
def _fn2(L, c):
    se, _, _ = _fn_classes(L)
    return se.apply(c.randn(3), 0.5, c.randn(3))


@case("autograd.Function two outputs")
def _fn3(L, c):
    _, two, _ = _fn_classes(L)
    return two.apply(c.randn(2, 3), c.randn(2, 3))


@case("autograd.Function one of two outputs used")
def _fn3b(L, c):
    _, two, _ = _fn_classes(L)
    return two.apply(c.randn(2, 3), c.randn(2, 3))[1]


@case("autograd.Function under no_grad: output no grad", grad=False)
def _fn4(L, c):
    se, _, _ = _fn_classes(L)
    with L.no_grad():
        out = se.apply(c.randn(3), 1.0, c.randn(3))
    return out.requires_grad


@case("autograd.Function inputs not requiring grad: output no grad", grad=False)
def _fn5(L, c):
    se, _, _ = _fn_classes(L)
    out = se.apply(c.randn(3, grad=False), 1.0, c.randn(3, grad=False))
    return out.requires_grad, out


@case("autograd.Function backward returns wrong number of grads", grad=False)
def _fn6(L, c):
    _, _, wc = _fn_classes(L)
    x = c.randn(3)
    wc.apply(x, c.randn(3)).sum().backward()
    return x.grad


@case("autograd.Function in a module chain + double use")
def _fn7(L, c):
    se, _, _ = _fn_classes(L)
    m = c.module(lambda nn: nn.Linear(3, 3))
    h = m(c.randn(2, 3))
    return se.apply(h, 0.3, h) * se.apply(h, 1.0, h)


@case("autograd.Function output has grad_fn / is_leaf False", grad=False)
def _fn8(L, c):
    se, _, _ = _fn_classes(L)
    out = se.apply(c.randn(3), 1.0, c.randn(3))
    return out.is_leaf, out.grad_fn is not None, out.requires_grad


@case("autograd: x.grad.zero_() then backward again", grad=False)
def _grad_zero(L, c):
    x = c.randn(3)
    (x * x).sum().backward()
    x.grad.zero_()
    (x * 3).sum().backward()
    return x.grad


@case("autograd: requires_grad=False on non-leaf raises", grad=False)
def _rg_nonleaf(L, c):
    x = c.randn(3)
    y = x * 2
    y.requires_grad = False
    return y.requires_grad


@case("autograd.Function with differentiable backward: double backward", grad=False)
def _fn_double(L, c):
    class Cube(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = c.randn(4, dtype=np.float64)
    (g,) = L.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = L.autograd.grad(g.sum(), x)
    return g, h


@case("autograd.Function returning its input unchanged")
def _fn_identity(L, c):
    class Ident(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = c.randn(3)
    return Ident.apply(x * 1) + Ident.apply(x)


@case("autograd.Function ctx.mark_non_differentiable (not in API.md)", grad=False)
def _fn_nondiff(L, c):
    class ArgMax(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(-1)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gi):
            return g * 2

    x = c.randn(2, 3)
    y, i = ArgMax.apply(x)
    y.sum().backward()
    return i.requires_grad, x.grad


# ============================================================================================
# utils.data and save/load
# ============================================================================================


def _dl_desc(batches):
    out = []
    for b in batches:
        items = b if isinstance(b, (list, tuple)) else [b]
        out.append([(type(t).__name__.replace("ndarray", "?"), tuple(t.shape),
                     dtype_name(t.dtype)) if is_tensor(t) else (type(t).__name__, t)
                    for t in items])
    return out


def _tds(L, c, n=10):
    return L.utils.data.TensorDataset(L.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3)),
                                      L.tensor(np.arange(n)))


add("DataLoader batch_size=4", lambda L, c: _dl_desc(L.utils.data.DataLoader(
    _tds(L, c), batch_size=4)), grad=False)
add("DataLoader batch_size=4 values", lambda L, c: list(L.utils.data.DataLoader(
    _tds(L, c), batch_size=4)), grad=False)
add("DataLoader drop_last", lambda L, c: _dl_desc(L.utils.data.DataLoader(
    _tds(L, c), batch_size=4, drop_last=True)), grad=False)
add("DataLoader len (drop_last False/True)", lambda L, c: (
    len(L.utils.data.DataLoader(_tds(L, c), batch_size=4)),
    len(L.utils.data.DataLoader(_tds(L, c), batch_size=4, drop_last=True)),
    len(_tds(L, c))), grad=False)
add("DataLoader default batch_size=1", lambda L, c: _dl_desc(L.utils.data.DataLoader(
    _tds(L, c, 3))), grad=False)


@case("DataLoader shuffle: permutation, shapes, two epochs differ", grad=False)
def _dl_shuffle(L, c):
    dl = L.utils.data.DataLoader(_tds(L, c, 20), batch_size=6, shuffle=True)
    ep1 = [npy(y) for _, y in dl]
    ep2 = [npy(y) for _, y in dl]
    ids = np.concatenate(ep1)
    return (_dl_desc(list(dl)), sorted(ids.tolist()) == list(range(20)),
            not np.array_equal(ids, np.arange(20)),
            not np.array_equal(ids, np.concatenate(ep2)))


add("DataLoader shuffle + drop_last", lambda L, c: _dl_desc(L.utils.data.DataLoader(
    _tds(L, c), batch_size=3, shuffle=True, drop_last=True)), grad=False)
add("TensorDataset item", lambda L, c: _tds(L, c)[3], grad=False)
add("TensorDataset size mismatch", lambda L, c: L.utils.data.TensorDataset(L.zeros(3),
                                                                          L.zeros(4)), grad=False)


def _custom_ds(L, kind):
    class DS(L.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            if kind == "py":
                return float(i) / 2, i, bool(i % 2)
            if kind == "np":
                return np.full(2, i, np.float32), np.int64(i)
            if kind == "dict":
                return {"x": L.tensor(np.full(3, i, np.float32)), "y": i}
            if kind == "tensor":
                return L.tensor(np.full((2, 2), i, np.float64))
            raise IndexError

    return DS()


for _k in ("py", "np", "dict", "tensor"):
    add(f"DataLoader default collate of {_k} samples", lambda L, c, k=_k: [
        {kk: norm(vv)[:3] for kk, vv in b.items()} if isinstance(b, dict) else
        [norm(t)[:3] for t in (b if isinstance(b, (list, tuple)) else [b])]
        for b in L.utils.data.DataLoader(_custom_ds(L, k), batch_size=2)], grad=False)
add("DataLoader collate values of dict samples", lambda L, c: list(L.utils.data.DataLoader(
    _custom_ds(L, "dict"), batch_size=3)), grad=False)
add("DataLoader over a plain list", lambda L, c: _dl_desc(L.utils.data.DataLoader(
    [L.tensor(np.ones(2, np.float32) * i) for i in range(5)], batch_size=2)), grad=False)
add("DataLoader collate_fn", lambda L, c: list(L.utils.data.DataLoader(
    list(range(7)), batch_size=3, collate_fn=lambda b: sum(b))), grad=False)


add("DataLoader common kwargs (num_workers=0, pin_memory, persistent_workers)",
    lambda L, c: _dl_desc(L.utils.data.DataLoader(_tds(L, c), batch_size=4, shuffle=False,
                                                  num_workers=0, pin_memory=False)),
    grad=False)
add("DataLoader shuffle with generator=", lambda L, c: len(list(L.utils.data.DataLoader(
    _tds(L, c), batch_size=4, shuffle=True, generator=L.Generator().manual_seed(0)))),
    grad=False)
add("utils.data.random_split lengths (not in API.md)", lambda L, c: [
    len(s) for s in L.utils.data.random_split(_tds(L, c), [7, 3])], grad=False)
add("utils.data.Subset (not in API.md)", lambda L, c: L.utils.data.Subset(_tds(L, c),
                                                                         [1, 3])[1], grad=False)


def _save_load(L, obj, suffix=".pt"):
    fd, path = tempfile.mkstemp(suffix=suffix)
    os.close(fd)
    try:
        L.save(obj, path)
        return L.load(path)
    finally:
        os.unlink(path)


add("save/load nested dict/list of tensors + plain values", lambda L, c: _save_load(L, {
    "a": L.tensor(c.arr(2, 3)), "b": [L.tensor(np.arange(4)), 3, "x", 2.5, None, True],
    "c": {"d": L.tensor(np.array([True, False])), "e": L.tensor(c.arr(2, dtype=np.float64))},
    "t": (1, 2)}), grad=False)
add("save/load module state_dict round trip", lambda L, c: (lambda m: (
    m.load_state_dict(_save_load(L, m.state_dict())), list(m.state_dict().keys()))[1])(
    c.module(lambda nn: make_net(L))), grad=False)
add("save/load 0-d and empty tensors", lambda L, c: _save_load(L, [
    L.tensor(1.5), L.zeros(0, 3), L.tensor(np.array(7, np.int32))]), grad=False)
add("save/load requires_grad tensor", lambda L, c: (lambda t: (t.requires_grad, t))(
    _save_load(L, c.randn(3))), grad=False)
# remat has no Parameter class (a Parameter is any leaf that requires grad, and
# isinstance(x, nn.Parameter) checks exactly that), so compare isinstance, not type names.
add("save/load Parameter in dict", lambda L, c: (lambda d: (
    isinstance(d["p"], L.nn.Parameter), d["p"].requires_grad, d["p"].is_leaf, d["p"]))(
    _save_load(L, {"p": P(L, c.arr(2))})), grad=False)


@case("save/load nested structure with a Parameter through an open file", grad=False)
def _save_file_nested(L, c):
    fd, path = tempfile.mkstemp(suffix=".bin")
    os.close(fd)
    try:
        with open(path, "wb") as f:
            L.save({"p": P(L, c.arr(2)), "x": [L.tensor(c.arr(3)), 4]}, f)
        with open(path, "rb") as f:
            d = L.load(f)
    finally:
        os.unlink(path)
    return (isinstance(d["p"], L.nn.Parameter), d["p"].requires_grad,
            d["x"][0].requires_grad, d["x"][1], npy(d["p"]))


@case("save/load file object (BytesIO)", grad=False)
def _save_bytes(L, c):
    import io
    buf = io.BytesIO()
    L.save({"w": L.tensor(c.arr(3))}, buf)
    buf.seek(0)
    return L.load(buf)


@case("save .safetensors -> load", grad=False)
def _safet(L, c):
    if L is torch:
        try:
            import safetensors.torch as st
        except ImportError:
            return {"w": L.tensor(np.zeros(1))}
        fd, path = tempfile.mkstemp(suffix=".safetensors")
        os.close(fd)
        st.save_file({"w": L.tensor(c.arr(2, 3)), "i": L.tensor(np.arange(3))}, path)
        out = st.load_file(path)
        os.unlink(path)
        return dict(sorted(out.items()))
    out = _save_load(L, {"w": L.tensor(c.arr(2, 3)), "i": L.tensor(np.arange(3))},
                     ".safetensors")
    return dict(sorted(out.items()))


# ============================================================================================
# main
# ============================================================================================


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default=None, help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="tracebacks of remat-side errors")
    ap.add_argument("--notes", action="store_true",
                    help="also list cases where both raise with unrelated exception types")
    args = ap.parse_args()
    cases = [cs for cs in CASES if args.k is None or args.k in cs.name]
    names = [cs.name for cs in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print("duplicate case names:", sorted(dup))
    bad, noted = [], []
    for cs in cases:
        try:
            problems, notes = compare_case(cs, args.v)
        except Exception as e:  # noqa: BLE001
            problems, notes = [f"harness error: {type(e).__name__}: {e}"], []
        if problems:
            bad.append((cs.name, problems))
        if notes:
            noted.append((cs.name, notes))
    print(f"torch {torch.__version__}  remat {getattr(remat, '__version__', '?')}")
    print(f"{len(cases)} cases, {len(bad)} mismatching, "
          f"{len(noted)} with both raising but with different exception types; gradients "
          f"compared in {STATS['grad_cases']} cases ({STATS['grad_tensors']} tensors)")
    for name, problems in bad:
        print(f"\nMISMATCH {name}")
        for p in problems[:6]:
            print("   ", p if len(p) < 600 else p[:600] + "...")
        if len(problems) > 6:
            print(f"    ... and {len(problems) - 6} more")
    if args.notes and noted:
        print("\nBoth raise, exception types unrelated (torch's builtin class not a base of "
              "remat's):")
        for name, notes in noted:
            for n in notes:
                print(f"  {name}: {n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
