"""``default_collate`` and ``default_convert``: how :class:`DataLoader` turns samples into
batches, with ``torch.utils.data``'s rules (the same code runs in worker processes)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any

import numpy as np

import remat

from ..._remat import Tensor

__all__ = ["default_collate", "default_convert"]


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into a batch (see the module docstring).

    As PyTorch's: Tensors are stacked along a new first axis; NumPy arrays are stacked into
    a tensor; bools, ints and floats become a 1-d tensor (bool, int64, float64); strings
    and bytes stay a list; dicts are collated per key, namedtuples per field, and other
    tuples and lists per position (into a list).

    Parameters
    ----------
    batch : sequence
        The samples, all of the same kind as the first.

    Returns
    -------
    Any
        The batch, in the samples' structure.

    Raises
    ------
    TypeError
        When the samples are of a kind it does not collate.
    RuntimeError
        When list or tuple samples differ in length.
    remat.ShapeError
        When tensors to stack differ in shape.
    IndexError
        When ``batch`` is empty.

    Examples
    --------
    >>> from remat.utils.data import default_collate
    >>> default_collate([remat.tensor([1.0, 2.0]), remat.tensor([3.0, 4.0])])
    tensor([[1., 2.],
            [3., 4.]])
    >>> default_collate([(1, 2.0), (3, 4.0)])
    [tensor([1, 3]), tensor([2., 4.], dtype=remat.float64)]
    >>> default_collate([{"x": remat.tensor([1.0]), "y": 0}, {"x": remat.tensor([2.0]), "y": 1}])
    {'x': tensor([[1.],
            [2.]]), 'y': tensor([0, 1])}
    """
    first = batch[0]
    if isinstance(first, Tensor):
        return remat.stack(list(batch))
    if isinstance(first, np.ndarray):
        return remat.tensor(np.stack(batch))
    if isinstance(first, (bool, np.bool_)):
        return remat.tensor([bool(b) for b in batch])
    if isinstance(first, (int, np.integer)):
        return remat.tensor([int(b) for b in batch])
    if isinstance(first, (float, np.floating)):
        return remat.tensor([float(b) for b in batch], dtype=remat.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # namedtuple
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, (tuple, list)):
        size = len(first)
        if any(len(s) != size for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(first).__name__}"
    )


def default_convert(data: Any) -> Any:
    """Turn the NumPy arrays and scalars in one sample into tensors, leaving the rest as it
    is: what :class:`DataLoader` applies to each sample when ``batch_size=None`` (no
    batching), as PyTorch's ``default_convert``.

    Tensors pass through; NumPy arrays (other than string or object arrays) and NumPy
    scalars become tensors of their dtype; dicts and lists are converted element by element
    (keeping their type), namedtuples field by field, and other tuples become lists (as
    PyTorch's). Anything else (Python numbers, strings) is returned unchanged.

    Parameters
    ----------
    data : Any
        One sample.

    Returns
    -------
    Any
        The sample with its NumPy values as tensors.

    Raises
    ------
    TypeError
        When a NumPy value has a dtype remat cannot hold.

    Examples
    --------
    >>> from remat.utils.data import default_convert
    >>> default_convert({"x": np.arange(3), "label": 1})
    {'x': tensor([0, 1, 2]), 'label': 1}
    >>> default_convert((np.float32(0.5), "name"))
    [tensor(0.5000), 'name']
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "USO":  # strings and objects have no tensor form
            return data
        return remat.as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return remat.as_tensor(data)
    if isinstance(data, Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        if isinstance(data, MutableMapping):
            clone = copy.copy(data)
            clone.update(converted)
            return clone
        try:
            return type(data)(converted)  # type: ignore[call-arg]
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        if isinstance(data, MutableSequence):
            items: MutableSequence[Any] = copy.copy(data)  # type: ignore[arg-type]
            for i, d in enumerate(data):
                items[i] = default_convert(d)
            return items
        try:
            return type(data)([default_convert(d) for d in data])  # type: ignore[call-arg]
        except TypeError:
            return [default_convert(d) for d in data]
    return data
