//! Elementwise rows on integer and bool tensors, with PyTorch's result dtypes:
//! - the rows that keep integers (`neg`, `abs`, `relu`, `floor`, `round`, `clamp`, integral
//!   `x * c`, ...) compute exactly and return the input's integer dtype;
//! - `add`, `sub`, `mul`, `maximum`, `minimum` on two integer (or bool) operands run an
//!   exact, wrapping int64 kernel and return the promoted dtype (`int32 + int64` is int64,
//!   `bool + bool` is bool, i.e. logical or, as in PyTorch);
//! - everything else (`exp`, `sin`, `/`, ...) computes in float32, PyTorch's default float:
//!   `torch.exp(int_tensor)` and `int_tensor / 2` are float32.
//!
//! No row kernel ever sees an integer buffer: these rules run before `apply`, which refuses
//! integer inputs to float kernels.

use super::{binary, unary, Binary, Unary};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::ops::{cast, check_same_device};
use crate::tensor::Tensor;

/// Whether a unary row maps integers to integers (exactly, for values below 2^53, which is
/// where it computes them: in float64, then cast back).
fn unary_keeps_int(f: Unary, p: f64) -> bool {
    use Unary::*;
    match f {
        Neg | Abs | Square | Sign | Floor | Ceil | Round | Relu | ClampMin | ClampMax => true,
        // An integral constant keeps integers (`ints * 2`, `ints + 1`, `ints ** 2`).
        Scale | AddScalar => p.fract() == 0.0,
        PowScalar => p.fract() == 0.0 && p >= 0.0,
        _ => false,
    }
}

/// A unary row on an integer or bool tensor.
pub(super) fn unary_int(f: Unary, x: &Tensor, p: f64) -> Result<Tensor> {
    if x.dtype() == DType::Bool && matches!(f, Unary::Neg) {
        return Err(Error::dtype(
            "neg",
            format!(
                "negation, the `-` operator, on a bool tensor of shape {} is not supported; \
                 use ~ or logical_not() instead",
                fmt_shape(x.shape())
            ),
        ));
    }
    if !unary_keeps_int(f, p) {
        return unary(f, &cast(x, DType::F32)?, p);
    }
    // bool rows that keep integers count in int64, as PyTorch's `abs(True)`-style ops do.
    let out_dtype = if x.dtype() == DType::Bool {
        DType::I64
    } else {
        x.dtype()
    };
    cast(&unary(f, &cast(x, DType::F64)?, p)?, out_dtype)
}

/// A binary row where at least one operand is an integer or bool tensor.
pub(super) fn binary_int(f: Binary, a: &Tensor, b: &Tensor, p: f64) -> Result<Tensor> {
    let dt = a.dtype().promote(b.dtype());
    if dt.is_float() {
        // int with float: the integer side converts to the float operand's dtype.
        return binary(f, &cast(a, dt)?, &cast(b, dt)?, p);
    }
    let op = f.name();
    let exact: Option<fn(i64, i64) -> i64> = match f {
        Binary::Add => Some(i64::wrapping_add),
        Binary::Sub => Some(i64::wrapping_sub),
        Binary::Mul => Some(i64::wrapping_mul),
        Binary::Maximum => Some(std::cmp::max),
        Binary::Minimum => Some(std::cmp::min),
        _ => None,
    };
    let Some(k) = exact else {
        if f == Binary::Pow {
            return pow_int(a, b, dt);
        }
        // True division and the float-only rows: float32, PyTorch's default.
        return binary(f, &cast(a, DType::F32)?, &cast(b, DType::F32)?, p);
    };
    if dt == DType::Bool && f == Binary::Sub {
        return Err(Error::dtype(
            op,
            format!(
                "subtraction, the `-` operator, with two bool tensors ({} and {}) is not \
                 supported; use ^ or logical_xor() instead",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    check_same_device(op, &[a, b])?;
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    if a.device() != crate::device::Device::Cpu {
        return Err(Error::device(
            op,
            format!("{dt} arithmetic is not supported on CUDA yet"),
        ));
    }
    let out = crate::cpu::catch_oom(op, || {
        let (a, b) = (cast(a, DType::I64)?, cast(b, DType::I64)?);
        let v = crate::cpu::zip::<i64, i64, _>(a.data(), b.data(), &shape, k);
        Ok(crate::ops::from_vec(v, &shape))
    })?;
    cast(&out, dt)
}

/// `a ** b` for integer operands: integer results, computed in float64 (exact below 2^53);
/// a negative exponent is an error, as in PyTorch.
fn pow_int(a: &Tensor, b: &Tensor, dt: DType) -> Result<Tensor> {
    let b64 = cast(b, DType::F64)?;
    if crate::ops::amin(&b64, None, false)
        .and_then(|m| m.item())
        .is_ok_and(|m| m < 0.0)
    {
        return Err(Error::value(
            "pow",
            "integers to negative integer powers are not allowed",
        ));
    }
    let r = binary(Binary::Pow, &cast(a, DType::F64)?, &b64, 0.0)?;
    cast(&crate::ops::round(&r)?, dt)
}
