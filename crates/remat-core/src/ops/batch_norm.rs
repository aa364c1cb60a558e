//! `batch_norm` with PyTorch's semantics (`F.batch_norm`): per-channel statistics of
//! `x (N, C, *)` over every axis but 1, written with the engine's ops (mean, subtract, square,
//! `rsqrt`, multiply, add), so gradients of every order and every checkpoint entry point come
//! from those ops' own rules.
//!
//! - Training, or no running statistics: normalise by the batch mean and biased variance. The
//!   running statistics, when given, are updated in place without grad,
//!   `running = momentum · stat + (1 - momentum) · running` (PyTorch's order), the variance's
//!   statistic being the unbiased one (`n / (n - 1)`), as PyTorch's.
//! - Evaluation with running statistics: normalise by them (`x · scale + shift`, the per-channel
//!   `scale = w / sqrt(running_var + eps)` and `shift = b - running_mean · scale`, as PyTorch's
//!   CPU kernel).
//!
//! Unlike PyTorch, the running statistics are updated only by the original forward: when a
//! checkpoint re-runs the same code (a segment's recompute, the planner measuring a layer, a
//! recipe replay or a rebuild under a memory limit) they are left alone
//! (`checkpoint::is_recomputing`), so a checkpointed training step leaves them exactly as a
//! plain one does.
//!
//! On the CPU the training-mode normalisation is one op (`BnTrainOp`) whose forward and
//! first-order backward are the fused kernels of `cpu/batch_norm.rs` (two passes each); it
//! keeps the input and the weight, and the per-channel statistics inside the op. A
//! `create_graph` backward composes the engine's ops instead, so second-order gradients come
//! from their rules. Elsewhere (CUDA, an empty batch, evaluation) the normalisation is the
//! composition of ops: its graph keeps one activation-sized tensor (the centred input, which
//! both the variance's square and the final product save) plus per-channel vectors, and the
//! weight is folded into the per-channel scale before the one full-size multiplication.

use super::softmax::c_order;
use super::{
    add, add_scalar, check_same_device, copy_, from_vec, mean, mul, neg, reshape, rsqrt, scale,
    square, sub, sum, zeros,
};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::checkpoint::context::OpForward;
use crate::checkpoint::is_recomputing;
use crate::cpu::batch_norm::{self as kernel, BnShape};
use crate::error::{Error, Result};
use crate::grad_mode::{is_grad_enabled, no_grad};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex};

const OP: &str = "batch_norm";

/// The running statistics to normalise by (evaluation) or to update (training).
#[derive(Clone, Copy)]
struct Running<'a> {
    mean: &'a Tensor,
    var: &'a Tensor,
}

