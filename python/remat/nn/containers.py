"""Keyed and parameter containers with ``torch.nn``'s behaviour: ``ModuleDict`` (named child
modules, insertion ordered), ``ParameterList`` and ``ParameterDict`` (parameters registered
under ``"0"``, ``"1"``, ... or their keys, so ``parameters()`` and ``state_dict()`` see them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._remat import Tensor
from .modules import Module, Parameter

__all__ = ["ModuleDict", "ParameterList", "ParameterDict"]


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
