//! Launches of the kernels every dtype has (`typed_kernels`) that pick elements by index or
//! compare them: `index_select` / `index_add`, `gather` / `scatter_add` (positions already
//! checked on the host and uploaded as int64), and comparisons with a bool result.

use super::common::{buffer, contig, grid, launch, plan, tensor};
use super::elementwise::{copy, full};
use crate::cuda::storage::CudaBuffer;
use crate::cuda::typed_kernels::{name, Typed};
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, numel, Dims, Layout};
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

/// `pos` (checked positions) as an int64 buffer on `like`'s device.
fn upload(op: &str, like: &Tensor, pos: &[usize]) -> Result<CudaBuffer> {
    let v: Vec<i64> = pos.iter().map(|&p| p as i64).collect();
    CudaBuffer::from_host(op, buffer(op, like)?.context(), &v)
}

/// The slices of `x` at positions `pos` (each `< x.shape[dim]`) along `dim`: shape `x.shape`
/// with `dim` of extent `pos.len()`.
pub fn index_select(op: &str, x: &Tensor, dim: usize, pos: &[usize]) -> Result<Tensor> {
    let x = contig(op, x)?;
    let shape = x.shape();
    let (outer, n, inner) = (numel(&shape[..dim]), shape[dim], numel(&shape[dim + 1..]));
    let mut oshape: Dims = shape.into();
    oshape[dim] = pos.len();
    let xb = buffer(op, &x)?;
    let ctx = xb.context().clone();
    let total = numel(&oshape);
    let out = CudaBuffer::alloc(op, &ctx, total, x.dtype())?;
    if total > 0 {
        let p = upload(op, &x, pos)?;
        let f = ctx.function(op, name(Typed::IndexSelect, x.dtype()))?;
        let (o, nn, i, k) = (outer as i64, n as i64, inner as i64, pos.len() as i64);
        let (xp, pp, yp) = (xb.ptr_at(x.layout().offset), p.ptr(), out.ptr());
        // `index_select_*`: reads x (contiguous, outer x n x inner) at checked positions,
        // writes the outer x k x inner elements of `out`.
        launch!(op, ctx, f, grid(total), o, nn, i, k, xp, pp, yp)?;
    }
    Ok(tensor(out, &oshape))
}

/// Zeros of `src.shape` with extent `n` along `dim`, plus each slice `j` of `src` along
/// `dim` added at position `pos[j]` (each `< n`), in order of `j` (deterministic).
pub fn index_add(op: &str, src: &Tensor, dim: usize, n: usize, pos: &[usize]) -> Result<Tensor> {
    let src = contig(op, src)?;
    let shape = src.shape();
    let (outer, k, inner) = (numel(&shape[..dim]), shape[dim], numel(&shape[dim + 1..]));
    if pos.len() != k {
        return Err(Error::shape(
            op,
            format!("{} indices for {k} slices", pos.len()),
        ));
    }
    let mut oshape: Dims = shape.into();
    oshape[dim] = n;
    let out = full(op, src.device(), &oshape, src.dtype(), 0.0)?;
    let lines = outer * inner;
    if lines > 0 && k > 0 {
        let sb = buffer(op, &src)?;
        let ctx = sb.context().clone();
        let p = upload(op, &src, pos)?;
        let f = ctx.function(op, name(Typed::IndexAdd, src.dtype()))?;
        let (o, nn, i, kk) = (outer as i64, n as i64, inner as i64, k as i64);
        let (sp, pp, yp) = (
            sb.ptr_at(src.layout().offset),
            p.ptr(),
            buffer(op, &out)?.ptr(),
        );
        // `index_add_*`: one thread per (outer, inner) column adds the k slices in order.
        launch!(op, ctx, f, grid(lines), o, nn, i, kk, sp, pp, yp)?;
    }
    Ok(out)
}

