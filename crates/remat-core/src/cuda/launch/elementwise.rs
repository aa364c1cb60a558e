//! Elementwise launches: unary and binary maps over strided/broadcast views, contiguous
//! copies, empty and filled tensors, casts, `where`, and the in-place updates (`axpy`,
//! strided copy/add into a view, fill).

use super::common::{buffer, grid, kernel_name, launch, launch_err, plan, tensor};
use crate::cuda::context::DeviceContext;
use crate::cuda::context::{self, guarded};
use crate::cuda::storage::CudaBuffer;
use crate::cuda::typed_kernels::{cast_name, name as typed, Typed};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::numel;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

/// Row `code` of the generated `unary_op` (see `ops::elementwise`; 0: copy) over every
/// element of `x`, into a new contiguous tensor of `x`'s shape (p: the row's scalar).
pub fn unary(op: &str, code: i32, x: &Tensor, p: f64) -> Result<Tensor> {
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let shape = x.shape();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, x.dtype())?;
    if n > 0 {
        let kl = plan(op, shape, &[x.layout()])?;
        let f = ctx.function(op, kernel_name("unary", x.dtype()))?;
        let (nn, xp, yp) = (n as i64, xb.ptr_at(x.layout().offset), out.ptr());
        guarded(op, || {
            let mut b = ctx.stream.launch_builder(&f);
            b.arg(&code).arg(&p).arg(&nn).arg(&xp).arg(&kl[0]).arg(&yp);
            // SAFETY: the argument list matches `unary_*`; every index the kernel reads is
            // inside the view of a live buffer, and it writes exactly n elements of `out`.
            unsafe { b.launch(grid(n)) }
                .map(|_| ())
                .map_err(launch_err(op, &ctx))
        })?;
    }
    Ok(tensor(out, shape))
}

/// Row `code` of the generated `binary_op` over the broadcast of `a` and `b` (same dtype,
/// same device) to `shape` (p: the row's scalar).
pub fn binary(
    op: &str,
    code: i32,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    p: f64,
) -> Result<Tensor> {
    let (ab, bb) = (buffer(op, a)?, buffer(op, b)?);
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(op, "cuda kernel operands must share a dtype"));
    }
    let ctx = ab.context().clone();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, a.dtype())?;
    if n > 0 {
        let la = a.layout().broadcast_to(op, shape)?;
        let lb = b.layout().broadcast_to(op, shape)?;
        let kl = plan(op, shape, &[&la, &lb])?;
        let f = ctx.function(op, kernel_name("binary", a.dtype()))?;
        let nn = n as i64;
        let (ap, bp, yp) = (ab.ptr_at(la.offset), bb.ptr_at(lb.offset), out.ptr());
        guarded(op, || {
            let mut l = ctx.stream.launch_builder(&f);
            l.arg(&code)
                .arg(&p)
                .arg(&nn)
                .arg(&ap)
                .arg(&kl[0])
                .arg(&bp)
                .arg(&kl[1])
                .arg(&yp);
            // SAFETY: as in `unary`, for both operands.
            unsafe { l.launch(grid(n)) }
                .map(|_| ())
                .map_err(launch_err(op, &ctx))
        })?;
    }
    Ok(tensor(out, shape))
}

/// A contiguous copy of `x` (any strides, broadcast included), any dtype.
pub fn copy(op: &str, x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_float() {
        // Case 0 of the generated `unary_op` is the plain copy.
        return unary(op, 0, x, 0.0);
    }
    let out = empty(op, x.device(), x.shape(), x.dtype())?;
    copy_into(op, x, &out, false)?;
    Ok(out)
}

/// A new uninitialised tensor of `shape` on `device` (the caller writes every element).
pub fn empty(op: &str, device: Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let ctx = context::get(op, device)?;
    Ok(tensor(
        CudaBuffer::alloc(op, &ctx, numel(shape), dtype)?,
        shape,
    ))
}

/// A new tensor of `shape` on `device` filled with `value` (converted to `dtype` as
/// `Scalar::from_f64` does).
pub fn full(op: &str, device: Device, shape: &[usize], dtype: DType, value: f64) -> Result<Tensor> {
    let ctx = context::get(op, device)?;
    let n = numel(shape);
    let out = tensor(CudaBuffer::alloc(op, &ctx, n, dtype)?, shape);
    fill_inplace(op, &out, value)?;
    Ok(out)
}

