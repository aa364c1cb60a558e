//! Axis-shaped views with PyTorch's semantics: `unsqueeze`, `squeeze`, `flatten`,
//! `unflatten`, `movedim`, `matrix_transpose` (`mT`), and `expand` with PyTorch's sizes (`-1`
//! keeps an extent) as `expand_sizes` / `broadcast_to` / `expand_as`.
//!
//! Each is an existing view op with other arguments (`index` adds and removes axes of extent
//! 1, `permute` moves axes, `reshape` merges and splits them, `expand` stretches them), so it
//! inherits that op's differentiable backward and its CUDA path; this file only resolves
//! PyTorch's arguments and reports bad ones naming the op and the shape.

use super::view::IndexItem;
use super::{expand, index, permute, reshape, transpose};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;
use smallvec::SmallVec;

/// `dim` (negative counts from the end) as an axis of a tensor of `shape`, with PyTorch's
/// rule that a 0-d tensor accepts the dims of a 1-d one (`0` and `-1`; the caller decides
/// what they mean there).
pub(crate) fn wrap_dim(op: &str, dim: isize, shape: &[usize]) -> Result<usize> {
    wrap_dim_in(op, dim, shape.len().max(1), shape)
}

/// `dim` as a position in `0..n` (negative counts from `n`); the error names `shape`.
pub(crate) fn wrap_dim_in(op: &str, dim: isize, n: usize, shape: &[usize]) -> Result<usize> {
    let ni = n as isize;
    let d = if dim < 0 { dim + ni } else { dim };
    if d < 0 || d >= ni {
        return Err(Error::dim_out_of_range(
            op,
            format!(
                "dim {dim} is out of range for a tensor of shape {} (expected a dim in [{}, {}])",
                fmt_shape(shape),
                -ni,
                ni - 1
            ),
        ));
    }
    Ok(d as usize)
}

/// Distinct wrapped dims, in the order given; a repeated dim is an error.
pub(crate) fn wrap_dims(op: &str, dims: &[isize], shape: &[usize]) -> Result<Dims> {
    let mut out: Dims = SmallVec::new();
    for &d in dims {
        let a = wrap_dim(op, d, shape)?;
        if out.contains(&a) {
            return Err(Error::shape(
                op,
                format!(
                    "dim {a} appears more than once in {dims:?} (tensor of shape {})",
                    fmt_shape(shape)
                ),
            ));
        }
        out.push(a);
    }
    Ok(out)
}

/// The whole axis, as an index item.
const FULL: IndexItem = IndexItem::Slice {
    start: None,
    stop: None,
    step: 1,
};

/// `x` with a new axis of extent 1 at `dim` (`-ndim-1..=ndim`; a view).
pub fn unsqueeze(x: &Tensor, dim: isize) -> Result<Tensor> {
    let d = wrap_dim_in("unsqueeze", dim, x.ndim() + 1, x.shape())?;
    let mut items = vec![FULL; d];
    items.push(IndexItem::NewAxis);
    index(x, &items)
}

/// `x` without axes of extent 1: all of them (`dims` None), or those of `dims` that have
/// extent 1 (others are kept, as in PyTorch). A view.
pub fn squeeze(x: &Tensor, dims: Option<&[isize]>) -> Result<Tensor> {
    let shape = x.shape();
    let picked = match dims {
        Some(d) => Some(wrap_dims("squeeze", d, shape)?),
        None => None,
    };
    let items: Vec<IndexItem> = shape
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let chosen = picked.as_ref().is_none_or(|p| p.contains(&i));
            if n == 1 && chosen {
                IndexItem::Int(0)
            } else {
                FULL
            }
        })
        .collect();
    index(x, &items)
}

/// `x` with axes `start_dim..=end_dim` merged into one (a view when `x` is contiguous, else a
/// copy, as `reshape`). A 0-d tensor becomes 1-d.
pub fn flatten(x: &Tensor, start_dim: isize, end_dim: isize) -> Result<Tensor> {
    const OP: &str = "flatten";
    let shape = x.shape();
    let (s, e) = (
        wrap_dim(OP, start_dim, shape)?,
        wrap_dim(OP, end_dim, shape)?,
    );
    if x.ndim() == 0 {
        return reshape(x, &[1]);
    }
    if s > e {
        return Err(Error::shape(
            OP,
            format!(
                "start_dim {start_dim} cannot come after end_dim {end_dim} (tensor of shape {})",
                fmt_shape(shape)
            ),
        ));
    }
    let mut out: Dims = shape[..s].iter().copied().collect();
    out.push(shape[s..=e].iter().product());
    out.extend(shape[e + 1..].iter().copied());
    reshape(x, &out)
}

/// `x` with axis `dim` split into `sizes` (one may be `-1`: inferred); their product must be
/// the axis' extent. A view when `x` is contiguous, else a copy.
pub fn unflatten(x: &Tensor, dim: isize, sizes: &[isize]) -> Result<Tensor> {
    const OP: &str = "unflatten";
    let shape = x.shape();
    let d = wrap_dim_in(OP, dim, x.ndim(), shape)?;
    if sizes.is_empty() {
        return Err(Error::shape(OP, "sizes must be non-empty"));
    }
    let split = super::shape::infer_shape(OP, &shape[d..=d], sizes).map_err(|_| {
        Error::shape(
            OP,
            format!(
                "sizes {sizes:?} do not multiply up to the extent {} of dim {dim} of a tensor \
                 of shape {}",
                shape[d],
                fmt_shape(shape)
            ),
        )
    })?;
    let mut out: Dims = shape[..d].iter().copied().collect();
    out.extend(split);
    out.extend(shape[d + 1..].iter().copied());
    reshape(x, &out)
}

