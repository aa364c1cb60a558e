//! In-place ops, PyTorch's `add_`, `sub_`, `mul_`, `div_`, `zero_`, `fill_`, `copy_`,
//! `clamp_`, `masked_fill_`, `normal_`, `uniform_`, `relu_`, `leaky_relu_` (and
//! `t[idx] = v`, in `ops::setitem`), plus the engine's own gradient accumulation (`add_inplace`).
//!
//! Each public op checks PyTorch's rules (`rules`: no leaf that requires grad under grad
//! mode, no overlapping destination, operands that broadcast to the destination; `dtypes`:
//! results that fit the tensor's dtype). A write the graph must see (into a graph tensor, or
//! from an operand that requires grad, with grad mode on) is computed out of place and
//! recorded (`recorded`: the tensor is rebased onto the result's node, as PyTorch does).
//! Every other write runs one or more updates (`update::Update`) through `write`: a CPU walk
//! over the destination's strides (`cpu`, no allocation) or the CUDA launches (`cuda`).
//! Every write bumps the storage's version counter, shared by all views of it, so a graph
//! that saved the tensor raises `Error::Graph` at backward instead of computing with the
//! new values.

mod accumulate;
mod activation;
mod cpu;
mod cuda;
mod dtypes;
pub(crate) mod recorded;
pub(crate) mod rules;
mod update;

pub use accumulate::{add_inplace, axpy_inplace};
pub use activation::{leaky_relu_, relu_};
pub(crate) use update::{Src, Update};

use super::Bound;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::rng;
use crate::tensor::Tensor;
use rules::Write;

/// The operand of an in-place op: a number, or a tensor broadcast to the destination's shape
/// (any float dtype; a 0-d tensor may live on another device, as a number).
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// A number, converted to the destination's dtype.
    Scalar(f64),
    /// A tensor.
    Tensor(&'a Tensor),
}

impl From<f64> for Operand<'_> {
    fn from(v: f64) -> Self {
        Operand::Scalar(v)
    }
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}

impl<'a> From<Bound<'a>> for Operand<'a> {
    fn from(b: Bound<'a>) -> Self {
        match b {
            Bound::Scalar(v) => Operand::Scalar(v),
            Bound::Tensor(t) => Operand::Tensor(t),
        }
    }
}

impl<'a> Operand<'a> {
    fn tensor(self) -> Option<&'a Tensor> {
        match self {
            Operand::Tensor(t) => Some(t),
            Operand::Scalar(_) => None,
        }
    }
}

/// Run `steps` into `dst` in order, then [`record`] the write once (also after a failure:
/// part of the destination may have been written).
pub(crate) fn write(op: &str, dst: &Tensor, steps: &[(Src<'_>, Update)]) -> Result<()> {
    let mut done = Ok(());
    for &(src, u) in steps {
        done = crate::device::on_device(
            dst.device(),
            || cpu::update(op, dst.data(), src, u),
            || cuda::update(op, dst, src, u),
        );
        if done.is_err() {
            break;
        }
    }
    record(dst);
    done
}

/// Record an in-place write into `dst`: bump its storage's version counter (shared by every
/// view, so a graph that saved any of them notices) and drop `dst`'s checkpoint recipe, which
/// would replay the old value (later consumers keep the data instead).
fn record(dst: &Tensor) {
    dst.storage().bump_version();
    dst.0.state.lock().recipe = None;
}

/// `value` written at the storage `offsets` of the CPU tensor `dst` (an advanced-index
/// assignment): a number, or a tensor broadcast to `shape` (the indexed shape), cast to
/// `dst`'s dtype and read in full before the first write (it may share `dst`'s storage).
pub(crate) fn scatter(
    op: &str,
    dst: &Tensor,
    offsets: &[usize],
    shape: &[usize],
    value: Operand<'_>,
) -> Result<()> {
    let values;
    let src = match value {
        Operand::Scalar(v) => Src::Scalar(v),
        Operand::Tensor(v) => {
            rules::check_broadcast(op, shape, v.shape())?;
            let _g = no_grad();
            let host = crate::ops::to_device(&v.detach(), dst.device())?;
            values = crate::ops::cast(&host, dst.dtype())?;
            Src::Tensor(&values)
        }
    };
    let done = cpu::scatter(op, dst.data(), offsets, shape, src);
    record(dst);
    done
}

/// `other` as the source of an update of `dst`: a tensor that broadcasts to `dst`'s shape on
/// `dst`'s device (a 0-d tensor elsewhere is read as a number, as PyTorch allows), or a number.
fn source<'a>(op: &str, dst: &Tensor, other: Operand<'a>) -> Result<Src<'a>> {
    match other {
        Operand::Scalar(v) => Ok(Src::Scalar(v)),
        Operand::Tensor(t) => {
            if t.device() != dst.device() {
                if t.ndim() == 0 {
                    return Ok(Src::Scalar(t.item()?));
                }
                return Err(Error::device(
                    op,
                    format!(
                        "expected all tensors on one device, found {} (the tensor written) and \
                         {} (the operand)",
                        dst.device(),
                        t.device()
                    ),
                ));
            }
            rules::check_broadcast(op, dst.shape(), t.shape())?;
            Ok(Src::Tensor(t))
        }
    }
}

