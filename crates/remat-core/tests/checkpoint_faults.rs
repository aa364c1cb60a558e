//! Regression tests for checkpoint core faults: recursion on long chains,
//! the replay stream under threads, random ops in scopes, `grad` inside a segment, scopes
//! and graphs across threads, errors instead of panics, a bounded profiler, and early stop.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use parking_lot::Mutex;
use remat_core::autograd::{self, GradOptions};
use remat_core::checkpoint::{
    self, checkpoint_segment, checkpoint_segment_flex, profiler, SegmentOptions,
};
use remat_core::{ops, rng, DType, Device, Error, Tensor};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// These tests read global counters (bytes, live state, the profiler, the generator): one
/// at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn scalar(v: f64) -> Tensor {
    Tensor::scalar(v, DType::F64)
}

fn sum(t: &Tensor) -> Tensor {
    ops::sum(t, None, false).unwrap()
}

fn backward(loss: &Tensor) {
    autograd::backward(&[(loss.clone(), None)], false).unwrap();
}

/// Run `f` on a thread with a small stack: a recursion over a long chain would overflow it
/// (and abort the test binary), an iterative walk does not.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn long_chains_recompute_and_drop_without_recursion() {
    let _s = SERIAL.lock();
    on_small_stack(|| {
        let n = 100_000;
        let x = leaf(&det(&[4], 1));
        // Checkpointed tensors.
        let mut y = x.clone();
        for _ in 0..n {
            y = checkpoint::checkpoint(&ops::mul(&y, &scalar(1.0)).unwrap()).unwrap();
        }
        backward(&sum(&y));
        assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![1.0; 4]);
        drop(y);
        // Scope ops, dropped once without backward and once after it.
        for run_backward in [false, true] {
            x.set_grad(None).unwrap();
            let mut y = x.clone();
            {
                let _scope = checkpoint::checkpoint_scope();
                for _ in 0..n {
                    y = ops::mul(&y, &scalar(1.0)).unwrap();
                }
            }
            if run_backward {
                backward(&sum(&ops::mul(&y, &y).unwrap()));
                let expected: Vec<f64> = x.to_vec::<f64>().iter().map(|v| 2.0 * v).collect();
                assert_eq!(x.grad().unwrap().to_vec::<f64>(), expected);
            }
        }
        // Segments fed by checkpointed tensors, alternating.
        x.set_grad(None).unwrap();
        let mut y = x.clone();
        for _ in 0..20_000 {
            let h = checkpoint::checkpoint(&ops::mul(&y, &scalar(1.0)).unwrap()).unwrap();
            y = checkpoint_segment(&[h], |t| Ok(vec![ops::mul(&t[0], &scalar(1.0))?]))
                .unwrap()
                .remove(0);
        }
        backward(&sum(&y));
        assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![1.0; 4]);
        drop(y);
        // Plain ops.
        x.set_grad(None).unwrap();
        let mut y = x.clone();
        for _ in 0..n {
            y = ops::mul(&y, &scalar(1.0)).unwrap();
        }
        backward(&sum(&y));
        assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![1.0; 4]);
    });
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

