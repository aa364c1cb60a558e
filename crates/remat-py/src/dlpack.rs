//! DLPack and `format()` for tensors. The exchange itself is `remat_core::dlpack` (the C
//! structs, export over the tensor's storage, import with the producer's deleter as the
//! storage's owner); this file wraps its pointers in Python capsules, as the DLPack Python
//! protocol names them: `"dltensor"` (legacy) or `"dltensor_versioned"` (DLPack 1.x, when
//! the consumer passes `max_version >= (1, 0)`), renamed `"used_..."` once consumed. A
//! capsule nobody consumed deletes its tensor when it is garbage-collected.

use crate::errors::CoreResultExt;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::{ffi, intern};
use remat_core::dlpack::{self, Managed};
use remat_core::Device;
use std::ffi::CStr;

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

/// The capsule destructor: deletes the managed tensor unless a consumer took it (renamed
/// the capsule).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed; the name checks tell which
    // ABI its pointer has, and an unconsumed capsule still owns its managed tensor.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr());
            Managed::Legacy(p as *mut dlpack::DLManagedTensor).delete();
        } else if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr());
            Managed::Versioned(p as *mut dlpack::DLManagedTensorVersioned).delete();
        }
    }
}

/// Whether a `max_version` argument asks for (accepts) the versioned ABI: a tuple whose major
/// version is at least 1.
fn wants_versioned(max_version: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match max_version {
        Some(v) if !v.is_none() => Ok(v.get_item(0)?.extract::<u32>()? >= 1),
        _ => Ok(false),
    }
}

/// `remat._from_dlpack_capsule(capsule)`: the tensor viewing a DLPack capsule's memory (the
/// capsule is marked consumed; the producer's deleter runs when the tensor's storage goes).
#[pyfunction]
pub fn _from_dlpack_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let ptr = capsule.as_ptr();
    // SAFETY: `ptr` is a live object; the capsule calls only read its name and pointer, and
    // the rename hands ownership of the managed tensor to `import`.
    let managed = unsafe {
        if ffi::PyCapsule_IsValid(ptr, VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(ptr, VERSIONED.as_ptr());
            ffi::PyCapsule_SetName(ptr, USED_VERSIONED.as_ptr());
            Managed::Versioned(p as *mut dlpack::DLManagedTensorVersioned)
        } else if ffi::PyCapsule_IsValid(ptr, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(ptr, LEGACY.as_ptr());
            ffi::PyCapsule_SetName(ptr, USED_LEGACY.as_ptr());
            Managed::Legacy(p as *mut dlpack::DLManagedTensor)
        } else {
            ffi::PyErr_Clear();
            return Err(PyValueError::new_err(
                "from_dlpack: expected an unconsumed DLPack capsule (named 'dltensor' or \
                 'dltensor_versioned')",
            ));
        }
    };
    // SAFETY: the capsule held a live managed tensor of the ABI its name says, which is now
    // ours (renamed) and handed to `import`.
    unsafe { dlpack::import(managed) }.py().map(wrap)
}

/// `remat._dlpack_stream(index)`: the handle of remat's compute stream on `cuda:index`, to
/// pass to a CUDA producer's `__dlpack__(stream=...)`.
#[pyfunction]
pub fn _dlpack_stream(index: usize) -> PyResult<usize> {
    dlpack::stream_handle(Device::Cuda(index)).py()
}

/// Add the DLPack functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_from_dlpack_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(_dlpack_stream, m)?)?;
    Ok(())
}

#[pymethods]
impl PyTensor {
    /// A DLPack capsule over this tensor's memory (no copy), on the CPU or CUDA. A tensor that
    /// requires grad must be detached first, as in PyTorch. `stream` is the consumer's CUDA
    /// stream: remat's own stream is synchronised before the capsule is returned, so any
    /// consumer stream sees the finished values. `max_version >= (1, 0)` gives a versioned
    /// capsule; `dl_device` other than the tensor's own, and `copy=True`, raise BufferError
    /// (export the result of `.to(...)` or `.clone()` instead).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<PyObject>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let _ = stream; // remat's stream is synchronised by the export
        if let Some(d) = dl_device.filter(|d| !d.is_none()) {
            let own = slf.call_method0(intern!(py, "__dlpack_device__"))?;
            if !d.eq(&own)? {
                return Err(PyBufferError::new_err(format!(
                    "__dlpack__: the tensor lives on DLPack device {own}, not {d}; move it \
                     with .to(...) first"
                )));
            }
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "__dlpack__: copy=True is not supported; export t.clone() instead",
            ));
        }
        let versioned = wants_versioned(max_version.as_ref())?;
        let managed = dlpack::export(&slf.get().inner, versioned).py()?;
        let (ptr, name) = match managed {
            Managed::Legacy(p) => (p as *mut std::ffi::c_void, LEGACY),
            Managed::Versioned(p) => (p as *mut std::ffi::c_void, VERSIONED),
        };
        // SAFETY: `ptr` is the managed tensor just made; the capsule owns it (its destructor
        // deletes it unless a consumer renames the capsule first).
        let capsule = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
        if capsule.is_null() {
            // SAFETY: no capsule took the managed tensor; it is still ours to delete.
            unsafe { managed.delete() };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: PyCapsule_New returned a new reference.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) })
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
