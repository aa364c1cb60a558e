//! `index_select` and its backward (`index_add`) on tensors large enough to run on the pool:
//! the rows and the sums of repeated indices equal a plain loop's, bit for bit, at any
//! number of threads, along a leading and an inner axis; and PyTorch's rule for a 0-d input.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::{autograd, ops, Tensor};

/// Indices into an axis of extent `n`, with repeats (every third index reused).
fn ids(count: usize, n: usize) -> Vec<i64> {
    (0..count)
        .map(|j| {
            if j % 3 == 2 {
                ((j - 2) * 7 % n) as i64
            } else {
                (j * 7919 % n) as i64
            }
        })
        .collect()
}

/// `x (a, n, c)` selected along axis 1 by `idx`, by plain loops.
fn select_by_loop(x: &[f64], (a, n, c): (usize, usize, usize), idx: &[i64]) -> Vec<f64> {
    let mut out = Vec::new();
    for o in 0..a {
        for &i in idx {
            let at = (o * n + i as usize) * c;
            out.extend_from_slice(&x[at..at + c]);
        }
    }
    out
}

/// Rows `g (a, k, c)` summed into zeros of `(a, n, c)` at `idx`, by plain loops in `j` order.
fn add_by_loop(g: &[f64], (a, n, c): (usize, usize, usize), idx: &[i64]) -> Vec<f64> {
    let k = idx.len();
    let mut out = vec![0.0; a * n * c];
    for o in 0..a {
        for (j, &i) in idx.iter().enumerate() {
            for e in 0..c {
                out[(o * n + i as usize) * c + e] += g[(o * k + j) * c + e];
            }
        }
    }
    out
}

/// The selection and the input's gradient for an upstream gradient `g`.
fn select_and_grad(x: &Tensor, dim: isize, idx: &Tensor, g: &Tensor) -> (Vec<f64>, Vec<f64>) {
    let x = leaf(x);
    let y = ops::index_select(&x, dim, idx).unwrap();
    let out = y.to_vec::<f64>();
    autograd::backward(&[(y, Some(g.clone()))], false).unwrap();
    (out, x.grad().unwrap().to_vec::<f64>())
}

#[test]
fn large_selections_and_their_gradients_match_plain_loops_at_any_thread_count() {
    // (a, n, c) with the selection along axis 1: a leading axis (a = 1) and an inner one.
    for (a, n, c, k) in [(1, 3000, 96, 5000), (3, 1500, 64, 2000)] {
        let x = det(&[a, n, c], 1);
        let list = ids(k, n);
        let idx = Tensor::from_vec(list.clone(), &[k]).unwrap();
        let g = det(&[a, k, c], 2);
        let want_y = select_by_loop(&x.to_vec::<f64>(), (a, n, c), &list);
        let want_dx = add_by_loop(&g.to_vec::<f64>(), (a, n, c), &list);
        for threads in [1, 2, 3] {
            remat_core::set_num_threads(threads).unwrap();
            let (y, dx) = select_and_grad(&x, 1, &idx, &g);
            assert_eq!(y, want_y, "index_select ({a}, {n}, {c}), {threads} threads");
            assert_eq!(dx, want_dx, "index_add ({a}, {n}, {c}), {threads} threads");
        }
    }
}

#[test]
fn a_0d_input_takes_dim_0_and_one_position_as_pytorch() {
    let x = Tensor::from_vec(vec![2.5f64], &[]).unwrap();
    for (dim, idx) in [(0, vec![0i64]), (-1, vec![0])] {
        let idx = Tensor::from_vec(idx, &[1]).unwrap();
        let g = Tensor::from_vec(vec![3.0f64], &[]).unwrap();
        let (y, dx) = select_and_grad(&x, dim, &idx, &g);
        assert_eq!((y, dx), (vec![2.5], vec![3.0]));
    }
    let zero = Tensor::from_vec(vec![0i64], &[]).unwrap();
    assert_eq!(
        ops::index_select(&x, 0, &zero).unwrap().shape(),
        &[] as &[usize]
    );
    let e = ops::index_select(&x, 1, &zero).unwrap_err();
    assert!(
        e.is_dim_out_of_range() && e.to_string().contains("[-1, 0]"),
        "{e}"
    );
    let two = Tensor::from_vec(vec![0i64, 0], &[2]).unwrap();
    let e = ops::index_select(&x, 0, &two).unwrap_err();
    assert!(e.to_string().contains("exactly one position"), "{e}");
    let one = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    assert!(ops::index_select(&x, 0, &one).is_err());
}
