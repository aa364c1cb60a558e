//! Comparisons, logical/bitwise ops, float classes, masked_fill, floor division and
//! remainder in the engine.
#![allow(clippy::unwrap_used)]

use remat_core::{ops, DType, Error, Tensor};

fn run_backward(y: &Tensor) {
    let s = ops::sum(y, None, false).unwrap();
    remat_core::autograd::backward(&[(s, None)], false).unwrap();
}

fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn floats(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn bools(t: &Tensor) -> Vec<bool> {
    assert_eq!(t.dtype(), DType::Bool);
    t.to_vec::<u8>().into_iter().map(|b| b != 0).collect()
}

#[test]
fn comparisons_broadcast_promote_and_return_bool() {
    let a = floats(&[1.0, 2.0, f32::NAN, 4.0, 5.0, 6.0], &[2, 3]);
    let b = ints(&[2, 2, 2], &[3]);
    assert_eq!(
        bools(&ops::eq(&a, &b).unwrap()),
        [false, true, false, false, false, false]
    );
    assert_eq!(
        bools(&ops::ne(&a, &b).unwrap()),
        [true, false, true, true, true, true]
    );
    assert_eq!(
        bools(&ops::lt(&a, &b).unwrap()),
        [true, false, false, false, false, false]
    );
    assert_eq!(
        bools(&a.ge(&b).unwrap()),
        [false, true, false, true, true, true]
    );
    assert_eq!(ops::gt(&a, &b).unwrap().shape(), &[2, 3]);
    // int64 compared exactly with int64 beyond 2^53.
    let big = (1i64 << 53) + 1;
    let x = ints(&[big], &[1]);
    let y = ints(&[1i64 << 53], &[1]);
    assert_eq!(bools(&ops::le(&x, &y).unwrap()), [false]);
    let e = ops::eq(&a, &ints(&[1, 2], &[2])).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }) && e.to_string().contains("eq"));
}

#[test]
fn comparisons_are_never_recorded() {
    let x = floats(&[1.0, -1.0], &[2]);
    x.set_requires_grad(true).unwrap();
    let m = ops::gt(&x, &Tensor::scalar(0.0, DType::F32)).unwrap();
    assert!(!m.requires_grad() && m.grad_fn().is_none());
}

#[test]
fn logical_and_bitwise_ops() {
    let a = floats(&[0.0, 1.5, f32::NAN, 0.0], &[4]);
    let b = ints(&[0, 0, 3, 7], &[4]);
    assert_eq!(
        bools(&ops::logical_and(&a, &b).unwrap()),
        [false, false, true, false]
    );
    assert_eq!(
        bools(&ops::logical_or(&a, &b).unwrap()),
        [false, true, true, true]
    );
    assert_eq!(
        bools(&ops::logical_xor(&a, &b).unwrap()),
        [false, true, false, true]
    );
    assert_eq!(
        bools(&ops::logical_not(&a).unwrap()),
        [true, false, false, true]
    );
    let i = ints(&[5, -6, 12], &[3]);
    let j = ints(&[3, 3, -1], &[3]);
    assert_eq!(
        ops::bitwise_and(&i, &j).unwrap().to_vec::<i64>(),
        [1, 2, 12] // 5 & 3, -6 & 3, 12 & -1
    );
    assert_eq!(
        ops::bitwise_or(&i, &j).unwrap().to_vec::<i64>(),
        [5 | 3, -6 | 3, -1]
    );
    assert_eq!(
        ops::bitwise_xor(&i, &j).unwrap().to_vec::<i64>(),
        [5 ^ 3, -6 ^ 3, !12]
    );
    assert_eq!(
        ops::bitwise_not(&i).unwrap().to_vec::<i64>(),
        [!5, !-6, !12]
    );
    let i32s = Tensor::from_vec(vec![7i32, -8], &[2]).unwrap();
    let n = ops::bitwise_not(&i32s).unwrap();
    assert_eq!(n.dtype(), DType::I32);
    assert_eq!(n.to_vec::<i32>(), [!7, !-8]);
    let m = ops::gt(&i, &Tensor::scalar_i64(0, DType::I64)).unwrap();
    assert_eq!(bools(&ops::bitwise_not(&m).unwrap()), [false, true, false]);
    // bool & int64 promotes to int64.
    assert_eq!(ops::bitwise_and(&m, &j).unwrap().dtype(), DType::I64);
    let e = ops::bitwise_and(&a, &b).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    assert!(e.to_string().contains("bitwise_and") && e.to_string().contains("float32"));
}

