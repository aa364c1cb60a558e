"""Loss modules with ``torch.nn``'s constructor arguments, each calling the engine's
function of the same name (``remat.nn.functional``)."""

from __future__ import annotations

from typing import Any

import remat

from ..._remat import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(owner: str, size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        avg = True if size_average is None else bool(size_average)
        red = True if reduce is None else bool(reduce)
        return "none" if not red else ("mean" if avg else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"{owner}: reduction must be one of {_REDUCTIONS}, got {reduction!r}"
        )
    return reduction


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction(type(self).__name__, size_average, reduce, reduction)

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """Squared error ``(input - target)²``, reduced.

    Parameters
    ----------
    size_average : bool or None, optional
        Deprecated (as in PyTorch): with ``reduce``, overrides ``reduction`` (``False``
        means ``"sum"``). Default: ``None``.
    reduce : bool or None, optional
        Deprecated: ``False`` means ``"none"`` and overrides ``reduction``.
        Default: ``None``.
    reduction : str, optional
        ``"mean"``, ``"sum"`` or ``"none"`` (the per-element losses). Default: ``"mean"``.

    Raises
    ------
    ValueError
        When ``reduction`` is not ``"none"``, ``"mean"`` or ``"sum"`` (checked only when
        neither deprecated argument is given).

    Examples
    --------
    >>> x, y = remat.tensor([1.0, 2.0, 3.0]), remat.tensor([1.0, 0.0, 5.0])
    >>> remat.nn.MSELoss()(x, y)
    tensor(2.6667)
    >>> remat.nn.MSELoss(reduction="none")(x, y)
    tensor([0., 4., 4.])
    """

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """``F.mse_loss(input, target, reduction=self.reduction)``.

        As in PyTorch, a target of another shape warns (``UserWarning``) and is broadcast
        with ``input``.

        Parameters
        ----------
        input : Tensor
            Predictions, any shape.
        target : Tensor or array_like
            Targets of the same shape (or one that broadcasts with it).

        Returns
        -------
        Tensor
            A 0-d tensor, or the per-element losses (the broadcast shape) for ``"none"``.

        Raises
        ------
        remat.ShapeError
            When ``input`` and ``target`` do not broadcast.

        Examples
        --------
        >>> remat.nn.MSELoss(reduction="sum")(remat.tensor([1.0, 2.0]), remat.tensor([0.0, 0.0]))
        tensor(5.)
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Absolute error ``|input - target|``, reduced.

    Parameters
    ----------
    size_average : bool or None, optional
        Deprecated (as in PyTorch): with ``reduce``, overrides ``reduction`` (``False``
        means ``"sum"``). Default: ``None``.
    reduce : bool or None, optional
        Deprecated: ``False`` means ``"none"`` and overrides ``reduction``.
        Default: ``None``.
    reduction : str, optional
        ``"mean"``, ``"sum"`` or ``"none"`` (the per-element losses). Default: ``"mean"``.

    Raises
    ------
    ValueError
        When ``reduction`` is not ``"none"``, ``"mean"`` or ``"sum"`` (checked only when
        neither deprecated argument is given).

    Examples
    --------
    >>> x, y = remat.tensor([1.0, 2.0, 3.0]), remat.tensor([1.0, 0.0, 5.0])
    >>> remat.nn.L1Loss()(x, y)
    tensor(1.3333)
    >>> remat.nn.L1Loss(reduction="none")(x, y)
    tensor([0., 2., 2.])
    """

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """``F.l1_loss(input, target, reduction=self.reduction)``.

        As in PyTorch, a target of another shape warns (``UserWarning``) and is broadcast
        with ``input``.

        Parameters
        ----------
        input : Tensor
            Predictions, any shape.
        target : Tensor or array_like
            Targets of the same shape (or one that broadcasts with it).

        Returns
        -------
        Tensor
            A 0-d tensor, or the per-element losses (the broadcast shape) for ``"none"``.

        Raises
        ------
        remat.ShapeError
            When ``input`` and ``target`` do not broadcast.

        Examples
        --------
        >>> remat.nn.L1Loss(reduction="sum")(remat.tensor([1.0, -2.0]), remat.tensor([0.0, 0.0]))
        tensor(3.)
        """
        return F.l1_loss(input, target, reduction=self.reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(
                f"{type(self).__name__}: weight must be a Tensor or None, got "
                f"{type(weight).__name__}"
            )
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits against class indices or probabilities, with ``weight``,
    ``ignore_index``, ``reduction`` and ``label_smoothing`` as PyTorch.

    ``log_softmax`` over the class axis (axis 1, or the only axis of unbatched input) and
    the negative log-likelihood in one stable step; the input is the raw logits.

    Parameters
    ----------
    weight : Tensor or None, optional
        A rescaling weight per class, shape ``(C,)`` (kept as a buffer, so it is in
        ``state_dict`` and moved by ``to``). Default: ``None`` (all ones).
    size_average : bool or None, optional
        Deprecated: with ``reduce``, overrides ``reduction`` (``False`` means ``"sum"``).
        Default: ``None``.
    ignore_index : int, optional
        A target class index that contributes neither loss nor gradient (and is left out
        of the mean). Default: ``-100``.
    reduce : bool or None, optional
        Deprecated: ``False`` means ``"none"`` and overrides ``reduction``.
        Default: ``None``.
    reduction : str, optional
        ``"mean"`` (weighted mean over the non-ignored targets), ``"sum"`` or ``"none"``.
        Default: ``"mean"``.
    label_smoothing : float, optional
        In ``[0, 1]``: mix the target with the uniform distribution by this amount.
        Default: ``0.0``.

    Raises
    ------
    TypeError
        When ``weight`` is neither a Tensor nor ``None``, or ``label_smoothing`` is not a
        number.
    ValueError
        When ``reduction`` is not ``"none"``, ``"mean"`` or ``"sum"`` (checked only when
        neither deprecated argument is given), ``label_smoothing`` is outside ``[0, 1]``,
        or ``ignore_index`` cannot be converted by ``int()``.

    Examples
    --------
    >>> logits = remat.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]], requires_grad=True)
    >>> target = remat.tensor([0, 1])
    >>> loss = remat.nn.CrossEntropyLoss()(logits, target)
    >>> round(loss.item(), 4)
    0.3964
    >>> loss.backward()
    >>> logits.grad.shape
    (2, 3)
    >>> remat.nn.CrossEntropyLoss(reduction="none")(logits, target)
    tensor([0.2413, 0.5514], grad_fn=<...>)
    """

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(
                f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}"
            )
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """``remat.cross_entropy`` of the logits ``input`` against ``target``.

        Parameters
        ----------
        input : Tensor
            Logits of shape ``(N, C)``, ``(N, C, d1, ...)`` or unbatched ``(C,)``.
        target : Tensor or array_like
            Class indices (integers, shape ``(N,)``, ``(N, d1, ...)`` or ``()``), or class
            probabilities with the shape of ``input``.

        Returns
        -------
        Tensor
            A 0-d tensor, or the per-sample losses for ``"none"``.

        Raises
        ------
        remat.ShapeError
            When the shapes of ``input`` and ``target`` do not fit together.
        ValueError
            When a class index is out of range (and not ``ignore_index``).

        Examples
        --------
        >>> logits = remat.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]])
        >>> probs = remat.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        >>> round(remat.nn.CrossEntropyLoss()(logits, probs).item(), 4)
        0.3964
        >>> remat.nn.CrossEntropyLoss()(logits, remat.tensor([0, 5]))
        Traceback (most recent call last):
            ...
        ValueError: cross_entropy: target[1] = 5 is out of range for logits of shape (2, 3) ...
        """
        return remat.cross_entropy(input, target, weight=self.weight,
                                   ignore_index=self.ignore_index, reduction=self.reduction,
                                   label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at the target classes.

    ``-input[n, target[n]]`` (times ``weight[target[n]]``), reduced. Pair it with
    :class:`LogSoftmax`; :class:`CrossEntropyLoss` does both in one step.

    Parameters
    ----------
    weight : Tensor or None, optional
        A rescaling weight per class, shape ``(C,)`` (kept as a buffer). Default: ``None``.
    size_average : bool or None, optional
        Deprecated: with ``reduce``, overrides ``reduction`` (``False`` means ``"sum"``).
        Default: ``None``.
    ignore_index : int, optional
        A target class index that contributes neither loss nor gradient. Default: ``-100``.
    reduce : bool or None, optional
        Deprecated: ``False`` means ``"none"`` and overrides ``reduction``.
        Default: ``None``.
    reduction : str, optional
        ``"mean"`` (weighted mean), ``"sum"`` or ``"none"``. Default: ``"mean"``.

    Raises
    ------
    TypeError
        When ``weight`` is neither a Tensor nor ``None``.
    ValueError
        When ``reduction`` is not ``"none"``, ``"mean"`` or ``"sum"`` (checked only when
        neither deprecated argument is given).

    Examples
    --------
    >>> logp = remat.log_softmax(remat.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]]), dim=1)
    >>> remat.nn.NLLLoss(reduction="none")(logp, remat.tensor([0, 1]))
    tensor([0.2413, 0.5514])
    """

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = int(ignore_index)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """``remat.nll_loss`` of the log-probabilities ``input`` at ``target``.

        Parameters
        ----------
        input : Tensor
            Log-probabilities of shape ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target : Tensor or array_like
            Integer class indices of shape ``(N,)``, ``(N, d1, ...)`` or ``()``.

        Returns
        -------
        Tensor
            A 0-d tensor, or the per-sample losses for ``"none"``.

        Raises
        ------
        remat.ShapeError
            When the shapes of ``input`` and ``target`` do not fit together.
        ValueError
            When a class index is out of range (and not ``ignore_index``).

        Examples
        --------
        >>> logp = remat.log(remat.tensor([[0.5, 0.25, 0.25]]))
        >>> remat.nn.NLLLoss()(logp, remat.tensor([1]))
        tensor(1.3863)
        """
        return remat.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                              reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities, with ``weight``.

    ``-[y · log x + (1 - y) · log(1 - x)]`` per element (times ``weight``), each logarithm
    clamped at ``-100`` as PyTorch clamps it, then reduced. ``x`` must lie in ``[0, 1]``
    (a ``sigmoid``'s output, say); :class:`BCEWithLogitsLoss` takes the logits instead and is
    numerically stabler.

    Parameters
    ----------
    weight : Tensor or None, optional
        A rescaling weight broadcast against the per-element losses (kept as a buffer).
        Default: ``None``.
    size_average : bool or None, optional
        Deprecated: with ``reduce``, overrides ``reduction`` (``False`` means ``"sum"``).
        Default: ``None``.
    reduce : bool or None, optional
        Deprecated: ``False`` means ``"none"`` and overrides ``reduction``.
        Default: ``None``.
    reduction : str, optional
        ``"mean"``, ``"sum"`` or ``"none"``. Default: ``"mean"``.

    Raises
    ------
    TypeError
        When ``weight`` is neither a Tensor nor ``None``.
    ValueError
        When ``reduction`` is not ``"none"``, ``"mean"`` or ``"sum"`` (checked only when
        neither deprecated argument is given).

    Examples
    --------
    >>> x, y = remat.tensor([0.5, 0.9, 0.2]), remat.tensor([1.0, 1.0, 0.0])
    >>> remat.nn.BCELoss(reduction="none")(x, y)
    tensor([0.6931, 0.1054, 0.2231])
    >>> remat.nn.BCELoss()(x, y)
    tensor(0.3406)
    """

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """``remat.binary_cross_entropy`` of the probabilities ``input`` against ``target``.

        Parameters
        ----------
        input : Tensor
            Probabilities in ``[0, 1]``, any shape.
        target : Tensor or array_like
            Targets in ``[0, 1]`` of the same shape.

        Returns
        -------
        Tensor
            A 0-d tensor, or the per-element losses for ``"none"``.

        Raises
        ------
        remat.ShapeError
            When ``input`` and ``target`` have different shapes.
        ValueError
            When an element of ``input`` is outside ``[0, 1]``.

        Examples
        --------
        >>> remat.nn.BCELoss()(remat.tensor([0.5]), remat.tensor([1.0]))
        tensor(0.6931)
        """
        return remat.binary_cross_entropy(input, target, weight=self.weight,
                                          reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits (numerically stable), with ``weight`` and
    ``pos_weight``.

    ``-[pos_weight · y · log σ(x) + (1 - y) · log(1 - σ(x))]`` per element (times
    ``weight``), computed from the logits ``x`` without forming ``σ(x)``, then reduced.

    Parameters
    ----------
    weight : Tensor or None, optional
        A rescaling weight broadcast against the per-element losses (kept as a buffer).
        Default: ``None``.
    size_average : bool or None, optional
        Deprecated: with ``reduce``, overrides ``reduction`` (``False`` means ``"sum"``).
        Default: ``None``.
    reduce : bool or None, optional
        Deprecated: ``False`` means ``"none"`` and overrides ``reduction``.
        Default: ``None``.
    reduction : str, optional
        ``"mean"``, ``"sum"`` or ``"none"``. Default: ``"mean"``.
    pos_weight : Tensor or None, optional
        A weight of the positive term, broadcast along the last (class) axis, e.g. the
        ratio negatives/positives per class (kept as a buffer). Default: ``None``.

    Raises
    ------
    TypeError
        When ``weight`` or ``pos_weight`` is neither a Tensor nor ``None``.
    ValueError
        When ``reduction`` is not ``"none"``, ``"mean"`` or ``"sum"`` (checked only when
        neither deprecated argument is given).

    Examples
    --------
    >>> z, y = remat.tensor([0.0, 2.0, -1.0]), remat.tensor([0.0, 1.0, 1.0])
    >>> remat.nn.BCEWithLogitsLoss(reduction="none")(z, y)
    tensor([0.6931, 0.1269, 1.3133])
    >>> remat.nn.BCEWithLogitsLoss(pos_weight=remat.tensor([2.0]))(z, y)
    tensor(1.1912)
    """

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if pos_weight is not None and not isinstance(pos_weight, Tensor):
            raise TypeError(
                f"BCEWithLogitsLoss: pos_weight must be a Tensor or None, got "
                f"{type(pos_weight).__name__}"
            )
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """``remat.binary_cross_entropy_with_logits`` of ``input`` against ``target``.

        Parameters
        ----------
        input : Tensor
            Logits, any shape.
        target : Tensor or array_like
            Targets in ``[0, 1]`` of the same shape.

        Returns
        -------
        Tensor
            A 0-d tensor, or the per-element losses for ``"none"``.

        Raises
        ------
        remat.ShapeError
            When ``input`` and ``target`` have different shapes.

        Examples
        --------
        >>> remat.nn.BCEWithLogitsLoss()(remat.tensor([0.0]), remat.tensor([1.0]))
        tensor(0.6931)
        """
        return remat.binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction,
            pos_weight=self.pos_weight,
        )
