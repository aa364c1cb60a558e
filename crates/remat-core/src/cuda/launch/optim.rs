//! Fused optimizer updates in place: SGD (with momentum, dampening, Nesterov, weight decay)
//! and Adam/AdamW, with the CPU's formulas.

use super::common::{buffer, grid, kernel_name, launch, opt_ptr, plan};
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

/// One fused SGD update of the contiguous `param` (and momentum buffer `buf`) in place from
/// `grad` (any layout, same shape; not sharing their storage); the CPU's formula.
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    op: &str,
    param: &Tensor,
    grad: &Tensor,
    buf: Option<&Tensor>,
    first_step: bool,
    lr: f64,
    momentum: f64,
    weight_decay: f64,
    dampening: f64,
    nesterov: bool,
) -> Result<()> {
    let pb = buffer(op, param)?;
    let ctx = pb.context().clone();
    let n = param.numel();
    if n == 0 {
        return Ok(());
    }
    let gb = buffer(op, grad)?;
    let kl = plan(op, param.shape(), &[grad.layout()])?;
    let f = ctx.function(op, kernel_name("sgd", param.dtype()))?;
    let (nn, pp, gp, lg, bp) = (
        n as i64,
        pb.ptr_at(param.layout().offset),
        gb.ptr_at(grad.layout().offset),
        kl[0],
        opt_ptr(op, buf)?,
    );
    let (first, nest, use_wd) = (
        first_step as i32,
        nesterov as i32,
        (weight_decay != 0.0) as i32,
    );
    let damp = 1.0 - dampening;
    // `sgd_*`: updates n contiguous elements of param (and buf, or null) from grad's view.
    launch!(
        op,
        ctx,
        f,
        grid(n),
        nn,
        pp,
        gp,
        lg,
        bp,
        first,
        lr,
        momentum,
        weight_decay,
        damp,
        nest,
        use_wd
    )
}

/// One fused Adam/AdamW update of the contiguous `param`, `exp_avg`, `exp_avg_sq` in place
/// from `grad` (any layout); the scalars are the CPU's precomputed ones.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    op: &str,
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    max_exp_avg_sq: Option<&Tensor>,
    decoupled: bool,
    lr: f64,
    weight_decay: f64,
    beta1: f64,
    beta2: f64,
    step_size: f64,
    bias_correction2_sqrt: f64,
    eps: f64,
) -> Result<()> {
    let pb = buffer(op, param)?;
    let ctx = pb.context().clone();
    let n = param.numel();
    if n == 0 {
        return Ok(());
    }
    let gb = buffer(op, grad)?;
    let kl = plan(op, param.shape(), &[grad.layout()])?;
    let f = ctx.function(op, kernel_name("adam", param.dtype()))?;
    let (nn, pp, gp, lg, mp, vp) = (
        n as i64,
        pb.ptr_at(param.layout().offset),
        gb.ptr_at(grad.layout().offset),
        kl[0],
        opt_ptr(op, Some(exp_avg))?,
        opt_ptr(op, Some(exp_avg_sq))?,
    );
    // Null without amsgrad.
    let vmaxp = opt_ptr(op, max_exp_avg_sq)?;
    let (use_wd, dec) = ((weight_decay != 0.0) as i32, decoupled as i32);
    let (decay, w1, w2, neg_step) = (
        1.0 - lr * weight_decay,
        1.0 - beta1,
        1.0 - beta2,
        -step_size,
    );
    // `adam_*`: updates n contiguous elements of param, exp_avg and exp_avg_sq from grad's
    // view.
    launch!(
        op,
        ctx,
        f,
        grid(n),
        nn,
        pp,
        gp,
        lg,
        mp,
        vp,
        vmaxp,
        use_wd,
        dec,
        decay,
        weight_decay,
        w1,
        beta2,
        w2,
        neg_step,
        bias_correction2_sqrt,
        eps
    )
}
