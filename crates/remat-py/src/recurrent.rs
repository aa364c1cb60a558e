//! The recurrent layer ops (`ops::recurrent`): `lstm_layer`, `gru_layer` and `rnn_layer`, one
//! layer and direction of `nn.LSTM`, `nn.GRU` and `nn.RNN` over a whole sequence.

use crate::call::{heavy, run};
use crate::convert;
use crate::tensor::wrap;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use remat_core::{ops, Tensor};

fn optional(op: &str, b: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match b {
        Some(b) if !b.is_none() => convert::extract_tensor(op, b).map(Some),
        _ => Ok(None),
    }
}

/// One LSTM layer (one direction) over a whole sequence, in the engine.
///
/// The recurrence of ``remat.nn.LSTM`` without its input projection: with ``x_proj`` the
/// projected inputs ``x @ W_ih.T + b_ih`` of every step (one matrix product, done by the
/// caller), each step computes ``gates = x_proj[t] + h @ w_hh.T + b_hh``, split in PyTorch's
/// order ``i, f, g, o``, then ``c = sigmoid(f) * c + sigmoid(i) * tanh(g)`` and ``h =
/// sigmoid(o) * tanh(c)``: one matrix product and one fused pass over the gates per step. The
/// backward runs the reverse recurrence in the engine; it keeps ``h0``, ``c0``, ``w_hh``, the
/// hidden and cell states and the activated gates of every step (six ``(T, B, H)`` slabs),
/// never ``x_proj``. Differentiable in every tensor argument, to any order.
///
/// Parameters
/// ----------
/// x_proj : Tensor
///     ``(T, B, 4 * H)``: the projected inputs of the ``T`` steps of ``B`` sequences.
/// h0 : Tensor
///     ``(B, H)``: the initial hidden state.
/// c0 : Tensor
///     ``(B, H)``: the initial cell state.
/// w_hh : Tensor
///     ``(4 * H, H)``: the recurrent weight (``weight_hh_l0`` of ``nn.LSTM``).
/// b_hh : Tensor, optional
///     ``(4 * H,)``: the recurrent bias. Default: ``None`` (no bias).
/// reverse : bool, optional
///     Run from the last step to the first (the reverse direction of a bidirectional
///     layer): ``output[t]`` is then the state after steps ``T - 1, ..., t``. Default:
///     ``False``.
///
/// Returns
/// -------
/// tuple of Tensor
///     ``(output, h_n, c_n)``: the hidden state of every step ``(T, B, H)``, and the hidden
///     and cell states after the last step processed ``(B, H)`` (step ``T - 1``, or ``0``
///     with ``reverse``).
///
/// Raises
/// ------
/// ShapeError
///     When the shapes do not fit together (the message names them) or the sequence is empty.
/// DTypeError
///     When an argument is not a float tensor.
///
/// Examples
/// --------
/// >>> x_proj = remat.zeros(3, 2, 8)
/// >>> h0, c0 = remat.zeros(2, 2), remat.ones(2, 2)
/// >>> out, h, c = remat.lstm_layer(x_proj, h0, c0, remat.zeros(8, 2))
/// >>> out.shape, h.shape, c.shape
/// ((3, 2, 2), (2, 2), (2, 2))
/// >>> c
/// tensor([[0.1250, 0.1250],
///         [0.1250, 0.1250]])
#[pyfunction]
#[pyo3(signature = (x_proj, h0, c0, w_hh, b_hh=None, reverse=false))]
#[allow(clippy::too_many_arguments)]
fn lstm_layer<'py>(
    py: Python<'py>,
    x_proj: &Bound<'py, PyAny>,
    h0: &Bound<'py, PyAny>,
    c0: &Bound<'py, PyAny>,
    w_hh: &Bound<'py, PyAny>,
    b_hh: Option<&Bound<'py, PyAny>>,
    reverse: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    const OP: &str = "lstm_layer";
    let x = convert::extract_tensor(OP, x_proj)?;
    let h = convert::extract_tensor(OP, h0)?;
    let c = convert::extract_tensor(OP, c0)?;
    let w = convert::extract_tensor(OP, w_hh)?;
    let b = optional(OP, b_hh)?;
    let (o, hn, cn) = run(py, heavy(&[&x, &w]), || {
        ops::lstm_layer(&x, &h, &c, &w, b.as_ref(), reverse)
    })?;
    PyTuple::new(py, [wrap(o), wrap(hn), wrap(cn)])
}

