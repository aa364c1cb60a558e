//! Autocast's thread-local state (`remat_core::autocast`) for Python: the switches PyTorch
//! exposes as `torch.is_autocast_enabled` and the like, and the region object behind
//! `remat.autocast`'s `__enter__`/`__exit__` (the context manager itself, with its warnings
//! and its decorator form, is in `python/remat/amp/autocast_mode.py`).

use crate::convert::type_name;
use crate::dtype::dtype_object;
use crate::errors::CoreResultExt;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use remat_core::autocast::{self, AutocastGuard};
use remat_core::{DType, Device};

/// The device kind a `device_type` string names ("cpu" or "cuda"), as PyTorch's autocast
/// takes it: a string, not a device.
fn device_kind(op: &str, device_type: &Bound<'_, PyAny>) -> PyResult<Device> {
    let Ok(s) = device_type.extract::<String>() else {
        return Err(PyValueError::new_err(format!(
            "{op}: expected `device_type` of type `str`, got: `{}`",
            type_name(device_type)
        )));
    };
    match s.as_str() {
        "cpu" => Ok(Device::Cpu),
        "cuda" => Ok(Device::Cuda(0)),
        _ => Err(PyRuntimeError::new_err(format!(
            "{op}: user specified an unsupported autocast device_type '{s}' (remat autocasts \
             'cpu' and 'cuda')"
        ))),
    }
}

fn dtype_arg(dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    crate::dtype::parse_dtype(dtype)
}

/// Whether autocast is on for a device kind on this thread (PyTorch's
/// ``torch.is_autocast_enabled``).
///
/// Parameters
/// ----------
/// device_type : str, optional
///     ``"cpu"`` or ``"cuda"``. Default: ``None``, which asks about CUDA, as PyTorch's
///     argument-less form does.
///
/// Returns
/// -------
/// bool
///     ``True`` inside an enabled ``remat.autocast(device_type)`` region.
///
/// Raises
/// ------
/// RuntimeError
///     When ``device_type`` names a device kind autocast does not know.
///
/// Examples
/// --------
/// >>> remat.is_autocast_enabled("cpu")
/// False
/// >>> with remat.autocast("cpu"):
/// ...     remat.is_autocast_enabled("cpu")
/// True
#[pyfunction]
#[pyo3(signature = (device_type=None))]
fn is_autocast_enabled(device_type: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let device = match device_type {
        None => Device::Cuda(0),
        Some(d) => device_kind("is_autocast_enabled", d)?,
    };
    Ok(autocast::is_enabled(device))
}

/// Turn autocast on or off for a device kind on this thread, outside any region (PyTorch's
/// ``torch.set_autocast_enabled``; ``remat.autocast`` is the usual way).
///
/// Parameters
/// ----------
/// device_type : str
///     ``"cpu"`` or ``"cuda"``.
/// enabled : bool
///     The new setting.
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// RuntimeError
///     When ``device_type`` names a device kind autocast does not know.
///
/// Examples
/// --------
/// >>> remat.set_autocast_enabled("cpu", True)
/// >>> remat.is_autocast_enabled("cpu")
/// True
/// >>> remat.set_autocast_enabled("cpu", False)
#[pyfunction]
fn set_autocast_enabled(device_type: &Bound<'_, PyAny>, enabled: bool) -> PyResult<()> {
    autocast::set_enabled(device_kind("set_autocast_enabled", device_type)?, enabled);
    Ok(())
}

/// The lower-precision dtype autocast casts to on a device kind (PyTorch's
/// ``torch.get_autocast_dtype``): bfloat16 on the CPU and float16 on CUDA unless changed.
///
/// Parameters
/// ----------
/// device_type : str
///     ``"cpu"`` or ``"cuda"``.
///
/// Returns
/// -------
/// dtype
///     ``remat.bfloat16`` or ``remat.float16``.
///
/// Raises
/// ------
/// RuntimeError
///     When ``device_type`` names a device kind autocast does not know.
///
/// Examples
/// --------
/// >>> remat.get_autocast_dtype("cpu")
/// remat.bfloat16
/// >>> remat.get_autocast_dtype("cuda")
/// remat.float16
#[pyfunction]
fn get_autocast_dtype(py: Python<'_>, device_type: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    let dtype = autocast::dtype(device_kind("get_autocast_dtype", device_type)?);
    Ok(dtype_object(py, dtype)?.into_any())
}

