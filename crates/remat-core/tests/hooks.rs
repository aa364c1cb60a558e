//! Tensor gradient hooks and `retain_grad`: hooks see the summed gradient of their tensor,
//! may replace it, run in registration order with `retain_grad` last, apply to `grad()`
//! results, and are removed by their handle; a failing hook fails backward cleanly.

#![allow(clippy::unwrap_used)]

use remat_core::{autograd, ops, Error, Tensor};
use std::sync::{Arc, Mutex};

fn leaf(v: &[f32], shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), shape).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn backward(loss: &Tensor) -> remat_core::Result<()> {
    autograd::backward(&[(loss.clone(), None)], false)
}

fn sum(t: &Tensor) -> Tensor {
    ops::sum(t, None, false).unwrap()
}

#[test]
fn hook_on_a_non_leaf_sees_and_replaces_its_gradient() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = ops::scale(&x, 3.0).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    y.register_hook(Arc::new(move |g: &Tensor| {
        s.lock().unwrap().push(g.to_vec::<f32>());
        Ok(Some(ops::scale(g, 2.0)?))
    }))
    .unwrap();
    backward(&sum(&ops::mul(&y, &y).unwrap())).unwrap();
    assert_eq!(seen.lock().unwrap()[0], vec![6.0, 12.0]);
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![36.0, 72.0]);
}

#[test]
fn leaf_hook_runs_before_accumulation_and_remove_unregisters() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let h = x
        .register_hook(Arc::new(|g: &Tensor| Ok(Some(ops::scale(g, -1.0)?))))
        .unwrap();
    backward(&sum(&x)).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![-1.0, -1.0]);
    h.remove();
    x.set_grad(None).unwrap();
    backward(&sum(&x)).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![1.0, 1.0]);
}

#[test]
fn retain_grad_runs_after_the_other_hooks_and_accumulates() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = ops::scale(&x, 2.0).unwrap();
    y.retain_grad().unwrap();
    y.register_hook(Arc::new(|g: &Tensor| Ok(Some(ops::scale(g, 10.0)?))))
        .unwrap();
    assert!(y.retains_grad());
    let loss = sum(&y);
    autograd::backward(&[(loss.clone(), None)], true).unwrap();
    assert_eq!(y.grad().unwrap().to_vec::<f32>(), vec![10.0, 10.0]);
    backward(&loss).unwrap();
    assert_eq!(y.grad().unwrap().to_vec::<f32>(), vec![20.0, 20.0]);
}

#[test]
fn hooks_need_a_tensor_that_requires_grad_and_errors_propagate() {
    let c = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert!(matches!(
        c.register_hook(Arc::new(|_: &Tensor| Ok(None))),
        Err(Error::Graph { .. })
    ));
    let x = leaf(&[1.0], &[1]);
    x.register_hook(Arc::new(|_: &Tensor| Err(Error::value("hook", "refused"))))
        .unwrap();
    let err = backward(&sum(&ops::scale(&x, 2.0).unwrap())).unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
}
