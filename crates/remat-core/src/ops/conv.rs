//! Convolution over 1 to 3 spatial axes (PyTorch's `conv1d`/`conv2d`/`conv3d`: stride,
//! padding — explicit, `"same"` or `"valid"` — dilation and groups), as im2col plus one
//! batched GEMM: `out[n, g] = W[g] · unfold(x)[n, g]`.
//!
//! Memory: the op keeps only its input and weight for backward, as PyTorch does, never the
//! im2col matrix (`prod(kernel)` times the input): the backward rebuilds it. The backward is
//! written with the differentiable `unfold`, `fold` and `matmul`, so second-order gradients
//! (double backward through a convolution) come from their own rules.
//!
//! On the CPU the forward and the first-order backward are the kernels of `conv_cpu.rs`: per
//! sample, im2col into a thread's workspace and single-threaded GEMMs written straight into
//! the output (bias included) and the gradients. A `create_graph` backward composes the
//! differentiable ops below instead, on the CPU in chunks of samples whose im2col matrix fits
//! [`CPU_CHUNK_BYTES`] (at least one sample), never the whole batch's matrix (`prod(kernel)`
//! times the input, which would be the step's largest transient). On CUDA forward and
//! backward compose the ops with the whole batch as one chunk (one large GEMM suits the GPU
//! better).

use super::conv_cpu::{self, ConvShape};
use super::softmax::c_order;
use super::window::{fold, unfold, Plane, Window};
use super::{
    add, check_same_device, check_same_dtype, from_vec, matmul, matrix_transpose, reshape,
};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::device::Device;
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

/// The convolution proper (symmetric padding): inputs `x (N, C, *s)`, `w (O, C/groups, *k)`
/// and, when `bias`, `b (O,)`.
struct ConvOp {
    name: &'static str,
    win: Window,
    groups: usize,
    bias: bool,
}

/// The most bytes of im2col matrix a CPU convolution builds at once (a chunk of samples; at
/// least one sample). About an L2 cache: the GEMM then reads the matrix from cache.
pub const CPU_CHUNK_BYTES: usize = 2 << 20;

/// `(start, len)` chunks of the batch of `x` whose im2col matrices (`per_sample` elements
/// each) fit [`CPU_CHUNK_BYTES`], but at least `min_len` samples; the whole batch on CUDA.
fn batch_chunks(x: &Tensor, per_sample: usize, min_len: usize) -> Vec<(usize, usize)> {
    let n = x.shape()[0];
    if n == 0 || x.device() != Device::Cpu {
        return vec![(0, n)];
    }
    let fits = CPU_CHUNK_BYTES / (per_sample * x.dtype().size()).max(1);
    let len = fits.max(min_len).clamp(1, n);
    (0..n).step_by(len).map(|s| (s, len.min(n - s))).collect()
}

/// [`batch_chunks`] with at least a sample per thread, for the other ops that lower to
/// column matrices per chunk of samples (the transposed convolution).
pub(super) fn batch_chunks_of(x: &Tensor, per_sample: usize) -> Vec<(usize, usize)> {
    batch_chunks(x, per_sample, crate::parallel::num_threads())
}

/// Samples `[start, start + len)` of `t` (a view; `t` itself when that is all of it).
fn samples(t: &Tensor, (start, len): (usize, usize)) -> Result<Tensor> {
    if start == 0 && len == t.shape()[0] {
        return Ok(t.clone());
    }
    super::narrow(t, 0, start as isize, len as isize)
}

/// The chunks' results joined along the batch axis (no copy for one chunk).
fn join_batch(mut parts: Vec<Tensor>) -> Result<Tensor> {
    if parts.len() == 1 {
        return Ok(parts.remove(0));
    }
    super::concat(&parts, 0)
}

impl ConvOp {
    /// `C · prod(kernel)` and the number of output positions `L` of a convolution of `x`.
    fn cols_shape(&self, x: &Tensor, w: &Tensor) -> Result<(usize, usize)> {
        let ck = w.numel() / w.shape()[0].max(1) * self.groups;
        let spatial = self.win.output_size(self.name, &x.shape()[2..])?;
        Ok((ck, spatial.iter().product()))
    }