#[test]
fn float_classes() {
    let a = floats(&[f32::NAN, f32::INFINITY, -f32::INFINITY, 1.0], &[4]);
    assert_eq!(bools(&ops::isnan(&a).unwrap()), [true, false, false, false]);
    assert_eq!(bools(&ops::isinf(&a).unwrap()), [false, true, true, false]);
    assert_eq!(bools(&a.isfinite().unwrap()), [false, false, false, true]);
    let i = ints(&[1, 2], &[2]);
    assert_eq!(bools(&ops::isnan(&i).unwrap()), [false, false]);
    assert_eq!(bools(&ops::isinf(&i).unwrap()), [false, false]);
    assert_eq!(bools(&ops::isfinite(&i).unwrap()), [true, true]);
}

#[test]
fn masked_fill_values_errors_and_gradient() {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    x.set_requires_grad(true).unwrap();
    let m = ops::gt(&ints(&[1, 0, 1], &[3]), &Tensor::scalar_i64(0, DType::I64)).unwrap();
    let y = ops::masked_fill_scalar(&x, &m, -1.0).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    assert_eq!(y.to_vec::<f64>(), [-1.0, 2.0, -1.0, -1.0, 5.0, -1.0]);
    run_backward(&y);
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>(),
        [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    );
    let e = ops::masked_fill_scalar(&x, &ints(&[1, 0, 1], &[3]), 0.0).unwrap_err();
    assert!(matches!(e, Error::DType { .. }) && e.to_string().contains("masked_fill"));
    assert!(e.to_string().contains("int64"));
    let big = ops::gt(
        &ints(&[1, 0, 1, 1], &[4]),
        &Tensor::scalar_i64(0, DType::I64),
    )
    .unwrap();
    let e = ops::masked_fill_scalar(&x, &big, 0.0).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    assert!(e.to_string().contains("(4,)") && e.to_string().contains("(2, 3)"));
    // Integer input keeps its dtype.
    let xi = ints(&[1, 2, 3], &[3]);
    let yi = ops::masked_fill(&xi, &m, &Tensor::scalar_i64(9, DType::I64)).unwrap();
    assert_eq!(yi.to_vec::<i64>(), [9, 2, 9]);
}

#[test]
fn integer_floor_divide_and_remainder_follow_python() {
    let a = ints(&[7, -7, 7, -7, 0, 6], &[6]);
    let b = ints(&[2, 2, -2, -2, 3, -3], &[6]);
    assert_eq!(
        ops::floor_divide(&a, &b).unwrap().to_vec::<i64>(),
        [3, -4, -4, 3, 0, -2]
    );
    assert_eq!(
        ops::remainder(&a, &b).unwrap().to_vec::<i64>(),
        [1, 1, -1, -1, 0, 0]
    );
    let e = ops::floor_divide(&a, &ints(&[0], &[1])).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    assert!(e.to_string().contains("division by zero"));
    assert!(ops::remainder(&a, &ints(&[0], &[1])).is_err());
    let min = ints(&[i64::MIN], &[1]);
    assert_eq!(
        ops::floor_divide(&min, &ints(&[-1], &[1]))
            .unwrap()
            .to_vec::<i64>(),
        [i64::MIN]
    );
}

#[test]
fn float_floor_divide_and_remainder() {
    let a = floats(&[7.5, -7.5, 7.5, -7.5, 1.0], &[5]);
    let b = floats(&[2.0, 2.0, -2.0, -2.0, 0.0], &[5]);
    let q = ops::floor_divide(&a, &b).unwrap();
    assert_eq!(q.to_vec::<f32>(), [3.0, -4.0, -4.0, 3.0, f32::INFINITY]);
    let r = ops::remainder(&a, &b).unwrap().to_vec::<f32>();
    assert_eq!(&r[..4], &[1.5, 0.5, -0.5, -1.5]);
    assert!(r[4].is_nan());
    // remainder is differentiable (1 for the dividend); floor_divide is not recorded.
    let x = floats(&[5.5, -3.25], &[2]);
    x.set_requires_grad(true).unwrap();
    let two = Tensor::scalar(2.0, DType::F32);
    assert!(ops::floor_divide(&x, &two).unwrap().grad_fn().is_none());
    let y = ops::remainder(&x, &two).unwrap();
    run_backward(&y);
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), [1.0, 1.0]);
}
