//! Network ops (softmax, log_softmax, layer_norm, dropout, mse_loss, cross_entropy): forwards
//! against scalar references in float32 and float64, gradients against finite differences,
//! the parallel paths on large inputs, dropout's replayable mask, and typed errors.
// Tests panic on failure by design; unwrap is the clearest way to say "this must succeed".
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::tensor::TensorData;
use remat_core::{autograd, ops, rng, DType, Error, Tensor};

fn f32_of(t: &Tensor) -> Tensor {
    ops::cast(t, DType::F32).unwrap()
}

fn assert_close(got: &Tensor, expect: &[f64], tol: f64) {
    let g = got.to_vec::<f64>();
    assert_eq!(g.len(), expect.len(), "length");
    for (i, (a, b)) in g.iter().zip(expect).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "element {i}: got {a}, expected {b}"
        );
    }
}

/// Softmax (or log-softmax) of a C-order buffer of `shape` along `axis`, by definition.
fn softmax_ref(v: &[f64], shape: &[usize], axis: usize, log: bool) -> Vec<f64> {
    let outer: usize = shape[..axis].iter().product();
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut out = vec![0.0; v.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * n * inner + k * inner + i;
            let z: f64 = (0..n).map(|k| v[at(k)].exp()).sum();
            for k in 0..n {
                out[at(k)] = if log {
                    v[at(k)] - z.ln()
                } else {
                    v[at(k)].exp() / z
                };
            }
        }
    }
    out
}

fn grad_of(x: &Tensor, loss: Tensor) -> Vec<f64> {
    autograd::backward(&[(loss, None)], false).unwrap();
    x.grad().unwrap().to_vec::<f64>()
}

#[test]
fn softmax_matches_reference_on_every_axis() {
    let x = det(&[2, 3, 4], 1);
    let v = x.to_vec::<f64>();
    for axis in [0isize, 1, 2, -1] {
        let a = axis.rem_euclid(3) as usize;
        for log in [false, true] {
            let expect = softmax_ref(&v, &[2, 3, 4], a, log);
            let f = if log { ops::log_softmax } else { ops::softmax };
            assert_close(&f(&x, axis).unwrap(), &expect, 1e-14);
            let y32 = f(&f32_of(&x), axis).unwrap();
            assert_eq!(y32.dtype(), DType::F32);
            assert_close(&y32, &expect, 1e-6);
        }
    }
    // Rows sum to one.
    let s = ops::sum(&ops::softmax(&x, 1).unwrap(), Some(&[1]), false).unwrap();
    assert_close(&s, &[1.0; 8], 1e-15);
    assert_eq!(
        x.softmax(-1).unwrap().to_vec::<f64>(),
        ops::softmax(&x, -1).unwrap().to_vec::<f64>()
    );
    assert_eq!(
        x.log_softmax(0).unwrap().to_vec::<f64>(),
        ops::log_softmax(&x, 0).unwrap().to_vec::<f64>()
    );
}

#[test]
fn softmax_is_stable_for_large_logits() {
    let x = Tensor::from_vec(vec![1000.0f32, 1001.0, 999.0, -1000.0], &[4]).unwrap();
    let y = ops::softmax(&x, 0).unwrap().to_vec::<f64>();
    let l = ops::log_softmax(&x, 0).unwrap().to_vec::<f64>();
    assert!(y.iter().chain(&l).all(|v| v.is_finite()), "{y:?} {l:?}");
    let z = 1.0 + (-1.0f64).exp() + (-2.0f64).exp();
    assert!((y[1] - 1.0 / z).abs() < 1e-6);
    assert!((l[1] + z.ln()).abs() < 1e-5);
    assert_eq!(y[3], 0.0);
}

#[test]
fn softmax_gradients_match_finite_differences() {
    let x = det(&[2, 3, 4], 2);
    for axis in [0isize, 1, -1] {
        check_grad(
            std::slice::from_ref(&x),
            |t| ops::softmax(&t[0], axis).unwrap(),
            1e-6,
        );
        check_grad(
            std::slice::from_ref(&x),
            |t| ops::log_softmax(&t[0], axis).unwrap(),
            1e-6,
        );
    }
    // A strided input.
    check_grad(
        &[det(&[4, 3], 3)],
        |t| ops::softmax(&ops::transpose(&t[0], 0, 1).unwrap(), -1).unwrap(),
        1e-6,
    );
    // A 0-d input has one implicit axis.
    let s = Tensor::scalar(0.3, DType::F64);
    assert_eq!(ops::softmax(&s, -1).unwrap().item().unwrap(), 1.0);
    assert!(matches!(ops::softmax(&x, 3), Err(Error::Shape { .. })));
    assert!(matches!(ops::log_softmax(&x, -4), Err(Error::Shape { .. })));
}

