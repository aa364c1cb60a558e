//! Transposed convolution over 1 to 3 spatial axes (PyTorch's `conv_transpose1d/2d/3d`:
//! stride, padding, output_padding, groups, dilation): the input gradient of a convolution,
//! `fold(Wᵀ · x)`.
//!
//! Per group, `Wᵀ (C_out/g · prod(k), C_in/g)` times the input's positions gives each
//! input position's contribution to a window of the output, and `fold` (col2im) adds the
//! windows up. Both are differentiable ops, so gradients and second-order gradients come from
//! their rules, and the op keeps only the input and the weight for backward (what the matmul
//! saves; `fold` saves nothing). The column matrix (`prod(k)` times the output's channels per
//! input position) is built per chunk of samples that fits the convolution's CPU chunk, never
//! for the whole batch at once.

use super::conv::batch_chunks_of;
use super::window::{fold, Window};
use super::{add, check_same_device, check_same_dtype, matmul, matrix_transpose, reshape};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;

/// `conv_transpose1d`, `conv_transpose2d` or `conv_transpose3d` for `rank` spatial axes.
fn op_name(rank: usize) -> &'static str {
    match rank {
        1 => "conv_transpose1d",
        2 => "conv_transpose2d",
        _ => "conv_transpose3d",
    }
}

/// How a transposed convolution strides, pads and dilates, one entry per spatial axis.
#[derive(Clone, Debug)]
pub struct ConvTransposeArgs<'a> {
    /// The step between the input positions' windows in the output.
    pub stride: &'a [usize],
    /// Removed from both ends of each output axis (the padding of the convolution whose
    /// gradient this is).
    pub padding: &'a [usize],
    /// Added to the end of each output axis (smaller than the stride).
    pub output_padding: &'a [usize],
    /// The spacing between kernel taps.
    pub dilation: &'a [usize],
    /// The number of blocked connections.
    pub groups: usize,
}

/// PyTorch's transposed convolution of `rank` spatial axes: `x (N, C_in, *s)` or unbatched
/// `(C_in, *s)`, `weight (C_in, C_out/groups, *k)`, optional `bias (C_out,)`. Each output
/// axis has `(s - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1` positions.
pub fn conv_transpose(
    rank: usize,
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvTransposeArgs<'_>,
) -> Result<Tensor> {
    crate::autocast::composite(
        op_name(rank),
        [Some(x), Some(weight), bias],
        |[x, w, b]| match (x, w) {
            (Some(x), Some(w)) => conv_transpose_now(rank, x, w, b, a),
            _ => unreachable!("the required operands stay present"),
        },
    )
}

fn conv_transpose_now(
    rank: usize,
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvTransposeArgs<'_>,
) -> Result<Tensor> {
    let op = op_name(rank);
    let err = |what: String| {
        Error::shape(
            op,
            format!(
                "{what} (input {}, weight {})",
                fmt_shape(x.shape()),
                fmt_shape(weight.shape())
            ),
        )
    };
    let mut ts = vec![x, weight];
    ts.extend(bias);
    check_same_device(op, &ts)?;
    check_same_dtype(op, &ts)?;
    if weight.ndim() != rank + 2 {
        return Err(err(format!(
            "expected a {}-D weight (in_channels, out_channels/groups, {rank} kernel sizes)",
            rank + 2
        )));
    }
    if x.ndim() == rank + 1 {
        let out = conv_transpose(rank, &super::unsqueeze(x, 0)?, weight, bias, a)?;
        return super::squeeze(&out, Some(&[0]));
    }
    if x.ndim() != rank + 2 {
        return Err(err(format!(
            "expected a {}-D or {}-D input",
            rank + 1,
            rank + 2
        )));
    }
    for (what, v) in [
        ("stride", a.stride),
        ("padding", a.padding),
        ("output_padding", a.output_padding),
        ("dilation", a.dilation),
    ] {
        if v.len() != rank {
            return Err(Error::value(
                op,
                format!("{what} must have {rank} entries, got {}", fmt_shape(v)),
            ));
        }
    }
    if a.stride.contains(&0) || a.dilation.contains(&0) {
        return Err(Error::value(op, "stride and dilation must be positive"));
    }
    let g = a.groups;
    let (c_in, n) = (x.shape()[1], x.shape()[0]);
    if g == 0 || c_in % g != 0 {
        return Err(err(format!(
            "in_channels ({c_in}) must be divisible by groups ({g})"
        )));
    }
    if weight.shape()[0] != c_in {
        return Err(err(format!(
            "the input has {c_in} channels but the weight expects {}",
            weight.shape()[0]
        )));
    }
    let og = weight.shape()[1];
    let c_out = og * g;
    if let Some(b) = bias {
        if b.shape() != [c_out] {
            return Err(Error::shape(
                op,
                format!(
                    "expected a bias of shape ({c_out},), got {}",
                    fmt_shape(b.shape())
                ),
            ));
        }
    }
    let kernel: Dims = weight.shape()[2..].iter().copied().collect();
    let spatial = &x.shape()[2..];
    let mut out: Dims = Dims::new();
    for i in 0..rank {
        let (s, st, p, op_, d, k) = (
            spatial[i],
            a.stride[i],
            a.padding[i],
            a.output_padding[i],
            a.dilation[i],
            kernel[i],
        );
        if op_ >= st {
            // PyTorch also allows output_padding < dilation; the windows then no longer
            // tile the output, which fold cannot express.
            return Err(Error::value(
                op,
                format!(
                    "output_padding ({}) must be smaller than stride ({})",
                    fmt_shape(a.output_padding),
                    fmt_shape(a.stride)
                ),
            ));
        }
        let size = ((s.max(1) - 1) * st + d * (k.max(1) - 1) + op_ + 1) as isize - 2 * p as isize;
        if size <= 0 || s == 0 || k == 0 {
            return Err(err(format!(
                "the output would have size {size} along spatial axis {i}"
            )));
        }
        out.push(size as usize);
    }
    let win = Window::new(&kernel, a.stride, a.padding, a.dilation);
    let l: usize = spatial.iter().product();
    let kn: usize = kernel.iter().product();
    // (G, C_out/G · K, C_in/G): each group's weight, transposed.
    let wt = matrix_transpose(&reshape(weight, &[g, c_in / g, og * kn])?)?;
    let xg = reshape(x, &[n, g, c_in / g, l])?;
    let mut parts = Vec::new();
    for (start, len) in batch_chunks_of(x, c_out * kn * l) {
        let xc = super::narrow(&xg, 0, start as isize, len as isize)?;
        let cols = matmul(&wt, &xc)?; // (len, G, C_out/G · K, L)
        parts.push(fold(&reshape(&cols, &[len, c_out * kn, l])?, &out, &win)?);
    }
    let y = if parts.len() == 1 {
        parts.remove(0)
    } else {
        super::concat(&parts, 0)?
    };
    match bias {
        Some(b) => {
            let mut per_channel: Dims = [c_out].into_iter().collect();
            per_channel.extend(std::iter::repeat_n(1, rank));
            add(&y, &reshape(b, &per_channel)?)
        }
        None => Ok(y),
    }
}
