//! The CUDA backend. Until it is filled in (the CUDA issue), every request for a GPU reports
//! a `DeviceError` with the reason instead of failing in any other way.

use crate::device::Device;
use crate::error::{Error, Result};

/// Whether a usable CUDA device exists.
pub fn is_available() -> bool {
    false
}

/// Number of usable CUDA devices.
pub fn device_count() -> usize {
    0
}

/// Wait for queued GPU work (nothing to wait for without a GPU).
pub fn synchronize() -> Result<()> {
    Ok(())
}

/// Error unless `device` can be used.
pub fn ensure_available(op: &str, device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(_) => Err(Error::device(
            op,
            if cfg!(feature = "cuda") {
                format!("{device} is not available: no CUDA driver or device was found")
            } else {
                format!(
                    "{device} is not available: this build of remat has no CUDA backend (cargo \
                     feature `cuda`)"
                )
            },
        )),
    }
}
