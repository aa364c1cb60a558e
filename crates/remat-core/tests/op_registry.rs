//! One table of remat-core's public ops (`rows()`), and the checks generated from it for
//! every row: the forward against a float64 reference (float64 and float32 inputs) and
//! float64 gradients against central finite differences, and second-order gradients
//! (`create_graph`) against finite differences of the first-order ones.
//!
//! A row is the op (a function of the input tensors), its inputs (shape and value domain),
//! a float64 reference built from the small n-d helpers in `common::reference`, and the inputs
//! it is differentiable in. Adding an op is one `row(...)` in `rows()`; e.g. the planned
//! `ops::sin` / `ops::cos` are one line each in the "unary math" block.
#![allow(clippy::unwrap_used)]

mod common;
use common::reference::{self as r, Arr};
use common::{check_grad, det};
use remat_core::ops::{self, IndexItem};
use remat_core::{DType, Result, Tensor};
use std::sync::Mutex;

/// Random ops reseed the global generator: rows run one at a time in this binary.
static SERIAL: Mutex<()> = Mutex::new(());

/// How an input's values are drawn.
#[derive(Clone, Copy, Debug)]
enum Domain {
    /// [-2, 2)
    Any,
    /// [0.2, 2.2): log, sqrt, pow bases
    Pos,
    /// |x| in [0.2, 2): relu's kink, divisors
    NonZero,
    /// distinct values 0.15 apart: max without ties
    Distinct,
    /// 0.0 or 1.0: where's condition
    Mask,
}

type RunFn = fn(&[Tensor]) -> Result<Tensor>;
type RefFn = fn(&[Arr]) -> Arr;

struct Row {
    name: &'static str,
    /// (shape, domain) of every input.
    inputs: Vec<(Vec<usize>, Domain)>,
    run: RunFn,
    reference: RefFn,
    /// Inputs with gradients (empty: not differentiable).
    diff: Vec<usize>,
    /// Forward tolerance for float32 inputs (relative to 1 + |expected|).
    tol32: f64,
    /// Finite-difference tolerance.
    grad_tol: f64,
}

/// A row with the default tolerances, differentiable in every input.
fn row(name: &'static str, inputs: &[(&[usize], Domain)], run: RunFn, reference: RefFn) -> Row {
    Row {
        name,
        inputs: inputs.iter().map(|(s, d)| (s.to_vec(), *d)).collect(),
        run,
        reference,
        diff: (0..inputs.len()).collect(),
        tol32: 2e-6,
        grad_tol: 1e-6,
    }
}

impl Row {
    fn diff(mut self, d: &[usize]) -> Row {
        self.diff = d.to_vec();
        self
    }
    fn tol32(mut self, t: f64) -> Row {
        self.tol32 = t;
        self
    }
    fn grad_tol(mut self, t: f64) -> Row {
        self.grad_tol = t;
        self
    }
}

use Domain::{Any, Distinct, Mask, NonZero, Pos};

const SEED: u64 = 1234;
const LABELS: [i64; 4] = [0, 3, 1, 4];

fn sl(start: Option<isize>, stop: Option<isize>, step: isize) -> IndexItem {
    IndexItem::Slice { start, stop, step }
}

fn dropout_seeded(x: &Tensor) -> Result<Tensor> {
    remat_core::manual_seed(SEED);
    ops::dropout(x, 0.4, true)
}

/// The mask `dropout_seeded` draws for `shape` (it depends on the seed and element index only).
fn dropout_mask(shape: &[usize]) -> Arr {
    let ones = ops::ones(shape, DType::F64, remat_core::Device::Cpu).unwrap();
    let kept = dropout_seeded(&ones).unwrap();
    Arr::new(shape, kept.to_vec::<f64>())
}

/// Variance of a 2-D array along its last axis (`n` long) dividing by `n - correction`.
fn ref_var(a: &Arr, n: usize, correction: f64) -> Arr {
    let v = a
        .data
        .chunks(n)
        .map(|c| {
            let m = c.iter().sum::<f64>() / n as f64;
            c.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n as f64 - correction)
        })
        .collect();
    Arr::new(&[a.shape[0]], v)
}

