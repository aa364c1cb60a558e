"""``DataParallel`` and ``data_parallel``, as ``torch.nn.parallel.data_parallel``.

remat runs a module on one device: without a GPU the wrapper simply calls the module (what
PyTorch does without GPUs), and with GPUs it runs the whole batch on ``device_ids[0]``
instead of splitting it across replicas. Either way the wrapped module is ``.module`` and its
state-dict keys carry PyTorch's ``module.`` prefix, so checkpoints move between the two.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import remat

from ..._remat import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _device_index(owner: str, d: Any) -> int:
    """A CUDA device ordinal from an int, ``"cuda:N"`` or a ``remat.device`` (PyTorch's
    ``_get_device_index(d, optional=True)``: a CUDA device without an index is device 0,
    remat having no current-device setting)."""
    if isinstance(d, bool):
        raise TypeError(f"{owner}: a device id must be an int or a CUDA device, got {d!r}")
    if isinstance(d, int):
        return d
    if isinstance(d, str):
        dev = remat.device(d)
        if dev.type != "cuda":
            raise ValueError(f"{owner}: expected a cuda device, but got: {dev}")
        return 0 if dev.index is None else dev.index
    raise TypeError(f"{owner}: a device id must be an int or a CUDA device, got {d!r}")


def _to_device(obj: Any, device: str) -> Any:
    """``obj`` with every Tensor in it (through tuples, lists and dicts) moved to ``device``,
    as PyTorch's scatter moves the inputs of a one-device run; other objects as they are."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


def _same_device(t: Tensor, dev: remat.device) -> bool:
    d = remat.device(t.device)
    return d.type == dev.type and (d.index or 0) == (dev.index or 0)


def _resolve(owner: str, device_ids: Sequence[Any] | None, output_device: Any,
             ) -> tuple[list[int], int]:
    """The device ordinals (every GPU when None) and the output device's, as PyTorch
    resolves them when GPUs exist."""
    if device_ids is None:
        device_ids = list(range(remat.cuda.device_count()))
    ids = [_device_index(owner, d) for d in device_ids]
    if not ids:
        raise RuntimeError("no available devices were found")
    out = ids[0] if output_device is None else _device_index(owner, output_device)
    return ids, out


def _run(module: Module, inputs: tuple, kwargs: dict, ids: list[int], output_device: int,
         ) -> Any:
    """One GPU run: the module's tensors checked to be on ``cuda:<ids[0]>`` (PyTorch's
    message), the inputs moved there, the output moved to ``output_device`` when several
    devices were asked for (PyTorch gathers there; with one device it does not move it)."""
    src = remat.device("cuda", ids[0])
    for t in (*module.parameters(), *module.buffers()):
        if not _same_device(t, src):
            raise RuntimeError(
                "module must have its parameters and buffers on device "
                f"{src} (device_ids[0]) but found one of them on device: {t.device}"
            )
    out = module(*_to_device(inputs, src), **_to_device(kwargs, src))
    if len(ids) > 1 and output_device != ids[0]:
        dest = "cpu" if output_device == -1 else remat.device("cuda", output_device)
        out = _to_device(out, dest)
    return out


