//! Elementwise math: neg, exp, log, sqrt, and powers (`pow` with broadcasting, `pow_scalar`
//! with fast paths for common exponents). Backward passes are fused elementwise kernels over
//! the output gradient and one saved tensor, so they allocate only the gradient itself.

use super::{cast, check_same_device, reduce::sum_to};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::dtype::Element;
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;

/// `f(v)` over every element of a tensor, into a new contiguous tensor of its shape and dtype.
/// Inside `$body` the element type is available as `T` (an [`Element`]).
macro_rules! map_t {
    ($x:expr, |$v:ident| $body:expr) => {{
        let src: &$crate::tensor::Tensor = $x;
        $crate::dispatch!(src.dtype(), T => {
            $crate::ops::from_vec(
                $crate::cpu::map::<T, _>(src.data(), |$v: T| $body),
                src.shape(),
            )
        })
    }};
}

/// `f(a, b)` over two tensors of one dtype broadcast to `$shape` (already validated), into a
/// new contiguous tensor. Inside `$body` the element type is `T`.
macro_rules! zip_t {
    ($a:expr, $b:expr, $shape:expr, |$x:ident, $y:ident| $body:expr) => {{
        let (lhs, rhs): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        let shape: &[usize] = $shape;
        $crate::dispatch!(lhs.dtype(), T => {
            $crate::ops::from_vec(
                $crate::cpu::zip::<T, _>(lhs.data(), rhs.data(), shape, |$x: T, $y: T| $body),
                shape,
            )
        })
    }};
}

pub(crate) use map_t;
pub(crate) use zip_t;

/// The output gradient in the dtype of `like` (a saved tensor), so kernels see one dtype.
/// The engine already delivers gradients in the output's dtype; this is free then.
pub(crate) fn grad_as(ctx: &BackwardCtx<'_>, like: &Tensor) -> Result<Tensor> {
    cast(ctx.grad, like.dtype())
}

/// Which elementwise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MathKind {
    Neg,
    Exp,
    Log,
    Sqrt,
}

struct MathOp(MathKind);

impl Op for MathOp {
    fn name(&self) -> &'static str {
        match self.0 {
            MathKind::Neg => "neg",
            MathKind::Exp => "exp",
            MathKind::Log => "log",
            MathKind::Sqrt => "sqrt",
        }
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        if super::is_cuda(x) {
            use crate::cuda::codes::UnaryCode as U;
            let code = match self.0 {
                MathKind::Neg => U::Neg,
                MathKind::Exp => U::Exp,
                MathKind::Log => U::Log,
                MathKind::Sqrt => U::Sqrt,
            };
            return crate::cuda::launch::unary(self.name(), code, x);
        }
        Ok(match self.0 {
            MathKind::Neg => map_t!(x, |v| -v),
            MathKind::Exp => map_t!(x, |v| v.exp()),
            MathKind::Log => map_t!(x, |v| v.ln()),
            MathKind::Sqrt => map_t!(x, |v| v.sqrt()),
        })
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        if super::is_cuda(ctx.grad) {
            use crate::cuda::codes::BinaryCode as B;
            let y = &ctx.saved.first().unwrap_or(ctx.grad);
            let code = match self.0 {
                MathKind::Neg => return Ok(vec![Some(super::neg_raw(ctx.grad)?)]),
                MathKind::Exp => B::Mul,
                MathKind::Log => B::Div,
                MathKind::Sqrt => B::SqrtGrad,
            };
            let g = grad_as(ctx, y)?;
            return Ok(vec![Some(crate::cuda::launch::binary(
                self.name(),
                code,
                &g,
                y,
                y.shape(),
            )?)]);
        }
        let g = match self.0 {
            MathKind::Neg => super::neg_raw(ctx.grad)?,
            // Saved: the output y = exp(x); dy/dx = y.
            MathKind::Exp => {
                let y = &ctx.saved[0];
                zip_t!(&grad_as(ctx, y)?, y, y.shape(), |g, y| g * y)
            }
            // Saved: the input; d/dx ln x = 1/x.
            MathKind::Log => {
                let x = &ctx.saved[0];
                zip_t!(&grad_as(ctx, x)?, x, x.shape(), |g, x| g / x)
            }
            // Saved: the output y = sqrt(x); dy/dx = 1 / (2y).
            MathKind::Sqrt => {
                let y = &ctx.saved[0];
                zip_t!(&grad_as(ctx, y)?, y, y.shape(), |g, y| g / (y + y))
            }
        };
        Ok(vec![Some(g)])
    }
}

