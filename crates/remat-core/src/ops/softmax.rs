//! softmax and log_softmax over one axis, numerically stable (the row maximum is subtracted
//! before exponentiating). Both save only their output: the backward of softmax is
//! `y (g - sum(g y))` and of log_softmax `g - exp(y) sum(g)`.
//!
//! Also the row-kernel helpers shared with `norm` and `loss`: a C-order view of any tensor
//! (borrowed when already contiguous) and a block driver that runs on the rayon pool for
//! large tensors.

use super::from_vec;
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
pub(crate) use crate::cpu::row_max::row_max;
use crate::dtype::Element;
use crate::error::Result;
use crate::layout::normalize_axis;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use rayon::prelude::*;
use std::borrow::Cow;

/// The view's elements in C order: borrowed when the view is contiguous, else gathered.
pub(crate) fn c_order<T: crate::dtype::Scalar>(d: &TensorData) -> Cow<'_, [T]> {
    match cpu::contiguous_slice::<T>(d) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(cpu::gather::<T>(d)),
    }
}

/// Run `f(i, block_i)` over the consecutive `block`-element blocks of `out`; on the rayon pool
/// when `out` has at least `cpu::PAR_MIN` elements. Each block is computed by one call, so the
/// result does not depend on the thread count.
pub(crate) fn for_blocks<T: Element>(
    out: &mut [T],
    block: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if out.is_empty() || block == 0 {
        return;
    }
    if out.len() >= cpu::PAR_MIN && out.len() > block {
        // Group short rows so each rayon task does a few thousand elements of work.
        let min_len = (4096 / block).max(1);
        crate::parallel::install(|| {
            out.par_chunks_mut(block)
                .enumerate()
                .with_min_len(min_len)
                .for_each(|(i, o)| f(i, o))
        });
    } else {
        for (i, o) in out.chunks_mut(block).enumerate() {
            f(i, o);
        }
    }
}

/// `(outer, n, inner)`: the extents before, along and after `axis` (a 0-d tensor is one
/// element along its only "axis").
fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// `y[i] = e^(x[i] - m)` (the vectorising [`Element::kernel_exp`]; arguments are `<= 0`)
/// and their sum, in eight lanes (a fixed order: the result does not depend on threads). Two
/// plain passes: the exponentials vectorise as one loop (an eight-lane loop computing both
/// was split into 128-bit pieces and scalars), then the lanes sum.
#[inline(always)]
fn exp_shifted<T: Element>(x: &[T], y: &mut [T], m: T) -> T {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = (v - m).kernel_exp();
    }
    lane_sum(y)
}

/// `sum(y)` in eight lanes, then the lanes pairwise (a fixed order: the result does not
/// depend on threads).
#[inline(always)]
pub(crate) fn lane_sum<T: Element>(y: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let chunks = y.chunks_exact(8);
    let rem = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i];
        }
    }
    let mut s = cpu::fold_halves(acc);
    for &v in rem {
        s += v;
    }
    s
}

/// `sum_i a[i] * b[i]` in eight lanes.
#[inline(always)]
fn dot8<T: Element>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = cpu::fold_halves(acc);
    for (&x, &y) in ar.iter().zip(br) {
        s += x * y;
    }
    s
}

