//! Inverted dropout with a counter-based mask: element `i` is kept iff
//! `rng::uniform(key, i) >= p`, and kept values are scaled by `1 / (1 - p)`. The op stores the
//! RNG key, so a forward replay (checkpoint recompute) draws the identical mask and the
//! backward regenerates it instead of saving it: dropout keeps nothing alive.

use super::from_vec;
use super::softmax::c_order;
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::rng::{self, RngState};
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Elements per parallel task of the mask kernel.
const CHUNK: usize = 4096;

/// `x[i] * scale` where the mask keeps element `i`, else 0 (x in C order). `key` None drops
/// everything (p == 1).
fn masked<T: Element>(x: &[T], key: Option<RngState>, p: f64) -> Vec<T> {
    let mut out = cpu::alloc::<T>(x.len());
    let Some(key) = key else {
        out.fill(T::from_f64(0.0));
        return out;
    };
    let scale = T::from_f64(1.0 / (1.0 - p));
    let zero = T::from_f64(0.0);
    let body = |c: usize, o: &mut [T], s: &[T]| {
        let base = (c * CHUNK) as u64;
        for (j, (o, &v)) in o.iter_mut().zip(s).enumerate() {
            *o = if rng::uniform(key, base + j as u64) >= p {
                v * scale
            } else {
                zero
            };
        }
    };
    if x.len() >= cpu::PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(CHUNK)
                .zip(x.par_chunks(CHUNK))
                .enumerate()
                .for_each(|(c, (o, s))| body(c, o, s))
        });
    } else {
        for (c, (o, s)) in out.chunks_mut(CHUNK).zip(x.chunks(CHUNK)).enumerate() {
            body(c, o, s);
        }
    }
    out
}

/// The CUDA form of [`masked`]: the same mask (the kernel ports `rng::uniform`).
fn masked_cuda(x: &Tensor, key: Option<RngState>, p: f64) -> Result<Tensor> {
    match key {
        Some(key) => crate::cuda::launch::dropout("dropout", x, key, p),
        None => crate::cuda::launch::full("dropout", x.device(), x.shape(), x.dtype(), 0.0),
    }
}

struct DropoutOp {
    p: f64,
    /// The first counter of this call's draws; None when p == 1 (no draws needed).
    key: Option<RngState>,
}

impl Op for DropoutOp {
    fn name(&self) -> &'static str {
        "dropout"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        Ok(crate::dispatch!(x.dtype(), T => {
            from_vec(masked(&c_order::<T>(x.data()), self.key, self.p), x.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        masked_cuda(inputs[0], self.key, self.p)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        // Dropout is linear: its backward is the same mask and scale applied to the
        // gradient, i.e. this op again (so it differentiates again the same way).
        let again = DropoutOp {
            p: self.p,
            key: self.key,
        };
        Ok(vec![Some(apply(again, &[ctx.grad], &[])?)])
    }
}

/// Dropout: in training, zero each element with probability `p` and scale the rest by
/// `1 / (1 - p)`; otherwise (or with `p == 0`) return `x` unchanged. `p` must lie in [0, 1].
pub fn dropout(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value(
            "dropout",
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ));
    }
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    let key = (p < 1.0).then(|| rng::reserve(x.numel() as u64));
    apply(DropoutOp { p, key }, &[x], &[])
}

impl Tensor {
    /// Dropout (see [`dropout`]).
    pub fn dropout(&self, p: f64, training: bool) -> Result<Tensor> {
        dropout(self, p, training)
    }
}
