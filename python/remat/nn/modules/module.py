"""``Module``, the base of every layer (as ``torch.nn.modules.module``).

A :class:`Module` registers the Parameters and sub-Modules assigned to its attributes, so that
``parameters()``, ``state_dict()``, ``zero_grad()``, ``train()``/``eval()`` and ``to()`` see the
whole tree. Setting ``module.activation_checkpointing = True`` runs every call of that module as
a checkpoint segment (``remat.checkpoint_segment``): only its inputs are kept for backward and
its forward is re-run during backward, with identical gradients.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any, Callable, NamedTuple

import numpy as np

import remat

from ... import _remat
from ..._remat import Tensor
from ...checkpoint import _apply as _checkpoint_apply
from ..parameter import _is_leaf_float, _is_parameter

__all__ = ["Module", "RemovableHandle"]


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
    :meth:`register_buffer`) as attributes, and define :meth:`forward`. Assigning a
    :class:`Parameter` (a leaf Tensor that requires grad) or a Module to an attribute registers
    it, so :meth:`parameters`, :meth:`state_dict`, :meth:`to`, :meth:`train` and
    :meth:`zero_grad` see the whole tree.

    Calling the module (``module(*args, **kwargs)``) runs the forward pre-hooks, then
    ``forward(*args, **kwargs)``, then the forward hooks, and returns what they leave. With
    ``activation_checkpointing = True`` the forward runs as a checkpoint segment
    (``remat.checkpoint_segment``, named by the module's qualified name such as
    ``"blocks.3"``): only its inputs are kept for backward, the forward is re-run during
    backward, and the gradients are identical. ``activation_checkpointing_policy`` (default
    ``None``) says what the segment keeps anyway (see ``remat.checkpoint_policies``).

    The constructor takes no arguments. Each instance has a ``training`` flag (``True``
    initially; see :meth:`train`/:meth:`eval`), ``activation_checkpointing`` (``False``) and
    ``activation_checkpointing_policy`` (``None``).

    Raises
    ------
    TypeError
        When the constructor is given any argument; later, when a value of the wrong kind is
        assigned to a name registered as a parameter (a Parameter or ``None`` expected), a
        buffer (a Tensor or ``None``) or a child module (a Module or ``None``).
    NotImplementedError
        When a module whose class defines no :meth:`forward` is called.

    Examples
    --------
    >>> class TwoLayer(remat.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1 = remat.nn.Linear(4, 8)
    ...         self.fc2 = remat.nn.Linear(8, 2)
    ...     def forward(self, x):
    ...         return self.fc2(remat.relu(self.fc1(x)))
    >>> model = TwoLayer()
    >>> model
    TwoLayer(
      (fc1): Linear(in_features=4, out_features=8, bias=True)
      (fc2): Linear(in_features=8, out_features=2, bias=True)
    )
    >>> model(remat.ones(3, 4)).shape
    (3, 2)
    >>> [name for name, _ in model.named_parameters()]
    ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']

    Recomputing ``fc1`` during backward gives the same gradients:

    >>> model(remat.ones(3, 4)).sum().backward()
    >>> plain = model.fc1.weight.grad.clone()
    >>> model.zero_grad()
    >>> model.fc1.activation_checkpointing = True
    >>> model(remat.ones(3, 4)).sum().backward()
    >>> (model.fc1.weight.grad == plain).all().item()
    True
    """

    training: bool
    activation_checkpointing: bool
    activation_checkpointing_policy: Any

    def __init__(self) -> None:
        d = self.__dict__
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_modules"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
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
            self._forget(name, keep=modules)  # a re-assigned name keeps its place (PyTorch)
            modules[name] = value
        elif _is_parameter(value):
            self._forget(name, keep=params)
            params[name] = value
        elif name in params:
            # The registered tensor itself may come back (a frozen parameter re-assigned);
            # any other tensor that does not require grad is refused, as PyTorch refuses a
            # plain tensor there (register a frozen one with `register_parameter`).
            if value is not None and value is not params[name]:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter '{name}' (a Parameter "
                    "— a leaf Tensor with requires_grad=True — or None expected); wrap it with "
                    "nn.Parameter(...), or use register_parameter for a frozen one"
                )
            params[name] = value
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

    def _forget(self, name: str, keep: Any = None) -> None:
        """Drop ``name`` from the instance dict and every registry but ``keep`` (where a
        re-registered name then keeps its place, as in PyTorch)."""
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            if store is not keep:
                store.pop(name, None)
        self._non_persistent().discard(name)

    def _non_persistent(self) -> set:
        """The names of this module's buffers that :meth:`state_dict` leaves out."""
        return self.__dict__.setdefault("_non_persistent_buffers_set", set())

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
                self._non_persistent().discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list:
        extra = list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(super().__dir__()) | set(extra))

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Register ``param`` (a leaf Tensor that requires grad, or None) under ``name``.

        Same as assigning ``self.<name> = param``, but also accepts ``None`` for a name that
        is not registered yet (an optional parameter such as a missing bias). Whatever was
        registered under ``name`` before (parameter, buffer or child module) is replaced.

        Parameters
        ----------
        name : str
            The attribute name (the key in :meth:`named_parameters` and :meth:`state_dict`).
        param : Tensor or None
            A leaf float Tensor (see :class:`Parameter`), or ``None`` (skipped by
            :meth:`parameters` and :meth:`state_dict`). Unlike plain assignment, this also
            registers a frozen one (``requires_grad=False``): it is then returned by
            :meth:`parameters`, saved by :meth:`state_dict` and moved by :meth:`to`.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``param`` is neither ``None`` nor a leaf float Tensor.

        Examples
        --------
        >>> m = remat.nn.Module()
        >>> m.register_parameter("scale", remat.nn.Parameter(remat.ones(2)))
        >>> m.register_parameter("shift", None)
        >>> [name for name, _ in m.named_parameters()], m.shift is None
        (['scale'], True)
        >>> m.register_parameter("frozen", remat.nn.Parameter(remat.ones(2), requires_grad=False))
        >>> sorted(m.state_dict())
        ['frozen', 'scale']
        """
        self._ensure_init()
        if param is not None and not _is_leaf_float(param):
            raise TypeError(
                f"cannot register '{name}' as a parameter: expected a leaf float Tensor (see "
                "nn.Parameter) or None"
            )
        if name not in self._parameters:  # a registered one is replaced in place (its order)
            self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a non-parameter Tensor (saved in ``state_dict`` unless not
        ``persistent``, moved by ``to``).

        A buffer is state that is not trained (running statistics, masks, tables): it is
        returned by :meth:`buffers`, saved by :meth:`state_dict` and cast/moved by :meth:`to`,
        but not returned by :meth:`parameters`. A non-persistent buffer (a cache that can be
        rebuilt, such as a causal mask) is the same except that :meth:`state_dict` leaves it
        out and :meth:`load_state_dict` neither expects nor accepts it. Later assignments to
        ``self.<name>`` must be a Tensor or ``None``.

        Parameters
        ----------
        name : str
            The attribute name (the key in :meth:`named_buffers` and :meth:`state_dict`).
        tensor : Tensor or None
            The buffer's value; ``None`` registers the name without a value.
        persistent : bool, optional
            Whether the buffer is part of :meth:`state_dict`. Default: ``True``.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``tensor`` is neither a Tensor nor ``None``.

        Examples
        --------
        >>> m = remat.nn.Module()
        >>> m.register_buffer("running_mean", remat.zeros(3))
        >>> list(m.state_dict()), list(m.parameters())
        (['running_mean'], [])
        >>> m.running_mean
        tensor([0., 0., 0.])
        >>> m.register_buffer("mask", remat.ones(2), persistent=False)
        >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
        (['running_mean', 'mask'], ['running_mean'])
        """
        self._ensure_init()
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot register '{name}' as a buffer: expected a Tensor or None")
        self._forget(name, keep=self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent().add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (or None) as a child under ``name``.

        Same as assigning ``self.<name> = module``, for names chosen at run time (also
        available as ``register_module``). Whatever was registered under ``name`` before is
        replaced.

        Parameters
        ----------
        name : str
            The child's name (its prefix in dotted names such as ``"name.weight"``).
        module : Module or None
            The child; ``None`` registers the name without a module.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``module`` is neither a Module nor ``None``.

        Examples
        --------
        >>> m = remat.nn.Module()
        >>> m.add_module("proj", remat.nn.Linear(2, 3))
        >>> m
        Module(
          (proj): Linear(in_features=2, out_features=3, bias=True)
        )
        >>> [name for name, _ in m.named_parameters()]
        ['proj.weight', 'proj.bias']
        """
        self._ensure_init()
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._forget(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    # -- calling ----------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module; subclasses define it.

        Call the module (``module(x)``) rather than ``forward`` directly: the call also runs
        the registered hooks and honours ``activation_checkpointing``.

        Parameters
        ----------
        *args : Any
            The positional inputs, as the subclass defines them.
        **kwargs : Any
            The keyword inputs, as the subclass defines them.

        Returns
        -------
        Any
            Whatever the subclass computes (usually a Tensor).

        Raises
        ------
        NotImplementedError
            Always, on the base class: a subclass that does not define ``forward`` cannot be
            called.

        Examples
        --------
        >>> class Double(remat.nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> Double()(remat.tensor([1.0, 2.0]))
        tensor([2., 4.])
        """
        raise NotImplementedError(f"{type(self).__name__} has no forward() defined")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the forward pre-hooks, :meth:`forward` (as a checkpoint segment when
        ``activation_checkpointing`` is True) and the forward hooks; return the output."""
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
        cap = self.__dict__.get("_memory_cap_bytes")
        if cap is not None and remat.is_grad_enabled():
            # An auto_checkpoint plan of dynamic rematerialisation: the step runs under a
            # cap relative to what is live now, lifted when its backward pass ends.
            param = next(self.parameters(), None)
            _remat._cap_until_backward(cap, param.device if param is not None else None)
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
        handle whose ``remove()`` unregisters it.

        Parameters
        ----------
        hook : callable
            ``hook(module, args) -> None or new args`` (``args`` is the tuple of positional
            arguments), or with ``with_kwargs`` ``hook(module, args, kwargs) -> None or
            (new_args, new_kwargs)``.
        prepend : bool, optional
            Run this hook before the pre-hooks already registered instead of after them.
            Default: ``False``.
        with_kwargs : bool, optional
            Pass the keyword arguments to the hook as well. Default: ``False``.

        Returns
        -------
        RemovableHandle
            ``handle.remove()`` (or leaving ``with handle:``) unregisters the hook; removing
            twice is harmless.

        Raises
        ------
        TypeError
            When ``hook`` is not callable.
        RuntimeError
            At call time, when a ``with_kwargs`` hook returns something other than ``None``
            or a 2-tuple.

        Examples
        --------
        >>> relu = remat.nn.ReLU()
        >>> handle = relu.register_forward_pre_hook(lambda module, args: args[0] + 1.0)
        >>> relu(remat.tensor([-3.0, 2.0]))
        tensor([0., 3.])
        >>> handle.remove()
        >>> relu(remat.tensor([-3.0, 2.0]))
        tensor([0., 2.])
        """
        return self._hook_table().add("pre", hook, prepend, with_kwargs)

    def register_forward_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after every ``forward``; a non-None result
        replaces the output. With ``with_kwargs=True`` the hook is ``hook(module, args, kwargs,
        output)``. Returns a handle whose ``remove()`` unregisters it.

        Parameters
        ----------
        hook : callable
            ``hook(module, args, output) -> None or new output``, or with ``with_kwargs``
            ``hook(module, args, kwargs, output)``. ``args`` are the positional arguments as
            ``forward`` received them (after the pre-hooks).
        prepend : bool, optional
            Run this hook before the forward hooks already registered instead of after them.
            Default: ``False``.
        with_kwargs : bool, optional
            Pass the keyword arguments to the hook as well. Default: ``False``.

        Returns
        -------
        RemovableHandle
            ``handle.remove()`` (or leaving ``with handle:``) unregisters the hook; removing
            twice is harmless.

        Raises
        ------
        TypeError
            When ``hook`` is not callable.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 3)
        >>> shapes = []
        >>> handle = lin.register_forward_hook(lambda m, args, out: shapes.append(out.shape))
        >>> _ = lin(remat.ones(4, 2))
        >>> shapes
        [(4, 3)]
        >>> handle.remove()
        >>> _ = lin(remat.ones(4, 2))
        >>> shapes
        [(4, 3)]
        """
        return self._hook_table().add("post", hook, prepend, with_kwargs)

    # -- traversal --------------------------------------------------------------------------

    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module and every descendant ("" for self).

        Depth first, in registration order; a module reachable twice is yielded once unless
        ``remove_duplicate`` is False.

        Parameters
        ----------
        memo : set or None, optional
            Ids of modules already yielded (used by the recursion). Default: ``None`` (a
            fresh set).
        prefix : str, optional
            Prepended to every name (``prefix + "." + name``; the module itself is named
            ``prefix``). Default: ``""``.
        remove_duplicate : bool, optional
            Yield a shared module only once. Default: ``True``.

        Returns
        -------
        Iterator[tuple[str, Module]]
            The ``(name, module)`` pairs, the module itself first.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.ReLU())
        >>> [(name, type(m).__name__) for name, m in net.named_modules()]
        [('', 'Sequential'), ('0', 'Linear'), ('1', 'ReLU')]
        """
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
        ``AttributeError`` names the first part that is missing or not a Module.

        Parameters
        ----------
        target : str
            A dotted path as in :meth:`named_modules`, e.g. ``"encoder.layers.0"``.

        Returns
        -------
        Module
            The submodule.

        Raises
        ------
        AttributeError
            When a part of the path does not exist, or names something that is not a Module
            (such as a parameter).

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 3), remat.nn.ReLU())
        >>> net.get_submodule("0")
        Linear(in_features=2, out_features=3, bias=True)
        >>> net.get_submodule("0.weight")
        Traceback (most recent call last):
            ...
        AttributeError: `weight` is not an nn.Module
        """
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
        """This module and every descendant, each once.

        Returns
        -------
        Iterator[Module]
            The modules of :meth:`named_modules`, without the names (the module itself first).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.Tanh())
        >>> [type(m).__name__ for m in net.modules()]
        ['Sequential', 'Linear', 'Tanh']
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for each immediate child, each once.

        Returns
        -------
        Iterator[tuple[str, Module]]
            The children in registration order (``None`` entries skipped).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.Tanh())
        >>> [name for name, _ in net.named_children()]
        ['0', '1']
        """
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """The immediate child modules.

        Returns
        -------
        Iterator[Module]
            The children of :meth:`named_children`, without the names.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> block = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.ReLU())
        >>> net = remat.nn.Sequential(block, remat.nn.Tanh())
        >>> [type(m).__name__ for m in net.children()]
        ['Sequential', 'Tanh']
        """
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        # As PyTorch: `remove_duplicate=False` repeats shared modules and shared tensors.
        seen = set()
        mods = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
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
        """``(dotted name, parameter)`` pairs; a shared parameter appears once.

        Parameters
        ----------
        prefix : str, optional
            Prepended to every name. Default: ``""``.
        recurse : bool, optional
            Include the parameters of every descendant; ``False`` gives only this module's
            own. Default: ``True``.
        remove_duplicate : bool, optional
            Yield a parameter shared by several modules once (under its first name); with
            ``False`` a shared parameter or module is listed under each of its names.
            Default: ``True``.

        Returns
        -------
        Iterator[tuple[str, Tensor]]
            ``(name, parameter)`` pairs, module by module in :meth:`named_modules` order;
            ``None`` entries are skipped.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 3), remat.nn.ReLU(), remat.nn.Linear(3, 1))
        >>> [(name, p.shape) for name, p in net.named_parameters()]
        [('0.weight', (3, 2)), ('0.bias', (3,)), ('2.weight', (1, 3)), ('2.bias', (1,))]
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        """The parameters of this module and (``recurse``) its descendants, each once.

        This is what an optimizer takes: ``remat.optim.SGD(model.parameters(), lr=0.1)``.

        Parameters
        ----------
        recurse : bool, optional
            Include the parameters of every descendant. Default: ``True``.

        Returns
        -------
        Iterator[Tensor]
            The parameters in :meth:`named_parameters` order (shared ones once).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 3), remat.nn.Linear(3, 1))
        >>> sum(p.numel() for p in net.parameters())
        13
        >>> len(list(net.parameters(recurse=False)))
        0
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs.

        Parameters
        ----------
        prefix : str, optional
            Prepended to every name. Default: ``""``.
        recurse : bool, optional
            Include the buffers of every descendant. Default: ``True``.
        remove_duplicate : bool, optional
            Yield a buffer shared by several modules once; with ``False`` it is listed under
            each of its names. Default: ``True``.

        Returns
        -------
        Iterator[tuple[str, Tensor]]
            ``(name, buffer)`` pairs (``None`` entries skipped).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> m = remat.nn.Module()
        >>> m.register_buffer("steps", remat.tensor([0]))
        >>> list(m.named_buffers())
        [('steps', tensor([0]))]
        """
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module and (``recurse``) its descendants.

        Parameters
        ----------
        recurse : bool, optional
            Include the buffers of every descendant. Default: ``True``.

        Returns
        -------
        Iterator[Tensor]
            The buffers in :meth:`named_buffers` order.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> loss = remat.nn.CrossEntropyLoss(weight=remat.tensor([1.0, 2.0]))
        >>> list(loss.buffers())
        [tensor([1., 2.])]
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every descendant and then on self; returns self.

        Children are visited depth first (a child's own children before it), so the typical
        use is custom initialisation: ``model.apply(init_weights)``.

        Parameters
        ----------
        fn : callable
            Called as ``fn(module)``; its result is ignored.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        Exception
            Whatever ``fn`` raises is propagated.

        Examples
        --------
        >>> def init(m):
        ...     if isinstance(m, remat.nn.Linear):
        ...         remat.nn.init.zeros_(m.bias)
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.ReLU())
        >>> net.apply(init)[0].bias
        tensor([0., 0.], requires_grad=True)
        """
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ----------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Set the ``training`` flag of this module and every descendant; returns self.

        The flag changes what some layers compute: :class:`Dropout` (and the dropout of
        :class:`MultiheadAttention`) is active only while training.

        Parameters
        ----------
        mode : bool, optional
            ``True`` for training behaviour, ``False`` for evaluation. Default: ``True``.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        ValueError
            When ``mode`` is not a bool.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.Dropout(0.5))
        >>> net.train(False)[1].training
        False
        >>> net.train().training, net[1].training
        (True, True)
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be a bool")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        """``train(False)``: inference behaviour (Dropout off); returns self.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> drop = remat.nn.Dropout(0.5).eval()
        >>> drop.training
        False
        >>> drop(remat.ones(4))
        tensor([1., 1., 1., 1.])
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient tracking of every parameter on or off; returns self.

        ``requires_grad_(False)`` freezes the module (for fine-tuning the rest of a model):
        the parameters stay registered (``parameters()`` and ``state_dict()`` still list
        them) but get no gradients. A frozen tensor is no longer a :class:`Parameter` in
        remat's sense, so it cannot be assigned to a parameter name again
        (``module.weight = module.weight`` raises ``TypeError``) until it requires grad.

        Parameters
        ----------
        requires_grad : bool, optional
            The value to set on every parameter (recursively). Default: ``True``.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 2).requires_grad_(False)
        >>> [p.requires_grad for p in lin.parameters()]
        [False, False]
        >>> [p.requires_grad for p in lin.requires_grad_().parameters()]
        [True, True]
        """
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear parameter gradients: set them to None, or (``set_to_none=False``) zero-fill
        the existing gradient tensors in place.

        Gradients accumulate across ``backward`` calls, so call this (or the optimizer's
        ``zero_grad``) once per step.

        Parameters
        ----------
        set_to_none : bool, optional
            ``True`` drops the gradients (``p.grad is None`` afterwards, freeing their
            memory); ``False`` writes zeros into the existing gradient tensors.
            Default: ``True``.

        Returns
        -------
        None

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 1)
        >>> lin(remat.ones(3, 2)).sum().backward()
        >>> lin.bias.grad
        tensor([3.])
        >>> lin.zero_grad(set_to_none=False)
        >>> lin.bias.grad
        tensor([0.])
        >>> lin.zero_grad()
        >>> lin.bias.grad is None
        True
        """
        _zero_grads(self.parameters(), set_to_none)

    # -- device / dtype ---------------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device (``"cpu"``, ``"cuda"``, ``"cuda:N"``)
        and/or cast their floating-point ones to a dtype, in place; returns self.

        As in PyTorch, a dtype applies only to floating-point parameters and buffers:
        integer and bool buffers (counters, index tables, masks) keep their dtype, and the
        dtype itself must be a floating-point one. Moved parameters stay leaves with their
        ``requires_grad``; gradients move with them. Parameters shared between modules stay
        shared. A parameter that has to change is replaced by a new Tensor, so build the
        optimizer after calling ``to``.

        Parameters
        ----------
        *args : str, remat.device, remat.dtype or Tensor
            The target device and/or dtype (e.g. ``"cuda"``, ``remat.float64``, or both); a
            Tensor stands for its device and dtype.
        **kwargs : str, remat.device or remat.dtype
            ``device=`` and/or ``dtype=``; other keywords (``non_blocking=`` ...) are
            ignored.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        TypeError
            When neither a device nor a dtype is given, or the dtype is not a floating-point
            one.
        remat.DeviceError
            When the device is unknown or not available (e.g. ``"cuda"`` without a GPU).

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 2)
        >>> lin.register_buffer("steps", remat.tensor([0]))
        >>> lin.to(remat.float64) is lin
        True
        >>> lin.weight.dtype, lin.weight.is_leaf, lin.weight.requires_grad, lin.steps.dtype
        (remat.float64, True, True, remat.int64)
        >>> lin.to(device="cpu").weight.device
        device(type='cpu')
        """
        device, dtype = _module_to_targets(args, kwargs)
        return self._convert(device, dtype)

    def _convert(self, device: Any, dtype: Any) -> Module:
        """Move every parameter and buffer to ``device`` (or leave it where it is, for
        None) and cast the floating-point ones to ``dtype`` (or keep theirs, for None)."""

        def convert(t: Tensor) -> Tensor:
            out = t
            if device is not None:
                out = out.to(device)
            if dtype is not None and out.dtype.is_floating_point:
                out = out.to(dtype)
            return out

        moved: dict = {}
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
        """``to("cpu")``: move parameters and buffers to the CPU; returns self.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Linear(2, 2).cpu().weight.device
        device(type='cpu')
        """
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Module:
        """``to("cuda")`` (or ``"cuda:N"``): move parameters and buffers to a GPU; returns self.

        Parameters
        ----------
        device : int or None, optional
            The GPU index ``N`` (``"cuda:N"``). Default: ``None`` (``"cuda"``, the current
            GPU).

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        remat.DeviceError
            When no usable GPU exists (no driver, no device).

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 2)
        >>> if remat.cuda.is_available():
        ...     _ = lin.cuda()
        >>> lin.weight.shape
        (2, 2)
        """
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32; returns self.

        Integer and bool buffers keep their dtype, as in PyTorch.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 2, dtype=remat.float64)
        >>> lin.float().weight.dtype
        remat.float32
        """
        return self._convert(None, remat.float32)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64; returns self.

        Integer and bool buffers keep their dtype, as in PyTorch.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Linear(2, 2).double().bias.dtype
        remat.float64
        """
        return self._convert(None, remat.float64)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16; returns self.

        Integer and bool buffers keep their dtype, as in PyTorch.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Linear(2, 2).half().weight.dtype
        remat.float16
        """
        return self._convert(None, remat.float16)

    def bfloat16(self) -> Module:
        """Cast floating-point parameters and buffers to bfloat16; returns self.

        Integer and bool buffers keep their dtype, as in PyTorch. A bfloat16 module computes
        each op in float32 and rounds its result to bfloat16, as PyTorch's CPU kernels do.

        Returns
        -------
        Module
            ``self``.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 2).bfloat16()
        >>> lin.weight.dtype, lin(remat.ones(1, 2, dtype=remat.bfloat16)).dtype
        (remat.bfloat16, remat.bfloat16)
        """
        return self._convert(None, remat.bfloat16)

    # -- state ------------------------------------------------------------------------------

    def _state_items(self, prefix: str = "") -> list:
        """``(dotted name, tensor)`` for every parameter and persistent buffer, in PyTorch's
        ``state_dict`` order: a module's own parameters, then its own buffers, then each
        child's entries; a shared module or tensor is listed under each of its names."""
        items = [(prefix + n, p) for n, p in self._parameters.items() if p is not None]
        skip = self.__dict__.get("_non_persistent_buffers_set", ())
        items += [
            (prefix + n, b) for n, b in self._buffers.items() if b is not None and n not in skip
        ]
        for name, m in self._modules.items():
            if m is not None:
                items += m._state_items(prefix + name + ".")
        return items

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """An ``OrderedDict`` of dotted name → Tensor for every parameter and persistent
        buffer, in PyTorch's order: a module's own parameters, then its own buffers, then its
        children's entries, depth first.

        As in PyTorch, each value is the parameter or buffer detached: a Tensor that shares
        its storage (``sd[k].detach().cpu().numpy()``, ``sd[k].clone()``, ``sd[k].shape`` and
        ``copy.deepcopy(sd)`` work; training the model changes the values of a state dict
        taken earlier, so ``clone()`` or ``copy.deepcopy`` it to keep a snapshot). A module or
        parameter shared by several parents appears under each of its names (as in PyTorch;
        :meth:`named_parameters` lists it once). Buffers registered with ``persistent=False``
        are left out. ``remat.save`` writes one to a file; :meth:`load_state_dict` reads it
        back.

        Parameters
        ----------
        *args : object
            PyTorch's deprecated positional form ``(destination, prefix, keep_vars)``.
        destination : mapping, optional
            Filled and returned instead of a new ``OrderedDict``. Default: ``None``.
        prefix : str, optional
            Prepended to every key. Default: ``""``.
        keep_vars : bool, optional
            Give the parameters and buffers themselves, not detached tensors.
            Default: ``False``.

        Returns
        -------
        collections.OrderedDict
            ``{name: Tensor}``.

        Raises
        ------
        TypeError
            When more than three positional arguments are given.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 1)
        >>> sd = lin.state_dict()
        >>> [(name, value.shape, value.requires_grad) for name, value in sd.items()]
        [('weight', (1, 2), False), ('bias', (1,), False)]
        >>> sd["weight"].detach().cpu().numpy().dtype.name
        'float32'
        >>> list(lin.state_dict(prefix="head."))
        ['head.weight', 'head.bias']
        >>> list(remat.nn.Sequential(lin, remat.nn.ReLU(), lin).state_dict())
        ['0.weight', '0.bias', '2.weight', '2.bias']
        """
        if len(args) > 3:
            raise TypeError(
                f"state_dict() takes at most 3 positional arguments ({len(args)} given)"
            )
        if args:
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        out: Any = OrderedDict() if destination is None else destination
        for name, t in self._state_items():
            out[prefix + name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> _IncompatibleKeys:
        """Copy values (NumPy arrays, Tensors or lists) into the parameters and buffers in
        place (casting to each one's dtype), so optimizers keep referring to them.

        A value whose shape differs from its parameter raises ``remat.ShapeError`` naming the
        parameter and both shapes; with ``strict`` (default) missing or unexpected keys raise
        ``KeyError``. Nothing is changed when an error is raised (every entry is checked
        before the first one is copied). Returns ``(missing_keys, unexpected_keys)``. The
        keys are those of :meth:`state_dict`: a shared module or parameter is expected under
        each of its names (PyTorch's state dicts of tied weights load as they are), and
        non-persistent buffers are neither expected nor accepted.

        Parameters
        ----------
        state_dict : Mapping[str, numpy.ndarray or Tensor or list]
            Name → value, as :meth:`state_dict` produces (or ``remat.load`` reads).
        strict : bool, optional
            Require the keys to match this module's exactly. With ``False``, missing keys
            are left as they are and unexpected keys ignored. Default: ``True``.

        Returns
        -------
        NamedTuple
            ``(missing_keys, unexpected_keys)``: lists of the module's names absent from
            ``state_dict`` and of the keys of ``state_dict`` the module does not have.

        Raises
        ------
        KeyError
            With ``strict``, when keys are missing or unexpected (the message lists them).
        remat.ShapeError
            When a value's shape differs from its parameter's or buffer's.
        remat.DTypeError
            When a value cannot be converted to a number array of the parameter's dtype.
        TypeError
            When ``state_dict`` is not a mapping.

        Examples
        --------
        >>> src, dst = remat.nn.Linear(2, 1), remat.nn.Linear(2, 1)
        >>> dst.load_state_dict(src.state_dict())
        _IncompatibleKeys(missing_keys=[], unexpected_keys=[])
        >>> (dst.weight == src.weight).all().item()
        True
        >>> dst.load_state_dict({"bias": [0.5]}, strict=False)
        _IncompatibleKeys(missing_keys=['weight'], unexpected_keys=[])
        >>> dst.bias
        tensor([0.5000], requires_grad=True)
        >>> dst.load_state_dict({"weight": np.zeros((2, 2)), "bias": [0.0]})
        Traceback (most recent call last):
            ...
        remat.ShapeError: load_state_dict: size mismatch for 'weight': ... shape (2, 2) ...
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
        buffers = {id(b) for m in self.modules() for b in m._buffers.values() if b is not None}
        updates = [
            (t, _state_source(name, state_dict[name], t,
                              "buffer" if id(t) in buffers else "parameter"))
            for name, t in own
            if name in state_dict
        ]
        for t, src in updates:
            _remat.copy_(t, src)
        return _IncompatibleKeys(missing, unexpected)

    # -- printing ---------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (subclasses override).

        Returns
        -------
        str
            ``""`` on the base class; layers return their settings (e.g.
            ``"in_features=2, out_features=3, bias=True"``).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Linear(2, 3).extra_repr()
        'in_features=2, out_features=3, bias=True'
        >>> remat.nn.Module().extra_repr()
        ''
        """
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


def _module_to_targets(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """The ``(device, dtype)`` that ``Module.to(*args, **kwargs)`` asks for (None where not
    given), as PyTorch reads them; the dtype must be a floating-point one."""
    device: Any = None
    dtype: Any = None
    targets = list(args) + [kwargs[k] for k in ("device", "dtype") if kwargs.get(k) is not None]
    if not targets:
        raise TypeError("Module.to() expects a device and/or a dtype")
    for target in targets:
        if isinstance(target, Tensor):
            device, dtype = target.device, target.dtype
        elif isinstance(target, int) and not isinstance(target, bool):
            device = remat.device(target)
        elif isinstance(target, str):
            # As in PyTorch, a string is a device, never a dtype.
            try:
                device = remat.device(target)
            except RuntimeError as e:
                raise remat.DeviceError(
                    f"Module.to: {target!r} is not a device: a string given to to() always "
                    "names a device (\"cpu\", \"cuda\", \"cuda:N\"), as in PyTorch; to cast, "
                    f"pass a dtype object such as remat.float64 ({e})"
                ) from e
        else:
            try:
                dtype = remat.zeros(0, dtype=target).dtype
            except (TypeError, ValueError) as e:
                raise TypeError(
                    f"Module.to(): {target!r} is neither a device nor a dtype"
                ) from e
    if dtype is not None and not dtype.is_floating_point:
        raise TypeError(
            f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}"
        )
    return device, dtype


def _state_source(name: str, value: Any, t: Tensor, kind: str = "parameter") -> Tensor:
    """``value`` (a Tensor, NumPy array or nested list) as a tensor to copy into the parameter
    or buffer ``t`` (``kind``): checked for shape and converted to ``t``'s dtype and device;
    errors name the key and the kind."""
    if isinstance(value, Tensor):
        src = value.detach()
    else:
        try:
            src = remat.tensor(np.asarray(value), dtype=t.dtype)
        except (TypeError, ValueError) as e:
            error = remat.DTypeError if isinstance(e, TypeError) else remat.ShapeError
            raise error(
                f"load_state_dict: cannot load '{name}' into a {kind} of dtype {t.dtype}: {e}"
            ) from e
    if tuple(src.shape) == (1,) and tuple(t.shape) == ():
        # PyTorch's legacy form of a 0-d buffer (`num_batches_tracked` saved as shape (1,)).
        src = src.reshape(())
    if tuple(src.shape) != tuple(t.shape):
        raise remat.ShapeError(
            f"load_state_dict: size mismatch for '{name}': the state dict has shape "
            f"{_fmt_shape(src.shape)} but the model's {kind} has shape {_fmt_shape(t.shape)}"
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
