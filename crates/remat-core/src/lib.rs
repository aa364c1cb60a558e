//! remat-core: a tensor and autograd engine whose distinguishing feature is gradient
//! checkpointing (activation rematerialisation) that measurably saves memory and gives the
//! same gradients as the plain run.
//!
//! The pieces: [`Tensor`] (storage + layout + autograd state), ops in [`ops`], the backward
//! engine in [`autograd`], checkpointing in [`checkpoint`], byte counters in [`memory`], training under a hard memory
//! limit (dynamic rematerialisation) in [`dtr`].
//!
//! ```
//! use remat_core::{autograd, checkpoint, ops, DType, Device, Tensor};
//!
//! # fn main() -> remat_core::Result<()> {
//! let w = ops::randn(&[64, 64], DType::F32, Device::Cpu)?;
//! w.set_requires_grad(true)?;
//! let x = ops::randn(&[8, 64], DType::F32, Device::Cpu)?;
//!
//! // Only `x` is kept for backward; the tanh activations are recomputed from it.
//! let w2 = w.clone();
//! let y = checkpoint::checkpoint_segment(&[x], move |t| {
//!     let h = ops::tanh(&ops::matmul(&t[0], &w2)?)?;
//!     Ok(vec![ops::tanh(&ops::matmul(&h, &w2)?)?])
//! })?;
//! let loss = ops::sum(&ops::mul(&y[0], &y[0])?, None, false)?;
//! autograd::backward(&[(loss, None)], false)?;
//! assert_eq!(w.grad().map(|g| g.shape().to_vec()), Some(vec![64, 64]));
//! # Ok(())
//! # }
//! ```

pub mod autocast;
pub mod autocast_lists;
pub mod autograd;
pub mod checkpoint;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod dlpack;
pub mod dtr;
pub mod dtype;
pub mod error;
pub mod fastmath;
pub mod grad_mode;
pub mod grad_scaling;
pub mod layout;
pub mod memory;
pub mod ops;
pub mod optim;
pub mod parallel;
pub mod rng;
pub mod storage;
pub mod tensor;
pub mod tensor_data;
mod tensor_methods;

pub use device::Device;
pub use dtr::{get_memory_limit, memory_limit, memory_stats, set_memory_limit, MemoryStats};
pub use dtype::DType;
pub use error::{Error, Result, ShapeKind};
pub use grad_mode::{enable_grad, is_grad_enabled, no_grad, set_grad_enabled};
pub use memory::{max_memory_allocated, memory_allocated, reset_peak_memory_stats};
pub use parallel::{num_threads as get_num_threads, set_num_threads};
pub use rng::{initial_seed, manual_seed, Generator};
pub use tensor::Tensor;
