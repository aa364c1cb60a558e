//! The `remat.DType` class (`remat.float32`, `remat.float64`, `remat.int64`, `remat.int32`,
//! `remat.bool`, and PyTorch's aliases `float`, `double`, `long`) and the parsing of every form a
//! `dtype=` argument may take: a DType, a string, a NumPy dtype or NumPy scalar type.

use crate::errors::DTypeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyString;
use remat_core::DType;

/// A tensor element type: ``remat.float32``, ``float64``, ``bfloat16``, ``float16``, ``int64``,
/// ``int32`` or ``bool``.
///
/// There is one object per dtype, so ``t.dtype is remat.float32`` holds; PyTorch's aliases
/// ``remat.float`` (float32), ``remat.double`` (float64) and ``remat.long`` (int64), and NumPy's
/// spelling ``remat.bool_``, are the same objects. A dtype compares equal to its name, the matching
/// NumPy dtype and NumPy scalar type, and hashes like its name (so it can share dictionary keys
/// with names); ``np.dtype(t.dtype)`` works through the ``dtype`` property. Every ``dtype=``
/// argument takes a DType, a name (``"float32"``, ``"f4"``, ...), a NumPy dtype or scalar type, or
/// Python's ``float`` (float64), ``int`` (int64) or ``bool``. A DType pickles as the module
/// attribute. Its properties: ``name``, ``itemsize`` (bytes per element), ``is_floating_point``,
/// ``is_signed`` and ``dtype`` (the NumPy dtype).
///
/// Raises
/// ------
/// TypeError
///     When ``remat.DType(...)`` is called: it has no constructor; use the module attributes.
///
/// Examples
/// --------
/// >>> remat.float32
/// remat.float32
/// >>> remat.tensor([1, 2]).dtype
/// remat.int64
/// >>> remat.tensor([1.0]).dtype is remat.float32
/// True
/// >>> remat.float32 == "float32", remat.float32 == np.float32, remat.long is remat.int64
/// (True, True, True)
/// >>> remat.float64.itemsize, remat.float64.is_floating_point, remat.int32.name
/// (8, True, 'int32')
/// >>> np.dtype(remat.int32)
/// dtype('int32')
/// >>> remat.zeros(2, dtype="float64").dtype
/// remat.float64
#[pyclass(name = "DType", module = "remat", frozen)]
pub struct PyDType {
    /// The engine's dtype.
    pub dtype: DType,
}

/// One shared object per dtype, in `DType::ALL` order.
static OBJECTS: [GILOnceCell<Py<PyDType>>; 7] = [
    GILOnceCell::new(),
    GILOnceCell::new(),
    GILOnceCell::new(),
    GILOnceCell::new(),
    GILOnceCell::new(),
    GILOnceCell::new(),
    GILOnceCell::new(),
];
static NP_DTYPE: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// `numpy.dtype`, imported once.
fn np_dtype_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    NP_DTYPE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("dtype")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// The shared `remat.float32` / `remat.int64` / ... object for `dtype` (tensors hand out
/// these, so `t.dtype is remat.float32` holds).
pub fn dtype_object(py: Python<'_>, dtype: DType) -> PyResult<Py<PyDType>> {
    let i = DType::ALL.iter().position(|&d| d == dtype).unwrap_or(0);
    let cell = &OBJECTS[i];
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
        "{op}: {name} is not a supported dtype; remat supports float32, float64, \
         bfloat16, float16, int64, int32 and bool"
    ))
}

/// Parse a `dtype=` argument: a DType, a name (`"float32"`, `"int64"`, `"bool"`), a NumPy
/// dtype or scalar type, or Python's `float`, `int`, `bool`.
/// Anything else raises `DTypeError`.
pub fn parse_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    try_parse(obj).ok_or_else(|| {
        let shown = obj
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "?".to_string());
        DTypeError::new_err(format!(
            "dtype: remat supports float32, float64, bfloat16, float16, int64, int32 and bool, \
             got {shown}"
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
    /// NumPy-style name: `"float32"`, `"int64"`, `"bool"`, ...
    #[getter]
    fn name(&self) -> &'static str {
        self.dtype.name()
    }
    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size()
    }
    /// Whether the dtype is a floating-point one (float32, float64, bfloat16, float16).
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dtype.is_float()
    }
    /// Whether the dtype is signed (every remat dtype but bool).
    #[getter]
    fn is_signed(&self) -> bool {
        self.dtype != DType::Bool
    }
    /// The matching NumPy dtype (also lets `np.dtype(remat.float32)` work).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(crate::convert::np_descr(py, self.dtype)?.into_any())
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
    /// Pickles as the module attribute (`remat.float32`, `remat.int64`, ...).
    fn __reduce__(&self) -> &'static str {
        self.dtype.name()
    }
}

/// The default float dtype, as PyTorch's ``torch.get_default_dtype``: what Python floats,
/// float constructors given no ``dtype`` (``zeros``, ``rand``, ``tensor([1.0])``, module
/// parameters) and float results of integer inputs (``arange(3) / 2``) take.
///
/// Returns
/// -------
/// DType
///     ``remat.float32`` unless ``remat.set_default_dtype`` chose ``remat.float64``.
///
/// Raises
/// ------
/// None
///     Nothing is raised.
///
/// Examples
/// --------
/// >>> remat.get_default_dtype()
/// remat.float32
#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> PyResult<Py<PyDType>> {
    dtype_object(py, DType::default_float())
}

/// Set the default float dtype, as PyTorch's ``torch.set_default_dtype``; one setting for the
/// process (every thread).
///
/// Tensors made afterwards without a ``dtype`` take it wherever PyTorch's take the default:
/// Python floats and float lists, ``zeros``/``ones``/``empty``/``full`` with a float,
/// ``rand``/``randn``, ``arange``/``linspace`` with floats, module parameters, and the float
/// results of integer inputs. Existing tensors keep their dtype. A tensor's ``repr`` spells out
/// a float dtype other than the default, as PyTorch's does.
///
/// Parameters
/// ----------
/// d : DType
///     ``remat.float32`` or ``remat.float64``.
///
/// Returns
/// -------
/// None
///     The setting changes.
///
/// Raises
/// ------
/// DTypeError
///     When `d` is not a floating-point dtype (``TypeError`` also names it: ``DTypeError``
///     subclasses it).
///
/// Examples
/// --------
/// >>> remat.set_default_dtype(remat.float64)
/// >>> remat.tensor([1.5]).dtype
/// remat.float64
/// >>> remat.tensor([1.5], dtype=remat.float32)
/// tensor([1.5000], dtype=remat.float32)
/// >>> remat.set_default_dtype(remat.float32)
#[pyfunction]
fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let dt = parse_dtype(d)?;
    DType::set_default_float(dt).map_err(crate::errors::to_pyerr)
}

/// Register the class and one instance per dtype, bool as `bool_` (NumPy's spelling; the
/// package adds PyTorch's `remat.bool`, `float`, `double` and `long` without shadowing the
/// builtins in the extension's namespace).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyDType>()?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    for d in DType::ALL {
        let name = if d == DType::Bool { "bool_" } else { d.name() };
        m.add(name, dtype_object(py, d)?)?;
    }
    Ok(())
}
