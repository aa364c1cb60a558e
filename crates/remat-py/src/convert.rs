//! Python / NumPy → Tensor: `remat.tensor` (always copies), `remat.from_numpy` (shares memory
//! where the layout allows) and the conversion of operands (`extract_tensor`).

use crate::errors::{CoreResultExt, DTypeError, ShapeError};
use crate::tensor::PyTensor;
use numpy::npyffi::{NPY_ARRAY_ALIGNED, NPY_ARRAY_WRITEABLE};
use numpy::{Element, PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyList, PyTuple};
use remat_core::layout::Layout;
use remat_core::storage::Storage;
use remat_core::tensor::TensorData;
use remat_core::{DType, Device, Tensor};
use std::sync::Arc;

static NUMPY: GILOnceCell<Py<PyModule>> = GILOnceCell::new();

/// The `numpy` module, imported once.
pub fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    NUMPY
        .get_or_try_init(py, || Ok::<_, PyErr>(py.import("numpy")?.unbind()))
        .map(|m| m.bind(py))
}

/// The NumPy descriptor of a remat dtype. bfloat16 is not a NumPy dtype: it is
/// `ml_dtypes.bfloat16` (the package JAX uses), and a `DTypeError` saying to install it when
/// it is missing.
pub fn np_descr(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    Ok(match dtype {
        DType::F32 => f32::get_dtype(py),
        DType::F64 => f64::get_dtype(py),
        DType::I64 => i64::get_dtype(py),
        DType::I32 => i32::get_dtype(py),
        DType::Bool => bool::get_dtype(py),
        DType::F16 => PyArrayDescr::new(py, "float16")?,
        DType::BF16 => {
            let ml = py.import("ml_dtypes").map_err(|_| {
                DTypeError::new_err(
                    "bfloat16 tensors convert to and from NumPy through the ml_dtypes package, \
                     which is not installed: pip install ml_dtypes (or convert with .float())",
                )
            })?;
            PyArrayDescr::new(py, ml.getattr(intern!(py, "bfloat16"))?)?
        }
    })
}

/// Whether a NumPy descriptor is `ml_dtypes.bfloat16` (kind `V`, so known by its name).
fn is_bfloat16(descr: &Bound<'_, PyArrayDescr>) -> bool {
    descr.itemsize() == 2
        && descr
            .getattr(intern!(descr.py(), "name"))
            .and_then(|n| n.extract::<String>())
            .is_ok_and(|n| n == "bfloat16")
}

/// The value of a Python `float`, `int` or `bool` (subclasses included: `np.float64` is a
/// float). None for anything else.
#[inline]
pub fn python_scalar(obj: &Bound<'_, PyAny>) -> Option<f64> {
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        obj.extract::<f64>().ok()
    } else {
        None
    }
}

/// The dtype a NumPy array becomes by default, as in PyTorch: float64, float32 and float16
/// stay, as does `ml_dtypes.bfloat16` (other floats become float32), int32 stays, other integers become int64 (the widths
/// remat has), bool stays bool. Judged by kind and size, never by byte order: a big-endian
/// float64 array (`">f8"`) is float64 too (the copy made for it is in native order).
fn default_dtype(descr: &Bound<'_, PyArrayDescr>) -> DType {
    if is_bfloat16(descr) {
        return DType::BF16;
    }
    match (descr.kind(), descr.itemsize()) {
        (b'f', 8) => DType::F64,
        (b'f', 2) => DType::F16,
        (b'i', 4) => DType::I32,
        (b'i' | b'u', _) => DType::I64,
        (b'b', _) => DType::Bool,
        _ => DType::F32,
    }
}

/// The dtype of the NumPy array NumPy builds from nested Python sequences, the PyTorch way:
/// integers become int64, bools bool, and floats float32 (Python floats are float32 in
/// remat as in PyTorch, not NumPy's float64).
fn sequence_dtype(descr: &Bound<'_, PyArrayDescr>) -> DType {
    match descr.kind() {
        b'i' | b'u' => DType::I64,
        b'b' => DType::Bool,
        _ => DType::default_float(),
    }
}

/// Whether `obj` is a NumPy array, a NumPy scalar or a Python complex: values whose dtype
/// decides whether remat can take them (an unsupported one is an error, not another type).
pub fn is_numpy_value(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.downcast::<PyUntypedArray>().is_ok() || obj.is_instance_of::<PyComplex>() {
        return Ok(true);
    }
    let generic = numpy(obj.py())?.getattr(intern!(obj.py(), "generic"))?;
    obj.is_instance(&generic)
}

