"""Neural-network modules in the style of ``torch.nn``.

A :class:`Module` registers the Parameters and sub-Modules assigned to its attributes, so that
``parameters()``, ``state_dict()``, ``zero_grad()``, ``train()``/``eval()`` and ``to()`` see the
whole tree. A parameter is a leaf Tensor with ``requires_grad=True`` (:func:`Parameter` makes
one). Setting ``module.activation_checkpointing = True`` runs every call of that module as a
checkpoint segment (``remat.checkpoint_segment``): only its inputs are kept for backward and
its forward is re-run during backward, with identical gradients.

The layers are thin wrappers around remat's functions; all arithmetic runs in the engine.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import Any, Callable, NamedTuple
from collections.abc import Iterable, Iterator

import numpy as np

import remat

from .. import _remat, _validate
from .._remat import Tensor
from ..checkpoint import _apply as _checkpoint_apply

__all__ = [
    "Parameter",
    "Module",
    "Linear",
    "ReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Dropout",
    "LayerNorm",
    "Identity",
    "Flatten",
    "Sequential",
    "ModuleList",
]


class _ParameterMeta(type):
    """``isinstance(x, Parameter)`` is True for every leaf Tensor that requires grad."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return _is_parameter(obj)


def _is_parameter(obj: Any) -> bool:
    return isinstance(obj, Tensor) and obj.is_leaf and obj.requires_grad


class Parameter(metaclass=_ParameterMeta):
    """A module parameter: ``Parameter(data)`` returns a leaf Tensor with ``requires_grad``.

    ``data`` may be a Tensor (its storage is shared, as with ``torch.nn.Parameter``), a NumPy
    array or nested lists. There is no separate Parameter class: any leaf Tensor that requires
    grad is a parameter, and ``isinstance(t, Parameter)`` checks exactly that.
    """

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = remat.zeros(0)
        t = data.detach() if isinstance(data, Tensor) else remat.tensor(data)
        t.requires_grad = requires_grad
        return t


class RemovableHandle:
    """Returned by the hook registrations; ``remove()`` (or leaving a ``with`` block)
    unregisters the hook. Removing twice is harmless."""

    _next_id = 0

    def __init__(self, table: dict) -> None:
        self._table = table
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        """Unregister the hook."""
        self._table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class _Hooks:
    """A module's forward pre-hooks and forward hooks, each ``{handle id: (fn, with_kwargs)}``
    in call order."""

    def __init__(self) -> None:
        self.pre: dict = {}
        self.post: dict = {}

    def __bool__(self) -> bool:
        return bool(self.pre or self.post)

    def add(self, kind: str, hook: Any, prepend: bool, with_kwargs: bool) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        table = self.pre if kind == "pre" else self.post
        handle = RemovableHandle(table)
        table[handle.id] = (hook, bool(with_kwargs))
        if prepend:
            table[handle.id] = table.pop(handle.id)
            for k in [k for k in table if k != handle.id]:
                table[k] = table.pop(k)
        return handle


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


def _fmt_shape(shape: Iterable[int]) -> str:
    shape = tuple(shape)
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _addindent(text: str, n: int) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * n + line for line in lines[1:]])


_calls = threading.local()


def _call_stack() -> list[Module]:
    """The modules being called on this thread, outermost first."""
    stack = getattr(_calls, "stack", None)
    if stack is None:
        stack = _calls.stack = []
    return stack


