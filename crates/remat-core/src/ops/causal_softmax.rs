//! The causal attention weights of `scaled_dot_product_attention(..., is_causal=True)` in one
//! op: `softmax(where(causal, scores · scale, -inf))` over the last axis, where row `i` of
//! each `(L, S)` matrix takes keys `j <= i` (PyTorch's top-left causal mask).
//!
//! Written as three ops (scale, where, softmax) this makes three passes over the `T²` scores
//! forward and two more backward, and exponentiates the masked half of every matrix. Here one
//! pass per row scales, exponentiates and normalises only the keys a query sees and writes
//! zeros for the rest. It matters twice under `dots_saveable`, which recomputes exactly these
//! weights in backward. The backward is softmax's (`y (g - sum(g y))`, exactly zero where `y`
//! is) times the scale, so it is differentiable like the three-op version.

use super::softmax::{c_order, for_blocks, lane_sum, row_max, softmax_backward};
use super::{from_vec, scale as scale_op};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::{Element, Scalar};
use crate::error::Result;
use crate::tensor::Tensor;

/// Row `x` of a causal matrix where the query sees its first `seen` keys: `y` is the softmax
/// of `x[..seen] · scale`, zero after.
#[inline(always)]
fn causal_row<T: Element>(x: &[T], y: &mut [T], seen: usize, scale: T) {
    let (x, (y, hidden)) = (&x[..seen], y.split_at_mut(seen));
    for (o, &v) in y.iter_mut().zip(x) {
        *o = v * scale;
    }
    let m = row_max(y);
    for o in y.iter_mut() {
        *o = (*o - m).kernel_exp();
    }
    let inv = T::from_f64(1.0) / lane_sum(y);
    for o in y.iter_mut() {
        *o *= inv;
    }
    hidden.fill(T::zero());
}

cpu::avx2_twin! {
    /// [`causal_row`], in AVX2 or AVX-512 where the CPU has it.
    fn causal_row_wide<T: Element>(x: &[T], y: &mut [T], seen: usize, scale: T) = causal_row;
}

/// `softmax(where(tril, x · scale, -inf), -1)` of `(..., L, S)` scores.
struct CausalSoftmaxOp {
    scale: f64,
}

impl Op for CausalSoftmaxOp {
    fn name(&self) -> &'static str {
        "causal_softmax"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let (l, s) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
        Ok(crate::dispatch!(x.dtype(), T => {
            let src = c_order::<T>(x.data());
            let factor = T::from_f64(self.scale);
            let mut out = cpu::alloc::<T>(src.len());
            if s > 0 {
                for_blocks(&mut out, s, |r, o| {
                    let seen = (r % l + 1).min(s);
                    causal_row_wide(&src[r * s..(r + 1) * s], o, seen, factor)
                });
            }
            from_vec(out, x.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // The three ops' kernels (no fused kernel on the device yet).
        let x = inputs[0];
        let (l, s) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
        let _g = crate::grad_mode::no_grad();
        let mask = super::attention::causal_mask(l, s, x.device())?;
        let neg_inf = super::full(&[], f64::NEG_INFINITY, x.dtype(), x.device())?;
        let scores = super::where_(&mask, &scale_op(x, self.scale)?, &neg_inf)?;
        super::softmax(&scores, -1)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let y = &ctx.saved[0];
        let g = super::to_dtype(ctx.grad, y.dtype())?;
        let gs = softmax_backward(&g, y, y.ndim() - 1)?;
        Ok(vec![Some(scale_op(&gs, self.scale)?)])
    }
}

/// The causal attention weights of `(..., L, S)` scores (at least 2-d, checked by the
/// caller): `softmax(where(tril(ones(L, S)), scores · scale, -inf), -1)`.
pub(crate) fn causal_softmax(scores: &Tensor, scale: f64) -> Result<Tensor> {
    apply(CausalSoftmaxOp { scale }, &[scores], &[Save::Output])
}
