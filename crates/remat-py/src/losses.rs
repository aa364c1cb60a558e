//! Python bindings of the losses (PyTorch's signatures: `reduction`, `weight`,
//! `ignore_index`, `label_smoothing`, `pos_weight`) and of `scaled_dot_product_attention`.
//! The plain mean cross-entropy of `(N, C)` logits against class indices keeps the fused
//! kernel; every other form is `ops::cross_entropy_with`.

use crate::call::{heavy, run, unary};
use crate::convert::{self, operand, operand_pair};
use crate::tensor::{wrap, PyTensor};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use remat_core::ops::{self, Reduction};
use remat_core::Tensor;

fn reduction_of(
    op: &str,
    r: &str,
    size_average: Option<bool>,
    reduce: Option<bool>,
) -> PyResult<Reduction> {
    // PyTorch's legacy arguments, when given, decide.
    if size_average.is_some() || reduce.is_some() {
        let (avg, red) = (size_average.unwrap_or(true), reduce.unwrap_or(true));
        return Ok(if !red {
            Reduction::None
        } else if avg {
            Reduction::Mean
        } else {
            Reduction::Sum
        });
    }
    Reduction::parse(op, r).map_err(crate::errors::to_pyerr)
}

/// An optional tensor argument (None or absent: None) in `like`'s dtype.
pub(crate) fn optional(
    op: &str,
    o: Option<&Bound<'_, PyAny>>,
    like: &Tensor,
) -> PyResult<Option<Tensor>> {
    match o {
        Some(o) if !o.is_none() => operand(op, o, like).map(Some),
        _ => Ok(None),
    }
}

/// Mean squared error `(input - target)²`, reduced (`"mean"`, `"sum"` or `"none"`).
#[pyfunction]
#[pyo3(signature = (input, target, size_average=None, reduce=None, reduction="mean"))]
fn mse_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = reduction_of("mse_loss", reduction, size_average, reduce)?;
    let (a, b) = operand_pair("mse_loss", input, target)?;
    run(py, heavy(&[&a, &b]), || ops::mse_loss_with(&a, &b, r)).map(wrap)
}

/// Mean absolute error `|input - target|`, reduced.
#[pyfunction]
#[pyo3(signature = (input, target, size_average=None, reduce=None, reduction="mean"))]
fn l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = reduction_of("l1_loss", reduction, size_average, reduce)?;
    let (a, b) = operand_pair("l1_loss", input, target)?;
    run(py, heavy(&[&a, &b]), || ops::l1_loss(&a, &b, r)).map(wrap)
}

/// Binary cross-entropy of logits against float targets (stable), with optional `weight`
/// and `pos_weight`, reduced.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None))]
#[allow(clippy::too_many_arguments)]
fn binary_cross_entropy_with_logits(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
    pos_weight: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    let r = reduction_of(OP, reduction, size_average, reduce)?;
    let x = convert::extract_tensor(OP, input)?;
    let t = operand(OP, target, &x)?;
    let (w, pw) = (optional(OP, weight, &x)?, optional(OP, pos_weight, &x)?);
    run(py, heavy(&[&x]), || {
        ops::binary_cross_entropy_with_logits(&x, &t, w.as_ref(), pw.as_ref(), r)
    })
    .map(wrap)
}

/// An int64 class-index tensor, or a float tensor of class probabilities.
fn target_tensor(op: &str, target: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = target.downcast::<PyTensor>() {
        return Ok(t.get().inner.clone());
    }
    convert::tensor_from_py(op, target, None)
}

/// Negative log-likelihood of log-probabilities `(N, C, d...)` / `(C,)` at the target
/// classes, with class `weight`, `ignore_index` and `reduction` (the mean divides by the
/// summed weights of the positions not ignored).
#[pyfunction]
#[pyo3(
    signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"),
    text_signature = "(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean')"
)]
#[allow(clippy::too_many_arguments)]
fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    ignore_index: i64,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = reduction_of("nll_loss", reduction, size_average, reduce)?;
    let x = convert::extract_tensor("nll_loss", input)?;
    let t = target_tensor("nll_loss", target)?;
    let w = optional("nll_loss", weight, &x)?;
    run(py, heavy(&[&x]), || {
        ops::nll_loss(&x, &t, w.as_ref(), ignore_index, r)
    })
    .map(wrap)
}

