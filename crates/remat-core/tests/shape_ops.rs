//! Shape and indexing ops: transpose / permute / `.T`, basic indexing, concat / stack,
//! where, and differentiable dtype conversion. Forward values against hand-computed
//! expectations, views sharing storage, non-contiguous inputs, float64 finite-difference
//! gradients, and typed errors (never panics) for bad arguments.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::ops::{self, IndexItem};
use remat_core::{DType, Error, Tensor};
use std::sync::Arc;

/// `0, 1, ..., n-1` as float64 with `shape`.
fn arange(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f64).collect::<Vec<_>>(), shape).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>()
}

fn shares(a: &Tensor, b: &Tensor) -> bool {
    Arc::ptr_eq(a.storage(), b.storage())
}

fn sl(start: Option<isize>, stop: Option<isize>, step: isize) -> IndexItem {
    IndexItem::Slice { start, stop, step }
}

fn full() -> IndexItem {
    sl(None, None, 1)
}

fn is_shape<T: std::fmt::Debug>(r: remat_core::Result<T>) -> String {
    match r {
        Err(Error::Shape { message, .. }) => message,
        other => panic!("expected a shape error, got {other:?}"),
    }
}

// --- transpose / permute / T -----------------------------------------------------------------

#[test]
fn transpose_permute_and_t_are_views_with_numpy_values() {
    let x = arange(&[2, 3]);
    let t = ops::transpose(&x, 0, -1).unwrap();
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(vals(&t), vec![0., 3., 1., 4., 2., 5.]);
    assert!(shares(&x, &t));
    assert!(!t.is_contiguous());

    let y = arange(&[2, 3, 4]);
    let p = ops::permute(&y, &[2, 0, -2]).unwrap();
    assert_eq!(p.shape(), &[4, 2, 3]);
    assert!(shares(&y, &p));
    // p[k, i, j] == y[i, j, k]
    let (pv, yv) = (vals(&p), vals(&y));
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                assert_eq!(pv[k * 6 + i * 3 + j], yv[i * 12 + j * 4 + k]);
            }
        }
    }
    // `t()` is PyTorch's: at most 2 dimensions.
    let e = y.t().unwrap_err().to_string();
    assert!(e.contains("t()") && e.contains("3D"), "{e}");
    let r = y.reverse_axes().unwrap();
    assert_eq!(r.shape(), &[4, 3, 2]);
    assert!(shares(&y, &r));
    assert_eq!(vals(&r)[1], yv[12]); // r[0, 0, 1] == y[1, 0, 0]
                                     // Transposing twice is the original layout again.
    let back = r.reverse_axes().unwrap();
    assert_eq!(vals(&back), yv);
    assert!(back.is_contiguous());
    // 0-d and 1-d: `.T` is the identity.
    assert_eq!(vals(&arange(&[3]).t().unwrap()), vec![0., 1., 2.]);
    let s = Tensor::scalar(2.0, DType::F32);
    assert_eq!(s.t().unwrap().shape(), &[] as &[usize]);
    // float32 works too.
    let f = ops::to_dtype(&x, DType::F32).unwrap();
    let ft = f.transpose(1, 0).unwrap();
    assert_eq!(ft.dtype(), DType::F32);
    assert_eq!(ft.to_vec::<f32>(), vec![0., 3., 1., 4., 2., 5.]);
}

#[test]
fn transpose_permute_and_t_differentiate() {
    let a = det(&[2, 3, 4], 1);
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::transpose(&t[0], 0, 2).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::permute(&t[0], &[1, 2, 0]).unwrap(),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&a),
        |t| ops::reverse_axes(&t[0]).unwrap(),
        1e-6,
    );
    // A downstream op that consumes the non-contiguous view.
    let b = det(&[3, 5], 2);
    check_grad(
        &[det(&[3, 2], 3), b],
        |t| ops::matmul(&t[0].t().unwrap(), &t[1].transpose(0, 0).unwrap()).unwrap(),
        1e-6,
    );
}

#[test]
fn transpose_and_permute_errors_are_shape_errors() {
    let x = arange(&[2, 3]);
    is_shape(ops::transpose(&x, 0, 2));
    is_shape(ops::transpose(&x, -3, 0));
    is_shape(ops::transpose(&Tensor::scalar(1.0, DType::F64), 0, 0));
    let m = is_shape(ops::permute(&x, &[0]));
    assert!(m.contains("(2, 3)"), "{m}");
    is_shape(ops::permute(&x, &[0, 0]));
    is_shape(ops::permute(&x, &[0, -1, 1]));
    is_shape(ops::permute(&x, &[0, 5]));
}

