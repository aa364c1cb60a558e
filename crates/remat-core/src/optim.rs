//! Optimizer kernels: in-place parameter updates for SGD (with momentum, dampening, Nesterov,
//! weight decay) and Adam / AdamW, following PyTorch's formulas exactly (its single-tensor,
//! non-`amsgrad`, non-`maximize` path).
//!
//! One call updates one parameter and its state tensors in place. No graph is recorded. The
//! parameter and the state tensors must be contiguous tensors on one device, of one float
//! dtype and the gradient's shape; the gradient may be any layout. Large tensors are updated
//! in parallel on the rayon pool; CUDA tensors by one fused kernel per update (`sgd_*`,
//! `adam_*`, same formulas, operation for operation). `zero_` and `copy_` are the other in-place
//! writes `nn` needs (`zero_grad(set_to_none=False)`, `load_state_dict`), through the in-place
//! ops' machinery (`ops::inplace`) without their grad-mode rules. Every update bumps the
//! version counter of what it writes.

use crate::cpu;
use crate::dtype::{Element, Scalar};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::ops::check_same_device;
use crate::tensor::Tensor;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::Arc;

/// Chunk length of the parallel loops (elements).
const CHUNK: usize = 1 << 14;

/// Check that `param` (mutated), `grad` (read) and the `state` tensors (mutated) fit one
/// update: same device, dtype and shape; mutated tensors contiguous and not sharing storage.
fn validate(op: &str, param: &Tensor, grad: &Tensor, state: &[(&str, &Tensor)]) -> Result<()> {
    let mut all: Vec<&Tensor> = vec![param, grad];
    all.extend(state.iter().map(|(_, t)| *t));
    check_same_device(op, &all)?;
    let check = |name: &str, t: &Tensor| -> Result<()> {
        if t.dtype() != param.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "{name} has dtype {} but the parameter has dtype {}",
                    t.dtype(),
                    param.dtype()
                ),
            ));
        }
        if t.shape() != param.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "{name} has shape {} but the parameter has shape {}",
                    fmt_shape(t.shape()),
                    fmt_shape(param.shape())
                ),
            ));
        }
        Ok(())
    };
    check("grad", grad)?;
    let mut mutated: Vec<(&str, &Tensor)> = vec![("param", param)];
    mutated.extend_from_slice(state);
    for (name, t) in &mutated {
        check(name, t)?;
        if !t.is_contiguous() {
            return Err(Error::shape(
                op,
                format!(
                    "{name} of shape {} must be contiguous to be updated in place",
                    fmt_shape(t.shape())
                ),
            ));
        }
    }
    for (i, (na, a)) in mutated.iter().enumerate() {
        for (nb, b) in &mutated[i + 1..] {
            if Arc::ptr_eq(a.storage(), b.storage()) {
                return Err(Error::value(
                    op,
                    format!("{na} and {nb} share storage; each must be its own tensor"),
                ));
            }
        }
    }
    Ok(())
}

/// The gradient's elements as a contiguous slice, copied out if it is strided or shares
/// storage with a tensor that is about to be mutated (a copy that does not fit in memory is
/// `Error::OutOfMemory`).
fn grad_values<'a, T: Element>(
    op: &str,
    grad: &'a Tensor,
    mutated: &[&Tensor],
) -> Result<Cow<'a, [T]>> {
    let aliased = mutated
        .iter()
        .any(|t| Arc::ptr_eq(t.storage(), grad.storage()));
    match cpu::contiguous_slice::<T>(grad.data()) {
        Some(s) if !aliased => Ok(Cow::Borrowed(s)),
        _ => cpu::catch_oom(op, || Ok(Cow::Owned(cpu::gather::<T>(grad.data())))),
    }
}

/// On CUDA, `grad` itself, or a copy when it shares storage with a tensor about to be
/// mutated (the fused kernels read and write in one pass).
fn cuda_grad(op: &str, grad: &Tensor, mutated: &[&Tensor]) -> Result<Tensor> {
    if mutated
        .iter()
        .any(|t| Arc::ptr_eq(t.storage(), grad.storage()))
    {
        crate::cuda::launch::copy(op, grad)
    } else {
        Ok(grad.clone())
    }
}

/// Record an in-place write into each of `ts` (their storages' version counters), after
/// the update ran or failed part-way: a graph that saved one of them then refuses to use it.
fn bump(ts: &[&Tensor]) {
    for t in ts {
        t.storage().bump_version();
    }
}

