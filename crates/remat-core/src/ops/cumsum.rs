//! `cumsum(dim)`: inclusive prefix sums along one axis. The CPU kernel scans each slab
//! `[outer, n, inner]` of the contiguous input (a running row of `inner` sums, so the last
//! axis is a plain per-row scan), slabs in parallel on the engine's pool. The backward is
//! the reversed cumulative sum of the gradient (`flip`, `cumsum`, `flip`), differentiable
//! again. Integer and bool inputs sum exactly in int64, unrecorded. On CUDA floats scan in
//! the `cumsum_*` kernel (one thread per line, the CPU's order of additions: bit-identical);
//! integers go through the host.

use super::{flip, from_vec};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu::{self, PAR_MIN};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::normalize_axis;
use crate::tensor::Tensor;
use rayon::prelude::*;

struct CumsumOp {
    axis: usize,
}

/// Scan one slab of `n` rows of `inner` elements in place.
fn scan_slab<T: Copy>(slab: &mut [T], inner: usize, add: fn(T, T) -> T) {
    for i in 1..slab.len() / inner {
        let (done, rest) = slab.split_at_mut(i * inner);
        let prev = &done[(i - 1) * inner..];
        for (o, &p) in rest[..inner].iter_mut().zip(prev) {
            *o = add(*o, p);
        }
    }
}

/// Prefix sums of `v` (C order of `shape`) along `axis`, in place.
fn cumsum_in_place<T: Copy + Send>(v: &mut [T], shape: &[usize], axis: usize, add: fn(T, T) -> T) {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let slab = n * inner;
    if slab == 0 || n < 2 {
        return;
    }
    if v.len() >= PAR_MIN && v.len() > slab {
        crate::parallel::install(|| {
            v.par_chunks_mut(slab)
                .for_each(|s| scan_slab(s, inner, add))
        });
    } else {
        v.chunks_mut(slab).for_each(|s| scan_slab(s, inner, add));
    }
}

/// Integer and bool prefix sums: int64 as in PyTorch (exact, wrapping on overflow), never
/// recorded (no gradient). On a GPU tensor through the host.
fn cumsum_int(x: &Tensor, axis: usize) -> Result<Tensor> {
    let device = x.device();
    if device != crate::device::Device::Cpu {
        let host = crate::cuda::launch::transfer("cumsum", x, crate::device::Device::Cpu)?;
        let s = cumsum_int(&host, axis)?;
        return crate::cuda::launch::transfer("cumsum", &s, device);
    }
    crate::cpu::catch_oom("cumsum", || {
        let x = super::cast(x, DType::I64)?;
        let mut v = cpu::gather::<i64>(x.data());
        cumsum_in_place(&mut v, x.shape(), axis, i64::wrapping_add);
        Ok(from_vec(v, x.shape()))
    })
}

impl Op for CumsumOp {
    fn name(&self) -> &'static str {
        "cumsum"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        Ok(crate::dispatch!(x.dtype(), T => {
            let mut v = cpu::gather::<T>(x.data());
            cumsum_in_place(&mut v, x.shape(), self.axis, |a: T, b: T| a + b);
            from_vec(v, x.shape())
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::cuda::launch::cumsum("cumsum", inputs[0], self.axis)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        // d out_j / d x_i = 1 for j >= i: the gradient is the suffix sum of the output's.
        let a = [self.axis as isize];
        let rev = flip(ctx.grad, &a)?;
        let s = apply(CumsumOp { axis: self.axis }, &[&rev], &[])?;
        Ok(vec![Some(flip(&s, &a)?)])
    }
}

/// Inclusive cumulative sum along `dim` (a 0-d tensor takes dim 0 / -1 and is returned as is).
/// Integer and bool inputs give int64 (PyTorch's rule).
pub fn cumsum(x: &Tensor, dim: isize) -> Result<Tensor> {
    if x.ndim() == 0 {
        normalize_axis("cumsum", dim, 1)?;
        return match x.dtype() {
            d if d.is_float() => super::clone(x),
            _ => super::cast(x, DType::I64),
        };
    }
    let axis = normalize_axis("cumsum", dim, x.ndim())?;
    if !x.dtype().is_float() {
        return cumsum_int(x, axis);
    }
    apply(CumsumOp { axis }, &[x], &[])
}

impl Tensor {
    /// Inclusive cumulative sum along `dim`.
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        cumsum(self, dim)
    }
}
