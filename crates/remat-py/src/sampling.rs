//! Python bindings of the sampling ops, with PyTorch's signatures: `normal` (its four
//! overloads), `randperm`, and the in-place fills
//! `Tensor.bernoulli_` and `Tensor.exponential_`. Each takes `generator=`; without it the
//! global stream (`remat.manual_seed`) is drawn.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::dtype::parse_opt_dtype;
use crate::functions::leaf;
use crate::generator::{drawing, PyGenerator};
use crate::inplace::in_place;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use remat_core::{ops, DType, Tensor};

/// A `num_samples` count as PyTorch checks it (a negative one is a `ValueError`).
pub(crate) fn sample_count(n: i64) -> PyResult<usize> {
    usize::try_from(n).map_err(|_| {
        PyValueError::new_err(format!(
            "multinomial: cannot sample n_sample <= 0 samples, got {n}"
        ))
    })
}

/// A random permutation of ``0, 1, ..., n - 1``, as PyTorch's ``torch.randperm``.
///
/// Every permutation is equally likely; the draw comes from the global generator
/// (``remat.manual_seed``) or `generator`.
///
/// Parameters
/// ----------
/// n : int
///     The length (``>= 0``).
/// generator : Generator, optional
///     The random stream to draw from. Default: ``None`` (the global stream).
/// dtype : DType, optional
///     The element type. Default: ``remat.int64``.
/// device : str or device, optional
///     The device. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (float dtypes only). Default:
///     ``False``.
///
/// Returns
/// -------
/// Tensor
///     A 1-D tensor of the ``n`` integers in random order.
///
/// Raises
/// ------
/// ValueError
///     When `n` is negative or too large for `dtype`.
/// DTypeError
///     When `dtype` is bool.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> p = remat.randperm(5)
/// >>> sorted(p.tolist())
/// [0, 1, 2, 3, 4]
/// >>> p.dtype
/// remat.int64
#[pyfunction]
#[pyo3(signature = (n, *, generator=None, dtype=None, device=None, requires_grad=false))]
fn randperm(
    py: Python<'_>,
    n: i64,
    generator: Option<&Bound<'_, PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let n = usize::try_from(n)
        .map_err(|_| PyValueError::new_err(format!("randperm: n must be non-negative, got {n}")))?;
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::I64);
    let dev = args::device(device)?;
    let t = drawing(generator, || run(py, false, || ops::randperm(n, dt, dev)))?;
    leaf(t, requires_grad)
}

/// `input`'s probabilities, or `p` broadcast to `input`'s shape when given.
pub(crate) fn probabilities(input: &Tensor, p: Option<f64>) -> remat_core::Result<Tensor> {
    match p {
        Some(p) => ops::full(input.shape(), p, input.dtype(), input.device()),
        None => Ok(input.clone()),
    }
}

/// A mean or standard deviation argument of `normal`: a tensor, or a number.
enum Param {
    Tensor(Tensor),
    Number(f64),
}

impl Param {
    fn from_py(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Param> {
        if let Ok(t) = obj.downcast::<PyTensor>() {
            return Ok(Param::Tensor(t.get().inner.clone()));
        }
        obj.extract::<f64>().map(Param::Number).map_err(|_| {
            PyTypeError::new_err(format!(
                "normal: {what} must be a Tensor or a number, got {}",
                convert::type_name(obj)
            ))
        })
    }
    /// The parameter as a tensor: a number becomes a 0-d tensor like `like`.
    fn tensor(&self, like: &Tensor) -> remat_core::Result<Tensor> {
        match self {
            Param::Tensor(t) => Ok(t.clone()),
            Param::Number(v) => ops::full(&[], *v, like.dtype(), like.device()),
        }
    }
}

/// Normal samples of the given means and standard deviations, as PyTorch's ``torch.normal``.
///
/// Four forms: ``normal(mean: Tensor, std: Tensor)`` (broadcast together), ``normal(mean:
/// Tensor, std: float = 1.0)``, ``normal(mean: float, std: Tensor)``, and ``normal(mean:
/// float, std: float, size)``. Each sample is ``mean + std * z`` with ``z`` drawn as
/// ``remat.randn`` draws it. The samples are not differentiable (PyTorch's gradients of them
/// are zero): the result does not require grad unless `requires_grad` asks for a new leaf.
///
/// Parameters
/// ----------
/// mean : Tensor or float
///     The means.
/// std : Tensor or float, optional
///     The standard deviations (``>= 0``). Default: ``1.0``.
/// size : tuple of int, optional
///     The shape, for the form with two numbers (required there, refused otherwise). Default:
///     ``None``.
/// generator : Generator, optional
///     The random stream to draw from. Default: ``None`` (the global stream).
/// dtype : DType, optional
///     The float dtype of the two-number form. Default: ``None`` (float32).
/// device : str or device, optional
///     The device of the two-number form. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether the result is a leaf that requires grad. Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     The samples, of the broadcast shape of `mean` and `std` (or `size`).
///
/// Raises
/// ------
/// TypeError
///     When `size` is missing for two numbers or given with a tensor, or an argument is
///     neither a Tensor nor a number.
/// ValueError
///     When a standard deviation is negative.
/// ShapeError
///     When `mean` and `std` do not broadcast.
/// DTypeError
///     When a tensor argument is not a float tensor.
///
/// Examples
/// --------
/// >>> remat.normal(2.0, 0.0, size=(2,))
/// tensor([2., 2.])
/// >>> remat.normal(remat.tensor([0.0, 10.0]), 0.0)
/// tensor([ 0., 10.])
/// >>> remat.normal(remat.zeros(1000), 1.0).shape
/// (1000,)
#[pyfunction]
#[pyo3(signature = (mean, std=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn normal(
    py: Python<'_>,
    mean: &Bound<'_, PyAny>,
    std: Option<&Bound<'_, PyAny>>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let m = Param::from_py("mean", mean)?;
    let s = match std {
        Some(s) => Param::from_py("std", s)?,
        None => Param::Number(1.0),
    };
    let size = size.filter(|s| !s.is_none());
    let t = match (&m, &s) {
        (Param::Number(mv), Param::Number(sv)) => {
            let Some(size) = size else {
                return Err(PyTypeError::new_err(
                    "normal: with a number mean and std, size= is required",
                ));
            };
            let shape = args::shape_of("normal", size)?;
            let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::default_float());
            let dev = args::device(device)?;
            if *sv < 0.0 || sv.is_nan() {
                return Err(PyValueError::new_err(format!(
                    "normal: expects std >= 0.0, but found std {sv}"
                )));
            }
            drawing(generator, || {
                run(py, false, || {
                    let mean = ops::full(&shape, *mv, dt, dev)?;
                    ops::normal(&mean, &ops::full(&[], *sv, dt, dev)?)
                })
            })?
        }
        _ => {
            if size.is_some() {
                return Err(PyTypeError::new_err(
                    "normal: size= is only taken with a number mean and std",
                ));
            }
            let like = match (&m, &s) {
                (Param::Tensor(t), _) | (_, Param::Tensor(t)) => t.clone(),
                _ => unreachable!("two numbers are handled above"),
            };
            drawing(generator, || {
                run(py, heavy(&[&like]), || {
                    ops::normal(&m.tensor(&like)?, &s.tensor(&like)?)
                })
            })?
        }
    };
    leaf(t, requires_grad)
}

