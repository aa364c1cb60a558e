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
use crate::tensor::{Tensor, TensorData};

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
        let dt = a.dtype().promote(b.dtype());
        let (a, b) = (cast(a, dt)?, cast(b, dt)?);
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
        let dt = a.dtype().promote(b.dtype());
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
