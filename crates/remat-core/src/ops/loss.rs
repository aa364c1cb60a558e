//! Losses reduced to a 0-d mean: `mse_loss` and `cross_entropy` (fused log-sum-exp forward,
//! `(softmax - onehot) / N` backward recomputed from the saved logits). Sums over the batch
//! are accumulated in float64 in a fixed order, so results do not depend on the thread count.
//! On CUDA: `mse_loss` is a difference, square and chunked sum; `cross_entropy` runs one
//! block per row (`ce_fwd`/`ce_bwd` kernels) with the class indices copied to the device as
//! int64, and reads the output gradient on the device (no host round trip).

use super::softmax::{c_order, for_blocks};
use super::unary::{map_t, zip_t};
use super::{cast, check_same_device, from_vec};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Elements per partial sum of the deterministic parallel reductions.
const SUM_CHUNK: usize = 8192;

/// `sum((a - b)^2)` in float64, in fixed chunks added in order.
fn sq_diff_sum<T: Element>(a: &[T], b: &[T]) -> f64 {
    let part = |(x, y): (&[T], &[T])| {
        x.iter().zip(y).fold(0.0f64, |acc, (&x, &y)| {
            let d = x.to_f64() - y.to_f64();
            acc + d * d
        })
    };
    if a.len() >= cpu::PAR_MIN {
        let parts: Vec<f64> = a
            .par_chunks(SUM_CHUNK)
            .zip(b.par_chunks(SUM_CHUNK))
            .map(part)
            .collect();
        parts.iter().sum()
    } else {
        a.chunks(SUM_CHUNK).zip(b.chunks(SUM_CHUNK)).map(part).sum()
    }
}

struct MseLossOp;

