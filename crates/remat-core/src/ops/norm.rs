//! Layer normalisation over the last axis, with optional elementwise weight and bias of shape
//! `(n,)`. Only the input (and the weight, when there is one) is saved: the backward recomputes
//! each row's mean and reciprocal standard deviation with the forward's exact arithmetic.

use super::softmax::{c_order, for_blocks};
use super::{cast, check_same_device, from_vec};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::cpu::lanes::{self, RowTerms};
use crate::dtype::{Element, Scalar};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Lanes of the float64 row sums: partial sums kept in a fixed order (float32 rows add in
/// [`lanes::LANES`] lanes held in vector registers, see [`crate::cpu::lanes`]).
const LANES: usize = 16;

/// The partial sums' total, in a fixed order ([`cpu::fold_halves`]).
#[inline(always)]
fn lanes_total<T: Element>(a: &[T; LANES]) -> T {
    cpu::fold_halves(*a)
}

/// The sum of `f(v)` over a row in [`LANES`] lanes (a fixed order, so it vectorises and does
/// not depend on threads).
#[inline(always)]
fn lane_sum<T: Element>(row: &[T], f: impl Fn(T) -> T) -> T {
    let mut acc = [T::zero(); LANES];
    let chunks = row.chunks_exact(LANES);
    let rem = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += f(c[i]);
        }
    }
    let mut s = lanes_total(&acc);
    for &v in rem {
        s += f(v);
    }
    s
}

/// Mean and `1 / sqrt(var + eps)` of one row (two passes: stable for large means).
#[inline(always)]
fn row_stats<T: Element>(row: &[T], eps: T) -> (T, T) {
    let n = T::from_f64(row.len() as f64);
    if let Some(r) = lanes::as_f32(row) {
        // The same sums in vector registers (see `cpu::lanes`).
        let nf = row.len() as f32;
        let mean = lanes::row_sums(r, RowTerms::Plain).0 / nf;
        let var = lanes::row_sums(r, RowTerms::SquaredDeviation { mean }).0 / nf;
        let mean = T::from_f64(f64::from(mean));
        return (
            mean,
            T::from_f64(1.0) / (T::from_f64(f64::from(var)) + eps).sqrt(),
        );
    }
    let mean = lane_sum(row, |v| v) / n;
    let var = lane_sum(row, |v| (v - mean) * (v - mean)) / n;
    (mean, T::from_f64(1.0) / (var + eps).sqrt())
}

/// One normalised row: `(v - mean) * rstd`, times `w` and plus `b` where given.
#[inline(always)]
fn normalize_row<T: Element>(row: &[T], w: Option<&[T]>, b: Option<&[T]>, o: &mut [T], eps: T) {
    let (mean, rstd) = row_stats(row, eps);
    match (w, b) {
        (Some(w), Some(b)) => {
            for (((o, &v), &w), &b) in o.iter_mut().zip(row).zip(w).zip(b) {
                *o = (v - mean) * rstd * w + b;
            }
        }
        (Some(w), None) => {
            for ((o, &v), &w) in o.iter_mut().zip(row).zip(w) {
                *o = (v - mean) * rstd * w;
            }
        }
        (None, Some(b)) => {
            for ((o, &v), &b) in o.iter_mut().zip(row).zip(b) {
                *o = (v - mean) * rstd + b;
            }
        }
        (None, None) => {
            for (o, &v) in o.iter_mut().zip(row) {
                *o = (v - mean) * rstd;
            }
        }
    }
}

cpu::avx2_twin! {
    /// [`normalize_row`], in AVX2 where the CPU has it.
    fn normalize_row_avx2<T: Element>(
        row: &[T], w: Option<&[T]>, b: Option<&[T]>, o: &mut [T], eps: T
    ) = normalize_row;
}

