//! `checkpoint_name(x, name)`: an identity (a view of `x`) that tags its output, so selective
//! checkpoint policies (`save_only_these_names`, `offload_these_names`, custom policies) can
//! keep exactly the tensors a model names (JAX's `checkpoint_name`).

use super::view;
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::Arc;

struct NameOp {
    tag: Arc<str>,
}

impl Op for NameOp {
    fn name(&self) -> &'static str {
        "checkpoint_name"
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn tag(&self) -> Option<&str> {
        Some(&self.tag)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Ok(view(inputs[0], inputs[0].layout().clone()))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.cpu(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(ctx.grad.clone())])
    }
}

/// `x` itself (a view), tagged `name` for selective checkpoint policies.
pub fn checkpoint_name(x: &Tensor, name: &str) -> Result<Tensor> {
    if name.is_empty() {
        return Err(Error::value(
            "checkpoint_name",
            "the name must not be empty",
        ));
    }
    apply(NameOp { tag: name.into() }, &[x], &[])
}
