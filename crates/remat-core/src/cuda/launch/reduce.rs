//! Reductions over contiguous rows: the chunked (multi-pass) row sum and the row maxima.

use super::common::{buffer, contig, kernel_name, launch, launch_err, row_grid, tensor};
use super::elementwise::{copy, full};
use crate::cuda::context::{guarded, DeviceContext};
use crate::cuda::kernels::BLOCK;
use crate::cuda::storage::CudaBuffer;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// One pass of the chunked row sum: `rows` runs of `inner` elements at `src` into
/// `rows * nchunks` partial sums.
fn sum_pass(
    op: &str,
    ctx: &Arc<DeviceContext>,
    dtype: DType,
    src: u64,
    rows: usize,
    inner: usize,
) -> Result<(CudaBuffer, usize)> {
    // Long runs are split so that enough blocks run in parallel; each chunk is at least a
    // few thousand elements so the second pass is small.
    let nchunks = if rows >= 1024 {
        1
    } else {
        inner.div_ceil(8192).clamp(1, 1024)
    };
    let chunk = inner.div_ceil(nchunks).max(1);
    let out = CudaBuffer::alloc(op, ctx, rows * nchunks, dtype)?;
    let f = ctx.function(op, kernel_name("sum", dtype))?;
    let (r, i, c, nc, yp) = (
        rows as i64,
        inner as i64,
        chunk as i64,
        nchunks as i64,
        out.ptr(),
    );
    let blocks = (rows * nchunks).clamp(1, 1 << 20) as u32;
    guarded(op, || {
        let mut l = ctx.stream.launch_builder(&f);
        l.arg(&r).arg(&i).arg(&c).arg(&nc).arg(&src).arg(&yp);
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: matches `sum_chunks_*`; reads rows * inner elements at `src`, writes
        // rows * nchunks elements of `out`.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(launch_err(op, ctx))
    })?;
    Ok((out, nchunks))
}

/// Sums of the `rows` contiguous runs of `inner` elements of a contiguous tensor `x`, as a
/// tensor of `out_shape` (`rows` elements).
pub fn sum_rows(
    op: &str,
    x: &Tensor,
    rows: usize,
    inner: usize,
    out_shape: &[usize],
) -> Result<Tensor> {
    let x = if x.is_contiguous() {
        x.clone()
    } else {
        copy(op, x)?
    };
    let xb = buffer(op, &x)?;
    let ctx = xb.context().clone();
    if rows == 0 || inner == 0 {
        return full(op, ctx.device(), out_shape, x.dtype(), 0.0);
    }
    let (mut cur, mut nchunks) = sum_pass(
        op,
        &ctx,
        x.dtype(),
        xb.ptr_at(x.layout().offset),
        rows,
        inner,
    )?;
    while nchunks > 1 {
        let (next, nc) = sum_pass(op, &ctx, x.dtype(), cur.ptr(), rows, nchunks)?;
        cur = next;
        nchunks = nc;
    }
    Ok(tensor(cur, out_shape))
}

/// Maxima (NaN wins) of the `rows` contiguous runs of `n` elements of `x` (laid out so in C
/// order), as a tensor of `out_shape`.
pub fn max_rows(
    op: &str,
    x: &Tensor,
    rows: usize,
    n: usize,
    out_shape: &[usize],
) -> Result<Tensor> {
    let xc = contig(op, x)?;
    let xb = buffer(op, &xc)?;
    let ctx = xb.context().clone();
    let out = CudaBuffer::alloc(op, &ctx, rows, xc.dtype())?;
    if rows > 0 {
        let f = ctx.function(op, kernel_name("max_rows", xc.dtype()))?;
        let (r, nn, xp, yp) = (
            rows as i64,
            n as i64,
            xb.ptr_at(xc.layout().offset),
            out.ptr(),
        );
        // `max_rows_*`: reads rows * n contiguous elements, writes rows.
        launch!(op, ctx, f, row_grid(rows), r, nn, xp, yp)?;
    }
    Ok(tensor(out, out_shape))
}