/// Batch normalisation of `x (N, C, *)` (PyTorch's `F.batch_norm`, same argument order).
///
/// With `training` (or without running statistics) `x` is normalised by the batch's
/// per-channel mean and biased variance, and `running_mean`/`running_var` (when given) are
/// updated in place without grad: `running = momentum · stat + (1 - momentum) · running`,
/// with the unbiased variance for `running_var` — except when this thread is recomputing a
/// checkpoint ([`crate::checkpoint::is_recomputing`]), whose original forward already did.
/// Otherwise `x` is normalised by the running statistics. `weight` and `bias` hold `C`
/// elements each. Gradients flow to `x`, `weight` and `bias`, never to the running statistics
/// (passing ones that require grad with grad mode on is an error, as in PyTorch).
#[allow(clippy::too_many_arguments)] // PyTorch's signature, argument for argument.
pub fn batch_norm(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    let running = check(x, running_mean, running_var, weight, bias, training, eps)?;
    let c = x.shape()[1];
    // Per-channel tensors take the shape of the statistics, (1, C, 1, ..., 1).
    let mut stat_shape: Dims = std::iter::repeat_n(1, x.ndim()).collect();
    stat_shape[1] = c;
    let per_channel = |p: Option<&Tensor>| p.map(|p| reshape(p, &stat_shape)).transpose();
    let (w, b) = (per_channel(weight)?, per_channel(bias)?);
    match running {
        Some(r) if !training => {
            let (rm, rv) = (
                reshape(&r.mean.detach(), &stat_shape)?,
                reshape(&r.var.detach(), &stat_shape)?,
            );
            let invstd = rsqrt(&add_scalar(&rv, eps)?)?;
            let scale = match &w {
                Some(w) => mul(&invstd, w)?,
                None => invstd,
            };
            let shift = mul(&rm, &scale)?;
            let shift = match &b {
                Some(b) => sub(b, &shift)?,
                None => neg(&shift)?,
            };
            add(&mul(x, &scale)?, &shift)
        }
        _ if x.device() == crate::device::Device::Cpu && x.numel() > 0 => {
            let y = fused_train(x, weight, bias, eps, |mean, var| {
                // An empty batch leaves the statistics alone (PyTorch's kernel updates
                // nothing); a recompute leaves them to the original forward.
                match running.filter(|_| !is_recomputing()) {
                    Some(r) => update(r, mean, var, x.numel() / c, momentum),
                    None => Ok(()),
                }
            })?;
            Ok(y)
        }
        _ => {
            let n = x.numel() / c.max(1);
            let axes: Vec<isize> = (0..x.ndim() as isize).filter(|&a| a != 1).collect();
            // An empty batch has no statistics: zeros (not the NaN of a mean over nothing)
            // give an empty output and zero gradients for weight and bias, as PyTorch's.
            let mu = match n {
                0 => zeros(&stat_shape, x.dtype(), x.device())?,
                _ => mean(x, Some(&axes), true)?,
            };
            let xc = sub(x, &mu)?;
            let var = match n {
                0 => mu.clone(),
                _ => mean(&square(&xc)?, Some(&axes), true)?,
            };
            let invstd = rsqrt(&add_scalar(&var, eps)?)?;
            let scale = match &w {
                Some(w) => mul(&invstd, w)?,
                None => invstd,
            };
            let y = mul(&xc, &scale)?;
            let y = match &b {
                Some(b) => add(&y, b)?,
                None => y,
            };
            // An empty batch leaves the statistics alone (PyTorch's kernel updates nothing).
            if let Some(r) = running.filter(|_| n > 0 && !is_recomputing()) {
                update(r, &mu, &var, n, momentum)?;
            }
            Ok(y)
        }
    }
}

/// `running = momentum · stat + (1 - momentum) · running` for the mean and for the unbiased
/// variance (`var · n / (n - 1)`), without grad.
fn update(r: Running<'_>, mu: &Tensor, var: &Tensor, n: usize, momentum: f64) -> Result<()> {
    let _g = no_grad();
    // The update's ops run in the forward only, never in a recompute: they must not be
    // numbered as a segment's top-level ops, or a selective policy's recompute would look up
    // the outputs it kept under the wrong numbers. Marked as ops inside an op's forward,
    // they are not numbered (nor given evictable cells under a memory limit).
    let _nested = OpForward::enter();
    let c = [r.mean.numel()];
    let unbiased = n as f64 / (n - 1) as f64;
    let pairs = [
        (r.mean, reshape(&mu.detach(), &c)?, momentum),
        (r.var, reshape(&var.detach(), &c)?, momentum * unbiased),
    ];
    for (running, stat, m) in pairs {
        let new = add(&scale(&stat, m)?, &scale(running, 1.0 - momentum)?)?;
        copy_(running, &new)?;
    }
    Ok(())
}

