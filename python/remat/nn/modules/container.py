"""Containers with ``torch.nn``'s behaviour (as ``torch.nn.modules.container``):
``Sequential`` and ``ModuleList`` (children named ``"0"``, ``"1"``, ...), ``ModuleDict`` (named
child modules, insertion ordered), ``ParameterList`` and ``ParameterDict`` (parameters
registered under ``"0"``, ``"1"``, ... or their keys, so ``parameters()`` and ``state_dict()``
see them)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import remat

from ..._remat import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _child_index(container: Module, idx: int) -> int:
    """``idx`` (negative counts from the end) as the position of a child of ``container``."""
    n = len(container._modules)
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {type(container).__name__} of {n}")
    return idx % n


def _renumber(container: Module, modules: list) -> None:
    """Make ``modules`` the children of ``container``, named ``"0"``, ``"1"``, ..."""
    container._modules.clear()
    for i, m in enumerate(modules):
        container._modules[str(i)] = m


def _insert_child(container: Module, index: int, module: Module) -> None:
    """Insert ``module`` before position ``index`` (as ``list.insert``) and renumber."""
    if not isinstance(module, Module):
        raise TypeError(
            f"{type(container).__name__}.insert: {type(module).__name__} is not a Module"
        )
    items = list(container._modules.values())
    items.insert(operator.index(index), module)
    _renumber(container, items)


def _delete_children(container: Module, idx: int | slice) -> None:
    """``del container[idx]`` for an int or a slice, then renumber as PyTorch does."""
    items = list(container._modules.values())
    if isinstance(idx, slice):
        del items[idx]
    else:
        del items[_child_index(container, idx)]
    _renumber(container, items)


class Sequential(Module):
    """Runs its modules in order. Indexable (int → module, slice → Sequential), iterable,
    ``len``-able and extendable with :meth:`append`; can be passed to
    ``remat.checkpoint_sequential``. Also accepts one ``OrderedDict`` of named modules.

    The children are named ``"0"``, ``"1"``, ... (or by the ``OrderedDict``'s keys);
    ``net[i] = module`` replaces one, ``del net[i]`` (or a slice) removes and renumbers them.

    Parameters
    ----------
    *modules : Module or collections.OrderedDict
        The modules, in the order they run; or a single ``OrderedDict`` of name → module.

    Raises
    ------
    TypeError
        When an argument is not a Module (or an ``OrderedDict`` value is not one).

    Examples
    --------
    >>> net = remat.nn.Sequential(remat.nn.Linear(4, 8), remat.nn.ReLU(), remat.nn.Linear(8, 2))
    >>> net(remat.ones(3, 4)).shape
    (3, 2)
    >>> len(net), net[-1]
    (3, Linear(in_features=8, out_features=2, bias=True))
    >>> from collections import OrderedDict
    >>> remat.nn.Sequential(OrderedDict([("fc", remat.nn.Linear(2, 2)), ("act", remat.nn.Tanh())]))
    Sequential(
      (fc): Linear(in_features=2, out_features=2, bias=True)
      (act): Tanh()
    )
    """

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
        _delete_children(self, idx)  # keys stay "0".."n-1", as in PyTorch

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other)} is given."
            )
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other)} is given."
            )
        return self.extend(list(other))

    def _repeat_check(self, other: Any) -> int:
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(
                f"unsupported operand type(s) for *: {type(self)} and {type(other)}"
            )
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return other

    def __mul__(self, other: int) -> Sequential:
        return Sequential(*(list(self) * self._repeat_check(other)))

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:
        return self.extend(list(self) * (self._repeat_check(other) - 1))

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index`` and renumber the children; returns
        self.

        Parameters
        ----------
        index : int
            The position the module gets, in ``[-len(self), len(self)]`` (negative counts
            from the end, as ``list.insert``).
        module : Module
            The module to insert.

        Returns
        -------
        Sequential
            ``self``.

        Raises
        ------
        IndexError
            When ``index`` is outside ``[-len(self), len(self)]``.
        TypeError
            When ``module`` is not a Module.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.Tanh())
        >>> net.insert(1, remat.nn.ReLU())
        Sequential(
          (0): Linear(in_features=2, out_features=2, bias=True)
          (1): ReLU()
          (2): Tanh()
        )
        """
        n = len(self._modules)
        if not -n <= operator.index(index) <= n:
            raise IndexError(f"Index out of range: {index}")
        _insert_child(self, index, module)
        return self

    def pop(self, key: int | slice) -> Any:
        """Remove the module at ``key`` (or a slice of them) and return it; the rest are
        renumbered.

        Parameters
        ----------
        key : int or slice
            The position (negative counts from the end) or a slice.

        Returns
        -------
        Module or Sequential
            The removed module (a ``Sequential`` of them for a slice).

        Raises
        ------
        IndexError
            When ``key`` is out of range.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2), remat.nn.ReLU(), remat.nn.Tanh())
        >>> net.pop(1), [name for name, _ in net.named_children()]
        (ReLU(), ['0', '1'])
        """
        v = self[key]
        del self[key]
        return v

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end (named ``str(len(self))``); returns self.

        Parameters
        ----------
        module : Module
            The module to run last.

        Returns
        -------
        Sequential
            ``self``.

        Raises
        ------
        TypeError
            When ``module`` is not a Module.

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.Linear(2, 2))
        >>> len(net.append(remat.nn.ReLU()))
        2
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append each of ``modules``; returns self.

        Parameters
        ----------
        modules : iterable of Module
            The modules to run after the current ones, in order.

        Returns
        -------
        Sequential
            ``self``.

        Raises
        ------
        TypeError
            When an element is not a Module (the ones before it are already appended).

        Examples
        --------
        >>> net = remat.nn.Sequential().extend([remat.nn.Linear(2, 2), remat.nn.Tanh()])
        >>> [name for name, _ in net.named_children()]
        ['0', '1']
        """
        for m in modules:
            self.append(m)
        return self

    def forward(self, x: Any) -> Any:
        """Feed ``x`` through each module in order; an empty Sequential returns ``x``.

        Parameters
        ----------
        x : Any
            The input of the first module (usually a Tensor).

        Returns
        -------
        Any
            The output of the last module.

        Raises
        ------
        Exception
            Whatever a module raises (e.g. ``remat.ShapeError`` on a size mismatch).

        Examples
        --------
        >>> net = remat.nn.Sequential(remat.nn.ReLU(), remat.nn.Tanh())
        >>> net(remat.tensor([-1.0, 0.0]))
        tensor([0., 0.])
        """
        # auto_checkpoint may plan this chain for a memory budget (runs of its layers as
        # nested checkpoints); with gradients off there is nothing to plan.
        budget = self.__dict__.get("_chain_budget_bytes")
        if budget is not None and isinstance(x, Tensor) and remat.is_grad_enabled():
            return remat.checkpoint_sequential(self, None, x, budget_bytes=budget)
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(Module):
    """A list of modules whose parameters are registered (no forward of its own).

    Holds sub-modules that the parent's ``forward`` calls itself (e.g. a loop over layers).
    Indexable (int → module, slice → ModuleList), assignable by index, iterable and
    ``len``-able; the children are named ``"0"``, ``"1"``, ...

    Parameters
    ----------
    modules : iterable of Module, optional
        The initial modules. Default: ``None`` (empty).

    Raises
    ------
    TypeError
        When ``modules`` is not iterable or an element is not a Module.

    Examples
    --------
    >>> layers = remat.nn.ModuleList([remat.nn.Linear(2, 2) for _ in range(3)])
    >>> len(layers), len(list(layers.parameters()))
    (3, 6)
    >>> x = remat.ones(1, 2)
    >>> for layer in layers:
    ...     x = layer(x)
    >>> x.shape
    (1, 2)
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return list(self._modules.values())[_child_index(self, idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules.keys())[_child_index(self, idx)]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        _delete_children(self, idx)  # keys stay "0".."n-1", as in PyTorch

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:  # type: ignore[misc]
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        # As PyTorch: runs of equal entries are shown once, as "(i-j): n x <repr>".
        reprs = [repr(m) for m in self]
        if not reprs:
            return type(self).__name__ + "()"
        runs: list[list] = []
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for a, b, r in runs:
            head = f"({a})" if a == b else f"({a}-{b}): {b - a + 1} x"
            lines.append(_addindent(f"{head}{':' if a == b else ''} {r}", 2))
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index`` and renumber the children.

        ``index`` follows ``list.insert``: negative counts from the end, and an index past
        either end inserts there.

        Parameters
        ----------
        index : int
            The position the module gets.
        module : Module
            The module to insert.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``module`` is not a Module or ``index`` is not an int.

        Examples
        --------
        >>> layers = remat.nn.ModuleList([remat.nn.Linear(2, 2), remat.nn.Tanh()])
        >>> layers.insert(1, remat.nn.ReLU())
        >>> [type(m).__name__ for m in layers], [name for name, _ in layers.named_children()]
        (['Linear', 'ReLU', 'Tanh'], ['0', '1', '2'])
        """
        _insert_child(self, index, module)

    def pop(self, key: int | slice) -> Any:
        """Remove the module at ``key`` (or a slice of them) and return it; the rest are
        renumbered.

        Parameters
        ----------
        key : int or slice
            The position (negative counts from the end) or a slice.

        Returns
        -------
        Module or ModuleList
            The removed module (a ``ModuleList`` of them for a slice).

        Raises
        ------
        IndexError
            When ``key`` is out of range.

        Examples
        --------
        >>> layers = remat.nn.ModuleList([remat.nn.ReLU(), remat.nn.Tanh()])
        >>> layers.pop(0), len(layers), layers[0]
        (ReLU(), 1, Tanh())
        """
        v = self[key]
        del self[key]
        return v

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end (named ``str(len(self))``); returns self.

        Parameters
        ----------
        module : Module
            The module to add.

        Returns
        -------
        ModuleList
            ``self``.

        Raises
        ------
        TypeError
            When ``module`` is not a Module.

        Examples
        --------
        >>> layers = remat.nn.ModuleList()
        >>> len(layers.append(remat.nn.Linear(2, 2)))
        1
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each of ``modules``; returns self.

        Parameters
        ----------
        modules : iterable of Module
            The modules to add, in order.

        Returns
        -------
        ModuleList
            ``self``.

        Raises
        ------
        TypeError
            When ``modules`` is not iterable or an element is not a Module.

        Examples
        --------
        >>> layers = remat.nn.ModuleList([remat.nn.ReLU()])
        >>> len(layers.extend([remat.nn.Tanh(), remat.nn.Sigmoid()]))
        3
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for m in modules:
            self.append(m)
        return self


def _pairs(values: Any, owner: str) -> Iterable[tuple[str, Any]]:
    # A mapping, or another ModuleDict / ParameterDict (Modules, not Mappings), gives its
    # items; anything else is an iterable of (key, value) pairs, checked as PyTorch does.
    if isinstance(values, Mapping) or (isinstance(values, Module) and hasattr(values, "items")):
        return list(values.items())
    if not isinstance(values, Iterable):
        raise TypeError(
            f"{owner}.update should be called with an iterable of key/value pairs, but got "
            f"{type(values).__name__}"
        )
    pairs = []
    for j, item in enumerate(values):
        if not isinstance(item, Iterable) or isinstance(item, (str, bytes)):
            raise TypeError(
                f"{owner} update sequence element #{j} should be Iterable; is "
                f"{type(item).__name__}"
            )
        item = list(item)
        if len(item) != 2:
            raise ValueError(
                f"{owner} update sequence element #{j} has length {len(item)}; 2 is required"
            )
        pairs.append((item[0], item[1]))
    return pairs


class ModuleDict(Module):
    """Child modules held by string key; indexing, ``in``, ``len``, iteration over keys,
    ``keys()/values()/items()``, ``update``, ``pop`` and ``clear`` as on a dict.

    The modules are registered under their keys (insertion ordered), so their parameters
    are named ``"key.weight"`` etc. There is no ``forward``: the parent picks the module.

    Parameters
    ----------
    modules : Mapping[str, Module] or iterable of (str, Module), optional
        The initial entries. Default: ``None`` (empty).

    Raises
    ------
    TypeError
        When ``modules`` is not iterable, an element of an iterable is not a ``(key,
        module)`` pair, or a value is not a Module.

    Examples
    --------
    >>> heads = remat.nn.ModuleDict({"cls": remat.nn.Linear(4, 3), "reg": remat.nn.Linear(4, 1)})
    >>> list(heads), "cls" in heads
    (['cls', 'reg'], True)
    >>> heads["reg"](remat.ones(2, 4)).shape
    (2, 1)
    >>> [name for name, _ in heads.named_parameters()]
    ['cls.weight', 'cls.bias', 'reg.weight', 'reg.bias']
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._modules))

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Any:
        """The keys, in insertion order.

        Returns
        -------
        KeysView of str
            A live view of the keys (it follows later changes to the dict).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> d = remat.nn.ModuleDict({"act": remat.nn.ReLU(), "out": remat.nn.Linear(2, 1)})
        >>> list(d.keys())
        ['act', 'out']
        """
        return self._modules.keys()

    def values(self) -> Any:
        """The modules, in insertion order.

        Returns
        -------
        ValuesView of Module
            A live view of the modules (it follows later changes to the dict).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> d = remat.nn.ModuleDict({"act": remat.nn.ReLU(), "out": remat.nn.Linear(2, 1)})
        >>> list(d.values())
        [ReLU(), Linear(in_features=2, out_features=1, bias=True)]
        """
        return self._modules.values()

    def items(self) -> Any:
        """``(key, module)`` pairs, in insertion order.

        Returns
        -------
        ItemsView of (str, Module)
            A live view of the pairs (it follows later changes to the dict).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> d = remat.nn.ModuleDict({"act": remat.nn.ReLU(), "out": remat.nn.Linear(2, 1)})
        >>> [(k, type(m).__name__) for k, m in d.items()]
        [('act', 'ReLU'), ('out', 'Linear')]
        """
        return self._modules.items()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        """Add or replace the modules of a mapping or an iterable of ``(key, module)``.

        Parameters
        ----------
        modules : Mapping[str, Module], ModuleDict or iterable of (str, Module)
            The entries to set; existing keys keep their position, new ones go last.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``modules`` or one of its elements is not iterable, or a value is not a
            Module.
        ValueError
            When an element of an iterable is not a pair (its length is not 2).

        Examples
        --------
        >>> d = remat.nn.ModuleDict({"act": remat.nn.ReLU()})
        >>> d.update([("act", remat.nn.Tanh()), ("out", remat.nn.Linear(2, 1))])
        >>> d
        ModuleDict(
          (act): Tanh()
          (out): Linear(in_features=2, out_features=1, bias=True)
        )
        """
        for key, module in _pairs(modules, "ModuleDict"):
            self[key] = module

    def pop(self, key: str) -> Module:
        """Remove ``key`` and return its module.

        Parameters
        ----------
        key : str
            The entry to remove.

        Returns
        -------
        Module
            The module that was stored under ``key``.

        Raises
        ------
        KeyError
            When ``key`` is not present.

        Examples
        --------
        >>> d = remat.nn.ModuleDict({"act": remat.nn.ReLU(), "out": remat.nn.Linear(2, 1)})
        >>> d.pop("act"), list(d)
        (ReLU(), ['out'])
        """
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module.

        Their parameters and buffers leave ``parameters()`` and ``state_dict()`` with them.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> d = remat.nn.ModuleDict({"act": remat.nn.ReLU(), "out": remat.nn.Linear(2, 1)})
        >>> d.clear()
        >>> d, len(d), list(d.parameters())
        (ModuleDict(), 0, [])
        """
        self._modules.clear()


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters, registered under ``"0"``, ``"1"``, ...; a Tensor that is not yet
    a parameter is made one (``nn.Parameter``), other values are kept as plain attributes.

    Making a Tensor a parameter detaches it (the storage is shared, the object is new).
    Indexable (int, or slice → ParameterList), assignable by index, iterable and
    ``len``-able.

    Parameters
    ----------
    values : iterable, optional
        The initial entries (usually Tensors). Default: ``None`` (empty).

    Raises
    ------
    TypeError
        When ``values`` is not iterable.
    remat.DTypeError
        When a Tensor entry is not floating point (it cannot require gradients).

    Examples
    --------
    >>> params = remat.nn.ParameterList([remat.ones(2), remat.zeros(3)])
    >>> params
    ParameterList(
      (0): Parameter containing: [float32 of size 2]
      (1): Parameter containing: [float32 of size 3]
    )
    >>> [name for name, _ in params.named_parameters()]
    ['0', '1']
    >>> params[0]
    tensor([1., 1.], requires_grad=True)
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _key(self, idx: int) -> str:
        return str(_index(idx, self._size, "ParameterList"))

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._key(idx))

    def __setitem__(self, idx: int, value: Any) -> None:
        setattr(self, self._key(idx), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(self._size)])

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end (a Tensor is made a parameter); returns self.

        Parameters
        ----------
        value : Tensor or Any
            The new entry; a Tensor that is not a parameter yet becomes one.

        Returns
        -------
        ParameterList
            ``self``.

        Raises
        ------
        remat.DTypeError
            When ``value`` is a Tensor that is not floating point.

        Examples
        --------
        >>> params = remat.nn.ParameterList()
        >>> len(params.append(remat.ones(2))), list(params.state_dict())
        (1, ['0'])
        """
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append each of ``values``; returns self.

        Parameters
        ----------
        values : iterable
            The entries to add, in order.

        Returns
        -------
        ParameterList
            ``self``.

        Raises
        ------
        TypeError
            When ``values`` is not iterable.
        remat.DTypeError
            When a Tensor entry is not floating point.

        Examples
        --------
        >>> params = remat.nn.ParameterList([remat.ones(1)])
        >>> len(params.extend([remat.zeros(2), remat.zeros(3)]))
        3
        """
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        """One line per entry: its index, dtype and size (or the type of a non-Tensor).

        Returns
        -------
        str
            The entry lines joined by newlines (``""`` when the list is empty); the repr shows
            them as the list's body.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> params = remat.nn.ParameterList([remat.ones(2), remat.zeros(2, 3), 5])
        >>> print(params.extra_repr())
        (0): Parameter containing: [float32 of size 2]
        (1): Parameter containing: [float32 of size 2x3]
        (2): Object of type: int
        """
        lines = []
        for i in range(self._size):
            p = self[i]
            if isinstance(p, Tensor):
                shape = "x".join(str(d) for d in p.shape)
                lines.append(f"({i}): Parameter containing: [{p.dtype} of size {shape}]")
            else:
                lines.append(f"({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)


def _index(idx: int, n: int, owner: str) -> int:
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {owner} of {n}")
    return idx % n


class ParameterDict(Module):
    """Parameters held by string key, with a dict's methods; Tensors become parameters.

    Each entry is registered under its key (so ``parameters()`` and ``state_dict()`` see
    it); a Tensor that is not a parameter yet is made one (detached, sharing storage), other
    values are kept as plain attributes. Supports indexing, ``in``, ``len``, iteration over
    the keys, ``keys()/values()/items()``, ``update`` and ``pop`` (there is no ``clear``).

    Parameters
    ----------
    parameters : Mapping[str, Any] or iterable of (str, Any), optional
        The initial entries. Default: ``None`` (empty).

    Raises
    ------
    TypeError
        When a key is not a string, ``parameters`` is not iterable, or an element of an
        iterable is not a ``(key, value)`` pair.
    remat.DTypeError
        When a Tensor value is not floating point.

    Examples
    --------
    >>> pd = remat.nn.ParameterDict({"scale": remat.ones(2), "shift": remat.zeros(2)})
    >>> list(pd), pd["scale"]
    (['scale', 'shift'], tensor([1., 1.], requires_grad=True))
    >>> list(pd.state_dict())
    ['scale', 'shift']
    """

    def __init__(self, parameters: Mapping[str, Any] | Iterable | None = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Any:
        """The keys, in insertion order.

        Returns
        -------
        KeysView of str
            A live view of the keys (it follows later changes to the dict).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> pd = remat.nn.ParameterDict({"scale": remat.ones(2), "shift": remat.zeros(2)})
        >>> list(pd.keys())
        ['scale', 'shift']
        """
        return self._keys.keys()

    def values(self) -> list:
        """The parameters, in insertion order.

        Returns
        -------
        list
            A new list of the stored values (parameters, or the non-Tensor values as they were
            stored).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> pd = remat.nn.ParameterDict({"scale": remat.ones(2), "shift": remat.zeros(2)})
        >>> pd.values()
        [tensor([1., 1.], requires_grad=True), tensor([0., 0.], requires_grad=True)]
        """
        return [self[k] for k in self._keys]

    def items(self) -> list:
        """``(key, parameter)`` pairs, in insertion order.

        Returns
        -------
        list of (str, Any)
            A new list of ``(key, value)`` tuples.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> pd = remat.nn.ParameterDict({"scale": remat.ones(2), "n": 3})
        >>> pd.items()
        [('scale', tensor([1., 1.], requires_grad=True)), ('n', 3)]
        """
        return [(k, self[k]) for k in self._keys]

    def update(self, parameters: Mapping[str, Any] | Iterable) -> None:
        """Add or replace the entries of a mapping or an iterable of ``(key, value)``.

        Parameters
        ----------
        parameters : Mapping[str, Any], ParameterDict or iterable of (str, Any)
            The entries to set (Tensors become parameters).

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When a key is not a string, or ``parameters`` or one of its elements is not
            iterable.
        ValueError
            When an element of an iterable is not a pair (its length is not 2).
        remat.DTypeError
            When a Tensor value is not floating point.

        Examples
        --------
        >>> pd = remat.nn.ParameterDict({"a": remat.ones(1)})
        >>> pd.update([("b", remat.zeros(2))])
        >>> list(pd)
        ['a', 'b']
        """
        for key, value in _pairs(parameters, "ParameterDict"):
            self[key] = value

    def pop(self, key: str) -> Any:
        """Remove ``key`` and return its value.

        Parameters
        ----------
        key : str
            The entry to remove.

        Returns
        -------
        Any
            The parameter (or other value) stored under ``key``.

        Raises
        ------
        KeyError
            When ``key`` is not present.

        Examples
        --------
        >>> pd = remat.nn.ParameterDict({"a": remat.ones(1), "b": remat.zeros(1)})
        >>> pd.pop("a"), list(pd)
        (tensor([1.], requires_grad=True), ['b'])
        """
        value = self[key]
        del self[key]
        return value
