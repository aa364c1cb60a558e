//! Every checkpoint entry point gives bit-identical gradients to the plain run, frees what it
//! promises (measured with the byte counters), and leaves no checkpoint state behind.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use parking_lot::Mutex;
use remat_core::checkpoint::{
    self, checkpoint_segment, checkpoint_sequential, CheckpointGroup, LayerFn, Segmentation,
};
use remat_core::{autograd, ops, DType, Device, Result, Tensor};
use std::sync::Arc;

/// Tests that read the global byte counters or live-state count run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

struct Mlp {
    weights: Vec<Tensor>,
    biases: Vec<Tensor>,
}

impl Mlp {
    fn new(depth: usize, width: usize, dtype: DType) -> Mlp {
        let scale = Tensor::scalar(1.0 / (width as f64).sqrt(), dtype);
        let mk = |t: Tensor| leaf(&ops::to_dtype(&t, dtype).unwrap());
        Mlp {
            weights: (0..depth)
                .map(|i| mk(ops::mul(&det(&[width, width], 10 + i as u64), &scale).unwrap()))
                .collect(),
            biases: (0..depth)
                .map(|i| mk(ops::mul(&det(&[width], 100 + i as u64), &scale).unwrap()))
                .collect(),
        }
    }
    fn layer(&self, i: usize) -> LayerFn {
        let (w, b) = (self.weights[i].clone(), self.biases[i].clone());
        Arc::new(move |x: &Tensor| ops::relu(&ops::add(&ops::matmul(x, &w)?, &b)?))
    }
    fn layers(&self) -> Vec<LayerFn> {
        (0..self.weights.len()).map(|i| self.layer(i)).collect()
    }
    fn params(&self) -> Vec<Tensor> {
        self.weights.iter().chain(&self.biases).cloned().collect()
    }
    fn zero_grads(&self) {
        for p in self.params() {
            p.set_grad(None).unwrap();
        }
    }
    fn grads(&self) -> Vec<Vec<f32>> {
        self.params()
            .iter()
            .map(|p| {
                p.grad()
                    .expect("every parameter gets a gradient")
                    .to_vec::<f32>()
            })
            .collect()
    }
}

fn loss_of(y: &Tensor) -> Tensor {
    ops::sum(&ops::mul(y, y).unwrap(), None, false).unwrap()
}

/// Run one forward+backward with `forward` and return the parameter gradients.
fn grads_with(
    mlp: &Mlp,
    x: &Tensor,
    forward: impl Fn(&Mlp, &Tensor) -> Result<Tensor>,
) -> Vec<Vec<f32>> {
    mlp.zero_grads();
    {
        let y = forward(mlp, x).unwrap();
        autograd::backward(&[(loss_of(&y), None)], false).unwrap();
    }
    assert_eq!(
        checkpoint::live_recompute_caches(),
        0,
        "a recompute cache outlived the step"
    );
    assert_eq!(
        checkpoint::live_checkpoint_state(),
        0,
        "checkpoint state outlived the step"
    );
    mlp.grads()
}

fn plain(m: &Mlp, x: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    for l in m.layers() {
        h = l(&h)?;
    }
    Ok(h)
}