/// PyTorch's argument checks, with messages naming the op, the argument and the shapes;
/// returns the running statistics (both or neither).
fn check<'a>(
    x: &Tensor,
    running_mean: Option<&'a Tensor>,
    running_var: Option<&'a Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    eps: f64,
) -> Result<Option<Running<'a>>> {
    // PyTorch's conditions, NaN passing as there.
    if training && eps <= 0.0 {
        return Err(Error::value(
            OP,
            format!("eps must be positive during training, but got {eps}"),
        ));
    }
    if eps < 0.0 {
        return Err(Error::value(
            OP,
            format!("eps must be non-negative, but got {eps}"),
        ));
    }
    if x.ndim() < 2 {
        return Err(Error::shape(
            OP,
            format!(
                "expected an input of at least 2 dims (N, C, *), got shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!(
                "expected a float32 or float64 input, got a {} tensor of shape {}",
                x.dtype(),
                fmt_shape(x.shape())
            ),
        ));
    }
    let c = x.shape()[1];
    let n = x.numel() / c.max(1);
    if training && n == 1 {
        return Err(Error::value(
            OP,
            format!(
                "Expected more than 1 value per channel when training, got input size {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    let running = match (running_mean, running_var) {
        (Some(mean), Some(var)) => Some(Running { mean, var }),
        (None, None) => None,
        _ => {
            return Err(Error::value(
                OP,
                "running_mean and running_var must either both be None or neither be None",
            ))
        }
    };
    if running.is_none() && !training {
        return Err(Error::value(
            OP,
            "running_mean must be defined in evaluation mode (pass the running statistics, \
             or training=True to normalise by the batch's)",
        ));
    }
    let mut all: Vec<&Tensor> = vec![x];
    let stats = running
        .iter()
        .flat_map(|r| [("running_mean", r.mean), ("running_var", r.var)]);
    let params = [("weight", weight), ("bias", bias)];
    let params = params.into_iter().filter_map(|(n, p)| p.map(|p| (n, p)));
    for (what, p) in stats.chain(params) {
        // PyTorch counts the elements of weight and bias; the running statistics are (C,).
        let fits = if what.starts_with("running") {
            p.shape() == [c]
        } else {
            p.numel() == c
        };
        if !fits {
            return Err(Error::shape(
                OP,
                format!(
                    "{what} should contain {c} elements (shape ({c},)), got shape {} (input {})",
                    fmt_shape(p.shape()),
                    fmt_shape(x.shape())
                ),
            ));
        }
        if p.dtype() != x.dtype() {
            return Err(Error::dtype(
                OP,
                format!(
                    "all inputs must share one dtype: the input is {} but {what} is {}",
                    x.dtype(),
                    p.dtype()
                ),
            ));
        }
        all.push(p);
    }
    check_same_device(OP, &all)?;
    if let Some(r) = running {
        if is_grad_enabled() && (r.mean.requires_grad() || r.var.requires_grad()) {
            return Err(Error::graph(
                OP,
                "batch_norm is not differentiable with respect to running_mean and \
                 running_var; they cannot require grad",
            ));
        }
    }
    Ok(running)
}

/// The per-channel batch mean and biased variance of the last forward (float64).
type Stats = Arc<Mutex<Option<(Vec<f64>, Vec<f64>)>>>;

/// Training-mode normalisation on the CPU: inputs `x (N, C, *)`, then `weight (C,)` and
/// `bias (C,)` when present. The forward keeps its statistics in `stats` (for the running
/// update and the backward; a recompute writes the same values again).
struct BnTrainOp {
    eps: f64,
    weight: bool,
    bias: bool,
    stats: Stats,
}

impl BnTrainOp {
    fn shape(x: &Tensor) -> BnShape {
        let (n, c) = (x.shape()[0], x.shape()[1]);
        BnShape {
            n,
            c,
            s: x.numel() / (n * c).max(1),
        }
    }
    fn invstd(&self, var: &[f64]) -> Vec<f64> {
        var.iter().map(|v| 1.0 / (v + self.eps).sqrt()).collect()
    }
    /// The gradients composed of the engine's ops (a `create_graph` backward): the same
    /// formula, differentiable in `x`, the weight and the output gradient.
    fn composed_backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved[0];
        let c = x.shape()[1];
        let mut stat_shape: Dims = std::iter::repeat_n(1, x.ndim()).collect();
        stat_shape[1] = c;
        let axes: Vec<isize> = (0..x.ndim() as isize).filter(|&a| a != 1).collect();
        let m = (x.numel() / c) as f64;
        let mu = mean(x, Some(&axes), true)?;
        let xc = sub(x, &mu)?;
        let invstd = rsqrt(&add_scalar(
            &mean(&square(&xc)?, Some(&axes), true)?,
            self.eps,
        )?)?;
        let xhat = mul(&xc, &invstd)?;
        let dy = ctx.grad;
        let sdy = sum(dy, Some(&axes), true)?;
        let sdyx = sum(&mul(dy, &xhat)?, Some(&axes), true)?;
        let mut grads = vec![None; 1 + self.weight as usize + self.bias as usize];
        if ctx.needs_grad(0) {
            let k = match self.weight {
                true => mul(&invstd, &reshape(&ctx.saved[1], &stat_shape)?)?,
                false => invstd.clone(),
            };
            let inner = sub(
                &sub(dy, &scale(&sdy, 1.0 / m)?)?,
                &mul(&xhat, &scale(&sdyx, 1.0 / m)?)?,
            )?;
            grads[0] = Some(mul(&k, &inner)?);
        }
        if self.weight && ctx.needs_grad(1) {
            grads[1] = Some(reshape(&sdyx, &[c])?);
        }
        let b = 1 + self.weight as usize;
        if self.bias && ctx.needs_grad(b) {
            grads[b] = Some(reshape(&sdy, &[c])?);
        }
        Ok(grads)
    }
}

impl Op for BnTrainOp {
    fn name(&self) -> &'static str {
        OP
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let sh = Self::shape(x);
        let (w, b) = (
            self.weight.then(|| inputs[1]),
            self.bias.then(|| inputs[1 + self.weight as usize]),
        );
        crate::cpu::catch_oom(OP, || {
            Ok(crate::dispatch!(x.dtype(), T => {
                let xs = c_order::<T>(x.data());
                let (mean, var) = kernel::stats(&sh, &xs);
                let ws = w.map(|w| c_order::<T>(w.data()));
                let bs = b.map(|b| c_order::<T>(b.data()));
                let (a, off) = kernel::affine(&mean, &self.invstd(&var), ws.as_deref(), bs.as_deref());
                let mut out = crate::cpu::alloc::<T>(xs.len());
                kernel::normalize(&sh, &xs, &a, &off, &mut out);
                *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = Some((mean, var));
                from_vec(out, x.shape())
            }))
        })
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if crate::grad_mode::is_grad_enabled() {
            return self.composed_backward(ctx);
        }
        let x = &ctx.saved[0];
        let sh = Self::shape(x);
        let stats = self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let need = [
            ctx.needs_grad(0),
            self.weight && ctx.needs_grad(1),
            self.bias && ctx.needs_grad(1 + self.weight as usize),
        ];
        let grads = crate::dispatch!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            let (mean, var) = stats.unwrap_or_else(|| kernel::stats(&sh, &xs));
            let ws = self.weight.then(|| c_order::<T>(ctx.saved[1].data()));
            let gy = c_order::<T>(ctx.grad.data());
            let (gx, gw, gb) =
                kernel::backward(&sh, &xs, &gy, &mean, &self.invstd(&var), ws.as_deref(), need);
            let c = sh.c;
            let mut g = vec![gx.map(|v| from_vec(v, x.shape()))];
            if self.weight {
                g.push(gw.map(|v| from_vec(v, &[c])));
            }
            if self.bias {
                g.push(gb.map(|v| from_vec(v, &[c])));
            }
            g
        });
        Ok(grads)
    }
}

/// The training-mode normalisation of a non-empty CPU input by [`BnTrainOp`]; `update` gets
/// the batch mean and biased variance as `(C,)` tensors (for the running statistics).
fn fused_train(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    update: impl FnOnce(&Tensor, &Tensor) -> Result<()>,
) -> Result<Tensor> {
    let c = x.shape()[1];
    let stats: Stats = Arc::default();
    let flat = |p: Option<&Tensor>| p.map(|p| reshape(p, &[c])).transpose();
    let (w, b) = (flat(weight)?, flat(bias)?);
    let mut inputs = vec![x];
    inputs.extend(w.as_ref());
    inputs.extend(b.as_ref());
    let mut saves = vec![Save::Input(0)];
    if w.is_some() {
        saves.push(Save::Input(1));
    }
    let op = BnTrainOp {
        eps,
        weight: w.is_some(),
        bias: b.is_some(),
        stats: stats.clone(),
    };
    let y = apply(op, &inputs, &saves)?;
    let kept = stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some((mean, var)) = kept {
        let dt = x.dtype();
        let to = |v: Vec<f64>| -> Result<Tensor> { super::to_dtype(&from_vec(v, &[c]), dt) };
        update(&to(mean)?, &to(var)?)?;
    }
    Ok(y)
}
