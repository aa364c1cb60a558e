//! The tiled attention op (`ops::flash_attention`, CPU kernels in `cpu::flash`) against
//! PyTorch's math path written with the engine's ops: values and gradients over odd sizes
//! (one query, sizes off the tile, head widths 1 and 256), causal, bool and additive masks
//! (broadcast), rows with every key masked, grouped-query attention, dropout (float64 finite
//! differences with the generator reseeded), second order, bit-identical gradients under a
//! checkpoint, and the bytes kept between forward and backward: `q`, `k`, `v`, the output
//! and one log-sum-exp per row, never the weights.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use parking_lot::Mutex;
use remat_core::autograd::{self, GradOptions};
use remat_core::checkpoint::checkpoint_segment;
use remat_core::ops::{self, SdpaOptions};
use remat_core::{DType, Device, Tensor};

/// The byte counters are per process: every test of this binary runs alone, so the ones that
/// read them see no other test's allocations.
static SERIAL: Mutex<()> = Mutex::new(());

fn tiled(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, opts: &SdpaOptions) -> Tensor {
    ops::scaled_dot_product_attention_with(q, k, v, mask, opts).unwrap()
}

fn math(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, opts: &SdpaOptions) -> Tensor {
    ops::scaled_dot_product_attention_math(q, k, v, mask, opts).unwrap()
}

