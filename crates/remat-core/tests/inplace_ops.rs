//! In-place ops (`add_`, `sub_`, `mul_`, `div_`, `zero_`, `fill_`, `copy_`, `clamp_`,
//! `masked_fill_`, `normal_`, `uniform_`, `setitem`) against plain-Rust references: on
//! contiguous tensors, strided views (writes land in the base storage), broadcast and
//! mixed-dtype operands, operands overlapping the destination, large (parallel) tensors; the
//! methods return the tensor itself; PyTorch's rules (leaves, graph tensors, overlapping
//! destinations, shapes) as typed errors.

#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::ops::{self, IndexItem, Operand};
use remat_core::{no_grad, DType, Device, Error, Tensor};

/// The engine's generator is process-wide and tests run on parallel threads: the tests that
/// seed it or draw from it take turns.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rng_turn() -> std::sync::MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|e| e.into_inner())
}

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()) || (g.is_nan() && w.is_nan()),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// `f` applied to each of `dst`'s values (C order) and the broadcast operand's.
fn zip_ref(dst: &[f64], src: &[f64], f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    dst.iter()
        .enumerate()
        .map(|(i, &x)| f(x, src[i % src.len()]))
        .collect()
}

/// An in-place op on (destination, operand), and its reference formula.
type Case = (&'static str, fn(&Tensor, &Tensor), fn(f64, f64) -> f64);

#[test]
fn arithmetic_matches_the_out_of_place_formulas() {
    let x0 = det(&[4, 5], 1);
    let y = det(&[4, 5], 2);
    let (xv, yv) = (x0.to_vec::<f64>(), y.to_vec::<f64>());
    let cases: [Case; 5] = [
        (
            "add_",
            |x, y| ops::add_(x, y.into(), 1.0).unwrap(),
            |a, b| a + b,
        ),
        (
            "add_ alpha",
            |x, y| ops::add_(x, y.into(), 0.5).unwrap(),
            |a, b| a + 0.5 * b,
        ),
        (
            "sub_",
            |x, y| ops::sub_(x, y.into(), 2.0).unwrap(),
            |a, b| a - 2.0 * b,
        ),
        ("mul_", |x, y| ops::mul_(x, y.into()).unwrap(), |a, b| a * b),
        ("div_", |x, y| ops::div_(x, y.into()).unwrap(), |a, b| a / b),
    ];
    for (name, op, f) in cases {
        let x = ops::contiguous_copy(&x0, DType::F64).unwrap();
        op(&x, &y);
        assert_eq!(x.to_vec::<f64>(), zip_ref(&xv, &yv, f), "{name}");
    }
}

#[test]
fn scalar_operands_and_methods_return_self() {
    let x = t64(&[1.0, -2.0, 3.0], &[3]);
    let same = x.mul_(2.0).unwrap();
    assert!(same.same(&x));
    x.add_(1.0, 3.0)
        .unwrap()
        .sub_(0.5, 1.0)
        .unwrap()
        .div_(4.0)
        .unwrap();
    close(
        &x.to_vec::<f64>(),
        &[(2.0 + 3.0 - 0.5) / 4.0, (-4.0 + 2.5) / 4.0, 8.5 / 4.0],
    );
    x.fill_(7.0).unwrap();
    assert_eq!(x.to_vec::<f64>(), vec![7.0; 3]);
    x.zero_().unwrap();
    assert_eq!(x.to_vec::<f64>(), vec![0.0; 3]);
    // A 0-d tensor works as a value; a tensor with dimensions does not.
    x.fill_(&Tensor::scalar(2.5, DType::F32)).unwrap();
    assert_eq!(x.to_vec::<f64>(), vec![2.5; 3]);
    let e = x.fill_(&t64(&[1.0], &[1])).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

#[test]
fn broadcast_operands_and_shapes_that_do_not_fit() {
    let x = det(&[3, 4], 3);
    let row = det(&[4], 4);
    let col = det(&[3, 1], 5);
    let want = zip_ref(&x.to_vec::<f64>(), &row.to_vec::<f64>(), |a, b| a * b);
    x.mul_(&row).unwrap();
    assert_eq!(x.to_vec::<f64>(), want);
    let cv = col.to_vec::<f64>();
    let want: Vec<f64> = x
        .to_vec::<f64>()
        .iter()
        .enumerate()
        .map(|(i, a)| a + cv[i / 4])
        .collect();
    x.add_(&col, 1.0).unwrap();
    assert_eq!(x.to_vec::<f64>(), want);
    // The destination never grows: (4,) += (3, 4) is refused, naming both shapes.
    let small = det(&[4], 6);
    let e = small.add_(&x, 1.0).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("add_") && msg.contains("(4,)") && msg.contains("(3, 4)"),
        "{msg}"
    );
    let e = small.mul_(&det(&[3], 7)).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

#[test]
fn writes_into_strided_views_land_in_the_base() {
    let base = det(&[4, 6], 8);
    let before = base.to_vec::<f64>();
    // Every other column of rows 1..3, transposed: a non-contiguous view.
    let v = ops::index(
        &base,
        &[
            IndexItem::Slice {
                start: Some(1),
                stop: Some(3),
                step: 1,
            },
            IndexItem::Slice {
                start: None,
                stop: None,
                step: 2,
            },
        ],
    )
    .unwrap();
    let vt = ops::transpose(&v, 0, 1).unwrap();
    assert!(!vt.is_contiguous());
    let add = det(&[3, 2], 9);
    let av = add.to_vec::<f64>();
    vt.add_(&add, 1.0).unwrap();
    let got = base.to_vec::<f64>();
    for r in 0..4 {
        for c in 0..6 {
            let i = r * 6 + c;
            let want = if (1..3).contains(&r) && c % 2 == 0 {
                before[i] + av[(c / 2) * 2 + (r - 1)]
            } else {
                before[i]
            };
            assert_eq!(got[i], want, "({r}, {c})");
        }
    }
    // Every op goes through the same walk: fill a column.
    let col = ops::index(
        &base,
        &[
            IndexItem::Slice {
                start: None,
                stop: None,
                step: 1,
            },
            IndexItem::Int(5),
        ],
    )
    .unwrap();
    col.fill_(-1.0).unwrap();
    let got = base.to_vec::<f64>();
    assert!((0..4).all(|r| got[r * 6 + 5] == -1.0));
    assert_eq!(base.version(), 2, "views share the version counter");
    assert_eq!(col.version(), 2);
}

#[test]
fn an_operand_overlapping_the_destination_is_read_before_it_is_written() {
    // x[1:] += x[:-1] reads the old values (NumPy and PyTorch agree).
    let x = t64(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let tail = ops::index(
        &x,
        &[IndexItem::Slice {
            start: Some(1),
            stop: None,
            step: 1,
        }],
    )
    .unwrap();
    let head = ops::index(
        &x,
        &[IndexItem::Slice {
            start: None,
            stop: Some(3),
            step: 1,
        }],
    )
    .unwrap();
    tail.add_(&head, 1.0).unwrap();
    assert_eq!(x.to_vec::<f64>(), vec![1.0, 3.0, 5.0, 7.0]);
    // The same positions: x *= x.
    x.mul_(&x.detach()).unwrap();
    assert_eq!(x.to_vec::<f64>(), vec![1.0, 9.0, 25.0, 49.0]);
    // A broadcast of the first row over all rows of the same storage.
    let m = t64(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let row0 = ops::index(&m, &[IndexItem::Int(0)]).unwrap();
    m.sub_(&row0, 1.0).unwrap();
    assert_eq!(m.to_vec::<f64>(), vec![0.0, 0.0, 2.0, 2.0]);
}

#[test]
fn mixed_dtypes_compute_in_float64_and_round_once() {
    let x = Tensor::from_vec(vec![1.0f32, 3.0], &[2]).unwrap();
    let y = t64(&[0.1, 1.0 / 3.0], &[2]);
    x.mul_(&y).unwrap();
    assert_eq!(x.dtype(), DType::F32);
    assert_eq!(
        x.to_vec::<f32>(),
        vec![0.1f64 as f32, (3.0 * (1.0f64 / 3.0)) as f32]
    );
    let z = t64(&[0.0, 0.0], &[2]);
    z.copy_(&x).unwrap();
    assert_eq!(z.to_vec::<f32>(), x.to_vec::<f32>());
}

#[test]
fn copy_broadcasts_and_casts() {
    let dst = ops::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    dst.copy_(&t64(&[1.0, 2.0, 3.0], &[3])).unwrap();
    assert_eq!(dst.to_vec::<f64>(), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    let e = dst.copy_(&t64(&[1.0, 2.0], &[2])).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

#[test]
fn clamp_follows_torch_clamp() {
    let v = [-3.0, -0.5, 0.0, 0.5, 3.0, f64::NAN];
    let x = t64(&v, &[6]);
    x.clamp_(Some(-1.0), Some(1.0)).unwrap();
    close(&x.to_vec::<f64>(), &[-1.0, -0.5, 0.0, 0.5, 1.0, f64::NAN]);
    // min > max gives max everywhere; one bound alone; the same values as `ops::clamp`.
    for (lo, hi) in [
        (Some(2.0), Some(1.0)),
        (Some(0.1), None),
        (None, Some(-0.2)),
    ] {
        let x = t64(&v, &[6]);
        let want = ops::clamp(&x, lo, hi).unwrap().to_vec::<f64>();
        x.clamp_(lo, hi).unwrap();
        close(&x.to_vec::<f64>(), &want);
    }
    let e = t64(&v, &[6]).clamp_(None, None).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    // Tensor bounds broadcast.
    let x = t64(&[0.0, 5.0, -5.0, 1.0], &[2, 2]);
    let lo = t64(&[-1.0, 2.0], &[2]);
    ops::clamp_by_(
        &x,
        Some(ops::Bound::Tensor(&lo)),
        Some(ops::Bound::Scalar(3.0)),
    )
    .unwrap();
    assert_eq!(x.to_vec::<f64>(), vec![0.0, 3.0, -1.0, 2.0]);
    assert_eq!(x.version(), 1, "one op, one version");
}

#[test]
fn masked_fill_writes_where_the_mask_is_nonzero() {
    let x = det(&[2, 3], 10);
    let before = x.to_vec::<f64>();
    let mask = Tensor::from_vec(vec![1.0f32, 0.0, f32::NAN], &[3]).unwrap();
    x.masked_fill_(&mask, -9.0).unwrap();
    let got = x.to_vec::<f64>();
    for i in 0..6 {
        let want = if i % 3 == 1 { before[i] } else { -9.0 };
        assert_eq!(got[i], want, "element {i}");
    }
    let e = x.masked_fill_(&det(&[2], 1), 0.0).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

#[test]
fn random_fills_are_reproducible_and_match_the_constructors() {
    let _rng = rng_turn();
    for dtype in [DType::F32, DType::F64] {
        remat_core::manual_seed(11);
        let a = ops::randn(&[3, 7], dtype, Device::Cpu).unwrap();
        let b = ops::randn(&[5], dtype, Device::Cpu).unwrap();
        remat_core::manual_seed(11);
        let x = ops::zeros(&[3, 7], dtype, Device::Cpu).unwrap();
        x.normal_(0.0, 1.0).unwrap();
        let y = ops::zeros(&[5], dtype, Device::Cpu).unwrap();
        y.normal_(0.0, 1.0).unwrap();
        assert_eq!(x.to_vec::<f64>(), a.to_vec::<f64>());
        assert_eq!(
            y.to_vec::<f64>(),
            b.to_vec::<f64>(),
            "the generator advanced alike"
        );
        remat_core::manual_seed(3);
        let r = ops::rand(&[100], dtype, Device::Cpu).unwrap();
        remat_core::manual_seed(3);
        let u = ops::zeros(&[100], dtype, Device::Cpu).unwrap();
        u.uniform_(0.0, 1.0).unwrap();
        assert_eq!(u.to_vec::<f64>(), r.to_vec::<f64>());
    }
    let u = ops::zeros(&[10_000], DType::F64, Device::Cpu).unwrap();
    u.uniform_(-2.0, 3.0).unwrap();
    let v = u.to_vec::<f64>();
    assert!(v.iter().all(|&x| (-2.0..3.0).contains(&x)));
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!((mean - 0.5).abs() < 0.1, "{mean}");
    let n = ops::zeros(&[10_000], DType::F64, Device::Cpu).unwrap();
    n.normal_(5.0, 2.0).unwrap();
    let v = n.to_vec::<f64>();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
    assert!(
        (mean - 5.0).abs() < 0.1 && (var.sqrt() - 2.0).abs() < 0.1,
        "{mean} {var}"
    );
    assert!(matches!(
        n.normal_(0.0, -1.0).unwrap_err(),
        Error::Value { .. }
    ));
    assert!(matches!(
        n.uniform_(1.0, 0.0).unwrap_err(),
        Error::Value { .. }
    ));
}

#[test]
fn large_tensors_take_the_parallel_path() {
    let _rng = rng_turn();
    // A transposed (non-contiguous) destination of 2^17 elements with a broadcast operand.
    let base = ops::full(&[256, 512], 1.0, DType::F32, Device::Cpu).unwrap();
    let t = ops::transpose(&base, 0, 1).unwrap();
    let col = Tensor::from_vec((0..256).map(|i| i as f32).collect(), &[256]).unwrap();
    t.add_(&col, 2.0).unwrap();
    let got = base.to_vec::<f32>();
    for r in [0usize, 1, 100, 255] {
        for c in [0usize, 7, 511] {
            assert_eq!(got[r * 512 + c], 1.0 + 2.0 * r as f32, "({r}, {c})");
        }
    }
    // Contiguous operands take the slice path, chunk by chunk; x *= x reads its own storage.
    let n = 300_001;
    let a = Tensor::from_vec((0..n).map(|i| i as f64).collect(), &[n]).unwrap();
    let b = Tensor::from_vec((0..n).map(|i| (i % 7) as f64).collect(), &[n]).unwrap();
    a.add_(&b, -1.0)
        .unwrap()
        .mul_(&a.detach())
        .unwrap()
        .add_(0.5, 2.0)
        .unwrap();
    let got = a.to_vec::<f64>();
    for i in [0usize, 1, 16_383, 16_384, 16_385, 200_000, n - 1] {
        let v = (i - i % 7) as f64;
        assert_eq!(got[i], v * v + 1.0, "element {i}");
    }
    remat_core::manual_seed(5);
    let big = ops::randn(&[300, 301], DType::F32, Device::Cpu).unwrap();
    remat_core::manual_seed(5);
    let x = ops::zeros(&[300, 301], DType::F32, Device::Cpu).unwrap();
    x.normal_(0.0, 1.0).unwrap();
    assert_eq!(x.to_vec::<f32>(), big.to_vec::<f32>());
}

#[test]
fn setitem_writes_the_indexed_view() {
    let x = ops::zeros(&[3, 4], DType::F64, Device::Cpu).unwrap();
    x.setitem(&[IndexItem::Int(1).into()], 5.0).unwrap();
    x.setitem(
        &[
            IndexItem::Ellipsis.into(),
            IndexItem::Slice {
                start: Some(-1),
                stop: None,
                step: 1,
            }
            .into(),
        ],
        &t64(&[7.0, 8.0, 9.0], &[3, 1]),
    )
    .unwrap();
    x.setitem(
        &[
            IndexItem::Slice {
                start: None,
                stop: None,
                step: 2,
            }
            .into(),
            IndexItem::Int(0).into(),
        ],
        &Tensor::from_vec(vec![-1.0f32, -2.0], &[2]).unwrap(),
    )
    .unwrap();
    assert_eq!(
        x.to_vec::<f64>(),
        vec![-1.0, 0.0, 0.0, 7.0, 5.0, 5.0, 5.0, 8.0, -2.0, 0.0, 0.0, 9.0]
    );
    assert_eq!(x.version(), 3);
    let e = x.setitem(&[IndexItem::Int(3).into()], 1.0).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = x
        .setitem(&[IndexItem::Int(0).into()], &t64(&[1.0, 2.0], &[2]))
        .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    match ops::destination(&x, &[IndexItem::Int(2).into()]).unwrap() {
        ops::Destination::View(v) => assert_eq!(v.to_vec::<f64>(), vec![-2.0, 0.0, 0.0, 9.0]),
        ops::Destination::Elements { .. } => panic!("a basic index names a view"),
    }
}

fn i64s(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

#[test]
fn setitem_with_integer_and_mask_indices_writes_the_named_elements() {
    // x[[0, 2], 1:] = v: the elements x[[0, 2], 1:] names, in the order it returns them.
    let x = ops::zeros(&[3, 4], DType::F32, Device::Cpu).unwrap();
    let rows = ops::Index::Tensor(i64s(&[2, 0]));
    let tail = IndexItem::Slice {
        start: Some(1),
        stop: None,
        step: 1,
    }
    .into();
    let v = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    x.setitem(&[rows.clone(), tail], &v).unwrap();
    assert_eq!(
        x.to_vec::<f64>(),
        vec![0.0, 4.0, 5.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0]
    );
    match ops::destination(&x, &[rows]).unwrap() {
        ops::Destination::Elements { offsets, shape } => {
            assert_eq!(offsets, vec![8, 9, 10, 11, 0, 1, 2, 3]);
            assert_eq!(shape.as_slice(), &[2, 4]);
        }
        ops::Destination::View(_) => panic!("an integer index names elements"),
    }
    // A bool mask over a transposed view; a number value; the last of repeated indices wins.
    let base = t64(&[1.0, -2.0, 3.0, -4.0, 5.0, -6.0], &[2, 3]);
    let t = ops::transpose(&base, 0, 1).unwrap();
    let mask = Tensor::from_vec(vec![0u8, 1, 1, 0, 0, 1], &[3, 2]).unwrap();
    t.setitem(&[ops::Index::Tensor(mask)], 0.0).unwrap();
    // t = [[1, -4], [-2, 5], [3, -6]]; masked (0,1), (1,0), (2,1): base[1][0], [0][1], [1][2].
    assert_eq!(base.to_vec::<f64>(), vec![1.0, 0.0, 3.0, 0.0, 5.0, 0.0]);
    let y = ops::zeros(&[3], DType::I64, Device::Cpu).unwrap();
    y.setitem(&[ops::Index::Tensor(i64s(&[1, 1, -1]))], &i64s(&[7, 8, 9]))
        .unwrap();
    assert_eq!(y.to_vec::<i64>(), vec![0, 8, 9]);
    assert_eq!(y.version(), 1);
    let e = y
        .setitem(&[ops::Index::Tensor(i64s(&[3]))], 1.0)
        .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = y
        .setitem(&[ops::Index::Tensor(i64s(&[0, 1]))], &i64s(&[1, 2, 3]))
        .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

#[test]
fn integer_and_bool_tensors_follow_torch_dtype_rules() {
    let x = i64s(&[1, -2, 3]);
    x.add_(&i64s(&[10, 20, 30]), 2.0)
        .unwrap()
        .mul_(3.0)
        .unwrap()
        .sub_(1.0, 1.0)
        .unwrap();
    assert_eq!(x.to_vec::<i64>(), vec![62, 113, 188]);
    x.clamp_(Some(100.0), Some(150.0)).unwrap();
    assert_eq!(x.to_vec::<i64>(), vec![100, 113, 150]);
    // int32 with Python-style integers and int64 tensors; wrapping like PyTorch.
    let y = Tensor::from_vec(vec![i32::MAX, 0], &[2]).unwrap();
    y.add_(1.0, 1.0).unwrap();
    assert_eq!(y.to_vec::<i32>(), vec![i32::MIN, 1]);
    y.add_(&i64s(&[1, 1]), 1.0).unwrap();
    assert_eq!(y.to_vec::<i32>(), vec![i32::MIN + 1, 2]);
    // A float result does not fit an integer tensor; alpha must be integral; div_ is true
    // division; random fills need floats.
    for e in [
        x.add_(0.5, 1.0).unwrap_err(),
        x.mul_(&t64(&[1.0, 1.0, 1.0], &[3])).unwrap_err(),
        x.add_(1.0, 0.5).unwrap_err(),
        x.div_(2.0).unwrap_err(),
        x.clamp_(Some(0.5), None).unwrap_err(),
        x.normal_(0.0, 1.0).unwrap_err(),
        x.uniform_(0.0, 1.0).unwrap_err(),
    ] {
        assert!(matches!(e, Error::DType { .. }), "{e}");
    }
    assert!(x.add_(0.5, 1.0).unwrap_err().to_string().contains("int64"));
    // Floats take integer operands; copies and fills cast anything.
    let f = t64(&[0.5, 0.5, 0.5], &[3]);
    f.add_(&i64s(&[1, 2, 3]), 1.0).unwrap();
    assert_eq!(f.to_vec::<f64>(), vec![1.5, 2.5, 3.5]);
    x.copy_(&t64(&[1.9, -1.9, 0.0], &[3])).unwrap();
    assert_eq!(x.to_vec::<i64>(), vec![1, -1, 0]);
    x.fill_(7.9).unwrap();
    assert_eq!(x.to_vec::<i64>(), vec![7, 7, 7]);
    let b = Tensor::from_vec(vec![0u8, 1, 0], &[3]).unwrap();
    b.fill_(0.5).unwrap();
    assert_eq!(b.to_vec::<u8>(), vec![1, 1, 1]);
    b.copy_(&t64(&[0.0, 2.0, 0.0], &[3])).unwrap();
    assert_eq!(b.to_vec::<u8>(), vec![0, 1, 0]);
    let e = b.add_(1.0, 1.0).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    // bool masks (and, leniently, nonzero float ones) for masked_fill_, on every dtype.
    let m = Tensor::from_vec(vec![1u8, 0, 1], &[3]).unwrap();
    x.masked_fill_(&m, -3.0).unwrap();
    assert_eq!(x.to_vec::<i64>(), vec![-3, 7, -3]);
    f.masked_fill_(&m, 0.0).unwrap();
    assert_eq!(f.to_vec::<f64>(), vec![0.0, 2.5, 0.0]);
    b.masked_fill_(&t64(&[0.0, 0.0, 3.0], &[3]), 1.0).unwrap();
    assert_eq!(b.to_vec::<u8>(), vec![0, 1, 1]);
    // nn's raw writes (`load_state_dict`, `zero_grad`) take every dtype too.
    remat_core::optim::copy_(&x, &t64(&[4.0, 5.0, 6.0], &[3])).unwrap();
    assert_eq!(x.to_vec::<i64>(), vec![4, 5, 6]);
    remat_core::optim::zero_(&b).unwrap();
    assert_eq!(b.to_vec::<u8>(), vec![0, 0, 0]);
}

#[test]
fn leaves_that_require_grad_are_written_only_under_no_grad() {
    let _rng = rng_turn();
    let w = leaf(&det(&[3], 12));
    let e = w.add_(1.0, 1.0).unwrap_err();
    assert!(matches!(e, Error::Graph { .. }), "{e}");
    assert!(e.to_string().contains("leaf Variable"), "{e}");
    for r in [
        w.zero_().err(),
        w.setitem(&[IndexItem::Int(0).into()], 1.0).err(),
        w.normal_(0.0, 1.0).err(),
    ] {
        assert!(matches!(r, Some(Error::Graph { .. })), "{r:?}");
    }
    assert_eq!(w.version(), 0, "a refused write writes nothing");
    {
        let _g = no_grad();
        w.normal_(0.0, 0.02).unwrap();
        w.setitem(&[IndexItem::Int(0).into()], 1.0).unwrap();
    }
    assert_eq!(w.to_vec::<f64>()[0], 1.0);
    assert!(w.requires_grad() && w.is_leaf());
}

#[test]
fn graph_tensors_and_operands_that_require_grad_are_written_through_the_graph() {
    // The gradients are checked in `inplace_recorded.rs`; here the values and the rebase.
    let w = leaf(&det(&[3], 13));
    let y = ops::exp(&w).unwrap();
    let want: Vec<f64> = y.to_vec::<f64>().iter().map(|v| v * 2.0).collect();
    y.mul_(2.0).unwrap();
    close(&y.to_vec::<f64>(), &want);
    assert_eq!(y.grad_fn().unwrap().name(), "mul");
    let buf = det(&[3], 14);
    let want = zip_ref(&buf.to_vec::<f64>(), &w.to_vec::<f64>(), |a, b| a + b);
    buf.add_(&w, 1.0).unwrap();
    close(&buf.to_vec::<f64>(), &want);
    assert!(buf.requires_grad() && !buf.is_leaf());
    let buf = det(&[3], 14);
    buf.copy_(&y).unwrap();
    close(&buf.to_vec::<f64>(), &y.to_vec::<f64>());
    let _g = no_grad();
    let plain = det(&[3], 15);
    plain.add_(&w, 1.0).unwrap();
    assert!(!plain.requires_grad(), "no graph under no_grad");
}

#[test]
fn an_expanded_destination_is_refused() {
    let x = det(&[3], 15);
    let e = ops::expand(&x, &[2, 3])
        .unwrap()
        .add_(1.0, 1.0)
        .unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    assert!(e.to_string().contains("single memory location"), "{e}");
    // Extent-1 axes with stride 0 (new axes) are fine.
    let v = ops::unsqueeze(&x, 0).unwrap();
    v.mul_(2.0).unwrap();
}

#[test]
fn other_devices_and_empty_tensors() {
    let x = det(&[0, 3], 16);
    x.add_(&det(&[3], 1), 1.0).unwrap();
    x.normal_(0.0, 1.0).unwrap();
    // A 0-d operand is a number (as PyTorch allows a CPU scalar tensor with a GPU tensor).
    let y = det(&[2], 17);
    let want: Vec<f64> = y.to_vec::<f64>().iter().map(|v| v * 3.0).collect();
    y.mul_(Operand::Tensor(&Tensor::scalar(3.0, DType::F64)))
        .unwrap();
    assert_eq!(y.to_vec::<f64>(), want);
}