#[test]
fn a_recompute_replays_its_own_stream_while_another_thread_draws() {
    // The forward pauses between the region's start and its dropout, so the other thread
    // always draws in between; the dropout's output is saved (by the matmul), so a recompute
    // drawing another mask would give the weight another gradient.
    let _s = SERIAL.lock();
    let w = leaf(&Tensor::from_vec(vec![1.0f64; 64], &[64, 1]).unwrap());
    let x = Tensor::from_vec(vec![1.0f64; 8 * 64], &[8, 64]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let drawer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut keys = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                keys.push(rng::reserve(1).offset);
            }
            keys
        })
    };
    for _ in 0..100 {
        w.set_grad(None).unwrap();
        let forward_mask: Arc<Mutex<Option<Vec<f64>>>> = Arc::default();
        let (w2, seen) = (w.clone(), forward_mask.clone());
        let y = checkpoint_segment(std::slice::from_ref(&x), move |t| {
            std::thread::sleep(std::time::Duration::from_micros(300));
            let d = ops::dropout(&t[0], 0.5, true)?;
            seen.lock().get_or_insert_with(|| d.to_vec::<f64>());
            Ok(vec![ops::matmul(&d, &w2)?])
        })
        .unwrap()
        .remove(0);
        backward(&sum(&y));
        // w.grad = the forward's dropout output summed over the batch.
        let d = forward_mask.lock().clone().unwrap();
        let expected: Vec<f64> = (0..64)
            .map(|j| (0..8).map(|i| d[i * 64 + j]).sum())
            .collect();
        assert_eq!(w.grad().unwrap().to_vec::<f64>(), expected);
    }
    stop.store(true, Ordering::Relaxed);
    let keys = drawer.join().unwrap();
    // The global generator was never rewound: the other thread never got a counter twice.
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), keys.len());
}

#[test]
fn the_global_generator_advances_as_in_the_plain_run() {
    let _s = SERIAL.lock();
    let w = leaf(&det(&[8, 8], 5));
    let x = det(&[4, 8], 6);
    let f = {
        let w = w.clone();
        move |t: &[Tensor]| -> remat_core::Result<Vec<Tensor>> {
            let h = ops::dropout(&ops::tanh(&ops::matmul(&t[0], &w)?)?, 0.3, true)?;
            Ok(vec![ops::add(
                &h,
                &ops::randn(&[4, 8], DType::F64, Device::Cpu)?,
            )?])
        }
    };
    let mut after = Vec::new();
    let mut grads = Vec::new();
    for ckpt in [false, true] {
        rng::manual_seed(9);
        w.set_grad(None).unwrap();
        let y = if ckpt {
            checkpoint_segment(std::slice::from_ref(&x), f.clone())
                .unwrap()
                .remove(0)
        } else {
            f(std::slice::from_ref(&x)).unwrap().remove(0)
        };
        backward(&sum(&y));
        after.push(rng::get_state());
        grads.push(w.grad().unwrap().to_vec::<f64>());
    }
    assert_eq!(after[0], after[1]);
    assert_eq!(grads[0], grads[1]);
}

