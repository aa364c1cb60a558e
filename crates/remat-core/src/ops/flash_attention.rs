//! `scaled_dot_product_attention` as one op that keeps `O(T)` for backward: `q`, `k`, `v`,
//! the output and one log-sum-exp per query row (FlashAttention, Dao et al. 2022;
//! FlashAttention-2, 2023), never the `L × S` weights.
//!
//! The op's output packs the output with its log-sum-exps: for batch axes `(..., H)` (the
//! last one, the heads, interleaved) it is `(..., L, H·Ev + H)`, each query's row holding
//! its `H` output rows side by side and then their `H` log-sum-exps. The caller sees the
//! output `(..., H, L, Ev)` as a view of it, laid out as PyTorch lays out its attention
//! output, so that the usual `y.transpose(1, 2).reshape(b, t, d)` is a view, not a copy
//! kept for the projection's backward. The op saves the packed tensor as its output,
//! so checkpoints, selective policies (`dots_saveable` keeps it: the op is one of
//! [`DOT_OPS`](crate::checkpoint::DOT_OPS)), the memory cap and the planner see exactly that
//! saved set. On the CPU forward and backward are tiled kernels (`cpu::flash`). The backward
//! that builds a graph (`create_graph`, for second order) and the CUDA path compose the
//! engine's differentiable ops instead (they hold the weights of one call while it runs, not
//! between forward and backward), with the same dropout mask: it is drawn from the op's
//! generator key at each weight's flat index, never stored.

use super::{from_vec, matmul, mul, narrow, scale as scale_op, sum, sum_to, transpose, where_};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu::flash::{self, Mask, Matrices, Problem};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::{is_grad_enabled, no_grad};
use crate::layout::{broadcast_shapes, fmt_shape, Dims};
use crate::rng::{self, RngState};
use crate::tensor::Tensor;

const OP: &str = "scaled_dot_product_attention";

/// The options of one attention call (PyTorch's keywords).
#[derive(Clone, Debug, Default)]
pub struct SdpaOptions {
    /// Mask out keys after each query (top-left causal).
    pub is_causal: bool,
    /// Probability of dropping each weight.
    pub dropout_p: f64,
    /// The factor of the scores (default `1/√E`).
    pub scale: Option<f64>,
    /// `k` and `v` may have fewer heads (axis -3) than `q`, each serving `Hq / Hkv` of them.
    pub enable_gqa: bool,
}

/// The attention op: inputs `q`, `k`, `v` (and the mask), output `(batch..., L, Ev + 1)`.
struct FlashAttentionOp {
    scale: f64,
    causal: bool,
    dropout: Option<(RngState, f64)>,
    /// Query heads per key/value head (1 without grouped-query attention).
    group: usize,
    /// The batch axes of the output (query heads included).
    batch: Dims,
}

/// The per-batch matrices of an operand broadcast to `batch` (with grouped-query attention,
/// query head `h` reads head `h / group` of the operand).
fn matrices(t: &Tensor, batch: &[usize], group: usize) -> Result<Matrices> {
    let l = t.layout();
    let nd = l.ndim();
    let (rs, cs) = (l.strides[nd - 2] as isize, l.strides[nd - 1] as isize);
    let offsets = if group > 1 {
        // The operand's own head axis: broadcast the leading axes, then map query heads.
        let heads = batch[batch.len() - 1];
        let mut kv_batch: Dims = batch.into();
        let last = kv_batch.len() - 1;
        kv_batch[last] = heads / group;
        let kv = super::matmul::batch_offsets(l, &kv_batch)?;
        let hkv = heads / group;
        (0..batch.iter().product::<usize>())
            .map(|b| kv[(b / heads) * hkv + (b % heads) / group])
            .collect()
    } else {
        super::matmul::batch_offsets(l, batch)?
    };
    let base = match t.dtype() {
        DType::F32 => crate::cpu::slice::<f32>(t.data()).as_ptr() as usize,
        DType::F64 => crate::cpu::slice::<f64>(t.data()).as_ptr() as usize,
        DType::Bool => crate::cpu::slice::<u8>(t.data()).as_ptr() as usize,
        other => {
            return Err(Error::dtype(OP, format!("unexpected {other} operand")));
        }
    };
    Ok(Matrices {
        base,
        offsets,
        rs,
        cs,
    })
}

