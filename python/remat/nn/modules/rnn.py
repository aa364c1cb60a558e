"""Recurrent layers (as ``torch.nn.modules.rnn``): ``RNN``, ``LSTM``, ``GRU`` and their cells.

Each layer and direction is one engine op over the whole sequence (``remat.lstm_layer``,
``remat.gru_layer``, ``remat.rnn_layer``): the input projection of every step is one matrix
product (``remat.linear``) and the recurrence runs in Rust, one matrix product and one fused
gate pass per step, with a hand-written backward through time. Parameter names, shapes, gate
orders and initialisation are PyTorch's, so state dicts move between the libraries and give
the same numbers.
"""

from __future__ import annotations

import math
from typing import Any

import remat

from ... import _validate
from ..._remat import Tensor
from ...checkpoint import checkpoint as _checkpoint
from .. import functional as F
from .. import init
from .linear import _uniform
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _shape(t: Tensor) -> tuple:
    return tuple(t.shape)


def _run_layer(mode: str, xp: Tensor, h0: Tensor, c0: Tensor | None, w_hh: Tensor,
               b_hh: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor, Tensor | None]:
    """One layer and direction on the projected inputs ``xp`` ``(T, B, G*H)``: ``(output,
    h_n, c_n)`` (``c_n`` None but for an LSTM)."""
    if mode == "LSTM":
        assert c0 is not None
        out, h, c = remat.lstm_layer(xp, h0, c0, w_hh, b_hh, reverse=reverse)
        return out, h, c
    if mode == "GRU":
        out, h = remat.gru_layer(xp, h0, w_hh, b_hh, reverse=reverse)
    else:
        nl = "relu" if mode == "RNN_RELU" else "tanh"
        out, h = remat.rnn_layer(xp, h0, w_hh, b_hh, nonlinearity=nl, reverse=reverse)
    return out, h, None


