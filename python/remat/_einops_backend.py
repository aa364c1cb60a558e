"""einops on remat tensors: the backend einops looks for.

einops picks a backend for a tensor type by walking the subclasses of
``einops._backends.AbstractBackend`` whose ``framework_name`` is an imported module, the first
time it meets that type. Defining :class:`RematBackend` is therefore all the registration
there is; ``remat/__init__.py`` imports this module when einops is installed, so the class
exists before any einops call can see a remat tensor. Every method maps onto a remat op that
has a gradient, so ``einops.rearrange``, ``reduce``, ``repeat``, ``einsum``, ``pack`` and
``unpack`` take part in autograd and in every checkpoint entry point."""

from __future__ import annotations

from typing import Any

from einops._backends import AbstractBackend

# remat is mid-import when its __init__ imports this module; the methods read its names at
# call time, when the package is complete.
import remat

__all__ = ["RematBackend"]


class RematBackend(AbstractBackend):
    """einops' backend for :class:`remat.Tensor` (``framework_name = "remat"``).

    Examples
    --------
    >>> import einops
    >>> x = remat.arange(6.0).reshape(2, 3)
    >>> einops.rearrange(x, "a b -> b a").shape
    (3, 2)
    >>> type(einops._backends.get_backend(x)).__name__
    'RematBackend'
    """

    framework_name = "remat"

    def is_appropriate_type(self, tensor: Any) -> bool:
        """Whether ``tensor`` is a remat Tensor (a Parameter is one)."""
        return isinstance(tensor, remat.Tensor)

    def from_numpy(self, x: Any) -> Any:
        """A tensor from a NumPy array; floating ones require grad, as einops' torch backend
        makes them (einops' own tests rely on it)."""
        t = remat.tensor(x)
        if self.is_float_type(t):
            t.requires_grad_(True)
        return t

    def to_numpy(self, x: Any) -> Any:
        """``x`` as a NumPy array (detached, on the CPU)."""
        return x.detach().cpu().numpy()

    def arange(self, start: int, stop: int) -> Any:
        """``remat.arange(start, stop)`` in int64."""
        return remat.arange(start, stop, dtype=remat.int64)

    def shape(self, x: Any) -> tuple:
        """The shape as a tuple of ints."""
        return tuple(x.shape)

    def reshape(self, x: Any, shape: Any) -> Any:
        """``x.reshape(shape)`` (a view where the layout allows)."""
        return x.reshape(tuple(shape))

    def transpose(self, x: Any, axes: Any) -> Any:
        """``x.permute(axes)``: einops' transpose is a full axis permutation."""
        return x.permute(tuple(axes))

    def reduce(self, x: Any, operation: str, axes: Any) -> Any:
        """``operation`` over ``axes``: min/max/sum/mean over all of them at once; prod,
        any and all one axis at a time (they take a single dim), last axis first."""
        axes = tuple(axes)
        if operation == "min":
            return x.amin(dim=axes)
        if operation == "max":
            return x.amax(dim=axes)
        if operation in ("sum", "mean"):
            return getattr(x, operation)(dim=axes)
        if operation in ("prod", "any", "all"):
            for axis in sorted(axes, reverse=True):
                x = getattr(x, operation)(dim=axis)
            return x
        raise NotImplementedError(f"einops on remat: unknown reduction {operation!r}")

    def stack_on_zeroth_dimension(self, tensors: list) -> Any:
        """``remat.stack(tensors)``."""
        return remat.stack(list(tensors))

    def add_axes(self, x: Any, n_axes: int, pos2len: dict) -> Any:
        """New axes of the given lengths as a broadcast view (``expand``), so ``repeat``
        copies only when a later reshape needs it, as einops' torch backend does."""
        sizes = [-1] * n_axes
        for position, length in pos2len.items():
            x = x.unsqueeze(position)
            sizes[position] = length
        return x.expand(*sizes)

    def tile(self, x: Any, repeats: Any) -> Any:
        """``x.repeat(repeats)`` (NumPy's ``tile``)."""
        return x.repeat(*tuple(repeats))

    def concat(self, tensors: list, axis: int) -> Any:
        """``remat.cat(tensors, dim=axis)``."""
        return remat.cat(list(tensors), dim=axis)

    def add_axis(self, x: Any, new_position: int) -> Any:
        """``x.unsqueeze(new_position)``."""
        return x.unsqueeze(new_position)

    def is_float_type(self, x: Any) -> bool:
        """Whether ``x`` has a floating dtype (einops takes a mean only of those)."""
        return str(x.dtype) in ("float16", "bfloat16", "float32", "float64")

    def layers(self) -> Any:
        """The module holding remat's einops layers (``Rearrange``, ``Reduce``, ``EinMix``)."""
        from .nn.modules import einops_layers

        return einops_layers

    def einsum(self, pattern: str, *x: Any) -> Any:
        """``remat.einsum(pattern, *x)``."""
        return remat.einsum(pattern, *x)
