//! Matrix products through cuBLAS. cuBLAS is column-major; a row-major `C = A B` is computed
//! as the column-major `C^T = B^T A^T`, which is the same memory: swap the operands, and pass
//! each as "not transposed" when it is row-major (unit column stride) or "transposed" when it
//! is column-major (a transposed view, unit row stride). Batches use the strided-batched call
//! when their offsets are evenly spaced (broadcast batches: stride 0), one call per batch
//! otherwise.

use super::context::guarded;
use super::storage::CudaBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use cudarc::cublas::result as blas;
use cudarc::cublas::sys::cublasOperation_t;

/// One operand: its buffer, the storage offset of each batch's matrix, row and column strides
/// (elements), and its extent.
pub struct BlasOperand<'a> {
    /// The device buffer.
    pub buf: &'a CudaBuffer,
    /// Storage offset (elements) of each batch's matrix.
    pub offsets: Vec<usize>,
    /// Stride between rows.
    pub rs: usize,
    /// Stride between columns.
    pub cs: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
}

/// How cuBLAS reads a row-major matrix with strides `(rs, cs)`: the operation to apply to the
/// column-major matrix it sees, and its leading dimension. None: neither unit stride holds
/// (or rows overlap), so the caller must pass a contiguous copy.
pub fn blas_view(
    rs: usize,
    cs: usize,
    rows: usize,
    cols: usize,
) -> Option<(cublasOperation_t, i32)> {
    let fits = |v: usize| i32::try_from(v).ok();
    // Row-major: element (i, j) at i * ld + j. cuBLAS sees its transpose as-is.
    if cols <= 1 || cs == 1 {
        let ld = if rows <= 1 { cols.max(1) } else { rs };
        if ld >= cols.max(1) {
            return fits(ld).map(|ld| (cublasOperation_t::CUBLAS_OP_N, ld));
        }
    }
    // Column-major: element (i, j) at i + j * ld. cuBLAS must transpose it.
    if rows <= 1 || rs == 1 {
        let ld = if cols <= 1 { rows.max(1) } else { cs };
        if ld >= rows.max(1) {
            return fits(ld).map(|ld| (cublasOperation_t::CUBLAS_OP_T, ld));
        }
    }
    None
}

/// Even spacing of batch offsets relative to the first, if any.
fn batch_stride(offsets: &[usize]) -> Option<i64> {
    if offsets.len() < 2 {
        return Some(0);
    }
    let s = offsets[1] as i64 - offsets[0] as i64;
    offsets
        .windows(2)
        .all(|w| w[1] as i64 - w[0] as i64 == s)
        .then_some(s)
}

/// `out[b] = beta * out[b] + alpha * a[b] (m x k) @ b[b] (k x n)` for every batch, with
/// `(alpha, beta) = scale`; `out` is a contiguous `(batches, m, n)` buffer of `dtype` (read
/// only when `beta != 0`).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    op: &str,
    dtype: DType,
    a: &BlasOperand<'_>,
    b: &BlasOperand<'_>,
    m: usize,
    k: usize,
    n: usize,
    out: &CudaBuffer,
    scale: (f64, f64),
) -> Result<()> {
    let (alpha, beta) = scale;
    let batches = a.offsets.len();
    if m == 0 || n == 0 || batches == 0 {
        return Ok(());
    }
    let ctx = out.context().clone();
    let too_big = || Error::device(op, "matrix too large for cuBLAS (32-bit dimensions)");
    let (ta, lda) = blas_view(a.rs, a.cs, a.rows, a.cols)
        .ok_or_else(|| Error::device(op, "operand a is not cuBLAS-compatible"))?;
    let (tb, ldb) = blas_view(b.rs, b.cs, b.rows, b.cols)
        .ok_or_else(|| Error::device(op, "operand b is not cuBLAS-compatible"))?;
    let (mi, ni, ki) = (
        i32::try_from(m).map_err(|_| too_big())?,
        i32::try_from(n).map_err(|_| too_big())?,
        // k == 0 is legal: the product is zero (cuBLAS scales C by beta).
        i32::try_from(k).map_err(|_| too_big())?,
    );
    let handle = ctx.blas(op)?;
    // cuBLAS runs in the thread's current context, which must be this device's: the caller
    // may have made no cudarc call that binds it (cached buffers are taken without one).
    guarded(op, || {
        ctx.ctx
            .bind_to_thread()
            .map_err(|e| super::storage::driver_error(op, ctx.device(), 0, e))
    })?;
    let h = *handle.handle();
    let esize = dtype.size() as u64;
    let cstride = (m * n) as i64;
    let run =
        |a_off: usize, b_off: usize, c_off: usize, sa: i64, sb: i64, count: i32| -> Result<()> {
            let (pa, pb, pc) = (
                a.buf.ptr() + a_off as u64 * esize,
                b.buf.ptr() + b_off as u64 * esize,
                out.ptr() + c_off as u64 * esize,
            );
            guarded(op, || {
                // SAFETY: the pointers address live device buffers; the shapes, strides and
                // leading dimensions were checked by `blas_view` against the views' extents.
                // Column-major call: C^T (n x m) = B^T (n x k) A^T (k x m).
                let r = unsafe {
                    match dtype {
                        DType::F32 => {
                            let (alpha, beta) = (alpha as f32, beta as f32);
                            blas::sgemm_strided_batched(
                                h,
                                tb,
                                ta,
                                ni,
                                mi,
                                ki,
                                &alpha,
                                pb as *const f32,
                                ldb,
                                sb,
                                pa as *const f32,
                                lda,
                                sa,
                                &beta,
                                pc as *mut f32,
                                ni,
                                cstride,
                                count,
                            )
                        }
                        _ => {
                            let (alpha, beta) = (alpha, beta);
                            blas::dgemm_strided_batched(
                                h,
                                tb,
                                ta,
                                ni,
                                mi,
                                ki,
                                &alpha,
                                pb as *const f64,
                                ldb,
                                sb,
                                pa as *const f64,
                                lda,
                                sa,
                                &beta,
                                pc as *mut f64,
                                ni,
                                cstride,
                                count,
                            )
                        }
                    }
                };
                r.map_err(|e| Error::device(op, format!("cuBLAS gemm failed: {e:?}")))
            })
        };
    match (batch_stride(&a.offsets), batch_stride(&b.offsets)) {
        (Some(sa), Some(sb)) if i32::try_from(batches).is_ok() => {
            run(a.offsets[0], b.offsets[0], 0, sa, sb, batches as i32)
        }
        _ => {
            for i in 0..batches {
                run(a.offsets[i], b.offsets[i], i * m * n, 0, 0, 1)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_and_column_major_views_map_to_blas_ops() {
        // (2, 3) row-major.
        assert_eq!(blas_view(3, 1, 2, 3).map(|v| v.1), Some(3));
        assert!(matches!(
            blas_view(3, 1, 2, 3),
            Some((cublasOperation_t::CUBLAS_OP_N, 3))
        ));
        // Its transpose (3, 2) with strides (1, 3).
        assert!(matches!(
            blas_view(1, 3, 3, 2),
            Some((cublasOperation_t::CUBLAS_OP_T, 3))
        ));
        // Broadcast rows (stride 0) overlap: not usable.
        assert!(blas_view(0, 1, 4, 3).is_none());
        assert_eq!(batch_stride(&[5, 9, 13]), Some(4));
        assert_eq!(batch_stride(&[0, 0, 0]), Some(0));
        assert_eq!(batch_stride(&[0, 1, 3]), None);
    }
}