fn rows() -> Vec<Row> {
    vec![
        // ---- unary math
        row(
            "neg",
            &[(&[2, 3], Any)],
            |t| ops::neg(&t[0]),
            |a| r::map(&a[0], |v| -v),
        ),
        row(
            "exp",
            &[(&[2, 3], Any)],
            |t| ops::exp(&t[0]),
            |a| r::map(&a[0], f64::exp),
        ),
        row(
            "log",
            &[(&[2, 3], Pos)],
            |t| ops::log(&t[0]),
            |a| r::map(&a[0], f64::ln),
        ),
        row(
            "sqrt",
            &[(&[2, 3], Pos)],
            |t| ops::sqrt(&t[0]),
            |a| r::map(&a[0], f64::sqrt),
        ),
        row(
            "sin",
            &[(&[2, 3], Any)],
            |t| ops::sin(&t[0]),
            |a| r::map(&a[0], f64::sin),
        ),
        row(
            "cos",
            &[(&[2, 3], Any)],
            |t| ops::cos(&t[0]),
            |a| r::map(&a[0], f64::cos),
        ),
        row(
            "tan",
            &[(&[2, 3], Any)],
            |t| ops::tan(&ops::scale(&t[0], 0.5)?), // [-1, 1): away from the poles at ±pi/2
            |a| r::map(&a[0], |v| (0.5 * v).tan()),
        ),
        row(
            "abs",
            &[(&[2, 3], NonZero)],
            |t| ops::abs(&t[0]),
            |a| r::map(&a[0], f64::abs),
        ),
        row(
            "erf",
            &[(&[2, 3], Any)],
            |t| ops::erf(&t[0]),
            |a| r::map(&a[0], r::erf),
        ),
        row(
            "rsqrt",
            &[(&[2, 3], Pos)],
            |t| ops::rsqrt(&t[0]),
            |a| r::map(&a[0], |v| 1.0 / v.sqrt()),
        ),
        row(
            "square",
            &[(&[2, 3], Any)],
            |t| ops::square(&t[0]),
            |a| r::map(&a[0], |v| v * v),
        ),
        row(
            "log1p",
            &[(&[2, 3], Any)],
            |t| ops::log1p(&ops::scale(&t[0], 0.4)?), // [-0.8, 0.8): above the pole at -1
            |a| r::map(&a[0], |v| (0.4 * v).ln_1p()),
        ),
        row(
            "expm1",
            &[(&[2, 3], Any)],
            |t| ops::expm1(&t[0]),
            |a| r::map(&a[0], f64::exp_m1),
        ),
        row(
            "asin",
            &[(&[2, 3], Any)],
            |t| ops::asin(&ops::scale(&t[0], 0.45)?), // [-0.9, 0.9): inside (-1, 1)
            |a| r::map(&a[0], |v| (0.45 * v).asin()),
        ),
        row(
            "acos",
            &[(&[2, 3], Any)],
            |t| ops::acos(&ops::scale(&t[0], 0.45)?), // [-0.9, 0.9)
            |a| r::map(&a[0], |v| (0.45 * v).acos()),
        ),
        row(
            "atan",
            &[(&[2, 3], Any)],
            |t| ops::atan(&t[0]),
            |a| r::map(&a[0], f64::atan),
        ),
        row(
            "sinh",
            &[(&[2, 3], Any)],
            |t| ops::sinh(&t[0]),
            |a| r::map(&a[0], f64::sinh),
        ),
        row(
            "cosh",
            &[(&[2, 3], Any)],
            |t| ops::cosh(&t[0]),
            |a| r::map(&a[0], f64::cosh),
        ),
        row(
            "asinh",
            &[(&[2, 3], Any)],
            |t| ops::asinh(&t[0]),
            |a| r::map(&a[0], f64::asinh),
        ),
        row(
            "acosh",
            &[(&[2, 3], Pos)],
            |t| ops::acosh(&ops::add_scalar(&t[0], 0.9)?), // [1.1, 3.1): above 1
            |a| r::map(&a[0], |v| (v + 0.9).acosh()),
        ),
        row(
            "atanh",
            &[(&[2, 3], Any)],
            |t| ops::atanh(&ops::scale(&t[0], 0.45)?), // [-0.9, 0.9)
            |a| r::map(&a[0], |v| (0.45 * v).atanh()),
        ),
        row(
            "log2",
            &[(&[2, 3], Pos)],
            |t| ops::log2(&t[0]),
            |a| r::map(&a[0], f64::log2),
        ),
        row(
            "log10",
            &[(&[2, 3], Pos)],
            |t| ops::log10(&t[0]),
            |a| r::map(&a[0], f64::log10),
        ),
        row(
            "exp2",
            &[(&[2, 3], Any)],
            |t| ops::exp2(&t[0]),
            |a| r::map(&a[0], f64::exp2),
        ),
        row(
            "reciprocal",
            &[(&[2, 3], NonZero)],
            |t| ops::reciprocal(&t[0]),
            |a| r::map(&a[0], |v| 1.0 / v),
        ),
        // Piecewise constant: zero gradients (finite differences agree away from the jumps).
        row(
            "sign",
            &[(&[2, 3], NonZero)],
            |t| ops::sign(&t[0]),
            |a| r::map(&a[0], f64::signum),
        ),
        row(
            "floor",
            &[(&[2, 3], Any)],
            |t| ops::floor(&t[0]),
            |a| r::map(&a[0], f64::floor),
        ),
        row(
            "ceil",
            &[(&[2, 3], Any)],
            |t| ops::ceil(&t[0]),
            |a| r::map(&a[0], f64::ceil),
        ),
        row(
            "trunc",
            &[(&[2, 3], Any)],
            |t| ops::trunc(&t[0]),
            |a| r::map(&a[0], f64::trunc),
        ),
        row(
            "frac",
            &[(&[2, 3], Any)],
            |t| ops::frac(&t[0]), // gradient 1
            |a| r::map(&a[0], |v| v - v.trunc()),
        ),
        row(
            "round",
            &[(&[2, 3], Any)],
            |t| ops::round(&t[0]),
            |a| r::map(&a[0], f64::round_ties_even),
        ),
        row(
            "round_ties",
            &[(&[2, 3], Any)],
            // Exact halves: -2.5 .. 2.5 (x + frac(x) is a half for every input here).
            |t| ops::round(&ops::scale(&ops::round(&ops::scale(&t[0], 1.5)?)?, 0.5)?),
            |a| {
                r::map(&a[0], |v| {
                    (0.5 * (1.5 * v).round_ties_even()).round_ties_even()
                })
            },
        )
        .diff(&[]),
        row(
            "pow_scalar",
            &[(&[2, 3], Pos)],
            |t| ops::pow_scalar(&t[0], 1.7),
            |a| r::map(&a[0], |v| v.powf(1.7)),
        ),
        row(
            "pow_scalar_int",
            &[(&[2, 3], NonZero)],
            |t| ops::pow_scalar(&t[0], 3.0),
            |a| r::map(&a[0], |v| v.powi(3)),
        ),
        // ---- activations
        row(
            "tanh",
            &[(&[2, 3], Any)],
            |t| ops::tanh(&t[0]),
            |a| r::map(&a[0], f64::tanh),
        ),
        row(
            "sigmoid",
            &[(&[2, 3], Any)],
            |t| ops::sigmoid(&t[0]),
            |a| r::map(&a[0], |v| 1.0 / (1.0 + (-v).exp())),
        ),
        row(
            "relu",
            &[(&[2, 3], NonZero)],
            |t| ops::relu(&t[0]),
            |a| r::map(&a[0], |v| v.max(0.0)),
        ),
        row(
            "gelu",
            &[(&[2, 3], Any)],
            |t| ops::gelu(&t[0], false),
            |a| r::map(&a[0], r::gelu),
        ),
        row(
            "gelu_tanh",
            &[(&[2, 3], Any)],
            |t| ops::gelu(&t[0], true),
            |a| r::map(&a[0], r::gelu_tanh),
        ),
        row(
            "silu",
            &[(&[2, 3], Any)],
            |t| ops::silu(&t[0]),
            |a| r::map(&a[0], |v| v / (1.0 + (-v).exp())),
        ),
        row(
            "softplus",
            &[(&[2, 3], Any)],
            |t| ops::softplus(&t[0], 1.0, 20.0),
            |a| r::map(&a[0], |v| v.exp().ln_1p()),
        ),
        row(
            "softplus_beta",
            &[(&[3, 4], Any)],
            // beta x above the threshold 1.5 (x > 0.75) is linear.
            |t| ops::softplus(&t[0], 2.0, 1.5),
            |a| {
                r::map(&a[0], |v| {
                    if 2.0 * v > 1.5 {
                        v
                    } else {
                        (2.0 * v).exp().ln_1p() / 2.0
                    }
                })
            },
        ),
        row(
            "leaky_relu",
            &[(&[2, 3], NonZero)],
            |t| ops::leaky_relu(&t[0], 0.1),
            |a| r::map(&a[0], |v| if v > 0.0 { v } else { 0.1 * v }),
        ),
        // ---- clamping and elementwise extrema (inputs away from the kinks)
        row(
            "clamp",
            &[(&[3, 4], Any)],
            |t| ops::clamp(&t[0], Some(-0.5), Some(0.8)),
            |a| r::map(&a[0], |v| v.clamp(-0.5, 0.8)),
        ),
        row(
            "clamp_min",
            &[(&[2, 3], Any)],
            |t| ops::clamp(&t[0], Some(0.3), None),
            |a| r::map(&a[0], |v| v.max(0.3)),
        ),
        row(
            "clamp_max",
            &[(&[2, 3], Any)],
            |t| t[0].clamp(None, Some(-0.2)),
            |a| r::map(&a[0], |v| v.min(-0.2)),
        ),
        row(
            "clamp_inverted",
            &[(&[2, 3], Any)],
            |t| ops::clamp(&t[0], Some(1.0), Some(-1.0)), // min > max: max everywhere
            |a| r::map(&a[0], |_| -1.0),
        ),
        row(
            "clamp_tensor",
            &[(&[2, 3], Any), (&[3], Any), (&[2, 1], Any)],
            |t| {
                let (lo, hi) = (ops::Bound::Tensor(&t[1]), ops::Bound::Tensor(&t[2]));
                ops::clamp_by(&t[0], Some(lo), Some(hi))
            },
            |a| r::zip(&r::zip(&a[0], &a[1], f64::max), &a[2], f64::min),
        ),
        row(
            "maximum",
            &[(&[2, 3], Any), (&[3], Any)],
            |t| ops::maximum(&t[0], &t[1]),
            |a| r::zip(&a[0], &a[1], f64::max),
        ),
        row(
            "minimum",
            &[(&[2, 1, 3], Any), (&[4, 1], Any)],
            |t| t[0].minimum(&t[1]),
            |a| r::zip(&a[0], &a[1], f64::min),
        ),
        row(
            "atan2",
            // Nonzero: away from the origin and the branch cut (b < 0, a = 0).
            &[(&[2, 3], NonZero), (&[3], NonZero)],
            |t| t[0].atan2(&t[1]),
            |a| r::zip(&a[0], &a[1], f64::atan2),
        ),
        // ---- interpolation
        row(
            "lerp",
            &[(&[2, 3], Any), (&[3], Any)],
            |t| ops::lerp(&t[0], &t[1], 0.3),
            |a| r::zip(&a[0], &a[1], |s, e| s + 0.3 * (e - s)),
        ),
        row(
            "lerp_high_weight",
            &[(&[3, 1], Any), (&[1, 4], Any)],
            |t| t[0].lerp(&t[1], 0.8), // |weight| >= 0.5: PyTorch's form from `end`
            |a| r::zip(&a[0], &a[1], |s, e| s + 0.8 * (e - s)),
        ),
        row(
            "lerp_tensor",
            &[(&[2, 3], Any), (&[3], Any), (&[2, 1], Any)],
            |t| ops::lerp_tensor(&t[0], &t[1], &t[2]),
            |a| {
                let d = r::zip(&a[1], &a[0], |e, s| e - s);
                r::zip(&a[0], &r::zip(&a[2], &d, |w, d| w * d), |s, wd| s + wd)
            },
        ),
        // ---- binary arithmetic (broadcasting)
        row(
            "add",
            &[(&[2, 1, 3], Any), (&[4, 1], Any)],
            |t| ops::add(&t[0], &t[1]),
            |a| r::zip(&a[0], &a[1], |x, y| x + y),
        ),
        row(
            "sub",
            &[(&[2, 3], Any), (&[3], Any)],
            |t| ops::sub(&t[0], &t[1]),
            |a| r::zip(&a[0], &a[1], |x, y| x - y),
        ),
        row(
            "mul",
            &[(&[3, 1], Any), (&[1, 4], Any)],
            |t| ops::mul(&t[0], &t[1]),
            |a| r::zip(&a[0], &a[1], |x, y| x * y),
        ),
        row(
            "div",
            &[(&[2, 3], Any), (&[2, 1], NonZero)],
            |t| ops::div(&t[0], &t[1]),
            |a| r::zip(&a[0], &a[1], |x, y| x / y),
        ),
        row(
            "pow",
            &[(&[2, 3], Pos), (&[3], Any)],
            |t| ops::pow(&t[0], &t[1]),
            |a| r::zip(&a[0], &a[1], f64::powf),
        ),
        // ---- linear algebra
        row(
            "matmul",
            &[(&[2, 3], Any), (&[3, 4], Any)],
            |t| ops::matmul(&t[0], &t[1]),
            |a| r::matmul(&a[0], &a[1]),
        )
        .tol32(1e-5),
        row(
            "matmul_batched",
            &[(&[2, 1, 2, 3], Any), (&[3, 3, 2], Any)],
            |t| ops::matmul(&t[0], &t[1]),
            |a| r::matmul(&a[0], &a[1]),
        )
        .tol32(1e-5),
        row(
            "matmul_vec",
            &[(&[3], Any), (&[2, 3, 2], Any)],
            |t| ops::matmul(&t[0], &t[1]),
            |a| r::matmul(&a[0], &a[1]),
        )
        .tol32(1e-5),
        row(
            "matmul_dot",
            &[(&[4], Any), (&[4], Any)],
            |t| ops::matmul(&t[0], &t[1]),
            |a| r::matmul(&a[0], &a[1]),
        )
        .tol32(1e-5),
        row(
            "linear",
            &[(&[4, 3], Any), (&[2, 3], Any), (&[2], Any)],
            |t| ops::linear(&t[0], &t[1], Some(&t[2])),
            |a| {
                r::zip(
                    &r::matmul(&a[0], &r::permute(&a[1], &[1, 0])),
                    &a[2],
                    |x, y| x + y,
                )
            },
        )
        .tol32(1e-5),
        row(
            "linear_nobias",
            &[(&[2, 2, 3], Any), (&[4, 3], Any)],
            |t| ops::linear(&t[0], &t[1], None),
            |a| r::matmul(&a[0], &r::permute(&a[1], &[1, 0])),
        )
        .tol32(1e-5),
        row(
            "mm",
            &[(&[2, 3], Any), (&[3, 4], Any)],
            |t| ops::mm(&t[0], &t[1]),
            |a| r::matmul(&a[0], &a[1]),
        )
        .tol32(1e-5),
        row(
            "bmm",
            &[(&[2, 2, 3], Any), (&[2, 3, 4], Any)],
            |t| ops::bmm(&t[0], &t[1]),
            |a| r::matmul(&a[0], &a[1]),
        )
        .tol32(1e-5),
        row(
            "addmm",
            &[(&[4], Any), (&[2, 3], Any), (&[3, 4], Any)],
            |t| ops::addmm(&t[0], &t[1], &t[2], 0.5, -2.0),
            |a| r::zip(&a[0], &r::matmul(&a[1], &a[2]), |x, p| 0.5 * x - 2.0 * p),
        )
        .tol32(1e-5),
        row(
            "baddbmm",
            &[(&[1, 4], Any), (&[2, 2, 3], Any), (&[2, 3, 4], Any)],
            |t| ops::baddbmm(&t[0], &t[1], &t[2], -1.0, 0.5),
            |a| r::zip(&a[0], &r::matmul(&a[1], &a[2]), |x, p| 0.5 * p - x),
        )
        .tol32(1e-5),
        row(
            "outer",
            &[(&[3], Any), (&[4], Any)],
            |t| ops::outer(&t[0], &t[1]),
            |a| r::einsum("i,j->ij", &[&a[0], &a[1]]),
        ),
        row(
            "einsum_attention",
            &[(&[2, 2, 3], Any), (&[2, 4, 3], Any)],
            |t| ops::einsum("bqd,bkd->bqk", t),
            |a| r::einsum("bqd,bkd->bqk", &[&a[0], &a[1]]),
        )
        .tol32(1e-5),
        row(
            "einsum_chain",
            &[(&[2, 3], Any), (&[3, 4], Any), (&[4, 2], Any)],
            |t| ops::einsum("ij,jk,kl->li", t),
            |a| r::einsum("ij,jk,kl->li", &[&a[0], &a[1], &a[2]]),
        )
        .tol32(1e-5),
        row(
            "einsum_diagonal",
            &[(&[3, 2, 3], Any), (&[2], Any)],
            |t| ops::einsum("iji,j->ij", t),
            |a| r::einsum("iji,j->ij", &[&a[0], &a[1]]),
        )
        .tol32(1e-5),
        row(
            "einsum_trace_implicit",
            &[(&[3, 3], Any)],
            |t| ops::einsum("ii", t),
            |a| r::einsum("ii->", &[&a[0]]),
        )
        .tol32(1e-5),
        row(
            "einsum_ellipsis",
            &[(&[2, 1, 3], Any), (&[4, 3], Any)],
            |t| ops::einsum("...ij,kj->...ik", t),
            |a| r::einsum("zij,kj->zik", &[&a[0], &a[1]]),
        )
        .tol32(1e-5),
        // ---- softmax family, normalisation, dropout
        row(
            "softmax",
            &[(&[3, 4], Any)],
            |t| ops::softmax(&t[0], -1),
            |a| r::softmax(&a[0], 1),
        ),
        row(
            "softmax_axis0",
            &[(&[2, 3, 2], Any)],
            |t| ops::softmax(&t[0], 0),
            |a| r::softmax(&a[0], 0),
        ),
        row(
            "log_softmax",
            &[(&[2, 3, 4], Any)],
            |t| ops::log_softmax(&t[0], 1),
            |a| r::map(&r::softmax(&a[0], 1), f64::ln),
        ),
        row(
            "layer_norm",
            &[(&[3, 5], Any)],
            |t| ops::layer_norm(&t[0], None, None, 1e-5),
            |a| r::layer_norm(&a[0], None, None, 1e-5),
        )
        .tol32(2e-5)
        .grad_tol(1e-5),
        row(
            "layer_norm_affine",
            &[(&[2, 2, 4], Any), (&[4], Any), (&[4], Any)],
            |t| ops::layer_norm(&t[0], Some(&t[1]), Some(&t[2]), 1e-3),
            |a| r::layer_norm(&a[0], Some(&a[1]), Some(&a[2]), 1e-3),
        )
        .tol32(2e-5)
        .grad_tol(1e-5),
        row(
            "dropout",
            &[(&[4, 5], NonZero)],
            |t| dropout_seeded(&t[0]),
            |a| r::zip(&a[0], &dropout_mask(&a[0].shape), |x, m| x * m),
        ),
        // ---- reductions
        row(
            "sum_all",
            &[(&[2, 3], Any)],
            |t| ops::sum(&t[0], None, false),
            |a| r::reduce(&a[0], &[0, 1], false, r::Reduce::Sum),
        ),
        row(
            "sum_axes",
            &[(&[2, 3, 2], Any)],
            |t| ops::sum(&t[0], Some(&[0, -1][..]), true),
            |a| r::reduce(&a[0], &[0, 2], true, r::Reduce::Sum),
        ),
        // sum_to reduces a broadcast gradient inside backward passes and records no graph.
        row(
            "sum_to",
            &[(&[2, 3, 4], Any)],
            |t| ops::sum_to(&t[0], &[3, 1]),
            |a| r::reshape(&r::reduce(&a[0], &[0, 2], true, r::Reduce::Sum), &[3, 1]),
        )
        .diff(&[]),
        row(
            "mean",
            &[(&[2, 3, 2], Any)],
            |t| ops::mean(&t[0], Some(&[1][..]), false),
            |a| r::reduce(&a[0], &[1], false, r::Reduce::Mean),
        ),
        row(
            "mean_all",
            &[(&[3, 4], Any)],
            |t| ops::mean(&t[0], None, true),
            |a| r::reduce(&a[0], &[0, 1], true, r::Reduce::Mean),
        ),
        row(
            "max",
            &[(&[3, 4], Distinct)],
            |t| ops::max(&t[0], Some(&[0][..]), true),
            |a| r::reduce(&a[0], &[0], true, r::Reduce::Max),
        ),
        row(
            "max_all",
            &[(&[2, 3, 2], Distinct)],
            |t| ops::max(&t[0], None, false),
            |a| r::reduce(&a[0], &[0, 1, 2], false, r::Reduce::Max),
        ),
        row(
            "min",
            &[(&[3, 4], Distinct)],
            |t| ops::min(&t[0], Some(&[-1][..]), false),
            |a| {
                r::map(
                    &r::reduce(&r::map(&a[0], |v| -v), &[1], false, r::Reduce::Max),
                    |v| -v,
                )
            },
        ),
        row(
            "amax",
            &[(&[2, 3, 2], Distinct)],
            |t| ops::amax(&t[0], Some(&[0, 2][..]), true),
            |a| r::reduce(&a[0], &[0, 2], true, r::Reduce::Max),
        ),
        row(
            "amin_all",
            &[(&[2, 3], Distinct)],
            |t| ops::amin(&t[0], None, false),
            |a| {
                r::map(
                    &r::reduce(&r::map(&a[0], |v| -v), &[0, 1], false, r::Reduce::Max),
                    |v| -v,
                )
            },
        ),
        row(
            "prod",
            &[(&[2, 5], NonZero)],
            |t| ops::prod(&t[0], Some(1), false),
            |a| {
                Arr::new(
                    &[2],
                    a[0].data.chunks(5).map(|c| c.iter().product()).collect(),
                )
            },
        )
        .tol32(2e-5),
        row(
            "prod_all",
            &[(&[3, 2], NonZero)],
            |t| ops::prod(&t[0], None, true),
            |a| Arr::new(&[1, 1], vec![a[0].data.iter().product()]),
        )
        .tol32(2e-5),
        row(
            "var",
            &[(&[3, 4], Any)],
            |t| ops::var(&t[0], Some(&[1][..]), 1.0, false),
            |a| ref_var(&a[0], 4, 1.0),
        )
        .tol32(1e-5),
        row(
            "std",
            &[(&[3, 4], Any)],
            |t| ops::std(&t[0], Some(&[-1][..]), 0.0, false),
            |a| r::map(&ref_var(&a[0], 4, 0.0), f64::sqrt),
        )
        .tol32(1e-5)
        .grad_tol(1e-5),
        row(
            "logsumexp",
            &[(&[3, 4], Any)],
            |t| ops::logsumexp(&t[0], Some(&[1][..]), false),
            |a| {
                let s = r::reduce(&r::map(&a[0], f64::exp), &[1], false, r::Reduce::Sum);
                r::map(&s, f64::ln)
            },
        )
        .tol32(1e-5),
        row(
            "norm",
            &[(&[3, 4], NonZero)],
            |t| ops::norm(&t[0], 2.0, Some(&[1][..]), false),
            |a| {
                let s = r::reduce(&r::map(&a[0], |v| v * v), &[1], false, r::Reduce::Sum);
                r::map(&s, f64::sqrt)
            },
        )
        .tol32(1e-5),
        row(
            "norm_p3",
            &[(&[2, 3], NonZero)],
            |t| ops::norm(&t[0], 3.0, None, false),
            |a| {
                let s = r::reduce(
                    &r::map(&a[0], |v| v.abs().powi(3)),
                    &[0, 1],
                    false,
                    r::Reduce::Sum,
                );
                r::map(&s, f64::cbrt)
            },
        )
        .tol32(1e-5)
        .grad_tol(1e-5),
        row(
            "cumsum",
            &[(&[3, 4], Any)],
            |t| ops::cumsum(&t[0], -1),
            |a| {
                let mut d = a[0].data.clone();
                for row in d.chunks_mut(4) {
                    for i in 1..4 {
                        row[i] += row[i - 1];
                    }
                }
                Arr::new(&[3, 4], d)
            },
        ),
        row(
            "cumsum_axis0",
            &[(&[3, 2], Any)],
            |t| ops::cumsum(&t[0], 0),
            |a| {
                let mut d = a[0].data.clone();
                for i in 2..6 {
                    d[i] += d[i - 2];
                }
                Arr::new(&[3, 2], d)
            },
        ),
        // ---- shape and view ops
        row(
            "reshape",
            &[(&[2, 6], Any)],
            |t| ops::reshape(&t[0], &[3, 4]),
            |a| r::reshape(&a[0], &[3, 4]),
        ),
        row(
            "expand",
            &[(&[3, 1], Any)],
            |t| ops::expand(&t[0], &[2, 3, 4]),
            |a| r::zip(&a[0], &Arr::new(&[2, 3, 4], vec![0.0; 24]), |x, _| x),
        ),
        row(
            "transpose",
            &[(&[2, 3, 4], Any)],
            |t| ops::transpose(&t[0], 0, -1),
            |a| r::permute(&a[0], &[2, 1, 0]),
        ),
        row(
            "permute",
            &[(&[2, 3, 4], Any)],
            |t| ops::permute(&t[0], &[1, 2, 0]),
            |a| r::permute(&a[0], &[1, 2, 0]),
        ),
        row(
            "reverse_axes",
            &[(&[2, 3, 4], Any)],
            |t| ops::reverse_axes(&t[0]),
            |a| r::permute(&a[0], &[2, 1, 0]),
        ),
        row(
            "contiguous",
            &[(&[3, 4], Any)],
            |t| ops::contiguous(&ops::transpose(&t[0], 0, 1)?),
            |a| r::permute(&a[0], &[1, 0]),
        ),
        row(
            "index",
            &[(&[4, 3], Any)],
            |t| ops::index(&t[0], &[sl(Some(1), None, 2), IndexItem::Int(-1)]),
            |a| r::take(&a[0], &[&[1, 3], &[2]], &[2]),
        ),
        row(
            "index_newaxis",
            &[(&[3, 4], Any)],
            |t| {
                ops::index(
                    &t[0],
                    &[IndexItem::Int(1), IndexItem::NewAxis, sl(None, Some(3), 1)],
                )
            },
            |a| r::take(&a[0], &[&[1], &[0, 1, 2]], &[1, 3]),
        ),
        // ---- PyTorch's shape ops (views of the ops above, flip and repeat copies)
        row(
            "unsqueeze",
            &[(&[2, 3], Any)],
            |t| ops::unsqueeze(&t[0], -2),
            |a| r::reshape(&a[0], &[2, 1, 3]),
        ),
        row(
            "squeeze",
            &[(&[2, 1, 3, 1], Any)],
            |t| ops::squeeze(&t[0], Some(&[-3, 0])),
            |a| r::reshape(&a[0], &[2, 3, 1]),
        ),
        row(
            "squeeze_all",
            &[(&[1, 3, 1], Any)],
            |t| ops::squeeze(&t[0], None),
            |a| r::reshape(&a[0], &[3]),
        ),
        row(
            "flatten",
            &[(&[2, 3, 2, 2], Any)],
            |t| ops::flatten(&ops::transpose(&t[0], 0, 3)?, 1, -2),
            |a| r::reshape(&r::permute(&a[0], &[3, 1, 2, 0]), &[2, 6, 2]),
        ),
        row(
            "unflatten",
            &[(&[2, 6], Any)],
            |t| ops::unflatten(&t[0], -1, &[3, -1]),
            |a| r::reshape(&a[0], &[2, 3, 2]),
        ),
        row(
            "movedim",
            &[(&[2, 3, 4], Any)],
            |t| ops::movedim(&t[0], &[0, 1], &[-1, 0]),
            |a| r::permute(&a[0], &[1, 2, 0]),
        ),
        row(
            "matrix_transpose",
            &[(&[2, 3, 4], Any)],
            |t| ops::matrix_transpose(&t[0]),
            |a| r::permute(&a[0], &[0, 2, 1]),
        ),
        row(
            "narrow",
            &[(&[4, 3], Any)],
            |t| ops::narrow(&t[0], 0, -3, 2),
            |a| r::take(&a[0], &[&[1, 2], &[0, 1, 2]], &[2, 3]),
        ),
        row(
            "split",
            &[(&[2, 5], Any)],
            |t| Ok(ops::split(&t[0], 2, -1)?.swap_remove(2)),
            |a| r::take(&a[0], &[&[0, 1], &[4]], &[2, 1]),
        ),
        row(
            "split_sections",
            &[(&[5, 2], Any)],
            |t| Ok(ops::split_sections(&t[0], &[1, 3, 1], 0)?.swap_remove(1)),
            |a| r::take(&a[0], &[&[1, 2, 3], &[0, 1]], &[3, 2]),
        ),
        row(
            "chunk",
            &[(&[2, 5], Any)],
            |t| Ok(ops::chunk(&t[0], 3, 1)?.swap_remove(1)),
            |a| r::take(&a[0], &[&[0, 1], &[2, 3]], &[2, 2]),
        ),
        row(
            "flip",
            &[(&[2, 3, 4], Any)],
            |t| ops::flip(&t[0], &[0, -1]),
            |a| r::take(&a[0], &[&[1, 0], &[0, 1, 2], &[3, 2, 1, 0]], &[2, 3, 4]),
        ),
        row(
            "flip_strided",
            &[(&[3, 4], Any)],
            |t| ops::flip(&ops::transpose(&t[0], 0, 1)?, &[1]),
            |a| {
                r::take(
                    &r::permute(&a[0], &[1, 0]),
                    &[&[0, 1, 2, 3], &[2, 1, 0]],
                    &[4, 3],
                )
            },
        ),
        row(
            "repeat",
            &[(&[2, 3], Any)],
            |t| ops::repeat(&t[0], &[2, 2, 1]),
            |a| {
                let tiled = r::take(&a[0], &[&[0, 1, 0, 1], &[0, 1, 2]], &[1, 4, 3]);
                r::concat(&[tiled.clone(), tiled], 0)
            },
        ),
        // ---- rearranging ops composed of the ops above (ops/rearrange.rs)
        row(
            "unbind",
            &[(&[2, 4, 3], Any)],
            |t| Ok(ops::unbind(&t[0], 1)?.swap_remove(2)),
            |a| r::take(&a[0], &[&[0, 1], &[2], &[0, 1, 2]], &[2, 3]),
        ),
        row(
            "roll",
            &[(&[3, 4], Any)],
            |t| ops::roll(&t[0], &[1, -2], &[0, 1]),
            |a| r::take(&a[0], &[&[2, 0, 1], &[2, 3, 0, 1]], &[3, 4]),
        ),
        row(
            "roll_flat",
            &[(&[2, 3], Any)],
            |t| ops::roll(&t[0], &[2], &[]),
            |a| r::take(&r::reshape(&a[0], &[6]), &[&[4, 5, 0, 1, 2, 3]], &[2, 3]),
        ),
        row(
            "tile",
            &[(&[2, 3], Any)],
            |t| ops::tile(&t[0], &[2]),
            |a| r::take(&a[0], &[&[0, 1], &[0, 1, 2, 0, 1, 2]], &[2, 6]),
        ),
        row(
            "repeat_interleave",
            &[(&[2, 3], Any)],
            |t| ops::repeat_interleave(&t[0], 2, Some(0)),
            |a| r::take(&a[0], &[&[0, 0, 1, 1], &[0, 1, 2]], &[4, 3]),
        ),
        row(
            "repeat_interleave_counts",
            &[(&[2, 3], Any)],
            |t| ops::repeat_interleave_counts(&t[0], &[1, 0, 2], Some(1)),
            |a| r::take(&a[0], &[&[0, 1], &[0, 2, 2]], &[2, 3]),
        ),
        row(
            "diagonal",
            &[(&[3, 2, 4], Any)],
            |t| ops::diagonal(&t[0], 1, 0, 2),
            // out[b][i] = x[i][b][i + 1]
            |a| {
                let at = |i: usize, b: usize, k: usize| a[0].data[(i * 2 + b) * 4 + k];
                let data = (0..2)
                    .flat_map(|b| (0..3).map(move |i| (b, i)))
                    .map(|(b, i)| at(i, b, i + 1))
                    .collect();
                Arr::new(&[2, 3], data)
            },
        ),
        row(
            "diag_matrix",
            &[(&[3], Any)],
            |t| ops::diag(&t[0], -1),
            |a| {
                let mut data = vec![0.0; 16];
                for i in 0..3 {
                    data[(i + 1) * 4 + i] = a[0].data[i];
                }
                Arr::new(&[4, 4], data)
            },
        ),
        row(
            "trace",
            &[(&[3, 4], Any)],
            |t| ops::trace(&t[0]),
            |a| Arr::new(&[], vec![a[0].data[0] + a[0].data[5] + a[0].data[10]]),
        ),
        row(
            "meshgrid_xy",
            &[(&[2], Any), (&[3], Any)],
            |t| Ok(ops::meshgrid(&[t[0].clone(), t[1].clone()], "xy")?.swap_remove(0)),
            |a| r::take(&a[0], &[&[0, 1, 0, 1, 0, 1]], &[3, 2]),
        ),
        // ---- small composites (ops/composites.rs)
        row(
            "addcmul",
            &[(&[2, 3], Any), (&[2, 3], Any), (&[3], Any)],
            |t| ops::addcmul(&t[0], &t[1], &t[2], 0.5),
            |a| {
                let p = r::zip(&a[1], &a[2], |x, y| x * y);
                r::zip(&a[0], &p, |x, y| x + 0.5 * y)
            },
        ),
        row(
            "addcdiv",
            &[(&[2, 3], Any), (&[2, 3], Any), (&[2, 3], NonZero)],
            |t| ops::addcdiv(&t[0], &t[1], &t[2], -2.0),
            |a| {
                let q = r::zip(&a[1], &a[2], |x, y| x / y);
                r::zip(&a[0], &q, |x, y| x - 2.0 * y)
            },
        ),
        row(
            "take_along_dim",
            &[(&[2, 3], Any)],
            |t| {
                let idx = Tensor::from_vec(vec![2i64, 0], &[1, 2])?;
                ops::take_along_dim(&t[0], &idx, Some(1))
            },
            |a| r::take(&a[0], &[&[0, 1], &[2, 0]], &[2, 2]),
        ),
        row(
            "index_add",
            &[(&[3, 2], Any), (&[3, 2], Any)],
            |t| {
                let idx = Tensor::from_vec(vec![2i64, 0, 2], &[3])?;
                ops::index_add(&t[0], 0, &idx, &t[1], 0.5)
            },
            |a| {
                let mut out = a[0].clone();
                for (j, &p) in [2usize, 0, 2].iter().enumerate() {
                    for c in 0..2 {
                        out.data[p * 2 + c] += 0.5 * a[1].data[j * 2 + c];
                    }
                }
                out
            },
        ),
        row(
            "masked_select",
            &[(&[2, 3], Any)],
            |t| {
                let mask = Tensor::from_vec(vec![1u8, 0, 1], &[3])?;
                let mask = ops::cast(&mask, DType::Bool)?;
                ops::masked_select(&t[0], &mask)
            },
            |a| r::take(&r::reshape(&a[0], &[6]), &[&[0, 2, 3, 5]], &[4]),
        ),
        row(
            "expand_sizes",
            &[(&[3, 1], Any)],
            |t| ops::expand_sizes(&t[0], &[2, -1, 4]),
            |a| r::zip(&a[0], &Arr::new(&[2, 3, 4], vec![0.0; 24]), |x, _| x),
        ),
        row(
            "clone",
            &[(&[2, 3], Any)],
            |t| ops::clone(&t[0]),
            |a| a[0].clone(),
        ),
        row(
            "cat",
            &[(&[2, 3], Any), (&[2, 1], Any)],
            |t| ops::cat(t, 1),
            |a| r::concat(a, 1),
        ),
        // ---- joins and selection
        row(
            "concat",
            &[(&[2, 3], Any), (&[2, 1], Any), (&[2, 2], Any)],
            |t| ops::concat(t, -1),
            |a| r::concat(a, 1),
        ),
        row(
            "stack",
            &[(&[2, 3], Any), (&[2, 3], Any)],
            |t| ops::stack(t, 1),
            |a| {
                let e: Vec<Arr> = a.iter().map(|x| r::reshape(x, &[2, 1, 3])).collect();
                r::concat(&e, 1)
            },
        ),
        row(
            "where",
            &[(&[2, 3], Mask), (&[2, 3], Any), (&[1, 3], Any)],
            |t| ops::where_(&t[0], &t[1], &t[2]),
            |a| {
                let picked = r::zip(&a[0], &a[1], |c, x| if c != 0.0 { x } else { f64::NAN });
                r::zip(&picked, &a[2], |x, y| if x.is_nan() { y } else { x })
            },
        )
        .diff(&[1, 2]),
        // ---- losses
        row(
            "mse_loss",
            &[(&[3, 4], Any), (&[3, 4], Any)],
            |t| ops::mse_loss(&t[0], &t[1]),
            |a| {
                let d = r::zip(&a[0], &a[1], |x, y| (x - y) * (x - y));
                r::reduce(&d, &[0, 1], false, r::Reduce::Mean)
            },
        ),
        row(
            "cross_entropy",
            &[(&[4, 5], Any)],
            |t| ops::cross_entropy(&t[0], &LABELS),
            |a| {
                let lp = r::map(&r::softmax(&a[0], 1), f64::ln);
                let n = LABELS.len();
                let s: f64 = (0..n).map(|i| lp.data[i * 5 + LABELS[i] as usize]).sum();
                Arr::new(&[], vec![-s / n as f64])
            },
        ),
    ]
}

