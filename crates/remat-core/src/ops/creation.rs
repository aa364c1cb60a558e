//! Tensor constructors: filled, random (counter-based RNG), and like-shaped.
//!
//! A random draw is a pure function of its generator key, so inside a checkpoint scope it
//! gets a recipe (an op holding the key) and is replayed instead of kept.

use super::from_vec;
use crate::autograd::node::{BackwardCtx, Op};
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::checked_numel;
use crate::rng;
use crate::tensor::Tensor;
use rayon::prelude::*;
use std::sync::Arc;

fn check_device(op: &str, device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(_) => crate::cuda::ensure_available(op, device),
    }
}

/// A tensor of `shape` filled with `value`; errors are labelled `op` (the public constructor
/// the user called, so `zeros` never reports itself as `full`).
fn fill_with(
    op: &str,
    shape: &[usize],
    value: f64,
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    check_device(op, device)?;
    let n = checked_numel(op, shape, dtype)?;
    crate::device::on_device(
        device,
        || {
            crate::cpu::catch_oom(op, || {
                Ok(
                    crate::dispatch_any!(dtype, T => from_vec(crate::cpu::filled(n, T::from_f64(value)), shape)),
                )
            })
        },
        || crate::cuda::launch::full(op, device, shape, dtype, value),
    )
}

/// A tensor of `shape` filled with `value`.
pub fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
    fill_with("full", shape, value, dtype, device)
}

/// A tensor of `shape` filled with the integer `value`, exactly (`full` goes through `f64`,
/// exact only below 2^53). Integer dtypes only; a value the dtype cannot hold is a
/// `ValueError` naming it, as PyTorch's overflow check.
pub fn full_int(shape: &[usize], value: i64, dtype: DType, device: Device) -> Result<Tensor> {
    let fits = match dtype {
        DType::I64 => true,
        DType::I32 => i32::try_from(value).is_ok(),
        _ => {
            return Err(Error::dtype(
                "full",
                format!("full_int fills integer dtypes, not {dtype}"),
            ))
        }
    };
    if !fits {
        return Err(Error::value(
            "full",
            format!("value cannot be converted to type {dtype} without overflow: {value}"),
        ));
    }
    if value.unsigned_abs() <= 1 << 53 {
        // Exact in f64: the usual fill (on any device).
        return fill_with("full", shape, value as f64, dtype, device);
    }
    // Built exactly on the host, then moved.
    check_device("full", device)?;
    let n = checked_numel("full", shape, dtype)?;
    let t = crate::cpu::catch_oom("full", || {
        Ok(match dtype {
            DType::I32 => from_vec(crate::cpu::filled(n, value as i32), shape),
            _ => from_vec(crate::cpu::filled(n, value), shape),
        })
    })?;
    if device == Device::Cpu {
        Ok(t)
    } else {
        super::to_device(&t, device)
    }
}

/// Zeros.
pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    fill_with("zeros", shape, 0.0, dtype, device)
}

/// Ones.
pub fn ones(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    fill_with("ones", shape, 1.0, dtype, device)
}

/// The distribution of a random constructor.
#[derive(Clone, Copy)]
enum Dist {
    Normal,
    Uniform { low: f64, high: f64 },
}

impl Dist {
    #[inline(always)]
    fn sample(self, key: rng::RngState, i: u64) -> f64 {
        match self {
            Dist::Normal => rng::normal(key, i),
            Dist::Uniform { low, high } => low + (high - low) * rng::uniform(key, i),
        }
    }
}

/// The `numel` draws starting at `key`, on `device` (drawn on the host, the same
/// counter-based stream as on the CPU, so a seed gives the same values on every device, then
/// copied over).
fn draw(
    op: &str,
    shape: &[usize],
    dtype: DType,
    device: Device,
    dist: Dist,
    key: rng::RngState,
) -> Result<Tensor> {
    if !dtype.is_float() {
        return Err(Error::dtype(
            op,
            format!("{op} draws floating point numbers; {dtype} is not a float dtype"),
        ));
    }
    if device != Device::Cpu {
        let host = draw(op, shape, dtype, Device::Cpu, dist, key)?;
        return super::to_device(&host, device).map(|t| t.detach());
    }
    if dtype.is_half() {
        // Drawn in float32 and rounded once, as PyTorch's half draws are.
        return super::cast(&draw(op, shape, DType::F32, device, dist, key)?, dtype);
    }
    let n: usize = shape.iter().product();
    crate::cpu::catch_oom(op, || {
        Ok(crate::dispatch!(dtype, T => {
            let mut v = crate::cpu::alloc::<T>(n);
            crate::parallel::install(|| v.par_iter_mut().with_min_len(8192).enumerate().for_each(|(i, o)| *o = T::from_f64(dist.sample(key, i as u64))));
            from_vec(v, shape)
        }))
    })
}

/// One random draw, replayable: the recipe op of a random tensor made in a checkpoint scope.
struct RandomOp {
    name: &'static str,
    shape: Vec<usize>,
    dtype: DType,
    device: Device,
    dist: Dist,
    key: rng::RngState,
}

impl Op for RandomOp {
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu(&self, _: &[&Tensor]) -> Result<Tensor> {
        draw(
            self.name,
            &self.shape,
            self.dtype,
            Device::Cpu,
            self.dist,
            self.key,
        )
    }
    /// No inputs say where to draw: the op remembers its device.
    fn forward(&self, _: &[&Tensor]) -> Result<Tensor> {
        draw(
            self.name,
            &self.shape,
            self.dtype,
            self.device,
            self.dist,
            self.key,
        )
    }
    fn backward(&self, _: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(Vec::new())
    }
}

fn random(
    op: &'static str,
    shape: &[usize],
    dtype: DType,
    device: Device,
    dist: Dist,
) -> Result<Tensor> {
    check_device(op, device)?;
    let n = checked_numel(op, shape, dtype)?;
    let key = rng::reserve(n as u64);
    let t = draw(op, shape, dtype, device, dist, key)?;
    let replay = RandomOp {
        name: op,
        shape: shape.to_vec(),
        dtype,
        device,
        dist,
        key,
    };
    Ok(crate::checkpoint::scope_recipe(Arc::new(replay), &[], t))
}

/// Standard normal samples.
pub fn randn(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    random("randn", shape, dtype, device, Dist::Normal)
}

/// Uniform samples in [0, 1).
pub fn rand(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    random(
        "rand",
        shape,
        dtype,
        device,
        Dist::Uniform {
            low: 0.0,
            high: 1.0,
        },
    )
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
    random("uniform", shape, dtype, device, Dist::Uniform { low, high })
}
