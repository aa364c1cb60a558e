//! Neural-network launches: softmax and log-softmax along an axis, layer norm, dropout, and
//! mean cross-entropy, with the backward kernels of each.

use super::common::{buffer, contig, grid, kernel_name, launch, opt_ptr, plan, row_grid, tensor};
use super::elementwise::{cast, copy, full};
use super::reduce::sum_rows;
use crate::cuda::storage::CudaBuffer;
use crate::error::Result;
use crate::layout::{numel, Layout};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use cudarc::driver::PushKernelArg;

/// The permutation that moves `axis` last, and `x` permuted that way as a contiguous tensor
/// (a 0-d tensor is one row of one element).
fn axis_last(op: &str, x: &Tensor, axis: usize) -> Result<(Vec<usize>, Tensor)> {
    if x.ndim() == 0 {
        let v = Tensor::from_data(TensorData {
            storage: x.storage().clone(),
            layout: Layout {
                offset: x.layout().offset,
                ..Layout::contiguous(&[1])
            },
        });
        return Ok((vec![0], v));
    }
    let mut perm: Vec<usize> = (0..x.ndim()).filter(|&a| a != axis).collect();
    perm.push(axis);
    let v = Tensor::from_data(TensorData {
        storage: x.storage().clone(),
        layout: x.layout().permute(&perm),
    });
    Ok((perm, contig(op, &v)?))
}

/// Undo [`axis_last`]: `y` (contiguous, permuted) as a contiguous tensor of `shape`.
fn axis_back(op: &str, y: Tensor, perm: &[usize], shape: &[usize]) -> Result<Tensor> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(Tensor::from_data(TensorData {
            storage: y.storage().clone(),
            layout: Layout::contiguous(shape),
        }));
    }
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let v = Tensor::from_data(TensorData {
        storage: y.storage().clone(),
        layout: y.layout().permute(&inv),
    });
    copy(op, &v)
}

/// Softmax (or log-softmax with `log`) of `x` along `axis`, one block per row after moving
/// the axis last.
pub fn softmax(op: &str, x: &Tensor, axis: usize, log: bool) -> Result<Tensor> {
    let (perm, xc) = axis_last(op, x, axis)?;
    let xb = buffer(op, &xc)?;
    let ctx = xb.context().clone();
    let n = *xc.shape().last().unwrap_or(&1);
    let total = xc.numel();
    let out = CudaBuffer::alloc(op, &ctx, total, xc.dtype())?;
    if total > 0 && n > 0 {
        let rows = total / n;
        let f = ctx.function(op, kernel_name("softmax", xc.dtype()))?;
        let (r, nn, xp, yp, lg) = (
            rows as i64,
            n as i64,
            xb.ptr_at(xc.layout().offset),
            out.ptr(),
            log as i32,
        );
        // `softmax_*`: reads and writes rows * n contiguous elements.
        launch!(op, ctx, f, row_grid(rows), r, nn, xp, yp, lg)?;
    }
    axis_back(op, tensor(out, xc.shape()), &perm, x.shape())
}

/// The input gradient of softmax (log-softmax with `log`) along `axis` from the output `y`
/// and its gradient `g` (same dtype and shape).
pub fn softmax_backward(
    op: &str,
    g: &Tensor,
    y: &Tensor,
    axis: usize,
    log: bool,
) -> Result<Tensor> {
    let (perm, gc) = axis_last(op, g, axis)?;
    let (_, yc) = axis_last(op, y, axis)?;
    let (gb, yb) = (buffer(op, &gc)?, buffer(op, &yc)?);
    let ctx = yb.context().clone();
    let n = *yc.shape().last().unwrap_or(&1);
    let total = yc.numel();
    let out = CudaBuffer::alloc(op, &ctx, total, yc.dtype())?;
    if total > 0 && n > 0 {
        let rows = total / n;
        let f = ctx.function(op, kernel_name("softmax_bwd", yc.dtype()))?;
        let (r, nn, gp, yp, op_, lg) = (
            rows as i64,
            n as i64,
            gb.ptr_at(gc.layout().offset),
            yb.ptr_at(yc.layout().offset),
            out.ptr(),
            log as i32,
        );
        // `softmax_bwd_*`: three contiguous rows * n buffers.
        launch!(op, ctx, f, row_grid(rows), r, nn, gp, yp, op_, lg)?;
    }
    axis_back(op, tensor(out, yc.shape()), &perm, y.shape())
}