// --- index -----------------------------------------------------------------------------------

#[test]
fn index_follows_numpy_and_returns_views() {
    let x = arange(&[2, 3, 4]);
    // x[1]
    let a = x.index(&[IndexItem::Int(1)]).unwrap();
    assert_eq!(a.shape(), &[3, 4]);
    assert_eq!(vals(&a), (12..24).map(|v| v as f64).collect::<Vec<_>>());
    assert!(shares(&x, &a));
    // x[-1, 1:3, ::2]
    let b = x
        .index(&[
            IndexItem::Int(-1),
            sl(Some(1), Some(3), 1),
            sl(None, None, 2),
        ])
        .unwrap();
    assert_eq!(b.shape(), &[2, 2]);
    assert_eq!(vals(&b), vec![16., 18., 20., 22.]);
    assert!(shares(&x, &b));
    // x[..., 1] and x[:, None, 2]
    let c = x.index(&[IndexItem::Ellipsis, IndexItem::Int(1)]).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(vals(&c), vec![1., 5., 9., 13., 17., 21.]);
    let d = x
        .index(&[full(), IndexItem::NewAxis, IndexItem::Int(2)])
        .unwrap();
    assert_eq!(d.shape(), &[2, 1, 4]);
    assert_eq!(vals(&d), vec![8., 9., 10., 11., 20., 21., 22., 23.]);
    // x[None, ..., None] and x[...] keep everything.
    let e = x
        .index(&[IndexItem::NewAxis, IndexItem::Ellipsis, IndexItem::NewAxis])
        .unwrap();
    assert_eq!(e.shape(), &[1, 2, 3, 4, 1]);
    assert_eq!(vals(&e), vals(&x));
    assert_eq!(x.index(&[IndexItem::Ellipsis]).unwrap().shape(), &[2, 3, 4]);
    assert_eq!(x.index(&[]).unwrap().shape(), &[2, 3, 4]);
    // Every int: a 0-d view.
    let s = x
        .index(&[IndexItem::Int(1), IndexItem::Int(2), IndexItem::Int(-1)])
        .unwrap();
    assert_eq!(s.shape(), &[] as &[usize]);
    assert_eq!(s.item().unwrap(), 23.0);
    // Python clamping: x[-10:10, 5:, 1:-1:5]
    let f = x
        .index(&[sl(Some(-10), Some(10), 1), sl(Some(5), None, 1)])
        .unwrap();
    assert_eq!(f.shape(), &[2, 0, 4]);
    assert!(vals(&f).is_empty());
    let g = x
        .index(&[
            sl(Some(5), None, 1),
            sl(Some(5), None, 1),
            sl(Some(9), None, 1),
        ])
        .unwrap();
    assert_eq!(g.shape(), &[0, 0, 0]);
    assert!(vals(&g).is_empty());
    let h = x
        .index(&[full(), full(), sl(Some(1), Some(-1), 5)])
        .unwrap();
    assert_eq!(h.shape(), &[2, 3, 1]);
    assert_eq!(vals(&h), vec![1., 5., 9., 13., 17., 21.]);
    // A 0-d tensor indexed with `...` / None.
    let z = Tensor::scalar(4.0, DType::F32);
    assert_eq!(z.index(&[IndexItem::NewAxis]).unwrap().shape(), &[1]);
    assert_eq!(
        z.index(&[IndexItem::Ellipsis]).unwrap().item().unwrap(),
        4.0
    );
}

#[test]
fn index_of_non_contiguous_views() {
    let x = arange(&[3, 4]);
    let t = x.t().unwrap(); // (4, 3): t[i, j] = x[j, i] = 4j + i
    let r = t
        .index(&[sl(Some(1), None, 2), IndexItem::Int(-1)])
        .unwrap();
    assert_eq!(r.shape(), &[2]);
    assert_eq!(vals(&r), vec![9., 11.]);
    assert!(shares(&x, &r));
    // Slicing a slice.
    let s = x.index(&[full(), sl(Some(1), None, 1)]).unwrap();
    let s2 = s.index(&[sl(None, None, 2), sl(None, None, 2)]).unwrap();
    assert_eq!(vals(&s2), vec![1., 3., 9., 11.]);
    assert!(shares(&x, &s2));
    // float32 input
    let f = ops::to_dtype(&x, DType::F32).unwrap();
    let fi = f.index(&[IndexItem::Int(2)]).unwrap();
    assert_eq!(fi.to_vec::<f32>(), vec![8., 9., 10., 11.]);
}

