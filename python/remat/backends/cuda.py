"""``remat.backends.cuda``, as ``torch.backends.cuda``: the cuBLAS flags under ``matmul``
(``allow_tf32``, the reduced-precision reductions, ``allow_fp16_accumulation``) and, for
``remat.set_float32_matmul_precision``, the float32 matmul precision they are tied to.

These flags record the setting, with PyTorch's defaults, checks and ties, so that scripts
which set or read them run unchanged. remat computes float32 matmuls in full float32
whatever they say today (TF32 and reduced-precision reductions come with the
mixed-precision work).

Every backend flag (these, ``remat.backends.cudnn``'s and ``remat.backends.mkldnn``'s) is kept
in this module's ``_SETTINGS``, the one place the engine is to read them from.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["matmul"]

# Every backend flag's value, with PyTorch's defaults; the setters below (and cudnn's and
# mkldnn's) check and store, the engine reads. `matmul.allow_tf32` is not stored: as in
# PyTorch it is "float32 matmul precision is not 'highest'".
_SETTINGS: dict[str, Any] = {
    "float32_matmul_precision": "highest",
    "matmul.allow_fp16_reduced_precision_reduction": True,
    "matmul.allow_fp16_reduced_precision_reduction_split_k": True,
    "matmul.allow_bf16_reduced_precision_reduction": True,
    "matmul.allow_bf16_reduced_precision_reduction_split_k": True,
    "matmul.allow_fp16_accumulation": False,
    "cudnn.enabled": True,
    "cudnn.benchmark": False,
    "cudnn.deterministic": False,
    "cudnn.allow_tf32": True,
    "mkldnn.enabled": True,
    "mkldnn.deterministic": False,
}

_PRECISIONS = ("highest", "high", "medium")


def _check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool; PyTorch's RuntimeError otherwise (it takes no ints)."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{name} expects a bool, but got {type(value).__name__}")
    return value


def _reduction_setting(name: str, value: Any) -> tuple[bool, bool]:
    """``(allow_reduced_precision, allow_splitk)`` from a bool or a tuple/list of one or two
    bools, as PyTorch parses these flags (TypeError otherwise)."""
    def ensure(obj: Any, which: str) -> bool:
        if isinstance(obj, bool):
            return obj
        raise TypeError(f"{name} expects a bool for {which}, but got {type(obj)!r}")

    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{name} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{name} expects at most two boolean arguments")
        allow = ensure(value[0], "allow_reduced_precision")
        splitk = ensure(value[1], "allow_splitk") if len(value) == 2 else True
        return allow, splitk
    raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)!r}")


class _Matmul:
    """``remat.backends.cuda.matmul``: the cuBLAS flags, as ``torch.backends.cuda.matmul``.

    ``allow_tf32`` (default False) is tied to the float32 matmul precision as in PyTorch:
    it reads True unless the precision is ``"highest"``, and setting it sets the precision
    to ``"high"`` (True) or ``"highest"`` (False). ``allow_fp16_reduced_precision_reduction``
    and ``allow_bf16_reduced_precision_reduction`` (default True) take a bool or a
    ``(allow_reduced_precision, allow_splitk)`` tuple, whose second part reads back as
    ``..._split_k``; ``allow_fp16_accumulation`` defaults to False. Values must be bools;
    other names raise AttributeError.

    The flags record the setting: remat computes float32 matmuls in full float32 whatever
    they say (TF32 comes with the mixed-precision work).

    Examples
    --------
    >>> m = remat.backends.cuda.matmul
    >>> m.allow_tf32, m.allow_fp16_reduced_precision_reduction
    (False, True)
    >>> m.allow_tf32 = True
    >>> remat.get_float32_matmul_precision()
    'high'
    >>> m.allow_tf32 = False
    >>> remat.get_float32_matmul_precision()
    'highest'
    """

    _REDUCTIONS = ("allow_fp16_reduced_precision_reduction",
                   "allow_bf16_reduced_precision_reduction")

    def __getattr__(self, name: str) -> Any:
        if name == "allow_tf32":
            return _SETTINGS["float32_matmul_precision"] != "highest"
        key = "matmul." + name
        if key in _SETTINGS:
            return _SETTINGS[key]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            on = _check_bool("backends.cuda.matmul.allow_tf32", value)
            _SETTINGS["float32_matmul_precision"] = "high" if on else "highest"
        elif name in self._REDUCTIONS:
            allow, splitk = _reduction_setting(name, value)
            _SETTINGS["matmul." + name] = allow
            _SETTINGS["matmul." + name + "_split_k"] = splitk
        elif name == "allow_fp16_accumulation":
            _SETTINGS["matmul." + name] = _check_bool(
                "backends.cuda.matmul.allow_fp16_accumulation", value)
        else:
            raise AttributeError("Unknown attribute " + name)

    def __repr__(self) -> str:
        names = ["allow_tf32", *self._REDUCTIONS, "allow_fp16_accumulation"]
        return "matmul(" + ", ".join(f"{n}={getattr(self, n)}" for n in names) + ")"


matmul = _Matmul()


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix multiplications, as
    ``torch.set_float32_matmul_precision``: ``"highest"`` (the default), ``"high"`` (TF32
    allowed) or ``"medium"`` (bfloat16 allowed).

    Tied to ``remat.backends.cuda.matmul.allow_tf32`` as in PyTorch: any precision but
    ``"highest"`` makes it read True. This records the setting: remat computes float32
    matmuls in full float32 whatever it says today (TF32 comes with the mixed-precision
    work). As PyTorch, another string warns and changes nothing.

    Parameters
    ----------
    precision : str
        ``"highest"``, ``"high"`` or ``"medium"``.

    Returns
    -------
    None

    Raises
    ------
    RuntimeError
        When ``precision`` is not a str (PyTorch's message).

    Examples
    --------
    >>> remat.set_float32_matmul_precision("high")
    >>> remat.get_float32_matmul_precision(), remat.backends.cuda.matmul.allow_tf32
    ('high', True)
    >>> remat.set_float32_matmul_precision("highest")
    >>> remat.backends.cuda.matmul.allow_tf32
    False
    """
    if not isinstance(precision, str):
        raise RuntimeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}"
        )
    if precision not in _PRECISIONS:
        # PyTorch warns and leaves the setting alone.
        warnings.warn(
            f"set_float32_matmul_precision: {precision!r} is not one of 'highest', 'high', "
            "or 'medium'; the call has no effect",
            UserWarning,
            stacklevel=2,
        )
        return
    _SETTINGS["float32_matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision set by :func:`remat.set_float32_matmul_precision` (or
    through ``remat.backends.cuda.matmul.allow_tf32``), as
    ``torch.get_float32_matmul_precision``.

    Returns
    -------
    str
        ``"highest"`` (the default), ``"high"`` or ``"medium"``.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.get_float32_matmul_precision()
    'highest'
    """
    return _SETTINGS["float32_matmul_precision"]