/// Layer norm of `x` over its last axis with optional `(n,)` weight and bias (all of one
/// dtype, on one device).
pub fn layer_norm(
    op: &str,
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let xc = contig(op, x)?;
    let wc = w.map(|w| contig(op, w)).transpose()?;
    let bc = b.map(|b| contig(op, b)).transpose()?;
    let xb = buffer(op, &xc)?;
    let ctx = xb.context().clone();
    let n = *xc.shape().last().unwrap_or(&1);
    let total = xc.numel();
    let out = CudaBuffer::alloc(op, &ctx, total, xc.dtype())?;
    if total > 0 && n > 0 {
        let rows = total / n;
        let f = ctx.function(op, kernel_name("layer_norm", xc.dtype()))?;
        let (r, nn, xp, yp) = (
            rows as i64,
            n as i64,
            xb.ptr_at(xc.layout().offset),
            out.ptr(),
        );
        let (wp, bp) = (opt_ptr(op, wc.as_ref())?, opt_ptr(op, bc.as_ref())?);
        // `layer_norm_*`: x and y hold rows * n elements, w and b (or null) n each.
        launch!(op, ctx, f, row_grid(rows), r, nn, eps, xp, wp, bp, yp)?;
    }
    Ok(tensor(out, x.shape()))
}

/// Layer-norm backward pieces: the input gradient (when `need_x`) and `g * xhat` (when
/// `need_gxhat`; its sums over the leading axes are the weight gradient), both of `x`'s shape.
pub fn layer_norm_backward(
    op: &str,
    x: &Tensor,
    g: &Tensor,
    w: Option<&Tensor>,
    eps: f64,
    need_x: bool,
    need_gxhat: bool,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let xc = contig(op, x)?;
    let gc = contig(op, g)?;
    let wc = w.map(|w| contig(op, w)).transpose()?;
    let xb = buffer(op, &xc)?;
    let ctx = xb.context().clone();
    let n = *xc.shape().last().unwrap_or(&1);
    let total = xc.numel();
    let dx = need_x
        .then(|| CudaBuffer::alloc(op, &ctx, total, xc.dtype()))
        .transpose()?;
    let gxhat = need_gxhat
        .then(|| CudaBuffer::alloc(op, &ctx, total, xc.dtype()))
        .transpose()?;
    if total > 0 && n > 0 && (need_x || need_gxhat) {
        let rows = total / n;
        let f = ctx.function(op, kernel_name("layer_norm_bwd", xc.dtype()))?;
        let (r, nn, xp, gp, wp) = (
            rows as i64,
            n as i64,
            xb.ptr_at(xc.layout().offset),
            opt_ptr(op, Some(&gc))?,
            opt_ptr(op, wc.as_ref())?,
        );
        let dp = dx.as_ref().map_or(0, |b| b.ptr());
        let hp = gxhat.as_ref().map_or(0, |b| b.ptr());
        // `layer_norm_bwd_*`: x, g, dx, gxhat hold rows * n elements (or are null), w n.
        launch!(op, ctx, f, row_grid(rows), r, nn, eps, xp, gp, wp, dp, hp)?;
    }
    Ok((
        dx.map(|b| tensor(b, x.shape())),
        gxhat.map(|b| tensor(b, x.shape())),
    ))
}