#[test]
fn large_softmax_runs_in_parallel_and_matches_reference() {
    // Above cpu::PAR_MIN, for both the last axis (rows) and a middle axis (strided rows).
    let x = det(&[40, 30, 50], 4);
    let v = x.to_vec::<f64>();
    for axis in [2usize, 1] {
        let y = ops::log_softmax(&x, axis as isize).unwrap();
        assert_close(&y, &softmax_ref(&v, &[40, 30, 50], axis, true), 1e-12);
    }
    // Backward on the large path against the formula g - exp(y) sum(g).
    let xl = leaf(&x);
    let w = det(&[40, 30, 50], 5);
    let y = ops::log_softmax(&xl, -1).unwrap();
    let g = grad_of(
        &xl,
        ops::sum(&ops::mul(&y, &w).unwrap(), None, false).unwrap(),
    );
    let (yv, wv) = (y.to_vec::<f64>(), w.to_vec::<f64>());
    for r in (0..1200).step_by(97) {
        let sw: f64 = wv[r * 50..r * 50 + 50].iter().sum();
        for j in 0..50 {
            let e = wv[r * 50 + j] - yv[r * 50 + j].exp() * sw;
            assert!((g[r * 50 + j] - e).abs() < 1e-12);
        }
    }
}

/// Layer norm of a C-order buffer with rows of `n`, by definition.
fn layer_norm_ref(v: &[f64], n: usize, w: Option<&[f64]>, b: Option<&[f64]>, eps: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(v.len());
    for row in v.chunks(n) {
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        for (j, x) in row.iter().enumerate() {
            let y = (x - mean) / (var + eps).sqrt();
            out.push(y * w.map_or(1.0, |w| w[j]) + b.map_or(0.0, |b| b[j]));
        }
    }
    out
}

#[test]
fn layer_norm_matches_reference() {
    let x = det(&[2, 3, 5], 6);
    let w = det(&[5], 7);
    let b = det(&[5], 8);
    let (xv, wv, bv) = (x.to_vec::<f64>(), w.to_vec::<f64>(), b.to_vec::<f64>());
    let cases: [(Option<&Tensor>, Option<&Tensor>); 4] = [
        (Some(&w), Some(&b)),
        (Some(&w), None),
        (None, Some(&b)),
        (None, None),
    ];
    for (wt, bt) in cases {
        let expect = layer_norm_ref(
            &xv,
            5,
            wt.map(|_| wv.as_slice()),
            bt.map(|_| bv.as_slice()),
            1e-5,
        );
        let y = ops::layer_norm(&x, wt, bt, 1e-5).unwrap();
        assert_eq!(y.shape(), &[2, 3, 5]);
        assert_close(&y, &expect, 1e-13);
        let (w32, b32) = (wt.map(f32_of), bt.map(f32_of));
        let y32 = ops::layer_norm(&f32_of(&x), w32.as_ref(), b32.as_ref(), 1e-5).unwrap();
        assert_eq!(y32.dtype(), DType::F32);
        assert_close(&y32, &expect, 1e-5);
    }
    // A strided input normalises its logical rows.
    let xt = Tensor::from_data(TensorData {
        storage: x.storage().clone(),
        layout: x.layout().transpose(0, 1),
    });
    let xt_copy = Tensor::from_vec(xt.to_vec::<f64>(), xt.shape()).unwrap();
    assert_eq!(
        ops::layer_norm(&xt, Some(&w), Some(&b), 1e-5)
            .unwrap()
            .to_vec::<f64>(),
        ops::layer_norm(&xt_copy, Some(&w), Some(&b), 1e-5)
            .unwrap()
            .to_vec::<f64>()
    );
}

