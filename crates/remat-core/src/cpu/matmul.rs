//! Matrix products through the `gemm` crate: packed, cache-blocked AVX2/AVX-512 kernels on the
//! rayon pool, reading operands through their strides (transposed views cost no copy).

use crate::dtype::{DType, Element};
use crate::tensor_data::TensorData;

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
    // Product `bi` on `threads` threads.
    let run = |bi: usize, dst: &mut [T], threads: usize| {
        let a = (
            (pa as *const T).wrapping_add(a.batch_offsets[bi]),
            a.rs,
            a.cs,
        );
        let b = (
            (pb as *const T).wrapping_add(b.batch_offsets[bi]),
            b.rs,
            b.cs,
        );
        // SAFETY: offsets and strides come from validated layouts of live storages; dst is
        // a distinct, fully owned m x n block.
        let start = beta.map_or(Start::Empty, Start::Scaled);
        unsafe { product(dst.as_mut_ptr(), (m, n, k), a, b, start, alpha, threads) };
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
        let pout = out.as_mut_ptr() as usize;
        crate::parallel::run_parts(batches, |bi| {
            // SAFETY: product `bi`'s block of `out` is its own; no other part touches it.
            let dst =
                unsafe { std::slice::from_raw_parts_mut((pout as *mut T).add(bi * m * n), m * n) };
            run(bi, dst, 1)
        });
    } else if flops >= (1 << 18) && threads > 1 {
        for (bi, dst) in out.chunks_mut(m * n).enumerate() {
            run(bi, dst, threads);
        }
    } else {
        for (bi, dst) in out.chunks_mut(m * n).enumerate() {
            run(bi, dst, 1);
        }
    }
}

/// `dst (m x n, row-major) = a (m x k) * b (k x n) (+ bias in every row)`, operands given by
/// pointer and strides; what `dst` held is never read.
///
/// # Safety
/// `a` and `b` must address `m x k` and `k x n` valid elements through their strides.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_into<T: Element>(
    dst: &mut [T],
    m: usize,
    n: usize,
    k: usize,
    a: Strided<T>,
    b: Strided<T>,
    bias: Option<&[T]>,
) {
    debug_assert_eq!(dst.len(), m * n);
    debug_assert!(bias.is_none_or(|b| b.len() == n));
    if m == 0 || n == 0 || k == 0 {
        for row in dst.chunks_mut(n.max(1)) {
            match bias {
                Some(b) => row.copy_from_slice(b),
                None => row.iter_mut().for_each(|v| *v = T::zero()),
            }
        }
        return;
    }
    // Small products on the calling thread.
    let threads = if 2 * m * n * k >= (1 << 18) {
        crate::parallel::num_threads()
    } else {
        1
    };
    let start = bias.map_or(Start::Empty, Start::Rows);
    // SAFETY: the caller guarantees the operands; dst is an owned m x n row-major block.
    unsafe { product(dst.as_mut_ptr(), (m, n, k), a, b, start, T::one(), threads) }
}

/// A strided matrix operand by address: (pointer, row stride, column stride).
pub type Strided<T> = (*const T, isize, isize);

