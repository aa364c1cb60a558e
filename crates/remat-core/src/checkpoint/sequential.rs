//! `checkpoint_sequential`: a chain of layers cut into segments, each run as a checkpoint
//! segment: a fixed count, √n, or the planner's least-recompute plan under a memory budget.

use crate::checkpoint::context::{self, SaveMode};
use crate::checkpoint::planner::{plan_budget, LayerCost, PlanSegment};
use crate::checkpoint::segment::{checkpoint_segment_with, SegmentOptions};
use crate::error::{Error, Result};
use crate::grad_mode::{enable_grad, is_grad_enabled};
use crate::storage::next_storage_id;
use crate::tensor::Tensor;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

/// One layer of a chain.
pub type LayerFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// How to cut the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segmentation {
    /// This many segments of (nearly) equal length; the last runs plainly, as in PyTorch.
    Count(usize),
    /// ⌈√n⌉ segments.
    Sqrt,
    /// The least-recompute plan whose modelled activation memory fits this many bytes.
    Budget(usize),
}

/// Equal runs for `k` segments over `n` layers, all but the last checkpointed.
fn equal_runs(n: usize, k: usize) -> Vec<PlanSegment> {
    let k = k.clamp(1, n.max(1));
    let size = n / k;
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for s in 0..k {
        let end = if s == k - 1 { n } else { start + size };
        out.push(PlanSegment {
            start,
            end,
            checkpointed: s + 1 < k,
        });
        start = end;
    }
    out
}

/// Run each layer once (no graph kept) and measure what it would save and output.
pub fn measure_layers(layers: &[LayerFn], input: &Tensor) -> Result<Vec<LayerCost>> {
    let mut costs = Vec::with_capacity(layers.len());
    let mut x = Tensor::flagged(input.data().clone(), true);
    for layer in layers {
        let first_new = next_storage_id();
        let buf = Rc::new(RefCell::new(Vec::new()));
        let out = {
            let _g = enable_grad();
            let _c = context::enter(SaveMode::Capture(buf.clone()));
            layer(&x)?
        };
        let mut seen = HashSet::new();
        let saved: usize = buf
            .borrow()
            .iter()
            .filter(|d| d.storage.id() >= first_new && seen.insert(d.storage.id()))
            .map(|d| d.storage.nbytes())
            .sum();
        costs.push(LayerCost {
            saved,
            output: out.nbytes(),
        });
        x = Tensor::flagged(out.data().clone(), true);
    }
    Ok(costs)
}

/// What a budget plan depends on: the layers (by identity), the input's shape and dtype, and
/// the budget. Measuring costs a forward, so plans are reused across training steps.
#[derive(PartialEq, Eq)]
struct PlanKey {
    layers: Vec<usize>,
    shape: crate::layout::Dims,
    dtype: crate::dtype::DType,
    budget: usize,
}

const PLAN_CACHE_SIZE: usize = 32;
static PLANS: Mutex<Vec<(PlanKey, Vec<PlanSegment>)>> = Mutex::new(Vec::new());

fn cached_plan(key: &PlanKey) -> Option<Vec<PlanSegment>> {
    PLANS
        .lock()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, p)| p.clone())
}

fn remember_plan(key: PlanKey, runs: Vec<PlanSegment>) {
    let mut plans = PLANS.lock();
    if plans.len() >= PLAN_CACHE_SIZE {
        plans.remove(0);
    }
    plans.push((key, runs));
}

/// Choose the runs for `how`: equal runs for a count or √n, the planner's least-recompute
/// plan for a budget (measured by running each layer once, RNG state restored after; the plan
/// is cached per layers, input shape, dtype and budget).
pub fn plan(layers: &[LayerFn], how: Segmentation, input: &Tensor) -> Result<Vec<PlanSegment>> {
    let n = layers.len();
    Ok(match how {
        Segmentation::Count(0) => {
            return Err(Error::value(
                "checkpoint_sequential",
                "segments must be at least 1",
            ))
        }
        Segmentation::Count(k) => equal_runs(n, k),
        Segmentation::Sqrt => equal_runs(n, (n as f64).sqrt().ceil() as usize),
        Segmentation::Budget(bytes) => {
            let key = PlanKey {
                layers: layers
                    .iter()
                    .map(|l| Arc::as_ptr(l) as *const () as usize)
                    .collect(),
                shape: input.shape().into(),
                dtype: input.dtype(),
                budget: bytes,
            };
            if let Some(runs) = cached_plan(&key) {
                return Ok(runs);
            }
            let state = crate::rng::get_state();
            let costs = measure_layers(layers, input);
            crate::rng::set_state(state);
            let runs = plan_budget(&costs?, input.nbytes(), bytes)?.segments;
            remember_plan(key, runs.clone());
            runs
        }
    })
}

/// Run `layers` on `input`, checkpointing segments chosen by `how`.
pub fn checkpoint_sequential(
    layers: &[LayerFn],
    how: Segmentation,
    input: &Tensor,
    preserve_rng_state: bool,
) -> Result<Tensor> {
    if layers.is_empty() {
        return Ok(input.clone());
    }
    if !is_grad_enabled() {
        return run_plan(
            layers,
            &equal_runs(layers.len(), 1),
            input,
            preserve_rng_state,
        );
    }
    let runs = plan(layers, how, input)?;
    run_plan(layers, &runs, input, preserve_rng_state)
}

/// Run the layers following `runs`.
pub fn run_plan(
    layers: &[LayerFn],
    runs: &[PlanSegment],
    input: &Tensor,
    preserve_rng_state: bool,
) -> Result<Tensor> {
    run_plan_offload(layers, runs, input, preserve_rng_state, false)
}

/// Run the layers following `runs`; with `offload`, the input of each checkpointed run that
/// lives on a device is kept in host memory until backward (see `cuda::offload`).
pub fn run_plan_offload(
    layers: &[LayerFn],
    runs: &[PlanSegment],
    input: &Tensor,
    preserve_rng_state: bool,
    offload: bool,
) -> Result<Tensor> {
    let mut x = input.clone();
    for run in runs {
        let chunk: Vec<LayerFn> = layers[run.start..run.end].to_vec();
        let apply = move |t: &Tensor| -> Result<Tensor> {
            let mut y = t.clone();
            for l in &chunk {
                y = l(&y)?;
            }
            Ok(y)
        };
        x = if run.checkpointed {
            let opts = SegmentOptions {
                name: Some(format!("layers {}..{}", run.start, run.end)),
                preserve_rng_state,
                offload,
                kind: "sequential",
                ..SegmentOptions::default()
            };
            let f = Arc::new(move |ts: &[Tensor]| Ok(vec![apply(&ts[0])?]));
            checkpoint_segment_with(f, &[x], &opts)?.remove(0)
        } else {
            apply(&x)?
        };
    }
    Ok(x)
}
