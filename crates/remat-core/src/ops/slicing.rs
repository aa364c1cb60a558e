//! Contiguous ranges along one axis, as views: `narrow`, `split` (a piece size, or a list of
//! sizes) and `chunk`, with PyTorch's semantics. Each piece is an `index` slice of the input,
//! so it shares the input's storage and its gradient is scattered back by `index`'s
//! differentiable backward (on CUDA too).

use super::axes::wrap_dim_in;
use super::index;
use super::view::IndexItem;
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

/// Positions `start..start + len` of axis `dim` of `x` (a view).
fn range(x: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: 1,
    };
    let mut items = vec![full; dim];
    items.push(IndexItem::Slice {
        start: Some(start as isize),
        stop: Some((start + len) as isize),
        step: 1,
    });
    index(x, &items)
}

/// The axis `dim` of `x` (which must have one): its position and extent.
fn axis(op: &str, x: &Tensor, dim: isize) -> Result<(usize, usize)> {
    if x.ndim() == 0 {
        return Err(Error::shape(
            op,
            "expected a tensor with at least one dim, got a 0-d tensor",
        ));
    }
    let d = wrap_dim_in(op, dim, x.ndim(), x.shape())?;
    Ok((d, x.shape()[d]))
}

/// Positions `start..start + length` of axis `dim` (a view; a negative `start` counts from
/// the end).
pub fn narrow(x: &Tensor, dim: isize, start: isize, length: isize) -> Result<Tensor> {
    const OP: &str = "narrow";
    let (d, n) = axis(OP, x, dim)?;
    let ni = n as isize;
    let bad = |what: String| {
        Err(Error::shape(
            OP,
            format!(
                "{what} (dim {dim} of a tensor of shape {})",
                fmt_shape(x.shape())
            ),
        ))
    };
    if start < -ni || start > ni {
        return bad(format!("start {start} is out of range [{}, {ni}]", -ni));
    }
    let s = if start < 0 { start + ni } else { start };
    if length < 0 {
        return bad(format!("length {length} must be non-negative"));
    }
    if s + length > ni {
        return bad(format!(
            "start ({s}) + length ({length}) exceeds the dimension size ({n})"
        ));
    }
    range(x, d, s as usize, length as usize)
}

/// Pieces of `split_size` positions along `dim` (the last one smaller if the extent is not a
/// multiple; views). `split_size` may be 0 only for an empty axis.
pub fn split(x: &Tensor, split_size: usize, dim: isize) -> Result<Vec<Tensor>> {
    const OP: &str = "split";
    let (d, n) = axis(OP, x, dim)?;
    if split_size == 0 && n != 0 {
        return Err(Error::shape(
            OP,
            format!(
                "split_size can only be 0 if the dimension size is 0, but dim {dim} of a \
                 tensor of shape {} has size {n}",
                fmt_shape(x.shape())
            ),
        ));
    }
    // An empty axis still gives one (empty) piece, as in PyTorch.
    let pieces = if n == 0 { 1 } else { n.div_ceil(split_size) };
    (0..pieces)
        .map(|i| {
            let start = i * split_size;
            range(x, d, start, split_size.min(n - start))
        })
        .collect()
}

/// Pieces of the given `sizes` along `dim` (views); the sizes must add up to the extent.
pub fn split_sections(x: &Tensor, sizes: &[usize], dim: isize) -> Result<Vec<Tensor>> {
    const OP: &str = "split";
    let (d, n) = axis(OP, x, dim)?;
    let total = sizes.iter().try_fold(0usize, |acc, &s| acc.checked_add(s));
    if total != Some(n) {
        return Err(Error::shape(
            OP,
            format!(
                "split sizes {sizes:?} must sum exactly to the size {n} of dim {dim} of a \
                 tensor of shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    let mut start = 0usize;
    sizes
        .iter()
        .map(|&s| {
            let piece = range(x, d, start, s);
            start += s;
            piece
        })
        .collect()
}

/// At most `chunks` pieces of equal size along `dim` (the last one smaller; views), as
/// PyTorch's `chunk`: pieces of `ceil(extent / chunks)`, so there may be fewer than `chunks`.
pub fn chunk(x: &Tensor, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
    const OP: &str = "chunk";
    let (_, n) = axis(OP, x, dim)?;
    if chunks == 0 {
        return Err(Error::shape(
            OP,
            format!(
                "chunks must be greater than 0, got 0 (tensor of shape {})",
                fmt_shape(x.shape())
            ),
        ));
    }
    if n == 0 {
        // PyTorch gives `chunks` empty pieces of an empty axis.
        return split_sections(x, &vec![0; chunks], dim);
    }
    split(x, n.div_ceil(chunks), dim)
}

impl Tensor {
    /// Positions `start..start + length` of axis `dim` (a view); see [`narrow`].
    pub fn narrow(&self, dim: isize, start: isize, length: isize) -> Result<Tensor> {
        narrow(self, dim, start, length)
    }
    /// Pieces of `split_size` along `dim` (views); see [`split`].
    pub fn split(&self, split_size: usize, dim: isize) -> Result<Vec<Tensor>> {
        split(self, split_size, dim)
    }
    /// At most `chunks` equal pieces along `dim` (views); see [`chunk`].
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        chunk(self, chunks, dim)
    }
}
