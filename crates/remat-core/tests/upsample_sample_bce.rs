//! The transposed convolution, `interpolate`, the samplers and `binary_cross_entropy` in the
//! Rust API: values against direct loops or closed forms, float64 finite-difference
//! gradients, determinism under a seed, and errors that name the op.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det};
use remat_core::ops::{self, ConvTransposeArgs, InterpolateMode, Reduction};
use remat_core::{DType, Device, Error, Generator, Tensor};

fn args<'a>(
    s: &'a [usize],
    p: &'a [usize],
    op: &'a [usize],
    d: &'a [usize],
) -> ConvTransposeArgs<'a> {
    ConvTransposeArgs {
        stride: s,
        padding: p,
        output_padding: op,
        dilation: d,
        groups: 1,
    }
}

#[test]
fn conv_transpose1d_scatters_each_input_window() {
    // x = [1, 2], w = [1, 10, 100], stride 2: out[2i + k] += x[i] w[k].
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 1, 2]).unwrap();
    let w = Tensor::from_vec(vec![1.0f64, 10.0, 100.0], &[1, 1, 3]).unwrap();
    let y = ops::conv_transpose(1, &x, &w, None, &args(&[2], &[0], &[1], &[1])).unwrap();
    assert_eq!(y.shape(), &[1, 1, 6]);
    assert_eq!(y.to_vec::<f64>(), vec![1.0, 10.0, 102.0, 20.0, 200.0, 0.0]);
    let cropped = ops::conv_transpose(1, &x, &w, None, &args(&[2], &[1], &[0], &[1])).unwrap();
    assert_eq!(cropped.to_vec::<f64>(), vec![10.0, 102.0, 20.0]);
}

#[test]
fn conv_transpose2d_gradients_match_finite_differences() {
    let x = det(&[2, 2, 3, 3], 1);
    let w = det(&[2, 3, 2, 2], 2);
    let b = det(&[3], 3);
    check_grad(
        &[x, w, b],
        |t| {
            ops::conv_transpose(
                2,
                &t[0],
                &t[1],
                Some(&t[2]),
                &args(&[2, 1], &[1, 0], &[1, 0], &[1, 2]),
            )
            .unwrap()
        },
        1e-6,
    );
}

#[test]
fn conv_transpose_errors_name_the_op() {
    let x = det(&[1, 2, 3, 3], 1);
    let w = det(&[3, 1, 2, 2], 2);
    let e = ops::conv_transpose(2, &x, &w, None, &args(&[1, 1], &[0, 0], &[0, 0], &[1, 1]))
        .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }) && e.to_string().contains("conv_transpose2d"));
    let w = det(&[2, 1, 2, 2], 2);
    let e = ops::conv_transpose(2, &x, &w, None, &args(&[1, 1], &[0, 0], &[1, 1], &[1, 1]))
        .unwrap_err();
    assert!(e.to_string().contains("output_padding"), "{e}");
}

#[test]
fn interpolate_nearest_and_linear() {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 4.0], &[1, 1, 3]).unwrap();
    let near = ops::interpolate(&x, &[6], None, InterpolateMode::Nearest, false).unwrap();
    assert_eq!(near.to_vec::<f64>(), vec![1.0, 1.0, 2.0, 2.0, 4.0, 4.0]);
    let lin = ops::interpolate(&x, &[5], None, InterpolateMode::Linear, true).unwrap();
    assert_eq!(lin.to_vec::<f64>(), vec![1.0, 1.5, 2.0, 3.0, 4.0]);
    check_grad(
        &[det(&[1, 2, 3, 2], 4)],
        |t| ops::interpolate(&t[0], &[5, 3], None, InterpolateMode::Linear, false).unwrap(),
        1e-6,
    );
    let e = ops::interpolate(&x, &[2, 2], None, InterpolateMode::Nearest, false).unwrap_err();
    assert!(e.to_string().contains("interpolate"));
}

#[test]
fn samplers_are_deterministic_under_a_seed() {
    let w = Tensor::from_vec(vec![0.0f32, 1.0, 3.0], &[3]).unwrap();
    // A private generator: tests running at the same time draw from the global stream.
    let draw = || {
        Generator::new(5).run(|| {
            (
                ops::multinomial(&w, 20, true).unwrap().to_vec::<i64>(),
                ops::randperm(10, DType::I64, Device::Cpu)
                    .unwrap()
                    .to_vec::<i64>(),
            )
        })
    };
    let (a, p) = draw();
    assert_eq!(draw(), (a.clone(), p.clone()));
    assert!(a.iter().all(|&i| i == 1 || i == 2));
    let mut sorted = p.clone();
    sorted.sort();
    assert_eq!(sorted, (0..10).collect::<Vec<i64>>());
    let drawn = ops::multinomial(&w, 2, false).unwrap().to_vec::<i64>();
    assert!(drawn == vec![1, 2] || drawn == vec![2, 1]);
    assert!(ops::multinomial(&w, 3, false).is_err()); // one category has no weight
}

#[test]
fn bernoulli_and_exponential_fills() {
    let p = Tensor::from_vec(vec![0.0f64, 1.0, 1.0, 0.0], &[4]).unwrap();
    assert_eq!(
        ops::bernoulli(&p).unwrap().to_vec::<f64>(),
        vec![0.0, 1.0, 1.0, 0.0]
    );
    let t = ops::zeros(&[20000], DType::F64, Device::Cpu).unwrap();
    ops::exponential_(&t, 4.0).unwrap();
    let v = t.to_vec::<f64>();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        v.iter().all(|&x| x >= 0.0) && (mean - 0.25).abs() < 0.01,
        "{mean}"
    );
    assert!(ops::exponential_(&t, 0.0).is_err());
    assert!(ops::bernoulli_(&t, 1.5).is_err());
}

#[test]
fn binary_cross_entropy_clamps_and_differentiates() {
    let x = Tensor::from_vec(vec![0.0f64, 1.0, 0.5], &[3]).unwrap();
    let t = Tensor::from_vec(vec![1.0f64, 1.0, 0.0], &[3]).unwrap();
    let l = ops::binary_cross_entropy(&x, &t, None, Reduction::None).unwrap();
    let v = l.to_vec::<f64>();
    assert_eq!(v[0], 100.0);
    assert_eq!(v[1], 0.0);
    assert!((v[2] - std::f64::consts::LN_2).abs() < 1e-15);
    let probs = ops::scale(&ops::add_scalar(&det(&[2, 3], 7), 1.5).unwrap(), 0.3).unwrap();
    check_grad(
        &[
            probs,
            ops::scale(&ops::add_scalar(&det(&[2, 3], 8), 1.0).unwrap(), 0.5).unwrap(),
        ],
        |ts| ops::binary_cross_entropy(&ts[0], &ts[1], None, Reduction::Mean).unwrap(),
        1e-6,
    );
    let bad = Tensor::from_vec(vec![1.5f64], &[1]).unwrap();
    let e = ops::binary_cross_entropy(&bad, &bad, None, Reduction::Mean).unwrap_err();
    assert!(e.to_string().contains("binary_cross_entropy"));
}
