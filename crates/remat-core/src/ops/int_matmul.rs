//! Exact integer matrix products: `matmul` (so `@`, `mm`, `bmm`, `einsum`) and
//! `addmm`/`baddbmm` of int64 or int32 operands, as PyTorch's CPU kernels give them: the
//! result keeps the operands' dtype and wraps on overflow (two's complement, as C++ integer
//! arithmetic does), never a detour through floats that would lose digits above 2^53.
//!
//! PyTorch's rule for the operands: both of one integer dtype (`int64 @ int32`,
//! `int64 @ float32` and bool operands are refused; a `DTypeError` names the op, dtypes and
//! shapes). Integer results carry no gradient, so none of this is recorded; floats keep the
//! GEMM path. The loops are plain `i, p, j` over rows (the `j` loop is contiguous in the
//! output and in a row-major right operand), batches in parallel: integer products are rare
//! and small next to the float GEMMs, so simplicity wins over blocking. CPU only for now
//! (`DeviceError` on CUDA, like the rest of integer arithmetic).

use super::{cast, from_vec};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims, Layout};
use crate::tensor::Tensor;
use rayon::prelude::*;

/// `Err` unless `a op b` is a product PyTorch computes: both float (the float path decides
/// the rest), or both of one integer dtype.
pub(crate) fn check_operands(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    let (da, db) = (a.dtype(), b.dtype());
    if da.is_float() && db.is_float() {
        return Ok(());
    }
    let shapes = || format!("{} and {}", fmt_shape(a.shape()), fmt_shape(b.shape()));
    if da == DType::Bool || db == DType::Bool {
        return Err(Error::dtype(
            op,
            format!(
                "bool operands are not supported, got {da} and {db} tensors of shapes {}; \
                 convert them with .long() or .float()",
                shapes()
            ),
        ));
    }
    if da != db {
        return Err(Error::dtype(
            op,
            format!(
                "expected both operands to have the same dtype, got {da} and {db} tensors of \
                 shapes {}",
                shapes()
            ),
        ));
    }
    Ok(())
}

/// Whether a product of operands of `dtype` takes the integer path.
pub(crate) fn is_int(dtype: DType) -> bool {
    matches!(dtype, DType::I64 | DType::I32)
}

/// The refusal of integer products on a GPU.
fn on_cuda(op: &str, a: &Tensor, b: &Tensor) -> Error {
    Error::device(
        op,
        format!(
            "integer matrix products are CPU-only so far, got {} tensors of shapes {} and {} \
             on {}",
            a.dtype(),
            fmt_shape(a.shape()),
            fmt_shape(b.shape()),
            a.device()
        ),
    )
}

/// `x` (at least 2-D) as contiguous int64 values and the offset of each of its matrices with
/// its batch axes broadcast to `batch`.
fn operand(x: &Tensor, batch: &[usize]) -> Result<(Vec<i64>, Vec<usize>)> {
    let values = crate::cpu::gather::<i64>(cast(x, DType::I64)?.data());
    let offsets = super::matmul::batch_offsets(&Layout::contiguous(x.shape()), batch)?;
    Ok((values, offsets))
}

/// The wrapping int64 product of `a (..., m, k)` and `b (..., k, n)`, batch axes broadcast
/// to `batch`, as a contiguous `(batch..., m, n)` buffer.
fn product(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    (m, k, n): (usize, usize, usize),
) -> Result<Vec<i64>> {
    let (av, ao) = operand(a, batch)?;
    let (bv, bo) = operand(b, batch)?;
    let mut out = crate::cpu::filled(ao.len() * m * n, 0i64);
    if m * n == 0 {
        return Ok(out);
    }
    crate::parallel::install(|| {
        out.par_chunks_mut(m * n)
            .zip(ao.par_iter().zip(bo.par_iter()))
            .for_each(|(o, (&oa, &ob))| {
                for i in 0..m {
                    let row = &mut o[i * n..(i + 1) * n];
                    for p in 0..k {
                        let x = av[oa + i * k + p];
                        let brow = &bv[ob + p * n..ob + (p + 1) * n];
                        for (r, &y) in row.iter_mut().zip(brow) {
                            *r = r.wrapping_add(x.wrapping_mul(y));
                        }
                    }
                }
            })
    });
    Ok(out)
}

/// The product of integer matrix stacks `a (..., m, k)` and `b (..., k, n)` (both at least
/// 2-D, one integer dtype, shapes already checked), batch axes broadcast to `batch`; the
/// result has `a`'s dtype.
pub(crate) fn matmul_nd(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    cuda: bool,
) -> Result<Tensor> {
    if cuda {
        return Err(on_cuda(op, a, b));
    }
    let (na, nb) = (a.ndim(), b.ndim());
    let (m, k, n) = (a.shape()[na - 2], a.shape()[na - 1], b.shape()[nb - 1]);
    let v = crate::cpu::catch_oom(op, || product(a, b, batch, (m, k, n)))?;
    let mut shape: Dims = batch.into();
    shape.push(m);
    shape.push(n);
    cast(&from_vec(v, &shape), a.dtype())
}

/// `beta * input + alpha * (a @ b)` for integer operands (`addmm`/`baddbmm`; `input`
/// broadcast to the product's shape, checked by the caller). As PyTorch, `beta` and `alpha`
/// are taken as integers (truncated toward zero), and with `beta == 0` `input` is not read.
pub(crate) fn addmm(
    op: &str,
    input: &Tensor,
    a: &Tensor,
    b: &Tensor,
    (beta, alpha): (f64, f64),
    cuda: bool,
) -> Result<Tensor> {
    if cuda {
        return Err(on_cuda(op, a, b));
    }
    let nd = a.ndim();
    let (m, k, n) = (a.shape()[nd - 2], a.shape()[nd - 1], b.shape()[nd - 1]);
    let batch: Dims = a.shape()[..nd - 2].into();
    let mut shape = batch.clone();
    shape.push(m);
    shape.push(n);
    // `as` truncates toward zero and saturates, as PyTorch's scalar-to-int64 conversion.
    let (beta, alpha) = (beta as i64, alpha as i64);
    let v = crate::cpu::catch_oom(op, || {
        let mut out = product(a, b, &batch, (m, k, n))?;
        out.iter_mut().for_each(|v| *v = v.wrapping_mul(alpha));
        if beta != 0 {
            let init = from_vec(
                crate::cpu::gather::<i64>(cast(input, DType::I64)?.data()),
                input.shape(),
            );
            let l = Layout::contiguous(input.shape()).broadcast_to(op, &shape)?;
            let full = crate::cpu::gather::<i64>(super::view(&init, l).data());
            for (o, &x) in out.iter_mut().zip(&full) {
                *o = o.wrapping_add(x.wrapping_mul(beta));
            }
        }
        Ok(out)
    })?;
    cast(&from_vec(v, &shape), a.dtype())
}
