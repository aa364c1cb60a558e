//! Batched matrix products through cuBLAS, with broadcast batch axes and an optional
//! initial value (e.g. a bias) added to the product.

use super::common::{buffer, tensor};
use super::elementwise::{cast, copy, full};
use crate::cuda::storage::CudaBuffer;
use crate::error::Result;
use crate::layout::{numel, Dims, Layout};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;

/// Storage offsets of each batch matrix of `l` (at least 2-D) broadcast to `batch`.
fn batch_offsets(op: &str, l: &Layout, batch: &[usize]) -> Result<Vec<usize>> {
    let nd = l.ndim();
    let bl = Layout {
        shape: l.shape[..nd - 2].into(),
        strides: l.strides[..nd - 2].into(),
        offset: l.offset,
    }
    .broadcast_to(op, batch)?;
    if batch.is_empty() {
        return Ok(vec![l.offset]);
    }
    let mut v = Vec::with_capacity(numel(batch));
    bl.for_each_index(|i| v.push(i));
    Ok(v)
}

/// The matrix product of stacks `a (..., m, k)` and `b (..., k, n)` (both at least 2-D, same
/// dtype and device, shapes validated) with batch axes broadcast to `batch`, through cuBLAS:
/// a tensor of shape `(batch..., m, n)`. With `init` (a tensor broadcastable to the result,
/// e.g. a bias) the product is added to it.
pub fn matmul_nd(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    init: Option<&Tensor>,
) -> Result<Tensor> {
    matmul_nd_scaled(op, a, b, batch, init.map(|i| (i, 1.0)), 1.0)
}

/// `beta * init + alpha * (a @ b)` with `init = Some((tensor, beta))` (PyTorch's `addmm` /
/// `baddbmm`), else `alpha * (a @ b)`; shapes and batches as in [`matmul_nd`]. With
/// `beta == 0` the initial tensor is not read (NaN in it does not propagate), as in PyTorch.
pub fn matmul_nd_scaled(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    init: Option<(&Tensor, f64)>,
    alpha: f64,
) -> Result<Tensor> {
    let init = init.filter(|&(_, beta)| beta != 0.0);
    use crate::cuda::blas::{blas_view, gemm, BlasOperand};
    let usable = |t: &Tensor| {
        let l = t.layout();
        let nd = l.ndim();
        blas_view(
            l.strides[nd - 2],
            l.strides[nd - 1],
            l.shape[nd - 2],
            l.shape[nd - 1],
        )
        .is_some()
    };
    // Views cuBLAS cannot read (neither unit stride, overlapping rows) are copied first, in
    // the order of their strides: a view whose columns are the far-apart axis becomes a
    // column-major copy, so the product reads it as the transposed matrix, exactly as it reads
    // a dense copy of the same view made elsewhere (an offloaded segment input): cuBLAS picks
    // its kernel by the layout, and the two must round alike for bit-identical gradients.
    let dense = |t: &Tensor| -> Result<Tensor> {
        if usable(t) {
            return Ok(t.clone());
        }
        let l = t.layout();
        let nd = l.ndim();
        if l.strides[nd - 2] >= l.strides[nd - 1] {
            return copy(op, t);
        }
        let swapped = |t: &Tensor, l: &Layout| {
            Tensor::from_data(TensorData {
                storage: t.storage().clone(),
                layout: l.transpose(nd - 2, nd - 1),
            })
        };
        let c = copy(op, &swapped(t, l))?;
        Ok(swapped(&c, c.layout()))
    };
    let a = dense(a)?;
    let b = dense(b)?;
    let (la, lb) = (a.layout(), b.layout());
    let (na, nb) = (la.ndim(), lb.ndim());
    let (m, k, n) = (la.shape[na - 2], la.shape[na - 1], lb.shape[nb - 1]);
    let mut shape: Dims = batch.into();
    shape.push(m);
    shape.push(n);
    let (out, beta) = match init {
        Some((i, beta)) => {
            let l = i.layout().broadcast_to(op, &shape)?;
            let v = Tensor::from_data(TensorData {
                storage: i.storage().clone(),
                layout: l,
            });
            (cast(op, &v, a.dtype())?, beta)
        }
        None => (
            tensor(
                CudaBuffer::alloc(op, buffer(op, &a)?.context(), numel(&shape), a.dtype())?,
                &shape,
            ),
            0.0,
        ),
    };
    if k == 0 && init.is_none() {
        return full(op, a.device(), &shape, a.dtype(), 0.0);
    }
    let oa = BlasOperand {
        buf: buffer(op, &a)?,
        offsets: batch_offsets(op, la, batch)?,
        rs: la.strides[na - 2],
        cs: la.strides[na - 1],
        rows: m,
        cols: k,
    };
    let ob = BlasOperand {
        buf: buffer(op, &b)?,
        offsets: batch_offsets(op, lb, batch)?,
        rs: lb.strides[nb - 2],
        cs: lb.strides[nb - 1],
        rows: k,
        cols: n,
    };
    gemm(
        op,
        a.dtype(),
        &oa,
        &ob,
        m,
        k,
        n,
        buffer(op, &out)?,
        (alpha, beta),
    )?;
    Ok(out)
}
