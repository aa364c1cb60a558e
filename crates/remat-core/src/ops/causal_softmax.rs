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

use super::matmul::batch_offsets;
use super::softmax::{c_order, for_blocks, lane_sum, row_max, softmax_backward};
use super::{from_vec, matmul, scale as scale_op, transpose};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::{Element, Scalar};
use crate::error::Result;
use crate::layout::Dims;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Row `x` of a causal matrix where the query sees its first `seen` keys: `y` is the softmax
/// of `x[..seen] · scale`, zero after.
#[inline(always)]
fn causal_row<T: Element>(x: &[T], y: &mut [T], seen: usize, scale: T) {
    for (o, &v) in y[..seen].iter_mut().zip(&x[..seen]) {
        *o = v * scale;
    }
    normalise_seen(y, seen);
}

/// [`causal_row`] with the scores already in `y` (the same bits).
#[inline(always)]
fn causal_row_in_place<T: Element>(y: &mut [T], seen: usize, scale: T) {
    for o in y[..seen].iter_mut() {
        *o *= scale;
    }
    normalise_seen(y, seen);
}

/// `y[..seen]` (scaled scores) replaced by their softmax, the rest of `y` by zeros.
#[inline(always)]
fn normalise_seen<T: Element>(y: &mut [T], seen: usize) {
    let (y, hidden) = y.split_at_mut(seen);
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

cpu::avx2_twin! {
    /// [`causal_row_in_place`], in AVX2 or AVX-512 where the CPU has it.
    fn causal_row_in_place_wide<T: Element>(y: &mut [T], seen: usize, scale: T) =
        causal_row_in_place;
}

/// The gradient of the scores from that of the causal weights `y`: softmax's backward
/// (`y (g - sum(g y))`, exactly zero where `y` is) times the scale; differentiable.
fn scores_grad(g: &Tensor, y: &Tensor, scale: f64) -> Result<Tensor> {
    let g = super::to_dtype(g, y.dtype())?;
    scale_op(&softmax_backward(&g, y, y.ndim() - 1)?, scale)
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
        Ok(vec![Some(scores_grad(
            ctx.grad,
            &ctx.saved[0],
            self.scale,
        )?)])
    }
}

/// The causal attention weights of `(..., L, S)` scores (at least 2-d, checked by the
/// caller): `softmax(where(tril(ones(L, S)), scores · scale, -inf), -1)`.
pub(crate) fn causal_softmax(scores: &Tensor, scale: f64) -> Result<Tensor> {
    apply(CausalSoftmaxOp { scale }, &[scores], &[Save::Output])
}

/// Query rows per block of [`CausalWeightsOp`]'s products: a block's products run only up to
/// the last key its last row sees (for 128 tokens, 3/4 of the full product).
const ROW_BLOCK: usize = 64;

/// `causal_softmax(q kᵀ, scale)` for `q (..., L, E)` and `k (..., S, E)` with the same batch
/// axes, without the scores as a tensor: for each matrix (one thread each), each block of
/// rows is multiplied only by the keys it sees, straight into the output, and normalised there
/// while it is in cache. Saves `q`, `k` and the weights; the backward is softmax's times the
/// scale, then the two products' (differentiable ops, so second order works).
struct CausalWeightsOp {
    scale: f64,
}

