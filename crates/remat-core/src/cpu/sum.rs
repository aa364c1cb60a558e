//! Accurate sums: pairwise summation over contiguous runs (NumPy's scheme: blocks of 128 with
//! eight accumulators), and blocked accumulation when the reduced axes lead (bias gradients),
//! so float32 sums of millions of elements stay accurate. Results are deterministic.

use super::{contiguous_slice, filled, gather, PAR_MIN};
use crate::dtype::Element;
use crate::layout::Dims;
use crate::tensor_data::TensorData;
use rayon::prelude::*;

/// Pairwise sum of a slice.
pub fn pairwise_sum<T: Element>(v: &[T]) -> T {
    if v.len() <= 128 {
        let mut acc = [T::zero(); 8];
        let chunks = v.chunks_exact(8);
        let rem = chunks.remainder();
        for c in chunks {
            for i in 0..8 {
                acc[i] += c[i];
            }
        }
        let mut s =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for &x in rem {
            s += x;
        }
        s
    } else {
        let mid = (v.len() / 2) / 8 * 8;
        pairwise_sum(&v[..mid]) + pairwise_sum(&v[mid..])
    }
}

/// Sum each contiguous run of `inner` elements of `src` into `out`.
fn sum_rows<T: Element>(src: &[T], inner: usize, out: &mut [T]) {
    if src.len() >= PAR_MIN && out.len() > 1 {
        crate::parallel::install(|| {
            out.par_iter_mut()
                .zip(src.par_chunks(inner))
                .for_each(|(o, c)| *o = pairwise_sum(c))
        });
    } else if out.len() == 1 && src.len() >= PAR_MIN {
        // One long run: split it between threads, then add the halves.
        let mid = (src.len() / 2) / 8 * 8;
        let (a, b) = crate::parallel::install(|| {
            rayon::join(|| pairwise_sum(&src[..mid]), || pairwise_sum(&src[mid..]))
        });
        out[0] = a + b;
    } else {
        for (o, c) in out.iter_mut().zip(src.chunks(inner)) {
            *o = pairwise_sum(c);
        }
    }
}

/// Sum `x` over `axes` (sorted, unique); values in C order of the kept axes.
pub fn sum_axes<T: Element>(x: &TensorData, axes: &[usize]) -> Vec<T> {
    let shape = &x.layout.shape;
    let kept: Dims = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let outer: usize = kept.iter().map(|&a| shape[a]).product();
    let inner: usize = axes.iter().map(|&a| shape[a]).product();
    let mut out = filled(outer, T::zero());
    if outer == 0 || inner == 0 {
        return out;
    }
    if let Some(c) = contiguous_slice::<T>(x) {
        if axes.iter().copied().eq(kept.len()..shape.len()) {
            sum_rows(c, inner, &mut out);
            return out;
        }
        if axes.iter().copied().eq(0..axes.len()) {
            // Leading axes: add rows in blocks of 64, block totals in superblocks of 64, and
            // those into the result, so the error grows with the block sizes plus the number
            // of superblocks rather than with the row count.
            const BLOCK: usize = 64;
            let mut block_sum = filled(outer, T::zero());
            let mut super_sum = filled(outer, T::zero());
            for sup in c.chunks(outer * BLOCK * BLOCK) {
                super_sum.iter_mut().for_each(|p| *p = T::zero());
                for block in sup.chunks(outer * BLOCK) {
                    block_sum.iter_mut().for_each(|p| *p = T::zero());
                    for row in block.chunks(outer) {
                        for (p, &v) in block_sum.iter_mut().zip(row) {
                            *p += v;
                        }
                    }
                    for (q, &p) in super_sum.iter_mut().zip(&block_sum) {
                        *q += p;
                    }
                }
                for (o, &q) in out.iter_mut().zip(&super_sum) {
                    *o += q;
                }
            }
            return out;
        }
    }
    // General case: bring the reduced axes last, contiguously, then sum runs.
    let mut perm: Dims = kept.clone();
    perm.extend(axes.iter().copied());
    let permuted = TensorData {
        storage: x.storage.clone(),
        layout: x.layout.permute(&perm),
    };
    let c = gather::<T>(&permuted);
    sum_rows(&c, inner, &mut out);
    out
}