/// For layer_norm's backward over one row: the sums of `gy` and `gy xhat` (`gy = g w` when
/// `W`, else `g`; `xhat = (v - mean) rstd`) in [`LANES`] lanes (a fixed order, so the result
/// does not depend on the vector width or the threads). A plain walk over fixed chunks with a
/// constant flag, so it vectorises at the full width.
#[inline(always)]
fn grad_sums<T: Element, const W: bool>(row: &[T], g: &[T], w: &[T], mean: T, rstd: T) -> (T, T) {
    let n = row.len();
    if let (Some(r), Some(g)) = (lanes::as_f32(row), lanes::as_f32(g)) {
        // The same sums in vector registers (see `cpu::lanes`).
        let to32 = |v: T| v.to_f64() as f32;
        let terms = RowTerms::NormGrad {
            g: &g[..n],
            w: if W { lanes::as_f32(&w[..n]) } else { None },
            mean: to32(mean),
            rstd: to32(rstd),
        };
        let (s1, s2) = lanes::row_sums(r, terms);
        return (T::from_f64(f64::from(s1)), T::from_f64(f64::from(s2)));
    }
    let term = |gj: T, wj: T, v: T| {
        let gy = if W { gj * wj } else { gj };
        (gy, gy * ((v - mean) * rstd))
    };
    let (mut a1, mut a2) = ([T::zero(); LANES], [T::zero(); LANES]);
    let full = n / LANES * LANES;
    let wf = if W { &w[..full] } else { &g[..full] };
    for ((rc, gc), wc) in row[..full]
        .chunks_exact(LANES)
        .zip(g[..full].chunks_exact(LANES))
        .zip(wf.chunks_exact(LANES))
    {
        for i in 0..LANES {
            let (t1, t2) = term(gc[i], wc[i], rc[i]);
            a1[i] += t1;
            a2[i] += t2;
        }
    }
    let (mut s1, mut s2) = (lanes_total(&a1), lanes_total(&a2));
    for j in full..n {
        let (t1, t2) = term(g[j], if W { w[j] } else { g[j] }, row[j]);
        s1 += t1;
        s2 += t2;
    }
    (s1, s2)
}

/// One row of layer_norm's backward: adds the row's terms to `dw` and `db` (when given) and
/// writes its input gradient `rstd (gy - mean(gy) - xhat mean(gy xhat))`, `gy = g w`, into `dx`
/// (when given): the row's statistics (two passes), a pass for each parameter gradient, one
/// for both means and one for `dx`, each a plain loop that vectorises.
#[inline(always)]
fn backward_row<T: Element>(
    row: &[T],
    g: &[T],
    w: Option<&[T]>,
    dw: Option<&mut [T]>,
    db: Option<&mut [T]>,
    dx: Option<&mut [T]>,
    eps: T,
) {
    let n = row.len();
    let g = &g[..n];
    let (mean, rstd) = row_stats(row, eps);
    if let Some(db) = db {
        for (d, &gj) in db[..n].iter_mut().zip(g) {
            *d += gj;
        }
    }
    if let Some(dw) = dw {
        for ((d, &gj), &v) in dw[..n].iter_mut().zip(g).zip(row) {
            *d += gj * ((v - mean) * rstd);
        }
    }
    let Some(dx) = dx else {
        return;
    };
    let (s1, s2) = match w {
        Some(w) => grad_sums::<T, true>(row, g, &w[..n], mean, rstd),
        None => grad_sums::<T, false>(row, g, &[], mean, rstd),
    };
    let dx = &mut dx[..n];
    let inv_n = T::from_f64(1.0 / n.max(1) as f64);
    let (m1, m2) = (s1 * inv_n, s2 * inv_n);
    match w {
        Some(w) => {
            for (((o, &v), &g), &w) in dx.iter_mut().zip(row).zip(g).zip(&w[..n]) {
                *o = rstd * (g * w - m1 - (v - mean) * rstd * m2);
            }
        }
        None => {
            for ((o, &v), &g) in dx.iter_mut().zip(row).zip(g) {
                *o = rstd * (g - m1 - (v - mean) * rstd * m2);
            }
        }
    }
}

cpu::avx2_twin! {
    /// [`backward_row`], in AVX2 where the CPU has it.
    fn backward_row_avx2<T: Element>(
        row: &[T], g: &[T], w: Option<&[T]>, dw: Option<&mut [T]>, db: Option<&mut [T]>,
        dx: Option<&mut [T]>, eps: T
    ) = backward_row;
}

struct LayerNormOp {
    eps: f64,
    has_weight: bool,
    has_bias: bool,
}

impl LayerNormOp {
    /// Index of the bias among the inputs.
    fn bias_index(&self) -> usize {
        1 + self.has_weight as usize
    }

