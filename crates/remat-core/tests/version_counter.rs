//! The version counter: every in-place write (the in-place ops, optimizer steps, gradient
//! accumulation) bumps the storage's counter, shared by its views; a tensor a graph saved
//! and that was written since makes backward fail with `Error::Graph` naming the op, dtype,
//! shape and versions, never a wrong gradient. Checkpoints too: a recipe, a segment's input
//! or a parameter captured by a segment written between forward and backward is caught.

#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::checkpoint::{checkpoint, checkpoint_scope, checkpoint_segment};
use remat_core::ops::{self, IndexItem};
use remat_core::{autograd, no_grad, optim, DType, Device, Error, Tensor};

fn backward(loss: &Tensor) -> remat_core::Result<()> {
    autograd::backward(&[(loss.clone(), None)], false)
}

fn sum(t: &Tensor) -> Tensor {
    ops::sum(t, None, false).unwrap()
}

fn graph_error(r: remat_core::Result<()>) -> String {
    match r {
        Err(e @ Error::Graph { .. }) => e.to_string(),
        other => panic!("expected a GraphError, got {other:?}"),
    }
}

#[test]
fn views_share_one_counter_and_fresh_tensors_start_at_zero() {
    let x = det(&[2, 3], 1);
    let row = ops::index(&x, &[IndexItem::Int(1)]).unwrap();
    let d = x.detach();
    assert_eq!((x.version(), row.version()), (0, 0));
    row.add_(1.0, 1.0).unwrap();
    d.mul_(2.0).unwrap();
    assert_eq!((x.version(), row.version(), d.version()), (2, 2, 2));
    assert_eq!(ops::exp(&x).unwrap().version(), 0);
}

#[test]
fn a_saved_output_written_in_place_fails_at_backward() {
    // exp saves its output; writing it (under no_grad: allowed) invalidates the graph.
    let x = leaf(&det(&[3], 2));
    let y = ops::exp(&x).unwrap();
    let loss = sum(&ops::mul(&y, &y).unwrap());
    {
        let _g = no_grad();
        y.mul_(2.0).unwrap();
    }
    let msg = graph_error(backward(&loss));
    assert!(msg.contains("modified by an inplace operation"), "{msg}");
    assert!(msg.contains("float64 tensor of shape (3,)"), "{msg}");
    assert!(msg.contains("version 0, now at version 1"), "{msg}");
    assert!(
        msg.contains("mul saved"),
        "names the op that saved it: {msg}"
    );
    assert!(x.grad().is_none(), "no gradient was accumulated");
}

#[test]
fn a_saved_input_written_through_a_view_fails_at_backward() {
    let x = det(&[2, 3], 3);
    let w = leaf(&det(&[2, 3], 4));
    let a = ops::mul(&x, &w).unwrap(); // saves x (for w's gradient)
    ops::index(&x, &[IndexItem::Int(0)])
        .unwrap()
        .add_(1.0, 1.0)
        .unwrap();
    let msg = graph_error(backward(&sum(&a)));
    assert!(
        msg.contains("mul saved a float64 tensor of shape (2, 3)"),
        "{msg}"
    );
}

#[test]
fn writes_nothing_saved_leave_the_graph_valid() {
    let x = det(&[3], 5);
    let w = leaf(&det(&[3], 6));
    let a = ops::add(&x, &w).unwrap(); // add saves nothing
    x.mul_(10.0).unwrap();
    backward(&sum(&ops::scale(&a, 3.0).unwrap())).unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f64>(), vec![3.0; 3]);
}

