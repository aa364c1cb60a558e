//! Host/device transfers: device tensors to host vectors, copies between devices, and
//! synchronising every device used so far.

use super::common::{buffer, tensor};
use super::elementwise::{cast, copy};
use crate::cuda::context;
use crate::cuda::storage::CudaBuffer;
use crate::device::Device;
use crate::dtype::Scalar;
use crate::error::Result;
use crate::tensor::Tensor;

/// `t`'s elements in C order as a host vector of `T` (copies; waits for queued work).
pub fn to_host_vec<T: Scalar>(op: &str, t: &Tensor) -> Result<Vec<T>> {
    let c = if t.dtype() == T::DTYPE && t.is_contiguous() {
        t.clone()
    } else {
        cast(op, t, T::DTYPE)?
    };
    buffer(op, &c)?.to_host::<T>(op, c.layout().offset, c.numel())
}

/// `t` copied to `device` as a new contiguous tensor (no graph).
pub fn transfer(op: &str, t: &Tensor, device: Device) -> Result<Tensor> {
    match (t.device(), device) {
        (Device::Cpu, Device::Cpu) => crate::dispatch_any!(t.dtype(), T => {
            Tensor::from_vec(crate::cpu::gather::<T>(t.data()), t.shape())
        }),
        (Device::Cpu, Device::Cuda(_)) => {
            let ctx = context::get(op, device)?;
            crate::dispatch_any!(t.dtype(), T => {
                let host = crate::cpu::catch_oom(op, || Ok(crate::cpu::gather::<T>(t.data())))?;
                Ok(tensor(CudaBuffer::from_host(op, &ctx, &host)?, t.shape()))
            })
        }
        (Device::Cuda(_), Device::Cpu) => crate::dispatch_any!(t.dtype(), T => {
            Tensor::from_vec(to_host_vec::<T>(op, t)?, t.shape())
        }),
        (Device::Cuda(a), Device::Cuda(b)) if a == b => copy(op, t),
        // Between GPUs through the host: simple and rare.
        (Device::Cuda(_), Device::Cuda(_)) => {
            let host = transfer(op, t, Device::Cpu)?;
            transfer(op, &host, device)
        }
    }
}

/// Wait for all queued work on every device used so far.
pub fn synchronize_all() -> Result<()> {
    for c in context::created() {
        c.synchronize("synchronize")?;
    }
    Ok(())
}
