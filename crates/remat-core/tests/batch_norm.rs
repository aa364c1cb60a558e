//! `batch_norm`: values against a plain-Rust reference (training and evaluation), the running
//! statistics' in-place update (PyTorch's momentum rule, unbiased variance), gradients against
//! finite differences (float64), and errors naming the op, the argument and the shapes.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::checkpoint::{checkpoint_segment, is_recomputing};
use remat_core::{autograd, grad_mode, ops, DType, Error, Tensor};
use std::sync::{Arc, Mutex};

/// Per-channel `(mean, biased variance)` of `x (N, C, *)` as float64 vectors.
fn channel_stats(x: &[f64], shape: &[usize]) -> Vec<(f64, f64)> {
    let (n, c) = (shape[0], shape[1]);
    let inner: usize = shape[2..].iter().product();
    (0..c)
        .map(|ch| {
            let vals: Vec<f64> = (0..n)
                .flat_map(|i| (0..inner).map(move |k| (i * c + ch) * inner + k))
                .map(|j| x[j])
                .collect();
            let m = vals.iter().sum::<f64>() / vals.len() as f64;
            let v = vals.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / vals.len() as f64;
            (m, v)
        })
        .collect()
}

/// `(x - mean) / sqrt(var + eps) * w + b` per channel, the statistics given per channel.
fn reference(
    x: &[f64],
    shape: &[usize],
    stats: &[(f64, f64)],
    w: &[f64],
    b: &[f64],
    eps: f64,
) -> Vec<f64> {
    let c = shape[1];
    let inner: usize = shape[2..].iter().product();
    x.iter()
        .enumerate()
        .map(|(j, &a)| {
            let ch = (j / inner) % c;
            let (m, v) = stats[ch];
            (a - m) / (v + eps).sqrt() * w[ch] + b[ch]
        })
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn training_normalises_by_the_batch_and_updates_the_running_statistics() {
    for shape in [
        vec![5, 3],
        vec![4, 3, 5],
        vec![2, 3, 2, 3],
        vec![2, 2, 2, 1, 3],
    ] {
        let c = shape[1];
        let x = det(&shape, 1);
        let (w, b) = (det(&[c], 2), det(&[c], 3));
        let (rm0, rv0) = (det(&[c], 4), ops::add_scalar(&det(&[c], 5), 2.0).unwrap());
        // Copies: the op writes into them.
        let (rm, rv) = (
            ops::scale(&rm0, 1.0).unwrap(),
            ops::scale(&rv0, 1.0).unwrap(),
        );
        let y = ops::batch_norm(
            &x,
            Some(&rm),
            Some(&rv),
            Some(&w),
            Some(&b),
            true,
            0.3,
            1e-5,
        )
        .unwrap();
        let xs = x.to_vec::<f64>();
        let stats = channel_stats(&xs, &shape);
        let want = reference(&xs, &shape, &stats, &w.to_vec(), &b.to_vec(), 1e-5);
        assert_close(
            &y.to_vec::<f64>(),
            &want,
            1e-12,
            &format!("{shape:?} output"),
        );
        // running = 0.3 · stat + 0.7 · running, with the unbiased variance.
        let n = (x.numel() / c) as f64;
        let (m0, v0) = (rm0.to_vec::<f64>(), rv0.to_vec::<f64>());
        let want_m: Vec<f64> = (0..c).map(|k| 0.3 * stats[k].0 + 0.7 * m0[k]).collect();
        let want_v: Vec<f64> = (0..c)
            .map(|k| 0.3 * stats[k].1 * n / (n - 1.0) + 0.7 * v0[k])
            .collect();
        assert_close(&rm.to_vec::<f64>(), &want_m, 1e-14, "running_mean");
        assert_close(&rv.to_vec::<f64>(), &want_v, 1e-14, "running_var");
    }
}

#[test]
fn training_without_running_statistics_and_without_affine() {
    let shape = [3, 2, 4];
    let x = det(&shape, 7);
    let y = ops::batch_norm(&x, None, None, None, None, true, 0.1, 1e-3).unwrap();
    let xs = x.to_vec::<f64>();
    let stats = channel_stats(&xs, &shape);
    let want = reference(&xs, &shape, &stats, &[1.0, 1.0], &[0.0, 0.0], 1e-3);
    assert_close(&y.to_vec::<f64>(), &want, 1e-12, "output");
    // float32 too, within float32's rounding.
    let y32 = ops::batch_norm(
        &x.to_dtype(DType::F32).unwrap(),
        None,
        None,
        None,
        None,
        true,
        0.1,
        1e-3,
    )
    .unwrap();
    assert_eq!(y32.dtype(), DType::F32);
    assert_close(
        &y32.to_vec::<f32>()
            .iter()
            .map(|&v| v as f64)
            .collect::<Vec<_>>(),
        &want,
        1e-5,
        "f32",
    );
}

#[test]
fn evaluation_normalises_by_the_running_statistics_and_leaves_them_alone() {
    let shape = [1, 3, 4];
    let x = det(&shape, 8);
    let (rm, rv) = (det(&[3], 9), ops::add_scalar(&det(&[3], 10), 1.5).unwrap());
    let (w, b) = (det(&[3], 11), det(&[3], 12));
    let (m0, v0) = (rm.to_vec::<f64>(), rv.to_vec::<f64>());
    // One sample per channel is fine when not training.
    let y = ops::batch_norm(
        &x,
        Some(&rm),
        Some(&rv),
        Some(&w),
        Some(&b),
        false,
        0.1,
        1e-5,
    )
    .unwrap();
    let stats: Vec<(f64, f64)> = m0.iter().zip(&v0).map(|(&m, &v)| (m, v)).collect();
    let want = reference(&x.to_vec(), &shape, &stats, &w.to_vec(), &b.to_vec(), 1e-5);
    assert_close(&y.to_vec::<f64>(), &want, 1e-12, "eval output");
    assert_eq!(rm.to_vec::<f64>(), m0);
    assert_eq!(rv.to_vec::<f64>(), v0);
    // Without weight and bias.
    let y = ops::batch_norm(&x, Some(&rm), Some(&rv), None, None, false, 0.1, 1e-5).unwrap();
    let want = reference(&x.to_vec(), &shape, &stats, &[1.0; 3], &[0.0; 3], 1e-5);
    assert_close(
        &y.to_vec::<f64>(),
        &want,
        1e-12,
        "eval output without affine",
    );
}

#[test]
fn an_empty_batch_leaves_the_running_statistics_alone() {
    let x = Tensor::from_vec(Vec::<f64>::new(), &[0, 3]).unwrap();
    let (rm, rv) = (det(&[3], 1), det(&[3], 2));
    let (m0, v0) = (rm.to_vec::<f64>(), rv.to_vec::<f64>());
    let y = ops::batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5).unwrap();
    assert_eq!(y.shape(), &[0, 3]);
    assert_eq!((rm.to_vec::<f64>(), rv.to_vec::<f64>()), (m0, v0));
    // Zero gradients for weight and bias (no NaN from statistics over nothing).
    let (w, b) = (leaf(&det(&[3], 3)), leaf(&det(&[3], 4)));
    let y = ops::batch_norm(&x, None, None, Some(&w), Some(&b), true, 0.1, 1e-5).unwrap();
    autograd::backward(&[(ops::sum(&y, None, false).unwrap(), None)], false).unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f64>(), vec![0.0; 3]);
    assert_eq!(b.grad().unwrap().to_vec::<f64>(), vec![0.0; 3]);
}

