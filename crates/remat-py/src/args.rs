//! Parsing of argument forms shared by methods and functions: shapes (`*shape` or one
//! tuple), axes (an int or a tuple), devices, and index expressions for `__getitem__`.

use crate::convert::type_name;
use crate::errors::{CoreResultExt, DeviceError, ShapeError};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyList, PySlice, PyString, PyTuple};
use remat_core::ops::IndexItem;
use remat_core::Device;

/// An int-like argument (anything with `__index__`): a TypeError naming `what` for anything
/// else, and a ShapeError naming `op` for an integer beyond the machine range (`2**63`), which
/// is no shape, axis or index of any tensor.
fn index_int(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<isize> {
    if let Ok(v) = obj.extract::<isize>() {
        return Ok(v);
    }
    match obj.call_method0("__index__") {
        Ok(i) => Err(ShapeError::new_err(format!(
            "{op}: {what} out of range: {i} does not fit in a signed 64-bit integer"
        ))),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{op}: {what} must be integers, got {}",
            type_name(obj)
        ))),
    }
}

/// Signed dims from `*shape` arguments: several ints, or one tuple/list of ints.
pub fn signed_dims(op: &str, args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if a.is_instance_of::<PyTuple>() || a.is_instance_of::<PyList>() {
            return a
                .try_iter()?
                .map(|d| index_int(op, "dimensions", &d?))
                .collect();
        }
    }
    args.iter()
        .map(|d| index_int(op, "dimensions", &d))
        .collect()
}

/// A shape from an int or a tuple/list of ints (negative extents are an error).
pub fn shape_of(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims: Vec<isize> = if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        obj.try_iter()?
            .map(|d| index_int(op, "dimensions", &d?))
            .collect::<PyResult<_>>()?
    } else {
        vec![index_int(op, "dimensions", obj)?]
    };
    to_shape(op, &dims)
}

/// A shape from `*shape` arguments.
pub fn shape_from_args(op: &str, args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    to_shape(op, &signed_dims(op, args)?)
}

fn to_shape(op: &str, dims: &[isize]) -> PyResult<Vec<usize>> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                ShapeError::new_err(format!("{op}: negative dimension {d} in shape {dims:?}"))
            })
        })
        .collect()
}

/// An `axis=` argument: None (all axes), an int, or a tuple/list of ints.
pub fn axes(op: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    let Some(obj) = obj else { return Ok(None) };
    if obj.is_none() {
        return Ok(None);
    }
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        return obj
            .try_iter()?
            .map(|a| index_int(op, "axes", &a?))
            .collect::<PyResult<Vec<_>>>()
            .map(Some);
    }
    Ok(Some(vec![index_int(op, "axes", obj)?]))
}

/// The axes and `keepdim` of a reduction, from PyTorch's `dim`/`keepdim` or NumPy's
/// `axis`/`keepdims` (each pair: one or the other).
pub struct ReduceArgs {
    /// The axes (None: all).
    pub dims: Option<Vec<isize>>,
    /// Whether `dim` was an int (not a tuple or list).
    single: bool,
    /// Keep the reduced axes with extent 1.
    pub keepdim: bool,
}

impl ReduceArgs {
    /// Resolve the aliases: `dim` and `axis` both given (not None) is a TypeError naming `op`.
    pub fn new(
        op: &str,
        dim: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        keepdims: Option<bool>,
    ) -> PyResult<Self> {
        let dim = dim.filter(|d| !d.is_none());
        let axis = axis.filter(|a| !a.is_none());
        if dim.is_some() && axis.is_some() {
            return Err(PyTypeError::new_err(format!(
                "{op}: got both dim and its alias axis"
            )));
        }
        let d = dim.or(axis);
        let single =
            d.is_some_and(|d| !(d.is_instance_of::<PyTuple>() || d.is_instance_of::<PyList>()));
        Ok(ReduceArgs {
            // An empty tuple reduces every axis, as PyTorch's `sum(x, ())` does.
            dims: axes(op, d)?.filter(|a| !a.is_empty()),
            single,
            keepdim: keepdims.unwrap_or(keepdim),
        })
    }
    /// The axes as the core ops take them.
    pub fn dims(&self) -> Option<&[isize]> {
        self.dims.as_deref()
    }
    /// The one axis of an op that takes an int `dim` (None when not given); a tuple is a
    /// TypeError naming `op`.
    pub fn single_dim(&self, op: &str) -> PyResult<Option<isize>> {
        match &self.dims {
            None => Ok(None),
            Some(d) if self.single => Ok(Some(d[0])),
            Some(_) => Err(PyTypeError::new_err(format!(
                "{op}: dim must be an int, not a tuple"
            ))),
        }
    }
}

