//! Tensor → NumPy: `numpy()` returns a view of the tensor's storage (any non-negative strides,
//! broadcast axes included) whose base object keeps the storage alive.

use numpy::npyffi::{self, npy_intp, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::PyArrayDescr;
use pyo3::prelude::*;
use remat_core::{DType, Device, Tensor};
use std::sync::Arc;

/// The base object of NumPy views of tensors: holds the storage so the memory outlives the
/// tensor when only the array is left.
#[pyclass(name = "_StorageOwner", module = "remat", frozen)]
pub struct StorageOwner {
    #[allow(dead_code)] // held only to keep the storage alive
    storage: Arc<remat_core::storage::Storage>,
}

fn descr(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    crate::convert::np_descr(py, dtype)
}

/// A NumPy array viewing `t`'s elements (no copy). Broadcast views (a stride of 0 on an axis
/// longer than 1) are read-only, like `np.broadcast_to`, and so is the view of a tensor that
/// requires grad or whose memory a graph holds for backward: a write through it would bypass
/// the version counter and silently change the values backward computes with (PyTorch refuses
/// `.numpy()` on tensors that require grad; a read-only view keeps reading and printing
/// working). Other views are writeable and share memory with the tensor.
pub fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    if t.device() != Device::Cpu {
        // Host copy for device tensors, when a device backend exists.
        return Err(crate::errors::DeviceError::new_err(format!(
            "numpy: tensors on {} cannot be viewed from NumPy",
            t.device()
        )));
    }
    let np_dtype = descr(py, t.dtype())?;
    let storage = t.storage().clone();
    let layout = t.layout();
    let item = t.dtype().size();
    let mut dims: Vec<npy_intp> = layout.shape.iter().map(|&d| d as npy_intp).collect();
    let mut strides: Vec<npy_intp> = layout
        .strides
        .iter()
        .map(|&s| (s * item) as npy_intp)
        .collect();
    let broadcast = layout
        .shape
        .iter()
        .zip(layout.strides.iter())
        .any(|(&d, &s)| s == 0 && d > 1);
    let flags = if broadcast || t.requires_grad() || t.storage().saved_for_backward() {
        0
    } else {
        NPY_ARRAY_WRITEABLE
    };
    // An empty view may not point anywhere useful: keep the storage base pointer then.
    let offset = if t.numel() == 0 { 0 } else { layout.offset };
    // SAFETY: `offset` indexes into the storage (the layout is valid for it), and the base
    // object set below keeps the storage alive for as long as the array exists.
    let data = unsafe { storage.as_ptr().add(offset * item) };
    let owner = Py::new(py, StorageOwner { storage })?;
    // SAFETY: dims/strides describe `ndim` axes within the storage; NumPy steals the descr
    // reference and, through SetBaseObject, the owner reference.
    unsafe {
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            PY_ARRAY_API.get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            numpy::PyArrayDescrMethods::into_dtype_ptr(np_dtype),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data.cast(),
            flags,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr().cast(), owner.into_ptr()) != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}
