//! Floor division, truncating division and remainder, one table (`DivMode`), with Python's
//! (and PyTorch's) sign conventions: `a // b` rounds toward -inf and `a % b` takes the
//! divisor's sign, so `a == (a // b) * b + a % b`; `div(rounding_mode="trunc")` rounds toward
//! zero.
//!
//! - Integer (and bool with integer) operands: exact int64 kernels returning the promoted
//!   dtype; a zero divisor is an error (never a panic); `i64::MIN // -1` wraps.
//! - Float operands (or a float with an integer): PyTorch's formulas through `fmod`, so the
//!   results match `torch.floor_divide`/`torch.remainder` and NumPy; division by zero gives
//!   IEEE results (inf/NaN).
//! - `remainder` is differentiable: `d/da = 1`, `d/db = -floor_divide(a, b)`. `floor_divide`
//!   is not (its gradient is zero almost everywhere): never recorded, as in PyTorch.
//!
//! On CUDA one `divmod_*` kernel per dtype ports both rows (`cuda::arith_kernels`); an
//! integer divisor is checked for zeros on the device first (one flag read back).

use super::{cast, check_same_device, from_vec, sum_to, to_dtype};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::{DType, Element, Scalar};
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

/// Floor division or remainder (the discriminants are the CUDA kernel's mode numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DivMode {
    /// `a // b`, rounded toward -inf.
    Floor,
    /// `a - (a // b) * b`: the divisor's sign.
    Remainder,
    /// `a / b` rounded toward zero (PyTorch's `div(rounding_mode="trunc")`).
    Trunc,
}

impl DivMode {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            DivMode::Floor => "floor_divide",
            DivMode::Remainder => "remainder",
            DivMode::Trunc => "trunc_divide",
        }
    }
    /// The integer row (`b != 0`, checked before).
    #[inline(always)]
    fn int(self, a: i64, b: i64) -> i64 {
        let r = a.wrapping_rem(b);
        let adjust = r != 0 && ((r < 0) != (b < 0));
        match self {
            DivMode::Trunc => a.wrapping_div(b),
            DivMode::Floor => a.wrapping_div(b) - adjust as i64,
            DivMode::Remainder => {
                if adjust {
                    r + b
                } else {
                    r
                }
            }
        }
    }
    /// The float row (PyTorch's `div_floor_floating` and `remainder`).
    #[inline(always)]
    fn float<T: Element>(self, a: T, b: T) -> T {
        let zero = T::zero();
        let m = a % b;
        match self {
            DivMode::Trunc => (a / b).trunc(),
            DivMode::Remainder => {
                if m != zero && ((b < zero) != (m < zero)) {
                    m + b
                } else {
                    m
                }
            }
            DivMode::Floor => {
                if b == zero {
                    return a / b;
                }
                let mut div = (a - m) / b;
                if m != zero && ((b < zero) != (m < zero)) {
                    div -= T::one();
                }
                if div != zero {
                    let mut fd = div.floor();
                    if div - fd > <T as Scalar>::from_f64(0.5) {
                        fd += T::one();
                    }
                    fd
                } else if (a / b).is_sign_negative() {
                    -zero
                } else {
                    zero
                }
            }
        }
    }
}

struct DivOp(DivMode);

