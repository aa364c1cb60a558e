//! `all`/`any` over axes: bool results for every input dtype (nonzero, NaN included, is
//! true). The input becomes a bool tensor (one cast) and the byte rows reduce with `&`/`|`
//! through the shared row-reduction kernel (parallel across rows); CUDA tensors go through
//! the host. Never recorded.

use super::reduce::{reduced_shape, resolve_axes};
use super::{cast, from_vec};
use crate::cpu;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

fn logical_reduce(
    op: &str,
    x: &Tensor,
    axes: Option<&[isize]>,
    keepdims: bool,
    init: u8,
    f: fn(u8, u8) -> u8,
) -> Result<Tensor> {
    if x.device() != Device::Cpu {
        // On a GPU through the host (a copy each way; the result is a small bool tensor).
        return super::on_host(op, x, |h| logical_reduce(op, h, axes, keepdims, init, f));
    }
    let axes = resolve_axes(op, axes, x.ndim())?;
    let shape = reduced_shape(x.shape(), &axes, keepdims);
    cpu::catch_oom(op, || {
        let b = cast(&x.detach(), DType::Bool)?;
        Ok(from_vec(
            cpu::reduce::<u8, _>(b.data(), &axes, init, f),
            &shape,
        ))
    })
}

/// Whether every element over `axes` (None: all axes) is nonzero; a bool tensor (an empty
/// reduction is true).
pub fn all(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    logical_reduce("all", x, axes, keepdims, 1, |a, b| a & b)
}

/// Whether any element over `axes` (None: all axes) is nonzero; a bool tensor (an empty
/// reduction is false).
pub fn any(x: &Tensor, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
    logical_reduce("any", x, axes, keepdims, 0, |a, b| a | b)
}

impl Tensor {
    /// Whether every element over `axes` (None: all) is nonzero; see [`all`].
    pub fn all(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
        all(self, axes, keepdims)
    }
    /// Whether any element over `axes` (None: all) is nonzero; see [`any`].
    pub fn any(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
        any(self, axes, keepdims)
    }
}