    /// The sizes the CPU kernels take.
    fn conv_shape(&self, x: &Tensor, w: &Tensor) -> Result<ConvShape> {
        let spatial = self.win.output_size(self.name, &x.shape()[2..])?;
        Ok(ConvShape {
            n: x.shape()[0],
            c: x.shape()[1],
            o: w.shape()[0],
            groups: self.groups,
            plane: Plane::new(&self.win, &x.shape()[2..], &spatial),
        })
    }

    /// `(N, O, *out)` for input `x`.
    fn out_shape(&self, x: &Tensor, w: &Tensor) -> Result<Dims> {
        let mut shape: Dims = [x.shape()[0], w.shape()[0]].into_iter().collect();
        shape.extend(self.win.output_size(self.name, &x.shape()[2..])?);
        Ok(shape)
    }

    /// `(N, O, *out)` from `x`, `w` and the bias, with the engine's ops but nothing recorded
    /// (CUDA).
    fn compute(&self, x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let _guard = crate::grad_mode::no_grad();
        let o = w.shape()[0];
        let (ck, l) = self.cols_shape(x, w)?;
        let g = self.groups;
        let mut parts = Vec::new();
        // At least a sample per thread: the forward GEMMs then run one sample per thread
        // (measured 2x over GEMM's own threading for thin products).
        for chunk in batch_chunks(x, ck * l, crate::parallel::num_threads()) {
            let cols = unfold(&samples(x, chunk)?, &self.win)?;
            parts.push(if g == 1 {
                matmul(&reshape(w, &[o, ck])?, &cols)?
            } else {
                let wg = reshape(w, &[g, o / g, ck / g])?;
                matmul(&wg, &reshape(&cols, &[chunk.1, g, ck / g, l])?)?
            });
        }
        let shape = self.out_shape(x, w)?;
        let out = reshape(&join_batch(parts)?, &shape)?;
        match bias {
            Some(b) => {
                let mut per_channel: Dims = [o].into_iter().collect();
                per_channel.extend(std::iter::repeat_n(1, shape.len() - 2));
                add(&out, &reshape(b, &per_channel)?)
            }
            None => Ok(out),
        }
    }

    /// The first-order gradients by the CPU kernels (see `conv_cpu.rs`).
    fn cpu_backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (x, w) = (&ctx.saved[0], &ctx.saved[1]);
        let sh = self.conv_shape(x, w)?;
        let need = [
            ctx.needs_grad(0),
            ctx.needs_grad(1),
            self.bias && ctx.needs_grad(2),
        ];
        let mut grads = crate::dispatch!(x.dtype(), T => {
            let (xs, ws) = (c_order::<T>(x.data()), c_order::<T>(w.data()));
            let gy = c_order::<T>(ctx.grad.data());
            let (gx, gw, gb) = conv_cpu::backward(&sh, &xs, &ws, &gy, need);
            vec![
                gx.map(|v| from_vec(v, x.shape())),
                gw.map(|v| from_vec(v, w.shape())),
                gb.map(|v| from_vec(v, &[sh.o])),
            ]
        });
        grads.truncate(2 + self.bias as usize);
        Ok(grads)
    }
}