/// A number given as a Python-style scalar or a 0-d tensor (`fill_`'s and `masked_fill_`'s
/// value): PyTorch refuses tensors with dimensions.
fn scalar_value(op: &str, value: Operand<'_>) -> Result<f64> {
    match value {
        Operand::Scalar(v) => Ok(v),
        Operand::Tensor(t) if t.ndim() == 0 => t.item(),
        Operand::Tensor(t) => Err(Error::shape(
            op,
            format!(
                "only supports a 0-dimensional value tensor, but got a tensor with {} \
                 dimension(s)",
                t.ndim()
            ),
        )),
    }
}

/// `other` as a tensor for an out-of-place computation of a recorded write into `dst`: a
/// number becomes a 0-d tensor of `dst`'s dtype on its device, and a 0-d tensor on another
/// device is moved there (differentiably). An operand sharing `dst`'s storage (`y *= y`) is
/// read through a differentiable clone: the write overwrites what a backward would read.
fn operand_tensor(dst: &Tensor, other: Operand<'_>) -> Result<Tensor> {
    match other {
        Operand::Scalar(v) => crate::ops::full(&[], v, dst.dtype(), dst.device()),
        Operand::Tensor(t) if std::sync::Arc::ptr_eq(t.storage(), dst.storage()) => {
            crate::ops::clone(t)
        }
        Operand::Tensor(t) => crate::ops::to_device(t, dst.device()),
    }
}

/// `value` over every element, linked to `old` with a zero gradient, so the rebased tensor
/// still requires grad as in PyTorch (`y.zero_()` keeps `y` in the graph).
fn set_all(old: &Tensor, value: &Tensor) -> Result<Tensor> {
    crate::autograd::node::apply(Overwrite, &[old, value], &[])
}

/// `value` (input 1) broadcast to the shape of `old` (input 0) and cast to its dtype: a
/// whole overwrite. The gradient goes to `value` (summed over the broadcast axes; a `where`
/// with a true condition would build two
/// full-size selections in the backward to say the same). The gradient of `old` is zeros.
struct Overwrite;

impl Overwrite {
    fn compute(inputs: &[&Tensor]) -> Result<Tensor> {
        let _g = no_grad();
        let (old, value) = (inputs[0], inputs[1]);
        let shape: Vec<isize> = old.shape().iter().map(|&d| d as isize).collect();
        let v =
            crate::ops::broadcast_to(&crate::ops::to_dtype(&value.detach(), old.dtype())?, &shape)?;
        crate::ops::clone(&v)
    }
}

impl crate::autograd::node::Op for Overwrite {
    fn name(&self) -> &'static str {
        "copy_"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Self::compute(inputs)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Self::compute(inputs)
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn backward(
        &self,
        ctx: &crate::autograd::node::BackwardCtx<'_>,
    ) -> Result<Vec<Option<Tensor>>> {
        let value = &ctx.inputs[1];
        let g = if ctx.needs_grad(1) {
            let g = crate::ops::sum_to(ctx.grad, &value.shape)?;
            Some(crate::ops::to_dtype(&g, value.dtype)?)
        } else {
            None
        };
        // PyTorch's copy_ gives the overwritten values a zero gradient (not none: a leaf
        // behind them gets a `.grad` of zeros).
        let old = &ctx.inputs[0];
        let z = if ctx.needs_grad(0) {
            Some(crate::ops::zeros(&old.shape, old.dtype, ctx.grad.device())?)
        } else {
            None
        };
        Ok(vec![z, g])
    }
}

