//! In-place writes recorded in the graph (PyTorch's semantics): writes into tensors a graph
//! made, through views of them, and from operands that require grad. Each case's gradients
//! are checked against float64 central finite differences of the same function (run without
//! grad, where the writes are plain), second-order gradients against the out-of-place
//! formula, and the errors PyTorch raises (a leaf or a view of one written under grad mode,
//! a saved value overwritten) are typed `Error::Graph`.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::ops::{self, Index, IndexItem};
use remat_core::{autograd, no_grad, Error, Tensor};

fn row(i: isize) -> Vec<Index> {
    vec![IndexItem::Int(i).into()]
}

fn grad_vec(t: &Tensor) -> Vec<f64> {
    t.grad().unwrap().to_vec::<f64>()
}

fn backward_sum(t: &Tensor) {
    let loss = ops::sum(t, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
}

/// A copy of `x` made by an op (a graph tensor when `x` requires grad).
fn made(x: &Tensor) -> Tensor {
    ops::scale(x, 1.5).unwrap()
}

#[test]
fn arithmetic_writes_into_graph_tensors_differentiate_through_the_write() {
    // ResNet's `out += identity`, and the other arithmetic in-place ops.
    let (x, z) = (det(&[3, 4], 1), det(&[3, 4], 2));
    check_grad(
        &[x.clone(), z.clone()],
        |t| {
            let y = made(&t[0]);
            y.add_(&t[1], 2.0).unwrap();
            y.sub_(0.5, 1.0).unwrap();
            ops::mul(&y, &y).unwrap()
        },
        1e-6,
    );
    check_grad(
        &[x.clone(), z.clone()],
        |t| {
            let y = made(&t[0]);
            y.mul_(&t[1]).unwrap();
            y.div_(&ops::add_scalar(&ops::exp(&t[1]).unwrap(), 1.0).unwrap())
                .unwrap();
            y.clamp_(Some(-0.3), Some(0.4)).unwrap();
            ops::mul(&y, &t[0]).unwrap()
        },
        1e-6,
    );
}

#[test]
fn the_written_tensor_is_rebased_and_earlier_consumers_keep_the_old_value() {
    let x = leaf(&det(&[4], 3));
    let y = made(&x);
    let before = ops::mul(&y, &y).unwrap(); // its backward reads y
    y.add_(1.0, 1.0).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "add");
    assert!(!y.is_leaf() && y.requires_grad());
    // `before` saved y; y was overwritten: its backward refuses, as PyTorch's does.
    let loss = ops::sum(&before, None, false).unwrap();
    let err = autograd::backward(&[(loss, None)], false).unwrap_err();
    assert!(matches!(err, Error::Graph { .. }), "{err}");
    assert!(err.to_string().contains("modified"), "{err}");
    // A consumer that saved nothing of y (a sum) differentiates the old graph exactly.
    let x = leaf(&det(&[4], 3));
    let y = made(&x);
    let s_old = ops::sum(&y, None, false).unwrap();
    y.mul_(3.0).unwrap();
    let s_new = ops::sum(&y, None, false).unwrap();
    autograd::backward(&[(ops::add(&s_old, &s_new).unwrap(), None)], false).unwrap();
    assert_eq!(grad_vec(&x), vec![1.5 + 4.5; 4]);
}

#[test]
fn writes_from_operands_that_require_grad_make_a_plain_buffer_part_of_the_graph() {
    let (w, v) = (det(&[4], 4), det(&[2, 4], 5));
    check_grad(
        &[w.clone(), v.clone()],
        |t| {
            let buf = ops::zeros(&[3, 4], remat_core::DType::F64, remat_core::Device::Cpu).unwrap();
            buf.setitem(&row(0), &t[0]).unwrap();
            buf.setitem(
                &[IndexItem::Slice {
                    start: Some(1),
                    stop: None,
                    step: 1,
                }
                .into()],
                &ops::tanh(&t[1]).unwrap(),
            )
            .unwrap();
            ops::mul(&buf, &buf).unwrap()
        },
        1e-6,
    );
    let w = leaf(&w);
    let buf = Tensor::from_vec(vec![0.0f64; 4], &[4]).unwrap();
    buf.add_(&w, 1.0).unwrap();
    assert!(
        buf.requires_grad() && !buf.is_leaf(),
        "PyTorch's rebase of a plain leaf"
    );
}

