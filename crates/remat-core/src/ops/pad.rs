//! PyTorch's `F.pad(x, pad, mode, value)`: `pad` lists (before, after) amounts from the last
//! axis backwards. `"constant"` writes `value` around a copy of `x` in one pass (negative
//! amounts crop, a view); `"reflect"`, `"replicate"` and `"circular"` are one `index_select`
//! per padded axis, so their gradients (scatter-adds) and second-order gradients come from
//! that op.

use super::softmax::c_order;
use super::{from_vec, index_select, narrow};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims, Layout};
use crate::tensor::Tensor;

/// How `pad` fills the new elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// A constant value.
    Constant,
    /// The mirror image without repeating the edge (`[2 1 | 0 1 2 | 1 0]`).
    Reflect,
    /// The edge element repeated.
    Replicate,
    /// Wrap around (the other end of the axis).
    Circular,
}

impl PadMode {
    /// PyTorch's mode names.
    pub fn parse(s: &str) -> Result<PadMode> {
        Ok(match s {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "replicate" => PadMode::Replicate,
            "circular" => PadMode::Circular,
            _ => {
                return Err(Error::value(
                    "pad",
                    format!(
                        "mode must be 'constant', 'reflect', 'replicate' or 'circular', \
                         got {s:?}"
                    ),
                ))
            }
        })
    }
}

/// Constant padding by non-negative amounts `before[a]`, `after[a]` on every axis.
struct ConstantPadOp {
    before: Dims,
    after: Dims,
    value: f64,
}

impl ConstantPadOp {
    fn out_shape(&self, shape: &[usize]) -> Dims {
        (0..shape.len())
            .map(|a| shape[a] + self.before[a] + self.after[a])
            .collect()
    }
}

impl Op for ConstantPadOp {
    fn name(&self) -> &'static str {
        "pad"
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = x.shape();
        let oshape = self.out_shape(shape);
        let nd = shape.len();
        let inner = shape.last().copied().unwrap_or(1);
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            let fill = <T as crate::dtype::Scalar>::from_f64(self.value);
            let mut out = crate::cpu::filled::<T>(oshape.iter().product(), fill);
            // Output strides, then copy each last-axis line of x to its place.
            let mut ostride = vec![1usize; nd];
            for a in (0..nd.saturating_sub(1)).rev() {
                ostride[a] = ostride[a + 1] * oshape[a + 1];
            }
            let mut idx = vec![0usize; nd];
            for line in xs.chunks(inner.max(1)) {
                if inner == 0 {
                    break;
                }
                let off: usize = (0..nd).map(|a| (idx[a] + self.before[a]) * ostride[a]).sum();
                out[off..off + inner].copy_from_slice(line);
                // Advance the index over all axes but the last.
                for a in (0..nd.saturating_sub(1)).rev() {
                    idx[a] += 1;
                    if idx[a] < shape[a] {
                        break;
                    }
                    idx[a] = 0;
                }
            }
            from_vec(out, &oshape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // A filled buffer, then one strided copy of `x` into its interior view.
        let x = inputs[0];
        let oshape = self.out_shape(x.shape());
        let out = crate::cuda::launch::full("pad", x.device(), &oshape, x.dtype(), self.value)?;
        let strides = crate::layout::contiguous_strides(&oshape);
        let offset = (0..oshape.len()).map(|a| self.before[a] * strides[a]).sum();
        let interior = super::view(
            &out,
            Layout {
                shape: x.shape().into(),
                strides,
                offset,
            },
        );
        crate::cuda::launch::copy_into("pad", x, &interior, false)?;
        Ok(out)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let shape = &ctx.inputs[0].shape;
        let mut g = ctx.grad.clone();
        for (a, &n) in shape.iter().enumerate() {
            if self.before[a] > 0 || self.after[a] > 0 {
                g = narrow(&g, a as isize, self.before[a] as isize, n as isize)?;
            }
        }
        Ok(vec![Some(g)])
    }
}

/// Indices into an axis of size `n` for `before`/`after` extra elements in `mode`.
fn mode_indices(mode: PadMode, n: usize, before: usize, after: usize) -> Vec<i64> {
    let n = n as i64;
    (-(before as i64)..n + after as i64)
        .map(|i| match mode {
            PadMode::Reflect => {
                let i = i.abs();
                if i >= n {
                    2 * (n - 1) - i
                } else {
                    i
                }
            }
            PadMode::Replicate => i.clamp(0, n - 1),
            PadMode::Circular | PadMode::Constant => i.rem_euclid(n),
        })
        .collect()
}

