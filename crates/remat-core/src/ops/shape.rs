//! Core view ops: reshape (a view when the data is contiguous), expand (broadcast view) and
//! explicit contiguous copies (`contiguous`, `clone`).

use super::{from_vec, view};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, fmt_shape, numel, view_strides, Dims, Layout};
use crate::tensor::Tensor;

/// The product of `dims`, or None when it overflows (a zero anywhere makes it 0).
fn checked_product(mut dims: impl Iterator<Item = usize> + Clone) -> Option<usize> {
    if dims.clone().any(|d| d == 0) {
        return Some(0);
    }
    dims.try_fold(1usize, |acc, d| acc.checked_mul(d))
}

/// Resolve a reshape target with at most one `-1`.
pub fn infer_shape(op: &str, from: &[usize], to: &[isize]) -> Result<Dims> {
    let n = numel(from);
    let mut unknown = None;
    for (i, &d) in to.iter().enumerate() {
        if d == -1 {
            if unknown.is_some() {
                return Err(Error::shape(op, "only one dimension can be -1"));
            }
            unknown = Some(i);
        } else if d < 0 {
            return Err(Error::shape(op, format!("invalid dimension {d}")));
        }
    }
    let mut out: Dims = to.iter().map(|&d| d.max(0) as usize).collect();
    // A product that overflows cannot equal the element count: the same error as a mismatch.
    let known = checked_product(to.iter().filter(|&&d| d >= 0).map(|&d| d as usize));
    let mismatch = || {
        Error::shape(
            op,
            format!(
                "cannot reshape a tensor of shape {} into {:?}",
                fmt_shape(from),
                to
            ),
        )
    };
    let known = known.ok_or_else(mismatch)?;
    if let Some(i) = unknown {
        if known == 0 || !n.is_multiple_of(known) {
            return Err(Error::shape(
                op,
                format!(
                    "cannot reshape a tensor of shape {} into {:?}",
                    fmt_shape(from),
                    to
                ),
            ));
        }
        out[i] = n / known;
    }
    if checked_product(out.iter().copied()) != Some(n) {
        return Err(Error::shape(
            op,
            format!(
                "cannot reshape a tensor of shape {} into {}",
                fmt_shape(from),
                fmt_shape(&out)
            ),
        ));
    }
    Ok(out)
}

struct ReshapeOp {
    shape: Dims,
}

/// `x` viewed with `shape` when strides for it exist (always when `x` is contiguous; see
/// [`view_strides`]); None when it needs a copy first.
fn reshape_view(x: &Tensor, shape: &[usize]) -> Option<Tensor> {
    let l = x.layout();
    let strides = if x.is_contiguous() {
        contiguous_strides(shape)
    } else {
        view_strides(&l.shape, &l.strides, shape)?
    };
    Some(view(
        x,
        Layout {
            shape: shape.into(),
            strides,
            offset: l.offset,
        },
    ))
}

impl Op for ReshapeOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        Ok(reshape_view(x, &self.shape).unwrap_or_else(
            || crate::dispatch_any!(x.dtype(), T => from_vec(cpu::gather::<T>(x.data()), &self.shape)),
        ))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        match reshape_view(x, &self.shape) {
            Some(v) => Ok(v),
            None => {
                let c = crate::cuda::launch::copy("reshape", x)?;
                Ok(view(&c, Layout::contiguous(&self.shape)))
            }
        }
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(reshape(ctx.grad, &ctx.inputs[0].shape)?)])
    }
}

/// `x` with a new shape of the same element count (no copy when `x` is contiguous).
pub fn reshape(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if checked_product(shape.iter().copied()) != Some(x.numel()) {
        return Err(Error::shape(
            "reshape",
            format!(
                "cannot reshape a tensor of shape {} into {}",
                fmt_shape(x.shape()),
                fmt_shape(shape)
            ),
        ));
    }
    if shape == x.shape() {
        return Ok(x.clone());
    }
    apply(
        ReshapeOp {
            shape: shape.into(),
        },
        &[x],
        &[],
    )
}

/// PyTorch's `view`: `x` with a new shape of the same element count, always sharing its
/// storage. Unlike [`reshape`], which copies when no strides show `x` in the new shape (a
/// transpose flattened, say), this raises a `ShapeError` then, as PyTorch does: code that
/// writes through a view must never write into a silent copy.
pub fn view_as_shape(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let l = x.layout();
    let fits = checked_product(shape.iter().copied()) == Some(x.numel());
    if fits && !x.is_contiguous() && view_strides(&l.shape, &l.strides, shape).is_none() {
        return Err(Error::shape(
            "view",
            format!(
                "a tensor of shape {} and strides {} has no view of shape {} (an axis of the \
                 new shape spans two strided runs of the old); use reshape(...) instead, which \
                 copies",
                fmt_shape(x.shape()),
                fmt_shape(&x.layout().strides),
                fmt_shape(shape)
            ),
        ));
    }
    reshape(x, shape)
}

struct ExpandOp {
    shape: Dims,
}

impl Op for ExpandOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "expand"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let l = inputs[0].layout().broadcast_to("expand", &self.shape)?;
        Ok(view(inputs[0], l))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.cpu(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(super::sum_to(ctx.grad, &ctx.inputs[0].shape)?)])
    }
}

/// A broadcast view of `x` with `shape` (stride 0 on stretched axes; no copy).
pub fn expand(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    // Views of any size are fine, but their element count must be representable.
    crate::layout::checked_numel("expand", shape, x.dtype())?;
    apply(
        ExpandOp {
            shape: shape.into(),
        },
        &[x],
        &[],
    )
}

/// A contiguous copy; `name` is the op the user called (`contiguous` or `clone`).
struct CopyOp {
    name: &'static str,
}

impl Op for CopyOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        Ok(crate::dispatch_any!(x.dtype(), T => from_vec(cpu::gather::<T>(x.data()), x.shape())))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::cuda::launch::copy(self.name, inputs[0])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(ctx.grad.clone())])
    }
}

/// A contiguous copy of `x` that gradients flow through.
pub fn copy_op(x: &Tensor) -> Result<Tensor> {
    apply(CopyOp { name: "contiguous" }, &[x], &[])
}

/// PyTorch's `clone`: a new contiguous tensor with `x`'s values that gradients flow through
/// (never `x` itself, even when `x` is contiguous).
pub fn clone(x: &Tensor) -> Result<Tensor> {
    apply(CopyOp { name: "clone" }, &[x], &[])
}
