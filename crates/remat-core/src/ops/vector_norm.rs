//! `norm(p, dim)`: vector p-norms over axes (PyTorch's `torch.norm` / `linalg.vector_norm`),
//! composed of differentiable ops that all run on CUDA: `p = 2` is `sqrt(sum(x²))`, `p = 1`
//! `sum(|x|)`, `p = ±inf` `amax`/`amin` of `|x|` (ties split the gradient), `p = 0` the count
//! of nonzeros, any other `p` `sum(|x|^p)^(1/p)`.

use super::elementwise::{binary_forward, Binary};
use super::reduce::resolve_axes;
use super::reduce_ext::{amax, amin};
use super::{abs, add, add_scalar, pow_scalar, scale, sqrt, square, sum, zeros};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The `p`-norm of `x` over `axes` (None: all elements).
pub fn norm(x: &Tensor, p: f64, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    if p.is_nan() {
        return Err(Error::value("norm", "p must be a number, got nan"));
    }
    // Checked here so a bad axis is reported under `norm`, not the op composing it.
    resolve_axes("norm", axes, x.ndim())?;
    if p == 2.0 {
        return sqrt(&sum(&square(x)?, axes, keepdim)?);
    }
    if p == 1.0 {
        return sum(&abs(x)?, axes, keepdim);
    }
    if p == f64::INFINITY {
        return amax(&abs(x)?, axes, keepdim).map_err(rename);
    }
    if p == f64::NEG_INFINITY {
        return amin(&abs(x)?, axes, keepdim).map_err(rename);
    }
    if p == 0.0 {
        // The count of nonzeros has gradient 0 everywhere; `0 * sum(x)` keeps the result on
        // `x`'s graph so `backward` gives zeros, as PyTorch does.
        let zero = zeros(&[], x.dtype(), x.device())?;
        let is_zero = binary_forward(Binary::Equal, x, &zero, 0.0)?;
        let nz = add_scalar(&scale(&is_zero, -1.0)?, 1.0)?;
        return add(
            &sum(&nz, axes, keepdim)?,
            &scale(&sum(x, axes, keepdim)?, 0.0)?,
        );
    }
    pow_scalar(&sum(&pow_scalar(&abs(x)?, p)?, axes, keepdim)?, 1.0 / p)
}

/// A shape error of the `amax`/`amin` inside `norm` reported under `norm`'s name.
fn rename(e: Error) -> Error {
    match e {
        Error::Shape { message, .. } => Error::shape("norm", message),
        other => other,
    }
}

impl Tensor {
    /// The `p`-norm over `axes` (None: all elements).
    pub fn norm(&self, p: f64, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        norm(self, p, axes, keepdim)
    }
}
