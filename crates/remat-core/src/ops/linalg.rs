//! PyTorch's matrix products besides `matmul`: `mm` (2-D), `bmm` (3-D, equal batches),
//! `addmm` / `baddbmm` (`beta * input + alpha * product`) and `outer`.
//!
//! `mm` and `bmm` check PyTorch's stricter shape rules and then are `matmul` (the same GEMM
//! kernels, backward and CUDA path). `addmm` and `baddbmm` are one fused op: the output
//! starts as the broadcast `input` and the GEMM accumulates `alpha * a @ b` into it scaled by
//! `beta` (no extra passes for the scalings); with `beta == 0` `input` is not read, so NaN in
//! it does not propagate, as in PyTorch. Their backward is `matmul`s, a scaling and a
//! `sum_to`, all differentiable. `outer` is a broadcast `mul` of a column and a row.
//!
//! Unlike `matmul`, these ops do not promote: their operands must share a dtype (PyTorch's
//! rule), or a `DTypeError` names the op and both dtypes. Integer operands (int64 or int32)
//! give exact integer results through `int_matmul`, without gradient.

use super::{check_same_device, check_same_dtype, from_vec, reduce::sum_to, view};
use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::cpu::{
    self,
    matmul::{batched_matmul_into, MatOperand},
};
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;

