"""``nn.Transformer`` and its parts (as ``torch.nn.modules.transformer``): encoder and decoder
layers made of :class:`MultiheadAttention`, a feed-forward block, :class:`LayerNorm` and
:class:`Dropout`, stacked by :class:`TransformerEncoder` / :class:`TransformerDecoder`.

Constructor arguments, defaults, submodule names and parameter names are PyTorch's, so a
state dict moves between the two libraries unchanged. The arithmetic is PyTorch's slow path
(the one it takes whenever gradients are needed); its inference fast path (nested tensors) is
an optimisation this module does not have, so ``enable_nested_tensor`` is accepted and has no
effect."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import remat

from ... import _validate
from ..._remat import Tensor
from .. import functional as F
from .. import init
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]


# The floating dtypes this build has (half precision types exist only where compiled in).
_FLOATS = tuple(
    getattr(remat, name) for name in ("float16", "bfloat16", "float32", "float64")
    if hasattr(remat, name)
)


def _square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """``(sz, sz)`` float mask: ``-inf`` above the diagonal, ``0`` on and below it."""
    sz = _validate.integer("Transformer.generate_square_subsequent_mask", "sz", sz, minimum=0)
    full = remat.full((sz, sz), float("-inf"), dtype=dtype, device=device)
    return remat.triu(full, diagonal=1)


def _canonical_mask(
    owner: str, mask: Any, name: str, like: Tensor, other: Any = None, other_name: str = ""
) -> Tensor | None:
    """A mask as PyTorch's layers pass it on: a bool mask (True = not allowed) becomes a float
    mask of ``like``'s dtype with ``-inf`` there and ``0`` elsewhere; a float mask is kept.
    As PyTorch, a key-padding mask whose dtype differs from the attention mask's warns."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        mask = remat.tensor(mask)
    if mask.dtype != remat.bool_ and mask.dtype not in _FLOATS:
        raise remat.DTypeError(
            f"{owner}: {name} must be a bool or floating-point tensor, got {mask.dtype}"
        )
    if isinstance(other, Tensor) and other.dtype != mask.dtype:
        warnings.warn(
            f"{owner}: support for mismatched {name} and {other_name} is deprecated "
            f"({mask.dtype} and {other.dtype}); use the same dtype for both",
            stacklevel=2,
        )
    if mask.dtype == remat.bool_:
        return remat.where(mask, float("-inf"), 0.0).to(like.dtype)
    return mask


def _seq_len(src: Tensor, batch_first: bool | None) -> int | None:
    """The sequence length of ``(S, E)``, ``(N, S, E)`` (batch first) or ``(S, N, E)``."""
    if src.ndim == 2:
        return src.shape[0]
    if batch_first is None or src.ndim != 3:
        return None
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """``is_causal`` when given; otherwise whether ``mask`` is exactly the causal mask of
    ``size`` (of its own last-but-one size when ``size`` is None), as PyTorch decides it."""
    if is_causal is not None or mask is None:
        return is_causal is True
    sz = size if size is not None else mask.shape[-2]
    if tuple(mask.shape) != (sz, sz):
        return False
    causal = _square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
    return bool((mask == causal).all().item())


def _activation(owner: str, activation: Any) -> Callable[[Tensor], Tensor]:
    """``"relu"`` / ``"gelu"`` as the functions, a callable as it is."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise ValueError(f"{owner}: activation should be 'relu' or 'gelu', not {activation!r}")
    if not callable(activation):
        raise TypeError(
            f"{owner}: activation must be 'relu', 'gelu' or a callable, got "
            f"{type(activation).__name__}"
        )
    return activation


def _relu_or_gelu(activation: Any) -> int:
    """PyTorch's ``activation_relu_or_gelu`` code: 1 for ReLU, 2 for GELU, 0 otherwise."""
    if activation in (F.relu, remat.relu) or isinstance(activation, ReLU):
        return 1
    if activation in (F.gelu, remat.gelu) or isinstance(activation, GELU):
        return 2
    return 0


def _check_sizes(owner: str, d_model: Any, nhead: Any, dim_feedforward: Any) -> tuple:
    d_model = _validate.integer(owner, "d_model", d_model, minimum=1)
    nhead = _validate.integer(owner, "nhead", nhead, minimum=1)
    dim_feedforward = _validate.integer(owner, "dim_feedforward", dim_feedforward, minimum=1)
    if d_model % nhead:
        raise ValueError(f"{owner}: d_model ({d_model}) must be divisible by nhead ({nhead})")
    return d_model, nhead, dim_feedforward


