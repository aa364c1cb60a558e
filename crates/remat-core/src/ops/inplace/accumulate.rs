//! In-place accumulation without recording or rules: gradient accumulation in the engine
//! (`dst += src`, `dst += alpha * src` into a contiguous buffer the engine owns). Bumps the
//! destination's version like every in-place write.

use crate::cpu;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::ops::{cast, check_same_device};
use crate::tensor::Tensor;

/// `dst += src` in place (gradient accumulation, optimizers). `dst` must be contiguous and
/// `src` broadcastable to it; no graph is recorded.
pub fn add_inplace(dst: &Tensor, src: &Tensor) -> Result<()> {
    axpy_inplace(dst, src, 1.0)
}

/// `dst += alpha * src` in place (no graph).
pub fn axpy_inplace(dst: &Tensor, src: &Tensor, alpha: f64) -> Result<()> {
    check_same_device("add_", &[dst, src])?;
    if !dst.is_contiguous() {
        return Err(Error::shape(
            "add_",
            "in-place destination must be contiguous",
        ));
    }
    let shape = broadcast_shapes("add_", dst.shape(), src.shape())?;
    if shape.as_slice() != dst.shape() {
        return Err(Error::shape(
            "add_",
            format!(
                "cannot add {} into {} in place",
                fmt_shape(src.shape()),
                fmt_shape(dst.shape())
            ),
        ));
    }
    if dst.dtype().is_half() {
        // Added in float32 and rounded once (PyTorch's opmath), then written back.
        let wide = cast(dst, crate::dtype::DType::F32)?;
        axpy_inplace(&wide, src, alpha)?;
        return crate::ops::inplace::assign("add_", dst, crate::ops::Operand::Tensor(&wide));
    }
    let src = cast(src, dst.dtype())?;
    let done = crate::device::on_device(
        dst.device(),
        || -> Result<_> {
            crate::dispatch!(dst.dtype(), T => {
                let aliased = std::sync::Arc::ptr_eq(src.storage(), dst.storage());
                let vals: std::borrow::Cow<'_, [T]> = if src.shape() == dst.shape() && !aliased {
                    match cpu::contiguous_slice::<T>(src.data()) {
                        Some(s) => std::borrow::Cow::Borrowed(s),
                        None => std::borrow::Cow::Owned(cpu::catch_oom("add_", || Ok(cpu::gather::<T>(src.data())))?),
                    }
                } else {
                    let b = src.layout().broadcast_to("add_", dst.shape())?;
                    let b = crate::tensor_data::TensorData { storage: src.storage().clone(), layout: b };
                    // A source too big to copy is an out-of-memory error, not an abort.
                    std::borrow::Cow::Owned(cpu::catch_oom("add_", || Ok(cpu::gather::<T>(&b)))?)
                };
                let off = dst.layout().offset;
                let n = dst.numel();
                // SAFETY: the engine only updates gradients and parameters in place, never while a
                // kernel reads the same storage; `vals` was copied out if it aliased.
                let d = unsafe { dst.storage().as_mut_slice::<T>() }.ok_or_else(|| Error::dtype("add_", "dtype"))?;
                let a = T::from_f64(alpha);
                if alpha == 1.0 {
                    for (o, &v) in d[off..off + n].iter_mut().zip(vals.iter()) {
                        *o += v;
                    }
                } else {
                    for (o, &v) in d[off..off + n].iter_mut().zip(vals.iter()) {
                        *o += a * v;
                    }
                }
            });
            Ok(())
        },
        || {
            // A source sharing the destination's storage is copied first (the kernel reads and
            // writes in one pass).
            if std::sync::Arc::ptr_eq(src.storage(), dst.storage()) {
                let copied = crate::cuda::launch::copy("add_", &src)?;
                crate::cuda::launch::axpy_inplace("add_", dst, &copied, alpha)
            } else {
                crate::cuda::launch::axpy_inplace("add_", dst, &src, alpha)
            }
        },
    );
    dst.storage().bump_version();
    done
}