/// Softmax (or log-softmax) of one `(n, inner)` block along its first axis (this and the
/// helpers above inline into [`softmax_block_avx2`]'s AVX2 copy). `safe` (softmax only):
/// a row of only `-inf` gives zeros instead of `0 / 0 = NaN`.
#[inline(always)]
fn softmax_block<T: Element>(x: &[T], y: &mut [T], n: usize, inner: usize, log: bool, safe: bool) {
    let one = T::from_f64(1.0);
    if inner == 1 {
        // One contiguous row: max, exp and sum, scale; each pass vectorises.
        let m = row_max(x);
        if safe && m == T::neg_infinity() && x.iter().all(|&v| v == m) {
            y.fill(T::zero());
            return;
        }
        let s = exp_shifted(x, y, m);
        if log {
            // (v - m) first: exact for nearby values, where m + ln(s) would round.
            let ls = s.ln();
            for (o, &v) in y.iter_mut().zip(x) {
                *o = v - m - ls;
            }
        } else {
            let inv = one / s;
            for o in y.iter_mut() {
                *o *= inv;
            }
        }
        return;
    }
    // Strided rows: walk the block row by row so every pass is contiguous along `inner`.
    let mut m = cpu::collect_exact(x[..inner].iter().copied());
    for k in 1..n {
        for (m, &v) in m.iter_mut().zip(&x[k * inner..(k + 1) * inner]) {
            if v > *m {
                *m = v;
            }
        }
    }
    let mut s = cpu::filled(inner, T::from_f64(0.0));
    for k in 0..n {
        let (xr, yr) = (
            &x[k * inner..(k + 1) * inner],
            &mut y[k * inner..(k + 1) * inner],
        );
        for i in 0..inner {
            let e = (xr[i] - m[i]).exp();
            yr[i] = e;
            s[i] += e;
        }
    }
    if log {
        let ls: Vec<T> = cpu::collect_exact(s.iter().map(|s| s.ln()));
        for k in 0..n {
            let (xr, yr) = (
                &x[k * inner..(k + 1) * inner],
                &mut y[k * inner..(k + 1) * inner],
            );
            for i in 0..inner {
                yr[i] = xr[i] - m[i] - ls[i];
            }
        }
    } else {
        for s in s.iter_mut() {
            *s = one / *s;
        }
        for yr in y.chunks_mut(inner) {
            for (o, &inv) in yr.iter_mut().zip(&s) {
                *o *= inv;
            }
        }
        if safe {
            // The NaN columns of rows that are all `-inf` (a maximum of `-inf` with a NaN
            // elsewhere in the row stays NaN, as PyTorch's `_safe_softmax`).
            for i in (0..inner).filter(|&i| m[i] == T::neg_infinity()) {
                if (0..n).all(|k| x[k * inner + i] == T::neg_infinity()) {
                    (0..n).for_each(|k| y[k * inner + i] = T::zero());
                }
            }
        }
    }
}

/// The input gradient of one `(n, inner)` block from the output `y` and its gradient `g`.
#[inline(always)]
fn softmax_backward_block<T: Element>(
    g: &[T],
    y: &[T],
    gx: &mut [T],
    n: usize,
    inner: usize,
    log: bool,
) {
    // softmax:     gx = y (g - sum_k g y)
    // log_softmax: gx = g - exp(y) sum_k g
    if inner == 1 && !log {
        let a = dot8(g, y);
        for ((o, &g), &y) in gx.iter_mut().zip(g).zip(y) {
            *o = y * (g - a);
        }
        return;
    }
    let mut acc = cpu::filled(inner, T::from_f64(0.0));
    for k in 0..n {
        let r = k * inner..(k + 1) * inner;
        for ((a, &g), &y) in acc.iter_mut().zip(&g[r.clone()]).zip(&y[r]) {
            *a += if log { g } else { g * y };
        }
    }
    for k in 0..n {
        let r = k * inner..(k + 1) * inner;
        for (((o, &g), &y), &a) in gx[r.clone()]
            .iter_mut()
            .zip(&g[r.clone()])
            .zip(&y[r])
            .zip(&acc)
        {
            *o = if log { g - y.exp() * a } else { y * (g - a) };
        }
    }
}

cpu::avx2_twin! {
    /// [`softmax_block`], in AVX2 where the CPU has it.
    fn softmax_block_avx2<T: Element>(
        x: &[T], y: &mut [T], n: usize, inner: usize, log: bool, safe: bool
    ) = softmax_block;
}

cpu::avx2_twin! {
    /// [`softmax_backward_block`], in AVX2 where the CPU has it.
    fn softmax_backward_block_avx2<T: Element>(
        g: &[T], y: &[T], gx: &mut [T], n: usize, inner: usize, log: bool
    ) = softmax_backward_block;
}

struct SoftmaxOp {
    axis: usize,
    log: bool,
    /// PyTorch's `_safe_softmax` (attention weights): a row of only `-inf` gives zeros.
    safe: bool,
}