#[test]
fn layer_norm_gradients_match_finite_differences() {
    let x = det(&[3, 6], 9);
    let w = det(&[6], 10);
    let b = det(&[6], 11);
    check_grad(
        &[x.clone(), w.clone(), b.clone()],
        |t| ops::layer_norm(&t[0], Some(&t[1]), Some(&t[2]), 1e-5).unwrap(),
        1e-6,
    );
    check_grad(
        &[x.clone(), w.clone()],
        |t| ops::layer_norm(&t[0], Some(&t[1]), None, 1e-5).unwrap(),
        1e-6,
    );
    check_grad(
        &[x.clone(), b.clone()],
        |t| ops::layer_norm(&t[0], None, Some(&t[1]), 1e-5).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::layer_norm(&t[0], None, None, 1e-5).unwrap(),
        1e-6,
    );
    // Only the parameters need gradients.
    check_grad(
        &[w, b],
        |t| ops::layer_norm(&x, Some(&t[0]), Some(&t[1]), 1e-5).unwrap(),
        1e-6,
    );
    check_grad(
        &[det(&[4, 2, 3], 12)],
        |t| ops::layer_norm(&ops::transpose(&t[0], 0, 2).unwrap(), None, None, 1e-5).unwrap(),
        1e-6,
    );
}

