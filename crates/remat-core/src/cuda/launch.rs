//! Kernel launches that produce tensors: elementwise maps and zips over strided/broadcast
//! views, fills, casts, contiguous copies, row sums, and host/device transfers. Every output
//! is a fresh contiguous device tensor on the inputs' device.

use super::context::{self, guarded, DeviceContext};
use super::kernels::{KLayout, BLOCK, MAX_DIMS};
use super::storage::{driver_error, CudaBuffer};
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::{numel, Dims, Layout};
use crate::storage::Storage;
use crate::tensor::{Tensor, TensorData};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use smallvec::SmallVec;
use std::sync::Arc;

pub use super::codes::{BinaryCode, UnaryCode};

/// The buffer behind a CUDA tensor.
pub fn buffer<'a>(op: &str, t: &'a Tensor) -> Result<&'a CudaBuffer> {
    t.storage().cuda().ok_or_else(|| {
        Error::device(
            op,
            format!("expected a tensor on a CUDA device, got {}", t.device()),
        )
    })
}

/// A new contiguous tensor over a device buffer.
pub fn tensor(buf: CudaBuffer, shape: &[usize]) -> Tensor {
    Tensor::from_data(TensorData {
        storage: Arc::new(Storage::from_cuda(buf)),
        layout: Layout::contiguous(shape),
    })
}

/// Kernel descriptions of `layouts` (each already broadcast to `shape`), with axes of extent
/// 1 dropped and axes that are contiguous in every operand merged, so most kernels index one
/// or two axes. Error when more than [`MAX_DIMS`] axes remain.
pub fn plan(op: &str, shape: &[usize], layouts: &[&Layout]) -> Result<Vec<KLayout>> {
    let mut cshape: Dims = SmallVec::new();
    let mut cstrides: Vec<Dims> = vec![SmallVec::new(); layouts.len()];
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let merge = !cshape.is_empty()
            && layouts
                .iter()
                .enumerate()
                .all(|(k, l)| cstrides[k].last().copied().unwrap_or(0) == l.strides[i] * d);
        if merge {
            let last = cshape.len() - 1;
            cshape[last] *= d;
            for (k, l) in layouts.iter().enumerate() {
                cstrides[k][last] = l.strides[i];
            }
        } else {
            cshape.push(d);
            for (k, l) in layouts.iter().enumerate() {
                cstrides[k].push(l.strides[i]);
            }
        }
    }
    if cshape.len() > MAX_DIMS {
        return Err(Error::device(
            op,
            format!(
                "views with more than {MAX_DIMS} non-mergeable axes are not supported on cuda \
                 yet (got {}); make the tensor contiguous first",
                cshape.len()
            ),
        ));
    }
    Ok((0..layouts.len())
        .map(|k| {
            let mut kl = KLayout {
                ndim: cshape.len() as i32,
                ..Default::default()
            };
            for (j, &d) in cshape.iter().enumerate() {
                kl.shape[j] = d as i64;
                kl.strides[j] = cstrides[k][j] as i64;
            }
            if cshape.is_empty() {
                // A single element: one axis of extent 1.
                kl.ndim = 1;
                kl.shape[0] = 1;
            }
            kl
        })
        .collect())
}

/// Grid for `n` elements with grid-stride loops.
fn grid(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1 << 20) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn kernel_name(base: &str, dtype: DType) -> &'static str {
    match (base, dtype) {
        ("unary", DType::F32) => "unary_f32",
        ("unary", DType::F64) => "unary_f64",
        ("binary", DType::F32) => "binary_f32",
        ("binary", DType::F64) => "binary_f64",
        ("fill", DType::F32) => "fill_f32",
        ("fill", DType::F64) => "fill_f64",
        ("axpy", DType::F32) => "axpy_f32",
        ("axpy", DType::F64) => "axpy_f64",
        ("sum", DType::F32) => "sum_chunks_f32",
        ("sum", DType::F64) => "sum_chunks_f64",
        _ => "unknown",
    }
}

fn launch_err(op: &str, ctx: &DeviceContext) -> impl Fn(cudarc::driver::DriverError) -> Error {
    let (op, device) = (op.to_string(), ctx.device());
    move |e| driver_error(&op, device, 0, e)
}

