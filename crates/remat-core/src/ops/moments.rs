//! `var` and `std` over axes with Bessel's `correction`, composed of `mean`, `sub`, `square`
//! and `sum` (two-pass, so no cancellation of `E[x²] - E[x]²`): differentiable to any order,
//! and on CUDA through those ops. Each pass is a row kernel when the axes are last. `std`'s
//! square root has gradient 0 where the deviation is 0, as PyTorch's.

use super::reduce::resolve_axes;
use super::vector_norm::root_zero_grad;
use super::{mean, scale, square, sub, sum};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

/// Variance over `axes` (None: all), dividing by `max(0, N - correction)` as PyTorch does
/// (`correction = 1`: unbiased; a divisor of 0 gives inf, or NaN for a zero sum).
pub fn var(x: &Tensor, axes: Option<&[isize]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    variance("var", x, axes, correction, keepdim)
}

/// `var` with errors named `op`.
fn variance(
    op: &str,
    x: &Tensor,
    axes: Option<&[isize]>,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    if !x.dtype().is_float() {
        // Checked here so the message names `var`/`std`, not the `mean` inside.
        return Err(Error::dtype(
            op,
            format!(
                "expected float32 or float64 tensors, got a {} tensor of shape {}; convert it \
                 with .float()",
                x.dtype(),
                fmt_shape(x.shape())
            ),
        ));
    }
    let ax = resolve_axes(op, axes, x.ndim())?;
    let n: usize = ax.iter().map(|&a| x.shape()[a]).product();
    let ax: Vec<isize> = ax.iter().map(|&a| a as isize).collect();
    let mu = mean(x, Some(&ax), true)?;
    let ss = sum(&square(&sub(x, &mu)?)?, Some(&ax), keepdim)?;
    scale(&ss, 1.0 / (n as f64 - correction).max(0.0))
}

/// Standard deviation: `sqrt(var(x, axes, correction, keepdim))`. Where the deviation is 0
/// (a constant row) the gradient is 0, as PyTorch's `std_backward` masks it, not the
/// `0 · ∞ = NaN` of the square root's derivative.
pub fn std(x: &Tensor, axes: Option<&[isize]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    root_zero_grad(&variance("std", x, axes, correction, keepdim)?, 2.0)
}
