//! Layout: how a tensor's elements sit in its storage (shape, strides in elements, offset),
//! plus the shape arithmetic every op needs (broadcasting, axis normalisation).

use crate::error::{Error, Result};
use smallvec::SmallVec;

/// A shape or a list of strides, inline up to 6 dimensions.
pub type Dims = SmallVec<[usize; 6]>;

/// Shape, strides (in elements; 0 for broadcast axes) and the offset of the first element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Extent of each axis.
    pub shape: Dims,
    /// Step in elements along each axis.
    pub strides: Dims,
    /// Index of the first element in the storage.
    pub offset: usize,
}

/// Strides that show a tensor of `shape` and `strides` as `new` (the same element count)
/// without moving data, or None when no such strides exist (PyTorch's `view` rule). The old
/// axes fall into chunks, runs of axes each of which steps over the whole of the next; a view
/// must split every chunk into whole new axes, each chunk keeping its own innermost stride.
/// Size-1 axes, old or new, constrain nothing.
pub fn view_strides(shape: &[usize], strides: &[usize], new: &[usize]) -> Option<Dims> {
    if numel(shape) == 0 {
        return Some(contiguous_strides(new));
    }
    // (element count, innermost stride) of each chunk, innermost chunk first.
    let mut chunks: SmallVec<[(usize, usize); 6]> = SmallVec::new();
    for (&n, &s) in shape.iter().zip(strides).rev().filter(|(&n, _)| n != 1) {
        match chunks.last_mut() {
            Some((count, base)) if s == *count * *base => *count *= n,
            _ => chunks.push((n, s)),
        }
    }
    let mut out: Dims = SmallVec::from_elem(0, new.len());
    let mut d = new.len();
    for &(count, base) in &chunks {
        let mut covered = 1usize;
        while d > 0 && (covered < count || new[d - 1] == 1) {
            out[d - 1] = covered * base;
            covered *= new[d - 1];
            d -= 1;
        }
        if covered != count {
            return None;
        }
    }
    // What is left are size-1 axes in front (any stride does).
    while d > 0 {
        if new[d - 1] != 1 {
            return None;
        }
        out[d - 1] = out.get(d).zip(new.get(d)).map_or(1, |(s, n)| s * n);
        d -= 1;
    }
    Some(out)
}

/// Row-major (C-order) strides for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides: Dims = SmallVec::from_elem(0, shape.len());
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1);
    }
    strides
}

/// Number of elements of a shape.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Number of elements of a user-given shape, erroring instead of overflowing when the
/// element count or the byte size cannot be represented.
pub fn checked_numel(op: &str, shape: &[usize], dtype: crate::dtype::DType) -> Result<usize> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match n.and_then(|n| n.checked_mul(dtype.size()).map(|b| (n, b))) {
        Some((n, bytes)) if bytes <= isize::MAX as usize => Ok(n),
        _ => Err(Error::shape(
            op,
            format!(
                "a tensor of shape {} and dtype {dtype} is too large to represent",
                fmt_shape(shape)
            ),
        )),
    }
}

/// Format a shape as `(2, 3)` for error messages.
pub fn fmt_shape(shape: &[usize]) -> String {
    match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The NumPy broadcast of two shapes.
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = SmallVec::from_elem(0, n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!(
                    "shapes {} and {} cannot be broadcast together",
                    fmt_shape(a),
                    fmt_shape(b)
                ),
            ));
        };
    }
    // The broadcast result can be far larger than either input.
    if out
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .is_none_or(|n| n > isize::MAX as usize / 8)
    {
        return Err(Error::shape(
            op,
            format!(
                "broadcasting {} with {} gives a result too large to represent",
                fmt_shape(a),
                fmt_shape(b)
            ),
        ));
    }
    Ok(out)
}

/// Normalise a possibly negative axis against `ndim`.
pub fn normalize_axis(op: &str, axis: isize, ndim: usize) -> Result<usize> {
    let n = ndim as isize;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Error::dim_out_of_range(
            op,
            format!("axis {axis} is out of bounds for a tensor of {ndim} dimensions"),
        ));
    }
    Ok(a as usize)
}

/// Normalise a list of axes (sorted, deduplicated; duplicates are an error).
pub fn normalize_axes(op: &str, axes: &[isize], ndim: usize) -> Result<Dims> {
    let mut out: Dims = SmallVec::new();
    for &a in axes {
        let a = normalize_axis(op, a, ndim)?;
        if out.contains(&a) {
            return Err(Error::shape(op, format!("axis {a} appears more than once")));
        }
        out.push(a);
    }
    out.sort_unstable();
    Ok(out)
}

