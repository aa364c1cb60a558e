//! `repr(tensor)`: NumPy formats the values; the suffix follows PyTorch
//! (`tensor([[1., 2.]], requires_grad=True)`).

use crate::convert::numpy;
use crate::numpy_bridge::to_numpy;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use remat_core::{DType, Device, Tensor};

/// The text of `repr(t)`.
pub fn repr(py: Python<'_>, t: &Tensor) -> PyResult<String> {
    // Device tensors print from a host copy, as in PyTorch.
    let arr = to_numpy(py, &crate::tensor::host(t)?)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("separator", ", ")?;
    kwargs.set_item("prefix", "tensor(")?;
    let body: String = numpy(py)?
        .getattr("array2string")?
        .call((arr,), Some(&kwargs))?
        .extract()?;
    let mut out = format!("tensor({body}");
    if t.numel() == 0 && t.ndim() != 1 {
        let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
        let trail = if dims.len() == 1 { "," } else { "" };
        out.push_str(&format!(", size=({}{trail})", dims.join(", ")));
    }
    if t.device() != Device::Cpu {
        out.push_str(&format!(", device='{}'", t.device()));
    }
    // As PyTorch: the dtypes a literal would not infer (float64, int32) are spelled out.
    if matches!(t.dtype(), DType::F64 | DType::I32) {
        out.push_str(&format!(", dtype=remat.{}", t.dtype()));
    }
    match t.grad_fn() {
        Some(node) => out.push_str(&format!(", grad_fn=<{}>", node.name())),
        None if t.requires_grad() => out.push_str(", requires_grad=True"),
        None => {}
    }
    out.push(')');
    Ok(out)
}
