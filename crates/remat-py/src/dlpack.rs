//! DLPack and `format()` for tensors. On the CPU the exchange goes through NumPy's DLPack
//! implementation, zero-copy in both directions: `__dlpack__` exports the NumPy view of the
//! tensor's storage (which keeps the storage alive), and `remat.from_dlpack` (Python side)
//! imports with `np.from_dlpack` and shares that memory through `from_numpy`. CUDA tensors
//! are refused with a `DeviceError` for now.

use crate::errors::DeviceError;
use crate::tensor::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use remat_core::Device;

#[pymethods]
impl PyTensor {
    /// A DLPack capsule over this tensor's memory (CPU; a tensor that requires grad must be
    /// detached first, as in PyTorch).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<PyObject>,
        max_version: Option<PyObject>,
        dl_device: Option<PyObject>,
        copy: Option<PyObject>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let t = &slf.get().inner;
        if t.requires_grad() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        if t.device() != Device::Cpu {
            return Err(DeviceError::new_err(format!(
                "__dlpack__: DLPack export of {} tensors is not supported yet; copy to the \
                 CPU first",
                t.device()
            )));
        }
        let _ = stream; // CPU: no stream to synchronise with
        let kwargs = PyDict::new(py);
        if let Some(v) = max_version {
            kwargs.set_item("max_version", v)?;
        }
        if let Some(v) = dl_device {
            kwargs.set_item("dl_device", v)?;
        }
        if let Some(v) = copy {
            kwargs.set_item("copy", v)?;
        }
        let array = slf.call_method0("numpy")?;
        array.call_method("__dlpack__", (), Some(&kwargs))
    }

    /// `(device_type, device_id)` in DLPack's codes: `(1, 0)` for the CPU, `(2, N)` for
    /// `cuda:N`.
    fn __dlpack_device__(&self) -> (i32, i64) {
        match self.inner.device() {
            Device::Cpu => (1, 0),
            Device::Cuda(n) => (2, n as i64),
        }
    }

    /// `format(t, spec)`: a 0-d tensor formats as its value (`f"{loss:.3f}"`); others only
    /// with an empty spec (their `str`), as in PyTorch.
    fn __format__(slf: &Bound<'_, Self>, spec: &str) -> PyResult<String> {
        if slf.get().inner.ndim() == 0 {
            let item = slf.call_method0("item")?;
            return item.call_method1("__format__", (spec,))?.extract();
        }
        if spec.is_empty() {
            return slf.str()?.extract();
        }
        Err(PyTypeError::new_err(format!(
            "unsupported format string {spec:?} passed to a Tensor of shape {:?} (only 0-d \
             tensors format as numbers)",
            slf.get().inner.shape()
        )))
    }
}