#[test]
fn large_layer_norm_gradients_match_the_composite_formula() {
    // Above cpu::PAR_MIN with many row chunks: the parallel forward and the chunked weight and
    // bias sums must agree with the same math built from elementary ops.
    let (rows, n) = (600, 96);
    let x = leaf(&det(&[rows, n], 13));
    let w = leaf(&det(&[n], 14));
    let b = leaf(&det(&[n], 15));
    let gw = det(&[rows, n], 16);
    let eps = 1e-5;
    let fused = ops::layer_norm(&x, Some(&w), Some(&b), eps).unwrap();
    let loss = ops::sum(&ops::mul(&fused, &gw).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    let (fx, fw, fb) = (x.grad().unwrap(), w.grad().unwrap(), b.grad().unwrap());
    let (x2, w2, b2) = (leaf(&x), leaf(&w), leaf(&b));
    let mean = ops::mean(&x2, Some(&[-1]), true).unwrap();
    let d = ops::sub(&x2, &mean).unwrap();
    let var = ops::mean(&ops::pow_scalar(&d, 2.0).unwrap(), Some(&[-1]), true).unwrap();
    let eps_t = Tensor::scalar(eps, DType::F64);
    let rstd = ops::pow_scalar(&ops::add(&var, &eps_t).unwrap(), -0.5).unwrap();
    let y = ops::add(&ops::mul(&ops::mul(&d, &rstd).unwrap(), &w2).unwrap(), &b2).unwrap();
    assert_close(&fused, &y.to_vec::<f64>(), 1e-12);
    let loss = ops::sum(&ops::mul(&y, &gw).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    assert_close(&fx, &x2.grad().unwrap().to_vec::<f64>(), 1e-10);
    assert_close(&fw, &w2.grad().unwrap().to_vec::<f64>(), 1e-10);
    assert_close(&fb, &b2.grad().unwrap().to_vec::<f64>(), 1e-10);
}

#[test]
fn layer_norm_rejects_bad_shapes() {
    let x = det(&[2, 5], 17);
    let err = ops::layer_norm(&x, Some(&det(&[4], 1)), None, 1e-5).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("layer_norm") && msg.contains("(4,)") && msg.contains("(2, 5)"),
        "{msg}"
    );
    assert!(matches!(
        ops::layer_norm(&x, None, Some(&det(&[1, 5], 1)), 1e-5),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::layer_norm(&Tensor::scalar(1.0, DType::F64), None, None, 1e-5),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::layer_norm(&x, None, None, -1.0),
        Err(Error::Value { .. })
    ));
}

/// Serialises the tests that draw from (or rewind) the global RNG: tests run on parallel
/// threads, and a draw from another test between saving and restoring the state would shift
/// the replayed key.
static RNG_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    RNG_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A float64 tensor of `n` ones-plus-index values (never zero, so dropped elements show).
fn nonzero(n: usize) -> Tensor {
    Tensor::from_vec((0..n).map(|i| 1.0 + i as f64).collect(), &[n]).unwrap()
}

#[test]
fn dropout_keeps_about_one_minus_p_and_scales() {
    let _rng = rng_lock();
    let n = 200_000;
    let x = nonzero(n);
    for p in [0.1, 0.5, 0.8] {
        let y = ops::dropout(&x, p, true).unwrap().to_vec::<f64>();
        let xv = x.to_vec::<f64>();
        let mut kept = 0usize;
        for (a, b) in y.iter().zip(&xv) {
            if *a != 0.0 {
                kept += 1;
                assert!((a - b / (1.0 - p)).abs() <= 1e-12 * a.abs());
            }
        }
        let frac = kept as f64 / n as f64;
        assert!((frac - (1.0 - p)).abs() < 0.01, "p = {p}: kept {frac}");
    }
    // float32 works too.
    let y32 = ops::dropout(&f32_of(&x), 0.5, true).unwrap();
    assert_eq!(y32.dtype(), DType::F32);
}

#[test]
fn dropout_replays_the_same_mask_from_the_same_key() {
    let _rng = rng_lock();
    let x = nonzero(50_000);
    let state = rng::get_state();
    let a = ops::dropout(&x, 0.3, true).unwrap().to_vec::<f64>();
    let b = ops::dropout(&x, 0.3, true).unwrap().to_vec::<f64>();
    assert_ne!(a, b, "consecutive calls draw fresh masks");
    rng::set_state(state);
    let c = ops::dropout(&x, 0.3, true).unwrap().to_vec::<f64>();
    assert_eq!(a, c, "restoring the RNG state replays the mask");
}

#[test]
fn dropout_backward_uses_the_forward_mask() {
    let _rng = rng_lock();
    let n = 40_000;
    let x = leaf(&nonzero(n));
    let y = ops::dropout(&x, 0.25, true).unwrap();
    let yv = y.to_vec::<f64>();
    let g = grad_of(&x, ops::sum(&y, None, false).unwrap());
    for (gi, yi) in g.iter().zip(&yv) {
        let expect = if *yi != 0.0 { 1.0 / 0.75 } else { 0.0 };
        assert_eq!(*gi, expect);
    }
}

#[test]
fn dropout_recompute_replays_the_mask_bit_identically() {
    let _rng = rng_lock();
    // Checkpoint the dropout output and drop it, so backward must replay the op's forward from
    // its stored key: gradients must equal those of the plain run.
    let x = leaf(&det(&[64, 64], 18));
    let state = rng::get_state();
    let y = ops::dropout(&x, 0.4, true).unwrap();
    let plain = grad_of(
        &x,
        ops::sum(&ops::mul(&y, &y).unwrap(), None, false).unwrap(),
    );
    drop(y);
    x.set_grad(None).unwrap();
    rng::set_state(state);
    let y = remat_core::checkpoint::checkpoint(&ops::dropout(&x, 0.4, true).unwrap()).unwrap();
    let sq = ops::mul(&y, &y).unwrap();
    drop(y);
    // Draw something else in between: the replay must not depend on the global state.
    ops::rand(&[10], DType::F64, remat_core::Device::Cpu).unwrap();
    let recomputed = grad_of(&x, ops::sum(&sq, None, false).unwrap());
    assert_eq!(plain, recomputed);
}

#[test]
fn dropout_edge_cases_and_errors() {
    let x = leaf(&det(&[3, 4], 19));
    assert!(ops::dropout(&x, 0.5, false).unwrap().same(&x));
    assert!(ops::dropout(&x, 0.0, true).unwrap().same(&x));
    let z = ops::dropout(&x, 1.0, true).unwrap();
    assert_eq!(z.to_vec::<f64>(), vec![0.0; 12]);
    let g = grad_of(&x, ops::sum(&z, None, false).unwrap());
    assert_eq!(g, vec![0.0; 12]);
    for p in [-0.1, 1.5, f64::NAN] {
        let err = ops::dropout(&x, p, true).unwrap_err();
        assert!(matches!(err, Error::Value { .. }), "{err}");
        assert!(err.to_string().contains("dropout"));
    }
    assert_eq!(
        x.dropout(0.5, false).unwrap().to_vec::<f64>(),
        x.to_vec::<f64>()
    );
}

#[test]
fn mse_loss_matches_reference_and_differentiates() {
    let p = det(&[3, 4], 20);
    let t = det(&[3, 4], 21);
    let expect: f64 = p
        .to_vec::<f64>()
        .iter()
        .zip(t.to_vec::<f64>())
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        / 12.0;
    let l = ops::mse_loss(&p, &t).unwrap();
    assert_eq!(l.shape(), &[] as &[usize]);
    assert!((l.item().unwrap() - expect).abs() < 1e-15);
    let l32 = ops::mse_loss(&f32_of(&p), &f32_of(&t)).unwrap();
    assert_eq!(l32.dtype(), DType::F32);
    assert!((l32.item().unwrap() - expect).abs() < 1e-6);
    check_grad(
        &[p.clone(), t.clone()],
        |x| ops::mse_loss(&x[0], &x[1]).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&p),
        |x| ops::mse_loss(&x[0], &t).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&t),
        |x| ops::mse_loss(&p, &x[0]).unwrap(),
        1e-6,
    );
    // Large (parallel, chunked) sum.
    let a = det(&[300, 300], 22);
    let b = det(&[300, 300], 23);
    let e: f64 = a
        .to_vec::<f64>()
        .iter()
        .zip(b.to_vec::<f64>())
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        / 90_000.0;
    assert!((ops::mse_loss(&a, &b).unwrap().item().unwrap() - e).abs() < 1e-12);
    let err = ops::mse_loss(&p, &det(&[4, 3], 1)).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    assert!(err.to_string().contains("(3, 4)") && err.to_string().contains("(4, 3)"));
    // No broadcasting either.
    assert!(matches!(
        ops::mse_loss(&p, &det(&[4], 1)),
        Err(Error::Shape { .. })
    ));
}

