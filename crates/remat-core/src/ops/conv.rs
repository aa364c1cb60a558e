//! Convolution over 1 to 3 spatial axes (PyTorch's `conv1d`/`conv2d`/`conv3d`: stride,
//! padding — explicit, `"same"` or `"valid"` — dilation and groups), as im2col plus one
//! batched GEMM: `out[n, g] = W[g] · unfold(x)[n, g]`.
//!
//! Memory: the op keeps only its input and weight for backward, as PyTorch does, never the
//! im2col matrix (`prod(kernel)` times the input): the backward rebuilds it. The backward is
//! written with the differentiable `unfold`, `fold` and `matmul`, so second-order gradients
//! (double backward through a convolution) come from their own rules.

use super::window::{fold, unfold, Window};
use super::{add, check_same_device, check_same_dtype, matmul, matrix_transpose, permute, reshape};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;

/// How a convolution pads its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConvPadding {
    /// Zeros on both sides of each spatial axis.
    Explicit(Dims),
    /// PyTorch's `"same"`: the output has the input's spatial size (stride 1 only); an odd
    /// total padding puts the extra zero at the end, as PyTorch does.
    Same,
    /// PyTorch's `"valid"`: no padding.
    Valid,
}

/// The convolution proper (no bias, symmetric padding): inputs `x (N, C, *s)` and
/// `w (O, C/groups, *k)`.
struct ConvOp {
    name: &'static str,
    win: Window,
    groups: usize,
}

impl ConvOp {
    /// `(N, O, *out)` from `x` and `w`, with the engine's ops but nothing recorded.
    fn compute(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        let _guard = crate::grad_mode::no_grad();
        let (n, o) = (x.shape()[0], w.shape()[0]);
        let cols = unfold(x, &self.win)?;
        let (ck, l) = (cols.shape()[1], cols.shape()[2]);
        let g = self.groups;
        let out = if g == 1 {
            matmul(&reshape(w, &[o, ck])?, &cols)?
        } else {
            let wg = reshape(w, &[g, o / g, ck / g])?;
            matmul(&wg, &reshape(&cols, &[n, g, ck / g, l])?)?
        };
        let spatial = self.win.output_size(self.name, &x.shape()[2..])?;
        let mut shape: Dims = [n, o].into_iter().collect();
        shape.extend_from_slice(&spatial);
        reshape(&out, &shape)
    }
}

impl Op for ConvOp {
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.compute(inputs[0], inputs[1])
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.compute(inputs[0], inputs[1])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (x, w) = (&ctx.saved[0], &ctx.saved[1]);
        let xs = x.shape();
        let (n, o, g) = (xs[0], w.shape()[0], self.groups);
        let ck = w.numel() / o * g; // C · prod(kernel)
        let (kg, og) = (ck / g, o / g);
        let l = ctx.grad.numel() / (n * o).max(1);
        // (N, G, O/G, L): the output gradient per group.
        let gy = reshape(ctx.grad, &[n, g, og, l])?;
        let wg = reshape(w, &[g, og, kg])?;
        let gx = if ctx.needs_grad(0) {
            let gcols = matmul(&matrix_transpose(&wg)?, &gy)?; // (N, G, kg, L)
            Some(fold(&reshape(&gcols, &[n, ck, l])?, &xs[2..], &self.win)?)
        } else {
            None
        };
        let gw = if ctx.needs_grad(1) {
            // One GEMM per group over all N·L positions: (G, O/G, N·L) · (G, kg, N·L)ᵀ. The
            // permutes move whole L-long rows (cheap copies; none when N = 1), and the
            // transpose is a view the GEMM reads directly.
            let cols = reshape(&unfold(x, &self.win)?, &[n, g, kg, l])?;
            let a = reshape(&permute(&gy, &[1, 2, 0, 3])?, &[g, og, n * l])?;
            let b = reshape(&permute(&cols, &[1, 2, 0, 3])?, &[g, kg, n * l])?;
            Some(reshape(&matmul(&a, &matrix_transpose(&b)?)?, w.shape())?)
        } else {
            None
        };
        Ok(vec![gx, gw])
    }
}

/// `conv1d`, `conv2d` or `conv3d` (the op's name in messages) for a weight of `ndim` axes.
fn conv_name(ndim: usize) -> &'static str {
    match ndim {
        3 => "conv1d",
        4 => "conv2d",
        _ => "conv3d",
    }
}

fn shape_error(x: &Tensor, w: &Tensor, what: String) -> Error {
    Error::shape(
        conv_name(w.ndim()),
        format!(
            "{what} (input {}, weight {})",
            fmt_shape(x.shape()),
            fmt_shape(w.shape())
        ),
    )
}

