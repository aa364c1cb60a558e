//! Half-precision inputs (`bfloat16`, `float16`) of ops that have no half kernel: the op runs
//! on float32 copies of them and its float32 result is rounded back to the half dtype.
//!
//! This is what PyTorch's CPU kernels do inside ("opmath": bf16 elementwise, reduction and
//! norm kernels load into float32 registers, compute and accumulate there, and round the
//! result once), done at the level of a whole op. So a half op's values are its float32
//! values rounded once, reductions accumulate in float32, and a recompute is bit-identical
//! to the forward (the widening and the rounding are deterministic). Saved tensors stay in
//! the half dtype: the float32 copies live only while the op runs, so a bf16 graph keeps half
//! the bytes of a float32 one.
//!
//! The dtype of the result follows PyTorch's promotion: the float inputs with dimensions
//! decide (0-d ones only when none has dimensions); a half result dtype rounds the result,
//! any other (a half tensor with a float32 one) keeps it. Ops whose kernels take half
//! storage themselves (views, copies, casts) say so with
//! [`Op::half_native`](crate::autograd::node::Op::half_native) and skip all this.

use crate::autograd::node::{BackwardCtx, InputMeta, Op};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::Arc;

/// How an op's inputs must be widened: None when no input is half.
pub(crate) struct Widening {
    /// The half dtype the result is rounded to, or None when the inputs promote to a wider
    /// float (a bfloat16 tensor with a float32 one is float32).
    narrow_to: Option<DType>,
}

/// Whether some input of an op is half, and what its result dtype is then.
pub(crate) fn widening(inputs: &[&Tensor]) -> Option<Widening> {
    if !inputs.iter().any(|t| t.dtype().is_half()) {
        return None;
    }
    let floats = || inputs.iter().filter(|t| t.dtype().is_float());
    let promote =
        |it: &mut dyn Iterator<Item = &&Tensor>| it.map(|t| t.dtype()).reduce(|a, b| a.promote(b));
    let result = promote(&mut floats().filter(|t| t.ndim() > 0))
        .or_else(|| promote(&mut floats()))
        .unwrap_or(DType::F32);
    Some(Widening {
        narrow_to: result.is_half().then_some(result),
    })
}

/// Run `f` (an op's forward) on float32 copies of the half inputs, and round a float32
/// result to the half dtype the inputs promote to. An op that turns out to return a view of
/// its input (its output shares the widened copy's storage) moves elements only: it is run
/// again on the half inputs themselves, so the view stays a view.
pub(crate) fn run_widened(
    how: Widening,
    inputs: &[&Tensor],
    f: impl Fn(&[&Tensor]) -> Result<Tensor>,
) -> Result<Tensor> {
    let wide: Vec<Tensor> = inputs
        .iter()
        .map(|t| {
            if t.dtype().is_half() {
                super::cast(t, DType::F32)
            } else {
                Ok((*t).clone())
            }
        })
        .collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = wide.iter().collect();
    let out = f(&refs)?;
    let aliases = wide
        .iter()
        .zip(inputs)
        .any(|(w, t)| !w.same(t) && Arc::ptr_eq(out.storage(), w.storage()));
    if aliases {
        drop(out);
        return f(inputs);
    }
    drop(refs);
    drop(wide);
    match how.narrow_to {
        Some(half) if out.dtype() == DType::F32 => super::cast(&out, half),
        _ => Ok(out),
    }
}

/// The default forward of an op (see `Op::forward`): widened when some input is half.
pub(crate) fn forward<O: Op + ?Sized>(op: &O, inputs: &[&Tensor]) -> Result<Tensor> {
    match widening(inputs) {
        Some(how) => run_widened(how, inputs, |ins| op.device_forward(ins)),
        None => op.device_forward(inputs),
    }
}

/// The forward of a matrix product whose CPU kernel takes bfloat16 itself where the CPU has
/// bf16 units (`cpu::bf16_gemm`): all-bf16 CPU operands go straight to it; other half
/// operands (float16, mixed, no bf16 units) are widened as by [`forward`]. Such ops say
/// `half_native`, so their backward's products (of bf16 tensors) take the kernel too.
pub(crate) fn forward_bf16_gemm<O: Op + ?Sized>(op: &O, inputs: &[&Tensor]) -> Result<Tensor> {
    let native = crate::cpu::bf16_gemm::available()
        && inputs
            .iter()
            .all(|t| t.dtype() == DType::BF16 && t.device() == crate::device::Device::Cpu);
    if native {
        op.device_forward(inputs)
    } else {
        forward(op, inputs)
    }
}

/// An op's backward when its output gradient, a saved tensor or an input is half: it runs on
/// float32 widenings of them (differentiable casts, so a `create_graph` backward records
/// them), and the engine rounds each gradient to its input's dtype. So backward formulas
/// and fused backward kernels written for float32 serve the half dtypes, and each gradient
/// is rounded once.
pub(crate) fn backward(op: &dyn Op, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
    let half = ctx.grad.dtype().is_half()
        || ctx.saved.iter().any(|t| t.dtype().is_half())
        || ctx.inputs.iter().any(|m| m.dtype.is_half());
    if !half || op.half_native() {
        return op.backward(ctx);
    }
    let wide = |t: &Tensor| {
        if t.dtype().is_half() {
            super::to_dtype(t, DType::F32)
        } else {
            Ok(t.clone())
        }
    };
    let grad = wide(ctx.grad)?;
    let saved: Vec<Tensor> = ctx.saved.iter().map(wide).collect::<Result<_>>()?;
    let inputs: Vec<InputMeta> = ctx
        .inputs
        .iter()
        .map(|m| InputMeta {
            dtype: if m.dtype.is_half() {
                DType::F32
            } else {
                m.dtype
            },
            ..m.clone()
        })
        .collect();
    op.backward(&BackwardCtx {
        grad: &grad,
        saved: &saved,
        inputs: &inputs,
    })
}
