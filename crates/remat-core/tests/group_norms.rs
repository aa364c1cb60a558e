//! `rms_norm` and `group_norm`: values against the formulas, gradients against finite
//! differences (float64), and errors naming the op and the shapes.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det};
use remat_core::ops;

#[test]
fn rms_norm_matches_the_formula_and_its_gradient() {
    let x = det(&[2, 3, 4], 1);
    let w = det(&[3, 4], 2);
    let y = ops::rms_norm(&x, &[3, 4], Some(&w), Some(1e-5)).unwrap();
    let (xs, ws, ys) = (x.to_vec::<f64>(), w.to_vec::<f64>(), y.to_vec::<f64>());
    for b in 0..2 {
        let row = &xs[b * 12..(b + 1) * 12];
        let r = (row.iter().map(|v| v * v).sum::<f64>() / 12.0 + 1e-5).sqrt();
        for i in 0..12 {
            assert!((ys[b * 12 + i] - row[i] / r * ws[i]).abs() < 1e-12);
        }
    }
    check_grad(
        &[x, w],
        |t| {
            ops::rms_norm(
                &t[0],
                &[4],
                Some(&ops::narrow(&t[1], 0, 0, 1).unwrap().reshape(&[4]).unwrap()),
                None,
            )
            .unwrap()
        },
        1e-6,
    );
}

#[test]
fn group_norm_matches_the_formula_and_its_gradient() {
    let x = det(&[2, 4, 3], 3);
    let y = ops::group_norm(&x, 2, None, None, 1e-5).unwrap();
    let (xs, ys) = (x.to_vec::<f64>(), y.to_vec::<f64>());
    for g in 0..4 {
        let grp = &xs[g * 6..(g + 1) * 6];
        let m = grp.iter().sum::<f64>() / 6.0;
        let var = grp.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / 6.0;
        for i in 0..6 {
            assert!((ys[g * 6 + i] - (grp[i] - m) / (var + 1e-5).sqrt()).abs() < 1e-12);
        }
    }
    check_grad(
        &[x, det(&[4], 4), det(&[4], 5)],
        |t| ops::group_norm(&t[0], 2, Some(&t[1]), Some(&t[2]), 1e-3).unwrap(),
        1e-6,
    );
}

#[test]
fn bad_shapes_are_errors() {
    let x = det(&[2, 4, 3], 6);
    let e = ops::group_norm(&x, 3, None, None, 1e-5).unwrap_err();
    assert!(e.to_string().contains("group_norm") && e.to_string().contains("(2, 4, 3)"));
    let e = ops::rms_norm(&x, &[4], None, None).unwrap_err();
    assert!(e.to_string().contains("rms_norm"), "{e}");
    let e = ops::group_norm(&x, 2, Some(&det(&[3], 7)), None, 1e-5).unwrap_err();
    assert!(e.to_string().contains("weight"), "{e}");
}
