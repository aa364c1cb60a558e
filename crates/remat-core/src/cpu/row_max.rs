//! The largest element of a row, reduced in lanes so that the loop vectorises: the row
//! reduction of softmax, log-softmax and the tiled attention's online softmax.

use crate::dtype::Element;

/// Independent running maxima: one AVX-512 register of `f32`.
const LANES: usize = 16;

/// The largest element of `row`, ignoring NaN (a compare-and-select per lane; a NaN element
/// still reaches a softmax's result through `exp`); `-inf` for an empty or all `-inf` row.
#[inline(always)]
pub fn row_max<T: Element>(row: &[T]) -> T {
    let mut acc = [T::neg_infinity(); LANES];
    let chunks = row.chunks_exact(LANES);
    let rem = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    let mut m = T::neg_infinity();
    for &v in acc.iter().chain(rem) {
        if v > m {
            m = v;
        }
    }
    m
}