/// Queue `fill_*` over the `n` contiguous elements at `yp` with `value` in `dtype`.
fn launch_fill(
    op: &str,
    ctx: &DeviceContext,
    n: usize,
    yp: u64,
    dtype: DType,
    value: f64,
) -> Result<()> {
    use crate::dtype::Scalar;
    let f = ctx.function(op, typed(Typed::Fill, dtype))?;
    let nn = n as i64;
    let (v32, v64, vi64, vi32, vb) = (
        value as f32,
        value,
        <i64 as Scalar>::from_f64(value),
        <i32 as Scalar>::from_f64(value),
        <u8 as Scalar>::from_f64(value),
    );
    // `fill_*`: writes n contiguous elements from yp, the value in the kernel's dtype.
    match dtype {
        DType::F32 => launch!(op, ctx, f, grid(n), nn, v32, yp),
        DType::F64 => launch!(op, ctx, f, grid(n), nn, v64, yp),
        DType::I64 => launch!(op, ctx, f, grid(n), nn, vi64, yp),
        DType::I32 => launch!(op, ctx, f, grid(n), nn, vi32, yp),
        DType::Bool => launch!(op, ctx, f, grid(n), nn, vb, yp),
        DType::BF16 | DType::F16 => unreachable!("no {dtype} buffers on cuda"),
    }
}

/// `x` converted to `dtype` as a new contiguous tensor (a copy even when the dtype matches).
pub fn cast(op: &str, x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.dtype() == dtype {
        return copy(op, x);
    }
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let shape = x.shape();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, dtype)?;
    if n > 0 {
        let kl = plan(op, shape, &[x.layout()])?;
        let f = ctx.function(op, cast_name(x.dtype(), dtype))?;
        let (nn, xp, yp) = (n as i64, xb.ptr_at(x.layout().offset), out.ptr());
        guarded(op, || {
            let mut l = ctx.stream.launch_builder(&f);
            l.arg(&nn).arg(&xp).arg(&kl[0]).arg(&yp);
            // SAFETY: matches `cast_*`; reads the view, writes n elements of `out`.
            unsafe { l.launch(grid(n)) }
                .map(|_| ())
                .map_err(launch_err(op, &ctx))
        })?;
    }
    Ok(tensor(out, shape))
}

/// `dst += alpha * src` in place; `dst` contiguous, `src` (same dtype and device) already
/// broadcast-compatible with `dst`'s shape and not sharing its storage.
pub fn axpy_inplace(op: &str, dst: &Tensor, src: &Tensor, alpha: f64) -> Result<()> {
    let (db, sb) = (buffer(op, dst)?, buffer(op, src)?);
    if dst.dtype() != src.dtype() {
        return Err(Error::dtype(op, "cuda kernel operands must share a dtype"));
    }
    let ctx = db.context().clone();
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let ls = src.layout().broadcast_to(op, dst.shape())?;
    let kl = plan(op, dst.shape(), &[&ls])?;
    let f = ctx.function(op, kernel_name("axpy", dst.dtype()))?;
    let (nn, xp, yp) = (
        n as i64,
        sb.ptr_at(ls.offset),
        db.ptr_at(dst.layout().offset),
    );
    let (a32, a64) = (alpha as f32, alpha);
    guarded(op, || {
        let mut l = ctx.stream.launch_builder(&f);
        l.arg(&nn);
        match dst.dtype() {
            DType::F32 => l.arg(&a32),
            _ => l.arg(&a64),
        };
        l.arg(&xp).arg(&kl[0]).arg(&yp);
        // SAFETY: matches `axpy_*`; `dst` is contiguous with n elements from its offset.
        unsafe { l.launch(grid(n)) }
            .map(|_| ())
            .map_err(launch_err(op, &ctx))
    })
}

/// `a` where the bool `cond` is true, else `b`, over the broadcast of the three (`a` and `b`
/// of one dtype, all on one device) to `shape`.
pub fn where_(op: &str, cond: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (cb, ab, bb) = (buffer(op, cond)?, buffer(op, a)?, buffer(op, b)?);
    if cond.dtype() != DType::Bool || a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            "cuda where takes a bool condition and operands of one dtype",
        ));
    }
    let ctx = ab.context().clone();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, a.dtype())?;
    if n > 0 {
        let lc = cond.layout().broadcast_to(op, shape)?;
        let la = a.layout().broadcast_to(op, shape)?;
        let lb = b.layout().broadcast_to(op, shape)?;
        let kl = plan(op, shape, &[&lc, &la, &lb])?;
        let f = ctx.function(op, typed(Typed::Where, a.dtype()))?;
        let (nn, cp, ap, bp, yp) = (
            n as i64,
            cb.ptr_at(lc.offset),
            ab.ptr_at(la.offset),
            bb.ptr_at(lb.offset),
            out.ptr(),
        );
        let (k0, k1, k2) = (kl[0], kl[1], kl[2]);
        // `where_*`: reads the three broadcast views, writes n elements of `out`.
        launch!(op, ctx, f, grid(n), nn, cp, k0, ap, k1, bp, k2, yp)?;
    }
    Ok(tensor(out, shape))
}