/// The mask of `masked_fill_` as the kernels read it: a bool tensor. The one place that
/// decides which masks are accepted: bool tensors, and (more lenient than PyTorch) tensors of
/// any other dtype, whose nonzero elements are true (cast to bool here).
fn mask_values(op: &str, mask: &Tensor, like: &Tensor) -> Result<Tensor> {
    if mask.device() != like.device() {
        return Err(Error::device(
            op,
            format!(
                "the mask is on {} but the tensor is on {}",
                mask.device(),
                like.device()
            ),
        ));
    }
    let _g = no_grad();
    crate::ops::cast(&mask.detach(), DType::Bool)
}

/// `dst += alpha * other` in place (`Tensor.add_`).
pub fn add_(dst: &Tensor, other: Operand<'_>, alpha: f64) -> Result<()> {
    axpy("add_", dst, other, alpha)
}

/// `dst -= alpha * other` in place (`Tensor.sub_`).
pub fn sub_(dst: &Tensor, other: Operand<'_>, alpha: f64) -> Result<()> {
    axpy("sub_", dst, other, -alpha)
}

fn axpy(op: &str, dst: &Tensor, other: Operand<'_>, alpha: f64) -> Result<()> {
    let how = rules::check_writable(op, dst, other.tensor().as_slice())?;
    dtypes::check_result(op, dst, other, false)?;
    dtypes::check_alpha(op, dst, alpha)?;
    let src = source(op, dst, other)?;
    if how == Write::Recorded {
        let o = operand_tensor(dst, other)?;
        return recorded::write_whole(op, dst, false, |old| {
            let o = if alpha == 1.0 {
                o
            } else {
                crate::ops::scale(&o, alpha)?
            };
            crate::ops::add(old, &o)
        });
    }
    match src {
        // `alpha * other` is one number: formed once, as PyTorch does.
        Src::Scalar(v) => write(op, dst, &[(Src::Scalar(alpha * v), Update::Axpy(1.0))]),
        src => write(op, dst, &[(src, Update::Axpy(alpha))]),
    }
}

/// `dst *= other` in place (`Tensor.mul_`).
pub fn mul_(dst: &Tensor, other: Operand<'_>) -> Result<()> {
    let how = rules::check_writable("mul_", dst, other.tensor().as_slice())?;
    dtypes::check_result("mul_", dst, other, false)?;
    binary("mul_", dst, other, Update::Mul, how, crate::ops::mul)
}

/// `dst /= other` in place (`Tensor.div_`).
pub fn div_(dst: &Tensor, other: Operand<'_>) -> Result<()> {
    let how = rules::check_writable("div_", dst, other.tensor().as_slice())?;
    dtypes::check_result("div_", dst, other, true)?;
    binary("div_", dst, other, Update::Div, how, crate::ops::div)
}

/// `dst = f(dst)` in place, for the updates without an in-place kernel (`//=`, `%=`, `**=`):
/// `f` runs unrecorded on `dst`'s values and its result is written back. Refused like the
/// other in-place ops (`others` are the tensors `f` reads besides `dst`), and when the result
/// cannot be written into `dst`: a dtype of a higher category (PyTorch: "result type Float
/// can't be cast to the desired output type Long") or another shape (`dst` does not
/// broadcast to the other operand).
pub fn update_with_(
    op: &str,
    dst: &Tensor,
    others: &[&Tensor],
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    let check = |r: &Tensor| -> Result<()> {
        if r.dtype().category() > dst.dtype().category() {
            return Err(Error::dtype(
                op,
                format!(
                    "result type {} can't be cast to the desired output type {}",
                    r.dtype(),
                    dst.dtype()
                ),
            ));
        }
        Ok(())
    };
    if rules::check_writable(op, dst, others)? == Write::Recorded {
        return recorded::write_whole(op, dst, true, |old| {
            let r = f(old)?;
            check(&r)?;
            Ok(r)
        });
    }
    let r = {
        let _g = no_grad();
        f(&dst.detach())?
    };
    check(&r)?;
    if r.shape() != dst.shape() {
        return Err(Error::shape(
            op,
            format!(
                "the result of shape {} does not fit the destination of shape {}",
                crate::layout::fmt_shape(r.shape()),
                crate::layout::fmt_shape(dst.shape())
            ),
        ));
    }
    assign(op, dst, Operand::Tensor(&r))
}

