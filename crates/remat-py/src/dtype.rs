//! The `remat.DType` class (`remat.float32`, `remat.float64`) and the parsing of every form a
//! `dtype=` argument may take: a DType, a string, a NumPy dtype or NumPy scalar type.

use crate::errors::DTypeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyString;
use remat_core::DType;

/// A tensor element type. Compares equal to the matching NumPy dtypes and names.
#[pyclass(name = "DType", module = "remat", frozen)]
pub struct PyDType {
    /// The engine's dtype.
    pub dtype: DType,
}

static F32: GILOnceCell<Py<PyDType>> = GILOnceCell::new();
static F64: GILOnceCell<Py<PyDType>> = GILOnceCell::new();
static NP_DTYPE: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// `numpy.dtype`, imported once.
fn np_dtype_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    NP_DTYPE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("dtype")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// The shared `remat.float32` / `remat.float64` object for `dtype` (tensors hand out these,
/// so `t.dtype is remat.float32` holds).
pub fn dtype_object(py: Python<'_>, dtype: DType) -> PyResult<Py<PyDType>> {
    let cell = match dtype {
        DType::F32 => &F32,
        DType::F64 => &F64,
    };
    cell.get_or_try_init(py, || Py::new(py, PyDType { dtype }))
        .map(|o| o.clone_ref(py))
}

/// The dtype `obj` names, or None if it names none that remat knows (never raises).
pub fn try_parse(obj: &Bound<'_, PyAny>) -> Option<DType> {
    if let Ok(d) = obj.downcast::<PyDType>() {
        return Some(d.get().dtype);
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        // The engine's own names first; other spellings ("f4", "<f8") via NumPy below.
        if let Some(d) = DType::parse(&s.to_cow().ok()?) {
            return Some(d);
        }
    }
    if obj.is_none() {
        return None;
    }
    // NumPy dtypes, NumPy scalar types and Python's `float`: ask NumPy for the name.
    let np = np_dtype_fn(obj.py()).ok()?;
    let d = np.call1((obj,)).ok()?;
    let name = d.getattr("name").ok()?;
    DType::parse(&name.downcast::<PyString>().ok()?.to_cow().ok()?)
}

/// The name of the NumPy dtype `obj` denotes (`"int32"` for `"int32"`, `np.int32`,
/// `np.dtype("<i4")`), or None when it denotes none (never raises). `None` denotes no dtype
/// here, although NumPy reads it as float64.
pub fn numpy_dtype_name(obj: &Bound<'_, PyAny>) -> Option<String> {
    if obj.is_none() {
        return None;
    }
    let d = np_dtype_fn(obj.py()).ok()?.call1((obj,)).ok()?;
    Some(d.getattr("name").ok()?.str().ok()?.to_string())
}

/// The `DTypeError` of `op` for a dtype that NumPy knows and remat does not support.
pub fn unsupported_dtype(op: &str, name: &str) -> PyErr {
    DTypeError::new_err(format!(
        "{op}: {name} is not a supported dtype; remat supports float32 and float64"
    ))
}

/// Parse a `dtype=` argument: a DType, `"float32"`/`"float64"`, a NumPy dtype or scalar type.
/// Anything else raises `DTypeError`.
pub fn parse_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    try_parse(obj).ok_or_else(|| {
        let shown = obj
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "?".to_string());
        DTypeError::new_err(format!(
            "dtype: remat supports float32 and float64, got {shown}"
        ))
    })
}

/// Parse an optional `dtype=` argument (None: not given).
pub fn parse_opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        Some(o) if !o.is_none() => parse_dtype(o).map(Some),
        _ => Ok(None),
    }
}

#[pymethods]
impl PyDType {
    /// NumPy-style name: `"float32"` or `"float64"`.
    #[getter]
    fn name(&self) -> &'static str {
        self.dtype.name()
    }
    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size()
    }
    /// Always True: remat's dtypes are floating point.
    #[getter]
    fn is_floating_point(&self) -> bool {
        true
    }
    /// The matching NumPy dtype (also lets `np.dtype(remat.float32)` work).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        np_dtype_fn(py)?.call1((self.dtype.name(),))
    }
    fn __str__(&self) -> &'static str {
        self.dtype.name()
    }
    fn __repr__(&self) -> String {
        format!("remat.{}", self.dtype.name())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        try_parse(other) == Some(self.dtype)
    }
    fn __ne__(&self, other: &Bound<'_, PyAny>) -> bool {
        try_parse(other) != Some(self.dtype)
    }
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        PyString::new(py, self.dtype.name()).hash()
    }
    /// Pickles as the module attribute `remat.float32` / `remat.float64`.
    fn __reduce__(&self) -> &'static str {
        self.dtype.name()
    }
}

/// Register the class and the `float32` / `float64` instances.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyDType>()?;
    m.add("float32", dtype_object(py, DType::F32)?)?;
    m.add("float64", dtype_object(py, DType::F64)?)?;
    Ok(())
}