impl Op for MseLossOp {
    fn name(&self) -> &'static str {
        "mse_loss"
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let dt = inputs[0].dtype().promote(inputs[1].dtype());
        let (p, t) = (cast(inputs[0], dt)?, cast(inputs[1], dt)?);
        // An empty input gives 0 / 0 = NaN, as PyTorch does.
        let n = p.numel() as f64;
        if super::is_cuda(&p) {
            use crate::cuda::launch::{self as cu, BinaryCode as B, UnaryCode as U};
            let op = self.name();
            let d = cu::binary(op, B::Sub, &p, &t, p.shape())?;
            let sq = cu::binary(op, B::Mul, &d, &d, p.shape())?;
            let s = cu::sum_rows(op, &sq, 1, p.numel(), &[])?;
            // sum * (1 / 0) = 0 * inf = NaN for an empty input, as on the CPU.
            return cu::unary_p(op, U::Scale, &s, 1.0 / n);
        }
        Ok(crate::dispatch!(dt, T => {
            let s = sq_diff_sum(&c_order::<T>(p.data()), &c_order::<T>(t.data()));
            from_vec(vec![T::from_f64(s / n)], &[])
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let dt = ctx.grad.dtype();
        let (p, t) = (cast(&ctx.saved[0], dt)?, cast(&ctx.saved[1], dt)?);
        if super::is_cuda(&p) {
            use crate::cuda::launch::{self as cu, BinaryCode as B, UnaryCode as U};
            let op = self.name();
            // 2 g / N on the device, then (p - t) times it; the target gets the negation.
            let s = cu::unary_p(op, U::Scale, ctx.grad, 2.0 / p.numel() as f64)?;
            let d = cu::binary(op, B::Sub, &p, &t, p.shape())?;
            let gp = cu::binary(op, B::Mul, &d, &s, p.shape())?;
            let gt = if ctx.needs_grad(1) {
                Some(cu::unary(op, U::Neg, &gp)?)
            } else {
                None
            };
            return Ok(vec![ctx.needs_grad(0).then_some(gp), gt]);
        }
        // d/dp mean((p - t)^2) = 2 (p - t) / N; the target gets the negation.
        let scale = 2.0 * ctx.grad.item()? / p.numel() as f64;
        let shape = p.shape();
        let (gp, gt) = if ctx.needs_grad(0) {
            let gp = zip_t!(&p, &t, shape, |p, t| (p - t) * T::from_f64(scale));
            let gt = ctx.needs_grad(1).then(|| map_t!(&gp, |v| -v));
            (Some(gp), gt)
        } else if ctx.needs_grad(1) {
            (
                None,
                Some(zip_t!(&p, &t, shape, |p, t| (t - p) * T::from_f64(scale))),
            )
        } else {
            (None, None)
        };
        Ok(vec![gp, gt])
    }
}

/// Mean squared error `mean((pred - target)^2)` as a 0-d tensor; the shapes must match
/// exactly. Gradients flow to both.
pub fn mse_loss(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    if pred.shape() != target.shape() {
        return Err(Error::shape(
            "mse_loss",
            format!(
                "pred has shape {} but target has shape {}; they must match",
                fmt_shape(pred.shape()),
                fmt_shape(target.shape())
            ),
        ));
    }
    check_same_device("mse_loss", &[pred, target])?;
    apply(
        MseLossOp,
        &[pred, target],
        &[Save::Input(0), Save::Input(1)],
    )
}

/// The maximum of a row and `sum(exp(row - max))`.
#[inline]
fn row_max_sumexp<T: Element>(row: &[T]) -> (T, T) {
    let m = row
        .iter()
        .fold(T::neg_infinity(), |m, &v| if v > m { v } else { m });
    let s = row.iter().fold(T::from_f64(0.0), |a, &v| a + (v - m).exp());
    (m, s)
}

struct CrossEntropyOp {
    /// The class index of each row (validated against the logits' shape).
    target: Vec<usize>,
}

impl CrossEntropyOp {
    /// `(rows, classes)` of the logits (`(C,)` is one row).
    fn dims(shape: &[usize]) -> (usize, usize) {
        match shape {
            [c] => (1, *c),
            [n, c] => (*n, *c),
            _ => (0, 0),
        }
    }

    /// The class indices as the int64 values the CUDA kernels read.
    fn target_i64(&self) -> Vec<i64> {
        self.target.iter().map(|&t| t as i64).collect()
    }

    /// Error (not an out-of-bounds device read) when a replayed input no longer fits the
    /// validated targets.
    fn check_replay(x: &Tensor, rows: usize, target: &[usize]) -> Result<()> {
        let c = Self::dims(x.shape()).1;
        if target.len() != rows || target.iter().any(|&t| t >= c) {
            return Err(Error::shape(
                "cross_entropy",
                format!(
                    "logits of shape {} do not fit the {} target indices",
                    fmt_shape(x.shape()),
                    target.len()
                ),
            ));
        }
        Ok(())
    }
}

impl Op for CrossEntropyOp {
    fn name(&self) -> &'static str {
        "cross_entropy"
    }
    fn supports_cuda(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let (rows, c) = Self::dims(x.shape());
        let target = &self.target;
        if super::is_cuda(x) {
            Self::check_replay(x, rows, target)?;
            let t = self.target_i64();
            return crate::cuda::launch::cross_entropy(self.name(), x, &t, rows, c);
        }
        Ok(crate::dispatch!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            // -log_softmax[target] = max + ln(sum exp(x - max)) - x[target], row by row.
            let row_loss = |r: usize| -> f64 {
                let row = &xs[r * c..(r + 1) * c];
                let (m, s) = row_max_sumexp(row);
                (m + s.ln() - row[target[r]]).to_f64()
            };
            let losses: Vec<f64> = if x.numel() >= cpu::PAR_MIN {
                (0..rows).into_par_iter().with_min_len((4096 / c.max(1)).max(1)).map(row_loss).collect()
            } else {
                (0..rows).map(row_loss).collect()
            };
            // An empty batch gives 0 / 0 = NaN, as PyTorch does.
            let total: f64 = losses.iter().sum();
            from_vec(vec![T::from_f64(total / rows as f64)], &[])
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let x = &ctx.saved[0];
        let (rows, c) = Self::dims(x.shape());
        if super::is_cuda(x) {
            Self::check_replay(x, rows, &self.target)?;
            let t = self.target_i64();
            let gx =
                crate::cuda::launch::cross_entropy_backward(self.name(), x, &t, ctx.grad, rows, c)?;
            return Ok(vec![Some(gx)]);
        }
        let scale = ctx.grad.item()? / rows as f64;
        let target = &self.target;
        let gx = crate::dispatch!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            let scale = T::from_f64(scale);
            let mut out = cpu::alloc::<T>(xs.len());
            // (softmax(row) - onehot(target)) * g / N, the softmax recomputed from the logits.
            for_blocks(&mut out, c, |r, o| {
                let row = &xs[r * c..(r + 1) * c];
                let (m, s) = row_max_sumexp(row);
                let inv = T::from_f64(1.0) / s;
                for (o, &v) in o.iter_mut().zip(row) {
                    *o = (v - m).exp() * inv * scale;
                }
                o[target[r]] -= scale;
            });
            from_vec(out, x.shape())
        });
        Ok(vec![Some(gx)])
    }
}

/// Cross-entropy of `logits` `(N, C)` (or `(C,)` with one target) against integer class
/// indices: the batch mean of `-log_softmax(logits)[i, target[i]]`, as a 0-d tensor.
/// `target` must have N entries, each in `[0, C)`.
pub fn cross_entropy(logits: &Tensor, target: &[i64]) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    let (rows, c) = match logits.shape() {
        [c] => (1, *c),
        [n, c] => (*n, *c),
        s => {
            return Err(Error::shape(
                OP,
                format!(
                    "logits must have shape (N, C) or (C,), got {}",
                    fmt_shape(s)
                ),
            ))
        }
    };
    if target.len() != rows {
        return Err(Error::shape(
            OP,
            format!(
                "logits of shape {} need {rows} target indices, got {}",
                fmt_shape(logits.shape()),
                target.len()
            ),
        ));
    }
    let mut idx = Vec::with_capacity(rows);
    for (i, &t) in target.iter().enumerate() {
        if t < 0 || t as u64 >= c as u64 {
            return Err(Error::value(
                OP,
                format!(
                    "target[{i}] = {t} is out of range for logits of shape {} (classes are \
                     0..{c})",
                    fmt_shape(logits.shape())
                ),
            ));
        }
        idx.push(t as usize);
    }
    apply(CrossEntropyOp { target: idx }, &[logits], &[Save::Input(0)])
}
