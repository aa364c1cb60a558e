//! The public functions of the elementwise rows that take parameters or combine rows:
//! `clamp` (constant or tensor bounds), `softplus(beta, threshold)`, `leaky_relu` and `lerp`.
//! Each is a thin wrapper over rows of `table.rs`; the formulas, kernels and gradients live
//! there.
//!
//! A row has one scalar parameter, so the two-parameter ops are compositions of rows: a
//! two-sided clamp with constant bounds is clamp-from-below then clamp-from-above (two
//! passes; their gradient masks multiply to PyTorch's `min < x < max`; with a tensor bound
//! it is `clamp_bounds`' op), and `softplus` with `beta != 1` runs the
//! `beta = 1` row on `beta x` and scales the result by `1 / beta`.

use super::{
    add, atan2, binary, clamp_bounds, maximum, minimum, mul, scale, sub, unary, Binary, Unary,
};
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, Dims};
use crate::ops::check_same_device;
use crate::tensor::Tensor;

/// One bound of [`clamp_by`]: a constant, or a tensor broadcast against the input.
#[derive(Clone, Copy, Debug)]
pub enum Bound<'a> {
    /// A constant bound.
    Scalar(f64),
    /// A tensor of bounds (broadcast with the input; the result has the broadcast shape).
    Tensor(&'a Tensor),
}

/// PyTorch's message when `clamp` gets no bound at all.
const NO_BOUND: &str = "At least one of 'min' or 'max' must not be None";

/// Clamp every element of `x` into `[min, max]` with constant bounds (either may be None, not
/// both), as `torch.clamp`: `min(max(x, min), max)`, so `min > max` gives `max` everywhere;
/// NaN (in `x` or a bound) propagates. The gradient passes where `min < x < max` and is 0
/// elsewhere, at the bounds included (PyTorch's minimum-norm subgradient).
pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    clamp_by(x, min.map(Bound::Scalar), max.map(Bound::Scalar))
}

/// [`clamp`] with each bound a constant or a tensor. One tensor bound is `maximum(x, min)` /
/// `minimum(x, max)` (ties split the gradient in half with the bound, as PyTorch does for
/// one tensor bound); both bounds, one of them a tensor, are one op with PyTorch's gradient
/// rule for two tensor bounds (`clamp_bounds`: ties split while `min < max`, `x == min ==
/// max` gives all to `x`, `min > max` all to `max`). Values are `min(max(x, min), max)` in
/// every case.
pub fn clamp_by(x: &Tensor, min: Option<Bound<'_>>, max: Option<Bound<'_>>) -> Result<Tensor> {
    // Tensor bounds are checked here so that errors name `clamp`, not `maximum`/`minimum`.
    let mut shape = Dims::from(x.shape());
    for b in [min, max].into_iter().flatten() {
        if let Bound::Tensor(t) = b {
            check_same_device("clamp", &[x, t])?;
            shape = broadcast_shapes("clamp", &shape, t.shape())?;
        }
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if matches!(lo, Bound::Tensor(_)) || matches!(hi, Bound::Tensor(_)) {
            // A constant beside a tensor bound becomes a 0-d tensor of `x`'s dtype, or float32
            // for a fractional bound of an integer `x` (PyTorch takes no such mix; this keeps
            // one rule for both bounds).
            let as_tensor = |b| match b {
                Bound::Tensor(t) => Ok(t.clone()),
                Bound::Scalar(v) => {
                    let keep = x.dtype().is_float() || v.fract() == 0.0;
                    let dt = if keep {
                        x.dtype()
                    } else {
                        crate::DType::default_float()
                    };
                    crate::ops::full(&[], v, dt, x.device())
                }
            };
            return clamp_bounds::clamp_bounds(x, &as_tensor(lo)?, &as_tensor(hi)?);
        }
    }
    let lower = match min {
        None if max.is_none() => return Err(Error::value("clamp", NO_BOUND)),
        None => x.clone(),
        Some(Bound::Scalar(lo)) => unary(Unary::ClampMin, x, lo)?,
        Some(Bound::Tensor(lo)) => maximum(x, lo)?,
    };
    match max {
        None => Ok(lower),
        Some(Bound::Scalar(hi)) => unary(Unary::ClampMax, &lower, hi),
        Some(Bound::Tensor(hi)) => minimum(&lower, hi),
    }
}

/// `max(x, min)` for a constant `min` (gradient 0 at and below the bound).
pub fn clamp_min(x: &Tensor, min: f64) -> Result<Tensor> {
    unary(Unary::ClampMin, x, min)
}

/// `min(x, max)` for a constant `max` (gradient 0 at and above the bound).
pub fn clamp_max(x: &Tensor, max: f64) -> Result<Tensor> {
    unary(Unary::ClampMax, x, max)
}

/// `torch.nn.functional.softplus`: `log(1 + e^(beta x)) / beta`, and `x` itself where
/// `beta x > threshold` (PyTorch's formula and defaults: `beta = 1`, `threshold = 20`).
pub fn softplus(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    if beta == 1.0 {
        return unary(Unary::Softplus, x, threshold);
    }
    let y = unary(Unary::Softplus, &scale(x, beta)?, threshold)?;
    scale(&y, 1.0 / beta)
}

/// `torch.nn.functional.leaky_relu`: `x` where `x > 0`, else `negative_slope * x` (PyTorch's
/// default slope is 0.01; the gradient at 0 is the slope, as in PyTorch).
pub fn leaky_relu(x: &Tensor, negative_slope: f64) -> Result<Tensor> {
    unary(Unary::LeakyRelu, x, negative_slope)
}

/// `start + weight (end - start)` for a constant weight, with broadcasting (PyTorch's
/// formula, exact at `weight == 1`).
pub fn lerp(start: &Tensor, end: &Tensor, weight: f64) -> Result<Tensor> {
    binary(Binary::Lerp, start, end, weight)
}

/// `start + weight (end - start)` with a tensor of weights, all three broadcast; gradients
/// to all three (`weight`'s is `end - start`).
pub fn lerp_tensor(start: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    // Checked up front so that errors name `lerp`, not the ops it is made of.
    check_same_device("lerp", &[start, end, weight])?;
    broadcast_shapes(
        "lerp",
        &broadcast_shapes("lerp", start.shape(), end.shape())?,
        weight.shape(),
    )?;
    add(start, &mul(weight, &sub(end, start)?)?)
}

impl Tensor {
    /// Clamp into `[min, max]` with constant bounds (see [`clamp`]).
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        clamp(self, min, max)
    }
    /// Elementwise maximum with `other` (see [`maximum`]).
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        maximum(self, other)
    }
    /// Elementwise `atan2(self, other)` (see [`atan2`]).
    pub fn atan2(&self, other: &Tensor) -> Result<Tensor> {
        atan2(self, other)
    }
    /// Elementwise minimum with `other` (see [`minimum`]).
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        minimum(self, other)
    }
    /// `self + weight (end - self)` for a constant weight (see [`lerp`]).
    pub fn lerp(&self, end: &Tensor, weight: f64) -> Result<Tensor> {
        lerp(self, end, weight)
    }
}
