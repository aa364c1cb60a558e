//! `scaled_dot_product_attention`, PyTorch's math path written with the engine's ops:
//! `softmax(q kᵀ · scale + mask) v`, with optional dropout on the weights.
//!
//! Memory: between forward and backward the graph keeps `q`, `k`, `v` and one attention
//! matrix per (batch, head), the softmax output, which both the softmax's and the second
//! product's backward read. The scores before the softmax are not kept (the scaling saves
//! nothing, the mask selection saves only the mask, broadcast from `(L, S)`), dropout keeps
//! only its random key, and with dropout the dropped weights are the only extra matrix — the
//! product's input. Gradients and second-order gradients come from the ops' own rules.

use super::{dropout, matmul, scale, softmax, transpose, where_};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

const OP: &str = "scaled_dot_product_attention";

fn shape_error(q: &Tensor, k: &Tensor, v: &Tensor, what: &str) -> Error {
    Error::shape(
        OP,
        format!(
            "{what} (query {}, key {}, value {})",
            fmt_shape(q.shape()),
            fmt_shape(k.shape()),
            fmt_shape(v.shape())
        ),
    )
}

/// A bool `(l, s)` mask, true on and below the diagonal (PyTorch's top-left causal mask).
pub(crate) fn causal_mask(l: usize, s: usize, device: crate::Device) -> Result<Tensor> {
    let mut keep = Vec::with_capacity(l * s);
    for i in 0..l {
        for j in 0..s {
            keep.push(u8::from(j <= i));
        }
    }
    let mask = Tensor::from_vec(keep, &[l, s])?;
    if device == crate::Device::Cpu {
        Ok(mask)
    } else {
        super::to_device(&mask, device)
    }
}

/// PyTorch's `scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal,
/// scale)`: `q (..., L, E)`, `k (..., S, E)`, `v (..., S, Ev)` with broadcastable leading
/// axes; `attn_mask` bool (true takes part) or float (added to the scores), broadcastable to
/// `(..., L, S)`; `is_causal` masks out keys after each query (and excludes `attn_mask`);
/// `scale` defaults to `1/√E`. A row whose keys are all masked out (all false, or all `-inf`
/// after adding a float mask) gives a zero output and passes no gradient, as PyTorch's
/// `_safe_softmax` does (without a mask only infinite scores could do that; those rows stay
/// NaN, sparing the unmasked CUDA path the extra pass).
pub fn scaled_dot_product_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale_factor: Option<f64>,
) -> Result<Tensor> {
    if q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2 {
        return Err(shape_error(
            q,
            k,
            v,
            "query, key and value need at least 2 dimensions",
        ));
    }
    let e = q.shape()[q.ndim() - 1];
    let (s, ek) = (k.shape()[k.ndim() - 2], k.shape()[k.ndim() - 1]);
    if e != ek {
        return Err(shape_error(
            q,
            k,
            v,
            "query and key must have the same last dimension",
        ));
    }
    if v.shape()[v.ndim() - 2] != s {
        return Err(shape_error(
            q,
            k,
            v,
            "key and value must have the same sequence length",
        ));
    }
    if is_causal && attn_mask.is_some() {
        return Err(Error::value(
            OP,
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when \
             is_causal=True",
        ));
    }
    if !(0.0..=1.0).contains(&dropout_p) {
        return Err(Error::value(
            OP,
            format!("dropout_p must lie in [0, 1], got {dropout_p}"),
        ));
    }
    let factor = scale_factor.unwrap_or(1.0 / (e as f64).sqrt());
    if is_causal {
        // Products, scaling, mask and softmax in one op where it can (see `causal_softmax`).
        let weights = super::causal_softmax::causal_weights(q, k, factor)?;
        return matmul(&dropout(&weights, dropout_p, dropout_p > 0.0)?, v);
    }
    // Named apart from the other products: `dots_saveable` recomputes the `T²` scores
    // (Korthikanti et al.'s selective recompute) and keeps the attention output.
    let products = super::matmul::matmul_named(q, &transpose(k, -2, -1)?, "attention_scores")?;
    let scores = scale(&products, factor)?;
    let neg_inf = || super::full(&[], f64::NEG_INFINITY, scores.dtype(), scores.device());
    let scores = if let Some(mask) = attn_mask {
        let fits = crate::layout::broadcast_shapes(OP, mask.shape(), scores.shape())
            .is_ok_and(|b| b.as_slice() == scores.shape());
        if !fits {
            return Err(Error::shape(
                OP,
                format!(
                    "attn_mask of shape {} does not broadcast to the attention weights' shape \
                     {}",
                    fmt_shape(mask.shape()),
                    fmt_shape(scores.shape())
                ),
            ));
        }
        if mask.dtype() == crate::DType::Bool {
            where_(mask, &scores, &neg_inf()?)?
        } else if mask.dtype().is_float() {
            super::add(&scores, mask)?
        } else {
            return Err(Error::dtype(
                OP,
                format!(
                    "attn_mask must be a bool or float tensor, got {} of shape {}",
                    mask.dtype(),
                    fmt_shape(mask.shape())
                ),
            ));
        }
    } else {
        scores
    };
    let weights = if attn_mask.is_some() {
        super::softmax::softmax_safe(&scores, -1)?
    } else {
        softmax(&scores, -1)?
    };
    let weights = dropout(&weights, dropout_p, dropout_p > 0.0)?;
    matmul(&weights, v)
}
