//! Selection by integer index: `index_select`, `gather`, `scatter_add`, `embedding`,
//! `one_hot`, `nonzero`. Backward passes scatter-add into the input's shape (`index_add`
//! rows, `scatter_add` elements) and never build a dense one-hot; each backward is itself
//! made of these ops, so second-order gradients work.
//!
//! Indices are int64 or int32 tensors (on the CPU or the input's GPU). They are read once on
//! the host, checked against the indexed extent (a `ShapeError` naming the op, the index and
//! the extent; Python maps the `t[...]` and `embedding` cases to `IndexingError`, an
//! `IndexError`) and then used by kernels that cannot go out of bounds (on CUDA uploaded as
//! int64 positions; the scatter-adds are deterministic there too, see `cuda::typed_kernels`).

use super::{from_vec, reshape};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, fmt_shape, numel, Dims};
use crate::tensor::Tensor;
use rayon::prelude::*;

/// The elements of an index tensor as i64 in C order; refuses float and bool tensors.
pub(crate) fn index_list(op: &str, idx: &Tensor) -> Result<Vec<i64>> {
    if !matches!(idx.dtype(), DType::I64 | DType::I32) {
        return Err(Error::dtype(
            op,
            format!(
                "indices must be an int64 or int32 tensor, got a {} tensor of shape {}",
                idx.dtype(),
                fmt_shape(idx.shape())
            ),
        ));
    }
    crate::cpu::catch_oom(op, || idx.try_to_vec::<i64>())
}

/// `v` checked to lie in `[0, n)` (or `[-n, n)` when `wrap`, negative counting from the end),
/// as positions.
fn positions(op: &str, v: &[i64], n: usize, wrap: bool, axis: usize) -> Result<Vec<usize>> {
    let lo = if wrap { -(n as i64) } else { 0 };
    let mut out = cpu::with_capacity(v.len());
    for &i in v {
        if i < lo || i >= n as i64 {
            return Err(Error::shape(
                op,
                format!("index {i} is out of bounds for axis {axis} with size {n}"),
            ));
        }
        out.push(if i < 0 {
            (i + n as i64) as usize
        } else {
            i as usize
        });
    }
    Ok(out)
}

/// The view's elements as one contiguous slice (borrowed when it already is one).
fn contiguous<T: Scalar>(t: &Tensor) -> std::borrow::Cow<'_, [T]> {
    match cpu::contiguous_slice::<T>(t.data()) {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(cpu::gather::<T>(t.data())),
    }
}

/// `(outer, n, inner)`: the extents before, at and after `dim`.
fn split_at(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (numel(&shape[..dim]), shape[dim], numel(&shape[dim + 1..]))
}

/// Error unless `dim` names an axis of `shape` (negative counts from the end).
fn axis(op: &str, dim: isize, shape: &[usize]) -> Result<usize> {
    let nd = shape.len().max(1) as isize;
    let d = if dim < 0 { dim + nd } else { dim };
    if d < 0 || d >= nd || shape.is_empty() {
        return Err(Error::dim_out_of_range(
            op,
            format!(
                "dim {dim} is out of range for a tensor of shape {}",
                fmt_shape(shape)
            ),
        ));
    }
    Ok(d as usize)
}

/// `index_select`'s kernel: for each of `outer` blocks of `n` rows of `inner` elements in
/// `src`, the rows `ids` in order. Large selections are split over the pool by output rows
/// (one core's bandwidth is the limit of a gather of rows).
fn select_rows<T: Scalar>(
    src: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    ids: &[usize],
) -> Vec<T> {
    let rows = outer * ids.len();
    let mut out = cpu::alloc::<T>(rows * inner);
    if inner == 0 || rows == 0 {
        return out;
    }
    let copy_row = |r: usize, o: &mut [T]| {
        let at = ((r / ids.len()) * n + ids[r % ids.len()]) * inner;
        o.copy_from_slice(&src[at..at + inner]);
    };
    if out.len() < cpu::PAR_MIN * 8 {
        out.chunks_exact_mut(inner)
            .enumerate()
            .for_each(|(r, o)| copy_row(r, o));
    } else {
        let per = (cpu::PAR_MIN / inner).max(1);
        crate::parallel::install(|| {
            out.par_chunks_mut(per * inner)
                .enumerate()
                .for_each(|(c, block)| {
                    for (r, o) in block.chunks_exact_mut(inner).enumerate() {
                        copy_row(c * per + r, o);
                    }
                })
        });
    }
    out
}