#[test]
fn random_ops_in_a_scope_are_replayed_and_the_profiler_counts_what_was_freed() {
    let _s = SERIAL.lock();
    let n = 2048;
    let x = leaf(&det(&[n], 7));
    let two = scalar(2.0);
    let noisy = |x: &Tensor| {
        let noise = ops::randn(&[n], DType::F64, Device::Cpu).unwrap();
        let mask = ops::dropout(
            &ops::rand(&[n], DType::F64, Device::Cpu).unwrap(),
            0.5,
            true,
        )
        .unwrap();
        let h = ops::add(
            &ops::add(&ops::mul(x, &two).unwrap(), &noise).unwrap(),
            &mask,
        )
        .unwrap();
        ops::tanh(&h).unwrap()
    };
    let mut results = Vec::new();
    for scoped in [false, true] {
        rng::manual_seed(3);
        x.set_grad(None).unwrap();
        let base = remat_core::memory_allocated(Device::Cpu);
        profiler::reset();
        profiler::start_tracking();
        let y = if scoped {
            let _scope = checkpoint::checkpoint_scope();
            noisy(&x)
        } else {
            noisy(&x)
        };
        let loss = sum(&y);
        drop(y);
        let kept = remat_core::memory_allocated(Device::Cpu) - base;
        let saved = profiler::memory_saved();
        backward(&loss);
        profiler::stop_tracking();
        results.push((
            kept,
            saved,
            x.grad().unwrap().to_vec::<f64>(),
            rng::get_state(),
        ));
    }
    let (plain, scope) = (&results[0], &results[1]);
    assert_eq!(plain.2, scope.2, "gradients differ");
    assert_eq!(plain.3, scope.3, "the generator advanced differently");
    // Neither the noise nor the tanh output is kept: one n-element buffer less.
    assert_eq!(plain.0 - scope.0, n * 8);
    assert_eq!(
        scope.1,
        plain.0 - scope.0,
        "memory_saved must be what was freed"
    );
    profiler::reset();
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

/// A gradient penalty computed inside the function: `sum(tanh(x W)) + |d/dx|^2 / 2`.
fn penalty(w: &Tensor, create_graph: bool, t: &Tensor) -> remat_core::Result<Tensor> {
    let y = ops::tanh(&ops::matmul(t, w)?)?;
    let opts = GradOptions {
        retain_graph: Some(true),
        create_graph,
        allow_unused: false,
    };
    let g = autograd::grad_with(&[sum(&y)], std::slice::from_ref(t), None, opts)?
        .remove(0)
        .unwrap();
    ops::add(&sum(&y), &ops::mul(&sum(&ops::mul(&g, &g)?), &scalar(0.5))?)
}

#[test]
fn grad_inside_a_segment_matches_the_plain_run() {
    let _s = SERIAL.lock();
    for create_graph in [true, false] {
        let w = leaf(&det(&[6, 6], 8));
        let x = leaf(&det(&[4, 6], 9));
        let mut grads = Vec::new();
        for ckpt in [false, true] {
            w.set_grad(None).unwrap();
            x.set_grad(None).unwrap();
            let out = if ckpt {
                let w2 = w.clone();
                checkpoint_segment(std::slice::from_ref(&x), move |t| {
                    Ok(vec![penalty(&w2, create_graph, &t[0])?])
                })
                .unwrap()
                .remove(0)
            } else {
                penalty(&w, create_graph, &x).unwrap()
            };
            backward(&out);
            grads.push((
                w.grad().unwrap().to_vec::<f64>(),
                x.grad().unwrap().to_vec::<f64>(),
            ));
        }
        assert_eq!(grads[0], grads[1], "create_graph={create_graph}");
    }
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

/// `d/dx` of `f(x)` with its own graph (`create_graph`), as PyTorch's nested-checkpoint tests
/// wrap a function in `grad`.
fn grad_of(
    f: impl Fn(&Tensor) -> remat_core::Result<Tensor>,
    x: &Tensor,
) -> remat_core::Result<Tensor> {
    let opts = GradOptions {
        retain_graph: None,
        create_graph: true,
        allow_unused: false,
    };
    let y = sum(&f(x)?);
    Ok(
        autograd::grad_with(&[y], std::slice::from_ref(x), None, opts)?
            .remove(0)
            .unwrap(),
    )
}

fn sin_exp_sin(x: &Tensor) -> remat_core::Result<Tensor> {
    ops::sin(&ops::exp(&ops::sin(x)?)?)
}

fn checkpointed(
    x: &Tensor,
    f: fn(&Tensor) -> remat_core::Result<Tensor>,
) -> remat_core::Result<Tensor> {
    Ok(checkpoint_segment(std::slice::from_ref(x), move |t| Ok(vec![f(&t[0])?]))?.remove(0))
}

#[test]
fn a_nested_segment_is_recomputed_once_per_grad_of_its_outer_segments_forward() {
    // checkpoint(grad(grad(checkpoint(f)))): while the outer forward runs, the inner segment
    // is recomputed by the first grad and again by the second, from the outer's saved input.
    let _s = SERIAL.lock();
    let x = leaf(&det(&[3], 11));
    let plain = grad_of(|x| grad_of(sin_exp_sin, x), &x).unwrap();
    let nested = checkpoint_segment(std::slice::from_ref(&x), |t| {
        Ok(vec![grad_of(
            |x| grad_of(|x| checkpointed(x, sin_exp_sin), x),
            &t[0],
        )?])
    })
    .unwrap()
    .remove(0);
    assert_eq!(nested.to_vec::<f64>(), plain.to_vec::<f64>());
    // And the third order through both levels of checkpoints.
    let third_plain = grad_of(|x| grad_of(|x| grad_of(sin_exp_sin, x), x), &x).unwrap();
    let third = grad_of(
        |x| {
            Ok(checkpoint_segment(std::slice::from_ref(x), |t| {
                Ok(vec![grad_of(
                    |x| grad_of(|x| checkpointed(x, sin_exp_sin), x),
                    &t[0],
                )?])
            })?
            .remove(0))
        },
        &x,
    )
    .unwrap();
    assert_eq!(third.to_vec::<f64>(), third_plain.to_vec::<f64>());
    drop((nested, third));
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

#[test]
fn a_scope_ended_on_another_thread_ends_for_its_owner() {
    let _s = SERIAL.lock();
    let x = leaf(&det(&[8], 10));
    let scope = checkpoint::checkpoint_scope();
    let inside = ops::mul(&x, &scalar(2.0)).unwrap();
    assert!(
        checkpoint::live_checkpoint_state() > 0,
        "a recipe: the scope is active"
    );
    std::thread::spawn(move || drop(scope)).join().unwrap();
    drop(inside);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    let after = ops::mul(&x, &scalar(3.0)).unwrap();
    assert_eq!(
        checkpoint::live_checkpoint_state(),
        0,
        "still inside the scope"
    );
    drop(after);
}

#[test]
fn threads_running_grad_on_one_checkpointed_graph_wait_for_its_recompute() {
    let _s = SERIAL.lock();
    let w = leaf(&ops::mul(&det(&[64, 64], 11), &scalar(0.2)).unwrap());
    let x = leaf(&det(&[32, 64], 12));
    let block = {
        let w = w.clone();
        move |t: &[Tensor]| -> remat_core::Result<Vec<Tensor>> {
            Ok(vec![ops::tanh(&ops::matmul(
                &ops::tanh(&ops::matmul(&t[0], &w)?)?,
                &w,
            )?)?])
        }
    };
    let grads_of = |out: &Tensor| -> Vec<Vec<f64>> {
        autograd::grad(
            std::slice::from_ref(out),
            &[w.clone(), x.clone()],
            None,
            true,
        )
        .unwrap()
        .into_iter()
        .map(|g| g.unwrap().to_vec::<f64>())
        .collect()
    };
    let expected = grads_of(&sum(&block(std::slice::from_ref(&x)).unwrap()[0]));
    let out = sum(&checkpoint_segment(std::slice::from_ref(&x), block).unwrap()[0]);
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (out, w, x, barrier) = (out.clone(), w.clone(), x.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                (0..8)
                    .map(|_| {
                        autograd::grad(
                            std::slice::from_ref(&out),
                            &[w.clone(), x.clone()],
                            None,
                            true,
                        )
                        .map(|gs| {
                            gs.into_iter()
                                .map(|g| g.unwrap().to_vec::<f64>())
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for r in h.join().unwrap() {
            assert_eq!(r.unwrap(), expected);
        }
    }
}

#[test]
fn shape_changes_without_determinism_check_are_checkpoint_errors() {
    let _s = SERIAL.lock();
    let width = Arc::new(AtomicUsize::new(5));
    let x = leaf(&det(&[3, 4], 13));
    let w = width.clone();
    let opts = SegmentOptions::new(Some("reader".into()), true, false, false);
    let y = checkpoint_segment_flex(std::slice::from_ref(&x), &opts, move |t| {
        let m = det(&[4, w.load(Ordering::Relaxed)], 14);
        Ok(vec![ops::sum(
            &ops::softmax(&ops::matmul(&t[0], &m)?, -1)?,
            Some(&[1]),
            false,
        )?])
    })
    .unwrap()
    .remove(0);
    width.store(7, Ordering::Relaxed);
    let err = autograd::backward(&[(sum(&y), None)], false).unwrap_err();
    assert!(
        matches!(&err, Error::Checkpoint { message, .. } if message.contains("reader")),
        "{err}"
    );
}

#[test]
fn the_profiler_holds_a_bounded_amount_while_tracking() {
    let _s = SERIAL.lock();
    let w = leaf(&det(&[8, 8], 15));
    let x = det(&[4, 8], 16);
    profiler::reset();
    profiler::start_tracking();
    let opts = SegmentOptions::new(Some("blk".into()), true, false, true);
    let mut held = Vec::new();
    for _ in 0..2000 {
        let w2 = w.clone();
        let h = checkpoint_segment_flex(std::slice::from_ref(&x), &opts, move |t| {
            Ok(vec![ops::tanh(&ops::matmul(&t[0], &w2)?)?])
        })
        .unwrap()
        .remove(0);
        let y = checkpoint::checkpoint(&ops::tanh(&h).unwrap()).unwrap();
        let loss = sum(&ops::mul(&y, &y).unwrap());
        drop((h, y));
        backward(&loss);
        drop(loss);
        held.push(profiler::held_entries());
    }
    profiler::stop_tracking();
    let records = profiler::records();
    assert_eq!(records.len(), 2, "{records:?}");
    let seg = records.iter().find(|r| r.kind == "segment").unwrap();
    assert_eq!(seg.recompute_count, 2000);
    let tensor = records.iter().find(|r| r.kind == "tensor").unwrap();
    assert_eq!(tensor.bytes_saved, 2000 * 4 * 8 * 8);
    assert_eq!(
        profiler::memory_saved(),
        records.iter().map(|r| r.bytes_saved).sum::<usize>()
    );
    assert!(held.iter().all(|&h| h <= 4), "{:?}", &held[..10]);
    let timeline = profiler::timeline_entries();
    assert!(
        timeline > 0 && timeline <= checkpoint::timeline::CAPACITY,
        "{timeline}"
    );
    profiler::reset();
}

#[test]
fn early_stop_skips_the_work_after_the_last_saved_tensor() {
    let _s = SERIAL.lock();
    let w = leaf(&det(&[6, 6], 17));
    let x = leaf(&det(&[4, 6], 18));
    let after_last_save = Arc::new(AtomicUsize::new(0));
    let mut grads = Vec::new();
    for early_stop in [None, Some(true), Some(false)] {
        w.set_grad(None).unwrap();
        x.set_grad(None).unwrap();
        after_last_save.store(0, Ordering::Relaxed);
        let mut opts = SegmentOptions::default();
        if let Some(e) = early_stop {
            opts.early_stop = e;
        }
        let (w2, count) = (w.clone(), after_last_save.clone());
        let y = checkpoint_segment_flex(std::slice::from_ref(&x), &opts, move |t| {
            let y = ops::tanh(&ops::matmul(&t[0], &w2)?)?; // tanh saves the last tensor
            count.fetch_add(1, Ordering::Relaxed);
            Ok(vec![ops::add(&y, &scalar(1.0))?]) // add saves nothing
        })
        .unwrap()
        .remove(0);
        backward(&sum(&y));
        let runs = after_last_save.load(Ordering::Relaxed);
        assert_eq!(runs, if early_stop == Some(false) { 2 } else { 1 });
        grads.push((
            w.grad().unwrap().to_vec::<f64>(),
            x.grad().unwrap().to_vec::<f64>(),
        ));
    }
    assert_eq!(grads[0], grads[1]);
    assert_eq!(grads[0], grads[2]);
    // The global default follows `set_checkpoint_early_stop`.
    assert!(checkpoint::checkpoint_early_stop());
    assert!(checkpoint::set_checkpoint_early_stop(false));
    assert!(!SegmentOptions::default().early_stop);
    assert!(!checkpoint::set_checkpoint_early_stop(true));
    assert!(SegmentOptions::default().early_stop);
}
