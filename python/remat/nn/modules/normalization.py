"""Normalisation modules with ``torch.nn``'s names, arguments and initialisation
(``LayerNorm``, ``RMSNorm``, ``GroupNorm``; as ``torch.nn.modules.normalization``): they hold
the affine parameters and call the engine's ``layer_norm`` / ``rms_norm`` / ``group_norm``."""

from __future__ import annotations

from typing import Any

import remat

from ... import _validate
from ..._remat import Tensor
from .linear import _filled
from .module import Module, _fmt_shape

__all__ = ["LayerNorm", "RMSNorm", "GroupNorm"]


class LayerNorm(Module):
    """Normalises over the trailing axes given by ``normalized_shape``, then scales by
    ``weight`` (ones) and shifts by ``bias`` (zeros).

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with the mean and the (biased)
    variance taken over the last ``len(normalized_shape)`` axes of each input.

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The shape of the trailing axes to normalise over; an int means the last axis only.
    eps : float, optional
        Added to the variance for stability, ``>= 0``. Default: ``1e-5``.
    elementwise_affine : bool, optional
        Learn ``weight`` and ``bias`` of shape ``normalized_shape``; with ``False`` both are
        ``None``. Default: ``True``.
    bias : bool, optional
        Learn ``bias`` (only with ``elementwise_affine``); with ``False`` it is ``None``.
        Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When an entry of ``normalized_shape`` is not an int, or ``eps`` is not a number.
    ValueError
        When ``normalized_shape`` is empty or has a negative entry, or ``eps`` is negative.

    Examples
    --------
    >>> ln = remat.nn.LayerNorm(3)
    >>> ln
    LayerNorm((3,), eps=1e-05, elementwise_affine=True)
    >>> ln(remat.tensor([[1.0, 2.0, 3.0]]))
    tensor([[-1.2247,  0.0000,  1.2247]], grad_fn=<layer_norm>)
    >>> remat.nn.LayerNorm((2, 3))(remat.ones(4, 2, 3)).shape
    (4, 2, 3)
    """

    def __init__(
        self,
        normalized_shape: int | tuple,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        dims = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (
            normalized_shape,)
        if len(dims) == 0:
            raise ValueError("LayerNorm: normalized_shape must name at least one axis")
        shape = tuple(
            _validate.integer("LayerNorm", "normalized_shape", d, minimum=0) for d in dims
        )
        self.normalized_shape = shape
        self.eps = _validate.nonnegative("LayerNorm", "eps", eps)
        self.elementwise_affine = elementwise_affine
        kw = {} if dtype is None else {"dtype": dtype}
        if device is not None:
            kw["device"] = device
        if elementwise_affine:
            self.weight = remat.ones(*shape, requires_grad=True, **kw)
            if bias:
                self.bias = remat.zeros(*shape, requires_grad=True, **kw)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` over its trailing ``normalized_shape`` axes (``remat.layer_norm``).

        Parameters
        ----------
        x : Tensor
            Input of shape ``(*, *normalized_shape)``.

        Returns
        -------
        Tensor
            The normalised tensor, same shape as ``x``.

        Raises
        ------
        remat.ShapeError
            When the trailing axes of ``x`` are not ``normalized_shape``.

        Examples
        --------
        >>> remat.nn.LayerNorm(3)(remat.ones(2, 4))
        Traceback (most recent call last):
            ...
        remat.ShapeError: LayerNorm: expected input with trailing axes (3,), got shape (2, 4)
        """
        k = len(self.normalized_shape)
        if tuple(x.shape[-k:]) != self.normalized_shape:
            raise remat.ShapeError(
                f"LayerNorm: expected input with trailing axes {self.normalized_shape}, got "
                f"shape {_fmt_shape(x.shape)}"
            )
        return remat.layer_norm(x, self.normalized_shape, self.weight, self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        """``"(normalized_shape), eps=..., elementwise_affine=..."``.

        Returns
        -------
        str
            The text inside ``LayerNorm(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.LayerNorm((2, 3), eps=1e-6, elementwise_affine=False).extra_repr()
        '(2, 3), eps=1e-06, elementwise_affine=False'
        """
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class RMSNorm(Module):
    """``x / sqrt(mean(x², trailing axes) + eps) * weight`` over the trailing axes of
    ``normalized_shape``; ``eps=None`` uses the input dtype's machine epsilon, as PyTorch.

    Unlike :class:`LayerNorm` there is no mean subtraction and no bias.

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The shape of the trailing axes to normalise over; an int means the last axis only.
    eps : float or None, optional
        Added to the mean square, ``>= 0``. Default: ``None`` (the machine epsilon of the
        input's dtype).
    elementwise_affine : bool, optional
        Learn ``weight`` (ones) of shape ``normalized_shape``; with ``False`` it is
        ``None``. Default: ``True``.
    device : str or remat.device, optional
        Where the parameter lives. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameter's floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When an entry of ``normalized_shape`` is not an int, or ``eps`` is not a number.
    ValueError
        When ``normalized_shape`` is empty or has a negative entry, or ``eps`` is negative.

    Examples
    --------
    >>> norm = remat.nn.RMSNorm(3)
    >>> norm
    RMSNorm((3,), eps=None, elementwise_affine=True)
    >>> norm(remat.tensor([[1.0, 2.0, 3.0]]))
    tensor([[0.4629, 0.9258, 1.3887]], grad_fn=<...>)
    >>> remat.nn.RMSNorm((2, 3), eps=1e-6)(remat.ones(4, 2, 3)).shape
    (4, 2, 3)
    """

    def __init__(
        self,
        normalized_shape: int | tuple,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        dims = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (
            normalized_shape,)
        if len(dims) == 0:
            raise ValueError("RMSNorm: normalized_shape must name at least one axis")
        self.normalized_shape = tuple(
            _validate.integer("RMSNorm", "normalized_shape", d, minimum=0) for d in dims
        )
        self.eps = None if eps is None else _validate.nonnegative("RMSNorm", "eps", eps)
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = _filled(1.0, self.normalized_shape, device, dtype)
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` over its trailing ``normalized_shape`` axes (``remat.rms_norm``).

        Parameters
        ----------
        x : Tensor
            Input of shape ``(*, *normalized_shape)``.

        Returns
        -------
        Tensor
            Same shape as ``x``.

        Raises
        ------
        remat.ShapeError
            When the trailing axes of ``x`` are not ``normalized_shape``.

        Examples
        --------
        >>> remat.nn.RMSNorm(3)(remat.ones(2, 4))
        Traceback (most recent call last):
            ...
        remat.ShapeError: rms_norm: normalized_shape (3,) must be the trailing axes of ...
        """
        return remat.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """``"(normalized_shape), eps=..., elementwise_affine=..."``.

        Returns
        -------
        str
            The text inside ``RMSNorm(...)`` in the module's repr (``eps=None`` when not given).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.RMSNorm(4).extra_repr()
        '(4,), eps=None, elementwise_affine=True'
        """
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalises ``(N, C, *)`` inputs over ``num_groups`` groups of channels, then applies a
    per-channel ``weight`` (ones) and ``bias`` (zeros).

    The mean and (biased) variance are taken per sample over each group of
    ``C // num_groups`` channels and all their spatial positions; the statistics do not
    depend on the batch, so training and eval mode compute the same thing.

    Parameters
    ----------
    num_groups : int
        Number of channel groups, ``>= 1``; must divide ``num_channels``.
    num_channels : int
        ``C``, the channels of the input, ``>= 1``.
    eps : float, optional
        Added to the variance, ``>= 0``. Default: ``1e-5``.
    affine : bool, optional
        Learn per-channel ``weight`` and ``bias`` of shape ``(num_channels,)``; with
        ``False`` both are ``None``. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``num_groups`` or ``num_channels`` is not an int, or ``eps`` is not a number.
    ValueError
        When ``num_groups`` or ``num_channels`` is below 1, ``num_groups`` does not divide
        ``num_channels``, or ``eps`` is negative.

    Examples
    --------
    >>> gn = remat.nn.GroupNorm(2, 4)
    >>> gn
    GroupNorm(2, 4, eps=1e-05, affine=True)
    >>> gn(remat.ones(2, 4, 5, 5)).shape
    (2, 4, 5, 5)
    >>> remat.nn.GroupNorm(2, 3)
    Traceback (most recent call last):
        ...
    ValueError: GroupNorm: num_channels (3) must be divisible by num_groups (2)
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        num_groups = _validate.integer("GroupNorm", "num_groups", num_groups, minimum=1)
        num_channels = _validate.integer("GroupNorm", "num_channels", num_channels, minimum=1)
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                f"({num_groups})"
            )
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps = _validate.nonnegative("GroupNorm", "eps", eps)
        self.affine = affine
        if affine:
            self.weight = _filled(1.0, (num_channels,), device, dtype)
            self.bias = _filled(0.0, (num_channels,), device, dtype)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` per sample and channel group (``remat.group_norm``).

        Parameters
        ----------
        x : Tensor
            Input of shape ``(N, num_channels, *)``.

        Returns
        -------
        Tensor
            Same shape as ``x``.

        Raises
        ------
        remat.ShapeError
            When the channel axis does not fit ``num_groups`` or the affine parameters.

        Examples
        --------
        >>> x = remat.arange(8.0).reshape(1, 4, 2)
        >>> remat.nn.GroupNorm(2, 4)(x)[0, :2]
        tensor([[-1.3416, -0.4472],
                [ 0.4472,  1.3416]], grad_fn=<...>)
        """
        return remat.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``"num_groups, num_channels, eps=..., affine=..."``.

        Returns
        -------
        str
            The text inside ``GroupNorm(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.GroupNorm(2, 4).extra_repr()
        '2, 4, eps=1e-05, affine=True'
        """
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
