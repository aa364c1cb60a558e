//! argmax/argmin, max/min along a dim with indices, and all/any: values against hand-written
//! expectations (ties: first occurrence; NaN: the extreme), every dtype, the one-element
//! gradient of `max_dim` and its second order, and the errors.
#![allow(clippy::unwrap_used)]

mod common;

use common::{check_grad, det, leaf};
use remat_core::autograd::{backward, grad_with, GradOptions};
use remat_core::{ops, DType, Error, Tensor};

fn f64s(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn argmax_rows_columns_and_flat() {
    let x = f64s(&[1.0, 5.0, 5.0, 0.0, 7.0, -1.0, 7.0, 2.0], &[2, 4]);
    let r = ops::argmax(&x, Some(1), false).unwrap();
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(r.shape(), &[2]);
    assert_eq!(r.to_vec::<i64>(), vec![1, 0]);
    assert_eq!(
        ops::argmin(&x, Some(-1), false).unwrap().to_vec::<i64>(),
        vec![3, 1]
    );
    assert_eq!(ops::argmax(&x, Some(0), true).unwrap().shape(), &[1, 4]);
    assert_eq!(
        ops::argmax(&x, Some(0), false).unwrap().to_vec::<i64>(),
        vec![1, 0, 1, 1]
    );
    let flat = ops::argmax(&x, None, false).unwrap();
    assert_eq!(flat.shape(), &[] as &[usize]);
    assert_eq!(flat.item_i64().unwrap(), 4);
    assert_eq!(ops::argmin(&x, None, true).unwrap().shape(), &[1, 1]);
    // A transposed (non-contiguous) view.
    let t = ops::transpose(&x, 0, 1).unwrap();
    assert_eq!(
        ops::argmax(&t, Some(0), false).unwrap().to_vec::<i64>(),
        vec![1, 0]
    );
}

#[test]
fn argmax_nan_is_the_extreme_and_ints_work() {
    let x = f64s(&[1.0, f64::NAN, 3.0, f64::NAN, 0.0, 2.0], &[2, 3]);
    assert_eq!(
        ops::argmax(&x, Some(1), false).unwrap().to_vec::<i64>(),
        vec![1, 0]
    );
    assert_eq!(
        ops::argmin(&x, Some(1), false).unwrap().to_vec::<i64>(),
        vec![1, 0]
    );
    assert_eq!(
        ops::argmax(&x, Some(0), false).unwrap().to_vec::<i64>(),
        vec![1, 0, 0]
    );
    let i = Tensor::from_vec(vec![3i32, -2, 9, 9], &[4]).unwrap();
    assert_eq!(ops::argmax(&i, None, false).unwrap().item_i64().unwrap(), 2);
    assert_eq!(ops::argmin(&i, None, false).unwrap().item_i64().unwrap(), 1);
    let b = Tensor::from_vec(vec![0u8, 1, 1], &[3]).unwrap();
    assert_eq!(
        ops::argmax(&b, Some(0), false).unwrap().item_i64().unwrap(),
        1
    );
}

#[test]
fn argmax_big_parallel_matches_a_scan() {
    let x = det(&[40, 3, 500], 3);
    let v = x.to_vec::<f64>();
    for dim in [0usize, 1, 2] {
        let got = ops::argmax(&x, Some(dim as isize), false)
            .unwrap()
            .to_vec::<i64>();
        let shape = [40usize, 3, 500];
        let (outer, n) = (shape[..dim].iter().product::<usize>(), shape[dim]);
        let inner: usize = shape[dim + 1..].iter().product();
        for o in 0..outer {
            for i in 0..inner {
                let col: Vec<f64> = (0..n).map(|k| v[(o * n + k) * inner + i]).collect();
                let best = (0..n).fold(0, |b, k| if col[k] > col[b] { k } else { b });
                assert_eq!(got[o * inner + i], best as i64);
            }
        }
    }
}

#[test]
fn index_reductions_refuse_empty_axes() {
    let x = Tensor::from_vec(Vec::<f32>::new(), &[2, 0]).unwrap();
    let e = ops::argmax(&x, Some(1), false).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }));
    let msg = e.to_string();
    assert!(msg.contains("argmax") && msg.contains("(2, 0)"), "{msg}");
    assert!(ops::argmin(&x, None, false).is_err());
    assert!(ops::max_dim(&x, -1, false)
        .unwrap_err()
        .to_string()
        .contains("max"));
    assert_eq!(ops::argmax(&x, Some(0), false).unwrap().shape(), &[0]);
    assert!(ops::argmax(&f64s(&[1.0], &[1]), Some(1), false).is_err());
}

