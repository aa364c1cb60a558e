//! int64, int32 and bool tensors in the engine: promotion, exact integer arithmetic, the
//! float-only ops' refusal, casts, and the rule that they never require grad.
#![allow(clippy::unwrap_used)]

use remat_core::dtype::Category;
use remat_core::{ops, DType, Error, Tensor};

fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn promotion_follows_pytorch_categories() {
    use DType::*;
    assert_eq!(I32.promote(I64), I64);
    assert_eq!(Bool.promote(I32), I32);
    assert_eq!(I64.promote(F32), F32);
    assert_eq!(F32.promote(F64), F64);
    assert_eq!(Bool.promote(Bool), Bool);
    assert!(Bool.category() < Category::Integer && Category::Integer < Category::Float);
    for d in DType::ALL {
        assert_eq!(DType::parse(d.name()), Some(d));
    }
}

#[test]
fn integer_arithmetic_is_exact_and_keeps_the_dtype() {
    let big = (1i64 << 53) + 1;
    let a = ints(&[big, -3, 7], &[3]);
    let b = ints(&[1, 2, 3], &[3]);
    let s = ops::add(&a, &b).unwrap();
    assert_eq!(s.dtype(), DType::I64);
    assert_eq!(s.to_vec::<i64>(), vec![big + 1, -1, 10]);
    assert_eq!(ops::mul(&a, &b).unwrap().to_vec::<i64>(), vec![big, -6, 21]);
    assert_eq!(ops::sub(&b, &a).unwrap().to_vec::<i64>()[1], 5);
    let total = ops::sum(&a, None, false).unwrap();
    assert_eq!(total.dtype(), DType::I64);
    assert_eq!(total.item_i64().unwrap(), big + 4);
    // Broadcasting against a row.
    let m = ints(&[1, 2, 3, 4, 5, 6], &[2, 3]);
    let r = ops::add(&m, &b).unwrap();
    assert_eq!(r.to_vec::<i64>(), vec![2, 4, 6, 5, 7, 9]);
    assert_eq!(ops::neg(&m).unwrap().dtype(), DType::I64);
}

#[test]
fn mixed_int_float_gives_float_and_division_is_true_division() {
    let a = ints(&[1, 2, 3], &[3]);
    let f = Tensor::from_vec(vec![0.5f32, 0.5, 0.5], &[3]).unwrap();
    let p = ops::mul(&a, &f).unwrap();
    assert_eq!(p.dtype(), DType::F32);
    assert_eq!(p.to_vec::<f32>(), vec![0.5, 1.0, 1.5]);
    let q = ops::div(&a, &a).unwrap();
    assert_eq!(q.dtype(), DType::F32);
    assert_eq!(ops::exp(&a).unwrap().dtype(), DType::F32);
}

#[test]
fn float_only_ops_refuse_integers_with_a_dtype_error() {
    let a = ints(&[1, 2, 3], &[3]);
    let e = ops::softmax(&a, -1).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("softmax") && msg.contains("int64") && msg.contains("(3,)"),
        "{msg}"
    );
    // Integer products are PyTorch's (exact), but not with a float or another integer dtype.
    let f = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let e = ops::matmul(&a, &f).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
    let a32 = ops::cast(&a, DType::I32).unwrap();
    let e = ops::mm(
        &ops::unsqueeze(&a, 0).unwrap(),
        &ops::unsqueeze(&a32, 1).unwrap(),
    );
    assert!(matches!(e, Err(Error::DType { .. })));
    let bools = ops::cast(&a, DType::Bool).unwrap();
    let msg = ops::matmul(&bools, &bools).unwrap_err().to_string();
    assert!(msg.starts_with("matmul:") && msg.contains("bool"), "{msg}");
}

/// `a @ b` over int64 values by the definition, wrapping as two's complement.
fn int_product(a: &[i64], b: &[i64], (m, k, n): (usize, usize, usize)) -> Vec<i64> {
    let mut out = vec![0i64; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                out[i * n + j] =
                    out[i * n + j].wrapping_add(a[i * k + p].wrapping_mul(b[p * n + j]));
            }
        }
    }
    out
}

