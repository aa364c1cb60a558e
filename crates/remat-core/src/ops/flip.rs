//! `flip`: the elements in reverse order along some axes, into a new contiguous tensor (as in
//! PyTorch, a copy: layouts have non-negative strides, so a reversed view cannot be
//! described). Its backward is the same flip of the gradient (differentiable again). On CUDA
//! the strided-copy kernel reads the input through negative strides from its last element.

use super::axes::wrap_dims;
use super::from_vec;
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, fmt_shape, numel, Dims};
use crate::tensor::Tensor;

/// Reverses the axes in `axes` (sorted, distinct, each < ndim).
struct FlipOp {
    axes: Dims,
}

/// `src` (C order of `shape`) with the `flipped` axes reversed, in C order. The last axis is
/// copied a run at a time, forwards or backwards.
fn flip_kernel<T: Scalar>(src: &[T], shape: &[usize], flipped: &[usize]) -> Vec<T> {
    let n = numel(shape);
    let mut out = cpu::with_capacity(n);
    if n == 0 || shape.is_empty() {
        out.extend_from_slice(src);
        return out;
    }
    let last = shape.len() - 1;
    let strides = contiguous_strides(shape);
    let inner = shape[last];
    let reverse_run = flipped.contains(&last);
    // Odometer over the outer axes (C order of the output).
    let mut idx = vec![0usize; last];
    for _ in 0..n / inner {
        let base: usize = (0..last)
            .map(|a| {
                let i = if flipped.contains(&a) {
                    shape[a] - 1 - idx[a]
                } else {
                    idx[a]
                };
                i * strides[a]
            })
            .sum();
        let run = &src[base..base + inner];
        if reverse_run {
            out.extend(run.iter().rev().copied());
        } else {
            out.extend_from_slice(run);
        }
        for a in (0..last).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    out
}

impl Op for FlipOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "flip"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        self.check(x)?;
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let src = cpu::gather::<T>(x.data());
            from_vec(flip_kernel(&src, x.shape(), &self.axes), x.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.check(inputs[0])?;
        crate::cuda::launch::flip("flip", inputs[0], &self.axes)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let back = FlipOp {
            axes: self.axes.clone(),
        };
        Ok(vec![Some(apply(back, &[ctx.grad], &[])?)])
    }
}

impl FlipOp {
    /// A replayed input of another rank is an error, not an out-of-range panic.
    fn check(&self, x: &Tensor) -> Result<()> {
        if self.axes.iter().any(|&a| a >= x.ndim()) {
            return Err(Error::shape(
                "flip",
                format!(
                    "axes {:?} out of range for shape {}",
                    self.axes,
                    fmt_shape(x.shape())
                ),
            ));
        }
        Ok(())
    }
}

/// `x` with the order of elements reversed along `dims` (negative count from the end;
/// distinct). Always a new tensor, as in PyTorch.
pub fn flip(x: &Tensor, dims: &[isize]) -> Result<Tensor> {
    let mut axes = wrap_dims("flip", dims, x.shape())?;
    // A 0-d tensor accepts dim 0 / -1 (PyTorch), which reverses nothing.
    axes.retain(|a| *a < x.ndim());
    axes.sort_unstable();
    apply(FlipOp { axes }, &[x], &[])
}

impl Tensor {
    /// The elements reversed along `dims` (a copy); see [`flip`].
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        flip(self, dims)
    }
}