#[test]
fn index_differentiates() {
    let a = det(&[3, 4, 5], 4);
    let cases: Vec<Vec<IndexItem>> = vec![
        vec![IndexItem::Int(1)],
        vec![
            IndexItem::Int(-1),
            sl(Some(1), Some(3), 1),
            sl(None, None, 2),
        ],
        vec![
            IndexItem::Ellipsis,
            IndexItem::NewAxis,
            sl(Some(1), None, 3),
        ],
        vec![full(), IndexItem::Int(2), IndexItem::Int(0)],
        vec![sl(Some(7), None, 1)],
    ];
    for items in cases {
        check_grad(
            std::slice::from_ref(&a),
            |t| t[0].index(&items).unwrap(),
            1e-6,
        );
    }
    // Indexing a transposed view, and two indexes of one tensor whose gradients add up.
    check_grad(
        std::slice::from_ref(&a),
        |t| {
            t[0].transpose(0, 2)
                .unwrap()
                .index(&[sl(Some(1), None, 2), IndexItem::Int(1)])
                .unwrap()
        },
        1e-6,
    );
    check_grad(
        &[det(&[4, 3], 5)],
        |t| {
            let top = t[0].index(&[sl(None, Some(2), 1)]).unwrap();
            let bottom = t[0].index(&[sl(Some(1), Some(3), 1)]).unwrap();
            ops::mul(&top, &bottom).unwrap()
        },
        1e-6,
    );
}

#[test]
fn index_errors_are_typed() {
    let x = arange(&[3, 2]);
    let m = is_shape(x.index(&[IndexItem::Int(5)]));
    assert_eq!(m, "index 5 is out of bounds for axis 0 with size 3");
    let m = is_shape(x.index(&[full(), IndexItem::Int(-3)]));
    assert!(
        m.contains("index -3 is out of bounds for axis 1 with size 2"),
        "{m}"
    );
    let m = is_shape(x.index(&[IndexItem::Int(0), IndexItem::Int(0), IndexItem::Int(0)]));
    assert!(
        m.contains("too many indices") && m.contains("(3, 2)"),
        "{m}"
    );
    is_shape(x.index(&[IndexItem::Ellipsis, IndexItem::Ellipsis]));
    is_shape(Tensor::scalar(1.0, DType::F64).index(&[IndexItem::Int(0)]));
    for step in [0, -1] {
        match x.index(&[sl(None, None, step)]) {
            Err(Error::Value { message, .. }) => {
                assert!(message.contains("unsupported"), "{message}")
            }
            other => panic!("expected a value error, got {other:?}"),
        }
    }
}

// --- concat / stack --------------------------------------------------------------------------

#[test]
fn concat_and_stack_values() {
    let a = arange(&[2, 2]);
    let b = ops::add(&arange(&[2, 3]), &Tensor::scalar(10.0, DType::F64)).unwrap();
    let c = ops::concat(&[a.clone(), b.clone()], -1).unwrap();
    assert_eq!(c.shape(), &[2, 5]);
    assert_eq!(vals(&c), vec![0., 1., 10., 11., 12., 2., 3., 13., 14., 15.]);
    assert!(c.is_contiguous());
    let r = ops::concat(&[a.clone(), a.clone(), a.clone()], 0).unwrap();
    assert_eq!(r.shape(), &[6, 2]);
    assert_eq!(vals(&r)[4..8], [0., 1., 2., 3.]);
    // Single input and empty inputs.
    assert_eq!(
        vals(&ops::concat(std::slice::from_ref(&a), 1).unwrap()),
        vals(&a)
    );
    let e = arange(&[2, 0]);
    assert_eq!(
        ops::concat(&[e.clone(), a.clone()], 1).unwrap().shape(),
        &[2, 2]
    );

    let s = ops::stack(&[a.clone(), a.clone()], 0).unwrap();
    assert_eq!(s.shape(), &[2, 2, 2]);
    assert_eq!(vals(&s), vec![0., 1., 2., 3., 0., 1., 2., 3.]);
    let s = ops::stack(&[a.clone(), ops::mul(&a, &a).unwrap()], 2).unwrap();
    assert_eq!(s.shape(), &[2, 2, 2]);
    assert_eq!(vals(&s), vec![0., 0., 1., 1., 2., 4., 3., 9.]);
    let s = ops::stack(&[a.clone(), a.clone(), a.clone()], -2).unwrap();
    assert_eq!(s.shape(), &[2, 3, 2]);
    // Scalars stack into a vector.
    let x = Tensor::scalar(1.0, DType::F32);
    let y = Tensor::scalar(2.0, DType::F32);
    let v = ops::stack(&[x, y], 0).unwrap();
    assert_eq!(v.shape(), &[2]);
    assert_eq!(v.to_vec::<f32>(), vec![1., 2.]);
}

