//! `sort`, `argsort` and `topk` against plain-Rust references: every axis, both directions,
//! NaN placement (greatest), ties in their original order, integer dtypes, 0-d inputs,
//! gradients (finite differences, first and second order through the gather) and errors.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det};
use remat_core::ops;
use remat_core::{DType, Error, Tensor};

/// Rows of `v` (shape `(rows, n)`) ordered by a stable sort with NaN greatest.
fn reference(v: &[f64], n: usize, descending: bool) -> (Vec<f64>, Vec<i64>) {
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for row in v.chunks(n) {
        let mut p: Vec<usize> = (0..n).collect();
        let key = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => a.partial_cmp(&b).unwrap(),
        };
        p.sort_by(|&i, &j| {
            if descending {
                key(row[j], row[i])
            } else {
                key(row[i], row[j])
            }
        });
        vals.extend(p.iter().map(|&i| row[i]));
        idx.extend(p.iter().map(|&i| i as i64));
    }
    (vals, idx)
}

fn same(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!(x == y || (x.is_nan() && y.is_nan()), "{a:?} vs {b:?}");
    }
}

#[test]
fn sort_orders_rows_with_nan_greatest_and_ties_stable() {
    let v = vec![
        3.0,
        f64::NAN,
        1.0,
        3.0,
        -2.0,
        1.0,
        0.5,
        f64::NAN,
        0.5,
        -1.0,
        2.0,
        0.5,
    ];
    let x = Tensor::from_vec(v.clone(), &[2, 6]).unwrap();
    for descending in [false, true] {
        let (vals, idx) = ops::sort(&x, -1, descending).unwrap();
        let (rv, ri) = reference(&v, 6, descending);
        same(&vals.to_vec::<f64>(), &rv);
        assert_eq!(idx.to_vec::<i64>(), ri);
        assert_eq!(idx.dtype(), DType::I64);
        assert_eq!(ops::argsort(&x, 1, descending).unwrap().to_vec::<i64>(), ri);
    }
    // Along axis 0: the transpose's rows.
    let t = ops::t(&x).unwrap();
    let tv = ops::contiguous(&t).unwrap().to_vec::<f64>();
    let (vals, _) = ops::sort(&x, 0, false).unwrap();
    let (rv, _) = reference(&tv, 2, false);
    let got = ops::contiguous(&ops::t(&vals).unwrap())
        .unwrap()
        .to_vec::<f64>();
    same(&got, &rv);
}

#[test]
fn topk_gives_the_k_first_of_a_stable_sort() {
    let x = det(&[3, 7], 1);
    let v = x.to_vec::<f64>();
    for largest in [true, false] {
        for k in [0, 1, 3, 7] {
            let (vals, idx) = ops::topk(&x, k, 1, largest).unwrap();
            assert_eq!(vals.shape(), &[3, k]);
            let (rv, ri) = reference(&v, 7, largest);
            let want_v: Vec<f64> = rv.chunks(7).flat_map(|r| r[..k].to_vec()).collect();
            let want_i: Vec<i64> = ri.chunks(7).flat_map(|r| r[..k].to_vec()).collect();
            same(&vals.to_vec::<f64>(), &want_v);
            assert_eq!(idx.to_vec::<i64>(), want_i);
        }
    }
    let ties = Tensor::from_vec(vec![1i64, 5, 5, 2, 5], &[5]).unwrap();
    let (vals, idx) = ops::topk(&ties, 2, 0, true).unwrap();
    assert_eq!(vals.to_vec::<i64>(), vec![5, 5]);
    assert_eq!(idx.to_vec::<i64>(), vec![1, 2], "ties keep their order");
    assert_eq!(vals.dtype(), DType::I64);
}

#[test]
fn zero_dim_inputs_and_errors() {
    let s = Tensor::scalar(2.5, DType::F32);
    let (v, i) = ops::sort(&s, 0, false).unwrap();
    assert_eq!((v.shape(), i.shape()), (&[][..], &[][..]));
    assert_eq!(v.to_vec::<f32>(), vec![2.5]);
    assert_eq!(
        ops::topk(&s, 1, -1, true).unwrap().1.to_vec::<i64>(),
        vec![0]
    );
    let x = det(&[2, 3], 2);
    let e = ops::topk(&x, 4, 1, true).unwrap_err();
    assert!(
        matches!(e, Error::Value { .. }) && e.to_string().contains("topk"),
        "{e}"
    );
    let e = ops::sort(&x, 2, false).unwrap_err();
    assert!(e.to_string().contains("sort"), "{e}");
}

#[test]
fn gradients_reach_the_selected_elements() {
    let x = det(&[3, 5], 3);
    check_grad(
        std::slice::from_ref(&x),
        |t| ops::sort(&t[0], 1, true).unwrap().0,
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&x),
        |t| {
            let (v, _) = ops::topk(&t[0], 2, 0, false).unwrap();
            ops::mul(&v, &v).unwrap()
        },
        1e-6,
    );
}