class Module:
    """Base class of all layers and models, like ``torch.nn.Module``.

    Subclasses call ``super().__init__()``, assign Parameters, sub-Modules (and buffers via
    :meth:`register_buffer`) as attributes, and define :meth:`forward`. Calling the module calls
    ``forward``; with ``activation_checkpointing = True`` the call runs as a checkpoint segment
    (keeping what ``activation_checkpointing_policy`` says, see ``remat.checkpoint_policies``).
    """

    training: bool
    activation_checkpointing: bool
    activation_checkpointing_policy: Any

    def __init__(self) -> None:
        d = self.__dict__
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_modules"] = OrderedDict()
        d["training"] = True
        d["activation_checkpointing"] = False
        d["activation_checkpointing_policy"] = None

    def _ensure_init(self) -> None:
        if "_parameters" not in self.__dict__:
            Module.__init__(self)

    # -- attribute registration -----------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        self._ensure_init()
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Module):
            self._forget(name)
            modules[name] = value
        elif _is_parameter(value):
            self._forget(name)
            params[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter '{name}' (a Parameter "
                    "— a leaf Tensor with requires_grad=True — or None expected); wrap it with "
                    "nn.Parameter(...)"
                )
            params[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer '{name}' (Tensor or None "
                    "expected)"
                )
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as child module '{name}' (Module or "
                    "None expected)"
                )
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list:
        extra = list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(super().__dir__()) | set(extra))

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Register ``param`` (a leaf Tensor that requires grad, or None) under ``name``."""
        self._ensure_init()
        if param is not None and not _is_parameter(param):
            raise TypeError(
                f"cannot register '{name}' as a parameter: expected a leaf Tensor with "
                "requires_grad=True (see nn.Parameter) or None"
            )
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None) -> None:
        """Register a non-parameter Tensor (saved in ``state_dict``, moved by ``to``)."""
        self._ensure_init()
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot register '{name}' as a buffer: expected a Tensor or None")
        self._forget(name)
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (or None) as a child under ``name``."""
        self._ensure_init()
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    # -- calling ----------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward() defined")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The chain of module calls, so a checkpointed module is named by its qualified name.
        stack = _call_stack()
        stack.append(self)
        try:
            return self._call_with_hooks(args, kwargs)
        finally:
            stack.pop()

    def _qualified_name(self) -> str:
        """This call's name relative to the outermost module being called (``blocks.3``),
        or the class name when it is called on its own."""
        stack = _call_stack()
        key = tuple(map(id, stack))
        cached = self.__dict__.get("_qualname_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        parts: list[str] = []
        for parent, child in zip(stack, stack[1:]):
            rel = next((n for n, m in parent.named_modules() if m is child and n), None)
            if rel is None:  # a module called by another that does not own it
                parts = []
            else:
                parts.append(rel)
        name = ".".join(parts) or type(self).__name__
        self.__dict__["_qualname_cache"] = (key, name)
        return name

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        hooks = self.__dict__.get("_hooks")
        if hooks:
            for hook, with_kwargs in list(hooks.pre.values()):
                if with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError(
                                "forward pre-hook with kwargs must return None or a tuple of "
                                f"(new_args, new_kwargs), but got {result!r}"
                            )
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
        out = self._call_forward(args, kwargs)
        if hooks:
            for hook, with_kwargs in list(hooks.post.values()):
                result = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
                if result is not None:
                    out = result
        return out

    def _call_forward(self, args: tuple, kwargs: dict) -> Any:
        if self.activation_checkpointing:
            # Arguments travel packed, so every keyword reaches forward (none is taken for
            # checkpoint_segment's own options) and every Tensor in them is a segment input.
            return remat.checkpoint_segment(
                _checkpoint_apply, self.forward, args, kwargs, name=self._qualified_name(),
                policy=self.__dict__.get("activation_checkpointing_policy"),
            )
        return self.forward(*args, **kwargs)

    def _hook_table(self) -> _Hooks:
        self._ensure_init()
        table = self.__dict__.get("_hooks")
        if table is None:
            table = self.__dict__["_hooks"] = _Hooks()
        return table

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before every ``forward``; a non-None result replaces the
        positional arguments (a non-tuple is wrapped in one). With ``with_kwargs=True`` the
        hook is ``hook(module, args, kwargs)`` and may return ``(args, kwargs)``. Returns a
        handle whose ``remove()`` unregisters it."""
        return self._hook_table().add("pre", hook, prepend, with_kwargs)

    def register_forward_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after every ``forward``; a non-None result
        replaces the output. With ``with_kwargs=True`` the hook is ``hook(module, args, kwargs,
        output)``. Returns a handle whose ``remove()`` unregisters it."""
        return self._hook_table().add("post", hook, prepend, with_kwargs)

    # -- traversal --------------------------------------------------------------------------

    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module and every descendant ("" for self)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target: str) -> Module:
        """The descendant named by the dotted path ``target`` ("" is the module itself);
        ``AttributeError`` names the first part that is missing or not a Module."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, each once."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for each immediate child, each once."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """The immediate child modules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, t in getattr(m, store).items():
                if t is None:
                    continue
                if remove_duplicate:
                    if id(t) in seen:
                        continue
                    seen.add(id(t))
                yield mprefix + ("." if mprefix else "") + name, t

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, parameter)`` pairs; a shared parameter appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        """The parameters of this module and (``recurse``) its descendants, each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module and (``recurse``) its descendants."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every descendant and then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ----------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Set the ``training`` flag of this module and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be a bool")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        """``train(False)``: inference behaviour (Dropout off); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient tracking of every parameter on or off; returns self."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear parameter gradients: set them to None, or (``set_to_none=False``) zero-fill
        the existing gradient tensors in place."""
        _zero_grads(self.parameters(), set_to_none)

    # -- device / dtype ---------------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device (``"cpu"``, ``"cuda"``, ``"cuda:N"``)
        and/or cast them to a dtype, in place; returns self.

        Moved parameters stay leaves with their ``requires_grad``; gradients move with them.
        Parameters shared between modules stay shared.
        """
        targets = list(args) + [v for k, v in kwargs.items() if k in ("device", "dtype")]
        if not targets:
            raise TypeError("Module.to() expects a device and/or a dtype")
        moved: dict = {}

        def convert(t: Tensor) -> Tensor:
            out = t
            for target in targets:
                out = out.to(target)
            return out

        for m in self.modules():
            for store, is_param in (("_parameters", True), ("_buffers", False)):
                d = getattr(m, store)
                for name, t in list(d.items()):
                    if t is None:
                        continue
                    if id(t) in moved:
                        d[name] = moved[id(t)]
                        continue
                    new = convert(t)
                    if new.dtype != t.dtype or str(new.device) != str(t.device):
                        if is_param:
                            new = new.detach()
                            new.requires_grad = t.requires_grad
                            g = t.grad
                            if g is not None:
                                new.grad = convert(g)
                        d[name] = new
                    moved[id(t)] = d[name]
        return self

    def cpu(self) -> Module:
        """``to("cpu")``."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Module:
        """``to("cuda")`` (or ``"cuda:N"``)."""
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self) -> Module:
        """Cast parameters and buffers to float32."""
        return self.to(remat.float32)

    def double(self) -> Module:
        """Cast parameters and buffers to float64."""
        return self.to(remat.float64)

    # -- state ------------------------------------------------------------------------------

    def _state_items(self) -> list:
        return list(self.named_parameters(remove_duplicate=False)) + list(
            self.named_buffers(remove_duplicate=False)
        )

    def state_dict(self, prefix: str = "") -> OrderedDict:
        """An ``OrderedDict`` of dotted name → NumPy array (a copy) for every parameter and
        buffer, in registration order."""
        out: OrderedDict = OrderedDict()
        for name, t in self._state_items():
            out[prefix + name] = np.array(t.numpy(), copy=True)
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> _IncompatibleKeys:
        """Copy values (NumPy arrays, Tensors or lists) into the parameters and buffers in
        place (casting to each one's dtype), so optimizers keep referring to them.

        A value whose shape differs from its parameter raises ``remat.ShapeError`` naming the
        parameter and both shapes; with ``strict`` (default) missing or unexpected keys raise
        ``KeyError``. Nothing is changed when an error is raised. Returns
        ``(missing_keys, unexpected_keys)``.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(
                f"load_state_dict expects a mapping of names to arrays, got "
                f"{type(state_dict).__name__}"
            )
        own = self._state_items()
        own_names = [n for n, _ in own]
        missing = [n for n in own_names if n not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in set(own_names)]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append("missing keys: " + ", ".join(repr(k) for k in missing))
            if unexpected:
                parts.append("unexpected keys: " + ", ".join(repr(k) for k in unexpected))
            raise KeyError(f"load_state_dict for {type(self).__name__}: " + "; ".join(parts))
        # Every entry is checked and converted before the first one is copied, so an error
        # leaves the model as it was.
        updates = [
            (t, _state_source(name, state_dict[name], t)) for name, t in own if name in state_dict
        ]
        for t, src in updates:
            _remat.copy_(t, src)
        return _IncompatibleKeys(missing, unexpected)

    # -- printing ---------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (subclasses override)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        name = type(self).__name__
        if not self._modules and len(lines) <= 1:
            return f"{name}({extra})"
        return name + "(\n  " + "\n  ".join(lines) + "\n)"


def _state_source(name: str, value: Any, t: Tensor) -> Tensor:
    """``value`` (a Tensor, NumPy array or nested list) as a tensor to copy into the parameter
    or buffer ``t``: checked for shape and converted to ``t``'s dtype and device; errors name
    the key."""
    if isinstance(value, Tensor):
        src = value.detach()
    else:
        try:
            src = remat.tensor(np.asarray(value), dtype=t.dtype)
        except (TypeError, ValueError) as e:
            kind = remat.DTypeError if isinstance(e, TypeError) else remat.ShapeError
            raise kind(
                f"load_state_dict: cannot load '{name}' into a parameter of dtype {t.dtype}: {e}"
            ) from e
    if tuple(src.shape) != tuple(t.shape):
        raise remat.ShapeError(
            f"load_state_dict: size mismatch for '{name}': the state dict has shape "
            f"{_fmt_shape(src.shape)} but the model's parameter has shape {_fmt_shape(t.shape)}"
        )
    if src.dtype != t.dtype:
        src = src.to(t.dtype)
    if str(src.device) != str(t.device):
        src = src.to(t.device)
    return src


def _zero_grads(params: Iterable[Tensor], set_to_none: bool) -> None:
    for p in params:
        g = p.grad
        if g is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        try:
            _remat.zero_(g)
        except remat.ShapeError:  # a non-contiguous grad: replace it with zeros
            p.grad = remat.zeros_like(p)


# -- layers -------------------------------------------------------------------------------


def _filled(fill: float, shape: tuple, device: Any, dtype: Any) -> Tensor:
    """A leaf parameter of ``shape`` filled with ``fill`` (ones/zeros init of norms, attention)."""
    kw: dict = {} if dtype is None else {"dtype": dtype}
    t = remat.full(shape, fill, **kw)
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    t.requires_grad = True
    return t


def _uniform(shape: tuple, bound: float, dtype: Any, device: Any) -> Tensor:
    """A leaf tensor drawn from U(-bound, bound) with remat's seeded generator."""
    with remat.no_grad():
        u = remat.rand(*shape, dtype=dtype)
        t = (u * (2.0 * bound) - bound).detach()
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    t.requires_grad = True
    return t


class Linear(Module):
    """``y = x @ W.T + b`` with ``W`` of shape ``(out_features, in_features)``.

    Initialised as PyTorch does (kaiming_uniform with a=√5): weight and bias drawn from
    U(-1/√in_features, 1/√in_features) with remat's seeded generator, so ``remat.manual_seed``
    makes the initialisation reproducible.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        in_features = _validate.integer("Linear", "in_features", in_features, minimum=0)
        out_features = _validate.integer("Linear", "out_features", out_features, minimum=0)
        self.in_features = in_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = _uniform((out_features, in_features), bound, dtype, device)
        if bias:
            self.bias = _uniform((out_features,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return remat.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class ReLU(Module):
    """``max(x, 0)`` elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return remat.relu(x)


class GELU(Module):
    """The Gaussian error linear unit; ``approximate="tanh"`` uses the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return remat.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """``tanh(x)`` elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return remat.tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return remat.sigmoid(x)


class Identity(Module):
    """Returns its input unchanged."""

    def forward(self, x: Any) -> Any:
        return x


class Dropout(Module):
    """Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)`` while
    training; the identity in eval mode. Masks come from remat's seeded generator (and are
    replayed exactly when a checkpointed segment is recomputed)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = _validate.in_range("Dropout", "p", p, 0.0, 1.0)

    def forward(self, x: Tensor) -> Tensor:
        return remat.dropout(x, p=self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class LayerNorm(Module):
    """Normalises over the last axis (of size ``normalized_shape``), then scales by ``weight``
    (ones) and shifts by ``bias`` (zeros)."""

    def __init__(
        self,
        normalized_shape: int | tuple,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        dims = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (
            normalized_shape,)
        if len(dims) == 0:
            raise ValueError("LayerNorm: normalized_shape must name at least one axis")
        shape = tuple(
            _validate.integer("LayerNorm", "normalized_shape", d, minimum=0) for d in dims
        )
        self.normalized_shape = shape
        self.eps = _validate.nonnegative("LayerNorm", "eps", eps)
        self.elementwise_affine = elementwise_affine
        kw = {} if dtype is None else {"dtype": dtype}
        if device is not None:
            kw["device"] = device
        if elementwise_affine:
            self.weight = remat.ones(*shape, requires_grad=True, **kw)
            if bias:
                self.bias = remat.zeros(*shape, requires_grad=True, **kw)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        k = len(self.normalized_shape)
        if tuple(x.shape[-k:]) != self.normalized_shape:
            raise remat.ShapeError(
                f"LayerNorm: expected input with trailing axes {self.normalized_shape}, got "
                f"shape {_fmt_shape(x.shape)}"
            )
        return remat.layer_norm(x, self.normalized_shape, self.weight, self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class Flatten(Module):
    """Flattens axes ``start_dim..end_dim`` (inclusive) into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = _validate.integer("Flatten", "start_dim", start_dim)
        self.end_dim = _validate.integer("Flatten", "end_dim", end_dim)

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        nd = len(shape)
        s = self.start_dim + nd if self.start_dim < 0 else self.start_dim
        e = self.end_dim + nd if self.end_dim < 0 else self.end_dim
        if nd == 0:
            return x.reshape(1)
        if not 0 <= s <= e < nd:
            raise remat.ShapeError(
                f"Flatten: start_dim={self.start_dim}, end_dim={self.end_dim} out of range "
                f"for shape {_fmt_shape(shape)}"
            )
        merged = int(np.prod(shape[s : e + 1], dtype=np.int64))
        return x.reshape(*(shape[:s] + (merged,) + shape[e + 1 :]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


# -- containers ---------------------------------------------------------------------------


def _child_index(container: Module, idx: int) -> int:
    """``idx`` (negative counts from the end) as the position of a child of ``container``."""
    n = len(container._modules)
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {type(container).__name__} of {n}")
    return idx % n


class Sequential(Module):
    """Runs its modules in order. Indexable (int → module, slice → Sequential), iterable,
    ``len``-able and extendable with :meth:`append`; can be passed to
    ``remat.checkpoint_sequential``. Also accepts one ``OrderedDict`` of named modules."""

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                if not isinstance(m, Module):
                    raise TypeError(
                        f"Sequential: argument {i} is a {type(m).__name__}, not a Module"
                    )
                self.add_module(str(i), m)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_child_index(self, idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules.keys())[_child_index(self, idx)]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules.keys())
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_child_index(self, idx)]]
        for k in doomed:
            del self._modules[k]
        # keep keys "0".."n-1" as torch does
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append each of ``modules``; returns self."""
        for m in modules:
            self.append(m)
        return self

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(Module):
    """A list of modules whose parameters are registered (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return list(self._modules.values())[_child_index(self, idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules.keys())[_child_index(self, idx)]
        self.add_module(key, module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each of ``modules``; returns self."""
        for m in modules:
            self.append(m)
        return self
