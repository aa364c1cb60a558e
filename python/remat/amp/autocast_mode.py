"""``remat.autocast``: the context manager and decorator around the engine's autocast state
(``remat_core::autocast``), with PyTorch's arguments, warnings and errors.

Inside an enabled region, the ops of PyTorch's lists run in the device's lower-precision
dtype (matrix products, convolutions, attention), in float32 (losses; on CUDA also softmax,
norms, exp/log/pow and sums) or in the widest float of their inputs; every other op runs on
its inputs as they are. Parameters stay float32: their casts are differentiable ops, cached
for the outermost region. A checkpoint records the state of its forward and recomputes under
it.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, TypeVar

from .. import _remat

_F = TypeVar("_F", bound=Callable[..., Any])


class autocast:
    """Run ops in mixed precision, as ``torch.autocast``: a context manager and a decorator.

    Parameters
    ----------
    device_type : str
        ``"cpu"`` or ``"cuda"``: the device kind whose ops are cast.
    dtype : dtype, optional
        The lower-precision dtype, ``remat.bfloat16`` or ``remat.float16``. Default: ``None``,
        the device's current one (bfloat16 on the CPU, float16 on CUDA).
    enabled : bool, optional
        ``False`` makes a region that turns autocast off (inside an enabled one, say).
        Default: ``True``.
    cache_enabled : bool, optional
        Cache the casts of parameters for the outermost region. Default: ``None``, the
        current setting (``True`` unless changed).

    Raises
    ------
    ValueError
        When ``device_type`` is not a string.
    RuntimeError
        When ``device_type`` is neither ``"cpu"`` nor ``"cuda"``.
    DTypeError
        When a CUDA region is given a dtype other than bfloat16 or float16. (A CPU region
        given one warns and turns autocast off, as PyTorch's does; so does a CUDA region on
        a machine without a GPU.)

    Examples
    --------
    >>> lin = remat.nn.Linear(4, 3)
    >>> x = remat.randn(2, 4)
    >>> with remat.autocast("cpu", dtype=remat.bfloat16):
    ...     y = lin(x)
    ...     loss = y.float().pow(2).mean()
    >>> y.dtype, loss.dtype, lin.weight.dtype
    (remat.bfloat16, remat.float32, remat.float32)
    >>> loss.backward()
    >>> lin.weight.grad.dtype
    remat.float32
    >>> @remat.autocast("cpu")
    ... def forward(x):
    ...     return lin(x)
    >>> forward(x).dtype
    remat.bfloat16
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        # Asking for the device's dtype validates the device kind, as PyTorch does here.
        self.fast_dtype = _remat.get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        self._cache_enabled = cache_enabled
        halves = (_remat.bfloat16, _remat.float16)
        if enabled and device_type == "cuda" and self.fast_dtype not in halves:
            raise _remat.DTypeError(
                f"autocast: CUDA autocast only supports bfloat16 and float16 as its dtype, "
                f"got {self.fast_dtype}")
        if enabled:
            if device_type == "cuda" and not _remat.cuda_is_available():
                warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                enabled = False
            elif device_type == "cpu" and self.fast_dtype not in halves:
                warnings.warn(
                    "In CPU autocast, but the target dtype is not supported. Disabling "
                    "autocast.\nCPU Autocast only supports dtypes of remat.bfloat16, "
                    "remat.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled
        self._regions: list[Any] = []

    def __enter__(self) -> autocast:
        # A dtype autocast cannot cast to only reaches here disabled (the constructor warned
        # or raised): the region then keeps the device's dtype.
        dtype = self.fast_dtype if self.fast_dtype in (_remat.bfloat16, _remat.float16) else None
        self._regions.append(
            _remat._autocast_enter(self.device, dtype, self._enabled, self._cache_enabled))
        return self

    def __exit__(self, *exc: object) -> None:
        self._regions.pop().exit()

    def __call__(self, func: _F) -> _F:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did "
                "you mean to use autocast as a context manager? For example:\n"
                "    with remat.autocast(device_type=...):\n        output = model(input)")
        args = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        def fresh() -> autocast:
            # Each call enters a region of its own (the decorated function may recurse or
            # run on several threads); the warnings were given once, here.
            region = autocast.__new__(autocast)
            region.device, region.fast_dtype, region._enabled, region._cache_enabled = args
            region._regions = []
            return region

        if inspect.isgeneratorfunction(func):
            raise TypeError("autocast cannot decorate a generator function; enter it inside")

        @functools.wraps(func)
        def decorated(*a: Any, **kw: Any) -> Any:
            with fresh():
                return func(*a, **kw)

        return decorated  # type: ignore[return-value]


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    """``value`` with its floating-point tensors of ``device_type`` cast to ``dtype``
    (through lists, tuples and dict values)."""
    if isinstance(value, _remat.Tensor):
        on_device = str(value.device).split(":")[0] == device_type
        return value.to(dtype) if value.is_floating_point() and on_device else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Any = None, *, device_type: str, cast_inputs: Any = None) -> Any:
    """Decorate the ``forward`` of a custom ``remat.autograd.Function`` for autocast, as
    ``torch.amp.custom_fwd``.

    Parameters
    ----------
    fwd : callable, optional
        The ``forward`` (``None`` when called with arguments only: ``@custom_fwd(...)``).
    device_type : str
        ``"cpu"`` or ``"cuda"``.
    cast_inputs : dtype, optional
        Inside an enabled region, cast the floating-point tensor arguments to this dtype and
        run ``forward`` with autocast off. Default: ``None`` (``forward``'s ops follow the
        current state).

    Returns
    -------
    callable
        The decorated ``forward`` (or a decorator).

    Raises
    ------
    ValueError
        When ``device_type`` is not a string.

    Examples
    --------
    >>> class Square(remat.autograd.Function):
    ...     @staticmethod
    ...     @remat.amp.custom_fwd(device_type="cpu", cast_inputs=remat.float32)
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     @remat.amp.custom_bwd(device_type="cpu")
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> with remat.autocast("cpu"):
    ...     Square.apply(remat.ones(2).bfloat16()).dtype
    remat.float32
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = _remat.get_autocast_dtype(device_type)
        enabled = _remat.is_autocast_enabled(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = enabled
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd: Any = None, *, device_type: str) -> Any:
    """Decorate the ``backward`` of a custom ``remat.autograd.Function``: it runs under the
    autocast state its ``forward`` ran under (as ``torch.amp.custom_bwd``).

    Parameters
    ----------
    bwd : callable, optional
        The ``backward`` (``None`` when called with arguments only).
    device_type : str
        ``"cpu"`` or ``"cuda"``.

    Returns
    -------
    callable
        The decorated ``backward`` (or a decorator).

    Raises
    ------
    ValueError
        When ``device_type`` is not a string.

    Examples
    --------
    >>> deco = remat.amp.custom_bwd(device_type="cpu")
    >>> callable(deco)
    True
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(*args, **kwargs)

    return decorate_bwd
