//! Recurrent layers as engine ops: one layer (one direction) of an LSTM, a GRU or an Elman
//! RNN over a whole sequence, `lstm_layer(x_proj, h0, c0, w_hh, b_hh, reverse)` and its
//! siblings. `x_proj = x W_ihᵀ + b_ih` is one GEMM done by the caller (`linear`); the op runs
//! the recurrence: per step one GEMM `h W_hhᵀ + b_hh` and one fused pass over the gates
//! (`cpu::recurrent`), and a hand-written backward through time.
//!
//! The op's single output packs what the caller sees with what the backward needs: `S` slabs
//! of `(T, B, H)` (see `cpu::recurrent`: for an LSTM the hidden states, the cell states and
//! the four activated gates; for a GRU the hidden states, `r`, `z`, `n` and `h W_hnᵀ + b_hn`;
//! for an RNN the hidden states only). The layer's output is slab 0 (a contiguous view) and
//! the final states are views of the last step processed. The op saves `h0`, `c0`, `w_hh` and
//! that packed output, never `x_proj`, so a checkpoint, the memory cap and the planner see
//! exactly the bytes the backward needs.
//!
//! The backward takes the gradient of the whole packed tensor, gate slabs included: a
//! second-order backward differentiates the first one through the saved gates, and their
//! gradients then reach the op's backward. With `create_graph` (grad mode on during the
//! backward) and on CUDA the backward is composed from the engine's differentiable ops, step
//! by step, with the same formulas; the CUDA forward is composed the same way (no CUDA kernel
//! of its own).

use super::{from_vec, index, to_dtype, IndexItem};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
pub use crate::cpu::recurrent::Cell;
use crate::cpu::recurrent::{self as kernels, Grads, Inputs, Sizes};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::{is_grad_enabled, no_grad};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

impl Cell {
    /// The engine function's name (error messages, profiler).
    pub fn op_name(self) -> &'static str {
        match self {
            Cell::Lstm => "lstm_layer",
            Cell::Gru => "gru_layer",
            Cell::RnnTanh | Cell::RnnRelu => "rnn_layer",
        }
    }
}

/// One recurrent layer over a sequence. Inputs: `x_proj (T, B, G·H)`, `h0 (B, H)`, `c0 (B, H)`
/// (LSTM only), `w_hh (G·H, H)`, `b_hh (G·H)` (when `has_bias`). Output: the packed
/// `(S, T, B, H)`.
struct RecurrentOp {
    cell: Cell,
    reverse: bool,
    has_bias: bool,
}

impl RecurrentOp {
    fn lstm(&self) -> bool {
        self.cell == Cell::Lstm
    }

    /// The position of `w_hh` among the inputs.
    fn w_index(&self) -> usize {
        if self.lstm() {
            3
        } else {
            2
        }
    }

    fn sizes(&self, steps: usize, batch: usize, hidden: usize) -> Sizes {
        Sizes {
            steps,
            batch,
            hidden,
            reverse: self.reverse,
        }
    }

    /// The `h` to `(G·H)` gate pre-activations of one step from differentiable ops:
    /// `h W_hhᵀ + b_hh`.
    fn hidden_projection(&self, h: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
        super::linear(h, w, b)
    }

