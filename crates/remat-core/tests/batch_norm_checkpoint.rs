//! BatchNorm's running statistics under every checkpoint entry point: one training step of a
//! chain of `tanh(batch_norm(h @ W))` layers leaves the running statistics (and gradients)
//! exactly as the plain step does, although each recomputes the layers (PyTorch updates the
//! statistics again in a recompute). One test in this binary: the memory-limit case sets a
//! per-process limit.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::checkpoint::{
    self, checkpoint_segment, checkpoint_segment_with, checkpoint_sequential, CheckpointGroup,
    LayerFn, SavePolicy, SegmentFn, SegmentOptions, Segmentation,
};
use remat_core::{autograd, dtr, grad_mode, ops, Device, Result, Tensor};
use std::sync::Arc;

const DEPTH: usize = 6;
const WIDTH: usize = 16;
const BATCH: usize = 32;

/// The layers' parameters and running statistics (shared by every closure made from it).
struct Model {
    weights: Vec<Tensor>,
    gammas: Vec<Tensor>,
    betas: Vec<Tensor>,
    means: Vec<Tensor>,
    vars: Vec<Tensor>,
}

impl Model {
    fn new() -> Model {
        let k = |i: usize, s: u64| 100 * i as u64 + s;
        Model {
            weights: (0..DEPTH)
                .map(|i| leaf(&det(&[WIDTH, WIDTH], k(i, 1))))
                .collect(),
            gammas: (0..DEPTH).map(|i| leaf(&det(&[WIDTH], k(i, 2)))).collect(),
            betas: (0..DEPTH).map(|i| leaf(&det(&[WIDTH], k(i, 3)))).collect(),
            means: (0..DEPTH)
                .map(|_| ops::zeros(&[WIDTH], remat_core::DType::F64, Device::Cpu).unwrap())
                .collect(),
            vars: (0..DEPTH)
                .map(|_| ops::ones(&[WIDTH], remat_core::DType::F64, Device::Cpu).unwrap())
                .collect(),
        }
    }

    /// Running statistics back to PyTorch's initial values, gradients cleared.
    fn reset(&self) {
        let _g = grad_mode::no_grad();
        for (m, v) in self.means.iter().zip(&self.vars) {
            m.fill_(0.0).unwrap();
            v.fill_(1.0).unwrap();
        }
        for p in self.weights.iter().chain(&self.gammas).chain(&self.betas) {
            p.set_grad(None).unwrap();
        }
    }

    fn layer(&self, i: usize) -> LayerFn {
        let (w, g, b) = (
            self.weights[i].clone(),
            self.gammas[i].clone(),
            self.betas[i].clone(),
        );
        let (m, v) = (self.means[i].clone(), self.vars[i].clone());
        Arc::new(move |h: &Tensor| -> Result<Tensor> {
            let z = ops::matmul(h, &w)?;
            ops::tanh(&ops::batch_norm(
                &z,
                Some(&m),
                Some(&v),
                Some(&g),
                Some(&b),
                true,
                0.1,
                1e-5,
            )?)
        })
    }

    fn layers(&self) -> Vec<LayerFn> {
        (0..DEPTH).map(|i| self.layer(i)).collect()
    }

    /// What a step leaves: gradients of every parameter, then the running statistics.
    fn state(&self) -> Vec<Vec<f64>> {
        let grads = self
            .weights
            .iter()
            .chain(&self.gammas)
            .chain(&self.betas)
            .map(|p| p.grad().unwrap().to_vec::<f64>());
        let stats = self
            .means
            .iter()
            .chain(&self.vars)
            .map(|t| t.to_vec::<f64>());
        grads.chain(stats).collect()
    }
}

/// Layers `[start, end)` applied in order.
fn run(layers: &[LayerFn], x: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    for l in layers {
        h = l(&h)?;
    }
    Ok(h)
}

/// One training step of `forward` (the chain's output from the layers and the input), from
/// fresh running statistics; what it leaves.
fn step(
    model: &Model,
    x: &Tensor,
    forward: &dyn Fn(&[LayerFn], &Tensor) -> Tensor,
) -> Vec<Vec<f64>> {
    model.reset();
    let y = forward(&model.layers(), x);
    let loss = ops::sum(&ops::mul(&y, &y).unwrap(), None, false).unwrap();
    drop(y);
    autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    model.state()
}

/// The whole chain as one segment with `opts`.
fn segment(opts: SegmentOptions) -> impl Fn(&[LayerFn], &Tensor) -> Tensor {
    move |layers, x| {
        let layers = layers.to_vec();
        let f: SegmentFn = Arc::new(move |t: &[Tensor]| Ok(vec![run(&layers, &t[0])?]));
        checkpoint_segment_with(f, std::slice::from_ref(x), &opts)
            .unwrap()
            .remove(0)
    }
}