/// Error unless the array holds numbers (bool, int, float).
fn check_numeric(op: &str, descr: &Bound<'_, PyAny>, kind: u8) -> PyResult<()> {
    match kind {
        b'b' | b'i' | b'u' | b'f' => Ok(()),
        _ => Err(DTypeError::new_err(format!(
            "{op}: cannot make a tensor from data of dtype {}; expected numbers (bool, int or \
             float)",
            descr.str().map(|s| s.to_string()).unwrap_or_default()
        ))),
    }
}

/// A tensor over a NumPy array of `dtype`. The array's memory is shared when `share` is set
/// and the array is C-contiguous, aligned, writeable, native-endian and of `dtype`; otherwise
/// a C-contiguous copy is made (by NumPy, once) and the tensor shares that copy.
fn array_to_tensor(
    op: &str,
    arr: &Bound<'_, PyUntypedArray>,
    dtype: DType,
    share: bool,
) -> PyResult<Tensor> {
    let py = arr.py();
    let descr = arr.dtype();
    if !is_bfloat16(&descr) {
        check_numeric(op, descr.as_any(), descr.kind())?;
    }
    let target = np_descr(py, dtype)?;
    // SAFETY: reading the flags field of a live array object.
    let flags = unsafe { (*arr.as_array_ptr()).flags };
    let behaved = flags & (NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE)
        == (NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE);
    let arr = if share && behaved && arr.is_c_contiguous() && descr.is_equiv_to(&target) {
        arr.clone()
    } else {
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", &target)?;
        kwargs.set_item("order", "C")?;
        numpy(py)?
            .getattr("array")?
            .call((arr,), Some(&kwargs))?
            .downcast_into::<PyUntypedArray>()?
    };
    let shape: Vec<usize> = arr.shape().to_vec();
    let len: usize = shape.iter().product();
    // SAFETY: reading the data pointer of a live array object.
    let ptr = unsafe { (*arr.as_array_ptr()).data } as *mut u8;
    let owner: Box<dyn std::any::Any + Send + Sync> = Box::new(arr.into_any().unbind());
    // SAFETY: the array is C-contiguous, aligned and of `dtype`, so `ptr` points to `len`
    // valid elements; the owner box holds a reference to the array, keeping them alive.
    let storage = unsafe { Storage::from_external(ptr, len, dtype, owner) };
    Ok(Tensor::from_data(TensorData {
        storage: Arc::new(storage),
        layout: Layout::contiguous(&shape),
    }))
}

/// `remat.from_numpy(array)`: shares memory with C-contiguous arrays of a remat dtype;
/// other arrays are copied (converted as `remat.tensor` converts them).
pub fn from_numpy(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let arr = obj.downcast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "from_numpy: expected a numpy.ndarray, got {}",
            type_name(obj)
        ))
    })?;
    let dtype = default_dtype(&arr.dtype());
    array_to_tensor("from_numpy", arr, dtype, true)
}

