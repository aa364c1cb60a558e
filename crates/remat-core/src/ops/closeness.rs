//! Closeness and equality of whole tensors, as PyTorch's `isclose`, `allclose` and `equal`:
//! composed of comparisons, so they run wherever those do (CPU and CUDA) and never build a
//! graph (their results are bool).

use super::{abs, add_scalar, all, eq, isfinite, isnan, le, logical_and, logical_or, scale, sub};
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

/// Elementwise `|a - b| <= atol + rtol * |b|` (bool, broadcast), with infinities close only to
/// themselves and NaN close to NaN only under `equal_nan` (PyTorch's `isclose`). Both inputs
/// must have the same dtype, as in PyTorch.
pub fn isclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
    isclose_named("isclose", a, b, rtol, atol, equal_nan)
}

fn isclose_named(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> Result<Tensor> {
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "expected both inputs to have the same dtype, got {} {} and {} {}",
                a.dtype(),
                fmt_shape(a.shape()),
                b.dtype(),
                fmt_shape(b.shape())
            ),
        ));
    }
    if rtol < 0.0 || atol < 0.0 {
        return Err(Error::value(
            op,
            format!("rtol and atol must be non-negative, got rtol={rtol} and atol={atol}"),
        ));
    }
    broadcast_shapes(op, a.shape(), b.shape())?;
    let _g = no_grad();
    let (a, b) = (a.detach(), b.detach());
    let exact = eq(&a, &b)?;
    if !a.dtype().is_float() {
        return Ok(exact);
    }
    let diff = abs(&sub(&a, &b)?)?;
    let bound = add_scalar(&scale(&abs(&b)?, rtol)?, atol)?;
    let within = logical_and(&isfinite(&diff)?, &le(&diff, &bound)?)?;
    let mut close = logical_or(&exact, &within)?;
    if equal_nan {
        close = logical_or(&close, &logical_and(&isnan(&a)?, &isnan(&b)?)?)?;
    }
    Ok(close)
}

/// Whether every element of `a` is close to `b`'s (PyTorch's `allclose`: [`isclose`] over the
/// broadcast pair, all true).
pub fn allclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
    let close = isclose_named("allclose", a, b, rtol, atol, equal_nan)?;
    Ok(all(&close, None, false)?.item()? != 0.0)
}

/// Whether `a` and `b` have the same shape and the same elements (PyTorch's `equal`; NaN is
/// never equal). Inputs of different dtypes are compared after promotion, as PyTorch does.
pub fn equal(a: &Tensor, b: &Tensor) -> Result<bool> {
    if a.shape() != b.shape() {
        return Ok(false);
    }
    let _g = no_grad();
    let same = eq(&a.detach(), &b.detach())?;
    Ok(all(&same, None, false)?.item()? != 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;

    fn t(v: &[f64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).expect("tensor")
    }

    #[test]
    fn close_within_tolerance_infinities_and_nan() {
        let a = t(&[1.0, f64::INFINITY, f64::NAN, 1.0, -f64::INFINITY]);
        let b = t(&[1.0 + 1e-9, f64::INFINITY, f64::NAN, 1.1, f64::INFINITY]);
        let close = isclose(&a, &b, 1e-5, 1e-8, false).expect("isclose");
        assert_eq!(close.dtype(), DType::Bool);
        assert_eq!(close.to_vec::<u8>(), vec![1, 1, 0, 0, 0]);
        let nan_ok = isclose(&a, &b, 1e-5, 1e-8, true).expect("isclose");
        assert_eq!(nan_ok.to_vec::<u8>(), vec![1, 1, 1, 0, 0]);
        assert!(!allclose(&a, &b, 1e-5, 1e-8, true).expect("allclose"));
        assert!(
            allclose(&t(&[1.0, 2.0]), &t(&[1.0, 2.0 + 1e-6]), 1e-5, 1e-8, false).expect("allclose")
        );
    }

    #[test]
    fn equal_needs_the_same_shape_and_values() {
        assert!(equal(&t(&[1.0, 2.0]), &t(&[1.0, 2.0])).expect("equal"));
        assert!(!equal(&t(&[1.0, 2.0]), &t(&[1.0, 2.5])).expect("equal"));
        assert!(!equal(&t(&[1.0]), &t(&[1.0, 1.0])).expect("equal"));
        assert!(!equal(&t(&[f64::NAN]), &t(&[f64::NAN])).expect("equal"));
        let z = crate::ops::zeros(&[2], DType::F32, Device::Cpu).expect("zeros");
        assert!(matches!(
            isclose(&z, &t(&[0.0, 0.0]), 1e-5, 1e-8, false),
            Err(Error::DType { .. })
        ));
    }
}
