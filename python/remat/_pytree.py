"""Flattening of nested Python values into their Tensor leaves and back (a small pytree).

The checkpoint entry points hand the engine flat lists of Tensors; users pass and return any
nesting of tuples, lists, dicts and namedtuples holding Tensors, ``None`` and other values.
:func:`flatten` splits such a value into its Tensors (in a fixed depth-first order) and a
:class:`TreeSpec` that holds everything else; :func:`unflatten` puts Tensors back into the same
structure. A spec holds none of the Tensor leaves, so keeping one alive (a checkpoint keeps
its input spec until backward) keeps none of them alive; other leaves are held as they are.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any

from ._remat import Tensor

__all__ = ["TreeSpec", "flatten", "unflatten"]

# Node kinds of a spec.
_TENSOR = "tensor"  # a Tensor leaf (filled from the flat list)
_CONST = "const"  # any other leaf, kept as is (None, numbers, strings, objects)
_TUPLE = "tuple"
_NAMEDTUPLE = "namedtuple"
_LIST = "list"
_DICT = "dict"


class TreeSpec:
    """The structure of a flattened value: its node kind, the container type (or the constant),
    dict keys and child specs. ``num_tensors`` is the number of Tensor leaves."""

    __slots__ = ("kind", "data", "keys", "children", "num_tensors")

    def __init__(
        self, kind: str, data: Any = None, keys: list | None = None,
        children: list[TreeSpec] | None = None,
    ) -> None:
        self.kind = kind
        self.data = data
        self.keys = keys
        self.children = children or []
        self.num_tensors: int = (
            1 if kind == _TENSOR else sum(c.num_tensors for c in self.children)
        )

    def __repr__(self) -> str:
        if self.kind == _TENSOR:
            return "*"
        if self.kind == _CONST:
            return repr(self.data)
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == _DICT:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys or [], self.children))
        return f"{getattr(self.data, '__name__', self.kind)}({inner})"


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _flatten(obj: Any, leaves: list[Tensor]) -> TreeSpec:
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return TreeSpec(_TENSOR)
    if isinstance(obj, tuple):
        children = [_flatten(o, leaves) for o in obj]
        kind = _NAMEDTUPLE if _is_namedtuple(obj) else _TUPLE
        return TreeSpec(kind, type(obj), children=children)
    if isinstance(obj, list):
        return TreeSpec(_LIST, type(obj), children=[_flatten(o, leaves) for o in obj])
    if isinstance(obj, dict):
        keys = list(obj.keys())
        children = [_flatten(obj[k], leaves) for k in keys]
        # A defaultdict keeps its factory (never the values: a spec holds no Tensor).
        factory = obj.default_factory if isinstance(obj, defaultdict) else None
        return TreeSpec(_DICT, (type(obj), factory), keys=keys, children=children)
    return TreeSpec(_CONST, obj)


def flatten(obj: Any) -> tuple[list[Tensor], TreeSpec]:
    """The Tensor leaves of ``obj`` (depth first, dict values in key order) and its spec."""
    leaves: list[Tensor] = []
    spec = _flatten(obj, leaves)
    return leaves, spec


def _unflatten(spec: TreeSpec, it: Any) -> Any:
    kind = spec.kind
    if kind == _TENSOR:
        return next(it)
    if kind == _CONST:
        return spec.data
    values = [_unflatten(c, it) for c in spec.children]
    if kind == _TUPLE:
        return tuple(values) if spec.data is tuple else spec.data(values)
    if kind == _NAMEDTUPLE:
        return spec.data._make(values)
    if kind == _LIST:
        return values if spec.data is list else spec.data(values)
    cls, factory = spec.data
    items = list(zip(spec.keys or [], values))
    if cls is dict or cls is OrderedDict:
        return cls(items)
    if issubclass(cls, defaultdict):
        return cls(factory, items)
    # Other dict subclasses (Hugging Face's ModelOutput is a dataclass over OrderedDict):
    # keywords when every key is a string, else the pairs.
    if all(isinstance(k, str) for k, _ in items):
        return cls(**dict(items))
    return cls(items)


def unflatten(spec: TreeSpec, leaves: Any) -> Any:
    """``obj`` rebuilt from ``spec`` with ``leaves`` (a sequence of exactly
    ``spec.num_tensors`` Tensors) in place of its Tensor leaves."""
    leaves = list(leaves)
    if len(leaves) != spec.num_tensors:
        raise ValueError(
            f"unflatten: the structure holds {spec.num_tensors} tensors, got {len(leaves)}"
        )
    return _unflatten(spec, iter(leaves))
