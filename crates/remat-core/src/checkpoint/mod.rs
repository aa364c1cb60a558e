//! Checkpointing (activation rematerialisation). Every entry point is a choice of saved-tensor
//! slot (see `slot`): tensor-level `checkpoint`, `checkpoint_scope`, segments, groups and
//! `checkpoint_sequential` with its memory-budget planner, plus the profiler.

pub(crate) mod context;
pub mod group;
pub mod inputs;
pub(crate) mod live;
pub mod planner;
pub mod policy;

pub mod profiler;
pub(crate) mod recipe;
pub mod segment;
pub mod sequential;

pub(crate) mod slot;
pub mod timeline;
pub mod touched;

pub use group::CheckpointGroup;
pub use inputs::SegmentInputs;
pub use live::{live_checkpoint_state, live_recompute_caches};
pub use planner::{plan_budget, validate_segments, LayerCost, Plan, PlanSegment};
pub use policy::{CheckpointPolicy, PolicyFn, PolicyQuery, SavePolicy, DOT_OPS};
pub use segment::{
    checkpoint_early_stop, checkpoint_segment, checkpoint_segment_flex, checkpoint_segment_with,
    set_checkpoint_early_stop, SegmentFn, SegmentOptions,
};
pub use sequential::{
    checkpoint_sequential, checkpoint_sequential_with, layer_id, measure_layers, plan,
    plan_cache_stats, plan_with_ids, run_plan, run_plan_offload, run_plan_with, LayerFn, LayerId,
    LayerIdentity, PlanCacheStats, Segmentation, SegmentsArg, SequentialOptions,
};
pub use touched::GraphExecGroup;

use crate::autograd::node::{NodeKind, Op};
use crate::autograd::saved::Saved;
use crate::error::Result;
use crate::grad_mode::is_grad_enabled;
use crate::tensor::{Tensor, TensorState};
use context::SaveMode;
use recipe::Recipe;
use slot::Slot;
use std::sync::Arc;

/// Whether this thread is re-running code whose original forward already ran: a checkpoint
/// segment's recompute (also inside a nested segment of that replay), the budget planner's
/// measuring run of a layer (`checkpoint_sequential` with a budget, `sequential_plan`), or an
/// op's forward replayed for a `checkpoint`/`checkpoint_scope` recipe or rebuilt under a
/// memory limit. Side effects that must happen once per step (BatchNorm's running
/// statistics, its `num_batches_tracked`) skip themselves then, so a checkpointed step
/// updates them exactly as a plain one.
pub fn is_recomputing() -> bool {
    context::is_recomputing()
}

/// A tensor with `x`'s value whose storage is not kept for backward: consumers save a recipe
/// that recomputes it from the inputs of the op that produced it. Leaves, tensors that need
/// no gradient, tensors inside a segment (already checkpointed), and tensors whose producer's
/// inputs are already freed (reviving them would cost at least what `x` frees) come back
/// unchanged.
pub fn checkpoint(x: &Tensor) -> Result<Tensor> {
    if !x.requires_grad() || !matches!(context::current(), SaveMode::Normal | SaveMode::Scope) {
        return Ok(x.clone());
    }
    let (Some(node), Some(creation)) = (x.grad_fn(), x.creation()) else {
        return Ok(x.clone());
    };
    // Written in place since it was made (or an input was): a replay would not give x.
    if !creation.replayable(x.storage()) {
        return Ok(x.clone());
    }
    let mut alive = Vec::with_capacity(creation.inputs.len());
    for ((storage, _, _), r) in creation.inputs.iter().zip(&creation.recipes) {
        match (r, storage.upgrade()) {
            (None, None) => return Ok(x.clone()),
            (_, s) => alive.push(s),
        }
    }
    let slots = alive
        .into_iter()
        .zip(creation.inputs.iter().zip(&creation.recipes))
        .map(|(storage, ((_, layout, version), r))| match (r, storage) {
            (Some(r), _) => Slot::recipe_input(r.clone()),
            (None, Some(storage)) => Slot::Stored(Saved::at(
                &crate::tensor_data::TensorData {
                    storage,
                    layout: layout.clone(),
                },
                *version,
            )),
            (None, None) => unreachable!("checked above"),
        })
        .collect();
    let recipe = Recipe::new(creation.op.clone(), slots, x.data(), "tensor");
    // If the producer saved its own output (relu, exp, softmax...), that slot would keep x
    // alive: point it at the recipe too (keeping the version it was saved at).
    let cell = x.dtr_cell();
    if let NodeKind::Op(_) = &node.kind {
        if let Some(saved) = node.saved.lock().as_mut() {
            for s in saved.iter_mut() {
                let seen = match s {
                    Slot::Stored(d)
                        if std::sync::Arc::ptr_eq(&d.data.storage, x.storage())
                            && d.data.layout == *x.layout() =>
                    {
                        d.version
                    }
                    // Under a memory limit the slot holds x's cell (see `dtr`).
                    Slot::Evictable(c, layout, v)
                        if cell
                            .as_ref()
                            .is_some_and(|x| std::sync::Arc::ptr_eq(x.cell(), c.cell()))
                            && layout == x.layout() =>
                    {
                        *v
                    }
                    _ => continue,
                };
                *s = Slot::recompute_at(recipe.clone(), seen);
            }
        }
    }
    Ok(Tensor::with_grad_fn(
        x.data().clone(),
        Some(node.clone()),
        true,
        TensorState {
            creation: Some(creation),
            recipe: Some(recipe),
            ..Default::default()
        },
    ))
}

/// `checkpoint(x)` when `x` holds at least `threshold_bytes`, else `x` unchanged.
pub fn adaptive_checkpoint(x: &Tensor, threshold_bytes: usize) -> Result<Tensor> {
    if x.nbytes() >= threshold_bytes {
        checkpoint(x)
    } else {
        Ok(x.clone())
    }
}

/// While the guard lives, every tensor created on this thread is recomputed for backward
/// instead of kept, even when it is consumed after the scope ends.
pub fn checkpoint_scope() -> ScopeGuard {
    ScopeGuard(context::ScopeEntry::enter())
}

/// Ends a `checkpoint_scope` when dropped, on any thread: dropped on another thread, it ends
/// the scope for the thread that entered it.
pub struct ScopeGuard(#[allow(dead_code)] context::ScopeEntry);

/// Inside a `checkpoint_scope` (with grad mode on), a tensor that no graph node records still
/// gets a recipe: a random draw (the op holds its generator key, so the replay draws the same
/// numbers), or an op on tensors that need no gradient but were themselves made in the scope.
/// Consumers then keep the recipe, not the data. Elsewhere `out` comes back unchanged.
pub(crate) fn scope_recipe(op: Arc<dyn Op>, inputs: &[&Tensor], out: Tensor) -> Tensor {
    if !is_grad_enabled() || !matches!(context::current(), SaveMode::Scope) {
        return out;
    }
    let slots = inputs.iter().map(|t| context::recipe_input(t)).collect();
    let recipe = Recipe::new(op, slots, out.data(), "scope");
    Tensor::with_grad_fn(
        out.data().clone(),
        None,
        out.requires_grad(),
        TensorState {
            recipe: Some(recipe),
            ..Default::default()
        },
    )
}
