//! Differentiable dtype conversion: `to_dtype(x, dtype)` casts forward and casts the
//! gradient back to the input's dtype; `to_device(x, device)` copies between host and GPU and
//! copies the gradient back to the source device.

use super::contiguous_copy;
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

struct ToDTypeOp {
    dtype: DType,
}

impl Op for ToDTypeOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn half_native(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "to_dtype"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        // Always a fresh copy (never the input itself) so the output owns its storage.
        contiguous_copy(inputs[0], self.dtype)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::cuda::launch::cast("to_dtype", inputs[0], self.dtype)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(to_dtype(ctx.grad, ctx.inputs[0].dtype)?)])
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

/// Copy between devices; the gradient is copied back to the source device.
struct ToDeviceOp {
    from: Device,
    to: Device,
}

impl Op for ToDeviceOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn half_native(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "to_device"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::cuda::launch::transfer("to_device", inputs[0], self.to)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let g = to_device(ctx.grad, self.from)?;
        Ok(vec![Some(to_dtype(&g, ctx.inputs[0].dtype)?)])
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.cpu(inputs)
    }
}

/// `t` on `device`, differentiably (gradients flow back to `t`'s device). Returns `t` itself
/// when it is already there.
pub fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        return Ok(t.clone());
    }
    crate::cuda::ensure_available("to_device", device)?;
    apply(
        ToDeviceOp {
            from: t.device(),
            to: device,
        },
        &[t],
        &[],
    )
}

impl Tensor {
    /// This tensor on `device` (differentiable); see [`to_device`].
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        to_device(self, device)
    }
}
