"""``BatchNorm1d/2d/3d`` with ``torch.nn``'s names, arguments and initialisation (as
``torch.nn.modules.batchnorm``): the affine parameters, the running statistics as buffers,
and the engine's ``batch_norm``, which updates them once per step under checkpointing."""

from __future__ import annotations

from typing import Any

import remat

from ... import _remat, _validate
from ..._remat import Tensor
from .linear import _filled
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]



class _BatchNorm(Module):
    """PyTorch's ``_BatchNorm``: the parameters, the running statistics (buffers
    ``running_mean``, ``running_var`` and the int64 0-d ``num_batches_tracked``, so
    ``state_dict()`` has PyTorch's keys) and the forward; the subclasses only check the input's
    rank. A checkpoint's recompute of the forward updates neither the running statistics nor
    ``num_batches_tracked`` again (PyTorch updates both once more per recompute)."""

    _ranks: tuple[int, ...] = ()
    _expected = ""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.num_features = _validate.integer(name, "num_features", num_features, minimum=1)
        self.eps = _validate.nonnegative(name, "eps", eps)
        self.momentum = None if momentum is None else _validate.real(name, "momentum", momentum)
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        shape = (self.num_features,)
        if self.affine:
            self.weight = _filled(1.0, shape, device, dtype)
            if bias:
                self.bias = _filled(0.0, shape, device, dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            kw: dict = {} if dtype is None else {"dtype": dtype}
            stats = [remat.zeros(shape, **kw), remat.ones(shape, **kw),
                     remat.tensor(0, dtype=remat.int64)]
            if device is not None and str(device) != "cpu":
                stats = [t.to(device) for t in stats]
            self.register_buffer("running_mean", stats[0])
            self.register_buffer("running_var", stats[1])
            self.register_buffer("num_batches_tracked", stats[2])
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Set ``running_mean`` to zeros, ``running_var`` to ones and ``num_batches_tracked``
        to 0, in place (nothing without ``track_running_stats``).

        Returns
        -------
        None

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> bn = remat.nn.BatchNorm1d(2)
        >>> _ = bn(remat.tensor([[1.0, 2.0], [3.0, 6.0]]))
        >>> bn.num_batches_tracked.item(), bn.running_mean
        (1, tensor([0.2, 0.4]))
        >>> bn.reset_running_stats()
        >>> bn.num_batches_tracked.item(), bn.running_mean, bn.running_var
        (0, tensor([0., 0.]), tensor([1., 1.]))
        """
        if self.track_running_stats:
            with remat.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """:meth:`reset_running_stats`, and ``weight`` back to ones and ``bias`` to zeros
        (PyTorch's initialisation), in place.

        Returns
        -------
        None

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> bn = remat.nn.BatchNorm1d(2)
        >>> with remat.no_grad():
        ...     _ = bn.weight.mul_(3.0)
        >>> bn.reset_parameters()
        >>> bn.weight
        tensor([1., 1.], requires_grad=True)
        """
        self.reset_running_stats()
        if self.affine:
            with remat.no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.zero_()

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in self._ranks:
            raise ValueError(f"expected {self._expected} input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input`` per channel (``remat.batch_norm``): by the batch's statistics
        in training mode (updating the running ones, and ``num_batches_tracked`` by one) or
        without running statistics, by the running statistics in eval mode.

        With ``momentum=None`` the running statistics are the cumulative average of every
        batch's (factor ``1 / num_batches_tracked``), as PyTorch.

        Parameters
        ----------
        input : Tensor
            ``(N, num_features, *)`` of the rank the class takes.

        Returns
        -------
        Tensor
            Same shape as ``input``.

        Raises
        ------
        ValueError
            When ``input`` has another rank (PyTorch's message, e.g. ``expected 4D input (got
            3D input)``), or in training mode when a channel has one value only.
        remat.ShapeError
            When the channel axis is not ``num_features`` long.

        Examples
        --------
        >>> bn = remat.nn.BatchNorm2d(2)
        >>> bn(remat.ones(3, 2, 4, 4)).shape
        (3, 2, 4, 4)
        >>> bn(remat.ones(2, 4, 4))
        Traceback (most recent call last):
            ...
        ValueError: expected 4D input (got 3D input)
        """
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        tracked = self.num_batches_tracked
        if self.training and self.track_running_stats and tracked is not None:
            # A checkpoint's recompute of this forward counts nothing: the step already did.
            if not _remat._is_recomputing():
                with remat.no_grad():
                    tracked.add_(1)
            if self.momentum is None:  # the cumulative moving average
                factor = 1.0 / float(tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        # Statistics that are not tracked are neither read nor updated in training.
        keep = not self.training or self.track_running_stats
        return remat.batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        """PyTorch's text: ``"C, eps=..., momentum=..., affine=..., bias=...,
        track_running_stats=..."``.

        Returns
        -------
        str
            The text inside ``BatchNorm2d(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.BatchNorm2d(4, momentum=None).extra_repr()
        '4, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True'
        """
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


_BN_PARAMETERS = """
    Parameters
    ----------
    num_features : int
        ``C``, the channels of the input, ``>= 1``.
    eps : float, optional
        Added to the variance, ``>= 0`` (positive to train). Default: ``1e-5``.
    momentum : float or None, optional
        The weight of a batch's statistics in the running ones; ``None``: their cumulative
        average over ``num_batches_tracked`` batches. Default: ``0.1``.
    affine : bool, optional
        Learn per-channel ``weight`` (ones) and ``bias`` (zeros) of shape ``(C,)``; with
        ``False`` both are ``None``. Default: ``True``.
    track_running_stats : bool, optional
        Keep the running statistics (buffers ``running_mean``, ``running_var``,
        ``num_batches_tracked``); with ``False`` they are ``None`` and the batch's statistics
        normalise in eval mode too. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters and buffers live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' and running statistics' floating dtype. Default: ``None`` (float32).
    bias : bool, optional
        Keyword only: with ``affine``, learn ``bias`` too. Default: ``True``.

    Raises
    ------
    TypeError
        When ``num_features`` is not an int, or ``eps`` or ``momentum`` is not a number.
    ValueError
        When ``num_features`` is below 1 or ``eps`` is negative.
"""


class BatchNorm1d(_BatchNorm):
    __doc__ = """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs, as
    ``torch.nn.BatchNorm1d``: each channel normalised by the batch's mean and biased variance
    in training mode (updating the running statistics: ``(1 - momentum) * running + momentum *
    stat``, the variance's unbiased), by the running statistics in eval mode; then the
    per-channel ``weight`` and ``bias``.
""" + _BN_PARAMETERS + """
    Examples
    --------
    >>> bn = remat.nn.BatchNorm1d(2)
    >>> bn
    BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> x = remat.tensor([[1.0, 2.0], [3.0, 6.0]])
    >>> bn(x)
    tensor([[-1.0000, -1.0000],
            [ 1.0000,  1.0000]], grad_fn=<...>)
    >>> bn.running_mean, bn.running_var
    (tensor([0.2000, 0.4000]), tensor([1.1000, 1.7000]))
    >>> list(bn.state_dict())
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """
    _ranks = (2, 3)
    _expected = "2D or 3D"


class BatchNorm2d(_BatchNorm):
    __doc__ = """Batch normalisation of ``(N, C, H, W)`` inputs, as ``torch.nn.BatchNorm2d``:
    each channel normalised over the batch and every position by the batch's mean and biased
    variance in training mode (updating the running statistics: ``(1 - momentum) * running +
    momentum * stat``, the variance's unbiased), by the running statistics in eval mode; then
    the per-channel ``weight`` and ``bias``.
""" + _BN_PARAMETERS + """
    Examples
    --------
    >>> bn = remat.nn.BatchNorm2d(3)
    >>> y = bn(remat.randn(4, 3, 5, 5))
    >>> y.shape, bn.num_batches_tracked.item()
    ((4, 3, 5, 5), 1)
    >>> with remat.no_grad():
    ...     _ = bn.running_mean.fill_(1.0)
    ...     _ = bn.running_var.fill_(4.0)
    >>> bn.eval()(remat.full((1, 3, 1, 1), 5.0)).flatten()  # (5 - 1) / sqrt(4 + eps)
    tensor([2.0000, 2.0000, 2.0000], grad_fn=<...>)
    """
    _ranks = (4,)
    _expected = "4D"


class BatchNorm3d(_BatchNorm):
    __doc__ = """Batch normalisation of ``(N, C, D, H, W)`` inputs, as
    ``torch.nn.BatchNorm3d``: each channel normalised over the batch and every position by
    the batch's mean and biased variance in training mode (updating the running statistics),
    by the running statistics in eval mode; then the per-channel ``weight`` and ``bias``.
""" + _BN_PARAMETERS + """
    Examples
    --------
    >>> bn = remat.nn.BatchNorm3d(2, affine=False, track_running_stats=False)
    >>> bn
    BatchNorm3d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
    >>> bn(remat.randn(2, 2, 3, 3, 3)).shape
    (2, 2, 3, 3, 3)
    >>> bn.running_mean is None
    True
    """
    _ranks = (5,)
    _expected = "5D"
