//! Sampling from distributions given by tensors: `multinomial`, `bernoulli`, `normal` with
//! tensor parameters, and `randperm`.
//!
//! Every draw goes through the engine's counter-based generator (`rand`, `randn` or a
//! reserved key), so it is reproducible under `manual_seed` and a `Generator`, and a
//! recompute inside a checkpoint replays the forward's draws. The samples are not
//! differentiable (PyTorch's gradients of these are zero): the results never require grad.
//! The work is done on the host and moved to the input's device, as `randint` does.

use super::{from_vec, to_device, to_dtype};
use crate::cpu;
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::fmt_shape;
use crate::rng;
use crate::tensor::Tensor;

/// The values of `t` as float64, in C order, on the host.
fn host_f64(t: &Tensor) -> Result<Vec<f64>> {
    t.try_to_vec::<f64>()
}

/// `num_samples` category indices per row of `probs` (`(n,)` or `(m, n)` non-negative
/// weights, not necessarily normalised), as PyTorch's `multinomial`: with replacement each
/// draw is independent; without it, the indices of a row are distinct, drawn in the order of
/// successive weighted draws (the exponential-race form: the `k` largest `w / E` with `E`
/// exponential). Returns int64 of shape `(num_samples,)` or `(m, num_samples)`.
pub fn multinomial(probs: &Tensor, num_samples: usize, replacement: bool) -> Result<Tensor> {
    const OP: &str = "multinomial";
    if probs.ndim() != 1 && probs.ndim() != 2 {
        return Err(Error::shape(
            OP,
            format!(
                "prob_dist must be 1 or 2 dim, got shape {}",
                fmt_shape(probs.shape())
            ),
        ));
    }
    if !probs.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!(
                "only supports floating-point dtypes for input, got: {}",
                probs.dtype()
            ),
        ));
    }
    let n = *probs.shape().last().unwrap_or(&0);
    let rows = if probs.ndim() == 2 {
        probs.shape()[0]
    } else {
        1
    };
    if num_samples == 0 {
        return Err(Error::value(
            OP,
            "cannot sample n_sample <= 0 samples".to_string(),
        ));
    }
    if n == 0 && rows > 0 {
        return Err(Error::value(
            OP,
            "number of categories cannot be zero".to_string(),
        ));
    }
    if !replacement && num_samples > n {
        return Err(Error::value(
            OP,
            format!("cannot sample n_sample > prob_dist.size(-1) samples without replacement ({num_samples} > {n})"),
        ));
    }
    let w = host_f64(probs)?;
    for row in w.chunks(n.max(1)) {
        if row.iter().any(|&p| !p.is_finite() || p < 0.0) {
            return Err(Error::value(
                OP,
                "probability tensor contains either `inf`, `nan` or element < 0",
            ));
        }
        let total: f64 = row.iter().sum();
        if total <= 0.0 {
            return Err(Error::value(
                OP,
                "invalid multinomial distribution (sum of probabilities <= 0)",
            ));
        }
        if !replacement && row.iter().filter(|&&p| p > 0.0).count() < num_samples {
            return Err(Error::value(
                OP,
                "invalid multinomial distribution (with replacement=False, not enough \
                 non-negative category to sample)",
            ));
        }
    }
    let draws_per_row = if replacement { num_samples } else { n };
    let u = super::rand(&[rows, draws_per_row], DType::F64, Device::Cpu)?.try_to_vec::<f64>()?;
    let mut out: Vec<i64> = Vec::with_capacity(rows * num_samples);
    for (row, u) in w.chunks(n.max(1)).zip(u.chunks(draws_per_row.max(1))) {
        if replacement {
            let cdf = running_sums(row);
            out.extend(u.iter().map(|&x| pick(row, &cdf, x)));
        } else {
            out.extend(race(row, u, num_samples));
        }
    }
    let shape: Vec<usize> = if probs.ndim() == 2 {
        vec![rows, num_samples]
    } else {
        vec![num_samples]
    };
    to_device(&from_vec(out, &shape), probs.device())
}

/// The running sums of a row's weights (built once per row, searched once per draw).
fn running_sums(row: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    row.iter()
        .map(|&p| {
            acc += p;
            acc
        })
        .collect()
}

