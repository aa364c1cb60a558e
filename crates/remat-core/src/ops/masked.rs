//! `masked_fill(x, mask, value)`: `value` where the bool `mask` is true, else `x`, with `x`
//! and `mask` broadcast together (the out-of-place op's result has their broadcast shape, which
//! may be larger than `x`'s, as in PyTorch; only the in-place `masked_fill_` needs the mask to
//! fit `x`). It is `where_(mask, value, x)` after validation, so it inherits `where`'s backward
//! (the gradient of `x` is zero where masked and summed over the axes the mask added; of a
//! float 0-d `value` tensor, the sum over the masked positions), second order included, and
//! works for every dtype. The output keeps `x`'s dtype: `value` is converted to it, as in
//! PyTorch.

use super::{check_same_device, full, select::where_, to_dtype};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

/// Error unless `mask` is a bool tensor that broadcasts with `x`.
fn check_mask(x: &Tensor, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        return Err(Error::dtype(
            "masked_fill",
            format!(
                "expected a bool mask, got a {} tensor of shape {}; make one with a comparison \
                 or .bool()",
                mask.dtype(),
                fmt_shape(mask.shape())
            ),
        ));
    }
    match broadcast_shapes("masked_fill", mask.shape(), x.shape()) {
        Ok(_) => Ok(()),
        Err(_) => Err(Error::shape(
            "masked_fill",
            format!(
                "the mask of shape {} and the input of shape {} cannot be broadcast together",
                fmt_shape(mask.shape()),
                fmt_shape(x.shape())
            ),
        )),
    }
}

/// `value` (a 0-d tensor, converted to `x`'s dtype, differentiably for floats) where `mask`
/// is true, else `x`; the result has the broadcast shape of `x` and `mask`.
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    check_mask(x, mask)?;
    if value.ndim() != 0 {
        return Err(Error::shape(
            "masked_fill",
            format!(
                "value must be a number or a 0-d tensor, got a tensor of shape {}",
                fmt_shape(value.shape())
            ),
        ));
    }
    check_same_device("masked_fill", &[x, mask, value])?;
    where_(mask, &to_dtype(value, x.dtype())?, x)
}

/// `value` where `mask` is true, else `x` ([`masked_fill`] with a number).
pub fn masked_fill_scalar(x: &Tensor, mask: &Tensor, value: f64) -> Result<Tensor> {
    check_mask(x, mask)?;
    masked_fill(x, mask, &full(&[], value, x.dtype(), x.device())?)
}

impl Tensor {
    /// `value` where `mask` is true, else `self`; see [`masked_fill`].
    pub fn masked_fill(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        masked_fill(self, mask, value)
    }
    /// `value` where `mask` is true, else `self`; see [`masked_fill_scalar`].
    pub fn masked_fill_scalar(&self, mask: &Tensor, value: f64) -> Result<Tensor> {
        masked_fill_scalar(self, mask, value)
    }
}
