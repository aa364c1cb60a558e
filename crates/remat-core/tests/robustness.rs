//! Regression tests: impossible allocations are errors (not aborts), absurd shapes are shape
//! errors (not overflows), long graphs drop without recursion, and float32 sums are accurate.
#![allow(clippy::unwrap_used)]

mod common;
use common::leaf;
use remat_core::{ops, DType, Device, Error, Tensor};

#[test]
fn an_impossible_allocation_is_an_out_of_memory_error_and_the_engine_stays_usable() {
    let e = ops::zeros(&[1 << 50], DType::F32, Device::Cpu).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    let e = ops::randn(&[1 << 40, 1 << 10], DType::F32, Device::Cpu).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    let a = ops::ones(&[1 << 22, 1], DType::F64, Device::Cpu).unwrap();
    let b = ops::ones(&[1, 1 << 22], DType::F64, Device::Cpu).unwrap();
    let e = ops::add(&a, &b).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert_eq!(ops::ones(&[3], DType::F32, Device::Cpu).unwrap().numel(), 3);
}

#[test]
fn overflowing_shapes_are_shape_errors() {
    for shape in [
        &[1usize << 40, 1 << 30][..],
        &[1 << 62, 4],
        &[usize::MAX, 2],
    ] {
        let e = ops::zeros(shape, DType::F32, Device::Cpu).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }), "{e}");
    }
    // Reshape and expand targets whose element count overflows are shape errors too.
    let six = ops::ones(&[6], DType::F32, Device::Cpu).unwrap();
    let e = ops::reshape(&six, &[1 << 40, 1 << 40]).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = ops::shape::infer_shape("reshape", &[6], &[1 << 40, 1 << 40, -1]).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let one = ops::ones(&[1, 1], DType::F32, Device::Cpu).unwrap();
    let e = ops::expand(&one, &[1 << 40, 1 << 40]).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let a = ops::ones(&[1 << 31, 0], DType::F32, Device::Cpu).unwrap();
    let b = ops::ones(&[0, 1], DType::F32, Device::Cpu).unwrap();
    assert!(ops::add(&a, &b).is_err());
}

#[test]
fn a_long_graph_drops_without_overflowing_the_stack() {
    let x = leaf(&Tensor::from_vec(vec![1.0f64], &[1]).unwrap());
    let one = Tensor::scalar(1.0, DType::F64);
    let mut y = x.clone();
    for _ in 0..200_000 {
        y = ops::mul(&y, &one).unwrap();
    }
    drop(y);
}

#[test]
fn float32_sums_of_millions_of_elements_are_accurate() {
    let n = 1_000_003;
    let t = Tensor::from_vec(vec![0.1f32; n], &[n]).unwrap();
    let s = ops::sum(&t, None, false).unwrap().item().unwrap();
    let exact = 0.1f32 as f64 * n as f64;
    assert!((s - exact).abs() / exact < 1e-6, "{s} vs {exact}");
    // Leading-axis sums (bias gradients) too.
    let m = Tensor::from_vec(vec![0.1f32; n * 3], &[n, 3]).unwrap();
    let cols = ops::sum(&m, Some(&[0]), false).unwrap().to_vec::<f64>();
    for c in cols {
        assert!((c - exact).abs() / exact < 1e-5, "{c} vs {exact}");
    }
}
