//! Saved-tensor slots: how a node keeps what its backward needs. Checkpointing is nothing but
//! a choice of slot.

use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::segment::Segment;
use crate::device::Device;
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
    /// Kept in pinned host memory instead of on its device (`offload=True` segment inputs);
    /// copied back to the device ahead of the read (see `cuda::offload`).
    #[cfg(feature = "cuda")]
    Offloaded(Arc<crate::cuda::offload::HostCopy>),
}

impl Slot {
    /// A recompute slot of a node or segment: registers one more reader of the recipe's
    /// result, and marks the value as one a plain run would have kept (the profiler counts
    /// only such values as saved).
    pub(crate) fn recompute(recipe: Arc<Recipe>) -> Slot {
        recipe.add_reader(true);
        Slot::Recompute(recipe)
    }

    /// A recompute slot that is another recipe's input: a reader, but not a value a plain
    /// run would have kept.
    pub(crate) fn recipe_input(recipe: Arc<Recipe>) -> Slot {
        recipe.add_reader(false);
        Slot::Recompute(recipe)
    }

    /// The saved tensor, recomputing it if needed.
    pub(crate) fn materialize(&self) -> Result<Tensor> {
        Ok(Tensor::from_data(match self {
            Slot::Stored(d) => d.clone(),
            Slot::Recompute(r) => r.materialize()?,
            Slot::Segment(s, i) => s.get(*i)?,
            #[cfg(feature = "cuda")]
            Slot::Offloaded(h) => return h.fetch("checkpoint_segment"),
        }))
    }

    /// A slot keeping `t` in host memory when it lives on a device. Kept as it is: CPU
    /// tensors (offloading would change nothing) and parameters (leaves that require grad:
    /// the model keeps them on the device anyway, so a host copy would free nothing).
    pub(crate) fn offloaded(t: &Tensor) -> Result<Slot> {
        if t.device() == Device::Cpu || (t.is_leaf() && t.requires_grad()) {
            return Ok(Slot::Stored(t.data().clone()));
        }
        #[cfg(feature = "cuda")]
        {
            Ok(Slot::Offloaded(crate::cuda::offload::offload(
                "checkpoint_segment",
                t,
            )?))
        }
        #[cfg(not(feature = "cuda"))]
        Ok(Slot::Stored(t.data().clone()))
    }

    /// The forward that made this slot is over: an offloaded tensor's device memory is
    /// released (once its copy to the host is ordered before any reuse).
    pub(crate) fn settle(&self) -> Result<()> {
        #[cfg(feature = "cuda")]
        if let Slot::Offloaded(h) = self {
            h.settle("checkpoint_segment")?;
        }
        Ok(())
    }

    /// Tell the producer this reader is done, so a recomputed value can be freed as soon as
    /// its last reader has read it.
    pub(crate) fn release(&self) {
        match self {
            Slot::Stored(_) => {}
            Slot::Recompute(r) => r.release_reader(),
            Slot::Segment(s, i) => s.release(*i),
            #[cfg(feature = "cuda")]
            Slot::Offloaded(_) => {}
        }
    }
}

/// Drop `slots` and whatever recipes and segments only they kept alive, without recursion:
/// chains of recipes (and segments fed by recipes) can be arbitrarily long.
pub(crate) fn drop_iteratively(mut stack: Vec<Slot>) {
    while let Some(slot) = stack.pop() {
        match slot {
            Slot::Recompute(r) => {
                if let Ok(mut r) = Arc::try_unwrap(r) {
                    stack.append(&mut r.take_inputs());
                }
            }
            Slot::Segment(s, _) => {
                if let Ok(mut s) = Arc::try_unwrap(s) {
                    stack.append(&mut s.take_inputs());
                }
            }
            _ => {}
        }
    }
}
