"""``remat.device``: a device name that is also a ``str`` ("cpu", "cuda", "cuda:1"), so it
goes wherever a device string goes, with PyTorch's ``type`` and ``index`` attributes and
constructor forms (``device("cuda", 1)``, ``device("cuda:1")``, ``device(1)``)."""

from __future__ import annotations

from typing import Any

_TYPES = ("cpu", "cuda")


class device(str):
    """A device: ``type`` ("cpu" or "cuda") and ``index`` (an int, or None for "the current
    one"). Compares equal to its string form.

    ``remat.device`` is a ``str`` subclass ("cpu", "cuda", "cuda:1"), so it goes wherever a
    device string goes (``device=`` arguments, dict keys, comparisons), with PyTorch's
    constructor forms and attributes. ``Tensor.device`` returns one. Constructing a device
    does not check that it exists: asking for a tensor there does.

    Parameters
    ----------
    type : str, int or device
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` (or ``"cpu:0"``); an int ``N`` means
        ``"cuda:N"``; a ``device`` is returned as it is (when ``index`` is None).
    index : int, optional
        The device ordinal, when ``type`` has none (0 is the only one for the CPU).
        Default: ``None``.

    Raises
    ------
    TypeError
        When ``type`` is neither a str nor an int.
    RuntimeError
        When the type is not ``cpu`` or ``cuda``, the string's index is not a number, an
        index is given both in the string and as ``index``, the index is negative (or
        not an int), or a CPU index is not 0 (messages as PyTorch's).

    Examples
    --------
    >>> d = remat.device("cuda", 1)
    >>> d
    device(type='cuda', index=1)
    >>> d == "cuda:1", d.type, d.index
    (True, 'cuda', 1)
    >>> remat.device(0)
    device(type='cuda', index=0)
    >>> remat.tensor([1.0]).device
    device(type='cpu')
    >>> remat.device("gpu")
    Traceback (most recent call last):
        ...
    RuntimeError: Expected one of cpu, cuda device type at start of device string: gpu
    """

    _type: str
    _index: int | None

    def __new__(cls, type: Any, index: int | None = None) -> device:  # noqa: A002
        if isinstance(type, device) and index is None:
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a str or int, got {type.__class__.__name__}")
        kind, sep, rest = type.partition(":")
        if kind not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        if sep:
            if index is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed "
                    f"explicitly: {type}"
                )
            if not rest.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(rest)
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if kind == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
        text = kind if index is None else f"{kind}:{index}"
        obj = super().__new__(cls, text)
        obj._type, obj._index = kind, index
        return obj

    @property
    def type(self) -> str:
        """The device type: ``"cpu"`` or ``"cuda"``.

        Examples
        --------
        >>> remat.device("cuda:1").type
        'cuda'
        """
        return self._type

    @property
    def index(self) -> int | None:  # type: ignore[override]  # torch.device.index, not str's
        """The device ordinal, or None when the device string names none.

        Examples
        --------
        >>> remat.device("cuda:1").index
        1
        >>> remat.device("cpu").index is None
        True
        """
        return self._index

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __reduce__(self) -> Any:
        return (device, (str(self),))

    __hash__ = str.__hash__