fn grads(out: &Tensor, inputs: &[Tensor], g: &Tensor) -> Vec<Vec<f64>> {
    let opts = GradOptions {
        retain_graph: Some(false),
        create_graph: false,
        allow_unused: false,
    };
    autograd::grad_with(
        std::slice::from_ref(out),
        inputs,
        Some(&[Some(g.clone())]),
        opts,
    )
    .unwrap()
    .into_iter()
    .map(|t| t.unwrap().to_vec::<f64>())
    .collect()
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

/// Values and the three gradients of the tiled op equal the math path's.
fn compare(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    opts: &SdpaOptions,
    what: &str,
) {
    let (q, k, v) = (leaf(q), leaf(k), leaf(v));
    let got = tiled(&q, &k, &v, mask, opts);
    let want = math(&q, &k, &v, mask, opts);
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    close(&got.to_vec::<f64>(), &want.to_vec::<f64>(), 1e-12, what);
    let g = det(got.shape(), 7);
    let ins = [q.clone(), k.clone(), v.clone()];
    for (i, (a, b)) in grads(&got, &ins, &g)
        .iter()
        .zip(grads(&want, &ins, &g))
        .enumerate()
    {
        close(a, &b, 1e-11, &format!("{what}: gradient {i}"));
    }
}

#[test]
fn values_and_gradients_match_the_math_path_over_odd_sizes() {
    let _s = SERIAL.lock();
    for &(l, s, e, ev) in &[
        (1, 1, 1, 1),
        (5, 7, 8, 4),
        (64, 64, 16, 16),
        (65, 130, 8, 3),
        (130, 65, 4, 9),
        (200, 129, 256, 8),
        (3, 300, 1, 2),
    ] {
        for causal in [false, true] {
            let q = det(&[2, 3, l, e], 1);
            let k = det(&[2, 3, s, e], 2);
            let v = det(&[2, 3, s, ev], 3);
            let opts = SdpaOptions {
                is_causal: causal,
                ..SdpaOptions::default()
            };
            compare(
                &q,
                &k,
                &v,
                None,
                &opts,
                &format!("L={l} S={s} E={e} Ev={ev} causal={causal}"),
            );
        }
    }
}

#[test]
fn one_batch_splits_its_keys_across_threads() {
    let _s = SERIAL.lock();
    // One (batch, head): the backward runs key blocks in parallel with private dq.
    for causal in [false, true] {
        let opts = SdpaOptions {
            is_causal: causal,
            scale: Some(0.3),
            ..SdpaOptions::default()
        };
        compare(
            &det(&[150, 16], 4),
            &det(&[170, 16], 5),
            &det(&[170, 6], 6),
            None,
            &opts,
            "2-d",
        );
    }
}

#[test]
fn masks_broadcast_and_rows_with_every_key_masked_are_zero() {
    let _s = SERIAL.lock();
    let (l, s) = (70, 90);
    let q = det(&[2, 2, l, 8], 11);
    let k = det(&[2, 2, s, 8], 12);
    let v = det(&[2, 2, s, 5], 13);
    // Bool (L, S), with row 3 masked everywhere.
    let keep: Vec<u8> = (0..l * s)
        .map(|i| u8::from((i / s) != 3 && (i * 7919) % 5 != 0))
        .collect();
    let bool_mask = Tensor::from_vec(keep, &[l, s]).unwrap();
    compare(
        &q,
        &k,
        &v,
        Some(&bool_mask),
        &SdpaOptions::default(),
        "bool mask",
    );
    // Additive (1, L, S) with -inf entries, broadcast over batches.
    let add: Vec<f64> = (0..l * s)
        .map(|i| {
            if (i / s) == 5 {
                f64::NEG_INFINITY
            } else {
                ((i % 13) as f64) * 0.1 - 0.6
            }
        })
        .collect();
    let add_mask = Tensor::from_vec(add, &[1, l, s]).unwrap();
    compare(
        &q,
        &k,
        &v,
        Some(&add_mask),
        &SdpaOptions::default(),
        "additive mask",
    );
    // The masked row: zero output, zero gradients (no NaN).
    let (ql, kl, vl) = (leaf(&q), leaf(&k), leaf(&v));
    let out = tiled(&ql, &kl, &vl, Some(&bool_mask), &SdpaOptions::default());
    let row = ops::narrow(&out, -2, 3, 1).unwrap().to_vec::<f64>();
    assert!(row.iter().all(|&x| x == 0.0), "masked row: {row:?}");
    let g = grads(&out, &[ql.clone(), kl, vl], &det(out.shape(), 9));
    assert!(g.iter().flatten().all(|x| x.is_finite()));
}

#[test]
fn grouped_query_attention_matches_repeated_heads() {
    let _s = SERIAL.lock();
    let q = det(&[2, 6, 40, 8], 21);
    let k = det(&[2, 2, 50, 8], 22);
    let v = det(&[2, 2, 50, 4], 23);
    for causal in [false, true] {
        let opts = SdpaOptions {
            is_causal: causal,
            enable_gqa: true,
            ..SdpaOptions::default()
        };
        let (ql, kl, vl) = (leaf(&q), leaf(&k), leaf(&v));
        let got = tiled(&ql, &kl, &vl, None, &opts);
        let (kr, vr) = (
            ops::repeat_interleave(&kl, 3, Some(-3)).unwrap(),
            ops::repeat_interleave(&vl, 3, Some(-3)).unwrap(),
        );
        let plain = SdpaOptions {
            enable_gqa: false,
            ..opts.clone()
        };
        let want = math(&ql, &kr, &vr, None, &plain);
        close(
            &got.to_vec::<f64>(),
            &want.to_vec::<f64>(),
            1e-12,
            "gqa values",
        );
        let g = det(got.shape(), 8);
        let ins = [ql, kl, vl];
        for (a, b) in grads(&got, &ins, &g).iter().zip(grads(&want, &ins, &g)) {
            close(a, &b, 1e-11, "gqa gradients");
        }
    }
}

#[test]
fn dropout_gradients_pass_finite_differences() {
    let _s = SERIAL.lock();
    let q = det(&[1, 2, 9, 4], 31);
    let k = det(&[1, 2, 11, 4], 32);
    let v = det(&[1, 2, 11, 3], 33);
    for causal in [false, true] {
        let opts = SdpaOptions {
            is_causal: causal,
            dropout_p: 0.3,
            ..SdpaOptions::default()
        };
        // Each evaluation draws the same mask: the generator is reseeded first.
        check_grad(
            &[q.clone(), k.clone(), v.clone()],
            |t| {
                remat_core::manual_seed(5);
                tiled(&t[0], &t[1], &t[2], None, &opts)
            },
            1e-6,
        );
    }
    // The dropped weights are the math path's for the same mask: with p = 1 all are dropped.
    let all = SdpaOptions {
        dropout_p: 1.0,
        ..SdpaOptions::default()
    };
    assert!(tiled(&q, &k, &v, None, &all)
        .to_vec::<f64>()
        .iter()
        .all(|&x| x == 0.0));
}

#[test]
fn second_order_matches_the_math_path() {
    let _s = SERIAL.lock();
    let q = leaf(&det(&[1, 2, 7, 4], 41));
    let k = leaf(&det(&[1, 2, 9, 4], 42));
    let v = leaf(&det(&[1, 2, 9, 3], 43));
    let opts = SdpaOptions {
        is_causal: true,
        ..SdpaOptions::default()
    };
    let create = GradOptions {
        retain_graph: Some(true),
        create_graph: true,
        allow_unused: false,
    };
    let second = |out: Tensor| -> Vec<Vec<f64>> {
        let g = det(out.shape(), 3);
        let loss = ops::sum(&ops::mul(&out, &g).unwrap(), None, false).unwrap();
        let first =
            autograd::grad_with(&[loss], &[q.clone(), k.clone(), v.clone()], None, create).unwrap();
        let penalty = first
            .iter()
            .map(|g| {
                ops::sum(
                    &ops::mul(g.as_ref().unwrap(), g.as_ref().unwrap()).unwrap(),
                    None,
                    false,
                )
                .unwrap()
            })
            .reduce(|a, b| ops::add(&a, &b).unwrap())
            .unwrap();
        grads(
            &penalty,
            &[q.clone(), k.clone(), v.clone()],
            &Tensor::scalar(1.0, DType::F64),
        )
    };
    let got = second(tiled(&q, &k, &v, None, &opts));
    let want = second(math(&q, &k, &v, None, &opts));
    for (a, b) in got.iter().zip(&want) {
        close(a, b, 1e-10, "second order");
    }
}

#[test]
fn a_checkpoint_gives_the_same_bits_and_the_op_keeps_o_of_t() {
    let _s = SERIAL.lock();
    let (b, h, t, d) = (2, 2, 256, 16);
    let q = leaf(&det(&[b, h, t, d], 51));
    let k = leaf(&det(&[b, h, t, d], 52));
    let v = leaf(&det(&[b, h, t, d], 53));
    let opts = SdpaOptions {
        is_causal: true,
        ..SdpaOptions::default()
    };
    // Kept between forward and backward: the packed output (t × (d + 1) per head), only.
    let base = remat_core::memory_allocated(Device::Cpu);
    let out = tiled(&q, &k, &v, None, &opts);
    let kept = remat_core::memory_allocated(Device::Cpu) - base;
    assert_eq!(
        kept,
        b * h * t * (d + 1) * 8,
        "not O(T): the weights would be {}",
        b * h * t * t * 8
    );
    let g = det(out.shape(), 54);
    let ins = [q.clone(), k.clone(), v.clone()];
    let plain = grads(&out, &ins, &g);
    drop(out);
    let o2 = opts.clone();
    let ckpt = checkpoint_segment(&ins, move |t| {
        // Errors propagate: the recompute stops early through one.
        Ok(vec![ops::scaled_dot_product_attention_with(
            &t[0], &t[1], &t[2], None, &o2,
        )?])
    })
    .unwrap()
    .remove(0);
    assert_eq!(
        grads(&ckpt, &ins, &g),
        plain,
        "checkpointed gradients differ"
    );
    // The same problem in float32 against float64 (the kernels are generic).
    let q32 = ops::to_dtype(&q.detach(), DType::F32).unwrap();
    let k32 = ops::to_dtype(&k.detach(), DType::F32).unwrap();
    let v32 = ops::to_dtype(&v.detach(), DType::F32).unwrap();
    let o32 = tiled(&q32, &k32, &v32, None, &opts).to_vec::<f32>();
    let o64 = tiled(&q.detach(), &k.detach(), &v.detach(), None, &opts).to_vec::<f64>();
    for (a, b) in o32.iter().zip(&o64) {
        assert!((*a as f64 - b).abs() < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn the_output_laid_out_per_token_reshapes_to_tokens_without_a_copy() {
    let _s = SERIAL.lock();
    // A GPT block's attention: q, k, v are head views of one projection (b, t, 3·d), and the
    // output goes back to (b, t, d) through `transpose(1, 2).reshape(...)`.
    let (b, h, t, e) = (2, 3, 40, 4);
    let d = h * e;
    let qkv = leaf(&det(&[b, t, 3 * d], 61));
    let heads = |i: usize| {
        let part = ops::narrow(&qkv, 2, (i * d) as isize, d as isize).unwrap();
        ops::transpose(&ops::reshape(&part, &[b, t, h, e]).unwrap(), 1, 2).unwrap()
    };
    let (q, k, v) = (heads(0), heads(1), heads(2));
    let opts = SdpaOptions {
        is_causal: true,
        ..SdpaOptions::default()
    };
    let out = tiled(&q, &k, &v, None, &opts);
    let base = remat_core::memory_allocated(Device::Cpu);
    let tokens = ops::reshape(&ops::transpose(&out, 1, 2).unwrap(), &[b, t, d]).unwrap();
    assert_eq!(
        remat_core::memory_allocated(Device::Cpu),
        base,
        "the reshape to tokens copied the output"
    );
    let g = det(tokens.shape(), 62);
    let got = grads(&tokens, std::slice::from_ref(&qkv), &g);
    let (q, k, v) = (heads(0), heads(1), heads(2));
    let want = math(&q, &k, &v, None, &opts);
    let want_tokens = ops::reshape(&ops::transpose(&want, 1, 2).unwrap(), &[b, t, d]).unwrap();
    close(
        &tokens.to_vec::<f64>(),
        &want_tokens.to_vec::<f64>(),
        1e-12,
        "values",
    );
    let expect = grads(&want_tokens, std::slice::from_ref(&qkv), &g);
    close(&got[0], &expect[0], 1e-10, "gradient of the projection");
}
