//! Losses reduced to a 0-d mean: `mse_loss` and `cross_entropy` (fused log-sum-exp forward,
//! `(softmax - onehot) / N` backward recomputed from the saved logits). Sums over the batch
//! are accumulated in float64 in a fixed order, so results do not depend on the thread count.
//! On CUDA: `mse_loss` is a difference, square and chunked sum; `cross_entropy` runs one
//! block per row (`ce_fwd`/`ce_bwd` kernels) with the class indices copied to the device as
//! int64, and reads the output gradient on the device (no host round trip).

use super::softmax::{c_order, for_blocks};
use super::{cast, check_same_device, from_vec, mul, neg, scale, sub};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::{Element, Scalar};
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
        let parts: Vec<f64> = crate::parallel::install(|| {
            a.par_chunks(SUM_CHUNK)
                .zip(b.par_chunks(SUM_CHUNK))
                .map(part)
                .collect()
        });
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
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let dt = inputs[0].dtype().promote(inputs[1].dtype());
        let (p, t) = (cast(inputs[0], dt)?, cast(inputs[1], dt)?);
        // An empty input gives 0 / 0 = NaN, as PyTorch does.
        let n = p.numel() as f64;
        Ok(crate::dispatch!(dt, T => {
            let s = sq_diff_sum(&c_order::<T>(p.data()), &c_order::<T>(t.data()));
            from_vec(vec![T::from_f64(s / n)], &[])
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let dt = inputs[0].dtype().promote(inputs[1].dtype());
        let (p, t) = (cast(inputs[0], dt)?, cast(inputs[1], dt)?);
        let d = sub(&p, &t)?.detach();
        let sq = mul(&d, &d)?.detach();
        let s = crate::cuda::launch::sum_rows(self.name(), &sq, 1, p.numel(), &[])?;
        // sum * (1 / 0) = 0 * inf = NaN for an empty input, as on the CPU.
        super::elementwise::unary_forward(
            super::elementwise::Unary::Scale,
            &s,
            1.0 / p.numel() as f64,
        )
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // d/dp mean((p - t)^2) = 2 (p - t) g / N; the target gets the negation.
        let dt = ctx.grad.dtype();
        let (p, t) = (
            super::to_dtype(&ctx.saved[0], dt)?,
            super::to_dtype(&ctx.saved[1], dt)?,
        );
        let gp = mul(&scale(&sub(&p, &t)?, 2.0 / p.numel() as f64)?, ctx.grad)?;
        let gt = if ctx.needs_grad(1) {
            Some(neg(&gp)?)
        } else {
            None
        };
        Ok(vec![ctx.needs_grad(0).then_some(gp), gt])
    }
}

/// Mean squared error `mean((pred - target)^2)` as a 0-d tensor; the shapes must match
/// exactly. Gradients flow to both.
pub fn mse_loss(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    crate::autocast::composite("mse_loss", [Some(pred), Some(target)], |[x, t]| {
        match (x, t) {
            (Some(x), Some(t)) => mse_loss_now(x, t),
            _ => unreachable!("the operands stay present"),
        }
    })
}

fn mse_loss_now(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
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
    // PyTorch's type promotion: an int target meets a float input as that float, and
    // float32 with float64 computes in float64 (two int tensors stay an error). The
    // conversion is differentiable, so each operand's gradient comes back in its own dtype
    // (a plain cast would cut the converted one off the graph).
    let dt = pred.dtype().promote(target.dtype());
    let (pred, target) = if dt.is_float() && pred.dtype() != target.dtype() {
        (&super::to_dtype(pred, dt)?, &super::to_dtype(target, dt)?)
    } else {
        (pred, target)
    };
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
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let (rows, c) = Self::dims(x.shape());
        let target = &self.target;
        Self::check_replay(x, rows, target)?;
        Ok(crate::dispatch!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            // -log_softmax[target] = max + ln(sum exp(x - max)) - x[target], row by row.
            let row_loss = |r: usize| -> f64 {
                let row = &xs[r * c..(r + 1) * c];
                let (m, s) = row_max_sumexp(row);
                (m + s.ln() - row[target[r]]).to_f64()
            };
            // One loss per row, summed in row order (independent of the thread count).
            let mut losses = cpu::alloc::<f64>(rows);
            if x.numel() >= cpu::PAR_MIN {
                let min_len = (4096 / c.max(1)).max(1);
                crate::parallel::install(|| {
                    losses.par_iter_mut().enumerate().with_min_len(min_len).for_each(|(r, l)| *l = row_loss(r))
                });
            } else {
                losses.iter_mut().enumerate().for_each(|(r, l)| *l = row_loss(r));
            }
            // An empty batch gives 0 / 0 = NaN, as PyTorch does.
            let total: f64 = losses.iter().sum();
            from_vec(vec![T::from_f64(total / rows as f64)], &[])
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let (rows, c) = Self::dims(x.shape());
        Self::check_replay(x, rows, &self.target)?;
        let total =
            crate::cuda::launch::cross_entropy(self.name(), x, &self.target_i64(), rows, c)?;
        // An empty batch gives 0 * inf = NaN, as on the CPU.
        super::elementwise::unary_forward(
            super::elementwise::Unary::Scale,
            &total,
            1.0 / rows as f64,
        )
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let x = &ctx.saved[0];
        let g = super::to_dtype(ctx.grad, x.dtype())?;
        let op = CrossEntropyBackwardOp {
            target: self.target.clone(),
        };
        Ok(vec![Some(apply(
            op,
            &[x, &g],
            &[Save::Input(0), Save::Input(1)],
        )?)])
    }
}

/// Cross-entropy's backward `(softmax(x) - onehot(target)) g / N`, fused (the softmax is
/// recomputed from the saved logits); inputs: the logits and the 0-d output gradient.
struct CrossEntropyBackwardOp {
    target: Vec<usize>,
}

impl CrossEntropyBackwardOp {
    /// `onehot(target)` in the logits' shape, dtype and device (second order only).
    fn onehot(&self, x: &Tensor) -> Result<Tensor> {
        let (rows, c) = CrossEntropyOp::dims(x.shape());
        let t = cpu::catch_oom("cross_entropy_backward", || {
            Ok(crate::dispatch!(x.dtype(), T => {
                let mut v = cpu::filled(rows * c, T::from_f64(0.0));
                for (r, &t) in self.target.iter().enumerate() {
                    v[r * c + t] = T::from_f64(1.0);
                }
                from_vec(v, x.shape())
            }))
        })?;
        super::to_device(&t, x.device())
    }
}

impl Op for CrossEntropyBackwardOp {
    fn name(&self) -> &'static str {
        "cross_entropy_backward"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, g) = (inputs[0], inputs[1]);
        let (rows, c) = CrossEntropyOp::dims(x.shape());
        CrossEntropyOp::check_replay(x, rows, &self.target)?;
        let scale = g.item()? / rows as f64;
        let target = &self.target;
        Ok(crate::dispatch!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            let scale = T::from_f64(scale);
            let mut out = cpu::alloc::<T>(xs.len());
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
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, g) = (inputs[0], inputs[1]);
        let (rows, c) = CrossEntropyOp::dims(x.shape());
        CrossEntropyOp::check_replay(x, rows, &self.target)?;
        let t: Vec<i64> = self.target.iter().map(|&t| t as i64).collect();
        crate::cuda::launch::cross_entropy_backward(self.name(), x, &t, g, rows, c)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // With s = softmax(x) and gg the incoming gradient:
        // d/dg = sum(gg (s - onehot)) / N, d/dx = g / N * s (gg - sum(gg s, -1)).
        let (x, g) = (&ctx.saved[0], &ctx.saved[1]);
        let gg = ctx.grad;
        let rows = CrossEntropyOp::dims(x.shape()).0 as f64;
        let s = super::softmax(x, -1)?;
        let dx = if ctx.needs_grad(0) {
            let sg = super::sum(&mul(gg, &s)?, Some(&[-1]), true)?;
            let sb = mul(&s, &sub(gg, &sg)?)?;
            Some(scale(&mul(&sb, g)?, 1.0 / rows)?)
        } else {
            None
        };
        let dg = if ctx.needs_grad(1) {
            let d = sub(&s, &self.onehot(x)?)?;
            Some(scale(&super::sum(&mul(gg, &d)?, None, false)?, 1.0 / rows)?)
        } else {
            None
        };
        Ok(vec![dx, dg])
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
    // As many indices as the batch has rows: allocated fallibly.
    let mut idx: Vec<usize> = cpu::catch_oom(OP, || Ok(cpu::with_capacity(rows)))?;
    for (i, &t) in target.iter().enumerate() {
        if t < 0 || t as u64 >= c as u64 {
            return Err(Error::value(
                OP,
                format!(
                    "target[{i}] = {t} is out of range for logits of shape {} (classes are \
                     [0, {c}))",
                    fmt_shape(logits.shape())
                ),
            ));
        }
        idx.push(t as usize);
    }
    apply(CrossEntropyOp { target: idx }, &[logits], &[Save::Input(0)])
}
