//! `matmul` with `np.matmul` rules: batched, batch axes broadcast, 1-D operands promoted and
//! their axis removed from the result. Backward uses transposed views (no copies). Float
//! operands run the GEMM (mixed float dtypes promote); two operands of one integer dtype
//! take the exact integer loops of `int_matmul` (PyTorch's rule, no gradient).

use super::{cast, check_same_device, from_vec, reduce::sum_to, view};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu::matmul::{batched_matmul, MatOperand};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape, Dims, Layout};
use crate::tensor::Tensor;
use smallvec::smallvec;

/// `x` seen as a matrix stack: 1-D `(k,)` becomes `(1, k)` (lhs) or `(k, 1)` (rhs).
fn as_matrix(x: &Tensor, lhs: bool) -> Tensor {
    if x.ndim() >= 2 {
        return x.clone();
    }
    let l = x.layout();
    let (k, s) = (l.shape[0], l.strides[0]);
    let layout = if lhs {
        Layout {
            shape: smallvec![1, k],
            strides: smallvec![k * s.max(1), s],
            offset: l.offset,
        }
    } else {
        Layout {
            shape: smallvec![k, 1],
            strides: smallvec![s, 1],
            offset: l.offset,
        }
    };
    view(x, layout)
}

/// Storage offset of each matrix of `l` (at least 2-D) with its batch axes broadcast to
/// `batch`.
pub(crate) fn batch_offsets(l: &Layout, batch: &[usize]) -> Result<Vec<usize>> {
    let nd = l.ndim();
    let bl = Layout {
        shape: l.shape[..nd - 2].into(),
        strides: l.strides[..nd - 2].into(),
        offset: l.offset,
    }
    .broadcast_to("matmul", batch)?;
    // One offset per batch: as many as the output has matrices, so allocated fallibly.
    let mut v = crate::cpu::with_capacity(batch.iter().product());
    bl.for_each_index(|i| v.push(i));
    if batch.is_empty() {
        v = vec![l.offset];
    }
    Ok(v)
}