/// The inputs of a row in float64.
fn inputs(row: &Row) -> Vec<Tensor> {
    row.inputs
        .iter()
        .enumerate()
        .map(|(k, (shape, domain))| {
            let v = det(shape, 17 + k as u64).to_vec::<f64>();
            let n = v.len();
            let vals: Vec<f64> = match domain {
                Any => v.iter().map(|x| 2.0 * x).collect(),
                Pos => v.iter().map(|x| 1.2 + x).collect(),
                NonZero => v
                    .iter()
                    .map(|&x| {
                        if x < 0.0 {
                            -0.2 + 1.8 * x
                        } else {
                            0.2 + 1.8 * x
                        }
                    })
                    .collect(),
                Distinct => {
                    let mut order: Vec<usize> = (0..n).collect();
                    order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
                    let mut out = vec![0.0; n];
                    for (rank, &i) in order.iter().enumerate() {
                        out[i] = (rank as f64 - n as f64 / 2.0) * 0.15;
                    }
                    out
                }
                Mask => v.iter().map(|&x| if x < 0.0 { 0.0 } else { 1.0 }).collect(),
            };
            Tensor::from_vec(vals, shape).unwrap()
        })
        .collect()
}

fn assert_matches(name: &str, got: &Tensor, want: &Arr, tol: f64) {
    assert_eq!(got.shape(), &want.shape[..], "{name}: shape");
    for (i, (a, b)) in got.to_vec::<f64>().iter().zip(&want.data).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{name}: element {i}: got {a}, expected {b}"
        );
    }
}

