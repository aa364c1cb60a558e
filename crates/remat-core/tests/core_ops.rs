//! Gradients of the core ops (binary arithmetic, sum, reshape, expand, matmul) against finite
//! differences, and the basic autograd contract.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::{ops, Tensor};

#[test]
fn binary_ops_broadcast_and_differentiate() {
    let a = det(&[3, 4], 1);
    let b = det(&[4], 2);
    check_grad(
        &[a.clone(), b.clone()],
        |t| ops::add(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    check_grad(
        &[a.clone(), b.clone()],
        |t| ops::sub(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    check_grad(
        &[a.clone(), b.clone()],
        |t| ops::mul(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    let c = ops::add(
        &det(&[3, 1], 3),
        &Tensor::scalar(3.0, remat_core::DType::F64),
    )
    .unwrap();
    check_grad(&[a, c], |t| ops::div(&t[0], &t[1]).unwrap(), 1e-5);
}

#[test]
fn sum_reshape_expand_differentiate() {
    let a = det(&[2, 3, 4], 4);
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::sum(&t[0], Some(&[1]), false).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::sum(&t[0], Some(&[0, 2]), true).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::sum(&t[0], None, false).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::reshape(&t[0], &[6, 4]).unwrap(),
        1e-6,
    );
    check_grad(
        &[det(&[3, 1], 5)],
        |t| ops::expand(&t[0], &[2, 3, 4]).unwrap(),
        1e-6,
    );
}

#[test]
fn matmul_follows_numpy_rules_and_differentiates() {
    let a = det(&[2, 3, 4], 6);
    let b = det(&[4, 5], 7);
    let c = ops::matmul(&a, &b).unwrap();
    assert_eq!(c.shape(), &[2, 3, 5]);
    // Reference for one element.
    let (av, bv, cv) = (a.to_vec::<f64>(), b.to_vec::<f64>(), c.to_vec::<f64>());
    let expect: f64 = (0..4).map(|k| av[12 + 4 + k] * bv[k * 5 + 2]).sum();
    assert!((cv[15 + 5 + 2] - expect).abs() < 1e-12);
    check_grad(
        &[a.clone(), b.clone()],
        |t| ops::matmul(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    let v = det(&[4], 8);
    assert_eq!(ops::matmul(&a, &v).unwrap().shape(), &[2, 3]);
    assert_eq!(ops::matmul(&v, &b).unwrap().shape(), &[5]);
    assert_eq!(ops::matmul(&v, &v).unwrap().shape(), &[] as &[usize]);
    check_grad(
        &[a, v.clone()],
        |t| ops::matmul(&t[0], &t[1]).unwrap(),
        1e-6,
    );
    check_grad(&[v, b], |t| ops::matmul(&t[0], &t[1]).unwrap(), 1e-6);
    assert!(ops::matmul(&det(&[2, 3], 1), &det(&[2, 3], 2)).is_err());
}

#[test]
fn gradients_accumulate_and_second_backward_needs_retain_graph() {
    let x = leaf(&det(&[3], 1));
    let y = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(y.clone(), None)], false).unwrap();
    let g1 = x.grad().unwrap().to_vec::<f64>();
    let err = remat_core::autograd::backward(&[(y, None)], false).unwrap_err();
    assert!(err.to_string().contains("retain_graph=True"), "{err}");
    let y = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(y.clone(), None)], true).unwrap();
    remat_core::autograd::backward(&[(y, None)], false).unwrap();
    let g3 = x.grad().unwrap().to_vec::<f64>();
    for (a, b) in g1.iter().zip(&g3) {
        assert!((3.0 * a - b).abs() < 1e-12);
    }
}

#[test]
fn grad_does_not_touch_dot_grad() {
    let x = leaf(&det(&[3], 1));
    let y = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    let g = remat_core::autograd::grad(&[y], std::slice::from_ref(&x), None, false).unwrap();
    assert!(x.grad().is_none());
    let expect: Vec<f64> = x.to_vec::<f64>().iter().map(|v| 2.0 * v).collect();
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>(), expect);
}

#[test]
fn non_scalar_backward_is_a_graph_error() {
    let x = leaf(&det(&[3], 1));
    let y = ops::mul(&x, &x).unwrap();
    assert!(matches!(
        remat_core::autograd::backward(&[(y, None)], false),
        Err(remat_core::Error::Graph { .. })
    ));
}

#[test]
fn fused_linear_matches_matmul_plus_bias_and_differentiates() {
    let x = det(&[2, 3, 4], 11);
    let w = det(&[5, 4], 12);
    let b = det(&[5], 13);
    let fused = ops::linear(&x, &w, Some(&b)).unwrap();
    let wt = ops::transpose(&w, 0, 1).unwrap();
    let reference = ops::add(&ops::matmul(&x, &wt).unwrap(), &b).unwrap();
    assert_eq!(fused.shape(), &[2, 3, 5]);
    for (f, r) in fused.to_vec::<f64>().iter().zip(reference.to_vec::<f64>()) {
        assert!((f - r).abs() < 1e-12);
    }
    check_grad(
        &[x.clone(), w.clone(), b],
        |t| ops::linear(&t[0], &t[1], Some(&t[2])).unwrap(),
        1e-6,
    );
    check_grad(&[x, w], |t| ops::linear(&t[0], &t[1], None).unwrap(), 1e-6);
    assert!(ops::linear(&det(&[2, 3], 1), &det(&[5, 4], 2), None).is_err());
    assert!(ops::linear(&det(&[2, 4], 1), &det(&[5, 4], 2), Some(&det(&[4], 3))).is_err());
}