/// `remat.tensor(data, dtype)`: a new leaf holding a copy of `data` (a Tensor, NumPy array,
/// nested sequence or Python scalar). Arrays keep their dtype (see `default_dtype`), Python
/// ints become int64, bools bool and floats float32, unless `dtype` is given.
/// `op` names the calling op in error messages.
pub fn tensor_from_py(op: &str, obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    let py = obj.py();
    if let Ok(t) = obj.downcast::<PyTensor>() {
        let t = &t.get().inner;
        return remat_core::ops::contiguous_copy(t, dtype.unwrap_or(t.dtype())).py();
    }
    if obj.is_exact_instance_of::<PyBool>() {
        let v: bool = obj.extract()?;
        return Ok(Tensor::scalar(v as u8 as f64, dtype.unwrap_or(DType::Bool)));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        let d = dtype.unwrap_or(DType::I64);
        if !d.is_float() {
            let v: i64 = obj.extract().map_err(|_| {
                PyOverflowError::new_err(format!("{op}: {obj} does not fit in {d}"))
            })?;
            return Ok(Tensor::scalar_i64(v, d));
        }
        let v: f64 = obj.extract()?;
        return Ok(Tensor::scalar(v, d));
    }
    if obj.is_exact_instance_of::<PyFloat>() {
        let v: f64 = obj.extract()?;
        return Ok(Tensor::scalar(v, dtype.unwrap_or(DType::default_float())));
    }
    if let Ok(arr) = obj.downcast::<PyUntypedArray>() {
        let dt = dtype.unwrap_or_else(|| default_dtype(&arr.dtype()));
        return array_to_tensor(op, arr, dt, false);
    }
    let is_sequence = obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>();
    // Nested sequences, NumPy scalars and other array-likes: NumPy builds a fresh array.
    let arr = match numpy(py)?.getattr("array")?.call1((obj,)) {
        Ok(a) => a,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            return Err(PyTypeError::new_err(format!(
                "{op}: cannot make a tensor from {}: {}",
                type_name(obj),
                e.value(py)
            )))
        }
        Err(e) if e.is_instance_of::<PyValueError>(py) => {
            return Err(ShapeError::new_err(format!(
                "{op}: cannot make a tensor from {}: {}",
                type_name(obj),
                e.value(py)
            )))
        }
        Err(e) => return Err(e),
    };
    let mut arr = arr.downcast_into::<PyUntypedArray>()?;
    if is_sequence {
        if let Some(wide) = ints_beyond_int64(op, obj, &arr, dtype)? {
            arr = wide;
        }
    }
    let dt = match dtype {
        Some(d) => d,
        None if is_sequence => sequence_dtype(&arr.dtype()),
        None => default_dtype(&arr.dtype()),
    };
    // NumPy makes Python ints of 2^63 and above uint64: as int64 they would wrap around.
    let wraps = || -> PyResult<bool> {
        let max = arr.call_method0(intern!(py, "max"))?;
        max.gt(i64::MAX)
    };
    if is_sequence
        && arr.dtype().kind() == b'u'
        && arr.dtype().itemsize() == 8
        && arr.len() > 0
        && !dt.is_float()
        && dt != DType::Bool
        && wraps()?
    {
        return Err(PyOverflowError::new_err(format!(
            "{op}: an int in the data does not fit in {dt} (values of 2**63 and above)"
        )));
    }
    // The array is fresh, so sharing it is a copy of `data` already.
    array_to_tensor(op, &arr, dt, true)
}

/// What the leaves of nested lists and tuples are: (a float among them, all of them numbers).
/// Floats are Python floats and NumPy floating scalars or arrays; numbers also bools and ints.
fn leaf_kinds(obj: &Bound<'_, PyAny>) -> PyResult<(bool, bool)> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = obj.downcast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = obj.downcast::<PyTuple>() {
        t.iter().collect()
    } else if obj.is_instance_of::<PyFloat>() {
        return Ok((true, true));
    } else if obj.is_instance_of::<PyInt>() {
        // bool is a subclass of int.
        return Ok((false, true));
    } else if let Ok(kind) = obj
        .getattr(intern!(obj.py(), "dtype"))
        .and_then(|d| d.getattr(intern!(obj.py(), "kind")))
        .and_then(|k| k.extract::<String>())
    {
        return Ok((kind == "f", matches!(kind.as_str(), "b" | "i" | "u" | "f")));
    } else {
        return Ok((false, false));
    };
    let (mut float, mut numbers) = (false, true);
    for item in &items {
        let (f, n) = leaf_kinds(item)?;
        float |= f;
        numbers &= n;
    }
    Ok((float, numbers))
}

/// Python ints beyond int64 in nested sequences, the PyTorch way. NumPy turns them into
/// float64 (ints of both signs, or above 2**64) or an object array (next to floats), where
/// PyTorch infers float32 when the data holds a float and int64 (an overflow) when it does not,
/// and converts them to a float dtype but not to an integer one. Returns a float64 array to use
/// instead of an object array of numbers; an `OverflowError` when the ints must become
/// integers; None when NumPy's array stands (the usual case, checked at the cost of a max).
fn ints_beyond_int64<'py>(
    op: &str,
    obj: &Bound<'py, PyAny>,
    arr: &Bound<'py, PyUntypedArray>,
    dtype: Option<DType>,
) -> PyResult<Option<Bound<'py, PyUntypedArray>>> {
    let py = obj.py();
    let kind = arr.dtype().kind();
    let to_float = dtype.is_some_and(|d| d.is_float());
    let huge = match kind {
        b'O' => true,
        // Float data at or beyond int64's ends (NaN compares false): maybe ints NumPy widened
        // (an int just below -2**63 rounds to -2**63 in float64).
        // Two reductions, no copy: this runs for every list of floats.
        b'f' if !to_float && arr.len() > 0 => {
            let two_63 = 9.223_372_036_854_776e18_f64;
            arr.call_method0(intern!(py, "max"))?.ge(two_63)?
                || arr.call_method0(intern!(py, "min"))?.le(-two_63)?
        }
        _ => false,
    };
    if !huge {
        return Ok(None);
    }
    let (float, numbers) = leaf_kinds(obj)?;
    if !numbers {
        // Not numbers: the dtype check reports it.
        return Ok(None);
    }
    let target = dtype.unwrap_or(if float {
        DType::default_float()
    } else {
        DType::I64
    });
    if !target.is_float() {
        return Err(PyOverflowError::new_err(format!(
            "{op}: an int in the data does not fit in {target} (values from 2**63 up or below \
             -2**63)"
        )));
    }
    if kind != b'O' {
        return Ok(None);
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", np_descr(py, DType::F64)?)?;
    let wide = numpy(py)?
        .getattr(intern!(py, "array"))?
        .call((obj,), Some(&kwargs))?;
    Ok(Some(wide.downcast_into::<PyUntypedArray>()?))
}