/// The category whose cumulative weight interval holds `u · total` (binary search over the
/// running sums `cdf`; a zero weight's empty interval is never chosen).
fn pick(row: &[f64], cdf: &[f64], u: f64) -> i64 {
    let target = u * cdf.last().copied().unwrap_or(0.0);
    let i = cdf.partition_point(|&c| c <= target);
    // Rounding can put `target` at the very top: the last category with weight.
    let last = row.iter().rposition(|&p| p > 0.0).unwrap_or(0);
    i.min(last) as i64
}

/// The indices of the `k` largest `w / E` (`E = -ln(1 - u)`, exponential), largest first:
/// `k` successive draws without replacement, each proportional to the remaining weights.
fn race(row: &[f64], u: &[f64], k: usize) -> Vec<i64> {
    let mut keys: Vec<(f64, usize)> = row
        .iter()
        .zip(u)
        .enumerate()
        .map(|(i, (&p, &u))| {
            let e = -(-u).ln_1p();
            (if p > 0.0 { p / e } else { -1.0 }, i)
        })
        .collect();
    keys.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    keys.iter().take(k).map(|&(_, i)| i as i64).collect()
}

/// A random permutation of `0..n` (Fisher-Yates over one reserved key), in `dtype` (int64,
/// int32 or a float dtype), on `device`.
pub fn randperm(n: usize, dtype: DType, device: Device) -> Result<Tensor> {
    const OP: &str = "randperm";
    if dtype == DType::Bool {
        return Err(Error::dtype(OP, "randperm is not implemented for bool"));
    }
    if dtype == DType::I32 && n > i32::MAX as usize + 1 {
        return Err(Error::value(
            OP,
            format!("n is too large for result tensor type int32: {n}"),
        ));
    }
    let key = rng::reserve(n as u64);
    let perm = cpu::catch_oom(OP, || {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            // Multiply-shift maps 64 random bits to 0..=i without modulo bias worth noting
            // (below 2^-32 for any n a tensor can have).
            let j = ((rng::bits(key, i as u64) as u128 * (i as u128 + 1)) >> 64) as usize;
            p.swap(i, j);
        }
        Ok(
            crate::dispatch_any!(dtype, T => from_vec(cpu::collect_exact(p.iter().map(|&i| T::from_i64(i as i64))), &[n])),
        )
    })?;
    to_device(&perm, device)
}

/// Samples of Bernoulli(`p`) for each probability in `probs` (in `[0, 1]`), as 0/1 in
/// `probs`' float dtype and shape: `rand < p`.
pub fn bernoulli(probs: &Tensor) -> Result<Tensor> {
    const OP: &str = "bernoulli";
    if !probs.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!(
                "expects a floating point tensor of probabilities, got {}",
                probs.dtype()
            ),
        ));
    }
    let p = host_f64(probs)?;
    if p.iter().any(|&p| !(0.0..=1.0).contains(&p)) {
        return Err(Error::value(
            OP,
            "expects 0 <= p <= 1 for every element of the probability tensor",
        ));
    }
    let u = super::rand(probs.shape(), DType::F64, Device::Cpu)?.try_to_vec::<f64>()?;
    let dtype = probs.dtype();
    let out = crate::dispatch_any!(dtype, T => from_vec(
        cpu::collect_exact(u.iter().zip(&p).map(|(&u, &p)| T::from_f64(if u < p { 1.0 } else { 0.0 }))),
        probs.shape(),
    ));
    to_device(&out, probs.device())
}

/// Normal samples of means `mean` and standard deviations `std` (broadcast together), as
/// PyTorch's `normal(mean, std)`: `mean + std · z` with `z` as `randn` draws it, not
/// differentiable. `std` must be non-negative.
pub fn normal(mean: &Tensor, std: &Tensor) -> Result<Tensor> {
    const OP: &str = "normal";
    for (what, t) in [("mean", mean), ("std", std)] {
        if !t.dtype().is_float() {
            return Err(Error::dtype(
                OP,
                format!("expects a floating point {what}, got {}", t.dtype()),
            ));
        }
    }
    if host_f64(std)?.iter().any(|&s| s.is_nan() || s < 0.0) {
        return Err(Error::value(
            OP,
            "expects all elements of std >= 0.0".to_string(),
        ));
    }
    let shape = crate::layout::broadcast_shapes(OP, mean.shape(), std.shape())?;
    let dtype = mean.dtype().promote(std.dtype());
    let _g = no_grad();
    let z = super::randn(&shape, dtype, mean.device())?;
    let (m, s) = (
        to_dtype(&mean.detach(), dtype)?,
        to_dtype(&std.detach(), dtype)?,
    );
    super::add(&m, &super::mul(&s, &z)?)
}
