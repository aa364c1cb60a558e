//! `logsumexp` over axes, numerically stable: `log(sum(exp(x - m))) + m` with `m` the
//! (detached) maximum, so no `exp` overflows. Composed of differentiable ops (the gradient is
//! the softmax, to any order) that all run on CUDA.

use super::elementwise::{binary_forward, Binary};
use super::reduce::{reduced_shape, resolve_axes};
use super::reduce_ext::amax;
use super::{add, exp, log, reshape, sub, sum, where_, zeros};
use crate::error::Result;
use crate::tensor::Tensor;

/// `log(sum(exp(x)))` over `axes` (None: all). Rows of `-inf` give `-inf`, a `+inf` gives
/// `+inf`, NaN propagates, an empty reduction gives `-inf` (as PyTorch). Integer and bool
/// inputs are computed in float32, PyTorch's default float.
pub fn logsumexp(x: &Tensor, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    crate::autocast::composite("logsumexp", [Some(x)], |[x]| match x {
        Some(x) => logsumexp_now(x, axes, keepdim),
        None => unreachable!("the input stays present"),
    })
}

fn logsumexp_now(x: &Tensor, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return logsumexp(
            &super::cast(x, crate::dtype::DType::default_float())?,
            axes,
            keepdim,
        );
    }
    let ax = resolve_axes("logsumexp", axes, x.ndim())?;
    let ax_i: Vec<isize> = ax.iter().map(|&a| a as isize).collect();
    if ax.iter().any(|&a| x.shape()[a] == 0) {
        // No maximum to shift by, and nothing to overflow: log(0) = -inf.
        return log(&sum(&exp(x)?, Some(&ax_i), keepdim)?);
    }
    // The shift is a constant of the formula (any shift gives the same value), so it is
    // taken from the detached input; an infinite or NaN maximum shifts by 0 instead, so
    // `x - m` never computes `inf - inf`.
    let m = amax(&x.detach(), Some(&ax_i), true)?;
    let zero = zeros(&[], x.dtype(), x.device())?;
    let finite = binary_forward(Binary::Equal, &sub(&m, &m)?, &zero, 0.0)?;
    let m = where_(&finite, &m, &zero)?;
    let s = log(&sum(&exp(&sub(x, &m)?)?, Some(&ax_i), keepdim)?)?;
    let m = if keepdim {
        m
    } else {
        reshape(&m, &reduced_shape(x.shape(), &ax, false))?
    };
    add(&s, &m)
}

impl Tensor {
    /// `log(sum(exp(x)))` over `axes`, numerically stable.
    pub fn logsumexp(&self, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        logsumexp(self, axes, keepdim)
    }
}