#[test]
fn concat_and_stack_of_views() {
    let x = arange(&[3, 2]);
    let t = x.t().unwrap(); // (2, 3) = [[0, 2, 4], [1, 3, 5]]
    let sl1 = x.index(&[sl(Some(1), None, 1)]).unwrap(); // (2, 2) = [[2, 3], [4, 5]]
    let c = ops::concat(&[t.clone(), sl1], 1).unwrap();
    assert_eq!(vals(&c), vec![0., 2., 4., 2., 3., 1., 3., 5., 4., 5.]);
    let s = ops::stack(&[t.clone(), t], 1).unwrap();
    assert_eq!(s.shape(), &[2, 2, 3]);
    assert_eq!(
        vals(&s),
        vec![0., 2., 4., 0., 2., 4., 1., 3., 5., 1., 3., 5.]
    );
}

#[test]
fn concat_and_stack_differentiate() {
    let (a, b, c) = (det(&[2, 3], 1), det(&[2, 1], 2), det(&[2, 4], 3));
    check_grad(
        &[a.clone(), b.clone(), c.clone()],
        |t| ops::concat(t, 1).unwrap(),
        1e-6,
    );
    check_grad(
        &[det(&[1, 3], 4), a.clone()],
        |t| ops::concat(t, -2).unwrap(),
        1e-6,
    );
    for axis in [0, 1, 2, -1] {
        check_grad(
            &[a.clone(), det(&[2, 3], 5)],
            |t| ops::stack(t, axis).unwrap(),
            1e-6,
        );
    }
    // Non-contiguous inputs, and one input used twice.
    check_grad(
        &[det(&[3, 2], 6), det(&[2, 2], 7)],
        |t| {
            let tt = t[0].t().unwrap();
            ops::concat(&[tt.clone(), t[1].clone(), tt], 1).unwrap()
        },
        1e-6,
    );
}

#[test]
fn concat_and_stack_grads_only_where_needed() {
    let a = leaf(&det(&[2, 2], 1));
    let b = det(&[2, 3], 2); // no grad
    let c = ops::concat(&[a.clone(), b.clone()], 1).unwrap();
    let loss = ops::sum(&c, None, false).unwrap();
    remat_core::autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(vals(&a.grad().unwrap()), vec![1.0; 4]);
    assert!(b.grad().is_none());
}

#[test]
fn concat_and_stack_errors_name_the_shapes() {
    let (a, b) = (arange(&[2, 3]), arange(&[3, 3]));
    let m = is_shape(ops::concat(&[a.clone(), b.clone()], 1));
    assert!(m.contains("(2, 3)") && m.contains("(3, 3)"), "{m}");
    assert!(ops::concat(&[a.clone(), b.clone()], 0).is_ok());
    is_shape(ops::concat(&[a.clone(), arange(&[6])], 0));
    is_shape(ops::concat(&[a.clone(), a.clone()], 2));
    is_shape(ops::concat(&[Tensor::scalar(1.0, DType::F64)], 0));
    let m = is_shape(ops::stack(&[a.clone(), b.clone()], 0));
    assert!(m.contains("(2, 3)") && m.contains("(3, 3)"), "{m}");
    is_shape(ops::stack(&[a.clone(), a.clone()], 3));
    is_shape(ops::stack(&[a.clone(), a.clone()], -4));
    assert!(matches!(ops::concat(&[], 0), Err(Error::Value { .. })));
    assert!(matches!(ops::stack(&[], 0), Err(Error::Value { .. })));
    // Mixed dtypes promote, as PyTorch's cat/stack (float32 + float64 is float64).
    let f = ops::to_dtype(&a, DType::F32).unwrap();
    let c = ops::concat(&[a.clone(), f.clone()], 0).unwrap();
    assert_eq!((c.dtype(), c.shape()), (DType::F64, &[4, 3][..]));
    let i = ops::to_dtype(&a, DType::I32).unwrap();
    assert_eq!(ops::stack(&[i, f], 0).unwrap().dtype(), DType::F32);
}

