"""Saving and loading state dicts as NumPy ``.npz`` archives.

``remat.save(model.state_dict(), "model.npz")`` writes one array per key, in key order, to
exactly the given path (no suffix is appended); ``remat.load(path)`` returns an ``OrderedDict``
of NumPy arrays in the same order, ready for ``Module.load_state_dict`` (which reports shape
mismatches as ``remat.ShapeError``). No pickling is involved in either direction.
"""

from __future__ import annotations

import os
import zipfile
from collections import OrderedDict
from typing import Any, Union

import numpy as np

from ._remat import Tensor

__all__ = ["save", "load"]

PathLike = Union[str, "os.PathLike[str]"]


def _as_array(key: str, value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.array(value.detach().numpy(), copy=True)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(
            f"remat.save: value for key {key!r} is a {type(value).__name__}, which is not a "
            "Tensor, NumPy array or number"
        )
    return arr


def save(obj: Any, path: PathLike) -> None:
    """Write a state dict (a mapping of names to Tensors, NumPy arrays or numbers; a Module's
    ``state_dict()`` is taken if a Module is given) to ``path`` as an ``.npz`` archive, keeping
    key order. The archive is the one ``np.savez`` writes and ``np.load`` reads."""
    if hasattr(obj, "state_dict") and callable(obj.state_dict) and not hasattr(obj, "keys"):
        obj = obj.state_dict()
    if not hasattr(obj, "items"):
        raise TypeError(
            f"remat.save expects a state dict (a mapping of names to arrays), got "
            f"{type(obj).__name__}"
        )
    arrays = []
    for key, value in obj.items():
        if not isinstance(key, str):
            raise TypeError(f"remat.save: keys must be strings, got {key!r}")
        arrays.append((key, _as_array(key, value)))
    # What np.savez does, written out so that any key (even "file") is allowed and the file
    # lands at exactly `path`.
    with zipfile.ZipFile(os.fspath(path), mode="w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays:
            with zf.open(key + ".npy", mode="w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)


def load(path: PathLike) -> OrderedDict:
    """Read an ``.npz`` archive written by :func:`save` (or ``np.savez``) into an
    ``OrderedDict`` of name → NumPy array, in the saved order.

    A file that cannot be opened raises ``OSError`` (``FileNotFoundError``, ...); a file that
    is not such an archive, or whose contents are corrupt, raises ``ValueError`` naming it."""
    file = os.fspath(path)
    try:
        z = np.load(file, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("it holds a single array, not an archive of named arrays")
        with z:
            return OrderedDict((k, z[k]) for k in z.files)
    except (OSError, MemoryError):
        raise
    except Exception as e:  # NumPy's parser leaks ValueError, SyntaxError, TokenError, ...
        raise ValueError(
            f"remat.load: {file!r} is not a valid archive written by remat.save "
            f"({type(e).__name__}: {e})"
        ) from e