/// The elements of a validated (contiguous, CPU, dtype `T`) tensor as a mutable slice.
///
/// # Safety
/// No other slice of `t`'s storage may be in use while the returned one is alive.
#[allow(clippy::mut_from_ref)]
unsafe fn elems_mut<'a, T: Element>(op: &str, t: &'a Tensor) -> Result<&'a mut [T]> {
    let off = t.layout().offset;
    let n = t.numel();
    // SAFETY: exclusivity is the caller's promise.
    let s = unsafe { t.storage().as_mut_slice::<T>() }
        .ok_or_else(|| Error::dtype(op, format!("expected a CPU tensor of dtype {}", T::DTYPE)))?;
    Ok(&mut s[off..off + n])
}

/// One SGD step on `param` in place, as `torch.optim.SGD` does it:
///
/// ```text
/// d = grad + weight_decay * param
/// if momentum != 0:
///     buf = d                                        (first step)
///     buf = momentum * buf + (1 - dampening) * d     (later steps)
///     d = d + momentum * buf if nesterov else buf
/// param = param - lr * d
/// ```
///
/// `momentum_buf` is the per-parameter momentum buffer (required when `momentum != 0`,
/// ignored otherwise); `first_step` says that it holds no history yet, so it is set to `d`
/// (PyTorch creates the buffer as a copy of `d` on the first step).
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    param: &Tensor,
    grad: &Tensor,
    momentum_buf: Option<&Tensor>,
    first_step: bool,
    lr: f64,
    momentum: f64,
    weight_decay: f64,
    dampening: f64,
    nesterov: bool,
) -> Result<()> {
    const OP: &str = "sgd_step";
    if lr.is_nan() || lr < 0.0 {
        return Err(Error::value(OP, format!("invalid learning rate {lr}")));
    }
    if nesterov && (momentum <= 0.0 || dampening != 0.0) {
        return Err(Error::value(
            OP,
            "Nesterov momentum requires a momentum and zero dampening",
        ));
    }
    let buf =
        if momentum != 0.0 {
            Some(momentum_buf.ok_or_else(|| {
                Error::value(OP, "a momentum buffer is required when momentum != 0")
            })?)
        } else {
            None
        };
    let mut state: Vec<(&str, &Tensor)> = Vec::new();
    if let Some(b) = buf {
        state.push(("momentum_buf", b));
    }
    validate(OP, param, grad, &state)?;
    if param.dtype().is_half() {
        return widened(param, grad, &[buf], |p, g, st| {
            sgd_step(
                p,
                g,
                st[0],
                first_step,
                lr,
                momentum,
                weight_decay,
                dampening,
                nesterov,
            )
        });
    }
    let mut mutated = vec![param];
    mutated.extend(buf);
    let done = crate::device::on_device(
        param.device(),
        || -> Result<_> {
            crate::dispatch!(param.dtype(), T => {
                let g = grad_values::<T>(OP, grad, &mutated)?;
                // SAFETY: the parameter and its momentum buffer are distinct storages (checked in
                // `validate`) that no kernel reads during the step: optimizer steps run between
                // backward passes; the gradient was copied out above if it aliases either.
                let p = unsafe { elems_mut::<T>(OP, param)? };
                let (lr, mom, wd, damp) = (
                    T::from_f64(lr),
                    T::from_f64(momentum),
                    T::from_f64(weight_decay),
                    T::from_f64(1.0 - dampening),
                );
                let use_wd = weight_decay != 0.0;
                match buf {
                    None => {
                        let f = |p: &mut [T], g: &[T]| {
                            for (p, &g) in p.iter_mut().zip(g) {
                                let d = if use_wd { g + wd * *p } else { g };
                                *p -= lr * d;
                            }
                        };
                        if p.len() >= cpu::PAR_MIN {
                            crate::parallel::install(|| p.par_chunks_mut(CHUNK).zip(g.par_chunks(CHUNK)).for_each(|(p, g)| f(p, g)));
                        } else {
                            f(p, &g);
                        }
                    }
                    Some(b) => {
                        // SAFETY: as above; the buffer is only ever touched by this optimizer.
                        let b = unsafe { elems_mut::<T>(OP, b)? };
                        let f = |p: &mut [T], b: &mut [T], g: &[T]| {
                            for ((p, b), &g) in p.iter_mut().zip(b.iter_mut()).zip(g) {
                                let d = if use_wd { g + wd * *p } else { g };
                                *b = if first_step { d } else { mom * *b + damp * d };
                                let d = if nesterov { d + mom * *b } else { *b };
                                *p -= lr * d;
                            }
                        };
                        if p.len() >= cpu::PAR_MIN {
                            crate::parallel::install(|| {
                                p.par_chunks_mut(CHUNK)
                                    .zip(b.par_chunks_mut(CHUNK))
                                    .zip(g.par_chunks(CHUNK))
                                    .for_each(|((p, b), g)| f(p, b, g))
                            });
                        } else {
                            f(p, b, &g);
                        }
                    }
                }
            });
            Ok(())
        },
        || {
            let g = cuda_grad(OP, grad, &mutated)?;
            crate::cuda::launch::sgd_step(
                OP,
                param,
                &g,
                buf,
                first_step,
                lr,
                momentum,
                weight_decay,
                dampening,
                nesterov,
            )
        },
    );
    bump(&mutated);
    done
}

