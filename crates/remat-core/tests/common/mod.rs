//! Shared helpers for remat-core's integration tests: deterministic inputs and a float64
//! finite-difference gradient check.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

pub mod reference;

use remat_core::{DType, Tensor};

/// A float64 tensor of `shape` with values from a fixed pseudo-random sequence in [-1, 1).
pub fn det(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// A leaf copy of `t` that requires grad.
pub fn leaf(t: &Tensor) -> Tensor {
    let l = t.detach();
    l.set_requires_grad(true).unwrap();
    l
}

/// Check the gradients of `f` (any function of the inputs returning a tensor; reduced with a
/// fixed random weighting to a scalar) against central finite differences in float64.
pub fn check_grad(inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Tensor, tol: f64) {
    let leaves: Vec<Tensor> = inputs.iter().map(leaf).collect();
    let out = f(&leaves);
    let w = det(out.shape(), 99);
    let loss_of = |ts: &[Tensor]| -> f64 {
        let o = f(ts);
        o.to_vec::<f64>()
            .iter()
            .zip(w.to_vec::<f64>())
            .map(|(a, b)| a * b)
            .sum()
    };
    let loss = remat_core::ops::sum(&remat_core::ops::mul(&out, &w).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(loss, None)], false).unwrap();
    let eps = 1e-6;
    for (k, x) in inputs.iter().enumerate() {
        assert_eq!(
            x.dtype(),
            DType::F64,
            "finite differences need float64 inputs"
        );
        let g = leaves[k]
            .grad()
            .map(|g| g.to_vec::<f64>())
            .unwrap_or_else(|| vec![0.0; x.numel()]);
        let base = x.to_vec::<f64>();
        for i in 0..base.len() {
            let mut plus = base.clone();
            plus[i] += eps;
            let mut minus = base.clone();
            minus[i] -= eps;
            let mut args: Vec<Tensor> = inputs.to_vec();
            args[k] = Tensor::from_vec(plus, x.shape()).unwrap();
            let lp = loss_of(&args);
            args[k] = Tensor::from_vec(minus, x.shape()).unwrap();
            let lm = loss_of(&args);
            let fd = (lp - lm) / (2.0 * eps);
            let err = (fd - g[i]).abs();
            assert!(
                err <= tol * (1.0 + fd.abs()),
                "input {k} element {i}: analytic {} vs finite difference {fd}",
                g[i]
            );
        }
    }
}