/// `-x`.
pub fn neg(x: &Tensor) -> Result<Tensor> {
    apply(MathOp(MathKind::Neg), &[x], &[])
}

/// `e^x` elementwise.
pub fn exp(x: &Tensor) -> Result<Tensor> {
    apply(MathOp(MathKind::Exp), &[x], &[Save::Output])
}

/// Natural logarithm elementwise (NaN below 0, -inf at 0, as in NumPy).
pub fn log(x: &Tensor) -> Result<Tensor> {
    apply(MathOp(MathKind::Log), &[x], &[Save::Input(0)])
}

/// Square root elementwise (NaN below 0).
pub fn sqrt(x: &Tensor) -> Result<Tensor> {
    apply(MathOp(MathKind::Sqrt), &[x], &[Save::Output])
}

/// `x^p` for a constant exponent, with exact fast paths for the common ones.
fn pow_scalar_raw(x: &Tensor, p: f64) -> Tensor {
    if p == 2.0 {
        map_t!(x, |v| v * v)
    } else if p == 1.0 {
        map_t!(x, |v| v)
    } else if p == 0.0 {
        // 0^0 = 1, as in NumPy and PyTorch.
        map_t!(x, |_v| T::from_f64(1.0))
    } else if p == 0.5 {
        map_t!(x, |v| v.sqrt())
    } else if p == -0.5 {
        map_t!(x, |v| T::from_f64(1.0) / v.sqrt())
    } else if p == -1.0 {
        map_t!(x, |v| T::from_f64(1.0) / v)
    } else if p == 3.0 {
        map_t!(x, |v| v * v * v)
    } else if p.fract() == 0.0 && p.abs() <= i32::MAX as f64 {
        let n = p as i32;
        map_t!(x, |v| v.powi(n))
    } else {
        map_t!(x, |v| v.powf(T::from_f64(p)))
    }
}

struct PowScalarOp {
    p: f64,
}

impl Op for PowScalarOp {
    fn name(&self) -> &'static str {
        "pow"
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        if super::is_cuda(x) {
            use crate::cuda::codes::UnaryCode as U;
            return crate::cuda::launch::unary_p("pow", U::PowScalar, x, self.p);
        }
        Ok(pow_scalar_raw(x, self.p))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let x = &ctx.saved[0];
        let g = grad_as(ctx, x)?;
        let p = self.p;
        if super::is_cuda(x) {
            use crate::cuda::codes::BinaryCode as B;
            let gx = crate::cuda::launch::binary_p("pow", B::PowScalarGrad, &g, x, x.shape(), p)?;
            return Ok(vec![Some(gx)]);
        }
        // d/dx x^p = p x^(p-1), with the fast paths of the forward.
        let gx = if p == 0.0 {
            map_t!(&g, |_v| T::from_f64(0.0))
        } else if p == 1.0 {
            g
        } else if p == 2.0 {
            zip_t!(&g, x, x.shape(), |g, x| g * (x + x))
        } else if p == 0.5 {
            zip_t!(&g, x, x.shape(), |g, x| g * T::from_f64(0.5) / x.sqrt())
        } else if (p - 1.0).fract() == 0.0 && (p - 1.0).abs() <= i32::MAX as f64 {
            let n = (p - 1.0) as i32;
            zip_t!(&g, x, x.shape(), |g, x| g * T::from_f64(p) * x.powi(n))
        } else {
            zip_t!(&g, x, x.shape(), |g, x| g
                * T::from_f64(p)
                * x.powf(T::from_f64(p - 1.0)))
        };
        Ok(vec![Some(gx)])
    }
}

