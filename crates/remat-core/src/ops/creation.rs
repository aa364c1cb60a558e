//! Tensor constructors: filled, random (counter-based RNG), and like-shaped.

use super::from_vec;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::checked_numel;
use crate::rng;
use crate::tensor::Tensor;
use rayon::prelude::*;

fn check_device(op: &str, device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(_) => crate::cuda::ensure_available(op, device),
    }
}

/// A tensor of `shape` filled with `value`.
pub fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
    check_device("full", device)?;
    let n = checked_numel("full", shape, dtype)?;
    crate::device::on_device(
        device,
        || {
            crate::cpu::catch_oom("full", || {
                Ok(
                    crate::dispatch!(dtype, T => from_vec(crate::cpu::filled(n, T::from_f64(value)), shape)),
                )
            })
        },
        || crate::cuda::launch::full("full", device, shape, dtype, value),
    )
}

/// Zeros.
pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    full(shape, 0.0, dtype, device)
}

/// Ones.
pub fn ones(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    full(shape, 1.0, dtype, device)
}

fn random<F: Fn(rng::RngState, u64) -> f64 + Sync>(
    op: &str,
    shape: &[usize],
    dtype: DType,
    device: Device,
    f: F,
) -> Result<Tensor> {
    check_device(op, device)?;
    let n = checked_numel(op, shape, dtype)?;
    if device != Device::Cpu {
        // Drawn on the host (the same counter-based stream as on the CPU, so a seed gives
        // the same values on every device), then copied over: `to_device` picks the device.
        let host = random(op, shape, dtype, Device::Cpu, f)?;
        return super::to_device(&host, device).map(|t| t.detach());
    }
    crate::cpu::catch_oom(op, || {
        let key = rng::reserve(n as u64);
        Ok(crate::dispatch!(dtype, T => {
            let mut v = crate::cpu::alloc::<T>(n);
            crate::parallel::install(|| v.par_iter_mut().with_min_len(8192).enumerate().for_each(|(i, o)| *o = T::from_f64(f(key, i as u64))));
            from_vec(v, shape)
        }))
    })
}

/// Standard normal samples.
pub fn randn(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    random("randn", shape, dtype, device, rng::normal)
}

/// Uniform samples in [0, 1).
pub fn rand(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    random("rand", shape, dtype, device, rng::uniform)
}

/// Uniform samples in [low, high) (parameter initialisation).
pub fn uniform(
    shape: &[usize],
    low: f64,
    high: f64,
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    if low.is_nan() || high.is_nan() || low > high {
        return Err(Error::value(
            "uniform",
            format!("low {low} must not exceed high {high}"),
        ));
    }
    random("uniform", shape, dtype, device, move |k, i| {
        low + (high - low) * rng::uniform(k, i)
    })
}