class RNNBase(Module):
    """The base of :class:`RNN`, :class:`LSTM` and :class:`GRU` (as ``torch.nn.RNNBase``):
    parameters, checks and the multi-layer, bidirectional forward.

    For layer ``k`` and direction ``d`` it holds ``weight_ih_l{k}``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}`` and ``bias_hh_l{k}`` (``_reverse`` appended for the reverse direction),
    of shapes ``(G*hidden_size, in)``, ``(G*hidden_size, hidden_size)`` and
    ``(G*hidden_size,)`` with ``G`` gates (4 for an LSTM, 3 for a GRU, 1 for an RNN), ``in``
    being ``input_size`` for the first layer and ``num_directions * hidden_size`` after. All
    are drawn from U(-1/√hidden_size, 1/√hidden_size) with remat's seeded generator.

    ``checkpoint_steps`` (an attribute, not a PyTorch argument; default ``None``): set to an
    int ``k`` to run each layer in chunks of ``k`` time steps, each chunk (its input
    projection and its recurrence) a checkpoint segment that keeps only its inputs and the
    state it hands on. Between forward and backward a layer then keeps its input, its output
    and one state per chunk instead of every step's gates; each chunk is recomputed once in
    backward. The forward values are the plain run's; the weights' gradients are summed per
    chunk, so they equal the plain run's to rounding and those of the same chunked run
    without checkpoints bit for bit. An :class:`RNN` keeps only its outputs for backward
    anyway, and ignores the attribute.

    Parameters
    ----------
    mode : str
        ``"LSTM"``, ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``.
    input_size : int
        Features of each input step (``> 0``).
    hidden_size : int
        Features of the hidden state (``> 0``).
    num_layers : int, optional
        Stacked recurrent layers. Default: ``1``.
    bias : bool, optional
        Learn ``bias_ih`` and ``bias_hh``. Default: ``True``.
    batch_first : bool, optional
        Inputs and outputs are ``(batch, seq, feature)`` instead of ``(seq, batch,
        feature)`` (the states stay ``(layers * directions, batch, hidden)``). Default:
        ``False``.
    dropout : float, optional
        Dropout on the outputs of every layer but the last, in training mode. Default:
        ``0.0``.
    bidirectional : bool, optional
        Add a reverse direction to every layer; outputs are concatenated on the feature
        axis. Default: ``False``.
    proj_size : int, optional
        LSTM projections (PyTorch's ``proj_size``): not implemented, only ``0`` is accepted.
        Default: ``0``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' float dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When a size is not an int or ``bias``/``batch_first``/``bidirectional`` is not a bool.
    ValueError
        When a size is not positive, ``dropout`` is outside ``[0, 1]`` or ``mode`` is unknown.
    NotImplementedError
        When ``proj_size`` is above 0.

    Examples
    --------
    >>> rnn = remat.nn.RNNBase("GRU", 4, 3, num_layers=2)
    >>> [name for name, _ in rnn.named_parameters()][:4]
    ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    >>> rnn.weight_ih_l1.shape
    (9, 3)
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode!r} (LSTM, GRU, RNN_TANH or RNN_RELU)")
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        for arg, value in (("bias", bias), ("batch_first", batch_first),
                           ("bidirectional", bidirectional)):
            if not isinstance(value, bool):
                raise TypeError(f"{name}: {arg} must be a bool, got {value!r}")
        self.mode = mode
        self.input_size = _validate.integer(name, "input_size", input_size, minimum=1)
        self.hidden_size = _validate.integer(name, "hidden_size", hidden_size, minimum=1)
        self.num_layers = _validate.integer(name, "num_layers", num_layers, minimum=1)
        self.dropout = _validate.in_range(name, "dropout", dropout, 0.0, 1.0)
        proj_size = _validate.integer(name, "proj_size", proj_size, minimum=0)
        if proj_size > 0:
            raise NotImplementedError(
                f"{name}: proj_size > 0 (LSTM projections) is not implemented in remat")
        self.proj_size = 0
        self.bias = bias
        self.batch_first = batch_first
        self.bidirectional = bidirectional
        self.checkpoint_steps: int | None = None
        if self.dropout > 0 and self.num_layers == 1:
            import warnings

            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={self.dropout} "
                f"and num_layers={self.num_layers}",
                stacklevel=2,
            )
        gate = _GATES[mode] * self.hidden_size
        directions = 2 if bidirectional else 1
        stdv = 1.0 / math.sqrt(self.hidden_size)
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else self.hidden_size * directions
            for d in range(directions):
                suffix = "_reverse" if d == 1 else ""
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    (f"weight_ih_l{layer}{suffix}", (gate, width)),
                    (f"weight_hh_l{layer}{suffix}", (gate, self.hidden_size))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (gate,)),
                               (f"bias_hh_l{layer}{suffix}", (gate,))]
                for pname, shape in shapes:
                    setattr(self, pname, _uniform(shape, stdv, dtype, device))
                self._flat_weights_names.extend(n for n, _ in shapes)
                self._all_weights.append([n for n, _ in shapes])

    @property
    def _name(self) -> str:
        return type(self).__name__

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters per layer and direction, as PyTorch's ``all_weights``:
        ``[[weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0], ...]``.

        Examples
        --------
        >>> [len(ws) for ws in remat.nn.LSTM(2, 3, bidirectional=True).all_weights]
        [4, 4]
        """
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Do nothing (PyTorch packs the weights for cuDNN here; remat needs no packing).

        Returns
        -------
        None
            Nothing.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.LSTM(2, 3).flatten_parameters()
        """

    def reset_parameters(self) -> None:
        """Redraw every parameter from U(-1/√hidden_size, 1/√hidden_size), as PyTorch does.

        Returns
        -------
        None
            The parameters are filled in place.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> gru = remat.nn.GRU(2, 4)
        >>> gru.reset_parameters()
        >>> bool((gru.weight_hh_l0.abs() <= 0.5).all())
        True
        """
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def extra_repr(self) -> str:
        """The constructor arguments that differ from their defaults, as PyTorch prints them.

        Returns
        -------
        str
            ``"input_size, hidden_size"`` followed by ``num_layers=...`` etc. where set.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.LSTM(10, 20, num_layers=2, batch_first=True)
        LSTM(10, 20, num_layers=2, batch_first=True)
        """
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- the forward ----------------------------------------------------------------------

    def _states(self, input: Tensor, hx: Any) -> tuple[Tensor, Tensor, Tensor | None, bool]:
        """Check ``input`` and ``hx``; return the input as ``(T, B, in)``, ``h0`` and ``c0``
        as ``(layers * directions, B, H)`` and whether the input was batched."""
        name, lstm = self._name, self.mode == "LSTM"
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise remat.ShapeError(
                f"{name}: expected a 2-D (unbatched) or 3-D (batched) input, got shape "
                f"{_shape(input)}")
        batched = input.ndim == 3
        if input.shape[-1] != self.input_size:
            raise remat.ShapeError(
                f"{name}: input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]} (input of shape {_shape(input)})")
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise ValueError(
                f"{name}: input dtype ({input.dtype}) does not match weight dtype "
                f"({weight.dtype}); convert the input: input.to({weight.dtype}), or the model: "
                f"model.to({input.dtype})")
        want = 3 if batched else 2
        states: list[Tensor | None]
        if hx is None:
            states = [None, None] if lstm else [None]
        elif lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{name}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
            states = list(hx)
        else:
            states = [hx]
        for s in states:
            if s is not None and (not isinstance(s, Tensor) or s.ndim != want):
                got = f"{s.ndim}-D" if isinstance(s, Tensor) else type(s).__name__
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise remat.ShapeError(
                    f"{name}: for {kind} input, hx should also be {want}-D but got {got} "
                    f"(input of shape {_shape(input)})")
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
            states = [None if s is None else s.unsqueeze(1) for s in states]
        x = input.transpose(0, 1) if self.batch_first else input
        batch = x.shape[1]
        expected = (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)
        out: list[Tensor] = []
        for i, s in enumerate(states):
            label = "h_0" if i == 0 else "c_0"
            if s is None:
                s = remat.zeros(*expected, dtype=x.dtype, device=x.device)
            elif _shape(s) != expected:
                raise remat.ShapeError(
                    f"{name}: expected {label} of shape {expected} (num_layers * num_directions, "
                    f"batch, hidden_size), got {_shape(s)}")
            out.append(s)
        return x, out[0], (out[1] if lstm else None), batched

    def _direction(self, layer: int, d: int, x: Tensor, h0: Tensor, c0: Tensor | None,
                   steps: int | None) -> tuple[Tensor, Tensor, Tensor | None]:
        """Layer ``layer``, direction ``d`` over ``x`` ``(T, B, in)``; in chunks of
        ``steps`` time steps, each a checkpoint segment, when ``steps`` is given."""
        suffix = "_reverse" if d == 1 else ""
        w_ih = getattr(self, f"weight_ih_l{layer}{suffix}")
        w_hh = getattr(self, f"weight_hh_l{layer}{suffix}")
        b_ih = getattr(self, f"bias_ih_l{layer}{suffix}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_l{layer}{suffix}") if self.bias else None
        mode, reverse = self.mode, d == 1
        total = x.shape[0]
        if steps is None or steps >= total:
            xp = remat.linear(x, w_ih, b_ih)
            return _run_layer(mode, xp, h0, c0, w_hh, b_hh, reverse)
        return _chunked(mode, x, h0, c0, (w_ih, w_hh, b_ih, b_hh), reverse, steps)

    def _forward(self, input: Tensor, hx: Any) -> tuple[Tensor, Any]:
        x, h0, c0, batched = self._states(input, hx)
        steps = self.checkpoint_steps
        if steps is not None:
            steps = _validate.integer(self._name, "checkpoint_steps", steps, minimum=1)
            # An Elman RNN keeps only its outputs for backward: chunks would save nothing.
            if not remat.is_grad_enabled() or self.mode.startswith("RNN"):
                steps = None
        directions = 2 if self.bidirectional else 1
        hs: list[Tensor] = []
        cs: list[Tensor] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                out, h, c = self._direction(layer, d, x, h0[k], None if c0 is None else c0[k],
                                            steps)
                outs.append(out)
                hs.append(h)
                if c is not None:
                    cs.append(c)
            x = outs[0] if directions == 1 else remat.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        output = x.transpose(0, 1) if self.batch_first else x
        h_n = remat.stack(hs, 0)
        c_n = remat.stack(cs, 0) if cs else None
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n = h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        return output, (h_n if c_n is None else (h_n, c_n))


def _chunked(mode: str, x: Tensor, h: Tensor, c: Tensor | None, weights: tuple,
             reverse: bool, steps: int) -> tuple[Tensor, Tensor, Tensor | None]:
    """A layer over ``x`` in chunks of ``steps`` time steps, each (input projection and
    recurrence) a checkpoint segment; the chunks hand on copies of the state, and return
    copies of their outputs, so no chunk's gates outlive its forward."""
    w_ih, w_hh, b_ih, b_hh = weights
    total = x.shape[0]
    starts = list(range(0, total, steps))
    if reverse:
        starts.reverse()

    def chunk(xc: Tensor, h: Tensor, c: Tensor | None) -> tuple:
        xp = remat.linear(xc, w_ih, b_ih)
        out, h, c = _run_layer(mode, xp, h, c, w_hh, b_hh, reverse)
        return out.clone(), h.clone(), (None if c is None else c.clone())

    outs: list[Tensor] = []
    for s in starts:
        xc = x.narrow(0, s, min(steps, total - s))
        out, h, c = _checkpoint(chunk, xc, h, c)
        outs.append(out)
    if reverse:
        outs.reverse()
    return remat.cat(outs, 0), h, c


