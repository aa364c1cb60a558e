//! `argmax`/`argmin` (int64 indices, never recorded) and PyTorch's `max(dim)`/`min(dim)`:
//! the values at those indices plus the indices. The index kernel is one pass over the
//! input: a contiguous input seen as `(outer, n, inner)` around the reduced axis keeps the
//! best value and index of each `inner` column while it walks the `n` rows of a slab (each
//! slab's rows are contiguous), so nothing is sorted or transposed; slabs run in parallel on
//! the engine's pool for big inputs. Ties keep the first occurrence and NaN counts as the
//! maximum (and the minimum), as in PyTorch.
//!
//! The values of `max(dim)` are a gather at the indices (`TakeOp`) whose gradient goes to
//! the selected element only (unlike `amax`, whose ties share it); its backward is `where_`
//! of a one-hot mask, so it is differentiable again (second order).

use super::reduce::broadcast_back;
use super::{from_vec, where_};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, normalize_axes};
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Which extreme an index kernel looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    Max,
    Min,
}

impl Pick {
    fn name(self, op: &'static str) -> &'static str {
        match (self, op) {
            (Pick::Max, "arg") => "argmax",
            (Pick::Min, "arg") => "argmin",
            (Pick::Max, _) => "max",
            (Pick::Min, _) => "min",
        }
    }
}

/// Whether `v` replaces `best`: NaN beats every number and only an earlier NaN beats it
/// (`v != v` is false for integers); otherwise strictly greater (smaller), so ties keep the
/// first occurrence.
#[inline(always)]
#[allow(clippy::eq_op)]
fn better<T: Scalar>(pick: Pick, v: T, best: T) -> bool {
    if best != best {
        return false;
    }
    if v != v {
        return true;
    }
    match pick {
        Pick::Max => v > best,
        Pick::Min => v < best,
    }
}

/// The index of the best element of one contiguous row (non-empty).
#[inline]
#[allow(clippy::eq_op)]
fn row_best<T: Scalar>(pick: Pick, row: &[T]) -> i64 {
    let (mut best, mut at) = (row[0], 0usize);
    for (k, &v) in row.iter().enumerate().skip(1) {
        if better(pick, v, best) {
            best = v;
            at = k;
            if v != v {
                break;
            }
        }
    }
    at as i64
}

/// The best index along the middle axis of `c` seen as `(outer, n, inner)`, `n > 0`, in C
/// order of `(outer, inner)`.
fn arg_kernel<T: Scalar>(pick: Pick, c: &[T], outer: usize, n: usize, inner: usize) -> Vec<i64> {
    let mut out = cpu::filled(outer * inner, 0i64);
    if outer * inner == 0 {
        return out;
    }
    let par = c.len() >= cpu::PAR_MIN;
    if inner == 1 {
        let body = |(o, row): (&mut i64, &[T])| *o = row_best(pick, row);
        if par {
            crate::parallel::install(|| out.par_iter_mut().zip(c.par_chunks(n)).for_each(body));
        } else {
            out.iter_mut().zip(c.chunks(n)).for_each(body);
        }
        return out;
    }
    // One slab: the running best of each column, updated row by row.
    let slab = |(idx, s): (&mut [i64], &[T])| {
        let mut best: Vec<T> = s[..inner].to_vec();
        for k in 1..n {
            let row = &s[k * inner..(k + 1) * inner];
            for ((b, i), &v) in best.iter_mut().zip(idx.iter_mut()).zip(row) {
                if better(pick, v, *b) {
                    *b = v;
                    *i = k as i64;
                }
            }
        }
    };
    if par && outer > 1 {
        crate::parallel::install(|| {
            out.par_chunks_mut(inner)
                .zip(c.par_chunks(n * inner))
                .for_each(slab)
        });
    } else {
        out.chunks_mut(inner)
            .zip(c.chunks(n * inner))
            .for_each(slab);
    }
    out
}

/// The axis (None: the flattened tensor) of an index reduction, refusing an empty
/// reduction; returns `(outer, n, inner)` and the normalised axis.
fn arg_geometry(
    op: &str,
    x: &Tensor,
    dim: Option<isize>,
) -> Result<(usize, usize, usize, Option<usize>)> {
    let shape = x.shape();
    let (geom, axis) = match dim {
        None => ((1, x.numel(), 1), None),
        Some(d) => {
            let a = normalize_axes(op, &[d], shape.len().max(1))?[0];
            if shape.is_empty() {
                // A 0-d tensor has one element; dim 0 / -1 addresses it (as PyTorch).
                ((1, 1, 1), None)
            } else {
                let outer = shape[..a].iter().product();
                let inner = shape[a + 1..].iter().product();
                ((outer, shape[a], inner), Some(a))
            }
        }
    };
    if geom.1 == 0 {
        let what = match axis {
            Some(a) => format!("axis {a} of extent 0"),
            None => "an empty tensor".to_string(),
        };
        return Err(Error::shape(
            op,
            format!(
                "cannot reduce over {what} (input shape {}); the reduction has no identity",
                fmt_shape(shape)
            ),
        ));
    }
    Ok((geom.0, geom.1, geom.2, axis))
}

/// The output shape of an index reduction over `axis` (None: all axes).
fn arg_shape(shape: &[usize], axis: Option<usize>, keepdim: bool) -> Vec<usize> {
    match axis {
        None if keepdim => vec![1; shape.len()],
        None => vec![],
        Some(a) => {
            let mut s = shape.to_vec();
            if keepdim {
                s[a] = 1;
            } else {
                s.remove(a);
            }
            s
        }
    }
}

fn arg_reduce(pick: Pick, x: &Tensor, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
    let op = pick.name("arg");
    if x.device() != Device::Cpu {
        // On a GPU through the host: a copy each way (a result of int64 indices, never
        // recorded; tie and NaN rules exactly the CPU's).
        return super::on_host(op, x, |h| arg_reduce(pick, h, dim, keepdim));
    }
    let (outer, n, inner, axis) = arg_geometry(op, x, dim)?;
    let shape = arg_shape(x.shape(), axis, keepdim);
    cpu::catch_oom(op, || {
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let v = match cpu::contiguous_slice::<T>(x.data()) {
                Some(c) => arg_kernel(pick, c, outer, n, inner),
                None => arg_kernel(pick, &cpu::gather::<T>(x.data()), outer, n, inner),
            };
            from_vec(v, &shape)
        }))
    })
}

