//! Resizing of the spatial axes, as PyTorch's `F.interpolate`: `nearest`, `nearest-exact`,
//! `linear` / `bilinear` / `trilinear` (with `align_corners`) and `area`.
//!
//! Each spatial axis is resized on its own (the linear modes are separable): the source
//! positions of the output positions are computed on the host with PyTorch's formulas, then
//! `index_select` picks the rows and, for the linear modes, two picks are blended with their
//! weights. Those are differentiable ops, so the gradient (a scatter-add of the output
//! gradient into the picked rows) and second-order gradients come from their rules. `area`
//! is `adaptive_avg_pool`, as in PyTorch.

use super::{add, from_vec, index_select, mul, reshape, to_device, to_dtype};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

/// How `interpolate` computes an output position from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpolateMode {
    /// The input position `floor(dst · scale)` (PyTorch's `"nearest"`).
    Nearest,
    /// The input position `floor((dst + 0.5) · scale)` (PyTorch's `"nearest-exact"`).
    NearestExact,
    /// Linear interpolation between the two nearest input positions, along every axis
    /// (`"linear"`, `"bilinear"`, `"trilinear"` by the number of spatial axes).
    Linear,
    /// The mean of the input window each output position covers (`"area"`).
    Area,
}

impl InterpolateMode {
    /// Parse PyTorch's mode string for an input with `rank` spatial axes.
    pub fn parse(mode: &str, rank: usize) -> Result<InterpolateMode> {
        const OP: &str = "interpolate";
        let linear = |want: usize| {
            if rank == want {
                Ok(InterpolateMode::Linear)
            } else {
                Err(Error::value(
                    OP,
                    format!(
                        "mode {mode:?} expects a {}-D input, got one with {rank} spatial axes",
                        want + 2
                    ),
                ))
            }
        };
        match mode {
            "nearest" => Ok(InterpolateMode::Nearest),
            "nearest-exact" => Ok(InterpolateMode::NearestExact),
            "linear" => linear(1),
            "bilinear" => linear(2),
            "trilinear" => linear(3),
            "area" => Ok(InterpolateMode::Area),
            other => Err(Error::value(
                OP,
                format!(
                    "mode {other:?} is not supported (nearest, nearest-exact, linear, bilinear, \
                     trilinear, area)"
                ),
            )),
        }
    }
}

/// The scale from output to input positions along one axis: `1 / scale_factor` when the
/// caller gave one (and did not ask to recompute it), else `in / out`.
fn axis_scale(input: usize, output: usize, scale_factor: Option<f64>) -> f64 {
    match scale_factor {
        Some(f) if f > 0.0 => 1.0 / f,
        _ => input as f64 / output as f64,
    }
}

/// `x` resized to `size` along its spatial axes (all axes after the first two). `scales`
/// are the caller's scale factors (one per axis) when it gave them, which PyTorch uses in
/// the source-position formula instead of `in / out`.
pub fn interpolate(
    x: &Tensor,
    size: &[usize],
    scales: Option<&[f64]>,
    mode: InterpolateMode,
    align_corners: bool,
) -> Result<Tensor> {
    crate::autocast::composite("interpolate", [Some(x)], |[x]| match x {
        Some(x) => interpolate_now(x, size, scales, mode, align_corners),
        None => unreachable!("the input stays present"),
    })
}

fn interpolate_now(
    x: &Tensor,
    size: &[usize],
    scales: Option<&[f64]>,
    mode: InterpolateMode,
    align_corners: bool,
) -> Result<Tensor> {
    const OP: &str = "interpolate";
    let rank = size.len();
    if x.ndim() != rank + 2 || !(1..=3).contains(&rank) {
        return Err(Error::shape(
            OP,
            format!(
                "expected a 3-D, 4-D or 5-D input (N, C, *spatial) and one output size per \
                 spatial axis; got input {} and size {}",
                fmt_shape(x.shape()),
                fmt_shape(size)
            ),
        ));
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!("expects a float input, got {}", x.dtype()),
        ));
    }
    if size.contains(&0) || x.shape()[2..].contains(&0) {
        return Err(Error::shape(
            OP,
            format!(
                "input and output sizes must be positive, got input {} and size {}",
                fmt_shape(x.shape()),
                fmt_shape(size)
            ),
        ));
    }
    if mode == InterpolateMode::Area {
        return super::adaptive_avg_pool(x, size);
    }
    let mut y = x.clone();
    for (i, &out) in size.iter().enumerate() {
        let axis = i + 2;
        let input = x.shape()[axis];
        if input == out && scales.is_none() {
            continue;
        }
        let scale = scales.map(|s| s[i]);
        y = match mode {
            InterpolateMode::Nearest | InterpolateMode::NearestExact => {
                let s = axis_scale(input, out, scale);
                let offset = if mode == InterpolateMode::Nearest {
                    0.0
                } else {
                    0.5
                };
                // In float32, as PyTorch computes nearest positions: at an exact boundary
                // (in / out of 1/3, say) the rounding decides the row.
                let (s, offset) = (s as f32, offset as f32);
                let idx: Vec<i64> = (0..out)
                    .map(|d| (((d as f32 + offset) * s).floor() as i64).clamp(0, input as i64 - 1))
                    .collect();
                pick(&y, axis, idx)?
            }
            InterpolateMode::Linear => linear_axis(&y, axis, input, out, scale, align_corners)?,
            InterpolateMode::Area => unreachable!("area is adaptive_avg_pool"),
        };
    }
    Ok(y)
}

/// `index_select(x, axis, idx)` with `idx` built on the host and moved to `x`'s device.
fn pick(x: &Tensor, axis: usize, idx: Vec<i64>) -> Result<Tensor> {
    let n = idx.len();
    let idx = to_device(&from_vec(idx, &[n]), x.device())?;
    index_select(x, axis as isize, &idx)
}

/// One axis resized by linear interpolation, PyTorch's source positions: `dst · (in - 1) /
/// (out - 1)` with `align_corners`, else `(dst + 0.5) · scale - 0.5` clamped at 0.
fn linear_axis(
    x: &Tensor,
    axis: usize,
    input: usize,
    out: usize,
    scale: Option<f64>,
    align_corners: bool,
) -> Result<Tensor> {
    let s = if align_corners {
        if out > 1 {
            (input - 1) as f64 / (out - 1) as f64
        } else {
            0.0
        }
    } else {
        axis_scale(input, out, scale)
    };
    let (mut lo, mut hi, mut w1) = (Vec::new(), Vec::new(), Vec::new());
    for d in 0..out {
        let src = if align_corners {
            d as f64 * s
        } else {
            ((d as f64 + 0.5) * s - 0.5).max(0.0)
        };
        let i0 = (src.floor() as usize).min(input - 1);
        let i1 = (i0 + 1).min(input - 1);
        lo.push(i0 as i64);
        hi.push(i1 as i64);
        w1.push(src - i0 as f64);
    }
    // The weights broadcast along `axis`: shape (1, .., out, .., 1).
    let mut wshape = vec![1usize; x.ndim()];
    wshape[axis] = out;
    let w0: Vec<f64> = w1.iter().map(|w| 1.0 - w).collect();
    let weight = |w: Vec<f64>| -> Result<Tensor> {
        let t = reshape(&from_vec(w, &[out]), &wshape)?;
        to_device(&to_dtype(&t, x.dtype())?, x.device())
    };
    add(
        &mul(&pick(x, axis, lo)?, &weight(w0)?)?,
        &mul(&pick(x, axis, hi)?, &weight(w1)?)?,
    )
}