#[test]
fn writes_through_views_are_recorded_on_the_viewed_tensor() {
    let (x, w) = (det(&[3, 4], 6), det(&[4], 7));
    // `h[1] += w`, `h[:, 2] *= w[:3]` and `h.t()[0].clamp_(...)`: the root sees each.
    check_grad(
        &[x.clone(), w.clone()],
        |t| {
            let h = made(&t[0]);
            ops::index(&h, &[IndexItem::Int(1)])
                .unwrap()
                .add_(&t[1], 1.0)
                .unwrap();
            let col = ops::index(
                &h,
                &[
                    IndexItem::Slice {
                        start: None,
                        stop: None,
                        step: 1,
                    },
                    IndexItem::Int(2),
                ],
            )
            .unwrap();
            col.mul_(&ops::narrow(&t[1], 0, 0, 3).unwrap()).unwrap();
            let first_col = ops::index(&ops::t(&h).unwrap(), &[IndexItem::Int(0)]).unwrap();
            first_col.clamp_(Some(-0.5), None).unwrap();
            ops::mul(&h, &ops::sum(&col, None, false).unwrap()).unwrap()
        },
        1e-6,
    );
}

#[test]
fn a_view_made_before_another_view_was_written_sees_the_write() {
    // PyTorch's view replay: `a` overlaps the written row, so its graph is regenerated.
    let x = det(&[3, 4], 8);
    check_grad(
        std::slice::from_ref(&x),
        |t| {
            let h = made(&t[0]);
            let a = ops::narrow(&h, 0, 0, 2).unwrap();
            let b = ops::index(&h, &[IndexItem::Int(1)]).unwrap();
            b.mul_(&b).unwrap();
            ops::mul(&a, &a).unwrap()
        },
        1e-6,
    );
    let x = leaf(&x);
    let h = made(&x);
    let a = ops::narrow(&h, 0, 0, 2).unwrap();
    ops::index(&h, &[IndexItem::Int(1)])
        .unwrap()
        .mul_(3.0)
        .unwrap();
    backward_sum(&a);
    let mut want = vec![1.5; 4];
    want.extend([4.5; 4]);
    want.extend([0.0; 4]);
    assert_eq!(grad_vec(&x), want);
}

#[test]
fn assignment_through_integer_and_mask_indices_is_recorded_last_write_winning() {
    let (x, v) = (det(&[4, 3], 9), det(&[3, 3], 10));
    check_grad(
        &[x.clone(), v.clone()],
        |t| {
            let h = made(&t[0]);
            let rows = Tensor::from_vec(vec![2i64, 0, 2], &[3]).unwrap();
            h.setitem(&[Index::Tensor(rows)], &t[1]).unwrap();
            let mask = ops::gt(&h, &Tensor::scalar(0.5, remat_core::DType::F64)).unwrap();
            h.setitem(&[Index::Tensor(mask)], 0.25).unwrap();
            ops::mul(&h, &h).unwrap()
        },
        1e-6,
    );
    // Row 2 is named twice: only the last value row gets its gradient.
    let x = leaf(&x);
    let v = leaf(&v);
    let h = made(&x);
    let rows = Tensor::from_vec(vec![2i64, 0, 2], &[3]).unwrap();
    h.setitem(&[Index::Tensor(rows)], &v).unwrap();
    backward_sum(&h);
    let g = grad_vec(&v);
    assert_eq!(&g[..3], &[0.0; 3]);
    assert_eq!(&g[3..], &[1.0; 6]);
    let g = grad_vec(&x);
    assert_eq!(
        g,
        [0.0, 0.0, 0.0, 1.5, 1.5, 1.5, 0.0, 0.0, 0.0, 1.5, 1.5, 1.5]
    );
}

