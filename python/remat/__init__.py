"""remat: a Rust tensor and autograd engine with gradient checkpointing that really saves memory.

The engine lives in the compiled extension ``remat._remat``; this package re-exports it and adds
the few Python conveniences (grad-mode context managers, submodules).
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, TypeVar

from . import _remat
from ._remat import (
    CheckpointError,
    DeviceError,
    DType,
    DTypeError,
    GraphError,
    IndexingError,
    DimensionError,
    ShapeError,
    Tensor,
    add,
    backward,
    broadcast_to,
    cat,
    chunk,
    clone,
    clamp,
    clip,
    concat,
    concatenate,
    cross_entropy,
    div,
    dropout,
    expand,
    expand_as,
    flatten,
    flip,
    bool_,
    float32,
    float64,
    bfloat16,
    float16,
    int32,
    int64,
    index_select,
    arange,
    linspace,
    eye,
    empty,
    empty_like,
    rand_like,
    randn_like,
    full_like,
    randint,
    as_tensor,
    multinomial,
    get_default_dtype,
    set_default_dtype,
    randperm,
    bernoulli,
    normal,
    tril,
    triu,
    gather,
    scatter_add,
    embedding,
    one_hot,
    nonzero,
    from_numpy,
    full,
    gelu,
    round as round,
    grad,
    is_grad_enabled,
    layer_norm,
    leaky_relu,
    lerp,
    linear,
    log_softmax,
    manual_seed,
    l1_loss,
    binary_cross_entropy_with_logits,
    binary_cross_entropy,
    nll_loss,
    scaled_dot_product_attention,
    lstm_layer,
    gru_layer,
    rnn_layer,
    conv1d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    conv2d,
    conv3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    pad,
    rms_norm,
    group_norm,
    batch_norm,
    checkpoint_name,
    Generator,
    initial_seed,
    set_num_threads,
    get_num_threads,
    matmul,
    mm,
    bmm,
    addmm,
    baddbmm,
    outer,
    einsum,
    max as max,
    min as min,
    amax,
    amin,
    argmax,
    argmin,
    argsort,
    sort,
    topk,
    unbind,
    roll,
    tile,
    repeat_interleave,
    meshgrid,
    diagonal,
    diag,
    trace,
    swapaxes,
    swapdims,
    take_along_dim,
    index_add,
    masked_select,
    count_nonzero,
    nan_to_num,
    isclose,
    allclose,
    equal,
    addcmul,
    addcdiv,
    var_mean,
    std_mean,
    all as all,
    any as any,
    prod,
    var,
    std,
    logsumexp,
    norm,
    cumsum,
    max_memory_allocated,
    maximum,
    mean,
    memory_allocated,
    movedim,
    minimum,
    atan2,
    mse_loss,
    mul,
    narrow,
    ones,
    ones_like,
    permute,
    pow as pow,
    rand,
    randn,
    repeat,
    reset_peak_memory_stats,
    set_memory_limit,
    get_memory_limit,
    memory_stats,
    set_rebuild_bound,
    get_rebuild_bound,
    reshape,
    softmax,
    split,
    squeeze,
    softplus,
    stack,
    sub,
    sum as sum,
    tensor,
    transpose,
    unflatten,
    unsqueeze,
    where,
    zeros,
    zeros_like,
)
# Comparisons, logical/bitwise ops, masking and floor division.
from ._remat import (
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    eq,
    floor_divide,
    ge,
    greater,
    greater_equal,
    gt,
    isfinite,
    isinf,
    isnan,
    le,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    masked_fill,
    ne,
    not_equal,
    remainder,
)
# The parameterless unary ops (`_remat._unary_ops`, from the core's elementwise table).
# BEGIN GENERATED: unary ops imports (tools/gen_bindings.py)
from ._remat import (
    neg,
    exp,
    log,
    sqrt,
    sin,
    cos,
    tan,
    tanh,
    sigmoid,
    relu,
    abs as abs,
    erf,
    rsqrt,
    square,
    log1p,
    expm1,
    sign,
    floor,
    ceil,
    asin,
    acos,
    atan,
    sinh,
    cosh,
    asinh,
    acosh,
    atanh,
    log2,
    log10,
    exp2,
    trunc,
    frac,
    reciprocal,
    silu,
)
# END GENERATED: unary ops imports

__version__: str = _remat.__version__

_F = TypeVar("_F", bound=Callable[..., Any])


class _GradMode:
    """Base of the grad-mode switches: a context manager and a decorator, re-entrant (one
    instance may be entered several times, nested), restoring the previous mode on exit."""

    _enabled: bool = True

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # `@remat.no_grad` without parentheses (as PyTorch accepts): the class called on the
        # function gives the decorated function.
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], bool):
            return cls()(args[0])
        return super().__new__(cls)

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_remat.set_grad_enabled(self._enabled))

    def __exit__(self, *exc: object) -> None:
        _remat.set_grad_enabled(self._prev.pop())

    def _fresh(self) -> _GradMode:
        """A new switch of the same kind (each decorated call enters its own)."""
        return type(self)()

    def __call__(self, fn: _F) -> _F:
        mode = self._fresh
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = fn(*args, **kwargs)
                # Each resumption runs under the mode, as PyTorch does for generators; the
                # generator's end (StopIteration) ends this one with its return value.
                try:
                    with mode():
                        value = next(gen)
                    while True:
                        try:
                            sent = yield value
                        except GeneratorExit:
                            with mode():
                                gen.close()
                            raise
                        except BaseException as e:  # forwarded into the generator
                            with mode():
                                value = gen.throw(e)
                        else:
                            with mode():
                                value = gen.send(sent)
                except StopIteration as stop:
                    return stop.value

            return gen_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with mode():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """Disable graph recording: ``with remat.no_grad(): ...`` or ``@remat.no_grad()``.

    Inside the block (or the decorated function) ops record no graph: their results have
    ``requires_grad=False`` and keep nothing for backward, so no activation memory is held.
    Re-entrant: one instance may be entered several times, nested; on exit the previous mode
    comes back (also after an exception). Grad mode is per thread. As a decorator it needs
    the parentheses (``@remat.no_grad()``); a decorated generator function runs each
    resumption under the mode, as in PyTorch.

    Raises
    ------
    TypeError
        When given an argument: ``remat.no_grad(fn)`` (the bare ``@remat.no_grad``
        decorator form, without parentheses) is not supported.

    Examples
    --------
    >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
    >>> with remat.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    >>> remat.is_grad_enabled()
    True
    >>> @remat.no_grad()
    ... def double(t):
    ...     return t * 2
    >>> double(x).requires_grad
    False
    """

    _enabled = False


class enable_grad(_GradMode):
    """Enable graph recording inside a ``no_grad`` region (context manager or decorator).

    The previous mode comes back on exit; re-entrant like :class:`no_grad`. As a decorator
    it needs the parentheses (``@remat.enable_grad()``).

    Raises
    ------
    TypeError
        When given an argument (``remat.enable_grad(fn)``: the bare decorator form is not
        supported).

    Examples
    --------
    >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
    >>> with remat.no_grad():
    ...     with remat.enable_grad():
    ...         y = x * 2
    ...     z = x * 2
    >>> y.requires_grad, z.requires_grad
    (True, False)
    >>> y.sum().backward()
    >>> x.grad
    tensor([2., 2.])
    """

    _enabled = True


class inference_mode(_GradMode):
    """Run without graph recording: ``with remat.inference_mode(): ...`` or as a decorator.

    Graph recording is off, as for :class:`no_grad`, and :func:`is_inference_mode_enabled`
    returns True inside; ``inference_mode(False)`` leaves both modes as they are. remat has
    no separate "inference tensors" (unlike PyTorch): what is computed inside is an ordinary
    tensor that can later be used in autograd. The previous modes come back on exit.

    Parameters
    ----------
    mode : bool, optional
        Whether to switch inference mode (and so graph recording off) on; any value is
        taken by its truth. Default: ``True``.

    Raises
    ------
    TypeError
        When given more than one argument (``mode`` is the only one).

    Examples
    --------
    >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
    >>> with remat.inference_mode():
    ...     y = x * 2
    ...     remat.is_inference_mode_enabled(), remat.is_grad_enabled()
    (True, False)
    >>> y.requires_grad
    False
    >>> (y * x).requires_grad  # usable in autograd afterwards
    True
    >>> with remat.inference_mode(False):
    ...     remat.is_inference_mode_enabled()
    False
    """

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._mode = bool(mode)
        self._inference_prev: list[bool] = []

    def _fresh(self) -> _GradMode:
        return inference_mode(self._mode)

    def __enter__(self) -> None:
        self._inference_prev.append(is_inference_mode_enabled())
        if self._mode:
            _inference_state.on = True
            self._prev.append(_remat.set_grad_enabled(False))

    def __exit__(self, *exc: object) -> None:
        if self._mode:
            _remat.set_grad_enabled(self._prev.pop())
        _inference_state.on = self._inference_prev.pop()


# Per thread, like grad mode itself.
_inference_state = threading.local()


def is_inference_mode_enabled() -> bool:
    """Whether an :class:`inference_mode` block is active on this thread.

    Returns
    -------
    bool
        True inside ``with remat.inference_mode():`` (or a function decorated with it) on
        the calling thread, False elsewhere (also inside ``inference_mode(False)`` when no
        outer block is active).

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.is_inference_mode_enabled()
    False
    >>> with remat.inference_mode():
    ...     remat.is_inference_mode_enabled()
    True
    """
    return bool(getattr(_inference_state, "on", False))


class set_grad_enabled:
    """Set grad mode now (``remat.set_grad_enabled(False)``) or for a block
    (``with remat.set_grad_enabled(False): ...`` restores the previous mode on exit).

    The mode is set when the object is constructed, so a plain call takes effect at once
    and stays until changed; as a context manager the mode that was active before the call
    comes back on exit. Grad mode is per thread. Unlike PyTorch's, it is not a decorator.

    Parameters
    ----------
    mode : bool
        True records graphs (the default state), False does not; any value is taken by its
        truth.

    Raises
    ------
    TypeError
        When ``mode`` is missing.

    Examples
    --------
    >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
    >>> with remat.set_grad_enabled(False):
    ...     (x * 2).requires_grad
    False
    >>> remat.is_grad_enabled()
    True
    >>> _ = remat.set_grad_enabled(False)
    >>> remat.is_grad_enabled()
    False
    >>> _ = remat.set_grad_enabled(True)
    >>> (x * 2).requires_grad
    True
    """

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev = _remat.set_grad_enabled(self._mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _remat.set_grad_enabled(self._prev)

    def __call__(self, fn: _F) -> _F:
        """As a decorator (``@remat.set_grad_enabled(False)``): the mode the constructor set
        is undone, and each call of ``fn`` runs under it instead, as in PyTorch."""
        _remat.set_grad_enabled(self._prev)
        return (enable_grad() if self._mode else no_grad())(fn)


def is_tensor(obj: object) -> bool:
    """Whether ``obj`` is a remat Tensor (PyTorch's ``is_tensor``).

    Parameters
    ----------
    obj : object
        Anything.

    Returns
    -------
    bool

    Raises
    ------
    None
        Nothing is raised.

    Examples
    --------
    >>> remat.is_tensor(remat.ones(2)), remat.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of a tensor (PyTorch's ``numel``; ``input.numel()``).

    Parameters
    ----------
    input : Tensor
        The tensor.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        When ``input`` is not a Tensor.

    Examples
    --------
    >>> remat.numel(remat.zeros(2, 3))
    6
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"numel(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.numel()


# `max`, `min`, `all`, `any`, `sum` and `pow` stay out of `__all__` so `from remat import *`
# does not shadow the builtins; they are still `remat.max` etc.
__all__ = [
    "AutoCheckpointPlan", "auto_checkpoint",
    "CheckpointError", "CheckpointGroup", "CheckpointProfiler", "DType", "DTypeError",
    "DeviceError", "DimensionError", "GraphError", "IndexingError", "ShapeError", "Tensor",
    "adaptive_checkpoint",
    "add", "backward", "checkpoint", "checkpoint_scope", "checkpoint_segment",
    "checkpoint_sequential", "clamp", "clip", "concat", "cross_entropy", "cuda", "div", "dropout",
    "enable_grad", "device", "autograd", "Generator", "initial_seed", "testing",
    "backends", "set_float32_matmul_precision", "get_float32_matmul_precision",
    "accelerator", "distributed",
    "amp", "autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
    "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "l1_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy", "nll_loss",
    "scaled_dot_product_attention",
    "lstm_layer", "gru_layer", "rnn_layer",
    "from_dlpack", "finfo", "iinfo", "is_floating_point", "inference_mode",
    "is_inference_mode_enabled",
    "float32", "float64", "bfloat16", "float16", "half", "int64", "int32", "bool_", "long",
    "double",
    "from_numpy", "full", "gelu", "grad",
    "gradient_checkpoint_forward", "gradient_checkpoint_scope", "is_grad_enabled", "layer_norm",
    "leaky_relu", "lerp", "linear", "live_checkpoint_state", "sequential_plan",
    "load", "log_softmax", "manual_seed", "matmul", "max_memory_allocated", "maximum", "mean",
    "set_memory_limit", "get_memory_limit", "memory_limit", "memory_stats",
    "set_rebuild_bound", "get_rebuild_bound",
    "memory_allocated", "minimum", "atan2", "mse_loss", "mul", "nn", "no_grad", "ones", "ones_like",
    "optim", "permute", "return_types", "rand", "randn", "reset_peak_memory_stats", "reshape",
    "save",
    "set_checkpoint_early_stop", "set_grad_enabled", "set_num_threads",
    "get_num_threads", "softmax", "softplus", "stack", "sub",
    "tensor", "transpose", "utils", "where", "zeros", "zeros_like",
    # convolution, pooling, padding
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "pad", "rms_norm", "group_norm", "batch_norm",
    # selective checkpointing
    "checkpoint_name", "checkpoint_policies",
    # shape and join ops
    "broadcast_to", "cat", "chunk", "clone", "concatenate", "expand", "expand_as", "flatten",
    "flip", "movedim", "narrow", "repeat", "split", "squeeze", "unflatten", "unsqueeze",
    # structured constructors
    "arange", "linspace", "eye", "empty", "empty_like", "rand_like", "randn_like", "full_like",
    "randint", "as_tensor", "tril", "triu", "multinomial", "randperm", "bernoulli", "normal",
    "get_default_dtype", "set_default_dtype",
    # selection by integer index
    "index_select", "gather", "scatter_add", "embedding", "one_hot", "nonzero",
    # linear algebra
    "addmm", "baddbmm", "bmm", "einsum", "mm", "outer",
    # reductions
    "amax", "amin", "argmax", "argmin", "cumsum", "logsumexp", "norm", "prod", "std", "var",
    # ordering
    "argsort", "sort", "topk",
    # rearranging
    "unbind", "roll", "tile", "repeat_interleave", "meshgrid", "diagonal", "diag", "trace",
    "swapaxes", "swapdims",
    # composites
    "take_along_dim", "index_add", "masked_select", "count_nonzero", "nan_to_num", "addcmul",
    "addcdiv",
    "var_mean", "std_mean",
    # closeness and tensor predicates
    "isclose", "allclose", "equal", "is_tensor", "numel",
    # comparisons, logical/bitwise, masking, floor division
    "eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "floor_divide", "remainder", "logical_not", "bitwise_not", "isnan", "isinf",
    "isfinite", "masked_fill",
    # BEGIN GENERATED: unary ops __all__ (tools/gen_bindings.py)
    "neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf", "rsqrt",
    "square", "log1p", "expm1", "sign", "floor", "ceil", "asin", "acos", "atan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "log2", "log10", "exp2", "trunc", "frac", "reciprocal", "silu",
    # END GENERATED: unary ops __all__
]

from .checkpoint import (  # noqa: E402
    CheckpointGroup,
    CheckpointProfiler,
    adaptive_checkpoint,
    checkpoint,
    checkpoint_scope,
    checkpoint_segment,
    checkpoint_sequential,
    gradient_checkpoint_forward,
    gradient_checkpoint_scope,
    live_checkpoint_state,
    sequential_plan,
    set_checkpoint_early_stop,
)
from . import nn, optim, cuda, utils, return_types, autograd, testing  # noqa: E402
from . import checkpoint_policies  # noqa: E402
from .auto_checkpoint import auto_checkpoint, AutoCheckpointPlan  # noqa: E402
from ._memory_cap import memory_limit  # noqa: E402
from ._device import device  # noqa: E402
from ._dlpack import from_dlpack  # noqa: E402
from ._dtype_info import finfo, iinfo, is_floating_point  # noqa: E402
from .serialization import save, load  # noqa: E402
from . import backends  # noqa: E402
from . import accelerator  # noqa: E402
from . import amp  # noqa: E402
from . import distributed  # noqa: E402
from .amp import autocast  # noqa: E402
from ._remat import (  # noqa: E402
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402

# einops picks a backend for a tensor type among the subclasses of its AbstractBackend, at
# its first call on that type: defining remat's (when einops is installed) registers it.
try:
    from . import _einops_backend  # noqa: E402, F401
except ImportError as _err:
    if not (_err.name or "").startswith("einops"):
        raise

# PyTorch's dtype spellings. `remat.bool`, `remat.float` and `remat.int` (int32, as `torch.int`)
# would shadow the builtins inside this module, so they are served by the module `__getattr__`
# (and stay out of `__all__`).
long = int64
double = float64
half = float16
_BUILTIN_NAMED_DTYPES = {"bool": bool_, "float": float32, "int": int32}


def __getattr__(name: str) -> Any:
    try:
        return _BUILTIN_NAMED_DTYPES[name]
    except KeyError:
        raise AttributeError(f"module 'remat' has no attribute {name!r}") from None