/// `Err` naming `op` unless both operands have `want` dimensions.
fn check_rank(op: &str, a: &Tensor, b: &Tensor, want: usize) -> Result<()> {
    if a.ndim() != want || b.ndim() != want {
        return Err(Error::shape(
            op,
            format!(
                "expected {want}-D tensors, got {} and {}",
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    Ok(())
}

/// Validate the operands of a 2-D (`batched == false`) or batched 3-D product and return the
/// product's shape.
fn check_product(op: &str, a: &Tensor, b: &Tensor, batched: bool) -> Result<Dims> {
    check_rank(op, a, b, if batched { 3 } else { 2 })?;
    let (sa, sb) = (a.shape(), b.shape());
    let shapes = || format!("{} and {}", fmt_shape(sa), fmt_shape(sb));
    let nd = sa.len();
    if batched && sa[0] != sb[0] {
        return Err(Error::shape(
            op,
            format!(
                "batch sizes of {} differ ({} != {})",
                shapes(),
                sa[0],
                sb[0]
            ),
        ));
    }
    if sa[nd - 1] != sb[nd - 2] {
        return Err(Error::shape(
            op,
            format!(
                "shapes {} cannot be multiplied ({} columns != {} rows)",
                shapes(),
                sa[nd - 1],
                sb[nd - 2]
            ),
        ));
    }
    let mut out: Dims = sa[..nd - 1].into();
    out.push(sb[nd - 1]);
    Ok(out)
}

/// The matrix product of two 2-D tensors `(n, m) @ (m, p)` (PyTorch's `mm`: no broadcasting,
/// no 1-D operands; the operands must share a dtype).
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::autocast::composite("mm", [Some(a), Some(b)], |[a, b]| match (a, b) {
        (Some(a), Some(b)) => mm_now(a, b),
        _ => unreachable!("the operands stay present"),
    })
}

fn mm_now(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_device("mm", &[a, b])?;
    check_product("mm", a, b, false)?;
    check_same_dtype("mm", &[a, b])?;
    // Recorded (and its errors named) as `mm`, as PyTorch's profiler and policies see it.
    super::matmul::matmul_named(a, b, "mm")
}

/// The batched matrix product of two 3-D tensors `(b, n, m) @ (b, m, p)` (PyTorch's `bmm`:
/// equal batch sizes, no broadcasting; the operands must share a dtype).
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::autocast::composite("bmm", [Some(a), Some(b)], |[a, b]| match (a, b) {
        (Some(a), Some(b)) => bmm_now(a, b),
        _ => unreachable!("the operands stay present"),
    })
}

fn bmm_now(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_device("bmm", &[a, b])?;
    check_product("bmm", a, b, true)?;
    check_same_dtype("bmm", &[a, b])?;
    super::matmul::matmul_named(a, b, "bmm")
}

/// The outer product of two 1-D tensors: `out[i, j] = a[i] * b[j]` (dtypes promote, as in
/// PyTorch).
pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_device("outer", &[a, b])?;
    check_rank("outer", a, b, 1)?;
    super::mul(&super::unsqueeze(a, 1)?, &super::unsqueeze(b, 0)?)
}

/// `beta * input + alpha * (a @ b)` over matrices (`addmm`) or equal-sized batches of them
/// (`baddbmm`), fused.
struct AddmmOp {
    name: &'static str,
    beta: f64,
    alpha: f64,
}

impl AddmmOp {
    fn run(&self, inputs: &[&Tensor], cuda: bool) -> Result<Tensor> {
        let (input, a, b) = (inputs[0], inputs[1], inputs[2]);
        let (la, lb) = (a.layout(), b.layout());
        let nd = la.ndim();
        let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
        let batch: Dims = la.shape[..nd - 2].into();
        let mut shape = batch.clone();
        shape.push(m);
        shape.push(n);
        if super::int_matmul::is_int(a.dtype()) {
            let scalings = (self.beta, self.alpha);
            return super::int_matmul::addmm(self.name, input, a, b, scalings, cuda);
        }
        if cuda {
            return crate::cuda::launch::matmul_nd_scaled(
                self.name,
                a,
                b,
                &batch,
                Some((input, self.beta)),
                self.alpha,
            );
        }
        let oa = MatOperand {
            data: a.data(),
            batch_offsets: super::matmul::batch_offsets(la, &batch)?,
            rs: la.strides[nd - 2] as isize,
            cs: la.strides[nd - 1] as isize,
        };
        let ob = MatOperand {
            data: b.data(),
            batch_offsets: super::matmul::batch_offsets(lb, &batch)?,
            rs: lb.strides[nd - 2] as isize,
            cs: lb.strides[nd - 1] as isize,
        };
        let init = if self.beta != 0.0 {
            let l = input.layout().broadcast_to(self.name, &shape)?;
            Some(view(input, l))
        } else {
            None
        };
        // A zero alpha reads neither operand (as BLAS, so NaN in them does not propagate).
        let k = if self.alpha == 0.0 { 0 } else { k };
        Ok(crate::dispatch!(a.dtype(), T => {
            let mut out = match &init {
                Some(i) => cpu::gather::<T>(i.data()),
                None => cpu::alloc::<T>(crate::layout::numel(&shape)),
            };
            let beta = init.as_ref().map(|_| T::from_f64(self.beta));
            batched_matmul_into(&mut out, &oa, &ob, (m, k, n), beta, T::from_f64(self.alpha));
            from_vec(out, &shape)
        }))
    }
}

impl Op for AddmmOp {
    fn name(&self) -> &'static str {
        self.name
    }
    // Integer operands (one dtype, checked by `addmm_like`) are computed exactly; never
    // recorded.
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.run(inputs, false)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.run(inputs, true)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // g_input = sum_to(beta g), g_a = alpha g b^T, g_b = alpha a^T g: differentiable ops,
        // the transposes are views the GEMMs read through strides.
        let g = ctx.grad;
        let scaled = |t: &Tensor, c: f64| {
            if c == 1.0 {
                Ok(t.clone())
            } else {
                super::scale(t, c)
            }
        };
        let gi = if ctx.needs_grad(0) {
            Some(sum_to(&scaled(g, self.beta)?, &ctx.inputs[0].shape)?)
        } else {
            None
        };
        let (ga, gb) = if ctx.needs_grad(1) || ctx.needs_grad(2) {
            let gs = scaled(g, self.alpha)?;
            let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
            let ga = if ctx.needs_grad(1) {
                Some(super::matmul(&gs, &super::transpose(b, -2, -1)?)?)
            } else {
                None
            };
            let gb = if ctx.needs_grad(2) {
                Some(super::matmul(&super::transpose(a, -2, -1)?, &gs)?)
            } else {
                None
            };
            (ga, gb)
        } else {
            (None, None)
        };
        Ok(vec![gi, ga, gb])
    }
}

fn addmm_like(
    name: &'static str,
    input: &Tensor,
    a: &Tensor,
    b: &Tensor,
    beta: f64,
    alpha: f64,
    batched: bool,
) -> Result<Tensor> {
    crate::autocast::composite(name, [Some(input), Some(a), Some(b)], |[x, a, b]| {
        match (x, a, b) {
            (Some(x), Some(a), Some(b)) => addmm_like_now(name, x, a, b, beta, alpha, batched),
            _ => unreachable!("the operands stay present"),
        }
    })
}