impl Op for ConvOp {
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, w) = (inputs[0], inputs[1]);
        let sh = self.conv_shape(x, w)?;
        let shape = self.out_shape(x, w)?;
        Ok(crate::dispatch!(x.dtype(), T => {
            let (xs, ws) = (c_order::<T>(x.data()), c_order::<T>(w.data()));
            let bias = inputs.get(2).map(|b| c_order::<T>(b.data()));
            from_vec(conv_cpu::forward(&sh, &xs, &ws, bias.as_deref()), &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.compute(inputs[0], inputs[1], inputs.get(2).copied())
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (x, w) = (&ctx.saved[0], &ctx.saved[1]);
        // A first-order backward (grad mode off) on the CPU: the fused kernels. With
        // `create_graph` the composition below records its own graph.
        if x.device() == Device::Cpu && !crate::grad_mode::is_grad_enabled() {
            return self.cpu_backward(ctx);
        }
        let xs = x.shape();
        let (n, o, g) = (xs[0], w.shape()[0], self.groups);
        let ck = w.numel() / o * g; // C · prod(kernel)
        let (kg, og) = (ck / g, o / g);
        let l = ctx.grad.numel() / (n * o).max(1);
        // (N, G, O/G, L): the output gradient per group.
        let gy = reshape(ctx.grad, &[n, g, og, l])?;
        let wg = reshape(w, &[g, og, kg])?;
        let (mut gx_parts, mut gw) = (Vec::new(), None);
        // At least a sample per thread, as in the forward: the products below are batched
        // over the chunk's samples (and groups), so each thread runs whole products on its
        // own (measured 2x over GEMM's own threading for these thin products).
        for chunk in batch_chunks(x, ck * l, crate::parallel::num_threads()) {
            let nc = chunk.1;
            let gy_c = samples(&gy, chunk)?;
            if ctx.needs_grad(0) {
                let gcols = matmul(&matrix_transpose(&wg)?, &gy_c)?; // (nc, G, kg, L)
                gx_parts.push(fold(&reshape(&gcols, &[nc, ck, l])?, &xs[2..], &self.win)?);
            }
            if ctx.needs_grad(1) {
                // Per sample and group, (kg, L) · (O/G, L)ᵀ: the long L axis is the inner
                // one of both operands as stored and the transpose is a view the GEMM reads
                // directly; then the chunk's samples are summed.
                let cols = reshape(&unfold(&samples(x, chunk)?, &self.win)?, &[nc, g, kg, l])?;
                let per_sample = matmul(&cols, &matrix_transpose(&gy_c)?)?; // (nc, G, kg, O/G)
                let part = super::sum(&per_sample, Some(&[0]), false)?;
                gw = Some(match gw {
                    None => part,
                    Some(acc) => add(&acc, &part)?,
                });
            }
        }
        let gx = if ctx.needs_grad(0) {
            Some(join_batch(gx_parts)?)
        } else {
            None
        };
        let gw = gw
            .map(|t| reshape(&matrix_transpose(&t)?, w.shape()))
            .transpose()?;
        let mut grads = vec![gx, gw];
        if self.bias {
            grads.push(if ctx.needs_grad(2) {
                let axes: Vec<isize> = (0..ctx.grad.ndim() as isize).filter(|&a| a != 1).collect();
                Some(super::sum(ctx.grad, Some(&axes), false)?)
            } else {
                None
            });
        }
        Ok(grads)
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

/// [`conv`] as PyTorch's `conv{rank}d`: the weight must have `rank + 2` dims (a weight of
/// another rank would otherwise be taken for another convolution and the error would name
/// that one).
#[allow(clippy::too_many_arguments)]
pub fn conv_nd(
    rank: usize,
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[usize],
    padding: &ConvPadding,
    dilation: &[usize],
    groups: usize,
) -> Result<Tensor> {
    if weight.ndim() != rank + 2 {
        return Err(Error::shape(
            conv_name(rank + 2),
            format!(
                "expected a {}-D weight (out_channels, in_channels/groups, {} kernel sizes), got \
                 weight of shape {} (input {})",
                rank + 2,
                rank,
                fmt_shape(weight.shape()),
                fmt_shape(x.shape())
            ),
        ));
    }
    conv(x, weight, bias, stride, padding, dilation, groups)
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
    crate::autocast::composite(
        conv_name(weight.ndim()),
        [Some(x), Some(weight), bias],
        |[x, w, b]| match (x, w) {
            (Some(x), Some(w)) => conv_now(x, w, b, stride, padding, dilation, groups),
            _ => unreachable!("the operands stay present"),
        },
    )
}

fn conv_now(
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
    let mut inputs = vec![&x, weight];
    inputs.extend(bias);
    apply(
        ConvOp {
            name: op,
            win,
            groups,
            bias: bias.is_some(),
        },
        &inputs,
        &[Save::Input(0), Save::Input(1)],
    )
}