/// Copy (or with `add`, add) the elements of `src` into the view `dst` (same shape, dtype
/// and device; `dst` visits no position twice and does not overlap `src`) in place.
pub fn copy_into(op: &str, src: &Tensor, dst: &Tensor, add: bool) -> Result<()> {
    let (sb, db) = (buffer(op, src)?, buffer(op, dst)?);
    if src.dtype() != dst.dtype() || src.shape() != dst.shape() {
        return Err(Error::dtype(
            op,
            "strided copy between different dtypes or shapes",
        ));
    }
    let ctx = db.context().clone();
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let kl = plan(op, dst.shape(), &[src.layout(), dst.layout()])?;
    let name = if add {
        kernel_name("strided_add", dst.dtype())
    } else {
        typed(Typed::StridedCopy, dst.dtype())
    };
    let f = ctx.function(op, name)?;
    let (nn, xp, yp) = (
        n as i64,
        sb.ptr_at(src.layout().offset),
        db.ptr_at(dst.layout().offset),
    );
    let (k0, k1) = (kl[0], kl[1]);
    // `strided_copy_*` / `strided_add_*`: reads the view of src, writes the view of dst.
    launch!(op, ctx, f, grid(n), nn, xp, k0, yp, k1)
}

/// Set the `n` elements of the contiguous tensor `dst` to `value` in place.
pub fn fill_inplace(op: &str, dst: &Tensor, value: f64) -> Result<()> {
    let db = buffer(op, dst)?;
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let yp = db.ptr_at(dst.layout().offset);
    launch_fill(op, db.context(), n, yp, dst.dtype(), value)
}

/// A contiguous copy of `x` with the axes in `flipped` reversed: the `strided_copy` kernel
/// reads `x` from the element at the end of every flipped axis with that axis' stride
/// negated (kernel layouts take signed strides; views' layouts cannot). Axes of extent 1
/// are dropped; more than [`MAX_DIMS`](crate::cuda::kernels::MAX_DIMS) others is refused.
pub fn flip(op: &str, x: &Tensor, flipped: &[usize]) -> Result<Tensor> {
    use crate::cuda::kernels::{KLayout, MAX_DIMS};
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let shape = x.shape();
    let out = tensor(CudaBuffer::alloc(op, &ctx, numel(shape), x.dtype())?, shape);
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let (xl, ol) = (x.layout(), out.layout());
    let axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] != 1).collect();
    if axes.len() > MAX_DIMS {
        return Err(Error::device(
            op,
            format!(
                "tensors with more than {MAX_DIMS} axes of extent > 1 are not supported on \
                 cuda yet (got {})",
                axes.len()
            ),
        ));
    }
    let (mut kx, mut ky) = (KLayout::default(), KLayout::default());
    kx.ndim = axes.len() as i32;
    ky.ndim = axes.len() as i32;
    let mut start = xl.offset;
    for (j, &a) in axes.iter().enumerate() {
        let (d, s) = (shape[a] as i64, xl.strides[a] as i64);
        kx.shape[j] = d;
        ky.shape[j] = d;
        ky.strides[j] = ol.strides[a] as i64;
        if flipped.contains(&a) {
            start += (shape[a] - 1) * xl.strides[a];
            kx.strides[j] = -s;
        } else {
            kx.strides[j] = s;
        }
    }
    let f = ctx.function(op, typed(Typed::StridedCopy, x.dtype()))?;
    let ob = buffer(op, &out)?;
    let (nn, xp, yp) = (n as i64, xb.ptr_at(start), ob.ptr_at(ol.offset));
    // `strided_copy_*`: reads x through kx (negative strides on flipped axes), writes out.
    launch!(op, ctx, f, grid(n), nn, xp, kx, yp, ky)?;
    Ok(out)
}