#[test]
fn every_entry_point_gives_bit_identical_gradients() {
    let _s = SERIAL.lock();
    let mlp = Mlp::new(6, 8, DType::F32);
    let x = ops::to_dtype(&det(&[4, 8], 1), DType::F32).unwrap();
    let reference = grads_with(&mlp, &x, plain);

    let per_layer_segments = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        let mut h = x.clone();
        for l in m.layers() {
            h = checkpoint_segment(&[h], move |t| Ok(vec![l(&t[0])?]))?.remove(0);
        }
        Ok(h)
    };
    assert_eq!(
        grads_with(&mlp, &x, per_layer_segments),
        reference,
        "segment per layer"
    );
    for how in [
        Segmentation::Count(3),
        Segmentation::Count(1),
        Segmentation::Count(6),
        Segmentation::Sqrt,
        Segmentation::Budget(1500),
    ] {
        let g = grads_with(&mlp, &x, |m, x| {
            checkpoint_sequential(&m.layers(), how, x, true)
        });
        assert_eq!(g, reference, "checkpoint_sequential {how:?}");
    }
    let tensor_level = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        let mut h = x.clone();
        for l in m.layers() {
            h = checkpoint::checkpoint(&l(&h)?)?;
        }
        Ok(h)
    };
    assert_eq!(
        grads_with(&mlp, &x, tensor_level),
        reference,
        "tensor-level checkpoint"
    );
    let adaptive = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        let mut h = x.clone();
        for l in m.layers() {
            h = checkpoint::adaptive_checkpoint(&l(&h)?, 64)?;
        }
        Ok(h)
    };
    assert_eq!(
        grads_with(&mlp, &x, adaptive),
        reference,
        "adaptive checkpoint"
    );
    let scoped = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        let _scope = checkpoint::checkpoint_scope();
        plain(m, x)
    };
    assert_eq!(grads_with(&mlp, &x, scoped), reference, "checkpoint_scope");
    let nested = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        let layers = m.layers();
        checkpoint_segment(std::slice::from_ref(x), move |t| {
            let (a, b) = layers.split_at(3);
            let (a, b) = (a.to_vec(), b.to_vec());
            let h = checkpoint_segment(&[t[0].clone()], move |u| {
                let mut h = u[0].clone();
                for l in &a {
                    h = l(&h)?;
                }
                Ok(vec![h])
            })?
            .remove(0);
            let mut h = h;
            for l in &b {
                h = l(&h)?;
            }
            Ok(vec![h])
        })
        .map(|mut v| v.remove(0))
    };
    assert_eq!(grads_with(&mlp, &x, nested), reference, "nested segments");
    let grouped = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        let group = CheckpointGroup::new(Some("pair".into()), true, false);
        let layers = m.layers();
        let outs = group.checkpoint_fn(x, move |t: &[Tensor]| {
            let mut h = t[0].clone();
            for l in &layers[..5] {
                h = l(&h)?;
            }
            let side = ops::mul(&h, &Tensor::scalar(0.0, DType::F32))?;
            Ok(vec![layers[5](&h)?, side])
        })?;
        assert_eq!(group.checkpoint_count(), 1);
        ops::add(&outs[0], &outs[1])
    };
    assert_eq!(grads_with(&mlp, &x, grouped), reference, "CheckpointGroup");
    drop(mlp);
    assert_eq!(
        checkpoint::live_checkpoint_state(),
        0,
        "checkpoint state outlived the graphs"
    );
}

