"""``remat.autograd``: ``grad``, ``backward`` and custom differentiable functions.

:class:`Function` follows ``torch.autograd.Function``: subclass it with static
``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` and call ``MyFn.apply(...)``.
``forward`` runs without recording a graph; its result is then recorded as one engine op per
differentiable output, and the tensors given to ``ctx.save_for_backward`` become that op's
saved-tensor slots, so checkpointing, saved-tensor version checks and memory accounting treat
them exactly like a built-in op's. ``backward`` runs under the engine's grad mode: with
``create_graph=True`` it is itself recorded, so higher-order gradients work when it is
written with remat ops. Inside ``remat.checkpoint(fn)``/segments the function is simply re-run;
for ``remat.checkpoint(tensor)`` recipes the op replays ``forward``.

A function with several outputs records one op per output; each op's backward calls
``backward`` with that output's gradient and zeros for the others (the vector-Jacobian
product is linear in the output gradients, so the sum is the same).
"""

from __future__ import annotations

from typing import Any

import remat

from . import _remat
from ._remat import Tensor, backward, grad

__all__ = ["Function", "FunctionCtx", "grad", "backward"]


class FunctionCtx:
    """The ``ctx`` of a :class:`Function`: ``save_for_backward(*tensors)`` in ``forward``,
    ``saved_tensors`` in ``backward``; ``needs_input_grad`` says which inputs need a
    gradient. Any other attribute set in ``forward`` is there in ``backward``.

    :meth:`Function.apply` makes one per call; there is no need to build one by hand.

    Parameters
    ----------
    needs_input_grad : tuple of bool
        One entry per positional argument of ``forward``: True for a Tensor that requires
        grad (kept as ``ctx.needs_input_grad``).

    Raises
    ------
    TypeError
        When ``needs_input_grad`` is missing.

    Examples
    --------
    >>> ctx = remat.autograd.FunctionCtx((True, False))
    >>> ctx.needs_input_grad
    (True, False)
    >>> ctx.save_for_backward(remat.tensor([1.0]), None)
    >>> ctx.saved_tensors  # read back only in backward
    Traceback (most recent call last):
        ...
    RuntimeError: saved_tensors is only available in backward (after save_for_backward in forward)
    """

    def __init__(self, needs_input_grad: tuple) -> None:
        self.needs_input_grad = needs_input_grad
        self.to_save: tuple = ()
        self._saved: tuple | None = None
        self.materialize_grads = True
        self.non_differentiable: set[int] = set()
        self.dirty: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` (Tensors or None) for ``backward``.

        Call it in ``forward``, at most once (a second call replaces the first). The tensors
        become the recorded op's saved-tensor slots, so checkpointing, in-place version
        checks and memory accounting treat them as a built-in op's.

        Parameters
        ----------
        *tensors : Tensor or None
            What ``backward`` reads back from ``ctx.saved_tensors``, in this order.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When an argument is neither a Tensor nor None.

        Examples
        --------
        >>> class Cube(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return 3 * x * x * grad
        >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
        >>> Cube.apply(x).sum().backward()
        >>> x.grad
        tensor([ 3., 12.])
        """
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save Tensors or None, got "
                    f"{type(t).__name__} at position {i}"
                )
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, read back from the op's slots."""
        if self._saved is None:
            raise RuntimeError(
                "saved_tensors is only available in backward (after save_for_backward in "
                "forward)"
            )
        return self._saved

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that get no gradient (integer outputs never do).

        Call it in ``forward`` with some of the Tensors it returns (matched by identity):
        ``apply`` returns those outputs as they are, without a ``grad_fn``, and ``backward``
        receives None as their gradient. Arguments that are not outputs are ignored, and
        the marks add up over several calls.

        Parameters
        ----------
        *tensors : Tensor
            Outputs of ``forward`` that are not differentiable.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given a keyword argument (the arguments themselves are not checked).

        Examples
        --------
        >>> class ReLUMask(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         mask = (x > 0).float()
        ...         ctx.mark_non_differentiable(mask)
        ...         ctx.save_for_backward(mask)
        ...         return x.clamp(min=0.0), mask
        ...     @staticmethod
        ...     def backward(ctx, grad, grad_mask):  # grad_mask is None
        ...         (mask,) = ctx.saved_tensors
        ...         return grad * mask
        >>> x = remat.tensor([-1.0, 2.0], requires_grad=True)
        >>> y, mask = ReLUMask.apply(x)
        >>> y, mask
        (tensor([0., 2.], grad_fn=<ReLUMask>), tensor([0., 1.]))
        >>> y.sum().backward()
        >>> x.grad
        tensor([0., 1.])
        """
        self.non_differentiable |= {id(t) for t in tensors}

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that ``forward`` modified in place (their version counters were
        bumped by the in-place ops themselves).

        The tensors are only kept as ``ctx.dirty`` (a second call replaces them); nothing
        else acts on them. Unlike PyTorch, a modified input that ``forward`` returns is not
        rebased onto the function's node: ``apply`` returns a new Tensor that shares its
        data and carries the function's ``grad_fn``, while the input keeps its own history.

        Parameters
        ----------
        *tensors : Tensor
            The inputs that ``forward`` modified in place.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given a keyword argument (the arguments themselves are not checked).

        Examples
        --------
        >>> class AddOne_(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         x.add_(1.0)
        ...         ctx.mark_dirty(x)
        ...         return x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return grad
        >>> a = remat.tensor([1.0, 2.0], requires_grad=True)
        >>> b = a * 2
        >>> y = AddOne_.apply(b)
        >>> y, y is b, b
        (tensor([3., 5.], grad_fn=<AddOne_>), False, tensor([3., 5.], grad_fn=<mul>))
        >>> y.sum().backward()
        >>> a.grad
        tensor([2., 2.])
        """
        self.dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None (not zeros) for outputs without a
        gradient.

        A function with several outputs records one op per output; each op's backward
        call passes its output's gradient and, by default, zeros for the other
        differentiable outputs. After ``set_materialize_grads(False)`` those are None
        (``backward`` must handle them). Non-differentiable outputs always give None.

        Parameters
        ----------
        value : bool
            True to pass zeros (the default behaviour), False to pass None; converted with
            ``bool()``.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``value`` is missing.
        remat.ShapeError
            When ``value`` is a Tensor of more than one element (``bool()`` of it fails).

        Examples
        --------
        >>> seen = []
        >>> class TwoOut(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.set_materialize_grads(False)
        ...         return x * 2, x * 3
        ...     @staticmethod
        ...     def backward(ctx, ga, gb):
        ...         seen.append((ga is None, gb is None))
        ...         return ga * 2 if gb is None else gb * 3
        >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
        >>> a, b = TwoOut.apply(x)
        >>> (a + b).sum().backward()
        >>> sorted(seen), x.grad
        ([(False, True), (True, False)], tensor([5., 5.]))
        """
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom differentiable functions (see the module docstring).

    Subclass it with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``
    and call ``MyFn.apply(*args)``, as ``torch.autograd.Function``. ``forward`` runs without
    recording a graph; ``backward`` returns one gradient (or None) per argument of
    ``forward``, each of its input's shape. Custom functions work inside every checkpoint
    entry point, and with ``create_graph=True`` a ``backward`` written with remat ops is
    differentiable again.

    Raises
    ------
    NotImplementedError
        From ``apply`` when the subclass does not define ``forward``, and in backward when
        it does not define ``backward``.
    RuntimeError
        In backward, when ``backward`` returns fewer gradients than ``forward`` has
        arguments (or a non-None extra one).
    TypeError
        In backward, when a gradient is neither a Tensor nor None.
    remat.ShapeError
        In backward, when a gradient's shape differs from its input's.

    Examples
    --------
    >>> class Square(remat.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * grad
    >>> x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = Square.apply(x)
    >>> y
    tensor([1., 4., 9.], grad_fn=<Square>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])

    Non-tensor arguments get a None gradient; attributes set on ``ctx`` reach backward:

    >>> class Scale(remat.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x, k):
    ...         ctx.k = k
    ...         return x * k
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad * ctx.k, None
    >>> x.grad = None
    >>> remat.checkpoint(lambda t: Scale.apply(t, 3.0).sin(), x).sum().backward()
    >>> x.grad.shape
    (3,)
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """Compute the outputs from the inputs; subclasses define it.

        Runs without recording a graph. Returns a Tensor or a tuple (of Tensors and other
        values); each differentiable float output is recorded as one engine op.

        Parameters
        ----------
        ctx : FunctionCtx
            The context shared with ``backward``.
        *args : Any
            The arguments given to ``apply``.
        **kwargs : Any
            The keyword arguments given to ``apply`` (they get no gradient).

        Returns
        -------
        Any
            The output(s).

        Raises
        ------
        NotImplementedError
            When the subclass does not override it.

        Examples
        --------
        >>> class Twice(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return grad * 2
        >>> Twice.apply(remat.tensor([1.0, 2.0], requires_grad=True))
        tensor([2., 4.], grad_fn=<Twice>)
        """
        raise NotImplementedError("You must implement the forward function for custom Function")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """Return one gradient (or None) per argument of ``forward``; subclasses define it.

        Called once per recorded output, with that output's gradient and zeros for the
        others (None instead of zeros after ``ctx.set_materialize_grads(False)``). Runs
        under the engine's grad mode: with ``create_graph=True`` it is recorded itself.

        Parameters
        ----------
        ctx : FunctionCtx
            The context ``forward`` filled (``saved_tensors``, attributes).
        *grad_outputs : Tensor or None
            One gradient per output of ``forward``.

        Returns
        -------
        Tensor, None or tuple
            One gradient (or None) per positional argument of ``forward``, each of its
            input's shape; a single value for a one-argument ``forward``.

        Raises
        ------
        NotImplementedError
            When the subclass does not override it (raised in backward).

        Examples
        --------
        >>> class Exp(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (y,) = ctx.saved_tensors
        ...         return grad * y
        >>> x = remat.tensor([0.0, 1.0], requires_grad=True)
        >>> Exp.apply(x).sum().backward()
        >>> x.grad
        tensor([1.0000, 2.7183])
        """
        raise NotImplementedError("You must implement the backward function for custom Function")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record it so that backward calls ``backward``.

        Without grad mode, or when no positional Tensor argument requires grad, the result
        of ``forward`` is returned as it is (nothing recorded).

        Parameters
        ----------
        *args : Any
            The arguments of ``forward`` (Tensors among them receive gradients).
        **kwargs : Any
            Keyword arguments of ``forward`` (no gradients).

        Returns
        -------
        Any
            ``forward``'s result, its differentiable outputs recorded for autograd.

        Raises
        ------
        NotImplementedError
            When ``forward`` is not defined.

        Examples
        --------
        >>> class Neg(remat.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return -x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return -grad
        >>> Neg.apply(remat.tensor([1.0], requires_grad=True))
        tensor([-1.], grad_fn=<Neg>)
        >>> Neg.apply(remat.tensor([1.0])).requires_grad  # nothing to record
        False
        """
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        with remat.no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        if not (remat.is_grad_enabled() and any(needs)):
            return result
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        return _record(cls, ctx, args, kwargs, outs, single)


def _record(cls: type[Function], ctx: FunctionCtx, args: tuple, kwargs: dict, outs: tuple,
            single: bool) -> Any:
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    inputs = [args[i] for i in positions]
    diff = [
        isinstance(o, Tensor) and id(o) not in ctx.non_differentiable
        and o.dtype in (remat.float32, remat.float64)
        for o in outs
    ]
    saved = ctx.to_save
    results = list(outs)
    for k, o in enumerate(outs):
        if not diff[k]:
            continue
        extra: list[Tensor] = []
        slots: list[int] = []
        for t in saved:
            if t is None:
                continue
            j = next((j for j, x in enumerate(inputs) if x is t), None)
            if t is o:
                slots.append(-1)
            elif j is not None:
                slots.append(j)
            else:  # an intermediate or another output: an extra input with no gradient
                slots.append(len(inputs) + len(extra))
                extra.append(t.detach())
        results[k] = _remat._record_function(
            cls.__name__, inputs + extra, o.detach(), slots,
            _backward_of(cls, ctx, args, outs, diff, k, positions, len(extra)),
            _replay_of(cls, args, kwargs, positions, k),
        )
    return results[0] if single else tuple(results)


def _backward_of(cls: type[Function], ctx: FunctionCtx, args: tuple, outs: tuple, diff: list,
                 k: int, positions: list, n_extra: int) -> Any:
    def run(grad_out: Tensor, saved: list) -> list:
        it = iter(saved)
        ctx._saved = tuple(None if t is None else next(it) for t in ctx.to_save)
        grads: list[Any] = []
        for i, o in enumerate(outs):
            if i == k:
                grads.append(grad_out)
            elif isinstance(o, Tensor) and diff[i] and ctx.materialize_grads:
                grads.append(remat.zeros_like(o))
            else:
                grads.append(None)
        res = cls.backward(ctx, *grads)
        res = res if isinstance(res, tuple) else (res,)
        if len(res) < len(args) or any(r is not None for r in res[len(args):]):
            raise RuntimeError(
                f"function {cls.__name__}Backward returned an incorrect number of gradients "
                f"(expected {len(args)}, got {len(res)})"
            )
        out: list[Any] = []
        for i in positions:
            g = res[i]
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(
                    f"function {cls.__name__}Backward returned a {type(g).__name__} as the "
                    f"gradient of input {i}; expected a Tensor or None"
                )
            if g is not None and tuple(g.shape) != tuple(args[i].shape):
                raise remat.ShapeError(
                    f"function {cls.__name__}Backward returned an invalid gradient at index "
                    f"{i} - got {tuple(g.shape)} but expected shape compatible with "
                    f"{tuple(args[i].shape)}"
                )
            out.append(g if ctx.needs_input_grad[i] else None)
        return out + [None] * n_extra

    return run


def _replay_of(cls: type[Function], args: tuple, kwargs: dict, positions: list, k: int) -> Any:
    def run(inputs: list) -> Tensor:
        new_args = list(args)
        for p, t in zip(positions, inputs):
            new_args[p] = t
        ctx = FunctionCtx(tuple(False for _ in args))
        with remat.no_grad():
            result = cls.forward(ctx, *new_args, **kwargs)
        outs = result if isinstance(result, tuple) else (result,)
        return outs[k]

    return run