#[test]
fn integer_matrix_products_are_exact_and_keep_the_dtype() {
    let big = (1i64 << 53) + 1;
    let av: Vec<i64> = vec![big, -3, 7, 2, 0, -5];
    let bv: Vec<i64> = vec![1, 2, 3, -4, 5, 6, 7, 8, 9, 10, -11, 12];
    let (a, b) = (ints(&av, &[2, 3]), ints(&bv, &[3, 4]));
    let want = int_product(&av, &bv, (2, 3, 4));
    for got in [
        ops::matmul(&a, &b).unwrap(),
        ops::mm(&a, &b).unwrap(),
        ops::einsum("ij,jk->ik", &[a.clone(), b.clone()]).unwrap(),
    ] {
        assert_eq!((got.dtype(), got.shape()), (DType::I64, &[2, 4][..]));
        assert_eq!(got.to_vec::<i64>(), want);
        assert!(got.grad_fn().is_none());
    }
    // A transposed (strided) right operand, a broadcast batch and 1-D operands.
    let bt = ops::transpose(&ints(&bv, &[4, 3]), 0, 1).unwrap();
    let want_t = int_product(
        &av,
        &ops::contiguous(&bt).unwrap().to_vec::<i64>(),
        (2, 3, 4),
    );
    assert_eq!(ops::matmul(&a, &bt).unwrap().to_vec::<i64>(), want_t);
    let stack = ops::stack(&[b.clone(), ops::neg(&b).unwrap()], 0).unwrap();
    let batched = ops::matmul(&a, &stack).unwrap();
    assert_eq!(batched.shape(), &[2, 2, 4]);
    let neg: Vec<i64> = want.iter().map(|v| -v).collect();
    assert_eq!(batched.to_vec::<i64>(), [want.clone(), neg].concat());
    let v = ints(&[1, 2, 3], &[3]);
    let dot = ops::matmul(&v, &v).unwrap();
    assert_eq!((dot.shape(), dot.to_vec::<i64>()), (&[][..], vec![14]));
    assert_eq!(
        ops::matmul(&a, &v).unwrap().to_vec::<i64>(),
        vec![big - 6 + 21, 2 - 15]
    );
    // bmm, and int32 staying int32 and wrapping at 32 bits.
    let got = ops::bmm(
        &ops::unsqueeze(&a, 0).unwrap(),
        &ops::unsqueeze(&b, 0).unwrap(),
    )
    .unwrap();
    assert_eq!(got.to_vec::<i64>(), want);
    let x = ops::cast(&ints(&[1 << 30, 3], &[1, 2]), DType::I32).unwrap();
    let y = ops::cast(&ints(&[4, 5], &[2, 1]), DType::I32).unwrap();
    let got = ops::matmul(&x, &y).unwrap();
    assert_eq!((got.dtype(), got.to_vec::<i64>()), (DType::I32, vec![15]));
    // int64 wraps too (2^62 * 4 = 2^64 = 0), as PyTorch's CPU kernel.
    let got = ops::matmul(&ints(&[1 << 62], &[1, 1]), &ints(&[4], &[1, 1])).unwrap();
    assert_eq!(got.to_vec::<i64>(), vec![0]);
    // An empty inner extent gives zeros.
    let got = ops::matmul(&ints(&[], &[2, 0]), &ints(&[], &[0, 3])).unwrap();
    assert_eq!(got.to_vec::<i64>(), vec![0; 6]);
}

#[test]
fn integer_addmm_truncates_its_scalings_as_pytorch() {
    let a = ints(&[1, 2, 3, 4], &[2, 2]);
    let input = ints(&[10, 20], &[2]);
    let prod = int_product(&[1, 2, 3, 4], &[1, 2, 3, 4], (2, 2, 2));
    let got = ops::addmm(&input, &a, &a, 2.0, 3.0).unwrap();
    let want: Vec<i64> = prod
        .iter()
        .zip([10, 20, 10, 20])
        .map(|(p, i)| 3 * p + 2 * i)
        .collect();
    assert_eq!((got.dtype(), got.to_vec::<i64>()), (DType::I64, want));
    // beta 0.5 is 0 (input ignored), alpha 1.5 is 1.
    let got = ops::addmm(&input, &a, &a, 0.5, 1.5).unwrap();
    assert_eq!(got.to_vec::<i64>(), prod);
    let b3 = ops::unsqueeze(&a, 0).unwrap();
    let got = ops::baddbmm(&ops::unsqueeze(&input, 0).unwrap(), &b3, &b3, 1.0, -1.0).unwrap();
    let want: Vec<i64> = prod
        .iter()
        .zip([10, 20, 10, 20])
        .map(|(p, i)| i - p)
        .collect();
    assert_eq!((got.shape(), got.to_vec::<i64>()), (&[1, 2, 2][..], want));
    let f = ops::cast(&a, DType::F32).unwrap();
    assert!(matches!(
        ops::addmm(&f, &a, &a, 1.0, 1.0),
        Err(Error::DType { .. })
    ));
}

