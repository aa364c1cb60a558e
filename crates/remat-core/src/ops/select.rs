//! `where_(cond, a, b)`: elementwise choice with NumPy broadcasting among all three operands.
//! `cond` is a tensor of any dtype, usually a bool mask from a comparison (nonzero, NaN
//! included, is true); `a` and `b` promote like binary
//! arithmetic. Gradients flow to `a` and `b` (masked, then reduced to their shapes), never
//! to `cond`. On CUDA the `where_*` kernel picks between the operands by a bool mask (`cond`
//! cast to bool first when it is not one: nonzero, NaN included, is true).

use super::{cast, check_same_device, from_vec, reduce::sum_to};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;

/// `t`'s elements broadcast to `shape`, in C order.
fn gather_as<T: Scalar>(t: &Tensor, shape: &[usize]) -> Result<Vec<T>> {
    if t.shape() == shape {
        return Ok(cpu::gather::<T>(t.data()));
    }
    let layout = t.layout().broadcast_to("where", shape)?;
    Ok(cpu::gather::<T>(&TensorData {
        storage: t.storage().clone(),
        layout,
    }))
}

/// `cond != 0` broadcast to `shape`, in C order.
fn mask(cond: &Tensor, shape: &[usize]) -> Result<Vec<bool>> {
    Ok(crate::dispatch_any!(cond.dtype(), C => {
        cpu::collect_exact(gather_as::<C>(cond, shape)?.into_iter().map(|c| c != <C as crate::dtype::Scalar>::from_f64(0.0)))
    }))
}

/// The broadcast shape of all three operands, with an error naming all three shapes.
fn broadcast3(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<crate::layout::Dims> {
    broadcast_shapes("where", cond.shape(), a.shape())
        .and_then(|s| broadcast_shapes("where", &s, b.shape()))
        .map_err(|_| {
            Error::shape(
                "where",
                format!(
                    "shapes {} (cond), {} and {} cannot be broadcast together",
                    fmt_shape(cond.shape()),
                    fmt_shape(a.shape()),
                    fmt_shape(b.shape())
                ),
            )
        })
}

/// The contiguous elements of `t` when they repeat along the flat C-order output of
/// `shape`: `t` is contiguous and its shape, leading ones dropped, is a trailing part of
/// `shape` (the whole of it, a scalar, or e.g. an `(l, s)` mask under `(b, h, l, s)`
/// scores). Element `i` of the broadcast `t` is then `slice[i % slice.len()]`.
fn periodic<'a, T: Scalar>(t: &'a Tensor, shape: &[usize]) -> Option<&'a [T]> {
    let dims = t.shape();
    let first = dims.iter().position(|&d| d != 1).unwrap_or(dims.len());
    let dims = &dims[first..];
    let fits = dims.len() <= shape.len() && shape[shape.len() - dims.len()..] == *dims;
    if !fits {
        return None;
    }
    cpu::contiguous_slice::<T>(t.data()).filter(|s| !s.is_empty())
}

