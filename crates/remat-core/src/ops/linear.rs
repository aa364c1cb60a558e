//! `linear(x, weight, bias)` = `x @ weight.T + bias`, fused: each GEMM thread fills its block
//! of the output with the broadcast bias and accumulates its product into it (PyTorch's
//! addmm), so a layer costs no pass over its output besides the product's own.

use super::{check_same_device, from_vec, reshape, view};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu::{self, matmul::gemm_into};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims, Layout};
use crate::tensor::Tensor;

struct LinearOp {
    has_bias: bool,
}

/// `x` as a contiguous `(rows, features)` matrix (a view when `x` is contiguous).
fn rows_of(x: &Tensor) -> Result<Tensor> {
    let f = *x.shape().last().unwrap_or(&1);
    let rows = x.numel().checked_div(f).unwrap_or(0);
    let x = super::contiguous(x)?;
    Ok(view(
        &x,
        Layout {
            offset: x.layout().offset,
            ..Layout::contiguous(&[rows, f])
        },
    ))
}

/// Pointer and (row, column) strides of a 2-D view.
fn operand<T: Element>(t: &Tensor) -> (*const T, isize, isize) {
    let l = t.layout();
    // SAFETY: offset is within the storage by construction of every layout.
    let p = unsafe { cpu::slice::<T>(t.data()).as_ptr().add(l.offset) };
    (p, l.strides[0] as isize, l.strides[1] as isize)
}

fn linear_forward(x: &Tensor, w: &Tensor, b: Option<&Tensor>, cuda: bool) -> Result<Tensor> {
    let (rows, inf, outf) = (
        x.numel() / x.shape()[x.ndim() - 1].max(1),
        w.shape()[1],
        w.shape()[0],
    );
    let x2 = rows_of(x)?;
    let mut shape: Dims = x.shape().into();
    *shape.last_mut().expect("x has at least one axis") = outf;
    if cuda {
        // cuBLAS accumulates into the broadcast bias (beta = 1), as the CPU path does.
        let wt = view(w, w.layout().transpose(0, 1));
        let out = crate::cuda::launch::matmul_nd("linear", &x2, &wt, &[], b)?;
        return Ok(view(&out, Layout::contiguous(&shape)));
    }
    if x.dtype() == DType::BF16 {
        if let Some(out) = linear_bf16(&x2, w, b, rows, inf, outf) {
            return super::cast(&from_vec(out, &shape), DType::BF16);
        }
    }
    Ok(crate::dispatch!(x.dtype(), T => {
        let bias = b.map(|b| cpu::gather::<T>(b.data()));
        let mut out = cpu::alloc::<T>(rows * outf);
        let wt = view(w, w.layout().transpose(0, 1));
        // SAFETY: both operands are validated views of live storages.
        unsafe {
            gemm_into(&mut out, rows, outf, inf, operand::<T>(&x2), operand::<T>(&wt), bias.as_deref())
        };
        from_vec(out, &shape)
    }))
}

/// `x2 (rows, inf) · wᵀ + b` of bf16 operands on the bf16 kernel, in float32 (the bias added
/// before the one rounding, as oneDNN adds it); None without bf16 units.
fn linear_bf16(
    x2: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    rows: usize,
    inf: usize,
    outf: usize,
) -> Option<Vec<f32>> {
    fn operand(t: &Tensor, rs: usize, cs: usize) -> cpu::matmul::MatOperand<'_> {
        cpu::matmul::MatOperand {
            data: t.data(),
            batch_offsets: vec![t.layout().offset],
            rs: rs as isize,
            cs: cs as isize,
        }
    }
    let (xl, wl) = (x2.layout(), w.layout());
    let xa = operand(x2, xl.strides[0], xl.strides[1]);
    // wᵀ read through w's strides: row kk of wᵀ is column kk of w.
    let wb = operand(w, wl.strides[1], wl.strides[0]);
    let mut out = cpu::bf16_gemm::batched(&xa, &wb, rows, inf, outf)?;
    if let Some(b) = b {
        let bias: Vec<f32> = cpu::gather_cast::<half::bf16, f32>(b.data());
        for row in out.chunks_mut(outf.max(1)) {
            row.iter_mut().zip(&bias).for_each(|(v, &c)| *v += c);
        }
    }
    Some(out)
}

impl Op for LinearOp {
    fn name(&self) -> &'static str {
        "linear"
    }
    fn half_native(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        super::half_compute::forward_bf16_gemm(self, inputs)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        linear_forward(inputs[0], inputs[1], inputs.get(2).copied(), false)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        linear_forward(inputs[0], inputs[1], inputs.get(2).copied(), true)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // With the leading axes flattened into rows: gx = g W, gW = g^T x, gb = sum_rows g,
        // as differentiable ops (GEMMs reading transposed operands through strides).
        let dt = ctx.grad.dtype();
        let (x, w) = (
            super::to_dtype(&ctx.saved[0], dt)?,
            super::to_dtype(&ctx.saved[1], dt)?,
        );
        let (outf, inf) = (w.shape()[0], w.shape()[1]);
        let rows = x.numel().checked_div(inf).unwrap_or(0);
        let g2 = reshape(ctx.grad, &[rows, outf])?;
        let gx = if ctx.needs_grad(0) {
            Some(reshape(&super::matmul(&g2, &w)?, &ctx.inputs[0].shape)?)
        } else {
            None
        };
        let gw = if ctx.needs_grad(1) {
            let x2 = reshape(&x, &[rows, inf])?;
            Some(super::matmul(&super::transpose(&g2, 0, 1)?, &x2)?)
        } else {
            None
        };
        let mut grads = vec![gx, gw];
        if self.has_bias {
            grads.push(if ctx.needs_grad(2) {
                Some(super::sum(&g2, Some(&[0]), false)?)
            } else {
                None
            });
        }
        Ok(grads)
    }
}

/// `x @ weight.T + bias` over the last axis of `x` (`weight`: `(out, in)`, `bias`: `(out,)`).
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    crate::autocast::composite(
        "linear",
        [Some(x), Some(weight), bias],
        |[x, w, b]| match (x, w) {
            (Some(x), Some(w)) => linear_now(x, w, b),
            _ => unreachable!("the operands stay present"),
        },
    )
}

fn linear_now(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let mut all = vec![x, weight];
    all.extend(bias);
    check_same_device("linear", &all)?;
    if weight.ndim() != 2 || x.ndim() == 0 || x.shape()[x.ndim() - 1] != weight.shape()[1] {
        return Err(Error::shape(
            "linear",
            format!(
                "input {} does not match weight {} (expected weight (out_features, {}))",
                fmt_shape(x.shape()),
                fmt_shape(weight.shape()),
                x.shape()
                    .last()
                    .map_or("in_features".to_string(), |d| d.to_string())
            ),
        ));
    }
    if let Some(b) = bias {
        if b.shape() != [weight.shape()[0]] {
            return Err(Error::shape(
                "linear",
                format!(
                    "bias {} does not match weight {}",
                    fmt_shape(b.shape()),
                    fmt_shape(weight.shape())
                ),
            ));
        }
    }
    let dt = all.iter().fold(x.dtype(), |d, t| d.promote(t.dtype()));
    let cast_all: Vec<Tensor> = all
        .iter()
        .map(|t| super::to_dtype(t, dt))
        .collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = cast_all.iter().collect();
    apply(
        LinearOp {
            has_bias: bias.is_some(),
        },
        &refs,
        &[Save::Input(0), Save::Input(1)],
    )
}