/// `x^p` for a constant exponent `p` (fast paths for 2, 0.5, -1, integers, ...).
pub fn pow_scalar(x: &Tensor, p: f64) -> Result<Tensor> {
    apply(PowScalarOp { p }, &[x], &[Save::Input(0)])
}

struct PowOp;

/// Broadcast, promote and compute `a^b` (no graph).
fn pow_forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_device("pow", &[a, b])?;
    let shape = broadcast_shapes("pow", a.shape(), b.shape())?;
    let dt = a.dtype().promote(b.dtype());
    let (a, b) = (cast(a, dt)?, cast(b, dt)?);
    if super::is_cuda(&a) {
        use crate::cuda::codes::BinaryCode as B;
        return crate::cuda::launch::binary("pow", B::Pow, &a, &b, &shape);
    }
    Ok(zip_t!(&a, &b, &shape, |x, y| x.powf(y)))
}

impl Op for PowOp {
    fn name(&self) -> &'static str {
        "pow"
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        pow_forward(inputs[0], inputs[1])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let g = ctx.grad;
        let dt = g.dtype();
        let (a, b) = (cast(&ctx.saved[0], dt)?, cast(&ctx.saved[1], dt)?);
        let shape = g.shape();
        if super::is_cuda(g) {
            use crate::cuda::codes::BinaryCode as B;
            use crate::cuda::launch::binary as k;
            let ga = if ctx.needs_grad(0) {
                let d = k("pow", B::PowGradBase, &a, &b, shape)?;
                Some(sum_to(
                    &k("pow", B::Mul, g, &d, shape)?,
                    &ctx.inputs[0].shape,
                )?)
            } else {
                None
            };
            let gb = if ctx.needs_grad(1) {
                let d = k("pow", B::PowGradExp, &a, &b, shape)?;
                Some(sum_to(
                    &k("pow", B::Mul, g, &d, shape)?,
                    &ctx.inputs[1].shape,
                )?)
            } else {
                None
            };
            return Ok(vec![ga, gb]);
        }
        let ga = if ctx.needs_grad(0) {
            // b a^(b-1), zero where b == 0 (avoids 0 * inf at a == 0, as PyTorch does).
            let d = zip_t!(&a, &b, shape, |x, y| if y == T::from_f64(0.0) {
                T::from_f64(0.0)
            } else {
                y * x.powf(y - T::from_f64(1.0))
            });
            let full = zip_t!(g, &d, shape, |g, d| g * d);
            Some(sum_to(&full, &ctx.inputs[0].shape)?)
        } else {
            None
        };
        let gb =
            if ctx.needs_grad(1) {
                // a^b ln a, zero where a == 0 and b >= 0 (the limit, as PyTorch does).
                let d = zip_t!(&a, &b, shape, |x, y| if x == T::from_f64(0.0)
                    && y >= T::from_f64(0.0)
                {
                    T::from_f64(0.0)
                } else {
                    x.powf(y) * x.ln()
                });
                let full = zip_t!(g, &d, shape, |g, d| g * d);
                Some(sum_to(&full, &ctx.inputs[1].shape)?)
            } else {
                None
            };
        Ok(vec![ga, gb])
    }
}

/// `a^b` elementwise with NumPy broadcasting and dtype promotion; gradients for both.
pub fn pow(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    apply(PowOp, &[a, b], &[Save::Input(0), Save::Input(1)])
}

impl Tensor {
    /// `-self`.
    pub fn neg(&self) -> Result<Tensor> {
        neg(self)
    }
    /// `e^self` elementwise.
    pub fn exp(&self) -> Result<Tensor> {
        exp(self)
    }
    /// Natural logarithm elementwise.
    pub fn log(&self) -> Result<Tensor> {
        log(self)
    }
    /// Square root elementwise.
    pub fn sqrt(&self) -> Result<Tensor> {
        sqrt(self)
    }
    /// `self^p` for a constant exponent.
    pub fn pow_scalar(&self, p: f64) -> Result<Tensor> {
        pow_scalar(self, p)
    }
    /// `self^exponent` elementwise with broadcasting.
    pub fn pow(&self, exponent: &Tensor) -> Result<Tensor> {
        pow(self, exponent)
    }
}
