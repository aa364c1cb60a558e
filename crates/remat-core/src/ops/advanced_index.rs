//! NumPy/PyTorch advanced indexing, `x[items]` where some items are integer tensors (or
//! lists, converted by the caller) or bool masks, composed of differentiable ops:
//! 1. each bool mask of `k` axes becomes `k` integer index tensors (its `nonzero`
//!    coordinates), as in NumPy;
//! 2. the basic items run as a view ([`index`]), each tensor item replaced by a full slice;
//! 3. the indexed axes move to the front and merge into one, the index tensors (broadcast
//!    together, negatives wrapped, bounds checked) combine into one flat position list,
//!    and one [`index_select`](super::index_select) takes the rows;
//! 4. the result axes (the broadcast index shape) go where NumPy puts them: in place of the
//!    indexed axes when these were adjacent, else first.
//!
//! A 0-d bool mask (Python's `True`/`False` as an index) consumes no axis: as in NumPy and
//! PyTorch it is a new axis of extent 1 indexed by the positions `[0]` (true) or `[]`
//! (false), an advanced index like the others, so `t[True]` has shape `(1, *t.shape)`,
//! `t[False]` `(0, *t.shape)`, and several of them broadcast into one axis.
//!
//! Several `...` follow PyTorch, whose first ellipsis stands for the axes no other item
//! indexes and every later one for that many again: a later ellipsis is dropped when that
//! count is zero or nothing but ellipses follows it (`t[..., ...]` is `t[...]`); otherwise
//! it would index past the last axis, and the basic pass reports it.
//!
//! The backward is `index_select`'s: a scatter-add of rows, never a dense mask product.

use super::gather::{index_list, nonzero_flat};
use super::view::{index, IndexItem};
use super::{from_vec, permute, reshape};
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, contiguous_strides, fmt_shape, numel, Dims};
use crate::tensor::Tensor;

/// One item of an advanced index.
#[derive(Clone)]
pub enum Index {
    /// An int, slice, None or `...`.
    Basic(IndexItem),
    /// An int64/int32 tensor of positions, or a bool mask over the next `mask.ndim()` axes.
    Tensor(Tensor),
}

/// A tensor item after masks are expanded: positions along one axis (with the index's
/// shape), and for the first column of a mask the mask's shape (checked against the axes it
/// covers).
enum Item {
    Basic(IndexItem),
    Positions(Vec<i64>, Dims, Option<Dims>),
    /// A 0-d bool mask: a new axis of extent 1 and the positions `[0]` or `[]` along it.
    NewAxisPositions(Vec<i64>),
}

/// How many axes of the indexed tensor `items` index explicitly (not `None`, `...` or a 0-d
/// mask; a mask of `k` axes counts `k`).
fn indexed_axes(items: &[Index]) -> usize {
    items
        .iter()
        .map(|i| match i {
            Index::Basic(IndexItem::Int(_) | IndexItem::Slice { .. }) => 1,
            Index::Basic(_) => 0,
            Index::Tensor(t) if t.dtype() == crate::dtype::DType::Bool => t.ndim(),
            Index::Tensor(_) => 1,
        })
        .sum()
}

/// `items` without the ellipses after the first that PyTorch treats as no-ops: every later
/// one when the first stands for no axis, and those followed only by ellipses (see the
/// module docs). The rest are kept for the basic pass to refuse.
fn drop_extra_ellipses(ndim: usize, items: &[Index]) -> Vec<Index> {
    let is_ellipsis = |i: &Index| matches!(i, Index::Basic(IndexItem::Ellipsis));
    let span = ndim.saturating_sub(indexed_axes(items));
    let mut seen = false;
    let mut out = Vec::with_capacity(items.len());
    for (k, it) in items.iter().enumerate() {
        if is_ellipsis(it) {
            let trailing = items[k + 1..].iter().all(is_ellipsis);
            if seen && (span == 0 || trailing) {
                continue;
            }
            seen = true;
        }
        out.push(it.clone());
    }
    out
}

/// Bool masks replaced by their coordinate lists (one per masked axis); int tensors read.
fn expand_masks(items: &[Index]) -> Result<Vec<Item>> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Index::Basic(b) => out.push(Item::Basic(*b)),
            Index::Tensor(t) if t.dtype() == crate::dtype::DType::Bool => {
                if t.ndim() == 0 {
                    let keep = t.to_vec::<u8>().first().is_some_and(|&b| b != 0);
                    out.push(Item::NewAxisPositions(if keep { vec![0] } else { vec![] }));
                    continue;
                }
                let flat = nonzero_flat(t)?;
                let strides = contiguous_strides(t.shape());
                for d in 0..t.ndim() {
                    let coords = flat
                        .iter()
                        .map(|&f| ((f / strides[d]) % t.shape()[d]) as i64)
                        .collect();
                    let mask_shape = (d == 0).then(|| Dims::from_slice(t.shape()));
                    out.push(Item::Positions(
                        coords,
                        Dims::from_slice(&[flat.len()]),
                        mask_shape,
                    ));
                }
            }
            Index::Tensor(t) => out.push(Item::Positions(
                index_list("index", t)?,
                t.shape().into(),
                None,
            )),
        }
    }
    Ok(out)
}

