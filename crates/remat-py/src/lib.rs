//! `remat._remat`: the PyO3 bindings of remat-core. The layer holds no logic: it converts
//! arguments (Python scalars, NumPy arrays, shapes, dtypes, devices), calls the engine, maps
//! its errors to Python exceptions and wraps results. The GIL is released around heavy ops
//! and always around backward.

pub mod args;
pub mod autocast;
pub mod autograd;
pub mod call;
pub mod checkpoint;
pub mod closeness;
pub mod composites;
pub mod conv;
pub mod convert;
pub mod creation;
pub mod dlpack;
pub mod dtype;
pub mod errors;
pub mod function;
pub mod functions;
pub mod generator;
pub mod hooks;
pub mod indexing;
pub mod inplace;
pub mod losses;
pub mod memory;
pub mod nccl;
pub mod norms;
pub mod numpy_bridge;
pub mod ops;
pub mod optim;
pub mod policy;
pub mod rearrange;
pub mod recurrent;
pub mod reduce_index;
pub mod repr;
pub mod resample;
pub mod sampling;
pub mod sorting;
pub mod split;
pub mod tensor;
pub mod tensor_new;

use pyo3::prelude::*;

pub use errors::{callback_error, to_pyerr};
pub use tensor::{extract_tensor, wrap, PyTensor};

/// The extension module.
#[pymodule]
fn _remat(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Before the first tensor: freed host buffers are reused, not faulted in afresh.
    remat_core::cpu::host_alloc::retain_freed_memory();
    errors::register(m)?;
    dtype::register(m)?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<numpy_bridge::StorageOwner>()?;
    functions::register(m)?;
    losses::register(m)?;
    conv::register(m)?;
    norms::register(m)?;
    policy::register(m)?;
    ops::register(m)?;
    split::register(m)?;
    indexing::register(m)?;
    creation::register(m)?;
    reduce_index::register(m)?;
    sorting::register(m)?;
    rearrange::register(m)?;
    sampling::register(m)?;
    resample::register(m)?;
    recurrent::register(m)?;
    composites::register(m)?;
    closeness::register(m)?;
    autograd::register(m)?;
    autocast::register(m)?;
    memory::register(m)?;
    checkpoint::register(m)?;
    hooks::register(m)?;
    generator::register(m)?;
    function::register(m)?;
    dlpack::register(m)?;
    optim::register(m)?;
    nccl::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