def _clones(owner: str, layer: Any, num_layers: Any, what: str) -> ModuleList:
    """``num_layers`` deep copies of ``layer`` (independent parameters, equal at first)."""
    if not isinstance(layer, Module):
        raise TypeError(f"{owner}: {what} must be a Module, got {type(layer).__name__}")
    num_layers = _validate.integer(owner, "num_layers", num_layers, minimum=1)
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


def _check_norm(owner: str, norm: Any) -> None:
    if norm is not None and not isinstance(norm, Module):
        raise TypeError(f"{owner}: norm must be a Module or None, got {type(norm).__name__}")


def _first_batch_first(layers: ModuleList) -> bool | None:
    """``layers[0].self_attn.batch_first``, or None for a custom layer without one."""
    attn = getattr(layers[0], "self_attn", None)
    return getattr(attn, "batch_first", None)


class TransformerEncoderLayer(Module):
    """One encoder layer: self-attention then a feed-forward network, each with a residual
    connection, dropout and layer normalisation, as ``torch.nn.TransformerEncoderLayer``.

    With ``norm_first=False`` (the original Transformer) it computes
    ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``; with ``norm_first=True`` (pre-LN)
    ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``, where
    ``ff(x) = dropout2(linear2(dropout(activation(linear1(x)))))`` and
    ``sa(x) = dropout1(self_attn(x, x, x)[0])``. Submodules: ``self_attn``, ``linear1``,
    ``dropout``, ``linear2``, ``norm1``, ``norm2``, ``dropout1``, ``dropout2`` (PyTorch's
    names, so state dicts load either way).

    Parameters
    ----------
    d_model : int
        Size of the input's last axis, ``>= 1``; divisible by ``nhead``.
    nhead : int
        Number of attention heads, ``>= 1``.
    dim_feedforward : int, optional
        Width of the feed-forward network. Default: ``2048``.
    dropout : float, optional
        Dropout probability (attention weights, residual branches, feed-forward), in
        ``[0, 1]``; active only in training mode. Default: ``0.1``.
    activation : str or callable, optional
        ``"relu"``, ``"gelu"`` or a unary callable (a function or a module) applied after
        ``linear1``. Default: ``remat.nn.functional.relu``.
    layer_norm_eps : float, optional
        ``eps`` of the layer norms. Default: ``1e-5``.
    batch_first : bool, optional
        Inputs and output are ``(N, S, E)`` instead of ``(S, N, E)``. Default: ``False``.
    norm_first : bool, optional
        Normalise before the attention and feed-forward blocks (pre-LN) instead of after.
        Default: ``False``.
    bias : bool, optional
        Give the linear layers, the attention projections and the layer norms an additive
        bias. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``d_model``, ``nhead`` or ``dim_feedforward`` is not an int, or ``activation``
        is neither a string nor a callable.
    ValueError
        When ``d_model``, ``nhead`` or ``dim_feedforward`` is below 1, ``d_model`` is not
        divisible by ``nhead``, ``dropout`` is outside ``[0, 1]``, or ``activation`` is a
        string other than ``"relu"`` / ``"gelu"``.

    Examples
    --------
    >>> layer = remat.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> layer(remat.randn(5, 3, 8)).shape      # (S, N, E): batch_first=False
    (5, 3, 8)
    >>> [name for name, _ in layer.named_children()]
    ['self_attn', 'linear1', 'dropout', 'linear2', 'norm1', 'norm2', 'dropout1', 'dropout2']
    >>> remat.nn.TransformerEncoderLayer(6, 4)
    Traceback (most recent call last):
        ...
    ValueError: TransformerEncoderLayer: d_model (6) must be divisible by nhead (4)
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        owner = "TransformerEncoderLayer"
        d_model, nhead, dim_feedforward = _check_sizes(owner, d_model, nhead, dim_feedforward)
        dropout = _validate.in_range(owner, "dropout", dropout, 0.0, 1.0)
        activation = _activation(owner, activation)
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        # Kept for scripts that read it (PyTorch's fast-path test); nothing here depends on it.
        self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Pass ``src`` through the layer.

        Parameters
        ----------
        src : Tensor
            ``(N, S, E)`` with ``batch_first``, else ``(S, N, E)``; ``(S, E)`` unbatched.
        src_mask : Tensor or None, optional
            ``(S, S)`` or ``(N * nhead, S, S)``: bool (True where attention is NOT
            allowed) or float (added to the scores). Default: ``None``.
        src_key_padding_mask : Tensor or None, optional
            ``(N, S)`` (``(S,)`` unbatched): bool (True at the positions to ignore) or
            float (added to the scores). Default: ``None``.
        is_causal : bool, optional
            A hint that ``src_mask`` is the causal mask (it must then be given); the causal
            attention path is used where the masks allow. Default: ``False``.

        Returns
        -------
        Tensor
            Same shape as ``src``.

        Raises
        ------
        remat.ShapeError
            When ``src`` or a mask has the wrong shape (see :class:`MultiheadAttention`).
        remat.DTypeError
            When a mask is neither bool nor floating point.
        RuntimeError
            When ``is_causal`` is True and ``src_mask`` is None.

        Examples
        --------
        >>> layer = remat.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
        >>> x = remat.randn(2, 4, 8)
        >>> pad = remat.tensor([[False, False, False, True], [False] * 4])
        >>> layer(x, src_key_padding_mask=pad).shape
        (2, 4, 8)
        """
        owner = "TransformerEncoderLayer"
        src_key_padding_mask = _canonical_mask(
            owner, src_key_padding_mask, "src_key_padding_mask", src, src_mask, "src_mask"
        )
        src_mask = _canonical_mask(owner, src_mask, "src_mask", src)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
        is_causal: bool = False,
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            need_weights=False, is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """One decoder layer: self-attention, attention over the encoder's output (``memory``)
    and a feed-forward network, each with a residual connection, dropout and layer
    normalisation, as ``torch.nn.TransformerDecoderLayer``.

    With ``norm_first=False``: ``x = norm1(x + sa(x)); x = norm2(x + mha(x, memory));
    x = norm3(x + ff(x))``; with ``norm_first=True`` each block normalises its input instead
    (``x = x + sa(norm1(x))``, ...). Submodules: ``self_attn``, ``multihead_attn``,
    ``linear1``, ``dropout``, ``linear2``, ``norm1``, ``norm2``, ``norm3``, ``dropout1``,
    ``dropout2``, ``dropout3`` (PyTorch's names).

    Parameters
    ----------
    d_model : int
        Size of the inputs' last axis, ``>= 1``; divisible by ``nhead``.
    nhead : int
        Number of attention heads, ``>= 1``.
    dim_feedforward : int, optional
        Width of the feed-forward network. Default: ``2048``.
    dropout : float, optional
        Dropout probability, in ``[0, 1]``; active only in training mode. Default: ``0.1``.
    activation : str or callable, optional
        ``"relu"``, ``"gelu"`` or a unary callable applied after ``linear1``.
        Default: ``remat.nn.functional.relu``.
    layer_norm_eps : float, optional
        ``eps`` of the layer norms. Default: ``1e-5``.
    batch_first : bool, optional
        Inputs and output are ``(N, T, E)`` instead of ``(T, N, E)``. Default: ``False``.
    norm_first : bool, optional
        Normalise before each block (pre-LN) instead of after. Default: ``False``.
    bias : bool, optional
        Give the linear layers, the attention projections and the layer norms an additive
        bias. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``d_model``, ``nhead`` or ``dim_feedforward`` is not an int, or ``activation``
        is neither a string nor a callable.
    ValueError
        When ``d_model``, ``nhead`` or ``dim_feedforward`` is below 1, ``d_model`` is not
        divisible by ``nhead``, ``dropout`` is outside ``[0, 1]``, or ``activation`` is a
        string other than ``"relu"`` / ``"gelu"``.

    Examples
    --------
    >>> layer = remat.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
    >>> tgt, memory = remat.randn(4, 3, 8), remat.randn(6, 3, 8)   # (T, N, E), (S, N, E)
    >>> layer(tgt, memory).shape
    (4, 3, 8)
    >>> remat.nn.TransformerDecoderLayer(8, 2, activation="tanh")
    Traceback (most recent call last):
        ...
    ValueError: TransformerDecoderLayer: activation should be 'relu' or 'gelu', not 'tanh'
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        owner = "TransformerDecoderLayer"
        d_model, nhead, dim_feedforward = _check_sizes(owner, d_model, nhead, dim_feedforward)
        dropout = _validate.in_range(owner, "dropout", dropout, 0.0, 1.0)
        activation = _activation(owner, activation)
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **factory
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Pass ``tgt`` through the layer, attending to ``memory``.

        Parameters
        ----------
        tgt : Tensor
            ``(N, T, E)`` with ``batch_first``, else ``(T, N, E)``; ``(T, E)`` unbatched.
        memory : Tensor
            The encoder's output, ``(N, S, E)`` / ``(S, N, E)`` / ``(S, E)``.
        tgt_mask : Tensor or None, optional
            ``(T, T)`` or ``(N * nhead, T, T)`` self-attention mask: bool (True = not
            allowed) or float (added). Default: ``None``.
        memory_mask : Tensor or None, optional
            ``(T, S)`` or ``(N * nhead, T, S)`` mask of the attention over ``memory``.
            Default: ``None``.
        tgt_key_padding_mask : Tensor or None, optional
            ``(N, T)``: the target positions to ignore (bool True) or float to add.
            Default: ``None``.
        memory_key_padding_mask : Tensor or None, optional
            ``(N, S)``: the memory positions to ignore. Default: ``None``.
        tgt_is_causal : bool, optional
            A hint that ``tgt_mask`` is the causal mask (it must then be given).
            Default: ``False``.
        memory_is_causal : bool, optional
            A hint that ``memory_mask`` is the causal mask (it must then be given).
            Default: ``False``.

        Returns
        -------
        Tensor
            Same shape as ``tgt``.

        Raises
        ------
        remat.ShapeError
            When an input or a mask has the wrong shape (see :class:`MultiheadAttention`).
        remat.DTypeError
            When a mask is neither bool nor floating point.
        RuntimeError
            When a causal hint is True and its mask is None.

        Examples
        --------
        >>> layer = remat.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
        >>> tgt, memory = remat.randn(2, 4, 8), remat.randn(2, 6, 8)
        >>> causal = remat.nn.Transformer.generate_square_subsequent_mask(4)
        >>> layer(tgt, memory, tgt_mask=causal, tgt_is_causal=True).shape
        (2, 4, 8)
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x + self._mha_block(
                    x, memory, memory_mask, memory_key_padding_mask, memory_is_causal
                )
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
        is_causal: bool = False,
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            is_causal=is_causal, need_weights=False,
        )[0]
        return self.dropout1(x)

    def _mha_block(
        self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
        key_padding_mask: Tensor | None, is_causal: bool = False,
    ) -> Tensor:
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            is_causal=is_causal, need_weights=False,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` encoder layers, each a deep copy of ``encoder_layer`` (so
    all start with the same parameters), then an optional ``norm``, as
    ``torch.nn.TransformerEncoder``. Submodules: ``layers`` (a :class:`ModuleList`) and
    ``norm``.

    Parameters
    ----------
    encoder_layer : Module
        The layer to copy, usually a :class:`TransformerEncoderLayer`.
    num_layers : int
        Number of copies, ``>= 1``.
    norm : Module or None, optional
        Applied to the last layer's output (a :class:`LayerNorm`). Default: ``None``.
    enable_nested_tensor : bool, optional
        Accepted for PyTorch compatibility and stored; remat has no nested tensors, so the
        padded positions are computed as PyTorch's slow path computes them
        (``use_nested_tensor`` is always False). Default: ``True``.
    mask_check : bool, optional
        Accepted and stored (PyTorch uses it to decide on the nested-tensor path).
        Default: ``True``.

    Raises
    ------
    TypeError
        When ``encoder_layer`` or ``norm`` is not a Module, or ``num_layers`` is not an int.
    ValueError
        When ``num_layers`` is below 1.

    Examples
    --------
    >>> layer = remat.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    >>> encoder = remat.nn.TransformerEncoder(layer, num_layers=3, norm=remat.nn.LayerNorm(8))
    >>> encoder(remat.randn(2, 5, 8)).shape
    (2, 5, 8)
    >>> len(encoder.layers), encoder.layers[0] is layer
    (3, False)
    """

    def __init__(
        self,
        encoder_layer: Module,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        owner = "TransformerEncoder"
        _check_norm(owner, norm)
        self.layers = _clones(owner, encoder_layer, num_layers, "encoder_layer")
        self.num_layers = len(self.layers)
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """Pass ``src`` through each layer in turn, then ``norm``.

        Parameters
        ----------
        src : Tensor
            ``(N, S, E)`` with ``batch_first``, else ``(S, N, E)``; ``(S, E)`` unbatched.
        mask : Tensor or None, optional
            ``(S, S)`` or ``(N * nhead, S, S)`` attention mask, bool (True = not allowed) or
            float (added); given to every layer. Default: ``None``.
        src_key_padding_mask : Tensor or None, optional
            ``(N, S)``: the positions to ignore (bool True) or float to add.
            Default: ``None``.
        is_causal : bool or None, optional
            Whether ``mask`` is the causal mask; ``None`` detects it (``mask`` equal to
            :meth:`Transformer.generate_square_subsequent_mask` of the sequence length).
            Default: ``None``.

        Returns
        -------
        Tensor
            Same shape as ``src``.

        Raises
        ------
        remat.ShapeError
            When ``src`` or a mask has the wrong shape.
        remat.DTypeError
            When a mask is neither bool nor floating point.
        RuntimeError
            When ``is_causal`` is True and ``mask`` is None.

        Examples
        --------
        >>> layer = remat.nn.TransformerEncoderLayer(8, 2, 16)
        >>> encoder = remat.nn.TransformerEncoder(layer, 2)
        >>> causal = remat.nn.Transformer.generate_square_subsequent_mask(5)
        >>> encoder(remat.randn(5, 3, 8), mask=causal).shape
        (5, 3, 8)
        """
        owner = "TransformerEncoder"
        src_key_padding_mask = _canonical_mask(
            owner, src_key_padding_mask, "src_key_padding_mask", src, mask, "mask"
        )
        mask = _canonical_mask(owner, mask, "mask", src)
        seq_len = _seq_len(src, _first_batch_first(self.layers))
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(
                output, src_mask=mask, is_causal=is_causal,
                src_key_padding_mask=src_key_padding_mask,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """A stack of ``num_layers`` decoder layers, each a deep copy of ``decoder_layer``, then
    an optional ``norm``, as ``torch.nn.TransformerDecoder``. Submodules: ``layers`` and
    ``norm``.

    Parameters
    ----------
    decoder_layer : Module
        The layer to copy, usually a :class:`TransformerDecoderLayer`.
    num_layers : int
        Number of copies, ``>= 1``.
    norm : Module or None, optional
        Applied to the last layer's output. Default: ``None``.

    Raises
    ------
    TypeError
        When ``decoder_layer`` or ``norm`` is not a Module, or ``num_layers`` is not an int.
    ValueError
        When ``num_layers`` is below 1.

    Examples
    --------
    >>> layer = remat.nn.TransformerDecoderLayer(8, 2, 16)
    >>> decoder = remat.nn.TransformerDecoder(layer, num_layers=2)
    >>> decoder(remat.randn(4, 3, 8), remat.randn(6, 3, 8)).shape
    (4, 3, 8)
    >>> remat.nn.TransformerDecoder(layer, 0)
    Traceback (most recent call last):
        ...
    ValueError: TransformerDecoder: num_layers must be >= 1, got 0
    """

    def __init__(
        self, decoder_layer: Module, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        owner = "TransformerDecoder"
        _check_norm(owner, norm)
        self.layers = _clones(owner, decoder_layer, num_layers, "decoder_layer")
        self.num_layers = len(self.layers)
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Pass ``tgt`` through each layer in turn (each attending to ``memory``), then
        ``norm``.

        Parameters
        ----------
        tgt : Tensor
            ``(N, T, E)`` with ``batch_first``, else ``(T, N, E)``; ``(T, E)`` unbatched.
        memory : Tensor
            The encoder's output, ``(N, S, E)`` / ``(S, N, E)`` / ``(S, E)``.
        tgt_mask : Tensor or None, optional
            ``(T, T)`` or ``(N * nhead, T, T)`` self-attention mask. Default: ``None``.
        memory_mask : Tensor or None, optional
            ``(T, S)`` or ``(N * nhead, T, S)`` mask over ``memory``. Default: ``None``.
        tgt_key_padding_mask : Tensor or None, optional
            ``(N, T)``: target positions to ignore. Default: ``None``.
        memory_key_padding_mask : Tensor or None, optional
            ``(N, S)``: memory positions to ignore. Default: ``None``.
        tgt_is_causal : bool or None, optional
            Whether ``tgt_mask`` is the causal mask; ``None`` detects it. Default: ``None``.
        memory_is_causal : bool, optional
            A hint that ``memory_mask`` is the causal mask. Default: ``False``.

        Returns
        -------
        Tensor
            Same shape as ``tgt``.

        Raises
        ------
        remat.ShapeError
            When an input or a mask has the wrong shape.
        remat.DTypeError
            When a mask is neither bool nor floating point.
        RuntimeError
            When a causal hint is True and its mask is None.

        Examples
        --------
        >>> decoder = remat.nn.TransformerDecoder(remat.nn.TransformerDecoderLayer(8, 2, 16), 2)
        >>> tgt, memory = remat.randn(4, 3, 8), remat.randn(6, 3, 8)
        >>> pad = remat.zeros(3, 6, dtype=remat.bool)
        >>> decoder(tgt, memory, memory_key_padding_mask=pad).shape
        (4, 3, 8)
        """
        seq_len = _seq_len(tgt, _first_batch_first(self.layers))
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for layer in self.layers:
            output = layer(
                output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need", as
    ``torch.nn.Transformer``: ``decoder(tgt, encoder(src))``.

    Submodules ``encoder`` (a :class:`TransformerEncoder` with a final :class:`LayerNorm`)
    and ``decoder`` (a :class:`TransformerDecoder` with one), unless custom ones are given.
    Every parameter with more than one axis is re-initialised Xavier-uniform, as PyTorch
    does.

    Parameters
    ----------
    d_model : int, optional
        Size of the inputs' last axis. Default: ``512``.
    nhead : int, optional
        Number of attention heads; must divide ``d_model``. Default: ``8``.
    num_encoder_layers : int, optional
        Number of encoder layers. Default: ``6``.
    num_decoder_layers : int, optional
        Number of decoder layers. Default: ``6``.
    dim_feedforward : int, optional
        Width of the feed-forward networks. Default: ``2048``.
    dropout : float, optional
        Dropout probability, in ``[0, 1]``. Default: ``0.1``.
    activation : str or callable, optional
        ``"relu"``, ``"gelu"`` or a unary callable. Default: ``remat.nn.functional.relu``.
    custom_encoder : Module or None, optional
        Used as ``encoder`` instead of the default stack. Default: ``None``.
    custom_decoder : Module or None, optional
        Used as ``decoder`` instead of the default stack. Default: ``None``.
    layer_norm_eps : float, optional
        ``eps`` of every layer norm. Default: ``1e-5``.
    batch_first : bool, optional
        Inputs and output are ``(N, S, E)`` instead of ``(S, N, E)``. Default: ``False``.
    norm_first : bool, optional
        Pre-LN layers. Default: ``False``.
    bias : bool, optional
        Additive biases in the linear layers, attention projections and layer norms.
        Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When a size is not an int, ``activation`` is neither a string nor a callable, or a
        custom encoder/decoder is not a Module.
    ValueError
        When a size is below 1, ``d_model`` is not divisible by ``nhead``, ``dropout`` is
        outside ``[0, 1]`` or ``activation`` names no known function.

    Examples
    --------
    >>> model = remat.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2,
    ...                              num_decoder_layers=2, dim_feedforward=16,
    ...                              batch_first=True)
    >>> src, tgt = remat.randn(3, 6, 8), remat.randn(3, 4, 8)
    >>> mask = model.generate_square_subsequent_mask(4)
    >>> model(src, tgt, tgt_mask=mask).shape
    (3, 4, 8)
    >>> sorted({name.split(".")[0] for name, _ in model.named_parameters()})
    ['decoder', 'encoder']
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Any | None = None,
        custom_decoder: Any | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        owner = "Transformer"
        d_model, nhead, dim_feedforward = _check_sizes(owner, d_model, nhead, dim_feedforward)
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        for name, custom in (("custom_encoder", custom_encoder),
                             ("custom_decoder", custom_decoder)):
            if custom is not None and not isinstance(custom, Module):
                raise TypeError(f"{owner}: {name} must be a Module, got {type(custom).__name__}")
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory),
            )
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every matrix-like parameter, as PyTorch's ``Transformer``."""
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src``, then decode ``tgt`` attending to the encoding.

        Masks: a bool mask is True where attention is NOT allowed (the opposite of
        ``scaled_dot_product_attention``'s convention); a float mask is added to the scores.

        Parameters
        ----------
        src : Tensor
            The encoder's input, ``(N, S, E)`` with ``batch_first``, else ``(S, N, E)``;
            ``(S, E)`` unbatched.
        tgt : Tensor
            The decoder's input, ``(N, T, E)`` / ``(T, N, E)`` / ``(T, E)``.
        src_mask : Tensor or None, optional
            ``(S, S)`` or ``(N * nhead, S, S)`` encoder self-attention mask.
            Default: ``None``.
        tgt_mask : Tensor or None, optional
            ``(T, T)`` or ``(N * nhead, T, T)`` decoder self-attention mask.
            Default: ``None``.
        memory_mask : Tensor or None, optional
            ``(T, S)`` mask of the decoder's attention over the encoding. Default: ``None``.
        src_key_padding_mask : Tensor or None, optional
            ``(N, S)``: source positions to ignore. Default: ``None``.
        tgt_key_padding_mask : Tensor or None, optional
            ``(N, T)``: target positions to ignore. Default: ``None``.
        memory_key_padding_mask : Tensor or None, optional
            ``(N, S)``: encoding positions to ignore (usually ``src_key_padding_mask``).
            Default: ``None``.
        src_is_causal : bool or None, optional
            Whether ``src_mask`` is the causal mask; ``None`` detects it. Default: ``None``.
        tgt_is_causal : bool or None, optional
            Whether ``tgt_mask`` is the causal mask; ``None`` detects it. Default: ``None``.
        memory_is_causal : bool, optional
            A hint that ``memory_mask`` is the causal mask. Default: ``False``.

        Returns
        -------
        Tensor
            ``(N, T, E)`` / ``(T, N, E)`` / ``(T, E)``: the decoder's output, shaped as
            ``tgt``.

        Raises
        ------
        remat.ShapeError
            When ``src`` and ``tgt`` are not both 2-D or both 3-D, their batch sizes differ,
            their last axis is not ``d_model``, or a mask has the wrong shape.
        remat.DTypeError
            When a mask is neither bool nor floating point.
        RuntimeError
            When a causal hint is True and its mask is None.

        Examples
        --------
        >>> model = remat.nn.Transformer(8, 2, 1, 1, 16)
        >>> src, tgt = remat.randn(6, 2, 8), remat.randn(4, 2, 8)
        >>> model(src, tgt, tgt_is_causal=True,
        ...       tgt_mask=model.generate_square_subsequent_mask(4)).shape
        (4, 2, 8)
        >>> model(src, remat.randn(4, 3, 8))
        Traceback (most recent call last):
            ...
        remat.ShapeError: Transformer: the batch sizes of src (2) and tgt (3) must be equal
        """
        owner = "Transformer"
        if src.ndim not in (2, 3) or tgt.ndim != src.ndim:
            raise remat.ShapeError(
                f"{owner}: src and tgt must both be 2-D (unbatched) or both 3-D, got shapes "
                f"{tuple(src.shape)} and {tuple(tgt.shape)}"
            )
        if src.ndim == 3:
            axis = 0 if self.batch_first else 1
            if src.shape[axis] != tgt.shape[axis]:
                raise remat.ShapeError(
                    f"{owner}: the batch sizes of src ({src.shape[axis]}) and tgt "
                    f"({tgt.shape[axis]}) must be equal"
                )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise remat.ShapeError(
                f"{owner}: the feature sizes of src ({src.shape[-1]}) and tgt "
                f"({tgt.shape[-1]}) must equal d_model ({self.d_model})"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
            is_causal=src_is_causal,
        )
        return self.decoder(
            tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The causal mask for a sequence of length ``sz``: a float ``(sz, sz)`` tensor,
        ``-inf`` above the diagonal (the future positions), ``0`` elsewhere.

        Parameters
        ----------
        sz : int
            Sequence length, ``>= 0``.
        device : str or remat.device, optional
            Where the mask lives. Default: ``None`` (the CPU).
        dtype : remat.dtype, optional
            Its floating dtype. Default: ``None`` (float32).

        Returns
        -------
        Tensor
            ``(sz, sz)``, additive.

        Raises
        ------
        TypeError
            When ``sz`` is not an int.
        ValueError
            When ``sz`` is negative.

        Examples
        --------
        >>> remat.nn.Transformer.generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        """
        return _square_subsequent_mask(sz, device=device, dtype=dtype)