fn addmm_like_now(
    name: &'static str,
    input: &Tensor,
    a: &Tensor,
    b: &Tensor,
    beta: f64,
    alpha: f64,
    batched: bool,
) -> Result<Tensor> {
    check_same_device(name, &[input, a, b])?;
    let shape = check_product(name, a, b, batched)?;
    if input.layout().broadcast_to(name, &shape).is_err() {
        return Err(Error::shape(
            name,
            format!(
                "input {} cannot be broadcast to the shape {} of the product of {} and {}",
                fmt_shape(input.shape()),
                fmt_shape(&shape),
                fmt_shape(a.shape()),
                fmt_shape(b.shape())
            ),
        ));
    }
    check_same_dtype(name, &[input, a, b])?;
    super::int_matmul::check_operands(name, a, b)?;
    apply(
        AddmmOp { name, beta, alpha },
        &[input, a, b],
        &[Save::Input(1), Save::Input(2)],
    )
}

/// `beta * input + alpha * (mat1 @ mat2)` for 2-D `mat1 (n, m)`, `mat2 (m, p)` and `input`
/// broadcastable to `(n, p)` (PyTorch's `addmm`; the defaults are `beta = alpha = 1`). Fused:
/// one pass over the output. With `beta == 0`, `input` is ignored (NaN in it does not
/// propagate).
pub fn addmm(
    input: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: f64,
    alpha: f64,
) -> Result<Tensor> {
    addmm_like("addmm", input, mat1, mat2, beta, alpha, false)
}

/// `beta * input + alpha * (batch1 @ batch2)` for 3-D `batch1 (b, n, m)`, `batch2 (b, m, p)`
/// and `input` broadcastable to `(b, n, p)` (PyTorch's `baddbmm`), fused like [`addmm`].
pub fn baddbmm(
    input: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: f64,
    alpha: f64,
) -> Result<Tensor> {
    addmm_like("baddbmm", input, batch1, batch2, beta, alpha, true)
}

impl Tensor {
    /// `self @ other` for 2-D tensors; see [`mm`].
    pub fn mm(&self, other: &Tensor) -> Result<Tensor> {
        mm(self, other)
    }
    /// Batched `self @ other` for 3-D tensors; see [`bmm`].
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        bmm(self, other)
    }
    /// The outer product with `other` (both 1-D); see [`outer`].
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        outer(self, other)
    }
    /// `beta * self + alpha * (mat1 @ mat2)`; see [`addmm`].
    pub fn addmm(&self, mat1: &Tensor, mat2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        addmm(self, mat1, mat2, beta, alpha)
    }
    /// `beta * self + alpha * (batch1 @ batch2)`; see [`baddbmm`].
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        baddbmm(self, batch1, batch2, beta, alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;

    fn t(shape: &[usize], v: &[f64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn addmm_beta_zero_ignores_nan_input() {
        let input = crate::ops::full(&[2, 2], f64::NAN, DType::F64, Device::Cpu).unwrap();
        let a = t(&[2, 1], &[1.0, 2.0]);
        let b = t(&[1, 2], &[3.0, 4.0]);
        let y = addmm(&input, &a, &b, 0.0, 2.0).unwrap();
        assert_eq!(y.to_vec::<f64>(), vec![6.0, 8.0, 12.0, 16.0]);
    }

    #[test]
    fn errors_name_the_op_and_shapes() {
        let a = t(&[2, 3], &[0.0; 6]);
        let b = t(&[4, 5], &[0.0; 20]);
        let e = mm(&a, &b).unwrap_err().to_string();
        assert!(
            e.starts_with("mm:") && e.contains("(2, 3)") && e.contains("(4, 5)"),
            "{e}"
        );
        let c = t(&[2, 3, 4], &[0.0; 24]);
        let e = mm(&c, &b).unwrap_err().to_string();
        assert!(
            e.contains("expected 2-D tensors, got (2, 3, 4) and (4, 5)"),
            "{e}"
        );
    }
}
