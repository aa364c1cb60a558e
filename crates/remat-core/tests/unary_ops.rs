//! Elementwise ops (neg, exp, log, sqrt, tanh, sigmoid, relu, gelu, pow, pow_scalar) and the
//! mean/max reductions: forwards against scalar references in float32 and float64, gradients
//! against finite differences, strided inputs, and typed errors.
// Tests panic on failure by design; unwrap is the clearest way to say "this must succeed".
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::tensor::TensorData;
use remat_core::{ops, DType, Error, Tensor};

/// `t` in float32.
fn f32_of(t: &Tensor) -> Tensor {
    ops::cast(t, DType::F32).unwrap()
}

/// `t` with every element mapped through `f` (a float64 tensor, no graph).
fn map64(t: &Tensor, f: impl Fn(f64) -> f64) -> Tensor {
    Tensor::from_vec(t.to_vec::<f64>().into_iter().map(f).collect(), t.shape()).unwrap()
}

fn assert_close(got: &Tensor, expect: &[f64], tol: f64) {
    let g = got.to_vec::<f64>();
    assert_eq!(g.len(), expect.len(), "length");
    for (i, (a, b)) in g.iter().zip(expect).enumerate() {
        let ok = (a - b).abs() <= tol * (1.0 + b.abs()) || (a.is_nan() && b.is_nan());
        assert!(ok, "element {i}: got {a}, expected {b}");
    }
}

/// erf by its Taylor series (accurate to ~1e-14 for |x| <= 3), independent of the engine's.
fn erf_ref(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..80 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn gelu_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + erf_ref(x / std::f64::consts::SQRT_2))
}

fn gelu_tanh_ref(x: f64) -> f64 {
    let k = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
}

/// Inputs in [0.2, 2.2), away from the kinks and poles of log/sqrt/pow.
fn positive(shape: &[usize], seed: u64) -> Tensor {
    map64(&det(shape, seed), |v| 1.2 + v)
}

/// Inputs in [-2, 2) with no element within 0.05 of 0 (relu's kink).
fn away_from_zero(shape: &[usize], seed: u64) -> Tensor {
    map64(&det(shape, seed), |v| {
        let s = 2.0 * v;
        if s.abs() < 0.05 {
            0.3
        } else {
            s
        }
    })
}

type UnaryFn = fn(&Tensor) -> remat_core::Result<Tensor>;

