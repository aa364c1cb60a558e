//! remat-core: a tensor and autograd engine whose distinguishing feature is gradient
//! checkpointing (activation rematerialisation) that measurably saves memory and gives the
//! same gradients as the plain run.
//!
//! The pieces: [`Tensor`] (storage + layout + autograd state), ops in [`ops`], the backward
//! engine in [`autograd`], checkpointing in [`checkpoint`], byte counters in [`memory`].

pub mod autograd;
pub mod checkpoint;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod dtype;
pub mod error;
pub mod grad_mode;
pub mod layout;
pub mod memory;
pub mod ops;
pub mod optim;
pub mod rng;
pub mod storage;
pub mod tensor;
mod tensor_methods;

pub use device::Device;
pub use dtype::DType;
pub use error::{Error, Result};
pub use grad_mode::{enable_grad, is_grad_enabled, no_grad, set_grad_enabled};
pub use memory::{max_memory_allocated, memory_allocated, reset_peak_memory_stats};
pub use rng::manual_seed;
pub use tensor::Tensor;