#[test]
fn running_statistics_after_a_checkpointed_step_equal_the_plain_steps() {
    let model = Model::new();
    let x = det(&[BATCH, WIDTH], 7);
    let plain = step(&model, &x, &|l, x| run(l, x).unwrap());
    // The step did update the statistics (away from 0 and 1).
    assert!(model.means[0].to_vec::<f64>().iter().any(|&m| m != 0.0));

    type Forward = Box<dyn Fn(&[LayerFn], &Tensor) -> Tensor>;
    let options = |policy: Option<SavePolicy>, early_stop: bool| {
        let mut opts = SegmentOptions::default();
        opts.policy = policy;
        opts.early_stop = early_stop;
        opts
    };
    let policy = |p: SavePolicy, early_stop: bool| options(Some(p), early_stop);
    let cases: Vec<(&str, Forward)> = vec![
        ("one segment", Box::new(segment(SegmentOptions::default()))),
        (
            "one segment without early stop",
            Box::new(segment(options(None, false))),
        ),
        (
            "dots_saveable",
            Box::new(segment(policy(SavePolicy::DotsSaveable, true))),
        ),
        (
            "dots_saveable without early stop",
            Box::new(segment(policy(SavePolicy::DotsSaveable, false))),
        ),
        (
            "everything_saveable",
            Box::new(segment(policy(SavePolicy::EverythingSaveable, true))),
        ),
        (
            "a segment per layer",
            Box::new(|layers: &[LayerFn], x: &Tensor| {
                let mut h = x.clone();
                for l in layers {
                    let l = l.clone();
                    h = checkpoint_segment(&[h], move |t| Ok(vec![l(&t[0])?]))
                        .unwrap()
                        .remove(0);
                }
                h
            }),
        ),
        (
            "nested segments",
            Box::new(|layers: &[LayerFn], x: &Tensor| {
                let inner = layers.to_vec();
                checkpoint_segment(std::slice::from_ref(x), move |t| {
                    let mut h = t[0].clone();
                    for pair in inner.chunks(2) {
                        let pair = pair.to_vec();
                        h = checkpoint_segment(&[h], move |u| Ok(vec![run(&pair, &u[0])?]))?
                            .remove(0);
                    }
                    Ok(vec![h])
                })
                .unwrap()
                .remove(0)
            }),
        ),
        (
            "CheckpointGroup",
            Box::new(|layers: &[LayerFn], x: &Tensor| {
                let group = CheckpointGroup::new(Some("bn".into()), true, false);
                let mut h = x.clone();
                for pair in layers.chunks(3) {
                    let pair = pair.to_vec();
                    let f: SegmentFn = Arc::new(move |t: &[Tensor]| Ok(vec![run(&pair, &t[0])?]));
                    h = group.checkpoint_shared(f, &[h]).unwrap().remove(0);
                }
                h
            }),
        ),
        (
            "checkpoint_sequential(3)",
            Box::new(|l: &[LayerFn], x: &Tensor| {
                checkpoint_sequential(l, Segmentation::Count(3), x, true).unwrap()
            }),
        ),
        (
            "checkpoint_sequential(sqrt)",
            Box::new(|l: &[LayerFn], x: &Tensor| {
                checkpoint_sequential(l, Segmentation::Sqrt, x, true).unwrap()
            }),
        ),
        (
            "checkpoint_scope",
            Box::new(|l: &[LayerFn], x: &Tensor| {
                let _scope = checkpoint::checkpoint_scope();
                run(l, x).unwrap()
            }),
        ),
    ];
    for (name, forward) in &cases {
        let before = checkpoint::profiler::recompute_count();
        checkpoint::profiler::start_tracking();
        let got = step(&model, &x, forward.as_ref());
        checkpoint::profiler::stop_tracking();
        assert!(
            checkpoint::profiler::recompute_count() > before || *name == "everything_saveable",
            "{name}: nothing was recomputed"
        );
        assert_eq!(
            got, plain,
            "{name}: the step's gradients or running statistics differ"
        );
    }

    // The budget planner measures each layer once more before the step runs.
    let plan = checkpoint::plan(&model.layers(), Segmentation::Budget(usize::MAX / 4), &x).unwrap();
    assert!(!plan.is_empty());
    let act = BATCH * WIDTH * 8;
    let mut planned = false;
    for budget in [3 * act, 4 * act, 6 * act, 8 * act, 12 * act] {
        model.reset();
        let how = Segmentation::Budget(budget);
        let Ok(segments) = checkpoint::plan(&model.layers(), how, &x) else {
            continue;
        };
        if !segments.iter().any(|s| s.checkpointed) {
            continue;
        }
        let got = step(&model, &x, &|l, x| {
            checkpoint_sequential(l, how, x, true).unwrap()
        });
        assert_eq!(got, plain, "checkpoint_sequential(budget_bytes={budget})");
        planned = true;
        break;
    }
    assert!(planned, "no budget gave a plan with a checkpoint");

    // Under a memory limit: activations evicted and rebuilt by replaying their ops.
    model.reset();
    let cpu = Device::Cpu;
    let base = remat_core::memory_allocated(cpu);
    let y = run(&model.layers(), &x).unwrap();
    let activations = remat_core::memory_allocated(cpu) - base;
    drop(y);
    // Room for the gradients (never evicted) and half the activations.
    let grads: usize = model
        .weights
        .iter()
        .chain(&model.gammas)
        .chain(&model.betas)
        .map(|p| p.nbytes())
        .sum();
    let limit = remat_core::memory_allocated(cpu) + grads + activations / 2;
    dtr::reset_eviction_stats(cpu);
    let got = {
        let _limit = remat_core::memory_limit(cpu, Some(limit));
        step(&model, &x, &|l, x| run(l, x).unwrap())
    };
    let stats = dtr::eviction_stats(cpu);
    assert!(stats.rematerializations > 0, "{stats:?}");
    assert_eq!(got, plain, "under a memory limit");
}