// --- where -----------------------------------------------------------------------------------

#[test]
fn where_selects_broadcasts_and_promotes() {
    let cond = Tensor::from_vec(vec![1.0f32, 0.0, -2.0], &[3]).unwrap();
    let a = arange(&[2, 3]);
    let b = Tensor::scalar(-1.0, DType::F32);
    let w = ops::where_(&cond, &a, &b).unwrap();
    assert_eq!(w.shape(), &[2, 3]);
    assert_eq!(w.dtype(), DType::F64);
    assert_eq!(vals(&w), vec![0., -1., 2., 3., -1., 5.]);
    // cond broadcast along the other axis, operands as views.
    let c2 = Tensor::from_vec(vec![0.0f64, 1.0], &[2, 1]).unwrap();
    let at = arange(&[3, 2]).t().unwrap(); // [[0, 2, 4], [1, 3, 5]]
    let w = ops::where_(&c2, &at, &Tensor::scalar(9.0, DType::F64)).unwrap();
    assert_eq!(vals(&w), vec![9., 9., 9., 1., 3., 5.]);
    // float32 throughout stays float32; NaN counts as true like NumPy.
    let cn = Tensor::from_vec(vec![f32::NAN, 0.0], &[2]).unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let y = Tensor::from_vec(vec![3.0f32, 4.0], &[2]).unwrap();
    let w = ops::where_(&cn, &x, &y).unwrap();
    assert_eq!(w.dtype(), DType::F32);
    assert_eq!(w.to_vec::<f32>(), vec![1.0, 4.0]);
}

#[test]
fn where_differentiates_in_a_and_b_only() {
    let cond = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[4]).unwrap();
    check_grad(
        &[det(&[3, 4], 1), det(&[3, 1], 2)],
        |t| ops::where_(&cond, &t[0], &t[1]).unwrap(),
        1e-6,
    );
    let c2 = Tensor::from_vec(vec![0.0, 1.0], &[2, 1, 1]).unwrap();
    check_grad(
        &[det(&[4], 3), det(&[3, 1], 4)],
        |t| ops::where_(&c2, &t[0], &t[1]).unwrap(),
        1e-6,
    );
    // A cond that requires grad gets none.
    let lc = leaf(&cond);
    let la = leaf(&det(&[4], 5));
    let w = ops::where_(&lc, &la, &Tensor::scalar(0.0, DType::F64)).unwrap();
    let loss = ops::sum(&w, None, false).unwrap();
    remat_core::autograd::backward(&[(loss, None)], false).unwrap();
    assert!(lc.grad().is_none());
    assert_eq!(vals(&la.grad().unwrap()), vec![1., 0., 0., 1.]);
}

#[test]
fn where_errors_name_all_shapes() {
    let m = is_shape(ops::where_(&arange(&[2]), &arange(&[3]), &arange(&[1])));
    assert!(
        m.contains("(2,)") && m.contains("(3,)") && m.contains("(1,)"),
        "{m}"
    );
    is_shape(ops::where_(&arange(&[3]), &arange(&[3]), &arange(&[2, 2])));
}

// --- to_dtype --------------------------------------------------------------------------------

#[test]
fn to_dtype_casts_and_differentiates() {
    let x = leaf(&det(&[2, 3], 1));
    assert!(ops::to_dtype(&x, DType::F64).unwrap().same(&x));
    let y = x.to_dtype(DType::F32).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(y.shape(), &[2, 3]);
    for (a, b) in vals(&x).iter().zip(y.to_vec::<f32>()) {
        assert_eq!(*a as f32, b);
    }
    // Non-contiguous input.
    let yt = x.t().unwrap().to_dtype(DType::F32).unwrap();
    assert_eq!(yt.shape(), &[3, 2]);
    assert_eq!(yt.to_vec::<f32>()[1], vals(&x)[3] as f32);
    // d/dx sum(w * f32(x)) = w, delivered in float64.
    let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let loss = ops::sum(&ops::mul(&y, &w).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(loss, None)], false).unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(vals(&g), vec![1., 2., 3., 4., 5., 6.]);
    // Round trip through float32 and back in float64 composes with other ops.
    check_grad(
        &[det(&[3], 2)],
        |t| {
            let up = ops::to_dtype(&t[0], DType::F32).unwrap();
            ops::add(&ops::to_dtype(&up, DType::F64).unwrap(), &t[0]).unwrap()
        },
        1e-1,
    );
}

