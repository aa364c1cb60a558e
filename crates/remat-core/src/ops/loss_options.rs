//! The losses with PyTorch's options, composed of differentiable ops (so gradients and
//! second-order gradients come from the ops' rules): `nll_loss` and `cross_entropy_with`
//! (class weights, `ignore_index`, `reduction`, `label_smoothing`, `(N, C, d1, ...)` inputs,
//! class-probability targets), `binary_cross_entropy_with_logits` (`weight`, `pos_weight`)
//! and `l1_loss` / `mse_loss_with` with `reduction`. Class indices are selected with
//! `gather` (never a dense one-hot); the plain mean cross-entropy keeps its fused kernel
//! (`loss::cross_entropy`).

use super::{abs, add, gather, log_softmax, mean, mul, neg, scale, sub, sum, unsqueeze, where_};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

/// How a loss reduces its per-element values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Per-element losses.
    None,
    /// The (weighted) mean.
    Mean,
    /// The sum.
    Sum,
}

impl Reduction {
    /// Parse PyTorch's `reduction` string.
    pub fn parse(op: &str, s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::value(
                op,
                format!("{other:?} is not a valid value for reduction ('none', 'mean', 'sum')"),
            )),
        }
    }
}

/// The per-element losses `x` reduced as `r` says.
pub(super) fn reduce(x: &Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::None => Ok(x.clone()),
        Reduction::Mean => mean(x, None, false),
        Reduction::Sum => sum(x, None, false),
    }
}

/// A `ShapeError` naming `op` unless `a` (the input) and `b` (the target) have one shape.
pub(super) fn same_shape(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.shape() != b.shape() {
        return Err(Error::shape(
            op,
            format!(
                "input has shape {} but target has shape {}; they must match",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    Ok(())
}

/// `|input - target|`, reduced.
pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    crate::autocast::composite("l1_loss", [Some(input), Some(target)], |[x, t]| {
        match (x, t) {
            (Some(x), Some(t)) => l1_loss_now(x, t, reduction),
            _ => unreachable!("the required operands stay present"),
        }
    })
}

fn l1_loss_now(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    same_shape("l1_loss", input, target)?;
    reduce(&abs(&sub(input, target)?)?, reduction)
}

/// `(input - target)²`, reduced (the mean is the fused [`super::mse_loss`]).
pub fn mse_loss_with(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    crate::autocast::composite("mse_loss", [Some(input), Some(target)], |[x, t]| {
        match (x, t) {
            (Some(x), Some(t)) => mse_loss_with_now(x, t, reduction),
            _ => unreachable!("the required operands stay present"),
        }
    })
}

fn mse_loss_with_now(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    same_shape("mse_loss", input, target)?;
    if reduction == Reduction::Mean {
        return super::mse_loss(input, target);
    }
    let d = sub(input, target)?;
    reduce(&mul(&d, &d)?, reduction)
}

/// PyTorch's numerically stable `binary_cross_entropy_with_logits`: per element
/// `(1 - t) x + lw (log1p(e^-|x|) + relu(-x))` with `lw = 1 + (pos_weight - 1) t` (1 without
/// `pos_weight`), times `weight`, reduced.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    crate::autocast::composite(
        "binary_cross_entropy_with_logits",
        [Some(input), Some(target), weight, pos_weight],
        |[x, t, w, pw]| match (x, t) {
            (Some(x), Some(t)) => binary_cross_entropy_with_logits_now(x, t, w, pw, reduction),
            _ => unreachable!("the required operands stay present"),
        },
    )
}

fn binary_cross_entropy_with_logits_now(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    same_shape(OP, input, target)?;
    if !target.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!("target must be a float tensor, got {}", target.dtype()),
        ));
    }
    let one_minus_t = add(
        &neg(target)?,
        &super::full(&[], 1.0, target.dtype(), target.device())?,
    )?;
    // `|x|` and `relu(-x)` through `where(x >= 0, ..)`: the same values, but at `x = 0` the
    // gradient takes the `x >= 0` branch (`d|x|/dx = 1`), so `d/dx softplus(-x)` is the true
    // `-1/2` there, as PyTorch's, where `abs` and `relu` (subgradient 0) would give 0.
    let zero = super::zeros(&[], input.dtype(), input.device())?;
    let nonneg = super::compare::compare(super::compare::Compare::Ge, input, &zero)?;
    let neg_x = neg(input)?;
    let abs_x = where_(&nonneg, input, &neg_x)?;
    let softplus_neg = add(
        &super::log1p(&super::exp(&neg(&abs_x)?)?)?,
        &where_(&nonneg, &zero, &neg_x)?,
    )?;
    let tail = match pos_weight {
        Some(pw) => {
            let lw = add(
                &mul(&super::add_scalar(pw, -1.0)?, target)?,
                &super::full(&[], 1.0, target.dtype(), target.device())?,
            )?;
            mul(&lw, &softplus_neg)?
        }
        None => softplus_neg,
    };
    let mut loss = add(&mul(&one_minus_t, input)?, &tail)?;
    if let Some(w) = weight {
        loss = mul(&loss, w)?;
    }
    reduce(&loss, reduction)
}