    /// The packed output from differentiable ops (the CUDA forward), step by step.
    fn composed_forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        use super::{add, mul, narrow, relu, sigmoid, sub, tanh};
        let _g = no_grad();
        let xp = inputs[0];
        let w = inputs[self.w_index()];
        let b = self.has_bias.then(|| inputs[self.w_index() + 1]);
        let (steps, hidden) = (xp.shape()[0], w.shape()[1]);
        let sz = self.sizes(steps, xp.shape()[1], hidden);
        let mut h = inputs[1].clone();
        let mut c = if self.lstm() {
            Some(inputs[2].clone())
        } else {
            None
        };
        let slabs = self.cell.slabs();
        let mut per_time: Vec<Vec<Tensor>> = vec![Vec::new(); steps];
        let part = |t: &Tensor, k: usize| narrow(t, -1, (k * hidden) as isize, hidden as isize);
        for s in 0..steps {
            let t = sz.time(s);
            let x = index(xp, &[IndexItem::Int(t as isize)])?;
            let hh = self.hidden_projection(&h, w, b)?;
            let blocks = match self.cell {
                Cell::Lstm => {
                    let pre = add(&x, &hh)?;
                    let i = sigmoid(&part(&pre, 0)?)?;
                    let f = sigmoid(&part(&pre, 1)?)?;
                    let g = tanh(&part(&pre, 2)?)?;
                    let o = sigmoid(&part(&pre, 3)?)?;
                    let cp = c
                        .as_ref()
                        .ok_or_else(|| Error::graph("lstm_layer", "no c0"))?;
                    let cn = add(&mul(&f, cp)?, &mul(&i, &g)?)?;
                    h = mul(&o, &tanh(&cn)?)?;
                    c = Some(cn.clone());
                    vec![h.clone(), cn, i, f, g, o]
                }
                Cell::Gru => {
                    let r = sigmoid(&add(&part(&x, 0)?, &part(&hh, 0)?)?)?;
                    let z = sigmoid(&add(&part(&x, 1)?, &part(&hh, 1)?)?)?;
                    let hn = part(&hh, 2)?;
                    let n = tanh(&add(&part(&x, 2)?, &mul(&r, &hn)?)?)?;
                    h = add(&n, &mul(&z, &sub(&h, &n)?)?)?;
                    vec![h.clone(), r, z, n, hn]
                }
                Cell::RnnTanh => {
                    h = tanh(&add(&x, &hh)?)?;
                    vec![h.clone()]
                }
                Cell::RnnRelu => {
                    h = relu(&add(&x, &hh)?)?;
                    vec![h.clone()]
                }
            };
            per_time[t] = blocks;
        }
        let mut slab_tensors = Vec::with_capacity(slabs);
        for k in 0..slabs {
            let ts: Vec<Tensor> = per_time.iter().map(|b| b[k].clone()).collect();
            slab_tensors.push(super::stack(&ts, 0)?);
        }
        super::stack(&slab_tensors, 0)
    }

    /// The gradients from differentiable ops (second order, CUDA): the formulas of
    /// `cpu::recurrent::backward`, step by step, on the saved tensors and the packed
    /// gradient `grad`.
    fn composed_backward(
        &self,
        ctx: &BackwardCtx<'_>,
        grad: &Tensor,
    ) -> Result<Vec<Option<Tensor>>> {
        use super::{add, add_scalar, matmul, mul, scale, sub, transpose};
        let lstm = self.lstm();
        let h0 = &ctx.saved[0];
        let c0 = lstm.then(|| &ctx.saved[1]);
        let w = &ctx.saved[if lstm { 2 } else { 1 }];
        let packed = &ctx.saved[if lstm { 3 } else { 2 }];
        let (steps, batch, hidden) = (packed.shape()[1], packed.shape()[2], packed.shape()[3]);
        let sz = self.sizes(steps, batch, hidden);
        let at = |p: &Tensor, k: usize, t: usize| {
            index(p, &[IndexItem::Int(k as isize), IndexItem::Int(t as isize)])
        };
        // 1 - v
        let one_minus = |v: &Tensor| add_scalar(&scale(v, -1.0)?, 1.0);
        let (dt, dev) = (packed.dtype(), packed.device());
        let mut dh = super::zeros(&[batch, hidden], dt, dev)?;
        let mut dc = super::zeros(&[batch, hidden], dt, dev)?;
        let mut dx_t: Vec<Option<Tensor>> = vec![None; steps];
        let mut dw: Option<Tensor> = None;
        let mut db: Option<Tensor> = None;
        for s in (0..steps).rev() {
            let t = sz.time(s);
            let prev = (s > 0).then(|| sz.time(s - 1));
            let g = |k: usize| at(grad, k, t);
            let p = |k: usize| at(packed, k, t);
            let hp = match prev {
                Some(tp) => at(packed, 0, tp)?,
                None => h0.clone(),
            };
            let d = add(&g(0)?, &dh)?;
            let (dx, dstep, direct) = match self.cell {
                Cell::Lstm => {
                    let cp = match (prev, c0) {
                        (Some(tp), _) => at(packed, 1, tp)?,
                        (None, Some(c0)) => c0.clone(),
                        (None, None) => return Err(Error::graph("lstm_layer", "no c0")),
                    };
                    let (c, i, f, gg, o) = (p(1)?, p(2)?, p(3)?, p(4)?, p(5)?);
                    let tc = super::tanh(&c)?;
                    let d_o = add(&mul(&d, &tc)?, &g(5)?)?;
                    let dcj = add(
                        &add(&dc, &g(1)?)?,
                        &mul(&mul(&d, &o)?, &one_minus(&mul(&tc, &tc)?)?)?,
                    )?;
                    let di = add(&mul(&dcj, &gg)?, &g(2)?)?;
                    let dg = add(&mul(&dcj, &i)?, &g(4)?)?;
                    let df = add(&mul(&dcj, &cp)?, &g(3)?)?;
                    dc = mul(&dcj, &f)?;
                    let dx = super::cat(
                        &[
                            mul(&mul(&di, &i)?, &one_minus(&i)?)?,
                            mul(&mul(&df, &f)?, &one_minus(&f)?)?,
                            mul(&dg, &one_minus(&mul(&gg, &gg)?)?)?,
                            mul(&mul(&d_o, &o)?, &one_minus(&o)?)?,
                        ],
                        -1,
                    )?;
                    (dx.clone(), dx, None)
                }
                Cell::Gru => {
                    let (r, z, n, hn) = (p(1)?, p(2)?, p(3)?, p(4)?);
                    let dz = add(&mul(&d, &sub(&hp, &n)?)?, &g(2)?)?;
                    let dn = add(&mul(&d, &one_minus(&z)?)?, &g(3)?)?;
                    let direct = mul(&d, &z)?;
                    let dpn = mul(&dn, &one_minus(&mul(&n, &n)?)?)?;
                    let dr = add(&mul(&dpn, &hn)?, &g(1)?)?;
                    let dpr = mul(&mul(&dr, &r)?, &one_minus(&r)?)?;
                    let dpz = mul(&mul(&dz, &z)?, &one_minus(&z)?)?;
                    let dx = super::cat(&[dpr.clone(), dpz.clone(), dpn.clone()], -1)?;
                    let dhn = add(&mul(&dpn, &r)?, &g(4)?)?;
                    let dhh = super::cat(&[dpr, dpz, dhn], -1)?;
                    (dx, dhh, Some(direct))
                }
                Cell::RnnTanh => {
                    let hcur = p(0)?;
                    let dx = mul(&d, &one_minus(&mul(&hcur, &hcur)?)?)?;
                    (dx.clone(), dx, None)
                }
                Cell::RnnRelu => {
                    let hcur = p(0)?;
                    let zero = super::zeros(&[], dt, dev)?;
                    let pos = super::gt(&hcur, &zero)?;
                    let dx = super::where_(&pos, &d, &zero)?;
                    (dx.clone(), dx, None)
                }
            };
            let back = matmul(&dstep, w)?;
            dh = match direct {
                Some(direct) => add(&direct, &back)?,
                None => back,
            };
            let dw_t = matmul(&transpose(&dstep, 0, 1)?, &hp)?;
            dw = Some(match dw {
                Some(acc) => add(&acc, &dw_t)?,
                None => dw_t,
            });
            if self.has_bias {
                let db_t = super::sum(&dstep, Some(&[0]), false)?;
                db = Some(match db {
                    Some(acc) => add(&acc, &db_t)?,
                    None => db_t,
                });
            }
            dx_t[t] = Some(dx);
        }
        let dx: Vec<Tensor> = dx_t.into_iter().flatten().collect();
        let mut grads = vec![
            ctx.needs_grad(0)
                .then(|| super::stack(&dx, 0))
                .transpose()?,
            ctx.needs_grad(1).then_some(dh),
        ];
        if lstm {
            grads.push(ctx.needs_grad(2).then_some(dc));
        }
        let wi = self.w_index();
        grads.push(if ctx.needs_grad(wi) { dw } else { None });
        if self.has_bias {
            grads.push(if ctx.needs_grad(wi + 1) { db } else { None });
        }
        Ok(grads)
    }
}

