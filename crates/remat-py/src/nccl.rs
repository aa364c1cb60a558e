//! Python bindings of the NCCL communicators (`remat_core::cuda::nccl`), for the `nccl`
//! backend of `remat.distributed`: `_nccl_available()`, `_nccl_unique_id()` and the
//! `_NcclComm` class whose collectives run on CUDA tensors in place. Each call releases the
//! GIL; a collective returns once it is queued on the communicator's stream, and
//! `is_completed()` tells when the GPU finished it.

use crate::errors::to_pyerr;
use crate::tensor::PyTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use remat_core::cuda::nccl::{self, NcclComm, ReduceOp};
use remat_core::Device;

/// `(True, "")` when NCCL can be used (a GPU, libnccl loaded), else `(False, why)`.
#[pyfunction]
fn _nccl_available() -> (bool, String) {
    match nccl::available() {
        Ok(()) => (true, String::new()),
        Err(e) => (false, e),
    }
}

/// A new NCCL unique id, as 128 bytes.
#[pyfunction]
fn _nccl_unique_id(py: Python<'_>) -> PyResult<Py<PyBytes>> {
    let id = py
        .allow_threads(|| nccl::unique_id("init_process_group"))
        .map_err(to_pyerr)?;
    Ok(PyBytes::new(py, &id).unbind())
}

/// One rank's NCCL communicator on one GPU.
#[pyclass(name = "_NcclComm", module = "remat", frozen)]
struct PyNcclComm(NcclComm);

#[pymethods]
impl PyNcclComm {
    /// Join the communicator of `size` ranks named by the 128-byte `id` as `rank`, on CUDA
    /// device `device`; blocks until every rank joined.
    #[new]
    fn new(py: Python<'_>, id: &[u8], rank: usize, size: usize, device: usize) -> PyResult<Self> {
        let id: [u8; 128] = id.try_into().map_err(|_| {
            PyValueError::new_err(format!(
                "init_process_group: an NCCL id has 128 bytes, got {}",
                id.len()
            ))
        })?;
        py.allow_threads(|| NcclComm::new(&id, rank, size, Device::Cuda(device)))
            .map(PyNcclComm)
            .map_err(to_pyerr)
    }

    /// This communicator's rank.
    #[getter]
    fn rank(&self) -> usize {
        self.0.rank()
    }

    /// How many ranks it joins.
    #[getter]
    fn size(&self) -> usize {
        self.0.size()
    }

    /// All-reduce `t` in place (`op`: "sum", "product", "max", "min" or "avg").
    fn all_reduce(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, op: &str) -> PyResult<()> {
        let red = ReduceOp::parse("all_reduce", op).map_err(to_pyerr)?;
        let t = t.inner.clone();
        py.allow_threads(|| self.0.all_reduce(&t, red))
            .map_err(to_pyerr)
    }

    /// Broadcast `t` from rank `root` into `t`.
    fn broadcast(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, root: usize) -> PyResult<()> {
        let t = t.inner.clone();
        py.allow_threads(|| self.0.broadcast(&t, root))
            .map_err(to_pyerr)
    }

    /// Every rank's `input` into `output`, in rank order.
    fn all_gather(
        &self,
        py: Python<'_>,
        output: PyRef<'_, PyTensor>,
        input: PyRef<'_, PyTensor>,
    ) -> PyResult<()> {
        let (o, i) = (output.inner.clone(), input.inner.clone());
        py.allow_threads(|| self.0.all_gather(&o, &i))
            .map_err(to_pyerr)
    }

    /// Reduce `input` across the ranks; this rank's chunk goes to `output`.
    fn reduce_scatter(
        &self,
        py: Python<'_>,
        output: PyRef<'_, PyTensor>,
        input: PyRef<'_, PyTensor>,
        op: &str,
    ) -> PyResult<()> {
        let red = ReduceOp::parse("reduce_scatter_tensor", op).map_err(to_pyerr)?;
        let (o, i) = (output.inner.clone(), input.inner.clone());
        py.allow_threads(|| self.0.reduce_scatter(&o, &i, red))
            .map_err(to_pyerr)
    }

    /// Whether the GPU finished the last collective.
    fn is_completed(&self) -> PyResult<bool> {
        self.0.is_completed().map_err(to_pyerr)
    }

    /// Abort the communicator (after a timeout); it cannot be used again.
    fn abort(&self) {
        self.0.abort();
    }
}

/// Add the NCCL bindings to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_nccl_available, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_unique_id, m)?)?;
    m.add_class::<PyNcclComm>()?;
    Ok(())
}
