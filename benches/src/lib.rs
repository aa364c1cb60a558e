//! Shared helpers for the benches: a deep ReLU MLP built from remat-core ops, the checkpoint
//! strategies compared by the benches, one training step, and exact memory measurements read
//! from the engine's byte counters.
//!
//! Every bench (`matmul`, `mlp_step`, `memory`) builds its workload from here so the figures
//! they print describe the same model.

use remat_core::checkpoint::{
    self, checkpoint_segment, checkpoint_sequential, LayerFn, Segmentation,
};
use remat_core::ops;
use remat_core::{autograd, DType, Device, Result, Tensor};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// A ReLU MLP: `h <- relu(h @ W_i + b_i)` for each layer, float32, He-initialised so that the
/// activations keep their scale through hundreds of layers (a 1/sqrt(width) scale would
/// halve the variance per layer and end in denormals, which would time the FPU's slow path).
pub struct Mlp {
    /// Weights, `(width, width)` each, leaves that require grad.
    pub weights: Vec<Tensor>,
    /// Biases, `(width,)` each, leaves that require grad.
    pub biases: Vec<Tensor>,
    /// Features of every layer.
    pub width: usize,
}

impl Mlp {
    /// A `depth`-layer MLP of `width` features with weights drawn from `seed`.
    pub fn new(depth: usize, width: usize, seed: u64) -> Result<Mlp> {
        remat_core::manual_seed(seed);
        let scale = Tensor::scalar((2.0 / width as f64).sqrt(), DType::F32);
        let leaf = |t: Tensor| -> Result<Tensor> {
            let t = t.detach();
            t.set_requires_grad(true)?;
            Ok(t)
        };
        let mut weights = Vec::with_capacity(depth);
        let mut biases = Vec::with_capacity(depth);
        for _ in 0..depth {
            let w = ops::randn(&[width, width], DType::F32, Device::Cpu)?;
            weights.push(leaf(ops::mul(&w, &scale)?)?);
            biases.push(leaf(ops::zeros(&[width], DType::F32, Device::Cpu)?)?);
        }
        Ok(Mlp {
            weights,
            biases,
            width,
        })
    }

    /// Number of layers.
    pub fn depth(&self) -> usize {
        self.weights.len()
    }

    /// A random float32 input batch of `batch` rows (no grad).
    pub fn input(&self, batch: usize, seed: u64) -> Result<Tensor> {
        remat_core::manual_seed(seed);
        ops::randn(&[batch, self.width], DType::F32, Device::Cpu)
    }

    /// Layer `i` as a closure over its parameters (what `checkpoint_sequential` takes).
    pub fn layer(&self, i: usize) -> LayerFn {
        let (w, b) = (self.weights[i].clone(), self.biases[i].clone());
        Arc::new(move |x: &Tensor| ops::relu(&ops::add(&ops::matmul(x, &w)?, &b)?))
    }

    /// All layers in order.
    pub fn layers(&self) -> Vec<LayerFn> {
        (0..self.depth()).map(|i| self.layer(i)).collect()
    }

    /// Weights then biases.
    pub fn params(&self) -> Vec<Tensor> {
        self.weights.iter().chain(&self.biases).cloned().collect()
    }

    /// Give every parameter a zero gradient, so that a measured step accumulates into
    /// storage that already exists and the peak counts activations only.
    pub fn alloc_grads(&self) -> Result<()> {
        for p in self.params() {
            match p.grad() {
                Some(g) => remat_core::optim::zero_(&g)?,
                None => p.set_grad(Some(ops::zeros(p.shape(), p.dtype(), Device::Cpu)?))?,
            }
        }
        Ok(())
    }

    /// Bytes of all parameters.
    pub fn param_bytes(&self) -> usize {
        self.params().iter().map(Tensor::nbytes).sum()
    }
}

/// How the forward pass is checkpointed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Plain forward: every saved activation is kept until backward.
    None,
    /// One `checkpoint_segment` per layer: only each layer's input is kept.
    Every,
    /// `checkpoint_sequential` with ⌈√depth⌉ segments.
    Sqrt,
    /// `checkpoint_sequential` with the planner's least-recompute plan under this many bytes.
    Budget(usize),
}

impl Strategy {
    /// Short name used in tables and bench ids.
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Every => "every",
            Strategy::Sqrt => "sqrt",
            Strategy::Budget(_) => "budget",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Budget(b) => write!(f, "budget({b})"),
            s => f.write_str(s.name()),
        }
    }
}

/// Run the MLP's forward on `x` under `strategy`.
pub fn forward(mlp: &Mlp, x: &Tensor, strategy: Strategy) -> Result<Tensor> {
    match strategy {
        Strategy::None => {
            let mut h = x.clone();
            for i in 0..mlp.depth() {
                h = mlp.layer(i)(&h)?;
            }
            Ok(h)
        }
        Strategy::Every => {
            let mut h = x.clone();
            for i in 0..mlp.depth() {
                let l = mlp.layer(i);
                h = checkpoint_segment(&[h], move |t| Ok(vec![l(&t[0])?]))?.remove(0);
            }
            Ok(h)
        }
        Strategy::Sqrt => checkpoint_sequential(&mlp.layers(), Segmentation::Sqrt, x, true),
        Strategy::Budget(b) => {
            checkpoint_sequential(&mlp.layers(), Segmentation::Budget(b), x, true)
        }
    }
}