/// Name, op, scalar reference, and whether the op needs positive inputs.
type Case = (&'static str, UnaryFn, fn(f64) -> f64, bool);

#[test]
fn elementwise_forward_matches_scalar_reference() {
    let cases: Vec<Case> = vec![
        ("neg", ops::neg, |v| -v, false),
        ("exp", ops::exp, f64::exp, false),
        ("log", ops::log, f64::ln, true),
        ("sqrt", ops::sqrt, f64::sqrt, true),
        ("tanh", ops::tanh, f64::tanh, false),
        ("sigmoid", ops::sigmoid, |v| 1.0 / (1.0 + (-v).exp()), false),
        ("relu", ops::relu, |v| v.max(0.0), false),
    ];
    for (name, f, r, pos) in cases {
        let x = if pos {
            positive(&[3, 5], 1)
        } else {
            away_from_zero(&[3, 5], 1)
        };
        let expect: Vec<f64> = x.to_vec::<f64>().into_iter().map(r).collect();
        let y = f(&x).unwrap();
        assert_eq!(y.dtype(), DType::F64, "{name}");
        assert_eq!(y.shape(), &[3, 5], "{name}");
        assert_close(&y, &expect, 1e-14);
        let y32 = f(&f32_of(&x)).unwrap();
        assert_eq!(y32.dtype(), DType::F32, "{name}");
        assert_close(&y32, &expect, 1e-6);
    }
    let x = away_from_zero(&[4, 6], 2);
    let exact: Vec<f64> = x.to_vec::<f64>().into_iter().map(gelu_ref).collect();
    let approx: Vec<f64> = x.to_vec::<f64>().into_iter().map(gelu_tanh_ref).collect();
    assert_close(&ops::gelu(&x, false).unwrap(), &exact, 1e-13);
    assert_close(&ops::gelu(&x, true).unwrap(), &approx, 1e-13);
    assert_close(&ops::gelu(&f32_of(&x), false).unwrap(), &exact, 1e-6);
    assert_close(&ops::gelu(&f32_of(&x), true).unwrap(), &approx, 1e-6);
    // Known values: gelu(1) = Phi(1), and the two forms differ slightly.
    let one = Tensor::scalar(1.0, DType::F64);
    assert!(
        (ops::gelu(&one, false).unwrap().item().unwrap() - 0.841_344_746_068_542_9).abs() < 1e-15
    );
    assert!(
        (ops::gelu(&one, true).unwrap().item().unwrap() - 0.841_191_990_608_276_8).abs() < 1e-12
    );
}

#[test]
fn special_values_follow_numpy() {
    let x = Tensor::from_vec(vec![0.0f64, -1.0, f64::NAN, 800.0, -800.0], &[5]).unwrap();
    let l = ops::log(&x).unwrap().to_vec::<f64>();
    assert_eq!(l[0], f64::NEG_INFINITY);
    assert!(l[1].is_nan() && l[2].is_nan());
    let s = ops::sigmoid(&x).unwrap().to_vec::<f64>();
    assert_eq!((s[3], s[4]), (1.0, 0.0));
    assert!(ops::relu(&x).unwrap().to_vec::<f64>()[2].is_nan());
    assert!(ops::sqrt(&x).unwrap().to_vec::<f64>()[1].is_nan());
}

#[test]
fn pow_scalar_matches_powf_for_every_fast_path() {
    let x = positive(&[2, 7], 3);
    for p in [2.0, 1.0, 0.0, 0.5, -0.5, -1.0, 3.0, 4.0, -2.0, 1.7, -0.3] {
        let expect: Vec<f64> = x.to_vec::<f64>().into_iter().map(|v| v.powf(p)).collect();
        assert_close(&ops::pow_scalar(&x, p).unwrap(), &expect, 1e-14);
        assert_close(&ops::pow_scalar(&f32_of(&x), p).unwrap(), &expect, 1e-6);
        check_grad(
            std::slice::from_ref(&x),
            |t| ops::pow_scalar(&t[0], p).unwrap(),
            1e-6,
        );
    }
    // Negative bases with integer exponents stay real.
    let n = Tensor::from_vec(vec![-2.0f64, -0.5], &[2]).unwrap();
    assert_close(&ops::pow_scalar(&n, 3.0).unwrap(), &[-8.0, -0.125], 0.0);
    check_grad(&[n], |t| ops::pow_scalar(&t[0], 3.0).unwrap(), 1e-6);
    assert_eq!(
        x.pow_scalar(2.0).unwrap().to_vec::<f64>(),
        ops::pow_scalar(&x, 2.0).unwrap().to_vec::<f64>()
    );
}

#[test]
fn elementwise_gradients_match_finite_differences() {
    let p = positive(&[3, 4], 4);
    let z = away_from_zero(&[3, 4], 5);
    check_grad(std::slice::from_ref(&z), |t| ops::neg(&t[0]).unwrap(), 1e-6);
    check_grad(std::slice::from_ref(&z), |t| ops::exp(&t[0]).unwrap(), 1e-6);
    check_grad(std::slice::from_ref(&p), |t| ops::log(&t[0]).unwrap(), 1e-6);
    check_grad(
        std::slice::from_ref(&p),
        |t| ops::sqrt(&t[0]).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&z),
        |t| ops::tanh(&t[0]).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&z),
        |t| ops::sigmoid(&t[0]).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&z),
        |t| ops::relu(&t[0]).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&z),
        |t| ops::gelu(&t[0], false).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&z),
        |t| ops::gelu(&t[0], true).unwrap(),
        1e-6,
    );
    // Chained, so saved outputs and inputs are both exercised in one graph.
    check_grad(
        &[p],
        |t| ops::sqrt(&ops::exp(&ops::log(&t[0]).unwrap()).unwrap()).unwrap(),
        1e-6,
    );
}

#[test]
fn relu_gradient_is_zero_on_the_negative_side() {
    let x = leaf(&Tensor::from_vec(vec![-1.0f64, 2.0, -3.0, 0.5], &[4]).unwrap());
    let y = ops::sum(&ops::relu(&x).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(y, None)], false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![0.0, 1.0, 0.0, 1.0]);
}

