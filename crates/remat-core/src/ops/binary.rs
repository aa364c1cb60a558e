//! Elementwise binary arithmetic with NumPy broadcasting and dtype promotion: add, sub, mul,
//! div. Backward reduces each gradient back to its input's shape.

use super::{cast, check_same_device, from_vec, reduce::sum_to};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

/// Which arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryKind {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
}

impl BinaryKind {
    fn name(self) -> &'static str {
        match self {
            BinaryKind::Add => "add",
            BinaryKind::Sub => "sub",
            BinaryKind::Mul => "mul",
            BinaryKind::Div => "div",
        }
    }
}

struct BinaryOp(BinaryKind);

/// The kernel: broadcast, promote, compute (no graph).
pub(crate) fn binary_forward(kind: BinaryKind, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let op = kind.name();
    check_same_device(op, &[a, b])?;
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dt = a.dtype().promote(b.dtype());
    let (a, b) = (cast(a, dt)?, cast(b, dt)?);
    if super::is_cuda(&a) {
        use crate::cuda::codes::BinaryCode as C;
        let code = match kind {
            BinaryKind::Add => C::Add,
            BinaryKind::Sub => C::Sub,
            BinaryKind::Mul => C::Mul,
            BinaryKind::Div => C::Div,
        };
        return crate::cuda::launch::binary(op, code, &a, &b, &shape);
    }
    Ok(crate::dispatch!(dt, T => {
        let v = match kind {
            BinaryKind::Add => cpu::zip::<T, _>(a.data(), b.data(), &shape, |x, y| x + y),
            BinaryKind::Sub => cpu::zip::<T, _>(a.data(), b.data(), &shape, |x, y| x - y),
            BinaryKind::Mul => cpu::zip::<T, _>(a.data(), b.data(), &shape, |x, y| x * y),
            BinaryKind::Div => cpu::zip::<T, _>(a.data(), b.data(), &shape, |x, y| x / y),
        };
        from_vec(v, &shape)
    }))
}

impl Op for BinaryOp {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        binary_forward(self.0, inputs[0], inputs[1])
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let g = ctx.grad;
        let (sa, sb) = (&ctx.inputs[0].shape, &ctx.inputs[1].shape);
        let (ga, gb) = match self.0 {
            BinaryKind::Add => (
                ctx.needs_grad(0).then(|| sum_to(g, sa)).transpose()?,
                ctx.needs_grad(1).then(|| sum_to(g, sb)).transpose()?,
            ),
            BinaryKind::Sub => (
                ctx.needs_grad(0).then(|| sum_to(g, sa)).transpose()?,
                ctx.needs_grad(1)
                    .then(|| sum_to(&super::neg_raw(g)?, sb))
                    .transpose()?,
            ),
            BinaryKind::Mul => {
                let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
                (
                    ctx.needs_grad(0)
                        .then(|| sum_to(&mul(g, b)?, sa))
                        .transpose()?,
                    ctx.needs_grad(1)
                        .then(|| sum_to(&mul(g, a)?, sb))
                        .transpose()?,
                )
            }
            BinaryKind::Div => {
                let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
                let ga = ctx
                    .needs_grad(0)
                    .then(|| sum_to(&div(g, b)?, sa))
                    .transpose()?;
                let gb = if ctx.needs_grad(1) {
                    // d(a/b)/db = -a / b^2
                    let t = div(&mul(g, a)?, &mul(b, b)?)?;
                    Some(sum_to(&super::neg_raw(&t)?, sb)?)
                } else {
                    None
                };
                (ga, gb)
            }
        };
        Ok(vec![ga, gb])
    }
}

fn binary(kind: BinaryKind, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let saves: &[Save] = match kind {
        BinaryKind::Add | BinaryKind::Sub => &[],
        BinaryKind::Mul | BinaryKind::Div => &[Save::Input(0), Save::Input(1)],
    };
    apply(BinaryOp(kind), &[a, b], saves)
}

/// `a + b` with broadcasting.
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryKind::Add, a, b)
}
/// `a - b` with broadcasting.
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryKind::Sub, a, b)
}
/// `a * b` with broadcasting.
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryKind::Mul, a, b)
}
/// `a / b` with broadcasting.
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryKind::Div, a, b)
}

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
    let src = cast(src, dst.dtype())?;
    if super::is_cuda(dst) {
        // A source sharing the destination's storage is copied first (the kernel reads and
        // writes in one pass).
        let src = if std::sync::Arc::ptr_eq(src.storage(), dst.storage()) {
            crate::cuda::launch::copy("add_", &src)?
        } else {
            src
        };
        return crate::cuda::launch::axpy_inplace("add_", dst, &src, alpha);
    }
    crate::dispatch!(dst.dtype(), T => {
        let aliased = std::sync::Arc::ptr_eq(src.storage(), dst.storage());
        let vals: std::borrow::Cow<'_, [T]> = if src.shape() == dst.shape() && !aliased {
            match cpu::contiguous_slice::<T>(src.data()) {
                Some(s) => std::borrow::Cow::Borrowed(s),
                None => std::borrow::Cow::Owned(cpu::gather::<T>(src.data())),
            }
        } else {
            let b = src.layout().broadcast_to("add_", dst.shape())?;
            std::borrow::Cow::Owned(cpu::gather::<T>(&crate::tensor::TensorData { storage: src.storage().clone(), layout: b }))
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
}
