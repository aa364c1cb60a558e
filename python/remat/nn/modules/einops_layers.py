"""einops' layers as remat modules: ``Rearrange``, ``Reduce`` and ``EinMix``, made as
``einops.layers.torch`` makes PyTorch's, from einops' own mixins (which parse the pattern once,
at construction) and :class:`Module`. They need einops installed; ``remat.nn`` exports them
when it is.

einops finds a framework's layers under ``einops.layers.<framework>``, a package that is
einops' own, so a ported script's ``from einops.layers.torch import Rearrange`` becomes
``from remat.nn import Rearrange`` (see docs/porting.md)."""

from __future__ import annotations

from typing import Any

from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

import remat

from ..._remat import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["Rearrange", "Reduce", "EinMix"]


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange(x, pattern, **axes_lengths)`` as a layer, as einops' PyTorch layer
    of the same name: reorders, splits and merges axes by a pattern such as
    ``"b c (h p1) (w p2) -> b (h w) (p1 p2 c)"``.

    Parameters
    ----------
    pattern : str
        The rearrangement, in einops' notation.
    **axes_lengths : int
        Sizes of axes the pattern cannot infer (``p1=4``).

    Raises
    ------
    einops.EinopsError
        When the pattern is malformed (at construction) or does not fit the input (when
        called).

    Examples
    --------
    >>> flat = remat.nn.Sequential(remat.nn.Rearrange("b c h w -> b (h w c)"),
    ...                            remat.nn.Linear(12, 2))
    >>> flat(remat.randn(5, 3, 2, 2)).shape
    (5, 2)
    >>> remat.nn.Rearrange("b (h p) -> b h p", p=2)
    Rearrange('b (h p) -> b h p', p=2)
    """

    def __init__(self, pattern: str, **axes_lengths: Any) -> None:
        super().__init__(pattern, **axes_lengths)

    def forward(self, input: Tensor) -> Tensor:
        """Apply the rearrangement.

        Parameters
        ----------
        input : Tensor
            A tensor with as many axes as the pattern's left side names.

        Returns
        -------
        Tensor
            The rearranged tensor (a view where the layout allows).

        Raises
        ------
        einops.EinopsError
            When ``input``'s shape does not fit the pattern.

        Examples
        --------
        >>> layer = remat.nn.Rearrange("b (h p) -> b h p", p=2)
        >>> layer(remat.arange(8.0).reshape(2, 4))[1]
        tensor([[4., 5.],
                [6., 7.]])
        """
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    """``einops.reduce(x, pattern, reduction, **axes_lengths)`` as a layer: rearranges and
    reduces the axes missing from the right side (pooling, global averages).

    Parameters
    ----------
    pattern : str
        The reduction pattern, in einops' notation (``"b c (h 2) (w 2) -> b c h w"`` is
        2x2 pooling).
    reduction : str
        ``"min"``, ``"max"``, ``"sum"``, ``"mean"``, ``"prod"``, ``"any"`` or ``"all"``.
    **axes_lengths : int
        Sizes of axes the pattern cannot infer.

    Raises
    ------
    einops.EinopsError
        When the pattern or the reduction is unknown or malformed (at construction), or
        the pattern does not fit the input (when called).

    Examples
    --------
    >>> pool = remat.nn.Reduce("b c (h 2) (w 2) -> b c h w", "max")
    >>> pool(remat.randn(1, 3, 4, 6)).shape
    (1, 3, 2, 3)
    >>> remat.nn.Reduce("b c h w -> b c", "mean")
    Reduce('b c h w -> b c', 'mean')
    """

    def __init__(self, pattern: str, reduction: str, **axes_lengths: Any) -> None:
        super().__init__(pattern, reduction, **axes_lengths)

    def forward(self, input: Tensor) -> Tensor:
        """Apply the reduction.

        Parameters
        ----------
        input : Tensor
            A tensor with as many axes as the pattern's left side names.

        Returns
        -------
        Tensor
            The reduced tensor.

        Raises
        ------
        einops.EinopsError
            When ``input``'s shape does not fit the pattern, or a mean is asked of an
            integer tensor.

        Examples
        --------
        >>> remat.nn.Reduce("b n -> b", "sum")(remat.ones(2, 3))
        tensor([3., 3.])
        """
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    """einops' ``EinMix``: a linear layer written as an einsum pattern, with its weight (and
    optional bias) managed by the layer, plus the rearrangements around it.

    The weight is drawn uniformly from ``±sqrt(3 / fan_in)``, the bias from
    ``±sqrt(1 / fan_in)``, as einops' layers do (``fan_in``: the product of the weight
    axes that do not appear in the output).

    Parameters
    ----------
    pattern : str
        ``"input axes -> output axes"`` (``"b t c -> b t d"``).
    weight_shape : str
        The weight's axes (``"c d"``); each size given in ``axes_lengths``.
    bias_shape : str or None, optional
        The bias's axes, a subset of the output's (``"d"``). Default: ``None`` (no bias).
    **axes_lengths : int
        The sizes of the weight's and bias's axes.

    Raises
    ------
    einops.EinopsError
        When the patterns disagree (unknown or unused axes, a weight size not given).

    Examples
    --------
    >>> mix = remat.nn.EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d",
    ...                       c=4, d=3)
    >>> mix(remat.randn(2, 5, 4)).shape
    (2, 5, 3)
    >>> [(name, p.shape) for name, p in mix.named_parameters()]
    [('weight', (4, 3)), ('bias', (1, 1, 3))]
    """

    def __init__(
        self, pattern: str, weight_shape: str, bias_shape: str | None = None,
        **axes_lengths: Any,
    ) -> None:
        super().__init__(pattern, weight_shape, bias_shape, **axes_lengths)

    def _create_parameters(
        self, weight_shape: list, weight_bound: float, bias_shape: list | None,
        bias_bound: float,
    ) -> None:
        # Drawn from remat's generator, so remat.manual_seed makes a layer reproducible.
        self.weight = Parameter(remat.empty(*weight_shape).uniform_(-weight_bound, weight_bound))
        if bias_shape is not None:
            self.bias = Parameter(remat.empty(*bias_shape).uniform_(-bias_bound, bias_bound))
        else:
            self.bias = None  # type: ignore[assignment]

    def _create_rearrange_layers(
        self, pre_reshape_pattern: str | None, pre_reshape_lengths: dict | None,
        post_reshape_pattern: str | None, post_reshape_lengths: dict | None,
    ) -> None:
        self.pre_rearrange = None
        if pre_reshape_pattern is not None:
            self.pre_rearrange = Rearrange(pre_reshape_pattern, **(pre_reshape_lengths or {}))
        self.post_rearrange = None
        if post_reshape_pattern is not None:
            self.post_rearrange = Rearrange(post_reshape_pattern, **(post_reshape_lengths or {}))

    def forward(self, input: Tensor) -> Tensor:
        """Mix ``input`` with the weight (and add the bias).

        Parameters
        ----------
        input : Tensor
            A tensor matching the pattern's left side.

        Returns
        -------
        Tensor
            The tensor of the pattern's right side.

        Raises
        ------
        einops.EinopsError
            When ``input``'s shape does not fit the pattern.
        remat.ShapeError
            When the mixed axis of ``input`` does not have the weight's size.

        Examples
        --------
        >>> mix = remat.nn.EinMix("b (h c) -> b h d", weight_shape="c d", h=2, c=3, d=1)
        >>> mix(remat.randn(4, 6)).shape
        (4, 2, 1)
        """
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)
        out = remat.einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            out = out + self.bias
        if self.post_rearrange is not None:
            out = self.post_rearrange(out)
        return out
