//! `norm(p, dim)`: vector p-norms over axes (PyTorch's `torch.norm` / `linalg.vector_norm`),
//! composed of differentiable ops that all run on CUDA: `p = 2` is `sqrt(sum(x²))`, `p = 1`
//! `sum(|x|)`, `p = ±inf` `amax`/`amin` of `|x|` (ties split the gradient), `p = 0` the count
//! of nonzeros, any other `p` `sum(|x|^p)^(1/p)`.
//!
//! Where the derivative is infinite or undefined, PyTorch's `norm_backward` masks it to 0,
//! and so does this: for `p > 1` the root's gradient where the norm is 0 (a zero vector, or a
//! zero row of a reduction, gets gradient 0, not `0 · ∞ = NaN`), for `p < 1` the gradient of
//! each zero element (`|x|^(p-1)` is infinite there). `p = 1` and `p = ±inf` already give 0
//! at zeros (the subgradient of `|x|` at 0 is 0). The masks are differentiable ops (a
//! "double `where`" where PyTorch writes an exact 0, a product with a 0/1 mask where it
//! multiplies its 0 by the gradient, so even the zero's sign agrees), so higher orders and
//! CUDA keep working.

use super::elementwise::{binary_forward, Binary};
use super::reduce::resolve_axes;
use super::reduce_ext::{amax, amin};
use super::{abs, add, add_scalar, full, mul, pow_scalar, scale, sqrt, square, sum, where_, zeros};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The `p`-norm of `x` over `axes` (None: all elements). Integer and bool inputs give
/// float32.
pub fn norm(x: &Tensor, p: f64, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    crate::autocast::composite("norm", [Some(x)], |[x]| match x {
        Some(x) => norm_now(x, p, axes, keepdim),
        None => unreachable!("the input stays present"),
    })
}

fn norm_now(x: &Tensor, p: f64, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    if p.is_nan() {
        return Err(Error::value("norm", "p must be a number, got nan"));
    }
    if !x.dtype().is_float() {
        // Integer and bool inputs are computed in float32, PyTorch's default float (the
        // zero masks below compare in float).
        return norm(
            &super::cast(x, crate::dtype::DType::default_float())?,
            p,
            axes,
            keepdim,
        );
    }
    // Checked here so a bad axis is reported under `norm`, not the op composing it.
    resolve_axes("norm", axes, x.ndim())?;
    if p == 2.0 {
        // PyTorch's rule here is `grad * (x / norm).masked_fill(norm == 0, 0)`, a product with
        // 0 (the zero takes the gradient's sign, an infinite gradient gives NaN): the same
        // arithmetic, the root of `s + [s == 0]` times `[s != 0]`.
        let s = sum(&square(x)?, axes, keepdim)?;
        let z = is_zero(&s)?;
        return mul(&sqrt(&add(&s, &z)?)?, &add_scalar(&scale(&z, -1.0)?, 1.0)?);
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
        let nz = add_scalar(&scale(&is_zero(x)?, -1.0)?, 1.0)?;
        return add(
            &sum(&nz, axes, keepdim)?,
            &scale(&sum(x, axes, keepdim)?, 0.0)?,
        );
    }
    if p > 1.0 {
        return root_zero_grad(&sum(&pow_scalar(&abs(x)?, p)?, axes, keepdim)?, p);
    }
    // p < 1 (negative included): the root's gradient is finite, even 0, at a zero sum (and at
    // the infinite sum a zero element makes for p < 0), but `|x|^p`'s is not at x = 0.
    pow_scalar(&sum(&abs_pow_zero_grad(x, p)?, axes, keepdim)?, 1.0 / p)
}

/// `[t == 0]` as 0/1 in `t`'s dtype (no graph).
fn is_zero(t: &Tensor) -> Result<Tensor> {
    binary_forward(Binary::Equal, t, &zeros(&[], t.dtype(), t.device())?, 0.0)
}

/// `s^(1/p)` (`sqrt` for `p = 2`) with gradient 0 where `s == 0`, where the true derivative is
/// infinite: PyTorch's `norm_backward` for `p > 1` and `std_backward` mask the result `== 0`
/// the same way (`s^(1/p) == 0` exactly when `s == 0`).
pub(crate) fn root_zero_grad(s: &Tensor, p: f64) -> Result<Tensor> {
    let zero = zeros(&[], s.dtype(), s.device())?;
    let at_zero = is_zero(s)?;
    // The root is taken of 1 where s == 0, so its own derivative there is finite, and the
    // outer `where` sends that position's gradient to the constant: exactly 0 reaches `s`.
    let safe = where_(&at_zero, &full(&[], 1.0, s.dtype(), s.device())?, s)?;
    let root = if p == 2.0 {
        sqrt(&safe)?
    } else {
        pow_scalar(&safe, 1.0 / p)?
    };
    where_(&at_zero, &zero, &root)
}

/// `|x|^p` with gradient 0 where `x == 0` (for `p < 1`, where the derivative is infinite
/// there; PyTorch's `norm_backward` masks `self == 0`). The value at 0 is `0^p`: 0 for
/// `p > 0`, inf for `p < 0`.
fn abs_pow_zero_grad(x: &Tensor, p: f64) -> Result<Tensor> {
    let a = abs(x)?;
    let (dt, dev) = (x.dtype(), x.device());
    let at_zero = is_zero(&a)?;
    if p > 0.0 {
        // PyTorch multiplies its masked 0 by the gradient (the zero takes its sign); so does
        // `|x|^p = (|x| + [x == 0])^p · [x != 0]`, whose value at 0 is 0 = 0^p.
        let kept = add_scalar(&scale(&at_zero, -1.0)?, 1.0)?;
        return mul(&pow_scalar(&add(&a, &at_zero)?, p)?, &kept);
    }
    let safe = where_(&at_zero, &full(&[], 1.0, dt, dev)?, &a)?;
    where_(
        &at_zero,
        &full(&[], 0f64.powf(p), dt, dev)?,
        &pow_scalar(&safe, p)?,
    )
}

/// A shape error of the `amax`/`amin` inside `norm` reported under `norm`'s name.
fn rename(e: Error) -> Error {
    match e {
        Error::Shape { message, kind, .. } => Error::Shape {
            op: "norm".to_string(),
            message,
            kind,
        },
        other => other,
    }
}

impl Tensor {
    /// The `p`-norm over `axes` (None: all elements).
    pub fn norm(&self, p: f64, axes: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        norm(self, p, axes, keepdim)
    }
}