/// The budget strategy for a model whose plain step peaks at `plain_peak` bytes, with a label
/// for tables: `Budget(plain_peak / 4)` when the planner can fit it; otherwise the smallest
/// budget it accepts (found by bisection on its model). Small depths cannot reach a quarter
/// in the planner's model (segment inputs + one recomputed segment + the backward's gradient
/// buffers exceed it), and the planner reports such a budget as an error rather than
/// silently overshooting it.
pub fn budget_strategy(mlp: &Mlp, x: &Tensor, plain_peak: usize) -> Result<(Strategy, String)> {
    let costs = checkpoint::measure_layers(&mlp.layers(), x)?;
    let fits = |b: usize| checkpoint::plan_budget(&costs, x.nbytes(), b).is_ok();
    let quarter = plain_peak / 4;
    if fits(quarter) {
        return Ok((
            Strategy::Budget(quarter),
            format!("budget(none/4 = {quarter})"),
        ));
    }
    // Grow an upper bound, then bisect to the smallest budget that fits (to 1 KiB).
    let (mut lo, mut hi) = (quarter, plain_peak.max(1));
    while !fits(hi) {
        if hi == usize::MAX {
            // Nothing fits at all: hand back the planner's own error.
            checkpoint::plan_budget(&costs, x.nbytes(), hi)?;
        }
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1024 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let label = format!(
        "budget(min fit = {hi} = none/{:.2}; none/4 does not fit)",
        plain_peak as f64 / hi as f64
    );
    Ok((Strategy::Budget(hi), label))
}

/// The scalar loss of the benches: `mean(y * y)`.
pub fn loss_of(y: &Tensor) -> Result<Tensor> {
    ops::mean(&ops::mul(y, y)?, None, false)
}

/// One forward + backward (gradients accumulate into the parameters' `.grad`).
pub fn forward_backward(mlp: &Mlp, x: &Tensor, strategy: Strategy) -> Result<()> {
    let y = forward(mlp, x, strategy)?;
    let loss = loss_of(&y)?;
    drop(y);
    autograd::backward(&[(loss, None)], false)
}

/// One training step: zero the gradients, forward, backward, and the SGD update
/// `p -= lr * grad` in place.
pub fn train_step(mlp: &Mlp, x: &Tensor, strategy: Strategy, lr: f64) -> Result<()> {
    mlp.alloc_grads()?;
    forward_backward(mlp, x, strategy)?;
    for p in mlp.params() {
        if let Some(g) = p.grad() {
            ops::axpy_inplace(&p, &g, -lr)?;
        }
    }
    Ok(())
}

/// What one measured forward + backward used, from the byte counters and the profiler.
#[derive(Clone, Copy, Debug)]
pub struct MemoryStats {
    /// Highest live bytes during forward + backward, above the baseline (parameters, their
    /// pre-allocated gradients and the input are part of the baseline).
    pub peak: usize,
    /// Live bytes above the baseline right after the forward (what is kept for backward,
    /// plus the output and the loss).
    pub kept_after_forward: usize,
    /// The profiler's `memory_saved()`: bytes not kept thanks to checkpointing.
    pub memory_saved: usize,
}

/// Measure one forward + backward of `mlp` on `x` under `strategy` exactly, from the byte
/// counters. Errors if the step leaks (live bytes after it differ from before).
pub fn measure_memory(mlp: &Mlp, x: &Tensor, strategy: Strategy) -> Result<MemoryStats> {
    mlp.alloc_grads()?;
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    checkpoint::profiler::reset();
    checkpoint::profiler::start_tracking();
    let (kept_after_forward, memory_saved) = {
        let y = forward(mlp, x, strategy)?;
        let loss = loss_of(&y)?;
        drop(y);
        let kept = remat_core::memory_allocated(Device::Cpu) - base;
        let saved = checkpoint::profiler::memory_saved();
        autograd::backward(&[(loss, None)], false)?;
        (kept, saved)
    };
    checkpoint::profiler::stop_tracking();
    let peak = remat_core::max_memory_allocated(Device::Cpu) - base;
    let after = remat_core::memory_allocated(Device::Cpu);
    if after != base {
        return Err(remat_core::Error::value(
            "measure_memory",
            format!(
                "{strategy}: the step leaked {} bytes",
                after as i64 - base as i64
            ),
        ));
    }
    Ok(MemoryStats {
        peak,
        kept_after_forward,
        memory_saved,
    })
}

/// The median of `runs` timings of `f`, in seconds.
pub fn median_seconds(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// The CPU model (from `/proc/cpuinfo`) and the number of logical cores.
pub fn machine() -> (String, usize) {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (model, cores)
}

/// Threads of the rayon pool remat-core's kernels run on (`RAYON_NUM_THREADS` sets it).
pub fn threads() -> usize {
    rayon::current_num_threads()
}