_FORWARD_SHAPES = """
        The input is ``(T, B, input_size)`` (``(B, T, input_size)`` with ``batch_first``)
        or unbatched ``(T, input_size)``; the states are ``(num_layers * num_directions, B,
        hidden_size)`` (unbatched: without the ``B`` axis), zeros when not given."""


class RNN(RNNBase):
    """A multi-layer Elman RNN, ``h_t = act(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)`` with
    ``act`` tanh or ReLU (as ``torch.nn.RNN``).

    Each layer and direction runs as one engine op over the sequence (``remat.rnn_layer``).
    Parameters, their names (``weight_ih_l0``, ..., ``_reverse``) and initialisation are
    PyTorch's; see :class:`RNNBase` (also for the ``checkpoint_steps`` attribute).

    Parameters
    ----------
    input_size : int
        Features of each input step.
    hidden_size : int
        Features of the hidden state.
    num_layers : int, optional
        Stacked layers. Default: ``1``.
    nonlinearity : str, optional
        ``"tanh"`` or ``"relu"``. Default: ``"tanh"``.
    bias : bool, optional
        Learn the biases. Default: ``True``.
    batch_first : bool, optional
        ``(batch, seq, feature)`` inputs and outputs. Default: ``False``.
    dropout : float, optional
        Dropout between layers in training mode. Default: ``0.0``.
    bidirectional : bool, optional
        Add a reverse direction. Default: ``False``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    ValueError
        When ``nonlinearity`` is not ``"tanh"`` or ``"relu"``, or an argument is out of range
        (see :class:`RNNBase`).
    TypeError
        When an argument has the wrong type.

    Examples
    --------
    >>> rnn = remat.nn.RNN(10, 20, 2)
    >>> out, h_n = rnn(remat.randn(5, 3, 10), remat.zeros(2, 3, 20))
    >>> out.shape, h_n.shape
    ((5, 3, 20), (2, 3, 20))
    >>> remat.nn.RNN(2, 3, nonlinearity="relu")
    RNN(2, 3, nonlinearity='relu')
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        """The arguments that differ from their defaults, ``nonlinearity`` included.

        Returns
        -------
        str
            As :meth:`RNNBase.extra_repr`, with ``nonlinearity='relu'`` where set.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.RNN(3, 4, nonlinearity="relu").extra_repr()
        "3, 4, nonlinearity='relu'"
        """
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity!r}"
        return s

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Run the layers over the sequence.

        Parameters
        ----------
        input : Tensor
            ``(T, B, input_size)``, ``(B, T, input_size)`` with ``batch_first``, or
            unbatched ``(T, input_size)``.
        hx : Tensor, optional
            The initial hidden states ``(num_layers * num_directions, B, hidden_size)``
            (unbatched: ``(num_layers * num_directions, hidden_size)``). Default: ``None``
            (zeros).

        Returns
        -------
        tuple of Tensor
            ``(output, h_n)``: the last layer's hidden state at every step, ``(T, B,
            num_directions * hidden_size)`` (in the input's layout), and every layer's final
            hidden state in ``hx``'s layout.

        Raises
        ------
        remat.ShapeError
            When the input is not 2-D or 3-D, its last axis is not ``input_size``, or ``hx``
            has the wrong shape (the message names the layer and the shapes).
        ValueError
            When the input's dtype is not the weights'.

        Examples
        --------
        >>> rnn = remat.nn.RNN(2, 3, batch_first=True)
        >>> out, h = rnn(remat.ones(4, 5, 2))
        >>> out.shape, h.shape
        ((4, 5, 3), (1, 4, 3))
        >>> bool((out[:, -1] == h[0]).all())
        True
        """
        out, h = self._forward(input, hx)
        return out, h


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN (as ``torch.nn.LSTM``).

    Each step computes the gates in PyTorch's order, ``i, f, g, o = split(x W_ihᵀ + b_ih +
    h W_hhᵀ + b_hh)``, then ``c = σ(f) c + σ(i) tanh(g)`` and ``h = σ(o) tanh(c)``. Each layer
    and direction runs as one engine op over the sequence (``remat.lstm_layer``); see
    :class:`RNNBase` for the parameters' names, shapes and initialisation (PyTorch's) and the
    ``checkpoint_steps`` attribute.

    Parameters
    ----------
    input_size : int
        Features of each input step.
    hidden_size : int
        Features of the hidden and cell states.
    num_layers : int, optional
        Stacked layers. Default: ``1``.
    bias : bool, optional
        Learn the biases. Default: ``True``.
    batch_first : bool, optional
        ``(batch, seq, feature)`` inputs and outputs. Default: ``False``.
    dropout : float, optional
        Dropout between layers in training mode. Default: ``0.0``.
    bidirectional : bool, optional
        Add a reverse direction. Default: ``False``.
    proj_size : int, optional
        PyTorch's LSTM projections: not implemented (only ``0``). Default: ``0``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    NotImplementedError
        When ``proj_size`` is above 0.
    ValueError
        When an argument is out of range (see :class:`RNNBase`).
    TypeError
        When an argument has the wrong type.

    Examples
    --------
    >>> lstm = remat.nn.LSTM(10, 20, 2)
    >>> out, (h_n, c_n) = lstm(remat.randn(5, 3, 10))
    >>> out.shape, h_n.shape, c_n.shape
    ((5, 3, 20), (2, 3, 20), (2, 3, 20))
    >>> lstm.weight_ih_l0.shape, lstm.weight_hh_l1.shape
    ((80, 10), (80, 20))

    Checkpointing every 4 steps gives the same forward and keeps fewer bytes:

    >>> lstm.checkpoint_steps = 4
    >>> out2, _ = lstm(remat.randn(5, 3, 10))
    >>> out2.shape
    (5, 3, 20)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input: Tensor,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Run the layers over the sequence.

        Parameters
        ----------
        input : Tensor
            ``(T, B, input_size)``, ``(B, T, input_size)`` with ``batch_first``, or
            unbatched ``(T, input_size)``.
        hx : tuple of Tensor, optional
            ``(h_0, c_0)``, each ``(num_layers * num_directions, B, hidden_size)``
            (unbatched: without ``B``). Default: ``None`` (zeros).

        Returns
        -------
        tuple
            ``(output, (h_n, c_n))``: the last layer's hidden state at every step, ``(T, B,
            num_directions * hidden_size)`` in the input's layout, and every layer's final
            hidden and cell states in ``hx``'s layout.

        Raises
        ------
        remat.ShapeError
            When the input is not 2-D or 3-D, its last axis is not ``input_size``, or
            ``h_0``/``c_0`` has the wrong shape (the message names the layer and shapes).
        TypeError
            When ``hx`` is not a pair.
        ValueError
            When the input's dtype is not the weights'.

        Examples
        --------
        >>> lstm = remat.nn.LSTM(3, 2, bidirectional=True)
        >>> out, (h, c) = lstm(remat.ones(4, 3))
        >>> out.shape, h.shape, c.shape
        ((4, 4), (2, 2), (2, 2))
        >>> lstm(remat.ones(4, 1, 5))
        Traceback (most recent call last):
            ...
        remat.ShapeError: LSTM: input.size(-1) must be equal to input_size. Expected 3, got 5...
        """
        return self._forward(input, hx)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN (as ``torch.nn.GRU``).

    Each step computes, in PyTorch's gate order ``r, z, n``: ``r = σ(x_r + h W_hrᵀ + b_hr)``,
    ``z = σ(x_z + h W_hzᵀ + b_hz)``, ``n = tanh(x_n + r (h W_hnᵀ + b_hn))`` and ``h = (1 - z)
    n + z h`` (with ``x_* = x W_i*ᵀ + b_i*``). Each layer and direction runs as one engine op
    over the sequence (``remat.gru_layer``); see :class:`RNNBase` for the parameters and the
    ``checkpoint_steps`` attribute.

    Parameters
    ----------
    input_size : int
        Features of each input step.
    hidden_size : int
        Features of the hidden state.
    num_layers : int, optional
        Stacked layers. Default: ``1``.
    bias : bool, optional
        Learn the biases. Default: ``True``.
    batch_first : bool, optional
        ``(batch, seq, feature)`` inputs and outputs. Default: ``False``.
    dropout : float, optional
        Dropout between layers in training mode. Default: ``0.0``.
    bidirectional : bool, optional
        Add a reverse direction. Default: ``False``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    ValueError
        When an argument is out of range (see :class:`RNNBase`).
    TypeError
        When an argument has the wrong type.

    Examples
    --------
    >>> gru = remat.nn.GRU(10, 20, 2)
    >>> out, h_n = gru(remat.randn(5, 3, 10))
    >>> out.shape, h_n.shape
    ((5, 3, 20), (2, 3, 20))
    >>> gru.weight_hh_l0.shape
    (60, 20)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Run the layers over the sequence.

        Parameters
        ----------
        input : Tensor
            ``(T, B, input_size)``, ``(B, T, input_size)`` with ``batch_first``, or
            unbatched ``(T, input_size)``.
        hx : Tensor, optional
            The initial hidden states ``(num_layers * num_directions, B, hidden_size)``
            (unbatched: without ``B``). Default: ``None`` (zeros).

        Returns
        -------
        tuple of Tensor
            ``(output, h_n)`` as for :meth:`RNN.forward`.

        Raises
        ------
        remat.ShapeError
            When the input is not 2-D or 3-D, its last axis is not ``input_size``, or ``hx``
            has the wrong shape.
        ValueError
            When the input's dtype is not the weights'.

        Examples
        --------
        >>> gru = remat.nn.GRU(2, 3, num_layers=2)
        >>> out, h = gru(remat.ones(4, 1, 2))
        >>> out.shape, h.shape
        ((4, 1, 3), (2, 1, 3))
        >>> gru(remat.ones(4, 1, 2), remat.zeros(1, 1, 3))
        Traceback (most recent call last):
            ...
        remat.ShapeError: GRU: expected h_0 of shape (2, 1, 3) ..., got (1, 1, 3)
        """
        out, h = self._forward(input, hx)
        return out, h