#[test]
fn registry_names_are_unique() {
    let rows = rows();
    let mut names: Vec<&str> = rows.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), rows.len());
}

/// The names of the table's parameterless unary ops (its rows written `fn(name)`).
macro_rules! names {
    ($($(#[doc = $doc:literal])* $f:ident;)*) => {
        &[$(stringify!($f)),*]
    };
}
const UNARY_FNS: &[&str] = remat_core::for_each_unary_fn!(names);

/// A unary row written `fn(name)` is a public op without a line elsewhere; this makes sure it
/// also gets its row here (and so every check below).
#[test]
fn every_parameterless_unary_op_has_a_row() {
    let rows = rows();
    let missing: Vec<_> = UNARY_FNS
        .iter()
        .filter(|f| !rows.iter().any(|r| r.name == **f))
        .collect();
    assert!(missing.is_empty(), "no registry row for {missing:?}");
    assert!(UNARY_FNS.contains(&"sin") && UNARY_FNS.contains(&"relu"));
}

#[test]
fn every_op_matches_its_float64_reference_in_float64_and_float32() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for row in rows() {
        let xs = inputs(&row);
        let arrs: Vec<Arr> = xs.iter().map(Arr::of).collect();
        let want = (row.reference)(&arrs);
        let y = (row.run)(&xs).unwrap_or_else(|e| panic!("{}: {e}", row.name));
        assert_eq!(y.dtype(), DType::F64, "{}", row.name);
        assert_matches(row.name, &y, &want, 1e-12);
        // float32 inputs (where's condition too): the reference of the rounded inputs.
        let xs32: Vec<Tensor> = xs
            .iter()
            .map(|t| ops::cast(t, DType::F32).unwrap())
            .collect();
        let arrs32: Vec<Arr> = xs32.iter().map(Arr::of).collect();
        let y32 = (row.run)(&xs32).unwrap_or_else(|e| panic!("{} (f32): {e}", row.name));
        assert_eq!(y32.dtype(), DType::F32, "{}", row.name);
        assert_matches(row.name, &y32, &(row.reference)(&arrs32), row.tol32);
    }
}

#[test]
fn every_differentiable_op_matches_finite_differences_in_float64() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut checked = 0;
    for row in rows() {
        if row.diff.is_empty() {
            continue;
        }
        let xs = inputs(&row);
        let diff: Vec<Tensor> = row.diff.iter().map(|&i| xs[i].clone()).collect();
        let run = row.run;
        let positions = row.diff.clone();
        check_grad(
            &diff,
            |ts| {
                let mut args = xs.clone();
                for (&i, t) in positions.iter().zip(ts) {
                    args[i] = t.clone();
                }
                run(&args).unwrap()
            },
            row.grad_tol,
        );
        checked += 1;
    }
    assert!(checked > 40, "only {checked} rows were differentiated");
}