/// `u` of `other` into `dst` (rules and dtypes checked by the caller), or, for a recorded
/// write, `dst = out_of_place(dst, other)` computed from a clone of `dst` (the product's and
/// quotient's backward read it).
fn binary(
    op: &str,
    dst: &Tensor,
    other: Operand<'_>,
    u: Update,
    how: Write,
    out_of_place: fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<()> {
    let src = source(op, dst, other)?;
    if how == Write::Recorded {
        let o = operand_tensor(dst, other)?;
        return recorded::write_whole(op, dst, true, |old| out_of_place(old, &o));
    }
    write(op, dst, &[(src, u)])
}

/// Every element of `dst` set to `value` (a number or a 0-d tensor), in place.
pub fn fill_(dst: &Tensor, value: Operand<'_>) -> Result<()> {
    const OP: &str = "fill_";
    let how = rules::check_writable(OP, dst, value.tensor().as_slice())?;
    let v = scalar_value(OP, value)?;
    if how == Write::Recorded {
        let value = operand_tensor(dst, value)?;
        return recorded::write_whole(OP, dst, false, |old| set_all(old, &value));
    }
    write(OP, dst, &[(Src::Scalar(v), Update::Set)])
}

/// Every element of `dst` set to zero, in place.
pub fn zero_(dst: &Tensor) -> Result<()> {
    const OP: &str = "zero_";
    if rules::check_writable(OP, dst, &[])? == Write::Recorded {
        let zero = crate::ops::full(&[], 0.0, dst.dtype(), dst.device())?;
        return recorded::write_whole(OP, dst, false, |old| set_all(old, &zero));
    }
    write(OP, dst, &[(Src::Scalar(0.0), Update::Set)])
}

/// `src`'s elements copied into `dst` in place: broadcast to `dst`'s shape, cast to its dtype,
/// and moved from another device when `src` lives elsewhere.
pub fn copy_(dst: &Tensor, src: &Tensor) -> Result<()> {
    const OP: &str = "copy_";
    if rules::check_writable(OP, dst, &[src])? == Write::Recorded {
        rules::check_broadcast(OP, dst.shape(), src.shape())?;
        let value = crate::ops::to_device(src, dst.device())?;
        return recorded::write_whole(OP, dst, false, |old| set_all(old, &value));
    }
    assign(OP, dst, Operand::Tensor(src))
}

/// `value` written over every element of `dst` (checked for overlap, broadcast, moved across
/// devices), without the grad-mode rules, which the caller checked on the tensor it writes
/// (`dst` may be a view of it): `copy_` and `t[idx] = v`.
pub(crate) fn assign(op: &str, dst: &Tensor, value: Operand<'_>) -> Result<()> {
    rules::check_no_overlap(op, dst)?;
    let src = match value {
        Operand::Scalar(v) => return write(op, dst, &[(Src::Scalar(v), Update::Set)]),
        Operand::Tensor(src) => src,
    };
    rules::check_broadcast(op, dst.shape(), src.shape())?;
    if src.device() != dst.device() {
        let moved = {
            let _g = no_grad();
            crate::ops::to_device(&src.detach(), dst.device())?
        };
        return write(op, dst, &[(Src::Tensor(&moved), Update::Set)]);
    }
    write(op, dst, &[(Src::Tensor(src), Update::Set)])
}

/// Every element of `dst` clamped into `[min, max]` in place (either bound may be None, not
/// both): `min(max(x, min), max)`, NaN propagating, as [`crate::ops::clamp`].
pub fn clamp_(dst: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<()> {
    clamp_by_(dst, min.map(Bound::Scalar), max.map(Bound::Scalar))
}

/// [`clamp_`] with each bound a number or a tensor broadcast to `dst`'s shape.
pub fn clamp_by_(dst: &Tensor, min: Option<Bound<'_>>, max: Option<Bound<'_>>) -> Result<()> {
    const OP: &str = "clamp_";
    if min.is_none() && max.is_none() {
        return Err(Error::value(
            OP,
            "At least one of 'min' or 'max' must not be None",
        ));
    }
    let (lo, hi) = (min.map(Operand::from), max.map(Operand::from));
    let tensors: Vec<&Tensor> = [lo, hi]
        .into_iter()
        .flatten()
        .filter_map(Operand::tensor)
        .collect();
    let how = rules::check_writable(OP, dst, &tensors)?;
    for b in [lo, hi].into_iter().flatten() {
        dtypes::check_result(OP, dst, b, false)?;
    }
    if how == Write::Recorded {
        for b in [lo, hi].into_iter().flatten() {
            source(OP, dst, b)?;
        }
        let lo_t = lo.map(|b| operand_tensor(dst, b)).transpose()?;
        let hi_t = hi.map(|b| operand_tensor(dst, b)).transpose()?;
        return recorded::write_whole(OP, dst, true, |old| {
            crate::ops::clamp_by(
                old,
                lo_t.as_ref().map(Bound::Tensor),
                hi_t.as_ref().map(Bound::Tensor),
            )
        });
    }
    let mut steps = Vec::with_capacity(2);
    if let Some(lo) = lo {
        steps.push((source(OP, dst, lo)?, Update::ClampMin));
    }
    if let Some(hi) = hi {
        steps.push((source(OP, dst, hi)?, Update::ClampMax));
    }
    write(OP, dst, &steps)
}

/// `value` (a number or a 0-d tensor) written into `dst` where `mask` (broadcast to `dst`'s
/// shape) is true, in place.
pub fn masked_fill_(dst: &Tensor, mask: &Tensor, value: Operand<'_>) -> Result<()> {
    const OP: &str = "masked_fill_";
    let mut operands = vec![mask];
    operands.extend(value.tensor());
    let how = rules::check_writable(OP, dst, &operands)?;
    let v = scalar_value(OP, value)?;
    let mask = mask_values(OP, mask, dst)?;
    rules::check_broadcast(OP, dst.shape(), mask.shape())?;
    if how == Write::Recorded {
        let value = operand_tensor(dst, value)?;
        return recorded::write_whole(OP, dst, false, |old| {
            crate::ops::masked_fill(old, &mask, &value)
        });
    }
    write(OP, dst, &[(Src::Tensor(&mask), Update::MaskedFill(v))])
}

/// `dst` filled with normal samples of mean `mean` and standard deviation `std`, in place,
/// from the engine's generator (`manual_seed` makes it reproducible; a fresh tensor gets the
/// values `randn` would draw, scaled and shifted).
pub fn normal_(dst: &Tensor, mean: f64, std: f64) -> Result<()> {
    const OP: &str = "normal_";
    if !(std.is_finite() && std >= 0.0 && mean.is_finite()) {
        return Err(Error::value(
            OP,
            format!("expects a finite mean and a finite std >= 0.0, got mean={mean}, std={std}"),
        ));
    }
    let how = rules::check_writable(OP, dst, &[])?;
    dtypes::check_float(OP, dst)?;
    let key = rng::reserve(dst.numel() as u64);
    random(OP, dst, how, Update::Normal { mean, std, key })
}

/// `dst` filled with uniform samples in `[low, high)`, in place, from the engine's generator
/// (the values `rand` would draw, for a fresh tensor and `[0, 1)`).
pub fn uniform_(dst: &Tensor, low: f64, high: f64) -> Result<()> {
    const OP: &str = "uniform_";
    if !(low <= high && (high - low).is_finite()) {
        return Err(Error::value(
            OP,
            format!("expects to return a [from, to) range, but found from={low} > to={high}"),
        ));
    }
    let how = rules::check_writable(OP, dst, &[])?;
    dtypes::check_float(OP, dst)?;
    let key = rng::reserve(dst.numel() as u64);
    random(OP, dst, how, Update::Uniform { low, high, key })
}

/// `dst` filled with exponential samples of rate `lambd` (`-ln(1 - u) / lambd`), in place,
/// from the engine's generator, as PyTorch's `exponential_`.
pub fn exponential_(dst: &Tensor, lambd: f64) -> Result<()> {
    const OP: &str = "exponential_";
    if lambd.is_nan() || lambd <= 0.0 {
        return Err(Error::value(
            OP,
            format!("expects lambda > 0.0, but found lambda={lambd}"),
        ));
    }
    let how = rules::check_writable(OP, dst, &[])?;
    dtypes::check_float(OP, dst)?;
    let key = rng::reserve(dst.numel() as u64);
    random(OP, dst, how, Update::Exponential { lambd, key })
}

/// `dst` filled with Bernoulli(`p`) samples (1 with probability `p`, else 0), in place, as
/// PyTorch's `bernoulli_(p)` with a number. A tensor of probabilities is
/// [`bernoulli_tensor_`].
pub fn bernoulli_(dst: &Tensor, p: f64) -> Result<()> {
    const OP: &str = "bernoulli_";
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value(
            OP,
            format!("expects 0 <= p <= 1, but got p={p}"),
        ));
    }
    let how = rules::check_writable(OP, dst, &[])?;
    dtypes::check_float(OP, dst)?;
    let key = rng::reserve(dst.numel() as u64);
    random(OP, dst, how, Update::Bernoulli { p, key })
}