/// One GRU layer (one direction) over a whole sequence, in the engine.
///
/// The recurrence of ``remat.nn.GRU`` without its input projection: with ``x_proj = x @
/// W_ih.T + b_ih`` split in PyTorch's order ``r, z, n`` and ``hh = h @ w_hh.T + b_hh`` split
/// likewise, each step computes ``r = sigmoid(x_r + hh_r)``, ``z = sigmoid(x_z + hh_z)``,
/// ``n = tanh(x_n + r * hh_n)`` and ``h = n + z * (h - n)`` (that is ``(1 - z) * n + z *
/// h``): one matrix product and one fused pass per step. The backward keeps the hidden
/// states, ``r``, ``z``, ``n`` and ``hh_n`` of every step (five ``(T, B, H)`` slabs).
/// Differentiable in every tensor argument, to any order.
///
/// Parameters
/// ----------
/// x_proj : Tensor
///     ``(T, B, 3 * H)``: the projected inputs.
/// h0 : Tensor
///     ``(B, H)``: the initial hidden state.
/// w_hh : Tensor
///     ``(3 * H, H)``: the recurrent weight.
/// b_hh : Tensor, optional
///     ``(3 * H,)``: the recurrent bias. Default: ``None`` (no bias).
/// reverse : bool, optional
///     Run from the last step to the first. Default: ``False``.
///
/// Returns
/// -------
/// tuple of Tensor
///     ``(output, h_n)``: the hidden state of every step ``(T, B, H)`` and the one after the
///     last step processed ``(B, H)``.
///
/// Raises
/// ------
/// ShapeError
///     When the shapes do not fit together or the sequence is empty.
/// DTypeError
///     When an argument is not a float tensor.
///
/// Examples
/// --------
/// >>> out, h = remat.gru_layer(remat.zeros(4, 1, 6), remat.ones(1, 2), remat.zeros(6, 2))
/// >>> out.shape
/// (4, 1, 2)
/// >>> h
/// tensor([[0.0625, 0.0625]])
#[pyfunction]
#[pyo3(signature = (x_proj, h0, w_hh, b_hh=None, reverse=false))]
fn gru_layer<'py>(
    py: Python<'py>,
    x_proj: &Bound<'py, PyAny>,
    h0: &Bound<'py, PyAny>,
    w_hh: &Bound<'py, PyAny>,
    b_hh: Option<&Bound<'py, PyAny>>,
    reverse: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    const OP: &str = "gru_layer";
    let x = convert::extract_tensor(OP, x_proj)?;
    let h = convert::extract_tensor(OP, h0)?;
    let w = convert::extract_tensor(OP, w_hh)?;
    let b = optional(OP, b_hh)?;
    let (o, hn) = run(py, heavy(&[&x, &w]), || {
        ops::gru_layer(&x, &h, &w, b.as_ref(), reverse)
    })?;
    PyTuple::new(py, [wrap(o), wrap(hn)])
}

/// One Elman RNN layer (one direction) over a whole sequence, in the engine.
///
/// The recurrence of ``remat.nn.RNN`` without its input projection: each step computes
/// ``h = act(x_proj[t] + h @ w_hh.T + b_hh)`` with ``act`` tanh or ReLU. The backward keeps
/// only the hidden states (the activation's derivative is a function of them).
/// Differentiable in every tensor argument, to any order.
///
/// Parameters
/// ----------
/// x_proj : Tensor
///     ``(T, B, H)``: the projected inputs ``x @ W_ih.T + b_ih``.
/// h0 : Tensor
///     ``(B, H)``: the initial hidden state.
/// w_hh : Tensor
///     ``(H, H)``: the recurrent weight.
/// b_hh : Tensor, optional
///     ``(H,)``: the recurrent bias. Default: ``None`` (no bias).
/// nonlinearity : str, optional
///     ``"tanh"`` or ``"relu"``. Default: ``"tanh"``.
/// reverse : bool, optional
///     Run from the last step to the first. Default: ``False``.
///
/// Returns
/// -------
/// tuple of Tensor
///     ``(output, h_n)``: the hidden state of every step ``(T, B, H)`` and the one after the
///     last step processed ``(B, H)``.
///
/// Raises
/// ------
/// ShapeError
///     When the shapes do not fit together or the sequence is empty.
/// ValueError
///     When ``nonlinearity`` is neither ``"tanh"`` nor ``"relu"``.
/// DTypeError
///     When an argument is not a float tensor.
///
/// Examples
/// --------
/// >>> x_proj = remat.tensor([[[1.0]], [[-2.0]], [[3.0]]])
/// >>> out, h = remat.rnn_layer(x_proj, remat.zeros(1, 1), remat.ones(1, 1),
/// ...                          nonlinearity="relu")
/// >>> out.flatten()
/// tensor([1., 0., 3.])
#[pyfunction]
#[pyo3(signature = (x_proj, h0, w_hh, b_hh=None, nonlinearity="tanh", reverse=false))]
fn rnn_layer<'py>(
    py: Python<'py>,
    x_proj: &Bound<'py, PyAny>,
    h0: &Bound<'py, PyAny>,
    w_hh: &Bound<'py, PyAny>,
    b_hh: Option<&Bound<'py, PyAny>>,
    nonlinearity: &str,
    reverse: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    const OP: &str = "rnn_layer";
    let relu = match nonlinearity {
        "tanh" => false,
        "relu" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "rnn_layer: unknown nonlinearity '{other}'; select from 'tanh' or 'relu'"
            )))
        }
    };
    let x = convert::extract_tensor(OP, x_proj)?;
    let h = convert::extract_tensor(OP, h0)?;
    let w = convert::extract_tensor(OP, w_hh)?;
    let b = optional(OP, b_hh)?;
    let (o, hn) = run(py, heavy(&[&x, &w]), || {
        ops::rnn_layer(&x, &h, &w, b.as_ref(), relu, reverse)
    })?;
    PyTuple::new(py, [wrap(o), wrap(hn)])
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lstm_layer, m)?)?;
    m.add_function(wrap_pyfunction!(gru_layer, m)?)?;
    m.add_function(wrap_pyfunction!(rnn_layer, m)?)?;
    Ok(())
}