/// `index_add`'s kernel: zeros of `outer` blocks of `n` rows of `inner` elements, with row
/// `j` of each block of `k` rows of `src` added into row `ids[j]`. Large outputs are split
/// over the pool by destination rows: each part zeroes its rows and adds, in `j` order, the
/// source rows that land there, so repeated indices add up in the same order whatever the
/// threads (the result does not depend on them) and no two threads write the same row.
fn add_rows<T: Scalar>(
    src: &[T],
    outer: usize,
    k: usize,
    n: usize,
    inner: usize,
    ids: &[usize],
) -> Vec<T> {
    let mut out = cpu::alloc::<T>(outer * n * inner);
    // Rows `first..` of the output, in `part`: zeroed, then every source row landing there.
    let fill = |first: usize, part: &mut [T]| {
        part.fill(T::default());
        let end = first + part.len() / inner.max(1);
        for o in 0..outer {
            for (j, &i) in ids.iter().enumerate() {
                let to = o * n + i;
                if to < first || to >= end {
                    continue;
                }
                let from = (o * k + j) * inner;
                let d = &mut part[(to - first) * inner..(to - first + 1) * inner];
                for (d, &v) in d.iter_mut().zip(&src[from..from + inner]) {
                    *d = d.accumulate(v);
                }
            }
        }
    };
    let threads = crate::parallel::num_threads();
    if inner == 0 || out.len() < cpu::PAR_MIN * 8 || threads < 2 {
        fill(0, &mut out);
    } else {
        let rows_per = (outer * n).div_ceil(threads);
        crate::parallel::install(|| {
            out.par_chunks_mut(rows_per * inner)
                .enumerate()
                .for_each(|(p, part)| fill(p * rows_per, part))
        });
    }
    out
}

// ------------------------------------------------------------------------------ index_select

/// `x` restricted to the positions `idx` (1-D) along `dim`.
struct IndexSelectOp {
    name: &'static str,
    dim: usize,
}

impl Op for IndexSelectOp {
    fn name(&self) -> &'static str {
        self.name
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, idx) = (inputs[0], inputs[1]);
        let (outer, n, inner) = split_at(x.shape(), self.dim);
        let ids = positions(self.name, &index_list(self.name, idx)?, n, false, self.dim)?;
        let mut shape: Dims = x.shape().into();
        shape[self.dim] = ids.len();
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let src = contiguous::<T>(x);
            from_vec(select_rows(&src, outer, n, inner, &ids), &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, idx) = (inputs[0], inputs[1]);
        let n = x.shape()[self.dim];
        let ids = positions(self.name, &index_list(self.name, idx)?, n, false, self.dim)?;
        crate::cuda::launch::index_select(self.name, x, self.dim, &ids)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let n = ctx.inputs[0].shape[self.dim];
        let g = apply(
            IndexAddOp { dim: self.dim, n },
            &[ctx.grad, &ctx.saved[0]],
            &[Save::Input(1)],
        )?;
        Ok(vec![Some(g), None])
    }
}

/// The sum of `src`'s slices along `dim` into a zero tensor of extent `n` there, slice `j`
/// landing at `idx[j]` (repeated indices add up): `index_select`'s backward.
struct IndexAddOp {
    dim: usize,
    n: usize,
}