    /// The input, weight and bias in their common dtype.
    #[allow(clippy::type_complexity)]
    fn operands(&self, inputs: &[&Tensor]) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
        let dt = inputs
            .iter()
            .fold(inputs[0].dtype(), |d, t| d.promote(t.dtype()));
        let x = cast(inputs[0], dt)?;
        let w = self.has_weight.then(|| cast(inputs[1], dt)).transpose()?;
        let b = self
            .has_bias
            .then(|| cast(inputs[self.bias_index()], dt))
            .transpose()?;
        Ok((x, w, b))
    }

    /// The backward written with differentiable ops, for `create_graph` (the fused kernels
    /// serve every other backward): with `xhat = (x - mean) rstd` and `gy = g w`,
    /// `gx = rstd (gy - mean(gy) - xhat mean(gy xhat))`, `gw = sum(g xhat)`, `gb = sum(g)`
    /// over the leading axes.
    fn composite_backward(
        &self,
        ctx: &BackwardCtx<'_>,
        x: &Tensor,
        w: Option<&Tensor>,
    ) -> Result<Vec<Option<Tensor>>> {
        use super::{add_scalar, mean, mul, pow_scalar, sub, sum};
        let last: &[isize] = &[-1];
        let g = ctx.grad;
        let xc = sub(x, &mean(x, Some(last), true)?)?;
        let var = mean(&mul(&xc, &xc)?, Some(last), true)?;
        let rstd = pow_scalar(&add_scalar(&var, self.eps)?, -0.5)?;
        let xhat = mul(&xc, &rstd)?;
        let lead: Vec<isize> = (0..x.ndim() as isize - 1).collect();
        let col = |t: &Tensor| sum(t, Some(&lead), false);
        let gx = if ctx.needs_grad(0) {
            let gy = match w {
                Some(w) => mul(g, w)?,
                None => g.clone(),
            };
            let m1 = mean(&gy, Some(last), true)?;
            let m2 = mean(&mul(&gy, &xhat)?, Some(last), true)?;
            Some(mul(&rstd, &sub(&sub(&gy, &m1)?, &mul(&xhat, &m2)?)?)?)
        } else {
            None
        };
        let mut grads = vec![gx];
        if self.has_weight {
            grads.push(
                ctx.needs_grad(1)
                    .then(|| col(&mul(g, &xhat)?))
                    .transpose()?,
            );
        }
        if self.has_bias {
            grads.push(
                ctx.needs_grad(self.bias_index())
                    .then(|| col(g))
                    .transpose()?,
            );
        }
        Ok(grads)
    }
}

