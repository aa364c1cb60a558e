//! `repeat(*sizes)` (PyTorch's tiling): composed of views and one copy, so its backward (a
//! sum over the repeats) comes from the parts and is differentiable, on CUDA too.
//!
//! Axis `i` of extent `s` repeated `r` times is, in C order, `r` blocks of `s`: the input
//! viewed as `(1, s)` per axis, expanded to `(r, s)` and merged to `r * s` by a reshape (a
//! copy, since the expanded view is not contiguous).

use super::{expand, reshape, shape::copy_op};
use crate::error::{Error, Result};
use crate::layout::{checked_numel, fmt_shape, Dims};
use crate::tensor::Tensor;
use std::sync::Arc;

/// `x` tiled `sizes[i]` times along axis `i` (`sizes` has at least `x.ndim()` entries; extra
/// leading ones add axes). Always a new tensor, as in PyTorch.
pub fn repeat(x: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    const OP: &str = "repeat";
    let nd = x.ndim();
    if sizes.len() < nd {
        return Err(Error::shape(
            OP,
            format!(
                "the number of repeats ({}) can not be smaller than the number of dims of a \
                 tensor of shape {}",
                sizes.len(),
                fmt_shape(x.shape())
            ),
        ));
    }
    let lead = sizes.len() - nd;
    let padded: Dims = std::iter::repeat_n(1, lead)
        .chain(x.shape().iter().copied())
        .collect();
    let out: Dims = padded.iter().zip(sizes).map(|(&s, &r)| s * r).collect();
    // Refuse an unrepresentable result before any product below can overflow.
    let overflow = padded
        .iter()
        .zip(sizes)
        .any(|(&s, &r)| s.checked_mul(r).is_none());
    if overflow {
        return Err(Error::shape(
            OP,
            format!(
                "repeats {sizes:?} of shape {} overflow",
                fmt_shape(x.shape())
            ),
        ));
    }
    checked_numel(OP, &out, x.dtype())?;
    let pairs: Dims = padded.iter().flat_map(|&s| [1, s]).collect();
    let stretched: Dims = padded
        .iter()
        .zip(sizes)
        .flat_map(|(&s, &r)| [r, s])
        .collect();
    let y = reshape(&expand(&reshape(x, &pairs)?, &stretched)?, &out)?;
    // All repeats 1: the parts are views of `x`, but repeat always copies.
    if Arc::ptr_eq(y.storage(), x.storage()) {
        return copy_op(&y);
    }
    Ok(y)
}

impl Tensor {
    /// `self` tiled along each axis; see [`repeat`].
    pub fn repeat(&self, sizes: &[usize]) -> Result<Tensor> {
        repeat(self, sizes)
    }
}
