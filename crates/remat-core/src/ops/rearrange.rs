//! PyTorch's rearranging ops, composed of views, copies and joins that already have a
//! backward, a CUDA path and checkpoint support, so each of these inherits all three:
//! - `unbind`: the slices along an axis, without it (views);
//! - `roll`: elements shifted cyclically along axes (two `narrow`s joined by `cat` per axis);
//! - `tile`: `repeat` with the counts left-padded by 1 to the input's rank (`np.tile`);
//! - `repeat_interleave`: each element repeated along an axis (an `unsqueeze`, an `expand`
//!   and a `reshape`, or an `index_select` for per-element counts);
//! - `meshgrid`: broadcast views of 1-D tensors on a grid (`"ij"` or `"xy"` indexing);
//! - `diagonal`, `diag`, `trace`: diagonals as a strided slice of the two axes flattened,
//!   a vector placed on a diagonal by a reshape trick and a `pad`, and the diagonal's sum.

use super::{
    cat, expand, flatten, from_vec, index, index_select, movedim, narrow, pad, repeat, reshape,
    sum, unsqueeze, IndexItem, PadMode,
};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, normalize_axis};
use crate::tensor::Tensor;

/// The slices of `x` along `dim`, each without that axis (views), as PyTorch's `unbind`.
pub fn unbind(x: &Tensor, dim: isize) -> Result<Vec<Tensor>> {
    if x.ndim() == 0 {
        return Err(Error::shape(
            "unbind",
            "cannot unbind a 0-d tensor (it has no axis)",
        ));
    }
    let d = normalize_axis("unbind", dim, x.ndim())?;
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: 1,
    };
    (0..x.shape()[d])
        .map(|i| {
            let mut items = vec![full; d];
            items.push(IndexItem::Int(i as isize));
            index(x, &items)
        })
        .collect()
}

/// `x` with its elements shifted cyclically by `shifts[i]` positions along `dims[i]`
/// (elements pushed past the end come back at the start). With no `dims`, the flattened
/// tensor rolls by the single shift and takes `x`'s shape back. A copy.
pub fn roll(x: &Tensor, shifts: &[isize], dims: &[isize]) -> Result<Tensor> {
    const OP: &str = "roll";
    if dims.is_empty() {
        if shifts.len() != 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "without dims, exactly one shift is expected, got {}",
                    shifts.len()
                ),
            ));
        }
        let flat = flatten(x, 0, -1)?;
        return reshape(&roll(&flat, shifts, &[0])?, x.shape());
    }
    if shifts.len() != dims.len() {
        return Err(Error::shape(
            OP,
            format!(
                "shifts and dims must have the same length, got {} shifts and {} dims",
                shifts.len(),
                dims.len()
            ),
        ));
    }
    let mut out = x.clone();
    for (&shift, &dim) in shifts.iter().zip(dims) {
        let d = normalize_axis(OP, dim, x.ndim().max(1))?;
        let n = out.shape().get(d).copied().unwrap_or(1) as isize;
        if n == 0 {
            continue;
        }
        let s = shift.rem_euclid(n);
        if s == 0 {
            continue;
        }
        let tail = narrow(&out, d as isize, n - s, s)?;
        let head = narrow(&out, d as isize, 0, n - s)?;
        out = cat(&[tail, head], d as isize)?;
    }
    if out.same(x) {
        // No axis moved: still a copy, as PyTorch's roll always returns one.
        out = super::clone(x)?;
    }
    Ok(out)
}

/// `x` tiled `reps[i]` times along axis `i`; fewer counts than axes are left-padded with 1
/// (more add leading axes), as `np.tile` and PyTorch's `tile`. A copy.
pub fn tile(x: &Tensor, reps: &[usize]) -> Result<Tensor> {
    let mut sizes = vec![1; x.ndim().saturating_sub(reps.len())];
    sizes.extend_from_slice(reps);
    repeat(x, &sizes)
}

/// Each element of `x` repeated `repeats` times along `dim` (None: the flattened tensor), as
/// PyTorch's `repeat_interleave` with an integer count. A copy.
pub fn repeat_interleave(x: &Tensor, repeats: usize, dim: Option<isize>) -> Result<Tensor> {
    let (x, d) = interleave_axis(x, dim)?;
    let mut shape = x.shape().to_vec();
    let expanded = {
        let u = unsqueeze(&x, d as isize + 1)?;
        let mut s = u.shape().to_vec();
        s[d + 1] = repeats;
        expand(&u, &s)?
    };
    shape[d] *= repeats;
    reshape(&expanded, &shape)
}

