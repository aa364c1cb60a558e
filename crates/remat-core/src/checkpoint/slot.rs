//! Saved-tensor slots: how a node keeps what its backward needs. Checkpointing is nothing but
//! a choice of slot.

use crate::autograd::saved::Saved;
use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::segment::Segment;
use crate::device::Device;
use crate::error::Result;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use std::sync::Arc;

/// One saved tensor.
pub(crate) enum Slot {
    /// The data itself, kept alive until the node's backward has run (with its version, so
    /// an in-place write since is caught when it is read).
    Stored(Saved),
    /// Not kept: recomputed from the op that produced it (tensor-level checkpoint, scope).
    /// The number is the version of the value the reader saw: a recipe replays only the
    /// version it was made at.
    Recompute(Arc<Recipe>, u64),
    /// Not kept: the `usize`-th tensor saved inside a checkpoint segment, refilled by one
    /// re-run of the segment.
    Segment(Arc<Segment>, usize),
    /// Made under a memory limit: the storage's evictable cell (the view's layout, and the
    /// version the reader saw). Read back as is, or rebuilt if it was evicted meanwhile.
    Evictable(crate::dtr::CellRef, crate::layout::Layout, u64),
    /// Kept in pinned host memory instead of on its device (`offload=True` segment inputs);
    /// copied back to the device ahead of the read (see `cuda::offload`).
    #[cfg(feature = "cuda")]
    Offloaded(Arc<crate::cuda::offload::HostCopy>),
}

impl Slot {
    /// A slot keeping `d` itself, as it is now.
    pub(crate) fn stored(d: &TensorData) -> Slot {
        Slot::Stored(Saved::new(d))
    }

    /// A recompute slot of a node or segment: registers one more reader of the recipe's
    /// result, and marks the value as one a plain run would have kept (the profiler counts
    /// only such values as saved).
    pub(crate) fn recompute(recipe: Arc<Recipe>) -> Slot {
        let seen = recipe.current_version();
        Slot::recompute_at(recipe, seen)
    }

    /// [`Slot::recompute`] for a reader that saw the value at `version` (a stored slot
    /// turned into a recompute keeps the version it was saved at).
    pub(crate) fn recompute_at(recipe: Arc<Recipe>, version: u64) -> Slot {
        recipe.add_reader(true);
        Slot::Recompute(recipe, version)
    }

    /// A recompute slot that is another recipe's input: a reader, but not a value a plain
    /// run would have kept.
    pub(crate) fn recipe_input(recipe: Arc<Recipe>) -> Slot {
        recipe.add_reader(false);
        let seen = recipe.current_version();
        Slot::Recompute(recipe, seen)
    }

    /// The saved tensor, recomputing it if needed. `who` (the op or checkpoint that saved
    /// it) names it in the error when it was modified in place since it was saved.
    pub(crate) fn materialize(&self, who: &str) -> Result<Tensor> {
        Ok(Tensor::from_data(match self {
            Slot::Stored(s) => s.get(who)?.clone(),
            Slot::Recompute(r, seen) => r.materialize(*seen, who)?,
            Slot::Segment(s, i) => s.get(*i)?,
            Slot::Evictable(c, layout, seen) => {
                let d = c.read(layout)?;
                crate::autograd::saved::check(&d, *seen, who)?;
                d
            }
            #[cfg(feature = "cuda")]
            Slot::Offloaded(h) => return h.fetch("checkpoint_segment"),
        }))
    }

    /// A slot keeping `t` in host memory when it lives on a device. Kept as it is: CPU
    /// tensors (offloading would change nothing) and parameters (leaves that require grad:
    /// the model keeps them on the device anyway, so a host copy would free nothing).
    pub(crate) fn offloaded(t: &Tensor) -> Result<Slot> {
        if t.device() == Device::Cpu || (t.is_leaf() && t.requires_grad()) {
            return Ok(Slot::stored(t.data()));
        }
        #[cfg(feature = "cuda")]
        {
            Ok(Slot::Offloaded(crate::cuda::offload::offload(
                "checkpoint_segment",
                t,
            )?))
        }
        #[cfg(not(feature = "cuda"))]
        Ok(Slot::stored(t.data()))
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
            Slot::Stored(_) | Slot::Evictable(..) => {}
            Slot::Recompute(r, _) => r.release_reader(),
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
            Slot::Recompute(r, _) => {
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