impl FlashAttentionOp {
    fn problem(&self, inputs: &[&Tensor]) -> Result<Problem> {
        let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
        let nq = q.ndim();
        let mask = match inputs.get(3) {
            None if self.causal => Mask::Causal,
            None => Mask::None,
            Some(m) => {
                let mut shape = self.batch.clone();
                shape.extend([q.shape()[nq - 2], k.shape()[k.ndim() - 2]]);
                let view = m.layout().broadcast_to(OP, &shape)?;
                let t = Tensor::from_data(crate::tensor_data::TensorData {
                    storage: m.storage().clone(),
                    layout: view,
                });
                let mm = matrices(&t, &self.batch, 1)?;
                if m.dtype() == DType::Bool {
                    Mask::Bool(mm)
                } else {
                    Mask::Add(mm)
                }
            }
        };
        Ok(Problem {
            n: self.batch.iter().product(),
            l: q.shape()[nq - 2],
            s: k.shape()[k.ndim() - 2],
            e: q.shape()[nq - 1],
            ev: v.shape()[v.ndim() - 1],
            scale: self.scale,
            mask,
            dropout: self.dropout,
            heads: self.heads(),
        })
    }

    /// The batches interleaved in a packed row: the last batch axis (1 without one).
    fn heads(&self) -> usize {
        self.batch.last().copied().unwrap_or(1)
    }

    /// The heads interleaved in a packed row, `None` without batch axes.
    fn packed_heads(&self) -> Option<usize> {
        self.batch.last().copied()
    }

    /// The packed output's shape: `(..., L, H·(Ev + 1))` for batch axes `(..., H)`.
    fn out_shape(&self, l: usize, ev: usize) -> Dims {
        let mut shape: Dims = self.batch[..self.batch.len().saturating_sub(1)].into();
        shape.extend([l, self.heads() * (ev + 1)]);
        shape
    }

    /// The packed output from the output `(..., H, L, Ev)` and the log-sum-exps
    /// `(..., H, L, 1)`.
    fn pack(&self, out: &Tensor, lse: &Tensor) -> Result<Tensor> {
        if self.batch.is_empty() {
            return super::cat(&[out.clone(), lse.clone()], -1);
        }
        let side_by_side = |t: &Tensor| -> Result<Tensor> {
            let t = transpose(t, -3, -2)?;
            let mut shape = t.shape()[..t.ndim() - 2].to_vec();
            shape.push(t.shape()[t.ndim() - 2] * t.shape()[t.ndim() - 1]);
            super::reshape(&t, &shape)
        };
        super::cat(&[side_by_side(out)?, side_by_side(lse)?], -1)
    }

    /// The weights `softmax(q kᵀ · scale + mask)` with differentiable ops, rows whose keys are
    /// all masked zero (PyTorch's `_safe_softmax`), before dropout.
    fn weights(&self, q: &Tensor, k: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let k = self.expand_heads(k)?;
        let scores = scale_op(
            &super::matmul::matmul_named(q, &transpose(&k, -2, -1)?, "attention_scores")?,
            self.scale,
        )?;
        let (l, s) = (
            scores.shape()[scores.ndim() - 2],
            scores.shape()[scores.ndim() - 1],
        );
        let neg_inf = || super::full(&[], f64::NEG_INFINITY, scores.dtype(), scores.device());
        let scores = match mask {
            _ if self.causal => where_(
                &super::attention::causal_mask(l, s, q.device())?,
                &scores,
                &neg_inf()?,
            )?,
            Some(m) if m.dtype() == DType::Bool => where_(m, &scores, &neg_inf()?)?,
            Some(m) => super::add(&scores, m)?,
            None => scores,
        };
        super::softmax::softmax_safe(&scores, -1)
    }

    /// `k` or `v` with its heads repeated for grouped-query attention (`repeat_interleave`
    /// on axis -3); unchanged otherwise.
    fn expand_heads(&self, t: &Tensor) -> Result<Tensor> {
        if self.group == 1 {
            return Ok(t.clone());
        }
        super::repeat_interleave(t, self.group, Some(-3))
    }

    /// The dropout's keep mask scaled by `1 / (1 - p)`, of the weights' shape (`None`
    /// without dropout): the same draws as the tiled kernels'.
    fn dropout_scale(
        &self,
        shape: &[usize],
        dtype: DType,
        device: crate::Device,
    ) -> Result<Option<Tensor>> {
        let Some((key, p)) = self.dropout else {
            return Ok(None);
        };
        let n: usize = shape.iter().product();
        let keep = if p < 1.0 { 1.0 / (1.0 - p) } else { 0.0 };
        let values: Vec<f64> = (0..n as u64)
            .map(|i| {
                if p < 1.0 && rng::uniform(key, i) >= p {
                    keep
                } else {
                    0.0
                }
            })
            .collect();
        let t = super::to_dtype(&from_vec(values, shape), dtype)?;
        Ok(Some(if device == crate::Device::Cpu {
            t
        } else {
            super::to_device(&t, device)?
        }))
    }