impl Op for CausalWeightsOp {
    fn name(&self) -> &'static str {
        "causal_attention_weights"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (q, k) = (inputs[0], inputs[1]);
        let (lq, lk) = (q.layout(), k.layout());
        let nd = lq.ndim();
        let (l, e, s) = (lq.shape[nd - 2], lq.shape[nd - 1], lk.shape[nd - 2]);
        let batch: Dims = lq.shape[..nd - 2].into();
        let (qo, ko) = (batch_offsets(lq, &batch)?, batch_offsets(lk, &batch)?);
        let (qrs, qcs) = (lq.strides[nd - 2], lq.strides[nd - 1] as isize);
        let (krs, kcs) = (lk.strides[nd - 2] as isize, lk.strides[nd - 1] as isize);
        let mut shape = batch.clone();
        shape.extend([l, s]);
        Ok(crate::dispatch!(q.dtype(), T => {
            let mut out = cpu::alloc::<T>(qo.len() * l * s);
            // Raw pointers are not `Send`: carried to the pool's threads as addresses.
            let (pq, pk) = (
                cpu::slice::<T>(q.data()).as_ptr() as usize,
                cpu::slice::<T>(k.data()).as_ptr() as usize,
            );
            let factor = T::from_f64(self.scale);
            let matrix = |bi: usize, m: &mut [T]| {
                for r0 in (0..l).step_by(ROW_BLOCK) {
                    let r1 = (r0 + ROW_BLOCK).min(l);
                    let cols = r1.min(s);
                    let dst = &mut m[r0 * s..r1 * s];
                    if e == 0 {
                        dst.fill(T::from_f64(0.0));
                    } else {
                        // SAFETY: offsets and strides come from the validated layouts of live
                        // storages (rows r0..r1 of q, keys 0..cols of k); dst holds rows
                        // r0..r1 of this matrix, row stride s >= cols.
                        unsafe {
                            gemm::gemm(
                                r1 - r0,
                                cols,
                                e,
                                dst.as_mut_ptr(),
                                1,
                                s as isize,
                                false,
                                (pq as *const T).add(qo[bi] + r0 * qrs),
                                qcs,
                                qrs as isize,
                                (pk as *const T).add(ko[bi]),
                                krs,
                                kcs,
                                T::from_f64(0.0),
                                T::from_f64(1.0),
                                false,
                                false,
                                false,
                                gemm::Parallelism::None,
                            )
                        }
                    }
                    for (i, row) in (r0..r1).zip(dst.chunks_mut(s)) {
                        causal_row_in_place_wide(row, (i + 1).min(s), factor);
                    }
                }
            };
            // Tiny heads run here: waking the pool would cost more than the products.
            if l * s > 0 && qo.len() * l * s * e.max(1) < 1 << 16 {
                for (bi, m) in out.chunks_mut(l * s).enumerate() {
                    matrix(bi, m);
                }
            } else if l * s > 0 {
                crate::parallel::install(|| {
                    out.par_chunks_mut(l * s)
                        .enumerate()
                        .for_each(|(bi, m)| matrix(bi, m))
                });
            }
            from_vec(out, &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let _g = crate::grad_mode::no_grad();
        let products = matmul(inputs[0], &transpose(inputs[1], -2, -1)?)?;
        CausalSoftmaxOp { scale: self.scale }.cuda(&[&products])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (q, k) = (&ctx.saved[0], &ctx.saved[1]);
        let gs = scores_grad(ctx.grad, &ctx.saved[2], self.scale)?;
        let gq = if ctx.needs_grad(0) {
            Some(matmul(&gs, k)?)
        } else {
            None
        };
        let gk = if ctx.needs_grad(1) {
            Some(matmul(&transpose(&gs, -2, -1)?, q)?)
        } else {
            None
        };
        Ok(vec![gq, gk])
    }
}

/// The causal attention weights `softmax(where(tril, q kᵀ · scale, -inf), -1)` of `q (..., L,
/// E)` and `k (..., S, E)` (shapes checked by the caller). One fused op ([`CausalWeightsOp`])
/// when both are CPU float tensors with the same batch axes and there are at least as many
/// matrices as threads; otherwise the product (named `"attention_scores"`) and
/// [`causal_softmax`].
pub(crate) fn causal_weights(q: &Tensor, k: &Tensor, scale: f64) -> Result<Tensor> {
    let nd = q.ndim();
    let fused = q.device() == crate::Device::Cpu
        && k.device() == crate::Device::Cpu
        && q.dtype() == k.dtype()
        && q.dtype().is_float()
        && k.ndim() == nd
        && q.shape()[..nd - 2] == k.shape()[..nd - 2]
        && q.shape()[..nd - 2].iter().product::<usize>() >= crate::parallel::num_threads();
    if fused {
        return apply(
            CausalWeightsOp { scale },
            &[q, k],
            &[Save::Input(0), Save::Input(1), Save::Output],
        );
    }
    let products = super::matmul::matmul_named(q, &transpose(k, -2, -1)?, "attention_scores")?;
    causal_softmax(&products, scale)
}