fn cross_entropy_ref(v: &[f64], c: usize, target: &[i64]) -> f64 {
    let n = target.len();
    (0..n)
        .map(|r| {
            let row = &v[r * c..(r + 1) * c];
            let lse = row.iter().map(|x| x.exp()).sum::<f64>().ln();
            lse - row[target[r] as usize]
        })
        .sum::<f64>()
        / n as f64
}

#[test]
fn cross_entropy_matches_reference_and_differentiates() {
    let x = det(&[4, 5], 24);
    let target = [1i64, 0, 4, 2];
    let expect = cross_entropy_ref(&x.to_vec::<f64>(), 5, &target);
    let l = ops::cross_entropy(&x, &target).unwrap();
    assert_eq!(l.shape(), &[] as &[usize]);
    assert!((l.item().unwrap() - expect).abs() < 1e-14);
    let l32 = ops::cross_entropy(&f32_of(&x), &target).unwrap();
    assert_eq!(l32.dtype(), DType::F32);
    assert!((l32.item().unwrap() - expect).abs() < 1e-6);
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::cross_entropy(&t[0], &target).unwrap(),
        1e-6,
    );
    // One sample as a (C,) vector.
    let v = det(&[5], 25);
    let e1 = cross_entropy_ref(&v.to_vec::<f64>(), 5, &[3]);
    assert!((ops::cross_entropy(&v, &[3]).unwrap().item().unwrap() - e1).abs() < 1e-14);
    check_grad(&[v], |t| ops::cross_entropy(&t[0], &[3]).unwrap(), 1e-6);
    // A strided input.
    check_grad(
        &[det(&[5, 4], 26)],
        |t| ops::cross_entropy(&ops::transpose(&t[0], 0, 1).unwrap(), &target).unwrap(),
        1e-6,
    );
    // Large logits stay finite.
    let big = Tensor::from_vec(vec![1000.0f32, -1000.0, 0.0], &[1, 3]).unwrap();
    assert!(
        ops::cross_entropy(&big, &[0])
            .unwrap()
            .item()
            .unwrap()
            .abs()
            < 1e-6
    );
}

#[test]
fn large_cross_entropy_matches_reference() {
    let (n, c) = (500, 100);
    let x = leaf(&det(&[n, c], 27));
    let target: Vec<i64> = (0..n as i64).map(|i| (i * 7) % c as i64).collect();
    let l = ops::cross_entropy(&x, &target).unwrap();
    let expect = cross_entropy_ref(&x.to_vec::<f64>(), c, &target);
    assert!((l.item().unwrap() - expect).abs() < 1e-12);
    // Gradient rows are (softmax - onehot) / N: each sums to zero.
    let g = grad_of(&x, l);
    for r in 0..n {
        let s: f64 = g[r * c..(r + 1) * c].iter().sum();
        assert!(s.abs() < 1e-15, "row {r}: {s}");
        assert!(g[r * c + target[r] as usize] < 0.0);
    }
}