    /// The packed output from differentiable ops (the CUDA forward): `[weights · v, lse]`.
    fn composed_forward(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let _g = no_grad();
        let weights = self.weights(q, k, mask)?;
        let dropped =
            match self.dropout_scale(weights.shape(), weights.dtype(), weights.device())? {
                Some(d) => mul(&weights, &d)?,
                None => weights.clone(),
            };
        let out = matmul(&dropped, &self.expand_heads(v)?)?;
        // The log-sum-exp from the weights: where a row's weights are all zero, -inf.
        let kv = self.expand_heads(k)?;
        let scores = scale_op(&matmul(q, &transpose(&kv, -2, -1)?)?, self.scale)?;
        let (l, s) = (
            scores.shape()[scores.ndim() - 2],
            scores.shape()[scores.ndim() - 1],
        );
        let neg_inf = super::full(&[], f64::NEG_INFINITY, scores.dtype(), scores.device())?;
        let scores = match mask {
            _ if self.causal => where_(
                &super::attention::causal_mask(l, s, q.device())?,
                &scores,
                &neg_inf,
            )?,
            Some(m) if m.dtype() == DType::Bool => where_(m, &scores, &neg_inf)?,
            Some(m) => super::add(&scores, m)?,
            None => scores,
        };
        let lse = super::logsumexp(&scores, Some(&[-1]), true)?;
        self.pack(&out, &lse)
    }

    /// The gradients from differentiable ops (second order, CUDA, a mask that needs one).
    fn composed_backward(
        &self,
        ctx: &BackwardCtx<'_>,
        dout: &Tensor,
    ) -> Result<Vec<Option<Tensor>>> {
        let (q, k, v) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
        let mask = (ctx.saved.len() > 4).then(|| &ctx.saved[3]);
        let p = self.weights(q, k, mask)?;
        let drop = self.dropout_scale(p.shape(), p.dtype(), p.device())?;
        let pd = match &drop {
            Some(d) => mul(&p, d)?,
            None => p.clone(),
        };
        let ve = self.expand_heads(v)?;
        let ke = self.expand_heads(k)?;
        let dv = matmul(&transpose(&pd, -2, -1)?, dout)?;
        let dpd = matmul(dout, &transpose(&ve, -2, -1)?)?;
        let dp = match &drop {
            Some(d) => mul(&dpd, d)?,
            None => dpd,
        };
        let row = sum(&mul(&dp, &p)?, Some(&[-1]), true)?;
        let ds = mul(&p, &super::sub(&dp, &row)?)?;
        let dq = scale_op(&matmul(&ds, &ke)?, self.scale)?;
        let dk = scale_op(&matmul(&transpose(&ds, -2, -1)?, q)?, self.scale)?;
        let dk = self.fold_heads(&dk)?;
        let dv = self.fold_heads(&dv)?;
        let dmask = (ctx.inputs.len() > 3 && ctx.needs_grad(3)).then_some(&ds);
        input_grads(ctx, [&dq, &dk, &dv], dmask)
    }

    /// A gradient over the query heads summed back onto the key/value heads they share.
    fn fold_heads(&self, g: &Tensor) -> Result<Tensor> {
        if self.group == 1 {
            return Ok(g.clone());
        }
        let nd = g.ndim();
        let mut shape: Vec<usize> = g.shape()[..nd - 3].to_vec();
        let heads = g.shape()[nd - 3];
        shape.extend([
            heads / self.group,
            self.group,
            g.shape()[nd - 2],
            g.shape()[nd - 1],
        ]);
        sum(&super::reshape(g, &shape)?, Some(&[-3]), false)
    }
}