/// NumPy's `out=` argument, which the reductions accept so that `np.sum(t)`, `np.max(t)`
/// etc. (which call `t.sum(axis=None, dtype=None, out=None)`) work: only None.
pub fn no_out(op: &str, out: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match out {
        Some(o) if !o.is_none() => Err(PyTypeError::new_err(format!(
            "{op}: out= is not supported (got {}); use the returned tensor",
            type_name(o)
        ))),
        _ => Ok(()),
    }
}

/// Ints from an int or a tuple/list of ints (`what` names the argument in errors).
pub fn int_list(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<isize>> {
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        return obj.try_iter()?.map(|d| index_int(op, what, &d?)).collect();
    }
    Ok(vec![index_int(op, what, obj)?])
}

/// A device argument: None (the CPU) or a string `"cpu"`, `"cuda"`, `"cuda:N"`.
/// An unknown string raises `DeviceError`.
pub fn device(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    match obj {
        None => Ok(Device::Cpu),
        Some(o) if o.is_none() => Ok(Device::Cpu),
        Some(o) => {
            let s = o.str()?;
            Device::parse(&s.to_cow()?).py()
        }
    }
}

/// The device of `t.cuda(device)`: None (GPU 0), an index `N` (`"cuda:N"`) or a device string
/// naming a GPU. A negative index or a non-CUDA device raises `DeviceError` naming it.
pub fn cuda_device(op: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Device::Cuda(0));
    };
    if obj.downcast::<PyString>().is_ok() {
        return match device(Some(obj))? {
            d @ Device::Cuda(_) => Ok(d),
            d => Err(DeviceError::new_err(format!(
                "{op}: expected a CUDA device, got \"{d}\""
            ))),
        };
    }
    let invalid = || {
        DeviceError::new_err(format!(
            "{op}: invalid device index {}: CUDA device indices are integers >= 0",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    };
    match index_int(op, "device index", obj) {
        Ok(i) => usize::try_from(i).map(Device::Cuda).map_err(|_| invalid()),
        // An integer beyond the machine range (index_int's ShapeError) is no device either.
        Err(e) if e.is_instance_of::<ShapeError>(obj.py()) => Err(invalid()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{op}: device must be an index or a device string, got {}",
            type_name(obj)
        ))),
    }
}

/// One basic item of an index expression.
pub fn index_item(obj: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    if obj.is_none() {
        return Ok(IndexItem::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(IndexItem::Ellipsis);
    }
    if let Ok(s) = obj.downcast::<PySlice>() {
        let part = |name: &str| -> PyResult<Option<isize>> {
            let v = s.getattr(name)?;
            if v.is_none() {
                return Ok(None);
            }
            match index_int("__getitem__", "slice bounds", &v) {
                Ok(i) => Ok(Some(i)),
                // Python clamps slice bounds: an integer beyond the machine range means "past
                // the end" (or "before the start"). Half the range keeps the core's bound
                // arithmetic from overflowing.
                Err(e) => match v.call_method0("__index__") {
                    Ok(i) if i.lt(0)? => Ok(Some(isize::MIN / 2)),
                    Ok(_) => Ok(Some(isize::MAX / 2)),
                    Err(_) => Err(e),
                },
            }
        };
        return Ok(IndexItem::Slice {
            start: part("start")?,
            stop: part("stop")?,
            step: part("step")?.unwrap_or(1),
        });
    }
    match obj.extract::<isize>() {
        Ok(i) => Ok(IndexItem::Int(i)),
        Err(_) => Err(PyTypeError::new_err(format!(
            "__getitem__: only integers, slices, None and ... are valid indices, got {}",
            type_name(obj)
        ))),
    }
}

/// The items of `t[key]`: an int, slice, None, `...`, or a tuple of these.
pub fn index_items(key: &Bound<'_, PyAny>) -> PyResult<Vec<IndexItem>> {
    if let Ok(t) = key.downcast::<PyTuple>() {
        return t.iter().map(|k| index_item(&k)).collect();
    }
    Ok(vec![index_item(key)?])
}
