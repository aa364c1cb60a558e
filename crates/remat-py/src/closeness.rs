//! `isclose`, `allclose` and `equal` (functions and `Tensor` methods) over remat-core's
//! `ops::closeness`.

use crate::convert;
use crate::errors::to_pyerr;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use remat_core::{ops, Tensor};

fn operands(op: &str, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(Tensor, Tensor)> {
    Ok((
        convert::extract_tensor(op, a)?,
        convert::extract_tensor(op, b)?,
    ))
}

macro_rules! isclose_doc {
    () => {
        r#"Which elements of two tensors are close: ``|input - other| <= atol + rtol * |other|``.

As PyTorch's ``isclose``: the operands broadcast, infinities are close only to themselves,
and NaN is close to NaN only with ``equal_nan=True``. Both must have the same dtype.
``Tensor.isclose(other, ...)`` is the method form.

Parameters
----------
input, other : Tensor or array_like
    The tensors to compare.
rtol, atol : float, optional
    Relative and absolute tolerance. Default: ``1e-05`` and ``1e-08``.
equal_nan : bool, optional
    Whether NaN counts as close to NaN. Default: ``False``.

Returns
-------
Tensor
    A bool tensor of the broadcast shape.

Raises
------
DTypeError
    When the dtypes differ.
ShapeError
    When the shapes do not broadcast.

Examples
--------
>>> remat.isclose(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 2.1]))
tensor([ True, False])"#
    };
}

macro_rules! allclose_doc {
    () => {
        r#"Whether every element of two tensors is close (``isclose(...).all()``), as a bool.

As PyTorch's ``allclose``. ``Tensor.allclose(other, ...)`` is the method form.

Parameters
----------
input, other : Tensor or array_like
    The tensors to compare (broadcast).
rtol, atol : float, optional
    Relative and absolute tolerance. Default: ``1e-05`` and ``1e-08``.
equal_nan : bool, optional
    Whether NaN counts as close to NaN. Default: ``False``.

Returns
-------
bool

Raises
------
DTypeError
    When the dtypes differ.
ShapeError
    When the shapes do not broadcast.

Examples
--------
>>> remat.allclose(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 2.0 + 1e-7]))
True"#
    };
}

macro_rules! equal_doc {
    () => {
        r#"Whether two tensors have the same shape and the same elements, as a bool.

As PyTorch's ``equal`` (NaN is never equal). ``Tensor.equal(other)`` is the method form.

Parameters
----------
input, other : Tensor or array_like
    The tensors to compare.

Returns
-------
bool

Raises
------
DTypeError
    When an operand cannot be made a tensor.

Examples
--------
>>> remat.equal(remat.tensor([1, 2]), remat.tensor([1, 2]))
True
>>> remat.equal(remat.tensor([1, 2]), remat.tensor([1, 2, 3]))
False"#
    };
}

#[doc = isclose_doc!()]
#[pyfunction]
#[pyo3(signature = (input, other, rtol=1e-05, atol=1e-08, equal_nan=false))]
fn isclose(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> PyResult<PyTensor> {
    let (a, b) = operands("isclose", input, other)?;
    ops::isclose(&a, &b, rtol, atol, equal_nan)
        .map(wrap)
        .map_err(to_pyerr)
}

#[doc = allclose_doc!()]
#[pyfunction]
#[pyo3(signature = (input, other, rtol=1e-05, atol=1e-08, equal_nan=false))]
fn allclose(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> PyResult<bool> {
    let (a, b) = operands("allclose", input, other)?;
    ops::allclose(&a, &b, rtol, atol, equal_nan).map_err(to_pyerr)
}

#[doc = equal_doc!()]
#[pyfunction]
fn equal(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
    let (a, b) = operands("equal", input, other)?;
    ops::equal(&a, &b).map_err(to_pyerr)
}

#[pymethods]
impl PyTensor {
    #[doc = isclose_doc!()]
    #[pyo3(name = "isclose", signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn isclose_method(
        &self,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<PyTensor> {
        let b = convert::extract_tensor("isclose", other)?;
        ops::isclose(&self.inner, &b, rtol, atol, equal_nan)
            .map(wrap)
            .map_err(to_pyerr)
    }

    #[doc = allclose_doc!()]
    #[pyo3(name = "allclose", signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn allclose_method(
        &self,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let b = convert::extract_tensor("allclose", other)?;
        ops::allclose(&self.inner, &b, rtol, atol, equal_nan).map_err(to_pyerr)
    }

    #[doc = equal_doc!()]
    #[pyo3(name = "equal")]
    fn equal_method(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let b = convert::extract_tensor("equal", other)?;
        ops::equal(&self.inner, &b).map_err(to_pyerr)
    }
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(isclose, m)?)?;
    m.add_function(wrap_pyfunction!(allclose, m)?)?;
    m.add_function(wrap_pyfunction!(equal, m)?)?;
    Ok(())
}