/// `x` with axes `source[i]` moved to positions `destination[i]`; the other axes keep their
/// order (a view).
pub fn movedim(x: &Tensor, source: &[isize], destination: &[isize]) -> Result<Tensor> {
    const OP: &str = "movedim";
    let shape = x.shape();
    if source.len() != destination.len() {
        return Err(Error::shape(
            OP,
            format!(
                "source {source:?} and destination {destination:?} must have the same number \
                 of dims (tensor of shape {})",
                fmt_shape(shape)
            ),
        ));
    }
    let src = wrap_dims(OP, source, shape)?;
    let dst = wrap_dims(OP, destination, shape)?;
    let nd = x.ndim();
    if nd == 0 {
        return index(x, &[]);
    }
    let mut perm: Vec<Option<usize>> = vec![None; nd];
    for (&s, &d) in src.iter().zip(&dst) {
        perm[d] = Some(s);
    }
    // The remaining output positions take the remaining input axes in order.
    let mut rest = (0..nd).filter(|a| !src.contains(a));
    let perm: Vec<isize> = perm
        .into_iter()
        .map(|p| p.or_else(|| rest.next()).unwrap_or(0) as isize)
        .collect();
    permute(x, &perm)
}

/// The last two axes swapped (PyTorch's `mT`; a view). Needs at least 2 dims.
pub fn matrix_transpose(x: &Tensor) -> Result<Tensor> {
    if x.ndim() < 2 {
        return Err(Error::shape(
            "mT",
            format!(
                "expected a matrix or a batch of matrices (at least 2 dims), got a tensor of \
                 shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    transpose(x, -2, -1)
}

/// A broadcast view of `x` with `shape`, the error naming `op`.
fn expand_to(op: &str, x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    // Validate here so a bad target is reported under the op the user called.
    x.layout().broadcast_to(op, shape)?;
    crate::layout::checked_numel(op, shape, x.dtype())?;
    expand(x, shape)
}

/// PyTorch's `expand(*sizes)`: a broadcast view with `sizes` (at least `x.ndim()` of them;
/// new axes go in front; `-1` keeps an existing axis' extent).
pub fn expand_sizes(x: &Tensor, sizes: &[isize]) -> Result<Tensor> {
    expand_named("expand", x, sizes)
}

/// `torch.broadcast_to(x, shape)`: the same as [`expand_sizes`].
pub fn broadcast_to(x: &Tensor, shape: &[isize]) -> Result<Tensor> {
    expand_named("broadcast_to", x, shape)
}

/// `x` broadcast to `other`'s shape (a view).
pub fn expand_as(x: &Tensor, other: &Tensor) -> Result<Tensor> {
    expand_to("expand_as", x, other.shape())
}

fn expand_named(op: &str, x: &Tensor, sizes: &[isize]) -> Result<Tensor> {
    let shape = x.shape();
    if sizes.len() < shape.len() {
        return Err(Error::shape(
            op,
            format!(
                "{} sizes {sizes:?} for a tensor of shape {}: need at least one per dim",
                sizes.len(),
                fmt_shape(shape)
            ),
        ));
    }
    let lead = sizes.len() - shape.len();
    let mut out: Dims = SmallVec::with_capacity(sizes.len());
    for (i, &s) in sizes.iter().enumerate() {
        let extent = match s {
            -1 if i >= lead => shape[i - lead],
            s if s >= 0 => s as usize,
            _ => {
                return Err(Error::shape(
                    op,
                    format!(
                        "invalid size {s} at position {i} of {sizes:?} for a tensor of shape {} \
                         (-1 keeps an existing dim; new leading dims need a size >= 0)",
                        fmt_shape(shape)
                    ),
                ))
            }
        };
        out.push(extent);
    }
    expand_to(op, x, &out)
}

impl Tensor {
    /// A new axis of extent 1 at `dim` (a view); see [`unsqueeze`].
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        unsqueeze(self, dim)
    }
    /// Axes of extent 1 removed (a view); see [`squeeze`].
    pub fn squeeze(&self, dims: Option<&[isize]>) -> Result<Tensor> {
        squeeze(self, dims)
    }
    /// Axes `start_dim..=end_dim` merged; see [`flatten`].
    pub fn flatten(&self, start_dim: isize, end_dim: isize) -> Result<Tensor> {
        flatten(self, start_dim, end_dim)
    }
    /// Axis `dim` split into `sizes`; see [`unflatten`].
    pub fn unflatten(&self, dim: isize, sizes: &[isize]) -> Result<Tensor> {
        unflatten(self, dim, sizes)
    }
    /// Axes moved to new positions (a view); see [`movedim`].
    pub fn movedim(&self, source: &[isize], destination: &[isize]) -> Result<Tensor> {
        movedim(self, source, destination)
    }
    /// The last two axes swapped (PyTorch's `mT`; a view).
    pub fn mt(&self) -> Result<Tensor> {
        matrix_transpose(self)
    }
    /// PyTorch's `expand(*sizes)` (a broadcast view); see [`expand_sizes`].
    pub fn expand(&self, sizes: &[isize]) -> Result<Tensor> {
        expand_sizes(self, sizes)
    }
    /// Broadcast to `other`'s shape (a view).
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        expand_as(self, other)
    }
}