#[test]
fn an_optimizer_step_between_forward_and_backward_is_caught() {
    let w = leaf(&det(&[3, 3], 7));
    let x = det(&[2, 3], 8);
    let loss = sum(&ops::matmul(&x, &w).unwrap().tanh().unwrap());
    autograd::backward(&[(loss.clone(), None)], true).unwrap();
    let g = w.grad().unwrap();
    optim::sgd_step(&w, &g, None, true, 0.1, 0.0, 0.0, 0.0, false).unwrap();
    assert_eq!(w.version(), 1);
    let msg = graph_error(backward(&loss));
    assert!(msg.contains("matmul saved"), "{msg}");
    // A fresh forward after the step is fine (the usual loop).
    let loss = sum(&ops::matmul(&x, &w).unwrap().tanh().unwrap());
    backward(&loss).unwrap();
}

#[test]
fn gradient_accumulation_bumps_the_gradient() {
    let w = leaf(&det(&[4], 9));
    backward(&sum(&ops::mul(&w, &w).unwrap())).unwrap();
    let g = w.grad().unwrap();
    let v = g.version();
    backward(&sum(&ops::mul(&w, &w).unwrap())).unwrap();
    assert!(w.grad().unwrap().same(&g), "accumulated in place");
    assert_eq!(g.version(), v + 1);
}

#[test]
fn a_checkpointed_tensor_written_in_place_is_caught_or_replayed_as_it_was() {
    let x = leaf(&det(&[3], 10));
    let w = det(&[3], 11);
    // Still alive when backward reads it, and written since mul saved it: an error.
    let y = ops::exp(&x).unwrap();
    let yc = checkpoint(&y).unwrap();
    let z = ops::mul(&yc, &w).unwrap(); // saves yc: a recipe
    {
        let _g = no_grad();
        y.mul_(2.0).unwrap();
    }
    let msg = graph_error(backward(&sum(&z)));
    assert!(
        msg.contains("mul saved a float64 tensor of shape (3,) at version 0"),
        "{msg}"
    );
    drop((y, yc));
    // Freed before backward: the recipe replays the value mul saw, so the gradient is the
    // plain run's (w * exp(x)), not one of the written values.
    x.set_grad(None).unwrap();
    let y = ops::exp(&x).unwrap();
    let yc = checkpoint(&y).unwrap();
    let z = ops::mul(&yc, &w).unwrap();
    {
        let _g = no_grad();
        y.mul_(2.0).unwrap();
    }
    drop((y, yc));
    backward(&sum(&z)).unwrap();
    let want: Vec<f64> = x
        .to_vec::<f64>()
        .iter()
        .zip(w.to_vec::<f64>())
        .map(|(a, b)| a.exp() * b)
        .collect();
    let got = x.grad().unwrap().to_vec::<f64>();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
    // Checkpointing a tensor written since it was made keeps its data instead of a recipe;
    // exp's own saved output was written, so exp's backward refuses.
    let y = ops::exp(&x).unwrap();
    {
        let _g = no_grad();
        y.add_(1.0, 1.0).unwrap();
    }
    let yc = checkpoint(&y).unwrap();
    let z = ops::mul(&yc, &w).unwrap();
    drop((y, yc));
    let msg = graph_error(backward(&sum(&z)));
    assert!(msg.contains("exp saved"), "{msg}");
}

#[test]
fn a_checkpoint_input_written_before_the_recompute_is_caught() {
    // The recipe of checkpoint(tanh(h)) keeps h; writing h makes the replay wrong.
    let x = leaf(&det(&[3], 12));
    let h = ops::mul(&x, &Tensor::scalar(2.0, DType::F64)).unwrap();
    let t = ops::tanh(&h).unwrap();
    let tc = checkpoint(&t).unwrap();
    let z = ops::mul(&tc, &tc).unwrap();
    drop((t, tc));
    {
        let _g = no_grad();
        h.add_(1.0, 1.0).unwrap();
    }
    let msg = graph_error(backward(&sum(&z)));
    assert!(msg.contains("tanh saved"), "{msg}");
}