/// Padding that PyTorch's `"same"` needs on each side: (left, extra zero at the end).
fn same_padding(kernel: &[usize], dilation: &[usize]) -> (Dims, Vec<usize>) {
    let total: Vec<usize> = kernel
        .iter()
        .zip(dilation)
        .map(|(&k, &d)| d * (k - 1))
        .collect();
    let left = total.iter().map(|t| t / 2).collect();
    let extra = total.iter().map(|t| t % 2).collect();
    (left, extra)
}

/// PyTorch's convolution: `x (N, C, *spatial)` or unbatched `(C, *spatial)`, `weight
/// (O, C/groups, *kernel)`, optional `bias (O,)`; `stride`, `padding`, `dilation` one entry
/// per spatial axis (1 to 3). Returns `(N, O, *out)` (or `(O, *out)` when unbatched).
pub fn conv(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[usize],
    padding: &ConvPadding,
    dilation: &[usize],
    groups: usize,
) -> Result<Tensor> {
    let op = conv_name(weight.ndim());
    let mut ts = vec![x, weight];
    ts.extend(bias);
    check_same_device(op, &ts)?;
    check_same_dtype(op, &ts)?;
    let rank = weight.ndim().saturating_sub(2);
    if !(1..=3).contains(&rank) {
        return Err(shape_error(
            x,
            weight,
            "expected a weight of 3 to 5 dims (out_channels, in_channels/groups, *kernel)".into(),
        ));
    }
    if x.ndim() == rank + 1 {
        // Unbatched: a batch of one, squeezed again.
        let out = conv(
            &super::unsqueeze(x, 0)?,
            weight,
            bias,
            stride,
            padding,
            dilation,
            groups,
        )?;
        return super::squeeze(&out, Some(&[0]));
    }
    if x.ndim() != rank + 2 {
        return Err(shape_error(
            x,
            weight,
            format!(
                "expected a {}-D or {}-D input for a {}-D weight",
                rank + 1,
                rank + 2,
                weight.ndim()
            ),
        ));
    }
    let (c, o) = (x.shape()[1], weight.shape()[0]);
    if groups == 0 || o % groups != 0 {
        return Err(shape_error(
            x,
            weight,
            format!("out_channels ({o}) must be divisible by groups ({groups})"),
        ));
    }
    if weight.shape()[1] * groups != c {
        return Err(shape_error(
            x,
            weight,
            format!(
                "the input has {c} channels but weight expects {} × groups ({groups}) = {}",
                weight.shape()[1],
                weight.shape()[1] * groups
            ),
        ));
    }
    if let Some(b) = bias {
        if b.shape() != [o] {
            return Err(Error::shape(
                op,
                format!(
                    "expected a bias of shape ({o},), got {}",
                    fmt_shape(b.shape())
                ),
            ));
        }
    }
    let kernel: Dims = weight.shape()[2..].iter().copied().collect();
    let (pads, x) = match padding {
        ConvPadding::Explicit(p) => (p.clone(), x.clone()),
        ConvPadding::Valid => (std::iter::repeat_n(0, rank).collect(), x.clone()),
        ConvPadding::Same => {
            if stride.iter().any(|&s| s != 1) {
                return Err(Error::value(
                    op,
                    format!(
                        "padding='same' is not supported for strided convolutions (stride {})",
                        fmt_shape(stride)
                    ),
                ));
            }
            if dilation.len() != rank {
                return Err(Error::value(
                    op,
                    format!(
                        "dilation must have {rank} entries, got {}",
                        fmt_shape(dilation)
                    ),
                ));
            }
            let (left, extra) = same_padding(&kernel, dilation);
            let x = if extra.iter().any(|&e| e > 0) {
                // PyTorch puts the odd zero at the end of each axis.
                let mut pads = Vec::with_capacity(2 * rank);
                for e in extra.iter().rev() {
                    pads.extend([0isize, *e as isize]);
                }
                super::pad(x, &pads, super::PadMode::Constant, 0.0)?
            } else {
                x.clone()
            };
            (left, x)
        }
    };
    let win = Window::new(&kernel, stride, &pads, dilation);
    win.output_size(op, &x.shape()[2..])?;
    let out = apply(
        ConvOp {
            name: op,
            win,
            groups,
        },
        &[&x, weight],
        &[Save::Input(0), Save::Input(1)],
    )?;
    match bias {
        Some(b) => {
            let mut shape: Dims = [o].into_iter().collect();
            shape.extend(std::iter::repeat_n(1, rank));
            add(&out, &reshape(b, &shape)?)
        }
        None => Ok(out),
    }
}
