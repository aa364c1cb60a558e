//! Elementwise rows on integer and bool tensors, with PyTorch's result dtypes:
//! - the rows that keep integers (`neg`, `abs`, `relu`, `floor`, `trunc`, `round`, `clamp`,
//!   integral `x * c`, ...) compute exactly and return the input's integer dtype;
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
        Neg | Abs | Square | Sign | Floor | Ceil | Trunc | Round | Relu | ClampMin | ClampMax => {
            true
        }
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
    if x.dtype() == DType::Bool && matches!(f, Unary::Sign) {
        // PyTorch: the sign of a bool tensor is itself.
        return crate::ops::clone(x);
    }
    if matches!(f, Unary::Frac) {
        // PyTorch has no integer kernel for frac ("frac_cpu" not implemented for 'Long').
        return Err(Error::dtype(
            "frac",
            format!(
                "frac of a {} tensor of shape {} is not supported (PyTorch has none either); \
                 convert it to a float dtype",
                x.dtype(),
                fmt_shape(x.shape())
            ),
        ));
    }
    if !unary_keeps_int(f, p) {
        return unary(f, &cast(x, DType::default_float())?, p);
    }
    // bool rows that keep integers count in int64, as PyTorch's `abs(True)`-style ops do.
    let out_dtype = if x.dtype() == DType::Bool {
        DType::I64
    } else {
        x.dtype()
    };
    if x.device() == crate::device::Device::Cpu {
        if let Some(out) = unary_exact(f, x, p)? {
            return cast(&out, out_dtype);
        }
    }
    cast(&unary(f, &cast(x, DType::F64)?, p)?, out_dtype)
}

/// An integer-keeping row computed exactly in int64, wrapping on overflow as PyTorch's
/// integer arithmetic does (`square`, `x * c`, `x + c`, `x ** k`, `neg`, `abs`): a float64
/// detour would saturate, and lose exactness above 2^53. `None` for a constant that is not
/// an int64 (the float64 path then decides).
fn unary_exact(f: Unary, x: &Tensor, p: f64) -> Result<Option<Tensor>> {
    use Unary::*;
    // An integral constant within int64 (2^63 itself is not).
    let int_p = (p.fract() == 0.0 && p.abs() < 2f64.powi(63)).then_some(p as i64);
    let x = cast(x, DType::I64)?;
    let d = x.data();
    let map = |f: fn(i64, i64) -> i64, c: i64| crate::cpu::map::<i64, _>(d, move |v| f(v, c));
    let v = crate::cpu::catch_oom(f.name(), || {
        Ok(match (f, int_p) {
            (Neg, _) => Some(map(|v, _| v.wrapping_neg(), 0)),
            (Abs, _) => Some(map(|v, _| v.wrapping_abs(), 0)),
            (Square, _) => Some(map(|v, _| v.wrapping_mul(v), 0)),
            (Sign, _) => Some(map(|v, _| v.signum(), 0)),
            (Floor | Ceil | Trunc | Round, _) => Some(map(|v, _| v, 0)),
            (Relu, _) => Some(map(|v, _| v.max(0), 0)),
            (Scale, Some(c)) => Some(map(i64::wrapping_mul, c)),
            (AddScalar, Some(c)) => Some(map(i64::wrapping_add, c)),
            (PowScalar, Some(k)) if k >= 0 => Some(map(|v, k| wrapping_pow(v, k as u64), k)),
            _ => None,
        })
    })?;
    Ok(v.map(|v| crate::ops::from_vec(v, x.shape())))
}

/// `v ** k` modulo 2^64 (two's complement), by squaring.
fn wrapping_pow(mut v: i64, mut k: u64) -> i64 {
    let mut r: i64 = 1;
    while k > 0 {
        if k & 1 == 1 {
            r = r.wrapping_mul(v);
        }
        v = v.wrapping_mul(v);
        k >>= 1;
    }
    r
}

/// A binary row where at least one operand is an integer or bool tensor.
pub(super) fn binary_int(f: Binary, a: &Tensor, b: &Tensor, p: f64) -> Result<Tensor> {
    let dt = crate::ops::result_dtype(a, b);
    if dt.is_float() {
        // int with float: the integer side converts to the float operand's dtype.
        return binary(f, &cast(a, dt)?, &cast(b, dt)?, p);
    }
    let op = f.name();
    // The CPU closure and the CUDA kernel's row (`int_zip_i64`).
    type ExactRow = (fn(i64, i64) -> i64, i32);
    let exact: Option<ExactRow> = match f {
        Binary::Add => Some((i64::wrapping_add, 0)),
        Binary::Sub => Some((i64::wrapping_sub, 1)),
        Binary::Mul => Some((i64::wrapping_mul, 2)),
        Binary::Maximum => Some((std::cmp::max, 3)),
        Binary::Minimum => Some((std::cmp::min, 4)),
        _ => None,
    };
    let Some((k, code)) = exact else {
        if f == Binary::Pow {
            return pow_int(a, b, dt);
        }
        // True division and the float-only rows: float32, PyTorch's default.
        let f32 = DType::default_float();
        return binary(f, &cast(a, f32)?, &cast(b, f32)?, p);
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
        let (a, b) = (cast(a, DType::I64)?, cast(b, DType::I64)?);
        return cast(&crate::cuda::launch::int_zip(op, code, &a, &b, &shape)?, dt);
    }
    let out = crate::cpu::catch_oom(op, || {
        let (a, b) = (cast(a, DType::I64)?, cast(b, DType::I64)?);
        let v = crate::cpu::zip::<i64, i64, _>(a.data(), b.data(), &shape, k);
        Ok(crate::ops::from_vec(v, &shape))
    })?;
    cast(&out, dt)
}

/// `a ** b` for integer operands, integer results as in PyTorch: on the CPU exact in int64
/// (wrapping like PyTorch's integer arithmetic), a negative exponent giving `1` for a base
/// of 1, `±1` for -1 and `0` otherwise (PyTorch's rule, `0 ** -1` included). On CUDA in
/// float64 (exact below 2^53), where a negative exponent is an error.
fn pow_int(a: &Tensor, b: &Tensor, dt: DType) -> Result<Tensor> {
    if dt == DType::Bool {
        return Err(Error::dtype(
            "pow",
            format!(
                "pow of two bool tensors ({} and {}) is not supported (PyTorch has none \
                 either); convert one to an integer dtype",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    if a.device() == crate::device::Device::Cpu && b.device() == crate::device::Device::Cpu {
        let shape = broadcast_shapes("pow", a.shape(), b.shape())?;
        let out = crate::cpu::catch_oom("pow", || {
            let (a, b) = (cast(a, DType::I64)?, cast(b, DType::I64)?);
            let v = crate::cpu::zip::<i64, i64, _>(a.data(), b.data(), &shape, |v, k| {
                if k >= 0 {
                    wrapping_pow(v, k as u64)
                } else {
                    match v {
                        1 => 1,
                        -1 if k % 2 == 0 => 1,
                        -1 => -1,
                        _ => 0,
                    }
                }
            });
            Ok(crate::ops::from_vec(v, &shape))
        })?;
        return cast(&out, dt);
    }
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