#[test]
fn cross_entropy_rejects_bad_targets_and_shapes() {
    let x = det(&[3, 4], 28);
    let err = ops::cross_entropy(&x, &[0, 1]).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    assert!(err.to_string().contains("cross_entropy") && err.to_string().contains("(3, 4)"));
    let err = ops::cross_entropy(&x, &[0, 4, 1]).unwrap_err();
    assert!(matches!(err, Error::Value { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("cross_entropy") && msg.contains("target[1] = 4") && msg.contains("(3, 4)"),
        "{msg}"
    );
    assert!(matches!(
        ops::cross_entropy(&x, &[0, -1, 1]),
        Err(Error::Value { .. })
    ));
    assert!(matches!(
        ops::cross_entropy(&det(&[2, 3, 4], 1), &[0, 1]),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::cross_entropy(&Tensor::scalar(1.0, DType::F64), &[0]),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::cross_entropy(&det(&[4], 1), &[0, 1]),
        Err(Error::Shape { .. })
    ));
}

/// Causal attention with an explicit bool mask (`tril(ones(L, S))`): the three-op path the
/// fused causal weights must agree with.
fn sdpa_with_tril_mask(q: &Tensor, k: &Tensor, v: &Tensor, scale: f64) -> Tensor {
    let (l, s) = (q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
    let ones = ops::ones(&[l, s], DType::F64, remat_core::Device::Cpu).unwrap();
    let mask = ops::ne(
        &ops::tril(&ones, 0).unwrap(),
        &ops::zeros(&[], DType::F64, remat_core::Device::Cpu).unwrap(),
    )
    .unwrap();
    ops::scaled_dot_product_attention(q, k, v, Some(&mask), 0.0, false, Some(scale)).unwrap()
}

#[test]
fn fused_causal_weights_span_row_blocks_and_read_strided_operands() {
    // 150 queries: three blocks of rows, each multiplied only by the keys it sees; q and k
    // are column slices of one (B, T, 3E) tensor seen as heads (strided, as after a fused
    // qkv projection). Values against the explicit-mask formula; gradients through the fused
    // op (4 matrices: at least one per thread) against finite differences on a small case.
    for (l, s) in [(150, 150), (70, 140), (150, 40)] {
        let t = l.max(s);
        let qkv = det(&[2, t, 3 * 8], 7);
        let heads = |i: usize, n: usize| {
            let part = ops::narrow(&qkv, 2, (i * 8) as isize, 8).unwrap();
            let part = ops::narrow(&part, 1, 0, n as isize).unwrap();
            let part = ops::reshape(&part, &[2, n, 2, 4]).unwrap();
            ops::transpose(&part, 1, 2).unwrap()
        };
        let (q, k, v) = (heads(0, l), heads(1, s), heads(2, s));
        assert!(!q.is_contiguous());
        let got = ops::scaled_dot_product_attention(&q, &k, &v, None, 0.0, true, None).unwrap();
        let want = sdpa_with_tril_mask(&q, &k, &v, 0.5).to_vec::<f64>();
        assert_close(&got, &want, 1e-12);
    }
    check_grad(
        &[det(&[4, 5, 3], 4), det(&[4, 6, 3], 5), det(&[4, 6, 2], 6)],
        |ts| {
            ops::scaled_dot_product_attention(&ts[0], &ts[1], &ts[2], None, 0.0, true, None)
                .unwrap()
        },
        1e-6,
    );
}

#[test]
fn causal_attention_matches_the_explicit_mask_and_finite_differences() {
    // L < S, L = S and L > S (rows past the last key see every key), several batch axes.
    for (l, s) in [(3, 5), (4, 4), (6, 2)] {
        let (q, k, v) = (
            det(&[2, 3, l, 4], 1),
            det(&[2, 3, s, 4], 2),
            det(&[2, 3, s, 3], 3),
        );
        let fused =
            ops::scaled_dot_product_attention(&q, &k, &v, None, 0.0, true, Some(0.7)).unwrap();
        assert_close(
            &fused,
            &sdpa_with_tril_mask(&q, &k, &v, 0.7).to_vec::<f64>(),
            1e-13,
        );
        let f32_fused = ops::scaled_dot_product_attention(
            &f32_of(&q),
            &f32_of(&k),
            &f32_of(&v),
            None,
            0.0,
            true,
            None,
        )
        .unwrap();
        let want = sdpa_with_tril_mask(&q, &k, &v, 0.5).to_vec::<f64>();
        assert_close(&f32_fused, &want, 1e-5);
        check_grad(
            &[det(&[1, l, 3], 4), det(&[1, s, 3], 5), det(&[1, s, 2], 6)],
            |ts| {
                ops::scaled_dot_product_attention(&ts[0], &ts[1], &ts[2], None, 0.0, true, None)
                    .unwrap()
            },
            1e-6,
        );
    }
}
