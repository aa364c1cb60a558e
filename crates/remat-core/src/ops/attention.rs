//! `scaled_dot_product_attention`, PyTorch's signature: the tiled op of `flash_attention`
//! (keeping `q`, `k`, `v`, the output and a log-sum-exp per query row for backward) for float
//! operands of one dtype, and PyTorch's math path written with the engine's ops
//! (`softmax(q kᵀ · scale + mask) v`, [`scaled_dot_product_attention_math`]) otherwise.
//!
//! The math path's memory: between forward and backward its graph keeps `q`, `k`, `v` and one
//! attention matrix per (batch, head), the softmax output, which both the softmax's and the
//! second product's backward read. It is the reference the tiled op is tested against, and
//! the path of mixed dtypes.

use super::flash_attention::{flash_attention, SdpaOptions};
use super::{dropout, matmul, scale, softmax, transpose, where_};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

const OP: &str = "scaled_dot_product_attention";

/// A `ShapeError` of the attention op naming the three operands' shapes.
pub(super) fn shape_error(q: &Tensor, k: &Tensor, v: &Tensor, what: &str) -> Error {
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
    let opts = SdpaOptions {
        is_causal,
        dropout_p,
        scale: scale_factor,
        enable_gqa: false,
    };
    scaled_dot_product_attention_with(q, k, v, attn_mask, &opts)
}

/// [`scaled_dot_product_attention`] with every option, grouped-query attention included
/// (`enable_gqa`: `k` and `v` have `Hkv` heads on axis -3, each serving `Hq / Hkv` query
/// heads, as PyTorch's). Float operands of one dtype run the tiled op; the rest PyTorch's math
/// path.
pub fn scaled_dot_product_attention_with(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    opts: &SdpaOptions,
) -> Result<Tensor> {
    crate::autocast::composite(
        "scaled_dot_product_attention",
        [Some(q), Some(k), Some(v), attn_mask],
        |[q, k, v, m]| match (q, k, v) {
            (Some(q), Some(k), Some(v)) => sdpa_now(q, k, v, m, opts),
            _ => unreachable!("the required operands stay present"),
        },
    )
}

fn sdpa_now(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    opts: &SdpaOptions,
) -> Result<Tensor> {
    check(q, k, v, attn_mask, opts)?;
    let e = q.shape()[q.ndim() - 1];
    let factor = opts.scale.unwrap_or(1.0 / (e as f64).sqrt());
    let tiled = q.dtype().is_float()
        && q.dtype() == k.dtype()
        && q.dtype() == v.dtype()
        && q.device() == k.device()
        && q.device() == v.device()
        && attn_mask.is_none_or(|m| m.device() == q.device());
    if tiled {
        return flash_attention(q, k, v, attn_mask, opts, factor);
    }
    if opts.enable_gqa {
        let group = q.shape()[q.ndim() - 3] / k.shape()[k.ndim() - 3];
        let k = super::repeat_interleave(k, group, Some(-3))?;
        let v = super::repeat_interleave(v, group, Some(-3))?;
        let plain = SdpaOptions {
            enable_gqa: false,
            ..opts.clone()
        };
        return scaled_dot_product_attention_math(&q.clone(), &k, &v, attn_mask, &plain);
    }
    scaled_dot_product_attention_math(q, k, v, attn_mask, opts)
}

/// The shapes, the mask's kind and the options of one attention call, checked.
fn check(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    opts: &SdpaOptions,
) -> Result<()> {
    let (dropout_p, is_causal) = (opts.dropout_p, opts.is_causal);
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
    if let Some(mask) = attn_mask {
        if !mask.dtype().is_float() && mask.dtype() != crate::DType::Bool {
            return Err(Error::dtype(
                OP,
                format!(
                    "attn_mask must be a bool or float tensor, got {} of shape {}",
                    mask.dtype(),
                    fmt_shape(mask.shape())
                ),
            ));
        }
    }
    if opts.enable_gqa {
        let heads = |t: &Tensor| (t.ndim() >= 3).then(|| t.shape()[t.ndim() - 3]);
        match (heads(q), heads(k), heads(v)) {
            (Some(hq), Some(hk), Some(hv)) if hk == hv && hk > 0 && hq % hk == 0 => {}
            _ => {
                return Err(shape_error(
                    q,
                    k,
                    v,
                    "with enable_gqa, query, key and value need a head axis (-3), key and \
                     value the same number of heads, dividing the query's",
                ))
            }
        }
    }
    Ok(())
}

/// PyTorch's math path with the engine's ops (no grouped-query attention; shapes checked by
/// the caller): the weights are a tensor of the graph, kept for backward.
pub fn scaled_dot_product_attention_math(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    opts: &SdpaOptions,
) -> Result<Tensor> {
    let (dropout_p, is_causal) = (opts.dropout_p, opts.is_causal);
    let e = q.shape()[q.ndim() - 1];
    let factor = opts.scale.unwrap_or(1.0 / (e as f64).sqrt());
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