/// The int64 index of the maximum along `dim` (None: into the flattened tensor, a 0-d
/// result unless `keepdim`). Ties give the first occurrence; NaN counts as the maximum.
/// Any dtype, any device (CUDA through the host); never recorded. An empty reduction is a
/// shape error.
pub fn argmax(x: &Tensor, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
    arg_reduce(Pick::Max, x, dim, keepdim)
}

/// The int64 index of the minimum along `dim`, as [`argmax`] (NaN counts as the minimum).
pub fn argmin(x: &Tensor, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
    arg_reduce(Pick::Min, x, dim, keepdim)
}

/// A one-hot bool mask of `shape`: true at `idx` (int64, `shape` with `axis` of extent 1)
/// along `axis`; built on the host, on `idx`'s device.
fn one_hot(idx: &Tensor, shape: &[usize], axis: usize) -> Result<Tensor> {
    let outer: usize = shape[..axis].iter().product();
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let ix = idx.try_to_vec::<i64>()?;
    let mut m = cpu::filled(outer * n * inner, 0u8);
    for o in 0..outer {
        for i in 0..inner {
            let k = ix[o * inner + i] as usize;
            m[(o * n + k) * inner + i] = 1;
        }
    }
    let m = from_vec(m, shape);
    match idx.device() {
        Device::Cpu => Ok(m),
        d => crate::cuda::launch::transfer("max", &m, d),
    }
}

/// The elements of `x` at `idx` (int64, `x`'s shape with `axis` of extent 1) along `axis`.
/// Its backward puts the gradient at those positions only (`where_` of a one-hot mask,
/// differentiable in the gradient).
struct TakeOp {
    idx: Tensor,
    axis: usize,
    keepdim: bool,
}