/// The product of matrix stacks `a (..., m, k)` and `b (..., k, n)` (both at least 2-D).
fn matmul_nd(a: &Tensor, b: &Tensor, cuda: bool) -> Result<Tensor> {
    let (la, lb) = (a.layout(), b.layout());
    let (na, nb) = (la.ndim(), lb.ndim());
    let (m, k, k2, n) = (
        la.shape[na - 2],
        la.shape[na - 1],
        lb.shape[nb - 2],
        lb.shape[nb - 1],
    );
    if k != k2 {
        return Err(Error::shape(
            "matmul",
            format!(
                "shapes {} and {} are not aligned: {k} (last axis of the first) != {k2} \
                 (second-to-last axis of the second)",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    let batch = broadcast_shapes("matmul", &la.shape[..na - 2], &lb.shape[..nb - 2])?;
    if super::int_matmul::is_int(a.dtype()) {
        return super::int_matmul::matmul_nd("matmul", a, b, &batch, cuda);
    }
    if cuda {
        return crate::cuda::launch::matmul_nd("matmul", a, b, &batch, None);
    }
    let oa = MatOperand {
        data: a.data(),
        batch_offsets: batch_offsets(la, &batch)?,
        rs: la.strides[na - 2] as isize,
        cs: la.strides[na - 1] as isize,
    };
    let ob = MatOperand {
        data: b.data(),
        batch_offsets: batch_offsets(lb, &batch)?,
        rs: lb.strides[nb - 2] as isize,
        cs: lb.strides[nb - 1] as isize,
    };
    let mut shape: Dims = batch.clone();
    shape.push(m);
    shape.push(n);
    if a.dtype() == DType::BF16 && b.dtype() == DType::BF16 {
        if let Some(out) = crate::cpu::bf16_gemm::batched(&oa, &ob, m, k, n) {
            // Accumulated in float32, rounded once.
            return cast(&from_vec(out, &shape), DType::BF16);
        }
    }
    Ok(crate::dispatch!(a.dtype(), T => from_vec(batched_matmul::<T>(&oa, &ob, m, k, n), &shape)))
}

/// The result shape after removing the axes that 1-D operands added.
fn squeeze_shape(full: &[usize], a_1d: bool, b_1d: bool) -> Dims {
    let nd = full.len();
    let mut s: Dims = full[..nd - 2].into();
    if !a_1d {
        s.push(full[nd - 2]);
    }
    if !b_1d {
        s.push(full[nd - 1]);
    }
    s
}

/// Check that `a @ b` is defined, in terms of the shapes the caller passed: the checks after
/// 1-D operands are promoted to matrices would report the promoted shapes instead.
fn check_shapes(a: &[usize], b: &[usize]) -> Result<()> {
    let shapes = || format!("{} and {}", fmt_shape(a), fmt_shape(b));
    if a.is_empty() || b.is_empty() {
        return Err(Error::shape(
            "matmul",
            format!(
                "both operands need at least one dimension, got {}",
                shapes()
            ),
        ));
    }
    let k = a[a.len() - 1];
    let (k2, which) = if b.len() == 1 {
        (b[0], "only axis")
    } else {
        (b[b.len() - 2], "second-to-last axis")
    };
    if k != k2 {
        return Err(Error::shape(
            "matmul",
            format!(
                "shapes {} are not aligned: {k} (last axis of the first) != {k2} ({which} of \
                 the second)",
                shapes()
            ),
        ));
    }
    let (ba, bb) = (
        &a[..a.len().saturating_sub(2)],
        &b[..b.len().saturating_sub(2)],
    );
    let clash = ba
        .iter()
        .rev()
        .zip(bb.iter().rev())
        .any(|(&x, &y)| x != y && x != 1 && y != 1);
    if clash {
        return Err(Error::shape(
            "matmul",
            format!(
                "the batch axes of shapes {} cannot be broadcast together",
                shapes()
            ),
        ));
    }
    Ok(())
}

fn matmul_forward(a: &Tensor, b: &Tensor, cuda: bool) -> Result<Tensor> {
    check_same_device("matmul", &[a, b])?;
    check_shapes(a.shape(), b.shape())?;
    let dt = a.dtype().promote(b.dtype());
    let (a, b) = (cast(a, dt)?, cast(b, dt)?);
    let out = matmul_nd(&as_matrix(&a, true), &as_matrix(&b, false), cuda)?;
    let shape = squeeze_shape(out.shape(), a.ndim() == 1, b.ndim() == 1);
    Ok(if shape.as_slice() == out.shape() {
        out
    } else {
        view(&out, Layout::contiguous(&shape))
    })
}

/// `name`: "matmul", or "attention_scores" for attention's `q kᵀ` (so selective checkpoint
/// policies can tell the `T²` score matrix from the other products).
struct MatmulOp {
    name: &'static str,
}

impl Op for MatmulOp {
    fn name(&self) -> &'static str {
        self.name
    }
    // Integer operands are checked by `matmul_named` and computed exactly; never recorded.
    fn any_dtype(&self) -> bool {
        true
    }
    fn half_native(&self) -> bool {
        true
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        super::half_compute::forward_bf16_gemm(self, inputs)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        matmul_forward(inputs[0], inputs[1], false)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        matmul_forward(inputs[0], inputs[1], true)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // Batched: ga = g b^T and gb = a^T g with 1-D operands as matrices, reduced over
        // broadcast batch axes; all with differentiable ops (transposes are views, so the
        // GEMMs read the operands through strides as in the forward).
        let dt = ctx.grad.dtype();
        let (a, b) = (
            super::to_dtype(&ctx.saved[0], dt)?,
            super::to_dtype(&ctx.saved[1], dt)?,
        );
        let (sa, sb) = (
            matrix_shape(a.shape(), true),
            matrix_shape(b.shape(), false),
        );
        let (a2, b2) = (super::reshape(&a, &sa)?, super::reshape(&b, &sb)?);
        let (na, nb) = (sa.len(), sb.len());
        let mut gshape = broadcast_shapes("matmul", &sa[..na - 2], &sb[..nb - 2])?;
        gshape.push(sa[na - 2]);
        gshape.push(sb[nb - 1]);
        let g2 = super::reshape(ctx.grad, &gshape)?;
        let ga = if ctx.needs_grad(0) {
            let full = matmul(&g2, &super::transpose(&b2, -2, -1)?)?;
            Some(super::reshape(&sum_to(&full, &sa)?, &ctx.inputs[0].shape)?)
        } else {
            None
        };
        let gb = if ctx.needs_grad(1) {
            let full = matmul(&super::transpose(&a2, -2, -1)?, &g2)?;
            Some(super::reshape(&sum_to(&full, &sb)?, &ctx.inputs[1].shape)?)
        } else {
            None
        };
        Ok(vec![ga, gb])
    }
}

/// The shape of an operand as a matrix: a 1-D left operand is a row `(1, k)`, a 1-D right
/// one a column `(k, 1)`.
fn matrix_shape(shape: &[usize], lhs: bool) -> Dims {
    match (shape, lhs) {
        ([k], true) => smallvec![1, *k],
        ([k], false) => smallvec![*k, 1],
        _ => shape.into(),
    }
}

/// Matrix product with `np.matmul` semantics. Float operands promote to the wider float;
/// integer operands must share their dtype (int64 or int32, PyTorch's rule) and give an exact
/// (wrapping) product of that dtype, without gradient; bool and integer/float mixes are a
/// `DType` error.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    matmul_named(a, b, "matmul")
}

/// [`matmul`] recorded under another op name (what checkpoint policies see).
pub(crate) fn matmul_named(a: &Tensor, b: &Tensor, name: &'static str) -> Result<Tensor> {
    super::int_matmul::check_operands(name, a, b)?;
    apply(
        MatmulOp { name },
        &[a, b],
        &[Save::Input(0), Save::Input(1)],
    )
}