impl Op for SoftmaxOp {
    fn name(&self) -> &'static str {
        if self.log {
            "log_softmax"
        } else {
            "softmax"
        }
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let (_, n, inner) = split_at_axis(x.shape(), self.axis);
        let block = n * inner;
        let (log, safe) = (self.log, self.safe);
        Ok(crate::dispatch!(x.dtype(), T => {
            let src = c_order::<T>(x.data());
            let mut out = cpu::alloc::<T>(src.len());
            for_blocks(&mut out, block, |b, o| {
                softmax_block_avx2(&src[b * block..(b + 1) * block], o, n, inner, log, safe)
            });
            from_vec(out, x.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let y = crate::cuda::launch::softmax(self.name(), inputs[0], self.axis, self.log)?;
        if !self.safe {
            return Ok(y);
        }
        // The kernel's NaN rows zeroed afterwards: a row is all `-inf` exactly when its
        // maximum is `-inf` (a NaN maximum stays NaN, as on the CPU).
        let x = inputs[0].detach();
        let (dt, dev) = (x.dtype(), x.device());
        let m = super::amax(&x, Some(&[self.axis as isize]), true)?;
        let dead = super::eq(&m, &super::full(&[], f64::NEG_INFINITY, dt, dev)?)?;
        super::where_(&dead, &super::zeros(&[], dt, dev)?, &y)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let y = &ctx.saved[0];
        let g = super::to_dtype(ctx.grad, y.dtype())?;
        let back = SoftmaxBackwardOp {
            axis: self.axis,
            log: self.log,
        };
        Ok(vec![Some(apply(
            back,
            &[&g, y],
            &[Save::Input(0), Save::Input(1)],
        )?)])
    }
}

/// The fused backward of (log_)softmax: inputs the output gradient `g` and the output `y`;
/// `y (g - sum(g y))` for softmax, `g - e^y sum(g)` for log_softmax (sums along the axis).
struct SoftmaxBackwardOp {
    axis: usize,
    log: bool,
}

impl SoftmaxBackwardOp {
    /// `sum(t)` along the op's axis, kept for broadcasting (a 0-d tensor is its own sum).
    fn sum_axis(&self, t: &Tensor) -> Result<Tensor> {
        if t.ndim() == 0 {
            return Ok(t.clone());
        }
        super::sum(t, Some(&[self.axis as isize]), true)
    }
}

impl Op for SoftmaxBackwardOp {
    fn name(&self) -> &'static str {
        if self.log {
            "log_softmax_backward"
        } else {
            "softmax_backward"
        }
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, y) = (inputs[0], inputs[1]);
        let (_, n, inner) = split_at_axis(y.shape(), self.axis);
        let block = n * inner;
        let log = self.log;
        Ok(crate::dispatch!(y.dtype(), T => {
            let (gs, ys) = (c_order::<T>(g.data()), c_order::<T>(y.data()));
            let mut out = cpu::alloc::<T>(ys.len());
            for_blocks(&mut out, block, |b, o| {
                let r = b * block..(b + 1) * block;
                softmax_backward_block_avx2(&gs[r.clone()], &ys[r], o, n, inner, log)
            });
            from_vec(out, y.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::cuda::launch::softmax_backward(
            self.name(),
            inputs[0],
            inputs[1],
            self.axis,
            self.log,
        )
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        use super::{exp, mul, neg, sub};
        let (g, y) = (&ctx.saved[0], &ctx.saved[1]);
        let gg = ctx.grad;
        let (dg, dy) = if self.log {
            // gx = g - e^y sum(g)
            let ey = exp(y)?;
            let dg = ctx
                .needs_grad(0)
                .then(|| sub(gg, &self.sum_axis(&mul(gg, &ey)?)?))
                .transpose()?;
            let dy = ctx
                .needs_grad(1)
                .then(|| neg(&mul(&mul(gg, &ey)?, &self.sum_axis(g)?)?))
                .transpose()?;
            (dg, dy)
        } else {
            // gx = y (g - sum(g y))
            let dg = ctx
                .needs_grad(0)
                .then(|| {
                    apply(
                        SoftmaxBackwardOp { ..*self },
                        &[gg, y],
                        &[Save::Input(0), Save::Input(1)],
                    )
                })
                .transpose()?;
            let dy = if ctx.needs_grad(1) {
                let a = mul(g, &sub(gg, &self.sum_axis(&mul(gg, y)?)?)?)?;
                Some(sub(&a, &mul(gg, &self.sum_axis(&mul(g, y)?)?)?)?)
            } else {
                None
            };
            (dg, dy)
        };
        Ok(vec![dg, dy])
    }
}

/// The input gradient of softmax along `axis` (normalized) from its output `y` and the
/// output's gradient `g`: `y (g - sum(g y))`, differentiable in both.
pub(crate) fn softmax_backward(g: &Tensor, y: &Tensor, axis: usize) -> Result<Tensor> {
    apply(
        SoftmaxBackwardOp { axis, log: false },
        &[g, y],
        &[Save::Input(0), Save::Input(1)],
    )
}

fn softmax_impl(x: &Tensor, axis: isize, log: bool, safe: bool) -> Result<Tensor> {
    let op = if log { "log_softmax" } else { "softmax" };
    // A 0-d tensor has one implicit axis (0 or -1), as in PyTorch.
    let axis = normalize_axis(op, axis, x.ndim().max(1))?;
    apply(SoftmaxOp { axis, log, safe }, &[x], &[Save::Output])
}

/// Softmax along `axis` where a row of only `-inf` gives zeros, not NaN (PyTorch's
/// `_safe_softmax`, which its attention uses): fully masked attention rows give a zero
/// output. The backward is softmax's `y (g - sum(g y))`, exactly 0 on those rows.
pub(crate) fn softmax_safe(x: &Tensor, axis: isize) -> Result<Tensor> {
    softmax_impl(x, axis, false, true)
}

/// `exp(x) / sum(exp(x))` along `axis`, computed stably.
pub fn softmax(x: &Tensor, axis: isize) -> Result<Tensor> {
    softmax_impl(x, axis, false, false)
}

/// `x - logsumexp(x)` along `axis`, computed stably.
pub fn log_softmax(x: &Tensor, axis: isize) -> Result<Tensor> {
    softmax_impl(x, axis, true, false)
}

impl Tensor {
    /// Softmax along `axis`.
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        softmax(self, axis)
    }
    /// Log-softmax along `axis`.
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        log_softmax(self, axis)
    }
}

#[cfg(test)]
mod tests {
    // Tests panic on failure by design.
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn safe_softmax_zeroes_rows_of_only_minus_infinity_on_either_layout() {
        let ninf = f64::NEG_INFINITY;
        // (3, 2) along axis 0: strided rows (column 1 all -inf, column 0 normal); then the
        // transpose's contiguous rows. A NaN beside -inf stays NaN, as PyTorch's.
        let x = Tensor::from_vec(vec![0.0, ninf, 1.0, ninf, 2.0, ninf], &[3, 2]).unwrap();
        let y = softmax_safe(&x, 0).unwrap().to_vec::<f64>();
        let z: f64 = [0.0f64, 1.0, 2.0].iter().map(|v| v.exp()).sum();
        for k in 0..3 {
            assert!((y[2 * k] - (k as f64).exp() / z).abs() < 1e-15);
            assert_eq!(y[2 * k + 1], 0.0);
        }
        let xt = super::super::contiguous(&super::super::t(&x).unwrap()).unwrap();
        let yt = softmax_safe(&xt, -1).unwrap().to_vec::<f64>();
        assert_eq!(&yt[3..], &[0.0; 3]);
        let n = Tensor::from_vec(vec![f64::NAN, ninf], &[1, 2]).unwrap();
        assert!(softmax_safe(&n, -1).unwrap().to_vec::<f64>()[0].is_nan());
        // The plain softmax keeps NaN for a row of -inf, as PyTorch's `softmax`.
        assert!(softmax(&xt, -1).unwrap().to_vec::<f64>()[3].is_nan());
    }
}
