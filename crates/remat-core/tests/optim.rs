//! Optimizer kernels (`remat_core::optim`) against hand-computed values of PyTorch's SGD,
//! Adam and AdamW formulas: one step with literal numbers, several steps against a scalar
//! reference, float32 and float64, the parallel path, and the typed errors.

#![allow(clippy::unwrap_used)]

use remat_core::optim::{adam_step, sgd_step};
use remat_core::tensor::TensorData;
use remat_core::{DType, Device, Error, Tensor};

fn t64(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

fn zeros(n: usize, dtype: DType) -> Tensor {
    remat_core::ops::zeros(&[n], dtype, Device::Cpu).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// Deterministic values in [-1, 1).
fn det(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// PyTorch's SGD on one scalar, in f64.
fn sgd_ref(p: &mut f64, buf: &mut Option<f64>, g: f64, lr: f64, mom: f64, wd: f64, nest: bool) {
    let mut d = g + wd * *p;
    if mom != 0.0 {
        let b = match *buf {
            None => d,
            Some(b) => mom * b + d,
        };
        *buf = Some(b);
        d = if nest { d + mom * b } else { b };
    }
    *p -= lr * d;
}

/// PyTorch's Adam / AdamW on one scalar, in f64 (`step` from 1).
#[allow(clippy::too_many_arguments)]
fn adam_ref(
    p: &mut f64,
    m: &mut f64,
    v: &mut f64,
    g: f64,
    step: i32,
    lr: f64,
    wd: f64,
    adamw: bool,
) {
    let (b1, b2, eps) = (0.9, 0.999, 1e-8);
    let g = if adamw {
        *p *= 1.0 - lr * wd;
        g
    } else {
        g + wd * *p
    };
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    let step_size = lr / (1.0 - b1.powi(step));
    let denom = v.sqrt() / (1.0 - b2.powi(step)).sqrt() + eps;
    *p -= step_size * *m / denom;
}

#[test]
fn sgd_plain_one_step_literal() {
    let p = t64(&[1.0, -2.0]);
    let g = t64(&[0.5, 0.25]);
    sgd_step(&p, &g, None, true, 0.1, 0.0, 0.0, 0.0, false).unwrap();
    assert_close(&p.to_vec::<f64>(), &[0.95, -2.025], 1e-15);
    // weight decay: d = g + 0.1 * p
    let p = t64(&[1.0, -2.0]);
    sgd_step(&p, &g, None, true, 0.1, 0.0, 0.1, 0.0, false).unwrap();
    assert_close(
        &p.to_vec::<f64>(),
        &[1.0 - 0.1 * 0.6, -2.0 - 0.1 * 0.05],
        1e-15,
    );
}

#[test]
fn sgd_momentum_two_steps_literal() {
    let p = t64(&[1.0]);
    let g = t64(&[0.5]);
    let buf = zeros(1, DType::F64);
    sgd_step(&p, &g, Some(&buf), true, 0.1, 0.9, 0.0, 0.0, false).unwrap();
    assert_close(&buf.to_vec::<f64>(), &[0.5], 1e-15);
    assert_close(&p.to_vec::<f64>(), &[0.95], 1e-15);
    sgd_step(&p, &g, Some(&buf), false, 0.1, 0.9, 0.0, 0.0, false).unwrap();
    assert_close(&buf.to_vec::<f64>(), &[0.95], 1e-15);
    assert_close(&p.to_vec::<f64>(), &[0.855], 1e-15);
}

#[test]
fn sgd_dampening_and_nesterov() {
    // dampening: the first step still copies d into the buffer, later steps damp it.
    let p = t64(&[1.0]);
    let g = t64(&[1.0]);
    let buf = zeros(1, DType::F64);
    sgd_step(&p, &g, Some(&buf), true, 0.1, 0.5, 0.0, 0.5, false).unwrap();
    assert_close(&buf.to_vec::<f64>(), &[1.0], 1e-15);
    sgd_step(&p, &g, Some(&buf), false, 0.1, 0.5, 0.0, 0.5, false).unwrap();
    assert_close(&buf.to_vec::<f64>(), &[1.0], 1e-15);
    assert_close(&p.to_vec::<f64>(), &[0.8], 1e-15);
    // nesterov: p -= lr * (d + momentum * buf)
    let p = t64(&[1.0]);
    let buf = zeros(1, DType::F64);
    sgd_step(&p, &g, Some(&buf), true, 0.1, 0.5, 0.0, 0.0, true).unwrap();
    assert_close(&p.to_vec::<f64>(), &[1.0 - 0.1 * 1.5], 1e-15);
    sgd_step(&p, &g, Some(&buf), false, 0.1, 0.5, 0.0, 0.0, true).unwrap();
    assert_close(&buf.to_vec::<f64>(), &[1.5], 1e-15);
    assert_close(&p.to_vec::<f64>(), &[0.85 - 0.1 * 1.75], 1e-15);
    assert!(matches!(
        sgd_step(&p, &g, Some(&buf), false, 0.1, 0.5, 0.0, 0.5, true),
        Err(Error::Value { .. })
    ));
}

#[test]
fn sgd_several_steps_match_reference_f64_f32_and_parallel() {
    for &(n, dtype) in &[(7, DType::F64), (7, DType::F32), (100_000, DType::F64)] {
        for &(mom, wd, nest) in &[(0.0, 0.0, false), (0.9, 0.01, false), (0.9, 0.0, true)] {
            let p0 = det(n, 1);
            let p = remat_core::ops::cast(&t64(&p0), dtype).unwrap();
            let buf = zeros(n, dtype);
            let mut rp = p0.clone();
            let mut rb = vec![None; n];
            for step in 0..4 {
                let g = det(n, 10 + step);
                let gt = remat_core::ops::cast(&t64(&g), dtype).unwrap();
                sgd_step(&p, &gt, Some(&buf), step == 0, 0.05, mom, wd, 0.0, nest).unwrap();
                for i in 0..n {
                    sgd_ref(&mut rp[i], &mut rb[i], g[i], 0.05, mom, wd, nest);
                }
            }
            let tol = if dtype == DType::F32 { 1e-6 } else { 1e-13 };
            assert_close(&p.to_vec::<f64>(), &rp, tol);
        }
    }
}

#[test]
fn adam_one_step_literal() {
    // First step: m = 0.1 g, v = 0.001 g^2, so the update is lr * g / (|g| + eps).
    let p = t64(&[1.0, -1.0]);
    let g = t64(&[0.5, -2.0]);
    let (m, v) = (zeros(2, DType::F64), zeros(2, DType::F64));
    adam_step(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, false, None).unwrap();
    assert_close(&m.to_vec::<f64>(), &[0.05, -0.2], 1e-15);
    assert_close(&v.to_vec::<f64>(), &[0.00025, 0.004], 1e-13);
    let want = [
        1.0 - 0.1 * 0.5 / (0.5 + 1e-8),
        -1.0 + 0.1 * 2.0 / (2.0 + 1e-8),
    ];
    assert_close(&p.to_vec::<f64>(), &want, 1e-13);
}

#[test]
fn adamw_decays_the_parameter_first() {
    let p = t64(&[2.0]);
    let g = t64(&[0.0]);
    let (m, v) = (zeros(1, DType::F64), zeros(1, DType::F64));
    // zero gradient: only the decoupled decay moves the parameter.
    adam_step(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.01, true, None).unwrap();
    assert_close(&p.to_vec::<f64>(), &[2.0 * (1.0 - 0.1 * 0.01)], 1e-15);
    // Adam's L2 weight decay instead enters the gradient: g = 0.01 * 2 = 0.02.
    let p = t64(&[2.0]);
    let (m, v) = (zeros(1, DType::F64), zeros(1, DType::F64));
    adam_step(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.01, false, None).unwrap();
    assert_close(&m.to_vec::<f64>(), &[0.002], 1e-13);
    assert_close(
        &p.to_vec::<f64>(),
        &[2.0 - 0.1 * 0.02 / (0.02 + 1e-8)],
        1e-13,
    );
}

#[test]
fn adam_several_steps_match_reference_f64_f32_and_parallel() {
    for &(n, dtype) in &[(9, DType::F64), (9, DType::F32), (70_000, DType::F64)] {
        for &(wd, adamw) in &[(0.0, false), (0.05, false), (0.05, true)] {
            let p0 = det(n, 3);
            let p = remat_core::ops::cast(&t64(&p0), dtype).unwrap();
            let (m, v) = (zeros(n, dtype), zeros(n, dtype));
            let mut rp = p0.clone();
            let (mut rm, mut rv) = (vec![0.0; n], vec![0.0; n]);
            for step in 1..=5u64 {
                let g = det(n, 20 + step);
                let gt = remat_core::ops::cast(&t64(&g), dtype).unwrap();
                adam_step(
                    &p, &gt, &m, &v, step, 0.01, 0.9, 0.999, 1e-8, wd, adamw, None,
                )
                .unwrap();
                for i in 0..n {
                    adam_ref(
                        &mut rp[i],
                        &mut rm[i],
                        &mut rv[i],
                        g[i],
                        step as i32,
                        0.01,
                        wd,
                        adamw,
                    );
                }
            }
            let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
            assert_close(&p.to_vec::<f64>(), &rp, tol);
            assert_close(&m.to_vec::<f64>(), &rm, tol);
            assert_close(&v.to_vec::<f64>(), &rv, tol);
        }
    }
}

#[test]
fn strided_gradient_is_read_in_logical_order() {
    // grad = transpose of a 2x3 buffer: a non-contiguous 3x2 view.
    let base = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let gt = Tensor::from_data(TensorData {
        storage: base.storage().clone(),
        layout: base.layout().transpose(0, 1),
    });
    let p = remat_core::ops::zeros(&[3, 2], DType::F64, Device::Cpu).unwrap();
    sgd_step(&p, &gt, None, true, 1.0, 0.0, 0.0, 0.0, false).unwrap();
    assert_eq!(p.to_vec::<f64>(), vec![-1.0, -4.0, -2.0, -5.0, -3.0, -6.0]);
}

#[test]
fn mismatches_are_typed_errors() {
    let p = t64(&[1.0, 2.0]);
    let (m, v) = (zeros(2, DType::F64), zeros(2, DType::F64));
    let e = sgd_step(&p, &t64(&[1.0]), None, true, 0.1, 0.0, 0.0, 0.0, false).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    assert!(
        e.to_string().contains("(1,)") || e.to_string().contains("[1]"),
        "{e}"
    );
    let g32 = zeros(2, DType::F32);
    let e = adam_step(&p, &g32, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, false, None).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    let e = adam_step(
        &p,
        &t64(&[0.0, 0.0]),
        &m,
        &zeros(3, DType::F64),
        1,
        0.1,
        0.9,
        0.999,
        1e-8,
        0.0,
        false,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    // non-contiguous parameter
    let base = remat_core::ops::zeros(&[2, 3], DType::F64, Device::Cpu).unwrap();
    let pt = Tensor::from_data(TensorData {
        storage: base.storage().clone(),
        layout: base.layout().transpose(0, 1),
    });
    let g = remat_core::ops::zeros(&[3, 2], DType::F64, Device::Cpu).unwrap();
    let e = sgd_step(&pt, &g, None, true, 0.1, 0.0, 0.0, 0.0, false).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    assert!(e.to_string().contains("contiguous"), "{e}");
    // state sharing the parameter's storage, missing momentum buffer, bad lr, step 0
    let e = adam_step(
        &p,
        &t64(&[0.0, 0.0]),
        &p,
        &v,
        1,
        0.1,
        0.9,
        0.999,
        1e-8,
        0.0,
        false,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    let e = sgd_step(&p, &p, None, true, 0.1, 0.9, 0.0, 0.0, false).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    let e = sgd_step(&p, &p, None, true, -0.1, 0.0, 0.0, 0.0, false).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    let e = adam_step(&p, &p, &m, &v, 0, 0.1, 0.9, 0.999, 1e-8, 0.0, false, None).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
}

#[test]
fn gradient_aliasing_the_parameter_is_read_before_the_update() {
    // p -= lr * p with grad = p itself (same storage): copied out, so every element sees its
    // old value.
    let p = t64(&[1.0, 2.0, 4.0]);
    let g = p.detach();
    sgd_step(&p, &g, None, true, 0.5, 0.0, 0.0, 0.0, false).unwrap();
    assert_eq!(p.to_vec::<f64>(), vec![0.5, 1.0, 2.0]);
}

#[test]
fn zero_fills_in_place() {
    let base = t64(&[1.0, 2.0, 3.0, 4.0]);
    let view = Tensor::from_data(TensorData {
        storage: base.storage().clone(),
        layout: remat_core::layout::Layout::contiguous(&[4]),
    });
    remat_core::optim::zero_(&view).unwrap();
    assert_eq!(base.to_vec::<f64>(), vec![0.0; 4]);
}

#[test]
fn copy_casts_and_checks_shapes() {
    let dst = t64(&[0.0, 0.0, 0.0]);
    let src = remat_core::ops::cast(&t64(&[1.5, -2.0, 3.0]), DType::F32).unwrap();
    remat_core::optim::copy_(&dst, &src).unwrap();
    assert_eq!(dst.to_vec::<f64>(), vec![1.5, -2.0, 3.0]);
    let e = remat_core::optim::copy_(&dst, &t64(&[1.0])).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}