/// A Tensor, or anything `remat.tensor` accepts converted with the default dtype rules;
/// conversion errors name `op`.
pub fn extract_tensor(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = obj.downcast::<PyTensor>() {
        return Ok(t.get().inner.clone());
    }
    tensor_from_py(op, obj, None)
}

/// The dtype a Python scalar takes next to a tensor of dtype `like`, as in PyTorch: the
/// tensor's own dtype unless the scalar is of a higher category (a float next to integers
/// or bools gives float32, an int next to bools int64); so `float32_tensor * 2.5` stays
/// float32 and `int_tensor * 2.5` is float32.
fn scalar_dtype(obj: &Bound<'_, PyAny>, like: DType) -> DType {
    use remat_core::dtype::Category;
    let cat = if obj.is_instance_of::<PyBool>() {
        Category::Bool
    } else if obj.is_instance_of::<PyInt>() {
        Category::Integer
    } else {
        Category::Float
    };
    match (cat, like.category()) {
        (Category::Float, c) if c != Category::Float => DType::default_float(),
        (Category::Integer, Category::Bool) => DType::I64,
        _ => like,
    }
}

/// What a Python scalar operand is made like: the dtype (through `scalar_dtype`) and the
/// device of the tensor it meets. A bare `DType` means a CPU tensor of that dtype.
#[derive(Clone, Copy)]
pub struct Like {
    dtype: DType,
    device: Device,
}

impl From<&Tensor> for Like {
    fn from(t: &Tensor) -> Self {
        Like {
            dtype: t.dtype(),
            device: t.device(),
        }
    }
}

impl From<DType> for Like {
    fn from(dtype: DType) -> Self {
        Like {
            dtype,
            device: Device::Cpu,
        }
    }
}

/// An operand next to `like`: Python scalars become 0-d tensors of the dtype
/// `scalar_dtype` picks (no promotion of float32 to float64) on `like`'s device (as PyTorch
/// lets a number meet a CUDA tensor), anything else goes through `extract_tensor`.
#[inline]
pub fn operand(op: &str, obj: &Bound<'_, PyAny>, like: impl Into<Like>) -> PyResult<Tensor> {
    if let Ok(t) = obj.downcast::<PyTensor>() {
        return Ok(t.get().inner.clone());
    }
    let like = like.into();
    if let Some(v) = python_scalar(obj) {
        let d = scalar_dtype(obj, like.dtype);
        let exact = (!d.is_float() && obj.is_instance_of::<PyInt>())
            .then(|| obj.extract::<i64>().ok())
            .flatten();
        let t = match exact {
            Some(i) => Tensor::scalar_i64(i, d),
            None => Tensor::scalar(v, d),
        };
        return if like.device == Device::Cpu {
            Ok(t)
        } else {
            t.to_device(like.device).py()
        };
    }
    tensor_from_py(op, obj, None)
}

/// Two operands of a binary function, either of which may be a Python scalar (it takes the
/// other one's dtype).
pub fn operand_pair(
    op: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<(Tensor, Tensor)> {
    if let Ok(ta) = a.downcast::<PyTensor>() {
        let ta = ta.get().inner.clone();
        let tb = operand(op, b, &ta)?;
        return Ok((ta, tb));
    }
    if let Ok(tb) = b.downcast::<PyTensor>() {
        let tb = tb.get().inner.clone();
        let ta = operand(op, a, &tb)?;
        return Ok((ta, tb));
    }
    let ta = extract_tensor(op, a)?;
    let tb = operand(op, b, &ta)?;
    Ok((ta, tb))
}

/// The Python type name of `obj` (for messages).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_string())
}
