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
