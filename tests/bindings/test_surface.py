"""The binding surface cannot drift from the extension.

- Every name ``remat._remat`` exports is declared in its stub ``_remat.pyi`` and the other way
  round; for every function and ``Tensor`` method the stub's parameters (names, kinds, which
  have defaults) match the runtime signature. ``python -m mypy.stubtest remat`` (CI) also
  checks the types; these tests need no mypy.
- Every public name of ``_remat`` is either re-exported by ``remat`` (the same object) and
  listed in ``remat.__all__``, or is an engine helper that a Python module of the package wraps
  (``WRAPPED``).
- The ops declared once in ``crates/remat-py/src/ops.rs`` give a function and a method with
  the same parameters, defaults and doc.
- The generated regions of ``_remat.pyi`` and ``remat/__init__.py`` (the parameterless unary
  ops of the core's elementwise table) are what ``tools/gen_bindings.py`` writes from the
  extension.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import pathlib

import numpy as np
import pytest

import remat
from remat import _remat

STUB = pathlib.Path(remat.__file__).with_name("_remat.pyi")

# Public `_remat` names that are not re-exported under their own name: a Python module of the
# package wraps each (the value says which), and the wrapper is what users call.
WRAPPED = {
    "set_grad_enabled": "remat.set_grad_enabled (also a context manager)",
    "cuda_is_available": "remat.cuda.is_available",
    "cuda_device_count": "remat.cuda.device_count",
    "cuda_synchronize": "remat.cuda.synchronize",
    "cuda_empty_cache": "remat.cuda.empty_cache",
    "checkpoint_tensor": "remat.checkpoint",
    "scope_enter": "remat.checkpoint_scope",
    "checkpoint_sequential": "remat.checkpoint_sequential",
    "profiler_start_tracking": "remat.CheckpointProfiler",
    "profiler_stop_tracking": "remat.CheckpointProfiler",
    "profiler_reset": "remat.CheckpointProfiler",
    "profiler_memory_saved": "remat.CheckpointProfiler",
    "profiler_checkpoint_count": "remat.CheckpointProfiler",
    "profiler_recompute_count": "remat.CheckpointProfiler",
    "profiler_recompute_seconds": "remat.CheckpointProfiler",
    "profiler_peak_bytes": "remat.CheckpointProfiler",
    "profiler_report": "remat.CheckpointProfiler",
    "profiler_records": "remat.CheckpointProfiler",
    "profiler_memory_timeline": "remat.CheckpointProfiler",
    "profiler_chrome_trace": "remat.CheckpointProfiler",
    "checkpoint_segment": "remat.checkpoint_segment",
    "adaptive_checkpoint": "remat.adaptive_checkpoint",
    "sequential_plan": "remat.sequential_plan",
    "interpolate": "remat.nn.functional.interpolate (no top-level name, as in PyTorch)",
    "sgd_step": "remat.optim.SGD",
    "adam_step": "remat.optim.Adam / AdamW",
    "zero_": "remat.nn.Module.zero_grad",
    "copy_": "remat.nn.Module.load_state_dict",
}
# Re-exported, but kept out of `__all__` so `from remat import *` does not shadow builtins.
BUILTIN_SHADOWS = {"max", "min", "all", "any", "sum", "pow", "abs", "round"}


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _is_type_alias(node: ast.stmt) -> bool:
    ann = getattr(node, "annotation", None)
    return isinstance(node, ast.AnnAssign) and ast.unparse(ann) == "TypeAlias"


def _declared(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Names a stub body declares (functions, classes, annotated values), type aliases left
    out: those exist only for type checkers."""
    out: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.setdefault(node.name, node)  # a property's setter repeats its name
        elif isinstance(node, ast.AnnAssign) and not _is_type_alias(node):
            assert isinstance(node.target, ast.Name)
            out[node.target.id] = node
    return out


def _runtime_names() -> set[str]:
    return {n for n in dir(_remat) if not (n.startswith("__") and n.endswith("__"))}


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, str, bool]]:
    """(name, kind, has_default) of each parameter, as `inspect.Parameter` spells kinds."""
    a = fn.args
    out: list[tuple[str, str, bool]] = []
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    for i, p in enumerate(positional):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append((p.arg, kind, i >= first_default))
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", False))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "KEYWORD_ONLY", d is not None))
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", False))
    return out