impl Op for IndexAddOp {
    fn name(&self) -> &'static str {
        "index_add"
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (src, idx) = (inputs[0], inputs[1]);
        let (outer, k, inner) = split_at(src.shape(), self.dim);
        let ids = positions(
            "index_add",
            &index_list("index_add", idx)?,
            self.n,
            false,
            0,
        )?;
        if ids.len() != k {
            return Err(Error::shape(
                "index_add",
                format!("{} indices for {k} slices", ids.len()),
            ));
        }
        let mut shape: Dims = src.shape().into();
        shape[self.dim] = self.n;
        Ok(crate::dispatch_any!(src.dtype(), T => {
            let s = contiguous::<T>(src);
            from_vec(add_rows(&s, outer, k, self.n, inner, &ids), &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (src, idx) = (inputs[0], inputs[1]);
        let ids = positions(
            "index_add",
            &index_list("index_add", idx)?,
            self.n,
            false,
            0,
        )?;
        crate::cuda::launch::index_add("index_add", src, self.dim, self.n, &ids)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let g = apply(
            IndexSelectOp {
                name: "index_select",
                dim: self.dim,
            },
            &[ctx.grad, &ctx.saved[0]],
            &[Save::Input(1)],
        )?;
        Ok(vec![Some(g), None])
    }
}

fn index_select_named(op: &'static str, x: &Tensor, dim: isize, idx: &Tensor) -> Result<Tensor> {
    let dim = axis(op, dim, x.shape())?;
    if idx.ndim() > 1 {
        return Err(Error::shape(
            op,
            format!(
                "index must be 0-d or 1-d, got shape {}",
                fmt_shape(idx.shape())
            ),
        ));
    }
    let idx = reshape(idx, &[idx.numel()])?;
    apply(
        IndexSelectOp { name: op, dim },
        &[x, &idx],
        &[Save::Input(1)],
    )
}

/// PyTorch's `index_select(x, dim, index)`: the slices of `x` at positions `index` (a 0-d or
/// 1-d int64/int32 tensor, repeats allowed) along `dim`. Differentiable in `x`; the backward
/// adds each slice's gradient back at its position. A 0-d `x` is indexed as PyTorch does it:
/// `dim` 0 or -1 and exactly one position (0), giving a 0-d result.
pub fn index_select(x: &Tensor, dim: isize, idx: &Tensor) -> Result<Tensor> {
    const OP: &str = "index_select";
    if x.ndim() > 0 {
        return index_select_named(OP, x, dim, idx);
    }
    if !(-1..=0).contains(&dim) {
        return Err(Error::dim_out_of_range(
            OP,
            format!(
                "dim {dim} is out of range for a tensor of shape () (expected a dim in [-1, 0])"
            ),
        ));
    }
    if idx.ndim() > 1 || idx.numel() != 1 {
        return Err(Error::shape(
            OP,
            format!(
                "the index of a 0-d tensor must hold exactly one position, got shape {}",
                fmt_shape(idx.shape())
            ),
        ));
    }
    let row = index_select_named(OP, &reshape(x, &[1])?, 0, idx)?;
    reshape(&row, &[])
}

/// PyTorch's `embedding(ids, weight)`: rows of `weight (V, D)` at the integer `ids` (any
/// shape), shaped `ids.shape + (D,)`. The weight's gradient is a scatter-add of the output
/// gradient's rows (never a dense `B·T·V` one-hot).
pub fn embedding(ids: &Tensor, weight: &Tensor) -> Result<Tensor> {
    if weight.ndim() != 2 {
        return Err(Error::shape(
            "embedding",
            format!(
                "weight must be 2-D (num_embeddings, embedding_dim), got shape {}",
                fmt_shape(weight.shape())
            ),
        ));
    }
    let flat = reshape(ids, &[ids.numel()])?;
    let rows = apply(
        IndexSelectOp {
            name: "embedding",
            dim: 0,
        },
        &[weight, &flat],
        &[Save::Input(1)],
    )?;
    let mut shape: Dims = ids.shape().into();
    shape.push(weight.shape()[1]);
    reshape(&rows, &shape)
}

/// `embedding` with PyTorch's `padding_idx`: the output is the same, but positions whose id
/// is `padding_idx` (negative counts from the end) pass no gradient to the table, so that row
/// stays as it is through training.
pub fn embedding_padded(ids: &Tensor, weight: &Tensor, padding_idx: i64) -> Result<Tensor> {
    let rows = embedding(ids, weight)?;
    let v = weight.shape()[0] as i64;
    if padding_idx < -v || padding_idx >= v {
        return Err(Error::shape(
            "embedding",
            format!(
                "padding_idx {padding_idx} is out of range for a weight of shape {}",
                fmt_shape(weight.shape())
            ),
        ));
    }
    if !rows.requires_grad() {
        return Ok(rows);
    }
    let pad = padding_idx.rem_euclid(v);
    let keep: Vec<u8> = index_list("embedding", ids)?
        .iter()
        .map(|&i| u8::from(i.rem_euclid(v) != pad))
        .collect();
    let mut shape: Dims = ids.shape().into();
    shape.push(1);
    let keep = from_vec(keep, &shape);
    // The same values either way; only the kept positions are connected to the graph.
    super::where_(&keep, &rows, &rows.detach())
}

/// PyTorch's `embedding_renorm_` (the `max_norm` option of `embedding`): every row of
/// `weight` that `ids` looks up and whose `norm_type`-norm exceeds `max_norm` is scaled in
/// place to norm `max_norm` (by `max_norm / (norm + 1e-7)`), without recording a graph.
pub fn embedding_renorm_(
    weight: &Tensor,
    ids: &Tensor,
    max_norm: f64,
    norm_type: f64,
) -> Result<()> {
    if weight.ndim() != 2 {
        return Err(Error::shape(
            "embedding_renorm_",
            format!(
                "weight must be 2-D, got shape {}",
                fmt_shape(weight.shape())
            ),
        ));
    }
    let n = weight.shape()[0];
    let mut rows = positions(
        "embedding_renorm_",
        &index_list("embedding_renorm_", ids)?,
        n,
        false,
        0,
    )?;
    rows.sort_unstable();
    rows.dedup();
    let _guard = crate::grad_mode::no_grad();
    let idx = from_vec(
        rows.iter().map(|&r| r as i64).collect::<Vec<i64>>(),
        &[rows.len()],
    );
    let picked = index_select(weight, 0, &idx)?;
    let norms = super::norm(&picked, norm_type, Some(&[1]), true)?;
    let norms = super::convert::to_dtype(&norms, DType::F64)?.try_to_vec::<f64>()?;
    let scales: Vec<f64> = norms
        .iter()
        .map(|&nv| {
            if nv > max_norm {
                max_norm / (nv + 1e-7)
            } else {
                1.0
            }
        })
        .collect();
    let scales = super::convert::to_dtype(&from_vec(scales, &[rows.len(), 1]), weight.dtype())?;
    let scaled = super::mul(&picked, &scales)?;
    super::setitem::setitem(
        weight,
        &[super::advanced_index::Index::Tensor(idx)],
        super::inplace::Operand::Tensor(&scaled),
    )
}

// ------------------------------------------------------------------------ gather / scatter

/// Error unless `idx` has `x`'s rank and no larger extent than `x` on the other axes.
fn check_gather_shapes(op: &str, x: &[usize], idx: &[usize], dim: usize) -> Result<()> {
    let ok = x.len() == idx.len()
        && x.iter()
            .zip(idx)
            .enumerate()
            .all(|(d, (&a, &b))| d == dim || b <= a);
    if ok {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "index of shape {} does not fit input of shape {} along dims other than {dim}",
            fmt_shape(idx),
            fmt_shape(x)
        ),
    ))
}

/// For each position of an index tensor of shape `ishape` (C order), the offset into a
/// contiguous tensor of shape `shape` at the same coordinates, with `dim` set to 0 (callers
/// add `index * stride[dim]`).
fn base_offsets(ishape: &[usize], shape: &[usize], dim: usize) -> Vec<usize> {
    let strides = contiguous_strides(shape);
    let n = numel(ishape);
    let mut out = cpu::with_capacity(n);
    let mut coord = vec![0usize; ishape.len()];
    for _ in 0..n {
        let off: usize = coord
            .iter()
            .enumerate()
            .map(|(d, &c)| if d == dim { 0 } else { c * strides[d] })
            .sum();
        out.push(off);
        for d in (0..ishape.len()).rev() {
            coord[d] += 1;
            if coord[d] < ishape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    out
}

/// The checked positions of `idx` along `dim` of `x` for `gather`/`scatter_add` (named `op`),
/// after the shape check: shared by both ops' CPU and CUDA paths.
fn gather_positions(op: &str, x: &Tensor, idx: &Tensor, dim: usize) -> Result<Vec<usize>> {
    check_gather_shapes(op, x.shape(), idx.shape(), dim)?;
    positions(op, &index_list(op, idx)?, x.shape()[dim], false, dim)
}

/// `out[p] = x[p with axis dim replaced by idx[p]]`.
struct GatherOp {
    dim: usize,
}

impl Op for GatherOp {
    fn name(&self) -> &'static str {
        "gather"
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, idx) = (inputs[0], inputs[1]);
        let ids = gather_positions("gather", x, idx, self.dim)?;
        let base = base_offsets(idx.shape(), x.shape(), self.dim);
        let stride = contiguous_strides(x.shape())[self.dim];
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let src = contiguous::<T>(x);
            let out = cpu::collect_exact(base.iter().zip(&ids).map(|(&b, &i)| src[b + i * stride]));
            from_vec(out, idx.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, idx) = (inputs[0], inputs[1]);
        let ids = gather_positions("gather", x, idx, self.dim)?;
        crate::cuda::launch::gather("gather", x, self.dim, idx.shape(), &ids)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let shape = &ctx.inputs[0].shape;
        let zeros = super::zeros(shape, ctx.grad.dtype(), ctx.grad.device())?;
        let g = scatter_add_at(&zeros, self.dim, &ctx.saved[0], ctx.grad)?;
        Ok(vec![Some(g), None])
    }
}

/// `x` plus `src[p]` added at `x[p with axis dim replaced by idx[p]]` (idx and src of one
/// shape).
struct ScatterAddOp {
    dim: usize,
}

impl Op for ScatterAddOp {
    fn name(&self) -> &'static str {
        "scatter_add"
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, idx, src) = (inputs[0], inputs[1], inputs[2]);
        let ids = gather_positions("scatter_add", x, idx, self.dim)?;
        let base = base_offsets(idx.shape(), x.shape(), self.dim);
        let stride = contiguous_strides(x.shape())[self.dim];
        let dt = x.dtype();
        let src = super::cast(src, dt)?;
        Ok(crate::dispatch_any!(dt, T => {
            let mut out = cpu::gather::<T>(x.data());
            let s = contiguous::<T>(&src);
            for ((&b, &i), &v) in base.iter().zip(&ids).zip(s.iter()) {
                let o = &mut out[b + i * stride];
                *o = o.accumulate(v);
            }
            from_vec(out, x.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, idx, src) = (inputs[0], inputs[1], inputs[2]);
        let ids = gather_positions("scatter_add", x, idx, self.dim)?;
        let src = super::cast(src, x.dtype())?;
        crate::cuda::launch::scatter_add("scatter_add", x, self.dim, &src, &ids)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let gx = ctx.needs_grad(0).then(|| ctx.grad.clone());
        let gsrc = if ctx.needs_grad(2) {
            Some(apply(
                GatherOp { dim: self.dim },
                &[ctx.grad, &ctx.saved[0]],
                &[Save::Input(1)],
            )?)
        } else {
            None
        };
        Ok(vec![gx, None, gsrc])
    }
}

fn scatter_add_at(x: &Tensor, dim: usize, idx: &Tensor, src: &Tensor) -> Result<Tensor> {
    apply(ScatterAddOp { dim }, &[x, idx, src], &[Save::Input(1)])
}

/// PyTorch's `gather(x, dim, index)`: `out[i][j][k] = x[i][index[i][j][k]][k]` (for
/// `dim = 1`), shaped like `index`, which has `x`'s rank and no larger extent on the other
/// axes. Differentiable in `x` (the backward is a `scatter_add`).
pub fn gather(x: &Tensor, dim: isize, idx: &Tensor) -> Result<Tensor> {
    let dim = axis("gather", dim, x.shape())?;
    check_gather_shapes("gather", x.shape(), idx.shape(), dim)?;
    apply(GatherOp { dim }, &[x, idx], &[Save::Input(1)])
}

/// PyTorch's `index_add(x, dim, index, source, alpha)`: a copy of `x` with `alpha · source`'s
/// slice `j` along `dim` added at position `index[j]` (a 1-d int64/int32 tensor; repeated
/// positions accumulate, in order). `source` has `x`'s shape except along `dim`, where its
/// extent is `index`'s length. Differentiable in `x` and `source` (whose gradient is
/// `alpha · index_select(grad)`).
pub fn index_add(x: &Tensor, dim: isize, idx: &Tensor, src: &Tensor, alpha: f64) -> Result<Tensor> {
    const OP: &str = "index_add";
    let d = axis(OP, dim, x.shape())?;
    if idx.ndim() > 1 {
        return Err(Error::shape(
            OP,
            format!(
                "index must be 0-d or 1-d, got shape {}",
                fmt_shape(idx.shape())
            ),
        ));
    }
    let fits = src.ndim() == x.ndim()
        && src.shape()[d] == idx.numel()
        && (0..x.ndim()).all(|i| i == d || src.shape()[i] == x.shape()[i]);
    if !fits {
        return Err(Error::shape(
            OP,
            format!(
                "source of shape {} does not fit input {} along dim {d} with {} indices \
                 (source must have the input's shape except {} along dim)",
                fmt_shape(src.shape()),
                fmt_shape(x.shape()),
                idx.numel(),
                idx.numel()
            ),
        ));
    }
    let idx = reshape(idx, &[idx.numel()])?;
    let added = apply(
        IndexAddOp {
            dim: d,
            n: x.shape()[d],
        },
        &[src, &idx],
        &[Save::Input(1)],
    )?;
    let added = if alpha == 1.0 {
        added
    } else {
        super::scale(&added, alpha)?
    };
    super::add(x, &added)
}

/// PyTorch's `scatter_add(x, dim, index, src)`: a copy of `x` with each `src[i][j][k]` added
/// at `[i][index[i][j][k]][k]` (for `dim = 1`; repeated positions accumulate).
/// Differentiable in `x` and `src`. `index` may be smaller than `src` on any axis: only
/// the leading block of `src` of `index`'s shape is used, as in PyTorch.
pub fn scatter_add(x: &Tensor, dim: isize, idx: &Tensor, src: &Tensor) -> Result<Tensor> {
    let dim = axis("scatter_add", dim, x.shape())?;
    check_gather_shapes("scatter_add", x.shape(), idx.shape(), dim)?;
    if x.dtype() != src.dtype() {
        return Err(Error::dtype(
            "scatter_add",
            format!(
                "self ({}) and src ({}) must have the same dtype",
                x.dtype(),
                src.dtype()
            ),
        ));
    }
    let fits = idx.ndim() == src.ndim() && idx.shape().iter().zip(src.shape()).all(|(i, s)| i <= s);
    if !fits {
        return Err(Error::shape(
            "scatter_add",
            format!(
                "index of shape {} must have src's rank and no larger extent than src (shape \
                 {}) on any axis",
                fmt_shape(idx.shape()),
                fmt_shape(src.shape())
            ),
        ));
    }
    // As PyTorch: only the leading `index.shape` block of src is scattered (the rest gets a
    // zero gradient through the narrowing).
    let mut src = src.clone();
    for (d, &n) in idx.shape().iter().enumerate() {
        if src.shape()[d] != n {
            src = super::narrow(&src, d as isize, 0, n as isize)?;
        }
    }
    scatter_add_at(x, dim, idx, &src)
}

// ----------------------------------------------------------------------- one_hot / nonzero

/// PyTorch's `one_hot(ids, num_classes=-1)`: an int64 tensor of shape `ids.shape + (C,)`
/// with a 1 at each id; `num_classes < 0` means `max(ids) + 1`.
pub fn one_hot(ids: &Tensor, num_classes: i64) -> Result<Tensor> {
    let v = index_list("one_hot", ids)?;
    let c = if num_classes < 0 {
        let Some(largest) = v.iter().copied().max() else {
            return Err(Error::value(
                "one_hot",
                format!(
                    "cannot infer the number of classes from an empty tensor of shape {}; pass \
                     num_classes",
                    fmt_shape(ids.shape())
                ),
            ));
        };
        (largest + 1).max(0) as usize
    } else {
        num_classes as usize
    };
    if let Some(&bad) = v.iter().find(|&&i| i < 0 || i as usize >= c) {
        return Err(Error::shape(
            "one_hot",
            format!("class index {bad} is out of range for {c} classes"),
        ));
    }
    let mut shape: Dims = ids.shape().into();
    shape.push(c);
    cpu::catch_oom("one_hot", || {
        let mut out = cpu::filled::<i64>(v.len() * c, 0);
        for (r, &i) in v.iter().enumerate() {
            out[r * c + i as usize] = 1;
        }
        Ok(from_vec(out, &shape))
    })
}

/// The flat (C order) positions of the nonzero elements of `x`.
pub(crate) fn nonzero_flat(x: &Tensor) -> Result<Vec<usize>> {
    if x.device() != crate::device::Device::Cpu {
        return Err(Error::device(
            "nonzero",
            "nonzero is not implemented on cuda yet",
        ));
    }
    cpu::catch_oom("nonzero", || {
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let v = contiguous::<T>(x);
            let zero = T::default();
            v.iter()
                .enumerate()
                .filter(|(_, &e)| e != zero)
                .map(|(i, _)| i)
                .collect()
        }))
    })
}

/// PyTorch's `nonzero(x)`: the coordinates of the nonzero elements, an int64 tensor of shape
/// `(count, ndim)` in C order.
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    let flat = nonzero_flat(x)?;
    let shape = x.shape();
    let strides = contiguous_strides(shape);
    let nd = shape.len();
    let mut out = cpu::with_capacity::<i64>(flat.len() * nd);
    for &f in &flat {
        for d in 0..nd {
            out.push(((f / strides[d]) % shape[d]) as i64);
        }
    }
    Ok(from_vec(out, &[flat.len(), nd]))
}

impl Tensor {
    /// See [`index_select`].
    pub fn index_select(&self, dim: isize, idx: &Tensor) -> Result<Tensor> {
        index_select(self, dim, idx)
    }
    /// See [`gather`].
    pub fn gather(&self, dim: isize, idx: &Tensor) -> Result<Tensor> {
        gather(self, dim, idx)
    }
    /// See [`scatter_add`].
    pub fn scatter_add(&self, dim: isize, idx: &Tensor, src: &Tensor) -> Result<Tensor> {
        scatter_add(self, dim, idx, src)
    }
    /// See [`nonzero`].
    pub fn nonzero(&self) -> Result<Tensor> {
        nonzero(self)
    }
}
