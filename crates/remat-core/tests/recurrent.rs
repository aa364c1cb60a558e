//! The recurrent layer ops (`ops::lstm_layer`, `gru_layer`, `rnn_layer`; kernels in
//! `cpu::recurrent`) against a scalar float64 reference of PyTorch's equations: values of the
//! output and final states for every cell, both directions, with and without a bias;
//! gradients against finite differences; second order (the backward composed from
//! differentiable ops, differentiated again through the saved gates) against finite
//! differences of the first; the composed backward against the kernel's; bit-identical
//! gradients under a checkpoint; the bytes kept between forward and backward (the packed
//! slabs, never the projected inputs); float32 against float64; shape errors.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use parking_lot::Mutex;
use remat_core::autograd::{self, GradOptions};
use remat_core::checkpoint::checkpoint_segment;
use remat_core::ops;
use remat_core::{DType, Device, Tensor};

/// The byte counters are per process: every test of this binary runs alone, so the one that
/// reads them sees no other test's allocations.
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Lstm,
    Gru,
    Tanh,
    Relu,
}

const KINDS: [Kind; 4] = [Kind::Lstm, Kind::Gru, Kind::Tanh, Kind::Relu];

impl Kind {
    fn gates(self) -> usize {
        match self {
            Kind::Lstm => 4,
            Kind::Gru => 3,
            _ => 1,
        }
    }
}

/// The layer's output, final h and (LSTM) final c, concatenated flat: one tensor to compare
/// and differentiate. `ins`: x_proj, h0, (c0), w_hh, (b_hh).
fn run(kind: Kind, ins: &[Tensor], bias: bool, reverse: bool) -> Tensor {
    try_run(kind, ins, bias, reverse).unwrap()
}

/// [`run`], errors returned (a checkpoint's recompute stops early through one).
fn try_run(kind: Kind, ins: &[Tensor], bias: bool, reverse: bool) -> remat_core::Result<Tensor> {
    let flat = |t: &Tensor| ops::reshape(t, &[t.numel()]);
    let parts = match kind {
        Kind::Lstm => {
            let b = bias.then(|| &ins[4]);
            let (o, h, c) = ops::lstm_layer(&ins[0], &ins[1], &ins[2], &ins[3], b, reverse)?;
            vec![flat(&o)?, flat(&h)?, flat(&c)?]
        }
        Kind::Gru => {
            let b = bias.then(|| &ins[3]);
            let (o, h) = ops::gru_layer(&ins[0], &ins[1], &ins[2], b, reverse)?;
            vec![flat(&o)?, flat(&h)?]
        }
        Kind::Tanh | Kind::Relu => {
            let b = bias.then(|| &ins[3]);
            let (o, h) = ops::rnn_layer(&ins[0], &ins[1], &ins[2], b, kind == Kind::Relu, reverse)?;
            vec![flat(&o)?, flat(&h)?]
        }
    };
    ops::cat(&parts, 0)
}

