//! Gradients at the points where the derivative is infinite or undefined and PyTorch picks a
//! value: `norm` at zero vectors and zero elements (0, not NaN), `std` of a constant row (0),
//! and `clamp` with tensor bounds (who gets the gradient at ties, when `min > max`, with NaN).
//! Central finite differences are the reference where they exist: at a zero of `|x|` or of
//! a norm they are symmetric, so they read 0 as PyTorch's rule does.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::ops::{self, Bound};
use remat_core::{autograd, DType, Tensor};

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// A `(3, 4)` input whose row 1 is all zero and with one more zero at `[2, 0]`.
fn with_zero_rows() -> Tensor {
    let mut v = det(&[3, 4], 5).to_vec::<f64>();
    v[4..8].fill(0.0);
    v[8] = 0.0;
    t64(&v, &[3, 4])
}

fn grad_vec(t: &Tensor) -> Vec<f64> {
    t.grad().unwrap().to_vec::<f64>()
}

/// The gradient of `sum(f(x) * w)` for a fixed weighting `w` of the output.
fn grad_of(x: &Tensor, f: impl Fn(&Tensor) -> Tensor) -> Vec<f64> {
    let l = leaf(x);
    let out = f(&l);
    let w = det(out.shape(), 3);
    let loss = ops::sum(&ops::mul(&out, &w).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    l.grad().unwrap().to_vec::<f64>()
}

const PS: [f64; 9] = [
    2.0,
    3.0,
    1.5,
    1.0,
    0.5,
    -1.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
];

#[test]
fn norm_of_a_zero_vector_has_zero_gradient_for_every_p() {
    for p in PS {
        for shape in [&[4usize][..], &[2, 3]] {
            let x = Tensor::from_vec(vec![0.0f64; shape.iter().product()], shape).unwrap();
            let g = grad_of(&x, |x| ops::norm(x, p, None, false).unwrap());
            assert!(g.iter().all(|&v| v == 0.0), "p = {p}: {g:?}");
        }
    }
}

#[test]
fn norm_gradients_at_zero_rows_and_elements_match_finite_differences() {
    let x = with_zero_rows();
    for p in PS {
        for keepdim in [false, true] {
            check_grad(
                std::slice::from_ref(&x),
                |t| ops::norm(&t[0], p, Some(&[1]), keepdim).unwrap(),
                1e-6,
            );
        }
        check_grad(
            std::slice::from_ref(&x),
            |t| ops::norm(&t[0], p, Some(&[0]), false).unwrap(),
            1e-6,
        );
        // The zero row's gradient is exactly 0 (PyTorch masks `norm == 0` / `x == 0`).
        let g = grad_of(&x, |x| ops::norm(x, p, Some(&[-1]), false).unwrap());
        assert!(g[4..8].iter().all(|&v| v == 0.0), "p = {p}: {g:?}");
    }
}

#[test]
fn zero_gradients_carry_pytorchs_sign() {
    // p = 2: PyTorch multiplies the gradient by a masked 0, so a negative gradient gives -0;
    // p = 3 (and std) write an exact +0.
    let x = leaf(&Tensor::from_vec(vec![0.0f64; 3], &[3]).unwrap());
    let neg = Tensor::scalar(-1.0, DType::F64);
    for (p, negative) in [(2.0, true), (0.5, true), (3.0, false)] {
        x.set_grad(None).unwrap();
        let n = ops::norm(&x, p, None, false).unwrap();
        autograd::backward(&[(n, Some(neg.clone()))], false).unwrap();
        let g = grad_vec(&x);
        assert!(
            g.iter()
                .all(|v| *v == 0.0 && v.is_sign_negative() == negative),
            "p = {p}"
        );
    }
    x.set_grad(None).unwrap();
    let s = ops::std(&x, None, 1.0, false).unwrap();
    autograd::backward(&[(s, Some(neg))], false).unwrap();
    assert!(grad_vec(&x)
        .iter()
        .all(|v| *v == 0.0 && v.is_sign_positive()));
}

#[test]
fn integer_norms_compute_in_float32() {
    let x = Tensor::from_vec(vec![3i64, 0, -4], &[3]).unwrap();
    for (p, want) in [(2.0, 5.0), (1.0, 7.0), (0.0, 2.0), (f64::INFINITY, 4.0)] {
        let n = ops::norm(&x, p, None, false).unwrap();
        assert_eq!(
            (n.dtype(), n.item().unwrap()),
            (DType::F32, want),
            "p = {p}"
        );
    }
}

#[test]
fn norm_values_are_unchanged_at_zeros() {
    let x = with_zero_rows();
    let v = x.to_vec::<f64>();
    for p in [2.0, 3.0, 0.5, -1.0] {
        let got = ops::norm(&x, p, Some(&[1]), false).unwrap().to_vec::<f64>();
        for (r, &n) in got.iter().enumerate() {
            let row = &v[r * 4..(r + 1) * 4];
            let want = row
                .iter()
                .map(|a| a.abs().powf(p))
                .sum::<f64>()
                .powf(1.0 / p);
            assert!(
                (n - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "p = {p}, row {r}"
            );
        }
    }
}

#[test]
fn norm_in_float32_gives_zero_gradient_at_zero_rows() {
    let x = ops::cast(&with_zero_rows(), DType::F32).unwrap();
    for p in [2.0, 3.0, 0.5] {
        let g = grad_of(&x, |x| ops::norm(x, p, Some(&[1]), false).unwrap());
        assert!(g.iter().all(|v| v.is_finite()), "p = {p}: {g:?}");
        assert!(g[4..8].iter().all(|&v| v == 0.0), "p = {p}: {g:?}");
    }
}

#[test]
fn second_order_norm_gradient_away_from_zeros_is_unchanged() {
    // The double-`where` masks are differentiable: create_graph still works.
    let x = leaf(&det(&[5], 8));
    let n = ops::norm(&x, 2.0, None, false).unwrap();
    let opts = autograd::GradOptions {
        create_graph: true,
        ..Default::default()
    };
    let g = autograd::grad_with(&[n], std::slice::from_ref(&x), None, opts).unwrap();
    let gx = g[0].clone().unwrap();
    let s = ops::sum(&gx, None, false).unwrap();
    let h = autograd::grad(&[s], std::slice::from_ref(&x), None, false).unwrap();
    let h = h[0].clone().unwrap().to_vec::<f64>();
    // d/dx_j sum_i x_i / |x| = 1/|x| - x_j sum_i x_i / |x|^3.
    let v = x.to_vec::<f64>();
    let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let total: f64 = v.iter().sum();
    for (j, &hj) in h.iter().enumerate() {
        let want = 1.0 / norm - v[j] * total / norm.powi(3);
        assert!((hj - want).abs() < 1e-12, "{j}: {hj} vs {want}");
    }
}

#[test]
fn std_of_a_constant_row_has_zero_gradient() {
    let mut v = det(&[3, 4], 6).to_vec::<f64>();
    v[4..8].fill(0.7);
    let x = t64(&v, &[3, 4]);
    for correction in [0.0, 1.0] {
        check_grad(
            std::slice::from_ref(&x),
            |t| ops::std(&t[0], Some(&[1]), correction, false).unwrap(),
            1e-6,
        );
        let g = grad_of(&x, |x| ops::std(x, Some(&[-1]), correction, true).unwrap());
        assert!(g[4..8].iter().all(|&v| v == 0.0), "{g:?}");
    }
    let c = Tensor::from_vec(vec![1.25f64; 6], &[2, 3]).unwrap();
    let g = grad_of(&c, |x| ops::std(x, None, 1.0, false).unwrap());
    assert_eq!(g, vec![0.0; 6]);
    // A single element with correction 1 is 0 / 0: NaN value and gradient, as PyTorch.
    let one = Tensor::from_vec(vec![2.0f64], &[1]).unwrap();
    assert!(ops::std(&one, None, 1.0, false)
        .unwrap()
        .item()
        .unwrap()
        .is_nan());
}

/// `(x, min, max) -> (value, dx, dmin, dmax)` of PyTorch's `clamp` with tensor bounds.
const NAN: f64 = f64::NAN;
#[rustfmt::skip]
const CLAMP_CASES: &[([f64; 3], [f64; 4])] = &[
    ([0.0, 1.0, 2.0], [1.0, 0.0, 1.0, 0.0]),  // below min
    ([1.0, 1.0, 2.0], [1.0, 0.5, 0.5, 0.0]),  // on min: split with min
    ([1.5, 1.0, 2.0], [1.5, 1.0, 0.0, 0.0]),  // inside
    ([2.0, 1.0, 2.0], [2.0, 0.5, 0.0, 0.5]),  // on max: split with max
    ([3.0, 1.0, 2.0], [2.0, 0.0, 0.0, 1.0]),  // above max
    ([1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]),  // min == max == x: all to x
    ([0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0]),  // min == max, below
    ([2.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0]),  // min == max, above
    ([1.5, 2.0, 1.0], [1.0, 0.0, 0.0, 1.0]),  // min > max: max
    ([1.0, 2.0, 1.0], [1.0, 0.0, 0.0, 1.0]),  // min > max, x on max
    ([2.0, 2.0, 1.0], [1.0, 0.0, 0.0, 1.0]),  // min > max, x on min
    ([NAN, 1.0, 2.0], [NAN, 1.0, 0.0, 0.0]),  // NaN x
    ([0.0, NAN, 2.0], [NAN, 1.0, 0.0, 0.0]),  // NaN min
    ([2.0, NAN, 2.0], [NAN, 1.0, 0.0, 0.0]),  // NaN min, x on max: no split
    ([1.0, 1.0, NAN], [NAN, 1.0, 0.0, 0.0]),  // NaN max, x on min
    ([0.0, 1.0, NAN], [NAN, 0.0, 0.0, 0.0]),  // NaN max, x below min: nobody
    ([1.0, NAN, 0.0], [NAN, 0.0, 0.0, 0.0]),  // NaN min, x above max: nobody
    ([NAN, 2.0, 1.0], [NAN, 1.0, 0.0, 1.0]),  // NaN x, min > max: both
];

/// Leaves of one column each of the clamp cases.
fn clamp_leaves() -> [Tensor; 3] {
    let n = CLAMP_CASES.len();
    let col = |j: usize| {
        leaf(&t64(
            &CLAMP_CASES.iter().map(|c| c.0[j]).collect::<Vec<_>>(),
            &[n],
        ))
    };
    [col(0), col(1), col(2)]
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

#[test]
fn clamp_with_tensor_bounds_routes_the_gradient_as_pytorch() {
    let [x, lo, hi] = clamp_leaves();
    let y = ops::clamp_by(&x, Some(Bound::Tensor(&lo)), Some(Bound::Tensor(&hi))).unwrap();
    let loss = ops::sum(&y, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    let (yv, gx, gl, gh) = (
        y.to_vec::<f64>(),
        x.grad().unwrap().to_vec::<f64>(),
        lo.grad().unwrap().to_vec::<f64>(),
        hi.grad().unwrap().to_vec::<f64>(),
    );
    for (i, (inp, want)) in CLAMP_CASES.iter().enumerate() {
        let got = [yv[i], gx[i], gl[i], gh[i]];
        assert!(
            got.iter().zip(want).all(|(&a, &b)| same(a, b)),
            "clamp{inp:?}: got {got:?}, expected {want:?}"
        );
    }
}

#[test]
fn clamp_with_tensor_bounds_keeps_infinite_gradients_off_the_others() {
    // Selected with `where`, not multiplied by a 0 mask: inf stays inf, 0 stays 0.
    let [x, lo, hi] = clamp_leaves();
    let y = ops::clamp_by(&x, Some(Bound::Tensor(&lo)), Some(Bound::Tensor(&hi))).unwrap();
    let g = ops::full(y.shape(), f64::INFINITY, DType::F64, y.device()).unwrap();
    autograd::backward(&[(y, Some(g))], false).unwrap();
    for t in [&x, &lo, &hi] {
        assert!(t
            .grad()
            .unwrap()
            .to_vec::<f64>()
            .iter()
            .all(|v| !v.is_nan()));
    }
}

#[test]
fn clamp_bounds_broadcast_reduce_and_keep_their_dtypes() {
    // x (2, 3) float32, min a (3,) float64 row, max a 0-d float64: the result is float64,
    // each gradient comes back in its input's shape and dtype.
    let x = leaf(&ops::cast(&t64(&[-1.0, 0.5, 3.0, 0.25, 2.0, 0.0], &[2, 3]), DType::F32).unwrap());
    let lo = leaf(&t64(&[0.0, 0.0, 1.0], &[3]));
    let hi = leaf(&Tensor::scalar(2.0, DType::F64));
    let y = ops::clamp_by(&x, Some(Bound::Tensor(&lo)), Some(Bound::Tensor(&hi))).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    assert_eq!(y.to_vec::<f64>(), vec![0.0, 0.5, 2.0, 0.25, 2.0, 1.0]);
    autograd::backward(&[(ops::sum(&y, None, false).unwrap(), None)], false).unwrap();
    let gx = x.grad().unwrap();
    assert_eq!(gx.dtype(), DType::F32);
    // -1 < 0: min; 0.5: x; 3 > 2: max; 0.25: x; 2 == max (0 < 2): half each; 0 < 1: min.
    assert_eq!(gx.to_vec::<f64>(), vec![0.0, 1.0, 0.0, 1.0, 0.5, 0.0]);
    assert_eq!(lo.grad().unwrap().to_vec::<f64>(), vec![1.0, 0.0, 1.0]);
    assert_eq!(hi.grad().unwrap().to_vec::<f64>(), vec![1.5]);
}

#[test]
fn clamp_with_one_tensor_bound_splits_ties_as_maximum() {
    let x = leaf(&t64(&[0.0, 1.0, 2.0], &[3]));
    let lo = leaf(&t64(&[1.0, 1.0, 1.0], &[3]));
    let y = ops::clamp_by(&x, Some(Bound::Tensor(&lo)), None).unwrap();
    autograd::backward(&[(ops::sum(&y, None, false).unwrap(), None)], false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![0.0, 0.5, 1.0]);
    assert_eq!(lo.grad().unwrap().to_vec::<f64>(), vec![1.0, 0.5, 0.0]);
}

#[test]
fn clamp_with_tensor_bounds_matches_finite_differences_away_from_ties() {
    let x = det(&[3, 4], 11);
    let lo = ops::add_scalar(&ops::scale(&det(&[4], 12), 0.3).unwrap(), -0.4).unwrap();
    let hi = ops::add_scalar(&ops::scale(&det(&[3, 1], 13), 0.3).unwrap(), 0.4).unwrap();
    check_grad(
        &[x, lo, hi],
        |t| {
            ops::clamp_by(
                &t[0],
                Some(Bound::Tensor(&t[1])),
                Some(Bound::Tensor(&t[2])),
            )
            .unwrap()
        },
        1e-6,
    );
}

#[test]
fn clamp_with_a_constant_and_a_tensor_bound_uses_the_tensor_rule() {
    let x = leaf(&t64(&[0.0, 1.0, 1.5, 2.0], &[4]));
    let hi = leaf(&t64(&[2.0, 2.0, 2.0, 2.0], &[4]));
    let y = ops::clamp_by(&x, Some(Bound::Scalar(1.0)), Some(Bound::Tensor(&hi))).unwrap();
    assert_eq!(y.to_vec::<f64>(), vec![1.0, 1.0, 1.5, 2.0]);
    autograd::backward(&[(ops::sum(&y, None, false).unwrap(), None)], false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![0.0, 0.5, 1.0, 0.5]);
    assert_eq!(hi.grad().unwrap().to_vec::<f64>(), vec![0.0, 0.0, 0.0, 0.5]);
}

#[test]
fn integer_clamp_with_tensor_bounds_still_computes() {
    let x = Tensor::from_vec(vec![-3i64, 0, 5], &[3]).unwrap();
    let lo = Tensor::from_vec(vec![-1i64, -1, -1], &[3]).unwrap();
    let hi = Tensor::from_vec(vec![2i64, 2, 2], &[3]).unwrap();
    let y = ops::clamp_by(&x, Some(Bound::Tensor(&lo)), Some(Bound::Tensor(&hi))).unwrap();
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(y.to_vec::<i64>(), vec![-1, 0, 2]);
}