#[test]
fn gradients_match_finite_differences() {
    // Training: through the batch statistics, to x, weight and bias.
    for shape in [vec![4, 3], vec![3, 2, 4], vec![2, 2, 2, 3]] {
        let c = shape[1];
        check_grad(
            &[det(&shape, 20), det(&[c], 21), det(&[c], 22)],
            |t| {
                ops::batch_norm(&t[0], None, None, Some(&t[1]), Some(&t[2]), true, 0.1, 1e-3)
                    .unwrap()
            },
            1e-6,
        );
    }
    // Training with running statistics (updated in every call; the output does not read them).
    let (rm, rv) = (det(&[3], 23), ops::add_scalar(&det(&[3], 24), 2.0).unwrap());
    check_grad(
        &[det(&[3, 3, 2], 25), det(&[3], 26)],
        |t| {
            ops::batch_norm(
                &t[0],
                Some(&rm),
                Some(&rv),
                Some(&t[1]),
                None,
                true,
                0.1,
                1e-3,
            )
            .unwrap()
        },
        1e-6,
    );
    // Evaluation: an affine map of x, weight and bias.
    check_grad(
        &[det(&[2, 3, 4], 27), det(&[3], 28), det(&[3], 29)],
        |t| {
            ops::batch_norm(
                &t[0],
                Some(&rm),
                Some(&rv),
                Some(&t[1]),
                Some(&t[2]),
                false,
                0.1,
                1e-5,
            )
            .unwrap()
        },
        1e-6,
    );
}

