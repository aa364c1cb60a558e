//! `rms_norm` and `group_norm` with PyTorch's semantics, written with the engine's ops (mean,
//! multiply, `rsqrt`), so gradients of every order and every checkpoint entry point come from
//! those ops' own rules.
//!
//! - `rms_norm(x, normalized_shape, weight, eps)`: `x · rsqrt(mean(x², trailing axes) + eps)
//!   · weight`; `eps` defaults to the dtype's machine epsilon, as PyTorch's.
//! - `group_norm(x, num_groups, weight, bias, eps)`: `x (N, C, *)` viewed as
//!   `(N, G, C/G · prod(*))`, normalised by each group's mean and biased variance, then the
//!   per-channel affine `weight (C,)`, `bias (C,)`.

use super::{add, add_scalar, mean, mul, reshape, rsqrt, sub};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;

fn check_eps(op: &str, eps: f64) -> Result<()> {
    if eps.is_finite() && eps >= 0.0 {
        Ok(())
    } else {
        Err(Error::value(
            op,
            format!("eps must be a finite non-negative number, got {eps}"),
        ))
    }
}

fn check_param(op: &str, what: &str, p: &Tensor, want: &[usize], x: &Tensor) -> Result<()> {
    if p.shape() == want {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "expected {what} of shape {}, got {} (input {})",
            fmt_shape(want),
            fmt_shape(p.shape()),
            fmt_shape(x.shape())
        ),
    ))
}

/// Root-mean-square normalisation over the trailing axes `normalized_shape` (PyTorch's
/// `F.rms_norm`); `eps` None: the dtype's machine epsilon.
pub fn rms_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    crate::autocast::composite("rms_norm", [Some(x), weight], |[x, w]| match x {
        Some(x) => rms_norm_now(x, normalized_shape, w, eps),
        None => unreachable!("the input stays present"),
    })
}

fn rms_norm_now(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    const OP: &str = "rms_norm";
    let k = normalized_shape.len();
    let nd = x.ndim();
    if k == 0 || nd < k || x.shape()[nd - k..] != *normalized_shape {
        return Err(Error::shape(
            OP,
            format!(
                "normalized_shape {} must be the trailing axes of the input of shape {}",
                fmt_shape(normalized_shape),
                fmt_shape(x.shape())
            ),
        ));
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!("expected a float tensor, got {}", x.dtype()),
        ));
    }
    let eps = eps.unwrap_or(match x.dtype() {
        DType::F64 => f64::EPSILON,
        _ => f32::EPSILON as f64,
    });
    check_eps(OP, eps)?;
    if let Some(w) = weight {
        check_param(OP, "weight", w, normalized_shape, x)?;
    }
    let axes: Vec<isize> = (nd - k..nd).map(|a| a as isize).collect();
    let ms = mean(&mul(x, x)?, Some(&axes), true)?;
    let y = mul(x, &rsqrt(&add_scalar(&ms, eps)?)?)?;
    match weight {
        Some(w) => mul(&y, w),
        None => Ok(y),
    }
}

/// Group normalisation of `x (N, C, *)` over `num_groups` groups of channels (PyTorch's
/// `F.group_norm`), with optional per-channel `weight` and `bias` of shape `(C,)`.
pub fn group_norm(
    x: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    crate::autocast::composite("group_norm", [Some(x), weight, bias], |[x, w, b]| match x {
        Some(x) => group_norm_now(x, num_groups, w, b, eps),
        None => unreachable!("the input stays present"),
    })
}

fn group_norm_now(
    x: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    const OP: &str = "group_norm";
    check_eps(OP, eps)?;
    if x.ndim() < 2 {
        return Err(Error::shape(
            OP,
            format!(
                "expected an input of at least 2 dims (N, C, *), got shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    if num_groups == 0 || c % num_groups != 0 {
        return Err(Error::shape(
            OP,
            format!(
                "expected the number of channels ({c}) to be divisible by num_groups \
                 ({num_groups}), input shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    for (what, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p {
            check_param(OP, what, p, &[c], x)?;
        }
    }
    let grouped = reshape(x, &[n, num_groups, x.numel() / (n * num_groups).max(1)])?;
    let m = mean(&grouped, Some(&[-1]), true)?;
    let xc = sub(&grouped, &m)?;
    let var = mean(&mul(&xc, &xc)?, Some(&[-1]), true)?;
    let y = reshape(&mul(&xc, &rsqrt(&add_scalar(&var, eps)?)?)?, x.shape())?;
    // weight/bias broadcast as (C, 1, ..., 1) over the trailing axes.
    let mut pshape: Dims = [c].into_iter().collect();
    pshape.extend(std::iter::repeat_n(1, x.ndim() - 2));
    let y = match weight {
        Some(w) => mul(&y, &reshape(w, &pshape)?)?,
        None => y,
    };
    match bias {
        Some(b) => add(&y, &reshape(b, &pshape)?),
        None => Ok(y),
    }
}
