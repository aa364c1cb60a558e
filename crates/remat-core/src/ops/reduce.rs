//! Sum over axes (and `sum_to`, which undoes broadcasting in backward passes).

use super::{from_vec, shape::expand, view};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::error::Result;
use crate::layout::{normalize_axes, Dims};
use crate::tensor::Tensor;
use smallvec::SmallVec;

/// The axes to reduce (`None`: all), normalised and sorted.
pub(crate) fn resolve_axes(op: &str, axes: Option<&[isize]>, ndim: usize) -> Result<Dims> {
    match axes {
        None => Ok((0..ndim).collect()),
        // A 0-d tensor takes dim 0 / -1 (reducing nothing), as in PyTorch.
        Some(a) if ndim == 0 => normalize_axes(op, a, 1).map(|_| Dims::new()),
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

/// The reduced axes moved last (a view) and the counts of kept rows and reduced elements,
/// as the CUDA row kernels want them.
pub(crate) fn rows_view(x: &Tensor, axes: &[usize]) -> (Tensor, usize, usize) {
    let kept: Dims = (0..x.ndim()).filter(|a| !axes.contains(a)).collect();
    let mut perm = kept.clone();
    perm.extend(axes.iter().copied());
    let inner: usize = axes.iter().map(|&a| x.shape()[a]).product();
    let rows: usize = kept.iter().map(|&a| x.shape()[a]).product();
    (view(x, x.layout().permute(&perm)), rows, inner)
}

impl Op for SumOp {
    fn name(&self) -> &'static str {
        "sum"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        Ok(crate::dispatch!(x.dtype(), T => {
            from_vec(cpu::sum::sum_axes::<T>(x.data(), &self.axes), &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = reduced_shape(x.shape(), &self.axes, self.keepdims);
        let (p, rows, inner) = rows_view(x, &self.axes);
        crate::cuda::launch::sum_rows("sum", &p, rows, inner, &shape)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let shape = &ctx.inputs[0].shape;
        Ok(vec![Some(broadcast_back(ctx.grad, &self.axes, shape)?)])
    }
}

/// A reduction's output (or its gradient) over `axes` of `full`, broadcast back to `full`
/// (a stride-0 view when it is contiguous), differentiably.
pub(crate) fn broadcast_back(g: &Tensor, axes: &[usize], full: &[usize]) -> Result<Tensor> {
    let kept = reduced_shape(full, axes, true);
    expand(&super::reshape(g, &kept)?, full)
}

/// Sum over `axes` (None: all axes).
/// Integer and bool tensors sum exactly (wrapping) to int64, as in PyTorch.
pub fn sum(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    let axes = resolve_axes("sum", axes, x.ndim())?;
    if !x.dtype().is_float() {
        return sum_int(x, &axes, keepdims);
    }
    apply(SumOp { axes, keepdims }, &[x], &[])
}

/// The int64 sum of an integer or bool tensor over (normalised) `axes`.
fn sum_int(x: &Tensor, axes: &[usize], keepdims: bool) -> Result<Tensor> {
    use crate::dtype::DType;
    if x.device() != crate::device::Device::Cpu {
        // On a GPU: through float64 where that is exact (every partial sum below 2^53: bools,
        // and int32 tensors of at most 2^21 elements), else on the host (exact, wrapping).
        let exact_in_f64 =
            x.dtype() == DType::Bool || (x.dtype() == DType::I32 && x.numel() <= 1 << 21);
        if exact_in_f64 {
            let f = super::cast(x, DType::F64)?;
            let s = SumOp {
                axes: axes.into(),
                keepdims,
            }
            .cuda(&[&f])?;
            return super::cast(&s, DType::I64);
        }
        let host = crate::cuda::launch::transfer("sum", x, crate::device::Device::Cpu)?;
        let s = sum_int(&host, axes, keepdims)?;
        return crate::cuda::launch::transfer("sum", &s, x.device());
    }
    let shape = reduced_shape(x.shape(), axes, keepdims);
    cpu::catch_oom("sum", || {
        let x = super::cast(x, crate::dtype::DType::I64)?;
        let v = cpu::reduce::<i64, _>(x.data(), axes, 0, i64::wrapping_add);
        Ok(from_vec(v, &shape))
    })
}

/// Reduce a broadcast gradient back to `shape` (sums leading axes and stretched axes);
/// differentiable (its backward broadcasts again).
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
    let s = apply(
        SumOp {
            axes,
            keepdims: true,
        },
        &[g],
        &[],
    )?;
    // Drop the leading axes (their extent is 1 now).
    super::reshape(&s, shape)
}

/// Sum over already normalised `axes` without recording.
pub(crate) fn sum_raw(x: &Tensor, axes: &[usize], keepdims: bool) -> Result<Tensor> {
    SumOp {
        axes: axes.into(),
        keepdims,
    }
    .forward(&[x])
}
