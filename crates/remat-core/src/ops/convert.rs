//! Differentiable dtype conversion: `to_dtype(x, dtype)` casts forward and casts the
//! gradient back to the input's dtype.

use super::{cast, contiguous_copy};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

struct ToDTypeOp {
    dtype: DType,
}

impl Op for ToDTypeOp {
    fn name(&self) -> &'static str {
        "to_dtype"
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // Always a fresh copy (never the input itself) so the output owns its storage.
        contiguous_copy(inputs[0], self.dtype)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(cast(ctx.grad, ctx.inputs[0].dtype)?)])
    }
}

/// `x` converted to `dtype`, differentiably. Returns `x` itself when it already has `dtype`.
pub fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    apply(ToDTypeOp { dtype }, &[x], &[])
}

impl Tensor {
    /// This tensor converted to `dtype` (differentiable); see [`to_dtype`].
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        to_dtype(self, dtype)
    }
}
