//! Devices: the CPU and CUDA GPUs by ordinal.

use crate::error::{Error, Result};
use std::fmt;

/// Where a tensor's storage lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// A CUDA GPU by ordinal.
    Cuda(usize),
}

impl Device {
    /// Parse `"cpu"`, `"cuda"` or `"cuda:N"`.
    pub fn parse(name: &str) -> Result<Device> {
        let name = name.trim();
        if name == "cpu" {
            return Ok(Device::Cpu);
        }
        if name == "cuda" {
            return Ok(Device::Cuda(0));
        }
        if let Some(n) = name.strip_prefix("cuda:") {
            if let Ok(i) = n.parse::<usize>() {
                return Ok(Device::Cuda(i));
            }
        }
        Err(Error::device(
            "device",
            format!("unknown device {name:?}: expected \"cpu\", \"cuda\" or \"cuda:N\""),
        ))
    }

    /// Index into per-device tables (CPU is 0, cuda:N is N + 1).
    pub(crate) fn slot(self) -> usize {
        match self {
            Device::Cpu => 0,
            Device::Cuda(i) => i + 1,
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

/// Run `cpu` or `cuda` for in-place work on a tensor of `device`: the one place where work
/// that makes no new tensor (optimizer updates, gradient accumulation, zeroing, copies) picks
/// its device, as `Op::forward` does for ops.
pub(crate) fn on_device<R>(device: Device, cpu: impl FnOnce() -> R, cuda: impl FnOnce() -> R) -> R {
    match device {
        Device::Cpu => cpu(),
        Device::Cuda(_) => cuda(),
    }
}