/// One Adam (or, with `decoupled`, AdamW) step on `param` in place, as `torch.optim.Adam` /
/// `torch.optim.AdamW` do it (`step` counts from 1 and includes this step):
///
/// ```text
/// if decoupled: param = param * (1 - lr * weight_decay)       (AdamW)
/// else:         g = grad + weight_decay * param               (Adam)
/// exp_avg    = lerp(exp_avg, g, 1 - beta1)
/// exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
/// step_size  = lr / (1 - beta1^step)
/// denom      = sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps
/// param      = param - step_size * exp_avg / denom
/// ```
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    step: u64,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    max_exp_avg_sq: Option<&Tensor>,
) -> Result<()> {
    let op = if decoupled { "adamw_step" } else { "adam_step" };
    if lr.is_nan() || lr < 0.0 {
        return Err(Error::value(op, format!("invalid learning rate {lr}")));
    }
    if step == 0 {
        return Err(Error::value(op, "step counts from 1"));
    }
    for (name, b) in [("beta1", beta1), ("beta2", beta2)] {
        if !(0.0..1.0).contains(&b) {
            return Err(Error::value(
                op,
                format!("invalid {name} {b}: must be in [0, 1)"),
            ));
        }
    }
    let mut states = vec![("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)];
    states.extend(max_exp_avg_sq.map(|t| ("max_exp_avg_sq", t)));
    validate(op, param, grad, &states)?;
    if param.dtype().is_half() {
        return widened(
            param,
            grad,
            &[Some(exp_avg), Some(exp_avg_sq), max_exp_avg_sq],
            |p, g, st| {
                adam_step(
                    p,
                    g,
                    st[0].expect("exp_avg"),
                    st[1].expect("exp_avg_sq"),
                    step,
                    lr,
                    beta1,
                    beta2,
                    eps,
                    weight_decay,
                    decoupled,
                    st[2],
                )
            },
        );
    }
    let bias_correction1 = 1.0 - beta1.powi(step.min(i32::MAX as u64) as i32);
    let bias_correction2 = 1.0 - beta2.powi(step.min(i32::MAX as u64) as i32);
    let step_size = lr / bias_correction1;
    let bias_correction2_sqrt = bias_correction2.sqrt();
    let done = crate::device::on_device(
        param.device(),
        || -> Result<_> {
            crate::dispatch!(param.dtype(), T => {
                let mut all = vec![param, exp_avg, exp_avg_sq];
                all.extend(max_exp_avg_sq);
                let g = grad_values::<T>(op, grad, &all)?;
                // SAFETY: the parameter and its two moment buffers are distinct storages (checked in
                // `validate`) that no kernel reads during the step: optimizer steps run between
                // backward passes; the gradient was copied out above if it aliases any of them.
                let (p, m, v) = unsafe {
                    (
                        elems_mut::<T>(op, param)?,
                        elems_mut::<T>(op, exp_avg)?,
                        elems_mut::<T>(op, exp_avg_sq)?,
                    )
                };
                // SAFETY: as above (a distinct storage, checked in `validate`).
                let mut vmax = match max_exp_avg_sq {
                    Some(t) => Some(unsafe { elems_mut::<T>(op, t)? }),
                    None => None,
                };
                let decay = T::from_f64(1.0 - lr * weight_decay);
                let wd = T::from_f64(weight_decay);
                let use_wd = weight_decay != 0.0;
                let w1 = T::from_f64(1.0 - beta1);
                let b2 = T::from_f64(beta2);
                let w2 = T::from_f64(1.0 - beta2);
                let neg_step = T::from_f64(-step_size);
                let bc2s = T::from_f64(bias_correction2_sqrt);
                let eps = T::from_f64(eps);
                let half = T::from_f64(0.5);
                let one = T::from_f64(1.0);
                // `vmax` (amsgrad): the running maximum of `v`, which the denominator uses.
                let f = |p: &mut [T], m: &mut [T], v: &mut [T], g: &[T], mut vmax: Option<&mut [T]>| {
                    for (i, (((p, m), v), &g)) in p.iter_mut().zip(m.iter_mut()).zip(v.iter_mut()).zip(g).enumerate() {
                        let g = if !use_wd {
                            g
                        } else if decoupled {
                            *p *= decay;
                            g
                        } else {
                            g + wd * *p
                        };
                        // torch.lerp: start + w * (end - start) for w < 0.5, else end - (end - start) * (1 - w)
                        *m = if w1 < half {
                            *m + w1 * (g - *m)
                        } else {
                            g - (g - *m) * (one - w1)
                        };
                        *v = *v * b2 + w2 * g * g;
                        let second = match vmax.as_deref_mut() {
                            Some(vm) => {
                                // torch.maximum: NaN propagates.
                                #[allow(clippy::eq_op)]
                                if *v > vm[i] || *v != *v {
                                    vm[i] = *v;
                                }
                                vm[i]
                            }
                            None => *v,
                        };
                        let denom = second.sqrt() / bc2s + eps;
                        *p += neg_step * (*m / denom);
                    }
                };
                if p.len() >= cpu::PAR_MIN {
                    crate::parallel::install(|| match vmax.as_deref_mut() {
                        Some(vm) => p
                            .par_chunks_mut(CHUNK)
                            .zip(m.par_chunks_mut(CHUNK))
                            .zip(v.par_chunks_mut(CHUNK))
                            .zip(g.par_chunks(CHUNK))
                            .zip(vm.par_chunks_mut(CHUNK))
                            .for_each(|((((p, m), v), g), vm)| f(p, m, v, g, Some(vm))),
                        None => p
                            .par_chunks_mut(CHUNK)
                            .zip(m.par_chunks_mut(CHUNK))
                            .zip(v.par_chunks_mut(CHUNK))
                            .zip(g.par_chunks(CHUNK))
                            .for_each(|(((p, m), v), g)| f(p, m, v, g, None)),
                    });
                } else {
                    f(p, m, v, &g, vmax);
                }
            });
            Ok(())
        },
        || {
            let g = cuda_grad(op, grad, &[param, exp_avg, exp_avg_sq])?;
            crate::cuda::launch::adam_step(
                op,
                param,
                &g,
                exp_avg,
                exp_avg_sq,
                max_exp_avg_sq,
                decoupled,
                lr,
                weight_decay,
                beta1,
                beta2,
                step_size,
                bias_correction2_sqrt,
                eps,
            )
        },
    );
    bump(&[param, exp_avg, exp_avg_sq]);
    if let Some(t) = max_exp_avg_sq {
        bump(&[t]);
    }
    done
}

/// One step on a half-precision parameter: the parameter, gradient and state tensors are
/// widened to float32, `step` updates the float32 copies with the float32 formulas, and the
/// results are rounded back into the originals (as PyTorch's half steps compute in float32
/// and store in the parameter's dtype).
fn widened(
    param: &Tensor,
    grad: &Tensor,
    state: &[Option<&Tensor>],
    step: impl FnOnce(&Tensor, &Tensor, &[Option<&Tensor>]) -> Result<()>,
) -> Result<()> {
    let wide = |t: &Tensor| crate::ops::contiguous_copy(t, crate::dtype::DType::F32);
    let (p, g) = (wide(param)?, wide(grad)?);
    let st: Vec<Option<Tensor>> = state
        .iter()
        .map(|t| t.map(wide).transpose())
        .collect::<Result<_>>()?;
    let refs: Vec<Option<&Tensor>> = st.iter().map(|t| t.as_ref()).collect();
    step(&p, &g, &refs)?;
    copy_(param, &p)?;
    for (dst, src) in state.iter().zip(&st) {
        if let (Some(d), Some(s)) = (dst, src) {
            copy_(d, s)?;
        }
    }
    Ok(())
}

/// Set every element of `t` to zero in place (`zero_grad(set_to_none=False)`): any dtype and
/// layout, no grad-mode rules (the caller owns `t`); the version counter records it.
pub fn zero_(t: &Tensor) -> Result<()> {
    crate::ops::inplace::assign("zero_", t, crate::ops::Operand::Scalar(0.0))
}

/// Copy `src`'s elements into `dst` in place (`load_state_dict`), casting to `dst`'s dtype:
/// `src` of the same shape (any layout), same device; no grad-mode rules and no graph.
pub fn copy_(dst: &Tensor, src: &Tensor) -> Result<()> {
    const OP: &str = "copy_";
    check_same_device(OP, &[dst, src])?;
    if src.shape() != dst.shape() {
        return Err(Error::shape(
            OP,
            format!(
                "cannot copy a tensor of shape {} into one of shape {}",
                fmt_shape(src.shape()),
                fmt_shape(dst.shape())
            ),
        ));
    }
    crate::ops::inplace::assign(OP, dst, crate::ops::Operand::Tensor(src))
}
