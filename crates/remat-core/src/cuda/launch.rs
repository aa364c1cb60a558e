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
        ("softmax", DType::F32) => "softmax_f32",
        ("softmax", DType::F64) => "softmax_f64",
        ("softmax_bwd", DType::F32) => "softmax_bwd_f32",
        ("softmax_bwd", DType::F64) => "softmax_bwd_f64",
        ("layer_norm", DType::F32) => "layer_norm_f32",
        ("layer_norm", DType::F64) => "layer_norm_f64",
        ("layer_norm_bwd", DType::F32) => "layer_norm_bwd_f32",
        ("layer_norm_bwd", DType::F64) => "layer_norm_bwd_f64",
        ("max_rows", DType::F32) => "max_rows_f32",
        ("max_rows", DType::F64) => "max_rows_f64",
        ("dropout", DType::F32) => "dropout_f32",
        ("dropout", DType::F64) => "dropout_f64",
        ("where", DType::F32) => "where_f32",
        ("where", DType::F64) => "where_f64",
        ("strided_copy", DType::F32) => "strided_copy_f32",
        ("strided_copy", DType::F64) => "strided_copy_f64",
        ("strided_add", DType::F32) => "strided_add_f32",
        ("strided_add", DType::F64) => "strided_add_f64",
        ("ce_fwd", DType::F32) => "ce_fwd_f32",
        ("ce_fwd", DType::F64) => "ce_fwd_f64",
        ("ce_bwd", DType::F32) => "ce_bwd_f32",
        ("ce_bwd", DType::F64) => "ce_bwd_f64",
        ("sgd", DType::F32) => "sgd_f32",
        ("sgd", DType::F64) => "sgd_f64",
        ("adam", DType::F32) => "adam_f32",
        ("adam", DType::F64) => "adam_f64",
        _ => "unknown",
    }
}

fn launch_err(op: &str, ctx: &DeviceContext) -> impl Fn(cudarc::driver::DriverError) -> Error {
    let (op, device) = (op.to_string(), ctx.device());
    move |e| driver_error(&op, device, 0, e)
}

/// `f(x)` elementwise into a new contiguous tensor of `x`'s shape.
pub fn unary(op: &str, code: UnaryCode, x: &Tensor) -> Result<Tensor> {
    unary_p(op, code, x, 0.0)
}