class DataParallel(Module):
    """Wrap a module for data-parallel training, as ``torch.nn.DataParallel``; remat runs it
    on one device.

    Without a usable GPU (``remat.cuda.is_available()`` is False) this is PyTorch's
    behaviour without GPUs: ``device_ids`` is ``[]`` and ``forward`` calls the module with
    the inputs as they are. With GPUs the module is moved to ``cuda:<device_ids[0]>`` and
    each call moves the tensors among the inputs there and runs the whole batch on that one
    device: when several ``device_ids`` are given (the default takes every GPU) the batch is
    not split across replicas (a warning says so at construction; the results are the same,
    except for what batch statistics see) and the output is moved to ``output_device``.

    The wrapped module is ``.module``, so ``parameters()`` and ``state_dict()`` are the
    module's with PyTorch's ``module.`` prefix on every key.

    Parameters
    ----------
    module : Module
        The module to run.
    device_ids : sequence of int or device, optional
        The CUDA devices (ordinals, ``"cuda:N"`` or ``remat.device``). Default: ``None``
        (every GPU; ignored without a GPU).
    output_device : int or device, optional
        Where the output goes when several ``device_ids`` are given (-1: the CPU). Default:
        ``None`` (``device_ids[0]``).
    dim : int, optional
        The batch dimension PyTorch splits along (kept as ``.dim``; remat does not split).
        Default: ``0``.

    Raises
    ------
    TypeError
        When ``module`` is not a ``Module`` or a device id is neither an int nor a device.
    ValueError
        When a device id names a device that is not a CUDA device.
    RuntimeError
        When GPUs exist but ``device_ids`` is empty (PyTorch's "no available devices were
        found"); at call time, when a parameter or buffer of the module is not on
        ``device_ids[0]`` (PyTorch's message).

    Examples
    --------
    >>> model = remat.nn.DataParallel(remat.nn.Linear(3, 2))
    >>> isinstance(model.module, remat.nn.Linear)
    True
    >>> sorted(model.state_dict())
    ['module.bias', 'module.weight']
    >>> model(remat.ones(4, 3)).shape
    (4, 2)
    """

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if not isinstance(module, Module):
            raise TypeError(f"{name}: module must be a remat.nn.Module, got "
                            f"{type(module).__name__}")
        self.dim = dim
        self.module = module
        if not remat.cuda.is_available():
            self.device_ids: list[int] = []
            self.output_device: int | None = None
            self.src_device_obj: remat.device | None = None
            return
        ids, self.output_device = _resolve(name, device_ids, output_device)
        self.device_ids = ids
        self.src_device_obj = remat.device("cuda", ids[0])
        if len(ids) > 1:
            warnings.warn(
                f"{name}: remat runs the module on {self.src_device_obj} (device_ids[0]) "
                f"only; the batch is not split across device_ids {ids}",
                UserWarning,
                stacklevel=2,
            )
        module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the wrapped module on the inputs (moved to ``device_ids[0]`` when there are
        GPUs); return its output.

        Parameters
        ----------
        *inputs : Any
            The module's positional arguments.
        **kwargs : Any
            The module's keyword arguments.

        Returns
        -------
        Any
            The module's output (on ``output_device`` when several ``device_ids`` are given).

        Raises
        ------
        RuntimeError
            When a parameter or buffer of the module is not on ``device_ids[0]``.

        Examples
        --------
        >>> model = remat.nn.DataParallel(remat.nn.Identity())
        >>> model(remat.tensor([1.0, 2.0]))
        tensor([1., 2.])
        """
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        assert self.output_device is not None
        return _run(self.module, inputs, kwargs, self.device_ids, self.output_device)


def data_parallel(
    module: Module,
    inputs: Any,
    device_ids: Sequence[Any] | None = None,
    output_device: Any = None,
    dim: int = 0,
    module_kwargs: dict | None = None,
) -> Any:
    """Evaluate ``module(*inputs, **module_kwargs)`` data-parallel, as
    ``torch.nn.parallel.data_parallel``; remat runs it on one device.

    Without a GPU the module is called with the inputs as they are (PyTorch's behaviour
    without GPUs); with GPUs, as :class:`DataParallel` runs it (on ``device_ids[0]``, the
    module's parameters already there).

    Parameters
    ----------
    module : Module
        The module to evaluate.
    inputs : Any
        Its positional arguments: a tuple, or one argument.
    device_ids : sequence of int or device, optional
        The CUDA devices. Default: ``None`` (every GPU).
    output_device : int or device, optional
        Where the output goes with several ``device_ids``. Default: ``None``
        (``device_ids[0]``).
    dim : int, optional
        The batch dimension PyTorch splits along (remat does not split). Default: ``0``.
    module_kwargs : dict, optional
        Its keyword arguments. Default: ``None``.

    Returns
    -------
    Any
        The module's output.

    Raises
    ------
    TypeError
        When ``module`` is not a ``Module``.
    RuntimeError
        With GPUs, when a parameter or buffer of the module is not on ``device_ids[0]``.

    Examples
    --------
    >>> lin = remat.nn.Linear(3, 2)
    >>> x = remat.ones(4, 3)
    >>> bool((remat.nn.parallel.data_parallel(lin, x) == lin(x)).all())
    True
    """
    if not isinstance(module, Module):
        raise TypeError(f"data_parallel: module must be a remat.nn.Module, got "
                        f"{type(module).__name__}")
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    kwargs = module_kwargs or {}
    if not remat.cuda.is_available():
        return module(*inputs, **kwargs)
    # The module is not moved: PyTorch's function needs it on device_ids[0] already.
    ids, out = _resolve("data_parallel", device_ids, output_device)
    return _run(module, inputs, kwargs, ids, out)