/// Inverted dropout of `x` (C order) with the CPU's mask: element `i` is kept (and scaled by
/// `1 / (1 - p)`) iff `rng::uniform(key, i) >= p`.
pub fn dropout(op: &str, x: &Tensor, key: crate::rng::RngState, p: f64) -> Result<Tensor> {
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let shape = x.shape();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, x.dtype())?;
    if n > 0 {
        let kl = plan(op, shape, &[x.layout()])?;
        let f = ctx.function(op, kernel_name("dropout", x.dtype()))?;
        let (nn, seed, offset, xp, yp) = (
            n as i64,
            key.seed,
            key.offset,
            xb.ptr_at(x.layout().offset),
            out.ptr(),
        );
        let lx = kl[0];
        // `dropout_*`: reads the view of x, writes n elements of `out`.
        launch!(op, ctx, f, grid(n), nn, seed, offset, p, xp, lx, yp)?;
    }
    Ok(tensor(out, shape))
}

/// Summed cross-entropy of contiguous-or-not `(rows, c)` logits `x` against class indices
/// (validated, `rows` of them) as a 0-d tensor: a per-row fused log-sum-exp loss, then the
/// chunked sum (the caller divides by `rows`).
pub fn cross_entropy(
    op: &str,
    x: &Tensor,
    target: &[i64],
    rows: usize,
    c: usize,
) -> Result<Tensor> {
    let xc = contig(op, x)?;
    let xb = buffer(op, &xc)?;
    let ctx = xb.context().clone();
    let dt = xc.dtype();
    if rows == 0 || c == 0 {
        // An empty batch gives 0 / 0 = NaN, as on the CPU.
        return full(op, ctx.device(), &[], dt, f64::NAN);
    }
    let tb = CudaBuffer::from_host_i64(op, &ctx, target)?;
    let losses = CudaBuffer::alloc(op, &ctx, rows, dt)?;
    let f = ctx.function(op, kernel_name("ce_fwd", dt))?;
    let (r, nn, xp, tp, lp) = (
        rows as i64,
        c as i64,
        xb.ptr_at(xc.layout().offset),
        tb.ptr(),
        losses.ptr(),
    );
    // `ce_fwd_*`: reads rows * c logits and rows indices, writes rows losses.
    launch!(op, ctx, f, row_grid(rows), r, nn, xp, tp, lp)?;
    // The sum of the losses; the op divides by the batch size.
    sum_rows(op, &tensor(losses, &[rows]), 1, rows, &[])
}

/// The logits' gradient of [`cross_entropy`]: `(softmax(x) - onehot(target)) * g / rows`
/// with `g` the 0-d output gradient (read on the device, no host round trip).
pub fn cross_entropy_backward(
    op: &str,
    x: &Tensor,
    target: &[i64],
    g: &Tensor,
    rows: usize,
    c: usize,
) -> Result<Tensor> {
    let xc = contig(op, x)?;
    let gc = contig(op, &cast(op, g, xc.dtype())?)?;
    let xb = buffer(op, &xc)?;
    let ctx = xb.context().clone();
    let dt = xc.dtype();
    let total = rows * c;
    let out = CudaBuffer::alloc(op, &ctx, total, dt)?;
    if total > 0 {
        let tb = CudaBuffer::from_host_i64(op, &ctx, target)?;
        let f = ctx.function(op, kernel_name("ce_bwd", dt))?;
        let (r, nn, xp, tp, gp, rd, op_) = (
            rows as i64,
            c as i64,
            xb.ptr_at(xc.layout().offset),
            tb.ptr(),
            buffer(op, &gc)?.ptr_at(gc.layout().offset),
            rows as f64,
            out.ptr(),
        );
        // `ce_bwd_*`: reads rows * c logits, rows indices and one gradient element, writes
        // rows * c elements of `out`.
        launch!(op, ctx, f, row_grid(rows), r, nn, xp, tp, gp, rd, op_)?;
    }
    Ok(tensor(out, x.shape()))
}
