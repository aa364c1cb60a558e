//! Matrix products through the `gemm` crate: packed, cache-blocked AVX2/AVX-512 kernels on the
//! rayon pool, reading operands through their strides (transposed views cost no copy).

use crate::dtype::{DType, Element};
use crate::tensor::TensorData;
use rayon::prelude::*;

/// One operand of a batched product: storage offset of each batch and the row/column strides.
pub struct MatOperand<'a> {
    /// The storage.
    pub data: &'a TensorData,
    /// Storage offset of each batch's matrix.
    pub batch_offsets: Vec<usize>,
    /// Stride between rows.
    pub rs: isize,
    /// Stride between columns.
    pub cs: isize,
}

/// `out[b] = a[b] (m x k) * b[b] (k x n)` for every batch, `out` contiguous `(batch, m, n)`.
pub fn batched_matmul<T: Element>(
    a: &MatOperand<'_>,
    b: &MatOperand<'_>,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    let batches = a.batch_offsets.len();
    if k == 0 || m == 0 || n == 0 {
        return super::filled(batches * m * n, T::zero());
    }
    // Every element is written by the product (the destination is not read).
    let mut out = super::alloc::<T>(batches * m * n);
    batched_matmul_into(&mut out, a, b, (m, k, n), None, T::one());
    out
}

/// `out[b] = beta * out[b] + alpha * a[b] (m x k) * b[b] (k x n)` for every batch, `out`
/// contiguous `(batch, m, n)` (PyTorch's `baddbmm`). `beta` None: `out` is not read (it may
/// hold anything, NaN included), only written.
pub fn batched_matmul_into<T: Element>(
    out: &mut [T],
    a: &MatOperand<'_>,
    b: &MatOperand<'_>,
    (m, k, n): (usize, usize, usize),
    beta: Option<T>,
    alpha: T,
) {
    let batches = a.batch_offsets.len();
    debug_assert_eq!(out.len(), batches * m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        // An empty product: only the scaled destination is left.
        match beta {
            Some(s) => out.iter_mut().for_each(|v| *v *= s),
            None => out.iter_mut().for_each(|v| *v = T::zero()),
        }
        return;
    }
    let pa = super::slice::<T>(a.data).as_ptr() as usize;
    let pb = super::slice::<T>(b.data).as_ptr() as usize;
    let flops = 2 * m * n * k;
    let run = |bi: usize, dst: &mut [T], par: gemm::Parallelism| {
        // SAFETY: offsets and strides come from validated layouts of live storages; dst is
        // a distinct, fully owned m x n block.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                beta.is_some(),
                (pa as *const T).add(a.batch_offsets[bi]),
                a.cs,
                a.rs,
                (pb as *const T).add(b.batch_offsets[bi]),
                b.cs,
                b.rs,
                beta.unwrap_or(T::zero()),
                alpha,
                false,
                false,
                false,
                par,
            )
        }
    };
    let threads = crate::parallel::num_threads();
    // One thread per product when the products are small, or when they split evenly (or
    // nearly so) over the threads: a product per thread needs no synchronisation, while
    // GEMM's own threading gains little on a thin product (32 rows, as a convolution's
    // output channels: measured 1.0x with 2 threads).
    let per_thread = batches.is_multiple_of(threads) || batches >= 4 * threads;
    // A few tiny products finish before the pool's threads would wake (waking them cost
    // ~15 µs, the products of a 4-token attention head ~1 µs).
    let tiny = batches * flops < 1 << 17;
    if batches > 1 && !tiny && (flops < (1 << 22) || per_thread) {
        crate::parallel::install(|| {
            out.par_chunks_mut(m * n)
                .enumerate()
                .for_each(|(bi, dst)| run(bi, dst, gemm::Parallelism::None))
        });
    } else if flops >= (1 << 18) && threads > 1 {
        // GEMM's threads come from the pool it is called on: the engine's.
        crate::parallel::install(|| {
            for (bi, dst) in out.chunks_mut(m * n).enumerate() {
                run(bi, dst, gemm::Parallelism::Rayon(threads));
            }
        });
    } else {
        for (bi, dst) in out.chunks_mut(m * n).enumerate() {
            run(bi, dst, gemm::Parallelism::None);
        }
    }
}

/// `dst (m x n, row-major) (+)= a (m x k) * b (k x n)`, operands given by pointer and
/// strides; `accumulate` adds to what `dst` holds (a pre-filled bias) instead of overwriting.
///
/// # Safety
/// `a` and `b` must address `m x k` and `k x n` valid elements through their strides.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_into<T: Element>(
    dst: &mut [T],
    m: usize,
    n: usize,
    k: usize,
    a: (*const T, isize, isize),
    b: (*const T, isize, isize),
    accumulate: bool,
) {
    debug_assert_eq!(dst.len(), m * n);
    if m == 0 || n == 0 || k == 0 {
        if !accumulate {
            dst.iter_mut().for_each(|v| *v = T::zero());
        }
        return;
    }
    let threads = crate::parallel::num_threads();
    let par = if 2 * m * n * k >= (1 << 18) && threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // Raw pointers are not `Send`: carried across to the pool's thread as addresses.
    let (pa, pb) = (a.0 as usize, b.0 as usize);
    let run = move |dst: &mut [T]| {
        // SAFETY: the caller guarantees the operands; dst is an owned m x n row-major block.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                accumulate,
                pa as *const T,
                a.2,
                a.1,
                pb as *const T,
                b.2,
                b.1,
                T::one(),
                T::one(),
                false,
                false,
                false,
                par,
            )
        }
    };
    match par {
        // GEMM's threads come from the pool it is called on: the engine's.
        gemm::Parallelism::Rayon(_) => crate::parallel::install(|| run(dst)),
        _ => run(dst),
    }
}

/// Whether `T` is the dtype `d` (dispatch helper).
pub fn is<T: Element>(d: DType) -> bool {
    T::DTYPE == d
}