#[test]
fn second_order_gradients_match_finite_differences_of_the_gradient() {
    // d/dx of <grad_x(sum(w_out * y)), v>, checked against central differences of grad_x.
    let shape = [3, 2, 2];
    let x0 = det(&shape, 30);
    let wout = det(&shape, 31);
    let v = det(&shape, 32);
    let grad_x = |x: &Tensor, create: bool| -> (Tensor, Tensor) {
        let x = leaf(x);
        let y = ops::batch_norm(&x, None, None, None, None, true, 0.1, 1e-3).unwrap();
        let loss = ops::sum(&ops::mul(&y, &wout).unwrap(), None, false).unwrap();
        let opts = remat_core::autograd::GradOptions {
            create_graph: create,
            ..Default::default()
        };
        let g =
            remat_core::autograd::grad_with(&[loss], std::slice::from_ref(&x), None, opts).unwrap();
        (x, g[0].clone().unwrap())
    };
    let (x, g) = grad_x(&x0, true);
    let gv = ops::sum(&ops::mul(&g, &v).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(gv, None)], false).unwrap();
    let hv = x.grad().unwrap().to_vec::<f64>();
    let base = x0.to_vec::<f64>();
    let eps = 1e-6;
    for i in 0..base.len() {
        let at = |d: f64| {
            let mut p = base.clone();
            p[i] += d;
            let g = grad_x(&Tensor::from_vec(p, &shape).unwrap(), false)
                .1
                .to_vec::<f64>();
            g.iter()
                .zip(v.to_vec::<f64>())
                .map(|(a, b)| a * b)
                .sum::<f64>()
        };
        let fd = (at(eps) - at(-eps)) / (2.0 * eps);
        assert!(
            (fd - hv[i]).abs() <= 1e-5 * (1.0 + fd.abs()),
            "element {i}: {} vs {fd}",
            hv[i]
        );
    }
}

fn message(e: Error) -> String {
    e.to_string()
}