/// Element `i` of `x` along `dim` repeated `repeats[i]` times (None: the flattened tensor);
/// one count repeats every element. Counts are non-negative. A copy (an `index_select`).
pub fn repeat_interleave_counts(x: &Tensor, repeats: &[i64], dim: Option<isize>) -> Result<Tensor> {
    const OP: &str = "repeat_interleave";
    let (x, d) = interleave_axis(x, dim)?;
    let n = x.shape()[d];
    if repeats.len() == 1 && n != 1 {
        let r = usize::try_from(repeats[0]).map_err(|_| negative_count(repeats[0]))?;
        return repeat_interleave(&x, r, Some(d as isize));
    }
    if repeats.len() != n {
        return Err(Error::shape(
            OP,
            format!(
                "repeats must have one count per element along dim {d} ({n}), got {}",
                repeats.len()
            ),
        ));
    }
    let mut positions = Vec::new();
    for (i, &r) in repeats.iter().enumerate() {
        let r = usize::try_from(r).map_err(|_| negative_count(r))?;
        positions.extend(std::iter::repeat_n(i as i64, r));
    }
    let count = positions.len();
    let idx = super::to_device(&from_vec(positions, &[count]), x.device())?;
    index_select(&x, d as isize, &idx)
}

fn negative_count(r: i64) -> Error {
    Error::value(
        "repeat_interleave",
        format!("repeats must be non-negative, got {r}"),
    )
}

/// `x` and the axis to repeat along: the flattened tensor's axis 0 when `dim` is None (and
/// for a 0-d tensor), else `dim` normalised.
fn interleave_axis(x: &Tensor, dim: Option<isize>) -> Result<(Tensor, usize)> {
    match dim {
        None => Ok((flatten(x, 0, -1)?, 0)),
        Some(d) if x.ndim() == 0 => {
            normalize_axis("repeat_interleave", d, 1)?;
            Ok((flatten(x, 0, -1)?, 0))
        }
        Some(d) => Ok((x.clone(), normalize_axis("repeat_interleave", d, x.ndim())?)),
    }
}

/// Coordinate grids of 1-D (or 0-d) tensors: output `i` holds `tensors[i]` broadcast over
/// the grid of all their lengths. `"ij"` indexing puts tensor `i` along axis `i`; `"xy"`
/// swaps the first two axes (NumPy's default). The outputs are broadcast views.
pub fn meshgrid(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    const OP: &str = "meshgrid";
    if tensors.is_empty() {
        return Err(Error::value(OP, "expects at least one tensor"));
    }
    let xy = match indexing {
        "ij" => false,
        "xy" => true,
        other => {
            return Err(Error::value(
                OP,
                format!("indexing must be 'ij' or 'xy', got {other:?}"),
            ))
        }
    };
    super::check_same_device(OP, &tensors.iter().collect::<Vec<_>>())?;
    for t in tensors {
        if t.ndim() > 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "expects 0-d or 1-d tensors, got shape {}",
                    fmt_shape(t.shape())
                ),
            ));
        }
    }
    let lens: Vec<usize> = tensors.iter().map(|t| t.numel()).collect();
    // The axis each tensor varies along.
    let axis_of = |i: usize| -> usize {
        match (xy && tensors.len() >= 2, i) {
            (true, 0) => 1,
            (true, 1) => 0,
            _ => i,
        }
    };
    let mut grid = lens.clone();
    if xy && grid.len() >= 2 {
        grid.swap(0, 1);
    }
    tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut shape = vec![1; grid.len()];
            shape[axis_of(i)] = lens[i];
            expand(&reshape(t, &shape)?, &grid)
        })
        .collect()
}