/// `out[p] = x[p with axis dim replaced by pos[p]]` for every position `p` of `ishape` (C
/// order; `ishape` has `x`'s rank and no larger extent off `dim`; positions checked).
pub fn gather(op: &str, x: &Tensor, dim: usize, ishape: &[usize], pos: &[usize]) -> Result<Tensor> {
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let total = numel(ishape);
    let out = CudaBuffer::alloc(op, &ctx, total, x.dtype())?;
    if total > 0 {
        // x's strides over the index's shape, with dim's stride taken out (added per element).
        let xl = x.layout();
        let mut strides = xl.strides.clone();
        strides[dim] = 0;
        let base = Layout {
            shape: ishape.into(),
            strides,
            offset: xl.offset,
        };
        let kl = plan(op, ishape, &[&base])?;
        let p = upload(op, x, pos)?;
        let f = ctx.function(op, name(Typed::Gather, x.dtype()))?;
        let (nn, k0, sd) = (total as i64, kl[0], xl.strides[dim] as i64);
        let (xp, pp, yp) = (xb.ptr_at(xl.offset), p.ptr(), out.ptr());
        // `gather_*`: reads x at the base offset plus pos * stride, writes `total` elements.
        launch!(op, ctx, f, grid(total), nn, xp, k0, sd, pp, yp)?;
    }
    Ok(tensor(out, ishape))
}

/// A contiguous copy of `x` with `src[p]` added at `[p with axis dim replaced by pos[p]]`
/// for each position `p` of `src` (`src` has the index's shape; positions checked). One
/// thread per line along `dim` adds in order, so repeated positions sum deterministically.
pub fn scatter_add(
    op: &str,
    x: &Tensor,
    dim: usize,
    src: &Tensor,
    pos: &[usize],
) -> Result<Tensor> {
    let out = copy(op, x)?;
    let src = contig(op, src)?;
    let ishape = src.shape();
    let len = ishape[dim];
    let mut lshape: Dims = ishape.into();
    lshape[dim] = 1;
    let lines = numel(&lshape);
    if lines == 0 || len == 0 {
        return Ok(out);
    }
    let (ostr, istr) = (contiguous_strides(x.shape()), contiguous_strides(ishape));
    let lo = Layout {
        shape: lshape.clone(),
        strides: ostr.clone(),
        offset: 0,
    };
    let ls = Layout {
        shape: lshape.clone(),
        strides: istr.clone(),
        offset: 0,
    };
    let kl = plan(op, &lshape, &[&lo, &ls])?;
    let sb = buffer(op, &src)?;
    let ctx = sb.context().clone();
    let p = upload(op, &src, pos)?;
    let f = ctx.function(op, name(Typed::ScatterAdd, x.dtype()))?;
    let (nl, nlen, k0, k1) = (lines as i64, len as i64, kl[0], kl[1]);
    let (osd, isd) = (ostr[dim] as i64, istr[dim] as i64);
    let (sp, pp, yp) = (
        sb.ptr_at(src.layout().offset),
        p.ptr(),
        buffer(op, &out)?.ptr(),
    );
    // `scatter_add_*`: thread t walks line t of src/pos and adds into out (contiguous).
    launch!(
        op,
        ctx,
        f,
        grid(lines),
        nl,
        nlen,
        k0,
        k1,
        osd,
        isd,
        sp,
        pp,
        yp
    )?;
    Ok(out)
}

/// Row `code` of the comparison table (eq, ne, lt, le, gt, ge) over the broadcast of `a` and
/// `b` (one dtype, one device) to `shape`: a bool tensor.
pub fn compare(op: &str, code: i32, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (ab, bb) = (buffer(op, a)?, buffer(op, b)?);
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(op, "cuda kernel operands must share a dtype"));
    }
    let ctx = ab.context().clone();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, crate::dtype::DType::Bool)?;
    if n > 0 {
        let la = a.layout().broadcast_to(op, shape)?;
        let lb = b.layout().broadcast_to(op, shape)?;
        let kl = plan(op, shape, &[&la, &lb])?;
        let f = ctx.function(op, name(Typed::Compare, a.dtype()))?;
        let (nn, k0, k1) = (n as i64, kl[0], kl[1]);
        let (ap, bp, yp) = (ab.ptr_at(la.offset), bb.ptr_at(lb.offset), out.ptr());
        // `compare_*`: reads both broadcast views, writes n bools.
        launch!(op, ctx, f, grid(n), code, nn, ap, k0, bp, k1, yp)?;
    }
    Ok(tensor(out, shape))
}
