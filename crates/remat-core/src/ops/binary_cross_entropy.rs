//! `binary_cross_entropy` of probabilities, as PyTorch's: per element
//! `-(t · max(ln x, -100) + (1 - t) · max(ln(1 - x), -100))`, then weighted and reduced.
//!
//! The elementwise loss is one op with its own backward, because the composition of `log`
//! and a clamp would differentiate to `0 · ∞ = NaN` where `x` is exactly 0 or 1; PyTorch's
//! gradient there is finite: `(x - t) / max(x (1 - x), 1e-12)`. The backward is written with
//! differentiable ops, so second-order gradients come from their rules. The target's
//! gradient `ln(1 - x) - ln x` is unclamped, as PyTorch's.

use super::loss_options::{reduce, same_shape, Reduction};
use super::{clamp_min, log, log1p, mul, neg, sub};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::tensor::Tensor;

/// Where PyTorch clamps the logarithms (so a probability of exactly 0 or 1 costs 100, not ∞).
const LOG_FLOOR: f64 = -100.0;
/// PyTorch's floor under `x (1 - x)` in the gradient.
const GRAD_EPS: f64 = 1e-12;

/// `max(ln x, -100)` and `max(ln(1 - x), -100)`.
fn clamped_logs(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((
        clamp_min(&log(x)?, LOG_FLOOR)?,
        clamp_min(&log1p(&neg(x)?)?, LOG_FLOOR)?,
    ))
}

/// The unreduced, unweighted loss of probabilities `x` (input 0) against targets `t` (1).
struct BceOp;

impl BceOp {
    fn compute(inputs: &[&Tensor]) -> Result<Tensor> {
        let _g = no_grad();
        let (x, t) = (inputs[0], inputs[1]);
        let (lx, l1x) = clamped_logs(x)?;
        // (t - 1) ln(1 - x) - t ln x, PyTorch's order of operations.
        sub(&mul(&super::add_scalar(t, -1.0)?, &l1x)?, &mul(t, &lx)?)
    }
}

impl Op for BceOp {
    fn name(&self) -> &'static str {
        "binary_cross_entropy"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Self::compute(inputs)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Self::compute(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (x, t) = (&ctx.saved[0], &ctx.saved[1]);
        let gx = if ctx.needs_grad(0) {
            let denom = clamp_min(&mul(x, &super::add_scalar(&neg(x)?, 1.0)?)?, GRAD_EPS)?;
            Some(mul(ctx.grad, &super::div(&sub(x, t)?, &denom)?)?)
        } else {
            None
        };
        let gt = if ctx.needs_grad(1) {
            // PyTorch's target gradient takes the logarithms unclamped (infinite at 0 and 1).
            Some(mul(ctx.grad, &sub(&log1p(&neg(x)?)?, &log(x)?)?)?)
        } else {
            None
        };
        Ok(vec![gx, gt])
    }
}

/// PyTorch's `binary_cross_entropy(input, target, weight, reduction)`: `input` holds
/// probabilities in `[0, 1]` (checked, as PyTorch does), `target` has its shape, `weight`
/// broadcasts to it. Gradients flow to `input` and `target`.
pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    crate::autocast::composite(
        "binary_cross_entropy",
        [Some(input), Some(target), weight],
        |[x, t, w]| match (x, t) {
            (Some(x), Some(t)) => binary_cross_entropy_now(x, t, w, reduction),
            _ => unreachable!("the required operands stay present"),
        },
    )
}

fn binary_cross_entropy_now(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy";
    same_shape(OP, input, target)?;
    for (what, t) in [("input", input), ("target", target)] {
        if !t.dtype().is_float() {
            return Err(Error::dtype(
                OP,
                format!("{what} must be a float tensor, got {}", t.dtype()),
            ));
        }
    }
    super::check_same_device(OP, &[input, target])?;
    let values = input.try_to_vec::<f64>()?;
    if values.iter().any(|v| !(0.0..=1.0).contains(v)) {
        return Err(Error::value(
            OP,
            "all elements of input should be between 0 and 1",
        ));
    }
    let dt = input.dtype().promote(target.dtype());
    let (x, t) = (super::to_dtype(input, dt)?, super::to_dtype(target, dt)?);
    let mut loss = apply(BceOp, &[&x, &t], &[Save::Input(0), Save::Input(1)])?;
    if let Some(w) = weight {
        loss = mul(&loss, w)?;
    }
    reduce(&loss, reduction)
}
