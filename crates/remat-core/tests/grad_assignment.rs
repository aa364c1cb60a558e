//! `.grad` assignment: backward never writes into a gradient the user assigned (its first
//! accumulation makes a new tensor, PyTorch's rule), the tensor itself cannot be its own
//! gradient, and a gradient the engine made is still updated in place (the optimizer fast
//! path).
#![allow(clippy::unwrap_used)]

use remat_core::{autograd, ops, DType, Error, Tensor};
use std::sync::Arc;

fn leaf(v: &[f32]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

/// `sum(x * k)` backward: adds `k` to every element of `x.grad`.
fn backward_scaled(x: &Tensor, k: f32) {
    let loss = ops::sum(
        &ops::mul(x, &Tensor::scalar(k as f64, DType::F32)).unwrap(),
        None,
        false,
    )
    .unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
}

#[test]
fn an_assigned_gradient_is_never_written_into() {
    let x = leaf(&[1.0, 2.0]);
    let g = Tensor::from_vec(vec![10.0f32, 20.0], &[2]).unwrap();
    x.set_grad(Some(g.clone())).unwrap();
    backward_scaled(&x, 3.0);
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![13.0, 23.0]);
    assert_eq!(
        g.to_vec::<f32>(),
        vec![10.0, 20.0],
        "the user's tensor changed"
    );
}

#[test]
fn two_parameters_given_one_zeros_tensor_each_get_their_own_sum() {
    let zeros = ops::zeros(&[2], DType::F32, remat_core::Device::Cpu).unwrap();
    let (a, b) = (leaf(&[1.0, 1.0]), leaf(&[1.0, 1.0]));
    a.set_grad(Some(zeros.clone())).unwrap();
    b.set_grad(Some(zeros.clone())).unwrap();
    backward_scaled(&a, 2.0);
    backward_scaled(&b, 5.0);
    assert_eq!(a.grad().unwrap().to_vec::<f32>(), vec![2.0, 2.0]);
    assert_eq!(b.grad().unwrap().to_vec::<f32>(), vec![5.0, 5.0]);
    assert_eq!(zeros.to_vec::<f32>(), vec![0.0, 0.0]);
}

#[test]
fn a_gradient_sharing_the_tensors_storage_leaves_the_tensor_alone() {
    let x = leaf(&[1.0, 2.0]);
    x.set_grad(Some(x.detach())).unwrap();
    backward_scaled(&x, 1.0);
    assert_eq!(x.to_vec::<f32>(), vec![1.0, 2.0], "x itself changed");
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![2.0, 3.0]);
}

#[test]
fn the_tensor_cannot_be_its_own_gradient() {
    let x = leaf(&[1.0, 2.0]);
    let e = x.set_grad(Some(x.clone())).unwrap_err();
    assert!(matches!(e, Error::Graph { .. }), "{e}");
    assert!(e.to_string().contains("can't be the tensor itself"), "{e}");
    assert!(x.grad().is_none());
}

#[test]
fn mismatched_assignments_are_refused() {
    let x = leaf(&[1.0, 2.0]);
    let e = x
        .set_grad(Some(Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap()))
        .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = x
        .set_grad(Some(Tensor::from_vec(vec![1.0f64; 2], &[2]).unwrap()))
        .unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    assert!(x.grad().is_none());
}

#[test]
fn the_engines_own_gradient_is_updated_in_place() {
    let x = leaf(&[1.0, 2.0]);
    backward_scaled(&x, 1.0);
    let first = x.grad().unwrap();
    backward_scaled(&x, 2.0);
    let second = x.grad().unwrap();
    assert!(
        Arc::ptr_eq(first.storage(), second.storage()),
        "a new buffer"
    );
    assert_eq!(second.to_vec::<f32>(), vec![3.0, 3.0]);
    // After a replacing accumulation of an assigned gradient, the engine owns the sum.
    x.set_grad(Some(
        ops::zeros(&[2], DType::F32, remat_core::Device::Cpu).unwrap(),
    ))
    .unwrap();
    backward_scaled(&x, 1.0);
    let owned = x.grad().unwrap();
    backward_scaled(&x, 1.0);
    assert!(Arc::ptr_eq(owned.storage(), x.grad().unwrap().storage()));
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![2.0, 2.0]);
}

#[test]
fn a_backward_gradient_passed_through_is_not_written_into_later() {
    // `x + 0` hands the output gradient through unchanged: the caller's tensor must not
    // become `.grad` and then be accumulated into.
    let x = leaf(&[1.0, 2.0]);
    let v = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    let y = ops::add_scalar(&x, 0.0).unwrap();
    autograd::backward(&[(y, Some(v.clone()))], false).unwrap();
    backward_scaled(&x, 1.0);
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![2.0, 2.0]);
    assert_eq!(
        v.to_vec::<f32>(),
        vec![1.0, 1.0],
        "the caller's gradient changed"
    );
}
