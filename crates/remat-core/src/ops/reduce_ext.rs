//! Reductions beyond `sum`: `mean` and `max` (values only) over axes. Backward passes keep the
//! broadcast part as a stride-0 view wherever they can, so `mean`'s gradient costs one
//! output-sized buffer, not an input-sized one.

use super::reduce::{reduced_shape, resolve_axes};
use super::unary::zip_t;
use super::{from_vec, view};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::cuda::codes::BinaryCode::{Div, Equal, Mul};
use crate::cuda::codes::UnaryCode::Scale;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims, Layout};
use crate::tensor::Tensor;

/// `t` (a reduction result, or its gradient) viewed with the keepdims shape `kept`, then
/// broadcast to `full` as a stride-0 view (no copy when `t` is contiguous).
fn broadcast_back(t: &Tensor, kept: &[usize], full: &[usize], op: &str) -> Result<Tensor> {
    let k = if t.is_contiguous() {
        view(
            t,
            Layout {
                offset: t.layout().offset,
                ..Layout::contiguous(kept)
            },
        )
    } else if super::is_cuda(t) {
        let c = crate::cuda::launch::copy(op, t)?;
        view(&c, Layout::contiguous(kept))
    } else {
        crate::dispatch!(t.dtype(), T => from_vec(cpu::gather::<T>(t.data()), kept))
    };
    let l = k.layout().broadcast_to(op, full)?;
    Ok(view(&k, l))
}

/// Number of elements each output of a reduction over `axes` combines.
fn reduced_count(shape: &[usize], axes: &[usize]) -> usize {
    axes.iter().map(|&a| shape[a]).product()
}

struct MeanOp {
    axes: Dims,
    keepdims: bool,
}

impl Op for MeanOp {
    fn name(&self) -> &'static str {
        "mean"
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        // An empty reduction gives 0 / 0 = NaN, as NumPy does.
        let count = reduced_count(x.shape(), &self.axes) as f64;
        if super::is_cuda(x) {
            let s = super::reduce::sum_raw(x, &self.axes, self.keepdims)?;
            return crate::cuda::launch::unary_p("mean", Scale, &s, 1.0 / count);
        }
        Ok(crate::dispatch!(x.dtype(), T => {
            let mut v = cpu::sum::sum_axes::<T>(x.data(), &self.axes);
            let inv = T::from_f64(1.0 / count);
            for o in v.iter_mut() {
                *o *= inv;
            }
            from_vec(v, &shape)
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let shape = &ctx.inputs[0].shape;
        let kept = reduced_shape(shape, &self.axes, true);
        let count = reduced_count(shape, &self.axes) as f64;
        // Scale the small output gradient, then broadcast it as a view.
        let g = ctx.grad;
        if super::is_cuda(g) {
            let scaled = crate::cuda::launch::unary_p("mean", Scale, g, 1.0 / count)?;
            return Ok(vec![Some(broadcast_back(&scaled, &kept, shape, "mean")?)]);
        }
        let scaled = crate::dispatch!(g.dtype(), T => {
            let inv = T::from_f64(1.0 / count);
            from_vec(cpu::map::<T, _>(g.data(), |v| v * inv), &kept)
        });
        Ok(vec![Some(broadcast_back(&scaled, &kept, shape, "mean")?)])
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
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        if super::is_cuda(x) {
            // As `sum`: the reduced axes last (a view), then one maximum per run.
            let kept: Dims = (0..x.ndim()).filter(|a| !self.axes.contains(a)).collect();
            let mut perm = kept.clone();
            perm.extend(self.axes.iter().copied());
            let n: usize = self.axes.iter().map(|&a| x.shape()[a]).product();
            let rows: usize = kept.iter().map(|&a| x.shape()[a]).product();
            let p = view(x, x.layout().permute(&perm));
            return crate::cuda::launch::max_rows("max", &p, rows, n, &shape);
        }
        Ok(crate::dispatch!(x.dtype(), T => {
            let v = cpu::reduce::<T, _>(x.data(), &self.axes, T::NEG_INFINITY, max_step::<T>);
            from_vec(v, &shape)
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let (x, y) = (&ctx.saved[0], &ctx.saved[1]);
        let shape = x.shape();
        let kept = reduced_shape(shape, &self.axes, true);
        let yb = broadcast_back(y, &kept, shape, "max")?;
        if super::is_cuda(x) {
            use crate::cuda::launch::binary as k;
            let mask = k("max", Equal, x, &yb, shape)?;
            let counts = super::reduce::sum_raw(&mask, &self.axes, true)?;
            let g = super::cast(ctx.grad, x.dtype())?;
            let gk = broadcast_back(&g, &kept, &kept, "max")?;
            let share = k("max", Div, &gk, &counts, &kept)?;
            let sb = broadcast_back(&share, &kept, shape, "max")?;
            return Ok(vec![Some(k("max", Mul, &mask, &sb, shape)?)]);
        }
        // 1 where an element equals its maximum (NaN matches NaN), else 0.
        let mask = zip_t!(
            x,
            &yb,
            shape,
            |v, m| if v == m || (v.is_nan() && m.is_nan()) {
                T::from_f64(1.0)
            } else {
                T::from_f64(0.0)
            }
        );
        // Ties share the gradient evenly (PyTorch's amax): scale by 1 / count per output.
        let g = super::cast(ctx.grad, x.dtype())?;
        let share = crate::dispatch!(x.dtype(), T => {
            let counts = cpu::reduce::<T, _>(mask.data(), &self.axes, T::from_f64(0.0), |a, b| a + b);
            let gv = cpu::gather::<T>(g.data());
            let v: Vec<T> = gv.iter().zip(&counts).map(|(&g, &c)| g / c).collect();
            from_vec(v, &kept)
        });
        let sb = broadcast_back(&share, &kept, shape, "max")?;
        Ok(vec![Some(zip_t!(&mask, &sb, shape, |m, s| m * s))])
    }
}

/// Maximum over `axes` (None: all axes), values only. The gradient flows to the maximal
/// elements; ties split it evenly. Reducing an axis of extent 0 is a shape error.
pub fn max(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = resolve_axes("max", axes, x.ndim())?;
    if let Some(&a) = axes.iter().find(|&&a| x.shape()[a] == 0) {
        return Err(Error::shape(
            "max",
            format!(
                "cannot take the maximum over axis {a} of extent 0 (input shape {}); the \
                 reduction has no identity",
                fmt_shape(x.shape())
            ),
        ));
    }
    apply(
        MaxOp { axes, keepdims },
        &[x],
        &[Save::Input(0), Save::Output],
    )
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
}
