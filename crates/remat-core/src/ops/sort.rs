//! `sort`, `argsort` and `topk` along one axis, with PyTorch's semantics: NaN orders above
//! every number (last ascending, first descending), equal elements keep their order (the
//! sort is stable, which PyTorch's `stable=True` promises and its default gives on CPU), and
//! the values are a `gather` at the indices, so gradients flow to the selected elements
//! (and again, second order). The indices (int64) are never recorded.
//!
//! The index kernel moves the axis last and orders each row of a C-order copy on the host
//! (rows in parallel on the engine's pool for big inputs); `topk` selects its `k` first
//! (`select_nth_unstable`, then sorts only those), with the element's position breaking
//! ties, so it agrees with a stable sort. A device tensor is ordered on the host and its
//! indices moved back.

use super::{from_vec, gather, movedim};
use crate::cpu;
use crate::device::Device;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::{fmt_shape, normalize_axis};
use crate::tensor::Tensor;
use rayon::prelude::*;
use std::cmp::Ordering;

/// `a` against `b` with NaN above everything (NaNs equal among themselves).
fn nan_last<T: Scalar>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)]
    match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The positions of the `k` first elements of `row` in order (ascending, or descending),
/// ties broken by position.
fn order_row<T: Scalar>(row: &[T], k: usize, descending: bool, out: &mut [i64]) {
    let cmp = |&i: &usize, &j: &usize| {
        let o = if descending {
            nan_last(row[j], row[i])
        } else {
            nan_last(row[i], row[j])
        };
        o.then(i.cmp(&j))
    };
    let mut idx: Vec<usize> = (0..row.len()).collect();
    if k < row.len() {
        if k > 0 {
            idx.select_nth_unstable_by(k - 1, cmp);
        }
        idx.truncate(k);
    }
    idx.sort_unstable_by(cmp);
    for (o, i) in out.iter_mut().zip(idx) {
        *o = i as i64;
    }
}

/// The int64 positions, along axis `axis` of `x`, of its `k` first elements in order: a
/// tensor of `x`'s shape with that axis `k` long.
fn ordered_positions(
    op: &str,
    x: &Tensor,
    axis: usize,
    k: usize,
    descending: bool,
) -> Result<Tensor> {
    let _g = no_grad();
    let host = super::to_device(&x.detach(), Device::Cpu)?;
    let last = movedim(&host, &[axis as isize], &[-1])?;
    let n = last.shape().last().copied().unwrap_or(1);
    let rows = last.numel().checked_div(n).unwrap_or(0);
    let mut shape: Vec<usize> = last.shape().to_vec();
    if let Some(s) = shape.last_mut() {
        *s = k;
    }
    let mut out = cpu::catch_oom(op, || Ok(cpu::filled(rows * k, 0i64)))?;
    if k > 0 {
        crate::dispatch_any!(last.dtype(), T => {
            let c = cpu::gather::<T>(last.data());
            let body = |(o, row): (&mut [i64], &[T])| order_row(row, k, descending, o);
            if c.len() >= cpu::PAR_MIN && rows > 1 {
                crate::parallel::install(|| out.par_chunks_mut(k).zip(c.par_chunks(n)).for_each(body));
            } else {
                out.chunks_mut(k).zip(c.chunks(n)).for_each(body);
            }
        });
    }
    let idx = movedim(&from_vec(out, &shape), &[-1], &[axis as isize])?;
    super::to_device(&idx, x.device())
}

/// The axis of a sort-like op (a 0-d tensor takes 0 and -1, as in PyTorch).
fn sort_axis(op: &str, x: &Tensor, dim: isize) -> Result<usize> {
    if x.ndim() == 0 && (dim == 0 || dim == -1) {
        return Ok(0);
    }
    normalize_axis(op, dim, x.ndim())
}

/// Run `f` on `x` seen with at least one axis (a 0-d tensor as shape `(1,)`), and give the
/// results `x`'s rank back.
fn with_axis(
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<(Tensor, Tensor)>,
) -> Result<(Tensor, Tensor)> {
    if x.ndim() > 0 {
        return f(x);
    }
    let (v, i) = f(&super::reshape(x, &[1])?)?;
    Ok((super::reshape(&v, &[])?, super::reshape(&i, &[])?))
}

/// The int64 positions that sort `x` along `dim` (PyTorch's `argsort`; stable).
pub fn argsort(x: &Tensor, dim: isize, descending: bool) -> Result<Tensor> {
    Ok(sort(x, dim, descending)?.1)
}

/// `x` sorted along `dim` and the int64 positions the values came from (PyTorch's `sort`;
/// stable, NaN greatest). Differentiable in `x`.
pub fn sort(x: &Tensor, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
    let axis = sort_axis("sort", x, dim)?;
    with_axis(x, |x| {
        let n = x.shape()[axis];
        let idx = ordered_positions("sort", x, axis, n, descending)?;
        Ok((gather(x, axis as isize, &idx)?, idx))
    })
}

/// The `k` largest (or smallest) elements of `x` along `dim`, in order, and their int64
/// positions (PyTorch's `topk`; `sorted=False` is accepted and gives them sorted too).
/// Differentiable in `x`.
pub fn topk(x: &Tensor, k: usize, dim: isize, largest: bool) -> Result<(Tensor, Tensor)> {
    let axis = sort_axis("topk", x, dim)?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[axis] };
    if k > n {
        return Err(Error::value(
            "topk",
            format!(
                "selected index k={k} out of range: dimension {dim} of the input of shape {} \
                 has {n} elements",
                fmt_shape(x.shape())
            ),
        ));
    }
    with_axis(x, |x| {
        let idx = ordered_positions("topk", x, axis, k, largest)?;
        Ok((gather(x, axis as isize, &idx)?, idx))
    })
}

impl Tensor {
    /// Sorted along `dim`, with positions (see [`sort`]).
    pub fn sort(&self, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        sort(self, dim, descending)
    }
    /// Positions that sort along `dim` (see [`argsort`]).
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        argsort(self, dim, descending)
    }
    /// The `k` largest or smallest along `dim` (see [`topk`]).
    pub fn topk(&self, k: usize, dim: isize, largest: bool) -> Result<(Tensor, Tensor)> {
        topk(self, k, dim, largest)
    }
}
