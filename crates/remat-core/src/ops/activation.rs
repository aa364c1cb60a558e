//! Activations: tanh, sigmoid, relu and gelu (exact erf form and PyTorch's tanh
//! approximation). tanh/sigmoid/relu save their output (the derivative is a function of it);
//! gelu saves its input.

use super::unary::{grad_as, map_t, zip_t};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::Tensor;

/// sqrt(2 / pi), the tanh-GELU scale.
const GELU_K: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh-GELU.
const GELU_C: f64 = 0.044_715;
/// 1 / sqrt(2).
const FRAC_1_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// 1 / sqrt(2 pi), the standard normal density at 0.
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ActKind {
    Tanh,
    Sigmoid,
    Relu,
}

struct ActOp(ActKind);

impl Op for ActOp {
    fn name(&self) -> &'static str {
        match self.0 {
            ActKind::Tanh => "tanh",
            ActKind::Sigmoid => "sigmoid",
            ActKind::Relu => "relu",
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
                ActKind::Tanh => U::Tanh,
                ActKind::Sigmoid => U::Sigmoid,
                ActKind::Relu => U::Relu,
            };
            return crate::cuda::launch::unary(self.name(), code, x);
        }
        Ok(match self.0 {
            ActKind::Tanh => map_t!(x, |v| v.tanh()),
            // 1 / (1 + e^-x) saturates cleanly at both ends (e^-x -> inf gives 0).
            ActKind::Sigmoid => map_t!(x, |v| T::from_f64(1.0) / (T::from_f64(1.0) + (-v).exp())),
            // `<` keeps NaN as NaN, as PyTorch does.
            ActKind::Relu => map_t!(x, |v| if v < T::from_f64(0.0) {
                T::from_f64(0.0)
            } else {
                v
            }),
        })
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        // Saved: the output y.
        let y = &ctx.saved[0];
        let g = grad_as(ctx, y)?;
        if super::is_cuda(y) {
            use crate::cuda::codes::BinaryCode as B;
            let code = match self.0 {
                ActKind::Tanh => B::TanhGrad,
                ActKind::Sigmoid => B::SigmoidGrad,
                ActKind::Relu => B::ReluGrad,
            };
            let gx = crate::cuda::launch::binary(self.name(), code, &g, y, y.shape())?;
            return Ok(vec![Some(gx)]);
        }
        let gx = match self.0 {
            ActKind::Tanh => zip_t!(&g, y, y.shape(), |g, y| g * (T::from_f64(1.0) - y * y)),
            ActKind::Sigmoid => {
                zip_t!(&g, y, y.shape(), |g, y| g * y * (T::from_f64(1.0) - y))
            }
            ActKind::Relu => zip_t!(&g, y, y.shape(), |g, y| if y > T::from_f64(0.0) {
                g
            } else {
                T::from_f64(0.0)
            }),
        };
        Ok(vec![Some(gx)])
    }
}

/// Hyperbolic tangent elementwise.
pub fn tanh(x: &Tensor) -> Result<Tensor> {
    apply(ActOp(ActKind::Tanh), &[x], &[Save::Output])
}

/// Logistic sigmoid `1 / (1 + e^-x)` elementwise.
pub fn sigmoid(x: &Tensor) -> Result<Tensor> {
    apply(ActOp(ActKind::Sigmoid), &[x], &[Save::Output])
}

/// `max(x, 0)` elementwise (gradient 0 at 0, as in PyTorch).
pub fn relu(x: &Tensor) -> Result<Tensor> {
    apply(ActOp(ActKind::Relu), &[x], &[Save::Output])
}

/// Exact GELU, `0.5 x (1 + erf(x / sqrt 2))`. Branch-free for float32 (see
/// [`crate::cpu::erf`]), so the loops of [`crate::cpu::map_wide`] vectorise.
#[inline(always)]
fn gelu_erf<T: Element>(v: T) -> T {
    let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
    half * v * (one + Element::erf(v * T::from_f64(FRAC_1_SQRT_2)))
}

/// `g` times exact GELU's derivative at `x`: `Phi(x) + x phi(x)`, Phi the normal CDF and phi
/// its density.
#[inline(always)]
fn gelu_erf_grad<T: Element>(g: T, x: T) -> T {
    let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
    let cdf = half * (one + Element::erf(x * T::from_f64(FRAC_1_SQRT_2)));
    let pdf = T::from_f64(FRAC_1_SQRT_2PI) * (-half * x * x).kernel_exp();
    g * (cdf + x * pdf)
}

struct GeluOp {
    approximate_tanh: bool,
}

impl Op for GeluOp {
    fn name(&self) -> &'static str {
        "gelu"
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        if super::is_cuda(x) {
            use crate::cuda::codes::UnaryCode as U;
            let code = if self.approximate_tanh {
                U::GeluTanh
            } else {
                U::GeluErf
            };
            return crate::cuda::launch::unary("gelu", code, x);
        }
        Ok(if self.approximate_tanh {
            // 0.5 x (1 + tanh(k (x + c x^3)))
            map_t!(x, |v| {
                let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
                let u = T::from_f64(GELU_K) * (v + T::from_f64(GELU_C) * v * v * v);
                half * v * (one + u.tanh())
            })
        } else {
            crate::dispatch!(x.dtype(), T => super::from_vec(
                crate::cpu::map_wide(x.data(), gelu_erf::<T>),
                x.shape(),
            ))
        })
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        // Saved: the input x.
        let x = &ctx.saved[0];
        let g = grad_as(ctx, x)?;
        if super::is_cuda(x) {
            use crate::cuda::codes::BinaryCode as B;
            let code = if self.approximate_tanh {
                B::GeluTanhGrad
            } else {
                B::GeluErfGrad
            };
            let gx = crate::cuda::launch::binary("gelu", code, &g, x, x.shape())?;
            return Ok(vec![Some(gx)]);
        }
        let gx = if self.approximate_tanh {
            // With u = k (x + c x^3), t = tanh u:
            // d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
            zip_t!(&g, x, x.shape(), |g, x| {
                let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
                let (k, c) = (T::from_f64(GELU_K), T::from_f64(GELU_C));
                let x2 = x * x;
                let t = (k * (x + c * x2 * x)).tanh();
                let du = k * (one + T::from_f64(3.0) * c * x2);
                g * (half * (one + t) + half * x * (one - t * t) * du)
            })
        } else {
            crate::dispatch!(x.dtype(), T => super::from_vec(
                crate::cpu::zip_wide(g.data(), x.data(), x.shape(), gelu_erf_grad::<T>),
                x.shape(),
            ))
        };
        Ok(vec![Some(gx)])
    }
}

/// GELU: exact `x Phi(x)` (erf form), or PyTorch's tanh approximation when
/// `approximate_tanh` is set.
pub fn gelu(x: &Tensor, approximate_tanh: bool) -> Result<Tensor> {
    apply(GeluOp { approximate_tanh }, &[x], &[Save::Input(0)])
}

impl Tensor {
    /// Hyperbolic tangent elementwise.
    pub fn tanh(&self) -> Result<Tensor> {
        tanh(self)
    }
    /// Logistic sigmoid elementwise.
    pub fn sigmoid(&self) -> Result<Tensor> {
        sigmoid(self)
    }
    /// `max(self, 0)` elementwise.
    pub fn relu(&self) -> Result<Tensor> {
        relu(self)
    }
    /// GELU (see [`gelu`]).
    pub fn gelu(&self, approximate_tanh: bool) -> Result<Tensor> {
        gelu(self, approximate_tanh)
    }
}