/// What a product's destination starts as, before the product is added to it.
#[derive(Clone, Copy)]
pub enum Start<'a, T> {
    /// Nothing: the destination is only written (it may hold anything, NaN included).
    Empty,
    /// `beta` times what the destination holds.
    Scaled(T),
    /// This row in every row (a broadcast bias, PyTorch's addmm): each thread writes its own
    /// block's rows right before its product, so the fill is parallel and cache-warm.
    Rows(&'a [T]),
    /// This column in every column: row `r` starts as `col[r]` everywhere (a convolution's
    /// per-channel bias on its `(channels, positions)` output), filled like [`Start::Rows`].
    Columns(&'a [T]),
}

/// `dst = start + alpha * a * b` for one `m x n` row-major `dst` (row stride `n`), on
/// `threads` threads (the caller and the helpers of `parallel::run_parts`).
///
/// With several threads the product is cut into one block of rows (or of columns, when the
/// output is wider than tall) per thread, each a single-threaded GEMM of its own. The GEMM
/// library's own threading splits every cache block between the threads and meets at a
/// barrier after each; on the tall-skinny products of a training step (2048 x 512 x 512, and
/// `dW = Gᵀ X` with k = 2048) that left its AVX2 kernels at 0.75-0.9x their square-product
/// rate on two threads, while disjoint blocks need no synchronisation at all.
///
/// # Safety
/// `dst` must address `m * n` writable elements; `a` and `b` must address `m x k` and
/// `k x n` valid elements through their strides.
pub(crate) unsafe fn product<T: Element>(
    dst: *mut T,
    (m, n, k): (usize, usize, usize),
    a: Strided<T>,
    b: Strided<T>,
    start: Start<'_, T>,
    alpha: T,
    threads: usize,
) {
    // SAFETY: forwarded; a row-major m x n destination has row stride n.
    unsafe { product_ld(dst, n, (m, n, k), a, b, start, alpha, threads) }
}

/// [`product`] into a destination whose rows are `ld >= n` elements apart (a block of
/// columns of a wider matrix, such as one tile of a convolution's output positions).
///
/// # Safety
/// As [`product`], with `dst` addressing `m` rows of `n` writable elements, `ld` apart.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn product_ld<T: Element>(
    dst: *mut T,
    ld: usize,
    (m, n, k): (usize, usize, usize),
    a: Strided<T>,
    b: Strided<T>,
    start: Start<'_, T>,
    alpha: T,
    threads: usize,
) {
    // Addresses, not pointers: raw pointers are not `Send`.
    let (pd, pa, pb) = (dst as usize, a.0 as usize, b.0 as usize);
    let (read_dst, beta) = match start {
        Start::Empty => (false, T::zero()),
        Start::Scaled(beta) => (true, beta),
        Start::Rows(_) | Start::Columns(_) => (true, T::one()),
    };
    let one = move |row0: usize, rows: usize, col0: usize, cols: usize, par: gemm::Parallelism| {
        if let Start::Rows(bias) = start {
            // Each thread fills its own block right before accumulating into it, in parallel
            // and while the block is still in its cache.
            for r in row0..row0 + rows {
                // SAFETY: row r, columns [col0, col0 + cols) lie in this thread's block.
                let row = unsafe {
                    std::slice::from_raw_parts_mut((pd as *mut T).add(r * ld + col0), cols)
                };
                row.copy_from_slice(&bias[col0..col0 + cols]);
            }
        }
        if let Start::Columns(col) = start {
            for (r, &v) in col.iter().enumerate().skip(row0).take(rows) {
                // SAFETY: as above.
                let row = unsafe {
                    std::slice::from_raw_parts_mut((pd as *mut T).add(r * ld + col0), cols)
                };
                row.fill(v);
            }
        }
        // SAFETY: the block [row0, row0 + rows) x [col0, col0 + cols) lies inside the operands
        // the caller vouched for; blocks given to different threads are disjoint.
        unsafe {
            gemm::gemm(
                rows,
                cols,
                k,
                (pd as *mut T).add(row0 * ld + col0),
                1,
                ld as isize,
                read_dst,
                (pa as *const T).offset(row0 as isize * a.1),
                a.2,
                a.1,
                (pb as *const T).offset(col0 as isize * b.2),
                b.2,
                b.1,
                beta,
                alpha,
                false,
                false,
                false,
                par,
            )
        }
    };
    if threads <= 1 {
        return one(0, m, 0, n, gemm::Parallelism::None);
    }
    let by_rows = m >= n;
    let long = if by_rows { m } else { n };
    if long < threads * 32 {
        // Too narrow to cut into per-thread blocks worth a kernel's width: GEMM's threads.
        return crate::parallel::install(|| one(0, m, 0, n, gemm::Parallelism::Rayon(threads)));
    }
    // Blocks a multiple of 16 long (whole micro-kernel tiles), the last one takes the rest.
    let step = long.div_ceil(threads).next_multiple_of(16);
    crate::parallel::run_parts(long.div_ceil(step), |i| {
        let (start, len) = (i * step, step.min(long - i * step));
        if by_rows {
            one(start, len, 0, n, gemm::Parallelism::None)
        } else {
            one(0, m, start, len, gemm::Parallelism::None)
        }
    });
}