impl Op for TakeOp {
    fn name(&self) -> &'static str {
        "take_along_dim"
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = x.shape();
        let (a, n) = (self.axis, shape[self.axis]);
        let inner: usize = shape[a + 1..].iter().product();
        let out_shape = arg_shape(shape, Some(a), self.keepdim);
        let ix = cpu::gather::<i64>(self.idx.data());
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let take = |c: &[T]| -> Vec<T> {
                cpu::collect_exact(ix.iter().enumerate().map(|(j, &k)| {
                    let (o, i) = (j / inner.max(1), j % inner.max(1));
                    c[(o * n + k as usize) * inner + i]
                }))
            };
            let v = match cpu::contiguous_slice::<T>(x.data()) {
                Some(c) => take(c),
                None => take(&cpu::gather::<T>(x.data())),
            };
            from_vec(v, &out_shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // A gather at the indices (valid by construction: they come from the arg-max),
        // shaped as the keepdim result, then viewed without the axis if asked.
        let x = inputs[0];
        let ids: Vec<usize> = self
            .idx
            .try_to_vec::<i64>()?
            .into_iter()
            .map(|k| k as usize)
            .collect();
        let kept = arg_shape(x.shape(), Some(self.axis), true);
        let y = crate::cuda::launch::gather(self.name(), x, self.axis, &kept, &ids)?;
        let out_shape = arg_shape(x.shape(), Some(self.axis), self.keepdim);
        Ok(Tensor::from_data(crate::tensor_data::TensorData {
            storage: y.storage().clone(),
            layout: crate::layout::Layout::contiguous(&out_shape),
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let shape = &ctx.inputs[0].shape;
        let g = broadcast_back(ctx.grad, &[self.axis], shape)?;
        let mask = one_hot(&self.idx, shape, self.axis)?;
        let zero = super::full(&[], 0.0, g.dtype(), g.device())?;
        Ok(vec![Some(where_(&mask, &g, &zero)?)])
    }
}

fn extreme_dim(pick: Pick, x: &Tensor, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let op = pick.name("dim");
    let (_, _, _, axis) = arg_geometry(op, x, Some(dim))?;
    let Some(axis) = axis else {
        // A 0-d tensor: the value itself and index 0.
        let zero = super::full_int(&[], 0, DType::I64, x.device())?;
        return Ok((super::clone(x)?, zero));
    };
    let idx = arg_reduce(pick, x, Some(dim), true)?;
    let values = apply(
        TakeOp {
            idx: idx.clone(),
            axis,
            keepdim,
        },
        &[x],
        &[],
    )?;
    let idx = if keepdim {
        idx
    } else {
        super::reshape(&idx, values.shape())?
    };
    Ok((values, idx))
}

/// PyTorch's `max(x, dim, keepdim)`: the maximum along `dim` and its int64 index (first
/// occurrence among ties; NaN counts as the maximum). The gradient of the values flows to
/// the selected element only.
pub fn max_dim(x: &Tensor, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
    extreme_dim(Pick::Max, x, dim, keepdim)
}

/// PyTorch's `min(x, dim, keepdim)`: as [`max_dim`] for the minimum.
pub fn min_dim(x: &Tensor, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
    extreme_dim(Pick::Min, x, dim, keepdim)
}

impl Tensor {
    /// The index of the maximum along `dim` (None: the flattened tensor); see [`argmax`].
    pub fn argmax(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        argmax(self, dim, keepdim)
    }
    /// The index of the minimum along `dim` (None: the flattened tensor); see [`argmin`].
    pub fn argmin(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        argmin(self, dim, keepdim)
    }
    /// `(values, indices)` of the maximum along `dim`; see [`max_dim`].
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        max_dim(self, dim, keepdim)
    }
    /// `(values, indices)` of the minimum along `dim`; see [`min_dim`].
    pub fn min_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        min_dim(self, dim, keepdim)
    }
}