/// Inputs for a layer of `steps x batch x hidden` (seeded; ReLU's values kept away from its
/// kink by the seeds, checked by the finite differences).
fn inputs(kind: Kind, (t, b, h): (usize, usize, usize), bias: bool, seed: u64) -> Vec<Tensor> {
    let g = kind.gates();
    let mut v = vec![det(&[t, b, g * h], seed), det(&[b, h], seed + 1)];
    if kind == Kind::Lstm {
        v.push(det(&[b, h], seed + 2));
    }
    // Recurrent weights of PyTorch's scale for wide layers (the state neither explodes nor
    // vanishes), 0.7 for narrow ones.
    let scale = 0.7 / (h as f64 / 4.0).sqrt().max(1.0);
    v.push(ops::scale(&det(&[g * h, h], seed + 3), scale).unwrap());
    if bias {
        v.push(ops::scale(&det(&[g * h], seed + 4), 0.5).unwrap());
    }
    v
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// PyTorch's equations in plain float64 loops: the flat `[output, h_n, (c_n)]`.
fn reference(kind: Kind, ins: &[Tensor], bias: bool, reverse: bool) -> Vec<f64> {
    let xp = ins[0].to_vec::<f64>();
    let (t, b) = (ins[0].shape()[0], ins[0].shape()[1]);
    let lstm = kind == Kind::Lstm;
    let wi = if lstm { 3 } else { 2 };
    let w = ins[wi].to_vec::<f64>();
    let h = ins[wi].shape()[1];
    let g = kind.gates();
    let bb = if bias {
        ins[wi + 1].to_vec::<f64>()
    } else {
        vec![0.0; g * h]
    };
    let mut hs = ins[1].to_vec::<f64>();
    let mut cs = if lstm { ins[2].to_vec::<f64>() } else { vec![] };
    let mut out = vec![0.0; t * b * h];
    for s in 0..t {
        let tt = if reverse { t - 1 - s } else { s };
        let mut nh = vec![0.0; b * h];
        for r in 0..b {
            let hh: Vec<f64> = (0..g * h)
                .map(|j| bb[j] + (0..h).map(|p| w[j * h + p] * hs[r * h + p]).sum::<f64>())
                .collect();
            let x = |j: usize| xp[(tt * b + r) * g * h + j];
            for j in 0..h {
                nh[r * h + j] = match kind {
                    Kind::Lstm => {
                        let i = sig(x(j) + hh[j]);
                        let f = sig(x(h + j) + hh[h + j]);
                        let gg = (x(2 * h + j) + hh[2 * h + j]).tanh();
                        let o = sig(x(3 * h + j) + hh[3 * h + j]);
                        let c = f * cs[r * h + j] + i * gg;
                        cs[r * h + j] = c;
                        o * c.tanh()
                    }
                    Kind::Gru => {
                        let rg = sig(x(j) + hh[j]);
                        let z = sig(x(h + j) + hh[h + j]);
                        let n = (x(2 * h + j) + rg * hh[2 * h + j]).tanh();
                        (1.0 - z) * n + z * hs[r * h + j]
                    }
                    Kind::Tanh => (x(j) + hh[j]).tanh(),
                    Kind::Relu => (x(j) + hh[j]).max(0.0),
                };
            }
        }
        hs = nh;
        out[tt * b * h..(tt + 1) * b * h].copy_from_slice(&hs);
    }
    let mut all = out;
    all.extend(&hs);
    all.extend(&cs);
    all
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

fn grads(out: &Tensor, inputs: &[Tensor], g: &Tensor, create_graph: bool) -> Vec<Tensor> {
    let opts = GradOptions {
        retain_graph: None,
        create_graph,
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
    .map(|t| t.unwrap())
    .collect()
}

#[test]
fn every_cell_matches_the_equations_in_both_directions() {
    let _s = SERIAL.lock();
    for kind in KINDS {
        for reverse in [false, true] {
            for bias in [false, true] {
                // The last is large enough to split the batch between threads.
                for sizes in [(5, 3, 4), (1, 1, 1), (3, 2, 7), (16, 5, 96)] {
                    let ins = inputs(kind, sizes, bias, 10);
                    let got = run(kind, &ins, bias, reverse).to_vec::<f64>();
                    let want = reference(kind, &ins, bias, reverse);
                    close(
                        &got,
                        &want,
                        1e-12,
                        &format!("{kind:?} {sizes:?} rev {reverse}"),
                    );
                }
            }
        }
    }
}

#[test]
fn gradients_match_finite_differences() {
    let _s = SERIAL.lock();
    for kind in KINDS {
        for reverse in [false, true] {
            let ins = inputs(kind, (4, 2, 3), true, 20);
            check_grad(&ins, |ts| run(kind, ts, true, reverse), 1e-6);
        }
        let ins = inputs(kind, (3, 2, 2), false, 30);
        check_grad(&ins, |ts| run(kind, ts, false, false), 1e-6);
    }
}

/// `d/dx <grad(x), v>` by double backward against central differences of the first-order
/// gradient: the composed backward differentiated through the saved slabs, whose gradients
/// reach the kernel's backward.
#[test]
fn second_order_matches_finite_differences_of_the_gradient() {
    let _s = SERIAL.lock();
    for kind in KINDS {
        for reverse in [false, true] {
            let ins = inputs(kind, (3, 2, 2), true, 40);
            let w = det(&[run(kind, &ins, true, reverse).numel()], 41);
            let vs: Vec<Tensor> = ins
                .iter()
                .enumerate()
                .map(|(i, x)| det(x.shape(), 50 + i as u64))
                .collect();
            // <grad(x), v> at x (a plain first-order backward).
            let directional = |xs: &[Tensor]| -> f64 {
                let leaves: Vec<Tensor> = xs.iter().map(leaf).collect();
                let out = run(kind, &leaves, true, reverse);
                grads(&out, &leaves, &w, false)
                    .iter()
                    .zip(&vs)
                    .map(|(g, v)| {
                        g.to_vec::<f64>()
                            .iter()
                            .zip(v.to_vec::<f64>())
                            .map(|(a, b)| a * b)
                            .sum::<f64>()
                    })
                    .sum()
            };
            let leaves: Vec<Tensor> = ins.iter().map(leaf).collect();
            let out = run(kind, &leaves, true, reverse);
            let gs = grads(&out, &leaves, &w, true);
            let mut hv: Option<Tensor> = None;
            for (g, v) in gs.iter().zip(&vs) {
                let term = ops::sum(&ops::mul(g, v).unwrap(), None, false).unwrap();
                hv = Some(match hv {
                    Some(acc) => ops::add(&acc, &term).unwrap(),
                    None => term,
                });
            }
            let hv = hv.unwrap();
            let analytic = autograd::grad_with(
                std::slice::from_ref(&hv),
                &leaves,
                None,
                GradOptions {
                    retain_graph: None,
                    create_graph: false,
                    allow_unused: true,
                },
            )
            .unwrap();
            let eps = 1e-5;
            for (k, x) in ins.iter().enumerate() {
                let a = analytic[k]
                    .as_ref()
                    .map(|t| t.to_vec::<f64>())
                    .unwrap_or_else(|| vec![0.0; x.numel()]);
                let base = x.to_vec::<f64>();
                for i in 0..base.len() {
                    let shifted = |d: f64| {
                        let mut v = base.clone();
                        v[i] += d;
                        let mut xs = ins.clone();
                        xs[k] = Tensor::from_vec(v, x.shape()).unwrap();
                        directional(&xs)
                    };
                    let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
                    assert!(
                        (fd - a[i]).abs() <= 1e-5 * (1.0 + fd.abs()),
                        "{kind:?} reverse {reverse}: input {k}[{i}]: {} vs {fd}",
                        a[i]
                    );
                }
            }
        }
    }
}

#[test]
fn the_composed_backward_gives_the_kernels_gradients() {
    let _s = SERIAL.lock();
    // create_graph runs the backward composed from differentiable ops; it must agree with
    // the kernel's backward.
    for (kind, sizes) in KINDS
        .iter()
        .flat_map(|&k| [(k, (6, 3, 5)), (k, (16, 5, 96))])
    {
        for reverse in [false, true] {
            let ins = inputs(kind, sizes, true, 60);
            let leaves: Vec<Tensor> = ins.iter().map(leaf).collect();
            let out = run(kind, &leaves, true, reverse);
            let w = det(out.shape(), 61);
            let fast = grads(&out, &leaves, &w, false);
            let out = run(kind, &leaves, true, reverse);
            let composed = grads(&out, &leaves, &w, true);
            for (i, (a, b)) in fast.iter().zip(&composed).enumerate() {
                close(
                    &a.to_vec::<f64>(),
                    &b.detach().to_vec::<f64>(),
                    1e-11,
                    &format!("{kind:?} {sizes:?} rev {reverse} input {i}"),
                );
            }
        }
    }
}

#[test]
fn a_checkpoint_gives_the_same_bits_and_the_op_keeps_only_its_slabs() {
    let _s = SERIAL.lock();
    for kind in KINDS {
        let (t, b, h) = (16, 4, 8);
        let ins: Vec<Tensor> = inputs(kind, (t, b, h), true, 70).iter().map(leaf).collect();
        let slabs = match kind {
            Kind::Lstm => 6,
            Kind::Gru => 5,
            _ => 1,
        };
        // Kept between forward and backward: the packed slabs only (x_proj is the caller's;
        // h0, c0 and w_hh are inputs), not x_proj again.
        let base = remat_core::memory_allocated(Device::Cpu);
        let out = match kind {
            Kind::Lstm => {
                ops::lstm_layer(&ins[0], &ins[1], &ins[2], &ins[3], Some(&ins[4]), false)
                    .unwrap()
                    .0
            }
            Kind::Gru => {
                ops::gru_layer(&ins[0], &ins[1], &ins[2], Some(&ins[3]), false)
                    .unwrap()
                    .0
            }
            _ => {
                ops::rnn_layer(
                    &ins[0],
                    &ins[1],
                    &ins[2],
                    Some(&ins[3]),
                    kind == Kind::Relu,
                    false,
                )
                .unwrap()
                .0
            }
        };
        let kept = remat_core::memory_allocated(Device::Cpu) - base;
        assert_eq!(kept, slabs * t * b * h * 8, "{kind:?}");
        drop(out);
        let g = det(&[run(kind, &ins, true, true).numel()], 71);
        let out = run(kind, &ins, true, true);
        let plain: Vec<Vec<f64>> = grads(&out, &ins, &g, false)
            .iter()
            .map(|t| t.to_vec::<f64>())
            .collect();
        drop(out);
        let ckpt = checkpoint_segment(&ins, move |ts| Ok(vec![try_run(kind, ts, true, true)?]))
            .unwrap()
            .remove(0);
        let got: Vec<Vec<f64>> = grads(&ckpt, &ins, &g, false)
            .iter()
            .map(|t| t.to_vec::<f64>())
            .collect();
        assert_eq!(got, plain, "{kind:?}: checkpointed gradients differ");
    }
}

#[test]
fn float32_agrees_with_float64() {
    let _s = SERIAL.lock();
    for kind in KINDS {
        let ins = inputs(kind, (20, 3, 16), true, 80);
        let want = run(kind, &ins, true, false).to_vec::<f64>();
        let ins32: Vec<Tensor> = ins
            .iter()
            .map(|t| ops::to_dtype(t, DType::F32).unwrap())
            .collect();
        let got = run(kind, &ins32, true, false).to_vec::<f32>();
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (*a as f64 - b).abs() < 2e-5 * (1.0 + b.abs()),
                "{kind:?}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn bad_shapes_are_shape_errors_naming_the_op_and_the_shapes() {
    let _s = SERIAL.lock();
    let x = det(&[5, 3, 8], 1);
    let h0 = det(&[3, 2], 2);
    let w = det(&[8, 2], 3);
    let cases: Vec<(remat_core::Error, &str)> = vec![
        (
            ops::lstm_layer(&det(&[5, 3, 6], 1), &h0, &h0, &w, None, false)
                .err()
                .unwrap(),
            "(5, 3, 6)",
        ),
        (
            ops::lstm_layer(&x, &det(&[2, 2], 4), &h0, &w, None, false)
                .err()
                .unwrap(),
            "h0 must be (batch, hidden_size) = (3, 2), got (2, 2)",
        ),
        (
            ops::lstm_layer(&x, &h0, &det(&[3, 3], 4), &w, None, false)
                .err()
                .unwrap(),
            "c0",
        ),
        (
            ops::gru_layer(&det(&[5, 3, 6], 1), &h0, &det(&[6, 3], 5), None, false)
                .err()
                .unwrap(),
            "w_hh must be (3 * hidden_size, hidden_size), got (6, 3)",
        ),
        (
            ops::rnn_layer(
                &det(&[5, 3, 2], 1),
                &h0,
                &det(&[2, 2], 5),
                Some(&det(&[3], 6)),
                false,
                false,
            )
            .err()
            .unwrap(),
            "b_hh",
        ),
        (
            ops::rnn_layer(
                &det(&[0, 3, 2], 1),
                &h0,
                &det(&[2, 2], 5),
                None,
                false,
                false,
            )
            .err()
            .unwrap(),
            "empty",
        ),
    ];
    for (e, want) in cases {
        let msg = e.to_string();
        assert!(matches!(e, remat_core::Error::Shape { .. }), "{msg}");
        assert!(msg.contains(want), "{msg} lacks {want}");
        assert!(msg.contains("_layer"), "{msg} names no op");
    }
}