#[test]
fn fills_keep_the_tensor_in_the_graph_with_a_zero_gradient() {
    let x = leaf(&det(&[2, 3], 11));
    for fill in [
        (|y: &Tensor| y.zero_().map(|_| ())) as fn(&Tensor) -> remat_core::Result<()>,
        |y| y.fill_(2.0).map(|_| ()),
        |y| y.normal_(0.0, 1.0).map(|_| ()),
        |y| y.uniform_(0.0, 1.0).map(|_| ()),
        |y| y.copy_(&det(&[3], 12)).map(|_| ()),
    ] {
        let y = made(&x);
        fill(&y).unwrap();
        assert!(y.requires_grad() && !y.is_leaf());
        backward_sum(&y);
        assert_eq!(grad_vec(&x), vec![0.0; 6]);
    }
    // A value that requires grad gets the gradient of every element it fills.
    let v = leaf(&Tensor::scalar(0.5, remat_core::DType::F64));
    let y = made(&x);
    y.fill_(&v).unwrap();
    backward_sum(&y);
    assert_eq!(grad_vec(&v), vec![6.0]);
}

#[test]
fn second_order_gradients_flow_through_recorded_writes() {
    // y = 1.5 x; y *= x  =>  y = 1.5 x^2, dy/dx = 3 x, d2y/dx2 = 3.
    let x = leaf(&det(&[5], 13));
    let y = made(&x);
    y.mul_(&x).unwrap();
    let s = ops::sum(&y, None, false).unwrap();
    let opts = autograd::GradOptions {
        create_graph: true,
        ..Default::default()
    };
    let g = autograd::grad_with(&[s], std::slice::from_ref(&x), None, opts).unwrap();
    let g = g[0].clone().unwrap();
    let want: Vec<f64> = x.to_vec::<f64>().iter().map(|v| 3.0 * v).collect();
    for (a, b) in g.to_vec::<f64>().iter().zip(&want) {
        assert!((a - b).abs() < 1e-12);
    }
    let gs = ops::sum(&g, None, false).unwrap();
    let gg = autograd::grad(&[gs], std::slice::from_ref(&x), None, false).unwrap();
    assert_eq!(gg[0].clone().unwrap().to_vec::<f64>(), vec![3.0; 5]);
}

#[test]
fn leaves_and_views_of_leaves_that_require_grad_are_still_refused() {
    let w = leaf(&det(&[2, 3], 14));
    let e = w.add_(1.0, 1.0).unwrap_err();
    assert!(e.to_string().contains("leaf Variable"), "{e}");
    let r = ops::index(&w, &[IndexItem::Int(0)]).unwrap();
    let e = r.mul_(2.0).unwrap_err();
    assert!(matches!(e, Error::Graph { .. }), "{e}");
    assert!(e.to_string().contains("view of a leaf"), "{e}");
    assert_eq!(w.version(), 0);
    // Under no_grad both are plain writes.
    let _g = no_grad();
    r.mul_(2.0).unwrap();
    assert!(w.is_leaf() && w.requires_grad());
}

#[test]
fn plain_writes_under_no_grad_leave_the_graph_alone() {
    let x = leaf(&det(&[4], 15));
    let y = made(&x);
    let node = y.grad_fn().unwrap();
    {
        let _g = no_grad();
        y.add_(1.0, 1.0).unwrap();
    }
    assert!(std::sync::Arc::ptr_eq(&y.grad_fn().unwrap(), &node));
    backward_sum(&y);
    assert_eq!(grad_vec(&x), vec![1.5; 4]);
}