#[test]
fn bad_calls_are_errors_naming_the_op_and_the_shapes() {
    let x = det(&[4, 3, 2], 1);
    let c3 = || det(&[3], 2);
    let bn = |x: &Tensor,
              rm: Option<&Tensor>,
              rv: Option<&Tensor>,
              w: Option<&Tensor>,
              training: bool,
              eps: f64| ops::batch_norm(x, rm, rv, w, None, training, 0.1, eps);

    // One value per channel when training: PyTorch's message, with the shape.
    let one = det(&[1, 3], 3);
    let e = bn(&one, None, None, None, true, 1e-5).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    let m = message(e);
    assert!(
        m.contains("batch_norm")
            && m.contains("Expected more than 1 value per channel when training")
            && m.contains("(1, 3)"),
        "{m}"
    );
    let e = bn(&det(&[1, 3, 1, 1], 3), None, None, None, true, 1e-5).unwrap_err();
    assert!(message(e).contains("(1, 3, 1, 1)"));

    // Shapes of the per-channel arguments.
    let e = bn(&x, Some(&det(&[4], 4)), Some(&c3()), None, true, 1e-5).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let m = message(e);
    assert!(
        m.contains("running_mean") && m.contains("(4,)") && m.contains("(4, 3, 2)"),
        "{m}"
    );
    let e = bn(
        &x,
        Some(&c3()),
        Some(&c3()),
        Some(&det(&[4], 5)),
        true,
        1e-5,
    )
    .unwrap_err();
    assert!(message(e).contains("weight"));
    let e =
        ops::batch_norm(&x, None, None, None, Some(&det(&[2], 5)), true, 0.1, 1e-5).unwrap_err();
    assert!(message(e).contains("bias"));
    let e = bn(&det(&[4], 6), None, None, None, true, 1e-5).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }) && message(e).contains("(4,)"));

    // Both running statistics or neither; evaluation needs them.
    let e = bn(&x, Some(&c3()), None, None, true, 1e-5).unwrap_err();
    assert!(message(e).contains("both be None or neither"));
    let e = bn(&x, None, None, None, false, 1e-5).unwrap_err();
    assert!(message(e).contains("running_mean must be defined in evaluation mode"));

    // eps: positive when training, non-negative otherwise (PyTorch's checks).
    let e = bn(&x, None, None, None, true, 0.0).unwrap_err();
    assert!(matches!(e, Error::Value { .. }) && message(e).contains("positive during training"));
    let e = bn(&x, Some(&c3()), Some(&c3()), None, false, -1.0).unwrap_err();
    assert!(message(e).contains("non-negative"));
    assert!(bn(&x, Some(&c3()), Some(&c3()), None, false, 0.0).is_ok());

    // One dtype for everything; a float input.
    let f32s = c3().to_dtype(DType::F32).unwrap();
    let e = bn(&x, Some(&f32s), Some(&c3()), None, true, 1e-5).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    assert!(message(e).contains("float32"));
    let ints = Tensor::from_vec(vec![1i64; 8], &[4, 2]).unwrap();
    let e = bn(&ints, None, None, None, true, 1e-5).unwrap_err();
    assert!(matches!(e, Error::DType { .. }) && message(e).contains("int64"));

    // Running statistics that require grad, with grad mode on (PyTorch refuses them too).
    let rm = leaf(&c3());
    let e = bn(&x, Some(&rm), Some(&c3()), None, false, 1e-5).unwrap_err();
    assert!(matches!(e, Error::Graph { .. }) && message(e).contains("running_mean"));
    let _g = grad_mode::no_grad();
    assert!(bn(&x, Some(&rm), Some(&c3()), None, false, 1e-5).is_ok());
}

#[test]
fn is_recomputing_is_true_only_in_a_recompute() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let x = leaf(&det(&[3], 1));
    assert!(!is_recomputing());
    let y = checkpoint_segment(std::slice::from_ref(&x), move |t| {
        s.lock().unwrap().push(is_recomputing());
        let inner_seen = s.clone();
        let h = checkpoint_segment(&[ops::tanh(&t[0])?], move |u| {
            inner_seen.lock().unwrap().push(is_recomputing());
            Ok(vec![ops::tanh(&u[0])?])
        })?;
        Ok(vec![ops::tanh(&h[0])?])
    })
    .unwrap()
    .remove(0);
    let loss = ops::sum(&y, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    let seen = seen.lock().unwrap().clone();
    // The forward (outer, inner), then the outer recompute (whose nested segment runs as its
    // own segment inside the replay), then the inner recompute.
    assert_eq!(&seen[..2], &[false, false], "{seen:?}");
    assert!(seen.len() > 2 && seen[2..].iter().all(|&r| r), "{seen:?}");
    assert!(!is_recomputing());
}