/// `f(x)` elementwise into a new contiguous tensor of `x`'s shape.
pub fn unary(op: &str, code: UnaryCode, x: &Tensor) -> Result<Tensor> {
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let shape = x.shape();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, x.dtype())?;
    if n > 0 {
        let kl = plan(op, shape, &[x.layout()])?;
        let f = ctx.function(op, kernel_name("unary", x.dtype()))?;
        let (code, nn, xp, yp) = (
            code as i32,
            n as i64,
            xb.ptr_at(x.layout().offset),
            out.ptr(),
        );
        guarded(op, || {
            let mut b = ctx.stream.launch_builder(&f);
            b.arg(&code).arg(&nn).arg(&xp).arg(&kl[0]).arg(&yp);
            // SAFETY: the argument list matches `unary_*`; every index the kernel reads is
            // inside the view of a live buffer, and it writes exactly n elements of `out`.
            unsafe { b.launch(grid(n)) }
                .map(|_| ())
                .map_err(launch_err(op, &ctx))
        })?;
    }
    Ok(tensor(out, shape))
}

/// `f(a, b)` over the broadcast of `a` and `b` (same dtype, same device) to `shape`.
pub fn binary(
    op: &str,
    code: BinaryCode,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
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
        let (code, nn) = (code as i32, n as i64);
        let (ap, bp, yp) = (ab.ptr_at(la.offset), bb.ptr_at(lb.offset), out.ptr());
        guarded(op, || {
            let mut l = ctx.stream.launch_builder(&f);
            l.arg(&code)
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

/// A contiguous copy of `x` (any strides, broadcast included).
pub fn copy(op: &str, x: &Tensor) -> Result<Tensor> {
    unary(op, UnaryCode::Copy, x)
}

/// A new tensor of `shape` on `device` filled with `value`.
pub fn full(op: &str, device: Device, shape: &[usize], dtype: DType, value: f64) -> Result<Tensor> {
    let ctx = context::get(op, device)?;
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, dtype)?;
    if n > 0 {
        let f = ctx.function(op, kernel_name("fill", dtype))?;
        let (nn, yp) = (n as i64, out.ptr());
        let (v32, v64) = (value as f32, value);
        guarded(op, || {
            let mut l = ctx.stream.launch_builder(&f);
            l.arg(&nn);
            match dtype {
                DType::F32 => l.arg(&v32),
                DType::F64 => l.arg(&v64),
            };
            l.arg(&yp);
            // SAFETY: matches `fill_*`; writes exactly n elements of `out`.
            unsafe { l.launch(grid(n)) }
                .map(|_| ())
                .map_err(launch_err(op, &ctx))
        })?;
    }
    Ok(tensor(out, shape))
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
        let name = match dtype {
            DType::F64 => "cast_f32_f64",
            DType::F32 => "cast_f64_f32",
        };
        let f = ctx.function(op, name)?;
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

/// `t`'s elements in C order as a host vector of `T` (copies; waits for queued work).
pub fn to_host_vec<T: Element>(op: &str, t: &Tensor) -> Result<Vec<T>> {
    let c = if t.dtype() == T::DTYPE && t.is_contiguous() {
        t.clone()
    } else {
        cast(op, t, T::DTYPE)?
    };
    buffer(op, &c)?.to_host::<T>(op, c.layout().offset, c.numel())
}

/// `t` copied to `device` as a new contiguous tensor (no graph).
pub fn transfer(op: &str, t: &Tensor, device: Device) -> Result<Tensor> {
    match (t.device(), device) {
        (Device::Cpu, Device::Cpu) => crate::ops::contiguous_copy(t, t.dtype()),
        (Device::Cpu, Device::Cuda(_)) => {
            let ctx = context::get(op, device)?;
            crate::dispatch!(t.dtype(), T => {
                let host = crate::cpu::catch_oom(op, || Ok(crate::cpu::gather::<T>(t.data())))?;
                Ok(tensor(CudaBuffer::from_host(op, &ctx, &host)?, t.shape()))
            })
        }
        (Device::Cuda(_), Device::Cpu) => crate::dispatch!(t.dtype(), T => {
            let v = to_host_vec::<T>(op, t)?;
            Ok(crate::ops::from_vec(v, t.shape()))
        }),
        (Device::Cuda(a), Device::Cuda(b)) if a == b => copy(op, t),
        // Between GPUs through the host: simple and rare.
        (Device::Cuda(_), Device::Cuda(_)) => {
            let host = transfer(op, t, Device::Cpu)?;
            transfer(op, &host, device)
        }
    }
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
            DType::F64 => l.arg(&a64),
        };
        l.arg(&xp).arg(&kl[0]).arg(&yp);
        // SAFETY: matches `axpy_*`; `dst` is contiguous with n elements from its offset.
        unsafe { l.launch(grid(n)) }
            .map(|_| ())
            .map_err(launch_err(op, &ctx))
    })
}