/// The class axis of an input of `ndim` axes: 0 for unbatched `(C,)`, else 1.
fn class_axis(ndim: usize) -> usize {
    usize::from(ndim != 1)
}

/// Check the class-index target against a `(N, C, d...)` / `(C,)` input; returns the class
/// count.
fn check_indices(op: &str, input: &Tensor, target: &Tensor, ignore_index: i64) -> Result<usize> {
    if input.ndim() == 0 {
        return Err(Error::shape(
            op,
            "input must have at least one dimension (the classes)",
        ));
    }
    let ca = class_axis(input.ndim());
    let c = input.shape()[ca];
    let mut want: Vec<usize> = input.shape().to_vec();
    want.remove(ca);
    if target.shape() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!(
                "input of shape {} needs a class-index target of shape {}, got {}",
                fmt_shape(input.shape()),
                fmt_shape(&want),
                fmt_shape(target.shape())
            ),
        ));
    }
    if !matches!(target.dtype(), DType::I64 | DType::I32) {
        return Err(Error::dtype(
            op,
            format!(
                "target must hold int64 class indices, got {} of shape {}",
                target.dtype(),
                fmt_shape(target.shape())
            ),
        ));
    }
    for t in target.try_to_vec::<i64>()? {
        if t != ignore_index && (t < 0 || t as u64 >= c as u64) {
            return Err(Error::value(
                op,
                format!("Target {t} is out of bounds: classes are [0, {c})"),
            ));
        }
    }
    Ok(c)
}

/// `(picked, w, keep)`: `input` at the target class of each position (ignored positions
/// read class 0), each position's weight (`weight[target]`, or 1; 0 where ignored) and the
/// bool mask of the positions not ignored, all of the target's shape.
fn picked_and_weights(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let ca = class_axis(input.ndim()) as isize;
    let target = super::to_dtype(target, DType::I64)?;
    let ignore = super::full(&[], ignore_index as f64, DType::I64, target.device())?;
    let keep = super::ne(&target, &ignore)?;
    let zero_idx = super::full(&[], 0.0, DType::I64, target.device())?;
    let safe = where_(&keep, &target, &zero_idx)?;
    let picked = super::squeeze(&gather(input, ca, &unsqueeze(&safe, ca)?)?, Some(&[ca]))?;
    let dt = input.dtype();
    let zero = super::full(&[], 0.0, dt, input.device())?;
    let w = match weight {
        Some(w) => {
            let flat = super::reshape(&safe, &[safe.numel()])?;
            let per = super::reshape(&super::index_select(w, 0, &flat)?, safe.shape())?;
            where_(&keep, &per, &zero)?
        }
        None => where_(&keep, &super::full(&[], 1.0, dt, input.device())?, &zero)?,
    };
    Ok((picked, w, keep))
}

fn check_weight(op: &str, weight: Option<&Tensor>, c: usize) -> Result<()> {
    if let Some(w) = weight {
        if w.shape() != [c] {
            return Err(Error::shape(
                op,
                format!(
                    "weight must have shape ({c},), one per class, got {}",
                    fmt_shape(w.shape())
                ),
            ));
        }
    }
    Ok(())
}