#[test]
fn integer_tensors_never_require_grad() {
    let a = ints(&[1, 2], &[2]);
    assert!(matches!(
        a.set_requires_grad(true),
        Err(Error::DType { .. })
    ));
    assert!(!a.requires_grad());
    // An integer result of a recorded op is not part of the graph.
    let x = Tensor::from_vec(vec![1.5f32, -2.5], &[2]).unwrap();
    x.set_requires_grad(true).unwrap();
    let i = ops::to_dtype(&x, DType::I64).unwrap();
    assert!(!i.requires_grad() && i.grad_fn().is_none());
    assert_eq!(i.to_vec::<i64>(), vec![1, -2]);
}

#[test]
fn casts_between_every_pair_round_trip_small_values() {
    let src = ints(&[0, 1, 5, -2], &[4]);
    for d in DType::ALL {
        let t = ops::to_dtype(&src, d).unwrap();
        assert_eq!(t.dtype(), d);
        let back = ops::to_dtype(&t, DType::I64).unwrap().to_vec::<i64>();
        let want: Vec<i64> = if d == DType::Bool {
            vec![0, 1, 1, 1]
        } else {
            vec![0, 1, 5, -2]
        };
        assert_eq!(back, want, "{d}");
    }
}

#[test]
fn shape_ops_move_integer_elements() {
    let m = ints(&[1, 2, 3, 4, 5, 6], &[2, 3]);
    let t = ops::transpose(&m, 0, 1).unwrap();
    assert_eq!(
        ops::contiguous(&t).unwrap().to_vec::<i64>(),
        vec![1, 4, 2, 5, 3, 6]
    );
    let c = ops::cat(&[m.clone(), m.clone()], 0).unwrap();
    assert_eq!(c.dtype(), DType::I64);
    assert_eq!(c.shape(), &[4, 3]);
    let r = ops::reshape(&t, &[6]).unwrap();
    assert_eq!(r.to_vec::<i64>(), vec![1, 4, 2, 5, 3, 6]);
    let f = ops::flip(&m, &[1]).unwrap();
    assert_eq!(f.to_vec::<i64>(), vec![3, 2, 1, 6, 5, 4]);
}

#[test]
fn integer_rows_wrap_instead_of_saturating() {
    let big = (1i64 << 62) + 1;
    let x = ints(&[big, 3, i64::MIN], &[3]);
    let each = |f: fn(i64) -> i64| vec![f(big), f(3), f(i64::MIN)];
    let got = |t: Tensor| {
        assert_eq!(t.dtype(), DType::I64);
        t.to_vec::<i64>()
    };
    assert_eq!(got(ops::square(&x).unwrap()), each(|v| v.wrapping_mul(v)));
    assert_eq!(
        got(ops::pow_scalar(&x, 3.0).unwrap()),
        each(|v| v.wrapping_pow(3))
    );
    assert_eq!(
        got(ops::scale(&x, 3.0).unwrap()),
        each(|v| v.wrapping_mul(3))
    );
    assert_eq!(got(ops::neg(&x).unwrap()), each(i64::wrapping_neg));
    assert_eq!(got(ops::abs(&x).unwrap()), each(i64::wrapping_abs));
}

#[test]
fn full_int_is_exact_and_refuses_what_the_dtype_cannot_hold() {
    let cpu = remat_core::Device::Cpu;
    let v = (1i64 << 62) + 1;
    let t = ops::full_int(&[2], v, DType::I64, cpu).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![v, v]);
    let t = ops::full_int(&[1], -7, DType::I32, cpu).unwrap();
    assert_eq!((t.dtype(), t.to_vec::<i64>()), (DType::I32, vec![-7]));
    let e = ops::full_int(&[1], 1 << 40, DType::I32, cpu).unwrap_err();
    assert!(e.to_string().contains("int32 without overflow"), "{e}");
    assert!(ops::full_int(&[1], 1, DType::F32, cpu).is_err());
}

#[test]
fn integer_max_and_min_are_exact_beyond_two_to_the_53() {
    let big = (1i64 << 53) + 1;
    let x = ints(&[big, -big, 3, big - 2, i64::MIN, 0], &[2, 3]);
    assert_eq!(
        ops::amax(&x, None, false).unwrap().to_vec::<i64>(),
        vec![big]
    );
    assert_eq!(
        ops::max(&x, Some(&[1]), false).unwrap().to_vec::<i64>(),
        vec![big, big - 2]
    );
    let m = ops::amin(&x, Some(&[0]), true).unwrap();
    assert_eq!(
        (m.shape(), m.to_vec::<i64>()),
        (&[1, 3][..], vec![big - 2, i64::MIN, 0])
    );
    assert_eq!(ops::amax(&x, None, false).unwrap().dtype(), DType::I64);
}