/// Class indices from a NumPy int array, a list or a Tensor; non-integer values raise
/// ValueError.
fn class_indices(target: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    let py = target.py();
    let np = convert::numpy(py)?;
    let arr = match target.downcast::<PyTensor>() {
        Ok(t) => crate::numpy_bridge::to_numpy(py, &crate::tensor::host(&t.get().inner)?)?,
        Err(_) => np.getattr("asarray")?.call1((target,))?,
    };
    let arr = arr.downcast_into::<PyUntypedArray>()?;
    let kind = arr.dtype().getattr("kind")?.extract::<String>()?;
    let ints = match kind.as_str() {
        "i" | "u" | "b" => arr.call_method1("astype", ("int64",))?,
        "f" => {
            let all_int: bool = np
                .getattr("all")?
                .call1((np
                    .getattr("equal")?
                    .call1((&arr, np.getattr("floor")?.call1((&arr,))?))?,))?
                .extract()?;
            if !all_int {
                return Err(PyValueError::new_err(
                    "cross_entropy: target must hold integer class indices, got non-integer values",
                ));
            }
            arr.call_method1("astype", ("int64",))?
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "cross_entropy: target must hold integer class indices, got dtype {}",
                arr.dtype()
            )))
        }
    };
    ints.call_method0("ravel")?
        .call_method0("tolist")?
        .extract()
}

/// Cross-entropy of logits `(N, C, d...)` or `(C,)` against class indices (or class
/// probabilities of the input's shape), with PyTorch's `weight`, `ignore_index`,
/// `reduction` and `label_smoothing`.
#[pyfunction]
#[pyo3(
    signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0),
    text_signature = "(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', label_smoothing=0.0)"
)]
#[allow(clippy::too_many_arguments)]
fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    ignore_index: i64,
    reduce: Option<bool>,
    reduction: &str,
    label_smoothing: f64,
) -> PyResult<PyTensor> {
    let r = reduction_of("cross_entropy", reduction, size_average, reduce)?;
    let x = convert::extract_tensor("cross_entropy", input)?;
    let w = optional("cross_entropy", weight, &x)?;
    let float_target = target
        .downcast::<PyTensor>()
        .is_ok_and(|t| t.get().inner.dtype().is_float());
    let plain = w.is_none()
        && r == Reduction::Mean
        && label_smoothing == 0.0
        && x.ndim() <= 2
        && !float_target;
    if plain {
        // The fused kernel (ignore_index only matters when a target equals it).
        let t = class_indices(target)?;
        if !t.contains(&ignore_index) {
            return unary(py, &x, |x| ops::cross_entropy(x, &t));
        }
    }
    let t = target_tensor("cross_entropy", target)?;
    run(py, heavy(&[&x]), || {
        ops::cross_entropy_with(&x, &t, w.as_ref(), ignore_index, r, label_smoothing)
    })
    .map(wrap)
}

/// `softmax(q kᵀ · scale + mask) v` with optional dropout on the weights; PyTorch's
/// signature (`attn_mask` bool: true takes part; float: added; `is_causal`: top-left causal
/// mask; `scale` default `1/√E`).
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=false, scale=None, enable_gqa=false))]
#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    py: Python<'_>,
    query: &Bound<'_, PyAny>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    attn_mask: Option<&Bound<'_, PyAny>>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "scaled_dot_product_attention";
    if enable_gqa {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "scaled_dot_product_attention: enable_gqa is not supported",
        ));
    }
    let q = convert::extract_tensor(OP, query)?;
    let k = convert::extract_tensor(OP, key)?;
    let v = convert::extract_tensor(OP, value)?;
    let mask = match attn_mask {
        Some(m) if !m.is_none() => Some(match m.downcast::<PyTensor>() {
            Ok(t) => t.get().inner.clone(),
            Err(_) => convert::tensor_from_py(OP, m, None)?,
        }),
        _ => None,
    };
    run(py, heavy(&[&q, &k, &v]), || {
        ops::scaled_dot_product_attention(&q, &k, &v, mask.as_ref(), dropout_p, is_causal, scale)
    })
    .map(wrap)
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mse_loss, m)?)?;
    m.add_function(wrap_pyfunction!(l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy_with_logits, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(scaled_dot_product_attention, m)?)?;
    Ok(())
}