#[test]
fn pow_broadcasts_promotes_and_differentiates() {
    let a = positive(&[3, 4], 6);
    let b = det(&[4], 7);
    let c = ops::pow(&a, &b).unwrap();
    assert_eq!(c.shape(), &[3, 4]);
    let (av, bv) = (a.to_vec::<f64>(), b.to_vec::<f64>());
    let expect: Vec<f64> = (0..12).map(|i| av[i].powf(bv[i % 4])).collect();
    assert_close(&c, &expect, 1e-14);
    // float32 ** float64 promotes to float64.
    let m = ops::pow(&f32_of(&a), &b).unwrap();
    assert_eq!(m.dtype(), DType::F64);
    assert_close(&m, &expect, 1e-6);
    assert_eq!(
        ops::pow(&f32_of(&a), &f32_of(&b)).unwrap().dtype(),
        DType::F32
    );
    check_grad(
        &[a.clone(), b.clone()],
        |t| ops::pow(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    // A 0-d exponent and a 0-d base (Python's `x ** t` and `2 ** t`).
    let s = Tensor::scalar(1.5, DType::F64);
    check_grad(
        &[a.clone(), s.clone()],
        |t| ops::pow(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    check_grad(&[s, b.clone()], |t| ops::pow(&t[0], &t[1]).unwrap(), 1e-6);
    // d/db 0^b at b > 0 is 0 (not NaN), and d/da a^0 is 0 even at a = 0.
    let zero = leaf(&Tensor::from_vec(vec![0.0f64], &[1]).unwrap());
    let e = leaf(&Tensor::from_vec(vec![2.0f64], &[1]).unwrap());
    let y = ops::sum(&ops::pow(&zero, &e).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(y, None)], false).unwrap();
    assert_eq!(e.grad().unwrap().to_vec::<f64>(), vec![0.0]);
    assert_eq!(zero.grad().unwrap().to_vec::<f64>(), vec![0.0]);
    assert!(matches!(
        ops::pow(&det(&[3], 1), &det(&[4], 2)),
        Err(Error::Shape { .. })
    ));
}

/// A transposed view of a float64 tensor (no graph).
fn transposed(t: &Tensor) -> Tensor {
    Tensor::from_data(TensorData {
        storage: t.storage().clone(),
        layout: t.layout().transpose(0, 1),
    })
}

#[test]
fn elementwise_ops_read_strided_views() {
    let x = away_from_zero(&[4, 3], 8);
    let xt = transposed(&x);
    assert!(!xt.is_contiguous());
    let xt_copy = Tensor::from_vec(xt.to_vec::<f64>(), xt.shape()).unwrap();
    for f in [ops::exp, ops::tanh, ops::sigmoid, ops::relu, ops::neg] as [UnaryFn; 5] {
        assert_eq!(
            f(&xt).unwrap().to_vec::<f64>(),
            f(&xt_copy).unwrap().to_vec::<f64>()
        );
    }
    assert_eq!(
        ops::gelu(&xt, true).unwrap().to_vec::<f64>(),
        ops::gelu(&xt_copy, true).unwrap().to_vec::<f64>()
    );
    // Gradients through a transposed and a broadcast view.
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::tanh(&ops::transpose(&t[0], 0, 1).unwrap()).unwrap(),
        1e-6,
    );
    check_grad(
        &[det(&[3, 1], 9)],
        |t| ops::exp(&ops::expand(&t[0], &[2, 3, 4]).unwrap()).unwrap(),
        1e-6,
    );
    check_grad(
        &[x],
        |t| ops::pow_scalar(&ops::transpose(&t[0], 0, 1).unwrap(), 2.0).unwrap(),
        1e-6,
    );
}

#[test]
fn large_elementwise_kernels_match_the_scalar_reference() {
    // Above cpu::PAR_MIN, so the parallel map runs.
    let x = det(&[300, 200], 10);
    let y = ops::tanh(&x).unwrap().to_vec::<f64>();
    for (a, b) in y.iter().zip(x.to_vec::<f64>()) {
        assert_eq!(*a, b.tanh());
    }
}

#[test]
fn mean_matches_reference_and_differentiates() {
    let x = det(&[2, 3, 4], 11);
    let v = x.to_vec::<f64>();
    let m = ops::mean(&x, Some(&[1]), false).unwrap();
    assert_eq!(m.shape(), &[2, 4]);
    let mut expect = vec![0.0; 8];
    for i in 0..2 {
        for k in 0..4 {
            expect[i * 4 + k] = (0..3).map(|j| v[i * 12 + j * 4 + k]).sum::<f64>() / 3.0;
        }
    }
    assert_close(&m, &expect, 1e-14);
    assert_close(
        &ops::mean(&f32_of(&x), Some(&[1]), false).unwrap(),
        &expect,
        1e-6,
    );
    let all = ops::mean(&x, None, false).unwrap();
    assert_eq!(all.shape(), &[] as &[usize]);
    assert!((all.item().unwrap() - v.iter().sum::<f64>() / 24.0).abs() < 1e-14);
    assert_eq!(
        ops::mean(&x, Some(&[0, -1]), true).unwrap().shape(),
        &[1, 3, 1]
    );
    assert_eq!(x.mean(None, true).unwrap().shape(), &[1, 1, 1]);
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::mean(&t[0], Some(&[1]), false).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::mean(&t[0], Some(&[0, 2]), true).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::mean(&t[0], None, false).unwrap(),
        1e-6,
    );
    check_grad(
        &[det(&[4, 3], 12)],
        |t| ops::mean(&ops::transpose(&t[0], 0, 1).unwrap(), Some(&[-1]), false).unwrap(),
        1e-6,
    );
    assert!(matches!(
        ops::mean(&x, Some(&[3]), false),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::mean(&x, Some(&[0, 0]), false),
        Err(Error::Shape { .. })
    ));
    // The mean of nothing is NaN, as in NumPy.
    let e = Tensor::from_vec(Vec::<f64>::new(), &[0, 3]).unwrap();
    assert!(ops::mean(&e, None, false).unwrap().item().unwrap().is_nan());
}

#[test]
fn max_matches_reference_and_routes_the_gradient() {
    let x = det(&[2, 3, 4], 13);
    let v = x.to_vec::<f64>();
    let m = ops::max(&x, Some(&[2]), false).unwrap();
    assert_eq!(m.shape(), &[2, 3]);
    let expect: Vec<f64> = (0..6)
        .map(|r| {
            v[r * 4..r * 4 + 4]
                .iter()
                .cloned()
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    assert_close(&m, &expect, 0.0);
    assert_close(
        &ops::max(&f32_of(&x), Some(&[2]), false).unwrap(),
        &expect,
        1e-7,
    );
    let all = x.max(None, false).unwrap().item().unwrap();
    assert_eq!(all, v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    assert_eq!(
        ops::max(&x, Some(&[0, 1]), true).unwrap().shape(),
        &[1, 1, 4]
    );
    // det() values are distinct, so there are no ties.
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::max(&t[0], Some(&[2]), false).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::max(&t[0], Some(&[0, 2]), true).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::max(&t[0], None, false).unwrap(),
        1e-6,
    );
    check_grad(
        &[det(&[4, 3], 14)],
        |t| ops::max(&ops::transpose(&t[0], 0, 1).unwrap(), Some(&[1]), false).unwrap(),
        1e-6,
    );
}

#[test]
fn max_splits_the_gradient_between_ties() {
    let x =
        leaf(&Tensor::from_vec(vec![1.0f64, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0, 0.0], &[2, 4]).unwrap());
    let y = ops::sum(&ops::max(&x, Some(&[1]), false).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(y, None)], false).unwrap();
    let g = x.grad().unwrap().to_vec::<f64>();
    let third = 1.0 / 3.0;
    assert_close(
        &Tensor::from_vec(g, &[8]).unwrap(),
        &[0.0, 0.5, 0.5, 0.0, third, third, third, 0.0],
        1e-15,
    );
}

#[test]
fn max_errors_on_bad_axes_and_empty_reductions() {
    let x = det(&[2, 3], 15);
    assert!(matches!(
        ops::max(&x, Some(&[2]), false),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::max(&x, Some(&[-3]), false),
        Err(Error::Shape { .. })
    ));
    let e = Tensor::from_vec(Vec::<f64>::new(), &[0, 3]).unwrap();
    let err = ops::max(&e, Some(&[0]), false).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    assert!(
        err.to_string().contains("max") && err.to_string().contains("(0, 3)"),
        "{err}"
    );
    assert!(matches!(
        ops::max(&e, None, false),
        Err(Error::Shape { .. })
    ));
    // Reducing only non-empty axes of an empty tensor is fine.
    assert_eq!(ops::max(&e, Some(&[1]), false).unwrap().shape(), &[0]);
}

#[test]
fn tensor_methods_call_the_ops() {
    let x = positive(&[2, 3], 16);
    let same = |a: Tensor, b: Tensor| assert_eq!(a.to_vec::<f64>(), b.to_vec::<f64>());
    same(x.exp().unwrap(), ops::exp(&x).unwrap());
    same(x.log().unwrap(), ops::log(&x).unwrap());
    same(x.sqrt().unwrap(), ops::sqrt(&x).unwrap());
    same(x.neg().unwrap(), ops::neg(&x).unwrap());
    same(x.tanh().unwrap(), ops::tanh(&x).unwrap());
    same(x.sigmoid().unwrap(), ops::sigmoid(&x).unwrap());
    same(x.relu().unwrap(), ops::relu(&x).unwrap());
    same(x.gelu(false).unwrap(), ops::gelu(&x, false).unwrap());
    same(x.pow(&x).unwrap(), ops::pow(&x, &x).unwrap());
}

#[test]
fn round_decimals_is_pytorchs_scaled_round_in_the_elements_dtype() {
    let v = [1.25, 1.35, -1.25, 2.675, 0.5, 1234.5, 1250.0, -0.04];
    // PyTorch: rint(x * 10^d) / 10^d, or rint(x / 10^-d) * 10^-d, in the element's dtype.
    let reference = |x: f64, d: i32, f32: bool| {
        if f32 {
            let (x, s) = (x as f32, 10f64.powi(d.abs()) as f32);
            (if d > 0 {
                (x * s).round_ties_even() / s
            } else {
                (x / s).round_ties_even() * s
            }) as f64
        } else {
            let s = 10f64.powi(d.abs());
            if d > 0 {
                (x * s).round_ties_even() / s
            } else {
                (x / s).round_ties_even() * s
            }
        }
    };
    for d in [1i64, 2, 3, -1, -2, -3] {
        let x64 = Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
        let got = ops::round_decimals(&x64, d).unwrap();
        let want: Vec<f64> = v.iter().map(|&x| reference(x, d as i32, false)).collect();
        assert_eq!(got.to_vec::<f64>(), want, "float64, decimals {d}");
        let got = ops::round_decimals(&f32_of(&x64), d).unwrap();
        assert_eq!(got.dtype(), DType::F32);
        let want: Vec<f64> = v.iter().map(|&x| reference(x, d as i32, true)).collect();
        assert_eq!(got.to_vec::<f64>(), want, "float32, decimals {d}");
    }
    // decimals 0 is round; a scale beyond float32's range is NaN, as in PyTorch.
    let x = Tensor::from_vec(vec![2.5f32, -0.5, 1.7], &[3]).unwrap();
    assert_eq!(
        ops::round_decimals(&x, 0).unwrap().to_vec::<f32>(),
        vec![2.0, -0.0, 2.0]
    );
    assert!(ops::round_decimals(&x, 40)
        .unwrap()
        .to_vec::<f32>()
        .iter()
        .all(|v| v.is_nan()));
    // Integers keep `round` but have no decimals; the gradient is zero.
    let i = Tensor::from_vec(vec![15i64, 25], &[2]).unwrap();
    assert_eq!(
        ops::round_decimals(&i, 0).unwrap().to_vec::<i64>(),
        vec![15, 25]
    );
    let e = ops::round_decimals(&i, 1).unwrap_err();
    assert!(
        matches!(e, Error::DType { .. }) && e.to_string().contains("int64"),
        "{e}"
    );
    let w = leaf(&Tensor::from_vec(vec![1.25f64, 3.0], &[2]).unwrap());
    let y = ops::round_decimals(&w, 1).unwrap();
    let total = ops::sum(&y, None, false).unwrap();
    remat_core::autograd::backward(&[(total, None)], false).unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f64>(), vec![0.0, 0.0]);
}
