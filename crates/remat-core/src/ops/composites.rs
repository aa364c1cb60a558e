//! Small PyTorch ops composed of others (so each inherits their backward, CUDA path and
//! checkpoint support): `take_along_dim` (a broadcast `gather`), `masked_select` (a boolean
//! mask index of the broadcast pair), `count_nonzero` (a sum of `x != 0`), `nan_to_num`
//! (`where`s), `addcmul` / `addcdiv` (`input + value · t1 · t2`, `input + value · t1 / t2`),
//! and `var_mean` / `std_mean` (the two reductions as a pair).

use super::advanced_index::{index_advanced, Index};
use super::{
    add, div, eq, expand, flatten, full, gather, isnan, mean, mul, ne, scale, std, sum, var, where_,
};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape, normalize_axis};
use crate::tensor::Tensor;

/// The elements of `x` at `indices` along `dim`, with `x` and `indices` broadcast over the
/// other axes (PyTorch's `take_along_dim`); `dim` None takes from the flattened `x` at the
/// flattened `indices`.
pub fn take_along_dim(x: &Tensor, indices: &Tensor, dim: Option<isize>) -> Result<Tensor> {
    const OP: &str = "take_along_dim";
    let Some(dim) = dim else {
        return gather(&flatten(x, 0, -1)?, 0, &flatten(indices, 0, -1)?);
    };
    if x.ndim() != indices.ndim() {
        return Err(Error::shape(
            OP,
            format!(
                "input and indices must have the same number of axes, got {} and {}",
                fmt_shape(x.shape()),
                fmt_shape(indices.shape())
            ),
        ));
    }
    let d = normalize_axis(OP, dim, x.ndim().max(1))?;
    if x.ndim() == 0 {
        return gather(x, 0, indices);
    }
    // Broadcast every axis but `d`, which keeps each operand's own extent.
    let (mut xs, mut is) = (x.shape().to_vec(), indices.shape().to_vec());
    xs[d] = 1;
    is[d] = 1;
    let common = broadcast_shapes(OP, &xs, &is)?;
    let mut x_shape = common.to_vec();
    x_shape[d] = x.shape()[d];
    let mut i_shape = common.to_vec();
    i_shape[d] = indices.shape()[d];
    gather(
        &expand(x, &x_shape)?,
        d as isize,
        &expand(indices, &i_shape)?,
    )
}

/// The elements of `x` where `mask` (bool, broadcast with `x`) is true, as a 1-D tensor in
/// C order (PyTorch's `masked_select`).
pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    const OP: &str = "masked_select";
    if mask.dtype() != DType::Bool {
        return Err(Error::dtype(
            OP,
            format!(
                "mask must be a bool tensor, got {} of shape {}",
                mask.dtype(),
                fmt_shape(mask.shape())
            ),
        ));
    }
    let shape = broadcast_shapes(OP, x.shape(), mask.shape())?;
    let xb = expand(x, &shape)?;
    let mb = expand(mask, &shape)?;
    if shape.is_empty() {
        // A 0-d pair: the mask indexes a new axis of one.
        return index_advanced(
            &super::reshape(&xb, &[1])?,
            &[Index::Tensor(super::reshape(&mb, &[1])?)],
        );
    }
    index_advanced(&xb, &[Index::Tensor(mb)])
}

/// How many elements of `x` are nonzero (NaN counts), over `dims` (None: all), as int64.
pub fn count_nonzero(x: &Tensor, dims: Option<&[isize]>) -> Result<Tensor> {
    super::reduce::resolve_axes("count_nonzero", dims, x.ndim())?;
    let zero = full(&[], 0.0, x.dtype(), x.device())?;
    sum(&ne(x, &zero)?, dims, false)
}

/// `x` with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (None: the dtype's
/// largest and lowest finite values), as PyTorch's `nan_to_num`. Integer and bool tensors come
/// back unchanged (a copy). The gradient flows to the elements kept.
pub fn nan_to_num(
    x: &Tensor,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return super::clone(x);
    }
    let (hi, lo) = match x.dtype() {
        DType::F32 => (f32::MAX as f64, f32::MIN as f64),
        _ => (f64::MAX, f64::MIN),
    };
    let c = |v: f64| full(&[], v, x.dtype(), x.device());
    let inf = c(f64::INFINITY)?;
    let out = where_(&isnan(x)?, &c(nan)?, x)?;
    let out = where_(&eq(x, &inf)?, &c(posinf.unwrap_or(hi))?, &out)?;
    where_(
        &eq(x, &c(f64::NEG_INFINITY)?)?,
        &c(neginf.unwrap_or(lo))?,
        &out,
    )
}

/// `input + value · t1 · t2` with broadcasting (PyTorch's `addcmul`).
pub fn addcmul(input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    crate::autocast::composite(
        "addcmul",
        [Some(input), Some(t1), Some(t2)],
        |[x, a, b]| match (x, a, b) {
            (Some(x), Some(a), Some(b)) => addcmul_now(x, a, b, value),
            _ => unreachable!("the operands stay present"),
        },
    )
}

fn addcmul_now(input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    check_three("addcmul", input, t1, t2)?;
    let p = mul(t1, t2)?;
    add(input, &if value == 1.0 { p } else { scale(&p, value)? })
}

/// `input + value · t1 / t2` with broadcasting (PyTorch's `addcdiv`); integer `t1` and `t2`
/// are refused, as PyTorch does (integer division would truncate).
pub fn addcdiv(input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    crate::autocast::composite(
        "addcdiv",
        [Some(input), Some(t1), Some(t2)],
        |[x, a, b]| match (x, a, b) {
            (Some(x), Some(a), Some(b)) => addcdiv_now(x, a, b, value),
            _ => unreachable!("the operands stay present"),
        },
    )
}

fn addcdiv_now(input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    if !t1.dtype().is_float() && !t2.dtype().is_float() {
        return Err(Error::dtype(
            "addcdiv",
            format!(
                "integer division of tensors is not supported (t1 {} and t2 {}); convert one \
                 to a float dtype",
                t1.dtype(),
                t2.dtype()
            ),
        ));
    }
    check_three("addcdiv", input, t1, t2)?;
    let q = div(t1, t2)?;
    add(input, &if value == 1.0 { q } else { scale(&q, value)? })
}

/// The three operands of `addcmul`/`addcdiv` broadcast together (the error names `op`).
fn check_three(op: &str, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()> {
    super::check_same_device(op, &[a, b, c])?;
    let bc = broadcast_shapes(op, b.shape(), c.shape())?;
    broadcast_shapes(op, a.shape(), &bc)?;
    Ok(())
}

/// `(var, mean)` over `dims` (None: all), with Bessel's `correction` (PyTorch's `var_mean`).
pub fn var_mean(
    x: &Tensor,
    dims: Option<&[isize]>,
    correction: f64,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    super::reduce::resolve_axes("var_mean", dims, x.ndim())?;
    Ok((var(x, dims, correction, keepdim)?, mean(x, dims, keepdim)?))
}

/// `(std, mean)` over `dims` (None: all), with Bessel's `correction` (PyTorch's `std_mean`).
pub fn std_mean(
    x: &Tensor,
    dims: Option<&[isize]>,
    correction: f64,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    super::reduce::resolve_axes("std_mean", dims, x.ndim())?;
    Ok((std(x, dims, correction, keepdim)?, mean(x, dims, keepdim)?))
}