// --- Tensor methods --------------------------------------------------------------------------

#[test]
fn tensor_methods_forward_to_ops() {
    let a = arange(&[2, 3]);
    let b = det(&[3], 1);
    assert_eq!(vals(&a.add(&b).unwrap()), vals(&ops::add(&a, &b).unwrap()));
    assert_eq!(vals(&a.sub(&b).unwrap()), vals(&ops::sub(&a, &b).unwrap()));
    assert_eq!(vals(&a.mul(&b).unwrap()), vals(&ops::mul(&a, &b).unwrap()));
    assert_eq!(vals(&a.div(&b).unwrap()), vals(&ops::div(&a, &b).unwrap()));
    assert_eq!(a.matmul(&a.t().unwrap()).unwrap().shape(), &[2, 2]);
    assert_eq!(a.sum(None, false).unwrap().item().unwrap(), 15.0);
    assert_eq!(vals(&a.sum(Some(&[0]), true).unwrap()), vec![3., 5., 7.]);
    assert_eq!(a.reshape(&[3, 2]).unwrap().shape(), &[3, 2]);
    assert!(a.reshape(&[4]).is_err());
    assert_eq!(a.permute(&[1, 0]).unwrap().shape(), &[3, 2]);
}

// --- checkpoint replay -----------------------------------------------------------------------

/// A computation whose `mul`s save outputs of every op in this file, so that under
/// checkpointing backward must replay each op's forward.
fn mixed(a: &Tensor, b: &Tensor) -> Tensor {
    let c = ops::concat(&[a.t().unwrap(), b.clone()], 0).unwrap(); // (7, 3)
    let s = ops::stack(&[c.clone(), c.clone()], 1).unwrap(); // (7, 2, 3)
    let i = s
        .index(&[sl(Some(1), None, 2), IndexItem::Int(-1), IndexItem::NewAxis])
        .unwrap(); // (3, 1, 3)
    let p = ops::permute(&i, &[2, 0, 1]).unwrap(); // (3, 3, 1)
    let cond = Tensor::from_vec(vec![1.0, 0.0, 1.0], &[3, 1, 1]).unwrap();
    let w = ops::where_(&cond, &p, &ops::mul(&p, &p).unwrap()).unwrap();
    let f = ops::to_dtype(&w, DType::F32).unwrap();
    let m = ops::mul(&f, &ops::to_dtype(&p, DType::F32).unwrap()).unwrap();
    ops::mul(&m, &m).unwrap()
}

#[test]
fn checkpointed_replays_give_identical_gradients() {
    let (a0, b0) = (det(&[3, 4], 1), det(&[3, 3], 2));
    let run = |ckpt: u8| -> (Vec<f64>, Vec<f64>) {
        let (a, b) = (leaf(&a0), leaf(&b0));
        let y = match ckpt {
            0 => mixed(&a, &b),
            1 => {
                let _scope = remat_core::checkpoint::checkpoint_scope();
                mixed(&a, &b)
            }
            _ => {
                // Checkpoint a view and a concat result, then consume them.
                let c = ops::concat(&[a.t().unwrap(), b.clone()], 0).unwrap();
                let c = remat_core::checkpoint::checkpoint(&c).unwrap();
                let i = c.index(&[sl(Some(2), None, 1)]).unwrap();
                let i = remat_core::checkpoint::checkpoint(&i).unwrap();
                ops::mul(&i, &i).unwrap()
            }
        };
        let loss = ops::sum(&y, None, false).unwrap();
        remat_core::autograd::backward(&[(loss, None)], false).unwrap();
        (vals(&a.grad().unwrap()), vals(&b.grad().unwrap()))
    };
    assert_eq!(run(0), run(1));
    // The plain version of case 2, written out.
    let (a, b) = (leaf(&a0), leaf(&b0));
    let c = ops::concat(&[a.t().unwrap(), b.clone()], 0).unwrap();
    let i = c.index(&[sl(Some(2), None, 1)]).unwrap();
    let loss = ops::sum(&ops::mul(&i, &i).unwrap(), None, false).unwrap();
    remat_core::autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(run(2), (vals(&a.grad().unwrap()), vals(&b.grad().unwrap())));
}