/// Pad `x` as PyTorch's `F.pad`: `pad = (before_last, after_last, before_2nd_last, ...)`,
/// at most two per axis; `value` fills for `"constant"`.
/// The autocast list name of a padding mode (PyTorch's CPU list has the reflection and
/// replication pads in float32).
fn autocast_name(mode: PadMode) -> &'static str {
    match mode {
        PadMode::Reflect => "reflection_pad",
        PadMode::Replicate => "replication_pad",
        _ => "pad",
    }
}

pub fn pad(x: &Tensor, pad: &[isize], mode: PadMode, value: f64) -> Result<Tensor> {
    crate::autocast::composite(autocast_name(mode), [Some(x)], |[x]| match x {
        Some(x) => pad_now(x, pad, mode, value),
        None => unreachable!("the input stays present"),
    })
}

fn pad_now(x: &Tensor, pad: &[isize], mode: PadMode, value: f64) -> Result<Tensor> {
    let nd = x.ndim();
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > nd {
        return Err(Error::value(
            "pad",
            format!(
                "padding length must be even and at most twice the number of dims ({nd}), \
                 got {} entries for an input of shape {}",
                pad.len(),
                fmt_shape(x.shape())
            ),
        ));
    }
    let mut before: Vec<isize> = vec![0; nd];
    let mut after: Vec<isize> = vec![0; nd];
    for (k, pair) in pad.chunks(2).enumerate() {
        before[nd - 1 - k] = pair[0];
        after[nd - 1 - k] = pair[1];
    }
    if mode != PadMode::Constant {
        return pad_by_index(x, mode, &before, &after);
    }
    // Negative amounts crop first (a differentiable view).
    let mut x = x.clone();
    for a in 0..nd {
        let (b, e) = (before[a].min(0), after[a].min(0));
        if b < 0 || e < 0 {
            let n = x.shape()[a] as isize;
            let len = n + b + e;
            if len < 0 {
                return Err(Error::shape(
                    "pad",
                    format!(
                        "negative padding ({}, {}) removes more than axis {a} of size {n}",
                        before[a], after[a]
                    ),
                ));
            }
            x = narrow(&x, a as isize, -b, len)?;
        }
    }
    let pos = |v: &[isize]| -> Dims { v.iter().map(|&p| p.max(0) as usize).collect() };
    let (before, after) = (pos(&before), pos(&after));
    if before.iter().chain(&after).all(|&p| p == 0) {
        return Ok(x);
    }
    apply(
        ConstantPadOp {
            before,
            after,
            value,
        },
        &[&x],
        &[],
    )
}

fn pad_by_index(x: &Tensor, mode: PadMode, before: &[isize], after: &[isize]) -> Result<Tensor> {
    let name = match mode {
        PadMode::Reflect => "reflect",
        PadMode::Replicate => "replicate",
        _ => "circular",
    };
    let mut out = x.clone();
    for a in 0..x.ndim() {
        let (b, e) = (before[a], after[a]);
        if b == 0 && e == 0 {
            continue;
        }
        let n = x.shape()[a];
        let limit = match mode {
            PadMode::Reflect => n as isize - 1,
            PadMode::Circular => n as isize,
            _ => isize::MAX,
        };
        if b < 0 || e < 0 || b > limit || e > limit || n == 0 {
            return Err(Error::value(
                "pad",
                format!(
                    "{name} padding ({b}, {e}) on axis {a} of size {n} (input {}) must be \
                     non-negative and {}",
                    fmt_shape(x.shape()),
                    match mode {
                        PadMode::Reflect => "smaller than the axis",
                        PadMode::Circular => "at most the axis size",
                        _ => "on a non-empty axis",
                    }
                ),
            ));
        }
        let idx = mode_indices(mode, n, b as usize, e as usize);
        let len = idx.len();
        let idx = Tensor::from_vec(idx, &[len])?;
        let idx = if x.device() == crate::Device::Cpu {
            idx
        } else {
            super::to_device(&idx, x.device())?
        };
        out = index_select(&out, a as isize, &idx)?;
    }
    Ok(out)
}
