//! `reachable_leaves`: which parameters a backward from a forward's outputs would reach, the
//! walk that finds the parameters a data-parallel step did not use; checkpoint segments
//! point at the leaves their function read.

#![allow(clippy::unwrap_used)]

use remat_core::autograd::reachable_leaves;
use remat_core::{ops, Tensor};

fn leaf(v: &[f32]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

#[test]
fn only_the_leaves_an_output_depends_on_are_reached() {
    let (a, b, unused) = (leaf(&[1.0]), leaf(&[2.0]), leaf(&[3.0]));
    let y = ops::mul(&ops::tanh(&a).unwrap(), &b).unwrap();
    assert_eq!(
        reachable_leaves(
            std::slice::from_ref(&y),
            &[a.clone(), b.clone(), unused.clone()]
        ),
        vec![true, true, false]
    );
    // A leaf root reaches itself; an output that needs no grad reaches nothing.
    assert_eq!(
        reachable_leaves(std::slice::from_ref(&unused), &[a.clone(), unused.clone()]),
        vec![false, true]
    );
    let plain = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert_eq!(reachable_leaves(&[plain], &[a]), vec![false]);
}

#[test]
fn a_checkpoint_segment_reaches_the_leaves_its_function_captured() {
    let (w, unused) = (leaf(&[0.5, -1.0]), leaf(&[1.0, 1.0]));
    let x = Tensor::from_vec(vec![1.0f32, 3.0], &[2]).unwrap();
    let w2 = w.clone();
    let out = remat_core::checkpoint::checkpoint_segment(&[x], move |t| {
        Ok(vec![ops::tanh(&ops::mul(&t[0], &w2)?)?])
    })
    .unwrap();
    assert_eq!(reachable_leaves(&out, &[w, unused]), vec![true, false]);
}