/// Whether `T` is the dtype `d` (dispatch helper).
pub fn is<T: Element>(d: DType) -> bool {
    T::DTYPE == d
}

#[cfg(test)]
mod tests {
    use super::{product, Start};

    /// `start + alpha * a b` in f64, `a` and `b` read through (row, column) strides.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        dst: &[f32],
        (m, n, k): (usize, usize, usize),
        a: &[f32],
        (ars, acs): (usize, usize),
        b: &[f32],
        (brs, bcs): (usize, usize),
        start: Start<'_, f32>,
        alpha: f32,
    ) -> Vec<f32> {
        (0..m * n)
            .map(|ij| {
                let (i, j) = (ij / n, ij % n);
                let s: f64 = (0..k)
                    .map(|p| a[i * ars + p * acs] as f64 * b[p * brs + j * bcs] as f64)
                    .sum();
                let kept = match start {
                    Start::Empty => 0.0,
                    Start::Scaled(t) => t as f64 * dst[ij] as f64,
                    Start::Rows(row) => row[j] as f64,
                    Start::Columns(col) => col[i] as f64,
                };
                (kept + alpha as f64 * s) as f32
            })
            .collect()
    }

    #[test]
    fn per_thread_blocks_of_rows_or_columns_give_the_whole_product() {
        // Tall (cut into row blocks, the last one short), wide (column blocks), too narrow to
        // cut; plain and transposed operands; overwriting, accumulating and starting from a
        // broadcast row (a bias) or column (a per-channel bias).
        for (m, n, k) in [(100, 37, 70), (37, 300, 50), (40, 40, 9), (1, 513, 3)] {
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.5 - 3.0).collect();
            let channel_bias: Vec<f32> = (0..m).map(|i| 2.0 - i as f32 * 0.25).collect();
            let starts = [
                (Start::Empty, 1.0f32),
                (Start::Scaled(0.5f32), 2.0f32),
                (Start::Rows(&bias), 1.0f32),
                (Start::Columns(&channel_bias), 1.0f32),
            ];
            for transposed in [false, true] {
                for (start, alpha) in starts {
                    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
                    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32) * 0.25).collect();
                    // a (m x k) row-major, or stored as its transpose (k x m).
                    let astr = if transposed { (1, m) } else { (k, 1) };
                    let bstr = if transposed { (1, k) } else { (n, 1) };
                    let before: Vec<f32> = (0..m * n).map(|i| (i % 3) as f32).collect();
                    let want = reference(&before, (m, n, k), &a, astr, &b, bstr, start, alpha);
                    for threads in [1, 2, 3] {
                        // A destination that is only written starts as NaN: none may be read.
                        let mut dst = match start {
                            Start::Scaled(_) => before.clone(),
                            _ => vec![f32::NAN; m * n],
                        };
                        let pa = (a.as_ptr(), astr.0 as isize, astr.1 as isize);
                        let pb = (b.as_ptr(), bstr.0 as isize, bstr.1 as isize);
                        // SAFETY: the operands are m x k and k x n through those strides.
                        unsafe {
                            product(dst.as_mut_ptr(), (m, n, k), pa, pb, start, alpha, threads)
                        };
                        for (got, want) in dst.iter().zip(&want) {
                            assert!(
                                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                                "{m}x{n}x{k} transposed={transposed} threads={threads}: \
                                 {got} != {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
