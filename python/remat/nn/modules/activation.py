"""Activation modules with ``torch.nn``'s names and constructor arguments: thin wrappers that
call the engine's function of the same name."""

from __future__ import annotations

import remat

from ... import _validate
from ..._remat import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softmax", "LogSoftmax",
           "Softplus", "MultiheadAttention"]


class ReLU(Module):
    """``max(x, 0)`` elementwise.

    Any input shape; the output has the same shape.

    Parameters
    ----------
    inplace : bool, optional
        Write the result into the input and return it, as PyTorch's ``inplace=True`` (a
        tensor that is part of a graph is rebased onto the write). Default: ``False``.

    Raises
    ------
    TypeError
        When given an argument other than ``inplace``.

    Examples
    --------
    >>> remat.nn.ReLU()(remat.tensor([-1.0, 0.0, 2.0]))
    tensor([0., 0., 2.])
    >>> remat.nn.ReLU(inplace=True)
    ReLU(inplace=True)
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``F.relu(x, inplace=self.inplace)``: ``x`` where positive, 0 elsewhere (same
        shape).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``max(x, 0)`` elementwise, same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> x = remat.tensor([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
        >>> y = remat.nn.ReLU()(x)
        >>> y
        tensor([[0., 2.],
                [3., 0.]], grad_fn=<relu>)
        >>> y.sum().backward()
        >>> x.grad
        tensor([[0., 1.],
                [1., 0.]])
        """
        return remat.nn.functional.relu(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``"inplace=True"`` when set, as PyTorch's repr.

        Returns
        -------
        str
            The text inside ``ReLU(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.ReLU().extra_repr()
        ''
        """
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """The Gaussian error linear unit; ``approximate="tanh"`` uses the tanh approximation.

    ``x * Φ(x)`` with ``Φ`` the standard normal CDF, elementwise (any shape).

    Parameters
    ----------
    approximate : str, optional
        ``"none"`` for the exact erf form, ``"tanh"`` for
        ``0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))``. Default: ``"none"``.

    Raises
    ------
    ValueError
        When ``approximate`` is neither ``"none"`` nor ``"tanh"``.

    Examples
    --------
    >>> remat.nn.GELU()(remat.tensor([-1.0, 0.0, 1.0]))
    tensor([-0.1587,  0.0000,  0.8413])
    >>> remat.nn.GELU(approximate="tanh")
    GELU(approximate='tanh')
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        """``remat.gelu(x, approximate=self.approximate)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``x * Φ(x)`` elementwise (exact or tanh-approximated), same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> remat.nn.GELU(approximate="tanh")(remat.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1588,  0.0000,  0.8412])
        >>> remat.nn.GELU()(remat.ones(2, 3)).shape
        (2, 3)
        """
        return remat.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``"approximate='...'"``.

        Returns
        -------
        str
            The text inside ``GELU(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.GELU().extra_repr()
        "approximate='none'"
        """
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """``tanh(x)`` elementwise.

    The constructor takes no arguments. Any input shape; the output has the same shape.

    Raises
    ------
    TypeError
        When the constructor is given any argument.

    Examples
    --------
    >>> remat.nn.Tanh()(remat.tensor([-1.0, 0.0, 1.0]))
    tensor([-0.7616,  0.0000,  0.7616])
    """

    def forward(self, x: Tensor) -> Tensor:
        """``remat.tanh(x)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``tanh(x)`` elementwise, same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> x = remat.tensor([0.0, 1.0], requires_grad=True)
        >>> remat.nn.Tanh()(x).sum().backward()
        >>> x.grad  # 1 - tanh(x)**2
        tensor([1.0000, 0.4200])
        """
        return remat.tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise.

    The constructor takes no arguments. Any input shape; the output has the same shape.

    Raises
    ------
    TypeError
        When the constructor is given any argument.

    Examples
    --------
    >>> remat.nn.Sigmoid()(remat.tensor([-1.0, 0.0, 1.0]))
    tensor([0.2689, 0.5000, 0.7311])
    """

    def forward(self, x: Tensor) -> Tensor:
        """``remat.sigmoid(x)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``1 / (1 + exp(-x))`` elementwise, same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> remat.nn.Sigmoid()(remat.tensor([[0.0], [2.0]]))
        tensor([[0.5000],
                [0.8808]])
        """
        return remat.sigmoid(x)


class SiLU(Module):
    """``x * sigmoid(x)`` elementwise (the swish function).

    Any input shape; the output has the same shape.

    Parameters
    ----------
    inplace : bool, optional
        Write the result into the input and return it, as PyTorch's ``inplace=True``.
        Default: ``False``.

    Raises
    ------
    TypeError
        When given an argument other than ``inplace``.

    Examples
    --------
    >>> remat.nn.SiLU()(remat.tensor([-1.0, 0.0, 2.0]))
    tensor([-0.2689,  0.0000,  1.7616])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``remat.silu(x)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``x * sigmoid(x)`` elementwise, same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> x = remat.tensor([0.0, 1.0], requires_grad=True)
        >>> y = remat.nn.SiLU()(x)
        >>> y.shape
        (2,)
        >>> y.sum().backward()
        >>> x.grad
        tensor([0.5000, 0.9277])
        """
        return F.silu(x, inplace=self.inplace)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    Any input shape; the output has the same shape.

    Parameters
    ----------
    negative_slope : float, optional
        The slope for negative inputs. Default: ``0.01``.
    inplace : bool, optional
        Write the result into the input and return it, as PyTorch's ``inplace=True``.
        Default: ``False``.

    Raises
    ------
    TypeError
        When ``negative_slope`` is not a number (a bool is not one).

    Examples
    --------
    >>> act = remat.nn.LeakyReLU(0.1)
    >>> act
    LeakyReLU(negative_slope=0.1)
    >>> act(remat.tensor([-1.0, 0.0, 2.0]))
    tensor([-0.1000,  0.0000,  2.0000])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = _validate.real("LeakyReLU", "negative_slope", negative_slope)
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``remat.leaky_relu(x, negative_slope)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``x`` where positive, ``negative_slope * x`` elsewhere; same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> remat.nn.LeakyReLU(0.2)(remat.tensor([[-2.0, 1.0], [3.0, -5.0]]))
        tensor([[-0.4000,  1.0000],
                [ 3.0000, -1.0000]])
        """
        return F.leaky_relu(x, self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``"negative_slope=..."``.

        Returns
        -------
        str
            The text inside ``LeakyReLU(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.LeakyReLU().extra_repr()
        'negative_slope=0.01'
        """
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``.

    A smooth approximation of ReLU; where ``beta * x > threshold`` the output is ``x``
    itself (for numerical stability). Any input shape; the output has the same shape.

    Parameters
    ----------
    beta : float, optional
        Sharpness: larger values approach ReLU. Default: ``1.0``.
    threshold : float, optional
        Above this value of ``beta * x`` the function is the identity. Default: ``20.0``.

    Raises
    ------
    TypeError
        When ``beta`` or ``threshold`` cannot be converted by ``float()`` (e.g. ``None``).
    ValueError
        When ``beta`` or ``threshold`` is a string that is not a number.

    Examples
    --------
    >>> remat.nn.Softplus()(remat.tensor([-1.0, 0.0, 2.0]))
    tensor([0.3133, 0.6931, 2.1269])
    >>> remat.nn.Softplus(beta=2.0, threshold=1.0)(remat.tensor([-1.0, 0.0, 2.0]))
    tensor([0.0635, 0.3466, 2.0000])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = float(beta)
        self.threshold = float(threshold)

    def forward(self, x: Tensor) -> Tensor:
        """``remat.softplus(x, beta=beta, threshold=threshold)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Input of any shape (a list or array of numbers is converted to a Tensor).

        Returns
        -------
        Tensor
            ``log(1 + exp(beta x)) / beta``, or ``x`` where ``beta * x > threshold``; same
            shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not a Tensor and cannot be made one (e.g. a string or None).

        Examples
        --------
        >>> remat.nn.Softplus()(remat.tensor([0.0, 30.0]))  # 30 > threshold: identity
        tensor([ 0.6931, 30.0000])
        """
        return remat.softplus(x, beta=self.beta, threshold=self.threshold)

    def extra_repr(self) -> str:
        """``"beta=..., threshold=..."``.

        Returns
        -------
        str
            The text inside ``Softplus(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Softplus(beta=2).extra_repr()
        'beta=2.0, threshold=20.0'
        """
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """Softmax along ``dim``: ``exp(x) / sum(exp(x), dim)``, so each slice along ``dim``
    is positive and sums to 1.

    Parameters
    ----------
    dim : int or None, optional
        The axis to normalise over (negative counts from the end). Default: ``None``, which
        means the last axis (PyTorch's deprecated implicit choice differs for 0-, 1- and 3-D
        inputs: pass ``dim`` explicitly when porting). Not checked until the call.

    Raises
    ------
    remat.ShapeError
        At call time, when ``dim`` is out of range for the input.
    TypeError
        At call time, when ``dim`` is not an int.

    Examples
    --------
    >>> sm = remat.nn.Softmax(dim=1)
    >>> sm
    Softmax(dim=1)
    >>> sm(remat.tensor([[1.0, 2.0], [0.0, 0.0]]))
    tensor([[0.2689, 0.7311],
            [0.5000, 0.5000]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """``F.softmax(x, dim)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Floating-point input of any shape.

        Returns
        -------
        Tensor
            Same shape as ``x``; each slice along ``dim`` (the last axis when ``dim`` is None) is
            positive and sums to 1.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not floating point (an integer or bool tensor), or is not a Tensor
            and cannot be made one (e.g. a string).
        remat.ShapeError
            When ``dim`` is out of range for ``x``.
        TypeError
            When ``dim`` is not an int (or None).

        Examples
        --------
        >>> remat.nn.Softmax()(remat.zeros(2, 4))  # dim=None: the last axis
        tensor([[0.2500, 0.2500, 0.2500, 0.2500],
                [0.2500, 0.2500, 0.2500, 0.2500]])
        >>> remat.nn.Softmax(dim=2)(remat.ones(3))
        Traceback (most recent call last):
            ...
        remat.DimensionError: softmax: axis 2 is out of bounds for a tensor of 1 dimensions
        """
        return F.softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """``"dim=..."``.

        Returns
        -------
        str
            The text inside ``Softmax(...)`` in the module's repr (``dim=None`` when not given).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Softmax().extra_repr()
        'dim=None'
        >>> remat.nn.Softmax(dim=1).extra_repr()
        'dim=1'
        """
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim``: ``x - logsumexp(x, dim)``, computed stably (better than
    ``log(softmax(x))``); pair it with :class:`NLLLoss`.

    Parameters
    ----------
    dim : int or None, optional
        The axis to normalise over (negative counts from the end). Default: ``None``, which
        means the last axis (PyTorch's deprecated implicit choice differs for 0-, 1- and 3-D
        inputs: pass ``dim`` explicitly when porting). Not checked until the call.

    Raises
    ------
    remat.ShapeError
        At call time, when ``dim`` is out of range for the input.
    TypeError
        At call time, when ``dim`` is not an int.

    Examples
    --------
    >>> remat.nn.LogSoftmax(dim=-1)(remat.tensor([[0.0, 0.0]]))
    tensor([[-0.6931, -0.6931]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """``F.log_softmax(x, dim)`` (same shape as ``x``).

        Parameters
        ----------
        x : Tensor
            Floating-point input of any shape.

        Returns
        -------
        Tensor
            Same shape as ``x``: ``x - logsumexp(x, dim)`` (the last axis when ``dim`` is None).

        Raises
        ------
        remat.DTypeError
            When ``x`` is not floating point (an integer or bool tensor), or is not a Tensor
            and cannot be made one (e.g. a string).
        remat.ShapeError
            When ``dim`` is out of range for ``x``.
        TypeError
            When ``dim`` is not an int (or None).

        Examples
        --------
        >>> remat.nn.LogSoftmax(dim=0)(remat.tensor([[0.0, 1.0], [0.0, 1.0]]))
        tensor([[-0.6931, -0.6931],
                [-0.6931, -0.6931]])
        """
        return F.log_softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """``"dim=..."``.

        Returns
        -------
        str
            The text inside ``LogSoftmax(...)`` in the module's repr (``dim=None`` when not
            given).

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.LogSoftmax(dim=-1).extra_repr()
        'dim=-1'
        """
        return f"dim={self.dim}"


# PyTorch keeps MultiheadAttention in this module (torch.nn.modules.activation).
from .attention import MultiheadAttention  # noqa: E402
