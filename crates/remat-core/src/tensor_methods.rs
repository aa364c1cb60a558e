//! Method-call conveniences on [`Tensor`] for the core ops (`x.add(&y)?.sum(None, false)?`).
//! Each method only forwards to the function in [`crate::ops`] of the same name; ops living
//! in their own files define their methods next to the op.

use crate::error::Result;
use crate::ops;
use crate::tensor::Tensor;

impl Tensor {
    /// `self + other` with broadcasting; see [`ops::add`].
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        ops::add(self, other)
    }
    /// `self - other` with broadcasting; see [`ops::sub`].
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        ops::sub(self, other)
    }
    /// `self * other` with broadcasting; see [`ops::mul`].
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        ops::mul(self, other)
    }
    /// `self / other` with broadcasting; see [`ops::div`].
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        ops::div(self, other)
    }
    /// Matrix product with `np.matmul` rules; see [`ops::matmul()`].
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        ops::matmul(self, other)
    }
    /// Sum over `axes` (None: all axes); see [`ops::sum`].
    pub fn sum(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Tensor> {
        ops::sum(self, axes, keepdims)
    }
    /// The same elements with another shape; see [`ops::reshape`].
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        ops::reshape(self, shape)
    }
}