impl Op for LayerNormOp {
    fn name(&self) -> &'static str {
        "layer_norm"
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, w, b) = self.operands(inputs)?;
        crate::cuda::launch::layer_norm("layer_norm", &x, w.as_ref(), b.as_ref(), self.eps)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, w, b) = self.operands(inputs)?;
        let dt = x.dtype();
        let n = *x.shape().last().unwrap_or(&1);
        Ok(crate::dispatch!(dt, T => {
            let xs = c_order::<T>(x.data());
            let ws = w.as_ref().map(|w| c_order::<T>(w.data()));
            let bs = b.as_ref().map(|b| c_order::<T>(b.data()));
            let eps = T::from_f64(self.eps);
            let mut out = cpu::alloc::<T>(xs.len());
            for_blocks(&mut out, n, |r, o| {
                let row = &xs[r * n..(r + 1) * n];
                normalize_row_avx2(row, ws.as_deref(), bs.as_deref(), o, eps);
            });
            from_vec(out, x.shape())
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let dt = ctx.grad.dtype();
        let x = super::to_dtype(&ctx.saved[0], dt)?;
        let w = self
            .has_weight
            .then(|| super::to_dtype(&ctx.saved[1], dt))
            .transpose()?;
        if crate::grad_mode::is_grad_enabled() {
            // `create_graph`: the backward must itself be differentiable.
            return self.composite_backward(ctx, &x, w.as_ref());
        }
        let shape = x.shape();
        let n = *shape.last().unwrap_or(&1);
        let rows = x.numel().checked_div(n).unwrap_or(0);
        let need_x = ctx.needs_grad(0);
        let need_w = self.has_weight && ctx.needs_grad(1);
        let need_b = self.has_bias && ctx.needs_grad(self.bias_index());
        crate::device::on_device(
            x.device(),
            || -> Result<_> {
                let (gx, gw, gb) = crate::dispatch!(dt, T => {
                    let xs = c_order::<T>(x.data());
                    let gs = c_order::<T>(ctx.grad.data());
                    let ws = w.as_ref().map(|w| c_order::<T>(w.data()));
                    let eps = T::from_f64(self.eps);
                    let zero = T::from_f64(0.0);
                    // Rows are processed in fixed chunks, each with its own weight/bias partial sums,
                    // and the partials are added in chunk order: the result does not depend on the
                    // thread count.
                    let chunk_rows = (16_384 / n.max(1)).max(1);
                    let chunk = |c: usize, mut dx: Option<&mut [T]>| -> (Vec<T>, Vec<T>) {
                        let mut dw = cpu::filled(if need_w { n } else { 0 }, zero);
                        let mut db = cpu::filled(if need_b { n } else { 0 }, zero);
                        let r_end = ((c + 1) * chunk_rows).min(rows);
                        for (k, r) in (c * chunk_rows..r_end).enumerate() {
                            let row = &xs[r * n..(r + 1) * n];
                            let g = &gs[r * n..(r + 1) * n];
                            backward_row_avx2(
                                row,
                                g,
                                ws.as_deref(),
                                need_w.then_some(&mut dw[..]),
                                need_b.then_some(&mut db[..]),
                                dx.as_deref_mut().map(|d| &mut d[k * n..(k + 1) * n]),
                                eps,
                            );
                        }
                        (dw, db)
                    };
                    let nchunks = rows.div_ceil(chunk_rows);
                    let parallel = x.numel() >= cpu::PAR_MIN && nchunks > 1;
                    let mut dx = if need_x { Some(cpu::alloc::<T>(x.numel())) } else { None };
                    let partials: Vec<(Vec<T>, Vec<T>)> = match dx.as_mut() {
                        Some(dx) if n > 0 => {
                            if parallel {
                                crate::parallel::install(|| dx.par_chunks_mut(chunk_rows * n).enumerate().map(|(c, d)| chunk(c, Some(d))).collect())
                            } else {
                                dx.chunks_mut(chunk_rows * n).enumerate().map(|(c, d)| chunk(c, Some(d))).collect()
                            }
                        }
                        _ => {
                            if parallel {
                                crate::parallel::install(|| (0..nchunks).into_par_iter().map(|c| chunk(c, None)).collect())
                            } else {
                                (0..nchunks).map(|c| chunk(c, None)).collect()
                            }
                        }
                    };
                    let mut dw = cpu::filled(if need_w { n } else { 0 }, zero);
                    let mut db = cpu::filled(if need_b { n } else { 0 }, zero);
                    for (pw, pb) in &partials {
                        for (d, &p) in dw.iter_mut().zip(pw) {
                            *d += p;
                        }
                        for (d, &p) in db.iter_mut().zip(pb) {
                            *d += p;
                        }
                    }
                    (
                        dx.map(|v| from_vec(v, shape)),
                        need_w.then(|| from_vec(dw, &[n])),
                        need_b.then(|| from_vec(db, &[n])),
                    )
                });
                let mut grads = vec![gx];
                if self.has_weight {
                    grads.push(gw);
                }
                if self.has_bias {
                    grads.push(gb);
                }
                Ok(grads)
            },
            || {
                let g = super::to_dtype(ctx.grad, dt)?;
                let (gx, gxhat) = crate::cuda::launch::layer_norm_backward(
                    "layer_norm",
                    &x,
                    &g,
                    w.as_ref(),
                    self.eps,
                    need_x,
                    need_w,
                )?;
                // Weight and bias gradients: column sums over every leading axis.
                let lead: Vec<usize> = (0..shape.len() - 1).collect();
                let col = |t: &Tensor| super::reduce::sum_raw(t, &lead, false);
                let mut grads = vec![gx];
                if self.has_weight {
                    grads.push(gxhat.as_ref().map(col).transpose()?);
                }
                if self.has_bias {
                    grads.push(need_b.then(|| col(&g)).transpose()?);
                }
                Ok(grads)
            },
        )
    }
}

/// Check that a weight/bias is a `(n,)` vector on the input's device.
fn check_param(what: &str, p: &Tensor, x: &Tensor, n: usize) -> Result<()> {
    if p.shape() != [n] {
        return Err(Error::shape(
            "layer_norm",
            format!(
                "{what} must have shape ({n},) to normalise the last axis of an input of shape \
                 {}, got {}",
                fmt_shape(x.shape()),
                fmt_shape(p.shape())
            ),
        ));
    }
    check_same_device("layer_norm", &[x, p])?;
    Ok(())
}

/// Layer normalisation over the last axis: `(x - mean) / sqrt(var + eps) * weight + bias`,
/// with the biased variance (as PyTorch). `weight` and `bias` must have shape `(n,)`, n the
/// last dimension of `x`; mixed dtypes promote to float64.
pub fn layer_norm(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let Some(&n) = x.shape().last() else {
        return Err(Error::shape(
            "layer_norm",
            "the input must have at least one dimension, got a 0-d tensor",
        ));
    };
    if !eps.is_finite() || eps < 0.0 {
        return Err(Error::value(
            "layer_norm",
            format!("eps must be a finite non-negative number, got {eps}"),
        ));
    }
    let mut inputs: Vec<&Tensor> = vec![x];
    let mut saves = vec![Save::Input(0)];
    if let Some(w) = weight {
        check_param("weight", w, x, n)?;
        inputs.push(w);
        saves.push(Save::Input(1));
    }
    if let Some(b) = bias {
        check_param("bias", b, x, n)?;
        inputs.push(b);
    }
    apply(
        LayerNormOp {
            eps,
            has_weight: weight.is_some(),
            has_bias: bias.is_some(),
        },
        &inputs,
        &saves,
    )
}