/// Set the lower-precision dtype autocast casts to on a device kind (PyTorch's
/// ``torch.set_autocast_dtype``).
///
/// Parameters
/// ----------
/// device_type : str
///     ``"cpu"`` or ``"cuda"``.
/// dtype : dtype
///     ``remat.bfloat16`` or ``remat.float16``.
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// DTypeError
///     When ``dtype`` is not a half-precision float.
/// RuntimeError
///     When ``device_type`` names a device kind autocast does not know.
///
/// Examples
/// --------
/// >>> remat.set_autocast_dtype("cpu", remat.float16)
/// >>> remat.get_autocast_dtype("cpu")
/// remat.float16
/// >>> remat.set_autocast_dtype("cpu", remat.bfloat16)
#[pyfunction]
fn set_autocast_dtype(device_type: &Bound<'_, PyAny>, dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    let device = device_kind("set_autocast_dtype", device_type)?;
    autocast::set_dtype(device, dtype_arg(dtype)?).py()
}

/// Whether autocast caches the casts of parameters for the outermost region (PyTorch's
/// ``torch.is_autocast_cache_enabled``).
///
/// Returns
/// -------
/// bool
///     ``True`` unless turned off (``cache_enabled=False`` or
///     ``remat.set_autocast_cache_enabled(False)``).
///
/// Raises
/// ------
/// TypeError
///     When given an argument (it takes none).
///
/// Examples
/// --------
/// >>> remat.is_autocast_cache_enabled()
/// True
/// >>> with remat.autocast("cpu", cache_enabled=False):
/// ...     remat.is_autocast_cache_enabled()
/// False
#[pyfunction]
fn is_autocast_cache_enabled() -> bool {
    autocast::is_cache_enabled()
}

/// Turn the cache of parameter casts on or off on this thread (PyTorch's
/// ``torch.set_autocast_cache_enabled``).
///
/// Parameters
/// ----------
/// enabled : bool
///     The new setting.
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// TypeError
///     When ``enabled`` is not a bool.
///
/// Examples
/// --------
/// >>> remat.set_autocast_cache_enabled(False)
/// >>> remat.is_autocast_cache_enabled()
/// False
/// >>> remat.set_autocast_cache_enabled(True)
#[pyfunction]
fn set_autocast_cache_enabled(enabled: bool) {
    autocast::set_cache_enabled(enabled)
}

/// Drop this thread's cached parameter casts (PyTorch's ``torch.clear_autocast_cache``; the
/// outermost ``remat.autocast`` region does so when it ends).
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// TypeError
///     When given an argument (it takes none).
///
/// Examples
/// --------
/// >>> remat.clear_autocast_cache()
#[pyfunction]
fn clear_autocast_cache() {
    autocast::clear_cache()
}

/// One entered autocast region: `exit()` restores the state before it. It belongs to the
/// thread that entered it.
#[pyclass(unsendable, name = "_AutocastRegion", module = "remat._remat")]
pub struct AutocastRegion {
    guard: Option<AutocastGuard>,
}

#[pymethods]
impl AutocastRegion {
    /// Leave the region (once; later calls do nothing).
    fn exit(&mut self) {
        self.guard.take();
    }
}

/// Enter a region for `remat.autocast.__enter__`: the dtype is checked only when enabled.
#[pyfunction]
#[pyo3(signature = (device_type, dtype, enabled, cache_enabled))]
fn _autocast_enter(
    device_type: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    enabled: bool,
    cache_enabled: Option<bool>,
) -> PyResult<AutocastRegion> {
    let device = device_kind("autocast", device_type)?;
    let dtype = dtype.map(dtype_arg).transpose()?;
    let guard = autocast::enter(device, dtype, enabled, cache_enabled).py()?;
    Ok(AutocastRegion { guard: Some(guard) })
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AutocastRegion>()?;
    m.add_function(wrap_pyfunction!(is_autocast_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(set_autocast_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(get_autocast_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(set_autocast_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(is_autocast_cache_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(set_autocast_cache_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(clear_autocast_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_enter, m)?)?;
    Ok(())
}