/// `dst` filled with Bernoulli samples of the probabilities `p` (broadcast to `dst`'s
/// shape), in place: the values `bernoulli(p)` draws, written as `copy_` writes.
pub fn bernoulli_tensor_(dst: &Tensor, p: &Tensor) -> Result<()> {
    const OP: &str = "bernoulli_";
    rules::check_writable(OP, dst, &[p])?;
    dtypes::check_float(OP, dst)?;
    rules::check_broadcast(OP, dst.shape(), p.shape())?;
    let shape: Vec<isize> = dst.shape().iter().map(|&d| d as isize).collect();
    let p = crate::ops::broadcast_to(&p.detach(), &shape)?;
    let drawn = crate::ops::bernoulli(&p)?;
    copy_(dst, &drawn)
}

/// A random fill `u` of `dst`; a recorded one draws the same values into a fresh tensor and
/// writes them with a zero gradient to the old ones.
fn random(op: &str, dst: &Tensor, how: Write, u: Update) -> Result<()> {
    if how == Write::Plain {
        return write(op, dst, &[(Src::None, u)]);
    }
    let fresh = crate::ops::zeros(dst.shape(), dst.dtype(), dst.device())?;
    write(op, &fresh, &[(Src::None, u)])?;
    recorded::write_whole(op, dst, false, |old| set_all(old, &fresh))
}