impl Op for FlashAttentionOp {
    fn name(&self) -> &'static str {
        OP
    }
    fn any_dtype(&self) -> bool {
        // A bool mask is an input; `q`, `k` and `v` are checked to be floats of one dtype
        // before the op is made.
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let pb = self.problem(inputs)?;
        let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
        let (qm, km, vm) = (
            matrices(q, &self.batch, 1)?,
            matrices(k, &self.batch, self.group)?,
            matrices(v, &self.batch, self.group)?,
        );
        let shape = self.out_shape(pb.l, pb.ev);
        Ok(crate::dispatch!(q.dtype(), T => {
            let mut out = crate::cpu::alloc::<T>(pb.n * pb.l * (pb.ev + 1));
            flash::forward::<T>(&pb, &qm, &km, &vm, &mut out);
            from_vec(out, &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.composed_forward(inputs[0], inputs[1], inputs[2], inputs.get(3).copied())
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let packed = ctx
            .saved
            .last()
            .ok_or_else(|| Error::graph(OP, "missing output"))?;
        let ev = ctx.saved[2].shape()[ctx.saved[2].ndim() - 1];
        let grad = super::to_dtype(ctx.grad, packed.dtype())?;
        let mask_grad = ctx.inputs.len() > 3 && ctx.needs_grad(3);
        if is_grad_enabled() || packed.device() != crate::Device::Cpu || mask_grad {
            return self.composed_backward(ctx, &unpack(&grad, self.packed_heads(), ev)?);
        }
        let (q, k, v) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
        let mut refs: Vec<&Tensor> = vec![q, k, v];
        if ctx.saved.len() > 4 {
            refs.push(&ctx.saved[3]);
        }
        let pb = self.problem(&refs)?;
        let (qm, km, vm) = (
            matrices(q, &self.batch, 1)?,
            matrices(k, &self.batch, self.group)?,
            matrices(v, &self.batch, self.group)?,
        );
        // The packed gradient, read in the packed output's layout.
        let dout = super::contiguous(&grad)?;
        let packed_c = super::contiguous(packed)?;
        let full = |last: usize, width: usize| -> Dims {
            let mut s = self.batch.clone();
            s.extend([last, width]);
            s
        };
        let (gq, gk, gv) = crate::dispatch!(q.dtype(), T => {
            let mut dq = crate::cpu::alloc::<T>(pb.n * pb.l * pb.e);
            let mut dk = crate::cpu::alloc::<T>(pb.n * pb.s * pb.e);
            let mut dv = crate::cpu::alloc::<T>(pb.n * pb.s * pb.ev);
            flash::backward::<T>(
                &pb,
                &qm,
                &km,
                &vm,
                crate::cpu::slice::<T>(packed_c.data()),
                crate::cpu::slice::<T>(dout.data()),
                flash::Grads { dq: &mut dq, dk: &mut dk, dv: &mut dv },
            );
            (
                from_vec(dq, &full(pb.l, pb.e)),
                from_vec(dk, &full(pb.s, pb.e)),
                from_vec(dv, &full(pb.s, pb.ev)),
            )
        });
        let gk = self.fold_heads(&gk)?;
        let gv = self.fold_heads(&gv)?;
        input_grads(ctx, [&gq, &gk, &gv], None)
    }
}

/// The op's gradients for its inputs from those of `q`, `k`, `v` (and the mask's, when it
/// has one that needs it), each summed to its input's shape (broadcast batch axes).
fn input_grads(
    ctx: &BackwardCtx<'_>,
    qkv: [&Tensor; 3],
    mask: Option<&Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    let mut grads = Vec::with_capacity(ctx.inputs.len());
    for (i, g) in qkv.into_iter().enumerate() {
        grads.push(
            ctx.needs_grad(i)
                .then(|| sum_to(g, &ctx.inputs[i].shape))
                .transpose()?,
        );
    }
    if ctx.inputs.len() > 3 {
        grads.push(mask.map(|g| sum_to(g, &ctx.inputs[3].shape)).transpose()?);
    }
    Ok(grads)
}

/// The batch axes of the output (checked: they broadcast; with grouped-query attention the
/// key/value heads divide the query heads), and the query heads per key/value head.
fn batch_and_group(q: &Tensor, k: &Tensor, v: &Tensor, gqa: bool) -> Result<(Dims, usize)> {
    let lead = |t: &Tensor, n: usize| -> Vec<usize> { t.shape()[..t.ndim() - n].to_vec() };
    let mismatch = |what: &str| super::attention::shape_error(q, k, v, what);
    if gqa && (q.ndim() >= 3 && k.ndim() >= 3 && v.ndim() >= 3) {
        let (hq, hk, hv) = (
            q.shape()[q.ndim() - 3],
            k.shape()[k.ndim() - 3],
            v.shape()[v.ndim() - 3],
        );
        if hk != hv || hk == 0 || hq % hk != 0 {
            return Err(mismatch(
                "with enable_gqa, key and value need the same number of heads (axis -3), \
                 dividing the query's",
            ));
        }
        let outer = broadcast_shapes(
            OP,
            &lead(q, 3),
            &broadcast_shapes(OP, &lead(k, 3), &lead(v, 3))?,
        )
        .map_err(|_| mismatch("the batch axes do not broadcast"))?;
        let mut batch: Dims = outer;
        batch.push(hq);
        return Ok((batch, hq / hk));
    }
    let batch = broadcast_shapes(
        OP,
        &lead(q, 2),
        &broadcast_shapes(OP, &lead(k, 2), &lead(v, 2))?,
    )
    .map_err(|_| mismatch("the batch axes do not broadcast"))?;
    Ok((batch, 1))
}

/// Attention through the tiled op: `softmax(q kᵀ · scale + mask) v` for float `q`, `k`, `v`
/// of one dtype (shapes and the mask checked by the caller), keeping `O(T)` for backward.
pub(crate) fn flash_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    opts: &SdpaOptions,
    scale: f64,
) -> Result<Tensor> {
    let (batch, group) = batch_and_group(q, k, v, opts.enable_gqa)?;
    let (l, s) = (q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
    let ev = v.shape()[v.ndim() - 1];
    let n: usize = batch.iter().product();
    let dropout =
        (opts.dropout_p > 0.0).then(|| (rng::reserve((n * l * s) as u64), opts.dropout_p));
    let mask = match mask {
        Some(m) if m.dtype().is_float() && m.dtype() != q.dtype() => {
            Some(super::to_dtype(m, q.dtype())?)
        }
        Some(m) => Some(m.clone()),
        None => None,
    };
    if let Some(m) = &mask {
        let mut want: Dims = batch.clone();
        want.extend([l, s]);
        let fits =
            broadcast_shapes(OP, m.shape(), &want).is_ok_and(|b| b.as_slice() == want.as_slice());
        if !fits {
            return Err(Error::shape(
                OP,
                format!(
                    "attn_mask of shape {} does not broadcast to the attention weights' shape {}",
                    fmt_shape(m.shape()),
                    fmt_shape(&want)
                ),
            ));
        }
    }
    let op = FlashAttentionOp {
        scale,
        causal: opts.is_causal,
        dropout,
        group,
        batch,
    };
    let mut inputs: Vec<&Tensor> = vec![q, k, v];
    let mut saves = vec![Save::Input(0), Save::Input(1), Save::Input(2)];
    if let Some(m) = &mask {
        inputs.push(m);
        saves.push(Save::Input(3));
    }
    saves.push(Save::Output);
    let heads = op.packed_heads();
    let packed = apply(op, &inputs, &saves)?;
    unpack(&packed, heads, ev)
}

/// The output `(..., H, L, Ev)` as a view of a packed `(..., L, H·(Ev + 1))` (or the packed
/// op's gradient): the first `H·Ev` columns of each row, split per head.
/// `heads` is `None` without batch axes (the packed rows are `[out, lse]`).
fn unpack(packed: &Tensor, heads: Option<usize>, ev: usize) -> Result<Tensor> {
    let h = heads.unwrap_or(1);
    let values = narrow(packed, -1, 0, (h * ev) as isize)?;
    if heads.is_none() {
        return Ok(values);
    }
    let mut shape = values.shape()[..values.ndim() - 1].to_vec();
    shape.extend([h, ev]);
    transpose(&super::view_as_shape(&values, &shape)?, -3, -2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(shape: &[usize], seed: u64) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|i| (((i as u64 + 1) * (seed * 2 + 1) * 2654435761) % 1000) as f64 / 500.0 - 1.0)
            .collect();
        from_vec(v, shape)
    }

    #[test]
    fn the_composed_forward_packs_as_the_tiled_kernel_does() {
        // The CUDA path builds the packed output from differentiable ops; on the CPU it must
        // equal the tiled kernel's packing, heads side by side and then their log-sum-exps,
        // with and without batch axes, causal or not.
        for (shape, causal) in [
            (vec![2, 3, 5, 4], true),
            (vec![2, 3, 5, 4], false),
            (vec![3, 5, 4], true),
            (vec![5, 4], false),
        ] {
            let q = values(&shape, 1);
            let k = values(&shape, 2);
            let v = values(&shape, 3);
            let (batch, group) = batch_and_group(&q, &k, &v, false).unwrap();
            let e = shape[shape.len() - 1];
            let op = FlashAttentionOp {
                scale: 1.0 / (e as f64).sqrt(),
                causal,
                dropout: None,
                group,
                batch,
            };
            let tiled = op.cpu(&[&q, &k, &v]).unwrap();
            let composed = op.composed_forward(&q, &k, &v, None).unwrap();
            assert_eq!(tiled.shape(), composed.shape(), "{shape:?}");
            for (a, b) in tiled.to_vec::<f64>().iter().zip(composed.to_vec::<f64>()) {
                assert!(
                    (a - b).abs() < 1e-12,
                    "{shape:?} causal {causal}: {a} vs {b}"
                );
            }
        }
    }
}