#[test]
fn a_segment_input_written_between_forward_and_backward_is_caught() {
    let x = det(&[4], 13);
    let w = leaf(&det(&[4], 14));
    let w2 = w.clone();
    let out = checkpoint_segment(std::slice::from_ref(&x), move |t| {
        Ok(vec![ops::tanh(&ops::mul(&t[0], &w2)?)?])
    })
    .unwrap();
    let loss = sum(&out[0]);
    x.fill_(0.5).unwrap();
    let msg = graph_error(backward(&loss));
    assert!(msg.contains("checkpoint segment"), "{msg}");
    assert!(msg.contains("float64 tensor of shape (4,)"), "{msg}");
}

#[test]
fn a_parameter_captured_by_a_segment_written_before_the_recompute_is_caught() {
    let x = leaf(&det(&[4], 15));
    let w = leaf(&det(&[4], 16));
    let w2 = w.clone();
    let out = checkpoint_segment(std::slice::from_ref(&x), move |t| {
        Ok(vec![ops::tanh(&ops::mul(&t[0], &w2)?)?])
    })
    .unwrap();
    let loss = sum(&out[0]);
    {
        let _g = no_grad();
        w.sub_(0.1, 1.0).unwrap();
    }
    let msg = graph_error(backward(&loss));
    assert!(msg.contains("mul (in checkpoint segment"), "{msg}");
}

#[test]
fn training_with_checkpoints_and_in_place_updates_still_works() {
    let w = leaf(&det(&[4, 4], 17));
    let x = det(&[2, 4], 18);
    let mut last = f64::INFINITY;
    for _ in 0..5 {
        let w2 = w.clone();
        let out = checkpoint_segment(std::slice::from_ref(&x), move |t| {
            Ok(vec![ops::tanh(&ops::matmul(&t[0], &w2)?)?])
        })
        .unwrap();
        let loss = sum(&ops::mul(&out[0], &out[0]).unwrap());
        let l = loss.item().unwrap();
        assert!(l <= last + 1e-12, "the loss goes down: {l} after {last}");
        last = l;
        backward(&loss).unwrap();
        let _g = no_grad();
        let g = w.grad().unwrap();
        w.sub_(&g, 0.05).unwrap();
        g.zero_().unwrap();
    }
}

#[test]
fn random_draws_in_a_scope_written_in_place_keep_their_data() {
    // A draw in a scope has a recipe (replay the generator); after a write, consumers must
    // keep the written data instead of replaying the draw.
    let x = leaf(&det(&[5], 19));
    let (y, want) = {
        let _s = checkpoint_scope();
        let noise = ops::randn(&[5], DType::F64, Device::Cpu).unwrap();
        noise.mul_(0.0).unwrap();
        noise.add_(3.0, 1.0).unwrap();
        let y = ops::mul(&x, &noise).unwrap();
        (y, vec![3.0; 5])
    };
    backward(&sum(&y)).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), want);
}

/// A storage knows while a graph holds it for backward (so the bindings can hand out only
/// read-only NumPy views of it): from the saving op until backward frees the graph, or until
/// the graph is dropped unused; a checkpoint segment's stored input counts too.
#[test]
fn storages_know_while_a_graph_saves_them() {
    let x = det(&[2, 3], 1); // no grad, but matmul saves it for w's gradient
    let w = leaf(&det(&[3, 2], 2));
    assert!(!x.storage().saved_for_backward());
    let y = ops::matmul(&x, &w).unwrap();
    assert!(x.storage().saved_for_backward());
    backward(&sum(&y)).unwrap();
    assert!(!x.storage().saved_for_backward());
    let y = ops::matmul(&x, &w).unwrap();
    assert!(x.storage().saved_for_backward());
    drop(y);
    assert!(!x.storage().saved_for_backward());
    let seg = checkpoint_segment(std::slice::from_ref(&w), |t| Ok(vec![t[0].exp()?])).unwrap();
    assert!(w.storage().saved_for_backward());
    drop(seg);
    assert!(!w.storage().saved_for_backward());
}