impl Op for DivOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (inputs[0], inputs[1]);
        let op = self.0.name();
        let shape = broadcast_shapes(op, a.shape(), b.shape())?;
        let dt = crate::ops::result_dtype(a, b);
        if dt.is_float() {
            let (a, b) = (cast(a, dt)?, cast(b, dt)?);
            let f = self.0;
            return Ok(crate::dispatch!(dt, T => from_vec(
                cpu::zip::<T, T, _>(a.data(), b.data(), &shape, |x, y| f.float(x, y)),
                &shape
            )));
        }
        let (a, b) = (cast(a, DType::I64)?, cast(b, DType::I64)?);
        if crate::layout::numel(&shape) > 0 && cpu::gather::<i64>(b.data()).contains(&0) {
            return Err(zero_divisor(op, &b));
        }
        let f = self.0;
        let v = cpu::zip::<i64, i64, _>(a.data(), b.data(), &shape, |x, y| f.int(x, y));
        cast(&from_vec(v, &shape), dt)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = self.0.name();
        let shape = broadcast_shapes(op, inputs[0].shape(), inputs[1].shape())?;
        let dt = crate::ops::result_dtype(inputs[0], inputs[1]);
        // int32 results equal int64 ones truncated (the CPU's route), so each integer dtype
        // divides in its own width.
        let (a, b) = (cast(inputs[0], dt)?, cast(inputs[1], dt)?);
        if !dt.is_float() && crate::layout::numel(&shape) > 0 {
            let zero = super::full(&[], 0.0, dt, b.device())?;
            let eq = super::eq(&b, &zero)?;
            if super::any(&eq, None, false)?.item()? != 0.0 {
                return Err(zero_divisor(op, &b));
            }
        }
        crate::cuda::launch::divmod(op, self.0 as i32, &a, &b, &shape)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // Only `remainder` on floats is recorded.
        let g = ctx.grad;
        let ga = if ctx.needs_grad(0) {
            Some(to_dtype(
                &sum_to(g, &ctx.inputs[0].shape)?,
                ctx.inputs[0].dtype,
            )?)
        } else {
            None
        };
        let gb = if ctx.needs_grad(1) {
            let q = floor_divide(&ctx.saved[0], &ctx.saved[1])?;
            let d = super::mul(g, &super::neg(&cast(&q, g.dtype())?)?)?;
            Some(to_dtype(
                &sum_to(&d, &ctx.inputs[1].shape)?,
                ctx.inputs[1].dtype,
            )?)
        } else {
            None
        };
        Ok(vec![ga, gb])
    }
}

/// The error for an integer divisor holding 0.
fn zero_divisor(op: &str, b: &Tensor) -> Error {
    Error::value(
        op,
        format!(
            "integer division by zero (a divisor of shape {} holds 0)",
            fmt_shape(b.shape())
        ),
    )
}

/// Validation shared by both rows: one device, broadcastable, not two bools.
fn check(f: DivMode, a: &Tensor, b: &Tensor) -> Result<()> {
    let op = f.name();
    check_same_device(op, &[a, b])?;
    broadcast_shapes(op, a.shape(), b.shape())?;
    if a.dtype() == DType::Bool && b.dtype() == DType::Bool {
        return Err(Error::dtype(
            op,
            format!(
                "not supported for two bool tensors ({} and {}); convert one with .long()",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    Ok(())
}

/// `a // b` with broadcasting: rounded toward -inf (Python's `//`); integers exactly (a
/// zero divisor is an error), floats as in PyTorch. Not differentiable (never recorded).
pub fn floor_divide(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check(DivMode::Floor, a, b)?;
    let _no_grad = crate::grad_mode::no_grad();
    apply(DivOp(DivMode::Floor), &[a, b], &[])
}

/// `a / b` rounded toward zero with broadcasting (PyTorch's `div(rounding_mode="trunc")`);
/// integers exactly (a zero divisor is an error), floats as `trunc(a / b)`. Not
/// differentiable (never recorded).
pub fn trunc_divide(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check(DivMode::Trunc, a, b)?;
    let _no_grad = crate::grad_mode::no_grad();
    apply(DivOp(DivMode::Trunc), &[a, b], &[])
}

/// PyTorch's `div(a, b, rounding_mode=...)`: `None` true division, `"trunc"` or `"floor"`;
/// another mode is an error naming the op.
pub fn div_rounded(a: &Tensor, b: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    match rounding_mode {
        None => super::div(a, b),
        Some("trunc") => trunc_divide(a, b),
        Some("floor") => floor_divide(a, b),
        Some(other) => Err(Error::value(
            "div",
            format!("rounding_mode must be None, 'trunc' or 'floor', got {other:?}"),
        )),
    }
}

/// `a % b` with broadcasting, with the divisor's sign (Python's `%`); integers exactly (a
/// zero divisor is an error). Differentiable for floats: `d/da = 1`, `d/db = -(a // b)`.
pub fn remainder(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check(DivMode::Remainder, a, b)?;
    apply(
        DivOp(DivMode::Remainder),
        &[a, b],
        &[Save::Input(0), Save::Input(1)],
    )
}

impl Tensor {
    /// `self // other`; see [`floor_divide`].
    pub fn floor_divide(&self, other: &Tensor) -> Result<Tensor> {
        floor_divide(self, other)
    }
    /// `self % other`; see [`remainder`].
    pub fn remainder(&self, other: &Tensor) -> Result<Tensor> {
        remainder(self, other)
    }
}
