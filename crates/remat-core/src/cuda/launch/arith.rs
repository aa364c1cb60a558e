//! Launches of the `arith_kernels` module: logic and bitwise rows, float classification,
//! floor division / remainder / truncating division, exact integer add/sub/mul/max/min, and
//! prefix sums along an axis. Each
//! returns a fresh contiguous tensor on the operands' device.

use super::common::{buffer, contig, grid, launch, plan, tensor};
use crate::cuda::arith_kernels::name;
use crate::cuda::storage::CudaBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, numel};
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

/// The kernel of `base` for `dtype`, or a `DTypeError` naming the op.
fn kernel(op: &str, base: &str, dtype: DType) -> Result<&'static str> {
    name(base, dtype).ok_or_else(|| {
        Error::dtype(
            op,
            format!("no cuda kernel for {dtype} tensors (the `{base}` family)"),
        )
    })
}

/// A zip of `a` and `b` (one dtype, one device) broadcast to `shape` through kernel family
/// `base` with row `code`: `base_S(code, n, a, la, b, lb, y)`, `out_dtype` elements out.
fn zip(
    op: &str,
    base: &str,
    code: i32,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    out_dtype: DType,
) -> Result<Tensor> {
    let (ab, bb) = (buffer(op, a)?, buffer(op, b)?);
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "cuda kernel operands must share a dtype, got {} {} and {} {}",
                a.dtype(),
                fmt_shape(a.shape()),
                b.dtype(),
                fmt_shape(b.shape())
            ),
        ));
    }
    let ctx = ab.context().clone();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, out_dtype)?;
    if n > 0 {
        let la = a.layout().broadcast_to(op, shape)?;
        let lb = b.layout().broadcast_to(op, shape)?;
        let kl = plan(op, shape, &[&la, &lb])?;
        let f = ctx.function(op, kernel(op, base, a.dtype())?)?;
        let (nn, k0, k1) = (n as i64, kl[0], kl[1]);
        let (ap, bp, yp) = (ab.ptr_at(la.offset), bb.ptr_at(lb.offset), out.ptr());
        // `logic_*` / `divmod_*` / `int_zip_i64`: read both broadcast views, write n elements.
        launch!(op, ctx, f, grid(n), code, nn, ap, k0, bp, k1, yp)?;
    }
    Ok(tensor(out, shape))
}

/// Row `code` of the logic table (0 and, 1 or, 2 xor) over `a` and `b` (int64, int32 or
/// bool, one dtype) broadcast to `shape`: bitwise on integers, logical on bools.
pub fn logic(op: &str, code: i32, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    zip(op, "logic", code, a, b, shape, a.dtype())
}

/// `~x` on an int64/int32 tensor, logical not on a bool tensor.
pub fn logic_not(op: &str, x: &Tensor) -> Result<Tensor> {
    zip(op, "logic", 3, x, x, x.shape(), x.dtype())
}

/// Row `code` of the float classes (0 isnan, 1 isinf, 2 isfinite) of a float tensor: bool.
pub fn classify(op: &str, code: i32, x: &Tensor) -> Result<Tensor> {
    let xb = buffer(op, x)?;
    let ctx = xb.context().clone();
    let shape = x.shape();
    let n = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, n, DType::Bool)?;
    if n > 0 {
        let kl = plan(op, shape, &[x.layout()])?;
        let f = ctx.function(op, kernel(op, "classify", x.dtype())?)?;
        let (nn, k0, xp, yp) = (n as i64, kl[0], xb.ptr_at(x.layout().offset), out.ptr());
        // `classify_*`: reads the view, writes n bools.
        launch!(op, ctx, f, grid(n), code, nn, xp, k0, yp)?;
    }
    Ok(tensor(out, shape))
}

/// Floor division (`mode` 0), remainder (1) or truncating division (2) of `a` by `b` (one
/// numeric dtype; integer divisors already checked nonzero) broadcast to `shape`.
pub fn divmod(op: &str, mode: i32, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    zip(op, "divmod", mode, a, b, shape, a.dtype())
}

/// Row `code` of the exact integer rows (0 add, 1 sub, 2 mul, 3 maximum, 4 minimum) over
/// int64 `a` and `b` broadcast to `shape`, wrapping on overflow.
pub fn int_zip(op: &str, code: i32, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    zip(op, "int_zip", code, a, b, shape, DType::I64)
}

/// Inclusive prefix sums of a float tensor along `axis`, in the CPU's order of additions.
pub fn cumsum(op: &str, x: &Tensor, axis: usize) -> Result<Tensor> {
    let x = contig(op, x)?;
    let shape = x.shape();
    let (outer, n, inner) = (
        numel(&shape[..axis]),
        shape[axis],
        numel(&shape[axis + 1..]),
    );
    let xb = buffer(op, &x)?;
    let ctx = xb.context().clone();
    let total = numel(shape);
    let out = CudaBuffer::alloc(op, &ctx, total, x.dtype())?;
    let lines = outer * inner;
    if total > 0 {
        let f = ctx.function(op, kernel(op, "cumsum", x.dtype())?)?;
        let (o, nn, i) = (outer as i64, n as i64, inner as i64);
        let (xp, yp) = (xb.ptr_at(x.layout().offset), out.ptr());
        // `cumsum_*`: one thread per (outer, inner) line reads and writes its n elements.
        launch!(op, ctx, f, grid(lines), o, nn, i, xp, yp)?;
    }
    Ok(tensor(out, shape))
}
