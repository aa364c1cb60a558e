//! Saved-tensor slots: how a node keeps what its backward needs. Checkpointing is nothing but
//! a choice of slot.

use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::segment::Segment;
use crate::error::Result;
use crate::tensor::{Tensor, TensorData};
use std::sync::Arc;

/// One saved tensor.
pub(crate) enum Slot {
    /// The data itself, kept alive until the node's backward has run.
    Stored(TensorData),
    /// Not kept: recomputed from the op that produced it (tensor-level checkpoint, scope).
    Recompute(Arc<Recipe>),
    /// Not kept: the `usize`-th tensor saved inside a checkpoint segment, refilled by one
    /// re-run of the segment.
    Segment(Arc<Segment>, usize),
}

impl Slot {
    /// A recompute slot: registers one more reader of the recipe's result.
    pub(crate) fn recompute(recipe: Arc<Recipe>) -> Slot {
        recipe.add_reader();
        Slot::Recompute(recipe)
    }

    /// The saved tensor, recomputing it if needed.
    pub(crate) fn materialize(&self) -> Result<Tensor> {
        Ok(Tensor::from_data(match self {
            Slot::Stored(d) => d.clone(),
            Slot::Recompute(r) => r.materialize()?,
            Slot::Segment(s, i) => s.get(*i)?,
        }))
    }

    /// Tell the producer this reader is done, so a recomputed value can be freed as soon as
    /// its last reader has read it.
    pub(crate) fn release(&self) {
        match self {
            Slot::Stored(_) => {}
            Slot::Recompute(r) => r.release_reader(),
            Slot::Segment(s, i) => s.release(*i),
        }
    }
}
