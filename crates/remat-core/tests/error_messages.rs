//! Error messages name the op the caller used and the shapes the caller passed: `zeros` and
//! `ones` are not reported as `full`, and `matmul` shows 1-D operands as given, not as the
//! matrices they are promoted to.
#![allow(clippy::unwrap_used)]

use remat_core::{ops, DType, Device, Error};

#[test]
fn constructors_label_errors_with_their_own_name() {
    let huge = [1usize << 40, 1 << 40];
    for (name, e) in [
        (
            "zeros",
            ops::zeros(&huge, DType::F32, Device::Cpu).unwrap_err(),
        ),
        (
            "ones",
            ops::ones(&huge, DType::F32, Device::Cpu).unwrap_err(),
        ),
        (
            "full",
            ops::full(&huge, 2.0, DType::F32, Device::Cpu).unwrap_err(),
        ),
    ] {
        assert!(matches!(e, Error::Shape { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("{name}:")), "{e}");
    }
    for (name, e) in [
        (
            "zeros",
            ops::zeros(&[1 << 50], DType::F32, Device::Cpu).unwrap_err(),
        ),
        (
            "ones",
            ops::ones(&[1 << 50], DType::F32, Device::Cpu).unwrap_err(),
        ),
    ] {
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("{name}:")), "{e}");
    }
}

#[test]
fn matmul_errors_show_the_callers_shapes() {
    let t = |shape: &[usize]| ops::ones(shape, DType::F32, Device::Cpu).unwrap();
    for (a, b, shown) in [
        (&[3][..], &[4][..], ["(3,)", "(4,)"]),
        (&[2, 3], &[4], ["(2, 3)", "(4,)"]),
        (&[5], &[4, 2], ["(5,)", "(4, 2)"]),
        (&[2, 3, 4], &[5, 4, 2], ["(2, 3, 4)", "(5, 4, 2)"]),
    ] {
        let e = ops::matmul(&t(a), &t(b)).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with("matmul:"), "{msg}");
        for s in shown {
            assert!(msg.contains(s), "{msg} should show {s}");
        }
        assert!(!msg.contains("(1, ") && !msg.contains(", 1)"), "{msg}");
    }
    // Valid products are unaffected.
    assert_eq!(
        ops::matmul(&t(&[3]), &t(&[3])).unwrap().shape(),
        &[] as &[usize]
    );
    assert_eq!(
        ops::matmul(&t(&[2, 3, 4]), &t(&[4])).unwrap().shape(),
        &[2, 3]
    );
    assert_eq!(
        ops::matmul(&t(&[1, 3, 4]), &t(&[5, 4, 2])).unwrap().shape(),
        &[5, 3, 2]
    );
}

#[test]
fn every_axis_out_of_range_is_a_dimension_error() {
    // PyTorch raises IndexError ("Dimension out of range") for all of these; the engine marks
    // them `ShapeKind::DimOutOfRange` (Python: DimensionError), still `Error::Shape`.
    let x = ops::ones(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let idx = remat_core::Tensor::from_vec(vec![0i64], &[1]).unwrap();
    let results = [
        ("sum", ops::sum(&x, Some(&[2]), false).unwrap_err()),
        ("softmax", ops::softmax(&x, -3).unwrap_err()),
        ("transpose", ops::transpose(&x, 0, 2).unwrap_err()),
        ("unsqueeze", ops::unsqueeze(&x, 3).unwrap_err()),
        (
            "concat",
            ops::concat(&[x.clone(), x.clone()], 2).unwrap_err(),
        ),
        (
            "stack",
            ops::stack(std::slice::from_ref(&x), -4).unwrap_err(),
        ),
        ("index_select", ops::index_select(&x, 2, &idx).unwrap_err()),
        ("cumsum", ops::cumsum(&x, 2).unwrap_err()),
        ("argmax", ops::argmax(&x, Some(-3), false).unwrap_err()),
        ("prod", ops::prod(&x, Some(2), false).unwrap_err()),
        ("flip", ops::flip(&x, &[2]).unwrap_err()),
    ];
    for (op, e) in results {
        assert!(e.is_dim_out_of_range(), "{op}: {e:?}");
        assert!(matches!(e, Error::Shape { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("{op}:")), "{e}");
    }
    // Other shape errors keep the plain kind.
    let e = ops::sum(&x, Some(&[0, 0]), false).unwrap_err();
    assert!(
        matches!(e, Error::Shape { .. }) && !e.is_dim_out_of_range(),
        "{e}"
    );
    let e = ops::add(&x, &ops::ones(&[4], DType::F32, Device::Cpu).unwrap()).unwrap_err();
    assert!(!e.is_dim_out_of_range(), "{e}");
}