/// `where` without gathering: when a bool `cond`, `a` and `b` (already of one dtype) each
/// repeat along the output (see [`periodic`]), e.g. a causal mask under attention scores
/// with a scalar `-inf`, the output is one pass over running indices, split among threads.
fn where_periodic(cond: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize]) -> Option<Tensor> {
    use rayon::prelude::*;
    if cond.dtype() != crate::DType::Bool {
        return None;
    }
    let c = periodic::<u8>(cond, shape)?;
    let n: usize = shape.iter().product();
    crate::dispatch_any!(a.dtype(), T => {
        let (av, bv) = (periodic::<T>(a, shape)?, periodic::<T>(b, shape)?);
        // Short periods (a scalar, one row) repeated to at least RUN elements, so that the
        // loop below runs long stretches without wrapping.
        let (c, av, bv) = (widen(c, n), widen(av, n), widen(bv, n));
        let mut out = cpu::alloc::<T>(n);
        let fill = |start: usize, o: &mut [T]| {
            let (mut ic, mut ia, mut ib) = (start % c.len(), start % av.len(), start % bv.len());
            let mut done = 0;
            while done < o.len() {
                let run = (o.len() - done)
                    .min(c.len() - ic)
                    .min(av.len() - ia)
                    .min(bv.len() - ib);
                cpu::select_slice(
                    &c[ic..ic + run],
                    &av[ia..ia + run],
                    &bv[ib..ib + run],
                    &mut o[done..done + run],
                );
                done += run;
                (ic, ia, ib) = ((ic + run) % c.len(), (ia + run) % av.len(), (ib + run) % bv.len());
            }
        };
        const CHUNK: usize = 1 << 14;
        if n >= cpu::PAR_MIN {
            crate::parallel::install(|| {
                out.par_chunks_mut(CHUNK)
                    .enumerate()
                    .for_each(|(k, o)| fill(k * CHUNK, o))
            });
        } else {
            fill(0, &mut out);
        }
        Some(from_vec(out, shape))
    })
}

/// `p` repeated whole until it holds at least `RUN` elements (or the output's `n`), so a
/// periodic operand's stretches between wraps are long; longer periods are borrowed as
/// they are.
fn widen<T: Copy>(p: &[T], n: usize) -> std::borrow::Cow<'_, [T]> {
    const RUN: usize = 4096;
    let want = RUN.min(n);
    if p.len() >= want {
        return std::borrow::Cow::Borrowed(p);
    }
    let copies = want.div_ceil(p.len());
    std::borrow::Cow::Owned(p.repeat(copies))
}

struct WhereOp;

impl Op for WhereOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "where"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (cond, a, b) = (inputs[0], inputs[1], inputs[2]);
        let shape = broadcast3(cond, a, b)?;
        let dt = crate::ops::result_dtype(a, b);
        let (a, b) = (cast(a, dt)?, cast(b, dt)?);
        if let Some(out) = where_periodic(cond, &a, &b, &shape) {
            return Ok(out);
        }
        let m = mask(cond, &shape)?;
        Ok(crate::dispatch_any!(dt, T => {
            let (av, bv) = (gather_as::<T>(&a, &shape)?, gather_as::<T>(&b, &shape)?);
            let out: Vec<T> = cpu::collect_exact(
                m.iter()
                    .zip(av.into_iter().zip(bv))
                    .map(|(&c, (x, y))| if c { x } else { y }),
            );
            from_vec(out, &shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (cond, a, b) = (inputs[0], inputs[1], inputs[2]);
        let shape = broadcast3(cond, a, b)?;
        let dt = crate::ops::result_dtype(a, b);
        let (a, b) = (cast(a, dt)?, cast(b, dt)?);
        // Any condition becomes a bool mask first (nonzero, NaN included, is true).
        let c = cast(cond, crate::dtype::DType::Bool)?;
        crate::cuda::launch::where_("where", &c, &a, &b, &shape)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // The gradient masked by `cond` is `where` again, so it is differentiable in `g`.
        let cond = &ctx.saved[0];
        let g = ctx.grad;
        let zero = super::full(&[], 0.0, g.dtype(), g.device())?;
        let ga = if ctx.needs_grad(1) {
            Some(sum_to(&where_(cond, g, &zero)?, &ctx.inputs[1].shape)?)
        } else {
            None
        };
        let gb = if ctx.needs_grad(2) {
            Some(sum_to(&where_(cond, &zero, g)?, &ctx.inputs[2].shape)?)
        } else {
            None
        };
        Ok(vec![None, ga, gb])
    }
}

/// `a` where `cond` is nonzero, else `b`, with broadcasting among all three and `a`/`b`
/// promoted to a common dtype. Differentiable in `a` and `b`.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_device("where", &[cond, a, b])?;
    broadcast3(cond, a, b)?;
    apply(WhereOp, &[cond, a, b], &[Save::Input(0)])
}