/// Storage offsets of each batch matrix of `l` (at least 2-D) broadcast to `batch`.
fn batch_offsets(op: &str, l: &Layout, batch: &[usize]) -> Result<Vec<usize>> {
    let nd = l.ndim();
    let bl = Layout {
        shape: l.shape[..nd - 2].into(),
        strides: l.strides[..nd - 2].into(),
        offset: l.offset,
    }
    .broadcast_to(op, batch)?;
    if batch.is_empty() {
        return Ok(vec![l.offset]);
    }
    let mut v = Vec::with_capacity(numel(batch));
    bl.for_each_index(|i| v.push(i));
    Ok(v)
}

/// The matrix product of stacks `a (..., m, k)` and `b (..., k, n)` (both at least 2-D, same
/// dtype and device, shapes validated) with batch axes broadcast to `batch`, through cuBLAS:
/// a tensor of shape `(batch..., m, n)`. With `init` (a tensor broadcastable to the result,
/// e.g. a bias) the product is added to it.
pub fn matmul_nd(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    init: Option<&Tensor>,
) -> Result<Tensor> {
    use super::blas::{blas_view, gemm, BlasOperand};
    let usable = |t: &Tensor| {
        let l = t.layout();
        let nd = l.ndim();
        blas_view(
            l.strides[nd - 2],
            l.strides[nd - 1],
            l.shape[nd - 2],
            l.shape[nd - 1],
        )
        .is_some()
    };
    // Views cuBLAS cannot read (neither unit stride, overlapping rows) are copied first.
    let a = if usable(a) { a.clone() } else { copy(op, a)? };
    let b = if usable(b) { b.clone() } else { copy(op, b)? };
    let (la, lb) = (a.layout(), b.layout());
    let (na, nb) = (la.ndim(), lb.ndim());
    let (m, k, n) = (la.shape[na - 2], la.shape[na - 1], lb.shape[nb - 1]);
    let mut shape: Dims = batch.into();
    shape.push(m);
    shape.push(n);
    let (out, beta) = match init {
        Some(i) => {
            let l = i.layout().broadcast_to(op, &shape)?;
            let v = Tensor::from_data(TensorData {
                storage: i.storage().clone(),
                layout: l,
            });
            (cast(op, &v, a.dtype())?, 1.0)
        }
        None => (
            tensor(
                CudaBuffer::alloc(op, buffer(op, &a)?.context(), numel(&shape), a.dtype())?,
                &shape,
            ),
            0.0,
        ),
    };
    if k == 0 && init.is_none() {
        return full(op, a.device(), &shape, a.dtype(), 0.0);
    }
    let oa = BlasOperand {
        buf: buffer(op, &a)?,
        offsets: batch_offsets(op, la, batch)?,
        rs: la.strides[na - 2],
        cs: la.strides[na - 1],
        rows: m,
        cols: k,
    };
    let ob = BlasOperand {
        buf: buffer(op, &b)?,
        offsets: batch_offsets(op, lb, batch)?,
        rs: lb.strides[nb - 2],
        cs: lb.strides[nb - 1],
        rows: k,
        cols: n,
    };
    gemm(op, a.dtype(), &oa, &ob, m, k, n, buffer(op, &out)?, beta)?;
    Ok(out)
}

/// Wait for all queued work on every device used so far.
pub fn synchronize_all() -> Result<()> {
    for c in context::created() {
        c.synchronize("synchronize")?;
    }
    Ok(())
}