def _runtime_params(obj: object) -> list[tuple[str, str, bool]] | None:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # no text signature (slot wrappers): nothing to compare
        return None
    return [
        (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
        for p in sig.parameters.values()
    ]


def test_stub_declares_exactly_what_the_extension_exports():
    declared = {n for n in _declared(_stub_tree().body) if not n.startswith("__")}
    runtime = _runtime_names()
    assert sorted(runtime - declared) == [], "exported by _remat but missing from _remat.pyi"
    assert sorted(declared - runtime) == [], "in _remat.pyi but not exported"


def test_stub_dunder_all_matches_the_runtime():
    (node,) = [
        n for n in _stub_tree().body
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__"
    ]
    assert sorted(ast.literal_eval(node.value)) == sorted(_remat.__all__)


def test_stub_function_parameters_match_the_runtime():
    mismatches = []
    for name, node in _declared(_stub_tree().body).items():
        if isinstance(node, ast.FunctionDef):
            got = _runtime_params(getattr(_remat, name))
            if got is not None and got != _stub_params(node):
                mismatches.append((name, _stub_params(node), got))
    assert mismatches == []


@pytest.mark.parametrize("cls", ["Tensor", "DType", "_CheckpointGroup", "_Scope"])
def test_stub_class_members_match_the_runtime(cls):
    node = _declared(_stub_tree().body)[cls]
    assert isinstance(node, ast.ClassDef)
    members = _declared(node.body)
    runtime_cls = getattr(_remat, cls)
    public = {n for n in dir(runtime_cls) if not n.startswith("_")}
    assert sorted(public - set(members)) == [], f"{cls}: at runtime, missing from the stub"
    assert sorted({n for n in members if not n.startswith("_")} - public) == [], (
        f"{cls}: in the stub, missing at runtime"
    )
    mismatches = []
    for name, m in members.items():
        if not isinstance(m, ast.FunctionDef) or not hasattr(runtime_cls, name):
            continue
        if any(ast.unparse(d).endswith(("property", "setter")) for d in m.decorator_list):
            continue
        if name.startswith("__"):
            continue  # slot wrappers and `__new__`: stubtest checks these
        got = _runtime_params(getattr(runtime_cls, name))
        # PyO3 spells `self` positional-only (`$self`); stubs write a plain `self`.
        if got is not None and got[1:] != _stub_params(m)[1:]:
            mismatches.append((name, _stub_params(m), got))
    assert mismatches == []


def test_every_export_is_reexported_or_wrapped():
    stale = sorted(set(WRAPPED) - _runtime_names())
    assert stale == [], "WRAPPED names that _remat no longer exports"
    problems = []
    for name in sorted(_runtime_names()):
        if name.startswith("_"):
            continue
        reexported = getattr(remat, name, None) is getattr(_remat, name)
        if name in WRAPPED:
            if reexported:
                problems.append(f"{name}: re-exported as is, but listed in WRAPPED")
        elif not reexported:
            problems.append(f"{name}: not re-exported by remat/__init__.py")
        elif name not in remat.__all__ and name not in BUILTIN_SHADOWS:
            problems.append(f"{name}: re-exported but missing from remat.__all__")
    assert problems == []


def test_dunder_all_lists_existing_names_once():
    assert len(remat.__all__) == len(set(remat.__all__))
    assert [n for n in remat.__all__ if not hasattr(remat, n)] == []
    assert [n for n in remat.__all__ if n in BUILTIN_SHADOWS] == []


# A function and a method of the same name that are not one op: `remat.backward(tensors, ...)`
# is the autograd entry point over several roots, `Tensor.backward(grad, ...)` its one-root form.
# Function and method, but not table rows: `split`/`chunk` return tuples (split.rs), and
# `Tensor.split` names its first parameter `split_size` where `remat.split` says
# `split_size_or_sections`, as in PyTorch. `zero_`/`copy_`: the functions are nn's raw writes
# (`WRAPPED`: no grad-mode rules, `copy_` of one shape), the methods PyTorch's in-place ops
# (crates/remat-py/src/inplace.rs).
# `where`: the method is PyTorch's `Tensor.where(condition, other)` (self is the values, not the
# condition), so it cannot share the function's row. `tile`: PyTorch's function takes
# `dims` (one sequence), its method `*dims` (rearrange.rs).
NOT_FROM_TABLE = {"backward", "split", "chunk", "zero_", "copy_", "where", "tile"}


def _op_table_names() -> list[str]:
    """Ops with a function and a method: the rows of the op table in ops.rs."""
    return sorted(
        n
        for n in _runtime_names() - NOT_FROM_TABLE
        if not n.startswith("_")
        and inspect.isbuiltin(getattr(_remat, n))
        and callable(getattr(_remat.Tensor, n, None))
    )


def test_op_table_covers_the_documented_ops():
    expected = {
        "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "add", "sub", "mul", "div",
        "matmul", "pow", "gelu", "softmax", "log_softmax", "sum", "mean", "max", "reshape",
        "transpose", "permute", "abs", "erf", "rsqrt", "square", "log1p", "expm1", "sign",
        "floor", "ceil", "round", "clamp", "clip", "maximum", "minimum", "lerp",
        "min", "amax", "amin", "prod", "var", "std", "logsumexp", "norm", "cumsum",
        "mm", "bmm", "addmm", "baddbmm", "outer",
    }
    assert expected <= set(_op_table_names())


@pytest.mark.parametrize("name", _op_table_names())
def test_function_and_method_come_from_one_row(name):
    fn, method = getattr(_remat, name), getattr(_remat.Tensor, name)
    assert fn.__doc__ and fn.__doc__ == method.__doc__
    f_params = _runtime_params(fn)
    m_params = _runtime_params(method)
    assert f_params is not None and m_params is not None
    # The function's first parameter is the method's `self`; a binary function names its
    # operands (a, b) where the method names its one operand (`other`, `exponent`).
    assert m_params[0][0] == "self"
    if [p[0] for p in f_params[:2]] == ["a", "b"]:
        assert [p[1:] for p in f_params[1:]] == [p[1:] for p in m_params[1:]]
    else:
        assert f_params[1:] == m_params[1:]
    x = remat.tensor([[0.5, 1.5], [2.0, 0.25]], dtype=remat.float64)
    if name.startswith("bitwise"):  # integers only
        x = remat.tensor([[5, -6], [0, 3]])
    args = {"matmul": (x,), "add": (x,), "sub": (x,), "mul": (x,), "div": (x,), "pow": (2.0,),
            "reshape": (4,), "permute": (1, 0), "softmax": (0,), "sum": (1, True),
            "unsqueeze": (0,), "unflatten": (1, (2, 1)), "movedim": (0, 1), "narrow": (1, 1, 1),
            "broadcast_to": ((3, 2, 2),), "expand_as": (remat.ones(2, 2, 2),),
            "expand": (2, 2, 2), "repeat": (1, 2), "flip": (0,),
            "maximum": (x.T,), "minimum": (x.T,), "clamp": (0.5, 1.0), "clip": (None, 1.0),
            "lerp": (x.T, 0.25), "cumsum": (1,), "prod": (0, True), "var": (1,),
            "norm": (1, 0), "mm": (x,), "bmm": (x[None],), "addmm": (x, x.T),
            "baddbmm": (x[None], x.T[None]), "outer": (x[1],),
            "index_select": (1, remat.tensor([1, 0])),
            "gather": (1, remat.tensor([[1, 0], [0, 0]])),
            "scatter_add": (1, remat.tensor([[1, 0], [0, 0]]), x), "topk": (1,),
            "roll": (1,), "repeat_interleave": (2,), "swapaxes": (0, 1), "swapdims": (0, 1),
            "take_along_dim": (remat.tensor([[1, 0], [0, 0]]), 1), "addcmul": (x, x),
            "addcdiv": (x, x), "index_add": (0, remat.tensor([1]), x[:1]),
            "isclose": (x.T,), "allclose": (x.T,), "equal": (x.T,),
            # The samplers with certain outcomes, so that two calls agree.
            "bernoulli": (1.0,), "multinomial": (1,)}
    args["masked_select"] = (x > 1,)
    args["masked_fill"] = (x > 1, 0.0)
    binary = [p[0] for p in f_params[:2]] == ["a", "b"]
    extra = args.get(name, (x.T,) if binary else ())
    # The tensor the op is called on, where a 2-D one does not fit.
    x = {"bmm": x[None], "outer": x[0],
         "multinomial": remat.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=remat.float64)}.get(name, x)
    a, b = fn(x, *extra), getattr(x, name)(*extra)
    assert type(a) is type(b)
    if isinstance(a, bool):  # allclose, equal
        assert a == b
        return
    for u, v in zip(a, b) if isinstance(a, tuple) else [(a, b)]:  # (values, indices) results
        assert u.shape == v.shape and u.dtype == v.dtype
        np.testing.assert_array_equal(u.numpy(), v.numpy())  # NaN (asin(1.5)) equal to NaN


# ---------------------------------------------------------------- generated regions


def _gen_bindings():
    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "gen_bindings.py"
    spec = importlib.util.spec_from_file_location("gen_bindings", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_regions_are_up_to_date():
    gen = _gen_bindings()
    stale = [str(p.relative_to(gen.ROOT)) for p in gen.stale()]
    assert stale == [], f"stale generated regions in {stale}: run tools/gen_bindings.py"


def test_unary_ops_are_bound_from_the_core_table():
    """Every parameterless unary row is a function and a method with one doc (the row's),
    re-exported by ``remat`` and listed in ``remat.__all__`` (builtin names excepted)."""
    ops = _remat._unary_ops
    assert {"neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"} <= set(ops)
    assert len(ops) == len(set(ops))
    for name in ops:
        fn = getattr(_remat, name)
        assert fn.__doc__ and fn.__doc__ == getattr(_remat.Tensor, name).__doc__
        assert getattr(remat, name) is fn
        assert (name in remat.__all__) == (name not in BUILTIN_SHADOWS), name
