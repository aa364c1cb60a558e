"""``nn.MultiheadAttention`` with PyTorch's constructor, parameters (``in_proj_weight`` or
``q/k/v_proj_weight``, ``in_proj_bias``, ``out_proj``, ``bias_k``/``bias_v``),
initialisation and ``forward`` (masks, ``need_weights``, ``average_attn_weights``,
``is_causal``, ``batch_first``, unbatched inputs). The arithmetic is the engine's: ``linear``,
``scaled_dot_product_attention`` when the weights are not asked for, otherwise the same
product written out so the weights can be returned."""

from __future__ import annotations

import math
from typing import Any

import remat

from ... import _validate
from ..._remat import Tensor
from .. import init
from .linear import Linear, _filled
from .module import Module

__all__ = ["MultiheadAttention"]


def _additive(mask: Tensor | None, like: Tensor, what: str) -> Tensor | None:
    """PyTorch's MHA masks as additive float masks: a bool mask is True where attention is
    NOT allowed (-inf there), a float mask is added as it is."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        mask = remat.tensor(mask)
    if mask.dtype == remat.bool_:
        return remat.where(mask, float("-inf"), 0.0).to(like.dtype)
    if mask.dtype not in (remat.float32, remat.float64):
        raise remat.DTypeError(
            f"MultiheadAttention: {what} must be a bool or float tensor, got {mask.dtype}"
        )
    return mask.to(like.dtype)


def _check_mask_shapes(mask: Tensor | None, pad: Tensor | None, sizes: tuple) -> None:
    """PyTorch's shape rules for the masks, checked before any padding: ``attn_mask`` is
    ``(L, S)`` or ``(N * num_heads, L, S)``, ``key_padding_mask`` is ``(N, S)`` (batch first,
    an unbatched input already given its batch axis). Broadcasting would otherwise accept
    a wrong shape silently."""
    n, h, tgt, src = sizes
    name = "MultiheadAttention"
    if mask is not None:
        want = {2: (tgt, src), 3: (n * h, tgt, src)}.get(mask.ndim)
        if want is None:
            raise remat.ShapeError(
                f"{name}: attn_mask must be 2-D or 3-D, got shape {tuple(mask.shape)}"
            )
        if tuple(mask.shape) != want:
            raise remat.ShapeError(
                f"{name}: the shape of the {mask.ndim}-D attn_mask is {tuple(mask.shape)}, "
                f"but should be {want}"
            )
    if pad is not None and tuple(pad.shape) != (n, src):
        raise remat.ShapeError(
            f"{name}: key_padding_mask must have shape {(n, src)} (batch, source length), "
            f"got {tuple(pad.shape)}"
        )


class MultiheadAttention(Module):
    """Multi-head attention: ``softmax(q kᵀ / √d + mask) v`` per head with input and output
    projections, as ``torch.nn.MultiheadAttention``.

    The query, key and value are projected (``in_proj_weight``/``in_proj_bias``, or
    ``q/k/v_proj_weight`` when ``kdim``/``vdim`` differ from ``embed_dim``), split into
    ``num_heads`` heads of size ``embed_dim // num_heads``, attended per head and projected
    back by ``out_proj`` (a :class:`Linear`). Initialisation as PyTorch: Xavier-uniform
    projection weights, zero biases, Xavier-normal ``bias_k``/``bias_v``.

    Parameters
    ----------
    embed_dim : int
        Size of the query's (and the output's) last axis, ``>= 1``.
    num_heads : int
        Number of heads, ``>= 1``; must divide ``embed_dim``.
    dropout : float, optional
        Dropout probability on the attention weights, in ``[0, 1]``; applied only in
        training mode. Default: ``0.0``.
    bias : bool, optional
        Learn the input-projection bias ``in_proj_bias`` and the bias of ``out_proj``.
        Default: ``True``.
    add_bias_kv : bool, optional
        Learn ``bias_k`` and ``bias_v`` of shape ``(1, 1, embed_dim)``, appended to the keys
        and values as one extra source position. Default: ``False``.
    add_zero_attn : bool, optional
        Append one all-zero key/value position per head (after the projections).
        Default: ``False``.
    kdim : int or None, optional
        Size of the key's last axis. Default: ``None`` (``embed_dim``).
    vdim : int or None, optional
        Size of the value's last axis. Default: ``None`` (``embed_dim``).
    batch_first : bool, optional
        Inputs and output are ``(N, L, E)`` instead of ``(L, N, E)``. Default: ``False``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``embed_dim``, ``num_heads``, ``kdim`` or ``vdim`` is not an int, or
        ``dropout`` is not a number.
    ValueError
        When ``embed_dim`` or ``num_heads`` is below 1, ``embed_dim`` is not divisible by
        ``num_heads``, ``kdim``/``vdim`` is below 1, or ``dropout`` is outside ``[0, 1]``.

    Examples
    --------
    >>> mha = remat.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = remat.randn(3, 5, 8)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    >>> [(name, p.shape) for name, p in mha.named_parameters()]
    [('in_proj_weight', (24, 8)), ('in_proj_bias', (24,)),
     ('out_proj.weight', (8, 8)), ('out_proj.bias', (8,))]
    >>> remat.nn.MultiheadAttention(5, 2)
    Traceback (most recent call last):
        ...
    ValueError: MultiheadAttention: embed_dim (5) must be divisible by num_heads (2)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = "MultiheadAttention"
        embed_dim = _validate.integer(name, "embed_dim", embed_dim, minimum=1)
        num_heads = _validate.integer(name, "num_heads", num_heads, minimum=1)
        if embed_dim % num_heads:
            raise ValueError(
                f"{name}: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else _validate.integer(name, "kdim", kdim, 1)
        self.vdim = embed_dim if vdim is None else _validate.integer(name, "vdim", vdim, 1)
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout = _validate.in_range(name, "dropout", dropout, 0.0, 1.0)
        self.batch_first = batch_first
        self.add_zero_attn = add_zero_attn
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _filled(0.0, (3 * embed_dim, embed_dim), device, dtype)
            for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(n, None)
        else:
            self.q_proj_weight = _filled(0.0, (embed_dim, embed_dim), device, dtype)
            self.k_proj_weight = _filled(0.0, (embed_dim, self.kdim), device, dtype)
            self.v_proj_weight = _filled(0.0, (embed_dim, self.vdim), device, dtype)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = _filled(0.0, (3 * embed_dim,), device, dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = _filled(0.0, (1, 1, embed_dim), device, dtype)
            self.bias_v = _filled(0.0, (1, 1, embed_dim), device, dtype)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projections(self, q: Tensor, k: Tensor, v: Tensor) -> tuple:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return remat.linear(q, wq, bq), remat.linear(k, wk, bk), remat.linear(v, wv, bv)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``; returns ``(output, weights)``.

        Shapes with ``batch_first=True`` (``L`` target length, ``S`` source length, ``N``
        batch, ``E`` = ``embed_dim``): query ``(N, L, E)``, key ``(N, S, kdim)``, value
        ``(N, S, vdim)``; with ``batch_first=False`` the first two axes are swapped. 2-D
        inputs (``(L, E)``, ``(S, kdim)``, ``(S, vdim)``) are one unbatched sequence.

        Parameters
        ----------
        query : Tensor
            The queries, ``(N, L, E)`` / ``(L, N, E)`` / ``(L, E)``.
        key : Tensor
            The keys, with the same batch layout as ``query``.
        value : Tensor
            The values, with the same batch and source length as ``key``.
        key_padding_mask : Tensor or None, optional
            ``(N, S)`` (or ``(S,)`` unbatched): a bool mask that is True at the key
            positions to ignore, or a float mask added to the scores. Default: ``None``.
        need_weights : bool, optional
            Also return the attention weights. With ``False`` the product runs through
            ``remat.scaled_dot_product_attention`` and ``None`` is returned for the weights.
            Default: ``True``.
        attn_mask : Tensor or None, optional
            ``(L, S)`` or ``(N * num_heads, L, S)``: bool (True where attention is NOT
            allowed) or float (added to the scores). Default: ``None``.
        average_attn_weights : bool, optional
            Average the returned weights over the heads (``(N, L, S)``); with ``False`` they
            are per head (``(N, num_heads, L, S)``). Default: ``True``.
        is_causal : bool, optional
            A hint that ``attn_mask`` is the causal mask; it must then be given as well.
            Without weights and without ``key_padding_mask``, the engine's causal path is
            used instead of the mask. Default: ``False``.

        Returns
        -------
        tuple of (Tensor, Tensor or None)
            ``output`` in the query's layout (``(N, L, E)``, ``(L, N, E)`` or ``(L, E)``),
            and the weights after softmax and dropout (``(N, L, S)`` averaged, ``(N,
            num_heads, L, S)`` per head, without ``N`` when unbatched), or ``None`` when
            ``need_weights`` is False. ``S`` includes the positions added by
            ``add_bias_kv``/``add_zero_attn``.

        Raises
        ------
        remat.ShapeError
            When the query is not 2-D or 3-D or its last axis is not ``embed_dim``, the
            batch sizes of query and key differ, key and value disagree in batch or length,
            ``attn_mask`` is not ``(L, S)`` or ``(N * num_heads, L, S)``, or
            ``key_padding_mask`` is not ``(N, S)`` (``(S,)`` unbatched).
        remat.DTypeError
            When a mask is neither bool nor float.
        RuntimeError
            When ``is_causal`` is True but ``attn_mask`` is None.

        Examples
        --------
        >>> mha = remat.nn.MultiheadAttention(4, 2)
        >>> q = remat.randn(5, 2, 4)                  # (L, N, E): batch_first=False
        >>> out, weights = mha(q, q, q, average_attn_weights=False)
        >>> out.shape, weights.shape
        ((5, 2, 4), (2, 2, 5, 5))
        >>> causal = remat.triu(remat.ones(5, 5, dtype=remat.bool_), diagonal=1)
        >>> _, weights = mha(q, q, q, attn_mask=causal)
        >>> (weights[0].triu(1) == 0).all().item()
        True
        """
        name = "MultiheadAttention"
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (t.unsqueeze(0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif query.ndim != 3:
            raise remat.ShapeError(
                f"{name}: expected a 2-D or 3-D query, got shape {tuple(query.shape)}"
            )
        elif not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        # Batch first from here: (N, L, E), (N, S, kdim), (N, S, vdim).
        n, tgt, e = query.shape
        if e != self.embed_dim:
            raise remat.ShapeError(
                f"{name}: expected a query with embed_dim {self.embed_dim}, got shape "
                f"{tuple(query.shape)}"
            )
        if key.shape[0] != n:
            raise remat.ShapeError(
                f"{name}: query and key must have the same batch size, got query "
                f"{tuple(query.shape)} and key {tuple(key.shape)} (batch first)"
            )
        if key.shape[:2] != value.shape[:2]:
            raise remat.ShapeError(
                f"{name}: key and value must have the same batch and length, got "
                f"{tuple(key.shape)} and {tuple(value.shape)}"
            )
        if is_causal and attn_mask is None:
            raise RuntimeError(f"{name}: need attn_mask if specifying the is_causal hint")
        mask = _additive(attn_mask, query, "attn_mask")
        pad = _additive(key_padding_mask, query, "key_padding_mask")
        _check_mask_shapes(mask, pad, (n, self.num_heads, tgt, key.shape[1]))
        q, k, v = self._projections(query, key, value)
        if self.bias_k is not None:
            k = remat.cat([k, self.bias_k.expand(n, 1, e)], dim=1)
            v = remat.cat([v, self.bias_v.expand(n, 1, e)], dim=1)
            mask = None if mask is None else remat.pad(mask, (0, 1))
            pad = None if pad is None else remat.pad(pad, (0, 1))
        h, d = self.num_heads, self.head_dim

        def heads(t: Tensor) -> Tensor:  # (N, S, E) -> (N, H, S, d)
            return t.reshape(n, t.shape[1], h, d).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        if self.add_zero_attn:
            zeros = remat.zeros(n, h, 1, d, dtype=q.dtype)
            k, v = remat.cat([k, zeros], dim=2), remat.cat([v, zeros], dim=2)
            mask = None if mask is None else remat.pad(mask, (0, 1))
            pad = None if pad is None else remat.pad(pad, (0, 1))
        src = k.shape[2]
        # One additive mask broadcast to (N, H, L, S): attn_mask is (L, S) or (N·H, L, S).
        if mask is not None and mask.ndim == 3:
            mask = mask.reshape(n, h, tgt, src)
        if pad is not None:
            pad = pad.reshape(n, 1, 1, src)
            mask = pad if mask is None else mask + pad
        p = self.dropout if self.training else 0.0
        if not need_weights:
            causal = is_causal and key_padding_mask is None
            out = remat.scaled_dot_product_attention(
                q, k, v, attn_mask=None if causal else mask, dropout_p=p, is_causal=causal
            )
            weights = None
        else:
            scores = (q * (1.0 / math.sqrt(d))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            attn = remat.softmax(scores, -1)
            if p > 0.0:
                attn = remat.dropout(attn, p)
            out = attn @ v
            # As PyTorch: the weights returned are the ones applied (after dropout).
            weights = attn.mean(1) if average_attn_weights else attn
        out = self.out_proj(out.transpose(1, 2).reshape(n, tgt, e))
        if unbatched:
            out = out.squeeze(0)
            weights = None if weights is None else weights.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self) -> str:
        """``"embed_dim=..., num_heads=..., dropout=..."``.

        Returns
        -------
        str
            The first line of the module's repr (the ``out_proj`` child follows it).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.MultiheadAttention(8, 2).extra_repr()
        'embed_dim=8, num_heads=2, dropout=0.0'
        """
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"
