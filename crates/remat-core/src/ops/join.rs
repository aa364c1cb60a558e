//! Joining tensors: `concat` (along an existing axis) and `stack` (along a new axis). The
//! output is a new contiguous tensor; backward hands each input its slice of the gradient
//! (a view, no copy), only for inputs that need one. On CUDA each input is copied into its
//! slice of the output by the strided-copy kernel.

use super::view::IndexItem;
use super::{check_same_device, from_vec, view};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, normalize_axis, numel, Dims};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use std::borrow::Cow;

/// Every shape of `ts`, for error messages: `(2, 3), (3, 3)`.
fn fmt_shapes(ts: &[Tensor]) -> String {
    ts.iter()
        .map(|t| fmt_shape(t.shape()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Concatenate views along `axis` into a new C-contiguous buffer of `shape` (all views have
/// `shape` except along `axis`, already validated).
fn concat_kernel<T: Scalar>(parts: &[TensorData], axis: usize, shape: &[usize]) -> Vec<T> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let srcs: Vec<Cow<'_, [T]>> = parts
        .iter()
        .map(|d| match cpu::contiguous_slice::<T>(d) {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(cpu::gather::<T>(d)),
        })
        .collect();
    // Each part contributes a run of `extent * inner` elements to every outer row.
    let runs: Vec<usize> = parts.iter().map(|d| d.layout.shape[axis] * inner).collect();
    let mut out = crate::cpu::with_capacity(numel(shape));
    for o in 0..outer {
        for (src, &run) in srcs.iter().zip(&runs) {
            out.extend_from_slice(&src[o * run..(o + 1) * run]);
        }
    }
    out
}

/// Concat or stack: the output axis and whether each input gets a new axis there first.
struct JoinOp {
    axis: usize,
    stack: bool,
}

impl JoinOp {
    fn name_of(stack: bool) -> &'static str {
        if stack {
            "stack"
        } else {
            "concat"
        }
    }
}

/// `d` with a new axis of extent 1 inserted at `axis` (a view).
fn unsqueeze(d: &TensorData, axis: usize) -> TensorData {
    let mut layout = d.layout.clone();
    layout.shape.insert(axis, 1);
    layout.strides.insert(axis, 0);
    TensorData {
        storage: d.storage.clone(),
        layout,
    }
}

impl Op for JoinOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        Self::name_of(self.stack)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (parts, shape) = self.parts(inputs)?;
        Ok(crate::dispatch_any!(inputs[0].dtype(), T => {
            from_vec(concat_kernel::<T>(&parts, self.axis, &shape), &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = self.name();
        let (parts, shape) = self.parts(inputs)?;
        let first = inputs[0];
        let out = crate::cuda::launch::empty(op, first.device(), &shape, first.dtype())?;
        let ol = out.layout().clone();
        let mut start = 0usize;
        for p in parts {
            let extent = p.layout.shape[self.axis];
            let mut l = ol.clone();
            l.shape[self.axis] = extent;
            l.offset = ol.offset + start * ol.strides[self.axis];
            if numel(&l.shape) > 0 {
                let dst = view(&out, l);
                crate::cuda::launch::copy_into(op, &Tensor::from_data(p), &dst, false)?;
            }
            start += extent;
        }
        Ok(out)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // Each input's slice of the gradient along the axis (an `index`, so differentiable).
        let mut start = 0usize;
        let mut out = Vec::with_capacity(ctx.inputs.len());
        for (i, meta) in ctx.inputs.iter().enumerate() {
            let extent = if self.stack { 1 } else { meta.shape[self.axis] };
            if ctx.needs_grad(i) {
                let full = IndexItem::Slice {
                    start: None,
                    stop: None,
                    step: 1,
                };
                let mut items = vec![full; self.axis];
                items.push(if self.stack {
                    IndexItem::Int(start as isize)
                } else {
                    IndexItem::Slice {
                        start: Some(start as isize),
                        stop: Some((start + extent) as isize),
                        step: 1,
                    }
                });
                out.push(Some(super::index(ctx.grad, &items)?));
            } else {
                out.push(None);
            }
            start += extent;
        }
        Ok(out)
    }
}

impl JoinOp {
    /// The inputs as parts of the output (stacked ones with the new axis) and the output
    /// shape; replays see the inputs of the forward, but a mismatch is still an error, not
    /// a panic.
    fn parts(&self, inputs: &[&Tensor]) -> Result<(Vec<TensorData>, Dims)> {
        let op = self.name();
        let first = inputs
            .first()
            .ok_or_else(|| Error::value(op, "need at least one tensor"))?;
        let parts: Vec<TensorData> = inputs
            .iter()
            .map(|t| {
                if self.stack {
                    unsqueeze(t.data(), self.axis.min(t.ndim()))
                } else {
                    t.data().clone()
                }
            })
            .collect();
        // Replays see the inputs of the forward; still refuse (not panic) on a mismatch.
        let mut shape: Dims = parts[0].layout.shape.clone();
        if self.axis >= shape.len() {
            return Err(Error::shape(op, format!("axis {} out of range", self.axis)));
        }
        shape[self.axis] = 0;
        for p in &parts {
            let s = &p.layout.shape;
            let ok = s.len() == shape.len()
                && s.iter()
                    .zip(&shape)
                    .enumerate()
                    .all(|(i, (a, b))| i == self.axis || a == b)
                && p.storage.dtype() == first.dtype();
            if !ok {
                return Err(Error::shape(op, "inputs changed shape or dtype"));
            }
            shape[self.axis] += s[self.axis];
        }
        Ok((parts, shape))
    }
}

/// Shared validation of concat/stack (non-empty, one device), and the inputs in their
/// promoted dtype, as PyTorch's `cat`/`stack` promote (`cat([float32, int64])` is float32);
/// the casts are differentiable, so each input's gradient comes back in its own dtype.
fn promoted_inputs(op: &str, tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    if tensors.is_empty() {
        return Err(Error::value(
            op,
            "need at least one tensor, got an empty list",
        ));
    }
    let refs: Vec<&Tensor> = tensors.iter().collect();
    check_same_device(op, &refs)?;
    let dt: DType = tensors
        .iter()
        .fold(tensors[0].dtype(), |d, t| d.promote(t.dtype()));
    tensors
        .iter()
        .map(|t| {
            if t.dtype() == dt {
                Ok(t.clone())
            } else {
                super::to_dtype(t, dt)
            }
        })
        .collect()
}

/// Join `tensors` along the existing axis `axis` (negative counts from the end). All must
/// be on one device and have the same shape except along `axis`; dtypes promote.
pub fn concat(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
    const OP: &str = "concat";
    let all = promoted_inputs(OP, tensors)?;
    // PyTorch skips 1-D empty tensors (its legacy "empty" shape (0,)) next to others.
    let kept: Vec<Tensor> = all.iter().filter(|t| t.shape() != [0]).cloned().collect();
    let tensors: &[Tensor] = if kept.is_empty() || kept.len() == all.len() {
        &all
    } else {
        &kept
    };
    let nd = tensors[0].ndim();
    if nd == 0 {
        return Err(Error::shape(
            OP,
            format!(
                "zero-dimensional tensors cannot be concatenated, got shapes {}",
                fmt_shapes(tensors)
            ),
        ));
    }
    let axis = normalize_axis(OP, axis, nd).map_err(|_| {
        Error::dim_out_of_range(
            OP,
            format!(
                "axis {axis} is out of bounds for tensors of {nd} dimensions (shapes {})",
                fmt_shapes(tensors)
            ),
        )
    })?;
    let s0 = tensors[0].shape();
    let fits = |t: &Tensor| {
        t.ndim() == nd
            && t.shape()
                .iter()
                .zip(s0)
                .enumerate()
                .all(|(i, (a, b))| i == axis || a == b)
    };
    if !tensors.iter().all(fits) {
        return Err(Error::shape(
            OP,
            format!(
                "all input shapes must match except along axis {axis}, got {}",
                fmt_shapes(tensors)
            ),
        ));
    }
    let refs: Vec<&Tensor> = tensors.iter().collect();
    apply(JoinOp { axis, stack: false }, &refs, &[])
}

/// Join `tensors` along a new axis `axis` (0..=ndim; negative counts from the end). All must
/// have the same shape and device; dtypes promote.
pub fn stack(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
    const OP: &str = "stack";
    let tensors = &promoted_inputs(OP, tensors)?;
    let nd = tensors[0].ndim();
    let axis = normalize_axis(OP, axis, nd + 1).map_err(|_| {
        Error::dim_out_of_range(
            OP,
            format!(
                "axis {axis} is out of bounds for stacking tensors of {nd} dimensions \
                 (shapes {})",
                fmt_shapes(tensors)
            ),
        )
    })?;
    let s0 = tensors[0].shape();
    if tensors.iter().any(|t| t.shape() != s0) {
        return Err(Error::shape(
            OP,
            format!(
                "all input tensors must have the same shape, got {}",
                fmt_shapes(tensors)
            ),
        ));
    }
    let refs: Vec<&Tensor> = tensors.iter().collect();
    apply(JoinOp { axis, stack: true }, &refs, &[])
}

/// PyTorch's name for [`concat()`] (`torch.cat`; also `concatenate`).
pub fn cat(tensors: &[Tensor], dim: isize) -> Result<Tensor> {
    concat(tensors, dim)
}