/// PyTorch's `nll_loss(input, target, weight, ignore_index, reduction)` on log-probabilities
/// `(N, C, d...)` or `(C,)`: `-w[t] input[t]` per position; the mean divides by the summed
/// weights of the positions not ignored. Ignored positions get exactly 0 gradient, also when
/// every position is ignored (the mean is then `0 / 0 = NaN`, and its infinite gradient is
/// not multiplied into them), as PyTorch; a non-ignored position of weight 0 still gets
/// `0 · ∞ = NaN` there, as PyTorch.
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    crate::autocast::composite(
        "nll_loss",
        [Some(input), Some(target), weight],
        |[x, t, w]| match (x, t) {
            (Some(x), Some(t)) => nll_loss_now(x, t, w, ignore_index, reduction),
            _ => unreachable!("the required operands stay present"),
        },
    )
}

fn nll_loss_now(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    let c = check_indices("nll_loss", input, target, ignore_index)?;
    check_weight("nll_loss", weight, c)?;
    let (picked, w, keep) = picked_and_weights(input, target, weight, ignore_index)?;
    // Ignored positions are selected away (`where`), not multiplied by their weight 0: the
    // gradient reaching them is then 0 even when the mean's is infinite.
    let zero = super::zeros(&[], picked.dtype(), picked.device())?;
    let loss = where_(&keep, &neg(&mul(&picked, &w)?)?, &zero)?;
    match reduction {
        Reduction::Mean => super::div(&sum(&loss, None, false)?, &sum(&w, None, false)?),
        r => reduce(&loss, r),
    }
}

/// PyTorch's `cross_entropy` with every option: `input` `(N, C, d...)` or `(C,)` logits;
/// `target` class indices of the input's shape without the class axis, or class
/// probabilities of the input's shape; `weight` per class; `ignore_index`; `reduction`;
/// `label_smoothing` in [0, 1] (PyTorch's formulas, including their normalisation with
/// weights).
pub fn cross_entropy_with(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    crate::autocast::composite(
        "cross_entropy",
        [Some(input), Some(target), weight],
        |[x, t, w]| match (x, t) {
            (Some(x), Some(t)) => {
                cross_entropy_with_now(x, t, w, ignore_index, reduction, label_smoothing)
            }
            _ => unreachable!("the required operands stay present"),
        },
    )
}

fn cross_entropy_with_now(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::value(
            OP,
            format!("label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"),
        ));
    }
    if input.ndim() == 0 {
        return Err(Error::shape(
            OP,
            "input must have at least one dimension (the classes)",
        ));
    }
    let ca = class_axis(input.ndim());
    let c = input.shape()[ca];
    check_weight(OP, weight, c)?;
    let logp = log_softmax(input, ca as isize)?;
    // Weight shaped to broadcast along the class axis.
    let weight_b = match weight {
        Some(w) => {
            let mut shape = vec![1usize; input.ndim()];
            shape[ca] = c;
            Some(super::reshape(w, &shape)?)
        }
        None => None,
    };
    if target.dtype().is_float() {
        same_shape(OP, input, target)?;
        let mut t = target.clone();
        if label_smoothing > 0.0 {
            t = super::add_scalar(
                &scale(&t, 1.0 - label_smoothing)?,
                label_smoothing / c as f64,
            )?;
        }
        let mut terms = mul(&logp, &t)?;
        if let Some(w) = &weight_b {
            terms = mul(&terms, w)?;
        }
        let loss = neg(&sum(&terms, Some(&[ca as isize]), false)?)?;
        return match reduction {
            Reduction::Mean => {
                let n = (input.numel() / c.max(1)) as f64;
                scale(&sum(&loss, None, false)?, 1.0 / n)
            }
            r => reduce(&loss, r),
        };
    }
    check_indices(OP, input, target, ignore_index)?;
    let nll = nll_loss(&logp, target, weight, ignore_index, reduction)?;
    if label_smoothing == 0.0 {
        return Ok(nll);
    }
    let (_, w, keep) = picked_and_weights(&logp, target, weight, ignore_index)?;
    let per_class = match &weight_b {
        Some(wb) => mul(&logp, wb)?,
        None => logp.clone(),
    };
    let smooth = neg(&sum(&per_class, Some(&[ca as isize]), false)?)?;
    let smooth = where_(
        &keep,
        &smooth,
        &super::full(&[], 0.0, smooth.dtype(), smooth.device())?,
    )?;
    let smooth = match reduction {
        Reduction::Mean => super::div(&sum(&smooth, None, false)?, &sum(&w, None, false)?)?,
        r => reduce(&smooth, r)?,
    };
    add(
        &scale(&nll, 1.0 - label_smoothing)?,
        &scale(&smooth, label_smoothing / c as f64)?,
    )
}