/// `f(x; p)` elementwise (p: the op's scalar parameter, e.g. the exponent of `PowScalar`).
pub fn unary_p(op: &str, code: UnaryCode, x: &Tensor, p: f64) -> Result<Tensor> {
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

/// `f(a, b)` over the broadcast of `a` and `b` (same dtype, same device) to `shape`.
pub fn binary(
    op: &str,
    code: BinaryCode,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
) -> Result<Tensor> {
    binary_p(op, code, a, b, shape, 0.0)
}

/// `f(a, b; p)` over the broadcast of `a` and `b` to `shape` (p: a scalar parameter).
pub fn binary_p(
    op: &str,
    code: BinaryCode,
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
        let (code, nn) = (code as i32, n as i64);
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

/// A contiguous copy of `x` (any strides, broadcast included).
pub fn copy(op: &str, x: &Tensor) -> Result<Tensor> {
    unary(op, UnaryCode::Copy, x)
}

/// A new uninitialised tensor of `shape` on `device` (the caller writes every element).
pub fn empty(op: &str, device: Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let ctx = context::get(op, device)?;
    Ok(tensor(
        CudaBuffer::alloc(op, &ctx, numel(shape), dtype)?,
        shape,
    ))
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

/// Queue kernel `$f` on `$ctx`'s stream with the given argument variables.
macro_rules! launch {
    ($op:expr, $ctx:expr, $f:expr, $cfg:expr, $($a:expr),+ $(,)?) => {
        guarded($op, || {
            let mut l = $ctx.stream.launch_builder(&$f);
            $( l.arg(&$a); )+
            // SAFETY: each caller passes exactly the kernel's parameter list; every pointer
            // is a live buffer of the sizes the kernel indexes (documented at the caller).
            unsafe { l.launch($cfg) }
                .map(|_| ())
                .map_err(launch_err($op, &$ctx))
        })
    };
}

/// One block of [`BLOCK`] threads per row (grid-stride over rows beyond the grid limit).
fn row_grid(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.clamp(1, 1 << 20) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `x` itself when contiguous, else a contiguous copy.
fn contig(op: &str, x: &Tensor) -> Result<Tensor> {
    if x.is_contiguous() {
        Ok(x.clone())
    } else {
        copy(op, x)
    }
}

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

/// Device address of an optional contiguous operand (0: absent).
fn opt_ptr(op: &str, t: Option<&Tensor>) -> Result<u64> {
    match t {
        Some(t) => Ok(buffer(op, t)?.ptr_at(t.layout().offset)),
        None => Ok(0),
    }
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

/// `a` where `cond` is nonzero, else `b`, over the broadcast of the three (one dtype, one
/// device) to `shape`.
pub fn where_(op: &str, cond: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (cb, ab, bb) = (buffer(op, cond)?, buffer(op, a)?, buffer(op, b)?);
    if cond.dtype() != a.dtype() || a.dtype() != b.dtype() {
        return Err(Error::dtype(op, "cuda kernel operands must share a dtype"));
    }
    let ctx = ab.context().clone();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, a.dtype())?;
    if n > 0 {
        let lc = cond.layout().broadcast_to(op, shape)?;
        let la = a.layout().broadcast_to(op, shape)?;
        let lb = b.layout().broadcast_to(op, shape)?;
        let kl = plan(op, shape, &[&lc, &la, &lb])?;
        let f = ctx.function(op, kernel_name("where", a.dtype()))?;
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
    let base = if add { "strided_add" } else { "strided_copy" };
    let f = ctx.function(op, kernel_name(base, dst.dtype()))?;
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
    let ctx = db.context().clone();
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let f = ctx.function(op, kernel_name("fill", dst.dtype()))?;
    let (nn, yp, v32) = (n as i64, db.ptr_at(dst.layout().offset), value as f32);
    match dst.dtype() {
        // `fill_*`: writes n contiguous elements from dst's offset.
        DType::F32 => launch!(op, ctx, f, grid(n), nn, v32, yp),
        DType::F64 => launch!(op, ctx, f, grid(n), nn, value, yp),
    }
}

/// Mean cross-entropy of contiguous-or-not `(rows, c)` logits `x` against class indices
/// (validated, `rows` of them) as a 0-d tensor: a per-row fused log-sum-exp loss, then the
/// chunked sum divided by `rows`.
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
    let total = sum_rows(op, &tensor(losses, &[rows]), 1, rows, &[])?;
    unary_p(op, UnaryCode::Scale, &total, 1.0 / rows as f64)
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

/// One fused SGD update of the contiguous `param` (and momentum buffer `buf`) in place from
/// `grad` (any layout, same shape; not sharing their storage); the CPU's formula.
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    op: &str,
    param: &Tensor,
    grad: &Tensor,
    buf: Option<&Tensor>,
    first_step: bool,
    lr: f64,
    momentum: f64,
    weight_decay: f64,
    dampening: f64,
    nesterov: bool,
) -> Result<()> {
    let pb = buffer(op, param)?;
    let ctx = pb.context().clone();
    let n = param.numel();
    if n == 0 {
        return Ok(());
    }
    let gb = buffer(op, grad)?;
    let kl = plan(op, param.shape(), &[grad.layout()])?;
    let f = ctx.function(op, kernel_name("sgd", param.dtype()))?;
    let (nn, pp, gp, lg, bp) = (
        n as i64,
        pb.ptr_at(param.layout().offset),
        gb.ptr_at(grad.layout().offset),
        kl[0],
        opt_ptr(op, buf)?,
    );
    let (first, nest, use_wd) = (
        first_step as i32,
        nesterov as i32,
        (weight_decay != 0.0) as i32,
    );
    let damp = 1.0 - dampening;
    // `sgd_*`: updates n contiguous elements of param (and buf, or null) from grad's view.
    launch!(
        op,
        ctx,
        f,
        grid(n),
        nn,
        pp,
        gp,
        lg,
        bp,
        first,
        lr,
        momentum,
        weight_decay,
        damp,
        nest,
        use_wd
    )
}

/// One fused Adam/AdamW update of the contiguous `param`, `exp_avg`, `exp_avg_sq` in place
/// from `grad` (any layout); the scalars are the CPU's precomputed ones.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    op: &str,
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    decoupled: bool,
    lr: f64,
    weight_decay: f64,
    beta1: f64,
    beta2: f64,
    step_size: f64,
    bias_correction2_sqrt: f64,
    eps: f64,
) -> Result<()> {
    let pb = buffer(op, param)?;
    let ctx = pb.context().clone();
    let n = param.numel();
    if n == 0 {
        return Ok(());
    }
    let gb = buffer(op, grad)?;
    let kl = plan(op, param.shape(), &[grad.layout()])?;
    let f = ctx.function(op, kernel_name("adam", param.dtype()))?;
    let (nn, pp, gp, lg, mp, vp) = (
        n as i64,
        pb.ptr_at(param.layout().offset),
        gb.ptr_at(grad.layout().offset),
        kl[0],
        opt_ptr(op, Some(exp_avg))?,
        opt_ptr(op, Some(exp_avg_sq))?,
    );
    let (use_wd, dec) = ((weight_decay != 0.0) as i32, decoupled as i32);
    let (decay, w1, w2, neg_step) = (
        1.0 - lr * weight_decay,
        1.0 - beta1,
        1.0 - beta2,
        -step_size,
    );
    // `adam_*`: updates n contiguous elements of param, exp_avg and exp_avg_sq from grad's
    // view.
    launch!(
        op,
        ctx,
        f,
        grid(n),
        nn,
        pp,
        gp,
        lg,
        mp,
        vp,
        use_wd,
        dec,
        decay,
        weight_decay,
        w1,
        beta2,
        w2,
        neg_step,
        bias_correction2_sqrt,
        eps
    )
}

/// Wait for all queued work on every device used so far.
pub fn synchronize_all() -> Result<()> {
    for c in context::created() {
        c.synchronize("synchronize")?;
    }
    Ok(())
}
