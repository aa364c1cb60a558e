"""``nn.Embedding``: a lookup table of ``num_embeddings`` rows of ``embedding_dim`` values,
indexed by integer tensors. The lookup is the engine's ``embedding`` (a row gather whose
backward is a scatter-add of rows, never a dense one-hot)."""

from __future__ import annotations

from typing import Any

import remat

from ... import _validate
from ..._remat import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding"]


def _padding_index(num_embeddings: int, padding_idx: int | None) -> int | None:
    if padding_idx is None:
        return None
    p = _validate.integer("Embedding", "padding_idx", padding_idx)
    if not -num_embeddings <= p < num_embeddings:
        raise ValueError(
            f"Embedding: padding_idx={p} must be within num_embeddings={num_embeddings}"
        )
    return p % num_embeddings


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``, indexed by
    integer tensors.

    ``Embedding(num_embeddings, embedding_dim, padding_idx=None, ...)``, as PyTorch: the
    weight is drawn from N(0, 1), the ``padding_idx`` row starts at zero and never receives a
    gradient, and ``_weight`` supplies the table instead. ``max_norm`` renormalises, in place
    and before the lookup, each looked-up row whose ``norm_type``-norm exceeds it. An input
    of shape ``(*)`` gives an output of shape ``(*, embedding_dim)``.

    Parameters
    ----------
    num_embeddings : int
        Number of rows (the vocabulary size), ``>= 0``.
    embedding_dim : int
        Size of each vector, ``>= 0``.
    padding_idx : int or None, optional
        A row (negative counts from the end) that starts at zero and gets no gradient, e.g.
        for padding tokens. Default: ``None``.
    max_norm : float or None, optional
        Renormalise each looked-up row whose norm exceeds this, in place in ``weight``.
        Default: ``None``.
    norm_type : float, optional
        The p of the p-norm used with ``max_norm``. Default: ``2.0``.
    scale_grad_by_freq : bool, optional
        Not supported: must stay ``False``. Default: ``False``.
    sparse : bool, optional
        Not supported (gradients are dense): must stay ``False``. Default: ``False``.
    _weight : Tensor or None, optional
        A ``(num_embeddings, embedding_dim)`` table to use instead of a random one (its
        storage is shared). Default: ``None``.
    _freeze : bool, optional
        Make the table not require grad. Default: ``False``.
    device : str or remat.device, optional
        Where the table lives. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The table's floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``num_embeddings``, ``embedding_dim`` or ``padding_idx`` is not an int.
    ValueError
        When ``num_embeddings`` or ``embedding_dim`` is negative, or ``padding_idx`` is not
        within ``[-num_embeddings, num_embeddings)``.
    NotImplementedError
        When ``scale_grad_by_freq`` or ``sparse`` is True.
    remat.ShapeError
        When ``_weight`` does not have shape ``(num_embeddings, embedding_dim)``.

    Examples
    --------
    >>> emb = remat.nn.Embedding(10, 3, padding_idx=0)
    >>> emb
    Embedding(10, 3, padding_idx=0)
    >>> out = emb(remat.tensor([[1, 2, 0], [4, 3, 9]]))
    >>> out.shape
    (2, 3, 3)
    >>> out.sum().backward()
    >>> emb.weight.grad[0], emb.weight.grad[1]
    (tensor([0., 0., 0.]), tensor([1., 1., 1.]))
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = _validate.integer("Embedding", "num_embeddings", num_embeddings, 0)
        self.embedding_dim = _validate.integer("Embedding", "embedding_dim", embedding_dim, 0)
        self.padding_idx = _padding_index(self.num_embeddings, padding_idx)
        self.max_norm = None if max_norm is None else float(max_norm)
        self.norm_type = float(norm_type)
        if scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "Embedding: scale_grad_by_freq and sparse gradients are not supported"
            )
        self.scale_grad_by_freq = False
        self.sparse = False
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is None:
            w = remat.randn(*shape, dtype=dtype)
            if self.padding_idx is not None:
                w[self.padding_idx] = 0.0
            if device is not None and str(device) != "cpu":
                w = w.to(device)
            self.register_parameter("weight", Parameter(w, requires_grad=not _freeze))
        else:
            if tuple(_weight.shape) != shape:
                raise remat.ShapeError(
                    f"Embedding: _weight has shape {tuple(_weight.shape)}, expected {shape}"
                )
            self.register_parameter("weight", Parameter(_weight, requires_grad=not _freeze))

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose table is ``embeddings`` (2-D); ``freeze`` keeps it fixed.

        The table shares ``embeddings``' storage. Note that a frozen table (a tensor that does
        not require grad) is not registered as a parameter in remat, so it is left out of
        ``state_dict()`` and not moved by ``to()``.

        Parameters
        ----------
        embeddings : Tensor
            The ``(num_embeddings, embedding_dim)`` table.
        freeze : bool, optional
            Keep the table fixed (no gradient). Default: ``True``.
        padding_idx : int or None, optional
            As for :class:`Embedding` (the row is not zeroed here). Default: ``None``.
        max_norm : float or None, optional
            As for :class:`Embedding`. Default: ``None``.
        norm_type : float, optional
            As for :class:`Embedding`. Default: ``2.0``.
        scale_grad_by_freq : bool, optional
            Not supported: must stay ``False``. Default: ``False``.
        sparse : bool, optional
            Not supported: must stay ``False``. Default: ``False``.

        Returns
        -------
        Embedding
            The new module.

        Raises
        ------
        ValueError
            When ``embeddings`` is not 2-D, or ``padding_idx`` is out of range.
        AttributeError
            When ``embeddings`` is not a Tensor.
        NotImplementedError
            When ``scale_grad_by_freq`` or ``sparse`` is True.

        Examples
        --------
        >>> table = remat.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
        >>> emb = remat.nn.Embedding.from_pretrained(table)
        >>> emb, emb.weight.requires_grad
        (Embedding(3, 2), False)
        >>> emb(remat.tensor([2, 1]))
        tensor([[3., 4.],
                [1., 2.]])
        """
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input: Any) -> Tensor:
        """The rows of ``weight`` at ``input`` (``remat.embedding``).

        Parameters
        ----------
        input : Tensor
            Integer (int64 or int32) indices of any shape.

        Returns
        -------
        Tensor
            Shape ``(*input.shape, embedding_dim)``.

        Raises
        ------
        remat.DTypeError
            When ``input`` is not an int64 or int32 tensor.
        remat.IndexingError
            When an index is out of ``[0, num_embeddings)``.

        Examples
        --------
        >>> table = remat.tensor([[3.0, 4.0], [0.6, 0.8]])
        >>> emb = remat.nn.Embedding.from_pretrained(table, max_norm=1.0)
        >>> emb(remat.tensor([0]))
        tensor([[0.6000, 0.8000]])
        >>> emb(remat.tensor([2]))
        Traceback (most recent call last):
            ...
        remat.IndexingError: embedding_renorm_: index 2 is out of bounds for axis 0 with size 2
        """
        return remat.embedding(input, self.weight, padding_idx=self.padding_idx,
                               max_norm=self.max_norm, norm_type=self.norm_type)

    def extra_repr(self) -> str:
        """The sizes, then ``padding_idx``, ``max_norm`` and ``norm_type`` when set.

        Returns
        -------
        str
            ``"num_embeddings, embedding_dim"``, followed by ``padding_idx=...`` and
            ``max_norm=...`` when not None and ``norm_type=...`` when not 2.0.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Embedding(10, 3).extra_repr()
        '10, 3'
        >>> remat.nn.Embedding(10, 3, padding_idx=0, max_norm=1.0).extra_repr()
        '10, 3, padding_idx=0, max_norm=1.0'
        """
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2.0:
            s += f", norm_type={self.norm_type}"
        return s
