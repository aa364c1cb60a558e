"""Saving and loading tensors: ``remat.save(obj, path)`` / ``remat.load(path)``.

Three forms, chosen by the path and the object, none of which pickles code:

- ``*.safetensors`` paths use the safetensors format (read and written by ``_safetensors``,
  every dtype exactly, bfloat16 and float16 included), so weights move to and from PyTorch
  and Hugging Face. The object is a flat mapping of
  names to tensors; ``metadata`` (a ``dict[str, str]``) is stored in the header.
- A flat mapping of names to Tensors, NumPy arrays or numbers (a ``state_dict()``) is
  written as an ``.npz`` archive, one array per key in key order, to exactly the given path:
  ``np.load`` reads it too.
- Anything else — nested dicts, lists and tuples of Tensors, arrays and plain values (ints,
  floats, strings, bools, None), e.g. ``{"model": sd, "optim": opt.state_dict(), "epoch":
  3}`` — is an ``.npz`` archive of the arrays plus a JSON description of the structure.

``remat.load`` returns Tensors (as ``torch.load`` does), in an ``OrderedDict`` for the flat
forms and in the saved structure otherwise. As with ``torch.save``, a tensor's
``requires_grad`` is kept (a saved Parameter comes back as a Parameter: a leaf that requires
grad); the ``.npz`` forms record it in the archive's comment (flat form) or in the JSON
structure, so NumPy still reads the arrays. Both functions take a path or an open binary
file object (``io.BytesIO``, ``open(path, "wb")``), as PyTorch's do.

Since nothing is pickled, a Module, an optimizer or any other object is never saved whole
(``torch.save(model, path)`` pickles the class): ``remat.save`` refuses it and names the
``state_dict()`` to save instead. PyTorch's allow-list of classes for its restricted
unpickler (``safe_globals``, ``add_safe_globals``) is accepted and changes nothing.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Union

import numpy as np

from . import _remat, _safetensors
from ._remat import Tensor

__all__ = [
    "save", "load", "safe_globals", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
]

PathLike = Union[str, "os.PathLike[str]"]
# A path (str / os.PathLike) or an open binary file object (anything with read / write).
FileLike = Any

# Name of the archive entry that holds the JSON structure of a nested object.
_TREE = "__remat_tree__"
# Prefix of the zip comment that lists the keys of a flat archive whose tensors require grad.
_COMMENT = b"remat:"


def _as_array(key: str, value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.array(value.detach().cpu().numpy(), copy=True)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(
            f"remat.save: value for key {key!r} is a {type(value).__name__}, which is not a "
            "Tensor, NumPy array or number"
        )
    return arr


def _is_file(f: Any, method: str) -> bool:
    """Whether ``f`` is an open file object (it has ``read`` / ``write``), not a path."""
    return not isinstance(f, (str, bytes, os.PathLike)) and callable(getattr(f, method, None))


def _is_safetensors(path: Any) -> bool:
    if not isinstance(path, (str, bytes, os.PathLike)):  # a file object: by its name
        path = getattr(path, "name", "")
        if not isinstance(path, (str, os.PathLike)):
            return False
    name = os.fspath(path)
    return (name.decode() if isinstance(name, bytes) else name).lower().endswith(".safetensors")


def _requires_grad(value: Any) -> bool:
    return isinstance(value, Tensor) and value.requires_grad


def _restore(arr: np.ndarray, requires_grad: bool) -> Tensor:
    t = _remat.from_numpy(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _is_leaf(value: Any) -> bool:
    return isinstance(value, (Tensor, np.ndarray, np.generic, int, float)) and not isinstance(
        value, bool
    )


def _flat(obj: Any) -> bool:
    return isinstance(obj, Mapping) and all(
        isinstance(k, str) and k != _TREE and _is_leaf(v) for k, v in obj.items()
    )


def _write_npz(path: FileLike, arrays: list[tuple[str, np.ndarray]],
               comment: bytes = b"") -> None:
    # What np.savez does, written out so that any key (even "file") is allowed and the file
    # lands at exactly `path`. A file object gets the archive's bytes written into it.
    if _is_file(path, "write"):
        buf = io.BytesIO()
        _write_zip(buf, arrays, comment)
        path.write(buf.getvalue())
    else:
        _write_zip(os.fspath(path), arrays, comment)


def _write_zip(target: Any, arrays: list[tuple[str, np.ndarray]], comment: bytes) -> None:
    with zipfile.ZipFile(target, mode="w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays:
            with zf.open(key + ".npy", mode="w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)
        zf.comment = comment


def _describe(value: Any, arrays: list[tuple[str, np.ndarray]], where: str) -> Any:
    """The JSON description of ``value``; its tensors and arrays are appended to ``arrays``."""
    if isinstance(value, (Tensor, np.ndarray)):
        kind = "__tensor__" if isinstance(value, Tensor) else "__ndarray__"
        key = f"{len(arrays)}"
        arrays.append((key, _as_array(where, value)))
        if _requires_grad(value):
            return {kind: key, "requires_grad": True}
        return {kind: key}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        items = []
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"remat.save: dict key {k!r} at {where} is not a str or int")
            items.append([k, _describe(v, arrays, f"{where}[{k!r}]")])
        return {"__dict__": items}
    if isinstance(value, (list, tuple)):
        kind = "__list__" if isinstance(value, list) else "__tuple__"
        return {kind: [_describe(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]}
    raise TypeError(
        f"remat.save: {where} is a {type(value).__name__}; only Tensors, NumPy arrays, "
        "numbers, strings, bools, None and dicts/lists/tuples of them can be saved"
    )


def _rebuild(node: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    if isinstance(node, dict):
        if "__tensor__" in node:
            return _restore(arrays[node["__tensor__"]], bool(node.get("requires_grad")))
        if "__ndarray__" in node:
            return arrays[node["__ndarray__"]]
        if "__dict__" in node:
            return {k: _rebuild(v, arrays) for k, v in node["__dict__"]}
        if "__list__" in node:
            return [_rebuild(v, arrays) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(_rebuild(v, arrays) for v in node["__tuple__"])
        raise ValueError(f"unknown node {sorted(node)}")
    return node


def save(obj: Any, path: FileLike, metadata: dict[str, str] | None = None) -> None:
    """Write ``obj`` to ``path`` (a path or an open binary file) in the form the module
    docstring describes. ``metadata`` is only for ``.safetensors`` paths.

    No code is pickled. The form follows the path and the object: a ``.safetensors`` path
    writes the safetensors format (a flat mapping of names to tensors, readable by
    PyTorch and Hugging Face); a flat mapping of names to Tensors, arrays or numbers is an
    ``.npz`` archive with one array per key (``np.load`` reads it); anything else (nested
    dicts, lists, tuples of Tensors, arrays, numbers, strings, bools and None) is an
    ``.npz`` archive of the arrays plus a JSON description of the structure. The file is
    written at exactly ``path`` (no suffix added). Tensors are copied to the host; their
    ``requires_grad`` is recorded (not in ``.safetensors`` files, which have no place for
    it), so :func:`load` gives Parameters back as Parameters.

    Parameters
    ----------
    obj : Any
        What to save: a mapping (a ``state_dict()``) or a nested structure as above.
    path : str, os.PathLike or file object
        The file to write (overwritten), or a binary file object to write the archive into
        (e.g. ``io.BytesIO()``; safetensors when its ``name`` ends in ``.safetensors``).
    metadata : dict of str to str, optional
        Stored in the header of a ``.safetensors`` file. Default: ``None``.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        When ``metadata`` is given for a path that is not ``.safetensors``.
    TypeError
        When a value cannot be saved (a Module or optimizer itself, whose ``state_dict()``
        is what to save; a function, an arbitrary object, a dict key that is neither str
        nor int), or when a ``.safetensors`` object is not a flat mapping of names to
        tensors.
    OSError
        When the file cannot be written.

    Examples
    --------
    >>> sd = {"w": remat.tensor([[1.0, 2.0]]), "b": remat.tensor([0.5])}
    >>> remat.save(sd, "model.npz")
    >>> dict(remat.load("model.npz"))  # an OrderedDict, in the saved order
    {'w': tensor([[1., 2.]]), 'b': tensor([0.5000])}
    >>> sorted(np.load("model.npz").files)  # plain NumPy reads it too
    ['b', 'w']
    >>> import io
    >>> buf = io.BytesIO()
    >>> remat.save({"p": remat.nn.Parameter(remat.ones(2))}, buf)
    >>> _ = buf.seek(0)
    >>> remat.load(buf)["p"]
    tensor([1., 1.], requires_grad=True)
    >>> remat.save({"model": sd, "epoch": 3, "note": None}, "ckpt.bin")
    >>> remat.load("ckpt.bin")["epoch"]
    3
    >>> remat.save({"f": len}, "bad.npz")
    Traceback (most recent call last):
        ...
    TypeError: remat.save: obj['f'] is a builtin_function_or_method; only Tensors, ...
    >>> remat.save(remat.nn.Linear(2, 1), "model.pt")
    Traceback (most recent call last):
        ...
    TypeError: remat.save: cannot save a Linear object itself: remat never pickles code ...
    """
    _refuse_whole_objects(obj)
    if _is_safetensors(path):
        _save_safetensors(obj, path, metadata)
        return
    if metadata is not None:
        raise ValueError("remat.save: metadata is only stored in .safetensors files")
    if _flat(obj):
        grad_keys = [k for k, v in obj.items() if _requires_grad(v)]
        comment = _COMMENT + json.dumps({"requires_grad": grad_keys}).encode() if grad_keys else b""
        _write_npz(path, [(k, _as_array(k, v)) for k, v in obj.items()], comment)
        return
    arrays: list[tuple[str, np.ndarray]] = []
    tree = json.dumps(_describe(obj, arrays, "obj"))
    arrays.append((_TREE, np.frombuffer(tree.encode("utf-8"), dtype=np.uint8)))
    _write_npz(path, arrays)


def _refuse_whole_objects(obj: Any) -> None:
    """A Module, optimizer or scheduler given whole: PyTorch would pickle it (its class and
    code); remat saves only data, so point to what to save instead."""
    if hasattr(obj, "state_dict") and callable(obj.state_dict) and not isinstance(obj, Mapping):
        kind = type(obj).__name__
        raise TypeError(
            f"remat.save: cannot save a {kind} object itself: remat never pickles code (a "
            f"whole {kind} would need its class). Save its state instead, "
            "remat.save(obj.state_dict(), path), and restore it into a new instance with "
            "obj.load_state_dict(remat.load(path))"
        )


def _save_safetensors(obj: Any, path: FileLike, metadata: dict[str, str] | None) -> None:
    if not _flat(obj):
        raise TypeError(
            "remat.save: a .safetensors file holds a flat mapping of names to tensors, got "
            f"{type(obj).__name__}"
        )
    values = {k: v if isinstance(v, Tensor) else _as_array(k, v) for k, v in obj.items()}
    data = _safetensors.dumps(values, metadata)
    if _is_file(path, "write"):
        path.write(data)
        return
    with open(os.fspath(path), "wb") as f:
        f.write(data)


def load(path: FileLike, map_location: Any = None, weights_only: bool | None = True,
         **pickle_load_args: Any) -> Any:
    """Read what :func:`save` wrote (or an ``np.savez`` archive, or any ``.safetensors``
    file, PyTorch's and Hugging Face's included) from a path or an open binary file:
    Tensors in an ``OrderedDict`` in the saved order, or the saved nested structure.

    A file that cannot be opened raises ``OSError`` (``FileNotFoundError``, ...); a file that
    is not such an archive, or whose contents are corrupt, raises ``ValueError`` naming it.

    No pickle is ever loaded. Tensors come back on the CPU with their saved dtypes and
    ``requires_grad``; NumPy arrays saved inside a nested structure come back as arrays. A
    ``.safetensors`` file's tensors come in the order of their bytes in the file (remat writes
    them in the order given; the ``safetensors`` package sorts them by dtype and name), with
    their stored dtypes: a bfloat16 file loads as bfloat16, bit for bit. A file object is read
    from its current position to its end; its format is told by its first bytes.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file to read, or a binary file object (``io.BytesIO``, ``open(p, "rb")``).
    map_location : str, remat.device, dict or callable, optional
        Where the tensors go, as in ``torch.load``: a device (``"cpu"``, ``"cuda:0"``,
        ``remat.device(...)``); a dict from the saved location to a device (tensors are
        saved from the host, so the ``"cpu"`` entry applies; a dict without one leaves them
        on the CPU); or a callable ``f(tensor, "cpu")`` returning the tensor to use.
        Default: ``None`` (the CPU).
    weights_only : bool or None, optional
        PyTorch's switch for its restricted unpickler. remat never unpickles, so it always
        loads data only: ``True`` and ``None`` are accepted; ``False`` (asking to run
        pickled code) raises. Default: ``True``.
    **pickle_load_args
        PyTorch's arguments for ``pickle.load`` (``encoding=`` ...): accepted and unused,
        since no pickle is read.

    Returns
    -------
    OrderedDict or Any
        An ``OrderedDict`` of name to Tensor for a flat archive or a ``.safetensors`` file;
        the saved nested structure (dicts, lists, tuples, Tensors, plain values) otherwise.

    Raises
    ------
    OSError
        When the file cannot be opened (``FileNotFoundError`` ...).
    ValueError
        When the file is not an archive written by ``remat.save`` / ``np.savez`` or a
        safetensors file, or its contents are corrupt; when ``weights_only=False``.
    TypeError
        When ``map_location`` is neither a device, a dict nor a callable.
    remat.DeviceError
        When ``map_location`` names a device that is not available.

    Examples
    --------
    >>> remat.save({"model": {"w": remat.tensor([1.0, 2.0])}, "step": 10}, "ckpt.npz")
    >>> remat.load("ckpt.npz")
    {'model': {'w': tensor([1., 2.])}, 'step': 10}
    >>> remat.save({"w": remat.tensor([1.0]), "b": remat.tensor([0.0])}, "m.safetensors")
    >>> list(remat.load("m.safetensors"))
    ['w', 'b']
    >>> remat.load("ckpt.npz", map_location="cpu", weights_only=True)["model"]["w"].device
    device(type='cpu')
    >>> remat.load("ckpt.npz", map_location={"cuda:0": "cpu"})["step"]
    10
    >>> remat.load("missing.npz")
    Traceback (most recent call last):
        ...
    FileNotFoundError: [Errno 2] No such file or directory: 'missing.npz'
    """
    if weights_only is not None and not weights_only:
        raise ValueError(
            "remat.load: weights_only=False asks to unpickle arbitrary code, which remat never "
            "does: its files hold only tensors, arrays and plain values, which load with "
            "weights_only=True (the default)"
        )
    place = _placement(map_location)
    loaded = _load_data(path)
    return loaded if place is None else _mapped(loaded, place)


def _placement(map_location: Any) -> Any:
    """``map_location`` as a function from a loaded (CPU) tensor to the tensor to return, or
    None when tensors stay on the CPU."""
    if map_location is None:
        return None
    if isinstance(map_location, Mapping):
        target = map_location.get("cpu", map_location.get("cpu:0"))
        return None if target is None else _placement(target)
    if isinstance(map_location, str):  # also remat.device, a str subclass
        from ._device import device

        target = device(map_location)
        if target.type == "cpu":
            return None
        return lambda t: t.to(target)
    if callable(map_location):
        def call(t: Tensor) -> Tensor:
            out = map_location(t, "cpu")
            if not isinstance(out, Tensor):
                raise TypeError(
                    f"remat.load: map_location returned a {type(out).__name__}, not a Tensor"
                )
            return out

        return call
    raise TypeError(
        f"remat.load: map_location must be a device, a dict of devices or a callable, got "
        f"{type(map_location).__name__}"
    )


def _mapped(value: Any, place: Any) -> Any:
    """``value`` with every Tensor in it passed through ``place`` (structure kept)."""
    if isinstance(value, Tensor):
        moved = place(value)
        if value.requires_grad and moved is not value and not moved.requires_grad:
            moved = moved.detach().requires_grad_(True)
        return moved
    if isinstance(value, OrderedDict):
        return OrderedDict((k, _mapped(v, place)) for k, v in value.items())
    if isinstance(value, dict):
        return {k: _mapped(v, place) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_mapped(v, place) for v in value)
    return value


def _load_data(path: FileLike) -> Any:
    if _is_file(path, "read"):
        data = path.read()
        file: Any = getattr(path, "name", None) or type(path).__name__
        source: Any = io.BytesIO(data)
        # An npz archive is a zip file ("PK"); anything else is taken for safetensors.
        safetensors = not data.startswith(b"PK")
    else:
        file = source = os.fspath(path)
        safetensors = _is_safetensors(file)
    try:
        if safetensors:
            if not isinstance(source, io.BytesIO):
                with open(file, "rb") as f:
                    data = f.read()
            return OrderedDict(_safetensors.loads(data))
        z = np.load(source, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("it holds a single array, not an archive of named arrays")
        with z:
            entries = OrderedDict((k, z[k]) for k in z.files)
            comment = getattr(getattr(z, "zip", None), "comment", b"") or b""
        if _TREE in entries:
            tree = json.loads(entries.pop(_TREE).tobytes().decode("utf-8"))
            return _rebuild(tree, entries)
        grad_keys = set()
        if comment.startswith(_COMMENT):
            grad_keys = set(json.loads(comment[len(_COMMENT):].decode("utf-8"))["requires_grad"])
        return OrderedDict((k, _restore(v, k in grad_keys)) for k, v in entries.items())
    except (OSError, MemoryError):
        raise
    except Exception as e:  # NumPy's parser leaks ValueError, SyntaxError, TokenError, ...
        raise ValueError(
            f"remat.load: {file!r} is not a valid file written by remat.save "
            f"({type(e).__name__}: {e})"
        ) from e


# -- PyTorch's allow-list of classes for its restricted unpickler -----------------------------
# remat's files hold no pickles, so no class is ever looked up: these accept what PyTorch
# programs pass (classes, (class, name) pairs) and keep it only so `get_safe_globals` shows it.

_SAFE_GLOBALS: list[Any] = []


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Accept PyTorch's allow-list of classes for ``torch.load(weights_only=True)``; changes
    nothing in remat.

    PyTorch's restricted unpickler refuses classes not on the list. remat never unpickles
    (its files hold only tensors, arrays and plain values), so there is nothing to allow:
    the list is kept only so that :func:`get_safe_globals` returns it.

    Parameters
    ----------
    safe_globals : list
        Classes, functions or ``(object, "module.name")`` pairs.

    Returns
    -------
    None

    Raises
    ------
    TypeError
        When ``safe_globals`` is not a list or tuple.

    Examples
    --------
    >>> remat.serialization.add_safe_globals([remat.nn.Linear])
    >>> remat.nn.Linear in remat.serialization.get_safe_globals()
    True
    >>> remat.serialization.clear_safe_globals()
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(
            f"add_safe_globals expects a list, got {type(safe_globals).__name__}"
        )
    _SAFE_GLOBALS.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """What :func:`add_safe_globals` was given (PyTorch's ``get_safe_globals``).

    Returns
    -------
    list

    Raises
    ------
    None
        Nothing is raised.

    Examples
    --------
    >>> remat.serialization.get_safe_globals()
    []
    """
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Empty the list of :func:`add_safe_globals` (PyTorch's ``clear_safe_globals``).

    Returns
    -------
    None

    Raises
    ------
    None
        Nothing is raised.

    Examples
    --------
    >>> remat.serialization.clear_safe_globals()
    """
    _SAFE_GLOBALS.clear()


class safe_globals:
    """Context manager form of :func:`add_safe_globals` (PyTorch's ``safe_globals``): the
    classes are on the list inside the ``with`` block only. Changes nothing in remat, which
    never unpickles.

    Parameters
    ----------
    safe_globals : list
        Classes, functions or ``(object, "module.name")`` pairs.

    Raises
    ------
    TypeError
        When ``safe_globals`` is not a list or tuple.

    Examples
    --------
    >>> remat.save({"w": remat.ones(1)}, "w.pt")
    >>> with remat.serialization.safe_globals([remat.nn.Linear]):
    ...     sd = remat.load("w.pt", weights_only=True)
    >>> list(sd), remat.serialization.get_safe_globals()
    (['w'], [])
    """

    def __init__(self, safe_globals: list[Any]) -> None:
        if not isinstance(safe_globals, (list, tuple)):
            raise TypeError(f"safe_globals expects a list, got {type(safe_globals).__name__}")
        self._globals = list(safe_globals)
        self._before: list[Any] = []

    def __enter__(self) -> safe_globals:
        self._before = list(_SAFE_GLOBALS)
        _SAFE_GLOBALS.extend(self._globals)
        return self

    def __exit__(self, *exc: object) -> None:
        _SAFE_GLOBALS[:] = self._before