impl Layout {
    /// A C-contiguous layout of `shape` starting at offset 0.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    /// Whether elements are laid out in C order without gaps (any offset).
    pub fn is_contiguous(&self) -> bool {
        let mut acc = 1usize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 && self.strides[i] != acc {
                return false;
            }
            acc *= self.shape[i];
        }
        true
    }
    /// A view of this layout broadcast to `shape` (stride 0 on stretched axes).
    pub fn broadcast_to(&self, op: &str, shape: &[usize]) -> Result<Layout> {
        if shape.len() < self.ndim() {
            return Err(Error::shape(
                op,
                format!(
                    "cannot broadcast {} to {}",
                    fmt_shape(&self.shape),
                    fmt_shape(shape)
                ),
            ));
        }
        let lead = shape.len() - self.ndim();
        let mut strides: Dims = SmallVec::from_elem(0, shape.len());
        for (i, &d) in shape.iter().enumerate() {
            if i < lead {
                continue;
            }
            let (sd, ss) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if sd == d {
                ss
            } else if sd == 1 {
                0
            } else {
                return Err(Error::shape(
                    op,
                    format!(
                        "cannot broadcast {} to {}",
                        fmt_shape(&self.shape),
                        fmt_shape(shape)
                    ),
                ));
            };
        }
        Ok(Layout {
            shape: shape.into(),
            strides,
            offset: self.offset,
        })
    }
    /// Swap two axes (no copy).
    pub fn transpose(&self, a: usize, b: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(a, b);
        l.strides.swap(a, b);
        l
    }
    /// Reorder axes (no copy). `perm` must be a permutation of `0..ndim`.
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }
    /// Storage index of every element in C order (for gathers of arbitrary views).
    pub fn for_each_index(&self, mut f: impl FnMut(usize)) {
        let n = self.numel();
        if n == 0 {
            return;
        }
        let nd = self.ndim();
        if nd == 0 {
            f(self.offset);
            return;
        }
        let mut idx: Dims = SmallVec::from_elem(0, nd);
        let inner = self.shape[nd - 1];
        let inner_stride = self.strides[nd - 1];
        let mut base = self.offset;
        loop {
            for k in 0..inner {
                f(base + k * inner_stride);
            }
            // advance the outer multi-index
            let mut d = nd - 1;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                base += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                base -= self.strides[d] * self.shape[d];
                idx[d] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_follows_numpy() {
        assert_eq!(
            broadcast_shapes("t", &[3, 1], &[4]).unwrap().as_slice(),
            &[3, 4]
        );
        assert_eq!(
            broadcast_shapes("t", &[], &[2, 2]).unwrap().as_slice(),
            &[2, 2]
        );
        assert!(broadcast_shapes("t", &[3], &[4]).is_err());
    }

    #[test]
    fn transposed_indices_walk_in_c_order() {
        let l = Layout::contiguous(&[2, 3]).transpose(0, 1);
        let mut v = vec![];
        l.for_each_index(|i| v.push(i));
        assert_eq!(v, vec![0, 3, 1, 4, 2, 5]);
        assert!(!l.is_contiguous());
        assert!(Layout::contiguous(&[2, 1, 3]).is_contiguous());
    }

    #[test]
    fn axes_normalise() {
        assert_eq!(normalize_axis("t", -1, 3).unwrap(), 2);
        assert!(normalize_axis("t", 3, 3).is_err());
        assert!(normalize_axis("t", 0, 0).is_err());
        assert!(normalize_axes("t", &[0, -2], 2).is_err());
    }

    /// Storage offsets of a layout's elements in row-major order of its indices.
    fn addresses(shape: &[usize], strides: &[usize]) -> Vec<usize> {
        let mut out = vec![0usize];
        for (&n, &s) in shape.iter().zip(strides) {
            out = out
                .iter()
                .flat_map(|&a| (0..n).map(move |i| a + i * s))
                .collect();
        }
        out
    }

    /// Whether some strides show the elements `addr` (in order) as `new`: read candidate
    /// strides off the first step along each axis, then check every element.
    fn viewable(addr: &[usize], new: &[usize]) -> bool {
        let base = contiguous_strides(new);
        let cand: Vec<isize> = new
            .iter()
            .zip(&base)
            .map(|(&n, &b)| {
                if n > 1 {
                    addr[b] as isize - addr[0] as isize
                } else {
                    0
                }
            })
            .collect();
        (0..addr.len()).all(|i| {
            let off: isize = base
                .iter()
                .zip(new)
                .zip(&cand)
                .map(|((&b, &n), &c)| ((i / b) % n) as isize * c)
                .sum();
            addr[0] as isize + off == addr[i] as isize
        })
    }

    #[test]
    fn view_strides_agree_with_brute_force() {
        // Layouts: transposes, slices, broadcasts and size-1 axes of small tensors; targets:
        // every factorisation of the element count into up to 4 axes (with some 1s).
        let layouts: Vec<(Vec<usize>, Vec<usize>)> = vec![
            (vec![2, 3, 4], vec![12, 4, 1]),
            (vec![2, 3, 4], vec![24, 8, 1]), // rows of a wider tensor
            (vec![2, 3, 4], vec![1, 2, 6]),  // a permutation
            (vec![4, 3, 2], vec![12, 1, 4]),
            (vec![2, 3, 4], vec![0, 4, 1]),   // broadcast leading axis
            (vec![2, 1, 6], vec![30, 99, 1]), // size-1 axis with any stride
            (vec![3, 4], vec![1, 3]),
            (vec![2, 2, 2, 3], vec![48, 6, 24, 1]),
            (vec![6, 4], vec![8, 2]),
            (vec![1, 1], vec![5, 7]),
        ];
        let mut targets: Vec<Vec<usize>> = Vec::new();
        for a in 1..=24usize {
            for b in 1..=24usize {
                for c in 1..=24usize {
                    targets.push(vec![a, b, c]);
                    targets.push(vec![a, 1, b, c]);
                }
            }
        }
        let mut seen_view = 0;
        for (shape, strides) in &layouts {
            let n = numel(shape);
            let addr = addresses(shape, strides);
            for t in targets.iter().filter(|t| numel(t) == n) {
                let want = viewable(&addr, t);
                match view_strides(shape, strides, t) {
                    Some(st) => {
                        assert!(want, "{shape:?}/{strides:?} as {t:?}: no view exists");
                        assert_eq!(addresses(t, &st), addr, "{shape:?}/{strides:?} as {t:?}");
                        seen_view += 1;
                    }
                    None => assert!(!want, "{shape:?}/{strides:?} as {t:?}: missed a view"),
                }
            }
        }
        assert!(seen_view > 50);
    }
}
