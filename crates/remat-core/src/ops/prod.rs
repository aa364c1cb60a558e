//! `prod`: the product over one axis (or all elements), composed of multiplications of the two
//! halves of the axis until one element is left (a tree of `mul`s over `narrow` views).
//! Composing it keeps the gradient exact with zeros in the input (the product rule, never a
//! division by the product), makes it differentiable to any order and gives it the CUDA path
//! of `mul`/`concat`; the tree costs about one pass over the input in all.

use super::{add_scalar, concat, mul, narrow, reshape, sum};
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::tensor::Tensor;

/// Product over axis `dim` (None: all elements, a 0-d result unless `keepdim`).
pub fn prod(x: &Tensor, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
    crate::autocast::composite("prod", [Some(x)], |[x]| match x {
        Some(x) => prod_now(x, dim, keepdim),
        None => unreachable!("the input stays present"),
    })
}

fn prod_now(x: &Tensor, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() && x.dtype() != crate::dtype::DType::I64 {
        // Bool and int32 multiply in int64, as PyTorch's `prod` (and `sum`) of them.
        return prod(&super::cast(x, crate::dtype::DType::I64)?, dim, keepdim);
    }
    if x.ndim() == 0 {
        // A 0-d tensor is its own product (PyTorch accepts dim 0 / -1 here).
        if let Some(d) = dim.filter(|d| !(-1..=0).contains(d)) {
            return Err(Error::dim_out_of_range(
                "prod",
                format!("dim {d} out of range for a 0-d tensor"),
            ));
        }
        return super::clone(x);
    }
    let (flat, axis) = match dim {
        None => (reshape(x, &[x.numel()])?, 0),
        Some(d) => (x.clone(), normalize_axis("prod", d, x.ndim())?),
    };
    let mut t = flat;
    let mut n = t.shape()[axis];
    if n == 0 {
        // The empty product is 1; `sum + 1` keeps the result attached to `x`'s graph.
        t = add_scalar(&sum(&t, Some(&[axis as isize][..]), true)?, 1.0)?;
    }
    while n > 1 {
        let h = n / 2;
        let a = axis as isize;
        let p = mul(
            &narrow(&t, a, 0, h as isize)?,
            &narrow(&t, a, h as isize, h as isize)?,
        )?;
        t = if n % 2 == 1 {
            concat(&[p, narrow(&t, a, 2 * h as isize, 1)?], a)?
        } else {
            p
        };
        n = h + n % 2;
    }
    // `t` has extent 1 along `axis` now.
    let out_shape: Vec<usize> = match (dim, keepdim) {
        (None, false) => vec![],
        (None, true) => vec![1; x.ndim()],
        (Some(_), true) => t.shape().to_vec(),
        (Some(_), false) => {
            let mut s = t.shape().to_vec();
            s.remove(axis);
            s
        }
    };
    reshape(&t, &out_shape)
}

impl Tensor {
    /// Product over axis `dim` (None: all elements).
    pub fn prod(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        prod(self, dim, keepdim)
    }
}
