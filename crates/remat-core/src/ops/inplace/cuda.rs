//! The CUDA path of the in-place updates, composed from the existing launches: the fused
//! in-place kernels where they fit (`axpy` and `fill` into a contiguous destination), else
//! the new values are computed out of place by the ordinary elementwise kernels (the same
//! formulas as the CPU's: the op table's rows) and written into the destination view, any
//! strides, by the strided-copy kernel. Random fills draw on the host from the same
//! counter-based stream as the CPU (so a seed gives the same values on every device) and
//! copy over. Unverified until run on a GPU, like the rest of the CUDA launches.

use super::update::{Src, Update};
use crate::cuda::launch;
use crate::dtype::Scalar;
use crate::error::Result;
use crate::grad_mode::no_grad;
use crate::ops;
use crate::tensor::Tensor;
use std::sync::Arc;

/// Run `u` with operand `src` on the CUDA tensor `dst` (operand on the same device).
pub(crate) fn update(op: &str, dst: &Tensor, src: Src<'_>, u: Update) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    // Nothing computed here may be recorded: `dst` is being overwritten.
    let _g = no_grad();
    let (dtype, device) = (dst.dtype(), dst.device());
    // The operand in the destination's dtype, as a tensor on its device (copied when it
    // shares the destination's storage: the kernels read and write in one pass).
    let operand = |for_set: bool| -> Result<Tensor> {
        match src {
            Src::Tensor(t) => {
                let t = ops::cast(&t.detach(), dtype)?;
                if for_set && Arc::ptr_eq(t.storage(), dst.storage()) {
                    launch::copy(op, &t)
                } else {
                    Ok(t)
                }
            }
            Src::Scalar(v) => launch::full(op, device, &[], dtype, v),
            Src::None => launch::full(op, device, &[], dtype, 0.0),
        }
    };
    let fused = dst.is_contiguous();
    let cur = dst.detach();
    let values = match u {
        Update::Set => match src {
            Src::Scalar(v) if fused => return launch::fill_inplace(op, dst, v),
            _ => {
                let v = operand(true)?;
                let layout = v.layout().broadcast_to(op, dst.shape())?;
                ops::view(&v, layout)
            }
        },
        Update::Axpy(a) => {
            let v = operand(false)?;
            if fused && !Arc::ptr_eq(v.storage(), dst.storage()) {
                return launch::axpy_inplace(op, dst, &v, a);
            }
            ops::add(&cur, &ops::scale(&v, a)?)?
        }
        Update::Mul => ops::mul(&cur, &operand(false)?)?,
        Update::Div => ops::div(&cur, &operand(false)?)?,
        Update::ClampMin => ops::maximum(&cur, &operand(false)?)?,
        Update::ClampMax => ops::minimum(&cur, &operand(false)?)?,
        Update::Relu => ops::relu(&cur)?,
        Update::LeakyRelu => match src {
            Src::Scalar(slope) => ops::leaky_relu(&cur, slope)?,
            _ => {
                return Err(crate::error::Error::value(
                    op,
                    "a leaky ReLU's slope is a number",
                ))
            }
        },
        Update::MaskedFill(value) => {
            let fill = launch::full(op, device, &[], dtype, value)?;
            ops::where_(&operand(false)?, &fill, &cur)?
        }
        Update::Normal { .. }
        | Update::Uniform { .. }
        | Update::Exponential { .. }
        | Update::Bernoulli { .. } => {
            let host = crate::dispatch!(dtype, T => {
                let v: Vec<T> = (0..dst.numel() as u64).map(|i| T::from_f64(u.sample(i))).collect();
                Tensor::from_vec(v, dst.shape())?
            });
            ops::to_device(&host, device)?
        }
    };
    let values = ops::cast(&values, dtype)?;
    launch::copy_into(op, &values, dst, false)
}
