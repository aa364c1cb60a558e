//! Network ops at their degenerate inputs, where PyTorch gives finite numbers: attention rows
//! whose keys are all masked out (zero output, zero gradient), losses whose positions are all
//! ignored (NaN mean, zero gradient), and losses of a float32 and a float64 tensor (each
//! gets its gradient, in its own dtype).
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::ops::{self, Reduction};
use remat_core::{autograd, DType, Device, Tensor};

fn backward_sum(y: &Tensor) {
    let w = det(y.shape(), 17);
    let loss = ops::sum(&ops::mul(y, &w).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
}

fn grad_vec(t: &Tensor) -> Vec<f64> {
    t.grad().unwrap().to_vec::<f64>()
}

/// A bool `(3, 5)` mask, all true but row 1 (all false).
fn mask_row_1_dead() -> Tensor {
    let v: Vec<u8> = (0..15).map(|i| u8::from(!(5..10).contains(&i))).collect();
    Tensor::from_vec(v, &[3, 5]).unwrap()
}

fn sdpa(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Tensor {
    ops::scaled_dot_product_attention(q, k, v, Some(mask), 0.0, false, None).unwrap()
}

#[test]
fn attention_row_with_every_key_masked_gives_zeros_and_no_gradient() {
    let (q, k, v) = (det(&[2, 3, 4], 1), det(&[2, 5, 4], 2), det(&[2, 5, 3], 3));
    let mask = mask_row_1_dead();
    let out = sdpa(&q, &k, &v, &mask).to_vec::<f64>();
    // Row 1 of each batch is exactly zero; the other rows are attention over all keys.
    let full = ops::scaled_dot_product_attention(&q, &k, &v, None, 0.0, false, None).unwrap();
    let full = full.to_vec::<f64>();
    for (i, (&o, &f)) in out.iter().zip(&full).enumerate() {
        let row = (i / 3) % 3;
        let want = if row == 1 { 0.0 } else { f };
        assert!((o - want).abs() < 1e-14, "element {i}: {o} vs {want}");
    }
    // Gradients are finite and agree with finite differences (the dead row is constant).
    check_grad(&[q, k, v], |t| sdpa(&t[0], &t[1], &t[2], &mask), 1e-6);
}

#[test]
fn attention_with_every_key_of_every_row_masked_is_zero_everywhere() {
    let (q, k, v) = (
        leaf(&det(&[3, 4], 1)),
        leaf(&det(&[5, 4], 2)),
        leaf(&det(&[5, 2], 3)),
    );
    let mask = Tensor::from_vec(vec![0u8; 15], &[3, 5]).unwrap();
    let out = sdpa(&q, &k, &v, &mask);
    assert_eq!(out.to_vec::<f64>(), vec![0.0; 6]);
    backward_sum(&out);
    for t in [&q, &k, &v] {
        assert!(grad_vec(t).iter().all(|&g| g == 0.0));
    }
}

#[test]
fn attention_float_mask_of_minus_infinity_rows_is_safe_too() {
    // Row 1 all -inf (dead), row 2 half -inf (a normal, partly masked row); the mask itself
    // is differentiated too: 0 wherever it is -inf.
    let mut m = vec![0.0f64; 15];
    m[5..10].fill(f64::NEG_INFINITY);
    m[10..12].fill(f64::NEG_INFINITY);
    let mask = Tensor::from_vec(m, &[3, 5]).unwrap();
    let (q, k, v) = (det(&[2, 3, 4], 4), det(&[2, 5, 4], 5), det(&[2, 5, 3], 6));
    let out = sdpa(&q, &k, &v, &mask).to_vec::<f64>();
    assert!(out.iter().all(|o| o.is_finite()));
    check_grad(
        &[q, k, v, mask.clone()],
        |t| sdpa(&t[0], &t[1], &t[2], &t[3]),
        1e-6,
    );
    let ml = leaf(&mask);
    let (q, k, v) = (det(&[2, 3, 4], 4), det(&[2, 5, 4], 5), det(&[2, 5, 3], 6));
    backward_sum(&sdpa(&q, &k, &v, &ml));
    let g = grad_vec(&ml);
    assert!(g[5..12].iter().all(|&x| x == 0.0), "{g:?}");
}

#[test]
fn attention_dead_rows_in_float32_and_broadcast_masks() {
    let f32_of = |t: Tensor| leaf(&ops::cast(&t, DType::F32).unwrap());
    let (q, k, v) = (
        f32_of(det(&[2, 2, 3, 4], 7)),
        f32_of(det(&[2, 2, 5, 4], 8)),
        f32_of(det(&[2, 2, 5, 3], 9)),
    );
    // A (1, 1, 3, 5) mask broadcast over batch and heads.
    let mask = ops::reshape(&mask_row_1_dead(), &[1, 1, 3, 5]).unwrap();
    let out = sdpa(&q, &k, &v, &mask);
    backward_sum(&out);
    let o = out.to_vec::<f64>();
    assert!(o.chunks(9).all(|m| m[3..6] == [0.0; 3]));
    for t in [&q, &k, &v] {
        assert!(grad_vec(t).iter().all(|g| g.is_finite()));
    }
    // The dead query rows get exactly zero gradient.
    assert!(grad_vec(&q).chunks(12).all(|m| m[4..8] == [0.0; 4]));
}

fn ignored(shape: &[usize]) -> Tensor {
    Tensor::from_vec(vec![-100i64; shape.iter().product()], shape).unwrap()
}

#[test]
fn nll_loss_with_every_position_ignored_has_zero_gradient() {
    let x = leaf(&det(&[3, 4], 1));
    let w = Tensor::from_vec(vec![0.5f64, 1.0, 2.0, 1.5], &[4]).unwrap();
    for weight in [None, Some(&w)] {
        for r in [Reduction::Mean, Reduction::Sum, Reduction::None] {
            x.set_grad(None).unwrap();
            let loss = ops::nll_loss(&x, &ignored(&[3]), weight, -100, r).unwrap();
            let v = loss.to_vec::<f64>();
            match r {
                Reduction::Mean => assert!(v[0].is_nan(), "0 / 0 is NaN, as PyTorch"),
                _ => assert!(v.iter().all(|&l| l == 0.0)),
            }
            backward_sum(&loss);
            assert_eq!(grad_vec(&x), vec![0.0; 12], "{r:?}");
        }
    }
}

#[test]
fn cross_entropy_with_every_position_ignored_has_zero_gradient() {
    // (N, C), (N, C, d) and (C,) logits; plain and label-smoothed; mean, sum and none.
    for (shape, tshape) in [
        (&[3usize, 4][..], &[3usize][..]),
        (&[2, 4, 3], &[2, 3]),
        (&[4], &[]),
    ] {
        let x = leaf(&det(shape, 2));
        for smoothing in [0.0, 0.2] {
            for r in [Reduction::Mean, Reduction::Sum, Reduction::None] {
                x.set_grad(None).unwrap();
                let t = ignored(tshape);
                let loss = ops::cross_entropy_with(&x, &t, None, -100, r, smoothing).unwrap();
                backward_sum(&loss);
                let n = x.numel();
                assert_eq!(grad_vec(&x), vec![0.0; n], "{shape:?} {smoothing} {r:?}");
            }
        }
    }
}

#[test]
fn ignored_rows_get_zero_and_the_rest_match_finite_differences() {
    let t = Tensor::from_vec(vec![1i64, -100, 2, 0], &[4]).unwrap();
    let w = Tensor::from_vec(vec![0.5f64, 1.0, 2.0], &[3]).unwrap();
    for smoothing in [0.0, 0.3] {
        check_grad(
            &[det(&[4, 3], 3)],
            |x| {
                ops::cross_entropy_with(&x[0], &t, Some(&w), -100, Reduction::Mean, smoothing)
                    .unwrap()
            },
            1e-6,
        );
    }
    let x = leaf(&det(&[4, 3], 3));
    let loss = ops::cross_entropy_with(&x, &t, Some(&w), -100, Reduction::Mean, 0.3).unwrap();
    backward_sum(&loss);
    assert_eq!(grad_vec(&x)[3..6], [0.0; 3]);
}

#[test]
fn a_zero_class_weight_that_is_not_ignored_still_gives_nan_as_pytorch() {
    // Total weight 0 without ignoring: 0 · (g / 0) = NaN on that position, as PyTorch.
    let x = leaf(&det(&[2, 3], 4));
    let w = Tensor::from_vec(vec![0.0f64, 1.0, 1.0], &[3]).unwrap();
    let t = Tensor::from_vec(vec![0i64, -100], &[2]).unwrap();
    let loss = ops::nll_loss(&x, &t, Some(&w), -100, Reduction::Mean).unwrap();
    backward_sum(&loss);
    let g = grad_vec(&x);
    assert!(g[0].is_nan());
    assert_eq!(g[1..], [0.0; 5]);
}

/// Leaves `(x float64, y float32)` of shape `(3, 4)`.
fn mixed_pair() -> (Tensor, Tensor) {
    let x = leaf(&det(&[3, 4], 5));
    let y = leaf(&ops::cast(&det(&[3, 4], 6), DType::F32).unwrap());
    (x, y)
}

#[test]
fn mse_loss_of_float32_and_float64_differentiates_both() {
    for swap in [false, true] {
        for r in [Reduction::Mean, Reduction::Sum, Reduction::None] {
            let (x, y) = mixed_pair();
            let (a, b) = if swap { (&y, &x) } else { (&x, &y) };
            let loss = ops::mse_loss_with(a, b, r).unwrap();
            assert_eq!(loss.dtype(), DType::F64);
            let loss = ops::sum(&loss, None, false).unwrap();
            autograd::backward(&[(loss, None)], false).unwrap();
            let (gx, gy) = (x.grad().unwrap(), y.grad().unwrap());
            assert_eq!((gx.dtype(), gy.dtype()), (DType::F64, DType::F32));
            // d/dx sum((x - y)²) = 2 (x - y) (/ N for the mean), whichever operand x is;
            // y gets the negation.
            let n = if r == Reduction::Mean { 12.0 } else { 1.0 };
            let (xv, yv) = (x.to_vec::<f64>(), y.to_vec::<f64>());
            for i in 0..12 {
                let want = 2.0 * (xv[i] - yv[i]) / n;
                assert!((gx.to_vec::<f64>()[i] - want).abs() < 1e-12, "{r:?} {swap}");
                assert!((gy.to_vec::<f64>()[i] + want).abs() < 1e-6, "{r:?} {swap}");
            }
        }
    }
}

type LossFn = fn(&Tensor, &Tensor) -> Tensor;

#[test]
fn other_two_tensor_losses_of_mixed_dtypes_differentiate_both() {
    let one = ops::ones(&[], DType::F64, Device::Cpu).unwrap();
    let losses: [(&str, LossFn); 3] = [
        ("l1_loss", |a, b| {
            ops::l1_loss(a, b, Reduction::Mean).unwrap()
        }),
        ("mse_loss", |a, b| ops::mse_loss(a, b).unwrap()),
        ("binary_cross_entropy_with_logits", |a, b| {
            let p = ops::sigmoid(b).unwrap();
            ops::binary_cross_entropy_with_logits(a, &p, None, None, Reduction::Mean).unwrap()
        }),
    ];
    for (name, f) in losses {
        for swap in [false, true] {
            let (x, y) = mixed_pair();
            let loss = if swap { f(&y, &x) } else { f(&x, &y) };
            let loss = ops::mul(&loss, &one).unwrap();
            autograd::backward(&[(loss, None)], false).unwrap();
            let (gx, gy) = (x.grad(), y.grad());
            assert!(
                gx.is_some() && gy.is_some(),
                "{name} (swap {swap}) lost a gradient"
            );
            assert_eq!(gx.unwrap().dtype(), DType::F64, "{name}");
            assert_eq!(gy.unwrap().dtype(), DType::F32, "{name}");
        }
    }
}
