//! Reductions beyond `sum`: `mean`, `max`/`min` and `amax`/`amin` (values only) over axes. Backward passes keep the
//! broadcast part as a stride-0 view wherever they can, so `mean`'s gradient costs one
//! output-sized buffer, not an input-sized one.

use super::elementwise::{binary_forward, Binary};
use super::reduce::{broadcast_back, reduced_shape, resolve_axes, rows_view, sum_raw};
use super::{div, from_vec, mul, scale};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::{Element, Scalar};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;

/// Number of elements each output of a reduction over `axes` combines.
fn reduced_count(shape: &[usize], axes: &[usize]) -> usize {
    axes.iter().map(|&a| shape[a]).product()
}

struct MeanOp {
    axes: Dims,
    keepdims: bool,
}

impl MeanOp {
    /// 1 / the number of elements each output averages (an empty reduction gives 0 / 0 =
    /// NaN, as NumPy does).
    fn inv_count(&self, shape: &[usize]) -> f64 {
        1.0 / reduced_count(shape, &self.axes) as f64
    }
}

impl Op for MeanOp {
    fn name(&self) -> &'static str {
        "mean"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        let inv = self.inv_count(x.shape());
        Ok(crate::dispatch!(x.dtype(), T => {
            let mut v = cpu::sum::sum_axes::<T>(x.data(), &self.axes);
            let inv = T::from_f64(inv);
            for o in v.iter_mut() {
                *o *= inv;
            }
            from_vec(v, &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let s = sum_raw(x, &self.axes, self.keepdims)?;
        super::elementwise::unary_forward(
            super::elementwise::Unary::Scale,
            &s,
            self.inv_count(x.shape()),
        )
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        // Scale the small output gradient, then broadcast it as a view.
        let shape = &ctx.inputs[0].shape;
        let scaled = scale(ctx.grad, self.inv_count(shape))?;
        Ok(vec![Some(broadcast_back(&scaled, &self.axes, shape)?)])
    }
}

/// Arithmetic mean over `axes` (None: all axes).
pub fn mean(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = resolve_axes("mean", axes, x.ndim())?;
    apply(MeanOp { axes, keepdims }, &[x], &[])
}

struct MaxOp {
    axes: Dims,
    keepdims: bool,
}

/// The max-fold step: NaN wins (once the accumulator is NaN it stays NaN), as in PyTorch.
#[inline(always)]
fn max_step<T: Element>(acc: T, v: T) -> T {
    if v > acc || v.is_nan() {
        v
    } else {
        acc
    }
}

impl Op for MaxOp {
    fn name(&self) -> &'static str {
        "max"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        Ok(crate::dispatch!(x.dtype(), T => {
            let v = cpu::reduce::<T, _>(x.data(), &self.axes, T::NEG_INFINITY, max_step::<T>);
            from_vec(v, &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // As `sum`: the reduced axes last (a view), then one maximum per run.
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        let (p, rows, n) = rows_view(x, &self.axes);
        crate::cuda::launch::max_rows("max", &p, rows, n, &shape)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let (x, y) = (&ctx.saved[0], &ctx.saved[1]);
        let shape = x.shape();
        // 1 where an element equals its maximum (NaN matches NaN), else 0: a constant of
        // the backward (the maximum's position does not move under small changes).
        let yb = broadcast_back(&y.detach(), &self.axes, shape)?;
        let mask = binary_forward(Binary::Equal, &x.detach(), &yb, 0.0)?;
        // Ties share the gradient evenly (PyTorch's amax): scale by 1 / count per output.
        let counts = sum_raw(&mask, &self.axes, self.keepdims)?;
        let share = div(&super::to_dtype(ctx.grad, x.dtype())?, &counts)?;
        Ok(vec![Some(mul(
            &mask,
            &broadcast_back(&share, &self.axes, shape)?,
        )?)])
    }
}

/// Maximum over `axes` (None: all axes), values only. The gradient flows to the maximal
/// elements; ties split it evenly. Reducing an axis of extent 0 is a shape error.
pub fn max(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = nonempty_axes("max", axes, x)?;
    if !x.dtype().is_float() {
        return int_extreme("max", x, &axes, keepdims, true);
    }
    apply(
        MaxOp { axes, keepdims },
        &[x],
        &[Save::Input(0), Save::Output],
    )
}

/// The largest (or smallest) value over `axes` of an integer or bool tensor, in its dtype,
/// as PyTorch: exactly in int64 on the CPU; on a GPU through float64 (exact below 2^53).
fn int_extreme(
    op: &str,
    x: &Tensor,
    axes: &[usize],
    keepdims: bool,
    largest: bool,
) -> Result<Tensor> {
    use crate::dtype::DType;
    if x.device() != crate::device::Device::Cpu {
        let f = super::cast(x, DType::F64)?;
        let axes = as_isize(axes);
        let r = if largest {
            max(&f, Some(&axes), keepdims)?
        } else {
            min(&f, Some(&axes), keepdims)?
        };
        return super::cast(&r, x.dtype());
    }
    let x64 = super::cast(x, DType::I64)?;
    let (init, pick): (i64, fn(i64, i64) -> i64) = if largest {
        (i64::MIN, std::cmp::max)
    } else {
        (i64::MAX, std::cmp::min)
    };
    let v = crate::cpu::catch_oom(op, || Ok(crate::cpu::reduce(x64.data(), axes, init, pick)))?;
    let shape = super::reduce::reduced_shape(x.shape(), axes, keepdims);
    super::cast(&super::from_vec(v, &shape), x.dtype())
}

/// Normalised axes back in the signed form the public functions take.
fn as_isize(axes: &[usize]) -> Vec<isize> {
    axes.iter().map(|&a| a as isize).collect()
}

/// The axes of a max/min-like reduction, refusing an axis of extent 0 (no identity).
fn nonempty_axes(op: &str, axes: Option<&[isize]>, x: &Tensor) -> Result<Dims> {
    let axes = resolve_axes(op, axes, x.ndim())?;
    if let Some(&a) = axes.iter().find(|&&a| x.shape()[a] == 0) {
        return Err(Error::shape(
            op,
            format!(
                "cannot reduce over axis {a} of extent 0 (input shape {}); the reduction has \
                 no identity",
                fmt_shape(x.shape())
            ),
        ));
    }
    Ok(axes)
}

/// Minimum over `axes` (None: all axes), values only: `-max(-x)`, so it shares `max`'s
/// kernels on both devices, its NaN propagation and its even split of the gradient among ties.
pub fn min(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = nonempty_axes("min", axes, x)?;
    if !x.dtype().is_float() {
        return int_extreme("min", x, &axes, keepdims, false);
    }
    let neg = super::neg(x)?;
    let m = apply(
        MaxOp { axes, keepdims },
        &[&neg],
        &[Save::Input(0), Save::Output],
    )?;
    super::neg(&m)
}

/// PyTorch's `amax`: the maximum over `axes` (None: all), values only.
pub fn amax(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = nonempty_axes("amax", axes, x)?;
    if !x.dtype().is_float() {
        return int_extreme("amax", x, &axes, keepdims, true);
    }
    apply(
        MaxOp { axes, keepdims },
        &[x],
        &[Save::Input(0), Save::Output],
    )
}

/// PyTorch's `amin`: the minimum over `axes` (None: all), values only.
pub fn amin(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    nonempty_axes("amin", axes, x)?;
    min(x, axes, keepdims)
}

impl Tensor {
    /// Mean over `axes` (None: all axes).
    pub fn mean(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
        mean(self, axes, keepdims)
    }
    /// Maximum over `axes` (None: all axes), values only.
    pub fn max(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
        max(self, axes, keepdims)
    }
    /// Minimum over `axes` (None: all axes), values only.
    pub fn min(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
        min(self, axes, keepdims)
    }
}
