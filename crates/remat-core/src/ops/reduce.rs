//! Sum over axes (and `sum_to`, which undoes broadcasting in backward passes).

use super::{from_vec, shape::expand, view};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::error::Result;
use crate::layout::{normalize_axes, Dims, Layout};
use crate::tensor::Tensor;
use smallvec::SmallVec;

/// The axes to reduce (`None`: all), normalised and sorted.
pub(crate) fn resolve_axes(op: &str, axes: Option<&[isize]>, ndim: usize) -> Result<Dims> {
    match axes {
        None => Ok((0..ndim).collect()),
        Some(a) => normalize_axes(op, a, ndim),
    }
}

/// The output shape of a reduction over `axes`.
pub(crate) fn reduced_shape(shape: &[usize], axes: &[usize], keepdims: bool) -> Dims {
    let mut out: Dims = SmallVec::new();
    for (i, &d) in shape.iter().enumerate() {
        if axes.contains(&i) {
            if keepdims {
                out.push(1);
            }
        } else {
            out.push(d);
        }
    }
    out
}

struct SumOp {
    axes: Dims,
    keepdims: bool,
}

/// Sum without recording (axes normalised).
pub(crate) fn sum_raw(x: &Tensor, axes: &[usize], keepdims: bool) -> Result<Tensor> {
    let shape = reduced_shape(x.shape(), axes, keepdims);
    if super::is_cuda(x) {
        // Bring the reduced axes last (a view), make that contiguous when it is not already,
        // then sum runs of `inner` elements.
        let kept: Dims = (0..x.ndim()).filter(|a| !axes.contains(a)).collect();
        let mut perm = kept.clone();
        perm.extend(axes.iter().copied());
        let inner: usize = axes.iter().map(|&a| x.shape()[a]).product();
        let rows: usize = kept.iter().map(|&a| x.shape()[a]).product();
        let p = view(x, x.layout().permute(&perm));
        return crate::cuda::launch::sum_rows("sum", &p, rows, inner, &shape);
    }
    Ok(crate::dispatch!(x.dtype(), T => {
        let v = cpu::sum::sum_axes::<T>(x.data(), axes);
        from_vec(v, &shape)
    }))
}

impl Op for SumOp {
    fn name(&self) -> &'static str {
        "sum"
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        sum_raw(inputs[0], &self.axes, self.keepdims)
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let shape = &ctx.inputs[0].shape;
        let kept = reduced_shape(shape, &self.axes, true);
        let g = if ctx.grad.is_contiguous() {
            view(
                ctx.grad,
                Layout {
                    offset: ctx.grad.layout().offset,
                    ..Layout::contiguous(&kept)
                },
            )
        } else {
            super::reshape(&super::contiguous(ctx.grad)?, &kept)?
        };
        Ok(vec![Some(expand(&g, shape)?)])
    }
}

/// Sum over `axes` (None: all axes).
pub fn sum(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = resolve_axes("sum", axes, x.ndim())?;
    apply(SumOp { axes, keepdims }, &[x], &[])
}

/// Reduce a broadcast gradient back to `shape` (sums leading axes and stretched axes).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim() - shape.len();
    let mut axes: Dims = (0..lead).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[lead + i] != 1 {
            axes.push(lead + i);
        }
    }
    let s = sum_raw(g, &axes, true)?;
    // Drop the leading axes (their extent is 1 now) by viewing with the target shape.
    Ok(view(&s, Layout::contiguous(shape)))
}