/// `x[items]` with NumPy's advanced-indexing rules (see the module docs). Without tensor
/// items it is the basic view [`index`].
pub fn index_advanced(x: &Tensor, items: &[Index]) -> Result<Tensor> {
    let items = &drop_extra_ellipses(x.ndim(), items)[..];
    if items.iter().all(|i| matches!(i, Index::Basic(_))) {
        let basic: Vec<IndexItem> = items
            .iter()
            .filter_map(|i| match i {
                Index::Basic(b) => Some(*b),
                Index::Tensor(_) => None,
            })
            .collect();
        return index(x, &basic);
    }
    let items = expand_masks(items)?;
    // How many axes of `x` the items consume; `...` stands for the rest.
    let consumed = items
        .iter()
        .filter(|i| {
            matches!(
                i,
                Item::Positions(..) | Item::Basic(IndexItem::Int(_) | IndexItem::Slice { .. })
            )
        })
        .count();
    if consumed > x.ndim() {
        return Err(Error::shape(
            "index",
            format!(
                "too many indices for a tensor of shape {} ({consumed} given)",
                fmt_shape(x.shape())
            ),
        ));
    }
    // The basic pass: tensor items become full slices; record where their axes land.
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: 1,
    };
    let mut basic = Vec::with_capacity(items.len());
    let mut picks: Vec<(usize, Vec<i64>, Dims)> = Vec::new();
    let (mut out_axis, mut in_axis) = (0usize, 0usize);
    let mut seen_ellipsis = false;
    for it in items {
        match it {
            Item::Basic(IndexItem::Ellipsis) if !seen_ellipsis => {
                seen_ellipsis = true;
                let span = x.ndim() - consumed;
                out_axis += span;
                in_axis += span;
                basic.push(IndexItem::Ellipsis);
            }
            Item::Basic(b @ IndexItem::Int(_)) => {
                in_axis += 1;
                basic.push(b);
            }
            Item::Basic(b @ IndexItem::NewAxis) => {
                out_axis += 1;
                basic.push(b);
            }
            Item::Basic(b) => {
                out_axis += 1;
                in_axis += 1;
                basic.push(b);
            }
            Item::NewAxisPositions(v) => {
                basic.push(IndexItem::NewAxis);
                let n = v.len();
                picks.push((out_axis, v, Dims::from_slice(&[n])));
                out_axis += 1;
            }
            Item::Positions(v, shape, mask) => {
                if let Some(m) = mask {
                    let covered = &x.shape()[in_axis..(in_axis + m.len()).min(x.ndim())];
                    if covered != m.as_slice() {
                        return Err(Error::shape(
                            "index",
                            format!(
                                "the bool mask of shape {} does not match the indexed axes of \
                                 shape {} (starting at axis {in_axis} of a tensor of shape {})",
                                fmt_shape(&m),
                                fmt_shape(covered),
                                fmt_shape(x.shape())
                            ),
                        ));
                    }
                }
                picks.push((out_axis, v, shape));
                out_axis += 1;
                in_axis += 1;
                basic.push(full);
            }
        }
    }
    let y = index(x, &basic)?;
    let axes: Vec<usize> = picks.iter().map(|p| p.0).collect();
    let adjacent = axes.windows(2).all(|w| w[1] == w[0] + 1);
    // Broadcast the index shapes and combine the positions into one flat list.
    let mut bshape: Dims = Dims::new();
    for (_, _, s) in &picks {
        bshape = broadcast_shapes("index", &bshape, s)?;
    }
    let extents: Vec<usize> = axes.iter().map(|&a| y.shape()[a]).collect();
    let count = numel(&bshape);
    let bstrides = contiguous_strides(&bshape);
    let mut flat = crate::cpu::with_capacity::<i64>(count);
    // For each index, its strides over the broadcast shape (0 where it broadcasts).
    let walk: Vec<Vec<usize>> = picks
        .iter()
        .map(|(_, _, s)| {
            let own = contiguous_strides(s);
            let lead = bshape.len() - s.len();
            (0..bshape.len())
                .map(|bd| match bd.checked_sub(lead) {
                    Some(d) if s[d] != 1 => own[d],
                    _ => 0,
                })
                .collect()
        })
        .collect();
    for p in 0..count {
        let mut lin = 0i64;
        for (k, (_, v, _)) in picks.iter().enumerate() {
            let at: usize = (0..bshape.len())
                .map(|bd| ((p / bstrides[bd]) % bshape[bd]) * walk[k][bd])
                .sum();
            let n = extents[k] as i64;
            let i = v[at];
            if i < -n || i >= n {
                return Err(Error::shape(
                    "index",
                    format!(
                        "index {i} is out of bounds for axis {} with size {n}",
                        axes[k]
                    ),
                ));
            }
            lin = lin * n + if i < 0 { i + n } else { i };
        }
        flat.push(lin);
    }
    // Indexed axes first (in order), merged into one; take the rows; unmerge.
    let rest: Vec<usize> = (0..y.ndim()).filter(|a| !axes.contains(a)).collect();
    let order: Vec<isize> = axes.iter().chain(&rest).map(|&a| a as isize).collect();
    let moved = permute(&y, &order)?;
    let mut merged_shape: Dims = Dims::from_slice(&[numel(&extents)]);
    merged_shape.extend(rest.iter().map(|&a| y.shape()[a]));
    let merged = reshape(&moved, &merged_shape)?;
    let positions = from_vec(flat, &[count]);
    let rows = super::index_select(&merged, 0, &positions)?;
    let mut out_shape = bshape.clone();
    out_shape.extend(rest.iter().map(|&a| y.shape()[a]));
    let out = reshape(&rows, &out_shape)?;
    if !adjacent || axes[0] == 0 {
        return Ok(out);
    }
    // Adjacent indexed axes: the result axes go back where the first indexed axis was.
    let nb = bshape.len();
    let first = axes[0];
    let mut perm: Vec<isize> = Vec::with_capacity(out.ndim());
    perm.extend((nb..nb + first).map(|a| a as isize));
    perm.extend((0..nb).map(|a| a as isize));
    perm.extend((nb + first..out.ndim()).map(|a| a as isize));
    permute(&out, &perm)
}