# ------------------------------------------------------------------------------ cells


class RNNCellBase(Module):
    """The base of :class:`RNNCell`, :class:`LSTMCell` and :class:`GRUCell` (as
    ``torch.nn.RNNCellBase``): ``weight_ih`` ``(G*hidden_size, input_size)``, ``weight_hh``
    ``(G*hidden_size, hidden_size)``, ``bias_ih`` and ``bias_hh`` ``(G*hidden_size,)``, drawn
    from U(-1/√hidden_size, 1/√hidden_size).

    A cell runs one step; it is the layer op over a one-step sequence, so its gate math is
    the fused kernel of the layers.

    Parameters
    ----------
    input_size : int
        Features of the input.
    hidden_size : int
        Features of the hidden state.
    bias : bool
        Learn ``bias_ih`` and ``bias_hh``.
    num_chunks : int
        Gates ``G`` (4 for an LSTM, 3 for a GRU, 1 for an RNN).
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When a size is not an int or ``bias`` not a bool.
    ValueError
        When a size is not positive.

    Examples
    --------
    >>> cell = remat.nn.RNNCellBase(3, 2, True, 4)
    >>> cell.weight_ih.shape, cell.bias_hh.shape
    ((8, 3), (8,))
    """

    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        if not isinstance(bias, bool):
            raise TypeError(f"{name}: bias must be a bool, got {bias!r}")
        self.input_size = _validate.integer(name, "input_size", input_size, minimum=1)
        self.hidden_size = _validate.integer(name, "hidden_size", hidden_size, minimum=1)
        self.bias = bias
        gate = _validate.integer(name, "num_chunks", num_chunks, minimum=1) * self.hidden_size
        stdv = 1.0 / math.sqrt(self.hidden_size)
        self.weight_ih = _uniform((gate, self.input_size), stdv, dtype, device)
        self.weight_hh = _uniform((gate, self.hidden_size), stdv, dtype, device)
        if bias:
            self.bias_ih = _uniform((gate,), stdv, dtype, device)
            self.bias_hh = _uniform((gate,), stdv, dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def reset_parameters(self) -> None:
        """Redraw every parameter from U(-1/√hidden_size, 1/√hidden_size).

        Returns
        -------
        None
            The parameters are filled in place.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> cell = remat.nn.GRUCell(2, 4)
        >>> cell.reset_parameters()
        >>> bool((cell.weight_ih.abs() <= 0.5).all())
        True
        """
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def extra_repr(self) -> str:
        """``"input_size, hidden_size"`` and the arguments that differ from their defaults.

        Returns
        -------
        str
            The text inside the cell's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.LSTMCell(3, 4, bias=False)
        LSTMCell(3, 4, bias=False)
        """
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl!r}"
        return s

    def _step(self, input: Tensor, states: list[Tensor | None]) -> tuple[Tensor, Tensor | None]:
        """One step of the cell: ``(h', c')`` (``c'`` None but for an LSTM), unbatched
        inputs and states handled as PyTorch does."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise remat.ShapeError(
                f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead "
                f"(shape {_shape(input)})")
        if input.shape[-1] != self.input_size:
            raise remat.ShapeError(
                f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected "
                f"{self.input_size} (input of shape {_shape(input)})")
        if input.dtype != self.weight_ih.dtype:
            raise ValueError(
                f"{name}: input dtype ({input.dtype}) does not match weight dtype "
                f"({self.weight_ih.dtype})")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        batch = input.shape[0]
        full: list[Tensor] = []
        for i, s in enumerate(states):
            label = "hx" if len(states) == 1 else f"hx[{i}]"
            if s is None:
                full.append(remat.zeros(batch, self.hidden_size, dtype=input.dtype,
                                        device=input.device))
                continue
            if not isinstance(s, Tensor) or s.ndim not in (1, 2):
                got = f"{s.ndim}D" if isinstance(s, Tensor) else type(s).__name__
                raise remat.ShapeError(f"{name}: Expected {label} to be 1D or 2D, got {got}")
            if not batched:
                s = s.unsqueeze(0)
            if _shape(s) != (batch, self.hidden_size):
                raise remat.ShapeError(
                    f"{name}: expected {label} of shape {(batch, self.hidden_size)} (batch, "
                    f"hidden_size), got {_shape(s)} for input of shape "
                    f"{_shape(input if batched else input.squeeze(0))}")
            full.append(s)
        xp = remat.linear(input, self.weight_ih, self.bias_ih).unsqueeze(0)
        c0 = full[1] if len(full) == 2 else None
        _, h, c = _run_layer(self._mode, xp, full[0], c0, self.weight_hh, self.bias_hh, False)
        if not batched:
            h = h.squeeze(0)
            c = None if c is None else c.squeeze(0)
        return h, c


class RNNCell(RNNCellBase):
    """An Elman RNN cell, ``h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` with ``act`` tanh or
    ReLU (as ``torch.nn.RNNCell``).

    Parameters
    ----------
    input_size : int
        Features of the input.
    hidden_size : int
        Features of the hidden state.
    bias : bool, optional
        Learn the biases. Default: ``True``.
    nonlinearity : str, optional
        ``"tanh"`` or ``"relu"``. Default: ``"tanh"``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    ValueError
        When ``nonlinearity`` is unknown or a size is not positive.
    TypeError
        When an argument has the wrong type.

    Examples
    --------
    >>> cell = remat.nn.RNNCell(10, 20)
    >>> h = remat.zeros(3, 20)
    >>> for x in remat.randn(6, 3, 10):
    ...     h = cell(x, h)
    >>> h.shape
    (3, 20)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"RNNCell: Unknown nonlinearity: {nonlinearity!r}. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_RELU" if nonlinearity == "relu" else "RNN_TANH"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step.

        Parameters
        ----------
        input : Tensor
            ``(B, input_size)`` or unbatched ``(input_size,)``.
        hx : Tensor, optional
            ``(B, hidden_size)`` (or ``(hidden_size,)``). Default: ``None`` (zeros).

        Returns
        -------
        Tensor
            The next hidden state, of ``hx``'s shape.

        Raises
        ------
        remat.ShapeError
            When the input or ``hx`` has the wrong number of axes or sizes.
        ValueError
            When the input's dtype is not the weights'.

        Examples
        --------
        >>> cell = remat.nn.RNNCell(2, 3, nonlinearity="relu")
        >>> cell(remat.ones(2)).shape
        (3,)
        """
        h, _ = self._step(input, [hx])
        return h


class LSTMCell(RNNCellBase):
    """A long short-term memory cell, one step of :class:`LSTM` (as ``torch.nn.LSTMCell``):
    gates ``i, f, g, o``, ``c' = σ(f) c + σ(i) tanh(g)``, ``h' = σ(o) tanh(c')``.

    Parameters
    ----------
    input_size : int
        Features of the input.
    hidden_size : int
        Features of the hidden and cell states.
    bias : bool, optional
        Learn the biases. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    ValueError
        When a size is not positive.
    TypeError
        When an argument has the wrong type.

    Examples
    --------
    >>> cell = remat.nn.LSTMCell(10, 20)
    >>> h, c = remat.zeros(3, 20), remat.zeros(3, 20)
    >>> for x in remat.randn(2, 3, 10):
    ...     h, c = cell(x, (h, c))
    >>> h.shape, c.shape
    ((3, 20), (3, 20))
    """

    _mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input: Tensor,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """One step.

        Parameters
        ----------
        input : Tensor
            ``(B, input_size)`` or unbatched ``(input_size,)``.
        hx : tuple of Tensor, optional
            ``(h, c)``, each ``(B, hidden_size)`` (or ``(hidden_size,)``). Default: ``None``
            (zeros).

        Returns
        -------
        tuple of Tensor
            ``(h', c')``, the next hidden and cell states.

        Raises
        ------
        remat.ShapeError
            When the input or a state has the wrong number of axes or sizes.
        TypeError
            When ``hx`` is not a pair.
        ValueError
            When the input's dtype is not the weights'.

        Examples
        --------
        >>> cell = remat.nn.LSTMCell(2, 3)
        >>> h, c = cell(remat.ones(4, 2))
        >>> h.shape, c.shape
        ((4, 3), (4, 3))
        """
        if hx is None:
            states: list[Tensor | None] = [None, None]
        elif isinstance(hx, (tuple, list)) and len(hx) == 2:
            states = list(hx)
        else:
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c), got {type(hx).__name__}")
        h, c = self._step(input, states)
        assert c is not None
        return h, c


class GRUCell(RNNCellBase):
    """A gated recurrent unit cell, one step of :class:`GRU` (as ``torch.nn.GRUCell``): gates
    ``r, z, n`` with ``n = tanh(x_n + r (h W_hnᵀ + b_hn))`` and ``h' = (1 - z) n + z h``.

    Parameters
    ----------
    input_size : int
        Features of the input.
    hidden_size : int
        Features of the hidden state.
    bias : bool, optional
        Learn the biases. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' dtype. Default: ``None`` (float32).

    Raises
    ------
    ValueError
        When a size is not positive.
    TypeError
        When an argument has the wrong type.

    Examples
    --------
    >>> cell = remat.nn.GRUCell(10, 20)
    >>> h = cell(remat.randn(3, 10))
    >>> h.shape
    (3, 20)
    """

    _mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step.

        Parameters
        ----------
        input : Tensor
            ``(B, input_size)`` or unbatched ``(input_size,)``.
        hx : Tensor, optional
            ``(B, hidden_size)`` (or ``(hidden_size,)``). Default: ``None`` (zeros).

        Returns
        -------
        Tensor
            The next hidden state.

        Raises
        ------
        remat.ShapeError
            When the input or ``hx`` has the wrong number of axes or sizes.
        ValueError
            When the input's dtype is not the weights'.

        Examples
        --------
        >>> cell = remat.nn.GRUCell(2, 3)
        >>> cell(remat.ones(4, 2), remat.zeros(4, 3)).shape
        (4, 3)
        """
        h, _ = self._step(input, [hx])
        return h
