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

/// A post-accumulate hook counting its calls and recording the leaf's `.grad` it saw.
fn counting_post_hook(t: &Tensor) -> (Arc<Mutex<Vec<Vec<f32>>>>, autograd::HookHandle) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let h = t
        .register_post_accumulate_grad_hook(Arc::new(move |leaf: &Tensor| {
            s.lock().unwrap().push(leaf.grad().unwrap().to_vec::<f32>());
            Ok(())
        }))
        .unwrap();
    (seen, h)
}

#[test]
fn post_accumulate_hook_sees_the_updated_grad_once_per_backward() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let (seen, h) = counting_post_hook(&x);
    // x is used twice: the engine sums both gradients, then accumulates once.
    let y = ops::add(&ops::scale(&x, 2.0).unwrap(), &ops::mul(&x, &x).unwrap()).unwrap();
    backward(&sum(&y)).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![vec![4.0, 6.0]]);
    backward(&sum(&ops::scale(&x, 1.0).unwrap())).unwrap();
    assert_eq!(seen.lock().unwrap()[1], vec![5.0, 7.0]);
    h.remove();
    backward(&sum(&x)).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn post_accumulate_hook_runs_once_under_a_checkpoint_segment_and_not_for_grad() {
    let w = leaf(&[0.5, -1.0], &[2]);
    let (seen, _h) = counting_post_hook(&w);
    let x = Tensor::from_vec(vec![1.0f32, 3.0], &[2]).unwrap();
    let w2 = w.clone();
    let out = remat_core::checkpoint::checkpoint_segment(&[x], move |t| {
        let h = ops::tanh(&ops::mul(&t[0], &w2)?)?;
        Ok(vec![ops::mul(&h, &w2)?])
    })
    .unwrap();
    backward(&sum(&out[0])).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    // `grad` accumulates nothing, so the hook does not run.
    let y = sum(&ops::scale(&w, 2.0).unwrap());
    autograd::grad(&[y], std::slice::from_ref(&w), None, false).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn post_accumulate_hooks_need_a_leaf_that_requires_grad_and_errors_propagate() {
    let plain = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let hook: autograd::PostAccumulateHook = Arc::new(|_| Ok(()));
    assert!(matches!(
        plain.register_post_accumulate_grad_hook(hook.clone()),
        Err(Error::Graph { .. })
    ));
    let x = leaf(&[1.0], &[1]);
    let y = ops::scale(&x, 2.0).unwrap();
    assert!(matches!(
        y.register_post_accumulate_grad_hook(hook),
        Err(Error::Graph { .. })
    ));
    x.register_post_accumulate_grad_hook(Arc::new(|_| Err(Error::graph("hook", "refused"))))
        .unwrap();
    assert!(backward(&sum(&y)).is_err());
}
