//! Creation ops with structure: `arange`, `linspace`, `eye`, `randint`, and the triangle
//! masks `tril` / `triu` (differentiable: the gradient is the same triangle of the output
//! gradient). All as in PyTorch.

use super::from_vec;
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor::Tensor;

/// A host tensor of `n` values `f(i)` in `dtype`, moved to `device`.
fn generate(
    op: &str,
    n: usize,
    dtype: DType,
    device: Device,
    f: impl Fn(usize) -> f64,
) -> Result<Tensor> {
    let t = cpu::catch_oom(op, || {
        Ok(crate::dispatch_any!(dtype, T => {
            from_vec(cpu::collect_exact((0..n).map(|i| T::from_f64(f(i)))), &[n])
        }))
    })?;
    super::to_device(&t, device)
}

/// PyTorch's `arange(start, end, step)`: `start, start + step, ...` up to but excluding
/// `end`, `ceil((end - start) / step)` values. A zero step, or one pointing away from `end`
/// with a non-empty range, is an error.
pub fn arange(start: f64, end: f64, step: f64, dtype: DType, device: Device) -> Result<Tensor> {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
        return Err(Error::value(
            "arange",
            format!("start={start}, end={end} and step={step} must be finite, step nonzero"),
        ));
    }
    if (end - start) * step < 0.0 {
        return Err(Error::value(
            "arange",
            format!("upper bound and lower bound inconsistent with step sign (start={start}, end={end}, step={step})"),
        ));
    }
    let n = ((end - start) / step).ceil().max(0.0);
    if n > (isize::MAX as f64) / 8.0 {
        return Err(Error::shape("arange", format!("{n} elements are too many")));
    }
    generate("arange", n as usize, dtype, device, |i| {
        start + i as f64 * step
    })
}

/// PyTorch's `linspace(start, end, steps)`: `steps` evenly spaced values from `start` to
/// `end` inclusive (the first half counted from `start`, the second from `end`, so both ends
/// are exact).
pub fn linspace(
    start: f64,
    end: f64,
    steps: usize,
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    let step = if steps > 1 {
        (end - start) / (steps - 1) as f64
    } else {
        0.0
    };
    let half = steps / 2;
    generate("linspace", steps, dtype, device, |i| {
        if i < half || steps == 1 {
            start + step * i as f64
        } else {
            end - step * (steps - 1 - i) as f64
        }
    })
}

/// PyTorch's `eye(n, m)`: an `n x m` matrix with ones on the diagonal.
pub fn eye(n: usize, m: usize, dtype: DType, device: Device) -> Result<Tensor> {
    let flat = generate("eye", n * m, dtype, device, |i| {
        if i / m.max(1) == i % m.max(1) {
            1.0
        } else {
            0.0
        }
    })?;
    super::reshape(&flat, &[n, m])
}

/// PyTorch's `randint(low, high, shape)`: integers drawn uniformly from `[low, high)` with
/// the engine's generator (reproducible under `manual_seed`), in `dtype` (int64 by default).
pub fn randint(
    low: i64,
    high: i64,
    shape: &[usize],
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    if high <= low {
        return Err(Error::value(
            "randint",
            format!("expected low < high, got low={low}, high={high}"),
        ));
    }
    let u = super::rand(shape, DType::F64, Device::Cpu)?;
    let span = (high - low) as f64;
    let v: Vec<f64> = u.try_to_vec::<f64>()?;
    let ints = cpu::catch_oom("randint", || {
        Ok(crate::dispatch_any!(dtype, T => {
            from_vec(
                cpu::collect_exact(v.iter().map(|&x| {
                    let k = ((x * span).floor() as i64).min(high - low - 1);
                    T::from_i64(low + k)
                })),
                shape,
            )
        }))
    })?;
    super::to_device(&ints, device)
}

/// Keep the elements on one side of a diagonal of the last two axes, zero the rest.
struct TriangleOp {
    upper: bool,
    diagonal: i64,
}

impl TriangleOp {
    fn keeps(&self, i: usize, j: usize) -> bool {
        let d = j as i64 - i as i64;
        if self.upper {
            d >= self.diagonal
        } else {
            d <= self.diagonal
        }
    }
}

impl Op for TriangleOp {
    fn name(&self) -> &'static str {
        if self.upper {
            "triu"
        } else {
            "tril"
        }
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let nd = x.ndim();
        if nd < 2 {
            return Err(Error::shape(
                self.name(),
                format!(
                    "input must have at least 2 dimensions, got shape {}",
                    fmt_shape(x.shape())
                ),
            ));
        }
        let (r, c) = (x.shape()[nd - 2], x.shape()[nd - 1]);
        Ok(crate::dispatch_any!(x.dtype(), T => {
            let mut v = cpu::gather::<T>(x.data());
            for (k, e) in v.iter_mut().enumerate() {
                let (i, j) = ((k / c.max(1)) % r.max(1), k % c.max(1));
                if !self.keeps(i, j) {
                    *e = T::default();
                }
            }
            from_vec(v, x.shape())
        }))
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let back = TriangleOp {
            upper: self.upper,
            diagonal: self.diagonal,
        };
        Ok(vec![Some(apply(back, &[ctx.grad], &[])?)])
    }
}

/// PyTorch's `tril(x, diagonal)`: the lower triangle (on and below `diagonal`) of the last two
/// axes; the rest zero. Differentiable.
pub fn tril(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    apply(
        TriangleOp {
            upper: false,
            diagonal,
        },
        &[x],
        &[],
    )
}

/// PyTorch's `triu(x, diagonal)`: the upper triangle (on and above `diagonal`) of the last two
/// axes; the rest zero. Differentiable.
pub fn triu(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    apply(
        TriangleOp {
            upper: true,
            diagonal,
        },
        &[x],
        &[],
    )
}

impl Tensor {
    /// See [`tril`].
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        tril(self, diagonal)
    }
    /// See [`triu`].
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        triu(self, diagonal)
    }
}