#[test]
fn max_dim_values_indices_and_one_element_gradient() {
    let x = leaf(&f64s(&[2.0, 5.0, 5.0, 1.0, 1.0, 1.0], &[2, 3]));
    let (v, i) = ops::max_dim(&x, 1, false).unwrap();
    assert_eq!(v.to_vec::<f64>(), vec![5.0, 1.0]);
    assert_eq!(i.to_vec::<i64>(), vec![1, 0]);
    let s = ops::sum(&v, None, false).unwrap();
    backward(&[(s, None)], false).unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>(),
        vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    );
    let (v, i) = ops::min_dim(&x, 0, true).unwrap();
    assert_eq!(v.shape(), &[1, 3]);
    assert_eq!(v.to_vec::<f64>(), vec![1.0, 1.0, 1.0]);
    assert_eq!(i.to_vec::<i64>(), vec![1, 1, 1]);
    // Integer inputs: values keep the dtype and are not recorded.
    let n = Tensor::from_vec(vec![4i64, 9, 2], &[3]).unwrap();
    let (v, i) = n.max_dim(0, false).unwrap();
    assert_eq!(
        (v.dtype(), v.item_i64().unwrap(), i.item_i64().unwrap()),
        (DType::I64, 9, 1)
    );
}

#[test]
fn max_dim_gradients_match_finite_differences() {
    // det() draws distinct values, so finite differences never cross a tie.
    check_grad(
        &[det(&[3, 4], 5)],
        |t| ops::max_dim(&t[0], 1, false).unwrap().0,
        1e-6,
    );
    check_grad(
        &[det(&[2, 3, 2], 6)],
        |t| ops::min_dim(&t[0], 0, true).unwrap().0,
        1e-6,
    );
}

#[test]
fn max_dim_second_order() {
    let x = leaf(&f64s(&[1.0, 3.0, 2.0, 0.5, -1.0, 4.0], &[2, 3]));
    let (v, _) = ops::max_dim(&x, 1, false).unwrap();
    let y = ops::sum(&ops::mul(&v, &v).unwrap(), None, false).unwrap();
    let opts = GradOptions {
        retain_graph: None,
        create_graph: true,
        allow_unused: false,
    };
    let g = grad_with(&[y], std::slice::from_ref(&x), None, opts).unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>(), vec![0.0, 6.0, 0.0, 0.0, 0.0, 8.0]);
    let gs = ops::sum(&g, None, false).unwrap();
    let h = grad_with(&[gs], &[x], None, GradOptions::default()).unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(h.to_vec::<f64>(), vec![0.0, 2.0, 0.0, 0.0, 0.0, 2.0]);
}

#[test]
fn all_any_over_axes_for_every_dtype() {
    let x = f64s(&[1.0, 0.0, f64::NAN, 2.0, 3.0, 4.0], &[2, 3]);
    let a = ops::all(&x, Some(&[1]), false).unwrap();
    assert_eq!(a.dtype(), DType::Bool);
    assert_eq!(a.to_vec::<u8>(), vec![0, 1]);
    assert_eq!(
        ops::any(&x, Some(&[0]), true).unwrap().to_vec::<u8>(),
        vec![1, 1, 1]
    );
    assert_eq!(ops::all(&x, None, false).unwrap().to_vec::<u8>(), vec![0]);
    let i = Tensor::from_vec(vec![0i32, 0, 5], &[3]).unwrap();
    assert_eq!(ops::any(&i, None, false).unwrap().to_vec::<u8>(), vec![1]);
    assert_eq!(i.all(None, false).unwrap().to_vec::<u8>(), vec![0]);
    let e = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    assert_eq!(ops::all(&e, None, false).unwrap().to_vec::<u8>(), vec![1]);
    assert_eq!(ops::any(&e, None, false).unwrap().to_vec::<u8>(), vec![0]);
    assert!(ops::all(&x, Some(&[2]), false).is_err());
}