/// `sum(out * w)` for fixed weights `w`, so every output element matters.
fn weighted_sum(out: &Tensor, w: &Tensor) -> Tensor {
    ops::sum(&ops::mul(out, w).unwrap(), None, false).unwrap()
}

/// First-order gradients of `sum(run(args) * w)` with respect to the inputs at `positions`
/// (optionally with their graph, for differentiating again).
fn first_grads(
    row: &Row,
    args: &[Tensor],
    w: &Tensor,
    create_graph: bool,
) -> (Vec<Tensor>, Vec<Option<Tensor>>) {
    let leaves: Vec<Tensor> = row
        .diff
        .iter()
        .map(|&i| {
            let l = args[i].detach();
            l.set_requires_grad(true).unwrap();
            l
        })
        .collect();
    let mut full = args.to_vec();
    for (&i, l) in row.diff.iter().zip(&leaves) {
        full[i] = l.clone();
    }
    let loss = weighted_sum(&(row.run)(&full).unwrap(), w);
    let opts = remat_core::autograd::GradOptions {
        create_graph,
        allow_unused: true,
        ..Default::default()
    };
    let g = remat_core::autograd::grad_with(&[loss], &leaves, None, opts).unwrap();
    (leaves, g)
}

#[test]
fn every_differentiable_op_has_second_order_gradients_matching_finite_differences() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut checked = 0;
    for row in rows() {
        if row.diff.is_empty() {
            continue;
        }
        let xs = inputs(&row);
        let w = det((row.run)(&xs).unwrap().shape(), 99);
        let vs: Vec<Tensor> = row
            .diff
            .iter()
            .enumerate()
            .map(|(k, &i)| det(xs[i].shape(), 300 + k as u64))
            .collect();
        // Analytic: the gradient of sum(g_k * v_k) (a Hessian-vector product).
        let (leaves, gs) = first_grads(&row, &xs, &w, true);
        let terms: Vec<Tensor> = gs
            .iter()
            .zip(&vs)
            .filter_map(|(g, v)| g.as_ref().map(|g| weighted_sum(g, v)))
            .collect();
        let Some(first) = terms.first() else { continue };
        if !terms.iter().any(|t| t.requires_grad()) {
            // The gradient does not depend on the inputs (linear ops): the Hessian is 0.
            continue;
        }
        let s = terms[1..]
            .iter()
            .fold(first.clone(), |a, t| ops::add(&a, t).unwrap());
        let opts = remat_core::autograd::GradOptions {
            allow_unused: true,
            ..Default::default()
        };
        let hv = remat_core::autograd::grad_with(&[s], &leaves, None, opts)
            .unwrap_or_else(|e| panic!("{}: {e}", row.name));
        // Numeric: central differences of the directional first-order gradient.
        let directional = |args: &[Tensor]| -> f64 {
            let (_, gs) = first_grads(&row, args, &w, false);
            gs.iter()
                .zip(&vs)
                .filter_map(|(g, v)| {
                    g.as_ref().map(|g| {
                        g.to_vec::<f64>()
                            .iter()
                            .zip(v.to_vec::<f64>())
                            .map(|(a, b)| a * b)
                            .sum::<f64>()
                    })
                })
                .sum()
        };
        let eps = 1e-5;
        for (k, &i) in row.diff.iter().enumerate() {
            let base = xs[i].to_vec::<f64>();
            let got = hv[k]
                .as_ref()
                .map(|h| h.to_vec::<f64>())
                .unwrap_or_else(|| vec![0.0; base.len()]);
            for j in 0..base.len() {
                let mut args = xs.clone();
                let mut p = base.clone();
                p[j] += eps;
                args[i] = Tensor::from_vec(p, xs[i].shape()).unwrap();
                let plus = directional(&args);
                let mut m = base.clone();
                m[j] -= eps;
                args[i] = Tensor::from_vec(m, xs[i].shape()).unwrap();
                let minus = directional(&args);
                let fd = (plus - minus) / (2.0 * eps);
                assert!(
                    (fd - got[j]).abs() <= 1e-4 * (1.0 + fd.abs()),
                    "{}: input {i} element {j}: Hessian-vector product {} vs finite difference {fd}",
                    row.name,
                    got[j]
                );
            }
        }
        checked += 1;
    }
    assert!(
        checked > 25,
        "only {checked} rows were differentiated twice"
    );
}
