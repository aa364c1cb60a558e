//! `clamp(x, min, max)` with both bounds given and at least one a tensor: one op, because its
//! gradient is not that of `minimum(maximum(x, min), max)`. The values are that composition's
//! (NaN in any operand propagates; `min > max` gives `max`), and the gradient follows
//! PyTorch's rule for two tensor bounds:
//!
//! - `min <= x <= max`: all of it to `x`, except on a tie with one bound while `min < max`,
//!   where `x` and that bound get half each (`x == min == max`: all to `x`);
//! - `x < min` (and `min <= max`): all to `min`; `x > max` (and `min <= max`): all to `max`;
//! - `min > max`: all to `max`, whatever `x` is, and also to a NaN `x` (which gets its
//!   own too);
//! - NaN: comparisons with NaN are false, so a NaN `x`, or a NaN bound that `x` is not on the
//!   wrong side of a real bound of, gives all to `x`; `x` below a real `min` with `max` NaN
//!   (or above a real `max` with `min` NaN) gives nothing to anyone.
//!
//! The gradient is selected with `where` (never multiplied by a 0/1 mask), so an infinite
//! incoming gradient does not turn into NaN on the inputs that get none, as in PyTorch. The
//! comparisons and selections are differentiable ops that run on CUDA.

use super::{maximum, minimum, scale};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::error::Result;
use crate::ops::{eq, full, gt, le, logical_and, logical_or, lt, sum_to, where_};
use crate::tensor::Tensor;

struct ClampBoundsOp;

impl ClampBoundsOp {
    /// `min(max(x, lo), hi)` on detached operands (the forward records nothing itself).
    fn values(inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, lo, hi) = (inputs[0].detach(), inputs[1].detach(), inputs[2].detach());
        minimum(&maximum(&x, &lo)?, &hi)
    }
}

impl Op for ClampBoundsOp {
    fn any_dtype(&self) -> bool {
        // Integer clamps compute through `maximum`/`minimum`'s integer rules; an integer
        // result is never recorded, so the backward only ever sees floats.
        true
    }
    fn name(&self) -> &'static str {
        "clamp"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Self::values(inputs)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // The same composition: `maximum` and `minimum` run on the operands' device.
        Self::values(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (x, lo, hi) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
        let g = ctx.grad;
        let zero = full(&[], 0.0, g.dtype(), g.device())?;
        let half = scale(g, 0.5)?;
        let below = lt(x, lo)?;
        let above = gt(x, hi)?;
        let ordered = le(lo, hi)?;
        // Only a strict `min < max` splits a tie; `x == min == max` goes to `x` alone.
        let apart = lt(lo, hi)?;
        let on_lo = logical_and(&eq(x, lo)?, &apart)?;
        let on_hi = logical_and(&eq(x, hi)?, &apart)?;
        let grad_for = |i: usize, make: &dyn Fn() -> Result<Tensor>| -> Result<Option<Tensor>> {
            if !ctx.needs_grad(i) {
                return Ok(None);
            }
            Ok(Some(sum_to(&make()?, &ctx.inputs[i].shape)?))
        };
        let gx = grad_for(0, &|| {
            let inside = where_(&logical_or(&on_lo, &on_hi)?, &half, g)?;
            where_(&logical_or(&below, &above)?, &zero, &inside)
        })?;
        let glo = grad_for(1, &|| {
            let tie = where_(&on_lo, &half, &zero)?;
            where_(&logical_and(&below, &ordered)?, g, &tie)
        })?;
        let ghi = grad_for(2, &|| {
            let tie = where_(&on_hi, &half, &zero)?;
            let crossed = gt(lo, hi)?;
            let takes = logical_or(&logical_and(&above, &ordered)?, &crossed)?;
            where_(&takes, g, &tie)
        })?;
        Ok(vec![gx, glo, ghi])
    }
}

/// `clamp(x, lo, hi)` with both bounds as tensors (a constant bound is passed as a 0-d
/// tensor), broadcast together; see the module docs for the gradient.
pub(crate) fn clamp_bounds(x: &Tensor, lo: &Tensor, hi: &Tensor) -> Result<Tensor> {
    apply(
        ClampBoundsOp,
        &[x, lo, hi],
        &[Save::Input(0), Save::Input(1), Save::Input(2)],
    )
}
