//! The dtype rules of in-place ops, PyTorch's: an arithmetic update computes in the
//! promotion of the tensor's dtype and the operand's, and that result must cast back into the
//! tensor without moving up a category (bool < integer < float): no float result into an
//! integer tensor (`int_tensor.add_(0.5)`, every `div_`), no integer into a bool one. Random
//! fills need a float tensor. Copies, fills and masked fills cast anything.

use super::Operand;
use crate::dtype::{Category, DType};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The dtype a number brings to promotion: an integral value counts as an integer (Python
/// ints and bools arrive as such), any other as the default float.
fn number_dtype(v: f64) -> DType {
    if v.is_finite() && v.fract() == 0.0 {
        DType::I64
    } else {
        DType::default_float()
    }
}

/// Error unless the result of `op` on `dst` and `other` fits `dst`'s dtype; `true_div`: the
/// result is a float whatever the operands (`div_`).
pub(crate) fn check_result(
    op: &str,
    dst: &Tensor,
    other: Operand<'_>,
    true_div: bool,
) -> Result<()> {
    let d = dst.dtype();
    if d.is_float() {
        return Ok(());
    }
    let src = match other {
        Operand::Tensor(t) => t.dtype(),
        Operand::Scalar(v) => number_dtype(v),
    };
    let result = if true_div {
        DType::default_float().promote(src)
    } else if matches!(other, Operand::Scalar(_)) && src.category() == d.category() {
        // A number of the tensor's own category keeps its dtype (PyTorch's wrapped numbers).
        d
    } else {
        d.promote(src)
    };
    if result.category() > d.category() {
        return Err(Error::dtype(
            op,
            format!("result type {result} can't be cast to the desired output type {d}"),
        ));
    }
    Ok(())
}

/// Error when `alpha` is not an integer for an integer or bool tensor (PyTorch's rule).
pub(crate) fn check_alpha(op: &str, dst: &Tensor, alpha: f64) -> Result<()> {
    if dst.dtype().category() != Category::Float && number_dtype(alpha) != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "for integral input tensors, argument alpha must not be a floating point \
                 number (got {alpha} for a {} tensor)",
                dst.dtype()
            ),
        ));
    }
    Ok(())
}

/// Error unless `dst` is a float tensor (random fills).
pub(crate) fn check_float(op: &str, dst: &Tensor) -> Result<()> {
    if dst.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!("expects a floating point tensor, got {}", dst.dtype()),
        ))
    }
}