impl Tensor {
    /// How many in-place writes this tensor's storage has seen (shared by all its views;
    /// PyTorch's `_version`).
    pub fn version(&self) -> u64 {
        self.storage().version()
    }
    /// `self += alpha * other` in place; returns `self` (see [`add_`]).
    pub fn add_<'a>(&self, other: impl Into<Operand<'a>>, alpha: f64) -> Result<&Tensor> {
        add_(self, other.into(), alpha).map(|_| self)
    }
    /// `self -= alpha * other` in place; returns `self` (see [`sub_`]).
    pub fn sub_<'a>(&self, other: impl Into<Operand<'a>>, alpha: f64) -> Result<&Tensor> {
        sub_(self, other.into(), alpha).map(|_| self)
    }
    /// `self *= other` in place; returns `self` (see [`mul_`]).
    pub fn mul_<'a>(&self, other: impl Into<Operand<'a>>) -> Result<&Tensor> {
        mul_(self, other.into()).map(|_| self)
    }
    /// `self /= other` in place; returns `self` (see [`div_`]).
    pub fn div_<'a>(&self, other: impl Into<Operand<'a>>) -> Result<&Tensor> {
        div_(self, other.into()).map(|_| self)
    }
    /// Every element set to `value` in place; returns `self` (see [`fill_`]).
    pub fn fill_<'a>(&self, value: impl Into<Operand<'a>>) -> Result<&Tensor> {
        fill_(self, value.into()).map(|_| self)
    }
    /// Every element set to zero in place; returns `self` (see [`zero_`]).
    pub fn zero_(&self) -> Result<&Tensor> {
        zero_(self).map(|_| self)
    }
    /// `src` copied in (broadcast, cast, across devices); returns `self` (see [`copy_`]).
    pub fn copy_(&self, src: &Tensor) -> Result<&Tensor> {
        copy_(self, src).map(|_| self)
    }
    /// Clamped into `[min, max]` in place; returns `self` (see [`clamp_`]).
    pub fn clamp_(&self, min: Option<f64>, max: Option<f64>) -> Result<&Tensor> {
        clamp_(self, min, max).map(|_| self)
    }
    /// `value` where `mask` is true, in place; returns `self` (see [`masked_fill_`]).
    pub fn masked_fill_<'a>(
        &self,
        mask: &Tensor,
        value: impl Into<Operand<'a>>,
    ) -> Result<&Tensor> {
        masked_fill_(self, mask, value.into()).map(|_| self)
    }
    /// Normal samples in place; returns `self` (see [`normal_`]).
    pub fn normal_(&self, mean: f64, std: f64) -> Result<&Tensor> {
        normal_(self, mean, std).map(|_| self)
    }
    /// Uniform samples in `[low, high)` in place; returns `self` (see [`uniform_`]).
    pub fn uniform_(&self, low: f64, high: f64) -> Result<&Tensor> {
        uniform_(self, low, high).map(|_| self)
    }
}