#[test]
fn slices_with_huge_bounds_and_steps_clamp_like_python() {
    use remat_core::ops::index;
    let x = Tensor::from_vec((0..12).map(|v| v as f64).collect::<Vec<_>>(), &[3, 4]).unwrap();
    let s = |start, stop, step| IndexItem::Slice { start, stop, step };
    let all = s(None, None, 1);
    let y = index(&x, &[all, s(Some(1), Some(isize::MAX / 2), isize::MAX / 2)]).unwrap();
    assert_eq!(y.shape(), &[3, 1]);
    assert_eq!(y.to_vec::<f64>(), vec![1.0, 5.0, 9.0]);
    let y = index(&x, &[s(Some(isize::MIN / 2), Some(isize::MAX / 2), 2)]).unwrap();
    assert_eq!(y.shape(), &[2, 4]);
}

#[test]
fn slices_of_one_tensor_add_their_gradients_into_one_buffer() {
    // The three pieces of a split, two overlapping slices, and a slice next to a direct use:
    // the later gradients go into the buffer the first started (`Op::add_grad_into`), which
    // must give what adding dense gradients gives.
    let x = leaf(&det(&[3, 12], 1));
    let w = det(&[3, 12], 2);
    let parts = ops::split(&x, 4, 1).unwrap();
    let mut loss = ops::sum(
        &ops::mul(&parts[0], &ops::narrow(&w, 1, 0, 4).unwrap()).unwrap(),
        None,
        false,
    )
    .unwrap();
    for (i, p) in parts.iter().enumerate().skip(1) {
        let wi = ops::narrow(&w, 1, (4 * i) as isize, 4).unwrap();
        let term = ops::sum(&ops::mul(p, &wi).unwrap(), None, false).unwrap();
        loss = ops::add(&loss, &term).unwrap();
    }
    remat_core::autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vals(&w));

    check_grad(
        &[det(&[4, 6], 3)],
        |ts| {
            let a = ops::narrow(&ts[0], 1, 0, 4).unwrap();
            let b = ops::narrow(&ts[0], 1, 2, 4).unwrap();
            let direct = ops::sum(&ops::mul(&ts[0], &ts[0]).unwrap(), None, false).unwrap();
            let ab = ops::sum(&ops::mul(&a, &b).unwrap(), None, false).unwrap();
            let row = ops::sum(
                &ops::index(&ts[0], &[IndexItem::Int(1)]).unwrap(),
                None,
                false,
            )
            .unwrap();
            ops::add(&ops::add(&direct, &ab).unwrap(), &row).unwrap()
        },
        1e-7,
    );
}

#[test]
fn view_shares_storage_or_refuses_like_pytorch() {
    let x = arange(&[3, 4]);
    // Contiguous, and a transpose whose new shape splits an axis: views.
    let v = ops::view_as_shape(&x, &[2, 6]).unwrap();
    assert!(shares(&v, &x));
    assert_eq!(vals(&v), vals(&x));
    let t = ops::transpose(&x, 0, 1).unwrap(); // (4, 3), strides (1, 4)
    let split = ops::view_as_shape(&t, &[2, 2, 3]).unwrap();
    assert!(shares(&split, &x));
    assert_eq!(vals(&split), vals(&ops::reshape(&t, &[2, 2, 3]).unwrap()));
    // Flattening the transpose needs a copy: view refuses (naming reshape), reshape copies.
    let msg = is_shape(ops::view_as_shape(&t, &[12]));
    assert!(msg.contains("(4, 3)") && msg.contains("reshape"), "{msg}");
    assert!(!shares(&ops::reshape(&t, &[12]).unwrap(), &x));
    // A wrong element count is the reshape error; an empty tensor always has a view.
    is_shape(ops::view_as_shape(&x, &[5]));
    let e = Tensor::from_vec(Vec::<f64>::new(), &[0, 3]).unwrap();
    let et = ops::transpose(&e, 0, 1).unwrap();
    assert_eq!(ops::view_as_shape(&et, &[0]).unwrap().shape(), [0]);
}