#[pymethods]
impl PyTensor {
    /// Fill this tensor in place with 0s and 1s: 1 with probability `p`, as PyTorch's
    /// ``Tensor.bernoulli_``.
    ///
    /// Parameters
    /// ----------
    /// p : float or Tensor, optional
    ///     One probability, or a tensor of probabilities broadcast to this tensor's shape.
    ///     Default: ``0.5``.
    /// generator : Generator, optional
    ///     The random stream to draw from. Default: ``None`` (the global stream).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     When a probability is outside ``[0, 1]``.
    /// DTypeError
    ///     When this tensor is not a float tensor.
    /// GraphError
    ///     When grad mode is on and this tensor is a leaf that requires grad.
    ///
    /// Examples
    /// --------
    /// >>> remat.empty(3).bernoulli_(1.0)
    /// tensor([1., 1., 1.])
    /// >>> remat.empty(2).bernoulli_(remat.tensor([0.0, 1.0]))
    /// tensor([0., 1.])
    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli_<'py>(
        slf: Bound<'py, Self>,
        p: Option<&Bound<'py, PyAny>>,
        generator: Option<&Bound<'_, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let probs = match p {
            Some(p) if p.downcast::<PyTensor>().is_ok() => {
                Some(p.downcast::<PyTensor>()?.get().inner.clone())
            }
            _ => None,
        };
        let value = match (p, &probs) {
            (_, Some(_)) => 0.0,
            (Some(p), None) if !p.is_none() => p.extract::<f64>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "bernoulli_: p must be a number or a Tensor, got {}",
                    convert::type_name(p)
                ))
            })?,
            _ => 0.5,
        };
        drawing(generator, || {
            in_place(slf, |t| match &probs {
                Some(pt) => ops::bernoulli_tensor_(t, pt),
                None => ops::bernoulli_(t, value),
            })
        })
    }
    /// Fill this tensor in place with exponential samples of rate `lambd`, as PyTorch's
    /// ``Tensor.exponential_`` (density ``lambd * exp(-lambd * x)``).
    ///
    /// Parameters
    /// ----------
    /// lambd : float, optional
    ///     The rate (``> 0``); the mean is ``1 / lambd``. Default: ``1.0``.
    /// generator : Generator, optional
    ///     The random stream to draw from. Default: ``None`` (the global stream).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     When `lambd` is not positive.
    /// DTypeError
    ///     When this tensor is not a float tensor.
    /// GraphError
    ///     When grad mode is on and this tensor is a leaf that requires grad.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.empty(10000).exponential_(2.0)
    /// >>> bool((x >= 0).all()), round(float(x.mean()), 1)
    /// (True, 0.5)
    #[pyo3(signature = (lambd=1.0, *, generator=None))]
    fn exponential_<'py>(
        slf: Bound<'py, Self>,
        lambd: f64,
        generator: Option<&Bound<'_, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        drawing(generator, || in_place(slf, |t| ops::exponential_(t, lambd)))
    }
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(normal, m)?)?;
    Ok(())
}