/// The diagonal of the matrices spanned by axes `dim1` and `dim2` of `x`, `offset` above
/// (positive) or below (negative) the main one, as a last axis after the remaining axes
/// (PyTorch's `diagonal`). A view when both axes are the last two of a contiguous tensor,
/// else a copy.
pub fn diagonal(x: &Tensor, offset: isize, dim1: isize, dim2: isize) -> Result<Tensor> {
    const OP: &str = "diagonal";
    if x.ndim() < 2 {
        return Err(Error::shape(
            OP,
            format!(
                "expects a tensor of at least 2 axes, got shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    let (d1, d2) = (
        normalize_axis(OP, dim1, x.ndim())?,
        normalize_axis(OP, dim2, x.ndim())?,
    );
    if d1 == d2 {
        return Err(Error::shape(
            OP,
            format!("dim1 and dim2 must differ, both are {d1}"),
        ));
    }
    let (n1, n2) = (x.shape()[d1] as isize, x.shape()[d2] as isize);
    let m = movedim(x, &[d1 as isize, d2 as isize], &[-2, -1])?;
    let mut flat_shape = m.shape()[..m.ndim() - 2].to_vec();
    flat_shape.push((n1 * n2) as usize);
    let flat = reshape(&m, &flat_shape)?;
    let len = (n1 - (-offset).max(0)).min(n2 - offset.max(0)).max(0);
    let last = flat_shape.len() as isize - 1;
    if len == 0 {
        return narrow(&flat, last, 0, 0);
    }
    let start = if offset >= 0 { offset } else { -offset * n2 };
    let step = n2 + 1;
    let mut items = vec![
        IndexItem::Slice {
            start: None,
            stop: None,
            step: 1,
        };
        flat_shape.len() - 1
    ];
    items.push(IndexItem::Slice {
        start: Some(start),
        stop: Some(start + (len - 1) * step + 1),
        step,
    });
    index(&flat, &items)
}

/// PyTorch's `diag`: a 1-D `x` placed on diagonal `offset` of a square matrix of zeros (of
/// side `len + |offset|`), or a 2-D `x`'s diagonal `offset` (a 1-D copy).
pub fn diag(x: &Tensor, offset: isize) -> Result<Tensor> {
    const OP: &str = "diag";
    match x.ndim() {
        1 => {
            let n = x.numel();
            // (n, n + 1) rows of [x_i, 0 ... 0], flattened and cut to n·n: x_i lands at
            // i·(n + 1), which is (i, i) of an (n, n) matrix.
            let zeros = super::zeros(&[n, n], x.dtype(), x.device())?;
            let rows = cat(&[unsqueeze(x, 1)?, zeros], 1)?;
            let flat = narrow(&flatten(&rows, 0, -1)?, 0, 0, (n * n) as isize)?;
            let square = reshape(&flat, &[n, n])?;
            let k = offset.unsigned_abs() as isize;
            match offset {
                0 => Ok(square),
                o if o > 0 => pad(&square, &[k, 0, 0, k], PadMode::Constant, 0.0),
                _ => pad(&square, &[0, k, k, 0], PadMode::Constant, 0.0),
            }
        }
        2 => super::clone(&diagonal(x, offset, 0, 1)?),
        _ => Err(Error::shape(
            OP,
            format!(
                "expects a 1-d or 2-d tensor, got shape {}",
                fmt_shape(x.shape())
            ),
        )),
    }
}

/// The sum of the main diagonal of a 2-D tensor (a 0-d tensor), as PyTorch's `trace`.
pub fn trace(x: &Tensor) -> Result<Tensor> {
    crate::autocast::composite("trace", [Some(x)], |[x]| match x {
        Some(x) => trace_now(x),
        None => unreachable!("the input stays present"),
    })
}

fn trace_now(x: &Tensor) -> Result<Tensor> {
    if x.ndim() != 2 {
        return Err(Error::shape(
            "trace",
            format!("expects a 2-d tensor, got shape {}", fmt_shape(x.shape())),
        ));
    }
    sum(&diagonal(x, 0, 0, 1)?, None, false)
}

impl Tensor {
    /// The slices along `dim`; see [`unbind`].
    pub fn unbind(&self, dim: isize) -> Result<Vec<Tensor>> {
        unbind(self, dim)
    }
    /// Cyclic shifts along axes; see [`roll`].
    pub fn roll(&self, shifts: &[isize], dims: &[isize]) -> Result<Tensor> {
        roll(self, shifts, dims)
    }
    /// Tiled copies; see [`tile`].
    pub fn tile(&self, reps: &[usize]) -> Result<Tensor> {
        tile(self, reps)
    }
    /// Each element repeated along an axis; see [`repeat_interleave`].
    pub fn repeat_interleave(&self, repeats: usize, dim: Option<isize>) -> Result<Tensor> {
        repeat_interleave(self, repeats, dim)
    }
    /// A diagonal of two axes; see [`diagonal`].
    pub fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Tensor> {
        diagonal(self, offset, dim1, dim2)
    }
    /// A diagonal matrix or a matrix's diagonal; see [`diag`].
    pub fn diag(&self, offset: isize) -> Result<Tensor> {
        diag(self, offset)
    }
    /// The sum of the main diagonal; see [`trace`].
    pub fn trace(&self) -> Result<Tensor> {
        trace(self)
    }
}