#[test]
fn dropout_inside_a_segment_replays_its_mask_and_later_draws_are_not_shifted() {
    let _s = SERIAL.lock();
    let w = leaf(&det(&[8, 8], 3));
    let x = det(&[4, 8], 4);
    let run = |ckpt: bool| -> (Vec<f64>, Vec<f64>) {
        remat_core::manual_seed(7);
        w.set_grad(None).unwrap();
        let w2 = w.clone();
        let f = move |t: &[Tensor]| Ok(vec![ops::dropout(&ops::matmul(&t[0], &w2)?, 0.5, true)?]);
        let y = if ckpt {
            checkpoint_segment(std::slice::from_ref(&x), f)
                .unwrap()
                .remove(0)
        } else {
            f(std::slice::from_ref(&x)).unwrap().remove(0)
        };
        let after = ops::rand(&[4], DType::F64, Device::Cpu)
            .unwrap()
            .to_vec::<f64>();
        autograd::backward(&[(loss_of(&y), None)], false).unwrap();
        (w.grad().unwrap().to_vec::<f64>(), after)
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn a_recompute_that_saves_different_shapes_is_a_checkpoint_error() {
    let _s = SERIAL.lock();
    let w = leaf(&det(&[4, 4], 3));
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    let w2 = w.clone();
    let y = checkpoint_segment(&[det(&[2, 4], 1)], move |t| {
        let n = c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let x = if n == 0 {
            t[0].clone()
        } else {
            ops::reshape(&t[0], &[4, 2])?
        };
        let x = if n == 0 {
            x
        } else {
            ops::reshape(&ops::concat(&[x.clone(), x], 1)?, &[2, 8])?
        };
        let x = if n == 0 {
            x
        } else {
            ops::index(
                &x,
                &[
                    ops::IndexItem::Slice {
                        start: None,
                        stop: Some(4),
                        step: 1,
                    },
                    ops::IndexItem::Ellipsis,
                ],
            )?
        };
        Ok(vec![ops::matmul(&x, &w2)?])
    })
    .unwrap()
    .remove(0);
    let e = autograd::backward(&[(loss_of(&y), None)], false).unwrap_err();
    assert!(matches!(e, remat_core::Error::Checkpoint { .. }), "{e}");
    drop(y);
    assert_eq!(checkpoint::live_recompute_caches(), 0);
}

/// Peak bytes above the baseline for one forward+backward.
fn peak_above_baseline(
    mlp: &Mlp,
    x: &Tensor,
    forward: impl Fn(&Mlp, &Tensor) -> Result<Tensor>,
) -> usize {
    // Gradients allocated before the measured step, so the peak counts activations.
    for p in mlp.params() {
        p.set_grad(Some(ops::zeros(p.shape(), p.dtype(), Device::Cpu).unwrap()))
            .unwrap();
    }
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    {
        let y = forward(mlp, x).unwrap();
        autograd::backward(&[(loss_of(&y), None)], false).unwrap();
    }
    assert_eq!(
        remat_core::memory_allocated(Device::Cpu),
        base,
        "the step leaked memory"
    );
    remat_core::max_memory_allocated(Device::Cpu) - base
}

#[test]
fn sequential_checkpointing_keeps_under_a_third_of_the_activation_memory() {
    let _s = SERIAL.lock();
    // The setting: 64-layer ReLU MLP, width 256, batch 512, float32, 8 segments.
    let mlp = Mlp::new(64, 256, DType::F32);
    let x = ops::to_dtype(&det(&[512, 256], 1), DType::F32).unwrap();
    let plain_peak = peak_above_baseline(&mlp, &x, plain);
    let ckpt_peak = peak_above_baseline(&mlp, &x, |m, x| {
        checkpoint_sequential(&m.layers(), Segmentation::Count(8), x, true)
    });
    let ratio = ckpt_peak as f64 / plain_peak as f64;
    eprintln!("plain {plain_peak} B, checkpoint_sequential(8) {ckpt_peak} B, ratio {ratio:.3}");
    assert!(ratio <= 0.3, "ratio {ratio}");
    let budget = 16 << 20;
    let budget_peak = peak_above_baseline(&mlp, &x, |m, x| {
        checkpoint_sequential(&m.layers(), Segmentation::Budget(budget), x, true)
    });
    eprintln!("budget {budget} B -> peak {budget_peak} B");
    assert!(
        budget_peak <= budget,
        "the budget plan peaked at {budget_peak} B"
    );
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

#[test]
fn profiler_memory_saved_equals_what_the_counters_show_was_not_kept() {
    let _s = SERIAL.lock();
    let mlp = Mlp::new(8, 64, DType::F32);
    let x = ops::to_dtype(&det(&[32, 64], 1), DType::F32).unwrap();
    let base = remat_core::memory_allocated(Device::Cpu);
    let y = plain(&mlp, &x).unwrap();
    let kept_plain = remat_core::memory_allocated(Device::Cpu) - base;
    drop(y);
    checkpoint::profiler::reset();
    checkpoint::profiler::start_tracking();
    let y = checkpoint_sequential(&mlp.layers(), Segmentation::Count(4), &x, true).unwrap();
    let kept_ckpt = remat_core::memory_allocated(Device::Cpu) - base;
    assert_eq!(checkpoint::profiler::memory_saved(), kept_plain - kept_ckpt);
    assert_eq!(checkpoint::profiler::checkpoint_count(), 3);
    autograd::backward(&[(loss_of(&y), None)], false).unwrap();
    assert_eq!(checkpoint::profiler::recompute_count(), 3);
    checkpoint::profiler::stop_tracking();
    let report = checkpoint::profiler::report();
    assert!(report.contains("layers 0..2"), "{report}");
    drop(y);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

#[test]
fn group_tuple_forms_share_one_recompute() {
    let _s = SERIAL.lock();
    let w = leaf(&det(&[4, 4], 5));
    let x = det(&[3, 4], 6);
    let group = CheckpointGroup::new(Some("tuples".into()), true, false);
    let w2 = w.clone();
    let (a, b) = group
        .checkpoint_fn2(std::slice::from_ref(&x), move |t| {
            let h = ops::tanh(&ops::matmul(&t[0], &w2)?)?;
            Ok((ops::mul(&h, &h)?, ops::exp(&h)?))
        })
        .unwrap();
    let w3 = w.clone();
    let (c, d, e) = group
        .checkpoint_fn3(std::slice::from_ref(&x), move |t| {
            let h = ops::sigmoid(&ops::matmul(&t[0], &w3)?)?;
            Ok((h.clone(), ops::mul(&h, &h)?, ops::log(&h)?))
        })
        .unwrap();
    assert_eq!(group.checkpoint_count(), 2);
    let total = [a, b, c, d, e]
        .iter()
        .fold(Tensor::scalar(0.0, DType::F64), |acc, t| {
            ops::add(&acc, &ops::sum(t, None, false).unwrap()).unwrap()
        });
    autograd::backward(&[(total, None)], false).unwrap();
    assert_eq!(group.recompute_count(), 2);
    assert!(w.grad().is_some());
    let seg = checkpoint::checkpoint_segment_flex(
        std::slice::from_ref(&x),
        &checkpoint::SegmentOptions::new(Some("flex".into()), true, false, true),
        |t| Ok(vec![ops::relu(&t[0])?]),
    )
    .unwrap();
    assert_eq!(seg[0].shape(), &[3, 4]);
    drop(group);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
}

/// `offload=true` on a GPU: segment inputs live in pinned host memory (counted on the CPU
/// counters) between forward and backward, device memory drops by their size, and the
/// gradients are bit-identical. Without a GPU this checks nothing and says so.
#[test]
fn offloaded_segment_inputs_leave_the_device_and_change_no_gradient() {
    let _s = SERIAL.lock();
    if !remat_core::cuda::is_available() {
        eprintln!("skipped: no CUDA device");
        return;
    }
    let gpu = Device::Cuda(0);
    let m = Mlp::new(6, 64, DType::F32);
    let on_gpu = |t: &Tensor| leaf(&t.to_device(gpu).unwrap());
    let m = Mlp {
        weights: m.weights.iter().map(on_gpu).collect(),
        biases: m.biases.iter().map(on_gpu).collect(),
    };
    let x = ops::to_dtype(&det(&[128, 64], 7), DType::F32)
        .unwrap()
        .to_device(gpu)
        .unwrap();
    let size = 128 * 64 * 4;
    let run = |offload: bool| {
        m.zero_grads();
        let (dev0, host0) = (
            remat_core::memory_allocated(gpu),
            remat_core::memory_allocated(Device::Cpu),
        );
        let opts = checkpoint::SegmentOptions::new(None, true, offload, true);
        let mut h = x.clone();
        for l in m.layers() {
            let f = l.clone();
            h = checkpoint::checkpoint_segment_flex(&[h], &opts, move |i| Ok(vec![f(&i[0])?]))
                .unwrap()
                .remove(0);
        }
        let kept = (
            remat_core::memory_allocated(gpu) - dev0,
            remat_core::memory_allocated(Device::Cpu) - host0,
        );
        autograd::backward(&[(loss_of(&h), None)], false).unwrap();
        drop(h);
        assert_eq!(remat_core::memory_allocated(Device::Cpu), host0);
        (kept, m.grads())
    };
    let ((dev_plain, host_plain), g_plain) = run(false);
    let ((dev_off, host_off), g_off) = run(true);
    assert_eq!(host_plain, 0);
    assert_eq!(host_off, 6 * size);
    assert_eq!(dev_plain - dev_off, 5 * size);
    assert_eq!(g_plain, g_off);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    remat_core::cuda::empty_cache().unwrap();
}