impl Op for RecurrentOp {
    fn name(&self) -> &'static str {
        self.cell.op_name()
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let xp = inputs[0];
        let w = inputs[self.w_index()];
        let (steps, batch, hidden) = (xp.shape()[0], xp.shape()[1], w.shape()[1]);
        let sz = self.sizes(steps, batch, hidden);
        let slabs = self.cell.slabs();
        let shape = [slabs, steps, batch, hidden];
        Ok(crate::dispatch!(xp.dtype(), T => {
            let xs = super::softmax::c_order::<T>(xp.data());
            let h0 = super::softmax::c_order::<T>(inputs[1].data());
            let c0 = self.lstm().then(|| super::softmax::c_order::<T>(inputs[2].data()));
            let ws = super::softmax::c_order::<T>(w.data());
            let bias = self
                .has_bias
                .then(|| super::softmax::c_order::<T>(inputs[self.w_index() + 1].data()));
            let mut packed = crate::cpu::alloc::<T>(slabs * steps * batch * hidden);
            let inp = Inputs {
                xp: &xs,
                h0: &h0,
                c0: c0.as_deref(),
                w: &ws,
                bias: bias.as_deref(),
            };
            kernels::forward(self.cell, sz, &inp, &mut packed);
            from_vec(packed, &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.composed_forward(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let lstm = self.lstm();
        let packed = &ctx.saved[if lstm { 3 } else { 2 }];
        let grad = to_dtype(ctx.grad, packed.dtype())?;
        if is_grad_enabled() || packed.device() != Device::Cpu {
            return self.composed_backward(ctx, &grad);
        }
        let h0 = &ctx.saved[0];
        let w = &ctx.saved[if lstm { 2 } else { 1 }];
        let (steps, batch, hidden) = (packed.shape()[1], packed.shape()[2], packed.shape()[3]);
        let sz = self.sizes(steps, batch, hidden);
        let gh = self.cell.gates() * hidden;
        let x_shape = [steps, batch, gh];
        let state = [batch, hidden];
        let (dx, dh0, dc0, dw, db) = crate::dispatch!(packed.dtype(), T => {
            let gs = super::softmax::c_order::<T>(grad.data());
            let ps = super::softmax::c_order::<T>(packed.data());
            let h0s = super::softmax::c_order::<T>(h0.data());
            let c0s = lstm.then(|| super::softmax::c_order::<T>(ctx.saved[1].data()));
            let ws = super::softmax::c_order::<T>(w.data());
            let mut dx = crate::cpu::alloc::<T>(steps * batch * gh);
            let mut dh0 = crate::cpu::alloc::<T>(batch * hidden);
            let mut dc0 = crate::cpu::alloc::<T>(if lstm { batch * hidden } else { 0 });
            let mut dw = crate::cpu::alloc::<T>(gh * hidden);
            let mut db = crate::cpu::alloc::<T>(if self.has_bias { gh } else { 0 });
            let inp = Inputs {
                xp: &[],
                h0: &h0s,
                c0: c0s.as_deref(),
                w: &ws,
                bias: None,
            };
            kernels::backward(
                self.cell,
                sz,
                &gs,
                &ps,
                &inp,
                Grads {
                    dx: &mut dx,
                    dh0: &mut dh0,
                    dc0: &mut dc0,
                    dw: &mut dw,
                    db: &mut db,
                },
            );
            (
                from_vec(dx, &x_shape),
                from_vec(dh0, &state),
                from_vec(dc0, &state[..if lstm { 2 } else { 1 }]),
                from_vec(dw, &[gh, hidden]),
                from_vec(db, &[gh]),
            )
        });
        let mut grads = vec![
            ctx.needs_grad(0).then_some(dx),
            ctx.needs_grad(1).then_some(dh0),
        ];
        if lstm {
            grads.push(ctx.needs_grad(2).then_some(dc0));
        }
        let wi = self.w_index();
        grads.push(ctx.needs_grad(wi).then_some(dw));
        if self.has_bias {
            grads.push(ctx.needs_grad(wi + 1).then_some(db));
        }
        Ok(grads)
    }
}

/// What one layer returns: the output `(T, B, H)`, the final hidden state `(B, H)` and, for an
/// LSTM, the final cell state `(B, H)`; all views of the op's packed result.
pub struct LayerOutput {
    /// The hidden state of every step, `(T, B, H)`.
    pub output: Tensor,
    /// The hidden state after the last step processed (step 0 when `reverse`).
    pub h_n: Tensor,
    /// The cell state after the last step processed (LSTM only).
    pub c_n: Option<Tensor>,
}

/// Check the operands of a layer, promote them to one float dtype and run the op.
fn layer(
    cell: Cell,
    x_proj: &Tensor,
    h0: &Tensor,
    c0: Option<&Tensor>,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    reverse: bool,
) -> Result<LayerOutput> {
    let op = cell.op_name();
    let mut all: Vec<&Tensor> = vec![x_proj, h0];
    all.extend(c0);
    all.push(w_hh);
    all.extend(b_hh);
    super::check_same_device(op, &all)?;
    if let Some(t) = all.iter().find(|t| !t.dtype().is_float()) {
        return Err(Error::dtype(
            op,
            format!(
                "expected float32 or float64 tensors, got a {} tensor of shape {}; convert it \
                 with .float()",
                t.dtype(),
                fmt_shape(t.shape())
            ),
        ));
    }
    let g = cell.gates();
    let bad = |what: String| Err(Error::shape(op, what));
    if w_hh.ndim() != 2 || w_hh.shape()[0] != g * w_hh.shape()[1] {
        return bad(format!(
            "w_hh must be ({g} * hidden_size, hidden_size), got {}",
            fmt_shape(w_hh.shape())
        ));
    }
    let hidden = w_hh.shape()[1];
    let gh = g * hidden;
    if x_proj.ndim() != 3 || x_proj.shape()[2] != gh {
        return bad(format!(
            "x_proj must be (seq_len, batch, {g} * hidden_size) = (seq_len, batch, {gh}) for \
             w_hh {}, got {}",
            fmt_shape(w_hh.shape()),
            fmt_shape(x_proj.shape())
        ));
    }
    let (steps, batch) = (x_proj.shape()[0], x_proj.shape()[1]);
    if steps == 0 {
        return bad(format!(
            "the sequence is empty (x_proj of shape {})",
            fmt_shape(x_proj.shape())
        ));
    }
    let state = [batch, hidden];
    for (name, t) in [("h0", Some(h0)), ("c0", c0)] {
        if let Some(t) = t {
            if t.shape() != state {
                return bad(format!(
                    "{name} must be (batch, hidden_size) = {}, got {}",
                    fmt_shape(&state),
                    fmt_shape(t.shape())
                ));
            }
        }
    }
    if let Some(b) = b_hh {
        if b.shape() != [gh] {
            return bad(format!(
                "b_hh must be ({gh},) for w_hh {}, got {}",
                fmt_shape(w_hh.shape()),
                fmt_shape(b.shape())
            ));
        }
    }
    let dt: DType = all.iter().fold(x_proj.dtype(), |d, t| d.promote(t.dtype()));
    let cast: Vec<Tensor> = all.iter().map(|t| to_dtype(t, dt)).collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = cast.iter().collect();
    let rop = RecurrentOp {
        cell,
        reverse,
        has_bias: b_hh.is_some(),
    };
    let mut saves = vec![Save::Input(1)];
    if cell == Cell::Lstm {
        saves.push(Save::Input(2));
    }
    saves.push(Save::Input(rop.w_index()));
    saves.push(Save::Output);
    let packed = apply(rop, &refs, &saves)?;
    let last = if reverse { 0 } else { steps as isize - 1 };
    let output = index(&packed, &[IndexItem::Int(0)])?;
    let h_n = index(&packed, &[IndexItem::Int(0), IndexItem::Int(last)])?;
    let c_n = (cell == Cell::Lstm)
        .then(|| index(&packed, &[IndexItem::Int(1), IndexItem::Int(last)]))
        .transpose()?;
    Ok(LayerOutput { output, h_n, c_n })
}

/// One LSTM layer (one direction) over a sequence: `x_proj (T, B, 4H)` the projected inputs
/// `x W_ihᵀ + b_ih` (gates in PyTorch's order `i, f, g, o`), `h0`, `c0` `(B, H)`, `w_hh`
/// `(4H, H)`, `b_hh` `(4H)`; `reverse` runs from the last step to the first. Returns the
/// output `(T, B, H)` and the final `h` and `c`.
pub fn lstm_layer(
    x_proj: &Tensor,
    h0: &Tensor,
    c0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    reverse: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let out = layer(Cell::Lstm, x_proj, h0, Some(c0), w_hh, b_hh, reverse)?;
    let c_n = out
        .c_n
        .ok_or_else(|| Error::graph("lstm_layer", "no cell state"))?;
    Ok((out.output, out.h_n, c_n))
}

/// One GRU layer over a sequence: `x_proj (T, B, 3H)` (gates `r, z, n`), `h0 (B, H)`, `w_hh
/// (3H, H)`, `b_hh (3H)`, with `n = tanh(x_n + r (h W_hnᵀ + b_hn))` and `h' = n + z (h - n)`
/// as in PyTorch. Returns the output `(T, B, H)` and the final `h`.
pub fn gru_layer(
    x_proj: &Tensor,
    h0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    reverse: bool,
) -> Result<(Tensor, Tensor)> {
    let out = layer(Cell::Gru, x_proj, h0, None, w_hh, b_hh, reverse)?;
    Ok((out.output, out.h_n))
}

/// One Elman RNN layer over a sequence: `h' = act(x_proj + h W_hhᵀ + b_hh)` with `act` tanh,
/// or ReLU when `relu`. Returns the output `(T, B, H)` and the final `h`.
pub fn rnn_layer(
    x_proj: &Tensor,
    h0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    relu: bool,
    reverse: bool,
) -> Result<(Tensor, Tensor)> {
    let cell = if relu { Cell::RnnRelu } else { Cell::RnnTanh };
    let out = layer(cell, x_proj, h0, None, w_hh, b_hh, reverse)?;
    Ok((out.output, out.h_n))
}

#[cfg(test)]
mod tests {
    // Tests panic on failure by design.
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn values(shape: &[usize], seed: u64) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|i| (((i as u64 + 1) * (seed * 2 + 1) * 2654435761) % 1000) as f64 / 1000.0 - 0.5)
            .collect();
        from_vec(v, shape)
    }

    #[test]
    fn the_composed_forward_packs_as_the_kernel_does() {
        // The CUDA path builds the packed output from differentiable ops; on the CPU it must
        // equal the kernel's, for every cell, both directions, with and without a bias.
        for cell in [Cell::Lstm, Cell::Gru, Cell::RnnTanh, Cell::RnnRelu] {
            for reverse in [false, true] {
                for has_bias in [false, true] {
                    let (t, b, h) = (4, 3, 5);
                    let g = cell.gates();
                    let xp = values(&[t, b, g * h], 1);
                    let h0 = values(&[b, h], 2);
                    let c0 = values(&[b, h], 3);
                    let w = values(&[g * h, h], 4);
                    let bias = values(&[g * h], 5);
                    let mut ins: Vec<&Tensor> = vec![&xp, &h0];
                    if cell == Cell::Lstm {
                        ins.push(&c0);
                    }
                    ins.push(&w);
                    if has_bias {
                        ins.push(&bias);
                    }
                    let op = RecurrentOp {
                        cell,
                        reverse,
                        has_bias,
                    };
                    let kernel = op.cpu(&ins).unwrap();
                    let composed = op.composed_forward(&ins).unwrap();
                    assert_eq!(kernel.shape(), composed.shape());
                    for (a, c) in kernel.to_vec::<f64>().iter().zip(composed.to_vec::<f64>()) {
                        assert!(
                            (a - c).abs() < 1e-12,
                            "{cell:?} reverse {reverse}: {a} vs {c}"
                        );
                    }
                }
            }
        }
    }
}
